/*
 * validate.h - the pre-deployment gate: does a guard rule let any
 * substitution through on an incident corpus, and is it evaluable on every
 * file of it?
 */
#ifndef TTAUDIT_VALIDATE_H
#define TTAUDIT_VALIDATE_H

#include <stdbool.h>
#include <stdio.h>

#include "replay/replay.h"

struct validate_opts {
	double max_forgone_pct;   /* < 0: no limit; else forgone / bare takes, in percent */
};

enum validate_file_verdict {
	VALIDATE_PASS,
	VALIDATE_SUBSTITUTION,    /* the rule let a stale token through */
	VALIDATE_NOT_EVALUABLE,   /* skipped on every merge, or no merge events at all */
	VALIDATE_UNREADABLE,      /* the file could not be read */
	VALIDATE_MALFORMED,       /* only when every line was malformed: nothing to judge */
	VALIDATE_TOO_COSTLY,      /* forgone share above --max-forgone-pct */
	VALIDATE_TRUNCATED,       /* a gzip stream cut short: the corpus was not all read */
	VALIDATE_DUPLICATE,       /* the same file or content as an earlier one: judged there */
};

const char *validate_verdict_name(enum validate_file_verdict v);

/* The verdict on file f for rule index `rule` of the replay (opened with keep_sites). */
enum validate_file_verdict validate_file(const struct replay_file *f, size_t rule,
					 const struct validate_opts *o);

/*
 * Prints the gate's report for rule index `rule` over every file of r, text
 * or JSON. Returns 1 when every file passes, 0 otherwise. A duplicate file
 * neither passes nor fails (its first copy is judged).
 */
int validate_report(const struct replay *r, size_t rule, const struct validate_opts *o,
		    bool json, FILE *f);

#endif
