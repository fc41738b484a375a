/* test_classify.c - audit line / banner / other. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "capture/classify.h"
#include "base/jdoc.h"

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
			assert_memory_equal(res.obj, cases[i].obj, res.obj_len);
		}
		if (res.kind == CLASSIFY_BANNER)
			assert_true(res.rule >= 0);
	}
	/* no rules: banners are just lines */
	assert_int_equal(classify_line("QWEN36_MERGE_STAMP_GUARD engaged", 32, NULL, &sc, &res), CLASSIFY_OTHER);
	banner_set_free(set);
}

/*
 * The quick reading settles the common audit line and agrees with
 * jdoc_check whenever it answers; what it leaves (-1) jdoc_check decides.
 */
static void test_quick(void **state)
{
	static const struct { const char *obj; int quick; int ev; } cases[] = {
		{ "{\"ev\":\"merge\",\"step\":41,\"host_pos\":[22,-1],\"dev_pos\":[]}", 1, 1 },
		{ " { \"ev\" : \"merge\" , \"x\" : { } , \"y\" : [ ] }\t", 1, 1 },
		{ "{\"a\":[true,false,null,-0,1.5e-3,2E+9,0.25],\"ev\":\"x\"}", 1, 1 },
		{ "{\"ev\":1}", 1, 0 },
		{ "{\"ev\":\"a\",\"ev\":2}", 1, 0 },                   /* the last one decides */
		{ "{\"ev\":2,\"ev\":\"a\"}", 1, 1 },
		{ "{\"x\":{\"ev\":\"nested\"}}", 1, 0 },
		{ "{\"evx\":\"a\",\"e\":\"b\"}", 1, 0 },
		{ "{\"ev\":\"caf\xc3\xa9\"}", 1, 1 },
		{ "{}", 1, 0 },
		{ "{\"p\":[1,-2,0,3e2,4.5,-0.5E-1],\"q\":[[1,2],[3]],\"ev\":\"x\"}", 1, 1 },
		{ "{\"ev\":\"x\",\"p\":[1,2,]}", -1, 0 },                   /* runs of numbers */
		{ "{\"ev\":\"x\",\"p\":[1,02]}", -1, 0 },
		{ "{\"ev\":\"x\",\"p\":[1,-]}", -1, 0 },
		{ "{\"ev\":\"x\",\"p\":[1,2}", -1, 0 },
		{ "{\"ev\":\"x\",\"p\":[1,2.]}", -1, 0 },
		{ "{\"\\u0065v\":\"merge\"}", -1, 1 },                 /* escapes: jdoc_check */
		{ "{\"ev\":\"a\\\"b\"}", -1, 1 },
		{ "{\"ev\":\"merge\"} trailing", -1, 0 },
		{ "{\"ev\":\"merge\",}", -1, 0 },
		{ "{\"ev\":01}", -1, 0 },
		{ "{\"ev\":1.}", -1, 0 },
		{ "{\"ev\":tru}", -1, 0 },
		{ "{'model': 'x'}", -1, 0 },
		{ "{\"ev\":\"merge\"", -1, 0 },
		{ "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]],\"ev\":\"x\"}", -1, 1 },
		{ "[1]", -1, 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *o = cases[i].obj;
		struct jdoc_check chk;
		int ev = -1, ok = jdoc_check(o, strlen(o), &chk) == 0;

		assert_int_equal(classify_object(o, strlen(o), &ev), cases[i].quick);
		if (cases[i].quick == 1) {
			assert_true(ok);
			assert_int_equal(ev, cases[i].ev);
			assert_int_equal(chk.has_ev, ev);
		} else {
			assert_int_equal(ok && chk.has_ev, cases[i].ev);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_quick),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
