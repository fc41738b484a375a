/*
 * source.c - one followed input of `ttaudit watch` (source.h): open, start
 * at the end or the start, read without blocking, and notice rotation and
 * truncation when the file has nothing new.
 */
#include "source.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "linebuf.h"

#define SOURCE_READ 65536

struct source {
	char *name;
	bool is_stdin, from_start, done, started;
	bool skip_first;            /* started inside a line: drop up to its newline */
	int fd;                     /* -1: not open */
	dev_t dev;
	ino_t ino;
	off_t off;
	struct linebuf lb;
	char *line, *rd;
	struct source_stats stats;
	source_line_fn fn;
	void *ctx;
};

struct source *source_new(const char *name, bool from_start)
{
	struct source *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->name = strdup(name);
	s->line = malloc(SOURCE_LINE_MAX);
	s->rd = malloc(SOURCE_READ);
	if (!s->name || !s->line || !s->rd) {
		source_free(s);
		return NULL;
	}
	s->is_stdin = !strcmp(name, "-");
	s->from_start = from_start;
	s->fd = s->is_stdin ? 0 : -1;
	linebuf_init(&s->lb, s->line, SOURCE_LINE_MAX);
	return s;
}

void source_free(struct source *s)
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

const char *source_name(const struct source *s) { return s->name; }
const struct source_stats *source_stats(const struct source *s) { return &s->stats; }
bool source_done(const struct source *s) { return s->done; }

bool source_up(const struct source *s)
{
	return s->fd >= 0 && !s->done;
}

static void source_on_line(void *ctx, const char *line, size_t n, int overlong)
{
	struct source *s = ctx;

	s->stats.lines++;
	if (overlong)
		s->stats.overlong++;
	s->fn(s->ctx, line, n, overlong != 0);
}

/* Opens the path if it exists: 0 open, 1 not there (yet), -1 error. */
static int source_open(struct source *s, struct status_info *si)
{
	struct stat st;
	int fd = open(s->name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		if (errno == ENOENT) {
			s->started = true;   /* a file that appears later is read whole */
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
static void source_feed(struct source *s, const char *p, size_t n)
{
	if (s->skip_first) {
		const char *nl = memchr(p, '\n', n);
		if (!nl)
			return;
		s->skip_first = false;
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
	}
	linebuf_feed(&s->lb, p, n, source_on_line, s);
}

/* One read: bytes, 0 at end (or nothing now), -1 error. */
static ssize_t source_read(struct source *s, size_t want, struct status_info *si)
{
	ssize_t r;

	if (want > SOURCE_READ)
		want = SOURCE_READ;
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
		source_feed(s, s->rd, (size_t)r);
	}
	return r;
}

/* At the end of a file: rotated (a new file has the name) or truncated? 1 when so. */
static int source_check(struct source *s, struct status_info *si)
{
	struct stat st;

	if (stat(s->name, &st) != 0) {
		/* moved away and not replaced yet: its writer may still append */
		return 0;
	}
	if (st.st_dev != s->dev || st.st_ino != s->ino) {
		while (source_read(s, SOURCE_READ, si) > 0)
			;
		linebuf_flush(&s->lb, source_on_line, s);
		close(s->fd);
		s->fd = -1;
		s->stats.rotations++;
		return 1;
	}
	if (fstat(s->fd, &st) == 0 && st.st_size < s->off) {
		linebuf_flush(&s->lb, source_on_line, s);
		lseek(s->fd, 0, SEEK_SET);
		s->off = 0;
		s->skip_first = false;
		s->stats.truncations++;
		return 1;
	}
	return 0;
}

long source_poll(struct source *s, size_t budget, bool final, source_line_fn fn, void *ctx,
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
			int rc = source_open(s, si);
			if (rc < 0)
				return -1;
			if (rc)
				break;
		}
		r = source_read(s, budget - got, si);
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
				linebuf_flush(&s->lb, source_on_line, s);
				s->done = true;
				return (long)got;
			}
			if (source_check(s, si))
				continue;   /* the new file, or the truncated one from 0, now */
			break;
		}
		got += (size_t)r;
	}
	if (final)
		linebuf_flush(&s->lb, source_on_line, s);
	return (long)got;
}
