/*
 * sizer.c - prompts sized by the server's own tokenizer (sizer.h): vLLM's
 * /tokenize (`prompt`), llama-server's (`content`, tried once when the
 * first shape answers no tokens), else a one-token completion whose
 * usage.prompt_tokens is the count.
 */
#include "bench/sizer.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/http.h"

#define SIZER_HTTP_TIMEOUT 30.0

struct sizer {
	const char *base;
	const char *model;
	int shape;           /* how /tokenize answered: 0 not yet, 1 vLLM's `prompt`,
			      * 2 llama-server's `content` */
	bool empty;          /* it answered no tokens for non-empty text */
	char id_prefix[100];
	unsigned sent;       /* completions sent: the n of their X-Request-Id */
};

static cJSON *sizer_prompt_json(const struct sizer *z, const char *text, bool chat)
{
	cJSON *o = cJSON_CreateObject(), *arr, *m;

	if (!o)
		return NULL;
	if (z->model)
		cJSON_AddStringToObject(o, "model", z->model);
	if (chat) {
		arr = cJSON_AddArrayToObject(o, "messages");
		m = cJSON_CreateObject();
		if (!arr || !m) {
			cJSON_Delete(m);
			cJSON_Delete(o);
			return NULL;
		}
		cJSON_AddStringToObject(m, "role", "user");
		cJSON_AddStringToObject(m, "content", text);
		cJSON_AddItemToArray(arr, m);
	} else {
		cJSON_AddStringToObject(o, "prompt", text);
	}
	return o;
}

static enum status sizer_post(struct sizer *z, const char *path, cJSON *body, cJSON **reply,
			       long *status, struct status_info *si)
{
	const char *base = z->base;
	char url[HTTP_MAX_URL], xid[128], *js = NULL;
	struct http_response res;
	enum status st;

	*reply = NULL;
	memset(&res, 0, sizeof(res));
	st = http_join(base, path, url, sizeof(url));
	if (st)
		return status_set(si, st, "%s: url too long", base);
	js = cJSON_PrintUnformatted(body);
	if (!js)
		return status_set(si, STATUS_NOMEM, "out of memory");
	snprintf(xid, sizeof(xid), "%s-size-%u", z->id_prefix, ++z->sent);
	st = http_post_json(url, js, xid, SIZER_HTTP_TIMEOUT, 0, &res, si);
	free(js);
	if (st)
		goto out;
	*status = res.status;
	if (res.status == 200) {
		*reply = cJSON_ParseWithLength(res.body, res.n_body);
		if (!*reply)
			st = status_set(si, STATUS_PARSE, "%s: answer is not json", url);
	}
out:
	http_response_release(&res);
	return st;
}

static enum status sizer_count(void *ctx, const char *text, bool chat, long *n, struct status_info *si)
{
	struct sizer *z = ctx;
	cJSON *b = sizer_prompt_json(z, text, chat), *r = NULL, *v;
	long status = 0;
	enum status st;

	if (!b)
		return STATUS_NOMEM;
	if (z->shape == 2) {
		/* llama-server's shape: {"content": text}, no chat template */
		cJSON_DeleteItemFromObjectCaseSensitive(b, "prompt");
		cJSON_DeleteItemFromObjectCaseSensitive(b, "model");
		cJSON_AddStringToObject(b, "content", text);
	}
	st = sizer_post(z, "/tokenize", b, &r, &status, si);
	cJSON_Delete(b);
	if (st)
		return st;
	if (status == 404 || status == 405)
		return status_set(si, STATUS_NOTFOUND, "%s/tokenize: http %ld", z->base, status);
	if (status != 200) {
		cJSON_Delete(r);
		return status_set(si, STATUS_HTTP, "%s/tokenize: http %ld", z->base, status);
	}
	v = cJSON_GetObjectItemCaseSensitive(r, "count");
	if (cJSON_IsNumber(v)) {
		*n = (long)v->valuedouble;
	} else if (cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(r, "tokens"))) {
		*n = cJSON_GetArraySize(v);
	} else {
		cJSON_Delete(r);
		return status_set(si, STATUS_PARSE, "%s/tokenize: answer has no count", z->base);
	}
	cJSON_Delete(r);
	/* no tokens for text that has some is no tokenizer's answer (llama-server
	 * sent `prompt` answers {"tokens": []}): try its own shape once, for
	 * plain text only (it applies no chat template), else there is none */
	if (*n == 0 && *text) {
		if (z->shape == 0 && !chat) {
			z->shape = 2;
			return sizer_count(ctx, text, chat, n, si);
		}
		z->empty = true;
		return status_set(si, STATUS_NOTFOUND, "%s/tokenize: no tokens for non-empty text", z->base);
	}
	if (!z->shape)
		z->shape = 1;
	return STATUS_OK;
}

static enum status sizer_probe(void *ctx, const char *text, bool chat, long *n, struct status_info *si)
{
	struct sizer *z = ctx;
	cJSON *b = sizer_prompt_json(z, text, chat), *r = NULL, *u, *v;
	long status = 0;
	enum status st;
	const char *path = chat ? "/v1/chat/completions" : "/v1/completions";

	if (!b || !cJSON_AddNumberToObject(b, "max_tokens", 1) ||
	    !cJSON_AddNumberToObject(b, "temperature", 0)) {
		cJSON_Delete(b);
		return STATUS_NOMEM;
	}
	st = sizer_post(z, path, b, &r, &status, si);
	cJSON_Delete(b);
	if (st)
		return st;
	if (status != 200) {
		cJSON_Delete(r);
		return status_set(si, STATUS_HTTP, "%s%s: sizing probe got http %ld", z->base, path, status);
	}
	u = cJSON_GetObjectItemCaseSensitive(r, "usage");
	v = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens");
	if (!cJSON_IsNumber(v)) {
		cJSON_Delete(r);
		return status_set(si, STATUS_PARSE, "%s%s: sizing probe answer has no usage.prompt_tokens",
				  z->base, path);
	}
	*n = (long)v->valuedouble;
	cJSON_Delete(r);
	return STATUS_OK;
}

enum status sizer_new(struct sizer **out, const char *base, const char *model,
		      const char *id_prefix, struct status_info *si)
{
	struct sizer *z = calloc(1, sizeof(*z));

	*out = z;
	if (!z)
		return status_set(si, STATUS_NOMEM, "out of memory");
	z->base = base;
	z->model = model;
	snprintf(z->id_prefix, sizeof(z->id_prefix), "%s", id_prefix ? id_prefix : "ttaudit");
	return STATUS_OK;
}

void sizer_free(struct sizer *z)
{
	free(z);
}

void sizer_bind(struct sizer *z, struct suite_sizer *sz)
{
	sz->count = sizer_count;
	sz->probe = sizer_probe;
	sz->ctx = z;
}

void sizer_refine(const struct sizer *z, char *sizing, size_t n)
{
	if (!strcmp(sizing, "tokenize") && z->shape == 2)
		snprintf(sizing, n, "tokenize:content");
	else if (!strcmp(sizing, "probe") && z->empty)
		snprintf(sizing, n, "probe:tokenize-empty");
}

enum status sizer_ids(struct sizer *z, const char *text, int64_t *ids, size_t cap, size_t *n,
		      struct status_info *si)
{
	cJSON *b = cJSON_CreateObject(), *r = NULL, *v, *e;
	long status = 0;
	enum status st;
	int shape;

	*n = 0;
	if (!b)
		return status_set(si, STATUS_NOMEM, "out of memory");
	/* vLLM's shape first, llama-server's when it answers no tokens; the
	 * text alone, no special tokens (a BOS would be every marker's) */
	for (shape = z->shape == 2 ? 2 : 1; shape <= 2; shape++) {
		cJSON_Delete(b);
		b = cJSON_CreateObject();
		if (!b)
			return status_set(si, STATUS_NOMEM, "out of memory");
		if (shape == 1) {
			if (z->model)
				cJSON_AddStringToObject(b, "model", z->model);
			cJSON_AddStringToObject(b, "prompt", text);
			cJSON_AddFalseToObject(b, "add_special_tokens");
		} else {
			cJSON_AddStringToObject(b, "content", text);
			cJSON_AddFalseToObject(b, "add_special");
		}
		st = sizer_post(z, "/tokenize", b, &r, &status, si);
		if (st)
			break;
		if (status != 200) {
			st = status_set(si, status == 404 || status == 405 ? STATUS_NOTFOUND : STATUS_HTTP,
					"%s/tokenize: http %ld", z->base, status);
			break;
		}
		v = cJSON_GetObjectItemCaseSensitive(r, "tokens");
		if (!cJSON_IsArray(v)) {
			st = status_set(si, STATUS_PARSE, "%s/tokenize: answer has no tokens", z->base);
			break;
		}
		cJSON_ArrayForEach(e, v)
			if (*n < cap)
				ids[(*n)++] = cJSON_IsNumber(e) ? (int64_t)e->valuedouble : -1;
		cJSON_Delete(r);
		r = NULL;
		if (*n || !*text)
			break;
	}
	if (!st && !*n && *text)
		st = status_set(si, STATUS_NOTFOUND, "%s/tokenize: no tokens for non-empty text", z->base);
	cJSON_Delete(r);
	cJSON_Delete(b);
	return st;
}
