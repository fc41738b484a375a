/*
 * watch.c - the sources of `ttaudit watch`, one replay stream each, and the
 * mapping of their counts onto the metric registry (watch.h).
 */
#include "watch/watch.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "watch/expo.h"
#include "analyzer/reader.h"
#include "replay/replay.h"
#include "base/tailfile.h"

/* Bytes one source may give in one pass, so that one busy source cannot starve the others. */
#define WATCH_BUDGET (1024 * 1024)
/* Malformed lines said on notes per source, before only the count goes on. */
#define WATCH_MALFORMED_SHOWN 10
/* Lines of a source without any audit event after which that is said (live mode). */
#define WATCH_NO_AUDIT_LINES 10000

/* What was last added to the registry for one process, so only the change is added. */
struct watch_seen {
	struct tally_counts *c;      /* [n_rules] */
	uint64_t garbage;
};

struct watch_src {
	struct tailfile *src;
	struct replay_stream *rs;
	struct watch_seen *seen;
	size_t n_seen, cap_seen;
	uint64_t lost, uncertain, overlong, malformed;   /* added so far */
	uint64_t shown;
	double last_event;           /* wall time of the last audit event read, 0 none */
	bool read_error, no_audit_said;
	struct watch *w;
};

enum {
	F_MERGES, F_TAKEN, F_SUBST, F_UNVERIFIED, F_PREVENTED, F_FORGONE, F_FIRED, F_SKIPPED,
	F_GARBAGE, F_LOST, F_MALFORMED, F_LAST_EVENT, F_ARM, F_UP, F_BUILD, F__COUNT
};

struct watch {
	struct watch_opts o;
	struct rule rules[RULE_MAX_LIST];
	struct replay *rep;          /* rules and options for the streams; never fed */
	struct expo *ex;
	int fam[F__COUNT];
	struct watch_src src[WATCH_MAX_SOURCES];
	size_t n_src;
	char host[256];
	pthread_mutex_t mu;          /* the streams, between the poller and the scraper */
};

static const struct {
	const char *name;
	enum expo_type type;
	const char *help;
} watch_fams[F__COUNT] = {
	[F_MERGES] = { "ttaudit_merges", EXPO_COUNTER, "merge events replayed" },
	[F_TAKEN] = { "ttaudit_taken", EXPO_COUNTER, "slots the rule takes (keeps the device's token)" },
	[F_SUBST] = { "ttaudit_substitutions", EXPO_COUNTER,
		      "slots the rule takes while the buffer is stale, by the evidence that says so" },
	[F_UNVERIFIED] = { "ttaudit_unverified", EXPO_COUNTER,
			   "slots the rule takes whose staleness no evidence decides" },
	[F_PREVENTED] = { "ttaudit_prevented", EXPO_COUNTER,
			  "stale slots the bare merge takes and the rule refuses" },
	[F_FORGONE] = { "ttaudit_forgone", EXPO_COUNTER,
			"fresh slots the bare merge takes and the rule refuses (its cost)" },
	[F_FIRED] = { "ttaudit_fired", EXPO_COUNTER,
		      "merge events where the rule refused a slot the bare merge takes" },
	[F_SKIPPED] = { "ttaudit_skipped", EXPO_COUNTER,
			"merge events lacking a field the rule needs (not evaluated)" },
	[F_GARBAGE] = { "ttaudit_garbage_positions", EXPO_COUNTER,
			"device positions outside [-1, max_pos) (or 2^24 when max_pos is unknown)" },
	[F_LOST] = { "ttaudit_lost_lines", EXPO_COUNTER,
		     "lines not replayed: lost or uncertain in the capture, or too long" },
	[F_MALFORMED] = { "ttaudit_malformed_lines", EXPO_COUNTER,
			  "lines that are audit events or capture records but not valid ones" },
	[F_LAST_EVENT] = { "ttaudit_last_event_timestamp_seconds", EXPO_GAUGE,
			   "when the last audit event of the source was read (Unix time)" },
	[F_ARM] = { "ttaudit_arm_consistent", EXPO_GAUGE,
		    "1: every recorded taken decision so far is the rule's; 0: one contradicts it "
		    "(absent: no event with taken evaluated for it)" },
	[F_UP] = { "ttaudit_source_up", EXPO_GAUGE, "1 while the source is open and read" },
	[F_BUILD] = { "ttaudit_build_info", EXPO_GAUGE, "the ttaudit that serves these metrics" },
};

static double watch_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

enum status watch_new(struct watch **out, const struct watch_opts *o, struct status_info *si)
{
	struct watch *w;
	struct replay_opts ro;
	size_t i;

	*out = NULL;
	if (!o->n_rules || o->n_rules > RULE_MAX_LIST)
		return status_set(si, STATUS_USAGE, "between 1 and %d rules", RULE_MAX_LIST);
	if (!o->n_sources || o->n_sources > WATCH_MAX_SOURCES)
		return status_set(si, STATUS_USAGE, "between 1 and %d sources", WATCH_MAX_SOURCES);
	for (i = 0; i < o->n_sources; i++) {
		size_t k;
		for (k = 0; k < i; k++)
			if (!strcmp(o->sources[i], o->sources[k]))
				return status_set(si, STATUS_USAGE, "source '%s' given twice", o->sources[i]);
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return status_set(si, STATUS_NOMEM, "out of memory");
	w->o = *o;
	memcpy(w->rules, o->rules, o->n_rules * sizeof(*o->rules));
	w->o.rules = w->rules;
	w->o.sources = NULL;
	if (w->o.poll_ms <= 0)
		w->o.poll_ms = 25;
	if (o->host)
		snprintf(w->host, sizeof(w->host), "%s", o->host);
	else if (gethostname(w->host, sizeof(w->host)))
		w->host[0] = '\0';
	w->host[sizeof(w->host) - 1] = '\0';
	pthread_mutex_init(&w->mu, NULL);
	memset(&ro, 0, sizeof(ro));
	ro.rules = w->rules;
	ro.n_rules = o->n_rules;
	ro.max_pos = o->max_pos;
	ro.diag = o->notes;
	w->rep = replay_new(&ro);
	w->ex = expo_new();
	if (!w->rep || !w->ex)
		goto nomem;
	for (i = 0; i < F__COUNT; i++)
		w->fam[i] = expo_family(w->ex, watch_fams[i].name, watch_fams[i].type, watch_fams[i].help);
	{
		const char *n[] = { "version" }, *v[] = { TTAUDIT_VERSION };
		expo_set(w->ex, w->fam[F_BUILD], n, v, 1, 1);
	}
	for (i = 0; i < o->n_sources; i++) {
		struct watch_src *s = &w->src[i];
		s->w = w;
		s->src = tailfile_new(o->sources[i], o->from_start);
		s->rs = s->src ? replay_stream_new(w->rep, o->sources[i]) : NULL;
		if (!s->rs)
			goto nomem;
		w->n_src++;
	}
	*out = w;
	return STATUS_OK;
nomem:
	watch_free(w);
	return status_set(si, STATUS_NOMEM, "out of memory");
}

void watch_free(struct watch *w)
{
	size_t i, k;

	if (!w)
		return;
	for (i = 0; i < w->n_src; i++) {
		for (k = 0; k < w->src[i].n_seen; k++)
			free(w->src[i].seen[k].c);
		free(w->src[i].seen);
		replay_stream_free(w->src[i].rs);
		tailfile_free(w->src[i].src);
	}
	expo_free(w->ex);
	replay_free(w->rep);
	pthread_mutex_destroy(&w->mu);
	free(w);
}

static void watch_on_line(void *ctx, const char *line, size_t n, bool overlong)
{
	struct watch_src *s = ctx;
	const struct audit_reader_stats *st = replay_stream_stats(s->rs);
	uint64_t before = st->events;
	struct status_info si;
	enum status rc;
	char buf[1024];

	if (overlong)
		return;   /* counted by the source: lost, reason too_long */
	status_info_clear(&si);
	rc = replay_stream_line(s->rs, line, n, &si);
	if ((rc == STATUS_PARSE || rc == STATUS_LIMIT) && s->w->o.notes &&
	    s->shown++ < WATCH_MALFORMED_SHOWN)
		fprintf(s->w->o.notes, "ttaudit watch: %s\n", status_info_format(&si, buf, sizeof(buf)));
	if (st->events != before)
		s->last_event = watch_now();
}

/* Says once what a source holds when it has shown no audit event. */
static void watch_no_audit(struct watch_src *s, bool at_end)
{
	const struct audit_reader_stats *st = replay_stream_stats(s->rs);
	char what[512];

	if (s->no_audit_said || !s->w->o.notes || (!at_end && st->lines < WATCH_NO_AUDIT_LINES))
		return;
	if (!audit_reader_describe(st, what, sizeof(what)))
		return;
	s->no_audit_said = true;
	fprintf(s->w->o.notes, "ttaudit watch: %s: no audit event %s: %s\n", tailfile_name(s->src),
		at_end ? "in it" : "yet", what);
}

size_t watch_poll(struct watch *w, bool final)
{
	size_t i, total = 0;

	for (i = 0; i < w->n_src; i++) {
		struct watch_src *s = &w->src[i];
		struct status_info si;
		long got;
		char buf[1024];

		status_info_clear(&si);
		pthread_mutex_lock(&w->mu);
		got = tailfile_poll(s->src, WATCH_BUDGET, final, watch_on_line, s, &si);
		pthread_mutex_unlock(&w->mu);
		if (got < 0) {
			if (!s->read_error && w->o.notes)
				fprintf(w->o.notes, "ttaudit watch: %s\n",
					status_info_format(&si, buf, sizeof(buf)));
			s->read_error = true;
			continue;
		}
		if (got > 0)
			s->read_error = false;
		total += (size_t)got;
		watch_no_audit(s, false);
	}
	return total;
}

void watch_run(struct watch *w, volatile sig_atomic_t *stop)
{
	struct timespec ts = { w->o.poll_ms / 1000, (long)(w->o.poll_ms % 1000) * 1000000L };

	while (!*stop) {
		if (!watch_poll(w, false) && !*stop)
			nanosleep(&ts, NULL);
	}
	watch_poll(w, true);
}

size_t watch_once(struct watch *w)
{
	size_t i, bad = 0;

	while (watch_poll(w, false))
		;
	watch_poll(w, true);
	for (i = 0; i < w->n_src; i++) {
		struct watch_src *s = &w->src[i];
		if (s->read_error || !tailfile_stats(s->src)->opens) {
			if (!s->read_error && w->o.notes)
				fprintf(w->o.notes, "ttaudit watch: %s: no such file\n", tailfile_name(s->src));
			bad++;
			continue;
		}
		watch_no_audit(s, true);
	}
	return bad;
}

/* --- the registry, brought up to date from the streams ---------------------- */

static void watch_add(struct watch *w, int f, const char *const *n, const char *const *v, size_t k,
		      uint64_t now, uint64_t before)
{
	expo_add(w->ex, w->fam[f], n, v, k, (double)(now - before));
}

/* The counts of process row into its series: what grew since the last time. */
static void watch_sync_proc(struct watch *w, struct watch_src *s, const struct replay_proc_row *row,
			    struct watch_seen *seen, const char *pid)
{
	static const int fams[] = { F_TAKEN, F_UNVERIFIED, F_PREVENTED, F_FORGONE, F_FIRED, F_SKIPPED };
	const char *src = tailfile_name(s->src);
	const char *pn[] = { "source", "host", "pid" }, *pv[] = { src, w->host, pid };
	const char *rn[] = { "rule", "source", "host", "pid" };
	const char *en[] = { "rule", "evidence", "source", "host", "pid" };
	size_t k, e, f;

	watch_add(w, F_MERGES, pn, pv, 3, row->counts[0].merges, seen->c[0].merges);
	watch_add(w, F_GARBAGE, pn, pv, 3, row->garbage, seen->garbage);
	seen->garbage = row->garbage;
	for (k = 0; k < w->o.n_rules; k++) {
		const struct tally_counts *c = &row->counts[k];
		struct tally_counts *l = &seen->c[k];
		const char *rv[] = { w->rules[k].name, src, w->host, pid };
		const uint64_t now[] = { c->taken, c->unverified, c->prevented, c->forgone, c->fired,
					 c->skipped };
		const uint64_t was[] = { l->taken, l->unverified, l->prevented, l->forgone, l->fired,
					 l->skipped };

		for (f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
			watch_add(w, fams[f], rn, rv, 4, now[f], was[f]);
		for (e = 1; e < EVIDENCE__COUNT; e++) {
			const char *ev[] = { w->rules[k].name, evidence_name((enum evidence)e), src, w->host,
					     pid };
			watch_add(w, F_SUBST, en, ev, 5, c->subst_by[e], l->subst_by[e]);
		}
		*l = *c;
	}
}

/* ttaudit_arm_consistent per (source, pid): the processes of one pid (ranks, chunks) together. */
static void watch_sync_arm(struct watch *w, struct watch_src *s, size_t i, const char *pid,
			   const struct replay_proc_row *row)
{
	size_t n = replay_stream_n_procs(s->rs), j, k;
	const char *rn[] = { "rule", "source", "host", "pid" };

	for (j = 0; j < i; j++) {
		struct replay_proc_row o;
		replay_stream_proc(s->rs, j, &o);
		if (o.has_pid == row->has_pid && o.pid == row->pid)
			return;   /* done with the first process of that pid */
	}
	for (k = 0; k < w->o.n_rules; k++) {
		uint64_t evaluated = 0, mismatch = 0;
		const char *rv[] = { w->rules[k].name, tailfile_name(s->src), w->host, pid };
		for (j = i; j < n; j++) {
			struct replay_proc_row o;
			replay_stream_proc(s->rs, j, &o);
			if (o.has_pid != row->has_pid || o.pid != row->pid)
				continue;
			evaluated += o.counts[k].fp_evaluated;
			mismatch += o.counts[k].fp_mismatch;
		}
		if (evaluated)
			expo_set(w->ex, w->fam[F_ARM], rn, rv, 4, mismatch ? 0 : 1);
	}
}

static void watch_sync_src(struct watch *w, struct watch_src *s)
{
	const struct audit_reader_stats *st = replay_stream_stats(s->rs);
	const struct tailfile_stats *ss = tailfile_stats(s->src);
	const char *src = tailfile_name(s->src);
	const char *sn[] = { "source", "host" }, *sv[] = { src, w->host };
	const char *ln[] = { "reason", "source", "host" };
	const char *capture[] = { "capture", src, w->host }, *uncertain[] = { "uncertain", src, w->host };
	const char *too_long[] = { "too_long", src, w->host };
	size_t i, n = replay_stream_n_procs(s->rs);
	char pid[24];

	for (i = 0; i < n; i++) {
		struct replay_proc_row row;
		struct watch_seen *seen;

		replay_stream_proc(s->rs, i, &row);
		if (i >= s->n_seen) {
			if (ALLOC_GROW(s->seen, s->n_seen + 1, s->cap_seen) < 0)
				break;   /* this process's series wait for memory */
			s->seen[s->n_seen].c = calloc(w->o.n_rules, sizeof(struct tally_counts));
			s->seen[s->n_seen].garbage = 0;
			if (!s->seen[s->n_seen].c)
				break;
			s->n_seen++;
		}
		seen = &s->seen[i];
		if (row.has_pid)
			snprintf(pid, sizeof(pid), "%" PRId64, row.pid);
		else
			pid[0] = '\0';
		watch_sync_proc(w, s, &row, seen, pid);
		watch_sync_arm(w, s, i, pid, &row);
	}
	watch_add(w, F_LOST, ln, capture, 3, st->capture_lost, s->lost);
	watch_add(w, F_LOST, ln, uncertain, 3, st->capture_uncertain, s->uncertain);
	watch_add(w, F_LOST, ln, too_long, 3, ss->overlong, s->overlong);
	watch_add(w, F_MALFORMED, sn, sv, 2, st->malformed, s->malformed);
	s->lost = st->capture_lost;
	s->uncertain = st->capture_uncertain;
	s->overlong = ss->overlong;
	s->malformed = st->malformed;
	expo_set(w->ex, w->fam[F_UP], sn, sv, 2, tailfile_up(s->src) && !s->read_error);
	if (s->last_event > 0)
		expo_set(w->ex, w->fam[F_LAST_EVENT], sn, sv, 2, s->last_event);
}

enum status watch_write_metrics(struct watch *w, FILE *f)
{
	size_t i;

	pthread_mutex_lock(&w->mu);
	for (i = 0; i < w->n_src; i++)
		watch_sync_src(w, &w->src[i]);
	pthread_mutex_unlock(&w->mu);
	return expo_write(w->ex, f);
}

void watch_health(struct watch *w, size_t *up, size_t *total)
{
	size_t i;

	*up = 0;
	pthread_mutex_lock(&w->mu);
	for (i = 0; i < w->n_src; i++)
		*up += tailfile_up(w->src[i].src) && !w->src[i].read_error;
	pthread_mutex_unlock(&w->mu);
	*total = w->n_src;
}
