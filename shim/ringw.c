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
#include "shim/shim.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/mono.h"

/* Writes longer than this are not held pending (they would not fit the ring). */
#define SHIM_PEND_BYTES (4u * RING_WRITE_MAX)

/*
 * The time of a write in the ring's clock (RING_CLOCK_*): TSC ticks, or
 * CLOCK_MONOTONIC ns. The reader turns ticks into ns for the lines that
 * get a record.
 */
static uint64_t shim_ring_ticks(void)
{
	if (shim_area->clock == RING_CLOCK_TSC)
		return mono_tsc();
	return (uint64_t)mono_ns();
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

/* The fd's flags (RING_FDF_*): its lock holder changes them, atomically (a handler may too). */
static inline uint8_t *shim_fdf(int fd)
{
	return &ring_fdflags(shim_area)[fd];
}

/*
 * What the fd's next settling entry tells the reader of what happened
 * before it (RING_F_*), from its flags f (RING_FDF_ATTN set): a loss that
 * no entry could say when it happened, a commit that could not go in.
 * shim_told() clears it once the entry is in the ring.
 */
static uint16_t shim_tell_flags(uint8_t f)
{
	uint16_t fl = 0;

	if (f & RING_FDF_TELL_LOSS)
		fl |= RING_F_LOSS | ((f & RING_FDF_LOST_OPEN) ? RING_F_SKIP : 0);
	if (f & RING_FDF_TELL_UNSETTLED)
		fl |= RING_F_UNSETTLED;
	return fl;
}

static void shim_told(int fd, uint16_t fl)
{
	if (fl)
		__atomic_fetch_and(shim_fdf(fd), (uint8_t)~(RING_FDF_TELL_LOSS | RING_FDF_TELL_UNSETTLED),
				   __ATOMIC_RELAXED);
}

/*
 * Bytes [p, p+n) of fd reached the ring: its last byte says whether a line
 * is left open, and a '\n' among them ends the line lost bytes left open.
 * f: the fd's flags before.
 */
static void shim_fd_bytes_in(int fd, uint8_t f, const struct iovec *iov, int cnt, size_t from, size_t n)
{
	size_t at;

	if (!n)
		return;
	if (f & RING_FDF_LOST_OPEN) {
		for (at = from; at < from + n; at++)
			if (shim_iov_byte(iov, cnt, at) == '\n') {
				__atomic_fetch_and(shim_fdf(fd), (uint8_t)~RING_FDF_LOST_OPEN, __ATOMIC_RELAXED);
				break;
			}
	}
	shim_fd_open_bit(fd, shim_iov_byte(iov, cnt, from + n - 1) != '\n');
}

/*
 * Bytes [from, from+n) of the iovecs reached fd and cannot go in the ring:
 * every line they touch is lost, counted once, and the reader is told at
 * the fd's next settling entry to drop its open line (it is one of them)
 * and, when they leave a line open, the bytes up to the next '\n' (that
 * line is counted here too). A line that lost bytes before left open and
 * that these continue is not counted again.
 */
static void shim_lost_bytes(int fd, enum ring_lost why, const struct iovec *iov, int cnt, size_t from, size_t n)
{
	uint8_t f = __atomic_load_n(shim_fdf(fd), __ATOMIC_RELAXED);
	uint64_t nl = 0;
	int open_end;
	size_t at;

	if (!n)
		return;
	for (at = from; at < from + n; at++)
		nl += shim_iov_byte(iov, cnt, at) == '\n';
	open_end = shim_iov_byte(iov, cnt, from + n - 1) != '\n';
	shim_lost(why, nl + (uint64_t)open_end - ((f & RING_FDF_LOST_OPEN) ? 1 : 0));
	if (open_end)
		__atomic_fetch_or(shim_fdf(fd), (uint8_t)(RING_FDF_TELL_LOSS | RING_FDF_LOST_OPEN | RING_FDF_OPEN),
				  __ATOMIC_RELAXED);
	else
		__atomic_store_n(shim_fdf(fd),
				 (uint8_t)((f & ~(RING_FDF_LOST_OPEN | RING_FDF_OPEN)) | RING_FDF_TELL_LOSS),
				 __ATOMIC_RELAXED);
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
	uint8_t f = 0;
	uint16_t tell = 0;
	char *p;

	if (!e) {
		/* the ring closed (the reader gone): bytes written already go to the drain */
		if (id || !shim_ring_closed())
			return 0;
		f = __atomic_load_n(shim_fdf(fd), __ATOMIC_RELAXED);
		tell = (f & RING_FDF_ATTN) ? shim_tell_flags(f) : 0;
		if (!shim_drain_bytes(fd, flags | tell, iov, cnt, from, n, mono))
			return 0;
		shim_told(fd, tell);
		return 1;
	}
	if (!id) {
		/* written already: it settles itself, and tells what came before */
		f = __atomic_load_n(shim_fdf(fd), __ATOMIC_RELAXED);
		if (f & RING_FDF_ATTN)
			tell = shim_tell_flags(f);
	}
	w.tid = shim_self_tid();
	p = (char *)(e + 1);
	memcpy(p, &w, sizeof(w));
	shim_iov_copy(p + sizeof(w), iov, cnt, from, n);
	ring_publish(e, RING_WRITE, flags | tell, id, (uint32_t)fd, (uint32_t)n);
	if (!id) {
		shim_told(fd, tell);
		shim_fd_bytes_in(fd, f, iov, cnt, from, n);
	}
	return 1;
}

static void shim_commit_bytes(int fd, uint64_t id, uint32_t took)
{
	struct ring_ent *e = shim_ring_reserve_settle();

	if (e)
		ring_publish(e, RING_COMMIT, 0, id, took, 0);
	else if (!shim_ring_closed() || !shim_drain_commit(id, took, 0))
		/* no room even for that: the fd's next commit says the write is not settled */
		__atomic_fetch_or(shim_fdf(fd), (uint8_t)RING_FDF_TELL_UNSETTLED, __ATOMIC_RELAXED);
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
		struct ring_ent *e = ring_reserve_settle(shim_area);
		uint32_t took = (uint32_t)(k < RING_WRITE_MAX ? k : RING_WRITE_MAX);
		if (e)
			ring_publish(e, RING_COMMIT, RING_W_DOUBT, fr->pd->first + c, took, 0);
		else if (shim_ring_closed())
			shim_drain_commit(fr->pd->first + c, took, RING_W_DOUBT);
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
	uint64_t id, mono;
	ssize_t r;

	shim_depth++;   /* (a handler inside the shim: not the one to take the ring over) */
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
	mono = shim_ring_ticks();
	if (n > RING_WRITE_MAX || !shim_put(fd, id, flags, iov, cnt, 0, n, mono))
		id = 0;
	r = sys(ctx);
	e = errno;
	if (id)
		shim_commit_bytes(fd, id, r > 0 ? (uint32_t)r : 0);
	else if (r > 0 && !(shim_ring_closed() && shim_drain_bytes(fd, flags, iov, cnt, 0, (size_t)r, mono)))
		shim_lost_bytes(fd, RING_LOST_BUSY, iov, cnt, 0, (size_t)r);
	if (locked || tag == SHIM_TAG_OWNED || tag == SHIM_TAG_BEFORE || tag == SHIM_TAG_AFTER) {
		if (r > 0)
			shim_fd_open_bit(fd, shim_iov_byte(iov, cnt, (size_t)r - 1) != '\n');
	}
	if (locked)
		shim_fd_release(fd);
	shim_depth--;
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
	pd->mono = w.mono_ns = shim_ring_ticks();
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
	struct ring_ent *c = ring_reserve_settle(shim_area);
	uint8_t f = __atomic_load_n(shim_fdf(fd), __ATOMIC_RELAXED);
	uint16_t tell = 0;

	if (!c)
		c = shim_ring_reserve_settle();
	if (__builtin_expect(f & RING_FDF_ATTN, 0)) {
		struct iovec iov = { (void *)p, took };
		tell = shim_tell_flags(f);
		if (c) {
			ring_publish(c, RING_COMMIT, (doubt ? RING_W_DOUBT : 0) | tell, pd->first, (uint32_t)took, 0);
			shim_told(fd, tell);
		} else if (shim_ring_closed() &&
			   shim_drain_commit(pd->first, (uint32_t)took, (doubt ? RING_W_DOUBT : 0) | tell)) {
			shim_told(fd, tell);
		} else {
			__atomic_fetch_or(shim_fdf(fd), (uint8_t)RING_FDF_TELL_UNSETTLED, __ATOMIC_RELAXED);
		}
		shim_fd_bytes_in(fd, f, &iov, 1, 0, took);
		return;
	}
	if (c)
		ring_publish(c, RING_COMMIT, doubt ? RING_W_DOUBT : 0, pd->first, (uint32_t)took, 0);
	else if (!shim_ring_closed() || !shim_drain_commit(pd->first, (uint32_t)took, doubt ? RING_W_DOUBT : 0))
		/* no room even for that: the fd's next commit says this write is not settled */
		__atomic_fetch_or(shim_fdf(fd), (uint8_t)RING_FDF_TELL_UNSETTLED, __ATOMIC_RELAXED);
	if (took) {
		if (p[took - 1] != '\n')
			__atomic_fetch_or(shim_fdf(fd), (uint8_t)RING_FDF_OPEN, __ATOMIC_RELAXED);
		else if (f & RING_FDF_OPEN)
			__atomic_fetch_and(shim_fdf(fd), (uint8_t)~RING_FDF_OPEN, __ATOMIC_RELAXED);
	}
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
	pd->mono = shim_ring_ticks();
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
	uint8_t f;
	uint16_t tell;
	uint32_t c;

	shim_fd_phase(th, SHIM_PH_FEED);
	if (cnt == 1 && pd->chunks == 1 && took <= pd->pended) {
		shim_settle1(fd, iov[0].iov_base, pd, took, doubt);
		return;
	}
	f = __atomic_load_n(shim_fdf(fd), __ATOMIC_RELAXED);
	tell = (f & RING_FDF_ATTN) ? shim_tell_flags(f) : 0;
	for (c = 0; c < pd->chunks; c++) {
		size_t from = (size_t)c * RING_WRITE_MAX,
		       k = pd->pended - from < RING_WRITE_MAX ? pd->pended - from : RING_WRITE_MAX;
		struct ring_ent *e = shim_ring_reserve_settle();
		uint16_t fl = (doubt ? RING_W_DOUBT : 0) | (c == 0 ? tell : 0);
		uint32_t part = took > from ? (uint32_t)(took - from < k ? took - from : k) : 0;
		if (e) {
			/* (what came before is told with the first chunk) */
			ring_publish(e, RING_COMMIT, fl, pd->first + c, part, 0);
			if (c == 0)
				shim_told(fd, tell);
		} else if (shim_ring_closed() && shim_drain_commit(pd->first + c, part, fl)) {
			if (c == 0)
				shim_told(fd, tell);
		} else {
			/* no room even for that: the fd's next commit says these writes are not settled */
			__atomic_fetch_or(shim_fdf(fd), (uint8_t)RING_FDF_TELL_UNSETTLED, __ATOMIC_RELAXED);
		}
	}
	if (pd->chunks)
		shim_fd_bytes_in(fd, f, iov, cnt, 0, took < pd->pended ? took : pd->pended);
	if (took > pd->pended) {
		/* bytes that were not held pending (a huge write, or no room): recorded now */
		size_t from;
		for (from = pd->pended; from < took; from += RING_WRITE_MAX) {
			size_t k = took - from < RING_WRITE_MAX ? took - from : RING_WRITE_MAX;
			if (!shim_put(fd, 0, doubt ? RING_W_DOUBT : 0, iov, cnt, from, k, pd->mono)) {
				shim_lost_bytes(fd, RING_LOST_FULL, iov, cnt, from, took - from);
				break;
			}
		}
	}
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
			shim_lost_bytes(fd, RING_LOST_NOMEM, iov, cnt, 0, (size_t)r);
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

	for (at = 0; at < n; at += RING_WRITE_MAX) {
		size_t k = n - at < RING_WRITE_MAX ? n - at : RING_WRITE_MAX;
		if (!shim_put(fd, 0, doubt ? RING_W_DOUBT : 0, &iov, 1, at, k, shim_ring_ticks())) {
			shim_lost_bytes(fd, RING_LOST_FULL, &iov, 1, at, n - at);
			return;
		}
	}
}

/* fd is closed with a line open: the reader ends it (as partial), or drops it when it was lost. */
void shim_ring_close(int fd)
{
	uint8_t f = __atomic_load_n(shim_fdf(fd), __ATOMIC_RELAXED);
	struct ring_ent *e;
	uint16_t tell = (f & RING_FDF_ATTN) ? shim_tell_flags(f) & RING_F_LOSS : 0;

	if (f & (RING_FDF_OPEN | RING_FDF_TELL_LOSS)) {
		e = shim_ring_reserve_settle();
		if (e) {
			ring_publish(e, RING_MARK, RING_M_CLOSE | tell, 0, (uint32_t)fd, 0);
		} else if (shim_ring_closed() && shim_drain_mark(RING_M_CLOSE | tell, fd)) {
			/* the drain ended it */
		} else if (!(f & RING_FDF_LOST_OPEN) && (f & RING_FDF_OPEN)) {
			/* the open line cannot be ended where it ends: it is lost, and so said */
			shim_lost(RING_LOST_FULL, 1);
			__atomic_fetch_or(shim_fdf(fd), (uint8_t)RING_FDF_TELL_LOSS, __ATOMIC_RELAXED);
			__atomic_fetch_and(shim_fdf(fd), (uint8_t)~(RING_FDF_OPEN | RING_FDF_LOST_OPEN), __ATOMIC_RELAXED);
			return;
		} else {
			/* a lost line the close ends: the next bytes start a new one */
			__atomic_fetch_and(shim_fdf(fd), (uint8_t)~(RING_FDF_OPEN | RING_FDF_LOST_OPEN), __ATOMIC_RELAXED);
			return;
		}
	}
	__atomic_fetch_and(shim_fdf(fd), (uint8_t)~(RING_FDF_OPEN | RING_FDF_LOST_OPEN | RING_FDF_TELL_LOSS),
			   __ATOMIC_RELAXED);
}
