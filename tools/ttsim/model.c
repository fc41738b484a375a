/*
 * model.c - the generator model (see model.h for the mechanism).
 */
#include "tools/ttsim/model.h"
#include "base/rng.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/ttsim/vocab.h"

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
	int *copy, n_copy;          /* a copy task's code (owned), repeated as the answer */
	int n_subs, first_sub;
	long long serial;           /* request generation: placement order (the stamp) */
	bool host_sampling;         /* sampling the device cannot do */
	int row;                    /* host row while running, -1 = waiting */
	struct mreq *next;          /* waiting queue link */
};

/*
 * One decode trace: its input buffers (tokens, positions) for every chunk,
 * as the device holds them, with the ground truth of whom each row was
 * written for. Chunk c's rows are [c * width, (c + 1) * width).
 */
struct trace {
	bool captured;              /* a decode has run it */
	int width;                  /* rows per chunk */
	long long step;             /* the decode that last wrote it */
	long long gen;              /* batch generation then */
	long long pos[TTSIM_MAX_SLOTS];
	int tok[TTSIM_MAX_SLOTS];
	char req[TTSIM_MAX_SLOTS][TTSIM_ID_MAX];   /* "" = no request (idle row) */
	long long serial[TTSIM_MAX_SLOTS];         /* -1 = none */
	unsigned char garbage[TTSIM_MAX_SLOTS];    /* an idle row read as garbage */
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

/* What a row still holds of the request that left it (the defect modes'). */
struct ghost {
	bool set, aborted;
	int tok;                    /* the token it would have produced next */
	char id[TTSIM_ID_MAX];
};

/* An evicted block's hash and where its memory was (PREFIX_BLOCK). */
struct stale_ent {
	uint64_t hash;              /* 0 = empty */
	int idx;
};

struct ttsim_model {
	struct ttsim_model_config c;
	struct ttsim_model_sink sink;
	struct ttsim_audit *audit;
	char arm_name[TTSIM_ARM_NAME_MAX];
	int n_dp, rows;              /* chunks, rows per chunk (slots / dp) */
	/* the host's persistent batch: chunk c's rows at [c * rows, (c + 1) * rows) */
	struct mreq *row[TTSIM_MAX_SLOTS];
	int n_used[TTSIM_MAX_SLOTS];      /* per chunk: rows in use, holes included */
	int n_active[TTSIM_MAX_SLOTS];    /* per chunk: running requests */
	int remap[TTSIM_MAX_SLOTS];       /* slot_remap since the last decode, chunk-local */
	unsigned char prefilled[TTSIM_MAX_SLOTS];  /* _slots_prefilled_since_decode */
	/* the device: traces by [on_device_sampling][width] ([.][0] when keyed by
	 * sampling alone), allocated for every key the configuration can meet and
	 * captured at their key's first decode */
	struct trace *traces[2][TTSIM_MAX_SLOTS + 1];
	bool have_prev, prev_ods;    /* the previous decode's key */
	int prev_width;
	struct mreq *wait_head, *wait_tail;
	int n_waiting, n_running;
	long long step;             /* next step number */
	long long gen;              /* batch generation: +1 per composition change */
	long long next_serial;
	unsigned long long next_handle;
	int consec_prefills;
	bool reset_batch, mode_switched;
	uint64_t rng, rng_host;
	struct tracked tracked[TTSIM_MAX_TRACKED];
	int n_tracked;
	struct ttsim_model_stats st;
	/* prefix cache */
	struct cache_ent *cache;
	int *cache_bucket;
	int n_cache, n_bucket;
	unsigned long long cache_tick;
	/* the defect modes (TTSIM_FAULT_*) */
	struct ghost ghost[TTSIM_MAX_SLOTS];
	char (*cache_owner)[TTSIM_ID_MAX];   /* PREFIX_BLOCK: who wrote each block */
	int *cache_owner_tok;                /* ... and its first token */
	struct stale_ent *stale;             /* n_bucket entries */
};

static const char *const model_fault_names[] = { "abort-reuse", "redecode", "condense-state",
	"prefix-block", "oov" };

unsigned ttsim_fault_parse(const char *name)
{
	unsigned k;

	for (k = 0; k < sizeof(model_fault_names) / sizeof(model_fault_names[0]); k++)
		if (!strcmp(name, model_fault_names[k]))
			return 1u << k;
	return 0;
}

const char *ttsim_fault_name(unsigned f)
{
	unsigned k;

	for (k = 0; k < sizeof(model_fault_names) / sizeof(model_fault_names[0]); k++)
		if (f == 1u << k)
			return model_fault_names[k];
	return "unknown";
}

static uint64_t model_absorb(uint64_t h, int tok)
{
	return rng_mix(h ^ ((uint64_t)(tok + 1) * 0x100000001b3ull));
}

static uint64_t model_prompt_hash(unsigned long long seed, const int *prompt, int n)
{
	uint64_t h = rng_mix(seed ^ 0x7474736d6f64656cull);
	int i;

	for (i = 0; i < n; i++)
		h = model_absorb(h, prompt[i]);
	return h;
}

/* The greedy token after a sequence whose hash is h. */
static int model_greedy(uint64_t h)
{
	return (int)(rng_mix(h ^ 0x5bd1e995ull) % TTSIM_VOCAB_WORDS);
}

/*
 * A copy task (model.h): the code pieces that follow the first "Code:" of
 * the prompt, up to the first piece that is not one. Into *out (malloc'd,
 * the caller's) and its count; 0 when the prompt is no copy task.
 */
static int model_copy_code(const int *prompt, int n, int **out)
{
	int tag = ttsim_vocab_code_tag(), i, k = 0;

	*out = NULL;
	for (i = 0; i < n && prompt[i] != tag; i++)
		;
	for (i++; i + k < n && ttsim_vocab_is_code(prompt[i + k]); k++)
		;
	if (!k || !(*out = malloc((size_t)k * sizeof(int))))
		return 0;
	memcpy(*out, prompt + i, (size_t)k * sizeof(int));
	return k;
}

/* The token a request computes at output index `index` after a sequence
 * whose hash is h: its code's piece in a copy task, else the greedy token. */
static int model_token_at(const int *copy, int n_copy, int index, uint64_t h)
{
	return n_copy > 0 ? copy[index % n_copy] : model_greedy(h);
}

/* Is the position after a sequence whose hash is h a near tie (chance p)? */
static bool model_near(uint64_t h, double p)
{
	return p > 0 && (double)(rng_mix(h ^ 0x6e656172ull) >> 11) / 9007199254740992.0 < p;
}

/* The runner-up after a sequence whose hash is h, never its greedy top. */
static int model_alt(uint64_t h, int top)
{
	int a = (int)(rng_mix(h ^ 0x616c74ull) % TTSIM_VOCAB_WORDS);

	return a == top ? (a + 1) % TTSIM_VOCAB_WORDS : a;
}

/* The next token of r: at output index n_gen, after the pending one. */
static int model_next(const struct mreq *r)
{
	return model_token_at(r->copy, r->n_copy, r->n_gen, r->h);
}

static double model_rand(struct ttsim_model *m)
{
	m->rng = rng_mix(m->rng);
	return (double)(m->rng >> 11) / 9007199254740992.0;
}

void ttsim_model_config_default(struct ttsim_model_config *c)
{
	memset(c, 0, sizeof(*c));
	c->slots = 8;
	c->max_model_len = 131072;
	c->seed = 0;
	c->garbage_rate = 0.0;
	c->generator = TTSIM_GEN_QWEN36;
	c->max_prefills = TTSIM_MAX_SLOTS;
	c->block_size = 16;
	c->cache_blocks = 4096;
	c->prefill_base_s = 0.015;
	c->prefill_token_s = 0.00025;
	c->decode_base_s = 0.012;
	c->decode_slot_s = 0.0006;
	c->forgone_s = 0.0015;
}

unsigned ttsim_model_running_rules(const struct ttsim_model_config *c)
{
	return c->arm | (c->generator == TTSIM_GEN_GENERIC ? TTSIM_RULE_PREFILLED : 0u);
}

const char *ttsim_model_trace_key(bool on_device_sampling, int width, bool sampling_only,
				  char *buf, size_t n)
{
	if (sampling_only)
		snprintf(buf, n, "%s", on_device_sampling ? "True" : "False");
	else
		snprintf(buf, n, "(%s, %d)", on_device_sampling ? "True" : "False", width);
	return buf;
}

enum status ttsim_model_new(const struct ttsim_model_config *c, struct ttsim_model **out,
			    struct status_info *si)
{
	struct ttsim_model *m = NULL;
	int i, dp = c->dp > 1 ? c->dp : 1;

	*out = NULL;
	if (c->slots < 1 || c->slots > TTSIM_MAX_SLOTS)
		return status_set(si, STATUS_USAGE, "slots %d: must be 1..%d", c->slots,
				  TTSIM_MAX_SLOTS);
	if (c->max_model_len < 2)
		return status_set(si, STATUS_USAGE, "max_model_len %lld: too small",
				  c->max_model_len);
	if (c->dp > 1 && c->slots % c->dp)
		return status_set(si, STATUS_USAGE, "dp %d: must divide the %d slots", c->dp, c->slots);
	if (!(c->garbage_rate >= 0 && c->garbage_rate <= 1))
		return status_set(si, STATUS_USAGE, "garbage rate: must be in [0, 1]");
	if (!(c->near_ties >= 0 && c->near_ties <= 1))
		return status_set(si, STATUS_USAGE, "near ties %g: want a chance in [0, 1]", c->near_ties);
	if (!(c->host_sampling >= 0 && c->host_sampling <= 1))
		return status_set(si, STATUS_USAGE, "host sampling rate: must be in [0, 1]");
	if (c->n_buckets < 0 || c->n_buckets > TTSIM_MAX_BUCKETS)
		return status_set(si, STATUS_USAGE, "at most %d decode buckets", TTSIM_MAX_BUCKETS);
	for (i = 0; i < c->n_buckets; i++)
		if (c->buckets[i] < 1 || c->buckets[i] > c->slots / dp ||
		    (i && c->buckets[i] <= c->buckets[i - 1]))
			return status_set(si, STATUS_USAGE, "decode buckets: want ascending widths in "
					  "1..%d (the rows of a chunk)", c->slots / dp);
	if (c->max_prefills < 1 || c->block_size < 1 || c->cache_blocks < 0 ||
	    c->cache_blocks > (1 << 22))
		return status_set(si, STATUS_USAGE, "bad prefill or cache configuration");
	m = calloc(1, sizeof(*m));
	if (!m)
		return status_set(si, STATUS_NOMEM, "model: out of memory");
	m->c = *c;
	m->n_dp = dp;
	m->rows = c->slots / dp;
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
		if (c->faults & TTSIM_FAULT_PREFIX_BLOCK) {
			m->cache_owner = calloc((size_t)c->cache_blocks, sizeof(*m->cache_owner));
			m->cache_owner_tok = calloc((size_t)c->cache_blocks, sizeof(int));
			m->stale = calloc((size_t)m->n_bucket, sizeof(*m->stale));
			if (!m->cache_owner || !m->cache_owner_tok || !m->stale) {
				ttsim_model_free(m);
				return status_set(si, STATUS_NOMEM, "model: out of memory");
			}
		}
	}
	for (i = 0; i < TTSIM_MAX_SLOTS; i++)
		m->remap[i] = i % m->rows;
	for (i = 0; i <= c->n_buckets; i++) {
		int w = c->trace_key_sampling ? 0 : i < c->n_buckets ? c->buckets[i] : m->rows, ods;

		for (ods = 0; ods < 2; ods++) {
			if (m->traces[ods][w])
				continue;
			m->traces[ods][w] = calloc(1, sizeof(struct trace));
			if (!m->traces[ods][w]) {
				ttsim_model_free(m);
				return status_set(si, STATUS_NOMEM, "model: out of memory");
			}
		}
	}
	ttsim_guard_name(c->arm_claimed, m->arm_name, sizeof(m->arm_name));
	m->rng = rng_mix(c->seed ^ 0x6761726261676521ull);
	m->rng_host = rng_mix(c->seed ^ 0x686f737473616d70ull);
	m->next_handle = 1;
	*out = m;
	return STATUS_OK;
}

static void model_req_free(struct mreq *r)
{
	if (!r)
		return;
	free(r->copy);
	free(r->prompt);
	free(r);
}

void ttsim_model_free(struct ttsim_model *m)
{
	struct mreq *r, *n;
	int s, k;

	if (!m)
		return;
	for (r = m->wait_head; r; r = n) {
		n = r->next;
		model_req_free(r);
	}
	for (s = 0; s < m->c.slots; s++)
		model_req_free(m->row[s]);
	for (k = 0; k <= TTSIM_MAX_SLOTS; k++) {
		free(m->traces[0][k]);
		free(m->traces[1][k]);
	}
	free(m->cache);
	free(m->cache_bucket);
	free(m->cache_owner);
	free(m->cache_owner_tok);
	free(m->stale);
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
			   m->c.generator == TTSIM_GEN_GENERIC ? "generic" : "qwen36",
			   m->c.trace_key_sampling ? "on_device_sampling" : "(on_device_sampling, batch)",
			   m->c.host_sampling, m->c.buckets, m->c.n_buckets);
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
	r->n_copy = model_copy_code(prompt, n_prompt, &r->copy);
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->n_prompt = n_prompt;
	r->max_tokens = max_tokens;
	r->user = user;
	r->forced = -1;
	r->first_sub = -1;
	r->row = -1;
	r->serial = -1;
	/* decided in arrival order, from its own generator, so the rate does not
	 * move the other random decisions */
	if (m->c.host_sampling > 0) {
		m->rng_host = rng_mix(m->rng_host);
		r->host_sampling = (double)(m->rng_host >> 11) / 9007199254740992.0 < m->c.host_sampling;
	}
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
	for (i = 0; i < m->n_cache; i++) {
		if (m->cache[i].tick > mid) {
			if (m->cache_owner && k != i) {
				memcpy(m->cache_owner[k], m->cache_owner[i], TTSIM_ID_MAX);
				m->cache_owner_tok[k] = m->cache_owner_tok[i];
			}
			m->cache[k++] = m->cache[i];
		} else if (m->stale) {
			/* PREFIX_BLOCK: the hash still leads to where the block was */
			size_t b = (size_t)(m->cache[i].hash & (uint64_t)(m->n_bucket - 1));

			m->stale[b].hash = m->cache[i].hash ? m->cache[i].hash : 1;
			m->stale[b].idx = i;
		}
	}
	if (k == m->n_cache)
		k = 0;
	m->n_cache = k;
	model_cache_rebuild(m);
}

/*
 * PREFIX_BLOCK: a block the cache no longer has whose hash still leads to
 * the memory it was in, now another block: its index, or -1.
 */
static int model_cache_stale(const struct ttsim_model *m, uint64_t h)
{
	const struct stale_ent *se;

	if (!m->stale)
		return -1;
	se = &m->stale[h & (uint64_t)(m->n_bucket - 1)];
	if (se->hash != h || se->idx >= m->n_cache || m->cache[se->idx].hash == h)
		return -1;
	return se->idx;
}

/* Cached prompt tokens (whole blocks, never the whole prompt), then inserts
 * the prompt's blocks, written by r. *served: with PREFIX_BLOCK, the last
 * block of the hit that was another request's (its index), else -1. */
static int model_cache_prefill(struct ttsim_model *m, const struct mreq *r, int *served)
{
	const int *prompt = r->prompt;
	uint64_t h = 0x6361636865ull;
	int b, i, n = r->n_prompt, n_blocks, hits = 0, e, bk;
	bool chain = true;

	*served = -1;
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
		if (chain && (e = model_cache_stale(m, h)) >= 0) {
			/* the defect: served as a hit, what is there is another's */
			hits++;
			*served = e;
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
		if (m->cache_owner) {
			snprintf(m->cache_owner[e], TTSIM_ID_MAX, "%s", r->id);
			m->cache_owner_tok[e] = r->pending;
		}
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

/* A request leaves its row: a hole until the next step fills or closes it.
 * The row keeps what the defect modes read of it: the request's next token. */
static void model_free_row(struct ttsim_model *m, struct mreq *r, bool aborted)
{
	struct ghost *g = &m->ghost[r->row];

	if (m->c.faults & (TTSIM_FAULT_ABORT_REUSE | TTSIM_FAULT_CONDENSE_STATE)) {
		g->set = true;
		g->aborted = aborted;
		g->tok = model_next(r);
		snprintf(g->id, sizeof(g->id), "%s", r->id);
	}
	m->row[r->row] = NULL;
	m->n_active[r->row / m->rows]--;
	r->row = -1;
	m->n_running--;
	m->gen++;
	m->reset_batch = true;
}

bool ttsim_model_host_sample(struct ttsim_model *m, unsigned long long handle)
{
	struct mreq *r;

	for (r = m->wait_head; r; r = r->next)
		if (r->handle == handle) {
			r->host_sampling = true;
			return true;
		}
	return false;
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
		r = m->row[s];
		if (r && r->handle == handle) {
			model_free_row(m, r, true);
			model_finish(m, r, s, true);
			return true;
		}
	}
	return false;
}

/* --- the persistent batch ---------------------------------------------- */

/*
 * CONDENSE_STATE: the request moved into `row` computes its next token with
 * what the row still held of the request that left it. The row's own state
 * is the mover's from then on.
 */
static void model_condense_state(struct ttsim_model *m, struct mreq *r, int row)
{
	struct ghost *g = &m->ghost[row];

	if ((m->c.faults & TTSIM_FAULT_CONDENSE_STATE) && g->set && strcmp(g->id, r->id)) {
		r->forced = g->tok;
		m->st.defects++;
		ttsim_audit_defect(m->audit, "condense-state", m->step, row, r->id, g->id, r->n_gen, g->tok);
	}
	g->set = false;
}

/*
 * vLLM's condense, per chunk: the highest rows move down into the holes
 * below them; the move goes into the slot remap the next decode hands the
 * generator (remap[i] = j: row i's data is where row j's was at the last
 * decode).
 */
static void model_condense(struct ttsim_model *m)
{
	int c, h, l, base;

	for (c = 0; c < m->n_dp; c++) {
		base = c * m->rows;
		for (;;) {
			for (h = 0; h < m->n_used[c] && m->row[base + h]; h++)
				;
			for (l = m->n_used[c] - 1; l >= 0 && !m->row[base + l]; l--)
				;
			if (h >= l)
				break;
			m->row[base + h] = m->row[base + l];
			m->row[base + h]->row = base + h;
			m->row[base + l] = NULL;
			m->remap[base + h] = m->remap[base + l];
			model_condense_state(m, m->row[base + h], base + h);
			m->ghost[base + l].set = false;
			m->gen++;
			m->reset_batch = true;
		}
		m->n_used[c] = l + 1;
	}
}

/* A new request's row: the chunk with the fewest requests, its lowest hole,
 * else the row after the last. The caller checked there is room. */
static int model_place(struct ttsim_model *m, struct mreq *r)
{
	int c, best = -1, i, base;

	for (c = 0; c < m->n_dp; c++)
		if (m->n_active[c] < m->rows && (best < 0 || m->n_active[c] < m->n_active[best]))
			best = c;
	base = best * m->rows;
	for (i = 0; i < m->n_used[best] && m->row[base + i]; i++)
		;
	if (i == m->n_used[best])
		m->n_used[best]++;
	m->row[base + i] = r;
	m->n_active[best]++;
	r->row = base + i;
	return base + i;
}

/* --- steps --------------------------------------------------------------- */

static void model_prefill(struct ttsim_model *m, struct ttsim_step *st)
{
	struct mreq *r = m->wait_head;
	int s, served;

	m->wait_head = r->next;
	if (!m->wait_head)
		m->wait_tail = NULL;
	r->next = NULL;
	m->n_waiting--;
	s = model_place(m, r);
	r->serial = m->next_serial++;
	m->n_running++;
	m->gen++;
	/* _slots_prefilled_since_decode: Generator.prefill_forward_text fills
	 * it; Qwen3.6's own prefill does not, unless the prefilled arm's patch
	 * restores it */
	if (m->c.generator == TTSIM_GEN_GENERIC || (m->c.arm & TTSIM_RULE_PREFILLED))
		m->prefilled[s] = 1;
	m->reset_batch = true;
	m->mode_switched = true;
	m->consec_prefills++;
	m->st.started++;
	m->st.prefills++;
	/* the rest of the step's state update closes the other holes */
	model_condense(m);

	r->h_prev = model_prompt_hash(m->c.seed, r->prompt, r->n_prompt);
	r->pending = model_token_at(r->copy, r->n_copy, 0, r->h_prev);
	r->cached = model_cache_prefill(m, r, &served);
	m->st.prompt_tokens += (unsigned long long)r->n_prompt;
	m->st.cached_tokens += (unsigned long long)r->cached;
	/* (the condense may have moved r: its row is r->row) */
	if (served >= 0 && strcmp(m->cache_owner[served], r->id)) {
		/* PREFIX_BLOCK: the first token from the block that was there */
		r->pending = m->cache_owner_tok[served];
		m->st.defects++;
		ttsim_audit_defect(m->audit, "prefix-block", m->step, r->row, r->id, m->cache_owner[served], 0,
				   r->pending);
	}
	if ((m->c.faults & TTSIM_FAULT_ABORT_REUSE) && m->ghost[r->row].set && m->ghost[r->row].aborted) {
		/* ABORT_REUSE: the row was not cleared after the cancel */
		r->pending = m->ghost[r->row].tok;
		m->st.defects++;
		ttsim_audit_defect(m->audit, "abort-reuse", m->step, r->row, r->id, m->ghost[r->row].id, 0,
				   r->pending);
	}
	m->ghost[r->row].set = false;
	r->h = model_absorb(r->h_prev, r->pending);
	r->n_gen = 1;

	ttsim_audit_request(m->audit, "start", r->id, r->row, m->step, 0, 0, false);
	ttsim_audit_prefill(m->audit, m->step, r->row, r->id, r->n_prompt, r->cached);
	st->kind = TTSIM_STEP_PREFILL;
	st->width = 1;
	st->seconds = m->c.prefill_base_s + m->c.prefill_token_s * (r->n_prompt - r->cached);
	if (r->n_gen >= r->max_tokens) {
		s = r->row;
		model_deliver(m, r, 0, r->pending);
		model_free_row(m, r, false);
		model_finish(m, r, s, false);
	}
}

static long long model_host_pos(const struct mreq *r)
{
	return (long long)r->n_prompt + r->n_gen - 1;
}

/* This decode's batch width per chunk (its trace key's batch): padded to the
 * chunk's rows, or the nearest bucket at or above the rows in use. */
static int model_width(const struct ttsim_model *m)
{
	int c, used = 0, i;

	if (!m->c.n_buckets)
		return m->rows;
	for (c = 0; c < m->n_dp; c++)
		if (m->n_used[c] > used)
			used = m->n_used[c];
	for (i = 0; i < m->c.n_buckets; i++)
		if (m->c.buckets[i] >= used)
			return m->c.buckets[i];
	return m->rows;
}

static struct trace *model_trace(struct ttsim_model *m, bool ods, int width)
{
	return m->traces[ods][m->c.trace_key_sampling ? 0 : width];
}

/*
 * The keep, per data-parallel chunk i of trace_inputs_decode[key][i]: reads
 * the buffers through the slot remap, evaluates the tracked rules, applies
 * the running code's, audits. Returns how many async-ahead tokens the
 * engaged arm gave up (its cost).
 */
static int model_keep(struct ttsim_model *m, const struct trace *t, int W)
{
	long long host_pos[TTSIM_MAX_SLOTS], slot_gen[TTSIM_MAX_SLOTS];
	long long dev_pos[TTSIM_MAX_SLOTS], buf_gen[TTSIM_MAX_SLOTS];
	int host_tok[TTSIM_MAX_SLOTS], dev_tok[TTSIM_MAX_SLOTS];
	const char *slot_req[TTSIM_MAX_SLOTS], *buf_req[TTSIM_MAX_SLOTS];
	unsigned char take[TTSIM_MAX_SLOTS], bare[TTSIM_MAX_SLOTS], rt[TTSIM_MAX_SLOTS];
	struct ttsim_merge mg;
	struct ttsim_rule_stats *rs;
	struct mreq *r;
	enum ttsim_guard_eval ev;
	int s, i, c, hb, db, D = t->width, n_forgone = 0, stale, j;
	bool fired;
	struct timespec ts;

	for (c = 0; c < m->n_dp; c++) {
		hb = c * m->rows;
		db = c * D;
		memset(&mg, 0, sizeof(mg));
		for (s = 0; s < W; s++) {
			r = m->row[hb + s];
			host_pos[s] = r ? model_host_pos(r) : -1;
			host_tok[s] = r ? r->pending : -1;
			slot_gen[s] = r ? r->serial : -1;
			slot_req[s] = r ? r->id : NULL;
		}
		mg.n_dev = (size_t)W;
		if (D < W) {
			/* narrower than the batch: host tokens (PR #48042); the
			 * buffer as read */
			mg.fallback = "shape";
			mg.n_dev = (size_t)D;
			for (s = 0; s < D; s++) {
				dev_pos[s] = t->pos[db + s];
				dev_tok[s] = t->tok[db + s];
			}
		} else {
			for (s = 0; s < W; s++)
				if (m->remap[hb + s] < 0 || m->remap[hb + s] >= D)
					break;
			if (s < W) {
				/* the remap points outside the buffer: host tokens */
				mg.fallback = "slot_remap";
				mg.n_dev = 0;
			}
			for (s = 0; s < W && !mg.fallback; s++) {
				j = db + m->remap[hb + s];
				dev_pos[s] = t->pos[j];
				dev_tok[s] = t->tok[j];
				buf_gen[s] = t->serial[j];
				buf_req[s] = t->req[j][0] ? t->req[j] : NULL;
			}
		}
		mg.step = m->step;
		mg.reset_batch = m->reset_batch;
		mg.mode_switched = m->mode_switched;
		mg.n_host = (size_t)W;
		mg.has_dp = m->n_dp > 1;
		mg.dp = c;
		mg.host_pos = host_pos;
		mg.dev_pos = dev_pos;
		mg.host_tok = host_tok;
		mg.dev_tok = dev_tok;
		mg.prefilled = m->prefilled + hb;
		mg.has_buf_step = true;
		mg.buf_step = t->step;
		mg.has_gen = true;
		mg.gen = m->gen;
		mg.buf_gen = t->gen;
		mg.slot_gen = slot_gen;
		mg.buf_slot_gen = mg.fallback ? NULL : buf_gen;
		mg.slot_req = slot_req;
		mg.buf_req = mg.fallback ? NULL : buf_req;
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
			for (s = 0; s < W; s++) {
				if (host_pos[s] == -1)
					continue;
				stale = ttsim_guard_stale(&mg, (size_t)s) == 1;
				rs->taken += rt[s];
				rs->substitutions += rt[s] && stale;
				rs->prevented += bare[s] && !rt[s] && stale;
				rs->forgone += bare[s] && !rt[s] && !stale;
			}
		}

		ttsim_guard_take(ttsim_model_running_rules(&m->c), &mg, take, NULL);
		m->st.fallbacks += mg.fallback != NULL;
		for (s = 0; s < W; s++) {
			r = m->row[hb + s];
			if (bare[s] && !take[s])
				n_forgone++;
			if (!take[s])
				continue;
			m->st.takes++;
			if (!buf_req[s] || strcmp(buf_req[s], r->id)) {
				int want, index = (int)(dev_pos[s] - r->n_prompt);

				want = dev_pos[s] == host_pos[s] ? r->pending : model_next(r);
				m->st.substitutions++;
				if (dev_tok[s] != want)
					m->st.changed++;
				if (!r->n_subs || index < r->first_sub)
					r->first_sub = index;
				r->n_subs++;
			}
			/* the device's token and position: at host_pos it replaces the
			 * pending token, one ahead it is the next one */
			if (dev_pos[s] == host_pos[s]) {
				r->pending = dev_tok[s];
				r->h = model_absorb(r->h_prev, r->pending);
			} else {
				r->forced = dev_tok[s];
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

/* _decode_forward_trace_text's host restage: the batch's inputs copied into
 * the trace's buffers. Running rows are written by the replay that follows;
 * an idle row gets -1, or garbage where the buffer's memory is reused. */
static void model_restage(struct ttsim_model *m, struct trace *t, int W)
{
	int c, s, d;

	t->width = W;
	for (c = 0; c < m->n_dp; c++)
		for (s = 0; s < W; s++) {
			if (m->row[c * m->rows + s])
				continue;
			d = c * W + s;
			t->garbage[d] = m->c.garbage_rate > 0 && model_rand(m) < m->c.garbage_rate;
			t->pos[d] = t->garbage[d] ? model_garbage(m) : -1;
			t->tok[d] = -1;
			t->req[d][0] = 0;
			t->serial[d] = -1;
		}
	m->st.restages += (unsigned long long)m->n_dp;
}

/* The replay: every running row's sampled token and its position, one ahead
 * of the host (finishing requests included: the device ran them); garbage
 * moves on by one (ttnn.plus_one). */
static void model_replay(struct ttsim_model *m, struct trace *t)
{
	struct mreq *r;
	int c, s, d, W = t->width;

	for (c = 0; c < m->n_dp; c++)
		for (s = 0; s < W; s++) {
			r = m->row[c * m->rows + s];
			d = c * W + s;
			if (!r) {
				if (t->garbage[d])
					t->pos[d]++;
				continue;
			}
			t->pos[d] = model_host_pos(r) + 1;
			t->tok[d] = model_next(r);
			snprintf(t->req[d], TTSIM_ID_MAX, "%s", r->id);
			t->serial[d] = r->serial;
			t->garbage[d] = 0;
		}
	t->step = m->step;
	t->gen = m->gen;
	t->captured = true;
}

static void model_decode(struct ttsim_model *m, struct ttsim_step *st)
{
	int active[TTSIM_MAX_SLOTS] = { 0 }, done[TTSIM_MAX_SLOTS];
	bool moved[TTSIM_MAX_SLOTS];
	int n_active = 0, n_done = 0, s, i, n_forgone = 0, next, W = model_width(m), c;
	struct mreq *r;
	struct trace *t;
	bool ods = true, restage;
	char key[48];

	for (s = 0; s < m->c.slots; s++)
		if (m->row[s]) {
			active[n_active++] = s;
			if (m->row[s]->host_sampling)
				ods = false;
		}
	t = model_trace(m, ods, W);
	/* Generator.decode_forward: the keep needs on-device sampling, a reset or
	 * a mode switch, and the key's trace inputs (trace mode is on) */
	if (!m->c.no_async && ods && (m->reset_batch || m->mode_switched) && t->captured) {
		if (m->c.keep_gate && !m->c.supports_async_decode) {
			/* the gate refuses: host tokens only, no merge; the kit's
			 * event each time (an undeclared key left out, as it does) */
			ttsim_audit_gate(m->audit, m->step, m->c.capability_declared,
					 m->c.capability_declared ?
					 "model declares supports_async_decode False" :
					 "model does not declare supports_async_decode (absent means not supported)");
		} else {
			n_forgone = model_keep(m, t, W);
			st->merged = true;
		}
	}
	/* _decode_forward_trace_text: restage on a reset (or a mode switch), host
	 * sampling, a sampling-mode or a batch change, and at the capture */
	restage = !t->captured || m->reset_batch || m->mode_switched || !ods ||
		  (m->have_prev && (m->prev_ods != ods || m->prev_width != W));
	m->have_prev = true;
	m->prev_ods = ods;
	m->prev_width = W;
	if (restage)
		model_restage(m, t, W);
	ttsim_model_trace_key(ods, W, m->c.trace_key_sampling, key, sizeof(key));
	for (c = 0; c < m->n_dp; c++)
		ttsim_audit_trace(m->audit, m->step, restage ? "restage" : "replay", key,
				  m->n_dp > 1 ? c : -1);
	m->reset_batch = m->mode_switched = false;
	memset(m->prefilled, 0, sizeof(m->prefilled));
	for (s = 0; s < TTSIM_MAX_SLOTS; s++) {
		/* REDECODE: which rows the layout change moved */
		moved[s] = m->remap[s] != s % m->rows;
		m->remap[s] = s % m->rows;
	}
	m->consec_prefills = 0;
	m->st.decodes++;
	m->st.host_sampled += !ods;
	ttsim_audit_decode(m->audit, m->step, active, (size_t)n_active);

	for (i = 0; i < n_active; i++) {
		r = m->row[active[i]];
		model_deliver(m, r, r->n_gen - 1, r->pending);
		next = r->forced >= 0 ? r->forced : model_next(r);
		if (m->c.near_ties > 0 && n_active > 1 && r->forced < 0 && !r->n_copy &&
		    model_near(r->h, m->c.near_ties)) {
			/* batch arithmetic flips a near tie: the runner-up */
			next = model_alt(r->h, next);
			ttsim_audit_defect(m->audit, "near-tie", m->step, active[i], r->id, NULL, r->n_gen, next);
		}
		if ((m->c.faults & TTSIM_FAULT_REDECODE) && moved[active[i]] && r->forced < 0) {
			/* the pending token decoded again after the layout change */
			next = r->pending;
			m->st.defects++;
			ttsim_audit_defect(m->audit, "redecode", m->step, active[i], r->id, NULL, r->n_gen, next);
		}
		if ((m->c.faults & TTSIM_FAULT_OOV) && ods && r->n_gen == TTSIM_OOV_AT &&
		    (!m->c.oov_batched || n_active > 1)) {
			/* read from trace memory no one wrote: past the vocabulary */
			next = (int)(0x40000000u + (unsigned)(rng_mix(r->h ^ 0x6f6f76ull) & 0x3fffffffu));
			m->st.defects++;
			ttsim_audit_defect(m->audit, "oov", m->step, active[i], r->id, NULL, r->n_gen, next);
		}
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
	model_replay(m, t);
	for (i = 0; i < n_done; i++) {
		r = m->row[done[i]];
		model_free_row(m, r, false);
		model_finish(m, r, done[i], false);
	}
	st->kind = TTSIM_STEP_DECODE;
	st->width = n_active;
	st->seconds = m->c.decode_base_s + m->c.decode_slot_s * n_active +
		      m->c.forgone_s * n_forgone;
}

void ttsim_model_step(struct ttsim_model *m, struct ttsim_step *st)
{
	memset(st, 0, sizeof(*st));
	if (m->wait_head && m->n_running < m->c.slots &&
	    (m->consec_prefills < m->c.max_prefills || m->n_running == 0)) {
		model_prefill(m, st);
	} else if (m->n_running > 0) {
		model_condense(m);
		model_decode(m, st);
	} else {
		return;
	}
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

void ttsim_model_score(unsigned long long seed, double near_ties, const int *toks, int n, int pos, int *top,
		       int *alt, bool *near)
{
	uint64_t h = model_prompt_hash(seed, toks, pos);
	int *copy, n_copy = model_copy_code(toks, n, &copy), j;

	*near = false;
	if (n_copy > 0) {
		/* a copy task's next piece follows the piece before it; the
		 * first comes after the prompt's words */
		*top = copy[0];
		for (j = 0; j < n_copy; j++)
			if (toks[pos - 1] == copy[j]) {
				*top = copy[(j + 1) % n_copy];
				break;
			}
	} else {
		*top = model_greedy(h);
		*near = model_near(h, near_ties);
	}
	*alt = model_alt(h, *top);
	free(copy);
}

double ttsim_model_lp(int tok, int top, int alt, bool near)
{
	if (tok == top)
		return near ? -0.69 : -0.05;
	if (tok == alt)
		return near ? -0.70 : -4.0;
	return -14.0;
}

void ttsim_model_reference(unsigned long long seed, const int *prompt, int n_prompt, int n,
			   int *out)
{
	uint64_t h = model_prompt_hash(seed, prompt, n_prompt);
	int i, *copy, n_copy = model_copy_code(prompt, n_prompt, &copy);

	for (i = 0; i < n; i++) {
		out[i] = model_token_at(copy, n_copy, i, h);
		h = model_absorb(h, out[i]);
	}
	free(copy);
}
