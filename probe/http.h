/*
 * http.h - small blocking HTTP client for the benchmark half (libcurl easy
 * interface): GET, and POST of a JSON body, each with a whole-exchange
 * timeout and a hard cap on the response body kept.
 *
 * Only loopback or operator-given URLs are fetched; no redirects are
 * followed (a gateway that redirects is not the server being checked).
 */
#ifndef TTAUDIT_HTTP_H
#define TTAUDIT_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

/* Default cap on a response body (a vLLM /metrics page is ~100 KiB). */
#define HTTP_MAX_BODY (8u << 20)
#define HTTP_MAX_URL 2048

struct http_response {
	long status;        /* HTTP status, 0 when no response arrived */
	char *body;         /* NUL-terminated, owned: http_response_release() frees it */
	size_t n_body;
	bool truncated;     /* the body hit the cap; body holds the first max bytes */
	double seconds;     /* wall time of the exchange */
	char error[256];    /* transport error ("connection refused"), "" if none */
};

/*
 * Loads libcurl (probe/curlfn.h) and runs curl_global_init, once per
 * process; http_get and http_post_json call it first. STATUS_NOTFOUND when
 * libcurl cannot be loaded (si: which package installs it), STATUS_HTTP
 * when it does not initialise. A caller that reads a failed exchange as an
 * answer of the server (a rung not passed, an unreachable source) calls it
 * before its first exchange, so that a missing library is a usage error
 * rather than a verdict on the server.
 */
enum status http_init(struct status_info *si);

/*
 * GET url. Returns STATUS_OK when any HTTP response arrived (check
 * res->status), STATUS_HTTP when none did (res->error and si say why),
 * STATUS_TIMEOUT after timeout_s, STATUS_LIMIT when the body exceeded
 * max_body (0: HTTP_MAX_BODY; the first bytes are kept), http_init's
 * status when libcurl is not there. `res` is always initialised and must
 * be released, whatever the result.
 */
enum status http_get(const char *url, double timeout_s, size_t max_body,
		     struct http_response *res, struct status_info *si);

/*
 * POST json (Content-Type: application/json) to url, with "X-Request-Id:
 * request_id" so the request can be found in the server's log (vLLM takes
 * it as the request's id); results as http_get. Every caller in the tool
 * gives one; NULL sends none. An id over 120 bytes is cut.
 */
enum status http_post_json(const char *url, const char *json, const char *request_id,
			   double timeout_s, size_t max_body, struct http_response *res,
			   struct status_info *si);

void http_response_release(struct http_response *res);

/*
 * "Authorization: Bearer <key>" when the environment holds an API key
 * (TTAUDIT_API_KEY, else OPENAI_API_KEY; vLLM's --api-key and llama-server's
 * --api-key check it), or NULL. Read once. Every request of http_get,
 * http_post_json and the load driver carries it; no report or record ever
 * holds it.
 */
const char *http_auth_header(void);

/*
 * base + path without a doubled '/': ("http://h:1/", "/v1/models") gives
 * "http://h:1/v1/models". STATUS_LIMIT when it does not fit in n.
 */
enum status http_join(const char *base, const char *path, char *out, size_t n);

/* The first `max` bytes of body, control characters shown as '.', in buf. */
const char *http_excerpt(const char *body, size_t n_body, size_t max, char *buf, size_t n);

#endif
