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

#include "capture/banner.h"

static const char *match(const struct banner_set *set, const char *line)
{
	static struct banner_scratch sc;
	int r;

	banner_scratch_init(&sc);
	r = banner_set_match(set, line, strlen(line), &sc);
	return r < 0 ? "-" : banner_set_name(set, (size_t)r);
}

/*
 * The built-in set (capture/banner_rules.c, whose text follows the real
 * lines): it parses, every rule is filtered, and the lines interfaces.md B
 * fixes match their arm rules.
 */
static void test_defaults(void **state)
{
	struct banner_set *set = banner_set_default();
	static const char *const cases[][2] = {
		{ "INFO 11-29 20:41:02 [generator.py:1930] QWEN36_PREFILLED_SLOTS_FIX engaged: merge masks slots prefilled since the last decode", "arm:prefilled" },
		{ "QWEN36_MERGE_BATCH_GUARD engaged: merge requires the buffer's active-slot pattern to match the batch", "arm:batch" },
		{ "QWEN36_MERGE_LIFETIME_GUARD engaged: merge requires a buffer written by the immediately preceding decode", "arm:lifetime" },
		{ "QWEN36_MERGE_STAMP_GUARD engaged: merge requires the buffer's generation stamp to match", "arm:stamp" },
		{ "QWEN36_MERGE_GARBAGE_BOUND engaged: merge ignores device positions outside [-1, max_model_len)", "arm:bound" },
		{ "ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged (env QWEN36_MERGE_BATCH_GUARD=1)", "arm:batch" },
		{ "INFO 11-29 20:40:00 plain log line", "-" },
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

/* A set like the built-in one, fixed here so that the tests below do not follow its changes. */
static const char sample_rules[] =
	"arm:bare async merge: unguarded position match \\(no merge guard engaged\\)\n"
	"arm:prefilled QWEN36_PREFILLED_SLOTS_FIX engaged\n"
	"arm:batch QWEN36_MERGE_BATCH_GUARD engaged\n"
	"arm:lifetime QWEN36_MERGE_LIFETIME_GUARD engaged\n"
	"arm:stamp QWEN36_MERGE_STAMP_GUARD engaged\n"
	"arm:bound QWEN36_MERGE_GARBAGE_BOUND engaged\n"
	"vllm:version vLLM API server version \\S+\n"
	"vllm:args non-default args: \n"
	"vllm:engine Initializing an? (V1 )?LLM engine\n"
	"vllm:kv_cache GPU KV cache size: |# GPU blocks: |Maximum concurrency for \n"
	"vllm:ready Application startup complete|Uvicorn running on \n"
	"tt:device Opening user mode device driver|Detected chips\n"
	"tt:firmware [Ff]irmware version|[Ff]irmware bundle version\n"
	"tt:kmd KMD version\n"
	"tt:mesh [Mm]esh device shape|MESH_DEVICE=\n";

static struct banner_set *sample(void)
{
	struct banner_set *set = NULL;

	assert_int_equal(banner_set_parse(sample_rules, strlen(sample_rules), "sample", &set, NULL), STATUS_OK);
	return set;
}

/*
 * The prefilter runs a rule's pattern only when the line holds one of its
 * literals whole: a line made of pieces of every rule's text runs none.
 */
static void test_candidates(void **state)
{
	static const char fragments[] =
		"INFO decode step 12 version engaged Opening user mode mesh shape device firmware KMD "
		"GPU KV cache size LLM engine non-default args Uvicorn running QWEN36_MERGE_BATCH_GUARD "
		"async merge: unguarded Detected MESH_DEVICE";
	struct banner_set *set = sample(), *loose = NULL;

	(void)state;
	assert_int_equal(banner_set_candidates(set, fragments, strlen(fragments)), 0);
	assert_string_equal(match(set, fragments), "-");
	assert_int_equal(banner_set_candidates(set, "decode step 5 batch 8", 21), 0);
	assert_int_equal(banner_set_candidates(set, "x KMD version 2", 15), 1);
	assert_int_equal(banner_set_candidates(set, "KMD version and QWEN36_MERGE_BATCH_GUARD engaged", 48), 2);
	assert_string_equal(match(set, "KMD version and QWEN36_MERGE_BATCH_GUARD engaged"), "arm:batch");
	banner_set_free(set);
	/* a rule without a literal is tried on every line; the others stay filtered */
	{
		static const char two[] = "any (?i)hello\nlit QWEN36_X engaged\n";
		assert_int_equal(banner_set_parse(two, strlen(two), "t", &loose, NULL), STATUS_OK);
	}
	assert_false(banner_set_filtered(loose));
	assert_int_equal(banner_set_candidates(loose, "nothing", 7), 1);
	assert_int_equal(banner_set_candidates(loose, "QWEN36_X engaged", 16), 2);
	assert_string_equal(match(loose, "say HELLO"), "any");
	assert_string_equal(match(loose, "QWEN36_X engaged"), "lit");
	banner_set_free(loose);
}

/* vLLM's process prefix and ANSI colour codes are not part of what is matched. */
static void test_strip(void **state)
{
	static const char *const cases[][2] = {
		{ "(APIServer pid=123) INFO x", "INFO x" },
		{ "(EngineCore_DP0 pid=7) ttaudit: guard none engaged", "ttaudit: guard none engaged" },
		{ "\x1b[1;36m(APIServer pid=1)\x1b[0;0m \x1b[32mINFO\x1b[0m go", "INFO go" },
		{ "(Engine (DP0)) msg", "msg" },
		{ "(API) msg", "msg" },
		{ "(not a prefix) msg", "(not a prefix) msg" },
		{ "(APIServer pid=) msg", "(APIServer pid=) msg" },
		{ "x (APIServer pid=1) y", "x (APIServer pid=1) y" },
		{ "a\x1b]0;title\x07" "b\x1b[Kc", "abc" },
		{ "lone \x1b escape", "lone \x1b escape" },
	};
	char out[256];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *s = banner_strip(cases[i][0], strlen(cases[i][0]), out, sizeof(out), &n);
		assert_int_equal(n, strlen(cases[i][1]));
		assert_memory_equal(s, cases[i][1], n);
	}
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
	/* a branch without 4 literal bytes leaves its rule unfiltered, and still matches */
	assert_int_equal(banner_set_parse("short ab|longer\nnext zzzz\n", 26, "t", &set, NULL), STATUS_OK);
	assert_false(banner_set_filtered(set));
	assert_string_equal(match(set, "xaby"), "short");
	assert_string_equal(match(set, "zzzz"), "next");
	assert_string_equal(match(set, "zzz"), "-");
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
	struct banner_set *set = sample(), *four = NULL;
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

/*
 * A set built in an arena (the shim's, on a write path): the same answers
 * as the malloc'd one, from the built-in rules and from a file; too little
 * room is no set, and nothing else; freeing it does nothing.
 */
static void test_arena(void **state)
{
	static char mem[4 << 20];
	struct banner_arena a = { mem, sizeof(mem), 0 }, small = { mem, 64 * 1024, 0 };
	struct banner_set *set, *def = banner_set_default();
	char path[] = "/tmp/test_banner_arena.XXXXXX";
	int fd;

	(void)state;
	set = banner_set_arena(NULL, &a);
	assert_non_null(set);
	assert_true(a.used > 0 && a.used <= a.cap);
	assert_int_equal(banner_set_count(set), banner_set_count(def));
	assert_string_equal(match(set, "QWEN36_MERGE_BATCH_GUARD engaged: merge requires"), "arm:batch");
	assert_string_equal(match(set, "INFO decode step 9 version engaged KMD"), "-");
	assert_string_equal(match(set, "(EngineCore_DP0 pid=9) INFO Application startup complete."), "vllm:ready");
	banner_set_free(set);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "# mine\nmy:hello ^hello from (\\w+)$\n", 35), 35);
	close(fd);
	set = banner_set_arena(path, &a);
	assert_non_null(set);
	assert_int_equal(banner_set_count(set), 1);
	assert_string_equal(match(set, "hello from arena"), "my:hello");
	assert_null(banner_set_arena(NULL, &small));
	assert_null(banner_set_arena("/nonexistent/rules", &a));
	unlink(path);
	banner_set_free(def);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_candidates),
		cmocka_unit_test(test_strip),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_prefilter),
		cmocka_unit_test(test_prefilter_escapes),
		cmocka_unit_test(test_prefilter_offsets),
		cmocka_unit_test(test_scratch),
		cmocka_unit_test(test_arena),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
