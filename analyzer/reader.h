/*
 * reader.h - streaming reader for merge audits and capture files.
 *
 * Reads plain audit JSONL, capture JSONL (records with "src"), server logs
 * whose audit lines carry a log prefix, or a mix, deciding line by line; "-" is stdin; gzip input (one member or several) is
 * read transparently, whatever the file is called. Memory is bounded by the
 * longest accepted line, whatever the file size.
 *
 *	struct audit_reader *r;
 *	struct audit_item it;
 *	if (audit_reader_open(&r, path, NULL, &si)) ...
 *	while ((st = audit_reader_next(r, &it, &si)) != STATUS_EOF) {
 *		if (st == STATUS_PARSE || st == STATUS_LIMIT) { report si; continue; }
 *		if (st) break;            (an I/O error or a truncated gzip: stop)
 *		...use it...
 *	}
 *	audit_reader_free(r);
 */
#ifndef TTAUDIT_READER_H
#define TTAUDIT_READER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "analyzer/event.h"
#include "base/jdoc.h"
#include "base/status.h"

/* Default cap on one line; a longer line is malformed, never truncated. */
#define AUDIT_READER_MAX_LINE (1u << 20)

struct audit_reader_opts {
	size_t max_line;     /* 0: AUDIT_READER_MAX_LINE */
	unsigned max_depth;  /* JSON nesting; 0: JDOC_MAX_DEPTH */
	uint32_t max_slots;  /* entries of an integer array; 0: EVENT_MAX_SLOTS */
	/*
	 * Decode plain event lines with the scanner (event_scan): no tree is
	 * built for them, so item.doc and item.record are NULL on those items.
	 * Lines it declines (capture records, malformed lines, unusual forms)
	 * are parsed into a tree as always. `want` is event_scan's.
	 */
	bool scan;
	unsigned want;
	bool no_hash;        /* skip audit_reader_content_hash's work (one input: nothing to compare) */
	bool no_map;         /* read a plain file with read(2), never in place (audit_reader_open) */
};

struct audit_reader_stats {
	uint64_t lines;           /* every line read, blank ones included */
	uint64_t blank;
	uint64_t events;          /* audit events, plain or from capture audit records */
	uint64_t other_events;    /* events with an "ev" this format does not know */
	uint64_t malformed;       /* lines that are not JSON objects or fail validation */
	uint64_t ignored;         /* JSON objects that are neither an event nor a capture record */
	uint64_t capture_records; /* lines with "src" */
	uint64_t capture_lost;    /* sum of "count" over capture "lost" records */
	/* added later: */
	uint64_t capture_uncertain;  /* sum of "count" over capture "uncertain" records */
	uint64_t uncertain_events;   /* audit events inside uncertain records: never replayed */
	uint64_t partial;            /* records of lines no newline ended ("partial":true) */
	uint64_t invalid_utf8;       /* sum of "invalid_utf8" (bytes the capture escaped) */
	uint64_t bytes;              /* bytes of the lines read, newlines included (after
	                                decompression): the file's size once read to the end */
	bool bom;                    /* the file began with a UTF-8 byte order mark (skipped) */
	bool gzip;
	bool truncated;              /* a gzip stream ended early or was corrupt */
	/*
	 * Lines of a plain log: a line that is not a bare JSON object is an audit
	 * line when a spec event follows its prefix (base/auditline.h, the
	 * shim's test), else `other` (never malformed).
	 */
	uint64_t log_audit_lines;    /* audit events read after a log prefix */
	uint64_t other_lines;        /* lines neither JSON nor audit lines */
	uint64_t vllm_lines;         /* of those, lines with a vLLM process prefix "(Name pid=N) " */
	long first_other_line;       /* the first other line (0: none) and its start, control bytes as '?' */
	char first_other[64];
};

/* How a process ended, from a capture "end" record (docs/audit-format.md). */
struct audit_end {
	const char *how;           /* "exit", "_exit", "signal", "exec"; NULL when absent */
	uint32_t how_len;
	const char *by;            /* "shim", "parent", "capture"; NULL when absent */
	uint32_t by_len;
	bool has_code, has_signal;
	int64_t code, signal;
};

/* One line. Pointers are valid until the next audit_reader_next() call. */
struct audit_item {
	const char *file;          /* as given to audit_reader_open ("-" for stdin) */
	long line;                 /* 1-based */
	const struct jdoc *doc;    /* the parsed line; NULL for a line the scanner read */
	const struct jval *record; /* its root object; NULL likewise */
	const char *src;           /* capture record kind, NULL for a plain event line */
	uint32_t src_len;
	bool has_event;            /* a plain event, or a capture "audit" record's event */
	struct event event;
	/* capture metadata (audit/banner/line records), when present */
	bool has_pid;              /* a capture record's pid, or a log prefix's "pid=N)" */
	int64_t pid, tid;
	bool has_time;
	double t, mono;
	bool has_end;              /* an "end" record */
	struct audit_end end;
};

struct audit_reader;

/*
 * Plain files of `min` bytes or more are read in place through a mapped
 * window of `window` bytes (raised to fit a line at the cap); 0 for window
 * means the default. The defaults are 1 MiB and 4 MiB; tests lower them to
 * hold the mapped reading to read(2)'s. Call before readers are opened, not
 * while threads read.
 */
void audit_reader_map_sizes(size_t min, size_t window);
/*
 * The bytes read (or inflated) at a time, `chunk`, and the compressed bytes
 * read at a time, `zchunk` (0: the defaults, 256 KiB and 64 KiB; 16 at least). Nothing a
 * reader reports depends on them; tests change them to hold it to that. Call
 * before readers are opened, not while threads read.
 */
void audit_reader_buffer_sizes(size_t chunk, size_t zchunk);

/*
 * Opens path ("-": stdin). On failure returns STATUS_IO (or NOMEM) with
 * si naming the file and the reason. Free with audit_reader_free().
 */
enum status audit_reader_open(struct audit_reader **out, const char *path,
			      const struct audit_reader_opts *opts, struct status_info *si);
/*
 * Closes the file r reads and opens path in its place, keeping r's buffers
 * (for many files in a row). Stats start again from zero. On failure r holds
 * no file (audit_reader_next returns STATUS_EOF) and may be reopened or freed.
 */
enum status audit_reader_reopen(struct audit_reader *r, const char *path, struct status_info *si);

/*
 * Next item. STATUS_OK: *item filled. STATUS_EOF: done. STATUS_PARSE or
 * STATUS_LIMIT: a malformed line, already counted in stats.malformed, si has
 * file, line and reason; the caller may go on. STATUS_IO, STATUS_NOMEM: stop;
 * a gzip stream that ends early or is corrupt is STATUS_IO with
 * stats.truncated set and "truncated gzip after N lines" in si: every
 * complete line zlib decoded before it failed is returned first (for a bad
 * check value, every line of that member), the bytes after the last complete
 * line are not, so N is the file's, not the buffer's.
 */
enum status audit_reader_next(struct audit_reader *r, struct audit_item *item,
			      struct status_info *si);

/*
 * A reader its caller feeds line by line (watch: the caller follows the
 * file): `name` names the source in messages. audit_reader_line decodes one
 * complete line (without its newline; copied, so any buffer) exactly as
 * audit_reader_next would: STATUS_OK with *item filled, STATUS_EOF when the
 * line yields no item (blank, `other`, an ignored object), STATUS_PARSE or
 * STATUS_LIMIT for a malformed line (counted; si says why), STATUS_NOMEM.
 */
enum status audit_reader_open_lines(struct audit_reader **out, const char *name,
				    const struct audit_reader_opts *opts, struct status_info *si);
enum status audit_reader_line(struct audit_reader *r, const char *line, size_t n,
			      struct audit_item *item, struct status_info *si);

/*
 * When the input held no audit event that could be read: 1, with what it
 * looked like and what to do in buf (only malformed lines, an empty file, a
 * vLLM log without audit lines, a capture without audit records, ...). 0 when
 * it held one.
 */
int audit_reader_describe(const struct audit_reader_stats *s, char *buf, size_t n);

const struct audit_reader_stats *audit_reader_stats(const struct audit_reader *r);
/* The device and inode of the open file (fstat), for spotting the same file twice. */
void audit_reader_identity(const struct audit_reader *r, dev_t *dev, ino_t *ino);
/*
 * A 64-bit hash of every byte read so far (after decompression); at the end
 * of the input, the hash of the content, for spotting the same content twice.
 * Meaningless with opts.no_hash.
 */
uint64_t audit_reader_content_hash(const struct audit_reader *r);
void audit_reader_free(struct audit_reader *r);

/*
 * A plain file of some size is read in place (mapped); if it shrinks while
 * it is read (logrotate's copytruncate), touching the bytes that went away
 * raises SIGBUS. For a SIGBUS handler (async-signal-safe: no lock, no
 * allocation): the name of the file whose window holds addr (the signal's
 * si_addr), or NULL when no reader maps it. The library installs no
 * handler; the program decides (the ttaudit executable names the file and
 * exits 2).
 */
const char *audit_reader_fault(const void *addr);

#endif
