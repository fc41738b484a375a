/*
 * pair.h - ties benchmark runs to the merge audits of the server that ran
 * them, and attributes wrong outputs to the substitutions that caused them.
 *
 * Inputs: bench record files (`run` and `request` records: bench/record.h
 * writes them, record/record_read.h reads them)
 * and audits (capture files or plain audit JSONL, read with the analyzer's
 * reader). A merge event belongs to a run
 *   1. by request id: a request id in its `slot_req` is a request of that
 *      run (the id the HTTP response carried, interfaces: request identity);
 *   2. else, when it carries no request id at all, by time: its capture
 *      record's CLOCK_MONOTONIC time (or, without
 *      one, its wall time `t`) lies within the run's window widened by
 *      `slack_s`; the capture's pid is kept, and a run whose window holds
 *      audit lines from more than one pid says so.
 * Events that fit no run, or come from another process than opts.pid when
 * one is given, are counted as outside every run.
 *
 * Per run: every rule's counts (tally.h) over the run's merges, the arm
 * fingerprint and the arm the record declares, and the substitutions the
 * server really made: slots the event's `taken` marks and the evidence
 * calls stale (without `taken`: those of the declared arm's rule).
 *
 * Each correctness failure of a run (a reference check's divergence, or a
 * canary's leak or lost marker) is matched with the substitutions of the same
 * request: a substitution's completion token index is its device
 * position minus the request's prompt length (from the request record's
 * usage, else the audit's prefill event). The first divergent token k of a
 * `diverged` verdict is explained by a substitution at index k (or k - 1:
 * outputs are compared as text, and a stale token whose text is a prefix of
 * the right one makes the text differ from the next token on); the
 * reference request of the same prompt (phase "reference", same arm index)
 * is searched as well, since a wrong reference also shows as divergence.
 * A canary leak at output position k is explained by a substitution into
 * the request at k (within the chunk the leak was found in), whose buffer
 * belonged to the donor; the canary's donor and the audit's are compared.
 * A leak no substitution explains is a leak the audit does not explain (a
 * defect other than the merge); a divergence or a lost marker with no
 * substitution in the request is a divergence without a foreign token
 * (likely numerics). Per run, the wrong-token requests and the share the
 * merge explains, with their intervals: the seeds' open question.
 * Substitutions of requests whose output was identical are listed too: a
 * token that happened to be right, or a check that cannot see it.
 *
 * Rates (base/rate.h): failing requests of the requests judged, and merges
 * with a substitution of the merges paired, each with its Clopper-Pearson
 * interval at opts.confidence. The merge is the trial, not the slot: the
 * slots of one merge read the same buffer, so their staleness is not
 * independent. Each run's verdict (pair_verdict):
 *   FAIL          a substitution made, a failing request, or the arm
 *                 contradicted;
 *   INCONCLUSIVE  nothing failed but the evidence cannot say clean: no merge
 *                 paired with the run, no decisions to count, takes no
 *                 evidence can judge, or 0 failing of too few requests to
 *                 rule out opts.baseline (with the number that would);
 *   PASS          otherwise.
 */
#ifndef TTAUDIT_PAIR_H
#define TTAUDIT_PAIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/evidence.h"
#include "base/progress.h"
#include "base/status.h"
#include "analyzer/tally.h"

#define PAIR_MAX_FILES 64
#define PAIR_MAX_RUNS 4096
#define PAIR_MAX_REQUESTS 1000000u
#define PAIR_MAX_SUBST 100000u      /* substitutions kept per run; more are counted */
#define PAIR_MAX_PIDS 8
#define PAIR_ID_MAX 128
#define PAIR_DEFAULT_SLACK 2.0

struct pair_opts {
	const char *const *runs;     /* bench record files */
	size_t n_runs;
	const char *const *audits;   /* capture or audit files */
	size_t n_audits;
	int64_t max_pos;             /* --max-pos; 0: config.max_model_len */
	double slack_s;              /* window slack; < 0: PAIR_DEFAULT_SLACK */
	int64_t pid;                 /* > 0: only capture records of this process */
	FILE *diag;                  /* malformed-line messages; NULL: stderr */
	double confidence;           /* of every interval, two-sided; <= 0: PAIR_DEFAULT_CONFIDENCE */
	double baseline;             /* failure rate per request a clean run must rule out; <= 0: none */
	struct progress *progress;   /* audit bytes and merges read, drawn while reading; NULL: none */
};

#define PAIR_DEFAULT_CONFIDENCE 0.95

enum pair_verdict { PAIR_PASS, PAIR_FAIL, PAIR_INCONCLUSIVE };

/* "PASS", "FAIL", "INCONCLUSIVE". */
const char *pair_verdict_name(enum pair_verdict v);

/* How a correctness failure relates to the substitutions. */
enum pair_match {
	PAIR_EXPLAINED,      /* a substitution at the first divergent token (or the leaked one) */
	PAIR_POSSIBLE,       /* substitutions in the request, no divergent token to compare */
	PAIR_UNEXPLAINED,    /* substitutions in the request, none there; or no audit; or failed */
	PAIR_LEAK_UNEXPLAINED,   /* a canary leak (another request's token) no substitution explains */
	PAIR_NO_FOREIGN,     /* a divergence (or a lost marker) and no substitution in the request:
			      * no foreign token, likely numerics */
};

/* "explained", "possible", "unexplained", "leak-unexplained", "no-foreign-token". */
const char *pair_match_name(enum pair_match m);

/* One substitution the server made. */
struct pair_subst {
	char req[PAIR_ID_MAX];       /* request that received the stale token ("" unknown) */
	char buf_req[PAIR_ID_MAX];   /* request the buffer slot was written for ("" unknown) */
	int64_t step;
	uint32_t slot;
	int64_t pos;                 /* device position taken */
	int64_t token;               /* completion token index; -1 when the prompt length is unknown */
	enum evidence evidence;
	size_t file;                 /* index into the audit files */
	long line;
	const char *outcome;         /* static: the request's verdict, "no-verdict", "not-in-run" */
};

struct pair_failure {
	char req[PAIR_ID_MAX];
	size_t index;                /* request index in its run */
	size_t prompt_index;
	char verdict[16];            /* "diverged", "wrong", "failed" */
	long at;                     /* first divergent token; -1 when the verdict has none */
	long span;                   /* the divergent chunk's tokens: at .. at + span - 1 */
	enum pair_match match;
	bool in_reference;           /* the matching substitution was in the reference request */
	bool exact;                  /* explained at token k itself, not at k - 1 (see pair.c) */
	int64_t step;                /* of the matching substitution; -1 none */
	uint32_t slot;
	int64_t token;
	size_t n_subst;              /* substitutions of this request (and its reference) */
	char donor[PAIR_ID_MAX];     /* the matching substitution's buffer request; "" none */
	char canary_donor[PAIR_ID_MAX];   /* leaked: the donor the canary named */
	bool donor_agrees;           /* explained leak: the audit's donor is the canary's */
	char why[400];
};

struct pair_run {
	char run_id[PAIR_ID_MAX];
	char phase[24];
	char arm[128];               /* declared; "" none */
	char arm_state[24];
	size_t arm_index;
	unsigned repeat;
	size_t file;                 /* index into the run files */
	long line;
	double wall_start, wall_end, mono_start, mono_end;
	/* figures from the run record (-1 unknown) */
	double makespan, ttft_p50, itl_p50, out_tok_s;
	size_t n_requests, n_ok;
	bool has_correctness;
	size_t n_correct, n_failing; /* requests judged, failing ones */

	/* the audit */
	uint64_t merges, by_id, by_time;
	int64_t pids[PAIR_MAX_PIDS];
	size_t n_pids;               /* may exceed PAIR_MAX_PIDS */
	struct tally *tally;         /* per rule counts over this run's merges (owned) */
	size_t arm_rule;             /* index in tally of the declared arm; SIZE_MAX none */
	struct tally_fingerprint fp;
	const char *arm_verdict;     /* static: see pair_run_arm_verdict in pair.c */
	bool actual_from_taken;      /* substitutions counted from `taken` (else the arm rule) */
	uint64_t taken;              /* slots really taken */
	uint64_t subst;              /* substitutions really made */
	uint64_t subst_by[EVIDENCE__COUNT];
	uint64_t unverified;         /* taken, staleness unknown */
	struct pair_subst *substs;
	size_t n_substs;             /* kept; subst - n_substs were dropped */
	size_t n_subst_correct;      /* of a request whose output was identical */
	struct pair_failure *failures;
	size_t n_failures;
	size_t n_explained, n_possible, n_unexplained;
	size_t n_leak_unexplained, n_no_foreign;
	size_t n_wrong;              /* failing requests that are token failures (not failed ones) */
	uint64_t merges_subst;       /* merges in which at least one substitution was made */
	enum pair_verdict verdict;
	char verdict_why[320];       /* what the verdict rests on, for the report */
	uint64_t n_to_bound;         /* INCONCLUSIVE against the baseline: requests that would do */
	size_t cap_substs, cap_failures;   /* allocated entries (internal) */
	size_t req_lo, req_hi;             /* its request records span [lo, hi) (internal) */
};

struct pair;

/*
 * Reads every run file and audit and pairs them. Bad input lines are
 * reported on opts.diag with file and line and counted; a run file that
 * cannot be read or holds no run record is an error (STATUS_IO / STATUS_PARSE
 * naming it). Free with pair_free().
 */
enum status pair_build(const struct pair_opts *o, struct pair **out, struct status_info *si);
void pair_free(struct pair *p);

size_t pair_n_runs(const struct pair *p);
const struct pair_run *pair_run_at(const struct pair *p, size_t i);
/* Merge events outside every run, and malformed lines seen (runs and audits). */
uint64_t pair_merges_outside(const struct pair *p);
uint64_t pair_malformed(const struct pair *p);
uint64_t pair_audit_lines(const struct pair *p);
/* The confidence and baseline in force (opts, defaults applied). */
double pair_confidence(const struct pair *p);
double pair_baseline(const struct pair *p);
const char *pair_audit_file(const struct pair *p, size_t i);
const char *pair_run_file(const struct pair *p, size_t i);

/* The files of the options, for the report. */
size_t pair_n_run_files(const struct pair *p);
size_t pair_n_audit_files(const struct pair *p);

#endif
