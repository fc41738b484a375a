/*
 * ttaudit ready - wait until a server really generates, rung by rung.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "base/opt.h"
#include "probe/ready.h"

static struct ready_opts ready_o;
static bool ready_json;

static const char *const ready_usage[] = {
	"ready --url URL [--timeout S] [--interval S] [--model NAME] [--json]", NULL };

static const struct opt ready_opts[] = {
	OPT_STRING(0, "url", &ready_o.url, "URL", "server base URL, e.g. http://127.0.0.1:8000"),
	OPT_NUM(0, "timeout", &ready_o.timeout, "S", 1e-3, 1e7,
		"the whole ladder (default 600: a Tenstorrent load takes about 510 s)"),
	OPT_NUM(0, "interval", &ready_o.interval, "S", 1e-3, 1e5, "pause between attempts (default 1)"),
	OPT_STRING(0, "model", &ready_o.model, "NAME", "the model /v1/models must list (default: the first)"),
	OPT_BOOL(0, "json", &ready_json, "the ladder as JSON"),
	OPT_END(),
};

const struct cmd_doc cmd_ready_doc = {
	.name = "ready",
	.summary = "wait until a server generates a real token, each rung timed",
	.usage = ready_usage,
	.description =
		"Climbs the readiness ladder: /health answers 200, /metrics parses, /v1/models lists "
		"the model, one generated token from /v1/completions (max_tokens 1, temperature 0). "
		"Each rung is timed; only a real token passes the last rung, so a gateway that "
		"answers 400 for a minute does not. An API key is taken from TTAUDIT_API_KEY, else "
		"OPENAI_API_KEY, and never recorded. A rung the server does not have (401, 404, 405, "
		"501 three times) is named and the wait stops.",
	.opts = ready_opts,
	.exit_notes = "not ready by the deadline, or a rung the server lacks",
};

static void ready_progress(void *ctx, const struct ready_report *r, enum ready_rung at, double t)
{
	const struct ready_rung_result *rr = &r->rung[at];

	(void)ctx;
	fprintf(stderr, "\r\033[Kready: %6.1fs  rung %d/4 %-8s %s  (attempt %u, last %ld%s%.60s)",
		t, (int)at + 1, ready_rung_name(at), rr->passed ? "passed" : "waiting", rr->attempts,
		rr->last_status, rr->last_error[0] ? ": " : "", rr->last_error);
	fflush(stderr);
}

int cmd_ready(int argc, char **argv)
{
	struct ready_opts o;
	struct ready_report r;
	struct status_info si = { 0 };
	enum status st;
	int n, i, rc;
	char *js;

	n = cli_parse(&cmd_ready_doc, argc, argv, CLI_NO_OPERANDS, &rc);
	if (n < 0)
		return rc;
	o = ready_o;
	if (!o.url)
		return cli_usage_error("ready", "--url is required");
	if (isatty(2))
		o.progress = ready_progress;
	st = ready_wait(&o, &r, &si);
	if (o.progress)
		fprintf(stderr, "\r\033[K");
	if (st && st != STATUS_TIMEOUT) {
		cli_report_status("ready", st, &si);
		return CLI_USAGE;
	}
	if (ready_json) {
		js = ready_report_json(&r);
		if (js)
			puts(js);
		free(js);
		return r.ready ? CLI_OK : CLI_FAIL;
	}
	for (i = 0; i < READY__COUNT; i++) {
		const struct ready_rung_result *rr = &r.rung[i];

		if (!rr->attempts) {
			printf("  %-8s not reached\n", ready_rung_name((enum ready_rung)i));
			continue;
		}
		printf("  %-8s %-6s at %7.1fs after %6.1fs, %u attempt(s), last status %ld\n",
		       ready_rung_name((enum ready_rung)i), rr->passed ? "passed" : "FAILED",
		       rr->started + rr->seconds, rr->seconds, rr->attempts, rr->last_status);
		if (!rr->passed) {
			printf("           last error: %s\n", rr->last_error);
			if (rr->excerpt[0])
				printf("           body: %s\n", rr->excerpt);
		}
	}
	if (r.ready)
		printf("ready: %s in %.1f s (model %s, completion %s, request %s, token \"%s\")\n",
		       r.url, r.total, r.model, r.completion_id[0] ? r.completion_id : "?",
		       r.request_id, r.token_text);
	else
		printf("ready: NOT READY after %.1f s: rung '%s' did not pass\n", r.total,
		       ready_rung_name(r.failed));
	return r.ready ? CLI_OK : CLI_FAIL;
}
