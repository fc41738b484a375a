/*
 * boot.h - one boot of an A/B arm, for ab.c (the steps are ab.h's "One
 * boot"). The arm environments are loaded once per role before the boots;
 * a boot's failure is recorded in the A/B's result through ab_fail.
 */
#ifndef TTAUDIT_BOOT_H
#define TTAUDIT_BOOT_H

#include "ab/abctx.h"
#include "base/status.h"

/* Loads the arm's environment from the spec into e, adding its names to c->all. */
enum status boot_env_load(struct ab_ctx *c, const char *arm, struct ab_env *e, struct status_info *si);
void boot_env_release(struct ab_env *e);
/* Runs boot b: serve, bench, stop, pair; its figures go into c. */
enum status boot_run(struct ab_ctx *c, struct ab_boot *b, struct status_info *si);

#endif
