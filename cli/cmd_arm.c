/*
 * ttaudit arm - confirm the engaged guard arm from the server's own output.
 */
#include <stdio.h>
#include <stdlib.h>

#include "probe/arms.h"
#include "cli/cli.h"
#include "base/opt.h"

static const char *arm_spec_path, *arm_name;
static struct arm_sources arm_src;
static bool arm_print_env, arm_list, arm_json;

static const char *const arm_usage[] = {
	"arm --spec ARMS.json --arm NAME [--url URL] [--log FILE] [--capture FILE] [--audit FILE] [--timeout S] [--json]",
	"arm --spec ARMS.json --arm NAME --print-env",
	"arm --spec ARMS.json --list",
	NULL,
};

static const struct opt arm_opts[] = {
	OPT_STRING(0, "spec", &arm_spec_path, "ARMS.json", "the arm spec (format: docs/arms.md)"),
	OPT_STRING(0, "arm", &arm_name, "NAME", "the arm to confirm"),
	OPT_STRING(0, "url", &arm_src.url, "URL", "server base URL (metrics and models evidence)"),
	OPT_STRING(0, "log", &arm_src.log, "FILE", "the server's log, plain text (log evidence; audit lines feed audit evidence)"),
	OPT_STRING(0, "capture", &arm_src.capture, "FILE",
		   "a capture (banner and line records, the environment of the process that wrote the audit, audit records)"),
	OPT_STRING(0, "audit", &arm_src.audit, "FILE", "audit JSONL or capture for audit evidence"),
	OPT_NUM(0, "timeout", &arm_src.timeout, "S", 1e-3, 1e6, "HTTP timeout per request"),
	OPT_BOOL(0, "print-env", &arm_print_env, "print the arm's launch environment as NAME=VALUE lines"),
	OPT_BOOL(0, "list", &arm_list, "list the arms the spec declares"),
	OPT_BOOL(0, "json", &arm_json, "the verdict and every item as JSON"),
	OPT_END(),
};

const struct cmd_doc cmd_arm_doc = {
	.name = "arm",
	.summary = "confirm the engaged guard arm from the server's own output",
	.usage = arm_usage,
	.description =
		"Confirms the arm a server runs from its own output, against a spec that says what "
		"each arm must show (requires: a banner in the log, a metrics label, a /v1/models "
		"field, a variable in the environment of the engine process, merge decisions "
		"consistent with the rule) and must not show (forbids: the other arm's banner). It "
		"fails closed: an absent banner, an empty or unreachable source, or an item whose "
		"source could not have recorded the line (not evaluable) is a FAIL.",
	.opts = arm_opts,
	.exit_notes = "FAIL: an item absent, forbidden, not evaluable, or a source unreachable",
};

int cmd_arm(int argc, char **argv)
{
	const char *spec_path, *arm;
	struct arm_sources src;
	struct arm_spec *spec = NULL;
	struct arm_result *r = NULL;
	struct status_info si = { 0 };
	int n, rc = CLI_USAGE;
	enum status st;
	char *js;
	size_t i;

	n = cli_parse(&cmd_arm_doc, argc, argv, CLI_NO_OPERANDS, &rc);
	if (n < 0)
		return rc;
	spec_path = arm_spec_path;
	arm = arm_name;
	src = arm_src;
	if (!spec_path)
		return cli_usage_error("arm", "--spec is required");
	if (!arm && !arm_list)
		return cli_usage_error("arm", "--arm is required");
	st = arm_spec_load(spec_path, &spec, &si);
	if (st) {
		cli_report_status("arm", st, &si);
		return CLI_USAGE;
	}
	if (arm_list) {
		for (i = 0; i < arm_spec_n_arms(spec); i++)
			printf("%s\n", arm_spec_arm(spec, i));
		rc = CLI_OK;
		goto out;
	}
	if (!arm_spec_has(spec, arm)) {
		rc = cli_usage_error("arm", "%s: no arm '%s' (--list shows them)", spec_path, arm);
		goto out;
	}
	if (arm_print_env) {
		st = arm_spec_print_env(spec, arm, stdout, &si);
		rc = st ? CLI_USAGE : CLI_OK;
		goto out;
	}
	r = malloc(sizeof(*r));
	if (!r) {
		rc = cli_usage_error("arm", "out of memory");
		goto out;
	}
	st = arm_check(spec, arm, &src, r, &si);
	if (st) {
		cli_report_status("arm", st, &si);
		goto out;
	}
	if (arm_json) {
		js = arm_result_json(r);
		if (js)
			puts(js);
		free(js);
	} else {
		arm_result_print(r, stdout);
	}
	rc = r->confirmed ? CLI_OK : CLI_FAIL;
out:
	free(r);
	arm_spec_free(spec);
	return rc;
}
