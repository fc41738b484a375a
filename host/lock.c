#include "host/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/procstat.h"

struct lock {
	char dir[LOCK_PATH_MAX];
	char owner[LOCK_PATH_MAX + 16];   /* dir/owner */
	char tmp[LOCK_PATH_MAX + 16];     /* dir/owner.tmp, renamed into place */
	volatile sig_atomic_t held;
};

const char *lock_state_name(enum lock_state s)
{
	switch (s) {
	case LOCK_FREE: return "free";
	case LOCK_HELD: return "held";
	case LOCK_STALE: return "stale";
	default: return "unknown";
	}
}

struct lock *lock_new(const char *dir)
{
	struct lock *l;

	if (!dir)
		dir = LOCK_DEFAULT_DIR;
	if (!*dir || strlen(dir) >= LOCK_PATH_MAX)
		return NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	snprintf(l->dir, sizeof(l->dir), "%s", dir);
	snprintf(l->owner, sizeof(l->owner), "%s/owner", dir);
	snprintf(l->tmp, sizeof(l->tmp), "%s/owner.tmp", dir);
	return l;
}

void lock_free(struct lock *l)
{
	if (!l)
		return;
	if (l->held)
		lock_release(l, NULL);
	free(l);
}

const char *lock_dir(const struct lock *l)
{
	return l->dir;
}

const char *lock_remove_command(const struct lock *l, char *buf, size_t n)
{
	snprintf(buf, n, "rm -r -- '%s'", l->dir);
	return buf;
}

static void lock_one_line(char *s)
{
	for (; *s; s++)
		if (*s == '\n' || *s == '\r')
			*s = ' ';
}

/* Reads the owner file; 0 when it names a pid. */
static int lock_read_owner(const struct lock *l, struct lock_owner *o)
{
	char line[1200];
	FILE *f;
	int have_pid = 0;

	memset(o, 0, sizeof(*o));
	f = fopen(l->owner, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, '='), *end;

		if (!v)
			continue;
		*v++ = '\0';
		v[strcspn(v, "\n")] = '\0';
		if (!strcmp(line, "pid")) {
			errno = 0;
			o->pid = strtol(v, &end, 10);
			have_pid = !errno && end != v && !*end && o->pid > 0;
		} else if (!strcmp(line, "started")) {
			o->started = strtoll(v, NULL, 10);
		} else if (!strcmp(line, "user")) {
			snprintf(o->user, sizeof(o->user), "%s", v);
		} else if (!strcmp(line, "host")) {
			snprintf(o->host, sizeof(o->host), "%s", v);
		} else if (!strcmp(line, "command")) {
			snprintf(o->command, sizeof(o->command), "%s", v);
		}
	}
	fclose(f);
	return have_pid ? 0 : -1;
}

static void lock_hostname(char *buf, size_t n)
{
	if (gethostname(buf, n) != 0)
		snprintf(buf, n, "?");
	buf[n - 1] = '\0';
}

enum status lock_inspect(const struct lock *l, struct lock_owner *holder, enum lock_state *state,
			 struct status_info *si)
{
	struct lock_owner o;
	struct stat sb;
	char host[256];

	*state = LOCK_FREE;
	if (holder)
		memset(holder, 0, sizeof(*holder));
	if (stat(l->dir, &sb) != 0) {
		if (errno == ENOENT)
			return STATUS_OK;
		return status_set(si, STATUS_IO, "%s: %s", l->dir, strerror(errno));
	}
	if (!S_ISDIR(sb.st_mode)) {
		*state = LOCK_UNKNOWN;
		return STATUS_OK;
	}
	if (lock_read_owner(l, &o) != 0) {
		*state = LOCK_UNKNOWN;
		return STATUS_OK;
	}
	if (holder)
		*holder = o;
	lock_hostname(host, sizeof(host));
	/* A lock written on another host (shared /tmp) cannot be checked from here. */
	if (o.host[0] && strcmp(o.host, host)) {
		*state = LOCK_HELD;
		return STATUS_OK;
	}
	if (kill((pid_t)o.pid, 0) == 0 || errno == EPERM)
		*state = LOCK_HELD;
	else
		*state = LOCK_STALE;
	return STATUS_OK;
}

static enum status lock_write_owner(struct lock *l, const char *command, struct status_info *si)
{
	struct passwd *pw = getpwuid(getuid());
	char host[256], when[64], cmd[1024];
	time_t now = time(NULL);
	struct tm tm;
	FILE *f;
	int bad;

	lock_hostname(host, sizeof(host));
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(cmd, sizeof(cmd), "%s", command ? command : "");
	lock_one_line(cmd);
	f = fopen(l->tmp, "wxe");
	if (!f)
		return status_set(si, STATUS_IO, "%s: %s", l->tmp, strerror(errno));
	fprintf(f, "user=%s\nhost=%s\npid=%ld\nstarted=%lld\nstarted_utc=%s\ncommand=%s\n",
		pw ? pw->pw_name : "?", host, (long)getpid(), (long long)now, when, cmd);
	bad = ferror(f);
	bad |= fclose(f);
	if (bad || rename(l->tmp, l->owner) != 0) {
		int e = errno;

		unlink(l->tmp);
		return status_set(si, STATUS_IO, "%s: %s", l->owner, strerror(e));
	}
	return STATUS_OK;
}

enum status lock_acquire(struct lock *l, const char *command, struct lock_owner *holder,
			 enum lock_state *state, struct status_info *si)
{
	enum lock_state s = LOCK_FREE;
	enum status st;

	if (holder)
		memset(holder, 0, sizeof(*holder));
	if (mkdir(l->dir, 0755) != 0) {
		if (errno != EEXIST)
			return status_set(si, STATUS_IO, "%s: %s", l->dir, strerror(errno));
		st = lock_inspect(l, holder, &s, si);
		if (state)
			*state = st ? LOCK_UNKNOWN : s;
		if (st)
			return st;
		if (s == LOCK_FREE)  /* removed between mkdir and stat: let the caller retry */
			s = LOCK_UNKNOWN;
		if (state)
			*state = s;
		return status_set(si, STATUS_BUSY, "%s: host lock is %s", l->dir, lock_state_name(s));
	}
	st = lock_write_owner(l, command, si);
	if (st) {
		rmdir(l->dir);
		return st;
	}
	l->held = 1;
	if (state)
		*state = LOCK_FREE;
	return STATUS_OK;
}

enum status lock_release(struct lock *l, struct status_info *si)
{
	struct lock_owner o;

	if (!l->held)
		return status_set(si, STATUS_USAGE, "%s: not held by this process", l->dir);
	if (lock_read_owner(l, &o) != 0 || o.pid != (long)getpid()) {
		l->held = 0;
		return status_set(si, STATUS_BUSY, "%s: owner file no longer names this process; left alone",
				  l->dir);
	}
	l->held = 0;
	if (unlink(l->owner) != 0 || rmdir(l->dir) != 0)
		return status_set(si, STATUS_IO, "%s: %s", l->dir, strerror(errno));
	return STATUS_OK;
}

/* --- lock_run: one per process, so the handler's state is static ------- */

static struct lock *run_lock;
static volatile sig_atomic_t run_child;

/* Async-signal-safe only: kill, waitpid, unlink, rmdir, _exit. */
static void lock_on_signal(int sig)
{
	pid_t child = (pid_t)run_child;

	if (child > 0) {
		kill(child, sig);
		while (waitpid(child, NULL, 0) == -1 && errno == EINTR)
			;
	}
	if (run_lock && run_lock->held) {
		run_lock->held = 0;
		unlink(run_lock->owner);
		rmdir(run_lock->dir);
	}
	_exit(128 + sig);
}

enum status lock_run(struct lock *l, char *const argv[], int *exit_code, struct status_info *si)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa, old[3];
	sigset_t block, prev;
	enum status st = STATUS_OK;
	int wst = 0, errpipe[2] = { -1, -1 }, child_errno = 0;
	pid_t pid;
	size_t i;

	*exit_code = 0;
	if (!l->held)
		return status_set(si, STATUS_USAGE, "%s: lock_run needs the lock held", l->dir);
	if (pipe2(errpipe, O_CLOEXEC) != 0)
		return status_set(si, STATUS_IO, "pipe: %s", strerror(errno));
	run_lock = l;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = lock_on_signal;
	sa.sa_flags = SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&block);
	for (i = 0; i < 3; i++) {
		sigaddset(&sa.sa_mask, sigs[i]);
		sigaddset(&block, sigs[i]);
	}
	/* Blocked across fork so the handler never sees a child pid half set. */
	sigprocmask(SIG_BLOCK, &block, &prev);
	for (i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	pid = fork();
	if (pid == 0) {
		int e;

		for (i = 0; i < 3; i++)
			sigaction(sigs[i], &old[i], NULL);
		sigprocmask(SIG_SETMASK, &prev, NULL);
		execvp(argv[0], argv);
		e = errno;
		if (write(errpipe[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	if (pid < 0) {
		st = status_set(si, STATUS_CHILD, "fork: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &prev, NULL);
		goto out;
	}
	run_child = pid;
	sigprocmask(SIG_SETMASK, &prev, NULL);
	close(errpipe[1]);
	errpipe[1] = -1;
	while (read(errpipe[0], &child_errno, sizeof(child_errno)) == -1 && errno == EINTR)
		;
	while (waitpid(pid, &wst, 0) == -1) {
		if (errno != EINTR) {
			st = status_set(si, STATUS_CHILD, "waitpid: %s", strerror(errno));
			goto out;
		}
	}
	run_child = 0;
	if (child_errno) {
		*exit_code = 127;
		st = status_set(si, STATUS_CHILD, "%s: %s", argv[0], strerror(child_errno));
	} else if (WIFEXITED(wst)) {
		*exit_code = WEXITSTATUS(wst);
	} else if (WIFSIGNALED(wst)) {
		*exit_code = 128 + WTERMSIG(wst);
	}
out:
	sigprocmask(SIG_BLOCK, &block, &prev);
	for (i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	sigprocmask(SIG_SETMASK, &prev, NULL);
	run_lock = NULL;
	if (errpipe[0] >= 0)
		close(errpipe[0]);
	if (errpipe[1] >= 0)
		close(errpipe[1]);
	if (l->held) {
		enum status rst = lock_release(l, st ? NULL : si);

		if (!st)
			st = rst;
	}
	return st;
}

int lock_pid_is_ours(long pid)
{
	long cur = (long)getpid();
	int hops;

	for (hops = 0; hops < 128 && cur > 0; hops++) {
		if (cur == pid)
			return 1;
		cur = (long)procstat_read((pid_t)cur, PROCSTAT_PPID, NULL);
	}
	return 0;
}
