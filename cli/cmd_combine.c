/*
 * cmd_combine.c - `ttaudit combine`: `ttaudit replay --json` results of
 * separate runs added up into one report (replay_add_report), so a corpus
 * fanned out over a batch system sums to the replay of the whole.
 */
#include "cli/cli.h"
#include "base/opt.h"
#include "replay/replay.h"

static bool cb_json;

static const char *const combine_usage[] = { "combine [--json] REPORT.json...", NULL };

static const struct opt combine_opts[] = {
	OPT_BOOL(0, "json", &cb_json, "the combined report as one JSON object (replay --json's form)"),
	OPT_END(),
};

const struct cmd_doc cmd_combine_doc = {
	.name = "combine",
	.summary = "add up replay --json reports of separate runs into one",
	.usage = combine_usage,
	.description = "Adds the `ttaudit replay --json` reports of separate runs over disjoint parts "
		"of a corpus: counts add, garbage values merge, fingerprints intersect (a rule stays "
		"consistent only where every part says so), per-process rows are kept; the report is "
		"replay's (text, or --json to combine again). Every part must be replayed with the "
		"same --rules. Exit 2 when a part is not such a report, or when a part held a file "
		"that could not be read or held no audit event, as replay would.",
	.opts = combine_opts,
};

int cmd_combine(int argc, char **argv)
{
	struct replay *r = NULL;
	struct status_info si;
	enum status st;
	int n, i, rc = CLI_OK;

	n = cli_parse(&cmd_combine_doc, argc, argv,
		      &(const struct cli_operands){ 1, CLI_ANY, "no report given: the output of ttaudit replay --json",
						    NULL },
		      &rc);
	if (n < 0)
		return rc;
	status_info_clear(&si);
	if ((st = replay_new_from_report(&r, argv[0], &si))) {
		cli_report_status("combine", st, &si);
		return CLI_USAGE;
	}
	for (i = 0; i < n; i++) {
		status_info_clear(&si);
		if ((st = replay_add_report(r, argv[i], &si))) {
			cli_report_status("combine", st, &si);
			rc = CLI_USAGE;
			goto out;
		}
	}
	if (cb_json)
		replay_print_json(r, stdout);
	else
		replay_print_text(r, stdout);
	if (replay_n_unreadable(r) || replay_n_truncated(r) || replay_n_no_audit(r))
		rc = CLI_USAGE;
out:
	replay_free(r);
	return rc;
}
