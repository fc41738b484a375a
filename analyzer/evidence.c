#include "evidence.h"

#include <stdio.h>
#include <string.h>

const char *evidence_name(enum evidence e)
{
	static const char *const names[EVIDENCE__COUNT] = { "unknown", "request", "stamp", "lifetime" };
	return (unsigned)e < EVIDENCE__COUNT ? names[e] : "unknown";
}

enum evidence evidence_slot(const struct merge_event *m, uint32_t s, int *stale)
{
	*stale = 0;
	if (m->has_req && m->slot_req[s] && m->buf_req[s]) {
		*stale = strcmp(m->slot_req[s], m->buf_req[s]) != 0;
		return EVIDENCE_REQUEST;
	}
	if (m->has_slot_gen) {
		*stale = m->slot_gen[s] != m->buf_slot_gen[s];
		return EVIDENCE_STAMP;
	}
	if (m->has_gen) {
		*stale = m->gen != m->buf_gen;
		return EVIDENCE_STAMP;
	}
	if (m->has_buf_step) {
		*stale = m->buf_step != m->step - 1 || (m->has_prefilled && m->prefilled[s]);
		return EVIDENCE_LIFETIME;
	}
	return EVIDENCE_UNKNOWN;
}

void evidence_why(const struct merge_event *m, uint32_t s, char *buf, size_t n)
{
	int stale;

	switch (evidence_slot(m, s, &stale)) {
	case EVIDENCE_REQUEST:
		snprintf(buf, n, "slot_req '%s' %s buf_req '%s'", m->slot_req[s], stale ? "!=" : "==",
			 m->buf_req[s]);
		break;
	case EVIDENCE_STAMP:
		if (m->has_slot_gen)
			snprintf(buf, n, "slot_gen %lld %s buf_slot_gen %lld", (long long)m->slot_gen[s],
				 stale ? "!=" : "==", (long long)m->buf_slot_gen[s]);
		else
			snprintf(buf, n, "gen %lld %s buf_gen %lld", (long long)m->gen,
				 stale ? "!=" : "==", (long long)m->buf_gen);
		break;
	case EVIDENCE_LIFETIME:
		if (m->buf_step != m->step - 1)
			snprintf(buf, n, "buf_step %lld is not step - 1 (%lld)", (long long)m->buf_step,
				 (long long)(m->step - 1));
		else if (stale)
			snprintf(buf, n, "buffer from step - 1 but the slot was prefilled since");
		else
			snprintf(buf, n, "buf_step %lld is step - 1", (long long)m->buf_step);
		break;
	default:
		snprintf(buf, n, "no request id, stamp or buf_step on this event");
		break;
	}
}
