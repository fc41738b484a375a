/*
 * ringw.c - a watched write, with `ttaudit capture` reading: the bytes go to
 * the ring before they go to the kernel, and a commit says how many the
 * kernel took. The reader cuts them into lines and classifies them, so the
 * process does no more than a copy and a few atomic stores per write.
 *
 * Order: the fd's lock is held from before the bytes enter the ring until
 * the call returned, so one fd's bytes enter the ring in the order they
 * reached the kernel, whatever threads wrote them. A signal handler that
 * writes while its thread is inside this (the lock is never waited for in
 * a handler) puts its bytes in the ring at once, marked with where they
 * fell: before the interrupted write entered the ring (exact: they are
 * before it in the ring too), after its call returned (exact), in between
 * (RING_W_RACE: the reader decides whether the order matters), or onto an
 * fd another thread holds (RING_W_UNLOCKED).
 *
 * A process killed at any point leaves either no entry (nothing written
 * yet), or a pending one (its write in flight: the reader says uncertain),
 * or a committed one. Never a line the fd did not get, never one silently
 * gone.
 */
#include "shim.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Writes longer than this are not held pending (they would not fit the ring). */
#define SHIM_PEND_BYTES (4u * RING_WRITE_MAX)

/* The time of a write, in the ring's clock (RING_CLOCK_*). */
static uint64_t shim_mono_ns(void)
{
	struct timespec ts;

#if defined(__x86_64__)
	if (shim_area->clock == RING_CLOCK_TSC)
		return __builtin_ia32_rdtsc();
#endif
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Copies iov bytes [from, from+n) to dst. */
static inline void shim_iov_copy(char *dst, const struct iovec *iov, int cnt, size_t from, size_t n)
{
	int i;

	if (cnt == 1) {
		memcpy(dst, (const char *)iov[0].iov_base + from, n);
		return;
	}
	for (i = 0; i < cnt && n; i++) {
		size_t len = iov[i].iov_len;
		if (from >= len) {
			from -= len;
			continue;
		}
		len -= from;
		if (len > n)
			len = n;
		memcpy(dst, (const char *)iov[i].iov_base + from, len);
		dst += len;
		n -= len;
		from = 0;
	}
}

/* The byte at offset `at` of the iovecs. */
static inline char shim_iov_byte(const struct iovec *iov, int cnt, size_t at)
{
	int i;

	if (cnt == 1)
		return ((const char *)iov[0].iov_base)[at];
	for (i = 0; i < cnt; i++) {
		if (at < iov[i].iov_len)
			return ((const char *)iov[i].iov_base)[at];
		at -= iov[i].iov_len;
	}
	return 0;
}

/*
 * One RING_WRITE entry: iov bytes [from, from+n) of fd, pending on `id`
 * (0: already written). Its payload starts with the time and the thread
 * (struct ring_wr). Returns 0 when the ring has no room.
 */
static int shim_put(int fd, uint64_t id, uint16_t flags, const struct iovec *iov, int cnt, size_t from,
		    size_t n, uint64_t mono)
{
	struct ring_ent *e = shim_ring_reserve(sizeof(struct ring_wr) + n);
	struct ring_wr w = { mono, 0, 0 };
	char *p;

	if (!e)
		return 0;
	w.tid = shim_self_tid();
	p = (char *)(e + 1);
	memcpy(p, &w, sizeof(w));
	shim_iov_copy(p + sizeof(w), iov, cnt, from, n);
	ring_publish(e, RING_WRITE, flags, id, (uint32_t)fd, (uint32_t)n);
	return 1;
}

static void shim_commit_bytes(uint64_t id, uint32_t took)
{
	struct ring_ent *e = shim_ring_reserve(0);

	if (e)
		ring_publish(e, RING_COMMIT, 0, id, took, 0);
	/* no room even for that: the write stays pending, and the reader calls it uncertain */
}

/* Lines among iov bytes [from, from+n), for a loss count. */
static uint64_t shim_iov_lines(const struct iovec *iov, int cnt, size_t from, size_t n)
{
	uint64_t k = 0;
	size_t at;

	for (at = from; at < from + n; at++)
		k += shim_iov_byte(iov, cnt, at) == '\n';
	return k ? k : 1;
}

/*
 * Cleanup if the thread is cancelled inside the real call (a cancellation
 * point, -fexceptions unwinds through here): the pending bytes are
 * committed as doubtful (whether the kernel took them is not known: the
 * reader writes them as uncertain) and the lock is released.
 */
struct shim_rframe {
	struct shim_thread *th;
	int fd;
	int armed;
	struct shim_pend *pd;
};

static void shim_ring_cancelled(struct shim_rframe *fr)
{
	uint32_t c;

	if (!fr->armed)
		return;
	for (c = 0; c < fr->pd->chunks; c++) {
		size_t from = (size_t)c * RING_WRITE_MAX, k = fr->pd->pended - from;
		struct ring_ent *e = ring_reserve(shim_area, 0);
		if (e)
			ring_publish(e, RING_COMMIT, RING_W_DOUBT, fr->pd->first + c,
				     (uint32_t)(k < RING_WRITE_MAX ? k : RING_WRITE_MAX), 0);
	}
	shim_ring_mark(RING_M_UNKNOWN, fr->fd);
	shim_fd_unlock(fr->th, fr->fd);
}

/* A signal handler's write while this thread is inside the shim. Never waits. */
static ssize_t shim_ring_handler(struct shim_thread *th, int fd, const struct iovec *iov, int cnt, size_t n,
				 shim_sys_fn sys, void *ctx)
{
	int tag = shim_fd_phase_tag(th, fd), locked = 0, e;
	uint16_t flags = 0;
	uint64_t id;
	ssize_t r;

	if (tag == SHIM_TAG_UNLOCKED) {
		if (shim_fd_trylock(th, fd))
			locked = 1;
		else
			flags = RING_W_UNLOCKED;
	} else if (tag == SHIM_TAG_UNKNOWN) {
		flags = RING_W_RACE;
	}
	/* a handler's ids: the high bit of the low word, a counter of their own */
	id = (uint64_t)(uint32_t)th->tid << 32 | 0x80000000u |
	     (atomic_fetch_add_explicit(&th->hseq, 1, memory_order_relaxed) & 0x7fffffffu);
	if (n > RING_WRITE_MAX || !shim_put(fd, id, flags, iov, cnt, 0, n, shim_mono_ns()))
		id = 0;
	r = sys(ctx);
	e = errno;
	if (id)
		shim_commit_bytes(id, r > 0 ? (uint32_t)r : 0);
	else if (r > 0)
		shim_lost(RING_LOST_BUSY, shim_iov_lines(iov, cnt, 0, (size_t)r));
	if (locked || tag == SHIM_TAG_OWNED || tag == SHIM_TAG_BEFORE || tag == SHIM_TAG_AFTER) {
		if (r > 0)
			shim_fd_open_bit(fd, shim_iov_byte(iov, cnt, (size_t)r - 1) != '\n');
	}
	if (locked)
		shim_fd_release(fd);
	errno = e;
	return r;
}

/*
 * The usual case of shim_ring_pend: one buffer that fits one entry, and
 * room in the ring (no wait). 0 when there is none: nothing was put, the
 * caller takes the general path.
 */
static inline int shim_pend1(struct shim_thread *th, int fd, const char *p, size_t n, struct shim_pend *pd)
{
	struct ring_ent *e = ring_reserve(shim_area, sizeof(struct ring_wr) + n);
	struct ring_wr w;

	if (!e)
		return 0;
	pd->first = (uint64_t)(uint32_t)th->tid << 32 | (th->seq++ & 0x7fffffffu);
	pd->mono = w.mono_ns = shim_mono_ns();
	w.tid = (uint32_t)th->tid;
	w.unused = 0;
	memcpy((char *)(e + 1), &w, sizeof(w));
	memcpy((char *)(e + 1) + sizeof(w), p, n);
	ring_publish(e, RING_WRITE, 0, pd->first, (uint32_t)fd, (uint32_t)n);
	pd->chunks = 1;
	pd->pended = n;
	return 1;
}

/* The usual case of shim_ring_settle: shim_pend1's entry, of whose bytes p[0..took) reached the fd. */
static inline void shim_settle1(int fd, const char *p, const struct shim_pend *pd, size_t took, int doubt)
{
	struct ring_ent *c = ring_reserve(shim_area, 0);

	if (!c)
		c = shim_ring_reserve(0);
	/* no room even for that: the write stays pending, and the reader calls it uncertain */
	if (c)
		ring_publish(c, RING_COMMIT, doubt ? RING_W_DOUBT : 0, pd->first, (uint32_t)took, 0);
	if (took)
		shim_fd_open_bit(fd, p[took - 1] != '\n');
}

/*
 * The usual write: one buffer that fits one entry, room in the ring. The
 * same steps as below, without their loops.
 */
static ssize_t shim_ring_write1(struct shim_thread *th, int fd, const char *p, size_t n, shim_sys_fn sys,
				void *ctx)
{
	struct shim_pend pd;
	ssize_t r;
	int err;

	if (shim_fd_lock(th, fd))
		shim_ring_mark(RING_M_UNKNOWN, fd);
	shim_fd_phase(th, SHIM_PH_SYSCALL);
	if (!shim_pend1(th, fd, p, n, &pd)) {
		/* no room: the general path waits for some */
		shim_fd_phase(th, SHIM_PH_PLAN);
		return -2;
	}
	{
		struct shim_rframe fr __attribute__((cleanup(shim_ring_cancelled))) = { th, fd, 1, &pd };
		r = sys(ctx);
		err = errno;
		fr.armed = 0;
	}
	shim_fd_phase(th, SHIM_PH_FEED);
	shim_settle1(fd, p, &pd, r > 0 ? (size_t)r : 0, 0);
	shim_fd_unlock(th, fd);
	errno = err;
	return r;
}

/*
 * The bytes of a call that may write, pending in the ring before it: in
 * entries of at most RING_WRITE_MAX bytes, up to SHIM_PEND_BYTES (beyond
 * that, and when the ring has no room, the bytes go in after the call,
 * as written). The fd's lock is held.
 */
void shim_ring_pend(struct shim_thread *th, int fd, const struct iovec *iov, int cnt, size_t n,
		    struct shim_pend *pd)
{
	size_t at;

	shim_fd_phase(th, SHIM_PH_SYSCALL);
	if (cnt == 1 && n && n <= RING_WRITE_MAX && shim_pend1(th, fd, iov[0].iov_base, n, pd))
		return;
	pd->mono = shim_mono_ns();
	pd->first = (uint64_t)(uint32_t)th->tid << 32 | (th->seq & 0x7fffffffu);
	pd->chunks = 0;
	pd->pended = 0;
	if (n <= SHIM_PEND_BYTES)
		for (at = 0; at < n; at += RING_WRITE_MAX) {
			size_t k = n - at < RING_WRITE_MAX ? n - at : RING_WRITE_MAX;
			if (!shim_put(fd, pd->first + pd->chunks, 0, iov, cnt, at, k, pd->mono))
				break;
			pd->chunks++;
			pd->pended = at + k;
		}
	th->seq += pd->chunks;
}

/*
 * After the call: `took` of the pended bytes reached the fd (the first
 * ones, in order); `doubt`: the call failed after writing an unknown part.
 */
void shim_ring_cancel_pend(struct shim_thread *th, int fd, struct shim_pend *pd)
{
	struct shim_rframe fr = { th, fd, 1, pd };

	shim_ring_cancelled(&fr);
}

void shim_ring_settle(struct shim_thread *th, int fd, const struct iovec *iov, int cnt, struct shim_pend *pd,
		      size_t took, int doubt)
{
	uint32_t c;

	shim_fd_phase(th, SHIM_PH_FEED);
	if (cnt == 1 && pd->chunks == 1 && took <= pd->pended) {
		shim_settle1(fd, iov[0].iov_base, pd, took, doubt);
		return;
	}
	for (c = 0; c < pd->chunks; c++) {
		size_t from = (size_t)c * RING_WRITE_MAX,
		       k = pd->pended - from < RING_WRITE_MAX ? pd->pended - from : RING_WRITE_MAX;
		struct ring_ent *e = shim_ring_reserve(0);
		/* no room even for that: the write stays pending, and the reader calls it uncertain */
		if (e)
			ring_publish(e, RING_COMMIT, doubt ? RING_W_DOUBT : 0, pd->first + c,
				     took > from ? (uint32_t)(took - from < k ? took - from : k) : 0, 0);
	}
	if (took > pd->pended) {
		/* bytes that were not held pending (a huge write, or no room): recorded now */
		size_t from;
		for (from = pd->pended; from < took; from += RING_WRITE_MAX) {
			size_t k = took - from < RING_WRITE_MAX ? took - from : RING_WRITE_MAX;
			if (!shim_put(fd, 0, doubt ? RING_W_DOUBT : 0, iov, cnt, from, k, pd->mono)) {
				shim_lost(RING_LOST_FULL, shim_iov_lines(iov, cnt, from, took - from));
				shim_ring_mark(RING_M_UNKNOWN, fd);
				break;
			}
		}
	}
	if (took)
		shim_fd_open_bit(fd, shim_iov_byte(iov, cnt, took - 1) != '\n');
}

ssize_t shim_ring_write(int fd, const struct iovec *iov, int cnt, shim_sys_fn sys, void *ctx)
{
	struct shim_thread *th;
	struct shim_pend pd;
	size_t n = shim_iov_len(iov, cnt);
	ssize_t r;
	int e;

	if (shim_vfork_mark && shim_vfork_write(sys, ctx, &r))
		return r;
	th = shim_thread_get();
	if (!th) {
		r = sys(ctx);
		e = errno;
		if (r > 0)
			shim_lost(RING_LOST_NOMEM, shim_iov_lines(iov, cnt, 0, (size_t)r));
		errno = e;
		return r;
	}
	if (shim_depth > 0)
		return shim_ring_handler(th, fd, iov, cnt, n, sys, ctx);
	if (cnt == 1 && n && n <= RING_WRITE_MAX) {
		r = shim_ring_write1(th, fd, iov[0].iov_base, n, sys, ctx);
		if (r != -2)
			return r;
		/* lock held, phase PLAN: go on below */
	} else if (shim_fd_lock(th, fd)) {
		shim_ring_mark(RING_M_UNKNOWN, fd);   /* took over from a thread that died holding it */
	}
	/*
	 * From the first byte in the ring on, a handler's write cannot be
	 * placed before or after this one for sure.
	 */
	shim_ring_pend(th, fd, iov, cnt, n, &pd);
	{
		struct shim_rframe fr __attribute__((cleanup(shim_ring_cancelled))) = { th, fd, 1, &pd };
		r = sys(ctx);
		e = errno;
		fr.armed = 0;
	}
	shim_ring_settle(th, fd, iov, cnt, &pd, r > 0 ? (size_t)r : 0, 0);
	shim_fd_unlock(th, fd);
	errno = e;
	return r;
}

void shim_ring_bytes(int fd, const char *p, size_t n, int doubt)
{
	struct iovec iov = { (void *)p, n };
	size_t at;

	if (!n)
		return;
	for (at = 0; at < n; at += RING_WRITE_MAX) {
		size_t k = n - at < RING_WRITE_MAX ? n - at : RING_WRITE_MAX;
		if (!shim_put(fd, 0, doubt ? RING_W_DOUBT : 0, &iov, 1, at, k, shim_mono_ns())) {
			shim_lost(RING_LOST_FULL, shim_iov_lines(&iov, 1, at, n - at));
			shim_ring_mark(RING_M_UNKNOWN, fd);
			return;
		}
	}
	shim_fd_open_bit(fd, p[n - 1] != '\n');
}
