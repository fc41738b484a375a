/* test_ab.c - the A/B verdict: noise floor, flat, WITHHELD, guard effect; option checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "ab.h"

struct fx {
	double fig[AB__ROLES][3][AB_MAX_REPEATS];
	size_t n[AB__ROLES];
	struct ab_result res;
};

/* One round: makespan, ttft, tok_s of each role. */
static void fx_round(struct fx *x, enum ab_role r, double mk, double ttft, double toks)
{
	size_t k = x->n[r]++;

	x->fig[r][0][k] = mk;
	x->fig[r][1][k] = ttft;
	x->fig[r][2][k] = toks;
}

static void judge(struct fx *x, bool sens, double sep)
{
	ab_judge((const double (*)[3][AB_MAX_REPEATS])x->fig, x->n, sens, sep, &x->res);
}

static void test_flat_not_a_win(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	(void)state;
	/* A 100 s, A' 101 s (floor 1%), B 99.5 s (-0.5%): flat, never "better" */
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 101, 10.2, 49.5);
	fx_round(x, AB_TREATMENT, 99.5, 9.95, 50.2);
	fx_round(x, AB_SENSITIVITY, 130, 13, 38);
	x->res.role[AB_CONTROL].subst = 3;
	judge(x, true, 0);
	assert_false(x->res.cost_withheld);
	assert_string_equal(x->res.delta[0].verdict, "flat, not a win");
	assert_string_equal(x->res.delta[1].verdict, "flat, not a win");
	assert_string_equal(x->res.delta[2].verdict, "flat, not a win");
	assert_true(fabs(x->res.delta[0].floor - 0.01) < 1e-9);
	assert_true(fabs(x->res.separation - 0.29) < 1e-9);
	assert_true(x->res.guard_ok);
	free(x);
}

static void test_better_and_worse(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	(void)state;
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 100.5, 10.05, 50.2);
	fx_round(x, AB_TREATMENT, 90, 12, 60);
	fx_round(x, AB_SENSITIVITY, 150, 15, 30);
	judge(x, true, 0);
	assert_string_equal(x->res.delta[0].verdict, "better");   /* makespan down */
	assert_string_equal(x->res.delta[1].verdict, "worse");    /* ttft up */
	assert_string_equal(x->res.delta[2].verdict, "better");   /* tok/s up */
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
	judge(x, true, 0);
	assert_true(x->res.cost_withheld);
	assert_non_null(strstr(x->res.cost_reason, "under the 5% separation floor"));
	/* separated by 5.5 points: passes the 5% floor, not a 6% one */
	memset(x, 0, sizeof(*x));
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 101, 10, 50);
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
	free(x);
}

static void test_floor_is_the_worst_round(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	(void)state;
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 100, 10, 50);
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 108, 10, 50);
	fx_round(x, AB_CONTROL, 100, 10, 50);
	fx_round(x, AB_NEGATIVE, 101, 10, 50);
	fx_round(x, AB_TREATMENT, 95, 10, 50);
	fx_round(x, AB_TREATMENT, 95, 10, 50);
	fx_round(x, AB_TREATMENT, 95, 10, 50);
	judge(x, false, 0);
	assert_true(fabs(x->res.delta[0].floor - 0.08) < 1e-9);
	assert_string_equal(x->res.delta[0].verdict, "flat, not a win");
	assert_int_equal((int)x->res.role[AB_CONTROL].makespan[2], 100);
	free(x);
}

static void test_guard_effect(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	(void)state;
	fx_round(x, AB_CONTROL, 1, 1, 1);
	fx_round(x, AB_TREATMENT, 1, 1, 1);
	/* no substitution anywhere: the A/B shows nothing */
	judge(x, false, 0);
	assert_false(x->res.guard_ok);
	x->res.role[AB_CONTROL].subst = 2;
	judge(x, false, 0);
	assert_true(x->res.guard_ok);
	x->res.role[AB_TREATMENT].subst = 1;
	judge(x, false, 0);
	assert_false(x->res.guard_ok);
	x->res.role[AB_TREATMENT].subst = 0;
	x->res.role[AB_TREATMENT].failing = 1;
	judge(x, false, 0);
	assert_false(x->res.guard_ok);
	/* figures missing: every verdict unknown, never "flat" */
	memset(x, 0, sizeof(*x));
	judge(x, true, 0);
	assert_string_equal(x->res.delta[0].verdict, "unknown");
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
		cmocka_unit_test(test_better_and_worse),
		cmocka_unit_test(test_withheld),
		cmocka_unit_test(test_floor_is_the_worst_round),
		cmocka_unit_test(test_guard_effect),
		cmocka_unit_test(test_run_usage),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
