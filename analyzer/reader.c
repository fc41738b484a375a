#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#define READER_CHUNK (64 * 1024)

struct audit_reader {
	char *file;                 /* owned copy of the name */
	gzFile gz;
	size_t max_line;
	char *buf;                  /* holds at most max_line + READER_CHUNK bytes */
	size_t cap, start, end;     /* unread bytes are buf[start, end) */
	int eof;
	long line;
	struct jdoc *doc;
	struct event_decoder *dec;
	struct audit_reader_stats stats;
};

enum status audit_reader_open(struct audit_reader **out, const char *path,
			      const struct audit_reader_opts *opts, struct status_info *si)
{
	struct audit_reader *r = NULL;
	enum status st = STATUS_NOMEM;
	int fd = -1;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		goto out;
	r->max_line = opts && opts->max_line ? opts->max_line : AUDIT_READER_MAX_LINE;
	r->cap = r->max_line + READER_CHUNK + 1;
	r->file = strdup(path);
	r->buf = malloc(r->cap);
	r->doc = jdoc_new(r->max_line);
	r->dec = event_decoder_new();
	if (!r->file || !r->buf || !r->doc || !r->dec)
		goto out;
	fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : dup(0);
	if (fd < 0) {
		st = status_set_at(si, STATUS_IO, path, 0, 0, "cannot open: %s", strerror(errno));
		goto out;
	}
	r->gz = gzdopen(fd, "rb");
	if (!r->gz) {
		st = status_set_at(si, STATUS_NOMEM, path, 0, 0, "cannot start decompression");
		goto out;
	}
	fd = -1;
	gzbuffer(r->gz, READER_CHUNK);
	*out = r;
	r = NULL;
	st = STATUS_OK;
out:
	if (fd >= 0)
		close(fd);
	audit_reader_free(r);
	return st;
}

void audit_reader_free(struct audit_reader *r)
{
	if (!r)
		return;
	if (r->gz)
		gzclose(r->gz);
	jdoc_free(r->doc);
	event_decoder_free(r->dec);
	free(r->buf);
	free(r->file);
	free(r);
}

const struct audit_reader_stats *audit_reader_stats(const struct audit_reader *r)
{
	return &r->stats;
}

/* Reads more input after buf[end); compacts first. 0 ok, -1 I/O error. */
static int reader_fill(struct audit_reader *r, struct status_info *si)
{
	int n;

	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	if (r->cap - 1 - r->end == 0)
		return 0;
	n = gzread(r->gz, r->buf + r->end,
		   (unsigned)(r->cap - 1 - r->end < READER_CHUNK ? r->cap - 1 - r->end : READER_CHUNK));
	if (n < 0) {
		int zerr;
		const char *msg = gzerror(r->gz, &zerr);
		status_set_at(si, STATUS_IO, r->file, r->line + 1, 0, "read error: %s",
			      zerr == Z_ERRNO ? strerror(errno) : msg);
		return -1;
	}
	if (n == 0)
		r->eof = 1;
	r->end += (size_t)n;
	return 0;
}

/*
 * The next line into s and n (without the newline, NUL-terminated in place).
 * Returns 1 for a line, 0 at end of input, -1 on I/O error, -2 when the line
 * is over the cap (it is consumed up to its newline and reported).
 */
static int reader_line(struct audit_reader *r, char **s, size_t *n, struct status_info *si)
{
	size_t scanned = 0;
	int too_long = 0;

	for (;;) {
		char *nl = memchr(r->buf + r->start + scanned, '\n', r->end - r->start - scanned);
		if (nl) {
			size_t len = (size_t)(nl - (r->buf + r->start));
			r->line++;
			if (too_long || len > r->max_line) {
				r->start += len + 1;
				return -2;
			}
			*s = r->buf + r->start;
			*n = len;
			*nl = '\0';
			r->start += len + 1;
			return 1;
		}
		scanned = r->end - r->start;
		if (scanned > r->max_line) {
			/* over the cap: drop what we have, keep looking for the newline */
			too_long = 1;
			r->start = r->end;
			scanned = 0;
		}
		if (r->eof) {
			if (r->end == r->start && !too_long)
				return 0;
			r->line++;
			if (too_long) {
				r->start = r->end;
				return -2;
			}
			*s = r->buf + r->start;
			*n = r->end - r->start;
			r->buf[r->end] = '\0';
			r->start = r->end;
			return 1;
		}
		if (reader_fill(r, si))
			return -1;
	}
}

static int is_blank(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

static double num_or(const struct jval *v, double dflt)
{
	if (v && v->type == JT_INT)
		return (double)v->u.i;
	if (v && v->type == JT_REAL)
		return v->u.d;
	return dflt;
}

/* Fills the capture metadata and, for an "audit" record, the event. */
static enum status reader_capture(struct audit_reader *r, struct audit_item *it,
				  const struct jval *src, struct status_info *si)
{
	const struct jdoc *d = r->doc;
	const struct jval *root = it->record, *v, *ev;
	enum status st;

	r->stats.capture_records++;
	if (src->type != JT_STR)
		return status_set(si, STATUS_PARSE, "src is not a string (%s)", jdoc_typename(src));
	it->src = src->u.s;
	v = jdoc_get(d, root, "pid");
	if (v && v->type == JT_INT) {
		it->has_pid = true;
		it->pid = v->u.i;
		v = jdoc_get(d, root, "tid");
		it->tid = v && v->type == JT_INT ? v->u.i : 0;
	}
	v = jdoc_get(d, root, "t");
	if (v && (v->type == JT_INT || v->type == JT_REAL)) {
		it->has_time = true;
		it->t = num_or(v, 0);
		it->mono = num_or(jdoc_get(d, root, "mono"), 0);
	}
	if (!strcmp(it->src, "lost")) {
		v = jdoc_get(d, root, "count");
		if (!v || v->type != JT_INT || v->u.i < 0)
			return status_set(si, STATUS_PARSE, "lost record has no count");
		r->stats.capture_lost += (uint64_t)v->u.i;
		return STATUS_OK;
	}
	if (strcmp(it->src, "audit"))
		return STATUS_OK;
	ev = jdoc_get(d, root, "event");
	if (!ev || ev->type != JT_OBJ) {
		if (si && ev)
			si->byte = (long)ev->off + 1;
		return status_set(si, STATUS_PARSE, "audit record's event is not an object (%s)",
				  jdoc_typename(ev));
	}
	if ((st = event_decode(r->dec, d, ev, &it->event, si)))
		return st;
	it->has_event = true;
	return STATUS_OK;
}

enum status audit_reader_next(struct audit_reader *r, struct audit_item *it,
			      struct status_info *si)
{
	for (;;) {
		char *s = NULL;
		size_t n = 0;
		int rc;
		enum status st;
		const struct jval *root, *src, *ev;

		rc = reader_line(r, &s, &n, si);
		if (rc == 0)
			return STATUS_EOF;
		if (rc == -1)
			return STATUS_IO;
		r->stats.lines++;
		if (rc == -2) {
			r->stats.malformed++;
			return status_set_at(si, STATUS_LIMIT, r->file, r->line, 0,
					     "line longer than %zu bytes", r->max_line);
		}
		if (is_blank(s, n)) {
			r->stats.blank++;
			continue;
		}
		memset(it, 0, sizeof(*it));
		it->file = r->file;
		it->line = r->line;
		if (si)
			si->byte = 0;
		st = jdoc_parse(r->doc, s, n, si);
		if (st == STATUS_NOMEM)
			return status_set_at(si, st, r->file, r->line, 0, "out of memory");
		root = st ? NULL : jdoc_root(r->doc);
		if (!st && root->type != JT_OBJ) {
			st = status_set(si, STATUS_PARSE, "not a JSON object (%s)", jdoc_typename(root));
			if (si)
				si->byte = 1;
		}
		if (!st) {
			it->doc = r->doc;
			it->record = root;
			src = jdoc_get(r->doc, root, "src");
			ev = jdoc_get(r->doc, root, "ev");
			/* an event may carry any unknown key, "src" included; capture
			 * records never have a top-level "ev" */
			if (ev) {
				st = event_decode(r->dec, r->doc, root, &it->event, si);
				it->has_event = !st;
			} else if (src) {
				st = reader_capture(r, it, src, si);
			} else {
				r->stats.ignored++;
				continue;
			}
		}
		if (st) {
			long byte = si ? si->byte : 0;
			r->stats.malformed++;
			if (si) {
				snprintf(si->file, sizeof(si->file), "%s", r->file);
				si->line = r->line;
				si->byte = byte;
			}
			return st == STATUS_LIMIT ? STATUS_LIMIT : STATUS_PARSE;
		}
		if (it->has_event) {
			r->stats.events++;
			if (it->event.kind == EVENT_OTHER)
				r->stats.other_events++;
		}
		return STATUS_OK;
	}
}
