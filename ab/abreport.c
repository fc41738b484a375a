/*
 * abreport.c - the A/B's outputs (abreport.h): ab-report.md, its JSON twin,
 * the timelines of each role's capture, the figures and the HTML page,
 * every file written atomically.
 */
#include "ab/abreport.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe/arms.h"
#include "bench/driver.h"
#include "report/html.h"
#include "probe/http.h"
#include "base/jsonw.h"
#include "capture/launch.h"
#include "host/lock.h"
#include "base/outfile.h"
#include "pair/pair.h"
#include "report/series.h"
#include "host/preflight.h"
#include "base/rate.h"
#include "analyzer/rule.h"
#include "report/svg.h"

/* --- reports ---------------------------------------------------------------- */

static void abreport_pct(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%+.2f%%", 100 * v);
	else
		fputs("n/a", f);
}

/* "+2.10% to +9.90% (75%)", or "none (1 round)". */
static void abreport_interval(FILE *f, double lo, double hi, double coverage, size_t rounds)
{
	if (!isfinite(lo) || !isfinite(hi)) {
		fprintf(f, "none (%zu round%s)", rounds, rounds == 1 ? "" : "s");
		return;
	}
	abreport_pct(f, lo);
	fputs(" to ", f);
	abreport_pct(f, hi);
	fprintf(f, " (%g%%)", 100 * coverage);
}

static void abreport_md(struct ab_ctx *c, FILE *f)
{
	const struct ab_result *res = c->res;
	const struct ab_opts *o = c->o;
	const struct ab_role_result *tr = &res->role[AB_TREATMENT];
	double conf = res->confidence;
	char a[128], b[128], lv[16];
	size_t r, k;

	rate_level(lv, sizeof(lv), conf);
	fprintf(f, "# A/B: %s (control) vs %s (treatment)\n\n", o->control, o->treatment);
	fprintf(f, "Guard effect: **%s**. Cost: **%s**. %zu round%s; rates with %s Clopper-Pearson intervals, "
		"Fisher's exact test two-sided at %g.\n\n", res->guard_verdict,
		res->cost_withheld || res->cost_undecided ? "WITHHELD" : "published", res->role[AB_CONTROL].n_rounds,
		res->role[AB_CONTROL].n_rounds == 1 ? "" : "s", lv, 1 - conf);
	fprintf(f, "%s: %s.\n\n", res->guard_verdict, res->guard_why);
	fprintf(f, "## Guard effect\n\n");
	fprintf(f, "| role | arm | boots | merges | merges with a substitution | substitutions (request/stamp/lifetime) "
		"| taken | fired | prevented | forgone | arm verdict |\n");
	fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (r = 0; r < AB__ROLES; r++) {
		const struct ab_role_result *x = &res->role[r];

		if (!x->n_boots)
			continue;
		fprintf(f, "| %s | %s | %zu | %llu | %llu of %llu: %s | %llu (%llu/%llu/%llu) | %llu | ",
			ab_role_name((enum ab_role)r), x->arm, x->n_boots, x->merges, x->merges_subst, x->merges,
			rate_describe(a, sizeof(a), x->merges_subst, x->merges, conf, 100, "%"), x->subst,
			x->subst_request, x->subst_stamp, x->subst_lifetime, x->taken);
		if (x->guard_known)
			fprintf(f, "%llu | %llu | %llu | ", x->fired, x->prevented, x->forgone);
		else
			fprintf(f, "n/a | n/a | n/a | ");
		fprintf(f, "%s |\n", x->arm_verdict[0] ? x->arm_verdict : "no-audit");
	}
	fprintf(f, "\nThe treatment against the control arm (its control and negative-control boots: one "
		"configuration): merges with a substitution %llu of %llu against %llu of %llu, Fisher's exact "
		"test p = %.3g.\n", tr->merges_subst, tr->merges, res->ctl_merges_subst, res->ctl_merges,
		res->p_subst);
	if (tr->guard_known)
		fprintf(f, "The treatment's guard fired on %llu of %llu merges (%s); it forwent %llu of %llu bare "
			"takes (%s).\n", tr->fired, tr->merges, rate_describe(a, sizeof(a), tr->fired, tr->merges,
									    conf, 100, "%"),
			tr->forgone, tr->bare_taken, rate_describe(b, sizeof(b), tr->forgone, tr->bare_taken, conf,
								   100, "%"));
	if (res->n_mem_warnings)
		fprintf(f, "\nHost memory did not come back after %zu boot(s): %s.\n", res->n_mem_warnings,
			res->mem_warning);
	fprintf(f, "\n## Correctness\n\n| role | failing of requests | rate | explained | possible | unexplained "
		"| substitutions with correct output |\n|---|---|---|---|---|---|---|\n");
	for (r = 0; r < AB__ROLES; r++) {
		const struct ab_role_result *x = &res->role[r];

		if (x->n_boots)
			fprintf(f, "| %s | %zu of %zu | %s | %zu | %zu | %zu | %zu |\n", ab_role_name((enum ab_role)r),
				x->failing, x->requests, rate_describe(a, sizeof(a), x->failing, x->requests, conf,
								       100, "%"),
				x->explained, x->possible, x->unexplained, x->subst_correct);
	}
	fprintf(f, "\nThe treatment against the control arm: failing requests %zu of %zu against %zu of %zu, "
		"Fisher's exact test p = %.3g.", tr->failing, tr->requests, res->ctl_failing, res->ctl_requests,
		res->p_fail);
	if (res->baseline > 0)
		fprintf(f, " Baseline %s per request (%s): the treatment's %zu of %zu %s; %llu requests rule it "
			"out.\n", rate_fmt(a, sizeof(a), res->baseline, 100, "%"), res->baseline_from, tr->failing,
			tr->requests, rate_describe(b, sizeof(b), tr->failing, tr->requests, conf, 100, "%"),
			(unsigned long long)res->n_to_bound);
	else
		fprintf(f, " No baseline: the control arm failed no request and none was given (--baseline).\n");
	fprintf(f, "\n## Cost\n\n");
	fprintf(f, "Each figure is the median over rounds of the paired difference (treatment - control) / "
		"control, both booted in the same round, with the order-statistic interval of that median "
		"(its real coverage in brackets: with 3 rounds it is the smallest and the largest difference, "
		"which cover the median 75%% of the time, not %s).\n", lv);
	fprintf(f, "Noise floor (the negative control, %s booted again in the same round, against the "
		"control; the largest difference over rounds): makespan %.2f%%, TTFT p50 %.2f%%, ITL p50 %.2f%%, "
		"tokens/s %.2f%%.\n", o->control, 100 * res->delta[AB_MAKESPAN].floor,
		100 * res->delta[AB_TTFT].floor, 100 * res->delta[AB_ITL].floor, 100 * res->delta[AB_TOK_S].floor);
	if (o->sensitivity)
		fprintf(f, "Sensitivity arm %s: makespan moved %.2f%% (median over rounds), separation from the "
			"negative control %.2f points (floor %.0f%%).\n", o->sensitivity, 100 * res->sensitivity_delta,
			100 * res->separation, 100 * (o->separation > 0 ? o->separation : AB_DEFAULT_SEPARATION));
	if (res->cost_withheld) {
		fprintf(f, "\n**WITHHELD**: %s. The treatment's cost is not published.\n", res->cost_reason);
	} else {
		if (res->cost_undecided)
			fprintf(f, "\n**WITHHELD**: %s. The figures, each WITHHELD:\n", res->cost_reason);
		fprintf(f, "\n| figure | control | treatment | paired difference | interval | negative control "
			"(A' - A) | noise floor | verdict |\n|---|---|---|---|---|---|---|---|\n");
		for (k = 0; k < AB_N_FIG; k++) {
			const struct ab_delta *d = &res->delta[k];

			fprintf(f, "| %s | %.4g | %.4g | ", d->figure, d->control, d->treatment);
			abreport_pct(f, d->delta);
			fputs(" | ", f);
			abreport_interval(f, d->lo, d->hi, d->coverage, d->rounds);
			fputs(" | ", f);
			abreport_pct(f, d->neg_delta);
			fputs(", ", f);
			abreport_interval(f, d->neg_lo, d->neg_hi, d->coverage, d->rounds);
			fprintf(f, " | %.2f%% | %s%s |\n", 100 * d->floor, d->verdict,
				!strcmp(d->verdict, "WITHHELD") ? ": the interval straddles the noise floor" : "");
		}
	}
	if (tr->guard_known) {
		fprintf(f, "\nForgone takes of the treatment per round:");
		for (k = 0; k < tr->n_rounds; k++)
			fprintf(f, " %llu", tr->forgone_round[k]);
		fprintf(f, ". At one ITL p50 of decode time each they would cost %.4g s, %.2f%% of the control's "
			"makespan (median over rounds)", res->forgone_expected_s, 100 * res->forgone_expected_rel);
		if (res->cost_withheld) {
			fprintf(f, "; the measured difference is withheld.\n");
		} else {
			fprintf(f, ", beside the measured makespan difference ");
			abreport_pct(f, res->delta[AB_MAKESPAN].delta);
			fputs(" (interval ", f);
			abreport_interval(f, res->delta[AB_MAKESPAN].lo, res->delta[AB_MAKESPAN].hi,
				    res->delta[AB_MAKESPAN].coverage, res->delta[AB_MAKESPAN].rounds);
			fputs(").\n", f);
		}
	}
	fprintf(f, "\n## Boots\n\n");
	for (k = 0; k < c->n_boots; k++)
		fprintf(f, "- %s r%u (%s): capture `%s`, records `%s`\n", ab_role_name(c->boots[k].role),
			c->boots[k].round + 1, ab_role_arm(o, c->boots[k].role), c->boots[k].capture,
			c->boots[k].records);
	fprintf(f, "\nFigures: `%s`, `%s`, `%s`, `%s`; the page: `%s` (ttaudit report html).\n", res->svg_timeline,
		res->svg_timeline_treatment, res->svg_latency, res->svg_makespan, res->report_html);
}

/* figure values of one role per round, by figure name */
static void abreport_json_rounds(struct jsonw *w, const struct ab_role_result *x)
{
	static const char *const keys[AB_N_FIG] = { "makespan_s", "ttft_p50_s", "itl_p50_s", "output_tok_s" };
	size_t f, k;

	jsonw_key(w, "rounds");
	jsonw_obj(w);
	for (f = 0; f < AB_N_FIG; f++) {
		jsonw_key(w, keys[f]);
		jsonw_arr(w);
		for (k = 0; k < x->n_rounds; k++)
			jsonw_double(w, x->fig[f][k]);
		jsonw_arr_end(w);
	}
	if (x->guard_known) {
		jsonw_key(w, "forgone");
		jsonw_arr(w);
		for (k = 0; k < x->n_rounds; k++)
			jsonw_uint(w, x->forgone_round[k]);
		jsonw_arr_end(w);
	}
	jsonw_obj_end(w);
}

static void abreport_json(struct ab_ctx *c, FILE *f)
{
	const struct ab_result *res = c->res;
	const struct ab_opts *o = c->o;
	double conf = res->confidence;
	struct jsonw w;
	size_t r, k;

	jsonw_init(&w, f);
	jsonw_obj(&w);
	jsonw_kstr(&w, "control", o->control);
	jsonw_kstr(&w, "treatment", o->treatment);
	jsonw_kstr(&w, "sensitivity", o->sensitivity);
	jsonw_kbool(&w, "failed", res->failed);
	jsonw_kstr(&w, "fail_message", res->failed ? res->fail_message : NULL);
	jsonw_kdouble(&w, "confidence", conf);
	jsonw_kuint(&w, "rounds", res->role[AB_CONTROL].n_rounds);
	jsonw_kstr(&w, "guard_verdict", res->guard_verdict);
	jsonw_kstr(&w, "guard_why", res->guard_why);
	jsonw_key(&w, "roles");
	jsonw_obj(&w);
	for (r = 0; r < AB__ROLES; r++) {
		const struct ab_role_result *x = &res->role[r];

		if (!x->n_boots)
			continue;
		jsonw_key(&w, ab_role_name((enum ab_role)r));
		jsonw_obj(&w);
		jsonw_kstr(&w, "arm", x->arm);
		jsonw_kuint(&w, "boots", x->n_boots);
		jsonw_kuint(&w, "merges", x->merges);
		jsonw_kuint(&w, "merges_with_substitution", x->merges_subst);
		jsonw_key(&w, "substitution_rate");
		rate_json(&w, x->merges_subst, x->merges, conf);
		jsonw_kuint(&w, "taken", x->taken);
		jsonw_kuint(&w, "substitutions", x->subst);
		jsonw_key(&w, "substitutions_by_evidence");
		jsonw_obj(&w);
		jsonw_kuint(&w, "request", x->subst_request);
		jsonw_kuint(&w, "stamp", x->subst_stamp);
		jsonw_kuint(&w, "lifetime", x->subst_lifetime);
		jsonw_obj_end(&w);
		if (x->guard_known) {
			jsonw_kuint(&w, "fired", x->fired);
			jsonw_key(&w, "fired_rate");
			rate_json(&w, x->fired, x->merges, conf);
			jsonw_kuint(&w, "prevented", x->prevented);
			jsonw_kuint(&w, "forgone", x->forgone);
			jsonw_kuint(&w, "bare_taken", x->bare_taken);
			jsonw_key(&w, "forgone_rate");
			rate_json(&w, x->forgone, x->bare_taken, conf);
		}
		jsonw_kstr(&w, "arm_verdict", x->arm_verdict[0] ? x->arm_verdict : "no-audit");
		jsonw_kuint(&w, "requests", x->requests);
		jsonw_kuint(&w, "failing", x->failing);
		jsonw_key(&w, "failing_rate");
		rate_json(&w, x->failing, x->requests, conf);
		jsonw_kuint(&w, "explained", x->explained);
		jsonw_kuint(&w, "possible", x->possible);
		jsonw_kuint(&w, "unexplained", x->unexplained);
		jsonw_kuint(&w, "substitutions_with_correct_output", x->subst_correct);
		jsonw_kdouble(&w, "makespan_s", x->med[AB_MAKESPAN]);
		jsonw_kdouble(&w, "ttft_p50_s", x->med[AB_TTFT]);
		jsonw_kdouble(&w, "itl_p50_s", x->med[AB_ITL]);
		jsonw_kdouble(&w, "output_tok_s", x->med[AB_TOK_S]);
		abreport_json_rounds(&w, x);
		jsonw_obj_end(&w);
	}
	jsonw_obj_end(&w);
	jsonw_key(&w, "control_arm");
	jsonw_obj(&w);
	jsonw_key(&w, "substitution_rate");
	rate_json(&w, res->ctl_merges_subst, res->ctl_merges, conf);
	jsonw_key(&w, "failing_rate");
	rate_json(&w, res->ctl_failing, res->ctl_requests, conf);
	jsonw_obj_end(&w);
	jsonw_key(&w, "treatment_against_control");
	jsonw_obj(&w);
	jsonw_kdouble(&w, "substitution_fisher_p", res->p_subst);
	jsonw_kdouble(&w, "failing_fisher_p", res->p_fail);
	jsonw_kdouble(&w, "baseline", res->baseline > 0 ? res->baseline : NAN);
	jsonw_kstr(&w, "baseline_from", res->baseline_from);
	jsonw_kuint(&w, "requests_to_rule_out_baseline", res->n_to_bound);
	jsonw_kuint(&w, "merges_per_arm_to_detect", res->n_detect_merges);
	jsonw_kuint(&w, "requests_per_arm_to_detect", res->n_detect_requests);
	jsonw_obj_end(&w);
	jsonw_kuint(&w, "host_memory_warnings", res->n_mem_warnings);
	jsonw_kstr(&w, "host_memory_warning", res->n_mem_warnings ? res->mem_warning : NULL);
	jsonw_key(&w, "noise_floor");
	jsonw_obj(&w);
	for (k = 0; k < AB_N_FIG; k++)
		jsonw_kdouble(&w, res->delta[k].figure, res->delta[k].floor);
	jsonw_obj_end(&w);
	jsonw_kdouble(&w, "sensitivity_delta", res->sensitivity_delta);
	jsonw_kdouble(&w, "separation", res->separation);
	jsonw_kdouble(&w, "separation_floor", o->separation > 0 ? o->separation : AB_DEFAULT_SEPARATION);
	jsonw_kstr(&w, "cost_verdict", res->cost_withheld || res->cost_undecided ? "WITHHELD" : "published");
	jsonw_kstr(&w, "cost_reason", res->cost_withheld || res->cost_undecided ? res->cost_reason : NULL);
	jsonw_key(&w, "cost");
	if (res->cost_withheld) {
		jsonw_null(&w);
	} else {
		jsonw_arr(&w);
		for (k = 0; k < AB_N_FIG; k++) {
			const struct ab_delta *d = &res->delta[k];

			jsonw_obj(&w);
			jsonw_kstr(&w, "figure", d->figure);
			jsonw_kdouble(&w, "control", d->control);
			jsonw_kdouble(&w, "treatment", d->treatment);
			jsonw_kdouble(&w, "delta", d->delta);
			jsonw_kdouble(&w, "lo", d->lo);
			jsonw_kdouble(&w, "hi", d->hi);
			jsonw_kdouble(&w, "coverage", d->coverage);
			jsonw_kstr(&w, "interval", "order statistics of the median of paired differences");
			jsonw_kuint(&w, "rounds", d->rounds);
			jsonw_kdouble(&w, "negative_delta", d->neg_delta);
			jsonw_kdouble(&w, "negative_lo", d->neg_lo);
			jsonw_kdouble(&w, "negative_hi", d->neg_hi);
			jsonw_kdouble(&w, "noise_floor", d->floor);
			jsonw_kstr(&w, "verdict", d->verdict);
			jsonw_obj_end(&w);
		}
		jsonw_arr_end(&w);
	}
	jsonw_key(&w, "forgone_cost");
	if (res->role[AB_TREATMENT].guard_known) {
		jsonw_obj(&w);
		jsonw_kdouble(&w, "expected_s", res->forgone_expected_s);
		jsonw_kdouble(&w, "expected_relative", res->forgone_expected_rel);
		jsonw_kstr(&w, "model", "forgone takes x the treatment's ITL p50, median over rounds");
		jsonw_kdouble(&w, "measured_relative", res->cost_withheld ? NAN : res->delta[AB_MAKESPAN].delta);
		jsonw_obj_end(&w);
	} else {
		jsonw_null(&w);
	}
	jsonw_key(&w, "boots");
	jsonw_arr(&w);
	for (k = 0; k < c->n_boots; k++) {
		jsonw_obj(&w);
		jsonw_kstr(&w, "role", ab_role_name(c->boots[k].role));
		jsonw_kuint(&w, "round", c->boots[k].round);
		jsonw_kstr(&w, "arm", ab_role_arm(o, c->boots[k].role));
		jsonw_kstr(&w, "capture", c->boots[k].capture);
		jsonw_kstr(&w, "records", c->boots[k].records);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "figures");
	jsonw_arr(&w);
	jsonw_str(&w, res->svg_timeline);
	jsonw_str(&w, res->svg_timeline_treatment);
	jsonw_str(&w, res->svg_latency);
	jsonw_str(&w, res->svg_makespan);
	jsonw_arr_end(&w);
	jsonw_kstr(&w, "html", res->report_html[0] ? res->report_html : NULL);
	jsonw_obj_end(&w);
	fputc('\n', f);
}

/* The timeline of the first boot of a role into DIR/name. */
static enum status abreport_timeline(struct ab_ctx *c, enum ab_role role, char *path, size_t n_path,
			       const char *name, struct status_info *si)
{
	const char *arm = ab_role_arm(c->o, role);
	struct svg_timeline_stats ts;
	struct svg_timeline_opts to;
	char title[256];
	enum status st;
	struct rule rl;
	size_t k;
	struct outfile of;

	for (k = 0; k < c->n_boots && c->boots[k].role != role; k++)
		;
	if (k == c->n_boots)
		return STATUS_OK;
	snprintf(path, n_path, "%s/%s", c->o->dir, name);
	if (outfile_open(&of, path, si))
		return STATUS_IO;
	memset(&to, 0, sizeof(to));
	to.to_step = -1;
	/* the recorded decisions; events without `taken` are read as the arm's
	 * rule, or bare for other names */
	to.fallback = rule_parse(arm, &rl, NULL) ? NULL : arm;
	snprintf(title, sizeof(title), "%s (%s), first boot", ab_role_name(role), arm);
	to.title = title;
	st = svg_timeline(of.f, c->boots[k].capture, &to, &ts, si);
	if (st)
		outfile_abort(&of);
	else
		st = outfile_commit(&of, si);
	return st;
}

enum status abreport_write(struct ab_ctx *c, struct status_info *si)
{
	struct ab_result *res = c->res;
	const char *dir = c->o->dir;
	struct svg_series s[AB__ROLES];
	struct outfile of;
	size_t n = 0, r;
	enum status st;

	/* timelines: the first boot of the control (its substitutions) and of
	 * the treatment (its guard rejects) */
	st = abreport_timeline(c, AB_CONTROL, res->svg_timeline, sizeof(res->svg_timeline), "ab-timeline.svg", si);
	if (!st)
		st = abreport_timeline(c, AB_TREATMENT, res->svg_timeline_treatment,
				 sizeof(res->svg_timeline_treatment), "ab-timeline-treatment.svg", si);
	if (st)
		return st;
	for (r = 0; r < AB__ROLES; r++)
		if (c->n_ttft[r]) {
			s[n].name = ab_role_name((enum ab_role)r);
			s[n].v = c->ttft[r];
			s[n].n = c->n_ttft[r];
			n++;
		}
	snprintf(res->svg_latency, sizeof(res->svg_latency), "%s/ab-latency.svg", dir);
	if (outfile_open(&of, res->svg_latency, si))
		return STATUS_IO;
	svg_cdf(of.f, "TTFT, measured requests, per role", "TTFT (s)", s, n);
	if (outfile_commit(&of, si))
		return STATUS_IO;
	n = 0;
	for (r = 0; r < AB__ROLES; r++)
		if (c->n_fig[r]) {
			s[n].name = ab_role_name((enum ab_role)r);
			s[n].v = c->fig[r][AB_MAKESPAN];
			s[n].n = c->n_fig[r];
			n++;
		}
	snprintf(res->svg_makespan, sizeof(res->svg_makespan), "%s/ab-makespan.svg", dir);
	if (outfile_open(&of, res->svg_makespan, si))
		return STATUS_IO;
	svg_repeats(of.f, "makespan per repeat, per role", "makespan (s)", s, n);
	if (outfile_commit(&of, si))
		return STATUS_IO;
	snprintf(res->report_html, sizeof(res->report_html), "%s/ab-report.html", dir);
	snprintf(res->report_md, sizeof(res->report_md), "%s/ab-report.md", dir);
	if (outfile_open(&of, res->report_md, si))
		return STATUS_IO;
	abreport_md(c, of.f);
	if (outfile_commit(&of, si))
		return STATUS_IO;
	snprintf(res->report_json, sizeof(res->report_json), "%s/ab-report.json", dir);
	if (outfile_open(&of, res->report_json, si))
		return STATUS_IO;
	abreport_json(c, of.f);
	if (outfile_commit(&of, si))
		return STATUS_IO;
	/* the page reads what was just written: one reading of the A/B, whoever draws it */
	{
		struct html_opts ho;
		struct html_stats hs;

		memset(&ho, 0, sizeof(ho));
		ho.input = dir;
		ho.to_step = -1;
		st = outfile_open(&of, res->report_html, si);
		if (st)
			return st;
		st = html_report(of.f, &ho, &hs, si);
		if (st)
			outfile_abort(&of);
		else
			st = outfile_commit(&of, si);
	}
	return st;
}
