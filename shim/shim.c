/*
 * shim.c - libttaudit-shim.so's core: configuration, the area, where
 * records go, per-thread blocks, fork, and the start and end records. The
 * parts are listed in shim.h; the design and its limits in docs/capture.md.
 *
 * Records go one of two ways. Under `ttaudit capture` (TTAUDIT_RINGS set)
 * the process maps a ring file of its own, MAP_SHARED, and every record is
 * a few stores into it: no system call, and what is in it survives the
 * process's SIGKILL, because `ttaudit capture` reads it, waits for the
 * process to end and says what the process left half done. Without a
 * reader (a shim loaded by other means, TTAUDIT_CAPTURE alone) each record
 * is one write() to the capture file, opened O_APPEND.
 */
#include "shim/shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture/caprec.h"
#include "capture/classify.h"
#include "capture/envlist.h"
#include "base/procstat.h"

#define SHIM_TAIL_CAP (256 * 1024)     /* the start record's argv/env part */
#define SHIM_REOPEN_NS 1000000000L     /* retry a failed open at most once a second */
#define SHIM_CHECK_NS 1000000000L      /* check the capture fd at least once a second */
#define SHIM_FULL_WAIT_MS 200          /* how long a record waits for room in the ring */

struct shim_real shim_real;
atomic_int shim_resolved;
int shim_on;
int shim_globbing;
_Atomic uint64_t shim_watch_bits[SHIM_FD_MAX / 64];
_Atomic uint64_t shim_glob_bits[SHIM_FD_MAX / 64];
struct ring_hdr *shim_area;
int shim_ring_on;
__thread int shim_depth SHIM_TLS;
__thread pid_t shim_vfork_mark SHIM_TLS;
__thread const struct shim_origin *shim_origin SHIM_TLS;

static pthread_once_t shim_once = PTHREAD_ONCE_INIT;
static void shim_load_rules(const char *path);
static __thread struct shim_thread *shim_self SHIM_TLS;

/* Configuration, set by the constructor and (pid parts) after fork. */
static struct {
	char base[PATH_MAX];        /* TTAUDIT_CAPTURE */
	char path[PATH_MAX + 32];   /* the file this process writes (direct) */
	char rings[PATH_MAX];       /* TTAUDIT_RINGS: the reader's directory */
	char rules_path[PATH_MAX];  /* TTAUDIT_RULES at start-up ("": built-in) */
	char ring_path[PATH_MAX + 64];   /* this image's ring file */
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
	struct ring_ctl *ctl;       /* the reader's control page, or NULL */
	int ringed;                 /* records go to the ring */
	int exit_code;              /* -1: not known */
	int ended;                  /* the end record is written */
} cfg;

static atomic_int cap_fd = -1;
static _Atomic uint64_t cap_dev, cap_ino;
static atomic_int cap_opening;
static _Atomic int64_t cap_retry_ns;   /* monotonic ns before which no reopen */
static atomic_int cap_warned;
static atomic_int cap_torn;            /* a failed write may have left half a record */
static atomic_int cap_suspect;         /* the host may have closed/replaced cap_fd */
static _Atomic int64_t cap_check_ns;   /* monotonic ns of the next periodic check */
static atomic_int lost_untold;         /* some loss has no lost record yet */
static _Atomic uint64_t n_lines;
static atomic_int pend_local_id;       /* ids of pending records kept without a ring */
static atomic_int cap_failed;          /* the reader had stopped writing the file: errno, 0 */
static atomic_int cap_final;           /* ... but the last records (lost, end) go in */

/* Records this thread gathers (the drain) before one write. */
struct shim_batch {
	char *buf;
	size_t cap, len;
	uint64_t n;
};
static __thread struct shim_batch *shim_batch_on SHIM_TLS;
static __thread struct shim_batch shim_batch_mem SHIM_TLS;

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
	R(overflow, "__overflow");
	R(vfprintf, "vfprintf");
	R(vdprintf, "vdprintf");
	R(vfprintf_chk, "__vfprintf_chk");
	R(vdprintf_chk, "__vdprintf_chk");
	R(fflush, "fflush");
	R(fflush_unlocked, "fflush_unlocked");
	R(fseek, "fseek");
	R(fseeko, "fseeko");
	R(fseeko64, "fseeko64");
	R(fsetpos, "fsetpos");
	R(fsetpos64, "fsetpos64");
	R(rewind, "rewind");
	R(setvbuf, "setvbuf");
	R(setbuf, "setbuf");
	R(setbuffer, "setbuffer");
	R(setlinebuf, "setlinebuf");
	R(freopen, "freopen");
	R(freopen64, "freopen64");
	R(fcloseall, "fcloseall");
	R(open, "open");
	R(open64, "open64");
	R(openat, "openat");
	R(openat64, "openat64");
	R(creat, "creat");
	R(creat64, "creat64");
	R(fopen, "fopen");
	R(fopen64, "fopen64");
	R(fdopen, "fdopen");
	R(fclose, "fclose");
	R(close, "close");
	R(close_range, "close_range");
	R(closefrom, "closefrom");
	R(dup2, "dup2");
	R(dup3, "dup3");
	R(exit, "exit");
	R(_exit, "_exit");
	R(_Exit, "_Exit");
	R(quick_exit, "quick_exit");
	R(execve, "execve");
	R(execvp, "execvp");
	R(execvpe, "execvpe");
	R(fexecve, "fexecve");
	R(waitpid, "waitpid");
	R(wait4, "wait4");
	R(waitid, "waitid");
	R(libc_start_main, "__libc_start_main");
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

static const char *shim_errstr(int e)
{
	const char *s = strerrordesc_np(e);   /* untranslated, async-signal-safe */

	return s ? s : "unknown error";
}

uint32_t shim_self_tid(void)
{
	return shim_self ? (uint32_t)shim_self->tid : 0;
}

long shim_pid(void)
{
	return cfg.pid;
}

int shim_foreign(void)
{
	/* glibc does not cache getpid() (since 2.25): this asks the kernel */
	return (long)syscall(SYS_getpid) != cfg.pid;
}

/* --- loss accounting ----------------------------------------------------- */

void shim_lost(enum ring_lost why, uint64_t count)
{
	if (!shim_area || !count)
		return;
	atomic_fetch_add_explicit(&shim_area->lost[why], count, memory_order_relaxed);
	atomic_store_explicit(&lost_untold, 1, memory_order_relaxed);
}

uint64_t shim_count_lines(const void *data, size_t n)
{
	const char *p = data, *end = p + n;
	uint64_t c = 0;

	while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
		c++;
		p++;
	}
	return c ? c : 1;
}

void shim_count_line(void)
{
	atomic_fetch_add_explicit(&n_lines, 1, memory_order_relaxed);
}

static uint64_t shim_lost_total(void)
{
	uint64_t t = 0;
	int i;

	for (i = 0; i < RING_LOST__COUNT; i++)
		t += atomic_load_explicit(&shim_area->lost[i], memory_order_relaxed);
	return t;
}

/* --- the capture file (no reader) --------------------------------------- */

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

/*
 * Under a file size limit (RLIMIT_FSIZE), a write or ftruncate past it
 * raises SIGXFSZ, whose default action ends the process: the shim's own
 * file operations must fail with EFBIG instead, and leave the signal to
 * the host's own writes. Only then is SIGXFSZ blocked around them, and
 * one they raised taken back (a raw sigtimedwait: async-signal-safe).
 */
static int shim_fsize_limited;

struct shim_xfsz {
	sigset_t old;
	int on, was_pending;
};

static void shim_xfsz_begin(struct shim_xfsz *x)
{
	sigset_t one, pend;

	x->on = shim_fsize_limited;
	if (!x->on)
		return;
	sigemptyset(&one);
	sigaddset(&one, SIGXFSZ);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &one, &x->old, 8);
	sigemptyset(&pend);
	syscall(SYS_rt_sigpending, &pend, 8);
	x->was_pending = sigismember(&pend, SIGXFSZ);
}

static void shim_xfsz_end(struct shim_xfsz *x)
{
	int e = errno;

	if (!x->on)
		return;
	if (!x->was_pending) {
		sigset_t one;
		struct timespec zero = { 0, 0 };
		sigemptyset(&one);
		sigaddset(&one, SIGXFSZ);
		syscall(SYS_rt_sigtimedwait, &one, NULL, &zero, 8);
	}
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &x->old, NULL, 8);
	errno = e;
}

static int shim_write_all(int fd, const char *p, size_t n)
{
	struct shim_xfsz x;
	int rc = 0;

	shim_xfsz_begin(&x);
	while (n) {
		ssize_t r = shim_sys_write(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			errno = EIO;
		if (r <= 0) {
			rc = -1;
			break;
		}
		p += r;
		n -= (size_t)r;
	}
	shim_xfsz_end(&x);
	return rc;
}

/*
 * Records [rec, rec+len) (whole lines) to the capture file in one write():
 * O_APPEND keeps records of many processes whole. `count`: how many records
 * that is, for the loss count when it fails.
 */
static int shim_direct_write(const char *rec, size_t len, uint64_t count);

/* 0 when the records are written (or gathered to be), -1 when not (counted lost). */
static int shim_direct(const char *rec, size_t len, uint64_t count)
{
	struct shim_batch *b = shim_batch_on;

	if (atomic_load_explicit(&cap_failed, memory_order_relaxed) &&
	    !atomic_load_explicit(&cap_final, memory_order_relaxed)) {
		/* the file is full or failing: counted, and said in the last records */
		shim_lost(RING_LOST_WRITE, count);
		return -1;
	}
	if (b) {
		if (len > b->cap - b->len) {
			shim_direct_write(b->buf, b->len, b->n);
			b->len = 0;
			b->n = 0;
		}
		if (len <= b->cap) {
			memcpy(b->buf + b->len, rec, len);
			b->len += len;
			b->n += count;
			return 0;
		}
	}
	return shim_direct_write(rec, len, count);
}

void shim_batch_begin(char *buf, size_t cap)
{
	shim_batch_mem.buf = buf;
	shim_batch_mem.cap = cap;
	shim_batch_mem.len = 0;
	shim_batch_mem.n = 0;
	shim_batch_on = &shim_batch_mem;
}

void shim_batch_end(void)
{
	struct shim_batch *b = shim_batch_on;

	shim_batch_on = NULL;
	if (b && b->len)
		shim_direct_write(b->buf, b->len, b->n);
}

void shim_capture_failed(int err)
{
	atomic_store(&cap_failed, err);
}

static int shim_direct_write(const char *rec, size_t len, uint64_t count)
{
	struct timespec now;
	int fd, rc, e;

	clock_gettime(CLOCK_MONOTONIC, &now);
	fd = shim_capture_fd(&now);
	if (fd < 0) {
		shim_lost(RING_LOST_OPEN, count);
		return -1;
	}
	/* A record cut short by a failed write is ended first, so that it
	 * costs one malformed line and not the record after it too. */
	if (atomic_load_explicit(&cap_torn, memory_order_relaxed) && !shim_write_all(fd, "\n", 1))
		atomic_store(&cap_torn, 0);
	rc = shim_write_all(fd, rec, len);
	if (rc && errno == EBADF) {
		/* closed behind our back by a raw syscall: reopen once */
		atomic_store(&cap_suspect, 1);
		fd = shim_capture_fd(&now);
		rc = fd < 0 ? -1 : shim_write_all(fd, rec, len);
	}
	if (rc) {
		e = errno;
		atomic_store(&cap_torn, 1);
		shim_lost(RING_LOST_WRITE, count);
		if (!atomic_exchange(&cap_warned, 1))
			shim_warn(cfg.path, ": cannot write capture file: ", shim_errstr(e));
	}
	return rc ? -1 : 0;
}

/* --- the ring ------------------------------------------------------------ */

/*
 * 1 while the reader that made the ring directory is there: a process
 * that is not a zombie (a killed reader stays one until its parent
 * reaps it, and kill(pid, 0) still succeeds then). errno kept.
 */
static int shim_reader_alive(void)
{
	char path[40], buf[512], *p;
	long pid, v, n;
	int fd, e = errno, alive;

	if (!cfg.ctl)
		return 0;
again:
	pid = (long)cfg.ctl->consumer_pid;
	alive = kill((pid_t)pid, 0) == 0 || errno == EPERM;
	if (alive && pid > 0) {
		/* "/proc/<pid>/stat", built without stdio (snprintf is not async-signal-safe) */
		p = path + sizeof(path);
		*--p = 0;
		memcpy(p -= 5, "/stat", 5);
		v = pid;
		do
			*--p = (char)('0' + v % 10);
		while ((v /= 10) && p > path + 6);
		memcpy(p -= 6, "/proc/", 6);
		fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			char state = 0;

			n = (long)syscall(SYS_read, fd, buf, sizeof(buf));
			syscall(SYS_close, fd);
			if (n > 0 && !procstat_parse(buf, (size_t)n, PROCSTAT_STATE, NULL, &state) &&
			    (state == 'Z' || state == 'X'))
				alive = 0;
		}
	}
	/* a reader that handed over to a background one ends after naming it: look again */
	if (!alive && (long)cfg.ctl->consumer_pid != pid)
		goto again;
	errno = e;
	return alive;
}

/*
 * The reader is gone and this image is done with its ring: the file goes
 * (its pages with it, when unmapped), and the last one out takes the
 * directory and its control file too. Raw system calls only: the end of a
 * process may be an _exit in a vfork child or a signal handler.
 */
static void shim_clean_up_ring(void)
{
	char buf[4096], path[PATH_MAX + 8];
	long n, i;
	int fd, others = 0;

	if (!cfg.ring_path[0] || shim_foreign())
		return;
	syscall(SYS_unlinkat, AT_FDCWD, cfg.ring_path, 0);
	cfg.ring_path[0] = '\0';
	fd = (int)syscall(SYS_openat, AT_FDCWD, cfg.rings, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	while (!others && (n = (long)syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (i = 0; i < n;) {
			unsigned short reclen;
			const char *name = buf + i + 19;   /* struct linux_dirent64: d_ino, d_off, d_reclen, d_type, d_name */
			memcpy(&reclen, buf + i + 16, sizeof(reclen));
			if (strcmp(name, ".") && strcmp(name, "..") && strcmp(name, "ctl"))
				others = 1;
			i += reclen;
		}
	syscall(SYS_close, fd);
	if (others || strlen(cfg.rings) + 5 >= sizeof(path))
		return;
	strcpy(path, cfg.rings);
	strcat(path, "/ctl");
	syscall(SYS_unlinkat, AT_FDCWD, path, 0);
	syscall(SYS_unlinkat, AT_FDCWD, cfg.rings, AT_REMOVEDIR);
}

/* The reader went away (killed): this process drains its ring itself (drain.c). */
static void shim_give_up_ring(void)
{
	shim_take_over();
}

void shim_set_direct(void)
{
	cfg.ringed = 0;
	shim_ring_on = 0;
}

struct ring_ctl *shim_ctl(void)
{
	return cfg.ctl;
}

const char *shim_capture_base(void)
{
	return cfg.base;
}

const char *shim_rings_dir(void)
{
	return cfg.rings;
}

int shim_per_pid(void)
{
	return cfg.per_pid;
}

void shim_count_lines_n(uint64_t n)
{
	atomic_fetch_add_explicit(&n_lines, n, memory_order_relaxed);
}

/*
 * An entry with `len` payload bytes (settle: a settling entry, which may
 * take the room kept for those). When the ring is full the reader is
 * asked to hurry (SIGURG, once per episode) and the writer waits for room
 * up to SHIM_FULL_WAIT_MS; NULL when there is none (count the record lost).
 */
static struct ring_ent *shim_ring_wait(size_t len, int settle)
{
	struct ring_ent *e = NULL;
	int waited = 0, e0;

	if (!cfg.ringed || shim_ring_closed())
		return NULL;
	e0 = errno;
	while (!e && waited < SHIM_FULL_WAIT_MS) {
		uint64_t tail = atomic_load(&shim_area->tail);

		if (!(atomic_fetch_or(&shim_area->state, RING_S_KNOCKED) & RING_S_KNOCKED) && cfg.ctl)
			kill((pid_t)cfg.ctl->consumer_pid, SIGURG);
		if (!shim_reader_alive()) {
			shim_give_up_ring();
			break;
		}
		if (shim_ring_closed())
			break;
		/* the reader wakes waiting writers as it frees room */
		if (ring_wait_room(shim_area, tail, 1) < 0)
			waited++;
		e = settle ? ring_reserve_settle(shim_area) : ring_reserve(shim_area, len);
	}
	atomic_fetch_and(&shim_area->state, ~(uint32_t)RING_S_KNOCKED);
	errno = e0;
	return e;
}

struct ring_ent *shim_ring_reserve(size_t len)
{
	struct ring_ent *e = ring_reserve(shim_area, len);

	return e ? e : shim_ring_wait(len, 0);
}

struct ring_ent *shim_ring_reserve_settle(void)
{
	struct ring_ent *e = ring_reserve_settle(shim_area);

	return e ? e : shim_ring_wait(0, 1);
}

/* Writes a lost record for every reason with losses not yet told. */
static void shim_tell_lost(void)
{
	int i;

	if (!atomic_exchange_explicit(&lost_untold, 0, memory_order_relaxed))
		return;
	for (i = 0; i < RING_LOST__COUNT; i++) {
		uint64_t total = atomic_load_explicit(&shim_area->lost[i], memory_order_relaxed);
		uint64_t told = atomic_load_explicit(&shim_area->lost_told[i], memory_order_relaxed);
		struct caprec_head h;
		char buf[256];
		size_t len;

		if (total == told ||
		    !atomic_compare_exchange_strong(&shim_area->lost_told[i], &told, total))
			continue;
		caprec_head_now(&h);
		h.pid = cfg.pid;
		h.tid = 0;
		h.fd = -1;
		len = caprec_lost(buf, sizeof(buf), &h, total - told, ring_lost_reason[i]);
		if (cfg.ringed && !shim_ring_closed()) {
			struct ring_ent *e = len ? ring_reserve(shim_area, len) : NULL;
			if (e) {
				memcpy((char *)(e + 1), buf, len);
				ring_publish(e, RING_REC, 0, 0, 0, (uint32_t)len);
				continue;
			}
		} else if (len && shim_direct(buf, len, 0) == 0) {
			continue;
		}
		/* not written: tell it with the next record */
		atomic_fetch_sub(&shim_area->lost_told[i], total - told);
		atomic_store(&lost_untold, 1);
	}
}

/*
 * Every 1024th ring record: is the reader still there? If it is gone (killed),
 * records in an unread ring would pile up unseen: write directly instead.
 */
static void shim_check_reader(void)
{
	static atomic_uint n;

	if ((atomic_fetch_add_explicit(&n, 1, memory_order_relaxed) & 1023) == 1023 && !shim_reader_alive())
		shim_give_up_ring();
}

void shim_emit(const char *rec, size_t len, uint16_t flags, uint64_t ref)
{
	if (!shim_area || !len)
		return;
	if (cfg.ringed)
		shim_check_reader();
	if (atomic_load_explicit(&lost_untold, memory_order_relaxed))
		shim_tell_lost();
	if (cfg.ringed) {
		struct ring_ent *e = shim_ring_reserve(len);
		if (e) {
			memcpy((char *)(e + 1), rec, len);
			ring_publish(e, RING_REC, flags, ref, 0, (uint32_t)len);
			return;
		}
		if (cfg.ringed && !shim_ring_closed()) {
			shim_lost(RING_LOST_FULL, 1);
			return;
		}
	}
	shim_direct(rec, len, 1);
}

uint64_t shim_pend(const char *rec, size_t len, int fd)
{
	struct shim_thread *th = shim_self;

	(void)fd;
	/* no reader: kept in the thread's block until the write returns */
	if (!shim_area || !len || !th || th->pend_n == SHIM_PEND_MAX || len > sizeof(th->pendbuf) - th->pend_len)
		return 0;
	if (th->pend_n == 0)
		th->pend_off[0] = 0;
	memcpy(th->pendbuf + th->pend_len, rec, len);
	th->pend_len += len;
	th->pend_n++;
	th->pend_off[th->pend_n] = (uint32_t)th->pend_len;
	return (uint64_t)atomic_fetch_add(&pend_local_id, 1) + 1;
}

void shim_commit(uint64_t first, uint32_t k, uint32_t n, int uncertain, int fd)
{
	struct shim_thread *th = shim_self;
	uint32_t i;

	(void)first;
	if (!shim_area || !n || !th || !th->pend_n)
		return;
	if (atomic_load_explicit(&lost_untold, memory_order_relaxed))
		shim_tell_lost();
	if (k > th->pend_n)
		k = th->pend_n;
	if (!uncertain && k) {
		shim_direct(th->pendbuf, th->pend_off[k], k);
	} else {
		for (i = 0; i < k; i++)
			shim_uncertain(fd, 1, "the order of this line's bytes and a signal handler's was not knowable",
				       th->pendbuf + th->pend_off[i], th->pend_off[i + 1] - th->pend_off[i] - 1);
	}
	th->pend_n = 0;
	th->pend_len = 0;
}

uint64_t shim_risk(int fd, uint32_t lines)
{
	struct ring_ent *e;
	uint64_t id;

	if (!cfg.ringed || !lines)
		return 0;
	e = ring_reserve(shim_area, 0);
	if (!e)
		return 0;
	id = atomic_fetch_add_explicit(&shim_area->next_id, 1, memory_order_relaxed) + 1;
	ring_publish(e, RING_RISK, 0, id, (uint32_t)fd, lines);
	return id;
}

void shim_risk_done(uint64_t id, int fd)
{
	struct ring_ent *e;

	if (!id || !cfg.ringed)
		return;
	(void)fd;
	e = shim_ring_reserve_settle();
	if (e)
		ring_publish(e, RING_COMMIT, 0, id, 0, 0);
	else if (shim_ring_closed())
		shim_drain_commit(id, 0, 0);
}

void shim_uncertain(int fd, uint64_t count, const char *reason, const char *rec, size_t rec_len)
{
	struct shim_thread *th = shim_self;
	struct caprec_head h;
	char small[512];
	char *buf = th ? th->unc : small;
	size_t cap = th ? sizeof(th->unc) : sizeof(small), len;

	caprec_head_now(&h);
	h.pid = cfg.pid;
	h.tid = 0;
	h.fd = fd;
	len = caprec_uncertain(buf, cap, &h, count, reason, rec, rec_len);
	if (!len)
		len = caprec_uncertain(buf, cap, &h, count, reason, NULL, 0);
	shim_emit(buf, len, 0, 0);
}

/* --- per-thread state ---------------------------------------------------- */

struct shim_thread *shim_thread_get(void)
{
	struct shim_thread *th = shim_self;
	void *p;

	if (th)
		return th;
	p = mmap(NULL, sizeof(*th), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	th = p;
	th->tid = (long)syscall(SYS_gettid);
	banner_scratch_init(&th->sc);
	shim_self = th;
	if (cfg.key_ok)
		pthread_setspecific(cfg.key, th);
	return th;
}

static void shim_thread_exit(void *p)
{
	struct shim_thread *th = p;

	if (!th || th != shim_self)
		return;
	shim_self = NULL;
	munmap(th, sizeof(*th));
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
	if (hit && !shim_foreign()) {
		shim_bit_set(shim_glob_bits, fd, 1);
		shim_bit_set(shim_watch_bits, fd, 1);
	}
}

void shim_unwatch(int fd)
{
	if (!shim_bit(shim_glob_bits, fd))
		return;
	shim_stream_close(fd);
	shim_bit_set(shim_glob_bits, fd, 0);
	shim_bit_set(shim_watch_bits, fd, 0);
}

void shim_fd_touched(int lo, int hi)
{
	int fd = atomic_load_explicit(&cap_fd, memory_order_relaxed);

	if (fd >= 0 && fd >= lo && fd <= hi)
		atomic_store(&cap_suspect, 1);
}

/* --- the area ------------------------------------------------------------ */

/* Its start time in clock ticks (proc(5) starttime), 0 when unknown. */
static uint64_t shim_starttime(void)
{
	char buf[1024];
	long long v;
	ssize_t n;
	int fd;

	fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = syscall(SYS_read, fd, buf, sizeof(buf));
	syscall(SYS_close, fd);
	if (n <= 0 || procstat_parse(buf, (size_t)n, PROCSTAT_STARTTIME, &v, NULL) || v < 0)
		return 0;
	return (uint64_t)v;
}

static void shim_u64(char *out, uint64_t v)
{
	char tmp[24];
	int i = (int)sizeof(tmp);

	tmp[--i] = '\0';
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	strcpy(out, tmp + i);
}

/*
 * The ring file of this process image in the reader's directory, mapped
 * shared; NULL (errno set) when it cannot be made.
 */
static struct ring_hdr *shim_make_ring(void)
{
	char path[PATH_MAX + 64], num[24];
	uint64_t seq, size = ring_file_size(RING_DATA_SIZE);
	struct ring_hdr *r;
	int fd, e;

	seq = atomic_fetch_add(&cfg.ctl->created, 1);
	strcpy(path, cfg.rings);
	strcat(path, "/ring.");
	shim_u64(num, (uint64_t)cfg.pid);
	strcat(path, num);
	strcat(path, ".");
	shim_u64(num, seq);
	strcat(path, num);
	fd = (int)syscall(SYS_openat, AT_FDCWD, path,
			  O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return NULL;
	strcpy(cfg.ring_path, path);
	{
		struct shim_xfsz x;
		int rc;

		shim_xfsz_begin(&x);
		rc = ftruncate(fd, (off_t)size);
		shim_xfsz_end(&x);
		if (rc)
			e = errno;
		else
			e = 0;
	}
	if (e) {
		syscall(SYS_close, fd);
		unlink(path);
		errno = e;
		return NULL;
	}
	r = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	e = errno;
	syscall(SYS_close, fd);
	if (r == MAP_FAILED) {
		unlink(path);
		errno = e;
		return NULL;
	}
	ring_init(r, RING_DATA_SIZE, cfg.pid, shim_starttime(), cfg.ctl->clock);
	/* the ring counts as made once it is ready */
	atomic_fetch_add(&cfg.ctl->created, 1);
	return r;
}

static struct ring_hdr *shim_make_private(void)
{
	uint64_t size = ring_file_size(0);
	struct ring_hdr *r = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED)
		return NULL;
	ring_init(r, 0, cfg.pid, 0, RING_CLOCK_MONO);
	return r;
}

/* The ring passed half full: wake the reader (once, until it has read). */
static void shim_bell(struct ring_hdr *r)
{
	int e = errno;

	if (cfg.ctl && r == shim_area)
		kill((pid_t)cfg.ctl->consumer_pid, SIGURG);
	errno = e;
}

/* The area for this process: its ring when there is a reader, else private memory. */
static struct ring_hdr *shim_make_area(void)
{
	struct ring_hdr *r = NULL;

	cfg.ringed = 0;
	shim_ring_on = 0;
	/* a reader already gone (killed): nobody would read a ring */
	if (cfg.ctl && shim_reader_alive()) {
		r = shim_make_ring();
		if (r) {
			cfg.ringed = 1;
			shim_ring_on = 1;
			ring_bell_hook = shim_bell;
			return r;
		}
		shim_warn(cfg.rings, ": cannot make the capture ring: ", shim_errstr(errno));
	}
	return shim_make_private();
}

static void shim_map_ctl(void)
{
	char path[PATH_MAX + 8];
	struct ring_ctl *c;
	int fd;

	if (strlen(cfg.rings) + 5 >= sizeof(path))
		return;
	strcpy(path, cfg.rings);
	strcat(path, "/ctl");
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		/* gone with its reader (killed, and the capture's last process cleaned up): write the file ourselves */
		if (errno != ENOENT)
			shim_warn(path, ": cannot open the capture reader's control file: ", shim_errstr(errno));
		return;
	}
	c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	syscall(SYS_close, fd);
	if (c == MAP_FAILED)
		return;
	if (atomic_load(&c->magic) != RING_CTL_MAGIC) {
		munmap(c, 4096);
		return;
	}
	cfg.ctl = c;
}

/* --- start, fork, end ---------------------------------------------------- */

static void shim_set_path(void)
{
	size_t n = strlen(cfg.base);
	char num[24];

	memcpy(cfg.path, cfg.base, n + 1);
	if (!cfg.per_pid)
		return;
	cfg.path[n] = '.';
	shim_u64(num, (uint64_t)cfg.pid);
	strcpy(cfg.path + n + 1, num);
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
	shim_emit(th->out, len, 0, 0);
}

static void shim_atfork_parent(void)
{
	if (shim_on)
		shim_stream_fork_parent();
}

/*
 * A fork child is a new process for the capture: new pid, its own area
 * (ring) and counts, its own file with TTAUDIT_PER_PID, and a start
 * record. Locks other threads held are released (those threads do not
 * exist here) and partial lines belong to the parent.
 */
static void shim_atfork_child(void)
{
	struct ring_hdr *parent = shim_area, *child;
	int fd, was_ringed = cfg.ringed;
	long old_tid = shim_self ? shim_self->tid : 0;

	if (!shim_on)
		return;
	shim_depth++;
	cfg.pid = (long)syscall(SYS_getpid);
	cfg.ppid = (long)getppid();
	cfg.ended = 0;
	atomic_store(&n_lines, 0);
	atomic_store(&cap_opening, 0);
	atomic_store(&lost_untold, 0);
	if (shim_self)
		shim_self->tid = (long)syscall(SYS_gettid);
	if (cfg.per_pid) {
		fd = atomic_exchange(&cap_fd, -1);
		if (fd >= 0)
			syscall(SYS_close, fd);
		atomic_store(&cap_retry_ns, 0);
		shim_set_path();
	}
	if (cfg.ctl && parent->data_size && !(atomic_load(&parent->state) & RING_S_DIRECT)) {
		child = shim_make_area();
	} else if (parent->data_size) {
		/* the parent drains its ring itself (its reader is gone): the child writes its own records */
		child = shim_make_private();
		cfg.ringed = 0;
		shim_ring_on = 0;
		if (!cfg.rules)
			shim_load_rules(getenv("TTAUDIT_RULES"));
	} else {
		/* the private area was copied by fork: start its counts afresh */
		child = parent;
		cfg.ringed = 0;
		shim_ring_on = 0;
		memset(child->lost, 0, sizeof(child->lost));
		memset(child->lost_told, 0, sizeof(child->lost_told));
		child->pid = cfg.pid;
	}
	if (child) {
		shim_stream_after_fork(parent, child, old_tid, shim_self ? shim_self->tid : 0);
		shim_area = child;
		if ((was_ringed || parent->data_size) && child != parent)
			munmap(parent, ring_file_size(parent->data_size));
	}
	shim_stdio_after_fork(shim_area != parent);
	if (!cfg.ringed && !cfg.rules)
		shim_load_rules(getenv("TTAUDIT_RULES"));
	if (cfg.ringed)
		shim_area->fork_parent = (int32_t)cfg.ppid;
	shim_write_start();
	shim_stream_fork_marks();
	shim_depth--;
}

static const char *shim_rules_from;   /* the file the rules came from (NULL: built-in) */

static void shim_load_rules(const char *path)
{
	struct status_info si;
	char msg[sizeof(si.msg) + sizeof(si.file) + 64];

	status_info_clear(&si);
	if (path && *path) {
		if (banner_set_load(path, &cfg.rules, &si) == STATUS_OK) {
			shim_rules_from = path;
			return;
		}
		shim_warn(status_info_format(&si, msg, sizeof(msg)), "; using the built-in banner rules",
			  NULL);
	}
	cfg.rules = banner_set_default();
}

/*
 * The rules for a process that goes on without its reader (drain.c), which
 * classified for it until then: built on the write path, so in an arena
 * of their own, without malloc or JIT.
 */
void shim_drain_rules(void)
{
	struct banner_arena a;
	void *p;

	if (cfg.rules)
		return;
	p = mmap(NULL, 4u << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	a.base = p;
	a.cap = 4u << 20;
	a.used = 0;
	/* (a rules file the reader compiled is good; if it is gone now, the built-in ones) */
	cfg.rules = banner_set_arena(cfg.rules_path, &a);
	if (!cfg.rules)
		cfg.rules = banner_set_arena(NULL, &a);
}

const struct banner_set *shim_rules(void)
{
	return cfg.rules;
}

int shim_all_lines(void)
{
	return cfg.all_lines;
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
		return;
	}
	/* how the capture is made: the reader said it; without one, from the rules loaded here */
	if (cfg.ctl && cfg.ctl->mode_len && cfg.ctl->mode_len < sizeof(cfg.ctl->mode)) {
		cfg.tail_len = caprec_tail_add(cfg.tail, cfg.tail_len, SHIM_TAIL_CAP, cfg.ctl->mode,
					       cfg.ctl->mode_len);
	} else {
		char mode[RING_CTL_MODE_CAP];
		size_t n = caprec_mode(mode, sizeof(mode), cfg.all_lines, cfg.rules, shim_rules_from);
		cfg.tail_len = caprec_tail_add(cfg.tail, cfg.tail_len, SHIM_TAIL_CAP, mode, n);
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
	cfg.exit_code = -1;
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
	shim_fsize_limited = getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY;
	cfg.fd_floor = 3;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= 64)
		cfg.fd_floor = rl.rlim_cur > 1024 ? 1000 : (int)rl.rlim_cur - 24;
	cfg.pid = (long)syscall(SYS_getpid);
	cfg.ppid = (long)getppid();
	shim_set_path();
	v = getenv("TTAUDIT_RINGS");
	if (v && *v && strlen(v) < sizeof(cfg.rings)) {
		strcpy(cfg.rings, v);
		shim_map_ctl();
	}
	shim_area = shim_make_area();
	if (!shim_area)
		return;
	/* with a reader, the reader classifies: the rules are compiled only to write the file ourselves */
	v = getenv("TTAUDIT_RULES");
	if (v && strlen(v) < sizeof(cfg.rules_path))
		strcpy(cfg.rules_path, v);
	if (!cfg.ringed)
		shim_load_rules(getenv("TTAUDIT_RULES"));
	shim_render_tail(argc, argv, envp);
	cfg.key_ok = pthread_key_create(&cfg.key, shim_thread_exit) == 0;
	pthread_atfork(NULL, shim_atfork_parent, shim_atfork_child);
	shim_bit_set(shim_watch_bits, 1, 1);
	shim_bit_set(shim_watch_bits, 2, 1);
	shim_on = 1;
	shim_depth++;
	shim_write_start();
	shim_depth--;
}

void shim_set_exit_code(int code)
{
	if (cfg.exit_code < 0)
		cfg.exit_code = code & 0xff;
}

int (shim_ringed)(void)
{
	return shim_ring_on;
}

void shim_ring_mark(uint16_t flags, int fd)
{
	struct ring_ent *e;

	if (!cfg.ringed && !shim_ring_closed())
		return;
	e = shim_ring_reserve_settle();
	if (e)
		ring_publish(e, RING_MARK, flags, 0, (uint32_t)fd, 0);
	else if (shim_ring_closed())
		shim_drain_mark(flags, fd);
}

void shim_write_end(const struct shim_ending *e)
{
	struct shim_thread *th = shim_thread_get();
	struct caprec_head h;
	struct caprec_end ce;
	char buf[512];
	size_t len;

	if (!shim_area || cfg.ended)
		return;
	cfg.ended = 1;
	/* a reader that went away would never read what the ring holds: say it here */
	if (cfg.ringed && !shim_reader_alive())
		shim_give_up_ring();
	if (cfg.ringed) {
		/* the reader writes the end record: it counted the lines */
		struct ring_ent *re;

		shim_tell_lost();
		re = shim_ring_reserve_settle();
		if (re) {
			uint32_t how = !strcmp(e->how, "exec") ? RING_HOW_EXEC :
				       !strcmp(e->how, "exit") ? RING_HOW_EXIT : RING_HOW__EXIT;
			ring_publish(re, RING_END, 0, e->stdio_lost, how, (uint32_t)e->code);
		}
		return;
	}
	/* after the reader went away: what it would have said of writes still in flight */
	if (shim_area->data_size) {
		shim_drain_finish();
		atomic_store(&shim_area->direct_end, 1);
		shim_clean_up_ring();
	}
	atomic_store(&cap_final, 1);
	caprec_head_now(&h);
	h.pid = cfg.pid;
	h.tid = 0;
	h.fd = -1;
	ce.how = e->how;
	ce.code = e->code;
	ce.sig = 0;
	ce.by = "shim";
	ce.counts = 1;
	ce.lines = atomic_load(&n_lines);
	ce.lost = shim_lost_total();
	len = caprec_end(th ? th->out : buf, th ? sizeof(th->out) : sizeof(buf), &h, &ce);
	/* the lost records before it, so that end is the last word */
	shim_tell_lost();
	shim_emit(th ? th->out : buf, len, 0, 0);
}

void shim_exec_failed(int err, uint64_t partial_lines)
{
	char reason[160];

	cfg.ended = 0;
	if (cfg.ringed) {
		/* the reader voids the end (and its stdio loss) it was told: nothing else was written */
		shim_ring_mark(RING_E_EXEC_FAILED, -1);
		return;
	}
	strcpy(reason, "exec failed (");
	strcat(reason, shim_errstr(err));
	strcat(reason, "): the end and lost records just before this one are void, and the partial lines may go on");
	shim_uncertain(-1, partial_lines, reason, NULL, 0);
}

void shim_child_end(pid_t pid, int wstatus)
{
	struct caprec_head h;
	struct caprec_end ce;
	char buf[512];
	size_t len;

	if (!shim_area || !WIFSIGNALED(wstatus))
		return;
	caprec_head_now(&h);
	h.pid = pid;
	h.tid = 0;
	h.fd = -1;
	ce.how = "signal";
	ce.code = -1;
	ce.sig = WTERMSIG(wstatus);
	ce.by = "parent";
	ce.counts = 0;
	len = caprec_end(buf, sizeof(buf), &h, &ce);
	shim_emit(buf, len, RING_F_CHILD_END, (uint64_t)pid);
}

/*
 * Last of all at exit: glibc runs exit handlers registered while the exit
 * handlers run (our destructor registers this one from inside _dl_fini),
 * so this runs after every destructor, just before stdio's own final
 * flush, which then finds the tracked streams empty.
 */
static void shim_late_exit(void)
{
	struct shim_ending e = { "exit", cfg.exit_code, 0 };
	int err = errno;

	if (!shim_on || shim_foreign() || shim_depth)
		return;
	shim_stdio_flush_all();
	shim_stream_finish_all(0);
	shim_write_end(&e);
	errno = err;
}

/*
 * At exit(): stdio buffers flushed through the accounted path, then the end
 * record, from a handler that runs after the other destructors.
 */
__attribute__((destructor)) static void shim_fini(void)
{
	int err = errno;

	if (!shim_on || cfg.ended || shim_foreign() || shim_depth)
		return;
	shim_stdio_flush_all();
	if (atexit(shim_late_exit) != 0)
		shim_late_exit();
	errno = err;
}
