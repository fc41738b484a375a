/*
 * correct.h - the correctness stage: what a server says under load compared
 * with what it says alone.
 *
 * The reference is every prompt at concurrency 1 and temperature 0; the run
 * under test sends the same bodies (same nonce, same temperature) at
 * concurrency N. Per request under test, the first verdict that applies:
 *   failed     the request failed (the load record says why)
 *   wrong      an `expect` string of the prompt is missing from the output
 *   diverged   the output differs from the reference; `at` is the index of
 *              the content token (chunk) where it first differs. With every
 *              `expect` present this is phrasing, the answer intact
 *   identical
 * Outputs are compared as text, so a server that packs two tokens into one
 * chunk under load is not called divergent for it.
 *
 * The reference itself is checked against `expect` too: a prompt wrong at
 * concurrency 1 is counted (ref_wrong) and is no baseline. Every verdict but
 * identical is failing: "N failing of M".
 */
#ifndef TTAUDIT_CORRECT_H
#define TTAUDIT_CORRECT_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/load.h"
#include "base/status.h"
#include "bench/suite.h"

enum correct_verdict {
	CORRECT_IDENTICAL,
	CORRECT_DIVERGED,
	CORRECT_WRONG,
	CORRECT_FAILED,        /* the request under test failed */
	CORRECT_NO_REFERENCE,  /* the reference request failed: nothing to compare with */
};

/* "identical", "diverged", "wrong", "failed", "no-reference". */
const char *correct_verdict_name(enum correct_verdict v);

struct correct_item {
	size_t request;         /* index in the run under test */
	size_t prompt_index;
	enum correct_verdict verdict;
	size_t at;              /* DIVERGED: first differing content token of the output under test */
	size_t at_span;         /* DIVERGED: tokens of the chunk that holds it (a chunk can carry
				 * several: the divergent one is among at .. at + at_span - 1) */
	/* DIVERGED: the divergent token repeats the one before it, which the
	 * reference does not (a token decoded twice: tenstorrent/vllm #395,
	 * PR #444); judged where the chunks around it are single tokens */
	bool duplicate;
	char ref_excerpt[48];   /* DIVERGED: text from the point of divergence */
	char got_excerpt[48];
	const char *missing;    /* WRONG: the first expect string missing (the suite's) */
};

struct correct_report {
	struct correct_item *items;   /* one per request under test */
	size_t n;
	size_t n_identical, n_diverged, n_wrong, n_failed, n_no_reference;
	size_t n_duplicate;           /* diverged by a repeated token */
	size_t n_failing;             /* every item not identical */
	size_t n_ref, n_ref_wrong, n_ref_failed;   /* the reference pass */
};

/*
 * Compares run `got` against `ref` (one request per suite entry, in
 * suite order: ref->res[i].prompt_index == i). Both runs must have kept
 * their text. Release with correct_report_release().
 */
enum status correct_compare(const struct suite *s, const struct load_run *ref,
			    const struct load_run *got, struct correct_report *rep,
			    struct status_info *si);
void correct_report_release(struct correct_report *rep);

/* The content chunk of r (kept text) that holds byte off of its text, and
 * the output tokens before chunk c (a chunk may carry several). */
size_t correct_chunk_at(const struct load_result *r, size_t off);
size_t correct_tokens_before(const struct load_result *r, size_t chunk);

/* The first expect string of entry e missing from text, or NULL. */
const char *correct_missing(const struct suite_entry *e, const char *text);

#endif
