/*
 * source.h - one input of `ttaudit watch`, followed as `tail -F` follows a
 * name: a path (read from its end when it exists at the start, unless
 * from_start; a file that appears later, or replaces it on rotation, is read
 * from its start; a truncated file again from 0; a name moved away and not
 * yet replaced is read on, since its writer may still append), or "-"
 * (standard input, to its end). Complete lines go to a callback.
 *
 * Unlike capture/follow.c (which turns one input into capture records and
 * waits in its own loop), a source never blocks: the caller polls many of
 * them in one loop.
 */
#ifndef TTAUDIT_SOURCE_H
#define TTAUDIT_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Longest line kept whole; a longer one is reported as overlong and skipped. */
#define SOURCE_LINE_MAX (1024 * 1024)

/* One complete line (without its newline), valid during the call only. */
typedef void (*source_line_fn)(void *ctx, const char *line, size_t n, bool overlong);

struct source_stats {
	uint64_t bytes, lines, overlong;
	uint64_t rotations, truncations;
	uint64_t opens;
};

struct source;

/* NULL on allocation failure. `name` is copied. */
struct source *source_new(const char *name, bool from_start);
void source_free(struct source *s);

/*
 * Reads what is there now, at most `budget` bytes, handing each line to fn.
 * Returns the bytes read (0: nothing new), or -1 with si set when the input
 * cannot be read (the source is down; a later poll tries again, except for
 * stdin). At the end of stdin, or with `final` (the last poll: --once, or
 * stopping), a partial last line is handed over as a line.
 */
long source_poll(struct source *s, size_t budget, bool final, source_line_fn fn, void *ctx,
		 struct status_info *si);

/* 1 while the input is open (a file that exists, stdin before its end). */
bool source_up(const struct source *s);
/* 1 when the source can give nothing more (stdin at its end). */
bool source_done(const struct source *s);
const char *source_name(const struct source *s);
const struct source_stats *source_stats(const struct source *s);

#endif
