/* test_lineread.c - capped lines of a FILE: whole lines, long ones skipped, the last line, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "base/lineread.h"

/* Every result of reading s with cap max, joined: "len:text|" or "L|" for a long line. */
static const char *all(const char *s, size_t max)
{
	static char out[1024];
	struct lineread lr;
	FILE *f = fmemopen((void *)s, strlen(s), "r");
	ssize_t n;
	size_t k = 0;

	assert_non_null(f);
	out[0] = '\0';
	lineread_init(&lr, f, max);
	while ((n = lineread_next(&lr)) != LINEREAD_EOF) {
		assert_true(n != LINEREAD_NOMEM);
		if (n == LINEREAD_LONG)
			k += (size_t)snprintf(out + k, sizeof(out) - k, "L|");
		else
			k += (size_t)snprintf(out + k, sizeof(out) - k, "%zd:%s|", n, lr.buf);
		/* the buffer holds at most the cap, the '\n' and the NUL */
		assert_true(lr.cap <= max + 2);
	}
	assert_false(ferror(f));
	lineread_release(&lr);
	fclose(f);
	return out;
}

static void test_lines(void **state)
{
	(void)state;
	assert_string_equal(all("", 8), "");
	assert_string_equal(all("a\nbc\n\n", 8), "2:a\n|3:bc\n|1:\n|");
	/* the last line without its '\n' */
	assert_string_equal(all("a\nlast", 8), "2:a\n|4:last|");
}

static void test_cap(void **state)
{
	(void)state;
	/* exactly the cap is whole, with or without its '\n'; one more is long */
	assert_string_equal(all("1234\n12345\nok\n", 4), "5:1234\n|L|3:ok\n|");
	assert_string_equal(all("1234", 4), "4:1234|");
	assert_string_equal(all("12345", 4), "L|");
	/* a long line is read to its end: the next starts where it should */
	assert_string_equal(all("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\ny\n", 4), "L|2:y\n|");
}

static void test_line_count(void **state)
{
	struct lineread lr;
	FILE *f = fmemopen((void *)"a\n12345678\nb", 12, "r");

	(void)state;
	assert_non_null(f);
	lineread_init(&lr, f, 4);
	assert_int_equal(lineread_next(&lr), 2);
	assert_int_equal(lr.line, 1);
	assert_int_equal(lineread_next(&lr), LINEREAD_LONG);
	assert_int_equal(lr.line, 2);
	assert_int_equal(lineread_next(&lr), 1);
	assert_int_equal(lr.line, 3);
	assert_int_equal(lineread_next(&lr), LINEREAD_EOF);
	assert_int_equal(lr.line, 3);
	lineread_release(&lr);
	fclose(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_line_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
