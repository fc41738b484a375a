#include "rule.h"

#include <stdio.h>
#include <string.h>

/* g holds the active set on entry; clear the slots this guard refuses. */
typedef void (*rule_allow_fn)(const struct merge_event *m, const struct rule_ctx *ctx, uint8_t *g);
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

static int in_bound(const struct rule_ctx *ctx, int64_t pos)
{
	return pos >= -1 && pos < ctx->max_pos;
}

static void allow_bare(const struct merge_event *m, const struct rule_ctx *ctx, uint8_t *g)
{
	(void)m, (void)ctx, (void)g;
}

static void why_bare(const struct merge_event *m, const struct rule_ctx *ctx, uint32_t s,
		     char *buf, size_t n)
{
	(void)ctx;
	if (m->dev_pos[s] == m->host_pos[s])
		snprintf(buf, n, "bare: dev_pos == host_pos");
	else if (m->dev_pos[s] == m->host_pos[s] + 1)
		snprintf(buf, n, "bare: dev_pos == host_pos + 1");
	else
		snprintf(buf, n, "bare: positions do not match");
}

static void allow_prefilled(const struct merge_event *m, const struct rule_ctx *ctx, uint8_t *g)
{
	uint32_t s;

	(void)ctx;
	for (s = 0; s < m->n_host; s++)
		if (m->prefilled[s])
			g[s] = 0;
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

static void allow_batch(const struct merge_event *m, const struct rule_ctx *ctx, uint8_t *g)
{
	(void)ctx;
	if (!batch_matches(m, NULL))
		memset(g, 0, m->n_host);
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
	return m->buf_step == m->step - 1 && !m->mode_switched;
}

static void allow_lifetime(const struct merge_event *m, const struct rule_ctx *ctx, uint8_t *g)
{
	(void)ctx;
	if (!lifetime_ok(m))
		memset(g, 0, m->n_host);
}

static void why_lifetime(const struct merge_event *m, const struct rule_ctx *ctx, uint32_t s,
			 char *buf, size_t n)
{
	(void)ctx, (void)s;
	if (lifetime_ok(m))
		snprintf(buf, n, "lifetime: buffer written by the preceding step %lld",
			 (long long)m->buf_step);
	else if (m->mode_switched)
		snprintf(buf, n, "lifetime: mode switched since the buffer was written");
	else
		snprintf(buf, n, "lifetime: buffer from step %lld, %lld steps old",
			 (long long)m->buf_step, (long long)(m->step - m->buf_step));
}

static void allow_stamp(const struct merge_event *m, const struct rule_ctx *ctx, uint8_t *g)
{
	uint32_t s;

	(void)ctx;
	if (m->has_slot_gen) {
		for (s = 0; s < m->n_host; s++)
			if (m->slot_gen[s] != m->buf_slot_gen[s])
				g[s] = 0;
	} else if (m->gen != m->buf_gen) {
		memset(g, 0, m->n_host);
	}
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

static void allow_bound(const struct merge_event *m, const struct rule_ctx *ctx, uint8_t *g)
{
	uint32_t s;

	for (s = 0; s < m->n_host; s++)
		if (!in_bound(ctx, m->dev_pos[s]))
			g[s] = 0;
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
	unsigned seen[N_BASE] = { 0 };
	const char *p = name;
	size_t i;

	memset(out, 0, sizeof(*out));
	for (;;) {
		const char *plus = strchr(p, '+');
		size_t len = plus ? (size_t)(plus - p) : strlen(p);
		for (i = 0; i < N_BASE; i++)
			if (strlen(rule_table[i].name) == len && !strncmp(rule_table[i].name, p, len))
				break;
		if (i == N_BASE)
			return status_set(si, STATUS_NOTFOUND,
					  "'%.*s' is not a rule (bare, prefilled, batch, lifetime, stamp, bound)",
					  (int)len, p);
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

enum rule_outcome rule_eval(const struct rule *r, const struct merge_event *m,
			    const struct rule_ctx *ctx, uint8_t *take, uint8_t *allowed)
{
	uint8_t *g = allowed ? allowed : take;
	uint32_t s;
	unsigned b, i;

	if (m->n_dev < m->n_host)
		return RULE_SHAPE_FALLBACK;
	for (b = 0; b < 4; b++)
		if ((r->needs & (1u << b)) && !rule_has(m, ctx, 1u << b))
			return RULE_SKIPPED;
	for (s = 0; s < m->n_host; s++)
		g[s] = m->host_pos[s] != -1;
	for (i = 0; i < r->n_parts; i++)
		rule_table[r->parts[i]].allow(m, ctx, g);
	for (s = 0; s < m->n_host; s++)
		take[s] = g[s] && rule_bare_take(m, s);
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
