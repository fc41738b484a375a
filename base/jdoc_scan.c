/*
 * jdoc_scan.c - jdoc_scan_*: one object read member by member, without
 * nodes or allocation, for the hot paths (the replay reads its audits this
 * way). Word-at-a-time fast paths for the shapes audits are made of
 * (integers, strings without escapes, runs of null and false); integer
 * arrays go to jdoc_simd.c, and everything else to the shared grammar
 * (jdoc_gram.h), so that the scanner accepts only what jdoc_parse accepts.
 */
#include <stdlib.h>
#include <string.h>

#include "base/jdoc_simd.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define JDOC_GRAM_TREE 0
#include "base/jdoc_gram.h"

/*
 * The scanner may read up to 64 bytes past the position it looks at; the
 * caller guarantees a NUL at s[n] and JDOC_SCAN_PAD readable bytes after it,
 * and every fast path stops on that NUL because it is neither a digit, a
 * quote nor a separator.
 */

/* Literals, compared as words (the compiler turns these into one or two loads). */
#define JS_IS_NULL(p)  (!memcmp((p), "null", 4))
#define JS_IS_TRUE(p)  (!memcmp((p), "true", 4))
#define JS_IS_FALSE(p) (!memcmp((p), "false", 5))

/* The scanner reads one line: a newline ends it, even where whitespace may stand. */
static inline const char *js_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

/* Skips whitespace only where there is some: compact JSON has none. */
#define JS_WS(p) do { if ((unsigned char)*(p) <= ' ') (p) = js_ws(p); } while (0)

/*
 * An integer literal at p within int64: its value in *out and the byte after
 * it, or NULL for anything else (the tree reads it as a number, or rejects it).
 */
static inline __attribute__((always_inline)) const char *js_int(const char *p, int64_t *out)
{
	int neg = *p == '-';
	uint64_t mag;
	unsigned k;

	p += neg;
#if JDOC_SWAR
	{
		uint64_t w = js_load64(p);
		k = js_digits8(w);
		if (k == 0)
			return NULL;
		if (k < 8) {
			if (k > 1 && *p == '0')
				return NULL;
			mag = js_eight_digits(w << (64 - 8 * k));
			p += k;
			goto tail;
		}
	}
#endif
	if (*p < '0' || *p > '9')
		return NULL;
	if (*p == '0') {
		p++;
		if (*p >= '0' && *p <= '9')
			return NULL;
		mag = 0;
	} else {
		mag = 0;
		for (k = 0; *p >= '0' && *p <= '9'; k++, p++) {
			unsigned d = (unsigned)(*p - '0');
			if (k >= 19 && mag > (UINT64_MAX - d) / 10)
				return NULL;
			mag = mag * 10 + d;
		}
	}
#if JDOC_SWAR
tail:
#endif
	if (*p == '.' || *p == 'e' || *p == 'E')
		return NULL;
	if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
		return NULL;
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return p;
}

/*
 * The end of a string whose opening quote is at p: the first '"', '\\' or
 * control byte after it.
 */
static inline __attribute__((always_inline)) const char *js_str_stop(const char *q)
{
#if defined(__SSE2__)
	const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i ctl = _mm_set1_epi8(0x1f);

	for (;; q += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bs)),
					   _mm_cmpeq_epi8(_mm_subs_epu8(x, ctl), _mm_setzero_si128()));
		unsigned m = (unsigned)_mm_movemask_epi8(hit);
		if (m)
			return q + __builtin_ctz(m);
	}
#else
	while (*q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
		q++;
	return q;
#endif
}

/* js_str_stop within the 16 bytes at q only: NULL when none of them stops a string. */
static inline __attribute__((always_inline)) const char *js_str_stop16(const char *q)
{
#if defined(__SSE2__)
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
	__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
						_mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
				   _mm_cmpeq_epi8(_mm_subs_epu8(x, _mm_set1_epi8(0x1f)),
						  _mm_setzero_si128()));
	unsigned m = (unsigned)_mm_movemask_epi8(hit);

	return m ? q + __builtin_ctz(m) : NULL;
#else
	int i;

	for (i = 0; i < 16; i++)
		if (q[i] == '"' || q[i] == '\\' || (unsigned char)q[i] < 0x20)
			return q + i;
	return NULL;
#endif
}


void jdoc_scan_init(struct jdoc_scan *sc, const char *s, size_t n, unsigned max_depth,
		    char *arena, size_t arena_len)
{
	sc->s = s;
	sc->p = s;
	sc->end = s + n;
	sc->depth = 0;
	sc->max_depth = max_depth < 1 ? 1 : max_depth > JDOC_DEPTH_LIMIT ? JDOC_DEPTH_LIMIT : max_depth;
	sc->first = 0;
	sc->arena = arena;
	sc->arena_end = arena + arena_len;
}

/* The grammar functions of the tree, positioned where the scan is. */
static void js_jp(const struct jdoc_scan *sc, struct jp *p, char *sp)
{
	memset(p, 0, sizeof(*p));
	p->s = sc->s;
	p->n = (size_t)(sc->end - sc->s);
	p->i = (size_t)(sc->p - sc->s);
	p->sp = sp;
	p->depth = sc->depth;
	p->max_depth = sc->max_depth;
	p->keep_surrogates = 1;
	p->one_line = 1;
}

int jdoc_scan_object(struct jdoc_scan *sc)
{
	const char *p = sc->p;

	JS_WS(p);
	if (*p != '{' || sc->depth + 1 > sc->max_depth)
		return -1;
	sc->depth++;
	sc->first = 1;
	sc->p = p + 1;
	return 1;
}

/*
 * What comes before an object's member or an array's element: the closing
 * byte (0: the container is done, left behind), or, after the first, a ','
 * (1, *pp past it and its whitespace); -1 for anything else.
 */
static inline __attribute__((always_inline)) int js_next(struct jdoc_scan *sc, const char **pp, char close)
{
	const char *p = *pp;

	JS_WS(p);
	if (*p == close) {
		sc->p = p + 1;
		sc->depth--;
		sc->first = 0;
		return 0;
	}
	if (!sc->first) {
		if (*p != ',')
			return -1;
		p++;
		JS_WS(p);
	}
	*pp = p;
	return 1;
}

int jdoc_scan_key(struct jdoc_scan *sc, const char **key, size_t *len)
{
	const char *p = sc->p, *q;
	int rc = js_next(sc, &p, '}');

	if (rc <= 0)
		return rc;
	if (*p != '"')
		return -1;
	q = js_str_stop(p + 1);
	if (*q != '"')
		return -1;    /* an escape in the name (or bad input): the tree decides */
	*key = p + 1;
	*len = (size_t)(q - p - 1);
	p = q + 1;
	JS_WS(p);
	if (*p != ':')
		return -1;
	p++;
	JS_WS(p);
	sc->first = 0;
	sc->p = p;
	return 1;
}

enum jtype jdoc_scan_peek(const struct jdoc_scan *sc)
{
	const char *p = sc->p;

	JS_WS(p);
	switch (*p) {
	case '{': return JT_OBJ;
	case '[': return JT_ARR;
	case '"': return JT_STR;
	case 'n': return JT_NULL;
	case 't': return JT_TRUE;
	case 'f': return JT_FALSE;
	default: return JT_REAL;
	}
}

int jdoc_scan_array(struct jdoc_scan *sc)
{
	const char *p = sc->p;

	JS_WS(p);
	if (*p != '[' || sc->depth + 1 > sc->max_depth)
		return -1;
	sc->depth++;
	sc->first = 1;
	sc->p = p + 1;
	return 1;
}

int jdoc_scan_elem(struct jdoc_scan *sc)
{
	const char *p = sc->p;
	int rc = js_next(sc, &p, ']');

	if (rc <= 0)
		return rc;
	sc->first = 0;
	sc->p = p;
	return 1;
}

void jdoc_scan_name_init(struct jdoc_scan_name *nm, const char *name, size_t n, int first)
{
	unsigned char text[24];
	size_t len = 0, i;

	memset(nm, 0, sizeof(*nm));
	if (n > 20 || (first ? n + 3 : n + 4) > sizeof(text))
		return;   /* len 0: never matches */
	if (!first)
		text[len++] = ',';
	text[len++] = '"';
	memcpy(text + len, name, n);
	len += n;
	text[len++] = '"';
	text[len++] = ':';
	for (i = 0; i < len; i++) {
		nm->w[i / 8] |= (uint64_t)text[i] << (8 * (i % 8));
		nm->m[i / 8] |= (uint64_t)0xFF << (8 * (i % 8));
	}
	nm->len = (uint8_t)len;
}

int jdoc_scan_key_is(struct jdoc_scan *sc, const struct jdoc_scan_name *nm)
{
	const char *p = sc->p;

	if (!JDOC_SWAR)
		return 0;   /* the words are laid out little-endian */
	if (!nm->len || (((js_load64(p) ^ nm->w[0]) & nm->m[0]) |
			 ((js_load64(p + 8) ^ nm->w[1]) & nm->m[1]) |
			 ((js_load64(p + 16) ^ nm->w[2]) & nm->m[2])))
		return 0;
	p += nm->len;
	JS_WS(p);
	sc->first = 0;
	sc->p = p;
	return 1;
}

int jdoc_scan_end(struct jdoc_scan *sc)
{
	const char *p = sc->p;

	JS_WS(p);
	return p == sc->end && sc->depth == 0 ? 1 : -1;
}

int jdoc_scan_end_line(struct jdoc_scan *sc, size_t *len)
{
	const char *p = sc->p;

	JS_WS(p);
	if (sc->depth || p > sc->end || (p < sc->end && *p != '\n'))
		return -1;
	*len = (size_t)(p - sc->s);
	return 1;
}

int jdoc_scan_skip(struct jdoc_scan *sc)
{
	struct jp p;
	int32_t idx;
	uint32_t n;

	/* the common unknown member is an integer array: take the fast road first */
	if (*sc->p == '[' && jdoc_scan_int_array(sc, NULL, SIZE_MAX, &n) == 1)
		return 1;
	js_jp(sc, &p, NULL);
	if (jp_value(&p, &idx))
		return -1;
	sc->p = sc->s + p.i;
	return 1;
}

int jdoc_scan_int(struct jdoc_scan *sc, int64_t *out)
{
	const char *p = sc->p;

	if (JS_IS_NULL(p)) {
		sc->p = p + 4;
		return 0;
	}
	if (!(p = js_int(p, out)))
		return -1;
	sc->p = p;
	return 1;
}

int jdoc_scan_bool(struct jdoc_scan *sc, int *out)
{
	const char *p = sc->p;

	if (JS_IS_TRUE(p)) {
		*out = 1;
		sc->p = p + 4;
		return 1;
	}
	if (JS_IS_NULL(p)) {
		sc->p = p + 4;
		return 0;
	}
	if (JS_IS_FALSE(p)) {
		*out = 0;
		sc->p = p + 5;
		return 1;
	}
	return -1;
}

int jdoc_scan_number(struct jdoc_scan *sc, double *out)
{
	const char *p = sc->p;
	int64_t i;
	struct jp jp;
	int neg, is_int, overflow;
	uint64_t mag;

	if (JS_IS_NULL(p)) {
		sc->p = p + 4;
		return 0;
	}
	if (*p != '-' && (*p < '0' || *p > '9'))
		return -1;
	js_jp(sc, &jp, NULL);
	if (jp_number_lit(&jp, &neg, &mag, &is_int, &overflow))
		return -1;
	if (out) {
		if (jp_number_int64(neg, mag, is_int, overflow, &i)) {
			*out = (double)i;
		} else {
			/* strtod as the tree does, on a terminated copy in the arena */
			size_t len = jp.i - (size_t)(p - sc->s);
			if ((size_t)(sc->arena_end - sc->arena) < len + 1)
				return -1;
			memcpy(sc->arena, p, len);
			sc->arena[len] = '\0';
			*out = strtod(sc->arena, NULL);
		}
	}
	sc->p = sc->s + jp.i;
	return 1;
}

/* A string at p (on its quote) into the arena: its start, length and the byte after it. */
static inline const char *js_str(struct jdoc_scan *sc, const char *p, const char **out,
				 uint32_t *len)
{
	const char *q = js_str_stop(p + 1);
	size_t n = (size_t)(q - p - 1);
	char *a = sc->arena;

	if (*q == '"') {
		if ((size_t)(sc->arena_end - a) < n + 1)
			return NULL;
		memcpy(a, p + 1, n);
		a[n] = '\0';
		sc->arena = a + n + 1;
		*out = a;
		*len = (uint32_t)n;
		return q + 1;
	}
	{
		/* escapes: the tree's own unescaping, into the arena */
		struct jp jp;
		const char *z = NULL;
		uint32_t zn = 0;
		const char *save = sc->p;
		if ((size_t)(sc->arena_end - a) < (size_t)(sc->end - p))
			return NULL;
		sc->p = p;
		js_jp(sc, &jp, a);
		sc->p = save;
		if (jp_string(&jp, &z, &zn))
			return NULL;
		sc->arena = jp.sp;
		*out = z;
		*len = zn;
		return sc->s + jp.i;
	}
}

int jdoc_scan_str_inplace(struct jdoc_scan *sc, const char **out, uint32_t *len)
{
	const char *p = sc->p, *q;

	if (*p != '"' || *(q = js_str_stop(p + 1)) != '"')
		return -1;
	*out = p + 1;
	*len = (uint32_t)(q - p - 1);
	sc->p = q + 1;
	return 1;
}

int jdoc_scan_str(struct jdoc_scan *sc, const char **out, uint32_t *len)
{
	const char *p = sc->p;

	if (JS_IS_NULL(p)) {
		sc->p = p + 4;
		return 0;
	}
	if (*p != '"' || !(p = js_str(sc, p, out, len)))
		return -1;
	sc->p = p;
	return 1;
}

/*
 * The shared frame of the array readers: '[' (or null), entries read by ENTRY
 * (which advances p or leaves with -1), ',' between them, ']'.
 */
#define JS_ARRAY(sc, n, ENTRY) JS_ARRAY_RUN(sc, n, (void)0, ENTRY)

/*
 * JS_ARRAY whose RUN (after the '[', p on the first entry) may take a run
 * of entries at once: it adds them to k and leaves p on the entry after
 * them (after their last ',').
 */
#define JS_ARRAY_RUN(sc, n, RUN, ENTRY) do {                               \
	const char *p = (sc)->p;                                           \
	uint32_t k = 0;                                                    \
	if (*p != '[') {                                                   \
		if (JS_IS_NULL(p)) {                             \
			(sc)->p = p + 4;                                   \
			*(n) = 0;                                          \
			return 0;                                          \
		}                                                          \
		return -1;                                                 \
	}                                                                  \
	if ((sc)->depth + 1 > (sc)->max_depth)                             \
		return -1;                                                 \
	p++;                                                               \
	JS_WS(p);                                                          \
	if (*p != ']') {                                                   \
		RUN;                                                       \
		for (;;) {                                                 \
			if (k >= cap)                                      \
				return -1;                                 \
			ENTRY;                                             \
			k++;                                               \
			JS_WS(p);                                          \
			if (*p == ',') {                                   \
				p++;                                       \
				JS_WS(p);                                  \
				continue;                                  \
			}                                                  \
			if (*p != ']')                                     \
				return -1;                                 \
			break;                                             \
		}                                                          \
	}                                                                  \
	(sc)->p = p + 1;                                                   \
	*(n) = k;                                                          \
	return 1;                                                          \
} while (0)

int jdoc_scan_int_array(struct jdoc_scan *sc, int64_t *dst, size_t cap, uint32_t *n)
{
	int64_t v;

	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
#if defined(__SSE2__) && JDOC_SWAR
	if (sc->p[0] == '[' && sc->depth + 1 <= sc->max_depth && sc->p[1] != ']' &&
	    (unsigned char)sc->p[1] > ' ' && jdoc_simd_int_array(sc, sc->p + 1, dst, cap, n))
		return 1;
#endif
	JS_ARRAY(sc, n, {
		if (!(p = js_int(p, &v)))
			return -1;
		if (dst)
			dst[k] = v;
	});
}

/*
 * The length of the prefix of the 32 bytes at p that repeats pat (a period
 * of 5 or 6 bytes laid out over 32), in whole periods: the entries of a run
 * of `null,` or `false,` read with two compares. Within the line and its
 * padding: the caller is inside the array, before its NUL.
 */
static inline __attribute__((always_inline)) unsigned js_run32(const char *p, const char *pat,
							    unsigned period)
{
#if defined(__SSE2__)
	__m128i a = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)p),
				   _mm_loadu_si128((const __m128i *)(const void *)pat));
	__m128i b = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)),
				   _mm_loadu_si128((const __m128i *)(const void *)(pat + 16)));
	uint32_t m = (uint32_t)_mm_movemask_epi8(a) | (uint32_t)_mm_movemask_epi8(b) << 16;

	return (unsigned)__builtin_ctzll(~(uint64_t)m) / period;
#else
	unsigned i = 0;

	while (i < 32 && p[i] == pat[i])
		i++;
	return i / period;
#endif
}

static const char js_nulls[33] = "null,null,null,null,null,null,nu";
static const char js_falses[33] = "false,false,false,false,false,fa";

int jdoc_scan_bool_array(struct jdoc_scan *sc, uint8_t *dst, size_t cap, uint32_t *n)
{
	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	/*
	 * A run of `false,` (the common taken array) five entries at a time,
	 * what follows it (the last entry included) by the reader entry by
	 * entry. Only with jdoc_simd on, so the tests hold both readings
	 * together.
	 */
	JS_ARRAY_RUN(sc, n, {
		uint32_t r;
		while (jdoc_simd_allowed && (r = js_run32(p, js_falses, 6)) > 0 && k + r <= cap) {
			if (dst)
				memset(dst + k, 0, r);
			k += r;
			p += 6 * r;
			JS_WS(p);
			if (r < 5)
				break;
		}
	}, {
		uint8_t b;
		if (JS_IS_TRUE(p)) {
			b = 1;
			p += 4;
		} else if (JS_IS_FALSE(p)) {
			b = 0;
			p += 5;
		} else {
			return -1;
		}
		if (dst)
			dst[k] = b;
	});
}

int jdoc_scan_str_array(struct jdoc_scan *sc, const char **dst, uint32_t *lens, size_t cap,
			uint32_t *n)
{
	const char *p = sc->p;
	uint32_t k = 0;

	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	/*
	 * The compact form first (entries of strings without escapes and nulls,
	 * commas, no spaces), in a loop with nothing else to look at; anything
	 * else goes to the general reader below, from the start. Both readings of
	 * an entry are made at once and one is selected, with no branch on which:
	 * request id arrays mix strings and nulls slot by slot. A string stays
	 * where it is in the input.
	 */
	if (p[0] == '[' && p[1] != ']' && sc->depth + 1 <= sc->max_depth) {
		for (p++;; p++) {
			const char *q, *z;
			int is_null, is_str;
			uint32_t r;
			if (*p == 'n' && jdoc_simd_allowed && (r = js_run32(p, js_nulls, 5)) > 0 &&
			    k + r <= cap) {
				/* a run of `null,` (most slots are free), six at a time */
				if (dst) {
					uint32_t j;
					for (j = 0; j < r; j++) {
						dst[k + j] = NULL;
						lens[k + j] = 0;
					}
				}
				k += r;
				p += 5 * r - 1;   /* on the run's last ',' */
				continue;
			}
			q = js_str_stop16(p + 1);
			is_null = JS_IS_NULL(p);
			if (__builtin_expect(!q, 0))
				q = *p == '"' ? js_str_stop(p + 17) : p;   /* longer than 15 bytes */
			is_str = (*p == '"') & (*q == '"');
			if (__builtin_expect(!(is_null | is_str) || k >= cap, 0))
				break;
			z = is_str ? p + 1 : NULL;
			if (dst) {
				dst[k] = z;
				lens[k] = is_str ? (uint32_t)(q - p - 1) : 0;
			}
			k++;
			p = is_str ? q + 1 : p + 4;
			if (*p == ',')
				continue;
			if (*p == ']') {
				sc->p = p + 1;
				*n = k;
				return 1;
			}
			break;
		}
	}
	JS_ARRAY(sc, n, {
		const char *z = NULL;
		const char *q;
		uint32_t zn = 0;
		if (*p == '"' && *(q = js_str_stop(p + 1)) == '"') {
			z = p + 1;   /* no escape: it stays in the input, as above */
			zn = (uint32_t)(q - p - 1);
			p = q + 1;
		} else if (*p == '"') {
			if (!(p = js_str(sc, p, &z, &zn)))
				return -1;
		} else if (JS_IS_NULL(p)) {
			p += 4;
		} else {
			return -1;
		}
		if (dst) {
			dst[k] = z;
			lens[k] = zn;
		}
	});
}
