/*
 * cmd_ab.c - `ttaudit ab`: the A/B validation of a guard (ab/ab.h).
 */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "cli/cli.h"
#include "base/jsonw.h"
#include "base/opt.h"

static struct ab_opts ab_o = {
	.dir = "ab-out", .repeats = AB_DEFAULT_REPEATS, .concurrency = 8, .corpus_seed = 1,
	.ready_timeout = 600,
	.gen = { .n_prompts = 16, .input_tokens = 64, .max_tokens = 32, .seed = 1 },
};
static long long ab_repeats = AB_DEFAULT_REPEATS, ab_in = 64, ab_out_tokens = 32, ab_prompts = 16;
static long long ab_concurrency = 8, ab_requests = 0, ab_seed = 1;
static double ab_separation_pct = 0;
static bool ab_json;

static int ab_opt_signal(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	if (!strcmp(arg, "INT") || !strcmp(arg, "SIGINT"))
		ab_o.stop_signal = SIGINT;
	else if (!strcmp(arg, "TERM") || !strcmp(arg, "SIGTERM"))
		ab_o.stop_signal = SIGTERM;
	else {
		snprintf(err, n, "'%s': want INT or TERM (never KILL)", arg);
		return -1;
	}
	return 0;
}

static const char *const ab_usage[] = {
	"ab --control ARM --treatment ARM --spec arms.json --serve 'CMD ...' [--sensitivity ARM "
	"[--sensitivity-serve 'CMD ...']] [--repeats N] [--baseline P] [-o DIR] [options]",
	NULL,
};

static const struct opt ab_opts[] = {
	OPT_GROUP("the arms"),
	OPT_STRING(0, "control", &ab_o.control, "ARM", "the control arm of the spec (probe/arms.h, docs/arms.md)"),
	OPT_STRING(0, "treatment", &ab_o.treatment, "ARM", "the treatment arm: the guard under test"),
	OPT_STRING(0, "sensitivity", &ab_o.sensitivity, "ARM",
		   "a configuration known to cost something; without it the cost comparison is WITHHELD"),
	OPT_STRING(0, "sensitivity-serve", &ab_o.sensitivity_serve, "CMD", "its serve command (default: --serve)"),
	OPT_STRING(0, "spec", &ab_o.spec, "FILE", "the arm spec: environment and evidence of each arm"),
	OPT_STRING(0, "serve", &ab_o.serve, "CMD",
		   "runs the server under /bin/sh; without --url it writes its port to $TTAUDIT_AB_PORT_FILE"),
	OPT_STRING(0, "url", &ab_o.url, "URL", "the server's base URL (default: from the port file)"),
	OPT_STRING('o', "dir", &ab_o.dir, "DIR", "work directory: captures, records, report (default ab-out)"),
	OPT_GROUP("the rounds and the verdict"),
	OPT_INT(0, "repeats", &ab_repeats, "N", 1, AB_MAX_REPEATS,
		"rounds, arms interleaved (default 3); one round has no interval, and its cost is WITHHELD"),
	OPT_NUM(0, "separation", &ab_separation_pct, "PCT", 1e-9, 1e6,
		"separation floor of the sensitivity arm from the negative control, in points (default 5)"),
	OPT_NUM(0, "baseline", &ab_o.baseline, "P", 1e-12, 0.999999,
		"the failure rate per request the treatment's 0 must rule out (default: the control arm's own)"),
	OPT_NUM(0, "confidence", &ab_o.confidence, "C", 0.5, 0.999999,
		"two-sided confidence of every interval and test (default 0.95)"),
	OPT_GROUP("the bench of each boot"),
	OPT_STRING(0, "suite", &ab_o.suite, "FILE", "the prompts (JSONL); default: generated"),
	OPT_INT(0, "input-tokens", &ab_in, "N", 1, 100000000, "generated prompts of N tokens (default 64)"),
	OPT_INT(0, "output-tokens", &ab_out_tokens, "N", 1, 100000000, "their max_tokens (default 32)"),
	OPT_INT(0, "prompts", &ab_prompts, "N", 1, 100000000, "how many to generate (default 16)"),
	OPT_INT(0, "concurrency", &ab_concurrency, "N", 1, 1000000, "of the run under load (default 8)"),
	OPT_INT(0, "requests", &ab_requests, "N", 0, 100000000, "of the run under load (default: the suite)"),
	OPT_INT(0, "seed", &ab_seed, "S", 0, INT64_MAX, "corpus and prompt seed (default 1)"),
	OPT_STRING(0, "model", &ab_o.model, "NAME", "model id (default: the first /v1/models lists)"),
	OPT_NUM(0, "timeout", &ab_o.timeout_s, "S", 1e-6, 1e9, "per request (default 600)"),
	OPT_NUM(0, "ready-timeout", &ab_o.ready_timeout, "S", 1e-6, 1e9, "readiness deadline per boot (default 600)"),
	OPT_GROUP("the host"),
	OPT_STRING(0, "lock", &ab_o.lock_dir, "DIR", "host lock directory (default /tmp/ttaudit-host.lock)"),
	OPT_BOOL(0, "vendor-neutral", &ab_o.vendor_neutral, "skip the Tenstorrent preflight checks"),
	OPT_BOOL(0, "no-docker", &ab_o.no_docker, "skip the container check"),
	OPT_BOOL(0, "no-preflight", &ab_o.no_preflight, "no preflight at all"),
	OPT_NUM(0, "mem-floor", &ab_o.mem_floor_gib, "GIB", 1e-6, 1e9, "preflight memory floor (default 4)"),
	OPT_STRING(0, "preflight-root", &ab_o.preflight_root, "DIR",
		   "read proc/meminfo, proc/*/fd and devices under DIR (tests)"),
	OPT_CALL(0, "stop-signal", "SIG", ab_opt_signal, "INT (default) or TERM; never KILL"),
	OPT_NUM(0, "stop-timeout", &ab_o.stop_timeout, "S", 1e-6, 1e9, "per wait for the server to stop (default 60)"),
	OPT_STRING(0, "stop-cmd", &ab_o.stop_cmd, "CMD",
		   "run this to stop the server instead ($TTAUDIT_AB_PID is its process group), e.g. "
		   "'docker stop -t 90 NAME'"),
	OPT_GROUP("output"),
	OPT_BOOL(0, "json", &ab_json, "the JSON twin on stdout instead of the markdown report"),
	OPT_END(),
};

const struct cmd_doc cmd_ab_doc = {
	.name = "ab",
	.summary = "validate a guard: control vs treatment under capture, rounds, noise floor, verdict",
	.usage = ab_usage,
	.description =
		"Validates a guard the way it is done by hand, without the mistakes. Per boot, one at a "
		"time: preflight, the host lock, the serve command under capture with the arm's "
		"environment (other arms' variables removed), readiness, the arm confirmed from the "
		"server's own output (fail closed), the reference and the correctness run under load, a "
		"graceful stop (never SIGKILL), then pairing of the records with the capture. A round boots "
		"control, treatment, control again (the negative control: the noise floor) and the "
		"sensitivity arm; --repeats rounds (3 by default) interleave them.\n"
		"\n"
		"The guard effect compares merges with a substitution and failing requests of the "
		"treatment with the control arm's, with Clopper-Pearson intervals and Fisher's exact test: "
		"PASS, FAIL, NOT SHOWN (the control made no substitution) or INCONCLUSIVE (too few events "
		"to tell, with the number that would do). Each cost (makespan, TTFT p50, ITL p50, tokens/s) "
		"is the median over rounds of the paired difference with its order-statistic interval and "
		"that interval's real coverage; inside the noise floor it is flat, straddling it WITHHELD. "
		"One round, no sensitivity arm, or a sensitivity arm the bench cannot tell from noise "
		"withholds the whole cost.\n"
		"\n"
		"The serve command runs under /bin/sh with TTAUDIT_AB_ARM, TTAUDIT_AB_ROLE, TTAUDIT_AB_BOOT "
		"and TTAUDIT_AB_PORT_FILE set. Outputs in DIR: ab-report.md (on stdout), ab-report.json "
		"(--json), ab-report.html (ttaudit report html), the SVG figures, and each boot's capture, "
		"records and log.",
	.opts = ab_opts,
	.exit_notes = "the guard effect did not PASS (FAIL, NOT SHOWN or INCONCLUSIVE), or a gate failed "
		"(nothing published)",
};

int cmd_ab(int argc, char **argv)
{
	struct ab_opts *o = &ab_o;
	struct ab_result *res = NULL;
	struct status_info si = { 0 };
	enum status st;
	int n, rc;
	FILE *f;

	n = cli_parse(&cmd_ab_doc, argc, argv, CLI_NO_OPERANDS, &rc);
	if (n < 0)
		return rc;
	o->repeats = (unsigned)ab_repeats;
	o->gen.input_tokens = (long)ab_in;
	o->gen.max_tokens = (long)ab_out_tokens;
	o->gen.n_prompts = (size_t)ab_prompts;
	o->concurrency = (unsigned)ab_concurrency;
	o->n_requests = (size_t)ab_requests;
	o->corpus_seed = o->gen.seed = (uint64_t)ab_seed;
	o->separation = ab_separation_pct / 100;
	if (!o->control || !o->treatment)
		return cli_usage_error("ab", "--control and --treatment are needed");
	if (!o->spec)
		return cli_usage_error("ab", "--spec is needed: an arm is confirmed from the server's output");
	if (!o->serve)
		return cli_usage_error("ab", "--serve is needed: the command that runs the server");
	if (!strcmp(o->control, o->treatment))
		return cli_usage_error("ab", "control and treatment are the same arm '%s'", o->control);
	res = calloc(1, sizeof(*res));
	if (!res)
		return cli_usage_error("ab", "out of memory");
	st = ab_run(o, res, &si);
	if (st) {
		cli_report_status("ab", st, &si);
		free(res);
		return CLI_USAGE;
	}
	if (res->failed) {
		fprintf(stderr, "ttaudit ab: FAIL: %s\n", res->fail_message);
		if (res->fail_command[0])
			fprintf(stderr, "ttaudit ab: a person should run: %s\n", res->fail_command);
		fprintf(stderr, "ttaudit ab: nothing published (no report written)\n");
		if (ab_json) {
			struct jsonw w;

			jsonw_init(&w, stdout);
			jsonw_obj(&w);
			jsonw_kbool(&w, "failed", 1);
			jsonw_kstr(&w, "fail_message", res->fail_message);
			jsonw_kstr(&w, "fail_command", res->fail_command[0] ? res->fail_command : NULL);
			jsonw_obj_end(&w);
			fputc('\n', stdout);
		}
		free(res);
		return CLI_FAIL;
	}
	f = fopen(ab_json ? res->report_json : res->report_md, "re");
	if (f) {
		char buf[4096];
		size_t k;

		while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, k, stdout);
		fclose(f);
	}
	rc = res->guard_ok ? CLI_OK : CLI_FAIL;
	free(res);
	return rc;
}
