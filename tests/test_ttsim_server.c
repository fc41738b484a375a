/* test_ttsim_server.c - ttsim's HTTP server in-process, driven with libcurl:
 * ~1024 concurrent streams batched into one generator give each prompt its
 * sequential output under stamp; under bare an output departs from the
 * reference exactly when the audit records a substitution for its id; bad
 * input gets vLLM-style errors and the server keeps serving; requests that
 * reach the polling thread as one batch of 128 readiness events are all
 * answered. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "tools/ttsim/server.h"
#include "tools/ttsim/vocab.h"

#define BODY_MAX (1 << 20)

struct xfer {
	CURL *h;
	char req[512];
	char prompt[256];
	int max_tokens;
	char *body;
	size_t len;
	long code;
	char id[80];
	char text[4096];
	bool done_marker, role_first, usage_seen;
};

static size_t on_data(char *p, size_t sz, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = sz * n;

	if (x->len + len >= BODY_MAX)
		return 0;
	memcpy(x->body + x->len, p, len);
	x->len += len;
	x->body[x->len] = 0;
	return len;
}

static struct ttsim_server *start(unsigned arm, const char *audit_path, double scale,
				  struct ttsim_audit **audit)
{
	struct ttsim_server_config c;
	struct ttsim_server *s = NULL;
	struct status_info si;

	ttsim_server_config_default(&c);
	c.port = 0;
	c.time_scale = scale;
	c.model.seed = 11;
	c.model.slots = 8;
	c.model.arm = c.model.arm_claimed = arm;
	c.model.host_sampling = 0.05;   /* stale on-device buffers after host-sampled decodes */
	*audit = NULL;
	if (audit_path)
		assert_int_equal(ttsim_audit_open(audit_path, false, audit, &si), STATUS_OK);
	c.audit = *audit;
	status_info_clear(&si);
	assert_int_equal(ttsim_server_start(&c, &s, &si), STATUS_OK);
	assert_true(ttsim_server_port(s) > 0);
	return s;
}

/* The text a prompt must produce alone. */
static void reference_text(const char *prompt, int max_tokens, char *out, size_t n)
{
	int toks[256], ref[256], k, i;
	size_t len = 0;

	k = (int)ttsim_vocab_tokenize(prompt, strlen(prompt), toks, 256);
	ttsim_model_reference(11, toks, k, max_tokens, ref);
	out[0] = 0;
	for (i = 0; i < max_tokens; i++)
		assert_int_equal(ttsim_vocab_append(ref[i], out, n, &len), 0);
}

/* Collects id and text from an SSE body (completions). */
static void parse_stream(struct xfer *x)
{
	char *line = x->body, *nl;
	cJSON *j, *ch, *t, *u;
	int n = 0;

	x->text[0] = 0;
	while (line && *line) {
		nl = strstr(line, "\n\n");
		if (nl)
			*nl = 0;
		if (!strncmp(line, "data: ", 6)) {
			if (!strcmp(line + 6, "[DONE]")) {
				x->done_marker = true;
			} else {
				j = cJSON_Parse(line + 6);
				assert_non_null(j);
				snprintf(x->id, sizeof(x->id), "%s",
					 cJSON_GetObjectItem(j, "id")->valuestring);
				ch = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "choices"), 0);
				t = ch ? cJSON_GetObjectItem(ch, "text") : NULL;
				if (ch && !t) {
					cJSON *d = cJSON_GetObjectItem(ch, "delta");

					if (n == 0 && cJSON_GetObjectItem(d, "role"))
						x->role_first = true;
					t = cJSON_GetObjectItem(d, "content");
				}
				if (t)
					strncat(x->text, t->valuestring, sizeof(x->text) - strlen(x->text) - 1);
				u = cJSON_GetObjectItem(j, "usage");
				if (cJSON_IsObject(u)) {
					x->usage_seen = true;
					assert_int_equal(cJSON_GetObjectItem(u, "completion_tokens")->valueint,
							 x->max_tokens);
				}
				cJSON_Delete(j);
				n++;
			}
		}
		line = nl ? nl + 2 : NULL;
	}
}

/* Runs n streaming completions at once; returns the transfers (caller frees). */
static struct xfer *run_concurrent(int port, int n, bool chat)
{
	CURLM *multi = curl_multi_init();
	struct xfer *xs = calloc((size_t)n, sizeof(*xs));
	char url[128];
	int i, running = 0, q;
	CURLMsg *msg;
	struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");

	assert_non_null(xs);
	curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, 0L);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/%s", port,
		 chat ? "chat/completions" : "completions");
	for (i = 0; i < n; i++) {
		struct xfer *x = &xs[i];

		x->body = malloc(BODY_MAX);
		assert_non_null(x->body);
		x->max_tokens = 4 + i % 29;
		snprintf(x->prompt, sizeof(x->prompt), "ask %d about the %d river and the stone %d"
			 "%.*s", i, i * 7, i % 5, 4 * (i % 3),
			 " a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a");
		if (chat)
			snprintf(x->req, sizeof(x->req), "{\"messages\":[{\"role\":\"user\","
				 "\"content\":\"%s\"}],\"max_tokens\":%d,\"stream\":true,"
				 "\"stream_options\":{\"include_usage\":true}}", x->prompt, x->max_tokens);
		else
			snprintf(x->req, sizeof(x->req), "{\"prompt\":\"%s\",\"max_tokens\":%d,"
				 "\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
				 x->prompt, x->max_tokens);
		x->h = curl_easy_init();
		curl_easy_setopt(x->h, CURLOPT_URL, url);
		curl_easy_setopt(x->h, CURLOPT_POSTFIELDS, x->req);
		curl_easy_setopt(x->h, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(x->h, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(x->h, CURLOPT_WRITEDATA, x);
		curl_easy_setopt(x->h, CURLOPT_TIMEOUT, 120L);
		curl_easy_setopt(x->h, CURLOPT_FORBID_REUSE, 1L);
		curl_multi_add_handle(multi, x->h);
	}
	do {
		curl_multi_perform(multi, &running);
		if (running)
			curl_multi_poll(multi, NULL, 0, 200, NULL);
		while ((msg = curl_multi_info_read(multi, &q)))
			assert_int_equal(msg->data.result, CURLE_OK);
	} while (running);
	for (i = 0; i < n; i++) {
		curl_easy_getinfo(xs[i].h, CURLINFO_RESPONSE_CODE, &xs[i].code);
		assert_int_equal(xs[i].code, 200);
		curl_multi_remove_handle(multi, xs[i].h);
		curl_easy_cleanup(xs[i].h);
		parse_stream(&xs[i]);
		assert_true(xs[i].done_marker);
		assert_true(xs[i].usage_seen);
		if (chat)
			assert_true(xs[i].role_first);
	}
	curl_slist_free_all(hdr);
	curl_multi_cleanup(multi);
	return xs;
}

static void free_xfers(struct xfer *xs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(xs[i].body);
	free(xs);
}

static int group_setup(void **state)
{
	struct rlimit rl;

	(void)state;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	curl_global_cleanup();
	return 0;
}

/* Under stamp, 1024 concurrent streams each get their sequential output. */
static void test_concurrent_stamp(void **state)
{
	struct ttsim_audit *a;
	struct ttsim_server *s = start(TTSIM_RULE_STAMP, NULL, 0.02, &a);
	struct rlimit rl;
	char ref[4096];
	int n = 1024, i;
	struct xfer *xs;

	(void)state;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 2 * 1024 + 64)
		n = (int)(rl.rlim_cur - 64) / 2;
	xs = run_concurrent(ttsim_server_port(s), n, false);
	for (i = 0; i < n; i++) {
		reference_text(xs[i].prompt, xs[i].max_tokens, ref, sizeof(ref));
		assert_string_equal(xs[i].text, ref);
		assert_memory_equal(xs[i].id, "cmpl-", 5);
	}
	free_xfers(xs, n);
	ttsim_server_stop(s);
}

/* Under bare, an output departs from its reference iff the audit gives its
 * id substitutions (a stale token equal to the right one changes nothing). */
static void test_concurrent_bare_explained(void **state)
{
	char path[] = "/tmp/ttsim-srv-audit.XXXXXX";
	int fd = mkstemp(path), n = 256, i, differ = 0, subs_req = 0, same_with_subs = 0;
	struct ttsim_audit *a;
	struct ttsim_server *s;
	struct xfer *xs;
	char ref[4096], line[65536], key[128];
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	s = start(0, path, 0.0, &a);
	xs = run_concurrent(ttsim_server_port(s), n, true);
	ttsim_server_stop(s);
	ttsim_audit_free(a);
	for (i = 0; i < n; i++) {
		int subs = -1;

		f = fopen(path, "r");
		assert_non_null(f);
		/* the engine id: the response id and -<8 hex> (vLLM PR #27987) */
		snprintf(key, sizeof(key), "\"phase\":\"finish\",\"req\":\"%s-", xs[i].id);
		while (fgets(line, sizeof(line), f))
			if (strstr(line, key)) {
				char *p = strstr(line, "\"substitutions\":");

				assert_non_null(p);
				subs = atoi(p + 16);
			}
		fclose(f);
		assert_true(subs >= 0);
		/* the chat template is the prompt the model saw */
		{
			char tmpl[512];

			snprintf(tmpl, sizeof(tmpl), "<|im_start|> user\n%s <|im_end|>\n"
				 "<|im_start|> assistant\n", xs[i].prompt);
			reference_text(tmpl, xs[i].max_tokens, ref, sizeof(ref));
		}
		if (strcmp(xs[i].text, ref)) {
			differ++;
			assert_true(subs > 0);
		} else if (subs > 0) {
			same_with_subs++;
		}
		subs_req += subs > 0;
	}
	print_message("bare: %d of %d requests received substitutions, %d outputs differ\n",
		      subs_req, n, differ);
	assert_true(subs_req > 0);
	assert_true(same_with_subs <= 1);
	assert_int_equal(differ + same_with_subs, subs_req);
	free_xfers(xs, n);
	unlink(path);
}

static long post(int port, const char *path, const char *body, char *out, size_t n)
{
	CURL *h = curl_easy_init();
	struct xfer x;
	char url[128];
	long code = 0;

	memset(&x, 0, sizeof(x));
	x.body = malloc(BODY_MAX);
	x.body[0] = 0;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
	curl_easy_setopt(h, CURLOPT_URL, url);
	if (body)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	assert_int_equal(curl_easy_perform(h), CURLE_OK);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_cleanup(h);
	snprintf(out, n, "%s", x.body);
	free(x.body);
	return code;
}

static void test_bad_input_keeps_serving(void **state)
{
	struct ttsim_audit *a;
	struct ttsim_server *s = start(0, NULL, 0.0, &a);
	int port = ttsim_server_port(s);
	char out[8192];
	static const struct { const char *path, *body; long code; const char *msg; } cases[] = {
		{ "/v1/completions", "{\"prompt\":", 400, "JSON decode error" },
		{ "/v1/completions", "[1,2]", 400, "valid dictionary" },
		{ "/v1/completions", "{\"prompt\":\"a\"} trailing", 400, "JSON decode error at byte 16" },
		{ "/v1/completions", "{\"prompt\":\"a b\",\"max_tokens\":\"ten\"}", 400,
		  "valid integer" },
		{ "/v1/completions", "{\"prompt\":\"a b\",\"max_tokens\":1e12}", 400, "too large" },
		{ "/v1/completions", "{\"prompt\":\"a b\",\"max_tokens\":0}", 400, "at least 1" },
		{ "/v1/completions", "{\"prompt\":42}", 400, "valid string" },
		{ "/v1/completions", "{\"max_tokens\":3}", 400, "Field required" },
		{ "/v1/completions", "{\"prompt\":\"a\",\"model\":\"other\"}", 404, "does not exist" },
		{ "/v1/completions", "{\"prompt\":\"a\",\"stream\":\"yes\"}", 400, "valid boolean" },
		{ "/v1/completions", "{\"prompt\":\"a\",\"stream_options\":{\"include_usage\":true}}",
		  400, "stream=True" },
		{ "/v1/chat/completions", "{\"messages\":[]}", 400, "non-empty list" },
		{ "/v1/chat/completions", "{\"messages\":[{\"role\":\"user\",\"content\":5}]}", 400,
		  "content" },
		{ "/detokenize", "{\"tokens\":[1,-3]}", 400, "tokens[1]" },
		{ "/tokenize", "nope", 400, "JSON" },
	};
	size_t i;
	cJSON *j, *e;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(post(port, cases[i].path, cases[i].body, out, sizeof(out)),
				 cases[i].code);
		j = cJSON_Parse(out);
		assert_non_null(j);
		/* nested, as vLLM since PR #22099: {"error":{"message","type","param","code"}} */
		e = cJSON_GetObjectItem(j, "error");
		assert_non_null(e);
		assert_null(cJSON_GetObjectItem(j, "object"));
		assert_int_equal(cJSON_GetObjectItem(e, "code")->valueint, (int)cases[i].code);
		assert_non_null(strstr(cJSON_GetObjectItem(e, "message")->valuestring, cases[i].msg));
		assert_non_null(cJSON_GetObjectItem(e, "type"));
		assert_non_null(cJSON_GetObjectItem(e, "param"));
		cJSON_Delete(j);
	}
	assert_int_equal(post(port, "/nowhere", NULL, out, sizeof(out)), 404);
	assert_int_equal(post(port, "/v1/completions",
			      "{\"prompt\":\"the river\",\"max_tokens\":4}", out, sizeof(out)), 200);
	assert_non_null(strstr(out, "\"completion_tokens\":4"));
	ttsim_server_stop(s);
}

/*
 * The polling thread parked in a signal handler (it is found by name:
 * libmicrohttpd's own "MHD-single", or ttsim's "ttsim-http"), so that
 * requests on 128 idle keep-alive connections reach it together: its next
 * epoll_wait returns exactly 128 events. libmicrohttpd 0.9.75's internal
 * loop (daemon.c MHD_epoll) then calls epoll_wait again with the same
 * timeout, -1 on an idle server, before it processes any of them: nothing
 * else is coming, so it never returns and every stream hangs.
 */
#define BATCH 128

static sem_t gate_parked, gate_open;
static volatile pid_t gate_tid;

static void gate_handler(int sig)
{
	int e = errno;

	(void)sig;
	if ((pid_t)syscall(SYS_gettid) == gate_tid) {
		sem_post(&gate_parked);
		while (sem_wait(&gate_open) && errno == EINTR)
			;
	}
	errno = e;
}

static pid_t find_thread(const char *a, const char *b)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	char path[300], comm[64];
	pid_t tid = 0;
	FILE *f;

	assert_non_null(d);
	while (!tid && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f)) {
			comm[strcspn(comm, "\n")] = 0;
			if (!strcmp(comm, a) || !strcmp(comm, b))
				tid = (pid_t)atoi(de->d_name);
		}
		fclose(f);
	}
	closedir(d);
	return tid;
}

/* Reads until the headers' end (keep-alive) or EOF (close), by deadline. */
static size_t read_until(int fd, char *buf, size_t cap, bool to_eof, double deadline)
{
	size_t len = 0;
	struct pollfd p = { fd, POLLIN, 0 };
	struct timespec ts;
	ssize_t r;
	double now;

	buf[0] = 0;
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
		if (now >= deadline || len + 1 >= cap)
			return len;
		if (poll(&p, 1, (int)((deadline - now) * 1000) + 1) <= 0)
			continue;
		r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			return len;
		len += (size_t)r;
		buf[len] = 0;
		if (!to_eof && strstr(buf, "\r\n\r\n"))
			return len;
	}
}

static void test_batch_of_128_events(void **state)
{
	static const char body[] = "{\"prompt\":\"the river\",\"max_tokens\":2,\"stream\":true}";
	struct ttsim_audit *a;
	struct ttsim_server *s = start(TTSIM_RULE_STAMP, NULL, 0.0, &a);
	struct sockaddr_in sa;
	struct sigaction act, old;
	struct timespec ts;
	int fds[BATCH], i, answered = 0;
	char req[512], buf[8192];
	double deadline;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)ttsim_server_port(s));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	deadline = (double)ts.tv_sec + ts.tv_nsec / 1e9 + 20;
	/* each connection answered once, so it is accepted and idle */
	for (i = 0; i < BATCH; i++) {
		static const char health[] = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";

		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(connect(fds[i], (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(write(fds[i], health, sizeof(health) - 1), (ssize_t)sizeof(health) - 1);
		read_until(fds[i], buf, sizeof(buf), false, deadline);
		assert_non_null(strstr(buf, " 200 "));
	}
	usleep(100000);   /* let the polling thread go back to its wait */
	gate_tid = find_thread("MHD-single", "ttsim-http");
	assert_true(gate_tid > 0);
	assert_int_equal(sem_init(&gate_parked, 0, 0), 0);
	assert_int_equal(sem_init(&gate_open, 0, 0), 0);
	memset(&act, 0, sizeof(act));
	act.sa_handler = gate_handler;
	sigemptyset(&act.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &act, &old), 0);
	assert_int_equal(syscall(SYS_tgkill, getpid(), gate_tid, SIGUSR1), 0);
	while (sem_wait(&gate_parked) && errno == EINTR)
		;
	snprintf(req, sizeof(req), "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: "
		 "application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
		 sizeof(body) - 1, body);
	for (i = 0; i < BATCH; i++)
		assert_int_equal(write(fds[i], req, strlen(req)), (ssize_t)strlen(req));
	sem_post(&gate_open);
	for (i = 0; i < BATCH; i++) {
		read_until(fds[i], buf, sizeof(buf), true, deadline);
		answered += strstr(buf, "data: [DONE]") != NULL;
		close(fds[i]);
	}
	sigaction(SIGUSR1, &old, NULL);
	print_message("batch: %d of %d streams answered\n", answered, BATCH);
	assert_int_equal(answered, BATCH);
	sem_destroy(&gate_parked);
	sem_destroy(&gate_open);
	ttsim_server_stop(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_concurrent_stamp),
		cmocka_unit_test(test_concurrent_bare_explained),
		cmocka_unit_test(test_bad_input_keeps_serving),
		cmocka_unit_test(test_batch_of_128_events),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
