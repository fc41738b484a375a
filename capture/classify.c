#include "classify.h"

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "jdoc.h"

#define CLASSIFY_DEPTH 32   /* deeper objects are left to jdoc_check */

static int classify_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int classify_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* End of the string whose opening quote is at s[i], or 0 to give up. */
static size_t classify_string(const char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"')
			return i + 1;
		if (c < 0x20 || c == '\\')
			return 0;
	}
	return 0;
}

/* End of the JSON number at s[i], or 0 when it is not one. */
static size_t classify_number(const char *s, size_t n, size_t i)
{
	if (s[i] == '-')
		i++;
	if (i >= n || !classify_digit(s[i]))
		return 0;
	if (s[i] == '0')
		i++;
	else
		while (i < n && classify_digit(s[i]))
			i++;
	if (i < n && s[i] == '.') {
		if (++i >= n || !classify_digit(s[i]))
			return 0;
		while (i < n && classify_digit(s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !classify_digit(s[i]))
			return 0;
		while (i < n && classify_digit(s[i]))
			i++;
	}
	return i;
}

static size_t classify_skip(const char *s, size_t n, size_t i)
{
	while (i < n && classify_ws(s[i]))
		i++;
	return i;
}

/*
 * A member name and its ':' at s[i]; returns where the value starts, or 0.
 * In the top-level object (depth 1) the last "ev" decides, as in jdoc_check.
 */
static size_t classify_member(const char *s, size_t n, size_t i, int depth, int *ev)
{
	size_t k = i + 1, end = i < n && s[i] == '"' ? classify_string(s, n, i) : 0;

	if (!end)
		return 0;
	i = classify_skip(s, n, end);
	if (i >= n || s[i] != ':')
		return 0;
	i = classify_skip(s, n, i + 1);
	if (depth == 1 && end - k == 3 && s[k] == 'e' && s[k + 1] == 'v')
		*ev = i < n && s[i] == '"';
	return i;
}

int classify_object(const char *s, size_t n, int *has_ev)
{
	char stack[CLASSIFY_DEPTH];
	int depth = 0, ev = 0;
	size_t i = classify_skip(s, n, 0);

	if (i >= n || s[i] != '{')
		return -1;
	for (;;) {
		char c;

		/* a value starts at s[i] */
		if (i >= n)
			return -1;
		c = s[i];
		if (c == '{' || c == '[') {
			if (depth == CLASSIFY_DEPTH)
				return -1;
			stack[depth++] = c;
			i = classify_skip(s, n, i + 1);
			if (i < n && s[i] == (c == '{' ? '}' : ']')) {
				i++;
				depth--;
			} else {
				if (c == '{' && !(i = classify_member(s, n, i, depth, &ev)))
					return -1;
				continue;
			}
		} else {
			if (c == '"')
				i = classify_string(s, n, i);
			else if (c == 't')
				i = n - i >= 4 && !memcmp(s + i, "true", 4) ? i + 4 : 0;
			else if (c == 'f')
				i = n - i >= 5 && !memcmp(s + i, "false", 5) ? i + 5 : 0;
			else if (c == 'n')
				i = n - i >= 4 && !memcmp(s + i, "null", 4) ? i + 4 : 0;
			else if (c == '-' || classify_digit(c))
				/* a run of numbers in an array (positions) in one go */
				while ((i = classify_number(s, n, i)) && stack[depth - 1] == '[' &&
				       n - i >= 2 && s[i] == ',' && (s[i + 1] == '-' || classify_digit(s[i + 1])))
					i++;
			else
				i = 0;
			if (!i)
				return -1;
		}
		/* after a value: a ',' before the next one, or closing brackets */
		for (;;) {
			i = classify_skip(s, n, i);
			if (!depth) {
				if (i != n)
					return -1;
				*has_ev = ev;
				return 1;
			}
			if (i >= n)
				return -1;
			if (s[i] == ',') {
				i = classify_skip(s, n, i + 1);
				if (stack[depth - 1] == '{' && !(i = classify_member(s, n, i, depth, &ev)))
					return -1;
				break;
			}
			if (s[i] != (stack[depth - 1] == '{' ? '}' : ']'))
				return -1;
			i++;
			depth--;
		}
	}
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
		struct jdoc_check chk;
		size_t off = (size_t)(brace - line);
		int ev = 0;

		/* The quick reading first; whatever it does not settle, jdoc_check does. */
		if (classify_object(brace, n - off, &ev) < 0)
			ev = jdoc_check(brace, n - off, &chk) == 0 && chk.has_ev;
		if (ev) {
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

	classify_scan(line, n, &scan);
	return classify_line_scanned(line, n, &scan, rules, sc, res);
}
