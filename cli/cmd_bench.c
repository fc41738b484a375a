/*
 * cmd_bench.c - `ttaudit bench`: a load driver with honest numbers and a
 * correctness stage (bench/driver.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "bench/benchreport.h"
#include "bench/driver.h"
#include "base/opt.h"

static struct driver_opts bench_o = {
	.repeats = 1, .temperature = -1, .timeout_s = 600, .stall_s = 60, .arrival = LOAD_CLOSED,
	.levels = { 1 }, .n_levels = 1,
};
static long long bench_in, bench_out_tokens, bench_prompts, bench_requests, bench_repeats = 1;
static long long bench_max_num_seqs, bench_pressure, bench_vocab;
static const char *bench_workload;
static bool bench_json, bench_no_progress;
static int bench_arrival_set;

/* --url: a new server; the --arm, --log and --capture after it are its own. */
static int bench_opt_url(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	if (bench_o.n_arms >= DRIVER_MAX_ARMS) {
		snprintf(err, n, "more than %d servers", DRIVER_MAX_ARMS);
		return -1;
	}
	bench_o.arms[bench_o.n_arms++].url = arg;
	return 0;
}

static int bench_opt_of_url(const struct opt *o, const char *arg, char *err, size_t n)
{
	struct driver_arm *a;

	if (!bench_o.n_arms) {
		snprintf(err, n, "comes after the --url it belongs to");
		return -1;
	}
	a = &bench_o.arms[bench_o.n_arms - 1];
	if (!strcmp(o->name, "arm"))
		a->arm = arg;
	else if (!strcmp(o->name, "log"))
		a->log = arg;
	else
		a->capture = arg;
	return 0;
}

static int bench_u64(const char *s, uint64_t *out)
{
	char *end;

	if (!*s || *s < '0' || *s > '9')
		return -1;
	*out = strtoull(s, &end, 10);
	return *end ? -1 : 0;
}

static int bench_opt_seed(const struct opt *o, const char *arg, char *err, size_t n)
{
	uint64_t *v = !strcmp(o->name, "seed") ? &bench_o.corpus_seed :
		      !strcmp(o->name, "prompt-seed") ? &bench_o.gen.seed : &bench_o.arrival_seed;

	if (bench_u64(arg, v)) {
		snprintf(err, n, "'%s' is not an unsigned integer", arg);
		return -1;
	}
	return 0;
}

/* --concurrency, --batch, --rate: "1,4,8" into the levels; one of them. */
static int bench_opt_levels(const struct opt *o, const char *arg, char *err, size_t n)
{
	char buf[512], *tok, *save = NULL, *end;

	if (bench_arrival_set++) {
		snprintf(err, n, "one of --concurrency, --batch, --rate");
		return -1;
	}
	bench_o.arrival = !strcmp(o->name, "concurrency") ? LOAD_CLOSED :
			  !strcmp(o->name, "batch") ? LOAD_BATCH : LOAD_POISSON;
	if (strlen(arg) >= sizeof(buf))
		goto bad;
	snprintf(buf, sizeof(buf), "%s", arg);
	bench_o.n_levels = 0;
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		double v;

		if (bench_o.n_levels >= DRIVER_MAX_LEVELS)
			goto bad;
		v = strtod(tok, &end);
		if (end == tok || *end || !(v >= 0))
			goto bad;
		bench_o.levels[bench_o.n_levels++] = v;
	}
	if (bench_o.n_levels)
		return 0;
bad:
	snprintf(err, n, "'%s' is not a comma-separated list of up to %d numbers", arg, DRIVER_MAX_LEVELS);
	return -1;
}

/* --correctness [reference|canary] */
static const char *const bench_corr_words[] = { "reference", "canary", "accuracy", NULL };

static int bench_opt_correctness(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	if (!arg || !strcmp(arg, "reference")) {
		bench_o.correctness = true;
		bench_o.canary = false;
		return 0;
	}
	if (!strcmp(arg, "canary")) {
		bench_o.canary = true;
		bench_o.correctness = false;
		return 0;
	}
	if (!strcmp(arg, "accuracy")) {
		bench_o.accuracy = true;
		bench_o.correctness = false;
		return 0;
	}
	snprintf(err, n, "'%s' is not a check: reference (the default), canary or accuracy", arg);
	return -1;
}

static const char *const bench_usage[] = {
	"bench --url URL [--arm NAME] [--url URL2 --arm NAME2 ...] [--spec arms.json | --no-arm-check] "
	"--suite FILE [--concurrency L | --batch L | --rate L] [--correctness [--baseline P]] -o RUN.jsonl",
	"bench --url URL ... --input-tokens N --output-tokens N --prompts N [options] -o RUN.jsonl",
	NULL,
};

static const struct opt bench_opts[] = {
	OPT_GROUP("servers and arms"),
	OPT_CALL(0, "url", "URL", bench_opt_url,
		 "a server base URL; repeat for several arms, each followed by its own options"),
	OPT_CALL(0, "arm", "NAME", bench_opt_of_url,
		 "the arm the server before it runs; confirmed from its own output with --spec"),
	OPT_CALL(0, "log", "F", bench_opt_of_url, "where that server's banner can be read: its engine log"),
	OPT_CALL(0, "capture", "F", bench_opt_of_url, "where that server's banner can be read: its capture file"),
	OPT_STRING(0, "spec", &bench_o.spec, "FILE", "arm spec (JSON, see docs/arms.md)"),
	OPT_BOOL(0, "no-arm-check", &bench_o.no_arm_check, "skip confirmation; records say \"unconfirmed\""),
	OPT_STRING(0, "model", &bench_o.model, "NAME", "model id (default: the first /v1/models lists)"),
	OPT_NUM(0, "ready-timeout", &bench_o.ready_timeout, "S", 1e-3, 1e9,
		"readiness ladder deadline (default 600)"),
	OPT_GROUP("prompts"),
	OPT_STRING(0, "suite", &bench_o.suite, "FILE", "JSONL {id, prompt | messages, max_tokens, expect?}"),
	OPT_INT(0, "input-tokens", &bench_in, "N", 1, 100000000,
		"generated prompts of N tokens, sized with the server's /tokenize (two generation probes "
		"when it has none)"),
	OPT_INT(0, "output-tokens", &bench_out_tokens, "N", 1, 100000000, "max_tokens of the generated prompts"),
	OPT_INT(0, "prompts", &bench_prompts, "N", 1, 100000000, "how many prompts to generate"),
	OPT_BOOL(0, "chat", &bench_o.gen.chat, "generated prompts as chat messages"),
	OPT_CALL(0, "prompt-seed", "S", bench_opt_seed, "seed of the generated prompts"),
	OPT_CALL(0, "seed", "S", bench_opt_seed,
		 "corpus seed: per-request nonces that keep a cold run cold (default: from the clock; recorded)"),
	OPT_BOOL(0, "warm", &bench_o.warm, "one shared session instead: the prefix cache may serve it"),
	OPT_GROUP("load"),
	OPT_CALL(0, "concurrency", "L", bench_opt_levels, "closed loop at each level of the list (default 1)"),
	OPT_CALL(0, "batch", "L", bench_opt_levels, "each level launched at once"),
	OPT_CALL(0, "rate", "L", bench_opt_levels, "Poisson arrivals at each rate (requests/s)"),
	OPT_CALL(0, "arrival-seed", "S", bench_opt_seed, "seed of the Poisson arrivals"),
	OPT_STRING(0, "workload", &bench_workload, "W",
		   "plain (default) or churn: mixed max_tokens, client aborts, sync-forcing requests, a shared "
		   "prefix evicted and sent again, levels crossing --max-num-seqs (docs/bench.md)"),
	OPT_INT(0, "vocab-size", &bench_vocab, "N", 1, 1000000000,
		"the model's vocabulary: token ids at or past it are counted (tt-metal #52176)"),
	OPT_INT(0, "max-num-seqs", &bench_max_num_seqs, "N", 1, 4096,
		"the server's max_num_seqs: churn runs at half, once, 4x and 32x it unless levels are given"),
	OPT_INT(0, "churn-pressure", &bench_pressure, "W", 0, 100000,
		"churn: words of each pressure request's preface, to evict the shared prefix (default 512)"),
	OPT_INT(0, "requests", &bench_requests, "N", 1, 100000000, "requests per run (default: the suite, at least the level)"),
	OPT_INT(0, "repeats", &bench_repeats, "N", 1, DRIVER_MAX_REPEATS,
		"repeats, interleaved across arms; a spread over 15% is UNSTABLE"),
	OPT_NUM(0, "temperature", &bench_o.temperature, "T", 0, 1e6, "sent with every request (default: the server's)"),
	OPT_BOOL(0, "ignore-eos", &bench_o.ignore_eos, "ask the server to generate max_tokens"),
	OPT_BOOL(0, "no-stream-usage", &bench_o.no_usage, "do not ask for the usage block (token counts from chunks)"),
	OPT_NUM(0, "timeout", &bench_o.timeout_s, "S", 1e-6, 1e9, "per request (default 600)"),
	OPT_NUM(0, "stall", &bench_o.stall_s, "S", 1e-6, 1e9, "silence limit of a stream (default 60)"),
	OPT_GROUP("checks and output"),
	OPT_WORD(0, "correctness", "[canary|accuracy]", bench_opt_correctness, bench_corr_words,
		 "reference (the default): every prompt alone at temperature 0, the same bodies under load "
		 "compared with it; canary: every request its own marker to repeat, every output searched "
		 "for every request's marker; accuracy: graded tasks at every level, the last --url the "
		 "synchronous control (docs/bench.md)"),
	OPT_BOOL(0, "margins", &bench_o.margins,
		 "after the load, one quiet request per diverged output (--correctness) re-scores it with "
		 "the server's echo logprobs and labels the divergence: near-tie, low-probability, "
		 "duplicated-token, past-vocabulary or not-evaluable (why); logprobs are never asked for "
		 "under load (docs/bench.md)"),
	OPT_NUM(0, "margin-eps", &bench_o.margin_eps, "E", 1e-9, 1e6,
		"--margins: a divergence whose two tokens' logprobs differ by less than E nats is a near "
		"tie (default 0.1)"),
	OPT_NUM(0, "baseline", &bench_o.baseline, "P", 1e-12, 0.999999,
		"the failure rate per request a clean correctness stage must rule out (0.0048 for 0.48%): "
		"0 failing of too few requests is INCONCLUSIVE, with the number that would do"),
	OPT_NUM(0, "confidence", &bench_o.confidence, "C", 0.5, 0.999999,
		"two-sided confidence of the correctness intervals and the baseline check (default 0.95)"),
	OPT_STRING('o', "output", &bench_o.out, "FILE", "run records (JSONL)"),
	OPT_BOOL(0, "token-times", &bench_o.token_times, "every token's receive time in the request records"),
	OPT_BOOL(0, "loop-times", &bench_o.loop_times,
		 "time tokens when the loop reads them, not by the kernel's receive stamps (to compare the two)"),
	OPT_BOOL(0, "json", &bench_json, "the summary as JSON on stdout"),
	OPT_BOOL(0, "no-progress", &bench_no_progress, "no progress bar (it is drawn only on a terminal)"),
	OPT_END(),
};

const struct cmd_doc cmd_bench_doc = {
	.name = "bench",
	.summary = "load a server: honest latency and throughput, correctness under load",
	.usage = bench_usage,
	.description =
		"Gates every server (the readiness ladder up to a real generated token; a named arm "
		"CONFIRMED from the server's own output, fail closed), builds or reads the prompts, runs "
		"every cell (arm x level x repeat, repeats interleaved across arms) and writes the run "
		"records; no record is written past a failed gate. The summary gives per cell the median "
		"repeat by output tokens/s and its spread.\n"
		"\n"
		"--correctness sends every prompt alone at temperature 0 as the reference, then the same "
		"bodies under load, and calls each request identical, diverged at token k, wrong (an "
		"`expect` string missing) or failed. Each server's failing requests are said with their "
		"Clopper-Pearson interval, and 0 of N as the rates it rules out. Its verdict per server: "
		"FAIL (a failing request, or a wrong or failed reference), INCONCLUSIVE (0 failing of too "
		"few requests to rule out --baseline; the number that would is given), PASS.\n"
		"\n"
		"--correctness canary gives every request a marker of its own in a task whose answer "
		"repeats it and searches every output for its own marker and every other request's (text, "
		"and token ids where the server returns them): clean, leaked (the donor, the output "
		"position, whether the donor had finished), own marker lost (only where a calibration "
		"shows the model repeats; else not evaluable). Decoy markers never sent measure chance "
		"matches. No logprobs, penalties or structured output are asked for.\n"
		"\n"
		"--correctness accuracy grades tasks with exact answers (the suite's `expect`, or a bundled "
		"set of copy tasks and sums) at every level; with two servers or more the last is the "
		"synchronous control (async scheduling off) and each other server's accuracy per level is "
		"compared with it by Fisher's exact test: FAIL when lower and separated.",
	.opts = bench_opts,
	.exit_notes = "a request failed, the correctness or canary stage did not PASS (FAIL or INCONCLUSIVE), or a gate failed",
};

int cmd_bench(int argc, char **argv)
{
	struct driver_opts *o = &bench_o;
	struct driver_report rep;
	struct status_info si;
	enum status st;
	char *js;
	int n, rc;

	memset(&si, 0, sizeof(si));
	o->corpus_seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
	n = cli_parse(&cmd_bench_doc, argc, argv, CLI_NO_OPERANDS, &rc);
	if (n < 0)
		return rc;
	if (!o->n_arms)
		return cli_usage_error("bench", "--url is required");
	if (!o->out)
		return cli_usage_error("bench", "-o RUN.jsonl is required");
	o->gen.input_tokens = (long)bench_in;
	o->gen.max_tokens = (long)bench_out_tokens;
	o->gen.n_prompts = (size_t)bench_prompts;
	o->n_requests = (size_t)bench_requests;
	o->repeats = (unsigned)bench_repeats;
	if (o->canary && (o->suite || bench_in || bench_prompts))
		return cli_usage_error("bench", "--correctness canary writes its own prompts (--chat and "
				       "--output-tokens shape them): no --suite, --input-tokens or --prompts");
	if (o->suite && (bench_in || bench_prompts || ((bench_out_tokens || o->gen.chat) && !o->accuracy)))
		return cli_usage_error("bench", "--suite or generated prompts, not both");
	if (o->accuracy && (bench_in || bench_prompts))
		return cli_usage_error("bench", "--correctness accuracy grades the bundled tasks or --suite FILE: "
				       "no --input-tokens or --prompts");
	if (!o->canary && !o->accuracy && !o->suite && (!o->gen.input_tokens || !o->gen.max_tokens || !o->gen.n_prompts))
		return cli_usage_error("bench", "--suite FILE, or --input-tokens, --output-tokens and --prompts");
	if (o->baseline > 0 && !o->correctness && !o->canary)
		return cli_usage_error("bench", "--baseline is the failure rate the correctness stage must rule "
				       "out: it needs --correctness");
	if ((o->margins || o->margin_eps > 0) && !o->correctness)
		return cli_usage_error("bench", "--margins re-scores the divergences of --correctness (the "
				       "reference check): it needs --correctness");
	if (o->margin_eps > 0 && !o->margins)
		return cli_usage_error("bench", "--margin-eps belongs to --margins");
	if (bench_workload && strcmp(bench_workload, "plain") && strcmp(bench_workload, "churn"))
		return cli_usage_error("bench", "--workload '%s': want plain or churn", bench_workload);
	o->churn = bench_workload && !strcmp(bench_workload, "churn");
	o->max_num_seqs = (unsigned)bench_max_num_seqs;
	o->vocab_size = (long)bench_vocab;
	o->churn_pressure = (size_t)bench_pressure;
	if ((bench_pressure) && !o->churn)
		return cli_usage_error("bench", "--churn-pressure belongs to --workload churn");
	if (o->churn && !bench_arrival_set) {
		if (!o->max_num_seqs)
			return cli_usage_error("bench", "--workload churn needs the server's --max-num-seqs N (its "
					       "levels cross it) or levels of its own (--concurrency L)");
		o->n_levels = churn_levels(o->max_num_seqs, LOAD_MAX_INFLIGHT, o->levels);
	}
	o->gen.warm = o->warm;
	o->log_to = stderr;
	o->progress = !bench_no_progress && isatty(STDERR_FILENO) ? stderr : NULL;
	st = driver_run(o, &rep, &si);
	if (st) {
		cli_report_status("bench", st, &si);
		driver_report_release(&rep);
		return CLI_USAGE;
	}
	if (bench_json) {
		js = benchreport_json(&rep);
		if (!js) {
			driver_report_release(&rep);
			return cli_usage_error("bench", "out of memory");
		}
		printf("%s\n", js);
		free(js);
	} else {
		benchreport_print(&rep, stdout);
	}
	rc = rep.gate_failed || rep.total_failed || (rep.correctness && rep.corr_verdict != DRIVER_PASS) ||
		     (rep.canary && rep.can_verdict != DRIVER_PASS) || (rep.accuracy && rep.acc_verdict != DRIVER_PASS)
		     ? CLI_FAIL : CLI_OK;
	if (rep.gate_failed && bench_json)
		fprintf(stderr, "ttaudit bench: %s\n", rep.gate_message);
	driver_report_release(&rep);
	return rc;
}
