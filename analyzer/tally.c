#include "tally.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct tally {
	size_t n_rules;
	struct rule rules[RULE_MAX_LIST];
	struct tally_counts counts[RULE_MAX_LIST];
	struct tally_garbage garbage;
	int64_t max_pos_override;
	int64_t config_max_pos;     /* from the file's last config event, 0 none */
	uint64_t events_with_taken;
	tally_subst_fn observer;
	void *observer_ctx;
	/* per-event scratch, sized for the widest event */
	uint8_t take[EVENT_MAX_SLOTS], allowed[EVENT_MAX_SLOTS], active[EVENT_MAX_SLOTS];
	uint8_t bare[EVENT_MAX_SLOTS], stale[EVENT_MAX_SLOTS];
	uint8_t ev_class[EVENT_MAX_SLOTS];
};

struct tally *tally_new(const struct rule *rules, size_t n, int64_t max_pos_override)
{
	struct tally *t;
	size_t i;

	if (n > RULE_MAX_LIST)
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
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
	if (c->max_model_len > 0)
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

static void garbage_note(struct tally_garbage *g, int64_t v, uint64_t n)
{
	size_t i;

	for (i = 0; i < g->n_values; i++)
		if (g->values[i].value == v) {
			g->values[i].n += n;
			return;
		}
	if (g->n_values < TALLY_GARBAGE_VALUES) {
		g->values[g->n_values].value = v;
		g->values[g->n_values].n = n;
		g->n_values++;
	} else {
		g->values_dropped += n;
	}
}

void tally_merge(struct tally *t, const struct merge_event *m, const char *file, long line)
{
	struct rule_ctx ctx = { .max_pos = tally_max_pos(t) };
	int64_t gpos = ctx.max_pos > 0 ? ctx.max_pos : TALLY_DEFAULT_GARBAGE_POS;
	uint32_t h = m->n_host, s;
	size_t r;
	int any_active = 0;

	if (m->n_dev < h) {
		for (r = 0; r < t->n_rules; r++) {
			t->counts[r].merges++;
			t->counts[r].shape_fallback++;
		}
		return;
	}
	for (s = 0; s < h; s++) {
		int st;
		int64_t d = m->dev_pos[s];
		if (d < -1 || d >= gpos) {
			t->garbage.count++;
			t->garbage.float32_like += (uint64_t)tally_float32_like(d);
			garbage_note(&t->garbage, d, 1);
		}
		t->active[s] = m->host_pos[s] != -1;
		any_active |= t->active[s];
		t->bare[s] = (uint8_t)rule_bare_take(m, s);
		t->ev_class[s] = t->active[s] ? (uint8_t)evidence_slot(m, s, &st) : EVIDENCE_UNKNOWN;
		t->stale[s] = t->active[s] ? (uint8_t)st : 0;
	}
	if (m->has_taken)
		t->events_with_taken++;

	for (r = 0; r < t->n_rules; r++) {
		struct tally_counts *c = &t->counts[r];
		int fired = 0, mismatch = 0;

		c->merges++;
		if (rule_eval(&t->rules[r], m, &ctx, t->take, t->allowed) != RULE_EVALUATED) {
			c->skipped++;
			continue;
		}
		for (s = 0; s < h; s++) {
			if (!t->active[s])
				continue;
			if (!t->allowed[s])
				fired = 1;
			if (m->has_taken && t->take[s] != m->taken[s])
				mismatch = 1;
			if (t->bare[s])
				c->bare_taken++;
			if (t->take[s]) {
				c->taken++;
				c->taken_by[t->ev_class[s]]++;
				if (t->ev_class[s] == EVIDENCE_UNKNOWN) {
					c->unverified++;
				} else if (t->stale[s]) {
					c->substitutions++;
					c->subst_by[t->ev_class[s]]++;
					if (t->observer) {
						struct tally_subst ts = { r, m, s,
							(enum evidence)t->ev_class[s], file, line };
						t->observer(t->observer_ctx, &ts);
					}
				}
			} else if (t->bare[s]) {
				if (t->ev_class[s] == EVIDENCE_UNKNOWN)
					c->rejected_unverified++;
				else if (t->stale[s])
					c->prevented++;
				else
					c->forgone++;
			}
		}
		if (fired && any_active)
			c->fired++;
		if (m->has_taken) {
			c->fp_evaluated++;
			if (mismatch) {
				if (!c->fp_mismatch)
					c->fp_first_mismatch_step = m->step;
				c->fp_mismatch++;
			}
		}
	}
}

void tally_absorb(struct tally *dst, const struct tally *src)
{
	size_t r, e, i;

	for (r = 0; r < dst->n_rules && r < src->n_rules; r++) {
		struct tally_counts *d = &dst->counts[r];
		const struct tally_counts *s = &src->counts[r];
		d->merges += s->merges;
		d->taken += s->taken;
		d->substitutions += s->substitutions;
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
		if (!d->fp_mismatch && s->fp_mismatch)
			d->fp_first_mismatch_step = s->fp_first_mismatch_step;
		d->fp_evaluated += s->fp_evaluated;
		d->fp_mismatch += s->fp_mismatch;
	}
	dst->garbage.count += src->garbage.count;
	dst->garbage.float32_like += src->garbage.float32_like;
	dst->garbage.values_dropped += src->garbage.values_dropped;
	for (i = 0; i < src->garbage.n_values; i++)
		garbage_note(&dst->garbage, src->garbage.values[i].value, src->garbage.values[i].n);
	dst->events_with_taken += src->events_with_taken;
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

int tally_not_evaluable(const struct tally *t, size_t i)
{
	const struct tally_counts *c = &t->counts[i];
	return c->skipped + c->shape_fallback == c->merges;
}

void tally_fingerprint(const struct tally *t, struct tally_fingerprint *out)
{
	size_t r;

	memset(out, 0, sizeof(*out));
	out->events_with_taken = t->events_with_taken;
	if (!t->events_with_taken) {
		out->verdict = TALLY_NO_TAKEN;
		return;
	}
	for (r = 0; r < t->n_rules; r++)
		if (t->counts[r].fp_evaluated > 0 && t->counts[r].fp_mismatch == 0)
			out->consistent[out->n_consistent++] = r;
	out->verdict = out->n_consistent == 1 ? TALLY_CONSISTENT
		     : out->n_consistent > 1 ? TALLY_WITHHELD : TALLY_INCONSISTENT;
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
