/*
 * cmd_replay.c - `ttaudit replay` and `ttaudit validate`: thin wrappers over
 * replay/ that parse options (one table each, cli/opt.h), feed the files and
 * print.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/opt.h"
#include "replay/replay.h"
#include "replay/validate.h"

/* What both commands share: the options' variables, then the files replayed. */
static const char *replay_arg_rules, *replay_arg_rule;
static long long replay_arg_max_pos, replay_arg_max_line, replay_arg_max_depth;
static long long replay_arg_max_slots, replay_arg_jobs = 1;
static bool replay_arg_json, replay_arg_strict, replay_arg_tree;
static bool replay_arg_allow_truncated, replay_arg_explain;
static int64_t replay_arg_explain_step;
static double replay_arg_max_forgone = -1;

static int replay_on_explain(const struct opt *o, const char *arg, char *err, size_t n)
{
	char *end;
	long long v;

	(void)o;
	errno = 0;
	v = strtoll(arg, &end, 10);
	if (!*arg || *end || errno) {
		snprintf(err, n, "--explain wants a step number (any int64), not '%s'", arg);
		return -1;
	}
	replay_arg_explain = true;
	replay_arg_explain_step = v;
	return 0;
}

#define RP_INPUT_OPTS \
	OPT_INT(0, "max-pos", &replay_arg_max_pos, "N", 1, INT64_MAX, \
		"positions >= N are garbage; wins over config.max_model_len"), \
	OPT_BOOL(0, "json", &replay_arg_json, "the same report as one JSON object"), \
	OPT_BOOL(0, "strict", &replay_arg_strict, "stop at the first malformed line (exit 2)"), \
	OPT_INT(0, "jobs", &replay_arg_jobs, "N", 1, REPLAY_MAX_JOBS, \
		"read N files at once (default 1); the report and its messages are the same"), \
	OPT_GROUP("limits (what exceeds one makes its line malformed, never truncated)"), \
	OPT_INT(0, "max-line", &replay_arg_max_line, "BYTES", 64, 1 << 30, \
		"longest line accepted (default 1 MiB)"), \
	OPT_INT(0, "max-depth", &replay_arg_max_depth, "N", 1, JDOC_DEPTH_LIMIT, \
		"JSON nesting accepted, the line's object being 1 (default 64)"), \
	OPT_INT(0, "max-slots", &replay_arg_max_slots, "N", 1, EVENT_SLOTS_LIMIT, \
		"entries of an integer array, the widest batch (default 4096)"), \
	OPT_BOOL(0, "tree", &replay_arg_tree, \
		 "read every line through the full JSON tree: the reference path the fast " \
		 "scanner is held to (the same results, slower)")

static const char *const replay_usage[] = {
	"replay [--rules LIST] [--max-pos N] [--json] [--strict] [--explain STEP] [--allow-truncated] "
	"[--jobs N] [--max-line B] [--max-depth N] [--max-slots N] [--tree] FILE...",
	NULL,
};

static const struct opt replay_opts[] = {
	OPT_STRING(0, "rules", &replay_arg_rules, "LIST",
		   "comma-separated rules, each a base rule or a+b (bare, prefilled, batch, lifetime, "
		   "stamp, bound; default all six)"),
	OPT_CALL(0, "explain", "STEP", replay_on_explain, "describe the merges at STEP slot by slot"),
	OPT_BOOL(0, "allow-truncated", &replay_arg_allow_truncated,
		 "a gzip file cut short is counted as far as it goes and the exit is 0 "
		 "(without it: 2, after the report)"),
	RP_INPUT_OPTS,
	OPT_END(),
};

const struct cmd_doc cmd_replay_doc = {
	.name = "replay",
	.summary = "replay merge audits against every guard rule and count",
	.usage = replay_usage,
	.description = "Replays merge audits (plain JSONL, capture files, server logs whose audit "
		"lines follow a log prefix, or a mix; '-' is stdin, gzip is read as is; a file with no "
		"audit event at all exits 2, saying what it holds) against guard rules and counts, per rule: merges, taken, "
		"substitutions, unverified, prevented, forgone, fired, skipped, shape_fallback; "
		"garbage positions; and the arm the recorded decisions are consistent with. A capture "
		"holding several server processes is replayed per process (config, garbage bound, "
		"drift and fingerprint), with a row for each beside the totals. A file given twice, or "
		"the same content twice, is counted once. docs/audit-format.md is the contract.",
	.opts = replay_opts,
};

static const char *const validate_usage[] = {
	"validate --rule R [--max-forgone-pct P] [--max-pos N] [--json] [--strict] [--jobs N] "
	"[--max-line B] [--max-depth N] [--max-slots N] [--tree] FILE...",
	NULL,
};

static const struct opt validate_opts[] = {
	OPT_STRING(0, "rule", &replay_arg_rule, "R", "the rule to gate (a base rule or a+b); required"),
	OPT_NUM(0, "max-forgone-pct", &replay_arg_max_forgone, "P", 0, 100,
		"fail a file where R forgoes more than P% of the bare merge's takes"),
	RP_INPUT_OPTS,
	OPT_END(),
};

const struct cmd_doc cmd_validate_doc = {
	.name = "validate",
	.summary = "gate a guard rule on an incident corpus before deployment",
	.usage = validate_usage,
	.description = "The pre-deployment gate: exit 0 when rule R lets no substitution through on "
		"any file and is evaluable on every file; exit 1 naming each failing file, step and "
		"slot otherwise; exit 2 when a file is a truncated gzip (the corpus was not all read). "
		"A file with no merge events, only skipped merges, or that could not be read fails: an "
		"empty corpus proves nothing. The cost (forgone, fired) is always printed.",
	.opts = validate_opts,
	.exit_notes = "the gate did not pass (a substitution let through, or a file not evaluable)",
};

/* The replay options from the parsed ones; -1 to go on, or an exit code. */
static int replay_cli_opts(const char *cmd, const char *rules, struct rule *out,
			   struct replay_opts *o)
{
	struct status_info si;

	memset(o, 0, sizeof(*o));
	if (rules) {
		status_info_clear(&si);
		if (rule_list_parse(rules, out, RULE_MAX_LIST, &o->n_rules, &si)) {
			cli_report_status(cmd, STATUS_USAGE, &si);
			return CLI_USAGE;
		}
	} else {
		o->n_rules = rule_list_default(out, RULE_MAX_LIST);
	}
	o->rules = out;
	o->max_pos = replay_arg_max_pos;
	o->strict = replay_arg_strict;
	o->explain = replay_arg_explain;
	o->explain_step = replay_arg_explain_step;
	o->max_line = (size_t)replay_arg_max_line;
	o->max_depth = (unsigned)replay_arg_max_depth;
	o->max_slots = (uint32_t)replay_arg_max_slots;
	o->tree = replay_arg_tree;
	return -1;
}

static void replay_cli_status(void *ctx, const char *path, enum status st,
			      const struct status_info *si)
{
	(void)path;
	cli_report_status((const char *)ctx, st, si);
}

/*
 * Feeds every file; returns -1 when all were read, CLI_USAGE when a file could
 * not be read (or, unless allowed, was cut short), held no audit event, or
 * when --strict stopped at a malformed line (*stopped then set: no report).
 */
static int replay_cli_run(const char *cmd, struct replay *r, int n, char **files, bool *stopped)
{
	enum status st;

	*stopped = false;
	st = replay_add_files(r, (const char *const *)files, (size_t)n, (unsigned)replay_arg_jobs,
			      replay_cli_status, (void *)cmd);
	if (st == STATUS_NOMEM) {
		cli_usage_error(cmd, "out of memory");
		*stopped = true;
		return CLI_USAGE;
	}
	if (st) {
		*stopped = true;   /* --strict, at a malformed line */
		return CLI_USAGE;
	}
	if (replay_n_unreadable(r) || (replay_n_truncated(r) && !replay_arg_allow_truncated) ||
	    replay_n_no_audit(r))
		return CLI_USAGE;
	return -1;
}

int cmd_replay(int argc, char **argv)
{
	struct rule rules[RULE_MAX_LIST];
	struct replay_opts o;
	struct progress prog;
	struct replay *r = NULL;
	bool stopped;
	int n, rc;

	n = cli_parse(&cmd_replay_doc, argc, argv,
		      &(const struct cli_operands){ 1, CLI_ANY, "no audit file given (see --help)", NULL }, &rc);
	if (n < 0)
		return rc;
	if ((rc = replay_cli_opts("replay", replay_arg_rules, rules, &o)) >= 0)
		return rc;
	progress_init(&prog, "replay", "merges", progress_input_size((const char *const *)argv, (size_t)n));
	o.progress = prog.on ? &prog : NULL;   /* off: nothing counted either */
	r = replay_new(&o);
	if (!r)
		return cli_usage_error("replay", "out of memory");
	/* A file that could not be read at all gives no report (an empty one
	 * would pass for the report of the input asked for), nor does a run
	 * --strict stopped; a cut gzip or a file with no audit event gives the
	 * report of what was read, and still exit 2. When no file held an audit
	 * event, the text would be rows of nothing under the real message (on
	 * stderr: the wrong file): that message alone is said. */
	rc = replay_cli_run("replay", r, n, argv, &stopped);
	progress_release(&prog);
	if (rc == CLI_USAGE && (stopped || replay_n_unreadable(r)))
		goto out;
	if (rc == CLI_USAGE && replay_n_no_audit(r) && !replay_events(r) && !replay_arg_json)
		goto out;
	if (o.explain && !replay_n_explained(r)) {
		rc = cli_usage_error("replay", "no merge event at step %lld", (long long)o.explain_step);
		goto out;
	}
	if (replay_arg_json)
		replay_print_json(r, stdout);
	else if (o.explain)
		replay_print_explain_text(r, stdout);
	else
		replay_print_text(r, stdout);
	if (rc < 0)
		rc = CLI_OK;
out:
	replay_free(r);
	return rc;
}

int cmd_validate(int argc, char **argv)
{
	struct rule rules[RULE_MAX_LIST];
	struct replay_opts o;
	struct validate_opts vo;
	struct progress prog;
	struct replay *r = NULL;
	bool stopped;
	int n, rc, ok;

	n = cli_parse(&cmd_validate_doc, argc, argv, NULL, &rc);
	if (n < 0)
		return rc;
	if (!replay_arg_rule)
		return cli_usage_error("validate", "--rule R is required");
	if (!n)
		return cli_usage_error("validate", "no audit file given (see --help)");
	if ((rc = replay_cli_opts("validate", replay_arg_rule, rules, &o)) >= 0)
		return rc;
	if (o.n_rules != 1)
		return cli_usage_error("validate", "--rule takes one rule (a+b combines)");
	o.keep_sites = true;
	progress_init(&prog, "validate", "merges", progress_input_size((const char *const *)argv, (size_t)n));
	o.progress = prog.on ? &prog : NULL;   /* off: nothing counted either */
	r = replay_new(&o);
	if (!r)
		return cli_usage_error("validate", "out of memory");
	/* A file that cannot be read (or was cut short) is bad input, exit 2 and
	 * no verdict: CI must be able to tell a typo from an unsafe guard. */
	rc = replay_cli_run("validate", r, n, argv, &stopped);
	progress_release(&prog);
	if (rc == CLI_USAGE && (stopped || replay_n_unreadable(r)))
		goto out;
	vo.max_forgone_pct = replay_arg_max_forgone;
	/* A cut gzip fails the gate in the report, and is still exit 2. */
	ok = validate_report(r, 0, &vo, replay_arg_json, stdout);
	rc = replay_n_truncated(r) || replay_n_no_audit(r) ? CLI_USAGE : ok ? CLI_OK : CLI_FAIL;
out:
	replay_free(r);
	return rc;
}
