/*
 * ab.h - the A/B validation of a guard, the way it is done by hand, without
 * its mistakes.
 *
 * A host runs one device process at a time, so arms run one after another,
 * each in its own boot of the server. A round boots, in order: the control,
 * the treatment, the control again (the negative control: A vs A gives the
 * noise floor between boots) and, when given, the sensitivity arm (a
 * configuration known to cost something, which the bench must be able to
 * see). Rounds repeat (--repeats), so arms interleave: A B A' S A B A' S.
 *
 * One boot:
 *   1. preflight (host/preflight.h): memory floor, host lock free,
 *      devices and their holders (unless vendor-neutral); host memory is
 *      recorded before the boot and compared after it (a warning when it
 *      did not come back);
 *   2. the host lock is taken at the first boot and held until the A/B
 *      ends, so no other job runs on the host between two arms (never
 *      stolen);
 *   3. the serve command runs under /bin/sh in its own process group, with
 *      the capture shim preloaded (capture/launch.h), the arm's environment
 *      from the spec set and every other arm's variables removed, plus
 *      TTAUDIT_AB_ARM, TTAUDIT_AB_ROLE, TTAUDIT_AB_BOOT and
 *      TTAUDIT_AB_PORT_FILE (a server started with --port 0 writes its port
 *      there when no --url is given);
 *   4. the bench (bench/driver.h) climbs the readiness ladder, confirms the
 *      arm from the server's own output (fail closed), runs the reference at
 *      concurrency 1 and the correctness run under load, and writes the run
 *      records;
 *   5. the server is stopped gracefully: the stop signal (SIGINT by default)
 *      to its process group, a wait, SIGTERM, a second wait. Never SIGKILL:
 *      a device process killed hard can wedge the cards. A server that does
 *      not stop is left running, the lock stays held, the A/B stops, and the
 *      command a person should run is printed;
 *   6. the records are paired with the capture (pair.h); the recorded merge
 *      decisions must not contradict the declared arm (a banner can be
 *      printed by code that never applies the guard).
 * A failed gate (preflight, lock, readiness, arm) stops the A/B with FAIL
 * before any report is written.
 *
 * Verdict (verdict.h: verdict_judge):
 *   guard effect   merges with a substitution and failing requests, the
 *                  treatment against the control arm (the control and the
 *                  negative-control boots, one configuration), each with its
 *                  Clopper-Pearson interval and Fisher's exact test between
 *                  them. PASS needs the control arm to substitute, the
 *                  treatment to make none and fail no request, Fisher's test
 *                  to tell the two apart at 1 - C (merges; requests too when
 *                  the control failed any), and the treatment's 0 failing of
 *                  N to rule out the baseline (--baseline, else the control
 *                  arm's own failure rate). FAIL when the treatment
 *                  substituted or failed; NOT SHOWN when the control arm made
 *                  no substitution; INCONCLUSIVE otherwise, with the number
 *                  of merges or requests that would do (base/rate.h).
 *   cost           per figure (makespan, TTFT p50, ITL p50, output tokens/s)
 *                  the median over rounds of the paired difference
 *                  (treatment - control) / control of the same round, with
 *                  the distribution-free interval of that median
 *                  (rate_median_interval: with 3 rounds the minimum and the
 *                  maximum, 75% coverage, said so). The noise floor is the
 *                  largest |A' - A| / A over rounds (the negative control
 *                  against the control). An interval inside [-floor, floor]
 *                  is "flat, not a win"; one wholly outside is better or
 *                  worse; one that straddles the floor is WITHHELD. The whole
 *                  cost is WITHHELD with one round (no interval), without a
 *                  sensitivity arm, or when the sensitivity arm is not
 *                  separated from the negative control by the separation
 *                  floor (default 5 points).
 *   forgone        the treatment's forgone takes (fresh tokens its guard
 *                  refused) times its ITL p50: the decode time they would
 *                  cost if each cost one token's time, beside the measured
 *                  makespan difference.
 */
#ifndef TTAUDIT_AB_H
#define TTAUDIT_AB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"
#include "bench/suite.h"

#define AB_MAX_REPEATS 20
#define AB_MAX_BOOTS (4 * AB_MAX_REPEATS)
#define AB_DEFAULT_REPEATS 3
#define AB_DEFAULT_SEPARATION 0.05
#define AB_DEFAULT_STOP_TIMEOUT 60.0
#define AB_DEFAULT_CONFIDENCE 0.95

/* The cost figures, in this order in every array indexed by figure. */
enum ab_fig { AB_MAKESPAN, AB_TTFT, AB_ITL, AB_TOK_S, AB_N_FIG };

/* "makespan", "ttft_p50", "itl_p50", "tok_s". */
const char *ab_fig_name(enum ab_fig f);

enum ab_role { AB_CONTROL, AB_TREATMENT, AB_NEGATIVE, AB_SENSITIVITY, AB__ROLES };

/* "control", "treatment", "negative-control", "sensitivity". */
const char *ab_role_name(enum ab_role r);

struct ab_opts {
	const char *control, *treatment;   /* arm names in the spec */
	const char *sensitivity;           /* NULL: none (cost WITHHELD) */
	const char *spec;                  /* arm spec (probe/arms.h) */
	const char *serve;                 /* shell command that runs the server */
	const char *sensitivity_serve;     /* NULL: serve */
	const char *url;                   /* NULL: read the port file */
	const char *dir;                   /* work directory: captures, records, report */
	unsigned repeats;                  /* rounds, >= 1 (AB_DEFAULT_REPEATS; 1 withholds the cost) */
	/* the bench */
	const char *suite;                 /* NULL: generate */
	struct suite_gen_opts gen;
	unsigned concurrency;
	size_t n_requests;                 /* 0: the suite */
	uint64_t corpus_seed;
	double timeout_s, ready_timeout;
	const char *model;
	/* the host */
	const char *lock_dir;              /* NULL: LOCK_DEFAULT_DIR */
	bool vendor_neutral, no_docker, no_preflight;
	const char *preflight_root;        /* tests: read proc/ and devices under this dir */
	double mem_floor_gib;
	/* stopping */
	int stop_signal;                   /* 0: SIGINT */
	double stop_timeout;               /* per wait; <= 0: AB_DEFAULT_STOP_TIMEOUT */
	const char *stop_cmd;              /* run instead of signalling, then wait; NULL none */
	/* the verdict */
	double separation;                 /* <= 0: AB_DEFAULT_SEPARATION */
	double confidence;                 /* of every interval and test; <= 0: AB_DEFAULT_CONFIDENCE */
	double baseline;                   /* failure rate per request to rule out; <= 0: the control arm's */
	FILE *log;                         /* progress lines; NULL: stderr */
};

struct ab_role_result {
	const char *arm;
	size_t n_boots;
	double med[AB_N_FIG];              /* median over the role's rounds; NAN unknown */
	double fig[AB_N_FIG][AB_MAX_REPEATS];   /* per round */
	size_t n_rounds;
	unsigned long long merges, merges_subst, taken, subst, subst_request, subst_stamp, subst_lifetime;
	unsigned long long fired, prevented, forgone, bare_taken;
	unsigned long long forgone_round[AB_MAX_REPEATS];   /* per round, with guard_known */
	bool guard_known;                  /* fired/prevented/forgone from the arm's rule */
	size_t requests, failing, explained, possible, unexplained, subst_correct;
	char arm_verdict[32];              /* of the last boot */
};

struct ab_delta {
	const char *figure;                /* ab_fig_name */
	double control, treatment;         /* the roles' medians over rounds */
	double delta;                      /* median over rounds of (treatment - control) / control */
	double lo, hi;                     /* the order-statistic interval of that median */
	double coverage;                   /* its real coverage (0.75 with 3 rounds) */
	size_t rounds;                     /* rounds paired */
	double floor;                      /* |A' - A| / A, the largest over rounds */
	double neg_delta, neg_lo, neg_hi;  /* the same of the negative control against the control */
	const char *verdict;               /* "flat, not a win", "better", "worse", "WITHHELD", "unknown" */
};

/* What the verdict is judged with besides the figures. */
struct ab_judge_opts {
	bool has_sensitivity;
	double separation;                 /* <= 0: AB_DEFAULT_SEPARATION */
	double confidence;                 /* <= 0: AB_DEFAULT_CONFIDENCE */
	double baseline;                   /* <= 0: the control arm's own failure rate */
};

struct ab_result {
	bool failed;                       /* a gate failed: nothing published */
	char fail_message[1024];
	char fail_command[512];            /* what a person should run, or "" */
	struct ab_role_result role[AB__ROLES];
	double confidence;                 /* in force */
	/* the guard effect */
	const char *guard_verdict;         /* "PASS", "FAIL", "NOT SHOWN", "INCONCLUSIVE" */
	char guard_why[640];
	bool guard_ok;                     /* guard_verdict is PASS */
	/* the control arm: control and negative-control boots pooled */
	unsigned long long ctl_merges, ctl_merges_subst;
	size_t ctl_requests, ctl_failing;
	double p_subst, p_fail;            /* Fisher's exact test, treatment against the control arm */
	double baseline;                   /* the failure rate the treatment's 0 must rule out; 0 none */
	const char *baseline_from;         /* "--baseline", "the control arm", NULL */
	uint64_t n_to_bound;               /* requests whose 0 rules the baseline out */
	uint64_t n_detect_merges, n_detect_requests;   /* per arm, for Fisher's test at power 0.8 */
	/* the cost */
	struct ab_delta delta[AB_N_FIG];
	bool cost_withheld;                /* the figures are not published (cost_reason) */
	/* published, and no figure told apart from its noise floor (each
	 * WITHHELD or unknown): the cost verdict is WITHHELD all the same */
	bool cost_undecided;
	char cost_reason[256];
	double sensitivity_delta, negative_delta, separation;
	double forgone_expected_s;         /* median over rounds of forgone x the treatment's ITL p50 */
	double forgone_expected_rel;       /* the same relative to the control's makespan */
	size_t forgone_rounds;             /* rounds with both figures */
	char report_md[1024], report_json[1024], report_html[1024], svg_timeline[1024], svg_latency[1024];
	char svg_makespan[1024], svg_timeline_treatment[1024];
	size_t n_mem_warnings;             /* boots after which host memory did not come back */
	char mem_warning[1200];            /* the last one */
	char boots[AB_MAX_BOOTS][96];      /* "control r0: boot-00" ... */
	size_t n_boots;
};


/*
 * Runs the A/B. STATUS_OK when it ran to a verdict or stopped at a gate
 * (res->failed says which, with the message); other statuses for bad
 * options or I/O. Writes the report (markdown, JSON twin, SVG) into
 * opts.dir only when no gate failed.
 */
enum status ab_run(const struct ab_opts *o, struct ab_result *res, struct status_info *si);

#endif
