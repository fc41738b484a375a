#define PCRE2_CODE_UNIT_WIDTH 8
#include "arms.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "http.h"
#include "jdoc.h"
#include "prom.h"
#include "reader.h"
#include "rule.h"
#include "tally.h"

#define ARM_MAX_LABELS 16
#define ARM_MAX_ARMS 64

struct arm_item {
	enum arm_kind kind;
	bool forbid;
	long line;                    /* in the spec */
	const char *what;             /* pattern, metric, field, variable or rule (in the jdoc) */
	uint32_t what_len;
	pcre2_code *re;               /* log */
	const char *labels[2 * ARM_MAX_LABELS];   /* metrics: name, value, ... */
	size_t n_labels;
	const struct jval *equals;    /* models, env: NULL = presence only */
	const char *model;            /* models: the entry to look at; NULL = any */
	struct rule rule;             /* audit */
	const char *banner_rule;      /* log: the capture banner rule that records its lines */
	char label[256];              /* for reports */
};

struct arm_def {
	const char *name;
	long line;
	const struct jval *env;       /* object of strings, or NULL */
	struct arm_item items[ARM_MAX_ITEMS];
	size_t n_items;
};

struct arm_spec {
	char path[512];
	char *text;
	size_t n_text;
	struct jdoc *doc;
	struct arm_def *arms;
	size_t n_arms;
};

const char *arm_verdict_name(enum arm_verdict v)
{
	switch (v) {
	case ARM_MET: return "met";
	case ARM_ABSENT: return "absent";
	case ARM_FORBIDDEN_PRESENT: return "forbidden-present";
	case ARM_CLEAR: return "clear";
	case ARM_NOT_EVALUABLE: return "not-evaluable";
	default: return "source-unreachable";
	}
}

const char *arm_kind_name(enum arm_kind k)
{
	static const char *const names[] = { "log", "metrics", "models", "env", "audit" };

	return (unsigned)k < 5 ? names[k] : "?";
}

/* --- spec loading ------------------------------------------------------ */

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

static void arm_scalar_text(const struct jval *v, char *buf, size_t n)
{
	switch (v->type) {
	case JT_INT: snprintf(buf, n, "%lld", (long long)v->u.i); break;
	case JT_REAL: snprintf(buf, n, "%.17g", v->u.d); break;
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
			arm_scalar_text(it->equals, val, sizeof(val));
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

static const struct arm_def *arm_find(const struct arm_spec *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n_arms; i++)
		if (!strcmp(s->arms[i].name, name))
			return &s->arms[i];
	return NULL;
}

int arm_spec_has(const struct arm_spec *s, const char *name)
{
	return arm_find(s, name) != NULL;
}

enum status arm_spec_print_env(const struct arm_spec *s, const char *arm, FILE *f,
			       struct status_info *si)
{
	const struct arm_def *a = arm_find(s, arm);
	const struct jval *e;

	if (!a)
		return status_set(si, STATUS_NOTFOUND, "%s: no arm '%s'", s->path, arm);
	for (e = a->env ? jdoc_kid(s->doc, a->env) : NULL; e; e = jdoc_next(s->doc, e))
		fprintf(f, "%s=%s\n", e->key, e->u.s);
	return STATUS_OK;
}

/* --- evidence ---------------------------------------------------------- */

struct arm_ctx {
	const struct arm_sources *src;
	double timeout;
	int metrics_state;           /* 0 not fetched, 1 read, -1 unreachable */
	char metrics_url[HTTP_MAX_URL];
	char metrics_err[512];
	struct http_response metrics;
	struct prom *prom;
	int models_state;
	char models_url[HTTP_MAX_URL];
	char models_err[512];
	cJSON *models;
};

static void arm_excerpt(const char *s, size_t n, char *buf, size_t cap)
{
	size_t i, k = 0;

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	for (i = 0; i < n && k + 4 < cap; i++)
		buf[k++] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
	if (i < n && k + 4 <= cap) {
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = '\0';
}

/* Scans a plain log for re. Returns -1 when unreadable or empty (reason set), else 0. */
static int arm_scan_log(const char *path, const pcre2_code *re, struct arm_item_result *res,
			bool *found, char *reason, size_t n_reason)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
	char *buf = malloc(ARM_MAX_LINE + 1);
	long line = 0;
	bool cont = false;
	FILE *f = NULL;
	int rc = -1;

	if (!md || !buf) {
		snprintf(reason, n_reason, "out of memory");
		goto out;
	}
	f = fopen(path, "re");
	if (!f) {
		snprintf(reason, n_reason, "%s: %s", path, strerror(errno));
		goto out;
	}
	while (fgets(buf, ARM_MAX_LINE + 1, f)) {
		size_t n = strlen(buf);
		bool whole = n && buf[n - 1] == '\n';

		/* The rest of an overlong line is not matched: its start was. */
		if (!cont) {
			line++;
			if (pcre2_match(re, (PCRE2_SPTR)buf, n, 0, 0, md, NULL) >= 0) {
				*found = true;
				snprintf(res->where, sizeof(res->where), "%s:%ld", path, line);
				arm_excerpt(buf, n, res->quote, sizeof(res->quote));
				break;
			}
		}
		cont = !whole;
	}
	if (ferror(f)) {
		snprintf(reason, n_reason, "%s: read failed", path);
		goto out;
	}
	if (!*found && line == 0) {
		snprintf(reason, n_reason, "%s is empty", path);
		goto out;
	}
	if (!*found)
		snprintf(reason, n_reason, "not in %s (%ld lines)", path, line);
	rc = 0;
out:
	if (f)
		fclose(f);
	free(buf);
	pcre2_match_data_free(md);
	return rc;
}

/* Rule name `name` is `want`, or has its prefix when want ends in '*' ("arm:*"). */
static bool arm_rule_is(const char *want, const char *name)
{
	size_t n = strlen(want);

	if (n && want[n - 1] == '*')
		return !strncmp(want, name, n - 1);
	return !strcmp(want, name);
}

/*
 * Scans a capture's banner and line records for re; -1 when unreadable or
 * empty. *blind is set when the capture could not have recorded the line:
 * it was taken without --all-lines (no `line` record, and its processes
 * saw more lines than it recorded), and the item names no banner rule
 * whose lines it records. With a rule, only that rule's banner records are
 * looked at: the capture recorded every line the rule matched.
 */
static int arm_scan_capture(const char *path, const struct arm_item *ai, struct arm_item_result *res,
			    bool *found, bool *blind, char *reason, size_t n_reason)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(ai->re, NULL);
	struct audit_reader *r = NULL;
	struct status_info si = { 0 };
	struct audit_item it;
	unsigned long texts = 0, n_line = 0, recorded = 0, seen = 0, ends = 0;
	enum status st;
	int rc = -1;

	*blind = false;
	if (!md) {
		snprintf(reason, n_reason, "out of memory");
		goto out;
	}
	if (audit_reader_open(&r, path, NULL, &si)) {
		snprintf(reason, n_reason, "%s: %.400s", path, si.msg);
		goto out;
	}
	while ((st = audit_reader_next(r, &it, &si)) != STATUS_EOF) {
		const struct jval *text, *v;

		if (st == STATUS_PARSE || st == STATUS_LIMIT)
			continue;
		if (st) {
			snprintf(reason, n_reason, "%s: %.400s", path, si.msg);
			goto out;
		}
		if (!it.src)
			continue;
		if (!strcmp(it.src, "end")) {
			v = jdoc_get(it.doc, it.record, "lines");
			ends++;
			if (v && v->type == JT_INT && v->u.i > 0)
				seen += (unsigned long)v->u.i;
			continue;
		}
		if (!strcmp(it.src, "audit")) {
			recorded++;
			continue;
		}
		if (strcmp(it.src, "banner") && strcmp(it.src, "line"))
			continue;
		recorded++;
		if (!strcmp(it.src, "line"))
			n_line++;
		text = jdoc_get(it.doc, it.record, "text");
		if (!text || text->type != JT_STR)
			continue;
		if (ai->banner_rule) {
			v = jdoc_get(it.doc, it.record, "rule");
			if (strcmp(it.src, "banner") || !v || v->type != JT_STR || !arm_rule_is(ai->banner_rule, v->u.s))
				continue;
		}
		texts++;
		if (!*found && pcre2_match(ai->re, (PCRE2_SPTR)text->u.s, text->n, 0, 0, md, NULL) >= 0) {
			*found = true;
			snprintf(res->where, sizeof(res->where), "%s:%ld", path, it.line);
			arm_excerpt(text->u.s, text->n, res->quote, sizeof(res->quote));
		}
	}
	if (!*found && audit_reader_stats(r)->lines - audit_reader_stats(r)->blank == 0) {
		snprintf(reason, n_reason, "%s is empty", path);
		goto out;
	}
	if (!*found && !ai->banner_rule && !n_line && (!ends || seen > recorded)) {
		*blind = true;
		snprintf(reason, n_reason, "%s recorded only the lines its banner rules matched (taken "
			 "without --all-lines; %lu lines seen, %lu recorded): a line matching this pattern "
			 "could not have been recorded; capture with --all-lines, give --log, or name the "
			 "banner rule that records it (\"rule\")", path, seen, recorded);
	} else if (!*found) {
		snprintf(reason, n_reason, "not in %s (%lu %s records)", path, texts,
			 ai->banner_rule ? ai->banner_rule : "banner/line");
	}
	rc = 0;
out:
	audit_reader_free(r);
	pcre2_match_data_free(md);
	return rc;
}

static void arm_conclude(const struct arm_item *it, struct arm_item_result *res, bool found,
			 int unreachable)
{
	if (found)
		res->verdict = it->forbid ? ARM_FORBIDDEN_PRESENT : ARM_MET;
	else if (unreachable < 0)
		res->verdict = ARM_NOT_EVALUABLE;
	else if (unreachable)
		res->verdict = ARM_UNREACHABLE;
	else
		res->verdict = it->forbid ? ARM_CLEAR : ARM_ABSENT;
}

static void arm_eval_log(struct arm_ctx *c, const struct arm_item *it, struct arm_item_result *res)
{
	char r1[512] = "", r2[512] = "";
	bool found = false, unreachable = false, blind = false;

	if (!c->src->log && !c->src->capture) {
		snprintf(res->reason, sizeof(res->reason), "no engine log or capture given (--log, --capture)");
		arm_conclude(it, res, false, true);
		return;
	}
	if (c->src->log && arm_scan_log(c->src->log, it->re, res, &found, r1, sizeof(r1)) < 0)
		unreachable = true;
	if (!found && c->src->capture &&
	    arm_scan_capture(c->src->capture, it, res, &found, &blind, r2, sizeof(r2)) < 0)
		unreachable = true;
	if (!found)
		snprintf(res->reason, sizeof(res->reason), "%.250s%s%.250s", r1, r1[0] && r2[0] ? "; " : "", r2);
	/* absence in a source that could not have shown the line is no
	 * evidence: not evaluable (unless a log that has every line was read) */
	arm_conclude(it, res, found, unreachable ? 1 : blind && !c->src->log ? -1 : 0);
}

/*
 * GETs the server's `path` into *res (always initialised: the caller
 * releases it) with the full URL in url. 0 when it answered 200; -1 with the
 * reason in err otherwise (a non-200 answer quotes the start of its body).
 */
static int arm_get(const struct arm_ctx *c, const char *path, char *url, size_t url_n,
		   struct http_response *res, char *err, size_t err_n)
{
	struct status_info si = { 0 };
	char ex[160];

	memset(res, 0, sizeof(*res));
	if (!c->src->url) {
		snprintf(err, err_n, "no server url given (--url)");
		return -1;
	}
	if (http_join(c->src->url, path, url, url_n)) {
		snprintf(err, err_n, "url too long");
		return -1;
	}
	if (http_get(url, c->timeout, 0, res, &si)) {
		snprintf(err, err_n, "%.500s", si.msg);
		return -1;
	}
	if (res->status != 200) {
		snprintf(err, err_n, "%.300s answered %ld: %s", url, res->status,
			 http_excerpt(res->body, res->n_body, 120, ex, sizeof(ex)));
		return -1;
	}
	return 0;
}

static int arm_fetch_metrics(struct arm_ctx *c)
{
	struct status_info si = { 0 };

	if (c->metrics_state)
		return c->metrics_state;
	c->metrics_state = -1;
	if (arm_get(c, "/metrics", c->metrics_url, sizeof(c->metrics_url), &c->metrics,
		    c->metrics_err, sizeof(c->metrics_err)))
		return -1;
	if (prom_parse(c->metrics.body, c->metrics.n_body, &c->prom, &si)) {
		snprintf(c->metrics_err, sizeof(c->metrics_err), "%.300s:%ld: does not parse: %.150s",
			 c->metrics_url, si.line, si.msg);
		return -1;
	}
	if (!prom_n_samples(c->prom)) {
		snprintf(c->metrics_err, sizeof(c->metrics_err), "%.300s holds no sample", c->metrics_url);
		return -1;
	}
	c->metrics_state = 1;
	return 1;
}

/* Line `line` (1-based) of the metrics body, for quoting. */
static void arm_metrics_line(const struct arm_ctx *c, long line, char *buf, size_t n)
{
	const char *p = c->metrics.body, *e;
	long i;

	for (i = 1; i < line && p; i++) {
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!p) {
		buf[0] = '\0';
		return;
	}
	e = strchr(p, '\n');
	arm_excerpt(p, e ? (size_t)(e - p) : strlen(p), buf, n);
}

static void arm_eval_metrics(struct arm_ctx *c, const struct arm_item *it, struct arm_item_result *res)
{
	const struct prom_sample *s;
	size_t i, same = 0;

	if (arm_fetch_metrics(c) < 0) {
		snprintf(res->reason, sizeof(res->reason), "%s", c->metrics_err);
		arm_conclude(it, res, false, true);
		return;
	}
	s = prom_find(c->prom, it->what, it->labels, it->n_labels);
	if (s) {
		snprintf(res->where, sizeof(res->where), "%s:%ld", c->metrics_url, s->line);
		arm_metrics_line(c, s->line, res->quote, sizeof(res->quote));
	} else {
		for (i = 0; i < prom_n_samples(c->prom); i++)
			if (!strcmp(prom_sample(c->prom, i)->name, it->what))
				same++;
		snprintf(res->reason, sizeof(res->reason), same ? "%zu sample(s) of %s, none with these "
			 "labels, in %s" : "%zu samples of %s in %s", same, it->what, c->metrics_url);
	}
	arm_conclude(it, res, s != NULL, false);
}

static int arm_fetch_models(struct arm_ctx *c)
{
	struct http_response res;
	const cJSON *data;

	if (c->models_state)
		return c->models_state;
	c->models_state = -1;
	if (arm_get(c, "/v1/models", c->models_url, sizeof(c->models_url), &res, c->models_err,
		    sizeof(c->models_err)))
		goto out;
	c->models = cJSON_ParseWithLength(res.body, res.n_body);
	data = cJSON_GetObjectItemCaseSensitive(c->models, "data");
	if (!cJSON_IsArray(data)) {
		snprintf(c->models_err, sizeof(c->models_err), "%.300s: not a model list (no data array)",
			 c->models_url);
		goto out;
	}
	if (!cJSON_GetArraySize(data)) {
		snprintf(c->models_err, sizeof(c->models_err), "%.300s lists no model", c->models_url);
		goto out;
	}
	c->models_state = 1;
out:
	http_response_release(&res);
	return c->models_state;
}

static bool arm_equals(const struct jval *want, const cJSON *got)
{
	switch (want->type) {
	case JT_INT: return cJSON_IsNumber(got) && got->valuedouble == (double)want->u.i;
	case JT_REAL: return cJSON_IsNumber(got) && got->valuedouble == want->u.d;
	case JT_STR: return cJSON_IsString(got) && !strcmp(got->valuestring, want->u.s);
	case JT_TRUE: return cJSON_IsTrue(got);
	case JT_FALSE: return cJSON_IsFalse(got);
	case JT_NULL: return cJSON_IsNull(got);
	default: return false;
	}
}

static void arm_eval_models(struct arm_ctx *c, const struct arm_item *it, struct arm_item_result *res)
{
	const cJSON *data, *m;
	char seen[300] = "";
	bool found = false;
	int i = 0;

	if (arm_fetch_models(c) < 0) {
		snprintf(res->reason, sizeof(res->reason), "%s", c->models_err);
		arm_conclude(it, res, false, true);
		return;
	}
	data = cJSON_GetObjectItemCaseSensitive(c->models, "data");
	cJSON_ArrayForEach(m, data) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(m, "id");
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(m, it->what);
		char *txt;

		if (it->model && (!cJSON_IsString(id) || strcmp(id->valuestring, it->model))) {
			i++;
			continue;
		}
		txt = f ? cJSON_PrintUnformatted(f) : NULL;
		if (!seen[0])
			snprintf(seen, sizeof(seen), "data[%d].%.100s is %.150s", i, it->what,
				 txt ? txt : "missing");
		if (f && !cJSON_IsNull(f) && (!it->equals || arm_equals(it->equals, f))) {
			found = true;
			snprintf(res->where, sizeof(res->where), "%s", c->models_url);
			snprintf(res->quote, sizeof(res->quote), "data[%d] (%.150s).%.100s = %.200s", i,
				 cJSON_IsString(id) ? id->valuestring : "?", it->what, txt ? txt : "");
		}
		cJSON_free(txt);
		if (found)
			break;
		i++;
	}
	if (!found)
		snprintf(res->reason, sizeof(res->reason), "%.300s: %s", c->models_url,
			 seen[0] ? seen : "no such model listed");
	arm_conclude(it, res, found, false);
}

/*
 * Which process's environment is evidence: the one that wrote the audit (the
 * engine: on vLLM a child of the API server, on tt-run a rank whose
 * environment is what the launcher forwarded), else the one that printed a
 * guard banner, else the first. 0 with *pid and a note in `why`; -1 when the
 * capture has no process with a pid.
 */
static int arm_evidence_pid(const char *path, long long *pid, const char **why)
{
	struct audit_reader *r = NULL;
	struct status_info si = { 0 };
	struct audit_item ai;
	enum status st;
	long long first = -1, banner = -1, audit = -1;

	if (audit_reader_open(&r, path, NULL, &si))
		return -1;
	while ((st = audit_reader_next(r, &ai, &si)) != STATUS_EOF && audit < 0) {
		const struct jval *v, *rule;

		if (st || !ai.src)
			continue;
		v = jdoc_get(ai.doc, ai.record, "pid");
		if (!v || v->type != JT_INT)
			continue;
		if (!strcmp(ai.src, "start") && first < 0)
			first = v->u.i;
		else if (!strcmp(ai.src, "audit"))
			audit = v->u.i;
		else if (!strcmp(ai.src, "banner") && banner < 0 && (rule = jdoc_get(ai.doc, ai.record, "rule")) &&
			 rule->type == JT_STR && !strncmp(rule->u.s, "arm:", 4))
			banner = v->u.i;
	}
	audit_reader_free(r);
	*pid = audit >= 0 ? audit : banner >= 0 ? banner : first;
	*why = audit >= 0 ? "the process that wrote the audit" : banner >= 0 ?
		"the process that printed the guard banner (no audit record)" :
		"the first process (no audit record, no guard banner)";
	return *pid >= 0 ? 0 : -1;
}

static void arm_eval_env(struct arm_ctx *c, const struct arm_item *it, struct arm_item_result *res)
{
	struct audit_reader *r = NULL;
	struct status_info si = { 0 };
	struct audit_item ai;
	enum status st;
	bool found = false, start = false, unreachable = true;
	long long pid = -1;
	const char *whose = "";

	if (!c->src->capture) {
		snprintf(res->reason, sizeof(res->reason), "no capture given (--capture): the server's "
			 "environment is known only from a capture's start record");
		goto out;
	}
	(void)arm_evidence_pid(c->src->capture, &pid, &whose);
	if (audit_reader_open(&r, c->src->capture, NULL, &si)) {
		snprintf(res->reason, sizeof(res->reason), "%.500s", si.msg);
		goto out;
	}
	while ((st = audit_reader_next(r, &ai, &si)) != STATUS_EOF) {
		const struct jval *env, *v, *p;

		if (st == STATUS_PARSE || st == STATUS_LIMIT)
			continue;
		if (st) {
			snprintf(res->reason, sizeof(res->reason), "%.500s", si.msg);
			goto out;
		}
		if (!ai.src || strcmp(ai.src, "start"))
			continue;
		p = jdoc_get(ai.doc, ai.record, "pid");
		if (pid >= 0 && (!p || p->type != JT_INT || p->u.i != pid))
			continue;
		start = true;
		env = jdoc_get(ai.doc, ai.record, "env");
		if (!env || env->type != JT_OBJ) {
			snprintf(res->reason, sizeof(res->reason), "%s:%ld: start record has no env object",
				 c->src->capture, ai.line);
			goto out;
		}
		unreachable = false;
		v = jdoc_get(ai.doc, env, it->what);
		if (!v) {
			snprintf(res->reason, sizeof(res->reason), "%s:%ld: %s is not in the environment of "
				 "%s", c->src->capture, ai.line, it->what, whose);
		} else if (v->type != JT_STR) {
			snprintf(res->reason, sizeof(res->reason), "%s:%ld: %s is %s, not a string",
				 c->src->capture, ai.line, it->what, jdoc_typename(v));
		} else if (it->equals && strcmp(v->u.s, it->equals->u.s)) {
			snprintf(res->reason, sizeof(res->reason), "%s:%ld: %s=%.200s", c->src->capture,
				 ai.line, it->what, v->u.s);
		} else {
			found = true;
			snprintf(res->where, sizeof(res->where), "%s:%ld", c->src->capture, ai.line);
			snprintf(res->quote, sizeof(res->quote), "%s=%.300s (%s)", it->what, v->u.s, whose);
		}
		break;
	}
	if (!start && pid >= 0)
		snprintf(res->reason, sizeof(res->reason), "%s has no start record of pid %lld (%s)",
			 c->src->capture, pid, whose);
	else if (!start)
		snprintf(res->reason, sizeof(res->reason), "%s has no start record", c->src->capture);
out:
	audit_reader_free(r);
	arm_conclude(it, res, found, unreachable);
}

/* Feeds the MERGE_AUDIT lines of a plain log into t; -1 when unreadable. */
static int arm_audit_log(const char *path, struct tally *t, unsigned long *merges, char *reason,
			 size_t n_reason)
{
	struct event_decoder *dec = event_decoder_new();
	struct jdoc *doc = jdoc_new(ARM_MAX_LINE);
	char *buf = malloc(ARM_MAX_LINE + 1);
	unsigned long lines = 0, bad = 0;
	bool cont = false;
	FILE *f = NULL;
	int rc = -1;

	if (!dec || !doc || !buf) {
		snprintf(reason, n_reason, "out of memory");
		goto out;
	}
	f = fopen(path, "re");
	if (!f) {
		snprintf(reason, n_reason, "%s: %s", path, strerror(errno));
		goto out;
	}
	tally_begin_file(t);
	while (fgets(buf, ARM_MAX_LINE + 1, f)) {
		size_t n = strlen(buf);
		bool whole = n && buf[n - 1] == '\n';
		struct jdoc_check chk = { 0 };
		struct status_info si = { 0 };
		struct event ev;
		char *p;

		if (cont) {
			cont = !whole;
			continue;
		}
		cont = !whole;
		lines++;
		p = strchr(buf, '{');
		if (!p || !whole)
			continue;
		if (jdoc_check(p, (size_t)(buf + n - p), &chk) != 0 || !chk.has_ev)
			continue;
		if (jdoc_parse(doc, p, (size_t)(buf + n - p), &si) ||
		    event_decode(dec, doc, jdoc_root(doc), &ev, &si)) {
			bad++;
			continue;
		}
		if (ev.kind == EVENT_CONFIG) {
			tally_config(t, &ev.u.config);
		} else if (ev.kind == EVENT_MERGE) {
			tally_merge(t, &ev.u.merge, path, (long)lines);
			(*merges)++;
		}
	}
	if (ferror(f)) {
		snprintf(reason, n_reason, "%s: read failed", path);
		goto out;
	}
	if (!*merges)
		snprintf(reason, n_reason, "%s holds no MERGE_AUDIT merge event (%lu lines, %lu malformed "
			 "audit lines)", path, lines, bad);
	rc = 0;
out:
	if (f)
		fclose(f);
	free(buf);
	jdoc_free(doc);
	event_decoder_free(dec);
	return rc;
}

/* Feeds an audit JSONL or capture into t; -1 when unreadable. */
static int arm_audit_file(const char *path, struct tally *t, unsigned long *merges, char *reason,
			  size_t n_reason)
{
	struct audit_reader *r = NULL;
	struct status_info si = { 0 };
	struct audit_item it;
	enum status st;
	int rc = -1;

	if (audit_reader_open(&r, path, NULL, &si)) {
		snprintf(reason, n_reason, "%.500s", si.msg);
		return -1;
	}
	tally_begin_file(t);
	while ((st = audit_reader_next(r, &it, &si)) != STATUS_EOF) {
		if (st == STATUS_PARSE || st == STATUS_LIMIT)
			continue;
		if (st) {
			snprintf(reason, n_reason, "%.500s", si.msg);
			goto out;
		}
		if (!it.has_event)
			continue;
		if (it.event.kind == EVENT_CONFIG) {
			tally_config(t, &it.event.u.config);
		} else if (it.event.kind == EVENT_MERGE) {
			tally_merge(t, &it.event.u.merge, path, it.line);
			(*merges)++;
		}
	}
	if (!*merges)
		snprintf(reason, n_reason, "%s holds no merge event (%llu lines, %llu malformed)", path,
			 (unsigned long long)audit_reader_stats(r)->lines,
			 (unsigned long long)audit_reader_stats(r)->malformed);
	rc = 0;
out:
	audit_reader_free(r);
	return rc;
}

static void arm_rule_names(const struct tally *t, const struct tally_fingerprint *fp, char *buf,
			   size_t n)
{
	size_t i, off = 0;

	buf[0] = '\0';
	for (i = 0; i < fp->n_consistent && off < n; i++)
		off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? ", " : "",
					tally_rule(t, fp->consistent[i])->name);
}

static void arm_eval_audit(struct arm_ctx *c, const struct arm_item *it, struct arm_item_result *res)
{
	struct rule rules[RULE_MAX_LIST];
	struct tally_fingerprint fp;
	const struct tally_counts *tc;
	const char *path = c->src->audit ? c->src->audit : c->src->capture ? c->src->capture :
			   c->src->log;
	struct tally *t = NULL;
	unsigned long merges = 0;
	size_t n, i, named = SIZE_MAX;
	char names[300];
	int rc;

	if (!path) {
		snprintf(res->reason, sizeof(res->reason), "no audit source given (--audit, --capture or "
			 "--log with MERGE_AUDIT lines)");
		arm_conclude(it, res, false, true);
		return;
	}
	n = rule_list_default(rules, RULE_MAX_LIST);
	for (i = 0; i < n; i++)
		if (!strcmp(rules[i].name, it->rule.name))
			named = i;
	if (named == SIZE_MAX && n < RULE_MAX_LIST) {
		rules[n] = it->rule;
		named = n++;
	}
	t = tally_new(rules, n, 0);
	if (!t) {
		snprintf(res->reason, sizeof(res->reason), "out of memory");
		arm_conclude(it, res, false, true);
		return;
	}
	if (path == c->src->log && !c->src->audit && !c->src->capture)
		rc = arm_audit_log(path, t, &merges, res->reason, sizeof(res->reason));
	else
		rc = arm_audit_file(path, t, &merges, res->reason, sizeof(res->reason));
	if (rc < 0 || !merges) {
		arm_conclude(it, res, false, true);
		goto out;
	}
	snprintf(res->where, sizeof(res->where), "%s", path);
	tally_fingerprint(t, &fp);
	tc = tally_counts(t, named);
	arm_rule_names(t, &fp, names, sizeof(names));
	if (fp.verdict == TALLY_CONSISTENT && fp.consistent[0] == named) {
		snprintf(res->quote, sizeof(res->quote), "CONSISTENT: of %zu candidate rules only '%s' "
			 "matches the taken decisions (%llu merge events with taken, %llu evaluated by it)",
			 n, it->rule.name, (unsigned long long)fp.events_with_taken,
			 (unsigned long long)tc->fp_evaluated);
		arm_conclude(it, res, true, false);
		goto out;
	}
	if (tally_not_evaluable(t, named)) {
		snprintf(res->reason, sizeof(res->reason), "rule '%s' is not evaluable on this audit: its "
			 "merge events lack a field it needs", it->rule.name);
	} else if (fp.verdict == TALLY_NO_TAKEN) {
		snprintf(res->reason, sizeof(res->reason), "NO_TAKEN: none of %lu merge events carries "
			 "`taken`, so the decisions cannot be fingerprinted", merges);
	} else if (fp.verdict == TALLY_WITHHELD && tc->fp_mismatch == 0) {
		snprintf(res->reason, sizeof(res->reason), "WITHHELD: %llu merge events are consistent "
			 "with %s; no event separates '%s' from the others",
			 (unsigned long long)fp.events_with_taken, names, it->rule.name);
	} else if (tc->fp_mismatch) {
		snprintf(res->reason, sizeof(res->reason), "%s: the taken decisions contradict '%s' on "
			 "%llu of %llu events (first at step %lld); consistent with: %s",
			 tally_verdict_name(fp.verdict), it->rule.name,
			 (unsigned long long)tc->fp_mismatch, (unsigned long long)tc->fp_evaluated,
			 (long long)tc->fp_first_mismatch_step, names[0] ? names : "no candidate");
	} else {
		snprintf(res->reason, sizeof(res->reason), "%s: consistent with %s, not '%s'",
			 tally_verdict_name(fp.verdict), names[0] ? names : "no candidate", it->rule.name);
	}
	arm_conclude(it, res, false, false);
out:
	tally_free(t);
}

enum status arm_check(const struct arm_spec *s, const char *arm, const struct arm_sources *src,
		      struct arm_result *r, struct status_info *si)
{
	const struct arm_def *a = arm_find(s, arm);
	struct arm_ctx c;
	size_t i;

	memset(r, 0, sizeof(*r));
	if (!a)
		return status_set(si, STATUS_NOTFOUND, "%s: no arm '%s'", s->path, arm);
	memset(&c, 0, sizeof(c));
	c.src = src;
	c.timeout = src->timeout > 0 ? src->timeout : 10;
	snprintf(r->arm, sizeof(r->arm), "%s", arm);
	snprintf(r->spec, sizeof(r->spec), "%s", s->path);
	r->spec_line = a->line;
	r->confirmed = true;
	for (i = 0; i < a->n_items; i++) {
		const struct arm_item *it = &a->items[i];
		struct arm_item_result *res = &r->items[r->n_items++];

		res->forbid = it->forbid;
		res->kind = it->kind;
		snprintf(res->what, sizeof(res->what), "%s", it->label);
		switch (it->kind) {
		case ARM_LOG: arm_eval_log(&c, it, res); break;
		case ARM_METRICS: arm_eval_metrics(&c, it, res); break;
		case ARM_MODELS: arm_eval_models(&c, it, res); break;
		case ARM_ENV: arm_eval_env(&c, it, res); break;
		case ARM_AUDIT: arm_eval_audit(&c, it, res); break;
		}
		if (res->verdict != ARM_MET && res->verdict != ARM_CLEAR)
			r->confirmed = false;
	}
	http_response_release(&c.metrics);
	prom_free(c.prom);
	cJSON_Delete(c.models);
	return STATUS_OK;
}

void arm_result_print(const struct arm_result *r, FILE *f)
{
	size_t i, bad = 0;

	fprintf(f, "arm '%s' (%s:%ld)\n", r->arm, r->spec, r->spec_line);
	for (i = 0; i < r->n_items; i++) {
		const struct arm_item_result *it = &r->items[i];

		fprintf(f, "  %-8s %-18s %s\n", it->forbid ? "forbids" : "requires",
			arm_verdict_name(it->verdict), it->what);
		if (it->where[0] || it->quote[0])
			fprintf(f, "           %s%s%s\n", it->where, it->where[0] && it->quote[0] ? ": " : "",
				it->quote);
		if (it->reason[0])
			fprintf(f, "           %s\n", it->reason);
		if (it->verdict != ARM_MET && it->verdict != ARM_CLEAR)
			bad++;
	}
	if (r->confirmed)
		fprintf(f, "arm '%s': CONFIRMED (%zu of %zu items)\n", r->arm, r->n_items, r->n_items);
	else
		fprintf(f, "arm '%s': FAIL (%zu of %zu items not satisfied)\n", r->arm, bad, r->n_items);
}

char *arm_result_json(const struct arm_result *r)
{
	cJSON *root = cJSON_CreateObject(), *arr, *o;
	char *out;
	size_t i;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "arm", r->arm);
	cJSON_AddStringToObject(root, "spec", r->spec);
	cJSON_AddNumberToObject(root, "spec_line", (double)r->spec_line);
	cJSON_AddStringToObject(root, "verdict", r->confirmed ? "CONFIRMED" : "FAIL");
	arr = cJSON_AddArrayToObject(root, "items");
	for (i = 0; arr && i < r->n_items; i++) {
		const struct arm_item_result *it = &r->items[i];

		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			break;
		}
		cJSON_AddStringToObject(o, "list", it->forbid ? "forbids" : "requires");
		cJSON_AddStringToObject(o, "kind", arm_kind_name(it->kind));
		cJSON_AddStringToObject(o, "evidence", it->what);
		cJSON_AddStringToObject(o, "verdict", arm_verdict_name(it->verdict));
		cJSON_AddStringToObject(o, "where", it->where);
		cJSON_AddStringToObject(o, "quote", it->quote);
		cJSON_AddStringToObject(o, "reason", it->reason);
	}
	out = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	return out;
}
