#include "follow.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "classify.h"
#include "jbuf.h"
#include "linebuf.h"
#include "caprec.h"

#define FOLLOW_OUT_CAP (3 * FOLLOW_LINE_MAX + 4096)
#define FOLLOW_READ 65536

struct follow {
	const struct follow_opts *o;
	struct follow_stats *stats;
	struct linebuf lb;
	struct banner_scratch sc;
	char *line;        /* linebuf storage */
	char *out;         /* one record */
	char *rd;          /* read buffer */
	int fd;            /* input, -1 when none open */
	dev_t dev;
	ino_t ino;
	off_t off;
	int write_failed;
	int waiting_noted;
	int moved_noted;        /* said that the name is gone while the old file is read */
};

static void follow_put(struct follow *f, const char *rec, size_t len)
{
	if (!len) {
		f->stats->lost++;
		return;
	}
	if (fwrite(rec, 1, len, f->o->out) != len)
		f->write_failed = 1;
}

static void follow_on_line(void *ctx, const char *line, size_t n, int overlong)
{
	struct follow *f = ctx;
	struct classify_result res;
	struct caprec_head h;

	f->stats->lines++;
	if (overlong) {
		caprec_head_now(&h);
		h.pid = h.tid = 0;
		h.fd = -1;
		f->stats->lost++;
		follow_put(f, f->out, caprec_lost(f->out, FOLLOW_OUT_CAP, &h, 1,
						  "line longer than 1048576 bytes"));
		return;
	}
	classify_line(line, n, f->o->rules, &f->sc, &res);
	if (res.kind == CLASSIFY_OTHER && !f->o->all_lines)
		return;
	caprec_head_now(&h);
	h.pid = h.tid = 0;
	h.fd = -1;
	if (res.kind == CLASSIFY_AUDIT) {
		f->stats->audit++;
		follow_put(f, f->out, caprec_audit(f->out, FOLLOW_OUT_CAP, &h, res.obj,
						   res.obj_len));
	} else if (res.kind == CLASSIFY_BANNER) {
		f->stats->banner++;
		follow_put(f, f->out, caprec_banner(f->out, FOLLOW_OUT_CAP, &h,
						    banner_set_name(f->o->rules, (size_t)res.rule),
						    line, n));
	} else {
		follow_put(f, f->out, caprec_line(f->out, FOLLOW_OUT_CAP, &h, line, n));
	}
}

static void follow_note(struct follow *f, const char *what)
{
	if (f->o->notes)
		fprintf(f->o->notes, "ttaudit follow: %s: %s\n", f->o->path, what);
}

/* Opens the path if it exists; 0 with f->fd set, 1 not there yet, -1 error. */
static int follow_open(struct follow *f, struct status_info *si)
{
	struct stat st;
	int fd = open(f->o->path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT) {
			if (!f->waiting_noted)
				follow_note(f, "waiting for the file to appear");
			f->waiting_noted = 1;
			return 1;
		}
		status_set_at(si, STATUS_IO, f->o->path, 0, 0, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st)) {
		close(fd);
		status_set_at(si, STATUS_IO, f->o->path, 0, 0, "cannot stat: %s", strerror(errno));
		return -1;
	}
	f->waiting_noted = 0;
	f->fd = fd;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->off = 0;
	return 0;
}

/* Reads what is there; returns bytes read, 0 at end, -1 on error. */
static ssize_t follow_read(struct follow *f, struct status_info *si)
{
	ssize_t r;

	for (;;) {
		r = read(f->fd, f->rd, FOLLOW_READ);
		if (r >= 0)
			break;
		if (errno == EINTR) {
			if (*f->o->stop)
				return 0;
			continue;
		}
		status_set_at(si, STATUS_IO, f->o->path, 0, 0, "cannot read: %s", strerror(errno));
		return -1;
	}
	if (r > 0) {
		f->off += r;
		linebuf_feed(&f->lb, f->rd, (size_t)r, follow_on_line, f);
	}
	return r;
}

static void follow_sleep(const struct follow_opts *o)
{
	struct timespec ts = { o->poll_ms / 1000, (long)(o->poll_ms % 1000) * 1000000L };

	if (!*o->stop)
		nanosleep(&ts, NULL);
}

/* At end of file: has the name moved on (rotation) or the file shrunk? */
static void follow_check(struct follow *f, struct status_info *si)
{
	struct stat st;
	int gone = stat(f->o->path, &st) != 0;

	if (gone && errno == ENOENT) {
		/* Moved away and not replaced yet: a writer that still holds the
		 * old file keeps appending to it, so keep reading it until a new
		 * file takes the name. */
		if (!f->moved_noted)
			follow_note(f, "file moved away, reading it until a new one appears");
		f->moved_noted = 1;
		return;
	}
	f->moved_noted = 0;
	if (gone || st.st_dev != f->dev || st.st_ino != f->ino) {
		/* Rotated: read what was appended to the old file since the last
		 * read; the rest of its last line is complete as far as it goes. */
		while (follow_read(f, si) > 0)
			;
		linebuf_flush(&f->lb, follow_on_line, f);
		close(f->fd);
		f->fd = -1;
		f->stats->rotations++;
		follow_note(f, "file replaced, following the new file");
		return;
	}
	if (fstat(f->fd, &st) == 0 && st.st_size < f->off) {
		linebuf_flush(&f->lb, follow_on_line, f);
		lseek(f->fd, 0, SEEK_SET);
		f->off = 0;
		f->stats->truncations++;
		follow_note(f, "file truncated, reading from its start");
	}
}

static enum status follow_loop(struct follow *f, struct status_info *si)
{
	const struct follow_opts *o = f->o;
	int stdin_mode = !strcmp(o->path, "-");

	if (stdin_mode)
		f->fd = 0;
	while (!*o->stop) {
		ssize_t r;

		if (f->fd < 0) {
			int rc = follow_open(f, si);
			if (rc < 0)
				return STATUS_IO;
			if (rc > 0) {
				if (o->once)
					return STATUS_OK;
				fflush(o->out);
				follow_sleep(o);
				continue;
			}
		}
		r = follow_read(f, si);
		if (r < 0)
			return STATUS_IO;
		if (r > 0)
			continue;
		if (fflush(o->out) || f->write_failed)
			return status_set(si, STATUS_IO, "cannot write the capture: %s", strerror(errno));
		if (stdin_mode || o->once)
			return STATUS_OK;
		follow_check(f, si);
		if (f->fd >= 0)
			follow_sleep(o);
	}
	return STATUS_OK;
}

static size_t follow_start(struct follow *f)
{
	struct caprec_head h;
	struct jbuf w;
	char host[256];
	char *tail = f->rd;   /* not in use yet */

	if (gethostname(host, sizeof(host)))
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	jbuf_init(&w, tail, FOLLOW_READ);
	jbuf_rawz(&w, "\"reader\":\"follow\",\"path\":");
	jbuf_strz(&w, f->o->path);
	jbuf_rawz(&w, ",\"host\":");
	jbuf_strz(&w, host);
	jbuf_rawz(&w, ",");
	if (w.len < FOLLOW_READ)
		w.len += caprec_mode(tail + w.len, FOLLOW_READ - w.len, f->o->all_lines, f->o->rules,
				     f->o->rules_from);
	jbuf_rawz(&w, "}");
	if (!jbuf_ok(&w))
		return 0;
	caprec_head_now(&h);
	h.pid = h.tid = 0;
	h.fd = -1;
	return caprec_start(f->out, FOLLOW_OUT_CAP, &h, -1, tail, w.len);
}

enum status follow_run(const struct follow_opts *o, struct follow_stats *stats,
		       struct status_info *si)
{
	struct follow f;
	struct caprec_head h;
	enum status st;

	memset(&f, 0, sizeof(f));
	memset(stats, 0, sizeof(*stats));
	f.o = o;
	f.stats = stats;
	f.fd = -1;
	banner_scratch_init(&f.sc);
	f.line = malloc(FOLLOW_LINE_MAX);
	f.out = malloc(FOLLOW_OUT_CAP);
	f.rd = malloc(FOLLOW_READ);
	if (!f.line || !f.out || !f.rd) {
		st = status_set(si, STATUS_NOMEM, "out of memory");
		goto out;
	}
	linebuf_init(&f.lb, f.line, FOLLOW_LINE_MAX);
	follow_put(&f, f.out, follow_start(&f));
	st = follow_loop(&f, si);
	linebuf_flush(&f.lb, follow_on_line, &f);
	caprec_head_now(&h);
	h.pid = h.tid = 0;
	h.fd = -1;
	{
		struct caprec_end e = { .code = -1, .counts = 1, .lines = stats->lines, .lost = stats->lost };
		follow_put(&f, f.out, caprec_end(f.out, FOLLOW_OUT_CAP, &h, &e));
	}
	if ((fflush(o->out) || f.write_failed) && st == STATUS_OK)
		st = status_set(si, STATUS_IO, "cannot write the capture: %s", strerror(errno));
out:
	if (f.fd > 0)
		close(f.fd);
	free(f.line);
	free(f.out);
	free(f.rd);
	return st;
}
