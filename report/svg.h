/*
 * svg.h - figures as standalone SVG, no plotting dependency.
 *
 *   timeline   slots x steps of a merge audit: every merge event is a column,
 *              each active slot a cell; marked are the slots taken from the
 *              device buffer, guard rejects (the bare match a guard refused)
 *              and substitutions (taken and stale), the incident at a glance.
 *              Every mark is a <rect> with class "taken", "reject" or
 *              "subst" and data-step / data-slot attributes, so a test or a
 *              script can find it.
 *   cdf        empirical CDFs of one figure (TTFT ...), one line per series.
 *   repeats    one value per repeat per series (makespan per repeat).
 */
#ifndef TTAUDIT_SVG_H
#define TTAUDIT_SVG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"

#define SVG_MAX_SERIES 8
#define SVG_MAX_COLUMNS 4000   /* merge events drawn; later ones are counted, not drawn */

struct svg_series {
	const char *name;
	const double *v;
	size_t n;
};

struct svg_timeline_opts {
	const char *rule;       /* decisions by this rule when an event lacks `taken`; NULL: bare */
	int64_t from_step, to_step;   /* inclusive; to_step < 0: to the end */
	const char *title;      /* NULL: the file name */
};

/* Counts of what a timeline drew. */
struct svg_timeline_stats {
	uint64_t merges, drawn, taken, rejects, substs, malformed;
	uint32_t slots;
};

/*
 * Reads the audit (plain JSONL or capture) at path and writes the timeline
 * to f. STATUS_IO when it cannot be read; malformed lines are counted.
 */
enum status svg_timeline(FILE *f, const char *path, const struct svg_timeline_opts *o,
			 struct svg_timeline_stats *st, struct status_info *si);

/* Empirical CDFs of s[0..n) (values copied and sorted). */
void svg_cdf(FILE *f, const char *title, const char *xlabel, const struct svg_series *s, size_t n);

/* One point per repeat for each series, with the axis from 0. */
void svg_repeats(FILE *f, const char *title, const char *ylabel, const struct svg_series *s, size_t n);

/* Writes s as XML character data (escapes &, <, >, ", '). */
void svg_escape(FILE *f, const char *s);

#endif
