/*
 * suite.h - the prompts of a benchmark: loaded from a JSONL file, or
 * generated to a target input length sized with the server's own tokenizer.
 *
 * Suite file: one JSON object per line (blank lines skipped):
 *   {"id": "q1", "prompt": "text", "max_tokens": 64, "expect": "Paris"}
 *   {"id": 7, "messages": [{"role": "user", "content": "..."}], "max_tokens": 32,
 *    "expect": ["4", "four"]}
 * `id` (string or integer, unique), exactly one of `prompt` (sent to
 * /v1/completions) or `messages` (sent to /v1/chat/completions), `max_tokens`
 * (1 to SUITE_MAX_OUTPUT), and `expect` (optional: a string, or strings that
 * must all appear in the output). Any other key is an error: a misspelt key
 * must not silently change the workload.
 *
 * Generated prompts: seeded word text sized so that (nonce + text) is
 * `input_tokens` long by the server's count. The count comes from a
 * tokenizer callback (the server's /tokenize, exact, same chat template);
 * when that route does not exist, two generation probes fit tokens = a *
 * words + b from the prompt_tokens the server reports. `sizing` records
 * which was used.
 *
 * Cold and warm: a request body is built with a nonce, a fixed-shape word
 * put before the prompt ("run <8 hex> <8 hex>": several tokens, so
 * two nonces are unlikely to tokenize alike), so that prompts the caller wants
 * cold share no prefix with anything the server has cached. --warm instead
 * grows every generated prompt from one shared session (prompt k is the
 * session plus k turns) so the prefix cache can serve it on purpose.
 */
#ifndef TTAUDIT_SUITE_H
#define TTAUDIT_SUITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define SUITE_MAX_LINE (1u << 20)
#define SUITE_MAX_ENTRIES 100000u
#define SUITE_MAX_OUTPUT 1000000L
#define SUITE_MAX_INPUT 1000000L
#define SUITE_MAX_EXPECT 32u
#define SUITE_NONCE_LEN 21            /* "run", two words of 8 hex digits */

struct suite_entry {
	char *id;
	char *prompt;           /* completions prompt, or NULL */
	char *messages;         /* chat messages as a JSON array text, or NULL */
	long max_tokens;
	char **expect;          /* n_expect strings that must all appear in the output */
	size_t n_expect;
	long line;              /* line in the suite file; 0 when generated */
	long input_tokens;      /* prompt tokens as sized (nonce included); -1 when not known */
};

struct suite {
	struct suite_entry *e;
	size_t n;
	char hash[32];          /* "fnv1a64:<16 hex>" of the file, or of the generated texts */
	char source[1024];      /* file name, or "generated" */
	char sizing[48];        /* "file", "tokenize" or "probe" (the driver may add how: driver.c) */
	long target_tokens;     /* generated: the target input length; else 0 */
	double probe_a, probe_b;/* sizing "probe": tokens = a * words + b */
};

/* Loads a suite file. Errors name file and line. Free with suite_free(). */
enum status suite_load(struct suite **out, const char *path, struct status_info *si);
void suite_free(struct suite *s);

struct suite_sizer {
	/*
	 * Counts the tokens of text as a completions prompt, or as the content of
	 * one user message with the chat template when chat. STATUS_NOTFOUND when
	 * the server has no tokenizer route (then probe is used).
	 */
	enum status (*count)(void *ctx, const char *text, bool chat, long *n, struct status_info *si);
	/* Asks for one generated token and gives the server's usage.prompt_tokens. */
	enum status (*probe)(void *ctx, const char *text, bool chat, long *n, struct status_info *si);
	void *ctx;
};

struct suite_gen_opts {
	size_t n_prompts;
	long input_tokens;      /* target, nonce included */
	long max_tokens;
	uint64_t seed;          /* text words */
	bool chat;              /* messages, not prompts */
	bool warm;              /* grow from one shared session */
};

enum status suite_generate(struct suite **out, const struct suite_gen_opts *o,
			   const struct suite_sizer *sz, struct status_info *si);

/* The nonce for a key, SUITE_NONCE_LEN characters, into buf (>= SUITE_NONCE_LEN + 1). */
void suite_nonce(uint64_t key, char *buf);

struct suite_body_opts {
	const char *model;
	const char *nonce;      /* NULL: the prompt is sent as it is */
	double temperature;     /* < 0: not sent (the server's default) */
	bool ignore_eos;        /* ask the server to generate max_tokens (vLLM extension) */
	bool no_usage;          /* do not ask for the usage block (stream_options) */
	bool return_token_ids;  /* ask for each chunk's token ids (vLLM's return_token_ids) */
	const char *extra;      /* members merged into the body (a JSON object's text), or NULL */
	const char *preface;    /* text put before the prompt (after the nonce), or NULL */
	long max_tokens;        /* > 0: instead of the entry's */
};

/*
 * The JSON body of entry i (streaming, usage requested), malloc'd, and its
 * route ("/v1/completions" or "/v1/chat/completions"). Caller frees.
 */
char *suite_body(const struct suite *s, size_t i, const struct suite_body_opts *o,
		 const char **route, size_t *len);


#endif
