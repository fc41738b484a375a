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
#include <fcntl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
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

/* "1,2,4,8": ascending positive widths; the model checks them against the
 * chunk's rows. */
static bool main_buckets(const char *s, struct ttsim_model_config *mc)
{
	char buf[256], *p, *tok, *save = NULL;
	long long v;
	int n = 0;

	if (!s || !*s || strlen(s) >= sizeof(buf))
		return false;
	strcpy(buf, s);
	for (p = buf; (tok = strtok_r(p, ",", &save)); p = NULL) {
		if (n == TTSIM_MAX_BUCKETS || !main_ll(tok, 1, TTSIM_MAX_SLOTS, &v) ||
		    (n && v <= mc->buckets[n - 1]))
			return false;
		mc->buckets[n++] = (int)v;
	}
	mc->n_buckets = n;
	return n > 0;
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
		/* the old stand-in for the buffer's staleness: there is no host
		 * copy on the real stack */
		return main_usage_error(cmd, "--refresh-every is gone: the keep reads the device's "
					"trace buffers, which every decode of their key rewrites; a "
					"stale one comes from --host-sampling P (decodes of another "
					"sampling mode) or --decode-buckets LIST (width changes) "
					"(docs/ttsim.md)");
	case 'H':
		if (!main_dbl(arg, 0, 1, &d))
			return main_usage_error(cmd, "--host-sampling '%s': want 0..1", arg);
		mc->host_sampling = d;
		return 1;
	case 'J':
		if (!strcmp(arg, "qwen36"))
			mc->generator = TTSIM_GEN_QWEN36;
		else if (!strcmp(arg, "generic"))
			mc->generator = TTSIM_GEN_GENERIC;
		else
			return main_usage_error(cmd, "--generator '%s': want qwen36 or generic", arg);
		return 1;
	case 'O':
		if (!strcmp(arg, "sampling+batch"))
			mc->trace_key_sampling = false;
		else if (!strcmp(arg, "sampling"))
			mc->trace_key_sampling = true;
		else
			return main_usage_error(cmd, "--trace-key '%s': want sampling+batch or sampling", arg);
		return 1;
	case 'B':
		if (!main_buckets(arg, mc))
			return main_usage_error(cmd, "--decode-buckets '%s': want ascending widths "
						"like 1,2,4,8 (at most %d)", arg, TTSIM_MAX_BUCKETS);
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
	case 'Z':
		if (!main_ll(arg, 1, TTSIM_MAX_SLOTS, &v))
			return main_usage_error(cmd, "--dp '%s': want 1..%d, dividing --slots", arg,
						TTSIM_MAX_SLOTS);
		mc->dp = (int)v;
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
	{ "host-sampling", required_argument, NULL, 'H' }, \
	{ "generator", required_argument, NULL, 'J' }, \
	{ "trace-key", required_argument, NULL, 'O' }, \
	{ "decode-buckets", required_argument, NULL, 'B' }, \
	{ "garbage-rate", required_argument, NULL, 'g' }, \
	{ "max-prefills", required_argument, NULL, 'P' }, \
	{ "cache-blocks", required_argument, NULL, 'C' }, \
	{ "dp", required_argument, NULL, 'Z' }, \
	{ "help", no_argument, NULL, 'h' }

static const char main_model_help[] =
	"  --arm R             guard arm: bare, prefilled, batch, lifetime, stamp, bound or a+b\n"
	"                      (serve: default from QWEN36_* environment variables)\n"
	"  --slots B           max_num_seqs (default 8)\n"
	"  --seed S            seed of tokens, workload and faults (default 0)\n"
	"  --max-model-len N   context length, also the bound rule's limit (default 131072)\n"
	"the keep (docs/ttsim.md): the device's trace buffers, rewritten by every decode\n"
	"of their key, are all it reads; these choose when one is stale:\n"
	"  --host-sampling P   chance a request needs host sampling: decodes with one sample\n"
	"                      on the host and leave the on-device trace's buffers behind (0)\n"
	"  --decode-buckets L  decode widths per chunk, e.g. 1,2,4,8: each width its own\n"
	"                      trace (default: padded to slots/dp, as the TT plugin pads)\n"
	"  --trace-key K       sampling+batch (default, tt-metal PR #53947) or sampling\n"
	"  --generator G       qwen36 (default: its prefill leaves the prefilled-slot set\n"
	"                      empty, the mask inert) or generic (Generator's prefill fills it)\n"
	"  --garbage-rate P    chance an idle row restaged reads as float32 garbage (0)\n"
	"  --max-prefills N    consecutive prefill steps before a decode (default: slots)\n"
	"  --cache-blocks N    prefix cache capacity in 16-token blocks (default 4096, 0 = off)\n"
	"  --dp N              the keep runs per data-parallel chunk of slots/N slots: one merge\n"
	"                      event with its \"dp\" per chunk (default 1)\n";

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

/* --- the engine core process ---------------------------------------------- *
 * vLLM runs its engine in a child process whose lines carry its own prefix
 * "(EngineCore_DP0 pid=N) ". ttsim does the same: `ttsim engine-core` is
 * exec'd with the read end of a pipe on fd 3 and writes, with its prefix,
 * what the server sends it, one line per record:
 *   L|LEVEL|where|text   a vLLM logger line on its stdout
 *   G|LEVEL|where|text   a loguru line on its stderr (tt-metal's model code,
 *                        the generator's audit and guard lines)
 *   S|text               a tt-metal C++ (spdlog) line on its stdout, as is
 *   Y|                   answer one byte on fd 4: every line before is written
 * So the engine lines, the audit and the guard lines are written by the
 * engine process, whose start record a capture has, as on the real stack. */

#define ENGINE_LINE_MAX (1u << 20)

static int main_engine_fd = -1;   /* the pipe to the engine process; -1 none */
static int main_engine_ack = -1;  /* its answers to Y records (fd 4 there); -1 none */
static pid_t main_engine_pid = -1;

/* One record to the engine process (or, without one, printed here). */
static void main_eng(char tag, const char *level, const char *where, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void main_eng(char tag, const char *level, const char *where, const char *fmt, ...)
{
	char line[8192], msg[7000];
	va_list ap;
	int w;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (main_engine_fd < 0) {
		if (tag == 'G')
			ttsim_loguru(STDERR_FILENO, level, where, "%s", msg);
		else if (tag == 'S')
			(void)dprintf(STDOUT_FILENO, "%s%s\n", ttsim_log_proc_prefix(1), msg);
		else
			ttsim_log(STDOUT_FILENO, level, where, "%s", msg);
		return;
	}
	if (tag == 'S')
		w = snprintf(line, sizeof(line), "S|%s\n", msg);
	else
		w = snprintf(line, sizeof(line), "%c|%s|%s|%s\n", tag, level, where, msg);
	if (w > 0)
		(void)ttsim_log_write_all(main_engine_fd, line, (size_t)w < sizeof(line) ? (size_t)w : sizeof(line) - 1);
}

/* Starts `ttsim engine-core`; without it the engine's lines are this
 * process's (said on stderr). */
static void main_engine_start(const char *engine_name)
{
	int pfd[2], afd[2];
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		goto none;
	/* without the answer pipe the engine's lines may come after "listening" */
	if (pipe2(afd, O_CLOEXEC))
		afd[0] = afd[1] = -1;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		if (afd[0] >= 0) {
			close(afd[0]);
			close(afd[1]);
		}
		goto none;
	}
	if (pid == 0) {
		/* fds 3 and 4 without close-on-exec (dup2 onto itself keeps the
		 * flag); afd[1] > pfd[0], so fd 3 is set first */
		if (pfd[0] == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(pfd[0], 3) < 0)
			_exit(127);
		if (afd[1] >= 0 && (afd[1] == 4 ? fcntl(4, F_SETFD, 0) < 0 : dup2(afd[1], 4) < 0))
			_exit(127);
		execl("/proc/self/exe", "ttsim", "engine-core", engine_name, (char *)NULL);
		_exit(127);
	}
	close(pfd[0]);
	if (afd[1] >= 0)
		close(afd[1]);
	main_engine_fd = pfd[1];
	main_engine_ack = afd[0];
	main_engine_pid = pid;
	return;
none:
	fprintf(stderr, "ttsim serve: no engine process (%s): its lines are printed by this one\n",
		strerror(errno));
}

/* Waits (10 s at most) until the engine process has written every line sent
 * so far: vLLM's API server starts serving only once its engine core is up,
 * so the engine's start-up lines come before "listening" and the port file. */
static void main_engine_sync(void)
{
	struct pollfd p;
	char b;
	int r;

	if (main_engine_fd < 0 || main_engine_ack < 0 ||
	    ttsim_log_write_all(main_engine_fd, "Y|\n", 3) < 0)
		return;
	p.fd = main_engine_ack;
	p.events = POLLIN;
	while ((r = poll(&p, 1, 10000)) < 0 && errno == EINTR)
		;
	if (r > 0)
		(void)!read(main_engine_ack, &b, 1);
}

static void main_engine_stop(void)
{
	int st;

	if (main_engine_ack >= 0)
		close(main_engine_ack);
	main_engine_ack = -1;
	if (main_engine_fd < 0)
		return;
	close(main_engine_fd);
	main_engine_fd = -1;
	while (waitpid(main_engine_pid, &st, 0) < 0 && errno == EINTR)
		;
}

/* `ttsim engine-core NAME`: prefixes what fd 3 brings until it closes. */
static int cmd_engine_core(const char *name)
{
	char *buf = malloc(ENGINE_LINE_MAX + 1), *line, *nl, *f1, *f2, *f3;
	size_t len = 0, off;
	ssize_t got;
	sigset_t sigs;

	if (!buf)
		return 1;
	/* the server stops it by closing the pipe, after its last line */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	ttsim_log_setup(name && (!strcmp(name, "EngineCore") || !strcmp(name, "EngineCore_DP0")) ?
			name : "EngineCore_DP0");
	for (;;) {
		got = read(3, buf + len, ENGINE_LINE_MAX - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
		off = 0;
		while ((nl = memchr(buf + off, '\n', len - off)) || len == ENGINE_LINE_MAX) {
			line = buf + off;
			if (!nl)
				nl = buf + len - 1;   /* an overlong record: cut */
			*nl = '\0';
			off = (size_t)(nl - buf) + 1;
			if (line[0] == 'Y' && line[1] == '|') {
				(void)!write(4, "y", 1);
				continue;
			}
			if (line[0] == 'S' && line[1] == '|') {
				(void)dprintf(STDOUT_FILENO, "%s%s\n", ttsim_log_proc_prefix(1), line + 2);
				continue;
			}
			f1 = line[1] == '|' ? line + 2 : NULL;
			f2 = f1 ? strchr(f1, '|') : NULL;
			f3 = f2 ? strchr(f2 + 1, '|') : NULL;
			if (!f3)
				continue;
			*f2 = *f3 = '\0';
			if (line[0] == 'G')
				ttsim_loguru(STDERR_FILENO, f1, f2 + 1, "%s", f3 + 1);
			else
				ttsim_log(STDOUT_FILENO, f1, f2 + 1, "%s", f3 + 1);
			if (len == off)
				break;
		}
		memmove(buf, buf + off, len - off);
		len -= off;
	}
	free(buf);
	return 0;
}

/* A number with thousands separators, as vLLM prints token counts. */
static const char *main_thousands(long long v, char *buf, size_t n)
{
	char raw[32];
	size_t len, i, k = 0;

	snprintf(raw, sizeof(raw), "%lld", v);
	len = strlen(raw);
	for (i = 0; i < len && k + 2 < n; i++) {
		if (i && (len - i) % 3 == 0 && raw[i - 1] != '-')
			buf[k++] = ',';
		buf[k++] = raw[i];
	}
	buf[k] = '\0';
	return buf;
}

/* The start-up lines vLLM's API server prints (this process). */
static void main_api_banners(const struct ttsim_server_config *c, int port_arg)
{
	const struct ttsim_model_config *m = &c->model;
	const char *ver = ttsim_server_version(c);

	/* vLLM PR #32796: the logo (no colour unless the stream is coloured);
	 * 0.10 printed "vLLM API server version X" */
	if (c->vllm_minor == 10)
		ttsim_log(STDOUT_FILENO, "INFO", "api_server.py:1805", "vLLM API server version %s", ver);
	else if (getenv("VLLM_DISABLE_LOG_LOGO") && strcmp(getenv("VLLM_DISABLE_LOG_LOGO"), "0"))
		ttsim_log(STDOUT_FILENO, "INFO", "utils.py:299", "vLLM server version %s, serving model %s",
			  ver, c->model_name);
	else
		ttsim_log(STDOUT_FILENO, "INFO", "utils.py:299",
			  "\n       \u2588     \u2588     \u2588\u2584   \u2584\u2588\n"
			  " \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version %s\n"
			  "  \u2588\u2584\u2588\u2580 \u2588     \u2588     \u2588     \u2588  model   %s\n"
			  "   \u2580\u2580  \u2580\u2580\u2580\u2580\u2580 \u2580\u2580\u2580\u2580\u2580 \u2580     \u2580\n",
			  ver, c->model_name);
	ttsim_log(STDOUT_FILENO, "INFO", "utils.py:326", "non-default args: {'model': '%s', 'host': "
		  "'127.0.0.1', 'port': %d, 'seed': %llu, 'max_model_len': %lld, "
		  "'max_num_seqs': %d, 'enable_prefix_caching': %s}", c->model_name, port_arg,
		  m->seed, m->max_model_len, m->slots, m->cache_blocks > 0 ? "True" : "False");
}

/* The engine's start-up lines: vLLM's engine, the TT plugin, tt-metal. */
static void main_engine_banners(const struct ttsim_server_config *c, unsigned banner_arm,
				bool banner, bool arm_from_env)
{
	const struct ttsim_model_config *m = &c->model;
	char a[32], b[32];
	unsigned i;

	main_eng('S', NULL, NULL, "                 Device | INFO     | Opening user mode device driver (tt_cluster.cpp:211)");
	main_eng('S', NULL, NULL, "                 Device | INFO     | Established cluster ETH FW version: 6.14.0 (tt_cluster.cpp:1145)");
	main_eng('L', "INFO", "core.py:108", "Initializing a V1 LLM engine (v%s) with config: model='%s', "
		 "speculative_config=None, tokenizer='%s', skip_tokenizer_init=False, tokenizer_mode=auto, "
		 "revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=%lld, "
		 "download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, "
		 "device_config=tt, seed=%llu, served_model_name=%s, enable_prefix_caching=%s, max_num_seqs=%d",
		 ttsim_server_version(c), c->model_name, c->model_name, m->max_model_len, m->seed,
		 c->model_name, m->cache_blocks > 0 ? "True" : "False", m->slots);
	main_eng('L', "INFO", "platform.py:500", "Automatic prefix caching is %s",
		 m->cache_blocks > 0 ? "enabled" : "disabled");
	main_eng('G', "INFO", "ttnn.distributed:120", "Attempting to open mesh device with grid shape (1, 4)");
	main_eng('G', "INFO", "ttnn.distributed:131", "multidevice with 4 devices and grid (1, 4) is created");
	main_eng('L', "INFO", "model_runner.py:271", "TTModelRunner: trace_mode=all, sample_on_device_mode=decode_only, "
		 "enable_model_warmup=True");
	main_eng('L', "INFO", "kv_cache_utils.py:1319", "GPU KV cache size: %s tokens",
		 main_thousands((long long)m->slots * m->max_model_len, a, sizeof(a)));
	main_eng('L', "INFO", "kv_cache_utils.py:1325", "Maximum concurrency for %s tokens per request: %d.00x",
		 main_thousands(m->max_model_len, b, sizeof(b)), m->slots);
	if (m->keep_gate && !m->supports_async_decode) {
		main_eng('L', "WARNING", "platform.py:460", "Async scheduling was requested, but TT model "
			 "Qwen3_6ForCausalLM (qwen3_6) does not declare support "
			 "(`model_capabilities['supports_async_decode']`). Disabling async scheduling.");
		/* the kit's note, as it words it (ttaudit_emit/kit.py) */
		if (m->capability_declared)
			main_eng('G', "INFO", "generator_vllm:21", "ttaudit: gate: Qwen3_6ForCausalLM declares "
				 "model_capabilities['supports_async_decode'] False: the keep does not run");
		else
			main_eng('G', "INFO", "generator_vllm:21", "ttaudit: gate: Qwen3_6ForCausalLM does not "
				 "declare model_capabilities['supports_async_decode']: the keep does not run "
				 "(an absent key means not supported)");
	}
	if (!banner)
		return;
	/* the instrumentation kit's lines (its guard banners): one per guard
	 * flag the engine process has, or "none" */
	if (!(banner_arm & TTSIM_RULE_ALL)) {
		main_eng('G', "INFO", "generator_vllm:21", "ttaudit: guard none engaged (unguarded merge)");
		return;
	}
	for (i = 0; i < TTSIM_RULE_COUNT; i++) {
		char nm[TTSIM_ARM_NAME_MAX];

		if (!(banner_arm & (1u << i)))
			continue;
		if (arm_from_env)
			main_eng('G', "INFO", "generator_vllm:21", "ttaudit: guard %s engaged (env %s=1)",
				 ttsim_guard_env_name(1u << i), ttsim_guard_env_name(1u << i));
		else
			main_eng('G', "INFO", "generator_vllm:21", "ttaudit: guard %s engaged (ttsim --arm %s)",
				 ttsim_guard_env_name(1u << i), ttsim_guard_name(banner_arm, nm, sizeof(nm)));
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
		{ "profile", required_argument, NULL, 'Y' },
		{ "vllm-version", required_argument, NULL, 'V' },
		{ "stream-interval", required_argument, NULL, 'I' },
		{ "no-merge", no_argument, NULL, 'M' },
		{ "reasoning", required_argument, NULL, 'Q' },
		{ "stream-error-rate", required_argument, NULL, 'E' },
		{ "metrics", no_argument, NULL, 'K' },
		{ "api-key", required_argument, NULL, 'k' },
		{ "supports-async-decode", required_argument, NULL, 'U' },
		{ "no-async-scheduling", no_argument, NULL, 'u' },
		{ "vllm-branch", required_argument, NULL, 256 },
		{ NULL, 0, NULL, 0 }
	};
	struct ttsim_server_config c;
	struct ttsim_server *srv = NULL;
	struct ttsim_audit *audit = NULL;
	struct status_info si;
	const char *audit_path = NULL, *port_file = NULL;
	/* the engine process's name: the TT fork's dev branch always numbers it
	 * (EngineCore_DP0), vLLM main not without data parallelism (EngineCore) */
	const char *engine_name = "EngineCore_DP0";
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
		case 'Y':
			if (!strcmp(optarg, "vllm"))
				c.profile = TTSIM_VLLM;
			else if (!strcmp(optarg, "llamacpp"))
				c.profile = TTSIM_LLAMACPP;
			else
				return main_usage_error("serve", "--profile '%s': want vllm or llamacpp", optarg);
			break;
		case 'V':
			if (!strncmp(optarg, "0.10", 4))
				c.vllm_minor = 10;
			else if (!strcmp(optarg, "current") || !strcmp(optarg, "0.16"))
				c.vllm_minor = 0;
			else
				return main_usage_error("serve", "--vllm-version '%s': want current or 0.10", optarg);
			break;
		case 'I':
			if (!main_ll(optarg, 1, 64, &v))
				return main_usage_error("serve", "--stream-interval '%s': want 1..64", optarg);
			c.stream_interval = (int)v;
			break;
		case 'M':
			c.no_merge = true;
			break;
		case 'Q':
			if (!main_ll(optarg, 0, 1 << 20, &v))
				return main_usage_error("serve", "--reasoning '%s': want a token count", optarg);
			c.reasoning = (int)v;
			break;
		case 'E':
			dp = &c.stream_error_rate;
			break;
		case 'K':
			c.metrics = true;
			break;
		case 'k':
			c.api_key = optarg;
			break;
		case 'u':
			c.model.no_async = true;
			break;
		case 256:    /* --vllm-branch */
			if (!strcmp(optarg, "dev"))
				engine_name = "EngineCore_DP0";
			else if (!strcmp(optarg, "main"))
				engine_name = "EngineCore";
			else
				return main_usage_error("serve", "--vllm-branch '%s': want dev or main", optarg);
			break;
		case 'U':
			/* the capability gate (tt-metal PR #54565) on, with the
			 * model's declared capability; an absent key is false
			 * (models/common/model_capabilities.py) */
			if (strcmp(optarg, "true") && strcmp(optarg, "false") && strcmp(optarg, "undeclared"))
				return main_usage_error("serve", "--supports-async-decode '%s': want true, false "
							"or undeclared", optarg);
			c.model.keep_gate = true;
			c.model.supports_async_decode = !strcmp(optarg, "true");
			c.model.capability_declared = strcmp(optarg, "undeclared") != 0;
			break;
		case 'f':
			if (!strcmp(optarg, "banner-only"))
				fault_banner_only = true;
			else if (!strcmp(optarg, "no-banner"))
				fault_no_banner = true;
			else if (ttsim_fault_parse(optarg))
				c.model.faults |= ttsim_fault_parse(optarg);
			else
				return main_usage_error("serve", "--fault '%s': want banner-only, no-banner, "
							"abort-reuse, redecode, condense-state, prefix-block "
							"or oov", optarg);
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
			       "the family's defect modes (--fault, repeatable; the stale merge is --arm bare):\n"
			       "  --fault abort-reuse a cancelled request's row reused without clearing\n"
			       "  --fault redecode    a row the condense moved re-decodes its pending token\n"
			       "  --fault condense-state  a moved row uses the state of the request that left it\n"
			       "  --fault prefix-block    a prefix hit serves a block refilled by another request\n"
			       "  --fault oov         an on-device-sampled token past the vocabulary at index 8\n"
			       "  --error-rate P      answer 500\n"
			       "  --reset-rate P      reset the connection mid-stream\n"
			       "  --stall-rate P      pause a stream for --stall-time S (default 2)\n"
			       "  --truncate-rate P   end a stream early without [DONE]\n"
			       "  --noise P           step time x (1 + P*u), u redrawn every 256 steps\n"
			       "  --load-time S       every route answers 503 for S seconds\n"
			       "  --never-generate    accept requests, never produce a token\n"
			       "  --stream-error-rate P  end a stream with an in-stream error after a token\n"
			       "the server it is:\n"
			       "  --profile P         vllm (default) or llamacpp (llama-server's surfaces)\n"
			       "  --vllm-version V    current (default) or 0.10 (flat errors, reasoning_content,\n"
			       "                      0.10 metric names, no engine id suffix)\n"
			       "  --stream-interval N at least N tokens per chunk (vLLM --stream-interval)\n"
			       "  --no-merge          one token per chunk even when tokens piled up\n"
			       "  --reasoning N       chat: the first N tokens are thinking text (delta.reasoning)\n"
			       "  --metrics           llamacpp: serve /metrics (501 without it)\n"
			       "  --api-key KEY       /v1/* answer 401 without Authorization: Bearer KEY\n"
			       "  --no-async-scheduling  async scheduling off (the synchronous control): no keep\n"
			       "  --supports-async-decode B  the keep's capability gate (tt-metal PR #54565): true,\n"
			       "                      false or undeclared (absent: not supported); false and\n"
			       "                      undeclared never keep (a gate event each time)\n"
			       "  --vllm-branch B     dev (default): the TT fork names its engine EngineCore_DP0;\n"
			       "                      main: vLLM main names it EngineCore (no data parallelism)\n%s",
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

	if (c.profile == TTSIM_VLLM) {
		ttsim_log_setup("APIServer");
		main_api_banners(&c, c.port);
		main_engine_start(engine_name);
		if (audit && !audit_path && main_engine_fd >= 0) {
			/* the audit is the engine's, through loguru on its stderr */
			ttsim_audit_free(audit);
			audit = ttsim_audit_new_fd(main_engine_fd, true);
			if (!audit) {
				fprintf(stderr, "ttsim serve: out of memory\n");
				goto out;
			}
			ttsim_audit_set_tag(audit, "G|INFO|generator:1930|");
			c.audit = audit;
		}
		main_engine_banners(&c, arm, !fault_no_banner, !arm_set);
		main_engine_sync();
	} else {
		ttsim_log_setup(NULL);
		fprintf(stderr, "build: 6000 (ttsim) with cc for x86_64-linux-gnu\n"
			"main: loading model\n");
	}
	if (ttsim_server_start(&c, &srv, &si)) {
		fprintf(stderr, "ttsim serve: %s\n", si.msg);
		goto out;
	}
	if (c.profile == TTSIM_VLLM)
		ttsim_log(STDOUT_FILENO, "INFO", "api_server.py:1880", "Starting vLLM API server 0 on "
			  "http://127.0.0.1:%d", ttsim_server_port(srv));
	else
		fprintf(stderr, "main: server is listening on http://127.0.0.1:%d - starting the main loop\n",
			ttsim_server_port(srv));
	fprintf(stderr, "ttsim: listening on 127.0.0.1:%d\n", ttsim_server_port(srv));
	if (port_file && main_write_port_file(port_file, ttsim_server_port(srv)) < 0) {
		fprintf(stderr, "ttsim serve: %s: cannot write the port file: %s\n", port_file,
			strerror(errno));
		goto out;
	}
	if (c.profile == TTSIM_VLLM)
		(void)dprintf(STDOUT_FILENO, "%sINFO:     Application startup complete.\n",
			      ttsim_log_proc_prefix(1));
	sigwait(&sigs, &sig);
	if (c.profile == TTSIM_VLLM)
		ttsim_log(STDOUT_FILENO, "INFO", "launcher.py:80", "Shutting down FastAPI HTTP server.");
	rc = 0;
out:
	ttsim_server_stop(srv);
	main_engine_stop();
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
	if (!strcmp(argv[1], "engine-core"))
		return cmd_engine_core(argc > 2 ? argv[2] : NULL);
	fprintf(stderr, "ttsim: '%s' is not a command\n", argv[1]);
	main_usage(stderr);
	return 2;
}
