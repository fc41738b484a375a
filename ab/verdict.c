/*
 * verdict.c - the A/B's verdict from its figures (verdict.h, the rules in
 * ab.h's "Verdict"): medians per role, paired differences with their
 * order-statistic intervals against the A vs A noise floor, the guard's
 * effect by Fisher's exact test, and why a cost is withheld. No I/O.
 */
#include "ab/verdict.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rate.h"

/* --- verdict ---------------------------------------------------------------- */

static int verdict_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (the mean of the two middle ones for an even n); NAN for none. */
static double verdict_median(const double *v, size_t n)
{
	double w[AB_MAX_REPEATS];
	size_t i, m = 0;

	for (i = 0; i < n && i < AB_MAX_REPEATS; i++)
		if (isfinite(v[i]))
			w[m++] = v[i];
	if (!m)
		return NAN;
	qsort(w, m, sizeof(double), verdict_cmp);
	return m % 2 ? w[m / 2] : (w[m / 2 - 1] + w[m / 2]) / 2;
}

/*
 * The median of the paired relative differences (y_r - x_r) / x_r over the
 * rounds both have, with its order-statistic interval at conf.
 */
static void verdict_paired(const double *x, size_t nx, const double *y, size_t ny, double conf,
		      double *med, double *lo, double *hi, double *coverage, size_t *rounds)
{
	double d[AB_MAX_REPEATS];
	size_t i, m = 0, k = 0;

	for (i = 0; i < nx && i < ny && i < AB_MAX_REPEATS; i++)
		if (isfinite(x[i]) && isfinite(y[i]) && x[i] > 0)
			d[m++] = (y[i] - x[i]) / x[i];
	*rounds = m;
	*med = *lo = *hi = NAN;
	*coverage = 0;
	if (!m)
		return;
	qsort(d, m, sizeof(double), verdict_cmp);
	*med = m % 2 ? d[m / 2] : (d[m / 2 - 1] + d[m / 2]) / 2;
	rate_median_interval(m, conf, &k, coverage);
	if (m >= 2 && k >= 1) {
		*lo = d[k - 1];
		*hi = d[m - k];
	}
}

/* The guard effect (ab.h): the treatment against the control arm. */
static void verdict_guard(const struct ab_judge_opts *jo, double conf, struct ab_result *res)
{
	const struct ab_role_result *ct = &res->role[AB_CONTROL], *ng = &res->role[AB_NEGATIVE];
	const struct ab_role_result *tr = &res->role[AB_TREATMENT];
	double alpha = (1 - conf) / 2, pm;
	char a[96], b[96];
	bool capped;
	size_t n = 0;

	res->ctl_merges = ct->merges + ng->merges;
	res->ctl_merges_subst = ct->merges_subst + ng->merges_subst;
	res->ctl_requests = ct->requests + ng->requests;
	res->ctl_failing = ct->failing + ng->failing;
	res->p_subst = rate_fisher(res->ctl_merges_subst, res->ctl_merges, tr->merges_subst, tr->merges);
	res->p_fail = rate_fisher(res->ctl_failing, res->ctl_requests, tr->failing, tr->requests);
	res->baseline = 0;
	res->baseline_from = NULL;
	if (jo->baseline > 0 && jo->baseline < 1) {
		res->baseline = jo->baseline;
		res->baseline_from = "--baseline";
	} else if (res->ctl_failing && res->ctl_requests) {
		res->baseline = (double)res->ctl_failing / (double)res->ctl_requests;
		res->baseline_from = "the control arm";
	}
	res->n_to_bound = res->baseline > 0 && res->baseline < 1 ? rate_n_to_bound(res->baseline, 1 - alpha) : 0;
	pm = res->ctl_merges ? (double)res->ctl_merges_subst / (double)res->ctl_merges : 0;
	res->n_detect_merges = pm > 0 && pm < 1 ? rate_n_to_detect(pm, 0, alpha, 0.8, 100000000, &capped) : 0;
	res->n_detect_requests = res->ctl_failing && res->baseline < 1 ?
		rate_n_to_detect((double)res->ctl_failing / (double)res->ctl_requests, 0, alpha, 0.8, 100000000,
				 &capped) : 0;
	res->guard_why[0] = '\0';
	if (tr->subst || tr->failing) {
		res->guard_verdict = "FAIL";
		snprintf(res->guard_why, sizeof(res->guard_why), "the treatment made %llu substitution(s) and "
			 "had %zu failing request(s)", tr->subst, tr->failing);
	} else if (!ct->subst && !ng->subst) {
		res->guard_verdict = "NOT SHOWN";
		snprintf(res->guard_why, sizeof(res->guard_why), "the control arm made no substitution on this "
			 "workload: the A/B cannot show what the guard prevents");
	} else {
		res->guard_verdict = "PASS";
		if (!(res->p_subst < 1 - conf)) {
			n += (size_t)snprintf(res->guard_why + n, sizeof(res->guard_why) - n,
					      "merges with a substitution, 0 of %llu against the control arm's %llu "
					      "of %llu: Fisher's exact test p = %.3g, not under %g; %s%llu merges "
					      "per arm would show it (power 80%%)", tr->merges, res->ctl_merges_subst,
					      res->ctl_merges, res->p_subst, 1 - conf,
					      res->n_detect_merges ? "about " : "more than ",
					      res->n_detect_merges ? (unsigned long long)res->n_detect_merges : 100000000ull);
		}
		if (res->ctl_failing && !(res->p_fail < 1 - conf) && n < sizeof(res->guard_why))
			n += (size_t)snprintf(res->guard_why + n, sizeof(res->guard_why) - n,
					      "%sfailing requests, 0 of %zu against the control arm's %zu of %zu: "
					      "Fisher's exact test p = %.3g, not under %g; %s%llu requests per "
					      "arm would show it", n ? "; " : "", tr->requests, res->ctl_failing,
					      res->ctl_requests, res->p_fail, 1 - conf,
					      res->n_detect_requests ? "about " : "more than ",
					      res->n_detect_requests ? (unsigned long long)res->n_detect_requests : 100000000ull);
		if (res->n_to_bound && tr->requests < res->n_to_bound && n < sizeof(res->guard_why))
			n += (size_t)snprintf(res->guard_why + n, sizeof(res->guard_why) - n,
					      "%s0 failing of %zu %s, not the baseline %s (%s); %llu requests "
					      "would", n ? "; " : "", tr->requests,
					      rate_describe(a, sizeof(a), 0, tr->requests, conf, 100, "%"),
					      rate_fmt(b, sizeof(b), res->baseline, 100, "%"), res->baseline_from,
					      (unsigned long long)res->n_to_bound);
		if (n)
			res->guard_verdict = "INCONCLUSIVE";
		else
			snprintf(res->guard_why, sizeof(res->guard_why), "the treatment made no substitution in "
				 "%llu merges and failed none of %zu requests, told apart from the control arm "
				 "(Fisher's exact test, merges p = %.3g)", tr->merges, tr->requests, res->p_subst);
	}
	res->guard_ok = !strcmp(res->guard_verdict, "PASS");
}

void verdict_judge(const double fig[AB__ROLES][AB_N_FIG][AB_MAX_REPEATS], const size_t n_fig[AB__ROLES],
		   const struct ab_judge_opts *jo, struct ab_result *res)
{
	double sep = jo->separation > 0 ? jo->separation : AB_DEFAULT_SEPARATION;
	double conf = jo->confidence > 0 && jo->confidence < 1 ? jo->confidence : AB_DEFAULT_CONFIDENCE;
	double mk_sens[AB_MAX_REPEATS], fx[AB_MAX_REPEATS], d[AB_MAX_REPEATS];
	size_t f, r, k, n, nr = n_fig[AB_CONTROL] < n_fig[AB_TREATMENT] ? n_fig[AB_CONTROL] : n_fig[AB_TREATMENT];

	res->confidence = conf;
	for (r = 0; r < AB__ROLES; r++) {
		res->role[r].n_rounds = n_fig[r] < AB_MAX_REPEATS ? n_fig[r] : AB_MAX_REPEATS;
		for (f = 0; f < AB_N_FIG; f++) {
			res->role[r].med[f] = verdict_median(fig[r][f], res->role[r].n_rounds);
			for (k = 0; k < res->role[r].n_rounds; k++)
				res->role[r].fig[f][k] = fig[r][f][k];
		}
	}
	verdict_guard(jo, conf, res);
	for (f = 0; f < AB_N_FIG; f++) {
		struct ab_delta *x = &res->delta[f];
		double c;

		x->figure = ab_fig_name((enum ab_fig)f);
		x->control = res->role[AB_CONTROL].med[f];
		x->treatment = res->role[AB_TREATMENT].med[f];
		verdict_paired(fig[AB_CONTROL][f], n_fig[AB_CONTROL], fig[AB_TREATMENT][f], n_fig[AB_TREATMENT], conf,
			  &x->delta, &x->lo, &x->hi, &x->coverage, &x->rounds);
		verdict_paired(fig[AB_CONTROL][f], n_fig[AB_CONTROL], fig[AB_NEGATIVE][f], n_fig[AB_NEGATIVE], conf,
			  &x->neg_delta, &x->neg_lo, &x->neg_hi, &c, &n);
		/* the largest A vs A difference over the rounds: one quiet round proves nothing */
		x->floor = NAN;
		for (k = 0; k < n_fig[AB_CONTROL] && k < n_fig[AB_NEGATIVE] && k < AB_MAX_REPEATS; k++) {
			double a = fig[AB_CONTROL][f][k], b = fig[AB_NEGATIVE][f][k];
			double rel = a > 0 ? fabs(b - a) / a : NAN;

			if (isfinite(rel) && !(rel <= x->floor))
				x->floor = rel;
		}
		if (!isfinite(x->delta) || !isfinite(x->floor))
			x->verdict = "unknown";
		else if (!isfinite(x->lo) || !isfinite(x->hi))
			x->verdict = "WITHHELD";     /* one round: no interval */
		else if (x->lo >= -x->floor && x->hi <= x->floor)
			x->verdict = "flat, not a win";
		else if (x->lo > x->floor || x->hi < -x->floor)
			/* tokens/s: higher is better; the others: lower */
			x->verdict = (f == AB_TOK_S) == (x->lo > x->floor) ? "better" : "worse";
		else
			x->verdict = "WITHHELD";     /* the interval straddles the floor */
	}
	/* forgone takes as decode time: forgone x the treatment's ITL p50, per round */
	res->forgone_rounds = 0;
	for (k = 0; k < nr && k < AB_MAX_REPEATS; k++) {
		double itl = fig[AB_TREATMENT][AB_ITL][k], mk = fig[AB_CONTROL][AB_MAKESPAN][k];

		if (!res->role[AB_TREATMENT].guard_known || !isfinite(itl) || !(mk > 0))
			continue;
		fx[res->forgone_rounds] = (double)res->role[AB_TREATMENT].forgone_round[k] * itl;
		d[res->forgone_rounds] = fx[res->forgone_rounds] / mk;
		res->forgone_rounds++;
	}
	res->forgone_expected_s = verdict_median(fx, res->forgone_rounds);
	res->forgone_expected_rel = verdict_median(d, res->forgone_rounds);
	res->negative_delta = res->delta[AB_MAKESPAN].floor;
	res->sensitivity_delta = NAN;
	res->separation = NAN;
	res->cost_withheld = false;
	res->cost_undecided = false;
	res->cost_reason[0] = '\0';
	if (jo->has_sensitivity) {
		for (k = n = 0; k < n_fig[AB_CONTROL] && k < n_fig[AB_SENSITIVITY] && k < AB_MAX_REPEATS; k++) {
			double a = fig[AB_CONTROL][AB_MAKESPAN][k], b = fig[AB_SENSITIVITY][AB_MAKESPAN][k];

			if (a > 0 && isfinite(b))
				mk_sens[n++] = fabs(b - a) / a;
		}
		res->sensitivity_delta = verdict_median(mk_sens, n);
		res->separation = res->sensitivity_delta - res->negative_delta;
	}
	if (res->delta[AB_MAKESPAN].rounds < 2) {
		res->cost_withheld = true;
		snprintf(res->cost_reason, sizeof(res->cost_reason),
			 "%zu round: one pair of boots has no interval, and its difference cannot be told from "
			 "the noise between boots (--repeats %d at least)", res->delta[AB_MAKESPAN].rounds,
			 AB_DEFAULT_REPEATS);
	} else if (!jo->has_sensitivity) {
		res->cost_withheld = true;
		snprintf(res->cost_reason, sizeof(res->cost_reason),
			 "no sensitivity arm (--sensitivity): nothing shows this bench can see a %.0f%% effect",
			 sep * 100);
	} else if (!isfinite(res->separation) || res->separation < sep) {
		res->cost_withheld = true;
		snprintf(res->cost_reason, sizeof(res->cost_reason),
			 "the sensitivity arm moves makespan by %.1f%%, the negative control (A vs A) by "
			 "%.1f%%: separated by %.1f points, under the %.0f%% separation floor",
			 100 * res->sensitivity_delta, 100 * res->negative_delta, 100 * res->separation,
			 100 * sep);
	}
	if (!res->cost_withheld) {
		for (f = 0; f < AB_N_FIG; f++)
			if (strcmp(res->delta[f].verdict, "WITHHELD") && strcmp(res->delta[f].verdict, "unknown"))
				break;
		if (f == AB_N_FIG) {
			res->cost_undecided = true;
			snprintf(res->cost_reason, sizeof(res->cost_reason),
				 "none of the %d figures is told apart from its noise floor: each interval "
				 "straddles it or is missing (more rounds, --repeats, narrow them)", AB_N_FIG);
		}
	}
}
