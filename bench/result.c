/*
 * result.c - one server-sent event applied to its request's result
 * (result.h): the chunk read by bench/chunk, the tokens counted by the best
 * source the chunk has, the first token and inter-token times, the text
 * kept when asked, and the server's error events as failures.
 */
#include "bench/result.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "bench/chunk.h"
#include "bench/sse.h"

struct result_parser {
	struct chunk_reader *cr;    /* reused chunk after chunk: no allocation per token */
	bool keep_ids;
};

struct result_parser *result_parser_new(void)
{
	struct result_parser *cp = calloc(1, sizeof(*cp));

	if (!cp)
		return NULL;
	cp->cr = chunk_reader_new();
	if (!cp->cr) {
		free(cp);
		return NULL;
	}
	return cp;
}

void result_parser_free(struct result_parser *cp)
{
	if (!cp)
		return;
	chunk_reader_free(cp->cr);
	free(cp);
}

size_t result_parser_fast(const struct result_parser *cp)
{
	return chunk_reader_scanned(cp->cr);
}

void result_parser_keep_ids(struct result_parser *cp, bool on)
{
	cp->keep_ids = on;
	chunk_reader_keep_ids(cp->cr, on);
}

void result_parser_tree_only(struct result_parser *cp, bool on)
{
	chunk_reader_tree_only(cp->cr, on);
}

void result_fail(struct load_result *r, enum load_fail f, const char *fmt, ...)
{
	va_list ap;

	if (r->fail)
		return;   /* the first cause stands */
	r->fail = f;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

static int result_keep_text(struct load_result *r, const char *s, size_t n)
{
	if (r->text_len + n + 1 > LOAD_MAX_TEXT) {
		result_fail(r, LOAD_FAIL_PROTOCOL, "content longer than %u bytes", LOAD_MAX_TEXT);
		return -1;
	}
	if (ALLOC_GROW_MAX(r->text, r->text_len + n + 1, r->cap_text, (size_t)LOAD_MAX_TEXT) < 0) {
		result_fail(r, LOAD_FAIL_PROTOCOL, "out of memory keeping content");
		return -1;
	}
	memcpy(r->text + r->text_len, s, n);
	r->text_len += n;
	r->text[r->text_len] = '\0';
	return 0;
}

/* The chunk's token ids after the ones kept before, and where its ids start
 * (ids_off[c] .. ids_off[c + 1] are chunk c's). */
static int result_keep_ids(struct load_result *r, const struct chunk_fields *f)
{
	size_t i;

	if (ALLOC_GROW(r->ids_off, r->n_chunks + 2, r->cap_ids_off) < 0) {
		result_fail(r, LOAD_FAIL_PROTOCOL, "out of memory keeping token ids");
		return -1;
	}
	if (!r->n_chunks)
		r->ids_off[0] = 0;
	for (i = 0; i < f->n_ids_kept && r->n_ids < LOAD_MAX_TOKENS; i++) {
		if (ALLOC_GROW(r->ids, r->n_ids + 1, r->cap_ids) < 0) {
			result_fail(r, LOAD_FAIL_PROTOCOL, "out of memory keeping token ids");
			return -1;
		}
		r->ids[r->n_ids++] = f->token_ids[i] >= 0 && f->token_ids[i] <= INT32_MAX ?
			(int32_t)f->token_ids[i] : (f->token_ids[i] > INT32_MAX ? INT32_MAX : -1);
	}
	r->ids_off[r->n_chunks + 1] = r->n_ids;
	return 0;
}

int result_chunk(struct result_parser *cp, struct load_result *r, enum load_api api,
	       bool keep_text, const char *data, size_t len, double now)
{
	struct chunk_fields f;
	enum chunk_error ce;
	char msg[200];
	bool answer, thought;
	long k = 1;
	enum load_count src = LOAD_COUNT_CHUNKS;

	ce = chunk_read(cp->cr, api == LOAD_API_CHAT, data, len, &f, msg, sizeof(msg));
	if (ce == CHUNK_SERVER) {
		result_fail(r, LOAD_FAIL_SERVER, "error in stream: %.160s", msg);
		return -1;
	}
	if (ce) {
		result_fail(r, LOAD_FAIL_PROTOCOL, "%s", msg);
		return -1;
	}
	if (f.has_id && !r->id[0])
		snprintf(r->id, sizeof(r->id), "%.*s", (int)f.n_id, f.id);
	if (f.has_finish)
		snprintf(r->finish_reason, sizeof(r->finish_reason), "%.*s", (int)f.n_finish, f.finish);
	answer = f.has_content && f.n_content > 0;
	thought = f.has_reasoning && f.n_reasoning > 0;
	/* a chunk whose token ids say it carries tokens is a token chunk even
	 * with no text (a token that detokenizes to nothing, an id past the
	 * vocabulary): counted as answer */
	if (!answer && !thought && f.n_token_ids > 0)
		answer = true;
	/* how many tokens this chunk carries: the server says it with
	 * token_ids, or with per-chunk usage (continuous_usage_stats, a
	 * running total); otherwise one per chunk, and the record says so */
	if (answer || thought) {
		if (f.n_token_ids > 0) {
			k = f.n_token_ids;
			src = LOAD_COUNT_TOKEN_IDS;
		} else if (f.has_usage && f.choice && f.usage_completion >= 0) {
			k = f.usage_completion - (r->usage_seen > 0 ? r->usage_seen : 0);
			if (k < 1)
				k = 1;
			src = LOAD_COUNT_USAGE;
		}
		if (k > (long)UINT32_MAX)
			k = (long)UINT32_MAX;
		if (src > r->count_src)
			r->count_src = src;
	}
	if (f.has_usage && f.choice && f.usage_completion >= 0)
		r->usage_seen = f.usage_completion;
	if (answer || thought) {
		/* a chunk timed by the loop and the next by its kernel stamp can
		 * disagree on order; a stream's times never go back */
		if (r->n_chunks && now < r->t_last)
			now = r->t_last;
		if (!r->n_chunks)
			r->t_first = now;
		if (answer && r->t_first_answer == 0)
			r->t_first_answer = now;
		r->t_last = now;
		r->n_tokens += (size_t)k;
		/* a chunk with both (the end of the thinking) counts as answer */
		if (answer)
			r->n_answer_tokens += (size_t)k;
		else
			r->n_reasoning_tokens += (size_t)k;
		if (r->n_chunks < LOAD_MAX_TOKENS) {
			if (ALLOC_GROW(r->tok_t, r->n_chunks + 1, r->cap_tok_t) < 0 ||
			    ALLOC_GROW(r->tok_n, r->n_chunks + 1, r->cap_tok_n) < 0) {
				result_fail(r, LOAD_FAIL_PROTOCOL, "out of memory keeping token times");
				return -1;
			}
			r->tok_t[r->n_chunks] = now;
			r->tok_n[r->n_chunks] = (uint32_t)k;
			if (keep_text) {
				if (ALLOC_GROW(r->tok_off, r->n_chunks + 2, r->cap_tok_off) < 0)
					return -1;
				if (!r->n_chunks)
					r->tok_off[0] = 0;
				/* the answer only: reasoning text is not the output compared */
				if (answer && f.n_content && result_keep_text(r, f.content, f.n_content))
					return -1;
				r->tok_off[r->n_chunks + 1] = r->text_len;
			}
			if (cp->keep_ids && result_keep_ids(r, &f))
				return -1;
		} else {
			r->chunks_capped = true;
		}
		r->n_chunks++;
	} else if (f.has_role) {
		r->n_role_chunks++;
	}
	if (f.usage_prompt >= 0)
		r->usage_prompt = f.usage_prompt;
	if (f.usage_completion >= 0)
		r->usage_completion = f.usage_completion;
	return 0;
}

int result_event(struct result_parser *cp, struct load_result *r, enum load_api api,
	       bool keep_text, const struct sse *p, const char *data, size_t len, double now)
{
	const char *err = sse_event_error(p, NULL);
	char m[200];

	if (!err && strcmp(sse_event_type(p), "error"))
		return result_chunk(cp, r, api, keep_text, data, len, now);
	/* the server ended the stream with an error: its message, from the
	 * error field (llama-server) or the data of an `event: error` */
	chunk_error_message(cp->cr, err ? err : data, m, sizeof(m));
	result_fail(r, LOAD_FAIL_SERVER, "error event in stream: %.160s", m);
	return -1;
}
