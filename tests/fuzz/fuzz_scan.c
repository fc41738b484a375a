/*
 * fuzz_scan.c - libFuzzer target: one input is one line, read by both JSON
 * paths of the analyzer.
 *
 * The scanner (event_scan, jdoc_scan_*) may decline any line, but a line it
 * takes must be one the tree (jdoc_parse + event_decode) reads as the same
 * event, field for field, with tokens wanted and not. A walk of the object
 * with jdoc_scan_key/jdoc_scan_skip must succeed only where the tree accepts,
 * and must succeed wherever the tree accepts an object without escapes on one
 * line (skipping declines nothing valid). The first bytes choose the nesting cap,
 * so the depth limit is exercised at several values. Every line is read with
 * the AVX2 code and with the portable code, which must agree too, and as a
 * file read in place has it (its newline, then the line again): the scanner
 * must not read on into the next line. One decoder reads each line four
 * times, so the arrays remembered from the last merge are held to the tree
 * too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/eventcmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const uint8_t *data, size_t size)
{
	fprintf(stderr, "fuzz_scan: %s on a %zu-byte input: %.*s\n", what, size,
		(int)(size < 300 ? size : 300), (const char *)data);
	abort();
}

/* Walks every member of the root object with the scanner alone. */
static int walk(const char *buf, size_t n, unsigned depth)
{
	static char arena[1 << 16];
	struct jdoc_scan sc;
	const char *key;
	size_t klen;
	int rc;

	jdoc_scan_init(&sc, buf, n, depth, arena, sizeof(arena));
	if (jdoc_scan_object(&sc) != 1)
		return 0;
	while ((rc = jdoc_scan_key(&sc, &key, &klen)) == 1)
		if (jdoc_scan_skip(&sc) != 1)
			return 0;
	return rc == 0 && jdoc_scan_end(&sc) == 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jdoc *doc;
	static struct event_decoder *tree_dec, *scan_dec;
	static const unsigned depths[] = { 64, 1, 2, 3, 8 };
	unsigned depth = 64;
	char why[256];
	int scanned, walked, tree_obj, simd, took = 0;
	struct status_info si;
	char *buf;

	if (!doc) {
		struct event_decoder_opts o = { .max_slots = 64 };
		doc = jdoc_new(1 << 16);
		tree_dec = event_decoder_new_opts(&o);
		scan_dec = event_decoder_new_opts(&o);
		if (!doc || !tree_dec || !scan_dec)
			abort();
	}
	/* "\x01".."\x04" first: another nesting cap (bytes a line never starts with) */
	if (size && data[0] >= 1 && data[0] <= 4) {
		depth = depths[data[0]];
		data++;
		size--;
	}
	for (simd = 0; simd < 2; simd++) {
		jdoc_simd(simd);
		if (!eventcmp_line(doc, tree_dec, scan_dec, (const char *)data, size, depth, 0,
				   &scanned, why, sizeof(why)))
			fail(why, data, size);
		if (!simd)
			took = scanned;
		else if (took != scanned)
			fail("the AVX2 and portable scanners disagree on taking the line", data, size);
		if (!eventcmp_line(doc, tree_dec, scan_dec, (const char *)data, size, depth,
				   EVENT_WANT_TOKENS, &scanned, why, sizeof(why)))
			fail(why, data, size);
	}
	/* a line with its newline and the next line after it, as mapped */
	if (!eventcmp_line_after(doc, tree_dec, scan_dec, (const char *)data, size,
				 (const char *)data, size, depth, 0, &scanned, why, sizeof(why)))
		fail(why, data, size);
	if (scanned != took)
		fail("the scanner takes the line ended by a newline differently", data, size);

	buf = calloc(1, size + 1 + JDOC_SCAN_PAD);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	walked = walk(buf, size, depth);
	jdoc_set_max_depth(doc, depth);
	status_info_clear(&si);
	tree_obj = jdoc_parse(doc, buf, size, &si) == STATUS_OK && jdoc_root(doc)->type == JT_OBJ;
	if (walked && !tree_obj)
		fail("the scanner walked an object the tree rejects", data, size);
	/* the scanner reads one line: a newline, even as whitespace, is the tree's */
	if (tree_obj && !walked && !memchr(buf, '\\', size) && !memchr(buf, '\n', size))
		fail("the scanner declined an object without escapes that the tree reads", data, size);
	free(buf);
	return 0;
}
