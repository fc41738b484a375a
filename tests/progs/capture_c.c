/*
 * capture_c.c - a C host for the capture e2e tests (tests/e2e/4x-capture-*.sh).
 * It writes merge-audit lines and banners through every path the shim
 * wraps, and reports on stderr what its write calls returned, so a test can
 * check that the results are the same with and without the shim.
 *
 * usage: capture_c MODE   (basic, closefds, nonblock, epipe, eintr, signal, threads)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tests/progs/put.h"

static const char epipe_line[] =
	"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"seq\":1}\n";

static int audit_line(char *buf, size_t cap, const char *via, int seq)
{
	return snprintf(buf, cap, "INFO 11-29 20:41:02 [generator.py:1930] MERGE_AUDIT "
			"{\"ev\":\"merge\",\"via\":\"%s\",\"seq\":%d,\"step\":%d,\"host_pos\":[22,25],\"dev_pos\":[23,-1]}\n",
			via, seq, seq);
}


static int mode_basic(void)
{
	char buf[512];
	struct iovec iov[4];
	int i;
	const char *line;

	/* stdio on stdout (buffered) and stderr (unbuffered) */
	printf("INFO starting capture_c\n");
	printf("MERGE_AUDIT {\"ev\":\"merge\",\"via\":\"printf\",\"seq\":%d,\"step\":1,\"host_pos\":[1],\"dev_pos\":[2]}\n", 1);
	fprintf(stderr, "INFO 11-29 20:41:02 [generator.py:1930] QWEN36_MERGE_STAMP_GUARD engaged: merge requires the buffer's generation stamp to match\n");
	fprintf(stderr, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"fprintf\",\"seq\":%d}\n", 2);
	puts("MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"puts\",\"seq\":3}");
	fputs("MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"fputs\",\"seq\":4}\n", stdout);
	line = "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"fwrite\",\"seq\":5}\n";
	fwrite(line, 1, strlen(line), stdout);
	/* one line in many stdio calls */
	fputs("MERGE_AUDIT {\"ev\":", stdout);
	printf("\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"%s\",", "pieces");
	for (line = "\"seq\":6}"; *line; line++)
		putc(*line, stdout);
	putchar('\n');
	printf("a line with {braces} that is not an audit line\n");
	fflush(stdout);
	/* raw writes: whole lines, a line in three pieces, many lines at once */
	audit_line(buf, sizeof(buf), "write", 7);
	put(1, buf);
	put(2, "INFO vLLM API server version 0.9.2\n");
	put(1, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],");
	put(1, "\"via\":\"split\",");
	put(1, "\"seq\":8}\n");
	put(1, "{\"ev\":\"decode\",\"seq\":9}\nnot audit\n{\"ev\":\"prefill\",\"seq\":10,\"slots\":[1]}\n");
	/* writev with a line across iovecs */
	iov[0].iov_base = (void *)"MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"writev\",";
	iov[0].iov_len = strlen(iov[0].iov_base);
	iov[1].iov_base = (void *)"\"seq\":11}\n{\"ev\":\"decode\",";
	iov[1].iov_len = strlen(iov[1].iov_base);
	iov[2].iov_base = (void *)"\"seq\":12}\n";
	iov[2].iov_len = strlen(iov[2].iov_base);
	iov[3].iov_base = (void *)"";
	iov[3].iov_len = 0;
	if (writev(2, iov, 4) < 0)
		return 9;
	dprintf(2, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"dprintf\",\"seq\":%d}\n", 13);
	for (i = 14; i < 40; i++) {
		audit_line(buf, sizeof(buf), "loop", i);
		put(i % 2 + 1, buf);
	}
	/* the last line has no newline: the shim finishes it at exit */
	put(1, "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"tail\",\"seq\":40}");
	return 5;
}

static int max_fd(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur > 4096)
		return 4096;
	return (int)rl.rlim_cur;
}

/* A host that closes or replaces every fd above 2, as daemons do. */
static int mode_closefds(void)
{
	char buf[512];
	int fd, top = max_fd(), devnull;

	audit_line(buf, sizeof(buf), "before-close", 1);
	put(2, buf);
#ifdef SYS_close_range
	if (syscall(SYS_close_range, 3, ~0U, 0) != 0)
#endif
		for (fd = 3; fd < top; fd++)
			close(fd);
	audit_line(buf, sizeof(buf), "after-close-range", 2);
	put(2, buf);
	/* every open fd above 2 now points at /dev/null */
	devnull = open("/dev/null", O_WRONLY);
	for (fd = 3; fd < top; fd++)
		if (fd != devnull && fcntl(fd, F_GETFD) != -1)
			dup2(devnull, fd);
	audit_line(buf, sizeof(buf), "after-dup2", 3);
	put(2, buf);
	for (fd = 3; fd < top; fd++)
		close(fd);
	audit_line(buf, sizeof(buf), "after-close-loop", 4);
	put(2, buf);
	return 0;
}

/* A non-blocking pipe and a slow reader: EAGAIN and partial writes. */
static int mode_nonblock(void)
{
	static char chunk[98304];   /* more than a pipe holds: partial writes */
	int i, eagain = 0, partial = 0;
	size_t len = 0;

	fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
	for (i = 0; i < 3000; i++) {
		char line[256];
		int n = i % 3 ? snprintf(line, sizeof(line), "INFO plain log line %d of the nonblock test\n", i)
			      : audit_line(line, sizeof(line), "nonblock", i);
		if (len + (size_t)n > sizeof(chunk) || i == 2999) {
			size_t off = 0;
			if (i == 2999) {
				memcpy(chunk + len, line, (size_t)n);
				len += (size_t)n;
			}
			while (off < len) {
				ssize_t r = write(1, chunk + off, len - off);
				if (r < 0 && errno == EAGAIN) {
					struct pollfd p = { 1, POLLOUT, 0 };
					eagain++;
					poll(&p, 1, 1000);
					continue;
				}
				if (r < 0)
					return 9;
				if ((size_t)r < len - off)
					partial++;
				off += (size_t)r;
			}
			len = 0;
		}
		if (i != 2999) {
			memcpy(chunk + len, line, (size_t)n);
			len += (size_t)n;
		}
	}
	fprintf(stderr, "eagain=%s partial=%s\n", eagain ? "yes" : "no", partial ? "yes" : "no");
	return 0;
}

/* Writing to a pipe nobody reads: EPIPE, from write() and from stdio. */
static int mode_epipe(void)
{
	int p[2];
	ssize_t r;
	int e, fr;

	signal(SIGPIPE, SIG_IGN);
	if (pipe(p))
		return 9;
	close(p[0]);
	dup2(p[1], 1);
	close(p[1]);
	r = write(1, epipe_line, strlen(epipe_line));
	e = errno;
	fprintf(stderr, "write=%zd errno=%s\n", r, strerrorname_np(e));
	printf("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"seq\":2}\n");
	fr = fflush(stdout);
	e = errno;
	fprintf(stderr, "fflush=%d errno=%s\n", fr, strerrorname_np(e));
	fprintf(stderr, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"after-epipe\",\"seq\":3}\n");
	return 3;
}

static void on_alarm(int sig)
{
	(void)sig;
}

/* A blocking write into a full pipe, interrupted by a signal: EINTR. */
static int mode_eintr(void)
{
	int p[2];
	char junk[4096];
	struct sigaction sa;
	ssize_t r;
	int e;

	memset(junk, 'x', sizeof(junk));
	if (pipe(p))
		return 9;
	dup2(p[1], 1);
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
	while (write(1, junk, sizeof(junk)) > 0)
		;
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) & ~O_NONBLOCK);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;   /* no SA_RESTART */
	sigaction(SIGALRM, &sa, NULL);
	ualarm(100000, 0);
	r = write(1, epipe_line, strlen(epipe_line));
	e = errno;
	fprintf(stderr, "write=%zd errno=%s\n", r, strerrorname_np(e));
	fprintf(stderr, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2],\"via\":\"after-eintr\",\"seq\":2}\n");
	return 0;
}

static volatile sig_atomic_t n_handler;

/* Async-signal-safe: formats by hand and writes with write(2). */
static void on_tick(int sig)
{
	char buf[64] = "{\"ev\":\"tick\",\"seq\":";
	char num[16];
	int n = ++n_handler, i = 0, len = (int)strlen(buf);

	(void)sig;
	do {
		num[i++] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	while (i)
		buf[len++] = num[--i];
	buf[len++] = '}';
	buf[len++] = '\n';
	if (write(2, buf, (size_t)len) < 0)
		_exit(9);
}

/* A signal handler that writes audit lines while the main flow writes too. */
static int mode_signal(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	char buf[512];
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < 20000 || n_handler < 50; i++) {
		audit_line(buf, sizeof(buf), "main", i);
		put(2, buf);
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("main=%d handler=%s\n", i, n_handler > 0 ? "yes" : "no");
	return 0;
}

static void *thread_main(void *arg)
{
	char buf[512];
	int k = (int)(long)arg, i;

	for (i = 0; i < 2000; i++) {
		int n = snprintf(buf, sizeof(buf), "MERGE_AUDIT {\"ev\":\"merge\",\"via\":\"thread-%d\",\"seq\":%d,"
				 "\"step\":%d,\"host_pos\":[1],\"dev_pos\":[2]}\n", k, i, i);
		/* spdlog-style: one fwrite per formatted line, several threads, one FILE */
		fwrite(buf, 1, (size_t)n, k % 2 ? stderr : stdout);
	}
	return NULL;
}

/* Four threads logging through stdio at once, as a C++ logger does. */
static int mode_threads(void)
{
	pthread_t t[4];
	long k;

	for (k = 0; k < 4; k++)
		if (pthread_create(&t[k], NULL, thread_main, (void *)k))
			return 9;
	for (k = 0; k < 4; k++)
		pthread_join(t[k], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "basic";

	if (!strcmp(mode, "basic"))
		return mode_basic();
	if (!strcmp(mode, "closefds"))
		return mode_closefds();
	if (!strcmp(mode, "nonblock"))
		return mode_nonblock();
	if (!strcmp(mode, "epipe"))
		return mode_epipe();
	if (!strcmp(mode, "eintr"))
		return mode_eintr();
	if (!strcmp(mode, "signal"))
		return mode_signal();
	if (!strcmp(mode, "threads"))
		return mode_threads();
	fprintf(stderr, "capture_c: unknown mode '%s'\n", mode);
	return 2;
}
