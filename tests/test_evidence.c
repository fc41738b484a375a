/* test_evidence.c - staleness per slot, from the strongest evidence present. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "analyzer/evidence.h"
#include "base/jdoc.h"
#include "analyzer/rule.h"
#include "tests/testutil.h"


/* Four active slots at step 100; every kind of evidence absent. */
static void fx_four(struct fx *f)
{
	static const int64_t pos[] = { 10, 20, 30, 40 };

	FX(f, 100, pos, pos);
}

static enum evidence ev(const struct fx *f, uint32_t s, int *stale)
{
	*stale = 99;
	return evidence_slot(&f->m, s, stale);
}

static const char *why(const struct fx *f, uint32_t s)
{
	static char buf[256];

	evidence_why(&f->m, s, buf, sizeof(buf));
	return buf;
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(evidence_name(EVIDENCE_UNKNOWN), "unknown");
	assert_string_equal(evidence_name(EVIDENCE_REQUEST), "request");
	assert_string_equal(evidence_name(EVIDENCE_STAMP), "stamp");
	assert_string_equal(evidence_name(EVIDENCE_LIFETIME), "lifetime");
	assert_string_equal(evidence_name(EVIDENCE__COUNT), "unknown");
	assert_string_equal(evidence_name((enum evidence)-1), "unknown");
}

static void test_unknown(void **state)
{
	struct fx f;
	int stale;

	(void)state;
	fx_four(&f);
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_UNKNOWN);
	assert_int_equal(stale, 0);
	assert_string_equal(why(&f, 0), "no request id, stamp or buf_step on this event");
	/* arrays that are filled but not flagged present do not count */
	f.slot_req[0] = "a";
	f.buf_req[0] = "b";
	f.slot_gen[0] = 1;
	f.prefilled[0] = 1;
	f.m.buf_step = 3;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_UNKNOWN);
	assert_int_equal(stale, 0);
	/* prefilled alone is no evidence */
	f.m.has_prefilled = true;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_UNKNOWN);
	assert_int_equal(stale, 0);
}

static void test_precedence(void **state)
{
	struct fx f;
	int stale;

	(void)state;
	fx_four(&f);
	/* everything present, each source saying something different per slot */
	f.m.has_buf_step = true;
	f.m.buf_step = 50;                       /* lifetime: stale everywhere */
	f.m.has_gen = true;
	f.m.gen = 2, f.m.buf_gen = 2;             /* batch stamp: fresh */
	f.m.has_slot_gen = true;
	f.slot_gen[0] = 1, f.buf_slot_gen[0] = 1; /* slot stamps: 0, 2 fresh; 1, 3 stale */
	f.slot_gen[1] = 2, f.buf_slot_gen[1] = 1;
	f.slot_gen[2] = 1, f.buf_slot_gen[2] = 1;
	f.slot_gen[3] = 2, f.buf_slot_gen[3] = 1;
	f.m.has_req = true;
	f.slot_req[0] = "r1", f.buf_req[0] = "r0";   /* request: stale, beats stamp fresh */
	f.slot_req[1] = "r1", f.buf_req[1] = "r1";   /* request: fresh, beats stamp stale */
	f.slot_req[2] = "r2", f.buf_req[2] = NULL;   /* one side null: falls to the stamp */
	f.slot_req[3] = NULL, f.buf_req[3] = "r3";

	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_REQUEST);
	assert_int_equal(stale, 1);
	assert_string_equal(why(&f, 0), "slot_req 'r1' != buf_req 'r0'");
	assert_int_equal(ev(&f, 1, &stale), EVIDENCE_REQUEST);
	assert_int_equal(stale, 0);
	assert_string_equal(why(&f, 1), "slot_req 'r1' == buf_req 'r1'");
	assert_int_equal(ev(&f, 2, &stale), EVIDENCE_STAMP);
	assert_int_equal(stale, 0);
	assert_string_equal(why(&f, 2), "slot_gen 1 == buf_slot_gen 1");
	assert_int_equal(ev(&f, 3, &stale), EVIDENCE_STAMP);
	assert_int_equal(stale, 1);
	assert_string_equal(why(&f, 3), "slot_gen 2 != buf_slot_gen 1");

	/* without request ids: the slot stamp beats the batch stamp */
	f.m.has_req = false;
	f.m.buf_gen = 1;                          /* batch stamp now says stale */
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_STAMP);
	assert_int_equal(stale, 0);
	assert_int_equal(ev(&f, 1, &stale), EVIDENCE_STAMP);
	assert_int_equal(stale, 1);

	/* without slot stamps: the batch stamp beats buf_step */
	f.m.has_slot_gen = false;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_STAMP);
	assert_int_equal(stale, 1);
	assert_string_equal(why(&f, 0), "gen 2 != buf_gen 1");
	f.m.buf_gen = 2;
	f.m.buf_step = 50;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_STAMP);
	assert_int_equal(stale, 0);
	assert_string_equal(why(&f, 0), "gen 2 == buf_gen 2");

	/* without any stamp: buf_step */
	f.m.has_gen = false;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 1);
	assert_string_equal(why(&f, 0), "buf_step 50 is not step - 1 (99)");
}

static void test_request_needs_both(void **state)
{
	struct fx f;
	int stale;

	(void)state;
	fx_four(&f);
	f.m.has_req = true;
	f.slot_req[0] = "a", f.buf_req[0] = NULL;
	f.slot_req[1] = NULL, f.buf_req[1] = NULL;
	f.slot_req[2] = "cmpl-1", f.buf_req[2] = "cmpl-10";   /* a prefix is not equal */
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_UNKNOWN);
	assert_int_equal(stale, 0);
	assert_int_equal(ev(&f, 1, &stale), EVIDENCE_UNKNOWN);
	assert_int_equal(ev(&f, 2, &stale), EVIDENCE_REQUEST);
	assert_int_equal(stale, 1);
	/* null on one side with buf_step present: lifetime decides */
	f.m.has_buf_step = true;
	f.m.buf_step = 99;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 0);
}

static void test_lifetime(void **state)
{
	struct fx f;
	int stale;

	(void)state;
	fx_four(&f);
	f.m.has_buf_step = true;
	f.m.buf_step = 99;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 0);
	assert_string_equal(why(&f, 0), "buf_step 99 is step - 1");
	/* a slot prefilled since the last decode is stale even for a fresh buffer */
	f.m.has_prefilled = true;
	f.prefilled[1] = 1;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 0);
	assert_int_equal(ev(&f, 1, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 1);
	assert_string_equal(why(&f, 1), "buffer from step - 1 but the slot was prefilled since");
	/* the prefilled flags only count when the field was present */
	f.m.has_prefilled = false;
	assert_int_equal(ev(&f, 1, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 0);
	/* mode_switched is the lifetime rule's business, not staleness */
	f.m.mode_switched = true;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 0);
	f.m.buf_step = 100;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 1);
	assert_string_equal(why(&f, 0), "buf_step 100 is not step - 1 (99)");
	f.m.buf_step = 98;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 1);
}

/* Request ids are byte strings with a length: a NUL or a lone surrogate inside still counts. */
static void test_ids_with_length(void **state)
{
	static const char *const a[] = { "a\0b", "\xed\xa0\x80", "same\0", "r1" };
	static const char *const b[] = { "a\0c", "\xed\xaf\xbf", "same\0", "r1\0x" };
	static const uint32_t la[] = { 3, 3, 5, 2 }, lb[] = { 3, 3, 5, 4 };
	static const int want[] = { 1, 1, 0, 1 };
	struct fx f;
	uint32_t s;
	int stale;
	char buf[256];

	(void)state;
	fx_four(&f);
	f.m.has_req = true;
	f.m.slot_req_len = la;
	f.m.buf_req_len = lb;
	for (s = 0; s < 4; s++) {
		f.slot_req[s] = a[s];
		f.buf_req[s] = b[s];
	}
	for (s = 0; s < 4; s++) {
		assert_int_equal(ev(&f, s, &stale), EVIDENCE_REQUEST);
		if (stale != want[s])
			fail_msg("slot %u: stale %d, want %d", s, stale, want[s]);
	}
	evidence_why(&f.m, 0, buf, sizeof(buf));
	assert_string_equal(buf, "slot_req 'a\\x00b' != buf_req 'a\\x00c'");
}

/* buf_step against a step of INT64_MIN: no step before it, so the buffer is stale. */
static void test_step_extremes(void **state)
{
	struct fx f;
	int stale;

	(void)state;
	fx_four(&f);
	f.m.has_buf_step = true;
	f.m.step = INT64_MIN;
	f.m.buf_step = INT64_MAX;   /* what INT64_MIN - 1 wraps to */
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 1);
	assert_string_equal(why(&f, 0), "buf_step 9223372036854775807 is not step - 1 (-9223372036854775809)");
	f.m.step = INT64_MAX;
	f.m.buf_step = INT64_MAX - 1;
	assert_int_equal(ev(&f, 0, &stale), EVIDENCE_LIFETIME);
	assert_int_equal(stale, 0);
}

/* The window form agrees with evidence_slot on every active slot, on random events. */
static void test_window_agrees(void **state)
{
	enum { H = 150 };
	static int64_t host[H], dev[H], sg[H], bsg[H];
	static uint8_t pre[H];
	static const char *req[H], *breq[H];
	static const char *const ids[] = { "a", "b", NULL };
	struct merge_event m;
	unsigned seed = 7, round;

	(void)state;
	for (round = 0; round < 400; round++) {
		uint32_t h = 1 + round % H, s, k;
		memset(&m, 0, sizeof(m));
		for (s = 0; s < h; s++) {
			seed = seed * 1103515245u + 12345u;
			host[s] = (seed >> 4) % 4 ? (int64_t)(seed >> 10) % 5 : -1;
			dev[s] = host[s] + (seed >> 16) % 2;
			sg[s] = (seed >> 18) % 2;
			bsg[s] = (seed >> 19) % 2;
			pre[s] = (seed >> 20) % 5 == 0;
			req[s] = ids[(seed >> 21) % 3];
			breq[s] = ids[(seed >> 23) % 3];
		}
		m.n_host = m.n_dev = h;
		m.host_pos = host;
		m.dev_pos = dev;
		m.step = (round % 7 == 0) ? INT64_MIN : 100;
		m.has_req = round % 2;
		m.slot_req = req;
		m.buf_req = breq;
		m.has_slot_gen = round % 3 == 0;
		m.slot_gen = sg;
		m.buf_slot_gen = bsg;
		m.has_gen = round % 5 == 1;
		m.gen = 1;
		m.buf_gen = (int64_t)(round % 2);
		m.has_buf_step = round % 4 != 3;
		m.buf_step = round % 2 ? 99 : 50;
		m.has_prefilled = round % 3 != 1;
		m.prefilled = pre;
		for (k = 0; k < rule_n_windows(h); k++) {
			struct rule_ctx ctx = { 0 };
			struct rule_window w;
			struct evidence_window e;
			rule_window_fill(&m, &ctx, 1 << 24, k, &w);
			evidence_window_fill(&m, w.base, w.n, w.active, w.prefilled, w.gen_eq, &e);
			for (s = 0; s < w.n; s++) {
				int stale, c;
				enum evidence cls;
				if (!(w.active >> s & 1))
					continue;
				cls = evidence_slot(&m, w.base + s, &stale);
				for (c = 0; c < EVIDENCE__COUNT; c++)
					if ((int)(e.by[c] >> s & 1) != (c == (int)cls))
						fail_msg("round %u slot %u: class %d in the window, %d by slot",
							 round, w.base + s, c, cls);
				if ((int)(e.stale >> s & 1) != stale)
					fail_msg("round %u slot %u: stale differs", round, w.base + s);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ids_with_length),
		cmocka_unit_test(test_step_extremes),
		cmocka_unit_test(test_window_agrees),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_request_needs_both),
		cmocka_unit_test(test_lifetime),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
