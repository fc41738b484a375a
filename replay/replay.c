#include "replay.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

/* Distinct garbage values the text report lists. */
#define REPLAY_GARBAGE_SHOWN 8

struct replay_explained {
	char *text;     /* human text, owned */
	char *json;     /* one JSON object, owned */
};

/* Last garbage value seen per slot in the current file, to spot drift. */
struct replay_resident {
	int64_t value[EVENT_MAX_SLOTS];
	int64_t step[EVENT_MAX_SLOTS];
	uint8_t seen[EVENT_MAX_SLOTS];
};

struct replay {
	struct replay_opts opts;
	struct rule rules[RULE_MAX_LIST];
	struct tally *total;
	struct replay_file *files;
	size_t n_files, cap_files;
	uint64_t malformed, shown;
	struct audit_reader_stats stats;   /* summed over files */
	struct replay_explained explained[REPLAY_EXPLAIN_MAX];
	size_t n_explained;
	uint64_t explain_dropped;
	struct replay_resident *resident;
	struct replay_file *cur;           /* file being read, for the observer */
};

struct replay *replay_new(const struct replay_opts *opts)
{
	struct replay *r;

	if (!opts->n_rules || opts->n_rules > RULE_MAX_LIST)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->opts = *opts;
	memcpy(r->rules, opts->rules, opts->n_rules * sizeof(*opts->rules));
	r->opts.rules = r->rules;
	if (!r->opts.max_sites)
		r->opts.max_sites = 1000;
	if (!r->opts.diag)
		r->opts.diag = stderr;
	r->total = tally_new(r->rules, opts->n_rules, opts->max_pos);
	r->resident = calloc(1, sizeof(*r->resident));
	if (!r->total || !r->resident) {
		replay_free(r);
		return NULL;
	}
	return r;
}

void replay_free(struct replay *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->n_files; i++) {
		tally_free(r->files[i].tally);
		free(r->files[i].sites);
		free((char *)r->files[i].path);
	}
	for (i = 0; i < r->n_explained; i++) {
		free(r->explained[i].text);
		free(r->explained[i].json);
	}
	free(r->files);
	free(r->resident);
	tally_free(r->total);
	free(r);
}

static void replay_observe(void *ctx, const struct tally_subst *s)
{
	struct replay *r = ctx;
	struct replay_file *f = r->cur;

	if (!f || !r->opts.keep_sites)
		return;
	if (f->n_sites == r->opts.max_sites) {
		f->sites_dropped++;
		return;
	}
	if (!f->sites) {
		f->sites = calloc(r->opts.max_sites, sizeof(*f->sites));
		if (!f->sites) {
			f->sites_dropped++;
			return;
		}
	}
	f->sites[f->n_sites++] = (struct replay_site){ s->line, s->m->step, s->slot, s->rule,
							s->evidence };
}

static void explain_slot_drift(struct replay *r, const struct merge_event *m, uint32_t s,
			       char *buf, size_t n)
{
	struct replay_resident *res = r->resident;
	int64_t dv, ds;

	buf[0] = '\0';
	if (!res->seen[s] || m->step <= res->step[s])
		return;
	dv = m->dev_pos[s] - res->value[s];
	ds = m->step - res->step[s];
	if (dv == 0)
		snprintf(buf, n, "unchanged since step %" PRId64 " (%" PRId64 " steps): resident in "
			 "the buffer", res->step[s], ds);
	else if (dv == ds)
		snprintf(buf, n, "grew by %" PRId64 " over the %" PRId64 " steps since step %" PRId64
			 ": a plus_one applied each step to a resident stale buffer", dv, ds,
			 res->step[s]);
}

/* Describes merge event m, slot by slot, as text and JSON; stores both. */
static void replay_explain(struct replay *r, const struct merge_event *m, const char *file,
			   long line, int64_t max_pos)
{
	struct replay_explained *ex;
	struct rule_ctx ctx = { .max_pos = max_pos };
	int64_t gpos = max_pos > 0 ? max_pos : TALLY_DEFAULT_GARBAGE_POS;
	uint8_t take[EVENT_MAX_SLOTS], allowed[EVENT_MAX_SLOTS];
	char why[512], drift[256];
	size_t tlen = 0, jlen = 0, i;
	FILE *tf, *jf;
	struct jsonw w;
	uint32_t s;

	if (r->n_explained == REPLAY_EXPLAIN_MAX) {
		r->explain_dropped++;
		return;
	}
	ex = &r->explained[r->n_explained];
	tf = open_memstream(&ex->text, &tlen);
	jf = open_memstream(&ex->json, &jlen);
	if (!tf || !jf) {
		if (tf)
			fclose(tf);
		if (jf)
			fclose(jf);
		free(ex->text);
		free(ex->json);
		ex->text = ex->json = NULL;
		r->explain_dropped++;
		return;
	}
	r->n_explained++;
	jsonw_init(&w, jf);
	jsonw_obj(&w);
	jsonw_kstr(&w, "file", file);
	jsonw_kint(&w, "line", line);
	jsonw_kint(&w, "step", m->step);
	jsonw_kbool(&w, "reset_batch", m->reset_batch);
	jsonw_kbool(&w, "mode_switched", m->mode_switched);
	jsonw_kuint(&w, "host_slots", m->n_host);
	jsonw_kuint(&w, "dev_slots", m->n_dev);
	fprintf(tf, "%s:%ld: merge at step %" PRId64 "%s%s, %u host slots, %u device slots\n", file,
		line, m->step, m->reset_batch ? " (reset_batch)" : "",
		m->mode_switched ? " (mode_switched)" : "", m->n_host, m->n_dev);
	if (m->has_buf_step)
		fprintf(tf, "  buffer written at step %" PRId64 " (%" PRId64 " steps before)\n",
			m->buf_step, m->step - m->buf_step);
	if (m->n_dev < m->n_host) {
		fprintf(tf, "  shape fallback: device buffer has %u slots, batch %u: no rule takes "
			"anything\n", m->n_dev, m->n_host);
		jsonw_kbool(&w, "shape_fallback", 1);
		jsonw_obj_end(&w);
		fclose(tf);
		fclose(jf);
		return;
	}
	jsonw_kbool(&w, "shape_fallback", 0);
	jsonw_key(&w, "slots");
	jsonw_arr(&w);
	for (s = 0; s < m->n_host; s++) {
		int stale = 0;
		enum evidence ev = evidence_slot(m, s, &stale);
		int64_t d = m->dev_pos[s];
		double f32;

		jsonw_obj(&w);
		jsonw_kuint(&w, "slot", s);
		jsonw_kint(&w, "host_pos", m->host_pos[s]);
		jsonw_kint(&w, "dev_pos", d);
		fprintf(tf, "  slot %u: host_pos %" PRId64 ", dev_pos %" PRId64, s, m->host_pos[s], d);
		if (s < m->n_host_tok) {
			fprintf(tf, ", host_tok %" PRId64, m->host_tok[s]);
			jsonw_kint(&w, "host_tok", m->host_tok[s]);
		}
		if (s < m->n_dev_tok) {
			fprintf(tf, ", dev_tok %" PRId64, m->dev_tok[s]);
			jsonw_kint(&w, "dev_tok", m->dev_tok[s]);
		}
		if (m->has_taken) {
			fprintf(tf, ", taken %s", m->taken[s] ? "yes" : "no");
			jsonw_kbool(&w, "taken", m->taken[s]);
		}
		fputc('\n', tf);
		if (d < -1 || d >= gpos) {
			int like = tally_float32_like(d);
			explain_slot_drift(r, m, s, drift, sizeof(drift));
			fprintf(tf, "    garbage position (>= %" PRId64 " or < -1)", gpos);
			jsonw_key(&w, "garbage");
			jsonw_obj(&w);
			if (tally_float32(d, &f32)) {
				fprintf(tf, "; as float32 bits it reads %.2f%s", f32,
					like ? " (float32-like)" : "");
				jsonw_kdouble(&w, "float32", f32);
			}
			jsonw_kbool(&w, "float32_like", like);
			if (drift[0]) {
				fprintf(tf, "; %s", drift);
				jsonw_kstr(&w, "drift", drift);
			}
			jsonw_obj_end(&w);
			fputc('\n', tf);
		}
		if (m->host_pos[s] == -1) {
			fprintf(tf, "    inactive: never counts\n");
			jsonw_kbool(&w, "active", 0);
			jsonw_obj_end(&w);
			continue;
		}
		jsonw_kbool(&w, "active", 1);
		evidence_why(m, s, why, sizeof(why));
		fprintf(tf, "    staleness: %s (evidence %s: %s)\n",
			ev == EVIDENCE_UNKNOWN ? "unknown" : stale ? "STALE" : "fresh",
			evidence_name(ev), why);
		jsonw_key(&w, "stale");
		if (ev == EVIDENCE_UNKNOWN)
			jsonw_null(&w);
		else
			jsonw_bool(&w, stale);
		jsonw_kstr(&w, "evidence", evidence_name(ev));
		jsonw_kstr(&w, "evidence_why", why);
		if (!rule_bare_take(m, s))
			fprintf(tf, "    positions do not match (dev_pos is neither host_pos nor "
				"host_pos + 1): no rule takes it\n");
		jsonw_key(&w, "rules");
		jsonw_obj(&w);
		for (i = 0; i < r->opts.n_rules; i++) {
			const struct rule *ru = &r->rules[i];
			enum rule_outcome o = rule_eval(ru, m, &ctx, take, allowed);
			const char *verdict;
			jsonw_key(&w, ru->name);
			jsonw_obj(&w);
			if (o == RULE_SKIPPED) {
				rule_missing(ru, m, &ctx, why, sizeof(why));
				if (rule_bare_take(m, s))
					fprintf(tf, "    %-16s skipped: needs %s\n", ru->name, why);
				jsonw_kstr(&w, "outcome", "skipped");
				jsonw_kstr(&w, "missing", why);
				jsonw_obj_end(&w);
				continue;
			}
			rule_why(ru, m, &ctx, s, why, sizeof(why));
			if (take[s])
				verdict = ev == EVIDENCE_UNKNOWN ? "takes (unverified)"
					: stale ? "takes: SUBSTITUTION" : "takes (fresh)";
			else if (rule_bare_take(m, s))
				verdict = ev == EVIDENCE_UNKNOWN ? "refuses (staleness unknown)"
					: stale ? "refuses: prevented" : "refuses: forgone";
			else
				verdict = "does not take";
			if (rule_bare_take(m, s))
				fprintf(tf, "    %-16s %s; %s\n", ru->name, verdict, why);
			jsonw_kstr(&w, "outcome", take[s] ? "take" : allowed[s] ? "no-match" : "refuse");
			jsonw_kstr(&w, "verdict", verdict);
			jsonw_kstr(&w, "why", why);
			jsonw_obj_end(&w);
		}
		jsonw_obj_end(&w);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	fclose(tf);
	fclose(jf);
}

static void replay_note_resident(struct replay *r, const struct merge_event *m, int64_t max_pos)
{
	int64_t gpos = max_pos > 0 ? max_pos : TALLY_DEFAULT_GARBAGE_POS;
	uint32_t s;

	if (m->n_dev < m->n_host)
		return;
	for (s = 0; s < m->n_host; s++) {
		int64_t d = m->dev_pos[s];
		if (d < -1 || d >= gpos) {
			r->resident->value[s] = d;
			r->resident->step[s] = m->step;
			r->resident->seen[s] = 1;
		} else {
			r->resident->seen[s] = 0;
		}
	}
}

static void stats_add(struct audit_reader_stats *d, const struct audit_reader_stats *s)
{
	d->lines += s->lines;
	d->blank += s->blank;
	d->events += s->events;
	d->other_events += s->other_events;
	d->malformed += s->malformed;
	d->ignored += s->ignored;
	d->capture_records += s->capture_records;
	d->capture_lost += s->capture_lost;
}

enum status replay_add_file(struct replay *r, const char *path, struct status_info *si)
{
	struct audit_reader_opts ro = { .max_line = r->opts.max_line };
	struct audit_reader *rd = NULL;
	struct replay_file *f;
	struct audit_item it;
	struct status_info lsi;
	enum status st;

	if (r->n_files == r->cap_files) {
		size_t cap = r->cap_files ? r->cap_files * 2 : 8;
		struct replay_file *nf = realloc(r->files, cap * sizeof(*nf));
		if (!nf)
			return status_set(si, STATUS_NOMEM, "out of memory");
		r->files = nf;
		r->cap_files = cap;
	}
	f = &r->files[r->n_files];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	f->tally = tally_new(r->rules, r->opts.n_rules, r->opts.max_pos);
	if (!f->path || !f->tally) {
		free((char *)f->path);
		tally_free(f->tally);
		return status_set(si, STATUS_NOMEM, "out of memory");
	}
	r->n_files++;
	r->cur = f;
	tally_set_observer(f->tally, replay_observe, r);
	memset(r->resident->seen, 0, sizeof(r->resident->seen));

	st = audit_reader_open(&rd, path, &ro, si);
	if (st) {
		f->unreadable = true;
		goto out;
	}
	for (;;) {
		status_info_clear(&lsi);
		st = audit_reader_next(rd, &it, &lsi);
		if (st == STATUS_EOF) {
			st = STATUS_OK;
			break;
		}
		if (st == STATUS_PARSE || st == STATUS_LIMIT) {
			char buf[1024];
			f->malformed++;
			r->malformed++;
			if (r->opts.strict) {
				if (si)
					*si = lsi;
				goto out;
			}
			if (r->shown++ < REPLAY_MALFORMED_SHOWN)
				fprintf(r->opts.diag, "%s\n", status_info_format(&lsi, buf, sizeof(buf)));
			continue;
		}
		if (st) {
			if (si)
				*si = lsi;
			f->unreadable = true;
			goto out;
		}
		if (!it.has_event)
			continue;
		if (it.event.kind == EVENT_CONFIG) {
			tally_config(f->tally, &it.event.u.config);
		} else if (it.event.kind == EVENT_MERGE) {
			const struct merge_event *m = &it.event.u.merge;
			if (r->opts.explain && m->step == r->opts.explain_step)
				replay_explain(r, m, path, it.line, tally_max_pos(f->tally));
			tally_merge(f->tally, m, path, it.line);
			if (r->opts.explain)
				replay_note_resident(r, m, tally_max_pos(f->tally));
		}
	}
out:
	if (rd) {
		f->stats = *audit_reader_stats(rd);
		stats_add(&r->stats, &f->stats);
	}
	audit_reader_free(rd);
	tally_absorb(r->total, f->tally);
	r->cur = NULL;
	return st;
}

const struct tally *replay_tally(const struct replay *r) { return r->total; }
size_t replay_n_files(const struct replay *r) { return r->n_files; }
const struct replay_file *replay_file_at(const struct replay *r, size_t i) { return &r->files[i]; }
uint64_t replay_malformed(const struct replay *r) { return r->malformed; }
size_t replay_n_explained(const struct replay *r) { return r->n_explained; }

/* Which fields a never-evaluated rule lacked, for "not evaluable" lines. */
static const char *rule_needs_text(const struct rule *ru)
{
	if (ru->needs & RULE_NEEDS_STAMP)
		return "no slot_gen/buf_slot_gen or gen/buf_gen";
	if (ru->needs & RULE_NEEDS_BUF_STEP)
		return "no buf_step";
	if (ru->needs & RULE_NEEDS_PREFILLED)
		return "no prefilled";
	if (ru->needs & RULE_NEEDS_MAX_POS)
		return "no max_pos (--max-pos or config.max_model_len)";
	return "no merge events";
}

void replay_print_text(const struct replay *r, FILE *f)
{
	const struct tally *t = r->total;
	const struct tally_garbage *g = tally_garbage(t);
	struct tally_fingerprint fp;
	uint64_t merges = 0;
	size_t i, e;
	int any_unevaluable = 0;

	if (tally_n_rules(t))
		merges = tally_counts(t, 0)->merges;
	fprintf(f, "%zu file%s, %" PRIu64 " lines, %" PRIu64 " merge events, %" PRIu64
		" malformed line%s", r->n_files, r->n_files == 1 ? "" : "s", r->stats.lines, merges,
		r->malformed, r->malformed == 1 ? "" : "s");
	if (r->stats.other_events)
		fprintf(f, ", %" PRIu64 " other events", r->stats.other_events);
	if (r->stats.capture_lost)
		fprintf(f, ", %" PRIu64 " lines LOST by the capture", r->stats.capture_lost);
	fputc('\n', f);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].unreadable)
			fprintf(f, "%s: could not be read to the end\n", r->files[i].path);
	fprintf(f, "\n%-22s %7s %7s %6s %7s %7s %7s %7s %7s %7s\n", "rule", "merges", "taken",
		"subst", "unverif", "prevent", "forgone", "fired", "skipped", "shape");
	for (i = 0; i < tally_n_rules(t); i++) {
		const struct tally_counts *c = tally_counts(t, i);
		const char *name = tally_rule(t, i)->name;
		if (tally_not_evaluable(t, i)) {
			fprintf(f, "%-22s %7" PRIu64 "   not evaluable on this audit (%s)\n", name,
				c->merges, rule_needs_text(tally_rule(t, i)));
			any_unevaluable = 1;
			continue;
		}
		fprintf(f, "%-22s %7" PRIu64 " %7" PRIu64 " %6" PRIu64 " %7" PRIu64 " %7" PRIu64
			" %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 "\n", name, c->merges,
			c->taken, c->substitutions, c->unverified, c->prevented, c->forgone, c->fired,
			c->skipped, c->shape_fallback);
	}
	(void)any_unevaluable;
	fprintf(f, "\nevidence behind each take (request / stamp / lifetime / unknown):\n");
	for (i = 0; i < tally_n_rules(t); i++) {
		const struct tally_counts *c = tally_counts(t, i);
		if (tally_not_evaluable(t, i))
			continue;
		fprintf(f, "  %-20s taken", tally_rule(t, i)->name);
		for (e = 1; e <= EVIDENCE__COUNT; e++)
			fprintf(f, " %s%" PRIu64, e == 1 ? "" : "/ ", c->taken_by[e % EVIDENCE__COUNT]);
		fprintf(f, "; substitutions");
		for (e = 1; e < EVIDENCE__COUNT; e++)
			fprintf(f, " %s%" PRIu64, e == 1 ? "" : "/ ", c->subst_by[e]);
		if (c->rejected_unverified)
			fprintf(f, "; %" PRIu64 " refused with staleness unknown", c->rejected_unverified);
		fputc('\n', f);
	}
	fprintf(f, "\ngarbage positions: %" PRIu64 " (%" PRIu64 " float32-like)\n", g->count,
		g->float32_like);
	for (i = 0; i < g->n_values && i < REPLAY_GARBAGE_SHOWN; i++) {
		double d;
		fprintf(f, "  %" PRId64 " x%" PRIu64, g->values[i].value, g->values[i].n);
		if (tally_float32(g->values[i].value, &d))
			fprintf(f, "  reads as float32 %.2f%s", d,
				tally_float32_like(g->values[i].value) ? " (float32-like)" : "");
		fputc('\n', f);
	}
	if (g->n_values > REPLAY_GARBAGE_SHOWN)
		fprintf(f, "  ... and %zu more distinct values (--json lists up to %d)\n",
			g->n_values - REPLAY_GARBAGE_SHOWN, TALLY_GARBAGE_VALUES);
	if (g->values_dropped)
		fprintf(f, "  ... and %" PRIu64 " positions of values beyond those %d\n",
			g->values_dropped, TALLY_GARBAGE_VALUES);

	tally_fingerprint(t, &fp);
	fprintf(f, "\narm fingerprint: ");
	if (fp.verdict == TALLY_NO_TAKEN) {
		fprintf(f, "no merge event records `taken`; the engaged arm cannot be read from "
			"this audit\n");
	} else {
		fprintf(f, "%s over %" PRIu64 " events with `taken`", tally_verdict_name(fp.verdict),
			fp.events_with_taken);
		if (fp.n_consistent) {
			fprintf(f, "; consistent with:");
			for (i = 0; i < fp.n_consistent; i++)
				fprintf(f, " %s", tally_rule(t, fp.consistent[i])->name);
		}
		if (fp.verdict == TALLY_WITHHELD)
			fprintf(f, " (no event separates them)");
		fputc('\n', f);
		for (i = 0; i < tally_n_rules(t); i++) {
			const struct tally_counts *c = tally_counts(t, i);
			if (c->fp_mismatch)
				fprintf(f, "  %-20s contradicted on %" PRIu64 " of %" PRIu64
					" events (first at step %" PRId64 ")\n", tally_rule(t, i)->name,
					c->fp_mismatch, c->fp_evaluated, c->fp_first_mismatch_step);
		}
	}
	if (r->malformed > REPLAY_MALFORMED_SHOWN)
		fprintf(f, "\n%" PRIu64 " malformed lines in total (first %d shown on stderr)\n",
			r->malformed, REPLAY_MALFORMED_SHOWN);
}

static void print_counts_json(struct jsonw *w, const struct tally_counts *c, int evaluable)
{
	size_t e;

	jsonw_obj(w);
	jsonw_kuint(w, "merges", c->merges);
	jsonw_kuint(w, "taken", c->taken);
	jsonw_kuint(w, "substitutions", c->substitutions);
	jsonw_kuint(w, "unverified", c->unverified);
	jsonw_kuint(w, "prevented", c->prevented);
	jsonw_kuint(w, "forgone", c->forgone);
	jsonw_kuint(w, "fired", c->fired);
	jsonw_kuint(w, "skipped", c->skipped);
	jsonw_kuint(w, "shape_fallback", c->shape_fallback);
	jsonw_kuint(w, "rejected_unverified", c->rejected_unverified);
	jsonw_kuint(w, "bare_taken", c->bare_taken);
	jsonw_kbool(w, "evaluable", evaluable);
	jsonw_key(w, "evidence");
	jsonw_obj(w);
	jsonw_key(w, "taken");
	jsonw_obj(w);
	for (e = 0; e < EVIDENCE__COUNT; e++)
		jsonw_kuint(w, evidence_name((enum evidence)e), c->taken_by[e]);
	jsonw_obj_end(w);
	jsonw_key(w, "substitutions");
	jsonw_obj(w);
	for (e = 1; e < EVIDENCE__COUNT; e++)
		jsonw_kuint(w, evidence_name((enum evidence)e), c->subst_by[e]);
	jsonw_obj_end(w);
	jsonw_obj_end(w);
	jsonw_key(w, "fingerprint");
	jsonw_obj(w);
	jsonw_kuint(w, "evaluated", c->fp_evaluated);
	jsonw_kuint(w, "mismatched", c->fp_mismatch);
	if (c->fp_mismatch)
		jsonw_kint(w, "first_mismatch_step", c->fp_first_mismatch_step);
	jsonw_obj_end(w);
	jsonw_obj_end(w);
}

void replay_print_explain_json(const struct replay *r, struct jsonw *w)
{
	size_t i;

	jsonw_key(w, "explain");
	jsonw_arr(w);
	for (i = 0; i < r->n_explained; i++)
		jsonw_raw(w, r->explained[i].json);
	jsonw_arr_end(w);
}

void replay_print_explain_text(const struct replay *r, FILE *f)
{
	size_t i;

	for (i = 0; i < r->n_explained; i++)
		fputs(r->explained[i].text, f);
	if (r->explain_dropped)
		fprintf(f, "(%" PRIu64 " more merge events at that step not shown)\n",
			r->explain_dropped);
}

void replay_print_json(const struct replay *r, FILE *f)
{
	const struct tally *t = r->total;
	const struct tally_garbage *g = tally_garbage(t);
	struct tally_fingerprint fp;
	struct jsonw w;
	size_t i;

	jsonw_init(&w, f);
	jsonw_obj(&w);
	jsonw_key(&w, "rules");
	jsonw_obj(&w);
	for (i = 0; i < tally_n_rules(t); i++) {
		jsonw_key(&w, tally_rule(t, i)->name);
		print_counts_json(&w, tally_counts(t, i), !tally_not_evaluable(t, i));
	}
	jsonw_obj_end(&w);
	jsonw_key(&w, "not_evaluable");
	jsonw_arr(&w);
	for (i = 0; i < tally_n_rules(t); i++)
		if (tally_not_evaluable(t, i))
			jsonw_str(&w, tally_rule(t, i)->name);
	jsonw_arr_end(&w);
	jsonw_key(&w, "garbage");
	jsonw_obj(&w);
	jsonw_kuint(&w, "count", g->count);
	jsonw_kuint(&w, "float32_like", g->float32_like);
	jsonw_key(&w, "values");
	jsonw_arr(&w);
	for (i = 0; i < g->n_values; i++) {
		double d;
		jsonw_obj(&w);
		jsonw_kint(&w, "value", g->values[i].value);
		jsonw_kuint(&w, "count", g->values[i].n);
		if (tally_float32(g->values[i].value, &d))
			jsonw_kdouble(&w, "float32", d);
		jsonw_kbool(&w, "float32_like", tally_float32_like(g->values[i].value));
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_kuint(&w, "values_dropped", g->values_dropped);
	jsonw_obj_end(&w);
	jsonw_kuint(&w, "malformed", r->malformed);
	tally_fingerprint(t, &fp);
	jsonw_key(&w, "fingerprint");
	jsonw_obj(&w);
	jsonw_key(&w, "consistent");
	jsonw_arr(&w);
	for (i = 0; i < fp.n_consistent; i++)
		jsonw_str(&w, tally_rule(t, fp.consistent[i])->name);
	jsonw_arr_end(&w);
	jsonw_kstr(&w, "verdict", tally_verdict_name(fp.verdict));
	jsonw_kuint(&w, "events_with_taken", fp.events_with_taken);
	jsonw_obj_end(&w);
	jsonw_key(&w, "input");
	jsonw_obj(&w);
	jsonw_kuint(&w, "files", r->n_files);
	jsonw_kuint(&w, "lines", r->stats.lines);
	jsonw_kuint(&w, "events", r->stats.events);
	jsonw_kuint(&w, "other_events", r->stats.other_events);
	jsonw_kuint(&w, "ignored", r->stats.ignored);
	jsonw_kuint(&w, "capture_records", r->stats.capture_records);
	jsonw_kuint(&w, "capture_lost", r->stats.capture_lost);
	jsonw_key(&w, "unreadable");
	jsonw_arr(&w);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].unreadable)
			jsonw_str(&w, r->files[i].path);
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	if (r->opts.explain)
		replay_print_explain_json(r, &w);
	jsonw_obj_end(&w);
}
