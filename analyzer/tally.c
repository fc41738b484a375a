/*
 * tally.c - per-rule counts over merge events, evaluated 64 slots at a time:
 * each rule's allowed set, the bare takes and the evidence are bit masks, and
 * every count is a population count of their intersections.
 */
#include "analyzer/tally.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct tally {
	size_t n_rules;
	struct rule *rules;             /* [n_rules], in the same block */
	struct tally_counts *counts;    /* [n_rules] */
	struct tally_garbage garbage;
	int64_t max_pos_override;
	int64_t config_max_pos;     /* from the file's last config event, 0 none */
	uint64_t events_with_taken;
	tally_subst_fn observer;
	void *observer_ctx;
};

struct tally *tally_new(const struct rule *rules, size_t n, int64_t max_pos_override)
{
	struct tally *t;
	size_t i;

	if (n > RULE_MAX_LIST)
		return NULL;
	t = calloc(1, sizeof(*t) + n * (sizeof(struct rule) + sizeof(struct tally_counts)));
	if (!t)
		return NULL;
	t->counts = (struct tally_counts *)(void *)(t + 1);
	t->rules = (struct rule *)(void *)(t->counts + n);
	t->n_rules = n;
	memcpy(t->rules, rules, n * sizeof(*rules));
	for (i = 0; i < n; i++)
		t->counts[i].fp_first_mismatch_step = -1;
	t->max_pos_override = max_pos_override;
	return t;
}

void tally_free(struct tally *t)
{
	free(t);
}

void tally_begin_file(struct tally *t)
{
	t->config_max_pos = 0;
}

void tally_config(struct tally *t, const struct config_event *c)
{
	if (c->has_max_model_len)
		t->config_max_pos = c->max_model_len;
}

void tally_set_observer(struct tally *t, tally_subst_fn fn, void *ctx)
{
	t->observer = fn;
	t->observer_ctx = ctx;
}

int64_t tally_max_pos(const struct tally *t)
{
	return t->max_pos_override > 0 ? t->max_pos_override : t->config_max_pos;
}

uint64_t tally_events_with_taken(const struct tally *t)
{
	return t->events_with_taken;
}

int tally_float32(int64_t v, double *out)
{
	uint32_t bits;
	float f;

	if (v < INT32_MIN || v > INT32_MAX)
		return 0;
	bits = (uint32_t)(int32_t)v;
	memcpy(&f, &bits, sizeof(f));
	if (!isfinite(f))
		return 0;
	*out = (double)f;
	return 1;
}

int tally_float32_like(int64_t v)
{
	double d;

	if (!tally_float32(v, &d))
		return 0;
	d = fabs(d);
	return d >= 1.0 && d <= 16777216.0;
}

/*
 * One garbage position of value v: a value enters the table at its first
 * position or never, so the count of every value in it is whole.
 */
static void garbage_note(struct tally_garbage *g, int64_t v)
{
	size_t i;

	for (i = 0; i < g->n_values; i++)
		if (g->values[i].value == v) {
			g->values[i].n++;
			return;
		}
	if (g->n_values < TALLY_GARBAGE_VALUES) {
		g->values[g->n_values].value = v;
		g->values[g->n_values].n = 1;
		g->n_values++;
	} else {
		g->values_dropped++;
	}
}

static inline __attribute__((always_inline)) uint64_t pop(uint64_t x)
{
	return (uint64_t)__builtin_popcountll(x);
}

/* The substitutions of rule r on m, slot by slot in order, to the observer. */
static void tally_observe(struct tally *t, size_t r, const struct merge_event *m,
			  const struct rule_ctx *ctx, int64_t gpos, const struct rule_facts *f,
			  const char *file, long line)
{
	uint32_t k;

	for (k = 0; k < rule_n_windows(m->n_host); k++) {
		struct rule_window w;
		struct evidence_window e;
		uint64_t subst;
		size_t c;

		rule_window_fill(m, ctx, gpos, k, &w);
		evidence_window_fill(m, w.base, w.n, w.active, w.prefilled, w.gen_eq, &e);
		subst = w.bare & rule_window_allow(&t->rules[r], m, f, &w) & e.stale;
		while (subst) {
			uint32_t i = (uint32_t)__builtin_ctzll(subst);
			struct tally_subst ts = { r, m, w.base + i, EVIDENCE_UNKNOWN, file, line };
			for (c = 1; c < EVIDENCE__COUNT; c++)
				if (e.by[c] >> i & 1)
					ts.evidence = (enum evidence)c;
			t->observer(t->observer_ctx, &ts);
			subst &= subst - 1;
		}
	}
}

/*
 * The body of tally_merge, inlined twice below: once built for the popcnt
 * instruction (chosen at run time where the CPU has it) and once plain, since
 * a population count per rule and class is most of what a merge costs.
 */
static inline __attribute__((always_inline)) void
tally_merge_body(struct tally *t, const struct merge_event *m, const char *file, long line)
{
	struct rule_ctx ctx = { .max_pos = tally_max_pos(t) };
	int64_t gpos = ctx.max_pos > 0 ? ctx.max_pos : TALLY_DEFAULT_GARBAGE_POS;
	uint32_t h = m->n_host, n_win = rule_n_windows(h), k;
	uint8_t evaluated[RULE_MAX_LIST], fired[RULE_MAX_LIST], mismatch[RULE_MAX_LIST];
	uint64_t n_subst[RULE_MAX_LIST];
	struct rule_facts f;
	size_t r, e;

	if (m->n_dev < h) {
		for (r = 0; r < t->n_rules; r++) {
			t->counts[r].merges++;
			t->counts[r].shape_fallback++;
		}
		return;
	}
	if (m->has_taken)
		t->events_with_taken++;
	for (r = 0; r < t->n_rules; r++) {
		evaluated[r] = rule_outcome_of(&t->rules[r], m, &ctx) == RULE_EVALUATED;
		fired[r] = mismatch[r] = 0;
		n_subst[r] = 0;
	}
	if (n_win != 1)
		rule_facts_fill(m, NULL, &f);
	for (k = 0; k < n_win; k++) {
		struct rule_window w;
		struct evidence_window ev;
		uint64_t unknown, stale, fresh, garbage;

		rule_window_fill(m, &ctx, gpos, k, &w);
		if (n_win == 1)
			rule_facts_fill(m, &w, &f);
		for (garbage = w.garbage; garbage; garbage &= garbage - 1) {
			int64_t d = m->dev_pos[w.base + (uint32_t)__builtin_ctzll(garbage)];
			t->garbage.count++;
			t->garbage.float32_like += (uint64_t)tally_float32_like(d);
			garbage_note(&t->garbage, d);
		}
		evidence_window_fill(m, w.base, w.n, w.active, w.prefilled, w.gen_eq, &ev);
		unknown = ev.by[EVIDENCE_UNKNOWN];
		stale = ev.stale;
		fresh = w.active & ~stale & ~unknown;
		for (r = 0; r < t->n_rules; r++) {
			struct tally_counts *c = &t->counts[r];
			uint64_t g, take, refused, subst;

			if (!evaluated[r])
				continue;
			g = rule_window_allow(&t->rules[r], m, &f, &w);
			take = w.bare & g;
			refused = w.bare & ~g;
			subst = take & stale;
			c->bare_taken += pop(w.bare);
			c->taken += pop(take);
			for (e = 0; e < EVIDENCE__COUNT; e++)
				c->taken_by[e] += pop(take & ev.by[e]);
			c->unverified += pop(take & unknown);
			c->substitutions += pop(subst);
			for (e = 1; e < EVIDENCE__COUNT; e++)
				c->subst_by[e] += pop(subst & ev.by[e]);
			c->rejected_unverified += pop(refused & unknown);
			c->prevented += pop(refused & stale);
			c->forgone += pop(refused & fresh);
			fired[r] |= (w.active & ~g) != 0;
			mismatch[r] |= ((take ^ w.taken) & w.active) != 0;
			n_subst[r] += pop(subst);
		}
	}
	for (r = 0; r < t->n_rules; r++) {
		struct tally_counts *c = &t->counts[r];

		c->merges++;
		if (!evaluated[r]) {
			c->skipped++;
			continue;
		}
		c->fired += fired[r];
		c->merges_subst += n_subst[r] != 0;
		if (m->has_taken) {
			c->fp_evaluated++;
			if (mismatch[r]) {
				if (!c->fp_mismatch) {
					c->fp_first_mismatch_step = m->step;
					c->fp_first_mismatch_line = line;
				}
				c->fp_mismatch++;
			}
		}
		if (t->observer && n_subst[r])
			tally_observe(t, r, m, &ctx, gpos, &f, file, line);
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("popcnt"))) static void
tally_merge_popcnt(struct tally *t, const struct merge_event *m, const char *file, long line)
{
	tally_merge_body(t, m, file, line);
}
#endif

static void tally_merge_plain(struct tally *t, const struct merge_event *m, const char *file,
			      long line)
{
	tally_merge_body(t, m, file, line);
}

void tally_merge(struct tally *t, const struct merge_event *m, const char *file, long line)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (__builtin_cpu_supports("popcnt")) {
		tally_merge_popcnt(t, m, file, line);
		return;
	}
#endif
	tally_merge_plain(t, m, file, line);
}

static void add_counts(struct tally_counts *d, const struct tally_counts *s, bool interleaved)
{
	size_t e;

	d->merges += s->merges;
	d->taken += s->taken;
	d->substitutions += s->substitutions;
	d->merges_subst += s->merges_subst;
	d->unverified += s->unverified;
	d->prevented += s->prevented;
	d->forgone += s->forgone;
	d->rejected_unverified += s->rejected_unverified;
	d->fired += s->fired;
	d->skipped += s->skipped;
	d->shape_fallback += s->shape_fallback;
	d->bare_taken += s->bare_taken;
	for (e = 0; e < EVIDENCE__COUNT; e++) {
		d->taken_by[e] += s->taken_by[e];
		d->subst_by[e] += s->subst_by[e];
	}
	if (s->fp_mismatch &&
	    (!d->fp_mismatch ||
	     (interleaved && s->fp_first_mismatch_line < d->fp_first_mismatch_line))) {
		d->fp_first_mismatch_step = s->fp_first_mismatch_step;
		d->fp_first_mismatch_line = s->fp_first_mismatch_line;
	}
	d->fp_evaluated += s->fp_evaluated;
	d->fp_mismatch += s->fp_mismatch;
}

void tally_add_counts(struct tally_counts *d, const struct tally_counts *s)
{
	add_counts(d, s, false);
}

void tally_add_counts_interleaved(struct tally_counts *d, const struct tally_counts *s)
{
	add_counts(d, s, true);
}

/* The index of v in g's table, or SIZE_MAX. */
static size_t garbage_find(const struct tally_garbage *g, int64_t v)
{
	size_t i;

	for (i = 0; i < g->n_values; i++)
		if (g->values[i].value == v)
			return i;
	return SIZE_MAX;
}

/* Appends a value known whole to g's table, or counts it dropped when the table is full. */
static void garbage_keep(struct tally_garbage *g, int64_t v, uint64_t n)
{
	if (g->n_values < TALLY_GARBAGE_VALUES) {
		g->values[g->n_values].value = v;
		g->values[g->n_values++].n = n;
	} else {
		g->values_dropped += n;
	}
}

void tally_add_garbage(struct tally_garbage *d, const struct tally_garbage *s)
{
	struct tally_garbage out;
	size_t i, j;

	memset(&out, 0, sizeof(out));
	out.count = d->count + s->count;
	out.float32_like = d->float32_like + s->float32_like;
	out.values_dropped = d->values_dropped + s->values_dropped;
	for (i = 0; i < d->n_values; i++) {
		uint64_t n = d->values[i].n;
		j = garbage_find(s, d->values[i].value);
		if (j != SIZE_MAX)
			n += s->values[j].n;
		else if (s->values_dropped) {
			out.values_dropped += n;   /* s may hold more of it among its dropped */
			continue;
		}
		garbage_keep(&out, d->values[i].value, n);
	}
	for (j = 0; j < s->n_values; j++) {
		if (garbage_find(d, s->values[j].value) != SIZE_MAX)
			continue;   /* added above */
		if (d->values_dropped)
			out.values_dropped += s->values[j].n;   /* likewise, d */
		else
			garbage_keep(&out, s->values[j].value, s->values[j].n);
	}
	*d = out;
}

void tally_absorb_counts(struct tally *dst, const struct tally_counts *counts, size_t n,
			 const struct tally_garbage *g, uint64_t events_with_taken)
{
	size_t r;

	for (r = 0; r < dst->n_rules && r < n; r++)
		tally_add_counts(&dst->counts[r], &counts[r]);
	tally_add_garbage(&dst->garbage, g);
	dst->events_with_taken += events_with_taken;
}

void tally_absorb(struct tally *dst, const struct tally *src)
{
	tally_absorb_counts(dst, src->counts, src->n_rules, &src->garbage, src->events_with_taken);
}

size_t tally_n_rules(const struct tally *t)
{
	return t->n_rules;
}

const struct rule *tally_rule(const struct tally *t, size_t i)
{
	return &t->rules[i];
}

const struct tally_counts *tally_counts(const struct tally *t, size_t i)
{
	return &t->counts[i];
}

const struct tally_garbage *tally_garbage(const struct tally *t)
{
	return &t->garbage;
}

uint64_t tally_n_evaluated(const struct tally_counts *c)
{
	/* counts read back from a report (ttaudit combine) may not add up */
	if (c->skipped > c->merges || c->shape_fallback > c->merges - c->skipped)
		return 0;
	return c->merges - c->skipped - c->shape_fallback;
}

int tally_not_evaluable(const struct tally *t, size_t i)
{
	return tally_n_evaluated(&t->counts[i]) == 0;
}

void tally_fingerprint_of(const struct tally_counts *counts, size_t n, uint64_t events_with_taken,
			  struct tally_fingerprint *out)
{
	size_t r;

	memset(out, 0, sizeof(*out));
	out->events_with_taken = events_with_taken;
	if (!events_with_taken) {
		out->verdict = TALLY_NO_TAKEN;
		return;
	}
	for (r = 0; r < n && r < RULE_MAX_LIST; r++) {
		if (!counts[r].fp_evaluated)
			out->unevaluated[out->n_unevaluated++] = r;
		else if (!counts[r].fp_mismatch)
			out->consistent[out->n_consistent++] = r;
	}
	/*
	 * A candidate never evaluated is not ruled out: naming one rule while
	 * another might explain the same decisions is a guess, so WITHHELD.
	 */
	if (out->n_unevaluated || out->n_consistent > 1)
		out->verdict = TALLY_WITHHELD;
	else
		out->verdict = out->n_consistent == 1 ? TALLY_CONSISTENT : TALLY_INCONSISTENT;
}

void tally_fingerprint(const struct tally *t, struct tally_fingerprint *out)
{
	tally_fingerprint_of(t->counts, t->n_rules, t->events_with_taken, out);
}

const char *tally_verdict_name(enum tally_verdict v)
{
	switch (v) {
	case TALLY_NO_TAKEN: return "NO_TAKEN";
	case TALLY_CONSISTENT: return "CONSISTENT";
	case TALLY_WITHHELD: return "WITHHELD";
	case TALLY_INCONSISTENT: return "INCONSISTENT";
	}
	return "?";
}
