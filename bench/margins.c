/*
 * margins.c - the quiet margin pass (margins.h): what it keeps of each
 * diverged request during the run, the echo request it sends afterwards,
 * how the answer is read and how a divergence is labelled.
 */
#include "bench/margins.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "probe/http.h"

#define MARGINS_MAX_PROMPT (4u << 20)

static const char *const margins_labels[] = {
	[MARGINS_NEAR_TIE] = "near-tie",
	[MARGINS_LOW_PROB] = "low-probability",
	[MARGINS_DUPLICATE] = "duplicated-token",
	[MARGINS_PAST_VOCAB] = "past-vocabulary",
	[MARGINS_NOT_EVALUABLE] = "not-evaluable",
};

static const char *const margins_whys[] = {
	[MARGINS_WHY_NONE] = "",
	[MARGINS_WHY_CHAT] = "chat",
	[MARGINS_WHY_NO_ANSWER] = "no-answer",
	[MARGINS_WHY_REFUSED] = "refused",
	[MARGINS_WHY_NO_LOGPROBS] = "no-logprobs",
	[MARGINS_WHY_SHORT] = "short",
	[MARGINS_WHY_REF_ABSENT] = "reference-not-in-top",
	[MARGINS_WHY_PREFERS_GOT] = "prefers-output",
};

const char *margins_label_name(enum margins_label l)
{
	return (unsigned)l < MARGINS__LABELS ? margins_labels[l] : "unknown";
}

const char *margins_why_name(enum margins_why w)
{
	return (unsigned)w < MARGINS__WHYS ? margins_whys[w] : "unknown";
}

/* A divergence kept for the pass: everything copied, the run may go. */
struct margins_keep {
	struct margins_item it;
	char *url, *model;
	char *prompt;              /* NULL: chat (not evaluable) */
	char *text;                /* the output up to and including its divergent token */
	size_t char_off;           /* characters of prompt + output before the first differing byte */
	char ref_rest[64];         /* the reference from that byte on */
	bool past_vocab, duplicate;
};

struct margins {
	double eps;
	long vocab;
	struct margins_keep *k;
	size_t n, cap, n_dropped;
};

enum status margins_new(double eps, long vocab_size, struct margins **out, struct status_info *si)
{
	struct margins *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return status_set(si, STATUS_NOMEM, "margins: out of memory");
	m->eps = eps > 0 ? eps : MARGINS_DEFAULT_EPS;
	m->vocab = vocab_size;
	*out = m;
	return STATUS_OK;
}

void margins_free(struct margins *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++) {
		free(m->k[i].url);
		free(m->k[i].model);
		free(m->k[i].prompt);
		free(m->k[i].text);
	}
	free(m->k);
	free(m);
}

size_t margins_count(const struct margins *m)
{
	return m ? m->n : 0;
}

/* Characters (UTF-8 code points, as Python counts text_offset) of s[0..n). */
static size_t margins_chars(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		c += ((unsigned char)s[i] & 0xc0) != 0x80;
	return c;
}

static void margins_copy(char *dst, size_t sz, const char *s, size_t n)
{
	if (n >= sz)
		n = sz - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

/* Bytes [a, b) of chunk c of r's kept text; false past its chunks. */
static bool margins_chunk(const struct load_result *r, size_t c, size_t *a, size_t *b)
{
	if (!r->tok_off || !r->text || c >= r->n_chunks || c >= LOAD_MAX_TOKENS)
		return false;
	*a = r->tok_off[c];
	*b = r->tok_off[c + 1];
	return *b <= r->text_len && *a <= *b;
}

/* An id at or past vocab in chunk c or the empty chunks just before it (an
 * id with no text leaves its chunk empty: the text differs from the next). */
static bool margins_past_vocab(const struct load_result *r, size_t c, long vocab, long *id)
{
	size_t j, a, b, k;

	*id = -1;
	if (!r->ids || !r->ids_off || !r->tok_off)
		return false;
	for (j = c + 1; j-- > 0;) {
		if (j >= r->n_chunks || j >= LOAD_MAX_TOKENS)
			continue;
		for (k = r->ids_off[j]; k < r->ids_off[j + 1] && k < r->n_ids; k++) {
			if (*id < 0 || j == c)
				*id = r->ids[k];
			if (vocab > 0 && r->ids[k] >= vocab) {
				*id = r->ids[k];
				return true;
			}
		}
		a = r->tok_off[j];
		b = r->tok_off[j + 1];
		if (j != c && a != b)
			break;
	}
	return false;
}

enum status margins_collect(struct margins *m, size_t arm, const char *base, const char *model,
			    char *const *bodies, const struct load_run *run, const struct load_run *ref,
			    const struct correct_report *corr, struct status_info *si)
{
	char url[HTTP_MAX_URL];
	size_t i;

	if (http_join(base, "/v1/completions", url, sizeof(url)))
		return status_set(si, STATUS_LIMIT, "%s: url too long", base);
	for (i = 0; i < corr->n && i < run->n; i++) {
		const struct correct_item *ci = &corr->items[i];
		const struct load_result *g = &run->res[i], *r;
		struct margins_keep *k;
		cJSON *b, *p;
		size_t off, c, a0, a1, rc, r0, r1, lim;

		if (ci->verdict != CORRECT_DIVERGED || ci->prompt_index >= ref->n)
			continue;
		if (m->n >= MARGINS_MAX_ITEMS) {
			m->n_dropped++;
			continue;
		}
		if (ALLOC_GROW(m->k, m->n + 1, m->cap) < 0)
			return status_set(si, STATUS_NOMEM, "margins: out of memory");
		r = &ref->res[ci->prompt_index];
		k = &m->k[m->n];
		memset(k, 0, sizeof(*k));
		k->it.arm = arm;
		k->it.prompt_index = ci->prompt_index;
		k->it.at = ci->at;
		k->it.id = -1;
		snprintf(k->it.request_id, sizeof(k->it.request_id), "%s", g->xid[0] ? g->xid : g->id);
		k->duplicate = ci->duplicate;
		/* the first differing byte, its chunk, the reference's chunk there */
		lim = g->text_len < r->text_len ? g->text_len : r->text_len;
		for (off = 0; off < lim && g->text[off] == r->text[off]; off++)
			;
		c = correct_chunk_at(g, off);
		if (!margins_chunk(g, c, &a0, &a1))
			a0 = a1 = g->text_len;
		margins_copy(k->it.out_tok, sizeof(k->it.out_tok), g->text ? g->text + a0 : "", a1 - a0);
		rc = correct_chunk_at(r, a0);
		if (margins_chunk(r, rc, &r0, &r1) && r0 == a0)
			margins_copy(k->it.ref_tok, sizeof(k->it.ref_tok), r->text + r0, r1 - r0);
		margins_copy(k->ref_rest, sizeof(k->ref_rest), r->text ? r->text + off : "",
			     r->text_len > off ? r->text_len - off : 0);
		k->past_vocab = margins_past_vocab(g, c, m->vocab, &k->it.id);
		k->url = strdup(url);
		k->model = model ? strdup(model) : NULL;
		k->text = malloc(a1 + 1);
		if (!k->url || (model && !k->model) || !k->text) {
			free(k->url);
			free(k->model);
			free(k->text);
			return status_set(si, STATUS_NOMEM, "margins: out of memory");
		}
		memcpy(k->text, g->text ? g->text : "", a1);
		k->text[a1] = '\0';
		b = bodies && bodies[i] ? cJSON_Parse(bodies[i]) : NULL;
		p = cJSON_GetObjectItemCaseSensitive(b, "prompt");
		if (cJSON_IsString(p) && strlen(p->valuestring) < MARGINS_MAX_PROMPT) {
			k->prompt = strdup(p->valuestring);
			k->char_off = k->prompt ? margins_chars(k->prompt, strlen(k->prompt)) +
				      margins_chars(k->text, off < a1 ? off : a1) : 0;
		}
		cJSON_Delete(b);
		m->n++;
	}
	return STATUS_OK;
}

char *margins_body(const char *model, const char *prompt, const char *text)
{
	cJSON *o = cJSON_CreateObject();
	char *s = NULL, *full = NULL;
	size_t lp = strlen(prompt), lt = strlen(text);

	full = malloc(lp + lt + 1);
	if (!o || !full)
		goto out;
	memcpy(full, prompt, lp);
	memcpy(full + lp, text, lt + 1);
	if (model)
		cJSON_AddStringToObject(o, "model", model);
	cJSON_AddStringToObject(o, "prompt", full);
	cJSON_AddBoolToObject(o, "echo", 1);
	cJSON_AddNumberToObject(o, "logprobs", MARGINS_TOP_N);
	cJSON_AddNumberToObject(o, "max_tokens", 1);
	cJSON_AddNumberToObject(o, "temperature", 0);
	cJSON_AddBoolToObject(o, "stream", 0);
	s = cJSON_PrintUnformatted(o);
out:
	cJSON_Delete(o);
	free(full);
	return s;
}

static size_t margins_strchars(const char *s)
{
	return s ? margins_chars(s, strlen(s)) : 0;
}

void margins_read(const char *body, size_t n, size_t char_off, const char *ref_tok, struct margins_obs *ob)
{
	cJSON *j, *ch, *lp, *toks, *tlp, *top, *offs, *t, *e;
	size_t i, cnt, total, delta, text_chars, pos;
	bool found = false;

	memset(ob, 0, sizeof(*ob));
	ob->lp_got = ob->lp_ref = ob->lp_top = NAN;
	j = cJSON_ParseWithLength(body ? body : "", n);
	ch = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
	lp = cJSON_GetObjectItemCaseSensitive(ch, "logprobs");
	toks = cJSON_GetObjectItemCaseSensitive(lp, "tokens");
	tlp = cJSON_GetObjectItemCaseSensitive(lp, "token_logprobs");
	top = cJSON_GetObjectItemCaseSensitive(lp, "top_logprobs");
	offs = cJSON_GetObjectItemCaseSensitive(lp, "text_offset");
	if (!cJSON_IsArray(toks) || !cJSON_IsArray(tlp) || !cJSON_IsArray(top) || !cJSON_IsArray(offs) ||
	    !(cnt = (size_t)cJSON_GetArraySize(toks)) || (size_t)cJSON_GetArraySize(offs) != cnt ||
	    (size_t)cJSON_GetArraySize(tlp) != cnt || (size_t)cJSON_GetArraySize(top) != cnt) {
		ob->why = MARGINS_WHY_NO_LOGPROBS;
		snprintf(ob->detail, sizeof(ob->detail), "%s",
			 !j ? "the answer is not JSON" : !lp || cJSON_IsNull(lp) ? "the answer has no logprobs" :
			 "its logprobs lack tokens, token_logprobs, top_logprobs or text_offset of one length");
		goto out;
	}
	/* text_offset counts the decoded tokens' text, which can start with a
	 * special token the echoed text lacks (vLLM decodes a BOS): the
	 * difference is put before the first token we sent */
	t = cJSON_GetArrayItem(toks, (int)cnt - 1);
	e = cJSON_GetArrayItem(offs, (int)cnt - 1);
	total = (cJSON_IsNumber(e) ? (size_t)e->valuedouble : 0) + margins_strchars(cJSON_GetStringValue(t));
	text_chars = margins_strchars(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ch, "text")));
	delta = total > text_chars ? total - text_chars : 0;
	pos = char_off + delta;
	for (i = 0; i < cnt; i++) {
		cJSON *o = cJSON_GetArrayItem(offs, (int)i), *o2 = cJSON_GetArrayItem(offs, (int)i + 1);
		double a = cJSON_IsNumber(o) ? o->valuedouble : -1, b;

		/* the last token ends where its text does */
		b = i + 1 < cnt ? (cJSON_IsNumber(o2) ? o2->valuedouble : -1) :
		    a + (double)margins_strchars(cJSON_GetStringValue(cJSON_GetArrayItem(toks, (int)i)));

		if (a >= 0 && (size_t)a <= pos && pos < b) {
			found = true;
			break;
		}
	}
	if (!found || !i) {
		ob->why = MARGINS_WHY_SHORT;
		snprintf(ob->detail, sizeof(ob->detail), "%zu positions, none at character %zu", cnt, pos);
		goto out;
	}
	t = cJSON_GetArrayItem(toks, (int)i);
	e = cJSON_GetArrayItem(tlp, (int)i);
	if (!cJSON_IsString(t) || !cJSON_IsNumber(e) || !cJSON_IsObject(cJSON_GetArrayItem(top, (int)i))) {
		ob->why = MARGINS_WHY_NO_LOGPROBS;
		snprintf(ob->detail, sizeof(ob->detail), "no logprob at position %zu", i);
		goto out;
	}
	snprintf(ob->got_tok, sizeof(ob->got_tok), "%s", t->valuestring);
	ob->lp_got = e->valuedouble;
	ob->lp_top = ob->lp_got;
	{
		/* what the reference has from this token's start: the part
		 * before the first differing byte is the token's own (common to
		 * both), then the reference's rest */
		cJSON *o = cJSON_GetArrayItem(offs, (int)i);
		size_t head = pos - (size_t)o->valuedouble, hb = 0, best = 0;
		char cont[192];

		for (; t->valuestring[hb] && head; head--)
			for (hb++; ((unsigned char)t->valuestring[hb] & 0xc0) == 0x80; hb++)
				;
		snprintf(cont, sizeof(cont), "%.*s%s", (int)hb, t->valuestring, ref_tok ? ref_tok : "");
		cJSON_ArrayForEach(e, cJSON_GetArrayItem(top, (int)i)) {
			size_t kl;

			if (!cJSON_IsNumber(e) || !e->string)
				continue;
			if (e->valuedouble > ob->lp_top)
				ob->lp_top = e->valuedouble;
			kl = strlen(e->string);
			if (kl > best && kl > hb && !strncmp(cont, e->string, kl)) {
				best = kl;
				ob->ref_known = true;
				ob->lp_ref = e->valuedouble;
			}
		}
	}
	ob->why = MARGINS_WHY_NONE;
out:
	cJSON_Delete(j);
}

enum margins_label margins_judge(const struct margins_obs *ob, bool past_vocab, bool duplicate, double eps,
				 enum margins_why *why)
{
	*why = MARGINS_WHY_NONE;
	if (past_vocab)
		return MARGINS_PAST_VOCAB;
	if (duplicate)
		return MARGINS_DUPLICATE;
	if (ob->why != MARGINS_WHY_NONE) {
		*why = ob->why;
		return MARGINS_NOT_EVALUABLE;
	}
	if (!ob->ref_known) {
		*why = MARGINS_WHY_REF_ABSENT;
		return MARGINS_NOT_EVALUABLE;
	}
	if (fabs(ob->lp_ref - ob->lp_got) < eps)
		return MARGINS_NEAR_TIE;
	if (ob->lp_got > ob->lp_ref) {
		*why = MARGINS_WHY_PREFERS_GOT;
		return MARGINS_NOT_EVALUABLE;
	}
	return MARGINS_LOW_PROB;
}

enum status margins_run(struct margins *m, double timeout_s, struct margins_report *rep, struct status_info *si)
{
	size_t i;

	memset(rep, 0, sizeof(*rep));
	rep->eps = m->eps;
	rep->n_dropped = m->n_dropped;
	rep->items = calloc(m->n ? m->n : 1, sizeof(*rep->items));
	if (!rep->items)
		return status_set(si, STATUS_NOMEM, "margins: out of memory");
	for (i = 0; i < m->n; i++) {
		struct margins_keep *k = &m->k[i];
		struct margins_item *it = &rep->items[i];
		struct http_response res;
		struct status_info esi;
		char xid[160], *body;
		enum status st;

		*it = k->it;
		it->ob.lp_got = it->ob.lp_ref = it->ob.lp_top = NAN;
		if (!k->prompt) {
			it->ob.why = MARGINS_WHY_CHAT;
		} else {
			body = margins_body(k->model, k->prompt, k->text);
			if (!body)
				return status_set(si, STATUS_NOMEM, "margins: out of memory");
			snprintf(xid, sizeof(xid), "%.120s-margin", it->request_id);
			status_info_clear(&esi);
			st = http_post_json(k->url, body, xid, timeout_s, 0, &res, &esi);
			free(body);
			rep->n_requests++;
			if (st) {
				it->ob.why = MARGINS_WHY_NO_ANSWER;
				snprintf(it->ob.detail, sizeof(it->ob.detail), "%.150s", esi.msg);
			} else if (res.status != 200) {
				char ex[120];

				it->ob.why = MARGINS_WHY_REFUSED;
				snprintf(it->ob.detail, sizeof(it->ob.detail), "http %ld: %s", res.status,
					 http_excerpt(res.body, res.n_body, 100, ex, sizeof(ex)));
			} else {
				margins_read(res.body, res.n_body, k->char_off, k->ref_rest, &it->ob);
			}
			http_response_release(&res);
		}
		it->label = margins_judge(&it->ob, k->past_vocab, k->duplicate, m->eps, &it->why);
		rep->n_label[it->label]++;
		rep->n++;
	}
	return STATUS_OK;
}

void margins_report_release(struct margins_report *rep)
{
	free(rep->items);
	memset(rep, 0, sizeof(*rep));
}
