/* test_pair.c - joining bench records with audits, and attributing failures to substitutions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pair/pair.h"
#include "bench/record.h"
#include "record/record_read.h"
#include "report/series.h"

static char dir[256];

static const char *tmpfile_with(const char *name, const char *text)
{
	static char paths[8][512];
	static int k;
	char *p = paths[k++ % 8];
	FILE *f;

	snprintf(p, 512, "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_pair.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

/* A correctness run "c" (arm bare) with requests r1..r4, and its reference "ref". */
static const char RUNS[] =
	"{\"kind\":\"run\",\"run_id\":\"ref\",\"phase\":\"reference\",\"arm_index\":0,\"repeat\":0,"
	"\"identity\":{\"arm\":\"bare\",\"arm_state\":\"confirmed\"},\"wall_start\":100,\"wall_end\":110,"
	"\"figures\":{\"makespan_s\":10,\"output_tok_s\":5,\"ttft_s\":{\"p50\":0.5}}}\n"
	"{\"kind\":\"request\",\"run_id\":\"ref\",\"phase\":\"reference\",\"index\":0,\"prompt_index\":0,"
	"\"id\":\"q0\",\"ok\":true,\"prompt_tokens\":10}\n"
	"{\"kind\":\"request\",\"run_id\":\"ref\",\"phase\":\"reference\",\"index\":1,\"prompt_index\":4,"
	"\"id\":\"q4\",\"ok\":true,\"prompt_tokens\":10}\n"
	"{\"kind\":\"run\",\"run_id\":\"c\",\"phase\":\"correctness\",\"arm_index\":0,\"repeat\":0,"
	"\"identity\":{\"arm\":\"bare\",\"arm_state\":\"confirmed\"},\"wall_start\":200,\"wall_end\":210,"
	"\"figures\":{\"makespan_s\":10,\"output_tok_s\":5,\"ttft_s\":{\"p50\":0.5}},"
	"\"correctness\":{\"requests\":5}}\n"
	"{\"kind\":\"request\",\"run_id\":\"c\",\"index\":0,\"prompt_index\":0,\"id\":\"r1\",\"ok\":true,"
	"\"prompt_tokens\":10,\"verdict\":\"diverged\",\"diverged_at\":3}\n"
	"{\"kind\":\"request\",\"run_id\":\"c\",\"index\":1,\"prompt_index\":1,\"id\":\"r2\",\"ok\":true,"
	"\"prompt_tokens\":10,\"verdict\":\"diverged\",\"diverged_at\":5}\n"
	"{\"kind\":\"request\",\"run_id\":\"c\",\"index\":2,\"prompt_index\":2,\"id\":\"r3\",\"ok\":true,"
	"\"prompt_tokens\":10,\"verdict\":\"wrong\"}\n"
	"{\"kind\":\"request\",\"run_id\":\"c\",\"index\":3,\"prompt_index\":3,\"id\":\"r4\",\"ok\":true,"
	"\"prompt_tokens\":10,\"verdict\":\"identical\"}\n"
	"{\"kind\":\"request\",\"run_id\":\"c\",\"index\":4,\"prompt_index\":4,\"id\":\"r5\",\"ok\":true,"
	"\"verdict\":\"diverged\",\"diverged_at\":2}\n"
	"{\"kind\":\"request\",\"run_id\":\"c\",\"index\":5,\"prompt_index\":5,\"id\":\"r6\",\"ok\":true,"
	"\"prompt_tokens\":10,\"verdict\":\"diverged\",\"diverged_at\":1}\n"
	"{\"kind\":\"request\",\"run_id\":\"c\",\"index\":6,\"prompt_index\":6,\"id\":\"r7\",\"ok\":true,"
	"\"prompt_tokens\":10,\"verdict\":\"diverged\",\"diverged_at\":4}\n";

/* One stale take per request, at the position given (prompt 10: token = pos - 10). */
#define MERGE(step, req, pos, t) \
	"{\"ev\":\"merge\",\"step\":" #step ",\"host_pos\":[" #pos "],\"dev_pos\":[" #pos "]," \
	"\"slot_req\":[\"" req "\"],\"buf_req\":[\"old\"],\"taken\":[true],\"t\":" #t "}\n"

static const struct pair_run *run_named(const struct pair *p, const char *id)
{
	size_t i;

	for (i = 0; i < pair_n_runs(p); i++)
		if (!strcmp(pair_run_at(p, i)->run_id, id))
			return pair_run_at(p, i);
	fail_msg("no run %s", id);
	return NULL;
}

static const struct pair_failure *failure_of(const struct pair_run *r, const char *req)
{
	size_t i;

	for (i = 0; i < r->n_failures; i++)
		if (!strcmp(r->failures[i].req, req))
			return &r->failures[i];
	fail_msg("no failure for %s", req);
	return NULL;
}

static double build_baseline;   /* opts.baseline of the next build() */

static struct pair *build(const char *runs, const char *audit)
{
	const char *rp[1], *ap[1];
	struct pair_opts o = { .slack_s = -1, .baseline = build_baseline };
	struct status_info si = { 0 };
	struct pair *p = NULL;
	FILE *diag = fopen("/dev/null", "w");

	rp[0] = tmpfile_with("runs.jsonl", runs);
	ap[0] = tmpfile_with("audit.jsonl", audit);
	o.runs = rp;
	o.n_runs = 1;
	o.audits = ap;
	o.n_audits = 1;
	o.diag = diag;
	assert_int_equal(pair_build(&o, &p, &si), STATUS_OK);
	fclose(diag);
	return p;
}

static void test_attribution(void **state)
{
	/* prefill event gives r5 its prompt length (its record has none) */
	const char audit[] =
		"{\"ev\":\"prefill\",\"step\":1,\"slots\":[0],\"req\":\"r5\",\"prompt_tokens\":10}\n"
		MERGE(20, "r1", 13, 205)      /* token 3 = r1's divergence: explained */
		MERGE(21, "r2", 13, 205)      /* token 3, r2 diverged at 5: unexplained */
		MERGE(22, "r3", 14, 205)      /* r3 wrong, no token to compare: possible */
		MERGE(23, "r4", 15, 205)      /* r4 identical: a substitution with correct output */
		MERGE(24, "r5", 12, 205)      /* token 2 via the audit's prompt length: explained */
		MERGE(25, "r7", 13, 205)      /* token 3, divergence seen at 4 (a text prefix): explained */
		MERGE(5, "q4", 11, 105);      /* r6's prompt 5 has no reference request; q4 is prompt 4 */
	struct pair *p = build(RUNS, audit);
	const struct pair_run *c = run_named(p, "c"), *ref = run_named(p, "ref");
	const struct pair_failure *f;

	(void)state;
	assert_int_equal(c->merges, 6);
	assert_int_equal(c->by_id, 6);
	assert_int_equal(c->subst, 6);
	assert_int_equal(c->subst_by[EVIDENCE_REQUEST], 6);
	assert_true(c->actual_from_taken);
	assert_int_equal(ref->merges, 1);
	assert_int_equal(c->n_correct, 7);
	assert_int_equal(c->n_failing, 6);

	f = failure_of(c, "r1");
	assert_int_equal(f->match, PAIR_EXPLAINED);
	assert_int_equal(f->step, 20);
	assert_int_equal(f->token, 3);
	assert_true(f->exact);
	assert_false(f->in_reference);
	assert_non_null(strstr(f->why, "explained by a substitution from old at step 20"));
	assert_string_equal(f->donor, "old");

	f = failure_of(c, "r2");
	assert_int_equal(f->match, PAIR_UNEXPLAINED);
	assert_non_null(strstr(f->why, "not at the first divergent token 5"));

	f = failure_of(c, "r3");
	assert_int_equal(f->match, PAIR_POSSIBLE);

	f = failure_of(c, "r5");
	assert_int_equal(f->match, PAIR_EXPLAINED);
	assert_int_equal(f->token, 2);

	f = failure_of(c, "r7");
	assert_int_equal(f->match, PAIR_EXPLAINED);
	assert_false(f->exact);
	assert_non_null(strstr(f->why, "prefix"));

	/* no substitution into r6 at all: no foreign token there */
	f = failure_of(c, "r6");
	assert_int_equal(f->match, PAIR_NO_FOREIGN);
	assert_non_null(strstr(f->why, "divergence without a foreign token (likely numerics)"));

	assert_int_equal(c->n_explained, 3);
	assert_int_equal(c->n_possible, 1);
	assert_int_equal(c->n_unexplained, 1);
	assert_int_equal(c->n_no_foreign, 1);
	assert_int_equal(c->n_wrong, 6);
	assert_int_equal(c->n_subst_correct, 1);
	assert_string_equal(c->arm_verdict, "not-separated");
	pair_free(p);
}

/* Canary leaks: one explained by the merge whose buffer was the donor the
 * canary named, one whose donor differs, one no substitution explains, a
 * lost marker without a foreign token; clean requests are not failing. */
static void test_canary_leaks(void **state)
{
	const char runs[] =
		"{\"kind\":\"run\",\"run_id\":\"k\",\"phase\":\"canary\",\"arm_index\":0,\"repeat\":0,"
		"\"identity\":{\"arm\":\"bare\",\"arm_state\":\"confirmed\"},\"wall_start\":1,\"wall_end\":2,"
		"\"canary\":{\"requests\":6}}\n"
		"{\"kind\":\"request\",\"run_id\":\"k\",\"index\":0,\"id\":\"cmpl-k-0\",\"request_id\":\"k-0\","
		"\"ok\":true,\"prompt_tokens\":10,\"verdict\":\"leaked\",\"canary\":{\"leak\":{\"donor_id\":\"k-4\","
		"\"at\":3}}}\n"
		"{\"kind\":\"request\",\"run_id\":\"k\",\"index\":1,\"id\":\"cmpl-k-1\",\"request_id\":\"k-1\","
		"\"ok\":true,\"prompt_tokens\":10,\"verdict\":\"leaked\",\"canary\":{\"leak\":{\"donor_id\":\"k-5\","
		"\"at\":1,\"at_span\":2}}}\n"
		"{\"kind\":\"request\",\"run_id\":\"k\",\"index\":2,\"id\":\"cmpl-k-2\",\"request_id\":\"k-2\","
		"\"ok\":true,\"prompt_tokens\":10,\"verdict\":\"leaked\",\"canary\":{\"leak\":{\"donor_id\":\"k-4\","
		"\"at\":0}}}\n"
		"{\"kind\":\"request\",\"run_id\":\"k\",\"index\":3,\"id\":\"cmpl-k-3\",\"request_id\":\"k-3\","
		"\"ok\":true,\"prompt_tokens\":10,\"verdict\":\"lost\"}\n"
		"{\"kind\":\"request\",\"run_id\":\"k\",\"index\":4,\"id\":\"cmpl-k-4\",\"request_id\":\"k-4\","
		"\"ok\":true,\"prompt_tokens\":10,\"verdict\":\"clean\"}\n"
		"{\"kind\":\"request\",\"run_id\":\"k\",\"index\":5,\"id\":\"cmpl-k-5\",\"request_id\":\"k-5\","
		"\"ok\":true,\"prompt_tokens\":10,\"verdict\":\"clean\"}\n";
	/* engine ids: the X-Request-Id behind cmpl- and an 8-hex suffix */
	const char audit[] =
		"{\"ev\":\"merge\",\"step\":7,\"host_pos\":[13],\"dev_pos\":[13],"
		"\"slot_req\":[\"cmpl-k-0-0a0b0c0d\"],\"buf_req\":[\"cmpl-k-4-1a1b1c1d\"],\"taken\":[true]}\n"
		"{\"ev\":\"merge\",\"step\":8,\"host_pos\":[12],\"dev_pos\":[12],"
		"\"slot_req\":[\"cmpl-k-1-0a0b0c0d\"],\"buf_req\":[\"cmpl-k-4-1a1b1c1d\"],\"taken\":[true]}\n";
	struct pair *p = build(runs, audit);
	const struct pair_run *r = run_named(p, "k");
	const struct pair_failure *f;

	(void)state;
	assert_int_equal(r->n_correct, 6);
	assert_int_equal(r->n_failing, 4);
	assert_int_equal(r->n_wrong, 4);
	f = failure_of(r, "cmpl-k-0");
	assert_int_equal(f->match, PAIR_EXPLAINED);
	assert_true(f->donor_agrees);
	assert_int_equal(f->step, 7);
	assert_non_null(strstr(f->why, "explained by a substitution from cmpl-k-4 at step 7"));
	/* token 2 lies in the chunk of tokens 1 and 2 the leak was found in; the
	 * buffer was k-4's, the canary named k-5 */
	f = failure_of(r, "cmpl-k-1");
	assert_int_equal(f->match, PAIR_EXPLAINED);
	assert_false(f->donor_agrees);
	assert_non_null(strstr(f->why, "the canary named k-5"));
	f = failure_of(r, "cmpl-k-2");
	assert_int_equal(f->match, PAIR_LEAK_UNEXPLAINED);
	assert_non_null(strstr(f->why, "a leak the audit does not explain"));
	f = failure_of(r, "cmpl-k-3");
	assert_int_equal(f->match, PAIR_NO_FOREIGN);
	assert_int_equal(r->n_explained, 2);
	assert_int_equal(r->n_leak_unexplained, 1);
	assert_int_equal(r->n_no_foreign, 1);
	pair_free(p);
}

static void test_reference_explains(void **state)
{
	/* r5 (prompt 4) diverged at 2; the reference request of prompt 4 (q4) got
	 * a stale token at token 2: the reference was wrong, not r5 */
	const char audit[] = MERGE(5, "q4", 12, 105);
	struct pair *p = build(RUNS, audit);
	const struct pair_failure *f = failure_of(run_named(p, "c"), "r5");

	(void)state;
	/* r5's prompt length comes from no audit event here: its own substitutions
	 * could not be placed, but the reference's can */
	assert_int_equal(f->match, PAIR_EXPLAINED);
	assert_true(f->in_reference);
	assert_non_null(strstr(f->why, "in the reference request"));
	pair_free(p);
}

static void test_empty_evidence(void **state)
{
	/* an audit with no merge event: nothing explained, said so */
	struct pair *p = build(RUNS, "{\"ev\":\"config\",\"slots\":1}\n");
	const struct pair_run *c = run_named(p, "c");

	(void)state;
	assert_int_equal(c->merges, 0);
	assert_int_equal(c->subst, 0);
	assert_int_equal(c->n_explained, 0);
	assert_int_equal(c->n_unexplained, 6);
	assert_string_equal(c->arm_verdict, "no-audit");
	assert_non_null(strstr(failure_of(c, "r1")->why, "no audit for this run"));
	pair_free(p);
}

/* A correctness run of n requests, all identical to the reference, one merge each. */
static char *clean_run(size_t n, bool with_merges, char **audit)
{
	char *runs = NULL, *aud = NULL;
	size_t nr = 0, na = 0, i;
	FILE *f = open_memstream(&runs, &nr), *g = open_memstream(&aud, &na);

	fprintf(f, "{\"kind\":\"run\",\"run_id\":\"z\",\"phase\":\"correctness\",\"identity\":"
		"{\"arm\":\"bare\",\"arm_state\":\"confirmed\"},\"wall_start\":100,\"wall_end\":200,"
		"\"correctness\":{}}\n");
	for (i = 0; i < n; i++) {
		fprintf(f, "{\"kind\":\"request\",\"run_id\":\"z\",\"index\":%zu,\"prompt_index\":%zu,"
			"\"id\":\"z%zu\",\"ok\":true,\"prompt_tokens\":10,\"verdict\":\"identical\"}\n", i, i, i);
		if (with_merges)
			fprintf(g, "{\"ev\":\"merge\",\"step\":%zu,\"host_pos\":[12],\"dev_pos\":[13],"
				"\"slot_req\":[\"z%zu\"],\"buf_req\":[\"z%zu\"],\"gen\":1,\"buf_gen\":1,"
				"\"taken\":[true]}\n", i + 1, i, i);
	}
	fclose(f);
	fclose(g);
	*audit = aud;
	return runs;
}

static void test_verdicts(void **state)
{
	char *audit, *runs;
	struct pair *p;
	const struct pair_run *z;

	(void)state;
	/* 0 of 192 failing: clean without a baseline, with the rates it rules out */
	runs = clean_run(192, true, &audit);
	p = build(runs, audit);
	z = run_named(p, "z");
	assert_int_equal(z->verdict, PAIR_PASS);
	assert_int_equal(z->merges, 192);
	assert_int_equal(z->merges_subst, 0);
	pair_free(p);
	/* against the seeds' 0.48%: 0 of 192 cannot rule it out; 767 would */
	build_baseline = 0.0048;
	p = build(runs, audit);
	z = run_named(p, "z");
	assert_int_equal(z->verdict, PAIR_INCONCLUSIVE);
	assert_int_equal(z->n_to_bound, 767);
	assert_non_null(strstr(z->verdict_why, "rules out only rates above 1.90% at 95%, not the baseline 0.48%"));
	assert_non_null(strstr(z->verdict_why, "767 requests would"));
	pair_free(p);
	free(runs);
	free(audit);
	/* 767 requests do */
	runs = clean_run(767, true, &audit);
	p = build(runs, audit);
	assert_int_equal(run_named(p, "z")->verdict, PAIR_PASS);
	pair_free(p);
	free(runs);
	free(audit);
	build_baseline = 0;
	/* no merge paired: the substitutions are not known, never clean */
	runs = clean_run(4, false, &audit);
	p = build(runs, "{\"ev\":\"config\",\"slots\":1}\n");
	z = run_named(p, "z");
	assert_int_equal(z->verdict, PAIR_INCONCLUSIVE);
	assert_non_null(strstr(z->verdict_why, "no merge event paired"));
	pair_free(p);
	free(runs);
	free(audit);
	/* a substitution, a failing request: FAIL */
	p = build(RUNS, MERGE(20, "r1", 13, 205) MERGE(21, "r1", 13, 205));
	assert_int_equal(run_named(p, "c")->verdict, PAIR_FAIL);
	assert_int_equal(run_named(p, "c")->merges_subst, 2);
	pair_free(p);
	/* a take no evidence can judge is not a clean one */
	runs = clean_run(1, false, &audit);
	p = build(runs, "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[12],\"dev_pos\":[13],"
		  "\"taken\":[true],\"t\":150}\n");
	z = run_named(p, "z");
	assert_int_equal(z->unverified, 1);
	assert_int_equal(z->verdict, PAIR_INCONCLUSIVE);
	pair_free(p);
	free(runs);
	free(audit);
}

static void test_time_window(void **state)
{
	/* merges without request ids join by wall time; ids of another client do not */
	const char audit[] =
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5],\"dev_pos\":[6],\"t\":205}\n"
		"{\"ev\":\"merge\",\"step\":2,\"host_pos\":[5],\"dev_pos\":[9],\"t\":211.5}\n"
		"{\"ev\":\"merge\",\"step\":3,\"host_pos\":[5],\"dev_pos\":[9],\"t\":150}\n"
		"{\"ev\":\"merge\",\"step\":4,\"host_pos\":[5],\"dev_pos\":[9],\"t\":205,"
		"\"slot_req\":[\"probe\"],\"buf_req\":[null]}\n";
	struct pair *p = build(RUNS, audit);
	const struct pair_run *c = run_named(p, "c");

	(void)state;
	assert_int_equal(c->by_time, 2);   /* inside, and 1.5 s after the end (slack 2) */
	assert_int_equal(c->by_id, 0);
	assert_int_equal(pair_merges_outside(p), 2);
	/* no `taken`: the declared arm's rule decides; bare takes step 1, staleness unknown */
	assert_false(c->actual_from_taken);
	assert_int_equal(c->taken, 1);
	assert_int_equal(c->unverified, 1);
	assert_string_equal(c->arm_verdict, "no-decisions");
	pair_free(p);
}

static void test_pid_filter(void **state)
{
	/* capture records of two processes; --pid keeps one */
	const char audit[] =
		"{\"src\":\"audit\",\"t\":205,\"mono\":0,\"pid\":7,\"tid\":7,\"fd\":2,"
		"\"event\":{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5],\"dev_pos\":[6]}}\n"
		"{\"src\":\"audit\",\"t\":206,\"mono\":0,\"pid\":8,\"tid\":8,\"fd\":2,"
		"\"event\":{\"ev\":\"merge\",\"step\":2,\"host_pos\":[5],\"dev_pos\":[6]}}\n";
	const char *rp[1], *ap[1];
	struct pair_opts o = { .slack_s = -1 };
	struct status_info si = { 0 };
	struct pair *p = NULL;

	(void)state;
	rp[0] = tmpfile_with("runs.jsonl", RUNS);
	ap[0] = tmpfile_with("cap.jsonl", audit);
	o.runs = rp;
	o.n_runs = 1;
	o.audits = ap;
	o.n_audits = 1;
	assert_int_equal(pair_build(&o, &p, &si), STATUS_OK);
	assert_int_equal(run_named(p, "c")->by_time, 2);
	assert_int_equal(run_named(p, "c")->n_pids, 2);
	pair_free(p);
	o.pid = 8;
	assert_int_equal(pair_build(&o, &p, &si), STATUS_OK);
	assert_int_equal(run_named(p, "c")->by_time, 1);
	assert_int_equal(run_named(p, "c")->n_pids, 1);
	assert_int_equal(run_named(p, "c")->pids[0], 8);
	assert_int_equal(pair_merges_outside(p), 1);
	pair_free(p);
}

static void test_mono_window(void **state)
{
	/* with monotonic times on both sides they decide, not the wall clock */
	const char runs[] =
		"{\"kind\":\"run\",\"run_id\":\"m\",\"phase\":\"bench\",\"wall_start\":1000,"
		"\"wall_end\":1010,\"mono_start\":50,\"mono_end\":60}\n";
	const char audit[] =
		"{\"src\":\"audit\",\"t\":5000,\"mono\":55,\"pid\":7,\"tid\":7,\"fd\":2,"
		"\"event\":{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5],\"dev_pos\":[6]}}\n"
		"{\"src\":\"audit\",\"t\":1005,\"mono\":90,\"pid\":7,\"tid\":7,\"fd\":2,"
		"\"event\":{\"ev\":\"merge\",\"step\":2,\"host_pos\":[5],\"dev_pos\":[6]}}\n";
	struct pair *p = build(runs, audit);

	(void)state;
	assert_int_equal(run_named(p, "m")->by_time, 1);
	assert_int_equal(pair_merges_outside(p), 1);
	pair_free(p);
}

static void test_contradicted(void **state)
{
	/* declared stamp; the recorded decisions take a slot whose stamps differ */
	const char runs[] =
		"{\"kind\":\"run\",\"run_id\":\"s\",\"phase\":\"bench\",\"identity\":{\"arm\":\"stamp\"},"
		"\"wall_start\":1,\"wall_end\":2}\n"
		"{\"kind\":\"request\",\"run_id\":\"s\",\"index\":0,\"id\":\"a\",\"ok\":true}\n";
	const char audit[] =
		"{\"ev\":\"merge\",\"step\":9,\"host_pos\":[5],\"dev_pos\":[6],\"gen\":2,\"buf_gen\":1,"
		"\"slot_req\":[\"a\"],\"buf_req\":[\"b\"],\"taken\":[true]}\n";
	struct pair *p = build(runs, audit);
	const struct pair_run *r = run_named(p, "s");

	(void)state;
	assert_string_equal(r->arm_verdict, "contradicted");
	assert_int_equal(r->subst, 1);
	assert_int_equal(r->substs[0].token, -1);   /* no prompt length anywhere */
	assert_string_equal(r->substs[0].outcome, "no-verdict");
	pair_free(p);
}

/* The engine's request ids are `<external id>-<8 hex>`: an audit written
 * inside the model holds those; the join strips the suffix, and also knows
 * the X-Request-Id the client sent. */
static void test_engine_suffix(void **state)
{
	const char runs[] =
		"{\"kind\":\"run\",\"run_id\":\"s\",\"phase\":\"bench\",\"identity\":{\"arm\":\"bare\"},"
		"\"wall_start\":1,\"wall_end\":2}\n"
		"{\"kind\":\"request\",\"run_id\":\"s\",\"index\":0,\"id\":\"cmpl-9f0c-1\","
		"\"request_id\":\"9f0c-1\",\"ok\":true,\"prompt_tokens\":10,\"verdict\":\"diverged\",\"diverged_at\":3}\n"
		"{\"kind\":\"request\",\"run_id\":\"s\",\"index\":1,\"id\":\"chatcmpl-x\","
		"\"request_id\":\"9f0c-2\",\"ok\":true}\n";
	const char audit[] =
		MERGE(20, "cmpl-9f0c-1-0be5c9d4", 13, 500)   /* vLLM: response id + engine suffix */
		MERGE(21, "9f0c-2-a1b2c3d4", 13, 500)        /* a server that uses the header as is */
		MERGE(22, "cmpl-9f0c-1-0BE5C9D4", 13, 500);  /* upper case hex is no engine suffix */
	struct pair *p = build(runs, audit);
	const struct pair_run *r = run_named(p, "s");

	(void)state;
	assert_int_equal(r->by_id, 2);
	assert_int_equal(pair_merges_outside(p), 1);
	assert_int_equal(r->subst, 2);
	/* the substitution is attributed to the request under its own id */
	assert_string_equal(failure_of(r, "cmpl-9f0c-1")->match == PAIR_EXPLAINED ? "explained" : "other",
			    "explained");
	pair_free(p);
}

static void test_bad_input(void **state)
{
	const char *rp[1], *ap[1];
	struct pair_opts o = { .slack_s = -1 };
	struct status_info si = { 0 };
	struct pair *p = NULL;
	FILE *diag = fopen("/dev/null", "w");

	(void)state;
	o.runs = rp;
	o.n_runs = 1;
	o.audits = ap;
	o.n_audits = 1;
	o.diag = diag;
	ap[0] = tmpfile_with("a.jsonl", "");
	rp[0] = "/nonexistent/runs.jsonl";
	assert_int_equal(pair_build(&o, &p, &si), STATUS_IO);
	assert_null(p);
	assert_non_null(strstr(si.file, "runs.jsonl"));
	rp[0] = tmpfile_with("norun.jsonl", "{\"kind\":\"request\",\"run_id\":\"x\"}\nnot json\n");
	status_info_clear(&si);
	assert_int_equal(pair_build(&o, &p, &si), STATUS_PARSE);
	assert_non_null(strstr(si.msg, "no run record"));
	/* a malformed line is counted, the rest is read */
	rp[0] = tmpfile_with("ok.jsonl", "{\"kind\":\"run\",\"run_id\":\"x\"}\n{oops\n");
	ap[0] = tmpfile_with("bad-audit.jsonl", "{\"ev\":\"merge\",\"step\":1}\n");
	assert_int_equal(pair_build(&o, &p, &si), STATUS_OK);
	assert_int_equal(pair_malformed(p), 2);
	pair_free(p);
	/* a line over the cap is skipped and counted, the next one read */
	{
		static char path[512];
		FILE *f;
		size_t i;

		snprintf(path, sizeof(path), "%s/long.jsonl", dir);
		f = fopen(path, "w");
		assert_non_null(f);
		fputs("{\"kind\":\"x\",\"pad\":\"", f);
		for (i = 0; i < RECORD_MAX_LINE / 64 + 1; i++)
			fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", f);
		fputs("\"}\n{\"kind\":\"run\",\"run_id\":\"after\"}\n", f);
		fclose(f);
		rp[0] = path;
		ap[0] = tmpfile_with("empty.jsonl", "");
		assert_int_equal(pair_build(&o, &p, &si), STATUS_OK);
		assert_int_equal(pair_malformed(p), 1);
		assert_int_equal(pair_n_runs(p), 1);
		assert_string_equal(pair_run_at(p, 0)->run_id, "after");
		pair_free(p);
	}
	o.n_runs = 0;
	assert_int_equal(pair_build(&o, &p, &si), STATUS_USAGE);
	fclose(diag);
}

static void test_series(void **state)
{
	const char *paths[1];
	struct report_series s[4];
	struct status_info si = { 0 };
	size_t n;
	const char runs[] =
		"{\"kind\":\"run\",\"run_id\":\"r\",\"phase\":\"reference\",\"identity\":{\"arm\":\"a\"},"
		"\"figures\":{\"makespan_s\":9}}\n"
		"{\"kind\":\"request\",\"run_id\":\"r\",\"phase\":\"reference\",\"arm\":\"a\",\"ok\":true,\"ttft_s\":9}\n"
		"{\"kind\":\"run\",\"run_id\":\"x\",\"phase\":\"bench\",\"identity\":{\"arm\":\"a\"},"
		"\"figures\":{\"makespan_s\":2}}\n"
		"{\"kind\":\"request\",\"run_id\":\"x\",\"phase\":\"bench\",\"arm\":\"a\",\"ok\":true,\"ttft_s\":0.5}\n"
		"{\"kind\":\"request\",\"run_id\":\"x\",\"phase\":\"bench\",\"arm\":\"a\",\"ok\":false,\"ttft_s\":7}\n"
		"{\"kind\":\"run\",\"run_id\":\"y\",\"phase\":\"bench\",\"identity\":{\"arm\":\"b\"},"
		"\"figures\":{\"makespan_s\":3}}\n";

	(void)state;
	paths[0] = tmpfile_with("series.jsonl", runs);
	assert_int_equal(report_series_read(paths, 1, s, 4, &n, &si), STATUS_OK);
	assert_int_equal(n, 2);
	assert_string_equal(s[0].name, "a");
	assert_int_equal(s[0].n_ttft, 1);          /* reference and failed requests left out */
	assert_true(s[0].ttft[0] == 0.5);
	assert_int_equal(s[0].n_makespan, 1);
	assert_true(s[1].makespan[0] == 3);
	report_series_release(s, n);
	assert_int_equal(report_series_read(paths, 1, s, 1, &n, &si), STATUS_LIMIT);
	paths[0] = tmpfile_with("refonly.jsonl", "{\"kind\":\"run\",\"run_id\":\"r\",\"phase\":\"reference\"}\n");
	assert_int_equal(report_series_read(paths, 1, s, 4, &n, &si), STATUS_PARSE);
}

/* Servers benched without arm names are two series, by their place, not one. */
static void test_series_unnamed(void **state)
{
	const char *paths[1];
	struct report_series s[4];
	struct status_info si = { 0 };
	size_t n;
	const char runs[] =
		"{\"kind\":\"run\",\"run_id\":\"x\",\"phase\":\"bench\",\"arm_index\":0,\"identity\":{\"arm\":null},"
		"\"figures\":{\"makespan_s\":2}}\n"
		"{\"kind\":\"request\",\"run_id\":\"x\",\"phase\":\"bench\",\"arm_index\":0,\"arm\":null,\"ok\":true,"
		"\"ttft_s\":0.5}\n"
		"{\"kind\":\"run\",\"run_id\":\"y\",\"phase\":\"bench\",\"arm_index\":1,\"identity\":{\"arm\":null},"
		"\"figures\":{\"makespan_s\":3}}\n"
		"{\"kind\":\"request\",\"run_id\":\"y\",\"phase\":\"bench\",\"arm_index\":1,\"arm\":null,\"ok\":true,"
		"\"ttft_s\":0.7}\n"
		"{\"kind\":\"run\",\"run_id\":\"z\",\"phase\":\"bench\",\"identity\":{},\"figures\":{\"makespan_s\":4}}\n";

	(void)state;
	paths[0] = tmpfile_with("unnamed.jsonl", runs);
	assert_int_equal(report_series_read(paths, 1, s, 4, &n, &si), STATUS_OK);
	assert_int_equal(n, 3);
	assert_string_equal(s[0].name, "server 0");
	assert_int_equal(s[0].n_ttft, 1);
	assert_true(s[0].ttft[0] == 0.5);
	assert_string_equal(s[1].name, "server 1");
	assert_true(s[1].makespan[0] == 3);
	assert_string_equal(s[2].name, "none");    /* records from before arm_index */
	report_series_release(s, n);
}

/* A line the figures cannot read stops them, named: none is left out unsaid. */
static void test_series_malformed(void **state)
{
	const char *paths[1];
	struct report_series s[4];
	struct status_info si = { 0 };
	static char path[512];
	size_t n, i;
	FILE *f;

	(void)state;
	paths[0] = tmpfile_with("nokind.jsonl",
				"{\"kind\":\"run\",\"run_id\":\"x\",\"phase\":\"bench\",\"figures\":{\"makespan_s\":2}}\n"
				"{\"run_id\":\"x\",\"phase\":\"bench\"}\n");
	assert_int_equal(report_series_read(paths, 1, s, 4, &n, &si), STATUS_PARSE);
	assert_int_equal(si.line, 2);
	assert_non_null(strstr(si.msg, "without kind"));
	snprintf(path, sizeof(path), "%s", tmpfile_with("serieslong.jsonl", ""));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("{\"kind\":\"run\",\"run_id\":\"x\",\"phase\":\"bench\",\"figures\":{\"makespan_s\":2}}\n", f);
	fputs("{\"kind\":\"request\",\"pad\":\"", f);
	for (i = 0; i < RECORD_MAX_LINE / 64 + 1; i++)
		fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", f);
	fputs("\"}\n", f);
	fclose(f);
	paths[0] = path;
	status_info_clear(&si);
	assert_int_equal(report_series_read(paths, 1, s, 4, &n, &si), STATUS_PARSE);
	assert_int_equal(si.line, 2);
	assert_non_null(strstr(si.msg, "longer than the cap"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attribution),
		cmocka_unit_test(test_canary_leaks),
		cmocka_unit_test(test_reference_explains),
		cmocka_unit_test(test_empty_evidence),
		cmocka_unit_test(test_verdicts),
		cmocka_unit_test(test_time_window),
		cmocka_unit_test(test_pid_filter),
		cmocka_unit_test(test_mono_window),
		cmocka_unit_test(test_contradicted),
		cmocka_unit_test(test_engine_suffix),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_series_unnamed),
		cmocka_unit_test(test_series_malformed),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
