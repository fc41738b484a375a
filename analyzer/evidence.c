/*
 * evidence.c - ground truth per slot: request ids, stamps, the buffer's step,
 * in that order; slot by slot and as window masks.
 */
#include "analyzer/evidence.h"

#include <stdio.h>
#include <string.h>

#include "analyzer/rule.h"

int evidence_same_req(const char *a, uint32_t na, const char *b, uint32_t nb)
{
	uint32_t i;

	if (na != nb)
		return 0;
	if (na > 16)
		return !memcmp(a, b, na);
	/* request ids are short: a call to memcmp costs more than the compare */
	for (i = 0; i < na; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* The length of request id i: its own when the decoder gave one. */
static uint32_t req_len(const char *const *z, const uint32_t *lens, uint32_t i)
{
	return lens ? lens[i] : (uint32_t)strlen(z[i]);
}

const char *evidence_name(enum evidence e)
{
	static const char *const names[EVIDENCE__COUNT] = { "unknown", "request", "stamp", "lifetime" };
	return (unsigned)e < EVIDENCE__COUNT ? names[e] : "unknown";
}

enum evidence evidence_slot(const struct merge_event *m, uint32_t s, int *stale)
{
	*stale = 0;
	if (m->has_req && m->slot_req[s] && m->buf_req[s]) {
		*stale = !evidence_same_req(m->slot_req[s], req_len(m->slot_req, m->slot_req_len, s),
					    m->buf_req[s], req_len(m->buf_req, m->buf_req_len, s));
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
		*stale = !rule_step_is_prev(m->buf_step, m->step) || (m->has_prefilled && m->prefilled[s]);
		return EVIDENCE_LIFETIME;
	}
	return EVIDENCE_UNKNOWN;
}

/*
 * A request id for a message: printable ASCII as it is, any other byte as
 * \xNN (a NUL inside an id must show). Returns buf.
 */
static const char *evidence_quote(const char *z, uint32_t len, char *buf, size_t n)
{
	size_t o = 0;
	uint32_t i;

	for (i = 0; i < len && o + 5 < n; i++) {
		unsigned char c = (unsigned char)z[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, n - o, "\\x%02x", c);
	}
	if (i < len && o + 4 <= n) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
	return buf;
}

void evidence_why(const struct merge_event *m, uint32_t s, char *buf, size_t n)
{
	int stale;
	char a[160], b[160], d[32];

	switch (evidence_slot(m, s, &stale)) {
	case EVIDENCE_REQUEST:
		snprintf(buf, n, "slot_req '%s' %s buf_req '%s'",
			 evidence_quote(m->slot_req[s], req_len(m->slot_req, m->slot_req_len, s), a,
					sizeof(a)),
			 stale ? "!=" : "==",
			 evidence_quote(m->buf_req[s], req_len(m->buf_req, m->buf_req_len, s), b,
					sizeof(b)));
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
		if (!rule_step_is_prev(m->buf_step, m->step))
			snprintf(buf, n, "buf_step %lld is not step - 1 (%s)", (long long)m->buf_step,
				 rule_step_diff(m->step, 1, d, sizeof(d)));
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

void evidence_window_fill(const struct merge_event *m, uint32_t base, uint32_t n, uint64_t active,
			  uint64_t prefilled, uint64_t gen_eq, struct evidence_window *out)
{
	uint64_t rest = active, req = 0, stale = 0;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	(void)n;
	if (m->has_req) {
		uint64_t a;
		/* the active slots only, by their bits */
		for (a = active; a; a &= a - 1) {
			uint32_t s;
			i = (uint32_t)__builtin_ctzll(a);
			s = base + i;
			if (!m->slot_req[s] || !m->buf_req[s])
				continue;
			req |= 1ull << i;
			if (!evidence_same_req(m->slot_req[s], req_len(m->slot_req, m->slot_req_len, s),
					       m->buf_req[s], req_len(m->buf_req, m->buf_req_len, s)))
				stale |= 1ull << i;
		}
		out->by[EVIDENCE_REQUEST] = req;
		rest &= ~req;
	}
	if (m->has_slot_gen) {
		out->by[EVIDENCE_STAMP] = rest;
		stale |= rest & ~gen_eq;
	} else if (m->has_gen) {
		out->by[EVIDENCE_STAMP] = rest;
		if (m->gen != m->buf_gen)
			stale |= rest;
	} else if (m->has_buf_step) {
		out->by[EVIDENCE_LIFETIME] = rest;
		stale |= rule_step_is_prev(m->buf_step, m->step) ? rest & prefilled : rest;
	} else {
		out->by[EVIDENCE_UNKNOWN] = rest;
	}
	out->stale = stale;
}
