/*
 * jdoc_simd.c - the scanner's block reader of integer arrays (SSE2, and AVX2
 * chosen at run time) and the switch that turns SIMD off for tests
 * (jdoc_simd). Token and position arrays are most of an audit's bytes: they
 * are validated 64 bytes at a time, and converted only when wanted.
 */
#include "base/jdoc_simd.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

int jdoc_simd_allowed = 1;

void jdoc_simd(int allow)
{
	jdoc_simd_allowed = allow != 0;
}

int jdoc_simd_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	return jdoc_simd_allowed && __builtin_cpu_supports("avx2");
#else
	return 0;
#endif
}

#if defined(__SSE2__) && JDOC_SWAR
/* Byte classes of the 64 bytes at p, one bit per byte. */
struct js_classes {
	uint64_t digit, minus, comma, zero, other;   /* other: none of digit, '-', ',' */
};

static inline __attribute__((always_inline)) void js_classify64(const char *p,
								struct js_classes *k)
{
	const __m128i c = _mm_set1_epi8(','), minus = _mm_set1_epi8('-');
	const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
	uint64_t dg = 0, mi = 0, cm = 0, ze = 0;
	int i;

	for (i = 0; i < 4; i++) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
		__m128i t = _mm_sub_epi8(x, zero);
		__m128i dig = _mm_cmpeq_epi8(_mm_min_epu8(t, nine), t);
		dg |= (uint64_t)(unsigned)_mm_movemask_epi8(dig) << (16 * i);
		mi |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, minus)) << (16 * i);
		cm |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, c)) << (16 * i);
		ze |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, zero)) << (16 * i);
	}
	k->digit = dg;
	k->minus = mi;
	k->comma = cm;
	k->zero = ze;
	k->other = ~(dg | mi | cm);
}

/*
 * The value of the entry s[0..len), already known to be an optional '-' and
 * 1 to 18 digits without a leading zero: no check left but none needed.
 */
static inline __attribute__((always_inline)) int64_t js_entry_value(const char *s, size_t len)
{
	size_t neg = s[0] == '-', d = len - neg;
	const char *q = s + neg;
	uint64_t mag;

	if (__builtin_expect(d <= 8, 1)) {
		mag = js_eight_digits(js_load64(q) << (64 - 8 * d));
	} else if (d <= 16) {
		/* 9 to 16 digits: the first d - 8, then the last 8 */
		mag = js_eight_digits(js_load64(q) << (64 - 8 * (d - 8))) * 100000000u +
		      js_eight_digits(js_load64(q + d - 8));
	} else {
		size_t i;
		/* 17 or 18 digits: below 10^18, no overflow */
		for (mag = 0, i = 0; i < d; i++)
			mag = mag * 10 + (uint64_t)(q[i] - '0');
	}
	/* branch-free: signs vary from entry to entry */
	return (int64_t)((mag ^ (0 - (uint64_t)neg)) + neg);
}

/* What a block of an integer array carries over to the next one. */
struct js_carry {
	uint64_t in_start, in_minus, in_zero;   /* bit 0 of the next block starts an entry / follows '-' / follows a leading 0 */
	unsigned run;                           /* digits ending the block */
};

/*
 * The grammar of every entry of one 64-byte block, checked on the whole
 * block with masks: a '-' only first and before a digit, no empty entry, no
 * leading zero, no run of 19 digits or more (only the exact path may judge
 * those). *comma gets the separators before the first stop, *stop1 that stop
 * (a ']' or 0 when the array goes on). 0 to go on, -1 to decline.
 */
static inline __attribute__((always_inline)) int js_block_check(const char *base,
								 struct js_carry *cy,
								 uint64_t *comma, uint64_t *stop1,
								 const struct js_classes *pre)
{
	struct js_classes k;
	uint64_t s1, before, upto, starts, dstarts, after_minus, bad, runs;

	if (pre)
		k = *pre;
	else
		js_classify64(base, &k);
	s1 = k.other & (0 - k.other);
	before = s1 ? s1 - 1 : ~0ull;
	upto = before | s1;
	k.digit &= before;
	k.minus &= before;
	k.comma &= before;
	k.zero &= before;
	starts = ((k.comma << 1) | cy->in_start) & upto;
	after_minus = ((k.minus << 1) | cy->in_minus) & upto;
	dstarts = (starts & k.digit) | after_minus;
	bad = (k.minus & ~starts) | (after_minus & ~k.digit) | (starts & ~(k.digit | k.minus)) |
	      ((((k.zero & dstarts) << 1) | cy->in_zero) & k.digit);
	runs = k.digit;
	runs &= runs >> 1;
	runs &= runs >> 2;
	runs &= runs >> 4;
	runs &= runs >> 8;
	runs &= runs >> 3;
	if (bad | runs ||
	    cy->run + (unsigned)__builtin_ctzll(~k.digit | s1 | (1ull << 63)) >= 19)
		return -1;
	if (s1 && base[__builtin_ctzll(s1)] != ']')
		return -1;
	cy->in_start = k.comma >> 63;
	cy->in_minus = k.minus >> 63;
	cy->in_zero = (k.zero & dstarts) >> 63;
	/* a block of 64 digits is a run of 19 already: ~k.digit is never 0 here */
	cy->run = k.digit >> 63 ? cy->run * (k.digit == ~0ull) + (unsigned)__builtin_clzll(~k.digit)
				: 0;
	*comma = k.comma;
	*stop1 = s1;
	return 0;
}

/*
 * An integer array from p (just after '['), 64 bytes at a time: the entries
 * are checked by js_block_check, and values are converted only when dst
 * wants them (a token array is validated without a single conversion). 1
 * when the array was read to its ']' with nothing but digits, '-' and ',';
 * 0 for anything else (spaces, a bad or long entry, the cap): the scalar
 * reader then decides from the start.
 */
static int js_int_array_blocks(struct jdoc_scan *sc, const char *p, int64_t *dst, size_t cap,
			       uint32_t *n)
{
	const char *base = p, *start = p;
	struct js_carry cy = { 1, 0, 0, 0 };
	uint64_t count = 0, comma, stop1;

	for (;; base += 64) {
		if (js_block_check(base, &cy, &comma, &stop1, NULL))
			return 0;
		count += (uint64_t)__builtin_popcountll(comma) + (stop1 != 0);
		if (count > cap)
			return 0;
		if (dst) {
			uint64_t c = comma;
			for (; c; c &= c - 1) {
				const char *e = base + __builtin_ctzll(c);
				*dst++ = js_entry_value(start, (size_t)(e - start));
				start = e + 1;
			}
			if (stop1)
				*dst = js_entry_value(start, (size_t)(base + __builtin_ctzll(stop1) - start));
		}
		if (stop1) {
			sc->p = base + __builtin_ctzll(stop1) + 1;
			*n = (uint32_t)count;
			return 1;
		}
		if (comma)
			start = base + 64 - __builtin_clzll(comma);
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define JDOC_AVX2 1

/* js_classify64 with two 32-byte loads. */
__attribute__((target("avx2"))) static inline void js_classify64_avx2(const char *p,
								    struct js_classes *k)
{
	const __m256i c = _mm256_set1_epi8(','), minus = _mm256_set1_epi8('-');
	const __m256i zero = _mm256_set1_epi8('0'), nine = _mm256_set1_epi8(9);
	uint64_t dg = 0, mi = 0, cm = 0, ze = 0;
	int i;

	for (i = 0; i < 2; i++) {
		__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * i));
		__m256i t = _mm256_sub_epi8(x, zero);
		__m256i dig = _mm256_cmpeq_epi8(_mm256_min_epu8(t, nine), t);
		dg |= (uint64_t)(uint32_t)_mm256_movemask_epi8(dig) << (32 * i);
		mi |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, minus)) << (32 * i);
		cm |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, c)) << (32 * i);
		ze |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, zero)) << (32 * i);
	}
	k->digit = dg;
	k->minus = mi;
	k->comma = cm;
	k->zero = ze;
	k->other = ~(dg | mi | cm);
}

/*
 * Four entries at s[0..3] (each ends at a ',' or ']' within its first 8
 * bytes, else 0 is returned and nothing written) into dst[0..3]. In each
 * 64-bit lane: the bytes before the separator are kept (a prefix OR of the
 * separator bytes), counted (sad), '-' and padding become 0 with a saturating
 * subtract, the digits are moved to the top of the lane, and pairs, quads and
 * halves are combined with maddubs, madd and mul (js_eight_digits in SIMD).
 */
__attribute__((target("avx2"))) static inline int js_convert4_avx2(const char *s0, const char *s1,
								   const char *s2, const char *s3,
								   int64_t *dst)
{
	const __m256i comma = _mm256_set1_epi8(','), close = _mm256_set1_epi8(']');
	const __m256i zero = _mm256_set1_epi8('0'), ones = _mm256_set1_epi8(1);
	const __m256i w10 = _mm256_set1_epi16(0x010A);       /* bytes 10, 1 */
	const __m256i w100 = _mm256_set1_epi32(0x00010064);  /* words 100, 1 */
	const __m256i w1e4 = _mm256_set1_epi64x(10000), minus = _mm256_set1_epi64x('-');
	const __m256i byte0 = _mm256_set1_epi64x(0xFF), all = _mm256_set1_epi64x(-1);
	__m256i w = _mm256_set_epi64x((long long)js_load64(s3), (long long)js_load64(s2),
				      (long long)js_load64(s1), (long long)js_load64(s0));
	__m256i t = _mm256_or_si256(_mm256_cmpeq_epi8(w, comma), _mm256_cmpeq_epi8(w, close));
	__m256i keep, len, neg, v;

	t = _mm256_or_si256(t, _mm256_slli_epi64(t, 8));
	t = _mm256_or_si256(t, _mm256_slli_epi64(t, 16));
	t = _mm256_or_si256(t, _mm256_slli_epi64(t, 32));
	if (_mm256_movemask_epi8(_mm256_cmpeq_epi64(t, _mm256_setzero_si256())))
		return 0;   /* an entry of 8 bytes or more */
	keep = _mm256_xor_si256(t, all);
	len = _mm256_sad_epu8(_mm256_and_si256(keep, ones), _mm256_setzero_si256());
	neg = _mm256_cmpeq_epi64(_mm256_and_si256(w, byte0), minus);
	v = _mm256_subs_epu8(_mm256_and_si256(w, keep), zero);
	v = _mm256_sllv_epi64(v, _mm256_sub_epi64(_mm256_set1_epi64x(64), _mm256_slli_epi64(len, 3)));
	v = _mm256_maddubs_epi16(v, w10);
	v = _mm256_madd_epi16(v, w100);
	v = _mm256_add_epi64(_mm256_mul_epu32(v, w1e4), _mm256_srli_epi64(v, 32));
	v = _mm256_sub_epi64(_mm256_xor_si256(v, neg), neg);
	_mm256_storeu_si256((__m256i *)(void *)dst, v);
	return 1;
}

/* The entries of one block (separators comma, then stop1) from start into dst. */
__attribute__((target("avx2"))) static int64_t *js_convert_avx2(const char *base, const char *start,
								uint64_t comma, uint64_t stop1,
								int64_t *dst, const char **next)
{
	uint64_t c = comma | stop1;
	unsigned cnt = (unsigned)__builtin_popcountll(c);

	/* four separators at a time: the entry starts come straight from the mask */
	for (; cnt >= 4; cnt -= 4, dst += 4) {
		const char *s1, *s2, *s3, *e;
		s1 = base + __builtin_ctzll(c) + 1;
		c &= c - 1;
		s2 = base + __builtin_ctzll(c) + 1;
		c &= c - 1;
		s3 = base + __builtin_ctzll(c) + 1;
		c &= c - 1;
		e = base + __builtin_ctzll(c);
		c &= c - 1;
		if (!js_convert4_avx2(start, s1, s2, s3, dst)) {
			dst[0] = js_entry_value(start, (size_t)(s1 - 1 - start));
			dst[1] = js_entry_value(s1, (size_t)(s2 - 1 - s1));
			dst[2] = js_entry_value(s2, (size_t)(s3 - 1 - s2));
			dst[3] = js_entry_value(s3, (size_t)(e - s3));
		}
		start = e + 1;
	}
	for (; c; c &= c - 1) {
		const char *e = base + __builtin_ctzll(c);
		*dst++ = js_entry_value(start, (size_t)(e - start));
		start = e + 1;
	}
	*next = start;
	return dst;
}

__attribute__((target("avx2"))) static int js_int_array_blocks_avx2(struct jdoc_scan *sc,
								    const char *p, int64_t *dst,
								    size_t cap, uint32_t *n)
{
	const char *base = p, *start = p;
	struct js_carry cy = { 1, 0, 0, 0 };
	uint64_t count = 0, comma, stop1;

	for (;; base += 64) {
		struct js_classes k;
		js_classify64_avx2(base, &k);
		if (js_block_check(base, &cy, &comma, &stop1, &k))
			return 0;
		count += (uint64_t)__builtin_popcountll(comma) + (stop1 != 0);
		if (count > cap)
			return 0;
		if (dst)
			dst = js_convert_avx2(base, start, comma, stop1, dst, &start);
		else if (comma)
			start = base + 64 - __builtin_clzll(comma);
		if (stop1) {
			sc->p = base + __builtin_ctzll(stop1) + 1;
			*n = (uint32_t)count;
			return 1;
		}
	}
}
#else
#define JDOC_AVX2 0
#endif
#endif

int jdoc_simd_int_array(struct jdoc_scan *sc, const char *p, int64_t *dst, size_t cap,
			uint32_t *n)
{
#if defined(__SSE2__) && JDOC_SWAR
#if JDOC_AVX2
	if (jdoc_simd_avx2())
		return js_int_array_blocks_avx2(sc, p, dst, cap, n);
#endif
	return js_int_array_blocks(sc, p, dst, cap, n);
#else
	(void)sc;
	(void)p;
	(void)dst;
	(void)cap;
	(void)n;
	return 0;
#endif
}
