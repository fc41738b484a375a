/*
 * benchreport.c - the report of a bench run (benchreport.h): per arm its
 * gates, per cell the figures, spread, failures and correctness verdict,
 * as JSON or a text table.
 */
#include "bench/benchreport.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonw.h"
#include "base/rate.h"
#include "probe/ready.h"
#include "bench/record.h"

static const char *benchreport_level_name(enum load_arrival a)
{
	return a == LOAD_CLOSED ? "concurrency" : a == LOAD_BATCH ? "batch" : "rate";
}

/*
 * An open-loop client is behind its schedule when, at p99, it wrote requests
 * later than they were due by more than a quarter of the mean gap between
 * arrivals, and by at least 10 ms (a new connection's connect and write take
 * a fraction of that even on a loaded host): the offered load was then not
 * the one asked for, and latency timed from the write leaves that wait out.
 */
static bool benchreport_behind(const struct stats_run *m, double rate)
{
	double limit = rate > 0 ? 0.25 / rate : 0;

	if (limit < 10e-3)
		limit = 10e-3;
	return m->open_loop && m->sched_lag.n && m->sched_lag.p99 > limit;
}

/*
 * A member holding a value of bench/record's (a rate, a run's statistics),
 * written by that format's owner; NULL (out of memory) leaves the member out.
 */
static void benchreport_record_member(struct jsonw *w, const char *key, struct cJSON *v)
{
	char *s = record_print(v);

	if (s) {
		jsonw_key(w, key);
		jsonw_raw(w, s);
	}
	cJSON_free(s);
	cJSON_Delete(v);
}

/* A number, or null when it is not known (a baseline of 0, a missing index). */
static void benchreport_num_or_null(struct jsonw *w, const char *key, bool known, double v)
{
	jsonw_key(w, key);
	if (known)
		jsonw_double(w, v);
	else
		jsonw_null(w);
}

char *benchreport_json(const struct driver_report *rep)
{
	struct jsonw w;
	struct jsonw_mem mem;
	char seed[24];
	size_t i, k;

	if (jsonw_mem_begin(&w, &mem))
		return NULL;
	jsonw_obj(&w);
	jsonw_kstr(&w, "kind", "summary");
	jsonw_kstr(&w, "tool", "ttaudit");
	jsonw_kstr(&w, "tool_version", TTAUDIT_VERSION);
	jsonw_kbool(&w, "gate_failed", rep->gate_failed);
	if (rep->gate_failed)
		jsonw_kstr(&w, "gate_message", rep->gate_message);
	jsonw_kstr(&w, "arrival", record_arrival_name(rep->arrival));
	jsonw_kstr(&w, "cache_claim", rep->churn ? "shared-prefix" :
		   rep->warm || rep->correctness ? "warm" : "cold");
	jsonw_kstr(&w, "suite_hash", rep->suite_hash);
	jsonw_kstr(&w, "suite_source", rep->suite_source);
	jsonw_kstr(&w, "sizing", rep->sizing);
	jsonw_kdouble(&w, "suite_prompts", (double)rep->suite_n);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)rep->corpus_seed);
	jsonw_kstr(&w, "corpus_seed", seed);
	jsonw_kdouble(&w, "requests", (double)rep->total_requests);
	jsonw_kdouble(&w, "failed", (double)rep->total_failed);
	jsonw_key(&w, "failures");
	jsonw_obj(&w);
	for (k = 1; k < LOAD_FAIL__COUNT; k++)
		if (rep->n_fail[k])
			jsonw_kdouble(&w, load_fail_name((enum load_fail)k), (double)rep->n_fail[k]);
	jsonw_obj_end(&w);
	if (rep->margins)
		benchreport_record_member(&w, "margins", record_margins_json(&rep->mrep));
	if (rep->correctness) {
		jsonw_key(&w, "correctness");
		jsonw_obj(&w);
		jsonw_kdouble(&w, "failing", (double)rep->corr_failing);
		jsonw_kdouble(&w, "requests", (double)rep->corr_requests);
		jsonw_kdouble(&w, "reference_wrong", (double)rep->ref_wrong);
		jsonw_kdouble(&w, "reference_failed", (double)rep->ref_failed);
		/* the worst cell's; each cell has its own rate (arms are not pooled) */
		jsonw_kstr(&w, "verdict", driver_verdict_name(rep->corr_verdict));
		jsonw_kdouble(&w, "confidence", rep->confidence);
		benchreport_num_or_null(&w, "baseline", rep->baseline > 0, rep->baseline);
		jsonw_obj_end(&w);
	}
	if (rep->canary) {
		jsonw_key(&w, "canary");
		jsonw_obj(&w);
		jsonw_kdouble(&w, "requests", (double)rep->can_requests);
		jsonw_kdouble(&w, "leaked", (double)rep->can_leaked);
		jsonw_kdouble(&w, "lost", (double)rep->can_lost);
		jsonw_kdouble(&w, "decoy_outputs", (double)rep->can_decoy);
		jsonw_kstr(&w, "verdict", driver_verdict_name(rep->can_verdict));
		jsonw_kdouble(&w, "confidence", rep->confidence);
		benchreport_num_or_null(&w, "baseline", rep->baseline > 0, rep->baseline);
		jsonw_obj_end(&w);
	}
	if (rep->accuracy) {
		jsonw_key(&w, "accuracy");
		jsonw_obj(&w);
		jsonw_kstr(&w, "verdict", driver_verdict_name(rep->acc_verdict));
		benchreport_num_or_null(&w, "control", rep->control != SIZE_MAX, (double)rep->control);
		jsonw_kdouble(&w, "confidence", rep->confidence);
		jsonw_obj_end(&w);
	}
	jsonw_key(&w, "workload");
	jsonw_obj(&w);
	jsonw_kstr(&w, "kind", rep->churn ? "churn" : "plain");
	if (rep->churn) {
		/* cJSON's order, kept: the transitions object was made first, filled last */
		jsonw_key(&w, "transitions");
		jsonw_obj(&w);
		for (k = 0; k < CHURN_T__COUNT; k++)
			jsonw_kdouble(&w, churn_transition_name((unsigned)k), (double)rep->transitions[k]);
		jsonw_obj_end(&w);
		benchreport_num_or_null(&w, "max_num_seqs", rep->max_num_seqs != 0,
					(double)rep->max_num_seqs);
	}
	jsonw_obj_end(&w);
	jsonw_key(&w, "token_times");
	jsonw_obj(&w);
	jsonw_kdouble(&w, "stamped_kernel", (double)rep->stamped_kernel);
	jsonw_kdouble(&w, "retried_dead_connection", (double)rep->retried);
	jsonw_kdouble(&w, "stamped_loop", (double)rep->stamped_loop);
	jsonw_kdouble(&w, "send_delay_max_s", rep->send_delay_max);
	jsonw_obj_end(&w);
	jsonw_kbool(&w, "unstable", rep->any_unstable);
	jsonw_kbool(&w, "cold_claim_invalid", rep->any_cold_invalid);
	jsonw_key(&w, "arms");
	jsonw_arr(&w);
	for (i = 0; i < rep->n_arms; i++) {
		jsonw_obj(&w);
		jsonw_kstr(&w, "url", rep->arms[i].url);
		jsonw_kstr(&w, "arm", rep->arms[i].arm[0] ? rep->arms[i].arm : NULL);
		jsonw_kstr(&w, "arm_state", rep->arms[i].arm_state ? rep->arms[i].arm_state : "none");
		jsonw_kstr(&w, "model", rep->arms[i].model);
		jsonw_kstr(&w, "server_config_hash",
			   rep->arms[i].config_hash[0] ? rep->arms[i].config_hash : NULL);
		if (rep->canary) {
			const struct canary_calib *cal = &rep->arms[i].cal;

			jsonw_key(&w, "canary_calibration");
			jsonw_obj(&w);
			jsonw_kdouble(&w, "requests", (double)cal->n);
			jsonw_kdouble(&w, "repeated", (double)cal->n_repeated);
			jsonw_kbool(&w, "own_marker_evaluable", cal->repeats);
			jsonw_kdouble(&w, "tokens_for_marker", (double)cal->tokens_for_marker);
			jsonw_kbool(&w, "ids_returned", cal->ids_returned);
			jsonw_kbool(&w, "ids_searched", rep->arms[i].ids_searched);
			if (rep->arms[i].ids_note[0])
				jsonw_kstr(&w, "ids_note", rep->arms[i].ids_note);
			jsonw_obj_end(&w);
		}
		if (rep->correctness) {
			jsonw_kdouble(&w, "reference_requests", (double)rep->arms[i].ref_requests);
			jsonw_kdouble(&w, "reference_wrong", (double)rep->arms[i].ref_wrong);
			jsonw_kdouble(&w, "reference_failed", (double)rep->arms[i].ref_failed);
		}
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "cells");
	jsonw_arr(&w);
	for (i = 0; i < rep->n_cells; i++) {
		const struct driver_cell *dc = &rep->cells[i];

		jsonw_obj(&w);
		jsonw_kdouble(&w, "arm_index", (double)dc->arm_index);
		jsonw_kdouble(&w, benchreport_level_name(rep->arrival), dc->level);
		jsonw_kdouble(&w, "repeats", dc->n_repeats);
		jsonw_kdouble(&w, "median_repeat", (double)dc->median_repeat);
		jsonw_kdouble(&w, "spread", dc->spread);
		jsonw_kbool(&w, "unstable", dc->unstable);
		jsonw_key(&w, "output_tok_s_by_repeat");
		jsonw_arr(&w);
		for (k = 0; k < (size_t)dc->n_repeats; k++)
			jsonw_double(&w, dc->tok_s[k]);
		jsonw_arr_end(&w);
		jsonw_kdouble(&w, "requests", (double)dc->n_requests);
		jsonw_kdouble(&w, "failed", (double)dc->n_failed);
		if (dc->first_failure[0])
			jsonw_kstr(&w, "first_failure", dc->first_failure);
		if (!rep->warm && !rep->correctness && !rep->churn) {
			jsonw_kdouble(&w, "prefix_cache_hits", dc->prefix_hits);
			jsonw_kdouble(&w, "cold_claim_invalid_runs", (double)dc->n_cold_invalid);
			jsonw_kdouble(&w, "cold_claim_unchecked_runs", (double)dc->n_cold_unchecked);
		}
		if (rep->correctness) {
			jsonw_key(&w, "correctness");
			jsonw_obj(&w);
			jsonw_kdouble(&w, "requests", (double)dc->corr_requests);
			jsonw_kdouble(&w, "failing", (double)dc->corr_failing);
			jsonw_kdouble(&w, "diverged", (double)dc->corr_diverged);
			jsonw_kdouble(&w, "duplicate_token", (double)dc->corr_duplicate);
			jsonw_kdouble(&w, "wrong", (double)dc->corr_wrong);
			jsonw_kdouble(&w, "failed", (double)dc->corr_failed);
			benchreport_record_member(&w, "failing_rate",
						  record_rate_json(dc->corr_failing, dc->corr_requests,
								   rep->confidence));
			jsonw_kstr(&w, "verdict", driver_verdict_name(dc->corr_verdict));
			if (dc->corr_n_to_bound)
				jsonw_kdouble(&w, "requests_to_rule_out_baseline", (double)dc->corr_n_to_bound);
			if (dc->first_divergence[0])
				jsonw_kstr(&w, "first", dc->first_divergence);
			jsonw_obj_end(&w);
		}
		if (rep->canary) {
			jsonw_key(&w, "canary");
			jsonw_obj(&w);
			jsonw_kdouble(&w, "requests", (double)dc->can_requests);
			jsonw_kdouble(&w, "clean", (double)dc->can_clean);
			jsonw_kdouble(&w, "leaked", (double)dc->can_leaked);
			jsonw_kdouble(&w, "lost", (double)dc->can_lost);
			jsonw_kdouble(&w, "failed", (double)dc->can_failed);
			jsonw_kdouble(&w, "own_checked", (double)dc->can_own_checked);
			jsonw_kdouble(&w, "decoy_outputs", (double)dc->can_decoy);
			jsonw_kdouble(&w, "ids_checked", (double)dc->can_id_checked);
			jsonw_kdouble(&w, "donor_finished", (double)dc->can_donor_finished);
			benchreport_record_member(&w, "leak_rate", record_rate_json(dc->can_leaked,
						  dc->can_requests, rep->confidence));
			benchreport_record_member(&w, "lost_rate", record_rate_json(dc->can_lost,
						  dc->can_own_checked, rep->confidence));
			benchreport_record_member(&w, "decoy_rate", record_rate_json(dc->can_decoy,
						  dc->can_requests, rep->confidence));
			if (dc->can_decoy)
				jsonw_kdouble(&w, "leaks_above_decoys_p", dc->can_fisher_p);
			jsonw_kstr(&w, "verdict", driver_verdict_name(dc->can_verdict));
			if (dc->can_n_to_bound)
				jsonw_kdouble(&w, "requests_to_rule_out_baseline", (double)dc->can_n_to_bound);
			if (dc->first_leak[0])
				jsonw_kstr(&w, "first", dc->first_leak);
			jsonw_key(&w, "anomalies");
			jsonw_obj(&w);
			jsonw_kdouble(&w, "outputs", (double)dc->an_outputs);
			jsonw_kdouble(&w, "with_ids", (double)dc->an_with_ids);
			benchreport_num_or_null(&w, "ids_past_vocab", rep->vocab_size > 0 && dc->an_with_ids,
						(double)dc->an_past_vocab);
			jsonw_kdouble(&w, "empty_tokens", (double)dc->an_empty_tokens);
			jsonw_kdouble(&w, "special_repeated", (double)dc->an_special);
			jsonw_kdouble(&w, "empty_content", (double)dc->an_empty);
			if (dc->first_anomaly[0])
				jsonw_kstr(&w, "first", dc->first_anomaly);
			jsonw_obj_end(&w);
			jsonw_obj_end(&w);
		}
		if (rep->accuracy) {
			jsonw_key(&w, "accuracy");
			jsonw_obj(&w);
			jsonw_kbool(&w, "control", dc->arm_index == rep->control);
			jsonw_kdouble(&w, "graded", (double)dc->acc_n);
			jsonw_kdouble(&w, "right", (double)dc->acc_right);
			jsonw_kdouble(&w, "cut", (double)dc->acc_cut);
			jsonw_kdouble(&w, "failed", (double)dc->acc_failed);
			benchreport_record_member(&w, "rate", record_rate_json(dc->acc_right, dc->acc_n,
										rep->confidence));
			benchreport_num_or_null(&w, "fisher_p", !isnan(dc->acc_fisher_p), dc->acc_fisher_p);
			jsonw_kstr(&w, "verdict", dc->arm_index == rep->control ? "control" :
				   driver_verdict_name(dc->acc_verdict));
			jsonw_key(&w, "anomalies");
			jsonw_obj(&w);
			benchreport_num_or_null(&w, "ids_past_vocab", rep->vocab_size > 0 && dc->an_with_ids,
						(double)dc->an_past_vocab);
			jsonw_kdouble(&w, "empty_content", (double)dc->an_empty);
			jsonw_kdouble(&w, "special_repeated", (double)dc->an_special);
			jsonw_kdouble(&w, "empty_tokens", (double)dc->an_empty_tokens);
			jsonw_obj_end(&w);
			jsonw_obj_end(&w);
		}
		if (dc->median.open_loop)
			jsonw_kbool(&w, "client_behind_schedule", benchreport_behind(&dc->median, dc->level));
		benchreport_record_member(&w, "median", record_stats_json(&dc->median));
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	return jsonw_mem_end(&w, &mem);
}

/* "reset 2, truncated 1" */
static void benchreport_fail_list(const size_t *n_fail, char *buf, size_t n)
{
	size_t k, len = 0;

	buf[0] = '\0';
	for (k = 1; k < LOAD_FAIL__COUNT; k++)
		if (n_fail[k] && len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%s %zu", len ? ", " : "",
						load_fail_name((enum load_fail)k), n_fail[k]);
}

/* The margin pass: its counts, and why the first not evaluable one was. */
static void benchreport_margins(const struct margins_report *m, FILE *f)
{
	size_t k, i;

	fprintf(f, "MARGINS: %zu divergences re-scored by the server's echo logprobs after the load (epsilon %g):",
		m->n, m->eps);
	for (k = 0; k < MARGINS__LABELS; k++)
		fprintf(f, "%s %zu %s", k ? "," : "", m->n_label[k], margins_label_name((enum margins_label)k));
	if (m->n_dropped)
		fprintf(f, "; %zu more not scored (cap)", m->n_dropped);
	fprintf(f, "\n");
	for (i = 0; i < m->n; i++)
		if (m->items[i].label == MARGINS_NOT_EVALUABLE) {
			fprintf(f, "margins not evaluable (%s)%s%.160s\n", margins_why_name(m->items[i].why),
				m->items[i].ob.detail[0] ? ": " : "", m->items[i].ob.detail);
			break;
		}
}

void benchreport_print(const struct driver_report *rep, FILE *f)
{
	char buf[256], lv[32], vs[96];
	size_t i;

	if (rep->gate_failed) {
		fprintf(f, "GATE FAILED: %s\n", rep->gate_message);
		if (rep->arm_report)
			fputs(rep->arm_report, f);
		return;
	}
	/* what went wrong, first */
	if (rep->total_failed) {
		benchreport_fail_list(rep->n_fail, buf, sizeof(buf));
		fprintf(f, "FAILURES: %zu of %zu requests failed (%s)\n", rep->total_failed,
			rep->total_requests, buf);
	}
	if (rep->correctness) {
		fprintf(f, "CORRECTNESS: %s: %zu failing of %zu", driver_verdict_name(rep->corr_verdict),
			rep->corr_failing, rep->corr_requests);
		/* a rate is of one server's requests: arms are never pooled */
		if (rep->n_cells == 1)
			fprintf(f, " requests: %s", rate_describe(buf, sizeof(buf), rep->corr_failing,
								 rep->corr_requests, rep->confidence, 100, "%"));
		else
			fprintf(f, " (each server's and level's rate below)");
		fprintf(f, "%s\n", rep->ref_wrong || rep->ref_failed ?
			"; the reference itself has wrong or failed answers" : "");
		for (i = 0; i < rep->n_cells; i++) {
			const struct driver_cell *dc = &rep->cells[i];

			if (dc->corr_verdict == DRIVER_INCONCLUSIVE)
				fprintf(f, "INCONCLUSIVE: server %zu: 0 failing of %zu %s, not the baseline %g%%; "
					"%" PRIu64 " requests would (%s)\n", dc->arm_index, dc->corr_requests,
					rate_describe(buf, sizeof(buf), 0, dc->corr_requests, rep->confidence, 100, "%"),
					100 * rep->baseline, dc->corr_n_to_bound,
					rate_plan_command(vs, sizeof(vs), rep->baseline, rep->confidence));
		}
	}
	if (rep->canary) {
		fprintf(f, "CANARY: %s: %zu leaked, %zu lost of %zu requests", driver_verdict_name(rep->can_verdict),
			rep->can_leaked, rep->can_lost, rep->can_requests);
		if (rep->an_past_vocab)
			fprintf(f, "; %zu with token ids past the vocabulary", rep->an_past_vocab);
		if (rep->an_special)
			fprintf(f, "; %zu with a special token repeated", rep->an_special);
		if (rep->n_cells == 1)
			fprintf(f, "; leaked %s", rate_describe(buf, sizeof(buf), rep->can_leaked, rep->can_requests,
								rep->confidence, 100, "%"));
		else
			fprintf(f, " (each server's and level's rate below)");
		fprintf(f, "%s\n", rep->can_decoy ? "; decoys found: chance matches (below)" : "");
		for (i = 0; i < rep->n_arms; i++) {
			const struct canary_calib *cal = &rep->arms[i].cal;

			fprintf(f, "    server %zu calibration: %zu of %zu answers repeated their marker%s; %s\n", i,
				cal->n_repeated, cal->n,
				cal->repeats ? "" : ": own markers NOT EVALUABLE (the model does not repeat)",
				rep->arms[i].ids_searched ? "token ids searched too" :
				rep->arms[i].ids_note[0] ? rep->arms[i].ids_note : "token ids not searched");
		}
		for (i = 0; i < rep->n_cells; i++) {
			const struct driver_cell *dc = &rep->cells[i];

			if (dc->can_n_to_bound)
				fprintf(f, "INCONCLUSIVE: server %zu: 0 leaked of %zu %s, not the baseline %g%%; "
					"%" PRIu64 " requests would (%s)\n", dc->arm_index, dc->can_requests,
					rate_describe(buf, sizeof(buf), 0, dc->can_requests, rep->confidence, 100, "%"),
					100 * rep->baseline, dc->can_n_to_bound,
					rate_plan_command(vs, sizeof(vs), rep->baseline, rep->confidence));
		}
	}
	if (rep->accuracy) {
		fprintf(f, "ACCURACY: %s against %s\n", driver_verdict_name(rep->acc_verdict),
			rep->control != SIZE_MAX ? "the synchronous control (the last server)" :
			"no control (one server: no comparison)");
		for (i = 0; i < rep->n_cells; i++) {
			const struct driver_cell *dc = &rep->cells[i];
			char ar[128];

			fprintf(f, "    server %zu%s level %g: %zu right of %zu graded: %s", dc->arm_index,
				dc->arm_index == rep->control ? " (control)" : "", dc->level, dc->acc_right, dc->acc_n,
				rate_describe(ar, sizeof(ar), dc->acc_right, dc->acc_n, rep->confidence, 100, "%"));
			if (!isnan(dc->acc_fisher_p))
				fprintf(f, "; against the control: Fisher p = %.3g, %s", dc->acc_fisher_p,
					driver_verdict_name(dc->acc_verdict));
			if (dc->acc_cut)
				fprintf(f, "; %zu cut short by design, not graded", dc->acc_cut);
			fprintf(f, "; empty answers %zu, a special token repeated in %zu", dc->an_empty, dc->an_special);
			if (rep->vocab_size > 0 && dc->an_with_ids)
				fprintf(f, ", ids past the vocabulary (%ld) in %zu\n", rep->vocab_size, dc->an_past_vocab);
			else
				fprintf(f, ", ids past the vocabulary not evaluable (%s)\n",
					rep->vocab_size > 0 ? "no ids returned" : "no --vocab-size");
		}
	}
	if (rep->any_unstable)
		fprintf(f, "UNSTABLE: repeats spread over %.0f%% in output tokens/s; see the spread column\n",
			STATS_UNSTABLE_SPREAD * 100);
	if (rep->any_cold_invalid)
		fprintf(f, "COLD CLAIM INVALID: the prefix cache served tokens during a cold run\n");
	for (i = 0; i < rep->n_cells; i++)
		if (benchreport_behind(&rep->cells[i].median, rep->cells[i].level)) {
			fprintf(f, "CLIENT BEHIND SCHEDULE: requests written up to %.1f ms after they were due "
				"(r=%g); latency from the scheduled time is on the level's line\n",
				rep->cells[i].median.sched_lag.max * 1e3, rep->cells[i].level);
			break;
		}
	for (i = 0; i < rep->n_arms; i++)
		fprintf(f, "server %zu: %s  model %s  arm %s (%s)  config %s\n", i, rep->arms[i].url,
			rep->arms[i].model, rep->arms[i].arm[0] ? rep->arms[i].arm : "-",
			rep->arms[i].arm_state ? rep->arms[i].arm_state : "none",
			rep->arms[i].config_hash[0] ? rep->arms[i].config_hash : "unknown");
	if (rep->churn) {
		unsigned k;

		if (rep->max_num_seqs)
			fprintf(f, "workload churn (max_num_seqs %u): requests that caused each transition:",
				rep->max_num_seqs);
		else
			fprintf(f, "workload churn (max_num_seqs unknown): requests that caused each transition:");
		for (k = 0; k < CHURN_T__COUNT; k++)
			fprintf(f, "%s %s %llu", k ? "," : "", churn_transition_name(k),
				(unsigned long long)rep->transitions[k]);
		fprintf(f, "\n");
	}
	if (rep->margins)
		benchreport_margins(&rep->mrep, f);
	fprintf(f, "suite %s (%zu prompts, %s, sizing %s), %s arrivals, %s\n", rep->suite_source, rep->suite_n,
		rep->suite_hash, rep->sizing, record_arrival_name(rep->arrival),
		rep->correctness ? "correctness stage" : rep->canary ? "canary stage" : rep->warm ? "warm" : "cold");
	fprintf(f, "%-3s %-10s %8s %5s %5s %9s %9s %22s %22s %16s %10s %7s\n", "srv", "arm", "level", "reqs",
		"fail", "makespan", "tok/s", "ttft p50/p90/p99 ms", "ttlt p50/p90/p99 ms", "itl p50/p99 ms",
		"prefill/s", "spread");
	for (i = 0; i < rep->n_cells; i++) {
		const struct driver_cell *dc = &rep->cells[i];
		const struct stats_run *m = &dc->median;
		char t1[40], t2[40], t3[40], pf[24], dup[64];

		snprintf(lv, sizeof(lv), "%s%g", rep->arrival == LOAD_CLOSED ? "c=" : rep->arrival == LOAD_BATCH ? "b=" : "r=",
			 dc->level);
		snprintf(t1, sizeof(t1), "%.1f/%.1f/%.1f", m->ttft.p50 * 1e3, m->ttft.p90 * 1e3, m->ttft.p99 * 1e3);
		snprintf(t2, sizeof(t2), "%.1f/%.1f/%.1f", m->ttlt.p50 * 1e3, m->ttlt.p90 * 1e3, m->ttlt.p99 * 1e3);
		snprintf(t3, sizeof(t3), "%.2f/%.2f", m->itl.p50 * 1e3, m->itl.p99 * 1e3);
		if (m->prefill_tok_s > 0)
			snprintf(pf, sizeof(pf), "%.0f", m->prefill_tok_s);
		else
			snprintf(pf, sizeof(pf), "-");
		fprintf(f, "%-3zu %-10.10s %8s %5zu %5zu %8.3fs %9.1f %22s %22s %16s %10s %6.1f%%%s\n",
			dc->arm_index, rep->arms[dc->arm_index].arm[0] ? rep->arms[dc->arm_index].arm : "-", lv,
			dc->n_requests, dc->n_failed, m->makespan, m->out_tok_s, t1, t2, t3, pf,
			dc->spread * 100, dc->unstable ? " UNSTABLE" : "");
		if (m->reasoning_tokens > 0)
			fprintf(f, "    reasoning: %ld reasoning and %ld answer tokens; ttft to the first answer token "
				"p50/p90/p99 %.1f/%.1f/%.1f ms (ttft above counts reasoning)\n", m->reasoning_tokens,
				m->answer_tokens, m->ttft_answer.p50 * 1e3, m->ttft_answer.p90 * 1e3,
				m->ttft_answer.p99 * 1e3);
		if (m->open_loop)
			fprintf(f, "    from the scheduled time: ttft p50/p90/p99 %.1f/%.1f/%.1f ms, e2e p50/p90/p99 "
				"%.1f/%.1f/%.1f ms; requests written %.2f/%.2f/%.2f ms (p50/p99/max) after they were due%s\n",
				m->ttft_sched.p50 * 1e3, m->ttft_sched.p90 * 1e3, m->ttft_sched.p99 * 1e3,
				m->e2e_sched.p50 * 1e3, m->e2e_sched.p90 * 1e3, m->e2e_sched.p99 * 1e3,
				m->sched_lag.p50 * 1e3, m->sched_lag.p99 * 1e3, m->sched_lag.max * 1e3,
				benchreport_behind(m, dc->level) ? " (CLIENT BEHIND SCHEDULE: the figures above from "
				"the write hide that wait; quote these)" : "");
		if (dc->first_failure[0])
			fprintf(f, "    first failure: %s\n", dc->first_failure);
		if (rep->correctness)
			snprintf(dup, sizeof(dup), ", %zu of them by a token repeated", dc->corr_duplicate);
		if (rep->correctness)
			fprintf(f, "    correctness: %s, %zu failing of %zu (diverged %zu%s, wrong %zu, failed %zu): %s%s%s\n",
				driver_verdict_name(dc->corr_verdict), dc->corr_failing, dc->corr_requests,
				dc->corr_diverged, dc->corr_duplicate ? dup : "", dc->corr_wrong, dc->corr_failed,
				rate_describe(buf, sizeof(buf), dc->corr_failing, dc->corr_requests,
					      rep->confidence, 100, "%"),
				rep->baseline > 0 && dc->corr_failing ? "; " : "",
				rep->baseline > 0 && dc->corr_failing ?
				rate_against(vs, sizeof(vs), dc->corr_failing, dc->corr_requests,
					     rep->confidence, rep->baseline) : "");
		if (dc->first_divergence[0])
			fprintf(f, "    first: %s\n", dc->first_divergence);
		if (rep->canary) {
			char lr[128], dr[128];

			fprintf(f, "    canary: %s, %zu leaked, %zu lost, %zu clean, %zu failed of %zu (own marker "
				"checked in %zu); leaked %s\n", driver_verdict_name(dc->can_verdict), dc->can_leaked,
				dc->can_lost, dc->can_clean, dc->can_failed, dc->can_requests, dc->can_own_checked,
				rate_describe(lr, sizeof(lr), dc->can_leaked, dc->can_requests, rep->confidence,
					      100, "%"));
			if (dc->can_leaked)
				fprintf(f, "    leaks from a donor that had finished: %zu of %zu\n",
					dc->can_donor_finished, dc->can_leaked);
			if (dc->can_decoy)
				fprintf(f, "    decoys (markers never sent) found in %zu outputs, %s: chance matches; "
					"leaked above decoys: Fisher p = %.3g%s\n", dc->can_decoy,
					rate_describe(dr, sizeof(dr), dc->can_decoy, dc->can_requests, rep->confidence,
						      100, "%"),
					dc->can_fisher_p, dc->can_verdict == DRIVER_FAIL ? "" :
					" (leaks cannot be told from chance on this model)");
			if (dc->first_leak[0])
				fprintf(f, "    first: %s\n", dc->first_leak);
			if (rep->vocab_size > 0 && dc->an_with_ids)
				fprintf(f, "    token ids past the vocabulary (%ld): in %zu of %zu outputs\n",
					rep->vocab_size, dc->an_past_vocab, dc->an_with_ids);
			else
				fprintf(f, "    token ids past the vocabulary: not evaluable (%s)\n",
					rep->vocab_size > 0 ? "the server returned no ids" : "no --vocab-size");
			if (dc->an_special || dc->an_empty_tokens || dc->an_empty)
				fprintf(f, "    a special token repeated in %zu outputs; tokens without text in %zu; "
					"empty answers %zu\n", dc->an_special, dc->an_empty_tokens, dc->an_empty);
			if (dc->first_anomaly[0])
				fprintf(f, "    first anomaly: %s\n", dc->first_anomaly);
		}
		if (dc->n_cold_invalid)
			fprintf(f, "    cold claim invalid in %zu of %u runs (%.0f prefix-cache hit tokens)\n",
				dc->n_cold_invalid, dc->n_repeats, dc->prefix_hits);
		else if (!rep->warm && !rep->correctness && !rep->churn && dc->n_cold_unchecked)
			fprintf(f, "    cold claim unchecked in %zu runs (no prefix-cache counter)\n",
				dc->n_cold_unchecked);
	}
	fprintf(f, "token counts from %s; figures are the median repeat by output tokens/s; itl %s\n",
		rep->n_cells ? rep->cells[0].median.tps_source : "none",
		rep->n_cells && rep->cells[0].median.itl_source &&
		strcmp(rep->cells[0].median.itl_source, "chunks") ?
		"per token (the stream said how many tokens each chunk carried)" :
		"per chunk (one token per chunk assumed)");
	/* how the figures were timed, so a reader can judge them */
	fprintf(f, "token times: %llu of %llu chunks by kernel receive stamps; times counted from the request "
		"written (client queue up to %.1f ms before that, not charged to the server)\n",
		(unsigned long long)rep->stamped_kernel,
		(unsigned long long)(rep->stamped_kernel + rep->stamped_loop), rep->send_delay_max * 1e3);
	if (rep->retried)
		fprintf(f, "connections: %llu request(s) sent again on a new connection: the reused one had been "
			"closed by the server and the request never reached it (not failures)\n",
			(unsigned long long)rep->retried);
}
