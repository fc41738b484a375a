/*
 * test_mhdfn.c - libmicrohttpd's table (watch/mhdfn.c): the binary does
 * not link libmicrohttpd (tests/module.mk), so the load is what brings it
 * in; every pointer is set and a daemon started through the table answers
 * on 127.0.0.1; a soname that does not exist is refused with its name,
 * dlerror's reason and the package to install.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "watch/mhdfn.h"
#include "tests/testutil.h"

static const struct mhdfn *mf;

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	static char body[] = "pong\n";
	struct MHD_Response *r;
	enum MHD_Result ret;

	(void)cls, (void)url, (void)method, (void)version, (void)upload, (void)upload_size;
	(void)con_cls;
	r = mf->create_response_from_buffer(strlen(body), body, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	mf->add_response_header(r, "X-Table", "mhdfn");
	ret = mf->queue_response(c, MHD_HTTP_OK, r);
	mf->destroy_response(r);
	return ret;
}

static void test_load(void **state)
{
	const struct mhdfn *again = NULL;
	struct status_info si = { 0 };
	struct sockaddr_in sa;
	struct MHD_Daemon *d;
	const union MHD_DaemonInfo *info;
	char buf[512];
	const char req[] = "GET /ping HTTP/1.0\r\n\r\n";
	ssize_t n, got = 0;
	int fd;

	(void)state;
	assert_null(dlopen(MHDFN_SONAME, RTLD_NOW | RTLD_NOLOAD));
	assert_int_equal(mhdfn_load(&mf, &si), STATUS_OK);
	assert_non_null(mf);
	assert_non_null(dlopen(MHDFN_SONAME, RTLD_NOW | RTLD_NOLOAD));
	assert_int_equal(testutil_null_fns(mf, sizeof(*mf)), 0);
	assert_int_equal(mhdfn_load(&again, NULL), STATUS_OK);
	assert_ptr_equal(again, mf);
	/* a real daemon through the table, with the variadic start and info */
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	d = mf->start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, NULL,
			     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
	assert_non_null(d);
	info = mf->get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	assert_true(info->port > 0);
	sa.sin_port = htons(info->port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(write(fd, req, sizeof(req) - 1), (ssize_t)(sizeof(req) - 1));
	while (got < (ssize_t)sizeof(buf) - 1 &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	close(fd);
	mf->stop_daemon(d);
	assert_memory_equal(buf, "HTTP/1.1 200 ", 13);
	assert_non_null(strstr(buf, "X-Table: mhdfn"));
	assert_non_null(strstr(buf, "\r\n\r\npong\n"));
}

static void test_missing(void **state)
{
	struct mhdfn t;
	struct status_info si = { 0 };

	(void)state;
	memset(&t, 0xff, sizeof(t));
	assert_int_equal(mhdfn_load_from("libmicrohttpd-ttaudit-missing.so.12", &t, &si), STATUS_NOTFOUND);
	assert_int_equal(testutil_null_fns(&t, sizeof(t)), sizeof(t) / sizeof(void (*)(void)));
	assert_non_null(strstr(si.msg, "libmicrohttpd-ttaudit-missing.so.12 cannot be loaded: "
				       "libmicrohttpd-ttaudit-missing.so.12: cannot open shared object file"));
	assert_non_null(strstr(si.msg, "; install libmicrohttpd12 (Debian)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
