/* test_ttsim_guard.c - ttsim's guard arms: names, environment, banners, and
 * the spec section 3 rule semantics on the spec's known cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tools/ttsim/guard.h"
#include "analyzer/rule.h"

#define H8 8

static long long host8[H8], dev8[H8];
static unsigned char pre8[H8];

static struct ttsim_merge merge_of(const long long *host, const long long *dev, size_t n)
{
	struct ttsim_merge m;

	memset(&m, 0, sizeof(m));
	m.step = 100;
	m.n_host = m.n_dev = n;
	m.host_pos = host;
	m.dev_pos = dev;
	m.max_pos = 131072;
	return m;
}

static void takes(unsigned mask, const struct ttsim_merge *m, const char *want)
{
	unsigned char t[H8];
	char got[H8 + 1];
	size_t s;

	assert_int_equal(ttsim_guard_take(mask, m, t, NULL), TTSIM_GUARD_EVALUATED);
	for (s = 0; s < m->n_host; s++)
		got[s] = t[s] ? '1' : '0';
	got[m->n_host] = 0;
	assert_string_equal(got, want);
}

/* Confirmed incident: bare takes slot 7 (28 == 27 + 1); batch fires and stops it. */
static void test_confirmed_incident(void **state)
{
	static const long long h[H8] = { 22, 25, 27, 25, 22, 25, 27, 27 };
	static const long long d[H8] = { 29, -1, -1, -1, -1, -1, -1, 28 };
	struct ttsim_merge m = merge_of(h, d, H8);
	unsigned char t[H8];
	bool fired;

	(void)state;
	takes(0, &m, "00000001");
	assert_int_equal(ttsim_guard_take(TTSIM_RULE_BATCH, &m, t, &fired), TTSIM_GUARD_EVALUATED);
	assert_true(fired);
	takes(TTSIM_RULE_BATCH, &m, "00000000");
	takes(TTSIM_RULE_BOUND, &m, "00000001");
}

/* Residual step 202: identical active pattern, batch does not fire; a variant
 * whose positions coincide passes batch and is stopped by lifetime/stamp. */
static void test_residual_202(void **state)
{
	static const long long h[H8] = { 128738, 128738, 128751, 128855, -1, -1, -1, -1 };
	static const long long d[H8] = { 128852, 128852, 1206993122, 128842, -1, -1, -1, -1 };
	static const long long d2[H8] = { 128852, 128739, 1206993122, 128842, -1, -1, -1, -1 };
	static const long long sg[H8] = { 3, 3, 3, 3, 0, 0, 0, 0 };
	static const long long bsg[H8] = { 3, 2, 3, 3, 0, 0, 0, 0 };
	struct ttsim_merge m = merge_of(h, d, H8);
	unsigned char t[H8];
	bool fired = true;

	(void)state;
	assert_int_equal(ttsim_guard_take(TTSIM_RULE_BATCH, &m, t, &fired), TTSIM_GUARD_EVALUATED);
	assert_false(fired);
	takes(0, &m, "00000000");
	takes(TTSIM_RULE_BOUND, &m, "00000000");
	m.dev_pos = d2;
	m.has_buf_step = true;
	m.buf_step = 40;
	m.slot_gen = sg;
	m.buf_slot_gen = bsg;
	takes(0, &m, "01000000");
	takes(TTSIM_RULE_BATCH, &m, "01000000");
	takes(TTSIM_RULE_LIFETIME, &m, "00000000");
	takes(TTSIM_RULE_STAMP, &m, "00000000");
	assert_int_equal(ttsim_guard_stale(&m, 1), 1);
	assert_int_equal(ttsim_guard_stale(&m, 0), 0);
}

/* Slot reuse: host [10,10,12,50], device [10,11,12,13], slot 2 prefilled. */
static void test_slot_reuse(void **state)
{
	static const long long h[4] = { 10, 10, 12, 50 };
	static const long long d[4] = { 10, 11, 12, 13 };
	static const unsigned char pre[4] = { 0, 0, 1, 0 };
	struct ttsim_merge m = merge_of(h, d, 4);

	(void)state;
	takes(0, &m, "1110");
	m.prefilled = pre;
	takes(TTSIM_RULE_PREFILLED, &m, "1100");
	takes(TTSIM_RULE_PREFILLED | TTSIM_RULE_BATCH, &m, "1100");
}

static void test_skip_and_shape(void **state)
{
	static const long long h[4] = { 10, 10, 12, -1 };
	static const long long d[3] = { 10, 11, 12 };
	struct ttsim_merge m = merge_of(h, d, 4);
	unsigned char t[4];

	(void)state;
	m.n_dev = 3;
	assert_int_equal(ttsim_guard_take(0, &m, t, NULL), TTSIM_GUARD_SHAPE_FALLBACK);
	m.n_dev = 4;
	m.dev_pos = host8;
	memset(host8, 0, sizeof(host8));
	assert_int_equal(ttsim_guard_take(TTSIM_RULE_PREFILLED, &m, t, NULL), TTSIM_GUARD_SKIPPED);
	assert_int_equal(ttsim_guard_take(TTSIM_RULE_LIFETIME, &m, t, NULL), TTSIM_GUARD_SKIPPED);
	assert_int_equal(ttsim_guard_take(TTSIM_RULE_STAMP, &m, t, NULL), TTSIM_GUARD_SKIPPED);
	assert_int_equal(ttsim_guard_take(TTSIM_RULE_BATCH | TTSIM_RULE_STAMP, &m, t, NULL),
			 TTSIM_GUARD_SKIPPED);
	m.max_pos = 0;
	assert_int_equal(ttsim_guard_take(TTSIM_RULE_BOUND, &m, t, NULL), TTSIM_GUARD_SKIPPED);
	/* stamp falls back to the batch generation pair */
	m.has_gen = true;
	m.gen = 5;
	m.buf_gen = 4;
	assert_int_equal(ttsim_guard_take(TTSIM_RULE_STAMP, &m, t, NULL), TTSIM_GUARD_EVALUATED);
	assert_int_equal(ttsim_guard_stale(&m, 0), 1);
	(void)dev8;
	(void)pre8;
}

static void test_lifetime_rule(void **state)
{
	static const long long h[2] = { 10, 20 };
	static const long long d[2] = { 11, 21 };
	struct ttsim_merge m = merge_of(h, d, 2);

	(void)state;
	m.has_buf_step = true;
	m.buf_step = 99;
	takes(TTSIM_RULE_LIFETIME, &m, "11");
	m.mode_switched = true;
	takes(TTSIM_RULE_LIFETIME, &m, "00");
	m.mode_switched = false;
	m.buf_step = 97;
	takes(TTSIM_RULE_LIFETIME, &m, "00");
	assert_int_equal(ttsim_guard_stale(&m, 0), 1);
	m.buf_step = 99;
	assert_int_equal(ttsim_guard_stale(&m, 0), 0);
}

/*
 * ttsim's arms are the analyzer's guards: bit i is row i of the one list of
 * guard flags (analyzer/rule.h), with the analyzer's name for it (its base
 * table after bare) and its flag; each TTSIM_RULE_* is the rule its name says.
 */
static void test_one_list(void **state)
{
	static const struct { const char *name; unsigned bit; } want[] = {
		{ "prefilled", TTSIM_RULE_PREFILLED }, { "batch", TTSIM_RULE_BATCH },
		{ "lifetime", TTSIM_RULE_LIFETIME }, { "stamp", TTSIM_RULE_STAMP },
		{ "bound", TTSIM_RULE_BOUND },
	};
	char name[TTSIM_ARM_NAME_MAX];
	struct status_info si;
	unsigned mask, i;

	(void)state;
	assert_int_equal(rule_base_count(), TTSIM_RULE_COUNT + 1);
	assert_int_equal(sizeof(want) / sizeof(want[0]), TTSIM_RULE_COUNT);
	for (i = 0; i < TTSIM_RULE_COUNT; i++) {
		assert_string_equal(ttsim_guard_name(1u << i, name, sizeof(name)), rule_base_name(i + 1));
		assert_string_equal(ttsim_guard_env_name(1u << i), rule_guard_flag(name));
		status_info_clear(&si);
		assert_int_equal(ttsim_guard_parse(want[i].name, &mask, &si), STATUS_OK);
		assert_int_equal(mask, want[i].bit);
	}
	assert_null(rule_guard_flag("bare"));
	assert_null(rule_guard_flag("batch+stamp"));
	assert_null(ttsim_guard_env_name(TTSIM_RULE_BATCH | TTSIM_RULE_STAMP));
}

static void test_names_env_banners(void **state)
{
	unsigned mask = 99;
	char name[TTSIM_ARM_NAME_MAX];
	const char *lines[8];
	struct status_info si;

	(void)state;
	status_info_clear(&si);
	assert_int_equal(ttsim_guard_parse("bare", &mask, &si), STATUS_OK);
	assert_int_equal(mask, 0);
	assert_int_equal(ttsim_guard_parse("stamp+batch", &mask, &si), STATUS_OK);
	assert_int_equal(mask, TTSIM_RULE_STAMP | TTSIM_RULE_BATCH);
	assert_string_equal(ttsim_guard_name(mask, name, sizeof(name)), "batch+stamp");
	assert_string_equal(ttsim_guard_name(0, name, sizeof(name)), "bare");
	assert_int_equal(ttsim_guard_parse("stamp+nope", &mask, &si), STATUS_NOTFOUND);
	assert_non_null(strstr(si.msg, "stamp+nope"));
	assert_int_equal(ttsim_guard_parse("", &mask, &si), STATUS_USAGE);
	assert_int_equal(ttsim_guard_parse("batch+", &mask, &si), STATUS_NOTFOUND);

	unsetenv("QWEN36_PREFILLED_SLOTS_FIX");
	unsetenv("QWEN36_MERGE_BATCH_GUARD");
	unsetenv("QWEN36_MERGE_LIFETIME_GUARD");
	unsetenv("QWEN36_MERGE_STAMP_GUARD");
	unsetenv("QWEN36_MERGE_GARBAGE_BOUND");
	assert_int_equal(ttsim_guard_from_env(), 0);
	setenv("QWEN36_MERGE_BATCH_GUARD", "1", 1);
	setenv("QWEN36_MERGE_STAMP_GUARD", "0", 1);
	setenv("QWEN36_MERGE_GARBAGE_BOUND", "1", 1);
	assert_int_equal(ttsim_guard_from_env(), TTSIM_RULE_BATCH | TTSIM_RULE_BOUND);
	unsetenv("QWEN36_MERGE_BATCH_GUARD");
	unsetenv("QWEN36_MERGE_STAMP_GUARD");
	unsetenv("QWEN36_MERGE_GARBAGE_BOUND");

	assert_int_equal(ttsim_guard_banners(0, lines, 8), 1);
	assert_string_equal(lines[0], "async merge: unguarded position match (no merge guard engaged)");
	assert_int_equal(ttsim_guard_banners(TTSIM_RULE_PREFILLED | TTSIM_RULE_LIFETIME, lines, 8), 2);
	assert_string_equal(lines[0], "QWEN36_PREFILLED_SLOTS_FIX engaged: merge masks slots "
			    "prefilled since the last decode");
	assert_string_equal(lines[1], "QWEN36_MERGE_LIFETIME_GUARD engaged: merge requires a "
			    "buffer written by the immediately preceding decode");
	assert_string_equal(ttsim_guard_env_name(TTSIM_RULE_STAMP), "QWEN36_MERGE_STAMP_GUARD");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_confirmed_incident),
		cmocka_unit_test(test_residual_202),
		cmocka_unit_test(test_slot_reuse),
		cmocka_unit_test(test_skip_and_shape),
		cmocka_unit_test(test_lifetime_rule),
		cmocka_unit_test(test_one_list),
		cmocka_unit_test(test_names_env_banners),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
