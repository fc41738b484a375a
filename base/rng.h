/*
 * rng.h - splitmix64, the one pseudo-random generator of the project.
 *
 * Used for seeded, reproducible choices (ttsim's sampling and timing, the
 * load driver's arrivals, the suite's prompts): a seed gives the same
 * sequence on every machine. Not for anything secret.
 */
#ifndef TTAUDIT_RNG_H
#define TTAUDIT_RNG_H

#include <stdint.h>

/* The next value of the sequence whose state is *s (advances *s). */
uint64_t rng_next(uint64_t *s);
/* splitmix64's output for state x, without a state to advance: a hash of x. */
uint64_t rng_mix(uint64_t x);
/* A double uniform in (0, 1], never 0 (safe under log()): 53 bits of rng_next. */
double rng_unit(uint64_t *s);

#endif
