/*
 * banner_rules.c - the built-in banner rules, as the text of a rules file
 * (format in banner.h). Kept apart from the matcher so that the list of
 * lines real servers print can change without touching the matching code.
 */
#include "capture/banner.h"
#include "analyzer/rule.h"

/* "arm:batch QWEN36_MERGE_BATCH_GUARD engaged\n": the rule of one guard
 * flag (the one list, analyzer/rule.h). */
#define BANNER_ARM_RULE(arm, flag) "arm:" #arm " " flag " engaged\n"

/*
 * The default set: the guard banners and the start-up lines that identify
 * a vLLM / TT plugin / tt-metal server, as upstream code prints them (each
 * case in tests/test_banner_rules.c names the repository, file and commit
 * its line comes from). Patterns are unanchored: a line matches after
 * vLLM's "(APIServer pid=N) " prefix, and the texts matched carry no colour
 * codes (vLLM colours the level, time and file, not the message). Names are
 * stable; the analyzer keys on arm:*.
 *
 * arm:* match the instrumentation kit's line ("ttaudit: guard FLAG engaged
 * (source)", "ttaudit: guard none engaged") and the seeds' print-only patch
 * line ("FLAG engaged: ..."); no upstream guard prints either. kit:keep
 * matches the kit's lines saying where the keep is and what the capability
 * gate does.
 *
 * Left out on purpose: "Uvicorn running on" (vLLM hands uvicorn its socket:
 * under `vllm serve` the line never prints); "Detected chips", "Mesh device
 * shape", "MESH_DEVICE=" (no upstream code prints them at info level).
 */
const char banner_defaults[] =
	"arm:bare ttaudit: guard none engaged|async merge: unguarded position match \\(no merge guard engaged\\)\n"
	RULE_GUARD_FLAGS(BANNER_ARM_RULE)
	"kit:keep ttaudit: (gate|keep): \n"
	/* main since PR #32796: "vLLM server version X, serving model M" or the
	 * logo's "version X" line; the legacy server "vLLM API server version X" */
	"vllm:version vLLM server version \\S+, serving model |vLLM API server version \\S+|"
	"\xe2\x96\x80\xe2\x96\x84\xe2\x96\x80 \xe2\x96\x88 +version \\S+\n"
	"vllm:args non-default args: \n"
	"vllm:engine Initializing an? (V[01] )?LLM engine\n"
	/* token counts with thousands separators: "263,200 tokens" */
	"vllm:kv_cache GPU KV cache size: [0-9,]+ tokens|# GPU blocks: |Maximum concurrency for \n"
	/* main "Starting vLLM server on %s", dev "Starting vLLM API server %d on %s" */
	"vllm:serve Starting vLLM (API )?server ([0-9]+ )?on \n"
	"vllm:ready Application startup complete\n"
	"tt:runner TTModelRunner: trace_mode=\n"
	"tt:platform Async scheduling was requested, but TT model |Automatic prefix caching is (enabled|disabled)\n"
	"tt:device Opening user mode device driver\n"
	/* tt-umd PR #1597 (2025-11-10) dropped "cluster " from the ETH line */
	"tt:firmware [Ff]irmware version|[Ff]irmware bundle version|(cluster )?ETH FW version\n"
	"tt:kmd KMD version\n"
	/* the TT plugin's worker.py, through vLLM's logger */
	"tt:mesh open mesh device with grid shape|multidevice with [0-9]+ devices\n";

const size_t banner_defaults_len = sizeof(banner_defaults) - 1;
