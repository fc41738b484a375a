/*
 * route.c - the HTTP surfaces: which route answers a request (vLLM's
 * OpenAI-compatible server, or llama-server's), loading and API-key gates,
 * request bodies, completions and chats (submitted to the model, then
 * streamed or answered whole), tokenize, detokenize, models (see route.h).
 */
#include "tools/ttsim/route.h"
#include "base/alloc.h"
#include "base/mono.h"
#include "tools/ttsim/answer.h"
#include "tools/ttsim/engine.h"
#include "tools/ttsim/log.h"
#include "tools/ttsim/metrics.h"
#include "tools/ttsim/prompt.h"
#include "tools/ttsim/reply.h"
#include "tools/ttsim/stream.h"
#include "tools/ttsim/vocab.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#define ROUTE_BODY_MAX (8u << 20)      /* request body cap */
#define ROUTE_BLOCK 16384              /* bytes MHD asks a stream for at most */

static bool route_loading(struct ttsim_server *srv)
{
	return srv->c.load_time_s > 0 && mono_now() - srv->t_start < srv->c.load_time_s;
}

/*
 * Does the request ask for sampling the device cannot do? On the TT stack
 * these put the whole batch on the host-sampling (synchronous) path
 * (vllm-tt-plugin docs/SCHEDULING.md, its drain triggers; tt-metal #51982):
 * logprobs, penalties, structured output, bad words, logits processors,
 * min_p, logit_bias, allowed token ids, min_tokens. A parameter at its
 * neutral value (logprobs false or null, a penalty of 0 or 1) asks nothing.
 */
static bool route_needs_host(const cJSON *req)
{
	static const char *const any[] = { "response_format", "guided_json", "guided_regex",
		"guided_choice", "guided_grammar", "structured_outputs", "bad_words", "logits_processors",
		"logit_bias", "allowed_token_ids", NULL };
	const cJSON *v;
	size_t i;

	v = cJSON_GetObjectItemCaseSensitive(req, "logprobs");
	if (v && !cJSON_IsNull(v) && !cJSON_IsFalse(v))
		return true;
	v = cJSON_GetObjectItemCaseSensitive(req, "prompt_logprobs");
	if (v && !cJSON_IsNull(v))
		return true;
	for (i = 0; any[i]; i++) {
		v = cJSON_GetObjectItemCaseSensitive(req, any[i]);
		if (v && !cJSON_IsNull(v))
			return true;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "presence_penalty");
	if (cJSON_IsNumber(v) && v->valuedouble != 0)
		return true;
	v = cJSON_GetObjectItemCaseSensitive(req, "frequency_penalty");
	if (cJSON_IsNumber(v) && v->valuedouble != 0)
		return true;
	v = cJSON_GetObjectItemCaseSensitive(req, "repetition_penalty");
	if (cJSON_IsNumber(v) && v->valuedouble != 1)
		return true;
	v = cJSON_GetObjectItemCaseSensitive(req, "min_p");
	if (cJSON_IsNumber(v) && v->valuedouble > 0)
		return true;
	v = cJSON_GetObjectItemCaseSensitive(req, "min_tokens");
	return cJSON_IsNumber(v) && v->valuedouble > 0;
}

static enum MHD_Result route_completion(struct ttsim_server *srv, struct MHD_Connection *conn,
					struct ttsim_engine_conn *sc, bool chat)
{
	cJSON *req = NULL, *v, *so;
	const char *param = NULL, *perr;
	char err[512];
	int *toks = NULL, n_prompt = 0;
	long long max_tokens = srv->c.default_max_tokens, n;
	bool stream = false, include_usage = false, continuous = false, token_ids = false, echo = false;
	int echo_lp = -1;
	const char *xrid;
	struct ttsim_engine_req *rq;
	const union MHD_ConnectionInfo *ci;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	struct status_info si;

	/* The parse end, not cJSON_GetErrorPtr(): that one is a global, shared
	 * by every connection thread. The body is NUL-terminated: length + 1 and
	 * require_null_terminated reject trailing garbage. */
	req = cJSON_ParseWithLengthOpts(sc->body ? sc->body : "", sc->len + 1, &perr, 1);
	if (req && sc->body && perr != sc->body + sc->len) {
		/* a NUL byte inside the body ended the parse early */
		cJSON_Delete(req);
		req = NULL;
	}
	if (!req) {
		ret = ttsim_reply_error(srv, conn, 400, NULL, "JSON decode error at byte %ld",
				perr && sc->body && perr >= sc->body ? (long)(perr - sc->body) + 1 : 1L);
		goto out;
	}
	if (!cJSON_IsObject(req)) {
		ret = ttsim_reply_error(srv, conn, 400, NULL, "body: Input should be a valid dictionary");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "model");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v)) {
			ret = ttsim_reply_error(srv, conn, 400, "model", "model: Input should be a valid string");
			goto out;
		}
		/* llama-server serves whatever name a request gives */
		if (srv->c.profile == TTSIM_VLLM && strcmp(v->valuestring, srv->model_name)) {
			ret = ttsim_reply_error(srv, conn, 404, "model", "The model `%s` does not exist.",
					v->valuestring);
			goto out;
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "stream");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsBool(v)) {
			ret = ttsim_reply_error(srv, conn, 400, "stream", "stream: Input should be a valid boolean");
			goto out;
		}
		stream = cJSON_IsTrue(v);
	}
	so = cJSON_GetObjectItemCaseSensitive(req, "stream_options");
	if (so && !cJSON_IsNull(so)) {
		v = cJSON_GetObjectItemCaseSensitive(so, "include_usage");
		if (!cJSON_IsObject(so) || (v && !cJSON_IsBool(v) && !cJSON_IsNull(v))) {
			ret = ttsim_reply_error(srv, conn, 400, "stream_options",
					"stream_options: Input should be a valid dictionary with a "
					"boolean include_usage");
			goto out;
		}
		if (!stream) {
			ret = ttsim_reply_error(srv, conn, 400, "stream_options",
					"Stream options can only be defined when `stream=True`.");
			goto out;
		}
		include_usage = cJSON_IsTrue(v);
		continuous = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "continuous_usage_stats"));
	}
	/* llama-server's OpenAI completions refuse echo whatever its value
	 * (utils.hpp oaicompat_completion_params_parse: "best_of", "echo",
	 * "suffix" are unsupported params, thrown and answered 500) */
	if (!chat && srv->c.profile == TTSIM_LLAMACPP) {
		static const char *const unsupported[] = { "best_of", "echo", "suffix" };
		size_t u;

		for (u = 0; u < 3; u++)
			if (cJSON_GetObjectItemCaseSensitive(req, unsupported[u])) {
				ret = ttsim_reply_error(srv, conn, 500, NULL, "Unsupported param: %s", unsupported[u]);
				goto out;
			}
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "echo");
	if (!chat && cJSON_IsTrue(v) && srv->c.profile == TTSIM_VLLM) {
		echo = true;
		if (stream) {
			ret = ttsim_reply_error(srv, conn, 400, "echo", "ttsim answers echo only unstreamed");
			goto out;
		}
		v = cJSON_GetObjectItemCaseSensitive(req, "logprobs");
		if (v && !cJSON_IsNull(v) && !ttsim_prompt_json_int(v, 0, 20, &n)) {
			ret = ttsim_reply_error(srv, conn, 400, "logprobs", "logprobs: want an integer 0..20");
			goto out;
		}
		echo_lp = v && !cJSON_IsNull(v) ? (int)n : -1;
	}
	token_ids = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "return_token_ids"));
	v = cJSON_GetObjectItemCaseSensitive(req, "n");
	if (v && !cJSON_IsNull(v) && (!ttsim_prompt_json_int(v, 1, 1, &n))) {
		ret = ttsim_reply_error(srv, conn, 400, "n", "n: only n=1 is supported");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "max_tokens");
	if (chat && (!v || cJSON_IsNull(v)))
		v = cJSON_GetObjectItemCaseSensitive(req, "max_completion_tokens");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) {
			ret = ttsim_reply_error(srv, conn, 400, "max_tokens",
					"max_tokens: Input should be a valid integer");
			goto out;
		}
		if (v->valuedouble < 1) {
			ret = ttsim_reply_error(srv, conn, 400, "max_tokens",
					"max_tokens must be at least 1, got %.0f.", v->valuedouble);
			goto out;
		}
		max_tokens = v->valuedouble > 1e15 ? (long long)1e15 : (long long)v->valuedouble;
	}
	if (!ttsim_prompt_tokens(req, chat, &toks, &n_prompt, &param, err, sizeof(err))) {
		ret = ttsim_reply_error(srv, conn, 400, param, "%s", err);
		goto out;
	}
	if (n_prompt + max_tokens > srv->c.model.max_model_len) {
		ret = ttsim_reply_error(srv, conn, 400, NULL,
				"'max_tokens' or 'max_completion_tokens' is too large: %lld. This "
				"model's maximum context length is %lld tokens and your request has %d "
				"input tokens (%lld > %lld - %d).", max_tokens,
				srv->c.model.max_model_len, n_prompt, max_tokens,
				srv->c.model.max_model_len, n_prompt);
		goto out;
	}

	pthread_mutex_lock(&srv->mu);
	if (srv->c.error_rate > 0 && ttsim_engine_rand(&srv->rng) < srv->c.error_rate) {
		srv->req_errors++;
		pthread_mutex_unlock(&srv->mu);
		ret = ttsim_reply_error(srv, conn, 500, NULL, "EngineCore encountered an issue (injected fault)");
		goto out;
	}
	xrid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
	rq = ttsim_engine_req_new(srv, chat, n_prompt, (int)max_tokens, xrid);
	if (!rq) {
		pthread_mutex_unlock(&srv->mu);
		ret = ttsim_reply_error(srv, conn, 500, NULL, "out of memory");
		goto out;
	}
	/* llama-server echoes the request's model (params_from_json_cmpl:
	 * oaicompat_model), else its alias */
	snprintf(rq->model_json, sizeof(rq->model_json), "%s", srv->model_json);
	v = cJSON_GetObjectItemCaseSensitive(req, "model");
	if (srv->c.profile == TTSIM_LLAMACPP && cJSON_IsString(v) && strlen(v->valuestring) < TTSIM_ENGINE_NAME_MAX) {
		char *mj = cJSON_PrintUnformatted(v);

		if (mj && strlen(mj) < sizeof(rq->model_json))
			snprintf(rq->model_json, sizeof(rq->model_json), "%s", mj);
		free(mj);
	}
	if (echo) {
		const cJSON *pv = cJSON_GetObjectItemCaseSensitive(req, "prompt");

		rq->echo = true;
		rq->echo_lp = echo_lp;
		rq->echo_toks = malloc((size_t)n_prompt * sizeof(int));
		rq->echo_text = strdup(cJSON_IsString(pv) ? pv->valuestring : "");
		if (!rq->echo_toks || !rq->echo_text) {
			pthread_mutex_unlock(&srv->mu);
			ret = ttsim_reply_error(srv, conn, 500, NULL, "out of memory");
			goto out;
		}
		memcpy(rq->echo_toks, toks, (size_t)n_prompt * sizeof(int));
	}
	rq->conn = conn;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	rq->fd = ci ? ci->connect_fd : -1;
	rq->stream = stream;
	rq->include_usage = include_usage;
	rq->continuous_usage = continuous && srv->c.profile == TTSIM_VLLM;
	rq->return_token_ids = token_ids && srv->c.profile == TTSIM_VLLM && srv->c.vllm_minor != 10;
	if (stream)
		rq->error_at = ttsim_engine_fault_at(srv, srv->c.stream_error_rate, (int)max_tokens);
	rq->reset_at = ttsim_engine_fault_at(srv, srv->c.reset_rate, (int)max_tokens);
	rq->stall_at = ttsim_engine_fault_at(srv, srv->c.stall_rate, (int)max_tokens);
	rq->truncate_at = ttsim_engine_fault_at(srv, srv->c.truncate_rate, (int)max_tokens);
	sc->rq = rq;
	if (!srv->c.never_generate) {
		if (ttsim_model_submit(srv->model, rq->eid, toks, n_prompt, (int)max_tokens, rq,
				       &rq->handle, &si)) {
			pthread_mutex_unlock(&srv->mu);
			ret = ttsim_reply_error(srv, conn, 400, NULL, "%s", si.msg);
			goto out;
		}
		if (route_needs_host(req))
			ttsim_model_host_sample(srv->model, rq->handle);
		rq->submitted = true;
		rq->refs++;  /* the model's reference, dropped in ttsim_engine_on_finish */
		pthread_cond_signal(&srv->work_cv);
	}
	if (stream) {
		if (srv->send_log) {
			rq->stamps = calloc((size_t)max_tokens * 2, sizeof(double));
			if (!rq->stamps)
				ttsim_log(2, "WARNING", "ttsim", "send log: out of memory, %s not logged",
					  rq->id);
		}
		pthread_mutex_unlock(&srv->mu);
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, ROUTE_BLOCK,
							 ttsim_stream_read, rq, NULL);
		if (!resp) {
			ret = MHD_NO;
			goto out;
		}
		MHD_add_response_header(resp, "Content-Type", "text/event-stream; charset=utf-8");
		MHD_add_response_header(resp, "Cache-Control", "no-cache");
		if (srv->c.profile == TTSIM_LLAMACPP)
			/* cpp-httplib's keep-alive header (no Connection header); the
			 * stream's content provider returns false after sink.done(),
			 * so the connection closes after the stream all the same */
			MHD_add_response_header(resp, "Keep-Alive", "timeout=5, max=100");
		ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
		MHD_destroy_response(resp);
		goto out;
	}
	pthread_mutex_unlock(&srv->mu);
	/* Non-streaming: the connection waits, suspended, for the whole answer. */
	sc->wait_full = true;
	rq->probe_at = mono_now() + TTSIM_ENGINE_PROBE_S;
	ret = ttsim_answer_step(srv, conn, sc);
out:
	free(toks);
	cJSON_Delete(req);
	return ret;
}

static enum MHD_Result route_tokenize(struct ttsim_server *srv, struct MHD_Connection *conn,
				      struct ttsim_engine_conn *sc)
{
	cJSON *req = NULL, *out = NULL, *arr;
	const char *param = NULL;
	char err[512];
	int *toks = NULL, n = 0, i;
	enum MHD_Result ret;
	bool chat;

	req = cJSON_ParseWithLengthOpts(sc->body ? sc->body : "", sc->len + 1, NULL, 1);
	if (!req || !cJSON_IsObject(req)) {
		ret = ttsim_reply_error(srv, conn, 400, NULL, "JSON decode error or body not an object");
		goto out;
	}
	if (srv->c.profile == TTSIM_LLAMACPP) {
		/* llama-server tokenizes `content` and answers {"tokens":[...]}
		 * only; any other body gets an empty list */
		cJSON *c = cJSON_GetObjectItemCaseSensitive(req, "content");

		out = cJSON_CreateObject();
		arr = out ? cJSON_AddArrayToObject(out, "tokens") : NULL;
		if (!arr) {
			ret = MHD_NO;
			goto out;
		}
		if (cJSON_IsString(c)) {
			cJSON *tmp = cJSON_CreateObject();

			cJSON_AddStringToObject(tmp, "prompt", c->valuestring);
			if (ttsim_prompt_tokens(tmp, false, &toks, &n, &param, err, sizeof(err)))
				for (i = 0; i < n; i++)
					cJSON_AddItemToArray(arr, cJSON_CreateNumber(toks[i]));
			cJSON_Delete(tmp);
		}
		ret = ttsim_reply_json(conn, MHD_HTTP_OK, out);
		goto out;
	}
	chat = cJSON_GetObjectItemCaseSensitive(req, "messages") != NULL;
	if (!ttsim_prompt_tokens(req, chat, &toks, &n, &param, err, sizeof(err))) {
		ret = ttsim_reply_error(srv, conn, 400, param, "%s", err);
		goto out;
	}
	out = cJSON_CreateObject();
	if (!out) {
		ret = MHD_NO;
		goto out;
	}
	cJSON_AddNumberToObject(out, "count", n);
	cJSON_AddNumberToObject(out, "max_model_len", (double)srv->c.model.max_model_len);
	arr = cJSON_AddArrayToObject(out, "tokens");
	for (i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateNumber(toks[i]));
	cJSON_AddNullToObject(out, "token_strs");
	ret = ttsim_reply_json(conn, MHD_HTTP_OK, out);
out:
	free(toks);
	cJSON_Delete(out);
	cJSON_Delete(req);
	return ret;
}

static enum MHD_Result route_detokenize(struct ttsim_server *srv, struct MHD_Connection *conn,
					struct ttsim_engine_conn *sc)
{
	cJSON *req = NULL, *arr, *v, *out = NULL;
	char *text = NULL;
	size_t cap, len = 0, i = 0;
	long long id;
	enum MHD_Result ret;

	req = cJSON_ParseWithLengthOpts(sc->body ? sc->body : "", sc->len + 1, NULL, 1);
	arr = req ? cJSON_GetObjectItemCaseSensitive(req, "tokens") : NULL;
	if (!cJSON_IsArray(arr)) {
		ret = ttsim_reply_error(srv, conn, 400, "tokens", "tokens: Input should be a valid list");
		goto out;
	}
	cap = (size_t)cJSON_GetArraySize(arr) * 64 + 1;
	text = malloc(cap);
	if (!text) {
		ret = MHD_NO;
		goto out;
	}
	text[0] = 0;
	cJSON_ArrayForEach(v, arr) {
		if (!ttsim_prompt_json_int(v, 0, TTSIM_VOCAB_SIZE - 1, &id)) {
			ret = ttsim_reply_error(srv, conn, 400, "tokens", "tokens[%zu]: not a token id (0..%d)", i,
					TTSIM_VOCAB_SIZE - 1);
			goto out;
		}
		ttsim_vocab_append((int)id, text, cap, &len);
		i++;
	}
	out = cJSON_CreateObject();
	if (!out) {
		ret = MHD_NO;
		goto out;
	}
	/* vLLM {"prompt"}; llama-server format_detokenized_response {"content"} */
	cJSON_AddStringToObject(out, srv->c.profile == TTSIM_LLAMACPP ? "content" : "prompt",
				len ? text + 1 : "");
	ret = ttsim_reply_json(conn, MHD_HTTP_OK, out);
out:
	free(text);
	cJSON_Delete(out);
	cJSON_Delete(req);
	return ret;
}

static enum MHD_Result route_models(struct ttsim_server *srv, struct MHD_Connection *conn)
{
	cJSON *j = cJSON_CreateObject(), *data, *m, *perm, *p;
	enum MHD_Result ret;

	if (!j)
		return MHD_NO;
	cJSON_AddStringToObject(j, "object", "list");
	data = cJSON_AddArrayToObject(j, "data");
	m = cJSON_CreateObject();
	cJSON_AddItemToArray(data, m);
	cJSON_AddStringToObject(m, "id", srv->model_name);
	cJSON_AddStringToObject(m, "object", "model");
	cJSON_AddNumberToObject(m, "created", (double)time(NULL));
	if (srv->c.profile == TTSIM_LLAMACPP) {
		/* the id is the model path; no max_model_len */
		cJSON_AddStringToObject(m, "owned_by", "llamacpp");
		/* server_context::model_meta() */
		p = cJSON_AddObjectToObject(m, "meta");
		cJSON_AddNumberToObject(p, "vocab_type", 2);
		cJSON_AddNumberToObject(p, "n_vocab", TTSIM_VOCAB_SIZE);
		cJSON_AddNumberToObject(p, "n_ctx_train", (double)srv->c.model.max_model_len);
		cJSON_AddNumberToObject(p, "n_embd", 4096);
		cJSON_AddNumberToObject(p, "n_params", 8030261248.0);
		cJSON_AddNumberToObject(p, "size", 4920733696.0);
		ret = ttsim_reply_json(conn, MHD_HTTP_OK, j);
		cJSON_Delete(j);
		return ret;
	}
	cJSON_AddStringToObject(m, "owned_by", "vllm");
	cJSON_AddStringToObject(m, "root", srv->model_name);
	cJSON_AddNullToObject(m, "parent");
	cJSON_AddNumberToObject(m, "max_model_len", (double)srv->c.model.max_model_len);
	perm = cJSON_AddArrayToObject(m, "permission");
	p = cJSON_CreateObject();
	cJSON_AddItemToArray(perm, p);
	cJSON_AddStringToObject(p, "id", "modelperm-0");
	cJSON_AddStringToObject(p, "object", "model_permission");
	cJSON_AddBoolToObject(p, "allow_sampling", 1);
	cJSON_AddBoolToObject(p, "allow_logprobs", 1);
	ret = ttsim_reply_json(conn, MHD_HTTP_OK, j);
	cJSON_Delete(j);
	return ret;
}

/*
 * llama-server's routes (examples/server/server.cpp main(): the pre-routing
 * middlewares, then the handlers): while the model loads every route
 * answers 503 "Loading model"; with an API key every route but /health and
 * the models needs it; an unknown route is 404 "File Not Found".
 */
static enum MHD_Result route_llama(struct ttsim_server *srv, struct MHD_Connection *conn,
				   const char *q, bool get, bool post, struct ttsim_engine_conn *sc)
{
	bool models = !strcmp(q, "/v1/models") || !strcmp(q, "/models");

	if (route_loading(srv))
		return ttsim_reply_error(srv, conn, 503, NULL, "Loading model");
	if (srv->c.api_key && strcmp(q, "/health") && !models && strcmp(q, "/")) {
		const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");

		if (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, srv->c.api_key))
			return ttsim_reply_error(srv, conn, 401, NULL, "Invalid API Key");
	}
	if (get && !strcmp(q, "/health"))
		return ttsim_reply_send(conn, MHD_HTTP_OK, "application/json; charset=utf-8", "{\"status\":\"ok\"}", 15);
	if (get && models)
		return route_models(srv, conn);
	if (get && !strcmp(q, "/metrics"))
		return srv->c.metrics ? ttsim_metrics_llama(srv, conn) :
		       ttsim_reply_error(srv, conn, 501, NULL, "This server does not support metrics endpoint. "
				 "Start it with `--metrics`");
	if (post && sc->too_big && (!strcmp(q, "/v1/completions") || !strcmp(q, "/v1/chat/completions") ||
				    !strcmp(q, "/tokenize") || !strcmp(q, "/detokenize")))
		return ttsim_reply_error(srv, conn, 400, NULL, "request body exceeds %u bytes", ROUTE_BODY_MAX);
	if (post && !strcmp(q, "/v1/completions"))
		return route_completion(srv, conn, sc, false);
	if (post && !strcmp(q, "/v1/chat/completions"))
		return route_completion(srv, conn, sc, true);
	if (post && !strcmp(q, "/tokenize"))
		return route_tokenize(srv, conn, sc);
	if (post && !strcmp(q, "/detokenize"))
		return route_detokenize(srv, conn, sc);
	return ttsim_reply_error(srv, conn, 404, NULL, "File Not Found");
}

static enum MHD_Result route_dispatch(struct ttsim_server *srv, struct MHD_Connection *conn,
				      const char *url, const char *method, struct ttsim_engine_conn *sc)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
	char q[64];
	size_t ul = strcspn(url, "?");

	if (ul >= sizeof(q))
		return ttsim_reply_detail(conn, 404, "Not Found");
	memcpy(q, url, ul);
	q[ul] = 0;
	if (srv->c.profile == TTSIM_LLAMACPP)
		return route_llama(srv, conn, q, get, post, sc);
	if (!strcmp(q, "/health") || !strcmp(q, "/ping")) {
		if (!get && !post)
			return ttsim_reply_detail(conn, 405, "Method Not Allowed");
		if (route_loading(srv))
			return ttsim_reply_send(conn, 503, "application/json", "", 0);
		return ttsim_reply_send(conn, MHD_HTTP_OK, "application/json", "", 0);
	}
	if (route_loading(srv))
		return ttsim_reply_error(srv, conn, 503, NULL, "the model is still loading");
	if (srv->c.api_key && !strncmp(q, "/v1/", 4)) {
		/* vLLM's --api-key (entrypoints/openai/api_server.py): 401 on /v1 */
		const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");

		if (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, srv->c.api_key))
			return ttsim_reply_send(conn, 401, "application/json", "{\"error\":\"Unauthorized\"}", 24);
	}
	if (!strcmp(q, "/metrics"))
		return get ? ttsim_metrics_vllm(srv, conn) : ttsim_reply_detail(conn, 405, "Method Not Allowed");
	if (!strcmp(q, "/v1/models"))
		return get ? route_models(srv, conn) : ttsim_reply_detail(conn, 405, "Method Not Allowed");
	if (!strcmp(q, "/version") && srv->c.profile == TTSIM_VLLM) {
		char vb[64];
		int vn = snprintf(vb, sizeof(vb), "{\"version\":\"%s\"}", ttsim_server_version(&srv->c));

		return get ? ttsim_reply_send(conn, MHD_HTTP_OK, "application/json", vb, (size_t)vn)
			   : ttsim_reply_detail(conn, 405, "Method Not Allowed");
	}
	if (!post) {
		if (!strcmp(q, "/v1/completions") || !strcmp(q, "/v1/chat/completions") ||
		    !strcmp(q, "/tokenize") || !strcmp(q, "/detokenize") ||
		    !strcmp(q, "/reset_prefix_cache"))
			return ttsim_reply_detail(conn, 405, "Method Not Allowed");
		return ttsim_reply_detail(conn, 404, "Not Found");
	}
	if (sc->too_big)
		return ttsim_reply_error(srv, conn, 400, NULL, "request body exceeds %u bytes", ROUTE_BODY_MAX);
	if (!strcmp(q, "/v1/completions"))
		return route_completion(srv, conn, sc, false);
	if (!strcmp(q, "/v1/chat/completions"))
		return route_completion(srv, conn, sc, true);
	if (!strcmp(q, "/tokenize"))
		return route_tokenize(srv, conn, sc);
	if (!strcmp(q, "/detokenize"))
		return route_detokenize(srv, conn, sc);
	if (!strcmp(q, "/reset_prefix_cache")) {
		pthread_mutex_lock(&srv->mu);
		ttsim_model_reset_prefix_cache(srv->model);
		pthread_mutex_unlock(&srv->mu);
		return ttsim_reply_send(conn, MHD_HTTP_OK, "application/json", "", 0);
	}
	return ttsim_reply_detail(conn, 404, "Not Found");
}

enum MHD_Result ttsim_route_handler(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version,
			      const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct ttsim_server *srv = cls;
	struct ttsim_engine_conn *sc = *con_cls;
	size_t need;

	(void)version;
	if (!sc) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
			MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		const struct ttsim_engine_sock *k = ci ? ci->socket_context : NULL;

		/* a request on a connection llama-server has finished with: it
		 * never reaches the server; the connection closes unanswered */
		if (k && k->dead)
			return MHD_NO;
		sc = calloc(1, sizeof(*sc));
		if (!sc)
			return MHD_NO;
		*con_cls = sc;
		return MHD_YES;
	}
	if (*upload_data_size) {
		need = sc->len + *upload_data_size;
		if (need > ROUTE_BODY_MAX) {
			sc->too_big = true;
		} else if (!sc->too_big) {
			if (ALLOC_GROW_MAX(sc->body, need + 1, sc->cap, (size_t)ROUTE_BODY_MAX + 1) < 0)
				return MHD_NO;
			memcpy(sc->body + sc->len, upload_data, *upload_data_size);
			sc->len += *upload_data_size;
			sc->body[sc->len] = 0;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (sc->wait_full)
		return ttsim_answer_step(srv, conn, sc);
	return route_dispatch(srv, conn, url, method, sc);
}

/* The connection is done (answered, failed, or the client left). */
void ttsim_route_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
		     enum MHD_RequestTerminationCode toe)
{
	struct ttsim_server *srv = cls;
	struct ttsim_engine_conn *sc = *con_cls;

	(void)toe;
	if (!sc)
		return;
	if (sc->rq && sc->rq->stream && srv->c.profile == TTSIM_LLAMACPP) {
		/* llama-server closes after every streamed answer, though it said
		 * keep-alive: a client that reuses the connection before the close
		 * reaches it finds it dead (its request is never read) */
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
			MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		struct ttsim_engine_sock *k = ci ? ci->socket_context : NULL;

		if (k && !k->dead) {
			pthread_mutex_lock(&srv->mu);
			k->dead = true;
			k->next_dead = srv->dead;
			srv->dead = k;
			pthread_mutex_unlock(&srv->mu);
		}
	}
	if (sc->rq) {
		ttsim_stream_log_stamps(srv, sc->rq);
		pthread_mutex_lock(&srv->mu);
		sc->rq->conn = NULL;
		if (sc->rq->submitted && !sc->rq->finished)
			ttsim_model_abort(srv->model, sc->rq->handle);  /* drops the model's ref */
		ttsim_engine_req_release(sc->rq);
		pthread_mutex_unlock(&srv->mu);
	}
	free(sc->body);
	free(sc);
	*con_cls = NULL;
}
