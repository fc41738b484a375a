/*
 * replay_report.c - what the replay found (replay.h's accessors) and its
 * reports: text, JSON, the explanation of a step, per-process rows.
 */
#include "replay/replay_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jdoc.h"
#include "base/jsonw.h"
#include "base/rate.h"

/* --- what the replay found -------------------------------------------------- */

const struct tally *replay_tally(const struct replay *r) { return r->total; }
size_t replay_n_files(const struct replay *r) { return r->n_files; }
const struct replay_file *replay_file_at(const struct replay *r, size_t i) { return &r->files[i]; }
uint64_t replay_malformed(const struct replay *r) { return r->malformed; }
size_t replay_n_explained(const struct replay *r) { return r->n_explained; }
size_t replay_n_unreadable(const struct replay *r) { return r->n_unreadable; }
size_t replay_n_truncated(const struct replay *r) { return r->n_truncated; }
size_t replay_n_no_audit(const struct replay *r) { return r->n_no_audit; }
uint64_t replay_events(const struct replay *r) { return r->stats.events; }
const struct replay_gate *replay_gate(const struct replay *r) { return &r->gate; }
size_t replay_n_proc_rows(const struct replay *r) { return r->n_rows; }
const struct replay_proc_row *replay_proc_row_at(const struct replay *r, size_t i) { return &r->rows[i]; }

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
	return "every merge event is a shape fallback";
}

static const char *not_evaluable_why(const struct rule *ru, const struct tally_counts *c,
				     const struct replay_gate *g, char *buf, size_t n)
{
	if (!c->merges && g->refused)
		snprintf(buf, n, "the keep never ran: the capability gate refused it on %" PRIu64
			 " step%s", g->refused, g->refused == 1 ? "" : "s");
	else if (!c->merges)
		snprintf(buf, n, "no merge events");
	else if (c->shape_fallback == c->merges)
		snprintf(buf, n, "every merge event is a shape fallback");
	else
		snprintf(buf, n, "%s", rule_needs_text(ru));
	return buf;
}

const char *replay_not_evaluable_why(const struct replay *r, const struct replay_file *f, size_t i)
{
	static __thread char buf[160];
	const struct tally_counts *c = f ? (f->counts ? &f->counts[i] : NULL) : tally_counts(r->total, i);
	struct tally_counts zero;

	if (!c) {
		memset(&zero, 0, sizeof(zero));
		c = &zero;
	}
	return not_evaluable_why(&r->rules[i], c, f ? &f->gate : &r->gate, buf, sizeof(buf));
}

static const char *signal_name(int64_t sig)
{
	if (sig <= 0 || sig >= 65)
		return NULL;
	return sigabbrev_np((int)sig);
}

static int counts_not_evaluable(const struct tally_counts *c)
{
	return tally_n_evaluated(c) == 0;
}

static void print_fingerprint_text(const struct rule *rules, const struct tally_fingerprint *fp,
				   FILE *f)
{
	size_t i;

	if (fp->verdict == TALLY_NO_TAKEN) {
		fprintf(f, "no merge event records `taken`; the engaged arm cannot be read");
		return;
	}
	fprintf(f, "%s over %" PRIu64 " events with `taken`", tally_verdict_name(fp->verdict),
		fp->events_with_taken);
	if (fp->n_consistent) {
		fprintf(f, "; consistent with:");
		for (i = 0; i < fp->n_consistent; i++)
			fprintf(f, " %s", rules[fp->consistent[i]].name);
		if (fp->n_consistent > 1)
			fprintf(f, " (no event separates them)");
	}
	if (fp->n_unevaluated) {
		fprintf(f, "; never evaluated (not ruled out):");
		for (i = 0; i < fp->n_unevaluated; i++)
			fprintf(f, " %s", rules[fp->unevaluated[i]].name);
	}
}

static void print_proc_rows_text(const struct replay *r, FILE *f)
{
	size_t i, k, last = SIZE_MAX;
	char who[96];

	for (i = 0; i < r->n_rows; i++) {
		const struct replay_proc_row *row = &r->rows[i];
		struct tally_fingerprint fp;
		uint64_t merges = r->opts.n_rules ? row->counts[0].merges : 0;

		if (row->file != last) {
			fprintf(f, "\nper process in %s (%zu processes; the totals above hold them all):\n",
				r->files[row->file].path, r->files[row->file].n_procs);
			last = row->file;
		}
		replay_proc_label(row->has_pid, row->pid, row->has_rank, row->rank, row->has_dp, row->dp, who,
			   sizeof(who));
		fprintf(f, "  %s: %" PRIu64 " merge events", who, merges);
		if (!merges && row->gate.refused)
			fprintf(f, " (the keep never ran: the capability gate refused it on %" PRIu64
				" steps)", row->gate.refused);
		fprintf(f, ", %" PRIu64 " garbage positions; substitutions:", row->garbage);
		for (k = 0; k < r->opts.n_rules; k++) {
			const struct tally_counts *c = &row->counts[k];
			if (counts_not_evaluable(c))
				fprintf(f, " %s -", r->rules[k].name);
			else
				fprintf(f, " %s %" PRIu64, r->rules[k].name, c->substitutions);
		}
		tally_fingerprint_of(row->counts, r->opts.n_rules, row->events_with_taken, &fp);
		fprintf(f, "\n    arm fingerprint: ");
		print_fingerprint_text(r->rules, &fp, f);
		fputc('\n', f);
	}
	if (r->rows_dropped)
		fprintf(f, "  ... and %" PRIu64 " more processes (in the totals, not listed)\n",
			r->rows_dropped);
}

void replay_print_text(const struct replay *r, FILE *f)
{
	const struct tally *t = r->total;
	const struct tally_garbage *g = tally_garbage(t);
	struct tally_fingerprint fp;
	uint64_t merges = 0;
	size_t i, e;
	char why[160];

	if (tally_n_rules(t))
		merges = tally_counts(t, 0)->merges;
	fprintf(f, "%zu file%s, %" PRIu64 " lines, %" PRIu64 " merge events, %" PRIu64
		" malformed line%s", r->n_files, r->n_files == 1 ? "" : "s", r->stats.lines, merges,
		r->malformed, r->malformed == 1 ? "" : "s");
	if (r->stats.other_events)
		fprintf(f, ", %" PRIu64 " other events", r->stats.other_events);
	if (r->stats.other_lines)
		fprintf(f, ", %" PRIu64 " other log lines", r->stats.other_lines);
	if (r->stats.capture_lost)
		fprintf(f, ", %" PRIu64 " lines LOST by the capture", r->stats.capture_lost);
	if (r->stats.capture_uncertain)
		fprintf(f, ", %" PRIu64 " lines UNCERTAIN in the capture", r->stats.capture_uncertain);
	if (r->n_dups)
		fprintf(f, ", %zu duplicate input%s counted once", r->n_dups, r->n_dups == 1 ? "" : "s");
	fputc('\n', f);
	for (i = 0; i < r->n_files; i++) {
		if (r->files[i].unreadable)
			fprintf(f, "%s: could not be read to the end\n", r->files[i].path);
		if (r->files[i].no_audit)
			fprintf(f, "%s: no audit event (what it holds is said on stderr)\n",
				r->files[i].path);
		if (r->files[i].truncated)
			fprintf(f, "%s: truncated gzip after %" PRIu64 " lines: the counts hold what was "
				"read\n", r->files[i].path, r->files[i].stats.lines);
	}
	if (r->stats.uncertain_events)
		fprintf(f, "%" PRIu64 " audit event%s inside uncertain capture records: counted, not "
			"replayed\n", r->stats.uncertain_events, r->stats.uncertain_events == 1 ? "" : "s");
	if (r->stats.partial || r->stats.invalid_utf8)
		fprintf(f, "capture: %" PRIu64 " records of lines no newline ended (partial), %" PRIu64
			" bytes of invalid UTF-8 escaped\n", r->stats.partial, r->stats.invalid_utf8);
	for (i = 0; i < r->n_ends; i++) {
		const struct replay_end *x = &r->ends[i];
		const char *name = signal_name(x->signal);
		fprintf(f, "%s: pid %" PRId64 " died by signal %" PRId64 "%s%s%s%s%s\n",
			r->files[x->file].path, x->pid, x->signal, name ? " (SIG" : "", name ? name : "",
			name ? ")" : "", x->by[0] ? ", reported by " : "", x->by);
	}
	if (r->ends_dropped)
		fprintf(f, "... and %" PRIu64 " more processes died by a signal\n", r->ends_dropped);
	if (!merges && r->gate.refused)
		fprintf(f, "the keep never ran (the capability gate refused it on %" PRIu64 " step%s)\n",
			r->gate.refused, r->gate.refused == 1 ? "" : "s");
	if (r->gate.forced)
		fprintf(f, "the keep ran against the capability gate (force:true in the audit) "
			"on %" PRIu64 " step%s\n", r->gate.forced, r->gate.forced == 1 ? "" : "s");
	if (r->procs_dropped)
		fprintf(f, "%" PRIu64 " events of processes beyond the first %d of a file were not "
			"replayed\n", r->procs_dropped, REPLAY_MAX_PROCS);
	fprintf(f, "\n%-22s %7s %7s %6s %7s %7s %7s %7s %7s %7s\n", "rule", "merges", "taken",
		"subst", "unverif", "prevent", "forgone", "fired", "skipped", "shape");
	for (i = 0; i < tally_n_rules(t); i++) {
		const struct tally_counts *c = tally_counts(t, i);
		const char *name = tally_rule(t, i)->name;
		if (tally_not_evaluable(t, i)) {
			fprintf(f, "%-22s %7" PRIu64 "   not evaluable on this audit (%s)\n", name,
				c->merges, not_evaluable_why(tally_rule(t, i), c, &r->gate, why, sizeof(why)));
			continue;
		}
		fprintf(f, "%-22s %7" PRIu64 " %7" PRIu64 " %6" PRIu64 " %7" PRIu64 " %7" PRIu64
			" %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 "\n", name, c->merges,
			c->taken, c->substitutions, c->unverified, c->prevented, c->forgone, c->fired,
			c->skipped, c->shape_fallback);
	}
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
	/* the merge is the trial: the slots of one merge read the same buffer */
	fprintf(f, "\nmerges with a substitution, with %s Clopper-Pearson intervals (of the merges each rule "
		"evaluated):\n", REPLAY_CONFIDENCE_TEXT);
	for (i = 0; i < tally_n_rules(t); i++) {
		const struct tally_counts *c = tally_counts(t, i);
		char rt[128], pk[96];
		uint64_t n = tally_n_evaluated(c);
		if (tally_not_evaluable(t, i))
			continue;
		fprintf(f, "  %-20s %" PRIu64 " of %" PRIu64 ": %s; %s\n", tally_rule(t, i)->name,
			c->merges_subst, n,
			rate_describe(rt, sizeof(rt), c->merges_subst, n, REPLAY_CONFIDENCE, 100, "%"),
			rate_per_1000(pk, sizeof(pk), c->merges_subst, n, REPLAY_CONFIDENCE, "merges"));
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
		fprintf(f, "  ... and %" PRIu64 " positions of values not listed (a list of %d was "
			"full where they were seen; a value is listed only with its whole count)\n",
			g->values_dropped, TALLY_GARBAGE_VALUES);

	tally_fingerprint(t, &fp);
	fprintf(f, "\narm fingerprint: ");
	print_fingerprint_text(r->rules, &fp, f);
	if (fp.verdict == TALLY_NO_TAKEN)
		fprintf(f, " from this audit");
	if (r->n_rows)
		fprintf(f, " (over every process together: see each process below)");
	fputc('\n', f);
	if (fp.verdict != TALLY_NO_TAKEN)
		for (i = 0; i < tally_n_rules(t); i++) {
			const struct tally_counts *c = tally_counts(t, i);
			if (c->fp_mismatch)
				fprintf(f, "  %-20s contradicted on %" PRIu64 " of %" PRIu64
					" events (first at step %" PRId64 ")\n", tally_rule(t, i)->name,
					c->fp_mismatch, c->fp_evaluated, c->fp_first_mismatch_step);
		}
	print_proc_rows_text(r, f);
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
	jsonw_kuint(w, "merges_with_substitution", c->merges_subst);
	jsonw_key(w, "substitution_rate");
	rate_json(w, c->merges_subst, tally_n_evaluated(c), REPLAY_CONFIDENCE);
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

static void print_fingerprint_json(struct jsonw *w, const struct rule *rules,
				   const struct tally_fingerprint *fp)
{
	size_t i;

	jsonw_key(w, "fingerprint");
	jsonw_obj(w);
	jsonw_key(w, "consistent");
	jsonw_arr(w);
	for (i = 0; i < fp->n_consistent; i++)
		jsonw_str(w, rules[fp->consistent[i]].name);
	jsonw_arr_end(w);
	jsonw_key(w, "never_evaluated");
	jsonw_arr(w);
	for (i = 0; i < fp->n_unevaluated; i++)
		jsonw_str(w, rules[fp->unevaluated[i]].name);
	jsonw_arr_end(w);
	jsonw_kstr(w, "verdict", tally_verdict_name(fp->verdict));
	jsonw_kuint(w, "events_with_taken", fp->events_with_taken);
	jsonw_obj_end(w);
}

static void print_gate_json(struct jsonw *w, const struct replay_gate *g, uint64_t merges)
{
	jsonw_key(w, "gate");
	jsonw_obj(w);
	jsonw_kuint(w, "events", g->events);
	jsonw_kuint(w, "refused", g->refused);
	jsonw_kuint(w, "forced", g->forced);
	jsonw_kbool(w, "keep_never_ran", !merges && g->refused);
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
	uint64_t merges = tally_n_rules(t) ? tally_counts(t, 0)->merges : 0;
	size_t i, k;

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
	print_fingerprint_json(&w, r->rules, &fp);
	print_gate_json(&w, &r->gate, merges);
	jsonw_key(&w, "processes");
	jsonw_arr(&w);
	for (i = 0; i < r->n_rows; i++) {
		const struct replay_proc_row *row = &r->rows[i];
		jsonw_obj(&w);
		jsonw_kstr(&w, "file", r->files[row->file].path);
		if (row->has_pid)
			jsonw_kint(&w, "pid", row->pid);
		if (row->has_rank)
			jsonw_kint(&w, "rank", row->rank);
		if (row->has_dp)
			jsonw_kint(&w, "dp", row->dp);
		jsonw_key(&w, "rules");
		jsonw_obj(&w);
		for (k = 0; k < r->opts.n_rules; k++) {
			jsonw_key(&w, r->rules[k].name);
			print_counts_json(&w, &row->counts[k], !counts_not_evaluable(&row->counts[k]));
		}
		jsonw_obj_end(&w);
		jsonw_key(&w, "garbage");
		jsonw_obj(&w);
		jsonw_kuint(&w, "count", row->garbage);
		jsonw_kuint(&w, "float32_like", row->float32_like);
		jsonw_obj_end(&w);
		tally_fingerprint_of(row->counts, r->opts.n_rules, row->events_with_taken, &fp);
		print_fingerprint_json(&w, r->rules, &fp);
		print_gate_json(&w, &row->gate, r->opts.n_rules ? row->counts[0].merges : 0);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_kuint(&w, "processes_dropped", r->rows_dropped);
	jsonw_key(&w, "input");
	jsonw_obj(&w);
	jsonw_kuint(&w, "files", r->n_files);
	jsonw_kuint(&w, "lines", r->stats.lines);
	jsonw_kuint(&w, "events", r->stats.events);
	jsonw_kuint(&w, "other_events", r->stats.other_events);
	jsonw_kuint(&w, "ignored", r->stats.ignored);
	jsonw_kuint(&w, "capture_records", r->stats.capture_records);
	jsonw_kuint(&w, "capture_lost", r->stats.capture_lost);
	jsonw_kuint(&w, "capture_uncertain", r->stats.capture_uncertain);
	jsonw_kuint(&w, "uncertain_events", r->stats.uncertain_events);
	jsonw_kuint(&w, "partial", r->stats.partial);
	jsonw_kuint(&w, "invalid_utf8", r->stats.invalid_utf8);
	jsonw_kuint(&w, "bytes", r->stats.bytes);
	jsonw_kuint(&w, "log_audit_lines", r->stats.log_audit_lines);
	jsonw_kuint(&w, "other_lines", r->stats.other_lines);
	jsonw_kuint(&w, "bom", r->n_bom);
	jsonw_kuint(&w, "events_beyond_process_cap", r->procs_dropped);
	jsonw_key(&w, "unreadable");
	jsonw_arr(&w);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].unreadable)
			jsonw_str(&w, r->files[i].path);
	jsonw_arr_end(&w);
	jsonw_key(&w, "no_audit");
	jsonw_arr(&w);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].no_audit)
			jsonw_str(&w, r->files[i].path);
	jsonw_arr_end(&w);
	jsonw_key(&w, "truncated");
	jsonw_arr(&w);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].truncated) {
			jsonw_obj(&w);
			jsonw_kstr(&w, "file", r->files[i].path);
			jsonw_kuint(&w, "lines", r->files[i].stats.lines);
			jsonw_obj_end(&w);
		}
	jsonw_arr_end(&w);
	jsonw_key(&w, "duplicates");
	jsonw_arr(&w);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].dup) {
			jsonw_obj(&w);
			jsonw_kstr(&w, "file", r->files[i].path);
			jsonw_kstr(&w, "same_as", r->files[r->files[i].dup_of].path);
			jsonw_kstr(&w, "by", r->files[i].dup == REPLAY_DUP_INODE ? "inode" : "content");
			jsonw_obj_end(&w);
		}
	jsonw_arr_end(&w);
	jsonw_key(&w, "signals");
	jsonw_arr(&w);
	for (i = 0; i < r->n_ends; i++) {
		const char *name = signal_name(r->ends[i].signal);
		jsonw_obj(&w);
		jsonw_kstr(&w, "file", r->files[r->ends[i].file].path);
		jsonw_kint(&w, "pid", r->ends[i].pid);
		jsonw_kint(&w, "signal", r->ends[i].signal);
		if (name) {
			char sig[32];
			snprintf(sig, sizeof(sig), "SIG%s", name);
			jsonw_kstr(&w, "name", sig);
		}
		if (r->ends[i].by[0])
			jsonw_kstr(&w, "by", r->ends[i].by);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_kuint(&w, "signals_dropped", r->ends_dropped);
	jsonw_obj_end(&w);
	if (r->opts.explain)
		replay_print_explain_json(r, &w);
	jsonw_obj_end(&w);
}

