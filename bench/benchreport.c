/*
 * benchreport.c - the report of a bench run (benchreport.h): per arm its
 * gates, per cell the figures, spread, failures and correctness verdict,
 * as JSON or a text table.
 */
#include "benchreport.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rate.h"
#include "ready.h"
#include "record.h"

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

char *benchreport_json(const struct driver_report *rep)
{
	cJSON *o = cJSON_CreateObject(), *arms, *cells, *x, *f, *v;
	char seed[24], *s;
	size_t i, k;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "kind", "summary");
	cJSON_AddStringToObject(o, "tool", "ttaudit");
	cJSON_AddStringToObject(o, "tool_version", TTAUDIT_VERSION);
	cJSON_AddBoolToObject(o, "gate_failed", rep->gate_failed);
	if (rep->gate_failed)
		cJSON_AddStringToObject(o, "gate_message", rep->gate_message);
	cJSON_AddStringToObject(o, "arrival", record_arrival_name(rep->arrival));
	cJSON_AddStringToObject(o, "cache_claim", rep->churn ? "shared-prefix" :
				rep->warm || rep->correctness ? "warm" : "cold");
	cJSON_AddStringToObject(o, "suite_hash", rep->suite_hash);
	cJSON_AddStringToObject(o, "suite_source", rep->suite_source);
	cJSON_AddStringToObject(o, "sizing", rep->sizing);
	cJSON_AddNumberToObject(o, "suite_prompts", (double)rep->suite_n);
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)rep->corpus_seed);
	cJSON_AddStringToObject(o, "corpus_seed", seed);
	cJSON_AddNumberToObject(o, "requests", (double)rep->total_requests);
	cJSON_AddNumberToObject(o, "failed", (double)rep->total_failed);
	f = cJSON_AddObjectToObject(o, "failures");
	for (k = 1; f && k < LOAD_FAIL__COUNT; k++)
		if (rep->n_fail[k])
			cJSON_AddNumberToObject(f, load_fail_name((enum load_fail)k), (double)rep->n_fail[k]);
	if (rep->margins) {
		x = record_margins_json(&rep->mrep);
		if (x)
			cJSON_AddItemToObject(o, "margins", x);
	}
	if (rep->correctness) {
		x = cJSON_AddObjectToObject(o, "correctness");
		if (x) {
			cJSON_AddNumberToObject(x, "failing", (double)rep->corr_failing);
			cJSON_AddNumberToObject(x, "requests", (double)rep->corr_requests);
			cJSON_AddNumberToObject(x, "reference_wrong", (double)rep->ref_wrong);
			cJSON_AddNumberToObject(x, "reference_failed", (double)rep->ref_failed);
			/* the worst cell's; each cell has its own rate (arms are not pooled) */
			cJSON_AddStringToObject(x, "verdict", driver_verdict_name(rep->corr_verdict));
			cJSON_AddNumberToObject(x, "confidence", rep->confidence);
			if (rep->baseline > 0)
				cJSON_AddNumberToObject(x, "baseline", rep->baseline);
			else
				cJSON_AddNullToObject(x, "baseline");
		}
	}
	if (rep->canary) {
		x = cJSON_AddObjectToObject(o, "canary");
		if (x) {
			cJSON_AddNumberToObject(x, "requests", (double)rep->can_requests);
			cJSON_AddNumberToObject(x, "leaked", (double)rep->can_leaked);
			cJSON_AddNumberToObject(x, "lost", (double)rep->can_lost);
			cJSON_AddNumberToObject(x, "decoy_outputs", (double)rep->can_decoy);
			cJSON_AddStringToObject(x, "verdict", driver_verdict_name(rep->can_verdict));
			cJSON_AddNumberToObject(x, "confidence", rep->confidence);
			if (rep->baseline > 0)
				cJSON_AddNumberToObject(x, "baseline", rep->baseline);
			else
				cJSON_AddNullToObject(x, "baseline");
		}
	}
	if (rep->accuracy) {
		x = cJSON_AddObjectToObject(o, "accuracy");
		if (x) {
			cJSON_AddStringToObject(x, "verdict", driver_verdict_name(rep->acc_verdict));
			if (rep->control != SIZE_MAX)
				cJSON_AddNumberToObject(x, "control", (double)rep->control);
			else
				cJSON_AddNullToObject(x, "control");
			cJSON_AddNumberToObject(x, "confidence", rep->confidence);
		}
	}
	x = cJSON_AddObjectToObject(o, "workload");
	if (x) {
		cJSON_AddStringToObject(x, "kind", rep->churn ? "churn" : "plain");
		if (rep->churn) {
			cJSON *tr = cJSON_AddObjectToObject(x, "transitions");

			if (rep->max_num_seqs)
				cJSON_AddNumberToObject(x, "max_num_seqs", rep->max_num_seqs);
			else
				cJSON_AddNullToObject(x, "max_num_seqs");
			for (k = 0; tr && k < CHURN_T__COUNT; k++)
				cJSON_AddNumberToObject(tr, churn_transition_name((unsigned)k),
							(double)rep->transitions[k]);
		}
	}
	x = cJSON_AddObjectToObject(o, "token_times");
	if (x) {
		cJSON_AddNumberToObject(x, "stamped_kernel", (double)rep->stamped_kernel);
		cJSON_AddNumberToObject(x, "retried_dead_connection", (double)rep->retried);
		cJSON_AddNumberToObject(x, "stamped_loop", (double)rep->stamped_loop);
		cJSON_AddNumberToObject(x, "send_delay_max_s", rep->send_delay_max);
	}
	cJSON_AddBoolToObject(o, "unstable", rep->any_unstable);
	cJSON_AddBoolToObject(o, "cold_claim_invalid", rep->any_cold_invalid);
	arms = cJSON_AddArrayToObject(o, "arms");
	for (i = 0; arms && i < rep->n_arms; i++) {
		x = cJSON_CreateObject();
		if (!x)
			break;
		cJSON_AddStringToObject(x, "url", rep->arms[i].url);
		if (rep->arms[i].arm[0])
			cJSON_AddStringToObject(x, "arm", rep->arms[i].arm);
		else
			cJSON_AddNullToObject(x, "arm");
		cJSON_AddStringToObject(x, "arm_state", rep->arms[i].arm_state ? rep->arms[i].arm_state : "none");
		cJSON_AddStringToObject(x, "model", rep->arms[i].model);
		if (rep->arms[i].config_hash[0])
			cJSON_AddStringToObject(x, "server_config_hash", rep->arms[i].config_hash);
		else
			cJSON_AddNullToObject(x, "server_config_hash");
		if (rep->canary) {
			const struct canary_calib *cal = &rep->arms[i].cal;
			cJSON *cj = cJSON_AddObjectToObject(x, "canary_calibration");

			if (cj) {
				cJSON_AddNumberToObject(cj, "requests", (double)cal->n);
				cJSON_AddNumberToObject(cj, "repeated", (double)cal->n_repeated);
				cJSON_AddBoolToObject(cj, "own_marker_evaluable", cal->repeats);
				cJSON_AddNumberToObject(cj, "tokens_for_marker", (double)cal->tokens_for_marker);
				cJSON_AddBoolToObject(cj, "ids_returned", cal->ids_returned);
				cJSON_AddBoolToObject(cj, "ids_searched", rep->arms[i].ids_searched);
				if (rep->arms[i].ids_note[0])
					cJSON_AddStringToObject(cj, "ids_note", rep->arms[i].ids_note);
			}
		}
		if (rep->correctness) {
			cJSON_AddNumberToObject(x, "reference_requests", (double)rep->arms[i].ref_requests);
			cJSON_AddNumberToObject(x, "reference_wrong", (double)rep->arms[i].ref_wrong);
			cJSON_AddNumberToObject(x, "reference_failed", (double)rep->arms[i].ref_failed);
		}
		cJSON_AddItemToArray(arms, x);
	}
	cells = cJSON_AddArrayToObject(o, "cells");
	for (i = 0; cells && i < rep->n_cells; i++) {
		const struct driver_cell *dc = &rep->cells[i];

		x = cJSON_CreateObject();
		if (!x)
			break;
		cJSON_AddNumberToObject(x, "arm_index", (double)dc->arm_index);
		cJSON_AddNumberToObject(x, benchreport_level_name(rep->arrival), dc->level);
		cJSON_AddNumberToObject(x, "repeats", dc->n_repeats);
		cJSON_AddNumberToObject(x, "median_repeat", (double)dc->median_repeat);
		cJSON_AddNumberToObject(x, "spread", dc->spread);
		cJSON_AddBoolToObject(x, "unstable", dc->unstable);
		v = cJSON_AddArrayToObject(x, "output_tok_s_by_repeat");
		for (k = 0; v && k < dc->n_repeats; k++)
			cJSON_AddItemToArray(v, cJSON_CreateNumber(dc->tok_s[k]));
		cJSON_AddNumberToObject(x, "requests", (double)dc->n_requests);
		cJSON_AddNumberToObject(x, "failed", (double)dc->n_failed);
		if (dc->first_failure[0])
			cJSON_AddStringToObject(x, "first_failure", dc->first_failure);
		if (!rep->warm && !rep->correctness && !rep->churn) {
			cJSON_AddNumberToObject(x, "prefix_cache_hits", dc->prefix_hits);
			cJSON_AddNumberToObject(x, "cold_claim_invalid_runs", (double)dc->n_cold_invalid);
			cJSON_AddNumberToObject(x, "cold_claim_unchecked_runs", (double)dc->n_cold_unchecked);
		}
		if (rep->correctness) {
			v = cJSON_AddObjectToObject(x, "correctness");
			if (v) {
				cJSON_AddNumberToObject(v, "requests", (double)dc->corr_requests);
				cJSON_AddNumberToObject(v, "failing", (double)dc->corr_failing);
				cJSON_AddNumberToObject(v, "diverged", (double)dc->corr_diverged);
				cJSON_AddNumberToObject(v, "duplicate_token", (double)dc->corr_duplicate);
				cJSON_AddNumberToObject(v, "wrong", (double)dc->corr_wrong);
				cJSON_AddNumberToObject(v, "failed", (double)dc->corr_failed);
				cJSON_AddItemToObject(v, "failing_rate",
						      record_rate_json(dc->corr_failing, dc->corr_requests,
								       rep->confidence));
				cJSON_AddStringToObject(v, "verdict", driver_verdict_name(dc->corr_verdict));
				if (dc->corr_n_to_bound)
					cJSON_AddNumberToObject(v, "requests_to_rule_out_baseline",
								(double)dc->corr_n_to_bound);
				if (dc->first_divergence[0])
					cJSON_AddStringToObject(v, "first", dc->first_divergence);
			}
		}
		if (rep->canary) {
			v = cJSON_AddObjectToObject(x, "canary");
			if (v) {
				cJSON_AddNumberToObject(v, "requests", (double)dc->can_requests);
				cJSON_AddNumberToObject(v, "clean", (double)dc->can_clean);
				cJSON_AddNumberToObject(v, "leaked", (double)dc->can_leaked);
				cJSON_AddNumberToObject(v, "lost", (double)dc->can_lost);
				cJSON_AddNumberToObject(v, "failed", (double)dc->can_failed);
				cJSON_AddNumberToObject(v, "own_checked", (double)dc->can_own_checked);
				cJSON_AddNumberToObject(v, "decoy_outputs", (double)dc->can_decoy);
				cJSON_AddNumberToObject(v, "ids_checked", (double)dc->can_id_checked);
				cJSON_AddNumberToObject(v, "donor_finished", (double)dc->can_donor_finished);
				cJSON_AddItemToObject(v, "leak_rate", record_rate_json(dc->can_leaked, dc->can_requests,
										      rep->confidence));
				cJSON_AddItemToObject(v, "lost_rate", record_rate_json(dc->can_lost, dc->can_own_checked,
										      rep->confidence));
				cJSON_AddItemToObject(v, "decoy_rate", record_rate_json(dc->can_decoy, dc->can_requests,
										       rep->confidence));
				if (dc->can_decoy)
					cJSON_AddNumberToObject(v, "leaks_above_decoys_p", dc->can_fisher_p);
				cJSON_AddStringToObject(v, "verdict", driver_verdict_name(dc->can_verdict));
				if (dc->can_n_to_bound)
					cJSON_AddNumberToObject(v, "requests_to_rule_out_baseline", (double)dc->can_n_to_bound);
				if (dc->first_leak[0])
					cJSON_AddStringToObject(v, "first", dc->first_leak);
				{
					cJSON *an = cJSON_AddObjectToObject(v, "anomalies");

					if (an) {
						cJSON_AddNumberToObject(an, "outputs", (double)dc->an_outputs);
						cJSON_AddNumberToObject(an, "with_ids", (double)dc->an_with_ids);
						if (rep->vocab_size > 0 && dc->an_with_ids)
							cJSON_AddNumberToObject(an, "ids_past_vocab", (double)dc->an_past_vocab);
						else
							cJSON_AddNullToObject(an, "ids_past_vocab");
						cJSON_AddNumberToObject(an, "empty_tokens", (double)dc->an_empty_tokens);
						cJSON_AddNumberToObject(an, "special_repeated", (double)dc->an_special);
						cJSON_AddNumberToObject(an, "empty_content", (double)dc->an_empty);
						if (dc->first_anomaly[0])
							cJSON_AddStringToObject(an, "first", dc->first_anomaly);
					}
				}
			}
		}
		if (rep->accuracy) {
			v = cJSON_AddObjectToObject(x, "accuracy");
			if (v) {
				cJSON *an;

				cJSON_AddBoolToObject(v, "control", dc->arm_index == rep->control);
				cJSON_AddNumberToObject(v, "graded", (double)dc->acc_n);
				cJSON_AddNumberToObject(v, "right", (double)dc->acc_right);
				cJSON_AddNumberToObject(v, "cut", (double)dc->acc_cut);
				cJSON_AddNumberToObject(v, "failed", (double)dc->acc_failed);
				cJSON_AddItemToObject(v, "rate", record_rate_json(dc->acc_right, dc->acc_n, rep->confidence));
				if (isnan(dc->acc_fisher_p))
					cJSON_AddNullToObject(v, "fisher_p");
				else
					cJSON_AddNumberToObject(v, "fisher_p", dc->acc_fisher_p);
				cJSON_AddStringToObject(v, "verdict", dc->arm_index == rep->control ? "control" :
							driver_verdict_name(dc->acc_verdict));
				an = cJSON_AddObjectToObject(v, "anomalies");
				if (an) {
					if (rep->vocab_size > 0 && dc->an_with_ids)
						cJSON_AddNumberToObject(an, "ids_past_vocab", (double)dc->an_past_vocab);
					else
						cJSON_AddNullToObject(an, "ids_past_vocab");
					cJSON_AddNumberToObject(an, "empty_content", (double)dc->an_empty);
					cJSON_AddNumberToObject(an, "special_repeated", (double)dc->an_special);
					cJSON_AddNumberToObject(an, "empty_tokens", (double)dc->an_empty_tokens);
				}
			}
		}
		if (dc->median.open_loop)
			cJSON_AddBoolToObject(x, "client_behind_schedule", benchreport_behind(&dc->median, dc->level));
		v = record_stats_json(&dc->median);
		if (v)
			cJSON_AddItemToObject(x, "median", v);
		cJSON_AddItemToArray(cells, x);
	}
	s = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return s;
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
