/* test_armspec.c - arm specs (probe/armspec.c): every load error names file:line and what is wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "probe/armspec.h"

static char tmpdir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/ttaudit-test-armspec.XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
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

/* The spec must fail to load at `line` with a message holding `part`. */
static void spec_bad(const char *text, long line, const char *part)
{
	struct status_info si = { 0 };
	struct arm_spec *s = NULL;
	const char *path = write_spec(text);

	if (arm_spec_load(path, &s, &si) == STATUS_OK)
		fail_msg("spec loaded, want an error at line %ld (%s)", line, part);
	assert_null(s);
	assert_string_equal(si.file, path);
	if (si.line != line)
		fail_msg("error at line %ld, want %ld: %s", si.line, line, si.msg);
	contains(si.msg, part);
}

static void test_spec_errors(void **state)
{
	(void)state;
	spec_bad("{\n \"arms\": {\n  \"a\": {\"requires\": [{\"log\": \"x\"}]}\n  \"b\": {}\n }\n}\n", 4, "not JSON");
	spec_bad("", 1, "not JSON");
	spec_bad("[]\n", 1, "want an object");
	spec_bad("{\"arms\": {}}\n", 1, "declares no arm");
	spec_bad("{\"version\": 2, \"arms\": {}}\n", 1, "version must be 1");
	spec_bad("{\n\"arms\": {\"a\": {\"requires\": [{\"log\": \"x\"}]}},\n\"colour\": 1}\n", 3, "unknown key 'colour'");
	spec_bad("{\"arms\": {\n\"a\": {\n\"requires\": [\n{\"log\": \"ok\"},\n{\"lg\": \"typo\"}\n]}}}\n", 5, "requires[1]: unknown key 'lg'");
	spec_bad("{\"arms\": {\n\"a\": {\"requires\": [\n\n{\"log\": \"(unclosed\"}]}}}\n", 4, "bad pattern");
	spec_bad("{\"arms\": {\n\"a\": {\"requires\": [{\"audit\": \"batchx\"}]}}}\n", 2, "batchx");
	spec_bad("{\"arms\": {\n\"a\": {\"requires\": []}}}\n", 2, "requires no evidence");
	spec_bad("{\"arms\": {\n\"a\": {\"forbids\": [{\"log\": \"x\"}]}}}\n", 2, "requires no evidence");
	spec_bad("{\"arms\": {\n\"a\": {\"requires\": [{\"log\": \"x\", \"env\": \"Y\"}]}}}\n", 2, "two kinds");
	spec_bad("{\"arms\": {\n\"a\": {\"requires\": [{\"why\": \"nothing\"}]}}}\n", 2, "names no evidence");
	spec_bad("{\"arms\": {\"a\": {\"requires\": [\n{\"log\": \"x\",\n \"labels\": {\"k\": \"v\"}}]}}}\n", 3, "labels belongs to metrics");
	spec_bad("{\"arms\": {\"a\": {\"requires\": [\n{\"metrics\": \"m\", \"labels\": {\"k\":\n 1}}]}}}\n", 3, "label 'k' is integer");
	spec_bad("{\"arms\": {\"a\": {\"requires\": [{\"log\": \"x\"}],\n\"forbids\": [{\"audit\": \"bare\"}]}}}\n", 2, "can only be required");
	spec_bad("{\"arms\": {\"a\": {\"requires\": [\n{\"env\": \"X\", \"equals\": 1}]}}}\n", 2, "env equals must be a string");
	spec_bad("{\"arms\": {\"a\": {\"requires\": [\n{\"models\": \"x\", \"equals\": [1]}]}}}\n", 2, "must be a scalar");
	spec_bad("{\"arms\": {\"a\": {\"requires\": [\n{\"log\": \"\"}]}}}\n", 2, "non-empty string");
	spec_bad("{\"arms\": {\"a\": {\"requires\": [{\"log\": \"x\"}]},\n\"a\": {\"requires\": [{\"log\": \"y\"}]}}}\n", 2, "declared twice");
	spec_bad("{\"arms\": {\"a\": {\"requires\": [{\"log\": \"x\"}],\n\"env\": {\"X\": 1}}}}\n", 2, "env 'X' is integer");
	spec_bad("{\"arms\": {\"a\": {\"requires\": {\"log\": \"x\"}}}}\n", 1, "want an array");
}

static void test_spec_missing_file(void **state)
{
	struct status_info si = { 0 };
	struct arm_spec *s = NULL;

	(void)state;
	assert_int_equal(arm_spec_load("/nonexistent/arms.json", &s, &si), STATUS_IO);
	assert_string_equal(si.file, "/nonexistent/arms.json");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_spec_errors),
		cmocka_unit_test(test_spec_missing_file),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
