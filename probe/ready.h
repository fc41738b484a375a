/*
 * ready.h - the readiness ladder of an OpenAI-compatible server: each rung
 * must pass, in order, before the next is tried, and each is timed.
 *
 *   health    GET /health answers 200
 *   metrics   GET /metrics answers 200 with Prometheus text that parses and
 *             holds at least one sample
 *   models    GET /v1/models lists a model (the one asked for, if any)
 *   generate  POST /v1/completions (max_tokens 1, temperature 0) answers 200
 *             with one generated token
 *
 * Only the generated token passes the last rung: a gateway that answers
 * /health, or 400 to completions, for a minute before the model is really
 * up is not ready. A Tenstorrent load takes about 510 s, hence the default
 * deadline of 600 s.
 */
#ifndef TTAUDIT_READY_H
#define TTAUDIT_READY_H

#include <stdbool.h>

#include "base/status.h"

#define READY_DEFAULT_TIMEOUT 600.0

enum ready_rung { READY_HEALTH, READY_METRICS, READY_MODELS, READY_GENERATE, READY__COUNT };

struct ready_rung_result {
	bool passed;
	double started;        /* seconds since the ladder began, when the rung was first tried */
	double seconds;        /* from `started` until it passed (or the deadline) */
	unsigned attempts;
	long last_status;      /* HTTP status of the last attempt, 0 if none arrived */
	char last_error[256];  /* why the last attempt did not pass */
	char excerpt[256];     /* start of the last response body */
	unsigned lacking;      /* attempts in a row answered "no such route" (404, 405, 501) */
};

struct ready_report {
	bool ready;
	enum ready_rung failed;           /* the rung that did not pass (when !ready) */
	double total;                     /* seconds */
	char url[2048];
	char model[256];                  /* the model the ladder used */
	char completion_id[128];          /* `id` of the completion that passed */
	char request_id[128];             /* X-Request-Id of the last generate attempt, "" if none */
	char token_text[128];             /* the generated text */
	struct ready_rung_result rung[READY__COUNT];
};

struct ready_opts {
	const char *url;        /* base URL, "http://127.0.0.1:8000" */
	const char *model;      /* NULL: the first model /v1/models lists */
	double timeout;         /* whole ladder; <= 0: READY_DEFAULT_TIMEOUT */
	double interval;        /* pause between attempts; <= 0: 1 s */
	/* Each generate attempt is sent with X-Request-Id "<prefix>-ready-<n>"
	 * (n its attempt), found so in the server's log; NULL: "ttaudit-<pid>". */
	const char *request_id_prefix;
	/* Called after every attempt (for a progress line); may be NULL. */
	void (*progress)(void *ctx, const struct ready_report *r, enum ready_rung at, double elapsed);
	void *ctx;
};

/*
 * Climbs the ladder until every rung passed or the deadline. Returns
 * STATUS_OK when ready, STATUS_TIMEOUT when not (r->failed names the rung,
 * with its last status and body excerpt), STATUS_USAGE for a bad URL,
 * http_init's status (before any attempt) when libcurl cannot be loaded.
 */
enum status ready_wait(const struct ready_opts *o, struct ready_report *r, struct status_info *si);

/* "health", "metrics", "models", "generate". */
const char *ready_rung_name(enum ready_rung rung);

/* The report as JSON (malloc'd, caller frees); NULL on allocation failure. */
char *ready_report_json(const struct ready_report *r);

#endif
