/*
 * eventcmp.h - the differential check of the two event decoders: a line read
 * by event_scan() must give exactly what jdoc_parse() + event_decode() give.
 * Header-only (static inline), for the unit tests and the fuzz targets.
 */
#ifndef TTAUDIT_EVENTCMP_H
#define TTAUDIT_EVENTCMP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/event.h"
#include "base/jdoc.h"

/* Equal byte strings (both absent, or the same bytes and length). */
static inline int eventcmp_str(const char *a, uint32_t na, const char *b, uint32_t nb)
{
	if (!a || !b)
		return !a && !b;
	return na == nb && !memcmp(a, b, na);
}

#define EC_FAIL(...) do { snprintf(why, n, __VA_ARGS__); return 0; } while (0)

static inline int eventcmp_i64s(const int64_t *a, const int64_t *b, uint32_t n)
{
	return !n || !memcmp(a, b, n * sizeof(*a));
}

/*
 * 1 when a (the tree's) and b (the scanner's) are the same event; with want
 * lacking EVENT_WANT_TOKENS the scanner drops the tokens, so they are not
 * compared. Otherwise 0 and the first difference in why.
 */
static inline int eventcmp_equal(const struct event *a, const struct event *b, unsigned want,
				 char *why, size_t n)
{
	uint32_t s;

	if (a->kind != b->kind)
		EC_FAIL("kind %d != %d", a->kind, b->kind);
	if (!eventcmp_str(a->ev, a->ev_len, b->ev, b->ev_len))
		EC_FAIL("ev differs");
	switch (a->kind) {
	case EVENT_MERGE: {
		const struct merge_event *x = &a->u.merge, *y = &b->u.merge;
		if (x->step != y->step || x->n_host != y->n_host || x->n_dev != y->n_dev)
			EC_FAIL("step or lengths differ");
		if (!eventcmp_i64s(x->host_pos, y->host_pos, x->n_host) ||
		    !eventcmp_i64s(x->dev_pos, y->dev_pos, x->n_dev))
			EC_FAIL("positions differ");
		if (x->reset_batch != y->reset_batch || x->mode_switched != y->mode_switched)
			EC_FAIL("flags differ");
		if (want & EVENT_WANT_TOKENS) {
			if (x->n_host_tok != y->n_host_tok || x->n_dev_tok != y->n_dev_tok ||
			    !eventcmp_i64s(x->host_tok, y->host_tok, x->n_host_tok) ||
			    !eventcmp_i64s(x->dev_tok, y->dev_tok, x->n_dev_tok))
				EC_FAIL("tokens differ");
		} else if (y->n_host_tok || y->n_dev_tok) {
			EC_FAIL("tokens kept though not wanted");
		}
		if (x->has_prefilled != y->has_prefilled || memcmp(x->prefilled, y->prefilled, x->n_host))
			EC_FAIL("prefilled differs");
		if (x->has_buf_step != y->has_buf_step || (x->has_buf_step && x->buf_step != y->buf_step))
			EC_FAIL("buf_step differs");
		if (x->has_gen != y->has_gen || (x->has_gen && (x->gen != y->gen || x->buf_gen != y->buf_gen)))
			EC_FAIL("gen differs");
		if (x->has_slot_gen != y->has_slot_gen ||
		    (x->has_slot_gen && (!eventcmp_i64s(x->slot_gen, y->slot_gen, x->n_host) ||
					 !eventcmp_i64s(x->buf_slot_gen, y->buf_slot_gen, x->n_host))))
			EC_FAIL("slot_gen differs");
		if (x->has_req != y->has_req)
			EC_FAIL("has_req differs");
		for (s = 0; x->has_req && s < x->n_host; s++)
			if (!eventcmp_str(x->slot_req[s], x->slot_req_len[s], y->slot_req[s], y->slot_req_len[s]) ||
			    !eventcmp_str(x->buf_req[s], x->buf_req_len[s], y->buf_req[s], y->buf_req_len[s]))
				EC_FAIL("request id of slot %u differs", s);
		if (x->has_taken != y->has_taken || (x->has_taken && memcmp(x->taken, y->taken, x->n_host)))
			EC_FAIL("taken differs");
		if (!eventcmp_str(x->arm, x->arm_len, y->arm, y->arm_len))
			EC_FAIL("arm differs");
		if (x->has_t != y->has_t || (x->has_t && memcmp(&x->t, &y->t, sizeof(x->t))))
			EC_FAIL("t differs");
		if (x->has_dp != y->has_dp || x->dp != y->dp || x->has_rank != y->has_rank ||
		    x->rank != y->rank)
			EC_FAIL("dp or rank differs");
		break;
	}
	case EVENT_CONFIG: {
		const struct config_event *x = &a->u.config, *y = &b->u.config;
		if (x->slots != y->slots || x->max_model_len != y->max_model_len ||
		    x->has_max_model_len != y->has_max_model_len ||
		    !eventcmp_str(x->arm, x->arm_len, y->arm, y->arm_len) ||
		    x->has_rank != y->has_rank || x->rank != y->rank)
			EC_FAIL("config differs");
		break;
	}
	case EVENT_CONTEXT: {
		const struct context_event *x = &a->u.ctx, *y = &b->u.ctx;
		if (x->has_step != y->has_step || x->step != y->step || x->has_slot != y->has_slot ||
		    x->slot != y->slot || x->has_dp != y->has_dp || x->dp != y->dp ||
		    x->has_rank != y->has_rank || x->rank != y->rank ||
		    !eventcmp_str(x->phase, x->phase_len, y->phase, y->phase_len) ||
		    !eventcmp_str(x->req, x->req_len, y->req, y->req_len) ||
		    !eventcmp_str(x->op, x->op_len, y->op, y->op_len) ||
		    !eventcmp_str(x->key, x->key_len, y->key, y->key_len))
			EC_FAIL("context differs");
		break;
	}
	case EVENT_GATE: {
		const struct gate_event *x = &a->u.gate, *y = &b->u.gate;
		if (x->has_step != y->has_step || x->step != y->step || x->has_keep != y->has_keep ||
		    x->keep != y->keep || x->has_supports != y->has_supports ||
		    x->supports_async_decode != y->supports_async_decode || x->force != y->force ||
		    !eventcmp_str(x->reason, x->reason_len, y->reason, y->reason_len) ||
		    x->has_dp != y->has_dp || x->dp != y->dp || x->has_rank != y->has_rank ||
		    x->rank != y->rank)
			EC_FAIL("gate differs");
		break;
	}
	case EVENT_OTHER:
		break;
	}
	return 1;
}

/*
 * Runs one line through both decoders. Returns 1 when they agree (the
 * scanner declining is agreement: the tree decides that line), 0 with why.
 * *scanned is set when the scanner took the line. line need not be padded:
 * it is copied into a buffer with the NUL and padding the scanner wants.
 */
/*
 * eventcmp_line with the line as a file read in place has it: a newline at
 * line[len], then `after` (the next lines), then zeros. after NULL: a NUL
 * at line[len], as a line read into a buffer has it.
 */
static inline int eventcmp_line_after(struct jdoc *doc, struct event_decoder *tree_dec,
				      struct event_decoder *scan_dec, const char *line, size_t len,
				      const char *after, size_t n_after, unsigned max_depth,
				      unsigned want, int *scanned, char *why, size_t n)
{
	struct status_info si;
	struct event te, se;
	const struct jval *root, *ev;
	char *buf = calloc(1, len + 2 + (after ? n_after : 0) + JDOC_SCAN_PAD);
	int rc, ok = 1;

	*scanned = 0;
	if (!buf)
		return 1;
	memcpy(buf, line, len);
	if (after) {
		size_t got = 0;
		buf[len] = '\n';
		memcpy(buf + len + 1, after, n_after);
		/* the line's end found by the scan itself: the same decision, the same length */
		rc = event_scan_line(scan_dec, buf, len + 1 + n_after, max_depth, want, &se, &got);
		if (rc > 0 && got != len && !memchr(line, '\n', len)) {
			snprintf(why, n, "event_scan_line took %zu bytes of a %zu-byte line", got, len);
			ok = 0;
			goto out;
		}
		if (rc > 0 && memchr(line, '\n', len)) {
			rc = 0;   /* a shorter line: the one event_scan is not given here */
		} else if ((rc > 0) != (event_scan(scan_dec, buf, len, max_depth, want, &se) > 0)) {
			snprintf(why, n, "event_scan_line and event_scan decide differently");
			ok = 0;
			goto out;
		}
	}
	rc = event_scan(scan_dec, buf, len, max_depth, want, &se);
	if (rc <= 0)
		goto out;
	*scanned = 1;
	jdoc_set_max_depth(doc, max_depth);
	jdoc_set_keep_surrogates(doc, 1);
	status_info_clear(&si);
	if (jdoc_parse(doc, buf, len, &si) || !(root = jdoc_root(doc)) || root->type != JT_OBJ) {
		snprintf(why, n, "the scanner took a line the tree rejects (%.150s)", si.msg);
		ok = 0;
		goto out;
	}
	ev = jdoc_get(doc, root, "ev");
	if (!ev) {
		snprintf(why, n, "the scanner took a line without \"ev\"");
		ok = 0;
		goto out;
	}
	status_info_clear(&si);
	if (event_decode(tree_dec, doc, root, &te, &si)) {
		snprintf(why, n, "the scanner took a line the decoder rejects (%.150s)", si.msg);
		ok = 0;
		goto out;
	}
	ok = eventcmp_equal(&te, &se, want, why, n);
out:
	free(buf);
	return ok;
}

static inline int eventcmp_line(struct jdoc *doc, struct event_decoder *tree_dec,
				struct event_decoder *scan_dec, const char *line, size_t len,
				unsigned max_depth, unsigned want, int *scanned, char *why, size_t n)
{
	return eventcmp_line_after(doc, tree_dec, scan_dec, line, len, NULL, 0, max_depth, want,
				   scanned, why, n);
}

#endif
