/*
 * load.h - the load driver: one thread, one libcurl multi handle, one epoll
 * event loop, every response streamed and parsed incrementally (sse.h).
 *
 * Each request is timed on CLOCK_MONOTONIC when its bytes reached the host:
 * the kernel's receive stamp of the packet (rxstamp.h), so a busy loop does
 * not delay the figures; the loop's own clock where there is no stamp.
 *   - TTFT at the first chunk that carries content (a chat stream's first,
 *     role-only chunk is not a token and does not stop the clock);
 *   - every content chunk's receive time (so every inter-token gap);
 *   - time to last content token (TTLT) and end of stream (e2e).
 * Token counts come from the response's `usage` block when it has one;
 * counted content chunks are kept beside them so a caller can say which
 * source a figure used.
 *
 * A request is a success only when the server answered 200 and the stream
 * ended with `data: [DONE]`. Everything else is a failure with a reason:
 * HTTP status, reset, truncated stream, stall, timeout, a server error
 * object in the stream, an unparseable chunk.
 *
 * Arrival models:
 *   LOAD_CLOSED   closed loop: `concurrency` requests in flight; a request
 *                 starts when one ends;
 *   LOAD_BATCH    every request launched at once;
 *   LOAD_POISSON  open loop: launches at exponential inter-arrival times of
 *                 mean 1/rate drawn from `seed`, whatever is in flight.
 */
#ifndef TTAUDIT_LOAD_H
#define TTAUDIT_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Hard caps. */
#define LOAD_MAX_REQUESTS 1000000u
#define LOAD_MAX_INFLIGHT 4096u
#define LOAD_MAX_TOKENS 65536u        /* content chunks kept per request */
#define LOAD_MAX_TEXT (4u << 20)      /* content bytes kept per request */
#define LOAD_MAX_ERROR_BODY 2048u     /* bytes of a non-200 body kept for the reason */

enum load_arrival { LOAD_CLOSED, LOAD_BATCH, LOAD_POISSON };

/* Which stream shape a request speaks; chosen by the body's route. */
enum load_api { LOAD_API_COMPLETIONS, LOAD_API_CHAT };

enum load_fail {
	LOAD_OK = 0,
	LOAD_FAIL_HTTP,        /* a status other than 200 */
	LOAD_FAIL_CONNECT,     /* could not connect */
	LOAD_FAIL_RESET,       /* the connection broke: reset, or closed inside the HTTP body */
	LOAD_FAIL_TRUNCATED,   /* a complete HTTP response whose stream lacks [DONE] */
	LOAD_FAIL_STALL,       /* no byte for stall_s */
	LOAD_FAIL_TIMEOUT,     /* the whole request took longer than timeout_s */
	LOAD_FAIL_SERVER,      /* an error object inside the stream */
	LOAD_FAIL_PROTOCOL,    /* an unparseable chunk or a cap reached */
	LOAD_FAIL__COUNT
};

/* "ok", "http", "connect", "reset", "truncated", "stall", "timeout", "server", "protocol". */
const char *load_fail_name(enum load_fail f);

/* Where a chunk's token count came from (ITL per token needs it). */
enum load_count {
	LOAD_COUNT_CHUNKS = 0, /* one token per output chunk: nothing in the stream says more */
	LOAD_COUNT_TOKEN_IDS,  /* the chunk's `token_ids` (return_token_ids) */
	LOAD_COUNT_USAGE,      /* deltas of per-chunk usage (continuous_usage_stats) */
};

/* "chunks", "token_ids", "usage". */
const char *load_count_name(enum load_count c);

/* One request to send. Strings are the caller's and must outlive the run. */
struct load_request {
	const char *url;       /* full endpoint, e.g. http://127.0.0.1:8000/v1/completions */
	enum load_api api;
	const char *body;      /* the JSON body, streaming requested in it */
	size_t body_len;
	size_t prompt_index;   /* the caller's own index (suite entry), carried to the result */
	size_t abort_after;    /* the client cancels (closes the connection) once this many output
				* tokens came; 0: never. An abort is the caller's choice, not a failure */
};

/* What one request did. Times are CLOCK_MONOTONIC seconds; 0 = did not happen. */
struct load_result {
	size_t index;          /* position in the request array (launch order for CLOSED and BATCH) */
	size_t prompt_index;
	size_t launch_seq;     /* the order in which it was actually launched, 0-based */
	char id[128];          /* the response's `id`; "" when none */
	char xid[128];         /* the X-Request-Id sent (load_opts.request_id_prefix); "" none */
	double t_sched;        /* when it was due (POISSON: its arrival time; else = t_launch) */
	double t_launch;       /* given to libcurl */
	double t_sent;         /* the request handed to its connection, right before it is
				* written (libcurl's pre-request callback); 0: never */
	double t_first;        /* first output token: reasoning or answer text */
	double t_first_answer; /* first answer token (content / text); 0: none */
	double t_last;         /* last output chunk */
	double t_end;          /* end of the transfer */
	double *tok_t;         /* n_chunks receive times; owned by the run */
	uint32_t *tok_n;       /* n_chunks token counts (count_src says from what); owned */
	size_t n_chunks;       /* output chunks (reasoning or answer text) */
	size_t n_tokens;       /* output tokens over every chunk, by count_src */
	size_t n_reasoning_tokens, n_answer_tokens;
	enum load_count count_src;   /* the best source any chunk of the stream had */
	long usage_seen;       /* completion_tokens of the latest per-chunk usage; -1 none */
	bool chunks_capped;    /* more than LOAD_MAX_TOKENS: later ones counted, not timed */
	size_t n_role_chunks;  /* chunks with a role and no content (chat) */
	char *text;            /* concatenated content when keep_text; owned by the run */
	size_t text_len;
	size_t *tok_off;       /* keep_text: n_chunks+1 offsets of each chunk in text */
	int32_t *ids;          /* keep_ids: the token ids the chunks carried (-1: not an id), owned */
	size_t n_ids;          /* at most LOAD_MAX_TOKENS kept */
	size_t *ids_off;       /* keep_ids: n_chunks+1 offsets of each chunk's ids in ids */
	long usage_prompt;     /* from `usage`; -1 when the stream had none */
	long usage_completion;
	char finish_reason[24];
	bool done;             /* saw data: [DONE] */
	unsigned retries;      /* sent again on a new connection: the reused one was dead */
	bool aborted;          /* cancelled by the client (load_request.abort_after): fail stays LOAD_OK */
	size_t inflight_at_launch;   /* other requests in flight when it was launched */
	enum load_fail fail;
	long http_status;
	char reason[200];      /* lower case, for the record; "" when ok */
	/* allocated elements of tok_t, tok_n, tok_off, text, ids, ids_off (internal) */
	size_t cap_tok_t, cap_tok_n, cap_tok_off, cap_text, cap_ids, cap_ids_off;
};

struct load_progress {
	size_t n_total, n_done, n_failed, n_inflight;
	uint64_t n_chunks;     /* content chunks received so far */
	double elapsed;        /* seconds since the run started */
};

struct load_opts {
	enum load_arrival arrival;
	unsigned concurrency;  /* CLOSED: requests in flight (>= 1) */
	double rate;           /* POISSON: requests per second (> 0) */
	uint64_t seed;         /* POISSON: inter-arrival draws */
	double timeout_s;      /* whole-request limit; 0: none */
	double stall_s;        /* limit on silence within a request; 0: none */
	bool keep_text;        /* keep each request's content and chunk offsets */
	bool keep_ids;         /* keep the token ids of chunks that carry them (token_ids) */
	/* every request carries `X-Request-Id: <prefix>-<index>`, so an audit
	 * written inside the server can be joined with it (vLLM makes it the
	 * external request id); NULL: no such header */
	const char *request_id_prefix;
	/* time chunks when the loop reads them, not by the kernel's receive
	 * stamp (rxstamp.h); for comparing the two */
	bool loop_times;
	/* called from the loop at most every progress_s seconds, and once at the end */
	void (*progress)(void *ctx, const struct load_progress *p);
	void *progress_ctx;
	double progress_s;     /* 0: 0.1 */
};

struct load_run {
	struct load_result *res;   /* n entries, in request order */
	size_t n;
	enum load_arrival arrival;
	double t_start, t_end;     /* monotonic: first launch, last completion */
	double wall_start, wall_end;
	size_t max_inflight;       /* the most requests in flight at once */
	/*
	 * The loop's own cost: per wake-up, the time from epoll_wait returning
	 * to the next epoll_wait (reading, parsing, launching). Bytes that
	 * arrive while the loop is busy wait that long to be timed, so its p99
	 * bounds the client's share of a timestamp's error (1 us resolution).
	 */
	uint64_t n_wakes;
	double busy_p50, busy_p99, busy_max;   /* seconds of wall time */
	/* the same in CPU time of the loop's thread: wall well above CPU means
	 * the host took the core away, not that the loop had work */
	double busy_cpu_p50, busy_cpu_p99, busy_cpu_max;
	double cpu_s;                          /* the loop thread's CPU time over the run */
	/* content chunks timed by the kernel's receive stamp and by the loop
	 * (loop_times, or a socket or read without a stamp) */
	uint64_t n_stamp_kernel, n_stamp_loop;
	/* requests that never reached a live connection (a reused one the
	 * server had closed) and were sent again on a new one: not failures */
	uint64_t n_retried;
};

/*
 * Where a request's TTFT, TTLT and e2e are counted from: when it was handed
 * to its connection, so the client's own queue (a thousand launches at once
 * take libcurl milliseconds to write) is not charged to the server; when it
 * never was (no connection), when it was launched.
 */
double load_result_origin(const struct load_result *r);

/*
 * Sends reqs[0..n) under the arrival model and waits for every one. Per
 * request failures are results, not errors: the return is STATUS_OK when the
 * run took place. STATUS_USAGE for bad options, STATUS_NOMEM, STATUS_LIMIT,
 * STATUS_NOTFOUND when libcurl cannot be loaded (probe/curlfn.h).
 * *out is owned by the caller: load_run_free().
 */
enum status load_run_exec(const struct load_opts *o, const struct load_request *reqs,
			  size_t n, struct load_run **out, struct status_info *si);
void load_run_free(struct load_run *r);

/* CLOCK_MONOTONIC, CLOCK_REALTIME and the calling thread's CPU time, in seconds. */
double load_now(void);
double load_wall(void);
double load_cpu(void);

#endif
