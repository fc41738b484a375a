/*
 * rule.h - the guard rules a merge can run under, and their combinations.
 *
 * A rule allows a set G of active slots; it takes the slots that both the
 * bare position match and G admit. Base rules live in one table in rule.c
 * (name, fields needed, allowed-set function, why-function): a new guard is
 * one function and one line there. `a+b` intersects the allowed sets.
 *
 * Sets are bit masks over windows of 64 slots (bit i is slot base + i): the
 * tally evaluates every rule on a window with a few word operations, and
 * rule_eval() (one byte per slot) is built on the same functions.
 */
#ifndef TTAUDIT_RULE_H
#define TTAUDIT_RULE_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/event.h"
#include "base/status.h"

#define RULE_MAX_PARTS 8      /* base rules in one combination */
#define RULE_MAX_LIST 32      /* rules in one --rules list */
#define RULE_NAME_MAX 96

/* Fields a rule needs; an event lacking one is skipped for that rule. */
enum {
	RULE_NEEDS_PREFILLED = 1u << 0,
	RULE_NEEDS_BUF_STEP = 1u << 1,
	RULE_NEEDS_STAMP = 1u << 2,     /* slot_gen/buf_slot_gen or gen/buf_gen */
	RULE_NEEDS_MAX_POS = 1u << 3,   /* --max-pos or config.max_model_len */
};

struct rule {
	char name[RULE_NAME_MAX];       /* canonical "a+b", parts in table order */
	unsigned n_parts;
	unsigned parts[RULE_MAX_PARTS]; /* indexes into the base table */
	unsigned needs;
};

/* What a rule may know beyond the event. */
struct rule_ctx {
	int64_t max_pos;                /* 0: unknown */
};

/* Event-wide facts the allowed sets depend on (rule_facts_fill). */
struct rule_facts {
	int batch_match;     /* buffer and batch agree on which of [0, H) are active */
	int lifetime_ok;     /* buf_step == step - 1 and the mode did not switch */
	int gen_match;       /* gen == buf_gen */
};

/* Slots [base, base + 64) of one merge as bit masks (rule_window_fill). */
struct rule_window {
	uint32_t base, n;    /* n slots in this window (64 but for the last) */
	uint64_t active;     /* host_pos != -1 */
	uint64_t dev_active; /* dev_pos != -1 */
	uint64_t bare;       /* the bare merge would take it */
	uint64_t prefilled;
	uint64_t gen_eq;     /* slot_gen == buf_slot_gen (when both are there) */
	uint64_t in_bound;   /* dev_pos in [-1, max_pos) (when max_pos is known) */
	uint64_t garbage;    /* dev_pos < -1 or >= the garbage bound (any slot) */
	uint64_t taken;      /* the recorded decision (when there is one) */
};

/* Windows of a merge with H slots. */
static inline uint32_t rule_n_windows(uint32_t h)
{
	return (h + 63) / 64;
}


enum rule_outcome {
	RULE_EVALUATED,
	RULE_SKIPPED,          /* a needed field is missing on this event */
	RULE_SHAPE_FALLBACK,   /* D < H: nothing is taken, by any rule */
};

/* Number of base rules and the name of base rule i ("bare", "prefilled" ...). */
size_t rule_base_count(void);
const char *rule_base_name(size_t i);
const char *rule_base_doc(size_t i);

/*
 * The environment flag that engages each guard in the seeds' patched
 * generator (docs/arms.md), X(arm, "FLAG") with arm a bare word, in the base
 * table's order; bare has none. The one list of them: an X-macro so that
 * tables made at compile time come from it too (capture's built-in banner
 * rules, ttsim's arms); `ttaudit passthrough --guard` reads it through
 * rule_guard_flag. The instrumentation kit's copy (ttaudit_emit/kit.py
 * GUARD_FLAGS, Python) is held to it by tests/test_rule.c.
 */
#define RULE_GUARD_FLAGS(X) \
	X(prefilled, "QWEN36_PREFILLED_SLOTS_FIX") \
	X(batch, "QWEN36_MERGE_BATCH_GUARD") \
	X(lifetime, "QWEN36_MERGE_LIFETIME_GUARD") \
	X(stamp, "QWEN36_MERGE_STAMP_GUARD") \
	X(bound, "QWEN36_MERGE_GARBAGE_BOUND")

/* The guards' names as one string literal, each after a space, for help
 * and messages: " prefilled batch lifetime stamp bound". */
#define RULE_GUARD_NAME_(name, flag) " " #name
#define RULE_GUARD_NAMES RULE_GUARD_FLAGS(RULE_GUARD_NAME_)

/* The flag of the base rule named `name` ("batch": "QWEN36_MERGE_BATCH_GUARD");
 * NULL for bare, a combination or an unknown name. */
const char *rule_guard_flag(const char *name);

/* Parses "batch" or "batch+lifetime" (order and repeats do not matter). */
enum status rule_parse(const char *name, struct rule *out, struct status_info *si);
/* The same for the n bytes at name (a name read from an audit may hold a NUL). */
enum status rule_parse_len(const char *name, size_t n, struct rule *out, struct status_info *si);
/*
 * Parses a comma-separated list into out[0..*n). Duplicates are dropped.
 * Fails on an unknown name or more than `max` rules.
 */
enum status rule_list_parse(const char *list, struct rule *out, size_t max, size_t *n,
			    struct status_info *si);
/* The six base rules, in table order. Returns the count. */
size_t rule_list_default(struct rule *out, size_t max);

/* 1 when buf_step is the step before step (no overflow at INT64_MIN). */
int rule_step_is_prev(int64_t buf_step, int64_t step);
/*
 * a - b, exact for any int64 a and b, as text ("-3", "18446744073709551615").
 * Returns buf.
 */
const char *rule_step_diff(int64_t a, int64_t b, char *buf, size_t n);

/*
 * The masks of window w (slots [64 w, 64 w + 64) of m, D >= H). garbage_pos
 * is the garbage bound (max_pos, or TALLY_DEFAULT_GARBAGE_POS when unknown).
 */
void rule_window_fill(const struct merge_event *m, const struct rule_ctx *ctx,
		      int64_t garbage_pos, uint32_t w, struct rule_window *out);
/* The event-wide facts; w0 is window 0 when H <= 64 (saves a pass), else NULL. */
void rule_facts_fill(const struct merge_event *m, const struct rule_window *w0,
		     struct rule_facts *out);
/* What rule r decides on m before any slot: evaluated, skipped, or shape fallback. */
enum rule_outcome rule_outcome_of(const struct rule *r, const struct merge_event *m,
				  const struct rule_ctx *ctx);
/* The allowed set G of r on window w (only after rule_outcome_of said RULE_EVALUATED). */
uint64_t rule_window_allow(const struct rule *r, const struct merge_event *m,
			   const struct rule_facts *f, const struct rule_window *w);

/* 1 when bare would take slot s of m (s active and position matches). */
int rule_bare_take(const struct merge_event *m, uint32_t s);
/* 1 when slot s is active (s < H and host_pos[s] != -1). */
int rule_active(const struct merge_event *m, uint32_t s);

/*
 * Evaluates r on m. With RULE_EVALUATED, take[s] (and allowed[s], if not
 * NULL) are set for s in [0, H); both arrays hold at least H bytes.
 */
enum rule_outcome rule_eval(const struct rule *r, const struct merge_event *m,
			    const struct rule_ctx *ctx, uint8_t *take, uint8_t *allowed);

/*
 * Why rule r allows or refuses slot s on m, in words, into buf (always
 * terminated). Only meaningful after rule_eval() returned RULE_EVALUATED.
 */
void rule_why(const struct rule *r, const struct merge_event *m, const struct rule_ctx *ctx,
	      uint32_t s, char *buf, size_t n);

/* The names of the fields rule r needs that m lacks, as "buf_step, prefilled". */
void rule_missing(const struct rule *r, const struct merge_event *m, const struct rule_ctx *ctx,
		  char *buf, size_t n);

#endif
