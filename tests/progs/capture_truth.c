/*
 * capture_truth.c - C hosts for the capture tests that compare a capture
 * with what really reached the fd (tests/e2e/44-capture-truth.sh,
 * 45-capture-death.sh; tests/progs/capcheck.py does the comparison). Built
 * with -O2 like every program here, so glibc's <stdio.h> inlines
 * putc_unlocked, fputc_unlocked, putchar_unlocked and small constant
 * fwrite_unlocked into this file: exactly what a real optimised host does.
 *
 * usage: capture_truth MODE [ARGS]
 *   split N        two threads finish each other's lines with raw write()s
 *   inline N       lines ended by inline stdio on a fully buffered stdout
 *   inline-lb N    the same on a line-buffered stdout (__overflow per byte)
 *   threads N      8 threads fwrite() lines of many lengths to one FILE
 *   exit HOW N     N lines left in stdout's buffer, then HOW: _exit, _Exit,
 *                  exec, exit, abort (a partial raw line is written first)
 *   burst FILE     raw write(), printf and fputs to FILE forever (until killed)
 *   utf8           lines with bytes that are not UTF-8
 *   forkmt         fork while another thread is blocked in write(1) on a
 *                  full pipe; the child writes, exits; fd 1's content goes
 *                  to fd 3
 *   fflush         stdio flushed by fflush, fseek, fclose, setvbuf, freopen
 *   cancel         a thread cancelled while blocked in write(1) on a full pipe;
 *                  then the main thread writes to fd 1 (it must not hang);
 *                  fd 1's content goes to fd 3
 *   flood DIR N    raw write()s of audit lines (one in 997 a banner) to fd 1
 *                  (one in three in two pieces) and, from a second thread, to
 *                  fd 2; after 1,000
 *                  lines DIR/flood.started holds the pid; once DIR/flood.go
 *                  exists, N more lines each and exit 0 (the test stops or
 *                  kills the reader in between: the writing never waits)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/progs/put.h"

/* --- split: one line finished by another thread --------------------------- */

static sem_t turn_a, turn_b;
static long n_split;

static void *split_b(void *arg)
{
	char buf[256];
	long i;

	(void)arg;
	for (i = 0; i < n_split; i++) {
		sem_wait(&turn_b);
		snprintf(buf, sizeof(buf), "\"dev_pos\":[5]}\nMERGE_AUDIT {\"ev\":\"merge\",\"step\":%ld,", 2 * i + 2);
		put(1, buf);
		sem_post(&turn_a);
	}
	return NULL;
}

static int mode_split(long n)
{
	pthread_t t;
	char buf[256];
	long i;

	n_split = n;
	sem_init(&turn_a, 0, 0);
	sem_init(&turn_b, 0, 0);
	if (pthread_create(&t, NULL, split_b, NULL))
		return 9;
	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "MERGE_AUDIT {\"ev\":\"merge\",\"step\":%ld,", 2 * i + 1);
		put(1, buf);
		sem_post(&turn_b);
		sem_wait(&turn_a);
		put(1, "\"dev_pos\":[7]}\n");
	}
	pthread_join(t, NULL);
	return 0;
}

/* --- inline stdio ---------------------------------------------------------- */

static int mode_inline(long n, int line_buffered)
{
	long i;

	if (line_buffered)
		setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 0; i < n; i++) {
		printf("MERGE_AUDIT {\"ev\":\"merge\",\"step\":%ld,\"via\":\"inline-%ld\"}", i, i % 4);
		/* each of these is expanded in place by <stdio.h> at -O2 */
		switch (i % 4) {
		case 0: putc_unlocked('\n', stdout); break;
		case 1: fputc_unlocked('\n', stdout); break;
		case 2: fwrite_unlocked("\n", 1, 1, stdout); break;
		default: putchar_unlocked('\n'); break;
		}
	}
	/* a whole line through inline stdio alone */
	fwrite_unlocked("INLINE!\n", 1, 8, stdout);
	return 0;
}

/* --- threads sharing one FILE ------------------------------------------------ */

static long n_thread_lines;

static void *thread_fwrite(void *arg)
{
	long k = (long)arg, i;
	char buf[2048];

	for (i = 0; i < n_thread_lines; i++) {
		/* lengths from 60 to ~1600 bytes: the 4 KiB buffer flushes mid-line */
		int pad = (int)((i * 37 + k * 11) % 1500);
		int len = snprintf(buf, sizeof(buf), "MERGE_AUDIT {\"ev\":\"merge\",\"t\":%ld,\"seq\":%ld,\"pad\":\"%*s\"}\n",
				   k, i, pad, "");
		fwrite(buf, 1, (size_t)len, stdout);
	}
	return NULL;
}

static int mode_threads(long n)
{
	pthread_t t[8];
	long k;

	n_thread_lines = n;
	for (k = 0; k < 8; k++)
		if (pthread_create(&t[k], NULL, thread_fwrite, (void *)k))
			return 9;
	for (k = 0; k < 8; k++)
		pthread_join(t[k], NULL);
	return 0;
}

/* --- lines still in stdio's buffer when the process ends -------------------- */

static int mode_exit(const char *how, long n)
{
	long i;

	put(1, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":0,\"via\":\"raw-before\"}\n");
	for (i = 1; i <= n; i++)
		printf("MERGE_AUDIT {\"ev\":\"merge\",\"step\":%ld}\n", i);
	/* bytes that reach the fd with no newline after them */
	put(2, "{\"ev\":\"merge\",\"step\":99,\"via\":\"partial\"}");
	if (!strcmp(how, "_exit"))
		_exit(3);
	if (!strcmp(how, "_Exit"))
		_Exit(3);
	if (!strcmp(how, "exec")) {
		execl("/bin/true", "true", (char *)NULL);
		return 9;
	}
	if (!strcmp(how, "execfail")) {
		execl("/nonexistent/program", "program", (char *)NULL);
		put(2, "\n");
		printf("MERGE_AUDIT {\"ev\":\"merge\",\"step\":100,\"via\":\"after-failed-exec\"}\n");
		return 4;
	}
	if (!strcmp(how, "abort"))
		abort();
	exit(3);
}

/* --- a burst, ended by SIGKILL from outside --------------------------------- */

static int mode_burst(const char *path)
{
	FILE *f = fopen(path, "w");
	char buf[256];
	long i;

	if (!f)
		return 9;
	for (i = 0;; i++) {
		int len = snprintf(buf, sizeof(buf), "MERGE_AUDIT {\"ev\":\"merge\",\"step\":%ld,\"via\":\"raw\"}\n", i);
		if (write(1, buf, (size_t)len) != len)
			return 9;
		printf("MERGE_AUDIT {\"ev\":\"merge\",\"step\":%ld,\"via\":\"printf\"}\n", i);
		fprintf(f, "{\"ev\":\"merge\",\"step\":%ld,\"via\":\"file\"}\n", i);
		if (i == 1000) {
			/* the test waits for this file (holding the pid) before it kills */
			int fd = open("burst.started.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (fd >= 0) {
				dprintf(fd, "%ld\n", (long)getpid());
				close(fd);
				rename("burst.started.tmp", "burst.started");
			}
		}
	}
}

/* --- a flood of raw writes, with something done to the reader meanwhile ----- */

static const char *flood_dir;
static long flood_after;
static _Atomic int flood_go;

/* 1 once DIR/NAME exists. */
static int flood_exists(const char *name)
{
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", flood_dir, name);
	return access(path, F_OK) == 0;
}

/* Lines to fd until N after flood.go (seen by the main thread); `split`: one in three in two writes. */
static void flood_lines(int fd, int split)
{
	char buf[256];
	long i, last = -1;

	for (i = 0; i < 2000000; i++) {   /* (a bound, should flood.go never come) */
		int len = i % 997 == 5 ?
			/* a banner now and then: the reader's rules, or the drain's, must see it */
			snprintf(buf, sizeof(buf), "INFO fd %d step %ld QWEN36_MERGE_BATCH_GUARD engaged\n", fd, i) :
			snprintf(buf, sizeof(buf), "MERGE_AUDIT {\"ev\":\"merge\",\"fd\":%d,\"step\":%ld,\"pad\":\"%.*s\"}\n",
				 fd, i, (int)(i % 61), "-------------------------------------------------------------");
		if (split && i % 3 == 0) {
			put_n(fd, buf, 20);
			put_n(fd, buf + 20, (size_t)len - 20);
		} else {
			put_n(fd, buf, (size_t)len);
		}
		if (split && i == 1000) {
			char path[4096], tmp[4096];
			int f;
			snprintf(tmp, sizeof(tmp), "%s/flood.started.tmp", flood_dir);
			snprintf(path, sizeof(path), "%s/flood.started", flood_dir);
			f = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
			if (f >= 0) {
				dprintf(f, "%ld\n", (long)getpid());
				close(f);
				rename(tmp, path);
			}
		}
		if (split && last < 0 && i > 1000 && i % 256 == 0 && flood_exists("flood.go"))
			flood_go = 1;
		if (last < 0 && flood_go)
			last = i + flood_after;
		if (i == last)
			return;
	}
}

static void *flood_fd2(void *arg)
{
	(void)arg;
	flood_lines(2, 0);
	return NULL;
}

static int mode_flood(const char *dir, long n)
{
	pthread_t t;

	flood_dir = dir;
	flood_after = n;
	if (pthread_create(&t, NULL, flood_fd2, NULL))
		return 9;
	flood_lines(1, 1);
	pthread_join(t, NULL);
	return 0;
}

/* --- invalid UTF-8 ----------------------------------------------------------- */

static int mode_utf8(void)
{
	put(1, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"slot_req\":[\"r\xff\xfe\",\"ok\xc3\xa9\"]}\n");
	put(1, "INFO QWEN36_MERGE_BATCH_GUARD engaged \xc3\x28 bad\n");
	put(1, "plain \xed\xa0\x80 surrogate bytes and \xf5 and caf\xc3\xa9\n");
	put(1, "{\"ev\":\"merge\",\"step\":2,\"slot_req\":[\"\xe2\x82\"]}\n");
	return 0;
}

/* --- fork while another thread holds fd 1 ----------------------------------- */

static int pipe_rd;
static _Atomic long writer_tid;

static void *blocked_writer(void *arg)
{
	(void)arg;
	writer_tid = (long)syscall(SYS_gettid);
	put(1, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,\"via\":\"blocked-thread\"}\n");
	return NULL;
}

/* 1 once thread *tid is inside the write system call (1 on x86-64), 0 after 2 s. */
static int in_write(_Atomic long *tidp)
{
	char path[64], buf[64];
	int i, fd;
	ssize_t n;

	for (i = 0; i < 200; i++) {
		long tid = *tidp;
		snprintf(path, sizeof(path), "/proc/self/task/%ld/syscall", tid);
		fd = tid ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n > 0) {
			buf[n] = '\0';
			if (!strncmp(buf, "1 ", 2))
				return 1;
		}
		usleep(10000);
	}
	return 0;
}

/* What the pipe on fd 1 holds so far, copied to fd 3 (the truth) without waiting. */
static void drain_to_3(void)
{
	char buf[65536];
	ssize_t r;

	while ((r = read(pipe_rd, buf, sizeof(buf))) > 0)
		if (write(3, buf, (size_t)r) != r)
			exit(9);
}

/*
 * fd 1 made a pipe that is full to a line boundary, and thread *t started
 * and blocked inside its write(1), so holding fd 1's lock in the shim.
 * Returns 0, or the exit status of the mode `name` when that fails.
 */
static int fd1_blocked(const char *name, pthread_t *t)
{
	static char junk[4096];
	int p[2], i;

	memset(junk, '.', sizeof(junk) - 1);
	junk[sizeof(junk) - 1] = '\n';
	if (pipe(p))
		return 9;
	pipe_rd = p[0];
	dup2(p[1], 1);
	close(p[1]);
	fcntl(pipe_rd, F_SETFL, fcntl(pipe_rd, F_GETFL) | O_NONBLOCK);
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
	while (write(1, junk, sizeof(junk)) > 0)
		;
	/* what is left to fill, so the pipe ends on a line boundary */
	for (i = 0; i < 4096 && write(1, "\n", 1) == 1; i++)
		;
	fcntl(1, F_SETFL, fcntl(1, F_GETFL) & ~O_NONBLOCK);
	if (pthread_create(t, NULL, blocked_writer, NULL))
		return 9;
	if (!in_write(&writer_tid)) {
		char msg[128];
		snprintf(msg, sizeof(msg), "%s: the thread never blocked in write(1)\n", name);
		put(2, msg);
		return 6;
	}
	return 0;
}

static int mode_forkmt(void)
{
	int st = 0, i, r;
	pthread_t t;
	pid_t pid;

	if ((r = fd1_blocked("forkmt", &t)))
		return r;
	pid = fork();
	if (pid == 0) {
		alarm(10);
		put(2, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":2,\"via\":\"child-fd2\"}\n");
		/* fd 1 is full: the parent drains it below */
		put(1, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":3,\"via\":\"child-fd1\"}\n");
		exit(0);
	}
	/* drain the pipe to fd 3 until both writers are done */
	for (i = 0; i < 400; i++) {
		drain_to_3();
		if (waitpid(pid, &st, WNOHANG) == pid) {
			pid = -1;
			break;
		}
		usleep(10000);
	}
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		put(2, "forkmt: child hung\n");
		return 8;
	}
	pthread_join(t, NULL);
	drain_to_3();
	return WIFEXITED(st) ? WEXITSTATUS(st) : 7;
}

/* --- a thread cancelled inside a write --------------------------------------- */

static int mode_cancel(void)
{
	pthread_t t;
	void *ret;
	int r;

	if ((r = fd1_blocked("cancel", &t)))
		return r;
	alarm(10);   /* a lock left held by the cancelled thread would hang what follows */
	pthread_cancel(t);
	pthread_join(t, &ret);
	if (ret != PTHREAD_CANCELED)
		put(2, "cancel: the thread was not cancelled\n");
	drain_to_3();
	put(1, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":2,\"via\":\"after-cancel\"}\n");
	drain_to_3();
	put(2, "cancel: done\n");
	return 0;
}

/* --- flushes through every stdio call that flushes -------------------------- */

static int mode_fflush(const char *dir)
{
	char path[4096];
	FILE *f;
	int i;

	snprintf(path, sizeof(path), "%s/flush-a.jsonl", dir);
	f = fopen(path, "w");
	if (!f)
		return 9;
	for (i = 0; i < 3; i++)
		fprintf(f, "{\"ev\":\"merge\",\"step\":%d,\"via\":\"fflush\"}\n", i);
	fflush(f);
	fprintf(f, "{\"ev\":\"merge\",\"step\":3,\"via\":\"fseek\"}\n");
	fseek(f, 0, SEEK_END);
	fprintf(f, "{\"ev\":\"merge\",\"step\":4,\"via\":\"setvbuf\"}\n");
	setvbuf(f, NULL, _IOLBF, 0);
	fprintf(f, "{\"ev\":\"merge\",\"step\":5,\"via\":\"line-buffered\"}\n");
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	fprintf(f, "{\"ev\":\"merge\",\"step\":6,\"via\":\"freopen\"}\n");
	snprintf(path, sizeof(path), "%s/flush-b.jsonl", dir);
	f = freopen(path, "w", f);
	if (!f)
		return 9;
	fprintf(f, "{\"ev\":\"merge\",\"step\":7,\"via\":\"fclose\"}\n");
	fputs("{\"ev\":\"merge\",\"step\":8,\"via\":\"fclose-partial\"}", f);
	if (fclose(f))
		return 9;
	/* fflush(NULL) flushes stdout too */
	printf("{\"ev\":\"merge\",\"step\":9,\"via\":\"fflush-null\"}\n");
	fflush(NULL);
	printf("{\"ev\":\"merge\",\"step\":10,\"via\":\"exit\"}\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 100;

	if (!strcmp(mode, "split"))
		return mode_split(n);
	if (!strcmp(mode, "inline"))
		return mode_inline(n, 0);
	if (!strcmp(mode, "inline-lb"))
		return mode_inline(n, 1);
	if (!strcmp(mode, "threads"))
		return mode_threads(n);
	if (!strcmp(mode, "exit") && argc > 3)
		return mode_exit(argv[2], atol(argv[3]));
	if (!strcmp(mode, "burst") && argc > 2)
		return mode_burst(argv[2]);
	if (!strcmp(mode, "utf8"))
		return mode_utf8();
	if (!strcmp(mode, "forkmt"))
		return mode_forkmt();
	if (!strcmp(mode, "cancel"))
		return mode_cancel();
	if (!strcmp(mode, "fflush") && argc > 2)
		return mode_fflush(argv[2]);
	if (!strcmp(mode, "flood") && argc > 3)
		return mode_flood(argv[2], atol(argv[3]));
	fprintf(stderr, "usage: capture_truth MODE [ARGS] (see the source)\n");
	return 2;
}
