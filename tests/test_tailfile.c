/*
 * test_tailfile.c - an input followed like tail -F (base/tailfile.c): start
 * at the end of an existing file (and inside a line), late start, append,
 * rotation, truncation, a name moved away, partial lines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/tailfile.h"
#include "tests/testutil.h"

static char got[4096];

static void t_line(void *ctx, const char *line, size_t n, bool overlong)
{
	size_t k = strlen(got);

	(void)ctx;
	/* the first 16 bytes of each line */
	snprintf(got + k, sizeof(got) - k, "%s%.*s%s", k ? "|" : "", (int)(n < 16 ? n : 16), line,
		 overlong ? "!" : "");
}

static void t_append(const char *path, const char *s)
{
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	fputs(s, f);
	fclose(f);
}

/* All there is now, as "a|b|c". */
static const char *t_poll(struct tailfile *s, bool final)
{
	struct status_info si;

	got[0] = '\0';
	status_info_clear(&si);
	while (tailfile_poll(s, 1 << 20, final, t_line, NULL, &si) > 0)
		;
	return got;
}

static char notes[1024];

static void t_note(void *ctx, const char *what)
{
	size_t k = strlen(notes);

	(void)ctx;
	snprintf(notes + k, sizeof(notes) - k, "%s%s", k ? "|" : "", what);
}

static void test_end_then_follow(void **state)
{
	const char *p = testutil_write("a.log", "old 1\nold 2\nhalf", 16);
	char moved[600];
	struct tailfile *s;

	(void)state;
	s = tailfile_new(p, false);
	assert_non_null(s);
	notes[0] = '\0';
	tailfile_set_notes(s, t_note, NULL);
	/* what was there is not read, nor the rest of the line it started inside */
	assert_string_equal(t_poll(s, false), "");
	assert_true(tailfile_up(s));
	t_append(p, " line\nnew 1\nnew");
	assert_string_equal(t_poll(s, false), "new 1");
	t_append(p, " 2\n");
	assert_string_equal(t_poll(s, false), "new 2");
	/* rotation: the name moves away (read on), then a new file takes it (read from 0) */
	snprintf(moved, sizeof(moved), "%s.1", p);
	assert_int_equal(rename(p, moved), 0);
	t_append(moved, "late in the old\nunfinished");
	assert_string_equal(t_poll(s, false), "late in the old");
	t_append(p, "fresh 1\n");
	/* the old file's end (a line), then the new file from its start */
	assert_string_equal(t_poll(s, false), "unfinished|fresh 1");
	assert_int_equal(tailfile_stats(s)->rotations, 1);
	/* truncation: again from 0 */
	testutil_write("a.log", "t\n", 2);
	assert_string_equal(t_poll(s, false), "t");
	assert_int_equal(tailfile_stats(s)->truncations, 1);
	/* each said once, when it happened */
	assert_string_equal(notes, "file moved away, reading it until a new one appears|"
			    "file replaced, following the new file|file truncated, reading from its start");
	/* a partial last line waits, and is a line at the final poll */
	t_append(p, "tail");
	assert_string_equal(t_poll(s, false), "");
	assert_string_equal(t_poll(s, true), "tail");
	tailfile_free(s);
}

static void test_from_start_and_late(void **state)
{
	const char *p = testutil_write("b.log", "x\ny\n", 4);
	char late[600];
	struct tailfile *s;

	(void)state;
	s = tailfile_new(p, true);
	assert_string_equal(t_poll(s, false), "x|y");
	tailfile_free(s);
	snprintf(late, sizeof(late), "%s/late.log", testutil_dir());
	s = tailfile_new(late, false);
	notes[0] = '\0';
	tailfile_set_notes(s, t_note, NULL);
	assert_string_equal(t_poll(s, false), "");
	assert_string_equal(t_poll(s, false), "");
	assert_string_equal(notes, "waiting for the file to appear");
	assert_false(tailfile_up(s));
	assert_int_equal(tailfile_stats(s)->opens, 0);
	t_append(late, "first\n");   /* appeared after the start: read whole */
	assert_string_equal(t_poll(s, false), "first");
	assert_true(tailfile_up(s));
	tailfile_free(s);
}

static void test_overlong(void **state)
{
	size_t n = TAILFILE_LINE_MAX + 10;
	char *big = malloc(n + 8);
	struct tailfile *s;
	const char *p;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', n);
	memcpy(big + n, "\nok\n", 4);
	p = testutil_write("c.log", big, n + 4);
	s = tailfile_new(p, true);
	t_poll(s, false);
	assert_int_equal(tailfile_stats(s)->overlong, 1);
	assert_string_equal(got, "xxxxxxxxxxxxxxxx!|ok");
	tailfile_free(s);
	free(big);
}

static int setup(void **state)
{
	(void)state;
	return testutil_setup("test_tailfile");
}

static int teardown(void **state)
{
	(void)state;
	return testutil_teardown();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_end_then_follow),
		cmocka_unit_test(test_from_start_and_late),
		cmocka_unit_test(test_overlong),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
