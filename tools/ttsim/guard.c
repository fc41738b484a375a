/*
 * guard.c - arm names, environment, banners and the spec's replay rules.
 */
#include "tools/ttsim/guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/rule.h"

/* Row i of the table is the rule of bit 1 << i (TTSIM_RULE_*). */
struct guard_def {
	const char *name;
	const char *env;
	const char *banner;
};

/* What the seeds' print-only patch says after "FLAG engaged: ", per arm. */
#define GUARD_SAYS_prefilled "merge masks slots prefilled since the last decode"
#define GUARD_SAYS_batch "merge requires the buffer's active-slot pattern to match the batch"
#define GUARD_SAYS_lifetime "merge requires a buffer written by the immediately preceding decode"
#define GUARD_SAYS_stamp "merge requires the buffer's generation stamp to match"
#define GUARD_SAYS_bound "merge ignores device positions outside [-1, max_model_len)"

/* Names and flags from the one list (analyzer/rule.h), whose order is the
 * bit order of TTSIM_RULE_* (tests/test_ttsim_guard.c holds the two
 * together) and the canonical order of a combination's name. */
#define GUARD_ROW(arm, flag) { #arm, flag, flag " engaged: " GUARD_SAYS_##arm },
static const struct guard_def guard_defs[] = { RULE_GUARD_FLAGS(GUARD_ROW) };
#undef GUARD_ROW

_Static_assert(sizeof(guard_defs) / sizeof(guard_defs[0]) == TTSIM_RULE_COUNT,
	       "a guard flag without its TTSIM_RULE_* bit, or a bit without its flag");

static const char guard_bare_banner[] =
	"async merge: unguarded position match (no merge guard engaged)";

enum status ttsim_guard_parse(const char *s, unsigned *mask, struct status_info *si)
{
	const char *p = s, *e;
	size_t len, i;
	unsigned m = 0;

	if (!s || !*s)
		return status_set(si, STATUS_USAGE, "arm is empty");
	if (!strcmp(s, "bare")) {
		*mask = 0;
		return STATUS_OK;
	}
	for (;;) {
		e = strchr(p, '+');
		len = e ? (size_t)(e - p) : strlen(p);
		for (i = 0; i < TTSIM_RULE_COUNT; i++)
			if (strlen(guard_defs[i].name) == len && !strncmp(p, guard_defs[i].name, len))
				break;
		if (i == TTSIM_RULE_COUNT)
			return status_set(si, STATUS_NOTFOUND,
					  "'%s': unknown arm (bare, prefilled, batch, lifetime, stamp, bound or a+b)",
					  s);
		m |= 1u << i;
		if (!e)
			break;
		p = e + 1;
	}
	*mask = m;
	return STATUS_OK;
}

const char *ttsim_guard_name(unsigned mask, char *buf, size_t n)
{
	size_t i, len = 0, l;

	if (!n)
		return buf;
	buf[0] = 0;
	for (i = 0; i < TTSIM_RULE_COUNT; i++) {
		if (!(mask & (1u << i)))
			continue;
		l = strlen(guard_defs[i].name);
		if (len + (len ? 1 : 0) + l + 1 > n)
			break;
		if (len)
			buf[len++] = '+';
		memcpy(buf + len, guard_defs[i].name, l);
		len += l;
		buf[len] = 0;
	}
	if (!len)
		snprintf(buf, n, "bare");
	return buf;
}

const char *ttsim_guard_env_name(unsigned rule)
{
	size_t i;

	for (i = 0; i < TTSIM_RULE_COUNT; i++)
		if (1u << i == rule)
			return guard_defs[i].env;
	return NULL;
}

unsigned ttsim_guard_from_env(void)
{
	unsigned m = 0;
	size_t i;
	const char *v;

	for (i = 0; i < TTSIM_RULE_COUNT; i++) {
		v = getenv(guard_defs[i].env);
		if (v && !strcmp(v, "1"))
			m |= 1u << i;
	}
	return m;
}

size_t ttsim_guard_banners(unsigned mask, const char **lines, size_t max)
{
	size_t i, n = 0;

	if (!(mask & TTSIM_RULE_ALL)) {
		if (max > 0)
			lines[0] = guard_bare_banner;
		return 1;
	}
	for (i = 0; i < TTSIM_RULE_COUNT; i++)
		if (mask & (1u << i)) {
			if (n < max)
				lines[n] = guard_defs[i].banner;
			n++;
		}
	return n;
}

/* Allowed flags of one rule; false when a field it needs is absent. */
static bool guard_allow_one(unsigned rule, const struct ttsim_merge *m, unsigned char *allow)
{
	size_t s, H = m->n_host;
	bool all = true;

	switch (rule) {
	case TTSIM_RULE_PREFILLED:
		if (!m->prefilled)
			return false;
		for (s = 0; s < H; s++)
			allow[s] = !m->prefilled[s];
		return true;
	case TTSIM_RULE_BATCH:
		for (s = 0; s < H; s++)
			if ((m->dev_pos[s] != -1) != (m->host_pos[s] != -1))
				all = false;
		break;
	case TTSIM_RULE_LIFETIME:
		if (!m->has_buf_step)
			return false;
		all = m->buf_step == m->step - 1 && !m->mode_switched;
		break;
	case TTSIM_RULE_STAMP:
		if (m->slot_gen && m->buf_slot_gen) {
			for (s = 0; s < H; s++)
				allow[s] = m->slot_gen[s] == m->buf_slot_gen[s];
			return true;
		}
		if (!m->has_gen)
			return false;
		all = m->gen == m->buf_gen;
		break;
	case TTSIM_RULE_BOUND:
		if (m->max_pos <= 0)
			return false;
		for (s = 0; s < H; s++)
			allow[s] = !(m->dev_pos[s] < -1 || m->dev_pos[s] >= m->max_pos);
		return true;
	default:
		return false;
	}
	for (s = 0; s < H; s++)
		allow[s] = all;
	return true;
}

enum ttsim_guard_eval ttsim_guard_take(unsigned mask, const struct ttsim_merge *m,
				       unsigned char *take, bool *fired)
{
	unsigned char allow[512], one[512];
	size_t s, i, H = m->n_host;
	bool any_active = false, differs = false;

	if (fired)
		*fired = false;
	memset(take, 0, H);
	if (m->n_dev < H)
		return TTSIM_GUARD_SHAPE_FALLBACK;
	if (H > sizeof(allow))
		return TTSIM_GUARD_SKIPPED;
	memset(allow, 1, H);
	for (i = 0; i < TTSIM_RULE_COUNT; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (!guard_allow_one(1u << i, m, one))
			return TTSIM_GUARD_SKIPPED;
		for (s = 0; s < H; s++)
			allow[s] &= one[s];
	}
	for (s = 0; s < H; s++) {
		if (m->host_pos[s] == -1)
			continue;
		any_active = true;
		if (!allow[s])
			differs = true;
		take[s] = allow[s] && (m->dev_pos[s] == m->host_pos[s] ||
				       m->dev_pos[s] == m->host_pos[s] + 1);
	}
	if (fired)
		*fired = any_active && differs;
	return TTSIM_GUARD_EVALUATED;
}

int ttsim_guard_stale(const struct ttsim_merge *m, size_t s)
{
	if (m->slot_req && m->buf_req && m->slot_req[s] && m->buf_req[s])
		return strcmp(m->slot_req[s], m->buf_req[s]) != 0;
	if (m->slot_gen && m->buf_slot_gen)
		return m->slot_gen[s] != m->buf_slot_gen[s];
	if (m->has_gen)
		return m->gen != m->buf_gen;
	if (m->has_buf_step)
		return m->buf_step != m->step - 1 || (m->prefilled && m->prefilled[s]);
	return -1;
}
