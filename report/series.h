/*
 * series.h - the figures' values read from bench record files: latency and
 * makespan of the measured runs (every phase but "reference"), one series
 * per arm name ("server N" by its place on the bench command line when the
 * servers were benched without names, "none" for records from before
 * arm_index), for `report latency|makespan` and the A/B's figures.
 *
 * The records are read through bench/record.h's reader: a malformed line
 * stops the read with STATUS_PARSE naming file and line, since a figure of
 * part of the records would not say it is one.
 */
#ifndef TTAUDIT_SERIES_H
#define TTAUDIT_SERIES_H

#include <stddef.h>

#include "base/status.h"

/* Values kept per series; more are left out of the figure. */
#define REPORT_SERIES_MAX 100000u

struct report_series {
	char name[128];
	double *ttft;          /* successful requests' TTFT, seconds */
	size_t n_ttft;
	double *makespan;      /* one per measured run, in file order */
	size_t n_makespan;
};

/*
 * Fills out[0 .. *n) from the files, at most max series (STATUS_LIMIT past
 * it). A file that cannot be read, a malformed line, or a file without a
 * measured run record is an error naming the file; out holds nothing then.
 * Free the arrays with report_series_release().
 */
enum status report_series_read(const char *const *paths, size_t n_paths, struct report_series *out,
			       size_t max, size_t *n, struct status_info *si);
void report_series_release(struct report_series *s, size_t n);

#endif
