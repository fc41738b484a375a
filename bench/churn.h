/*
 * churn.h - the churn workload (`ttaudit bench --workload churn`): load that
 * provokes the steps where the async-ahead family lives, request by request
 * from a seed, and what each request made the server do.
 *
 * The defects are at transitions, not in the steady state: a decode after a
 * layout change or a prefill (tenstorrent/tt-metal PR #47359: reset, mode
 * switch, condense), a sampling-mode switch (the device's buffer left behind
 * by host-sampled steps; tenstorrent/vllm PR #444), a slot freed by a
 * finish or an abort and filled again (ollama #17475: contamination after
 * client aborts), a prefix-cache block reused (tenstorrent/vllm #415), and
 * more requests than max_num_seqs (vllm #48271 passes at 9 concurrent
 * requests and fails at 256). So, per run of n requests, closed loop at the
 * level (a new request arrives whenever one leaves, while the others decode):
 *
 *   - max_tokens mixed: of a quarter, an eighth, a half, all of M, 1 and 2,
 *     so requests finish early and rows free up mid-decode;
 *   - client aborts: one request in CHURN_ABORT_EVERY is cancelled by the
 *     client (its connection closed) after a chosen number of tokens;
 *   - sync-forcing requests: one in CHURN_SYNC_EVERY asks for logprobs,
 *     which on Tenstorrent forces the synchronous path for the whole batch
 *     (vllm-tt-plugin docs/SCHEDULING.md lists the drain triggers), among
 *     requests that do not: every one of them switches the sampling mode in
 *     and out;
 *   - a shared prefix: the first eighth of the run's requests carry it
 *     ("prefix"), the middle half are pressure (a long unique preface,
 *     pressure_words words each, to evict cached blocks), the last eighth
 *     carry the shared prefix again ("again"): sent, evicted, sent again.
 *
 * The levels that cross max_num_seqs (below, at, 4x and 32x it) are the
 * driver's (churn_levels). Each request's record lists the transitions it
 * caused (churn_transitions): its arrival during decode, its early finish,
 * its abort, the sampling switch, its prefix phase, its arrival over
 * capacity.
 */
#ifndef TTAUDIT_CHURN_H
#define TTAUDIT_CHURN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/load.h"
#include "base/status.h"

#define CHURN_ABORT_EVERY 8
#define CHURN_SYNC_EVERY 6
#define CHURN_PREFIX_WORDS 48         /* the shared prefix: three blocks of 16 and more */
#define CHURN_MAX_LEVELS 4

enum churn_prefix { CHURN_PREFIX_NONE = 0, CHURN_PREFIX_FIRST, CHURN_PREFIX_PRESSURE, CHURN_PREFIX_AGAIN };

/* "none", "prefix", "pressure", "again". */
const char *churn_prefix_name(enum churn_prefix p);

struct churn_req {
	unsigned shape;              /* which of the max_tokens mix (churn_resolve) */
	double abort_u;              /* > 0: the client cancels this far into the answer */
	long entry_max;              /* the prompt's own max_tokens (churn_resolve) */
	long max_tokens;             /* as sent (churn_resolve) */
	long abort_at;               /* tokens after which the client cancels; 0 none */
	bool sync;                   /* asks for logprobs: the synchronous path */
	enum churn_prefix prefix;
};

struct churn_plan {
	struct churn_req *r;         /* n entries */
	size_t n;
	long max_tokens;             /* M */
	unsigned max_num_seqs;       /* 0: not known */
	char *shared;                /* the shared prefix text */
	char **pressure;             /* per request: its pressure preface, or NULL */
	size_t pressure_words;
};

/*
 * The plan of a run of n requests from seed, M the prompts' usual max_tokens
 * (each request's own comes from churn_resolve).
 * Without prefaces no request gets the shared prefix or a pressure preface
 * (the reference stage compares outputs with prompts sent alone, which a
 * preface would change). Free with churn_plan_release().
 */
enum status churn_plan_make(struct churn_plan *p, uint64_t seed, size_t n, long max_tokens,
			    unsigned max_num_seqs, size_t pressure_words, bool prefaces,
			    struct status_info *si);
void churn_plan_release(struct churn_plan *p);

/* Request i's max_tokens and abort point for a prompt whose own max_tokens
 * is entry_max: of it, all, a half, a quarter, an eighth, 1 or 2 tokens; an
 * abort after 1 to entry_max - 1 tokens (none when entry_max < 2). */
void churn_resolve(struct churn_plan *p, size_t i, long entry_max);

/* The text put before request i's prompt (shared prefix or pressure), or NULL. */
const char *churn_preface(const struct churn_plan *p, size_t i);
/* The body members request i adds: "{\"logprobs\":1}" (completions) or
 * "{\"logprobs\":true,\"top_logprobs\":1}" (chat) when it forces the
 * synchronous path, else NULL. Static. */
const char *churn_extra(const struct churn_plan *p, size_t i, bool chat);

/* Below, at, 4x and 32x max_num_seqs (the first at least 1, each at most
 * cap, without repeats): into levels, their count returned. */
size_t churn_levels(unsigned max_num_seqs, unsigned cap, double *levels);

/* Transition bits of a request. */
enum {
	CHURN_T_ARRIVAL = 1 << 0,    /* arrived while others were in flight: a prefill among decodes */
	CHURN_T_EARLY = 1 << 1,      /* finished before the run's longest: a row freed mid-decode */
	CHURN_T_ABORT = 1 << 2,      /* cancelled by the client: a row freed, a stream cut */
	CHURN_T_SYNC = 1 << 3,       /* forced the synchronous path in and out */
	CHURN_T_PREFIX = 1 << 4,     /* sent the shared prefix */
	CHURN_T_PRESSURE = 1 << 5,   /* pushed cached blocks out */
	CHURN_T_AGAIN = 1 << 6,      /* sent the shared prefix again after the pressure */
	CHURN_T_OVER = 1 << 7,       /* arrived with max_num_seqs or more in flight: it queued */
};
#define CHURN_T__COUNT 8

/* The name of transition bit k (0-based): "arrival-during-decode", ... */
const char *churn_transition_name(unsigned k);

/* The transitions request i (its result r) caused, as bits. */
unsigned churn_transitions(const struct churn_plan *p, size_t i, const struct load_result *r);

#endif
