/*
 * fuzz_line.c - libFuzzer target: one input is one audit line.
 *
 * Runs the line through jdoc_parse and event_decode (ASan/UBSan watch the
 * memory), and through jdoc_check, and checks that the two parsers agree:
 * jdoc_check accepts exactly the lines jdoc_parse reads as one object, and
 * says has_ev exactly when the member jdoc_get finds for "ev" is a string.
 * The shim decides with jdoc_check what an audit line is and the analyzer
 * reads it with jdoc_parse, so a disagreement loses or invents events.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/event.h"
#include "base/jdoc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where touched values go, so the reads are not optimised away. */
extern volatile uint64_t fuzz_line_sink;
volatile uint64_t fuzz_line_sink;

static void fail(const char *what, const uint8_t *data, size_t size)
{
	fprintf(stderr, "fuzz_line: %s on a %zu-byte input: %.*s\n", what, size,
		(int)(size < 300 ? size : 300), (const char *)data);
	abort();
}

/* Reads every array a decoded merge event points to (ASan checks the bounds). */
static uint64_t touch_merge(const struct merge_event *m)
{
	uint64_t sum = 0;
	uint32_t s;

	for (s = 0; s < m->n_host; s++) {
		sum += (uint64_t)m->host_pos[s] + m->prefilled[s];
		if (m->has_taken)
			sum += m->taken[s];
		if (m->has_slot_gen)
			sum += (uint64_t)(m->slot_gen[s] ^ m->buf_slot_gen[s]);
		if (m->has_req) {
			sum += m->slot_req[s] ? strlen(m->slot_req[s]) : 0;
			sum += m->buf_req[s] ? strlen(m->buf_req[s]) : 0;
		}
	}
	for (s = 0; s < m->n_dev; s++)
		sum += (uint64_t)m->dev_pos[s];
	for (s = 0; s < m->n_host_tok; s++)
		sum += (uint64_t)m->host_tok[s];
	for (s = 0; s < m->n_dev_tok; s++)
		sum += (uint64_t)m->dev_tok[s];
	if (m->arm)
		sum += strlen(m->arm);
	return sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jdoc *doc;
	static struct event_decoder *dec;
	const char *s = (const char *)data;
	struct status_info si;
	struct jdoc_check chk;
	const struct jval *root = NULL, *ev;
	enum status st;
	int rc, is_obj;

	if (!doc) {
		doc = jdoc_new(1 << 16);
		dec = event_decoder_new();
		if (!doc || !dec)
			abort();
	}
	status_info_clear(&si);
	st = jdoc_parse(doc, s, size, &si);
	if (st == STATUS_NOMEM)
		return 0;
	if (st == STATUS_OK)
		root = jdoc_root(doc);
	else if (si.byte < 1 || (size_t)si.byte > size + 1 || !memchr(si.msg, '\0', sizeof(si.msg)))
		fail("error offset outside the input", data, size);
	is_obj = root && root->type == JT_OBJ;

	rc = jdoc_check(s, size, &chk);
	if ((rc == 0) != is_obj)
		fail(rc == 0 ? "jdoc_check accepts what jdoc_parse rejects"
			     : "jdoc_check rejects an object jdoc_parse reads", data, size);
	if (!is_obj)
		return 0;
	ev = jdoc_get(doc, root, "ev");
	if (chk.has_ev != (ev && ev->type == JT_STR))
		fail("has_ev disagrees with jdoc_get", data, size);

	{
		struct event e;
		status_info_clear(&si);
		if (event_decode(dec, doc, root, &e, &si) == STATUS_OK) {
			if (!ev || ev->type != JT_STR)
				fail("an event without a string ev decoded", data, size);
			if (e.kind == EVENT_MERGE)
				fuzz_line_sink += touch_merge(&e.u.merge);
		} else if (!si.msg[0]) {
			fail("a decoding error without a message", data, size);
		}
	}
	return 0;
}
