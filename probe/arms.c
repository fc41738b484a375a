/*
 * arms.c - confirming an arm from the server's own output (arms.h): each
 * evidence item of a spec (armspec.c) judged against its source, failing
 * closed.
 */
#include "probe/armspec_priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/event.h"
#include "probe/http.h"
#include "probe/models.h"
#include "probe/prom.h"
#include "analyzer/reader.h"
#include "analyzer/tally.h"
#include "base/jsonw.h"

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
	struct models *models;        /* GET /v1/models (models.h) */
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
 * What a start record says of how its capture was made ("capture":
 * caprec_mode): whether it kept every line, and whether its rules hold
 * `want` (a rule name, or a prefix ending in '*'). 0 when it does not say.
 */
static int arm_capture_mode(const struct jdoc *d, const struct jval *start, const char *want,
			    bool *all_lines, bool *has_rule)
{
	const struct jval *m = jdoc_get(d, start, "capture"), *v, *k;

	if (!m || m->type != JT_OBJ)
		return 0;
	v = jdoc_get(d, m, "all_lines");
	*all_lines = v && v->type == JT_TRUE;
	*has_rule = false;
	v = jdoc_get(d, m, "rules");
	if (want && v && v->type == JT_ARR)
		for (k = jdoc_kid(d, v); k; k = jdoc_next(d, k))
			if (k->type == JT_STR && strlen(k->u.s) == k->n && arm_rule_is(want, k->u.s))
				*has_rule = true;
	return 1;
}

/*
 * Scans a capture's banner and line records for re; -1 when unreadable or
 * empty. *blind is set when the capture could not have recorded the line.
 * Its start records say how it was made: with --all-lines every line is
 * there; without, only the lines its banner rules matched, so an item that
 * names no rule, or a rule the capture did not have, is blind. With a rule
 * the capture had, only that rule's banner records are looked at. A capture
 * whose start records do not say (made before they did) is judged by its
 * records: taken without --all-lines when it has no `line` record and its
 * processes saw more lines than it recorded, and a named rule is taken as
 * one it had.
 */
static int arm_scan_capture(const char *path, const struct arm_item *ai, struct arm_item_result *res,
			    bool *found, bool *blind, char *reason, size_t n_reason)
{
	pcre2_match_data *md = pcre2_match_data_create_from_pattern(ai->re, NULL);
	struct audit_reader *r = NULL;
	struct status_info si = { 0 };
	struct audit_item it;
	unsigned long texts = 0, n_line = 0, recorded = 0, seen = 0, ends = 0;
	unsigned long modes = 0, all_modes = 0, rule_modes = 0;
	char any_where[sizeof(res->where)] = "", any_quote[sizeof(res->quote)] = "";
	bool found_any = false, in_rule = false;
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
		if (!strcmp(it.src, "start")) {
			bool all = false, has = false;
			if (arm_capture_mode(it.doc, it.record, ai->banner_rule, &all, &has)) {
				modes++;
				all_modes += all;
				rule_modes += has;
			}
			continue;
		}
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
		/* any banner or line, for a rule the capture did not have (in its `line` records then) */
		if (ai->banner_rule && !found_any && pcre2_match(ai->re, (PCRE2_SPTR)text->u.s, text->n, 0, 0, md, NULL) >= 0) {
			found_any = true;
			snprintf(any_where, sizeof(any_where), "%s:%ld", path, it.line);
			arm_excerpt(text->u.s, text->n, any_quote, sizeof(any_quote));
		}
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
	/* a rule's banners are all its lines only where every process had the rule */
	in_rule = ai->banner_rule && (!modes || rule_modes == modes);
	if (!*found && found_any && !in_rule) {
		*found = true;
		memcpy(res->where, any_where, sizeof(any_where));
		memcpy(res->quote, any_quote, sizeof(any_quote));
	}
	if (!*found && audit_reader_stats(r)->lines - audit_reader_stats(r)->blank == 0) {
		snprintf(reason, n_reason, "%s is empty", path);
		goto out;
	}
	if (*found) {
		/* nothing to say */
	} else if (modes && all_modes == modes) {
		snprintf(reason, n_reason, "not in %s (%lu banner/line records; captured with --all-lines)", path,
			 texts);
	} else if (modes && ai->banner_rule && !in_rule) {
		*blind = true;
		snprintf(reason, n_reason, "%s was captured without --all-lines and with banner rules that do "
			 "not include '%s' (%lu of %lu processes had it): a line matching this pattern could "
			 "not have been recorded; capture with --all-lines or with rules that name it, or give --log",
			 path, ai->banner_rule, rule_modes, modes);
	} else if (modes && !ai->banner_rule) {
		*blind = true;
		snprintf(reason, n_reason, "%s recorded only the lines its banner rules matched (captured "
			 "without --all-lines, as its start records say): a line matching this pattern could "
			 "not have been recorded; capture with --all-lines, give --log, or name the banner rule "
			 "that records it (\"rule\")", path);
	} else if (!modes && !ai->banner_rule && !n_line && (!ends || seen > recorded)) {
		*blind = true;
		snprintf(reason, n_reason, "%s recorded only the lines its banner rules matched (taken "
			 "without --all-lines; %lu lines seen, %lu recorded): a line matching this pattern "
			 "could not have been recorded; capture with --all-lines, give --log, or name the "
			 "banner rule that records it (\"rule\")", path, seen, recorded);
	} else {
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
	struct http_response res = { 0 };
	struct status_info si = { 0 };
	int rc;

	if (c->models_state)
		return c->models_state;
	c->models_state = -1;
	rc = arm_get(c, "/v1/models", c->models_url, sizeof(c->models_url), &res, c->models_err,
		     sizeof(c->models_err));
	if (!rc && models_parse(res.body, res.n_body, &c->models, &si)) {
		snprintf(c->models_err, sizeof(c->models_err), "%.300s: %.200s", c->models_url, si.msg);
		rc = -1;
	} else if (!rc && !models_count(c->models)) {
		snprintf(c->models_err, sizeof(c->models_err), "%.300s lists no model", c->models_url);
		rc = -1;
	}
	http_response_release(&res);
	if (!rc)
		c->models_state = 1;
	return c->models_state;
}

/* The integer a real stands for exactly, when it is one within int64. */
static bool arm_real_int(double d, int64_t *out)
{
	if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != (double)(int64_t)d)
		return false;
	*out = (int64_t)d;
	return true;
}

/* Exact: integers as int64 (a model length of 2^53 + 1 is not 2^53), strings by their bytes. */
static bool arm_equals(const struct jval *want, const struct jval *got)
{
	int64_t k;

	if (want->type == JT_REAL && got->type == JT_INT)
		return arm_real_int(want->u.d, &k) && k == got->u.i;
	if (want->type == JT_INT && got->type == JT_REAL)
		return !got->int_overflow && arm_real_int(got->u.d, &k) && k == want->u.i;
	if (want->type != got->type)
		return false;
	switch (want->type) {
	case JT_INT: return got->u.i == want->u.i;
	case JT_REAL: return got->u.d == want->u.d;
	case JT_STR: return got->n == want->n && !memcmp(got->u.s, want->u.s, want->n);
	case JT_TRUE: case JT_FALSE: case JT_NULL: return true;
	default: return false;
	}
}

static void arm_eval_models(struct arm_ctx *c, const struct arm_item *it, struct arm_item_result *res)
{
	char seen[300] = "", txt[200];
	bool found = false;
	size_t i;

	if (arm_fetch_models(c) < 0) {
		snprintf(res->reason, sizeof(res->reason), "%s", c->models_err);
		arm_conclude(it, res, false, true);
		return;
	}
	for (i = 0; i < models_count(c->models); i++) {
		const struct jval *id = models_field(c->models, i, "id");
		const struct jval *f = models_field(c->models, i, it->what);

		if (it->model && !jdoc_str_is(id, it->model, strlen(it->model)))
			continue;
		if (f)
			arm_value_text(f, txt, sizeof(txt));
		if (!seen[0])
			snprintf(seen, sizeof(seen), "data[%zu].%.100s is %.150s", i, it->what,
				 f ? txt : "missing");
		if (f && f->type != JT_NULL && (!it->equals || arm_equals(it->equals, f))) {
			found = true;
			snprintf(res->where, sizeof(res->where), "%s", c->models_url);
			snprintf(res->quote, sizeof(res->quote), "data[%zu] (%.150s).%.100s = %.200s", i,
				 models_id(c->models, i) ? models_id(c->models, i) : "?", it->what, txt);
			break;
		}
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

/*
 * Feeds the audit events of a file into t: an audit JSONL, a capture, or a
 * plain log whose audit lines follow a log prefix (audit_reader reads all
 * three alike); -1 when unreadable.
 */
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
	const struct arm_def *a = arm_spec_find(s, arm);
	struct arm_ctx c;
	enum status st;
	size_t i;

	memset(r, 0, sizeof(*r));
	if (!a)
		return status_set(si, STATUS_NOTFOUND, "%s: no arm '%s'", s->path, arm);
	/* an item whose server cannot be read fails as unreachable: a missing
	 * libcurl is said as what it is, before any item is judged */
	for (i = 0; i < a->n_items; i++)
		if (a->items[i].kind == ARM_METRICS || a->items[i].kind == ARM_MODELS)
			break;
	if (src->url && i < a->n_items && (st = http_init(si)))
		return st;
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
	models_free(c.models);
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
	struct jsonw w;
	struct jsonw_mem m;
	size_t i;

	if (jsonw_mem_begin(&w, &m))
		return NULL;
	jsonw_obj(&w);
	jsonw_kstr(&w, "arm", r->arm);
	jsonw_kstr(&w, "spec", r->spec);
	jsonw_kint(&w, "spec_line", r->spec_line);
	jsonw_kstr(&w, "verdict", r->confirmed ? "CONFIRMED" : "FAIL");
	jsonw_key(&w, "items");
	jsonw_arr(&w);
	for (i = 0; i < r->n_items; i++) {
		const struct arm_item_result *it = &r->items[i];

		jsonw_obj(&w);
		jsonw_kstr(&w, "list", it->forbid ? "forbids" : "requires");
		jsonw_kstr(&w, "kind", arm_kind_name(it->kind));
		jsonw_kstr(&w, "evidence", it->what);
		jsonw_kstr(&w, "verdict", arm_verdict_name(it->verdict));
		jsonw_kstr(&w, "where", it->where);
		jsonw_kstr(&w, "quote", it->quote);
		jsonw_kstr(&w, "reason", it->reason);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	return jsonw_mem_end(&w, &m);
}
