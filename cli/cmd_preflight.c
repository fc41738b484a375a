/*
 * ttaudit preflight - host checks before a run; prints what a person should
 * run, never resets a board or stops anything itself.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/opt.h"
#include "host/preflight.h"

static struct preflight_opts preflight_o;
static bool preflight_json, preflight_no_docker;

static const char *const preflight_usage[] = { "preflight [options]", NULL };

static const struct opt preflight_opts[] = {
	OPT_NUM(0, "mem-floor", &preflight_o.mem_floor_gib, "GIB", 1e-3, 1e6,
		"fail when MemAvailable is below GIB (default 4)"),
	OPT_STRING(0, "record", &preflight_o.record, "FILE", "append a memory record (JSONL) to FILE"),
	OPT_STRING(0, "phase", &preflight_o.phase, "before|after",
		   "with --record: 'after' compares with the last 'before' record"),
	OPT_NUM(0, "leak-tolerance", &preflight_o.leak_tolerance_gib, "GIB", 1e-3, 1e6,
		"memory an 'after' record may have lost (default 1)"),
	OPT_STRING(0, "lock", &preflight_o.lock_dir, "DIR", "check the host lock directory DIR"),
	OPT_STRING(0, "device-glob", &preflight_o.device_glob, "GLOB",
		   "Tenstorrent device nodes (default /dev/tenstorrent/*)"),
	OPT_STRING(0, "topology", &preflight_o.topology_xml, "FILE.xml", "read PCI devices from an hwloc XML export"),
	OPT_STRING(0, "root", &preflight_o.root, "DIR",
		   "read proc/meminfo, proc/*/fd and the device glob under DIR (fixtures)"),
	OPT_STRING(0, "docker", &preflight_o.docker, "CMD",
		   "docker CLI to ask for running containers (default docker)"),
	OPT_BOOL(0, "no-docker", &preflight_no_docker, "skip the container check"),
	OPT_BOOL(0, "vendor-neutral", &preflight_o.skip_tenstorrent, "skip the Tenstorrent checks"),
	OPT_BOOL(0, "json", &preflight_json, "the report as JSON"),
	OPT_END(),
};

const struct cmd_doc cmd_preflight_doc = {
	.name = "preflight",
	.summary = "check the host before a run: memory floor, lock, devices, holders",
	.usage = preflight_usage,
	.description = "Checks the host before a run and prints what a person should do; it never resets a "
		"board and never stops a container or a process. Vendor-neutral checks first "
		"(MemAvailable floor, memory lost over a run with --record, the host lock, running "
		"containers), then Tenstorrent ones (PCI devices of vendor 0x1e52 with their NUMA "
		"nodes, /dev/tenstorrent/*, processes holding a device open).",
	.opts = preflight_opts,
	.flags = 0,
	.exit_notes = "a check failed",
};

int cmd_preflight(int argc, char **argv)
{
	struct preflight_opts o;
	struct preflight_report *r = NULL;
	struct status_info si = { 0 };
	enum status st;
	int n, rc;
	char *js;

	n = cli_parse(&cmd_preflight_doc, argc, argv, CLI_NO_OPERANDS, &rc);
	if (n < 0)
		return rc;
	o = preflight_o;
	if (preflight_no_docker)
		o.docker = "";
	if (o.phase && !o.record)
		return cli_usage_error("preflight", "--phase needs --record FILE");
	if (o.phase && strcmp(o.phase, "before") && strcmp(o.phase, "after"))
		return cli_usage_error("preflight", "--phase is 'before' or 'after', not '%s'", o.phase);
	r = malloc(sizeof(*r));
	if (!r)
		return cli_usage_error("preflight", "out of memory");
	st = preflight_run(&o, r, &si);
	if (st) {
		cli_report_status("preflight", st, &si);
		free(r);
		return CLI_USAGE;
	}
	if (preflight_json) {
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
