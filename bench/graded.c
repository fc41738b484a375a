/*
 * graded.c - the bundled graded tasks (graded.h).
 */
#include "bench/graded.h"
#include "base/rng.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/canary.h"
#include "base/hash.h"

/* One entry: its text as prompt or user message, and its one expect string. */
static enum status graded_entry(struct suite_entry *e, size_t i, const char *text, const char *expect,
				bool chat, long max_tokens)
{
	char id[32];

	snprintf(id, sizeof(id), "graded-%zu", i);
	e->id = strdup(id);
	e->max_tokens = max_tokens;
	e->input_tokens = -1;
	e->expect = calloc(1, sizeof(char *));
	if (e->expect && (e->expect[0] = strdup(expect)))
		e->n_expect = 1;
	if (chat) {
		cJSON *arr = cJSON_CreateArray(), *m = cJSON_CreateObject();

		if (arr && m && cJSON_AddStringToObject(m, "role", "user") &&
		    cJSON_AddStringToObject(m, "content", text)) {
			cJSON_AddItemToArray(arr, m);
			m = NULL;
			e->messages = cJSON_PrintUnformatted(arr);
		}
		cJSON_Delete(arr);
		cJSON_Delete(m);
	} else {
		e->prompt = strdup(text);
	}
	return e->id && e->n_expect && (e->prompt || e->messages) ? STATUS_OK : STATUS_NOMEM;
}

enum status graded_suite(uint64_t seed, bool chat, long max_tokens, struct suite **out, struct status_info *si)
{
	struct canary_set *cs = NULL;
	struct suite *s = NULL;
	uint64_t rng = rng_mix(seed ^ 0x677261646564ull), h = HASH_FNV1A_INIT;
	char text[256], expect[256];
	const char *m;
	size_t i;
	enum status st;

	*out = NULL;
	st = canary_set_new(seed ^ 0x9e3779b97f4a7c15ull, GRADED_TASKS / 2, 0, &cs, si);
	if (st)
		return st;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->e = calloc(GRADED_TASKS, sizeof(*s->e)))) {
		st = status_set(si, STATUS_NOMEM, "graded tasks: out of memory");
		goto out;
	}
	for (i = 0; i < GRADED_TASKS; i++) {
		if (i % 2 == 0) {
			m = canary_text(cs, CANARY_SENT, i / 2);
			if (chat)
				snprintf(text, sizeof(text), "Code: %s\nRepeat the code four times, separated by "
					 "spaces, and write nothing else.", m);
			else
				snprintf(text, sizeof(text), "Code: %s\nCopy: %s\nCopy:", m, m);
			snprintf(expect, sizeof(expect), "%s %s %s %s", m, m, m, m);
		} else {
			unsigned a = 10 + (unsigned)(rng_next(&rng) % 90), b = 10 + (unsigned)(rng_next(&rng) % 90);

			snprintf(text, sizeof(text), "Compute %u + %u. Answer with the number only.", a, b);
			snprintf(expect, sizeof(expect), "%u", a + b);
		}
		h = hash_fnv1a(h, text, strlen(text) + 1);
		s->n++;
		if (graded_entry(&s->e[i], i, text, expect, chat, max_tokens)) {
			st = status_set(si, STATUS_NOMEM, "graded tasks: out of memory");
			goto out;
		}
	}
	snprintf(s->hash, sizeof(s->hash), "fnv1a64:%016llx", (unsigned long long)h);
	snprintf(s->source, sizeof(s->source), "graded (bundled, %s)", chat ? "chat" : "completions");
	snprintf(s->sizing, sizeof(s->sizing), "file");
	*out = s;
	s = NULL;
out:
	suite_free(s);
	canary_set_free(cs);
	return st;
}
