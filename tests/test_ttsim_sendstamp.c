/* test_ttsim_sendstamp.c - when ttsim's sends started and returned, per socket. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "tools/ttsim/sendstamp.h"

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* send and sendmsg send, return what the kernel said and note the call. */
static void test_notes_calls(void **state)
{
	int sv[2];
	double before, after, s0, s1;
	char buf[16], a[] = "ab", b[] = "cde";
	struct iovec iov[2] = { { a, 2 }, { b, 3 } };
	struct msghdr mh;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(ttsim_sendstamp_last(sv[0], &s0, &s1), -1);
	before = mono();
	assert_int_equal(send(sv[0], "hello", 5, MSG_NOSIGNAL), 5);
	after = mono();
	assert_int_equal(ttsim_sendstamp_last(sv[0], &s0, &s1), 0);
	assert_true(before <= s0 && s0 <= s1 && s1 <= after);
	assert_int_equal(read(sv[1], buf, sizeof(buf)), 5);
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = 2;
	before = mono();
	assert_int_equal(sendmsg(sv[0], &mh, MSG_NOSIGNAL), 5);
	after = mono();
	assert_int_equal(ttsim_sendstamp_last(sv[0], &s0, &s1), 0);
	assert_true(before <= s0 && s0 <= s1 && s1 <= after);
	assert_int_equal(read(sv[1], buf, sizeof(buf)), 5);
	assert_memory_equal(buf, "abcde", 5);
	close(sv[0]);
	close(sv[1]);
}

/* A failed call changes no note and keeps its errno. */
static void test_failures_untouched(void **state)
{
	int sv[2];
	double s0, s1, t0, t1;
	struct msghdr mh;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(send(sv[0], "x", 1, MSG_NOSIGNAL), 1);
	assert_int_equal(ttsim_sendstamp_last(sv[0], &s0, &s1), 0);
	close(sv[1]);
	errno = 0;
	assert_int_equal(send(sv[0], "y", 1, MSG_NOSIGNAL), -1);
	assert_int_equal(errno, EPIPE);
	memset(&mh, 0, sizeof(mh));
	errno = 0;
	assert_int_equal(sendmsg(-1, &mh, 0), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(ttsim_sendstamp_last(sv[0], &t0, &t1), 0);
	assert_true(t0 == s0 && t1 == s1);
	assert_int_equal(ttsim_sendstamp_last(-1, &t0, &t1), -1);
	assert_int_equal(ttsim_sendstamp_last(TTSIM_SENDSTAMP_MAX_FD, &t0, &t1), -1);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notes_calls),
		cmocka_unit_test(test_failures_untouched),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
