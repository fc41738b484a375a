/*
 * cmd_pair.c - `ttaudit pair`: bench records joined with the audits of the
 * server that ran them (pair/pair.h).
 */
#include <stdint.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "base/opt.h"
#include "pair/pair.h"
#include "pair/pairreport.h"

static const char *pair_runs[PAIR_MAX_FILES], *pair_audits[PAIR_MAX_FILES];
static struct pair_opts pair_o = { .slack_s = -1 };
static long long pair_max_pos, pair_pid;
static bool pair_json;
/* The list the files after --run or --capture go to. */
static enum { PAIR_TO_NONE, PAIR_TO_RUNS, PAIR_TO_AUDITS } pair_to;

static int pair_add(const char *file, char *err, size_t n)
{
	if (pair_to == PAIR_TO_RUNS) {
		if (pair_o.n_runs >= PAIR_MAX_FILES) {
			snprintf(err, n, "more than %d run files", PAIR_MAX_FILES);
			return -1;
		}
		pair_runs[pair_o.n_runs++] = file;
		return 0;
	}
	if (pair_to == PAIR_TO_AUDITS) {
		if (pair_o.n_audits >= PAIR_MAX_FILES) {
			snprintf(err, n, "more than %d capture files", PAIR_MAX_FILES);
			return -1;
		}
		pair_audits[pair_o.n_audits++] = file;
		return 0;
	}
	snprintf(err, n, "'%s': say what it is: --run FILE... or --capture FILE...", file);
	return -1;
}

static int pair_opt_run(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	pair_to = PAIR_TO_RUNS;
	return pair_add(arg, err, n);
}

static int pair_opt_capture(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	pair_to = PAIR_TO_AUDITS;
	return pair_add(arg, err, n);
}

static const char *const pair_usage[] = {
	"pair --run RUN.jsonl... --capture CAP.jsonl... [--baseline P] [--confidence C] [--json] "
	"[--max-pos N] [--slack S] [--pid PID]",
	NULL,
};

static const struct opt pair_opts[] = {
	OPT_CALL(0, "run", "FILE...", pair_opt_run, "bench records; the files after it, up to the next option, too"),
	OPT_CALL(0, "capture", "FILE...", pair_opt_capture,
		 "capture files or audit JSONL; the files after it, up to the next option, too"),
	OPT_CALL(0, "audit", "FILE...", pair_opt_capture, "the same as --capture"),
	OPT_INT(0, "max-pos", &pair_max_pos, "N", 1, INT64_MAX,
		"position bound for the bound rule (default config.max_model_len)"),
	OPT_NUM(0, "slack", &pair_o.slack_s, "S", 0, 1e9, "seconds a merge may lie outside a run's window (default 2)"),
	OPT_INT(0, "pid", &pair_pid, "PID", 1, 4194304, "only the capture records of this process (a capture of several)"),
	OPT_NUM(0, "baseline", &pair_o.baseline, "P", 1e-12, 0.999999,
		"the failure rate per request a clean run must rule out (0.0048 for 0.48%): 0 failing "
		"of too few requests is INCONCLUSIVE, with the number that would do"),
	OPT_NUM(0, "confidence", &pair_o.confidence, "C", 0.5, 0.999999,
		"two-sided confidence of every interval and of the baseline check (default 0.95)"),
	OPT_BOOL(0, "json", &pair_json, "the report as one JSON object"),
	OPT_END(),
};

const struct cmd_doc cmd_pair_doc = {
	.name = "pair",
	.summary = "join bench runs with their audits, attribute wrong outputs to substitutions",
	.usage = pair_usage,
	.description = "Joins bench run records with captures (or plain audits) by request id, else by time "
		"window and pid. Per run: the arm verdict from the recorded merge decisions, merges, "
		"substitutions made by evidence class, the guard's fired / prevented / forgone, and each "
		"correctness failure matched to the substitutions of its request: explained by a "
		"substitution at step S (at the first divergent token), possible, or unexplained. "
		"Substitutions whose request produced correct output are listed too.\n"
		"\n"
		"Every rate comes with its Clopper-Pearson interval (failing requests of the requests "
		"judged; merges with a substitution of the merges paired), and 0 of N is said as the "
		"rates it rules out. Each run has a verdict: FAIL (a substitution made, a failing "
		"request, the arm contradicted), INCONCLUSIVE (nothing failed, but no audit was paired, "
		"no decisions were recorded, a take could not be judged, or 0 failing of N cannot rule "
		"out --baseline: the number of requests that would is given), or PASS.",
	.opts = pair_opts,
	.flags = 0,
	.exit_notes = "a run did not PASS: it is not clean (a substitution made, a failing request, the "
		"arm contradicted) or INCONCLUSIVE (too little evidence to call it clean)",
	.operand = pair_add,
};

int cmd_pair(int argc, char **argv)
{
	struct pair_opts po;
	struct progress prog;
	struct status_info si = { 0 };
	struct pair *p = NULL;
	enum status st;
	size_t i;
	int n, rc = CLI_OK;

	n = cli_parse(&cmd_pair_doc, argc, argv, NULL, &rc);
	if (n < 0)
		return rc;
	po = pair_o;
	po.max_pos = pair_max_pos;
	po.pid = pair_pid;
	if (!po.n_runs)
		return cli_usage_error("pair", "no --run file (see --help)");
	if (!po.n_audits)
		return cli_usage_error("pair", "no --capture file: nothing to pair the runs with");
	po.runs = pair_runs;
	po.audits = pair_audits;
	progress_init(&prog, "pair", "merges", progress_input_size(po.audits, po.n_audits));
	po.progress = &prog;
	st = pair_build(&po, &p, &si);
	progress_release(&prog);
	if (st) {
		cli_report_status("pair", st, &si);
		return CLI_USAGE;
	}
	if (pair_json)
		pairreport_json(p, stdout);
	else
		pairreport_text(p, stdout);
	for (i = 0; i < pair_n_runs(p); i++)
		if (pair_run_at(p, i)->verdict != PAIR_PASS)
			rc = CLI_FAIL;
	pair_free(p);
	return rc;
}
