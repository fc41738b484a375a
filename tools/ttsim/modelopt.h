/*
 * modelopt.h - the options of the generator model, which `ttsim serve` and
 * `ttsim run` share: one block of option-table lines (base/opt.h) that both
 * commands' tables hold, so that parse, help and bounds are written once.
 *
 *   static struct ttsim_model_config mc;
 *   static struct ttsim_modelopt_arm arm;
 *   static const struct opt opts[] = { ..., TTSIM_MODEL_OPTS(mc, arm), OPT_END() };
 *
 * The arm is apart from the config because `serve` takes it from the
 * environment when --arm is not given.
 */
#ifndef TTSIM_MODELOPT_H
#define TTSIM_MODELOPT_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/ttsim/model.h"
#include "base/opt.h"

struct ttsim_modelopt_arm {
	unsigned mask;               /* guard.h rule mask */
	bool set;                    /* --arm was given */
};

/*
 * The index of arg in words (NULL-terminated), or -1 with "'ARG': want A, B
 * or C" in err: for options whose value is one of a few words.
 */
int ttsim_modelopt_pick(const char *arg, const char *const *words, char *err, size_t n);

/* The option callbacks of the block (opt_fn); each writes the variable its
 * line names. */
int ttsim_modelopt_arm(const struct opt *o, const char *arg, char *err, size_t n);
int ttsim_modelopt_generator(const struct opt *o, const char *arg, char *err, size_t n);
int ttsim_modelopt_trace_key(const struct opt *o, const char *arg, char *err, size_t n);
int ttsim_modelopt_buckets(const struct opt *o, const char *arg, char *err, size_t n);
int ttsim_modelopt_refresh_every(const struct opt *o, const char *arg, char *err, size_t n);

#define TTSIM_MODEL_OPTS(mc, arm) \
	OPT_GROUP("the model"), \
	OPT_CALL_VAR(0, "arm", &(arm), "R", ttsim_modelopt_arm, \
		     "guard arm: bare, prefilled, batch, lifetime, stamp, bound or a+b " \
		     "(serve: default from QWEN36_* environment variables)"), \
	OPT_INT(0, "slots", &(mc).slots, "B", 1, TTSIM_MAX_SLOTS, "max_num_seqs (default 8)"), \
	OPT_INT(0, "seed", &(mc).seed, "S", 0, (long long)(~0ull >> 1), \
		"seed of tokens, workload and faults (default 0)"), \
	OPT_INT(0, "max-model-len", &(mc).max_model_len, "N", 16, 1ll << 30, \
		"context length, also the bound rule's limit (default 131072)"), \
	OPT_GROUP("the keep (docs/ttsim.md): the device's trace buffers, rewritten by every " \
		  "decode of their key, are all it reads; these choose when one is stale"), \
	OPT_NUM(0, "host-sampling", &(mc).host_sampling, "P", 0, 1, \
		"chance a request needs host sampling: decodes with one sample on the host and " \
		"leave the on-device trace's buffers behind (0)"), \
	OPT_CALL_VAR(0, "decode-buckets", &(mc), "L", ttsim_modelopt_buckets, \
		     "decode widths per chunk, e.g. 1,2,4,8: each width its own trace " \
		     "(default: padded to slots/dp, as the TT plugin pads)"), \
	OPT_CALL_VAR(0, "trace-key", &(mc).trace_key_sampling, "K", ttsim_modelopt_trace_key, \
		     "sampling+batch (default, tt-metal PR #53947) or sampling"), \
	OPT_CALL_VAR(0, "generator", &(mc).generator, "G", ttsim_modelopt_generator, \
		     "qwen36 (default: its prefill leaves the prefilled-slot set empty, the mask " \
		     "inert) or generic (Generator's prefill fills it)"), \
	OPT_NUM(0, "garbage-rate", &(mc).garbage_rate, "P", 0, 1, \
		"chance an idle row restaged reads as float32 garbage (0)"), \
	OPT_INT(0, "max-prefills", &(mc).max_prefills, "N", 1, TTSIM_MAX_SLOTS, \
		"consecutive prefill steps before a decode (default: slots)"), \
	OPT_INT(0, "cache-blocks", &(mc).cache_blocks, "N", 0, 1 << 22, \
		"prefix cache capacity in 16-token blocks (default 4096, 0 = off)"), \
	OPT_INT(0, "dp", &(mc).dp, "N", 1, TTSIM_MAX_SLOTS, \
		"the keep runs per data-parallel chunk of slots/N slots: one merge event with " \
		"its \"dp\" per chunk (default 1)"), \
	/* gone (the old stand-in for a stale buffer): hidden, says what replaced it */ \
	OPT_CALL(0, "refresh-every", "N", ttsim_modelopt_refresh_every, NULL)

#endif
