/*
 * cmd_ab.c - `ttaudit ab`: the A/B validation of a guard (ab/ab.h).
 */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "ab.h"
#include "cli.h"
#include "jsonw.h"

static const char ab_usage[] =
	"usage: ttaudit ab --control ARM --treatment ARM --spec arms.json --serve 'CMD ...'\n"
	"                  [--sensitivity ARM [--sensitivity-serve 'CMD ...']] [-o DIR] [options]\n"
	"\n"
	"Validates a guard the way it is done by hand, without the mistakes. Per boot,\n"
	"one at a time: preflight, the host lock, the serve command under capture with\n"
	"the arm's environment (other arms' variables removed), readiness, the arm\n"
	"confirmed from the server's own output (fail closed), the reference and the\n"
	"correctness run under load, a graceful stop (never SIGKILL), then pairing of\n"
	"the records with the capture. A round boots control, treatment, control again\n"
	"(the negative control: the noise floor) and the sensitivity arm.\n"
	"\n"
	"The serve command runs under /bin/sh with TTAUDIT_AB_ARM, TTAUDIT_AB_ROLE,\n"
	"TTAUDIT_AB_BOOT and TTAUDIT_AB_PORT_FILE set; without --url it must write its\n"
	"port to $TTAUDIT_AB_PORT_FILE (e.g. ttsim serve --port 0 --port-file ...).\n"
	"\n"
	"  --control ARM, --treatment ARM   arms of the spec (probe/arms.h, docs/arms.md)\n"
	"  --sensitivity ARM  a configuration known to cost something; without it the\n"
	"                     cost comparison is WITHHELD\n"
	"  --sensitivity-serve CMD  its serve command (default: --serve)\n"
	"  --separation PCT   separation floor, sensitivity vs negative control (default 5)\n"
	"  --url URL          the server's base URL (default: from the port file)\n"
	"  -o, --dir DIR      work directory: captures, records, report (default ab-out)\n"
	"  --repeats N        rounds, arms interleaved (default 1)\n"
	"  --suite FILE | --input-tokens N --output-tokens N --prompts N\n"
	"  --concurrency N    of the run under load (default 8); --requests N (default: the suite)\n"
	"  --seed S           corpus seed (default 1)\n"
	"  --model NAME, --timeout S, --ready-timeout S (default 600)\n"
	"  --lock DIR         host lock directory (default /tmp/ttaudit-host.lock)\n"
	"  --vendor-neutral   skip the Tenstorrent preflight checks; --no-docker; --no-preflight\n"
	"  --mem-floor GIB    preflight memory floor (default 4)\n"
	"  --preflight-root DIR  read proc/meminfo, proc/*/fd and devices under DIR (tests)\n"
	"  --stop-signal SIG  INT (default) or TERM; --stop-timeout S per wait (default 60)\n"
	"  --stop-cmd CMD     run this to stop the server instead ($TTAUDIT_AB_PID is its\n"
	"                     process group), e.g. 'docker stop -t 90 NAME'\n"
	"  --json             the JSON twin on stdout instead of the markdown report\n"
	"\n"
	"exit: 0 the guard effect passed (control substituted, treatment made no\n"
	"substitution and no failing request); 1 it did not, or a gate failed (nothing\n"
	"published); 2 bad usage or input\n";

enum { OPT_CONTROL = 256, OPT_TREATMENT, OPT_SENS, OPT_SENS_SERVE, OPT_SPEC, OPT_SERVE, OPT_URL,
       OPT_REPEATS, OPT_SUITE, OPT_IN, OPT_OUT, OPT_PROMPTS, OPT_CONC, OPT_REQS, OPT_SEED, OPT_MODEL,
       OPT_TIMEOUT, OPT_READY, OPT_LOCK, OPT_NEUTRAL, OPT_NODOCKER, OPT_NOPRE, OPT_MEM, OPT_STOPSIG,
       OPT_STOPT, OPT_STOPCMD, OPT_SEP, OPT_PFROOT, OPT_JSON, OPT_HELP };

static const struct option ab_options[] = {
	{ "control", required_argument, NULL, OPT_CONTROL },
	{ "treatment", required_argument, NULL, OPT_TREATMENT },
	{ "sensitivity", required_argument, NULL, OPT_SENS },
	{ "sensitivity-serve", required_argument, NULL, OPT_SENS_SERVE },
	{ "spec", required_argument, NULL, OPT_SPEC },
	{ "serve", required_argument, NULL, OPT_SERVE },
	{ "url", required_argument, NULL, OPT_URL },
	{ "dir", required_argument, NULL, 'o' },
	{ "repeats", required_argument, NULL, OPT_REPEATS },
	{ "suite", required_argument, NULL, OPT_SUITE },
	{ "input-tokens", required_argument, NULL, OPT_IN },
	{ "output-tokens", required_argument, NULL, OPT_OUT },
	{ "prompts", required_argument, NULL, OPT_PROMPTS },
	{ "concurrency", required_argument, NULL, OPT_CONC },
	{ "requests", required_argument, NULL, OPT_REQS },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "model", required_argument, NULL, OPT_MODEL },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "ready-timeout", required_argument, NULL, OPT_READY },
	{ "lock", required_argument, NULL, OPT_LOCK },
	{ "vendor-neutral", no_argument, NULL, OPT_NEUTRAL },
	{ "no-docker", no_argument, NULL, OPT_NODOCKER },
	{ "no-preflight", no_argument, NULL, OPT_NOPRE },
	{ "mem-floor", required_argument, NULL, OPT_MEM },
	{ "preflight-root", required_argument, NULL, OPT_PFROOT },
	{ "stop-signal", required_argument, NULL, OPT_STOPSIG },
	{ "stop-timeout", required_argument, NULL, OPT_STOPT },
	{ "stop-cmd", required_argument, NULL, OPT_STOPCMD },
	{ "separation", required_argument, NULL, OPT_SEP },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* A positive number option; -1 when invalid. */
static double ab_num(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	return (end == s || *end || !(v >= 0)) ? -1 : v;
}

int cmd_ab(int argc, char **argv)
{
	struct ab_opts o;
	struct ab_result *res = NULL;
	struct status_info si = { 0 };
	bool json = false;
	enum status st;
	long long v;
	double d;
	int opt, rc;
	FILE *f;

	memset(&o, 0, sizeof(o));
	o.dir = "ab-out";
	o.repeats = 1;
	o.concurrency = 8;
	o.corpus_seed = 1;
	o.ready_timeout = 600;
	o.gen.n_prompts = 16;
	o.gen.input_tokens = 64;
	o.gen.max_tokens = 32;
	o.gen.seed = 1;
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "o:", ab_options, NULL)) != -1) {
		switch (opt) {
		case OPT_CONTROL: o.control = optarg; break;
		case OPT_TREATMENT: o.treatment = optarg; break;
		case OPT_SENS: o.sensitivity = optarg; break;
		case OPT_SENS_SERVE: o.sensitivity_serve = optarg; break;
		case OPT_SPEC: o.spec = optarg; break;
		case OPT_SERVE: o.serve = optarg; break;
		case OPT_URL: o.url = optarg; break;
		case 'o': o.dir = optarg; break;
		case OPT_SUITE: o.suite = optarg; break;
		case OPT_MODEL: o.model = optarg; break;
		case OPT_LOCK: o.lock_dir = optarg; break;
		case OPT_NEUTRAL: o.vendor_neutral = true; break;
		case OPT_NODOCKER: o.no_docker = true; break;
		case OPT_NOPRE: o.no_preflight = true; break;
		case OPT_PFROOT: o.preflight_root = optarg; break;
		case OPT_STOPCMD: o.stop_cmd = optarg; break;
		case OPT_JSON: json = true; break;
		case OPT_HELP: fputs(ab_usage, stdout); return CLI_OK;
		case OPT_STOPSIG:
			if (!strcmp(optarg, "INT") || !strcmp(optarg, "SIGINT"))
				o.stop_signal = SIGINT;
			else if (!strcmp(optarg, "TERM") || !strcmp(optarg, "SIGTERM"))
				o.stop_signal = SIGTERM;
			else
				return cli_usage_error("ab", "--stop-signal '%s': want INT or TERM (never KILL)", optarg);
			break;
		case OPT_REPEATS: case OPT_IN: case OPT_OUT: case OPT_PROMPTS: case OPT_CONC:
		case OPT_REQS: case OPT_SEED:
			v = cli_parse_count(optarg);
			if (v < 0 || (v == 0 && opt != OPT_SEED && opt != OPT_REQS))
				return cli_usage_error("ab", "%s '%s': want a positive integer", argv[optind - 1], optarg);
			if (opt == OPT_REPEATS) o.repeats = (unsigned)v;
			if (opt == OPT_IN) o.gen.input_tokens = (long)v;
			if (opt == OPT_OUT) o.gen.max_tokens = (long)v;
			if (opt == OPT_PROMPTS) o.gen.n_prompts = (size_t)v;
			if (opt == OPT_CONC) o.concurrency = (unsigned)v;
			if (opt == OPT_REQS) o.n_requests = (size_t)v;
			if (opt == OPT_SEED) o.corpus_seed = o.gen.seed = (uint64_t)v;
			break;
		case OPT_TIMEOUT: case OPT_READY: case OPT_MEM: case OPT_STOPT: case OPT_SEP:
			d = ab_num(optarg);
			if (d <= 0)
				return cli_usage_error("ab", "%s '%s': want a positive number", argv[optind - 1], optarg);
			if (opt == OPT_TIMEOUT) o.timeout_s = d;
			if (opt == OPT_READY) o.ready_timeout = d;
			if (opt == OPT_MEM) o.mem_floor_gib = d;
			if (opt == OPT_STOPT) o.stop_timeout = d;
			if (opt == OPT_SEP) o.separation = d / 100;
			break;
		default:
			return cli_usage_error("ab", "unknown option or missing value '%s' (see --help)",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("ab", "unexpected argument '%s'", argv[optind]);
	if (!o.control || !o.treatment)
		return cli_usage_error("ab", "--control and --treatment are needed");
	if (!o.spec)
		return cli_usage_error("ab", "--spec is needed: an arm is confirmed from the server's output");
	if (!o.serve)
		return cli_usage_error("ab", "--serve is needed: the command that runs the server");
	if (!strcmp(o.control, o.treatment))
		return cli_usage_error("ab", "control and treatment are the same arm '%s'", o.control);
	res = calloc(1, sizeof(*res));
	if (!res)
		return cli_usage_error("ab", "out of memory");
	st = ab_run(&o, res, &si);
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
		if (json) {
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
	f = fopen(json ? res->report_json : res->report_md, "re");
	if (f) {
		char buf[4096];
		size_t n;

		while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
			fwrite(buf, 1, n, stdout);
		fclose(f);
	}
	rc = res->guard_ok ? CLI_OK : CLI_FAIL;
	free(res);
	return rc;
}
