/* test_follow.c - the host-side reader over a file read once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "capture/follow.h"

static volatile sig_atomic_t never;

/* Runs follow --once over `text`; returns the capture in a static buffer. */
static const char *run(const char *text, size_t n, int all_lines, struct follow_stats *fs)
{
	static char out[1 << 16];
	char in[] = "/tmp/test_follow.XXXXXX";
	int fd = mkstemp(in);
	struct follow_opts o = { 0 };
	struct banner_set *rules = banner_set_default();
	FILE *f = tmpfile();
	size_t got;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
	o.path = in;
	o.out = f;
	o.rules = rules;
	o.all_lines = all_lines;
	o.once = 1;
	o.poll_ms = 10;
	o.stop = &never;
	assert_int_equal(follow_run(&o, fs, NULL), STATUS_OK);
	rewind(f);
	got = fread(out, 1, sizeof(out) - 1, f);
	out[got] = '\0';
	fclose(f);
	unlink(in);
	banner_set_free(rules);
	return out;
}

static int count(const char *s, const char *what)
{
	int n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s++;
	}
	return n;
}

static void test_once(void **state)
{
	static const char text[] =
		"INFO start\n"
		"MERGE_AUDIT {\"ev\":\"merge\",\"step\":3}\n"
		"INFO 11-29 [generator.py:1] QWEN36_MERGE_STAMP_GUARD engaged: merge requires\n"
		"{\"ev\":\"decode\"}";   /* no final newline: still a line at the end */
	struct follow_stats fs;
	const char *cap = run(text, sizeof(text) - 1, 0, &fs);

	(void)state;
	assert_int_equal(fs.lines, 4);
	assert_int_equal(fs.audit, 2);
	assert_int_equal(fs.banner, 1);
	assert_int_equal(fs.lost, 0);
	assert_int_equal(count(cap, "\n"), 5);
	assert_true(strncmp(cap, "{\"src\":\"start\"", 14) == 0);
	assert_non_null(strstr(cap, "\"event\":{\"ev\":\"merge\",\"step\":3}}"));
	assert_non_null(strstr(cap, "\"rule\":\"arm:stamp\""));
	assert_non_null(strstr(cap, "\"src\":\"end\""));
	assert_null(strstr(cap, "\"pid\""));
	assert_int_equal(count(cap, "\"src\":\"line\""), 0);
	cap = run(text, sizeof(text) - 1, 1, &fs);
	assert_int_equal(count(cap, "\"src\":\"line\""), 1);
}

static void test_long_line(void **state)
{
	size_t n = FOLLOW_LINE_MAX + 100;
	char *text = malloc(n + 20);
	struct follow_stats fs;
	const char *cap;

	(void)state;
	assert_non_null(text);
	memset(text, 'x', n);
	memcpy(text + n, "\n{\"ev\":\"a\"}\n", 12);
	cap = run(text, n + 12, 0, &fs);
	assert_int_equal(fs.lost, 1);
	assert_non_null(strstr(cap, "\"src\":\"lost\""));
	assert_non_null(strstr(cap, "\"lost\":1}"));
	assert_int_equal(fs.audit, 1);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_once),
		cmocka_unit_test(test_long_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
