/*
 * ttaudit arm - confirm the engaged guard arm from the server's own output.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "arms.h"
#include "cli.h"

static void arm_usage(FILE *f)
{
	fprintf(f,
		"usage: ttaudit arm --spec ARMS.json --arm NAME [--url URL] [--log FILE]\n"
		"                   [--capture FILE] [--audit FILE] [--timeout S] [--json]\n"
		"       ttaudit arm --spec ARMS.json --arm NAME --print-env\n"
		"       ttaudit arm --spec ARMS.json --list\n"
		"  --url URL       server base URL (metrics and models evidence)\n"
		"  --log FILE      engine log, plain text (log evidence; MERGE_AUDIT lines feed audit)\n"
		"  --capture FILE  capture JSONL (banner/line records, start env, audit records)\n"
		"  --audit FILE    audit JSONL or capture for audit evidence\n"
		"  --print-env     print the arm's launch environment as NAME=VALUE lines\n"
		"  --list          list the arms the spec declares\n"
		"spec format: docs/arms.md\n"
		"exit: 0 CONFIRMED, 1 FAIL (an item absent, forbidden, or a source unreachable), 2 bad usage\n");
}

int cmd_arm(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "spec", required_argument, NULL, 's' },
		{ "arm", required_argument, NULL, 'a' },
		{ "url", required_argument, NULL, 'u' },
		{ "log", required_argument, NULL, 'l' },
		{ "capture", required_argument, NULL, 'c' },
		{ "audit", required_argument, NULL, 'A' },
		{ "timeout", required_argument, NULL, 't' },
		{ "print-env", no_argument, NULL, 'e' },
		{ "list", no_argument, NULL, 'L' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *spec_path = NULL, *arm = NULL;
	struct arm_sources src = { 0 };
	struct arm_spec *spec = NULL;
	struct arm_result *r = NULL;
	struct status_info si = { 0 };
	int c, json = 0, print_env = 0, list = 0, rc = CLI_USAGE;
	enum status st;
	char *end, *js;
	size_t i;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': spec_path = optarg; break;
		case 'a': arm = optarg; break;
		case 'u': src.url = optarg; break;
		case 'l': src.log = optarg; break;
		case 'c': src.capture = optarg; break;
		case 'A': src.audit = optarg; break;
		case 't':
			src.timeout = strtod(optarg, &end);
			if (end == optarg || *end || src.timeout <= 0)
				return cli_usage_error("arm", "--timeout '%s' is not a positive number of seconds", optarg);
			break;
		case 'e': print_env = 1; break;
		case 'L': list = 1; break;
		case 'j': json = 1; break;
		case 'h': arm_usage(stdout); return CLI_OK;
		default: arm_usage(stderr); return CLI_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("arm", "unexpected argument '%s'", argv[optind]);
	if (!spec_path)
		return cli_usage_error("arm", "--spec is required");
	if (!arm && !list)
		return cli_usage_error("arm", "--arm is required");
	st = arm_spec_load(spec_path, &spec, &si);
	if (st) {
		cli_report_status("arm", st, &si);
		return CLI_USAGE;
	}
	if (list) {
		for (i = 0; i < arm_spec_n_arms(spec); i++)
			printf("%s\n", arm_spec_arm(spec, i));
		rc = CLI_OK;
		goto out;
	}
	if (!arm_spec_has(spec, arm)) {
		rc = cli_usage_error("arm", "%s: no arm '%s' (--list shows them)", spec_path, arm);
		goto out;
	}
	if (print_env) {
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
	if (json) {
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
