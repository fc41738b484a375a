/*
 * prompt.h - reading a request body's prompt: the JSON fields a completion
 * or chat request carries its prompt in, as ttsim's vocabulary's tokens.
 */
#ifndef TTSIM_PROMPT_H
#define TTSIM_PROMPT_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

/* An integer-valued JSON number within [lo, hi] in *out; false otherwise. */
bool ttsim_prompt_json_int(const cJSON *v, long long lo, long long hi, long long *out);
/* The prompt of req as tokens: "prompt" (string or token id array) or, with
 * chat, "messages" (chat template). On failure err (errn bytes) names the
 * problem and *param the field. Caller frees *toks. */
bool ttsim_prompt_tokens(const cJSON *req, bool chat, int **toks, int *n, const char **param,
		   char *err, size_t errn);

#endif
