/*
 * ttaudit bench - a load driver with honest numbers and a correctness stage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "driver.h"

static void bench_usage(FILE *f)
{
	fprintf(f,
		"usage: ttaudit bench --url URL [--arm NAME [--log F] [--capture F]] [--url URL2 --arm NAME2 ...]\n"
		"                     [--spec arms.json | --no-arm-check]\n"
		"                     (--suite FILE | --input-tokens N --output-tokens N --prompts N [--chat])\n"
		"                     [--concurrency 1,4,8 | --batch 8 | --rate R[,R...] [--arrival-seed S]]\n"
		"                     [--requests N] [--repeats N] [--correctness] [--warm] -o RUN.jsonl\n"
		"servers and arms:\n"
		"  --url URL           a server base URL; repeat for several arms, each followed by its options\n"
		"  --arm NAME          the arm that server runs; confirmed from its output with --spec\n"
		"  --log F, --capture F  where that server's banner can be read (engine log, capture file)\n"
		"  --spec FILE         arm spec (JSON, see docs/arms.md)\n"
		"  --no-arm-check      skip confirmation; records say \"unconfirmed\"\n"
		"  --model NAME        model id (default: the first /v1/models lists)\n"
		"  --ready-timeout S   readiness ladder deadline (default 600)\n"
		"prompts:\n"
		"  --suite FILE        JSONL {id, prompt | messages, max_tokens, expect?}\n"
		"  --input-tokens N --output-tokens N --prompts N [--chat] [--prompt-seed S]\n"
		"                      generated prompts sized with the server's /tokenize\n"
		"                      (two generation probes when it has none)\n"
		"  --seed S            corpus seed: per-request nonces that keep a cold run cold\n"
		"                      (default: from the clock; recorded)\n"
		"  --warm              one shared session instead: the prefix cache may serve it\n"
		"load:\n"
		"  --concurrency L     closed loop at each level of the list (default 1)\n"
		"  --batch L           each level launched at once\n"
		"  --rate L            Poisson arrivals at each rate (requests/s), --arrival-seed S\n"
		"  --requests N        requests per run (default: the suite, at least the level)\n"
		"  --repeats N         repeats, interleaved across arms; spread > 15%% is UNSTABLE\n"
		"  --temperature T     sent with every request (default: the server's)\n"
		"  --ignore-eos        ask the server to generate max_tokens\n"
		"  --no-stream-usage   do not ask for the usage block (token counts from chunks)\n"
		"  --timeout S         per request (default 600); --stall S silence limit (default 60)\n"
		"checks and output:\n"
		"  --correctness       reference at concurrency 1, temperature 0; compare under load\n"
		"  -o FILE             run records (JSONL)\n"
		"  --token-times       every token's receive time in the request records\n"
		"  --loop-times        time tokens when the loop reads them, not by the kernel's\n"
		"                      receive stamps (to compare the two)\n"
		"  --json              summary as JSON on stdout\n"
		"  --no-progress       no progress bar (it is drawn only on a terminal)\n"
		"exit: 0 ok, 1 failed requests, correctness failures or a failed gate, 2 bad usage or input\n");
}

enum {
	OPT_URL = 256, OPT_ARM, OPT_LOG, OPT_CAPTURE, OPT_SPEC, OPT_NO_ARM_CHECK, OPT_MODEL,
	OPT_READY_TIMEOUT, OPT_SUITE, OPT_INPUT, OPT_OUTPUT, OPT_PROMPTS, OPT_CHAT, OPT_PROMPT_SEED,
	OPT_SEED, OPT_LOOP_TIMES, OPT_WARM, OPT_CONC, OPT_BATCH, OPT_RATE, OPT_ARRIVAL_SEED, OPT_REQUESTS,
	OPT_REPEATS, OPT_TEMP, OPT_IGNORE_EOS, OPT_TIMEOUT, OPT_STALL, OPT_CORRECT, OPT_TOKEN_TIMES,
	OPT_JSON, OPT_NO_PROGRESS, OPT_NO_USAGE,
};

static int bench_number(const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	return end != s && !*end && *out >= 0 ? 0 : -1;
}

static int bench_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s == '-')
		return -1;
	*out = strtoull(s, &end, 10);
	return *end ? -1 : 0;
}

/* "1,4,8" into levels. */
static int bench_levels(const char *s, struct driver_opts *o)
{
	char buf[512], *tok, *save = NULL;

	if (strlen(s) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", s);
	o->n_levels = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (o->n_levels >= DRIVER_MAX_LEVELS || bench_number(tok, &o->levels[o->n_levels]))
			return -1;
		o->n_levels++;
	}
	return o->n_levels ? 0 : -1;
}

int cmd_bench(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "url", required_argument, NULL, OPT_URL },
		{ "arm", required_argument, NULL, OPT_ARM },
		{ "log", required_argument, NULL, OPT_LOG },
		{ "capture", required_argument, NULL, OPT_CAPTURE },
		{ "spec", required_argument, NULL, OPT_SPEC },
		{ "no-arm-check", no_argument, NULL, OPT_NO_ARM_CHECK },
		{ "model", required_argument, NULL, OPT_MODEL },
		{ "ready-timeout", required_argument, NULL, OPT_READY_TIMEOUT },
		{ "suite", required_argument, NULL, OPT_SUITE },
		{ "input-tokens", required_argument, NULL, OPT_INPUT },
		{ "output-tokens", required_argument, NULL, OPT_OUTPUT },
		{ "prompts", required_argument, NULL, OPT_PROMPTS },
		{ "chat", no_argument, NULL, OPT_CHAT },
		{ "prompt-seed", required_argument, NULL, OPT_PROMPT_SEED },
		{ "seed", required_argument, NULL, OPT_SEED },
		{ "warm", no_argument, NULL, OPT_WARM },
		{ "concurrency", required_argument, NULL, OPT_CONC },
		{ "batch", required_argument, NULL, OPT_BATCH },
		{ "rate", required_argument, NULL, OPT_RATE },
		{ "arrival-seed", required_argument, NULL, OPT_ARRIVAL_SEED },
		{ "requests", required_argument, NULL, OPT_REQUESTS },
		{ "repeats", required_argument, NULL, OPT_REPEATS },
		{ "temperature", required_argument, NULL, OPT_TEMP },
		{ "ignore-eos", no_argument, NULL, OPT_IGNORE_EOS },
		{ "no-stream-usage", no_argument, NULL, OPT_NO_USAGE },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "stall", required_argument, NULL, OPT_STALL },
		{ "correctness", no_argument, NULL, OPT_CORRECT },
		{ "token-times", no_argument, NULL, OPT_TOKEN_TIMES },
		{ "loop-times", no_argument, NULL, OPT_LOOP_TIMES },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "no-progress", no_argument, NULL, OPT_NO_PROGRESS },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static struct driver_opts o;
	struct driver_report rep;
	struct status_info si;
	enum status st;
	int c, json = 0, progress = 1, arrival_set = 0, gen = 0, rc;
	long long v;
	double d;
	char *js;

	memset(&o, 0, sizeof(o));
	memset(&si, 0, sizeof(si));
	o.repeats = 1;
	o.temperature = -1;
	o.timeout_s = 600;
	o.stall_s = 60;
	o.arrival = LOAD_CLOSED;
	o.levels[0] = 1;
	o.n_levels = 1;
	o.corpus_seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
	optind = 1;
	while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
		switch (c) {
		case OPT_URL:
			if (o.n_arms >= DRIVER_MAX_ARMS)
				return cli_usage_error("bench", "more than %d --url", DRIVER_MAX_ARMS);
			o.arms[o.n_arms++].url = optarg;
			break;
		case OPT_ARM:
		case OPT_LOG:
		case OPT_CAPTURE:
			if (!o.n_arms)
				return cli_usage_error("bench", "--%s before any --url (it belongs to the --url before it)",
						       c == OPT_ARM ? "arm" : c == OPT_LOG ? "log" : "capture");
			if (c == OPT_ARM)
				o.arms[o.n_arms - 1].arm = optarg;
			else if (c == OPT_LOG)
				o.arms[o.n_arms - 1].log = optarg;
			else
				o.arms[o.n_arms - 1].capture = optarg;
			break;
		case OPT_SPEC: o.spec = optarg; break;
		case OPT_NO_ARM_CHECK: o.no_arm_check = true; break;
		case OPT_MODEL: o.model = optarg; break;
		case OPT_READY_TIMEOUT:
			if (bench_number(optarg, &o.ready_timeout) || o.ready_timeout <= 0)
				return cli_usage_error("bench", "--ready-timeout '%s' is not a positive number", optarg);
			break;
		case OPT_SUITE: o.suite = optarg; break;
		case OPT_INPUT:
		case OPT_OUTPUT:
		case OPT_PROMPTS:
		case OPT_REQUESTS:
		case OPT_REPEATS:
			v = cli_parse_count(optarg);
			if (v < 1 || v > 100000000)
				return cli_usage_error("bench", "'%s' is not a positive count", optarg);
			if (c == OPT_INPUT)
				o.gen.input_tokens = (long)v, gen = 1;
			else if (c == OPT_OUTPUT)
				o.gen.max_tokens = (long)v, gen = 1;
			else if (c == OPT_PROMPTS)
				o.gen.n_prompts = (size_t)v, gen = 1;
			else if (c == OPT_REQUESTS)
				o.n_requests = (size_t)v;
			else
				o.repeats = (unsigned)(v > DRIVER_MAX_REPEATS ? DRIVER_MAX_REPEATS + 1 : v);
			break;
		case OPT_CHAT: o.gen.chat = true; gen = 1; break;
		case OPT_PROMPT_SEED:
			if (bench_u64(optarg, &o.gen.seed))
				return cli_usage_error("bench", "--prompt-seed '%s' is not an unsigned integer", optarg);
			break;
		case OPT_SEED:
			if (bench_u64(optarg, &o.corpus_seed))
				return cli_usage_error("bench", "--seed '%s' is not an unsigned integer", optarg);
			break;
		case OPT_ARRIVAL_SEED:
			if (bench_u64(optarg, &o.arrival_seed))
				return cli_usage_error("bench", "--arrival-seed '%s' is not an unsigned integer", optarg);
			break;
		case OPT_WARM: o.warm = true; break;
		case OPT_CONC:
		case OPT_BATCH:
		case OPT_RATE:
			if (arrival_set++)
				return cli_usage_error("bench", "one of --concurrency, --batch, --rate");
			o.arrival = c == OPT_CONC ? LOAD_CLOSED : c == OPT_BATCH ? LOAD_BATCH : LOAD_POISSON;
			if (bench_levels(optarg, &o))
				return cli_usage_error("bench", "'%s' is not a comma-separated list of up to %d numbers",
						       optarg, DRIVER_MAX_LEVELS);
			break;
		case OPT_TEMP:
			if (bench_number(optarg, &o.temperature))
				return cli_usage_error("bench", "--temperature '%s' is not a number >= 0", optarg);
			break;
		case OPT_IGNORE_EOS: o.ignore_eos = true; break;
		case OPT_NO_USAGE: o.no_usage = true; break;
		case OPT_TIMEOUT:
		case OPT_STALL:
			if (bench_number(optarg, &d) || d <= 0)
				return cli_usage_error("bench", "'%s' is not a positive number of seconds", optarg);
			if (c == OPT_TIMEOUT)
				o.timeout_s = d;
			else
				o.stall_s = d;
			break;
		case OPT_CORRECT: o.correctness = true; break;
		case OPT_TOKEN_TIMES: o.token_times = true; break;
		case OPT_LOOP_TIMES: o.loop_times = true; break;
		case OPT_JSON: json = 1; break;
		case OPT_NO_PROGRESS: progress = 0; break;
		case 'o': o.out = optarg; break;
		case 'h': bench_usage(stdout); return CLI_OK;
		default: bench_usage(stderr); return CLI_USAGE;
		}
	}
	if (optind < argc)
		return cli_usage_error("bench", "unexpected argument '%s'", argv[optind]);
	if (!o.n_arms)
		return cli_usage_error("bench", "--url is required");
	if (!o.out)
		return cli_usage_error("bench", "-o RUN.jsonl is required");
	if (o.suite && gen)
		return cli_usage_error("bench", "--suite or generated prompts, not both");
	if (!o.suite && (!o.gen.input_tokens || !o.gen.max_tokens || !o.gen.n_prompts))
		return cli_usage_error("bench", "--suite FILE, or --input-tokens, --output-tokens and --prompts");
	o.gen.warm = o.warm;
	o.log_to = stderr;
	o.progress = progress && isatty(STDERR_FILENO) ? stderr : NULL;
	st = driver_run(&o, &rep, &si);
	if (st) {
		cli_report_status("bench", st, &si);
		driver_report_release(&rep);
		return CLI_USAGE;
	}
	if (json) {
		js = driver_report_json(&rep);
		if (!js) {
			driver_report_release(&rep);
			return cli_usage_error("bench", "out of memory");
		}
		printf("%s\n", js);
		free(js);
	} else {
		driver_report_print(&rep, stdout);
	}
	rc = rep.gate_failed || rep.total_failed || rep.corr_failing || rep.ref_wrong || rep.ref_failed
		     ? CLI_FAIL : CLI_OK;
	if (rep.gate_failed && json)
		fprintf(stderr, "ttaudit bench: %s\n", rep.gate_message);
	driver_report_release(&rep);
	return rc;
}
