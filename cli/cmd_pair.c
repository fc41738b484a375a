/*
 * cmd_pair.c - `ttaudit pair`: bench records joined with the audits of the
 * server that ran them (pair/pair.h).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pair.h"

static const char pair_usage[] =
	"usage: ttaudit pair --run RUN.jsonl... --capture CAP.jsonl... [--json]\n"
	"                    [--max-pos N] [--slack S] [--pid PID]\n"
	"\n"
	"Joins bench run records with captures (or plain audits) by request id,\n"
	"else by time window and pid. Per run: the arm verdict from the recorded\n"
	"merge decisions, merges, substitutions made by evidence class, the guard's\n"
	"fired / prevented / forgone, and each correctness failure matched to the\n"
	"substitutions of its request: explained by a substitution at step S (at the\n"
	"first divergent token), possible, or unexplained. Substitutions whose\n"
	"request produced correct output are listed too.\n"
	"\n"
	"  --run FILE       bench records (repeatable)\n"
	"  --capture FILE   capture file or audit JSONL (repeatable; --audit too)\n"
	"  --max-pos N      position bound for the bound rule (default config.max_model_len)\n"
	"  --slack S        seconds a merge may lie outside a run's window (default 2)\n"
	"  --pid PID        only the capture records of this process (a capture of several)\n"
	"  --json           the report as one JSON object\n"
	"\n"
	"exit: 0 every run clean (no substitution made, no failing request, arm not\n"
	"contradicted), 1 otherwise, 2 bad usage or input\n";

enum { OPT_RUN = 256, OPT_CAPTURE, OPT_MAX_POS, OPT_SLACK, OPT_PID, OPT_JSON, OPT_HELP };

static const struct option pair_options[] = {
	{ "run", required_argument, NULL, OPT_RUN },
	{ "capture", required_argument, NULL, OPT_CAPTURE },
	{ "audit", required_argument, NULL, OPT_CAPTURE },
	{ "max-pos", required_argument, NULL, OPT_MAX_POS },
	{ "slack", required_argument, NULL, OPT_SLACK },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

int cmd_pair(int argc, char **argv)
{
	const char *runs[PAIR_MAX_FILES], *audits[PAIR_MAX_FILES];
	struct pair_opts po = { .slack_s = -1 };
	struct status_info si = { 0 };
	struct pair *p = NULL;
	bool json = false;
	enum status st;
	char *end;
	long long v;
	size_t i;
	int o, rc = CLI_OK;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", pair_options, NULL)) != -1) {
		switch (o) {
		case OPT_RUN:
			if (po.n_runs >= PAIR_MAX_FILES)
				return cli_usage_error("pair", "more than %d --run files", PAIR_MAX_FILES);
			runs[po.n_runs++] = optarg;
			break;
		case OPT_CAPTURE:
			if (po.n_audits >= PAIR_MAX_FILES)
				return cli_usage_error("pair", "more than %d --capture files", PAIR_MAX_FILES);
			audits[po.n_audits++] = optarg;
			break;
		case OPT_MAX_POS:
			v = cli_parse_count(optarg);
			if (v <= 0)
				return cli_usage_error("pair", "--max-pos '%s': want a positive integer", optarg);
			po.max_pos = v;
			break;
		case OPT_PID:
			v = cli_parse_count(optarg);
			if (v <= 0)
				return cli_usage_error("pair", "--pid '%s': want a process id", optarg);
			po.pid = v;
			break;
		case OPT_SLACK:
			po.slack_s = strtod(optarg, &end);
			if (*end || end == optarg || po.slack_s < 0)
				return cli_usage_error("pair", "--slack '%s': want seconds >= 0", optarg);
			break;
		case OPT_JSON: json = true; break;
		case OPT_HELP: fputs(pair_usage, stdout); return CLI_OK;
		default:
			return cli_usage_error("pair", "unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("pair", "unexpected argument '%s' (files go after --run or --capture)",
				       argv[optind]);
	if (!po.n_runs)
		return cli_usage_error("pair", "no --run file (see --help)");
	if (!po.n_audits)
		return cli_usage_error("pair", "no --capture file: nothing to pair the runs with");
	po.runs = runs;
	po.audits = audits;
	st = pair_build(&po, &p, &si);
	if (st) {
		cli_report_status("pair", st, &si);
		return CLI_USAGE;
	}
	if (json)
		pair_print_json(p, stdout);
	else
		pair_print_text(p, stdout);
	for (i = 0; i < pair_n_runs(p); i++) {
		const struct pair_run *r = pair_run_at(p, i);

		if (r->subst || r->n_failing || !strcmp(r->arm_verdict, "contradicted"))
			rc = CLI_FAIL;
	}
	pair_free(p);
	return rc;
}
