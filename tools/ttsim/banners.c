/*
 * banners.c - the lines the simulated server and its engine print around
 * serving (banners.h), worded as upstream prints them.
 */
#include "tools/ttsim/banners.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/ttsim/guard.h"
#include "tools/ttsim/log.h"

/* Where the kit's lines say they come from (its loguru call site). */
#define BANNERS_KIT_WHERE "generator_vllm:21"

/* A number with thousands separators, as vLLM prints token counts. */
static const char *banners_thousands(long long v, char *buf, size_t n)
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
static void banners_api(const struct ttsim_server_config *c)
{
	const struct ttsim_model_config *m = &c->model;
	const char *ver = ttsim_server_version(c);
	const char *no_logo = getenv("VLLM_DISABLE_LOG_LOGO");

	/* vLLM PR #32796: the logo (no colour unless the stream is coloured);
	 * 0.10 printed "vLLM API server version X" */
	if (c->vllm_minor == 10)
		ttsim_log(STDOUT_FILENO, "INFO", "api_server.py:1805", "vLLM API server version %s", ver);
	else if (no_logo && strcmp(no_logo, "0"))
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
		  "'max_num_seqs': %d, 'enable_prefix_caching': %s}", c->model_name, c->port,
		  m->seed, m->max_model_len, m->slots, m->cache_blocks > 0 ? "True" : "False");
}

void ttsim_banners_start(const struct ttsim_server_config *c)
{
	if (c->profile == TTSIM_VLLM) {
		ttsim_log_setup("APIServer");
		banners_api(c);
		return;
	}
	ttsim_log_setup(NULL);
	fprintf(stderr, "build: 6000 (ttsim) with cc for x86_64-linux-gnu\n"
		"main: loading model\n");
}

/* The capability gate's refusal: the TT platform's warning and the kit's note. */
static void banners_gate(struct ttsim_enginecore *ec, const struct ttsim_model_config *m)
{
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_VLLM, "WARNING", "platform.py:460",
			      "Async scheduling was requested, but TT model Qwen3_6ForCausalLM "
			      "(qwen3_6) does not declare support "
			      "(`model_capabilities['supports_async_decode']`). Disabling async "
			      "scheduling.");
	/* the kit's note, as it words it (ttaudit_emit/kit.py) */
	if (m->capability_declared)
		ttsim_enginecore_send(ec, TTSIM_ENGINECORE_LOGURU, "INFO", BANNERS_KIT_WHERE,
				      "ttaudit: gate: Qwen3_6ForCausalLM declares "
				      "model_capabilities['supports_async_decode'] False: the keep "
				      "does not run");
	else
		ttsim_enginecore_send(ec, TTSIM_ENGINECORE_LOGURU, "INFO", BANNERS_KIT_WHERE,
				      "ttaudit: gate: Qwen3_6ForCausalLM does not declare "
				      "model_capabilities['supports_async_decode']: the keep does not "
				      "run (an absent key means not supported)");
}

/* The instrumentation kit's guard lines: one per guard flag the engine
 * process has, or "none". */
static void banners_guards(struct ttsim_enginecore *ec, unsigned arm, bool from_env)
{
	char name[TTSIM_ARM_NAME_MAX];
	const char *flag;
	unsigned i;

	if (!(arm & TTSIM_RULE_ALL)) {
		ttsim_enginecore_send(ec, TTSIM_ENGINECORE_LOGURU, "INFO", BANNERS_KIT_WHERE,
				      "ttaudit: guard none engaged (unguarded merge)");
		return;
	}
	for (i = 0; i < TTSIM_RULE_COUNT; i++) {
		if (!(arm & (1u << i)))
			continue;
		flag = ttsim_guard_env_name(1u << i);
		if (from_env)
			ttsim_enginecore_send(ec, TTSIM_ENGINECORE_LOGURU, "INFO", BANNERS_KIT_WHERE,
					      "ttaudit: guard %s engaged (env %s=1)", flag, flag);
		else
			ttsim_enginecore_send(ec, TTSIM_ENGINECORE_LOGURU, "INFO", BANNERS_KIT_WHERE,
					      "ttaudit: guard %s engaged (ttsim --arm %s)", flag,
					      ttsim_guard_name(arm, name, sizeof(name)));
	}
}

void ttsim_banners_engine(struct ttsim_enginecore *ec, const struct ttsim_server_config *c,
			  unsigned arm, bool banner, bool from_env)
{
	const struct ttsim_model_config *m = &c->model;
	char a[32], b[32];

	if (c->profile != TTSIM_VLLM)
		return;
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_SPDLOG, NULL, NULL, "                 Device | "
			      "INFO     | Opening user mode device driver (tt_cluster.cpp:211)");
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_SPDLOG, NULL, NULL, "                 Device | "
			      "INFO     | Established cluster ETH FW version: 6.14.0 (tt_cluster.cpp:1145)");
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_VLLM, "INFO", "core.py:108",
			      "Initializing a V1 LLM engine (v%s) with config: model='%s', "
			      "speculative_config=None, tokenizer='%s', skip_tokenizer_init=False, "
			      "tokenizer_mode=auto, revision=None, trust_remote_code=False, "
			      "dtype=torch.bfloat16, max_seq_len=%lld, download_dir=None, "
			      "load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, "
			      "device_config=tt, seed=%llu, served_model_name=%s, "
			      "enable_prefix_caching=%s, max_num_seqs=%d",
			      ttsim_server_version(c), c->model_name, c->model_name, m->max_model_len,
			      m->seed, c->model_name, m->cache_blocks > 0 ? "True" : "False", m->slots);
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_VLLM, "INFO", "platform.py:500",
			      "Automatic prefix caching is %s",
			      m->cache_blocks > 0 ? "enabled" : "disabled");
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_LOGURU, "INFO", "ttnn.distributed:120",
			      "Attempting to open mesh device with grid shape (1, 4)");
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_LOGURU, "INFO", "ttnn.distributed:131",
			      "multidevice with 4 devices and grid (1, 4) is created");
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_VLLM, "INFO", "model_runner.py:271",
			      "TTModelRunner: trace_mode=all, sample_on_device_mode=decode_only, "
			      "enable_model_warmup=True");
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_VLLM, "INFO", "kv_cache_utils.py:1319",
			      "GPU KV cache size: %s tokens",
			      banners_thousands((long long)m->slots * m->max_model_len, a, sizeof(a)));
	ttsim_enginecore_send(ec, TTSIM_ENGINECORE_VLLM, "INFO", "kv_cache_utils.py:1325",
			      "Maximum concurrency for %s tokens per request: %d.00x",
			      banners_thousands(m->max_model_len, b, sizeof(b)), m->slots);
	if (m->keep_gate && !m->supports_async_decode)
		banners_gate(ec, m);
	if (banner)
		banners_guards(ec, arm, from_env);
}

void ttsim_banners_listening(const struct ttsim_server_config *c, int port)
{
	if (c->profile == TTSIM_VLLM)
		ttsim_log(STDOUT_FILENO, "INFO", "api_server.py:1880", "Starting vLLM API server 0 on "
			  "http://127.0.0.1:%d", port);
	else
		fprintf(stderr, "main: server is listening on http://127.0.0.1:%d - starting the main "
			"loop\n", port);
	fprintf(stderr, "ttsim: listening on 127.0.0.1:%d\n", port);
}

void ttsim_banners_ready(const struct ttsim_server_config *c)
{
	if (c->profile == TTSIM_VLLM)
		(void)dprintf(STDOUT_FILENO, "%sINFO:     Application startup complete.\n",
			      ttsim_log_proc_prefix(1));
}

void ttsim_banners_shutdown(const struct ttsim_server_config *c)
{
	if (c->profile == TTSIM_VLLM)
		ttsim_log(STDOUT_FILENO, "INFO", "launcher.py:80", "Shutting down FastAPI HTTP server.");
}
