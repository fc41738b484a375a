/*
 * main.c - ttsim's command line: `ttsim serve` (the simulated vLLM server)
 * and `ttsim run` (the offline what-if driver). Thin: options in, library
 * calls, output. Exit codes: 0 ok, 1 failure at run time, 2 bad usage.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "audit.h"
#include "guard.h"
#include "log.h"
#include "model.h"
#include "run.h"
#include "server.h"

#ifndef TTAUDIT_VERSION
#define TTAUDIT_VERSION "0"
#endif

static int main_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int main_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ttsim %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(try 'ttsim %s --help')\n", cmd);
	return 2;
}

static bool main_ll(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	long long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool main_dbl(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v >= lo && v <= hi))
		return false;
	*out = v;
	return true;
}

/* "MIN:MAX" of positive ints. */
static bool main_range(const char *s, int *lo, int *hi)
{
	long long a, b;
	char buf[64], *colon;

	if (!s || strlen(s) >= sizeof(buf))
		return false;
	strcpy(buf, s);
	colon = strchr(buf, ':');
	if (!colon)
		return main_ll(buf, 1, 1 << 20, &a) && (*lo = *hi = (int)a, true);
	*colon = 0;
	if (!main_ll(buf, 1, 1 << 20, &a) || !main_ll(colon + 1, 1, 1 << 20, &b) || b < a)
		return false;
	*lo = (int)a;
	*hi = (int)b;
	return true;
}

/* Options both commands share: the model. Returns 1 when handled, 0 when
 * not ours, 2 on a bad value. */
static int main_model_opt(const char *cmd, int opt, const char *arg,
			  struct ttsim_model_config *mc, bool *arm_set)
{
	long long v;
	double d;
	struct status_info si;

	status_info_clear(&si);
	switch (opt) {
	case 'a':
		if (ttsim_guard_parse(arg, &mc->arm, &si))
			return main_usage_error(cmd, "--arm %s", si.msg);
		*arm_set = true;
		return 1;
	case 'b':
		if (!main_ll(arg, 1, TTSIM_MAX_SLOTS, &v))
			return main_usage_error(cmd, "--slots '%s': want 1..%d", arg, TTSIM_MAX_SLOTS);
		mc->slots = (int)v;
		return 1;
	case 's':
		if (!main_ll(arg, 0, (long long)(~0ull >> 1), &v))
			return main_usage_error(cmd, "--seed '%s': want a non-negative integer", arg);
		mc->seed = (unsigned long long)v;
		return 1;
	case 'L':
		if (!main_ll(arg, 16, 1ll << 30, &v))
			return main_usage_error(cmd, "--max-model-len '%s': want 16..2^30", arg);
		mc->max_model_len = v;
		return 1;
	case 'R':
		if (!main_ll(arg, 1, 1 << 20, &v))
			return main_usage_error(cmd, "--refresh-every '%s': want >= 1", arg);
		mc->refresh_every = (int)v;
		return 1;
	case 'g':
		if (!main_dbl(arg, 0, 1, &d))
			return main_usage_error(cmd, "--garbage-rate '%s': want 0..1", arg);
		mc->garbage_rate = d;
		return 1;
	case 'P':
		if (!main_ll(arg, 1, TTSIM_MAX_SLOTS, &v))
			return main_usage_error(cmd, "--max-prefills '%s': want 1..%d", arg,
						TTSIM_MAX_SLOTS);
		mc->max_prefills = (int)v;
		return 1;
	case 'C':
		if (!main_ll(arg, 0, 1 << 22, &v))
			return main_usage_error(cmd, "--cache-blocks '%s': want 0..2^22", arg);
		mc->cache_blocks = (int)v;
		return 1;
	default:
		return 0;
	}
}

#define MODEL_OPTS \
	{ "arm", required_argument, NULL, 'a' }, \
	{ "slots", required_argument, NULL, 'b' }, \
	{ "seed", required_argument, NULL, 's' }, \
	{ "max-model-len", required_argument, NULL, 'L' }, \
	{ "refresh-every", required_argument, NULL, 'R' }, \
	{ "garbage-rate", required_argument, NULL, 'g' }, \
	{ "max-prefills", required_argument, NULL, 'P' }, \
	{ "cache-blocks", required_argument, NULL, 'C' }, \
	{ "help", no_argument, NULL, 'h' }

static const char main_model_help[] =
	"  --arm R             guard arm: bare, prefilled, batch, lifetime, stamp, bound or a+b\n"
	"                      (serve: default from QWEN36_* environment variables)\n"
	"  --slots B           max_num_seqs (default 8)\n"
	"  --seed S            seed of tokens, workload and faults (default 0)\n"
	"  --max-model-len N   context length, also the bound rule's limit (default 131072)\n"
	"  --refresh-every K   host copy of the device buffer refreshed every K-th decode\n"
	"                      (default 4; 1 = always fresh)\n"
	"  --garbage-rate P    chance an idle slot's device position is float32 garbage (0)\n"
	"  --max-prefills N    consecutive prefill steps before a decode (default: slots)\n"
	"  --cache-blocks N    prefix cache capacity in 16-token blocks (default 4096, 0 = off)\n";

/* --- ttsim run ----------------------------------------------------------- */

static int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		MODEL_OPTS,
		{ "steps", required_argument, NULL, 'n' },
		{ "audit", required_argument, NULL, 'A' },
		{ "prompt", required_argument, NULL, 'p' },
		{ "gen", required_argument, NULL, 'G' },
		{ "queue", required_argument, NULL, 'q' },
		{ "arrival", required_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 }
	};
	struct ttsim_run_config c;
	struct ttsim_run_result res;
	struct ttsim_audit *audit = NULL;
	struct status_info si;
	const char *audit_path = NULL;
	bool json = false, arm_set = false;
	long long v;
	int opt, r, rc = 2;

	ttsim_run_config_default(&c);
	c.model.max_prefills = TTSIM_MAX_SLOTS;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		r = main_model_opt("run", opt, optarg, &c.model, &arm_set);
		if (r == 1)
			continue;
		if (r == 2)
			return 2;
		switch (opt) {
		case 'n':
			if (!main_ll(optarg, 0, 1ll << 40, &c.steps))
				return main_usage_error("run", "--steps '%s': want a count", optarg);
			break;
		case 'A':
			audit_path = optarg;
			break;
		case 'p':
			if (!main_range(optarg, &c.prompt_min, &c.prompt_max))
				return main_usage_error("run", "--prompt '%s': want MIN:MAX", optarg);
			break;
		case 'G':
			if (!main_range(optarg, &c.gen_min, &c.gen_max))
				return main_usage_error("run", "--gen '%s': want MIN:MAX", optarg);
			break;
		case 'q':
			if (!main_ll(optarg, 1, 1 << 20, &v))
				return main_usage_error("run", "--queue '%s': want >= 1", optarg);
			c.queue = (int)v;
			break;
		case 'r':
			if (!main_dbl(optarg, 0, 1, &c.arrival))
				return main_usage_error("run", "--arrival '%s': want 0..1", optarg);
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			printf("usage: ttsim run [--steps N] [--slots B] [--seed S] [--arm R] "
			       "[--audit FILE] [--json] ...\n\n"
			       "Drives a synthetic closed-loop workload through the generator model, "
			       "no HTTP,\nwrites the merge audit, and prints substitutions per 1,000 "
			       "merges and per request\nfor the engaged arm, and what every rule would "
			       "have done on the same merges.\n\n"
			       "  --steps N           ticks, one model step each (default 10000)\n"
			       "  --audit FILE        write the audit (JSONL, '-' = stdout)\n"
			       "  --prompt MIN:MAX    prompt tokens per request (default 16:48)\n"
			       "  --gen MIN:MAX       max_tokens per request (default 8:64)\n"
			       "  --queue N           closed loop: waiting requests kept queued "
			       "(default: slots)\n"
			       "  --arrival P         open loop instead: a request arrives with chance P "
			       "per tick,\n"
			       "                      so slots idle at times (the batch guard and "
			       "garbage matter)\n"
			       "  --json              the summary as one JSON object\n%s",
			       main_model_help);
			return 0;
		default:
			return main_usage_error("run", "unknown option");
		}
	}
	if (optind < argc)
		return main_usage_error("run", "unexpected argument '%s'", argv[optind]);
	c.model.arm_claimed = c.model.arm;
	status_info_clear(&si);
	if (audit_path && ttsim_audit_open(audit_path, false, &audit, &si)) {
		fprintf(stderr, "ttsim run: %s: %s\n", si.file, si.msg);
		return 2;
	}
	if (ttsim_run(&c, audit, &res, &si)) {
		fprintf(stderr, "ttsim run: %s\n", si.msg);
		goto out;
	}
	if (ttsim_audit_lost(audit)) {
		fprintf(stderr, "ttsim run: %s: %llu audit lines could not be written\n", audit_path,
			ttsim_audit_lost(audit));
		rc = 1;
		goto out;
	}
	ttsim_run_print(stdout, &res, json);
	rc = 0;
out:
	ttsim_audit_free(audit);
	return rc;
}

/* --- ttsim serve ----------------------------------------------------------- */

/* Raises the descriptor limit to its hard limit; returns how many
 * connections that leaves room for (a few descriptors kept for files). */
static unsigned main_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 1000;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536 + 64)
		return 65536;
	return rl.rlim_cur > 128 ? (unsigned)(rl.rlim_cur - 64) : 64;
}

static void main_banners(const struct ttsim_server_config *c, unsigned banner_arm,
			 bool banner, int port_arg)
{
	const struct ttsim_model_config *m = &c->model;
	const char *lines[TTSIM_RULE_COUNT + 1];
	size_t i, n;
	int fd = STDERR_FILENO;

	ttsim_log(fd, "INFO", "api_server.py:1805", "vLLM API server version 0.10.1+ttsim");
	ttsim_log(fd, "INFO", "utils.py:326", "non-default args: {'model': '%s', 'host': "
		  "'127.0.0.1', 'port': %d, 'seed': %llu, 'max_model_len': %lld, "
		  "'max_num_seqs': %d, 'enable_prefix_caching': %s}", c->model_name, port_arg,
		  m->seed, m->max_model_len, m->slots, m->cache_blocks > 0 ? "True" : "False");
	ttsim_log(fd, "INFO", "core.py:69", "Initializing a V1 LLM engine (v0.10.1+ttsim) with "
		  "config: model='%s', speculative_config=None, tokenizer='%s', "
		  "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
		  "trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=%lld, "
		  "download_dir=None, load_format=auto, tensor_parallel_size=1, "
		  "pipeline_parallel_size=1, device_config=tt, seed=%llu, served_model_name=%s, "
		  "enable_prefix_caching=%s, max_num_seqs=%d, async_output_proc=True",
		  c->model_name, c->model_name, m->max_model_len, m->seed, c->model_name,
		  m->cache_blocks > 0 ? "True" : "False", m->slots);
	ttsim_log(fd, "INFO", "tt_model_runner.py:212", "TT model runner: trace mode enabled "
		  "(decode), sampling on device: decode_only, async-ahead decode: on, host buffer "
		  "refresh every %d decode(s)", m->refresh_every);
	ttsim_log(fd, "INFO", "kv_cache_utils.py:829", "GPU KV cache size: %lld tokens",
		  (long long)m->slots * m->max_model_len);
	ttsim_log(fd, "INFO", "kv_cache_utils.py:833", "Maximum concurrency for %lld tokens per "
		  "request: %d.00x", m->max_model_len, m->slots);
	if (banner) {
		n = ttsim_guard_banners(banner_arm, lines, TTSIM_RULE_COUNT + 1);
		for (i = 0; i < n && i < TTSIM_RULE_COUNT + 1; i++)
			ttsim_log(fd, "INFO", "generator.py:1930", "%s", lines[i]);
	}
}

static int main_write_port_file(const char *path, int port)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -1;
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%d\n", port);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		MODEL_OPTS,
		{ "port", required_argument, NULL, 'p' },
		{ "port-file", required_argument, NULL, 'F' },
		{ "model", required_argument, NULL, 'm' },
		{ "time-scale", required_argument, NULL, 't' },
		{ "default-max-tokens", required_argument, NULL, 'D' },
		{ "audit", required_argument, NULL, 'A' },
		{ "no-audit", no_argument, NULL, 'N' },
		{ "send-log", required_argument, NULL, 'S' },
		{ "fault", required_argument, NULL, 'f' },
		{ "error-rate", required_argument, NULL, 'e' },
		{ "reset-rate", required_argument, NULL, 'r' },
		{ "stall-rate", required_argument, NULL, 'w' },
		{ "stall-time", required_argument, NULL, 'W' },
		{ "truncate-rate", required_argument, NULL, 'T' },
		{ "noise", required_argument, NULL, 'o' },
		{ "load-time", required_argument, NULL, 'l' },
		{ "never-generate", no_argument, NULL, 'X' },
		{ NULL, 0, NULL, 0 }
	};
	struct ttsim_server_config c;
	struct ttsim_server *srv = NULL;
	struct ttsim_audit *audit = NULL;
	struct status_info si;
	const char *audit_path = NULL, *port_file = NULL;
	bool arm_set = false, no_audit = false, fault_banner_only = false, fault_no_banner = false;
	long long v;
	double *dp;
	unsigned arm;
	sigset_t sigs;
	int opt, r, sig = 0, rc = 1;

	ttsim_server_config_default(&c);
	c.model.max_prefills = TTSIM_MAX_SLOTS;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		r = main_model_opt("serve", opt, optarg, &c.model, &arm_set);
		if (r == 1)
			continue;
		if (r == 2)
			return 2;
		dp = NULL;
		switch (opt) {
		case 'p':
			if (!main_ll(optarg, 0, 65535, &v))
				return main_usage_error("serve", "--port '%s': want 0..65535", optarg);
			c.port = (int)v;
			break;
		case 'F':
			port_file = optarg;
			break;
		case 'm':
			if (!*optarg || strlen(optarg) >= 200)
				return main_usage_error("serve", "--model: want 1..199 characters");
			c.model_name = optarg;
			break;
		case 't':
			if (!main_dbl(optarg, 0, 1000, &c.time_scale))
				return main_usage_error("serve", "--time-scale '%s': want 0..1000", optarg);
			break;
		case 'D':
			if (!main_ll(optarg, 1, 1 << 20, &v))
				return main_usage_error("serve", "--default-max-tokens '%s'", optarg);
			c.default_max_tokens = (int)v;
			break;
		case 'A':
			audit_path = optarg;
			break;
		case 'N':
			no_audit = true;
			break;
		case 'S':
			c.send_log = optarg;
			break;
		case 'f':
			if (!strcmp(optarg, "banner-only"))
				fault_banner_only = true;
			else if (!strcmp(optarg, "no-banner"))
				fault_no_banner = true;
			else
				return main_usage_error("serve", "--fault '%s': want banner-only or "
							"no-banner", optarg);
			break;
		case 'e': dp = &c.error_rate; break;
		case 'r': dp = &c.reset_rate; break;
		case 'w': dp = &c.stall_rate; break;
		case 'T': dp = &c.truncate_rate; break;
		case 'o':
			if (!main_dbl(optarg, 0, 100, &c.noise))
				return main_usage_error("serve", "--noise '%s': want 0..100", optarg);
			break;
		case 'W':
			if (!main_dbl(optarg, 0, 3600, &c.stall_s))
				return main_usage_error("serve", "--stall-time '%s': want seconds", optarg);
			break;
		case 'l':
			if (!main_dbl(optarg, 0, 86400, &c.load_time_s))
				return main_usage_error("serve", "--load-time '%s': want seconds", optarg);
			break;
		case 'X':
			c.never_generate = true;
			break;
		case 'h':
			printf("usage: ttsim serve [--port P] [--port-file F] [--arm R] [--slots B] "
			       "[--seed S] ...\n\n"
			       "A simulated tt-metal vLLM server on 127.0.0.1 whose generator has the "
			       "real async-ahead\nmerge. Banners and the merge audit go to stderr.\n\n"
			       "  --port P            port, 0 = any free one (printed on stderr)\n"
			       "  --port-file F       write the bound port to F\n"
			       "  --model NAME        served model id (default ttsim/qwen36-sim)\n"
			       "  --time-scale X      wall seconds per modeled second (default 1; 0 = "
			       "instant)\n"
			       "  --default-max-tokens N  max_tokens when a request gives none (16)\n"
			       "  --audit FILE        the audit as plain JSONL in FILE, not on stderr\n"
			       "  --no-audit          no audit at all\n"
			       "  --send-log FILE     JSONL per streamed token: req, i, CLOCK_MONOTONIC "
			       "mono_start and mono\n"
			       "                      (the send(2) that carried it began and returned)\n"
			       "faults (seeded by --seed):\n"
			       "  --fault banner-only print the arm's banner but merge bare\n"
			       "  --fault no-banner   engage the arm without its banner\n"
			       "  --error-rate P      answer 500\n"
			       "  --reset-rate P      reset the connection mid-stream\n"
			       "  --stall-rate P      pause a stream for --stall-time S (default 2)\n"
			       "  --truncate-rate P   end a stream early without [DONE]\n"
			       "  --noise P           step time x (1 + P*u), u redrawn every 256 steps\n"
			       "  --load-time S       every route answers 503 for S seconds\n"
			       "  --never-generate    accept requests, never produce a token\n%s",
			       main_model_help);
			return 0;
		default:
			return main_usage_error("serve", "unknown option");
		}
		if (dp && !main_dbl(optarg, 0, 1, dp))
			return main_usage_error("serve", "fault rate '%s': want 0..1", optarg);
	}
	if (optind < argc)
		return main_usage_error("serve", "unexpected argument '%s'", argv[optind]);
	if (fault_banner_only && fault_no_banner)
		return main_usage_error("serve", "--fault banner-only and no-banner exclude each other");
	arm = arm_set ? c.model.arm : ttsim_guard_from_env();
	c.model.arm = fault_banner_only ? 0 : arm;
	c.model.arm_claimed = arm;

	status_info_clear(&si);
	if (!no_audit) {
		if (audit_path) {
			if (ttsim_audit_open(audit_path, false, &audit, &si)) {
				fprintf(stderr, "ttsim serve: %s: %s\n", si.file, si.msg);
				return 2;
			}
		} else {
			audit = ttsim_audit_new_fd(STDERR_FILENO, true);
			if (!audit) {
				fprintf(stderr, "ttsim serve: out of memory\n");
				return 1;
			}
		}
	}
	c.audit = audit;
	c.max_connections = main_raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	/* Block the stop signals in every thread; main waits for them below. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	main_banners(&c, arm, !fault_no_banner, c.port);
	if (ttsim_server_start(&c, &srv, &si)) {
		fprintf(stderr, "ttsim serve: %s\n", si.msg);
		goto out;
	}
	ttsim_log(STDERR_FILENO, "INFO", "api_server.py:1880", "Starting vLLM API server 0 on "
		  "http://127.0.0.1:%d", ttsim_server_port(srv));
	fprintf(stderr, "ttsim: listening on 127.0.0.1:%d\n", ttsim_server_port(srv));
	if (port_file && main_write_port_file(port_file, ttsim_server_port(srv)) < 0) {
		fprintf(stderr, "ttsim serve: %s: cannot write the port file: %s\n", port_file,
			strerror(errno));
		goto out;
	}
	fprintf(stderr, "INFO:     Application startup complete.\n");
	sigwait(&sigs, &sig);
	ttsim_log(STDERR_FILENO, "INFO", "launcher.py:80", "Shutting down FastAPI HTTP server.");
	rc = 0;
out:
	ttsim_server_stop(srv);
	if (audit && ttsim_audit_lost(audit)) {
		fprintf(stderr, "ttsim serve: %llu audit lines could not be written\n",
			ttsim_audit_lost(audit));
		rc = 1;
	}
	ttsim_audit_free(audit);
	return rc;
}

static void main_usage(FILE *f)
{
	fprintf(f, "usage: ttsim <command> [options]\n\n"
		   "commands:\n"
		   "  serve   a simulated tt-metal vLLM server with the async-ahead merge\n"
		   "  run     the generator model offline: substitution rates per guard arm\n\n"
		   "'ttsim <command> --help' shows a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		main_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		main_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ttsim %s\n", TTAUDIT_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (!strcmp(argv[1], "run"))
		return cmd_run(argc - 1, argv + 1);
	fprintf(stderr, "ttsim: '%s' is not a command\n", argv[1]);
	main_usage(stderr);
	return 2;
}
