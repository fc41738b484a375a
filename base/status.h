/*
 * status.h - the one status enum of ttaudit, and error detail.
 *
 * Every library function that can fail returns enum status. Values are
 * append-only: never renumber, never remove, add new ones last (just before
 * STATUS__COUNT), because tools and scripts may have recorded the numbers.
 *
 * Detail travels through an optional `struct status_info *` out-parameter
 * (NULL when the caller does not care). A callee fills it only on failure;
 * status_info_clear() resets it.
 */
#ifndef TTAUDIT_STATUS_H
#define TTAUDIT_STATUS_H

#include <stddef.h>

enum status {
	STATUS_OK = 0,
	STATUS_NOMEM,      /* an allocation failed */
	STATUS_IO,         /* a read or write failed; errno-based message in detail */
	STATUS_PARSE,      /* input is not what the format says (malformed line) */
	STATUS_LIMIT,      /* a hard cap was reached (line length, nesting, count) */
	STATUS_USAGE,      /* the caller passed arguments that make no sense */
	STATUS_NOTFOUND,   /* a named thing (file, rule, step, arm) does not exist */
	STATUS_EOF,        /* no more input; not an error for iterators */
	STATUS_UNSUPPORTED,/* valid input asking for something not implemented */
	STATUS_HTTP,       /* an HTTP exchange failed or answered an error status */
	STATUS_TIMEOUT,    /* a deadline passed */
	STATUS_BUSY,       /* a resource is held by someone else (host lock) */
	STATUS_CHILD,      /* a child process failed to start or ended badly */
	STATUS__COUNT
};

/* Where and why. All fields optional; `line`/`byte` are 0 when unknown. */
struct status_info {
	char file[256];   /* input file name, "-" for stdin, "" when not a file */
	long line;        /* 1-based line number */
	long byte;        /* 1-based byte offset within the line (or file) */
	char msg[512];    /* lower case, no final full stop, failing thing first */
};

/* Static string, never NULL, also for out-of-range values. */
const char *status_strerror(enum status st);

void status_info_clear(struct status_info *si);

/*
 * Fill `si` (if not NULL) and return `st`, so a callee can write
 * `return status_set(si, STATUS_PARSE, "dev_pos is not an array");`.
 * `file` may be NULL (left unchanged).
 */
enum status status_set(struct status_info *si, enum status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
enum status status_set_at(struct status_info *si, enum status st, const char *file,
			  long line, long byte, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* "file:line: msg" (or as much of it as is known) into buf; returns buf. */
const char *status_info_format(const struct status_info *si, char *buf, size_t n);

#endif
