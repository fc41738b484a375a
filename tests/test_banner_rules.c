/* test_banner_rules.c - the built-in banner rules against the lines real
 * servers print: vLLM (with its process prefixes, colour on a terminal,
 * thousands separators, the new version forms), the TT plugin, tt-metal and
 * tt-umd (spdlog and loguru), and the instrumentation kit's lines. Each case
 * names where its text comes from upstream (repository, file, commit or PR);
 * "vllm main" and "vllm dev" are tenstorrent/vllm f4b02938 and b4dd0fa6. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "capture/banner.h"

static const char *match(const struct banner_set *set, const char *line)
{
	static struct banner_scratch sc;
	int r;

	banner_scratch_init(&sc);
	r = banner_set_match(set, line, strlen(line), &sc);
	return r < 0 ? "-" : banner_set_name(set, (size_t)r);
}

static void test_real_lines(void **state)
{
	struct banner_set *set = banner_set_default();
	static const char *const cases[][2] = {
		/* vLLM main: the version line and the logo form (PR #32796) */
		{ "(APIServer pid=1187) INFO 09-08 20:31:02 [utils.py:299] vLLM server version 0.16.0, serving model Qwen/Qwen3.6-27B", "vllm:version" },
		{ "(APIServer pid=1187) INFO 09-08 20:31:02 [utils.py:299]  \xe2\x96\x84\xe2\x96\x84 \xe2\x96\x84\xe2\x96\x88 \xe2\x96\x88     \xe2\x96\x88     \xe2\x96\x88 \xe2\x96\x80\xe2\x96\x84\xe2\x96\x80 \xe2\x96\x88  version 0.16.0", "vllm:version" },
		{ "INFO 08-20 10:00:00 [api_server.py:1805] vLLM API server version 0.10.1", "vllm:version" },
		{ "(APIServer pid=1187) INFO 09-08 20:31:02 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3.6-27B'}", "vllm:args" },
		{ "(EngineCore_DP0 pid=1290) INFO 09-08 20:31:09 [core.py:108] Initializing a V1 LLM engine (v0.16.0) with config: model='Qwen/Qwen3.6-27B'", "vllm:engine" },
		{ "INFO 03-01 10:00:00 [llm_engine.py:230] Initializing a V0 LLM engine (v0.7.3.dev) with config:", "vllm:engine" },
		/* thousands separators */
		{ "(EngineCore_DP0 pid=1290) INFO 09-08 20:39:30 [kv_cache_utils.py:1319] GPU KV cache size: 263,200 tokens", "vllm:kv_cache" },
		{ "(EngineCore_DP0 pid=1290) INFO 09-08 20:39:30 [kv_cache_utils.py:1325] Maximum concurrency for 262,144 tokens per request: 2.01x", "vllm:kv_cache" },
		/* colour on a terminal */
		{ "\033[36m(EngineCore_DP0 pid=1290)\033[0m \033[32mINFO\033[0m \033[90m09-08 20:39:30\033[0m \033[90m[kv_cache_utils.py:1319]\033[0m GPU KV cache size: 1,048,576 tokens", "vllm:kv_cache" },
		{ "(APIServer pid=1187) INFO:     Application startup complete.", "vllm:ready" },
		/* the server listening: vllm main entrypoints/openai/api_server.py
		 * "Starting vLLM server on %s", vllm dev "Starting vLLM API server %d on %s" */
		{ "(APIServer pid=1187) INFO 09-08 20:31:40 [api_server.py:602] Starting vLLM server on http://0.0.0.0:8000", "vllm:serve" },
		{ "(APIServer pid=1187) INFO 09-08 20:31:40 [api_server.py:501] Starting vLLM API server 0 on http://0.0.0.0:8000", "vllm:serve" },
		/* uvicorn's lifespan line (vLLM runs uvicorn on the socket it bound:
		 * "Uvicorn running on" never prints under vllm serve) */
		{ "(APIServer pid=1187) INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)", "-" },
		/* the TT plugin (vllm dev plugins/vllm-tt-plugin/src/vllm_tt_plugin):
		 * model_runner.py, platform.py */
		{ "(EngineCore_DP0 pid=1290) INFO 09-08 20:31:20 [model_runner.py:271] TTModelRunner: trace_mode=all, sample_on_device_mode=decode_only, enable_model_warmup=True", "tt:runner" },
		{ "(APIServer pid=1187) WARNING 09-08 20:31:03 [platform.py:460] Async scheduling was requested, but TT model Qwen3_6ForCausalLM (qwen3_6) does not declare support (`model_capabilities['supports_async_decode']`). Disabling async scheduling.", "tt:platform" },
		{ "(APIServer pid=1187) INFO 09-08 20:31:03 [platform.py:500] Automatic prefix caching is disabled", "tt:platform" },
		/* the mesh: worker.py:695 and :709 through vLLM's logger, not ttnn's loguru */
		{ "(EngineCore_DP0 pid=1290) INFO 09-08 20:35:14 [worker.py:695] Attempting to open mesh device with grid shape (1, 4)", "tt:mesh" },
		{ "(EngineCore_DP0 pid=1290) INFO 09-08 20:35:15 [worker.py:709] multidevice with 4 devices and grid (1, 4) is created", "tt:mesh" },
		/* tt-metal C++ through spdlog on stdout (tt_cluster.cpp) */
		{ "(EngineCore_DP0 pid=1290)                  Device | INFO     | Opening user mode device driver (tt_cluster.cpp:211)", "tt:device" },
		/* tt-umd topology_discovery*.cpp: the bundle line; the ETH line as
		 * before PR #1597 ("cluster"), after it, and at debug since PR #1655 */
		{ "2025-12-07 21:18:52.044 | info     |             UMD | Established firmware bundle version: 18.12.0 (topology_discovery.cpp:369)", "tt:firmware" },
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:31:12.114 | info     |   Device | Established cluster ETH FW version: 6.14.0 (tt_cluster.cpp:1145)", "tt:firmware" },
		{ "2025-12-07 21:18:52.044 | info     |             UMD | Established ETH FW version: 1.7.0 (topology_discovery_blackhole.cpp:305)", "tt:firmware" },
		{ "2026-03-02 10:00:00.000 | debug    |             UMD | Established ETH FW version from first discovered ETH core: 7.0.0 (topology_discovery.cpp:112)", "tt:firmware" },
		/* no upstream info line says these: they are not rules */
		{ "Detected chips: 4", "-" },
		{ "Mesh device shape: (1, 4)", "-" },
		/* the instrumentation kit (tools/instrument/ttaudit_emit/kit.py),
		 * through loguru on stderr */
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:35:14.930 | INFO | models.tt_transformers.tt.generator:decode_forward:1918 - ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged (env QWEN36_MERGE_BATCH_GUARD=1)", "arm:batch" },
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:35:14.930 | INFO | models.tt_transformers.tt.generator:decode_forward:1918 - ttaudit: guard QWEN36_MERGE_STAMP_GUARD engaged (env QWEN36_MERGE_STAMP_GUARD=1)", "arm:stamp" },
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:35:14.930 | INFO | models.tt_transformers.tt.generator:decode_forward:1918 - ttaudit: guard none engaged (unguarded merge)", "arm:bare" },
		{ "2026-09-08 20:35:14.930 | INFO | models.tt_transformers.tt.generator:__init__:154 - ttaudit: gate: Qwen36ForCausalLM declares model_capabilities['supports_async_decode'] False: the keep does not run", "kit:keep" },
		{ "2026-09-08 20:35:14.930 | INFO | models.tt_transformers.tt.generator_vllm:<module>:21 - ttaudit: keep: inline in Generator.decode_forward at generator.py:1918 (use_dev = ... dev_pos == host_pos ...), observed in its frame on reset and mode-switch steps; gate at line 1858", "kit:keep" },
		/* the seeds' print-only patch line */
		{ "INFO 11-29 20:41:02 [generator.py:1930] QWEN36_MERGE_LIFETIME_GUARD engaged: merge requires a buffer written by the immediately preceding decode", "arm:lifetime" },
		/* what must not match */
		{ "(APIServer pid=1187) INFO 09-08 20:40:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s", "-" },
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:35:14.930 | INFO | ttaudit_emit:88 - QWEN36_MERGE_BATCH_GUARD=1 set but not engaged", "-" },
		{ "ttaudit: guard none engagedx", "arm:bare" },
	};
	size_t i;

	(void)state;
	assert_non_null(set);
	assert_true(banner_set_filtered(set));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (strcmp(match(set, cases[i][0]), cases[i][1]))
			fail_msg("line %zu: got %s, want %s: %s", i, match(set, cases[i][0]), cases[i][1],
				 cases[i][0]);
	banner_set_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_lines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
