/* test_arms.c - evidence evaluation (probe/arms.c) on recorded fixtures (fixtures/arm): met,
 * absent, forbidden-present, clear, unreachable, not evaluable. Spec loading: test_armspec.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "probe/arms.h"

static char fx[512], tmpdir[64];
static struct arm_result *res;

static const char *F(const char *rel)
{
	static char buf[8][700];
	static int k;

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/arm/%s", fx, rel);
	return buf[k];
}

static int setup(void **state)
{
	const char *e = getenv("TTAUDIT_FIXTURES");

	(void)state;
	snprintf(fx, sizeof(fx), "%s", e ? e : "fixtures");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ttaudit-test-arms.XXXXXX");
	res = malloc(sizeof(*res));
	return res && mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	free(res);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *write_spec(const char *text)
{
	static char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/spec.json", tmpdir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static void contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' lacks '%s'", hay, needle);
}

static void test_example_spec(void **state)
{
	struct status_info si = { 0 };
	struct arm_spec *s = NULL;
	char buf[512] = "";
	FILE *f;

	(void)state;
	assert_int_equal(arm_spec_load(F("arms.json"), &s, &si), STATUS_OK);
	assert_int_equal(arm_spec_n_arms(s), 7);
	assert_string_equal(arm_spec_arm(s, 0), "bare");
	assert_true(arm_spec_has(s, "batch+lifetime"));
	assert_false(arm_spec_has(s, "turbo"));
	f = fmemopen(buf, sizeof(buf), "w");
	assert_int_equal(arm_spec_print_env(s, "batch+lifetime", f, &si), STATUS_OK);
	fclose(f);
	assert_string_equal(buf, "QWEN36_MERGE_BATCH_GUARD=1\nQWEN36_MERGE_LIFETIME_GUARD=1\n");
	assert_int_equal(arm_check(s, "turbo", &(struct arm_sources){ 0 }, res, &si), STATUS_NOTFOUND);
	arm_spec_free(s);
}

/* Evaluates arm `arm` of the offline spec (log, audit, forbids) on the given sources. */
static const char offline_spec[] =
	"{\"arms\": {\n"
	" \"batch\": {\"env\": {\"QWEN36_MERGE_BATCH_GUARD\": \"1\"},\n"
	"  \"requires\": [{\"log\": \"QWEN36_MERGE_BATCH_GUARD engaged\"}, {\"audit\": \"batch\"}],\n"
	"  \"forbids\": [{\"log\": \"unguarded position match\"}]},\n"
	" \"bare\": {\"requires\": [{\"log\": \"unguarded position match\"}],\n"
	"  \"forbids\": [{\"log\": \"QWEN36_[A-Z_]+ engaged\"}]},\n"
	" \"batch_rule\": {\"requires\": [{\"log\": \"QWEN36_MERGE_BATCH_GUARD engaged\"}, {\"audit\": \"batch\"}],\n"
	"  \"forbids\": [{\"log\": \"unguarded position match|guard none engaged\", \"rule\": \"arm:bare\"}]},\n"
	" \"env\": {\"requires\": [{\"env\": \"QWEN36_MERGE_BATCH_GUARD\", \"equals\": \"1\"}],\n"
	"  \"forbids\": [{\"env\": \"QWEN36_MERGE_STAMP_GUARD\"}]},\n"
	" \"http\": {\"requires\": [{\"metrics\": \"vllm:cache_config_info\"},\n"
	"  {\"models\": \"max_model_len\", \"equals\": 131072}]}\n"
	"}}\n";

static void check(const char *arm, const char *log, const char *capture)
{
	struct status_info si = { 0 };
	struct arm_spec *s = NULL;
	struct arm_sources src = { 0 };

	assert_int_equal(arm_spec_load(write_spec(offline_spec), &s, &si), STATUS_OK);
	src.log = log;
	src.capture = capture;
	src.timeout = 2;
	assert_int_equal(arm_check(s, arm, &src, res, &si), STATUS_OK);
	arm_spec_free(s);
}

static void verdicts(enum arm_verdict a, enum arm_verdict b, enum arm_verdict c, int confirmed)
{
	const enum arm_verdict want[3] = { a, b, c };
	size_t i;

	for (i = 0; i < res->n_items; i++)
		if (res->items[i].verdict != want[i])
			fail_msg("item %zu (%s): %s, want %s; %s %s", i, res->items[i].what,
				 arm_verdict_name(res->items[i].verdict), arm_verdict_name(want[i]),
				 res->items[i].where, res->items[i].reason);
	assert_int_equal(res->confirmed, confirmed);
}

static void test_confirmed(void **state)
{
	(void)state;
	check("batch", F("batch.log"), NULL);
	assert_int_equal(res->n_items, 3);
	verdicts(ARM_MET, ARM_MET, ARM_CLEAR, 1);
	contains(res->items[0].where, "batch.log:2");
	contains(res->items[0].quote, "QWEN36_MERGE_BATCH_GUARD engaged: merge requires");
	contains(res->items[1].quote, "CONSISTENT");
	contains(res->items[2].reason, "not in");
	check("bare", F("bare.log"), NULL);
	verdicts(ARM_MET, ARM_CLEAR, 0, 1);
}

/*
 * A server log's audit lines are read by the audit reader whatever their
 * length up to its cap: a wide batch's merge line is longer than the 64 KiB
 * a log line is matched on.
 */
static void test_long_audit_lines(void **state)
{
	static char pad[70001];
	char path[160], line[1024];
	FILE *in, *out;

	(void)state;
	memset(pad, 'x', sizeof(pad) - 1);
	snprintf(path, sizeof(path), "%s/long.log", tmpdir);
	in = fopen(F("batch.log"), "r");
	out = fopen(path, "w");
	assert_non_null(in);
	assert_non_null(out);
	while (fgets(line, sizeof(line), in)) {
		char *brace = strstr(line, "MERGE_AUDIT {");
		if (brace) {
			brace += strlen("MERGE_AUDIT {");
			fprintf(out, "%.*s\"pad\":\"%s\",%s", (int)(brace - line), line, pad, brace);
		} else {
			fputs(line, out);
		}
	}
	fclose(in);
	assert_int_equal(fclose(out), 0);
	check("batch", path, NULL);
	verdicts(ARM_MET, ARM_MET, ARM_CLEAR, 1);
	contains(res->items[1].quote, "CONSISTENT");
}

static void test_banner_without_guard(void **state)
{
	(void)state;
	check("batch", F("banner-only.log"), NULL);
	verdicts(ARM_MET, ARM_ABSENT, ARM_CLEAR, 0);
	contains(res->items[1].reason, "contradict 'batch'");
	contains(res->items[1].reason, "step 41");
	contains(res->items[1].reason, "bare");
}

static void test_guard_without_banner(void **state)
{
	(void)state;
	check("batch", F("no-banner.log"), NULL);
	verdicts(ARM_ABSENT, ARM_MET, ARM_CLEAR, 0);
	contains(res->items[0].reason, "not in");
}

static void test_control_banner_forbidden(void **state)
{
	(void)state;
	check("batch", F("bare.log"), NULL);
	verdicts(ARM_ABSENT, ARM_ABSENT, ARM_FORBIDDEN_PRESENT, 0);
	contains(res->items[2].where, "bare.log:2");
	contains(res->items[2].quote, "unguarded position match");
	/* the reverse: a control that became the treatment */
	check("bare", F("batch.log"), NULL);
	verdicts(ARM_ABSENT, ARM_FORBIDDEN_PRESENT, 0, 0);
}

static void test_fingerprint_not_met(void **state)
{
	(void)state;
	check("batch", F("withheld.log"), NULL);
	verdicts(ARM_MET, ARM_ABSENT, ARM_CLEAR, 0);
	contains(res->items[1].reason, "WITHHELD");
	contains(res->items[1].reason, "no event separates");
	check("batch", F("no-taken.log"), NULL);
	verdicts(ARM_MET, ARM_ABSENT, ARM_CLEAR, 0);
	contains(res->items[1].reason, "NO_TAKEN");
}

/* Empty and missing sources fail closed, for required and forbidden items alike. */
static void test_unreachable(void **state)
{
	(void)state;
	check("batch", F("empty.log"), NULL);
	verdicts(ARM_UNREACHABLE, ARM_UNREACHABLE, ARM_UNREACHABLE, 0);
	contains(res->items[0].reason, "is empty");
	check("batch", F("no-such.log"), NULL);
	verdicts(ARM_UNREACHABLE, ARM_UNREACHABLE, ARM_UNREACHABLE, 0);
	contains(res->items[0].reason, "No such file");
	check("batch", NULL, NULL);
	verdicts(ARM_UNREACHABLE, ARM_UNREACHABLE, ARM_UNREACHABLE, 0);
	contains(res->items[0].reason, "no engine log or capture given");
	/* a forbidden banner found in one source still counts when the other is unreachable */
	check("batch", F("no-such.log"), F("batch.cap.jsonl"));
	verdicts(ARM_MET, ARM_MET, ARM_UNREACHABLE, 0);
	/* no server: metrics and models cannot be read */
	check("http", NULL, NULL);
	verdicts(ARM_UNREACHABLE, ARM_UNREACHABLE, 0, 0);
	contains(res->items[0].reason, "no server url");
}

static void test_capture(void **state)
{
	(void)state;
	/* a capture taken with its rules only could not have recorded the
	 * forbidden line: its absence there is no evidence, and the arm fails */
	check("batch", NULL, F("batch.cap.jsonl"));
	verdicts(ARM_MET, ARM_MET, ARM_NOT_EVALUABLE, 0);
	contains(res->items[0].where, "batch.cap.jsonl:2");
	contains(res->items[2].reason, "without --all-lines");
	/* naming the banner rule that records the line makes it evaluable */
	check("batch_rule", NULL, F("batch.cap.jsonl"));
	verdicts(ARM_MET, ARM_MET, ARM_CLEAR, 1);
	/* and so does a log, which has every line */
	check("batch", F("batch.log"), F("batch.cap.jsonl"));
	verdicts(ARM_MET, ARM_MET, ARM_CLEAR, 1);
	check("env", NULL, F("batch.cap.jsonl"));
	verdicts(ARM_MET, ARM_CLEAR, 0, 1);
	assert_string_equal(res->items[0].quote, "QWEN36_MERGE_BATCH_GUARD=1 (the process that wrote the audit)");
	/* the environment is the engine's (the audit writer's), not the
	 * launcher's: a flag the launcher had and did not forward is absent */
	check("env", NULL, F("engine-child.cap.jsonl"));
	verdicts(ARM_ABSENT, ARM_CLEAR, 0, 0);
	contains(res->items[0].reason, "engine-child.cap.jsonl:2");
	contains(res->items[0].reason, "the process that wrote the audit");
	check("env", NULL, F("no-start.cap.jsonl"));
	verdicts(ARM_UNREACHABLE, ARM_UNREACHABLE, 0, 0);
	contains(res->items[0].reason, "no start record");
	check("env", F("batch.log"), NULL);
	verdicts(ARM_UNREACHABLE, ARM_UNREACHABLE, 0, 0);
	contains(res->items[0].reason, "no capture given");
}

static void test_env_mismatch(void **state)
{
	struct status_info si = { 0 };
	struct arm_spec *s = NULL;
	struct arm_sources src = { 0 };

	(void)state;
	assert_int_equal(arm_spec_load(write_spec(
		"{\"arms\": {\"x\": {\"requires\": [{\"env\": \"QWEN36_MERGE_BATCH_GUARD\", \"equals\": \"0\"},\n"
		"{\"env\": \"QWEN36_MERGE_STAMP_GUARD\"}],\n"
		"\"forbids\": [{\"env\": \"TT_METAL_HOME\"}]}}}\n"), &s, &si), STATUS_OK);
	src.capture = F("batch.cap.jsonl");
	assert_int_equal(arm_check(s, "x", &src, res, &si), STATUS_OK);
	verdicts(ARM_ABSENT, ARM_ABSENT, ARM_FORBIDDEN_PRESENT, 0);
	contains(res->items[0].reason, "QWEN36_MERGE_BATCH_GUARD=1");
	contains(res->items[1].reason, "not in the environment of the process that wrote the audit");
	arm_spec_free(s);
}

static void test_json(void **state)
{
	char *js;

	(void)state;
	check("batch", F("banner-only.log"), NULL);
	js = arm_result_json(res);
	assert_non_null(js);
	contains(js, "\"verdict\":\"FAIL\"");
	contains(js, "\"verdict\":\"absent\"");
	contains(js, "\"kind\":\"audit\"");
	free(js);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_spec),
		cmocka_unit_test(test_confirmed),
		cmocka_unit_test(test_long_audit_lines),
		cmocka_unit_test(test_banner_without_guard),
		cmocka_unit_test(test_guard_without_banner),
		cmocka_unit_test(test_control_banner_forbidden),
		cmocka_unit_test(test_fingerprint_not_met),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_capture),
		cmocka_unit_test(test_env_mismatch),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
