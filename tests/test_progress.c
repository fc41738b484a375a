/* test_progress.c - the progress line (base/progress.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/progress.h"

static void test_format(void **state)
{
	struct progress p;
	char buf[128];

	(void)state;
	setenv("TTAUDIT_PROGRESS", "0", 1);
	progress_init(&p, "replay", "merges", 2048ull << 20);
	assert_false(p.on);
	p.t0 = 100;
	assert_string_equal(progress_format(&p, 512ull << 20, 3100000, 102, buf, sizeof(buf)),
			    "replay: 512.0 MiB of 2.0 GiB (25%), 3.1 M merges, 256.0 MiB/s, ETA 6 s");
	p.total = 0;
	assert_string_equal(progress_format(&p, 300, 77, 101, buf, sizeof(buf)),
			    "replay: 300 B, 77 merges, 300 B/s");
	/* never wider than a terminal line */
	p.what = "a very long name of a piece of work that goes on and on and on and on";
	assert_true(strlen(progress_format(&p, 300, 77, 101, buf, sizeof(buf))) <= 78);
}

static void test_drawing(void **state)
{
	char out[512] = "";
	struct progress p;
	FILE *f = fmemopen(out, sizeof(out), "w");

	(void)state;
	assert_non_null(f);
	setenv("TTAUDIT_PROGRESS", "1", 1);
	progress_init(&p, "replay", "merges", 0);
	assert_true(p.on);
	p.f = f;
	progress_update(&p, 10, 1);       /* the first second draws nothing */
	assert_false(p.drawn);
	p.t0 -= 2;
	p.last -= 2;
	progress_update(&p, 10, 1);
	assert_true(p.drawn);
	progress_update(&p, 20, 2);       /* within a tenth of a second: not again */
	progress_release(&p);
	fclose(f);
	assert_non_null(strstr(out, "\r\033[Kreplay: 10 B, 1 merges"));
	assert_null(strstr(out, "20 B"));
	assert_int_equal(strcmp(out + strlen(out) - 4, "\r\033[K"), 0);
	setenv("TTAUDIT_PROGRESS", "0", 1);
	progress_init(&p, "replay", "merges", 0);
	p.t0 -= 2;
	p.last -= 2;
	progress_update(&p, 10, 1);
	assert_false(p.drawn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_drawing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
