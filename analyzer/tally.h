/*
 * tally.h - counts per rule over a stream of merge events: what each rule
 * takes, substitutes, prevents and forgoes, garbage positions, and the arm
 * fingerprint (which rules the recorded `taken` decisions are consistent with).
 */
#ifndef TTAUDIT_TALLY_H
#define TTAUDIT_TALLY_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/event.h"
#include "analyzer/evidence.h"
#include "analyzer/rule.h"

/* Positions at or above this are garbage when max_pos is unknown (2^24). */
#define TALLY_DEFAULT_GARBAGE_POS (INT64_C(1) << 24)
/* Distinct garbage values remembered for the report; more are counted. */
#define TALLY_GARBAGE_VALUES 64

struct tally_counts {
	uint64_t merges;          /* merge events seen */
	uint64_t taken;           /* slots the rule takes */
	uint64_t substitutions;   /* taken and stale */
	uint64_t merges_subst;    /* events with at least one substitution: the trials of a rate */
	uint64_t unverified;      /* taken, staleness unknown */
	uint64_t prevented;       /* bare takes, this rule does not, stale */
	uint64_t forgone;         /* bare takes, this rule does not, not stale */
	uint64_t rejected_unverified; /* bare takes, this rule does not, staleness unknown */
	uint64_t fired;           /* events where G != A and A is not empty */
	uint64_t skipped;         /* events lacking a field the rule needs */
	uint64_t shape_fallback;  /* events with D < H */
	uint64_t bare_taken;      /* bare takes on the events this rule evaluated */
	uint64_t taken_by[EVIDENCE__COUNT];  /* taken slots, by evidence class */
	uint64_t subst_by[EVIDENCE__COUNT];  /* substitutions, by evidence class */
	/* fingerprint: events carrying `taken` that the rule evaluated, and
	 * how many of those its take set contradicts */
	uint64_t fp_evaluated, fp_mismatch;
	int64_t fp_first_mismatch_step;
	long fp_first_mismatch_line;   /* its line in its file (0: unknown, as in a report read back) */
};

/*
 * Each value in values[] is kept with its whole count (every position of
 * that value the table was told of); the positions of every other value are
 * in values_dropped, so the counts of values[] and values_dropped add up to
 * count.
 */
struct tally_garbage {
	uint64_t count;          /* garbage dev_pos values seen, slot by slot */
	uint64_t float32_like;
	size_t n_values;         /* distinct values kept in values[] */
	uint64_t values_dropped; /* garbage positions of values values[] does not hold */
	struct { int64_t value; uint64_t n; } values[TALLY_GARBAGE_VALUES];
};

enum tally_verdict {
	TALLY_NO_TAKEN,      /* no merge event carries `taken` */
	TALLY_CONSISTENT,    /* one candidate is consistent, every other was evaluated and contradicted */
	TALLY_WITHHELD,      /* several are consistent, or a candidate was never evaluated */
	TALLY_INCONSISTENT,  /* every candidate was evaluated and contradicted */
};

struct tally_fingerprint {
	enum tally_verdict verdict;
	uint64_t events_with_taken;
	size_t n_consistent;
	size_t consistent[RULE_MAX_LIST];   /* rule indexes */
	/* candidates never evaluated on an event with `taken`: not ruled out, not confirmed */
	size_t n_unevaluated;
	size_t unevaluated[RULE_MAX_LIST];
};

/* One substitution: rule `rule` took slot `slot` of `m` and it was stale. */
struct tally_subst {
	size_t rule;
	const struct merge_event *m;
	uint32_t slot;
	enum evidence evidence;
	const char *file;
	long line;
};
typedef void (*tally_subst_fn)(void *ctx, const struct tally_subst *s);

struct tally;

/*
 * rules[0..n) are copied. max_pos_override > 0 is --max-pos, which wins over
 * config.max_model_len. NULL on allocation failure; free with tally_free().
 */
struct tally *tally_new(const struct rule *rules, size_t n, int64_t max_pos_override);
void tally_free(struct tally *t);

/* A new file starts: a config event applies only to events after it in its file. */
void tally_begin_file(struct tally *t);
/*
 * A config event: its max_model_len is the bound from here on (unless
 * --max-pos overrides it). 0 says the length is not known: no bound, whatever
 * an earlier config said. A config without max_model_len (absent or null)
 * says nothing about it: the bound in force stays.
 */
void tally_config(struct tally *t, const struct config_event *c);
void tally_merge(struct tally *t, const struct merge_event *m, const char *file, long line);
/* Called for every substitution of every rule; fn may be NULL. */
void tally_set_observer(struct tally *t, tally_subst_fn fn, void *ctx);

/*
 * Adds src's counts, garbage and fingerprint into dst (same rule list); src
 * counts events that come after all of dst's (a later file), so dst's first
 * contradiction stays the first.
 */
void tally_absorb(struct tally *dst, const struct tally *src);
/* The same from parts kept apart (counts[0..n) per rule; a file's processes, ttaudit combine). */
void tally_absorb_counts(struct tally *dst, const struct tally_counts *counts, size_t n,
			 const struct tally_garbage *g, uint64_t events_with_taken);
/*
 * Adds the counts of one rule, src into dst. tally_add_counts: src counts
 * events after all of dst's (a later file or report), so the first
 * contradiction is dst's when it has one. tally_add_counts_interleaved: both
 * count events of one file (two of its processes), so the first
 * contradiction is the one on the earlier line.
 */
void tally_add_counts(struct tally_counts *dst, const struct tally_counts *src);
void tally_add_counts_interleaved(struct tally_counts *dst, const struct tally_counts *src);
/*
 * Adds garbage src into dst, each value kept with its whole count or not at
 * all: a table that dropped positions (values_dropped > 0) may hold some of
 * any value it does not list, so a value one part lists and an overflowed
 * part does not goes to values_dropped. Values keep their order (dst's, then
 * src's new ones) up to TALLY_GARBAGE_VALUES.
 */
void tally_add_garbage(struct tally_garbage *dst, const struct tally_garbage *src);

size_t tally_n_rules(const struct tally *t);
const struct rule *tally_rule(const struct tally *t, size_t i);
const struct tally_counts *tally_counts(const struct tally *t, size_t i);
const struct tally_garbage *tally_garbage(const struct tally *t);
/* The position bound now in force (0 unknown), as rules see it. */
int64_t tally_max_pos(const struct tally *t);
void tally_fingerprint(const struct tally *t, struct tally_fingerprint *out);
/* The same verdict from counts kept apart (rules[0..n) and how many events carried `taken`). */
void tally_fingerprint_of(const struct tally_counts *counts, size_t n, uint64_t events_with_taken,
			  struct tally_fingerprint *out);
uint64_t tally_events_with_taken(const struct tally *t);
const char *tally_verdict_name(enum tally_verdict v);

/*
 * The merges counts c's rule evaluated itself: neither skipped for it nor a
 * shape fallback. The trials of the rule's rates (substitution_rate,
 * fired_rate): a fallback took nothing under any rule, so it is no trial.
 */
uint64_t tally_n_evaluated(const struct tally_counts *c);
/*
 * 1 when rule i never decided anything itself (tally_n_evaluated is 0):
 * every merge event was skipped for it or was a shape fallback, or there
 * were none.
 */
int tally_not_evaluable(const struct tally *t, size_t i);

/*
 * The float32 reading of a position: 1 when v fits int32 and its bits read
 * as IEEE-754 float32 are finite, with the value in *out.
 */
int tally_float32(int64_t v, double *out);
/* 1 when v is float32-like garbage: a finite float32 reading of magnitude in [1, 2^24]. */
int tally_float32_like(int64_t v);

#endif
