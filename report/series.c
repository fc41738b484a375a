/*
 * series.c - the values of the latency and makespan figures, per arm, from
 * bench record files (series.h). The records come through the run-record
 * format's own reader (bench/record.h); this module only sorts them.
 */
#include "report/series.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/record_read.h"

static struct report_series *report_series_of(struct report_series *out, size_t max, size_t *n,
					      const char *name, struct status_info *si)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp(out[i].name, name))
			return &out[i];
	if (*n >= max) {
		status_set(si, STATUS_LIMIT, "more than %zu arms", max);
		return NULL;
	}
	memset(&out[*n], 0, sizeof(out[*n]));
	snprintf(out[*n].name, sizeof(out[*n].name), "%s", name);
	out[*n].ttft = calloc(REPORT_SERIES_MAX, sizeof(double));
	out[*n].makespan = calloc(REPORT_SERIES_MAX, sizeof(double));
	if (!out[*n].ttft || !out[*n].makespan) {
		free(out[*n].ttft);
		free(out[*n].makespan);
		status_set(si, STATUS_NOMEM, "out of memory");
		return NULL;
	}
	return &out[(*n)++];
}

/* One record into its series. */
static enum status report_series_add(struct report_series *out, size_t max, size_t *n,
				     const struct record_in *rec, long *n_runs, struct status_info *si)
{
	const char *arm = rec->arm;
	struct report_series *s;
	char unnamed[32];

	if (!rec->phase || !strcmp(rec->phase, "reference") || rec->kind == RECORD_KIND_OTHER)
		return STATUS_OK;
	/* servers benched without an arm name are told apart by their place
	 * on the command line */
	if (!arm && isfinite(rec->arm_index) && rec->arm_index >= 0 && rec->arm_index < 1e6) {
		snprintf(unnamed, sizeof(unnamed), "server %d", (int)rec->arm_index);
		arm = unnamed;
	}
	s = report_series_of(out, max, n, arm ? arm : "none", si);
	if (!s)
		return STATUS_LIMIT;
	if (rec->kind == RECORD_KIND_RUN) {
		(*n_runs)++;
		if (rec->has_figures && s->n_makespan < REPORT_SERIES_MAX)
			s->makespan[s->n_makespan++] = rec->makespan_s;
	} else if (rec->ok && s->n_ttft < REPORT_SERIES_MAX && isfinite(rec->ttft_s)) {
		s->ttft[s->n_ttft++] = rec->ttft_s;
	}
	return STATUS_OK;
}

enum status report_series_read(const char *const *paths, size_t n_paths, struct report_series *out,
			       size_t max, size_t *n, struct status_info *si)
{
	enum status st = STATUS_OK;
	size_t k;

	*n = 0;
	for (k = 0; !st && k < n_paths; k++) {
		struct record_reader *rd = NULL;
		struct record_in rec;
		long n_runs = 0;

		st = record_read_open(&rd, paths[k], si);
		if (st)
			break;
		while (!(st = record_read_next(rd, &rec, si)) &&
		       !(st = report_series_add(out, max, n, &rec, &n_runs, si)))
			;
		if (st == STATUS_EOF)
			st = STATUS_OK;
		record_read_close(rd);
		if (!st && !n_runs)
			st = status_set_at(si, STATUS_PARSE, paths[k], 0, 0, "no measured run record in the file");
	}
	if (st) {
		report_series_release(out, *n);
		*n = 0;
	}
	return st;
}

void report_series_release(struct report_series *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(s[i].ttft);
		free(s[i].makespan);
		s[i].ttft = s[i].makespan = NULL;
	}
}
