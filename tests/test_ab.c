/* test_ab.c - the A/B verdict: paired differences over rounds with their interval, noise floor,
 * flat, WITHHELD, the guard effect with its tests and INCONCLUSIVE; option checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "ab/ab.h"
#include "ab/verdict.h"

struct fx {
	double fig[AB__ROLES][AB_N_FIG][AB_MAX_REPEATS];
	size_t n[AB__ROLES];
	struct ab_result res;
};

/* One round: makespan, ttft, tok_s of each role (ITL follows the makespan). */
static void fx_round(struct fx *x, enum ab_role r, double mk, double ttft, double toks)
{
	size_t k = x->n[r]++;

	x->fig[r][AB_MAKESPAN][k] = mk;
	x->fig[r][AB_TTFT][k] = ttft;
	x->fig[r][AB_ITL][k] = mk / 1000;
	x->fig[r][AB_TOK_S][k] = toks;
}

static double judge_baseline;

static void judge(struct fx *x, bool sens, double sep)
{
	struct ab_judge_opts jo = { sens, sep, 0, judge_baseline };

	verdict_judge((const double (*)[AB_N_FIG][AB_MAX_REPEATS])x->fig, x->n, &jo, &x->res);
}

/* Rounds of control, negative control, treatment (and sensitivity) at the given makespans. */
static void fx_rounds(struct fx *x, size_t n, const double *ctl, const double *neg, const double *tr,
		      const double *sens)
{
	size_t k;

	for (k = 0; k < n; k++) {
		fx_round(x, AB_CONTROL, ctl[k], ctl[k] / 10, 5000 / ctl[k]);
		fx_round(x, AB_NEGATIVE, neg[k], neg[k] / 10, 5000 / neg[k]);
		fx_round(x, AB_TREATMENT, tr[k], tr[k] / 10, 5000 / tr[k]);
		if (sens)
			fx_round(x, AB_SENSITIVITY, sens[k], sens[k] / 10, 5000 / sens[k]);
	}
}

static void test_flat_not_a_win(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	const double ctl[] = { 100, 100, 100 }, neg[] = { 101, 99.5, 100.2 }, tr[] = { 99.5, 100.4, 99.8 };
	const double sens[] = { 130, 131, 129 };

	(void)state;
	/* the treatment's differences (-0.5%, +0.4%, -0.2%) lie inside the 1% floor: flat, never "better" */
	fx_rounds(x, 3, ctl, neg, tr, sens);
	x->res.role[AB_CONTROL].subst = 3;
	judge(x, true, 0);
	assert_false(x->res.cost_withheld);
	assert_string_equal(x->res.delta[AB_MAKESPAN].verdict, "flat, not a win");
	assert_string_equal(x->res.delta[AB_TOK_S].verdict, "flat, not a win");
	assert_true(fabs(x->res.delta[AB_MAKESPAN].floor - 0.01) < 1e-9);
	/* the median paired difference and the order-statistic interval of 3 rounds: min and max, 75% */
	assert_true(fabs(x->res.delta[AB_MAKESPAN].delta - -0.002) < 1e-9);
	assert_true(fabs(x->res.delta[AB_MAKESPAN].lo - -0.005) < 1e-9);
	assert_true(fabs(x->res.delta[AB_MAKESPAN].hi - 0.004) < 1e-9);
	assert_true(fabs(x->res.delta[AB_MAKESPAN].coverage - 0.75) < 1e-12);
	assert_int_equal(x->res.delta[AB_MAKESPAN].rounds, 3);
	assert_true(fabs(x->res.separation - 0.29) < 1e-9);
	free(x);
}

static void test_better_worse_withheld(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	const double ctl[] = { 100, 100, 100 }, neg[] = { 100.5, 100.2, 99.8 }, sens[] = { 150, 150, 150 };
	const double faster[] = { 90, 91, 92 }, straddle[] = { 100.1, 101, 103 };

	(void)state;
	fx_rounds(x, 3, ctl, neg, faster, sens);
	judge(x, true, 0);
	assert_string_equal(x->res.delta[AB_MAKESPAN].verdict, "better");  /* makespan down */
	assert_string_equal(x->res.delta[AB_TOK_S].verdict, "better");     /* tok/s up */
	assert_false(x->res.cost_undecided);
	/* the interval (+0.1% to +3%) straddles the 0.5% floor: neither flat nor worse */
	memset(x, 0, sizeof(*x));
	fx_rounds(x, 3, ctl, neg, straddle, sens);
	judge(x, true, 0);
	assert_false(x->res.cost_withheld);
	assert_string_equal(x->res.delta[AB_MAKESPAN].verdict, "WITHHELD");
	assert_string_equal(x->res.delta[AB_TOK_S].verdict, "WITHHELD");
	/* every figure WITHHELD: the figures are shown, the cost verdict is
	 * WITHHELD all the same, never "published" above them */
	assert_true(x->res.cost_undecided);
	assert_non_null(strstr(x->res.cost_reason, "none of the 4 figures is told apart"));
	free(x);
}

static void test_withheld(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	(void)state;
	/* the floor (20%) is wider than the sensitivity arm's effect (10%) */
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 120, 12, 40);
	fx_round(x, AB_TREATMENT, 90, 9, 55);
	fx_round(x, AB_SENSITIVITY, 110, 11, 45);
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 100, 12, 40);
	fx_round(x, AB_TREATMENT, 90, 9, 55);
	fx_round(x, AB_SENSITIVITY, 110, 11, 45);
	judge(x, true, 0);
	assert_true(x->res.cost_withheld);
	assert_non_null(strstr(x->res.cost_reason, "under the 5% separation floor"));
	/* separated by 5.5 points: passes the 5% floor, not a 6% one */
	memset(x, 0, sizeof(*x));
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 101, 10, 50);
	fx_round(x, AB_TREATMENT, 100, 10, 50);
	fx_round(x, AB_SENSITIVITY, 106.5, 10, 50);
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 100, 10, 50);
	fx_round(x, AB_TREATMENT, 100, 10, 50);
	fx_round(x, AB_SENSITIVITY, 106.5, 10, 50);
	judge(x, true, 0);
	assert_false(x->res.cost_withheld);
	judge(x, true, 0.06);
	assert_true(x->res.cost_withheld);
	/* no sensitivity arm: withheld, whatever the figures */
	judge(x, false, 0);
	assert_true(x->res.cost_withheld);
	assert_non_null(strstr(x->res.cost_reason, "no sensitivity arm"));
	/* one round: no interval, the cost withheld even with a sensitivity arm far off */
	memset(x, 0, sizeof(*x));
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 100.3, 10, 50);
	fx_round(x, AB_TREATMENT, 100.4, 10, 50);
	fx_round(x, AB_SENSITIVITY, 300, 30, 17);
	judge(x, true, 0);
	assert_true(x->res.cost_withheld);
	assert_non_null(strstr(x->res.cost_reason, "1 round: one pair of boots has no interval"));
	assert_string_equal(x->res.delta[AB_MAKESPAN].verdict, "WITHHELD");
	assert_false(isfinite(x->res.delta[AB_MAKESPAN].lo));
	free(x);
}

static void test_floor_is_the_worst_round(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	const double ctl[] = { 100, 100, 100 }, neg[] = { 100, 108, 101 }, tr[] = { 95, 96, 97 };

	(void)state;
	fx_rounds(x, 3, ctl, neg, tr, NULL);
	judge(x, false, 0);
	assert_true(fabs(x->res.delta[AB_MAKESPAN].floor - 0.08) < 1e-9);
	assert_string_equal(x->res.delta[AB_MAKESPAN].verdict, "flat, not a win");
	assert_true(fabs(x->res.role[AB_CONTROL].fig[AB_MAKESPAN][2] - 100) < 1e-9);
	assert_int_equal(x->res.role[AB_CONTROL].n_rounds, 3);
	free(x);
}

static void test_forgone_cost(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	const double ctl[] = { 100, 100, 100 }, neg[] = { 100, 100, 100 }, tr[] = { 101, 101, 101 };

	(void)state;
	fx_rounds(x, 3, ctl, neg, tr, NULL);
	/* 10, 20, 30 forgone takes at an ITL of 0.101 s: 1.01, 2.02, 3.03 s, median 2.02 s of 100 */
	x->res.role[AB_TREATMENT].guard_known = true;
	x->res.role[AB_TREATMENT].forgone_round[0] = 10;
	x->res.role[AB_TREATMENT].forgone_round[1] = 30;
	x->res.role[AB_TREATMENT].forgone_round[2] = 20;
	judge(x, false, 0);
	assert_int_equal(x->res.forgone_rounds, 3);
	assert_true(fabs(x->res.forgone_expected_s - 2.02) < 1e-9);
	assert_true(fabs(x->res.forgone_expected_rel - 0.0202) < 1e-9);
	free(x);
}

static void test_guard_effect(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));
	struct ab_role_result *c = &x->res.role[AB_CONTROL], *n = &x->res.role[AB_NEGATIVE];
	struct ab_role_result *t = &x->res.role[AB_TREATMENT];

	(void)state;
	fx_round(x, AB_CONTROL, 1, 1, 1);
	fx_round(x, AB_TREATMENT, 1, 1, 1);
	/* no substitution anywhere: the A/B shows nothing */
	c->merges = t->merges = n->merges = 300;
	judge(x, false, 0);
	assert_false(x->res.guard_ok);
	assert_string_equal(x->res.guard_verdict, "NOT SHOWN");
	/* the control arm substituted in 40 of 600 merges, the treatment in none of 300: PASS */
	c->subst = c->merges_subst = 20;
	n->subst = n->merges_subst = 20;
	judge(x, false, 0);
	assert_string_equal(x->res.guard_verdict, "PASS");
	assert_true(x->res.guard_ok);
	assert_true(x->res.p_subst < 0.05);
	assert_int_equal(x->res.ctl_merges, 600);
	/* 1 of 100 against 0 of 100: Fisher's test cannot tell them apart */
	c->merges = t->merges = 100;
	n->merges = 0;
	c->subst = c->merges_subst = 1;
	n->subst = n->merges_subst = 0;
	judge(x, false, 0);
	assert_string_equal(x->res.guard_verdict, "INCONCLUSIVE");
	assert_false(x->res.guard_ok);
	assert_non_null(strstr(x->res.guard_why, "Fisher's exact test p = 1"));
	assert_true(x->res.n_detect_merges > 100);
	/* substitutions told apart, but the treatment's 0 failing of 50 cannot rule out 6 of 100 */
	c->merges = t->merges = 300;
	c->subst = c->merges_subst = 40;
	c->requests = 100;
	c->failing = 6;
	t->requests = 50;
	judge(x, false, 0);
	assert_string_equal(x->res.guard_verdict, "INCONCLUSIVE");
	assert_string_equal(x->res.baseline_from, "the control arm");
	assert_true(fabs(x->res.baseline - 0.06) < 1e-12);
	assert_int_equal(x->res.n_to_bound, 60);
	assert_non_null(strstr(x->res.guard_why, "0 failing of 50"));
	/* a baseline given: the seeds' 0.48%, which 50 requests cannot rule out either */
	c->failing = 0;
	judge_baseline = 0.0048;
	judge(x, false, 0);
	assert_string_equal(x->res.guard_verdict, "INCONCLUSIVE");
	assert_int_equal(x->res.n_to_bound, 767);
	t->requests = 767;
	judge(x, false, 0);
	assert_string_equal(x->res.guard_verdict, "PASS");
	judge_baseline = 0;
	/* the treatment substituted or failed: FAIL */
	t->subst = t->merges_subst = 1;
	judge(x, false, 0);
	assert_string_equal(x->res.guard_verdict, "FAIL");
	t->subst = t->merges_subst = 0;
	t->failing = 1;
	judge(x, false, 0);
	assert_string_equal(x->res.guard_verdict, "FAIL");
	/* figures missing: every verdict unknown, never "flat" */
	memset(x, 0, sizeof(*x));
	judge(x, true, 0);
	assert_string_equal(x->res.delta[AB_MAKESPAN].verdict, "unknown");
	assert_true(x->res.cost_withheld);
	free(x);
}

static void test_run_usage(void **state)
{
	struct ab_opts o;
	struct ab_result *res = calloc(1, sizeof(*res));
	struct status_info si = { 0 };

	(void)state;
	memset(&o, 0, sizeof(o));
	assert_int_equal(ab_run(&o, res, &si), STATUS_USAGE);
	o.control = "bare";
	o.treatment = "stamp";
	o.spec = "/nonexistent/arms.json";
	o.serve = "true";
	o.dir = "/tmp";
	o.repeats = 0;
	o.concurrency = 1;
	assert_int_equal(ab_run(&o, res, &si), STATUS_USAGE);
	o.repeats = AB_MAX_REPEATS + 1;
	assert_int_equal(ab_run(&o, res, &si), STATUS_USAGE);
	assert_string_equal(ab_role_name(AB_NEGATIVE), "negative-control");
	assert_string_equal(ab_role_name(AB_SENSITIVITY), "sensitivity");
	free(res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flat_not_a_win),
		cmocka_unit_test(test_better_worse_withheld),
		cmocka_unit_test(test_withheld),
		cmocka_unit_test(test_floor_is_the_worst_round),
		cmocka_unit_test(test_forgone_cost),
		cmocka_unit_test(test_guard_effect),
		cmocka_unit_test(test_run_usage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
