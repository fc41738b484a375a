/*
 * watch.h - `ttaudit watch`: follows sources (base/tailfile.h), replays every line
 * as it arrives with the replay library (replay_stream: the same decoding and
 * per-process replay as `ttaudit replay`), and keeps the counts as
 * Prometheus metrics (expo.h) labelled by rule, evidence, reason, source,
 * pid and host. docs/watch.md lists the metrics.
 *
 * Counters only go up: they are the replay's own counts, which only grow,
 * added to the registry as they change; rotation and truncation of a source
 * keep them. They start at 0 with the process.
 *
 * Thread safety: one thread polls (watch_poll, watch_run, watch_once); any
 * thread may call watch_write_metrics and watch_health meanwhile.
 */
#ifndef TTAUDIT_WATCH_H
#define TTAUDIT_WATCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyzer/rule.h"
#include "base/status.h"

#define WATCH_MAX_SOURCES 64

struct watch_opts {
	const struct rule *rules;          /* copied; n_rules in [1, RULE_MAX_LIST] */
	size_t n_rules;
	int64_t max_pos;                   /* --max-pos; 0 none */
	const char *const *sources;        /* paths or "-"; copied */
	size_t n_sources;
	bool from_start;                   /* read existing files whole (default: from their end) */
	const char *host;                  /* the host label; NULL: gethostname() */
	int poll_ms;                       /* a quiet source is looked at this often; 0: 25 */
	FILE *notes;                       /* malformed lines, sources without audits; NULL: none */
};

struct watch;

/* STATUS_USAGE (si says why) for bad options, STATUS_NOMEM. */
enum status watch_new(struct watch **out, const struct watch_opts *o, struct status_info *si);
void watch_free(struct watch *w);

/* One pass over every source; `final` ends pending partial lines. Returns the bytes read. */
size_t watch_poll(struct watch *w, bool final);
/* Polls until *stop is set, sleeping poll_ms whenever nothing was new. */
void watch_run(struct watch *w, volatile sig_atomic_t *stop);
/*
 * --once: every source read from its start to its end, then what it held
 * said on notes. Returns how many sources could not be read (missing,
 * unreadable).
 */
size_t watch_once(struct watch *w);

/* The exposition (text format 0.0.4), counts as of now. STATUS_IO when f fails. */
enum status watch_write_metrics(struct watch *w, FILE *f);
/* Sources open now, of how many. */
void watch_health(struct watch *w, size_t *up, size_t *total);

#endif
