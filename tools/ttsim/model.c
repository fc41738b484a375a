/*
 * model.c - the generator model (see model.h for the mechanism).
 */
#include "model.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vocab.h"

struct mreq {
	unsigned long long handle;
	char id[TTSIM_ID_MAX];
	int *prompt;                /* owned */
	int n_prompt, max_tokens;
	void *user;
	int n_gen;                  /* tokens produced, the pending one included */
	int pending;                /* newest token, at host_pos, not yet delivered */
	int forced;                 /* next token taken from the device, -1 = none */
	uint64_t h_prev;            /* sequence hash before the pending token */
	uint64_t h;                 /* sequence hash including the pending token */
	int cached;                 /* prompt tokens found in the prefix cache */
	int n_subs, first_sub;
	struct mreq *next;          /* waiting queue link */
};

/* One (device or host-copy) buffer of the async-ahead tokens. */
struct devbuf {
	long long pos[TTSIM_MAX_SLOTS];
	int tok[TTSIM_MAX_SLOTS];
	char req[TTSIM_MAX_SLOTS][TTSIM_ID_MAX];   /* "" = no request (idle slot) */
	long long slot_gen[TTSIM_MAX_SLOTS];
	long long step;             /* the decode that wrote it, -1 = never */
	long long gen;              /* batch generation at capture */
};

struct slot {
	struct mreq *req;           /* NULL = free */
	long long gen;              /* request generation: +1 per request placed */
	bool idle_on_dev;           /* device side already idle at the last decode */
	bool garbage_on;
	long long garbage;          /* device position while idle and garbage_on */
};

struct tracked {
	unsigned mask;
	struct ttsim_rule_stats st;
};

struct cache_ent {
	uint64_t hash;
	unsigned long long tick;
	int next;                   /* bucket chain, -1 = end */
};

struct ttsim_model {
	struct ttsim_model_config c;
	struct ttsim_model_sink sink;
	struct ttsim_audit *audit;
	char arm_name[TTSIM_ARM_NAME_MAX];
	bool gate_said;              /* the forced keep's gate event was written */
	struct slot slots[TTSIM_MAX_SLOTS];
	struct devbuf dev, copy;
	unsigned char prefilled[TTSIM_MAX_SLOTS];
	struct mreq *wait_head, *wait_tail;
	int n_waiting, n_running;
	long long step;             /* next step number */
	long long gen;              /* batch generation: +1 per composition change */
	unsigned long long n_decodes;
	unsigned long long next_handle;
	int consec_prefills;
	bool reset_batch, mode_switched;
	uint64_t rng;
	struct tracked tracked[TTSIM_MAX_TRACKED];
	int n_tracked;
	struct ttsim_model_stats st;
	/* prefix cache */
	struct cache_ent *cache;
	int *cache_bucket;
	int n_cache, n_bucket;
	unsigned long long cache_tick;
};

static uint64_t model_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t model_absorb(uint64_t h, int tok)
{
	return model_mix(h ^ ((uint64_t)(tok + 1) * 0x100000001b3ull));
}

static uint64_t model_prompt_hash(unsigned long long seed, const int *prompt, int n)
{
	uint64_t h = model_mix(seed ^ 0x7474736d6f64656cull);
	int i;

	for (i = 0; i < n; i++)
		h = model_absorb(h, prompt[i]);
	return h;
}

/* The greedy token after a sequence whose hash is h. */
static int model_greedy(uint64_t h)
{
	return (int)(model_mix(h ^ 0x5bd1e995ull) % TTSIM_VOCAB_WORDS);
}

static double model_rand(struct ttsim_model *m)
{
	m->rng = model_mix(m->rng);
	return (double)(m->rng >> 11) / 9007199254740992.0;
}

void ttsim_model_config_default(struct ttsim_model_config *c)
{
	memset(c, 0, sizeof(*c));
	c->slots = 8;
	c->max_model_len = 131072;
	c->seed = 0;
	c->refresh_every = 4;
	c->garbage_rate = 0.0;
	c->max_prefills = TTSIM_MAX_SLOTS;
	c->block_size = 16;
	c->cache_blocks = 4096;
	c->prefill_base_s = 0.015;
	c->prefill_token_s = 0.00025;
	c->decode_base_s = 0.012;
	c->decode_slot_s = 0.0006;
	c->forgone_s = 0.0015;
}

static void model_buf_clear(struct devbuf *b)
{
	int s;

	for (s = 0; s < TTSIM_MAX_SLOTS; s++) {
		b->pos[s] = -1;
		b->tok[s] = -1;
		b->req[s][0] = 0;
		b->slot_gen[s] = 0;
	}
	b->step = -1;
	b->gen = 0;
}

enum status ttsim_model_new(const struct ttsim_model_config *c, struct ttsim_model **out,
			    struct status_info *si)
{
	struct ttsim_model *m = NULL;
	int i;

	*out = NULL;
	if (c->slots < 1 || c->slots > TTSIM_MAX_SLOTS)
		return status_set(si, STATUS_USAGE, "slots %d: must be 1..%d", c->slots,
				  TTSIM_MAX_SLOTS);
	if (c->max_model_len < 2)
		return status_set(si, STATUS_USAGE, "max_model_len %lld: too small",
				  c->max_model_len);
	if (c->refresh_every < 1)
		return status_set(si, STATUS_USAGE, "refresh_every %d: must be >= 1",
				  c->refresh_every);
	if (c->dp > 1 && c->slots % c->dp)
		return status_set(si, STATUS_USAGE, "dp %d: must divide the %d slots", c->dp, c->slots);
	if (!(c->garbage_rate >= 0 && c->garbage_rate <= 1))
		return status_set(si, STATUS_USAGE, "garbage rate: must be in [0, 1]");
	if (c->max_prefills < 1 || c->block_size < 1 || c->cache_blocks < 0 ||
	    c->cache_blocks > (1 << 22))
		return status_set(si, STATUS_USAGE, "bad prefill or cache configuration");
	m = calloc(1, sizeof(*m));
	if (!m)
		return status_set(si, STATUS_NOMEM, "model: out of memory");
	m->c = *c;
	if (c->cache_blocks > 0) {
		for (m->n_bucket = 64; m->n_bucket < 2 * c->cache_blocks; m->n_bucket *= 2)
			;
		m->cache = calloc((size_t)c->cache_blocks, sizeof(*m->cache));
		m->cache_bucket = malloc((size_t)m->n_bucket * sizeof(int));
		if (!m->cache || !m->cache_bucket) {
			ttsim_model_free(m);
			return status_set(si, STATUS_NOMEM, "model: out of memory");
		}
		for (i = 0; i < m->n_bucket; i++)
			m->cache_bucket[i] = -1;
	}
	ttsim_guard_name(c->arm_claimed, m->arm_name, sizeof(m->arm_name));
	model_buf_clear(&m->dev);
	model_buf_clear(&m->copy);
	m->rng = model_mix(c->seed ^ 0x6761726261676521ull);
	m->next_handle = 1;
	*out = m;
	return STATUS_OK;
}

static void model_req_free(struct mreq *r)
{
	if (!r)
		return;
	free(r->prompt);
	free(r);
}

void ttsim_model_free(struct ttsim_model *m)
{
	struct mreq *r, *n;
	int s;

	if (!m)
		return;
	for (r = m->wait_head; r; r = n) {
		n = r->next;
		model_req_free(r);
	}
	for (s = 0; s < m->c.slots; s++)
		model_req_free(m->slots[s].req);
	free(m->cache);
	free(m->cache_bucket);
	free(m);
}

void ttsim_model_set_sink(struct ttsim_model *m, const struct ttsim_model_sink *sink)
{
	if (sink)
		m->sink = *sink;
	else
		memset(&m->sink, 0, sizeof(m->sink));
}

void ttsim_model_set_audit(struct ttsim_model *m, struct ttsim_audit *a)
{
	m->audit = a;
	ttsim_audit_config(a, m->c.slots, m->c.max_model_len, m->arm_name, m->c.seed,
			   m->c.refresh_every);
}

enum status ttsim_model_track(struct ttsim_model *m, unsigned mask)
{
	int i;

	for (i = 0; i < m->n_tracked; i++)
		if (m->tracked[i].mask == mask)
			return STATUS_OK;
	if (m->n_tracked >= TTSIM_MAX_TRACKED)
		return STATUS_LIMIT;
	memset(&m->tracked[m->n_tracked], 0, sizeof(m->tracked[0]));
	m->tracked[m->n_tracked++].mask = mask;
	return STATUS_OK;
}

const struct ttsim_rule_stats *ttsim_model_rule_stats(const struct ttsim_model *m,
						      unsigned mask)
{
	int i;

	for (i = 0; i < m->n_tracked; i++)
		if (m->tracked[i].mask == mask)
			return &m->tracked[i].st;
	return NULL;
}

enum status ttsim_model_submit(struct ttsim_model *m, const char *id, const int *prompt,
			       int n_prompt, int max_tokens, void *user,
			       unsigned long long *handle, struct status_info *si)
{
	struct mreq *r;

	if (!id || strlen(id) >= TTSIM_ID_MAX)
		return status_set(si, STATUS_USAGE, "request id missing or too long");
	if (n_prompt < 1 || max_tokens < 1 ||
	    (long long)n_prompt + max_tokens > m->c.max_model_len)
		return status_set(si, STATUS_LIMIT,
				  "request of %d prompt and %d completion tokens does not fit "
				  "max_model_len %lld", n_prompt, max_tokens, m->c.max_model_len);
	r = calloc(1, sizeof(*r));
	if (!r)
		return status_set(si, STATUS_NOMEM, "request: out of memory");
	r->prompt = malloc((size_t)n_prompt * sizeof(int));
	if (!r->prompt) {
		free(r);
		return status_set(si, STATUS_NOMEM, "request: out of memory");
	}
	memcpy(r->prompt, prompt, (size_t)n_prompt * sizeof(int));
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->n_prompt = n_prompt;
	r->max_tokens = max_tokens;
	r->user = user;
	r->forced = -1;
	r->first_sub = -1;
	r->handle = m->next_handle++;
	if (m->wait_tail)
		m->wait_tail->next = r;
	else
		m->wait_head = r;
	m->wait_tail = r;
	m->n_waiting++;
	if (handle)
		*handle = r->handle;
	return STATUS_OK;
}

/* --- prefix cache: block hashes, approximately LRU ----------------------- */

static int model_cache_find(struct ttsim_model *m, uint64_t h)
{
	int i = m->cache_bucket[h & (uint64_t)(m->n_bucket - 1)];

	for (; i >= 0; i = m->cache[i].next)
		if (m->cache[i].hash == h)
			return i;
	return -1;
}

static void model_cache_rebuild(struct ttsim_model *m)
{
	int i, b;

	for (i = 0; i < m->n_bucket; i++)
		m->cache_bucket[i] = -1;
	for (i = 0; i < m->n_cache; i++) {
		b = (int)(m->cache[i].hash & (uint64_t)(m->n_bucket - 1));
		m->cache[i].next = m->cache_bucket[b];
		m->cache_bucket[b] = i;
	}
}

/* Full: drop the older half by tick, in one pass, so eviction is amortised O(1). */
static void model_cache_evict(struct ttsim_model *m)
{
	unsigned long long lo = ~0ull, hi = 0, mid;
	int i, k = 0;

	for (i = 0; i < m->n_cache; i++) {
		if (m->cache[i].tick < lo)
			lo = m->cache[i].tick;
		if (m->cache[i].tick > hi)
			hi = m->cache[i].tick;
	}
	mid = lo + (hi - lo) / 2;
	for (i = 0; i < m->n_cache; i++)
		if (m->cache[i].tick > mid)
			m->cache[k++] = m->cache[i];
	if (k == m->n_cache)
		k = 0;
	m->n_cache = k;
	model_cache_rebuild(m);
}

/* Cached prompt tokens (whole blocks, never the whole prompt), then inserts
 * the prompt's blocks. */
static int model_cache_prefill(struct ttsim_model *m, const int *prompt, int n)
{
	uint64_t h = 0x6361636865ull;
	int b, i, n_blocks, hits = 0, e, bk;
	bool chain = true;

	if (!m->cache)
		return 0;
	n_blocks = n / m->c.block_size;
	for (b = 0; b < n_blocks; b++) {
		for (i = 0; i < m->c.block_size; i++)
			h = model_absorb(h, prompt[b * m->c.block_size + i]);
		e = model_cache_find(m, h);
		m->cache_tick++;
		if (e >= 0) {
			m->cache[e].tick = m->cache_tick;
			if (chain)
				hits++;
			continue;
		}
		chain = false;
		if (m->n_cache >= m->c.cache_blocks)
			model_cache_evict(m);
		e = m->n_cache++;
		bk = (int)(h & (uint64_t)(m->n_bucket - 1));
		m->cache[e].hash = h;
		m->cache[e].tick = m->cache_tick;
		m->cache[e].next = m->cache_bucket[bk];
		m->cache_bucket[bk] = e;
	}
	hits *= m->c.block_size;
	return hits >= n ? n - 1 : hits;
}

void ttsim_model_reset_prefix_cache(struct ttsim_model *m)
{
	if (!m->cache)
		return;
	m->n_cache = 0;
	model_cache_rebuild(m);
}

/* --- requests leaving ------------------------------------------------------ */

static void model_deliver(struct ttsim_model *m, struct mreq *r, int index, int tok)
{
	m->st.generation_tokens++;
	if (m->sink.token)
		m->sink.token(m->sink.ctx, r->user, index, tok);
}

static void model_finish(struct ttsim_model *m, struct mreq *r, int slot, bool aborted)
{
	struct ttsim_req_result res;

	res.prompt_tokens = r->n_prompt;
	res.cached_tokens = r->cached;
	res.n_tokens = aborted ? (r->n_gen > 0 ? r->n_gen - 1 : 0) : r->n_gen;
	res.n_subs = r->n_subs;
	res.first_sub = r->first_sub;
	res.aborted = aborted;
	if (aborted)
		m->st.aborted++;
	else
		m->st.finished++;
	if (r->n_subs)
		m->st.with_subs++;
	if (slot >= 0)
		ttsim_audit_request(m->audit, "finish", r->id, slot, m->step, res.n_tokens,
				    r->n_subs, aborted);
	if (m->sink.finish)
		m->sink.finish(m->sink.ctx, r->user, &res);
	model_req_free(r);
}

static void model_free_slot(struct ttsim_model *m, int s)
{
	m->slots[s].req = NULL;
	m->n_running--;
	m->gen++;
	m->reset_batch = true;
}

bool ttsim_model_abort(struct ttsim_model *m, unsigned long long handle)
{
	struct mreq *r, *prev = NULL;
	int s;

	for (r = m->wait_head; r; prev = r, r = r->next) {
		if (r->handle != handle)
			continue;
		if (prev)
			prev->next = r->next;
		else
			m->wait_head = r->next;
		if (m->wait_tail == r)
			m->wait_tail = prev;
		m->n_waiting--;
		model_finish(m, r, -1, true);
		return true;
	}
	for (s = 0; s < m->c.slots; s++) {
		r = m->slots[s].req;
		if (r && r->handle == handle) {
			model_free_slot(m, s);
			model_finish(m, r, s, true);
			return true;
		}
	}
	return false;
}

/* --- steps --------------------------------------------------------------- */

static void model_prefill(struct ttsim_model *m, int s, struct ttsim_step *st)
{
	struct mreq *r = m->wait_head;
	struct slot *sl = &m->slots[s];

	m->wait_head = r->next;
	if (!m->wait_head)
		m->wait_tail = NULL;
	r->next = NULL;
	m->n_waiting--;
	sl->req = r;
	sl->gen++;
	m->n_running++;
	m->gen++;
	m->prefilled[s] = 1;
	m->reset_batch = true;
	m->mode_switched = true;
	m->consec_prefills++;
	m->st.started++;
	m->st.prefills++;

	r->cached = model_cache_prefill(m, r->prompt, r->n_prompt);
	m->st.prompt_tokens += (unsigned long long)r->n_prompt;
	m->st.cached_tokens += (unsigned long long)r->cached;
	r->h_prev = model_prompt_hash(m->c.seed, r->prompt, r->n_prompt);
	r->pending = model_greedy(r->h_prev);
	r->h = model_absorb(r->h_prev, r->pending);
	r->n_gen = 1;

	ttsim_audit_request(m->audit, "start", r->id, s, m->step, 0, 0, false);
	ttsim_audit_prefill(m->audit, m->step, s, r->id, r->n_prompt, r->cached);
	st->kind = TTSIM_STEP_PREFILL;
	st->width = 1;
	st->seconds = m->c.prefill_base_s + m->c.prefill_token_s * (r->n_prompt - r->cached);
	if (r->n_gen >= r->max_tokens) {
		model_deliver(m, r, 0, r->pending);
		model_free_slot(m, s);
		model_finish(m, r, s, false);
	}
}

static long long model_host_pos(const struct mreq *r)
{
	return (long long)r->n_prompt + r->n_gen - 1;
}

/* The merge block: evaluates tracked rules, applies the engaged arm. Returns
 * how many async-ahead tokens the engaged arm gave up (its cost). */
static int model_merge(struct ttsim_model *m)
{
	long long host_pos[TTSIM_MAX_SLOTS], slot_gen[TTSIM_MAX_SLOTS];
	int host_tok[TTSIM_MAX_SLOTS];
	const char *slot_req[TTSIM_MAX_SLOTS], *buf_req[TTSIM_MAX_SLOTS];
	unsigned char take[TTSIM_MAX_SLOTS], bare[TTSIM_MAX_SLOTS], rt[TTSIM_MAX_SLOTS];
	struct ttsim_merge mg;
	struct ttsim_rule_stats *rs;
	struct mreq *r;
	enum ttsim_guard_eval ev;
	int s, H = m->c.slots, i, n_forgone = 0, stale, c, off, K;
	bool fired;
	struct timespec ts;

	for (s = 0; s < H; s++) {
		r = m->slots[s].req;
		host_pos[s] = r ? model_host_pos(r) : -1;
		host_tok[s] = r ? r->pending : -1;
		slot_gen[s] = m->slots[s].gen;
		slot_req[s] = r ? r->id : NULL;
		buf_req[s] = m->copy.req[s][0] ? m->copy.req[s] : NULL;
	}
	/* the real keep runs per data-parallel chunk i of the trace inputs
	 * (trace_inputs_decode[key][i]): one merge, and one audit event with
	 * its `dp`, per chunk */
	K = H / (m->c.dp > 1 ? m->c.dp : 1);
	for (c = 0, off = 0; off < H; c++, off += K) {
		memset(&mg, 0, sizeof(mg));
		mg.step = m->step;
		mg.reset_batch = m->reset_batch;
		mg.mode_switched = m->mode_switched;
		mg.n_host = mg.n_dev = (size_t)K;
		mg.has_dp = m->c.dp > 1;
		mg.dp = c;
		mg.host_pos = host_pos + off;
		mg.dev_pos = m->copy.pos + off;
		mg.host_tok = host_tok + off;
		mg.dev_tok = m->copy.tok + off;
		mg.prefilled = m->prefilled + off;
		mg.has_buf_step = true;
		mg.buf_step = m->copy.step;
		mg.has_gen = true;
		mg.gen = m->gen;
		mg.buf_gen = m->copy.gen;
		mg.slot_gen = slot_gen + off;
		mg.buf_slot_gen = m->copy.slot_gen + off;
		mg.slot_req = slot_req + off;
		mg.buf_req = buf_req + off;
		mg.max_pos = m->c.max_model_len;
		mg.arm = m->arm_name;

		ttsim_guard_take(0, &mg, bare, NULL);
		for (i = 0; i < m->n_tracked; i++) {
			rs = &m->tracked[i].st;
			rs->merges++;
			ev = ttsim_guard_take(m->tracked[i].mask, &mg, rt, &fired);
			if (ev == TTSIM_GUARD_SKIPPED) {
				rs->skipped++;
				continue;
			}
			if (ev == TTSIM_GUARD_SHAPE_FALLBACK) {
				rs->shape_fallback++;
				continue;
			}
			rs->fired += fired;
			for (s = 0; s < K; s++) {
				if (host_pos[off + s] == -1)
					continue;
				stale = ttsim_guard_stale(&mg, (size_t)s) == 1;
				rs->taken += rt[s];
				rs->substitutions += rt[s] && stale;
				rs->prevented += bare[s] && !rt[s] && stale;
				rs->forgone += bare[s] && !rt[s] && !stale;
			}
		}

		ttsim_guard_take(m->c.arm, &mg, take, NULL);
		for (s = off; s < off + K; s++) {
			r = m->slots[s].req;
			if (bare[s - off] && !take[s - off])
				n_forgone++;
			if (!take[s - off])
				continue;
			m->st.takes++;
			if (!buf_req[s] || strcmp(buf_req[s], r->id)) {
				int want, index = (int)(m->copy.pos[s] - r->n_prompt);

				want = m->copy.pos[s] == host_pos[s] ? r->pending : model_greedy(r->h);
				m->st.substitutions++;
				if (m->copy.tok[s] != want)
					m->st.changed++;
				if (!r->n_subs || index < r->first_sub)
					r->first_sub = index;
				r->n_subs++;
			}
			if (m->copy.pos[s] == host_pos[s]) {
				r->pending = m->copy.tok[s];
				r->h = model_absorb(r->h_prev, r->pending);
			} else {
				r->forced = m->copy.tok[s];
			}
		}
	m->st.merges++;
	mg.taken = take;
	if (m->audit && m->c.audit_wall_time) {
		clock_gettime(CLOCK_REALTIME, &ts);
		mg.t = (double)ts.tv_sec + ts.tv_nsec / 1e9;
	}
	ttsim_audit_merge(m->audit, &mg);
	}
	m->st.forgone += (unsigned long long)n_forgone;
	return n_forgone;
}

/* A float32 in [1e5, 2e5) read as int32: what a reused trace buffer holds. */
static long long model_garbage(struct ttsim_model *m)
{
	float f = (float)(100000.0 + 100000.0 * model_rand(m));
	int32_t v;

	memcpy(&v, &f, sizeof(v));
	return v;
}

static void model_decode(struct ttsim_model *m, struct ttsim_step *st)
{
	int active[TTSIM_MAX_SLOTS] = { 0 }, done[TTSIM_MAX_SLOTS];
	int n_active = 0, n_done = 0, s, i, n_forgone = 0, next;
	long long gen_at_capture;
	struct mreq *r;
	struct slot *sl;

	for (s = 0; s < m->c.slots; s++)
		if (m->slots[s].req)
			active[n_active++] = s;
	if ((m->reset_batch || m->mode_switched) && m->c.keep_gate && !m->c.supports_async_decode &&
	    !m->c.force_keep) {
		/* the gate refuses: host tokens only, no merge, said each time */
		ttsim_audit_gate(m->audit, m->step, false, false, false,
				 "model does not declare supports_async_decode");
	} else if (m->reset_batch || m->mode_switched) {
		if (m->c.keep_gate && !m->c.supports_async_decode && !m->gate_said) {
			ttsim_audit_gate(m->audit, m->step, true, false, true,
					 "TT_FORCE_ASYNC_AHEAD_KEEP=1 overrides supports_async_decode false");
			m->gate_said = true;
		}
		n_forgone = model_merge(m);
		st->merged = true;
	}
	m->reset_batch = m->mode_switched = false;
	memset(m->prefilled, 0, sizeof(m->prefilled));
	m->consec_prefills = 0;
	m->st.decodes++;
	ttsim_audit_decode(m->audit, m->step, active, (size_t)n_active);

	for (i = 0; i < n_active; i++) {
		r = m->slots[active[i]].req;
		model_deliver(m, r, r->n_gen - 1, r->pending);
		next = r->forced >= 0 ? r->forced : model_greedy(r->h);
		r->forced = -1;
		r->h_prev = r->h;
		r->pending = next;
		r->h = model_absorb(r->h, next);
		r->n_gen++;
		if (r->n_gen >= r->max_tokens) {
			model_deliver(m, r, r->n_gen - 1, r->pending);
			done[n_done++] = active[i];
		}
	}

	/* The device ran this batch one ahead: finishing requests included. */
	gen_at_capture = m->gen;
	for (s = 0; s < m->c.slots; s++) {
		sl = &m->slots[s];
		r = sl->req;
		if (r) {
			m->dev.pos[s] = model_host_pos(r) + 1;
			m->dev.tok[s] = model_greedy(r->h);
			snprintf(m->dev.req[s], TTSIM_ID_MAX, "%s", r->id);
			sl->idle_on_dev = false;
		} else {
			if (!sl->idle_on_dev) {
				sl->garbage_on = m->c.garbage_rate > 0 &&
						 model_rand(m) < m->c.garbage_rate;
				if (sl->garbage_on)
					sl->garbage = model_garbage(m);
				sl->idle_on_dev = true;
			} else if (sl->garbage_on) {
				sl->garbage++;
			}
			m->dev.pos[s] = sl->garbage_on ? sl->garbage : -1;
			m->dev.tok[s] = -1;
			m->dev.req[s][0] = 0;
		}
		m->dev.slot_gen[s] = sl->gen;
	}
	m->dev.step = m->step;
	m->dev.gen = gen_at_capture;

	for (i = 0; i < n_done; i++) {
		r = m->slots[done[i]].req;
		model_free_slot(m, done[i]);
		model_finish(m, r, done[i], false);
	}
	m->n_decodes++;
	if (m->n_decodes % (unsigned long long)m->c.refresh_every == 0) {
		/* the buffer the keep reads is rewritten: a trace replay of the
		 * decode trace, whose key is (on-device sampling, batch) */
		char key[48];
		int c;

		m->copy = m->dev;
		snprintf(key, sizeof(key), "(True, %d)", m->c.slots / (m->c.dp > 1 ? m->c.dp : 1));
		for (c = 0; c < (m->c.dp > 1 ? m->c.dp : 1); c++)
			ttsim_audit_trace(m->audit, m->step, "replay", key, m->c.dp > 1 ? c : -1);
	}
	st->kind = TTSIM_STEP_DECODE;
	st->width = n_active;
	st->seconds = m->c.decode_base_s + m->c.decode_slot_s * n_active +
		      m->c.forgone_s * n_forgone;
}

void ttsim_model_step(struct ttsim_model *m, struct ttsim_step *st)
{
	int s, free_slot = -1;

	memset(st, 0, sizeof(*st));
	for (s = 0; s < m->c.slots; s++)
		if (!m->slots[s].req) {
			free_slot = s;
			break;
		}
	if (m->wait_head && free_slot >= 0 &&
	    (m->consec_prefills < m->c.max_prefills || m->n_running == 0))
		model_prefill(m, free_slot, st);
	else if (m->n_running > 0)
		model_decode(m, st);
	else
		return;
	m->step++;
	m->st.steps++;
	m->st.modeled_seconds += st->seconds;
}

int ttsim_model_running(const struct ttsim_model *m)
{
	return m->n_running;
}

int ttsim_model_waiting(const struct ttsim_model *m)
{
	return m->n_waiting;
}

void ttsim_model_stats(const struct ttsim_model *m, struct ttsim_model_stats *out)
{
	*out = m->st;
}

const struct ttsim_model_config *ttsim_model_config(const struct ttsim_model *m)
{
	return &m->c;
}

void ttsim_model_reference(unsigned long long seed, const int *prompt, int n_prompt, int n,
			   int *out)
{
	uint64_t h = model_prompt_hash(seed, prompt, n_prompt);
	int i;

	for (i = 0; i < n; i++) {
		out[i] = model_greedy(h);
		h = model_absorb(h, out[i]);
	}
}
