/*
 * curlfn.h - libcurl, loaded when a command first speaks HTTP (dynlib.h):
 * the functions probe/http.c and bench/load.c call, as a table, and the
 * options every handle of the tool carries (curlfn_easy_setup).
 *
 * Call through the table (`cf->easy_setopt(h, CURLOPT_URL, url)`), never
 * by curl's names: ttaudit does not link libcurl, and a call by name would
 * bring it back. <curl/curl.h> still gives the types and constants.
 * curl's typecheck-gcc.h macros do not apply to calls through the table:
 * pass every option's value in the type curl documents (long, not int).
 */
#ifndef TTAUDIT_CURLFN_H
#define TTAUDIT_CURLFN_H

#include <curl/curl.h>

#include "base/status.h"

/* The soname of libcurl 7.16 to 8.x, installed by Debian's libcurl4. */
#define CURLFN_SONAME "libcurl.so.4"

/* Each member is the curl_<member> of <curl/curl.h> (curlfn.c checks the types). */
struct curlfn {
	CURLcode (*global_init)(long flags);
	void (*global_cleanup)(void);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
	CURLcode (*easy_perform)(CURL *curl);
	CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
	void (*easy_cleanup)(CURL *curl);
	const char *(*easy_strerror)(CURLcode code);
	struct curl_slist *(*slist_append)(struct curl_slist *list, const char *data);
	void (*slist_free_all)(struct curl_slist *list);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_setopt)(CURLM *multi, CURLMoption option, ...);
	CURLMcode (*multi_add_handle)(CURLM *multi, CURL *easy);
	CURLMcode (*multi_remove_handle)(CURLM *multi, CURL *easy);
	CURLMcode (*multi_socket_action)(CURLM *multi, curl_socket_t s, int ev_bitmask,
					 int *running_handles);
	CURLMsg *(*multi_info_read)(CURLM *multi, int *msgs_in_queue);
	CURLMcode (*multi_cleanup)(CURLM *multi);
};

/*
 * Loads CURLFN_SONAME once per process and gives its table in *out (static,
 * never freed; NULL on failure). STATUS_NOTFOUND when it cannot be loaded:
 * si says why and which package installs it, to every caller. It does not
 * call curl_global_init: the caller does, as libcurl asks.
 */
enum status curlfn_load(const struct curlfn **out, struct status_info *si);

/* curlfn_load's work without the once: `soname` into t (dynlib_load). For
 * tests, which load a soname that does not exist. */
enum status curlfn_load_from(const char *soname, struct curlfn *t, struct status_info *si);

/*
 * The setup both clients give a new easy handle (http.c's blocking
 * exchanges, the load loop's transfers), in one place so they cannot drift:
 *   - HTTP and HTTPS only: a URL of another scheme (file://, gopher://,
 *     smtp://) fails with CURLE_UNSUPPORTED_PROTOCOL instead of being
 *     fetched; redirects are not followed either (http.h says why);
 *   - no signals: libcurl's resolver timeouts would raise SIGALRM in a
 *     threaded or event-loop caller;
 *   - timeout_ms for the whole exchange (0: none; the load loop sets it per
 *     request) and connect_ms to connect;
 *   - no User-Agent header: libcurl sends none unless asked, and neither
 *     client ever sent one.
 * The caller adds the URL, the body and the headers (Content-Type, its
 * X-Request-Id, http_auth_header()). CURLE_OK, or the code of the first
 * option libcurl refused: a handle that could not be restricted to HTTP is
 * not to be used.
 */
CURLcode curlfn_easy_setup(const struct curlfn *cf, CURL *h, long timeout_ms, long connect_ms);

#endif
