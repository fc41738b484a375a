/*
 * ttaudit ready - wait until a server really generates, rung by rung.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "ready.h"

static void ready_usage(FILE *f)
{
	fprintf(f,
		"usage: ttaudit ready --url URL [--timeout S] [--interval S] [--model NAME] [--json]\n"
		"  rungs: /health 200 -> /metrics parses -> /v1/models lists the model ->\n"
		"  one generated token from /v1/completions (max_tokens 1, temperature 0)\n"
		"  --timeout S   whole ladder (default 600: a Tenstorrent load takes ~510 s)\n"
		"  --interval S  pause between attempts (default 1)\n"
		"exit: 0 ready, 1 not ready by the deadline, 2 bad usage\n");
}

static void ready_progress(void *ctx, const struct ready_report *r, enum ready_rung at, double t)
{
	const struct ready_rung_result *rr = &r->rung[at];

	(void)ctx;
	fprintf(stderr, "\r\033[Kready: %6.1fs  rung %d/4 %-8s %s  (attempt %u, last %ld%s%.60s)",
		t, (int)at + 1, ready_rung_name(at), rr->passed ? "passed" : "waiting", rr->attempts,
		rr->last_status, rr->last_error[0] ? ": " : "", rr->last_error);
	fflush(stderr);
}

static int ready_seconds(const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	return end != s && !*end && *out > 0 ? 0 : -1;
}

int cmd_ready(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, 'u' },
		{ "timeout", required_argument, NULL, 't' },
		{ "interval", required_argument, NULL, 'i' },
		{ "model", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct ready_opts o = { 0 };
	struct ready_report r;
	struct status_info si = { 0 };
	enum status st;
	int c, json = 0, i;
	char *js;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'u': o.url = optarg; break;
		case 'm': o.model = optarg; break;
		case 't':
			if (ready_seconds(optarg, &o.timeout))
				return cli_usage_error("ready", "--timeout '%s' is not a positive number of seconds", optarg);
			break;
		case 'i':
			if (ready_seconds(optarg, &o.interval))
				return cli_usage_error("ready", "--interval '%s' is not a positive number of seconds", optarg);
			break;
		case 'j': json = 1; break;
		case 'h': ready_usage(stdout); return CLI_OK;
		default: ready_usage(stderr); return CLI_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("ready", "unexpected argument '%s'", argv[optind]);
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
	if (json) {
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
		printf("ready: %s in %.1f s (model %s, completion %s, token \"%s\")\n", r.url, r.total,
		       r.model, r.completion_id[0] ? r.completion_id : "?", r.token_text);
	else
		printf("ready: NOT READY after %.1f s: rung '%s' did not pass\n", r.total,
		       ready_rung_name(r.failed));
	return r.ready ? CLI_OK : CLI_FAIL;
}
