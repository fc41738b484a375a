/*
 * cli.h - the command front end. How to add a command:
 *
 *   1. write cli/cmd_<name>.c with `int cmd_<name>(int argc, char **argv)`;
 *      argv[0] is the command name. Keep it thin: parse options, call the
 *      library, print. Every report has a --json twin.
 *   2. declare it below and add one line to the table in cli/main.c.
 *
 * A command returns one of the CLI_* exit codes; it never calls exit().
 */
#ifndef TTAUDIT_CLI_H
#define TTAUDIT_CLI_H

#include <stdio.h>

#include "base/status.h"

enum {
	CLI_OK = 0,      /* ok, every verdict passed */
	CLI_FAIL = 1,    /* a verdict failed (substitution let through, arm not confirmed ...) */
	CLI_USAGE = 2,   /* bad usage or bad input */
};

/* "ttaudit <cmd>: <msg>" on stderr, returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints a status with its detail ("file:line: msg") on stderr. */
void cli_report_status(const char *cmd, enum status st, const struct status_info *si);
/* Parses a non-negative decimal integer option value; -1 when invalid. */
long long cli_parse_count(const char *s);

struct cmd_doc;

/* The operands a command takes (cli_parse). */
#define CLI_ANY (-1)
struct cli_operands {
	int min, max;               /* how many; max CLI_ANY: no upper bound */
	const char *too_few;        /* the usage error below min */
	const char *too_many;       /* the usage error above max; NULL: "unexpected argument 'X'",
				     * X the first operand too many */
};
/* No operand at all: "unexpected argument 'X'" for one. */
#define CLI_NO_OPERANDS (&(const struct cli_operands){ 0, 0, NULL, NULL })

/*
 * The start of every command: argv parsed against d (opt_parse: the operands
 * moved to argv[0..n)), then their number checked against ops (NULL: any).
 * Returns n, or -1 when the command is to return *rc at once: 0 after
 * --help or -h, CLI_USAGE after a usage error, said on stderr as
 * "ttaudit CMD: ...".
 */
int cli_parse(const struct cmd_doc *d, int argc, char **argv, const struct cli_operands *ops, int *rc);

int cmd_replay(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_capture(int argc, char **argv);
int cmd_follow(int argc, char **argv);
int cmd_pair(int argc, char **argv);
int cmd_ab(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_preflight(int argc, char **argv);

/* Option tables (opt.h) of the commands that have one. */
extern const struct cmd_doc cmd_replay_doc;
extern const struct cmd_doc cmd_validate_doc;
extern const struct cmd_doc cmd_preflight_doc;
extern const struct cmd_doc cmd_lock_doc;
extern const struct cmd_doc cmd_pair_doc;
extern const struct cmd_doc cmd_report_doc;
extern const struct cmd_doc cmd_plan_doc;
extern const struct cmd_doc cmd_ready_doc;
extern const struct cmd_doc cmd_arm_doc;
extern const struct cmd_doc cmd_passthrough_doc;
extern const struct cmd_doc cmd_watch_doc;
extern const struct cmd_doc cmd_combine_doc;
extern const struct cmd_doc cmd_bench_doc;
extern const struct cmd_doc cmd_ab_doc;
extern const struct cmd_doc cmd_capture_doc;
extern const struct cmd_doc cmd_follow_doc;
int cmd_lock(int argc, char **argv);
int cmd_ready(int argc, char **argv);
int cmd_arm(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_passthrough(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_combine(int argc, char **argv);

#endif
