/*
 * ttaudit.c - the public interface of libttaudit (include/ttaudit/ttaudit.h):
 * a thin, stable face over replay/ and analyzer/, so that the library's
 * internals can change without breaking programs built against it.
 */
#include "include/ttaudit/ttaudit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay.h"
#include "analyzer/rule.h"
#include "base/status.h"
#include "analyzer/tally.h"

_Static_assert((int)TTAUDIT_NOTFOUND == (int)STATUS_NOTFOUND && (int)TTAUDIT_USAGE == (int)STATUS_USAGE &&
	       (int)TTAUDIT_PARSE == (int)STATUS_PARSE && (int)TTAUDIT_IO == (int)STATUS_IO &&
	       (int)TTAUDIT_LIMIT == (int)STATUS_LIMIT && (int)TTAUDIT_NOMEM == (int)STATUS_NOMEM,
	       "the public status values are the status enum's");

struct ttaudit_replay {
	struct replay *r;
	struct rule rules[RULE_MAX_LIST];
};

const char *ttaudit_version(void)
{
	return TTAUDIT_VERSION;
}

const char *ttaudit_strerror(int status)
{
	return status_strerror((enum status)status);
}

static int ttaudit_fail(enum status st, const struct status_info *si, char *err, size_t n_err)
{
	if (err && n_err) {
		if (si && si->msg[0])
			status_info_format(si, err, n_err);
		else
			snprintf(err, n_err, "%s", status_strerror(st));
	}
	return (int)st;
}

int ttaudit_replay_new(const struct ttaudit_options *o, struct ttaudit_replay **out, char *err,
		       size_t n_err)
{
	struct status_info si = { 0 };
	struct replay_opts ro = { 0 };
	struct ttaudit_replay *t;
	enum status st;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return ttaudit_fail(STATUS_NOMEM, NULL, err, n_err);
	if (o && o->rules) {
		st = rule_list_parse(o->rules, t->rules, RULE_MAX_LIST, &ro.n_rules, &si);
		if (st) {
			free(t);
			return ttaudit_fail(STATUS_USAGE, &si, err, n_err);
		}
	} else {
		ro.n_rules = rule_list_default(t->rules, RULE_MAX_LIST);
	}
	ro.rules = t->rules;
	if (o) {
		ro.max_pos = o->max_pos;
		ro.strict = o->strict != 0;
		ro.max_line = o->max_line;
		ro.diag = o->diag;
	}
	t->r = replay_new(&ro);
	if (!t->r) {
		free(t);
		return ttaudit_fail(STATUS_NOMEM, NULL, err, n_err);
	}
	*out = t;
	return TTAUDIT_OK;
}

void ttaudit_replay_free(struct ttaudit_replay *r)
{
	if (!r)
		return;
	replay_free(r->r);
	free(r);
}

int ttaudit_replay_file(struct ttaudit_replay *r, const char *path, char *err, size_t n_err)
{
	struct status_info si = { 0 };
	enum status st = replay_add_file(r->r, path, &si);

	return st ? ttaudit_fail(st, &si, err, n_err) : TTAUDIT_OK;
}

size_t ttaudit_replay_n_rules(const struct ttaudit_replay *r)
{
	return tally_n_rules(replay_tally(r->r));
}

const char *ttaudit_replay_rule(const struct ttaudit_replay *r, size_t i)
{
	const struct tally *t = replay_tally(r->r);

	return i < tally_n_rules(t) ? tally_rule(t, i)->name : NULL;
}

int ttaudit_replay_counts(const struct ttaudit_replay *r, size_t i, struct ttaudit_counts *out)
{
	const struct tally *t = replay_tally(r->r);
	const struct tally_counts *c;

	if (i >= tally_n_rules(t))
		return TTAUDIT_NOTFOUND;
	c = tally_counts(t, i);
	memset(out, 0, sizeof(*out));
	out->merges = c->merges;
	out->taken = c->taken;
	out->substitutions = c->substitutions;
	out->unverified = c->unverified;
	out->prevented = c->prevented;
	out->forgone = c->forgone;
	out->fired = c->fired;
	out->skipped = c->skipped;
	out->shape_fallback = c->shape_fallback;
	out->evaluable = !tally_not_evaluable(t, i);
	return TTAUDIT_OK;
}

uint64_t ttaudit_replay_malformed(const struct ttaudit_replay *r)
{
	return replay_malformed(r->r);
}

void ttaudit_replay_write(const struct ttaudit_replay *r, FILE *f, int json)
{
	if (json)
		replay_print_json(r->r, f);
	else
		replay_print_text(r->r, f);
}
