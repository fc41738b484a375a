/*
 * lineread.h - lines of a FILE, each capped: the one reader of line-based
 * files (run records, prompt suites, preflight's record) whose lines are
 * read whole or not at all.
 *
 *   struct lineread lr;
 *   lineread_init(&lr, f, max);
 *   while ((n = lineread_next(&lr)) != LINEREAD_EOF) { ... lr.buf ... }
 *   if (ferror(f)) ...         -- LINEREAD_EOF is also a read error
 *   lineread_release(&lr);
 *
 * A line of more than max bytes (its '\n' not counted) is read to its end
 * and given as LINEREAD_LONG, so the buffer never holds more than max + 2
 * bytes and the next line is read whole. The FILE stays the caller's.
 */
#ifndef TTAUDIT_LINEREAD_H
#define TTAUDIT_LINEREAD_H

#include <stdio.h>
#include <sys/types.h>

enum {
	LINEREAD_EOF = -1,      /* no more lines: the end, or a read error (ferror) */
	LINEREAD_LONG = -2,     /* a line over the cap, skipped to its end */
	LINEREAD_NOMEM = -3,    /* no memory for the line */
};

struct lineread {
	FILE *f;
	size_t max;     /* the longest line given, '\n' not counted */
	char *buf;      /* the line last given, NUL-terminated, its '\n' kept (owned) */
	size_t cap;
	long line;      /* lines read so far, long ones included */
};

void lineread_init(struct lineread *lr, FILE *f, size_t max);
void lineread_release(struct lineread *lr);
/* The next line's length (>= 1: its '\n' kept; the last line may lack one)
 * with the line in lr->buf, or a LINEREAD_* value. */
ssize_t lineread_next(struct lineread *lr);

#endif
