/*
 * server.c - the HTTP surfaces over the generator model (see server.h).
 *
 * Threads: one polling thread (srv_poll_main) drives libmicrohttpd over
 * epoll and serves every connection; the generator thread steps the model;
 * a housekeeping thread wakes waiting connections for their timers (stall
 * end, disconnect probe). A connection with nothing to send is suspended
 * (MHD_suspend_connection) and resumed by whoever gives it something: the
 * generator on a token or a finish, the housekeeping thread on a timer. So
 * no thread ever blocks on a connection's behalf and, with one polling
 * thread, the time between taking a send stamp and handing the bytes to the
 * socket is not stretched by a thousand runnable connection threads sharing
 * a core.
 *
 * The polling thread is ours, not libmicrohttpd's internal one: that loop
 * (0.9.75 daemon.c MHD_epoll, unchanged upstream since) drains epoll in
 * rounds of 128 events and, when a round is full, waits again with the
 * round's timeout before it handles any of them; on an idle server that is
 * -1, so 128 requests arriving together are never answered (a hang about
 * once in 30-60 runs of 256 concurrent streams). Ours waits in poll(2) on
 * the epoll descriptor and our own wake descriptor, then runs one
 * non-blocking round (MHD_run, whose epoll waits have timeout 0).
 *
 * Locking: one mutex (srv->mu) guards the model, every struct sreq and the
 * counters. The generator thread holds it while it steps the model, and
 * releases it while it sleeps the step's duration. The polling thread holds
 * it while it submits, takes tokens, or formats a chunk, never while it takes
 * a send stamp or writes the send log. Lock order: srv->mu, then MHD's own
 * locks (suspend and resume are called with srv->mu held).
 */
#include "server.h"
#include "../../base/mono.h"
#include "../../base/rng.h"

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "log.h"
#include "sendstamp.h"
#include "vocab.h"

#define SRV_BODY_MAX (8u << 20)      /* request body cap */
#define SRV_CHUNK_MAX 8192           /* one SSE chunk: up to SRV_MERGE_MAX tokens */
#define SRV_MERGE_MAX 64             /* tokens one chunk carries at most */
#define SRV_BLOCK 16384              /* bytes MHD asks a stream for at most */
#define SRV_PROBE_S 0.5              /* a waiting connection checks for a gone client */
#define SRV_NAME_MAX 256
#define SRV_LLAMA_BUILD "b6000-ttsim"   /* llama-server's build_info: "b<number>-<commit>" */

/* vLLM's default histogram buckets (seconds). */
static const double srv_ttft_buckets[] = { 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
	0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0 };
static const double srv_itl_buckets[] = { 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4,
	0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0 };
#define SRV_NB_TTFT (sizeof(srv_ttft_buckets) / sizeof(srv_ttft_buckets[0]))
#define SRV_NB_ITL (sizeof(srv_itl_buckets) / sizeof(srv_itl_buckets[0]))

struct hist {
	unsigned long long count, bucket[32];
	double sum;
};

enum sphase { SP_ROLE = 0, SP_TOKENS, SP_FINAL, SP_ERROR, SP_USAGE, SP_DONE, SP_END };

/* One completion request, shared by its connection thread and the model. */
struct sreq {
	struct ttsim_server *srv;
	struct sreq *prev, *next;    /* srv->live */
	struct MHD_Connection *conn; /* for the disconnect probe */
	char id[TTSIM_ID_MAX];       /* the response's id */
	char eid[TTSIM_ID_MAX];      /* the engine's id (the audit's): vLLM suffixes the response id */
	bool chat, stream, include_usage;
	bool continuous_usage;       /* stream_options.continuous_usage_stats */
	bool return_token_ids;       /* return_token_ids: token_ids in every chunk */
	int error_at;                /* stream error fault: after this many tokens, -1 = none */
	int n_prompt, max_tokens;
	int *toks, n_tok;            /* delivered by the model, cap max_tokens */
	int n_sent;                  /* token chunks formatted for the client */
	bool submitted, finished, aborted;
	struct ttsim_req_result res;
	unsigned long long handle;
	int refs;                    /* connection + model */
	double t_arrival, t_first, t_last;  /* CLOCK_MONOTONIC */
	char model_json[2 * SRV_NAME_MAX + 3];  /* llama-server: the request's model, as JSON */
	int reset_at, truncate_at, stall_at;   /* token index of a fault, -1 = none */
	enum sphase phase;
	char chunk[SRV_CHUNK_MAX];
	size_t chunk_len, chunk_off;
	int chunk_lo, chunk_hi;      /* token indexes rq->chunk carries, lo > hi = none */
	long created;
	/* Waiting (srv->mu): suspended by us, to be resumed once. */
	bool suspended;
	bool probe;                  /* resumed by a timer: check for a gone client */
	double probe_at;             /* a non-streamed wait checks for a gone client then */
	double wake_at;              /* the housekeeping thread resumes it then */
	double stall_until;          /* end of the stall fault's pause, 0 = not begun */
	bool stalled;                /* the stall fault has been served */
	int term;                    /* end decided, after the bytes: 0 no, 1 clean, -1 drop, -2 cut */
	/* Send stamps: touched by the polling thread only, without srv->mu. */
	double *stamps;              /* per token, the send(2) that took its chunk: start and
				      * return, 2 per token; NULL = no log */
	int n_stamped;
	int pend_lo, pend_hi;        /* tokens handed to MHD, not yet stamped; lo > hi = none */
	double pend_at;              /* when they were handed over */
	int fd;                      /* the connection's socket (sendstamp.h), -1 unknown */
	bool logged;                 /* the stamps are in the send log */
};

/* Per socket (MHD's socket context): a llama-server connection is dead
 * once a stream on it ended. */
struct ssock {
	int fd;
	bool dead;                   /* a new request on it is closed unanswered */
	bool shut;                   /* the housekeeping thread shut it down */
	struct ssock *next_dead;     /* srv->dead, mu held */
};

/* Per-connection state (MHD's con_cls). */
struct sconn {
	char *body;
	size_t len, cap;
	bool too_big;
	struct sreq *rq;
	bool wait_full;              /* a non-streamed answer is pending */
};

struct ttsim_server {
	struct ttsim_server_config c;
	char model_name[SRV_NAME_MAX];
	char model_json[2 * SRV_NAME_MAX + 3];  /* the name as a JSON string */
	struct MHD_Daemon *d;
	int port;
	pthread_mutex_t mu;
	pthread_cond_t work_cv;
	pthread_cond_t hk_cv;        /* CLOCK_MONOTONIC */
	double hk_next;              /* when the housekeeping thread wakes next */
	pthread_t gen_thread, hk_thread, listen_thread, poll_thread;
	bool gen_started, hk_started, listen_started, stopping;
	bool poll_started;           /* set before the listening thread ends */
	int lfd;                     /* the bound socket, until MHD has it; -1 */
	int epoll_fd;                /* MHD's, once listening; -1 */
	int wake_fd;                 /* eventfd: wakes the polling thread (a resume, the stop) */
	struct ttsim_model *model;
	struct sreq *live;
	struct ssock *dead;          /* dead connections not yet shut down */
	uint64_t rng;                /* fault decisions and ids */
	uint64_t noise_rng;
	double noise_factor;
	unsigned long long noise_steps;
	double t_start;
	FILE *send_log;              /* written by the polling thread only */
	/* metrics */
	struct hist ttft, itl, e2e;
	unsigned long long req_ok, req_aborted, req_errors;
};

static double srv_rand(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static void hist_add(struct hist *h, const double *b, size_t nb, double v)
{
	size_t i;

	h->count++;
	h->sum += v;
	for (i = 0; i < nb; i++)
		if (v <= b[i])
			h->bucket[i]++;
}

void ttsim_server_config_default(struct ttsim_server_config *c)
{
	memset(c, 0, sizeof(*c));
	ttsim_model_config_default(&c->model);
	c->model_name = "ttsim/qwen36-sim";
	c->port = 8000;
	c->time_scale = 1.0;
	c->default_max_tokens = 16;
	c->max_connections = 4096;
	c->stall_s = 2.0;
}

/* --- request lifetime ------------------------------------------------------ */

/* Drops one reference; frees on the last. Called with mu held. */
static void sreq_release(struct sreq *rq)
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
	free(rq->toks);
	free(rq);
}

/* llama-server's completion id: "chatcmpl-" and 32 of [0-9A-Za-z]. */
static void srv_llama_id(char *id, uint64_t *rng)
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

static struct sreq *sreq_new(struct ttsim_server *srv, bool chat, int n_prompt, int max_tokens,
			     const char *xrid)
{
	struct sreq *rq = calloc(1, sizeof(*rq));
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
		srv_llama_id(rq->id, &srv->rng);
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
static int srv_fault_at(struct ttsim_server *srv, double rate, int n)
{
	if (rate <= 0 || srv_rand(&srv->rng) >= rate)
		return -1;
	return n > 1 ? 1 + (int)(rng_next(&srv->rng) % (uint64_t)(n - 1)) : 0;
}

/* Wakes the polling thread: MHD without its own thread learns of a resume
 * only at its next round. Any thread; async-signal-safe. */
static void srv_kick(struct ttsim_server *srv)
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
static void srv_wake(struct sreq *rq, bool probe)
{
	if (!rq->suspended || !rq->conn)
		return;
	rq->suspended = false;
	rq->probe = probe;
	MHD_resume_connection(rq->conn);
	srv_kick(rq->srv);
}

/* Suspends the connection until srv_wake; the timer resumes it at wake_at
 * at the latest. Called from MHD's callbacks for this connection, mu held. */
static void srv_suspend(struct ttsim_server *srv, struct sreq *rq, double wake_at)
{
	rq->suspended = true;
	rq->probe = false;
	rq->wake_at = wake_at;
	MHD_suspend_connection(rq->conn);
	if (wake_at < srv->hk_next)
		pthread_cond_signal(&srv->hk_cv);
}

/* --- model callbacks (generator thread, mu held) ----------------------------- */

static void srv_on_token(void *ctx, void *user, int index, int tok)
{
	struct ttsim_server *srv = ctx;
	struct sreq *rq = user;
	double now = mono_now();

	if (index != rq->n_tok || rq->n_tok >= rq->max_tokens)
		return;
	rq->toks[rq->n_tok++] = tok;
	if (index == 0) {
		hist_add(&srv->ttft, srv_ttft_buckets, SRV_NB_TTFT, now - rq->t_arrival);
		rq->t_first = now;
	}
	else
		hist_add(&srv->itl, srv_itl_buckets, SRV_NB_ITL, now - rq->t_last);
	rq->t_last = now;
	srv_wake(rq, false);
}

static void srv_on_finish(void *ctx, void *user, const struct ttsim_req_result *res)
{
	struct ttsim_server *srv = ctx;
	struct sreq *rq = user;

	rq->finished = true;
	rq->aborted = res->aborted;
	rq->res = *res;
	if (res->aborted) {
		srv->req_aborted++;
	} else {
		srv->req_ok++;
		hist_add(&srv->e2e, srv_ttft_buckets, SRV_NB_TTFT, mono_now() - rq->t_arrival);
	}
	srv_wake(rq, false);
	sreq_release(rq);
}

/* --- the generator loop ------------------------------------------------------ */

static void *srv_gen_main(void *arg)
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
			srv->noise_factor = 1.0 + srv->c.noise * srv_rand(&srv->noise_rng);
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
 * due (a stall's end, or SRV_PROBE_S of waiting, after which its callback
 * checks whether the client is gone: MHD does not watch a suspended
 * connection's socket). Wakes at the earliest timer, at most every 20 ms.
 */
static void *srv_hk_main(void *arg)
{
	struct ttsim_server *srv = arg;
	struct sreq *rq;
	struct timespec ts;
	double now, next;

	pthread_mutex_lock(&srv->mu);
	while (!srv->stopping) {
		now = mono_now();
		next = now + SRV_PROBE_S;
		/* llama-server: connections whose stream ended are closed, a
		 * housekeeping turn after the stream at the latest */
		while (srv->dead) {
			struct ssock *k = srv->dead;

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
				srv_wake(rq, true);
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

/* --- responses -------------------------------------------------------------- */

static enum MHD_Result srv_send(struct MHD_Connection *conn, unsigned code, const char *ctype,
				const char *body, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", ctype);
	ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result srv_send_json(struct MHD_Connection *conn, unsigned code, cJSON *j)
{
	char *s = cJSON_PrintUnformatted(j);
	enum MHD_Result ret;

	if (!s)
		return MHD_NO;
	ret = srv_send(conn, code, "application/json", s, strlen(s));
	free(s);
	return ret;
}

static const char *srv_err_type(unsigned code)
{
	switch (code) {
	case 400: return "BadRequestError";
	case 404: return "NotFoundError";
	case 503: return "ServiceUnavailableError";
	default: return "InternalServerError";
	}
}

/* format_error_response's type for each code llama-server sends. */
static const char *srv_llama_err_type(unsigned code)
{
	switch (code) {
	case 400: return "invalid_request_error";
	case 401: return "authentication_error";
	case 403: return "permission_error";
	case 404: return "not_found_error";
	case 501: return "not_supported_error";
	case 503: return "unavailable_error";
	default: return "server_error";
	}
}

/*
 * The error body each server sends. vLLM since PR #22099 nests it,
 * {"error":{"message","type","param","code"}} (engine/protocol.py ErrorResponse);
 * 0.10 sent {"object":"error","message",...} flat; llama-server
 * {"error":{"code","message","type"}}.
 */
static cJSON *srv_error_body(const struct ttsim_server *srv, unsigned code, const char *param,
			     const char *msg)
{
	cJSON *j = cJSON_CreateObject(), *e = j;

	if (!j)
		return NULL;
	if (srv->c.profile == TTSIM_LLAMACPP) {
		e = cJSON_AddObjectToObject(j, "error");
		cJSON_AddNumberToObject(e, "code", code);
		cJSON_AddStringToObject(e, "message", msg);
		cJSON_AddStringToObject(e, "type", srv_llama_err_type(code));
		return j;
	}
	if (srv->c.vllm_minor == 10)
		cJSON_AddStringToObject(j, "object", "error");
	else
		e = cJSON_AddObjectToObject(j, "error");
	cJSON_AddStringToObject(e, "message", msg);
	cJSON_AddStringToObject(e, "type", srv_err_type(code));
	if (param)
		cJSON_AddStringToObject(e, "param", param);
	else
		cJSON_AddNullToObject(e, "param");
	cJSON_AddNumberToObject(e, "code", code);
	return j;
}

static enum MHD_Result srv_error(const struct ttsim_server *srv, struct MHD_Connection *conn,
				 unsigned code, const char *param, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static enum MHD_Result srv_error(const struct ttsim_server *srv, struct MHD_Connection *conn,
				 unsigned code, const char *param, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	cJSON *j;
	enum MHD_Result ret;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	j = srv_error_body(srv, code, param, msg);
	if (!j)
		return MHD_NO;
	ret = srv_send_json(conn, code, j);
	cJSON_Delete(j);
	return ret;
}

static enum MHD_Result srv_detail(struct MHD_Connection *conn, unsigned code, const char *detail)
{
	char body[128];
	int n = snprintf(body, sizeof(body), "{\"detail\":\"%s\"}", detail);

	return srv_send(conn, code, "application/json", body, (size_t)n);
}

/* --- request parsing -------------------------------------------------------- */

/* An integer-valued JSON number within [lo, hi]. */
static bool srv_json_int(const cJSON *v, long long lo, long long hi, long long *out)
{
	double d;

	if (!cJSON_IsNumber(v))
		return false;
	d = v->valuedouble;
	if (!(d >= (double)lo && d <= (double)hi) || d != floor(d))
		return false;
	*out = (long long)d;
	return true;
}

/* The text of a chat message's content: a string, or an array of
 * {"type":"text","text":...} parts. NULL when malformed. Caller frees. */
static char *srv_content_text(const cJSON *content)
{
	const cJSON *part, *text;
	size_t len = 0, l;
	char *out, *tmp;

	if (cJSON_IsString(content))
		return strdup(content->valuestring);
	if (!cJSON_IsArray(content))
		return NULL;
	out = strdup("");
	if (!out)
		return NULL;
	cJSON_ArrayForEach(part, content) {
		text = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (!cJSON_IsObject(part) || !cJSON_IsString(text)) {
			free(out);
			return NULL;
		}
		l = strlen(text->valuestring);
		tmp = realloc(out, len + l + 2);
		if (!tmp) {
			free(out);
			return NULL;
		}
		out = tmp;
		if (len)
			out[len++] = ' ';
		memcpy(out + len, text->valuestring, l + 1);
		len += l;
	}
	return out;
}

/*
 * The prompt of a request as tokens: "prompt" (string or token id array) or
 * "messages" (chat template). On failure *err names the problem and *param
 * the field. Caller frees *toks.
 */
static bool srv_prompt(const cJSON *req, bool chat, int **toks, int *n, const char **param,
		       char *err, size_t errn)
{
	const cJSON *prompt, *msgs, *m, *role, *v;
	char *text = NULL, *tmp, *content;
	size_t len = 0, cap = 0, need, count, i;
	long long id;
	bool ok = false;

	*toks = NULL;
	*n = 0;
	if (!chat) {
		*param = "prompt";
		prompt = cJSON_GetObjectItemCaseSensitive(req, "prompt");
		if (!prompt) {
			snprintf(err, errn, "prompt: Field required");
			return false;
		}
		if (cJSON_IsArray(prompt)) {
			count = (size_t)cJSON_GetArraySize(prompt);
			if (!count || count > 1u << 22) {
				snprintf(err, errn, "prompt: token list must have 1..%u entries", 1u << 22);
				return false;
			}
			*toks = malloc(count * sizeof(int));
			if (!*toks) {
				snprintf(err, errn, "out of memory");
				return false;
			}
			i = 0;
			cJSON_ArrayForEach(v, prompt) {
				if (!srv_json_int(v, 0, TTSIM_VOCAB_SIZE - 1, &id)) {
					snprintf(err, errn, "prompt[%zu]: Input should be a valid token id "
						 "(0..%d); a list of strings is not supported", i,
						 TTSIM_VOCAB_SIZE - 1);
					free(*toks);
					*toks = NULL;
					return false;
				}
				(*toks)[i++] = (int)id;
			}
			*n = (int)count;
			return true;
		}
		if (!cJSON_IsString(prompt)) {
			snprintf(err, errn, "prompt: Input should be a valid string");
			return false;
		}
		text = strdup(prompt->valuestring);
		if (!text) {
			snprintf(err, errn, "out of memory");
			return false;
		}
		len = strlen(text);
	} else {
		*param = "messages";
		msgs = cJSON_GetObjectItemCaseSensitive(req, "messages");
		if (!msgs) {
			snprintf(err, errn, "messages: Field required");
			return false;
		}
		if (!cJSON_IsArray(msgs) || !cJSON_GetArraySize(msgs)) {
			snprintf(err, errn, "messages: Input should be a non-empty list");
			return false;
		}
		i = 0;
		cJSON_ArrayForEach(m, msgs) {
			role = cJSON_GetObjectItemCaseSensitive(m, "role");
			if (!cJSON_IsObject(m) || !cJSON_IsString(role)) {
				snprintf(err, errn, "messages[%zu].role: Field required", i);
				goto out;
			}
			content = srv_content_text(cJSON_GetObjectItemCaseSensitive(m, "content"));
			if (!content) {
				snprintf(err, errn, "messages[%zu].content: Input should be a valid string",
					 i);
				goto out;
			}
			need = len + strlen(role->valuestring) + strlen(content) + 64;
			if (need > cap) {
				cap = need * 2;
				tmp = realloc(text, cap);
				if (!tmp) {
					free(content);
					snprintf(err, errn, "out of memory");
					goto out;
				}
				text = tmp;
			}
			len += (size_t)sprintf(text + len, "<|im_start|> %s\n%s <|im_end|>\n",
					       role->valuestring, content);
			free(content);
			i++;
		}
		tmp = realloc(text, len + 32);
		if (!tmp) {
			snprintf(err, errn, "out of memory");
			goto out;
		}
		text = tmp;
		len += (size_t)sprintf(text + len, "<|im_start|> assistant\n");
	}
	count = ttsim_vocab_tokenize(text, len, NULL, 0);
	if (!count) {
		snprintf(err, errn, "%s: the prompt is empty", *param);
		goto out;
	}
	if (count > 1u << 22) {
		snprintf(err, errn, "%s: prompt too long", *param);
		goto out;
	}
	*toks = malloc(count * sizeof(int));
	if (!*toks) {
		snprintf(err, errn, "out of memory");
		goto out;
	}
	ttsim_vocab_tokenize(text, len, *toks, count);
	*n = (int)count;
	ok = true;
out:
	free(text);
	return ok;
}

/* --- streaming ---------------------------------------------------------------- */

/* True when the client has closed its end (a readable socket with EOF). */
static bool srv_peer_closed(struct MHD_Connection *conn)
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
static void srv_set_linger0(struct MHD_Connection *conn)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
		MHD_CONNECTION_INFO_CONNECTION_FD);
	struct linger lg = { 1, 0 };

	if (ci)
		(void)setsockopt(ci->connect_fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

static void srv_chunk(struct sreq *rq, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void srv_chunk(struct sreq *rq, const char *fmt, ...)
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
static void srv_cat(struct sreq *rq, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void srv_cat(struct sreq *rq, const char *fmt, ...)
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
static void srv_cat_usage(struct sreq *rq, int n_out, bool details)
{
	srv_cat(rq, "{\"prompt_tokens\":%d,\"total_tokens\":%d,\"completion_tokens\":%d%s}",
		rq->n_prompt, rq->n_prompt + n_out, n_out, details ? ",\"prompt_tokens_details\":null" : "");
}

/* The text of tokens [lo, hi] as a JSON string's inside; token_ids as a list. */
static void srv_token_text(const struct sreq *rq, int lo, int hi, char *text, size_t cap, char *ids,
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
static void srv_token_chunk(struct ttsim_server *srv, struct sreq *rq, int lo, int hi)
{
	char text[SRV_MERGE_MAX * 24 + 8], ids[SRV_MERGE_MAX * 8 + 8];
	bool last = rq->finished && !rq->aborted && hi == rq->n_tok - 1;
	bool v010 = srv->c.vllm_minor == 10;
	bool think = rq->chat && lo < srv->c.reasoning;
	const char *tids = rq->return_token_ids ? ids : "null";

	srv_token_text(rq, lo, hi, text, sizeof(text), ids, sizeof(ids));
	rq->chunk_len = rq->chunk_off = 0;
	if (srv->c.profile == TTSIM_LLAMACPP) {
		/* server_task_result_cmpl_partial::to_json_oaicompat_chat and
		 * ::to_json_oaicompat: ordered_json, keys as inserted */
		if (rq->chat)
			srv_cat(rq, "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":"
				"{\"content\":\"%s\"}}],\"created\":%ld,\"id\":\"%s\",\"model\":%s,"
				"\"system_fingerprint\":\"%s\",\"object\":\"chat.completion.chunk\"}\n\n",
				text, rq->created, rq->id, rq->model_json, SRV_LLAMA_BUILD);
		else
			srv_cat(rq, "data: {\"choices\":[{\"text\":\"%s\",\"index\":0,\"logprobs\":null,"
				"\"finish_reason\":null}],\"created\":%ld,\"model\":%s,\"system_fingerprint\":"
				"\"%s\",\"object\":\"text_completion\",\"id\":\"%s\"}\n\n", text,
				rq->created, rq->model_json, SRV_LLAMA_BUILD, rq->id);
	} else if (rq->chat) {
		srv_cat(rq, "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"created\":%ld,"
			"\"model\":%s,\"choices\":[{\"index\":0,\"delta\":{\"%s\":\"%s\"},\"logprobs\":null,"
			"\"finish_reason\":%s%s", rq->id, rq->created, srv->model_json,
			think ? (v010 ? "reasoning_content" : "reasoning") : "content", text,
			last ? "\"length\"" : "null", last ? ",\"stop_reason\":null" : "");
		if (!v010)
			srv_cat(rq, ",\"token_ids\":%s", tids);
		srv_cat(rq, "}]");
		if (rq->continuous_usage) {
			srv_cat(rq, ",\"usage\":");
			srv_cat_usage(rq, hi + 1, false);
		}
		srv_cat(rq, "}\n\n");
	} else {
		srv_cat(rq, "data: {\"id\":\"%s\",\"object\":\"text_completion\",\"created\":%ld,"
			"\"model\":%s,\"choices\":[{\"index\":0,\"text\":\"%s\",\"logprobs\":null,"
			"\"finish_reason\":%s,\"stop_reason\":null", rq->id, rq->created, srv->model_json,
			text, last ? "\"length\"" : "null");
		if (!v010)
			srv_cat(rq, ",\"prompt_token_ids\":null,\"token_ids\":%s", tids);
		srv_cat(rq, "}],\"usage\":");
		if (rq->continuous_usage)
			srv_cat_usage(rq, hi + 1, true);
		else
			srv_cat(rq, "null");
		srv_cat(rq, "}\n\n");
	}
	rq->chunk_lo = lo;
	rq->chunk_hi = hi;
}

/* A double as nlohmann::json dumps it: the shortest form that reads back the
 * same, with ".0" when integral; null when not finite. */
static const char *srv_jnum(double v, char *buf, size_t n)
{
	int p;

	if (!isfinite(v)) {
		snprintf(buf, n, "null");
		return buf;
	}
	for (p = 1; p <= 17; p++) {
		snprintf(buf, n, "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (!strpbrk(buf, ".en") && strlen(buf) + 3 <= n)
		strcat(buf, ".0");
	return buf;
}

/* result_timings::to_json, from the server's own clock: prompt processing
 * (uncached prompt tokens) until the first token, generation after it. */
static void srv_cat_timings(struct sreq *rq)
{
	int pn = rq->n_prompt - rq->res.cached_tokens;
	double pms = (rq->t_first - rq->t_arrival) * 1e3, gms = (rq->t_last - rq->t_first) * 1e3;
	char a[32], b[32], c[32], d[32], e[32], f[32];

	if (pn < 1)
		pn = 1;
	srv_cat(rq, "\"timings\":{\"prompt_n\":%d,\"prompt_ms\":%s,\"prompt_per_token_ms\":%s,"
		"\"prompt_per_second\":%s,\"predicted_n\":%d,\"predicted_ms\":%s,"
		"\"predicted_per_token_ms\":%s,\"predicted_per_second\":%s}", pn,
		srv_jnum(pms, a, sizeof(a)), srv_jnum(pms / pn, b, sizeof(b)),
		srv_jnum(1e3 / pms * pn, c, sizeof(c)), rq->n_tok, srv_jnum(gms, d, sizeof(d)),
		srv_jnum(gms / rq->n_tok, e, sizeof(e)), srv_jnum(1e3 / gms * rq->n_tok, f, sizeof(f)));
}

/* llama-server's last chunk (server_task_result_cmpl_final): no text, the
 * finish, usage (sent without include_usage too) and timings. */
static void srv_llama_final(struct ttsim_server *srv, struct sreq *rq)
{
	(void)srv;
	rq->chunk_len = rq->chunk_off = 0;
	if (rq->chat)
		srv_cat(rq, "data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,\"delta\":{}}],"
			"\"created\":%ld,\"id\":\"%s\",\"model\":%s,\"system_fingerprint\":\"%s\","
			"\"object\":\"chat.completion.chunk\",", rq->created, rq->id, rq->model_json,
			SRV_LLAMA_BUILD);
	else
		srv_cat(rq, "data: {\"choices\":[{\"text\":\"\",\"index\":0,\"logprobs\":null,"
			"\"finish_reason\":\"length\"}],\"created\":%ld,\"model\":%s,\"system_fingerprint\":"
			"\"%s\",\"object\":\"text_completion\",", rq->created, rq->model_json, SRV_LLAMA_BUILD);
	srv_cat(rq, "\"usage\":{\"completion_tokens\":%d,\"prompt_tokens\":%d,\"total_tokens\":%d},",
		rq->n_tok, rq->n_prompt, rq->n_prompt + rq->n_tok);
	if (!rq->chat)
		srv_cat(rq, "\"id\":\"%s\",", rq->id);
	srv_cat_timings(rq);
	srv_cat(rq, "}\n\n");
}

/*
 * Fills rq->chunk with the next piece of the stream, without waiting.
 * Returns 1 with a chunk, 2 when there is nothing to send yet (*wake_at: when
 * to look again at the latest), 0 at the clean end, -1 to drop the
 * connection, -2 to end the stream early (truncation fault). mu held.
 */
static int srv_next_chunk(struct ttsim_server *srv, struct sreq *rq, double *wake_at)
{
	double now;
	int hi, lim;

	rq->chunk_lo = 0;
	rq->chunk_hi = -1;
	for (;;) {
		if (srv->stopping)
			return -1;
		switch (rq->phase) {
		case SP_ROLE:
			if (!rq->chat || srv->c.profile == TTSIM_LLAMACPP) {
				rq->phase = SP_TOKENS;
				continue;
			}
			/* vLLM sends the role when the engine's first output arrives,
			 * not before the prefill */
			if (!rq->n_tok && !rq->finished)
				break;
			rq->phase = SP_TOKENS;
			srv_chunk(rq, "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\","
				  "\"created\":%ld,\"model\":%s,\"choices\":[{\"index\":0,"
				  "\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
				  "\"logprobs\":null,\"finish_reason\":null}]", rq->id,
				  rq->created, srv->model_json);
			if (rq->continuous_usage) {
				srv_cat(rq, ",\"usage\":");
				srv_cat_usage(rq, 0, false);
			}
			srv_cat(rq, "%s}\n\n", srv->c.vllm_minor == 10 ? "" : ",\"prompt_token_ids\":null");
			return 1;
		case SP_TOKENS:
			if (rq->n_sent < rq->n_tok) {
				if (rq->error_at == rq->n_sent) {
					rq->phase = SP_ERROR;
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
				lim = srv->c.no_merge || srv->c.profile == TTSIM_LLAMACPP ? 1 : SRV_MERGE_MAX;
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
				srv_token_chunk(srv, rq, rq->n_sent, hi);
				rq->n_sent = hi + 1;
				return 1;
			}
			if (rq->finished) {
				if (rq->aborted)
					return -1;
				rq->phase = srv->c.profile == TTSIM_LLAMACPP ? SP_FINAL : SP_USAGE;
				continue;
			}
			break;
		case SP_FINAL:
			rq->phase = SP_DONE;
			srv_llama_final(srv, rq);
			return 1;
		case SP_ERROR:
			/* the engine failed the request inside the stream: vLLM sends
			 * the error as a data chunk (json.dumps separators), llama-server
			 * as an error field; both then end with [DONE] */
			rq->phase = SP_DONE;
			if (srv->c.profile == TTSIM_LLAMACPP)
				/* update_slots' llama_decode failure, to every slot
				 * (send_error, ERROR_TYPE_SERVER), as an "error" event */
				srv_chunk(rq, "error: {\"code\":500,\"message\":\"Input prompt is too big compared "
					  "to KV size. Please try increasing KV size.\",\"type\":\"server_error\"}\n\n");
			else if (srv->c.vllm_minor == 10)
				srv_chunk(rq, "data: {\"object\": \"error\", \"message\": \"Internal server "
					  "error\", \"type\": \"InternalServerError\", \"param\": null, \"code\": "
					  "500}\n\n");
			else
				srv_chunk(rq, "data: {\"error\": {\"message\": \"Internal server error\", "
					  "\"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}\n\n");
			return 1;
		case SP_USAGE:
			rq->phase = SP_DONE;
			if (rq->include_usage) {
				srv_chunk(rq, "data: {\"id\":\"%s\",\"object\":\"%s\",\"created\":%ld,"
					  "\"model\":%s,\"choices\":[],\"usage\":", rq->id,
					  rq->chat ? "chat.completion.chunk" : "text_completion",
					  rq->created, srv->model_json);
				srv_cat_usage(rq, rq->n_tok, false);
				srv_cat(rq, "}\n\n");
				return 1;
			}
			continue;
		case SP_DONE:
			rq->phase = SP_END;
			srv_chunk(rq, "data: [DONE]\n\n");
			return 1;
		case SP_END:
			return 0;
		}
		/* Nothing to send yet: wait for a token, probing for a gone client
		 * now and then. */
		*wake_at = mono_now() + SRV_PROBE_S;
		return 2;
	}
}

/*
 * Appends rq's send stamps to the send log in one write, once. Polling
 * thread only (the only writer of the log and of rq->stamps), mu not held:
 * a request's lines are written together when its stream ends, so the
 * per-token path has no stdio and no lock.
 */
static void srv_log_stamps(struct ttsim_server *srv, struct sreq *rq)
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
static ssize_t srv_stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct sreq *rq = cls;
	struct ttsim_server *srv = rq->srv;
	size_t n = 0, k;
	int r = 1, tok_lo = -1, tok_hi = -1, i;
	double wake_at = 0, t, t0, s0, s1;

	(void)pos;
	if (rq->pend_lo <= rq->pend_hi) {
		t = t0 = mono_now();
		if (!sendstamp_last(rq->fd, &s0, &s1) && s0 >= rq->pend_at && s1 <= t) {
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
		if (srv_peer_closed(rq->conn))
			rq->term = -1;
	}
	while (n < max && !rq->term) {
		if (rq->chunk_off >= rq->chunk_len) {
			r = srv_next_chunk(srv, rq, &wake_at);
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
			srv_suspend(srv, rq, wake_at);
			pthread_mutex_unlock(&srv->mu);
			return 0;
		}
		r = rq->term;
		pthread_mutex_unlock(&srv->mu);
		/* Written before MHD ends the response: a client that saw the end
		 * of the stream finds its stamps in the log. */
		srv_log_stamps(srv, rq);
		if (r == -1) {
			srv_set_linger0(rq->conn);
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

/* --- non-streaming answers -------------------------------------------------- */

/* llama-server's whole answer (server_task_result_cmpl_final::to_json_oaicompat
 * and ::to_json_oaicompat_chat), keys in its order, the numbers as
 * nlohmann::json writes them. */
static cJSON *srv_answer_llama(struct ttsim_server *srv, struct sreq *rq, const char *text)
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
	cJSON_AddStringToObject(j, "system_fingerprint", SRV_LLAMA_BUILD);
	cJSON_AddStringToObject(j, "object", rq->chat ? "chat.completion" : "text_completion");
	u = cJSON_AddObjectToObject(j, "usage");
	cJSON_AddNumberToObject(u, "completion_tokens", rq->n_tok);
	cJSON_AddNumberToObject(u, "prompt_tokens", rq->n_prompt);
	cJSON_AddNumberToObject(u, "total_tokens", rq->n_prompt + rq->n_tok);
	cJSON_AddStringToObject(j, "id", rq->id);
	t = cJSON_AddObjectToObject(j, "timings");
	cJSON_AddNumberToObject(t, "prompt_n", pn);
	cJSON_AddRawToObject(t, "prompt_ms", srv_jnum(pms, b, sizeof(b)));
	cJSON_AddRawToObject(t, "prompt_per_token_ms", srv_jnum(pms / pn, b, sizeof(b)));
	cJSON_AddRawToObject(t, "prompt_per_second", srv_jnum(1e3 / pms * pn, b, sizeof(b)));
	cJSON_AddNumberToObject(t, "predicted_n", rq->n_tok);
	cJSON_AddRawToObject(t, "predicted_ms", srv_jnum(gms, b, sizeof(b)));
	cJSON_AddRawToObject(t, "predicted_per_token_ms", srv_jnum(gms / rq->n_tok, b, sizeof(b)));
	cJSON_AddRawToObject(t, "predicted_per_second", srv_jnum(1e3 / gms * rq->n_tok, b, sizeof(b)));
	return j;
}

static enum MHD_Result srv_answer_full(struct ttsim_server *srv, struct MHD_Connection *conn,
				       struct sreq *rq)
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
		j = srv_answer_llama(srv, rq, text);
		if (j)
			ret = srv_send_json(conn, MHD_HTTP_OK, j);
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
	} else {
		cJSON_AddStringToObject(ch, "text", text);
	}
	cJSON_AddNullToObject(ch, "logprobs");
	cJSON_AddStringToObject(ch, "finish_reason", "length");
	cJSON_AddNullToObject(ch, "stop_reason");
	usage = cJSON_AddObjectToObject(j, "usage");
	cJSON_AddNumberToObject(usage, "prompt_tokens", rq->n_prompt);
	cJSON_AddNumberToObject(usage, "total_tokens", rq->n_prompt + rq->n_tok);
	cJSON_AddNumberToObject(usage, "completion_tokens", rq->n_tok);
	cJSON_AddNullToObject(usage, "prompt_tokens_details");
	ret = srv_send_json(conn, MHD_HTTP_OK, j);
out:
	cJSON_Delete(j);
	free(text);
	return ret;
}

/* --- routes ---------------------------------------------------------------- */

static bool srv_loading(struct ttsim_server *srv)
{
	return srv->c.load_time_s > 0 && mono_now() - srv->t_start < srv->c.load_time_s;
}

/*
 * The non-streamed answer, once the request has finished: called when the
 * request is submitted and again each time its suspended connection is
 * resumed. Returns MHD_YES after suspending to wait, MHD_NO to close the
 * connection unanswered (client gone, abort, reset fault).
 */
static enum MHD_Result srv_full_step(struct ttsim_server *srv, struct MHD_Connection *conn,
				     struct sconn *sc)
{
	struct sreq *rq = sc->rq;
	bool fault = rq->reset_at >= 0;
	double now = mono_now();

	pthread_mutex_lock(&srv->mu);
	if (srv->stopping)
		goto drop;
	if (!rq->finished) {
		/* Every token resumes the wait, so the timer alone would never
		 * probe while tokens come: probe by time as well. */
		if (rq->probe || now >= rq->probe_at) {
			if (srv_peer_closed(conn))
				goto drop;
			rq->probe_at = now + SRV_PROBE_S;
		}
		srv_suspend(srv, rq, rq->probe_at);
		pthread_mutex_unlock(&srv->mu);
		return MHD_YES;
	}
	if (rq->aborted || fault) {
		pthread_mutex_unlock(&srv->mu);
		if (fault)
			srv_set_linger0(conn);
		return MHD_NO;
	}
	if (rq->stall_at >= 0 && !rq->stalled) {
		now = mono_now();
		if (rq->stall_until == 0)
			rq->stall_until = now + srv->c.stall_s;
		if (now < rq->stall_until) {
			srv_suspend(srv, rq, rq->stall_until);
			pthread_mutex_unlock(&srv->mu);
			return MHD_YES;
		}
		rq->stalled = true;
	}
	pthread_mutex_unlock(&srv->mu);
	sc->wait_full = false;
	/* Finished requests are immutable: reading without the lock is safe. */
	return srv_answer_full(srv, conn, rq);
drop:
	pthread_mutex_unlock(&srv->mu);
	return MHD_NO;
}

static enum MHD_Result srv_completion(struct ttsim_server *srv, struct MHD_Connection *conn,
				      struct sconn *sc, bool chat)
{
	cJSON *req = NULL, *v, *so;
	const char *param = NULL, *perr;
	char err[512];
	int *toks = NULL, n_prompt = 0;
	long long max_tokens = srv->c.default_max_tokens, n;
	bool stream = false, include_usage = false, continuous = false, token_ids = false;
	const char *xrid;
	struct sreq *rq;
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
		ret = srv_error(srv, conn, 400, NULL, "JSON decode error at byte %ld",
				perr && sc->body && perr >= sc->body ? (long)(perr - sc->body) + 1 : 1L);
		goto out;
	}
	if (!cJSON_IsObject(req)) {
		ret = srv_error(srv, conn, 400, NULL, "body: Input should be a valid dictionary");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "model");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsString(v)) {
			ret = srv_error(srv, conn, 400, "model", "model: Input should be a valid string");
			goto out;
		}
		/* llama-server serves whatever name a request gives */
		if (srv->c.profile == TTSIM_VLLM && strcmp(v->valuestring, srv->model_name)) {
			ret = srv_error(srv, conn, 404, "model", "The model `%s` does not exist.",
					v->valuestring);
			goto out;
		}
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "stream");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsBool(v)) {
			ret = srv_error(srv, conn, 400, "stream", "stream: Input should be a valid boolean");
			goto out;
		}
		stream = cJSON_IsTrue(v);
	}
	so = cJSON_GetObjectItemCaseSensitive(req, "stream_options");
	if (so && !cJSON_IsNull(so)) {
		v = cJSON_GetObjectItemCaseSensitive(so, "include_usage");
		if (!cJSON_IsObject(so) || (v && !cJSON_IsBool(v) && !cJSON_IsNull(v))) {
			ret = srv_error(srv, conn, 400, "stream_options",
					"stream_options: Input should be a valid dictionary with a "
					"boolean include_usage");
			goto out;
		}
		if (!stream) {
			ret = srv_error(srv, conn, 400, "stream_options",
					"Stream options can only be defined when `stream=True`.");
			goto out;
		}
		include_usage = cJSON_IsTrue(v);
		continuous = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "continuous_usage_stats"));
	}
	token_ids = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(req, "return_token_ids"));
	v = cJSON_GetObjectItemCaseSensitive(req, "n");
	if (v && !cJSON_IsNull(v) && (!srv_json_int(v, 1, 1, &n))) {
		ret = srv_error(srv, conn, 400, "n", "n: only n=1 is supported");
		goto out;
	}
	v = cJSON_GetObjectItemCaseSensitive(req, "max_tokens");
	if (chat && (!v || cJSON_IsNull(v)))
		v = cJSON_GetObjectItemCaseSensitive(req, "max_completion_tokens");
	if (v && !cJSON_IsNull(v)) {
		if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble)) {
			ret = srv_error(srv, conn, 400, "max_tokens",
					"max_tokens: Input should be a valid integer");
			goto out;
		}
		if (v->valuedouble < 1) {
			ret = srv_error(srv, conn, 400, "max_tokens",
					"max_tokens must be at least 1, got %.0f.", v->valuedouble);
			goto out;
		}
		max_tokens = v->valuedouble > 1e15 ? (long long)1e15 : (long long)v->valuedouble;
	}
	if (!srv_prompt(req, chat, &toks, &n_prompt, &param, err, sizeof(err))) {
		ret = srv_error(srv, conn, 400, param, "%s", err);
		goto out;
	}
	if (n_prompt + max_tokens > srv->c.model.max_model_len) {
		ret = srv_error(srv, conn, 400, NULL,
				"'max_tokens' or 'max_completion_tokens' is too large: %lld. This "
				"model's maximum context length is %lld tokens and your request has %d "
				"input tokens (%lld > %lld - %d).", max_tokens,
				srv->c.model.max_model_len, n_prompt, max_tokens,
				srv->c.model.max_model_len, n_prompt);
		goto out;
	}

	pthread_mutex_lock(&srv->mu);
	if (srv->c.error_rate > 0 && srv_rand(&srv->rng) < srv->c.error_rate) {
		srv->req_errors++;
		pthread_mutex_unlock(&srv->mu);
		ret = srv_error(srv, conn, 500, NULL, "EngineCore encountered an issue (injected fault)");
		goto out;
	}
	xrid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
	rq = sreq_new(srv, chat, n_prompt, (int)max_tokens, xrid);
	if (!rq) {
		pthread_mutex_unlock(&srv->mu);
		ret = srv_error(srv, conn, 500, NULL, "out of memory");
		goto out;
	}
	/* llama-server echoes the request's model (params_from_json_cmpl:
	 * oaicompat_model), else its alias */
	snprintf(rq->model_json, sizeof(rq->model_json), "%s", srv->model_json);
	v = cJSON_GetObjectItemCaseSensitive(req, "model");
	if (srv->c.profile == TTSIM_LLAMACPP && cJSON_IsString(v) && strlen(v->valuestring) < SRV_NAME_MAX) {
		char *mj = cJSON_PrintUnformatted(v);

		if (mj && strlen(mj) < sizeof(rq->model_json))
			snprintf(rq->model_json, sizeof(rq->model_json), "%s", mj);
		free(mj);
	}
	rq->conn = conn;
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	rq->fd = ci ? ci->connect_fd : -1;
	rq->stream = stream;
	rq->include_usage = include_usage;
	rq->continuous_usage = continuous && srv->c.profile == TTSIM_VLLM;
	rq->return_token_ids = token_ids && srv->c.profile == TTSIM_VLLM && srv->c.vllm_minor != 10;
	if (stream)
		rq->error_at = srv_fault_at(srv, srv->c.stream_error_rate, (int)max_tokens);
	rq->reset_at = srv_fault_at(srv, srv->c.reset_rate, (int)max_tokens);
	rq->stall_at = srv_fault_at(srv, srv->c.stall_rate, (int)max_tokens);
	rq->truncate_at = srv_fault_at(srv, srv->c.truncate_rate, (int)max_tokens);
	sc->rq = rq;
	if (!srv->c.never_generate) {
		if (ttsim_model_submit(srv->model, rq->eid, toks, n_prompt, (int)max_tokens, rq,
				       &rq->handle, &si)) {
			pthread_mutex_unlock(&srv->mu);
			ret = srv_error(srv, conn, 400, NULL, "%s", si.msg);
			goto out;
		}
		rq->submitted = true;
		rq->refs++;  /* the model's reference, dropped in srv_on_finish */
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
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, SRV_BLOCK,
							 srv_stream_read, rq, NULL);
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
	rq->probe_at = mono_now() + SRV_PROBE_S;
	ret = srv_full_step(srv, conn, sc);
out:
	free(toks);
	cJSON_Delete(req);
	return ret;
}

static enum MHD_Result srv_tokenize(struct ttsim_server *srv, struct MHD_Connection *conn,
				    struct sconn *sc)
{
	cJSON *req = NULL, *out = NULL, *arr;
	const char *param = NULL;
	char err[512];
	int *toks = NULL, n = 0, i;
	enum MHD_Result ret;
	bool chat;

	req = cJSON_ParseWithLengthOpts(sc->body ? sc->body : "", sc->len + 1, NULL, 1);
	if (!req || !cJSON_IsObject(req)) {
		ret = srv_error(srv, conn, 400, NULL, "JSON decode error or body not an object");
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
			if (srv_prompt(tmp, false, &toks, &n, &param, err, sizeof(err)))
				for (i = 0; i < n; i++)
					cJSON_AddItemToArray(arr, cJSON_CreateNumber(toks[i]));
			cJSON_Delete(tmp);
		}
		ret = srv_send_json(conn, MHD_HTTP_OK, out);
		goto out;
	}
	chat = cJSON_GetObjectItemCaseSensitive(req, "messages") != NULL;
	if (!srv_prompt(req, chat, &toks, &n, &param, err, sizeof(err))) {
		ret = srv_error(srv, conn, 400, param, "%s", err);
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
	ret = srv_send_json(conn, MHD_HTTP_OK, out);
out:
	free(toks);
	cJSON_Delete(out);
	cJSON_Delete(req);
	return ret;
}

static enum MHD_Result srv_detokenize(struct ttsim_server *srv, struct MHD_Connection *conn,
				      struct sconn *sc)
{
	cJSON *req = NULL, *arr, *v, *out = NULL;
	char *text = NULL;
	size_t cap, len = 0, i = 0;
	long long id;
	enum MHD_Result ret;

	req = cJSON_ParseWithLengthOpts(sc->body ? sc->body : "", sc->len + 1, NULL, 1);
	arr = req ? cJSON_GetObjectItemCaseSensitive(req, "tokens") : NULL;
	if (!cJSON_IsArray(arr)) {
		ret = srv_error(srv, conn, 400, "tokens", "tokens: Input should be a valid list");
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
		if (!srv_json_int(v, 0, TTSIM_VOCAB_SIZE - 1, &id)) {
			ret = srv_error(srv, conn, 400, "tokens", "tokens[%zu]: not a token id (0..%d)", i,
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
	ret = srv_send_json(conn, MHD_HTTP_OK, out);
out:
	free(text);
	cJSON_Delete(out);
	cJSON_Delete(req);
	return ret;
}

static enum MHD_Result srv_models(struct ttsim_server *srv, struct MHD_Connection *conn)
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
		ret = srv_send_json(conn, MHD_HTTP_OK, j);
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
	ret = srv_send_json(conn, MHD_HTTP_OK, j);
	cJSON_Delete(j);
	return ret;
}

/* A growing text buffer for /metrics, capped. */
struct mbuf {
	char *s;
	size_t len, cap;
	bool full;
};

static void mb_put(struct mbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void mb_put(struct mbuf *b, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (b->full)
		return;
	va_start(ap, fmt);
	w = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= b->cap - b->len)
		b->full = true;
	else
		b->len += (size_t)w;
}

static void mb_hist(struct mbuf *b, const char *name, const char *help, const char *lbl,
		    const struct hist *h, const double *bk, size_t nb)
{
	size_t i;

	mb_put(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	mb_put(b, "%s_sum{%s} %.6f\n", name, lbl, h->sum);
	for (i = 0; i < nb; i++)
		mb_put(b, "%s_bucket{%s,le=\"%g\"} %llu.0\n", name, lbl, bk[i], h->bucket[i]);
	mb_put(b, "%s_bucket{%s,le=\"+Inf\"} %llu.0\n", name, lbl, h->count);
	mb_put(b, "%s_count{%s} %llu.0\n", name, lbl, h->count);
}

static enum MHD_Result srv_metrics(struct ttsim_server *srv, struct MHD_Connection *conn)
{
	struct mbuf b = { NULL, 0, 256 * 1024, false };
	struct ttsim_model_stats st;
	const struct ttsim_model_config *mc = &srv->c.model;
	char lbl[2 * SRV_NAME_MAX + 64];
	enum MHD_Result ret;
	int running, waiting;

	b.s = malloc(b.cap);
	if (!b.s)
		return MHD_NO;
	snprintf(lbl, sizeof(lbl), "engine=\"0\",model_name=%s", srv->model_json);
	pthread_mutex_lock(&srv->mu);
	ttsim_model_stats(srv->model, &st);
	running = ttsim_model_running(srv->model);
	waiting = ttsim_model_waiting(srv->model);
	mb_put(&b, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
		   "# TYPE vllm:cache_config_info gauge\n"
		   "vllm:cache_config_info{block_size=\"%d\",cache_dtype=\"auto\",engine=\"0\","
		   "enable_prefix_caching=\"%s\",gpu_memory_utilization=\"0.9\","
		   "num_gpu_blocks=\"%lld\",prefix_caching_hash_algo=\"builtin\"} 1.0\n",
	       mc->block_size, mc->cache_blocks > 0 ? "True" : "False",
	       (long long)mc->slots * mc->max_model_len / mc->block_size);
	mb_put(&b, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
		   "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{%s} %d.0\n",
	       lbl, running);
	mb_put(&b, "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
		   "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{%s} %d.0\n",
	       lbl, waiting);
	mb_put(&b, "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
		   "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{%s} %llu.0\n",
	       lbl, st.prompt_tokens);
	mb_put(&b, "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
		   "# TYPE vllm:generation_tokens_total counter\n"
		   "vllm:generation_tokens_total{%s} %llu.0\n", lbl, st.generation_tokens);
	mb_put(&b, "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number "
		   "of queried tokens.\n# TYPE vllm:prefix_cache_queries_total counter\n"
		   "vllm:prefix_cache_queries_total{%s} %llu.0\n", lbl, st.prompt_tokens);
	mb_put(&b, "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of "
		   "cached tokens.\n# TYPE vllm:prefix_cache_hits_total counter\n"
		   "vllm:prefix_cache_hits_total{%s} %llu.0\n", lbl, st.cached_tokens);
	mb_put(&b, "# HELP vllm:request_success_total Count of successfully processed requests.\n"
		   "# TYPE vllm:request_success_total counter\n"
		   "vllm:request_success_total{%s,finished_reason=\"length\"} %llu.0\n"
		   "vllm:request_success_total{%s,finished_reason=\"abort\"} %llu.0\n",
	       lbl, srv->req_ok, lbl, srv->req_aborted);
	mb_hist(&b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in "
		"seconds.", lbl, &srv->ttft, srv_ttft_buckets, SRV_NB_TTFT);
	if (srv->c.vllm_minor != 10)
		mb_hist(&b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in "
			"seconds.", lbl, &srv->itl, srv_itl_buckets, SRV_NB_ITL);
	if (srv->c.vllm_minor == 10) {
		/* 0.10.1: this name, and the gpu_ prefix-cache counters beside */
		mb_hist(&b, "vllm:time_per_output_token_seconds", "Histogram of time per output token in "
			"seconds.", lbl, &srv->itl, srv_itl_buckets, SRV_NB_ITL);
		mb_put(&b, "# HELP vllm:gpu_prefix_cache_queries_total GPU prefix cache queries.\n"
			   "# TYPE vllm:gpu_prefix_cache_queries_total counter\n"
			   "vllm:gpu_prefix_cache_queries_total{%s} %llu.0\n", lbl, st.prompt_tokens);
		mb_put(&b, "# HELP vllm:gpu_prefix_cache_hits_total GPU prefix cache hits.\n"
			   "# TYPE vllm:gpu_prefix_cache_hits_total counter\n"
			   "vllm:gpu_prefix_cache_hits_total{%s} %llu.0\n", lbl, st.cached_tokens);
	} else {
		mb_hist(&b, "vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds "
			"per request.", lbl, &srv->itl, srv_itl_buckets, SRV_NB_ITL);
	}
	mb_hist(&b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in "
		"seconds.", lbl, &srv->e2e, srv_ttft_buckets, SRV_NB_TTFT);
	pthread_mutex_unlock(&srv->mu);
	ret = srv_send(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", b.s, b.len);
	free(b.s);
	return ret;
}

/* llama-server's /metrics (with --metrics): llamacpp:* names, no *_info
 * gauge, no prefix-cache counter, and rates that read `inf` before any
 * time was measured. */
static enum MHD_Result srv_metrics_llama(struct ttsim_server *srv, struct MHD_Connection *conn)
{
	struct mbuf b = { NULL, 0, 16 * 1024, false };
	struct ttsim_model_stats st;
	enum MHD_Result ret;
	int running, waiting;

	b.s = malloc(b.cap);
	if (!b.s)
		return MHD_NO;
	pthread_mutex_lock(&srv->mu);
	ttsim_model_stats(srv->model, &st);
	running = ttsim_model_running(srv->model);
	waiting = ttsim_model_waiting(srv->model);
	pthread_mutex_unlock(&srv->mu);
	mb_put(&b, "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
		   "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total %llu\n",
	       st.prompt_tokens);
	mb_put(&b, "# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.\n"
		   "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total %llu\n",
	       st.generation_tokens);
	mb_put(&b, "# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.\n"
		   "# TYPE llamacpp:prompt_tokens_seconds gauge\nllamacpp:prompt_tokens_seconds inf\n");
	mb_put(&b, "# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s.\n"
		   "# TYPE llamacpp:predicted_tokens_seconds gauge\nllamacpp:predicted_tokens_seconds inf\n");
	mb_put(&b, "# HELP llamacpp:requests_processing Number of requests processing.\n"
		   "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing %d\n", running);
	mb_put(&b, "# HELP llamacpp:requests_deferred Number of requests deferred.\n"
		   "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred %d\n", waiting);
	ret = srv_send(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", b.s, b.len);
	free(b.s);
	return ret;
}

const char *ttsim_server_version(const struct ttsim_server_config *c)
{
	if (c->profile == TTSIM_LLAMACPP)
		return SRV_LLAMA_BUILD;
	return c->vllm_minor == 10 ? "0.10.1+ttsim" : "0.16.0+ttsim";
}

/*
 * llama-server's routes (examples/server/server.cpp main(): the pre-routing
 * middlewares, then the handlers): while the model loads every route
 * answers 503 "Loading model"; with an API key every route but /health and
 * the models needs it; an unknown route is 404 "File Not Found".
 */
static enum MHD_Result srv_route_llama(struct ttsim_server *srv, struct MHD_Connection *conn,
				       const char *q, bool get, bool post, struct sconn *sc)
{
	bool models = !strcmp(q, "/v1/models") || !strcmp(q, "/models");

	if (srv_loading(srv))
		return srv_error(srv, conn, 503, NULL, "Loading model");
	if (srv->c.api_key && strcmp(q, "/health") && !models && strcmp(q, "/")) {
		const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");

		if (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, srv->c.api_key))
			return srv_error(srv, conn, 401, NULL, "Invalid API Key");
	}
	if (get && !strcmp(q, "/health"))
		return srv_send(conn, MHD_HTTP_OK, "application/json; charset=utf-8", "{\"status\":\"ok\"}", 15);
	if (get && models)
		return srv_models(srv, conn);
	if (get && !strcmp(q, "/metrics"))
		return srv->c.metrics ? srv_metrics_llama(srv, conn) :
		       srv_error(srv, conn, 501, NULL, "This server does not support metrics endpoint. "
				 "Start it with `--metrics`");
	if (post && sc->too_big && (!strcmp(q, "/v1/completions") || !strcmp(q, "/v1/chat/completions") ||
				    !strcmp(q, "/tokenize") || !strcmp(q, "/detokenize")))
		return srv_error(srv, conn, 400, NULL, "request body exceeds %u bytes", SRV_BODY_MAX);
	if (post && !strcmp(q, "/v1/completions"))
		return srv_completion(srv, conn, sc, false);
	if (post && !strcmp(q, "/v1/chat/completions"))
		return srv_completion(srv, conn, sc, true);
	if (post && !strcmp(q, "/tokenize"))
		return srv_tokenize(srv, conn, sc);
	if (post && !strcmp(q, "/detokenize"))
		return srv_detokenize(srv, conn, sc);
	return srv_error(srv, conn, 404, NULL, "File Not Found");
}

static enum MHD_Result srv_route(struct ttsim_server *srv, struct MHD_Connection *conn,
				 const char *url, const char *method, struct sconn *sc)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
	char q[64];
	size_t ul = strcspn(url, "?");

	if (ul >= sizeof(q))
		return srv_detail(conn, 404, "Not Found");
	memcpy(q, url, ul);
	q[ul] = 0;
	if (srv->c.profile == TTSIM_LLAMACPP)
		return srv_route_llama(srv, conn, q, get, post, sc);
	if (!strcmp(q, "/health") || !strcmp(q, "/ping")) {
		if (!get && !post)
			return srv_detail(conn, 405, "Method Not Allowed");
		if (srv_loading(srv))
			return srv_send(conn, 503, "application/json", "", 0);
		return srv_send(conn, MHD_HTTP_OK, "application/json", "", 0);
	}
	if (srv_loading(srv))
		return srv_error(srv, conn, 503, NULL, "the model is still loading");
	if (srv->c.api_key && !strncmp(q, "/v1/", 4)) {
		/* vLLM's --api-key (entrypoints/openai/api_server.py): 401 on /v1 */
		const char *auth = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");

		if (!auth || strncmp(auth, "Bearer ", 7) || strcmp(auth + 7, srv->c.api_key))
			return srv_send(conn, 401, "application/json", "{\"error\":\"Unauthorized\"}", 24);
	}
	if (!strcmp(q, "/metrics"))
		return get ? srv_metrics(srv, conn) : srv_detail(conn, 405, "Method Not Allowed");
	if (!strcmp(q, "/v1/models"))
		return get ? srv_models(srv, conn) : srv_detail(conn, 405, "Method Not Allowed");
	if (!strcmp(q, "/version") && srv->c.profile == TTSIM_VLLM) {
		char vb[64];
		int vn = snprintf(vb, sizeof(vb), "{\"version\":\"%s\"}", ttsim_server_version(&srv->c));

		return get ? srv_send(conn, MHD_HTTP_OK, "application/json", vb, (size_t)vn)
			   : srv_detail(conn, 405, "Method Not Allowed");
	}
	if (!post) {
		if (!strcmp(q, "/v1/completions") || !strcmp(q, "/v1/chat/completions") ||
		    !strcmp(q, "/tokenize") || !strcmp(q, "/detokenize") ||
		    !strcmp(q, "/reset_prefix_cache"))
			return srv_detail(conn, 405, "Method Not Allowed");
		return srv_detail(conn, 404, "Not Found");
	}
	if (sc->too_big)
		return srv_error(srv, conn, 400, NULL, "request body exceeds %u bytes", SRV_BODY_MAX);
	if (!strcmp(q, "/v1/completions"))
		return srv_completion(srv, conn, sc, false);
	if (!strcmp(q, "/v1/chat/completions"))
		return srv_completion(srv, conn, sc, true);
	if (!strcmp(q, "/tokenize"))
		return srv_tokenize(srv, conn, sc);
	if (!strcmp(q, "/detokenize"))
		return srv_detokenize(srv, conn, sc);
	if (!strcmp(q, "/reset_prefix_cache")) {
		pthread_mutex_lock(&srv->mu);
		ttsim_model_reset_prefix_cache(srv->model);
		pthread_mutex_unlock(&srv->mu);
		return srv_send(conn, MHD_HTTP_OK, "application/json", "", 0);
	}
	return srv_detail(conn, 404, "Not Found");
}

static enum MHD_Result srv_handler(void *cls, struct MHD_Connection *conn, const char *url,
				   const char *method, const char *version,
				   const char *upload_data, size_t *upload_data_size, void **con_cls)
{
	struct ttsim_server *srv = cls;
	struct sconn *sc = *con_cls;
	char *nb;
	size_t need;

	(void)version;
	if (!sc) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
			MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		const struct ssock *k = ci ? ci->socket_context : NULL;

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
		if (need > SRV_BODY_MAX) {
			sc->too_big = true;
		} else if (!sc->too_big) {
			if (need + 1 > sc->cap) {
				sc->cap = need * 2 + 1 < SRV_BODY_MAX + 1 ? need * 2 + 1 : SRV_BODY_MAX + 1;
				nb = realloc(sc->body, sc->cap);
				if (!nb)
					return MHD_NO;
				sc->body = nb;
			}
			memcpy(sc->body + sc->len, upload_data, *upload_data_size);
			sc->len += *upload_data_size;
			sc->body[sc->len] = 0;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (sc->wait_full)
		return srv_full_step(srv, conn, sc);
	return srv_route(srv, conn, url, method, sc);
}

/* The connection is done (answered, failed, or the client left). */
static void srv_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			  enum MHD_RequestTerminationCode toe)
{
	struct ttsim_server *srv = cls;
	struct sconn *sc = *con_cls;

	(void)toe;
	if (!sc)
		return;
	if (sc->rq && sc->rq->stream && srv->c.profile == TTSIM_LLAMACPP) {
		/* llama-server closes after every streamed answer, though it said
		 * keep-alive: a client that reuses the connection before the close
		 * reaches it finds it dead (its request is never read) */
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn,
			MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		struct ssock *k = ci ? ci->socket_context : NULL;

		if (k && !k->dead) {
			pthread_mutex_lock(&srv->mu);
			k->dead = true;
			k->next_dead = srv->dead;
			srv->dead = k;
			pthread_mutex_unlock(&srv->mu);
		}
	}
	if (sc->rq) {
		srv_log_stamps(srv, sc->rq);
		pthread_mutex_lock(&srv->mu);
		sc->rq->conn = NULL;
		if (sc->rq->submitted && !sc->rq->finished)
			ttsim_model_abort(srv->model, sc->rq->handle);  /* drops the model's ref */
		sreq_release(sc->rq);
		pthread_mutex_unlock(&srv->mu);
	}
	free(sc->body);
	free(sc);
	*con_cls = NULL;
}

/* --- lifecycle -------------------------------------------------------------- */

/* Socket contexts: one per connection, for the llama-server profile. */
static void srv_notify_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
			    enum MHD_ConnectionNotificationCode toe)
{
	struct ttsim_server *srv = cls;
	struct ssock *k = *socket_context, **pp;
	const union MHD_ConnectionInfo *ci;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		k = calloc(1, sizeof(*k));
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (k)
			k->fd = ci ? ci->connect_fd : -1;
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&srv->mu);
	for (pp = &srv->dead; *pp; pp = &(*pp)->next_dead)
		if (*pp == k) {
			*pp = k->next_dead;
			break;
		}
	pthread_mutex_unlock(&srv->mu);
	free(k);
	*socket_context = NULL;
}

/*
 * The polling thread: waits for MHD's epoll descriptor or the wake
 * descriptor, at most as long as MHD_get_timeout says (0 while a connection
 * has work left over from the last round), then runs one round. Every MHD
 * callback runs here. Ends when woken with srv->stopping set.
 */
static void *srv_poll_main(void *arg)
{
	struct ttsim_server *srv = arg;
	struct pollfd p[2] = { { srv->epoll_fd, POLLIN, 0 }, { srv->wake_fd, POLLIN, 0 } };
	MHD_UNSIGNED_LONG_LONG to;
	uint64_t v;
	sigset_t ss;
	bool stop, warned = false;
	int ms;

	/* as libmicrohttpd's own polling thread does */
	sigemptyset(&ss);
	sigaddset(&ss, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);
	for (;;) {
		ms = MHD_get_timeout(srv->d, &to) == MHD_YES ? (to > INT_MAX ? INT_MAX : (int)to) : -1;
		if (poll(p, 2, ms) < 0) {
			if (errno != EINTR && !warned) {
				warned = true;
				ttsim_log(2, "ERROR", "ttsim", "poll: %s", strerror(errno));
			}
			if (errno != EINTR)
				mono_sleep(0.01);
			continue;
		}
		if (p[1].revents & POLLIN) {
			/* cleared before the round: a resume after this read wakes us again */
			(void)!read(srv->wake_fd, &v, sizeof(v));
			pthread_mutex_lock(&srv->mu);
			stop = srv->stopping;
			pthread_mutex_unlock(&srv->mu);
			if (stop)
				break;
		}
		MHD_run(srv->d);
	}
	return NULL;
}

/* Listens on the bound socket, hands it to MHD and starts the polling
 * thread. 0, or -1 (errno). */
static int srv_listen_now(struct ttsim_server *srv)
{
	const union MHD_DaemonInfo *di;
	struct MHD_Daemon *d;
	int fd = srv->lfd, e = 0;

	if (listen(fd, 4096))
		return -1;
	/* epoll, driven by our polling thread (see the top of this file),
	 * connections suspended while they wait */
	d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL,
			     srv_handler, srv,
			     MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, srv->c.max_connections,
			     MHD_OPTION_CONNECTION_TIMEOUT, 0u,
			     MHD_OPTION_NOTIFY_COMPLETED, srv_completed, srv,
			     MHD_OPTION_NOTIFY_CONNECTION, srv_notify_conn, srv,
			     MHD_OPTION_END);
	if (!d)
		return -1;
	di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
	pthread_mutex_lock(&srv->mu);
	srv->d = d;
	srv->lfd = -1;   /* MHD's now */
	srv->epoll_fd = di ? di->epoll_fd : -1;
	if (srv->epoll_fd < 0 || (e = pthread_create(&srv->poll_thread, NULL, srv_poll_main, srv))) {
		srv->d = NULL;
		pthread_mutex_unlock(&srv->mu);
		MHD_stop_daemon(d);
		errno = srv->epoll_fd < 0 ? EINVAL : e;
		return -1;
	}
	(void)pthread_setname_np(srv->poll_thread, "ttsim-http");
	srv->poll_started = true;
	pthread_mutex_unlock(&srv->mu);
	return 0;
}

/* vLLM while it loads: bound, not listening, until --load-time has passed. */
static void *srv_listen_later(void *arg)
{
	struct ttsim_server *srv = arg;

	for (;;) {
		pthread_mutex_lock(&srv->mu);
		if (srv->stopping) {
			pthread_mutex_unlock(&srv->mu);
			return NULL;
		}
		pthread_mutex_unlock(&srv->mu);
		if (mono_now() - srv->t_start >= srv->c.load_time_s)
			break;
		mono_sleep(0.02);
	}
	if (srv_listen_now(srv))
		ttsim_log(2, "ERROR", "ttsim", "cannot listen on 127.0.0.1:%d: %s", srv->port, strerror(errno));
	return NULL;
}

enum status ttsim_server_start(const struct ttsim_server_config *c, struct ttsim_server **out,
			       struct status_info *si)
{
	struct ttsim_server *srv = NULL;
	struct ttsim_model_sink sink;
	struct sockaddr_in sa;
	enum status st;
	pthread_condattr_t ca;
	cJSON *jname;
	char *js;

	*out = NULL;
	if (c->time_scale < 0 || c->default_max_tokens < 1 || c->port < 0 || c->port > 65535)
		return status_set(si, STATUS_USAGE, "bad server configuration");
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return status_set(si, STATUS_NOMEM, "server: out of memory");
	srv->c = *c;
	srv->lfd = -1;
	srv->epoll_fd = -1;
	srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->wake_fd < 0) {
		free(srv);
		return status_set(si, STATUS_IO, "server: eventfd: %s", strerror(errno));
	}
	srv->c.model.audit_wall_time = true;
	snprintf(srv->model_name, sizeof(srv->model_name), "%s", c->model_name);
	jname = cJSON_CreateString(srv->model_name);
	js = jname ? cJSON_PrintUnformatted(jname) : NULL;
	cJSON_Delete(jname);
	if (!js) {
		free(srv);
		return status_set(si, STATUS_NOMEM, "server: out of memory");
	}
	snprintf(srv->model_json, sizeof(srv->model_json), "%s", js);
	free(js);
	pthread_mutex_init(&srv->mu, NULL);
	pthread_cond_init(&srv->work_cv, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->hk_cv, &ca);
	pthread_condattr_destroy(&ca);
	srv->rng = c->model.seed ^ 0x7365727665722121ull;
	srv->noise_rng = c->model.seed ^ 0x6e6f697365212121ull;
	srv->noise_factor = 1.0;
	srv->t_start = mono_now();
	st = ttsim_model_new(&srv->c.model, &srv->model, si);
	if (st)
		goto fail;
	sink.token = srv_on_token;
	sink.finish = srv_on_finish;
	sink.ctx = srv;
	ttsim_model_set_sink(srv->model, &sink);
	ttsim_model_set_audit(srv->model, c->audit);
	if (c->send_log) {
		srv->send_log = fopen(c->send_log, "we");
		if (!srv->send_log) {
			st = status_set_at(si, STATUS_IO, c->send_log, 0, 0, "cannot create: %s",
					   strerror(errno));
			goto fail;
		}
		/* full buffering: srv_log_stamps flushes a request's lines at once */
		setvbuf(srv->send_log, NULL, _IOFBF, 1u << 16);
	}
	if (pthread_create(&srv->gen_thread, NULL, srv_gen_main, srv)) {
		st = status_set(si, STATUS_NOMEM, "cannot start the generator thread");
		goto fail;
	}
	srv->gen_started = true;
	if (pthread_create(&srv->hk_thread, NULL, srv_hk_main, srv)) {
		st = status_set(si, STATUS_NOMEM, "cannot start the housekeeping thread");
		goto fail;
	}
	srv->hk_started = true;
	/* Bound now, so the port is known; listening only once loaded: vLLM's
	 * API server binds its socket and then loads the engine, and a client
	 * meanwhile gets connection refused (about 510 s on Tenstorrent). */
	srv->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)c->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	{
		int one = 1;
		socklen_t sl = sizeof(sa);

		if (srv->lfd >= 0)
			(void)setsockopt(srv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (srv->lfd < 0 || bind(srv->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    getsockname(srv->lfd, (struct sockaddr *)&sa, &sl)) {
			st = status_set(si, STATUS_IO, "cannot bind 127.0.0.1:%d: %s", c->port, strerror(errno));
			goto fail;
		}
		srv->port = ntohs(sa.sin_port);
	}
	if (c->profile == TTSIM_VLLM && c->load_time_s > 0) {
		if (pthread_create(&srv->listen_thread, NULL, srv_listen_later, srv)) {
			st = status_set(si, STATUS_NOMEM, "cannot start the listening thread");
			goto fail;
		}
		srv->listen_started = true;
	} else if (srv_listen_now(srv)) {
		st = status_set(si, STATUS_IO, "cannot listen on 127.0.0.1:%d", srv->port);
		goto fail;
	}
	*out = srv;
	return STATUS_OK;
fail:
	ttsim_server_stop(srv);
	return st;
}

int ttsim_server_port(const struct ttsim_server *s)
{
	return s->port;
}

void ttsim_server_stop(struct ttsim_server *srv)
{
	struct sreq *rq, *next;

	if (!srv)
		return;
	pthread_mutex_lock(&srv->mu);
	srv->stopping = true;
	pthread_cond_broadcast(&srv->work_cv);
	pthread_cond_broadcast(&srv->hk_cv);
	pthread_mutex_unlock(&srv->mu);
	/* Nothing may resume a connection once MHD has begun to close them. */
	if (srv->gen_started)
		pthread_join(srv->gen_thread, NULL);
	if (srv->hk_started)
		pthread_join(srv->hk_thread, NULL);
	if (srv->listen_started)
		pthread_join(srv->listen_thread, NULL);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->poll_started) {
		srv_kick(srv);
		pthread_join(srv->poll_thread, NULL);
	}
	if (srv->d) {
		/* MHD must not be stopped with connections suspended: resume them;
		 * MHD_stop_daemon then closes every connection. */
		pthread_mutex_lock(&srv->mu);
		for (rq = srv->live; rq; rq = rq->next)
			srv_wake(rq, false);
		pthread_mutex_unlock(&srv->mu);
		MHD_stop_daemon(srv->d);
	}
	/* Connections are gone; what the model still holds is aborted (which
	 * drops the model's references and frees those requests). */
	pthread_mutex_lock(&srv->mu);
	for (rq = srv->live; rq; rq = next) {
		next = rq->next;
		if (rq->submitted && !rq->finished && srv->model)
			ttsim_model_abort(srv->model, rq->handle);
	}
	pthread_mutex_unlock(&srv->mu);
	for (rq = srv->live; rq; rq = next) {
		next = rq->next;
		free(rq->stamps);
		free(rq->toks);
		free(rq);
	}
	ttsim_model_free(srv->model);
	if (srv->send_log)
		fclose(srv->send_log);
	pthread_cond_destroy(&srv->hk_cv);
	pthread_cond_destroy(&srv->work_cv);
	pthread_mutex_destroy(&srv->mu);
	close(srv->wake_fd);
	free(srv);
}
