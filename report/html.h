/*
 * html.h - one page a person can read: `ttaudit report html`.
 *
 * A single self-contained HTML document (inline CSS and SVG, no script, no
 * external asset) of either
 *   an A/B run directory (`ttaudit ab -o DIR`: its ab-report.json, the
 *     boots' captures and records), or
 *   an audit (plain JSONL or capture, gzip read as is), or
 *   a bench record file (`ttaudit bench -o RUN.jsonl`: a first record of
 *     kind "run"): the accuracy curve per server against concurrency with
 *     its intervals, the canary's donor -> victim matrix, and every churn
 *     run's requests on a timeline with the transitions each caused.
 * In order:
 *   the verdict strip   one box per verdict and figure: the guard effect,
 *                       the cost, substitutions by evidence, prevented,
 *                       forgone and fired with their intervals, the corpus,
 *                       INCONCLUSIVE and WITHHELD where they are;
 *   the counterfactual  the candidate guard's decisions replayed on the
 *     timeline          control's own audit (every control boot of an A/B,
 *                       its boots and runs marked; an audit with --rule),
 *                       prevented and forgone apart, residual substitutions
 *                       marked, listed with step, slot, request ids and
 *                       evidence, a density strip of every merge;
 *   the cost            (A/B) per figure the paired difference of every
 *                       round, the negative control's, the noise band and
 *                       the median with its interval (when published);
 *   correctness         (A/B) failing requests per role with intervals.
 * Every mark has a class (the timeline's, "cost-point", "noise-point",
 * "noise-band", "cost-interval", "verdict pass|fail|open|plain") and a
 * <title> tooltip.
 */
#ifndef TTAUDIT_HTML_H
#define TTAUDIT_HTML_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"
#include "report/svg.h"

struct html_opts {
	const char *input;          /* an A/B directory or an audit file */
	const char *rule;           /* the guard replayed; NULL: an A/B's treatment arm, an audit's records */
	int64_t from_step, to_step; /* to_step < 0: to the end */
	double confidence;          /* of an audit's intervals; <= 0: 0.95 (an A/B has its own) */
	struct progress *progress;  /* audit bytes and merges read, drawn while reading; NULL: none */
};

struct html_stats {
	const char *mode;                     /* "ab", "audit" or "bench" */
	char headline[32];                    /* the first verdict of the strip */
	size_t verdicts;                      /* boxes in the strip */
	size_t cost_points, cost_intervals;   /* marks of the cost plots */
	size_t files;                         /* audit files in the timeline */
	size_t curve_points, leaks, timeline_requests;   /* bench: marks drawn */
	struct svg_timeline_stats timeline;
};

/*
 * Writes the page to f. STATUS_IO / STATUS_PARSE naming the file when the
 * input or a file of the A/B cannot be read; STATUS_USAGE for an unknown
 * rule.
 */
enum status html_report(FILE *f, const struct html_opts *o, struct html_stats *st, struct status_info *si);

#endif
