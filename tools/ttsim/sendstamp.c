#include "tools/ttsim/sendstamp.h"

#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* Nanoseconds of CLOCK_MONOTONIC per descriptor, 0: none. Written by the
 * sending thread, possibly read by others: atomic. Static, so untouched
 * pages cost nothing. */
static _Atomic int64_t ss_start[TTSIM_SENDSTAMP_MAX_FD], ss_end[TTSIM_SENDSTAMP_MAX_FD];

static int64_t sendstamp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sendstamp_note(int fd, int64_t start, ssize_t got)
{
	if (got <= 0 || fd < 0 || fd >= TTSIM_SENDSTAMP_MAX_FD)
		return;
	atomic_store_explicit(&ss_start[fd], start, memory_order_relaxed);
	atomic_store_explicit(&ss_end[fd], sendstamp_now(), memory_order_relaxed);
}

int ttsim_sendstamp_last(int fd, double *start, double *end)
{
	int64_t e;

	if (fd < 0 || fd >= TTSIM_SENDSTAMP_MAX_FD)
		return -1;
	e = atomic_load_explicit(&ss_end[fd], memory_order_relaxed);
	if (!e)
		return -1;
	*start = (double)atomic_load_explicit(&ss_start[fd], memory_order_relaxed) * 1e-9;
	*end = (double)e * 1e-9;
	return 0;
}

/* The program's send: the system call libc's send makes, then the note. */
ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	int64_t start = sendstamp_now();
	ssize_t got = sendto(fd, buf, n, flags, NULL, 0);

	sendstamp_note(fd, start, got);
	return got;
}

/* The program's sendmsg: the system call libc's sendmsg makes, then the note. */
ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	int64_t start = sendstamp_now();
	ssize_t got = (ssize_t)syscall(SYS_sendmsg, fd, msg, flags);

	sendstamp_note(fd, start, got);
	return got;
}
