/*
 * supervise.c - runs the captured command as a child and reads the capture
 * until everything that writes to it has ended (supervise.h).
 */
#include "capture/supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mono.h"

#define SUPERVISE_POLL_MS 10
#define SUPERVISE_FDS 256
/*
 * How long the command's other processes have, once it ended, before the
 * reading goes on in the background: a command that leaves a process
 * running returns as it would without the capture (its resource trackers
 * and helpers that end with it are read to their end in the foreground).
 */
#define SUPERVISE_LINGER_MS 300

static const int supervise_forward[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGWINCH };

static struct sigaction supervise_xfsz;   /* SIGXFSZ as the caller had it */
static int supervise_xfsz_saved;

void supervise_ignore_xfsz(void)
{
	struct sigaction ign;

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	if (sigaction(SIGXFSZ, &ign, &supervise_xfsz) == 0)
		supervise_xfsz_saved = 1;
}

/* In the child: back to the caller's signal mask, then the command. Never returns. */
static void supervise_child(char **argv, const sigset_t *mask, int errfd)
{
	int e;

	sigprocmask(SIG_SETMASK, mask, NULL);
	if (supervise_xfsz_saved)
		sigaction(SIGXFSZ, &supervise_xfsz, NULL);
	execvp(argv[0], argv);
	e = errno;
	if (write(errfd, &e, sizeof(e)) != (ssize_t)sizeof(e))
		_exit(127);
	_exit(127);
}

/*
 * The command ended and processes of the capture live on: a fork of this
 * process reads their rings until the last one ends, and this one returns
 * (1) to exit as the command did. The fork is not their parent: how one
 * that dies by a signal ended is read from /proc while it is a zombie, or
 * is "unknown". 0 in the fork, which goes on reading; -1 when none could be
 * made (then this process goes on reading).
 */
static int supervise_background(struct consume *c)
{
	pid_t bg;
	int null;

	fflush(NULL);
	bg = fork();
	if (bg < 0)
		return -1;
	if (bg > 0) {
		/* the processes wake and check the new reader from now on */
		consume_set_reader(c, bg);
		return 1;
	}
	/* hold none of the terminal's or a pipeline's ends: the command's own ended */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
	return 0;
}

/* Reaps every child that ended; returns 1 when `cmd` was among them. */
static int supervise_reap(struct consume *c, pid_t cmd, int *wstatus)
{
	int st, got = 0;
	pid_t p;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		consume_reaped(c, p, st);
		if (p == cmd) {
			*wstatus = st;
			got = 1;
		}
	}
	return got;
}

enum status supervise_run(const struct supervise_opts *o, int *wstatus, struct status_info *si)
{
	struct pollfd fds[SUPERVISE_FDS];
	sigset_t set, old;
	int sfd = -1, errp[2] = { -1, -1 }, e = 0, cmd_done = 0, stop = 0, bg = 0;
	int64_t done_ms = 0;
	size_t i, n;
	ssize_t r;
	pid_t pid;
	enum status st = STATUS_OK;

	*wstatus = 0;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGURG);   /* a ring that filled up: read now */
	for (i = 0; i < sizeof(supervise_forward) / sizeof(supervise_forward[0]); i++)
		sigaddset(&set, supervise_forward[i]);
	if (sigprocmask(SIG_BLOCK, &set, &old))
		return status_set(si, STATUS_IO, "cannot block signals: %s", strerror(errno));
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || pipe2(errp, O_CLOEXEC)) {
		st = status_set(si, STATUS_IO, "cannot set up: %s", strerror(errno));
		goto out;
	}
	/* orphans of the capture come here, so that their ends are known */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		st = status_set(si, STATUS_IO, "cannot fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		supervise_child(o->argv, &old, errp[1]);

	close(errp[1]);
	errp[1] = -1;
	r = read(errp[0], &e, sizeof(e));
	if (r == (ssize_t)sizeof(e)) {
		waitpid(pid, wstatus, 0);
		consume_round(o->consume);
		st = status_set(si, STATUS_CHILD, "'%s' cannot be run: %s", o->argv[0], strerror(e));
		goto out;
	}
	for (;;) {
		struct signalfd_siginfo ssi;
		size_t open;

		fds[0].fd = sfd;
		fds[0].events = POLLIN;
		fds[0].revents = 0;
		n = 1 + consume_pollfds(o->consume, fds + 1, SUPERVISE_FDS - 1);
		poll(fds, (nfds_t)n, SUPERVISE_POLL_MS);
		while (read(sfd, &ssi, sizeof(ssi)) == (ssize_t)sizeof(ssi)) {
			int sig = (int)ssi.ssi_signo;

			if (sig == SIGCHLD || sig == SIGURG)
				continue;
			if (cmd_done) {
				/* asked to stop while others still write: stop waiting for them */
				stop = 1;
				continue;
			}
			/* the terminal's signals reached the whole group, the command too */
			if (ssi.ssi_code != SI_KERNEL)
				kill(pid, sig);
		}
		if (!cmd_done && supervise_reap(o->consume, pid, wstatus)) {
			cmd_done = 1;
			done_ms = mono_ns() / 1000000;
		} else if (cmd_done) {
			int other;
			supervise_reap(o->consume, pid, &other);
		}
		open = consume_round(o->consume);
		if (cmd_done && (open == 0 || stop))
			break;
		if (cmd_done && !bg && o->background && mono_ns() / 1000000 - done_ms >= SUPERVISE_LINGER_MS) {
			int r = supervise_background(o->consume);
			if (r == 1) {
				*o->background = 1;
				break;
			}
			if (r == 0)
				*o->background = -1;
			bg = 1;
		}
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (errp[0] >= 0)
		close(errp[0]);
	if (errp[1] >= 0)
		close(errp[1]);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return st;
}

int supervise_mirror(int wstatus)
{
	if (WIFSIGNALED(wstatus)) {
		int sig = WTERMSIG(wstatus);
		struct rlimit none = { 0, 0 };
		struct sigaction sa;
		sigset_t one;

		/* the command's core file, if any, is the command's: none from here */
		setrlimit(RLIMIT_CORE, &none);
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(sig, &sa, NULL);
		sigemptyset(&one);
		sigaddset(&one, sig);
		sigprocmask(SIG_UNBLOCK, &one, NULL);
		fflush(NULL);
		kill(getpid(), sig);
		return 128 + sig;
	}
	return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 1;
}
