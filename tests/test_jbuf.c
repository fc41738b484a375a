/* test_jbuf.c - the bounded JSON writer of capture records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "capture/jbuf.h"

static const char *str(const char *s, size_t n, char *buf, size_t cap)
{
	struct jbuf w;

	jbuf_init(&w, buf, cap - 1);   /* one byte kept for the NUL */
	jbuf_str(&w, s, n);
	if (!jbuf_ok(&w))
		return NULL;
	buf[w.len] = '\0';
	return buf;
}

static void test_escapes(void **state)
{
	char buf[128];

	(void)state;
	assert_string_equal(str("a\"b\\c", 5, buf, sizeof(buf)), "\"a\\\"b\\\\c\"");
	assert_string_equal(str("\n\r\t\b\f\x01\x1f", 7, buf, sizeof(buf)),
			    "\"\\n\\r\\t\\b\\f\\u0001\\u001f\"");
	assert_string_equal(str("x\0y", 3, buf, sizeof(buf)), "\"x\\u0000y\"");
	/* valid UTF-8 passes, each invalid byte becomes \udcNN (Python's surrogateescape) */
	assert_string_equal(str("\xc3\xa9", 2, buf, sizeof(buf)), "\"\xc3\xa9\"");
	assert_string_equal(str("\xe2\x82\xac", 3, buf, sizeof(buf)), "\"\xe2\x82\xac\"");
	assert_string_equal(str("\xf0\x9f\x98\x80", 4, buf, sizeof(buf)), "\"\xf0\x9f\x98\x80\"");
	assert_string_equal(str("a\xff" "b", 3, buf, sizeof(buf)), "\"a\\udcffb\"");
	assert_string_equal(str("\xc3", 1, buf, sizeof(buf)), "\"\\udcc3\"");
	assert_string_equal(str("\xc0\xaf", 2, buf, sizeof(buf)), "\"\\udcc0\\udcaf\"");       /* overlong */
	assert_string_equal(str("\xed\xa0\x80", 3, buf, sizeof(buf)), "\"\\udced\\udca0\\udc80\""); /* surrogate */
	assert_string_equal(str("\xf4\x90\x80\x80", 4, buf, sizeof(buf)),
			    "\"\\udcf4\\udc90\\udc80\\udc80\"");                                 /* > U+10FFFF */
	assert_string_equal(str("\xe2\x82" "x", 3, buf, sizeof(buf)), "\"\\udce2\\udc82x\"");   /* cut short */
}

/* Counted, and the same escapes in raw JSON text (an audit object's strings). */
static void test_invalid_count(void **state)
{
	char buf[128];
	struct jbuf w;

	(void)state;
	jbuf_init(&w, buf, sizeof(buf));
	jbuf_str(&w, "a\xff\xfe\xc3\xa9", 5);
	assert_int_equal(w.invalid, 2);
	jbuf_init(&w, buf, sizeof(buf));
	jbuf_raw_utf8(&w, "{\"s\":\"r\xff\xc3\xa9\xed\xa0\x80\"}", 13);
	assert_true(jbuf_ok(&w));
	assert_int_equal(w.invalid, 4);
	assert_memory_equal(buf, "{\"s\":\"r\\udcff\xc3\xa9\\udced\\udca0\\udc80\"}", w.len);
	jbuf_init(&w, buf, sizeof(buf));
	jbuf_raw_utf8(&w, "{\"a\":1}", 7);
	assert_int_equal(w.invalid, 0);
	assert_int_equal(w.len, 7);
	jbuf_init(&w, buf, 8);
	jbuf_raw_utf8(&w, "{\"a\":\"\xff\"}", 9);
	assert_false(jbuf_ok(&w));
}

static void test_overflow(void **state)
{
	char buf[9];
	struct jbuf w;

	(void)state;
	assert_null(str("abcdef", 6, buf, 8));        /* needs 8 with the quotes, 9 with the NUL */
	assert_non_null(str("abcdef", 6, buf, 9));
	jbuf_init(&w, buf, 4);
	jbuf_raw(&w, "abc", 3);
	assert_true(jbuf_ok(&w));
	jbuf_raw(&w, "de", 2);
	assert_false(jbuf_ok(&w));
	jbuf_raw(&w, "", 0);
	assert_int_equal(w.len, 3);                  /* stays where it stopped */
}

static void test_cut(void **state)
{
	char buf[32];
	struct jbuf w;
	int cut;

	(void)state;
	jbuf_init(&w, buf, sizeof(buf));
	cut = jbuf_str_cut(&w, "0123456789012345678901234567890123456789", 40, 10);
	assert_int_equal(cut, 1);
	assert_true(jbuf_ok(&w));
	assert_true(w.len <= sizeof(buf) - 10);
	assert_int_equal(buf[0], '"');
	assert_int_equal(buf[w.len - 1], '"');
	/* a cut never splits an escape */
	jbuf_init(&w, buf, 16);
	cut = jbuf_str_cut(&w, "\n\n\n\n\n\n\n\n", 8, 4);
	assert_int_equal(cut, 1);
	assert_int_equal(w.len % 2, 0);
	jbuf_init(&w, buf, sizeof(buf));
	assert_int_equal(jbuf_str_cut(&w, "short", 5, 10), 0);
}

static void test_numbers(void **state)
{
	char buf[128];
	struct jbuf w;
	struct timespec ts = { 1764448862, 123456789 };

	(void)state;
	jbuf_init(&w, buf, sizeof(buf));
	jbuf_i64(&w, -9223372036854775807LL - 1);
	jbuf_raw(&w, " ", 1);
	jbuf_u64(&w, 18446744073709551615ULL);
	jbuf_raw(&w, " ", 1);
	jbuf_time(&w, &ts);
	jbuf_raw(&w, " ", 1);
	ts.tv_sec = 0;
	ts.tv_nsec = 5000;
	jbuf_time(&w, &ts);
	buf[w.len] = '\0';
	assert_string_equal(buf, "-9223372036854775808 18446744073709551615 1764448862.123456 0.000005");
	/* every digit count, both parities */
	{
		static const uint64_t v[] = { 0, 7, 10, 99, 100, 999, 1000, 12345, 100000, 9876543 };
		size_t i;

		jbuf_init(&w, buf, sizeof(buf));
		for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			jbuf_u64(&w, v[i]);
			jbuf_i64(&w, -(int64_t)v[i]);
		}
		ts.tv_sec = 9;
		ts.tv_nsec = 999999999;
		jbuf_time(&w, &ts);
		buf[w.len] = '\0';
		assert_string_equal(buf, "00"
				    "7-7"
				    "10-10"
				    "99-99"
				    "100-100"
				    "999-999"
				    "1000-1000"
				    "12345-12345"
				    "100000-100000"
				    "9876543-9876543"
				    "9.999999");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_invalid_count),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_numbers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
