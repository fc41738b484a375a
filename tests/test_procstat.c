/* test_procstat.c - /proc/<pid>/stat fields by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/procstat.h"

/* A zombie whose name holds ") " and spaces: fields counted from the last ')'. */
static const char zombie[] =
	"4242 (a) b (c)) Z 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 0 0 "
	"18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 -9\n";

static void test_fields(void **state)
{
	long long v = 0;
	char st = 0;

	(void)state;
	assert_int_equal(procstat_parse(zombie, strlen(zombie), PROCSTAT_PPID, &v, &st), 0);
	assert_int_equal(v, 17);
	assert_int_equal(st, 'Z');
	assert_int_equal(procstat_parse(zombie, strlen(zombie), PROCSTAT_STARTTIME, &v, NULL), 0);
	assert_int_equal(v, 987654);
	assert_int_equal(procstat_parse(zombie, strlen(zombie), PROCSTAT_EXIT_CODE, &v, NULL), 0);
	assert_int_equal(v, -9);
	/* the state is a letter, not a number; the letter is still given */
	st = 0;
	assert_int_equal(procstat_parse(zombie, strlen(zombie), PROCSTAT_STATE, &v, &st), -1);
	assert_int_equal(st, 'Z');
}

static void test_malformed(void **state)
{
	long long v = 0;

	(void)state;
	assert_int_equal(procstat_parse("", 0, PROCSTAT_PPID, &v, NULL), -1);
	assert_int_equal(procstat_parse("12 (x", 5, PROCSTAT_PPID, &v, NULL), -1);
	/* a line cut before the field (the buffer is not NUL-terminated past n) */
	assert_int_equal(procstat_parse("12 (x) S 1 2", 10, PROCSTAT_STARTTIME, &v, NULL), -1);
}

static void test_self(void **state)
{
	char st = 0;

	(void)state;
	assert_int_equal(procstat_read(getpid(), PROCSTAT_PPID, &st), (long long)getppid());
	assert_int_equal(st, 'R');
	assert_true(procstat_read(getpid(), PROCSTAT_STARTTIME, NULL) > 0);
	assert_int_equal(procstat_read(-1, PROCSTAT_PPID, NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_self),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
