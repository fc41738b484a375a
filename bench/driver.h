/*
 * driver.h - a whole `ttaudit bench`: gate every server, build the prompts,
 * run every cell (arm x level x repeat, repeats interleaved across arms),
 * compare outputs in the correctness stage, write the records, summarise.
 *
 * Order of a run:
 *   1. per arm: the readiness ladder (ready.h) must pass; a named arm must be
 *      CONFIRMED from the server's own output (arms.h) unless no_arm_check,
 *      in which case every record says "unconfirmed". A failed gate stops
 *      the run before any record is written.
 *   2. the suite is loaded, or generated and sized with the first server's
 *      /tokenize (two generation probes when there is none).
 *   3. correctness: every prompt alone (concurrency 1, temperature 0) per arm,
 *      the reference.
 *   4. for each repeat, for each level, for each arm: one run. Arms
 *      alternate (A B A B ...) so a drifting host shows as spread, not as a
 *      difference between arms.
 *   5. per (arm, level): the median repeat by output tokens/s, its spread
 *      and UNSTABLE over 15%.
 *
 * Cold runs put a fresh nonce before every prompt (a hash of the corpus
 * seed, arm, level, repeat and request) and read the server's
 * vllm:prefix_cache_hits counter before and after: any hit invalidates the
 * cold claim, recorded in the run. --warm sends one shared session.
 */
#ifndef TTAUDIT_DRIVER_H
#define TTAUDIT_DRIVER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/canary.h"
#include "bench/churn.h"
#include "bench/load.h"
#include "bench/margins.h"
#include "bench/stats.h"
#include "base/status.h"
#include "bench/suite.h"

#define DRIVER_MAX_ARMS 16
#define DRIVER_MAX_LEVELS 32
#define DRIVER_MAX_REPEATS 100

struct driver_arm {
	const char *url;        /* server base URL */
	const char *arm;        /* NULL: no arm named */
	const char *log;        /* engine log for the arm check, or NULL */
	const char *capture;    /* capture file for the arm check, or NULL */
};

struct driver_opts {
	struct driver_arm arms[DRIVER_MAX_ARMS];
	size_t n_arms;
	const char *spec;           /* arm spec (JSON), needed when an arm is named */
	bool no_arm_check;
	const char *model;          /* NULL: the first model the server lists */
	const char *suite;          /* suite file, or NULL to generate */
	struct suite_gen_opts gen;  /* when generating */
	enum load_arrival arrival;
	double levels[DRIVER_MAX_LEVELS];  /* concurrency, batch size or rate */
	size_t n_levels;
	uint64_t arrival_seed;      /* poisson */
	size_t n_requests;          /* per run; 0: suite size (at least the level) */
	unsigned repeats;           /* >= 1 */
	bool correctness;
	/* --correctness canary: every request its own marker, every output
	 * searched for every marker (canary.h); no reference. Prompts are the
	 * canary's, gen.chat chooses chat, gen.max_tokens their length */
	bool canary;
	/* --correctness accuracy: graded tasks (the suite's expect strings, or
	 * graded.h's bundled set) at every level; with two servers or more the
	 * last is the synchronous control (async scheduling off) the others are
	 * compared with, level by level, by Fisher's exact test */
	bool accuracy;
	/* --workload churn (churn.h): mixed max_tokens, client aborts,
	 * sync-forcing requests, a shared prefix evicted and sent again */
	bool churn;
	/* --margins: after the run, the quiet echo pass over every diverged
	 * output of the correctness stage (margins.h), epsilon margin_eps
	 * (<= 0: the default) */
	bool margins;
	double margin_eps;
	long vocab_size;            /* the model's vocabulary, for ids past it; 0 unknown */
	unsigned max_num_seqs;      /* the server's, when known (churn's levels cross it); 0 unknown */
	size_t churn_pressure;      /* words of each pressure request's preface (0: default 512) */
	double confidence;          /* of the correctness intervals, two-sided; <= 0: 0.95 */
	double baseline;            /* failure rate per request a clean cell must rule out; <= 0: none */
	bool warm;
	uint64_t corpus_seed;
	double temperature;         /* < 0: server default (correctness forces 0) */
	bool ignore_eos;
	bool no_usage;              /* do not ask for usage: token counts from chunks */
	double timeout_s, stall_s;
	double ready_timeout;       /* <= 0: the ladder's default */
	bool token_times;
	bool loop_times;            /* load_opts.loop_times */
	const char *out;            /* run records (JSONL) */
	FILE *progress;             /* a terminal for the progress bar, or NULL */
	FILE *log_to;               /* gate messages (stderr), or NULL */
};

/*
 * The correctness verdict of a cell: FAIL with any failing request (or a
 * reference that is wrong or failed); INCONCLUSIVE when none failed but 0 of
 * the requests judged cannot rule out the baseline (the upper end of the
 * Clopper-Pearson interval of 0 of n is above it: `ttaudit plan
 * --baseline P --target 0` gives the n that would); PASS otherwise.
 */
enum driver_verdict { DRIVER_PASS, DRIVER_FAIL, DRIVER_INCONCLUSIVE };

/* "PASS", "FAIL", "INCONCLUSIVE". */
const char *driver_verdict_name(enum driver_verdict v);

struct driver_cell {
	size_t arm_index;
	double level;
	unsigned n_repeats;
	size_t median_repeat;
	double spread;              /* of output tokens/s over repeats */
	bool unstable;
	struct stats_run median;    /* figures of the median repeat (owned) */
	double *tok_s;              /* output tokens/s of each repeat (owned) */
	size_t n_requests, n_failed;
	size_t n_fail[LOAD_FAIL__COUNT];
	char first_failure[240];    /* "id: reason" of the first failed request */
	size_t corr_requests, corr_failing, corr_diverged, corr_wrong, corr_failed;
	size_t corr_duplicate;      /* diverged by a token repeated (correct.h) */
	enum driver_verdict corr_verdict;   /* of the correctness stage (driver_verdict_of) */
	uint64_t corr_n_to_bound;           /* INCONCLUSIVE: requests that would rule out the baseline */
	char first_divergence[240];
	/* the canary stage (canary.h), over the cell's repeats */
	size_t can_requests, can_clean, can_leaked, can_lost, can_failed;
	size_t can_own_checked, can_decoy, can_id_checked, can_donor_finished;
	enum driver_verdict can_verdict;
	uint64_t can_n_to_bound;            /* INCONCLUSIVE for want of requests: the number that would do */
	double can_fisher_p;                /* leaked outputs above decoy outputs, one-sided; 1 without decoys */
	char first_leak[300];
	/* the accuracy stage: graded requests, right ones, cut short by design (not graded) */
	size_t acc_n, acc_right, acc_cut, acc_failed;
	double acc_fisher_p;                /* against the control's cell at this level; NAN none */
	enum driver_verdict acc_verdict;
	/* token anomalies (anomaly.h) of the outputs whose text and ids were kept */
	size_t an_outputs, an_with_ids, an_past_vocab, an_empty_tokens, an_special, an_empty;
	char first_anomaly[240];
	size_t n_cold_invalid;      /* runs whose cold claim the prefix cache contradicted */
	size_t n_cold_unchecked;    /* runs where the counter could not be read */
	double prefix_hits;         /* summed over repeats */
	uint64_t stamped_kernel, stamped_loop;  /* content chunks by the clock that timed them */
	uint64_t retried;                       /* requests sent again: a reused connection was dead */
	double send_delay_max;      /* the longest launch-to-written wait (load_result_origin) */
};

struct driver_arm_info {
	char url[2048];
	char arm[128];              /* "" when none */
	const char *arm_state;      /* static: "none", "confirmed", "unconfirmed", "failed" */
	char model[256];
	char config_hash[32];       /* "" when the server has no *_info samples */
	size_t ref_requests, ref_wrong, ref_failed;
	struct canary_calib cal;    /* the canary's calibration of this server */
	bool ids_searched;          /* the canary searched token ids too */
	char ids_note[160];         /* why not, when not */
};

struct driver_report {
	struct driver_arm_info arms[DRIVER_MAX_ARMS];
	size_t n_arms;
	struct driver_cell *cells;  /* n_arms * n_levels, arm-major */
	size_t n_cells;
	enum load_arrival arrival;
	bool correctness, warm, canary, churn, accuracy;
	size_t control;                     /* accuracy: the control server; SIZE_MAX none */
	enum driver_verdict acc_verdict;    /* the worst of the treatment cells' */
	long vocab_size;
	size_t an_past_vocab, an_special, an_empty_tokens, an_empty;
	unsigned max_num_seqs;
	uint64_t transitions[CHURN_T__COUNT];   /* churn: requests that caused each transition */
	char suite_hash[32], suite_source[1024], sizing[48];
	size_t suite_n;
	uint64_t corpus_seed;
	size_t total_requests, total_failed;
	size_t n_fail[LOAD_FAIL__COUNT];
	size_t corr_requests, corr_failing, ref_wrong, ref_failed;
	enum driver_verdict corr_verdict;   /* the worst of the cells' */
	size_t can_requests, can_leaked, can_lost, can_decoy;
	enum driver_verdict can_verdict;    /* the worst of the cells' */
	double confidence, baseline;        /* in force (defaults applied; baseline 0: none) */
	bool any_unstable, any_cold_invalid;
	uint64_t stamped_kernel, stamped_loop;
	uint64_t retried;                       /* requests sent again on a new connection */
	double send_delay_max;
	bool gate_failed;           /* a readiness gate or an arm check failed: nothing ran */
	char gate_message[1024];
	char *arm_report;           /* the failed arm check, printed (owned), or NULL */
	bool margins;               /* the margin pass ran: its labels (owned) */
	struct margins_report mrep;
};

/*
 * Runs everything. STATUS_OK when the run took place (failures, divergence
 * and instability are in the report, not errors); when a gate fails the
 * return is STATUS_OK with report->gate_failed. Other statuses: bad
 * options, unreadable suite, unwritable records, http_init's when libcurl
 * cannot be loaded. Release with
 * driver_report_release().
 */
enum status driver_run(const struct driver_opts *o, struct driver_report *rep, struct status_info *si);
void driver_report_release(struct driver_report *rep);



#endif
