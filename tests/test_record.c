/* test_record.c - run records: the gate where they are written, and their fields. */
#include <math.h>
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

#include "bench/record.h"

static void test_gate(void **state)
{
	struct record_identity id = { .url = "http://h:1", .ready = true };
	struct status_info si = { 0 };

	(void)state;
	assert_int_equal(record_gate(&id, &si), STATUS_OK);
	id.ready = false;
	assert_int_equal(record_gate(&id, &si), STATUS_USAGE);
	assert_non_null(strstr(si.msg, "readiness gate"));
	id.ready = true;
	id.arm = "stamp";
	id.arm_state = RECORD_ARM_FAILED;
	assert_int_equal(record_gate(&id, &si), STATUS_USAGE);
	assert_non_null(strstr(si.msg, "arm 'stamp'"));
	id.arm_state = RECORD_ARM_NONE;       /* named but never checked */
	assert_int_equal(record_gate(&id, &si), STATUS_USAGE);
	id.arm_state = RECORD_ARM_UNCONFIRMED;
	assert_int_equal(record_gate(&id, &si), STATUS_OK);
	id.arm_state = RECORD_ARM_CONFIRMED;
	assert_int_equal(record_gate(&id, &si), STATUS_OK);
	id.arm = NULL;                        /* a state without an arm */
	assert_int_equal(record_gate(&id, &si), STATUS_USAGE);
}

static void test_write(void **state)
{
	char path[64], line[65536];
	struct record *w = NULL;
	struct record_identity id = { .tool_version = "9.9", .url = "http://h:1", .model = "m", .arm = "stamp",
				      .arm_state = RECORD_ARM_UNCONFIRMED, .host = "box", .ready = true,
				      .suite_hash = "fnv1a64:00", .config_hash = "fnv1a64:11",
				      .corpus_seed = 18446744073709551615ull };
	struct record_cell cell = { .run_id = "r1", .phase = "bench", .arrival = LOAD_POISSON, .rate = 2.5,
				    .arrival_seed = 7, .cache_claim = "cold", .prefix_known = true,
				    .prefix_hits_delta = 32, .cold_claim_valid = false, .temperature = -1 };
	double tt[2] = { 5.5, 5.75 };
	struct load_result res[2] = {
		{ .index = 0, .id = "cmpl-1", .t_launch = 5, .t_first = 5.5, .t_last = 5.75, .t_end = 5.8,
		  .tok_t = tt, .n_chunks = 2, .usage_prompt = 10, .usage_completion = 2, .done = true,
		  .http_status = 200, .finish_reason = "length" },
		{ .index = 1, .id = "", .t_launch = 5, .t_end = 5.1, .usage_prompt = -1, .usage_completion = -1,
		  .fail = LOAD_FAIL_HTTP, .http_status = 500, .reason = "http 500: boom" },
	};
	struct load_run run = { .res = res, .n = 2, .arrival = LOAD_POISSON, .t_start = 5, .t_end = 5.8,
				.max_inflight = 2 };
	struct stats_run st;
	FILE *f;
	cJSON *o, *v;
	int n = 0;

	(void)state;
	snprintf(path, sizeof(path), "/tmp/test_record.%ld.jsonl", (long)getpid());
	assert_int_equal(stats_run_compute(&run, &st, NULL), STATUS_OK);
	/* yesterday's run stays whole until this one is written: no reader sees half */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("old\n", f);
	fclose(f);
	assert_int_equal(record_open(&w, path, NULL), STATUS_OK);
	assert_int_equal(record_run(w, &id, &cell, &run, &st, true, NULL), STATUS_OK);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	assert_string_equal(line, "old\n");
	fclose(f);
	/* refused at the writer when the gate did not pass */
	id.ready = false;
	assert_int_equal(record_run(w, &id, &cell, &run, &st, true, NULL), STATUS_USAGE);
	assert_int_equal(record_close(w, NULL), STATUS_OK);
	stats_run_release(&st);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		o = cJSON_Parse(line);
		assert_non_null(o);
		if (n == 0) {
			assert_string_equal(cJSON_GetObjectItem(o, "kind")->valuestring, "run");
			v = cJSON_GetObjectItem(o, "identity");
			assert_string_equal(cJSON_GetObjectItem(v, "arm_state")->valuestring, "unconfirmed");
			assert_string_equal(cJSON_GetObjectItem(v, "corpus_seed")->valuestring, "18446744073709551615");
			assert_string_equal(cJSON_GetObjectItem(v, "server_config_hash")->valuestring, "fnv1a64:11");
			assert_true(cJSON_IsTrue(cJSON_GetObjectItem(o, "has_failures")));
			v = cJSON_GetObjectItem(o, "arrival");
			assert_string_equal(cJSON_GetObjectItem(v, "model")->valuestring, "poisson");
			assert_string_equal(cJSON_GetObjectItem(v, "seed")->valuestring, "7");
			assert_true(cJSON_IsFalse(cJSON_GetObjectItem(o, "cold_claim_valid")));
			v = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "figures"), "failures");
			assert_int_equal(cJSON_GetObjectItem(v, "http")->valueint, 1);
		} else if (n == 1) {
			assert_string_equal(cJSON_GetObjectItem(o, "id")->valuestring, "cmpl-1");
			assert_string_equal(cJSON_GetObjectItem(o, "tps_source")->valuestring, "usage");
			assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(o, "token_t")), 2);
			assert_true(cJSON_GetObjectItem(o, "ttft_s")->valuedouble == 0.5);
		} else {
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "id")));
			assert_string_equal(cJSON_GetObjectItem(o, "outcome")->valuestring, "http");
			assert_string_equal(cJSON_GetObjectItem(o, "reason")->valuestring, "http 500: boom");
			assert_string_equal(cJSON_GetObjectItem(o, "tps_source")->valuestring, "chunks");
			assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "ttft_s")));
		}
		cJSON_Delete(o);
		n++;
	}
	fclose(f);
	assert_int_equal(n, 3);
	unlink(path);
	assert_int_equal(record_open(&w, "/nonexistent/dir/run.jsonl", NULL), STATUS_IO);
}

/* The margin pass's records: a label with its figures, and a not-evaluable
 * one whose missing logprobs are null, never 0. */
static void test_margins(void **state)
{
	struct margins_item it[2];
	struct margins_report m = { .items = it, .n = 2, .eps = 0.25 };
	struct record *w = NULL;
	char path[128], line[4096];
	FILE *f;
	cJSON *o;

	(void)state;
	memset(it, 0, sizeof(it));
	snprintf(it[0].request_id, sizeof(it[0].request_id), "r-1");
	it[0].at = 3;
	it[0].label = MARGINS_NEAR_TIE;
	it[0].ob.lp_got = -0.7;
	it[0].ob.lp_ref = -0.69;
	it[0].ob.lp_top = -0.69;
	it[0].ob.ref_known = true;
	it[0].id = -1;
	snprintf(it[1].request_id, sizeof(it[1].request_id), "r-2");
	it[1].label = MARGINS_NOT_EVALUABLE;
	it[1].why = MARGINS_WHY_REFUSED;
	it[1].ob.why = MARGINS_WHY_REFUSED;
	snprintf(it[1].ob.detail, sizeof(it[1].ob.detail), "http 500: Unsupported param: echo");
	it[1].id = 40000;
	snprintf(path, sizeof(path), "/tmp/test_record_margins.%ld.jsonl", (long)getpid());
	assert_int_equal(record_open(&w, path, NULL), STATUS_OK);
	assert_int_equal(record_margins(w, &m, NULL), STATUS_OK);
	assert_int_equal(record_close(w, NULL), STATUS_OK);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f));
	o = cJSON_Parse(line);
	assert_string_equal(cJSON_GetObjectItem(o, "kind")->valuestring, "margin");
	assert_string_equal(cJSON_GetObjectItem(o, "label")->valuestring, "near-tie");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "not_evaluable")));
	assert_true(cJSON_GetObjectItem(o, "logprob_reference")->valuedouble == -0.69);
	assert_true(cJSON_GetObjectItem(o, "epsilon")->valuedouble == 0.25);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "token_id")));
	cJSON_Delete(o);
	assert_non_null(fgets(line, sizeof(line), f));
	o = cJSON_Parse(line);
	assert_string_equal(cJSON_GetObjectItem(o, "label")->valuestring, "not-evaluable");
	assert_string_equal(cJSON_GetObjectItem(o, "not_evaluable")->valuestring, "refused");
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "logprob_output")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "logprob_reference")));
	assert_int_equal(cJSON_GetObjectItem(o, "token_id")->valueint, 40000);
	cJSON_Delete(o);
	assert_null(fgets(line, sizeof(line), f));
	fclose(f);
	unlink(path);
	m.n_label[MARGINS_NEAR_TIE] = 1;
	m.n_label[MARGINS_NOT_EVALUABLE] = 1;
	o = record_margins_json(&m);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "labels"), "not-evaluable")->valueint, 1);
	assert_int_equal(cJSON_GetObjectItem(o, "scored")->valueint, 2);
	cJSON_Delete(o);
}

/* Numbers read back exactly: cJSON's own printer gives 2880.82198403432
 * for 2880.8219840343195 (15 digits within its epsilon), which a summary's
 * median then disagreed with the repeat's own figure by. */
static void test_exact_numbers(void **state)
{
	const double v = 2880.8219840343195;
	cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray(), *back;
	char *s;

	(void)state;
	cJSON_AddNumberToObject(o, "x", v);
	cJSON_AddNumberToObject(o, "n", 1024);
	cJSON_AddItemToArray(a, cJSON_CreateNumber(v));
	cJSON_AddItemToArray(a, cJSON_CreateNumber(NAN));
	cJSON_AddItemToObject(o, "by", a);
	s = record_print(o);
	assert_non_null(s);
	assert_string_equal(s, "{\"x\":2880.8219840343195,\"n\":1024,\"by\":[2880.8219840343195,null]}");
	back = cJSON_Parse(s);
	assert_true(cJSON_GetObjectItem(back, "x")->valuedouble == v);
	assert_true(cJSON_GetArrayItem(cJSON_GetObjectItem(back, "by"), 0)->valuedouble == v);
	cJSON_Delete(back);
	cJSON_free(s);
	cJSON_Delete(o);
	assert_null(record_print(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gate),
		cmocka_unit_test(test_write),
		cmocka_unit_test(test_margins),
		cmocka_unit_test(test_exact_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
