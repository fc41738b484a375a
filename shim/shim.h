/*
 * shim.h - the preload library's internals, shared by its parts (nothing
 * here is exported from libttaudit-shim.so; shim.map lists what is):
 *
 *   shim.c    configuration, the area (per-fd locks and partial lines, loss
 *             counters), where records go (the ring, or the capture file),
 *             per-thread blocks, fork, start and end records
 *   stream.c  per-fd byte streams in kernel order: the fd lock, the lines
 *             a write completes (classified before the bytes reach the
 *             kernel, settled after), bytes written by signal handlers;
 *             the lines themselves only when no reader runs
 *   ringw.c   a watched write with `ttaudit capture` reading: its bytes to
 *             the ring before the kernel, and a commit of what the kernel
 *             took (the reader cuts and classifies the lines)
 *   stdio.c   glibc FILE streams: the bytes still in a FILE's buffer, and
 *             those its flushes hand to the fd
 *   proc.c    exit, _exit, exec, wait: how a process ends
 *   io.c      write, writev, open, close, dup: the raw interposers
 *   drain.c   the reader gone: the process reads its own ring to the file,
 *             as the reader would have, and goes on without it
 *
 * From the rest of the tree it compiles what its write path needs
 * (shim/module.mk): base/linebuf, mono, procstat, auditline, jdoc, status
 * and capture/ring, classify, banner, banner_rules, caprec, jbuf, envlist.
 *
 * The design and its limits are in docs/capture.md. Rules for everything
 * reachable from a wrapper: no malloc, no stdio, no pthread lock (signal
 * handlers, vfork children and fork children of threaded parents must not
 * deadlock), errno left as found, results returned as the real call gave
 * them.
 */
#ifndef TTAUDIT_SHIM_H
#define TTAUDIT_SHIM_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "capture/banner.h"
#include "capture/ring.h"

#define SHIM_TLS __attribute__((tls_model("initial-exec")))
#define SHIM_FD_MAX RING_FD_MAX
#define SHIM_OUT_CAP (192 * 1024)      /* one record */
#define SHIM_FMT_CAP (64 * 1024)       /* a printf's output, formatted again */
#define SHIM_DEFER_CAP 16384           /* bytes written by signal handlers, per thread */
#define SHIM_PEND_MAX 64               /* lines of one write classified before it */
#define SHIM_PENDBUF_CAP (256 * 1024)  /* their records, without a ring */

/* The functions the shim wraps or calls, resolved once with dlsym(RTLD_NEXT). */
struct shim_real {
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*writev)(int, const struct iovec *, int);
	size_t (*fwrite)(const void *, size_t, size_t, FILE *);
	size_t (*fwrite_unlocked)(const void *, size_t, size_t, FILE *);
	int (*fputs)(const char *, FILE *);
	int (*fputs_unlocked)(const char *, FILE *);
	int (*puts)(const char *);
	int (*fputc)(int, FILE *);
	int (*putc)(int, FILE *);
	int (*putchar)(int);
	int (*fputc_unlocked)(int, FILE *);
	int (*putc_unlocked)(int, FILE *);
	int (*putchar_unlocked)(int);
	int (*io_putc)(int, FILE *);
	int (*overflow)(FILE *, int);
	int (*vfprintf)(FILE *, const char *, va_list);
	int (*vdprintf)(int, const char *, va_list);
	int (*vfprintf_chk)(FILE *, int, const char *, va_list);
	int (*vdprintf_chk)(int, int, const char *, va_list);
	int (*fflush)(FILE *);
	int (*fflush_unlocked)(FILE *);
	int (*fseek)(FILE *, long, int);
	int (*fseeko)(FILE *, off_t, int);
	int (*fseeko64)(FILE *, off_t, int);
	int (*fsetpos)(FILE *, const fpos_t *);
	int (*fsetpos64)(FILE *, const fpos64_t *);
	void (*rewind)(FILE *);
	int (*setvbuf)(FILE *, char *, int, size_t);
	void (*setbuf)(FILE *, char *);
	void (*setbuffer)(FILE *, char *, size_t);
	void (*setlinebuf)(FILE *);
	FILE *(*freopen)(const char *, const char *, FILE *);
	FILE *(*freopen64)(const char *, const char *, FILE *);
	int (*fcloseall)(void);
	int (*open)(const char *, int, ...);
	int (*open64)(const char *, int, ...);
	int (*openat)(int, const char *, int, ...);
	int (*openat64)(int, const char *, int, ...);
	int (*creat)(const char *, mode_t);
	int (*creat64)(const char *, mode_t);
	FILE *(*fopen)(const char *, const char *);
	FILE *(*fopen64)(const char *, const char *);
	FILE *(*fdopen)(int, const char *);
	int (*fclose)(FILE *);
	int (*close)(int);
	int (*close_range)(unsigned, unsigned, int);
	void (*closefrom)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	void (*exit)(int) __attribute__((noreturn));
	void (*_exit)(int) __attribute__((noreturn));
	void (*_Exit)(int) __attribute__((noreturn));
	void (*quick_exit)(int) __attribute__((noreturn));
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvp)(const char *, char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	pid_t (*waitpid)(pid_t, int *, int);
	pid_t (*wait4)(pid_t, int *, int, void *);
	int (*waitid)(int, id_t, void *, int);
	int (*libc_start_main)(int (*)(int, char **, char **), int, char **, void (*)(void),
			       void (*)(void), void (*)(void), void *);
};

extern struct shim_real shim_real;
/* 1 once the real functions are resolved (before that: raw syscalls). */
extern atomic_int shim_resolved;
/* 1 when a capture is configured (TTAUDIT_CAPTURE set). */
extern int shim_on;
/* 1 when TTAUDIT_WATCH names files to watch besides fds 1 and 2. */
extern int shim_globbing;
extern _Atomic uint64_t shim_watch_bits[SHIM_FD_MAX / 64];
extern _Atomic uint64_t shim_glob_bits[SHIM_FD_MAX / 64];
/* The area: the ring file mapped shared, or private memory of the same layout. */
extern struct ring_hdr *shim_area;
/* 1 while records go to the reader's ring (shim_ringed()). */
extern int shim_ring_on;
/* Nesting of shim activity on this thread: > 0 inside a wrapper's work. */
extern __thread int shim_depth SHIM_TLS;
/* The pid of a vfork child running on this thread's stack that changed its fds, or 0. */
extern __thread pid_t shim_vfork_mark SHIM_TLS;
/* While the drain feeds a write's bytes: when and by whom they were written (NULL: now, this thread). */
struct shim_origin {
	struct timespec t, mono;
	long tid;
};
extern __thread const struct shim_origin *shim_origin SHIM_TLS;

void shim_resolve(void);

static inline int shim_bit(_Atomic uint64_t *bits, int fd)
{
	return (unsigned)fd < SHIM_FD_MAX &&
	       ((atomic_load_explicit(&bits[fd >> 6], memory_order_relaxed) >> (fd & 63)) & 1);
}

static inline int shim_watching(int fd)
{
	return shim_on && shim_bit(shim_watch_bits, fd);
}

/* Bytes in iov[0..cnt). */
static inline size_t shim_iov_len(const struct iovec *iov, int cnt)
{
	size_t n = 0;
	int i;

	for (i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/* --- shim.c ---------------------------------------------------------------- */

/* Per-thread memory (mmap'd on first use; never malloc). */
struct shim_defer_hdr {
	int fd;
	int tag;       /* enum shim_tag */
	size_t n;
};

enum shim_tag {
	SHIM_TAG_BEFORE,    /* reached the kernel before the interrupted write: exact */
	SHIM_TAG_AFTER,     /* after it: exact */
	SHIM_TAG_UNKNOWN,   /* around it, order not knowable */
	SHIM_TAG_UNLOCKED,  /* another fd, written without its lock */
	SHIM_TAG_OWNED = 12,/* the interrupted flow is done with the fd and still holds it */
};

struct shim_thread {
	long tid;
	uint32_t seq;                    /* ids of this thread's ring writes */
	_Atomic uint32_t hseq;           /* ... and of its signal handlers' */
	int unlocked;                    /* the held fd was taken without its lock (one thread) */
	atomic_size_t defer_len;
	_Alignas(16) char defer[SHIM_DEFER_CAP];
	/* fds whose lock this thread holds, innermost last, and their phase */
	int n_held;
	int held[4];
	_Atomic int phase[4];
	/* the records classified before one write, without a ring */
	size_t pend_len;
	uint32_t pend_n;
	uint32_t pend_off[SHIM_PEND_MAX + 1];
	char pendbuf[SHIM_PENDBUF_CAP];
	struct banner_scratch sc;
	char fmt[SHIM_FMT_CAP];
	char gather[RING_LINE_CAP];      /* a writev's bytes, contiguous */
	char out[SHIM_OUT_CAP];
	char unc[SHIM_OUT_CAP + 1024];   /* an uncertain record around a record of `out` */
};

/* The thread's block, or NULL when it cannot be had (count the line lost). */
struct shim_thread *shim_thread_get(void);
/* The calling thread's tid (its block's), 0 without one. */
uint32_t shim_self_tid(void);
/* The process's pid as the capture knows it (the fork child's own after fork). */
long shim_pid(void);
/* 1 when the caller is not the process the shim set up for (a vfork child). */
int shim_foreign(void);

/* Counts `count` lines lost for `why` (reported in a lost record and in end). */
void shim_lost(enum ring_lost why, uint64_t count);
uint64_t shim_count_lines(const void *data, size_t n);
/* Lines counted as complete on watched fds (the end record's `lines`). */
void shim_count_line(void);

/* A record that is true as it stands (rec ends with '\n'). */
void shim_emit(const char *rec, size_t len, uint16_t flags, uint64_t ref);
/*
 * A record whose truth waits for a write: shim_pend returns its id (> 0),
 * or 0 when it could not be kept (then emit it after the write instead).
 * shim_commit settles ids first..first+n-1: the first k were written, the
 * rest not; `uncertain` marks the written ones as not known to be true.
 */
uint64_t shim_pend(const char *rec, size_t len, int fd);
void shim_commit(uint64_t first, uint32_t k, uint32_t n, int uncertain, int fd);
/* 1 when records go to the reader's ring (not written by this process). */
int shim_ringed(void);
#define shim_ringed() (shim_ring_on)
/* An entry with `len` payload bytes (waits a little for room; NULL: none). */
struct ring_ent *shim_ring_reserve(size_t len);
/* The same for a settling entry (commit, mark, end: ring_reserve_settle). */
struct ring_ent *shim_ring_reserve_settle(void);
/* A RING_MARK entry (flags RING_M_*, RING_E_*). */
void shim_ring_mark(uint16_t flags, int fd);
/* A stdio call that may write `lines` complete lines is starting (0: nothing kept). */
uint64_t shim_risk(int fd, uint32_t lines);
void shim_risk_done(uint64_t id, int fd);
/* An uncertain record with the given record (or none) embedded. */
void shim_uncertain(int fd, uint64_t count, const char *reason, const char *rec, size_t rec_len);

/* How the process is ending, written once: before exec, at _exit, at exit. */
struct shim_ending {
	const char *how;    /* "exit", "_exit", "exec" */
	int code;           /* < 0: unknown */
	uint64_t stdio_lost;   /* exec, with a reader: lines in stdio buffers the exec loses */
};
void shim_write_end(const struct shim_ending *e);
/* After a failed exec: the end record just written is void. */
void shim_exec_failed(int err, uint64_t partial_lines);
/* An end record for a child this process reaped (by:"parent"). */
void shim_child_end(pid_t pid, int wstatus);
/* The code main returned or exit was given (for the end record). */
void shim_set_exit_code(int code);

/* Files named by TTAUDIT_WATCH. */
void shim_watch_path(int fd, const char *path, int flags);
void shim_unwatch(int fd);
/* The host closed or replaced fds lo..hi: the capture fd is checked before its next record. */
void shim_fd_touched(int lo, int hi);

/* --- stream.c -------------------------------------------------------------- */

/*
 * A watched raw write: takes fd's lock, classifies the lines the bytes
 * would complete, runs `sys` (the real call: returns its result, errno as
 * it left it), settles the records by what the kernel took, and feeds the
 * accepted bytes to fd's stream. `iov`/`cnt` describe the bytes (one
 * iovec for write()).
 */
typedef ssize_t (*shim_sys_fn)(void *ctx);
/*
 * Called while shim_vfork_mark is set: in the vfork child that moved its
 * fds, does the write (its bytes are not the parent's: counted lost) and
 * returns 1 with its result in *r, errno kept; elsewhere (the parent, the
 * child gone) clears the mark and returns 0.
 */
int shim_vfork_write(shim_sys_fn sys, void *ctx, ssize_t *r);
ssize_t shim_stream_write(int fd, const struct iovec *iov, int cnt, shim_sys_fn sys, void *ctx);
/*
 * For stdio: holds fd's lock around a stdio call whose flushes reach fd
 * (order: the FILE's lock first, then this).
 */
int shim_stream_lock(int fd);
void shim_stream_unlock(int fd, int token);
/* Feeds bytes that reached fd (a stdio flush) while holding its lock; uncertain: not known to. */
void shim_stream_feed(int fd, const char *p, size_t n, int uncertain);
/* The next line fd's stream completes is not known to be true (an unseen flush). */
void shim_stream_mark_uncertain(int fd);
/* fd is closed or replaced: its partial line, if any, is recorded as partial. */
void shim_stream_close(int fd);
/*
 * Every stream's partial line recorded as partial (exit, _exit, exec);
 * returns how many. `keep`: the streams stay as they are (an exec, which
 * may fail and let the lines go on).
 */
uint64_t shim_stream_finish_all(int keep);
/*
 * In a fork child, before its start record: locks other threads held are
 * released (old_tid is the forking thread's tid in the parent), partial
 * lines left to the parent, and the next line of each such fd uncertain.
 * child may be parent (private memory copied by fork).
 */
void shim_stream_after_fork(struct ring_hdr *parent, struct ring_hdr *child, long old_tid, long new_tid);
/* In the parent after fork: partial lines may be continued by the child. */
void shim_stream_fork_parent(void);
/* In a fork child with a reader, after its start record: the fds whose next line is uncertain, told. */
void shim_stream_fork_marks(void);

/* The banner rules and --all-lines, for the line callbacks. */
const struct banner_set *shim_rules(void);
int shim_all_lines(void);

/* The fd locks (stream.c), for ringw.c. */
enum { SHIM_PH_PLAN, SHIM_PH_SYSCALL, SHIM_PH_FEED, SHIM_PH_WAIT, SHIM_PH_DONE };
int shim_fd_lock(struct shim_thread *th, int fd);       /* 1: taken over from a dead thread */
void shim_fd_unlock(struct shim_thread *th, int fd);
int shim_fd_phase_tag(struct shim_thread *th, int fd);  /* enum shim_tag, for a handler */
int shim_fd_trylock(struct shim_thread *th, int fd);
void shim_fd_release(int fd);
void shim_fd_phase(struct shim_thread *th, int phase);
/* Records whether the fd's last byte left a line open (the fork child needs to know). */
void shim_fd_open_bit(int fd, int open);

/* --- ringw.c --------------------------------------------------------------- */

/* shim_stream_write with a reader: the bytes go to the ring, pending until the kernel took them. */
ssize_t shim_ring_write(int fd, const struct iovec *iov, int cnt, shim_sys_fn sys, void *ctx);
/* Bytes that reached fd (a stdio flush), with its lock held; doubt: maybe not all did. */
void shim_ring_bytes(int fd, const char *p, size_t n, int doubt);
/* fd closed or replaced (its lock held): the reader ends its open line. */
void shim_ring_close(int fd);
/*
 * The two halves of shim_ring_write, for stdio (fd's lock held by the
 * caller): the bytes a call may write go in pending, and after the call
 * the first `took` of them are committed (doubt: it failed after writing
 * an unknown part), the rest aborted.
 */
struct shim_pend {
	uint64_t first, mono;
	size_t pended;
	uint32_t chunks;
};
void shim_ring_pend(struct shim_thread *th, int fd, const struct iovec *iov, int cnt, size_t n,
		    struct shim_pend *pd);
void shim_ring_settle(struct shim_thread *th, int fd, const struct iovec *iov, int cnt, struct shim_pend *pd,
		      size_t took, int doubt);
/* The thread is cancelled inside the call: pending bytes doubtful, the next line unknown, lock released. */
void shim_ring_cancel_pend(struct shim_thread *th, int fd, struct shim_pend *pd);

/* --- drain.c --------------------------------------------------------------- */

/*
 * The reader is gone (shim.c saw it): this process closes its ring to new
 * entries, completes the reader's last write of records if it was cut
 * short, and drains the ring from the reader's last checkpoint, in ring
 * order, into the capture file; from then on it writes its records
 * itself. Done once per process, by the thread that saw it first.
 */
void shim_take_over(void);
/* 1 once the ring takes no more entries: what would go in goes to the drain (below). */
static inline int shim_ring_closed(void)
{
	/* acquire: who sees it closed sees the drain's role taken (drain.c) */
	return shim_area && (atomic_load_explicit(&shim_area->head, memory_order_acquire) & RING_HEAD_CLOSED);
}
/*
 * What a write that began while the ring was open would have put in it
 * after it closed: the commit of its pending entry, bytes that reached
 * the fd (RING_W_* / RING_F_* flags), a mark. 0 when the drain could not
 * take it (then count it as if the ring were full).
 */
int shim_drain_commit(uint64_t id, uint32_t took, uint16_t flags);
int shim_drain_bytes(int fd, uint16_t flags, const struct iovec *iov, int cnt, size_t from, size_t n,
		     uint64_t mono);
int shim_drain_mark(uint16_t flags, int fd);
/* Writers of records without the ring wait here while the ring is drained (never the drain itself). */
void shim_drain_wait(void);
/* The process ends: writes still in flight in the drain's queue are uncertain, stdio calls too. */
void shim_drain_finish(void);

/* stream.c, for the drain: the fd's stream as direct writes keep it. */
void shim_drain_feed(struct shim_thread *th, int fd, const char *p, size_t n, const char *why);
void shim_drain_loose(struct shim_thread *th, int fd, const char *p, size_t n);
void shim_drain_close(struct shim_thread *th, int fd, int drop);
void shim_drain_loss(int fd, int skip);
void shim_drain_fdflag(int fd, uint8_t f);
int shim_drain_open(int fd);
int shim_drain_restore(int fd, const char *p, size_t n, int over);

/* shim.c, for the drain. */
struct ring_ctl *shim_ctl(void);
const char *shim_capture_base(void);   /* TTAUDIT_CAPTURE (with --per-pid: the files' base) */
const char *shim_rings_dir(void);      /* TTAUDIT_RINGS as it was at start-up */
int shim_per_pid(void);
void shim_count_lines_n(uint64_t n);
/* The banner rules, built without malloc if the reader had them (it classified). */
void shim_drain_rules(void);
/* Records written by this thread gather in buf (cap bytes) until shim_batch_end writes them. */
void shim_batch_begin(char *buf, size_t cap);
void shim_batch_end(void);
/* The reader had stopped writing the file (it failed): records are counted, not written, until the end. */
void shim_capture_failed(int err);
/* The ring given up: records from here on are written by this process. */
void shim_set_direct(void);

/* --- stdio.c --------------------------------------------------------------- */

/* Flushes every tracked FILE through the accounted path (exit). */
void shim_stdio_flush_all(void);
/* Lines pending in tracked FILE buffers (never written if the process ends now). */
uint64_t shim_stdio_pending_lines(void);
/* A fork child: its FILE buffers are copies of the parent's; counters go to the (new) area. */
void shim_stdio_after_fork(int new_area);
/* fopen/fdopen of a watched file: its FILE is followed from the start. */
void shim_stdio_track(FILE *fp);

#endif
