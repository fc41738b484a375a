/*
 * shim.h - the preload library's core, shared by its interposers (io.c).
 * Nothing here is exported from libttaudit-shim.so (shim.map lists what is).
 *
 * The write path of a call the shim does not capture is: one relaxed load
 * of a bit in shim_watch_bits, then the real function. A watched call runs
 * the real function first, returns its result unchanged, and afterwards
 * feeds exactly the bytes the real call accepted to shim_feed(), with errno
 * saved and restored around it.
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

#define SHIM_FD_MAX 65536   /* fds at or above this are never watched */

/* The functions the shim wraps, resolved once with dlsym(RTLD_NEXT). */
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
	int (*vfprintf)(FILE *, const char *, va_list);
	int (*vdprintf)(int, const char *, va_list);
	int (*vfprintf_chk)(FILE *, int, const char *, va_list);
	int (*vdprintf_chk)(int, int, const char *, va_list);
	int (*open)(const char *, int, ...);
	int (*open64)(const char *, int, ...);
	int (*openat)(int, const char *, int, ...);
	int (*openat64)(int, const char *, int, ...);
	int (*creat)(const char *, mode_t);
	int (*creat64)(const char *, mode_t);
	FILE *(*fopen)(const char *, const char *);
	FILE *(*fopen64)(const char *, const char *);
	int (*fclose)(FILE *);
	int (*close)(int);
	int (*close_range)(unsigned, unsigned, int);
	void (*closefrom)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
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

/* Resolves the real functions (pthread_once); safe to call any number of times. */
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

/*
 * Feeds bytes that reached (or, for stdio, were accepted for) a watched fd.
 * `via_stdio` keeps a stream's partial line apart from raw write()s.
 * Never fails visibly: what cannot be captured is counted as lost.
 */
void shim_feed(int fd, int via_stdio, const void *data, size_t n);

/*
 * For raw writes, around the real call: shim_begin() marks the thread busy
 * before the bytes reach the kernel, so a signal handler that writes in
 * between is queued behind them and the capture keeps the kernel's order.
 * shim_end() feeds the n bytes the real call accepted (n may be 0) and
 * clears the mark; `owner` is what shim_begin returned (0 when nested).
 */
int shim_begin(void);
void shim_end(int owner, int fd, const void *data, size_t n);
/* The same for writev: the first n bytes of the iovecs. */
void shim_end_iov(int owner, int fd, const struct iovec *iov, int cnt, size_t n);

/*
 * For printf-family wrappers: a per-thread buffer to format a second copy of
 * what the real call printed. Returns NULL (count it lost) when the thread
 * has no buffer or is already inside the shim (a signal handler). A non-NULL
 * return must be paired with shim_fmt_done(), which feeds `n` bytes of it;
 * `cut` says the output was longer than the buffer (its last line is lost).
 */
char *shim_fmt_begin(size_t *cap);
void shim_fmt_done(int fd, const char *buf, size_t n, int cut);
/* Counts the lines in data as lost (reason: written while the shim was busy). */
void shim_lost_busy(const void *data, size_t n);

/* A file matching TTAUDIT_WATCH was opened for writing on fd / fd is closed. */
void shim_watch_path(int fd, const char *path, int flags);
void shim_unwatch(int fd);
/*
 * The host closed or replaced fds lo..hi (close, close_range, closefrom,
 * dup2, dup3): if the capture fd is among them it is checked before the
 * next record. Cheap: one relaxed load.
 */
void shim_fd_touched(int lo, int hi);

#endif
