/*
 * stream.c - per-fd byte streams in the order the bytes reached the kernel.
 *
 * Every watched fd has a lock (a futex word in the area, owner's tid in
 * it); the real write system call and the feeding of the bytes it accepted
 * into the fd's stream happen under it, so the stream holds the fd's bytes
 * in kernel order whatever threads wrote them. A partial line is kept per
 * fd (a pool of RING_STREAMS buffers in the area), never per thread.
 *
 * Before the bytes reach the kernel, the lines they would complete are
 * classified and their records kept as pending (a ring entry each); after
 * the call returns, one commit says how many of them the kernel took. A
 * process killed in between leaves pending records, which `ttaudit capture`
 * reports as uncertain: never as true, never silently gone.
 *
 * Signal handlers: a thread that holds fd locks marks it (held[], phase[]);
 * a handler that writes while the thread is inside the shim does its write
 * at once and queues the bytes (shim_thread.defer) with where they fell
 * relative to the interrupted write: before its system call (fed first,
 * the interrupted write's lines classified again), after it (fed after), or
 * around it (the order is not knowable: when it matters for a line's
 * content, that line is written as uncertain). A handler never waits for a
 * lock, so it cannot deadlock with its own thread or another handler.
 */
#include "shim/shim.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <sys/single_threaded.h>

#include "capture/caprec.h"
#include "capture/classify.h"
#include "base/linebuf.h"

#define SHIM_LOCK_WAITERS 0x80000000u
#define SHIM_SPINS 64

enum shim_phase {
	SHIM_PHASE_PLAN = SHIM_PH_PLAN, SHIM_PHASE_SYSCALL = SHIM_PH_SYSCALL, SHIM_PHASE_FEED = SHIM_PH_FEED,
	SHIM_PHASE_WAIT = SHIM_PH_WAIT, SHIM_PHASE_DONE = SHIM_PH_DONE
};

/* Tag of a processed deferred entry. */

/* --- the fd lock ---------------------------------------------------------- */

static long shim_futex(_Atomic uint32_t *w, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)w, op | FUTEX_PRIVATE_FLAG, val, ts, NULL, 0);
}

/*
 * Takes fd's lock for thread `tid`. Waits while another thread holds it (as
 * that thread's write would make this one wait in the kernel anyway); a
 * holder that no longer exists (a thread that died inside a write) is
 * noticed after a second and its lock taken over: returns 1 then (the
 * stream's state is not known), else 0.
 */
static int shim_lock(int fd, uint32_t tid)
{
	_Atomic uint32_t *w = &ring_locks(shim_area)[fd];
	uint32_t v = 0;
	int i;

	if (atomic_compare_exchange_strong_explicit(w, &v, tid, memory_order_acquire, memory_order_relaxed))
		return 0;
	for (i = 0; i < SHIM_SPINS; i++) {
		v = 0;
		if (atomic_load_explicit(w, memory_order_relaxed) == 0 &&
		    atomic_compare_exchange_weak_explicit(w, &v, tid, memory_order_acquire, memory_order_relaxed))
			return 0;
		__builtin_ia32_pause();
	}
	for (;;) {
		struct timespec sec = { 1, 0 };

		v = atomic_load_explicit(w, memory_order_relaxed);
		if (v == 0) {
			if (atomic_compare_exchange_weak_explicit(w, &v, tid | SHIM_LOCK_WAITERS,
								  memory_order_acquire, memory_order_relaxed))
				return 0;
			continue;
		}
		if (!(v & SHIM_LOCK_WAITERS) &&
		    !atomic_compare_exchange_weak_explicit(w, &v, v | SHIM_LOCK_WAITERS, memory_order_relaxed,
							   memory_order_relaxed))
			continue;
		if (shim_futex(w, FUTEX_WAIT, v | SHIM_LOCK_WAITERS, &sec) < 0 && errno == ETIMEDOUT) {
			uint32_t owner = v & ~SHIM_LOCK_WAITERS, cur = v | SHIM_LOCK_WAITERS;
			if (syscall(SYS_tgkill, (pid_t)shim_pid(), (pid_t)owner, 0) < 0 && errno == ESRCH &&
			    atomic_compare_exchange_strong(w, &cur, tid | SHIM_LOCK_WAITERS))
				return 1;
		}
	}
}

/* One try; a handler uses it. 1 when taken. */
static int shim_trylock(int fd, uint32_t tid)
{
	uint32_t v = 0;

	return atomic_compare_exchange_strong_explicit(&ring_locks(shim_area)[fd], &v, tid,
						       memory_order_acquire, memory_order_relaxed);
}

static void shim_unlock(int fd)
{
	_Atomic uint32_t *w = &ring_locks(shim_area)[fd];

	if (atomic_exchange_explicit(w, 0, memory_order_release) & SHIM_LOCK_WAITERS)
		shim_futex(w, FUTEX_WAKE, 1, NULL);
}

/* --- streams ---------------------------------------------------------------- */

/* fdflags are changed by the lock holder and, at fork, by the forking thread: atomically. */
static void shim_flag_set(int fd, uint8_t f)
{
	__atomic_fetch_or(&ring_fdflags(shim_area)[fd], f, __ATOMIC_RELAXED);
}

static void shim_flag_clear(int fd, uint8_t f)
{
	__atomic_fetch_and(&ring_fdflags(shim_area)[fd], (uint8_t)~f, __ATOMIC_RELAXED);
}

static uint8_t shim_flags(int fd)
{
	return __atomic_load_n(&ring_fdflags(shim_area)[fd], __ATOMIC_RELAXED);
}

static struct ring_stream *shim_stream_of(int fd)
{
	uint8_t k = ring_fdstream(shim_area)[fd];

	return k ? ring_stream(shim_area, k - 1u) : NULL;
}

/* A free stream for fd (under fd's lock), or NULL when all are in use. */
static struct ring_stream *shim_stream_take(int fd)
{
	unsigned i;

	for (i = 0; i < RING_STREAMS; i++) {
		struct ring_stream *s = ring_stream(shim_area, i);
		int32_t free_fd = -1;

		if (atomic_load_explicit(&s->fd, memory_order_relaxed) == -1 &&
		    atomic_compare_exchange_strong(&s->fd, &free_fd, fd)) {
			s->len = 0;
			s->over = 0;
			s->flags = 0;
			ring_fdstream(shim_area)[fd] = (uint8_t)(i + 1);
			return s;
		}
	}
	return NULL;
}

static void shim_stream_release(int fd, struct ring_stream *s)
{
	ring_fdstream(shim_area)[fd] = 0;
	s->len = 0;
	s->over = 0;
	atomic_store_explicit(&s->fd, -1, memory_order_release);
}

/* A linebuf over fd's stream (or over nothing: no partial line). */
static void shim_lb(struct linebuf *lb, struct ring_stream *s)
{
	lb->buf = s ? s->buf : NULL;
	lb->cap = RING_LINE_CAP;
	lb->len = s ? s->len : 0;
	lb->over = s ? (int)s->over : 0;
}

/*
 * What the fd's flags still hold of the ring (the process took it over):
 * lost bytes that no entry told (ringw.c) drop the open line here, and
 * when they left a line open, the bytes up to the next '\n' too.
 */
static void shim_attn(int fd)
{
	uint8_t f = shim_flags(fd);
	struct ring_stream *s;

	if (!(f & RING_FDF_ATTN))
		return;
	if (f & RING_FDF_TELL_LOSS) {
		if ((s = shim_stream_of(fd)))
			shim_stream_release(fd, s);
		shim_flag_clear(fd, RING_FDF_UNCERTAIN | RING_FDF_SKIP);
		if (f & RING_FDF_LOST_OPEN)
			shim_flag_set(fd, RING_FDF_DROP);
	}
	shim_flag_clear(fd, RING_FDF_ATTN);
}

static void shim_stream_reset(int fd);
static ssize_t shim_direct_write(int fd, const struct iovec *iov, int cnt, shim_sys_fn sys, void *ctx);

/* --- lines to records ---------------------------------------------------- */

/*
 * The record of one complete line into th->out: its length, or 0 when the
 * line needs none (neither audit nor banner, without --all-lines).
 * `overlong` lines get none; the caller counts them lost.
 */
static size_t shim_format_scanned(struct shim_thread *th, int fd, const char *line, size_t n, int partial,
				  const struct classify_scan *scan)
{
	struct classify_result res;
	struct caprec_head h;
	const struct banner_set *rules = shim_rules();

	if (scan)
		classify_line_scanned(line, n, scan, rules, &th->sc, &res);
	else
		classify_line(line, n, rules, &th->sc, &res);
	if (res.kind == CLASSIFY_OTHER && !shim_all_lines())
		return 0;
	caprec_head_now(&h);
	h.pid = shim_pid();
	h.tid = th->tid;
	if (shim_origin) {
		/* drained from the ring: when and by whom it was written */
		h.t = shim_origin->t;
		h.mono = shim_origin->mono;
		h.tid = shim_origin->tid;
	}
	h.fd = fd;
	h.partial = partial;
	if (res.kind == CLASSIFY_AUDIT)
		return caprec_audit(th->out, sizeof(th->out), &h, res.obj, res.obj_len);
	if (res.kind == CLASSIFY_BANNER)
		return caprec_banner(th->out, sizeof(th->out), &h, banner_set_name(rules, (size_t)res.rule),
				     line, n);
	return caprec_line(th->out, sizeof(th->out), &h, line, n);
}

static size_t shim_format(struct shim_thread *th, int fd, const char *line, size_t n, int partial)
{
	return shim_format_scanned(th, fd, line, n, partial, NULL);
}

static const char shim_why_fork[] =
	"what came before this line on the fd is not known (a fork child sharing it, a cancelled or unseen write)";
static const char shim_why_order[] =
	"the order of this line's bytes and a signal handler's was not knowable";

/*
 * Where a completed line goes. Called with fd's lock held, for lines that
 * reached the fd.
 */
struct shim_emitctx {
	struct shim_thread *th;
	int fd;
	int uncertain;          /* every line of this feed is not known to be true */
	const char *why;
};

static void shim_emit_line(void *ctx_, const char *line, size_t n, int overlong)
{
	struct shim_emitctx *c = ctx_;
	uint8_t flags = shim_flags(c->fd);
	const char *why = c->uncertain ? c->why : NULL;
	size_t len;

	shim_count_line();
	if (flags & RING_FDF_DROP) {
		/* the rest of a line counted lost already */
		shim_flag_clear(c->fd, RING_FDF_DROP);
		return;
	}
	if (flags & RING_FDF_SKIP) {
		/* the rest of a line no stream was free for */
		shim_flag_clear(c->fd, RING_FDF_SKIP);
		shim_lost(RING_LOST_STREAMS, 1);
		return;
	}
	if (flags & RING_FDF_UNCERTAIN) {
		shim_flag_clear(c->fd, RING_FDF_UNCERTAIN);
		if (!why)
			why = shim_why_fork;
	}
	if (overlong) {
		shim_lost(RING_LOST_LONG, 1);
		return;
	}
	len = shim_format(c->th, c->fd, line, n, 0);
	if (!len)
		return;
	if (why)
		shim_uncertain(c->fd, 1, why, c->th->out, len - 1);
	else
		shim_emit(c->th->out, len, 0, 0);
}

/*
 * Cuts p[0, n), bytes that reached fd, into lines for fn with fd's lock
 * held; a tail after the last '\n' waits in fd's stream (taken when it has
 * none, released when nothing waits; with no stream free the tail is
 * skipped and fd flagged). 1 when bytes wait in the stream afterwards.
 */
static int shim_stream_cut(int fd, const char *p, size_t n, linebuf_fn fn, void *ctx)
{
	struct ring_stream *s = shim_stream_of(fd);
	struct linebuf lb;
	const char *last = memrchr(p, '\n', n);
	size_t head = n;

	if (!last || last + 1 != p + n) {
		/* bytes will wait after the last '\n': they need a stream */
		if (!s)
			s = shim_stream_take(fd);
		if (!s) {
			head = last ? (size_t)(last + 1 - p) : 0;
			shim_flag_set(fd, RING_FDF_SKIP);
		}
	}
	shim_lb(&lb, s);
	linebuf_take(&lb, p, head, 0, fn, ctx);
	if (!s)
		return 0;
	s->len = (uint32_t)lb.len;
	s->over = (uint32_t)lb.over;
	if (!lb.len && !lb.over) {
		shim_stream_release(fd, s);
		return 0;
	}
	return 1;
}

/*
 * Feeds bytes that reached fd, in order, with fd's lock held: lines go to
 * records at once (no pending step: the bytes are already written).
 */
static void shim_feed_locked(struct shim_thread *th, int fd, const char *p, size_t n, int uncertain,
			     const char *why)
{
	struct shim_emitctx c = { th, fd, uncertain, why };

	if (n && shim_stream_cut(fd, p, n, shim_emit_line, &c) && uncertain)
		shim_flag_set(fd, RING_FDF_UNCERTAIN);
}

/* --- signal handlers' bytes ---------------------------------------------- */

/* Tags of deferred entries besides enum shim_tag's (shim.h). */
#define SHIM_TAG_LINE 10        /* a complete line a handler's write finished (text, no '\n') */
#define SHIM_TAG_LINE_LONG 11   /* the same, longer than kept */

/* Keeps bytes a handler wrote (they reached the kernel) for the interrupted flow. */
static int shim_defer(struct shim_thread *th, int fd, int tag, const void *data, size_t n)
{
	struct shim_defer_hdr h = { fd, tag, n };
	size_t need = (sizeof(h) + n + 15) & ~(size_t)15, old;

	old = atomic_load(&th->defer_len);
	do {
		if (need > SHIM_DEFER_CAP - old)
			return 0;
	} while (!atomic_compare_exchange_weak(&th->defer_len, &old, old + need));
	memcpy(th->defer + old + sizeof(h), data, n);
	memcpy(th->defer + old, &h, sizeof(h));
	return 1;
}

/* The tag for a handler's bytes on fd, from what the interrupted thread is doing with it. */
static int shim_defer_tag(struct shim_thread *th, int fd)
{
	int i;

	for (i = (th->n_held < 4 ? th->n_held : 4) - 1; i >= 0; i--)
		if (th->held[i] == fd) {
			int ph = atomic_load_explicit(&th->phase[i], memory_order_relaxed);
			int mine = th->unlocked ||
				   (atomic_load(&ring_locks(shim_area)[fd]) & ~SHIM_LOCK_WAITERS) == (uint32_t)th->tid;

			switch (ph) {
			case SHIM_PHASE_PLAN: return SHIM_TAG_BEFORE;
			case SHIM_PHASE_FEED: return SHIM_TAG_AFTER;
			case SHIM_PHASE_SYSCALL: return SHIM_TAG_UNKNOWN;
			/* taking the lock: taken (the write has not begun), or another thread writes */
			case SHIM_PHASE_WAIT: return mine ? SHIM_TAG_BEFORE : SHIM_TAG_UNLOCKED;
			/* releasing it: done with the stream, or released */
			default: return mine ? SHIM_TAG_OWNED : SHIM_TAG_UNLOCKED;
			}
		}
	return SHIM_TAG_UNLOCKED;
}

/*
 * Calls fn for each queued entry whose fd and tag match (fd < 0: any fd),
 * in queue order; with `mark`, the entry is then done. Returns how many.
 */
typedef void (*shim_defer_fn)(struct shim_thread *th, struct shim_defer_hdr *h, const char *data,
			      void *ctx);

static int shim_defer_walk(struct shim_thread *th, int fd, int tag, shim_defer_fn fn, void *ctx,
			   int mark)
{
	size_t i = 0, end = atomic_load(&th->defer_len);
	int k = 0;

	while (i < end) {
		struct shim_defer_hdr *h = (struct shim_defer_hdr *)(th->defer + i);
		size_t step = (sizeof(*h) + h->n + 15) & ~(size_t)15;

		if ((h->tag == tag || (tag == SHIM_TAG_LINE && h->tag == SHIM_TAG_LINE_LONG)) &&
		    (fd < 0 || h->fd == fd)) {
			if (mark)
				h->tag += 0x1000;   /* done; tag kept for the callback */
			if (fn)
				fn(th, h, th->defer + i + sizeof(*h), ctx);
			k++;
		}
		i += step;
		if (i >= end)
			end = atomic_load(&th->defer_len);
	}
	return k;
}

/* The queue is almost always empty: one load decides. */
static inline int shim_defer_each(struct shim_thread *th, int fd, int tag, shim_defer_fn fn, void *ctx,
				  int mark)
{
	if (!atomic_load_explicit(&th->defer_len, memory_order_relaxed))
		return 0;
	return shim_defer_walk(th, fd, tag, fn, ctx, mark);
}

/* Forgets the entries once all are done (and no handler added one meanwhile). */
static void shim_defer_reset(struct shim_thread *th)
{
	size_t end = atomic_load_explicit(&th->defer_len, memory_order_relaxed), i = 0;

	if (!end)
		return;
	while (i < end) {
		struct shim_defer_hdr *h = (struct shim_defer_hdr *)(th->defer + i);
		if (h->tag < 0x1000)
			return;
		i += (sizeof(*h) + h->n + 15) & ~(size_t)15;
	}
	atomic_compare_exchange_strong(&th->defer_len, &end, 0);
}

static void shim_defer_exact(struct shim_thread *th, struct shim_defer_hdr *h, const char *data, void *ctx)
{
	(void)ctx;
	shim_feed_locked(th, h->fd, data, h->n, 0, NULL);
}

/*
 * Bytes whose place among the fd's other bytes is not known: their lines are
 * written as uncertain, on their own (never joined to the fd's partial line,
 * which would invent one), and the fd's next line is uncertain too.
 */
static void shim_emit_loose(struct shim_thread *th, int fd, const char *p, size_t n)
{
	const char *end = p + n, *nl;

	while (p < end) {
		size_t k, len;
		int partial;

		nl = memchr(p, '\n', (size_t)(end - p));
		k = nl ? (size_t)(nl - p) : (size_t)(end - p);
		partial = !nl;
		if (k > RING_LINE_CAP) {
			shim_lost(RING_LOST_LONG, 1);
		} else if ((len = shim_format(th, fd, p, k, partial)) != 0) {
			shim_uncertain(fd, 1, shim_why_order, th->out, len - 1);
		} else {
			shim_uncertain(fd, 1, shim_why_order, NULL, 0);
		}
		if (!partial)
			shim_count_line();
		p += k + (nl ? 1 : 0);
	}
	shim_flag_set(fd, RING_FDF_UNCERTAIN);
}

static void shim_defer_unknown(struct shim_thread *th, struct shim_defer_hdr *h, const char *data, void *ctx)
{
	int ambiguous = *(int *)ctx;

	if (ambiguous)
		shim_emit_loose(th, h->fd, data, h->n);
	else
		shim_feed_locked(th, h->fd, data, h->n, 0, NULL);
}

/* 1 when every matched entry ends its last line. */
static void shim_defer_check(struct shim_thread *th, struct shim_defer_hdr *h, const char *data, void *ctx)
{
	(void)th;
	if (!h->n || data[h->n - 1] != '\n')
		*(int *)ctx = 0;
}

/* A line a handler completed in a stream it had the lock of: exact. */
static void shim_defer_line(struct shim_thread *th, struct shim_defer_hdr *h, const char *data, void *ctx)
{
	size_t len;

	(void)ctx;
	shim_count_line();
	if ((h->tag & 0xfff) == SHIM_TAG_LINE_LONG) {
		shim_lost(RING_LOST_LONG, 1);
		return;
	}
	len = shim_format(th, h->fd, data, h->n, 0);
	if (len)
		shim_emit(th->out, len, 0, 0);
}

/* Another fd written by a handler while a thread held its lock. */
static void shim_defer_other(struct shim_thread *th, struct shim_defer_hdr *h, const char *data, void *ctx)
{
	(void)ctx;
	shim_lock(h->fd, (uint32_t)th->tid);
	shim_emit_loose(th, h->fd, data, h->n);
	shim_unlock(h->fd);
}

struct shim_hctx {
	struct shim_thread *th;
	int fd;
};

/* In a handler that took the fd's lock: completed lines are queued as text. */
static void shim_handler_line(void *ctx_, const char *line, size_t n, int overlong)
{
	struct shim_hctx *c = ctx_;

	if (!shim_defer(c->th, c->fd, overlong ? SHIM_TAG_LINE_LONG : SHIM_TAG_LINE, line, n))
		shim_lost(RING_LOST_BUSY, 1);
}

/*
 * A write from a signal handler that interrupted the shim on this thread.
 * It never waits: for an fd this thread holds, the bytes are queued with
 * where they fell; for another fd whose lock is free, they join its stream
 * now (lines queued as text for the interrupted flow to record); when
 * another thread holds it, their place is not known.
 */
static ssize_t shim_handler_write(struct shim_thread *th, int fd, const struct iovec *iov, int cnt,
				  shim_sys_fn sys, void *ctx)
{
	int tag = shim_defer_tag(th, fd), locked = 0, i;
	size_t k, at = 0;
	ssize_t r;
	int e;

	if (tag == SHIM_TAG_OWNED)
		locked = 2;   /* use it, leave it held */
	else if (tag == SHIM_TAG_UNLOCKED && shim_trylock(fd, (uint32_t)th->tid))
		locked = 1;
	r = sys(ctx);
	e = errno;
	k = r > 0 ? (size_t)r : 0;
	for (i = 0; i < cnt && at < k; i++) {
		size_t m = iov[i].iov_len < k - at ? iov[i].iov_len : k - at;
		const char *p = iov[i].iov_base;

		if (locked) {
			struct shim_hctx c = { th, fd };

			if (m)
				(void)shim_stream_cut(fd, p, m, shim_handler_line, &c);
		} else if (!shim_defer(th, fd, tag, p, m)) {
			shim_lost(RING_LOST_BUSY, shim_count_lines(p, m));
		}
		at += m;
	}
	if (locked == 1)
		shim_unlock(fd);
	errno = e;
	return r;
}

/* --- the write path ---------------------------------------------------------- */

struct shim_plan {
	struct shim_thread *th;
	int fd;
	int one;                /* one whole line onto an empty stream: no reassembly */
	int stop;               /* a line could not be kept pending: the rest after the write */
	uint32_t n;             /* lines planned */
	uint32_t n_pend;        /* of which with a pending record */
	uint64_t first_id;
	size_t end[SHIM_PEND_MAX];
	uint8_t what[SHIM_PEND_MAX];   /* 0 no record, 1 pending, 2 overlong, 3 skipped, 4 dropped */
};

static void shim_plan_line(void *ctx, const char *line, size_t n, int overlong, size_t end)
{
	struct shim_plan *pl = ctx;
	uint8_t flags = shim_flags(pl->fd);
	size_t len;
	uint64_t id;
	uint8_t what = 0;

	if (pl->stop || pl->n == SHIM_PEND_MAX)
		return;
	if (pl->n == 0 && (flags & RING_FDF_SKIP)) {
		what = 3;
	} else if (pl->n == 0 && (flags & RING_FDF_DROP)) {
		what = 4;
	} else if (overlong) {
		what = 2;
	} else if (pl->n == 0 && (flags & RING_FDF_UNCERTAIN)) {
		/* decided after the write, with the flag: not kept pending */
		pl->stop = 1;
		return;
	} else if ((len = shim_format(pl->th, pl->fd, line, n, 0)) != 0) {
		id = shim_pend(pl->th->out, len, pl->fd);
		if (!id) {
			pl->stop = 1;
			return;
		}
		if (!pl->n_pend)
			pl->first_id = id;
		else if (id != pl->first_id + pl->n_pend && shim_area->data_size) {
			/* ids of one write are consecutive unless another thread took one between */
			pl->stop = 1;
			shim_commit(id, 0, 1, 0, pl->fd);
			return;
		}
		pl->n_pend++;
		what = 1;
	}
	pl->end[pl->n] = end;
	pl->what[pl->n] = what;
	pl->n++;
}

/* Drops a plan whose records were made for bytes that will not be written as planned. */
static void shim_plan_abort(struct shim_plan *pl)
{
	if (pl->n_pend)
		shim_commit(pl->first_id, 0, pl->n_pend, 0, pl->fd);
	pl->n = pl->n_pend = 0;
	pl->stop = 0;
	pl->th->pend_n = 0;
	pl->th->pend_len = 0;
}

static void shim_plan(struct shim_plan *pl, const char *p, size_t n)
{
	struct linebuf lb;
	struct ring_stream *s;

	pl->n = pl->n_pend = 0;
	pl->stop = 0;
	pl->one = 0;
	pl->th->pend_n = 0;
	pl->th->pend_len = 0;
	if (!p || !n)
		return;
	s = shim_stream_of(pl->fd);
	/* the usual write: one line, whole, onto a line boundary */
	if (!s && p[n - 1] == '\n' && n - 1 <= RING_LINE_CAP && memchr(p, '\n', n) == p + n - 1) {
		pl->one = 1;
		shim_plan_line(pl, p, n - 1, 0, n);
		return;
	}
	shim_lb(&lb, s);
	linebuf_peek(&lb, p, n, SHIM_PEND_MAX, shim_plan_line, pl);
}

/* The accepted bytes' lines: planned ones settled, the rest emitted. */
static void shim_settle(struct shim_plan *pl, const char *p, size_t acc, int uncertain)
{
	struct ring_stream *s = shim_stream_of(pl->fd);
	struct shim_emitctx c = { pl->th, pl->fd, uncertain, shim_why_order };
	uint32_t k = 0, kp = 0, i;
	struct linebuf lb;
	size_t head = acc;
	const char *last;

	for (i = 0; i < pl->n && pl->end[i] <= acc; i++) {
		shim_count_line();
		if (pl->what[i] == 1)
			kp++;
		else if (pl->what[i] == 2)
			shim_lost(RING_LOST_LONG, 1);
		else if (pl->what[i] == 3)
			shim_lost(RING_LOST_STREAMS, 1);
		k++;
	}
	if (pl->n_pend)
		shim_commit(pl->first_id, kp, pl->n_pend, uncertain, pl->fd);
	if (k && pl->what[0] == 3)
		shim_flag_clear(pl->fd, RING_FDF_SKIP);
	if (k && pl->what[0] == 4)
		shim_flag_clear(pl->fd, RING_FDF_DROP);
	if (!acc || (pl->one && k == 1 && !pl->stop))
		return;
	last = memrchr(p, '\n', acc);
	if (!last || last + 1 != p + acc) {
		if (!s)
			s = shim_stream_take(pl->fd);
		if (!s) {
			head = last ? (size_t)(last + 1 - p) : 0;
			shim_flag_set(pl->fd, RING_FDF_SKIP);
		}
	}
	shim_lb(&lb, s);
	linebuf_take(&lb, p, head, k, shim_emit_line, &c);
	if (s) {
		s->len = (uint32_t)lb.len;
		s->over = (uint32_t)lb.over;
		if (!lb.len && !lb.over)
			shim_stream_release(pl->fd, s);
		else if (uncertain)
			shim_flag_set(pl->fd, RING_FDF_UNCERTAIN);
	}
}

/*
 * Published before the lock is taken, so that a handler always knows what
 * this thread is doing. Only a handler on the same thread reads these:
 * a compiler fence orders them, no hardware fence is needed.
 */
static void shim_push_held(struct shim_thread *th, int fd)
{
	if (th->n_held < 4) {
		atomic_store_explicit(&th->phase[th->n_held], SHIM_PHASE_WAIT, memory_order_relaxed);
		th->held[th->n_held] = fd;
	}
	atomic_signal_fence(memory_order_seq_cst);
	th->n_held++;
	atomic_signal_fence(memory_order_seq_cst);
}

static void shim_set_phase(struct shim_thread *th, int phase)
{
	atomic_signal_fence(memory_order_seq_cst);
	if (th->n_held > 0 && th->n_held <= 4)
		atomic_store_explicit(&th->phase[th->n_held - 1], phase, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

static void shim_pop_held(struct shim_thread *th)
{
	atomic_signal_fence(memory_order_seq_cst);
	th->n_held--;
	atomic_signal_fence(memory_order_seq_cst);
}

/* The bytes of iov[0..cnt) up to n, copied into dst (cap bytes); 0 when they do not fit. */
static size_t shim_gather(char *dst, size_t cap, const struct iovec *iov, int cnt, size_t n)
{
	size_t at = 0;
	int i;

	for (i = 0; i < cnt && at < n; i++) {
		size_t k = iov[i].iov_len < n - at ? iov[i].iov_len : n - at;
		if (k > cap - at)
			return 0;
		memcpy(dst + at, iov[i].iov_base, k);
		at += k;
	}
	return at;
}

/*
 * What a write holds when its thread is cancelled inside the real call (a
 * cancellation point): unwinding runs this (-fexceptions). Its pending
 * records stay pending (the reader says they are uncertain).
 */
struct shim_wframe {
	struct shim_thread *th;
	int fd;
	int armed;
};

static void shim_write_cancelled(struct shim_wframe *fr)
{
	if (!fr->armed)
		return;
	shim_flag_set(fr->fd, RING_FDF_UNCERTAIN);
	shim_set_phase(fr->th, SHIM_PHASE_DONE);
	shim_unlock(fr->fd);
	shim_pop_held(fr->th);
	shim_depth--;
}

/*
 * The end of every write, with fd's lock held: bytes handlers wrote while
 * this one was in flight (`ambiguous`: their order with it matters and is
 * not known) and after it, then the lock released and what handlers queued
 * for other fds.
 */
static void shim_write_done(struct shim_thread *th, int fd, int unknown, int ambiguous)
{
	if (unknown)
		shim_defer_each(th, fd, SHIM_TAG_UNKNOWN, shim_defer_unknown, &ambiguous, 1);
	shim_defer_each(th, fd, SHIM_TAG_AFTER, shim_defer_exact, NULL, 1);
	shim_set_phase(th, SHIM_PHASE_DONE);
	shim_unlock(fd);
	shim_pop_held(th);
	if (atomic_load_explicit(&th->defer_len, memory_order_relaxed)) {
		shim_defer_each(th, -1, SHIM_TAG_LINE, shim_defer_line, NULL, 1);
		shim_defer_each(th, -1, SHIM_TAG_UNLOCKED, shim_defer_other, NULL, 1);
		shim_defer_reset(th);
	}
	shim_depth--;
}

int shim_vfork_write(shim_sys_fn sys, void *ctx, ssize_t *r)
{
	int e;

	if ((pid_t)syscall(SYS_getpid) != shim_vfork_mark) {
		shim_vfork_mark = 0;   /* that child is gone: this is its parent */
		return 0;
	}
	/* a vfork child that moved its fds: its bytes are not the parent's */
	*r = sys(ctx);
	e = errno;
	if (*r > 0)
		shim_lost(RING_LOST_VFORK, 1);
	errno = e;
	return 1;
}

/*
 * The usual write: one buffer holding one whole line, onto an fd with no
 * partial line. Returns -2 (before anything was written, the lock held and
 * the phase PLAN) when it is not that after all: the caller goes on with
 * the general path.
 */
static ssize_t shim_write_one(struct shim_thread *th, int fd, const char *p, size_t n, shim_sys_fn sys,
			      void *ctx, int *err)
{
	struct classify_scan scan;
	size_t len;
	uint64_t id = 0;
	ssize_t r;
	int unknown, whole = 1, ambiguous;

	classify_scan(p, n - 1, &scan);
	if (scan.nl || ring_fdstream(shim_area)[fd] || shim_flags(fd))
		return -2;
	len = shim_format_scanned(th, fd, p, n - 1, 0, &scan);
	if (len)
		id = shim_pend(th->out, len, fd);
	shim_set_phase(th, SHIM_PHASE_SYSCALL);
	/* a handler that wrote before this point went to the kernel first */
	if (shim_defer_each(th, fd, SHIM_TAG_BEFORE, NULL, NULL, 0)) {
		shim_set_phase(th, SHIM_PHASE_PLAN);
		if (id)
			shim_commit(id, 0, 1, 0, fd);
		th->pend_n = 0;
		th->pend_len = 0;
		return -2;
	}
	{
		struct shim_wframe fr __attribute__((cleanup(shim_write_cancelled))) = { th, fd, 1 };
		r = sys(ctx);
		*err = errno;
		fr.armed = 0;
	}
	shim_set_phase(th, SHIM_PHASE_FEED);
	unknown = shim_defer_each(th, fd, SHIM_TAG_UNKNOWN, shim_defer_check, &whole, 0);
	ambiguous = unknown && !(whole && r == (ssize_t)n);
	if (r == (ssize_t)n) {
		shim_count_line();
		if (id)
			shim_commit(id, 1, 1, ambiguous, fd);
		else if (len && ambiguous)
			shim_uncertain(fd, 1, shim_why_order, th->out, len - 1);
		else if (len)
			shim_emit(th->out, len, 0, 0);
	} else {
		if (id)
			shim_commit(id, 0, 1, 0, fd);
		if (r > 0)
			shim_feed_locked(th, fd, p, (size_t)r, ambiguous, shim_why_order);
	}
	shim_write_done(th, fd, unknown, ambiguous);
	return r;
}

ssize_t shim_stream_write(int fd, const struct iovec *iov, int cnt, shim_sys_fn sys, void *ctx)
{
	if (shim_ringed())
		return shim_ring_write(fd, iov, cnt, sys, ctx);
	return shim_direct_write(fd, iov, cnt, sys, ctx);
}

/* Without a reader: lines assembled and recorded here (the ring's reader does it otherwise). */
static ssize_t shim_direct_write(int fd, const struct iovec *iov, int cnt, shim_sys_fn sys, void *ctx)
{
	struct shim_thread *th;
	struct shim_plan pl;
	const char *p;
	size_t n = shim_iov_len(iov, cnt), acc;
	ssize_t r;
	int e, stolen, unknown, whole = 1, ambiguous, before_empty;

	if (shim_vfork_mark && shim_vfork_write(sys, ctx, &r))
		return r;
	th = shim_thread_get();
	if (!th || !shim_area) {
		r = sys(ctx);
		e = errno;
		if (r > 0)
			shim_lost(RING_LOST_NOMEM, 1);
		errno = e;
		return r;
	}
	if (shim_depth > 0)
		return shim_handler_write(th, fd, iov, cnt, sys, ctx);
	shim_drain_wait();
	shim_depth++;
	shim_push_held(th, fd);
	stolen = shim_lock(fd, (uint32_t)th->tid);
	shim_set_phase(th, SHIM_PHASE_PLAN);
	if (stolen)
		shim_stream_reset(fd);
	shim_attn(fd);
	if (cnt == 1 && n && n - 1 <= RING_LINE_CAP && ((const char *)iov[0].iov_base)[n - 1] == '\n') {
		r = shim_write_one(th, fd, iov[0].iov_base, n, sys, ctx, &e);
		if (r != -2) {
			errno = e;
			return r;
		}
	}
	p = cnt == 1 ? iov[0].iov_base : NULL;
	if (cnt != 1 && n && shim_gather(th->gather, sizeof(th->gather), iov, cnt, n) == n)
		p = th->gather;
	pl.th = th;
	pl.fd = fd;
	for (;;) {
		shim_plan(&pl, p, n);
		shim_set_phase(th, SHIM_PHASE_SYSCALL);
		/* a handler that wrote before this point went to the kernel first */
		if (!shim_defer_each(th, fd, SHIM_TAG_BEFORE, NULL, NULL, 0))
			break;
		shim_set_phase(th, SHIM_PHASE_PLAN);
		shim_plan_abort(&pl);
		shim_defer_each(th, fd, SHIM_TAG_BEFORE, shim_defer_exact, NULL, 1);
	}
	{
		struct ring_stream *s = shim_stream_of(fd);
		before_empty = !s || (!s->len && !s->over);
	}
	{
		struct shim_wframe fr __attribute__((cleanup(shim_write_cancelled))) = { th, fd, 1 };
		r = sys(ctx);
		e = errno;
		fr.armed = 0;
	}
	shim_set_phase(th, SHIM_PHASE_FEED);
	acc = r > 0 ? (size_t)r : 0;
	if (acc && !p) {
		/* bytes we could not see whole before the call: gather what was written */
		if (shim_gather(th->gather, sizeof(th->gather), iov, cnt, acc) == acc) {
			p = th->gather;
		} else {
			/* a writev of more than 64 KiB in pieces: fed piece by piece */
			size_t at = 0;
			int i;
			for (i = 0; i < cnt && at < acc; i++) {
				size_t m = iov[i].iov_len < acc - at ? iov[i].iov_len : acc - at;
				shim_feed_locked(th, fd, iov[i].iov_base, m, 0, NULL);
				at += m;
			}
			acc = 0;
		}
	}
	/*
	 * Handlers that wrote while the bytes were on their way: which went
	 * first is not knowable. It matters only when a line is not whole on
	 * either side.
	 */
	unknown = shim_defer_each(th, fd, SHIM_TAG_UNKNOWN, shim_defer_check, &whole, 0);
	ambiguous = unknown && !(before_empty && whole && (!acc || p[acc - 1] == '\n'));
	shim_settle(&pl, p, acc, ambiguous);
	shim_write_done(th, fd, unknown, ambiguous);
	errno = e;
	return r;
}

/* --- for stdio, close, exit and fork ------------------------------------------ */

/* The lock holder's bytes are not known: the stream starts over, and its next line is uncertain. */
static void shim_stream_reset(int fd)
{
	struct ring_stream *s = shim_stream_of(fd);

	if (shim_ringed()) {
		shim_ring_mark(RING_M_UNKNOWN, fd);
		return;
	}
	if (s)
		shim_stream_release(fd, s);
	shim_flag_clear(fd, RING_FDF_SKIP);
	shim_flag_set(fd, RING_FDF_UNCERTAIN);
}

int shim_stream_lock(int fd)
{
	struct shim_thread *th = shim_thread_get();

	if (!th || !shim_area || (unsigned)fd >= SHIM_FD_MAX)
		return 0;
	if (shim_depth > 0)
		return -1;   /* a handler inside the shim: nothing fed */
	shim_drain_wait();
	if (shim_fd_lock(th, fd))
		shim_stream_reset(fd);
	if (!shim_ringed())
		shim_attn(fd);
	shim_set_phase(th, SHIM_PHASE_SYSCALL);
	return 1;
}

void shim_stream_feed(int fd, const char *p, size_t n, int uncertain)
{
	struct shim_thread *th = shim_thread_get();
	struct ring_stream *s;
	int whole = 1, unknown, ambiguous;

	if (!th || !n)
		return;
	if (shim_ringed()) {
		shim_ring_bytes(fd, p, n, uncertain);
		return;
	}
	s = shim_stream_of(fd);
	unknown = shim_defer_each(th, fd, SHIM_TAG_UNKNOWN, shim_defer_check, &whole, 0);
	ambiguous = unknown && !((!s || (!s->len && !s->over)) && whole && p[n - 1] == '\n');
	shim_feed_locked(th, fd, p, n, uncertain || ambiguous,
			 uncertain ? "a stdio flush failed: how much of it reached the fd is not known" :
				     shim_why_order);
	if (unknown)
		shim_defer_each(th, fd, SHIM_TAG_UNKNOWN, shim_defer_unknown, &ambiguous, 1);
}

void shim_stream_unlock(int fd, int token)
{
	struct shim_thread *th = shim_thread_get();
	int ambiguous = 0;

	if (token != 1 || !th)
		return;
	if (shim_ringed()) {
		shim_fd_unlock(th, fd);
		return;
	}
	shim_set_phase(th, SHIM_PHASE_FEED);
	shim_defer_each(th, fd, SHIM_TAG_UNKNOWN, shim_defer_unknown, &ambiguous, 1);
	shim_defer_each(th, fd, SHIM_TAG_AFTER, shim_defer_exact, NULL, 1);
	shim_set_phase(th, SHIM_PHASE_DONE);
	if (!th->unlocked)
		shim_unlock(fd);
	shim_pop_held(th);
	shim_defer_each(th, -1, SHIM_TAG_LINE, shim_defer_line, NULL, 1);
	shim_defer_each(th, -1, SHIM_TAG_UNLOCKED, shim_defer_other, NULL, 1);
	shim_defer_reset(th);
	shim_depth--;
}

void shim_stream_mark_uncertain(int fd)
{
	if (!shim_area || (unsigned)fd >= SHIM_FD_MAX)
		return;
	if (shim_ringed())
		shim_ring_mark(RING_M_UNKNOWN, fd);
	else
		shim_flag_set(fd, RING_FDF_UNCERTAIN);
}

/*
 * The partial line of fd's stream as a record with "partial":true; the
 * stream is freed unless `keep` (an exec that may fail: the line may go on).
 */
static int shim_record_partial(struct shim_thread *th, int fd, struct ring_stream *s, int keep)
{
	size_t len;
	int done = 0;

	if (shim_flags(fd) & RING_FDF_DROP) {
		/* the rest of a line counted lost already */
	} else if (s->over) {
		shim_lost(RING_LOST_LONG, 1);
	} else if (s->len) {
		len = shim_format(th, fd, s->buf, s->len, 1);
		if (len) {
			if (shim_flags(fd) & RING_FDF_UNCERTAIN)
				shim_uncertain(fd, 1, shim_why_fork, th->out, len - 1);
			else
				shim_emit(th->out, len, 0, 0);
		}
		done = 1;
	}
	if (keep)
		return done;
	shim_stream_release(fd, s);
	shim_flag_clear(fd, RING_FDF_SKIP | RING_FDF_UNCERTAIN | RING_FDF_DROP);
	return done;
}

void shim_stream_close(int fd)
{
	struct shim_thread *th;
	struct ring_stream *s;

	if (!shim_area || (unsigned)fd >= SHIM_FD_MAX || shim_depth > 0)
		return;
	th = shim_thread_get();
	if (!th)
		return;
	shim_depth++;
	shim_lock(fd, (uint32_t)th->tid);
	if (shim_ringed()) {
		/* the reader ends the fd's partial line */
		shim_ring_close(fd);
		shim_unlock(fd);
		shim_depth--;
		return;
	}
	shim_drain_wait();
	shim_attn(fd);
	s = shim_stream_of(fd);
	if (s)
		shim_record_partial(th, fd, s, 0);
	shim_flag_clear(fd, RING_FDF_SKIP | RING_FDF_UNCERTAIN | RING_FDF_DROP);
	shim_unlock(fd);
	shim_depth--;
}

uint64_t shim_stream_finish_all(int keep)
{
	struct shim_thread *th = shim_thread_get();
	uint64_t n = 0;
	unsigned i;

	if (!th || !shim_area || shim_ringed())
		return 0;   /* with a reader, the reader records the partial lines at the end */
	shim_drain_wait();
	for (i = 0; i < RING_STREAMS; i++) {
		struct ring_stream *s = ring_stream(shim_area, i);
		int fd = atomic_load(&s->fd), tries;

		if (fd < 0)
			continue;
		/* another thread may be blocked writing: wait a little, never for ever */
		for (tries = 0; tries < 100 && !shim_trylock(fd, (uint32_t)th->tid); tries++) {
			struct timespec ms = { 0, 1000000 };
			nanosleep(&ms, NULL);
		}
		if (tries == 100) {
			shim_uncertain(fd, 1, "the fd was being written when the process ended", NULL, 0);
			continue;
		}
		shim_attn(fd);
		if (atomic_load(&s->fd) == fd)
			n += (uint64_t)shim_record_partial(th, fd, s, keep);
		shim_unlock(fd);
	}
	return n;
}

void shim_stream_fork_parent(void)
{
	unsigned i;

	if (!shim_area)
		return;
	if (shim_ringed()) {
		/* the reader knows which lines are open: from here they may be continued by the child */
		shim_ring_mark(RING_M_FORK, -1);
		return;
	}
	for (i = 0; i < RING_STREAMS; i++) {
		int fd = atomic_load(&ring_stream(shim_area, i)->fd);
		if (fd >= 0)
			shim_flag_set(fd, RING_FDF_UNCERTAIN);
	}
}

void shim_stream_after_fork(struct ring_hdr *parent, struct ring_hdr *child, long old_tid, long new_tid)
{
	unsigned w, i;

	/* locks: only watched fds ever have one */
	for (w = 0; w < SHIM_FD_MAX / 64; w++) {
		uint64_t m = atomic_load_explicit(&shim_watch_bits[w], memory_order_relaxed);
		while (m) {
			int fd = (int)(w * 64 + (unsigned)__builtin_ctzll(m));
			uint32_t v = atomic_load(&ring_locks(parent)[fd]);
			m &= m - 1;
			if (child != parent)
				ring_fdflags(child)[fd] = ring_fdflags(parent)[fd] & RING_FDF_UNCERTAIN;
			if (ring_fdflags(parent)[fd] & RING_FDF_OPEN)
				ring_fdflags(child)[fd] = (uint8_t)((ring_fdflags(child)[fd] & ~RING_FDF_OPEN) | RING_FDF_UNCERTAIN);
			if (!v) {
				atomic_store(&ring_locks(child)[fd], 0);
				continue;
			}
			if ((long)(v & ~SHIM_LOCK_WAITERS) == old_tid) {
				/* this thread's own (fork from a handler): still its own */
				atomic_store(&ring_locks(child)[fd], (uint32_t)new_tid);
			} else {
				/* held by a thread that does not exist here */
				atomic_store(&ring_locks(child)[fd], 0);
				ring_fdflags(child)[fd] |= RING_FDF_UNCERTAIN;
			}
		}
	}
	/* partial lines are the parent's to finish; the child's next line may continue one */
	for (i = 0; i < RING_STREAMS; i++) {
		struct ring_stream *s = ring_stream(parent, i);
		int fd = atomic_load(&s->fd);

		if (fd < 0)
			continue;
		ring_fdflags(child)[fd] = (uint8_t)((ring_fdflags(child)[fd] & ~RING_FDF_SKIP) | RING_FDF_UNCERTAIN);
		if (child == parent) {
			ring_fdstream(child)[fd] = 0;
			s->len = 0;
			s->over = 0;
			atomic_store(&s->fd, -1);
		}
	}
}

void shim_stream_fork_marks(void)
{
	unsigned w;

	if (!shim_ringed())
		return;
	for (w = 0; w < SHIM_FD_MAX / 64; w++) {
		uint64_t m = atomic_load_explicit(&shim_watch_bits[w], memory_order_relaxed);
		while (m) {
			int fd = (int)(w * 64 + (unsigned)__builtin_ctzll(m));
			m &= m - 1;
			if (shim_flags(fd) & RING_FDF_UNCERTAIN) {
				shim_flag_clear(fd, RING_FDF_UNCERTAIN);
				shim_ring_mark(RING_M_UNKNOWN, fd);
			}
		}
	}
}

/* --- the fd locks, for ringw.c ---------------------------------------------- */

/*
 * While the process has one thread (glibc's __libc_single_threaded, which
 * only ever goes from 1 to 0, and not while that thread is in here) no
 * other thread can write, and the lock itself is left alone: its phase,
 * which is what a signal handler looks at, is kept all the same.
 */
int shim_fd_lock(struct shim_thread *th, int fd)
{
	int stolen = 0;

	shim_depth++;
	shim_push_held(th, fd);
	th->unlocked = __libc_single_threaded;
	if (!th->unlocked)
		stolen = shim_lock(fd, (uint32_t)th->tid);
	shim_set_phase(th, SHIM_PHASE_PLAN);
	return stolen;
}

void shim_fd_unlock(struct shim_thread *th, int fd)
{
	shim_set_phase(th, SHIM_PHASE_DONE);
	if (!th->unlocked)
		shim_unlock(fd);
	shim_pop_held(th);
	shim_depth--;
}

int shim_fd_phase_tag(struct shim_thread *th, int fd)
{
	return shim_defer_tag(th, fd);
}

int shim_fd_trylock(struct shim_thread *th, int fd)
{
	return shim_trylock(fd, (uint32_t)th->tid);
}

void shim_fd_release(int fd)
{
	shim_unlock(fd);
}

void shim_fd_phase(struct shim_thread *th, int phase)
{
	shim_set_phase(th, phase);
}

void shim_fd_open_bit(int fd, int open)
{
	if (open)
		shim_flag_set(fd, RING_FDF_OPEN);
	else if (shim_flags(fd) & RING_FDF_OPEN)
		shim_flag_clear(fd, RING_FDF_OPEN);
}

/* --- for drain.c: the ring's bytes into the streams, without the fd's lock ---- */

/*
 * (The drain holds no fd lock: while it feeds, direct writers wait for it
 * (shim_drain_wait), and a write still in the ring holds its fd's lock
 * and waits for the drain to take its commit.)
 */
void shim_drain_feed(struct shim_thread *th, int fd, const char *p, size_t n, const char *why)
{
	shim_feed_locked(th, fd, p, n, why != NULL, why);
}

void shim_drain_loose(struct shim_thread *th, int fd, const char *p, size_t n)
{
	shim_emit_loose(th, fd, p, n);
}

void shim_drain_close(struct shim_thread *th, int fd, int drop)
{
	struct ring_stream *s = shim_stream_of(fd);

	if (drop)
		shim_flag_set(fd, RING_FDF_DROP);
	if (s)
		shim_record_partial(th, fd, s, 0);
	shim_flag_clear(fd, RING_FDF_SKIP | RING_FDF_UNCERTAIN | RING_FDF_DROP);
}

void shim_drain_loss(int fd, int skip)
{
	struct ring_stream *s = shim_stream_of(fd);

	if (s)
		shim_stream_release(fd, s);
	shim_flag_clear(fd, RING_FDF_UNCERTAIN | RING_FDF_SKIP | RING_FDF_DROP);
	if (skip)
		shim_flag_set(fd, RING_FDF_DROP);
}

void shim_drain_fdflag(int fd, uint8_t f)
{
	shim_flag_set(fd, f);
}

int shim_drain_open(int fd)
{
	struct ring_stream *s = shim_stream_of(fd);

	return s && (s->len || s->over);
}

int shim_drain_restore(int fd, const char *p, size_t n, int over)
{
	struct ring_stream *s = shim_stream_of(fd);

	if (!s)
		s = shim_stream_take(fd);
	if (!s) {
		/* no stream free: the line's rest is dropped when it comes, and counted (as direct writes do) */
		shim_flag_set(fd, RING_FDF_SKIP);
		return 0;
	}
	if (n > RING_LINE_CAP)
		n = RING_LINE_CAP, over = 1;
	memcpy(s->buf, p, n);
	s->len = (uint32_t)n;
	s->over = (uint32_t)over;
	return 1;
}
