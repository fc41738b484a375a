/* test_banner_rules.c - the built-in banner rules against the lines real
 * servers print: vLLM (with its process prefixes, colour on a terminal,
 * thousands separators, the new version forms), the TT plugin, tt-metal
 * (spdlog and loguru), and the instrumentation kit's guard banners. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "banner.h"

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
		/* the TT plugin */
		{ "(EngineCore_DP0 pid=1290) INFO 09-08 20:31:20 [model_runner.py:271] TTModelRunner: trace_mode=all, sample_on_device_mode=decode_only, enable_model_warmup=True", "tt:runner" },
		{ "(APIServer pid=1187) WARNING 09-08 20:31:03 [platform.py:460] Async scheduling was requested, but TT model Qwen3_6ForCausalLM (qwen3_6) does not declare support (`model_capabilities['supports_async_decode']`). Disabling async scheduling.", "tt:platform" },
		{ "(APIServer pid=1187) INFO 09-08 20:31:03 [platform.py:500] Automatic prefix caching is disabled", "tt:platform" },
		/* tt-metal: C++ through spdlog on stdout, Python through loguru on stderr */
		{ "(EngineCore_DP0 pid=1290)                  Device | INFO     | Opening user mode device driver (tt_cluster.cpp:211)", "tt:device" },
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:31:12.114 | info     |   Device | Established cluster ETH FW version: 6.14.0 (tt_cluster.cpp:1145)", "tt:firmware" },
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:35:14.930 | INFO | ttnn.distributed:120 - Attempting to open mesh device with grid shape (1, 4)", "tt:mesh" },
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:35:15.001 | INFO | ttnn.distributed:131 - multidevice with 4 devices and grid (1, 4) is created", "tt:mesh" },
		/* the instrumentation kit's guard banners, through loguru on stderr */
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:35:14.930 | INFO | ttaudit_emit:88 - ttaudit: guard QWEN36_MERGE_BATCH_GUARD engaged (env QWEN36_MERGE_BATCH_GUARD=1)", "arm:batch" },
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:35:14.930 | INFO | ttaudit_emit:88 - ttaudit: guard QWEN36_MERGE_STAMP_GUARD engaged (env QWEN36_MERGE_STAMP_GUARD=1)", "arm:stamp" },
		{ "(EngineCore_DP0 pid=1290) 2026-09-08 20:35:14.930 | INFO | ttaudit_emit:88 - ttaudit: guard none engaged (unguarded merge)", "arm:bare" },
		{ "2026-09-08 20:35:14.930 | INFO | ttaudit_emit:91 - ttaudit: keep off (model does not declare supports_async_decode)", "kit:keep" },
		{ "2026-09-08 20:35:14.930 | INFO | ttaudit_emit:91 - ttaudit: keep forced on (TT_FORCE_ASYNC_AHEAD_KEEP=1)", "kit:keep" },
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
