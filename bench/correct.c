#include "bench/correct.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const correct_names[] = {
	[CORRECT_IDENTICAL] = "identical",
	[CORRECT_DIVERGED] = "diverged",
	[CORRECT_WRONG] = "wrong",
	[CORRECT_FAILED] = "failed",
	[CORRECT_NO_REFERENCE] = "no-reference",
};

const char *correct_verdict_name(enum correct_verdict v)
{
	if ((unsigned)v > CORRECT_NO_REFERENCE)
		return "unknown";
	return correct_names[v];
}

const char *correct_missing(const struct suite_entry *e, const char *text)
{
	size_t i;

	for (i = 0; i < e->n_expect; i++)
		if (!text || !strstr(text, e->expect[i]))
			return e->expect[i];
	return NULL;
}

/* A printable excerpt of s[0..n) into buf. */
static void correct_excerpt(const char *s, size_t n, char *buf, size_t sz)
{
	size_t i, k = 0;

	for (i = 0; i < n && k + 1 < sz; i++)
		buf[k++] = (unsigned char)s[i] < 0x20 ? ' ' : s[i];
	buf[k] = '\0';
}

/* The content token (chunk) of r that holds byte off. */
size_t correct_chunk_at(const struct load_result *r, size_t off)
{
	size_t lo = 0, hi, n = r->n_chunks < LOAD_MAX_TOKENS ? r->n_chunks : LOAD_MAX_TOKENS;

	if (!r->tok_off || !n)
		return 0;
	hi = n;
	/* the last chunk whose start is <= off */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (r->tok_off[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return off >= r->tok_off[n] ? n : lo;
}

/* Chunk c of got (where it first differs from ref) repeats chunk c - 1, both
 * one token, and ref does not go on with that text there. */
static bool correct_is_duplicate(const struct load_result *ref, const struct load_result *got, size_t c)
{
	size_t a0, a1, p0, n;

	if (!c || !got->tok_off || !got->text || c >= got->n_chunks || c >= LOAD_MAX_TOKENS)
		return false;
	if (got->tok_n && (got->tok_n[c] != 1 || got->tok_n[c - 1] != 1))
		return false;
	p0 = got->tok_off[c - 1];
	a0 = got->tok_off[c];
	a1 = got->tok_off[c + 1];
	n = a1 - a0;
	if (!n || a0 - p0 != n || memcmp(got->text + a0, got->text + p0, n))
		return false;
	return !(ref->text && ref->text_len >= a0 + n && !memcmp(ref->text + a0, got->text + a0, n));
}

/*
 * How much of the reference's text the output should have: all of it, or,
 * when the output stopped sooner by design (a smaller max_tokens, a client
 * abort: the churn workload), as much as it has: it is right when it is a
 * prefix of the reference.
 */
static size_t correct_ref_len(const struct load_result *ref, const struct load_result *got)
{
	if (got->n_tokens >= ref->n_tokens || got->text_len > ref->text_len)
		return ref->text_len;
	if (!got->aborted && strcmp(got->finish_reason, "length"))
		return ref->text_len;
	return got->text_len;
}

size_t correct_tokens_before(const struct load_result *r, size_t chunk)
{
	size_t j, k = 0;

	for (j = 0; j < chunk && j < r->n_chunks && j < LOAD_MAX_TOKENS; j++)
		k += r->tok_n ? r->tok_n[j] : 1;
	return k;
}

enum status correct_compare(const struct suite *s, const struct load_run *ref,
			    const struct load_run *got, struct correct_report *rep,
			    struct status_info *si)
{
	size_t i, p, off, la, lb;
	const struct load_result *a, *b;
	struct correct_item *it;

	memset(rep, 0, sizeof(*rep));
	if (ref->n != s->n)
		return status_set(si, STATUS_USAGE, "correctness: reference has %zu requests for %zu prompts",
				  ref->n, s->n);
	rep->items = calloc(got->n ? got->n : 1, sizeof(*rep->items));
	if (!rep->items)
		return status_set(si, STATUS_NOMEM, "correctness: out of memory");
	rep->n = got->n;
	rep->n_ref = ref->n;
	for (i = 0; i < ref->n; i++) {
		a = &ref->res[i];
		if (a->fail)
			rep->n_ref_failed++;
		else if (correct_missing(&s->e[a->prompt_index], a->text))
			rep->n_ref_wrong++;
	}
	for (i = 0; i < got->n; i++) {
		b = &got->res[i];
		p = b->prompt_index;
		it = &rep->items[i];
		it->request = i;
		it->prompt_index = p;
		if (p >= s->n) {
			correct_report_release(rep);
			return status_set(si, STATUS_USAGE, "correctness: request %zu names prompt %zu of %zu",
					  i, p, s->n);
		}
		a = &ref->res[p];
		if (b->fail) {
			it->verdict = CORRECT_FAILED;
		} else if ((it->missing = correct_missing(&s->e[p], b->text))) {
			it->verdict = CORRECT_WRONG;
		} else if (a->fail) {
			it->verdict = CORRECT_NO_REFERENCE;
		} else {
			la = correct_ref_len(a, b);
			lb = b->text_len;
			for (off = 0; off < la && off < lb && a->text[off] == b->text[off]; off++)
				;
			if (off == la && off == lb) {
				it->verdict = CORRECT_IDENTICAL;
			} else {
				it->verdict = CORRECT_DIVERGED;
				{
					size_t c = correct_chunk_at(b, off), j;

					/* in tokens: a chunk may carry several */
					it->at = 0;
					for (j = 0; j < c; j++)
						it->at += b->tok_n ? b->tok_n[j] : 1;
					it->at_span = b->tok_n && c < b->n_chunks && c < LOAD_MAX_TOKENS ? b->tok_n[c] : 1;
					it->duplicate = correct_is_duplicate(a, b, c);
				}
				correct_excerpt(a->text ? a->text + off : "", la - off, it->ref_excerpt,
						sizeof(it->ref_excerpt));
				correct_excerpt(b->text ? b->text + off : "", lb - off, it->got_excerpt,
						sizeof(it->got_excerpt));
			}
		}
		switch (it->verdict) {
		case CORRECT_IDENTICAL: rep->n_identical++; break;
		case CORRECT_DIVERGED: rep->n_diverged++; rep->n_duplicate += it->duplicate; break;
		case CORRECT_WRONG: rep->n_wrong++; break;
		case CORRECT_FAILED: rep->n_failed++; break;
		case CORRECT_NO_REFERENCE: rep->n_no_reference++; break;
		}
		if (it->verdict != CORRECT_IDENTICAL)
			rep->n_failing++;
	}
	return STATUS_OK;
}

void correct_report_release(struct correct_report *rep)
{
	free(rep->items);
	rep->items = NULL;
	rep->n = 0;
}
