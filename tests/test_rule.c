/* test_rule.c - the guard rules: allowed sets, takes, names, skips and reasons. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/jdoc.h"
#include "analyzer/rule.h"
#include "tests/testutil.h"


static struct rule R(const char *name)
{
	struct rule r;
	struct status_info si;

	status_info_clear(&si);
	if (rule_parse(name, &r, &si))
		fail_msg("rule_parse('%s'): %s", name, si.msg);
	return r;
}

/*
 * Evaluates `name` and renders take and allowed as strings of 0/1 over
 * [0, H), or "skipped" / "shape" for the other outcomes.
 */
static const char *eval(const char *name, const struct fx *f, int64_t max_pos, char *allowed_out)
{
	static char takes[MAXS + 1];
	struct rule r = R(name);
	struct rule_ctx ctx = { .max_pos = max_pos };
	uint8_t take[MAXS], allowed[MAXS];
	uint32_t s;

	memset(take, 7, sizeof(take));
	memset(allowed, 7, sizeof(allowed));
	switch (rule_eval(&r, &f->m, &ctx, take, allowed)) {
	case RULE_SKIPPED:
		if (allowed_out)
			strcpy(allowed_out, "-");
		return "skipped";
	case RULE_SHAPE_FALLBACK:
		if (allowed_out)
			strcpy(allowed_out, "-");
		return "shape";
	case RULE_EVALUATED:
		break;
	}
	for (s = 0; s < f->m.n_host; s++) {
		assert_true(take[s] <= 1 && allowed[s] <= 1);
		takes[s] = (char)('0' + take[s]);
		if (allowed_out)
			allowed_out[s] = (char)('0' + allowed[s]);
		if (take[s])
			assert_int_equal(allowed[s], 1);   /* a take is always allowed */
	}
	takes[f->m.n_host] = '\0';
	if (allowed_out)
		allowed_out[f->m.n_host] = '\0';
	/* the result is the same without the allowed array */
	{
		uint8_t take2[MAXS];
		assert_int_equal(rule_eval(&r, &f->m, &ctx, take2, NULL), RULE_EVALUATED);
		assert_memory_equal(take, take2, f->m.n_host);
	}
	return takes;
}

static void test_base_table(void **state)
{
	static const char *const names[] = { "bare", "prefilled", "batch", "lifetime", "stamp",
					     "bound" };
	struct rule def[RULE_MAX_LIST];
	size_t i;

	(void)state;
	assert_int_equal(rule_base_count(), 6);
	for (i = 0; i < 6; i++) {
		assert_string_equal(rule_base_name(i), names[i]);
		assert_non_null(rule_base_doc(i));
	}
	assert_null(rule_base_name(6));
	assert_null(rule_base_doc(6));
	assert_int_equal(rule_list_default(def, RULE_MAX_LIST), 6);
	for (i = 0; i < 6; i++) {
		assert_string_equal(def[i].name, names[i]);
		assert_int_equal(def[i].n_parts, 1);
		assert_int_equal(def[i].parts[0], i);
	}
	assert_int_equal(def[0].needs, 0);
	assert_int_equal(def[1].needs, RULE_NEEDS_PREFILLED);
	assert_int_equal(def[2].needs, 0);
	assert_int_equal(def[3].needs, RULE_NEEDS_BUF_STEP);
	assert_int_equal(def[4].needs, RULE_NEEDS_STAMP);
	assert_int_equal(def[5].needs, RULE_NEEDS_MAX_POS);
	assert_int_equal(rule_list_default(def, 2), 2);
}

static void test_parse_names(void **state)
{
	struct rule r;
	struct status_info si;

	(void)state;
	assert_string_equal(R("lifetime+batch").name, "batch+lifetime");
	assert_string_equal(R("bare+stamp").name, "stamp");
	assert_string_equal(R("stamp+bare").name, "stamp");
	assert_string_equal(R("bare+bare").name, "bare");
	assert_string_equal(R("batch+batch").name, "batch");
	assert_string_equal(R("bound+stamp+lifetime+batch+prefilled+bare").name,
			    "prefilled+batch+lifetime+stamp+bound");
	r = R("stamp+prefilled");
	assert_int_equal(r.n_parts, 2);
	assert_int_equal(r.parts[0], 1);
	assert_int_equal(r.parts[1], 4);
	assert_int_equal(r.needs, RULE_NEEDS_PREFILLED | RULE_NEEDS_STAMP);
	r = R("bare");
	assert_int_equal(r.n_parts, 1);
	assert_int_equal(r.needs, 0);

	status_info_clear(&si);
	assert_int_equal(rule_parse("batch+lifetme", &r, &si), STATUS_NOTFOUND);
	assert_string_equal(si.msg,
			    "'lifetme' is not a rule (bare, prefilled, batch, lifetime, stamp, bound)");
	assert_int_equal(rule_parse("Batch", &r, &si), STATUS_NOTFOUND);
	assert_int_equal(rule_parse("", &r, &si), STATUS_NOTFOUND);
	assert_string_equal(si.msg,
			    "'' is not a rule (bare, prefilled, batch, lifetime, stamp, bound)");
	assert_int_equal(rule_parse("batch+", &r, &si), STATUS_NOTFOUND);
	assert_int_equal(rule_parse("+batch", &r, &si), STATUS_NOTFOUND);
	assert_int_equal(rule_parse("batchx", &r, &si), STATUS_NOTFOUND);
	assert_int_equal(rule_parse("batch ", &r, &si), STATUS_NOTFOUND);
	assert_int_equal(rule_parse("bat", &r, &si), STATUS_NOTFOUND);
}

static void test_parse_list(void **state)
{
	struct rule rs[RULE_MAX_LIST];
	struct status_info si;
	size_t n = 99;

	(void)state;
	status_info_clear(&si);
	assert_int_equal(rule_list_parse("batch,lifetime+batch,batch+lifetime,batch,stamp+bare,stamp",
					 rs, RULE_MAX_LIST, &n, &si), STATUS_OK);
	assert_int_equal(n, 3);
	assert_string_equal(rs[0].name, "batch");
	assert_string_equal(rs[1].name, "batch+lifetime");
	assert_string_equal(rs[2].name, "stamp");

	/* the cap counts distinct rules: duplicates past it are fine */
	assert_int_equal(rule_list_parse("bare,batch,bare,batch", rs, 2, &n, &si), STATUS_OK);
	assert_int_equal(n, 2);
	assert_int_equal(rule_list_parse("bare,batch,stamp", rs, 2, &n, &si), STATUS_LIMIT);
	assert_string_equal(si.msg, "more than 2 rules");

	assert_int_equal(rule_list_parse("bare,nope", rs, RULE_MAX_LIST, &n, &si), STATUS_NOTFOUND);
	assert_string_equal(si.msg,
			    "'nope' is not a rule (bare, prefilled, batch, lifetime, stamp, bound)");
	assert_int_equal(rule_list_parse("bare,,batch", rs, RULE_MAX_LIST, &n, &si), STATUS_USAGE);
	assert_string_equal(si.msg, "bad rule list 'bare,,batch'");
	assert_int_equal(rule_list_parse("", rs, RULE_MAX_LIST, &n, &si), STATUS_USAGE);
	assert_int_equal(rule_list_parse("batch,", rs, RULE_MAX_LIST, &n, &si), STATUS_USAGE);
	{
		char big[400];
		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		assert_int_equal(rule_list_parse(big, rs, RULE_MAX_LIST, &n, &si), STATUS_USAGE);
	}
}

static void test_bare_take(void **state)
{
	static const int64_t host[] = { 10, 10, 10, -1, -1, INT64_MAX, -3, 5 };
	static const int64_t dev[] = { 10, 11, 12, -1, 0, INT64_MIN, -2, 5 };
	struct fx f;

	(void)state;
	FX(&f, 5, host, dev);
	assert_int_equal(rule_bare_take(&f.m, 0), 1);   /* == */
	assert_int_equal(rule_bare_take(&f.m, 1), 1);   /* == + 1 */
	assert_int_equal(rule_bare_take(&f.m, 2), 0);   /* + 2 */
	assert_int_equal(rule_bare_take(&f.m, 3), 0);   /* inactive, even though equal */
	assert_int_equal(rule_bare_take(&f.m, 4), 0);   /* inactive, dev == host + 1 */
	assert_int_equal(rule_bare_take(&f.m, 5), 0);   /* INT64_MAX + 1 does not wrap */
	assert_int_equal(rule_bare_take(&f.m, 6), 1);   /* host -3 is active */
	assert_int_equal(rule_bare_take(&f.m, 8), 0);   /* outside H */
	assert_int_equal(rule_active(&f.m, 0), 1);
	assert_int_equal(rule_active(&f.m, 3), 0);
	assert_int_equal(rule_active(&f.m, 6), 1);
	assert_int_equal(rule_active(&f.m, 8), 0);
	f.m.n_dev = 7;                                   /* slot 7 beyond the device */
	assert_int_equal(rule_bare_take(&f.m, 7), 0);
	f.host[5] = INT64_MAX - 1;
	f.dev[5] = INT64_MAX;
	assert_int_equal(rule_bare_take(&f.m, 5), 1);
}

/* Spec section 4: the confirmed incident. */
static void test_known_incident(void **state)
{
	static const int64_t host[] = { 22, 25, 27, 25, 22, 25, 27, 27 };
	static const int64_t dev[] = { 29, -1, -1, -1, -1, -1, -1, 28 };
	char allowed[MAXS + 1];
	struct fx f;

	(void)state;
	FX(&f, 141, host, dev);
	f.m.reset_batch = true;
	assert_string_equal(eval("bare", &f, 0, allowed), "00000001");
	assert_string_equal(allowed, "11111111");
	assert_string_equal(eval("batch", &f, 0, allowed), "00000000");
	assert_string_equal(allowed, "00000000");
	f.m.has_buf_step = true;
	f.m.buf_step = 103;
	assert_string_equal(eval("lifetime", &f, 0, allowed), "00000000");
	assert_string_equal(eval("bound", &f, 131072, allowed), "00000001");
	assert_string_equal(allowed, "11111111");
}

/* Spec section 4: the residual at step 202, and the variant that coincides. */
static void test_known_residual(void **state)
{
	static const int64_t host[] = { 128738, 128738, 128751, 128855, -1, -1, -1, -1 };
	static const int64_t dev[] = { 128852, 128852, 1206993122, 128842, -1, -1, -1, -1 };
	static const int64_t sg[] = { 7, 7, 7, 7, 0, 0, 0, 0 };
	static const int64_t bsg[] = { 4, 4, 4, 4, 0, 0, 0, 0 };
	char allowed[MAXS + 1];
	struct fx f;

	(void)state;
	FX(&f, 202, host, dev);
	f.m.has_buf_step = true;
	f.m.buf_step = 91;
	f.m.has_slot_gen = true;
	memcpy(f.slot_gen, sg, sizeof(sg));
	memcpy(f.buf_slot_gen, bsg, sizeof(bsg));
	/* identical active pattern: batch does not fire, nothing matches */
	assert_string_equal(eval("bare", &f, 131072, allowed), "00000000");
	assert_string_equal(eval("batch", &f, 131072, allowed), "00000000");
	assert_string_equal(allowed, "11110000");
	assert_string_equal(eval("bound", &f, 131072, allowed), "00000000");
	assert_string_equal(allowed, "11010000");
	/* the coinciding variant: batch lets it through, lifetime and stamp do not */
	f.host[0] = 128851;
	assert_string_equal(eval("bare", &f, 131072, NULL), "10000000");
	assert_string_equal(eval("batch", &f, 131072, allowed), "10000000");
	assert_string_equal(allowed, "11110000");
	assert_string_equal(eval("lifetime", &f, 131072, allowed), "00000000");
	assert_string_equal(allowed, "00000000");
	assert_string_equal(eval("stamp", &f, 131072, allowed), "00000000");
	assert_string_equal(allowed, "00000000");
	assert_string_equal(eval("batch+lifetime", &f, 131072, NULL), "00000000");
	assert_string_equal(eval("bound", &f, 131072, NULL), "10000000");
}

/* Spec section 4: slot reuse. */
static void test_known_slot_reuse(void **state)
{
	static const int64_t host[] = { 10, 10, 12, 50 };
	static const int64_t dev[] = { 10, 11, 12, 13 };
	char allowed[MAXS + 1];
	struct fx f;

	(void)state;
	FX(&f, 30, host, dev);
	f.m.has_prefilled = true;
	f.prefilled[2] = 1;
	assert_string_equal(eval("bare", &f, 0, NULL), "1110");
	assert_string_equal(eval("prefilled", &f, 0, allowed), "1100");
	assert_string_equal(allowed, "1101");
	assert_string_equal(eval("batch", &f, 0, NULL), "1110");
}

static void test_batch_edges(void **state)
{
	static const int64_t host[] = { 5, -1 };
	static const int64_t dev[] = { 6, -1, 99, 7 };
	char allowed[MAXS + 1];
	struct fx f;

	(void)state;
	/* compares [0, H) only: the padding beyond H does not count */
	FX(&f, 51, host, dev);
	assert_string_equal(eval("batch", &f, 0, allowed), "10");
	assert_string_equal(allowed, "10");
	/* inactive padding beyond H does not count either */
	f.dev[2] = -1;
	assert_string_equal(eval("batch", &f, 0, allowed), "10");
	f.dev[2] = 99;
	/* an active device slot where the host is inactive breaks the pattern */
	f.dev[1] = 3;
	assert_string_equal(eval("batch", &f, 0, allowed), "00");
	assert_string_equal(allowed, "00");
	/* garbage is still "active" on the device side: pattern holds */
	f.dev[1] = -1;
	f.dev[0] = -7;
	f.host[0] = -8;
	assert_string_equal(eval("batch", &f, 0, allowed), "10");
	/* a host slot active where the device is -1 */
	f.host[1] = 4;
	assert_string_equal(eval("batch", &f, 0, allowed), "00");
	assert_string_equal(eval("bare", &f, 0, NULL), "10");
}

static void test_lifetime_edges(void **state)
{
	static const int64_t host[] = { 10, 20 };
	static const int64_t dev[] = { 11, 20 };
	char allowed[MAXS + 1];
	struct fx f;

	(void)state;
	FX(&f, 100, host, dev);
	assert_string_equal(eval("lifetime", &f, 0, NULL), "skipped");
	f.m.has_buf_step = true;
	f.m.buf_step = 99;
	assert_string_equal(eval("lifetime", &f, 0, allowed), "11");
	assert_string_equal(allowed, "11");
	f.m.mode_switched = true;
	assert_string_equal(eval("lifetime", &f, 0, allowed), "00");
	assert_string_equal(allowed, "00");
	f.m.mode_switched = false;
	f.m.reset_batch = true;           /* reset_batch alone does not refuse */
	assert_string_equal(eval("lifetime", &f, 0, NULL), "11");
	f.m.buf_step = 98;
	assert_string_equal(eval("lifetime", &f, 0, NULL), "00");
	f.m.buf_step = 100;               /* same step: not the preceding decode */
	assert_string_equal(eval("lifetime", &f, 0, NULL), "00");
	f.m.buf_step = 101;
	assert_string_equal(eval("lifetime", &f, 0, NULL), "00");
	/* step INT64_MIN has no step before it: INT64_MAX (what step - 1 wraps to) is stale */
	f.m.step = INT64_MIN;
	f.m.buf_step = INT64_MAX;
	assert_string_equal(eval("lifetime", &f, 0, NULL), "00");
	assert_int_equal(rule_step_is_prev(INT64_MAX, INT64_MIN), 0);
	assert_int_equal(rule_step_is_prev(INT64_MAX - 1, INT64_MAX), 1);
	{
		char buf[32], why[256];
		struct rule r = R("lifetime");
		struct rule_ctx ctx = { 0 };
		assert_string_equal(rule_step_diff(INT64_MAX, INT64_MIN, buf, sizeof(buf)),
				    "18446744073709551615");
		assert_string_equal(rule_step_diff(INT64_MIN, INT64_MAX, buf, sizeof(buf)),
				    "-18446744073709551615");
		rule_why(&r, &f.m, &ctx, 0, why, sizeof(why));
		assert_string_equal(why, "lifetime: buffer from step 9223372036854775807, "
				    "-18446744073709551615 steps old");
	}
}

/*
 * The window masks (AVX2 and portable) against their definitions slot by
 * slot, and rule_eval against an independent per-slot reading of each base
 * rule, on random events of every width (windows and tails).
 */
static void test_windows_agree(void **state)
{
	enum { H = 200 };
	static int64_t host[H], dev[H], sg[H], bsg[H];
	static uint8_t pre[H], tak[H], take[H], allowed[H];
	static const int64_t vals[] = { -1, -2, 0, 1, 2, 99, 100, INT64_MAX, INT64_MIN, 1 << 24 };
	struct merge_event m;
	unsigned seed = 99, round;
	size_t ri;

	(void)state;
	for (round = 0; round < 600; round++) {
		uint32_t h = 1 + (round * 7) % H, s, k;
		struct rule_ctx ctx = { .max_pos = round % 3 ? 100 : 0 };
		int simd;
		memset(&m, 0, sizeof(m));
		for (s = 0; s < h; s++) {
			seed = seed * 1103515245u + 12345u;
			host[s] = vals[(seed >> 4) % 10];
			dev[s] = (seed >> 12) % 3 == 0 ? host[s] + ((seed >> 14) % 2 && host[s] < INT64_MAX)
						       : vals[(seed >> 8) % 10];
			sg[s] = (seed >> 18) % 2;
			bsg[s] = (seed >> 19) % 2;
			pre[s] = (seed >> 20) % 4 == 0;
			tak[s] = (seed >> 22) % 2;
		}
		m.n_host = h;
		m.n_dev = h + round % 3;
		m.host_pos = host;
		m.dev_pos = dev;
		m.step = 100;
		m.has_slot_gen = round % 2;
		m.slot_gen = sg;
		m.buf_slot_gen = bsg;
		m.has_gen = true;
		m.gen = 1;
		m.buf_gen = (int64_t)(round % 2);
		m.has_buf_step = true;
		m.buf_step = round % 4 ? 99 : 90;
		m.mode_switched = round % 9 == 0;
		m.has_prefilled = round % 3 != 1;
		m.prefilled = pre;
		m.has_taken = round % 2;
		m.taken = tak;
		for (simd = 0; simd < 2; simd++) {
			jdoc_simd(simd);
			for (k = 0; k < rule_n_windows(h); k++) {
				struct rule_window w;
				rule_window_fill(&m, &ctx, 1000, k, &w);
				for (s = 0; s < w.n; s++) {
					uint32_t t = w.base + s;
					int64_t d = dev[t];
					int bits[8] = {
						host[t] != -1, d != -1, rule_bare_take(&m, t),
						m.has_prefilled && pre[t], m.has_slot_gen && sg[t] == bsg[t],
						d >= -1 && d < ctx.max_pos, d < -1 || d >= 1000,
						m.has_taken && tak[t] };
					uint64_t got[8] = { w.active, w.dev_active, w.bare, w.prefilled,
							    w.gen_eq, w.in_bound, w.garbage, w.taken };
					int b;
					for (b = 0; b < 8; b++)
						if ((int)(got[b] >> s & 1) != bits[b])
							fail_msg("round %u simd %d slot %u: mask %d is %d, want %d",
								 round, simd, t, b, (int)(got[b] >> s & 1), bits[b]);
				}
				assert_true(w.n == 64 || (w.active >> w.n) == 0);
			}
		}
		jdoc_simd(1);
		/* rule_eval against the definitions, per base rule */
		for (ri = 0; ri < rule_base_count(); ri++) {
			struct rule r = R(rule_base_name(ri));
			int batch_ok = 1;
			for (s = 0; s < h; s++)
				batch_ok &= (dev[s] != -1) == (host[s] != -1);
			if (rule_eval(&r, &m, &ctx, take, allowed) != RULE_EVALUATED)
				continue;
			for (s = 0; s < h; s++) {
				int a = host[s] != -1;
				switch (ri) {
				case 1: a &= !pre[s] || !m.has_prefilled; break;
				case 2: a &= batch_ok; break;
				case 3: a &= m.buf_step == m.step - 1 && !m.mode_switched; break;
				case 4: a &= m.has_slot_gen ? sg[s] == bsg[s] : m.gen == m.buf_gen; break;
				case 5: a &= dev[s] >= -1 && dev[s] < ctx.max_pos; break;
				}
				if (allowed[s] != a || take[s] != (a && rule_bare_take(&m, s)))
					fail_msg("round %u rule %s slot %u: allowed %d take %d, want %d",
						 round, r.name, s, allowed[s], take[s], a);
			}
		}
	}
}

/* Names read from an audit are byte strings: a NUL inside is no rule. */
static void test_parse_len(void **state)
{
	struct rule r;
	struct status_info si;

	(void)state;
	assert_int_equal(rule_parse_len("batch", 5, &r, NULL), STATUS_OK);
	assert_string_equal(r.name, "batch");
	assert_int_equal(rule_parse_len("batch+stampXX", 11, &r, NULL), STATUS_OK);
	assert_string_equal(r.name, "batch+stamp");
	status_info_clear(&si);
	assert_int_equal(rule_parse_len("batch\0x", 7, &r, &si), STATUS_NOTFOUND);
	assert_string_equal(si.msg, "'batch\\u0000...' is not a rule (bare, prefilled, batch, "
			    "lifetime, stamp, bound)");
}

static void test_stamp_edges(void **state)
{
	static const int64_t host[] = { 10, 20, 30, -1 };
	static const int64_t dev[] = { 11, 20, 31, -1 };
	char allowed[MAXS + 1];
	struct fx f;

	(void)state;
	FX(&f, 100, host, dev);
	assert_string_equal(eval("stamp", &f, 0, NULL), "skipped");
	/* the batch stamp alone */
	f.m.has_gen = true;
	f.m.gen = 4;
	f.m.buf_gen = 4;
	assert_string_equal(eval("stamp", &f, 0, allowed), "1110");
	assert_string_equal(allowed, "1110");
	f.m.buf_gen = 3;
	assert_string_equal(eval("stamp", &f, 0, allowed), "0000");
	assert_string_equal(allowed, "0000");
	/* per-slot stamps win over the batch stamp, both ways */
	f.m.has_slot_gen = true;
	f.slot_gen[0] = 1, f.buf_slot_gen[0] = 1;
	f.slot_gen[1] = 2, f.buf_slot_gen[1] = 1;
	f.slot_gen[2] = 3, f.buf_slot_gen[2] = 3;
	assert_string_equal(eval("stamp", &f, 0, allowed), "1010");
	assert_string_equal(allowed, "1010");
	f.m.buf_gen = 4;
	f.buf_slot_gen[0] = 0;
	assert_string_equal(eval("stamp", &f, 0, allowed), "0010");
	/* per-slot stamps alone */
	f.m.has_gen = false;
	assert_string_equal(eval("stamp", &f, 0, NULL), "0010");
}

static void test_bound_edges(void **state)
{
	static const int64_t host[] = { 99, 98, -3, 50, -1, 7 };
	static const int64_t dev[] = { 100, 99, -2, 50, 1206993122, -1 };
	char allowed[MAXS + 1];
	struct fx f;

	(void)state;
	FX(&f, 10, host, dev);
	assert_string_equal(eval("bound", &f, 0, NULL), "skipped");
	assert_string_equal(eval("bare", &f, 0, NULL), "111100");
	assert_string_equal(eval("bound", &f, 100, allowed), "010100");
	assert_string_equal(allowed, "010101");   /* dev -1 is in bound; slot 4 inactive */
	assert_string_equal(eval("bound", &f, 101, NULL), "110100");
}

static void test_combinations(void **state)
{
	static const int64_t host[] = { 10, 20, 30, 40, -1 };
	static const int64_t dev[] = { 10, 21, 30, 41, -1 };
	char allowed[MAXS + 1];
	struct fx f;

	(void)state;
	FX(&f, 100, host, dev);
	f.m.has_prefilled = true;
	f.prefilled[0] = 1;
	f.m.has_slot_gen = true;
	f.slot_gen[1] = 1;             /* slot 1 stale by its stamp */
	f.m.has_buf_step = true;
	f.m.buf_step = 99;
	assert_string_equal(eval("prefilled", &f, 0, allowed), "01110");
	assert_string_equal(eval("stamp", &f, 0, allowed), "10110");
	assert_string_equal(eval("prefilled+stamp", &f, 0, allowed), "00110");
	assert_string_equal(allowed, "00110");
	assert_string_equal(eval("stamp+prefilled+lifetime+batch", &f, 0, NULL), "00110");
	f.m.buf_step = 90;
	assert_string_equal(eval("prefilled+stamp+lifetime", &f, 0, allowed), "00000");
	assert_string_equal(allowed, "00000");
	/* a combination is skipped when any part lacks its field */
	f.m.has_buf_step = false;
	assert_string_equal(eval("prefilled+lifetime", &f, 0, NULL), "skipped");
	assert_string_equal(eval("batch+bound", &f, 0, NULL), "skipped");
	assert_string_equal(eval("batch+bound", &f, 1000, NULL), "11110");
	assert_string_equal(eval("bare+batch", &f, 0, NULL), "11110");
}

static void test_skipped_and_shape(void **state)
{
	static const int64_t host[] = { 10, 20, 30 };
	static const int64_t dev[] = { 11, 20 };
	static const char *const all[] = { "bare", "prefilled", "batch", "lifetime", "stamp",
					   "bound", "batch+stamp" };
	char buf[128];
	struct fx f;
	struct rule r;
	struct rule_ctx ctx = { 0 };
	size_t i;

	(void)state;
	FX(&f, 100, host, dev);
	/* D < H: shape fallback for every rule, even when its fields are missing */
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		assert_string_equal(eval(all[i], &f, 0, NULL), "shape");
	f.m.n_dev = 3;
	f.dev[2] = 31;
	assert_string_equal(eval("bare", &f, 0, NULL), "111");
	assert_string_equal(eval("batch", &f, 0, NULL), "111");
	assert_string_equal(eval("prefilled", &f, 0, NULL), "skipped");
	assert_string_equal(eval("lifetime", &f, 0, NULL), "skipped");
	assert_string_equal(eval("stamp", &f, 0, NULL), "skipped");
	assert_string_equal(eval("bound", &f, 0, NULL), "skipped");

	r = R("prefilled+batch+lifetime+stamp+bound");
	rule_missing(&r, &f.m, &ctx, buf, sizeof(buf));
	assert_string_equal(buf, "prefilled, buf_step, stamp fields, max_pos");
	f.m.has_buf_step = true;
	f.m.has_gen = true;
	rule_missing(&r, &f.m, &ctx, buf, sizeof(buf));
	assert_string_equal(buf, "prefilled, max_pos");
	ctx.max_pos = 10;
	f.m.has_prefilled = true;
	rule_missing(&r, &f.m, &ctx, buf, sizeof(buf));
	assert_string_equal(buf, "");
	r = R("bare");
	f.m.has_prefilled = false;
	rule_missing(&r, &f.m, &ctx, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

static const char *why(const char *name, const struct fx *f, int64_t max_pos, uint32_t s)
{
	static char buf[512];
	struct rule r = R(name);
	struct rule_ctx ctx = { .max_pos = max_pos };
	uint8_t take[MAXS];

	assert_int_equal(rule_eval(&r, &f->m, &ctx, take, NULL), RULE_EVALUATED);
	rule_why(&r, &f->m, &ctx, s, buf, sizeof(buf));
	return buf;
}

static void test_why(void **state)
{
	static const int64_t host[] = { 22, 25, 27, 25, 22, 25, 27, 27 };
	static const int64_t dev[] = { 29, -1, -1, -1, -1, -1, -1, 1206993122 };
	char small[12];
	struct fx f;

	(void)state;
	FX(&f, 141, host, dev);
	f.m.has_buf_step = true;
	f.m.buf_step = 103;
	f.m.has_prefilled = true;
	f.prefilled[7] = 1;
	f.m.has_gen = true;
	f.m.gen = 12;
	f.m.buf_gen = 9;
	assert_string_equal(why("bare", &f, 0, 7), "bare: positions do not match");
	assert_string_equal(why("batch", &f, 0, 7),
			    "batch: buffer's active pattern differs from the batch at slot 1 "
			    "(dev -1, host 25)");
	assert_string_equal(why("lifetime", &f, 0, 7), "lifetime: buffer from step 103, 38 steps old");
	assert_string_equal(why("stamp", &f, 0, 7), "stamp: gen 12 != buf_gen 9");
	assert_string_equal(why("bound", &f, 131072, 7),
			    "bound: dev_pos 1206993122 outside [-1, 131072)");
	assert_string_equal(why("bound", &f, 131072, 0), "bound: dev_pos within [-1, 131072)");
	assert_string_equal(why("prefilled", &f, 0, 7),
			    "prefilled: slot was prefilled since the last decode");
	assert_string_equal(why("prefilled", &f, 0, 0),
			    "prefilled: slot not prefilled since the last decode");
	assert_string_equal(why("batch+lifetime", &f, 0, 7),
			    "batch: buffer's active pattern differs from the batch at slot 1 "
			    "(dev -1, host 25); lifetime: buffer from step 103, 38 steps old");
	f.m.mode_switched = true;
	f.m.buf_step = 140;
	assert_string_equal(why("lifetime", &f, 0, 0),
			    "lifetime: mode switched since the buffer was written");
	f.m.mode_switched = false;
	assert_string_equal(why("lifetime", &f, 0, 0),
			    "lifetime: buffer written by the preceding step 140");
	f.m.has_slot_gen = true;
	f.slot_gen[3] = 7;
	f.buf_slot_gen[3] = 4;
	assert_string_equal(why("stamp", &f, 0, 3), "stamp: slot_gen 7 != buf_slot_gen 4");
	assert_string_equal(why("stamp", &f, 0, 2), "stamp: slot_gen 0 == buf_slot_gen 0");
	f.dev[7] = 28;
	assert_string_equal(why("bare", &f, 0, 7), "bare: dev_pos == host_pos + 1");
	f.dev[7] = 27;
	assert_string_equal(why("bare", &f, 0, 7), "bare: dev_pos == host_pos");
	f.dev[1] = 25, f.dev[2] = 27, f.dev[3] = 25, f.dev[4] = 22, f.dev[5] = 25, f.dev[6] = 27;
	assert_string_equal(why("batch", &f, 0, 0), "batch: buffer's active pattern matches the batch");
	/* a short buffer is always terminated */
	{
		struct rule r = R("batch+lifetime");
		struct rule_ctx ctx = { 0 };
		f.dev[1] = -1;
		rule_why(&r, &f.m, &ctx, 7, small, sizeof(small));
		assert_int_equal(strlen(small), sizeof(small) - 1);
		assert_memory_equal(small, "batch: buff", sizeof(small));
	}
}

/*
 * The instrumentation kit keeps its own copy of the guard flags (Python,
 * ttaudit_emit/kit.py GUARD_FLAGS: the kit runs inside the server, without
 * ttaudit): it must be the one list, row for row. Read by importing the
 * package with Debian's Python, as the kit runs. A copy of the package with
 * one flag changed and a directory without it must both be told apart.
 */
#define KIT_LINE(arm, flag) #arm " " flag "\n"
static const char kit_want[] = RULE_GUARD_FLAGS(KIT_LINE);

/* The kit's GUARD_FLAGS as "arm FLAG" lines, imported from dir, into out;
 * returns Python's exit status (pclose). */
static int kit_flags(const char *dir, char *out, size_t n)
{
	char cmd[1024];
	size_t len;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -c 'import sys; "
		 "sys.path.insert(0, sys.argv[1]); from ttaudit_emit import kit; "
		 "sys.stdout.write(\"\".join(\"%%s %%s\\n\" %% (a, f) for f, a in kit.GUARD_FLAGS))' "
		 "'%s' 2>/dev/null", dir);
	p = popen(cmd, "r");
	assert_non_null(p);
	len = fread(out, 1, n - 1, p);
	out[len] = '\0';
	return pclose(p);
}

static void test_kit_flags(void **state)
{
	char got[1024], dir[] = "/tmp/test_rule.XXXXXX", cmd[512];

	(void)state;
	assert_int_equal(kit_flags("tools/instrument", got, sizeof(got)), 0);
	assert_string_equal(got, kit_want);
	/* one flag renamed in a copy: told apart */
	assert_non_null(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp -r tools/instrument/ttaudit_emit %s/ && sed -i "
		 "'s/\"QWEN36_MERGE_STAMP_GUARD\"/\"QWEN36_MERGE_STAMP_FIX\"/' %s/ttaudit_emit/kit.py",
		 dir, dir);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(kit_flags(dir, got, sizeof(got)), 0);
	assert_non_null(strstr(got, "stamp QWEN36_MERGE_STAMP_FIX\n"));
	assert_string_not_equal(got, kit_want);
	/* no package there: no lines, and Python says so */
	snprintf(cmd, sizeof(cmd), "rm -rf %s/ttaudit_emit", dir);
	assert_int_equal(system(cmd), 0);
	assert_int_not_equal(kit_flags(dir, got, sizeof(got)), 0);
	assert_string_equal(got, "");
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_windows_agree),
		cmocka_unit_test(test_parse_len),
		cmocka_unit_test(test_base_table),
		cmocka_unit_test(test_parse_names),
		cmocka_unit_test(test_parse_list),
		cmocka_unit_test(test_bare_take),
		cmocka_unit_test(test_known_incident),
		cmocka_unit_test(test_known_residual),
		cmocka_unit_test(test_known_slot_reuse),
		cmocka_unit_test(test_batch_edges),
		cmocka_unit_test(test_lifetime_edges),
		cmocka_unit_test(test_stamp_edges),
		cmocka_unit_test(test_bound_edges),
		cmocka_unit_test(test_combinations),
		cmocka_unit_test(test_skipped_and_shape),
		cmocka_unit_test(test_why),
		cmocka_unit_test(test_kit_flags),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
