/* classify.c - a complete log line as audit, banner or other (classify.h), the line found in one pass. */
#include "capture/classify.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "base/auditline.h"

int classify_object(const char *s, size_t n, int *has_ev)
{
	return auditline_object(s, n, has_ev);
}

/* The first '\n' and '{' of s[from..n) and whether it holds an ESC: the slow part, bytes one by one. */
static void classify_scan_bytes(const char *s, size_t from, size_t n, const char **nl, const char **brace,
				int *esc)
{
	size_t i;

	for (i = from; i < n; i++) {
		if (s[i] == '\n' && !*nl)
			*nl = s + i;
		else if (s[i] == '{' && !*brace)
			*brace = s + i;
		else if (s[i] == 0x1b)
			*esc = 1;
	}
}

void classify_scan(const char *s, size_t n, struct classify_scan *out)
{
	const char *nl = NULL, *brace = NULL;
	int esc = 0;
	size_t i = 0;

#ifdef __SSE2__
	if (n >= 16) {
		const __m128i vnl = _mm_set1_epi8('\n'), vbr = _mm_set1_epi8('{'), vesc = _mm_set1_epi8(0x1b);

		/* most blocks hold none of the three: one test each */
		for (;; i += 16) {
			__m128i v;
			int m;

			if (i + 16 > n)
				i = n - 16;   /* the last block overlaps the one before */
			v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
			m = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, vnl), _mm_cmpeq_epi8(v, vbr)),
							   _mm_cmpeq_epi8(v, vesc)));
			if (m)
				classify_scan_bytes(s, i + (size_t)__builtin_ctz((unsigned)m), i + 16, &nl, &brace, &esc);
			if (i + 16 >= n)
				break;
		}
		out->nl = nl;
		out->brace = brace;
		out->esc = esc;
		return;
	}
#endif
	classify_scan_bytes(s, i, n, &nl, &brace, &esc);
	out->nl = nl;
	out->brace = brace;
	out->esc = esc;
}

enum classify_kind classify_line_scanned(const char *line, size_t n, const struct classify_scan *scan,
					 const struct banner_set *rules, struct banner_scratch *sc,
					 struct classify_result *res)
{
	const char *brace = scan->brace;

	res->kind = CLASSIFY_OTHER;
	res->obj = NULL;
	res->obj_len = 0;
	res->rule = -1;
	if (scan->esc) {
		/* colour codes: stripped into the scratch, and looked at again there */
		line = banner_strip(line, n, sc->strip, sizeof(sc->strip), &n);
		brace = memchr(line, '{', n);
	} else {
		/* a vLLM prefix holds no '{': the brace found stays where it is */
		size_t k = banner_prefix_len(line, n);
		line += k;
		n -= k;
	}
	if (brace) {
		size_t off = (size_t)(brace - line), at = 0;

		/* (from the brace already found: auditline_find's search ends at once) */
		if (auditline_find(brace, n - off, &at)) {
			res->kind = CLASSIFY_AUDIT;
			res->obj = brace;
			res->obj_len = n - off;
			return res->kind;
		}
	}
	if (rules) {
		int r = banner_set_match(rules, line, n, sc);
		if (r >= 0) {
			res->kind = CLASSIFY_BANNER;
			res->rule = r;
		}
	}
	return res->kind;
}

enum classify_kind classify_line(const char *line, size_t n, const struct banner_set *rules,
				 struct banner_scratch *sc, struct classify_result *res)
{
	struct classify_scan scan;

	/*
	 * A line already cut holds no '\n' to look for: two memchr, whose
	 * vector loops run ahead of classify_scan's three compares per block
	 * on the lines a reader sees most (neither byte in them).
	 */
	scan.nl = NULL;
	scan.brace = memchr(line, '{', n);
	scan.esc = memchr(line, 0x1b, n) != NULL;
	return classify_line_scanned(line, n, &scan, rules, sc, res);
}
