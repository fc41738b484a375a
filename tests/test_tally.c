/* test_tally.c - the counts per rule, garbage, max_pos scoping and the arm fingerprint. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "analyzer/tally.h"
#include "tests/testutil.h"

enum { BARE, PREFILLED, BATCH, LIFETIME, STAMP, BOUND, N_RULES };


/* The six base rules, in table order (the enum above). */
static struct tally *mk(int64_t max_pos)
{
	struct rule rs[N_RULES];
	struct tally *t;

	assert_int_equal(rule_list_default(rs, N_RULES), N_RULES);
	t = tally_new(rs, N_RULES, max_pos);
	assert_non_null(t);
	return t;
}

/*
 * The ten headline counts of rule r as one string, so a test states them all:
 * merges taken subst unverif prevent forgone rej_unverif fired skipped shape.
 */
static const char *counts(const struct tally *t, size_t r)
{
	static char buf[256];
	const struct tally_counts *c = tally_counts(t, r);

	snprintf(buf, sizeof(buf), "m%llu t%llu s%llu u%llu p%llu f%llu ru%llu fi%llu sk%llu sh%llu",
		 (unsigned long long)c->merges, (unsigned long long)c->taken,
		 (unsigned long long)c->substitutions, (unsigned long long)c->unverified,
		 (unsigned long long)c->prevented, (unsigned long long)c->forgone,
		 (unsigned long long)c->rejected_unverified, (unsigned long long)c->fired,
		 (unsigned long long)c->skipped, (unsigned long long)c->shape_fallback);
	return buf;
}

/* The confirmed incident with request ids, buf_step 103 and taken = bare's decision. */
static void incident(struct fx *f)
{
	static const int64_t host[] = { 22, 25, 27, 25, 22, 25, 27, 27 };
	static const int64_t dev[] = { 29, -1, -1, -1, -1, -1, -1, 28 };
	static const char *const sreq[] = { "r41", "r42", "r43", "r44", "r45", "r46", "r47", "r48" };

	FX(f, 141, host, dev);
	f->m.reset_batch = true;
	f->m.has_prefilled = true;
	f->m.has_buf_step = true;
	f->m.buf_step = 103;
	f->m.has_req = true;
	memcpy(f->slot_req, sreq, sizeof(sreq));
	f->buf_req[0] = "r33";
	f->buf_req[7] = "r40";
	f->m.has_taken = true;
	f->taken[7] = 1;
}

struct seen {
	size_t n;
	struct tally_subst last;
	uint32_t slot_sum;
};

static void observe(void *ctx, const struct tally_subst *s)
{
	struct seen *sn = ctx;

	sn->n++;
	sn->last = *s;
	sn->slot_sum += s->slot;
}

static void test_incident_counts(void **state)
{
	struct tally *t = mk(0);
	const struct tally_counts *c;
	struct seen sn = { 0 };
	struct fx f;

	(void)state;
	incident(&f);
	tally_set_observer(t, observe, &sn);
	tally_merge(t, &f.m, "a.jsonl", 2);
	assert_string_equal(counts(t, BARE), "m1 t1 s1 u0 p0 f0 ru0 fi0 sk0 sh0");
	assert_string_equal(counts(t, PREFILLED), "m1 t1 s1 u0 p0 f0 ru0 fi0 sk0 sh0");
	assert_string_equal(counts(t, BATCH), "m1 t0 s0 u0 p1 f0 ru0 fi1 sk0 sh0");
	assert_string_equal(counts(t, LIFETIME), "m1 t0 s0 u0 p1 f0 ru0 fi1 sk0 sh0");
	assert_string_equal(counts(t, STAMP), "m1 t0 s0 u0 p0 f0 ru0 fi0 sk1 sh0");
	assert_string_equal(counts(t, BOUND), "m1 t0 s0 u0 p0 f0 ru0 fi0 sk1 sh0");
	c = tally_counts(t, BARE);
	assert_int_equal(c->bare_taken, 1);
	assert_int_equal(c->taken_by[EVIDENCE_REQUEST], 1);
	assert_int_equal(c->subst_by[EVIDENCE_REQUEST], 1);
	assert_int_equal(c->taken_by[EVIDENCE_UNKNOWN], 0);
	assert_int_equal(c->subst_by[EVIDENCE_STAMP], 0);
	c = tally_counts(t, BATCH);
	assert_int_equal(c->bare_taken, 1);
	assert_int_equal(c->taken_by[EVIDENCE_REQUEST], 0);
	assert_int_equal(tally_counts(t, STAMP)->bare_taken, 0);   /* skipped: nothing */
	/* the observer saw bare's and prefilled's substitution of slot 7 */
	assert_int_equal(sn.n, 2);
	assert_int_equal(sn.slot_sum, 14);
	assert_int_equal(sn.last.rule, PREFILLED);
	assert_int_equal(sn.last.slot, 7);
	assert_int_equal(sn.last.evidence, EVIDENCE_REQUEST);
	assert_string_equal(sn.last.file, "a.jsonl");
	assert_int_equal(sn.last.line, 2);
	assert_ptr_equal(sn.last.m, &f.m);
	/* no garbage: -1 is inactive, not garbage */
	assert_int_equal(tally_garbage(t)->count, 0);
	assert_int_equal(tally_not_evaluable(t, BARE), 0);
	assert_int_equal(tally_not_evaluable(t, STAMP), 1);
	assert_int_equal(tally_not_evaluable(t, BOUND), 1);
	tally_free(t);
}

/* A fresh bare take that a guard refuses is forgone; without evidence it is neither. */
static void test_forgone_and_rejected_unverified(void **state)
{
	static const int64_t host[] = { 10, 11, -1 };
	static const int64_t dev[] = { 11, -1, 5 };
	struct tally *t = mk(0);
	struct fx f;

	(void)state;
	FX(&f, 100, host, dev);
	f.m.has_buf_step = true;
	f.m.buf_step = 99;              /* lifetime evidence: fresh */
	tally_merge(t, &f.m, "x", 1);
	assert_string_equal(counts(t, BATCH), "m1 t0 s0 u0 p0 f1 ru0 fi1 sk0 sh0");
	assert_string_equal(counts(t, BARE), "m1 t1 s0 u0 p0 f0 ru0 fi0 sk0 sh0");
	assert_string_equal(counts(t, LIFETIME), "m1 t1 s0 u0 p0 f0 ru0 fi0 sk0 sh0");
	assert_int_equal(tally_counts(t, BARE)->taken_by[EVIDENCE_LIFETIME], 1);
	tally_free(t);

	t = mk(0);
	f.m.has_buf_step = false;       /* no evidence at all */
	tally_merge(t, &f.m, "x", 1);
	assert_string_equal(counts(t, BATCH), "m1 t0 s0 u0 p0 f0 ru1 fi1 sk0 sh0");
	assert_string_equal(counts(t, BARE), "m1 t1 s0 u1 p0 f0 ru0 fi0 sk0 sh0");
	assert_int_equal(tally_counts(t, BARE)->taken_by[EVIDENCE_UNKNOWN], 1);
	tally_free(t);
}

/* Positions only: takes are unverified, nothing is a substitution, guards are not evaluable. */
static void test_empty_evidence(void **state)
{
	static const int64_t h1[] = { 22, 25, 27, 25, 22, 25, 27, 27 };
	static const int64_t d1[] = { 29, -1, -1, -1, -1, -1, -1, 28 };
	static const int64_t h2[] = { 10, 10, 12, 50 };
	static const int64_t d2[] = { 10, 11, 12, 13 };
	struct tally *t = mk(0);
	struct fx f;
	struct tally_fingerprint fp;

	(void)state;
	FX(&f, 141, h1, d1);
	tally_merge(t, &f.m, "legacy", 1);
	FX(&f, 230, h2, d2);
	tally_merge(t, &f.m, "legacy", 2);
	assert_string_equal(counts(t, BARE), "m2 t4 s0 u4 p0 f0 ru0 fi0 sk0 sh0");
	assert_string_equal(counts(t, BATCH), "m2 t3 s0 u3 p0 f0 ru1 fi1 sk0 sh0");
	assert_string_equal(counts(t, PREFILLED), "m2 t0 s0 u0 p0 f0 ru0 fi0 sk2 sh0");
	assert_string_equal(counts(t, LIFETIME), "m2 t0 s0 u0 p0 f0 ru0 fi0 sk2 sh0");
	assert_string_equal(counts(t, STAMP), "m2 t0 s0 u0 p0 f0 ru0 fi0 sk2 sh0");
	assert_string_equal(counts(t, BOUND), "m2 t0 s0 u0 p0 f0 ru0 fi0 sk2 sh0");
	assert_int_equal(tally_not_evaluable(t, BARE), 0);
	assert_int_equal(tally_not_evaluable(t, BATCH), 0);
	assert_int_equal(tally_not_evaluable(t, PREFILLED), 1);
	assert_int_equal(tally_not_evaluable(t, LIFETIME), 1);
	assert_int_equal(tally_not_evaluable(t, STAMP), 1);
	assert_int_equal(tally_not_evaluable(t, BOUND), 1);
	tally_fingerprint(t, &fp);
	assert_int_equal(fp.verdict, TALLY_NO_TAKEN);
	assert_int_equal(fp.events_with_taken, 0);
	assert_int_equal(fp.n_consistent, 0);
	tally_free(t);

	/* no merge events at all: not evaluable, for every rule */
	t = mk(0);
	assert_int_equal(tally_not_evaluable(t, BARE), 1);
	assert_int_equal(tally_not_evaluable(t, BATCH), 1);
	tally_free(t);
}

/* Stale takes counted per evidence class: stamp and lifetime. */
static void test_substitutions_by_evidence(void **state)
{
	static const int64_t host[] = { 128851, 128738, 128751, 128855, -1, -1, -1, -1 };
	static const int64_t dev[] = { 128852, 128852, 1206993122, 128842, -1, -1, -1, -1 };
	struct tally *t = mk(131072);
	const struct tally_counts *c;
	struct fx f;

	(void)state;
	/* the coinciding residual: slot 0 stale by its slot stamp */
	FX(&f, 202, host, dev);
	f.m.has_buf_step = true;
	f.m.buf_step = 91;
	f.m.has_slot_gen = true;
	f.slot_gen[0] = 7;
	f.buf_slot_gen[0] = 4;
	tally_merge(t, &f.m, "x", 1);
	assert_string_equal(counts(t, BATCH), "m1 t1 s1 u0 p0 f0 ru0 fi0 sk0 sh0");
	assert_string_equal(counts(t, LIFETIME), "m1 t0 s0 u0 p1 f0 ru0 fi1 sk0 sh0");
	assert_string_equal(counts(t, STAMP), "m1 t0 s0 u0 p1 f0 ru0 fi1 sk0 sh0");
	assert_string_equal(counts(t, BOUND), "m1 t1 s1 u0 p0 f0 ru0 fi1 sk0 sh0");
	c = tally_counts(t, BATCH);
	assert_int_equal(c->subst_by[EVIDENCE_STAMP], 1);
	assert_int_equal(c->taken_by[EVIDENCE_STAMP], 1);
	assert_int_equal(c->subst_by[EVIDENCE_REQUEST], 0);
	assert_int_equal(c->subst_by[EVIDENCE_LIFETIME], 0);
	/* the same event known only by buf_step: lifetime evidence */
	f.m.has_slot_gen = false;
	tally_merge(t, &f.m, "x", 2);
	c = tally_counts(t, BATCH);
	assert_int_equal(c->substitutions, 2);
	assert_int_equal(c->merges_subst, 2);
	assert_int_equal(tally_counts(t, LIFETIME)->merges_subst, 0);
	assert_int_equal(c->subst_by[EVIDENCE_LIFETIME], 1);
	assert_int_equal(c->subst_by[EVIDENCE_STAMP], 1);
	/* stamp is skipped now, lifetime still prevents */
	assert_string_equal(counts(t, STAMP), "m2 t0 s0 u0 p1 f0 ru0 fi1 sk1 sh0");
	assert_string_equal(counts(t, LIFETIME), "m2 t0 s0 u0 p2 f0 ru0 fi2 sk0 sh0");
	tally_free(t);
}

static void test_merges_with_substitution(void **state)
{
	/* two slots of one merge read one stale buffer: two substitutions, one
	 * merge with a substitution (the trial a rate counts) */
	static const int64_t host[] = { 5, 9 };
	static const int64_t dev[] = { 6, 9 };
	struct tally *t = mk(131072);
	struct fx f;

	(void)state;
	FX(&f, 10, host, dev);
	f.m.has_gen = true;
	f.m.gen = 3;
	f.m.buf_gen = 2;
	tally_merge(t, &f.m, "x", 1);
	assert_int_equal(tally_counts(t, BARE)->substitutions, 2);
	assert_int_equal(tally_counts(t, BARE)->merges_subst, 1);
	/* a fresh merge adds a merge, no substitution */
	f.m.buf_gen = 3;
	tally_merge(t, &f.m, "x", 2);
	assert_int_equal(tally_counts(t, BARE)->merges, 2);
	assert_int_equal(tally_counts(t, BARE)->merges_subst, 1);
	assert_int_equal(tally_counts(t, STAMP)->merges_subst, 0);
	tally_free(t);
}

static void test_fired(void **state)
{
	static const int64_t host[] = { -1, -1 };
	static const int64_t dev[] = { 5, 1206993122 };
	static const int64_t h2[] = { 128738, 128751, -1 };
	static const int64_t d2[] = { 128852, 1206993122, -1 };
	struct tally *t = mk(131072);
	struct fx f;

	(void)state;
	/* no active slot: no rule fires, whatever the buffer holds */
	FX(&f, 10, host, dev);
	tally_merge(t, &f.m, "x", 1);
	assert_string_equal(counts(t, BATCH), "m1 t0 s0 u0 p0 f0 ru0 fi0 sk0 sh0");
	assert_string_equal(counts(t, BOUND), "m1 t0 s0 u0 p0 f0 ru0 fi0 sk0 sh0");
	/* a guard that refuses a slot fires even when bare takes nothing */
	FX(&f, 11, h2, d2);
	tally_merge(t, &f.m, "x", 2);
	assert_string_equal(counts(t, BOUND), "m2 t0 s0 u0 p0 f0 ru0 fi1 sk0 sh0");
	assert_string_equal(counts(t, BATCH), "m2 t0 s0 u0 p0 f0 ru0 fi0 sk0 sh0");
	assert_string_equal(counts(t, BARE), "m2 t0 s0 u0 p0 f0 ru0 fi0 sk0 sh0");
	assert_int_equal(tally_garbage(t)->count, 2);   /* the inactive slot's garbage counts */
	tally_free(t);
}

static void test_shape_fallback(void **state)
{
	static const int64_t host[] = { 5, 6, 7, 8, 9, 10, 11, 12 };
	static const int64_t dev[] = { 6, 1206993122, 8, 9 };
	static const int64_t h2[] = { 5, -1 };
	static const int64_t d2[] = { 6, -1, 99, 1206993122 };
	struct tally *t = mk(0);
	struct tally_fingerprint fp;
	size_t r;
	struct fx f;

	(void)state;
	FX(&f, 50, host, dev);
	f.m.has_taken = true;
	f.taken[0] = 1;
	tally_merge(t, &f.m, "x", 1);
	for (r = 0; r < N_RULES; r++) {
		assert_string_equal(counts(t, r), "m1 t0 s0 u0 p0 f0 ru0 fi0 sk0 sh1");
		assert_int_equal(tally_not_evaluable(t, r), 1);
		assert_int_equal(tally_counts(t, r)->fp_evaluated, 0);
		assert_int_equal(tally_counts(t, r)->bare_taken, 0);
	}
	assert_int_equal(tally_garbage(t)->count, 0);
	tally_fingerprint(t, &fp);
	assert_int_equal(fp.verdict, TALLY_NO_TAKEN);
	/* D > H: the tail is padding; nothing beyond H is garbage */
	FX(&f, 51, h2, d2);
	tally_merge(t, &f.m, "x", 2);
	assert_string_equal(counts(t, BARE), "m2 t1 s0 u1 p0 f0 ru0 fi0 sk0 sh1");
	assert_string_equal(counts(t, BATCH), "m2 t1 s0 u1 p0 f0 ru0 fi0 sk0 sh1");
	assert_string_equal(counts(t, LIFETIME), "m2 t0 s0 u0 p0 f0 ru0 fi0 sk1 sh1");
	assert_int_equal(tally_not_evaluable(t, BARE), 0);
	assert_int_equal(tally_not_evaluable(t, LIFETIME), 1);
	assert_int_equal(tally_garbage(t)->count, 0);
	tally_free(t);
}

static void test_float32(void **state)
{
	double d = 0;

	(void)state;
	assert_int_equal(tally_float32(1206993122, &d), 1);
	assert_true(d == 123521.765625);
	assert_int_equal(tally_float32_like(1206993122), 1);
	assert_int_equal(tally_float32(1206993233, &d), 1);
	assert_true(d == 123522.6328125);
	/* -7 is 0xfffffff9: a NaN pattern */
	assert_int_equal(tally_float32(-7, &d), 0);
	assert_int_equal(tally_float32_like(-7), 0);
	assert_int_equal(tally_float32_like(0x7fffffff), 0);     /* NaN */
	assert_int_equal(tally_float32_like(0x7fc00000), 0);     /* quiet NaN */
	assert_int_equal(tally_float32_like(0x7f800000), 0);     /* +inf */
	assert_int_equal(tally_float32_like(-8388608), 0);      /* 0xff800000: -inf */
	assert_int_equal(tally_float32_like(INT64_C(0x80000000)), 0);   /* beyond int32 */
	assert_int_equal(tally_float32(INT64_C(1) << 40, &d), 0);
	assert_int_equal(tally_float32(INT32_MIN - INT64_C(1), &d), 0);
	assert_int_equal(tally_float32(0, &d), 1);               /* 0.0: finite, not like */
	assert_true(d == 0.0);
	assert_int_equal(tally_float32_like(0), 0);
	assert_int_equal(tally_float32_like(0x3f800000), 1);     /* 1.0 */
	assert_int_equal(tally_float32_like(0x3f7fffff), 0);     /* just under 1 */
	assert_int_equal(tally_float32_like(0x4b800000), 1);     /* 2^24 */
	assert_int_equal(tally_float32_like(0x4b800001), 0);     /* 2^24 + 2 */
	assert_int_equal(tally_float32_like(-1082130432), 1);    /* 0xbf800000: -1.0 */
	assert_int_equal(tally_float32(INT32_MIN, &d), 1);       /* 0x80000000: -0.0 */
	assert_true(d == 0.0);
	assert_int_equal(tally_float32_like(INT32_MIN), 0);
	assert_int_equal(tally_float32_like(150), 0);            /* a denormal */
}

static void test_garbage(void **state)
{
	static const int64_t host[] = { 10, -1, 10, -1, 10, 10 };
	static const int64_t dev[] = { 16777216, 16777215, -2, 1206993122, -7, -1, 1206993122 };
	const struct tally_garbage *g;
	struct tally *t = mk(0);
	struct fx f;
	size_t i;

	(void)state;
	FX(&f, 5, host, dev);
	tally_merge(t, &f.m, "x", 1);
	g = tally_garbage(t);
	/* default bound 2^24; -1 is not garbage; the padding slot 6 does not count */
	assert_int_equal(g->count, 4);
	assert_int_equal(g->float32_like, 1);
	assert_int_equal(g->n_values, 4);
	assert_int_equal(g->values[0].value, 16777216);
	assert_int_equal(g->values[1].value, -2);
	assert_int_equal(g->values[2].value, 1206993122);
	assert_int_equal(g->values[3].value, -7);
	assert_int_equal(g->values_dropped, 0);
	tally_merge(t, &f.m, "x", 2);
	assert_int_equal(g->count, 8);
	assert_int_equal(g->float32_like, 2);
	assert_int_equal(g->n_values, 4);
	for (i = 0; i < 4; i++)
		assert_int_equal(g->values[i].n, 2);
	tally_free(t);

	/* distinct values are remembered up to the cap; the rest are still counted */
	{
		static const int64_t h1[] = { 1 };
		int64_t d1[1];
		t = mk(0);
		g = tally_garbage(t);
		for (i = 0; i < TALLY_GARBAGE_VALUES + 3; i++) {
			d1[0] = -100 - (int64_t)i;
			FX(&f, (int64_t)i, h1, d1);
			tally_merge(t, &f.m, "x", 1);
		}
		d1[0] = -100;                   /* an already kept value */
		FX(&f, 99, h1, d1);
		tally_merge(t, &f.m, "x", 1);
		assert_int_equal(g->count, TALLY_GARBAGE_VALUES + 4);
		assert_int_equal(g->n_values, TALLY_GARBAGE_VALUES);
		assert_int_equal(g->values_dropped, 3);
		/* a value that found the list full counts again at each position */
		d1[0] = -100 - (int64_t)TALLY_GARBAGE_VALUES;
		FX(&f, 100, h1, d1);
		tally_merge(t, &f.m, "x", 1);
		assert_int_equal(g->values_dropped, 4);
		assert_int_equal(g->count, TALLY_GARBAGE_VALUES + 5);
		assert_int_equal(g->values[0].value, -100);
		assert_int_equal(g->values[0].n, 2);
		assert_int_equal(g->values[TALLY_GARBAGE_VALUES - 1].value,
				 -100 - (TALLY_GARBAGE_VALUES - 1));
		assert_int_equal(g->float32_like, 0);
		tally_free(t);
	}
}

static void test_max_pos_scoping(void **state)
{
	static const int64_t host[] = { 999, 4095, 131071 };
	static const int64_t dev[] = { 1000, 4096, 131072 };
	struct config_event cfg = { .slots = 3, .has_max_model_len = true, .max_model_len = 4096 };
	struct config_event none = { 0 }, zero = { .has_max_model_len = true };
	struct tally *t;
	struct fx f;

	(void)state;
	FX(&f, 7, host, dev);
	/* unknown: garbage from 2^24, bound skipped */
	t = mk(0);
	assert_int_equal(tally_max_pos(t), 0);
	tally_merge(t, &f.m, "a", 1);
	assert_int_equal(tally_garbage(t)->count, 0);
	assert_string_equal(counts(t, BOUND), "m1 t0 s0 u0 p0 f0 ru0 fi0 sk1 sh0");
	/* a config applies to the merges after it */
	tally_config(t, &cfg);
	assert_int_equal(tally_max_pos(t), 4096);
	tally_merge(t, &f.m, "a", 3);
	assert_int_equal(tally_garbage(t)->count, 2);   /* 4096 and 131072 */
	assert_string_equal(counts(t, BOUND), "m2 t1 s0 u1 p0 f0 ru2 fi1 sk1 sh0");
	/* a config without max_model_len keeps the bound in force */
	tally_config(t, &none);
	assert_int_equal(tally_max_pos(t), 4096);
	/* one of 0 says the length is not known: no bound from here on */
	tally_config(t, &zero);
	assert_int_equal(tally_max_pos(t), 0);
	tally_config(t, &cfg);
	/* the next file starts without it */
	tally_begin_file(t);
	assert_int_equal(tally_max_pos(t), 0);
	tally_merge(t, &f.m, "b", 1);
	assert_int_equal(tally_garbage(t)->count, 2);
	assert_string_equal(counts(t, BOUND), "m3 t1 s0 u1 p0 f0 ru2 fi1 sk2 sh0");
	tally_free(t);

	/* --max-pos wins over config, in every file */
	t = mk(1000);
	assert_int_equal(tally_max_pos(t), 1000);
	tally_config(t, &cfg);
	assert_int_equal(tally_max_pos(t), 1000);
	tally_merge(t, &f.m, "a", 1);
	assert_int_equal(tally_garbage(t)->count, 3);
	assert_string_equal(counts(t, BOUND), "m1 t0 s0 u0 p0 f0 ru3 fi1 sk0 sh0");
	tally_begin_file(t);
	assert_int_equal(tally_max_pos(t), 1000);
	tally_free(t);
}

static void test_fingerprint(void **state)
{
	static const int64_t h1[] = { 10, 10, 12, 50 };
	static const int64_t d1[] = { 10, 11, 12, 13 };
	struct tally_fingerprint fp;
	struct tally *t;
	struct fx f;

	(void)state;
	assert_string_equal(tally_verdict_name(TALLY_NO_TAKEN), "NO_TAKEN");
	assert_string_equal(tally_verdict_name(TALLY_CONSISTENT), "CONSISTENT");
	assert_string_equal(tally_verdict_name(TALLY_WITHHELD), "WITHHELD");
	assert_string_equal(tally_verdict_name(TALLY_INCONSISTENT), "INCONSISTENT");

	/* slot reuse recorded under prefilled: only prefilled matches */
	t = mk(4096);
	FX(&f, 30, h1, d1);
	f.m.has_prefilled = true;
	f.prefilled[2] = 1;
	f.m.has_buf_step = true;
	f.m.buf_step = 29;
	f.m.has_taken = true;
	f.taken[0] = f.taken[1] = 1;
	tally_merge(t, &f.m, "x", 1);
	tally_fingerprint(t, &fp);
	/* stamp was never evaluated (no stamp fields): it is not ruled out, so no name */
	assert_int_equal(fp.verdict, TALLY_WITHHELD);
	assert_int_equal(fp.events_with_taken, 1);
	assert_int_equal(fp.n_consistent, 1);
	assert_int_equal(fp.consistent[0], PREFILLED);
	assert_int_equal(fp.n_unevaluated, 1);
	assert_int_equal(fp.unevaluated[0], STAMP);
	assert_int_equal(tally_counts(t, BARE)->fp_evaluated, 1);
	assert_int_equal(tally_counts(t, BARE)->fp_mismatch, 1);
	assert_int_equal(tally_counts(t, BARE)->fp_first_mismatch_step, 30);
	assert_int_equal(tally_counts(t, PREFILLED)->fp_mismatch, 0);
	assert_int_equal(tally_counts(t, PREFILLED)->fp_first_mismatch_step, -1);
	assert_int_equal(tally_counts(t, STAMP)->fp_evaluated, 0);   /* skipped */
	tally_free(t);

	/* the same with a batch stamp: every candidate evaluated, one survives */
	t = mk(4096);
	f.m.has_gen = true;
	f.m.gen = f.m.buf_gen = 3;
	tally_merge(t, &f.m, "x", 1);
	tally_fingerprint(t, &fp);
	assert_int_equal(fp.verdict, TALLY_CONSISTENT);
	assert_int_equal(fp.n_consistent, 1);
	assert_int_equal(fp.consistent[0], PREFILLED);
	assert_int_equal(fp.n_unevaluated, 0);

	/* a second event contradicting prefilled too: inconsistent */
	f.m.step = 40;
	f.m.buf_step = 39;
	f.taken[2] = 1;
	tally_merge(t, &f.m, "x", 2);
	tally_fingerprint(t, &fp);
	assert_int_equal(fp.verdict, TALLY_INCONSISTENT);
	assert_int_equal(fp.n_consistent, 0);
	assert_int_equal(fp.events_with_taken, 2);
	assert_int_equal(tally_counts(t, PREFILLED)->fp_first_mismatch_step, 40);
	assert_int_equal(tally_counts(t, BARE)->fp_first_mismatch_step, 30);
	assert_int_equal(tally_counts(t, BARE)->fp_mismatch, 1);   /* bare agrees at step 40 */
	tally_free(t);

	/* the incident: bare, prefilled (and nothing that separates them): withheld */
	t = mk(0);
	incident(&f);
	tally_merge(t, &f.m, "x", 1);
	tally_fingerprint(t, &fp);
	assert_int_equal(fp.verdict, TALLY_WITHHELD);
	assert_int_equal(fp.n_consistent, 2);
	assert_int_equal(fp.consistent[0], BARE);
	assert_int_equal(fp.consistent[1], PREFILLED);
	assert_int_equal(tally_counts(t, BATCH)->fp_first_mismatch_step, 141);
	tally_free(t);

	/* taken only on shape fallbacks or skipped rules: none consistent */
	t = mk(0);
	{
		static const int64_t h2[] = { 5, 6 };
		static const int64_t d2[] = { 6 };
		FX(&f, 9, h2, d2);
		f.m.has_taken = true;
		tally_merge(t, &f.m, "x", 1);
		tally_fingerprint(t, &fp);
		assert_int_equal(fp.verdict, TALLY_NO_TAKEN);
	}
	tally_free(t);
}

static void test_absorb(void **state)
{
	struct tally *a = mk(0), *b = mk(0), *sum = mk(0);
	const struct tally_counts *c;
	struct tally_fingerprint fp;
	struct fx f;
	size_t r, e;

	(void)state;
	incident(&f);
	tally_merge(a, &f.m, "a", 1);
	f.dev[1] = -9;                       /* garbage in b only */
	f.taken[7] = 0;                      /* b's decision contradicts bare */
	tally_merge(b, &f.m, "b", 1);
	tally_merge(b, &f.m, "b", 2);
	tally_absorb(sum, a);
	tally_absorb(sum, b);
	for (r = 0; r < N_RULES; r++) {
		const struct tally_counts *ca = tally_counts(a, r), *cb = tally_counts(b, r);
		c = tally_counts(sum, r);
		assert_int_equal(c->merges, ca->merges + cb->merges);
		assert_int_equal(c->taken, ca->taken + cb->taken);
		assert_int_equal(c->substitutions, ca->substitutions + cb->substitutions);
		assert_int_equal(c->merges_subst, ca->merges_subst + cb->merges_subst);
		assert_int_equal(c->unverified, ca->unverified + cb->unverified);
		assert_int_equal(c->prevented, ca->prevented + cb->prevented);
		assert_int_equal(c->forgone, ca->forgone + cb->forgone);
		assert_int_equal(c->rejected_unverified, ca->rejected_unverified + cb->rejected_unverified);
		assert_int_equal(c->fired, ca->fired + cb->fired);
		assert_int_equal(c->skipped, ca->skipped + cb->skipped);
		assert_int_equal(c->shape_fallback, ca->shape_fallback + cb->shape_fallback);
		assert_int_equal(c->bare_taken, ca->bare_taken + cb->bare_taken);
		assert_int_equal(c->fp_evaluated, ca->fp_evaluated + cb->fp_evaluated);
		assert_int_equal(c->fp_mismatch, ca->fp_mismatch + cb->fp_mismatch);
		for (e = 0; e < EVIDENCE__COUNT; e++) {
			assert_int_equal(c->taken_by[e], ca->taken_by[e] + cb->taken_by[e]);
			assert_int_equal(c->subst_by[e], ca->subst_by[e] + cb->subst_by[e]);
		}
	}
	assert_string_equal(counts(sum, BARE), "m3 t3 s3 u0 p0 f0 ru0 fi0 sk0 sh0");
	assert_string_equal(counts(sum, BATCH), "m3 t0 s0 u0 p3 f0 ru0 fi3 sk0 sh0");
	assert_int_equal(tally_counts(sum, BARE)->fp_mismatch, 2);
	assert_int_equal(tally_counts(sum, BARE)->fp_first_mismatch_step, 141);
	assert_int_equal(tally_garbage(sum)->count, 2);
	assert_int_equal(tally_garbage(sum)->n_values, 1);
	assert_int_equal(tally_garbage(sum)->values[0].value, -9);
	assert_int_equal(tally_garbage(sum)->values[0].n, 2);
	tally_fingerprint(sum, &fp);
	assert_int_equal(fp.events_with_taken, 3);
	/* prefilled, lifetime and stamp never evaluated: not ruled out */
	assert_int_equal(fp.verdict, TALLY_WITHHELD);
	assert_int_equal(fp.n_consistent, 0);
	assert_true(fp.n_unevaluated > 0);
	assert_int_equal(tally_n_rules(sum), N_RULES);
	assert_string_equal(tally_rule(sum, BATCH)->name, "batch");
	tally_free(a);
	tally_free(b);
	tally_free(sum);
}

/* Garbage tables added up keep each value with its whole count, or not at all. */
static void test_add_garbage_whole(void **state)
{
	struct tally_garbage a, b, sum;
	size_t i;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	/* a: -7 once; b: full with 64 other values, then three -7 dropped */
	a.count = 1;
	a.n_values = 1;
	a.values[0].value = -7;
	a.values[0].n = 1;
	b.count = TALLY_GARBAGE_VALUES + 3;
	b.n_values = TALLY_GARBAGE_VALUES;
	for (i = 0; i < TALLY_GARBAGE_VALUES; i++) {
		b.values[i].value = -100 - (int64_t)i;
		b.values[i].n = 1;
	}
	b.values_dropped = 3;
	sum = a;
	tally_add_garbage(&sum, &b);
	assert_int_equal(sum.count, TALLY_GARBAGE_VALUES + 4);
	for (i = 0; i < sum.n_values; i++)
		assert_true(sum.values[i].value != -7);   /* part of its count is hidden in b */
	assert_int_equal(sum.n_values, TALLY_GARBAGE_VALUES);
	assert_int_equal(sum.values_dropped, 4);
	/* the other order: the same, b's values first */
	sum = b;
	tally_add_garbage(&sum, &a);
	assert_int_equal(sum.n_values, TALLY_GARBAGE_VALUES);
	assert_int_equal(sum.values[0].value, -100);
	assert_int_equal(sum.values_dropped, 4);
	/* a value both list adds up; a value only one lists stays when the other dropped nothing */
	b.n_values = 2;
	b.values_dropped = 0;
	b.values[1].value = -7;
	b.values[1].n = 3;
	b.count = 4;
	sum = a;
	tally_add_garbage(&sum, &b);
	assert_int_equal(sum.n_values, 2);
	assert_int_equal(sum.values[0].value, -7);
	assert_int_equal(sum.values[0].n, 4);
	assert_int_equal(sum.values[1].value, -100);
	assert_int_equal(sum.values[1].n, 1);
	assert_int_equal(sum.values_dropped, 0);
	/* into an empty table: as it was */
	memset(&sum, 0, sizeof(sum));
	tally_add_garbage(&sum, &b);
	assert_int_equal(sum.n_values, 2);
	assert_int_equal(sum.count, 4);
}

/* The first contradiction: of the earlier part, or (one file's processes) of the earlier line. */
static void test_add_counts_first_mismatch(void **state)
{
	struct tally_counts a, b, d;

	(void)state;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.fp_evaluated = a.fp_mismatch = 1;
	a.fp_first_mismatch_step = 14;
	a.fp_first_mismatch_line = 3;
	b.fp_evaluated = b.fp_mismatch = 1;
	b.fp_first_mismatch_step = 8;
	b.fp_first_mismatch_line = 2;
	d = a;
	tally_add_counts(&d, &b);                /* b after a: a's stays first */
	assert_int_equal(d.fp_first_mismatch_step, 14);
	assert_int_equal(d.fp_mismatch, 2);
	d = a;
	tally_add_counts_interleaved(&d, &b);    /* one file: line 2 before line 3 */
	assert_int_equal(d.fp_first_mismatch_step, 8);
	assert_int_equal(d.fp_first_mismatch_line, 2);
	d = b;
	tally_add_counts_interleaved(&d, &a);
	assert_int_equal(d.fp_first_mismatch_step, 8);
	/* a part without a contradiction changes nothing */
	memset(&d, 0, sizeof(d));
	d.fp_first_mismatch_step = -1;
	tally_add_counts_interleaved(&d, &a);
	assert_int_equal(d.fp_first_mismatch_step, 14);
	a.fp_mismatch = 0;
	tally_add_counts_interleaved(&d, &a);
	assert_int_equal(d.fp_first_mismatch_step, 14);
}

static void test_new_limits(void **state)
{
	struct rule rs[RULE_MAX_LIST + 1];
	struct tally *t;
	size_t i;

	(void)state;
	for (i = 0; i < RULE_MAX_LIST + 1; i++)
		rule_parse("bare", &rs[i], NULL);
	assert_null(tally_new(rs, RULE_MAX_LIST + 1, 0));
	t = tally_new(rs, RULE_MAX_LIST, 0);
	assert_non_null(t);
	assert_int_equal(tally_n_rules(t), RULE_MAX_LIST);
	tally_free(t);
	tally_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_incident_counts),
		cmocka_unit_test(test_forgone_and_rejected_unverified),
		cmocka_unit_test(test_empty_evidence),
		cmocka_unit_test(test_substitutions_by_evidence),
		cmocka_unit_test(test_merges_with_substitution),
		cmocka_unit_test(test_fired),
		cmocka_unit_test(test_shape_fallback),
		cmocka_unit_test(test_float32),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_max_pos_scoping),
		cmocka_unit_test(test_fingerprint),
		cmocka_unit_test(test_absorb),
		cmocka_unit_test(test_add_garbage_whole),
		cmocka_unit_test(test_add_counts_first_mismatch),
		cmocka_unit_test(test_new_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
