/*
 * svg.h - figures as standalone SVG, no plotting dependency.
 *
 *   timeline   slots x merges of an audit: every merge event is a column,
 *              each active slot a cell, coloured by what the decisions did:
 *              taken (fresh), taken with a staleness nothing can judge
 *              ("unverified"), substitution (taken and stale), and the bare
 *              matches the decisions refused: prevented (stale), forgone
 *              (fresh), refused with staleness unknown. The decisions are
 *              the recorded `taken`, or, with a rule, that rule's on every
 *              merge: the counterfactual of a candidate guard. A density
 *              strip bins every merge (substitutions, prevented, forgone),
 *              step ticks and the boundaries of files, runs and processes
 *              run along it. Every mark is an element with a class and
 *              data-step / data-slot attributes and a <title> with the
 *              request ids, so a test, a script or a reader can find it.
 *   cdf        empirical CDFs of one figure (TTFT ...), one line per series.
 *   repeats    one value per repeat per series (makespan per repeat).
 */
#ifndef TTAUDIT_SVG_H
#define TTAUDIT_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/progress.h"
#include "base/status.h"

#define SVG_MAX_SERIES 8
#define SVG_MAX_COLUMNS 4000   /* merge events drawn; later ones are counted, not drawn */

struct svg_series {
	const char *name;
	const double *v;
	size_t n;
};

struct svg_timeline_opts {
	/* The counterfactual: the decisions of this rule on every merge, the
	 * recorded `taken` notwithstanding (a candidate guard replayed on a
	 * control's own audit). NULL: the decisions the audit records. */
	const char *rule;
	/* Decisions where a merge records no `taken` and rule is NULL; NULL: bare. */
	const char *fallback;
	int64_t from_step, to_step;   /* inclusive; to_step < 0: to the end */
	const char *title;      /* NULL: the file name */
	struct progress *progress;   /* audit bytes and merges read, drawn while reading; NULL: none */
};

/* Counts of what a timeline drew (every merge in the step window; cells of drawn ones). */
struct svg_timeline_stats {
	uint64_t merges, drawn, malformed;
	uint64_t taken;         /* taken, fresh */
	uint64_t unverified;    /* taken, staleness no evidence can judge */
	uint64_t substs;        /* taken and stale: substitutions (residual ones under a rule) */
	uint64_t prevented;     /* a bare match the decisions refused, stale */
	uint64_t forgone;       /* a bare match refused, fresh */
	uint64_t refused;       /* a bare match refused, staleness unknown */
	uint64_t rejects;       /* prevented + forgone + refused */
	uint64_t skipped;       /* merges the rule could not evaluate (a field it needs missing) */
	uint64_t merges_subst;  /* merges with at least one substitution (the trials of a rate) */
	uint64_t bare_merges_subst;   /* the same had bare taken every match */
	uint32_t slots;
	size_t boundaries;
};

/* A run inside an audit file, by its first CLOCK_MONOTONIC time (capture records). */
struct svg_phase {
	double mono_start;
	const char *label;      /* "reference r1" ... */
};

/* One substitution the timeline marks, for the list beside it. */
struct svg_subst {
	int64_t step;
	uint32_t slot;
	char req[64], buf_req[64];   /* "" when the audit has no ids */
	const char *evidence;        /* static */
	const char *file;            /* the path given to svg_tl_add */
	long line;
};

/*
 * A timeline built from one or more audit files, then drawn: the model
 * behind svg_timeline and `report html`. Every merge in the window is
 * counted and falls into the density strip (bins of merges, so thousands
 * of them stay readable); the first SVG_MAX_COLUMNS are drawn cell by cell.
 * A tally over the same merges holds the rules bare and, with a rule, that
 * rule (tally.h), for a verdict beside the figure.
 */
struct svg_tl;
struct tally;

/* STATUS_USAGE for an unknown rule. Free with svg_tl_free(). */
enum status svg_tl_new(struct svg_tl **out, const struct svg_timeline_opts *o, struct status_info *si);
void svg_tl_free(struct svg_tl *t);
/*
 * Adds an audit file (plain JSONL or capture). label, when given, marks
 * where it starts ("control r2"); phases[0..n) mark the runs inside it by
 * monotonic time. A change of process (pid) or a step going back is marked
 * too. STATUS_IO when it cannot be read; malformed lines are counted.
 */
enum status svg_tl_add(struct svg_tl *t, const char *path, const char *label,
		       const struct svg_phase *phases, size_t n_phases, struct status_info *si);
const struct svg_timeline_stats *svg_tl_stats(const struct svg_tl *t);
/* bare at index 0, the rule (when one is given and is not bare) at 1. */
const struct tally *svg_tl_tally(const struct svg_tl *t);
size_t svg_tl_tally_rule(const struct svg_tl *t);   /* the index of the rule shown in the tally */
size_t svg_tl_n_substs(const struct svg_tl *t);     /* kept (at most SVG_MAX_SUBSTS) */
const struct svg_subst *svg_tl_subst(const struct svg_tl *t, size_t i);
/*
 * Draws it. standalone: a whole SVG document; else an <svg> element to put
 * inside an HTML page.
 */
void svg_tl_draw(const struct svg_tl *t, FILE *f, bool standalone);

#define SVG_MAX_SUBSTS 10000

/*
 * Reads the audit (plain JSONL or capture) at path and writes the timeline
 * to f. STATUS_IO when it cannot be read; malformed lines are counted.
 */
enum status svg_timeline(FILE *f, const char *path, const struct svg_timeline_opts *o,
			 struct svg_timeline_stats *st, struct status_info *si);

/* Colours of the timeline's marks, by class ("taken", "subst", ...), for the page's legend. */
const char *svg_mark_color(const char *cls);

/* Empirical CDFs of s[0..n) (values copied and sorted). */
void svg_cdf(FILE *f, const char *title, const char *xlabel, const struct svg_series *s, size_t n);

/* One point per repeat for each series, with the axis from 0. */
void svg_repeats(FILE *f, const char *title, const char *ylabel, const struct svg_series *s, size_t n);

/* Writes s as XML character data (escapes &, <, >, ", '). */
void svg_escape(FILE *f, const char *s);

#endif
