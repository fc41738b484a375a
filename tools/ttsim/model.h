/*
 * model.h - ttsim's generator model: the tt-metal generator's continuous
 * batching and async-ahead device buffer, with the real merge.
 *
 * - `slots` slots (max_num_seqs). A step is one forward: a prefill (one
 *   waiting request into the lowest free slot) or a decode (every active slot
 *   advances one token). Requests leave when done; slots are reused.
 * - Tokens are greedy and deterministic: the next token is a hash of the
 *   seed, the prompt and the sequence so far, so a request's output does not
 *   depend on concurrency unless a merge substitutes a token, and then it
 *   changes from that position on. Emission lags one step, as with async
 *   scheduling: a slot's newest token (at host_pos) is pending and is
 *   delivered by the next decode, or when the request finishes.
 * - Each decode writes the device buffer one ahead of the host: per slot the
 *   next token and its position (host_pos + 1), stamped with the request id,
 *   the slot's request generation, the step and the batch generation. Idle
 *   slots hold -1, or at `garbage_rate` a float32 bit pattern read as int32
 *   that grows by one each decode the slot stays idle.
 * - The host's copy of that buffer is refreshed only every `refresh_every`-th
 *   decode, so the copy a merge reads can be many steps and a whole request
 *   generation old.
 * - A merge runs at a decode whose batch changed since the previous decode
 *   (reset_batch: a request entered or left) or that follows a prefill
 *   (mode_switched). It takes, per active slot, the device token where
 *   dev_pos == host_pos or dev_pos == host_pos + 1 and the engaged arm allows
 *   (guard.h, spec section 3). A take at host_pos replaces the pending token;
 *   at host_pos + 1 it becomes the next token. A token taken from a buffer
 *   slot written for another request is a substitution.
 *
 * Not thread-safe: the caller serialises all calls (the server holds a lock).
 */
#ifndef TTSIM_MODEL_H
#define TTSIM_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "audit.h"
#include "guard.h"
#include "status.h"

#define TTSIM_MAX_SLOTS 256
#define TTSIM_ID_MAX 128
#define TTSIM_MAX_TRACKED 16

struct ttsim_model_config {
	int slots;                  /* max_num_seqs, 1..TTSIM_MAX_SLOTS */
	long long max_model_len;    /* also the `bound` rule's max_pos */
	unsigned long long seed;
	unsigned arm;               /* rules the merge applies (guard.h mask) */
	unsigned arm_claimed;       /* rules the audit's "arm" names; differs from
				     * `arm` only under a fault switch */
	int refresh_every;          /* host copy refreshed every N-th decode, >= 1 */
	double garbage_rate;        /* chance an idle slot reads as garbage, [0,1] */
	int max_prefills;           /* consecutive prefill steps before a decode, >= 1 */
	int block_size;             /* prefix cache block, tokens */
	int cache_blocks;           /* prefix cache capacity, blocks; 0 = no cache */
	/* Time model, seconds of modeled time. */
	double prefill_base_s, prefill_token_s;  /* per prefill, per uncached token */
	double decode_base_s, decode_slot_s;     /* per decode, per active slot */
	double forgone_s;           /* per async-ahead token a guard gave up */
	/* The capability gate of tt-metal PR #54565: the keep also needs the
	 * model's supports_async_decode (Qwen3.6 upstream declares false),
	 * unless TT_FORCE_ASYNC_AHEAD_KEEP=1. Off: the pre-#54565 code the
	 * incident ran (no gate). */
	int dp;                     /* data-parallel chunks the keep runs over (slots % dp
				     * == 0); 1: one */
	bool keep_gate;
	bool supports_async_decode;
	bool force_keep;
	bool audit_wall_time;       /* merge events carry "t" (off: audits are
				     * byte-identical across runs of one seed) */
};

/* The defaults: 8 slots, 131072 max_model_len, bare, refresh every 4th decode. */
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

struct ttsim_model_stats {
	unsigned long long steps, prefills, decodes, merges;
	unsigned long long takes;           /* slots the running code took */
	unsigned long long substitutions;   /* takes from another request's buffer slot */
	unsigned long long changed;         /* substitutions whose token differed */
	unsigned long long forgone;         /* bare would take, the engaged arm did not */
	unsigned long long started, finished, aborted, with_subs;
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

/* The output `n` tokens of a prompt alone, without substitution: the
 * sequential reference. */
void ttsim_model_reference(unsigned long long seed, const int *prompt, int n_prompt, int n,
			   int *out);

#endif
