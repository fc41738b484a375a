/* test_rxstamp.c - kernel receive stamps through the program's recv(). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "bench/rxstamp.h"

/* A connected loopback TCP pair: fd[0] reads, fd[1] writes. */
struct pair {
	int fd[2];
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Reads what is queued on fd, which must be exactly want, and returns the
 * time the stamps give it. */
static double read_stamped(int fd, const char *want)
{
	char buf[64];
	double t = 0;

	assert_int_equal(recv(fd, buf, sizeof(buf), 0), (ssize_t)strlen(want));
	assert_memory_equal(buf, want, strlen(want));
	assert_int_equal(rxstamp_last(&t), 0);
	return t;
}

static int pair_setup(void **state)
{
	static struct pair p;
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int l, one = 1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
	p.fd[0] = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(p.fd[0] >= 0);
	assert_int_equal(connect(p.fd[0], (struct sockaddr *)&a, sizeof(a)), 0);
	p.fd[1] = accept(l, NULL, NULL);
	assert_true(p.fd[1] >= 0);
	close(l);
	assert_int_equal(setsockopt(p.fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	*state = &p;
	return 0;
}

static int pair_teardown(void **state)
{
	struct pair *p = *state;

	rxstamp_untrack(p->fd[0]);
	close(p->fd[0]);
	close(p->fd[1]);
	return 0;
}

/* The stamp is when the bytes arrived, not when they were read. */
static void test_stamp_is_arrival(void **state)
{
	struct pair *p = *state;
	double t_write, t_read, t;

	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	t_write = mono();
	assert_int_equal(write(p->fd[1], "token", 5), 5);
	nap_ms(40);
	t_read = mono();
	t = read_stamped(p->fd[0], "token");
	assert_true(t >= t_write - 0.002);  /* the two clocks are read a few ns apart */
	assert_true(t < t_read - 0.030);   /* stamped before a 40 ms nap: only later under load */
}

/* Packets merged before the read: the newest one's stamp (late, never early). */
static void test_merged_reads_newest(void **state)
{
	struct pair *p = *state;
	char buf[64];
	double t_second, t;

	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	assert_int_equal(write(p->fd[1], "one", 3), 3);
	nap_ms(40);
	t_second = mono();
	assert_int_equal(write(p->fd[1], "two", 3), 3);
	nap_ms(20);
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 6);
	assert_int_equal(rxstamp_last(&t), 0);
	assert_true(t >= t_second - 0.002);
}

/* Peeks, empty reads and errors leave the stamp of the last data read alone. */
static void test_peek_and_eagain_keep_stamp(void **state)
{
	struct pair *p = *state;
	char buf[64];
	double t1, t2, t_read;

	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	assert_int_equal(write(p->fd[1], "a", 1), 1);
	nap_ms(30);
	t_read = mono();
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 1);
	assert_int_equal(rxstamp_last(&t1), 0);
	assert_true(t1 < t_read - 0.020);
	assert_int_equal(write(p->fd[1], "b", 1), 1);
	nap_ms(30);
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), MSG_PEEK), 1);
	assert_int_equal(rxstamp_last(&t2), 0);
	/* still the first read's stamp: equal to t1 when right; "b"'s stamp, the
	 * wrong answer, is at least the 30 ms nap later whatever the load */
	assert_true(t2 - t1 < 0.010);
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 1);
	assert_int_equal(rxstamp_last(&t2), 0);
	assert_true(t2 - t1 > 0.020);
	errno = 0;
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(rxstamp_last(&t1), 0);
	assert_true(t1 - t2 < 1e-6 && t2 - t1 < 1e-6);   /* the same stamp, converted again */
}

/* One clock relation per run: the same stamp always converts to the same
 * time, and later stamps never to earlier times (a fresh pair of clock
 * readings per conversion made gaps of -1 to -241 ns). */
static void test_one_clock_relation(void **state)
{
	struct pair *p = *state;
	char buf[64];
	double t1, t2, prev = 0;
	int i;

	rxstamp_clock_sync();
	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	for (i = 0; i < 200; i++) {
		assert_int_equal(write(p->fd[1], "a", 1), 1);
		assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 1);
		assert_int_equal(rxstamp_last(&t1), 0);
		assert_int_equal(rxstamp_last(&t2), 0);
		assert_true(t1 == t2);
		assert_true(t1 >= prev);
		prev = t1;
	}
}

/* Bytes read from an untracked socket have no stamp: none may be taken for them. */
static void test_untracked_read_clears(void **state)
{
	struct pair *p = *state;
	char buf[64];
	double t;

	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	assert_int_equal(write(p->fd[1], "x", 1), 1);
	nap_ms(5);
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 1);
	assert_int_equal(rxstamp_last(&t), 0);
	rxstamp_untrack(p->fd[0]);
	assert_int_equal(write(p->fd[1], "yz", 2), 2);
	nap_ms(5);
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 2);
	assert_memory_equal(buf, "yz", 2);
	assert_int_equal(rxstamp_last(&t), -1);
}

/*
 * A mark keeps the stamp of what was queued when it was taken: a chunk that
 * is still unread when the next one arrives is not given the next one's
 * time, and is read on its own.
 */
static void test_mark_splits_merged(void **state)
{
	struct pair *p = *state;
	double t_one, t_two, t;

	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	t_one = mono();
	assert_int_equal(write(p->fd[1], "one", 3), 3);
	nap_ms(30);
	errno = 1234;
	assert_int_equal(rxstamp_mark(p->fd[0]), 0);
	assert_int_equal(errno, 1234);
	nap_ms(30);
	t_two = mono();
	assert_int_equal(write(p->fd[1], "two", 3), 3);
	nap_ms(20);
	/* a second mark while "one" is unread marks "two" apart */
	assert_int_equal(rxstamp_mark(p->fd[0]), 0);
	t = read_stamped(p->fd[0], "one");
	/* - 0.002: the stamp's realtime-to-monotonic relation, taken from the
	 * narrowest of 16 clock brackets (microseconds); - 0.020: "one" was
	 * stamped before its write returned, two naps (60 ms at least, longer
	 * under load, never shorter) before t_two was read */
	assert_true(t >= t_one - 0.002 && t < t_two - 0.020);
	t = read_stamped(p->fd[0], "two");
	assert_true(t >= t_two - 0.002);
}

/* Marks queue up: every chunk marked before the next arrived keeps its own
 * time, however many wait unread; past RXSTAMP_MARKS the rest is read late. */
static void test_marks_queue(void **state)
{
	struct pair *p = *state;
	char buf[64], c;
	double t[RXSTAMP_MARKS + 2], got;
	int i;

	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	for (i = 0; i < RXSTAMP_MARKS + 2; i++) {
		c = (char)('0' + i);   /* RXSTAMP_MARKS + 2 <= 75 keeps it printable */
		t[i] = mono();
		assert_int_equal(write(p->fd[1], &c, 1), 1);
		nap_ms(15);
		assert_int_equal(rxstamp_mark(p->fd[0]), 0);
	}
	for (i = 0; i < RXSTAMP_MARKS; i++) {
		assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 1);
		assert_int_equal(buf[0], '0' + i);
		assert_int_equal(rxstamp_last(&got), 0);
		/* ordering, not a time budget: chunk i is stamped inside its write,
		 * which returned before the nap and the reading of t[i + 1]; every
		 * later chunk's stamp comes after t[i + 1]. A preempted writer cannot
		 * break it (a fixed "t[i] + 10 ms" could) */
		assert_true(got >= t[i] - 0.002 && got < t[i + 1]);
	}
	/* the two chunks past the queue come together, with the newer stamp */
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 2);
	assert_int_equal(rxstamp_last(&got), 0);
	assert_true(got >= t[RXSTAMP_MARKS + 1] - 0.002);
}

/* A mark read in pieces holds for every piece, and ends where it ends;
 * bytes never marked come with their own read's stamp. */
static void test_mark_partial_reads(void **state)
{
	struct pair *p = *state;
	char buf[64];
	double t_first, t_second, t_third, t;

	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	t_first = mono();
	assert_int_equal(write(p->fd[1], "abcd", 4), 4);
	nap_ms(20);
	assert_int_equal(rxstamp_mark(p->fd[0]), 0);
	t_second = mono();
	assert_int_equal(write(p->fd[1], "efgh", 4), 4);
	nap_ms(20);
	assert_int_equal(rxstamp_mark(p->fd[0]), 0);
	t_third = mono();
	assert_int_equal(write(p->fd[1], "ij", 2), 2);   /* never marked */
	nap_ms(20);
	assert_int_equal(recv(p->fd[0], buf, 3, 0), 3);
	assert_int_equal(rxstamp_last(&t), 0);
	/* "abcd" was stamped before its write returned, a 20 ms nap (a lower
	 * bound under any load) before t_second was read */
	assert_true(t >= t_first - 0.002 && t < t_second - 0.010);
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 1);    /* the first mark's last byte alone */
	assert_int_equal(buf[0], 'd');
	assert_int_equal(rxstamp_last(&t), 0);
	assert_true(t < t_second - 0.010);
	t = read_stamped(p->fd[0], "efgh");
	assert_true(t >= t_second - 0.002 && t < t_third - 0.010);
	t = read_stamped(p->fd[0], "ij");
	assert_true(t >= t_third - 0.002);
}

/* Nothing to mark: nothing queued, or not tracked; errno untouched. */
static void test_mark_nothing(void **state)
{
	struct pair *p = *state;
	char buf[16];

	errno = 77;
	assert_int_equal(rxstamp_mark(p->fd[0]), -1);  /* untracked */
	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	assert_int_equal(rxstamp_mark(p->fd[0]), -1);  /* empty */
	assert_int_equal(errno, 77);
	assert_int_equal(rxstamp_mark(-1), -1);
	/* untracking drops a mark: the bytes are then read as they come */
	assert_int_equal(write(p->fd[1], "ab", 2), 2);
	nap_ms(5);
	assert_int_equal(rxstamp_mark(p->fd[0]), 0);
	rxstamp_untrack(p->fd[0]);
	assert_int_equal(write(p->fd[1], "cd", 2), 2);
	nap_ms(5);
	assert_int_equal(rxstamp_track(p->fd[0]), 0);
	assert_int_equal(recv(p->fd[0], buf, sizeof(buf), 0), 4);
}

/* What cannot be tracked says so, and recv stays recv for it. */
static void test_refusals(void **state)
{
	int fds[2];
	char c;

	(void)state;
	errno = 0;
	assert_int_equal(rxstamp_track(-1), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(rxstamp_track(RXSTAMP_MAX_FD), -1);
	assert_int_equal(pipe(fds), 0);
	errno = 0;
	assert_int_equal(rxstamp_track(fds[0]), -1);
	assert_int_equal(errno, ENOTSOCK);
	close(fds[0]);
	close(fds[1]);
	errno = 0;
	assert_int_equal(recv(-1, &c, 1, 0), -1);
	assert_int_equal(errno, EBADF);
}

/* Keeps the kernel's stamping on for the whole run (see rxstamp_hold). */
static int group_setup(void **state)
{
	static int hold;

	hold = rxstamp_hold();
	assert_true(hold >= 0);
	nap_ms(20);
	*state = &hold;
	return 0;
}

static int group_teardown(void **state)
{
	rxstamp_drop(*(int *)*state);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stamp_is_arrival, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_merged_reads_newest, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_peek_and_eagain_keep_stamp, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_untracked_read_clears, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_one_clock_relation, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_mark_splits_merged, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_mark_partial_reads, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_marks_queue, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_mark_nothing, pair_setup, pair_teardown),
		cmocka_unit_test(test_refusals),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
