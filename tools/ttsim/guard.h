/*
 * guard.h - the merge guard arms of the tt-metal generator: their names, how
 * a server engages them (environment variables, as a real patch reads them),
 * the "engaged" banners, and the rule semantics of the audit spec section 3,
 * which the model applies at merge time and the offline run evaluates
 * counterfactually.
 *
 * An arm is a bit mask of rules; 0 is `bare` (no guard). A combination
 * allows the intersection of its rules' allowed sets.
 *
 * The semantics are written here apart from the analyzer's (analyzer/rule.c)
 * on purpose: this plays the server's guard, whose decisions (`taken`) the
 * analyzer judges; sharing its code would let a rule's bug confirm itself
 * (docs/testing.md, "Oracles"). The names and flags are the analyzer's one
 * list (RULE_GUARD_FLAGS).
 */
#ifndef TTSIM_GUARD_H
#define TTSIM_GUARD_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

enum {
	TTSIM_RULE_PREFILLED = 1u << 0,
	TTSIM_RULE_BATCH = 1u << 1,
	TTSIM_RULE_LIFETIME = 1u << 2,
	TTSIM_RULE_STAMP = 1u << 3,
	TTSIM_RULE_BOUND = 1u << 4,
};
#define TTSIM_RULE_ALL 0x1fu
#define TTSIM_RULE_COUNT 5
#define TTSIM_ARM_NAME_MAX 64

/* Parses "bare", "stamp", "batch+lifetime" (any order) into *mask. */
enum status ttsim_guard_parse(const char *s, unsigned *mask, struct status_info *si);

/* Canonical name ("bare", or rule names joined by '+' in table order) in buf. */
const char *ttsim_guard_name(unsigned mask, char *buf, size_t n);

/* The environment variable that engages one rule bit; NULL for others. */
const char *ttsim_guard_env_name(unsigned rule);

/* The arm the environment engages: each QWEN36_* variable set to "1". */
unsigned ttsim_guard_from_env(void);

/* Stores up to max static banner texts for the arm (the bare arm has its
 * own line); returns how many the arm has. */
size_t ttsim_guard_banners(unsigned mask, const char **lines, size_t max);

/*
 * One merge as the generator sees it, with the audit's ground-truth fields.
 * Arrays have n_host entries (dev_* have n_dev). Optional fields: NULL or
 * has_* false when absent. Request ids are NUL-terminated; NULL = no request.
 */
struct ttsim_merge {
	long long step;
	bool reset_batch, mode_switched;
	size_t n_host, n_dev;
	const long long *host_pos, *dev_pos;
	const int *host_tok, *dev_tok;
	const unsigned char *prefilled;      /* flags per host slot */
	bool has_buf_step;
	long long buf_step;
	bool has_gen;
	long long gen, buf_gen;
	const long long *slot_gen, *buf_slot_gen;
	const char *const *slot_req, *const *buf_req;
	const unsigned char *taken;          /* flags: what the running code took */
	const char *arm;                     /* what the running code says it applies */
	long long max_pos;                   /* <= 0: unknown */
	bool has_dp;                         /* several data-parallel chunks: dp is this one */
	int dp;
	const char *fallback;                /* the keep fell back to host tokens: "shape"
					      * (dev_* as read, n_dev < n_host) or "slot_remap"
					      * (n_dev 0); NULL = it compared */
	double t;                            /* wall seconds; 0 = omit */
};

enum ttsim_guard_eval {
	TTSIM_GUARD_EVALUATED = 0,
	TTSIM_GUARD_SKIPPED,        /* a field the rule needs is absent */
	TTSIM_GUARD_SHAPE_FALLBACK, /* n_dev < n_host: nothing taken */
};

/*
 * Applies `mask` to m: take[s] (n_host flags) = bare_take[s] and s allowed.
 * *fired (may be NULL) is true when the allowed set differs from the active
 * set and the active set is not empty.
 */
enum ttsim_guard_eval ttsim_guard_take(unsigned mask, const struct ttsim_merge *m,
				       unsigned char *take, bool *fired);

/*
 * Ground truth for slot s per spec section 3: 1 stale, 0 not, -1 unknown.
 * Only meaningful for an active slot.
 */
int ttsim_guard_stale(const struct ttsim_merge *m, size_t s);

#endif
