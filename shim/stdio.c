/*
 * stdio.c - glibc stdio, recorded when its bytes reach the fd.
 *
 * glibc writes a FILE's buffer with an internal write() no preload can see,
 * so the shim follows the buffer instead. glibc's public struct _IO_FILE
 * shows the put area: the bytes still to be written are
 * [_IO_write_base, _IO_write_ptr), and any flush leaves them reset to the
 * buffer's start (libio/fileops.c, new_do_write). No copy is kept: per FILE
 * whose fd is watched the shim counts the pending bytes at each wrapped call
 * (their complete lines, the tail after the last '\n', a sample of the
 * first and last bytes and the file offset, so that a buffer emptied and
 * refilled behind its back is noticed), and publishes the counts, which
 * `ttaudit capture` reads if the process dies.
 *
 * Bytes that appeared without a wrapped call came from the putc_unlocked,
 * fputc_unlocked, putchar_unlocked and small fwrite_unlocked that
 * <stdio.h> inlines at -O2: they are pending bytes like any other. When a
 * call may write, the pending bytes (and those it is handed) go to the
 * ring pending, straight from the FILE's buffer; after the call, what left
 * the buffer is committed, exactly like a raw write's bytes. The FILE's
 * lock is taken around count, call and commit (lock order: FILE, then the
 * fd's), and the fd's lock is held through the call, so a flush lands in
 * the fd's stream in kernel order. A flush the shim did not see is counted
 * lost, never recorded as lines; one that fails (the error flag newly set)
 * does not say how much of it reached the fd: those lines are uncertain.
 * Bytes still in a buffer at _exit, exec or death never reached the fd:
 * counted in `lost`, never recorded as lines.
 */
/*
 * This file defines functions <stdio.h> may otherwise provide as inline
 * wrappers (extern inlines when optimising, fortify wrappers): ask for none.
 */
#undef _FORTIFY_SOURCE
#ifndef __NO_INLINE__
#define __NO_INLINE__ 1
#endif

#include "shim/shim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHIM_API __attribute__((visibility("default")))

#undef fwrite_unlocked
#undef fputc_unlocked
#undef putc_unlocked
#undef putchar_unlocked
#undef putc
#undef putchar
#undef printf
#undef fprintf
#undef vprintf
#undef dprintf

/* glibc's libio/libio.h flag bits (ABI, unchanged since glibc 2.1). */
#define SHIM_IO_UNBUFFERED 0x0002
#define SHIM_IO_ERR_SEEN 0x0020
#define SHIM_IO_LINE_BUF 0x0200
#define SHIM_IO_CURRENTLY_PUTTING 0x0800

#define SHIM_FILES 16
#define SHIM_STAGE_MAX (1u << 20)

struct shim_file {
	_Atomic(FILE *) fp;     /* NULL: free */
	int fd;
	int slot;               /* in shim_area->stdio[], -1 none */
	size_t known;           /* bytes pending at the last wrapped call */
	const char *base;       /* _IO_write_base then */
	int64_t offset;         /* _offset then (a file's: moves when a flush wrote) */
	char head[8], last[8];  /* the first and the last (up to 8) of them */
	uint32_t lines;         /* complete lines among them */
	uint32_t tail;          /* bytes after their last '\n' */
	char *mem;              /* without a reader: the pending bytes, staged before a call that may write */
	size_t cap;
};

static struct shim_file shim_files[SHIM_FILES];

#define SHIM_NEED(fn) do { if (!shim_real.fn) shim_resolve(); } while (0)

static int shim_file_fd(FILE *fp)
{
	/* _fileno is a public member of glibc's FILE; -1 for memory streams */
	return fp ? fp->_fileno : -1;
}

static size_t shim_pending(FILE *fp)
{
	if (!(fp->_flags & SHIM_IO_CURRENTLY_PUTTING) || !fp->_IO_write_base ||
	    fp->_IO_write_ptr < fp->_IO_write_base)
		return 0;
	return (size_t)(fp->_IO_write_ptr - fp->_IO_write_base);
}

static uint32_t shim_nl(const char *p, size_t n)
{
	uint32_t c = 0;
	const char *end = p + n;

	while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
		c++;
		p++;
	}
	return c;
}

/*
 * The samples of the pending bytes (up to 8 of them), taken and compared
 * in a constant size in the usual case of 8, which the compiler turns into
 * single moves instead of calls to libc.
 */
static void shim_sample_take(char *dst, const char *src, size_t k)
{
	if (k == 8)
		memcpy(dst, src, 8);
	else
		memcpy(dst, src, k);
}

static int shim_sample_differs(const char *a, const char *b, size_t k)
{
	return k == 8 ? memcmp(a, b, 8) != 0 : memcmp(a, b, k) != 0;
}

/* Bytes p[0..n) were added to the pending ones: the line counts follow. */
static void shim_file_add(struct shim_file *f, const char *p, size_t n)
{
	const char *nl;

	if (!n)
		return;
	nl = memchr(p, '\n', n);
	if (!nl) {
		f->tail += (uint32_t)n;
		return;
	}
	if (nl == p + n - 1) {
		/* the usual: one line, ended by the last byte */
		f->lines++;
		f->tail = 0;
		return;
	}
	nl = memrchr(p, '\n', n);
	f->lines += 1 + shim_nl(p, (size_t)(nl - p));
	f->tail = (uint32_t)(n - (size_t)(nl + 1 - p));
}

/*
 * fp's pending bytes as they are now, remembered (with a sample of their
 * first and last bytes, to tell a buffer emptied and filled again behind
 * the shim's back), and published: the shared counters `ttaudit capture`
 * reads if the process dies now.
 */
static void shim_file_note(struct shim_file *f, FILE *fp, size_t cur)
{
	const char *base = fp->_IO_write_base;
	size_t k = cur < 8 ? cur : 8;

	f->known = cur;
	f->base = base;
	f->offset = fp->_offset;
	if (k) {
		shim_sample_take(f->head, base, k);
		shim_sample_take(f->last, base + cur - k, k);
	}
	if (f->slot >= 0 && shim_area) {
		atomic_store_explicit(&shim_area->stdio[f->slot].lines, f->lines, memory_order_relaxed);
		atomic_store_explicit(&shim_area->stdio[f->slot].bytes, f->tail, memory_order_relaxed);
	}
}

static int shim_slot_take(int fd)
{
	int i;

	for (i = 0; i < RING_STDIO; i++) {
		int32_t free_fd = -1;
		if (atomic_compare_exchange_strong(&shim_area->stdio[i].fd, &free_fd, fd))
			return i;
	}
	return -1;
}

/* fp's record, made on first sight; NULL when none can be had. */
static struct shim_file *shim_file_of(FILE *fp, int fd)
{
	struct shim_file *f;
	int i;

	for (i = 0; i < SHIM_FILES; i++)
		if (atomic_load_explicit(&shim_files[i].fp, memory_order_relaxed) == fp)
			return &shim_files[i];
	for (i = 0; i < SHIM_FILES; i++) {
		FILE *none = NULL;
		f = &shim_files[i];
		if (atomic_load(&f->fp) == NULL && atomic_compare_exchange_strong(&f->fp, &none, fp)) {
			f->fd = fd;
			f->known = 0;
			f->base = NULL;
			f->lines = 0;
			f->tail = 0;
			f->slot = shim_area ? shim_slot_take(fd) : -1;
			return f;
		}
	}
	return NULL;
}

static void shim_file_drop(struct shim_file *f)
{
	if (f->slot >= 0 && shim_area) {
		atomic_store(&shim_area->stdio[f->slot].lines, 0);
		atomic_store(&shim_area->stdio[f->slot].bytes, 0);
		atomic_store(&shim_area->stdio[f->slot].fd, -1);
	}
	f->slot = -1;
	f->known = 0;
	f->lines = 0;
	f->tail = 0;
	atomic_store(&f->fp, NULL);
}

/* Room for n staged bytes (no reader). 0 when the buffer is larger than the shim stages. */
static int shim_stage_room(struct shim_file *f, size_t n)
{
	size_t cap;
	char *m;

	if (n <= f->cap)
		return 1;
	if (n > SHIM_STAGE_MAX)
		return 0;
	cap = f->cap ? f->cap : 4096;
	while (cap < n)
		cap *= 2;
	m = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	if (f->mem)
		munmap(f->mem, f->cap);
	f->mem = m;
	f->cap = cap;
	return 1;
}

/*
 * Brings the record up to date with fp's buffer before a call. Bytes added
 * without a wrapped call (the putc_unlocked, fputc_unlocked,
 * putchar_unlocked and small fwrite_unlocked that <stdio.h> inlines at -O2)
 * are counted. Pending bytes that went away without a wrapped call (glibc
 * flushed them inside a call the shim does not see: reading stdin flushes
 * a line-buffered stdout) left unseen: their lines are counted lost, and
 * the fd's next line is not known to be whole.
 */
static void shim_sync(FILE *fp, struct shim_file *f)
{
	size_t cur = shim_pending(fp);
	const char *base = fp->_IO_write_base;

	if (f->known) {
		size_t k = f->known < 8 ? f->known : 8;
		if (base != f->base || cur < f->known || (f->offset >= 0 && fp->_offset != f->offset) ||
		    shim_sample_differs(base, f->head, k) || shim_sample_differs(base + f->known - k, f->last, k)) {
			shim_lost(RING_LOST_STDIO_WIDE, f->lines + (f->tail > 0));
			shim_stream_mark_uncertain(f->fd);
			f->known = 0;
			f->lines = 0;
			f->tail = 0;
		}
	}
	if (cur > f->known) {
		shim_file_add(f, base + f->known, cur - f->known);
		shim_file_note(f, fp, cur);
	}
}

/* What a wrapped call handed to the stream: up to two pieces, or to be formatted again. */
struct shim_handed {
	const char *p[2];
	size_t n[2];
	int pieces;
	/* printf family: formatted again only when the call flushed */
	const char *fmt;
	va_list *ap;
	int flag;               /* _chk flag or -1 */
	int err0;               /* errno at the call, for %m */
};

/* The printf output of h again, in th->fmt; its length, or -1 when it is not the same. */
static long shim_reformat(struct shim_thread *th, struct shim_handed *h, size_t total)
{
	va_list again;
	int e = errno, n;

	va_copy(again, *h->ap);
	errno = h->err0;
	n = vsnprintf(th->fmt, sizeof(th->fmt), h->fmt, again);
	errno = e;
	va_end(again);
	return n < 0 || (size_t)n != total ? -1 : n;
}

/* Without a reader: bytes [0, len) of the handed bytes, fed to the fd's stream. */
static void shim_feed_handed(struct shim_file *f, struct shim_handed *h, size_t total, size_t len,
			     int uncertain)
{
	size_t at = 0;
	int i;

	if (h->fmt) {
		struct shim_thread *th = shim_thread_get();

		if (!th) {
			shim_lost(RING_LOST_NOMEM, 1);
			shim_stream_mark_uncertain(f->fd);
			return;
		}
		if (shim_reformat(th, h, total) < 0) {
			/* formatting twice did not give the same bytes: nothing to trust */
			shim_uncertain(f->fd, 1, "printf output could not be seen again", NULL, 0);
			shim_stream_mark_uncertain(f->fd);
			return;
		}
		if (len > sizeof(th->fmt) - 1) {
			shim_stream_feed(f->fd, th->fmt, sizeof(th->fmt) - 1, uncertain);
			shim_lost(RING_LOST_LONG, 1);
			shim_stream_mark_uncertain(f->fd);
			return;
		}
		shim_stream_feed(f->fd, th->fmt, len, uncertain);
		return;
	}
	for (i = 0; i < h->pieces && at < len; i++) {
		size_t k = h->n[i] < len - at ? h->n[i] : len - at;
		shim_stream_feed(f->fd, h->p[i], k, uncertain);
		at += k;
	}
}

/* Lines a printf may complete, before its output is known: its newlines, or one for a %s that may hold one. */
static uint32_t shim_fmt_risk(const struct shim_handed *h)
{
	return shim_nl(h->fmt, strlen(h->fmt)) + (strchr(h->fmt, '%') != NULL);
}

/*
 * 1 when the call may write to the fd. Only then is the fd's lock taken
 * (and waited for), and the pending bytes staged: a call that only adds to
 * the buffer must not wait for another thread's write, which may be
 * blocked for as long as the fd's reader sleeps (a process exiting with an
 * empty stdout buffer must exit).
 */
static int shim_may_write(FILE *fp, const struct shim_file *f, const struct shim_handed *h)
{
	size_t n = h->n[0] + (h->pieces > 1 ? h->n[1] : 0), space;
	int i;

	if (h->fmt)
		return 1;               /* a format's length is not known before it is formatted */
	if (!h->pieces)
		return f->known > 0;    /* a flush, a seek, a close */
	if ((fp->_flags & SHIM_IO_UNBUFFERED) || !(fp->_flags & SHIM_IO_CURRENTLY_PUTTING) ||
	    !fp->_IO_write_ptr || !fp->_IO_buf_end)
		return 1;
	space = (size_t)(fp->_IO_buf_end - fp->_IO_write_ptr);
	if (n >= space)
		return 1;
	if (fp->_flags & SHIM_IO_LINE_BUF)
		for (i = 0; i < h->pieces; i++)
			if (memchr(h->p[i], '\n', h->n[i]))
				return 1;
	return 0;
}

/*
 * Releases what the frame holds when the thread is cancelled inside the
 * real call (a cancellation point): unwinding runs this (-fexceptions).
 */
struct shim_frame {
	FILE *fp;
	int fd;
	int token;              /* 1: the fd's lock (no reader), 2: (reader) */
	int armed;
	struct shim_thread *th;
	struct shim_pend *pd;
};

static void shim_frame_cancelled(struct shim_frame *fr)
{
	if (!fr->armed)
		return;
	/* the stream's bytes are not known after a cancelled flush */
	if (fr->token == 2) {
		shim_ring_cancel_pend(fr->th, fr->fd, fr->pd);
	} else {
		shim_stream_mark_uncertain(fr->fd);
		shim_stream_unlock(fr->fd, fr->token);
	}
	funlockfile(fr->fp);
}

/*
 * The frame around every call on a watched FILE: FILE lock, sync, and
 * when the call may write, the fd's lock and the pending bytes staged
 * (with a reader: in the ring, pending), the call (`run`, which sets
 * *total), and the account: with P bytes pending before, H handed over
 * and A pending after, the first P + H - A bytes of pending ++ handed
 * reached the fd. Returns run's result.
 */
typedef long (*shim_run_fn)(FILE *fp, void *ctx, size_t *total);

static long shim_around(FILE *fp, struct shim_handed *h, shim_run_fn run, void *ctx)
{
	int fd = shim_file_fd(fp), token = 0, err_before, may, doubt, i, cnt = 0, e;
	struct shim_thread *th = NULL;
	struct shim_file *f;
	struct shim_pend pd;
	struct iovec iov[3];
	size_t total = 0, before, after, took, staged = 0, handed = 0;
	uint64_t risk = 0;
	uint32_t lines0;
	long r;

	if (!shim_watching(fd) || fp->_mode > 0)
		return run(fp, ctx, &total);
	if (shim_depth > 0) {
		/* stdio from a signal handler inside the shim */
		r = run(fp, ctx, &total);
		e = errno;
		if (fp->_flags & (SHIM_IO_UNBUFFERED | SHIM_IO_LINE_BUF))
			shim_lost(RING_LOST_HANDLER, 1);
		errno = e;
		return r;
	}
	flockfile(fp);
	f = shim_file_of(fp, fd);
	if (!f) {
		funlockfile(fp);
		r = run(fp, ctx, &total);
		shim_lost(RING_LOST_STDIO_WIDE, 1);
		return r;
	}
	e = errno;
	shim_sync(fp, f);
	before = f->known;
	lines0 = f->lines + (f->tail > 0);
	may = shim_may_write(fp, f, h);
	if (may && !(th = shim_thread_get()))
		may = 0;   /* no thread block: what it writes is counted lost below */
	if (may) {
		if (before) {
			iov[cnt].iov_base = (void *)fp->_IO_write_base;
			iov[cnt++].iov_len = before;
		}
		if (!h->fmt)
			for (i = 0; i < h->pieces; i++)
				if (h->n[i]) {
					iov[cnt].iov_base = (void *)h->p[i];
					iov[cnt++].iov_len = h->n[i];
					handed += h->n[i];
				}
		if (shim_ringed()) {
			token = 2;
			if (shim_fd_lock(th, fd))
				shim_ring_mark(RING_M_UNKNOWN, fd);
			shim_ring_pend(th, fd, iov, cnt, before + handed, &pd);
			if (pd.pended < before && shim_stage_room(f, before)) {
				/*
				 * Not in the ring (no room, or it closed): what it writes is
				 * recorded after the call, and the buffer will have changed.
				 */
				memcpy(f->mem, fp->_IO_write_base, before);
				iov[0].iov_base = f->mem;
			}
			if (h->fmt)
				risk = shim_risk(fd, shim_fmt_risk(h));
		} else {
			token = shim_stream_lock(fd);
			if (before && shim_stage_room(f, before)) {
				memcpy(f->mem, fp->_IO_write_base, before);
				staged = before;
			}
		}
	}
	errno = e;
	err_before = fp->_flags & SHIM_IO_ERR_SEEN;
	{
		struct shim_frame fr __attribute__((cleanup(shim_frame_cancelled))) = { fp, fd, token, 1, th, &pd };
		r = run(fp, ctx, &total);
		fr.armed = 0;
	}
	e = errno;
	after = shim_pending(fp);
	doubt = !err_before && (fp->_flags & SHIM_IO_ERR_SEEN);
	if (before + total < after) {
		/* more pending than it was given: bytes the shim did not see */
		took = 0;
		shim_stream_mark_uncertain(fd);
	} else {
		took = before + total - after;
	}
	if (token == 2) {
		if (h->fmt && took > before) {
			/* the bytes of the format that were written: formatted again, committed as written */
			shim_ring_settle(th, fd, iov, cnt, &pd, before, doubt);
			if (shim_reformat(th, h, total) >= 0 && took - before < sizeof(th->fmt)) {
				shim_ring_bytes(fd, th->fmt, took - before, doubt);
			} else {
				shim_lost(RING_LOST_LONG, 1);
				shim_ring_mark(RING_M_UNKNOWN, fd);
			}
		} else {
			shim_ring_settle(th, fd, iov, cnt, &pd, took, doubt);
		}
		shim_risk_done(risk, fd);
		shim_fd_unlock(th, fd);
	} else if (may) {
		size_t old = took < before ? took : before;

		if (old && old <= staged)
			shim_stream_feed(fd, f->mem, old, doubt);
		else if (old)
			shim_lost(RING_LOST_STDIO_WIDE, lines0);   /* a buffer larger than the shim stages */
		if (took > before)
			shim_feed_handed(f, h, total, took - before, doubt);
		shim_stream_unlock(fd, token);
	} else if (took) {
		/* it wrote after all, unforeseen: its bytes were not staged */
		shim_lost(RING_LOST_STDIO_WIDE, lines0 + 1);
		shim_stream_mark_uncertain(fd);
	}
	if (took) {
		/* what stays pending is what the buffer holds now */
		f->lines = 0;
		f->tail = 0;
		shim_file_add(f, fp->_IO_write_base, after);
	} else if (after > before) {
		shim_file_add(f, fp->_IO_write_base + before, after - before);
	}
	shim_file_note(f, fp, after);
	funlockfile(fp);
	errno = e;
	return r;
}

/* --- the calls ------------------------------------------------------------ */

struct shim_wctx {
	const void *p;
	size_t size, nmemb;
	int unlocked;
};

static long shim_run_fwrite(FILE *fp, void *ctx, size_t *total)
{
	struct shim_wctx *c = ctx;
	size_t r;

	if (c->unlocked) {
		SHIM_NEED(fwrite_unlocked);
		r = shim_real.fwrite_unlocked(c->p, c->size, c->nmemb, fp);
	} else {
		SHIM_NEED(fwrite);
		r = shim_real.fwrite(c->p, c->size, c->nmemb, fp);
	}
	*total = r == c->nmemb ? c->size * c->nmemb : r * c->size;
	return (long)r;
}

static size_t shim_fwrite(const void *p, size_t size, size_t nmemb, FILE *fp, int unlocked)
{
	struct shim_wctx c = { p, size, nmemb, unlocked };
	struct shim_handed h = { { p, NULL }, { size * nmemb, 0 }, 1, NULL, NULL, -1, 0 };

	if (size && nmemb > SIZE_MAX / size)
		h.n[0] = 0;
	return (size_t)shim_around(fp, &h, shim_run_fwrite, &c);
}

SHIM_API size_t fwrite(const void *p, size_t size, size_t nmemb, FILE *fp)
{
	return shim_fwrite(p, size, nmemb, fp, 0);
}

SHIM_API size_t fwrite_unlocked(const void *p, size_t size, size_t nmemb, FILE *fp)
{
	return shim_fwrite(p, size, nmemb, fp, 1);
}

struct shim_sctx {
	const char *s;
	int which;   /* 0 fputs, 1 fputs_unlocked, 2 puts */
};

static long shim_run_fputs(FILE *fp, void *ctx, size_t *total)
{
	struct shim_sctx *c = ctx;
	int r;

	if (c->which == 2) {
		SHIM_NEED(puts);
		r = shim_real.puts(c->s);
	} else if (c->which == 1) {
		SHIM_NEED(fputs_unlocked);
		r = shim_real.fputs_unlocked(c->s, fp);
	} else {
		SHIM_NEED(fputs);
		r = shim_real.fputs(c->s, fp);
	}
	*total = r == EOF ? 0 : strlen(c->s) + (c->which == 2);
	return r;
}

static int shim_fputs(const char *s, FILE *fp, int which)
{
	struct shim_sctx c = { s, which };
	struct shim_handed h = { { s, "\n" }, { strlen(s), 1 }, which == 2 ? 2 : 1, NULL, NULL, -1, 0 };

	return (int)shim_around(fp, &h, shim_run_fputs, &c);
}

SHIM_API int fputs(const char *s, FILE *fp)
{
	return shim_fputs(s, fp, 0);
}

SHIM_API int fputs_unlocked(const char *s, FILE *fp)
{
	return shim_fputs(s, fp, 1);
}

SHIM_API int puts(const char *s)
{
	return shim_fputs(s, stdout, 2);
}

enum { SHIM_C_FPUTC, SHIM_C_PUTC, SHIM_C_PUTCHAR, SHIM_C_FPUTC_U, SHIM_C_PUTC_U, SHIM_C_PUTCHAR_U,
       SHIM_C_IO_PUTC, SHIM_C_OVERFLOW };

struct shim_cctx {
	int c;
	int which;
};

static long shim_run_putc(FILE *fp, void *ctx, size_t *total)
{
	struct shim_cctx *c = ctx;
	int r;

	switch (c->which) {
	case SHIM_C_FPUTC: SHIM_NEED(fputc); r = shim_real.fputc(c->c, fp); break;
	case SHIM_C_PUTC: SHIM_NEED(putc); r = shim_real.putc(c->c, fp); break;
	case SHIM_C_PUTCHAR: SHIM_NEED(putchar); r = shim_real.putchar(c->c); break;
	case SHIM_C_FPUTC_U: SHIM_NEED(fputc_unlocked); r = shim_real.fputc_unlocked(c->c, fp); break;
	case SHIM_C_PUTC_U: SHIM_NEED(putc_unlocked); r = shim_real.putc_unlocked(c->c, fp); break;
	case SHIM_C_PUTCHAR_U: SHIM_NEED(putchar_unlocked); r = shim_real.putchar_unlocked(c->c); break;
	case SHIM_C_IO_PUTC: SHIM_NEED(io_putc); r = shim_real.io_putc(c->c, fp); break;
	default: SHIM_NEED(overflow); r = shim_real.overflow(fp, c->c); break;
	}
	*total = r == EOF || (c->which == SHIM_C_OVERFLOW && c->c == EOF) ? 0 : 1;
	return r;
}

static int shim_putc(int ch, FILE *fp, int which)
{
	struct shim_cctx c = { ch, which };
	char byte = (char)ch;
	struct shim_handed h = { { &byte, NULL }, { 1, 0 }, which == SHIM_C_OVERFLOW && ch == EOF ? 0 : 1,
				 NULL, NULL, -1, 0 };

	return (int)shim_around(fp, &h, shim_run_putc, &c);
}

SHIM_API int fputc(int c, FILE *fp) { return shim_putc(c, fp, SHIM_C_FPUTC); }
SHIM_API int putc(int c, FILE *fp) { return shim_putc(c, fp, SHIM_C_PUTC); }
SHIM_API int putchar(int c) { return shim_putc(c, stdout, SHIM_C_PUTCHAR); }
SHIM_API int fputc_unlocked(int c, FILE *fp) { return shim_putc(c, fp, SHIM_C_FPUTC_U); }
SHIM_API int putc_unlocked(int c, FILE *fp) { return shim_putc(c, fp, SHIM_C_PUTC_U); }
SHIM_API int putchar_unlocked(int c) { return shim_putc(c, stdout, SHIM_C_PUTCHAR_U); }
SHIM_API int _IO_putc(int c, FILE *fp) { return shim_putc(c, fp, SHIM_C_IO_PUTC); }
/* The slow path of the inline putc macros: a full buffer, or every byte of a line-buffered stream. */
SHIM_API int __overflow(FILE *fp, int c) { return shim_putc(c, fp, SHIM_C_OVERFLOW); }

/* --- the printf family -------------------------------------------------------- */

struct shim_pctx {
	const char *fmt;
	va_list *ap;
	int flag;
};

static long shim_run_printf(FILE *fp, void *ctx, size_t *total)
{
	struct shim_pctx *c = ctx;
	va_list ap;
	int r;

	va_copy(ap, *c->ap);
	if (c->flag >= 0) {
		SHIM_NEED(vfprintf_chk);
		r = shim_real.vfprintf_chk(fp, c->flag, c->fmt, ap);
	} else {
		SHIM_NEED(vfprintf);
		r = shim_real.vfprintf(fp, c->fmt, ap);
	}
	va_end(ap);
	*total = r > 0 ? (size_t)r : 0;
	return r;
}

static int shim_vfprintf(FILE *fp, int flag, const char *fmt, va_list ap)
{
	va_list mine;
	struct shim_pctx c;
	struct shim_handed h;
	int r;

	va_copy(mine, ap);
	c.fmt = fmt;
	c.ap = &mine;
	c.flag = flag;
	memset(&h, 0, sizeof(h));
	h.fmt = fmt;
	h.ap = &mine;
	h.flag = flag;
	h.err0 = errno;   /* %m in the second formatting must see the same errno */
	r = (int)shim_around(fp, &h, shim_run_printf, &c);
	va_end(mine);
	return r;
}

SHIM_API int vfprintf(FILE *fp, const char *fmt, va_list ap)
{
	return shim_vfprintf(fp, -1, fmt, ap);
}

SHIM_API int vprintf(const char *fmt, va_list ap)
{
	return shim_vfprintf(stdout, -1, fmt, ap);
}

SHIM_API int fprintf(FILE *fp, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = shim_vfprintf(fp, -1, fmt, ap);
	va_end(ap);
	return r;
}

SHIM_API int printf(const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = shim_vfprintf(stdout, -1, fmt, ap);
	va_end(ap);
	return r;
}

SHIM_API int __vfprintf_chk(FILE *fp, int flag, const char *fmt, va_list ap)
{
	return shim_vfprintf(fp, flag < 0 ? 0 : flag, fmt, ap);
}

SHIM_API int __vprintf_chk(int flag, const char *fmt, va_list ap)
{
	return shim_vfprintf(stdout, flag < 0 ? 0 : flag, fmt, ap);
}

SHIM_API int __fprintf_chk(FILE *fp, int flag, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = shim_vfprintf(fp, flag < 0 ? 0 : flag, fmt, ap);
	va_end(ap);
	return r;
}

SHIM_API int __printf_chk(int flag, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = shim_vfprintf(stdout, flag < 0 ? 0 : flag, fmt, ap);
	va_end(ap);
	return r;
}

/*
 * dprintf writes straight to the fd through glibc's internal write: the
 * output is formatted first, so that it goes through the raw write path
 * (its lines pending before the bytes reach the kernel), and the real call
 * then writes the same bytes.
 */
struct shim_dctx {
	int fd, flag, err0;
	const char *fmt;
	va_list *ap;
};

static ssize_t shim_sys_dprintf(void *ctx)
{
	struct shim_dctx *c = ctx;
	va_list ap;
	int r;

	va_copy(ap, *c->ap);
	errno = c->err0;
	if (c->flag >= 0) {
		SHIM_NEED(vdprintf_chk);
		r = shim_real.vdprintf_chk(c->fd, c->flag, c->fmt, ap);
	} else {
		SHIM_NEED(vdprintf);
		r = shim_real.vdprintf(c->fd, c->fmt, ap);
	}
	va_end(ap);
	return r;
}

static int shim_vdprintf(int fd, int flag, const char *fmt, va_list ap)
{
	struct shim_thread *th;
	struct shim_dctx c;
	struct iovec iov;
	va_list mine, again;
	int r, n, e = errno;

	va_copy(mine, ap);
	c.fd = fd;
	c.flag = flag;
	c.err0 = e;
	c.fmt = fmt;
	c.ap = &mine;
	th = shim_watching(fd) && shim_depth == 0 ? shim_thread_get() : NULL;
	if (!th) {
		r = (int)shim_sys_dprintf(&c);
		va_end(mine);
		return r;
	}
	va_copy(again, mine);
	n = vsnprintf(th->fmt, sizeof(th->fmt), fmt, again);
	va_end(again);
	errno = e;
	if (n < 0 || (size_t)n >= sizeof(th->fmt)) {
		/* too long to see again: written, its lines counted lost */
		r = (int)shim_sys_dprintf(&c);
		e = errno;
		if (r > 0) {
			shim_lost(RING_LOST_LONG, 1);
			shim_stream_mark_uncertain(fd);
		}
		errno = e;
		va_end(mine);
		return r;
	}
	/* the bytes go in th->fmt: the write path uses th->out and th->gather, not fmt */
	iov.iov_base = th->fmt;
	iov.iov_len = (size_t)n;
	r = (int)shim_stream_write(fd, &iov, 1, shim_sys_dprintf, &c);
	if (r < 0) {
		/* vdprintf failed after writing an unknown part */
		e = errno;
		shim_stream_mark_uncertain(fd);
		errno = e;
	}
	va_end(mine);
	return r;
}

SHIM_API int vdprintf(int fd, const char *fmt, va_list ap)
{
	return shim_vdprintf(fd, -1, fmt, ap);
}

SHIM_API int dprintf(int fd, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = shim_vdprintf(fd, -1, fmt, ap);
	va_end(ap);
	return r;
}

SHIM_API int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap)
{
	return shim_vdprintf(fd, flag < 0 ? 0 : flag, fmt, ap);
}

SHIM_API int __dprintf_chk(int fd, int flag, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = shim_vdprintf(fd, flag < 0 ? 0 : flag, fmt, ap);
	va_end(ap);
	return r;
}

/* --- calls that flush ------------------------------------------------------- */

enum { SHIM_F_FFLUSH, SHIM_F_FFLUSH_U, SHIM_F_FSEEK, SHIM_F_FSEEKO, SHIM_F_FSEEKO64, SHIM_F_FSETPOS,
       SHIM_F_FSETPOS64, SHIM_F_REWIND, SHIM_F_SETVBUF, SHIM_F_SETBUF, SHIM_F_SETBUFFER,
       SHIM_F_SETLINEBUF };

struct shim_fctx {
	int which;
	long off;
	off_t offo;
	int whence;
	const void *pos;
	char *buf;
	int mode;
	size_t size;
};

static long shim_run_flush(FILE *fp, void *ctx, size_t *total)
{
	struct shim_fctx *c = ctx;

	*total = 0;
	switch (c->which) {
	case SHIM_F_FFLUSH: SHIM_NEED(fflush); return shim_real.fflush(fp);
	case SHIM_F_FFLUSH_U: SHIM_NEED(fflush_unlocked); return shim_real.fflush_unlocked(fp);
	case SHIM_F_FSEEK: SHIM_NEED(fseek); return shim_real.fseek(fp, c->off, c->whence);
	case SHIM_F_FSEEKO: SHIM_NEED(fseeko); return shim_real.fseeko(fp, c->offo, c->whence);
	case SHIM_F_FSEEKO64: SHIM_NEED(fseeko64); return shim_real.fseeko64(fp, c->offo, c->whence);
	case SHIM_F_FSETPOS: SHIM_NEED(fsetpos); return shim_real.fsetpos(fp, (const fpos_t *)c->pos);
	case SHIM_F_FSETPOS64: SHIM_NEED(fsetpos64); return shim_real.fsetpos64(fp, (const fpos64_t *)c->pos);
	case SHIM_F_REWIND: SHIM_NEED(rewind); shim_real.rewind(fp); return 0;
	case SHIM_F_SETVBUF: SHIM_NEED(setvbuf); return shim_real.setvbuf(fp, c->buf, c->mode, c->size);
	case SHIM_F_SETBUF: SHIM_NEED(setbuf); shim_real.setbuf(fp, c->buf); return 0;
	case SHIM_F_SETBUFFER: SHIM_NEED(setbuffer); shim_real.setbuffer(fp, c->buf, c->size); return 0;
	default: SHIM_NEED(setlinebuf); shim_real.setlinebuf(fp); return 0;
	}
}

static long shim_flush_call(FILE *fp, struct shim_fctx *c)
{
	struct shim_handed h;

	memset(&h, 0, sizeof(h));
	return shim_around(fp, &h, shim_run_flush, c);
}

/* The tracked streams and stdout and stderr, each flushed through the accounted path. */
static void shim_flush_each(void)
{
	struct shim_fctx c = { .which = SHIM_F_FFLUSH };
	int i;

	for (i = 0; i < SHIM_FILES; i++) {
		FILE *fp = atomic_load(&shim_files[i].fp);
		if (fp && fp != stdout && fp != stderr)
			shim_flush_call(fp, &c);
	}
	shim_flush_call(stdout, &c);
	shim_flush_call(stderr, &c);
}

/* fflush or fflush_unlocked (which), of fp or of every stream (NULL). */
static int shim_fflush(FILE *fp, int which)
{
	struct shim_fctx c = { .which = which };
	size_t total;

	if (!fp) {
		/* every stream: the watched ones one by one, accounted, then the rest */
		if (shim_on && shim_depth == 0)
			shim_flush_each();
		return (int)shim_run_flush(NULL, &c, &total);
	}
	return (int)shim_flush_call(fp, &c);
}

SHIM_API int fflush(FILE *fp)
{
	return shim_fflush(fp, SHIM_F_FFLUSH);
}

SHIM_API int fflush_unlocked(FILE *fp)
{
	return shim_fflush(fp, SHIM_F_FFLUSH_U);
}

SHIM_API int fseek(FILE *fp, long off, int whence)
{
	struct shim_fctx c = { .which = SHIM_F_FSEEK, .off = off, .whence = whence };
	return (int)shim_flush_call(fp, &c);
}

SHIM_API int fseeko(FILE *fp, off_t off, int whence)
{
	struct shim_fctx c = { .which = SHIM_F_FSEEKO, .offo = off, .whence = whence };
	return (int)shim_flush_call(fp, &c);
}

SHIM_API int fseeko64(FILE *fp, off_t off, int whence)
{
	struct shim_fctx c = { .which = SHIM_F_FSEEKO64, .offo = off, .whence = whence };
	return (int)shim_flush_call(fp, &c);
}

SHIM_API int fsetpos(FILE *fp, const fpos_t *pos)
{
	struct shim_fctx c = { .which = SHIM_F_FSETPOS, .pos = pos };
	return (int)shim_flush_call(fp, &c);
}

SHIM_API int fsetpos64(FILE *fp, const fpos64_t *pos)
{
	struct shim_fctx c = { .which = SHIM_F_FSETPOS64, .pos = pos };
	return (int)shim_flush_call(fp, &c);
}

SHIM_API void rewind(FILE *fp)
{
	struct shim_fctx c = { .which = SHIM_F_REWIND };
	shim_flush_call(fp, &c);
}

SHIM_API int setvbuf(FILE *fp, char *buf, int mode, size_t size)
{
	struct shim_fctx c = { .which = SHIM_F_SETVBUF, .buf = buf, .mode = mode, .size = size };
	return (int)shim_flush_call(fp, &c);
}

SHIM_API void setbuf(FILE *fp, char *buf)
{
	struct shim_fctx c = { .which = SHIM_F_SETBUF, .buf = buf };
	shim_flush_call(fp, &c);
}

SHIM_API void setbuffer(FILE *fp, char *buf, size_t size)
{
	struct shim_fctx c = { .which = SHIM_F_SETBUFFER, .buf = buf, .size = size };
	shim_flush_call(fp, &c);
}

SHIM_API void setlinebuf(FILE *fp)
{
	struct shim_fctx c = { .which = SHIM_F_SETLINEBUF };
	shim_flush_call(fp, &c);
}

/*
 * A stream about to be closed or reopened: flushed first, accounted, so
 * that nothing is written inside the real call but the close. A flush
 * error the real call would have reported is reported all the same.
 */
static int shim_preflush(FILE *fp, int *err)
{
	struct shim_fctx c = { .which = SHIM_F_FFLUSH };
	int fd = shim_file_fd(fp);

	*err = 0;
	if (!fp || !shim_watching(fd) || shim_depth > 0 || fp->_mode > 0)
		return 0;
	if (shim_pending(fp) && shim_flush_call(fp, &c) != 0)
		*err = errno ? errno : EIO;
	return 1;
}

static void shim_forget(FILE *fp)
{
	int i;

	for (i = 0; i < SHIM_FILES; i++)
		if (atomic_load(&shim_files[i].fp) == fp)
			shim_file_drop(&shim_files[i]);
}

SHIM_API int fclose(FILE *fp)
{
	int fd = shim_file_fd(fp), err, tracked, r;

	SHIM_NEED(fclose);
	tracked = shim_on && fp ? shim_preflush(fp, &err) : 0;
	if (shim_on && fp) {
		if (tracked)
			shim_forget(fp);
		if (shim_globbing && !shim_foreign())
			shim_unwatch(fd);
	}
	r = shim_real.fclose(fp);
	if (tracked && err && r == 0) {
		errno = err;
		r = EOF;
	}
	return r;
}

SHIM_API int fcloseall(void)
{
	int i;

	SHIM_NEED(fcloseall);
	if (shim_on && shim_depth == 0) {
		shim_flush_each();
		for (i = 0; i < SHIM_FILES; i++)
			if (atomic_load(&shim_files[i].fp))
				shim_file_drop(&shim_files[i]);
	}
	return shim_real.fcloseall();
}

static FILE *shim_freopen(const char *path, const char *mode, FILE *fp, int is64)
{
	int fd = shim_file_fd(fp), err;
	FILE *r;

	if (shim_on && fp && shim_preflush(fp, &err))
		shim_forget(fp);
	if (shim_on && fp && shim_globbing && !shim_foreign())
		shim_unwatch(fd);
	if (is64) {
		SHIM_NEED(freopen64);
		r = shim_real.freopen64(path, mode, fp);
	} else {
		SHIM_NEED(freopen);
		r = shim_real.freopen(path, mode, fp);
	}
	if (r && shim_globbing && path && mode && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+'))) {
		int e = errno;
		shim_watch_path(shim_file_fd(r), path, 1 /* O_WRONLY */);
		errno = e;
	}
	return r;
}

SHIM_API FILE *freopen(const char *path, const char *mode, FILE *fp)
{
	return shim_freopen(path, mode, fp, 0);
}

SHIM_API FILE *freopen64(const char *path, const char *mode, FILE *fp)
{
	return shim_freopen(path, mode, fp, 1);
}

/* --- glibc printing that no wrapper sees ----------------------------------- */

/*
 * perror, err, warn, error and psignal print to stderr from inside glibc
 * (__fxprintf): their line is not seen. Each is counted, so that a capture
 * never looks complete when one was printed.
 */
#define SHIM_UNSEEN(ret, name, params, args, nret)                            \
	SHIM_API ret name params                                              \
	{                                                                     \
		static ret (*real) params;                                    \
		if (!real)                                                    \
			real = (ret (*) params)dlsym(RTLD_NEXT, #name);       \
		if (shim_watching(2))                                         \
			shim_lost(RING_LOST_STDIO_WIDE, 1);                   \
		nret real args;                                               \
	}

#include <dlfcn.h>
#include <signal.h>

SHIM_UNSEEN(void, perror, (const char *s), (s), )
SHIM_UNSEEN(void, psignal, (int sig, const char *s), (sig, s), )

/* --- lifetime -------------------------------------------------------------- */

void shim_stdio_flush_all(void)
{
	if (shim_on && shim_depth == 0)
		shim_flush_each();
}

/* 1 when fp is one of the tracked streams. */
static int shim_tracked(FILE *fp)
{
	int k;

	for (k = 0; k < SHIM_FILES; k++)
		if (atomic_load(&shim_files[k].fp) == fp)
			return 1;
	return 0;
}

uint64_t shim_stdio_pending_lines(void)
{
	uint64_t n = 0;
	FILE *std[2] = { stdout, stderr };
	int i;

	for (i = 0; i < SHIM_FILES + 2; i++) {
		FILE *fp = i < SHIM_FILES ? atomic_load(&shim_files[i].fp) : std[i - SHIM_FILES];
		size_t pend;
		const char *p;

		if (!fp || (i >= SHIM_FILES && shim_tracked(fp)) || !shim_watching(shim_file_fd(fp)))
			continue;
		/* the buffer itself: bytes put there since the last wrapped call count too */
		pend = shim_pending(fp);
		p = fp->_IO_write_base;
		if (pend)
			n += shim_nl(p, pend) + (p[pend - 1] != '\n');
	}
	return n;
}

void shim_stdio_after_fork(int new_area)
{
	int i;

	for (i = 0; i < SHIM_FILES; i++) {
		struct shim_file *f = &shim_files[i];
		FILE *fp = atomic_load(&f->fp);

		if (!fp)
			continue;
		if (new_area)
			f->slot = shim_area ? shim_slot_take(f->fd) : -1;
		shim_file_note(f, fp, f->known);
	}
}

void shim_stdio_track(FILE *fp)
{
	int fd = shim_file_fd(fp);

	if (fp && shim_watching(fd) && shim_area)
		shim_file_of(fp, fd);
}
