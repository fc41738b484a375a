#include "bench/suite.h"
#include "base/rng.h"
#include "base/alloc.h"
#include "base/hash.h"
#include "base/lineread.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void suite_nonce(uint64_t key, char *buf)
{
	uint64_t s = key, h = rng_next(&s);

	snprintf(buf, SUITE_NONCE_LEN + 1, "run %08" PRIx32 " %08" PRIx32, (uint32_t)(h >> 32),
		 (uint32_t)h);
}

static void suite_entry_release(struct suite_entry *e)
{
	size_t i;

	free(e->id);
	free(e->prompt);
	free(e->messages);
	for (i = 0; i < e->n_expect; i++)
		free(e->expect[i]);
	free(e->expect);
}

void suite_free(struct suite *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		suite_entry_release(&s->e[i]);
	free(s->e);
	free(s);
}

static enum status suite_push(struct suite *s, size_t *cap, struct suite_entry **e)
{
	if (s->n >= SUITE_MAX_ENTRIES)
		return STATUS_LIMIT;
	if (ALLOC_GROW_MAX(s->e, s->n + 1, *cap, SUITE_MAX_ENTRIES) < 0)
		return STATUS_NOMEM;
	*e = &s->e[s->n++];
	memset(*e, 0, sizeof(**e));
	(*e)->input_tokens = -1;
	return STATUS_OK;
}

/* Validates one suite line's object into e. Message in si (no file/line). */
static enum status suite_entry_from(const cJSON *o, struct suite_entry *e, struct status_info *si)
{
	const cJSON *v, *m;
	char buf[32];
	size_t k;

	if (!cJSON_IsObject(o))
		return status_set(si, STATUS_PARSE, "not a json object");
	cJSON_ArrayForEach(v, o) {
		if (strcmp(v->string, "id") && strcmp(v->string, "prompt") &&
		    strcmp(v->string, "messages") && strcmp(v->string, "max_tokens") &&
		    strcmp(v->string, "expect"))
			return status_set(si, STATUS_PARSE, "unknown key \"%.64s\" (want id, prompt or "
					  "messages, max_tokens, expect)", v->string);
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "id");
	if (cJSON_IsString(v) && v->valuestring[0]) {
		e->id = strdup(v->valuestring);
	} else if (cJSON_IsNumber(v) && v->valuedouble == (double)(long long)v->valuedouble) {
		snprintf(buf, sizeof(buf), "%lld", (long long)v->valuedouble);
		e->id = strdup(buf);
	} else {
		return status_set(si, STATUS_PARSE, v ? "id is not a non-empty string or an integer"
						 : "id missing");
	}
	if (!e->id)
		return STATUS_NOMEM;
	v = cJSON_GetObjectItemCaseSensitive(o, "prompt");
	m = cJSON_GetObjectItemCaseSensitive(o, "messages");
	if (v && m)
		return status_set(si, STATUS_PARSE, "both prompt and messages (want one)");
	if (!v && !m)
		return status_set(si, STATUS_PARSE, "prompt or messages missing");
	if (v) {
		if (!cJSON_IsString(v))
			return status_set(si, STATUS_PARSE, "prompt is not a string");
		if (!(e->prompt = strdup(v->valuestring)))
			return STATUS_NOMEM;
	} else {
		const cJSON *msg, *role, *content;

		if (!cJSON_IsArray(m) || !cJSON_GetArraySize(m))
			return status_set(si, STATUS_PARSE, "messages is not a non-empty array");
		k = 0;
		cJSON_ArrayForEach(msg, m) {
			role = cJSON_GetObjectItemCaseSensitive(msg, "role");
			content = cJSON_GetObjectItemCaseSensitive(msg, "content");
			if (!cJSON_IsString(role) || !cJSON_IsString(content))
				return status_set(si, STATUS_PARSE, "messages[%zu] lacks string role and content", k);
			k++;
		}
		if (!(e->messages = cJSON_PrintUnformatted(m)))
			return STATUS_NOMEM;
	}
	v = cJSON_GetObjectItemCaseSensitive(o, "max_tokens");
	if (!v)
		return status_set(si, STATUS_PARSE, "max_tokens missing");
	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(long)v->valuedouble ||
	    v->valuedouble < 1 || v->valuedouble > SUITE_MAX_OUTPUT)
		return status_set(si, STATUS_PARSE, "max_tokens is not an integer from 1 to %ld",
				  SUITE_MAX_OUTPUT);
	e->max_tokens = (long)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(o, "expect");
	if (v) {
		const cJSON *x;
		size_t n = cJSON_IsString(v) ? 1 : cJSON_IsArray(v) ? (size_t)cJSON_GetArraySize(v) : 0;

		if (!n || n > SUITE_MAX_EXPECT)
			return status_set(si, STATUS_PARSE, "expect is not a string or 1 to %u strings",
					  SUITE_MAX_EXPECT);
		e->expect = calloc(n, sizeof(char *));
		if (!e->expect)
			return STATUS_NOMEM;
		if (cJSON_IsString(v)) {
			if (!(e->expect[e->n_expect++] = strdup(v->valuestring)))
				return STATUS_NOMEM;
		} else {
			cJSON_ArrayForEach(x, v) {
				if (!cJSON_IsString(x) || !x->valuestring[0])
					return status_set(si, STATUS_PARSE, "expect[%zu] is not a non-empty string",
							  e->n_expect);
				if (!(e->expect[e->n_expect++] = strdup(x->valuestring)))
					return STATUS_NOMEM;
			}
		}
		if (!e->expect[0][0])
			return status_set(si, STATUS_PARSE, "expect is an empty string");
	}
	return STATUS_OK;
}

enum status suite_load(struct suite **out, const char *path, struct status_info *si)
{
	FILE *f = NULL;
	struct suite *s = NULL;
	struct lineread lr;
	char *line;
	size_t cap = 0, i;
	ssize_t len;
	long lineno = 0;
	uint64_t h = HASH_FNV1A_INIT;
	enum status st = STATUS_OK;
	cJSON *o = NULL;
	struct suite_entry *e;
	struct status_info esi;

	*out = NULL;
	f = fopen(path, "r");
	if (!f)
		return status_set_at(si, STATUS_IO, path, 0, 0, "cannot open: %s", strerror(errno));
	lineread_init(&lr, f, SUITE_MAX_LINE);
	s = calloc(1, sizeof(*s));
	if (!s) {
		st = STATUS_NOMEM;
		goto out;
	}
	snprintf(s->source, sizeof(s->source), "%s", path);
	snprintf(s->sizing, sizeof(s->sizing), "file");
	while ((len = lineread_next(&lr)) != LINEREAD_EOF) {
		lineno++;
		if (len == LINEREAD_NOMEM) {
			st = status_set(si, STATUS_NOMEM, "%s: out of memory", path);
			goto out;
		}
		if (len == LINEREAD_LONG) {
			st = status_set_at(si, STATUS_LIMIT, path, lineno, 0, "line longer than %u bytes",
					   SUITE_MAX_LINE);
			goto out;
		}
		line = lr.buf;
		h = hash_fnv1a(h, line, (size_t)len);
		while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (strspn(line, " \t") == (size_t)len)
			continue;
		o = cJSON_ParseWithLength(line, (size_t)len);
		if (!o) {
			const char *at = cJSON_GetErrorPtr();
			long byte = at && at >= line && at <= line + len ? (long)(at - line) + 1 : 0;

			st = status_set_at(si, STATUS_PARSE, path, lineno, byte, "not valid json");
			goto out;
		}
		st = suite_push(s, &cap, &e);
		if (st) {
			st = st == STATUS_LIMIT ? status_set_at(si, st, path, lineno, 0, "more than %u entries",
								SUITE_MAX_ENTRIES) : st;
			goto out;
		}
		e->line = lineno;
		status_info_clear(&esi);
		st = suite_entry_from(o, e, &esi);
		if (st) {
			status_set_at(si, st, path, lineno, 0, "%s",
				      esi.msg[0] ? esi.msg : status_strerror(st));
			goto out;
		}
		for (i = 0; i + 1 < s->n; i++)
			if (!strcmp(s->e[i].id, e->id)) {
				st = status_set_at(si, STATUS_PARSE, path, lineno, 0,
						   "id \"%.64s\" repeats line %ld", e->id, s->e[i].line);
				goto out;
			}
		cJSON_Delete(o);
		o = NULL;
	}
	if (ferror(f)) {
		st = status_set_at(si, STATUS_IO, path, lineno, 0, "read error: %s", strerror(errno));
		goto out;
	}
	if (!s->n) {
		st = status_set_at(si, STATUS_PARSE, path, 0, 0, "no prompts in the suite");
		goto out;
	}
	snprintf(s->hash, sizeof(s->hash), "fnv1a64:%016" PRIx64, h);
out:
	cJSON_Delete(o);
	lineread_release(&lr);
	if (f)
		fclose(f);
	if (st) {
		if (st == STATUS_NOMEM)
			status_set_at(si, st, path, lineno, 0, "out of memory");
		suite_free(s);
		return st;
	}
	*out = s;
	return STATUS_OK;
}

/* --- generated prompts ---------------------------------------------------- */

static const char *const suite_words[] = {
	"the", "river", "stone", "light", "winter", "market", "quiet", "garden", "number",
	"table", "morning", "paper", "signal", "window", "engine", "harbor", "silver", "field",
	"letter", "bridge", "forest", "circle", "summer", "mountain", "pocket", "voice", "island",
	"copper", "shadow", "thread", "valley", "candle", "orange", "planet", "ladder", "mirror",
	"meadow", "needle", "rocket", "velvet", "anchor", "basket", "cotton", "desert", "feather",
	"glacier", "hammer", "jungle", "kettle", "lantern", "marble", "nectar", "oyster", "pepper",
	"quarry", "ribbon", "saddle", "tunnel", "umbrella", "violet", "walnut", "yellow", "zephyr",
	"and",
};
#define SUITE_N_WORDS (sizeof(suite_words) / sizeof(suite_words[0]))

/* Text of n words drawn from stream `key`, into a malloc'd string. */
static char *suite_words_text(uint64_t key, long n)
{
	uint64_t s = key;
	size_t cap = (size_t)n * 10 + 1, len = 0;
	char *t;
	long i;
	const char *w;

	t = malloc(cap);
	if (!t)
		return NULL;
	for (i = 0; i < n; i++) {
		w = suite_words[rng_next(&s) % SUITE_N_WORDS];
		if (ALLOC_GROW(t, len + strlen(w) + 2, cap) < 0) {
			free(t);
			return NULL;
		}
		if (i)
			t[len++] = ' ';
		memcpy(t + len, w, strlen(w));
		len += strlen(w);
	}
	t[len] = '\0';
	return t;
}

/* The text sized: nonce placeholder, a space, the words. */
static char *suite_sized_text(const char *words)
{
	char nonce[SUITE_NONCE_LEN + 1];
	char *t;
	size_t n = strlen(words);

	suite_nonce(0, nonce);
	t = malloc(SUITE_NONCE_LEN + 2 + n);
	if (!t)
		return NULL;
	memcpy(t, nonce, SUITE_NONCE_LEN);
	t[SUITE_NONCE_LEN] = ' ';
	memcpy(t + SUITE_NONCE_LEN + 1, words, n + 1);
	return t;
}

/* Counts the tokens of (nonce + n words of stream key) with the sizer. */
static enum status suite_measure(const struct suite_sizer *sz, bool use_probe, uint64_t key, long n,
				 bool chat, long *tokens, struct status_info *si)
{
	char *w = suite_words_text(key, n), *t = w ? suite_sized_text(w) : NULL;
	enum status st;

	free(w);
	if (!t)
		return STATUS_NOMEM;
	st = use_probe ? sz->probe(sz->ctx, t, chat, tokens, si) : sz->count(sz->ctx, t, chat, tokens, si);
	free(t);
	return st;
}

/* Words for stream key whose count is closest to target (not above when possible). */
static enum status suite_size_one(const struct suite_sizer *sz, uint64_t key, long target, bool chat,
				  long *words, long *tokens, struct status_info *si)
{
	long w = *words, n, best_w = -1, best_n = -1, step;
	int iter;
	enum status st;

	for (iter = 0; iter < 12; iter++) {
		if (w < 0)
			w = 0;
		st = suite_measure(sz, false, key, w, chat, &n, si);
		if (st)
			return st;
		if (best_n < 0 || (n <= target && (best_n > target || n > best_n)) ||
		    (n > target && best_n > target && n < best_n)) {
			best_w = w;
			best_n = n;
		}
		if (n == target)
			break;
		/* proportional step, at least one word */
		step = w > 0 && n > 0 ? (long)((double)(target - n) * (double)w / (double)n) : target - n;
		if (!step)
			step = target > n ? 1 : -1;
		w += step;
	}
	*words = best_w;
	*tokens = best_n;
	return STATUS_OK;
}

enum status suite_generate(struct suite **out, const struct suite_gen_opts *o,
			   const struct suite_sizer *sz, struct status_info *si)
{
	struct suite *s = NULL;
	struct suite_entry *e;
	enum status st = STATUS_OK;
	size_t i, cap = 0;
	long words = 0, tokens = -1, p1 = 0, p2 = 0, w1, w2, turn_words = 8;
	uint64_t key, h = HASH_FNV1A_INIT;
	char *w = NULL, *msg = NULL, id[32];
	cJSON *arr = NULL, *m = NULL;
	bool probe = false;

	*out = NULL;
	if (!o->n_prompts || o->n_prompts > SUITE_MAX_ENTRIES)
		return status_set(si, STATUS_USAGE, "prompts: %zu (want 1 to %u)", o->n_prompts,
				  SUITE_MAX_ENTRIES);
	if (o->input_tokens < 1 || o->input_tokens > SUITE_MAX_INPUT)
		return status_set(si, STATUS_USAGE, "input tokens: %ld (want 1 to %ld)", o->input_tokens,
				  SUITE_MAX_INPUT);
	if (o->max_tokens < 1 || o->max_tokens > SUITE_MAX_OUTPUT)
		return status_set(si, STATUS_USAGE, "max tokens: %ld (want 1 to %ld)", o->max_tokens,
				  SUITE_MAX_OUTPUT);
	s = calloc(1, sizeof(*s));
	if (!s)
		return STATUS_NOMEM;
	snprintf(s->source, sizeof(s->source), "generated");
	s->target_tokens = o->input_tokens;
	/* is there a tokenizer? size the first prompt with it, or fall back */
	words = o->input_tokens;
	st = suite_size_one(sz, o->seed, o->input_tokens, o->chat, &words, &tokens, si);
	if (st == STATUS_NOTFOUND) {
		probe = true;
		w1 = o->input_tokens / 2 > 4 ? o->input_tokens / 2 : 4;
		w2 = 2 * w1;
		st = suite_measure(sz, true, o->seed, w1, o->chat, &p1, si);
		if (!st)
			st = suite_measure(sz, true, o->seed, w2, o->chat, &p2, si);
		if (st)
			goto out;
		if (p2 <= p1) {
			st = status_set(si, STATUS_PARSE, "sizing probes: %ld words gave %ld prompt tokens, "
					"%ld words %ld: cannot fit", w1, p1, w2, p2);
			goto out;
		}
		s->probe_a = (double)(p2 - p1) / (double)(w2 - w1);
		s->probe_b = (double)p1 - s->probe_a * (double)w1;
		words = (long)(((double)o->input_tokens - s->probe_b) / s->probe_a + 0.5);
		if (words < 0)
			words = 0;
		tokens = -1;
	} else if (st) {
		goto out;
	}
	snprintf(s->sizing, sizeof(s->sizing), "%s", probe ? "probe" : "tokenize");
	for (i = 0; i < o->n_prompts; i++) {
		long nw = words, nt = tokens;

		key = o->warm ? o->seed : o->seed + 0x1000 * (uint64_t)i;
		if (o->warm)
			nw = words + (long)i * turn_words;   /* the session, then i more turns */
		else if (i && !probe) {
			st = suite_size_one(sz, key, o->input_tokens, o->chat, &nw, &nt, si);
			if (st)
				goto out;
		}
		if (o->warm && i && !probe) {
			st = suite_measure(sz, false, key, nw, o->chat, &nt, si);
			if (st)
				goto out;
		}
		if (probe)
			nt = -1;
		w = suite_words_text(key, nw);
		if (!w) {
			st = STATUS_NOMEM;
			goto out;
		}
		h = hash_fnv1a(h, w, strlen(w) + 1);
		st = suite_push(s, &cap, &e);
		if (st)
			goto out;
		snprintf(id, sizeof(id), "gen-%zu", i);
		e->id = strdup(id);
		e->max_tokens = o->max_tokens;
		e->input_tokens = nt;
		if (o->chat) {
			arr = cJSON_CreateArray();
			m = cJSON_CreateObject();
			if (!arr || !m || !cJSON_AddStringToObject(m, "role", "user") ||
			    !cJSON_AddStringToObject(m, "content", w)) {
				st = STATUS_NOMEM;
				goto out;
			}
			cJSON_AddItemToArray(arr, m);
			m = NULL;
			msg = cJSON_PrintUnformatted(arr);
			cJSON_Delete(arr);
			arr = NULL;
			e->messages = msg;
			msg = NULL;
			free(w);
		} else {
			e->prompt = w;
		}
		w = NULL;
		if (!e->id || (!e->prompt && !e->messages)) {
			st = STATUS_NOMEM;
			goto out;
		}
	}
	h = hash_fnv1a(h, o->chat ? "chat" : "completions", o->chat ? 4 : 11);
	snprintf(s->hash, sizeof(s->hash), "fnv1a64:%016" PRIx64, h);
out:
	free(w);
	cJSON_Delete(arr);
	cJSON_Delete(m);
	if (st) {
		if (st == STATUS_NOMEM)
			status_set(si, st, "generating prompts: out of memory");
		suite_free(s);
		return st;
	}
	*out = s;
	return STATUS_OK;
}

/* --- request bodies ------------------------------------------------------- */

/* "nonce text" in a malloc'd string. */
static char *suite_with_nonce(const char *nonce, const char *text)
{
	size_t a = strlen(nonce), b = strlen(text);
	char *t = malloc(a + b + 2);

	if (!t)
		return NULL;
	memcpy(t, nonce, a);
	t[a] = ' ';
	memcpy(t + a + 1, text, b + 1);
	return t;
}

/* The nonce, the preface and the text, as the options have them; malloc'd. */
static char *suite_framed(const struct suite_body_opts *o, const char *text)
{
	char *a, *b;

	if (!o->preface)
		return o->nonce ? suite_with_nonce(o->nonce, text) : strdup(text);
	a = suite_with_nonce(o->preface, text);
	if (!a || !o->nonce)
		return a;
	b = suite_with_nonce(o->nonce, a);
	free(a);
	return b;
}

char *suite_body(const struct suite *s, size_t i, const struct suite_body_opts *o,
		 const char **route, size_t *len)
{
	const struct suite_entry *e = &s->e[i];
	cJSON *b = NULL, *msgs = NULL, *so, *first, *content;

	char *out = NULL, *t = NULL;

	b = cJSON_CreateObject();
	if (!b)
		goto out;
	if (o->model && !cJSON_AddStringToObject(b, "model", o->model))
		goto out;
	if (e->prompt) {
		*route = "/v1/completions";
		t = suite_framed(o, e->prompt);
		if (!t || !cJSON_AddStringToObject(b, "prompt", t))
			goto out;
	} else {
		*route = "/v1/chat/completions";
		msgs = cJSON_Parse(e->messages);
		if (!msgs)
			goto out;
		first = cJSON_GetArrayItem(msgs, 0);
		content = cJSON_GetObjectItemCaseSensitive(first, "content");
		if ((o->nonce || o->preface) && cJSON_IsString(content)) {
			t = suite_framed(o, content->valuestring);
			if (!t || !cJSON_ReplaceItemInObjectCaseSensitive(first, "content",
									 cJSON_CreateString(t)))
				goto out;
		}
		cJSON_AddItemToObject(b, "messages", msgs);
		msgs = NULL;
	}
	if (!cJSON_AddNumberToObject(b, "max_tokens", (double)(o->max_tokens > 0 ? o->max_tokens : e->max_tokens)) ||
	    !cJSON_AddTrueToObject(b, "stream"))
		goto out;
	if (!o->no_usage) {
		/* continuous_usage_stats (vLLM): every chunk says how many tokens
		 * the stream has carried so far, so a chunk of several tokens is
		 * known for what it is; servers without it ignore the field */
		so = cJSON_AddObjectToObject(b, "stream_options");
		if (!so || !cJSON_AddTrueToObject(so, "include_usage") ||
		    !cJSON_AddTrueToObject(so, "continuous_usage_stats"))
			goto out;
	}
	if (o->temperature >= 0 && !cJSON_AddNumberToObject(b, "temperature", o->temperature))
		goto out;
	if (o->ignore_eos && !cJSON_AddTrueToObject(b, "ignore_eos"))
		goto out;
	if (o->return_token_ids && !cJSON_AddTrueToObject(b, "return_token_ids"))
		goto out;
	if (o->extra) {
		cJSON *x = cJSON_Parse(o->extra), *kv, *nx;

		if (!cJSON_IsObject(x)) {
			cJSON_Delete(x);
			goto out;
		}
		/* the caller's members win over the defaults above */
		for (kv = x->child; kv; kv = nx) {
			char key[128];

			nx = kv->next;
			snprintf(key, sizeof(key), "%s", kv->string ? kv->string : "");
			cJSON_DetachItemViaPointer(x, kv);
			/* (cJSON frees the item's old key before copying the new one:
			 * the key is copied out first) */
			if (cJSON_GetObjectItemCaseSensitive(b, key))
				cJSON_ReplaceItemInObjectCaseSensitive(b, key, kv);
			else
				cJSON_AddItemToObject(b, key, kv);
		}
		cJSON_Delete(x);
	}
	out = cJSON_PrintUnformatted(b);
	if (out)
		*len = strlen(out);
out:
	free(t);
	cJSON_Delete(msgs);
	cJSON_Delete(b);
	return out;
}
