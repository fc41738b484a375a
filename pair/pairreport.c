/*
 * pairreport.c - pair's report (pairreport.h): the text table with each
 * run's failures and substitutions, and its JSON twin. It reads a built
 * pair only through pair.h's accessors.
 */
#include "pair/pairreport.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "base/rate.h"

/* --- reports ---------------------------------------------------------------- */

#define PAIRREPORT_SHOWN 20   /* failures and substitutions listed per run in text */

void pairreport_text(const struct pair *p, FILE *f)
{
	double conf = pair_confidence(p);
	char buf[128];
	size_t i, j, k;

	fprintf(f, "%zu run file(s), %zu audit file(s): %" PRIu64 " audit lines, %" PRIu64
		" malformed lines; %" PRIu64 " merge events outside every run\n",
		pair_n_run_files(p), pair_n_audit_files(p), pair_audit_lines(p), pair_malformed(p), pair_merges_outside(p));
	fprintf(f, "rates: %s two-sided Clopper-Pearson intervals", rate_level(buf, sizeof(buf), conf));
	if (pair_baseline(p) > 0)
		fprintf(f, "; baseline %g%% failing per request (a clean run must rule it out)",
			100 * pair_baseline(p));
	fputc('\n', f);
	for (i = 0; i < pair_n_runs(p); i++) {
		const struct pair_run *r = pair_run_at(p, i);

		fprintf(f, "\nrun %s (phase %s, arm %s, %s)\n", r->run_id, r->phase[0] ? r->phase : "?",
			r->arm[0] ? r->arm : "none", r->arm_state);
		fprintf(f, "  requests %zu (%zu ok)", r->n_requests, r->n_ok);
		if (r->makespan >= 0)
			fprintf(f, "; makespan %.3f s", r->makespan);
		if (r->ttft_p50 >= 0)
			fprintf(f, ", ttft p50 %.4f s", r->ttft_p50);
		if (r->out_tok_s >= 0)
			fprintf(f, ", %.1f tok/s", r->out_tok_s);
		fputc('\n', f);
		if (!r->merges) {
			fprintf(f, "  audit: no merge event paired with this run\n");
		} else {
			fprintf(f, "  audit: %" PRIu64 " merges (%" PRIu64 " by request id, %" PRIu64
				" by time window)", r->merges, r->by_id, r->by_time);
			if (r->n_pids) {
				fprintf(f, ", pid");
				for (k = 0; k < r->n_pids && k < PAIR_MAX_PIDS; k++)
					fprintf(f, " %" PRId64, r->pids[k]);
				if (r->n_pids > 1)
					fprintf(f, " (%zu processes wrote audit lines in this window)", r->n_pids);
			}
			fputc('\n', f);
			fprintf(f, "  arm verdict: %s", r->arm_verdict);
			if (r->fp.n_consistent) {
				fprintf(f, " (fingerprint %s, consistent with:", tally_verdict_name(r->fp.verdict));
				for (k = 0; k < r->fp.n_consistent; k++)
					fprintf(f, " %s", tally_rule(r->tally, r->fp.consistent[k])->name);
				fputc(')', f);
			}
			fputc('\n', f);
			fprintf(f, "  substitutions made: %" PRIu64 " of %" PRIu64 " taken (request %" PRIu64
				" / stamp %" PRIu64 " / lifetime %" PRIu64 "), %" PRIu64 " unverified, from %s\n",
				r->subst, r->taken, r->subst_by[EVIDENCE_REQUEST], r->subst_by[EVIDENCE_STAMP],
				r->subst_by[EVIDENCE_LIFETIME], r->unverified,
				r->actual_from_taken ? "the recorded decisions" :
				r->arm_rule != SIZE_MAX ? "the declared arm's rule" : "nothing (no decisions, no arm)");
			fprintf(f, "  merges with a substitution: %" PRIu64 " of %" PRIu64 ": %s", r->merges_subst,
				r->merges, rate_describe(buf, sizeof(buf), r->merges_subst, r->merges, conf, 100, "%"));
			fprintf(f, "; %s\n", rate_per_1000(buf, sizeof(buf), r->merges_subst, r->merges, conf,
							    "merges"));
			if (r->arm_rule != SIZE_MAX) {
				const struct tally_counts *c = tally_counts(r->tally, r->arm_rule);

				fprintf(f, "  guard %s: fired %" PRIu64 ", prevented %" PRIu64 ", forgone %"
					PRIu64 ", skipped %" PRIu64 "\n", tally_rule(r->tally, r->arm_rule)->name,
					c->fired, c->prevented, c->forgone, c->skipped);
			}
		}
		if (r->has_correctness) {
			fprintf(f, "  correctness: %zu failing of %zu requests: %s", r->n_failing, r->n_correct,
				rate_describe(buf, sizeof(buf), r->n_failing, r->n_correct, conf, 100, "%"));
			if (r->n_failing && pair_baseline(p) > 0)
				fprintf(f, "; %s", rate_against(buf, sizeof(buf), r->n_failing, r->n_correct, conf,
								pair_baseline(p)));
			if (r->n_failing)
				fprintf(f, "; %zu explained, %zu possible, %zu unexplained", r->n_explained,
					r->n_possible, r->n_unexplained + r->n_leak_unexplained + r->n_no_foreign);
			fputc('\n', f);
			/* the seeds' question: how much of the wrong-token rate the merge explains */
			fprintf(f, "  wrong tokens: %zu of %zu requests: %s\n", r->n_wrong, r->n_correct,
				rate_describe(buf, sizeof(buf), r->n_wrong, r->n_correct, conf, 100, "%"));
			if (r->n_wrong)
				fprintf(f, "  explained by the merge: %zu of %zu: %s; ", r->n_explained, r->n_wrong,
					rate_describe(buf, sizeof(buf), r->n_explained, r->n_wrong, conf, 100, "%"));
			else
				fprintf(f, "  explained by the merge: nothing to explain; ");
			fprintf(f, "%s of all requests\n",
				rate_describe(buf, sizeof(buf), r->n_explained, r->n_correct, conf, 100, "%"));
			if (r->n_leak_unexplained || r->n_no_foreign)
				fprintf(f, "  not the merge: %zu leak(s) the audit does not explain, %zu divergence(s) "
					"without a foreign token (likely numerics)\n", r->n_leak_unexplained,
					r->n_no_foreign);
		}
		fprintf(f, "  verdict: %s (%s)\n", pair_verdict_name(r->verdict), r->verdict_why);
		for (j = 0; j < r->n_failures && j < PAIRREPORT_SHOWN; j++) {
			const struct pair_failure *x = &r->failures[j];

			fprintf(f, "    %s (prompt %zu): %s", x->req[0] ? x->req : "?", x->prompt_index, x->verdict);
			if (x->at >= 0)
				fprintf(f, " at token %ld", x->at);
			fprintf(f, ": %s\n", x->why);
		}
		if (r->n_failures > PAIRREPORT_SHOWN)
			fprintf(f, "    ... %zu more\n", r->n_failures - PAIRREPORT_SHOWN);
		if (r->n_substs) {
			fprintf(f, "  substitutions (%zu with correct output):\n", r->n_subst_correct);
			for (j = 0; j < r->n_substs && j < PAIRREPORT_SHOWN; j++) {
				const struct pair_subst *s = &r->substs[j];

				fprintf(f, "    step %" PRId64 " slot %u pos %" PRId64 " -> %s token %" PRId64
					" (buffer of %s, %s evidence): %s\n", s->step, s->slot, s->pos,
					s->req[0] ? s->req : "?", s->token, s->buf_req[0] ? s->buf_req : "?",
					evidence_name(s->evidence), s->outcome);
			}
			if (r->n_substs > PAIRREPORT_SHOWN)
				fprintf(f, "    ... %zu more\n", r->n_substs - PAIRREPORT_SHOWN);
		}
	}
}

void pairreport_run_json(const struct pair *p, const struct pair_run *r, struct jsonw *w)
{
	size_t i;

	jsonw_obj(w);
	jsonw_kstr(w, "run_id", r->run_id);
	jsonw_kstr(w, "file", pair_run_file(p, r->file));
	jsonw_kstr(w, "phase", r->phase);
	jsonw_kstr(w, "arm", r->arm[0] ? r->arm : NULL);
	jsonw_kstr(w, "arm_state", r->arm_state);
	jsonw_kuint(w, "arm_index", r->arm_index);
	jsonw_kuint(w, "repeat", r->repeat);
	jsonw_kuint(w, "requests", r->n_requests);
	jsonw_kuint(w, "ok", r->n_ok);
	jsonw_kdouble(w, "makespan_s", r->makespan >= 0 ? r->makespan : NAN);
	jsonw_kdouble(w, "ttft_p50_s", r->ttft_p50 >= 0 ? r->ttft_p50 : NAN);
	jsonw_kdouble(w, "itl_p50_s", r->itl_p50 >= 0 ? r->itl_p50 : NAN);
	jsonw_kdouble(w, "output_tok_s", r->out_tok_s >= 0 ? r->out_tok_s : NAN);
	jsonw_kuint(w, "merges", r->merges);
	jsonw_kuint(w, "merges_by_id", r->by_id);
	jsonw_kuint(w, "merges_by_time", r->by_time);
	jsonw_key(w, "pids");
	jsonw_arr(w);
	for (i = 0; i < r->n_pids && i < PAIR_MAX_PIDS; i++)
		jsonw_int(w, r->pids[i]);
	jsonw_arr_end(w);
	jsonw_kstr(w, "arm_verdict", r->arm_verdict);
	jsonw_key(w, "fingerprint");
	jsonw_obj(w);
	jsonw_kstr(w, "verdict", r->tally ? tally_verdict_name(r->fp.verdict) : NULL);
	jsonw_key(w, "consistent");
	jsonw_arr(w);
	for (i = 0; r->tally && i < r->fp.n_consistent; i++)
		jsonw_str(w, tally_rule(r->tally, r->fp.consistent[i])->name);
	jsonw_arr_end(w);
	jsonw_obj_end(w);
	jsonw_kstr(w, "decisions_from", r->actual_from_taken ? "taken" :
		   r->arm_rule != SIZE_MAX ? "arm-rule" : "none");
	jsonw_kuint(w, "taken", r->taken);
	jsonw_kuint(w, "substitutions", r->subst);
	jsonw_key(w, "substitutions_by_evidence");
	jsonw_obj(w);
	for (i = 1; i < EVIDENCE__COUNT; i++)
		jsonw_kuint(w, evidence_name((enum evidence)i), r->subst_by[i]);
	jsonw_obj_end(w);
	jsonw_kuint(w, "unverified", r->unverified);
	if (r->tally && r->arm_rule != SIZE_MAX) {
		const struct tally_counts *c = tally_counts(r->tally, r->arm_rule);

		jsonw_key(w, "guard");
		jsonw_obj(w);
		jsonw_kstr(w, "rule", tally_rule(r->tally, r->arm_rule)->name);
		jsonw_kuint(w, "fired", c->fired);
		jsonw_kuint(w, "prevented", c->prevented);
		jsonw_kuint(w, "forgone", c->forgone);
		jsonw_kuint(w, "skipped", c->skipped);
		jsonw_obj_end(w);
	} else {
		jsonw_key(w, "guard");
		jsonw_null(w);
	}
	jsonw_key(w, "rules");
	jsonw_obj(w);
	for (i = 0; r->tally && i < tally_n_rules(r->tally); i++) {
		const struct tally_counts *c = tally_counts(r->tally, i);

		jsonw_key(w, tally_rule(r->tally, i)->name);
		jsonw_obj(w);
		jsonw_kuint(w, "taken", c->taken);
		jsonw_kuint(w, "substitutions", c->substitutions);
		jsonw_kuint(w, "prevented", c->prevented);
		jsonw_kuint(w, "forgone", c->forgone);
		jsonw_kuint(w, "fired", c->fired);
		jsonw_kuint(w, "skipped", c->skipped);
		jsonw_obj_end(w);
	}
	jsonw_obj_end(w);
	jsonw_kuint(w, "merges_with_substitution", r->merges_subst);
	jsonw_key(w, "substitution_rate");
	rate_json(w, r->merges_subst, r->merges, pair_confidence(p));
	jsonw_kstr(w, "verdict", pair_verdict_name(r->verdict));
	jsonw_kstr(w, "verdict_why", r->verdict_why);
	jsonw_key(w, "correctness");
	if (r->has_correctness) {
		jsonw_obj(w);
		jsonw_kuint(w, "requests", r->n_correct);
		jsonw_kuint(w, "failing", r->n_failing);
		jsonw_key(w, "failing_rate");
		rate_json(w, r->n_failing, r->n_correct, pair_confidence(p));
		if (r->n_to_bound)
			jsonw_kuint(w, "requests_to_rule_out_baseline", r->n_to_bound);
		jsonw_kuint(w, "explained", r->n_explained);
		jsonw_kuint(w, "possible", r->n_possible);
		jsonw_kuint(w, "unexplained", r->n_unexplained);
		jsonw_kuint(w, "leak_unexplained", r->n_leak_unexplained);
		jsonw_kuint(w, "no_foreign_token", r->n_no_foreign);
		jsonw_key(w, "wrong_tokens");
		jsonw_obj(w);
		jsonw_kuint(w, "requests", r->n_wrong);
		jsonw_key(w, "rate");
		rate_json(w, r->n_wrong, r->n_correct, pair_confidence(p));
		jsonw_kuint(w, "explained", r->n_explained);
		jsonw_key(w, "explained_share");
		rate_json(w, r->n_explained, r->n_wrong, pair_confidence(p));
		jsonw_key(w, "explained_rate");
		rate_json(w, r->n_explained, r->n_correct, pair_confidence(p));
		jsonw_obj_end(w);
		jsonw_obj_end(w);
	} else {
		jsonw_null(w);
	}
	jsonw_key(w, "failures");
	jsonw_arr(w);
	for (i = 0; i < r->n_failures; i++) {
		const struct pair_failure *x = &r->failures[i];

		jsonw_obj(w);
		jsonw_kstr(w, "id", x->req[0] ? x->req : NULL);
		jsonw_kuint(w, "index", x->index);
		jsonw_kuint(w, "prompt_index", x->prompt_index);
		jsonw_kstr(w, "verdict", x->verdict);
		if (x->at >= 0)
			jsonw_kint(w, "diverged_at", x->at);
		else {
			jsonw_key(w, "diverged_at");
			jsonw_null(w);
		}
		jsonw_kstr(w, "match", pair_match_name(x->match));
		if (x->step >= 0)
			jsonw_kint(w, "step", x->step);
		else {
			jsonw_key(w, "step");
			jsonw_null(w);
		}
		jsonw_kbool(w, "in_reference", x->in_reference);
		jsonw_kuint(w, "substitutions", x->n_subst);
		jsonw_kstr(w, "donor", x->donor[0] ? x->donor : NULL);
		if (x->canary_donor[0]) {
			jsonw_kstr(w, "canary_donor", x->canary_donor);
			jsonw_kbool(w, "donor_agrees", x->donor_agrees);
		}
		jsonw_kstr(w, "why", x->why);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_kuint(w, "substitutions_with_correct_output", r->n_subst_correct);
	jsonw_kuint(w, "substitutions_dropped", r->subst - r->n_substs);
	jsonw_key(w, "substitution_list");
	jsonw_arr(w);
	for (i = 0; i < r->n_substs; i++) {
		const struct pair_subst *s = &r->substs[i];

		jsonw_obj(w);
		jsonw_kint(w, "step", s->step);
		jsonw_kuint(w, "slot", s->slot);
		jsonw_kint(w, "pos", s->pos);
		if (s->token >= 0)
			jsonw_kint(w, "token", s->token);
		else {
			jsonw_key(w, "token");
			jsonw_null(w);
		}
		jsonw_kstr(w, "req", s->req[0] ? s->req : NULL);
		jsonw_kstr(w, "buf_req", s->buf_req[0] ? s->buf_req : NULL);
		jsonw_kstr(w, "evidence", evidence_name(s->evidence));
		jsonw_kstr(w, "file", pair_audit_file(p, s->file));
		jsonw_kint(w, "line", s->line);
		jsonw_kstr(w, "outcome", s->outcome);
		jsonw_obj_end(w);
	}
	jsonw_arr_end(w);
	jsonw_obj_end(w);
}

void pairreport_json(const struct pair *p, FILE *f)
{
	struct jsonw w;
	size_t i;

	jsonw_init(&w, f);
	jsonw_obj(&w);
	jsonw_kuint(&w, "audit_lines", pair_audit_lines(p));
	jsonw_kuint(&w, "malformed", pair_malformed(p));
	jsonw_kuint(&w, "merges_outside", pair_merges_outside(p));
	jsonw_kdouble(&w, "confidence", pair_confidence(p));
	jsonw_kdouble(&w, "baseline", pair_baseline(p) > 0 ? pair_baseline(p) : NAN);
	jsonw_key(&w, "runs");
	jsonw_arr(&w);
	for (i = 0; i < pair_n_runs(p); i++)
		pairreport_run_json(p, pair_run_at(p, i), &w);
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	fputc('\n', f);
}
