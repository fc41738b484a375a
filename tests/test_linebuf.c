/* test_linebuf.c - line reassembly from pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "base/linebuf.h"

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

static void on_peek(void *ctx, const char *line, size_t n, int overlong, size_t end)
{
	struct got *g = ctx;
	size_t len = strlen(g->text);

	snprintf(g->text + len, sizeof(g->text) - len, "%s%.*s@%zu|", overlong ? "!" : "", (int)n, line, end);
}

/*
 * What a write will complete, seen before the write (peek), then the part
 * the kernel took (take): peek changes nothing, and take hands over only
 * the lines peek was not asked for.
 */
static void test_peek_take(void **state)
{
	struct got g, t;
	char mem[8];
	struct linebuf lb;

	(void)state;
	memset(&g, 0, sizeof(g));
	memset(&t, 0, sizeof(t));
	linebuf_init(&lb, mem, sizeof(mem));
	linebuf_feed(&lb, "ab", 2, on_line, &t);
	assert_int_equal(linebuf_peek(&lb, "c\nde\nfg", 8, 10, on_peek, &g), 2);
	assert_string_equal(g.text, "abc@2|de@5|");
	assert_int_equal(lb.len, 2);            /* unchanged */
	/* the kernel took "c\nd": one line complete, "d" pending */
	linebuf_take(&lb, "c\nde\nfg", 3, 1, on_line, &t);
	assert_string_equal(t.text, "");
	linebuf_flush(&lb, on_line, &t);
	assert_string_equal(t.text, "d|");
	/* take hands over the lines past what peek showed (max) */
	memset(&g, 0, sizeof(g));
	linebuf_feed(&lb, "x", 1, on_line, &t);
	assert_int_equal(linebuf_peek(&lb, "1\n2\n3\n", 6, 1, on_peek, &g), 1);
	assert_string_equal(g.text, "x1@2|");
	linebuf_take(&lb, "1\n2\n3\n", 6, 1, on_line, &t);
	assert_string_equal(t.text, "d|2|3|");
	/* overlong, pending and new */
	memset(&g, 0, sizeof(g));
	linebuf_feed(&lb, "0123456789", 10, on_line, &t);
	assert_int_equal(linebuf_peek(&lb, "ab\nlong-long-line\n", 18, 10, on_peek, &g), 2);
	assert_string_equal(g.text, "!01234567@3|!long-lon@18|");
	linebuf_take(&lb, "ab\nlong-long-line\n", 18, 0, on_line, &t);
	assert_string_equal(t.text, "d|2|3|!01234567|!long-lon|");
	assert_false(linebuf_pending(&lb));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_overlong),
		cmocka_unit_test(test_reset),
		cmocka_unit_test(test_peek_take),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
