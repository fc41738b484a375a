/*
 * cmd_report.c - `ttaudit report`: SVG figures of an audit or of bench
 * records (report/svg.h), and the page of an A/B or an audit (report/html.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/jsonw.h"
#include "base/opt.h"
#include "base/outfile.h"
#include "report/html.h"
#include "pair/pair.h"
#include "report/series.h"
#include "report/svg.h"

static struct svg_timeline_opts report_to = { .to_step = -1 };
static long long report_from = 0, report_to_step = -1;
static const char *report_out;
static bool report_json;

#define REPORT_OUT_OPTS \
	OPT_STRING('o', "output", &report_out, "FILE", \
		   "the SVG, written atomically (default: stdout)"), \
	OPT_BOOL(0, "json", &report_json, "print what was drawn as JSON on stdout (the SVG then needs -o)")

static const char *const report_timeline_usage[] = {
	"report timeline AUDIT [--rule R] [--from STEP] [--to STEP] [-o OUT.svg] [--json]", NULL };
static const struct opt report_timeline_opts[] = {
	OPT_STRING(0, "rule", &report_to.rule, "R",
		   "the counterfactual: rule R's decisions on every merge, the recorded `taken` notwithstanding "
		   "(default: the recorded decisions, bare where a merge records none)"),
	OPT_INT(0, "from", &report_from, "STEP", 0, INT64_MAX, "first step drawn"),
	OPT_INT(0, "to", &report_to_step, "STEP", 0, INT64_MAX, "last step drawn"),
	REPORT_OUT_OPTS,
	OPT_END(),
};
static const struct cmd_doc report_timeline_doc = {
	.name = "report timeline",
	.summary = "slots x merge steps of an audit: taken, guard rejects, substitutions",
	.usage = report_timeline_usage,
	.description = "One column per merge, one row per slot: taken from the device buffer (fresh, or "
		"with a staleness nothing can judge), substitutions (taken and stale), and the bare matches "
		"the decisions refused: prevented (stale), forgone (fresh), refused (staleness unknown). "
		"Decisions are the recorded `taken`; with --rule, that rule's on every merge: a candidate "
		"guard replayed on the audit. A density strip bins every merge; step ticks, and the "
		"boundaries where the process changes or the steps restart, run along it.",
	.opts = report_timeline_opts,
};

static const char *const report_latency_usage[] = {
	"report latency RUN.jsonl... [-o OUT.svg] [--json]", NULL };
static const char *const report_makespan_usage[] = {
	"report makespan RUN.jsonl... [-o OUT.svg] [--json]", NULL };
static const struct opt report_series_opts[] = {
	REPORT_OUT_OPTS,
	OPT_END(),
};
static const struct cmd_doc report_latency_doc = {
	.name = "report latency",
	.summary = "TTFT CDF of the measured requests, one line per arm",
	.usage = report_latency_usage,
	.opts = report_series_opts,
};
static const struct cmd_doc report_makespan_doc = {
	.name = "report makespan",
	.summary = "makespan of every measured run, per arm",
	.usage = report_makespan_usage,
	.opts = report_series_opts,
};

static struct html_opts report_ho = { .to_step = -1 };
static const char *const report_html_usage[] = {
	"report html RUN_DIR|AUDIT|RUN.jsonl [--rule R] [--from STEP] [--to STEP] [--confidence C] [-o report.html] [--json]",
	NULL };
static const struct opt report_html_opts[] = {
	OPT_STRING(0, "rule", &report_ho.rule, "R",
		   "the candidate guard replayed on the control's (or the audit's) merges (default: an A/B's "
		   "treatment arm; an audit's recorded decisions)"),
	OPT_INT(0, "from", &report_from, "STEP", 0, INT64_MAX, "first step drawn"),
	OPT_INT(0, "to", &report_to_step, "STEP", 0, INT64_MAX, "last step drawn"),
	OPT_NUM(0, "confidence", &report_ho.confidence, "C", 0.5, 0.999999,
		"two-sided confidence of an audit's intervals (default 0.95; an A/B has its own)"),
	OPT_STRING('o', "output", &report_out, "FILE", "the page, written atomically (default: stdout)"),
	OPT_BOOL(0, "json", &report_json, "print what the page shows as JSON on stdout (the page then needs -o)"),
	OPT_END(),
};
static const struct cmd_doc report_html_doc = {
	.name = "report html",
	.summary = "one self-contained page of an A/B run directory or an audit",
	.usage = report_html_usage,
	.description = "A single HTML file, inline SVG, no script and no external asset: the verdict "
		"strip (the guard effect, the cost, substitutions by evidence, prevented, forgone and fired "
		"with their intervals, the corpus, INCONCLUSIVE and WITHHELD where they are), the "
		"counterfactual timeline (the candidate guard replayed on the control's own audit: every "
		"control boot of an A/B, its boots and runs marked), the residual substitutions with step, "
		"slot, request ids and evidence, and for an A/B the cost of every round against the noise "
		"band with the median's interval, and the correctness of every role. Tooltips name request "
		"ids. RUN_DIR is the -o DIR of `ttaudit ab`.",
	.opts = report_html_opts,
};

static const struct cmd_doc *const report_subs[] = {
	&report_timeline_doc, &report_latency_doc, &report_makespan_doc, &report_html_doc, NULL };
static const char *const report_usage[] = { "report COMMAND [options] FILE...", NULL };
static const struct opt report_opts[] = { OPT_END() };

const struct cmd_doc cmd_report_doc = {
	.name = "report",
	.summary = "figures: timeline of an audit, latency CDF, makespan (SVG); the page of an A/B (HTML)",
	.usage = report_usage,
	.description = "SVG figures and an HTML page with no plotting dependency (open them in a "
		"browser). Every mark carries a class and data-step/data-slot, so scripts can count them. "
		"An output file is replaced only when the figure was drawn whole.",
	.opts = report_opts,
	.flags = CMD_SUBCOMMANDS,
	.subs = report_subs,
};

static void report_summary_json(const char *what, const char *audit, const char *out,
				const struct svg_timeline_stats *ts, const struct svg_series *s, size_t n)
{
	struct jsonw w;
	size_t i;

	jsonw_init(&w, stdout);
	jsonw_obj(&w);
	jsonw_kstr(&w, "figure", what);
	if (!strcmp(what, "timeline")) {
		jsonw_kstr(&w, "audit", audit);
		jsonw_kstr(&w, "svg", out);
		jsonw_kuint(&w, "merges", ts->merges);
		jsonw_kuint(&w, "drawn", ts->drawn);
		jsonw_kuint(&w, "slots", ts->slots);
		jsonw_kuint(&w, "taken", ts->taken);
		jsonw_kuint(&w, "rejects", ts->rejects);
		jsonw_kuint(&w, "prevented", ts->prevented);
		jsonw_kuint(&w, "forgone", ts->forgone);
		jsonw_kuint(&w, "refused", ts->refused);
		jsonw_kuint(&w, "unverified", ts->unverified);
		jsonw_kuint(&w, "substitutions", ts->substs);
		jsonw_kstr(&w, "decisions", report_to.rule ? report_to.rule : "recorded");
		jsonw_kuint(&w, "malformed", ts->malformed);
	} else {
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
	}
	jsonw_obj_end(&w);
	fputc('\n', stdout);
}

static void report_html_json(const char *out, const struct html_stats *hs)
{
	const struct svg_timeline_stats *t = &hs->timeline;
	struct jsonw w;

	jsonw_init(&w, stdout);
	jsonw_obj(&w);
	jsonw_kstr(&w, "figure", "html");
	jsonw_kstr(&w, "html", out);
	jsonw_kstr(&w, "mode", hs->mode);
	jsonw_kstr(&w, "headline", hs->headline);
	jsonw_kuint(&w, "verdicts", hs->verdicts);
	jsonw_kuint(&w, "files", hs->files);
	jsonw_kuint(&w, "cost_points", hs->cost_points);
	jsonw_kuint(&w, "cost_intervals", hs->cost_intervals);
	jsonw_kuint(&w, "curve_points", hs->curve_points);
	jsonw_kuint(&w, "leaks", hs->leaks);
	jsonw_kuint(&w, "timeline_requests", hs->timeline_requests);
	jsonw_key(&w, "timeline");
	jsonw_obj(&w);
	jsonw_kuint(&w, "merges", t->merges);
	jsonw_kuint(&w, "drawn", t->drawn);
	jsonw_kuint(&w, "slots", t->slots);
	jsonw_kuint(&w, "taken", t->taken);
	jsonw_kuint(&w, "unverified", t->unverified);
	jsonw_kuint(&w, "substitutions", t->substs);
	jsonw_kuint(&w, "prevented", t->prevented);
	jsonw_kuint(&w, "forgone", t->forgone);
	jsonw_kuint(&w, "refused", t->refused);
	jsonw_kuint(&w, "boundaries", t->boundaries);
	jsonw_kuint(&w, "malformed", t->malformed);
	jsonw_obj_end(&w);
	jsonw_obj_end(&w);
}

/* report html: the page, atomically. */
static int report_html(const char *input, int nops)
{
	struct status_info si = { 0 };
	struct html_stats hs;
	struct progress prog;
	struct outfile of = { 0 };
	enum status st;

	if (nops != 1)
		return cli_usage_error("report", "html: one A/B directory, one audit file or one bench record file");
	if (report_json && !report_out)
		return cli_usage_error("report", "--json prints the summary on stdout: give the page a file with -o");
	report_ho.input = input;
	report_ho.from_step = report_from;
	report_ho.to_step = report_to_step;
	/* an A/B directory's size is not known up front: the line then has no ETA */
	progress_init(&prog, "report", "merges", progress_input_size(&input, 1));
	report_ho.progress = &prog;
	st = outfile_open(&of, report_out, &si);
	if (!st) {
		st = html_report(of.f, &report_ho, &hs, &si);
		progress_release(&prog);
		if (st)
			outfile_abort(&of);
		else
			st = outfile_commit(&of, &si);
	}
	if (st) {
		cli_report_status("report", st, &si);
		return CLI_USAGE;
	}
	if (report_json)
		report_html_json(report_out, &hs);
	else if (report_out)
		printf("%s: %s, %zu verdicts (first %s); timeline %llu merges, %llu substitutions, %llu prevented, "
		       "%llu forgone\n", report_out, hs.mode, hs.verdicts, hs.headline,
		       (unsigned long long)hs.timeline.merges, (unsigned long long)hs.timeline.substs,
		       (unsigned long long)hs.timeline.prevented, (unsigned long long)hs.timeline.forgone);
	return CLI_OK;
}

int cmd_report(int argc, char **argv)
{
	struct report_series ser[SVG_MAX_SERIES];
	struct svg_series s[SVG_MAX_SERIES];
	struct status_info si = { 0 };
	const struct cmd_doc *sub;
	struct svg_timeline_stats ts = { 0 };
	struct outfile of = { 0 };
	struct progress prog;
	bool have_series = false;
	const char *what, *out;
	bool json, opened = false;
	enum status st = STATUS_OK;
	size_t n = 0, i;
	FILE *f;
	int nops, rc = CLI_OK;

	nops = cli_parse(&cmd_report_doc, argc, argv,
			 &(const struct cli_operands){ 1, CLI_ANY,
						       "which figure: timeline, latency, makespan or html (see --help)",
						       NULL },
			 &rc);
	if (nops < 0)
		return rc;
	what = argv[0];
	sub = opt_sub(&cmd_report_doc, what);
	if (!sub)
		return cli_usage_error("report", "'%s' is not a figure: timeline, latency, makespan or html", what);
	/* the sub-command's operand errors name the figure: said below */
	nops = cli_parse(sub, nops, argv, NULL, &rc);
	if (nops < 0)
		return rc;
	out = report_out;
	json = report_json;
	report_to.from_step = report_from;
	report_to.to_step = report_to_step;
	if (nops == 0)
		return cli_usage_error("report", "%s: no input file", what);
	if (!strcmp(what, "timeline") && nops != 1)
		return cli_usage_error("report", "timeline: one audit file");
	if (!strcmp(what, "html"))
		return report_html(argv[0], nops);
	if (json && !out)
		return cli_usage_error("report", "--json prints the summary on stdout: give the SVG a file with -o");
	st = outfile_open(&of, out, &si);
	if (st)
		goto out;
	opened = true;
	f = of.f;
	if (!strcmp(what, "timeline")) {
		progress_init(&prog, "report", "merges", progress_input_size((const char *const *)argv, 1));
		report_to.progress = &prog;
		st = svg_timeline(f, argv[0], &report_to, &ts, &si);
		progress_release(&prog);
	} else {
		st = report_series_read((const char *const *)argv, (size_t)nops, ser, SVG_MAX_SERIES, &n, &si);
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
			have_series = true;
		}
	}
out:
	if (opened) {
		if (st)
			outfile_abort(&of);
		else
			st = outfile_commit(&of, &si);
	}
	/* Said only once the figure is in place. */
	if (!st && json)
		report_summary_json(what, argv[0], out, &ts, s, have_series ? n : 0);
	else if (!st && out && !strcmp(what, "timeline"))
		printf("%s: %llu merges, %llu substitutions, %llu guard rejects, %llu taken\n", out,
		       (unsigned long long)ts.merges, (unsigned long long)ts.substs,
		       (unsigned long long)ts.rejects, (unsigned long long)ts.taken);
	if (have_series)
		report_series_release(ser, n);
	if (st) {
		cli_report_status("report", st, &si);
		rc = CLI_USAGE;
	}
	return rc;
}
