/* test_stats.c - run figures and repeats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "bench/stats.h"

static void test_percentile(void **state)
{
	double v[10] = { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 };
	struct stats_dist d;

	(void)state;
	stats_dist_of(v, 10, &d);
	/* nearest rank: always an observed value */
	assert_true(d.p50 == 5);
	assert_true(d.p90 == 9);
	assert_true(d.p99 == 10);
	assert_true(d.min == 1 && d.max == 10);
	assert_true(fabs(d.mean - 5.5) < 1e-12);
	assert_true(stats_percentile(v, 0, 50) == 0);
	stats_dist_of(v, 0, &d);
	assert_int_equal(d.n, 0);
}

/* A request that launched at `launch`, first token after ttft, n tokens 1 ms apart. */
static void req(struct load_result *r, size_t seq, double launch, double ttft, size_t n, long usage_out,
		long usage_prompt, enum load_fail fail)
{
	size_t i;

	memset(r, 0, sizeof(*r));
	r->launch_seq = seq;
	r->t_launch = launch;
	r->usage_completion = usage_out;
	r->usage_prompt = usage_prompt;
	r->fail = fail;
	r->n_chunks = n;
	r->n_tokens = n;
	r->tok_t = calloc(n ? n : 1, sizeof(double));
	for (i = 0; i < n; i++)
		r->tok_t[i] = launch + ttft + 0.001 * (double)i;
	if (n) {
		r->t_first = r->tok_t[0];
		r->t_last = r->tok_t[n - 1];
	}
	r->t_end = launch + ttft + 0.001 * (double)n;
}

static void free_run(struct load_run *run)
{
	size_t i;

	for (i = 0; i < run->n; i++) {
		free(run->res[i].tok_t);
		free(run->res[i].tok_n);
	}
}

/* Chunks of several tokens: one gap per token, the chunk's gap shared out. */
static void test_itl_per_token(void **state)
{
	struct load_result res[1];
	struct load_run run = { .res = res, .n = 1, .arrival = LOAD_CLOSED, .t_start = 100, .t_end = 101 };
	struct stats_run s;

	(void)state;
	req(&res[0], 0, 100.0, 0.1, 3, 7, 5, LOAD_OK);
	res[0].tok_n = calloc(3, sizeof(uint32_t));
	assert_non_null(res[0].tok_n);
	res[0].tok_n[0] = 1;
	res[0].tok_n[1] = 2;
	res[0].tok_n[2] = 4;
	res[0].tok_t[1] = 100.3;   /* 0.2 s after the first: two gaps of 0.1 */
	res[0].tok_t[2] = 100.7;   /* 0.4 s later: four of 0.1 */
	res[0].n_tokens = 7;
	res[0].count_src = LOAD_COUNT_TOKEN_IDS;
	assert_int_equal(stats_run_compute(&run, &s, NULL), STATUS_OK);
	assert_int_equal(s.itl.n, 6);
	assert_true(fabs(s.itl.p50 - 0.1) < 1e-9 && fabs(s.itl.max - 0.1) < 1e-9);
	assert_string_equal(s.itl_source, "tokens");
	assert_int_equal(s.n_usage_mismatch, 0);
	stats_run_release(&s);
	free_run(&run);
}

static void test_run_figures(void **state)
{
	struct load_result res[4];
	struct load_run run = { .res = res, .n = 4, .arrival = LOAD_BATCH, .t_start = 100, .t_end = 102 };
	struct stats_run s;

	(void)state;
	/* launch order differs from request order: the staircase follows launches */
	req(&res[0], 2, 100.0, 0.30, 10, 10, 100, LOAD_OK);
	req(&res[1], 0, 100.0, 0.10, 10, 10, 100, LOAD_OK);
	req(&res[2], 1, 100.0, 0.20, 10, 10, 100, LOAD_OK);
	req(&res[3], 3, 100.0, 0.05, 4, -1, -1, LOAD_FAIL_RESET);
	assert_int_equal(stats_run_compute(&run, &s, NULL), STATUS_OK);
	assert_int_equal(s.n_ok, 3);
	assert_int_equal(s.n_failed, 1);
	assert_int_equal(s.n_fail[LOAD_FAIL_RESET], 1);
	assert_true(s.makespan == 2.0);
	/* failed requests never add tokens */
	assert_int_equal(s.out_tokens, 30);
	assert_true(fabs(s.out_tok_s - 15.0) < 1e-9);
	assert_string_equal(s.tps_source, "usage");
	assert_int_equal(s.prompt_tokens, 300);
	/* batch prefill: prompt tokens over the slowest first token, not the mean */
	assert_true(fabs(s.max_ttft - 0.30) < 1e-9);
	assert_true(fabs(s.prefill_tok_s - 1000.0) < 1e-6);
	assert_int_equal(s.n_staircase, 4);
	assert_true(fabs(s.staircase[0] - 0.10) < 1e-9);
	assert_true(fabs(s.staircase[1] - 0.20) < 1e-9);
	assert_true(fabs(s.staircase[2] - 0.30) < 1e-9);
	assert_true(fabs(s.staircase[3] - 0.05) < 1e-9);   /* the failed one too, where it got a token */
	assert_int_equal(s.itl.n, 27);
	assert_true(fabs(s.itl.p50 - 0.001) < 1e-9);
	assert_int_equal(s.ttft.n, 3);
	stats_run_release(&s);

	/* no usage anywhere: counted chunks, said so; closed loop has no batch prefill */
	run.arrival = LOAD_CLOSED;
	res[0].usage_completion = res[1].usage_completion = res[2].usage_completion = -1;
	assert_int_equal(stats_run_compute(&run, &s, NULL), STATUS_OK);
	assert_string_equal(s.tps_source, "chunks");
	assert_int_equal(s.out_tokens, 30);
	assert_true(s.prefill_tok_s == 0);
	stats_run_release(&s);

	/* usage on some: mixed; a usage count that disagrees with the chunks is counted */
	res[0].usage_completion = 12;
	assert_int_equal(stats_run_compute(&run, &s, NULL), STATUS_OK);
	assert_string_equal(s.tps_source, "mixed");
	assert_int_equal(s.out_tokens, 32);
	assert_int_equal(s.n_usage_mismatch, 1);
	stats_run_release(&s);

	/* nothing succeeded */
	res[0].fail = res[1].fail = res[2].fail = LOAD_FAIL_HTTP;
	assert_int_equal(stats_run_compute(&run, &s, NULL), STATUS_OK);
	assert_string_equal(s.tps_source, "none");
	assert_int_equal(s.out_tokens, 0);
	assert_int_equal(s.n_fail[LOAD_FAIL_HTTP], 3);
	stats_run_release(&s);
	free_run(&run);
}

static void test_repeats(void **state)
{
	double stable[3] = { 100, 110, 105 }, unstable[3] = { 100, 130, 105 }, even[4] = { 4, 1, 3, 2 };
	double one[1] = { 7 }, sp;

	(void)state;
	assert_int_equal(stats_median_repeat(stable, 3, &sp), 2);
	assert_true(fabs(sp - 10.0 / 105.0) < 1e-12);
	assert_false(sp > STATS_UNSTABLE_SPREAD);
	assert_int_equal(stats_median_repeat(unstable, 3, &sp), 2);
	assert_true(sp > STATS_UNSTABLE_SPREAD);
	/* even count: the lower middle repeat, a real one, never an average */
	assert_int_equal(stats_median_repeat(even, 4, &sp), 3);
	assert_true(fabs(sp - 3.0 / 2.0) < 1e-12);
	assert_int_equal(stats_median_repeat(one, 1, &sp), 0);
	assert_true(sp == 0);
}


/* Open loop: latency from when each request was due, and the lag to the
 * write; a closed loop has neither. */
static void test_from_schedule(void **state)
{
	struct load_result res[2];
	struct load_run run = { .res = res, .n = 2, .arrival = LOAD_POISSON, .t_start = 100, .t_end = 102 };
	struct stats_run s;

	(void)state;
	req(&res[0], 0, 100.0, 0.1, 2, 2, 5, LOAD_OK);
	req(&res[1], 1, 100.5, 0.1, 2, 2, 5, LOAD_OK);
	res[0].t_sched = 100.0;
	res[0].t_sent = 100.0;
	/* due at 100.1, written 0.4 s late: the client fell behind */
	res[1].t_sched = 100.1;
	res[1].t_sent = 100.5;
	assert_int_equal(stats_run_compute(&run, &s, NULL), STATUS_OK);
	assert_true(s.open_loop);
	assert_int_equal(s.ttft_sched.n, 2);
	assert_true(fabs(s.ttft.max - 0.1) < 1e-9);
	assert_true(fabs(s.ttft_sched.max - 0.5) < 1e-9);
	assert_true(fabs(s.sched_lag.max - 0.4) < 1e-9);
	assert_true(fabs(s.e2e_sched.max - (100.5 + 0.1 + 0.002 - 100.1)) < 1e-9);
	stats_run_release(&s);
	run.arrival = LOAD_CLOSED;
	assert_int_equal(stats_run_compute(&run, &s, NULL), STATUS_OK);
	assert_false(s.open_loop);
	assert_int_equal(s.ttft_sched.n, 0);
	stats_run_release(&s);
	free_run(&run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_percentile),
		cmocka_unit_test(test_run_figures),
		cmocka_unit_test(test_itl_per_token),
		cmocka_unit_test(test_from_schedule),
		cmocka_unit_test(test_repeats),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
