/*
 * engine.c - a completion request's lifetime (ids, references, fault
 * draws) and what moves its connection: suspend and wake, the model's
 * callbacks (a token, a finish), the generator loop that steps the model and
 * the housekeeping loop that resumes connections for their timers (see
 * engine.h, and server.c for the threads and the locking).
 */
#include "tools/ttsim/engine.h"
#include "base/mono.h"
#include "base/rng.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

double ttsim_engine_rand(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

void ttsim_engine_req_release(struct ttsim_engine_req *rq)
{
	struct ttsim_server *srv = rq->srv;

	if (--rq->refs > 0)
		return;
	if (rq->prev)
		rq->prev->next = rq->next;
	else if (srv->live == rq)
		srv->live = rq->next;
	if (rq->next)
		rq->next->prev = rq->prev;
	free(rq->stamps);
	free(rq->echo_toks);
	free(rq->echo_text);
	free(rq->toks);
	free(rq);
}

/* llama-server's completion id: "chatcmpl-" and 32 of [0-9A-Za-z]. */
static void engine_llama_id(char *id, uint64_t *rng)
{
	static const char al[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	uint64_t x = 0;
	int i;

	memcpy(id, "chatcmpl-", 9);
	for (i = 0; i < 32; i++) {
		if (i % 10 == 0)
			x = rng_next(rng);   /* 62^10 < 2^64 */
		id[9 + i] = al[x % 62];
		x /= 62;
	}
	id[41] = 0;
}

struct ttsim_engine_req *ttsim_engine_req_new(struct ttsim_server *srv, bool chat, int n_prompt, int max_tokens,
				  const char *xrid)
{
	struct ttsim_engine_req *rq = calloc(1, sizeof(*rq));
	uint64_t a, b;

	if (!rq)
		return NULL;
	rq->toks = malloc((size_t)max_tokens * sizeof(int));
	if (!rq->toks) {
		free(rq);
		return NULL;
	}
	rq->srv = srv;
	rq->chat = chat;
	rq->n_prompt = n_prompt;
	rq->max_tokens = max_tokens;
	rq->reset_at = rq->truncate_at = rq->stall_at = -1;
	rq->chunk_lo = 0;
	rq->chunk_hi = -1;
	rq->error_at = -1;
	rq->pend_lo = 0;
	rq->pend_hi = -1;
	rq->fd = -1;
	rq->refs = 1;
	rq->created = (long)time(NULL);
	rq->t_arrival = mono_now();
	a = rng_next(&srv->rng);
	b = rng_next(&srv->rng);
	if (srv->c.profile == TTSIM_LLAMACPP)
		/* gen_chatcmplid(): "chatcmpl-" and 32 letters or digits, for
		 * completions too (utils.hpp random_string) */
		engine_llama_id(rq->id, &srv->rng);
	else if (xrid && *xrid)
		/* vLLM: the X-Request-Id is the external id (engine/serving.py) */
		snprintf(rq->id, sizeof(rq->id), "%s-%.*s", chat ? "chatcmpl" : "cmpl",
			 TTSIM_ID_MAX - 30, xrid);
	else
		snprintf(rq->id, sizeof(rq->id), "%s-%016llx%016llx", chat ? "chatcmpl" : "cmpl",
			 (unsigned long long)a, (unsigned long long)b);
	/* since vLLM PR #27987 the engine's id is `<external id>-<8 hex>`
	 * (v1/engine/input_processor.py); the model, and so the audit, sees that */
	if (srv->c.profile == TTSIM_VLLM && srv->c.vllm_minor != 10)
		snprintf(rq->eid, sizeof(rq->eid), "%.*s-%08llx", TTSIM_ID_MAX - 10, rq->id,
			 (unsigned long long)(rng_next(&srv->rng) & 0xffffffffu));
	else
		snprintf(rq->eid, sizeof(rq->eid), "%s", rq->id);
	rq->next = srv->live;
	if (srv->live)
		srv->live->prev = rq;
	srv->live = rq;
	return rq;
}

/* A fault at a token index in [0, n), or -1. */
int ttsim_engine_fault_at(struct ttsim_server *srv, double rate, int n)
{
	if (rate <= 0 || ttsim_engine_rand(&srv->rng) >= rate)
		return -1;
	return n > 1 ? 1 + (int)(rng_next(&srv->rng) % (uint64_t)(n - 1)) : 0;
}

/* Wakes the polling thread: MHD without its own thread learns of a resume
 * only at its next round. Any thread; async-signal-safe. */
void ttsim_engine_kick(struct ttsim_server *srv)
{
	uint64_t one = 1;

	/* EAGAIN: the counter is already non-zero, the wake is pending */
	(void)!write(srv->wake_fd, &one, sizeof(one));
}

/*
 * Resumes rq's connection if we suspended it. mu held. Only a connection
 * suspended by us is resumed, and only once per suspension: the suspension
 * and this call both happen under mu, so a resume never overtakes it.
 */
void ttsim_engine_wake(struct ttsim_engine_req *rq, bool probe)
{
	if (!rq->suspended || !rq->conn)
		return;
	rq->suspended = false;
	rq->probe = probe;
	MHD_resume_connection(rq->conn);
	ttsim_engine_kick(rq->srv);
}

/* Suspends the connection until ttsim_engine_wake; the timer resumes it at wake_at
 * at the latest. Called from MHD's callbacks for this connection, mu held. */
void ttsim_engine_suspend(struct ttsim_server *srv, struct ttsim_engine_req *rq, double wake_at)
{
	rq->suspended = true;
	rq->probe = false;
	rq->wake_at = wake_at;
	MHD_suspend_connection(rq->conn);
	if (wake_at < srv->hk_next)
		pthread_cond_signal(&srv->hk_cv);
}

/* --- model callbacks (generator thread, mu held) ----------------------------- */

void ttsim_engine_on_token(void *ctx, void *user, int index, int tok)
{
	struct ttsim_server *srv = ctx;
	struct ttsim_engine_req *rq = user;
	double now = mono_now();

	if (index != rq->n_tok || rq->n_tok >= rq->max_tokens)
		return;
	rq->toks[rq->n_tok++] = tok;
	if (index == 0) {
		ttsim_metrics_add_ttft(&srv->ttft, now - rq->t_arrival);
		rq->t_first = now;
	}
	else
		ttsim_metrics_add_itl(&srv->itl, now - rq->t_last);
	rq->t_last = now;
	ttsim_engine_wake(rq, false);
}

void ttsim_engine_on_finish(void *ctx, void *user, const struct ttsim_req_result *res)
{
	struct ttsim_server *srv = ctx;
	struct ttsim_engine_req *rq = user;

	rq->finished = true;
	rq->aborted = res->aborted;
	rq->res = *res;
	if (res->aborted) {
		srv->req_aborted++;
	} else {
		srv->req_ok++;
		ttsim_metrics_add_ttft(&srv->e2e, mono_now() - rq->t_arrival);
	}
	ttsim_engine_wake(rq, false);
	ttsim_engine_req_release(rq);
}

/* --- the generator loop ------------------------------------------------------ */

void *ttsim_engine_gen_main(void *arg)
{
	struct ttsim_server *srv = arg;
	struct ttsim_step st;
	double dur;

	pthread_mutex_lock(&srv->mu);
	while (!srv->stopping) {
		if (!ttsim_model_running(srv->model) && !ttsim_model_waiting(srv->model)) {
			pthread_cond_wait(&srv->work_cv, &srv->mu);
			continue;
		}
		ttsim_model_step(srv->model, &st);
		if (srv->c.noise > 0 && srv->noise_steps++ % 256 == 0)
			srv->noise_factor = 1.0 + srv->c.noise * ttsim_engine_rand(&srv->noise_rng);
		dur = st.seconds * srv->c.time_scale * srv->noise_factor;
		pthread_mutex_unlock(&srv->mu);
		if (dur > 0)
			mono_sleep(dur);
		else
			sched_yield();
		pthread_mutex_lock(&srv->mu);
	}
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}

/*
 * The housekeeping loop: resumes every suspended connection whose timer is
 * due (a stall's end, or TTSIM_ENGINE_PROBE_S of waiting, after which its callback
 * checks whether the client is gone: MHD does not watch a suspended
 * connection's socket). Wakes at the earliest timer, at most every 20 ms.
 */
void *ttsim_engine_hk_main(void *arg)
{
	struct ttsim_server *srv = arg;
	struct ttsim_engine_req *rq;
	struct timespec ts;
	double now, next;

	pthread_mutex_lock(&srv->mu);
	while (!srv->stopping) {
		now = mono_now();
		next = now + TTSIM_ENGINE_PROBE_S;
		/* llama-server: connections whose stream ended are closed, a
		 * housekeeping turn after the stream at the latest */
		while (srv->dead) {
			struct ttsim_engine_sock *k = srv->dead;

			srv->dead = k->next_dead;
			k->next_dead = NULL;
			if (!k->shut)
				(void)shutdown(k->fd, SHUT_RDWR);
			k->shut = true;
		}
		for (rq = srv->live; rq; rq = rq->next) {
			if (!rq->suspended)
				continue;
			if (rq->wake_at <= now)
				ttsim_engine_wake(rq, true);
			else if (rq->wake_at < next)
				next = rq->wake_at;
		}
		if (next < now + 0.02)
			next = now + 0.02;
		srv->hk_next = next;
		ts.tv_sec = (time_t)next;
		ts.tv_nsec = (long)((next - (double)ts.tv_sec) * 1e9);
		pthread_cond_timedwait(&srv->hk_cv, &srv->mu, &ts);
	}
	pthread_mutex_unlock(&srv->mu);
	return NULL;
}
