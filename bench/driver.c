#include "driver.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arms.h"
#include "correct.h"
#include "http.h"
#include "prom.h"
#include "rate.h"
#include "ready.h"
#include "record.h"

#define DRIVER_HTTP_TIMEOUT 30.0

/* --- /metrics ------------------------------------------------------------- */

static int driver_label_cmp(const void *a, const void *b)
{
	const struct prom_label *x = *(const struct prom_label *const *)a;
	const struct prom_label *y = *(const struct prom_label *const *)b;

	return strcmp(x->name, y->name);
}

enum status driver_config_hash(const char *metrics, size_t n, char *out, size_t n_out,
			       struct status_info *si)
{
	struct prom *p = NULL;
	const struct prom_sample *s;
	const struct prom_label *lab[PROM_MAX_LABELS];
	size_t i, j, k, n_info = 0, len;
	uint64_t h = SUITE_FNV_INIT;
	enum status st;

	out[0] = '\0';
	st = prom_parse(metrics, n, &p, si);
	if (st)
		return st;
	for (i = 0; i < prom_n_samples(p); i++) {
		s = prom_sample(p, i);
		len = strlen(s->name);
		if (len < 5 || strcmp(s->name + len - 5, "_info"))
			continue;
		n_info++;
		h = suite_fnv(h, s->name, len + 1);
		k = s->n_labels < PROM_MAX_LABELS ? s->n_labels : PROM_MAX_LABELS;
		for (j = 0; j < k; j++)
			lab[j] = &s->labels[j];
		qsort(lab, k, sizeof(lab[0]), driver_label_cmp);
		for (j = 0; j < k; j++) {
			h = suite_fnv(h, lab[j]->name, strlen(lab[j]->name) + 1);
			h = suite_fnv(h, lab[j]->value, strlen(lab[j]->value) + 1);
		}
	}
	prom_free(p);
	if (n_info)
		snprintf(out, n_out, "fnv1a64:%016" PRIx64, h);
	return STATUS_OK;
}

enum status driver_prefix_hits(const char *metrics, size_t n, double *hits, struct status_info *si)
{
	static const char *const names[] = { "vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits" };
	struct prom *p = NULL;
	const struct prom_sample *s;
	size_t i, k;
	bool found = false;
	enum status st;

	*hits = 0;
	st = prom_parse(metrics, n, &p, si);
	if (st)
		return st;
	for (k = 0; k < 2 && !found; k++)
		for (i = 0; i < prom_n_samples(p); i++) {
			s = prom_sample(p, i);
			if (strcmp(s->name, names[k]))
				continue;
			found = true;
			*hits += s->value;
		}
	prom_free(p);
	if (!found)
		return status_set(si, STATUS_NOTFOUND, "/metrics has no vllm:prefix_cache_hits counter");
	return STATUS_OK;
}

/* GETs base/metrics; body in res (caller releases). */
static enum status driver_metrics(const char *base, struct http_response *res, struct status_info *si)
{
	char url[HTTP_MAX_URL];
	enum status st;

	memset(res, 0, sizeof(*res));
	st = http_join(base, "/metrics", url, sizeof(url));
	if (st)
		return status_set(si, st, "%s: url too long", base);
	st = http_get(url, DRIVER_HTTP_TIMEOUT, 0, res, si);
	if (!st && res->status != 200)
		st = status_set(si, STATUS_HTTP, "%s: http %ld", url, res->status);
	return st;
}

static bool driver_read_hits(const char *base, double *hits)
{
	struct http_response res;
	bool ok;

	ok = !driver_metrics(base, &res, NULL) &&
	     !driver_prefix_hits(res.body, res.n_body, hits, NULL);
	http_response_release(&res);
	return ok;
}

/* --- sizing through the server -------------------------------------------- */

struct driver_sizer {
	const char *base;
	const char *model;
	int shape;           /* how /tokenize answered: 0 not yet, 1 vLLM's `prompt`,
			      * 2 llama-server's `content` */
	bool empty;          /* it answered no tokens for non-empty text */
};

static cJSON *driver_prompt_json(const struct driver_sizer *z, const char *text, bool chat)
{
	cJSON *o = cJSON_CreateObject(), *arr, *m;

	if (!o)
		return NULL;
	if (z->model)
		cJSON_AddStringToObject(o, "model", z->model);
	if (chat) {
		arr = cJSON_AddArrayToObject(o, "messages");
		m = cJSON_CreateObject();
		if (!arr || !m) {
			cJSON_Delete(m);
			cJSON_Delete(o);
			return NULL;
		}
		cJSON_AddStringToObject(m, "role", "user");
		cJSON_AddStringToObject(m, "content", text);
		cJSON_AddItemToArray(arr, m);
	} else {
		cJSON_AddStringToObject(o, "prompt", text);
	}
	return o;
}

static enum status driver_post(const char *base, const char *path, cJSON *body, cJSON **reply,
			       long *status, struct status_info *si)
{
	char url[HTTP_MAX_URL], *js = NULL;
	struct http_response res;
	enum status st;

	*reply = NULL;
	memset(&res, 0, sizeof(res));
	st = http_join(base, path, url, sizeof(url));
	if (st)
		return status_set(si, st, "%s: url too long", base);
	js = cJSON_PrintUnformatted(body);
	if (!js)
		return status_set(si, STATUS_NOMEM, "out of memory");
	st = http_post_json(url, js, DRIVER_HTTP_TIMEOUT, 0, &res, si);
	free(js);
	if (st)
		goto out;
	*status = res.status;
	if (res.status == 200) {
		*reply = cJSON_ParseWithLength(res.body, res.n_body);
		if (!*reply)
			st = status_set(si, STATUS_PARSE, "%s: answer is not json", url);
	}
out:
	http_response_release(&res);
	return st;
}

static enum status driver_count(void *ctx, const char *text, bool chat, long *n, struct status_info *si)
{
	struct driver_sizer *z = ctx;
	cJSON *b = driver_prompt_json(z, text, chat), *r = NULL, *v;
	long status = 0;
	enum status st;

	if (!b)
		return STATUS_NOMEM;
	if (z->shape == 2) {
		/* llama-server's shape: {"content": text}, no chat template */
		cJSON_DeleteItemFromObjectCaseSensitive(b, "prompt");
		cJSON_DeleteItemFromObjectCaseSensitive(b, "model");
		cJSON_AddStringToObject(b, "content", text);
	}
	st = driver_post(z->base, "/tokenize", b, &r, &status, si);
	cJSON_Delete(b);
	if (st)
		return st;
	if (status == 404 || status == 405)
		return status_set(si, STATUS_NOTFOUND, "%s/tokenize: http %ld", z->base, status);
	if (status != 200) {
		cJSON_Delete(r);
		return status_set(si, STATUS_HTTP, "%s/tokenize: http %ld", z->base, status);
	}
	v = cJSON_GetObjectItemCaseSensitive(r, "count");
	if (cJSON_IsNumber(v)) {
		*n = (long)v->valuedouble;
	} else if (cJSON_IsArray(v = cJSON_GetObjectItemCaseSensitive(r, "tokens"))) {
		*n = cJSON_GetArraySize(v);
	} else {
		cJSON_Delete(r);
		return status_set(si, STATUS_PARSE, "%s/tokenize: answer has no count", z->base);
	}
	cJSON_Delete(r);
	/* no tokens for text that has some is no tokenizer's answer (llama-server
	 * sent `prompt` answers {"tokens": []}): try its own shape once, for
	 * plain text only (it applies no chat template), else there is none */
	if (*n == 0 && *text) {
		if (z->shape == 0 && !chat) {
			z->shape = 2;
			return driver_count(ctx, text, chat, n, si);
		}
		z->empty = true;
		return status_set(si, STATUS_NOTFOUND, "%s/tokenize: no tokens for non-empty text", z->base);
	}
	if (!z->shape)
		z->shape = 1;
	return STATUS_OK;
}

static enum status driver_probe(void *ctx, const char *text, bool chat, long *n, struct status_info *si)
{
	struct driver_sizer *z = ctx;
	cJSON *b = driver_prompt_json(z, text, chat), *r = NULL, *u, *v;
	long status = 0;
	enum status st;
	const char *path = chat ? "/v1/chat/completions" : "/v1/completions";

	if (!b || !cJSON_AddNumberToObject(b, "max_tokens", 1) ||
	    !cJSON_AddNumberToObject(b, "temperature", 0)) {
		cJSON_Delete(b);
		return STATUS_NOMEM;
	}
	st = driver_post(z->base, path, b, &r, &status, si);
	cJSON_Delete(b);
	if (st)
		return st;
	if (status != 200) {
		cJSON_Delete(r);
		return status_set(si, STATUS_HTTP, "%s%s: sizing probe got http %ld", z->base, path, status);
	}
	u = cJSON_GetObjectItemCaseSensitive(r, "usage");
	v = cJSON_GetObjectItemCaseSensitive(u, "prompt_tokens");
	if (!cJSON_IsNumber(v)) {
		cJSON_Delete(r);
		return status_set(si, STATUS_PARSE, "%s%s: sizing probe answer has no usage.prompt_tokens",
				  z->base, path);
	}
	*n = (long)v->valuedouble;
	cJSON_Delete(r);
	return STATUS_OK;
}

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
};

static uint64_t driver_key(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	uint64_t k[5] = { a, b, c, d, e };

	return suite_fnv(SUITE_FNV_INIT, k, sizeof(k));
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
 * 2 shared (warm).
 */
static enum status driver_requests(struct driver_ctx *c, size_t a, size_t n, int nonce_mode,
				   uint64_t cell_key, double temperature, struct driver_reqs *r,
				   struct status_info *si)
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
	for (i = 0; i < n; i++) {
		p = i % c->suite->n;
		if (nonce_mode == 0)
			key = driver_key(o->corpus_seed, cell_key, i, 1, 0);
		else if (nonce_mode == 1)
			key = driver_key(o->corpus_seed, p, 2, 0, 0);
		else
			key = driver_key(o->corpus_seed, 3, 0, 0, 0);
		suite_nonce(key, nonce);
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
	char *buf = NULL;
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
	if (!driver_metrics(da->url, &res, NULL) &&
	    !driver_config_hash(res.body, res.n_body, s->config_hash, sizeof(s->config_hash), NULL) &&
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

/* One load run of arm a; records it; hands back the run and its figures. */
static enum status driver_one(struct driver_ctx *c, size_t a, const char *phase, enum load_arrival arr,
			      double level, unsigned rep, size_t n, int nonce_mode, double temperature,
			      bool keep_text, const struct load_run *ref, struct load_run **out_run,
			      struct stats_run *out_st, struct correct_report *corr, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct driver_reqs rq;
	struct load_opts lo;
	struct record_cell cell;
	char run_id[160];
	double h0 = 0, h1 = 0;
	bool h0_ok, h1_ok;
	enum status st;
	uint64_t cell_key = driver_key(a, (uint64_t)(level * 1000), rep, phase[0], 7);

	*out_run = NULL;
	memset(out_st, 0, sizeof(*out_st));
	memset(corr, 0, sizeof(*corr));
	st = driver_requests(c, a, n, nonce_mode, cell_key, temperature, &rq, si);
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
	lo.keep_text = keep_text;
	lo.loop_times = o->loop_times;
	if (o->progress) {
		c->prog.f = o->progress;
		snprintf(c->prog.label, sizeof(c->prog.label), "%s%s%.24s %s%g rep %u", phase,
			 o->arms[a].arm ? " " : "", o->arms[a].arm ? o->arms[a].arm : "",
			 arr == LOAD_CLOSED ? "c=" : arr == LOAD_BATCH ? "b=" : "r=", level, rep + 1);
		lo.progress = driver_progress;
		lo.progress_ctx = &c->prog;
	}
	h0_ok = driver_read_hits(c->as[a].id.url, &h0);
	st = load_run_exec(&lo, rq.rq, rq.n, out_run, si);
	driver_progress_end(&c->prog);
	if (st)
		goto out;
	h1_ok = h0_ok && driver_read_hits(c->as[a].id.url, &h1);
	st = stats_run_compute(*out_run, out_st, si);
	if (st)
		goto out;
	if (ref) {
		st = correct_compare(c->suite, ref, *out_run, corr, si);
		if (st)
			goto out;
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
	cell.cache_claim = nonce_mode == 0 ? "cold" : "warm";
	cell.prefix_known = h1_ok;
	cell.prefix_hits_delta = h1 - h0;
	cell.cold_claim_valid = h1_ok && h1 - h0 <= 0;
	cell.temperature = temperature;
	cell.correct = ref ? corr : NULL;
	st = record_run(c->rec, &c->as[a].id, &cell, *out_run, out_st, o->token_times, si);
	if (st)
		goto out;
	if (nonce_mode == 0) {
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
	dc->corr_wrong += corr->n_wrong;
	dc->corr_failed += corr->n_failed + corr->n_no_reference;
	for (i = 0; i < corr->n && !dc->first_divergence[0]; i++) {
		const struct correct_item *it = &corr->items[i];

		if (it->verdict == CORRECT_DIVERGED)
			snprintf(dc->first_divergence, sizeof(dc->first_divergence),
				 "%.60s prompt %zu diverged at token %zu: reference \"%.40s\", got \"%.40s\"",
				 run->res[i].id, it->prompt_index, it->at, it->ref_excerpt, it->got_excerpt);
		else if (it->verdict == CORRECT_WRONG)
			snprintf(dc->first_divergence, sizeof(dc->first_divergence),
				 "%.60s prompt %zu wrong: \"%.100s\" missing", run->res[i].id, it->prompt_index,
				 it->missing);
	}
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
	struct driver_sizer z;
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

	memset(rep, 0, sizeof(*rep));
	memset(&c, 0, sizeof(c));
	memset(&st_run, 0, sizeof(st_run));
	memset(&corr, 0, sizeof(corr));
	memset(&z, 0, sizeof(z));
	st = driver_check_opts(o, si);
	if (st)
		return st;
	c.o = o;
	c.rep = rep;
	rep->n_arms = o->n_arms;
	rep->arrival = o->arrival;
	rep->correctness = o->correctness;
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
	if (!o->suite) {
		z.base = o->arms[0].url;
		z.model = c.as[0].model[0] ? c.as[0].model : NULL;
		sz.count = driver_count;
		sz.probe = driver_probe;
		sz.ctx = &z;
		st = suite_generate(&c.suite, &o->gen, &sz, si);
		if (st)
			goto out;
	}
	snprintf(rep->suite_hash, sizeof(rep->suite_hash), "%s", c.suite->hash);
	snprintf(rep->suite_source, sizeof(rep->suite_source), "%s", c.suite->source);
	/* how the server's tokenizer was asked, or why it was not used */
	if (!o->suite && !strcmp(c.suite->sizing, "tokenize") && z.shape == 2)
		snprintf(c.suite->sizing, sizeof(c.suite->sizing), "tokenize:content");
	else if (!o->suite && !strcmp(c.suite->sizing, "probe") && z.empty)
		snprintf(c.suite->sizing, sizeof(c.suite->sizing), "probe:tokenize-empty");
	snprintf(rep->sizing, sizeof(rep->sizing), "%s", c.suite->sizing);
	rep->suite_n = c.suite->n;
	driver_fill_identity(&c);
	st = record_open(&c.rec, o->out, si);
	if (st)
		goto out;
	/* 3. the reference */
	temp = o->correctness ? 0.0 : o->temperature;
	if (o->correctness) {
		for (a = 0; a < o->n_arms; a++) {
			st = driver_one(&c, a, "reference", LOAD_CLOSED, 1, 0, c.suite->n, 1, 0.0, true, NULL,
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

				n = o->n_requests;
				if (o->arrival == LOAD_BATCH)
					n = (size_t)level;
				else if (!n)
					n = c.suite->n > (size_t)level ? c.suite->n : (size_t)ceil(level);
				st = driver_one(&c, a, o->correctness ? "correctness" : "bench", o->arrival, level, r, n,
						o->correctness ? 1 : o->warm ? 2 : 0, temp, o->correctness,
						o->correctness ? c.as[a].ref : NULL, &run, &st_run, &corr, si);
				if (st)
					goto out;
				driver_tally(dc, run, &st_run, &corr, o->correctness);
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
		if (o->correctness) {
			driver_verdict_of(rep, dc);
			/* the worst: FAIL over INCONCLUSIVE over PASS */
			if (dc->corr_verdict == DRIVER_FAIL ||
			    (dc->corr_verdict == DRIVER_INCONCLUSIVE && rep->corr_verdict == DRIVER_PASS))
				rep->corr_verdict = dc->corr_verdict;
		}
	}
	{
		char *js = driver_report_json(rep);

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

/* --- reports -------------------------------------------------------------- */

static const char *driver_level_name(enum load_arrival a)
{
	return a == LOAD_CLOSED ? "concurrency" : a == LOAD_BATCH ? "batch" : "rate";
}

char *driver_report_json(const struct driver_report *rep)
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
	cJSON_AddBoolToObject(o, "correctness", rep->correctness);
	cJSON_AddStringToObject(o, "cache_claim", rep->warm || rep->correctness ? "warm" : "cold");
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
		cJSON_AddNumberToObject(x, driver_level_name(rep->arrival), dc->level);
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
		if (!rep->warm && !rep->correctness) {
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
static void driver_fail_list(const size_t *n_fail, char *buf, size_t n)
{
	size_t k, len = 0;

	buf[0] = '\0';
	for (k = 1; k < LOAD_FAIL__COUNT; k++)
		if (n_fail[k] && len < n)
			len += (size_t)snprintf(buf + len, n - len, "%s%s %zu", len ? ", " : "",
						load_fail_name((enum load_fail)k), n_fail[k]);
}

void driver_report_print(const struct driver_report *rep, FILE *f)
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
		driver_fail_list(rep->n_fail, buf, sizeof(buf));
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
	if (rep->any_unstable)
		fprintf(f, "UNSTABLE: repeats spread over %.0f%% in output tokens/s; see the spread column\n",
			STATS_UNSTABLE_SPREAD * 100);
	if (rep->any_cold_invalid)
		fprintf(f, "COLD CLAIM INVALID: the prefix cache served tokens during a cold run\n");
	for (i = 0; i < rep->n_arms; i++)
		fprintf(f, "server %zu: %s  model %s  arm %s (%s)  config %s\n", i, rep->arms[i].url,
			rep->arms[i].model, rep->arms[i].arm[0] ? rep->arms[i].arm : "-",
			rep->arms[i].arm_state ? rep->arms[i].arm_state : "none",
			rep->arms[i].config_hash[0] ? rep->arms[i].config_hash : "unknown");
	fprintf(f, "suite %s (%zu prompts, %s, sizing %s), %s arrivals, %s\n", rep->suite_source, rep->suite_n,
		rep->suite_hash, rep->sizing, record_arrival_name(rep->arrival),
		rep->correctness ? "correctness stage" : rep->warm ? "warm" : "cold");
	fprintf(f, "%-3s %-10s %8s %5s %5s %9s %9s %22s %22s %16s %10s %7s\n", "srv", "arm", "level", "reqs",
		"fail", "makespan", "tok/s", "ttft p50/p90/p99 ms", "ttlt p50/p90/p99 ms", "itl p50/p99 ms",
		"prefill/s", "spread");
	for (i = 0; i < rep->n_cells; i++) {
		const struct driver_cell *dc = &rep->cells[i];
		const struct stats_run *m = &dc->median;
		char t1[40], t2[40], t3[40], pf[24];

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
		if (dc->first_failure[0])
			fprintf(f, "    first failure: %s\n", dc->first_failure);
		if (rep->correctness)
			fprintf(f, "    correctness: %s, %zu failing of %zu (diverged %zu, wrong %zu, failed %zu): %s%s%s\n",
				driver_verdict_name(dc->corr_verdict), dc->corr_failing, dc->corr_requests,
				dc->corr_diverged, dc->corr_wrong, dc->corr_failed,
				rate_describe(buf, sizeof(buf), dc->corr_failing, dc->corr_requests,
					      rep->confidence, 100, "%"),
				rep->baseline > 0 && dc->corr_failing ? "; " : "",
				rep->baseline > 0 && dc->corr_failing ?
				rate_against(vs, sizeof(vs), dc->corr_failing, dc->corr_requests,
					     rep->confidence, rep->baseline) : "");
		if (dc->first_divergence[0])
			fprintf(f, "    first: %s\n", dc->first_divergence);
		if (dc->n_cold_invalid)
			fprintf(f, "    cold claim invalid in %zu of %u runs (%.0f prefix-cache hit tokens)\n",
				dc->n_cold_invalid, dc->n_repeats, dc->prefix_hits);
		else if (!rep->warm && !rep->correctness && dc->n_cold_unchecked)
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
