/*
 * reader.h - streaming reader for merge audits and capture files.
 *
 * Reads plain audit JSONL, capture JSONL (records with "src"), or a mix,
 * deciding line by line; "-" is stdin; gzip input is read transparently.
 * Memory is bounded by the longest accepted line, whatever the file size.
 *
 *	struct audit_reader *r;
 *	struct audit_item it;
 *	if (audit_reader_open(&r, path, NULL, &si)) ...
 *	while ((st = audit_reader_next(r, &it, &si)) != STATUS_EOF) {
 *		if (st == STATUS_PARSE || st == STATUS_LIMIT) { report si; continue; }
 *		if (st) break;            (an I/O error: stop)
 *		...use it...
 *	}
 *	audit_reader_free(r);
 */
#ifndef TTAUDIT_READER_H
#define TTAUDIT_READER_H

#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "jdoc.h"
#include "status.h"

/* Default cap on one line; a longer line is malformed, never truncated. */
#define AUDIT_READER_MAX_LINE (1u << 20)

struct audit_reader_opts {
	size_t max_line;     /* 0: AUDIT_READER_MAX_LINE */
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
};

/* One line. Pointers are valid until the next audit_reader_next() call. */
struct audit_item {
	const char *file;          /* as given to audit_reader_open ("-" for stdin) */
	long line;                 /* 1-based */
	const struct jdoc *doc;    /* the parsed line */
	const struct jval *record; /* its root object */
	const char *src;           /* capture record kind, NULL for a plain event line */
	bool has_event;            /* a plain event, or a capture "audit" record's event */
	struct event event;
	/* capture metadata (audit/banner/line records), when present */
	bool has_pid;
	int64_t pid, tid;
	bool has_time;
	double t, mono;
};

struct audit_reader;

/*
 * Opens path ("-": stdin). On failure returns STATUS_IO (or NOMEM) with
 * si naming the file and the reason. Free with audit_reader_free().
 */
enum status audit_reader_open(struct audit_reader **out, const char *path,
			      const struct audit_reader_opts *opts, struct status_info *si);

/*
 * Next item. STATUS_OK: *item filled. STATUS_EOF: done. STATUS_PARSE or
 * STATUS_LIMIT: a malformed line, already counted in stats.malformed, si has
 * file, line and reason; the caller may go on. STATUS_IO, STATUS_NOMEM: stop.
 */
enum status audit_reader_next(struct audit_reader *r, struct audit_item *item,
			      struct status_info *si);

const struct audit_reader_stats *audit_reader_stats(const struct audit_reader *r);
void audit_reader_free(struct audit_reader *r);

#endif
