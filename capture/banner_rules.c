/*
 * banner_rules.c - the built-in banner rules, as the text of a rules file
 * (format in banner.h). Kept apart from the matcher so that the list of
 * lines real servers print can change without touching the matching code.
 */
#include "banner.h"

/*
 * The default set: the guard "engaged" banners (docs/interfaces in
 * docs/capture.md) and the start-up lines that identify a vLLM / tt-metal
 * server. Names are stable; the analyzer keys on the arm:* ones.
 */
const char banner_defaults[] =
	"arm:bare async merge: unguarded position match \\(no merge guard engaged\\)\n"
	"arm:prefilled QWEN36_PREFILLED_SLOTS_FIX engaged\n"
	"arm:batch QWEN36_MERGE_BATCH_GUARD engaged\n"
	"arm:lifetime QWEN36_MERGE_LIFETIME_GUARD engaged\n"
	"arm:stamp QWEN36_MERGE_STAMP_GUARD engaged\n"
	"arm:bound QWEN36_MERGE_GARBAGE_BOUND engaged\n"
	"vllm:version vLLM API server version \\S+\n"
	"vllm:args non-default args: \n"
	"vllm:engine Initializing an? (V1 )?LLM engine\n"
	"vllm:kv_cache GPU KV cache size: |# GPU blocks: |Maximum concurrency for \n"
	"vllm:ready Application startup complete|Uvicorn running on \n"
	"tt:device Opening user mode device driver|Detected chips\n"
	"tt:firmware [Ff]irmware version|[Ff]irmware bundle version\n"
	"tt:kmd KMD version\n"
	"tt:mesh [Mm]esh device shape|MESH_DEVICE=\n";

const size_t banner_defaults_len = sizeof(banner_defaults) - 1;
