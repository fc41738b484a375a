/*
 * io.c - the interposed functions of libttaudit-shim.so (shim.map exports
 * exactly these).
 *
 * Every wrapper calls the real function first and returns its result as it
 * came; only then, for a watched fd, does it hand the bytes the real call
 * accepted to the core. Raw write()/writev() feed what the kernel took (a
 * partial write feeds its prefix, an error feeds nothing).
 *
 * glibc's stdio does not write through the interposable write(), so the
 * stdio entry points are wrapped too. They feed the bytes the program handed
 * to the stream, at call time, from the arguments (printf-family output is
 * formatted a second time into a per-thread buffer). Each byte is fed once:
 * stdio's own later write() is internal and never reaches our write(). A
 * stream's lines are kept apart from raw writes to the same fd, so the two
 * never splice into one line. What this does not see: glibc-internal
 * printing (perror, err/warn, psignal) and the putc_unlocked-style macros
 * that inline into the caller.
 */
/*
 * This file defines functions <stdio.h> may otherwise provide as inline
 * wrappers (extern inlines when optimising, fortify wrappers): ask for none.
 */
#undef _FORTIFY_SOURCE
#ifndef __NO_INLINE__
#define __NO_INLINE__ 1
#endif

#include "shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHIM_API __attribute__((visibility("default")))

/* <stdio.h> may define these as macros when optimising; we define the functions. */
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

static int shim_file_fd(FILE *fp)
{
	/* _fileno is a public member of glibc's FILE; -1 for memory streams. */
	return fp ? fp->_fileno : -1;
}

/* --- raw writes ---------------------------------------------------------- */

SHIM_API ssize_t write(int fd, const void *buf, size_t n)
{
	ssize_t r;
	int owner;

	if (!atomic_load_explicit(&shim_resolved, memory_order_acquire))
		return syscall(SYS_write, fd, buf, n);
	if (!shim_watching(fd))
		return shim_real.write(fd, buf, n);
	owner = shim_begin();
	r = shim_real.write(fd, buf, n);
	shim_end(owner, fd, buf, r > 0 ? (size_t)r : 0);
	return r;
}

SHIM_API ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	ssize_t r;
	int owner;

	if (!atomic_load_explicit(&shim_resolved, memory_order_acquire))
		return syscall(SYS_writev, fd, iov, cnt);
	if (!shim_watching(fd))
		return shim_real.writev(fd, iov, cnt);
	owner = shim_begin();
	r = shim_real.writev(fd, iov, cnt);
	shim_end_iov(owner, fd, iov, cnt, r > 0 ? (size_t)r : 0);
	return r;
}

/* --- stdio --------------------------------------------------------------- */

#define SHIM_NEED(fn) do { if (!shim_real.fn) shim_resolve(); } while (0)

static void shim_feed_file(FILE *fp, const void *p, size_t n)
{
	int fd = shim_file_fd(fp);

	if (n && shim_watching(fd))
		shim_feed(fd, 1, p, n);
}

static void shim_feed_char(FILE *fp, int c)
{
	char ch = (char)c;

	shim_feed_file(fp, &ch, 1);
}

SHIM_API size_t fwrite(const void *p, size_t size, size_t nmemb, FILE *fp)
{
	size_t r;

	SHIM_NEED(fwrite);
	r = shim_real.fwrite(p, size, nmemb, fp);
	if (r)
		shim_feed_file(fp, p, r * size);
	return r;
}

SHIM_API size_t fwrite_unlocked(const void *p, size_t size, size_t nmemb, FILE *fp)
{
	size_t r;

	SHIM_NEED(fwrite_unlocked);
	r = shim_real.fwrite_unlocked(p, size, nmemb, fp);
	if (r)
		shim_feed_file(fp, p, r * size);
	return r;
}

SHIM_API int fputs(const char *s, FILE *fp)
{
	int r;

	SHIM_NEED(fputs);
	r = shim_real.fputs(s, fp);
	if (r != EOF)
		shim_feed_file(fp, s, strlen(s));
	return r;
}

SHIM_API int fputs_unlocked(const char *s, FILE *fp)
{
	int r;

	SHIM_NEED(fputs_unlocked);
	r = shim_real.fputs_unlocked(s, fp);
	if (r != EOF)
		shim_feed_file(fp, s, strlen(s));
	return r;
}

SHIM_API int puts(const char *s)
{
	int r;

	SHIM_NEED(puts);
	r = shim_real.puts(s);
	if (r != EOF) {
		shim_feed_file(stdout, s, strlen(s));
		shim_feed_char(stdout, '\n');
	}
	return r;
}

#define SHIM_PUTC(name, field, args, fp)                 \
	SHIM_API int name args                           \
	{                                                \
		int r;                                   \
		SHIM_NEED(field);                        \
		r = shim_real.field(c SHIM_PUTC_FP_##fp); \
		if (r != EOF)                            \
			shim_feed_char(fp, c);           \
		return r;                                \
	}
#define SHIM_PUTC_FP_fp , fp
#define SHIM_PUTC_FP_stdout

SHIM_PUTC(fputc, fputc, (int c, FILE *fp), fp)
SHIM_PUTC(putc, putc, (int c, FILE *fp), fp)
SHIM_PUTC(fputc_unlocked, fputc_unlocked, (int c, FILE *fp), fp)
SHIM_PUTC(putc_unlocked, putc_unlocked, (int c, FILE *fp), fp)
SHIM_PUTC(_IO_putc, io_putc, (int c, FILE *fp), fp)
SHIM_PUTC(putchar, putchar, (int c), stdout)
SHIM_PUTC(putchar_unlocked, putchar_unlocked, (int c), stdout)

/*
 * The printf family: the real call prints, then (watched fds only) the same
 * format is rendered again into the thread's buffer and fed. `r` is what the
 * real call returned, so only output that was accepted is fed; output longer
 * than the buffer is cut there and its line counted lost by the core.
 */
static void shim_printf_feed(int fd, int r, const char *fmt, va_list ap)
{
	size_t cap;
	char *buf;
	int n;

	if (r <= 0 || !shim_watching(fd))
		return;
	buf = shim_fmt_begin(&cap);
	if (!buf) {
		shim_lost_busy("", 0);
		return;
	}
	n = vsnprintf(buf, cap, fmt, ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= cap)
		shim_fmt_done(fd, buf, cap - 1, 1);
	else
		shim_fmt_done(fd, buf, (size_t)n, 0);
}

static int shim_vfprintf(FILE *fp, int flag, const char *fmt, va_list ap)
{
	va_list again;
	int r, e0 = errno;   /* %m in the second formatting must see the same errno */

	va_copy(again, ap);
	if (flag >= 0) {
		SHIM_NEED(vfprintf_chk);
		r = shim_real.vfprintf_chk(fp, flag, fmt, ap);
	} else {
		SHIM_NEED(vfprintf);
		r = shim_real.vfprintf(fp, fmt, ap);
	}
	if (r > 0) {
		int e = errno;
		errno = e0;
		shim_printf_feed(shim_file_fd(fp), r, fmt, again);
		errno = e;
	}
	va_end(again);
	return r;
}

static int shim_vdprintf(int fd, int flag, const char *fmt, va_list ap)
{
	va_list again;
	int r, e0 = errno;   /* %m in the second formatting must see the same errno */

	va_copy(again, ap);
	if (flag >= 0) {
		SHIM_NEED(vdprintf_chk);
		r = shim_real.vdprintf_chk(fd, flag, fmt, ap);
	} else {
		SHIM_NEED(vdprintf);
		r = shim_real.vdprintf(fd, fmt, ap);
	}
	if (r > 0) {
		int e = errno;
		/* vdprintf writes through glibc's internal write: fed as a raw write. */
		errno = e0;
		shim_printf_feed(fd, r, fmt, again);
		errno = e;
	}
	va_end(again);
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

/* _FORTIFY_SOURCE entry points: same, with the flag passed through. */
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

/* --- files named by TTAUDIT_WATCH ---------------------------------------- */

/* The mode argument exists only with O_CREAT or O_TMPFILE. */
#define SHIM_MODE(flags, last)                                         \
	mode_t mode = 0;                                               \
	if ((flags) & O_CREAT || ((flags) & O_TMPFILE) == O_TMPFILE) { \
		va_list ap;                                            \
		va_start(ap, last);                                    \
		mode = (mode_t)va_arg(ap, int);                        \
		va_end(ap);                                            \
	}

static int shim_opened(int fd, const char *path, int flags)
{
	if (fd >= 0 && shim_globbing) {
		int e = errno;
		shim_watch_path(fd, path, flags);
		errno = e;
	}
	return fd;
}

SHIM_API int open(const char *path, int flags, ...)
{
	SHIM_MODE(flags, flags);
	if (!shim_real.open)
		return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
	return shim_opened(shim_real.open(path, flags, mode), path, flags);
}

SHIM_API int open64(const char *path, int flags, ...)
{
	SHIM_MODE(flags, flags);
	if (!shim_real.open64)
		return (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_LARGEFILE, mode);
	return shim_opened(shim_real.open64(path, flags, mode), path, flags);
}

SHIM_API int openat(int dirfd, const char *path, int flags, ...)
{
	SHIM_MODE(flags, flags);
	if (!shim_real.openat)
		return (int)syscall(SYS_openat, dirfd, path, flags, mode);
	/* Relative to another directory: matched against the path as given. */
	return shim_opened(shim_real.openat(dirfd, path, flags, mode), path, flags);
}

SHIM_API int openat64(int dirfd, const char *path, int flags, ...)
{
	SHIM_MODE(flags, flags);
	if (!shim_real.openat64)
		return (int)syscall(SYS_openat, dirfd, path, flags | O_LARGEFILE, mode);
	return shim_opened(shim_real.openat64(dirfd, path, flags, mode), path, flags);
}

SHIM_API int creat(const char *path, mode_t mode)
{
	SHIM_NEED(creat);
	return shim_opened(shim_real.creat(path, mode), path, O_WRONLY);
}

SHIM_API int creat64(const char *path, mode_t mode)
{
	SHIM_NEED(creat64);
	return shim_opened(shim_real.creat64(path, mode), path, O_WRONLY);
}

static FILE *shim_fopened(FILE *fp, const char *path, const char *mode)
{
	if (fp && shim_globbing && mode && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+')))
		shim_opened(shim_file_fd(fp), path, O_WRONLY);
	return fp;
}

SHIM_API FILE *fopen(const char *path, const char *mode)
{
	SHIM_NEED(fopen);
	return shim_fopened(shim_real.fopen(path, mode), path, mode);
}

SHIM_API FILE *fopen64(const char *path, const char *mode)
{
	SHIM_NEED(fopen64);
	return shim_fopened(shim_real.fopen64(path, mode), path, mode);
}

/* --- the host closing or replacing fds ----------------------------------- */

/*
 * A watched file's fd number may be reused for anything once it is closed,
 * and the capture fd itself may be what the host closes or replaces: the
 * core then checks it before its next record.
 */
SHIM_API int close(int fd)
{
	if (!shim_real.close)
		return (int)syscall(SYS_close, fd);
	if (shim_on) {
		shim_fd_touched(fd, fd);
		if (shim_globbing)
			shim_unwatch(fd);
	}
	return shim_real.close(fd);
}

SHIM_API int close_range(unsigned lo, unsigned hi, int flags)
{
	if (!shim_real.close_range)
		return (int)syscall(SYS_close_range, lo, hi, flags);
	if (shim_on) {
		unsigned fd, top = hi < SHIM_FD_MAX ? hi : SHIM_FD_MAX - 1;
		shim_fd_touched(lo > INT32_MAX ? INT32_MAX : (int)lo, hi > INT32_MAX ? INT32_MAX : (int)hi);
		if (shim_globbing)
			for (fd = lo; fd <= top; fd++)
				shim_unwatch((int)fd);
	}
	return shim_real.close_range(lo, hi, flags);
}

SHIM_API void closefrom(int lo)
{
	SHIM_NEED(closefrom);
	if (shim_on) {
		int fd;
		shim_fd_touched(lo, INT32_MAX);
		if (shim_globbing)
			for (fd = lo < 0 ? 0 : lo; fd < SHIM_FD_MAX; fd++)
				shim_unwatch(fd);
	}
	shim_real.closefrom(lo);
}

SHIM_API int dup2(int old, int fd)
{
	if (!shim_real.dup2)
		return (int)syscall(SYS_dup2, old, fd);
	if (shim_on) {
		shim_fd_touched(fd, fd);
		if (shim_globbing && old != fd)
			shim_unwatch(fd);
	}
	return shim_real.dup2(old, fd);
}

SHIM_API int dup3(int old, int fd, int flags)
{
	if (!shim_real.dup3)
		return (int)syscall(SYS_dup3, old, fd, flags);
	if (shim_on) {
		shim_fd_touched(fd, fd);
		if (shim_globbing)
			shim_unwatch(fd);
	}
	return shim_real.dup3(old, fd, flags);
}

SHIM_API int fclose(FILE *fp)
{
	SHIM_NEED(fclose);
	if (shim_globbing)
		shim_unwatch(shim_file_fd(fp));
	return shim_real.fclose(fp);
}
