/*
 * driver_verdict.c - what the runs of a bench add up to (driver_priv.h):
 * each run's figures, failures, comparison with the reference, canary
 * verdicts and token anomalies added into its cell; the correctness, canary
 * and accuracy verdict of every cell.
 */
#include "bench/driver_priv.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bench/anomaly.h"
#include "base/rate.h"

/* The token anomalies of a run's outputs into its cell. */
void driver_tally_anomalies(struct driver_cell *dc, const struct load_run *run, long vocab)
{
	struct anomaly an;
	size_t i;

	for (i = 0; i < run->n; i++) {
		const struct load_result *r = &run->res[i];

		anomaly_of(r, vocab, &an);
		dc->an_outputs++;
		dc->an_with_ids += an.ids_seen;
		dc->an_past_vocab += an.ids_past_vocab > 0;
		dc->an_empty_tokens += an.empty_tokens > 0;
		dc->an_special += an.special_repeated > 0;
		dc->an_empty += an.empty_content;
		if (!dc->first_anomaly[0] && (an.ids_past_vocab || an.special_repeated))
			snprintf(dc->first_anomaly, sizeof(dc->first_anomaly), "%.80s: %s at output token %ld",
				 r->xid[0] ? r->xid : r->id,
				 an.ids_past_vocab ? "a token id past the vocabulary" : "a special token repeated",
				 an.ids_past_vocab ? an.first_past_vocab : 0L);
	}
}


void driver_tally(struct driver_cell *dc, const struct load_run *run, const struct stats_run *st,
		  const struct correct_report *corr, bool correctness)
{
	size_t i;

	dc->n_requests += st->n;
	dc->n_failed += st->n_failed;
	dc->stamped_kernel += run->n_stamp_kernel;
	dc->retried += run->n_retried;
	dc->stamped_loop += run->n_stamp_loop;
	for (i = 0; i < run->n; i++)
		if (run->res[i].t_sent > 0 && run->res[i].t_sent - run->res[i].t_launch > dc->send_delay_max)
			dc->send_delay_max = run->res[i].t_sent - run->res[i].t_launch;
	for (i = 0; i < LOAD_FAIL__COUNT; i++)
		dc->n_fail[i] += st->n_fail[i];
	for (i = 0; i < run->n && !dc->first_failure[0]; i++)
		if (run->res[i].fail)
			snprintf(dc->first_failure, sizeof(dc->first_failure), "%.60s: %.170s",
				 run->res[i].id[0] ? run->res[i].id : "(no id)", run->res[i].reason);
	if (!correctness)
		return;
	dc->corr_requests += corr->n;
	dc->corr_failing += corr->n_failing;
	dc->corr_diverged += corr->n_diverged;
	dc->corr_duplicate += corr->n_duplicate;
	dc->corr_wrong += corr->n_wrong;
	dc->corr_failed += corr->n_failed + corr->n_no_reference;
	for (i = 0; i < corr->n && !dc->first_divergence[0]; i++) {
		const struct correct_item *it = &corr->items[i];

		if (it->verdict == CORRECT_DIVERGED)
			snprintf(dc->first_divergence, sizeof(dc->first_divergence),
				 "%.60s prompt %zu diverged at token %zu%s: reference \"%.40s\", got \"%.40s\"",
				 run->res[i].id, it->prompt_index, it->at,
				 it->duplicate ? " (the token before it repeated)" : "", it->ref_excerpt,
				 it->got_excerpt);
		else if (it->verdict == CORRECT_WRONG)
			snprintf(dc->first_divergence, sizeof(dc->first_divergence),
				 "%.60s prompt %zu wrong: \"%.100s\" missing", run->res[i].id, it->prompt_index,
				 it->missing);
	}
}

void driver_tally_canary(struct driver_cell *dc, const struct canary_report *cr,
			 const struct load_run *run, const struct canary_set *can)
{
	size_t i;

	dc->can_requests += cr->n;
	dc->can_clean += cr->n_clean;
	dc->can_leaked += cr->n_leaked;
	dc->can_lost += cr->n_lost;
	dc->can_failed += cr->n_failed;
	dc->can_own_checked += cr->n_own_checked;
	dc->can_decoy += cr->n_decoy_outputs;
	dc->can_id_checked += cr->n_id_checked;
	dc->can_donor_finished += cr->n_donor_finished;
	for (i = 0; i < cr->n && !dc->first_leak[0]; i++) {
		const struct canary_item *it = &cr->items[i];

		if (it->verdict == CANARY_LEAKED)
			snprintf(dc->first_leak, sizeof(dc->first_leak),
				 "%.70s leaked: a piece of %s marker %zu (request %.70s, %s) at output token %zu (%s)",
				 run->res[i].xid[0] ? run->res[i].xid : run->res[i].id,
				 canary_kind_name(it->leak.kind), it->leak.donor,
				 it->leak.donor_id[0] ? it->leak.donor_id : "?",
				 it->leak.donor_aborted ? "aborted before" :
				 it->leak.donor_finished ? "finished before" : "still streaming",
				 it->leak.at, it->leak.by_id ? "token id" : it->leak.group);
		else if (it->verdict == CANARY_LOST)
			snprintf(dc->first_leak, sizeof(dc->first_leak),
				 "%.70s lost its own marker \"%s\" (%zu of %d groups in %zu tokens)",
				 run->res[i].xid[0] ? run->res[i].xid : run->res[i].id,
				 canary_text(can, CANARY_SENT, it->marker), it->own_groups, CANARY_GROUPS,
				 run->res[i].n_tokens);
	}
}

/*
 * The canary verdict of a cell: FAIL with a lost marker, or a leak (when
 * decoys were found too, only when leaked outputs outnumber decoy outputs by
 * Fisher's one-sided test at 1 - C: else chance could have made them);
 * INCONCLUSIVE with decoys found, or when 0 leaked of n cannot rule out the
 * baseline; PASS otherwise.
 */
void driver_canary_verdict(const struct driver_report *rep, struct driver_cell *dc)
{
	dc->can_n_to_bound = 0;
	dc->can_fisher_p = 1;
	if (dc->can_decoy)
		dc->can_fisher_p = rate_fisher_greater(dc->can_leaked, dc->can_requests, dc->can_decoy,
							dc->can_requests);
	if (dc->can_lost || dc->an_past_vocab || dc->an_special ||
	    (dc->can_leaked && (!dc->can_decoy || dc->can_fisher_p < 1 - rep->confidence))) {
		dc->can_verdict = DRIVER_FAIL;
		return;
	}
	dc->can_verdict = dc->can_decoy || dc->can_leaked ? DRIVER_INCONCLUSIVE : DRIVER_PASS;
	if (dc->can_verdict == DRIVER_PASS && rep->baseline > 0) {
		uint64_t n = rate_n_to_bound(rep->baseline, 1 - (1 - rep->confidence) / 2);

		if (dc->can_requests < n) {
			dc->can_verdict = DRIVER_INCONCLUSIVE;
			dc->can_n_to_bound = n;
		}
	}
}


const char *driver_verdict_name(enum driver_verdict v)
{
	switch (v) {
	case DRIVER_PASS: return "PASS";
	case DRIVER_FAIL: return "FAIL";
	default: return "INCONCLUSIVE";
	}
}

/* The correctness verdict of a cell (driver.h), with the baseline rule of `ttaudit plan`. */
void driver_verdict_of(const struct driver_report *rep, struct driver_cell *dc)
{
	const struct driver_arm_info *ai = &rep->arms[dc->arm_index];

	dc->corr_n_to_bound = 0;
	if (dc->corr_failing || ai->ref_wrong || ai->ref_failed) {
		dc->corr_verdict = DRIVER_FAIL;
		return;
	}
	dc->corr_verdict = DRIVER_PASS;
	if (rep->baseline > 0) {
		uint64_t n = rate_n_to_bound(rep->baseline, 1 - (1 - rep->confidence) / 2);

		if (dc->corr_requests < n) {
			dc->corr_verdict = DRIVER_INCONCLUSIVE;
			dc->corr_n_to_bound = n;
		}
	}
}

/*
 * The accuracy verdict of every treatment cell against the control's cell
 * at its level (driver.h): FAIL when the treatment is less accurate and
 * Fisher's exact test (two-sided) separates the two at 1 - C, or when its
 * outputs hold ids past the vocabulary or a special token repeated; PASS
 * otherwise. Without a control there is no test: NAN, the verdict on the
 * anomalies alone.
 */
void driver_accuracy_verdicts(struct driver_report *rep, size_t n_levels)
{
	size_t i;

	rep->acc_verdict = DRIVER_PASS;
	for (i = 0; i < rep->n_cells; i++) {
		struct driver_cell *dc = &rep->cells[i], *cc;
		double at, ac;

		dc->acc_fisher_p = NAN;
		dc->acc_verdict = DRIVER_PASS;
		if (dc->an_past_vocab || dc->an_special)
			dc->acc_verdict = DRIVER_FAIL;
		if (rep->control != SIZE_MAX && dc->arm_index != rep->control) {
			cc = &rep->cells[rep->control * n_levels + i % n_levels];
			dc->acc_fisher_p = rate_fisher(dc->acc_right, dc->acc_n, cc->acc_right, cc->acc_n);
			at = dc->acc_n ? (double)dc->acc_right / (double)dc->acc_n : 0;
			ac = cc->acc_n ? (double)cc->acc_right / (double)cc->acc_n : 0;
			if (at < ac && dc->acc_fisher_p < 1 - rep->confidence)
				dc->acc_verdict = DRIVER_FAIL;
		}
		if (!dc->acc_n && dc->acc_verdict == DRIVER_PASS)
			dc->acc_verdict = DRIVER_INCONCLUSIVE;   /* nothing graded */
		if (dc->arm_index == rep->control)
			continue;
		if (dc->acc_verdict == DRIVER_FAIL ||
		    (dc->acc_verdict == DRIVER_INCONCLUSIVE && rep->acc_verdict == DRIVER_PASS))
			rep->acc_verdict = dc->acc_verdict;
	}
}

