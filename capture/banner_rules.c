/*
 * banner_rules.c - the built-in banner rules, as the text of a rules file
 * (format in banner.h). Kept apart from the matcher so that the list of
 * lines real servers print can change without touching the matching code.
 */
#include "banner.h"

/*
 * The default set: the guard banners and the start-up lines that identify
 * a vLLM / TT plugin / tt-metal server, as they really print them (vLLM main
 * and 0.10, the TT plugin on tenstorrent/vllm dev, tt-metal's spdlog and
 * loguru lines; tests/test_banner_rules.c holds the lines). Patterns are
 * unanchored: a line matches after vLLM's "(APIServer pid=N) " prefix, and
 * the texts matched carry no colour codes (vLLM colours the level, time and
 * file, not the message). Names are stable; the analyzer keys on arm:*.
 *
 * arm:* match the instrumentation kit's line ("ttaudit: guard FLAG engaged
 * (source)", "ttaudit: guard none engaged") and the seeds' print-only patch
 * line ("FLAG engaged: ..."); no upstream guard prints either. kit:keep is
 * the kit's capability-gate line.
 */
const char banner_defaults[] =
	"arm:bare ttaudit: guard none engaged|async merge: unguarded position match \\(no merge guard engaged\\)\n"
	"arm:prefilled QWEN36_PREFILLED_SLOTS_FIX engaged\n"
	"arm:batch QWEN36_MERGE_BATCH_GUARD engaged\n"
	"arm:lifetime QWEN36_MERGE_LIFETIME_GUARD engaged\n"
	"arm:stamp QWEN36_MERGE_STAMP_GUARD engaged\n"
	"arm:bound QWEN36_MERGE_GARBAGE_BOUND engaged\n"
	"kit:keep ttaudit: keep (off|forced on) \\(\n"
	/* main since PR #32796: "vLLM server version X, serving model M" or the
	 * logo's "version X" line; the legacy server "vLLM API server version X" */
	"vllm:version vLLM server version \\S+, serving model |vLLM API server version \\S+|"
	"\xe2\x96\x80\xe2\x96\x84\xe2\x96\x80 \xe2\x96\x88 +version \\S+\n"
	"vllm:args non-default args: \n"
	"vllm:engine Initializing an? (V[01] )?LLM engine\n"
	/* token counts with thousands separators: "263,200 tokens" */
	"vllm:kv_cache GPU KV cache size: [0-9,]+ tokens|# GPU blocks: |Maximum concurrency for \n"
	"vllm:ready Application startup complete|Uvicorn running on \n"
	"tt:runner TTModelRunner: trace_mode=\n"
	"tt:platform Async scheduling was requested, but TT model |Automatic prefix caching is (enabled|disabled)\n"
	"tt:device Opening user mode device driver|Detected chips\n"
	"tt:firmware [Ff]irmware version|[Ff]irmware bundle version|cluster ETH FW version\n"
	"tt:kmd KMD version\n"
	"tt:mesh [Mm]esh device shape|MESH_DEVICE=|open mesh device with grid shape|multidevice with [0-9]+ devices\n";

const size_t banner_defaults_len = sizeof(banner_defaults) - 1;
