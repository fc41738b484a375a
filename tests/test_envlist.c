/* test_envlist.c - environment allow-list and secret names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "capture/envlist.h"

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
		"TT_AUTH", "GOOGLE_APPLICATION_CREDENTIALS", "Authorization", "MY_PASS", "PGPASS",
		"PGPASSWORD", "GITHUB_PAT", "SENTRY_DSN", "OPENAI_APIKEY", "HUGGINGFACEHUB_API_TOKEN",
		"SESSION_COOKIE", "GPG_PASSPHRASE", "x-api-key", "NPM_TOKEN",
	};
	static const char *const plain[] = {
		"TT_METAL_HOME", "MESH_DEVICE", "VLLM_PORT", "HOME", "PATH", "PWD", "OLDPWD",
		"TOKENIZERS_PARALLELISM", "KEYBOARD_LAYOUT", "PATTERN", "PASSTHROUGH", "DATABASE_URL",
		"VLLM_MAX_TOKENS", "",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
		if (!envlist_is_secret(secret[i], strlen(secret[i])))
			fail_msg("%s should be secret", secret[i]);
	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (envlist_is_secret(plain[i], strlen(plain[i])))
			fail_msg("%s should not be secret", plain[i]);
}

static void test_secret_option(void **state)
{
	static const char *const secret[] = {
		"--api-key", "--token", "--password", "--hf-token", "--aws-secret", "--db-password",
		"-key", "--ssh_key", "--client.secret",
	};
	static const char *const plain[] = {
		"--tokenizer", "--max-num-batched-tokens", "--ssl-keyfile", "--api-key-file", "api-key",
		"--", "-", "--model", "--keyboard",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(secret) / sizeof(secret[0]); i++)
		if (!envlist_secret_option(secret[i], strlen(secret[i])))
			fail_msg("%s should take a secret", secret[i]);
	for (i = 0; i < sizeof(plain) / sizeof(plain[0]); i++)
		if (envlist_secret_option(plain[i], strlen(plain[i])))
			fail_msg("%s should not take a secret", plain[i]);
}

static void test_url_cred(void **state)
{
	static const struct { const char *s; const char *cred; } cases[] = {
		{ "postgres://user:pw@db:5432/x", "user:pw" },
		{ "https://abc123@o1.ingest.sentry.io/42", "abc123" },
		{ "x=redis://:secret@h/0", ":secret" },
		{ "http://host/path@notcred", NULL },
		{ "https://example.com", NULL },
		{ "no url here", NULL },
		{ "://a@b", NULL },
		{ "s3://k:v@bucket?x=y@z", "k:v" },
	};
	size_t i, off, len;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = envlist_url_cred(cases[i].s, strlen(cases[i].s), 0, &off, &len);
		if (!cases[i].cred) {
			assert_false(got);
			continue;
		}
		assert_true(got);
		assert_int_equal(len, strlen(cases[i].cred));
		assert_memory_equal(cases[i].s + off, cases[i].cred, len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glob),
		cmocka_unit_test(test_list),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_secret),
		cmocka_unit_test(test_secret_option),
		cmocka_unit_test(test_url_cred),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
