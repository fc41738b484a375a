/*
 * rng.c - splitmix64 (Steele, Lea, Flood 2014; Vigna's reference constants):
 * one implementation for every seeded choice in the project (see rng.h).
 */
#include "base/rng.h"

uint64_t rng_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	*s = x + 0x9e3779b97f4a7c15ull;
	return rng_mix(x);
}

double rng_unit(uint64_t *s)
{
	return ((double)(rng_next(s) >> 11) + 1.0) / 9007199254740992.0;
}
