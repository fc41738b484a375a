/*
 * progress.h - a progress line on stderr for long work (replay of a
 * gigabyte audit, validate, pair, report): bytes done, items done, rate and
 * time left, redrawn at most ten times a second, and only when stderr is a
 * terminal, so that logs and pipes never see it. Nothing is drawn in the
 * first second: short work shows nothing at all.
 *
 * TTAUDIT_PROGRESS=0 turns it off on a terminal too; TTAUDIT_PROGRESS=1
 * turns it on whatever stderr is (for tests).
 */
#ifndef TTAUDIT_PROGRESS_H
#define TTAUDIT_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct progress {
	bool on;
	bool drawn;               /* a line is on the screen, to be cleared */
	FILE *f;
	const char *what;         /* "replay" */
	const char *items;        /* "merges" */
	uint64_t total;           /* bytes expected, 0 when unknown (stdin, gzip) */
	double t0, last;          /* monotonic seconds: start, last drawing */
};

/* what and items must outlive p. total 0: no percentage and no ETA. */
void progress_init(struct progress *p, const char *what, const char *items, uint64_t total);
/* Cheap to call often (one clock read); draws when due. */
void progress_update(struct progress *p, uint64_t bytes, uint64_t items);
/*
 * The bytes a reader will count for these inputs (reader stats' bytes, read
 * after decompression): the sum of their sizes when every one is a plain
 * regular file, else 0 (stdin, a pipe, a gzip file: no percentage, no ETA).
 */
uint64_t progress_input_size(const char *const *paths, size_t n);
/* Clears the line, if one was drawn. */
void progress_release(struct progress *p);

/* The line progress_update draws, into buf (for tests). */
const char *progress_format(const struct progress *p, uint64_t bytes, uint64_t items, double now,
			    char *buf, size_t n);

#endif
