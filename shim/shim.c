/*
 * shim.c - libttaudit-shim.so's core: configuration, per-thread line
 * buffers, classification and the capture file. The interposers are in io.c;
 * the design and its limits are in docs/capture.md.
 *
 * Rules for everything reachable from shim_feed(): no malloc, no stdio, no
 * lock (a vfork child shares our memory, a signal handler may interrupt us),
 * errno left as found. Per-thread state is one mmap'd block reached through
 * an initial-exec TLS pointer; shared state is atomics.
 */
#include "shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "banner.h"
#include "classify.h"
#include "envlist.h"
#include "linebuf.h"
#include "caprec.h"

#define SHIM_TLS __attribute__((tls_model("initial-exec")))

#define SHIM_LINE_CAP (64 * 1024)      /* longest line kept whole */
#define SHIM_SLOTS 8                   /* fds with a partial line per thread */
#define SHIM_OUT_CAP (192 * 1024)      /* one record */
#define SHIM_FMT_CAP (64 * 1024)       /* a printf's output, formatted again */
#define SHIM_TAIL_CAP (256 * 1024)     /* the start record's argv/env part */
#define SHIM_REOPEN_NS 1000000000L     /* retry a failed open at most once a second */
#define SHIM_CHECK_NS 1000000000L      /* check the capture fd at least once a second */

struct shim_slot {
	struct linebuf lb;
	char mem[SHIM_LINE_CAP];
};

/*
 * Bytes a signal handler wrote while this thread was inside the shim: they
 * already reached the kernel, so they are kept here and fed, in order, once
 * the interrupted feed is done. Entries are reserved with a CAS on
 * defer_len, which a nested handler cannot tear.
 */
#define SHIM_DEFER_CAP 16384
struct shim_defer_hdr {
	int fd;
	int via_stdio;
	size_t n;
};

struct shim_thread {
	long tid;
	atomic_size_t defer_len;
	_Alignas(16) char defer[SHIM_DEFER_CAP];
	/* Which fd each slot holds a partial line for: fd << 1 | via_stdio, -1
	 * free. Kept apart from the slots' 64 KiB buffers so that looking a slot
	 * up on every write touches one cache line. */
	int key[SHIM_SLOTS];
	unsigned used;                 /* bit i: key[i] >= 0 */
	struct shim_slot slot[SHIM_SLOTS];
	struct banner_scratch sc;
	char fmt[SHIM_FMT_CAP];
	char out[SHIM_OUT_CAP];
};

/* Why lines were lost; the names are the `reason` of lost records. */
enum shim_lost {
	SHIM_LOST_OPEN,     /* capture file could not be opened */
	SHIM_LOST_WRITE,    /* capture file write failed (disk full, ...) */
	SHIM_LOST_LONG,     /* line longer than SHIM_LINE_CAP */
	SHIM_LOST_BUSY,     /* written by a signal handler while the shim was busy */
	SHIM_LOST_NOMEM,    /* no per-thread buffer (mmap failed) */
	SHIM_LOST_SLOTS,    /* too many fds with partial lines in one thread */
	SHIM_LOST__COUNT
};

static const char *const shim_lost_reason[SHIM_LOST__COUNT] = {
	"capture file cannot be opened",
	"capture file write failed",
	"line longer than 65536 bytes",
	"written from signal handlers faster than the shim could keep them",
	"no thread buffer",
	"too many fds with partial lines",
};

struct shim_real shim_real;
atomic_int shim_resolved;
int shim_on;
int shim_globbing;
_Atomic uint64_t shim_watch_bits[SHIM_FD_MAX / 64];
_Atomic uint64_t shim_glob_bits[SHIM_FD_MAX / 64];

static pthread_once_t shim_once = PTHREAD_ONCE_INIT;
static __thread int shim_busy SHIM_TLS;                  /* re-entry guard */
static __thread struct shim_thread *shim_self SHIM_TLS;

/* Configuration, set by the constructor and (pid parts) after fork. */
static struct {
	char base[PATH_MAX];        /* TTAUDIT_CAPTURE */
	char path[PATH_MAX + 32];   /* the file this process writes */
	int per_pid;
	int all_lines;
	char watch[PATH_MAX];       /* TTAUDIT_WATCH */
	struct banner_set *rules;
	struct envlist env;
	char *tail;                 /* start record tail, rendered once */
	size_t tail_len;
	int fd_floor;               /* capture fd is moved at or above this */
	long pid, ppid;
	pthread_key_t key;
	int key_ok;
} cfg;

static atomic_int cap_fd = -1;
static _Atomic uint64_t cap_dev, cap_ino;
static atomic_int cap_opening;
static _Atomic int64_t cap_retry_ns;   /* monotonic ns before which no reopen */
static atomic_int cap_warned;
static atomic_int cap_torn;            /* a failed write may have left half a record */
static atomic_int cap_suspect;         /* the host may have closed/replaced cap_fd */
static _Atomic int64_t cap_check_ns;   /* monotonic ns of the next periodic check */
static _Atomic uint64_t n_lines, n_records;
static _Atomic uint64_t n_lost[SHIM_LOST__COUNT], n_lost_told[SHIM_LOST__COUNT];

/* --- real functions ------------------------------------------------------ */

static void shim_do_resolve(void)
{
#define R(field, name) shim_real.field = (__typeof__(shim_real.field))dlsym(RTLD_NEXT, name)
	R(write, "write");
	R(writev, "writev");
	R(fwrite, "fwrite");
	R(fwrite_unlocked, "fwrite_unlocked");
	R(fputs, "fputs");
	R(fputs_unlocked, "fputs_unlocked");
	R(puts, "puts");
	R(fputc, "fputc");
	R(putc, "putc");
	R(putchar, "putchar");
	R(fputc_unlocked, "fputc_unlocked");
	R(putc_unlocked, "putc_unlocked");
	R(putchar_unlocked, "putchar_unlocked");
	R(io_putc, "_IO_putc");
	R(vfprintf, "vfprintf");
	R(vdprintf, "vdprintf");
	R(vfprintf_chk, "__vfprintf_chk");
	R(vdprintf_chk, "__vdprintf_chk");
	R(open, "open");
	R(open64, "open64");
	R(openat, "openat");
	R(openat64, "openat64");
	R(creat, "creat");
	R(creat64, "creat64");
	R(fopen, "fopen");
	R(fopen64, "fopen64");
	R(fclose, "fclose");
	R(close, "close");
	R(close_range, "close_range");
	R(closefrom, "closefrom");
	R(dup2, "dup2");
	R(dup3, "dup3");
#undef R
	atomic_store(&shim_resolved, 1);
}

void shim_resolve(void)
{
	pthread_once(&shim_once, shim_do_resolve);
}

/* write(2) that works before resolution and never re-enters the shim. */
static ssize_t shim_sys_write(int fd, const void *p, size_t n)
{
	return syscall(SYS_write, fd, p, n);
}

static void shim_warn(const char *a, const char *b, const char *c)
{
	const char *parts[4] = { "ttaudit-shim: ", a, b, c };
	int i;

	for (i = 0; i < 4; i++)
		if (parts[i])
			shim_sys_write(2, parts[i], strlen(parts[i]));
	shim_sys_write(2, "\n", 1);
}

/* --- loss accounting ----------------------------------------------------- */

static void shim_lost(enum shim_lost why, uint64_t count)
{
	atomic_fetch_add_explicit(&n_lost[why], count, memory_order_relaxed);
}

static uint64_t shim_count_lines(const void *data, size_t n)
{
	const char *p = data, *end = p + n;
	uint64_t c = 0;

	while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
		c++;
		p++;
	}
	return c ? c : 1;
}

void shim_lost_busy(const void *data, size_t n)
{
	shim_lost(SHIM_LOST_BUSY, shim_count_lines(data, n));
}

/* --- the capture file ---------------------------------------------------- */

static const char *shim_errstr(int e)
{
	const char *s = strerrordesc_np(e);   /* untranslated, async-signal-safe */

	return s ? s : "unknown error";
}

/*
 * Opens the capture file and moves the fd high, out of the range a host
 * expects open() to return, so that a host closing or reusing low fds is
 * less likely to meet it. Returns the fd or -1 (errno set).
 */
static int shim_open_capture(void)
{
	int fd, hi;
	struct stat st;

	fd = (int)syscall(SYS_openat, AT_FDCWD, cfg.path,
			  O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	if (fd < cfg.fd_floor) {
		hi = fcntl(fd, F_DUPFD_CLOEXEC, cfg.fd_floor);
		if (hi >= 0) {
			syscall(SYS_close, fd);
			fd = hi;
		}
	}
	if (fstat(fd, &st) == 0) {
		atomic_store(&cap_dev, (uint64_t)st.st_dev);
		atomic_store(&cap_ino, (uint64_t)st.st_ino);
	}
	return fd;
}

/*
 * The capture fd, checked to still be our file: the host may have closed it
 * (close_range in a child, a loop over all fds) or put another file on its
 * number (dup2). Then the file is opened again; the old number belongs to
 * the host now and is left alone. -1 when there is no usable capture file.
 */
static int shim_capture_fd(const struct timespec *now)
{
	int fd = atomic_load(&cap_fd), e, zero = 0;
	int64_t ns = (int64_t)now->tv_sec * 1000000000 + now->tv_nsec;
	struct stat st;

	/*
	 * fstat only when the host touched our number through a wrapped call
	 * (close, close_range, closefrom, dup2, dup3) or once a second, for
	 * hosts that close fds with raw syscalls: a check per record would cost
	 * more than the record.
	 */
	if (fd >= 0 && !atomic_load_explicit(&cap_suspect, memory_order_relaxed) &&
	    ns < atomic_load_explicit(&cap_check_ns, memory_order_relaxed))
		return fd;
	atomic_store(&cap_suspect, 0);
	atomic_store(&cap_check_ns, ns + SHIM_CHECK_NS);
	if (fd >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_ino == atomic_load(&cap_ino) &&
	    (uint64_t)st.st_dev == atomic_load(&cap_dev))
		return fd;
	if (fd < 0 && ns < atomic_load(&cap_retry_ns))
		return -1;
	/* One thread reopens; the others count their line lost meanwhile. */
	if (!atomic_compare_exchange_strong(&cap_opening, &zero, 1))
		return -1;
	fd = shim_open_capture();
	e = errno;
	atomic_store(&cap_fd, fd);
	if (fd < 0) {
		atomic_store(&cap_retry_ns, ns + SHIM_REOPEN_NS);
		if (!atomic_exchange(&cap_warned, 1))
			shim_warn(cfg.path, ": cannot open capture file: ", shim_errstr(e));
	}
	atomic_store(&cap_opening, 0);
	return fd;
}

static int shim_write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t r = shim_sys_write(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			errno = EIO;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Writes a lost record for every reason with losses not yet told. */
static void shim_tell_lost(int fd)
{
	int i;

	for (i = 0; i < SHIM_LOST__COUNT; i++) {
		uint64_t total = atomic_load_explicit(&n_lost[i], memory_order_relaxed);
		uint64_t told = atomic_load_explicit(&n_lost_told[i], memory_order_relaxed);
		struct caprec_head h;
		char buf[256];
		size_t len;

		if (total == told ||
		    !atomic_compare_exchange_strong(&n_lost_told[i], &told, total))
			continue;
		caprec_head_now(&h);
		h.pid = cfg.pid;
		h.tid = 0;
		h.fd = -1;
		len = caprec_lost(buf, sizeof(buf), &h, total - told, shim_lost_reason[i]);
		if (!len || shim_write_all(fd, buf, len))
			atomic_fetch_sub(&n_lost_told[i], total - told);
	}
}

/*
 * One record, one write(): O_APPEND keeps records of many processes whole.
 * `now` is the record's monotonic time (the fd check reuses it).
 */
static void shim_emit(const char *rec, size_t len, const struct timespec *now)
{
	int fd = shim_capture_fd(now), rc, e;

	if (fd < 0) {
		shim_lost(SHIM_LOST_OPEN, 1);
		return;
	}
	/* A record cut short by a failed write is ended first, so that it
	 * costs one malformed line and not the record after it too. */
	if (atomic_load_explicit(&cap_torn, memory_order_relaxed) && !shim_write_all(fd, "\n", 1))
		atomic_store(&cap_torn, 0);
	shim_tell_lost(fd);
	rc = shim_write_all(fd, rec, len);
	if (rc && errno == EBADF) {
		/* closed behind our back by a raw syscall: reopen once */
		atomic_store(&cap_suspect, 1);
		fd = shim_capture_fd(now);
		rc = fd < 0 ? -1 : shim_write_all(fd, rec, len);
	}
	if (rc) {
		e = errno;
		atomic_store(&cap_torn, 1);
		shim_lost(SHIM_LOST_WRITE, 1);
		if (!atomic_exchange(&cap_warned, 1))
			shim_warn(cfg.path, ": cannot write capture file: ", shim_errstr(e));
		return;
	}
	atomic_fetch_add_explicit(&n_records, 1, memory_order_relaxed);
}

/* --- per-thread state ---------------------------------------------------- */

static void shim_thread_reset(struct shim_thread *th)
{
	int i;

	for (i = 0; i < SHIM_SLOTS; i++) {
		th->key[i] = -1;
		linebuf_init(&th->slot[i].lb, th->slot[i].mem, SHIM_LINE_CAP);
	}
	th->used = 0;
	atomic_store(&th->defer_len, 0);
	th->tid = (long)syscall(SYS_gettid);
}

static struct shim_thread *shim_thread_get(void)
{
	struct shim_thread *th = shim_self;
	void *p;

	if (th)
		return th;
	p = mmap(NULL, sizeof(*th), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	th = p;
	shim_thread_reset(th);
	banner_scratch_init(&th->sc);
	shim_self = th;
	if (cfg.key_ok)
		pthread_setspecific(cfg.key, th);
	return th;
}

struct shim_line_ctx {
	struct shim_thread *th;
	int fd;
};

static void shim_on_line(void *ctx_, const char *line, size_t n, int overlong)
{
	struct shim_line_ctx *ctx = ctx_;
	struct shim_thread *th = ctx->th;
	struct classify_result res;
	struct caprec_head h;
	size_t len;

	atomic_fetch_add_explicit(&n_lines, 1, memory_order_relaxed);
	if (overlong) {
		shim_lost(SHIM_LOST_LONG, 1);
		return;
	}
	classify_line(line, n, cfg.rules, &th->sc, &res);
	if (res.kind == CLASSIFY_OTHER && !cfg.all_lines)
		return;
	caprec_head_now(&h);
	h.pid = cfg.pid;
	h.tid = th->tid;
	h.fd = ctx->fd;
	if (res.kind == CLASSIFY_AUDIT)
		len = caprec_audit(th->out, sizeof(th->out), &h, res.obj, res.obj_len);
	else if (res.kind == CLASSIFY_BANNER)
		len = caprec_banner(th->out, sizeof(th->out), &h,
				    banner_set_name(cfg.rules, (size_t)res.rule), line, n);
	else
		len = caprec_line(th->out, sizeof(th->out), &h, line, n);
	if (!len) {
		shim_lost(SHIM_LOST_LONG, 1);
		return;
	}
	shim_emit(th->out, len, &h.mono);
}

/*
 * The slot index for fd's partial line (taking a free one), or -1. Most
 * writes end their line, so usually no slot is in use and this is one test.
 */
static int shim_slot_for(struct shim_thread *th, int fd, int via_stdio)
{
	int i, key = fd << 1 | (via_stdio ? 1 : 0);
	unsigned used = th->used, m;

	for (m = used; m; m &= m - 1)
		if (th->key[i = __builtin_ctz(m)] == key)
			return i;
	if (used == (1u << SHIM_SLOTS) - 1)
		return -1;
	i = __builtin_ctz(~used);
	th->key[i] = key;
	th->used = used | 1u << i;
	linebuf_reset(&th->slot[i].lb);
	return i;
}

static void shim_slot_free(struct shim_thread *th, int i)
{
	th->key[i] = -1;
	th->used &= ~(1u << i);
}

static void shim_feed_locked(struct shim_thread *th, int fd, int via_stdio, const void *data,
			     size_t n)
{
	int i = shim_slot_for(th, fd, via_stdio);
	struct shim_line_ctx ctx = { th, fd };

	if (i < 0) {
		shim_lost(SHIM_LOST_SLOTS, shim_count_lines(data, n));
		return;
	}
	linebuf_feed(&th->slot[i].lb, data, n, shim_on_line, &ctx);
	if (!linebuf_pending(&th->slot[i].lb))
		shim_slot_free(th, i);
}

/* Called with shim_busy set: keeps bytes for the interrupted feed to process. */
static void shim_defer(int fd, int via_stdio, const void *data, size_t n)
{
	struct shim_thread *th = shim_self;
	struct shim_defer_hdr h = { fd, via_stdio, n };
	size_t need = (sizeof(h) + n + 15) & ~(size_t)15, old;

	if (!th) {
		shim_lost_busy(data, n);
		return;
	}
	old = atomic_load(&th->defer_len);
	do {
		if (need > SHIM_DEFER_CAP - old) {
			shim_lost_busy(data, n);
			return;
		}
	} while (!atomic_compare_exchange_weak(&th->defer_len, &old, old + need));
	memcpy(th->defer + old, &h, sizeof(h));
	memcpy(th->defer + old + sizeof(h), data, n);
}

/* Feeds what handlers deferred, including what they add meanwhile. */
static void shim_drain(struct shim_thread *th)
{
	size_t i = 0;

	if (!atomic_load_explicit(&th->defer_len, memory_order_relaxed))
		return;   /* the usual case: no handler wrote */
	for (;;) {
		size_t end = atomic_load(&th->defer_len);

		while (i < end) {
			struct shim_defer_hdr h;
			memcpy(&h, th->defer + i, sizeof(h));
			shim_feed_locked(th, h.fd, h.via_stdio, th->defer + i + sizeof(h), h.n);
			i += (sizeof(h) + h.n + 15) & ~(size_t)15;
		}
		size_t expect = i;   /* a failed CAS overwrites it; i must stay */

		if (!i || atomic_compare_exchange_strong(&th->defer_len, &expect, 0))
			return;
	}
}

int shim_begin(void)
{
	if (shim_busy)
		return 0;
	shim_busy = 1;
	/* A handler that wrote just as the last feed was ending left its line
	 * queued: it came before this write, so it goes first. */
	if (shim_self && atomic_load_explicit(&shim_self->defer_len, memory_order_relaxed)) {
		int e = errno;
		shim_drain(shim_self);
		errno = e;
	}
	return 1;
}

void shim_end(int owner, int fd, const void *data, size_t n)
{
	struct shim_thread *th;
	int e = errno;

	if (!owner) {
		if (n)
			shim_defer(fd, 0, data, n);
		errno = e;
		return;
	}
	th = shim_thread_get();
	if (th) {
		if (n)
			shim_feed_locked(th, fd, 0, data, n);
		shim_drain(th);
	} else if (n) {
		shim_lost(SHIM_LOST_NOMEM, shim_count_lines(data, n));
	}
	shim_busy = 0;
	errno = e;
}

void shim_end_iov(int owner, int fd, const struct iovec *iov, int cnt, size_t n)
{
	struct shim_thread *th = owner ? shim_thread_get() : NULL;
	int e = errno, i;

	for (i = 0; i < cnt && n; i++) {
		size_t k = iov[i].iov_len < n ? iov[i].iov_len : n;
		n -= k;
		if (!k)
			continue;
		if (!owner)
			shim_defer(fd, 0, iov[i].iov_base, k);
		else if (th)
			shim_feed_locked(th, fd, 0, iov[i].iov_base, k);
		else
			shim_lost(SHIM_LOST_NOMEM, shim_count_lines(iov[i].iov_base, k));
	}
	if (owner) {
		if (th)
			shim_drain(th);
		shim_busy = 0;
	}
	errno = e;
}

void shim_feed(int fd, int via_stdio, const void *data, size_t n)
{
	struct shim_thread *th;
	int e = errno;

	if (shim_busy) {
		shim_defer(fd, via_stdio, data, n);
		errno = e;
		return;
	}
	shim_busy = 1;
	th = shim_thread_get();
	if (th) {
		shim_feed_locked(th, fd, via_stdio, data, n);
		shim_drain(th);
	} else {
		shim_lost(SHIM_LOST_NOMEM, shim_count_lines(data, n));
	}
	shim_busy = 0;
	errno = e;
}

char *shim_fmt_begin(size_t *cap)
{
	struct shim_thread *th;

	if (shim_busy)
		return NULL;
	shim_busy = 1;
	th = shim_thread_get();
	if (!th) {
		shim_busy = 0;
		return NULL;
	}
	*cap = sizeof(th->fmt);
	return th->fmt;
}

void shim_fmt_done(int fd, const char *buf, size_t n, int cut)
{
	int e = errno;

	shim_feed_locked(shim_self, fd, 1, buf, n);
	if (cut) {
		/* The rest of the output never arrives here: forget the cut line. */
		int i = shim_slot_for(shim_self, fd, 1);
		if (i >= 0) {
			linebuf_reset(&shim_self->slot[i].lb);
			shim_slot_free(shim_self, i);
		}
		shim_lost(SHIM_LOST_LONG, 1);
	}
	shim_drain(shim_self);
	shim_busy = 0;
	errno = e;
}

/* Lines a thread leaves unfinished are complete as far as it is concerned. */
static void shim_thread_flush(struct shim_thread *th)
{
	int i;

	shim_drain(th);
	for (i = 0; i < SHIM_SLOTS; i++) {
		struct shim_line_ctx ctx = { th, th->key[i] >> 1 };
		if (th->key[i] < 0)
			continue;
		linebuf_flush(&th->slot[i].lb, shim_on_line, &ctx);
		shim_slot_free(th, i);
	}
}

static void shim_thread_exit(void *p)
{
	struct shim_thread *th = p;

	if (!th)
		return;
	shim_busy = 1;
	shim_thread_flush(th);
	shim_self = NULL;
	munmap(th, sizeof(*th));
	shim_busy = 0;
}

/* --- watched files ------------------------------------------------------- */

static void shim_bit_set(_Atomic uint64_t *bits, int fd, int on)
{
	uint64_t m = (uint64_t)1 << (fd & 63);

	if (on)
		atomic_fetch_or(&bits[fd >> 6], m);
	else
		atomic_fetch_and(&bits[fd >> 6], ~m);
}

void shim_watch_path(int fd, const char *path, int flags)
{
	char abs[PATH_MAX * 2];
	size_t n;
	int hit;

	if (!shim_on || (unsigned)fd >= SHIM_FD_MAX || (flags & O_ACCMODE) == O_RDONLY)
		return;
	hit = envlist_glob(cfg.watch, path, strlen(path));
	if (!hit && path[0] != '/' && getcwd(abs, PATH_MAX)) {
		n = strlen(abs);
		if (n + 1 + strlen(path) < sizeof(abs)) {
			abs[n] = '/';
			strcpy(abs + n + 1, path);
			hit = envlist_glob(cfg.watch, abs, strlen(abs));
		}
	}
	if (hit) {
		shim_bit_set(shim_glob_bits, fd, 1);
		shim_bit_set(shim_watch_bits, fd, 1);
	}
}

void shim_unwatch(int fd)
{
	if (!shim_bit(shim_glob_bits, fd))
		return;
	shim_bit_set(shim_glob_bits, fd, 0);
	shim_bit_set(shim_watch_bits, fd, 0);
}

void shim_fd_touched(int lo, int hi)
{
	int fd = atomic_load_explicit(&cap_fd, memory_order_relaxed);

	if (fd >= 0 && fd >= lo && fd <= hi)
		atomic_store(&cap_suspect, 1);
}

/* --- start, fork, end ---------------------------------------------------- */

static void shim_set_path(void)
{
	size_t n = strlen(cfg.base);
	char num[24];
	int i = (int)sizeof(num);
	long v = cfg.pid;

	memcpy(cfg.path, cfg.base, n + 1);
	if (!cfg.per_pid)
		return;
	num[--i] = '\0';
	do {
		num[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	num[--i] = '.';
	memcpy(cfg.path + n, num + i, sizeof(num) - (size_t)i);
}

static void shim_write_start(void)
{
	struct shim_thread *th = shim_thread_get();
	struct caprec_head h;
	size_t len;

	if (!th || !cfg.tail)
		return;
	caprec_head_now(&h);
	h.pid = cfg.pid;
	h.tid = 0;
	h.fd = -1;
	len = caprec_start(th->out, sizeof(th->out), &h, cfg.ppid, cfg.tail, cfg.tail_len);
	if (len)
		shim_emit(th->out, len, &h.mono);
}

/*
 * A fork child is a new process for the capture: new pid, its own counts,
 * its own file with TTAUDIT_PER_PID, and a start record. The forking
 * thread's partial lines belong to the parent, which will finish them.
 */
static void shim_atfork_child(void)
{
	int i, fd;

	if (!shim_on)
		return;
	cfg.pid = (long)getpid();
	cfg.ppid = (long)getppid();
	for (i = 0; i < SHIM_LOST__COUNT; i++) {
		atomic_store(&n_lost[i], 0);
		atomic_store(&n_lost_told[i], 0);
	}
	atomic_store(&n_lines, 0);
	atomic_store(&n_records, 0);
	atomic_store(&cap_opening, 0);
	if (shim_self)
		shim_thread_reset(shim_self);
	if (cfg.per_pid) {
		fd = atomic_exchange(&cap_fd, -1);
		if (fd >= 0)
			syscall(SYS_close, fd);
		atomic_store(&cap_retry_ns, 0);
		shim_set_path();
	}
	shim_busy = 1;
	shim_write_start();
	shim_busy = 0;
}

static void shim_load_rules(const char *path)
{
	struct status_info si;
	char msg[sizeof(si.msg) + sizeof(si.file) + 64];

	status_info_clear(&si);
	if (path && *path) {
		if (banner_set_load(path, &cfg.rules, &si) == STATUS_OK)
			return;
		shim_warn(status_info_format(&si, msg, sizeof(msg)), "; using the built-in banner rules",
			  NULL);
	}
	cfg.rules = banner_set_default();
}

static void shim_render_tail(int argc, char **argv, char **envp)
{
	char exe[PATH_MAX], host[256];
	ssize_t n;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	if (gethostname(host, sizeof(host)))
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	cfg.tail = malloc(SHIM_TAIL_CAP);
	if (!cfg.tail)
		return;
	cfg.tail_len = caprec_start_tail(cfg.tail, SHIM_TAIL_CAP, argv, argc, exe, host, envp,
					 &cfg.env);
	if (!cfg.tail_len) {
		free(cfg.tail);
		cfg.tail = NULL;
	}
}

static int shim_env_flag(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0") != 0;
}

/*
 * glibc passes argc, argv and envp to constructors of preloaded objects:
 * the start record takes argv and the environment from here, as the
 * process really has them.
 */
__attribute__((constructor)) static void shim_init(int argc, char **argv, char **envp)
{
	const char *v;
	struct rlimit rl;
	struct status_info si;

	shim_resolve();
	v = getenv("TTAUDIT_CAPTURE");
	if (!v || !*v || strlen(v) >= sizeof(cfg.base))
		return;
	strcpy(cfg.base, v);
	cfg.per_pid = shim_env_flag("TTAUDIT_PER_PID");
	cfg.all_lines = shim_env_flag("TTAUDIT_ALL_LINES");
	v = getenv("TTAUDIT_WATCH");
	if (v && *v && strlen(v) < sizeof(cfg.watch)) {
		strcpy(cfg.watch, v);
		shim_globbing = 1;
	}
	envlist_init(&cfg.env);
	v = getenv("TTAUDIT_ENV");
	status_info_clear(&si);
	if (envlist_add(&cfg.env, v ? v : ENVLIST_DEFAULT, &si) != STATUS_OK)
		shim_warn("TTAUDIT_ENV: ", si.msg, NULL);
	shim_load_rules(getenv("TTAUDIT_RULES"));
	cfg.fd_floor = 3;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= 64)
		cfg.fd_floor = rl.rlim_cur > 1024 ? 1000 : (int)rl.rlim_cur - 24;
	cfg.pid = (long)getpid();
	cfg.ppid = (long)getppid();
	shim_set_path();
	shim_render_tail(argc, argv, envp);
	cfg.key_ok = pthread_key_create(&cfg.key, shim_thread_exit) == 0;
	pthread_atfork(NULL, NULL, shim_atfork_child);
	shim_bit_set(shim_watch_bits, 1, 1);
	shim_bit_set(shim_watch_bits, 2, 1);
	shim_on = 1;
	shim_busy = 1;
	shim_write_start();
	shim_busy = 0;
}

/* At exit(): finish this thread's partial lines and say how it went. */
__attribute__((destructor)) static void shim_fini(void)
{
	struct shim_thread *th;
	struct caprec_head h;
	uint64_t lost = 0;
	size_t len;
	int i, e = errno;

	if (!shim_on || shim_busy)
		return;
	shim_busy = 1;
	th = shim_thread_get();
	if (th) {
		shim_thread_flush(th);
		caprec_head_now(&h);
		h.pid = cfg.pid;
		h.tid = 0;
		h.fd = -1;
		for (i = 0; i < SHIM_LOST__COUNT; i++)
			lost += atomic_load(&n_lost[i]);
		{
			struct caprec_end e = { "exit", -1, 0, "shim", 1, atomic_load(&n_lines), lost };
			len = caprec_end(th->out, sizeof(th->out), &h, &e);
		}
		if (len) {
			int fd = shim_capture_fd(&h.mono);
			if (fd >= 0) {
				shim_tell_lost(fd);
				shim_write_all(fd, th->out, len);
			}
		}
	}
	shim_busy = 0;
	errno = e;
}
