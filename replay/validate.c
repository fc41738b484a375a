/*
 * validate.c - the deployment gate over a replay's per-file counts.
 */
#include "replay/validate.h"

#include <inttypes.h>

#include "base/jsonw.h"
#include "base/rate.h"

/* The confidence of the rates said (the convention of base/rate.h). */
#define VALIDATE_CONFIDENCE 0.95

const char *validate_verdict_name(enum validate_file_verdict v)
{
	switch (v) {
	case VALIDATE_PASS: return "pass";
	case VALIDATE_SUBSTITUTION: return "substitution";
	case VALIDATE_NOT_EVALUABLE: return "not-evaluable";
	case VALIDATE_UNREADABLE: return "unreadable";
	case VALIDATE_MALFORMED: return "malformed";
	case VALIDATE_TOO_COSTLY: return "too-costly";
	case VALIDATE_TRUNCATED: return "truncated";
	case VALIDATE_DUPLICATE: return "duplicate";
	}
	return "?";
}

static double forgone_pct(const struct tally_counts *c)
{
	return c->bare_taken ? 100.0 * (double)c->forgone / (double)c->bare_taken : 0.0;
}

enum validate_file_verdict validate_file(const struct replay_file *f, size_t rule,
					 const struct validate_opts *o)
{
	static const struct tally_counts none;
	const struct tally_counts *c = f->counts ? &f->counts[rule] : &none;

	if (f->dup)
		return VALIDATE_DUPLICATE;
	if (f->unreadable)
		return VALIDATE_UNREADABLE;
	if (c->substitutions)
		return VALIDATE_SUBSTITUTION;
	if (f->truncated)
		return VALIDATE_TRUNCATED;
	if (!tally_n_evaluated(c))
		return f->malformed && !c->merges ? VALIDATE_MALFORMED : VALIDATE_NOT_EVALUABLE;
	if (o->max_forgone_pct >= 0 && forgone_pct(c) > o->max_forgone_pct)
		return VALIDATE_TOO_COSTLY;
	return VALIDATE_PASS;
}

int validate_report(const struct replay *r, size_t rule, const struct validate_opts *o,
		    bool json, FILE *out)
{
	const struct tally *t = replay_tally(r);
	const char *name = tally_rule(t, rule)->name;
	const struct tally_counts *tc = tally_counts(t, rule);
	size_t i, k, failed = 0;
	struct jsonw w;
	char a[128], b[128];

	for (i = 0; i < replay_n_files(r); i++) {
		enum validate_file_verdict v = validate_file(replay_file_at(r, i), rule, o);
		failed += v != VALIDATE_PASS && v != VALIDATE_DUPLICATE;
	}
	if (!replay_n_files(r))
		failed = 1;
	if (json) {
		jsonw_init(&w, out);
		jsonw_obj(&w);
		jsonw_kstr(&w, "rule", name);
		jsonw_kstr(&w, "verdict", failed ? "FAIL" : "PASS");
		jsonw_kuint(&w, "files", replay_n_files(r));
		jsonw_kuint(&w, "files_failed", failed);
		jsonw_kuint(&w, "merges", tc->merges);
		jsonw_kuint(&w, "substitutions", tc->substitutions);
		jsonw_kuint(&w, "prevented", tc->prevented);
		jsonw_kuint(&w, "forgone", tc->forgone);
		jsonw_kdouble(&w, "forgone_pct", forgone_pct(tc));
		jsonw_key(&w, "forgone_rate");
		rate_json(&w, tc->forgone, tc->bare_taken, VALIDATE_CONFIDENCE);
		jsonw_kuint(&w, "fired", tc->fired);
		jsonw_key(&w, "fired_rate");
		rate_json(&w, tc->fired, tally_n_evaluated(tc), VALIDATE_CONFIDENCE);
		jsonw_kuint(&w, "merges_with_substitution", tc->merges_subst);
		jsonw_key(&w, "substitution_rate");
		rate_json(&w, tc->merges_subst, tally_n_evaluated(tc), VALIDATE_CONFIDENCE);
		jsonw_kuint(&w, "unverified", tc->unverified);
		jsonw_kuint(&w, "malformed", replay_malformed(r));
		jsonw_key(&w, "per_file");
		jsonw_arr(&w);
	} else {
		fprintf(out, "rule %s over %zu file%s: %s\n", name, replay_n_files(r),
			replay_n_files(r) == 1 ? "" : "s", failed ? "FAIL" : "PASS");
	}
	for (i = 0; i < replay_n_files(r); i++) {
		const struct replay_file *f = replay_file_at(r, i);
		static const struct tally_counts none;
		const struct tally_counts *c = f->counts ? &f->counts[rule] : &none;
		enum validate_file_verdict v = validate_file(f, rule, o);
		if (json) {
			jsonw_obj(&w);
			jsonw_kstr(&w, "file", f->path);
			jsonw_kstr(&w, "verdict", validate_verdict_name(v));
			jsonw_kuint(&w, "merges", c->merges);
			jsonw_kuint(&w, "skipped", c->skipped);
			jsonw_kuint(&w, "substitutions", c->substitutions);
			jsonw_kuint(&w, "forgone", c->forgone);
			jsonw_kdouble(&w, "forgone_pct", forgone_pct(c));
			jsonw_kuint(&w, "fired", c->fired);
			jsonw_kuint(&w, "malformed", f->malformed);
			if (v == VALIDATE_NOT_EVALUABLE)
				jsonw_kstr(&w, "why", replay_not_evaluable_why(r, f, rule));
			if (v == VALIDATE_DUPLICATE)
				jsonw_kstr(&w, "same_as", replay_file_at(r, f->dup_of)->path);
			if (v == VALIDATE_TRUNCATED)
				jsonw_kuint(&w, "lines_read", f->stats.lines);
			jsonw_key(&w, "substitution_sites");
			jsonw_arr(&w);
			for (k = 0; k < f->n_sites; k++) {
				jsonw_obj(&w);
				jsonw_kint(&w, "line", f->sites[k].line);
				jsonw_kint(&w, "step", f->sites[k].step);
				jsonw_kuint(&w, "slot", f->sites[k].slot);
				jsonw_kstr(&w, "evidence", evidence_name(f->sites[k].evidence));
				jsonw_obj_end(&w);
			}
			jsonw_arr_end(&w);
			jsonw_kuint(&w, "sites_dropped", f->sites_dropped);
			jsonw_obj_end(&w);
			continue;
		}
		switch (v) {
		case VALIDATE_PASS:
			fprintf(out, "  %s: pass (%" PRIu64 " merges)\n", f->path, c->merges);
			break;
		case VALIDATE_SUBSTITUTION:
			fprintf(out, "  %s: %" PRIu64 " substitution%s let through\n", f->path,
				c->substitutions, c->substitutions == 1 ? "" : "s");
			for (k = 0; k < f->n_sites; k++)
				fprintf(out, "    %s:%ld: step %" PRId64 " slot %u (evidence %s)\n", f->path,
					f->sites[k].line, f->sites[k].step, f->sites[k].slot,
					evidence_name(f->sites[k].evidence));
			if (f->sites_dropped)
				fprintf(out, "    ... and %" PRIu64 " more\n", f->sites_dropped);
			break;
		case VALIDATE_NOT_EVALUABLE:
			if (c->merges && c->shape_fallback < c->merges)
				fprintf(out, "  %s: not evaluable: the rule was skipped on every merge event "
					"(%s)\n", f->path, replay_not_evaluable_why(r, f, rule));
			else
				fprintf(out, "  %s: not evaluable: %s\n", f->path,
					replay_not_evaluable_why(r, f, rule));
			break;
		case VALIDATE_TRUNCATED:
			fprintf(out, "  %s: truncated gzip after %" PRIu64 " lines: the file was not all "
				"read\n", f->path, f->stats.lines);
			break;
		case VALIDATE_DUPLICATE:
			fprintf(out, "  %s: the same %s as %s: counted once\n", f->path,
				f->dup == REPLAY_DUP_INODE ? "file" : "content",
				replay_file_at(r, f->dup_of)->path);
			break;
		case VALIDATE_MALFORMED:
			fprintf(out, "  %s: no readable merge events (%" PRIu64 " malformed lines)\n",
				f->path, f->malformed);
			break;
		case VALIDATE_UNREADABLE:
			fprintf(out, "  %s: could not be read\n", f->path);
			break;
		case VALIDATE_TOO_COSTLY:
			fprintf(out, "  %s: forgone %" PRIu64 " of %" PRIu64 " bare takes (%s), above %.2f%%\n",
				f->path, c->forgone, c->bare_taken,
				rate_describe(a, sizeof(a), c->forgone, c->bare_taken, VALIDATE_CONFIDENCE, 100, "%"),
				o->max_forgone_pct);
			break;
		}
	}
	if (json) {
		jsonw_arr_end(&w);
		jsonw_obj_end(&w);
	} else {
		/* every share with its interval; 0 of n as what it rules out */
		fprintf(out, "residual: substitutions in %" PRIu64 " of %" PRIu64 " merges (%s)\n",
			tc->merges_subst, tally_n_evaluated(tc),
			rate_describe(a, sizeof(a), tc->merges_subst, tally_n_evaluated(tc),
				      VALIDATE_CONFIDENCE, 100, "%"));
		fprintf(out, "cost: forgone %" PRIu64 " of %" PRIu64 " bare takes (%s), fired on %" PRIu64
			" of %" PRIu64 " merges (%s); prevented %" PRIu64 ", unverified takes %" PRIu64 "\n",
			tc->forgone, tc->bare_taken,
			rate_describe(a, sizeof(a), tc->forgone, tc->bare_taken, VALIDATE_CONFIDENCE, 100, "%"),
			tc->fired, tally_n_evaluated(tc),
			rate_describe(b, sizeof(b), tc->fired, tally_n_evaluated(tc), VALIDATE_CONFIDENCE,
				      100, "%"),
			tc->prevented, tc->unverified);
		if (replay_malformed(r))
			fprintf(out, "malformed lines: %" PRIu64 "\n", replay_malformed(r));
	}
	return !failed;
}
