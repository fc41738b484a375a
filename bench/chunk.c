/*
 * chunk.c - a streamed chunk read into the load driver's fields (chunk.h):
 * jdoc's scanner first, jdoc's tree for whatever it declines.
 */
#include "bench/chunk.h"

#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"

/* Chunks nest a few levels (choices[0].delta, usage details). */
#define CHUNK_DEPTH 16

struct chunk_reader {
	struct jdoc *doc;       /* the tree, for what the scanner declines */
	char *buf;              /* the chunk copied with the scanner's padding */
	char *arena;            /* the scanner's unescaped strings */
	size_t n_scanned;
	bool tree_only;
	int64_t *ids;           /* CHUNK_IDS_KEEP, when ids are kept; else NULL */
};

struct chunk_reader *chunk_reader_new(void)
{
	struct chunk_reader *cr = calloc(1, sizeof(*cr));

	if (!cr)
		return NULL;
	cr->doc = jdoc_new(CHUNK_MAX);
	cr->buf = malloc(CHUNK_MAX + 1 + JDOC_SCAN_PAD);
	cr->arena = malloc(CHUNK_MAX + 1);
	if (!cr->doc || !cr->buf || !cr->arena) {
		chunk_reader_free(cr);
		return NULL;
	}
	/* a lone surrogate read the same way by both paths (the scanner keeps
	 * its bytes, WTF-8), so that one chunk never gives two texts */
	jdoc_set_keep_surrogates(cr->doc, 1);
	return cr;
}

void chunk_reader_free(struct chunk_reader *cr)
{
	if (!cr)
		return;
	jdoc_free(cr->doc);
	free(cr->ids);
	free(cr->buf);
	free(cr->arena);
	free(cr);
}

size_t chunk_reader_scanned(const struct chunk_reader *cr)
{
	return cr->n_scanned;
}

void chunk_reader_tree_only(struct chunk_reader *cr, bool on)
{
	cr->tree_only = on;
}

void chunk_reader_keep_ids(struct chunk_reader *cr, bool on)
{
	if (on && !cr->ids)
		cr->ids = malloc(CHUNK_IDS_KEEP * sizeof(*cr->ids));
	if (!on) {
		free(cr->ids);
		cr->ids = NULL;
	}
}

static void chunk_fields_clear(struct chunk_fields *f)
{
	memset(f, 0, sizeof(*f));
	f->n_token_ids = f->usage_prompt = f->usage_completion = -1;
}

#define CHUNK_KEY(k, nk, lit) ((nk) == sizeof(lit) - 1 && !memcmp((k), lit, sizeof(lit) - 1))

/* --- the scanner: 0 with f filled, -1 to leave the chunk to the tree ----- */

/* A member that counts when it is a string: *has and the span; any other
 * type clears *has (as the tree, which looks for a string, would). */
static int chunk_scan_str(struct jdoc_scan *sc, bool *has, const char **s, size_t *n)
{
	uint32_t len;

	if (jdoc_scan_peek(sc) != JT_STR) {
		*has = false;
		return jdoc_scan_skip(sc) == 1 ? 0 : -1;
	}
	if (jdoc_scan_str(sc, s, &len) != 1)
		return -1;
	*has = true;
	*n = len;
	return 0;
}

/* An integer member, or null (-1); anything else is the tree's to read. */
static int chunk_scan_long(struct jdoc_scan *sc, long *v)
{
	int64_t x;
	int rc = jdoc_scan_int(sc, &x);

	if (rc < 0)
		return -1;
	*v = rc ? (long)x : -1;
	return 0;
}

/* The members of a `delta` read apart: only the last `delta` counts. */
struct chunk_delta {
	bool has_content, has_role, has_reasoning, has_reasoning_content;
	const char *content, *reasoning, *reasoning_content, *role;
	size_t n_content, n_reasoning, n_reasoning_content, n_role;
};

static int chunk_scan_delta(struct jdoc_scan *sc, struct chunk_delta *d)
{
	const char *k;
	size_t nk;
	int rc;

	memset(d, 0, sizeof(*d));
	if (jdoc_scan_peek(sc) != JT_OBJ)
		return jdoc_scan_skip(sc) == 1 ? 0 : -1;
	if (jdoc_scan_object(sc) != 1)
		return -1;
	while ((rc = jdoc_scan_key(sc, &k, &nk)) == 1) {
		if (CHUNK_KEY(k, nk, "content"))
			rc = chunk_scan_str(sc, &d->has_content, &d->content, &d->n_content);
		else if (CHUNK_KEY(k, nk, "role"))
			rc = chunk_scan_str(sc, &d->has_role, &d->role, &d->n_role);
		/* the thinking text: `reasoning` on current vLLM, `reasoning_content`
		 * before (and on other servers) */
		else if (CHUNK_KEY(k, nk, "reasoning"))
			rc = chunk_scan_str(sc, &d->has_reasoning, &d->reasoning, &d->n_reasoning);
		else if (CHUNK_KEY(k, nk, "reasoning_content"))
			rc = chunk_scan_str(sc, &d->has_reasoning_content, &d->reasoning_content,
					    &d->n_reasoning_content);
		else
			rc = jdoc_scan_skip(sc) == 1 ? 0 : -1;
		if (rc)
			return -1;
	}
	return rc < 0 ? -1 : 0;
}

static int chunk_scan_choice(struct jdoc_scan *sc, bool chat, struct chunk_fields *f,
			     struct chunk_delta *d, int64_t *ids)
{
	const char *k;
	size_t nk;
	uint32_t n;
	int rc;

	if (jdoc_scan_object(sc) != 1)
		return -1;
	while ((rc = jdoc_scan_key(sc, &k, &nk)) == 1) {
		if (CHUNK_KEY(k, nk, "finish_reason")) {
			rc = chunk_scan_str(sc, &f->has_finish, &f->finish, &f->n_finish);
		} else if (!chat && CHUNK_KEY(k, nk, "text")) {
			rc = chunk_scan_str(sc, &f->has_content, &f->content, &f->n_content);
		} else if (CHUNK_KEY(k, nk, "token_ids")) {
			if (jdoc_scan_peek(sc) == JT_ARR) {
				/* kept ids: more than fit is the tree's to read */
				if (jdoc_scan_int_array(sc, ids, ids ? CHUNK_IDS_KEEP : CHUNK_MAX, &n) != 1)
					return -1;
				f->n_token_ids = (long)n;
				f->token_ids = ids;
				f->n_ids_kept = ids ? n : 0;
				rc = 0;
			} else {
				f->n_token_ids = -1;
				rc = jdoc_scan_skip(sc) == 1 ? 0 : -1;
			}
		} else if (chat && CHUNK_KEY(k, nk, "delta")) {
			rc = chunk_scan_delta(sc, d);
		} else {
			rc = jdoc_scan_skip(sc) == 1 ? 0 : -1;
		}
		if (rc)
			return -1;
	}
	return rc < 0 ? -1 : 0;
}

static int chunk_scan_usage(struct jdoc_scan *sc, struct chunk_fields *f)
{
	const char *k;
	size_t nk;
	int rc;

	f->has_usage = false;
	f->usage_prompt = f->usage_completion = -1;
	if (jdoc_scan_peek(sc) != JT_OBJ)
		return jdoc_scan_skip(sc) == 1 ? 0 : -1;
	if (jdoc_scan_object(sc) != 1)
		return -1;
	f->has_usage = true;
	while ((rc = jdoc_scan_key(sc, &k, &nk)) == 1) {
		if (CHUNK_KEY(k, nk, "prompt_tokens"))
			rc = chunk_scan_long(sc, &f->usage_prompt);
		else if (CHUNK_KEY(k, nk, "completion_tokens"))
			rc = chunk_scan_long(sc, &f->usage_completion);
		else
			rc = jdoc_scan_skip(sc) == 1 ? 0 : -1;
		if (rc)
			return -1;
	}
	return rc < 0 ? -1 : 0;
}

/* `choices`: the first element is the choice when it is an object; a later
 * `choices` member replaces everything an earlier one gave. */
static int chunk_scan_choices(struct jdoc_scan *sc, bool chat, struct chunk_fields *f,
			      struct chunk_delta *d, int64_t *ids)
{
	int rc, first = 1;

	f->has_content = f->has_finish = f->choice = false;
	f->n_token_ids = -1;
	f->token_ids = NULL;
	f->n_ids_kept = 0;
	memset(d, 0, sizeof(*d));
	if (jdoc_scan_peek(sc) != JT_ARR)
		return jdoc_scan_skip(sc) == 1 ? 0 : -1;
	if (jdoc_scan_array(sc) != 1)
		return -1;
	while ((rc = jdoc_scan_elem(sc)) == 1) {
		if (first && jdoc_scan_peek(sc) == JT_OBJ) {
			f->choice = true;
			if (chunk_scan_choice(sc, chat, f, d, ids))
				return -1;
		} else if (jdoc_scan_skip(sc) != 1) {
			return -1;
		}
		first = 0;
	}
	return rc < 0 ? -1 : 0;
}

static int chunk_scan(struct chunk_reader *cr, bool chat, size_t len, struct chunk_fields *f)
{
	struct chunk_delta d = { 0 };
	struct jdoc_scan sc;
	const char *k;
	size_t nk;
	int64_t v;
	int rc;

	jdoc_scan_init(&sc, cr->buf, len, CHUNK_DEPTH, cr->arena, len + 1);
	if (jdoc_scan_object(&sc) != 1)
		return -1;
	while ((rc = jdoc_scan_key(&sc, &k, &nk)) == 1) {
		if (CHUNK_KEY(k, nk, "error"))
			/* only null stays here: an error object is the tree's to read */
			rc = jdoc_scan_int(&sc, &v) == 0 ? 0 : -1;
		else if (CHUNK_KEY(k, nk, "usage"))
			rc = chunk_scan_usage(&sc, f);
		else if (CHUNK_KEY(k, nk, "id"))
			rc = chunk_scan_str(&sc, &f->has_id, &f->id, &f->n_id);
		else if (CHUNK_KEY(k, nk, "choices"))
			rc = chunk_scan_choices(&sc, chat, f, &d, cr->ids);
		else
			rc = jdoc_scan_skip(&sc) == 1 ? 0 : -1;
		if (rc)
			return -1;
	}
	if (rc < 0 || jdoc_scan_end(&sc) != 1)
		return -1;
	if (chat) {
		f->has_content = d.has_content;
		f->content = d.content;
		f->n_content = d.n_content;
		f->has_role = d.has_role;
		/* `reasoning` first, as the tree reads them */
		if (d.has_reasoning) {
			f->has_reasoning = true;
			f->reasoning = d.reasoning;
			f->n_reasoning = d.n_reasoning;
		} else if (d.has_reasoning_content) {
			f->has_reasoning = true;
			f->reasoning = d.reasoning_content;
			f->n_reasoning = d.n_reasoning_content;
		}
	}
	/* The tree cuts these at a NUL (they were read as C strings); so here. */
	if (f->has_id)
		f->n_id = strnlen(f->id, f->n_id);
	if (f->has_finish)
		f->n_finish = strnlen(f->finish, f->n_finish);
	return 0;
}

/* --- the tree -------------------------------------------------------------- */

static const struct jval *chunk_get(struct jdoc *d, const struct jval *o, const char *k, enum jtype t)
{
	const struct jval *v;

	if (!o || o->type != JT_OBJ)
		return NULL;
	v = jdoc_get(d, o, k);
	return v && v->type == t ? v : NULL;
}

static enum chunk_error chunk_tree(struct chunk_reader *cr, bool chat, const char *data, size_t len,
				   struct chunk_fields *f, char *msg, size_t n_msg)
{
	struct status_info si;
	const struct jval *root, *v, *choices, *c, *content = NULL, *role = NULL, *reasoning = NULL;
	const struct jval *usage;
	struct jdoc *d = cr->doc;

	if (jdoc_parse(d, data, len, &si)) {
		snprintf(msg, n_msg, "chunk is not json at byte %ld: %s", si.byte, si.msg);
		return CHUNK_BAD;
	}
	root = jdoc_root(d);
	if (root->type != JT_OBJ) {
		snprintf(msg, n_msg, "chunk is a json %s, not an object", jdoc_typename(root));
		return CHUNK_BAD;
	}
	v = jdoc_get(d, root, "error");
	if (v && v->type != JT_NULL) {
		const struct jval *m = chunk_get(d, v, "message", JT_STR);

		snprintf(msg, n_msg, "%s", m ? m->u.s : v->type == JT_STR ? v->u.s : "(no message)");
		return CHUNK_SERVER;
	}
	v = chunk_get(d, root, "id", JT_STR);
	if (v) {
		f->has_id = true;
		f->id = v->u.s;
		f->n_id = strlen(v->u.s);
	}
	choices = chunk_get(d, root, "choices", JT_ARR);
	c = choices ? jdoc_kid(d, choices) : NULL;
	if (c && c->type == JT_OBJ) {
		f->choice = true;
		v = chunk_get(d, c, "token_ids", JT_ARR);
		if (v) {
			f->n_token_ids = (long)v->n;
			if (cr->ids) {
				const struct jval *e;

				/* the integers among the first CHUNK_IDS_KEEP entries,
				 * anything else as -1 (no token) */
				for (e = jdoc_kid(d, v); e && f->n_ids_kept < CHUNK_IDS_KEEP; e = jdoc_next(d, e))
					cr->ids[f->n_ids_kept++] = e->type == JT_INT ? e->u.i : -1;
				f->token_ids = cr->ids;
			}
		}
		if (chat) {
			const struct jval *delta = chunk_get(d, c, "delta", JT_OBJ);

			content = chunk_get(d, delta, "content", JT_STR);
			role = chunk_get(d, delta, "role", JT_STR);
			reasoning = chunk_get(d, delta, "reasoning", JT_STR);
			if (!reasoning)
				reasoning = chunk_get(d, delta, "reasoning_content", JT_STR);
		} else {
			content = chunk_get(d, c, "text", JT_STR);
		}
		v = chunk_get(d, c, "finish_reason", JT_STR);
		if (v) {
			f->has_finish = true;
			f->finish = v->u.s;
			f->n_finish = strlen(v->u.s);
		}
	}
	if (content) {
		f->has_content = true;
		f->content = content->u.s;
		f->n_content = content->n;
	}
	if (reasoning) {
		f->has_reasoning = true;
		f->reasoning = reasoning->u.s;
		f->n_reasoning = reasoning->n;
	}
	f->has_role = role != NULL;
	usage = chunk_get(d, root, "usage", JT_OBJ);
	if (usage) {
		f->has_usage = true;
		v = chunk_get(d, usage, "prompt_tokens", JT_INT);
		if (v)
			f->usage_prompt = (long)v->u.i;
		v = chunk_get(d, usage, "completion_tokens", JT_INT);
		if (v)
			f->usage_completion = (long)v->u.i;
	}
	return CHUNK_OK;
}

enum chunk_error chunk_read(struct chunk_reader *cr, bool chat, const char *data, size_t len,
			    struct chunk_fields *f, char *msg, size_t n_msg)
{
	chunk_fields_clear(f);
	msg[0] = '\0';
	if (len > CHUNK_MAX) {
		snprintf(msg, n_msg, "chunk of %zu bytes, more than %u", len, CHUNK_MAX);
		return CHUNK_BAD;
	}
	if (!cr->tree_only) {
		memcpy(cr->buf, data, len);
		memset(cr->buf + len, 0, 1 + JDOC_SCAN_PAD);
		if (chunk_scan(cr, chat, len, f) == 0) {
			cr->n_scanned++;
			return CHUNK_OK;
		}
		chunk_fields_clear(f);
	}
	return chunk_tree(cr, chat, data, len, f, msg, n_msg);
}

void chunk_error_message(struct chunk_reader *cr, const char *text, char *buf, size_t n)
{
	struct status_info si;
	const struct jval *v;
	const char *m = text;

	if (!jdoc_parse(cr->doc, text, strlen(text), &si) && jdoc_root(cr->doc)->type == JT_OBJ) {
		v = jdoc_get(cr->doc, jdoc_root(cr->doc), "error");
		if (!v || v->type != JT_OBJ)
			v = jdoc_root(cr->doc);
		v = chunk_get(cr->doc, v, "message", JT_STR);
		if (v)
			m = v->u.s;
	}
	snprintf(buf, n, "%s", *m ? m : "(no message)");
}
