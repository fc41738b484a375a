/*
 * stream.c - a streamed answer: each server's SSE events (vLLM chat and
 * completions, current and 0.10; llama-server), the order they come in and
 * where faults cut in, MHD's content reader that hands them over without
 * waiting (suspending the connection when nothing is ready), the send
 * stamps and the send log (see stream.h).
 */
#include "tools/ttsim/stream.h"
#include "base/mono.h"
#include "tools/ttsim/engine.h"
#include "tools/ttsim/log.h"
#include "tools/ttsim/reply.h"
#include "tools/ttsim/sendstamp.h"
#include "tools/ttsim/vocab.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define STREAM_MERGE_MAX 64             /* tokens one chunk carries at most */

/* True when the client has closed its end (a readable socket with EOF). */
bool ttsim_stream_peer_closed(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci;
	char b;
	ssize_t r;

	if (!conn)
		return false;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci)
		return false;
	r = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

/* Abortive close: the peer sees a reset, as when a proxy or server dies. */
void ttsim_stream_linger0(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
		MHD_CONNECTION_INFO_CONNECTION_FD);
	struct linger lg = { 1, 0 };

	if (ci)
		(void)setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void stream_chunk(struct ttsim_engine_req *rq, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void stream_chunk(struct ttsim_engine_req *rq, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(rq->chunk, sizeof(rq->chunk), fmt, ap);
	va_end(ap);
	rq->chunk_len = w < 0 ? 0 : ((size_t)w < sizeof(rq->chunk) ? (size_t)w : sizeof(rq->chunk) - 1);
	rq->chunk_off = 0;
}

/* Appends printf output to rq->chunk (truncated at the cap, never overrun). */
static void stream_cat(struct ttsim_engine_req *rq, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void stream_cat(struct ttsim_engine_req *rq, const char *fmt, ...)
{
	va_list ap;
	int w;
	size_t room = sizeof(rq->chunk) - rq->chunk_len;

	if (room <= 1)
		return;
	va_start(ap, fmt);
	w = vsnprintf(rq->chunk + rq->chunk_len, room, fmt, ap);
	va_end(ap);
	if (w > 0)
		rq->chunk_len += (size_t)w < room ? (size_t)w : room - 1;
}

/* The usage object: prompt, total, completion, in vLLM's field order
 * (UsageInfo); with details, its prompt_tokens_details null as
 * exclude_unset=False dumps it. */
static void stream_cat_usage(struct ttsim_engine_req *rq, int n_out, bool details)
{
	stream_cat(rq, "{\"prompt_tokens\":%d,\"total_tokens\":%d,\"completion_tokens\":%d%s}",
		rq->n_prompt, rq->n_prompt + n_out, n_out, details ? ",\"prompt_tokens_details\":null" : "");
}

/* The text of tokens [lo, hi] as a JSON string's inside; token_ids as a list. */
static void stream_token_text(const struct ttsim_engine_req *rq, int lo, int hi, char *text, size_t cap, char *ids,
			      size_t ids_cap)
{
	size_t tl = 0, il = 0;
	int i, w;

	text[0] = 0;
	ids[il++] = '[';
	for (i = lo; i <= hi; i++) {
		ttsim_vocab_append(rq->toks[i], text, cap, &tl);
		w = snprintf(ids + il, ids_cap - il, "%s%d", i > lo ? "," : "", rq->toks[i]);
		if (w > 0 && (size_t)w < ids_cap - il)
			il += (size_t)w;
	}
	if (il + 2 <= ids_cap) {
		ids[il++] = ']';
		ids[il] = 0;
	}
}

/*
 * One chunk carrying tokens [lo, hi] (several when they piled up or with a
 * stream interval), in the server's own shape. The bytes follow upstream:
 * vLLM chat (chat_completion/serving.py, model_dump_json(exclude_unset=True):
 * token_ids is set on every choice, stop_reason on the finishing one),
 * vLLM completions (completion/serving.py, exclude_unset=False: usage,
 * stop_reason, prompt_token_ids and token_ids in every chunk), llama-server
 * (keys in nlohmann::json's sorted order, no stop_reason).
 */
static void stream_token_chunk(struct ttsim_server *srv, struct ttsim_engine_req *rq, int lo, int hi)
{
	char text[STREAM_MERGE_MAX * 24 + 8], ids[STREAM_MERGE_MAX * 8 + 8];
	bool last = rq->finished && !rq->aborted && hi == rq->n_tok - 1;
	bool v010 = srv->c.vllm_minor == 10;
	bool think = rq->chat && lo < srv->c.reasoning;
	const char *tids = rq->return_token_ids ? ids : "null";

	stream_token_text(rq, lo, hi, text, sizeof(text), ids, sizeof(ids));
	rq->chunk_len = rq->chunk_off = 0;
	if (srv->c.profile == TTSIM_LLAMACPP) {
		/* server_task_result_cmpl_partial::to_json_oaicompat_chat and
		 * ::to_json_oaicompat: ordered_json, keys as inserted */
		if (rq->chat)
			stream_cat(rq, "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":"
				"{\"content\":\"%s\"}}],\"created\":%ld,\"id\":\"%s\",\"model\":%s,"
				"\"system_fingerprint\":\"%s\",\"object\":\"chat.completion.chunk\"}\n\n",
				text, rq->created, rq->id, rq->model_json, TTSIM_ENGINE_LLAMA_BUILD);
		else
			stream_cat(rq, "data: {\"choices\":[{\"text\":\"%s\",\"index\":0,\"logprobs\":null,"
				"\"finish_reason\":null}],\"created\":%ld,\"model\":%s,\"system_fingerprint\":"
				"\"%s\",\"object\":\"text_completion\",\"id\":\"%s\"}\n\n", text,
				rq->created, rq->model_json, TTSIM_ENGINE_LLAMA_BUILD, rq->id);
	} else if (rq->chat) {
		stream_cat(rq, "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"created\":%ld,"
			"\"model\":%s,\"choices\":[{\"index\":0,\"delta\":{\"%s\":\"%s\"},\"logprobs\":null,"
			"\"finish_reason\":%s%s", rq->id, rq->created, srv->model_json,
			think ? (v010 ? "reasoning_content" : "reasoning") : "content", text,
			last ? "\"length\"" : "null", last ? ",\"stop_reason\":null" : "");
		if (!v010)
			stream_cat(rq, ",\"token_ids\":%s", tids);
		stream_cat(rq, "}]");
		if (rq->continuous_usage) {
			stream_cat(rq, ",\"usage\":");
			stream_cat_usage(rq, hi + 1, false);
		}
		stream_cat(rq, "}\n\n");
	} else {
		stream_cat(rq, "data: {\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%ld,"
			"\"model\":%s,\"choices\":[{\"index\":0,\"text\":\"%s\",\"logprobs\":null,"
			"\"finish_reason\":%s,\"stop_reason\":null", rq->id, rq->created, srv->model_json,
			text, last ? "\"length\"" : "null");
		if (!v010)
			stream_cat(rq, ",\"prompt_token_ids\":null,\"token_ids\":%s", tids);
		stream_cat(rq, "}],\"usage\":");
		if (rq->continuous_usage)
			stream_cat_usage(rq, hi + 1, true);
		else
			stream_cat(rq, "null");
		stream_cat(rq, "}\n\n");
	}
	rq->chunk_lo = lo;
	rq->chunk_hi = hi;
}

/* result_timings::to_json, from the server's own clock: prompt processing
 * (uncached prompt tokens) until the first token, generation after it. */
static void stream_cat_timings(struct ttsim_engine_req *rq)
{
	int pn = rq->n_prompt - rq->res.cached_tokens;
	double pms = (rq->t_first - rq->t_arrival) * 1e3, gms = (rq->t_last - rq->t_first) * 1e3;
	char a[32], b[32], c[32], d[32], e[32], f[32];

	if (pn < 1)
		pn = 1;
	stream_cat(rq, "\"timings\":{\"prompt_n\":%d,\"prompt_ms\":%s,\"prompt_per_token_ms\":%s,"
		"\"prompt_per_second\":%s,\"predicted_n\":%d,\"predicted_ms\":%s,"
		"\"predicted_per_token_ms\":%s,\"predicted_per_second\":%s}", pn,
		ttsim_reply_jnum(pms, a, sizeof(a)), ttsim_reply_jnum(pms / pn, b, sizeof(b)),
		ttsim_reply_jnum(1e3 / pms * pn, c, sizeof(c)), rq->n_tok, ttsim_reply_jnum(gms, d, sizeof(d)),
		ttsim_reply_jnum(gms / rq->n_tok, e, sizeof(e)), ttsim_reply_jnum(1e3 / gms * rq->n_tok, f, sizeof(f)));
}

/* llama-server's last chunk (server_task_result_cmpl_final): no text, the
 * finish, usage (sent without include_usage too) and timings. */
static void stream_llama_final(struct ttsim_server *srv, struct ttsim_engine_req *rq)
{
	(void)srv;
	rq->chunk_len = rq->chunk_off = 0;
	if (rq->chat)
		stream_cat(rq, "data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],"
			"\"created\":%ld,\"id\":\"%s\",\"model\":%s,\"system_fingerprint\":\"%s\","
			"\"object\":\"chat.completion.chunk\",", rq->created, rq->id, rq->model_json,
			TTSIM_ENGINE_LLAMA_BUILD);
	else
		stream_cat(rq, "data: {\"choices\":[{\"text\":\"\",\"index\":0,\"logprobs\":null,"
			"\"finish_reason\":\"length\"}],\"created\":%ld,\"model\":%s,\"system_fingerprint\":"
			"\"%s\",\"object\":\"text_completion\",", rq->created, rq->model_json, TTSIM_ENGINE_LLAMA_BUILD);
	stream_cat(rq, "\"usage\":{\"completion_tokens\":%d,\"prompt_tokens\":%d,\"total_tokens\":%d},",
		rq->n_tok, rq->n_prompt, rq->n_prompt + rq->n_tok);
	if (!rq->chat)
		stream_cat(rq, "\"id\":\"%s\",", rq->id);
	stream_cat_timings(rq);
	stream_cat(rq, "}\n\n");
}

/*
 * Fills rq->chunk with the next piece of the stream, without waiting.
 * Returns 1 with a chunk, 2 when there is nothing to send yet (*wake_at: when
 * to look again at the latest), 0 at the clean end, -1 to drop the
 * connection, -2 to end the stream early (truncation fault). mu held.
 */
static int stream_next_chunk(struct ttsim_server *srv, struct ttsim_engine_req *rq, double *wake_at)
{
	double now;
	int hi, lim;

	rq->chunk_lo = 0;
	rq->chunk_hi = -1;
	for (;;) {
		if (srv->stopping)
			return -1;
		switch (rq->phase) {
		case TTSIM_ENGINE_SP_ROLE:
			if (!rq->chat || srv->c.profile == TTSIM_LLAMACPP) {
				rq->phase = TTSIM_ENGINE_SP_TOKENS;
				continue;
			}
			/* vLLM sends the role when the engine's first output arrives,
			 * not before the prefill */
			if (!rq->n_tok && !rq->finished)
				break;
			rq->phase = TTSIM_ENGINE_SP_TOKENS;
			stream_chunk(rq, "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\","
				  "\"created\":%ld,\"model\":%s,\"choices\":[{\"index\":0,"
				  "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
				  "\"logprobs\":null,\"finish_reason\":null}]", rq->id,
				  rq->created, srv->model_json);
			if (rq->continuous_usage) {
				stream_cat(rq, ",\"usage\":");
				stream_cat_usage(rq, 0, false);
			}
			stream_cat(rq, "%s}\n\n", srv->c.vllm_minor == 10 ? "" : ",\"prompt_token_ids\":null");
			return 1;
		case TTSIM_ENGINE_SP_TOKENS:
			if (rq->n_sent < rq->n_tok) {
				if (rq->error_at == rq->n_sent) {
					rq->phase = TTSIM_ENGINE_SP_ERROR;
					continue;
				}
				if (rq->reset_at == rq->n_sent)
					return -1;
				if (rq->truncate_at == rq->n_sent)
					return -2;
				if (rq->stall_at == rq->n_sent && !rq->stalled) {
					now = mono_now();
					if (rq->stall_until == 0)
						rq->stall_until = now + srv->c.stall_s;
					if (now < rq->stall_until) {
						*wake_at = rq->stall_until;
						return 2;
					}
					rq->stalled = true;
				}
				/* every token that is here goes in one chunk, as vLLM's
				 * output processor merges outputs a slow reader left */
				hi = rq->n_tok - 1;
				/* llama-server sends each token as its own event */
				lim = srv->c.no_merge || srv->c.profile == TTSIM_LLAMACPP ? 1 : STREAM_MERGE_MAX;
				if (srv->c.stream_interval > 1 && srv->c.no_merge)
					lim = srv->c.stream_interval;
				if (hi > rq->n_sent + lim - 1)
					hi = rq->n_sent + lim - 1;
				/* the last token's chunk carries finish_reason: wait for
				 * the finish before sending it */
				if (hi == rq->max_tokens - 1 && !rq->finished) {
					if (hi == rq->n_sent)
						break;
					hi--;
				}
				/* a fault's token starts a chunk of its own */
				if (rq->error_at > rq->n_sent && rq->error_at <= hi)
					hi = rq->error_at - 1;
				if (rq->reset_at > rq->n_sent && rq->reset_at <= hi)
					hi = rq->reset_at - 1;
				if (rq->truncate_at > rq->n_sent && rq->truncate_at <= hi)
					hi = rq->truncate_at - 1;
				if (rq->stall_at > rq->n_sent && rq->stall_at <= hi && !rq->stalled)
					hi = rq->stall_at - 1;
				/* thinking text and the answer never share a chunk */
				if (rq->chat && rq->n_sent < srv->c.reasoning && hi >= srv->c.reasoning)
					hi = srv->c.reasoning - 1;
				/* --stream-interval: at least that many tokens a chunk,
				 * unless the stream ends first */
				if (srv->c.stream_interval > 1 && hi - rq->n_sent + 1 < srv->c.stream_interval &&
				    !rq->finished)
					break;
				stream_token_chunk(srv, rq, rq->n_sent, hi);
				rq->n_sent = hi + 1;
				return 1;
			}
			if (rq->finished) {
				if (rq->aborted)
					return -1;
				rq->phase = srv->c.profile == TTSIM_LLAMACPP ? TTSIM_ENGINE_SP_FINAL : TTSIM_ENGINE_SP_USAGE;
				continue;
			}
			break;
		case TTSIM_ENGINE_SP_FINAL:
			rq->phase = TTSIM_ENGINE_SP_DONE;
			stream_llama_final(srv, rq);
			return 1;
		case TTSIM_ENGINE_SP_ERROR:
			/* the engine failed the request inside the stream: vLLM sends
			 * the error as a data chunk (json.dumps separators), llama-server
			 * as an error field; both then end with [DONE] */
			rq->phase = TTSIM_ENGINE_SP_DONE;
			if (srv->c.profile == TTSIM_LLAMACPP)
				/* update_slots' llama_decode failure, to every slot
				 * (send_error, ERROR_TYPE_SERVER), as an "error" event */
				stream_chunk(rq, "error: {\"code\":500,\"message\":\"Input prompt is too big compared "
					  "to KV size. Please try increasing KV size.\",\"type\":\"server_error\"}\n\n");
			else if (srv->c.vllm_minor == 10)
				stream_chunk(rq, "data: {\"object\": \"error\", \"message\": \"Internal server "
					  "error\", \"type\": \"InternalServerError\", \"param\": null, \"code\": "
					  "500}\n\n");
			else
				stream_chunk(rq, "data: {\"error\": {\"message\": \"Internal server error\", "
					  "\"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}\n\n");
			return 1;
		case TTSIM_ENGINE_SP_USAGE:
			rq->phase = TTSIM_ENGINE_SP_DONE;
			if (rq->include_usage) {
				stream_chunk(rq, "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%ld,"
					  "\"model\":%s,\"choices\":[],\"usage\":", rq->id,
					  rq->chat ? "chat.completion.chunk" : "text_completion",
					  rq->created, srv->model_json);
				stream_cat_usage(rq, rq->n_tok, false);
				stream_cat(rq, "}\n\n");
				return 1;
			}
			continue;
		case TTSIM_ENGINE_SP_DONE:
			rq->phase = TTSIM_ENGINE_SP_END;
			stream_chunk(rq, "data: [DONE]\n\n");
			return 1;
		case TTSIM_ENGINE_SP_END:
			return 0;
		}
		/* Nothing to send yet: wait for a token, probing for a gone client
		 * now and then. */
		*wake_at = mono_now() + TTSIM_ENGINE_PROBE_S;
		return 2;
	}
}

/*
 * Appends rq's send stamps to the send log in one write, once. Polling
 * thread only (the only writer of the log and of rq->stamps), mu not held:
 * a request's lines are written together when its stream ends, so the
 * per-token path has no stdio and no lock.
 */
void ttsim_stream_log_stamps(struct ttsim_server *srv, struct ttsim_engine_req *rq)
{
	char *buf;
	size_t cap, len = 0;
	int i, w;

	if (!srv->send_log || !rq->stamps || rq->logged)
		return;
	rq->logged = true;
	if (!rq->n_stamped)
		return;
	cap = (size_t)rq->n_stamped * (TTSIM_ID_MAX + 64);
	buf = malloc(cap);
	if (!buf) {
		ttsim_log(2, "WARNING", "ttsim", "send log: out of memory, %d stamps of %s lost",
			  rq->n_stamped, rq->id);
		return;
	}
	for (i = 0; i < rq->n_stamped; i++) {
		w = snprintf(buf + len, cap - len,
			     "{\"req\":\"%s\",\"i\":%d,\"mono\":%.7f,\"mono_start\":%.7f}\n",
			     rq->id, i, rq->stamps[2 * i + 1], rq->stamps[2 * i]);
		if (w < 0 || (size_t)w >= cap - len)
			break;
		len += (size_t)w;
	}
	fwrite(buf, 1, len, srv->send_log);
	fflush(srv->send_log);
	free(buf);
}

/*
 * MHD's content reader. Hands over as many whole pieces as fit (each token
 * still its own SSE event), so tokens that piled up while the connection
 * waited leave in one send. With nothing to send it suspends the connection
 * and returns 0; a token, a finish or a timer resumes it.
 *
 * Send stamps. MHD (0.9.75, connection.c) sends what a reader call returned
 * at this connection's next turn of its polling loop, not at once, and only
 * once the whole piece has gone to the socket does it call the reader again.
 * So at the reader's entry the last send on the connection's socket since
 * the piece was handed over is the one that finished it (sendstamp.h): the
 * tokens of that piece get its start and return, first thing, before any
 * lock. Without such a send (the socket unknown) the entry time stands for
 * both, which is later by up to a polling round. (A stamp taken when the
 * bytes are returned would include the wait for the next turn, milliseconds
 * with a thousand streams.) Every piece is followed by such a call: the
 * stream always ends with one that returns its end.
 */
ssize_t ttsim_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct ttsim_engine_req *rq = cls;
	struct ttsim_server *srv = rq->srv;
	size_t n = 0, k;
	int r = 1, tok_lo = -1, tok_hi = -1, i;
	double wake_at = 0, t, t0, s0, s1;

	(void)pos;
	if (rq->pend_lo <= rq->pend_hi) {
		t = t0 = mono_now();
		if (!ttsim_sendstamp_last(rq->fd, &s0, &s1) && s0 >= rq->pend_at && s1 <= t) {
			t0 = s0;
			t = s1;
		}
		for (i = rq->pend_lo; i <= rq->pend_hi; i++) {
			rq->stamps[2 * i] = t0;
			rq->stamps[2 * i + 1] = t;
		}
		rq->n_stamped = rq->pend_hi + 1;
		rq->pend_lo = 0;
		rq->pend_hi = -1;
	}
	pthread_mutex_lock(&srv->mu);
	if (rq->probe) {
		rq->probe = false;
		if (ttsim_stream_peer_closed(rq->conn))
			rq->term = -1;
	}
	while (n < max && !rq->term) {
		if (rq->chunk_off >= rq->chunk_len) {
			r = stream_next_chunk(srv, rq, &wake_at);
			if (r == 2)
				break;
			if (r <= 0) {
				rq->term = r ? r : 1;
				break;
			}
		}
		k = rq->chunk_len - rq->chunk_off;
		if (k > max - n)
			k = max - n;
		memcpy(buf + n, rq->chunk + rq->chunk_off, k);
		n += k;
		rq->chunk_off += k;
		if (rq->chunk_off >= rq->chunk_len && rq->chunk_lo <= rq->chunk_hi) {
			if (tok_lo < 0)
				tok_lo = rq->chunk_lo;
			tok_hi = rq->chunk_hi;
		}
	}
	if (!n) {
		if (!rq->term) {
			ttsim_engine_suspend(srv, rq, wake_at);
			pthread_mutex_unlock(&srv->mu);
			return 0;
		}
		r = rq->term;
		pthread_mutex_unlock(&srv->mu);
		/* Written before MHD ends the response: a client that saw the end
		 * of the stream finds its stamps in the log. */
		ttsim_stream_log_stamps(srv, rq);
		if (r == -1) {
			ttsim_stream_linger0(rq->conn);
			return MHD_CONTENT_READER_END_WITH_ERROR;
		}
		return MHD_CONTENT_READER_END_OF_STREAM;
	}
	pthread_mutex_unlock(&srv->mu);
	if (tok_lo >= 0 && rq->stamps) {
		rq->pend_lo = tok_lo;
		rq->pend_hi = tok_hi;
		rq->pend_at = mono_now();
	}
	return (ssize_t)n;
}
