/*
 * tailfile.h - one input followed as `tail -F` follows a name, for `ttaudit
 * follow` and `ttaudit watch`: a path (read from its end when it exists at
 * the start, unless from_start; a file that appears later, or replaces it
 * on rotation, is read from its start; a truncated file again from 0; a
 * name moved away and not yet replaced is read on, since its writer may
 * still append), or "-" (standard input, to its end). Complete lines go to
 * a callback.
 *
 * It never blocks: a caller that waits (follow) sleeps between polls; one
 * that follows many inputs (watch) polls them all in one loop.
 */
#ifndef TTAUDIT_TAILFILE_H
#define TTAUDIT_TAILFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Longest line kept whole; a longer one is reported as overlong and skipped. */
#define TAILFILE_LINE_MAX (1024 * 1024)

/* One complete line (without its newline), valid during the call only. */
typedef void (*tailfile_line_fn)(void *ctx, const char *line, size_t n, bool overlong);

struct tailfile_stats {
	uint64_t bytes, lines, overlong;
	uint64_t rotations, truncations;
	uint64_t opens;
};

struct tailfile;

/* NULL on allocation failure. `name` is copied. */
struct tailfile *tailfile_new(const char *name, bool from_start);
/*
 * What happened to the name, for a user following it (a phrase: "file
 * replaced, following the new file"); each is said once when it happens,
 * waiting and moving once until the state changes. NULL: none (default).
 */
typedef void (*tailfile_note_fn)(void *ctx, const char *what);
void tailfile_set_notes(struct tailfile *t, tailfile_note_fn fn, void *ctx);
void tailfile_free(struct tailfile *s);

/*
 * Reads what is there now, at most `budget` bytes, handing each line to fn.
 * Returns the bytes read (0: nothing new), or -1 with si set when the input
 * cannot be read (the input is down; a later poll tries again, except for
 * stdin). At the end of stdin, or with `final` (the last poll: --once, or
 * stopping), a partial last line is handed over as a line.
 */
long tailfile_poll(struct tailfile *s, size_t budget, bool final, tailfile_line_fn fn, void *ctx,
		 struct status_info *si);

/* 1 while the input is open (a file that exists, stdin before its end). */
bool tailfile_up(const struct tailfile *s);
/* 1 when the input can give nothing more (stdin at its end). */
bool tailfile_done(const struct tailfile *s);
const char *tailfile_name(const struct tailfile *s);
const struct tailfile_stats *tailfile_stats(const struct tailfile *s);

#endif
