/* test_ttsim_model.c - ttsim's generator model and offline run: the keep
 * reading the device's trace buffers as the last decode of their key left
 * them (slot reuse, host-sampled stretches, width buckets, the slot remap of
 * the condense and its fallbacks), the guards on it, substitutions against
 * the sequential reference, determinism, aborts and limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "tools/ttsim/model.h"
#include "tools/ttsim/vocab.h"
#include "tools/ttsim/run.h"

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

static struct ttsim_model *new_model_gen(int slots, unsigned arm, enum ttsim_generator gen)
{
	struct ttsim_model_config c;
	struct ttsim_model *m = NULL;
	struct ttsim_model_sink sink = { on_token, on_finish, NULL };

	ttsim_model_config_default(&c);
	c.slots = slots;
	c.arm = c.arm_claimed = arm;
	c.generator = gen;
	c.seed = 7;
	assert_int_equal(ttsim_model_new(&c, &m, NULL), STATUS_OK);
	ttsim_model_set_sink(m, &sink);
	memset(seen, 0, sizeof(seen));
	return m;
}

static struct ttsim_model *new_model(int slots, unsigned arm)
{
	return new_model_gen(slots, arm, TTSIM_GEN_QWEN36);
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
 * One slot. A (10 prompt, 5 tokens) leaves the trace's row at position 15
 * (its last replay); B (15 prompt) fills the row at host_pos 15: the keep
 * after B's prefill matches dev_pos == host_pos and hands B A's token unless
 * the row is masked as prefilled (the generic path, or Qwen3.6 with the
 * prefilled arm's patch) or a guard refuses.
 */
static void reuse_case(unsigned arm, enum ttsim_generator gen, bool want_sub)
{
	struct ttsim_model *m = new_model_gen(1, arm, gen);
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
	reuse_case(0, TTSIM_GEN_QWEN36, true);              /* the mask is inert there */
	reuse_case(TTSIM_RULE_BATCH, TTSIM_GEN_QWEN36, true);  /* same active pattern: blind */
	reuse_case(TTSIM_RULE_PREFILLED, TTSIM_GEN_QWEN36, false);
	reuse_case(TTSIM_RULE_STAMP, TTSIM_GEN_QWEN36, false);
	reuse_case(TTSIM_RULE_LIFETIME, TTSIM_GEN_QWEN36, false);
	reuse_case(0, TTSIM_GEN_GENERIC, false);             /* the helper masks the row */
}

/* A fresh buffer from the same request is taken and changes nothing. */
static void test_fresh_takes_harmless(void **state)
{
	struct ttsim_model *m = new_model(2, 0);
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

static struct ttsim_run_result run_gen(unsigned arm, enum ttsim_generator gen, double host,
				       double garbage, const char *audit_path)
{
	struct ttsim_run_config c;
	struct ttsim_run_result r;
	struct ttsim_audit *a = NULL;
	struct status_info si;

	ttsim_run_config_default(&c);
	c.steps = 12000;
	c.model.seed = 1;
	c.model.arm = c.model.arm_claimed = arm;
	c.model.generator = gen;
	c.model.host_sampling = host;
	c.model.garbage_rate = garbage;
	if (audit_path)
		assert_int_equal(ttsim_audit_open(audit_path, false, &a, &si), STATUS_OK);
	assert_int_equal(ttsim_run(&c, a, &r, &si), STATUS_OK);
	if (a)
		assert_int_equal(ttsim_audit_lost(a), 0);
	ttsim_audit_free(a);
	return r;
}

static struct ttsim_run_result run_with(unsigned arm, double host, double garbage,
					const char *audit_path)
{
	return run_gen(arm, TTSIM_GEN_QWEN36, host, garbage, audit_path);
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
	struct ttsim_run_result bare, stamp, batch, pre, pre0, gen0, gen, life;

	(void)state;
	/* slot reuse and host-sampled stretches */
	bare = run_with(0, 0.05, 0, NULL);
	assert_true(bare.st.host_sampled > 1000);
	assert_true(bare.st.substitutions > 20);
	assert_true(bare.diverged > 20);
	check_explained(&bare);
	assert_int_equal(rule_of(&bare, 0)->substitutions, bare.st.substitutions);
	/* Qwen3.6's prefill leaves the prefilled set empty: on this audit the
	 * mask would change nothing */
	assert_int_equal(rule_of(&bare, TTSIM_RULE_PREFILLED)->substitutions, bare.st.substitutions);
	assert_int_equal(rule_of(&bare, TTSIM_RULE_STAMP)->substitutions, 0);
	assert_int_equal(rule_of(&bare, TTSIM_RULE_STAMP)->prevented, bare.st.substitutions);
	assert_int_equal(rule_of(&bare, TTSIM_RULE_LIFETIME)->substitutions, 0);

	/* a per-request stamp refuses exactly the other requests' rows */
	stamp = run_with(TTSIM_RULE_STAMP, 0.05, 0, NULL);
	assert_int_equal(stamp.st.substitutions, 0);
	assert_int_equal(stamp.diverged, 0);
	assert_int_equal(rule_of(&stamp, TTSIM_RULE_STAMP)->forgone, 0);
	assert_true(stamp.st.forgone > 0);
	assert_true(stamp.finished > 1000);

	/* a full batch: every buffer has the batch's active pattern */
	batch = run_with(TTSIM_RULE_BATCH, 0.05, 0, NULL);
	assert_int_equal(rule_of(&batch, TTSIM_RULE_BATCH)->substitutions, batch.st.substitutions);
	assert_true(batch.st.substitutions > 0);
	check_explained(&batch);

	/* the prefilled arm restores the set: it stops slot reuse, and lets
	 * through the buffers that outlived it (written before a host-sampled
	 * stretch) */
	pre0 = run_with(TTSIM_RULE_PREFILLED, 0, 0, NULL);
	assert_int_equal(pre0.st.substitutions, 0);
	assert_true(rule_of(&pre0, TTSIM_RULE_PREFILLED)->prevented > 0);
	pre = run_with(TTSIM_RULE_PREFILLED, 0.05, 0, NULL);
	assert_true(pre.st.substitutions > 0);
	assert_true(pre.st.substitutions < bare.st.substitutions);
	check_explained(&pre);

	/* the generic path masks prefilled rows itself */
	gen0 = run_gen(0, TTSIM_GEN_GENERIC, 0, 0, NULL);
	assert_int_equal(gen0.st.substitutions, 0);
	assert_true(rule_of(&gen0, 0)->substitutions > 0);
	gen = run_gen(0, TTSIM_GEN_GENERIC, 0.05, 0, NULL);
	assert_true(gen.st.substitutions > 0);
	assert_int_equal(rule_of(&gen, TTSIM_RULE_PREFILLED)->substitutions, gen.st.substitutions);

	life = run_with(TTSIM_RULE_LIFETIME, 0.05, 0, NULL);
	assert_int_equal(life.st.substitutions, 0);
}

static void test_engaged_equals_rule(void **state)
{
	static const unsigned arms[] = { 0, TTSIM_RULE_PREFILLED, TTSIM_RULE_BATCH,
		TTSIM_RULE_BOUND, TTSIM_RULE_BATCH | TTSIM_RULE_PREFILLED };
	struct ttsim_run_result r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(arms) / sizeof(arms[0]); i++) {
		r = run_with(arms[i], 0.05, 0.3, NULL);
		assert_int_equal(rule_of(&r, arms[i])->substitutions, r.st.substitutions);
		assert_int_equal(rule_of(&r, arms[i])->merges, r.st.merges);
		check_explained(&r);
		/* the generic path: the arm and the helper's mask */
		r = run_gen(arms[i], TTSIM_GEN_GENERIC, 0.05, 0.3, NULL);
		assert_int_equal(rule_of(&r, arms[i] | TTSIM_RULE_PREFILLED)->substitutions,
				 r.st.substitutions);
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
	a = run_with(0, 0.05, 0.2, p1);
	b = run_with(0, 0.05, 0.2, p2);
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
	assert_non_null(strstr(s1, "\"generator\":\"qwen36\",\"trace_key\":\"(on_device_sampling, batch)\","
			       "\"host_sampling\":0.05,\"decode_buckets\":[]"));
	assert_non_null(strstr(s1, "{\"ev\":\"trace\",\"step\":"));
	assert_non_null(strstr(s1, "\"key\":\"(False, 8)\""));
	assert_null(strstr(s1, "refresh"));
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
		m = new_model(slots, TTSIM_RULE_STAMP);
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
	struct ttsim_model *m = new_model(1, 0);
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

/* The merge audit of a run, one parsed object per line (caller frees). */
static cJSON **read_audit(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	cJSON **v = NULL;
	size_t cap = 0;
	char *line = NULL;
	size_t lcap = 0;

	assert_non_null(f);
	*n = 0;
	while (getline(&line, &lcap, f) > 0) {
		assert_int_equal(ALLOC_GROW(v, *n + 1, cap), 0);
		v[*n] = cJSON_Parse(line);
		assert_non_null(v[*n]);
		(*n)++;
	}
	free(line);
	fclose(f);
	return v;
}

static const char *ev_of(const cJSON *o)
{
	return cJSON_GetObjectItem(o, "ev")->valuestring;
}

/* Runs 4000 ticks of the closed-loop workload and reads back its audit. */
static cJSON **audit_of_run(unsigned long long seed, double host, struct ttsim_run_result *r,
			    size_t *n)
{
	char path[] = "/tmp/ttsim-run.XXXXXX";
	int fd = mkstemp(path);
	struct ttsim_run_config c;
	struct ttsim_audit *a = NULL;
	struct status_info si;
	cJSON **v;

	assert_true(fd >= 0);
	close(fd);
	ttsim_run_config_default(&c);
	c.steps = 4000;
	c.model.seed = seed;
	c.model.host_sampling = host;
	assert_int_equal(ttsim_audit_open(path, false, &a, &si), STATUS_OK);
	assert_int_equal(ttsim_run(&c, a, r, &si), STATUS_OK);
	ttsim_audit_free(a);
	v = read_audit(path, n);
	unlink(path);
	return v;
}

static void free_audit(cJSON **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		cJSON_Delete(v[i]);
	free(v);
}

/*
 * The keep reads the device's trace inputs as the last decode of the same
 * trace left them (tt-metal generator.py: trace_inputs_decode[key][i],
 * rewritten by every replay), not a host copy refreshed now and then: every
 * decode writes a trace event, a merge's buf_step is the step of the latest
 * one, and a row whose request is still the one the buffer was written for
 * is exactly one ahead of the host.
 */
static void test_keep_reads_last_replay(void **state)
{
	struct ttsim_run_result r;
	cJSON **v;
	size_t n, i;
	long long last_trace = -1, decodes = 0, traced = 0, merges = 0, same = 0;
	int s;

	(void)state;
	v = audit_of_run(1, 0, &r, &n);
	for (i = 0; i < n; i++) {
		const char *ev = ev_of(v[i]);
		long long step = cJSON_GetObjectItem(v[i], "step") ?
			(long long)cJSON_GetObjectItem(v[i], "step")->valuedouble : -1;

		if (!strcmp(ev, "trace")) {
			last_trace = step;
			traced++;
		} else if (!strcmp(ev, "decode")) {
			decodes++;
		} else if (!strcmp(ev, "merge")) {
			cJSON *hp = cJSON_GetObjectItem(v[i], "host_pos");
			cJSON *dp = cJSON_GetObjectItem(v[i], "dev_pos");
			cJSON *sr = cJSON_GetObjectItem(v[i], "slot_req");
			cJSON *br = cJSON_GetObjectItem(v[i], "buf_req");

			merges++;
			assert_int_equal((long long)cJSON_GetObjectItem(v[i], "buf_step")->valuedouble,
					 last_trace);
			for (s = 0; s < cJSON_GetArraySize(hp); s++) {
				cJSON *a1 = cJSON_GetArrayItem(sr, s), *b1 = cJSON_GetArrayItem(br, s);

				if (!cJSON_IsString(a1) || !cJSON_IsString(b1) ||
				    strcmp(a1->valuestring, b1->valuestring))
					continue;
				same++;
				assert_int_equal((long long)cJSON_GetArrayItem(dp, s)->valuedouble,
						 (long long)cJSON_GetArrayItem(hp, s)->valuedouble + 1);
			}
		}
	}
	/* one replay or restage per decode (one data-parallel chunk) */
	assert_true(decodes > 1000);
	assert_int_equal(traced, decodes);
	assert_true(merges > 100 && same > 100);
	free_audit(v, n);
}

/* The merge events of an audit file, in order (caller frees with cJSON_Delete). */
static cJSON *merges_of(const char *path)
{
	cJSON **v, *out = cJSON_CreateArray();
	size_t n, i;

	v = read_audit(path, &n);
	for (i = 0; i < n; i++) {
		if (!strcmp(ev_of(v[i]), "merge"))
			cJSON_AddItemToArray(out, v[i]);
		else
			cJSON_Delete(v[i]);
	}
	free(v);
	return out;
}

static struct ttsim_model *model_to(const char *path, int slots, struct ttsim_audit **a,
				    const int *buckets, int n_buckets, int max_prefills)
{
	struct ttsim_model_config c;
	struct ttsim_model *m = NULL;
	struct ttsim_model_sink sink = { on_token, on_finish, NULL };
	int i;

	ttsim_model_config_default(&c);
	c.slots = slots;
	c.seed = 7;
	c.max_prefills = max_prefills;
	for (i = 0; i < n_buckets; i++)
		c.buckets[i] = buckets[i];
	c.n_buckets = n_buckets;
	assert_int_equal(ttsim_model_new(&c, &m, NULL), STATUS_OK);
	ttsim_model_set_sink(m, &sink);
	memset(seen, 0, sizeof(seen));
	assert_int_equal(ttsim_audit_open(path, false, a, NULL), STATUS_OK);
	ttsim_model_set_audit(m, *a);
	return m;
}

/*
 * The condense and its slot remap: A (row 0) finishes with nothing waiting,
 * C moves from row 2 to row 0, and the keep compares row 0 with device row 2
 * (where C's data is): C's own token, one ahead, taken, no substitution.
 */
static void test_condense_remap(void **state)
{
	char path[] = "/tmp/ttsim-remap.XXXXXX";
	int fd = mkstemp(path), pa[10], pb[12], pc[14];
	struct ttsim_audit *a = NULL;
	struct ttsim_model *m;
	struct ttsim_model_stats st;
	cJSON *mg, *e, *row0;
	int found = 0, i;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	m = model_to(path, 3, &a, NULL, 0, 3);
	prompt_of(pa, 10, 1);
	prompt_of(pb, 12, 2);
	prompt_of(pc, 14, 3);
	assert_int_equal(ttsim_model_submit(m, "a", pa, 10, 3, (void *)0, NULL, NULL), 0);
	assert_int_equal(ttsim_model_submit(m, "b", pb, 12, 40, (void *)1, NULL, NULL), 0);
	assert_int_equal(ttsim_model_submit(m, "c", pc, 14, 40, (void *)2, NULL, NULL), 0);
	drain(m);
	ttsim_model_stats(m, &st);
	assert_int_equal(st.substitutions, 0);
	ttsim_audit_free(a);
	ttsim_model_free(m);
	mg = merges_of(path);
	cJSON_ArrayForEach(e, mg) {
		row0 = cJSON_GetArrayItem(cJSON_GetObjectItem(e, "slot_req"), 0);
		if (!cJSON_IsString(row0) || strcmp(row0->valuestring, "c"))
			continue;
		found++;
		assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "buf_req"), 0)->valuestring, "c");
		assert_int_equal((long long)cJSON_GetArrayItem(cJSON_GetObjectItem(e, "dev_pos"), 0)->valuedouble,
				 (long long)cJSON_GetArrayItem(cJSON_GetObjectItem(e, "host_pos"), 0)->valuedouble + 1);
		assert_true(cJSON_IsTrue(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "taken"), 0)));
		/* the row C left is padding now */
		assert_int_equal((long long)cJSON_GetArrayItem(cJSON_GetObjectItem(e, "host_pos"), 2)->valuedouble, -1);
	}
	assert_int_equal(found, 1);
	for (i = 0; i < 3; i++) {
		int ref[40];

		ttsim_model_reference(7, i == 0 ? pa : i == 1 ? pb : pc, 10 + 2 * i, i ? 40 : 3, ref);
		assert_memory_equal(seen[i].toks, ref, (size_t)(i ? 40 : 3) * sizeof(int));
	}
	cJSON_Delete(mg);
	unlink(path);
}

/*
 * Width buckets 2 and 4: A and B run at width 2 (that trace is captured),
 * C and D join (width 4), A and B finish together; the condense moves D and
 * C into rows 0 and 1, the batch is width 2 again, and the keep reads the
 * width-2 trace, last written before C and D existed, through a remap that
 * points at rows 3 and 2: outside it, so host tokens (the slot_remap
 * fallback), audited with no device rows.
 */
static void test_remap_fallback(void **state)
{
	static const int buckets[] = { 2, 4 };
	char path[] = "/tmp/ttsim-fb.XXXXXX";
	int fd = mkstemp(path), p[4][16], i;
	struct ttsim_audit *a = NULL;
	struct ttsim_model *m;
	struct ttsim_model_stats st;
	cJSON *mg, *e;
	int fb = 0;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	m = model_to(path, 4, &a, buckets, 2, 2);
	for (i = 0; i < 4; i++) {
		char id[4] = { (char)('a' + i), 0 };

		prompt_of(p[i], 10 + i, i);
		assert_int_equal(ttsim_model_submit(m, id, p[i], 10 + i, i < 2 ? 3 : 30,
						    (void *)(intptr_t)i, NULL, NULL), 0);
	}
	drain(m);
	ttsim_model_stats(m, &st);
	assert_int_equal(st.fallbacks, 1);
	assert_int_equal(st.substitutions, 0);
	ttsim_audit_free(a);
	ttsim_model_free(m);
	mg = merges_of(path);
	cJSON_ArrayForEach(e, mg) {
		cJSON *f = cJSON_GetObjectItem(e, "fallback");

		if (!f)
			continue;
		fb++;
		assert_string_equal(f->valuestring, "slot_remap");
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(e, "dev_pos")), 0);
		assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(e, "host_pos")), 2);
		assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "slot_req"), 0)->valuestring, "d");
		assert_null(cJSON_GetObjectItem(e, "buf_req"));
		assert_false(cJSON_IsTrue(cJSON_GetArrayItem(cJSON_GetObjectItem(e, "taken"), 0)));
	}
	assert_int_equal(fb, 1);
	cJSON_Delete(mg);
	unlink(path);
}

/*
 * Host sampling: the decodes of a batch holding a request the device cannot
 * sample run the (False, width) trace and leave the on-device one as it was;
 * the keep after such a stretch reads a buffer older than the last decode,
 * and only then. Every merge's buf_step is its key's latest trace event.
 */
static void test_host_sampled_stretch(void **state)
{
	struct ttsim_run_result r;
	cJSON **v;
	size_t n, i;
	long long last_on = -1, last_decode = -1, stale = 0, fresh = 0;
	bool last_host = false;

	(void)state;
	v = audit_of_run(2, 0.05, &r, &n);
	assert_true(r.st.host_sampled > 0 && r.st.host_sampled < r.st.decodes);
	for (i = 0; i < n; i++) {
		const char *ev = ev_of(v[i]);
		cJSON *step = cJSON_GetObjectItem(v[i], "step");

		if (!strcmp(ev, "trace")) {
			const char *key = cJSON_GetObjectItem(v[i], "key")->valuestring;

			last_host = !strcmp(key, "(False, 8)");
			if (!last_host) {
				assert_string_equal(key, "(True, 8)");
				last_on = (long long)step->valuedouble;
			}
			/* host sampling restages every time */
			if (last_host)
				assert_string_equal(cJSON_GetObjectItem(v[i], "op")->valuestring, "restage");
		} else if (!strcmp(ev, "merge")) {
			long long bs = (long long)cJSON_GetObjectItem(v[i], "buf_step")->valuedouble;

			assert_int_equal(bs, last_on);
			if (bs < last_decode) {
				stale++;
				assert_true(last_host);
			} else {
				fresh++;
			}
		} else if (!strcmp(ev, "decode")) {
			last_decode = (long long)step->valuedouble;
		}
	}
	assert_true(stale > 10 && fresh > 10);
	free_audit(v, n);
}

/* The echo's distribution agrees with generation: a prompt's reference output
 * is the greedy top at every position (a copy task's pieces too), the
 * runner-up is never the top, and near ties come only where asked for. */
static void test_score_matches_generation(void **state)
{
	int seq[40], i, top, alt, n_near = 0, k;
	bool near;

	(void)state;
	for (k = 0; k < 2; k++) {
		static const char copy[] = "please copy this Code: AB12 CD34 EF56 and then stop";

		for (i = 0; i < 10; i++)
			seq[i] = 100 + 7 * i;
		if (k == 1)
			assert_int_equal(ttsim_vocab_tokenize(copy, strlen(copy), seq, 10), 10);
		ttsim_model_reference(7, seq, 10, 30, seq + 10);
		for (i = 10; i < 40; i++) {
			ttsim_model_score(7, 0, seq, 40, i, &top, &alt, &near);
			assert_int_equal(top, seq[i]);
			assert_int_not_equal(alt, top);
			assert_false(near);
			assert_true(ttsim_model_lp(seq[i], top, alt, near) > ttsim_model_lp(alt, top, alt, near));
		}
	}
	for (i = 10; i < 40; i++) {
		ttsim_model_score(7, 0.5, seq, 40, i, &top, &alt, &near);
		n_near += near;
	}
	assert_true(n_near == 0);   /* the copy task above: no near ties in a copy */
	for (i = 0; i < 10; i++)
		seq[i] = 100 + 7 * i;
	ttsim_model_reference(7, seq, 10, 30, seq + 10);
	for (i = 10; i < 40; i++) {
		ttsim_model_score(7, 0.5, seq, 40, i, &top, &alt, &near);
		n_near += near;
		if (near)
			assert_true(ttsim_model_lp(top, top, alt, near) - ttsim_model_lp(alt, top, alt, near) < 0.05);
	}
	assert_true(n_near > 3 && n_near < 27);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot_reuse_bare),
		cmocka_unit_test(test_score_matches_generation),
		cmocka_unit_test(test_fresh_takes_harmless),
		cmocka_unit_test(test_defect_and_stamp),
		cmocka_unit_test(test_engaged_equals_rule),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_concurrency_independent),
		cmocka_unit_test(test_abort_and_limits),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_keep_reads_last_replay),
		cmocka_unit_test(test_condense_remap),
		cmocka_unit_test(test_remap_fallback),
		cmocka_unit_test(test_host_sampled_stretch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
