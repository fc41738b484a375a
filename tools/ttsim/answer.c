/*
 * answer.c - a non-streamed answer: the connection waits, suspended, until
 * its request has finished, then gets the whole completion in the
 * server's shape, vLLM's or llama-server's (see answer.h).
 */
#include "tools/ttsim/answer.h"
#include "base/mono.h"
#include "tools/ttsim/engine.h"
#include "tools/ttsim/reply.h"
#include "tools/ttsim/stream.h"
#include "tools/ttsim/vocab.h"

#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ttsim/model.h"

/* llama-server's whole answer (server_task_result_cmpl_final::to_json_oaicompat
 * and ::to_json_oaicompat_chat), keys in its order, the numbers as
 * nlohmann::json writes them. */
static cJSON *answer_llama(struct ttsim_server *srv, struct ttsim_engine_req *rq, const char *text)
{
	cJSON *j = cJSON_CreateObject(), *ch, *msg, *u, *t;
	int pn = rq->n_prompt - rq->res.cached_tokens;
	double pms = (rq->t_first - rq->t_arrival) * 1e3, gms = (rq->t_last - rq->t_first) * 1e3;
	char b[32];

	(void)srv;
	if (!j)
		return NULL;
	if (pn < 1)
		pn = 1;
	ch = cJSON_CreateObject();
	cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "choices"), ch);
	if (rq->chat) {
		cJSON_AddStringToObject(ch, "finish_reason", "length");
		cJSON_AddNumberToObject(ch, "index", 0);
		msg = cJSON_AddObjectToObject(ch, "message");
		cJSON_AddStringToObject(msg, "role", "assistant");
		cJSON_AddStringToObject(msg, "content", text);
	} else {
		cJSON_AddStringToObject(ch, "text", text);
		cJSON_AddNumberToObject(ch, "index", 0);
		cJSON_AddNullToObject(ch, "logprobs");
		cJSON_AddStringToObject(ch, "finish_reason", "length");
	}
	cJSON_AddNumberToObject(j, "created", (double)rq->created);
	cJSON_AddRawToObject(j, "model", rq->model_json);
	cJSON_AddStringToObject(j, "system_fingerprint", TTSIM_ENGINE_LLAMA_BUILD);
	cJSON_AddStringToObject(j, "object", rq->chat ? "chat.completion" : "text_completion");
	u = cJSON_AddObjectToObject(j, "usage");
	cJSON_AddNumberToObject(u, "completion_tokens", rq->n_tok);
	cJSON_AddNumberToObject(u, "prompt_tokens", rq->n_prompt);
	cJSON_AddNumberToObject(u, "total_tokens", rq->n_prompt + rq->n_tok);
	cJSON_AddStringToObject(j, "id", rq->id);
	t = cJSON_AddObjectToObject(j, "timings");
	cJSON_AddNumberToObject(t, "prompt_n", pn);
	cJSON_AddRawToObject(t, "prompt_ms", ttsim_reply_jnum(pms, b, sizeof(b)));
	cJSON_AddRawToObject(t, "prompt_per_token_ms", ttsim_reply_jnum(pms / pn, b, sizeof(b)));
	cJSON_AddRawToObject(t, "prompt_per_second", ttsim_reply_jnum(1e3 / pms * pn, b, sizeof(b)));
	cJSON_AddNumberToObject(t, "predicted_n", rq->n_tok);
	cJSON_AddRawToObject(t, "predicted_ms", ttsim_reply_jnum(gms, b, sizeof(b)));
	cJSON_AddRawToObject(t, "predicted_per_token_ms", ttsim_reply_jnum(gms / rq->n_tok, b, sizeof(b)));
	cJSON_AddRawToObject(t, "predicted_per_second", ttsim_reply_jnum(1e3 / gms * rq->n_tok, b, sizeof(b)));
	return j;
}

/*
 * vLLM's echoed logprobs (serving_completion.py _create_completion_logprobs):
 * per token of prompt + output its text, its logprob (null for the first),
 * the top alternatives keyed by text, and text_offset, the running length
 * of the tokens' text. A prompt token's text is its piece with the white
 * space before it, so the tokens' text is the echoed text; the model's
 * distribution is ttsim_model_score's.
 */
static cJSON *answer_echo_logprobs(struct ttsim_server *srv, struct ttsim_engine_req *rq)
{
	cJSON *lp = cJSON_CreateObject(), *offs, *tlp, *tk, *top;
	int n = rq->n_prompt + rq->n_tok, i, *all = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
	const char *p = rq->echo_text;
	size_t off = 0, len;
	char buf[256];

	if (!lp || !all) {
		cJSON_Delete(lp);
		free(all);
		return NULL;
	}
	memcpy(all, rq->echo_toks, (size_t)rq->n_prompt * sizeof(int));
	memcpy(all + rq->n_prompt, rq->toks, (size_t)rq->n_tok * sizeof(int));
	offs = cJSON_AddArrayToObject(lp, "text_offset");
	tlp = cJSON_AddArrayToObject(lp, "token_logprobs");
	tk = cJSON_AddArrayToObject(lp, "tokens");
	top = cJSON_AddArrayToObject(lp, "top_logprobs");
	for (i = 0; i < n; i++) {
		int t, a;
		bool near;
		cJSON *d;

		if (i < rq->n_prompt) {
			const char *q = p;

			while (*q && isspace((unsigned char)*q))
				q++;
			while (*q && !isspace((unsigned char)*q))
				q++;
			len = (size_t)(q - p) < sizeof(buf) ? (size_t)(q - p) : sizeof(buf) - 1;
			memcpy(buf, p, len);
			buf[len] = 0;
			p = q;
		} else {
			len = 0;
			buf[0] = 0;
			ttsim_vocab_append(all[i], buf, sizeof(buf), &len);
		}
		cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)off));
		cJSON_AddItemToArray(tk, cJSON_CreateString(buf));
		off += len;
		if (!i) {
			cJSON_AddItemToArray(tlp, cJSON_CreateNull());
			cJSON_AddItemToArray(top, cJSON_CreateNull());
			continue;
		}
		ttsim_model_score(srv->c.model.seed, srv->c.model.near_ties, all, n, i, &t, &a, &near);
		cJSON_AddItemToArray(tlp, cJSON_CreateNumber(ttsim_model_lp(all[i], t, a, near)));
		d = cJSON_CreateObject();
		cJSON_AddItemToArray(top, d);
		if (rq->echo_lp > 0) {
			char w[128];
			size_t wl = 0;

			w[0] = 0;
			ttsim_vocab_append(t, w, sizeof(w), &wl);
			cJSON_AddNumberToObject(d, w, ttsim_model_lp(t, t, a, near));
			if (rq->echo_lp > 1) {
				wl = 0;
				w[0] = 0;
				ttsim_vocab_append(a, w, sizeof(w), &wl);
				if (!cJSON_GetObjectItemCaseSensitive(d, w))
					cJSON_AddNumberToObject(d, w, ttsim_model_lp(a, t, a, near));
			}
		}
		/* the chosen token is always there (vLLM adds it to the top N) */
		if (!cJSON_GetObjectItemCaseSensitive(d, buf))
			cJSON_AddNumberToObject(d, buf, ttsim_model_lp(all[i], t, a, near));
	}
	free(all);
	return lp;
}

static enum MHD_Result answer_full(struct ttsim_server *srv, struct MHD_Connection *conn,
				   struct ttsim_engine_req *rq)
{
	char *text = NULL;
	size_t cap = (size_t)rq->n_tok * 64 + 1, len = 0;
	cJSON *j = NULL, *choices, *ch, *msg, *usage;
	enum MHD_Result ret = MHD_NO;
	int i;

	text = malloc(cap);
	if (!text)
		goto out;
	text[0] = 0;
	for (i = 0; i < rq->n_tok; i++)
		if (ttsim_vocab_append(rq->toks[i], text, cap, &len) < 0)
			break;
	if (srv->c.profile == TTSIM_LLAMACPP) {
		j = answer_llama(srv, rq, text);
		if (j)
			ret = ttsim_reply_json(conn, MHD_HTTP_OK, j);
		goto out;
	}
	j = cJSON_CreateObject();
	if (!j)
		goto out;
	cJSON_AddStringToObject(j, "id", rq->id);
	cJSON_AddStringToObject(j, "object", rq->chat ? "chat.completion" : "text_completion");
	cJSON_AddNumberToObject(j, "created", (double)rq->created);
	cJSON_AddStringToObject(j, "model", srv->model_name);
	choices = cJSON_AddArrayToObject(j, "choices");
	ch = cJSON_CreateObject();
	cJSON_AddItemToArray(choices, ch);
	cJSON_AddNumberToObject(ch, "index", 0);
	if (rq->chat) {
		msg = cJSON_AddObjectToObject(ch, "message");
		cJSON_AddStringToObject(msg, "role", "assistant");
		cJSON_AddStringToObject(msg, "content", text);
		cJSON_AddArrayToObject(msg, "tool_calls");
	} else if (rq->echo) {
		char *full = malloc(strlen(rq->echo_text) + len + 1);

		if (!full)
			goto out;
		strcpy(full, rq->echo_text);
		strcat(full, text);
		cJSON_AddStringToObject(ch, "text", full);
		free(full);
	} else {
		cJSON_AddStringToObject(ch, "text", text);
	}
	if (rq->echo && rq->echo_lp >= 0) {
		cJSON *lp = answer_echo_logprobs(srv, rq);

		if (!lp)
			goto out;
		cJSON_AddItemToObject(ch, "logprobs", lp);
	} else {
		cJSON_AddNullToObject(ch, "logprobs");
	}
	cJSON_AddStringToObject(ch, "finish_reason", "length");
	cJSON_AddNullToObject(ch, "stop_reason");
	usage = cJSON_AddObjectToObject(j, "usage");
	cJSON_AddNumberToObject(usage, "prompt_tokens", rq->n_prompt);
	cJSON_AddNumberToObject(usage, "total_tokens", rq->n_prompt + rq->n_tok);
	cJSON_AddNumberToObject(usage, "completion_tokens", rq->n_tok);
	cJSON_AddNullToObject(usage, "prompt_tokens_details");
	ret = ttsim_reply_json(conn, MHD_HTTP_OK, j);
out:
	cJSON_Delete(j);
	free(text);
	return ret;
}

/*
 * The non-streamed answer, once the request has finished: called when the
 * request is submitted and again each time its suspended connection is
 * resumed. Returns MHD_YES after suspending to wait, MHD_NO to close the
 * connection unanswered (client gone, abort, reset fault).
 */
enum MHD_Result ttsim_answer_step(struct ttsim_server *srv, struct MHD_Connection *conn,
			    struct ttsim_engine_conn *sc)
{
	struct ttsim_engine_req *rq = sc->rq;
	bool fault = rq->reset_at >= 0;
	double now = mono_now();

	pthread_mutex_lock(&srv->mu);
	if (srv->stopping)
		goto drop;
	if (!rq->finished) {
		/* Every token resumes the wait, so the timer alone would never
		 * probe while tokens come: probe by time as well. */
		if (rq->probe || now >= rq->probe_at) {
			if (ttsim_stream_peer_closed(conn))
				goto drop;
			rq->probe_at = now + TTSIM_ENGINE_PROBE_S;
		}
		ttsim_engine_suspend(srv, rq, rq->probe_at);
		pthread_mutex_unlock(&srv->mu);
		return MHD_YES;
	}
	if (rq->aborted || fault) {
		pthread_mutex_unlock(&srv->mu);
		if (fault)
			ttsim_stream_linger0(conn);
		return MHD_NO;
	}
	if (rq->stall_at >= 0 && !rq->stalled) {
		now = mono_now();
		if (rq->stall_until == 0)
			rq->stall_until = now + srv->c.stall_s;
		if (now < rq->stall_until) {
			ttsim_engine_suspend(srv, rq, rq->stall_until);
			pthread_mutex_unlock(&srv->mu);
			return MHD_YES;
		}
		rq->stalled = true;
	}
	pthread_mutex_unlock(&srv->mu);
	sc->wait_full = false;
	/* Finished requests are immutable: reading without the lock is safe. */
	return answer_full(srv, conn, rq);
drop:
	pthread_mutex_unlock(&srv->mu);
	return MHD_NO;
}
