/*
 * cmd_run.c - `ttsim run`: the generator model offline, no HTTP; the audit
 * and what every rule would have done on the same merges (run.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ttsim/cmd.h"
#include "tools/ttsim/modelopt.h"
#include "tools/ttsim/run.h"

static struct ttsim_run_config run_c;
static struct ttsim_modelopt_arm run_arm;
static const char *run_audit_path;
static bool run_json;

/* "MIN:MAX" (or one N: both) of ints in 1..2^20 into *lo and *hi. */
static int run_range(const char *arg, int *lo, int *hi, char *err, size_t n)
{
	char *end;
	long a, b;

	a = strtol(arg, &end, 10);
	b = a;
	if (*end == ':')
		b = strtol(end + 1, &end, 10);
	if (!*arg || *end || arg[0] == ':' || a < 1 || a > 1 << 20 || b < a || b > 1 << 20) {
		snprintf(err, n, "'%s': want MIN:MAX", arg);
		return -1;
	}
	*lo = (int)a;
	*hi = (int)b;
	return 0;
}

static int run_opt_prompt(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	return run_range(arg, &run_c.prompt_min, &run_c.prompt_max, err, n);
}

static int run_opt_gen(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	return run_range(arg, &run_c.gen_min, &run_c.gen_max, err, n);
}

static const char *const run_usage[] = {
	"run [--steps N] [--slots B] [--seed S] [--arm R] [--audit FILE] [--json] ...",
	NULL,
};

static const struct opt run_opts[] = {
	OPT_INT(0, "steps", &run_c.steps, "N", 0, 1ll << 40, "ticks, one model step each (default 10000)"),
	OPT_STRING(0, "audit", &run_audit_path, "FILE", "write the audit (JSONL, '-' = stdout)"),
	OPT_CALL(0, "prompt", "MIN:MAX", run_opt_prompt, "prompt tokens per request (default 16:48)"),
	OPT_CALL(0, "gen", "MIN:MAX", run_opt_gen, "max_tokens per request (default 8:64)"),
	OPT_INT(0, "queue", &run_c.queue, "N", 1, 1 << 20,
		"closed loop: waiting requests kept queued (default: slots)"),
	OPT_NUM(0, "arrival", &run_c.arrival, "P", 0, 1,
		"open loop instead: a request arrives with chance P per tick, so slots idle at "
		"times (the batch guard and garbage matter)"),
	OPT_BOOL(0, "json", &run_json, "the summary as one JSON object"),
	TTSIM_MODEL_OPTS(run_c.model, run_arm),
	OPT_END(),
};

const struct cmd_doc ttsim_cmd_run_doc = {
	.prog = "ttsim",
	.name = "run",
	.summary = "the generator model offline: substitution rates per guard arm",
	.usage = run_usage,
	.description =
		"Drives a synthetic closed-loop workload through the generator model, no HTTP, "
		"writes the merge audit, and prints substitutions per 1,000 merges and per request "
		"for the engaged arm, and what every rule would have done on the same merges.",
	.opts = run_opts,
	.flags = CMD_NO_OPERANDS,
	.exit_notes = TTSIM_CMD_EXIT_NOTES,
};

int ttsim_cmd_run(int argc, char **argv)
{
	struct ttsim_run_result res;
	struct ttsim_audit *audit = NULL;
	struct status_info si;
	int n, rc = 2;

	ttsim_run_config_default(&run_c);
	run_c.model.max_prefills = TTSIM_MAX_SLOTS;
	n = opt_parse(&ttsim_cmd_run_doc, argc, argv);
	if (n < 0)
		return opt_exit(n);
	if (run_arm.set)
		run_c.model.arm = run_arm.mask;
	run_c.model.arm_claimed = run_c.model.arm;
	status_info_clear(&si);
	if (run_audit_path && ttsim_audit_open(run_audit_path, false, &audit, &si)) {
		fprintf(stderr, "ttsim run: %s: %s\n", si.file, si.msg);
		return 2;
	}
	if (ttsim_run(&run_c, audit, &res, &si)) {
		fprintf(stderr, "ttsim run: %s\n", si.msg);
		goto out;
	}
	if (ttsim_audit_lost(audit)) {
		fprintf(stderr, "ttsim run: %s: %llu audit lines could not be written\n",
			run_audit_path, ttsim_audit_lost(audit));
		rc = 1;
		goto out;
	}
	ttsim_run_print(stdout, &res, run_json);
	rc = 0;
out:
	ttsim_audit_free(audit);
	return rc;
}
