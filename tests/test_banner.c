/* test_banner.c - banner rules: the built-in set, rules files, matching. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "banner.h"

static const char *match(const struct banner_set *set, const char *line)
{
	static struct banner_scratch sc;
	int r;

	banner_scratch_init(&sc);
	r = banner_set_match(set, line, strlen(line), &sc);
	return r < 0 ? "-" : banner_set_name(set, (size_t)r);
}

/* The guard banners exactly as docs/capture.md and the simulator print them. */
static void test_defaults(void **state)
{
	struct banner_set *set = banner_set_default();
	static const char *const cases[][2] = {
		{ "INFO 11-29 20:41:02 [generator.py:1930] async merge: unguarded position match (no merge guard engaged)", "arm:bare" },
		{ "INFO 11-29 20:41:02 [generator.py:1930] QWEN36_PREFILLED_SLOTS_FIX engaged: merge masks slots prefilled since the last decode", "arm:prefilled" },
		{ "QWEN36_MERGE_BATCH_GUARD engaged: merge requires the buffer's active-slot pattern to match the batch", "arm:batch" },
		{ "QWEN36_MERGE_LIFETIME_GUARD engaged: merge requires a buffer written by the immediately preceding decode", "arm:lifetime" },
		{ "QWEN36_MERGE_STAMP_GUARD engaged: merge requires the buffer's generation stamp to match", "arm:stamp" },
		{ "QWEN36_MERGE_GARBAGE_BOUND engaged: merge ignores device positions outside [-1, max_model_len)", "arm:bound" },
		{ "INFO 11-29 20:40:00 [api_server.py:1090] vLLM API server version 0.9.2", "vllm:version" },
		{ "INFO 11-29 20:40:00 [cli_args.py:325] non-default args: {'model': 'Qwen/Qwen3'}", "vllm:args" },
		{ "INFO:     Application startup complete.", "vllm:ready" },
		{ "                 Device | INFO     | Opening user mode device driver", "tt:device" },
		{ "INFO 11-29 20:40:00 plain log line", "-" },
		{ "QWEN36_MERGE_BATCH_GUARD=1 set but not engaged", "-" },
		{ "", "-" },
	};
	size_t i;

	(void)state;
	assert_non_null(set);
	assert_true(banner_set_count(set) >= 6);
	assert_true(banner_set_filtered(set));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(match(set, cases[i][0]), cases[i][1]);
	banner_set_free(set);
}

static void test_parse(void **state)
{
	static const char text[] =
		"# comment\n"
		"\n"
		"  first   ^alpha (\\d+)$\r\n"
		"second\tbeta|gamma\n"
		"third (*UTF)delta\n";   /* start-of-pattern item: set matched rule by rule */
	struct banner_set *set = NULL;

	(void)state;
	assert_int_equal(banner_set_parse(text, strlen(text), "t", &set, NULL), STATUS_OK);
	assert_int_equal(banner_set_count(set), 3);
	assert_false(banner_set_filtered(set));      /* (*UTF) is not read for literals */
	assert_string_equal(match(set, "alpha 12"), "first");
	assert_string_equal(match(set, "alpha x"), "-");
	assert_string_equal(match(set, "x gamma y"), "second");
	assert_string_equal(match(set, "delta"), "third");
	assert_string_equal(match(set, "beta alpha 1"), "second");   /* beta matches; first is anchored */
	banner_set_free(set);
	/* first rule in file order wins */
	assert_int_equal(banner_set_parse("a x\nb x\n", 8, "t", &set, NULL), STATUS_OK);
	assert_string_equal(match(set, "x"), "a");
	banner_set_free(set);
}

static void test_errors(void **state)
{
	struct banner_set *set = NULL;
	struct status_info si;

	(void)state;
	status_info_clear(&si);
	assert_int_equal(banner_set_parse("ok a\nbad (x\n", 12, "r.rules", &set, &si), STATUS_PARSE);
	assert_null(set);
	assert_string_equal(si.file, "r.rules");
	assert_int_equal(si.line, 2);
	assert_non_null(strstr(si.msg, "pattern error"));
	status_info_clear(&si);
	assert_int_equal(banner_set_parse("lonely\n", 7, "r", &set, &si), STATUS_PARSE);
	assert_non_null(strstr(si.msg, "has no pattern"));
	status_info_clear(&si);
	assert_int_equal(banner_set_parse("na/me x\n", 8, "r", &set, &si), STATUS_PARSE);
	assert_non_null(strstr(si.msg, "character '/'"));
	status_info_clear(&si);
	assert_int_equal(banner_set_load("/nonexistent/rules", &set, &si), STATUS_IO);
	assert_non_null(strstr(si.msg, "cannot open rules file"));
}

static void test_load(void **state)
{
	char path[] = "/tmp/test_banner.XXXXXX";
	int fd = mkstemp(path);
	struct banner_set *set = NULL;
	struct status_info si;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "# nothing\n", 10), 10);
	close(fd);
	status_info_clear(&si);
	assert_int_equal(banner_set_load(path, &set, &si), STATUS_PARSE);
	assert_non_null(strstr(si.msg, "no rules"));
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "mine hello\n", 11), 11);
	close(fd);
	assert_int_equal(banner_set_load(path, &set, NULL), STATUS_OK);
	assert_string_equal(match(set, "say hello"), "mine");
	banner_set_free(set);
	unlink(path);
}

/* The literal prefilter never hides a match. */
static void test_prefilter(void **state)
{
	static const char text[] =
		"plus ab+cdef\n"          /* "abbcdef" matches: the run stops after b+ */
		"opt  xy?zzzz\n"          /* "xzzzz" matches: y is optional */
		"grp  (?:qq)?wwww\n"
		"esc  \\(lit\\)\n"
		"alt  foo1|barr\n"
		"cls  [Ff]irmware\n";
	static const char *const cases[][2] = {
		{ "abbbcdef", "plus" }, { "abcdef", "plus" }, { "acdef", "-" },
		{ "xzzzz", "opt" }, { "xyzzzz", "opt" },
		{ "wwww", "grp" }, { "(lit)", "esc" }, { "barr", "alt" }, { "foo1", "alt" },
		{ "Firmware", "cls" }, { "firmware x", "cls" }, { "nothing here", "-" },
	};
	struct banner_set *set = NULL;
	size_t i;

	(void)state;
	assert_int_equal(banner_set_parse(text, strlen(text), "t", &set, NULL), STATUS_OK);
	assert_true(banner_set_filtered(set));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(match(set, cases[i][0]), cases[i][1]);
	banner_set_free(set);
	/* a branch without 4 literal bytes turns the filter off, and still matches */
	assert_int_equal(banner_set_parse("short ab|longer\n", 16, "t", &set, NULL), STATUS_OK);
	assert_false(banner_set_filtered(set));
	assert_string_equal(match(set, "xaby"), "short");
	banner_set_free(set);
}

/* Escape and quantifier arguments are not literal text the line must hold. */
static void test_prefilter_escapes(void **state)
{
	static const char text[] =
		"hex  ab\\x41cdef\n"       /* \x41 is "A", not "41" */
		"oct  \\101BCDE\n"         /* \101 is "A" */
		"rep  zz{1,1000}yyyy\n"     /* "1,1000" is a quantifier */
		"ctl  \\cAwxyz\n";          /* \cA is byte 1 */
	static const char *const cases[][2] = {
		{ "abAcdef", "hex" }, { "ABCDE", "oct" }, { "zzzyyyy", "rep" }, { "\001wxyz", "ctl" },
		{ "ab41cdef", "-" },
	};
	struct banner_set *set = NULL;
	size_t i;

	(void)state;
	assert_int_equal(banner_set_parse(text, strlen(text), "t", &set, NULL), STATUS_OK);
	assert_true(banner_set_filtered(set));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(match(set, cases[i][0]), cases[i][1]);
	banner_set_free(set);
}

/*
 * The prefilter probes a line only every few bytes: a banner is found
 * wherever it starts, for every rule of the built-in set and for a set whose
 * shortest literal (seven bytes) makes the probes four bytes apart.
 */
static void test_prefilter_offsets(void **state)
{
	static const char *const lines[][2] = {
		{ "async merge: unguarded position match (no merge guard engaged)", "arm:bare" },
		{ "QWEN36_PREFILLED_SLOTS_FIX engaged", "arm:prefilled" },
		{ "QWEN36_MERGE_BATCH_GUARD engaged", "arm:batch" },
		{ "QWEN36_MERGE_LIFETIME_GUARD engaged", "arm:lifetime" },
		{ "QWEN36_MERGE_STAMP_GUARD engaged", "arm:stamp" },
		{ "QWEN36_MERGE_GARBAGE_BOUND engaged", "arm:bound" },
		{ "vLLM API server version 1", "vllm:version" },
		{ "non-default args: ", "vllm:args" },
		{ "Initializing a LLM engine", "vllm:engine" },
		{ "Initializing an V1 LLM engine", "vllm:engine" },
		{ "# GPU blocks: ", "vllm:kv_cache" },
		{ "Maximum concurrency for ", "vllm:kv_cache" },
		{ "Uvicorn running on ", "vllm:ready" },
		{ "Detected chips", "tt:device" },
		{ "firmware version", "tt:firmware" },
		{ "Firmware bundle version", "tt:firmware" },
		{ "KMD version", "tt:kmd" },
		{ "mesh device shape", "tt:mesh" },
		{ "MESH_DEVICE=", "tt:mesh" },
	};
	static const char seven[] = "seven abcdefg|0123456789abcdefghijklmnop\n";
	struct banner_set *set = banner_set_default(), *four = NULL;
	char line[256];
	size_t i, pad;

	(void)state;
	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		for (pad = 0; pad < 40; pad++) {
			snprintf(line, sizeof(line), "%.*s%s%.*s", (int)pad,
				 "........................................", lines[i][0], (int)(pad % 7),
				 "xxxxxxx");
			assert_string_equal(match(set, line), lines[i][1]);
		}
	banner_set_free(set);
	assert_int_equal(banner_set_parse(seven, strlen(seven), "t", &four, NULL), STATUS_OK);
	assert_true(banner_set_filtered(four));
	for (pad = 0; pad < 12; pad++) {
		snprintf(line, sizeof(line), "%.*sabcdefg", (int)pad, "............");
		assert_string_equal(match(four, line), "seven");
		snprintf(line, sizeof(line), "%.*sabcdef g", (int)pad, "............");
		assert_string_equal(match(four, line), "-");
	}
	banner_set_free(four);
}

/* Matching allocates nothing: the scratch arena holds PCRE2's match data. */
static void test_scratch(void **state)
{
	struct banner_set *set = banner_set_default();
	struct banner_scratch sc;
	size_t used;
	int i;

	(void)state;
	banner_scratch_init(&sc);
	assert_true(banner_set_match(set, "KMD version 1.2", 15, &sc) >= 0);
	used = sc.used;
	assert_true(used > 0 && used <= sizeof(sc.arena));
	for (i = 0; i < 1000; i++)
		banner_set_match(set, "INFO nothing to see", 19, &sc);
	assert_int_equal(sc.used, used);
	banner_set_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_prefilter),
		cmocka_unit_test(test_prefilter_escapes),
		cmocka_unit_test(test_prefilter_offsets),
		cmocka_unit_test(test_scratch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
