/*
 * cmd_replay.c - `ttaudit replay` and `ttaudit validate`: thin wrappers over
 * replay/ that parse options, feed files and print.
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "replay.h"
#include "validate.h"

#define LIMITS_USAGE \
	"  --max-line B     longest line accepted (default 1 MiB, 64 B to 1 GiB)\n" \
	"  --max-depth N    JSON nesting accepted (default 64, up to 4096)\n" \
	"  --max-slots N    entries of an integer array, the widest batch (default 4096,\n" \
	"                   up to 65536)\n" \
	"  --jobs N         read N files at once (default 1); the report is the same\n" \
	"  --tree           read every line through the full JSON tree (the reference\n" \
	"                   path the fast scanner is held to; slower)\n"

static const char replay_usage[] =
	"usage: ttaudit replay [--rules LIST] [--max-pos N] [--json] [--strict]\n"
	"                      [--explain STEP] [--allow-truncated] [--jobs N]\n"
	"                      [--max-line BYTES] [--max-depth N] [--max-slots N] FILE...\n"
	"\n"
	"Replays merge audits (plain JSONL, capture files, or both; '-' is stdin,\n"
	"gzip is read as is) against guard rules and counts, per rule: merges,\n"
	"taken, substitutions, unverified, prevented, forgone, fired, skipped,\n"
	"shape_fallback; garbage positions; and the arm the recorded decisions\n"
	"are consistent with, per server process when a capture holds several.\n"
	"A file given twice (or the same content twice) is counted once.\n"
	"\n"
	"  --rules LIST     comma-separated rules, each a base rule or a+b\n"
	"                   (bare, prefilled, batch, lifetime, stamp, bound; default all six)\n"
	"  --max-pos N      positions >= N are garbage; wins over config.max_model_len\n"
	"  --json           the same report as one JSON object\n"
	"  --strict         stop at the first malformed line (exit 2)\n"
	"  --explain STEP   describe the merge at STEP slot by slot\n"
	"  --allow-truncated  a gzip file cut short is counted as far as it goes, exit 0\n"
	"                   (without it: exit 2 after the report)\n"
	LIMITS_USAGE;

static const char validate_usage[] =
	"usage: ttaudit validate --rule R [--max-forgone-pct P] [--max-pos N] [--json]\n"
	"                        [--strict] [--jobs N] [--max-line BYTES] [--max-depth N]\n"
	"                        [--max-slots N] FILE...\n"
	"\n"
	"The pre-deployment gate: exit 0 when rule R lets no substitution through\n"
	"on any file and is evaluable on every file; exit 1 naming each failing\n"
	"file, step and slot otherwise; exit 2 when a file is a truncated gzip.\n"
	"The cost (forgone, fired) is always printed.\n"
	"\n"
	LIMITS_USAGE;

enum { OPT_RULES = 256, OPT_MAX_POS, OPT_JSON, OPT_STRICT, OPT_EXPLAIN, OPT_MAX_LINE,
       OPT_RULE, OPT_MAX_FORGONE, OPT_HELP, OPT_MAX_DEPTH, OPT_MAX_SLOTS, OPT_JOBS, OPT_TREE,
       OPT_ALLOW_TRUNCATED };

static const struct option replay_options[] = {
	{ "rules", required_argument, NULL, OPT_RULES },
	{ "rule", required_argument, NULL, OPT_RULE },
	{ "max-pos", required_argument, NULL, OPT_MAX_POS },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "strict", no_argument, NULL, OPT_STRICT },
	{ "explain", required_argument, NULL, OPT_EXPLAIN },
	{ "max-line", required_argument, NULL, OPT_MAX_LINE },
	{ "max-forgone-pct", required_argument, NULL, OPT_MAX_FORGONE },
	{ "max-depth", required_argument, NULL, OPT_MAX_DEPTH },
	{ "max-slots", required_argument, NULL, OPT_MAX_SLOTS },
	{ "jobs", required_argument, NULL, OPT_JOBS },
	{ "tree", no_argument, NULL, OPT_TREE },
	{ "allow-truncated", no_argument, NULL, OPT_ALLOW_TRUNCATED },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* What both commands share: options, then the files replayed. */
struct replay_cli {
	const char *cmd;
	struct rule rules[RULE_MAX_LIST];
	struct replay_opts opts;
	bool json;
	const char *rule;          /* validate */
	double max_forgone_pct;
	unsigned jobs;
	bool allow_truncated;
};

/* Returns -1 to go on, or an exit code. */
static int replay_cli_parse(struct replay_cli *c, int argc, char **argv, const char *usage)
{
	struct status_info si;
	const char *rules = NULL;
	long long v;
	int o;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", replay_options, NULL)) != -1) {
		switch (o) {
		case OPT_RULES: rules = optarg; break;
		case OPT_RULE: c->rule = optarg; break;
		case OPT_JSON: c->json = true; break;
		case OPT_STRICT: c->opts.strict = true; break;
		case OPT_MAX_POS:
			if ((v = cli_parse_count(optarg)) <= 0)
				return cli_usage_error(c->cmd, "--max-pos wants a positive integer, not '%s'", optarg);
			c->opts.max_pos = v;
			break;
		case OPT_EXPLAIN: {
			char *end;
			c->opts.explain = true;
			c->opts.explain_step = strtoll(optarg, &end, 10);
			if (!*optarg || *end)
				return cli_usage_error(c->cmd, "--explain wants a step number, not '%s'", optarg);
			break;
		}
		case OPT_MAX_LINE:
			if ((v = cli_parse_count(optarg)) < 64 || v > (1LL << 30))
				return cli_usage_error(c->cmd, "--max-line wants 64 to 2^30 bytes, not '%s'", optarg);
			c->opts.max_line = (size_t)v;
			break;
		case OPT_MAX_DEPTH:
			if ((v = cli_parse_count(optarg)) < 1 || v > JDOC_DEPTH_LIMIT)
				return cli_usage_error(c->cmd, "--max-depth wants 1 to %d, not '%s'",
						       JDOC_DEPTH_LIMIT, optarg);
			c->opts.max_depth = (unsigned)v;
			break;
		case OPT_MAX_SLOTS:
			if ((v = cli_parse_count(optarg)) < 1 || v > EVENT_SLOTS_LIMIT)
				return cli_usage_error(c->cmd, "--max-slots wants 1 to %d, not '%s'",
						       EVENT_SLOTS_LIMIT, optarg);
			c->opts.max_slots = (uint32_t)v;
			break;
		case OPT_JOBS:
			if ((v = cli_parse_count(optarg)) < 1 || v > REPLAY_MAX_JOBS)
				return cli_usage_error(c->cmd, "--jobs wants 1 to %d, not '%s'",
						       REPLAY_MAX_JOBS, optarg);
			c->jobs = (unsigned)v;
			break;
		case OPT_TREE: c->opts.tree = true; break;
		case OPT_ALLOW_TRUNCATED: c->allow_truncated = true; break;
		case OPT_MAX_FORGONE: {
			char *end;
			c->max_forgone_pct = strtod(optarg, &end);
			if (!*optarg || *end || c->max_forgone_pct < 0 || c->max_forgone_pct > 100)
				return cli_usage_error(c->cmd, "--max-forgone-pct wants 0 to 100, not '%s'", optarg);
			break;
		}
		case OPT_HELP:
			fputs(usage, stdout);
			return CLI_OK;
		default:
			fputs(usage, stderr);
			return cli_usage_error(c->cmd, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc) {
		fputs(usage, stderr);
		return cli_usage_error(c->cmd, "no audit file given");
	}
	if (c->rule && rules)
		return cli_usage_error(c->cmd, "--rule and --rules do not go together");
	if (c->rule)
		rules = c->rule;
	if (rules) {
		if (rule_list_parse(rules, c->rules, RULE_MAX_LIST, &c->opts.n_rules, &si)) {
			cli_report_status(c->cmd, STATUS_USAGE, &si);
			return CLI_USAGE;
		}
	} else {
		c->opts.n_rules = rule_list_default(c->rules, RULE_MAX_LIST);
	}
	c->opts.rules = c->rules;
	return -1;
}

static void replay_cli_status(void *ctx, const char *path, enum status st,
			      const struct status_info *si)
{
	(void)path;
	cli_report_status(((struct replay_cli *)ctx)->cmd, st, si);
}

/*
 * Feeds every file; returns -1 when all were read, CLI_USAGE when a file could
 * not be read (or, unless allowed, was cut short), or when --strict stopped.
 */
static int replay_cli_run(struct replay_cli *c, struct replay *r, int argc, char **argv)
{
	enum status st;

	st = replay_add_files(r, (const char *const *)argv + optind, (size_t)(argc - optind),
			      c->jobs, replay_cli_status, c);
	if (st == STATUS_NOMEM) {
		cli_usage_error(c->cmd, "out of memory");
		return CLI_USAGE;
	}
	if (st)
		return CLI_USAGE;   /* --strict */
	if (replay_n_unreadable(r) || (replay_n_truncated(r) && !c->allow_truncated))
		return CLI_USAGE;
	return -1;
}

int cmd_replay(int argc, char **argv)
{
	struct replay_cli c = { .cmd = "replay", .jobs = 1 };
	struct replay *r = NULL;
	int rc;

	if ((rc = replay_cli_parse(&c, argc, argv, replay_usage)) >= 0)
		return rc;
	if (c.rule)
		return cli_usage_error(c.cmd, "--rule is for validate; use --rules");
	r = replay_new(&c.opts);
	if (!r)
		return cli_usage_error(c.cmd, "out of memory");
	rc = replay_cli_run(&c, r, argc, argv);
	if (rc == CLI_USAGE && c.opts.strict)
		goto out;
	if (c.opts.explain && !replay_n_explained(r)) {
		rc = cli_usage_error(c.cmd, "no merge event at step %lld", (long long)c.opts.explain_step);
		goto out;
	}
	if (c.json) {
		replay_print_json(r, stdout);
	} else if (c.opts.explain) {
		replay_print_explain_text(r, stdout);
	} else {
		replay_print_text(r, stdout);
	}
	if (rc < 0)
		rc = CLI_OK;
out:
	replay_free(r);
	return rc;
}

int cmd_validate(int argc, char **argv)
{
	struct replay_cli c = { .cmd = "validate", .max_forgone_pct = -1, .jobs = 1 };
	struct validate_opts vo;
	struct replay *r = NULL;
	int rc, ok;

	if ((rc = replay_cli_parse(&c, argc, argv, validate_usage)) >= 0)
		return rc;
	if (!c.rule)
		return cli_usage_error(c.cmd, "--rule R is required");
	if (c.allow_truncated)
		return cli_usage_error(c.cmd, "--allow-truncated is for replay: the gate never passes a "
				       "corpus it could not read");
	if (c.opts.n_rules != 1)
		return cli_usage_error(c.cmd, "--rule takes one rule (a+b combines)");
	if (c.opts.explain)
		return cli_usage_error(c.cmd, "--explain is for replay");
	c.opts.keep_sites = true;
	r = replay_new(&c.opts);
	if (!r)
		return cli_usage_error(c.cmd, "out of memory");
	rc = replay_cli_run(&c, r, argc, argv);
	if (rc == CLI_USAGE && c.opts.strict)
		goto out;
	vo.max_forgone_pct = c.max_forgone_pct;
	/* an unreadable file fails the gate (it is in the report) rather than
	 * being a usage error: the corpus was not fully checked */
	ok = validate_report(r, 0, &vo, c.json, stdout);
	rc = ok ? CLI_OK : CLI_FAIL;
	if (replay_n_truncated(r))
		rc = CLI_USAGE;
out:
	replay_free(r);
	return rc;
}
