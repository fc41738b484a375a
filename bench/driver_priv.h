/*
 * driver_priv.h - the state of a bench run, shared by the files of the
 * driver: driver.c (the stages of a run and each load run), driver_gate.c
 * (readiness and arm confirmation of every server) and driver_verdict.c
 * (each run's figures added into its cell, the cells' verdicts). Nothing
 * outside them includes it: other parts use driver.h.
 */
#ifndef TTAUDIT_DRIVER_PRIV_H
#define TTAUDIT_DRIVER_PRIV_H

#include <stdbool.h>
#include <stddef.h>

#include "probe/arms.h"
#include "bench/canary.h"
#include "bench/correct.h"
#include "bench/driver.h"
#include "bench/load.h"
#include "bench/record.h"
#include "bench/stats.h"
#include "base/status.h"
#include "bench/suite.h"

/* What the run knows of a server once its gate passed. */
struct driver_arm_state {
	struct record_identity id;
	char model[256];
	char config_hash[32];
	char *ready_json;           /* owned */
	char *arm_json;             /* owned */
	struct load_run *ref;       /* correctness reference (owned), or NULL */
};

struct driver_prog {
	FILE *f;
	char label[96];
	bool drawn;
};

struct driver_ctx {
	const struct driver_opts *o;
	struct driver_report *rep;
	struct suite *suite;
	struct driver_arm_state as[DRIVER_MAX_ARMS];
	struct record *rec;
	char host[256];
	struct driver_prog prog;
	struct margins *mg;         /* --margins: the diverged outputs kept for the pass */
	struct canary_set *can;     /* --correctness canary: the run's markers */
	size_t can_next;            /* the next sent marker */
	struct stats_run *keep;     /* [cell][repeat] figures, for the medians */
};

/* Prints a line on o->log_to (gate messages), when set. */
void driver_say(const struct driver_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The gate of server a: the readiness ladder, then the arm confirmed from
 * its output (or recorded unconfirmed, or none named). *passed false: the
 * gate failed and rep->gate_failed, gate_message (and arm_report) say why;
 * the return is still STATUS_OK. Other statuses are errors of the tool.
 */
enum status driver_gate(struct driver_ctx *c, size_t a, struct arm_spec *spec, bool *passed,
			struct status_info *si);

/* A run's figures, failures and (with correctness) its comparison, into its cell. */
void driver_tally(struct driver_cell *dc, const struct load_run *run, const struct stats_run *st,
		  const struct correct_report *corr, bool correctness);
/* A canary run's verdicts into its cell. */
void driver_tally_canary(struct driver_cell *dc, const struct canary_report *cr,
			 const struct load_run *run, const struct canary_set *can);
/* The token anomalies of a run's outputs into its cell. */
void driver_tally_anomalies(struct driver_cell *dc, const struct load_run *run, long vocab);
/* The cell's canary verdict (driver.h). */
void driver_canary_verdict(const struct driver_report *rep, struct driver_cell *dc);
/* The cell's correctness verdict (driver.h), with the baseline rule of `ttaudit plan`. */
void driver_verdict_of(const struct driver_report *rep, struct driver_cell *dc);
/* Every cell's accuracy verdict and the report's (driver.h). */
void driver_accuracy_verdicts(struct driver_report *rep, size_t n_levels);

#endif
