/*
 * run.h - ttsim's offline driver: a synthetic closed-loop workload through
 * the generator model for a number of steps, no HTTP. It counts what the
 * engaged arm let through, what every other rule would have done on the same
 * merges, and checks each output against the sequential reference.
 */
#ifndef TTSIM_RUN_H
#define TTSIM_RUN_H

#include <stdbool.h>
#include <stdio.h>

#include "tools/ttsim/audit.h"
#include "tools/ttsim/model.h"
#include "base/status.h"

struct ttsim_run_config {
	struct ttsim_model_config model;
	long long steps;            /* ticks: one model step each (an idle one when
				     * an open loop leaves nothing to do) */
	int prompt_min, prompt_max; /* prompt tokens, uniform */
	int gen_min, gen_max;       /* max_tokens, uniform */
	int queue;                  /* closed loop: waiting requests kept queued; 0 = slots */
	double arrival;             /* open loop when > 0: chance a request arrives
				     * each tick (then `queue` is not used) */
};

void ttsim_run_config_default(struct ttsim_run_config *c);

#define TTSIM_RUN_RULES (TTSIM_RULE_COUNT + 2)

struct ttsim_run_result {
	struct ttsim_model_config model;
	long long steps;
	struct ttsim_model_stats st;
	int n_rules;                          /* bare, each rule, the engaged arm if a combination */
	unsigned rule_mask[TTSIM_RUN_RULES];
	struct ttsim_rule_stats rule[TTSIM_RUN_RULES];
	unsigned long long requests;          /* started */
	unsigned long long finished;
	unsigned long long diverged;          /* finished outputs that differ from the reference */
	unsigned long long diverged_unexplained; /* differ, but not from their first changed substitution */
	unsigned long long changed_undiverged;   /* a changed substitution, yet output equals the reference */
};

/* Runs the workload; `audit` may be NULL. */
enum status ttsim_run(const struct ttsim_run_config *c, struct ttsim_audit *audit,
		      struct ttsim_run_result *res, struct status_info *si);

/* The summary: text table, or one JSON object. */
void ttsim_run_print(FILE *f, const struct ttsim_run_result *r, bool json);

#endif
