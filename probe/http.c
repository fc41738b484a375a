#include "probe/http.h"
#include "probe/curlfn.h"
#include "base/alloc.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static const struct curlfn *http_curl;
static enum status http_init_st;
static struct status_info http_init_si;

/* curl_global_init is not thread-safe on every libcurl build: once only. */
static void http_global_init(void)
{
	CURLcode rc;

	http_init_st = curlfn_load(&http_curl, &http_init_si);
	if (http_init_st)
		return;
	rc = http_curl->global_init(CURL_GLOBAL_DEFAULT);
	if (rc != CURLE_OK)
		http_init_st = status_set(&http_init_si, STATUS_HTTP, "libcurl: %s",
					  http_curl->easy_strerror(rc));
}

enum status http_init(struct status_info *si)
{
	pthread_once(&http_once, http_global_init);
	if (http_init_st && si)
		*si = http_init_si;
	return http_init_st;
}

struct http_sink {
	struct http_response *res;
	size_t max, cap;
};

static size_t http_write(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct http_sink *k = ctx;
	struct http_response *res = k->res;
	size_t n = size * nmemb, keep = n;

	if (res->n_body + keep > k->max) {
		keep = k->max - res->n_body;
		res->truncated = true;
	}
	/* the cap on the body bounds the buffer; a failure makes curl report a write error */
	if (ALLOC_GROW_MAX(res->body, res->n_body + keep + 1, k->cap, k->max + 1) < 0)
		return 0;
	memcpy(res->body + res->n_body, data, keep);
	res->n_body += keep;
	res->body[res->n_body] = '\0';
	/* Stop reading at the cap: returning less than n aborts the transfer. */
	return res->truncated ? 0 : n;
}

static char http_auth[1024];
static pthread_once_t http_auth_once = PTHREAD_ONCE_INIT;

static void http_auth_init(void)
{
	const char *k = getenv("TTAUDIT_API_KEY");

	if (!k || !*k)
		k = getenv("OPENAI_API_KEY");
	/* a key with a line break would make a second header: refused */
	if (k && *k && !strpbrk(k, "\r\n") && strlen(k) < sizeof(http_auth) - 32)
		snprintf(http_auth, sizeof(http_auth), "Authorization: Bearer %s", k);
}

const char *http_auth_header(void)
{
	pthread_once(&http_auth_once, http_auth_init);
	return http_auth[0] ? http_auth : NULL;
}

static enum status http_do(const char *url, const char *json, const char *request_id,
			   double timeout_s, size_t max_body, struct http_response *res,
			   struct status_info *si)
{
	struct curl_slist *hdr = NULL;
	struct http_sink sink = { res, max_body ? max_body : HTTP_MAX_BODY, 0 };
	const struct curlfn *cf;
	enum status st = STATUS_OK;
	CURL *h = NULL;
	CURLcode rc;
	double secs = 0;
	long ms;

	memset(res, 0, sizeof(*res));
	st = http_init(si);
	if (st) {
		snprintf(res->error, sizeof(res->error), "%.250s", http_init_si.msg);
		return st;
	}
	cf = http_curl;
	h = cf->easy_init();
	if (!h) {
		snprintf(res->error, sizeof(res->error), "libcurl handle allocation failed");
		return status_set(si, STATUS_NOMEM, "%s", res->error);
	}
	/* 0 ms means "no timeout" to libcurl: a tiny budget must stay a budget. */
	ms = timeout_s > 0 ? (long)(timeout_s * 1000) : 30000;
	if (ms < 1)
		ms = 1;
	rc = curlfn_easy_setup(cf, h, ms, ms < 10000 ? ms : 10000L);
	if (rc != CURLE_OK) {
		snprintf(res->error, sizeof(res->error), "%s", cf->easy_strerror(rc));
		st = status_set(si, STATUS_HTTP, "%s: libcurl: %s", url, res->error);
		goto out;
	}
	cf->easy_setopt(h, CURLOPT_URL, url);
	cf->easy_setopt(h, CURLOPT_WRITEFUNCTION, http_write);
	cf->easy_setopt(h, CURLOPT_WRITEDATA, &sink);
	if (json) {
		hdr = cf->slist_append(NULL, "Content-Type: application/json");
		if (!hdr) {
			st = status_set(si, STATUS_NOMEM, "out of memory");
			goto out;
		}
	}
	if (request_id) {
		char xid[160];
		struct curl_slist *h2;

		snprintf(xid, sizeof(xid), "X-Request-Id: %.120s", request_id);
		if (!(h2 = cf->slist_append(hdr, xid))) {
			st = status_set(si, STATUS_NOMEM, "out of memory");
			goto out;
		}
		hdr = h2;
	}
	if (http_auth_header()) {
		struct curl_slist *h2 = cf->slist_append(hdr, http_auth_header());

		if (!h2) {
			st = status_set(si, STATUS_NOMEM, "out of memory");
			goto out;
		}
		hdr = h2;
	}
	if (hdr)
		cf->easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	if (json) {
		cf->easy_setopt(h, CURLOPT_POSTFIELDS, json);
		cf->easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(json));
	}
	rc = cf->easy_perform(h);
	cf->easy_getinfo(h, CURLINFO_RESPONSE_CODE, &res->status);
	cf->easy_getinfo(h, CURLINFO_TOTAL_TIME, &secs);
	res->seconds = secs;
	if (rc == CURLE_WRITE_ERROR && res->truncated) {
		st = status_set(si, STATUS_LIMIT, "%s: response body over %zu bytes", url, sink.max);
		snprintf(res->error, sizeof(res->error), "response body over %zu bytes", sink.max);
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(res->error, sizeof(res->error), "%s", cf->easy_strerror(rc));
		st = status_set(si, STATUS_TIMEOUT, "%s: no complete answer within %.1f s", url, timeout_s);
	} else if (rc != CURLE_OK) {
		snprintf(res->error, sizeof(res->error), "%s", cf->easy_strerror(rc));
		st = status_set(si, rc == CURLE_WRITE_ERROR ? STATUS_NOMEM : STATUS_HTTP, "%s: %s",
				url, res->error);
	}
	if (!res->body) {
		res->body = calloc(1, 1);
		if (!res->body && !st)
			st = status_set(si, STATUS_NOMEM, "out of memory");
	}
out:
	cf->slist_free_all(hdr);
	cf->easy_cleanup(h);
	return st;
}

enum status http_get(const char *url, double timeout_s, size_t max_body,
		     struct http_response *res, struct status_info *si)
{
	return http_do(url, NULL, NULL, timeout_s, max_body, res, si);
}

enum status http_post_json(const char *url, const char *json, const char *request_id,
			   double timeout_s, size_t max_body, struct http_response *res,
			   struct status_info *si)
{
	return http_do(url, json, request_id, timeout_s, max_body, res, si);
}

void http_response_release(struct http_response *res)
{
	if (!res)
		return;
	free(res->body);
	res->body = NULL;
	res->n_body = 0;
}

enum status http_join(const char *base, const char *path, char *out, size_t n)
{
	size_t lb = strlen(base);
	int w;

	while (lb && base[lb - 1] == '/')
		lb--;
	while (*path == '/')
		path++;
	w = snprintf(out, n, "%.*s/%s", (int)lb, base, path);
	if (w < 0 || (size_t)w >= n)
		return STATUS_LIMIT;
	return STATUS_OK;
}

const char *http_excerpt(const char *body, size_t n_body, size_t max, char *buf, size_t n)
{
	size_t i, k = 0;

	if (!n)
		return buf;
	for (i = 0; body && i < n_body && i < max && k + 4 < n; i++) {
		unsigned char ch = (unsigned char)body[i];

		buf[k++] = ch < 0x20 || ch == 0x7f ? '.' : (char)ch;
	}
	if (body && i < n_body && k + 4 < n) {
		memcpy(buf + k, "...", 3);
		k += 3;
	}
	buf[k] = '\0';
	return buf;
}
