/*
 * server.c - ttsim's server: its start and stop, the listening socket and
 * the polling thread that drives libmicrohttpd (see server.h). The HTTP
 * surfaces are route.c's, with stream.c, answer.c, metrics.c, reply.c and
 * prompt.c; the request state and the generator are engine.c's.
 *
 * Threads: one polling thread (server_poll_main) drives libmicrohttpd over
 * epoll and serves every connection; the generator thread steps the model;
 * a housekeeping thread wakes waiting connections for their timers (stall
 * end, disconnect probe). A connection with nothing to send is suspended
 * (MHD_suspend_connection) and resumed by whoever gives it something: the
 * generator on a token or a finish, the housekeeping thread on a timer. So
 * no thread ever blocks on a connection's behalf and, with one polling
 * thread, the time between taking a send stamp and handing the bytes to the
 * socket is not stretched by a thousand runnable connection threads sharing
 * a core.
 *
 * The polling thread is ours, not libmicrohttpd's internal one: that loop
 * (0.9.75 daemon.c MHD_epoll, unchanged upstream since) drains epoll in
 * rounds of 128 events and, when a round is full, waits again with the
 * round's timeout before it handles any of them; on an idle server that is
 * -1, so 128 requests arriving together are never answered (a hang about
 * once in 30-60 runs of 256 concurrent streams). Ours waits in poll(2) on
 * the epoll descriptor and our own wake descriptor, then runs one
 * non-blocking round (MHD_run, whose epoll waits have timeout 0).
 *
 * Locking: one mutex (srv->mu) guards the model, every struct ttsim_engine_req
 * and the counters. The generator thread holds it while it steps the model, and
 * releases it while it sleeps the step's duration. The polling thread holds
 * it while it submits, takes tokens, or formats a chunk, never while it takes
 * a send stamp or writes the send log. Lock order: srv->mu, then MHD's own
 * locks (suspend and resume are called with srv->mu held).
 */
#include "tools/ttsim/server.h"
#include "base/mono.h"
#include "tools/ttsim/engine.h"
#include "tools/ttsim/log.h"
#include "tools/ttsim/route.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

void ttsim_server_config_default(struct ttsim_server_config *c)
{
	memset(c, 0, sizeof(*c));
	ttsim_model_config_default(&c->model);
	c->model_name = "ttsim/qwen36-sim";
	c->port = 8000;
	c->time_scale = 1.0;
	c->default_max_tokens = 16;
	c->max_connections = 4096;
	c->stall_s = 2.0;
}

const char *ttsim_server_version(const struct ttsim_server_config *c)
{
	if (c->profile == TTSIM_LLAMACPP)
		return TTSIM_ENGINE_LLAMA_BUILD;
	return c->vllm_minor == 10 ? "0.10.1+ttsim" : "0.16.0+ttsim";
}
/* Socket contexts: one per connection, for the llama-server profile. */
static void server_notify_conn(void *cls, struct MHD_Connection *conn, void **socket_context,
			       enum MHD_ConnectionNotificationCode toe)
{
	struct ttsim_server *srv = cls;
	struct ttsim_engine_sock *k = *socket_context, **pp;
	const union MHD_ConnectionInfo *ci;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		k = calloc(1, sizeof(*k));
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (k)
			k->fd = ci ? ci->connect_fd : -1;
		*socket_context = k;
		return;
	}
	if (!k)
		return;
	pthread_mutex_lock(&srv->mu);
	for (pp = &srv->dead; *pp; pp = &(*pp)->next_dead)
		if (*pp == k) {
			*pp = k->next_dead;
			break;
		}
	pthread_mutex_unlock(&srv->mu);
	free(k);
	*socket_context = NULL;
}

/*
 * The polling thread: waits for MHD's epoll descriptor or the wake
 * descriptor, at most as long as MHD_get_timeout says (0 while a connection
 * has work left over from the last round), then runs one round. Every MHD
 * callback runs here. Ends when woken with srv->stopping set.
 */
static void *server_poll_main(void *arg)
{
	struct ttsim_server *srv = arg;
	struct pollfd p[2] = { { srv->epoll_fd, POLLIN, 0 }, { srv->wake_fd, POLLIN, 0 } };
	MHD_UNSIGNED_LONG_LONG to;
	uint64_t v;
	sigset_t ss;
	bool stop, warned = false;
	int ms;

	/* as libmicrohttpd's own polling thread does */
	sigemptyset(&ss);
	sigaddset(&ss, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &ss, NULL);
	for (;;) {
		ms = MHD_get_timeout(srv->d, &to) == MHD_YES ? (to > INT_MAX ? INT_MAX : (int)to) : -1;
		if (poll(p, 2, ms) < 0) {
			if (errno != EINTR && !warned) {
				warned = true;
				ttsim_log(2, "ERROR", "ttsim", "poll: %s", strerror(errno));
			}
			if (errno != EINTR)
				mono_sleep(0.01);
			continue;
		}
		if (p[1].revents & POLLIN) {
			/* cleared before the round: a resume after this read wakes us again */
			(void)!read(srv->wake_fd, &v, sizeof(v));
			pthread_mutex_lock(&srv->mu);
			stop = srv->stopping;
			pthread_mutex_unlock(&srv->mu);
			if (stop)
				break;
		}
		MHD_run(srv->d);
	}
	return NULL;
}

/* Listens on the bound socket, hands it to MHD and starts the polling
 * thread. 0, or -1 (errno). */
static int server_listen_now(struct ttsim_server *srv)
{
	const union MHD_DaemonInfo *di;
	struct MHD_Daemon *d;
	int fd = srv->lfd, e = 0;

	if (listen(fd, 4096))
		return -1;
	/* epoll, driven by our polling thread (see the top of this file),
	 * connections suspended while they wait */
	d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL,
			     ttsim_route_handler, srv,
			     MHD_OPTION_LISTEN_SOCKET, fd,
			     MHD_OPTION_CONNECTION_LIMIT, srv->c.max_connections,
			     MHD_OPTION_CONNECTION_TIMEOUT, 0u,
			     MHD_OPTION_NOTIFY_COMPLETED, ttsim_route_completed, srv,
			     MHD_OPTION_NOTIFY_CONNECTION, server_notify_conn, srv,
			     MHD_OPTION_END);
	if (!d)
		return -1;
	di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD);
	pthread_mutex_lock(&srv->mu);
	srv->d = d;
	srv->lfd = -1;   /* MHD's now */
	srv->epoll_fd = di ? di->epoll_fd : -1;
	if (srv->epoll_fd < 0 || (e = pthread_create(&srv->poll_thread, NULL, server_poll_main, srv))) {
		srv->d = NULL;
		pthread_mutex_unlock(&srv->mu);
		MHD_stop_daemon(d);
		errno = srv->epoll_fd < 0 ? EINVAL : e;
		return -1;
	}
	(void)pthread_setname_np(srv->poll_thread, "ttsim-http");
	srv->poll_started = true;
	pthread_mutex_unlock(&srv->mu);
	return 0;
}

/* vLLM while it loads: bound, not listening, until --load-time has passed. */
static void *server_listen_later(void *arg)
{
	struct ttsim_server *srv = arg;

	for (;;) {
		pthread_mutex_lock(&srv->mu);
		if (srv->stopping) {
			pthread_mutex_unlock(&srv->mu);
			return NULL;
		}
		pthread_mutex_unlock(&srv->mu);
		if (mono_now() - srv->t_start >= srv->c.load_time_s)
			break;
		mono_sleep(0.02);
	}
	if (server_listen_now(srv))
		ttsim_log(2, "ERROR", "ttsim", "cannot listen on 127.0.0.1:%d: %s", srv->port, strerror(errno));
	return NULL;
}

enum status ttsim_server_start(const struct ttsim_server_config *c, struct ttsim_server **out,
			       struct status_info *si)
{
	struct ttsim_server *srv = NULL;
	struct ttsim_model_sink sink;
	struct sockaddr_in sa;
	enum status st;
	pthread_condattr_t ca;
	cJSON *jname;
	char *js;

	*out = NULL;
	if (c->time_scale < 0 || c->default_max_tokens < 1 || c->port < 0 || c->port > 65535)
		return status_set(si, STATUS_USAGE, "bad server configuration");
	srv = calloc(1, sizeof(*srv));
	if (!srv)
		return status_set(si, STATUS_NOMEM, "server: out of memory");
	srv->c = *c;
	srv->lfd = -1;
	srv->epoll_fd = -1;
	srv->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (srv->wake_fd < 0) {
		free(srv);
		return status_set(si, STATUS_IO, "server: eventfd: %s", strerror(errno));
	}
	srv->c.model.audit_wall_time = true;
	snprintf(srv->model_name, sizeof(srv->model_name), "%s", c->model_name);
	jname = cJSON_CreateString(srv->model_name);
	js = jname ? cJSON_PrintUnformatted(jname) : NULL;
	cJSON_Delete(jname);
	if (!js) {
		free(srv);
		return status_set(si, STATUS_NOMEM, "server: out of memory");
	}
	snprintf(srv->model_json, sizeof(srv->model_json), "%s", js);
	free(js);
	pthread_mutex_init(&srv->mu, NULL);
	pthread_cond_init(&srv->work_cv, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&srv->hk_cv, &ca);
	pthread_condattr_destroy(&ca);
	srv->rng = c->model.seed ^ 0x7365727665722121ull;
	srv->noise_rng = c->model.seed ^ 0x6e6f697365212121ull;
	srv->noise_factor = 1.0;
	srv->t_start = mono_now();
	st = ttsim_model_new(&srv->c.model, &srv->model, si);
	if (st)
		goto fail;
	sink.token = ttsim_engine_on_token;
	sink.finish = ttsim_engine_on_finish;
	sink.ctx = srv;
	ttsim_model_set_sink(srv->model, &sink);
	ttsim_model_set_audit(srv->model, c->audit);
	if (c->send_log) {
		srv->send_log = fopen(c->send_log, "we");
		if (!srv->send_log) {
			st = status_set_at(si, STATUS_IO, c->send_log, 0, 0, "cannot create: %s",
					   strerror(errno));
			goto fail;
		}
		/* full buffering: ttsim_stream_log_stamps flushes a request's lines at once */
		setvbuf(srv->send_log, NULL, _IOFBF, 1u << 16);
	}
	if (pthread_create(&srv->gen_thread, NULL, ttsim_engine_gen_main, srv)) {
		st = status_set(si, STATUS_NOMEM, "cannot start the generator thread");
		goto fail;
	}
	srv->gen_started = true;
	if (pthread_create(&srv->hk_thread, NULL, ttsim_engine_hk_main, srv)) {
		st = status_set(si, STATUS_NOMEM, "cannot start the housekeeping thread");
		goto fail;
	}
	srv->hk_started = true;
	/* Bound now, so the port is known; listening only once loaded: vLLM's
	 * API server binds its socket and then loads the engine, and a client
	 * meanwhile gets connection refused (about 510 s on Tenstorrent). */
	srv->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)c->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	{
		int one = 1;
		socklen_t sl = sizeof(sa);

		if (srv->lfd >= 0)
			(void)setsockopt(srv->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (srv->lfd < 0 || bind(srv->lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
		    getsockname(srv->lfd, (struct sockaddr *)&sa, &sl)) {
			st = status_set(si, STATUS_IO, "cannot bind 127.0.0.1:%d: %s", c->port, strerror(errno));
			goto fail;
		}
		srv->port = ntohs(sa.sin_port);
	}
	if (c->profile == TTSIM_VLLM && c->load_time_s > 0) {
		if (pthread_create(&srv->listen_thread, NULL, server_listen_later, srv)) {
			st = status_set(si, STATUS_NOMEM, "cannot start the listening thread");
			goto fail;
		}
		srv->listen_started = true;
	} else if (server_listen_now(srv)) {
		st = status_set(si, STATUS_IO, "cannot listen on 127.0.0.1:%d", srv->port);
		goto fail;
	}
	*out = srv;
	return STATUS_OK;
fail:
	ttsim_server_stop(srv);
	return st;
}

int ttsim_server_port(const struct ttsim_server *s)
{
	return s->port;
}

void ttsim_server_stop(struct ttsim_server *srv)
{
	struct ttsim_engine_req *rq, *next;

	if (!srv)
		return;
	pthread_mutex_lock(&srv->mu);
	srv->stopping = true;
	pthread_cond_broadcast(&srv->work_cv);
	pthread_cond_broadcast(&srv->hk_cv);
	pthread_mutex_unlock(&srv->mu);
	/* Nothing may resume a connection once MHD has begun to close them. */
	if (srv->gen_started)
		pthread_join(srv->gen_thread, NULL);
	if (srv->hk_started)
		pthread_join(srv->hk_thread, NULL);
	if (srv->listen_started)
		pthread_join(srv->listen_thread, NULL);
	if (srv->lfd >= 0)
		close(srv->lfd);
	if (srv->poll_started) {
		ttsim_engine_kick(srv);
		pthread_join(srv->poll_thread, NULL);
	}
	if (srv->d) {
		/* MHD must not be stopped with connections suspended: resume them;
		 * MHD_stop_daemon then closes every connection. */
		pthread_mutex_lock(&srv->mu);
		for (rq = srv->live; rq; rq = rq->next)
			ttsim_engine_wake(rq, false);
		pthread_mutex_unlock(&srv->mu);
		MHD_stop_daemon(srv->d);
	}
	/* Connections are gone; what the model still holds is aborted (which
	 * drops the model's references and frees those requests). */
	pthread_mutex_lock(&srv->mu);
	for (rq = srv->live; rq; rq = next) {
		next = rq->next;
		if (rq->submitted && !rq->finished && srv->model)
			ttsim_model_abort(srv->model, rq->handle);
	}
	pthread_mutex_unlock(&srv->mu);
	for (rq = srv->live; rq; rq = next) {
		next = rq->next;
		free(rq->stamps);
		free(rq->echo_toks);
		free(rq->echo_text);
		free(rq->toks);
		free(rq);
	}
	ttsim_model_free(srv->model);
	if (srv->send_log)
		fclose(srv->send_log);
	pthread_cond_destroy(&srv->hk_cv);
	pthread_cond_destroy(&srv->work_cv);
	pthread_mutex_destroy(&srv->mu);
	close(srv->wake_fd);
	free(srv);
}

