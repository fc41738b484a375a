/*
 * tailfile.c - one input followed like `tail -F` (tailfile.h): open, start
 * at the end or the start, read without blocking, and notice rotation and
 * truncation when the file has nothing new.
 */
#include "base/tailfile.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/linebuf.h"

#define TAILFILE_READ 65536

struct tailfile {
	char *name;
	bool is_stdin, from_start, done, started;
	bool skip_first;            /* started inside a line: drop up to its newline */
	int fd;                     /* -1: not open */
	dev_t dev;
	ino_t ino;
	off_t off;
	struct linebuf lb;
	char *line, *rd;
	struct tailfile_stats stats;
	tailfile_line_fn fn;
	void *ctx;
	tailfile_note_fn note;
	void *note_ctx;
	bool waiting_noted;         /* said that the name does not exist (yet) */
	bool moved_noted;           /* said that the name is gone while the old file is read */
};

static void tailfile_note(struct tailfile *s, const char *what)
{
	if (s->note)
		s->note(s->note_ctx, what);
}

void tailfile_set_notes(struct tailfile *t, tailfile_note_fn fn, void *ctx)
{
	t->note = fn;
	t->note_ctx = ctx;
}

struct tailfile *tailfile_new(const char *name, bool from_start)
{
	struct tailfile *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->name = strdup(name);
	s->line = malloc(TAILFILE_LINE_MAX);
	s->rd = malloc(TAILFILE_READ);
	if (!s->name || !s->line || !s->rd) {
		tailfile_free(s);
		return NULL;
	}
	s->is_stdin = !strcmp(name, "-");
	s->from_start = from_start;
	s->fd = s->is_stdin ? 0 : -1;
	linebuf_init(&s->lb, s->line, TAILFILE_LINE_MAX);
	return s;
}

void tailfile_free(struct tailfile *s)
{
	if (!s)
		return;
	if (s->fd > 0)
		close(s->fd);
	free(s->name);
	free(s->line);
	free(s->rd);
	free(s);
}

const char *tailfile_name(const struct tailfile *s) { return s->name; }
const struct tailfile_stats *tailfile_stats(const struct tailfile *s) { return &s->stats; }
bool tailfile_done(const struct tailfile *s) { return s->done; }

bool tailfile_up(const struct tailfile *s)
{
	return s->fd >= 0 && !s->done;
}

static void tailfile_on_line(void *ctx, const char *line, size_t n, int overlong)
{
	struct tailfile *s = ctx;

	s->stats.lines++;
	if (overlong)
		s->stats.overlong++;
	s->fn(s->ctx, line, n, overlong != 0);
}

/* Opens the path if it exists: 0 open, 1 not there (yet), -1 error. */
static int tailfile_open(struct tailfile *s, struct status_info *si)
{
	struct stat st;
	int fd = open(s->name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		if (errno == ENOENT) {
			s->started = true;   /* a file that appears later is read whole */
			if (!s->waiting_noted)
				tailfile_note(s, "waiting for the file to appear");
			s->waiting_noted = true;
			return 1;
		}
		status_set_at(si, STATUS_IO, s->name, 0, 0, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		close(fd);
		status_set_at(si, STATUS_IO, s->name, 0, 0, "cannot stat: %s", strerror(errno));
		return -1;
	}
	s->waiting_noted = false;
	s->fd = fd;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	s->off = 0;
	s->stats.opens++;
	if (!s->started && !s->from_start && S_ISREG(st.st_mode) && st.st_size > 0) {
		char last;
		/* like tail -F: what was there before watch started is not counted */
		s->off = st.st_size;
		lseek(fd, s->off, SEEK_SET);
		s->skip_first = pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n';
	}
	s->started = true;
	return 0;
}

/* Feeds data, dropping the rest of a line watch started inside of. */
static void tailfile_feed(struct tailfile *s, const char *p, size_t n)
{
	if (s->skip_first) {
		const char *nl = memchr(p, '\n', n);
		if (!nl)
			return;
		s->skip_first = false;
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	linebuf_feed(&s->lb, p, n, tailfile_on_line, s);
}

/* One read: bytes, 0 at end (or nothing now), -1 error. */
static ssize_t tailfile_read(struct tailfile *s, size_t want, struct status_info *si)
{
	ssize_t r;

	if (want > TAILFILE_READ)
		want = TAILFILE_READ;
	if (s->is_stdin) {
		/* stdin's file description is shared with whoever started us: polled, not made non-blocking */
		struct pollfd pf = { 0, POLLIN, 0 };
		if (poll(&pf, 1, 0) <= 0)
			return -2;
	}
	do
		r = read(s->fd, s->rd, want);
	while (r < 0 && errno == EINTR);
	if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -2;
	if (r < 0) {
		status_set_at(si, STATUS_IO, s->name, 0, 0, "cannot read: %s", strerror(errno));
		return -1;
	}
	if (r > 0) {
		s->off += r;
		s->stats.bytes += (uint64_t)r;
		tailfile_feed(s, s->rd, (size_t)r);
	}
	return r;
}

/* At the end of a file: rotated (a new file has the name) or truncated? 1 when so. */
static int tailfile_check(struct tailfile *s, struct status_info *si)
{
	struct stat st;

	if (stat(s->name, &st) != 0) {
		/* moved away and not replaced yet: its writer may still append */
		if (!s->moved_noted)
			tailfile_note(s, "file moved away, reading it until a new one appears");
		s->moved_noted = true;
		return 0;
	}
	s->moved_noted = false;
	if (st.st_dev != s->dev || st.st_ino != s->ino) {
		while (tailfile_read(s, TAILFILE_READ, si) > 0)
			;
		linebuf_flush(&s->lb, tailfile_on_line, s);
		close(s->fd);
		s->fd = -1;
		s->stats.rotations++;
		tailfile_note(s, "file replaced, following the new file");
		return 1;
	}
	if (fstat(s->fd, &st) == 0 && st.st_size < s->off) {
		linebuf_flush(&s->lb, tailfile_on_line, s);
		lseek(s->fd, 0, SEEK_SET);
		s->off = 0;
		s->skip_first = false;
		s->stats.truncations++;
		tailfile_note(s, "file truncated, reading from its start");
		return 1;
	}
	return 0;
}

long tailfile_poll(struct tailfile *s, size_t budget, bool final, tailfile_line_fn fn, void *ctx,
		 struct status_info *si)
{
	size_t got = 0;

	s->fn = fn;
	s->ctx = ctx;
	if (s->done)
		return 0;
	while (got < budget) {
		ssize_t r;

		if (s->fd < 0) {
			int rc = tailfile_open(s, si);
			if (rc < 0)
				return -1;
			if (rc)
				break;
		}
		r = tailfile_read(s, budget - got, si);
		if (r == -1) {
			if (!s->is_stdin) {
				close(s->fd);
				s->fd = -1;
			}
			return -1;
		}
		if (r == -2)
			break;   /* a pipe with nothing now */
		if (r == 0) {
			if (s->is_stdin) {
				linebuf_flush(&s->lb, tailfile_on_line, s);
				s->done = true;
				return (long)got;
			}
			if (tailfile_check(s, si))
				continue;   /* the new file, or the truncated one from 0, now */
			break;
		}
		got += (size_t)r;
	}
	if (final)
		linebuf_flush(&s->lb, tailfile_on_line, s);
	return (long)got;
}
