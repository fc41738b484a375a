/*
 * follow.h - the host-side reader: turns a log file or stream into a capture
 * file when the server cannot be preloaded (a container, a systemd unit).
 *
 * A path is followed by name like `tail -F` (base/tailfile.h): read from its start, then
 * waited on; a file that does not exist yet is waited for; when the name is
 * moved away (rotation) the old file is read to its end and the new one from
 * its start; when the file shrinks (truncation) reading restarts at 0. "-"
 * reads standard input until end of file. Each line is classified as the
 * shim does (audit / banner / other) and written as a capture record whose
 * times are read times and that has no pid, tid or fd.
 */
#ifndef TTAUDIT_FOLLOW_H
#define TTAUDIT_FOLLOW_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "capture/banner.h"
#include "base/status.h"

#include "base/tailfile.h"

/* Longest line kept whole (tailfile's); a longer one becomes a lost record. */
#define FOLLOW_LINE_MAX TAILFILE_LINE_MAX

struct follow_opts {
	const char *path;                 /* "-" for standard input */
	FILE *out;                        /* capture records go here, flushed per read */
	const struct banner_set *rules;   /* NULL: no banners */
	int all_lines;                    /* also record other lines ("line") */
	const char *rules_from;           /* the rules file (NULL: built-in), for the start record */
	int once;                         /* stop at end of file instead of waiting */
	int poll_ms;                      /* how often to look at a quiet file */
	volatile sig_atomic_t *stop;      /* set by the caller's signal handler */
	FILE *notes;                      /* rotation/truncation notes, NULL: none */
};

struct follow_stats {
	uint64_t lines, audit, banner, lost;
	uint64_t rotations, truncations;
};

/*
 * Runs until end of input (stdin, or --once), or until *stop is set; then
 * finishes a pending partial line and writes the end record. A start record
 * comes first. STATUS_IO when the output cannot be written or the input
 * cannot be read (si names which).
 */
enum status follow_run(const struct follow_opts *o, struct follow_stats *stats,
		       struct status_info *si);

#endif
