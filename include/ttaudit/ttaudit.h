/*
 * ttaudit/ttaudit.h - the public interface of libttaudit, the analysis
 * library of ttaudit: replay merge audits of the async-ahead token keep
 * (plain audit JSONL, capture files, server logs; gzip read as is) against
 * the guard rules and read the counts `ttaudit replay` prints.
 *
 * Build with `pkg-config --cflags --libs ttaudit` (add --static: the library
 * is an archive and needs zlib and libm). Every symbol is prefixed ttaudit_;
 * the library's internal headers are not installed and may change.
 *
 *	struct ttaudit_options o = { .rules = "bare,batch,batch+lifetime" };
 *	struct ttaudit_replay *r;
 *	char err[512];
 *	if (ttaudit_replay_new(&o, &r, err, sizeof(err))) ... err says why
 *	if (ttaudit_replay_file(r, "run.cap.jsonl", err, sizeof(err))) ...
 *	for (i = 0; i < ttaudit_replay_n_rules(r); i++) {
 *		struct ttaudit_counts c;
 *		ttaudit_replay_counts(r, i, &c);
 *		printf("%s %llu\n", ttaudit_replay_rule(r, i), c.substitutions);
 *	}
 *	ttaudit_replay_free(r);
 *
 * Functions that can fail return 0 or a status (ttaudit_strerror names it)
 * and, when err is not NULL, write "file:line: what is wrong" into err.
 */
#ifndef TTAUDIT_TTAUDIT_H
#define TTAUDIT_TTAUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The status values; they are those of ttaudit's status enum and never change. */
enum {
	TTAUDIT_OK = 0,
	TTAUDIT_NOMEM = 1,
	TTAUDIT_IO = 2,
	TTAUDIT_PARSE = 3,
	TTAUDIT_LIMIT = 4,
	TTAUDIT_USAGE = 5,
	TTAUDIT_NOTFOUND = 6,
};

struct ttaudit_options {
	const char *rules;     /* comma-separated rules, "a+b" combines; NULL: all six */
	int64_t max_pos;       /* positions >= max_pos are garbage; 0: config.max_model_len */
	int strict;            /* stop at the first malformed line */
	size_t max_line;       /* longest line accepted; 0: the default (1 MiB) */
	FILE *diag;            /* malformed-line messages; NULL: stderr */
};

/* What a rule did over the merges replayed (docs/audit-format.md). */
struct ttaudit_counts {
	uint64_t merges, taken, substitutions, unverified, prevented, forgone;
	uint64_t fired, skipped, shape_fallback;
	int evaluable;         /* 0: every merge lacked a field the rule needs */
};

struct ttaudit_replay;

const char *ttaudit_version(void);
const char *ttaudit_strerror(int status);

/* *out is the caller's: ttaudit_replay_free. */
int ttaudit_replay_new(const struct ttaudit_options *o, struct ttaudit_replay **out, char *err,
		       size_t n_err);
void ttaudit_replay_free(struct ttaudit_replay *r);
/* Replays one file ("-": stdin). The same input given twice is counted once. */
int ttaudit_replay_file(struct ttaudit_replay *r, const char *path, char *err, size_t n_err);

size_t ttaudit_replay_n_rules(const struct ttaudit_replay *r);
/* The rule's name ("batch+lifetime"), valid as long as r; NULL out of range. */
const char *ttaudit_replay_rule(const struct ttaudit_replay *r, size_t i);
/* TTAUDIT_NOTFOUND out of range. */
int ttaudit_replay_counts(const struct ttaudit_replay *r, size_t i, struct ttaudit_counts *out);
/* Malformed lines seen so far. */
uint64_t ttaudit_replay_malformed(const struct ttaudit_replay *r);
/* The whole report, as `ttaudit replay` prints it (text, or JSON when json). */
void ttaudit_replay_write(const struct ttaudit_replay *r, FILE *f, int json);

#ifdef __cplusplus
}
#endif

#endif
