/*
 * cmd_serve.c - `ttsim serve`: the simulated vLLM (or llama-server) server.
 * Options in; then the engine core, the banners, the server (server.h), and
 * a wait for SIGINT or SIGTERM.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tools/ttsim/banners.h"
#include "tools/ttsim/cmd.h"
#include "tools/ttsim/enginecore.h"
#include "tools/ttsim/guard.h"
#include "tools/ttsim/modelopt.h"
#include "base/outfile.h"
#include "tools/ttsim/server.h"

/* --fault: the banner faults, and the defect modes (TTSIM_FAULT_*). */
struct serve_faults {
	bool banner_only, no_banner;
	unsigned modes;
};

static struct ttsim_server_config serve_c;
static struct ttsim_modelopt_arm serve_arm;
static struct serve_faults serve_faults;
static const char *serve_audit_path, *serve_port_file;
static bool serve_no_audit;
/* the engine process's name: the TT fork's dev branch always numbers it
 * (EngineCore_DP0), vLLM main not without data parallelism (EngineCore) */
static const char *serve_engine_name;

static int serve_opt_model(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	if (!*arg || strlen(arg) >= 200) {
		snprintf(err, n, "want 1..199 characters");
		return -1;
	}
	serve_c.model_name = arg;
	return 0;
}

static int serve_opt_fault(const struct opt *o, const char *arg, char *err, size_t n)
{
	struct serve_faults *f = o->var;

	if (!strcmp(arg, "banner-only"))
		f->banner_only = true;
	else if (!strcmp(arg, "no-banner"))
		f->no_banner = true;
	else if (ttsim_fault_parse(arg))
		f->modes |= ttsim_fault_parse(arg);
	else {
		snprintf(err, n, "'%s': want banner-only, no-banner, abort-reuse, redecode, "
			 "condense-state, prefix-block or oov", arg);
		return -1;
	}
	return 0;
}

static int serve_opt_profile(const struct opt *o, const char *arg, char *err, size_t n)
{
	static const char *const words[] = { "vllm", "llamacpp", NULL };
	int i = ttsim_modelopt_pick(arg, words, err, n);

	(void)o;
	if (i < 0)
		return -1;
	serve_c.profile = i == 0 ? TTSIM_VLLM : TTSIM_LLAMACPP;
	return 0;
}

static int serve_opt_vllm_version(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	if (!strncmp(arg, "0.10", 4))
		serve_c.vllm_minor = 10;
	else if (!strcmp(arg, "current") || !strcmp(arg, "0.16"))
		serve_c.vllm_minor = 0;
	else {
		snprintf(err, n, "'%s': want current or 0.10", arg);
		return -1;
	}
	return 0;
}

static int serve_opt_vllm_branch(const struct opt *o, const char *arg, char *err, size_t n)
{
	static const char *const words[] = { "dev", "main", NULL };
	int i = ttsim_modelopt_pick(arg, words, err, n);

	(void)o;
	if (i < 0)
		return -1;
	serve_engine_name = i == 0 ? "EngineCore_DP0" : "EngineCore";
	return 0;
}

/* The capability gate (tt-metal PR #54565) on, with the model's declared
 * capability; an absent key is false (models/common/model_capabilities.py). */
static int serve_opt_async_decode(const struct opt *o, const char *arg, char *err, size_t n)
{
	static const char *const words[] = { "true", "false", "undeclared", NULL };
	int i = ttsim_modelopt_pick(arg, words, err, n);

	(void)o;
	if (i < 0)
		return -1;
	serve_c.model.keep_gate = true;
	serve_c.model.supports_async_decode = i == 0;
	serve_c.model.capability_declared = i != 2;
	return 0;
}

static const char *const serve_usage[] = {
	"serve [--port P] [--port-file F] [--arm R] [--slots B] [--seed S] ...",
	NULL,
};

static const struct opt serve_opts[] = {
	OPT_INT(0, "port", &serve_c.port, "P", 0, 65535, "port, 0 = any free one (printed on stderr)"),
	OPT_STRING(0, "port-file", &serve_port_file, "F", "write the bound port to F"),
	OPT_CALL(0, "model", "NAME", serve_opt_model, "served model id (default ttsim/qwen36-sim)"),
	OPT_NUM(0, "time-scale", &serve_c.time_scale, "X", 0, 1000,
		"wall seconds per modeled second (default 1; 0 = instant)"),
	OPT_INT(0, "default-max-tokens", &serve_c.default_max_tokens, "N", 1, 1 << 20,
		"max_tokens when a request gives none (16)"),
	OPT_STRING(0, "audit", &serve_audit_path, "FILE", "the audit as plain JSONL in FILE, not on stderr"),
	OPT_BOOL(0, "no-audit", &serve_no_audit, "no audit at all"),
	OPT_STRING(0, "send-log", &serve_c.send_log, "FILE",
		   "JSONL per streamed token: req, i, CLOCK_MONOTONIC mono_start and mono (the "
		   "send(2) that carried it began and returned)"),
	OPT_GROUP("faults (seeded by --seed)"),
	OPT_CALL_VAR(0, "fault", &serve_faults, "MODE", serve_opt_fault,
		     "repeatable: banner-only (print the arm's banner but merge bare), no-banner "
		     "(engage the arm without its banner), or one of the family's defect modes (the "
		     "stale merge is --arm bare): abort-reuse (a cancelled request's row reused "
		     "without clearing), redecode (a row the condense moved re-decodes its pending "
		     "token), condense-state (a moved row uses the state of the request that left "
		     "it), prefix-block (a prefix hit serves a block refilled by another request), "
		     "oov (an on-device-sampled token past the vocabulary at index 8)"),
	OPT_NUM(0, "error-rate", &serve_c.error_rate, "P", 0, 1, "answer 500"),
	OPT_NUM(0, "reset-rate", &serve_c.reset_rate, "P", 0, 1, "reset the connection mid-stream"),
	OPT_NUM(0, "stall-rate", &serve_c.stall_rate, "P", 0, 1,
		"pause a stream for --stall-time S (default 2)"),
	OPT_NUM(0, "stall-time", &serve_c.stall_s, "S", 0, 3600, "the pause of --stall-rate, seconds"),
	OPT_NUM(0, "truncate-rate", &serve_c.truncate_rate, "P", 0, 1, "end a stream early without [DONE]"),
	OPT_NUM(0, "noise", &serve_c.noise, "P", 0, 100, "step time x (1 + P*u), u redrawn every 256 steps"),
	OPT_NUM(0, "load-time", &serve_c.load_time_s, "S", 0, 86400, "every route answers 503 for S seconds"),
	OPT_BOOL(0, "oov-batched", &serve_c.model.oov_batched,
		 "--fault oov only in decodes of more than one row: a request alone (a reference) is clean"),
	OPT_NUM(0, "near-ties", &serve_c.model.near_ties, "P", 0, 1,
		"a chance P of each position being a near tie, flipped to the runner-up in a decode "
		"of more than one row (benign batch variance; echo logprobs show the tie)"),
	OPT_BOOL(0, "never-generate", &serve_c.never_generate, "accept requests, never produce a token"),
	OPT_NUM(0, "stream-error-rate", &serve_c.stream_error_rate, "P", 0, 1,
		"end a stream with an in-stream error after a token"),
	OPT_GROUP("the server it is"),
	OPT_CALL(0, "profile", "P", serve_opt_profile,
		 "vllm (default) or llamacpp (llama-server's surfaces)"),
	OPT_CALL(0, "vllm-version", "V", serve_opt_vllm_version,
		 "current (default) or 0.10 (flat errors, reasoning_content, 0.10 metric names, "
		 "no engine id suffix)"),
	OPT_INT(0, "stream-interval", &serve_c.stream_interval, "N", 1, 64,
		"at least N tokens per chunk (vLLM --stream-interval)"),
	OPT_BOOL(0, "no-merge", &serve_c.no_merge, "one token per chunk even when tokens piled up"),
	OPT_INT(0, "reasoning", &serve_c.reasoning, "N", 0, 1 << 20,
		"chat: the first N tokens are thinking text (delta.reasoning)"),
	OPT_BOOL(0, "metrics", &serve_c.metrics, "llamacpp: serve /metrics (501 without it)"),
	OPT_STRING(0, "api-key", &serve_c.api_key, "KEY",
		   "/v1/* answer 401 without Authorization: Bearer KEY"),
	OPT_BOOL(0, "no-async-scheduling", &serve_c.model.no_async,
		 "async scheduling off (the synchronous control): no keep"),
	OPT_CALL(0, "supports-async-decode", "B", serve_opt_async_decode,
		 "the keep's capability gate (tt-metal PR #54565): true, false or undeclared "
		 "(absent: not supported); false and undeclared never keep (a gate event each time)"),
	OPT_CALL(0, "vllm-branch", "B", serve_opt_vllm_branch,
		 "dev (default): the TT fork names its engine EngineCore_DP0; main: vLLM main names "
		 "it EngineCore (no data parallelism)"),
	TTSIM_MODEL_OPTS(serve_c.model, serve_arm),
	OPT_END(),
};

const struct cmd_doc ttsim_cmd_serve_doc = {
	.prog = "ttsim",
	.name = "serve",
	.summary = "a simulated tt-metal vLLM server with the async-ahead merge",
	.usage = serve_usage,
	.description =
		"A simulated tt-metal vLLM server on 127.0.0.1 whose generator has the real "
		"async-ahead merge. Banners and the merge audit go to stderr.",
	.opts = serve_opts,
	.flags = CMD_NO_OPERANDS,
	.exit_notes = TTSIM_CMD_EXIT_NOTES,
};

/* Raises the descriptor limit to its hard limit; returns how many
 * connections that leaves room for (a few descriptors kept for files). */
static unsigned serve_raise_nofile(void)
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

/* Writes the bound port, atomically (a script polling for the file never
 * reads half of it). */
static enum status serve_write_port_file(int port, struct status_info *si)
{
	struct outfile of;
	enum status st;

	if ((st = outfile_open(&of, serve_port_file, si)))
		return st;
	fprintf(of.f, "%d\n", port);
	return outfile_commit(&of, si);
}

/* The options into serve_c. false when the command ends here, with
 * *exit_code (help shown: 0; bad usage: 2). */
static bool serve_parse(int argc, char **argv, int *exit_code)
{
	unsigned arm;
	int n;

	ttsim_server_config_default(&serve_c);
	serve_c.model.max_prefills = TTSIM_MAX_SLOTS;
	serve_engine_name = "EngineCore_DP0";
	n = opt_parse(&ttsim_cmd_serve_doc, argc, argv);
	*exit_code = n < 0 ? opt_exit(n) : 2;
	if (n < 0)
		return false;
	if (serve_faults.banner_only && serve_faults.no_banner) {
		opt_error(&ttsim_cmd_serve_doc, "--fault banner-only and no-banner exclude each other");
		return false;
	}
	serve_c.model.faults |= serve_faults.modes;
	arm = serve_arm.set ? serve_arm.mask : ttsim_guard_from_env();
	serve_c.model.arm = serve_faults.banner_only ? 0 : arm;
	serve_c.model.arm_claimed = arm;
	return true;
}

/* The audit as asked: a file, none, or (the default) the log lines on
 * stderr, which the engine core takes over once it runs. *out NULL is none. */
static int serve_audit_open(struct ttsim_audit **out)
{
	struct status_info si;

	*out = NULL;
	status_info_clear(&si);
	if (serve_no_audit)
		return 0;
	if (serve_audit_path) {
		if (ttsim_audit_open(serve_audit_path, false, out, &si)) {
			fprintf(stderr, "ttsim serve: %s: %s\n", si.file, si.msg);
			return 2;
		}
		return 0;
	}
	*out = ttsim_audit_new_fd(STDERR_FILENO, true);
	if (!*out) {
		fprintf(stderr, "ttsim serve: out of memory\n");
		return 1;
	}
	return 0;
}

int ttsim_cmd_serve(int argc, char **argv)
{
	struct ttsim_server *srv = NULL;
	struct ttsim_audit *audit = NULL;
	struct ttsim_enginecore *ec = NULL;
	struct status_info si;
	sigset_t sigs;
	int sig = 0, rc = 1;

	if (!serve_parse(argc, argv, &rc) || (rc = serve_audit_open(&audit)) != 0)
		return rc;
	rc = 1;
	serve_c.max_connections = serve_raise_nofile();
	signal(SIGPIPE, SIG_IGN);
	/* Block the stop signals in every thread; this one waits for them below. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	ttsim_banners_start(&serve_c);
	if (serve_c.profile == TTSIM_VLLM) {
		ec = ttsim_enginecore_start(serve_engine_name);
		if (audit && !serve_audit_path && ec) {
			/* the audit is the engine's, through loguru on its stderr */
			ttsim_audit_free(audit);
			audit = ttsim_enginecore_audit(ec);
			if (!audit) {
				fprintf(stderr, "ttsim serve: out of memory\n");
				goto out;
			}
		}
		ttsim_banners_engine(ec, &serve_c, serve_c.model.arm_claimed, !serve_faults.no_banner,
				     !serve_arm.set);
		ttsim_enginecore_sync(ec);
	}
	serve_c.audit = audit;
	status_info_clear(&si);
	if (ttsim_server_start(&serve_c, &srv, &si)) {
		fprintf(stderr, "ttsim serve: %s\n", si.msg);
		goto out;
	}
	ttsim_banners_listening(&serve_c, ttsim_server_port(srv));
	if (serve_port_file && serve_write_port_file(ttsim_server_port(srv), &si)) {
		fprintf(stderr, "ttsim serve: %s: cannot write the port file: %s\n", serve_port_file,
			si.msg);
		goto out;
	}
	ttsim_banners_ready(&serve_c);
	sigwait(&sigs, &sig);
	ttsim_banners_shutdown(&serve_c);
	rc = 0;
out:
	ttsim_server_stop(srv);
	if (audit && ttsim_audit_lost(audit)) {
		fprintf(stderr, "ttsim serve: %llu audit lines could not be written\n",
			ttsim_audit_lost(audit));
		rc = 1;
	}
	ttsim_audit_free(audit);
	ttsim_enginecore_stop(ec);
	return rc;
}
