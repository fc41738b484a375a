/*
 * test_rate.c - exact intervals, Fisher's test and sample sizes (base/rate.c),
 * against values published for these cases and reproduced with SciPy 1.10
 * (scipy.stats.beta.ppf, binomtest(...).proportion_ci("wilson"),
 * fisher_exact); tests/e2e/15-rate-scipy.sh compares many more at test time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/jsonw.h"
#include "base/rate.h"

#define near(got, want, rel) \
	do { \
		double g_ = (got), w_ = (want); \
		if (!(fabs(g_ - w_) <= (rel) * fabs(w_) + 1e-15)) \
			fail_msg("%s = %.15g, want %.15g", #got, g_, w_); \
	} while (0)

static void test_clopper_pearson(void **state)
{
	struct rate_interval r;

	(void)state;
	/* the seeds' characterisation run: 0 of 192 rules out only rates above 1.9% */
	r = rate_clopper_pearson(0, 192, 0.95);
	near(r.lo, 0, 0);
	near(r.hi, 0.0190295221688, 1e-9);
	near(r.hi, 1 - pow(0.025, 1.0 / 192), 1e-9);   /* closed form for k = 0 */
	r = rate_clopper_pearson(1, 32, 0.95);
	near(r.lo, 0.000790868597953, 1e-9);
	near(r.hi, 0.162170994182, 1e-9);
	r = rate_clopper_pearson(15, 77, 0.95);
	near(r.p, 15.0 / 77, 1e-12);
	near(r.lo, 0.113331729194, 1e-9);
	near(r.hi, 0.300867146948, 1e-9);
	r = rate_clopper_pearson(5, 5, 0.95);
	near(r.lo, 0.478176249895, 1e-9);
	near(r.hi, 1, 0);
	r = rate_clopper_pearson(1, 1000000, 0.95);
	near(r.lo, 2.53178076638e-08, 1e-6);
	near(r.hi, 5.57163065517e-06, 1e-6);
	/* nothing seen, nothing known */
	r = rate_clopper_pearson(0, 0, 0.95);
	near(r.lo, 0, 0);
	near(r.hi, 1, 0);
	near(rate_upper_bound(0, 192, 0.95), 0.0154816796187, 1e-9);
	near(rate_upper_bound(15, 77, 0.95), 0.283998012983, 1e-9);
}

static void test_wilson(void **state)
{
	struct rate_interval r;

	(void)state;
	r = rate_wilson(0, 192, 0.95);
	near(r.hi, 0.0196151460668, 1e-9);
	r = rate_wilson(1, 32, 0.95);
	near(r.lo, 0.005537860164, 1e-9);
	near(r.hi, 0.1574426382, 1e-9);
	r = rate_wilson(50, 100, 0.95);
	near(r.lo, 0.403831530366, 1e-9);
}

static void test_fisher(void **state)
{
	(void)state;
	/* the seeds' guard arm: 15 prevented of 77 against 0 of 78 */
	near(rate_fisher(15, 77, 0, 78), 1.29679659148e-05, 1e-8);
	near(rate_fisher_greater(15, 77, 0, 78), 1.29679659148e-05, 1e-8);
	/* a symmetric table: both tails */
	near(rate_fisher(3, 10, 7, 10), 0.178895407998, 1e-9);
	near(rate_fisher(0, 0, 0, 0), 1, 0);
	near(rate_fisher(0, 10, 0, 10), 1, 0);
}

static void test_binom(void **state)
{
	(void)state;
	/* 0 of 192 at 0.48%/request happens 40% of the time */
	near(rate_p_zero(0.0048, 192), 0.39700002176683846, 1e-12);
	near(rate_binom_cdf(0, 192, 0.0048), 0.39700002176683846, 1e-9);
	near(rate_binom_sf(1, 192, 0.0048), 1 - 0.39700002176683846, 1e-9);
	near(rate_binom_cdf(192, 192, 0.5), 1, 0);
	near(rate_binom_sf(0, 192, 0.5), 1, 0);
}

static void test_sample_size(void **state)
{
	bool capped;
	uint64_t n;

	(void)state;
	/* 0 events in n rules out 0.48% at 95% one-sided: (1 - p)^n <= 0.05 */
	n = rate_n_to_bound(0.0048, 0.95);
	assert_int_equal(n, 623);
	assert_true(rate_p_zero(0.0048, n) <= 0.05);
	assert_true(rate_p_zero(0.0048, n - 1) > 0.05);
	assert_int_equal(rate_n_to_bound(0, 0.95), 0);
	/* two arms, control at 0.48%, treatment at 0: power 0.8 at alpha 0.05 */
	n = rate_n_to_detect(0.0048, 0, 0.05, 0.8, 100000000, &capped);
	assert_false(capped);
	assert_true(rate_power(0.0048, 0, n, 0.05) >= 0.8);
	assert_true(rate_power(0.0048, 0, n - 1, 0.05) < 0.8 || rate_power(0.0048, 0, n / 2, 0.05) < 0.8);
	assert_int_equal(n, 1399);
	/* a cap too low says so instead of answering */
	assert_int_equal(rate_n_to_detect(0.0048, 0, 0.05, 0.8, 100, &capped), 0);
	assert_true(capped);
	/* p1 >= p0 is not a reduction to detect */
	assert_int_equal(rate_n_to_detect(0.001, 0.002, 0.05, 0.8, 1000, &capped), 0);
}

static void test_median_interval(void **state)
{
	size_t k;
	double c;

	(void)state;
	/* the order-statistic interval of a median (Conover, Practical
	 * Nonparametric Statistics, table A3; SciPy 1 - 2 binom.cdf(k - 1, n, 0.5)):
	 * with 3 rounds the minimum and maximum cover 75% only */
	assert_false(rate_median_interval(3, 0.95, &k, &c));
	assert_int_equal(k, 1);
	near(c, 0.75, 1e-12);
	assert_false(rate_median_interval(5, 0.95, &k, &c));
	near(c, 0.9375, 1e-12);
	assert_true(rate_median_interval(6, 0.95, &k, &c));
	assert_int_equal(k, 1);
	near(c, 0.96875, 1e-12);
	assert_true(rate_median_interval(10, 0.95, &k, &c));
	assert_int_equal(k, 2);
	near(c, 0.978515625, 1e-12);
	assert_true(rate_median_interval(20, 0.95, &k, &c));
	assert_int_equal(k, 6);
	near(c, 0.9586105346679688, 1e-12);
	assert_true(rate_median_interval(30, 0.95, &k, &c));
	assert_int_equal(k, 10);
	near(c, 0.9572260547429323, 1e-12);
	/* one round is no interval at all */
	assert_false(rate_median_interval(1, 0.95, &k, &c));
	near(c, 0, 0);
	assert_false(rate_median_interval(0, 0.95, &k, &c));
	assert_int_equal(k, 0);
}

static void test_describe(void **state)
{
	char buf[128];

	(void)state;
	assert_string_equal(rate_describe(buf, sizeof(buf), 0, 192, 0.95, 100, "%"),
			    "rules out only rates above 1.90% at 95%");
	assert_string_equal(rate_describe(buf, sizeof(buf), 15, 77, 0.95, 100, "%"),
			    "19.5%, 95% CI 11.3% to 30.1%");
	assert_string_equal(rate_describe(buf, sizeof(buf), 1, 32, 0.95, 100, "%"),
			    "3.12%, 95% CI 0.0791% to 16.2%");
	assert_string_equal(rate_describe(buf, sizeof(buf), 12, 33, 0.95, 1000, " per 1,000"),
			    "364, 95% CI 204 to 549 per 1,000");
	assert_string_equal(rate_describe(buf, sizeof(buf), 0, 0, 0.95, 100, "%"), "nothing to judge");
	assert_string_equal(rate_describe(buf, sizeof(buf), 0, 192, 0.9, 100, "%"),
			    "rules out only rates above 1.55% at 90%");
	assert_string_equal(rate_fmt(buf, sizeof(buf), 0.09996, 100, "%"), "10.0%");
	assert_string_equal(rate_fmt(buf, sizeof(buf), 1, 100, "%"), "100%");
	assert_string_equal(rate_fmt(buf, sizeof(buf), 0, 100, "%"), "0%");
	assert_string_equal(rate_describe(buf, sizeof(buf), 0, 192, 0.95, 1000, " per 1,000"),
			    "rules out only rates above 19.0 per 1,000 at 95%");
	assert_string_equal(rate_per_1000(buf, sizeof(buf), 33, 59, 0.95, "merges"),
			    "559 per 1,000 merges (424 to 688)");
	assert_string_equal(rate_per_1000(buf, sizeof(buf), 0, 48, 0.95, "merges"),
			    "under 74.0 per 1,000 merges");
	assert_string_equal(rate_against(buf, sizeof(buf), 13, 192, 0.95, 0.0048), "above the baseline 0.48%");
	assert_string_equal(rate_against(buf, sizeof(buf), 1, 192, 0.95, 0.0048),
			    "consistent with the baseline 0.48%");
	assert_string_equal(rate_against(buf, sizeof(buf), 0, 767, 0.95, 0.0048), "below the baseline 0.48%");
	assert_string_equal(rate_plan_command(buf, sizeof(buf), 0.0048, 0.95), "ttaudit plan --baseline 0.0048 --target 0");
	assert_string_equal(rate_plan_command(buf, sizeof(buf), 0.0048, 0.99),
			    "ttaudit plan --baseline 0.0048 --target 0 --confidence 0.99");
	assert_string_equal(rate_level(buf, sizeof(buf), 0.95), "95%");
	assert_string_equal(rate_level(buf, sizeof(buf), 0.995), "99.5%");
}

static void test_json(void **state)
{
	struct jsonw w;
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	(void)state;
	jsonw_init(&w, f);
	jsonw_arr(&w);
	rate_json(&w, 0, 192, 0.95);
	rate_json(&w, 0, 0, 0.95);
	jsonw_arr_end(&w);
	fclose(f);
	assert_non_null(strstr(buf, "{\"k\":0,\"n\":192,\"rate\":0,\"lo\":0,\"hi\":0.0190295"));
	assert_non_null(strstr(buf, "\"method\":\"clopper-pearson\"}"));
	/* nothing seen: no rate, the whole range */
	assert_non_null(strstr(buf, "{\"k\":0,\"n\":0,\"rate\":null,\"lo\":0,\"hi\":1,"));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clopper_pearson),
		cmocka_unit_test(test_wilson),
		cmocka_unit_test(test_fisher),
		cmocka_unit_test(test_binom),
		cmocka_unit_test(test_sample_size),
		cmocka_unit_test(test_median_interval),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_json),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
