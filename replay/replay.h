/*
 * replay.h - replays merge audits through the analyzer: reads every file,
 * counts per rule, keeps per-file results for the deployment gate, explains
 * chosen steps, and prints the report (text or JSON).
 */
#ifndef TTAUDIT_REPLAY_H
#define TTAUDIT_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "evidence.h"
#include "reader.h"
#include "rule.h"
#include "status.h"
#include "tally.h"

/* Malformed lines shown one by one before only the total is given. */
#define REPLAY_MALFORMED_SHOWN 10
/* Merge events --explain describes at most (a step may repeat across files). */
#define REPLAY_EXPLAIN_MAX 16

struct replay_opts {
	const struct rule *rules;   /* copied; n_rules in [1, RULE_MAX_LIST] */
	size_t n_rules;
	int64_t max_pos;            /* --max-pos; 0 none */
	bool strict;                /* stop at the first malformed line */
	bool explain;
	int64_t explain_step;
	size_t max_line;            /* 0: AUDIT_READER_MAX_LINE */
	FILE *diag;                 /* malformed-line messages; NULL: stderr */
	bool keep_sites;            /* remember substitution sites per file (validate) */
	size_t max_sites;           /* per file; 0: 1000 */
};

/* A place where a rule let a substitution through. */
struct replay_site {
	long line;
	int64_t step;
	uint32_t slot;
	size_t rule;
	enum evidence evidence;
};

struct replay_file {
	const char *path;
	bool unreadable;            /* could not be opened or read to the end */
	uint64_t malformed;
	struct audit_reader_stats stats;
	struct tally *tally;        /* this file's counts */
	size_t n_sites;
	struct replay_site *sites;
	uint64_t sites_dropped;
};

struct replay;

/* NULL on allocation failure or a bad rule count. Free with replay_free(). */
struct replay *replay_new(const struct replay_opts *opts);
void replay_free(struct replay *r);

/*
 * Replays one file ("-" for stdin). STATUS_IO: it could not be read (reported
 * in si, recorded as unreadable). STATUS_PARSE/LIMIT: only with opts.strict,
 * the first malformed line (si names it). Malformed lines otherwise go to
 * opts.diag (the first REPLAY_MALFORMED_SHOWN) and are counted.
 */
enum status replay_add_file(struct replay *r, const char *path, struct status_info *si);

const struct tally *replay_tally(const struct replay *r);
size_t replay_n_files(const struct replay *r);
const struct replay_file *replay_file_at(const struct replay *r, size_t i);
uint64_t replay_malformed(const struct replay *r);
/* Merge events explained so far (those at opts.explain_step). */
size_t replay_n_explained(const struct replay *r);

/* The report; `what` selects sections. */
void replay_print_text(const struct replay *r, FILE *f);
void replay_print_json(const struct replay *r, FILE *f);
void replay_print_explain_text(const struct replay *r, FILE *f);
/* Writes the "explain" array (key included) into an open JSON object. */
struct jsonw;
void replay_print_explain_json(const struct replay *r, struct jsonw *w);

#endif
