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

#include "event.h"

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

#endif
