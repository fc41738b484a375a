/*
 * churn.c - the churn workload's plan and its transitions (churn.h).
 */
#include "bench/churn.h"
#include "base/rng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const churn_prefix_names[] = { "none", "prefix", "pressure", "again" };

const char *churn_prefix_name(enum churn_prefix p)
{
	return (unsigned)p <= CHURN_PREFIX_AGAIN ? churn_prefix_names[p] : "unknown";
}

static const char *const churn_t_names[CHURN_T__COUNT] = {
	"arrival-during-decode", "early-finish", "client-abort", "sync-path", "prefix-first",
	"cache-pressure", "prefix-again", "over-max-num-seqs",
};

const char *churn_transition_name(unsigned k)
{
	return k < CHURN_T__COUNT ? churn_t_names[k] : "unknown";
}

/* Plain lower-case words: no run of them is a canary group. */
static const char *const churn_words[32] = {
	"amber", "basin", "cedar", "delta", "ember", "fable", "glade", "harbor", "inlet", "juniper",
	"kettle", "lumen", "meadow", "nectar", "orchid", "pebble", "quiver", "ripple", "saddle",
	"timber", "umber", "velvet", "willow", "yonder", "zephyr", "acorn", "bramble", "copper",
	"dune", "fern", "gully", "heron",
};

/* n words from rng, space-separated, ending ".\n"; malloc'd. */
static char *churn_text(uint64_t *rng, size_t n)
{
	size_t cap = n * 9 + 4, len = 0, i;
	char *t = malloc(cap);

	if (!t)
		return NULL;
	for (i = 0; i < n; i++)
		len += (size_t)snprintf(t + len, cap - len, "%s%s", i ? " " : "",
					churn_words[rng_next(rng) % 32]);
	snprintf(t + len, cap - len, ".\n");
	return t;
}

enum status churn_plan_make(struct churn_plan *p, uint64_t seed, size_t n, long max_tokens,
			    unsigned max_num_seqs, size_t pressure_words, bool prefaces,
			    struct status_info *si)
{
	uint64_t rng = rng_mix(seed ^ 0x636875726eull), prng;
	size_t i, eighth = n / 8 ? n / 8 : 1;

	memset(p, 0, sizeof(*p));
	if (max_tokens < 2)
		max_tokens = 2;
	p->n = n;
	p->max_tokens = max_tokens;
	p->max_num_seqs = max_num_seqs;
	p->pressure_words = prefaces ? pressure_words : 0;
	p->r = calloc(n ? n : 1, sizeof(*p->r));
	p->pressure = calloc(n ? n : 1, sizeof(char *));
	prng = rng_mix(seed ^ 0x707265666978ull);
	p->shared = churn_text(&prng, CHURN_PREFIX_WORDS);
	if (!p->r || !p->pressure || !p->shared)
		goto nomem;
	for (i = 0; i < n; i++) {
		struct churn_req *q = &p->r[i];

		q->shape = (unsigned)(rng_next(&rng) % 6);
		/* one in CHURN_ABORT_EVERY is cancelled, at its whole length */
		if (rng_next(&rng) % CHURN_ABORT_EVERY == 0) {
			q->shape = 0;
			q->abort_u = rng_unit(&rng);
		}
		churn_resolve(p, i, max_tokens);
		q->sync = rng_next(&rng) % CHURN_SYNC_EVERY == 0;
		if (!prefaces)
			q->prefix = CHURN_PREFIX_NONE;
		else if (n >= 8 && i < eighth)
			q->prefix = CHURN_PREFIX_FIRST;
		else if (n >= 8 && i >= n - eighth)
			q->prefix = CHURN_PREFIX_AGAIN;
		else if (n >= 8 && pressure_words && i >= n / 4 && i < n - n / 4)
			q->prefix = CHURN_PREFIX_PRESSURE;
		if (q->prefix == CHURN_PREFIX_PRESSURE && !(p->pressure[i] = churn_text(&prng, pressure_words)))
			goto nomem;
	}
	return STATUS_OK;
nomem:
	churn_plan_release(p);
	return status_set(si, STATUS_NOMEM, "churn: out of memory");
}

void churn_resolve(struct churn_plan *p, size_t i, long m)
{
	struct churn_req *q;
	long mix[6];

	if (i >= p->n)
		return;
	q = &p->r[i];
	if (m < 1)
		m = 1;
	mix[0] = m;
	mix[1] = m / 2 > 0 ? m / 2 : 1;
	mix[2] = m / 4 > 0 ? m / 4 : 1;
	mix[3] = m / 8 > 0 ? m / 8 : 1;
	mix[4] = 1;
	mix[5] = m < 2 ? m : 2;
	q->entry_max = m;
	q->max_tokens = mix[q->shape % 6];
	/* an abort needs a token before it and one after */
	q->abort_at = q->abort_u > 0 && m >= 2 ? 1 + (long)(q->abort_u * (double)(m - 1)) : 0;
	if (q->abort_at >= m)
		q->abort_at = m - 1;
}

void churn_plan_release(struct churn_plan *p)
{
	size_t i;

	for (i = 0; p->pressure && i < p->n; i++)
		free(p->pressure[i]);
	free(p->pressure);
	free(p->shared);
	free(p->r);
	memset(p, 0, sizeof(*p));
}

const char *churn_preface(const struct churn_plan *p, size_t i)
{
	if (i >= p->n)
		return NULL;
	switch (p->r[i].prefix) {
	case CHURN_PREFIX_FIRST:
	case CHURN_PREFIX_AGAIN:
		return p->shared;
	case CHURN_PREFIX_PRESSURE:
		return p->pressure[i];
	default:
		return NULL;
	}
}

const char *churn_extra(const struct churn_plan *p, size_t i, bool chat)
{
	if (i >= p->n || !p->r[i].sync)
		return NULL;
	return chat ? "{\"logprobs\":true,\"top_logprobs\":1}" : "{\"logprobs\":1}";
}

size_t churn_levels(unsigned max_num_seqs, unsigned cap, double *levels)
{
	unsigned want[CHURN_MAX_LEVELS], v;
	size_t n = 0, k;

	want[0] = max_num_seqs / 2 ? max_num_seqs / 2 : 1;
	want[1] = max_num_seqs;
	want[2] = 4 * max_num_seqs;
	want[3] = 32 * max_num_seqs;
	for (k = 0; k < CHURN_MAX_LEVELS; k++) {
		v = want[k] > cap ? cap : want[k];
		if (!v || (n && levels[n - 1] >= v))
			continue;
		levels[n++] = v;
	}
	return n;
}

unsigned churn_transitions(const struct churn_plan *p, size_t i, const struct load_result *r)
{
	const struct churn_req *q;
	unsigned t = 0;

	if (i >= p->n)
		return 0;
	q = &p->r[i];
	if (r->inflight_at_launch > 0)
		t |= CHURN_T_ARRIVAL;
	if (p->max_num_seqs && r->inflight_at_launch >= p->max_num_seqs)
		t |= CHURN_T_OVER;
	if (r->aborted)
		t |= CHURN_T_ABORT;
	else if (!r->fail && q->max_tokens < q->entry_max)
		t |= CHURN_T_EARLY;
	if (q->sync)
		t |= CHURN_T_SYNC;
	if (q->prefix == CHURN_PREFIX_FIRST)
		t |= CHURN_T_PREFIX;
	else if (q->prefix == CHURN_PREFIX_PRESSURE)
		t |= CHURN_T_PRESSURE;
	else if (q->prefix == CHURN_PREFIX_AGAIN)
		t |= CHURN_T_AGAIN;
	return t;
}
