/*
 * event.c - audit events from a jdoc tree (event_decode) or straight from the
 * line through the jdoc scanner (event_scan), with the same result. Both
 * read the members of each kind from one field table (MERGE_FIELDS and its
 * siblings, below): a plain member is one row there.
 */
#include "analyzer/event.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

/*
 * The members of the last line of one kind ("ev" value), in order: writers
 * emit the same keys in the same order on every line, so the next line's
 * member names are checked with one compare each instead of being read and
 * looked up. A mismatch only costs the compare; the order is then relearned.
 */
#define SCAN_PRED_KNOWN 8              /* one entry per name of scan_ev_names */
#define SCAN_PRED_KINDS (SCAN_PRED_KNOWN + 8)   /* and the least recently used of others */
#define SCAN_PRED_FIELDS 32
struct scan_pred {
	char ev[16];
	uint32_t ev_len;               /* 0: an empty entry */
	uint32_t n;
	uint64_t used;                 /* for replacing the least recently used */
	uint8_t field[SCAN_PRED_FIELDS];
	struct jdoc_scan_name name[SCAN_PRED_FIELDS];
};

/*
 * The text of one array of the last merge that event_scan read, and what its
 * reading left in the decoder's array: the next merge whose array has the
 * same bytes takes it from there with one memcmp instead of a parse (the
 * device's buffers, the generations and the taken flags mostly stay as they
 * were from one step to the next). The reading depends on nothing but those
 * bytes (and the cap and depth, which are the decoder's), so the two are
 * the same. A memo is dropped before anything writes its array.
 */
#define SCAN_MEMO_TEXT 768             /* longer arrays are always parsed */
#define SCAN_MEMO_SLOTS 64             /* string arrays: entries kept as offsets */
enum { MEMO_DEV_POS, MEMO_DEV_TOK, MEMO_SLOT_GEN, MEMO_BUF_SLOT_GEN, MEMO_BUF_REQ, MEMO_TAKEN,
       MEMO_N };
struct scan_memo {
	uint32_t len;                  /* 0: nothing kept */
	uint32_t n;                    /* entries */
	bool vals;                     /* the array holds the values (not only validated) */
	uint32_t off[SCAN_MEMO_SLOTS]; /* string arrays: 1 + entry offset in the text, 0 null */
	char text[SCAN_MEMO_TEXT];
};

struct event_decoder {
	uint32_t max_slots;
	struct scan_memo *memo;        /* [MEMO_N], event_scan's; NULL until the first merge */
	/* each array holds max_slots entries */
	int64_t *host_pos, *dev_pos, *host_tok, *dev_tok, *slot_gen, *buf_slot_gen;
	int64_t *prefilled_raw;        /* event_scan: the listed slots, applied once H is known */
	uint8_t *prefilled, *taken;
	const char **slot_req, **buf_req;
	uint32_t *slot_req_len, *buf_req_len;
	char *arena;                   /* event_scan: unescaped strings */
	size_t cap_arena;
	struct scan_pred *pred;        /* event_scan: member order of recent lines, by "ev" */
	uint64_t tick;
	void *block;                   /* one allocation behind the arrays */
};

int event_str_is(const char *z, uint32_t n, const char *lit)
{
	size_t len = strlen(lit);

	return z && n == len && !memcmp(z, lit, len);
}

struct event_decoder *event_decoder_new_opts(const struct event_decoder_opts *o)
{
	struct event_decoder *dec;
	uint32_t n = o && o->max_slots ? o->max_slots : EVENT_MAX_SLOTS;
	size_t sz;
	char *b;

	if (n > EVENT_SLOTS_LIMIT)
		return NULL;
	dec = calloc(1, sizeof(*dec));
	if (!dec)
		return NULL;
	sz = (size_t)n * (7 * sizeof(int64_t) + 2 * sizeof(char *) + 2 * sizeof(uint32_t) + 2);
	dec->block = calloc(1, sz);
	if (!dec->block) {
		free(dec);
		return NULL;
	}
	dec->max_slots = n;
	b = dec->block;
	dec->host_pos = (int64_t *)(void *)b; b += n * sizeof(int64_t);
	dec->dev_pos = (int64_t *)(void *)b; b += n * sizeof(int64_t);
	dec->host_tok = (int64_t *)(void *)b; b += n * sizeof(int64_t);
	dec->dev_tok = (int64_t *)(void *)b; b += n * sizeof(int64_t);
	dec->slot_gen = (int64_t *)(void *)b; b += n * sizeof(int64_t);
	dec->buf_slot_gen = (int64_t *)(void *)b; b += n * sizeof(int64_t);
	dec->prefilled_raw = (int64_t *)(void *)b; b += n * sizeof(int64_t);
	dec->slot_req = (const char **)(void *)b; b += n * sizeof(char *);
	dec->buf_req = (const char **)(void *)b; b += n * sizeof(char *);
	dec->slot_req_len = (uint32_t *)(void *)b; b += n * sizeof(uint32_t);
	dec->buf_req_len = (uint32_t *)(void *)b; b += n * sizeof(uint32_t);
	dec->prefilled = (uint8_t *)b; b += n;
	dec->taken = (uint8_t *)b;
	return dec;
}

struct event_decoder *event_decoder_new(void)
{
	return event_decoder_new_opts(NULL);
}

void event_decoder_free(struct event_decoder *dec)
{
	if (!dec)
		return;
	free(dec->pred);
	free(dec->memo);
	free(dec->block);
	free(dec->arena);
	free(dec);
}

uint32_t event_decoder_max_slots(const struct event_decoder *dec)
{
	return dec->max_slots;
}

static void memo_drop(struct event_decoder *dec)
{
	size_t i;

	if (dec->memo)
		for (i = 0; i < MEMO_N; i++)
			dec->memo[i].len = 0;
}

/* The array at sc->p has the memo's bytes (and vals when values are wanted). */
static inline bool memo_hit(const struct scan_memo *mo, const struct jdoc_scan *sc, bool vals)
{
	return mo->len && (mo->vals || !vals) && sc->p < sc->end &&
	       (size_t)(sc->end - sc->p) >= mo->len && sc->depth + 1 <= sc->max_depth &&
	       !memcmp(sc->p, mo->text, mo->len);
}

static inline void memo_keep(struct scan_memo *mo, const char *from, const char *to, bool vals,
			     uint32_t n)
{
	size_t len = (size_t)(to - from);

	if (len > SCAN_MEMO_TEXT)
		return;
	memcpy(mo->text, from, len);
	mo->len = (uint32_t)len;
	mo->n = n;
	mo->vals = vals;
}

/* A hit moves the scan past the array (its values are in the decoder); a miss drops the memo. */
static bool memo_take(struct scan_memo *mo, struct jdoc_scan *sc, bool vals, uint32_t *n)
{
	if (!memo_hit(mo, sc, vals)) {
		mo->len = 0;   /* the parse about to run writes the array */
		return false;
	}
	sc->p += mo->len;
	*n = mo->n;
	return true;
}

static int memo_int_array(struct scan_memo *mo, struct jdoc_scan *sc, int64_t *dst, size_t cap,
			  uint32_t *n)
{
	const char *p = sc->p;
	int rc;

	if (mo && memo_take(mo, sc, dst != NULL, n))
		return 1;
	rc = jdoc_scan_int_array(sc, dst, cap, n);
	if (mo && rc == 1)
		memo_keep(mo, p, sc->p, dst != NULL, *n);
	return rc;
}

static int memo_bool_array(struct scan_memo *mo, struct jdoc_scan *sc, uint8_t *dst, size_t cap,
			   uint32_t *n)
{
	const char *p = sc->p;
	int rc = mo && memo_take(mo, sc, true, n) ? 1 : jdoc_scan_bool_array(sc, dst, cap, n);

	if (mo && rc == 1 && !mo->len)
		memo_keep(mo, p, sc->p, true, *n);
	return rc;
}

/* Strings stay in the input unless escaped: a hit points the entries into this line. */
static int memo_str_array(struct scan_memo *mo, struct jdoc_scan *sc, const char **dst,
			  uint32_t *lens, size_t cap, uint32_t *n)
{
	const char *p = sc->p;
	char *arena = sc->arena;
	uint32_t i;
	int rc;

	if (!mo)
		return jdoc_scan_str_array(sc, dst, lens, cap, n);
	if (memo_take(mo, sc, true, n)) {
		for (i = 0; i < mo->n; i++)
			dst[i] = mo->off[i] ? p + mo->off[i] - 1 : NULL;
		return 1;
	}
	rc = jdoc_scan_str_array(sc, dst, lens, cap, n);
	if (rc == 1 && sc->arena == arena && *n <= SCAN_MEMO_SLOTS) {
		for (i = 0; i < *n; i++)
			mo->off[i] = dst[i] ? (uint32_t)(dst[i] - p) + 1 : 0;
		memo_keep(mo, p, sc->p, true, *n);
	}
	return rc;
}

static enum status bad(struct status_info *si, const struct jval *v, enum status st,
		       const char *fmt, const char *field, const char *detail)
{
	if (si && v)
		si->byte = (long)v->off + 1;
	return status_set(si, st, fmt, field, detail);
}

static enum status get_int(const struct jdoc *doc, const struct jval *obj, const char *key,
			   bool required, bool *present, int64_t *out, struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key);

	*present = false;
	if (!v || (!required && v->type == JT_NULL)) {
		if (required)
			return status_set(si, STATUS_PARSE, "%s missing", key);
		return STATUS_OK;
	}
	if (v->type == JT_REAL && v->int_overflow)
		return bad(si, v, STATUS_PARSE, "%s is %s", key, "outside int64");
	if (v->type != JT_INT)
		return bad(si, v, STATUS_PARSE, "%s is not an integer (%s)", key, jdoc_typename(v));
	*present = true;
	*out = v->u.i;
	return STATUS_OK;
}

static enum status get_bool(const struct jdoc *doc, const struct jval *obj, const char *key,
			    bool *out, struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key);

	*out = false;
	if (!v || v->type == JT_NULL)
		return STATUS_OK;
	if (v->type != JT_TRUE && v->type != JT_FALSE)
		return bad(si, v, STATUS_PARSE, "%s is not a boolean (%s)", key, jdoc_typename(v));
	*out = v->type == JT_TRUE;
	return STATUS_OK;
}

static enum status get_str(const struct jdoc *doc, const struct jval *obj, const char *key,
			   const char **out, uint32_t *len, struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key);

	*out = NULL;
	*len = 0;
	if (!v || v->type == JT_NULL)
		return STATUS_OK;
	if (v->type != JT_STR)
		return bad(si, v, STATUS_PARSE, "%s is not a string (%s)", key, jdoc_typename(v));
	*out = v->u.s;
	*len = v->n;
	return STATUS_OK;
}

/* An optional count (dp, rank): an integer >= 0. */
static enum status get_index(const struct jdoc *doc, const struct jval *obj, const char *key,
			     bool *present, int64_t *out, struct status_info *si)
{
	enum status st = get_int(doc, obj, key, false, present, out, si);

	if (!st && *present && *out < 0)
		return bad(si, jdoc_get(doc, obj, key), STATUS_PARSE, "%s is %s", key, "negative");
	return st;
}

/*
 * An int array into dst (cap EVENT_MAX_SLOTS). *n = entries, or UINT32_MAX
 * when absent (null counts as absent for optional fields).
 */
static enum status get_int_array(const struct jdoc *doc, const struct jval *obj, const char *key,
				 bool required, int64_t *dst, uint32_t max, uint32_t *n,
				 struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key), *e;
	uint32_t i = 0;
	char name[64];

	*n = UINT32_MAX;
	if (!v || (!required && v->type == JT_NULL)) {
		if (required)
			return status_set(si, STATUS_PARSE, "%s missing", key);
		return STATUS_OK;
	}
	if (v->type != JT_ARR)
		return bad(si, v, STATUS_PARSE, "%s is not an integer array (%s)", key, jdoc_typename(v));
	if (v->n > max) {
		if (si)
			si->byte = (long)v->off + 1;
		return status_set(si, STATUS_LIMIT, "%s has %u entries, more than %u", key, v->n, max);
	}
	for (e = jdoc_kid(doc, v); e; e = jdoc_next(doc, e), i++) {
		if (e->type == JT_INT) {
			dst[i] = e->u.i;
			continue;
		}
		snprintf(name, sizeof(name), "%s[%u]", key, i);
		if (e->type == JT_REAL && e->int_overflow)
			return bad(si, e, STATUS_PARSE, "%s is %s", name, "outside int64");
		return bad(si, e, STATUS_PARSE, "%s is not an integer (%s)", name, jdoc_typename(e));
	}
	*n = i;
	return STATUS_OK;
}

static enum status check_len(const char *key, uint32_t n, uint32_t h, struct status_info *si)
{
	if (n != h)
		return status_set(si, STATUS_PARSE, "%s has %u entries, host_pos %u", key, n, h);
	return STATUS_OK;
}

static enum status get_req_array(const struct jdoc *doc, const struct jval *obj, const char *key,
				 uint32_t h, const char **dst, uint32_t *lens, bool *present,
				 struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key), *e;
	uint32_t i = 0;

	*present = false;
	if (!v || v->type == JT_NULL)
		return STATUS_OK;
	if (v->type != JT_ARR)
		return bad(si, v, STATUS_PARSE, "%s is not an array (%s)", key, jdoc_typename(v));
	if (v->n != h) {
		if (si)
			si->byte = (long)v->off + 1;
		return status_set(si, STATUS_PARSE, "%s has %u entries, host_pos %u", key, v->n, h);
	}
	for (e = jdoc_kid(doc, v); e; e = jdoc_next(doc, e), i++) {
		if (e->type == JT_NULL) {
			dst[i] = NULL;
			lens[i] = 0;
		} else if (e->type == JT_STR) {
			dst[i] = e->u.s;
			lens[i] = e->n;
		} else {
			char name[64];
			snprintf(name, sizeof(name), "%s[%u]", key, i);
			return bad(si, e, STATUS_PARSE, "%s is not a string or null (%s)", name,
				   jdoc_typename(e));
		}
	}
	*present = true;
	return STATUS_OK;
}

/* --- the field tables ------------------------------------------------------ */

/*
 * Every member name of the format, once: its id (the scan path's bit) and
 * its text. Both paths read the tables below, so that a member is added in
 * one place: a row here when the name is new, a row in its kind's table,
 * and the field in event.h.
 */
#define EVENT_NAMES(X)                                                          \
	X(SF_STEP, "step") X(SF_HOST_POS, "host_pos") X(SF_DEV_POS, "dev_pos")  \
	X(SF_RESET, "reset_batch") X(SF_MODE, "mode_switched")                  \
	X(SF_HOST_TOK, "host_tok") X(SF_DEV_TOK, "dev_tok")                     \
	X(SF_PREFILLED, "prefilled") X(SF_BUF_STEP, "buf_step") X(SF_GEN, "gen") \
	X(SF_BUF_GEN, "buf_gen") X(SF_SLOT_GEN, "slot_gen")                     \
	X(SF_BUF_SLOT_GEN, "buf_slot_gen") X(SF_SLOT_REQ, "slot_req")           \
	X(SF_BUF_REQ, "buf_req") X(SF_TAKEN, "taken") X(SF_ARM, "arm")          \
	X(SF_T, "t") X(SF_DP, "dp") X(SF_RANK, "rank") X(SF_EV, "ev")           \
	X(SF_SLOTS, "slots") X(SF_MAX_MODEL_LEN, "max_model_len")               \
	X(SF_SLOT, "slot") X(SF_PHASE, "phase") X(SF_REQ, "req") X(SF_OP, "op") \
	X(SF_KEY, "key") X(SF_KEEP, "keep") X(SF_SUPPORTS, "supports_async_decode") \
	X(SF_FORCE, "force") X(SF_REASON, "reason")

#define EV_ENUM(id, lit) id,
enum scan_field { EVENT_NAMES(EV_ENUM) SF_N, SF_UNKNOWN = 63 };
#undef EV_ENUM

#define EV_NAME(id, lit) [id] = lit,
static const char *const event_field_name[SF_N] = { EVENT_NAMES(EV_NAME) };
#undef EV_NAME

/*
 * The members each kind decodes, in the order the tree reads them (the
 * first bad one is the one its message names). X(id, how, field, aux),
 * field and aux members of the kind's struct:
 *   INT    an optional integer; aux says it was there (not null)
 *   INT0   an optional integer, 0 when absent or null
 *   INDEX  an optional integer >= 0 (dp, rank); aux says it was there
 *   BOOL   an optional boolean, false when absent or null
 *   BOOLH  BOOL, with aux saying it was there
 *   STR    an optional string (NULL when absent), aux its length
 *   SPEC   its own readers: merge_tree_<field> and merge_scan_<field> (the
 *          required members, the arrays and the members read in pairs)
 * Members the kind does not list are validated and passed over.
 */
#define MERGE_FIELDS(X)                                 \
	X(SF_STEP, SPEC, step, -)                       \
	X(SF_HOST_POS, SPEC, host_pos, -)               \
	X(SF_DEV_POS, SPEC, dev_pos, -)                 \
	X(SF_RESET, BOOL, reset_batch, -)               \
	X(SF_MODE, BOOL, mode_switched, -)              \
	X(SF_HOST_TOK, SPEC, host_tok, -)               \
	X(SF_DEV_TOK, SPEC, dev_tok, -)                 \
	X(SF_PREFILLED, SPEC, prefilled, -)             \
	X(SF_BUF_STEP, INT, buf_step, has_buf_step)     \
	X(SF_GEN, SPEC, gen, -)                         \
	X(SF_BUF_GEN, SPEC, buf_gen, -)                 \
	X(SF_SLOT_GEN, SPEC, slot_gen, -)               \
	X(SF_BUF_SLOT_GEN, SPEC, buf_slot_gen, -)       \
	X(SF_SLOT_REQ, SPEC, slot_req, -)               \
	X(SF_BUF_REQ, SPEC, buf_req, -)                 \
	X(SF_TAKEN, SPEC, taken, -)                     \
	X(SF_ARM, STR, arm, arm_len)                    \
	X(SF_T, SPEC, t, -)                             \
	X(SF_DP, INDEX, dp, has_dp)                     \
	X(SF_RANK, INDEX, rank, has_rank)

/* max_model_len is also checked >= 0, after the table (the tree's message). */
#define CONFIG_FIELDS(X)                                        \
	X(SF_SLOTS, INT0, slots, -)                             \
	X(SF_MAX_MODEL_LEN, INT, max_model_len, has_max_model_len) \
	X(SF_ARM, STR, arm, arm_len)                            \
	X(SF_RANK, INDEX, rank, has_rank)

#define CONTEXT_FIELDS(X)                       \
	X(SF_STEP, INT, step, has_step)         \
	X(SF_SLOT, INT, slot, has_slot)         \
	X(SF_PHASE, STR, phase, phase_len)      \
	X(SF_REQ, STR, req, req_len)            \
	X(SF_OP, STR, op, op_len)               \
	X(SF_KEY, STR, key, key_len)            \
	X(SF_DP, INDEX, dp, has_dp)             \
	X(SF_RANK, INDEX, rank, has_rank)

#define GATE_FIELDS(X)                                          \
	X(SF_STEP, INT, step, has_step)                         \
	X(SF_KEEP, BOOLH, keep, has_keep)                       \
	X(SF_SUPPORTS, BOOLH, supports_async_decode, has_supports) \
	X(SF_FORCE, BOOL, force, -)                             \
	X(SF_REASON, STR, reason, reason_len)                   \
	X(SF_DP, INDEX, dp, has_dp)                             \
	X(SF_RANK, INDEX, rank, has_rank)

/*
 * The tree's reading of a row, into the kind's struct `e` (doc, obj, si and
 * st in scope); SPEC rows call merge_tree_<field>.
 */
#define TREE_INT(id, f, aux)   get_int(doc, obj, event_field_name[id], false, &e->aux, &e->f, si)
#define TREE_INT0(id, f, aux)  get_int(doc, obj, event_field_name[id], false, &present, &e->f, si)
#define TREE_INDEX(id, f, aux) get_index(doc, obj, event_field_name[id], &e->aux, &e->f, si)
#define TREE_BOOL(id, f, aux)  get_bool(doc, obj, event_field_name[id], &e->f, si)
#define TREE_BOOLH(id, f, aux) get_bool_has(doc, obj, event_field_name[id], &e->aux, &e->f, si)
#define TREE_STR(id, f, aux)   get_str(doc, obj, event_field_name[id], &e->f, &e->aux, si)
#define TREE_SPEC(id, f, aux)  merge_tree_##f(dec, doc, obj, e, si)
#define TREE_ROW(id, how, f, aux) if ((st = TREE_##how(id, f, aux))) return st;

/* The scanner's reading of a row into `e` (sc in scope): 1 read, 0 null, -1 decline. */
#define SCAN_INT(id, f, aux)   scan_opt_int(sc, &e->aux, &e->f)
#define SCAN_INT0(id, f, aux)  scan_opt_int(sc, &present, &e->f)
#define SCAN_INDEX(id, f, aux) scan_opt_index(sc, &e->aux, &e->f)
#define SCAN_BOOL(id, f, aux)  scan_opt_bool(sc, &e->f)
#define SCAN_BOOLH(id, f, aux) scan_opt_bool_has(sc, &e->aux, &e->f)
#define SCAN_STR(id, f, aux)   scan_opt_str(sc, &e->f, &e->aux)
#define SCAN_SPEC(id, f, aux)  merge_scan_##f(dec, sc, want, e, x)
#define SCAN_CASE(id, how, f, aux) case id: return SCAN_##how(id, f, aux);

/* What the scanner clears before a line (SPEC fields: scan_merge_finish and scan_event). */
#define CLEAR_INT(f, aux)   e->f = 0; e->aux = false;
#define CLEAR_INT0(f, aux)  e->f = 0;
#define CLEAR_INDEX(f, aux) e->f = 0; e->aux = false;
#define CLEAR_BOOL(f, aux)  e->f = false;
#define CLEAR_BOOLH(f, aux) e->f = false; e->aux = false;
#define CLEAR_STR(f, aux)   e->f = NULL; e->aux = 0;
#define CLEAR_SPEC(f, aux)
#define CLEAR_ROW(id, how, f, aux) CLEAR_##how(f, aux)

#define SFB(f) (1ull << (f))
#define FIELD_BIT(id, how, f, aux) | SFB(id)

static enum status get_bool_has(const struct jdoc *doc, const struct jval *obj, const char *key,
				bool *present, bool *out, struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, key);

	*present = v && v->type != JT_NULL;
	return get_bool(doc, obj, key, out, si);
}

/*
 * The tree's readers of a merge's SPEC members, in table order. Pairs (gen
 * and buf_gen, slot_gen and buf_slot_gen, slot_req and buf_req) are read
 * by the second one's reader, both at once.
 */
static enum status merge_tree_step(struct event_decoder *dec, const struct jdoc *doc,
				   const struct jval *obj, struct merge_event *m,
				   struct status_info *si)
{
	bool present;

	(void)dec;
	return get_int(doc, obj, "step", true, &present, &m->step, si);
}

static enum status merge_tree_host_pos(struct event_decoder *dec, const struct jdoc *doc,
				       const struct jval *obj, struct merge_event *m,
				       struct status_info *si)
{
	enum status st = get_int_array(doc, obj, "host_pos", true, dec->host_pos, dec->max_slots,
				       &m->n_host, si);

	m->host_pos = dec->host_pos;
	return st;
}

static enum status merge_tree_dev_pos(struct event_decoder *dec, const struct jdoc *doc,
				      const struct jval *obj, struct merge_event *m,
				      struct status_info *si)
{
	enum status st = get_int_array(doc, obj, "dev_pos", true, dec->dev_pos, dec->max_slots,
				       &m->n_dev, si);

	m->dev_pos = dec->dev_pos;
	return st;
}

static enum status merge_tree_host_tok(struct event_decoder *dec, const struct jdoc *doc,
				       const struct jval *obj, struct merge_event *m,
				       struct status_info *si)
{
	uint32_t n;
	enum status st = get_int_array(doc, obj, "host_tok", false, dec->host_tok, dec->max_slots,
				       &n, si);

	m->n_host_tok = n == UINT32_MAX ? 0 : n;
	m->host_tok = dec->host_tok;
	return st;
}

static enum status merge_tree_dev_tok(struct event_decoder *dec, const struct jdoc *doc,
				      const struct jval *obj, struct merge_event *m,
				      struct status_info *si)
{
	uint32_t n;
	enum status st = get_int_array(doc, obj, "dev_tok", false, dec->dev_tok, dec->max_slots,
				       &n, si);

	m->n_dev_tok = n == UINT32_MAX ? 0 : n;
	m->dev_tok = dec->dev_tok;
	return st;
}

/* prefilled lists slot numbers; kept as membership flags over [0, H). */
static enum status merge_tree_prefilled(struct event_decoder *dec, const struct jdoc *doc,
					const struct jval *obj, struct merge_event *m,
					struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, "prefilled");
	uint32_t h = m->n_host;

	memset(dec->prefilled, 0, h);
	m->prefilled = dec->prefilled;
	if (v && v->type != JT_NULL) {
		const struct jval *e;
		uint32_t i = 0;
		if (v->type != JT_ARR)
			return bad(si, v, STATUS_PARSE, "%s is not an integer array (%s)", "prefilled",
				   jdoc_typename(v));
		for (e = jdoc_kid(doc, v); e; e = jdoc_next(doc, e), i++) {
			char name[64];
			if (e->type == JT_INT) {
				/* a slot outside [0, H) cannot be active: nothing to mask */
				if (e->u.i >= 0 && e->u.i < h)
					dec->prefilled[e->u.i] = 1;
				continue;
			}
			snprintf(name, sizeof(name), "prefilled[%u]", i);
			if (e->type == JT_REAL && e->int_overflow)
				return bad(si, e, STATUS_PARSE, "%s is %s", name, "outside int64");
			return bad(si, e, STATUS_PARSE, "%s is not an integer (%s)", name,
				   jdoc_typename(e));
		}
		m->has_prefilled = true;
	}
	return STATUS_OK;
}

static enum status merge_tree_gen(struct event_decoder *dec, const struct jdoc *doc,
				  const struct jval *obj, struct merge_event *m,
				  struct status_info *si)
{
	(void)dec, (void)doc, (void)obj, (void)m, (void)si;
	return STATUS_OK;   /* with buf_gen */
}

static enum status merge_tree_buf_gen(struct event_decoder *dec, const struct jdoc *doc,
				      const struct jval *obj, struct merge_event *m,
				      struct status_info *si)
{
	bool present, p2;
	enum status st;

	(void)dec;
	if ((st = get_int(doc, obj, "gen", false, &present, &m->gen, si)) ||
	    (st = get_int(doc, obj, "buf_gen", false, &p2, &m->buf_gen, si)))
		return st;
	m->has_gen = present && p2;
	return STATUS_OK;
}

static enum status merge_tree_slot_gen(struct event_decoder *dec, const struct jdoc *doc,
				       const struct jval *obj, struct merge_event *m,
				       struct status_info *si)
{
	(void)dec, (void)doc, (void)obj, (void)m, (void)si;
	return STATUS_OK;   /* with buf_slot_gen */
}

static enum status merge_tree_buf_slot_gen(struct event_decoder *dec, const struct jdoc *doc,
					   const struct jval *obj, struct merge_event *m,
					   struct status_info *si)
{
	uint32_t n, n2, h = m->n_host;
	enum status st;

	if ((st = get_int_array(doc, obj, "slot_gen", false, dec->slot_gen, dec->max_slots, &n, si)) ||
	    (st = get_int_array(doc, obj, "buf_slot_gen", false, dec->buf_slot_gen, dec->max_slots, &n2, si)))
		return st;
	if (n != UINT32_MAX && (st = check_len("slot_gen", n, h, si)))
		return st;
	if (n2 != UINT32_MAX && (st = check_len("buf_slot_gen", n2, h, si)))
		return st;
	m->has_slot_gen = n != UINT32_MAX && n2 != UINT32_MAX;
	m->slot_gen = dec->slot_gen;
	m->buf_slot_gen = dec->buf_slot_gen;
	return STATUS_OK;
}

static enum status merge_tree_slot_req(struct event_decoder *dec, const struct jdoc *doc,
				       const struct jval *obj, struct merge_event *m,
				       struct status_info *si)
{
	(void)dec, (void)doc, (void)obj, (void)m, (void)si;
	return STATUS_OK;   /* with buf_req */
}

static enum status merge_tree_buf_req(struct event_decoder *dec, const struct jdoc *doc,
				      const struct jval *obj, struct merge_event *m,
				      struct status_info *si)
{
	uint32_t h = m->n_host;
	bool present, p2;
	enum status st;

	if ((st = get_req_array(doc, obj, "slot_req", h, dec->slot_req, dec->slot_req_len, &present,
				 si)) ||
	    (st = get_req_array(doc, obj, "buf_req", h, dec->buf_req, dec->buf_req_len, &p2, si)))
		return st;
	m->has_req = present && p2;
	m->slot_req = dec->slot_req;
	m->buf_req = dec->buf_req;
	m->slot_req_len = dec->slot_req_len;
	m->buf_req_len = dec->buf_req_len;
	return STATUS_OK;
}

static enum status merge_tree_taken(struct event_decoder *dec, const struct jdoc *doc,
				    const struct jval *obj, struct merge_event *m,
				    struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, "taken");
	uint32_t h = m->n_host;

	m->taken = dec->taken;
	if (v && v->type != JT_NULL) {
		const struct jval *e;
		uint32_t i = 0;
		if (v->type != JT_ARR)
			return bad(si, v, STATUS_PARSE, "%s is not a boolean array (%s)", "taken",
				   jdoc_typename(v));
		if (v->n != h) {
			if (si)
				si->byte = (long)v->off + 1;
			return status_set(si, STATUS_PARSE, "taken has %u entries, host_pos %u", v->n, h);
		}
		for (e = jdoc_kid(doc, v); e; e = jdoc_next(doc, e), i++) {
			if (e->type != JT_TRUE && e->type != JT_FALSE) {
				char name[64];
				snprintf(name, sizeof(name), "taken[%u]", i);
				return bad(si, e, STATUS_PARSE, "%s is not a boolean (%s)", name,
					   jdoc_typename(e));
			}
			dec->taken[i] = e->type == JT_TRUE;
		}
		m->has_taken = true;
	}
	return STATUS_OK;
}

static enum status merge_tree_t(struct event_decoder *dec, const struct jdoc *doc,
				const struct jval *obj, struct merge_event *m,
				struct status_info *si)
{
	const struct jval *v = jdoc_get(doc, obj, "t");

	(void)dec;
	if (v && v->type != JT_NULL) {
		if (v->type == JT_INT)
			m->t = (double)v->u.i;
		else if (v->type == JT_REAL)
			m->t = v->u.d;
		else
			return bad(si, v, STATUS_PARSE, "%s is not a number (%s)", "t", jdoc_typename(v));
		m->has_t = true;
	}
	return STATUS_OK;
}

static enum status decode_merge(struct event_decoder *dec, const struct jdoc *doc,
				const struct jval *obj, struct merge_event *e,
				struct status_info *si)
{
	enum status st;

	memset(e, 0, sizeof(*e));
	memo_drop(dec);   /* the tree writes the arrays the memos stand for */
	MERGE_FIELDS(TREE_ROW)
	return STATUS_OK;
}

static enum status decode_config(const struct jdoc *doc, const struct jval *obj,
				 struct config_event *e, struct status_info *si)
{
	enum status st;
	bool present;

	memset(e, 0, sizeof(*e));
	CONFIG_FIELDS(TREE_ROW)
	if (e->max_model_len < 0)
		return status_set(si, STATUS_PARSE, "max_model_len is negative (%lld)",
				  (long long)e->max_model_len);
	return STATUS_OK;
}

static enum status decode_context(const struct jdoc *doc, const struct jval *obj, const char *ev,
				  struct context_event *e, struct status_info *si)
{
	enum status st;

	memset(e, 0, sizeof(*e));
	e->ev = ev;
	CONTEXT_FIELDS(TREE_ROW)
	return STATUS_OK;
}

static enum status decode_gate(const struct jdoc *doc, const struct jval *obj,
			       struct gate_event *e, struct status_info *si)
{
	enum status st;

	memset(e, 0, sizeof(*e));
	GATE_FIELDS(TREE_ROW)
	return STATUS_OK;
}

/* The kind an "ev" string names: bytes and length, a NUL included. */
static enum event_kind event_kind_of(const char *z, uint32_t n)
{
	switch (n) {
	case 4: if (!memcmp(z, "gate", 4)) return EVENT_GATE; break;
	case 5:
		if (!memcmp(z, "merge", 5)) return EVENT_MERGE;
		if (!memcmp(z, "trace", 5)) return EVENT_CONTEXT;
		break;
	case 6: if (!memcmp(z, "config", 6) || !memcmp(z, "decode", 6)) return
			z[0] == 'c' ? EVENT_CONFIG : EVENT_CONTEXT;
		break;
	case 7: if (!memcmp(z, "prefill", 7) || !memcmp(z, "request", 7)) return EVENT_CONTEXT; break;
	case 12: if (!memcmp(z, "width_change", 12)) return EVENT_CONTEXT; break;
	}
	return EVENT_OTHER;
}

/* The "ev" names of the format, for event_scan (NUL-terminated, static), and their kinds. */
static const char *const scan_ev_names[SCAN_PRED_KNOWN] = {
	"merge", "decode", "prefill", "request", "config", "trace", "gate", "width_change"
};
static const enum event_kind scan_ev_kinds[SCAN_PRED_KNOWN] = {
	EVENT_MERGE, EVENT_CONTEXT, EVENT_CONTEXT, EVENT_CONTEXT, EVENT_CONFIG, EVENT_CONTEXT,
	EVENT_GATE, EVENT_CONTEXT
};

/* The index of z[0..n) in scan_ev_names, or -1. */
static int scan_ev_id(const char *z, uint32_t n)
{
	switch (n) {
	case 4: return memcmp(z, "gate", 4) ? -1 : 6;
	case 5: return !memcmp(z, "merge", 5) ? 0 : !memcmp(z, "trace", 5) ? 5 : -1;
	case 6: return !memcmp(z, "decode", 6) ? 1 : !memcmp(z, "config", 6) ? 4 : -1;
	case 7: return !memcmp(z, "prefill", 7) ? 2 : !memcmp(z, "request", 7) ? 3 : -1;
	case 12: return memcmp(z, "width_change", 12) ? -1 : 7;
	}
	return -1;
}

enum status event_decode(struct event_decoder *dec, const struct jdoc *doc,
			 const struct jval *obj, struct event *out, struct status_info *si)
{
	const struct jval *ev = jdoc_get(doc, obj, "ev");

	memset(out, 0, sizeof(*out));
	if (!ev || ev->type != JT_STR)
		return bad(si, ev, STATUS_PARSE, "%s is not a string (%s)", "ev", jdoc_typename(ev));
	out->ev = ev->u.s;
	out->ev_len = ev->n;
	out->kind = event_kind_of(ev->u.s, ev->n);
	switch (out->kind) {
	case EVENT_MERGE: return decode_merge(dec, doc, obj, &out->u.merge, si);
	case EVENT_CONFIG: return decode_config(doc, obj, &out->u.config, si);
	case EVENT_CONTEXT: return decode_context(doc, obj, ev->u.s, &out->u.ctx, si);
	case EVENT_GATE: return decode_gate(doc, obj, &out->u.gate, si);
	case EVENT_OTHER: break;
	}
	return STATUS_OK;
}

/* --- the scan path -------------------------------------------------------- */

/* The id of member name k[0..n), SF_UNKNOWN for a name no kind reads. */
static enum scan_field scan_field_of(const char *k, size_t n)
{
#define EV_MATCH(id, lit) if (n == sizeof(lit) - 1 && !memcmp(k, lit, sizeof(lit) - 1)) return id;
	EVENT_NAMES(EV_MATCH)
#undef EV_MATCH
	return SF_UNKNOWN;
}

/*
 * Which members each kind decodes (a name seen twice makes the scanner
 * decline, because the tree reads the last one and the scanner would have
 * decoded the first); the rest are validated and passed over.
 */
static const uint64_t scan_fields_of[] = {
	[EVENT_MERGE] = 0 MERGE_FIELDS(FIELD_BIT),
	[EVENT_CONFIG] = 0 CONFIG_FIELDS(FIELD_BIT),
	[EVENT_CONTEXT] = 0 CONTEXT_FIELDS(FIELD_BIT),
	[EVENT_OTHER] = 0,
	[EVENT_GATE] = 0 GATE_FIELDS(FIELD_BIT),
};

/* An optional integer member: 1 read, 0 null (absent), -1 decline. */
static int scan_opt_int(struct jdoc_scan *sc, bool *present, int64_t *out)
{
	int rc = jdoc_scan_int(sc, out);

	*present = rc == 1;
	if (rc == 0)
		*out = 0;
	return rc;
}

static int scan_opt_index(struct jdoc_scan *sc, bool *present, int64_t *out)
{
	int rc = scan_opt_int(sc, present, out);

	return rc == 1 && *out < 0 ? -1 : rc;
}

static int scan_opt_bool(struct jdoc_scan *sc, bool *out)
{
	int b = 0, rc = jdoc_scan_bool(sc, &b);

	*out = rc == 1 && b;
	return rc;
}

static int scan_opt_bool_has(struct jdoc_scan *sc, bool *present, bool *out)
{
	int rc = scan_opt_bool(sc, out);

	*present = rc == 1;
	return rc;
}

static int scan_opt_str(struct jdoc_scan *sc, const char **out, uint32_t *len)
{
	int rc = jdoc_scan_str(sc, out, len);

	if (rc == 0) {
		*out = NULL;
		*len = 0;
	}
	return rc;
}

/*
 * What a merge's members leave for after the object: the arrays whose
 * length must be H are checked then (the members come in any order);
 * UINT32_MAX marks an array that was absent or null.
 */
struct scan_merge {
	uint32_t n_slot_gen, n_buf_slot_gen, n_slot_req, n_buf_req, n_taken, n_prefilled;
	bool has_host, has_dev, has_step, has_gen, has_buf_gen;
};

/* The scanner's readers of a merge's SPEC members: 1 read, 0 null, -1 decline. */
#define MERGE_SCAN_ARGS struct event_decoder *dec, struct jdoc_scan *sc, unsigned want, \
	struct merge_event *m, struct scan_merge *x

static int merge_scan_step(MERGE_SCAN_ARGS)
{
	(void)dec, (void)want;
	/* required: null is an error the tree names */
	if (jdoc_scan_int(sc, &m->step) != 1)
		return -1;
	x->has_step = true;
	return 1;
}

static int merge_scan_host_pos(MERGE_SCAN_ARGS)
{
	(void)want;
	if (jdoc_scan_int_array(sc, dec->host_pos, dec->max_slots, &m->n_host) != 1)
		return -1;
	x->has_host = true;
	return 1;
}

static int merge_scan_dev_pos(MERGE_SCAN_ARGS)
{
	struct scan_memo *mo = dec->memo;

	(void)want;
	if (memo_int_array(mo ? &mo[MEMO_DEV_POS] : NULL, sc, dec->dev_pos, dec->max_slots,
			   &m->n_dev) != 1)
		return -1;
	x->has_dev = true;
	return 1;
}

static int merge_scan_host_tok(MERGE_SCAN_ARGS)
{
	uint32_t n;
	int rc = jdoc_scan_int_array(sc, (want & EVENT_WANT_TOKENS) ? dec->host_tok : NULL,
				     dec->max_slots, &n);

	(void)x;
	m->n_host_tok = rc == 1 && (want & EVENT_WANT_TOKENS) ? n : 0;
	return rc;
}

static int merge_scan_dev_tok(MERGE_SCAN_ARGS)
{
	struct scan_memo *mo = dec->memo;
	uint32_t n;
	int rc = memo_int_array(mo ? &mo[MEMO_DEV_TOK] : NULL, sc,
				(want & EVENT_WANT_TOKENS) ? dec->dev_tok : NULL, dec->max_slots, &n);

	(void)x;
	m->n_dev_tok = rc == 1 && (want & EVENT_WANT_TOKENS) ? n : 0;
	return rc;
}

static int merge_scan_prefilled(MERGE_SCAN_ARGS)
{
	/* the tree takes any length here; a longer list than the cap is its case */
	int rc = jdoc_scan_int_array(sc, dec->prefilled_raw, dec->max_slots, &x->n_prefilled);

	(void)want, (void)m;
	if (rc != 1)
		x->n_prefilled = UINT32_MAX;
	return rc;
}

/* has_gen is settled after the object: both halves or nothing */
static int merge_scan_gen(MERGE_SCAN_ARGS)
{
	(void)dec, (void)want;
	return scan_opt_int(sc, &x->has_gen, &m->gen);
}

static int merge_scan_buf_gen(MERGE_SCAN_ARGS)
{
	(void)dec, (void)want;
	return scan_opt_int(sc, &x->has_buf_gen, &m->buf_gen);
}

static int merge_scan_slot_gen(MERGE_SCAN_ARGS)
{
	struct scan_memo *mo = dec->memo;
	int rc = memo_int_array(mo ? &mo[MEMO_SLOT_GEN] : NULL, sc, dec->slot_gen, dec->max_slots,
				&x->n_slot_gen);

	(void)want, (void)m;
	if (rc != 1)
		x->n_slot_gen = UINT32_MAX;
	return rc;
}

static int merge_scan_buf_slot_gen(MERGE_SCAN_ARGS)
{
	struct scan_memo *mo = dec->memo;
	int rc = memo_int_array(mo ? &mo[MEMO_BUF_SLOT_GEN] : NULL, sc, dec->buf_slot_gen,
				dec->max_slots, &x->n_buf_slot_gen);

	(void)want, (void)m;
	if (rc != 1)
		x->n_buf_slot_gen = UINT32_MAX;
	return rc;
}

static int merge_scan_slot_req(MERGE_SCAN_ARGS)
{
	int rc = jdoc_scan_str_array(sc, dec->slot_req, dec->slot_req_len, dec->max_slots,
				     &x->n_slot_req);

	(void)want, (void)m;
	if (rc != 1)
		x->n_slot_req = UINT32_MAX;
	return rc;
}

static int merge_scan_buf_req(MERGE_SCAN_ARGS)
{
	struct scan_memo *mo = dec->memo;
	int rc = memo_str_array(mo ? &mo[MEMO_BUF_REQ] : NULL, sc, dec->buf_req, dec->buf_req_len,
				dec->max_slots, &x->n_buf_req);

	(void)want, (void)m;
	if (rc != 1)
		x->n_buf_req = UINT32_MAX;
	return rc;
}

static int merge_scan_taken(MERGE_SCAN_ARGS)
{
	struct scan_memo *mo = dec->memo;
	int rc = memo_bool_array(mo ? &mo[MEMO_TAKEN] : NULL, sc, dec->taken, dec->max_slots,
				 &x->n_taken);

	(void)want, (void)m;
	if (rc != 1)
		x->n_taken = UINT32_MAX;
	return rc;
}

static int merge_scan_t(MERGE_SCAN_ARGS)
{
	int rc = jdoc_scan_number(sc, &m->t);

	(void)dec, (void)want, (void)x;
	m->has_t = rc == 1;
	if (rc == 0)
		m->t = 0;
	return rc;
}

static int scan_merge_member(struct event_decoder *dec, struct jdoc_scan *sc, enum scan_field f,
			     unsigned want, struct merge_event *e, struct scan_merge *x)
{
	switch (f) {
	MERGE_FIELDS(SCAN_CASE)
	default: return jdoc_scan_skip(sc);
	}
}

/* What the tree checks once the whole object is known; 0 when it would fail. */
static int scan_merge_finish(struct event_decoder *dec, struct merge_event *m,
			     const struct scan_merge *x)
{
	uint32_t h = m->n_host, i;

	if (!x->has_step || !x->has_host || !x->has_dev)
		return 0;
	if ((x->n_slot_gen != UINT32_MAX && x->n_slot_gen != h) ||
	    (x->n_buf_slot_gen != UINT32_MAX && x->n_buf_slot_gen != h) ||
	    (x->n_slot_req != UINT32_MAX && x->n_slot_req != h) ||
	    (x->n_buf_req != UINT32_MAX && x->n_buf_req != h) ||
	    (x->n_taken != UINT32_MAX && x->n_taken != h))
		return 0;
	m->host_pos = dec->host_pos;
	m->dev_pos = dec->dev_pos;
	m->host_tok = dec->host_tok;
	m->dev_tok = dec->dev_tok;
	memset(dec->prefilled, 0, h);
	m->prefilled = dec->prefilled;
	if (x->n_prefilled != UINT32_MAX) {
		for (i = 0; i < x->n_prefilled; i++)
			if (dec->prefilled_raw[i] >= 0 && dec->prefilled_raw[i] < h)
				dec->prefilled[dec->prefilled_raw[i]] = 1;
		m->has_prefilled = true;
	}
	m->has_gen = x->has_gen && x->has_buf_gen;
	m->has_slot_gen = x->n_slot_gen != UINT32_MAX && x->n_buf_slot_gen != UINT32_MAX;
	m->slot_gen = dec->slot_gen;
	m->buf_slot_gen = dec->buf_slot_gen;
	m->has_req = x->n_slot_req != UINT32_MAX && x->n_buf_req != UINT32_MAX;
	m->slot_req = dec->slot_req;
	m->buf_req = dec->buf_req;
	m->slot_req_len = dec->slot_req_len;
	m->buf_req_len = dec->buf_req_len;
	m->has_taken = x->n_taken != UINT32_MAX;
	m->taken = dec->taken;
	return 1;
}

static int scan_other_member(struct jdoc_scan *sc, enum event_kind kind, enum scan_field f,
			     struct event *out)
{
	if (kind == EVENT_CONFIG) {
		struct config_event *e = &out->u.config;
		bool present;
		switch (f) {
		CONFIG_FIELDS(SCAN_CASE)
		default: break;
		}
	} else if (kind == EVENT_CONTEXT) {
		struct context_event *e = &out->u.ctx;
		switch (f) {
		CONTEXT_FIELDS(SCAN_CASE)
		default: break;
		}
	} else if (kind == EVENT_GATE) {
		struct gate_event *e = &out->u.gate;
		switch (f) {
		GATE_FIELDS(SCAN_CASE)
		default: break;
		}
	}
	return jdoc_scan_skip(sc);
}

/* The prediction entry for an "ev" value (a new one when there is none). */
static struct scan_pred *scan_pred_for(struct event_decoder *dec, int id, const char *ev,
				       uint32_t n, uint64_t tick)
{
	struct scan_pred *p, *old = NULL;
	size_t i;

	if (n > sizeof(p->ev))
		return NULL;
	if (!dec->pred && !(dec->pred = calloc(SCAN_PRED_KINDS, sizeof(*dec->pred))))
		return NULL;
	if (id >= 0)
		return &dec->pred[id];
	for (i = SCAN_PRED_KNOWN; i < SCAN_PRED_KINDS; i++) {
		p = &dec->pred[i];
		if (p->ev_len == n && p->ev[0] == ev[0] && !memcmp(p->ev, ev, n)) {
			p->used = tick;
			return p;
		}
		if (!old || p->used < old->used)
			old = p;
	}
	memset(old, 0, sizeof(*old));
	memcpy(old->ev, ev, n);
	old->ev_len = n;
	old->used = tick;
	return old;
}

/* event_scan, or event_scan_line when len is given. */
static int scan_event(struct event_decoder *dec, const char *s, size_t n, unsigned max_depth,
		      unsigned want, struct event *out, size_t *len)
{
	/* `"ev":` as the first member, in the little-endian words of jdoc_scan_name */
	static const struct jdoc_scan_name ev_first = { { 0x3A22766522ull, 0, 0 },
							{ 0xFFFFFFFFFFull, 0, 0 }, 5 };
	struct jdoc_scan sc;
	struct scan_merge x = { UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX,
				UINT32_MAX, false, false, false, false, false };
	struct scan_pred *pred;
	uint64_t seen = 0, fields;
	const char *key, *keys[SCAN_PRED_FIELDS];
	size_t klen, lens[SCAN_PRED_FIELDS];
	uint8_t order[SCAN_PRED_FIELDS];
	uint32_t i = 0, read = 0, zn;
	const char *z;
	int rc, id = -1;
	/* the scanner's strings: as long as the line at most */
	if (ALLOC_GROW(dec->arena, n + 1 < 4096 ? 4096 : n + 1, dec->cap_arena) < 0)
		return -1;
	jdoc_scan_init(&sc, s, n, max_depth, dec->arena, dec->cap_arena);
	if (jdoc_scan_object(&sc) != 1)
		return 0;
	if (!jdoc_scan_key_is(&sc, &ev_first) &&
	    (jdoc_scan_key(&sc, &key, &klen) != 1 || scan_field_of(key, klen) != SF_EV))
		return 0;
	/* a name of the format: no copy, the name's literal stands for it */
	key = sc.p;
	if (jdoc_scan_str_inplace(&sc, &z, &zn) == 1 && (id = scan_ev_id(z, zn)) >= 0) {
		out->ev = scan_ev_names[id];
		out->ev_len = zn;
		out->kind = scan_ev_kinds[id];
	} else {
		sc.p = key;   /* another name, or escapes: copied into the arena */
		if (jdoc_scan_str(&sc, &out->ev, &out->ev_len) != 1)
			return 0;
		out->kind = event_kind_of(out->ev, out->ev_len);
	}
	/*
	 * Only the member of the union in use is cleared, and a merge field by
	 * field: a memset of the whole event is as long as a short line's scan.
	 * Pointers and arrays of a merge are set by scan_merge_finish.
	 */
	if (out->kind == EVENT_MERGE) {
		struct merge_event *e = &out->u.merge;
		if (!dec->memo)
			dec->memo = calloc(MEMO_N, sizeof(*dec->memo));   /* none: every array parsed */
		MERGE_FIELDS(CLEAR_ROW)
		/* the SPEC members that scan_merge_finish does not set */
		e->step = e->gen = e->buf_gen = 0;
		e->n_host = e->n_dev = e->n_host_tok = e->n_dev_tok = 0;
		e->has_prefilled = e->has_gen = e->has_slot_gen = e->has_req = e->has_taken = false;
		e->has_t = false;
		e->t = 0;
	} else if (out->kind == EVENT_CONFIG) {
		memset(&out->u.config, 0, sizeof(out->u.config));
	} else if (out->kind == EVENT_CONTEXT) {
		/* field by field: a memset's start costs more than these stores */
		struct context_event *e = &out->u.ctx;
		e->ev = out->ev;
		CONTEXT_FIELDS(CLEAR_ROW)
	} else if (out->kind == EVENT_GATE) {
		memset(&out->u.gate, 0, sizeof(out->u.gate));
	}
	fields = scan_fields_of[out->kind];
	seen = SFB(SF_EV);
	pred = scan_pred_for(dec, id, out->ev, out->ev_len, ++dec->tick);
	for (;; i++) {
		enum scan_field f;
		if (pred && i < pred->n && jdoc_scan_key_is(&sc, &pred->name[i])) {
			f = (enum scan_field)pred->field[i];
		} else {
			rc = jdoc_scan_key(&sc, &key, &klen);
			if (rc < 0)
				return 0;
			if (rc == 0)
				break;
			f = scan_field_of(key, klen);
			if (i < SCAN_PRED_FIELDS) {
				keys[i] = key;
				lens[i] = klen;
				read |= 1u << i;
			}
		}
		if (i < SCAN_PRED_FIELDS)
			order[i] = (uint8_t)f;
		if (f == SF_EV)
			return 0;              /* a second "ev": the last one decides, in the tree */
		if (!(fields & SFB(f))) {
			if (jdoc_scan_skip(&sc) < 0)
				return 0;
			continue;
		}
		if (seen & SFB(f))
			return 0;
		seen |= SFB(f);
		rc = out->kind == EVENT_MERGE ? scan_merge_member(dec, &sc, f, want, &out->u.merge, &x)
					      : scan_other_member(&sc, out->kind, f, out);
		if (rc < 0)
			return 0;
	}
	if (len ? jdoc_scan_end_line(&sc, len) != 1 : jdoc_scan_end(&sc) != 1)
		return 0;
	if (out->kind == EVENT_MERGE && !scan_merge_finish(dec, &out->u.merge, &x))
		return 0;
	if (out->kind == EVENT_CONFIG && out->u.config.max_model_len < 0)
		return 0;   /* the tree names it */
	if (pred && (read || i != pred->n)) {
		/* relearn the order from this line; the names that matched stay as they are */
		uint32_t k, m = i < SCAN_PRED_FIELDS ? i : SCAN_PRED_FIELDS;
		for (k = 0; k < m; k++) {
			pred->field[k] = order[k];
			if (read >> k & 1)
				jdoc_scan_name_init(&pred->name[k], keys[k], lens[k], 0);
		}
		pred->n = m;
	}
	return 1;
}

int event_scan(struct event_decoder *dec, const char *s, size_t n, unsigned max_depth,
	       unsigned want, struct event *out)
{
	return scan_event(dec, s, n, max_depth, want, out, NULL);
}

int event_scan_line(struct event_decoder *dec, const char *s, size_t n, unsigned max_depth,
		    unsigned want, struct event *out, size_t *len)
{
	return scan_event(dec, s, n, max_depth, want, out, len);
}
