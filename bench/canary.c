/*
 * canary.c - canary isolation (canary.h): the markers of a run and their
 * decoys, the task around them, the calibration of the model's repeating,
 * and the search of every output for every marker's pieces, in its text and
 * its token ids.
 */
#include "bench/canary.h"
#include "base/rng.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/correct.h"
#include "base/hash.h"

/* Upper-case consonants and 2-9: 28 symbols, no vowel, no 0/O or 1/I. */
static const char canary_alpha[] = "BCDFGHJKLMNPQRSTVWXZ23456789";
#define CANARY_ALPHA 28u
/* 28^6 groups: a key below 2^29 */
#define CANARY_KEYS 481890304u

struct canary_mark {
	char text[CANARY_MARKER_LEN];
	uint32_t key[CANARY_GROUPS];
	char *req_id;                /* noted: its request id, or NULL */
	double t_end;                /* noted: when its request ended; 0 never */
	bool aborted;
	int64_t ids[CANARY_MAX_IDS];
	size_t n_ids;
};

/* An entry of the group table: the key + 1 (0 = empty) and its owner. */
struct canary_slot {
	uint32_t key1;
	uint8_t kind, group;
	uint32_t owner;
};

/* An entry of the id table: an id that one marker's tokens hold. */
struct canary_idslot {
	int64_t id1;                 /* id + 1; 0 = empty */
	uint8_t kind;
	uint32_t owner;              /* UINT32_MAX: more than one marker holds it */
};

struct canary_set {
	struct canary_mark *m[CANARY__KINDS];
	size_t n[CANARY__KINDS];
	struct canary_slot *tab;
	size_t n_tab;                /* power of two */
	struct canary_idslot *idtab;
	size_t n_idtab;
};

static const char *const canary_kind_names[] = { "sent", "calibration", "decoy" };

const char *canary_kind_name(enum canary_kind k)
{
	return (unsigned)k < CANARY__KINDS ? canary_kind_names[k] : "unknown";
}

const char *canary_verdict_name(enum canary_verdict v)
{
	switch (v) {
	case CANARY_CLEAN: return "clean";
	case CANARY_LEAKED: return "leaked";
	case CANARY_LOST: return "lost";
	case CANARY_FAILED: return "failed";
	}
	return "unknown";
}

const char *canary_own_name(enum canary_own o)
{
	switch (o) {
	case CANARY_OWN_OK: return "ok";
	case CANARY_OWN_LOST: return "lost";
	case CANARY_OWN_NOT_EVALUABLE: return "not-evaluable";
	}
	return "unknown";
}

/* The symbol's value, or -1 when c is not in the alphabet. */
static int canary_sym(unsigned char c)
{
	const char *p = c ? memchr(canary_alpha, c, CANARY_ALPHA) : NULL;

	return p ? (int)(p - canary_alpha) : -1;
}

static size_t canary_hash(uint32_t key, size_t mask)
{
	return (size_t)(rng_mix(key) & mask);
}

static struct canary_slot *canary_find(const struct canary_set *s, uint32_t key)
{
	size_t mask = s->n_tab - 1, i = canary_hash(key, mask);

	for (; s->tab[i].key1; i = (i + 1) & mask)
		if (s->tab[i].key1 == key + 1)
			return &s->tab[i];
	return NULL;
}

/* Draws a group that no marker has yet: at least two letters and two digits. */
static uint32_t canary_draw(struct canary_set *s, uint64_t *rng, char *out)
{
	uint32_t key;
	int i, letters, digits;

	for (;;) {
		uint64_t x = rng_next(rng);

		key = 0;
		letters = digits = 0;
		for (i = 0; i < CANARY_GROUP_LEN; i++) {
			unsigned v = (unsigned)(x % CANARY_ALPHA);

			x /= CANARY_ALPHA;
			out[i] = canary_alpha[v];
			key = key * CANARY_ALPHA + v;
			if (out[i] >= 'A')
				letters++;
			else
				digits++;
		}
		if (letters >= 2 && digits >= 2 && !canary_find(s, key))
			return key;
	}
}

static void canary_put(struct canary_set *s, uint32_t key, enum canary_kind k, size_t owner, int g)
{
	size_t mask = s->n_tab - 1, i = canary_hash(key, mask);

	while (s->tab[i].key1)
		i = (i + 1) & mask;
	s->tab[i].key1 = key + 1;
	s->tab[i].kind = (uint8_t)k;
	s->tab[i].group = (uint8_t)g;
	s->tab[i].owner = (uint32_t)owner;
}

enum status canary_set_new(uint64_t seed, size_t n_sent, size_t n_calib, struct canary_set **out,
			   struct status_info *si)
{
	struct canary_set *s;
	uint64_t rng = rng_mix(seed ^ 0x63616e617279ull);
	size_t total, k, i;
	int g;

	*out = NULL;
	if (n_sent > CANARY_MAX_MARKERS || n_calib > CANARY_MAX_MARKERS)
		return status_set(si, STATUS_LIMIT, "canary: %zu markers (cap %u)", n_sent + n_calib,
				  CANARY_MAX_MARKERS);
	s = calloc(1, sizeof(*s));
	if (!s)
		return status_set(si, STATUS_NOMEM, "canary: out of memory");
	s->n[CANARY_SENT] = n_sent;
	s->n[CANARY_CALIB] = n_calib;
	s->n[CANARY_DECOY] = n_sent + n_calib;
	total = 2 * (n_sent + n_calib) * CANARY_GROUPS;
	for (s->n_tab = 64; s->n_tab < 2 * total; s->n_tab *= 2)
		;
	s->tab = calloc(s->n_tab, sizeof(*s->tab));
	for (k = 0; k < CANARY__KINDS; k++)
		s->m[k] = calloc(s->n[k] ? s->n[k] : 1, sizeof(struct canary_mark));
	if (!s->tab || !s->m[0] || !s->m[1] || !s->m[2]) {
		canary_set_free(s);
		return status_set(si, STATUS_NOMEM, "canary: out of memory");
	}
	for (k = 0; k < CANARY__KINDS; k++)
		for (i = 0; i < s->n[k]; i++) {
			struct canary_mark *m = &s->m[k][i];

			for (g = 0; g < CANARY_GROUPS; g++) {
				char *p = m->text + g * (CANARY_GROUP_LEN + 1);

				m->key[g] = canary_draw(s, &rng, p);
				p[CANARY_GROUP_LEN] = g + 1 < CANARY_GROUPS ? ' ' : '\0';
				canary_put(s, m->key[g], (enum canary_kind)k, i, g);
			}
		}
	*out = s;
	return STATUS_OK;
}

void canary_set_free(struct canary_set *s)
{
	size_t k, i;

	if (!s)
		return;
	for (k = 0; k < CANARY__KINDS; k++) {
		for (i = 0; s->m[k] && i < s->n[k]; i++)
			free(s->m[k][i].req_id);
		free(s->m[k]);
	}
	free(s->tab);
	free(s->idtab);
	free(s);
}

size_t canary_count(const struct canary_set *s, enum canary_kind k)
{
	return (unsigned)k < CANARY__KINDS ? s->n[k] : 0;
}

const char *canary_text(const struct canary_set *s, enum canary_kind k, size_t i)
{
	return s->m[k][i].text;
}

/*
 * The task around a marker: completions or the chat user message, after a
 * preface of 0 to 31 plain words (seeded per marker). Requests of one shape
 * never meet a row at the position they start at; prompts of many lengths
 * do, as real traffic does.
 */
static char *canary_task(const char *marker, bool chat, uint64_t key)
{
	static const char *const words[] = { "please", "read", "the", "short", "note", "below", "and",
		"then", "do", "what", "it", "asks", "of", "you", "with", "care" };
	char buf[512];
	size_t n = 0, k, w = (size_t)(rng_mix(key) % 32);

	for (k = 0; k < w; k++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", k ? " " : "", words[k % 16]);
	if (w)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, ".\n");
	if (chat)
		snprintf(buf + n, sizeof(buf) - n, "Code: %s\nRepeat the code four times, separated by "
			 "spaces, and write nothing else.", marker);
	else
		snprintf(buf + n, sizeof(buf) - n, "Code: %s\nCopy: %s\nCopy:", marker, marker);
	return strdup(buf);
}

enum status canary_suite(const struct canary_set *s, bool chat, long max_tokens, struct suite **out,
			 struct status_info *si)
{
	struct suite *st;
	size_t n = s->n[CANARY_SENT] + s->n[CANARY_CALIB], i;
	uint64_t h = HASH_FNV1A_INIT;
	char id[48];

	*out = NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return status_set(si, STATUS_NOMEM, "canary: out of memory");
	st->e = calloc(n ? n : 1, sizeof(*st->e));
	if (!st->e)
		goto nomem;
	for (i = 0; i < n; i++) {
		struct suite_entry *e = &st->e[i];
		enum canary_kind k = i < s->n[CANARY_SENT] ? CANARY_SENT : CANARY_CALIB;
		size_t j = k == CANARY_SENT ? i : i - s->n[CANARY_SENT];
		char *t = canary_task(s->m[k][j].text, chat, s->m[k][j].key[0]);

		st->n++;
		if (!t)
			goto nomem;
		snprintf(id, sizeof(id), "canary-%s-%zu", k == CANARY_SENT ? "s" : "c", j);
		e->id = strdup(id);
		e->max_tokens = max_tokens;
		e->input_tokens = -1;
		h = hash_fnv1a(h, t, strlen(t) + 1);
		if (chat) {
			cJSON *arr = cJSON_CreateArray(), *m = cJSON_CreateObject();

			if (!arr || !m || !cJSON_AddStringToObject(m, "role", "user") ||
			    !cJSON_AddStringToObject(m, "content", t)) {
				cJSON_Delete(arr);
				cJSON_Delete(m);
				free(t);
				goto nomem;
			}
			cJSON_AddItemToArray(arr, m);
			e->messages = cJSON_PrintUnformatted(arr);
			cJSON_Delete(arr);
			free(t);
		} else {
			e->prompt = t;
		}
		if (!e->id || (!e->prompt && !e->messages))
			goto nomem;
	}
	snprintf(st->hash, sizeof(st->hash), "fnv1a64:%016llx", (unsigned long long)h);
	snprintf(st->source, sizeof(st->source), "canary (%s)", chat ? "chat" : "completions");
	snprintf(st->sizing, sizeof(st->sizing), "file");
	*out = st;
	return STATUS_OK;
nomem:
	suite_free(st);
	return status_set(si, STATUS_NOMEM, "canary: out of memory");
}

void canary_note(struct canary_set *s, enum canary_kind k, size_t i, const char *request_id,
		 double t_end, bool aborted)
{
	struct canary_mark *m;

	if ((unsigned)k >= CANARY__KINDS || i >= s->n[k])
		return;
	m = &s->m[k][i];
	free(m->req_id);
	m->req_id = request_id && *request_id ? strdup(request_id) : NULL;
	m->t_end = t_end;
	m->aborted = aborted;
}

/* --- token ids ---------------------------------------------------------- */

void canary_set_ids(struct canary_set *s, enum canary_kind k, size_t i, const int64_t *ids, size_t n)
{
	struct canary_mark *m;

	if ((unsigned)k >= CANARY__KINDS || i >= s->n[k])
		return;
	m = &s->m[k][i];
	if (n > CANARY_MAX_IDS)
		n = CANARY_MAX_IDS;
	if (n)
		memcpy(m->ids, ids, n * sizeof(*ids));
	m->n_ids = n;
}

static struct canary_idslot *canary_idfind(const struct canary_set *s, int64_t id, bool add)
{
	size_t mask = s->n_idtab - 1, i = (size_t)(rng_mix((uint64_t)id) & mask);

	for (; s->idtab[i].id1; i = (i + 1) & mask)
		if (s->idtab[i].id1 == id + 1)
			return &s->idtab[i];
	return add ? &s->idtab[i] : NULL;
}

enum status canary_ids_done(struct canary_set *s, const int64_t *common, size_t n_common,
			    struct status_info *si)
{
	size_t k, i, j, total = n_common;
	struct canary_idslot *e;

	for (k = 0; k < CANARY__KINDS; k++)
		for (i = 0; i < s->n[k]; i++)
			total += s->m[k][i].n_ids;
	free(s->idtab);
	for (s->n_idtab = 64; s->n_idtab < 2 * total; s->n_idtab *= 2)
		;
	s->idtab = calloc(s->n_idtab, sizeof(*s->idtab));
	if (!s->idtab)
		return status_set(si, STATUS_NOMEM, "canary: out of memory");
	/* the task's own tokens belong to everyone: never evidence */
	for (j = 0; j < n_common; j++) {
		e = canary_idfind(s, common[j], true);
		e->id1 = common[j] + 1;
		e->owner = UINT32_MAX;
	}
	for (k = 0; k < CANARY__KINDS; k++)
		for (i = 0; i < s->n[k]; i++)
			for (j = 0; j < s->m[k][i].n_ids; j++) {
				int64_t id = s->m[k][i].ids[j];

				if (id < 0)
					continue;
				e = canary_idfind(s, id, true);
				if (!e->id1) {
					e->id1 = id + 1;
					e->kind = (uint8_t)k;
					e->owner = (uint32_t)i;
				} else if (e->kind != k || e->owner != i) {
					e->owner = UINT32_MAX;
				}
			}
	return STATUS_OK;
}

bool canary_has_ids(const struct canary_set *s)
{
	return s->idtab != NULL;
}

/* --- the search --------------------------------------------------------- */

void canary_scan(const struct canary_set *s, const char *text, size_t len,
		 void (*fn)(void *ctx, enum canary_kind k, size_t owner, size_t group, size_t off),
		 void *ctx)
{
	size_t i, run = 0;
	uint32_t key = 0;
	const struct canary_slot *e;
	int v;

	/* a rolling key of the last CANARY_GROUP_LEN symbols of a run of them:
	 * every window of a longer run is looked at, so a group glued to other
	 * symbols is found too */
	for (i = 0; i < len; i++) {
		v = canary_sym((unsigned char)text[i]);
		if (v < 0) {
			run = 0;
			key = 0;
			continue;
		}
		key = (uint32_t)(((uint64_t)key * CANARY_ALPHA + (unsigned)v) % CANARY_KEYS);
		if (++run < CANARY_GROUP_LEN)
			continue;
		e = canary_find(s, key);
		if (e)
			fn(ctx, (enum canary_kind)e->kind, e->owner, e->group, i + 1 - CANARY_GROUP_LEN);
	}
}

/* How many groups of marker m the text has; *full_at the byte after which
 * every group has been seen (0 when not all were). */
struct canary_own_scan {
	enum canary_kind kind;
	size_t owner;
	unsigned seen;               /* bit per group */
	size_t full_at;
};

static void canary_own_cb(void *ctx, enum canary_kind k, size_t owner, size_t group, size_t off)
{
	struct canary_own_scan *o = ctx;

	if (k != o->kind || owner != o->owner)
		return;
	o->seen |= 1u << group;
	if (o->seen == (1u << CANARY_GROUPS) - 1 && !o->full_at)
		o->full_at = off + CANARY_GROUP_LEN;
}

static unsigned canary_popcount(unsigned x)
{
	unsigned n = 0;

	for (; x; x &= x - 1)
		n++;
	return n;
}

void canary_calibrate(const struct canary_set *s, const struct load_run *run, size_t first,
		      struct canary_calib *cal)
{
	size_t i;

	memset(cal, 0, sizeof(*cal));
	for (i = 0; run && i < run->n && first + i < s->n[CANARY_CALIB]; i++) {
		const struct load_result *r = &run->res[i];
		struct canary_own_scan o = { CANARY_CALIB, first + i, 0, 0 };

		cal->n++;
		if (r->n_ids)
			cal->ids_returned = true;
		if (r->fail || !r->text)
			continue;
		canary_scan(s, r->text, r->text_len, canary_own_cb, &o);
		if (o.full_at) {
			size_t c = correct_chunk_at(r, o.full_at - 1);
			size_t t = correct_tokens_before(r, c) + (r->tok_n && c < r->n_chunks ? r->tok_n[c] : 1);

			cal->n_repeated++;
			if (t > cal->tokens_for_marker)
				cal->tokens_for_marker = t;
		}
	}
	cal->repeats = cal->n > 0 && cal->n_repeated == cal->n;
}

/* The checker's view of one output while it is scanned. */
struct canary_out {
	const struct canary_set *s;
	const struct load_run *run;
	const struct load_result *r;
	size_t first, self;          /* the run's first sent marker, this request's */
	unsigned own_seen;
	struct canary_item *it;
};

/* Was donor (k, i) finished when the victim received its chunk c? */
static bool canary_donor_finished(const struct canary_out *o, enum canary_kind k, size_t i, size_t c,
				  bool *aborted)
{
	const struct canary_mark *m = &o->s->m[k][i];
	double t = o->r->tok_t && c < o->r->n_chunks && c < LOAD_MAX_TOKENS ? o->r->tok_t[c] : o->r->t_end;

	*aborted = m->aborted;
	/* a donor outside this run (calibration, an earlier cell) had ended */
	if (k != CANARY_SENT || i < o->first || i >= o->first + o->run->n)
		return m->t_end > 0;
	return m->t_end > 0 && m->t_end <= t;
}

static void canary_leak(struct canary_out *o, enum canary_kind k, size_t owner, size_t chunk, size_t at,
			size_t span, bool by_id, const char *group)
{
	struct canary_item *it = o->it;
	struct canary_leak *l = &it->leak;
	const struct canary_mark *m = &o->s->m[k][owner];

	it->n_leaks++;
	/* the ids place a piece the text found in a chunk of several tokens */
	if (it->n_leaks > 1 && by_id && !l->by_id && l->kind == k && l->donor == owner && at >= l->at &&
	    at < l->at + l->span) {
		l->at = at;
		l->span = 1;
		return;
	}
	if (it->n_leaks > 1 && at >= l->at)
		return;
	memset(l, 0, sizeof(*l));
	l->kind = k;
	l->donor = owner;
	snprintf(l->donor_id, sizeof(l->donor_id), "%s", m->req_id ? m->req_id : "");
	l->at = at;
	l->span = span ? span : 1;
	l->by_id = by_id;
	l->donor_finished = canary_donor_finished(o, k, owner, chunk, &l->donor_aborted);
	if (group)
		snprintf(l->group, sizeof(l->group), "%.*s", CANARY_GROUP_LEN, group);
}

static void canary_out_cb(void *ctx, enum canary_kind k, size_t owner, size_t group, size_t off)
{
	struct canary_out *o = ctx;
	size_t c;

	if (k == CANARY_SENT && owner == o->self) {
		o->own_seen |= 1u << group;
		return;
	}
	if (k == CANARY_DECOY) {
		o->it->n_decoy++;
		return;
	}
	c = correct_chunk_at(o->r, off);
	canary_leak(o, k, owner, c, correct_tokens_before(o->r, c),
		    o->r->tok_n && c < o->r->n_chunks && c < LOAD_MAX_TOKENS ? o->r->tok_n[c] : 1, false,
		    o->r->text + off);
}

/* The ids of r that one other marker's tokens hold. */
static void canary_out_ids(struct canary_out *o)
{
	const struct load_result *r = o->r;
	size_t j, c = 0;
	const struct canary_idslot *e;

	for (j = 0; j < r->n_ids; j++) {
		while (r->ids_off && c + 1 < r->n_chunks && c + 1 < LOAD_MAX_TOKENS && r->ids_off[c + 1] <= j)
			c++;
		if (r->ids[j] < 0 || !(e = canary_idfind(o->s, r->ids[j], false)) || e->owner == UINT32_MAX)
			continue;
		if (e->kind == CANARY_SENT && e->owner == o->self)
			continue;
		if (e->kind == CANARY_DECOY) {
			o->it->n_decoy++;
			continue;
		}
		canary_leak(o, (enum canary_kind)e->kind, e->owner, c, j, 1, true, NULL);
	}
}

enum status canary_check(const struct canary_set *s, const struct canary_calib *cal,
			 const struct load_run *run, size_t first, struct canary_report *rep,
			 struct status_info *si)
{
	size_t i;

	memset(rep, 0, sizeof(*rep));
	if (first > s->n[CANARY_SENT] || run->n > s->n[CANARY_SENT] - first)
		return status_set(si, STATUS_USAGE, "canary: run of %zu requests from marker %zu of %zu",
				  run->n, first, s->n[CANARY_SENT]);
	rep->items = calloc(run->n ? run->n : 1, sizeof(*rep->items));
	if (!rep->items)
		return status_set(si, STATUS_NOMEM, "canary: out of memory");
	rep->n = run->n;
	for (i = 0; i < run->n; i++) {
		const struct load_result *r = &run->res[i];
		struct canary_item *it = &rep->items[i];
		struct canary_out o = { s, run, r, first, first + i, 0, it };

		it->request = i;
		it->marker = first + i;
		it->own = CANARY_OWN_NOT_EVALUABLE;
		it->aborted = s->m[CANARY_SENT][first + i].aborted;
		if (r->text)
			canary_scan(s, r->text, r->text_len, canary_out_cb, &o);
		if (canary_has_ids(s) && r->n_ids) {
			canary_out_ids(&o);
			rep->n_id_checked++;
		}
		it->own_groups = canary_popcount(o.own_seen);
		/* only a model that repeats, and an output long enough to hold
		 * one whole marker as the calibration wrote it */
		if (cal && cal->repeats && !r->fail && r->n_tokens >= cal->tokens_for_marker) {
			it->own = it->own_groups == CANARY_GROUPS ? CANARY_OWN_OK : CANARY_OWN_LOST;
			rep->n_own_checked++;
		}
		if (r->fail)
			it->verdict = CANARY_FAILED;
		else if (it->n_leaks)
			it->verdict = CANARY_LEAKED;
		else if (it->own == CANARY_OWN_LOST)
			it->verdict = CANARY_LOST;
		else
			it->verdict = CANARY_CLEAN;
		/* a leak in a failed request still counts as a leak seen */
		if (r->fail && it->n_leaks)
			it->verdict = CANARY_LEAKED;
		switch (it->verdict) {
		case CANARY_CLEAN: rep->n_clean++; break;
		case CANARY_LEAKED: rep->n_leaked++; break;
		case CANARY_LOST: rep->n_lost++; break;
		case CANARY_FAILED: rep->n_failed++; break;
		}
		if (it->n_leaks && it->leak.donor_finished)
			rep->n_donor_finished++;
		if (it->n_decoy)
			rep->n_decoy_outputs++;
	}
	return STATUS_OK;
}

void canary_report_release(struct canary_report *rep)
{
	free(rep->items);
	memset(rep, 0, sizeof(*rep));
}
