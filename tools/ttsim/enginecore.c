/*
 * enginecore.c - the engine core process and its pipe protocol
 * (enginecore.h): the record writer and reader, starting and stopping the
 * process, and the process's own loop.
 */
#include "tools/ttsim/enginecore.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/linebuf.h"
#include "tools/ttsim/log.h"

#define ENGINECORE_IN_FD 3       /* the records, in the child */
#define ENGINECORE_ACK_FD 4      /* the answers to SYNC, in the child */
#define ENGINECORE_SYNC_MS 10000
#define ENGINECORE_READ 65536      /* bytes read from the pipe at a time */

struct ttsim_enginecore {
	int fd;                  /* the write end of the record pipe */
	int ack;                 /* the read end of the answer pipe; -1 none */
	pid_t pid;
	char audit_tag[64];      /* what the audit's lines start with: a LOGURU record's head */
};

/* Appends the first k bytes of s, cut where only the record's newline and
 * the NUL still fit (len <= n - 2 holds before and after); returns the new
 * length. */
static size_t enginecore_put(char *buf, size_t n, size_t len, const char *s, size_t k)
{
	if (k > n - 2 - len)
		k = n - 2 - len;
	memcpy(buf + len, s, k);
	return len + k;
}

/* A field: s up to a newline in it. */
static size_t enginecore_field(char *buf, size_t n, size_t len, const char *s)
{
	return enginecore_put(buf, n, len, s, strcspn(s, "\n"));
}

size_t ttsim_enginecore_encode(const struct ttsim_enginecore_rec *r, char *buf, size_t n)
{
	char head[2] = { (char)r->kind, '|' };
	size_t len;

	if (n < 2) {
		if (n)
			buf[0] = '\0';
		return 0;
	}
	len = enginecore_put(buf, n, 0, head, 2);
	if (r->kind == TTSIM_ENGINECORE_VLLM || r->kind == TTSIM_ENGINECORE_LOGURU) {
		len = enginecore_field(buf, n, len, r->level ? r->level : "INFO");
		len = enginecore_put(buf, n, len, "|", 1);
		len = enginecore_field(buf, n, len, r->where ? r->where : "");
		len = enginecore_put(buf, n, len, "|", 1);
	}
	if (r->kind != TTSIM_ENGINECORE_SYNC && r->text)
		len = enginecore_field(buf, n, len, r->text);
	buf[len++] = '\n';
	buf[len] = '\0';
	return len;
}

int ttsim_enginecore_decode(char *line, struct ttsim_enginecore_rec *r)
{
	char *f2, *f3;

	memset(r, 0, sizeof(*r));
	if (!line[0] || line[1] != '|')
		return -1;
	r->kind = (enum ttsim_enginecore_kind)line[0];
	switch (r->kind) {
	case TTSIM_ENGINECORE_SYNC:
		return 0;
	case TTSIM_ENGINECORE_SPDLOG:
		r->text = line + 2;
		return 0;
	case TTSIM_ENGINECORE_VLLM:
	case TTSIM_ENGINECORE_LOGURU:
		f2 = strchr(line + 2, '|');
		f3 = f2 ? strchr(f2 + 1, '|') : NULL;
		if (!f3)
			return -1;
		*f2 = *f3 = '\0';
		r->level = line + 2;
		r->where = f2 + 1;
		r->text = f3 + 1;
		return 0;
	}
	return -1;
}

/* Writes a record as the engine prints it, in this process. */
static void enginecore_print(const struct ttsim_enginecore_rec *r)
{
	switch (r->kind) {
	case TTSIM_ENGINECORE_LOGURU:
		ttsim_loguru(STDERR_FILENO, r->level, r->where, "%s", r->text);
		break;
	case TTSIM_ENGINECORE_SPDLOG:
		(void)dprintf(STDOUT_FILENO, "%s%s\n", ttsim_log_proc_prefix(1), r->text);
		break;
	case TTSIM_ENGINECORE_VLLM:
		ttsim_log(STDOUT_FILENO, r->level, r->where, "%s", r->text);
		break;
	case TTSIM_ENGINECORE_SYNC:
		break;
	}
}

void ttsim_enginecore_send(struct ttsim_enginecore *ec, enum ttsim_enginecore_kind kind,
			   const char *level, const char *where, const char *fmt, ...)
{
	char line[8192], msg[7000];
	struct ttsim_enginecore_rec r = { kind, level, where, msg };
	va_list ap;
	size_t len;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!ec) {
		enginecore_print(&r);
		return;
	}
	len = ttsim_enginecore_encode(&r, line, sizeof(line));
	(void)ttsim_log_write_all(ec->fd, line, len);
}

struct ttsim_enginecore *ttsim_enginecore_start(const char *name)
{
	static const struct ttsim_enginecore_rec audit_head = {
		TTSIM_ENGINECORE_LOGURU, "INFO", "generator:1930", ""
	};
	struct ttsim_enginecore *ec = NULL;
	int pfd[2] = { -1, -1 }, afd[2] = { -1, -1 };
	size_t len;
	pid_t pid;

	ec = calloc(1, sizeof(*ec));
	if (!ec || pipe2(pfd, O_CLOEXEC))
		goto none;
	/* without the answer pipe the engine's lines may come after "listening" */
	if (pipe2(afd, O_CLOEXEC))
		afd[0] = afd[1] = -1;
	pid = fork();
	if (pid < 0)
		goto none;
	if (pid == 0) {
		/* fds 3 and 4 without close-on-exec (dup2 onto itself keeps the
		 * flag); afd[1] > pfd[0], so fd 3 is set first */
		if (pfd[0] == ENGINECORE_IN_FD ? fcntl(ENGINECORE_IN_FD, F_SETFD, 0) < 0 :
		    dup2(pfd[0], ENGINECORE_IN_FD) < 0)
			_exit(127);
		if (afd[1] >= 0 && (afd[1] == ENGINECORE_ACK_FD ? fcntl(ENGINECORE_ACK_FD, F_SETFD, 0) < 0 :
				    dup2(afd[1], ENGINECORE_ACK_FD) < 0))
			_exit(127);
		execl("/proc/self/exe", "ttsim", "engine-core", name, (char *)NULL);
		_exit(127);
	}
	close(pfd[0]);
	if (afd[1] >= 0)
		close(afd[1]);
	ec->fd = pfd[1];
	ec->ack = afd[0];
	ec->pid = pid;
	/* the audit's lines are LOGURU records: the head without its newline */
	len = ttsim_enginecore_encode(&audit_head, ec->audit_tag, sizeof(ec->audit_tag));
	ec->audit_tag[len ? len - 1 : 0] = '\0';
	return ec;
none:
	fprintf(stderr, "ttsim serve: no engine process (%s): its lines are printed by this one\n",
		strerror(errno));
	if (pfd[0] >= 0) {
		close(pfd[0]);
		close(pfd[1]);
	}
	if (afd[0] >= 0) {
		close(afd[0]);
		close(afd[1]);
	}
	free(ec);
	return NULL;
}

void ttsim_enginecore_sync(struct ttsim_enginecore *ec)
{
	static const struct ttsim_enginecore_rec sync = { TTSIM_ENGINECORE_SYNC, NULL, NULL, NULL };
	struct pollfd p;
	char line[8], b;
	size_t len;
	int r;

	if (!ec || ec->ack < 0)
		return;
	len = ttsim_enginecore_encode(&sync, line, sizeof(line));
	if (ttsim_log_write_all(ec->fd, line, len) < 0)
		return;
	p.fd = ec->ack;
	p.events = POLLIN;
	while ((r = poll(&p, 1, ENGINECORE_SYNC_MS)) < 0 && errno == EINTR)
		;
	if (r > 0)
		(void)!read(ec->ack, &b, 1);
}

struct ttsim_audit *ttsim_enginecore_audit(struct ttsim_enginecore *ec)
{
	struct ttsim_audit *a;

	if (!ec)
		return NULL;
	a = ttsim_audit_new_fd(ec->fd, true);
	if (a)
		ttsim_audit_set_tag(a, ec->audit_tag);
	return a;
}

void ttsim_enginecore_stop(struct ttsim_enginecore *ec)
{
	int st;

	if (!ec)
		return;
	if (ec->ack >= 0)
		close(ec->ack);
	close(ec->fd);
	while (waitpid(ec->pid, &st, 0) < 0 && errno == EINTR)
		;
	free(ec);
}

/* The engine core's pipe as lines (base/linebuf): their decoding scratch. */
struct enginecore_in {
	char *scratch;          /* a line, NUL-terminated for ttsim_enginecore_decode */
};

static void enginecore_on_line(void *ctx, const char *line, size_t n, int overlong)
{
	struct enginecore_in *in = ctx;
	struct ttsim_enginecore_rec r;

	/* an overlong record is cut: its first TTSIM_ENGINECORE_LINE_MAX bytes */
	(void)overlong;
	memcpy(in->scratch, line, n);
	in->scratch[n] = '\0';
	if (ttsim_enginecore_decode(in->scratch, &r) == 0) {
		if (r.kind == TTSIM_ENGINECORE_SYNC)
			(void)!write(ENGINECORE_ACK_FD, "y", 1);
		else
			enginecore_print(&r);
	}
}

int ttsim_enginecore_main(const char *name)
{
	char *held = malloc(TTSIM_ENGINECORE_LINE_MAX), *rd = malloc(ENGINECORE_READ);
	struct enginecore_in in = { malloc(TTSIM_ENGINECORE_LINE_MAX + 1) };
	struct linebuf lb;
	ssize_t got;
	sigset_t sigs;

	if (!held || !rd || !in.scratch) {
		free(held);
		free(rd);
		free(in.scratch);
		return 1;
	}
	linebuf_init(&lb, held, TTSIM_ENGINECORE_LINE_MAX);
	/* the server stops it by closing the pipe, after its last line */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	ttsim_log_setup(name && (!strcmp(name, "EngineCore") || !strcmp(name, "EngineCore_DP0")) ?
			name : "EngineCore_DP0");
	for (;;) {
		got = read(ENGINECORE_IN_FD, rd, ENGINECORE_READ);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		linebuf_feed(&lb, rd, (size_t)got, enginecore_on_line, &in);
	}
	free(held);
	free(rd);
	free(in.scratch);
	return 0;
}
