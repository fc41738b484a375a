/*
 * abctx.h - the state of one A/B run, shared by the modules of ab/ (ab.c
 * runs it, boot.c boots one arm, abreport.c writes the reports); not for
 * callers outside ab/, who see ab.h only.
 */
#ifndef TTAUDIT_ABCTX_H
#define TTAUDIT_ABCTX_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "ab/ab.h"

#define AB_MAX_ENV 64
#define AB_PATH 1024
#define AB_MAX_TTFT 100000u   /* TTFT values kept per role for the CDF */

struct ab_env {
	char *name[AB_MAX_ENV], *value[AB_MAX_ENV];
	size_t n;
};

struct ab_boot {
	enum ab_role role;
	unsigned round;
	char capture[AB_PATH], records[AB_PATH], log[AB_PATH], port_file[AB_PATH];
};

struct ab_ctx {
	const struct ab_opts *o;
	struct ab_result *res;
	FILE *log;
	struct arm_spec *spec;
	struct ab_env env[AB__ROLES];        /* each role's arm environment */
	struct ab_env all;                   /* every variable any arm sets (names only) */
	struct ab_boot boots[AB_MAX_BOOTS];
	size_t n_boots;
	double fig[AB__ROLES][AB_N_FIG][AB_MAX_REPEATS];   /* enum ab_fig, per round */
	size_t n_fig[AB__ROLES];
	double *ttft[AB__ROLES];
	size_t n_ttft[AB__ROLES];
	char shim[AB_PATH];
	char mem_record[AB_PATH];            /* host memory before and after each boot */
	struct lock *lock;                   /* the host lock, held from the first boot */
	bool leave_lock;                     /* a server was left running: keep the lock */
};

/* "ab: " and the line on the A/B's log. */
void ab_say(struct ab_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Marks the A/B failed with the message (the first one kept by the caller's order) and logs it. */
void ab_fail(struct ab_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The arm a role runs. */
const char *ab_role_arm(const struct ab_opts *o, enum ab_role r);

/*
 * Set by ab.c's signal handler (the stop signal seen) and the server's
 * process group it passes the signal on to (set by the boot while a server
 * runs, 0 otherwise).
 */
extern volatile sig_atomic_t ab_signalled;
extern volatile pid_t ab_server_pgid;

#endif
