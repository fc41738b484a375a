/*
 * engine.h - the state ttsim's server shares between its modules: the
 * server (struct ttsim_server), one completion request (struct ttsim_engine_req,
 * shared by its connection and the model), per-connection and per-socket
 * state; and what feeds waiting connections: the generator loop, the
 * model's callbacks, the housekeeping timers, suspend and wake.
 *
 * Private to the server's modules (server.c, route.c, stream.c, answer.c,
 * metrics.c, reply.c); server.h is the public interface. Locking: one
 * mutex (srv->mu) guards the model, every struct ttsim_engine_req and the
 * counters (see server.c).
 */
#ifndef TTSIM_ENGINE_H
#define TTSIM_ENGINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/ttsim/metrics.h"
#include "tools/ttsim/model.h"
#include "tools/ttsim/server.h"

struct MHD_Connection;
struct MHD_Daemon;

#define TTSIM_ENGINE_CHUNK_MAX 8192           /* one SSE chunk: up to STREAM_MERGE_MAX tokens */
#define TTSIM_ENGINE_PROBE_S 0.5              /* a waiting connection checks for a gone client */
#define TTSIM_ENGINE_NAME_MAX 256
#define TTSIM_ENGINE_LLAMA_BUILD "b6000-ttsim"   /* llama-server's build_info: "b<number>-<commit>" */

/* Where a stream is: the role chunk (vLLM chat), tokens, llama-server's
 * final chunk, an error event, usage, [DONE], ended. */
enum ttsim_engine_phase {
	TTSIM_ENGINE_SP_ROLE = 0, TTSIM_ENGINE_SP_TOKENS, TTSIM_ENGINE_SP_FINAL, TTSIM_ENGINE_SP_ERROR, TTSIM_ENGINE_SP_USAGE,
	TTSIM_ENGINE_SP_DONE, TTSIM_ENGINE_SP_END
};

/* One completion request, shared by its connection (served by the polling
 * thread) and the model. */
struct ttsim_engine_req {
	struct ttsim_server *srv;
	struct ttsim_engine_req *prev, *next;    /* srv->live */
	struct MHD_Connection *conn; /* for the disconnect probe */
	char id[TTSIM_ID_MAX];       /* the response's id */
	char eid[TTSIM_ID_MAX];      /* the engine's id (the audit's): vLLM suffixes the response id */
	bool chat, stream, include_usage;
	bool continuous_usage;       /* stream_options.continuous_usage_stats */
	bool return_token_ids;       /* return_token_ids: token_ids in every chunk */
	int error_at;                /* stream error fault: after this many tokens, -1 = none */
	int n_prompt, max_tokens;
	/* completions with echo: the prompt's tokens and text (owned), and the
	 * logprobs asked for (-1: none), for the answer's echoed logprobs */
	bool echo;
	int *echo_toks;
	char *echo_text;
	int echo_lp;
	int *toks, n_tok;            /* delivered by the model, cap max_tokens */
	int n_sent;                  /* token chunks formatted for the client */
	bool submitted, finished, aborted;
	struct ttsim_req_result res;
	unsigned long long handle;
	int refs;                    /* connection + model */
	double t_arrival, t_first, t_last;  /* CLOCK_MONOTONIC */
	char model_json[2 * TTSIM_ENGINE_NAME_MAX + 3];  /* llama-server: the request's model, as JSON */
	int reset_at, truncate_at, stall_at;   /* token index of a fault, -1 = none */
	enum ttsim_engine_phase phase;
	char chunk[TTSIM_ENGINE_CHUNK_MAX];
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
struct ttsim_engine_sock {
	int fd;
	bool dead;                   /* a new request on it is closed unanswered */
	bool shut;                   /* the housekeeping thread shut it down */
	struct ttsim_engine_sock *next_dead;     /* srv->dead, mu held */
};

/* Per-connection state (MHD's con_cls). */
struct ttsim_engine_conn {
	char *body;
	size_t len, cap;
	bool too_big;
	struct ttsim_engine_req *rq;
	bool wait_full;              /* a non-streamed answer is pending */
};

struct ttsim_server {
	struct ttsim_server_config c;
	char model_name[TTSIM_ENGINE_NAME_MAX];
	char model_json[2 * TTSIM_ENGINE_NAME_MAX + 3];  /* the name as a JSON string */
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
	struct ttsim_engine_req *live;
	struct ttsim_engine_sock *dead;          /* dead connections not yet shut down */
	uint64_t rng;                /* fault decisions and ids */
	uint64_t noise_rng;
	double noise_factor;
	unsigned long long noise_steps;
	double t_start;
	FILE *send_log;              /* written by the polling thread only */
	/* metrics */
	struct ttsim_metrics_hist ttft, itl, e2e;
	unsigned long long req_ok, req_aborted, req_errors;
};

/* A uniform double in [0, 1) from *s. */
double ttsim_engine_rand(uint64_t *s);
/* A new request, in srv->live with one reference (the connection's), its
 * ids drawn (xrid: the X-Request-Id header or NULL). NULL when out of
 * memory. mu held. */
struct ttsim_engine_req *ttsim_engine_req_new(struct ttsim_server *srv, bool chat, int n_prompt, int max_tokens,
				  const char *xrid);
/* Drops one reference; frees on the last. mu held. */
void ttsim_engine_req_release(struct ttsim_engine_req *rq);
/* A fault at a token index in [0, n), or -1, drawn at rate. mu held. */
int ttsim_engine_fault_at(struct ttsim_server *srv, double rate, int n);
/* Wakes the polling thread. Any thread; async-signal-safe. */
void ttsim_engine_kick(struct ttsim_server *srv);
/* Resumes rq's connection if we suspended it (probe: its callback checks
 * for a gone client). mu held. */
void ttsim_engine_wake(struct ttsim_engine_req *rq, bool probe);
/* Suspends rq's connection until ttsim_engine_wake, at wake_at at the latest.
 * From MHD's callbacks for this connection, mu held. */
void ttsim_engine_suspend(struct ttsim_server *srv, struct ttsim_engine_req *rq, double wake_at);
/* The model's sink (ttsim_model_sink): generator thread, mu held. */
void ttsim_engine_on_token(void *ctx, void *user, int index, int tok);
void ttsim_engine_on_finish(void *ctx, void *user, const struct ttsim_req_result *res);
/* Thread bodies; arg is the server. End once srv->stopping is set and
 * their condition variable signalled. */
void *ttsim_engine_gen_main(void *arg);
void *ttsim_engine_hk_main(void *arg);

#endif
