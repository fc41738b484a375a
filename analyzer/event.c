#include "event.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct event_decoder {
	int64_t host_pos[EVENT_MAX_SLOTS], dev_pos[EVENT_MAX_SLOTS];
	int64_t host_tok[EVENT_MAX_SLOTS], dev_tok[EVENT_MAX_SLOTS];
	int64_t slot_gen[EVENT_MAX_SLOTS], buf_slot_gen[EVENT_MAX_SLOTS];
	uint8_t prefilled[EVENT_MAX_SLOTS], taken[EVENT_MAX_SLOTS];
	const char *slot_req[EVENT_MAX_SLOTS], *buf_req[EVENT_MAX_SLOTS];
};

struct event_decoder *event_decoder_new(void)
{
	return calloc(1, sizeof(struct event_decoder));
}

void event_decoder_free(struct event_decoder *dec)
{
	free(dec);
}

static enum status bad(struct status_info *si, const struct jval *v, enum status st,
		       const char *fmt, const char *field, const char *detail)
{
	if (si && v)
		si->byte = (long)v->off + 1;
	return status_set(si, st, fmt, field, detail);
}

static enum status get_int(const struct jdoc *doc, const struct jval *obj, const char *key,
			   bool required, bool *present, int64_t *out, struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key);

	*present = false;
	if (!v || (!required && v->type == JT_NULL)) {
		if (required)
			return status_set(si, STATUS_PARSE, "%s missing", key);
		return STATUS_OK;
	}
	if (v->type == JT_REAL && v->int_overflow)
		return bad(si, v, STATUS_PARSE, "%s is %s", key, "outside int64");
	if (v->type != JT_INT)
		return bad(si, v, STATUS_PARSE, "%s is not an integer (%s)", key, jdoc_typename(v));
	*present = true;
	*out = v->u.i;
	return STATUS_OK;
}

static enum status get_bool(const struct jdoc *doc, const struct jval *obj, const char *key,
			    bool *out, struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key);

	*out = false;
	if (!v || v->type == JT_NULL)
		return STATUS_OK;
	if (v->type != JT_TRUE && v->type != JT_FALSE)
		return bad(si, v, STATUS_PARSE, "%s is not a boolean (%s)", key, jdoc_typename(v));
	*out = v->type == JT_TRUE;
	return STATUS_OK;
}

static enum status get_str(const struct jdoc *doc, const struct jval *obj, const char *key,
			   const char **out, struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key);

	*out = NULL;
	if (!v || v->type == JT_NULL)
		return STATUS_OK;
	if (v->type != JT_STR)
		return bad(si, v, STATUS_PARSE, "%s is not a string (%s)", key, jdoc_typename(v));
	*out = v->u.s;
	return STATUS_OK;
}

/*
 * An int array into dst (cap EVENT_MAX_SLOTS). *n = entries, or UINT32_MAX
 * when absent (null counts as absent for optional fields).
 */
static enum status get_int_array(const struct jdoc *doc, const struct jval *obj, const char *key,
				 bool required, int64_t *dst, uint32_t *n, struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key), *e;
	uint32_t i = 0;
	char name[64];

	*n = UINT32_MAX;
	if (!v || (!required && v->type == JT_NULL)) {
		if (required)
			return status_set(si, STATUS_PARSE, "%s missing", key);
		return STATUS_OK;
	}
	if (v->type != JT_ARR)
		return bad(si, v, STATUS_PARSE, "%s is not an integer array (%s)", key, jdoc_typename(v));
	if (v->n > EVENT_MAX_SLOTS) {
		if (si)
			si->byte = (long)v->off + 1;
		return status_set(si, STATUS_LIMIT, "%s has %u entries, more than %d", key, v->n,
				  EVENT_MAX_SLOTS);
	}
	for (e = jdoc_kid(doc, v); e; e = jdoc_next(doc, e), i++) {
		if (e->type == JT_INT) {
			dst[i] = e->u.i;
			continue;
		}
		snprintf(name, sizeof(name), "%s[%u]", key, i);
		if (e->type == JT_REAL && e->int_overflow)
			return bad(si, e, STATUS_PARSE, "%s is %s", name, "outside int64");
		return bad(si, e, STATUS_PARSE, "%s is not an integer (%s)", name, jdoc_typename(e));
	}
	*n = i;
	return STATUS_OK;
}

static enum status check_len(const char *key, uint32_t n, uint32_t h, struct status_info *si)
{
	if (n != h)
		return status_set(si, STATUS_PARSE, "%s has %u entries, host_pos %u", key, n, h);
	return STATUS_OK;
}

static enum status get_req_array(const struct jdoc *doc, const struct jval *obj, const char *key,
				 uint32_t h, const char **dst, bool *present, struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key), *e;
	uint32_t i = 0;

	*present = false;
	if (!v || v->type == JT_NULL)
		return STATUS_OK;
	if (v->type != JT_ARR)
		return bad(si, v, STATUS_PARSE, "%s is not an array (%s)", key, jdoc_typename(v));
	if (v->n != h) {
		if (si)
			si->byte = (long)v->off + 1;
		return status_set(si, STATUS_PARSE, "%s has %u entries, host_pos %u", key, v->n, h);
	}
	for (e = jdoc_kid(doc, v); e; e = jdoc_next(doc, e), i++) {
		if (e->type == JT_NULL)
			dst[i] = NULL;
		else if (e->type == JT_STR)
			dst[i] = e->u.s;
		else {
			char name[64];
			snprintf(name, sizeof(name), "%s[%u]", key, i);
			return bad(si, e, STATUS_PARSE, "%s is not a string or null (%s)", name,
				   jdoc_typename(e));
		}
	}
	*present = true;
	return STATUS_OK;
}

static enum status decode_merge(struct event_decoder *dec, const struct jdoc *doc,
				const struct jval *obj, struct merge_event *m, struct status_info *si)
{
	enum status st;
	uint32_t n, n2, h;
	bool present, p2;
	const struct jval *v;

	memset(m, 0, sizeof(*m));
	if ((st = get_int(doc, obj, "step", true, &present, &m->step, si)))
		return st;
	if ((st = get_int_array(doc, obj, "host_pos", true, dec->host_pos, &n, si)))
		return st;
	h = m->n_host = n;
	m->host_pos = dec->host_pos;
	if ((st = get_int_array(doc, obj, "dev_pos", true, dec->dev_pos, &n, si)))
		return st;
	m->n_dev = n;
	m->dev_pos = dec->dev_pos;
	if ((st = get_bool(doc, obj, "reset_batch", &m->reset_batch, si)) ||
	    (st = get_bool(doc, obj, "mode_switched", &m->mode_switched, si)))
		return st;

	if ((st = get_int_array(doc, obj, "host_tok", false, dec->host_tok, &n, si)))
		return st;
	m->n_host_tok = n == UINT32_MAX ? 0 : n;
	m->host_tok = dec->host_tok;
	if ((st = get_int_array(doc, obj, "dev_tok", false, dec->dev_tok, &n, si)))
		return st;
	m->n_dev_tok = n == UINT32_MAX ? 0 : n;
	m->dev_tok = dec->dev_tok;

	/* prefilled lists slot numbers; kept as membership flags over [0, H). */
	v = jdoc_get(doc, obj, "prefilled");
	memset(dec->prefilled, 0, h);
	m->prefilled = dec->prefilled;
	if (v && v->type != JT_NULL) {
		const struct jval *e;
		uint32_t i = 0;
		if (v->type != JT_ARR)
			return bad(si, v, STATUS_PARSE, "%s is not an integer array (%s)", "prefilled",
				   jdoc_typename(v));
		for (e = jdoc_kid(doc, v); e; e = jdoc_next(doc, e), i++) {
			char name[64];
			if (e->type == JT_INT) {
				/* a slot outside [0, H) cannot be active: nothing to mask */
				if (e->u.i >= 0 && e->u.i < h)
					dec->prefilled[e->u.i] = 1;
				continue;
			}
			snprintf(name, sizeof(name), "prefilled[%u]", i);
			if (e->type == JT_REAL && e->int_overflow)
				return bad(si, e, STATUS_PARSE, "%s is %s", name, "outside int64");
			return bad(si, e, STATUS_PARSE, "%s is not an integer (%s)", name,
				   jdoc_typename(e));
		}
		m->has_prefilled = true;
	}

	if ((st = get_int(doc, obj, "buf_step", false, &m->has_buf_step, &m->buf_step, si)))
		return st;
	if ((st = get_int(doc, obj, "gen", false, &present, &m->gen, si)) ||
	    (st = get_int(doc, obj, "buf_gen", false, &p2, &m->buf_gen, si)))
		return st;
	m->has_gen = present && p2;

	if ((st = get_int_array(doc, obj, "slot_gen", false, dec->slot_gen, &n, si)) ||
	    (st = get_int_array(doc, obj, "buf_slot_gen", false, dec->buf_slot_gen, &n2, si)))
		return st;
	if (n != UINT32_MAX && (st = check_len("slot_gen", n, h, si)))
		return st;
	if (n2 != UINT32_MAX && (st = check_len("buf_slot_gen", n2, h, si)))
		return st;
	m->has_slot_gen = n != UINT32_MAX && n2 != UINT32_MAX;
	m->slot_gen = dec->slot_gen;
	m->buf_slot_gen = dec->buf_slot_gen;

	if ((st = get_req_array(doc, obj, "slot_req", h, dec->slot_req, &present, si)) ||
	    (st = get_req_array(doc, obj, "buf_req", h, dec->buf_req, &p2, si)))
		return st;
	m->has_req = present && p2;
	m->slot_req = dec->slot_req;
	m->buf_req = dec->buf_req;

	v = jdoc_get(doc, obj, "taken");
	m->taken = dec->taken;
	if (v && v->type != JT_NULL) {
		const struct jval *e;
		uint32_t i = 0;
		if (v->type != JT_ARR)
			return bad(si, v, STATUS_PARSE, "%s is not a boolean array (%s)", "taken",
				   jdoc_typename(v));
		if (v->n != h) {
			if (si)
				si->byte = (long)v->off + 1;
			return status_set(si, STATUS_PARSE, "taken has %u entries, host_pos %u", v->n, h);
		}
		for (e = jdoc_kid(doc, v); e; e = jdoc_next(doc, e), i++) {
			if (e->type != JT_TRUE && e->type != JT_FALSE) {
				char name[64];
				snprintf(name, sizeof(name), "taken[%u]", i);
				return bad(si, e, STATUS_PARSE, "%s is not a boolean (%s)", name,
					   jdoc_typename(e));
			}
			dec->taken[i] = e->type == JT_TRUE;
		}
		m->has_taken = true;
	}
	if ((st = get_str(doc, obj, "arm", &m->arm, si)))
		return st;
	v = jdoc_get(doc, obj, "t");
	if (v && v->type != JT_NULL) {
		if (v->type == JT_INT)
			m->t = (double)v->u.i;
		else if (v->type == JT_REAL)
			m->t = v->u.d;
		else
			return bad(si, v, STATUS_PARSE, "%s is not a number (%s)", "t", jdoc_typename(v));
		m->has_t = true;
	}
	return STATUS_OK;
}

static enum status decode_config(const struct jdoc *doc, const struct jval *obj,
				 struct config_event *c, struct status_info *si)
{
	enum status st;
	bool present;

	memset(c, 0, sizeof(*c));
	if ((st = get_int(doc, obj, "slots", false, &present, &c->slots, si)) ||
	    (st = get_int(doc, obj, "max_model_len", false, &present, &c->max_model_len, si)) ||
	    (st = get_str(doc, obj, "arm", &c->arm, si)))
		return st;
	if (c->max_model_len < 0)
		return status_set(si, STATUS_PARSE, "max_model_len is negative (%lld)",
				  (long long)c->max_model_len);
	return STATUS_OK;
}

static enum status decode_context(const struct jdoc *doc, const struct jval *obj, const char *ev,
				  struct context_event *c, struct status_info *si)
{
	enum status st;

	memset(c, 0, sizeof(*c));
	c->ev = ev;
	if ((st = get_int(doc, obj, "step", false, &c->has_step, &c->step, si)) ||
	    (st = get_int(doc, obj, "slot", false, &c->has_slot, &c->slot, si)) ||
	    (st = get_str(doc, obj, "phase", &c->phase, si)) ||
	    (st = get_str(doc, obj, "req", &c->req, si)))
		return st;
	return STATUS_OK;
}

enum status event_decode(struct event_decoder *dec, const struct jdoc *doc,
			 const struct jval *obj, struct event *out, struct status_info *si)
{
	const struct jval *ev = jdoc_get(doc, obj, "ev");

	memset(out, 0, sizeof(*out));
	if (!ev || ev->type != JT_STR)
		return bad(si, ev, STATUS_PARSE, "%s is not a string (%s)", "ev", jdoc_typename(ev));
	out->ev = ev->u.s;
	if (!strcmp(ev->u.s, "merge")) {
		out->kind = EVENT_MERGE;
		return decode_merge(dec, doc, obj, &out->u.merge, si);
	}
	if (!strcmp(ev->u.s, "config")) {
		out->kind = EVENT_CONFIG;
		return decode_config(doc, obj, &out->u.config, si);
	}
	if (!strcmp(ev->u.s, "decode") || !strcmp(ev->u.s, "prefill") ||
	    !strcmp(ev->u.s, "width_change") || !strcmp(ev->u.s, "request")) {
		out->kind = EVENT_CONTEXT;
		return decode_context(doc, obj, ev->u.s, &out->u.ctx, si);
	}
	out->kind = EVENT_OTHER;
	return STATUS_OK;
}
