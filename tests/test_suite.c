/* test_suite.c - suite files, request bodies, prompts sized by a tokenizer or probes. */
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

#include "bench/suite.h"

static char path[64];

static void write_file(const char *text)
{
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/test_suite.%ld.jsonl", (long)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_load(void **state)
{
	struct suite *s = NULL;
	struct status_info si = { 0 };

	(void)state;
	write_file("{\"id\":\"q1\",\"prompt\":\"capital of France\",\"max_tokens\":8,\"expect\":\"Paris\"}\n"
		   "\n"
		   "{\"id\":7,\"messages\":[{\"role\":\"user\",\"content\":\"2+2\"}],\"max_tokens\":4,"
		   "\"expect\":[\"4\",\"four\"]}\r\n");
	assert_int_equal(suite_load(&s, path, &si), STATUS_OK);
	assert_int_equal(s->n, 2);
	assert_string_equal(s->e[0].id, "q1");
	assert_string_equal(s->e[0].prompt, "capital of France");
	assert_int_equal(s->e[0].n_expect, 1);
	assert_string_equal(s->e[1].id, "7");
	assert_null(s->e[1].prompt);
	assert_non_null(strstr(s->e[1].messages, "\"2+2\""));
	assert_int_equal(s->e[1].n_expect, 2);
	assert_int_equal(s->e[1].line, 3);
	assert_string_equal(s->sizing, "file");
	assert_int_equal(strncmp(s->hash, "fnv1a64:", 8), 0);
	suite_free(s);
	unlink(path);
}

/* Each bad line is refused with its line number and what is wrong. */
static void test_load_errors(void **state)
{
	static const struct { const char *text, *msg; long line; } cases[] = {
		{ "{\"id\":\"a\",\"prompt\":\"x\",\"max_tokns\":4}\n", "unknown key \"max_tokns\"", 1 },
		{ "{\"id\":\"a\",\"prompt\":\"x\",\"messages\":[],\"max_tokens\":4}\n", "both prompt and messages", 1 },
		{ "{\"id\":\"a\",\"max_tokens\":4}\n", "prompt or messages missing", 1 },
		{ "{\"id\":\"a\",\"prompt\":\"x\"}\n", "max_tokens missing", 1 },
		{ "{\"id\":\"a\",\"prompt\":\"x\",\"max_tokens\":0}\n", "max_tokens is not an integer", 1 },
		{ "{\"id\":\"a\",\"prompt\":\"x\",\"max_tokens\":2.5}\n", "max_tokens is not an integer", 1 },
		{ "{\"prompt\":\"x\",\"max_tokens\":4}\n", "id missing", 1 },
		{ "{\"id\":\"a\",\"prompt\":\"x\",\"max_tokens\":4,\"expect\":[]}\n", "expect is not a string", 1 },
		{ "{\"id\":\"a\",\"prompt\":\"x\",\"max_tokens\":4,\"expect\":\"\"}\n", "expect is an empty string", 1 },
		{ "{\"id\":\"a\",\"messages\":[{\"role\":\"user\"}],\"max_tokens\":4}\n", "messages[0] lacks", 1 },
		{ "{\"id\":\"a\",\"prompt\":\"x\",\"max_tokens\":4}\n{\"id\":\"a\",\"prompt\":\"y\",\"max_tokens\":4}\n",
		  "id \"a\" repeats line 1", 2 },
		{ "{\"id\":\"a\",\"prompt\":\"x\",\"max_tokens\":4}\n{\"id\":\"b\",\"prompt\":\"y\" \"max_tokens\":4}\n",
		  "not valid json", 2 },
		{ "[1,2]\n", "not a json object", 1 },
		{ "", "no prompts in the suite", 0 },
		{ "\n  \n", "no prompts in the suite", 0 },
	};
	struct suite *s;
	struct status_info si;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		s = (struct suite *)1;
		memset(&si, 0, sizeof(si));
		write_file(cases[i].text);
		assert_int_not_equal(suite_load(&s, path, &si), STATUS_OK);
		assert_null(s);
		if (!strstr(si.msg, cases[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, si.msg, cases[i].msg);
		assert_int_equal(si.line, cases[i].line);
		assert_string_equal(si.file, path);
	}
	unlink(path);
	memset(&si, 0, sizeof(si));
	assert_int_equal(suite_load(&s, "/nonexistent/suite.jsonl", &si), STATUS_IO);
}

static void test_body(void **state)
{
	struct suite *s = NULL;
	struct suite_body_opts o = { .model = "m", .nonce = "run 00000001 00000002", .temperature = 0 };
	const char *route;
	size_t len;
	char *b;
	cJSON *j;

	(void)state;
	write_file("{\"id\":\"a\",\"prompt\":\"hello\",\"max_tokens\":5}\n"
		   "{\"id\":\"b\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
		   "{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":3}\n");
	assert_int_equal(suite_load(&s, path, NULL), STATUS_OK);
	b = suite_body(s, 0, &o, &route, &len);
	assert_non_null(b);
	assert_int_equal(strlen(b), len);
	assert_string_equal(route, "/v1/completions");
	j = cJSON_Parse(b);
	assert_string_equal(cJSON_GetObjectItem(j, "prompt")->valuestring, "run 00000001 00000002 hello");
	assert_string_equal(cJSON_GetObjectItem(j, "model")->valuestring, "m");
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "stream")));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "stream_options"), "include_usage")));
	assert_true(cJSON_GetObjectItem(j, "temperature")->valuedouble == 0);
	assert_int_equal(cJSON_GetObjectItem(j, "max_tokens")->valueint, 5);
	assert_null(cJSON_GetObjectItem(j, "ignore_eos"));
	cJSON_Delete(j);
	free(b);
	/* chat: the nonce goes into the first message; no usage asked; server temperature */
	o.no_usage = true;
	o.temperature = -1;
	o.ignore_eos = true;
	b = suite_body(s, 1, &o, &route, &len);
	assert_string_equal(route, "/v1/chat/completions");
	j = cJSON_Parse(b);
	assert_string_equal(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "messages"), 0)->child->next->valuestring,
			    "run 00000001 00000002 be brief");
	assert_string_equal(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "messages"), 1),
						"content")->valuestring, "hi");
	assert_null(cJSON_GetObjectItem(j, "stream_options"));
	assert_null(cJSON_GetObjectItem(j, "temperature"));
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(j, "ignore_eos")));
	cJSON_Delete(j);
	free(b);
	suite_free(s);
	unlink(path);
}

/* A tokenizer that counts words, plus a chat template of 5 tokens. */
static int n_count, n_probe;
static bool has_tokenize;

static long words_of(const char *t)
{
	long n = 0;
	int in = 0;

	for (; *t; t++) {
		if (*t == ' ')
			in = 0;
		else if (!in++)
			n++;
	}
	return n;
}

static enum status fake_count(void *ctx, const char *text, bool chat, long *n, struct status_info *si)
{
	(void)ctx;
	n_count++;
	if (!has_tokenize)
		return status_set(si, STATUS_NOTFOUND, "no /tokenize");
	*n = words_of(text) + (chat ? 5 : 0);
	return STATUS_OK;
}

/* the server's prompt_tokens: 2 tokens a word and a 3-token overhead */
static enum status fake_probe(void *ctx, const char *text, bool chat, long *n, struct status_info *si)
{
	(void)ctx;
	(void)chat;
	(void)si;
	n_probe++;
	*n = 2 * words_of(text) + 3;
	return STATUS_OK;
}

static void test_generate(void **state)
{
	struct suite_sizer sz = { fake_count, fake_probe, NULL };
	struct suite_gen_opts o = { .n_prompts = 5, .input_tokens = 40, .max_tokens = 8, .seed = 1 };
	struct suite *s = NULL, *s2 = NULL;
	size_t i;

	(void)state;
	has_tokenize = true;
	assert_int_equal(suite_generate(&s, &o, &sz, NULL), STATUS_OK);
	assert_string_equal(s->sizing, "tokenize");
	assert_int_equal(s->n, 5);
	for (i = 0; i < s->n; i++) {
		/* exact: the nonce (3 words) and 37 words */
		assert_int_equal(s->e[i].input_tokens, 40);
		assert_int_equal(words_of(s->e[i].prompt), 37);
		assert_int_equal(s->e[i].max_tokens, 8);
	}
	assert_string_not_equal(s->e[0].prompt, s->e[1].prompt);
	/* the same seed gives the same suite */
	assert_int_equal(suite_generate(&s2, &o, &sz, NULL), STATUS_OK);
	assert_string_equal(s->hash, s2->hash);
	suite_free(s2);
	suite_free(s);

	/* chat: the template counts */
	o.chat = true;
	assert_int_equal(suite_generate(&s, &o, &sz, NULL), STATUS_OK);
	assert_int_equal(s->e[0].input_tokens, 40);
	assert_non_null(s->e[0].messages);
	suite_free(s);
	o.chat = false;

	/* no tokenizer: two probes fit prompt tokens against words of text: the
	 * nonce's three words count 2 each, so tokens = 2 * words + 9 */
	has_tokenize = false;
	n_probe = 0;
	assert_int_equal(suite_generate(&s, &o, &sz, NULL), STATUS_OK);
	assert_string_equal(s->sizing, "probe");
	assert_int_equal(n_probe, 2);
	assert_true(s->probe_a == 2.0 && s->probe_b == 9.0);
	assert_int_equal(s->e[0].input_tokens, -1);
	/* (40 - 9) / 2 = 15.5, rounded */
	assert_int_equal(words_of(s->e[0].prompt), 16);
	suite_free(s);

	/* warm: every prompt grows from the same session */
	has_tokenize = true;
	o.warm = true;
	assert_int_equal(suite_generate(&s, &o, &sz, NULL), STATUS_OK);
	for (i = 1; i < s->n; i++) {
		assert_int_equal(strncmp(s->e[i].prompt, s->e[i - 1].prompt, strlen(s->e[i - 1].prompt)), 0);
		assert_true(strlen(s->e[i].prompt) > strlen(s->e[i - 1].prompt));
	}
	suite_free(s);

	/* bad options */
	o.input_tokens = 0;
	assert_int_equal(suite_generate(&s, &o, &sz, NULL), STATUS_USAGE);
}

static void test_nonce(void **state)
{
	char a[SUITE_NONCE_LEN + 1], b[SUITE_NONCE_LEN + 1];

	(void)state;
	suite_nonce(1, a);
	suite_nonce(2, b);
	assert_int_equal(strlen(a), SUITE_NONCE_LEN);
	assert_string_not_equal(a, b);
	suite_nonce(1, b);
	assert_string_equal(a, b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_generate),
		cmocka_unit_test(test_nonce),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
