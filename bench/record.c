/*
 * record.c - the run-record format's writer (record.h): bench writes
 * RUN.jsonl here; pair, the figures and the A/B read it back with
 * record/record_read.c, with one policy for a malformed line.
 */
#include "bench/record.h"
#include "base/jsonw.h"
#include "base/outfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/rate.h"

struct record {
	struct outfile of;   /* the records go to a temporary file renamed at close */
	FILE *f;
	char path[1024];
	bool failed;     /* a write failed: close reports it */
	int err;
};

const char *record_arm_state_name(enum record_arm_state s)
{
	switch (s) {
	case RECORD_ARM_NONE: return "none";
	case RECORD_ARM_CONFIRMED: return "confirmed";
	case RECORD_ARM_UNCONFIRMED: return "unconfirmed";
	case RECORD_ARM_FAILED: return "failed";
	}
	return "unknown";
}

const char *record_arrival_name(enum load_arrival a)
{
	switch (a) {
	case LOAD_CLOSED: return "closed";
	case LOAD_BATCH: return "batch";
	case LOAD_POISSON: return "poisson";
	}
	return "unknown";
}

enum status record_open(struct record **out, const char *path, struct status_info *si)
{
	struct record *w;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return status_set(si, STATUS_NOMEM, "%s: out of memory", path);
	snprintf(w->path, sizeof(w->path), "%s", path);
	if (outfile_open(&w->of, path, si)) {
		free(w);
		return STATUS_IO;
	}
	w->f = w->of.f;
	*out = w;
	return STATUS_OK;
}

enum status record_close(struct record *w, struct status_info *si)
{
	enum status st = STATUS_OK;

	if (!w)
		return STATUS_OK;
	if (w->failed) {
		/* what was there before stays: a half-written run is no record */
		outfile_abort(&w->of);
		st = status_set_at(si, STATUS_IO, w->path, 0, 0, "write failed: %s", strerror(w->err));
	} else {
		st = outfile_commit(&w->of, si);
	}
	free(w);
	return st;
}

enum status record_gate(const struct record_identity *id, struct status_info *si)
{
	if (!id->ready)
		return status_set(si, STATUS_USAGE, "%s: no record without a passed readiness gate",
				  id->url ? id->url : "server");
	if (id->arm && id->arm_state != RECORD_ARM_CONFIRMED && id->arm_state != RECORD_ARM_UNCONFIRMED)
		return status_set(si, STATUS_USAGE, "arm '%s': no record without the arm confirmed "
				  "(or --no-arm-check, labelled unconfirmed)", id->arm);
	if (!id->arm && id->arm_state != RECORD_ARM_NONE)
		return status_set(si, STATUS_USAGE, "arm state %s without an arm name",
				  record_arm_state_name(id->arm_state));
	return STATUS_OK;
}

/*
 * cJSON writes a number with 15 digits when they read back within an
 * epsilon of it, not exactly: 2880.8219840343195 became 2880.82198403432,
 * so a summary's median figure differed from the same repeat's figure
 * written by jsonw. Every number is replaced by its shortest exact text
 * (jsonw_dtoa) before printing; depth is that of the objects built here.
 */
static bool record_exact_numbers(cJSON *o)
{
	cJSON *it, *next;

	for (it = o ? o->child : NULL; it; it = next) {
		next = it->next;
		if (cJSON_IsNumber(it)) {
			char buf[32];
			cJSON *raw = isfinite(it->valuedouble) ?
				cJSON_CreateRaw(jsonw_dtoa(buf, sizeof(buf), it->valuedouble)) :
				cJSON_CreateNull();

			if (!raw)
				return false;
			/* the key moves with the value (replacing keeps no name) */
			raw->string = it->string;
			raw->type |= it->type & cJSON_StringIsConst;
			it->string = NULL;
			cJSON_ReplaceItemViaPointer(o, it, raw);
		} else if ((cJSON_IsObject(it) || cJSON_IsArray(it)) && !record_exact_numbers(it))
			return false;
	}
	return true;
}

char *record_print(struct cJSON *o)
{
	if (!o || !record_exact_numbers(o))
		return NULL;
	return cJSON_PrintUnformatted(o);
}

static enum status record_put(struct record *w, cJSON *o, struct status_info *si)
{
	char *s = record_print(o);

	if (!s)
		return status_set(si, STATUS_NOMEM, "%s: out of memory", w->path);
	if (fputs(s, w->f) == EOF || fputc('\n', w->f) == EOF) {
		if (!w->failed) {
			w->failed = true;
			w->err = errno;
		}
		free(s);
		return status_set_at(si, STATUS_IO, w->path, 0, 0, "write failed: %s", strerror(errno));
	}
	free(s);
	return STATUS_OK;
}

enum status record_line(struct record *w, const char *json, struct status_info *si)
{
	if (fputs(json, w->f) == EOF || fputc('\n', w->f) == EOF) {
		w->failed = true;
		w->err = errno;
		return status_set_at(si, STATUS_IO, w->path, 0, 0, "write failed: %s", strerror(errno));
	}
	return STATUS_OK;
}

static void record_str(cJSON *o, const char *k, const char *v);

/* A number, or null when not finite. */
static void record_num(cJSON *o, const char *k, double v)
{
	if (isfinite(v))
		cJSON_AddNumberToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

enum status record_margins(struct record *w, const struct margins_report *m, struct status_info *si)
{
	size_t i;
	enum status st = STATUS_OK;

	for (i = 0; i < m->n && !st; i++) {
		const struct margins_item *it = &m->items[i];
		cJSON *o = cJSON_CreateObject();
		char *js;

		if (!o)
			return status_set(si, STATUS_NOMEM, "out of memory");
		cJSON_AddStringToObject(o, "kind", "margin");
		cJSON_AddStringToObject(o, "request_id", it->request_id);
		cJSON_AddNumberToObject(o, "arm_index", (double)it->arm);
		cJSON_AddNumberToObject(o, "prompt_index", (double)it->prompt_index);
		cJSON_AddNumberToObject(o, "diverged_at", (double)it->at);
		cJSON_AddStringToObject(o, "label", margins_label_name(it->label));
		record_str(o, "not_evaluable", it->why ? margins_why_name(it->why) : NULL);
		record_str(o, "detail", it->ob.detail[0] ? it->ob.detail : NULL);
		cJSON_AddStringToObject(o, "output_token", it->out_tok);
		cJSON_AddStringToObject(o, "reference_token", it->ref_tok);
		record_str(o, "echo_token", it->ob.got_tok[0] ? it->ob.got_tok : NULL);
		record_num(o, "logprob_output", it->ob.why ? NAN : it->ob.lp_got);
		record_num(o, "logprob_reference", it->ob.why || !it->ob.ref_known ? NAN : it->ob.lp_ref);
		record_num(o, "logprob_top", it->ob.why ? NAN : it->ob.lp_top);
		if (it->id >= 0)
			cJSON_AddNumberToObject(o, "token_id", (double)it->id);
		else
			cJSON_AddNullToObject(o, "token_id");
		cJSON_AddNumberToObject(o, "epsilon", m->eps);
		js = record_print(o);
		cJSON_Delete(o);
		if (!js)
			return status_set(si, STATUS_NOMEM, "out of memory");
		st = record_line(w, js, si);
		free(js);
	}
	return st;
}

struct cJSON *record_margins_json(const struct margins_report *m)
{
	cJSON *o = cJSON_CreateObject(), *l;
	size_t k;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "epsilon", m->eps);
	cJSON_AddNumberToObject(o, "scored", (double)m->n);
	cJSON_AddNumberToObject(o, "requests", (double)m->n_requests);
	cJSON_AddNumberToObject(o, "dropped", (double)m->n_dropped);
	l = cJSON_AddObjectToObject(o, "labels");
	for (k = 0; l && k < MARGINS__LABELS; k++)
		cJSON_AddNumberToObject(l, margins_label_name((enum margins_label)k), (double)m->n_label[k]);
	return o;
}

/* Adds a string or null. */
static void record_str(cJSON *o, const char *k, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

/* Adds the parsed JSON text, or the text as a string when it does not parse, or null. */
static void record_raw(cJSON *o, const char *k, const char *json)
{
	cJSON *v = json ? cJSON_Parse(json) : NULL;

	if (v)
		cJSON_AddItemToObject(o, k, v);
	else
		record_str(o, k, json);
}

cJSON *record_identity_json(const struct record_identity *id)
{
	cJSON *o = cJSON_CreateObject();
	char seed[24];

	if (!o)
		return NULL;
	record_str(o, "tool", "ttaudit");
	record_str(o, "tool_version", id->tool_version);
	record_str(o, "url", id->url);
	record_str(o, "model", id->model);
	record_str(o, "arm", id->arm);
	record_str(o, "arm_state", record_arm_state_name(id->arm_state));
	record_raw(o, "arm_evidence", id->arm_evidence);
	record_str(o, "host", id->host);
	cJSON_AddBoolToObject(o, "ready", id->ready);
	record_raw(o, "ready_report", id->ready_json);
	record_str(o, "suite_hash", id->suite_hash);
	record_str(o, "suite_source", id->suite_source);
	record_str(o, "sizing", id->sizing);
	record_str(o, "server_config_hash", id->config_hash);
	/* a string: a 64-bit seed does not survive a double */
	snprintf(seed, sizeof(seed), "%llu", (unsigned long long)id->corpus_seed);
	record_str(o, "corpus_seed", seed);
	return o;
}

static cJSON *record_dist(const struct stats_dist *d)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "n", (double)d->n);
	cJSON_AddNumberToObject(o, "min", d->min);
	cJSON_AddNumberToObject(o, "p50", d->p50);
	cJSON_AddNumberToObject(o, "p90", d->p90);
	cJSON_AddNumberToObject(o, "p99", d->p99);
	cJSON_AddNumberToObject(o, "max", d->max);
	cJSON_AddNumberToObject(o, "mean", d->mean);
	return o;
}

/*
 * The client's own queue: launch to the request handed to its connection.
 * Figures are counted from the latter (load_result_origin), so this is what
 * they would have wrongly charged to the server.
 */
static void record_send_delay(cJSON *a, const struct load_run *run)
{
	struct stats_dist d;
	double *v = malloc((run->n + 1) * sizeof(*v));
	size_t i, k = 0;

	if (!v)
		return;
	for (i = 0; i < run->n; i++)
		if (run->res[i].t_sent > 0)
			v[k++] = run->res[i].t_sent - run->res[i].t_launch;
	stats_dist_of(v, k, &d);
	cJSON_AddNumberToObject(a, "send_delay_p50_s", d.p50);
	cJSON_AddNumberToObject(a, "send_delay_p99_s", d.p99);
	cJSON_AddNumberToObject(a, "send_delay_max_s", d.max);
	free(v);
}

cJSON *record_stats_json(const struct stats_run *st)
{
	cJSON *o = cJSON_CreateObject(), *f, *sc;
	size_t i;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "requests", (double)st->n);
	cJSON_AddNumberToObject(o, "ok", (double)st->n_ok);
	cJSON_AddNumberToObject(o, "aborted", (double)st->n_aborted);
	cJSON_AddNumberToObject(o, "failed", (double)st->n_failed);
	f = cJSON_AddObjectToObject(o, "failures");
	for (i = 1; f && i < LOAD_FAIL__COUNT; i++)
		if (st->n_fail[i])
			cJSON_AddNumberToObject(f, load_fail_name((enum load_fail)i), (double)st->n_fail[i]);
	cJSON_AddNumberToObject(o, "makespan_s", st->makespan);
	cJSON_AddNumberToObject(o, "output_tokens", (double)st->out_tokens);
	cJSON_AddNumberToObject(o, "output_chunks", (double)st->out_chunks);
	cJSON_AddStringToObject(o, "tps_source", st->tps_source ? st->tps_source : "none");
	cJSON_AddNumberToObject(o, "usage_chunk_mismatches", (double)st->n_usage_mismatch);
	cJSON_AddNumberToObject(o, "output_tok_s", st->out_tok_s);
	cJSON_AddNumberToObject(o, "requests_s", st->req_s);
	if (st->prompt_tokens >= 0)
		cJSON_AddNumberToObject(o, "prompt_tokens", (double)st->prompt_tokens);
	else
		cJSON_AddNullToObject(o, "prompt_tokens");
	cJSON_AddNumberToObject(o, "max_ttft_s", st->max_ttft);
	cJSON_AddNumberToObject(o, "batch_prefill_tok_s", st->prefill_tok_s);
	cJSON_AddItemToObject(o, "ttft_s", record_dist(&st->ttft));
	cJSON_AddItemToObject(o, "ttlt_s", record_dist(&st->ttlt));
	cJSON_AddItemToObject(o, "e2e_s", record_dist(&st->e2e));
	cJSON_AddItemToObject(o, "itl_s", record_dist(&st->itl));
	cJSON_AddStringToObject(o, "itl_source", st->itl_source ? st->itl_source : "chunks");
	cJSON_AddItemToObject(o, "ttft_answer_s", record_dist(&st->ttft_answer));
	cJSON_AddNumberToObject(o, "reasoning_tokens", (double)st->reasoning_tokens);
	cJSON_AddNumberToObject(o, "answer_tokens", (double)st->answer_tokens);
	if (st->open_loop) {
		/* open loop: the same from when each request was due, and how late
		 * the client wrote them (coordinated omission) */
		cJSON_AddItemToObject(o, "ttft_from_sched_s", record_dist(&st->ttft_sched));
		cJSON_AddItemToObject(o, "e2e_from_sched_s", record_dist(&st->e2e_sched));
		cJSON_AddItemToObject(o, "sched_lag_s", record_dist(&st->sched_lag));
	}
	sc = cJSON_AddArrayToObject(o, "ttft_staircase_s");
	for (i = 0; sc && i < st->n_staircase; i++)
		cJSON_AddItemToArray(sc, st->staircase[i] < 0 ? cJSON_CreateNull()
							       : cJSON_CreateNumber(st->staircase[i]));
	return o;
}

cJSON *record_rate_json(uint64_t k, uint64_t n, double conf)
{
	struct rate_interval r = rate_clopper_pearson(k, n, conf);
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "k", (double)(k > n ? n : k));
	cJSON_AddNumberToObject(o, "n", (double)n);
	if (n)
		cJSON_AddNumberToObject(o, "rate", r.p);
	else
		cJSON_AddNullToObject(o, "rate");
	cJSON_AddNumberToObject(o, "lo", r.lo);
	cJSON_AddNumberToObject(o, "hi", r.hi);
	cJSON_AddNumberToObject(o, "confidence", conf);
	cJSON_AddStringToObject(o, "method", "clopper-pearson");
	return o;
}

cJSON *record_correct_json(const struct correct_report *c)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "requests", (double)c->n);
	cJSON_AddNumberToObject(o, "failing", (double)c->n_failing);
	cJSON_AddNumberToObject(o, "identical", (double)c->n_identical);
	cJSON_AddNumberToObject(o, "diverged", (double)c->n_diverged);
	cJSON_AddNumberToObject(o, "duplicate_token", (double)c->n_duplicate);
	cJSON_AddNumberToObject(o, "wrong", (double)c->n_wrong);
	cJSON_AddNumberToObject(o, "failed", (double)c->n_failed);
	cJSON_AddNumberToObject(o, "no_reference", (double)c->n_no_reference);
	cJSON_AddNumberToObject(o, "reference_requests", (double)c->n_ref);
	cJSON_AddNumberToObject(o, "reference_wrong", (double)c->n_ref_wrong);
	cJSON_AddNumberToObject(o, "reference_failed", (double)c->n_ref_failed);
	return o;
}

cJSON *record_canary_json(const struct canary_report *c)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "requests", (double)c->n);
	cJSON_AddNumberToObject(o, "clean", (double)c->n_clean);
	cJSON_AddNumberToObject(o, "leaked", (double)c->n_leaked);
	cJSON_AddNumberToObject(o, "lost", (double)c->n_lost);
	cJSON_AddNumberToObject(o, "failed", (double)c->n_failed);
	cJSON_AddNumberToObject(o, "own_checked", (double)c->n_own_checked);
	cJSON_AddNumberToObject(o, "decoy_outputs", (double)c->n_decoy_outputs);
	cJSON_AddNumberToObject(o, "ids_checked", (double)c->n_id_checked);
	cJSON_AddNumberToObject(o, "donor_finished", (double)c->n_donor_finished);
	return o;
}

/* A request's canary verdict: its own marker, the first foreign piece. */
static void record_canary_item(cJSON *o, const struct record_cell *c, const struct canary_item *it)
{
	cJSON *x = cJSON_AddObjectToObject(o, "canary"), *l;

	cJSON_AddStringToObject(o, "verdict", canary_verdict_name(it->verdict));
	if (!x)
		return;
	if (c->canary_set)
		cJSON_AddStringToObject(x, "marker", canary_text(c->canary_set, CANARY_SENT, it->marker));
	cJSON_AddNumberToObject(x, "marker_index", (double)it->marker);
	cJSON_AddStringToObject(x, "own", canary_own_name(it->own));
	cJSON_AddNumberToObject(x, "own_groups", (double)it->own_groups);
	cJSON_AddNumberToObject(x, "foreign", (double)it->n_leaks);
	cJSON_AddNumberToObject(x, "decoy", (double)it->n_decoy);
	if (!it->n_leaks)
		return;
	l = cJSON_AddObjectToObject(x, "leak");
	if (!l)
		return;
	cJSON_AddStringToObject(l, "donor_kind", canary_kind_name(it->leak.kind));
	cJSON_AddNumberToObject(l, "donor_marker", (double)it->leak.donor);
	record_str(l, "donor_id", it->leak.donor_id[0] ? it->leak.donor_id : NULL);
	cJSON_AddNumberToObject(l, "at", (double)it->leak.at);
	if (it->leak.span > 1)
		cJSON_AddNumberToObject(l, "at_span", (double)it->leak.span);
	cJSON_AddBoolToObject(l, "donor_finished", it->leak.donor_finished);
	cJSON_AddBoolToObject(l, "donor_aborted", it->leak.donor_aborted);
	cJSON_AddStringToObject(l, "by", it->leak.by_id ? "ids" : "text");
	if (it->leak.group[0])
		cJSON_AddStringToObject(l, "group", it->leak.group);
}

static void record_cell_json(cJSON *o, const struct record_cell *c, const struct load_run *run)
{
	cJSON *a = cJSON_AddObjectToObject(o, "arrival");
	char seed[24];

	if (a) {
		cJSON_AddStringToObject(a, "model", record_arrival_name(c->arrival));
		if (c->arrival == LOAD_CLOSED)
			cJSON_AddNumberToObject(a, "concurrency", c->concurrency);
		if (c->arrival == LOAD_BATCH)
			cJSON_AddNumberToObject(a, "batch", c->batch);
		if (c->arrival == LOAD_POISSON) {
			cJSON_AddNumberToObject(a, "rate", c->rate);
			snprintf(seed, sizeof(seed), "%llu", (unsigned long long)c->arrival_seed);
			cJSON_AddStringToObject(a, "seed", seed);
		}
		cJSON_AddNumberToObject(a, "max_inflight", (double)run->max_inflight);
	}
	a = cJSON_AddObjectToObject(o, "client_loop");
	if (a) {
		cJSON_AddNumberToObject(a, "wakes", (double)run->n_wakes);
		cJSON_AddNumberToObject(a, "busy_p50_s", run->busy_p50);
		cJSON_AddNumberToObject(a, "busy_p99_s", run->busy_p99);
		cJSON_AddNumberToObject(a, "busy_max_s", run->busy_max);
		cJSON_AddNumberToObject(a, "busy_cpu_p50_s", run->busy_cpu_p50);
		cJSON_AddNumberToObject(a, "busy_cpu_p99_s", run->busy_cpu_p99);
		cJSON_AddNumberToObject(a, "busy_cpu_max_s", run->busy_cpu_max);
		cJSON_AddNumberToObject(a, "cpu_s", run->cpu_s);
		/* which clock timed the content chunks: the kernel's receive
		 * stamp, or the loop when it read them */
		cJSON_AddNumberToObject(a, "stamped_kernel", (double)run->n_stamp_kernel);
		cJSON_AddNumberToObject(a, "stamped_loop", (double)run->n_stamp_loop);
		cJSON_AddNumberToObject(a, "retried_dead_connection", (double)run->n_retried);
		record_send_delay(a, run);
	}
	cJSON_AddStringToObject(o, "cache_claim", c->cache_claim ? c->cache_claim : "cold");
	if (c->prefix_known) {
		cJSON_AddNumberToObject(o, "prefix_cache_hits_delta", c->prefix_hits_delta);
		if (!c->cache_claim || !strcmp(c->cache_claim, "cold"))
			cJSON_AddBoolToObject(o, "cold_claim_valid", c->cold_claim_valid);
	} else {
		cJSON_AddNullToObject(o, "prefix_cache_hits_delta");
		if (!c->cache_claim || !strcmp(c->cache_claim, "cold"))
			cJSON_AddNullToObject(o, "cold_claim_valid");
	}
	if (c->temperature >= 0)
		cJSON_AddNumberToObject(o, "temperature", c->temperature);
	else
		cJSON_AddNullToObject(o, "temperature");
}

static void record_verdict(cJSON *o, const struct correct_item *it)
{
	cJSON_AddStringToObject(o, "verdict", correct_verdict_name(it->verdict));
	if (it->verdict == CORRECT_DIVERGED) {
		cJSON_AddNumberToObject(o, "diverged_at", (double)it->at);
		if (it->at_span > 1)
			cJSON_AddNumberToObject(o, "diverged_tokens", (double)it->at_span);
		cJSON_AddStringToObject(o, "diverged_kind", it->duplicate ? "duplicate-token" : "other");
		cJSON_AddStringToObject(o, "reference_from", it->ref_excerpt);
		cJSON_AddStringToObject(o, "output_from", it->got_excerpt);
	}
	if (it->verdict == CORRECT_WRONG)
		cJSON_AddStringToObject(o, "missing", it->missing);
}

static cJSON *record_request_json(const struct record_identity *id, const struct record_cell *c,
				  const struct load_result *r, bool token_times)
{
	cJSON *o = cJSON_CreateObject(), *tt;
	size_t i, n;
	double t0;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "kind", "request");
	cJSON_AddStringToObject(o, "run_id", c->run_id);
	cJSON_AddNumberToObject(o, "arm_index", (double)c->arm_index);
	record_str(o, "arm", id->arm);
	cJSON_AddStringToObject(o, "arm_state", record_arm_state_name(id->arm_state));
	cJSON_AddStringToObject(o, "phase", c->phase);
	cJSON_AddStringToObject(o, "arrival", record_arrival_name(c->arrival));
	cJSON_AddNumberToObject(o, "index", (double)r->index);
	cJSON_AddNumberToObject(o, "launch_seq", (double)r->launch_seq);
	cJSON_AddNumberToObject(o, "prompt_index", (double)r->prompt_index);
	record_str(o, "id", r->id[0] ? r->id : NULL);
	record_str(o, "request_id", r->xid[0] ? r->xid : NULL);
	cJSON_AddBoolToObject(o, "ok", !r->fail);
	cJSON_AddStringToObject(o, "outcome", r->aborted && !r->fail ? "aborted" : load_fail_name(r->fail));
	if (r->aborted)
		cJSON_AddNumberToObject(o, "aborted_at", (double)r->n_tokens);
	cJSON_AddNumberToObject(o, "inflight_at_launch", (double)r->inflight_at_launch);
	if (r->fail)
		cJSON_AddStringToObject(o, "reason", r->reason);
	cJSON_AddNumberToObject(o, "http_status", (double)r->http_status);
	cJSON_AddNumberToObject(o, "t_sched", r->t_sched);
	cJSON_AddNumberToObject(o, "t_launch", r->t_launch);
	if (r->t_sent > 0)
		cJSON_AddNumberToObject(o, "t_sent", r->t_sent);
	else
		cJSON_AddNullToObject(o, "t_sent");
	t0 = load_result_origin(r);
	if (r->t_first > 0) {
		cJSON_AddNumberToObject(o, "ttft_s", r->t_first - t0);
		cJSON_AddNumberToObject(o, "ttlt_s", r->t_last - t0);
	} else {
		cJSON_AddNullToObject(o, "ttft_s");
		cJSON_AddNullToObject(o, "ttlt_s");
	}
	if (r->t_first_answer > 0)
		cJSON_AddNumberToObject(o, "ttft_answer_s", r->t_first_answer - t0);
	else
		cJSON_AddNullToObject(o, "ttft_answer_s");
	cJSON_AddNumberToObject(o, "e2e_s", r->t_end - t0);
	if (c->arrival == LOAD_POISSON && r->t_sched > 0) {
		/* from when it was due: a client behind its schedule cannot hide it */
		if (r->t_first > 0)
			cJSON_AddNumberToObject(o, "ttft_from_sched_s", r->t_first - r->t_sched);
		else
			cJSON_AddNullToObject(o, "ttft_from_sched_s");
		cJSON_AddNumberToObject(o, "e2e_from_sched_s", r->t_end - r->t_sched);
		cJSON_AddNumberToObject(o, "sched_lag_s", t0 - r->t_sched);
	}
	if (r->n_chunks > 1) {
		double gap = 0;

		n = r->n_chunks < LOAD_MAX_TOKENS ? r->n_chunks : LOAD_MAX_TOKENS;
		for (i = 1; i < n; i++)
			if (r->tok_t[i] - r->tok_t[i - 1] > gap)
				gap = r->tok_t[i] - r->tok_t[i - 1];
		cJSON_AddNumberToObject(o, "max_gap_s", gap);
	} else {
		cJSON_AddNullToObject(o, "max_gap_s");
	}
	cJSON_AddNumberToObject(o, "content_chunks", (double)r->n_chunks);
	cJSON_AddNumberToObject(o, "role_chunks", (double)r->n_role_chunks);
	cJSON_AddNumberToObject(o, "retries", (double)r->retries);
	cJSON_AddNumberToObject(o, "counted_tokens", (double)r->n_tokens);
	cJSON_AddNumberToObject(o, "reasoning_tokens", (double)r->n_reasoning_tokens);
	cJSON_AddNumberToObject(o, "answer_tokens", (double)r->n_answer_tokens);
	cJSON_AddStringToObject(o, "token_count_source", load_count_name(r->count_src));
	if (r->usage_prompt >= 0)
		cJSON_AddNumberToObject(o, "prompt_tokens", (double)r->usage_prompt);
	else
		cJSON_AddNullToObject(o, "prompt_tokens");
	if (r->usage_completion >= 0) {
		cJSON_AddNumberToObject(o, "output_tokens", (double)r->usage_completion);
		cJSON_AddStringToObject(o, "tps_source", "usage");
	} else {
		cJSON_AddNumberToObject(o, "output_tokens", (double)r->n_tokens);
		cJSON_AddStringToObject(o, "tps_source", "chunks");
	}
	record_str(o, "finish_reason", r->finish_reason[0] ? r->finish_reason : NULL);
	if (r->text)
		cJSON_AddStringToObject(o, "text", r->text);   /* kept only where outputs are compared */
	if (c->correct && r->index < c->correct->n)
		record_verdict(o, &c->correct->items[r->index]);
	if (c->grades) {
		cJSON_AddStringToObject(o, "verdict", c->grades[r->index]);
		if (c->grade_missing && c->grade_missing[r->index])
			cJSON_AddStringToObject(o, "missing", c->grade_missing[r->index]);
	}
	if (c->anomalies) {
		struct anomaly an;
		cJSON *w = cJSON_AddObjectToObject(o, "anomalies");

		anomaly_of(r, c->vocab_size, &an);
		if (w) {
			if (c->vocab_size > 0 && an.ids_seen)
				cJSON_AddNumberToObject(w, "ids_past_vocab", (double)an.ids_past_vocab);
			else
				cJSON_AddNullToObject(w, "ids_past_vocab");
			if (an.first_past_vocab >= 0)
				cJSON_AddNumberToObject(w, "first_past_vocab_at", (double)an.first_past_vocab);
			cJSON_AddNumberToObject(w, "empty_tokens", (double)an.empty_tokens);
			cJSON_AddNumberToObject(w, "special_repeated", (double)an.special_repeated);
			cJSON_AddBoolToObject(w, "empty_content", an.empty_content);
		}
	}
	if (c->churn && r->index < c->churn->n) {
		const struct churn_req *q = &c->churn->r[r->index];
		cJSON *w = cJSON_AddObjectToObject(o, "churn"), *ta;
		unsigned t = churn_transitions(c->churn, r->index, r), k;

		if (w) {
			cJSON_AddNumberToObject(w, "max_tokens", (double)q->max_tokens);
			if (q->abort_at)
				cJSON_AddNumberToObject(w, "abort_at", (double)q->abort_at);
			else
				cJSON_AddNullToObject(w, "abort_at");
			cJSON_AddBoolToObject(w, "sync", q->sync);
			cJSON_AddStringToObject(w, "prefix", churn_prefix_name(q->prefix));
			ta = cJSON_AddArrayToObject(w, "transitions");
			for (k = 0; ta && k < CHURN_T__COUNT; k++)
				if (t & (1u << k))
					cJSON_AddItemToArray(ta, cJSON_CreateString(churn_transition_name(k)));
		}
	}
	if (c->canary && r->index < c->canary->n)
		record_canary_item(o, c, &c->canary->items[r->index]);
	else if (c->canary_set)
		cJSON_AddStringToObject(o, "marker", canary_text(c->canary_set, (enum canary_kind)c->canary_kind,
								 c->canary_first + r->index));
	if (token_times) {
		tt = cJSON_AddArrayToObject(o, "token_t");
		n = r->n_chunks < LOAD_MAX_TOKENS ? r->n_chunks : LOAD_MAX_TOKENS;
		for (i = 0; tt && i < n; i++)
			cJSON_AddItemToArray(tt, cJSON_CreateNumber(r->tok_t[i]));
		/* the tokens each of those chunks carried (token_count_source says
		 * how that was known) */
		tt = cJSON_AddArrayToObject(o, "token_n");
		for (i = 0; tt && i < n; i++)
			cJSON_AddItemToArray(tt, cJSON_CreateNumber(r->tok_n ? r->tok_n[i] : 1));
	}
	return o;
}

enum status record_run(struct record *w, const struct record_identity *id,
		       const struct record_cell *cell, const struct load_run *run,
		       const struct stats_run *st, bool token_times, struct status_info *si)
{
	cJSON *o = NULL, *v;
	enum status rst = record_gate(id, si);
	size_t i;

	if (rst)
		return rst;
	o = cJSON_CreateObject();
	if (!o)
		return status_set(si, STATUS_NOMEM, "%s: out of memory", w->path);
	cJSON_AddStringToObject(o, "kind", "run");
	cJSON_AddStringToObject(o, "run_id", cell->run_id);
	cJSON_AddStringToObject(o, "phase", cell->phase);
	cJSON_AddNumberToObject(o, "arm_index", (double)cell->arm_index);
	cJSON_AddNumberToObject(o, "repeat", cell->repeat);
	cJSON_AddBoolToObject(o, "has_failures", st->n_failed > 0);
	v = record_identity_json(id);
	if (v)
		cJSON_AddItemToObject(o, "identity", v);
	cJSON_AddNumberToObject(o, "wall_start", run->wall_start);
	cJSON_AddNumberToObject(o, "wall_end", run->wall_end);
	cJSON_AddNumberToObject(o, "mono_start", run->t_start);
	cJSON_AddNumberToObject(o, "mono_end", run->t_end);
	record_cell_json(o, cell, run);
	v = record_stats_json(st);
	if (v)
		cJSON_AddItemToObject(o, "figures", v);
	if (cell->correct && (v = record_correct_json(cell->correct)))
		cJSON_AddItemToObject(o, "correctness", v);
	if (cell->canary && (v = record_canary_json(cell->canary)))
		cJSON_AddItemToObject(o, "canary", v);
	if (cell->churn && (v = cJSON_AddObjectToObject(o, "workload"))) {
		uint64_t n_t[CHURN_T__COUNT] = { 0 };
		cJSON *tr;
		unsigned k;

		for (i = 0; i < run->n; i++) {
			unsigned t = churn_transitions(cell->churn, i, &run->res[i]);

			for (k = 0; k < CHURN_T__COUNT; k++)
				n_t[k] += (t >> k) & 1u;
		}
		cJSON_AddStringToObject(v, "kind", "churn");
		if (cell->churn->max_num_seqs)
			cJSON_AddNumberToObject(v, "max_num_seqs", cell->churn->max_num_seqs);
		else
			cJSON_AddNullToObject(v, "max_num_seqs");
		cJSON_AddNumberToObject(v, "max_tokens", (double)cell->churn->max_tokens);
		cJSON_AddNumberToObject(v, "pressure_words", (double)cell->churn->pressure_words);
		tr = cJSON_AddObjectToObject(v, "transitions");
		for (k = 0; tr && k < CHURN_T__COUNT; k++)
			cJSON_AddNumberToObject(tr, churn_transition_name(k), (double)n_t[k]);
	} else if (!cell->churn && (v = cJSON_AddObjectToObject(o, "workload"))) {
		cJSON_AddStringToObject(v, "kind", "plain");
	}
	rst = record_put(w, o, si);
	cJSON_Delete(o);
	for (i = 0; !rst && i < run->n; i++) {
		o = record_request_json(id, cell, &run->res[i], token_times);
		if (!o)
			return status_set(si, STATUS_NOMEM, "%s: out of memory", w->path);
		rst = record_put(w, o, si);
		cJSON_Delete(o);
	}
	return rst;
}
