/*
 * armspec.c - loading and validating arm specs (armspec.h, docs/arms.md).
 */
#include "probe/armspec_priv.h"
#include "base/jsonw.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *arm_kind_name(enum arm_kind k)
{
	static const char *const names[] = { "log", "metrics", "models", "env", "audit" };

	return (unsigned)k < 5 ? names[k] : "?";
}


static long arm_line_of(const struct arm_spec *s, uint32_t off)
{
	long line = 1;
	size_t i;

	for (i = 0; i < off && i < s->n_text; i++)
		if (s->text[i] == '\n')
			line++;
	return line;
}

static enum status arm_bad(const struct arm_spec *s, const struct jval *v, struct status_info *si,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum status arm_bad(const struct arm_spec *s, const struct jval *v, struct status_info *si,
			   const char *fmt, ...)
{
	va_list ap;

	if (!si)
		return STATUS_PARSE;
	status_set_at(si, STATUS_PARSE, s->path, v ? arm_line_of(s, v->off) : 0, 0, "%s", "");
	va_start(ap, fmt);
	vsnprintf(si->msg, sizeof(si->msg), fmt, ap);
	va_end(ap);
	return STATUS_PARSE;
}

void arm_value_text(const struct jval *v, char *buf, size_t n)
{
	switch (v->type) {
	case JT_INT: snprintf(buf, n, "%lld", (long long)v->u.i); break;
	case JT_REAL: jsonw_dtoa(buf, n, v->u.d); break;
	case JT_STR: snprintf(buf, n, "\"%s\"", v->u.s); break;
	case JT_TRUE: snprintf(buf, n, "true"); break;
	case JT_FALSE: snprintf(buf, n, "false"); break;
	case JT_NULL: snprintf(buf, n, "null"); break;
	default: snprintf(buf, n, "%s", jdoc_typename(v)); break;
	}
}

static void arm_item_label(struct arm_item *it)
{
	char val[128];
	size_t off, i;

	switch (it->kind) {
	case ARM_LOG:
		snprintf(it->label, sizeof(it->label), "log /%s/", it->what);
		break;
	case ARM_METRICS:
		off = (size_t)snprintf(it->label, sizeof(it->label), "metrics %s", it->what);
		for (i = 0; i < it->n_labels && off < sizeof(it->label); i++)
			off += (size_t)snprintf(it->label + off, sizeof(it->label) - off, "%s%s=\"%s\"%s",
						i ? "," : "{", it->labels[2 * i], it->labels[2 * i + 1],
						i + 1 == it->n_labels ? "}" : "");
		break;
	case ARM_MODELS:
	case ARM_ENV:
		val[0] = '\0';
		if (it->equals)
			arm_value_text(it->equals, val, sizeof(val));
		snprintf(it->label, sizeof(it->label), "%s %s%s%s%s%s", arm_kind_name(it->kind), it->what,
			 it->equals ? " = " : "", val, it->model ? " of model " : "",
			 it->model ? it->model : "");
		break;
	case ARM_AUDIT:
		memcpy(val, it->rule.name, sizeof(val) < sizeof(it->rule.name) ? sizeof(val) :
		       sizeof(it->rule.name));
		val[sizeof(val) - 1] = '\0';
		snprintf(it->label, sizeof(it->label), "audit %s", val);
		break;
	}
}

static enum status arm_parse_item(struct arm_spec *s, struct arm_def *a, const struct jval *v,
				  bool forbid, size_t idx, struct status_info *si)
{
	static const char *const kinds[] = { "log", "metrics", "models", "env", "audit" };
	const char *list = forbid ? "forbids" : "requires";
	struct arm_item *it;
	const struct jval *m;
	int n_kind = 0;
	size_t k;

	if (a->n_items >= ARM_MAX_ITEMS)
		return arm_bad(s, v, si, "arm '%s': more than %d evidence items", a->name, ARM_MAX_ITEMS);
	if (v->type != JT_OBJ)
		return arm_bad(s, v, si, "arm '%s': %s[%zu] is %s, want an object", a->name, list, idx,
			       jdoc_typename(v));
	it = &a->items[a->n_items];
	memset(it, 0, sizeof(*it));
	it->forbid = forbid;
	it->line = arm_line_of(s, v->off);
	for (m = jdoc_kid(s->doc, v); m; m = jdoc_next(s->doc, m)) {
		for (k = 0; k < 5; k++)
			if (!strcmp(m->key, kinds[k]))
				break;
		if (k < 5) {
			if (n_kind++)
				return arm_bad(s, m, si, "arm '%s': %s[%zu] names two kinds of evidence",
					       a->name, list, idx);
			if (m->type != JT_STR || !m->n)
				return arm_bad(s, m, si, "arm '%s': %s[%zu]: %s must be a non-empty string",
					       a->name, list, idx, m->key);
			it->kind = (enum arm_kind)k;
			it->what = m->u.s;
			it->what_len = m->n;
		} else if (!strcmp(m->key, "labels") || !strcmp(m->key, "equals") ||
			   !strcmp(m->key, "model") || !strcmp(m->key, "why") || !strcmp(m->key, "rule")) {
			/* checked below, once the kind is known */
		} else {
			return arm_bad(s, m, si, "arm '%s': %s[%zu]: unknown key '%s'", a->name, list, idx,
				       m->key);
		}
	}
	if (!n_kind)
		return arm_bad(s, v, si, "arm '%s': %s[%zu] names no evidence (log, metrics, models, env "
			       "or audit)", a->name, list, idx);
	for (m = jdoc_kid(s->doc, v); m; m = jdoc_next(s->doc, m)) {
		if (!strcmp(m->key, "why")) {
			if (m->type != JT_STR)
				return arm_bad(s, m, si, "arm '%s': %s[%zu]: why must be a string", a->name,
					       list, idx);
		} else if (!strcmp(m->key, "labels")) {
			const struct jval *l;

			if (it->kind != ARM_METRICS || m->type != JT_OBJ)
				return arm_bad(s, m, si, "arm '%s': %s[%zu]: labels belongs to metrics, as "
					       "an object of strings", a->name, list, idx);
			for (l = jdoc_kid(s->doc, m); l; l = jdoc_next(s->doc, l)) {
				if (l->type != JT_STR)
					return arm_bad(s, l, si, "arm '%s': %s[%zu]: label '%s' is %s, want "
						       "a string", a->name, list, idx, l->key,
						       jdoc_typename(l));
				if (it->n_labels >= ARM_MAX_LABELS)
					return arm_bad(s, l, si, "arm '%s': %s[%zu]: more than %d labels",
						       a->name, list, idx, ARM_MAX_LABELS);
				it->labels[2 * it->n_labels] = l->key;
				it->labels[2 * it->n_labels + 1] = l->u.s;
				it->n_labels++;
			}
		} else if (!strcmp(m->key, "equals")) {
			if (it->kind != ARM_MODELS && it->kind != ARM_ENV)
				return arm_bad(s, m, si, "arm '%s': %s[%zu]: equals belongs to models or env",
					       a->name, list, idx);
			if (it->kind == ARM_ENV && m->type != JT_STR)
				return arm_bad(s, m, si, "arm '%s': %s[%zu]: env equals must be a string",
					       a->name, list, idx);
			if (m->type == JT_ARR || m->type == JT_OBJ)
				return arm_bad(s, m, si, "arm '%s': %s[%zu]: equals must be a scalar",
					       a->name, list, idx);
			it->equals = m;
		} else if (!strcmp(m->key, "rule")) {
			if (it->kind != ARM_LOG || m->type != JT_STR || !m->n)
				return arm_bad(s, m, si, "arm '%s': %s[%zu]: rule belongs to log, as the name "
					       "of a built-in banner rule", a->name, list, idx);
			it->banner_rule = m->u.s;
		} else if (!strcmp(m->key, "model")) {
			if (it->kind != ARM_MODELS || m->type != JT_STR)
				return arm_bad(s, m, si, "arm '%s': %s[%zu]: model belongs to models, as a "
					       "string", a->name, list, idx);
			it->model = m->u.s;
		}
	}
	if (it->kind == ARM_LOG) {
		PCRE2_SIZE eoff;
		int ec;

		it->re = pcre2_compile((PCRE2_SPTR)it->what, it->what_len, 0, &ec, &eoff, NULL);
		if (!it->re) {
			PCRE2_UCHAR msg[160];

			pcre2_get_error_message(ec, msg, sizeof(msg));
			return arm_bad(s, v, si, "arm '%s': %s[%zu]: bad pattern at offset %zu: %s",
				       a->name, list, idx, (size_t)eoff, (const char *)msg);
		}
	} else if (it->kind == ARM_AUDIT) {
		struct status_info rsi = { 0 };

		if (forbid)
			return arm_bad(s, v, si, "arm '%s': forbids[%zu]: audit evidence can only be "
				       "required", a->name, idx);
		if (rule_parse(it->what, &it->rule, &rsi))
			return arm_bad(s, v, si, "arm '%s': %s[%zu]: %s", a->name, list, idx, rsi.msg);
	}
	arm_item_label(it);
	a->n_items++;
	return STATUS_OK;
}

static enum status arm_parse_list(struct arm_spec *s, struct arm_def *a, const struct jval *l,
				  bool forbid, struct status_info *si)
{
	const struct jval *v;
	enum status st;
	size_t i = 0;

	if (l->type != JT_ARR)
		return arm_bad(s, l, si, "arm '%s': %s is %s, want an array", a->name, l->key,
			       jdoc_typename(l));
	for (v = jdoc_kid(s->doc, l); v; v = jdoc_next(s->doc, v), i++) {
		st = arm_parse_item(s, a, v, forbid, i, si);
		if (st)
			return st;
	}
	return STATUS_OK;
}

static enum status arm_parse_arm(struct arm_spec *s, const struct jval *v, struct status_info *si)
{
	struct arm_def *a = &s->arms[s->n_arms];
	const struct jval *m, *req = NULL, *forb = NULL;
	size_t i;
	enum status st;

	memset(a, 0, sizeof(*a));
	a->name = v->key;
	a->line = arm_line_of(s, v->off);
	if (!*a->name)
		return arm_bad(s, v, si, "an arm has an empty name");
	for (i = 0; i < s->n_arms; i++)
		if (!strcmp(s->arms[i].name, a->name))
			return arm_bad(s, v, si, "arm '%s' is declared twice", a->name);
	if (v->type != JT_OBJ)
		return arm_bad(s, v, si, "arm '%s' is %s, want an object", a->name, jdoc_typename(v));
	for (m = jdoc_kid(s->doc, v); m; m = jdoc_next(s->doc, m)) {
		if (!strcmp(m->key, "requires")) {
			req = m;
		} else if (!strcmp(m->key, "forbids")) {
			forb = m;
		} else if (!strcmp(m->key, "env")) {
			const struct jval *e;

			if (m->type != JT_OBJ)
				return arm_bad(s, m, si, "arm '%s': env is %s, want an object", a->name,
					       jdoc_typename(m));
			for (e = jdoc_kid(s->doc, m); e; e = jdoc_next(s->doc, e))
				if (e->type != JT_STR)
					return arm_bad(s, e, si, "arm '%s': env '%s' is %s, want a string",
						       a->name, e->key, jdoc_typename(e));
			a->env = m;
		} else if (!strcmp(m->key, "description")) {
			if (m->type != JT_STR)
				return arm_bad(s, m, si, "arm '%s': description must be a string", a->name);
		} else {
			return arm_bad(s, m, si, "arm '%s': unknown key '%s'", a->name, m->key);
		}
	}
	if (req && (st = arm_parse_list(s, a, req, false, si)))
		return st;
	if (forb && (st = arm_parse_list(s, a, forb, true, si)))
		return st;
	/* requires are parsed first: items[0] is one when there is any */
	if (!req || !a->n_items || a->items[0].forbid)
		return arm_bad(s, req ? req : v, si, "arm '%s' requires no evidence: an arm with nothing "
			       "to show can never be confirmed", a->name);
	s->n_arms++;
	return STATUS_OK;
}

enum status arm_spec_load(const char *path, struct arm_spec **out, struct status_info *si)
{
	const struct jval *root, *m, *arms = NULL, *v;
	struct status_info psi = { 0 };
	struct arm_spec *s = NULL;
	enum status st = STATUS_OK;
	FILE *f = NULL;
	size_t n;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->text = malloc(ARM_SPEC_MAX_BYTES + 1)) ||
	    !(s->arms = calloc(ARM_MAX_ARMS, sizeof(*s->arms)))) {
		st = status_set(si, STATUS_NOMEM, "out of memory");
		goto out;
	}
	snprintf(s->path, sizeof(s->path), "%s", path);
	f = fopen(path, "re");
	if (!f) {
		st = status_set_at(si, STATUS_IO, path, 0, 0, "%s", strerror(errno));
		goto out;
	}
	n = fread(s->text, 1, ARM_SPEC_MAX_BYTES + 1, f);
	if (ferror(f)) {
		st = status_set_at(si, STATUS_IO, path, 0, 0, "read failed");
		goto out;
	}
	if (n > ARM_SPEC_MAX_BYTES) {
		st = status_set_at(si, STATUS_LIMIT, path, 0, 0, "spec larger than %u bytes",
				   ARM_SPEC_MAX_BYTES);
		goto out;
	}
	s->text[n] = '\0';
	s->n_text = n;
	s->doc = jdoc_new(ARM_SPEC_MAX_BYTES);
	if (!s->doc) {
		st = status_set(si, STATUS_NOMEM, "out of memory");
		goto out;
	}
	st = jdoc_parse(s->doc, s->text, n, &psi);
	if (st) {
		uint32_t off = psi.byte > 0 ? (uint32_t)psi.byte - 1 : 0;
		long col = 1;
		size_t i;

		for (i = off; i > 0 && s->text[i - 1] != '\n'; i--)
			col++;
		status_set_at(si, st, path, arm_line_of(s, off), col, "not JSON: %s", psi.msg);
		goto out;
	}
	root = jdoc_root(s->doc);
	if (root->type != JT_OBJ) {
		st = arm_bad(s, root, si, "spec is %s, want an object", jdoc_typename(root));
		goto out;
	}
	for (m = jdoc_kid(s->doc, root); m; m = jdoc_next(s->doc, m)) {
		if (!strcmp(m->key, "arms")) {
			arms = m;
		} else if (!strcmp(m->key, "version")) {
			if (m->type != JT_INT || m->u.i != 1) {
				st = arm_bad(s, m, si, "version must be 1");
				goto out;
			}
		} else if (strcmp(m->key, "description")) {
			st = arm_bad(s, m, si, "unknown key '%s'", m->key);
			goto out;
		}
	}
	if (!arms || arms->type != JT_OBJ || !arms->n) {
		st = arm_bad(s, arms ? arms : root, si, "spec declares no arm (want \"arms\": {name: {...}})");
		goto out;
	}
	for (v = jdoc_kid(s->doc, arms); v; v = jdoc_next(s->doc, v)) {
		if (s->n_arms >= ARM_MAX_ARMS) {
			st = arm_bad(s, v, si, "more than %d arms", ARM_MAX_ARMS);
			goto out;
		}
		st = arm_parse_arm(s, v, si);
		if (st)
			goto out;
	}
out:
	if (f)
		fclose(f);
	if (st) {
		arm_spec_free(s);
		return st;
	}
	*out = s;
	return STATUS_OK;
}

void arm_spec_free(struct arm_spec *s)
{
	size_t i, j;

	if (!s)
		return;
	for (i = 0; s->arms && i < ARM_MAX_ARMS; i++)
		for (j = 0; j < s->arms[i].n_items; j++)
			pcre2_code_free(s->arms[i].items[j].re);
	free(s->arms);
	jdoc_free(s->doc);
	free(s->text);
	free(s);
}

size_t arm_spec_n_arms(const struct arm_spec *s)
{
	return s->n_arms;
}

const char *arm_spec_arm(const struct arm_spec *s, size_t i)
{
	return i < s->n_arms ? s->arms[i].name : NULL;
}

const struct arm_def *arm_spec_find(const struct arm_spec *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n_arms; i++)
		if (!strcmp(s->arms[i].name, name))
			return &s->arms[i];
	return NULL;
}

int arm_spec_has(const struct arm_spec *s, const char *name)
{
	return arm_spec_find(s, name) != NULL;
}

enum status arm_spec_print_env(const struct arm_spec *s, const char *arm, FILE *f,
			       struct status_info *si)
{
	const struct arm_def *a = arm_spec_find(s, arm);
	const struct jval *e;

	if (!a)
		return status_set(si, STATUS_NOTFOUND, "%s: no arm '%s'", s->path, arm);
	for (e = a->env ? jdoc_kid(s->doc, a->env) : NULL; e; e = jdoc_next(s->doc, e))
		fprintf(f, "%s=%s\n", e->key, e->u.s);
	return STATUS_OK;
}
