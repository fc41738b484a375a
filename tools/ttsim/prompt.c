/*
 * prompt.c - a request's prompt as token ids: a completion's "prompt" (text
 * or ids) or a chat's "messages" through the chat template, with vLLM-style
 * messages for what is malformed (see prompt.h).
 */
#include "tools/ttsim/prompt.h"
#include "base/alloc.h"
#include "tools/ttsim/model.h"
#include "tools/ttsim/vocab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An integer-valued JSON number within [lo, hi]. */
bool ttsim_prompt_json_int(const cJSON *v, long long lo, long long hi, long long *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return false;
	d = v->valuedouble;
	if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
		return false;
	*out = (long long)d;
	return true;
}

/* The text of a chat message's content: a string, or an array of
 * {"type":"text","text":...} parts. NULL when malformed. Caller frees. */
static char *prompt_content_text(const cJSON *content)
{
	const cJSON *part, *text;
	size_t len = 0, cap = 1, l;
	char *out;

	if (cJSON_IsString(content))
		return strdup(content->valuestring);
	if (!cJSON_IsArray(content))
		return NULL;
	out = strdup("");
	if (!out)
		return NULL;
	cJSON_ArrayForEach(part, content) {
		text = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (!cJSON_IsObject(part) || !cJSON_IsString(text)) {
			free(out);
			return NULL;
		}
		l = strlen(text->valuestring);
		if (ALLOC_GROW(out, len + l + 2, cap) < 0) {
			free(out);
			return NULL;
		}
		if (len)
			out[len++] = ' ';
		memcpy(out + len, text->valuestring, l + 1);
		len += l;
	}
	return out;
}

/*
 * The prompt of a request as tokens: "prompt" (string or token id array) or
 * "messages" (chat template). On failure *err names the problem and *param
 * the field. Caller frees *toks.
 */
bool ttsim_prompt_tokens(const cJSON *req, bool chat, int **toks, int *n, const char **param,
		   char *err, size_t errn)
{
	const cJSON *prompt, *msgs, *m, *role, *v;
	char *text = NULL, *content;
	size_t len = 0, cap = 0, need, count, i;
	long long id;
	bool ok = false;

	*toks = NULL;
	*n = 0;
	if (!chat) {
		*param = "prompt";
		prompt = cJSON_GetObjectItemCaseSensitive(req, "prompt");
		if (!prompt) {
			snprintf(err, errn, "prompt: Field required");
			return false;
		}
		if (cJSON_IsArray(prompt)) {
			count = (size_t)cJSON_GetArraySize(prompt);
			if (!count || count > 1u << 22) {
				snprintf(err, errn, "prompt: token list must have 1..%u entries", 1u << 22);
				return false;
			}
			*toks = malloc(count * sizeof(int));
			if (!*toks) {
				snprintf(err, errn, "out of memory");
				return false;
			}
			i = 0;
			cJSON_ArrayForEach(v, prompt) {
				if (!ttsim_prompt_json_int(v, 0, TTSIM_VOCAB_SIZE - 1, &id)) {
					snprintf(err, errn, "prompt[%zu]: Input should be a valid token id "
						 "(0..%d); a list of strings is not supported", i,
						 TTSIM_VOCAB_SIZE - 1);
					free(*toks);
					*toks = NULL;
					return false;
				}
				(*toks)[i++] = (int)id;
			}
			*n = (int)count;
			return true;
		}
		if (!cJSON_IsString(prompt)) {
			snprintf(err, errn, "prompt: Input should be a valid string");
			return false;
		}
		text = strdup(prompt->valuestring);
		if (!text) {
			snprintf(err, errn, "out of memory");
			return false;
		}
		len = strlen(text);
	} else {
		*param = "messages";
		msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
		if (!msgs) {
			snprintf(err, errn, "messages: Field required");
			return false;
		}
		if (!cJSON_IsArray(msgs) || !cJSON_GetArraySize(msgs)) {
			snprintf(err, errn, "messages: Input should be a non-empty list");
			return false;
		}
		i = 0;
		cJSON_ArrayForEach(m, msgs) {
			role = cJSON_GetObjectItemCaseSensitive(m, "role");
			if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
				snprintf(err, errn, "messages[%zu].role: Field required", i);
				goto out;
			}
			content = prompt_content_text(cJSON_GetObjectItemCaseSensitive(m, "content"));
			if (!content) {
				snprintf(err, errn, "messages[%zu].content: Input should be a valid string",
					 i);
				goto out;
			}
			need = len + strlen(role->valuestring) + strlen(content) + 64;
			if (ALLOC_GROW(text, need, cap) < 0) {
				free(content);
				snprintf(err, errn, "out of memory");
				goto out;
			}
			len += (size_t)sprintf(text + len, "<|im_start|> %s\n%s <|im_end|>\n",
					       role->valuestring, content);
			free(content);
			i++;
		}
		if (ALLOC_GROW(text, len + 32, cap) < 0) {
			snprintf(err, errn, "out of memory");
			goto out;
		}
		len += (size_t)sprintf(text + len, "<|im_start|> assistant\n");
	}
	count = ttsim_vocab_tokenize(text, len, NULL, 0);
	if (!count) {
		snprintf(err, errn, "%s: the prompt is empty", *param);
		goto out;
	}
	if (count > 1u << 22) {
		snprintf(err, errn, "%s: prompt too long", *param);
		goto out;
	}
	*toks = malloc(count * sizeof(int));
	if (!*toks) {
		snprintf(err, errn, "out of memory");
		goto out;
	}
	ttsim_vocab_tokenize(text, len, *toks, count);
	*n = (int)count;
	ok = true;
out:
	free(text);
	return ok;
}
