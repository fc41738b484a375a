/* test_jsonw.c - the streaming JSON writer: separators, nesting, escapes, numbers. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/jdoc.h"
#include "base/jsonw.h"

static char *out;
static size_t out_len;
static FILE *mf;

static struct jsonw *start(struct jsonw *w)
{
	out = NULL;
	mf = open_memstream(&out, &out_len);
	assert_non_null(mf);
	jsonw_init(w, mf);
	return w;
}

/* Finishes the stream and compares; frees the text. */
static void expect(const char *want)
{
	assert_int_equal(fclose(mf), 0);
	assert_string_equal(out, want);
	free(out);
	out = NULL;
}

static void test_document(void **state)
{
	struct jsonw w;

	(void)state;
	start(&w);
	jsonw_obj(&w);
	jsonw_kstr(&w, "s", "a\"b\\c\n\r\t\x01\x1f\x7f");
	jsonw_kint(&w, "min", INT64_MIN);
	jsonw_kint(&w, "max", INT64_MAX);
	jsonw_kuint(&w, "u", UINT64_MAX);
	jsonw_kdouble(&w, "d", 1.5);
	jsonw_kdouble(&w, "nan", NAN);
	jsonw_kdouble(&w, "inf", -INFINITY);
	jsonw_kbool(&w, "t", 1);
	jsonw_kbool(&w, "f", 0);
	jsonw_kstr(&w, "null", NULL);
	jsonw_key(&w, "arr");
	jsonw_arr(&w);
	jsonw_int(&w, -1);
	jsonw_arr(&w);
	jsonw_arr_end(&w);
	jsonw_obj(&w);
	jsonw_obj_end(&w);
	jsonw_null(&w);
	jsonw_strn(&w, "ab\0c", 4);
	jsonw_raw(&w, "{\"x\":[1,2]}\n\n");
	jsonw_uint(&w, 7);
	jsonw_double(&w, 0.1);
	jsonw_bool(&w, 1);
	jsonw_str(&w, "");
	jsonw_arr_end(&w);
	jsonw_key(&w, "e\"k");
	jsonw_obj(&w);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
	expect("{\"s\":\"a\\\"b\\\\c\\n\\r\\t\\u0001\\u001f\x7f\","
	       "\"min\":-9223372036854775808,\"max\":9223372036854775807,"
	       "\"u\":18446744073709551615,\"d\":1.5,\"nan\":null,\"inf\":null,"
	       "\"t\":true,\"f\":false,\"null\":null,"
	       "\"arr\":[-1,[],{},null,\"ab\\u0000c\",{\"x\":[1,2]},7,0.1,true,\"\"],"
	       "\"e\\\"k\":{}}\n");
}

static void test_top_level_values(void **state)
{
	struct jsonw w;

	(void)state;
	/* a finished top-level container ends its line */
	start(&w);
	jsonw_arr(&w);
	jsonw_arr_end(&w);
	expect("[]\n");
	start(&w);
	jsonw_obj(&w);
	jsonw_kint(&w, "a", 1);
	jsonw_obj_end(&w);
	expect("{\"a\":1}\n");
	start(&w);
	jsonw_int(&w, 3);
	expect("3");
}

static void test_escape(void **state)
{
	(void)state;
	out = NULL;
	mf = open_memstream(&out, &out_len);
	jsonw_escape(mf, "\xc3\xa9/\b\f", 5);
	expect("\"\xc3\xa9/\\u0008\\u000c\"");
}

/* What the writer writes, the parser reads back. */
static void test_round_trip(void **state)
{
	struct jsonw w;
	struct jdoc *d;
	const struct jval *root;
	int i;

	(void)state;
	start(&w);
	jsonw_obj(&w);
	jsonw_key(&w, "deep");
	for (i = 0; i < 20; i++)
		jsonw_arr(&w);
	jsonw_int(&w, INT64_MIN);
	for (i = 0; i < 20; i++)
		jsonw_arr_end(&w);
	jsonw_kstr(&w, "ctl", "\x02 \"q\"");
	jsonw_kdouble(&w, "x", 123521.765625);
	jsonw_obj_end(&w);
	assert_int_equal(fclose(mf), 0);
	d = jdoc_new(out_len);
	assert_int_equal(jdoc_parse(d, out, out_len, NULL), STATUS_OK);
	root = jdoc_root(d);
	assert_string_equal(jdoc_get(d, root, "ctl")->u.s, "\x02 \"q\"");
	assert_true(jdoc_get(d, root, "x")->u.d == 123521.765625);
	{
		const struct jval *v = jdoc_get(d, root, "deep");
		for (i = 0; i < 20; i++) {
			assert_int_equal(v->type, JT_ARR);
			v = jdoc_kid(d, v);
		}
		assert_true(v->type == JT_INT && v->u.i == INT64_MIN);
	}
	jdoc_free(d);
	free(out);
}

/* Shortest text that reads back: what plan --json prints for 0.0048. */
static void test_dtoa(void **state)
{
	static const double v[] = { 0.0048, 0.95, 0.1, 1.0 / 3, 5e-324, 1.7976931348623157e308,
				    -0.0, 123521.765625, 1e21, 2.5e-7, 0.30000000000000004, 70, 100,
				    -1500, 1e16, 1e17, 9007199254740993.0 };
	static const char *const want[] = { "0.0048", "0.95", "0.1", "0.3333333333333333",
					    "5e-324", "1.7976931348623157e+308",
					    "-0", "123521.765625", "1e+21", "2.5e-07",
					    "0.30000000000000004", "70", "100", "-1500",
					    "10000000000000000", "1e+17", "9007199254740992" };
	char buf[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		jsonw_dtoa(buf, sizeof(buf), v[i]);
		assert_string_equal(buf, want[i]);
		assert_true(strtod(buf, NULL) == v[i]);
	}
}

/* The memory writer: the whole text, without the final newline, owned by the caller. */
static void test_mem(void **state)
{
	struct jsonw w;
	struct jsonw_mem m;
	char *s;

	(void)state;
	assert_int_equal(jsonw_mem_begin(&w, &m), 0);
	jsonw_obj(&w);
	jsonw_kstr(&w, "a", "x\"y");
	jsonw_kdouble(&w, "baseline", 0.0048);
	jsonw_key(&w, "n");
	jsonw_arr(&w);
	jsonw_int(&w, -1);
	jsonw_str(&w, NULL);
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	s = jsonw_mem_end(&w, &m);
	assert_non_null(s);
	assert_string_equal(s, "{\"a\":\"x\\\"y\",\"baseline\":0.0048,\"n\":[-1,null]}");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_document),
		cmocka_unit_test(test_top_level_values),
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_dtoa),
		cmocka_unit_test(test_mem),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
