/* test_jdoc.c - the strict line JSON parser and the allocation-free checker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/jdoc.h"

static struct jdoc *doc;

static int setup(void **state)
{
	(void)state;
	doc = jdoc_new(1 << 16);
	return doc ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	jdoc_free(doc);
	doc = NULL;
	return 0;
}

/* Parses a NUL-terminated text; the status, with si filled on failure. */
static enum status parse(const char *s, struct status_info *si)
{
	status_info_clear(si);
	return jdoc_parse(doc, s, strlen(s), si);
}

static const struct jval *root_of(const char *s)
{
	struct status_info si;

	assert_int_equal(parse(s, &si), STATUS_OK);
	assert_non_null(jdoc_root(doc));
	return jdoc_root(doc);
}

static void test_scalars(void **state)
{
	const struct jval *v;

	(void)state;
	assert_int_equal(root_of("null")->type, JT_NULL);
	assert_int_equal(root_of("true")->type, JT_TRUE);
	assert_int_equal(root_of("false")->type, JT_FALSE);
	v = root_of("  \t\r\n 42 \n");
	assert_int_equal(v->type, JT_INT);
	assert_int_equal(v->u.i, 42);
	assert_int_equal(v->off, 6);
	v = root_of("-0");
	assert_int_equal(v->type, JT_INT);
	assert_int_equal(v->u.i, 0);
	v = root_of("\"abc\"");
	assert_int_equal(v->type, JT_STR);
	assert_int_equal(v->n, 3);
	assert_string_equal(v->u.s, "abc");
	v = root_of("\"\"");
	assert_int_equal(v->type, JT_STR);
	assert_int_equal(v->n, 0);
	assert_string_equal(v->u.s, "");
	assert_string_equal(jdoc_typename(root_of("null")), "null");
	assert_string_equal(jdoc_typename(root_of("true")), "boolean");
	assert_string_equal(jdoc_typename(root_of("false")), "boolean");
	assert_string_equal(jdoc_typename(root_of("1")), "integer");
	assert_string_equal(jdoc_typename(root_of("1.5")), "number");
	assert_string_equal(jdoc_typename(root_of("\"x\"")), "string");
	assert_string_equal(jdoc_typename(root_of("[]")), "array");
	assert_string_equal(jdoc_typename(root_of("{}")), "object");
	assert_string_equal(jdoc_typename(NULL), "missing");
}

static void test_int64_limits(void **state)
{
	const struct jval *v;

	(void)state;
	v = root_of("9223372036854775807");
	assert_int_equal(v->type, JT_INT);
	assert_true(v->u.i == INT64_MAX);
	v = root_of("-9223372036854775808");
	assert_int_equal(v->type, JT_INT);
	assert_true(v->u.i == INT64_MIN);
	/* 2^53 + 1 is not representable as a double: exactness matters */
	v = root_of("9007199254740993");
	assert_int_equal(v->type, JT_INT);
	assert_true(v->u.i == INT64_C(9007199254740993));

	v = root_of("9223372036854775808");
	assert_int_equal(v->type, JT_REAL);
	assert_int_equal(v->int_overflow, 1);
	assert_true(v->u.d == 9223372036854775808.0);
	v = root_of("-9223372036854775809");
	assert_int_equal(v->type, JT_REAL);
	assert_int_equal(v->int_overflow, 1);
	v = root_of("18446744073709551616");   /* 2^64: overflows the magnitude too */
	assert_int_equal(v->type, JT_REAL);
	assert_int_equal(v->int_overflow, 1);
	assert_true(v->u.d == 18446744073709551616.0);
	v = root_of("123456789012345678901234567890");
	assert_int_equal(v->type, JT_REAL);
	assert_int_equal(v->int_overflow, 1);
}

static void test_floats(void **state)
{
	const struct jval *v;

	(void)state;
	v = root_of("1.5");
	assert_int_equal(v->type, JT_REAL);
	assert_int_equal(v->int_overflow, 0);
	assert_true(v->u.d == 1.5);
	v = root_of("-0.25");
	assert_true(v->type == JT_REAL && v->u.d == -0.25);
	v = root_of("1e3");
	assert_true(v->type == JT_REAL && v->u.d == 1000.0 && !v->int_overflow);
	v = root_of("2E-2");
	assert_true(v->type == JT_REAL && v->u.d == 0.02);
	v = root_of("1.25e+2");
	assert_true(v->type == JT_REAL && v->u.d == 125.0);
	v = root_of("1790000010.5");
	assert_true(v->type == JT_REAL && v->u.d == 1790000010.5);
}

/* A valid literal is valid whatever its length (the checker accepts it too). */
static void test_long_number_literal(void **state)
{
	char buf[600];
	const struct jval *v;
	size_t i;

	(void)state;
	strcpy(buf, "1.");
	for (i = 2; i < 300; i++)
		buf[i] = '0';
	strcpy(buf + 300, "1");
	v = root_of(buf);
	assert_int_equal(v->type, JT_REAL);
	assert_true(v->u.d == 1.0);
	assert_int_equal(jdoc_check("{\"a\":1.00000000000000000000000000000000000000000000000000"
				    "000000000000000000000000000000000000000000000000000000000000"
				    "000000000000000000000000000000000000000000000000000000000000}",
				    strlen("{\"a\":1.00000000000000000000000000000000000000000000000000"
					   "000000000000000000000000000000000000000000000000000000000000"
					   "000000000000000000000000000000000000000000000000000000000000}"),
				    NULL), 0);
	/* an integer literal far outside int64, 200 digits */
	for (i = 0; i < 200; i++)
		buf[i] = '9';
	buf[200] = '\0';
	v = root_of(buf);
	assert_int_equal(v->type, JT_REAL);
	assert_int_equal(v->int_overflow, 1);
	/* and inside an object, after strings that used the arena */
	strcpy(buf, "{\"k\\\"ey\":\"some text\",\"n\":35.");
	i = strlen(buf);
	memset(buf + i, '0', 250);
	strcpy(buf + i + 250, "e0,\"z\":\"after\"}");
	v = root_of(buf);
	assert_int_equal(v->type, JT_OBJ);
	assert_true(jdoc_get(doc, v, "n")->u.d == 35.0);
	assert_string_equal(jdoc_get(doc, v, "z")->u.s, "after");
	assert_string_equal(jdoc_get(doc, v, "k\"ey")->u.s, "some text");
}

static void test_bad_numbers(void **state)
{
	static const struct { const char *text; long byte; } bad[] = {
		{ "01", 2 }, { "-", 2 }, { "-a", 2 }, { "1.", 3 }, { "1.e5", 3 }, { "1e", 3 },
		{ "1e+", 4 }, { ".5", 1 }, { "+1", 1 }, { "0x10", 2 }, { "-01", 3 }, { "NaN", 1 },
		{ "Infinity", 1 },
	};
	struct status_info si;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].text, &si), STATUS_PARSE);
		if (si.byte != bad[i].byte)
			fail_msg("'%s': error at byte %ld, want %ld (%s)", bad[i].text, si.byte,
				 bad[i].byte, si.msg);
		assert_null(jdoc_root(doc));
	}
	assert_int_equal(parse("01", &si), STATUS_PARSE);
	assert_string_equal(si.msg, "leading zero in number at byte 2");
	assert_int_equal(parse("[-00]", &si), STATUS_PARSE);
	assert_string_equal(si.msg, "leading zero in number at byte 4");
}

static void test_containers(void **state)
{
	const struct jval *v, *k;

	(void)state;
	v = root_of("[]");
	assert_int_equal(v->type, JT_ARR);
	assert_int_equal(v->n, 0);
	assert_null(jdoc_kid(doc, v));
	v = root_of("{ }");
	assert_int_equal(v->type, JT_OBJ);
	assert_int_equal(v->n, 0);
	assert_null(jdoc_kid(doc, v));
	v = root_of("[1, \"two\", [3], {\"four\": 4}, null, true]");
	assert_int_equal(v->n, 6);
	k = jdoc_kid(doc, v);
	assert_true(k->type == JT_INT && k->u.i == 1);
	k = jdoc_next(doc, k);
	assert_string_equal(k->u.s, "two");
	k = jdoc_next(doc, k);
	assert_int_equal(k->type, JT_ARR);
	assert_int_equal(jdoc_kid(doc, k)->u.i, 3);
	k = jdoc_next(doc, k);
	assert_int_equal(k->type, JT_OBJ);
	assert_int_equal(jdoc_get(doc, k, "four")->u.i, 4);
	k = jdoc_next(doc, k);
	assert_int_equal(k->type, JT_NULL);
	k = jdoc_next(doc, k);
	assert_int_equal(k->type, JT_TRUE);
	assert_null(jdoc_next(doc, k));

	v = root_of("{\"a\":1,\"b\":{\"c\":[true,false]},\"d\":\"x\"}");
	assert_int_equal(v->n, 3);
	k = jdoc_get(doc, v, "b");
	assert_int_equal(k->type, JT_OBJ);
	assert_string_equal(k->key, "b");
	assert_int_equal(k->keylen, 1);
	assert_int_equal(k->off, 11);
	assert_int_equal(jdoc_get(doc, k, "c")->n, 2);
	assert_null(jdoc_get(doc, v, "c"));          /* not a top-level member */
	assert_null(jdoc_get(doc, v, "missing"));
	assert_null(jdoc_get(doc, jdoc_get(doc, v, "a"), "a"));   /* not an object */
	assert_null(jdoc_get(doc, NULL, "a"));
}

static void test_get_last_duplicate(void **state)
{
	const struct jval *v;

	(void)state;
	v = root_of("{\"ev\":\"merge\",\"step\":1,\"step\":2,\"ev\":\"config\"}");
	assert_int_equal(jdoc_get(doc, v, "step")->u.i, 2);
	assert_string_equal(jdoc_get(doc, v, "ev")->u.s, "config");
	assert_int_equal(v->n, 4);
	/* a key with an escape and a key that is a prefix of another */
	v = root_of("{\"st\":1,\"step\":5,\"s\\u0074ep\":6}");
	assert_int_equal(jdoc_get(doc, v, "st")->u.i, 1);
	assert_int_equal(jdoc_get(doc, v, "step")->u.i, 6);
}

static void test_escapes(void **state)
{
	const struct jval *v;

	(void)state;
	v = root_of("\"a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti\"");
	assert_int_equal(v->n, 17);
	assert_memory_equal(v->u.s, "a\"b\\c/d\be\ff\ng\rh\ti", 18);
	v = root_of("\"\\u0041\\u00e9\\u20AC\"");        /* A, e-acute, euro sign */
	assert_string_equal(v->u.s, "A\xc3\xa9\xe2\x82\xac");
	assert_int_equal(v->n, 6);
	v = root_of("\"\\ud83d\\ude00\"");                /* U+1F600 as a surrogate pair */
	assert_int_equal(v->n, 4);
	assert_string_equal(v->u.s, "\xf0\x9f\x98\x80");
	/* text readers get U+FFFD for a lone surrogate */
	v = root_of("\"x\\ud83dy\"");
	assert_string_equal(v->u.s, "x\xef\xbf\xbdy");
	v = root_of("\"\\ud83d\\u0041\"");
	assert_string_equal(v->u.s, "\xef\xbf\xbd" "A");
	/* where strings are identities, lone surrogates keep their own three bytes (WTF-8) */
	jdoc_set_keep_surrogates(doc, 1);
	v = root_of("\"x\\ud83dy\"");                     /* lone high surrogate */
	assert_string_equal(v->u.s, "x\xed\xa0\xbdy");
	v = root_of("\"\\ude00\"");                       /* lone low surrogate */
	assert_string_equal(v->u.s, "\xed\xb8\x80");
	v = root_of("\"\\ud83d\\u0041\"");                /* high surrogate, then not a low one */
	assert_string_equal(v->u.s, "\xed\xa0\xbd" "A");
	v = root_of("\"\\ud83d\\ud83d\\ude00\"");         /* lone high, then a pair */
	assert_string_equal(v->u.s, "\xed\xa0\xbd\xf0\x9f\x98\x80");
	v = root_of("\"\\ud800\"");                       /* the two ends of the high range differ */
	assert_memory_equal(v->u.s, "\xed\xa0\x80", 4);
	v = root_of("\"\\udbff\"");
	assert_memory_equal(v->u.s, "\xed\xaf\xbf", 4);
	v = root_of("\"\\udc80\\udc81\"");                /* a capture's escaped invalid bytes */
	assert_int_equal(v->n, 6);
	assert_memory_equal(v->u.s, "\xed\xb2\x80\xed\xb2\x81", 7);
	jdoc_set_keep_surrogates(doc, 0);
	v = root_of("\"a\\u0000b\"");                     /* NUL inside: the length tells */
	assert_int_equal(v->n, 3);
	assert_memory_equal(v->u.s, "a\0b", 4);
	v = root_of("\"\xc3\xa9\"");                      /* raw UTF-8 passes through */
	assert_string_equal(v->u.s, "\xc3\xa9");
}

static void test_string_errors(void **state)
{
	static const struct { const char *text; long byte; } bad[] = {
		{ "\"abc", 5 },             /* unterminated string */
		{ "\"a\\", 4 },             /* unterminated escape */
		{ "\"a\\x\"", 4 },          /* bad escape: the letter after the backslash */
		{ "\"\\u12\"", 4 },         /* truncated \u escape: 3 bytes left */
		{ "\"\\u12g4\"", 6 },       /* bad hex digit */
		{ "\"\\ud83d\\u12g4\"", 12 },
		{ "\"a\tb\"", 3 },          /* a raw control character */
		{ "\"a\nb\"", 3 },
		{ "\"\x01\"", 2 },
		{ "\"\x1f\"", 2 },
	};
	struct status_info si;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].text, &si), STATUS_PARSE);
		if (si.byte != bad[i].byte)
			fail_msg("case %zu: error at byte %ld, want %ld (%s)", i, si.byte, bad[i].byte,
				 si.msg);
	}
	assert_int_equal(parse("\"a\tb\"", &si), STATUS_PARSE);
	assert_string_equal(si.msg, "control character in string at byte 3");
	assert_int_equal(parse("\"\x7f\"", &si), STATUS_OK);   /* DEL is not a control char */
}

static void test_structure_errors(void **state)
{
	static const struct { const char *text; long byte; const char *msg; } bad[] = {
		{ "", 1, "unexpected end of input at byte 1" },
		{ "   ", 4, "unexpected end of input at byte 4" },
		{ "{\"a\":1} x", 9, "trailing characters after the value at byte 9" },
		{ "{}{}", 3, "trailing characters after the value at byte 3" },
		{ "1 2", 3, "trailing characters after the value at byte 3" },
		{ "[1,]", 4, "unexpected character at byte 4" },
		{ "[1 2]", 4, "expected ',' or ']' at byte 4" },
		{ "{\"a\" 1}", 6, "expected ':' after member name at byte 6" },
		{ "{a:1}", 2, "expected a member name at byte 2" },
		{ "{\"a\":1,}", 8, "expected a member name at byte 8" },
		{ "{\"a\":1", 7, "unterminated object at byte 7" },
		{ "[1", 3, "unterminated array at byte 3" },
		{ "{\"a\":}", 6, "unexpected character at byte 6" },
		{ "tru", 1, "unexpected character at byte 1" },
		{ "nul", 1, "unexpected character at byte 1" },
		{ "trUe", 1, "unexpected character at byte 1" },
		{ "[true false]", 7, "expected ',' or ']' at byte 7" },
		{ "'a'", 1, "unexpected character at byte 1" },
	};
	struct status_info si;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].text, &si), STATUS_PARSE);
		if (si.byte != bad[i].byte || strcmp(si.msg, bad[i].msg))
			fail_msg("'%s': byte %ld '%s', want %ld '%s'", bad[i].text, si.byte, si.msg,
				 bad[i].byte, bad[i].msg);
		assert_null(jdoc_root(doc));
	}
	/* a NUL byte inside the input is an error, not an end */
	assert_int_equal(jdoc_parse(doc, "{}\0", 3, &si), STATUS_PARSE);
	assert_int_equal(si.byte, 3);
	/* NULL si is allowed */
	assert_int_equal(jdoc_parse(doc, "[", 1, NULL), STATUS_PARSE);
}

static char *nest(int depth, char open, char close)
{
	char *s = malloc((size_t)depth * 2 + 1);
	int i;

	assert_non_null(s);
	for (i = 0; i < depth; i++) {
		s[i] = open;
		s[depth * 2 - 1 - i] = close;
	}
	s[depth * 2] = '\0';
	return s;
}

static void test_depth_cap(void **state)
{
	struct status_info si;
	char *s;

	(void)state;
	s = nest(JDOC_MAX_DEPTH, '[', ']');
	assert_int_equal(parse(s, &si), STATUS_OK);
	assert_int_equal(jdoc_check(s, strlen(s), NULL), -1);   /* an array, not an object */
	free(s);
	s = nest(JDOC_MAX_DEPTH + 1, '[', ']');
	assert_int_equal(parse(s, &si), STATUS_LIMIT);
	assert_int_equal(si.byte, JDOC_MAX_DEPTH + 1);
	assert_string_equal(si.msg, "nesting deeper than 64 at byte 65");
	assert_null(jdoc_root(doc));
	free(s);

	/* objects nest the same way; the checker has the same bound */
	{
		char buf[1024];
		size_t n = 0;
		int i;
		for (i = 0; i < JDOC_MAX_DEPTH; i++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "{\"a\":");
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "1");
		for (i = 0; i < JDOC_MAX_DEPTH; i++)
			buf[n++] = '}';
		buf[n] = '\0';
		assert_int_equal(parse(buf, &si), STATUS_OK);
		assert_int_equal(jdoc_check(buf, n, NULL), 0);
		/* one level more */
		memmove(buf + 5, buf, n + 1);
		memcpy(buf, "{\"a\":", 5);
		strcat(buf, "}");
		n = strlen(buf);
		assert_int_equal(parse(buf, &si), STATUS_LIMIT);
		assert_int_equal(jdoc_check(buf, n, NULL), -1);
	}
}

static void test_max_len(void **state)
{
	struct jdoc *small;
	struct status_info si;
	const char *ten = "[1,2,3,44]";

	(void)state;
	small = jdoc_new(10);
	assert_non_null(small);
	status_info_clear(&si);
	assert_int_equal(jdoc_parse(small, ten, 10, &si), STATUS_OK);
	assert_int_equal(jdoc_root(small)->n, 4);
	status_info_clear(&si);
	assert_int_equal(jdoc_parse(small, "[1,2,3,444]", 11, &si), STATUS_LIMIT);
	assert_int_equal(si.byte, 11);
	assert_string_equal(si.msg, "line longer than 10 bytes");
	assert_null(jdoc_root(small));
	/* the doc is reusable after a failure, and across lines of other sizes */
	assert_int_equal(jdoc_parse(small, "[0,0,0,0,0]", 10, &si), STATUS_PARSE);
	assert_int_equal(jdoc_parse(small, "\"x\"", 3, &si), STATUS_OK);
	assert_string_equal(jdoc_root(small)->u.s, "x");
	jdoc_free(small);
	jdoc_free(NULL);

	/* many values in one line: nodes grow past their first allocation */
	{
		size_t n = 0, i;
		char *s = malloc(40000);
		const struct jval *v, *k;
		assert_non_null(s);
		s[n++] = '[';
		for (i = 0; i < 5000; i++)
			n += (size_t)sprintf(s + n, "%s%zu", i ? "," : "", i);
		s[n++] = ']';
		assert_int_equal(jdoc_parse(doc, s, n, &si), STATUS_OK);
		v = jdoc_root(doc);
		assert_int_equal(v->n, 5000);
		for (i = 0, k = jdoc_kid(doc, v); k; k = jdoc_next(doc, k), i++)
			assert_int_equal(k->u.i, (int64_t)i);
		assert_int_equal(i, 5000);
		free(s);
	}
}

/* Only s[0..n) is read: a value followed by bytes beyond n parses. */
static void test_length_bounded(void **state)
{
	struct status_info si;

	(void)state;
	assert_int_equal(jdoc_parse(doc, "{\"a\":12}garbage", 8, &si), STATUS_OK);
	assert_int_equal(jdoc_get(doc, jdoc_root(doc), "a")->u.i, 12);
	assert_int_equal(jdoc_parse(doc, "123456", 3, &si), STATUS_OK);
	assert_int_equal(jdoc_root(doc)->u.i, 123);
	assert_int_equal(jdoc_parse(doc, "\"abc\"", 4, &si), STATUS_PARSE);
	assert_int_equal(jdoc_check("{\"ev\":\"x\"}junk", 10, NULL), 0);
}

static int check(const char *s, int *has_ev)
{
	struct jdoc_check c = { .has_ev = 7 };
	int rc = jdoc_check(s, strlen(s), &c);

	*has_ev = c.has_ev;
	return rc;
}

static void test_check(void **state)
{
	static const char *const reject[] = {
		"", " ", "[]", "[{\"ev\":\"x\"}]", "1", "\"ev\"", "null", "true",
		"{} {}", "{\"ev\":\"a\"}{\"ev\":\"b\"}", "{\"ev\":\"merge\"", "{\"ev\":\"merge\",",
		"{\"ev\":\"mer", "{\"ev\":\"merge\"} x", "{\"ev\":01}", "{\"a\":\"\x01\"}",
		"{\"a\":[1,]}", "x{}", "{\"a\":tru}",
	};
	size_t i;
	int ev;

	(void)state;
	for (i = 0; i < sizeof(reject) / sizeof(reject[0]); i++) {
		if (check(reject[i], &ev) != -1)
			fail_msg("jdoc_check accepted '%s'", reject[i]);
		assert_int_equal(ev, 0);
	}
	assert_int_equal(check("{}", &ev), 0);
	assert_int_equal(ev, 0);
	assert_int_equal(check(" \t{\"ev\":\"merge\",\"step\":1}\r\n", &ev), 0);
	assert_int_equal(ev, 1);
	assert_int_equal(check("{ \"ev\" : \"\" }", &ev), 0);
	assert_int_equal(ev, 1);
	assert_int_equal(check("{\"a\":{\"ev\":\"merge\"}}", &ev), 0);   /* nested */
	assert_int_equal(ev, 0);
	assert_int_equal(check("{\"a\":[{\"ev\":\"merge\"}]}", &ev), 0);
	assert_int_equal(ev, 0);
	assert_int_equal(check("{\"ev\":1}", &ev), 0);                    /* not a string */
	assert_int_equal(ev, 0);
	assert_int_equal(check("{\"ev\":null}", &ev), 0);
	assert_int_equal(ev, 0);
	assert_int_equal(check("{\"ev\":[\"merge\"]}", &ev), 0);
	assert_int_equal(ev, 0);
	assert_int_equal(check("{\"eva\":\"x\",\"e\":\"x\"}", &ev), 0);   /* other names */
	assert_int_equal(ev, 0);
	assert_int_equal(check("{\"x\":\"ev\"}", &ev), 0);                /* a value, not a key */
	assert_int_equal(ev, 0);
	assert_int_equal(check("{\"a\":1,\"ev\":\"merge\"}", &ev), 0);
	assert_int_equal(ev, 1);
	/* NULL out is allowed */
	assert_int_equal(jdoc_check("{}", 2, NULL), 0);
	assert_int_equal(jdoc_check("[]", 2, NULL), -1);
}

/*
 * has_ev names exactly the objects the analyzer decodes as events: the member
 * jdoc_get() finds for "ev" (the last, with escapes undone) is a string.
 */
static void test_check_agrees_with_get(void **state)
{
	static const char *const cases[] = {
		"{\"ev\":\"merge\"}",
		"{\"\\u0065v\":\"merge\"}",
		"{\"e\\u0076\":\"merge\"}",
		"{\"\\u0065\\u0076\":\"merge\"}",
		"{\"ev\\u0000\":\"merge\"}",
		"{\"ev\":\"merge\",\"ev\":1}",
		"{\"ev\":1,\"ev\":\"merge\"}",
		"{\"ev\":\"merge\",\"\\u0065v\":null}",
		"{\"ev\":1,\"\\u0065v\":\"merge\"}",
		"{\"e\":\"merge\"}",
		"{\"\\\"ev\":\"merge\"}",
		"{\"ev\":\"a\",\"x\":{\"ev\":1}}",
	};
	size_t i;
	int ev;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct jval *v = root_of(cases[i]);
		const struct jval *e = jdoc_get(doc, v, "ev");
		int want = e && e->type == JT_STR;
		assert_int_equal(check(cases[i], &ev), 0);
		if (ev != want)
			fail_msg("'%s': has_ev %d, the parser finds %s", cases[i], ev,
				 jdoc_typename(e));
	}
}

/* --- the scanner ----------------------------------------------------------- */

/* The input in a buffer with the NUL and padding the scanner wants; freed by the caller. */
static char *padded(const char *text, size_t *n)
{
	char *b;

	*n = strlen(text);
	b = calloc(1, *n + 1 + JDOC_SCAN_PAD);
	assert_non_null(b);
	memcpy(b, text, *n);
	return b;
}

/*
 * The integer array `text` read by jdoc_scan_int_array (AVX2 and portable)
 * and by jdoc_parse: the same acceptance and the same values. Returns the
 * scanner's result (1 read, -1 declined).
 */
static int int_array_agrees(const char *text, size_t cap)
{
	static int64_t got[2][4096];
	static char arena[1 << 16];
	struct status_info si;
	uint32_t n[2] = { 0, 0 };
	int rc[2], simd, tree_ok;
	size_t len, i;
	char *b = padded(text, &len);

	for (simd = 0; simd < 2; simd++) {
		struct jdoc_scan sc;
		jdoc_simd(simd);
		jdoc_scan_init(&sc, b, len, JDOC_MAX_DEPTH, arena, sizeof(arena));
		sc.depth = 1;   /* as inside an object */
		rc[simd] = jdoc_scan_int_array(&sc, got[simd], cap, &n[simd]);
		if (rc[simd] == 1 && sc.p != b + len)
			rc[simd] = -2;   /* stopped early: the caller's end check would decline */
	}
	jdoc_simd(1);
	if (rc[0] != rc[1] || (rc[0] == 1 && (n[0] != n[1] || memcmp(got[0], got[1], n[0] * 8))))
		fail_msg("AVX2 and portable scanners differ on '%.200s' (%d %d)", text, rc[0], rc[1]);
	tree_ok = jdoc_parse(doc, b, len, &si) == STATUS_OK && jdoc_root(doc)->type == JT_ARR;
	if (tree_ok) {
		const struct jval *v = jdoc_root(doc), *e;
		for (e = jdoc_kid(doc, v), i = 0; e; e = jdoc_next(doc, e), i++)
			if (e->type != JT_INT)
				tree_ok = 0;
		if (v->n > cap)
			tree_ok = 0;
		if (tree_ok && rc[0] == 1) {
			assert_int_equal(n[0], v->n);
			for (e = jdoc_kid(doc, v), i = 0; e; e = jdoc_next(doc, e), i++)
				if (got[0][i] != e->u.i)
					fail_msg("'%.200s'[%zu]: scanner %lld, tree %lld", text, i,
						 (long long)got[0][i], (long long)e->u.i);
		}
	}
	if ((rc[0] == 1) != tree_ok)
		fail_msg("'%.200s': the scanner says %d, the tree %s", text, rc[0],
			 tree_ok ? "an int array" : "no int array");
	free(b);
	return rc[0];
}

static void test_scan_int_arrays(void **state)
{
	static const char *const cases[] = {
		"[1]", "[-1]", "[0]", "[-0]", "[]", "[ ]", "[1, 2]", "[ 1,2 ]", "[1,2 ]",
		"[01]", "[-01]", "[1,]", "[,1]", "[1,,2]", "[-]", "[--1]", "[1-2]", "[1.5]", "[1e3]",
		"[1E3]", "[\"1\"]", "[true]", "[null]", "[[1]]", "[1]x", "[1",
		"[9223372036854775807,-9223372036854775808]", "[9223372036854775808]",
		"[-9223372036854775809]", "[99999999999999999999]", "[12345678]", "[123456789]",
		"[1234567890123456]", "[12345678901234567]", "[123456789012345678]",
		"[1234567890123456789]", "[-1234567]", "[-12345678]", "[-123456789012345678]",
		"[1206993122,128852,-1,-1]",
	};
	char big[8192];
	size_t i, n;
	unsigned seed = 12345;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		int_array_agrees(cases[i], 4096);
	/* the cap: exactly cap entries, one more */
	assert_int_equal(int_array_agrees("[1,2,3]", 3), 1);
	assert_int_equal(int_array_agrees("[1,2,3]", 2), -1);
	/* random arrays: entries of every length, crossing 64-byte blocks, now and then bad */
	for (i = 0; i < 3000; i++) {
		size_t k, entries = 1 + (i % 97);
		n = 0;
		big[n++] = '[';
		for (k = 0; k < entries && n < sizeof(big) - 64; k++) {
			unsigned r;
			int d, j;
			seed = seed * 1103515245u + 12345u;
			r = seed >> 8;
			if (k)
				big[n++] = ',';
			if (r % 3 == 0)
				big[n++] = '-';
			d = 1 + (int)(r / 3 % 20);
			for (j = 0; j < d; j++)
				big[n++] = (char)('0' + (j == 0 && d > 1 ? 1 + (r >> 5) % 9 : (r >> (j % 24)) % 10));
			if (i % 50 == 7 && k == entries / 2)
				big[n++] = "x. e-0 "[(r >> 3) % 7];
		}
		big[n++] = ']';
		big[n] = '\0';
		int_array_agrees(big, 4096);
	}
}

/*
 * The string or boolean array `text` (kind 's' or 'b') read by the scanner
 * with its runs of null and false (jdoc_simd on) and without, and by
 * jdoc_parse: the same acceptance, entries and end. Returns the scanner's
 * result (1 read, 0 null, -1 declined).
 */
static int str_bool_array_agrees(const char *text, char kind, size_t cap)
{
	static const char *z[2][256];
	static uint32_t lens[2][256];
	static uint8_t flags[2][256];
	static char arena[2][1 << 14];
	struct status_info si;
	uint32_t n[2] = { 0, 0 }, i;
	int rc[2], simd, tree_ok;
	size_t len;
	char *b = padded(text, &len);

	for (simd = 0; simd < 2; simd++) {
		struct jdoc_scan sc;
		jdoc_simd(simd);
		jdoc_scan_init(&sc, b, len, JDOC_MAX_DEPTH, arena[simd], sizeof(arena[simd]));
		sc.depth = 1;
		rc[simd] = kind == 's' ? jdoc_scan_str_array(&sc, z[simd], lens[simd], cap, &n[simd])
				       : jdoc_scan_bool_array(&sc, flags[simd], cap, &n[simd]);
		if (rc[simd] == 1 && sc.p != b + len)
			rc[simd] = -2;
	}
	jdoc_simd(1);
	if (rc[0] != rc[1] || n[0] != n[1])
		fail_msg("runs and entry by entry differ on '%.200s' (%d %d, %u %u)", text, rc[0], rc[1],
			 n[0], n[1]);
	for (i = 0; rc[0] == 1 && i < n[0]; i++) {
		if (kind == 'b' ? flags[0][i] != flags[1][i]
				: lens[0][i] != lens[1][i] || !z[0][i] != !z[1][i] ||
				  (z[0][i] && memcmp(z[0][i], z[1][i], lens[0][i])))
			fail_msg("'%.200s'[%u] differs with and without runs", text, i);
	}
	tree_ok = jdoc_parse(doc, b, len, &si) == STATUS_OK && jdoc_root(doc)->type == JT_ARR;
	if (tree_ok) {
		const struct jval *v = jdoc_root(doc), *e;
		if (v->n > cap)
			tree_ok = 0;
		for (e = jdoc_kid(doc, v), i = 0; tree_ok && e; e = jdoc_next(doc, e), i++) {
			if (kind == 'b' ? e->type != JT_TRUE && e->type != JT_FALSE
					: e->type != JT_STR && e->type != JT_NULL)
				tree_ok = 0;
			else if (rc[0] == 1 && (kind == 'b' ? flags[0][i] != (e->type == JT_TRUE)
							   : !z[0][i] != (e->type == JT_NULL) ||
								     (z[0][i] && (lens[0][i] != e->n ||
										  memcmp(z[0][i], e->u.s, e->n)))))
				fail_msg("'%.200s'[%u]: the scanner and the tree differ", text, i);
		}
	}
	if ((rc[0] == 1) != tree_ok)
		fail_msg("'%.200s': the scanner says %d, the tree %s", text, rc[0],
			 tree_ok ? "an array of its kind" : "no such array");
	free(b);
	return rc[0];
}

static void test_scan_runs(void **state)
{
	static const char *const cases[] = {
		"[null]", "[null,null]", "[null,null,null,null,null,null,null]", "[null,]",
		"[null ,null]", "[null, null,null]", "[null,nul]", "[null,nulll]", "[null,\"a\",null]",
		"[\"null\",null,null,null,null,null,null,null,null,\"x\"]", "[null,null]x",
		"[false]", "[false,false,false,false,false,false,false]", "[false,]", "[false,true]",
		"[false ,false]", "[false, false]", "[false,fals]", "[false,falsey]", "[false,null]",
	};
	char text[4096];
	size_t i, k, n;
	unsigned seed = 777;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		str_bool_array_agrees(cases[i], strstr(cases[i], "fals") ? 'b' : 's', 256);
	/* the cap inside a run and at its end */
	for (k = 1; k < 15; k++) {
		n = 0;
		text[n++] = '[';
		for (i = 0; i < 12; i++)
			n += (size_t)sprintf(text + n, "%snull", i ? "," : "");
		text[n++] = ']';
		text[n] = '\0';
		assert_int_equal(str_bool_array_agrees(text, 's', k), k >= 12 ? 1 : -1);
		for (n = 1, i = 0; i < 12; i++)
			n += (size_t)sprintf(text + n, "%sfalse", i ? "," : "");
		text[n++] = ']';
		text[n] = '\0';
		assert_int_equal(str_bool_array_agrees(text, 'b', k), k >= 12 ? 1 : -1);
	}
	/* random runs broken by strings, true, spaces and now and then a bad byte */
	for (i = 0; i < 4000; i++) {
		size_t entries = 1 + i % 70;
		char kind = i & 1 ? 'b' : 's';
		n = 0;
		text[n++] = '[';
		for (k = 0; k < entries && n < sizeof(text) - 64; k++) {
			unsigned r;
			seed = seed * 1103515245u + 12345u;
			r = seed >> 8;
			if (k)
				n += (size_t)sprintf(text + n, r % 23 == 0 ? ", " : ",");
			if (kind == 's')
				n += (size_t)sprintf(text + n, r % 4 == 0 ? "\"r%u\"" : "null", r % 1000);
			else
				n += (size_t)sprintf(text + n, r % 5 == 0 ? "true" : "false");
			if (i % 40 == 3 && k == entries / 2)
				text[n++] = "x,] \"n"[(r >> 3) % 6];
		}
		text[n++] = ']';
		text[n] = '\0';
		str_bool_array_agrees(text, kind, 256);
	}
}

static void test_scan_arrays(void **state)
{
	static char arena[4096];
	struct jdoc_scan sc;
	const char *key, *z;
	uint32_t zn;
	size_t klen, len;
	int64_t v;
	char *s = padded("{\"c\":[ {\"t\":\"a\\nb\"} , 7,[1],\"x\" ],\"e\":[]}", &len);

	(void)state;
	jdoc_scan_init(&sc, s, len, JDOC_MAX_DEPTH, arena, sizeof(arena));
	assert_int_equal(jdoc_scan_object(&sc), 1);
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 1);
	assert_int_equal(jdoc_scan_peek(&sc), JT_ARR);
	assert_int_equal(jdoc_scan_array(&sc), 1);
	assert_int_equal(jdoc_scan_elem(&sc), 1);          /* an object element, read member by member */
	assert_int_equal(jdoc_scan_peek(&sc), JT_OBJ);
	assert_int_equal(jdoc_scan_object(&sc), 1);
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 1);
	assert_int_equal(jdoc_scan_str(&sc, &z, &zn), 1);
	assert_int_equal(zn, 3);
	assert_memory_equal(z, "a\nb", 4);
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 0);
	assert_int_equal(jdoc_scan_elem(&sc), 1);
	assert_int_equal(jdoc_scan_peek(&sc), JT_REAL);
	assert_int_equal(jdoc_scan_int(&sc, &v), 1);
	assert_int_equal(v, 7);
	assert_int_equal(jdoc_scan_elem(&sc), 1);
	assert_int_equal(jdoc_scan_skip(&sc), 1);
	assert_int_equal(jdoc_scan_elem(&sc), 1);
	assert_int_equal(jdoc_scan_skip(&sc), 1);
	assert_int_equal(jdoc_scan_elem(&sc), 0);          /* ']' consumed */
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 1);
	assert_int_equal(jdoc_scan_array(&sc), 1);
	assert_int_equal(jdoc_scan_elem(&sc), 0);          /* an empty array */
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 0);
	assert_int_equal(jdoc_scan_end(&sc), 1);
	free(s);
	/* a missing comma, a trailing comma, an array where none is */
	s = padded("[1 2]", &len);
	jdoc_scan_init(&sc, s, len, JDOC_MAX_DEPTH, arena, sizeof(arena));
	assert_int_equal(jdoc_scan_array(&sc), 1);
	assert_int_equal(jdoc_scan_elem(&sc), 1);
	assert_int_equal(jdoc_scan_int(&sc, &v), 1);
	assert_int_equal(jdoc_scan_elem(&sc), -1);
	free(s);
	s = padded("[1,]", &len);
	jdoc_scan_init(&sc, s, len, JDOC_MAX_DEPTH, arena, sizeof(arena));
	assert_int_equal(jdoc_scan_array(&sc), 1);
	assert_int_equal(jdoc_scan_elem(&sc), 1);
	assert_int_equal(jdoc_scan_int(&sc, &v), 1);
	assert_int_equal(jdoc_scan_elem(&sc), 1);
	assert_int_equal(jdoc_scan_int(&sc, &v), -1);   /* ']' is no value */
	free(s);
	s = padded("{}", &len);
	jdoc_scan_init(&sc, s, len, JDOC_MAX_DEPTH, arena, sizeof(arena));
	assert_int_equal(jdoc_scan_array(&sc), -1);
	free(s);
	/* nesting counts arrays too */
	s = padded("[[[1]]]", &len);
	jdoc_scan_init(&sc, s, len, 2, arena, sizeof(arena));
	assert_int_equal(jdoc_scan_array(&sc), 1);
	assert_int_equal(jdoc_scan_elem(&sc), 1);
	assert_int_equal(jdoc_scan_array(&sc), 1);
	assert_int_equal(jdoc_scan_elem(&sc), 1);
	assert_int_equal(jdoc_scan_array(&sc), -1);
	free(s);
}

static void test_scan_members(void **state)
{
	static char arena[4096];
	struct jdoc_scan sc;
	struct jdoc_scan_name first, second, other;
	const char *key, *z[4];
	uint32_t lens[4], n;
	size_t klen, len;
	int64_t v;
	int b;
	char *s = padded("{\"a\":1,\"long_name\":[\"x\",null,\"y\\u0041\"],\"c\":true} ", &len);

	(void)state;
	jdoc_scan_name_init(&first, "a", 1, 1);
	jdoc_scan_name_init(&second, "long_name", 9, 0);
	jdoc_scan_name_init(&other, "c", 1, 1);   /* the first-member form: never after a value */
	jdoc_scan_init(&sc, s, len, JDOC_MAX_DEPTH, arena, sizeof(arena));
	assert_int_equal(jdoc_scan_object(&sc), 1);
	assert_int_equal(jdoc_scan_key_is(&sc, &second), 0);   /* not consumed */
	assert_int_equal(jdoc_scan_key_is(&sc, &first), 1);
	assert_int_equal(jdoc_scan_int(&sc, &v), 1);
	assert_int_equal(v, 1);
	assert_int_equal(jdoc_scan_key_is(&sc, &second), 1);
	assert_int_equal(jdoc_scan_str_array(&sc, z, lens, 4, &n), 1);
	assert_int_equal(n, 3);
	assert_int_equal(lens[0], 1);
	assert_ptr_equal(z[0], s + 21);          /* a plain string stays in the input */
	assert_null(z[1]);
	assert_int_equal(lens[2], 2);
	assert_memory_equal(z[2], "yA", 3);        /* an escaped one is unescaped, NUL-terminated */
	assert_int_equal(jdoc_scan_key_is(&sc, &other), 0);
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 1);
	assert_int_equal(klen, 1);
	assert_int_equal(jdoc_scan_bool(&sc, &b), 1);
	assert_true(b);
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 0);
	assert_int_equal(jdoc_scan_end(&sc), 1);
	free(s);

	/* a name too long to predict never matches; a name with an escape is declined */
	jdoc_scan_name_init(&other, "a_name_of_twenty_one_", 21, 0);
	assert_int_equal(other.len, 0);
	s = padded("{\"\\u0061\":1}", &len);
	jdoc_scan_init(&sc, s, len, JDOC_MAX_DEPTH, arena, sizeof(arena));
	assert_int_equal(jdoc_scan_object(&sc), 1);
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), -1);
	free(s);

	/* the nesting cap holds in skipped values as in the tree */
	s = padded("{\"x\":[[1]]}", &len);
	jdoc_scan_init(&sc, s, len, 2, arena, sizeof(arena));
	assert_int_equal(jdoc_scan_object(&sc), 1);
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 1);
	assert_int_equal(jdoc_scan_skip(&sc), -1);
	jdoc_scan_init(&sc, s, len, 3, arena, sizeof(arena));
	assert_int_equal(jdoc_scan_object(&sc), 1);
	assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 1);
	assert_int_equal(jdoc_scan_skip(&sc), 1);
	free(s);

	/* numbers read as the tree reads them */
	{
		double d;
		s = padded("{\"t\":1.5e3,\"u\":-7,\"w\":1e999}", &len);
		jdoc_scan_init(&sc, s, len, JDOC_MAX_DEPTH, arena, sizeof(arena));
		assert_int_equal(jdoc_scan_object(&sc), 1);
		assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 1);
		assert_int_equal(jdoc_scan_number(&sc, &d), 1);
		assert_true(d == 1500.0);
		assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 1);
		assert_int_equal(jdoc_scan_number(&sc, &d), 1);
		assert_true(d == -7.0);
		assert_int_equal(jdoc_scan_key(&sc, &key, &klen), 1);
		assert_int_equal(jdoc_scan_int(&sc, &v), -1);   /* not an int64 literal */
		free(s);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_int_arrays),
		cmocka_unit_test(test_scan_runs),
		cmocka_unit_test(test_scan_members),
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_int64_limits),
		cmocka_unit_test(test_floats),
		cmocka_unit_test(test_long_number_literal),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_get_last_duplicate),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_string_errors),
		cmocka_unit_test(test_structure_errors),
		cmocka_unit_test(test_depth_cap),
		cmocka_unit_test(test_max_len),
		cmocka_unit_test(test_length_bounded),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_scan_arrays),
		cmocka_unit_test(test_check_agrees_with_get),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
