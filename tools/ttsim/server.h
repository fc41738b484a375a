/*
 * server.h - ttsim's HTTP server: the surfaces a vLLM OpenAI-compatible
 * server has (health, models, tokenize, detokenize, completions and chat with
 * and without streaming, metrics, reset_prefix_cache), over one generator
 * loop thread that batches every connection's requests into the model.
 *
 * Binds 127.0.0.1 only. One libmicrohttpd polling thread (epoll) serves
 * every connection; a connection waiting for tokens is suspended, not a
 * blocked thread, so ~1024 concurrent streams cost no thread each. With a
 * send log, each streamed token is stamped when send(2) has taken its chunk.
 */
#ifndef TTSIM_SERVER_H
#define TTSIM_SERVER_H

#include <stdbool.h>

#include "tools/ttsim/audit.h"
#include "tools/ttsim/model.h"
#include "base/status.h"

struct ttsim_server_config {
	struct ttsim_model_config model;
	const char *model_name;     /* served model id */
	int port;                   /* 0 = let the OS pick */
	double time_scale;          /* modeled seconds x this = wall seconds; 0 = no sleeping */
	int default_max_tokens;     /* when a request gives none */
	unsigned max_connections;
	struct ttsim_audit *audit;  /* not owned; NULL = none */
	const char *send_log;       /* JSONL per streamed token, NULL = none; a request's
				     * lines are written together when its stream ends */
	/* Fault switches; each decision comes from a generator seeded by model.seed. */
	double load_time_s;         /* /health 503 (and every route) for this long */
	bool never_generate;        /* requests are accepted and never scheduled */
	double error_rate;          /* answer 500 */
	double reset_rate;          /* close the connection mid-stream */
	double stall_rate;          /* pause a stream for stall_s */
	double stall_s;
	double truncate_rate;       /* end a stream early without [DONE] */
	double noise;               /* per-step time factor 1 + noise*u, redrawn every 256 steps */
	/* Which server it is (docs/ttsim.md): vLLM (current main, or 0.10 with
	 * vllm_minor 10: flat error bodies, reasoning_content, no token_ids, the
	 * 0.10 metric names, unsuffixed engine ids) or llama.cpp's llama-server. */
	enum ttsim_profile { TTSIM_VLLM = 0, TTSIM_LLAMACPP } profile;
	int vllm_minor;             /* 0: current; 10: 0.10 */
	int stream_interval;        /* vLLM --stream-interval: tokens per chunk at least (1) */
	bool no_merge;              /* one token per chunk even when tokens piled up */
	int reasoning;              /* chat: the first N output tokens are thinking text */
	double stream_error_rate;   /* end a stream with an error after its first token */
	bool metrics;               /* llama-server: /metrics only with --metrics */
	const char *api_key;        /* vLLM --api-key: the /v1 routes want "Authorization: Bearer KEY" */
};

void ttsim_server_config_default(struct ttsim_server_config *c);
/* The version string the configured server reports ("0.16.0+ttsim" ...). */
const char *ttsim_server_version(const struct ttsim_server_config *c);

struct ttsim_server;

/* Starts listening and the generator thread. */
enum status ttsim_server_start(const struct ttsim_server_config *c, struct ttsim_server **out,
			       struct status_info *si);
/* The bound port. */
int ttsim_server_port(const struct ttsim_server *s);
/* Stops everything, aborts what is in flight, frees s. NULL is fine. */
void ttsim_server_stop(struct ttsim_server *s);

#endif
