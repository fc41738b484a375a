/* test_envlist.c - environment allow-list and secret names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "envlist.h"

static int glob(const char *p, const char *s)
{
	return envlist_glob(p, s, strlen(s));
}

static void test_glob(void **state)
{
	(void)state;
	assert_true(glob("TT_*", "TT_METAL_HOME"));
	assert_true(glob("TT_*", "TT_"));
	assert_false(glob("TT_*", "XTT_A"));
	assert_true(glob("*GUARD", "QWEN36_MERGE_BATCH_GUARD"));
	assert_true(glob("A*B*C", "AxxBxxBxxC"));
	assert_false(glob("A*B*C", "AxxBxxBxx"));
	assert_true(glob("A?C", "ABC"));
	assert_false(glob("A?C", "AC"));
	assert_true(glob("*", ""));
	assert_false(glob("", "x"));
	assert_true(glob("/tmp/*/audit-*.jsonl", "/tmp/run/x/audit-1.jsonl"));
}

static void test_list(void **state)
{
	struct envlist el;
	struct status_info si;

	(void)state;
	envlist_init(&el);
	assert_int_equal(envlist_add(&el, ENVLIST_DEFAULT, NULL), STATUS_OK);
	assert_true(envlist_allows(&el, "QWEN36_MERGE_STAMP_GUARD", 24));
	assert_true(envlist_allows(&el, "MESH_DEVICE", 11));
	assert_false(envlist_allows(&el, "MESH_DEVICES", 12));
	assert_false(envlist_allows(&el, "PATH", 4));
	/* a name given with its value: only the name part counts */
	assert_true(envlist_allows(&el, "VLLM_X=1", 6));
	assert_int_equal(envlist_add(&el, " MY_*, OTHER:THIRD ", NULL), STATUS_OK);
	assert_true(envlist_allows(&el, "OTHER", 5));
	assert_true(envlist_allows(&el, "THIRD", 5));
	status_info_clear(&si);
	assert_int_equal(envlist_add(&el, "OK,BAD/NAME", &si), STATUS_PARSE);
	assert_non_null(strstr(si.msg, "'BAD/'"));
}

static void test_limit(void **state)
{
	struct envlist el;
	int i;
	enum status st = STATUS_OK;

	(void)state;
	envlist_init(&el);
	for (i = 0; i < ENVLIST_MAX + 1 && st == STATUS_OK; i++)
		st = envlist_add(&el, "A_*", NULL);
	assert_int_equal(st, STATUS_LIMIT);
	assert_int_equal(el.n, ENVLIST_MAX);
}

static void test_secret(void **state)
{
	static const char *const secret[] = {
		"HF_TOKEN", "VLLM_API_KEY", "aws_secret_access_key", "DB_PASSWORD", "PASSWD",
		"TT_AUTH", "GOOGLE_APPLICATION_CREDENTIALS", "Authorization",
	};
	static const char *const plain[] = { "TT_METAL_HOME", "MESH_DEVICE", "VLLM_PORT", "HOME" };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
		assert_true(envlist_is_secret(secret[i], strlen(secret[i])));
	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		assert_false(envlist_is_secret(plain[i], strlen(plain[i])));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glob),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_secret),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
