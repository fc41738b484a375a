/*
 * capfile.c - the capture file as `ttaudit capture` writes it (capfile.h).
 */
#include "capture/capfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture/caprec.h"

/* Room kept past the end of the file for the last records (lost and end records of every process). */
#define CAPFILE_RESERVE (64u * 1024)
/*
 * The room past the end is made ahead, an eighth of the file's size (at
 * least the reserve, at most a MiB): a call per eighth, not per batch,
 * and a short capture pays for no more than it writes.
 */
#define CAPFILE_AHEAD_MAX (1024u * 1024)
/* Records kept to be written last once the file is full, at most (their bytes). */
#define CAPFILE_KEEP_CAP (4u * 1024 * 1024)
/* Start records kept to begin a file made again (deleted), at most (their bytes). */
#define CAPFILE_STARTS_CAP (32u * 1024 * 1024)

/* What the file holds, and lacks, of one process. */
struct cfpid {
	long pid;               /* 0: a free slot */
	uint64_t written;       /* lines (and lost counts) in the file */
	uint64_t unwritten;     /* lines not in it */
	uint64_t deleted;       /* lines (and lost counts) that were in a deleted file */
	char *start;            /* its start record, while it runs (for a file made again) */
	size_t start_len;
	int ended;
};

struct capfile {
	char *path;
	int fd;
	int failed;             /* errno that stopped the writing, 0 */
	int no_reserve;         /* the file system makes no room ahead (no fallocate) */
	int remakable;          /* it had a name at the start, and a path was given: a deleted one is made again */
	uint64_t size;          /* where the next batch goes */
	uint64_t room_end;      /* allocated up to here (size .. room_end is the reserve) */
	uint64_t limit;         /* RLIMIT_FSIZE, or UINT64_MAX */
	struct cfpid *pids;     /* open addressing, n_slots a power of two */
	size_t n_slots, n_pids;
	size_t starts_bytes;
	char *keep;             /* records kept to be written last */
	size_t keep_len;
	uint64_t keep_dropped;  /* records that did not fit in keep */
	uint64_t keep_dropped_lines;
	capfile_warn_fn warn;
	void *warn_ctx;
};

static void capfile_say(struct capfile *cf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void capfile_say(struct capfile *cf, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!cf->warn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cf->warn(cf->warn_ctx, msg);
}

/* 1 when p[0..n) starts with the NUL-terminated word. */
static int capfile_starts(const char *p, size_t n, const char *word)
{
	size_t k = strlen(word);

	return n >= k && !memcmp(p, word, k);
}

enum capfile_kind capfile_kind_of(const char *rec, size_t len, uint64_t *count)
{
	static const char head[] = "{\"src\":\"";
	const char *k = rec + sizeof(head) - 1, *c;
	size_t rest = len - (sizeof(head) - 1);

	*count = 0;
	if (!capfile_starts(rec, len, head))
		return CAPFILE_OTHER;
	if (capfile_starts(k, rest, "start\""))
		return CAPFILE_START;
	if (capfile_starts(k, rest, "end\""))
		return CAPFILE_END;
	if (!capfile_starts(k, rest, "lost\"") && !capfile_starts(k, rest, "uncertain\"")) {
		*count = 1;
		return CAPFILE_LINES;
	}
	/* caprec writes "count" before any text a program wrote (the reason is ours, the record last) */
	c = memmem(rec, len, "\"count\":", 8);
	if (c)
		for (c += 8; c < rec + len && *c >= '0' && *c <= '9'; c++)
			*count = *count * 10 + (uint64_t)(*c - '0');
	return *k == 'l' ? CAPFILE_LOST : CAPFILE_LINES;
}

/* --- processes ------------------------------------------------------------ */

static struct cfpid *capfile_pid(struct capfile *cf, long pid)
{
	size_t i, mask;

	if (cf->n_pids * 2 >= cf->n_slots) {
		size_t nn = cf->n_slots ? cf->n_slots * 2 : 64, j;
		struct cfpid *np = calloc(nn, sizeof(*np));
		if (!np)
			return NULL;
		for (j = 0; j < cf->n_slots; j++)
			if (cf->pids[j].pid) {
				size_t k = (size_t)cf->pids[j].pid & (nn - 1);
				while (np[k].pid)
					k = (k + 1) & (nn - 1);
				np[k] = cf->pids[j];
			}
		free(cf->pids);
		cf->pids = np;
		cf->n_slots = nn;
	}
	mask = cf->n_slots - 1;
	for (i = (size_t)pid & mask; cf->pids[i].pid; i = (i + 1) & mask)
		if (cf->pids[i].pid == pid)
			return &cf->pids[i];
	cf->pids[i].pid = pid;
	cf->n_pids++;
	return &cf->pids[i];
}

uint64_t capfile_unwritten(const struct capfile *cf, long pid)
{
	size_t i, mask;

	if (!cf->n_slots)
		return 0;
	mask = cf->n_slots - 1;
	for (i = (size_t)pid & mask; cf->pids[i].pid; i = (i + 1) & mask)
		if (cf->pids[i].pid == pid)
			return cf->pids[i].unwritten + cf->pids[i].deleted;
	return 0;
}

/* A record is in the file: its counts, and a start record kept while its process runs. */
static void capfile_written(struct capfile *cf, const char *rec, const struct capfile_rec *r)
{
	struct cfpid *p = capfile_pid(cf, r->pid);

	if (!p)
		return;
	if (r->kind == CAPFILE_LINES || r->kind == CAPFILE_LOST)
		p->written += r->count;
	if (r->kind == CAPFILE_START && !p->start && cf->starts_bytes + r->len <= CAPFILE_STARTS_CAP &&
	    (p->start = malloc(r->len))) {
		memcpy(p->start, rec, r->len);
		p->start_len = r->len;
		cf->starts_bytes += r->len;
	}
	if (r->kind == CAPFILE_END) {
		p->ended = 1;
		cf->starts_bytes -= p->start_len;
		free(p->start);
		p->start = NULL;
		p->start_len = 0;
	}
}

/* A record that cannot be written: its lines counted, a start, lost or end record kept for the end. */
static void capfile_unwrite(struct capfile *cf, const char *rec, const struct capfile_rec *r)
{
	struct cfpid *p = capfile_pid(cf, r->pid);

	if (r->kind == CAPFILE_LINES) {
		if (p)
			p->unwritten += r->count;
		return;
	}
	if (r->kind == CAPFILE_OTHER)
		return;
	if (cf->keep_len + r->len > CAPFILE_KEEP_CAP || (!cf->keep && !(cf->keep = malloc(CAPFILE_KEEP_CAP)))) {
		cf->keep_dropped++;
		cf->keep_dropped_lines += r->kind == CAPFILE_LOST ? r->count : 0;
		return;
	}
	memcpy(cf->keep + cf->keep_len, rec, r->len);
	cf->keep_len += r->len;
}

/* --- room ------------------------------------------------------------------ */

/*
 * Room for `len` more bytes and the reserve after them: made ahead with
 * fallocate (beyond the end, the size unchanged), within the file size
 * limit. 1 when there is; else 0 with *err (ENOSPC, EDQUOT, EFBIG, ...).
 */
static int capfile_room(struct capfile *cf, uint64_t len, int *err)
{
	uint64_t want = cf->size + len + CAPFILE_RESERVE, ahead;

	*err = 0;
	if (want > cf->limit) {
		*err = EFBIG;
		return 0;
	}
	if (cf->no_reserve || want <= cf->room_end)
		return 1;
	{
		uint64_t step = cf->size / 8;
		step = step < CAPFILE_RESERVE ? CAPFILE_RESERVE : step > CAPFILE_AHEAD_MAX ? CAPFILE_AHEAD_MAX : step;
		ahead = want + step <= cf->limit ? want + step : want;
	}
	if (fallocate(cf->fd, FALLOC_FL_KEEP_SIZE, (off_t)cf->size, (off_t)(ahead - cf->size)) == 0) {
		cf->room_end = ahead;
		return 1;
	}
	if (errno == EOPNOTSUPP || errno == ENOSYS) {
		/* no room can be made ahead here: a failed write is cut back to a record boundary */
		cf->no_reserve = 1;
		return 1;
	}
	if (ahead != want && fallocate(cf->fd, FALLOC_FL_KEEP_SIZE, (off_t)cf->size, (off_t)(want - cf->size)) == 0) {
		cf->room_end = want;
		return 1;
	}
	*err = errno;
	return 0;
}

/* --- the file made again --------------------------------------------------- */

static const char capfile_why_deleted[] = "in a capture file that was deleted while it was written";

/*
 * The file was deleted: a new one at its path, begun with the start
 * records of the processes still running and a lost record per process
 * for what the deleted one held. 0, or the errno why not.
 */
static int capfile_remake(struct capfile *cf)
{
	int fd, e;
	size_t i;

	fd = open(cf->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	close(cf->fd);
	cf->fd = fd;
	cf->size = 0;
	cf->room_end = 0;
	for (i = 0; i < cf->n_slots; i++) {
		struct cfpid *p = &cf->pids[i];
		char buf[512];
		struct caprec_head h;
		size_t len;

		if (!p->pid)
			continue;
		if (p->start && !p->ended) {
			if (!capfile_room(cf, p->start_len, &e) || write(cf->fd, p->start, p->start_len) != (ssize_t)p->start_len)
				return errno ? errno : EIO;
			cf->size += p->start_len;
		}
		if (!p->written)
			continue;
		caprec_head_now(&h);
		h.pid = p->pid;
		h.tid = 0;
		h.fd = -1;
		len = caprec_lost(buf, sizeof(buf), &h, p->written, capfile_why_deleted);
		if (!capfile_room(cf, len, &e) || write(cf->fd, buf, len) != (ssize_t)len)
			return errno ? errno : EIO;
		cf->size += len;
		p->deleted += p->written;
		p->written = 0;
	}
	return 0;
}

/* --- writing ----------------------------------------------------------------- */

static void capfile_fail(struct capfile *cf, int e)
{
	cf->failed = e ? e : EIO;
	capfile_say(cf, "%s: cannot write the capture file: %s: the lines from here on are counted in its last records, not recorded",
		    cf->path, strerror(cf->failed));
}

/* Deleted: made again (capfile_remake), or failed. */
static void capfile_deleted(struct capfile *cf)
{
	int e = capfile_remake(cf);

	if (e) {
		capfile_say(cf, "%s: the capture file was deleted while it was written and cannot be made again: %s: "
			    "the lines from here on are counted, not recorded", cf->path, strerror(e));
		cf->failed = e;
		return;
	}
	capfile_say(cf, "%s: the capture file was deleted while it was written: made again, its first records "
		    "say what the deleted one held", cf->path);
}

void capfile_write(struct capfile *cf, const char *buf, const struct capfile_rec *recs, size_t n,
		   capfile_before_fn before, void *ctx)
{
	size_t i, fit = n, at = 0, done = 0, k;
	uint64_t len = 0;
	struct stat st;
	int e = 0;

	for (i = 0; i < n; i++)
		len += recs[i].len;
	if (!n)
		return;
	if (!cf->failed && fstat(cf->fd, &st) == 0) {
		if (st.st_nlink == 0 && cf->remakable)
			capfile_deleted(cf);
		else if ((uint64_t)st.st_size != cf->size) {
			/* another writer appended (a process writing its own records), or it was truncated */
			cf->size = (uint64_t)st.st_size;
			if (cf->room_end < cf->size || st.st_size == 0)
				cf->room_end = cf->size;
		}
	}
	if (cf->failed) {
		fit = 0;
		len = 0;
	} else if (!capfile_room(cf, len, &e)) {
		/* as many whole records as there is room for, the reserve kept (room grows with the prefix) */
		size_t lo = 0, hi = n - 1;
		uint64_t sum;
		int e2;
		while (lo < hi) {
			size_t mid = lo + (hi - lo + 1) / 2;
			for (sum = 0, i = 0; i < mid; i++)
				sum += recs[i].len;
			if (capfile_room(cf, sum, &e2))
				lo = mid;
			else
				hi = mid - 1;
		}
		fit = lo;
		for (len = 0, i = 0; i < fit; i++)
			len += recs[i].len;
	}
	if (before && len)
		before(ctx, cf->size, (size_t)len);
	while (at < len) {
		ssize_t w = write(cf->fd, buf + at, (size_t)(len - at));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			e = w < 0 ? errno : EIO;
			break;
		}
		at += (size_t)w;
	}
	/* what is in the file: whole records only, a record cut short taken away */
	for (k = 0; k < fit && done + recs[k].len <= at; k++) {
		capfile_written(cf, buf + done, &recs[k]);
		done += recs[k].len;
	}
	if (done < at && ftruncate(cf->fd, (off_t)(cf->size + done)) != 0)
		e = e ? e : errno;
	cf->size += done;
	if (k < n && !cf->failed)
		capfile_fail(cf, e);
	for (i = k, at = done; i < n; i++) {
		capfile_unwrite(cf, buf + at, &recs[i]);
		at += recs[i].len;
	}
}

uint64_t capfile_size(const struct capfile *cf)
{
	return cf->size;
}

int capfile_failed(const struct capfile *cf)
{
	return cf->failed;
}

/* --- the end ------------------------------------------------------------------ */

/* The lost record of pid's lines not written, into buf; 0 when there are none. */
static size_t capfile_lost_rec(struct capfile *cf, struct cfpid *p, char *buf, size_t cap)
{
	struct caprec_head h;
	char why[160];
	size_t len;

	if (!p->unwritten)
		return 0;
	snprintf(why, sizeof(why), "the capture file could not be written (%s)", strerror(cf->failed));
	caprec_head_now(&h);
	h.pid = p->pid;
	h.tid = 0;
	h.fd = -1;
	len = caprec_lost(buf, cap, &h, p->unwritten, why);
	return len;
}

/* Bytes to the file's end, within the room reserved; 0 when they do not fit or fail. */
static int capfile_last(struct capfile *cf, const char *p, size_t n)
{
	if (cf->size + n > cf->limit || (!cf->no_reserve && cf->size + n > cf->room_end))
		return -1;
	while (n) {
		ssize_t w = write(cf->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
		cf->size += (uint64_t)w;
	}
	return 0;
}

/*
 * The file failed: the records kept (start, lost, end), each process's
 * lines not written in a lost record just before its end (or at the end),
 * as many as fit in the reserve; the rest said with counts.
 */
static void capfile_finish(struct capfile *cf)
{
	uint64_t left_recs = cf->keep_dropped, left_lines = cf->keep_dropped_lines;
	char buf[512];
	size_t at = 0, i, len;
	int ok = 1;

	while (at < cf->keep_len) {
		const char *rec = cf->keep + at, *nl = memchr(rec, '\n', cf->keep_len - at);
		size_t rl = nl ? (size_t)(nl + 1 - rec) : cf->keep_len - at;
		uint64_t cnt;
		enum capfile_kind kind = capfile_kind_of(rec, rl, &cnt);

		if (kind == CAPFILE_END) {
			/* the process's lost lines before its end: end is the last word */
			long pid = 0;
			const char *pp = memmem(rec, rl, "\"pid\":", 6);
			struct cfpid *p;
			if (pp)
				pid = strtol(pp + 6, NULL, 10);
			p = pid ? capfile_pid(cf, pid) : NULL;
			if (p && (len = capfile_lost_rec(cf, p, buf, sizeof(buf)))) {
				if (ok && capfile_last(cf, buf, len) == 0) {
					p->unwritten = 0;
				} else {
					ok = 0;
					left_recs++;
					left_lines += p->unwritten;
					p->unwritten = 0;
				}
			}
		}
		if (ok && capfile_last(cf, rec, rl) != 0)
			ok = 0;
		if (!ok) {
			left_recs++;
			left_lines += kind == CAPFILE_LOST ? cnt : 0;
		}
		at += rl;
	}
	for (i = 0; i < cf->n_slots; i++) {
		struct cfpid *p = &cf->pids[i];
		if (!p->pid || !(len = capfile_lost_rec(cf, p, buf, sizeof(buf))))
			continue;
		if (ok && capfile_last(cf, buf, len) == 0)
			continue;
		ok = 0;
		left_recs++;
		left_lines += p->unwritten;
	}
	if (left_recs)
		capfile_say(cf, "%s: its last records could not be written either (%s): %llu lines that are not "
			    "in it are counted only here (%llu lost, start or end records missing)", cf->path,
			    strerror(cf->failed), (unsigned long long)left_lines, (unsigned long long)left_recs);
}

enum status capfile_new(int fd, const char *path, capfile_warn_fn warn, void *warn_ctx, struct capfile **out,
			struct status_info *si)
{
	struct capfile *cf;
	struct rlimit rl;
	struct stat st;

	*out = NULL;
	cf = calloc(1, sizeof(*cf));
	if (!cf || !(cf->path = strdup(path ? path : "capture file"))) {
		free(cf);
		return status_set(si, STATUS_NOMEM, "out of memory");
	}
	cf->warn = warn;
	cf->warn_ctx = warn_ctx;
	cf->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (cf->fd < 0 || fstat(cf->fd, &st)) {
		enum status s = status_set(si, STATUS_IO, "%s: %s", path, strerror(errno));
		if (cf->fd >= 0)
			close(cf->fd);
		free(cf->path);
		free(cf);
		return s;
	}
	cf->size = (uint64_t)st.st_size;
	cf->room_end = cf->size;
	cf->remakable = path && path[0] == '/' && st.st_nlink > 0;
	cf->limit = UINT64_MAX;
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		cf->limit = (uint64_t)rl.rlim_cur;
	*out = cf;
	return STATUS_OK;
}

static void capfile_release(struct capfile *cf, int finish)
{
	size_t i;

	if (!cf)
		return;
	if (finish) {
		if (cf->failed)
			capfile_finish(cf);
		/* the room kept past the end is given back */
		if (cf->room_end > cf->size &&
		    fallocate(cf->fd, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, (off_t)cf->size,
			      (off_t)(cf->room_end - cf->size)) != 0 &&
		    ftruncate(cf->fd, (off_t)cf->size) != 0)
			(void)0;
	}
	close(cf->fd);
	for (i = 0; i < cf->n_slots; i++)
		free(cf->pids[i].start);
	free(cf->pids);
	free(cf->keep);
	free(cf->path);
	free(cf);
}

void capfile_free(struct capfile *cf)
{
	capfile_release(cf, 1);
}

void capfile_forget(struct capfile *cf)
{
	capfile_release(cf, 0);
}
