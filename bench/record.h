/*
 * record.h - benchmark run records, JSONL, one object per line.
 *
 * Kinds (key "kind"):
 *   run       one load run (a cell: arm, arrival level, repeat, phase) with
 *             its figures, its run identity and its failures
 *   request   one request of a run: response id (the request id the
 *             server's merge audit carries, to join the two), timings,
 *             token counts and their source, outcome and reason
 *   summary   the median repeat of every (arm, level), spread, UNSTABLE,
 *             correctness counts
 *
 * A run record cannot exist without a passed readiness gate, and, when an
 * arm is named, without that arm CONFIRMED by the server's own output;
 * a caller that skipped the arm check gets records labelled "unconfirmed".
 * record_run refuses (STATUS_USAGE) otherwise: the gate is enforced where
 * the record is written, not only where it is usually called.
 *
 * This is the writer, bench's results (load_run, stats_run, the correctness
 * and canary reports) as records; the format's one reader, which pair, the
 * figures and the A/B use, is record/record_read.h, below bench so that its
 * readers do not depend on the load client.
 */
#ifndef TTAUDIT_RECORD_H
#define TTAUDIT_RECORD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "bench/anomaly.h"
#include "bench/canary.h"
#include "bench/churn.h"
#include "bench/correct.h"
#include "bench/load.h"
#include "bench/margins.h"
#include "bench/stats.h"
#include "base/status.h"

enum record_arm_state {
	RECORD_ARM_NONE,         /* no arm named */
	RECORD_ARM_CONFIRMED,    /* named and confirmed */
	RECORD_ARM_UNCONFIRMED,  /* named, check skipped on request (--no-arm-check) */
	RECORD_ARM_FAILED,       /* named and not confirmed: no record may be written */
};

/* "none", "confirmed", "unconfirmed", "failed". */
const char *record_arm_state_name(enum record_arm_state s);

/* Who ran what against what. Strings are the caller's. */
struct record_identity {
	const char *tool_version;
	const char *url;            /* server base URL */
	const char *model;          /* id from /v1/models */
	const char *arm;            /* NULL when none named */
	enum record_arm_state arm_state;
	const char *arm_evidence;   /* arm check result as JSON text, or NULL */
	const char *host;
	bool ready;                 /* the readiness gate passed */
	const char *ready_json;     /* its report as JSON text, or NULL */
	const char *suite_hash;
	const char *suite_source;
	const char *sizing;
	const char *config_hash;    /* of /metrics *_info labels; NULL when there are none */
	uint64_t corpus_seed;
};

/* How a run was driven. */
struct record_cell {
	const char *run_id;         /* unique per run, e.g. "<seed>-<arm>-<level>-<repeat>" */
	const char *phase;          /* "bench", "reference" or "correctness" */
	size_t arm_index;
	unsigned repeat;            /* 0-based */
	enum load_arrival arrival;
	unsigned concurrency;       /* closed */
	unsigned batch;             /* batch */
	double rate;                /* poisson */
	uint64_t arrival_seed;      /* poisson */
	const char *cache_claim;    /* "cold" or "warm" */
	bool prefix_known;          /* the prefix-cache counter was read before and after */
	double prefix_hits_delta;
	bool cold_claim_valid;      /* cold and no prefix-cache hit in the run (meaningful when prefix_known) */
	double temperature;         /* < 0: server default */
	const struct correct_report *correct;  /* correctness phase: verdicts, else NULL */
	const struct canary_report *canary;    /* canary phase: verdicts, else NULL */
	const struct canary_set *canary_set;   /* its markers (with canary, or a calibration run) */
	size_t canary_first;                   /* the run's first marker */
	int canary_kind;                       /* enum canary_kind of the run's markers */
	const struct churn_plan *churn;        /* --workload churn: the run's plan, else NULL */
	bool anomalies;                        /* each request's token anomalies (anomaly.h) */
	const char *const *grades;             /* accuracy: per request "right", "wrong", "cut",
						* "failed"; else NULL */
	const char *const *grade_missing;      /* per request the expect string missing, or NULL */
	long vocab_size;                       /* for them; 0 unknown */
};

/* "closed", "batch", "poisson". */
const char *record_arrival_name(enum load_arrival a);

struct record;

/*
 * Opens path for writing: the records go to a temporary file beside it that
 * replaces path at record_close() (base/outfile.h), so a reader never sees
 * half a run and a run that could not be written leaves the old file alone.
 * "-" is stdout. Free with record_close().
 */
enum status record_open(struct record **out, const char *path, struct status_info *si);
/* Flushes, closes and puts the file in place; STATUS_IO (and path untouched)
 * if any write failed. NULL is fine. */
enum status record_close(struct record *w, struct status_info *si);

/* Fails with STATUS_USAGE when the identity may not be recorded (see above). */
enum status record_gate(const struct record_identity *id, struct status_info *si);

/*
 * Writes the run record and its request records. token_times adds every
 * content token's monotonic receive time to each request record.
 */
enum status record_run(struct record *w, const struct record_identity *id,
		       const struct record_cell *cell, const struct load_run *run,
		       const struct stats_run *st, bool token_times, struct status_info *si);

/*
 * The margin pass's labels: one `margin` record per diverged request scored
 * (request_id, arm_index, prompt_index, diverged_at, label, not_evaluable
 * (why, or null), detail, the output's, reference's and echo's tokens there,
 * their logprobs (null where the server gave none), token_id, epsilon).
 */
enum status record_margins(struct record *w, const struct margins_report *m, struct status_info *si);
/* The pass's counts as a cJSON object (for summaries); NULL on allocation failure. */
struct cJSON *record_margins_json(const struct margins_report *m);

/*
 * A value of this format (one of the *_json objects below) as one line of
 * JSON, every number in its shortest exact text, as jsonw writes it;
 * converts o's numbers in place (o stays the caller's to delete). The text
 * is the caller's (cJSON_free); NULL on allocation failure.
 */
char *record_print(struct cJSON *o);

/* Writes a prepared JSON object text (a summary) as one line. */
enum status record_line(struct record *w, const char *json, struct status_info *si);

/* The identity as a cJSON object (for summaries); NULL on allocation failure. */
struct cJSON *record_identity_json(const struct record_identity *id);
/* Canary counts as a cJSON object; NULL on allocation failure. */
struct cJSON *record_canary_json(const struct canary_report *c);
/* Correctness counts as a cJSON object; NULL on allocation failure. */
struct cJSON *record_correct_json(const struct correct_report *c);
/* k of n with its Clopper-Pearson interval at conf, as rate_json writes it (base/rate.h). */
struct cJSON *record_rate_json(uint64_t k, uint64_t n, double conf);
/* A stats_run as a cJSON object; NULL on allocation failure. */
struct cJSON *record_stats_json(const struct stats_run *st);

#endif
