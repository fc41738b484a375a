/* test_ttsim_model.c - ttsim's generator model and offline run: determinism,
 * the stale-merge defect and its guards, substitutions against the
 * sequential reference, aborts and limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "../tools/ttsim/model.h"
#include "../tools/ttsim/run.h"

#define OUT_MAX 256
#define REQ_MAX 16

/* What the sink saw for each request (user = index into this table). */
struct seen {
	int toks[OUT_MAX], n;
	bool finished, aborted;
	struct ttsim_req_result res;
};
static struct seen seen[REQ_MAX];

static void on_token(void *ctx, void *user, int index, int tok)
{
	struct seen *s = &seen[(intptr_t)user];

	(void)ctx;
	assert_int_equal(index, s->n);
	s->toks[s->n++] = tok;
}

static void on_finish(void *ctx, void *user, const struct ttsim_req_result *res)
{
	struct seen *s = &seen[(intptr_t)user];

	(void)ctx;
	s->finished = true;
	s->aborted = res->aborted;
	s->res = *res;
}

static struct ttsim_model *new_model(int slots, unsigned arm, int refresh)
{
	struct ttsim_model_config c;
	struct ttsim_model *m = NULL;
	struct ttsim_model_sink sink = { on_token, on_finish, NULL };

	ttsim_model_config_default(&c);
	c.slots = slots;
	c.arm = c.arm_claimed = arm;
	c.refresh_every = refresh;
	c.seed = 7;
	assert_int_equal(ttsim_model_new(&c, &m, NULL), STATUS_OK);
	ttsim_model_set_sink(m, &sink);
	memset(seen, 0, sizeof(seen));
	return m;
}

static void prompt_of(int *p, int n, int salt)
{
	int i;

	for (i = 0; i < n; i++)
		p[i] = (i * 37 + salt * 101) % 2048;
}

static void drain(struct ttsim_model *m)
{
	struct ttsim_step st;
	int guard = 0;

	do {
		ttsim_model_step(m, &st);
		assert_true(++guard < 100000);
	} while (st.kind != TTSIM_STEP_IDLE);
}

/*
 * One slot, fresh host copy. A (10 prompt, 5 tokens) leaves its device slot
 * at position 15; B (15 prompt) starts at host_pos 15: the merge after B's
 * prefill matches dev_pos == host_pos and, under bare, hands B A's token.
 */
static void reuse_case(unsigned arm, bool want_sub)
{
	struct ttsim_model *m = new_model(1, arm, 1);
	struct ttsim_model_stats st;
	int pa[10], pb[15], ref[8], i;

	prompt_of(pa, 10, 1);
	prompt_of(pb, 15, 2);
	assert_int_equal(ttsim_model_submit(m, "req-a", pa, 10, 5, (void *)0, NULL, NULL), 0);
	assert_int_equal(ttsim_model_submit(m, "req-b", pb, 15, 8, (void *)1, NULL, NULL), 0);
	drain(m);
	ttsim_model_stats(m, &st);
	assert_true(seen[0].finished && seen[1].finished);
	assert_int_equal(seen[1].n, 8);
	ttsim_model_reference(7, pb, 15, 8, ref);
	ttsim_model_reference(7, pa, 10, 5, seen[2].toks);
	assert_memory_equal(seen[0].toks, seen[2].toks, 5 * sizeof(int));
	if (want_sub) {
		assert_int_equal(st.substitutions, 1);
		assert_int_equal(seen[1].res.n_subs, 1);
		assert_int_equal(seen[1].res.first_sub, 0);
		/* differs from the substituted position on */
		for (i = 0; i < 8; i++)
			assert_int_not_equal(seen[1].toks[i], ref[i]);
	} else {
		assert_int_equal(st.substitutions, 0);
		assert_int_equal(seen[1].res.n_subs, 0);
		assert_memory_equal(seen[1].toks, ref, 8 * sizeof(int));
	}
	ttsim_model_free(m);
}

static void test_slot_reuse_bare(void **state)
{
	(void)state;
	reuse_case(0, true);
	reuse_case(TTSIM_RULE_BATCH, true);      /* same active pattern: batch is blind */
	reuse_case(TTSIM_RULE_PREFILLED, false);
	reuse_case(TTSIM_RULE_STAMP, false);
	reuse_case(TTSIM_RULE_LIFETIME, false);
}

/* A fresh buffer from the same request is taken and changes nothing. */
static void test_fresh_takes_harmless(void **state)
{
	struct ttsim_model *m = new_model(2, 0, 1);
	struct ttsim_model_stats st;
	int pa[12], pb[20], ref[40];

	(void)state;
	prompt_of(pa, 12, 3);
	prompt_of(pb, 20, 4);
	assert_int_equal(ttsim_model_submit(m, "a", pa, 12, 6, (void *)0, NULL, NULL), 0);
	assert_int_equal(ttsim_model_submit(m, "b", pb, 20, 40, (void *)1, NULL, NULL), 0);
	drain(m);
	ttsim_model_stats(m, &st);
	assert_true(st.takes > 0);
	assert_int_equal(st.substitutions, 0);
	ttsim_model_reference(7, pb, 20, 40, ref);
	assert_memory_equal(seen[1].toks, ref, 40 * sizeof(int));
	ttsim_model_free(m);
}

static struct ttsim_run_result run_with(unsigned arm, int refresh, double garbage,
					const char *audit_path)
{
	struct ttsim_run_config c;
	struct ttsim_run_result r;
	struct ttsim_audit *a = NULL;
	struct status_info si;

	ttsim_run_config_default(&c);
	c.steps = 12000;
	c.model.seed = 1;
	c.model.arm = c.model.arm_claimed = arm;
	c.model.refresh_every = refresh;
	c.model.garbage_rate = garbage;
	if (audit_path)
		assert_int_equal(ttsim_audit_open(audit_path, false, &a, &si), STATUS_OK);
	assert_int_equal(ttsim_run(&c, a, &r, &si), STATUS_OK);
	if (a)
		assert_int_equal(ttsim_audit_lost(a), 0);
	ttsim_audit_free(a);
	return r;
}

static const struct ttsim_rule_stats *rule_of(const struct ttsim_run_result *r, unsigned mask)
{
	int i;

	for (i = 0; i < r->n_rules; i++)
		if (r->rule_mask[i] == mask)
			return &r->rule[i];
	fail_msg("rule %u not tracked", mask);
	return NULL;
}

/* Every output that departs from the reference departs at a substitution,
 * and every changed substitution shows in the output. */
static void check_explained(const struct ttsim_run_result *r)
{
	assert_int_equal(r->diverged_unexplained, 0);
	assert_int_equal(r->diverged + r->changed_undiverged, r->st.with_subs);
}

static void test_defect_and_stamp(void **state)
{
	struct ttsim_run_result bare, stamp, batch, pre;

	(void)state;
	bare = run_with(0, 4, 0, NULL);
	assert_true(bare.st.substitutions > 5);
	assert_true(bare.diverged > 5);
	check_explained(&bare);
	assert_int_equal(rule_of(&bare, 0)->substitutions, bare.st.substitutions);
	/* the stale buffer outlives the prefilled set: that mask lets some through */
	assert_true(rule_of(&bare, TTSIM_RULE_PREFILLED)->substitutions > 0);
	assert_int_equal(rule_of(&bare, TTSIM_RULE_STAMP)->substitutions, 0);
	assert_int_equal(rule_of(&bare, TTSIM_RULE_STAMP)->prevented, bare.st.substitutions);

	stamp = run_with(TTSIM_RULE_STAMP, 4, 0, NULL);
	assert_int_equal(stamp.st.substitutions, 0);
	assert_int_equal(stamp.diverged, 0);
	assert_true(stamp.st.forgone > 0);
	assert_true(stamp.finished > 1000);

	batch = run_with(TTSIM_RULE_BATCH, 4, 0, NULL);
	assert_int_equal(rule_of(&batch, TTSIM_RULE_BATCH)->substitutions, batch.st.substitutions);
	check_explained(&batch);

	/* with a host copy refreshed every decode, the slot-reuse mask suffices */
	pre = run_with(0, 1, 0, NULL);
	assert_true(pre.st.substitutions > 0);
	assert_int_equal(rule_of(&pre, TTSIM_RULE_PREFILLED)->substitutions, 0);
}

static void test_engaged_equals_rule(void **state)
{
	static const unsigned arms[] = { 0, TTSIM_RULE_PREFILLED, TTSIM_RULE_BATCH,
		TTSIM_RULE_BOUND, TTSIM_RULE_BATCH | TTSIM_RULE_PREFILLED };
	struct ttsim_run_result r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(arms) / sizeof(arms[0]); i++) {
		r = run_with(arms[i], 3, 0.3, NULL);
		assert_int_equal(rule_of(&r, arms[i])->substitutions, r.st.substitutions);
		assert_int_equal(rule_of(&r, arms[i])->merges, r.st.merges);
		check_explained(&r);
	}
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void test_determinism(void **state)
{
	char p1[] = "/tmp/ttsim-det1.XXXXXX", p2[] = "/tmp/ttsim-det2.XXXXXX";
	int f1 = mkstemp(p1), f2 = mkstemp(p2);
	struct ttsim_run_result a, b;
	size_t l1, l2;
	char *s1, *s2;

	(void)state;
	assert_true(f1 >= 0 && f2 >= 0);
	close(f1);
	close(f2);
	a = run_with(0, 4, 0.2, p1);
	b = run_with(0, 4, 0.2, p2);
	assert_memory_equal(&a.st, &b.st, sizeof(a.st));
	s1 = slurp(p1, &l1);
	s2 = slurp(p2, &l2);
	assert_true(l1 > 100000);
	assert_int_equal(l1, l2);
	assert_memory_equal(s1, s2, l1);
	/* the audit carries every ground-truth field */
	assert_non_null(strstr(s1, "\"buf_step\":"));
	assert_non_null(strstr(s1, "\"buf_slot_gen\":["));
	assert_non_null(strstr(s1, "\"buf_req\":["));
	assert_non_null(strstr(s1, "\"taken\":["));
	assert_non_null(strstr(s1, "\"arm\":\"bare\""));
	assert_non_null(strstr(s1, "{\"ev\":\"config\",\"slots\":8,\"max_model_len\":131072"));
	free(s1);
	free(s2);
	unlink(p1);
	unlink(p2);
}

/* The same prompts give the same outputs at any concurrency under stamp. */
static void test_concurrency_independent(void **state)
{
	int p[REQ_MAX][30], ref[40], slots, i;
	char id[16];
	struct ttsim_model *m;

	(void)state;
	for (slots = 1; slots <= 8; slots *= 8) {
		m = new_model(slots, TTSIM_RULE_STAMP, 5);
		for (i = 0; i < REQ_MAX; i++) {
			prompt_of(p[i], 10 + i, i);
			snprintf(id, sizeof(id), "r%d", i);
			assert_int_equal(ttsim_model_submit(m, id, p[i], 10 + i, 20 + i,
							    (void *)(intptr_t)i, NULL, NULL), 0);
		}
		drain(m);
		for (i = 0; i < REQ_MAX; i++) {
			ttsim_model_reference(7, p[i], 10 + i, 20 + i, ref);
			assert_int_equal(seen[i].n, 20 + i);
			assert_memory_equal(seen[i].toks, ref, (size_t)(20 + i) * sizeof(int));
		}
		ttsim_model_free(m);
	}
}

static void test_abort_and_limits(void **state)
{
	struct ttsim_model *m = new_model(1, 0, 4);
	struct ttsim_step st;
	unsigned long long h1, h2;
	int p[8];
	struct status_info si;

	(void)state;
	prompt_of(p, 8, 9);
	assert_int_equal(ttsim_model_submit(m, "a", p, 8, 50, (void *)0, &h1, NULL), 0);
	assert_int_equal(ttsim_model_submit(m, "b", p, 8, 50, (void *)1, &h2, NULL), 0);
	ttsim_model_step(m, &st);
	assert_int_equal(st.kind, TTSIM_STEP_PREFILL);
	ttsim_model_step(m, &st);
	assert_int_equal(st.kind, TTSIM_STEP_DECODE);
	assert_int_equal(ttsim_model_running(m), 1);
	assert_int_equal(ttsim_model_waiting(m), 1);
	assert_true(ttsim_model_abort(m, h2));
	assert_true(seen[1].aborted);
	assert_true(ttsim_model_abort(m, h1));
	assert_true(seen[0].aborted);
	assert_false(ttsim_model_abort(m, h1));
	assert_int_equal(ttsim_model_running(m), 0);
	ttsim_model_step(m, &st);
	assert_int_equal(st.kind, TTSIM_STEP_IDLE);
	status_info_clear(&si);
	assert_int_equal(ttsim_model_submit(m, "c", p, 8, 131072, NULL, NULL, &si), STATUS_LIMIT);
	assert_non_null(strstr(si.msg, "max_model_len"));
	assert_int_equal(ttsim_model_submit(m, "d", p, 0, 5, NULL, NULL, NULL), STATUS_LIMIT);
	ttsim_model_free(m);
}

/* Garbage in idle device slots: float32 bit patterns, a batch guard that fires. */
static void test_garbage(void **state)
{
	struct ttsim_model_config c;
	struct ttsim_model *m = NULL;
	struct ttsim_audit *a = NULL;
	char path[] = "/tmp/ttsim-garb.XXXXXX";
	int fd = mkstemp(path), p[8], i;
	char *text, *g;
	size_t len;
	long long v;
	int32_t bits;
	float f;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	ttsim_model_config_default(&c);
	c.slots = 4;
	c.garbage_rate = 1.0;
	c.refresh_every = 1;
	assert_int_equal(ttsim_model_new(&c, &m, NULL), 0);
	assert_int_equal(ttsim_model_track(m, TTSIM_RULE_BATCH), 0);
	assert_int_equal(ttsim_audit_open(path, false, &a, NULL), 0);
	ttsim_model_set_audit(m, a);
	prompt_of(p, 8, 1);
	assert_int_equal(ttsim_model_submit(m, "x", p, 8, 30, NULL, NULL, NULL), 0);
	assert_int_equal(ttsim_model_submit(m, "y", p, 8, 10, NULL, NULL, NULL), 0);
	drain(m);
	assert_true(ttsim_model_rule_stats(m, TTSIM_RULE_BATCH)->fired > 0);
	ttsim_audit_free(a);
	ttsim_model_free(m);
	text = slurp(path, &len);
	/* find a garbage position in a merge's dev_pos */
	g = strstr(text, "\"dev_pos\":[");
	assert_non_null(g);
	for (i = 0, v = 0; g && i < 100; i++) {
		char *q = g + 11;

		while (*q && *q != ']') {
			v = strtoll(q, &q, 10);
			if (v > 1000000)
				break;
			if (*q == ',')
				q++;
		}
		if (v > 1000000)
			break;
		g = strstr(g + 1, "\"dev_pos\":[");
	}
	assert_true(v > 1000000);
	bits = (int32_t)v;
	memcpy(&f, &bits, sizeof(f));
	assert_true(f >= 100000.0f && f < 200100.0f);
	free(text);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot_reuse_bare),
		cmocka_unit_test(test_fresh_takes_harmless),
		cmocka_unit_test(test_defect_and_stamp),
		cmocka_unit_test(test_engaged_equals_rule),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_concurrency_independent),
		cmocka_unit_test(test_abort_and_limits),
		cmocka_unit_test(test_garbage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
