/*
 * margins.h - the offline margin pass of the correctness stage: after the
 * load, one quiet request per diverged output re-scores it with the server's
 * prompt logprobs and labels the divergence.
 *
 * Per diverged request (correct.h, the first difference at output token k)
 * the pass sends, at concurrency 1 with nothing else in flight, the
 * original prompt followed by the output under test up to and including the
 * divergent token, with `echo: true`, `logprobs: N`, `max_tokens: 1`,
 * temperature 0, and reads at the divergent token its logprob and the top
 * alternatives (OpenAI's completions `logprobs`: `tokens`, `token_logprobs`,
 * `top_logprobs`, `text_offset`; vLLM turns echo + logprobs into prompt
 * logprobs). Labels, the first that applies:
 *   past-vocabulary  the divergent token's id (kept from the run) is at or
 *                    past the vocabulary size (tt-metal #52176);
 *   duplicated-token the divergent token repeats the one before it and the
 *                    reference does not (correct.h; tenstorrent/vllm #395)
 *   near-tie         the reference token and the concurrent token are both
 *                    known at that position and their logprobs differ by
 *                    less than epsilon: benign batch variance (vllm #4091)
 *   low-probability  the reference token is known and beats the concurrent
 *                    one by epsilon or more: a token the model did not want
 *   not-evaluable    and why: the server refused echo or logprobs, answered
 *                    without them, had fewer positions, the reference token
 *                    is not among its top N, or the quiet pass itself
 *                    prefers the concurrent token (the reference is no
 *                    baseline there); a chat request (echo is a completions
 *                    feature).
 * past-vocabulary and duplicated-token are facts of the run; the echo's
 * figures are recorded beside them when the server gave them.
 *
 * Logprobs are asked for only here. On Tenstorrent a request that asks for
 * logprobs puts the batch on the synchronous path (vllm-tt-plugin
 * docs/SCHEDULING.md): under load it would turn off the path being tested.
 */
#ifndef TTAUDIT_MARGINS_H
#define TTAUDIT_MARGINS_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/correct.h"
#include "bench/load.h"
#include "base/status.h"

#define MARGINS_DEFAULT_EPS 0.1       /* nats */
#define MARGINS_TOP_N 5               /* top alternatives asked for */
#define MARGINS_MAX_ITEMS 100000u     /* divergences kept for the pass */

enum margins_label {
	MARGINS_NEAR_TIE,
	MARGINS_LOW_PROB,
	MARGINS_DUPLICATE,
	MARGINS_PAST_VOCAB,
	MARGINS_NOT_EVALUABLE,
	MARGINS__LABELS
};

/* "near-tie", "low-probability", "duplicated-token", "past-vocabulary", "not-evaluable". */
const char *margins_label_name(enum margins_label l);

/* Why a divergence is not evaluable (MARGINS_WHY_NONE when it is). */
enum margins_why {
	MARGINS_WHY_NONE,
	MARGINS_WHY_CHAT,          /* a chat request: echo scores completions prompts only */
	MARGINS_WHY_NO_ANSWER,     /* no HTTP answer (transport error, timeout) */
	MARGINS_WHY_REFUSED,       /* an HTTP status other than 200 */
	MARGINS_WHY_NO_LOGPROBS,   /* 200 without per-position logprobs */
	MARGINS_WHY_SHORT,         /* fewer positions than the divergent token's */
	MARGINS_WHY_REF_ABSENT,    /* the reference token is not among the top N there */
	MARGINS_WHY_PREFERS_GOT,   /* the quiet pass prefers the concurrent token by epsilon or more */
	MARGINS__WHYS
};

/* "", "chat", "no-answer", "refused", "no-logprobs", "short", "reference-not-in-top", "prefers-output". */
const char *margins_why_name(enum margins_why w);

/* What the echo says at one position. */
struct margins_obs {
	enum margins_why why;      /* NONE when the figures below are there */
	char got_tok[64];          /* the echo's token at the position */
	double lp_got;             /* its logprob */
	bool ref_known;            /* the reference token is among the top alternatives */
	double lp_ref;
	double lp_top;             /* the best logprob there */
	char detail[160];          /* refused / no-logprobs: what the server said */
};

/*
 * Reads a completions answer (body, n bytes) with echo and logprobs: the
 * token covering character char_off of the echoed text (the first byte
 * where the output leaves the reference) and, among its top alternatives,
 * the reference's token: the longest whose text the reference continues
 * with from that token's start (ref_tok: the reference's text from
 * char_off on). Fills ob; ob->why says what was missing.
 */
void margins_read(const char *body, size_t n, size_t char_off, const char *ref_tok, struct margins_obs *ob);

/* The label of one divergence (the order above). *why is set for not-evaluable. */
enum margins_label margins_judge(const struct margins_obs *ob, bool past_vocab, bool duplicate, double eps,
				 enum margins_why *why);

struct margins_item {
	size_t arm;
	char request_id[128];      /* X-Request-Id of the request under test */
	size_t prompt_index;
	size_t at;                 /* the divergent output token (correct.h) */
	enum margins_label label;
	enum margins_why why;
	struct margins_obs ob;
	char ref_tok[64], out_tok[64];   /* reference and output text at the divergence */
	long id;                   /* the output's token id there; -1 unknown */
};

struct margins_report {
	struct margins_item *items;
	size_t n;
	size_t n_label[MARGINS__LABELS];
	size_t n_dropped;          /* divergences past MARGINS_MAX_ITEMS: not scored */
	double eps;
	size_t n_requests;         /* quiet requests sent (each carries logprobs) */
};

struct margins;

/* A pass with epsilon eps (<= 0: the default) and the vocabulary size (0:
 * unknown, no past-vocabulary label). Free with margins_free. */
enum status margins_new(double eps, long vocab_size, struct margins **out, struct status_info *si);
void margins_free(struct margins *m);

/*
 * Keeps what the pass needs of run's diverged requests (corr): the prompt
 * (from the JSON body each request sent; bodies[i] for run->res[i]'s
 * request index), the output up to its divergent token, the reference's
 * token there. base is arm's server URL (the pass posts to its
 * /v1/completions), model its name (NULL none); both copied. Call after correct_compare, before run is freed.
 */
enum status margins_collect(struct margins *m, size_t arm, const char *base, const char *model,
			    char *const *bodies, const struct load_run *run, const struct load_run *ref,
			    const struct correct_report *corr, struct status_info *si);

/* Number of divergences kept. */
size_t margins_count(const struct margins *m);

/*
 * The quiet pass: one request at a time, after the load. Fills rep (owned
 * by the caller: margins_report_release). Per-request trouble is a label,
 * not an error; STATUS_NOMEM only.
 */
enum status margins_run(struct margins *m, double timeout_s, struct margins_report *rep, struct status_info *si);
void margins_report_release(struct margins_report *rep);

/*
 * The body of the quiet request for prompt + text (the caller's strings),
 * model NULL for none: echo, logprobs MARGINS_TOP_N, max_tokens 1,
 * temperature 0. Caller frees. NULL on allocation failure.
 */
char *margins_body(const char *model, const char *prompt, const char *text);

#endif
