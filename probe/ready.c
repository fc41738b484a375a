#include "probe/ready.h"
#include "base/mono.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "probe/http.h"
#include "probe/models.h"
#include "probe/prom.h"
#include "base/jsonw.h"

/* A rung's answer is small; a bigger one is not what the rung asks for. */
#define READY_MAX_BODY (16u << 20)

static const char *const ready_names[READY__COUNT] = { "health", "metrics", "models", "generate" };

const char *ready_rung_name(enum ready_rung rung)
{
	return (unsigned)rung < READY__COUNT ? ready_names[rung] : "?";
}

static void ready_fail(struct ready_rung_result *rr, const char *fmt, const char *arg)
{
	snprintf(rr->last_error, sizeof(rr->last_error), fmt, arg);
}

/* GET /metrics: 200 and Prometheus text with at least one sample. */
static bool ready_metrics(const struct http_response *res, struct ready_rung_result *rr)
{
	struct status_info si = { 0 };
	struct prom *p = NULL;
	bool ok = false;

	if (prom_parse(res->body, res->n_body, &p, &si)) {
		snprintf(rr->last_error, sizeof(rr->last_error), "metrics do not parse: line %ld: %.200s",
			 si.line, si.msg);
		return false;
	}
	if (prom_n_samples(p) == 0)
		ready_fail(rr, "%s", "metrics page holds no sample");
	else
		ok = true;
	prom_free(p);
	return ok;
}

/* GET /v1/models: data[] lists the wanted model (or any, when none is named). */
static bool ready_models(const struct http_response *res, const char *want, struct ready_report *r,
			 struct ready_rung_result *rr)
{
	struct status_info si = { 0 };
	struct models *m = NULL;
	long i;

	if (models_parse(res->body, res->n_body, &m, &si)) {
		snprintf(rr->last_error, sizeof(rr->last_error), "answer is %.200s", si.msg);
		return false;
	}
	if ((i = models_find(m, want)) < 0)
		ready_fail(rr, want ? "model '%s' is not listed" : "%s",
			   want ? want : "the model list is empty");
	else
		snprintf(r->model, sizeof(r->model), "%s", models_id(m, (size_t)i));
	models_free(m);
	return i >= 0;
}

/* POST /v1/completions: 200 with a choice and at least one completion token. */
static bool ready_generate(const struct http_response *res, struct ready_report *r,
			   struct ready_rung_result *rr)
{
	cJSON *root = cJSON_ParseWithLength(res->body, res->n_body);
	const cJSON *choices, *c0, *text, *usage, *ntok, *id;
	bool ok = false;

	choices = cJSON_GetObjectItemCaseSensitive(root, "choices");
	c0 = cJSON_GetArrayItem(choices, 0);
	if (!root || !cJSON_IsArray(choices) || !c0) {
		ready_fail(rr, "%s", "completion has no choices");
		goto out;
	}
	text = cJSON_GetObjectItemCaseSensitive(c0, "text");
	if (!cJSON_IsString(text)) {
		ready_fail(rr, "%s", "completion choice has no text");
		goto out;
	}
	usage = cJSON_GetObjectItemCaseSensitive(root, "usage");
	ntok = cJSON_GetObjectItemCaseSensitive(usage, "completion_tokens");
	if (ntok && (!cJSON_IsNumber(ntok) || ntok->valuedouble < 1)) {
		ready_fail(rr, "%s", "completion reports no generated token (usage.completion_tokens)");
		goto out;
	}
	if (!ntok && !text->valuestring[0]) {
		ready_fail(rr, "%s", "completion text is empty and usage is absent");
		goto out;
	}
	id = cJSON_GetObjectItemCaseSensitive(root, "id");
	snprintf(r->completion_id, sizeof(r->completion_id), "%s",
		 cJSON_IsString(id) ? id->valuestring : "");
	snprintf(r->token_text, sizeof(r->token_text), "%s", text->valuestring);
	ok = true;
out:
	cJSON_Delete(root);
	return ok;
}

static bool ready_attempt(const struct ready_opts *o, enum ready_rung rung, double budget,
			  struct ready_report *r)
{
	static const char *const paths[READY__COUNT] = { "/health", "/metrics", "/v1/models",
							  "/v1/completions" };
	struct ready_rung_result *rr = &r->rung[rung];
	struct http_response res;
	struct status_info si = { 0 };
	char url[HTTP_MAX_URL], *body = NULL;
	enum status st;
	bool ok = false;
	unsigned lacking;

	rr->attempts++;
	rr->last_error[0] = rr->excerpt[0] = '\0';
	lacking = rr->lacking;
	http_join(o->url, paths[rung], url, sizeof(url));
	if (budget > 60)
		budget = 60;
	if (rung == READY_GENERATE) {
		cJSON *req = cJSON_CreateObject();

		if (req && cJSON_AddStringToObject(req, "model", r->model) &&
		    cJSON_AddStringToObject(req, "prompt", "Hello") &&
		    cJSON_AddNumberToObject(req, "max_tokens", 1) &&
		    cJSON_AddNumberToObject(req, "temperature", 0))
			body = cJSON_PrintUnformatted(req);
		cJSON_Delete(req);
		if (!body) {
			ready_fail(rr, "%s", "out of memory");
			return false;
		}
		if (o->request_id_prefix)
			snprintf(r->request_id, sizeof(r->request_id), "%.100s-ready-%u",
				 o->request_id_prefix, rr->attempts);
		else
			snprintf(r->request_id, sizeof(r->request_id), "ttaudit-%ld-ready-%u",
				 (long)getpid(), rr->attempts);
		st = http_post_json(url, body, r->request_id, budget, READY_MAX_BODY, &res, &si);
		cJSON_free(body);
	} else {
		st = http_get(url, budget, READY_MAX_BODY, &res, &si);
	}
	rr->last_status = res.status;
	http_excerpt(res.body, res.n_body, 200, rr->excerpt, sizeof(rr->excerpt));
	if (st) {
		snprintf(rr->last_error, sizeof(rr->last_error), "%.160s%s", res.error[0] ? res.error : si.msg,
			 rung == READY_HEALTH && strstr(res.error, "onnect") ?
			 " (vLLM binds its port but listens only once the engine has loaded)" : "");
		goto out;
	}
	if (res.status != 200) {
		/* say what the answer means: a rung the server lacks is not one
		 * that is still loading */
		if (res.status == 401 || res.status == 403)
			snprintf(rr->last_error, sizeof(rr->last_error), "answered %ld: the server wants an API "
				 "key%s", res.status, http_auth_header() ? " and refused the one given" :
				 " (set TTAUDIT_API_KEY)");
		else if ((res.status == 404 || res.status == 405 || res.status == 501) && rung != READY_HEALTH &&
			 ++rr->lacking)
			snprintf(rr->last_error, sizeof(rr->last_error), "answered %ld: the server lacks %s "
				 "(this rung cannot pass)%s", res.status, paths[rung],
				 rung == READY_METRICS && res.status == 501 ?
				 "; llama-server serves it only when started with --metrics" : "");
		else if (res.status == 503)
			snprintf(rr->last_error, sizeof(rr->last_error), "answered 503: still loading, or the "
				 "engine is dead");
		else
			snprintf(rr->last_error, sizeof(rr->last_error), "answered %ld", res.status);
		goto out;
	}
	switch (rung) {
	case READY_HEALTH: ok = true; break;
	case READY_METRICS: ok = ready_metrics(&res, rr); break;
	case READY_MODELS: ok = ready_models(&res, o->model, r, rr); break;
	default: ok = ready_generate(&res, r, rr); break;
	}
out:
	if (rr->lacking == lacking)
		rr->lacking = 0;   /* only answers in a row count */
	http_response_release(&res);
	return ok;
}

enum status ready_wait(const struct ready_opts *o, struct ready_report *r, struct status_info *si)
{
	double t0 = mono_now(), timeout, interval, now;
	enum ready_rung rung = READY_HEALTH;
	enum status st;

	memset(r, 0, sizeof(*r));
	if (!o->url || (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8)))
		return status_set(si, STATUS_USAGE, "'%s' is not an http url", o->url ? o->url : "");
	if (strlen(o->url) + 32 > HTTP_MAX_URL)
		return status_set(si, STATUS_USAGE, "url is too long");
	snprintf(r->url, sizeof(r->url), "%s", o->url);
	/* each attempt's failure is a rung not passed yet: a missing libcurl
	 * must not wait out the timeout as one */
	st = http_init(si);
	if (st)
		return st;
	timeout = o->timeout > 0 ? o->timeout : READY_DEFAULT_TIMEOUT;
	interval = o->interval > 0 ? o->interval : 1.0;
	for (;;) {
		now = mono_now() - t0;
		if (ready_attempt(o, rung, timeout - now, r)) {
			now = mono_now() - t0;
			r->rung[rung].passed = true;
			r->rung[rung].seconds = now - r->rung[rung].started;
			if (o->progress)
				o->progress(o->ctx, r, rung, now);
			if (++rung == READY__COUNT)
				break;
			r->rung[rung].started = now;
			continue;
		}
		now = mono_now() - t0;
		r->rung[rung].seconds = now - r->rung[rung].started;
		if (o->progress)
			o->progress(o->ctx, r, rung, now);
		/* a route the server lacks does not appear by waiting: three
		 * answers in a row that say so end the ladder now */
		if (now + 0.001 >= timeout || r->rung[rung].lacking >= 3) {
			r->failed = rung;
			r->total = now;
			return status_set(si, STATUS_TIMEOUT, "%s: not ready after %.1f s: rung '%s' did not pass: %s",
					  o->url, now, ready_rung_name(rung), r->rung[rung].last_error);
		}
		mono_sleep(interval < timeout - now ? interval : timeout - now);
	}
	r->ready = true;
	r->failed = READY__COUNT;
	r->total = mono_now() - t0;
	return STATUS_OK;
}

char *ready_report_json(const struct ready_report *r)
{
	struct jsonw w;
	struct jsonw_mem m;
	int i;

	if (jsonw_mem_begin(&w, &m))
		return NULL;
	jsonw_obj(&w);
	jsonw_kstr(&w, "url", r->url);
	jsonw_kbool(&w, "ready", r->ready);
	jsonw_kdouble(&w, "seconds", r->total);
	jsonw_kstr(&w, "failed_rung", r->ready ? NULL : ready_rung_name(r->failed));
	jsonw_kstr(&w, "model", r->model);
	jsonw_kstr(&w, "completion_id", r->completion_id);
	jsonw_kstr(&w, "request_id", r->request_id);
	jsonw_kstr(&w, "token_text", r->token_text);
	jsonw_key(&w, "rungs");
	jsonw_arr(&w);
	for (i = 0; i < READY__COUNT; i++) {
		const struct ready_rung_result *rr = &r->rung[i];

		jsonw_obj(&w);
		jsonw_kstr(&w, "rung", ready_rung_name((enum ready_rung)i));
		jsonw_kbool(&w, "passed", rr->passed);
		jsonw_kuint(&w, "attempts", rr->attempts);
		if (rr->attempts) {
			jsonw_kdouble(&w, "started", rr->started);
			jsonw_kdouble(&w, "seconds", rr->seconds);
			jsonw_kint(&w, "last_status", rr->last_status);
		}
		if (!rr->passed && rr->attempts) {
			jsonw_kstr(&w, "last_error", rr->last_error);
			jsonw_kstr(&w, "excerpt", rr->excerpt);
		}
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	return jsonw_mem_end(&w, &m);
}
