/*
 * io.c - the raw interposers of libttaudit-shim.so: write and writev on a
 * watched fd go through the fd's stream (stream.c); open, fopen, fdopen of
 * a file that TTAUDIT_WATCH names start watching it; close, close_range,
 * closefrom, dup2 and dup3 end a watched fd's stream (its partial line is
 * recorded as partial) and tell the core that the capture fd may be gone.
 *
 * A vfork child runs these in its parent's memory (CPython's
 * _posixsubprocess calls close_range, close and dup2 there): it has its own
 * fd table, so the parent's state is left alone, and the child is marked so
 * that its writes are not fed to the parent's streams.
 */
#include "shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SHIM_API __attribute__((visibility("default")))
#define SHIM_NEED(fn) do { if (!shim_real.fn) shim_resolve(); } while (0)

static int shim_file_fd(FILE *fp)
{
	return fp ? fp->_fileno : -1;
}

/* --- raw writes ---------------------------------------------------------- */

struct shim_wsys {
	int fd;
	const void *buf;
	size_t n;
	const struct iovec *iov;
	int cnt;
};

static ssize_t shim_sys_write(void *ctx)
{
	struct shim_wsys *c = ctx;

	return shim_real.write(c->fd, c->buf, c->n);
}

static ssize_t shim_sys_writev(void *ctx)
{
	struct shim_wsys *c = ctx;

	return shim_real.writev(c->fd, c->iov, c->cnt);
}

SHIM_API ssize_t write(int fd, const void *buf, size_t n)
{
	struct shim_wsys c = { fd, buf, n, NULL, 0 };
	struct iovec iov = { (void *)buf, n };

	if (!atomic_load_explicit(&shim_resolved, memory_order_acquire))
		return syscall(SYS_write, fd, buf, n);
	if (!shim_watching(fd))
		return shim_real.write(fd, buf, n);
	return shim_stream_write(fd, &iov, 1, shim_sys_write, &c);
}

SHIM_API ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	struct shim_wsys c = { fd, NULL, 0, iov, cnt };

	if (!atomic_load_explicit(&shim_resolved, memory_order_acquire))
		return syscall(SYS_writev, fd, iov, cnt);
	if (!shim_watching(fd) || cnt < 0)
		return shim_real.writev(fd, iov, cnt);
	return shim_stream_write(fd, iov, cnt, shim_sys_writev, &c);
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
	if (fp && shim_globbing && mode && (strchr(mode, 'w') || strchr(mode, 'a') || strchr(mode, '+'))) {
		int e = errno;
		shim_opened(shim_file_fd(fp), path, O_WRONLY);
		shim_stdio_track(fp);
		errno = e;
	}
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

SHIM_API FILE *fdopen(int fd, const char *mode)
{
	FILE *fp;

	SHIM_NEED(fdopen);
	fp = shim_real.fdopen(fd, mode);
	if (fp && shim_watching(fd)) {
		int e = errno;
		shim_stdio_track(fp);
		errno = e;
	}
	return fp;
}

/* --- the host closing or replacing fds ----------------------------------- */

/*
 * fds lo..hi are about to be closed or replaced. In this process: each
 * watched one's partial line is recorded, files named by TTAUDIT_WATCH stop
 * being watched, and the capture fd is checked before the next record. In
 * a vfork child: nothing, but the child is marked.
 */
static void shim_closing(unsigned lo, unsigned hi)
{
	unsigned top = hi < SHIM_FD_MAX ? hi : SHIM_FD_MAX - 1, fd, w;
	int any = 0, e = errno;

	if (!shim_on)
		return;
	for (w = lo / 64; lo <= top && w <= top / 64 && !any; w++) {
		uint64_t m = atomic_load_explicit(&shim_watch_bits[w], memory_order_relaxed);
		if (w == lo / 64)
			m &= ~(uint64_t)0 << (lo % 64);
		if (w == top / 64 && top % 64 != 63)
			m &= ((uint64_t)1 << (top % 64 + 1)) - 1;
		any = m != 0;
	}
	if (any && shim_foreign()) {
		shim_vfork_mark = (pid_t)syscall(SYS_getpid);
		errno = e;
		return;
	}
	shim_fd_touched(lo > INT32_MAX ? INT32_MAX : (int)lo, hi > INT32_MAX ? INT32_MAX : (int)hi);
	for (w = lo / 64; any && lo <= top && w <= top / 64; w++) {
		uint64_t m = atomic_load_explicit(&shim_watch_bits[w], memory_order_relaxed);
		while (m) {
			fd = w * 64 + (unsigned)__builtin_ctzll(m);
			m &= m - 1;
			if (fd < lo || fd > top)
				continue;
			if (shim_bit(shim_glob_bits, (int)fd))
				shim_unwatch((int)fd);
			else
				shim_stream_close((int)fd);
		}
	}
	errno = e;
}

SHIM_API int close(int fd)
{
	if (!shim_real.close)
		return (int)syscall(SYS_close, fd);
	if (fd >= 0)
		shim_closing((unsigned)fd, (unsigned)fd);
	return shim_real.close(fd);
}

SHIM_API int close_range(unsigned lo, unsigned hi, int flags)
{
	if (!shim_real.close_range)
		return (int)syscall(SYS_close_range, lo, hi, flags);
	/* CLOSE_RANGE_CLOEXEC only marks them */
	if (!(flags & 4 /* CLOSE_RANGE_CLOEXEC */) && lo <= hi)
		shim_closing(lo, hi);
	return shim_real.close_range(lo, hi, flags);
}

SHIM_API void closefrom(int lo)
{
	SHIM_NEED(closefrom);
	shim_closing(lo < 0 ? 0 : (unsigned)lo, ~0u);
	shim_real.closefrom(lo);
}

SHIM_API int dup2(int old, int fd)
{
	if (!shim_real.dup2)
		return (int)syscall(SYS_dup2, old, fd);
	if (fd >= 0 && old != fd)
		shim_closing((unsigned)fd, (unsigned)fd);
	return shim_real.dup2(old, fd);
}

SHIM_API int dup3(int old, int fd, int flags)
{
	if (!shim_real.dup3)
		return (int)syscall(SYS_dup3, old, fd, flags);
	if (fd >= 0)
		shim_closing((unsigned)fd, (unsigned)fd);
	return shim_real.dup3(old, fd, flags);
}
