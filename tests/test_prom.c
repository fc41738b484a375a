/* test_prom.c - the Prometheus text parser: comments, labels, escapes, values, errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "probe/prom.h"

static struct prom *parse_ok(const char *text)
{
	struct status_info si = { 0 };
	struct prom *p = NULL;
	enum status st = prom_parse(text, strlen(text), &p, &si);

	if (st)
		fprintf(stderr, "line %ld byte %ld: %s\n", si.line, si.byte, si.msg);
	assert_int_equal(st, STATUS_OK);
	assert_non_null(p);
	return p;
}

/* Parses text expecting a failure at `line`; returns the message. */
static void parse_bad(const char *text, enum status want, long line, const char *msg_part)
{
	struct status_info si = { 0 };
	struct prom *p = NULL;

	assert_int_equal(prom_parse(text, strlen(text), &p, &si), want);
	assert_null(p);
	assert_int_equal(si.line, line);
	if (!strstr(si.msg, msg_part))
		fail_msg("message '%s' lacks '%s'", si.msg, msg_part);
}

static void test_vllm_page(void **state)
{
	const char *text =
		"# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
		"# TYPE vllm:cache_config_info gauge\n"
		"vllm:cache_config_info{block_size=\"64\",cache_dtype=\"bfloat8_b\",enable_prefix_caching=\"False\"} 1.0\n"
		"# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
		"# TYPE vllm:num_requests_running gauge\n"
		"vllm:num_requests_running{model_name=\"meta-llama/Llama-3.1-8B\"} 0.0\n"
		"\n"
		"# a free comment is ignored\n"
		"process_start_time_seconds 1.732912345e+09\n";
	const char *want[] = { "cache_dtype", "bfloat8_b" };
	const char *wrong[] = { "cache_dtype", "bfloat16" };
	const struct prom_sample *s;
	struct prom *p = parse_ok(text);

	(void)state;
	assert_int_equal(prom_n_samples(p), 3);
	s = prom_find(p, "vllm:cache_config_info", want, 1);
	assert_non_null(s);
	assert_int_equal(s->line, 3);
	assert_int_equal(s->n_labels, 3);
	assert_string_equal(prom_label(s, "block_size"), "64");
	assert_true(s->value == 1.0);
	assert_null(prom_find(p, "vllm:cache_config_info", wrong, 1));
	assert_null(prom_find(p, "vllm:cache_config", NULL, 0));
	assert_string_equal(prom_type(p, "vllm:cache_config_info"), "gauge");
	assert_string_equal(prom_help(p, "vllm:num_requests_running"),
			    "Number of requests in model execution batches.");
	assert_null(prom_help(p, "process_start_time_seconds"));
	s = prom_find(p, "process_start_time_seconds", NULL, 0);
	assert_non_null(s);
	assert_true(s->value == 1.732912345e9);
	assert_int_equal(s->n_labels, 0);
	prom_free(p);
}

static void test_escapes_and_specials(void **state)
{
	const char *text =
		"# HELP m a \\\\ backslash and\\na newline\n"
		"m{path=\"C:\\\\dir\\\\\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\",brace=\"}{,=\",} NaN\n"
		"m{k=\"inf\"} +Inf 1700000000000\n"
		"m { k = \"neg\" } -Inf -5\n"
		"m{k=\"e\"} -1.5e-3\r\n";
	const char *esc[] = { "quote", "say \"hi\"" };
	const char *inf[] = { "k", "inf" };
	const char *neg[] = { "k", "neg" };
	const char *e[] = { "k", "e" };
	const struct prom_sample *s;
	struct prom *p = parse_ok(text);

	(void)state;
	assert_int_equal(prom_n_samples(p), 4);
	assert_string_equal(prom_help(p, "m"), "a \\ backslash and\na newline");
	s = prom_find(p, "m", esc, 1);
	assert_non_null(s);
	assert_string_equal(prom_label(s, "path"), "C:\\dir\\");
	assert_string_equal(prom_label(s, "nl"), "a\nb");
	assert_string_equal(prom_label(s, "brace"), "}{,=");
	assert_true(isnan(s->value));
	assert_false(s->has_timestamp);
	s = prom_find(p, "m", inf, 1);
	assert_true(isinf(s->value) && s->value > 0);
	assert_true(s->has_timestamp);
	assert_true(s->timestamp == INT64_C(1700000000000));
	s = prom_find(p, "m", neg, 1);
	assert_non_null(s);
	assert_true(isinf(s->value) && s->value < 0);
	assert_true(s->timestamp == -5);
	s = prom_find(p, "m", e, 1);
	assert_true(s->value == -1.5e-3);
	prom_free(p);
}

/* A metric name inside a label value is not the metric. */
/* Every value the text format allows (it defers to Go's ParseFloat):
 * llama-server writes `inf`. */
static void test_values(void **state)
{
	static const char text[] =
		"llamacpp:a inf\n"
		"llamacpp:b +Inf\n"
		"llamacpp:c -inf\n"
		"llamacpp:d NaN\n"
		"llamacpp:e nan\n"
		"llamacpp:f 1.5e3\n"
		"llamacpp:g -2E-2 1395066363000\n"
		"llamacpp:h +Infinity\n"
		"llamacpp:i 0x1p-2\n"
		"llamacpp:j 7 -12\n"
		"llamacpp:k .5\n";
	struct prom *p = NULL;
	struct status_info si = { 0 };

	(void)state;
	assert_int_equal(prom_parse(text, strlen(text), &p, &si), STATUS_OK);
	assert_int_equal(prom_n_samples(p), 11);
	assert_true(isinf(prom_sample(p, 0)->value) && prom_sample(p, 0)->value > 0);
	assert_true(isinf(prom_sample(p, 1)->value) && prom_sample(p, 1)->value > 0);
	assert_true(isinf(prom_sample(p, 2)->value) && prom_sample(p, 2)->value < 0);
	assert_true(isnan(prom_sample(p, 3)->value));
	assert_true(isnan(prom_sample(p, 4)->value));
	assert_true(prom_sample(p, 5)->value == 1500.0);
	assert_true(prom_sample(p, 6)->value == -0.02);
	assert_true(prom_sample(p, 6)->has_timestamp && prom_sample(p, 6)->timestamp == 1395066363000);
	assert_true(isinf(prom_sample(p, 7)->value));
	assert_true(prom_sample(p, 8)->value == 0.25);
	assert_true(prom_sample(p, 9)->timestamp == -12);
	assert_true(prom_sample(p, 10)->value == 0.5);
	prom_free(p);
	/* still refused: what ParseFloat refuses */
	assert_int_equal(prom_parse("m infx\n", 7, &p, &si), STATUS_PARSE);
	assert_int_equal(prom_parse("m nan(1)\n", 9, &p, &si), STATUS_PARSE);
	assert_int_equal(prom_parse("m 1e\n", 5, &p, &si), STATUS_PARSE);
}

static void test_name_in_label_is_not_metric(void **state)
{
	struct prom *p = parse_ok("other{help=\"vllm:cache_config_info{cache_dtype=\\\"bf8\\\"} 1\"} 1\n");

	(void)state;
	assert_null(prom_find(p, "vllm:cache_config_info", NULL, 0));
	prom_free(p);
}

static void test_empty(void **state)
{
	struct prom *p = parse_ok("");

	(void)state;
	assert_int_equal(prom_n_samples(p), 0);
	prom_free(p);
	p = parse_ok("# HELP x nothing\n\n");
	assert_int_equal(prom_n_samples(p), 0);
	prom_free(p);
}

static void test_errors(void **state)
{
	(void)state;
	parse_bad("ok 1\nm{a=\"x} 1\n", STATUS_PARSE, 2, "not terminated");
	parse_bad("m{a=x} 1\n", STATUS_PARSE, 1, "not quoted");
	parse_bad("m{a=\"\\t\"} 1\n", STATUS_PARSE, 1, "bad escape");
	parse_bad("m{a=\"1\",a=\"2\"} 1\n", STATUS_PARSE, 1, "repeated label");
	parse_bad("m{a=\"1\" b=\"2\"} 1\n", STATUS_PARSE, 1, "',' or '}'");
	parse_bad("m{a=\"1\"\n", STATUS_PARSE, 1, "not closed");
	parse_bad("m\n", STATUS_PARSE, 1, "without a value");
	parse_bad("m one\n", STATUS_PARSE, 1, "bad sample value");
	parse_bad("m 0x10\n", STATUS_PARSE, 1, "bad sample value");
	parse_bad("m nanx\n", STATUS_PARSE, 1, "bad sample value");
	parse_bad("m 1 12.5\n", STATUS_PARSE, 1, "bad timestamp");
	parse_bad("m 1 2 3\n", STATUS_PARSE, 1, "after the timestamp");
	parse_bad("9m 1\n", STATUS_PARSE, 1, "metric name expected");
	parse_bad("m-x 1\n", STATUS_PARSE, 1, "bad character");
	parse_bad("# TYPE m gauge\n# TYPE m counter\n", STATUS_PARSE, 2, "second TYPE");
	parse_bad("# TYPE m widget\n", STATUS_PARSE, 1, "unknown metric type");
	parse_bad("<html>502 Bad Gateway</html>\n", STATUS_PARSE, 1, "metric name expected");
}

static void test_nul_and_cap(void **state)
{
	struct status_info si = { 0 };
	struct prom *p = NULL;

	(void)state;
	assert_int_equal(prom_parse("m 1\0\n", 5, &p, &si), STATUS_PARSE);
	assert_null(p);
	assert_int_equal(prom_parse("m 1\n", (size_t)PROM_MAX_BYTES + 1, &p, &si), STATUS_LIMIT);
}

static void test_many_samples(void **state)
{
	static char text[20000 * 24];
	size_t off = 0;
	const char *want[] = { "i", "19999" };
	struct prom *p;
	int i;

	(void)state;
	for (i = 0; i < 20000; i++)
		off += (size_t)sprintf(text + off, "s{i=\"%d\"} %d\n", i, i);
	p = parse_ok(text);
	assert_int_equal(prom_n_samples(p), 20000);
	assert_true(prom_find(p, "s", want, 1)->value == 19999);
	assert_int_equal(prom_find(p, "s", want, 1)->line, 20000);
	prom_free(p);
}

/* llama-server's /metrics page as recorded (fixtures/llamacpp/metrics.prom):
 * twelve llamacpp:* samples, `inf` throughputs while no time was measured, the
 * token counters the interop tests compare with the responses' usage. */
static void test_llamacpp_recorded(void **state)
{
	char buf[8192];
	size_t n;
	FILE *fp;
	struct prom *p = NULL;
	struct status_info si = { 0 };
	const struct prom_sample *s;

	(void)state;
	fp = fopen("fixtures/llamacpp/metrics.prom", "rb");
	assert_non_null(fp);
	n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	assert_int_equal(prom_parse(buf, n, &p, &si), STATUS_OK);
	assert_int_equal(prom_n_samples(p), 12);
	s = prom_find(p, "llamacpp:tokens_predicted_total", NULL, 0);
	assert_non_null(s);
	assert_true(s->value == 3.0);
	s = prom_find(p, "llamacpp:prompt_tokens_total", NULL, 0);
	assert_non_null(s);
	assert_true(s->value == 3.0);
	s = prom_find(p, "llamacpp:predicted_tokens_seconds", NULL, 0);
	assert_non_null(s);
	assert_true(isinf(s->value) && s->value > 0);
	prom_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vllm_page),
		cmocka_unit_test(test_escapes_and_specials),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_llamacpp_recorded),
		cmocka_unit_test(test_name_in_label_is_not_metric),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_nul_and_cap),
		cmocka_unit_test(test_many_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
