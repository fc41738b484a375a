/*
 * cmd_plan.c - `ttaudit plan`: how many requests (or merges) a run needs
 * before its verdict can mean anything (base/rate.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/jsonw.h"
#include "base/opt.h"
#include "base/rate.h"

static double plan_baseline = -1, plan_target = 0, plan_conf = 0.95, plan_power = 0.8;
static long long plan_runs = 0;
static const char *plan_unit = "requests";
static bool plan_json;
static struct opt_list plan_observed, plan_compare;

#define PLAN_MAX (2 * OPT_LIST_MAX)

/* "K/N" into k and n; -1 when it is not two counts with K <= N. */
static int plan_fraction(const char *s, uint64_t *k, uint64_t *n)
{
	char *end;
	unsigned long long a, b;

	if (!s || *s < '0' || *s > '9')
		return -1;
	a = strtoull(s, &end, 10);
	if (*end != '/' || end[1] < '0' || end[1] > '9')
		return -1;
	b = strtoull(end + 1, &end, 10);
	if (*end || a > b || b == 0 || b > 1000000000000ull)
		return -1;
	*k = a;
	*n = b;
	return 0;
}

/* "K1/N1,K2/N2" */
static int plan_pair(const char *s, uint64_t v[4])
{
	char a[64];
	const char *comma = strchr(s, ',');

	if (!comma || (size_t)(comma - s) >= sizeof(a))
		return -1;
	memcpy(a, s, (size_t)(comma - s));
	a[comma - s] = 0;
	return plan_fraction(a, &v[0], &v[1]) || plan_fraction(comma + 1, &v[2], &v[3]) ? -1 : 0;
}

static const char *const plan_usage[] = {
	"plan --baseline P [--target P1] [--confidence C] [--power W] [--runs N] [--unit NAME] [--json]",
	"plan --observed K/N... [--compare K1/N1,K2/N2...] [--confidence C] [--json]",
	NULL,
};

static const struct opt plan_opts[] = {
	OPT_NUM(0, "baseline", &plan_baseline, "P", 1e-12, 0.999999,
		"the rate today, per request or per merge (0.0048 for 0.48%)"),
	OPT_NUM(0, "target", &plan_target, "P1", 0, 0.999999,
		"the rate the change should bring (default 0: the guard makes it zero)"),
	OPT_NUM(0, "confidence", &plan_conf, "C", 0.5, 0.999999, "confidence level (default 0.95)"),
	OPT_NUM(0, "power", &plan_power, "W", 0.5, 0.999999,
		"chance the run shows a change that is there (default 0.8)"),
	OPT_INT(0, "runs", &plan_runs, "N", 1, 1000000000000, "also say what a run of N requests can show"),
	OPT_STRING(0, "unit", &plan_unit, "NAME", "what is counted, for the text (default requests)"),
	OPT_LIST(0, "observed", &plan_observed, "K/N",
		 "K events seen in N: the rate with its Clopper-Pearson and Wilson intervals (repeatable)"),
	OPT_LIST(0, "compare", &plan_compare, "K1/N1,K2/N2",
		 "two observed rates: Fisher's exact test, two-sided p-value (repeatable)"),
	OPT_BOOL(0, "json", &plan_json, "the plan as one JSON object"),
	OPT_END(),
};

const struct cmd_doc cmd_plan_doc = {
	.name = "plan",
	.summary = "how many requests a run needs to show a rate change, or to bound a rate",
	.usage = plan_usage,
	.description =
		"Sample sizes from exact binomial statistics, for the rare failures a guard is "
		"meant to remove, at the two-sided confidence C that ttaudit uses for every "
		"interval it prints. Two questions: how many requests a run needs so that 0 "
		"failures rule out the baseline rate (the upper end of the Clopper-Pearson "
		"interval of 0 of n falls below P), and how many requests per arm an A/B needs so "
		"that Fisher's exact test (two-sided, level 1 - C) shows the change from P to P1 "
		"with the given power, computed exactly over both arms' binomial distributions. "
		"With --runs N, what a run of N requests can show: how often it sees no failure at "
		"all at the baseline, the rates its 0 rules out, and its power.\n"
		"\n"
		"--observed and --compare answer for counts already seen, without a baseline.",
	.opts = plan_opts,
};

/* --observed and --compare: intervals and tests of counts already seen. */
static int plan_observed_report(void)
{
	uint64_t v[PLAN_MAX][4];
	struct jsonw w;
	size_t i;

	for (i = 0; i < plan_observed.n; i++)
		if (plan_fraction(plan_observed.v[i], &v[i][0], &v[i][1]))
			return cli_usage_error("plan", "--observed '%s': want K/N with K <= N, N > 0",
					       plan_observed.v[i]);
	for (i = 0; i < plan_compare.n; i++)
		if (plan_pair(plan_compare.v[i], v[PLAN_MAX / 2 + i]))
			return cli_usage_error("plan", "--compare '%s': want K1/N1,K2/N2", plan_compare.v[i]);
	if (plan_json) {
		jsonw_init(&w, stdout);
		jsonw_obj(&w);
		jsonw_kdouble(&w, "confidence", plan_conf);
		jsonw_key(&w, "observed");
		jsonw_arr(&w);
	}
	for (i = 0; i < plan_observed.n; i++) {
		struct rate_interval cp = rate_clopper_pearson(v[i][0], v[i][1], plan_conf);
		struct rate_interval wi = rate_wilson(v[i][0], v[i][1], plan_conf);

		if (plan_json) {
			jsonw_obj(&w);
			jsonw_kuint(&w, "k", v[i][0]);
			jsonw_kuint(&w, "n", v[i][1]);
			jsonw_kdouble(&w, "rate", cp.p);
			jsonw_kdouble(&w, "cp_lo", cp.lo);
			jsonw_kdouble(&w, "cp_hi", cp.hi);
			jsonw_kdouble(&w, "wilson_lo", wi.lo);
			jsonw_kdouble(&w, "wilson_hi", wi.hi);
			jsonw_obj_end(&w);
			continue;
		}
		printf("%llu of %llu: %.4g%%, %.0f%% interval [%.4g%%, %.4g%%] (Clopper-Pearson), "
		       "[%.4g%%, %.4g%%] (Wilson)\n", (unsigned long long)v[i][0],
		       (unsigned long long)v[i][1], 100 * cp.p, 100 * plan_conf, 100 * cp.lo, 100 * cp.hi,
		       100 * wi.lo, 100 * wi.hi);
	}
	if (plan_json) {
		jsonw_arr_end(&w);
		jsonw_key(&w, "compare");
		jsonw_arr(&w);
	}
	for (i = 0; i < plan_compare.n; i++) {
		const uint64_t *c = v[PLAN_MAX / 2 + i];
		double pv = rate_fisher(c[0], c[1], c[2], c[3]);

		if (plan_json) {
			jsonw_obj(&w);
			jsonw_key(&w, "a");
			jsonw_arr(&w);
			jsonw_uint(&w, c[0]);
			jsonw_uint(&w, c[1]);
			jsonw_arr_end(&w);
			jsonw_key(&w, "b");
			jsonw_arr(&w);
			jsonw_uint(&w, c[2]);
			jsonw_uint(&w, c[3]);
			jsonw_arr_end(&w);
			jsonw_kdouble(&w, "fisher_p", pv);
			jsonw_obj_end(&w);
			continue;
		}
		printf("%llu of %llu against %llu of %llu: Fisher's exact test, two-sided p = %.4g%s\n",
		       (unsigned long long)c[0], (unsigned long long)c[1], (unsigned long long)c[2],
		       (unsigned long long)c[3], pv, pv < 1 - plan_conf ? "" : " (not separated)");
	}
	if (plan_json) {
		jsonw_arr_end(&w);
		jsonw_obj_end(&w);
		fputc('\n', stdout);
	}
	return CLI_OK;
}

int cmd_plan(int argc, char **argv)
{
	uint64_t n_bound, n_detect = 0;
	bool capped = false;
	double alpha;
	int n, rc;

	n = cli_parse(&cmd_plan_doc, argc, argv, CLI_NO_OPERANDS, &rc);
	if (n < 0)
		return rc;
	if (plan_observed.n || plan_compare.n) {
		if (plan_baseline >= 0)
			return cli_usage_error("plan", "--observed and --compare do not take --baseline");
		return plan_observed_report();
	}
	if (plan_baseline < 0)
		return cli_usage_error("plan", "--baseline P is required (the rate today, e.g. 0.0048)");
	if (plan_target >= plan_baseline)
		return cli_usage_error("plan", "--target %g is not below --baseline %g: nothing to show",
				       plan_target, plan_baseline);
	/* Two-sided level 1 - C: each tail gets half. With equal arms Fisher's
	 * null distribution is symmetric, so the one-sided test at half the level
	 * is the two-sided test. */
	alpha = (1 - plan_conf) / 2;
	n_bound = rate_n_to_bound(plan_baseline, 1 - alpha);
	n_detect = rate_n_to_detect(plan_baseline, plan_target, alpha, plan_power, 100000000, &capped);
	if (plan_json) {
		struct jsonw w;

		jsonw_init(&w, stdout);
		jsonw_obj(&w);
		jsonw_kdouble(&w, "baseline", plan_baseline);
		jsonw_kdouble(&w, "target", plan_target);
		jsonw_kdouble(&w, "confidence", plan_conf);
		jsonw_kdouble(&w, "power", plan_power);
		jsonw_kstr(&w, "unit", plan_unit);
		jsonw_kuint(&w, "n_to_bound", n_bound);
		if (capped)
			jsonw_key(&w, "n_per_arm_to_detect"), jsonw_null(&w);
		else
			jsonw_kuint(&w, "n_per_arm_to_detect", n_detect);
		if (plan_runs > 0) {
			uint64_t r = (uint64_t)plan_runs;

			jsonw_key(&w, "run");
			jsonw_obj(&w);
			jsonw_kuint(&w, "n", r);
			jsonw_kdouble(&w, "p_zero_at_baseline", rate_p_zero(plan_baseline, r));
			jsonw_kdouble(&w, "zero_rules_out_above", rate_clopper_pearson(0, r, plan_conf).hi);
			jsonw_kdouble(&w, "power", rate_power(plan_baseline, plan_target, r, alpha));
			jsonw_obj_end(&w);
		}
		jsonw_obj_end(&w);
		fputc('\n', stdout);
		return CLI_OK;
	}
	printf("baseline %.4g%%, target %.4g%% (%s), confidence %.0f%%, power %.0f%%\n",
	       100 * plan_baseline, 100 * plan_target, plan_unit, 100 * plan_conf, 100 * plan_power);
	printf("to bound the rate below %.4g%% (0 failures seen): %llu %s\n", 100 * plan_baseline,
	       (unsigned long long)n_bound, plan_unit);
	if (capped)
		printf("to show %.4g%% -> %.4g%% between two arms: more than 100000000 %s per arm\n",
		       100 * plan_baseline, 100 * plan_target, plan_unit);
	else
		printf("to show %.4g%% -> %.4g%% between two arms: %llu %s per arm "
		       "(Fisher's exact test, two-sided, at %.2g)\n",
		       100 * plan_baseline, 100 * plan_target, (unsigned long long)n_detect, plan_unit,
		       1 - plan_conf);
	if (plan_runs > 0) {
		uint64_t r = (uint64_t)plan_runs;
		double pz = rate_p_zero(plan_baseline, r);

		printf("a run of %llu %s: 0 failures happen %.1f%% of the time at %.4g%%; "
		       "its 0 rules out only rates above %.3g%%; power %.0f%%%s\n",
		       (unsigned long long)r, plan_unit, 100 * pz, 100 * plan_baseline,
		       100 * rate_clopper_pearson(0, r, plan_conf).hi,
		       100 * rate_power(plan_baseline, plan_target, r, alpha),
		       r < n_bound ? ": too few to tell" : "");
	}
	return CLI_OK;
}
