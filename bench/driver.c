/*
 * driver.c - a bench run (driver.h): the gates of every arm (readiness, the
 * arm confirmed from the server's output), the prompts, each cell's repeats
 * through the load loop, correctness against a reference, and the records.
 * /metrics is srvmetrics.c, sizing sizer.c, the report benchreport.c.
 */
#include "driver.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "anomaly.h"
#include "arms.h"
#include "benchreport.h"
#include "correct.h"
#include "graded.h"
#include "hash.h"
#include "http.h"
#include "prom.h"
#include "rate.h"
#include "ready.h"
#include "record.h"
#include "sizer.h"
#include "srvmetrics.h"

/* --- progress ------------------------------------------------------------- */

struct driver_prog {
	FILE *f;
	char label[96];
	bool drawn;
};

static void driver_progress(void *ctx, const struct load_progress *p)
{
	struct driver_prog *g = ctx;
	char bar[31];
	size_t i, fill = p->n_total ? p->n_done * 30 / p->n_total : 0;

	for (i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = '\0';
	fprintf(g->f, "\r%-28s [%s] %zu/%zu done  %.0f tok/s  %zu errors ", g->label, bar, p->n_done,
		p->n_total, p->elapsed > 0 ? (double)p->n_chunks / p->elapsed : 0.0, p->n_failed);
	fflush(g->f);
	g->drawn = true;
}

static void driver_progress_end(struct driver_prog *g)
{
	if (g->f && g->drawn) {
		fprintf(g->f, "\r%*s\r", 110, "");
		fflush(g->f);
	}
	g->drawn = false;
}

/* --- the run -------------------------------------------------------------- */

struct driver_arm_state {
	struct record_identity id;
	char model[256];
	char config_hash[32];
	char *ready_json;
	char *arm_json;
	struct load_run *ref;       /* correctness reference, or NULL */
};

struct driver_ctx {
	const struct driver_opts *o;
	struct driver_report *rep;
	struct suite *suite;
	struct driver_arm_state as[DRIVER_MAX_ARMS];
	struct record *rec;
	char host[256];
	struct driver_prog prog;
	struct canary_set *can;     /* --correctness canary: the run's markers */
	size_t can_next;            /* the next sent marker */
};

/* A canary run: which markers its requests carry, and where its verdicts go. */
struct driver_can {
	size_t entry;               /* the suite entry of its first request */
	enum canary_kind kind;      /* CANARY_SENT (checked) or CANARY_CALIB */
	size_t first;               /* its first marker of that kind */
	const struct canary_calib *cal;
	struct canary_report *rep;  /* SENT: the verdicts */
};

static uint64_t driver_key(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	uint64_t k[5] = { a, b, c, d, e };

	return hash_fnv1a(HASH_FNV1A_INIT, k, sizeof(k));
}

/* Builds n requests for arm a: bodies, urls. Caller frees with driver_requests_free. */
struct driver_reqs {
	struct load_request *rq;
	char **bodies;
	char **urls;
	size_t n;
};

static void driver_requests_free(struct driver_reqs *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		if (r->bodies)
			free(r->bodies[i]);
		if (r->urls)
			free(r->urls[i]);
	}
	free(r->bodies);
	free(r->urls);
	free(r->rq);
	memset(r, 0, sizeof(*r));
}

/*
 * nonce_mode: 0 per request (cold: key from cell and request), 1 per prompt
 * (correctness: the reference and the run under test send the same body),
 * 2 shared (warm), 3 none, request i the suite's entry `entry` + i (canary:
 * its marker is unique).
 */
static enum status driver_requests(struct driver_ctx *c, size_t a, size_t n, int nonce_mode,
				   uint64_t cell_key, double temperature, size_t entry,
				   struct churn_plan *plan, struct driver_reqs *r, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct suite_body_opts bo;
	char nonce[SUITE_NONCE_LEN + 1], url[HTTP_MAX_URL];
	const char *route;
	size_t i, p;
	uint64_t key;

	memset(r, 0, sizeof(*r));
	r->rq = calloc(n, sizeof(*r->rq));
	r->bodies = calloc(n, sizeof(char *));
	r->urls = calloc(n, sizeof(char *));
	r->n = n;
	if (!r->rq || !r->bodies || !r->urls)
		return status_set(si, STATUS_NOMEM, "out of memory building requests");
	memset(&bo, 0, sizeof(bo));
	bo.model = c->as[a].model[0] ? c->as[a].model : NULL;
	bo.nonce = nonce;
	bo.temperature = temperature;
	bo.ignore_eos = o->ignore_eos;
	bo.no_usage = o->no_usage;
	/* canary: each request its own entry, its marker keeps it cold */
	bo.return_token_ids = nonce_mode == 3 || o->accuracy;
	for (i = 0; i < n; i++) {
		p = nonce_mode == 3 ? entry + i : i % c->suite->n;
		if (p >= c->suite->n)
			return status_set(si, STATUS_USAGE, "request %zu past the %zu prompts", i, c->suite->n);
		if (nonce_mode == 0)
			key = driver_key(o->corpus_seed, cell_key, i, 1, 0);
		else if (nonce_mode == 1)
			key = driver_key(o->corpus_seed, p, 2, 0, 0);
		else
			key = driver_key(o->corpus_seed, 3, 0, 0, 0);
		suite_nonce(key, nonce);
		bo.nonce = nonce_mode == 3 ? NULL : nonce;
		if (plan) {
			churn_resolve(plan, i, c->suite->e[p].max_tokens);
			bo.max_tokens = plan->r[i].max_tokens;
			bo.preface = churn_preface(plan, i);
			/* the entry decides the API: a chat entry has messages */
			bo.extra = churn_extra(plan, i, c->suite->e[p].messages != NULL);
			r->rq[i].abort_after = (size_t)plan->r[i].abort_at;
		}
		r->bodies[i] = suite_body(c->suite, p, &bo, &route, &r->rq[i].body_len);
		if (!r->bodies[i] || http_join(c->as[a].id.url, route, url, sizeof(url)) ||
		    !(r->urls[i] = strdup(url)))
			return status_set(si, STATUS_NOMEM, "out of memory building requests");
		r->rq[i].url = r->urls[i];
		r->rq[i].body = r->bodies[i];
		r->rq[i].api = !strcmp(route, "/v1/chat/completions") ? LOAD_API_CHAT : LOAD_API_COMPLETIONS;
		r->rq[i].prompt_index = p;
	}
	return STATUS_OK;
}

static void driver_say(const struct driver_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void driver_say(const struct driver_opts *o, const char *fmt, ...)
{
	va_list ap;

	if (!o->log_to)
		return;
	va_start(ap, fmt);
	vfprintf(o->log_to, fmt, ap);
	va_end(ap);
	fputc('\n', o->log_to);
}

/* Readiness and arm confirmation of arm a. false: the gate failed (said in rep). */
#define DRIVER_ARM_SETTLE_TRIES 20        /* 20 x 0.15 s: 3 s at most */
#define DRIVER_ARM_SETTLE_NS 150000000L

/* 1 when the check failed only for want of required lines a log or capture may still receive. */
static int driver_arm_in_flight(const struct arm_result *r)
{
	size_t i;
	int absent = 0;

	for (i = 0; i < r->n_items; i++) {
		const struct arm_item_result *it = &r->items[i];

		if (it->verdict == ARM_FORBIDDEN_PRESENT)
			return 0;
		/* a line, or the start record that holds a process's environment */
		if (it->verdict == ARM_ABSENT && !it->forbid && (it->kind == ARM_LOG || it->kind == ARM_ENV))
			absent = 1;
		else if (it->verdict == ARM_ABSENT || it->verdict == ARM_UNREACHABLE)
			return 0;
	}
	return absent;
}

static enum status driver_gate(struct driver_ctx *c, size_t a, struct arm_spec *spec, bool *passed,
			       struct status_info *si)
{
	const struct driver_opts *o = c->o;
	const struct driver_arm *da = &o->arms[a];
	struct driver_arm_state *s = &c->as[a];
	struct driver_arm_info *info = &c->rep->arms[a];
	struct ready_opts ro;
	struct ready_report rr;
	struct arm_sources src;
	struct arm_result *ar = NULL;
	struct http_response res;
	struct status_info esi;
	enum status st;
	char *buf = NULL, idp[64];
	size_t bufsz = 0, k;
	FILE *mf;

	*passed = false;
	s->id.tool_version = TTAUDIT_VERSION;
	s->id.url = da->url;
	s->id.arm = da->arm;
	s->id.host = c->host;
	snprintf(info->url, sizeof(info->url), "%s", da->url);
	snprintf(info->arm, sizeof(info->arm), "%s", da->arm ? da->arm : "");
	info->arm_state = "none";
	memset(&ro, 0, sizeof(ro));
	ro.url = da->url;
	ro.model = o->model;
	ro.timeout = o->ready_timeout;
	ro.interval = 0.2;
	snprintf(idp, sizeof(idp), "%016" PRIx64 "-a%zu", o->corpus_seed, a);
	ro.request_id_prefix = idp;
	status_info_clear(&esi);
	st = ready_wait(&ro, &rr, &esi);
	s->ready_json = ready_report_json(&rr);
	if (st) {
		c->rep->gate_failed = true;
		snprintf(c->rep->gate_message, sizeof(c->rep->gate_message),
			 "%s: not ready: rung %s did not pass: %s", da->url, ready_rung_name(rr.failed),
			 rr.rung[rr.failed < READY__COUNT ? rr.failed : 0].last_error[0]
				 ? rr.rung[rr.failed < READY__COUNT ? rr.failed : 0].last_error : esi.msg);
		return STATUS_OK;
	}
	s->id.ready = true;
	s->id.ready_json = s->ready_json;
	snprintf(s->model, sizeof(s->model), "%s", rr.model);
	s->id.model = s->model;
	snprintf(info->model, sizeof(info->model), "%s", rr.model);
	driver_say(o, "%s: ready in %.1f s, model %s", da->url, rr.total, rr.model);
	/* the server configuration, from its *_info samples */
	if (!srvmetrics_get(da->url, &res, NULL) &&
	    !srvmetrics_config_hash(res.body, res.n_body, s->config_hash, sizeof(s->config_hash), NULL) &&
	    s->config_hash[0]) {
		s->id.config_hash = s->config_hash;
		snprintf(info->config_hash, sizeof(info->config_hash), "%s", s->config_hash);
	}
	http_response_release(&res);
	if (!da->arm) {
		s->id.arm_state = RECORD_ARM_NONE;
		*passed = true;
		return STATUS_OK;
	}
	if (o->no_arm_check) {
		s->id.arm_state = RECORD_ARM_UNCONFIRMED;
		info->arm_state = "unconfirmed";
		driver_say(o, "arm '%s' at %s: not checked (--no-arm-check), records say unconfirmed",
			   da->arm, da->url);
		*passed = true;
		return STATUS_OK;
	}
	ar = calloc(1, sizeof(*ar));
	if (!ar)
		return status_set(si, STATUS_NOMEM, "out of memory");
	memset(&src, 0, sizeof(src));
	src.url = da->url;
	src.log = da->log;
	src.capture = da->capture;
	st = arm_check(spec, da->arm, &src, ar, si);
	/* A server's log and capture are written while it runs, by its processes
	 * in their own time: a start-up line the engine process has not written
	 * yet when the API already answers is in flight, not absent. Only what
	 * is missing is waited for, a little; forbidden evidence already found
	 * never waits. */
	for (k = 0; !st && !ar->confirmed && (da->log || da->capture) && k < DRIVER_ARM_SETTLE_TRIES &&
		    driver_arm_in_flight(ar); k++) {
		struct timespec ts = { 0, DRIVER_ARM_SETTLE_NS };

		nanosleep(&ts, NULL);
		st = arm_check(spec, da->arm, &src, ar, si);
	}
	if (st) {
		free(ar);
		return st;
	}
	s->arm_json = arm_result_json(ar);
	s->id.arm_evidence = s->arm_json;
	if (!ar->confirmed) {
		s->id.arm_state = RECORD_ARM_FAILED;
		info->arm_state = "failed";
		c->rep->gate_failed = true;
		snprintf(c->rep->gate_message, sizeof(c->rep->gate_message),
			 "arm '%s' at %s: FAIL, not confirmed by the server's output; no record written",
			 da->arm, da->url);
		mf = open_memstream(&buf, &bufsz);
		if (mf) {
			arm_result_print(ar, mf);
			fclose(mf);
			free(c->rep->arm_report);
			c->rep->arm_report = buf;
		}
		free(ar);
		return STATUS_OK;
	}
	free(ar);
	s->id.arm_state = RECORD_ARM_CONFIRMED;
	info->arm_state = "confirmed";
	driver_say(o, "arm '%s' at %s: CONFIRMED", da->arm, da->url);
	*passed = true;
	return STATUS_OK;
}

static void driver_fill_identity(struct driver_ctx *c)
{
	size_t a;

	for (a = 0; a < c->o->n_arms; a++) {
		c->as[a].id.suite_hash = c->suite->hash;
		c->as[a].id.suite_source = c->suite->source;
		c->as[a].id.sizing = c->suite->sizing;
		c->as[a].id.corpus_seed = c->o->corpus_seed;
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
static void driver_accuracy_verdicts(struct driver_report *rep, size_t n_levels)
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

/* The largest max_tokens of the suite's entries: churn's M. */
static long driver_max_tokens(const struct suite *su)
{
	long m = 2;
	size_t i;

	for (i = 0; i < su->n; i++)
		if (su->e[i].max_tokens > m)
			m = su->e[i].max_tokens;
	return m;
}

/* The token anomalies of a run's outputs into its cell. */
static void driver_tally_anomalies(struct driver_cell *dc, const struct load_run *run, long vocab)
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

/* One load run of arm a; records it; hands back the run and its figures. */
static enum status driver_one(struct driver_ctx *c, size_t a, const char *phase, enum load_arrival arr,
			      double level, unsigned rep, size_t n, int nonce_mode, double temperature,
			      bool keep_text, const struct load_run *ref, const struct driver_can *dcan,
			      struct load_run **out_run, struct stats_run *out_st, struct correct_report *corr,
			      struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct driver_reqs rq;
	struct load_opts lo;
	struct record_cell cell;
	struct churn_plan plan;
	bool have_plan = false;
	const char **grades = NULL, **missing = NULL;
	char run_id[160];
	double h0 = 0, h1 = 0;
	bool h0_ok, h1_ok;
	enum status st;
	uint64_t cell_key = driver_key(a, (uint64_t)(level * 1000), rep, phase[0], 7);

	*out_run = NULL;
	memset(out_st, 0, sizeof(*out_st));
	memset(corr, 0, sizeof(*corr));
	memset(&plan, 0, sizeof(plan));
	memset(&rq, 0, sizeof(rq));
	if (dcan)
		nonce_mode = 3;
	/* churn shapes the runs under test, never a reference or a calibration */
	if (o->churn && (!strcmp(phase, "bench") || !strcmp(phase, "canary") || !strcmp(phase, "correctness") ||
			 !strcmp(phase, "accuracy"))) {
		/* accuracy: the same plan for every server at a level, so the
		 * control sees the treatment's workload */
		st = churn_plan_make(&plan, driver_key(o->corpus_seed, o->accuracy ?
							driver_key((uint64_t)(level * 1000), rep, 5, 0, 0) : cell_key,
							11, 0, 0), n,
				     driver_max_tokens(c->suite), o->max_num_seqs,
				     o->churn_pressure ? o->churn_pressure : 512, !o->correctness, si);
		if (st)
			goto out;
		have_plan = true;
	}
	st = driver_requests(c, a, n, nonce_mode, cell_key, temperature, dcan ? dcan->entry : 0,
			     have_plan ? &plan : NULL, &rq, si);
	if (st)
		goto out;
	snprintf(run_id, sizeof(run_id), "%016" PRIx64 "-%s-a%zu-%g-r%u", o->corpus_seed, phase, a, level, rep);
	memset(&lo, 0, sizeof(lo));
	lo.request_id_prefix = run_id;
	lo.arrival = arr;
	lo.concurrency = arr == LOAD_CLOSED ? (unsigned)level : 0;
	lo.rate = arr == LOAD_POISSON ? level : 0;
	lo.seed = o->arrival_seed + rep;
	lo.timeout_s = o->timeout_s;
	lo.stall_s = o->stall_s;
	lo.keep_text = keep_text || dcan || o->accuracy;
	lo.keep_ids = dcan != NULL || o->accuracy;
	lo.loop_times = o->loop_times;
	if (o->progress) {
		c->prog.f = o->progress;
		snprintf(c->prog.label, sizeof(c->prog.label), "%s%s%.24s %s%g rep %u", phase,
			 o->arms[a].arm ? " " : "", o->arms[a].arm ? o->arms[a].arm : "",
			 arr == LOAD_CLOSED ? "c=" : arr == LOAD_BATCH ? "b=" : "r=", level, rep + 1);
		lo.progress = driver_progress;
		lo.progress_ctx = &c->prog;
	}
	h0_ok = srvmetrics_read_hits(c->as[a].id.url, &h0);
	st = load_run_exec(&lo, rq.rq, rq.n, out_run, si);
	driver_progress_end(&c->prog);
	if (st)
		goto out;
	h1_ok = h0_ok && srvmetrics_read_hits(c->as[a].id.url, &h1);
	st = stats_run_compute(*out_run, out_st, si);
	if (st)
		goto out;
	if (ref) {
		st = correct_compare(c->suite, ref, *out_run, corr, si);
		if (st)
			goto out;
	}
	if (o->accuracy && !strcmp(phase, "accuracy")) {
		size_t i;

		grades = calloc((*out_run)->n ? (*out_run)->n : 1, sizeof(*grades));
		missing = calloc((*out_run)->n ? (*out_run)->n : 1, sizeof(*missing));
		if (!grades || !missing) {
			st = status_set(si, STATUS_NOMEM, "out of memory");
			goto out;
		}
		for (i = 0; i < (*out_run)->n; i++) {
			const struct load_result *x = &(*out_run)->res[i];
			const struct suite_entry *e = &c->suite->e[x->prompt_index];

			if (x->fail)
				grades[i] = "failed";
			else if (x->aborted || (have_plan && plan.r[i].max_tokens < plan.r[i].entry_max))
				grades[i] = "cut";   /* cut short by design: no answer to grade */
			else
				grades[i] = (missing[i] = correct_missing(e, x->text)) ? "wrong" : "right";
		}
	}
	if (dcan) {
		size_t i;

		/* every request's end first: a donor in this run is then known */
		for (i = 0; i < (*out_run)->n; i++) {
			const struct load_result *x = &(*out_run)->res[i];

			/* a donor has finished once its last token came (or the
			 * client cancelled it), not only at [DONE] */
			canary_note(c->can, dcan->kind, dcan->first + i, x->xid[0] ? x->xid : x->id,
				    x->aborted || !x->t_last ? x->t_end : x->t_last, x->aborted);
		}
		if (dcan->rep) {
			st = canary_check(c->can, dcan->cal, *out_run, dcan->first, dcan->rep, si);
			if (st)
				goto out;
		}
	}
	memset(&cell, 0, sizeof(cell));
	cell.run_id = run_id;
	cell.phase = phase;
	cell.arm_index = a;
	cell.repeat = rep;
	cell.arrival = arr;
	cell.concurrency = arr == LOAD_CLOSED ? (unsigned)level : 0;
	cell.batch = arr == LOAD_BATCH ? (unsigned)level : 0;
	cell.rate = arr == LOAD_POISSON ? level : 0;
	cell.arrival_seed = lo.seed;
	/* churn sends a shared prefix on purpose: no cold claim to check */
	cell.cache_claim = have_plan ? "shared-prefix" : nonce_mode == 0 || nonce_mode == 3 ? "cold" : "warm";
	cell.prefix_known = h1_ok;
	cell.prefix_hits_delta = h1 - h0;
	cell.cold_claim_valid = h1_ok && h1 - h0 <= 0;
	cell.temperature = temperature;
	cell.correct = ref ? corr : NULL;
	cell.canary = dcan ? dcan->rep : NULL;
	cell.canary_set = dcan ? c->can : NULL;
	cell.canary_first = dcan ? dcan->first : 0;
	cell.canary_kind = dcan ? (int)dcan->kind : 0;
	cell.churn = have_plan ? &plan : NULL;
	cell.anomalies = dcan != NULL || grades;
	cell.grades = grades;
	cell.grade_missing = missing;
	cell.vocab_size = o->vocab_size;
	st = record_run(c->rec, &c->as[a].id, &cell, *out_run, out_st, o->token_times, si);
	if (st)
		goto out;
	if (grades) {
		size_t i, li;
		struct driver_cell *dc = NULL;

		for (li = 0; li < o->n_levels; li++)
			if (o->levels[li] == level)
				dc = &c->rep->cells[a * o->n_levels + li];
		for (i = 0; dc && i < (*out_run)->n; i++) {
			dc->acc_cut += !strcmp(grades[i], "cut");
			dc->acc_failed += !strcmp(grades[i], "failed");
			if (!strcmp(grades[i], "right") || !strcmp(grades[i], "wrong")) {
				dc->acc_n++;
				dc->acc_right += !strcmp(grades[i], "right");
			}
		}
		if (dc)
			driver_tally_anomalies(dc, *out_run, o->vocab_size);
	}
	if (have_plan) {
		size_t i, k;

		for (i = 0; i < (*out_run)->n; i++) {
			unsigned t = churn_transitions(&plan, i, &(*out_run)->res[i]);

			for (k = 0; k < CHURN_T__COUNT; k++)
				c->rep->transitions[k] += (t >> k) & 1u;
		}
	}
	if (!have_plan && (nonce_mode == 0 || (nonce_mode == 3 && dcan->kind == CANARY_SENT))) {
		struct driver_cell *dc = NULL;
		size_t li;

		for (li = 0; li < o->n_levels; li++)
			if (o->levels[li] == level)
				dc = &c->rep->cells[a * o->n_levels + li];
		if (dc) {
			if (!h1_ok)
				dc->n_cold_unchecked++;
			else if (h1 - h0 > 0)
				dc->n_cold_invalid++;
			dc->prefix_hits += h1_ok ? h1 - h0 : 0;
		}
	}
out:
	driver_requests_free(&rq);
	churn_plan_release(&plan);
	free(grades);
	free(missing);
	if (st) {
		load_run_free(*out_run);
		*out_run = NULL;
		stats_run_release(out_st);
		correct_report_release(corr);
	}
	return st;
}

/* Copies figures of a run into dst (staircase duplicated). */
static enum status driver_keep(struct stats_run *dst, const struct stats_run *src)
{
	stats_run_release(dst);
	*dst = *src;
	dst->staircase = NULL;
	if (src->n_staircase) {
		dst->staircase = malloc(src->n_staircase * sizeof(double));
		if (!dst->staircase)
			return STATUS_NOMEM;
		memcpy(dst->staircase, src->staircase, src->n_staircase * sizeof(double));
	}
	return STATUS_OK;
}

static void driver_tally(struct driver_cell *dc, const struct load_run *run, const struct stats_run *st,
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

static void driver_tally_canary(struct driver_cell *dc, const struct canary_report *cr,
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
static void driver_canary_verdict(const struct driver_report *rep, struct driver_cell *dc)
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

/* Requests of a run at `level` (the suite's n for the usual stage). */
static size_t driver_cell_n(const struct driver_opts *o, double level, size_t suite_n)
{
	if (o->arrival == LOAD_BATCH)
		return (size_t)level;
	if (o->n_requests)
		return o->n_requests;
	if (o->churn)
		/* two waves at least: rows freed and filled again */
		return level < 32 || o->arrival == LOAD_POISSON ? 64 : 2 * (size_t)ceil(level);
	if (o->canary)
		return o->arrival == LOAD_POISSON || level < 32 ? 32 : (size_t)ceil(level);
	return suite_n > (size_t)level ? suite_n : (size_t)ceil(level);
}

/*
 * The canary's markers by the server's tokenizer, for the search of token
 * ids: every marker as it stands in an answer (after a space), the task's
 * own words as the ids every marker shares. Off, with the reason in the arm's
 * note, when the server sends no ids or has no tokenizer route.
 */
static enum status driver_canary_ids(struct driver_ctx *c, struct status_info *si)
{
	struct driver_report *rep = c->rep;
	struct sizer *z = NULL;
	struct status_info esi;
	int64_t ids[CANARY_MAX_IDS], common[4 * CANARY_MAX_IDS];
	size_t k, i, n, n_common = 0, a;
	char text[CANARY_MARKER_LEN + 2], idp[64];
	enum status st;
	static const char *const words[] = { "Code: \nCopy: \nCopy:",
		"Code: \nRepeat the code four times, separated by spaces, and write nothing else." };

	for (a = 0; a < c->o->n_arms; a++)
		if (!rep->arms[a].cal.ids_returned || strcmp(rep->arms[a].model, rep->arms[0].model)) {
			for (k = 0; k < c->o->n_arms; k++)
				snprintf(rep->arms[k].ids_note, sizeof(rep->arms[k].ids_note), "%s",
					 !rep->arms[a].cal.ids_returned ?
					 "token ids not searched: a server sent none with its chunks" :
					 "token ids not searched: the servers serve different models");
			return STATUS_OK;
		}
	snprintf(idp, sizeof(idp), "%016" PRIx64 "-canary", c->o->corpus_seed);
	st = sizer_new(&z, c->o->arms[0].url, rep->arms[0].model[0] ? rep->arms[0].model : NULL, idp, si);
	if (st)
		return st;
	status_info_clear(&esi);
	for (i = 0; i < 2 && !st; i++) {
		st = sizer_ids(z, words[i], common + n_common, 2 * CANARY_MAX_IDS, &n, &esi);
		n_common += n;
	}
	for (k = 0; k < CANARY__KINDS && !st; k++)
		for (i = 0; i < canary_count(c->can, (enum canary_kind)k) && !st; i++) {
			snprintf(text, sizeof(text), " %s", canary_text(c->can, (enum canary_kind)k, i));
			st = sizer_ids(z, text, ids, CANARY_MAX_IDS, &n, &esi);
			if (!st)
				canary_set_ids(c->can, (enum canary_kind)k, i, ids, n);
		}
	sizer_free(z);
	if (st) {
		for (a = 0; a < c->o->n_arms; a++)
			snprintf(rep->arms[a].ids_note, sizeof(rep->arms[a].ids_note),
				 "token ids not searched: no tokenizer (%.90s)", esi.msg);
		return STATUS_OK;
	}
	st = canary_ids_done(c->can, common, n_common, si);
	for (a = 0; !st && a < c->o->n_arms; a++)
		rep->arms[a].ids_searched = true;
	return st;
}

static enum status driver_check_opts(const struct driver_opts *o, struct status_info *si)
{
	size_t i;

	if (!o->n_arms)
		return status_set(si, STATUS_USAGE, "no server (--url)");
	if (o->n_arms > DRIVER_MAX_ARMS)
		return status_set(si, STATUS_USAGE, "more than %d servers", DRIVER_MAX_ARMS);
	if (!o->n_levels || o->n_levels > DRIVER_MAX_LEVELS)
		return status_set(si, STATUS_USAGE, "%zu levels (want 1 to %d)", o->n_levels, DRIVER_MAX_LEVELS);
	if (!o->repeats || o->repeats > DRIVER_MAX_REPEATS)
		return status_set(si, STATUS_USAGE, "repeats %u (want 1 to %d)", o->repeats, DRIVER_MAX_REPEATS);
	if (!o->out)
		return status_set(si, STATUS_USAGE, "no record file (-o)");
	for (i = 0; i < o->n_levels; i++) {
		if (o->arrival == LOAD_POISSON ? !(o->levels[i] > 0)
					       : (o->levels[i] < 1 || o->levels[i] > LOAD_MAX_INFLIGHT ||
						  o->levels[i] != floor(o->levels[i])))
			return status_set(si, STATUS_USAGE, "level %g is not valid for %s arrivals",
					  o->levels[i], record_arrival_name(o->arrival));
	}
	for (i = 0; i < o->n_arms; i++)
		if (o->arms[i].arm && !o->no_arm_check && !o->spec)
			return status_set(si, STATUS_USAGE, "arm '%s' named without --spec (or --no-arm-check)",
					  o->arms[i].arm);
	if (o->arrival == LOAD_BATCH && o->n_requests)
		return status_set(si, STATUS_USAGE, "--requests does not apply to --batch (a run is one batch "
				  "of the level's size; use --repeats)");
	if (o->correctness && o->warm)
		return status_set(si, STATUS_USAGE, "--correctness and --warm together (correctness sends "
				  "the reference's bodies)");
	if (o->churn && (o->arrival == LOAD_BATCH || o->warm))
		return status_set(si, STATUS_USAGE, "--workload churn is a closed loop or Poisson arrivals, "
				  "cold: not with --batch or --warm");
	if (o->accuracy && (o->warm || o->correctness || o->canary))
		return status_set(si, STATUS_USAGE, "--correctness accuracy is a stage of its own");
	if (o->canary && (o->suite || o->warm || o->correctness))
		return status_set(si, STATUS_USAGE, "--correctness canary writes its own prompts: not with "
				  "--suite, --warm or the reference stage");
	return STATUS_OK;
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
static void driver_verdict_of(const struct driver_report *rep, struct driver_cell *dc)
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

enum status driver_run(const struct driver_opts *o, struct driver_report *rep, struct status_info *si)
{
	struct driver_ctx c;
	struct arm_spec *spec = NULL;
	struct suite_sizer sz;
	struct load_run *run = NULL;
	struct stats_run st_run;
	struct correct_report corr;
	enum status st;
	size_t a, li, n, i;
	unsigned r;
	bool passed;
	double temp;
	struct stats_run *keep = NULL;    /* [cell][repeat] figures */
	struct canary_report crep;

	memset(rep, 0, sizeof(*rep));
	memset(&crep, 0, sizeof(crep));
	memset(&c, 0, sizeof(c));
	memset(&st_run, 0, sizeof(st_run));
	memset(&corr, 0, sizeof(corr));
	st = driver_check_opts(o, si);
	if (st)
		return st;
	/* the ready gate takes a failed exchange for a server not ready: a
	 * missing libcurl is said as what it is first */
	st = http_init(si);
	if (st)
		return st;
	c.o = o;
	c.rep = rep;
	rep->n_arms = o->n_arms;
	rep->arrival = o->arrival;
	rep->correctness = o->correctness;
	rep->canary = o->canary;
	rep->accuracy = o->accuracy;
	rep->control = o->accuracy && o->n_arms >= 2 ? o->n_arms - 1 : SIZE_MAX;
	rep->vocab_size = o->vocab_size;
	rep->churn = o->churn;
	rep->max_num_seqs = o->max_num_seqs;
	rep->confidence = o->confidence > 0 && o->confidence < 1 ? o->confidence : 0.95;
	rep->baseline = o->baseline > 0 && o->baseline < 1 ? o->baseline : 0;
	rep->warm = o->warm;
	rep->corpus_seed = o->corpus_seed;
	if (gethostname(c.host, sizeof(c.host) - 1))
		snprintf(c.host, sizeof(c.host), "unknown");
	rep->n_cells = o->n_arms * o->n_levels;
	rep->cells = calloc(rep->n_cells, sizeof(*rep->cells));
	keep = calloc(rep->n_cells * o->repeats, sizeof(*keep));
	if (!rep->cells || !keep) {
		st = status_set(si, STATUS_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < rep->n_cells; i++) {
		rep->cells[i].arm_index = i / o->n_levels;
		rep->cells[i].level = o->levels[i % o->n_levels];
		rep->cells[i].tok_s = calloc(o->repeats, sizeof(double));
		if (!rep->cells[i].tok_s) {
			st = status_set(si, STATUS_NOMEM, "out of memory");
			goto out;
		}
	}
	/* bad input is refused before any server is waited for */
	if (o->suite) {
		st = suite_load(&c.suite, o->suite, si);
		if (st)
			goto out;
	}
	/* 1. gates */
	if (o->spec && !o->no_arm_check) {
		st = arm_spec_load(o->spec, &spec, si);
		if (st)
			goto out;
	}
	for (a = 0; a < o->n_arms; a++) {
		st = driver_gate(&c, a, spec, &passed, si);
		if (st)
			goto out;
		if (!passed)
			goto out;   /* rep->gate_failed says why */
	}
	/* 2. prompts */
	if (o->canary) {
		size_t total = 0;

		for (r = 0; r < o->repeats; r++)
			for (li = 0; li < o->n_levels; li++)
				total += o->n_arms * driver_cell_n(o, o->levels[li], 0);
		st = canary_set_new(o->corpus_seed, total, CANARY_CALIBRATION * o->n_arms, &c.can, si);
		if (!st)
			st = canary_suite(c.can, o->gen.chat, o->gen.max_tokens > 0 ? o->gen.max_tokens : 16,
					  &c.suite, si);
		if (st)
			goto out;
	} else if (o->accuracy && !o->suite) {
		st = graded_suite(o->corpus_seed, o->gen.chat, o->gen.max_tokens > 0 ? o->gen.max_tokens : 48,
				  &c.suite, si);
		if (st)
			goto out;
	} else if (!o->suite) {
		struct sizer *z = NULL;

		char idp[64];

		/* its requests named like the load's (the corpus seed first) */
		snprintf(idp, sizeof(idp), "%016" PRIx64, o->corpus_seed);
		st = sizer_new(&z, o->arms[0].url, c.as[0].model[0] ? c.as[0].model : NULL, idp, si);
		if (st)
			goto out;
		sizer_bind(z, &sz);
		st = suite_generate(&c.suite, &o->gen, &sz, si);
		/* how the server's tokenizer was asked, or why it was not used */
		if (!st)
			sizer_refine(z, c.suite->sizing, sizeof(c.suite->sizing));
		sizer_free(z);
		if (st)
			goto out;
	}
	snprintf(rep->suite_hash, sizeof(rep->suite_hash), "%s", c.suite->hash);
	snprintf(rep->suite_source, sizeof(rep->suite_source), "%s", c.suite->source);
	snprintf(rep->sizing, sizeof(rep->sizing), "%s", c.suite->sizing);
	rep->suite_n = c.suite->n;
	driver_fill_identity(&c);
	st = record_open(&c.rec, o->out, si);
	if (st)
		goto out;
	/* 3. the reference; the canary's calibration */
	temp = o->correctness || o->canary || o->accuracy ? 0.0 : o->temperature;
	if (o->canary) {
		for (a = 0; a < o->n_arms; a++) {
			struct driver_can dcan = { canary_count(c.can, CANARY_SENT) + a * CANARY_CALIBRATION,
						   CANARY_CALIB, a * CANARY_CALIBRATION, NULL, NULL };

			st = driver_one(&c, a, "calibration", LOAD_CLOSED, 1, 0, CANARY_CALIBRATION, 3, 0.0, true,
					NULL, &dcan, &run, &st_run, &corr, si);
			if (st)
				goto out;
			canary_calibrate(c.can, run, a * CANARY_CALIBRATION, &rep->arms[a].cal);
			stats_run_release(&st_run);
			load_run_free(run);
			run = NULL;
		}
		st = driver_canary_ids(&c, si);
		if (st)
			goto out;
	}
	if (o->correctness) {
		for (a = 0; a < o->n_arms; a++) {
			st = driver_one(&c, a, "reference", LOAD_CLOSED, 1, 0, c.suite->n, 1, 0.0, true, NULL, NULL,
					&c.as[a].ref, &st_run, &corr, si);
			if (st)
				goto out;
			for (i = 0; i < c.as[a].ref->n; i++) {
				const struct load_result *x = &c.as[a].ref->res[i];

				rep->arms[a].ref_requests++;
				if (x->fail)
					rep->arms[a].ref_failed++;
				else if (correct_missing(&c.suite->e[x->prompt_index], x->text))
					rep->arms[a].ref_wrong++;
			}
			rep->ref_wrong += rep->arms[a].ref_wrong;
			rep->ref_failed += rep->arms[a].ref_failed;
			stats_run_release(&st_run);
		}
	}
	/* 4. the cells, arms interleaved */
	for (r = 0; r < o->repeats; r++)
		for (li = 0; li < o->n_levels; li++)
			for (a = 0; a < o->n_arms; a++) {
				struct driver_cell *dc = &rep->cells[a * o->n_levels + li];
				double level = o->levels[li];

				struct driver_can dcan = { c.can_next, CANARY_SENT, c.can_next, &rep->arms[a].cal, &crep };

				n = driver_cell_n(o, level, c.suite->n);
				if (o->canary)
					c.can_next += n;
				st = driver_one(&c, a, o->correctness ? "correctness" : o->canary ? "canary" :
						o->accuracy ? "accuracy" : "bench",
						o->arrival, level, r, n, o->correctness ? 1 : o->warm ? 2 : 0, temp,
						o->correctness, o->correctness ? c.as[a].ref : NULL,
						o->canary ? &dcan : NULL, &run, &st_run, &corr, si);
				if (st)
					goto out;
				driver_tally(dc, run, &st_run, &corr, o->correctness);
				if (o->canary) {
					driver_tally_anomalies(dc, run, o->vocab_size);
					driver_tally_canary(dc, &crep, run, c.can);
					canary_report_release(&crep);
				}
				dc->tok_s[r] = st_run.out_tok_s;
				dc->n_repeats = r + 1;
				keep[(a * o->n_levels + li) * o->repeats + r] = st_run;
				memset(&st_run, 0, sizeof(st_run));
				correct_report_release(&corr);
				load_run_free(run);
				run = NULL;
			}
	/* 5. medians */
	for (i = 0; i < rep->n_cells; i++) {
		struct driver_cell *dc = &rep->cells[i];
		size_t k;

		dc->median_repeat = stats_median_repeat(dc->tok_s, dc->n_repeats, &dc->spread);
		dc->unstable = dc->spread > STATS_UNSTABLE_SPREAD;
		st = driver_keep(&dc->median, &keep[i * o->repeats + dc->median_repeat]);
		if (st) {
			st = status_set(si, st, "out of memory");
			goto out;
		}
		rep->any_unstable |= dc->unstable;
		rep->any_cold_invalid |= dc->n_cold_invalid > 0;
		rep->total_requests += dc->n_requests;
		rep->total_failed += dc->n_failed;
		rep->stamped_kernel += dc->stamped_kernel;
		rep->retried += dc->retried;
		rep->stamped_loop += dc->stamped_loop;
		if (dc->send_delay_max > rep->send_delay_max)
			rep->send_delay_max = dc->send_delay_max;
		for (k = 0; k < LOAD_FAIL__COUNT; k++)
			rep->n_fail[k] += dc->n_fail[k];
		rep->corr_requests += dc->corr_requests;
		rep->corr_failing += dc->corr_failing;
		if (o->canary) {
			driver_canary_verdict(rep, dc);
			rep->can_requests += dc->can_requests;
			rep->can_leaked += dc->can_leaked;
			rep->can_lost += dc->can_lost;
			rep->can_decoy += dc->can_decoy;
			rep->an_past_vocab += dc->an_past_vocab;
			rep->an_special += dc->an_special;
			rep->an_empty_tokens += dc->an_empty_tokens;
			rep->an_empty += dc->an_empty;
			if (dc->can_verdict == DRIVER_FAIL ||
			    (dc->can_verdict == DRIVER_INCONCLUSIVE && rep->can_verdict == DRIVER_PASS))
				rep->can_verdict = dc->can_verdict;
		}
		if (o->correctness) {
			driver_verdict_of(rep, dc);
			/* the worst: FAIL over INCONCLUSIVE over PASS */
			if (dc->corr_verdict == DRIVER_FAIL ||
			    (dc->corr_verdict == DRIVER_INCONCLUSIVE && rep->corr_verdict == DRIVER_PASS))
				rep->corr_verdict = dc->corr_verdict;
		}
	}
	if (o->accuracy)
		driver_accuracy_verdicts(rep, o->n_levels);
	{
		char *js = benchreport_json(rep);

		if (!js) {
			st = status_set(si, STATUS_NOMEM, "out of memory");
			goto out;
		}
		st = record_line(c.rec, js, si);
		free(js);
	}
out:
	if (c.rec) {
		enum status cst = record_close(c.rec, st ? NULL : si);

		if (!st)
			st = cst;
	}
	if (keep)
		for (i = 0; i < rep->n_cells * o->repeats; i++)
			stats_run_release(&keep[i]);
	free(keep);
	stats_run_release(&st_run);
	correct_report_release(&corr);
	load_run_free(run);
	for (a = 0; a < DRIVER_MAX_ARMS; a++) {
		free(c.as[a].ready_json);
		free(c.as[a].arm_json);
		load_run_free(c.as[a].ref);
	}
	suite_free(c.suite);
	canary_set_free(c.can);
	canary_report_release(&crep);
	arm_spec_free(spec);
	return st;
}

void driver_report_release(struct driver_report *rep)
{
	size_t i;

	for (i = 0; rep->cells && i < rep->n_cells; i++) {
		stats_run_release(&rep->cells[i].median);
		free(rep->cells[i].tok_s);
	}
	free(rep->cells);
	free(rep->arm_report);
	memset(rep, 0, sizeof(*rep));
}

