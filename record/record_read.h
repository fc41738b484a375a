/*
 * record_read.h - the one reader of benchmark run records (RUN.jsonl, one
 * JSON object per line), as bench/record.h's writer makes them.
 *
 * Its own part, below bench/, pair/, report/ and ab/: the parts that read a
 * run record depend on the format, not on the load client that writes it.
 */
#ifndef TTAUDIT_RECORD_READ_H
#define TTAUDIT_RECORD_READ_H

#include <stdbool.h>
#include <stdio.h>

#include "base/status.h"

/*
 * The records of a file as bench/record.c writes them, one at a time, for
 * every part that reads them (pair, the figures, the A/B). Strings point into
 * the reader and live until the next record_read_next() or record_read_close();
 * NULL when the record has no such string. Numbers are NAN when absent or
 * not numbers: the caller picks its default.
 */
#define RECORD_MAX_LINE (16u << 20)   /* a record line (token times make them long) */

enum record_kind { RECORD_KIND_RUN, RECORD_KIND_REQUEST, RECORD_KIND_OTHER };

struct record_in {
	enum record_kind kind;
	const char *kind_name;
	const char *run_id, *phase;
	const char *arm;             /* run: identity.arm; request: its own "arm" */
	const char *arm_state;       /* run: identity.arm_state */
	double arm_index, repeat;
	/* run */
	double wall_start, wall_end, mono_start, mono_end;
	bool has_figures;            /* "figures" present (of whatever type) */
	double makespan_s, output_tok_s, ttft_p50, itl_p50;
	bool has_correctness;        /* "correctness" (or "canary") present */
	/* request */
	const char *id, *request_id, *verdict;
	/* canary: the first leak's donor request id and output position */
	const char *leak_donor_id;
	double leak_at, leak_at_span;
	double index, prompt_index, prompt_tokens, diverged_at, diverged_tokens, ttft_s;
	bool ok;
};

struct record_reader;

/* Opens path; STATUS_IO naming it when it cannot. Free with record_read_close(). */
enum status record_read_open(struct record_reader **out, const char *path, struct status_info *si);
/*
 * The next record into *rec. The one malformed-line policy of the format:
 * a line that is too long (RECORD_MAX_LINE), not a JSON object, or a record
 * without "kind" returns STATUS_PARSE with si naming file, line and what is
 * wrong, and the next call reads on after it; the caller counts or stops,
 * never drops it unsaid. Blank lines are skipped. STATUS_EOF at the end,
 * STATUS_IO when a read fails, STATUS_NOMEM.
 */
enum status record_read_next(struct record_reader *r, struct record_in *rec, struct status_info *si);
/* The record last read as a tree (cJSON), for readers of fields the record_in
 * above does not carry; the reader's, valid until the next read. */
const struct cJSON *record_read_object(const struct record_reader *r);
/* The 1-based number of the line last read. */
long record_read_line(const struct record_reader *r);
void record_read_close(struct record_reader *r);

#endif
