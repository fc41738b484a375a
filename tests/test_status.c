/* test_status.c - the status enum's names and the error detail helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "base/status.h"

static void test_names(void **state)
{
	int i;

	(void)state;
	/* the numbers are recorded by tools: they never change */
	assert_int_equal(STATUS_OK, 0);
	assert_int_equal(STATUS_NOMEM, 1);
	assert_int_equal(STATUS_PARSE, 3);
	assert_int_equal(STATUS_LIMIT, 4);
	assert_int_equal(STATUS_EOF, 7);
	assert_int_equal(STATUS_CHILD, 12);
	assert_string_equal(status_strerror(STATUS_OK), "ok");
	assert_string_equal(status_strerror(STATUS_NOMEM), "out of memory");
	assert_string_equal(status_strerror(STATUS_PARSE), "malformed input");
	assert_string_equal(status_strerror(STATUS_LIMIT), "limit exceeded");
	assert_string_equal(status_strerror(STATUS_CHILD), "child process failed");
	/* every value has a real name, distinct from the others */
	for (i = 0; i < STATUS__COUNT; i++) {
		int j;
		assert_string_not_equal(status_strerror((enum status)i), "unknown status");
		for (j = 0; j < i; j++)
			assert_string_not_equal(status_strerror((enum status)i),
						status_strerror((enum status)j));
	}
	assert_string_equal(status_strerror(STATUS__COUNT), "unknown status");
	assert_string_equal(status_strerror((enum status)-1), "unknown status");
	assert_string_equal(status_strerror((enum status)1000), "unknown status");
}

static void test_set_and_format(void **state)
{
	struct status_info si;
	char buf[64];

	(void)state;
	status_info_clear(&si);
	assert_int_equal(si.file[0], 0);
	assert_int_equal(si.line, 0);
	assert_int_equal(si.byte, 0);
	assert_int_equal(si.msg[0], 0);
	status_info_clear(NULL);

	assert_int_equal(status_set(&si, STATUS_PARSE, "%s has %u entries, host_pos %u", "dev_pos", 7u,
				    8u), STATUS_PARSE);
	assert_string_equal(si.msg, "dev_pos has 7 entries, host_pos 8");
	assert_string_equal(status_info_format(&si, buf, sizeof(buf)), "dev_pos has 7 entries, host_pos 8");
	assert_int_equal(status_set(NULL, STATUS_LIMIT, "x"), STATUS_LIMIT);

	assert_int_equal(status_set_at(&si, STATUS_IO, "audit.jsonl", 4117, 12, "cannot %s", "read"),
			 STATUS_IO);
	assert_string_equal(si.file, "audit.jsonl");
	assert_int_equal(si.line, 4117);
	assert_int_equal(si.byte, 12);
	assert_string_equal(status_info_format(&si, buf, sizeof(buf)), "audit.jsonl:4117: cannot read");
	/* a NULL file keeps the one already there */
	status_set_at(&si, STATUS_PARSE, NULL, 0, 0, "bad");
	assert_string_equal(si.file, "audit.jsonl");
	assert_string_equal(status_info_format(&si, buf, sizeof(buf)), "audit.jsonl: bad");
	assert_int_equal(status_set_at(NULL, STATUS_IO, "f", 1, 1, "m"), STATUS_IO);

	/* the buffer is always terminated, also when too small */
	assert_string_equal(status_info_format(&si, buf, 8), "audit.j");
	buf[0] = 'z';
	status_info_format(&si, buf, 0);
	assert_int_equal(buf[0], 'z');
	/* over-long messages are cut, not overflowed */
	{
		char big[2000];
		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		status_set(&si, STATUS_PARSE, "%s", big);
		assert_int_equal(strlen(si.msg), sizeof(si.msg) - 1);
		status_set_at(&si, STATUS_PARSE, big, 1, 1, "m");
		assert_int_equal(strlen(si.file), sizeof(si.file) - 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_set_and_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
