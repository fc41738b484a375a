/*
 * follow.c - `ttaudit follow` (follow.h): an input followed like `tail -F`
 * (base/tailfile) whose lines become capture records, classified as the
 * shim classifies them, with read times and no pid, tid or fd.
 */
#include "capture/follow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "capture/caprec.h"
#include "capture/classify.h"
#include "capture/jbuf.h"
#include "base/tailfile.h"

#define FOLLOW_OUT_CAP (3 * FOLLOW_LINE_MAX + 4096)
#define FOLLOW_START_CAP 65536   /* the start record's own members */
#define FOLLOW_BUDGET (1 << 20)   /* bytes read between flushes of the records */

struct follow {
	const struct follow_opts *o;
	struct follow_stats *stats;
	struct tailfile *in;
	struct banner_scratch sc;
	char *out;         /* one record */
	int write_failed;
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

static void follow_on_line(void *ctx, const char *line, size_t n, bool overlong)
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

static void follow_note(void *ctx, const char *what)
{
	struct follow *f = ctx;

	if (f->o->notes)
		fprintf(f->o->notes, "ttaudit follow: %s: %s\n", f->o->path, what);
}

static void follow_sleep(const struct follow_opts *o)
{
	struct timespec ts = { o->poll_ms / 1000, (long)(o->poll_ms % 1000) * 1000000L };

	if (!*o->stop)
		nanosleep(&ts, NULL);
}

static enum status follow_loop(struct follow *f, struct status_info *si)
{
	const struct follow_opts *o = f->o;
	int from_stdin = !strcmp(o->path, "-");

	while (!*o->stop) {
		long got = tailfile_poll(f->in, FOLLOW_BUDGET, false, follow_on_line, f, si);

		if (got < 0)
			return STATUS_IO;
		if (got > 0)
			continue;
		if (fflush(o->out) || f->write_failed)
			return status_set(si, STATUS_IO, "cannot write the capture: %s", strerror(errno));
		/* stdin is read to its end, --once or not */
		if (tailfile_done(f->in) || (o->once && !from_stdin))
			return STATUS_OK;
		follow_sleep(o);
	}
	return STATUS_OK;
}

static size_t follow_start(struct follow *f)
{
	struct caprec_head h;
	struct jbuf w;
	char host[256];
	char tail[FOLLOW_START_CAP];

	if (gethostname(host, sizeof(host)))
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	jbuf_init(&w, tail, FOLLOW_START_CAP);
	jbuf_rawz(&w, "\"reader\":\"follow\",\"path\":");
	jbuf_strz(&w, f->o->path);
	jbuf_rawz(&w, ",\"host\":");
	jbuf_strz(&w, host);
	jbuf_rawz(&w, ",");
	if (w.len < FOLLOW_START_CAP)
		w.len += caprec_mode(tail + w.len, FOLLOW_START_CAP - w.len, f->o->all_lines, f->o->rules,
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
	banner_scratch_init(&f.sc);
	f.out = malloc(FOLLOW_OUT_CAP);
	f.in = tailfile_new(o->path, true);
	if (!f.out || !f.in) {
		st = status_set(si, STATUS_NOMEM, "out of memory");
		goto out;
	}
	tailfile_set_notes(f.in, follow_note, &f);
	follow_put(&f, f.out, follow_start(&f));
	st = follow_loop(&f, si);
	/* a last line no newline ended is a line */
	tailfile_poll(f.in, 0, true, follow_on_line, &f, NULL);
	stats->rotations = tailfile_stats(f.in)->rotations;
	stats->truncations = tailfile_stats(f.in)->truncations;
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
	tailfile_free(f.in);
	free(f.out);
	return st;
}
