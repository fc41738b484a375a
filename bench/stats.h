/*
 * stats.h - figures of a load run, and of repeats of it.
 *
 * Percentiles are nearest-rank: every reported percentile is a value that was
 * observed (p99 of ten samples is the largest), never an interpolation.
 *
 * Per run:
 *   makespan     first launch to last completion: the throughput denominator
 *   out_tok_s    output tokens (successful requests) / makespan
 *   prefill      batch arrivals only: prompt tokens / max(TTFT) over the
 *                successful requests, the rate at which the batch's prompts
 *                were all prefilled (a mean TTFT would flatter it)
 *   staircase    TTFT of each request in launch order, so a serialised
 *                prefill shows as a staircase
 *   ttft, ttlt, e2e, itl distributions (itl pools every inter-token gap)
 *
 * Token source: when every successful request carried a `usage` block its
 * completion_tokens are summed (tps_source "usage"); otherwise counted
 * content chunks are used and tps_source says "chunks" (or "mixed").
 *
 * Repeats: the reported repeat is the median repeat by the chosen figure
 * (the lower middle one for an even count), all its fields taken together,
 * never a per-field average; spread = (max - min) / median, and a spread
 * over STATS_UNSTABLE_SPREAD is UNSTABLE.
 */
#ifndef TTAUDIT_STATS_H
#define TTAUDIT_STATS_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/load.h"
#include "base/status.h"

#define STATS_UNSTABLE_SPREAD 0.15

struct stats_dist {
	size_t n;
	double min, p50, p90, p99, max, mean;
};

struct stats_run {
	size_t n, n_ok, n_failed;
	size_t n_aborted;                 /* cancelled by the client on purpose: among n_ok, their
					   * tokens counted, left out of ttlt and e2e */
	size_t n_fail[LOAD_FAIL__COUNT];  /* failures by cause */
	double makespan;                  /* seconds */
	long out_tokens;                  /* successful requests, from tps_source */
	long out_chunks;                  /* counted content chunks, successful requests */
	long prompt_tokens;               /* from usage, successful requests; -1 when unknown */
	const char *tps_source;           /* "usage", "chunks", "mixed" or "none" */
	size_t n_usage_mismatch;          /* requests where usage and counted chunks differ */
	double out_tok_s;
	double req_s;                     /* successful requests / makespan */
	double prefill_tok_s;             /* batch: prompt tokens / max(TTFT); 0 otherwise or unknown */
	double max_ttft;
	struct stats_dist ttft, ttlt, e2e, itl;
	/* TTFT counts to the first output token, reasoning included; this one
	 * to the first answer token (equal without a reasoning parser) */
	struct stats_dist ttft_answer;
	long reasoning_tokens, answer_tokens;   /* successful requests, as counted */
	/* "tokens": every request's chunks said how many tokens they carried
	 * (token_ids or per-chunk usage), so itl is per token; "chunks": one
	 * token per chunk was assumed; "mixed" */
	const char *itl_source;
	/* Open loop (POISSON) only, zero otherwise: the same figures counted
	 * from when each request was due (t_sched) rather than written, and the
	 * wait between the two. A client that fell behind its schedule writes
	 * requests late and, timed from the write, hides the queue it built
	 * (coordinated omission, vllm-project/guidellm #1048); timed from the
	 * schedule, it cannot. */
	bool open_loop;
	struct stats_dist ttft_sched, e2e_sched;
	struct stats_dist sched_lag;      /* t_sent (t_launch when never written) - t_sched,
					   * every request, failed ones included */
	double *staircase;                /* n entries, TTFT in launch order, -1 for no token */
	size_t n_staircase;
};

/* Nearest-rank percentile p (0..100] of sorted[0..n); 0 when n is 0. */
double stats_percentile(const double *sorted, size_t n, double p);

/* Sorts v in place and fills d. */
void stats_dist_of(double *v, size_t n, struct stats_dist *d);

/* Figures of a run. Release with stats_run_release(). */
enum status stats_run_compute(const struct load_run *run, struct stats_run *s, struct status_info *si);
void stats_run_release(struct stats_run *s);

/* Index of the median repeat of fig[0..n) and the spread (0 for n < 2). */
size_t stats_median_repeat(const double *fig, size_t n, double *spread);

#endif
