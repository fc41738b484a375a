/*
 * test_curlfn.c - libcurl's table (probe/curlfn.c): the binary does not
 * link libcurl, so the load is what brings it in; every pointer is set and
 * works; a soname that does not exist is refused with its name, dlerror's
 * reason and the package to install. The setup every handle carries
 * (curlfn_easy_setup) refuses a scheme other than HTTP and HTTPS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "probe/curlfn.h"
#include "tests/testutil.h"

static void test_load(void **state)
{
	const struct curlfn *cf = NULL, *again = NULL;
	struct status_info si = { 0 };
	CURL *h;

	(void)state;
	assert_null(dlopen(CURLFN_SONAME, RTLD_NOW | RTLD_NOLOAD));
	assert_int_equal(curlfn_load(&cf, &si), STATUS_OK);
	assert_non_null(cf);
	assert_non_null(dlopen(CURLFN_SONAME, RTLD_NOW | RTLD_NOLOAD));
	assert_int_equal(testutil_null_fns(cf, sizeof(*cf)), 0);
	/* once: the same table */
	assert_int_equal(curlfn_load(&again, NULL), STATUS_OK);
	assert_ptr_equal(again, cf);
	/* the pointers are libcurl's own */
	assert_string_equal(cf->easy_strerror(CURLE_OPERATION_TIMEDOUT), "Timeout was reached");
	assert_int_equal(cf->global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	h = cf->easy_init();
	assert_non_null(h);
	assert_int_equal(cf->easy_setopt(h, CURLOPT_TIMEOUT_MS, 1000L), CURLE_OK);
	cf->easy_cleanup(h);
	cf->global_cleanup();
}

static void test_missing(void **state)
{
	struct curlfn t;
	struct status_info si = { 0 };

	(void)state;
	memset(&t, 0xff, sizeof(t));
	assert_int_equal(curlfn_load_from("libcurl-ttaudit-missing.so.4", &t, &si), STATUS_NOTFOUND);
	assert_int_equal(testutil_null_fns(&t, sizeof(t)), sizeof(t) / sizeof(void (*)(void)));
	assert_non_null(strstr(si.msg, "libcurl-ttaudit-missing.so.4 cannot be loaded: "
				       "libcurl-ttaudit-missing.so.4: cannot open shared object file"));
	assert_non_null(strstr(si.msg, "; install libcurl4 (Debian)"));
}

static size_t test_sink(char *data, size_t size, size_t nmemb, void *ctx)
{
	size_t *n = ctx;

	(void)data;
	*n += size * nmemb;
	return size * nmemb;
}

static void test_setup_http_only(void **state)
{
	const struct curlfn *cf = NULL;
	struct status_info si = { 0 };
	char path[] = "/tmp/ttaudit-curlfn-XXXXXX", url[64];
	size_t got = 0;
	CURL *h;
	int fd;

	(void)state;
	assert_int_equal(curlfn_load(&cf, &si), STATUS_OK);
	assert_int_equal(cf->global_init(CURL_GLOBAL_DEFAULT), CURLE_OK);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "secret\n", 7), 7);
	close(fd);
	snprintf(url, sizeof(url), "file://%s", path);
	/* without the setup libcurl reads the file: the test can tell */
	h = cf->easy_init();
	assert_non_null(h);
	cf->easy_setopt(h, CURLOPT_URL, url);
	cf->easy_setopt(h, CURLOPT_WRITEFUNCTION, test_sink);
	cf->easy_setopt(h, CURLOPT_WRITEDATA, &got);
	assert_int_equal(cf->easy_perform(h), CURLE_OK);
	assert_int_equal(got, 7);
	cf->easy_cleanup(h);
	/* with it, the scheme is refused and nothing is read */
	got = 0;
	h = cf->easy_init();
	assert_non_null(h);
	assert_int_equal(curlfn_easy_setup(cf, h, 1000L, 1000L), CURLE_OK);
	cf->easy_setopt(h, CURLOPT_URL, url);
	cf->easy_setopt(h, CURLOPT_WRITEFUNCTION, test_sink);
	cf->easy_setopt(h, CURLOPT_WRITEDATA, &got);
	assert_int_equal(cf->easy_perform(h), CURLE_UNSUPPORTED_PROTOCOL);
	assert_int_equal(got, 0);
	cf->easy_cleanup(h);
	unlink(path);
	cf->global_cleanup();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_missing),
		cmocka_unit_test(test_setup_http_only),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
