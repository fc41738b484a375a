/* test_classify.c - audit line / banner / other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "classify.h"

static void test_kinds(void **state)
{
	static const struct { const char *line; enum classify_kind kind; const char *obj; } cases[] = {
		{ "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1}", CLASSIFY_AUDIT, "{\"ev\":\"merge\",\"step\":1}" },
		{ "INFO 11-29 20:41:02 [generator.py:1930] MERGE_AUDIT {\"ev\":\"merge\"}  ", CLASSIFY_AUDIT, "{\"ev\":\"merge\"}  " },
		{ "{\"ev\":\"decode\"}", CLASSIFY_AUDIT, "{\"ev\":\"decode\"}" },
		{ "{\"x\":{\"ev\":\"nested\"}}", CLASSIFY_OTHER, NULL },         /* ev not top-level */
		{ "{\"ev\":1}", CLASSIFY_OTHER, NULL },                           /* ev not a string */
		{ "{\"ev\":\"merge\"} trailing", CLASSIFY_OTHER, NULL },
		{ "non-default args: {'model': 'x'}", CLASSIFY_BANNER, NULL },   /* not JSON, but a banner */
		{ "prefix {\"ev\":\"merge\"", CLASSIFY_OTHER, NULL },
		{ "QWEN36_MERGE_STAMP_GUARD engaged: ...", CLASSIFY_BANNER, NULL },
		{ "just a log line", CLASSIFY_OTHER, NULL },
	};
	struct banner_set *set = banner_set_default();
	struct banner_scratch sc;
	struct classify_result res;
	size_t i;

	(void)state;
	banner_scratch_init(&sc);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *l = cases[i].line;
		assert_int_equal(classify_line(l, strlen(l), set, &sc, &res), cases[i].kind);
		assert_int_equal(res.kind, cases[i].kind);
		if (cases[i].obj) {
			assert_int_equal(res.obj_len, strlen(cases[i].obj));
			assert_memory_equal(l + res.obj_off, cases[i].obj, res.obj_len);
		}
		if (res.kind == CLASSIFY_BANNER)
			assert_true(res.rule >= 0);
	}
	/* no rules: banners are just lines */
	assert_int_equal(classify_line("QWEN36_MERGE_STAMP_GUARD engaged", 32, NULL, &sc, &res), CLASSIFY_OTHER);
	banner_set_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
