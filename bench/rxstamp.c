/*
 * rxstamp.c - the kernel's receive time of the bytes the load driver reads
 * (SO_TIMESTAMPNS through recvmsg, marks for bytes queued while the loop is
 * busy). See rxstamp.h; the executable's recv() calls rxstamp_recv().
 */
#include "bench/rxstamp.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>

#include "base/mono.h"

/* Per descriptor, whether it is tracked: read by every thread that calls
 * recv, hence atomic. Static, so untouched pages cost nothing. */
static atomic_uchar rx_tracked[RXSTAMP_MAX_FD];

/* CLOCK_REALTIME nanoseconds of this thread's latest read's stamp; 0: none. */
static __thread int64_t rx_last_ns;

/*
 * Per descriptor, the marks rxstamp_mark() left, oldest first: a queue of
 * segments of the bytes at the head of the receive queue, each with the
 * newest stamp it held when it was marked. total is the bytes they cover.
 * Touched only by the thread that reads the descriptor.
 */
struct rx_marks {
	uint32_t n[RXSTAMP_MARKS];
	int64_t ns[RXSTAMP_MARKS];
	uint32_t total;
	uint8_t head, count;
};
static struct rx_marks rx_marks[RXSTAMP_MAX_FD];

/* Asks the kernel to stamp what fd receives. */
static int rxstamp_enable(int fd)
{
	int one = 1;

	return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
}

int rxstamp_hold(void)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), e;

	if (fd < 0)
		return -1;
	if (rxstamp_enable(fd)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

void rxstamp_drop(int hold)
{
	if (hold >= 0)
		close(hold);
}

int rxstamp_track(int fd)
{
	if (fd < 0 || fd >= RXSTAMP_MAX_FD) {
		errno = EBADF;
		return -1;
	}
	if (rxstamp_enable(fd))
		return -1;
	memset(&rx_marks[fd], 0, sizeof(rx_marks[fd]));
	atomic_store_explicit(&rx_tracked[fd], 1, memory_order_relaxed);
	return 0;
}

void rxstamp_untrack(int fd)
{
	if (fd < 0 || fd >= RXSTAMP_MAX_FD)
		return;
	atomic_store_explicit(&rx_tracked[fd], 0, memory_order_relaxed);
	memset(&rx_marks[fd], 0, sizeof(rx_marks[fd]));
}

/* CLOCK_REALTIME minus CLOCK_MONOTONIC, in ns, for the run (rxstamp_clock_sync);
 * rx_synced 0: not taken yet. */
static int64_t rx_offset_ns;
static int rx_synced;

void rxstamp_clock_sync(void)
{
	int64_t m1, r, m2, best = INT64_MAX;
	int i;

	/* a realtime reading between two monotonic ones: the narrowest
	 * bracket gives the relation to within its width */
	for (i = 0; i < 16; i++) {
		m1 = mono_ns();
		r = mono_wall_ns();
		m2 = mono_ns();
		if (m2 - m1 < best) {
			best = m2 - m1;
			rx_offset_ns = r - (m1 + (m2 - m1) / 2);
		}
	}
	rx_synced = 1;
}

int rxstamp_last(double *mono)
{
	int64_t m_ns;

	if (!rx_last_ns)
		return -1;
	if (!rx_synced)
		rxstamp_clock_sync();
	/* one relation for every stamp: the order of stamps is kept exactly */
	m_ns = rx_last_ns - rx_offset_ns;
	if (m_ns < 0)
		return -1;
	*mono = (double)(m_ns / 1000000000) + (double)(m_ns % 1000000000) * 1e-9;
	return 0;
}

/* recvmsg(2) into buf, and the newest stamp of the bytes it returned in
 * *ns (0: none came). */
static ssize_t rxstamp_read(int fd, void *buf, size_t n, int flags, int64_t *ns)
{
	/* room for one SO_TIMESTAMPNS message, aligned as cmsg requires */
	union {
		char b[CMSG_SPACE(sizeof(struct timespec))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = n };
	struct msghdr mh;
	struct cmsghdr *c;
	struct timespec ts;
	ssize_t got;

	*ns = 0;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.b;
	mh.msg_controllen = sizeof(ctl.b);
	got = recvmsg(fd, &mh, flags);
	if (got <= 0)
		return got;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(ts))) {
			memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			*ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
		}
	}
	return got;
}

int rxstamp_mark(int fd)
{
	struct rx_marks *m;
	int64_t ns;
	ssize_t got;
	unsigned k;
	int e = errno;

	if (fd < 0 || fd >= RXSTAMP_MAX_FD || !atomic_load_explicit(&rx_tracked[fd], memory_order_relaxed))
		return -1;
	m = &rx_marks[fd];
	if (m->count == RXSTAMP_MARKS)
		return 0;   /* later bytes wait for a read to free a mark */
	/* MSG_TRUNC: TCP counts the queued bytes and reports the newest
	 * stamp without copying them (tcp(7)) */
	got = rxstamp_read(fd, NULL, RXSTAMP_MARK_CAP, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT, &ns);
	errno = e;
	if (got <= 0 || !ns)
		return -1;
	if ((uint32_t)got <= m->total)
		return 0;   /* nothing new since the last mark */
	/* the bytes past the marked ones are the newest: the peek's stamp is
	 * that of their newest packet */
	k = (m->head + m->count) % RXSTAMP_MARKS;
	m->n[k] = (uint32_t)got - m->total;
	m->ns[k] = ns;
	m->total = (uint32_t)got;
	m->count++;
	return 0;
}

/* A tracked descriptor's read: the oldest marked segment first, alone, with
 * its stamp; unmarked bytes with the stamp recvmsg gives. */
static ssize_t rxstamp_recv_tracked(int fd, void *buf, size_t n, int flags)
{
	struct rx_marks *m = &rx_marks[fd];
	unsigned h = m->head;
	int64_t ns;
	ssize_t got;

	if (m->count && n > m->n[h])
		n = m->n[h];
	got = rxstamp_read(fd, buf, n, flags, &ns);
	if (got <= 0 || (flags & MSG_PEEK))
		return got;
	if (m->count) {
		/* these bytes were queued when the mark was taken: its stamp is
		 * theirs, whatever arrived and merged with them since */
		ns = m->ns[h];
		m->n[h] -= (uint32_t)got;
		m->total -= (uint32_t)got;
		if (!m->n[h]) {
			m->head = (uint8_t)((h + 1) % RXSTAMP_MARKS);
			m->count--;
		}
	}
	rx_last_ns = ns;
	return got;
}

/*
 * What the program's recv does (see rxstamp.h). Untracked descriptors take
 * the same system call libc's recv makes; errno is whatever the call left.
 */
ssize_t rxstamp_recv(int fd, void *buf, size_t n, int flags)
{
	ssize_t got;

	if (fd >= 0 && fd < RXSTAMP_MAX_FD && atomic_load_explicit(&rx_tracked[fd], memory_order_relaxed))
		return rxstamp_recv_tracked(fd, buf, n, flags);
	got = recvfrom(fd, buf, n, flags, NULL, NULL);
	if (got > 0 && !(flags & MSG_PEEK))
		rx_last_ns = 0;   /* these bytes have no stamp: none may be taken for them */
	return got;
}
