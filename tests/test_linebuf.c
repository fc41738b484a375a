/* test_linebuf.c - line reassembly from pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "linebuf.h"

struct got {
	char text[1024];   /* lines joined by '|', overlong ones marked '!' */
};

static void on_line(void *ctx, const char *line, size_t n, int overlong)
{
	struct got *g = ctx;
	size_t len = strlen(g->text);

	snprintf(g->text + len, sizeof(g->text) - len, "%s%.*s|", overlong ? "!" : "", (int)n, line);
}

/* Feeds s in pieces of `step` bytes through a buffer of `cap` bytes. */
static const char *feed(const char *s, size_t step, size_t cap, int flush)
{
	static struct got g;
	char mem[64];
	struct linebuf lb;
	size_t n = strlen(s), i;

	memset(&g, 0, sizeof(g));
	linebuf_init(&lb, mem, cap);
	for (i = 0; i < n; i += step)
		linebuf_feed(&lb, s + i, n - i < step ? n - i : step, on_line, &g);
	if (flush)
		linebuf_flush(&lb, on_line, &g);
	return g.text;
}

static void test_pieces(void **state)
{
	const char *in = "a\nbb\n\nccc\nlast";
	size_t step;

	(void)state;
	for (step = 1; step <= strlen(in); step++) {
		assert_string_equal(feed(in, step, 64, 0), "a|bb||ccc|");
		assert_string_equal(feed(in, step, 64, 1), "a|bb||ccc|last|");
	}
}

static void test_overlong(void **state)
{
	size_t step;

	(void)state;
	/* cap 4: "abcdefg" is reported once, cut, and its rest skipped */
	for (step = 1; step <= 12; step++) {
		assert_string_equal(feed("ab\nabcdefg\ncd\n", step, 4, 0), "ab|!abcd|cd|");
		assert_string_equal(feed("abcd\n", step, 4, 0), "abcd|");
	}
	assert_string_equal(feed("abcdefgh", 3, 4, 1), "!abcd|");
}

static void test_reset(void **state)
{
	struct got g;
	char mem[16];
	struct linebuf lb;

	(void)state;
	memset(&g, 0, sizeof(g));
	linebuf_init(&lb, mem, sizeof(mem));
	linebuf_feed(&lb, "parent's", 8, on_line, &g);
	assert_true(linebuf_pending(&lb));
	linebuf_reset(&lb);
	assert_false(linebuf_pending(&lb));
	linebuf_feed(&lb, "child\n", 6, on_line, &g);
	assert_string_equal(g.text, "child|");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_overlong),
		cmocka_unit_test(test_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
