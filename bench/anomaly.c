/*
 * anomaly.c - token anomalies of one output (anomaly.h).
 */
#include "bench/anomaly.h"

#include <string.h>

/* The special token <|...|> starting at s[0..n), its length, or 0. */
static size_t anomaly_special(const char *s, size_t n)
{
	size_t i;

	if (n < 4 || s[0] != '<' || s[1] != '|')
		return 0;
	for (i = 2; i + 1 < n && i < 64; i++) {
		if (s[i] == '|' && s[i + 1] == '>')
			return i + 2;
		if (s[i] == '<' || s[i] == ' ' || s[i] == '\n')
			return 0;
	}
	return 0;
}

void anomaly_of(const struct load_result *r, long vocab, struct anomaly *a)
{
	size_t i, c, k, prev_len = 0;
	const char *prev = NULL;

	memset(a, 0, sizeof(*a));
	a->first_past_vocab = -1;
	a->ids_seen = r->n_ids > 0;
	for (i = 0; vocab > 0 && i < r->n_ids; i++)
		if (r->ids[i] >= vocab || r->ids[i] < 0) {
			if (!a->ids_past_vocab)
				a->first_past_vocab = (long)i;
			a->ids_past_vocab++;
		}
	/* chunks with ids but no text */
	for (c = 0; r->ids_off && r->tok_off && c < r->n_chunks && c < LOAD_MAX_TOKENS; c++)
		if (r->ids_off[c + 1] > r->ids_off[c] && r->tok_off[c + 1] == r->tok_off[c])
			a->empty_tokens += r->ids_off[c + 1] - r->ids_off[c];
	for (i = 0; r->text && i < r->text_len; i++) {
		k = anomaly_special(r->text + i, r->text_len - i);
		if (!k) {
			if (r->text[i] != ' ' && r->text[i] != '\n')
				prev = NULL;
			continue;
		}
		if (prev && prev_len == k && !memcmp(prev, r->text + i, k))
			a->special_repeated++;
		prev = r->text + i;
		prev_len = k;
		i += k - 1;
	}
	a->empty_content = !r->fail && !r->aborted && r->text_len == 0;
}

bool anomaly_any(const struct anomaly *a)
{
	return a->ids_past_vocab || a->empty_tokens || a->special_repeated || a->empty_content;
}
