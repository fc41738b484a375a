/*
 * graded.h - the bundled graded tasks of `bench --correctness accuracy`:
 * tasks with exact answers, small enough to run at every concurrency level.
 *
 * Half are copy tasks (a code of three groups, canary.h's alphabet, to be
 * written four times over: the exact answer is that text), half are sums
 * ("Compute 17 + 25. Answer with the number only.": the number). A model
 * that follows instructions gets both right alone; one that does not gets
 * both wrong, alone and under load alike. What the stage compares is the
 * accuracy under load against a synchronous control at the same level
 * (sglang-jax #1487: gsm8k 0.955 at concurrency 4, 0.700 at 64, against
 * --disable-overlap-schedule), so a model's own skill cancels out.
 */
#ifndef TTAUDIT_GRADED_H
#define TTAUDIT_GRADED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "bench/suite.h"

#define GRADED_TASKS 48

/* The bundled tasks (chat or completions) from seed, max_tokens each. Free
 * with suite_free(). */
enum status graded_suite(uint64_t seed, bool chat, long max_tokens, struct suite **out, struct status_info *si);

#endif
