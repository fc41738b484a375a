/*
 * cmd_report.c - `ttaudit report`: SVG figures of an audit or of bench
 * records (report/svg.h).
 */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "jsonw.h"
#include "pair.h"
#include "svg.h"

static const char report_usage[] =
	"usage: ttaudit report timeline AUDIT [--rule R] [--from STEP] [--to STEP] [-o OUT.svg] [--json]\n"
	"       ttaudit report latency RUN.jsonl... [-o OUT.svg] [--json]\n"
	"       ttaudit report makespan RUN.jsonl... [-o OUT.svg] [--json]\n"
	"\n"
	"SVG figures, no plotting dependency (open them in a browser):\n"
	"  timeline  slots x merge steps of an audit or capture: slots taken from the\n"
	"            device buffer, guard rejects (a bare match refused) and\n"
	"            substitutions (taken and stale); decisions are the recorded\n"
	"            `taken`, else those of --rule (default bare)\n"
	"  latency   TTFT CDF of the measured requests, one line per arm\n"
	"  makespan  makespan of every measured run, per arm\n"
	"\n"
	"  -o FILE   the SVG (default: stdout)\n"
	"  --json    print what was drawn as JSON on stdout (the SVG then needs -o)\n";

enum { OPT_RULE = 256, OPT_FROM, OPT_TO, OPT_JSON, OPT_HELP };

static const struct option report_options[] = {
	{ "rule", required_argument, NULL, OPT_RULE },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "to", required_argument, NULL, OPT_TO },
	{ "output", required_argument, NULL, 'o' },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

int cmd_report(int argc, char **argv)
{
	struct svg_timeline_opts to = { .to_step = -1 };
	struct pair_series ser[SVG_MAX_SERIES];
	struct svg_series s[SVG_MAX_SERIES];
	struct status_info si = { 0 };
	const char *out = NULL, *what;
	bool json = false;
	enum status st = STATUS_OK;
	size_t n = 0, i;
	long long v;
	FILE *f = stdout;
	int o, rc = CLI_OK;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "o:", report_options, NULL)) != -1) {
		switch (o) {
		case OPT_RULE: to.rule = optarg; break;
		case OPT_FROM: case OPT_TO:
			v = cli_parse_count(optarg);
			if (v < 0)
				return cli_usage_error("report", "%s '%s': want a step number", argv[optind - 1], optarg);
			if (o == OPT_FROM)
				to.from_step = v;
			else
				to.to_step = v;
			break;
		case 'o': out = optarg; break;
		case OPT_JSON: json = true; break;
		case OPT_HELP: fputs(report_usage, stdout); return CLI_OK;
		default:
			return cli_usage_error("report", "unknown option or missing value '%s' (see --help)",
					       argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("report", "which figure: timeline, latency or makespan (see --help)");
	what = argv[optind++];
	if (strcmp(what, "timeline") && strcmp(what, "latency") && strcmp(what, "makespan"))
		return cli_usage_error("report", "'%s' is not a figure: timeline, latency or makespan", what);
	if (optind >= argc)
		return cli_usage_error("report", "%s: no input file", what);
	if (!strcmp(what, "timeline") && argc - optind != 1)
		return cli_usage_error("report", "timeline: one audit file");
	if (json && !out)
		return cli_usage_error("report", "--json prints the summary on stdout: give the SVG a file with -o");
	if (out && !(f = fopen(out, "we")))
		return cli_usage_error("report", "%s: cannot create", out);
	if (!strcmp(what, "timeline")) {
		struct svg_timeline_stats ts;

		st = svg_timeline(f, argv[optind], &to, &ts, &si);
		if (!st && json) {
			struct jsonw w;

			jsonw_init(&w, stdout);
			jsonw_obj(&w);
			jsonw_kstr(&w, "figure", "timeline");
			jsonw_kstr(&w, "audit", argv[optind]);
			jsonw_kstr(&w, "svg", out);
			jsonw_kuint(&w, "merges", ts.merges);
			jsonw_kuint(&w, "drawn", ts.drawn);
			jsonw_kuint(&w, "slots", ts.slots);
			jsonw_kuint(&w, "taken", ts.taken);
			jsonw_kuint(&w, "rejects", ts.rejects);
			jsonw_kuint(&w, "substitutions", ts.substs);
			jsonw_kuint(&w, "malformed", ts.malformed);
			jsonw_obj_end(&w);
			fputc('\n', stdout);
		} else if (!st && out) {
			printf("%s: %llu merges, %llu substitutions, %llu guard rejects, %llu taken\n", out,
			       (unsigned long long)ts.merges, (unsigned long long)ts.substs,
			       (unsigned long long)ts.rejects, (unsigned long long)ts.taken);
		}
	} else {
		st = pair_series_read((const char *const *)argv + optind, (size_t)(argc - optind), ser,
				      SVG_MAX_SERIES, &n, &si);
		if (!st) {
			for (i = 0; i < n; i++) {
				s[i].name = ser[i].name;
				s[i].v = !strcmp(what, "latency") ? ser[i].ttft : ser[i].makespan;
				s[i].n = !strcmp(what, "latency") ? ser[i].n_ttft : ser[i].n_makespan;
			}
			if (!strcmp(what, "latency"))
				svg_cdf(f, "TTFT of the measured requests, per arm", "TTFT (s)", s, n);
			else
				svg_repeats(f, "makespan per measured run, per arm", "makespan (s)", s, n);
			if (json) {
				struct jsonw w;

				jsonw_init(&w, stdout);
				jsonw_obj(&w);
				jsonw_kstr(&w, "figure", what);
				jsonw_kstr(&w, "svg", out);
				jsonw_key(&w, "series");
				jsonw_arr(&w);
				for (i = 0; i < n; i++) {
					jsonw_obj(&w);
					jsonw_kstr(&w, "name", s[i].name);
					jsonw_kuint(&w, "points", s[i].n);
					jsonw_obj_end(&w);
				}
				jsonw_arr_end(&w);
				jsonw_obj_end(&w);
				fputc('\n', stdout);
			}
			pair_series_release(ser, n);
		}
	}
	if (out && fclose(f) && !st) {
		fprintf(stderr, "ttaudit report: %s: write failed\n", out);
		return CLI_USAGE;
	}
	if (st) {
		cli_report_status("report", st, &si);
		rc = CLI_USAGE;
	}
	return rc;
}
