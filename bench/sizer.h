/*
 * sizer.h - the server's tokenizer behind suite_generate's sizing
 * (suite.h: struct suite_sizer), for bench's generated prompts.
 */
#ifndef TTAUDIT_SIZER_H
#define TTAUDIT_SIZER_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "bench/suite.h"

struct sizer;

/* A sizer asking the server at base (and model, NULL none; both the caller's,
 * kept until sizer_free). Its completions go with X-Request-Id
 * "<id_prefix>-size-<n>" (n from 1), found so in the server's log. */
enum status sizer_new(struct sizer **out, const char *base, const char *model,
		      const char *id_prefix, struct status_info *si);
void sizer_free(struct sizer *z);
/* Points sz's callbacks at z. */
void sizer_bind(struct sizer *z, struct suite_sizer *sz);
/* The suite's sizing label with how the tokenizer was asked, or why it was
 * not used: "tokenize" -> "tokenize:content" (llama-server's shape),
 * "probe" -> "probe:tokenize-empty" (it answered no tokens). */
void sizer_refine(const struct sizer *z, char *sizing, size_t n);

/*
 * The token ids of text (a completions prompt, no special tokens) by the
 * server's /tokenize, vLLM's shape and then llama-server's; at most cap into
 * ids, their count in *n. STATUS_NOTFOUND when the server has no tokenizer
 * route or answers no tokens.
 */
enum status sizer_ids(struct sizer *z, const char *text, int64_t *ids, size_t cap, size_t *n,
		      struct status_info *si);

#endif
