/*
 * hash.h - the one byte-string hash: FNV-1a, 64 bits.
 *
 * Not for anything an adversary chooses to collide (it is not keyed):
 * hash-table slots, and fingerprints of the benchmark's own inputs (suite,
 * canary, server configuration), which are written into results, so its
 * values must never change.
 */
#ifndef TTAUDIT_HASH_H
#define TTAUDIT_HASH_H

#include <stddef.h>
#include <stdint.h>

/* Start with this; hash_fnv1a(hash_fnv1a(INIT, a), b) hashes a then b. */
#define HASH_FNV1A_INIT 0xcbf29ce484222325ull

/* FNV-1a 64 of p[0..n), continuing from h. */
uint64_t hash_fnv1a(uint64_t h, const void *p, size_t n);
/* The same over a NUL-terminated string (without the NUL). */
uint64_t hash_fnv1a_str(uint64_t h, const char *s);

#endif
