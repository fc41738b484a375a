/* test_ready.c - the readiness ladder and the HTTP client against an in-process server
 * (libmicrohttpd) whose answers each case scripts: load period, gateway 400, no token,
 * unparseable metrics, empty model list; plus url joining, excerpts and the body cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <microhttpd.h>
#include <cmocka.h>

#include "probe/http.h"
#include "probe/ready.h"

/* What the server answers; a test sets it before climbing. */
static struct {
	int health_503;          /* answer 503 to the first N /health */
	int n_health;
	const char *metrics;     /* body of /metrics */
	const char *models;      /* body of /v1/models */
	int completion_status;
	const char *completion;  /* body of /v1/completions */
	char last_post[512];
	char last_xid[160];      /* X-Request-Id of the last POST, "" none */
} srv;

static struct MHD_Daemon *daemon_h;
static char base[64];

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload,
			      size_t *upload_size, void **con_cls)
{
	static int marker;
	struct MHD_Response *r;
	enum MHD_Result ret;
	const char *body = "";
	int status = 200;

	(void)cls;
	(void)version;
	if (!strcmp(method, "POST")) {
		if (!*con_cls) {
			const char *x = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Request-Id");

			*con_cls = &marker;
			srv.last_post[0] = '\0';
			snprintf(srv.last_xid, sizeof(srv.last_xid), "%s", x ? x : "");
			return MHD_YES;
		}
		if (*upload_size) {
			size_t have = strlen(srv.last_post), n = *upload_size;

			if (have + n >= sizeof(srv.last_post))
				n = sizeof(srv.last_post) - 1 - have;
			memcpy(srv.last_post + have, upload, n);
			srv.last_post[have + n] = '\0';
			*upload_size = 0;
			return MHD_YES;
		}
	}
	if (!strcmp(url, "/health")) {
		if (srv.n_health++ < srv.health_503)
			status = 503;
	} else if (!strcmp(url, "/metrics")) {
		body = srv.metrics;
	} else if (!strcmp(url, "/v1/models")) {
		body = srv.models;
	} else if (!strcmp(url, "/v1/completions")) {
		status = srv.completion_status;
		body = srv.completion;
	} else {
		status = 404;
	}
	r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	ret = MHD_queue_response(c, (unsigned)status, r);
	MHD_destroy_response(r);
	return ret;
}

static const char good_metrics[] = "# TYPE vllm:num_requests_running gauge\n"
				   "vllm:num_requests_running{model_name=\"m\"} 0\n";
static const char good_models[] = "{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"max_model_len\":4096}]}";
static const char good_completion[] = "{\"id\":\"cmpl-42\",\"choices\":[{\"index\":0,\"text\":\" Hi\"}],"
				      "\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1}}";

static int setup(void **state)
{
	const union MHD_DaemonInfo *info;
	static struct sockaddr_in sa;   /* loopback only, a port the OS picks */

	(void)state;
	sa.sin_family = AF_INET;
	sa.sin_port = 0;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	daemon_h = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, NULL,
				    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
	if (!daemon_h)
		return -1;
	info = MHD_get_daemon_info(daemon_h, MHD_DAEMON_INFO_BIND_PORT);
	snprintf(base, sizeof(base), "http://127.0.0.1:%u", info->port);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	MHD_stop_daemon(daemon_h);
	return 0;
}

static int reset(void **state)
{
	(void)state;
	memset(&srv, 0, sizeof(srv));
	srv.metrics = good_metrics;
	srv.models = good_models;
	srv.completion_status = 200;
	srv.completion = good_completion;
	return 0;
}

static enum status climb(struct ready_report *r, double timeout)
{
	struct ready_opts o = { 0 };
	struct status_info si = { 0 };

	o.url = base;
	o.timeout = timeout;
	o.interval = 0.05;
	return ready_wait(&o, r, &si);
}

static void test_ready(void **state)
{
	struct ready_report r;
	int i;

	(void)state;
	assert_int_equal(climb(&r, 5), STATUS_OK);
	assert_true(r.ready);
	for (i = 0; i < READY__COUNT; i++) {
		assert_true(r.rung[i].passed);
		assert_int_equal(r.rung[i].attempts, 1);
		assert_int_equal(r.rung[i].last_status, 200);
	}
	assert_string_equal(r.model, "m");
	assert_string_equal(r.completion_id, "cmpl-42");
	assert_string_equal(r.token_text, " Hi");
	/* the request asks for one token, greedily, of the listed model */
	assert_non_null(strstr(srv.last_post, "\"max_tokens\":1"));
	assert_non_null(strstr(srv.last_post, "\"temperature\":0"));
	assert_non_null(strstr(srv.last_post, "\"model\":\"m\""));
	/* and can be found in the server's log: it carries an X-Request-Id,
	 * which the report names */
	{
		char want[64];

		snprintf(want, sizeof(want), "ttaudit-%ld-ready-1", (long)getpid());
		assert_string_equal(srv.last_xid, want);
		assert_string_equal(r.request_id, want);
	}
}

static void test_load_period(void **state)
{
	struct ready_report r;

	(void)state;
	srv.health_503 = 4;
	assert_int_equal(climb(&r, 5), STATUS_OK);
	assert_int_equal(r.rung[READY_HEALTH].attempts, 5);
	assert_true(r.rung[READY_HEALTH].seconds >= 0.15);
	assert_int_equal(r.rung[READY_METRICS].attempts, 1);
	assert_true(r.rung[READY_METRICS].started >= r.rung[READY_HEALTH].seconds);
}

static void test_gateway_400(void **state)
{
	struct ready_report r;
	char *js;

	(void)state;
	srv.completion_status = 400;
	srv.completion = "{\"object\":\"error\",\"message\":\"model is not loaded yet\"}";
	assert_int_equal(climb(&r, 1.0), STATUS_TIMEOUT);
	assert_false(r.ready);
	assert_int_equal(r.failed, READY_GENERATE);
	assert_true(r.rung[READY_MODELS].passed);
	assert_false(r.rung[READY_GENERATE].passed);
	assert_true(r.rung[READY_GENERATE].attempts > 1);
	assert_int_equal(r.rung[READY_GENERATE].last_status, 400);
	assert_string_equal(r.rung[READY_GENERATE].last_error, "answered 400");
	assert_non_null(strstr(r.rung[READY_GENERATE].excerpt, "model is not loaded yet"));
	js = ready_report_json(&r);
	assert_non_null(strstr(js, "\"failed_rung\":\"generate\""));
	free(js);
}

static void test_no_token(void **state)
{
	struct ready_report r;

	(void)state;
	srv.completion = "{\"id\":\"cmpl-1\",\"choices\":[{\"text\":\"\"}],\"usage\":{\"completion_tokens\":0}}";
	assert_int_equal(climb(&r, 1.0), STATUS_TIMEOUT);
	assert_int_equal(r.failed, READY_GENERATE);
	assert_non_null(strstr(r.rung[READY_GENERATE].last_error, "no generated token"));
	srv.completion = "{\"id\":\"cmpl-1\",\"choices\":[{\"text\":\"\"}]}";
	assert_int_equal(climb(&r, 1.0), STATUS_TIMEOUT);
	assert_non_null(strstr(r.rung[READY_GENERATE].last_error, "text is empty"));
	srv.completion = "<html>ok</html>";
	assert_int_equal(climb(&r, 1.0), STATUS_TIMEOUT);
	assert_non_null(strstr(r.rung[READY_GENERATE].last_error, "no choices"));
	/* no usage block, but text: one token came back */
	srv.completion = "{\"id\":\"cmpl-2\",\"choices\":[{\"text\":\" a\"}]}";
	assert_int_equal(climb(&r, 2), STATUS_OK);
}

static void test_metrics_rung(void **state)
{
	struct ready_report r;

	(void)state;
	srv.metrics = "<html>upstream connect error</html>\n";
	assert_int_equal(climb(&r, 1.0), STATUS_TIMEOUT);
	assert_int_equal(r.failed, READY_METRICS);
	assert_non_null(strstr(r.rung[READY_METRICS].last_error, "do not parse: line 1"));
	srv.metrics = "# HELP nothing yet\n";
	assert_int_equal(climb(&r, 1.0), STATUS_TIMEOUT);
	assert_int_equal(r.failed, READY_METRICS);
	assert_non_null(strstr(r.rung[READY_METRICS].last_error, "no sample"));
}

static void test_models_rung(void **state)
{
	struct ready_opts o = { 0 };
	struct status_info si = { 0 };
	struct ready_report r;

	(void)state;
	srv.models = "{\"object\":\"list\",\"data\":[]}";
	assert_int_equal(climb(&r, 1.0), STATUS_TIMEOUT);
	assert_int_equal(r.failed, READY_MODELS);
	assert_non_null(strstr(r.rung[READY_MODELS].last_error, "empty"));
	srv.models = good_models;
	o.url = base;
	o.model = "other";
	o.timeout = 1.0;
	o.interval = 0.05;
	assert_int_equal(ready_wait(&o, &r, &si), STATUS_TIMEOUT);
	assert_non_null(strstr(r.rung[READY_MODELS].last_error, "'other' is not listed"));
}

static void test_unreachable_and_usage(void **state)
{
	struct ready_opts o = { 0 };
	struct status_info si = { 0 };
	struct ready_report r;

	(void)state;
	o.url = "ftp://127.0.0.1/";
	assert_int_equal(ready_wait(&o, &r, &si), STATUS_USAGE);
	o.url = NULL;
	assert_int_equal(ready_wait(&o, &r, &si), STATUS_USAGE);
	o.url = "http://127.0.0.1:1";   /* nothing listens on port 1 */
	o.timeout = 1.0;
	o.interval = 0.05;
	assert_int_equal(ready_wait(&o, &r, &si), STATUS_TIMEOUT);
	assert_int_equal(r.failed, READY_HEALTH);
	assert_int_equal(r.rung[READY_HEALTH].last_status, 0);
	assert_true(r.rung[READY_HEALTH].last_error[0] != '\0');
	assert_int_equal(r.rung[READY_METRICS].attempts, 0);
}

static void test_http(void **state)
{
	struct http_response res;
	struct status_info si = { 0 };
	char buf[64], url[128];

	(void)state;
	assert_int_equal(http_join("http://h:1/", "/v1/models", url, sizeof(url)), STATUS_OK);
	assert_string_equal(url, "http://h:1/v1/models");
	assert_int_equal(http_join("http://h:1", "metrics", url, sizeof(url)), STATUS_OK);
	assert_string_equal(url, "http://h:1/metrics");
	assert_int_equal(http_join("http://h:1", "metrics", url, 8), STATUS_LIMIT);
	assert_string_equal(http_excerpt("a\nb", 3, 10, buf, sizeof(buf)), "a.b");
	assert_string_equal(http_excerpt("abcdef", 6, 3, buf, sizeof(buf)), "abc...");
	http_join(base, "/metrics", url, sizeof(url));
	assert_int_equal(http_get(url, 2, 0, &res, &si), STATUS_OK);
	assert_int_equal(res.status, 200);
	assert_int_equal(res.n_body, strlen(good_metrics));
	assert_false(res.truncated);
	http_response_release(&res);
	/* the body cap fails cleanly and keeps the first bytes */
	assert_int_equal(http_get(url, 2, 10, &res, &si), STATUS_LIMIT);
	assert_true(res.truncated);
	assert_int_equal(res.n_body, 10);
	assert_memory_equal(res.body, good_metrics, 10);
	http_response_release(&res);
	assert_int_equal(http_get("http://127.0.0.1:1/", 1, 0, &res, &si), STATUS_HTTP);
	assert_int_equal(res.status, 0);
	assert_true(res.error[0] != '\0');
	http_response_release(&res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ready, reset),
		cmocka_unit_test_setup(test_load_period, reset),
		cmocka_unit_test_setup(test_gateway_400, reset),
		cmocka_unit_test_setup(test_no_token, reset),
		cmocka_unit_test_setup(test_metrics_rung, reset),
		cmocka_unit_test_setup(test_models_rung, reset),
		cmocka_unit_test_setup(test_unreachable_and_usage, reset),
		cmocka_unit_test_setup(test_http, reset),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
