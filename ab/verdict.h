/*
 * verdict.h - the verdict of an A/B from its figures per role and round
 * (the rules: ab.h, "Verdict"); ab.c calls it once the boots are done, the
 * tests with made-up figures.
 */
#ifndef TTAUDIT_VERDICT_H
#define TTAUDIT_VERDICT_H

#include "ab/ab.h"

/*
 * The verdict from the figures: fig[role][figure][round] (enum ab_fig) with
 * n_fig[role] rounds; the substitution, forgone and correctness counts must
 * already be in res->role. Fills the roles' medians and rounds, the guard
 * verdict with its tests, the deltas with their intervals, the floors, the
 * sensitivity separation, the forgone cost and cost_withheld. Pure: ab_run
 * calls it, tests call it directly.
 */
void verdict_judge(const double fig[AB__ROLES][AB_N_FIG][AB_MAX_REPEATS], const size_t n_fig[AB__ROLES],
		   const struct ab_judge_opts *jo, struct ab_result *res);

#endif
