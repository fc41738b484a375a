/*
 * jdoc_simd.h - what jdoc's scanner (jdoc_scan.c) and its block readers
 * (jdoc_simd.c) share, private to base/jdoc_*.c: the word-at-a-time helpers
 * and the SSE2/AVX2 reader of integer arrays.
 */
#ifndef TTAUDIT_JDOC_SIMD_H
#define TTAUDIT_JDOC_SIMD_H

#include <stdint.h>
#include <string.h>

#include "base/jdoc.h"

/*
 * Word-at-a-time helpers. The scanner may read up to 64 bytes past the
 * position it looks at; the caller guarantees a NUL at s[n] and
 * JDOC_SCAN_PAD readable bytes after it, and every fast path stops on that
 * NUL because it is neither a digit, a quote nor a separator.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JDOC_SWAR 1
#else
#define JDOC_SWAR 0
#endif

static inline uint64_t js_load64(const char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

#if JDOC_SWAR
/* The number of leading ASCII digits in the 8 bytes of w (first byte lowest). */
static inline unsigned js_digits8(uint64_t w)
{
	uint64_t m = ((w + 0x4646464646464646ull) | (w - 0x3030303030303030ull)) &
		     0x8080808080808080ull;

	return m ? (unsigned)__builtin_ctzll(m) >> 3 : 8;
}

/* The value of 8 ASCII digits (or zero bytes standing for leading zeros). */
static inline uint64_t js_eight_digits(uint64_t w)
{
	w = ((w & 0x0F0F0F0F0F0F0F0Full) * 2561) >> 8;
	w = ((w & 0x00FF00FF00FF00FFull) * 6553601) >> 16;
	return ((w & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32;
}
#endif

/* jdoc_simd(0) clears it: the scanner's run readers then stay off too. */
extern int jdoc_simd_allowed;

/*
 * An integer array from p (just after its '['), 64 bytes at a time with
 * SSE2, or AVX2 where jdoc_simd_avx2() says so: 1 when the array was read
 * to its ']' (sc->p after it, the count in *n, the values in dst unless it
 * is NULL); 0 for anything the block reader declines (spaces, a bad or long
 * entry, more than cap entries, a build without SSE2): the scalar reader
 * then decides from the start.
 */
int jdoc_simd_int_array(struct jdoc_scan *sc, const char *p, int64_t *dst, size_t cap,
			uint32_t *n);

#endif
