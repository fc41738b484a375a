/*
 * reader.c - audit and capture JSONL, line by line, from a file, stdin or a
 * gzip stream of one or more members.
 *
 * A plain file of READER_MAP_MIN bytes or more is read in place, through a
 * window of the file mapped read-only (no copy into a buffer: the copy was an
 * eighth of the replay's time); the window is followed by a page of zeros, so
 * a line's newline ends it for the parsers and the scanner's read-ahead never
 * leaves readable memory. Pipes, stdin, small files and gzip are read with
 * read(2) straight into the line buffer, or inflated into it member by
 * member: a member cut short, a corrupt one, or bytes after a member that do
 * not start another are a truncated stream, never a quiet end. Each line goes
 * to the scanner (when asked) or to the tree parser.
 *
 * A mapped line is scanned before its end is known (reader_scan_ahead): the
 * scanner stops at the newline, so finding it costs no pass of its own.
 *
 * A file mapped in place that is truncated while it is read makes the kernel
 * raise SIGBUS: what cannot stay still is read as a stream (`-`, a pipe, or
 * opts.no_map). A file that grows is read up to its size at the open.
 */
#include "analyzer/reader.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/auditline.h"

#define READER_CHUNK (256 * 1024)      /* bytes read or inflated at a time */
#define READER_ZCHUNK (64 * 1024)      /* compressed bytes read at a time */
#define READER_MAP_MIN (1024 * 1024)   /* plain files from this size are mapped */
#define READER_MAP_WIN (4 * 1024 * 1024)  /* the mapped window (at least a line more) */

static size_t reader_map_min = READER_MAP_MIN, reader_map_win = READER_MAP_WIN;
static size_t reader_chunk = READER_CHUNK, reader_zchunk = READER_ZCHUNK;

void audit_reader_map_sizes(size_t min, size_t window)
{
	reader_map_min = min;
	reader_map_win = window ? window : READER_MAP_WIN;
}

void audit_reader_buffer_sizes(size_t chunk, size_t zchunk)
{
	/* gzip's magic (two bytes) must fit in the first read and in zlib's input */
	reader_chunk = !chunk ? READER_CHUNK : chunk < 16 ? 16 : chunk;
	reader_zchunk = !zchunk ? READER_ZCHUNK : zchunk < 16 ? 16 : zchunk;
}

/* A streaming 64-bit hash over 32-byte blocks (the shape of XXH64). */
struct reader_hash {
	uint64_t v[4];
	unsigned char tail[32];
	size_t n_tail;
	uint64_t total;
};

#define RH_P1 0x9E3779B185EBCA87ull
#define RH_P2 0xC2B2AE3D27D4EB4Full
#define RH_P3 0x165667B19E3779F9ull
#define RH_P4 0x85EBCA77C2B2AE63ull
#define RH_P5 0x27D4EB2F165667C5ull

static inline uint64_t rh_rotl(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t rh_round(uint64_t acc, uint64_t w)
{
	return rh_rotl(acc + w * RH_P2, 31) * RH_P1;
}

static inline uint64_t rh_word(const unsigned char *p)
{
	uint64_t w;

	memcpy(&w, p, 8);
	return w;
}

static void rh_init(struct reader_hash *h)
{
	h->v[0] = RH_P1 + RH_P2;
	h->v[1] = RH_P2;
	h->v[2] = 0;
	h->v[3] = 0 - RH_P1;
	h->n_tail = 0;
	h->total = 0;
}

static void rh_blocks(struct reader_hash *h, const unsigned char *p, size_t n)
{
	uint64_t a = h->v[0], b = h->v[1], c = h->v[2], d = h->v[3];

	for (; n >= 32; n -= 32, p += 32) {
		a = rh_round(a, rh_word(p));
		b = rh_round(b, rh_word(p + 8));
		c = rh_round(c, rh_word(p + 16));
		d = rh_round(d, rh_word(p + 24));
	}
	h->v[0] = a, h->v[1] = b, h->v[2] = c, h->v[3] = d;
}

static void rh_add(struct reader_hash *h, const void *data, size_t n)
{
	const unsigned char *p = data;

	h->total += n;
	if (h->n_tail) {
		size_t k = 32 - h->n_tail < n ? 32 - h->n_tail : n;
		memcpy(h->tail + h->n_tail, p, k);
		h->n_tail += k;
		p += k;
		n -= k;
		if (h->n_tail < 32)
			return;
		rh_blocks(h, h->tail, 32);
		h->n_tail = 0;
	}
	rh_blocks(h, p, n & ~(size_t)31);
	p += n & ~(size_t)31;
	n &= 31;
	memcpy(h->tail, p, n);
	h->n_tail = n;
}

static uint64_t rh_final(const struct reader_hash *h)
{
	uint64_t x = rh_rotl(h->v[0], 1) + rh_rotl(h->v[1], 7) + rh_rotl(h->v[2], 12) +
		     rh_rotl(h->v[3], 18);
	size_t i;

	for (i = 0; i < 4; i++)
		x = (x ^ rh_round(0, h->v[i])) * RH_P1 + RH_P4;
	x += h->total;
	for (i = 0; i + 8 <= h->n_tail; i += 8)
		x = rh_rotl(x ^ rh_round(0, rh_word(h->tail + i)), 27) * RH_P1 + RH_P4;
	for (; i < h->n_tail; i++)
		x = rh_rotl(x ^ (h->tail[i] * RH_P5), 11) * RH_P1;
	x ^= x >> 33;
	x *= RH_P2;
	x ^= x >> 29;
	x *= RH_P3;
	x ^= x >> 32;
	return x;
}

struct audit_reader {
	char *file;                 /* owned copy of the name */
	int fd;                     /* -1: no file */
	struct stat st;
	bool gz;
	bool z_ready;               /* zs initialised (inflateInit2 done) */
	bool in_member;             /* inside a gzip member */
	bool raw_eof;               /* read(2) returned 0 */
	bool first_done;            /* the first bytes were read (reader_first) */
	z_stream zs;
	unsigned char *zin;         /* compressed input, zcap bytes */
	size_t zcap;
	size_t chunk;               /* bytes read or inflated at a time (reader_chunk at the open) */
	/*
	 * zlib failed on a member after giving bytes in the same call: those
	 * bytes are lines like any other, and the failure is said once they
	 * have been read, so the count does not depend on where a buffer ended
	 */
	bool z_failed;
	char z_why[96];
	size_t max_line;
	unsigned max_depth;
	bool scan;
	unsigned want;
	bool no_hash;
	char *buf;                  /* cap bytes + JDOC_SCAN_PAD of padding */
	size_t cap, start, end;     /* unread bytes are base[start, end) */
	char *base;                 /* buf, or the window when mapped */
	bool no_map;
	bool mapped;                /* this file is read through the window */
	char *win;                  /* reserved: win_len bytes of window, then a page of zeros */
	size_t win_len, win_res;    /* the window's size, the reservation's */
	off_t win_off;              /* the file offset of win[0] */
	off_t size;                 /* the mapped file's size when it was opened */
	int live;                   /* its slot in reader_live, -1: none */
	int eof;
	bool failed;                /* a read error or a truncated stream: no more lines */
	long line;
	struct jdoc *doc;
	struct event_decoder *dec;
	struct audit_reader_stats stats;
	struct reader_hash hash;
};

/*
 * The windows being read, for audit_reader_fault(): a signal handler looks
 * an address up without a lock or an allocation. A reader takes a slot when
 * it maps a window and gives it back when it stops reading in place; with
 * every slot taken a fault is still reported, without the file's name.
 */
#define READER_LIVE 64
static struct {
	atomic_int used;
	_Atomic(uintptr_t) lo, hi;
	_Atomic(const char *) path;
} reader_live[READER_LIVE];

static void reader_live_set(struct audit_reader *r)
{
	int i, zero;

	if (r->live < 0)
		for (i = 0; i < READER_LIVE && r->live < 0; i++) {
			zero = 0;
			if (atomic_compare_exchange_strong(&reader_live[i].used, &zero, 1))
				r->live = i;
		}
	if (r->live < 0)
		return;
	atomic_store(&reader_live[r->live].path, r->file);
	atomic_store(&reader_live[r->live].lo, (uintptr_t)r->win);
	atomic_store(&reader_live[r->live].hi, (uintptr_t)r->win + r->win_res);
}

static void reader_live_clear(struct audit_reader *r)
{
	if (r->live < 0)
		return;
	atomic_store(&reader_live[r->live].hi, 0);
	atomic_store(&reader_live[r->live].lo, 0);
	atomic_store(&reader_live[r->live].path, NULL);
	atomic_store(&reader_live[r->live].used, 0);
	r->live = -1;
}

const char *audit_reader_fault(const void *addr)
{
	uintptr_t a = (uintptr_t)addr;
	int i;

	for (i = 0; i < READER_LIVE; i++)
		if (a >= atomic_load(&reader_live[i].lo) && a < atomic_load(&reader_live[i].hi))
			return atomic_load(&reader_live[i].path);
	return NULL;
}

static void reader_close(struct audit_reader *r)
{
	reader_live_clear(r);
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	r->mapped = false;
	r->base = r->buf;
	if (r->z_ready)
		inflateEnd(&r->zs);
	r->z_ready = false;
}

/*
 * Sets up reading in place when the file does not start as gzip: the
 * reservation is made once per reader (the window and a page of zeros after
 * it). 0 when the file is to be read with read(2) instead.
 */
static int reader_map_start(struct audit_reader *r)
{
	unsigned char magic[2];
	long page = sysconf(_SC_PAGESIZE);

	if (pread(r->fd, magic, 2, 0) != 2 || (magic[0] == 0x1f && magic[1] == 0x8b))
		return 0;
	if (page <= 0 || page > (1L << 20) || (size_t)page < JDOC_SCAN_PAD)
		return 0;
	if (!r->win) {
		size_t len = reader_map_win / (size_t)page * (size_t)page;
		/* a line at the cap must fit behind any page boundary */
		if (r->max_line > SIZE_MAX / 2 - 4 * (size_t)page)
			return 0;
		if (len < r->max_line + 2 * (size_t)page)
			len = (r->max_line + 2 * (size_t)page + (size_t)page - 1) / (size_t)page *
			      (size_t)page;
		r->win_res = len + (size_t)page;
		r->win = mmap(NULL, r->win_res, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (r->win == MAP_FAILED) {
			r->win = NULL;
			return 0;
		}
		r->win_len = len;
	}
	r->size = r->st.st_size;
	r->win_off = 0;
	r->start = r->end = 0;
	return 1;
}

/*
 * The window moved to the page holding base[start]: 0 ok (eof set when the
 * file has no byte after base[end)), -1 when the file cannot be mapped.
 */
static int reader_map_fill(struct audit_reader *r, struct status_info *si)
{
	long page = sysconf(_SC_PAGESIZE);
	off_t at = r->win_off + (off_t)r->start, from;
	size_t len, old_end = (size_t)(r->win_off + (off_t)r->end);

	if ((off_t)old_end >= r->size) {
		r->eof = 1;
		return 0;
	}
	from = at - at % page;
	len = r->size - from < (off_t)r->win_len ? (size_t)(r->size - from) : r->win_len;
	/* zeros first over the whole reservation (the last window may be shorter), then the file */
	if (mmap(r->win, r->win_res, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) ==
		    MAP_FAILED ||
	    mmap(r->win, len, PROT_READ, MAP_PRIVATE | MAP_FIXED, r->fd, from) ==
		    MAP_FAILED) {
		/*
		 * A failed MAP_FIXED may leave part of the range unmapped, free for
		 * another thread's mapping: the reservation is forgotten, never
		 * mapped over or unmapped again (the next file makes a new one).
		 */
		reader_live_clear(r);
		r->win = NULL;
		r->mapped = false;
		r->base = r->buf;
		r->start = r->end = 0;
		r->failed = true;
		status_set_at(si, STATUS_IO, r->file, r->line + 1, 0, "cannot map: %s",
			      strerror(errno));
		return -1;
	}
	r->base = r->win;
	r->win_off = from;
	r->start = (size_t)(at - from);
	r->end = len;
	reader_live_set(r);
	/* counted and hashed once, in order: the bytes the last window did not have */
	if ((size_t)(from + (off_t)len) > old_end) {
		size_t fresh = (size_t)(from + (off_t)len) - old_end;
		if (!r->no_hash)
			rh_add(&r->hash, r->win + (old_end - (size_t)from), fresh);
	}
	return 0;
}

/* Starts reading path (opened already as fd): the first bytes decide gzip or not. */
static enum status reader_start(struct audit_reader *r, const char *path, struct status_info *si)
{
	char *name;

	name = strdup(path);
	if (!name)
		return status_set_at(si, STATUS_NOMEM, path, 0, 0, "out of memory");
	reader_live_clear(r);   /* its path is about to be freed */
	free(r->file);
	r->file = name;
	memset(&r->stats, 0, sizeof(r->stats));
	rh_init(&r->hash);
	r->start = r->end = 0;
	r->eof = 0;
	r->failed = false;
	r->line = 0;
	r->gz = false;
	r->in_member = false;
	r->raw_eof = false;
	r->first_done = false;
	r->z_failed = false;
	r->base = r->buf;
	r->mapped = false;
	if (r->fd < 0 || fstat(r->fd, &r->st))
		memset(&r->st, 0, sizeof(r->st));
	if (r->fd >= 0 && !r->no_map && strcmp(path, "-") && S_ISREG(r->st.st_mode) &&
	    (uint64_t)r->st.st_size >= reader_map_min && r->st.st_size > 0 && reader_map_start(r))
		r->mapped = true;
	return STATUS_OK;
}

static int reader_open_fd(const char *path)
{
	return strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : fcntl(0, F_DUPFD_CLOEXEC, 0);
}

static enum status reader_new(struct audit_reader **out, const char *path, bool lines_only,
			      const struct audit_reader_opts *opts, struct status_info *si)
{
	struct audit_reader *r = NULL;
	struct event_decoder_opts eo = { 0 };
	enum status st = STATUS_NOMEM;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		goto out;
	r->fd = -1;
	r->live = -1;
	r->max_line = opts && opts->max_line ? opts->max_line : AUDIT_READER_MAX_LINE;
	r->max_depth = opts && opts->max_depth ? opts->max_depth : JDOC_MAX_DEPTH;
	r->scan = opts && opts->scan;
	r->want = opts ? opts->want : 0;
	r->no_hash = opts && opts->no_hash;
	r->no_map = opts && opts->no_map;
	eo.max_slots = opts ? opts->max_slots : 0;
	r->chunk = reader_chunk;
	r->cap = r->max_line + r->chunk + 1;
	r->buf = calloc(1, r->cap + JDOC_SCAN_PAD);
	r->base = r->buf;
	r->doc = jdoc_new(r->max_line);
	r->dec = event_decoder_new_opts(&eo);
	if (!r->buf || !r->doc || !r->dec)
		goto out;
	jdoc_set_max_depth(r->doc, r->max_depth);
	jdoc_set_keep_surrogates(r->doc, 1);   /* ids must stay distinct */
	if (!lines_only) {
		r->fd = reader_open_fd(path);
		if (r->fd < 0) {
			st = status_set_at(si, STATUS_IO, path, 0, 0, "cannot open: %s", strerror(errno));
			goto out;
		}
	}
	if ((st = reader_start(r, path, si)))
		goto out;
	*out = r;
	r = NULL;
	st = STATUS_OK;
out:
	if (st == STATUS_NOMEM && si && !si->msg[0])
		status_set_at(si, st, path, 0, 0, "out of memory");
	audit_reader_free(r);
	return st;
}

enum status audit_reader_open(struct audit_reader **out, const char *path,
			      const struct audit_reader_opts *opts, struct status_info *si)
{
	return reader_new(out, path, false, opts, si);
}

enum status audit_reader_open_lines(struct audit_reader **out, const char *name,
				    const struct audit_reader_opts *opts, struct status_info *si)
{
	return reader_new(out, name, true, opts, si);
}

enum status audit_reader_reopen(struct audit_reader *r, const char *path, struct status_info *si)
{
	reader_close(r);
	r->eof = 1;
	r->start = r->end = 0;
	r->fd = reader_open_fd(path);
	if (r->fd < 0)
		return status_set_at(si, STATUS_IO, path, 0, 0, "cannot open: %s", strerror(errno));
	return reader_start(r, path, si);
}

void audit_reader_free(struct audit_reader *r)
{
	if (!r)
		return;
	reader_close(r);
	reader_live_clear(r);
	if (r->win)
		munmap(r->win, r->win_res);
	jdoc_free(r->doc);
	event_decoder_free(r->dec);
	free(r->zin);
	free(r->buf);
	free(r->file);
	free(r);
}

const struct audit_reader_stats *audit_reader_stats(const struct audit_reader *r)
{
	return &r->stats;
}

void audit_reader_identity(const struct audit_reader *r, dev_t *dev, ino_t *ino)
{
	*dev = r->st.st_dev;
	*ino = r->st.st_ino;
}

uint64_t audit_reader_content_hash(const struct audit_reader *r)
{
	return rh_final(&r->hash);
}

static ssize_t reader_read(int fd, void *p, size_t n)
{
	ssize_t k;

	do
		k = read(fd, p, n);
	while (k < 0 && errno == EINTR);
	return k;
}

static int reader_read_error(struct audit_reader *r, struct status_info *si, int err)
{
	r->failed = true;
	status_set_at(si, STATUS_IO, r->file, r->line + 1, 0, "read error: %s", strerror(err));
	return -1;
}

static int reader_truncated(struct audit_reader *r, struct status_info *si, const char *why)
{
	r->failed = true;
	r->stats.truncated = true;
	status_set_at(si, STATUS_IO, r->file, 0, 0, "truncated gzip after %ld lines (%s)", r->line,
		      why);
	return -1;
}

/* More compressed input into zs; 0 ok (raw_eof may be set), -1 error. */
static int reader_zfill(struct audit_reader *r, struct status_info *si)
{
	ssize_t k;

	if (r->raw_eof || r->zs.avail_in)
		return 0;
	k = reader_read(r->fd, r->zin, r->zcap);
	if (k < 0)
		return reader_read_error(r, si, errno);
	if (k == 0)
		r->raw_eof = true;
	r->zs.next_in = r->zin;
	r->zs.avail_in = (uInt)k;
	return 0;
}

/* Inflates into buf[end, end + room): bytes produced, 0 at the end of the stream, -1 error. */
static ssize_t reader_inflate(struct audit_reader *r, size_t room, struct status_info *si)
{
	if (r->z_failed)
		return reader_truncated(r, si, r->z_why);
	for (;;) {
		size_t made;
		int zr;

		if (reader_zfill(r, si))
			return -1;
		if (!r->in_member) {
			if (!r->zs.avail_in && r->raw_eof)
				return 0;
			if (!r->zs.avail_in)
				continue;
			/* another member must start here; inflate checks its header */
			if (inflateReset(&r->zs) != Z_OK)
				return reader_truncated(r, si, "inflate reset failed");
			r->in_member = true;
		}
		r->zs.next_out = (Bytef *)r->buf + r->end;
		r->zs.avail_out = (uInt)room;
		zr = inflate(&r->zs, Z_NO_FLUSH);
		made = room - r->zs.avail_out;
		if (zr == Z_STREAM_END) {
			r->in_member = false;
		} else if (zr == Z_BUF_ERROR || (zr == Z_OK && !made)) {
			if (!r->zs.avail_in && r->raw_eof)
				return reader_truncated(r, si, "unexpected end of file");
		} else if (zr != Z_OK) {
			/*
			 * A bad check value is read after the member's bytes, which zlib
			 * has given by then: they are read first, the failure said after
			 */
			snprintf(r->z_why, sizeof(r->z_why), "%s", r->zs.msg ? r->zs.msg : zError(zr));
			if (!made)
				return reader_truncated(r, si, r->z_why);
			r->z_failed = true;
		}
		if (made)
			return (ssize_t)made;
	}
}

/* The first bytes of the file: gzip's magic turns on decompression. */
static int reader_first(struct audit_reader *r, struct status_info *si)
{
	/* as much as zlib's first input holds, within the buffer */
	size_t first = reader_zchunk < r->cap - 1 ? reader_zchunk : r->cap - 1;
	ssize_t k = 0, got = 0;

	while (got < 2) {
		k = reader_read(r->fd, r->buf + got, first - (size_t)got);
		if (k < 0)
			return reader_read_error(r, si, errno);
		if (k == 0)
			break;
		got += k;
	}
	if (got >= 2 && (unsigned char)r->buf[0] == 0x1f && (unsigned char)r->buf[1] == 0x8b) {
		if (r->zin && r->zcap != reader_zchunk) {
			free(r->zin);
			r->zin = NULL;
		}
		if (!r->zin && !(r->zin = malloc(reader_zchunk))) {
			r->failed = true;
			status_set_at(si, STATUS_NOMEM, r->file, 0, 0, "out of memory");
			return -2;
		}
		/* the compressed bytes read so far become zlib's first input */
		memset(&r->zs, 0, sizeof(r->zs));
		if (inflateInit2(&r->zs, 15 + 16) != Z_OK) {
			r->failed = true;
			status_set_at(si, STATUS_NOMEM, r->file, 0, 0, "cannot start decompression");
			return -2;
		}
		r->zcap = reader_zchunk;
		r->z_ready = true;
		r->gz = true;
		r->stats.gzip = true;
		memcpy(r->zin, r->buf, (size_t)got);
		r->zs.next_in = r->zin;
		r->zs.avail_in = (uInt)got;
		r->raw_eof = k == 0;
		return 0;
	}
	if (got == 0)
		r->raw_eof = true;
	if (!r->no_hash)
		rh_add(&r->hash, r->buf, (size_t)got);
	r->end = (size_t)got;
	r->buf[r->end] = '\0';   /* the scan ahead stops here (reader_scan_ahead) */
	return 0;
}

/* Reads more input after buf[end); compacts first. 0 ok, -1 I/O error, -2 no memory. */
static int reader_fill(struct audit_reader *r, struct status_info *si)
{
	size_t room;
	ssize_t n;

	if (r->failed)
		return -1;
	if (r->fd < 0) {
		r->eof = 1;
		return 0;
	}
	if (r->mapped)
		return reader_map_fill(r, si);
	if (!r->first_done) {
		r->first_done = true;
		return reader_first(r, si);
	}
	if (r->start > 0) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->end -= r->start;
		r->start = 0;
	}
	room = r->cap - 1 - r->end;
	if (room > r->chunk)
		room = r->chunk;
	if (room == 0)
		return 0;
	if (r->gz) {
		n = reader_inflate(r, room, si);
	} else if (r->raw_eof) {
		n = 0;
	} else {
		n = reader_read(r->fd, r->buf + r->end, room);
		if (n < 0)
			return reader_read_error(r, si, errno);
	}
	if (n < 0)
		return -1;
	if (n == 0) {
		r->eof = 1;
		return 0;
	}
	if (!r->no_hash)
		rh_add(&r->hash, r->buf + r->end, (size_t)n);
	r->end += (size_t)n;
	r->buf[r->end] = '\0';
	return 0;
}

/*
 * Consumes k bytes of the buffer: stats.bytes counts the bytes of the lines
 * read (newlines included), so that it says what was read whatever the
 * buffers held beyond (a --strict stop, a cut gzip's partial last line).
 */
static inline void reader_take(struct audit_reader *r, size_t k)
{
	r->start += k;
	r->stats.bytes += k;
}

/*
 * The next line into s and n (without the newline, NUL-terminated in place).
 * Returns 1 for a line, 0 at end of input, -1 on I/O error (-2 no memory),
 * -3 when the line is over the cap (it is consumed up to its newline and
 * reported).
 */
static int reader_line(struct audit_reader *r, char **s, size_t *n, struct status_info *si)
{
	size_t scanned = 0;
	int too_long = 0, rc;

	for (;;) {
		char *nl = memchr(r->base + r->start + scanned, '\n', r->end - r->start - scanned);
		if (nl) {
			size_t len = (size_t)(nl - (r->base + r->start));
			r->line++;
			if (too_long || len > r->max_line) {
				reader_take(r, len + 1);
				return -3;
			}
			*s = r->base + r->start;
			*n = len;
			if (!r->mapped)
				*nl = '\0';   /* a mapped line ends on its newline (jdoc.h) */
			reader_take(r, len + 1);
			return 1;
		}
		scanned = r->end - r->start;
		if (scanned > r->max_line) {
			/* over the cap: drop what we have, keep looking for the newline */
			too_long = 1;
			reader_take(r, r->end - r->start);
			scanned = 0;
		}
		if (r->eof) {
			if (r->end == r->start && !too_long)
				return 0;
			r->line++;
			if (too_long) {
				reader_take(r, r->end - r->start);
				return -3;
			}
			*s = r->base + r->start;
			*n = r->end - r->start;
			if (!r->mapped)
				r->buf[r->end] = '\0';   /* mapped: zeros follow the file */
			reader_take(r, r->end - r->start);
			return 1;
		}
		if ((rc = reader_fill(r, si)))
			return rc;
	}
}

/*
 * Every field but the event, which the decoders clear themselves: clearing
 * the whole item for each line costs as much as a short line.
 */
static void reader_item_clear(const struct audit_reader *r, struct audit_item *it)
{
	it->file = r->file;
	it->line = r->line;
	it->doc = NULL;
	it->record = NULL;
	it->src = NULL;
	it->src_len = 0;
	it->has_event = it->has_pid = it->has_time = it->has_end = false;
	it->pid = it->tid = 0;
	it->t = it->mono = 0;
	memset(&it->end, 0, sizeof(it->end));
}

static int is_blank(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return 0;
	return 1;
}

/*
 * Whether s (a line from its first non-blank byte) starts as a JSON object:
 * '{', blanks, then '"', '}' or the line's end (a line cut after its brace).
 * Anything else after the brace is text a log prints at the start of a line
 * (a template's "{{" or "{%", a Python dict's "{'", a continuation line of a
 * message over several lines): a log line, never a malformed audit line.
 */
static bool reader_opens_object(const char *s, size_t n)
{
	size_t i;

	if (!n || s[0] != '{')
		return false;
	for (i = 1; i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'); i++)
		;
	return i == n || s[i] == '"' || s[i] == '}';
}

static double num_or(const struct jval *v, double dflt)
{
	if (v && v->type == JT_INT)
		return (double)v->u.i;
	if (v && v->type == JT_REAL)
		return v->u.d;
	return dflt;
}

#define SRC_IS(it, lit) event_str_is((it)->src, (it)->src_len, lit)

/* An "end" record's account of how the process ended; fields of another type are left out. */
static void reader_end(const struct jdoc *d, const struct jval *root, struct audit_item *it)
{
	const struct jval *v;

	it->has_end = true;
	v = jdoc_get(d, root, "how");
	if (v && v->type == JT_STR) {
		it->end.how = v->u.s;
		it->end.how_len = v->n;
	}
	v = jdoc_get(d, root, "by");
	if (v && v->type == JT_STR) {
		it->end.by = v->u.s;
		it->end.by_len = v->n;
	}
	v = jdoc_get(d, root, "code");
	if (v && v->type == JT_INT) {
		it->end.has_code = true;
		it->end.code = v->u.i;
	}
	v = jdoc_get(d, root, "signal");
	if (v && v->type == JT_INT) {
		it->end.has_signal = true;
		it->end.signal = v->u.i;
	}
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
	it->src_len = src->n;
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
	v = jdoc_get(d, root, "partial");
	if (v && v->type == JT_TRUE)
		r->stats.partial++;
	v = jdoc_get(d, root, "invalid_utf8");
	if (v && v->type == JT_INT && v->u.i > 0)
		r->stats.invalid_utf8 += (uint64_t)v->u.i;
	if (SRC_IS(it, "lost") || SRC_IS(it, "uncertain")) {
		int lost = SRC_IS(it, "lost");
		v = jdoc_get(d, root, "count");
		if (!v || v->type != JT_INT || v->u.i < 0)
			return status_set(si, STATUS_PARSE, "%s record has no count",
					  lost ? "lost" : "uncertain");
		if (lost) {
			r->stats.capture_lost += (uint64_t)v->u.i;
			return STATUS_OK;
		}
		r->stats.capture_uncertain += (uint64_t)v->u.i;
		/* an audit line whose truth is uncertain is counted, never replayed */
		v = jdoc_get(d, root, "record");
		if (v && v->type == JT_OBJ &&
		    (jdoc_get(d, v, "ev") ||
		     (jdoc_str_is(jdoc_get(d, v, "src"), "audit", 5) && jdoc_get(d, v, "event"))))
			r->stats.uncertain_events++;
		return STATUS_OK;
	}
	if (SRC_IS(it, "end")) {
		reader_end(d, root, it);
		return STATUS_OK;
	}
	if (!SRC_IS(it, "audit"))
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

/* "pid=N)" in a log line's prefix (vLLM's `(EngineCore_DP0 pid=N) `): the writing process. */
static bool reader_prefix_pid(const char *s, size_t n, int64_t *pid)
{
	const char *p = s, *end = s + n;

	while ((p = memmem(p, (size_t)(end - p), "pid=", 4))) {
		int64_t v = 0;
		const char *d = p + 4;

		while (d < end && *d >= '0' && *d <= '9' && v < INT64_C(1) << 40)
			v = v * 10 + (*d++ - '0');
		if (d > p + 4 && d < end && *d == ')') {
			*pid = v;
			return true;
		}
		p += 4;
	}
	return false;
}

/* Keeps what the first lines that are not audit lines look like, for the no-audit message. */
static void reader_other(struct audit_reader *r, const char *s, size_t n)
{
	size_t i, k = 0;

	r->stats.other_lines++;
	if (n > 0 && s[0] == '(' && memmem(s, n < 64 ? n : 64, " pid=", 5))
		r->stats.vllm_lines++;
	if (r->stats.first_other_line)
		return;
	r->stats.first_other_line = r->line;
	for (i = 0; i < n && k + 1 < sizeof(r->stats.first_other); i++) {
		unsigned char c = (unsigned char)s[i];
		r->stats.first_other[k++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	r->stats.first_other[k] = '\0';
}

/*
 * One line s[0..n) (NUL at s[n], JDOC_SCAN_PAD readable bytes after):
 * STATUS_OK with *it filled, STATUS_EOF when the line yields no item (blank,
 * ignored, not an audit line), or PARSE/LIMIT (malformed) or NOMEM with si set.
 */
static enum status reader_decode(struct audit_reader *r, char *s, size_t n, struct audit_item *it,
			 struct status_info *si)
{
	enum status st;
	const struct jval *root, *src, *ev;
	size_t i, off = 0;
	int rc;

	if (r->line == 1 && n >= 3 && !memcmp(s, "\xef\xbb\xbf", 3)) {
		/* a byte order mark before the first line: skipped, and said once */
		r->stats.bom = true;
		s += 3;
		n -= 3;
	}
	if (is_blank(s, n)) {
		r->stats.blank++;
		return STATUS_EOF;
	}
	reader_item_clear(r, it);
	if (si)
		si->byte = 0;
	for (i = 0; i < n && (s[i] == ' ' || s[i] == '\t'); i++)
		;
	if (!reader_opens_object(s + i, n - i)) {
		/*
		 * Not a bare JSON object: a log line. It is an audit line when a spec
		 * event follows its prefix, as the shim decides (base/auditline.h);
		 * any other line is `other`, never malformed.
		 */
		if (!auditline_find(s, n, &off)) {
			reader_other(r, s, n);
			return STATUS_EOF;
		}
		r->stats.log_audit_lines++;
		it->has_pid = reader_prefix_pid(s, off, &it->pid);
		s += off;
		n -= off;
	}
	if (r->scan) {
		rc = event_scan(r->dec, s, n, r->max_depth, r->want, &it->event);
		if (rc < 0)
			return status_set_at(si, STATUS_NOMEM, r->file, r->line, 0, "out of memory");
		if (rc > 0) {
			it->has_event = true;
			r->stats.events++;
			r->stats.other_events += it->event.kind == EVENT_OTHER;
			return STATUS_OK;
		}
	}
	memset(&it->event, 0, sizeof(it->event));
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
		src = off ? NULL : jdoc_get(r->doc, root, "src");
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
			return STATUS_EOF;
		}
	}
	if (st) {
		long byte = si ? si->byte : 0;
		r->stats.malformed++;
		if (si) {
			snprintf(si->file, sizeof(si->file), "%s", r->file);
			si->line = r->line;
			si->byte = byte ? byte + (long)off : 0;
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

/*
 * A line of a file read in place, scanned before its end is known: the
 * scanner stops at the first newline, so the search for it is the parse
 * itself. 1 with *it filled and the line consumed; 0 when the line is not
 * one the scanner takes whole (reader_line then finds its end as usual),
 * -1 out of memory.
 */
static int reader_scan_ahead(struct audit_reader *r, struct audit_item *it)
{
	char *s = r->base + r->start;
	size_t room = r->end - r->start, n = room, len = 0;
	/* the window ends with the file (a buffer's last line takes the usual road) */
	bool last = r->mapped && r->win_off + (off_t)r->end >= r->size;
	int rc;

	if (n > r->max_line + 1)
		n = r->max_line + 1;
	rc = event_scan_line(r->dec, s, n, r->max_depth, r->want, &it->event, &len);
	if (rc <= 0)
		return rc;
	/* ended by its newline, or the file's last line, within the cap */
	if (len == n ? !(last && n == room && len <= r->max_line) : s[len] != '\n')
		return 0;
	r->line++;
	r->stats.lines++;
	reader_take(r, len + (len < room));
	reader_item_clear(r, it);
	it->has_event = true;
	r->stats.events++;
	r->stats.other_events += it->event.kind == EVENT_OTHER;
	return 1;
}

enum status audit_reader_next(struct audit_reader *r, struct audit_item *it,
			      struct status_info *si)
{
	/* the first line may start with a BOM: reader_decode's */
	if (r->scan && r->line > 0 && !r->failed && r->start < r->end && r->base[r->start] == '{') {
		int rc = reader_scan_ahead(r, it);
		if (rc > 0)
			return STATUS_OK;
		if (rc < 0)
			return status_set_at(si, STATUS_NOMEM, r->file, r->line + 1, 0, "out of memory");
	}
	for (;;) {
		char *s = NULL;
		size_t n = 0;
		enum status st;
		int rc;

		rc = reader_line(r, &s, &n, si);
		if (rc == 0)
			return STATUS_EOF;
		if (rc == -1)
			return STATUS_IO;
		if (rc == -2)
			return STATUS_NOMEM;
		r->stats.lines++;
		if (rc == -3) {
			r->stats.malformed++;
			return status_set_at(si, STATUS_LIMIT, r->file, r->line, 0,
					     "line longer than %zu bytes", r->max_line);
		}
		st = reader_decode(r, s, n, it, si);
		if (st != STATUS_EOF)
			return st;
	}
}

enum status audit_reader_line(struct audit_reader *r, const char *line, size_t n,
			      struct audit_item *it, struct status_info *si)
{
	r->line++;
	r->stats.lines++;
	r->stats.bytes += n + 1;
	if (n > r->max_line) {
		r->stats.malformed++;
		return status_set_at(si, STATUS_LIMIT, r->file, r->line, 0,
				     "line longer than %zu bytes", r->max_line);
	}
	/* into the padded buffer the scanner needs */
	memcpy(r->buf, line, n);
	memset(r->buf + n, 0, JDOC_SCAN_PAD + 1);
	return reader_decode(r, r->buf, n, it, si);
}

int audit_reader_describe(const struct audit_reader_stats *s, char *buf, size_t n)
{
	uint64_t content = s->lines - s->blank;

	if (s->events)
		return 0;
	if (s->malformed)
		snprintf(buf, n, "%" PRIu64 " lines, %" PRIu64 " of them malformed (named above) and "
			 "none an audit event that could be read: the writer is broken, or this is "
			 "not an audit", content, s->malformed);
	else if (s->truncated && !content)
		snprintf(buf, n, "a gzip stream cut short or damaged before its first complete line: "
			 "nothing could be read");
	else if (!s->bytes)
		snprintf(buf, n, "the file is empty: give the server's log or capture, where the audit lines are");
	else if (!content)
		snprintf(buf, n, "%" PRIu64 " blank lines and nothing else: no audit line", s->lines);
	else if (s->capture_records && s->capture_records >= content)
		snprintf(buf, n, "a capture of %" PRIu64 " records without audit records: the captured "
			 "process wrote no audit line (is the model instrumented, docs/instrumenting.md, "
			 "and the audit on?)", s->capture_records);
	else if (s->vllm_lines * 2 >= content)
		snprintf(buf, n, "a vLLM log (%" PRIu64 " of %" PRIu64 " lines with a process prefix, "
			 "line %ld: '%.60s') without audit lines: the keep writes them only when the "
			 "model is instrumented (docs/instrumenting.md); if the audit goes to another "
			 "stream (stderr, a file), give that one", s->vllm_lines, content,
			 s->first_other_line, s->first_other);
	else if (s->other_lines)
		snprintf(buf, n, "%" PRIu64 " lines, %" PRIu64 " of them neither JSON nor a log line "
			 "with an audit event after its prefix (line %ld: '%.60s'): give an audit, a "
			 "capture (ttaudit capture, ttaudit follow) or the log the audit lines went to",
			 content, s->other_lines, s->first_other_line, s->first_other);
	else
		snprintf(buf, n, "%" PRIu64 " lines of JSON, none an audit event (no \"ev\") or a capture "
			 "record (no \"src\")", content);
	return 1;
}
