/*
 * ttaudit preflight - host checks before a run; prints what a person should
 * run, never resets a board or stops anything itself.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "preflight.h"

static void preflight_usage(FILE *f)
{
	fprintf(f,
		"usage: ttaudit preflight [options]\n"
		"  --mem-floor GIB      fail when MemAvailable is below GIB (default 4)\n"
		"  --record FILE        append a memory record (JSONL) to FILE\n"
		"  --phase before|after with --record: 'after' compares with the last 'before'\n"
		"  --leak-tolerance GIB memory an 'after' record may have lost (default 1)\n"
		"  --lock DIR           check the host lock directory DIR\n"
		"  --device-glob GLOB   Tenstorrent device nodes (default /dev/tenstorrent/*)\n"
		"  --topology FILE.xml  read PCI devices from an hwloc XML export\n"
		"  --root DIR           read proc/meminfo, proc/*/fd and the device glob under DIR\n"
		"  --docker CMD         docker CLI to ask for running containers (default docker)\n"
		"  --no-docker          skip the container check\n"
		"  --vendor-neutral     skip the Tenstorrent checks\n"
		"  --json               report as JSON\n"
		"exit: 0 every check passed, 1 a check failed, 2 bad usage or input\n");
}

static int preflight_gib_arg(const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	return end != s && !*end && *out >= 0 ? 0 : -1;
}

int cmd_preflight(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "mem-floor", required_argument, NULL, 'm' },
		{ "record", required_argument, NULL, 'r' },
		{ "phase", required_argument, NULL, 'p' },
		{ "leak-tolerance", required_argument, NULL, 'L' },
		{ "lock", required_argument, NULL, 'l' },
		{ "device-glob", required_argument, NULL, 'g' },
		{ "topology", required_argument, NULL, 't' },
		{ "root", required_argument, NULL, 'R' },
		{ "docker", required_argument, NULL, 'd' },
		{ "no-docker", no_argument, NULL, 'D' },
		{ "vendor-neutral", no_argument, NULL, 'V' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct preflight_opts o = { 0 };
	struct preflight_report *r = NULL;
	struct status_info si = { 0 };
	enum status st;
	int c, json = 0, rc;
	char *js;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (preflight_gib_arg(optarg, &o.mem_floor_gib) || o.mem_floor_gib <= 0)
				return cli_usage_error("preflight", "--mem-floor '%s' is not a positive number of GiB", optarg);
			break;
		case 'L':
			if (preflight_gib_arg(optarg, &o.leak_tolerance_gib) || o.leak_tolerance_gib <= 0)
				return cli_usage_error("preflight", "--leak-tolerance '%s' is not a positive number of GiB", optarg);
			break;
		case 'r': o.record = optarg; break;
		case 'p': o.phase = optarg; break;
		case 'l': o.lock_dir = optarg; break;
		case 'g': o.device_glob = optarg; break;
		case 't': o.topology_xml = optarg; break;
		case 'R': o.root = optarg; break;
		case 'd': o.docker = optarg; break;
		case 'D': o.docker = ""; break;
		case 'V': o.skip_tenstorrent = true; break;
		case 'j': json = 1; break;
		case 'h': preflight_usage(stdout); return CLI_OK;
		default: preflight_usage(stderr); return CLI_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("preflight", "unexpected argument '%s'", argv[optind]);
	if (o.phase && !o.record)
		return cli_usage_error("preflight", "--phase needs --record FILE");
	r = malloc(sizeof(*r));
	if (!r)
		return cli_usage_error("preflight", "out of memory");
	st = preflight_run(&o, r, &si);
	if (st) {
		cli_report_status("preflight", st, &si);
		free(r);
		return CLI_USAGE;
	}
	if (json) {
		js = preflight_report_json(r);
		if (js)
			puts(js);
		free(js);
	} else {
		preflight_report_print(r, stdout);
	}
	rc = r->ok ? CLI_OK : CLI_FAIL;
	free(r);
	return rc;
}
