/*
 * rule.c - the guard rules: the base table, combinations, and their
 * allowed sets as bit masks over 64-slot windows.
 */
#include "analyzer/rule.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/jdoc.h"
#include "analyzer/tally.h"

/* The allowed set on a window: g holds the active set on entry. */
typedef uint64_t (*rule_allow_fn)(const struct merge_event *m, const struct rule_facts *f,
				  const struct rule_window *w, uint64_t g);
/* One clause on slot s: why it is allowed or refused. */
typedef void (*rule_why_fn)(const struct merge_event *m, const struct rule_ctx *ctx, uint32_t s,
			    char *buf, size_t n);

struct rule_def {
	const char *name;
	unsigned needs;
	rule_allow_fn allow;
	rule_why_fn why;
	const char *doc;
};

int rule_step_is_prev(int64_t buf_step, int64_t step)
{
	return step != INT64_MIN && buf_step == step - 1;
}

const char *rule_step_diff(int64_t a, int64_t b, char *buf, size_t n)
{
	/* the difference of two int64 needs 65 bits: sign and magnitude apart */
	if (a >= b)
		snprintf(buf, n, "%" PRIu64, (uint64_t)a - (uint64_t)b);
	else
		snprintf(buf, n, "-%" PRIu64, (uint64_t)b - (uint64_t)a);
	return buf;
}

static int in_bound(const struct rule_ctx *ctx, int64_t pos)
{
	return pos >= -1 && pos < ctx->max_pos;
}

static uint64_t allow_bare(const struct merge_event *m, const struct rule_facts *f,
			   const struct rule_window *w, uint64_t g)
{
	(void)m, (void)f, (void)w;
	return g;
}

static void why_bare(const struct merge_event *m, const struct rule_ctx *ctx, uint32_t s,
		     char *buf, size_t n)
{
	(void)ctx;
	if (m->dev_pos[s] == m->host_pos[s])
		snprintf(buf, n, "bare: dev_pos == host_pos");
	else if (m->host_pos[s] < INT64_MAX && m->dev_pos[s] == m->host_pos[s] + 1)
		snprintf(buf, n, "bare: dev_pos == host_pos + 1");
	else
		snprintf(buf, n, "bare: positions do not match");
}

static uint64_t allow_prefilled(const struct merge_event *m, const struct rule_facts *f,
				const struct rule_window *w, uint64_t g)
{
	(void)m, (void)f;
	return g & ~w->prefilled;
}

static void why_prefilled(const struct merge_event *m, const struct rule_ctx *ctx, uint32_t s,
			  char *buf, size_t n)
{
	(void)ctx;
	snprintf(buf, n, m->prefilled[s] ? "prefilled: slot was prefilled since the last decode"
					 : "prefilled: slot not prefilled since the last decode");
}

/* The buffer must show the batch's active-slot pattern over [0, H). */
static int batch_matches(const struct merge_event *m, uint32_t *first_diff)
{
	uint32_t s;

	for (s = 0; s < m->n_host; s++)
		if ((m->dev_pos[s] != -1) != (m->host_pos[s] != -1)) {
			if (first_diff)
				*first_diff = s;
			return 0;
		}
	return 1;
}

static uint64_t allow_batch(const struct merge_event *m, const struct rule_facts *f,
			    const struct rule_window *w, uint64_t g)
{
	(void)m, (void)w;
	return f->batch_match ? g : 0;
}

static void why_batch(const struct merge_event *m, const struct rule_ctx *ctx, uint32_t s,
		      char *buf, size_t n)
{
	uint32_t d = 0;

	(void)ctx, (void)s;
	if (batch_matches(m, &d))
		snprintf(buf, n, "batch: buffer's active pattern matches the batch");
	else
		snprintf(buf, n, "batch: buffer's active pattern differs from the batch at slot %u "
			 "(dev %lld, host %lld)", d, (long long)m->dev_pos[d], (long long)m->host_pos[d]);
}

static int lifetime_ok(const struct merge_event *m)
{
	return rule_step_is_prev(m->buf_step, m->step) && !m->mode_switched;
}

static uint64_t allow_lifetime(const struct merge_event *m, const struct rule_facts *f,
			       const struct rule_window *w, uint64_t g)
{
	(void)m, (void)w;
	return f->lifetime_ok ? g : 0;
}

static void why_lifetime(const struct merge_event *m, const struct rule_ctx *ctx, uint32_t s,
			 char *buf, size_t n)
{
	char d[32];

	(void)ctx, (void)s;
	if (lifetime_ok(m))
		snprintf(buf, n, "lifetime: buffer written by the preceding step %lld",
			 (long long)m->buf_step);
	else if (m->mode_switched)
		snprintf(buf, n, "lifetime: mode switched since the buffer was written");
	else
		snprintf(buf, n, "lifetime: buffer from step %lld, %s steps old",
			 (long long)m->buf_step, rule_step_diff(m->step, m->buf_step, d, sizeof(d)));
}

static uint64_t allow_stamp(const struct merge_event *m, const struct rule_facts *f,
			    const struct rule_window *w, uint64_t g)
{
	if (m->has_slot_gen)
		return g & w->gen_eq;
	return f->gen_match ? g : 0;
}

static void why_stamp(const struct merge_event *m, const struct rule_ctx *ctx, uint32_t s,
		      char *buf, size_t n)
{
	(void)ctx;
	if (m->has_slot_gen)
		snprintf(buf, n, "stamp: slot_gen %lld %s buf_slot_gen %lld",
			 (long long)m->slot_gen[s], m->slot_gen[s] == m->buf_slot_gen[s] ? "==" : "!=",
			 (long long)m->buf_slot_gen[s]);
	else
		snprintf(buf, n, "stamp: gen %lld %s buf_gen %lld", (long long)m->gen,
			 m->gen == m->buf_gen ? "==" : "!=", (long long)m->buf_gen);
}

static uint64_t allow_bound(const struct merge_event *m, const struct rule_facts *f,
			    const struct rule_window *w, uint64_t g)
{
	(void)m, (void)f;
	return g & w->in_bound;
}

static void why_bound(const struct merge_event *m, const struct rule_ctx *ctx, uint32_t s,
		      char *buf, size_t n)
{
	if (in_bound(ctx, m->dev_pos[s]))
		snprintf(buf, n, "bound: dev_pos within [-1, %lld)", (long long)ctx->max_pos);
	else
		snprintf(buf, n, "bound: dev_pos %lld outside [-1, %lld)", (long long)m->dev_pos[s],
			 (long long)ctx->max_pos);
}

/* The base guards. Table order is the canonical order of a combination's name. */
static const struct rule_def rule_table[] = {
	{ "bare", 0, allow_bare, why_bare,
	  "unguarded: take where dev_pos == host_pos or host_pos + 1" },
	{ "prefilled", RULE_NEEDS_PREFILLED, allow_prefilled, why_prefilled,
	  "slot-reuse mask: refuse slots prefilled since the last decode" },
	{ "batch", 0, allow_batch, why_batch,
	  "composition guard: refuse all unless the buffer's active pattern matches the batch" },
	{ "lifetime", RULE_NEEDS_BUF_STEP, allow_lifetime, why_lifetime,
	  "lifetime guard: refuse all unless the buffer is from step - 1 and mode did not switch" },
	{ "stamp", RULE_NEEDS_STAMP, allow_stamp, why_stamp,
	  "generation stamp: refuse slots whose stamp differs from the buffer's" },
	{ "bound", RULE_NEEDS_MAX_POS, allow_bound, why_bound,
	  "garbage bound: refuse slots whose dev_pos is < -1 or >= max_pos" },
};

#define N_BASE (sizeof(rule_table) / sizeof(rule_table[0]))

#define RULE_FLAG_ROW(arm, flag) { #arm, flag },
static const struct { const char *name, *flag; } rule_flags[] = { RULE_GUARD_FLAGS(RULE_FLAG_ROW) };
#undef RULE_FLAG_ROW

const char *rule_guard_flag(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(rule_flags) / sizeof(rule_flags[0]); i++)
		if (!strcmp(name, rule_flags[i].name))
			return rule_flags[i].flag;
	return NULL;
}

size_t rule_base_count(void)
{
	return N_BASE;
}

const char *rule_base_name(size_t i)
{
	return i < N_BASE ? rule_table[i].name : NULL;
}

const char *rule_base_doc(size_t i)
{
	return i < N_BASE ? rule_table[i].doc : NULL;
}

enum status rule_parse(const char *name, struct rule *out, struct status_info *si)
{
	return rule_parse_len(name, strlen(name), out, si);
}

enum status rule_parse_len(const char *name, size_t n, struct rule *out, struct status_info *si)
{
	unsigned seen[N_BASE] = { 0 };
	const char *p = name, *end = name + n;
	size_t i;

	memset(out, 0, sizeof(*out));
	for (;;) {
		const char *plus = memchr(p, '+', (size_t)(end - p));
		size_t len = plus ? (size_t)(plus - p) : (size_t)(end - p);
		for (i = 0; i < N_BASE; i++)
			if (strlen(rule_table[i].name) == len && !strncmp(rule_table[i].name, p, len))
				break;
		if (i == N_BASE) {
			const char *nul = memchr(p, '\0', len);
			memset(out, 0, sizeof(*out));
			return status_set(si, STATUS_NOTFOUND, "'%.*s%s' is not a rule (bare, prefilled, "
					  "batch, lifetime, stamp, bound)",
					  (int)(nul ? (size_t)(nul - p) : len), p, nul ? "\\u0000..." : "");
		}
		seen[i] = 1;
		if (!plus)
			break;
		p = plus + 1;
	}
	/* canonical: table order, no repeats; "bare" inside a combination adds nothing */
	for (i = 0; i < N_BASE; i++) {
		if (!seen[i] || (i == 0 && (seen[1] | seen[2] | seen[3] | seen[4] | seen[5])))
			continue;
		if (out->n_parts)
			strcat(out->name, "+");
		strcat(out->name, rule_table[i].name);
		out->parts[out->n_parts++] = (unsigned)i;
		out->needs |= rule_table[i].needs;
	}
	return STATUS_OK;
}

enum status rule_list_parse(const char *list, struct rule *out, size_t max, size_t *n,
			    struct status_info *si)
{
	char item[RULE_NAME_MAX * 2];
	const char *p = list;
	enum status st;
	size_t i;

	*n = 0;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		struct rule r;
		int dup = 0;
		if (len == 0 || len >= sizeof(item))
			return status_set(si, STATUS_USAGE, "bad rule list '%s'", list);
		memcpy(item, p, len);
		item[len] = '\0';
		if ((st = rule_parse(item, &r, si)))
			return st;
		for (i = 0; i < *n; i++)
			dup |= !strcmp(out[i].name, r.name);
		if (!dup) {
			if (*n == max)
				return status_set(si, STATUS_LIMIT, "more than %zu rules", max);
			out[(*n)++] = r;
		}
		if (!comma)
			break;
		p = comma + 1;
	}
	return STATUS_OK;
}

size_t rule_list_default(struct rule *out, size_t max)
{
	size_t i;

	for (i = 0; i < N_BASE && i < max; i++)
		rule_parse(rule_table[i].name, &out[i], NULL);
	return i;
}

int rule_active(const struct merge_event *m, uint32_t s)
{
	return s < m->n_host && m->host_pos[s] != -1;
}

int rule_bare_take(const struct merge_event *m, uint32_t s)
{
	return rule_active(m, s) && s < m->n_dev &&
	       (m->dev_pos[s] == m->host_pos[s] ||
		(m->host_pos[s] < INT64_MAX && m->dev_pos[s] == m->host_pos[s] + 1));
}

static int rule_has(const struct merge_event *m, const struct rule_ctx *ctx, unsigned need)
{
	switch (need) {
	case RULE_NEEDS_PREFILLED: return m->has_prefilled;
	case RULE_NEEDS_BUF_STEP: return m->has_buf_step;
	case RULE_NEEDS_STAMP: return m->has_slot_gen || m->has_gen;
	case RULE_NEEDS_MAX_POS: return ctx->max_pos > 0;
	}
	return 1;
}

static const char *const need_names[] = { "prefilled", "buf_step", "stamp fields", "max_pos" };

void rule_missing(const struct rule *r, const struct merge_event *m, const struct rule_ctx *ctx,
		  char *buf, size_t n)
{
	unsigned b;
	size_t len = 0;

	buf[0] = '\0';
	for (b = 0; b < 4; b++)
		if ((r->needs & (1u << b)) && !rule_has(m, ctx, 1u << b) && len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? ", " : "",
						need_names[b]);
}

/* The per-slot masks of slots [i, n) one by one (a window's tail, or every slot without AVX2). */
static inline __attribute__((always_inline)) void
window_slots(const struct merge_event *m, const struct rule_ctx *ctx, int64_t garbage_pos,
	     uint32_t base, uint32_t i, uint32_t n, struct rule_window *out)
{
	const int64_t *host = m->host_pos + base, *dev = m->dev_pos + base;
	int64_t max_pos = ctx->max_pos;

	/* branch-free: each slot sets its bit in every mask */
	for (; i < n; i++) {
		int64_t h = host[i], d = dev[i];
		uint64_t act = h != -1, match = d == h || (h < INT64_MAX && d == h + 1);
		out->active |= act << i;
		out->dev_active |= (uint64_t)(d != -1) << i;
		out->bare |= (act & match) << i;
		out->in_bound |= (uint64_t)(d >= -1 && d < max_pos) << i;
		out->garbage |= (uint64_t)(d < -1 || d >= garbage_pos) << i;
	}
}

/* A mask of the bytes flags[0..n) that are not 0. */
static inline __attribute__((always_inline)) uint64_t window_bytes(const uint8_t *flags, uint32_t i,
								   uint32_t n, uint64_t bits)
{
	for (; i < n; i++)
		bits |= (uint64_t)(flags[i] != 0) << i;
	return bits;
}

static inline __attribute__((always_inline)) uint64_t window_eq(const int64_t *a, const int64_t *b,
								uint32_t i, uint32_t n, uint64_t bits)
{
	for (; i < n; i++)
		bits |= (uint64_t)(a[i] == b[i]) << i;
	return bits;
}

static void window_fill_plain(const struct merge_event *m, const struct rule_ctx *ctx,
			      int64_t garbage_pos, uint32_t base, uint32_t n, struct rule_window *out)
{
	window_slots(m, ctx, garbage_pos, base, 0, n, out);
	if (m->has_prefilled)
		out->prefilled = window_bytes(m->prefilled + base, 0, n, 0);
	if (m->has_slot_gen)
		out->gen_eq = window_eq(m->slot_gen + base, m->buf_slot_gen + base, 0, n, 0);
	if (m->has_taken)
		out->taken = window_bytes(m->taken + base, 0, n, 0);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

static inline __attribute__((target("avx2"), always_inline)) uint64_t bits4(__m256i x)
{
	return (uint64_t)(unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(x));
}

/* The same masks, four slots to a compare (and 32 flags to a compare). */
__attribute__((target("avx2"))) static void window_fill_avx2(const struct merge_event *m,
							     const struct rule_ctx *ctx,
							     int64_t garbage_pos, uint32_t base,
							     uint32_t n, struct rule_window *out)
{
	const int64_t *host = m->host_pos + base, *dev = m->dev_pos + base;
	const __m256i minus1 = _mm256_set1_epi64x(-1), minus2 = _mm256_set1_epi64x(-2);
	const __m256i one = _mm256_set1_epi64x(1), top = _mm256_set1_epi64x(INT64_MAX);
	const __m256i maxp = _mm256_set1_epi64x(ctx->max_pos), gpos = _mm256_set1_epi64x(garbage_pos);
	uint64_t active = 0, dev_active = 0, bare = 0, in_b = 0, garbage = 0;
	uint32_t i;

	for (i = 0; i + 4 <= n; i += 4) {
		__m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(host + i));
		__m256i d = _mm256_loadu_si256((const __m256i *)(const void *)(dev + i));
		__m256i act = _mm256_cmpeq_epi64(h, minus1);          /* inactive, inverted below */
		__m256i eq = _mm256_cmpeq_epi64(d, h);
		__m256i eq1 = _mm256_andnot_si256(_mm256_cmpeq_epi64(h, top),
						  _mm256_cmpeq_epi64(d, _mm256_add_epi64(h, one)));
		__m256i ge = _mm256_cmpgt_epi64(d, minus2);           /* d >= -1 */
		active |= bits4(act) << i;
		dev_active |= bits4(_mm256_cmpeq_epi64(d, minus1)) << i;
		bare |= bits4(_mm256_andnot_si256(act, _mm256_or_si256(eq, eq1))) << i;
		in_b |= bits4(_mm256_and_si256(ge, _mm256_cmpgt_epi64(maxp, d))) << i;
		garbage |= bits4(_mm256_and_si256(ge, _mm256_cmpgt_epi64(gpos, d))) << i;
	}
	/* the compares above marked the opposite of three masks, over the slots done */
	{
		uint64_t done = i == 64 ? ~0ull : (1ull << i) - 1;
		out->active = ~active & done;
		out->dev_active = ~dev_active & done;
		out->bare = bare;
		out->in_bound = in_b;
		out->garbage = ~garbage & done;
	}
	window_slots(m, ctx, garbage_pos, base, i, n, out);
	if (m->has_prefilled || m->has_taken) {
		const __m256i z = _mm256_setzero_si256();
		uint64_t pre = 0, tak = 0;
		for (i = 0; i + 32 <= n; i += 32) {
			if (m->has_prefilled)
				pre |= (uint64_t)(uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(
					_mm256_loadu_si256((const __m256i *)(const void *)(m->prefilled + base + i)), z)) << i;
			if (m->has_taken)
				tak |= (uint64_t)(uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(
					_mm256_loadu_si256((const __m256i *)(const void *)(m->taken + base + i)), z)) << i;
		}
		if (m->has_prefilled)
			out->prefilled = window_bytes(m->prefilled + base, i, n, pre);
		if (m->has_taken)
			out->taken = window_bytes(m->taken + base, i, n, tak);
	}
	if (m->has_slot_gen) {
		const int64_t *a = m->slot_gen + base, *b = m->buf_slot_gen + base;
		uint64_t eqs = 0;
		for (i = 0; i + 4 <= n; i += 4)
			eqs |= bits4(_mm256_cmpeq_epi64(
				_mm256_loadu_si256((const __m256i *)(const void *)(a + i)),
				_mm256_loadu_si256((const __m256i *)(const void *)(b + i)))) << i;
		out->gen_eq = window_eq(a, b, i, n, eqs);
	}
}
#endif

void rule_window_fill(const struct merge_event *m, const struct rule_ctx *ctx,
		      int64_t garbage_pos, uint32_t w, struct rule_window *out)
{
	uint32_t base = w * 64, n = m->n_host - base < 64 ? m->n_host - base : 64;

	memset(out, 0, sizeof(*out));
	out->base = base;
	out->n = n;
#if defined(__x86_64__) && defined(__GNUC__)
	if (jdoc_simd_avx2()) {
		window_fill_avx2(m, ctx, garbage_pos, base, n, out);
		return;
	}
#endif
	window_fill_plain(m, ctx, garbage_pos, base, n, out);
}

void rule_facts_fill(const struct merge_event *m, const struct rule_window *w0,
		     struct rule_facts *out)
{
	if (w0 && m->n_host <= 64)
		out->batch_match = w0->active == w0->dev_active;
	else
		out->batch_match = batch_matches(m, NULL);
	out->lifetime_ok = m->has_buf_step && lifetime_ok(m);
	out->gen_match = m->gen == m->buf_gen;
}

enum rule_outcome rule_outcome_of(const struct rule *r, const struct merge_event *m,
				  const struct rule_ctx *ctx)
{
	unsigned b;

	if (m->n_dev < m->n_host)
		return RULE_SHAPE_FALLBACK;
	for (b = 0; b < 4; b++)
		if ((r->needs & (1u << b)) && !rule_has(m, ctx, 1u << b))
			return RULE_SKIPPED;
	return RULE_EVALUATED;
}

uint64_t rule_window_allow(const struct rule *r, const struct merge_event *m,
			   const struct rule_facts *f, const struct rule_window *w)
{
	uint64_t g = w->active;
	unsigned i;

	for (i = 0; i < r->n_parts; i++)
		g = rule_table[r->parts[i]].allow(m, f, w, g);
	return g;
}

enum rule_outcome rule_eval(const struct rule *r, const struct merge_event *m,
			    const struct rule_ctx *ctx, uint8_t *take, uint8_t *allowed)
{
	enum rule_outcome o = rule_outcome_of(r, m, ctx);
	struct rule_window w;
	struct rule_facts f;
	uint32_t k, i;

	if (o != RULE_EVALUATED)
		return o;
	for (k = 0; k < rule_n_windows(m->n_host); k++) {
		uint64_t g;
		rule_window_fill(m, ctx, TALLY_DEFAULT_GARBAGE_POS, k, &w);
		if (k == 0)
			rule_facts_fill(m, &w, &f);
		g = rule_window_allow(r, m, &f, &w);
		for (i = 0; i < w.n; i++) {
			take[w.base + i] = (uint8_t)((g & w.bare) >> i & 1);
			if (allowed)
				allowed[w.base + i] = (uint8_t)(g >> i & 1);
		}
	}
	return RULE_EVALUATED;
}

void rule_why(const struct rule *r, const struct merge_event *m, const struct rule_ctx *ctx,
	      uint32_t s, char *buf, size_t n)
{
	size_t len = 0;
	unsigned i;

	buf[0] = '\0';
	for (i = 0; i < r->n_parts && len < n; i++) {
		if (i)
			len += (size_t)snprintf(buf + len, n - len, "; ");
		if (len < n)
			rule_table[r->parts[i]].why(m, ctx, s, buf + len, n - len);
		len = strlen(buf);
	}
}
