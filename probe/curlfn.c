/*
 * curlfn.c - libcurl's table (curlfn.h), filled by dlopen once per process,
 * and the setup every handle of the tool carries.
 */
#include "probe/curlfn.h"
#include "base/dynlib.h"

#include <stddef.h>

/* The soname is not in curl's headers; its major version is: 7.16 to 8.x
 * keep libcurl.so.4. */
#if LIBCURL_VERSION_NUM < 0x071000 || LIBCURL_VERSION_MAJOR > 8
#error "this libcurl's soname is not libcurl.so.4: set CURLFN_SONAME"
#endif

/* Every member of struct curlfn, once: the symbol list and the type checks
 * are made from it. */
#define CURLFN_EACH(X) \
	X(global_init) X(global_cleanup) X(easy_init) X(easy_setopt) X(easy_perform) \
	X(easy_getinfo) X(easy_cleanup) X(easy_strerror) X(slist_append) X(slist_free_all) \
	X(multi_init) X(multi_setopt) X(multi_add_handle) X(multi_remove_handle) \
	X(multi_socket_action) X(multi_info_read) X(multi_cleanup)

/* Its entries, each checked against the header (dynlib.h). */
#define CURLFN_CHECK(f) DYNLIB_CHECK(struct curlfn, f, curl_##f);
CURLFN_EACH(CURLFN_CHECK)
#define CURLFN_SYM(f) DYNLIB_SYM(struct curlfn, f, curl_##f),
static const struct dynlib_sym curlfn_syms[] = { CURLFN_EACH(CURLFN_SYM) };
DYNLIB_COMPLETE(curlfn_syms, struct curlfn);

static const struct dynlib_spec curlfn_spec = {
	.package = "libcurl4", .syms = curlfn_syms,
	.n_syms = sizeof(curlfn_syms) / sizeof(curlfn_syms[0]), .table_size = sizeof(struct curlfn)
};

static struct curlfn curlfn_table;
static struct dynlib_once curlfn_loaded =
	DYNLIB_ONCE_INIT(CURLFN_SONAME, &curlfn_spec, &curlfn_table);

static void curlfn_init(void)
{
	dynlib_once_run(&curlfn_loaded);
}

enum status curlfn_load(const struct curlfn **out, struct status_info *si)
{
	enum status st;

	*out = dynlib_once(&curlfn_loaded, curlfn_init, &st, si);
	return st;
}

enum status curlfn_load_from(const char *soname, struct curlfn *t, struct status_info *si)
{
	return dynlib_load(soname, &curlfn_spec, t, si);
}

CURLcode curlfn_easy_setup(const struct curlfn *cf, CURL *h, long timeout_ms, long connect_ms)
{
	CURLcode rc;

	/* CURLOPT_PROTOCOLS_STR came with 7.85 and deprecated the bitmask
	 * CURLOPT_PROTOCOLS; a header without it has only the bitmask */
#if LIBCURL_VERSION_NUM >= 0x075500
	rc = cf->easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	rc = cf->easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	if (rc != CURLE_OK)
		return rc;
	if ((rc = cf->easy_setopt(h, CURLOPT_NOSIGNAL, 1L)) != CURLE_OK ||
	    (rc = cf->easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L)) != CURLE_OK ||
	    (rc = cf->easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms)) != CURLE_OK ||
	    (rc = cf->easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, connect_ms)) != CURLE_OK)
		return rc;
	return CURLE_OK;
}
