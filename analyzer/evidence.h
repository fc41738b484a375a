/*
 * evidence.h - was the device buffer stale for a slot, and how do we know.
 *
 * Ground truth comes from the strongest evidence the event carries, in this
 * order: request ids, per-slot stamps, the batch stamp, the buffer's step.
 * Without any of them staleness is unknown, and a take is "unverified".
 */
#ifndef TTAUDIT_EVIDENCE_H
#define TTAUDIT_EVIDENCE_H

#include <stddef.h>
#include <stdint.h>

#include "analyzer/event.h"

enum evidence {
	EVIDENCE_UNKNOWN,
	EVIDENCE_REQUEST,
	EVIDENCE_STAMP,
	EVIDENCE_LIFETIME,
	EVIDENCE__COUNT
};

/* "unknown", "request", "stamp", "lifetime". */
const char *evidence_name(enum evidence e);

/*
 * The evidence class for active slot s of m; *stale is 1 when that evidence
 * says the buffer is stale for s, 0 otherwise (and 0 for EVIDENCE_UNKNOWN).
 */
enum evidence evidence_slot(const struct merge_event *m, uint32_t s, int *stale);

/* The comparison behind the verdict, in words ("slot_req 'a' != buf_req 'b'"). */
void evidence_why(const struct merge_event *m, uint32_t s, char *buf, size_t n);

/*
 * The same verdicts for the active slots of one 64-slot window (bit i is
 * slot base + i; rule.h's windows): which class judged each slot, and which
 * the evidence calls stale (never an unknown one). prefilled and gen_eq are
 * the window's masks (rule_window). Agrees with evidence_slot() slot by slot.
 */
struct evidence_window {
	uint64_t by[EVIDENCE__COUNT];
	uint64_t stale;
};
void evidence_window_fill(const struct merge_event *m, uint32_t base, uint32_t n, uint64_t active,
			  uint64_t prefilled, uint64_t gen_eq, struct evidence_window *out);

/* 1 when request ids a and b (with their lengths) are the same bytes. */
int evidence_same_req(const char *a, uint32_t na, const char *b, uint32_t nb);

#endif
