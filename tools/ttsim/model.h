/*
 * model.h - ttsim's generator model: the tt-metal generator's continuous
 * batching and its async-ahead token keep as the real code has it
 * (models/tt_transformers/tt/generator.py Generator.decode_forward, the
 * vLLM TT plugin's persistent batch; docs/ttsim.md cites the sources).
 *
 * - `slots` rows (max_num_seqs), in `dp` data-parallel chunks of slots/dp
 *   rows. A step is one forward: a prefill (one waiting request into its
 *   chunk's lowest free row, the chunk with the fewest requests first) or a
 *   decode (every running request advances one token). Requests leave when
 *   done. The rows are vLLM's persistent batch: a finished request leaves a
 *   hole; at the next step a new request fills the lowest hole and the other
 *   holes are closed by moving the highest rows down (the condense), which
 *   the next decode's slot_remap records (remap[i] = j: row i's data is at
 *   device row j).
 * - Tokens are greedy and deterministic: the next token is a hash of the
 *   seed, the prompt and the sequence so far, so a request's output does not
 *   depend on concurrency unless the keep substitutes a token, and then it
 *   changes from that position on. One instruction is followed, as a model
 *   that repeats what it is asked to: a prompt holding the piece "Code:"
 *   followed by code pieces (vocab.h ttsim_vocab_is_code) is a copy task,
 *   and its answer is those pieces, repeated in order (output index k is
 *   piece k mod n); a substituted token then changes that one position. Emission lags one step, as with async
 *   scheduling: a request's newest token (at host_pos) is pending and is
 *   delivered by the next decode, or when the request finishes.
 * - The device's decode traces, one per key (on_device_sampling, batch
 *   width per chunk), each with its input buffers (tokens, positions) per
 *   chunk. Every decode replays its key's trace, which writes each running
 *   row's next token and position host_pos + 1 (the sampled token written
 *   back, the position advanced: AsyncDecodeStep.emit_step_tail); a decode
 *   after a layout change, a prefill, a key change or with host sampling
 *   first restages the inputs from the host (idle rows -1, or, at
 *   `garbage_rate`, a float32 bit pattern read as int32 that every replay
 *   moves on by one). Nothing else writes them: a buffer is as old as the
 *   last decode of its key, so a width change (`buckets`) or a stretch of
 *   host-sampled decodes (`host_sampling`) leaves the keep a buffer written
 *   long ago, for other requests.
 * - The keep runs at a decode with on-device sampling, after a layout change
 *   (reset_batch) or a prefill (mode_switched), when the key's trace exists
 *   (and the capability gate lets it): per chunk it reads the buffers through
 *   slot_remap, falls back to host tokens when they are narrower than the
 *   batch or the remap points outside them, and takes, per running row, the
 *   device token and position where dev_pos == host_pos or host_pos + 1,
 *   except where the engaged arm (guard.h) refuses and in rows prefilled
 *   since the last decode. That set is filled by the generic Generator's
 *   prefill; Qwen3.6's own prefill leaves it empty (the mask is inert) unless
 *   the prefilled arm (QWEN36_PREFILLED_SLOTS_FIX) restores it. A take at
 *   host_pos replaces the pending token; at host_pos + 1 it becomes the next
 *   token. A token taken from a buffer row written for another request is a
 *   substitution.
 *
 * Not thread-safe: the caller serialises all calls (the server holds a lock).
 */
#ifndef TTSIM_MODEL_H
#define TTSIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/ttsim/audit.h"
#include "tools/ttsim/guard.h"
#include "base/status.h"

#define TTSIM_MAX_SLOTS 256
#define TTSIM_ID_MAX 128
#define TTSIM_MAX_TRACKED 16
#define TTSIM_MAX_BUCKETS 16

/*
 * The rest of the family, each a named defect mode (`ttsim serve --fault
 * MODE`), off by default; the stale merge itself is the keep (--arm bare).
 * Every injection is an audit `defect` event with its victim and donor.
 *   ABORT_REUSE     a cancelled request's row is reused without clearing: the
 *                   next request placed in it starts with the token the
 *                   cancelled one would have produced next (ollama #17475)
 *   REDECODE        a token re-decoded after a layout change: a row the
 *                   condense moved emits its pending token again at the next
 *                   decode (tenstorrent/vllm #395/#396, PR #444)
 *   CONDENSE_STATE  per-slot state not moved on condense: a row the condense
 *                   moved computes its next token from the state of the
 *                   request that had left that row (tt-metal #51982)
 *   PREFIX_BLOCK    a prefix-cache hit serving another request's block: a
 *                   block evicted under pressure keeps its hash entry, its
 *                   memory is refilled by another request's block, and a
 *                   request whose prefix hits it computes its first token from
 *                   that block's owner (tenstorrent/vllm #415)
 *   OOV             out-of-vocabulary ids: an on-device-sampled token at output
 *                   index TTSIM_OOV_AT is an id past the vocabulary, read from
 *                   memory no one wrote (tt-metal #52176); with oov_batched
 *                   only in a decode of more than one row
 */
enum {
	TTSIM_FAULT_ABORT_REUSE = 1u << 0,
	TTSIM_FAULT_REDECODE = 1u << 1,
	TTSIM_FAULT_CONDENSE_STATE = 1u << 2,
	TTSIM_FAULT_PREFIX_BLOCK = 1u << 3,
	TTSIM_FAULT_OOV = 1u << 4,
};
#define TTSIM_OOV_AT 8
/* Parses "abort-reuse", "redecode", ... into a TTSIM_FAULT_* bit; 0 when unknown. */
unsigned ttsim_fault_parse(const char *name);
/* The name of bit f. */
const char *ttsim_fault_name(unsigned f);

/* Whose prefill runs before the keep: Qwen3.6's own (it never fills the
 * prefilled-slot set) or tt_transformers' Generator.prefill_forward_text (it
 * does). */
enum ttsim_generator { TTSIM_GEN_QWEN36 = 0, TTSIM_GEN_GENERIC };

struct ttsim_model_config {
	int slots;                  /* max_num_seqs, 1..TTSIM_MAX_SLOTS */
	long long max_model_len;    /* also the `bound` rule's max_pos */
	unsigned long long seed;
	unsigned arm;               /* rules the merge applies (guard.h mask) */
	unsigned arm_claimed;       /* rules the audit's "arm" names; differs from
				     * `arm` only under a fault switch */
	double garbage_rate;        /* chance an idle row restaged reads as garbage, [0,1] */
	enum ttsim_generator generator;
	bool trace_key_sampling;    /* traces keyed by on_device_sampling alone (before
				     * tt-metal PR #53947): one buffer per mode whose width is
				     * that of its last restage */
	double host_sampling;       /* chance a request's sampling needs the host, [0,1]: a
				     * decode with one in its batch samples on the host */
	int n_buckets;              /* decode widths per chunk (nearest bucket at or above
				     * the rows in use); 0: padded to slots/dp, as the TT
				     * plugin pads to max_num_seqs */
	int buckets[TTSIM_MAX_BUCKETS];   /* ascending, each 1..slots/dp */
	int max_prefills;           /* consecutive prefill steps before a decode, >= 1 */
	int block_size;             /* prefix cache block, tokens */
	int cache_blocks;           /* prefix cache capacity, blocks; 0 = no cache */
	/* Time model, seconds of modeled time. */
	double prefill_base_s, prefill_token_s;  /* per prefill, per uncached token */
	double decode_base_s, decode_slot_s;     /* per decode, per active slot */
	double forgone_s;           /* per async-ahead token a guard gave up */
	/* The capability gate of tt-metal PR #54565 (generator.py 50868c00:
	 * model_capabilities.get("supports_async_decode", False)): the keep also
	 * needs the model to declare it; an absent key is false, and no
	 * variable overrides it. Off: the pre-#54565 code the incident ran (no
	 * gate). */
	int dp;                     /* data-parallel chunks the keep runs over (slots % dp
				     * == 0); 1: one */
	bool keep_gate;
	bool supports_async_decode;
	bool capability_declared;   /* the key is there (false: absent, the gate refuses) */
	bool audit_wall_time;       /* merge events carry "t" (off: audits are
				     * byte-identical across runs of one seed) */
	unsigned faults;            /* TTSIM_FAULT_* defect modes on */
	bool no_async;              /* async scheduling off (vLLM --no-async-scheduling): no keep */
	/* chance a position of a sequence is a near tie (ttsim_model_score):
	 * there a decode with more than one row takes the runner-up, as batch
	 * arithmetic can flip a near tie (vllm #4091); a request alone never does */
	double near_ties;
	bool oov_batched;           /* OOV only in decodes of more than one row: a request
				     * alone (a reference) is clean */
};

/* The rules the running keep applies: the engaged arm, and on the generic
 * path the helper's own prefilled-slot mask (upstream code, not a guard). */
unsigned ttsim_model_running_rules(const struct ttsim_model_config *c);

/* The defaults: 8 slots, 131072 max_model_len, bare, the Qwen3.6 path, traces
 * keyed (on_device_sampling, batch), no host sampling, no buckets. */
void ttsim_model_config_default(struct ttsim_model_config *c);

struct ttsim_req_result {
	int prompt_tokens, cached_tokens;
	int n_tokens;               /* tokens delivered */
	int n_subs;                 /* substitutions this request received */
	int first_sub;              /* completion index of the first, -1 = none */
	bool aborted;
};

/* Callbacks run inside ttsim_model_step / ttsim_model_abort; they must not
 * call back into the model. */
struct ttsim_model_sink {
	void (*token)(void *ctx, void *user, int index, int tok);
	void (*finish)(void *ctx, void *user, const struct ttsim_req_result *res);
	void *ctx;
};

enum ttsim_step_kind { TTSIM_STEP_IDLE = 0, TTSIM_STEP_PREFILL, TTSIM_STEP_DECODE };

struct ttsim_step {
	enum ttsim_step_kind kind;
	double seconds;             /* modeled duration */
	bool merged;                /* a merge ran at this step */
	int width;                  /* slots in the forward */
};

/* Counts of one rule over the model's merges, as spec section 3 defines them
 * (ground truth: request ids, which every ttsim merge carries). */
struct ttsim_rule_stats {
	unsigned long long merges, taken, substitutions, prevented, forgone, fired;
	unsigned long long skipped, shape_fallback;
};

/* The keep's inputs the model writes each decode, as text: "(True, 8)". */
const char *ttsim_model_trace_key(bool on_device_sampling, int width, bool sampling_only,
				  char *buf, size_t n);

struct ttsim_model_stats {
	unsigned long long steps, prefills, decodes, merges;
	unsigned long long takes;           /* slots the running code took */
	unsigned long long substitutions;   /* takes from another request's buffer slot */
	unsigned long long changed;         /* substitutions whose token differed */
	unsigned long long forgone;         /* bare would take, the engaged arm did not */
	unsigned long long fallbacks;       /* chunk merges that fell back to host tokens */
	unsigned long long host_sampled;    /* decodes sampled on the host */
	unsigned long long restages;        /* trace-input restages (chunks) */
	unsigned long long started, finished, aborted, with_subs;
	unsigned long long defects;         /* tokens a defect mode changed */
	unsigned long long prompt_tokens, cached_tokens, generation_tokens;
	double modeled_seconds;
};

struct ttsim_model;

enum status ttsim_model_new(const struct ttsim_model_config *c, struct ttsim_model **out,
			    struct status_info *si);
void ttsim_model_free(struct ttsim_model *m);

void ttsim_model_set_sink(struct ttsim_model *m, const struct ttsim_model_sink *sink);
/* Audit writer (not owned; NULL = none). Writes the config event at once. */
void ttsim_model_set_audit(struct ttsim_model *m, struct ttsim_audit *a);

/* Evaluates `mask` counterfactually on every merge from now on. */
enum status ttsim_model_track(struct ttsim_model *m, unsigned mask);
/* NULL when `mask` is not tracked. */
const struct ttsim_rule_stats *ttsim_model_rule_stats(const struct ttsim_model *m,
						      unsigned mask);

/*
 * Queues a request. `id` (< TTSIM_ID_MAX bytes) and `prompt` are copied.
 * Needs n_prompt >= 1, max_tokens >= 1 and their sum <= max_model_len.
 * *handle identifies it for ttsim_model_abort.
 */
enum status ttsim_model_submit(struct ttsim_model *m, const char *id, const int *prompt,
			       int n_prompt, int max_tokens, void *user,
			       unsigned long long *handle, struct status_info *si);
/* A waiting request's sampling needs the host (its parameters ask for
 * logprobs, penalties, structured output ...): a decode with it in its batch
 * samples on the host. False when the handle is not waiting. */
bool ttsim_model_host_sample(struct ttsim_model *m, unsigned long long handle);
/* Drops a waiting or running request (sink->finish with aborted). False
 * when the handle is unknown (already finished). */
bool ttsim_model_abort(struct ttsim_model *m, unsigned long long handle);

/* Runs one step; IDLE when there is nothing to do. */
void ttsim_model_step(struct ttsim_model *m, struct ttsim_step *st);

int ttsim_model_running(const struct ttsim_model *m);
int ttsim_model_waiting(const struct ttsim_model *m);
void ttsim_model_stats(const struct ttsim_model *m, struct ttsim_model_stats *out);
const struct ttsim_model_config *ttsim_model_config(const struct ttsim_model *m);
void ttsim_model_reset_prefix_cache(struct ttsim_model *m);

/*
 * What the model's next-token distribution is after toks[0..pos) (pos >= 1),
 * as an echo with logprobs reports it: its greedy token *top (a copy task's
 * next piece after the piece before it, else the hash of the sequence), a
 * runner-up *alt, and whether the two are a near tie there (chance
 * near_ties, drawn from the sequence's hash). Logprobs: ttsim_model_lp.
 */
void ttsim_model_score(unsigned long long seed, double near_ties, const int *toks, int n, int pos, int *top,
		       int *alt, bool *near);
/* The logprob the distribution above gives tok. */
double ttsim_model_lp(int tok, int top, int alt, bool near);

/* The output `n` tokens of a prompt alone, without substitution: the
 * sequential reference. */
void ttsim_model_reference(unsigned long long seed, const int *prompt, int n_prompt, int n,
			   int *out);

#endif
