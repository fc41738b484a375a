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
 * Verdict: guard effect (substitutions with control vs treatment,
 * prevented, forgone, fired), correctness (N failing of M, explained or
 * not), and cost (makespan, TTFT p50, output tokens/s) as deltas against
 * the noise floor: a delta inside it is "flat, not a win". When the
 * sensitivity arm cannot be told apart from the negative control by the
 * separation floor (default 5%), or there is no sensitivity arm, the cost
 * comparison is WITHHELD.
 */
#ifndef TTAUDIT_AB_H
#define TTAUDIT_AB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "status.h"
#include "suite.h"

#define AB_MAX_REPEATS 20
#define AB_MAX_BOOTS (4 * AB_MAX_REPEATS)
#define AB_DEFAULT_SEPARATION 0.05
#define AB_DEFAULT_STOP_TIMEOUT 60.0

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
	unsigned repeats;                  /* rounds, >= 1 */
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
	FILE *log;                         /* progress lines; NULL: stderr */
};

struct ab_figures {
	double makespan, ttft_p50, tok_s;  /* median over the role's boots; -1 unknown */
};

struct ab_role_result {
	const char *arm;
	size_t n_boots;
	struct ab_figures med;
	double makespan[AB_MAX_REPEATS];   /* per repeat */
	unsigned long long merges, taken, subst, subst_request, subst_stamp, subst_lifetime;
	unsigned long long fired, prevented, forgone;
	bool guard_known;                  /* fired/prevented/forgone from the arm's rule */
	size_t requests, failing, explained, possible, unexplained, subst_correct;
	char arm_verdict[32];              /* of the last boot */
};

struct ab_delta {
	const char *figure;                /* "makespan", "ttft_p50", "tok_s" */
	double control, treatment, delta;  /* delta relative to control */
	double floor;                      /* |A' - A| / A, the largest over rounds */
	const char *verdict;               /* "flat, not a win", "better", "worse", "unknown" */
};

struct ab_result {
	bool failed;                       /* a gate failed: nothing published */
	char fail_message[1024];
	char fail_command[512];            /* what a person should run, or "" */
	struct ab_role_result role[AB__ROLES];
	struct ab_delta delta[3];
	bool cost_withheld;
	char cost_reason[256];
	double sensitivity_delta, negative_delta, separation;
	bool guard_ok;                     /* treatment made no substitution and no failing request */
	char report_md[1024], report_json[1024], svg_timeline[1024], svg_latency[1024];
	char svg_makespan[1024], svg_timeline_treatment[1024];
	size_t n_mem_warnings;             /* boots after which host memory did not come back */
	char mem_warning[1200];            /* the last one */
	char boots[AB_MAX_BOOTS][96];      /* "control r0: boot-00" ... */
	size_t n_boots;
};

/*
 * The verdict from the figures: fig[role][figure][round] with figures
 * makespan, TTFT p50, tokens/s and n_fig[role] rounds; the substitution and
 * correctness counts must already be in res->role. Fills medians, deltas,
 * floors, the sensitivity separation, cost_withheld and guard_ok. Pure:
 * ab_run calls it, tests call it directly.
 */
void ab_judge(const double fig[AB__ROLES][3][AB_MAX_REPEATS], const size_t n_fig[AB__ROLES],
	      bool has_sensitivity, double separation, struct ab_result *res);

/*
 * Runs the A/B. STATUS_OK when it ran to a verdict or stopped at a gate
 * (res->failed says which, with the message); other statuses for bad
 * options or I/O. Writes the report (markdown, JSON twin, SVG) into
 * opts.dir only when no gate failed.
 */
enum status ab_run(const struct ab_opts *o, struct ab_result *res, struct status_info *si);

#endif
