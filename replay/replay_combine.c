/*
 * replay_combine.c - `ttaudit combine`: replay --json reports of disjoint
 * parts of a corpus read back and added up into the replay of the whole.
 */
#include "replay/replay_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/jdoc.h"
#include "base/jsonw.h"
#include "base/rate.h"

/* --- reports added up (ttaudit combine) ------------------------------------- */

/* Reports larger than this are refused (65536 process rows of 32 rules fit). */
#define REPLAY_REPORT_MAX (1024u * 1024u * 1024u)

static enum status report_load(const char *path, struct jdoc **doc, struct status_info *si)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	char *buf = NULL;
	size_t n = 0, cap = 0;
	enum status st = STATUS_OK;

	*doc = NULL;
	if (!f)
		return status_set_at(si, STATUS_IO, path, 0, 0, "cannot open: %s", strerror(errno));
	for (;;) {
		size_t k;
		if (n == cap) {
			if (n >= (size_t)REPLAY_REPORT_MAX + 1) {
				st = status_set_at(si, STATUS_LIMIT, path, 0, 0, "larger than 1 GiB");
				goto out;
			}
			if (ALLOC_GROW_MAX(buf, n + 1, cap, (size_t)REPLAY_REPORT_MAX + 1) < 0) {
				st = status_set_at(si, STATUS_NOMEM, path, 0, 0, "out of memory");
				goto out;
			}
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	if (ferror(f)) {
		st = status_set_at(si, STATUS_IO, path, 0, 0, "cannot read: %s", strerror(errno));
		goto out;
	}
	if (!(*doc = jdoc_new(n + 1))) {
		st = status_set_at(si, STATUS_NOMEM, path, 0, 0, "out of memory");
		goto out;
	}
	if ((st = jdoc_parse(*doc, buf, n, si))) {
		if (si)
			snprintf(si->file, sizeof(si->file), "%s", path);
		jdoc_free(*doc);
		*doc = NULL;
		goto out;
	}
	if (jdoc_root(*doc)->type != JT_OBJ || !jdoc_get(*doc, jdoc_root(*doc), "rules")) {
		st = status_set_at(si, STATUS_PARSE, path, 0, 0, "not a `ttaudit replay --json` report");
		jdoc_free(*doc);
		*doc = NULL;
	}
out:
	if (f != stdin)
		fclose(f);
	free(buf);
	return st;
}

/* The unsigned integer at key of obj; -1 with si set when absent or not one. */
static int report_uint(const struct jdoc *d, const struct jval *obj, const char *key, uint64_t *out,
		       const char *path, struct status_info *si)
{
	const struct jval *v = obj ? jdoc_get(d, obj, key) : NULL;

	if (!v || v->type != JT_INT || v->u.i < 0) {
		status_set_at(si, STATUS_PARSE, path, 0, v ? (long)v->off + 1 : 0,
			      "\"%s\" is not a count (%s)", key, jdoc_typename(v));
		return -1;
	}
	*out = (uint64_t)v->u.i;
	return 0;
}

static int report_counts(const struct jdoc *d, const struct jval *c, struct tally_counts *out,
			 const char *path, struct status_info *si)
{
	static const char *const names[] = { "merges", "taken", "substitutions",
		"merges_with_substitution", "unverified",
		"prevented", "forgone", "rejected_unverified", "fired", "skipped", "shape_fallback",
		"bare_taken" };
	uint64_t *const vars[] = { &out->merges, &out->taken, &out->substitutions,
		&out->merges_subst, &out->unverified,
		&out->prevented, &out->forgone, &out->rejected_unverified, &out->fired, &out->skipped,
		&out->shape_fallback, &out->bare_taken };
	const struct jval *ev = jdoc_get(d, c, "evidence"), *fp = jdoc_get(d, c, "fingerprint"), *v;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->fp_first_mismatch_step = -1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (report_uint(d, c, names[i], vars[i], path, si))
			return -1;
	for (i = 0; i < EVIDENCE__COUNT; i++) {
		const char *e = evidence_name((enum evidence)i);
		if (report_uint(d, ev ? jdoc_get(d, ev, "taken") : NULL, e, &out->taken_by[i], path, si))
			return -1;
		if (i && report_uint(d, ev ? jdoc_get(d, ev, "substitutions") : NULL, e, &out->subst_by[i],
				     path, si))
			return -1;
	}
	if (report_uint(d, fp, "evaluated", &out->fp_evaluated, path, si) ||
	    report_uint(d, fp, "mismatched", &out->fp_mismatch, path, si))
		return -1;
	v = jdoc_get(d, fp, "first_mismatch_step");
	if (v && v->type == JT_INT)
		out->fp_first_mismatch_step = v->u.i;
	return 0;
}

/* Reads a report's rules (names and order); the counts are rule by rule in that order. */
static int report_rules(const struct jdoc *d, struct rule *rules, size_t *n, const char *path,
			struct status_info *si)
{
	const struct jval *v;

	*n = 0;
	for (v = jdoc_kid(d, jdoc_get(d, jdoc_root(d), "rules")); v; v = jdoc_next(d, v)) {
		if (*n == RULE_MAX_LIST) {
			status_set_at(si, STATUS_LIMIT, path, 0, 0, "more than %d rules", RULE_MAX_LIST);
			return -1;
		}
		if (rule_parse_len(v->key, v->keylen, &rules[*n], si)) {
			if (si)
				snprintf(si->file, sizeof(si->file), "%s", path);
			return -1;
		}
		(*n)++;
	}
	if (!*n) {
		status_set_at(si, STATUS_PARSE, path, 0, 0, "the report names no rule");
		return -1;
	}
	return 0;
}

enum status replay_new_from_report(struct replay **out, const char *path, struct status_info *si)
{
	struct rule rules[RULE_MAX_LIST];
	struct replay_opts o;
	struct jdoc *d;
	enum status st;

	*out = NULL;
	if ((st = report_load(path, &d, si)))
		return st;
	memset(&o, 0, sizeof(o));
	if (report_rules(d, rules, &o.n_rules, path, si)) {
		jdoc_free(d);
		return STATUS_PARSE;
	}
	jdoc_free(d);
	o.rules = rules;
	*out = replay_new(&o);
	return *out ? STATUS_OK : status_set(si, STATUS_NOMEM, "out of memory");
}

/* The file row of path (the report's name for it), added when new. */
static size_t report_file(struct replay *r, const char *path, size_t first)
{
	size_t i;

	for (i = first; i < r->n_files; i++)
		if (!strcmp(r->files[i].path, path))
			return i;
	return replay_new_row(r, path) ? r->n_files - 1 : SIZE_MAX;
}

static const char *report_str(const struct jdoc *d, const struct jval *obj, const char *key)
{
	const struct jval *v = jdoc_get(d, obj, key);

	return v && v->type == JT_STR ? v->u.s : NULL;
}

enum status replay_add_report(struct replay *r, const char *path, struct status_info *si)
{
	struct rule rules[RULE_MAX_LIST];
	struct tally_counts counts[RULE_MAX_LIST];
	struct tally_garbage g;
	struct jdoc *d;
	const struct jval *root, *v, *in, *x;
	uint64_t ewt = 0, files = 0, u;
	size_t n, i, first = r->n_files;
	enum status st;

	if ((st = report_load(path, &d, si)))
		return st;
	root = jdoc_root(d);
	st = STATUS_PARSE;
	if (report_rules(d, rules, &n, path, si))
		goto out;
	if (n != r->opts.n_rules) {
		status_set_at(si, STATUS_USAGE, path, 0, 0, "%zu rules, the first report has %zu: replay "
			      "every part with the same --rules", n, r->opts.n_rules);
		st = STATUS_USAGE;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (strcmp(rules[i].name, r->rules[i].name)) {
			status_set_at(si, STATUS_USAGE, path, 0, 0, "rule %zu is %s, the first report's is "
				      "%s: replay every part with the same --rules", i + 1, rules[i].name,
				      r->rules[i].name);
			st = STATUS_USAGE;
			goto out;
		}
	for (i = 0, v = jdoc_kid(d, jdoc_get(d, root, "rules")); v; v = jdoc_next(d, v), i++)
		if (report_counts(d, v, &counts[i], path, si))
			goto out;
	memset(&g, 0, sizeof(g));
	x = jdoc_get(d, root, "garbage");
	if (report_uint(d, x, "count", &g.count, path, si) ||
	    report_uint(d, x, "float32_like", &g.float32_like, path, si) ||
	    report_uint(d, x, "values_dropped", &g.values_dropped, path, si))
		goto out;
	for (v = jdoc_kid(d, jdoc_get(d, x, "values")); v; v = jdoc_next(d, v)) {
		const struct jval *val = jdoc_get(d, v, "value");
		if (!val || val->type != JT_INT || report_uint(d, v, "count", &u, path, si))
			goto out;
		if (g.n_values < TALLY_GARBAGE_VALUES) {
			g.values[g.n_values].value = val->u.i;
			g.values[g.n_values++].n = u;
		} else {
			g.values_dropped += u;
		}
	}
	if (report_uint(d, jdoc_get(d, root, "fingerprint"), "events_with_taken", &ewt, path, si) ||
	    report_uint(d, root, "malformed", &u, path, si))
		goto out;
	r->malformed += u;
	x = jdoc_get(d, root, "gate");
	{
		struct replay_gate gt;
		if (report_uint(d, x, "events", &gt.events, path, si) ||
		    report_uint(d, x, "refused", &gt.refused, path, si) ||
		    report_uint(d, x, "forced", &gt.forced, path, si))
			goto out;
		replay_gate_add(&r->gate, &gt);
	}
	tally_absorb_counts(r->total, counts, n, &g, ewt);
	in = jdoc_get(d, root, "input");
	{
		struct audit_reader_stats s;
		static const char *const names[] = { "lines", "events", "other_events", "ignored",
			"capture_records", "capture_lost", "capture_uncertain", "uncertain_events",
			"partial", "invalid_utf8", "bytes", "log_audit_lines", "other_lines" };
		uint64_t *const vars[] = { &s.lines, &s.events, &s.other_events, &s.ignored,
			&s.capture_records, &s.capture_lost, &s.capture_uncertain, &s.uncertain_events,
			&s.partial, &s.invalid_utf8, &s.bytes, &s.log_audit_lines, &s.other_lines };
		memset(&s, 0, sizeof(s));
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (report_uint(d, in, names[i], vars[i], path, si))
				goto out;
		replay_stats_add(&r->stats, &s);
		if (report_uint(d, in, "files", &files, path, si) || report_uint(d, in, "bom", &u, path, si))
			goto out;
		r->n_bom += u;
		if (report_uint(d, in, "events_beyond_process_cap", &u, path, si))
			goto out;
		r->procs_dropped += u;
		if (report_uint(d, in, "signals_dropped", &u, path, si))
			goto out;
		r->ends_dropped += u;
		if (report_uint(d, root, "processes_dropped", &u, path, si))
			goto out;
		r->rows_dropped += u;
	}
	st = STATUS_NOMEM;
	/* the files the report names, then unnamed rows up to its file count */
	for (v = jdoc_kid(d, jdoc_get(d, in, "unreadable")); v; v = jdoc_next(d, v))
		if (v->type == JT_STR && (i = report_file(r, v->u.s, first)) != SIZE_MAX) {
			r->files[i].unreadable = true;
			r->n_unreadable++;
		}
	for (v = jdoc_kid(d, jdoc_get(d, in, "no_audit")); v; v = jdoc_next(d, v))
		if (v->type == JT_STR && (i = report_file(r, v->u.s, first)) != SIZE_MAX) {
			r->files[i].no_audit = true;
			r->n_no_audit++;
		}
	for (v = jdoc_kid(d, jdoc_get(d, in, "truncated")); v; v = jdoc_next(d, v)) {
		const char *p = report_str(d, v, "file");
		if (p && (i = report_file(r, p, first)) != SIZE_MAX) {
			r->files[i].truncated = true;
			report_uint(d, v, "lines", &r->files[i].stats.lines, path, NULL);
			r->n_truncated++;
		}
	}
	for (v = jdoc_kid(d, jdoc_get(d, in, "duplicates")); v; v = jdoc_next(d, v)) {
		const char *p = report_str(d, v, "file"), *same = report_str(d, v, "same_as");
		const char *by = report_str(d, v, "by");
		size_t j;
		if (!p || !same || (j = report_file(r, same, first)) == SIZE_MAX ||
		    (i = report_file(r, p, first)) == SIZE_MAX)
			continue;
		r->files[i].dup = by && !strcmp(by, "inode") ? REPLAY_DUP_INODE : REPLAY_DUP_CONTENT;
		r->files[i].dup_of = j;
		r->n_dups++;
	}
	for (v = jdoc_kid(d, jdoc_get(d, in, "signals")); v; v = jdoc_next(d, v)) {
		const char *p = report_str(d, v, "file"), *by = report_str(d, v, "by");
		const struct jval *pid = jdoc_get(d, v, "pid"), *sig = jdoc_get(d, v, "signal");
		if (!p || !pid || pid->type != JT_INT || !sig || sig->type != JT_INT ||
		    (i = report_file(r, p, first)) == SIZE_MAX)
			continue;
		if (r->n_ends == REPLAY_ENDS_SHOWN) {
			r->ends_dropped++;
			continue;
		}
		memset(&r->ends[r->n_ends], 0, sizeof(r->ends[0]));
		r->ends[r->n_ends].file = i;
		r->ends[r->n_ends].pid = pid->u.i;
		r->ends[r->n_ends].signal = sig->u.i;
		if (by)
			snprintf(r->ends[r->n_ends].by, sizeof(r->ends[0].by), "%s", by);
		r->n_ends++;
	}
	for (v = jdoc_kid(d, jdoc_get(d, root, "processes")); v; v = jdoc_next(d, v)) {
		const char *p = report_str(d, v, "file");
		const struct jval *k, *x2;
		struct replay_proc_row *row;
		struct tally_counts *c;
		size_t j;

		if (!p || (i = report_file(r, p, first)) == SIZE_MAX)
			goto out;
		if (ALLOC_GROW_MAX(r->rows, r->n_rows + 1, r->cap_rows, (size_t)REPLAY_ROWS_MAX) < 0) {
			r->rows_dropped++;
			continue;
		}
		if (!(c = calloc(n, sizeof(*c))))
			goto out;
		row = &r->rows[r->n_rows];
		memset(row, 0, sizeof(*row));
		row->file = i;
		row->counts = c;
		r->n_rows++;
		r->files[i].n_procs++;
		for (j = 0, k = jdoc_kid(d, jdoc_get(d, v, "rules")); k && j < n; k = jdoc_next(d, k), j++)
			if (report_counts(d, k, &c[j], path, si)) {
				st = STATUS_PARSE;
				goto out;
			}
		x2 = jdoc_get(d, v, "pid");
		if ((row->has_pid = x2 && x2->type == JT_INT))
			row->pid = x2->u.i;
		x2 = jdoc_get(d, v, "rank");
		if ((row->has_rank = x2 && x2->type == JT_INT))
			row->rank = x2->u.i;
		x2 = jdoc_get(d, v, "dp");
		if ((row->has_dp = x2 && x2->type == JT_INT))
			row->dp = x2->u.i;
		x2 = jdoc_get(d, v, "garbage");
		report_uint(d, x2, "count", &row->garbage, path, NULL);
		report_uint(d, x2, "float32_like", &row->float32_like, path, NULL);
		report_uint(d, jdoc_get(d, v, "fingerprint"), "events_with_taken", &row->events_with_taken,
			    path, NULL);
		x2 = jdoc_get(d, v, "gate");
		report_uint(d, x2, "events", &row->gate.events, path, NULL);
		report_uint(d, x2, "refused", &row->gate.refused, path, NULL);
		report_uint(d, x2, "forced", &row->gate.forced, path, NULL);
	}
	while (r->n_files - first < files)
		if (!replay_new_row(r, ""))
			goto out;
	st = STATUS_OK;
out:
	if (st == STATUS_NOMEM && si && !si->msg[0])
		status_set_at(si, st, path, 0, 0, "out of memory");
	jdoc_free(d);
	return st;
}
