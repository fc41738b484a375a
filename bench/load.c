/*
 * load.c - the load loop of load.h: every request a libcurl transfer on one
 * epoll loop, arrivals closed, batch or Poisson, stalls and retries, and the
 * loop's own busy time; each event of a stream is read into its request's
 * result by result.c.
 */
#include "bench/load.h"
#include "base/mono.h"
#include "base/rng.h"
#include "probe/curlfn.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "probe/http.h"
#include "bench/chunk.h"
#include "bench/result.h"
#include "bench/rxstamp.h"
#include "bench/sse.h"


static const char *const load_fail_names[LOAD_FAIL__COUNT] = {
	[LOAD_OK] = "ok",
	[LOAD_FAIL_HTTP] = "http",
	[LOAD_FAIL_CONNECT] = "connect",
	[LOAD_FAIL_RESET] = "reset",
	[LOAD_FAIL_TRUNCATED] = "truncated",
	[LOAD_FAIL_STALL] = "stall",
	[LOAD_FAIL_TIMEOUT] = "timeout",
	[LOAD_FAIL_SERVER] = "server",
	[LOAD_FAIL_PROTOCOL] = "protocol",
};

const char *load_fail_name(enum load_fail f)
{
	if ((unsigned)f >= LOAD_FAIL__COUNT)
		return "unknown";
	return load_fail_names[f];
}

double load_now(void)
{
	return mono_now();
}

double load_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double load_result_origin(const struct load_result *r)
{
	return r->t_sent > 0 ? r->t_sent : r->t_launch;
}

const char *load_count_name(enum load_count c)
{
	return c == LOAD_COUNT_TOKEN_IDS ? "token_ids" : c == LOAD_COUNT_USAGE ? "usage" : "chunks";
}

/* --- the event loop ------------------------------------------------------- */

/* One transfer slot; slots are reused, each keeps its easy handle. */
struct load_xfer {
	struct load_loop *lp;
	CURL *easy;
	struct sse *sse;
	const struct load_request *rq;
	struct load_result *r;        /* NULL when the slot is free */
	long status;                  /* HTTP status, 0 until the first body byte */
	double now;                   /* receive time of the bytes being parsed */
	bool now_kernel;              /* ... stamped by the kernel (rxstamp.h), not the loop */
	double last_byte;
	char errbody[LOAD_MAX_ERROR_BODY + 1];
	size_t n_errbody;
	char errbuf[CURL_ERROR_SIZE];
	/* the request's headers: the loop's, then its X-Request-Id. libcurl
	 * only reads the list, so it lives here and costs no allocation */
	struct curl_slist hdr[5];
	char xrid[200];
	bool abort_now;               /* the client cancels: the write callback stops the transfer */
};

/* While the loop works through ready streams, how often it marks what has
 * arrived since (rxstamp_mark): two chunks of one stream that arrive within
 * this time of each other, unread, share the later one's stamp. */
#define LOAD_MARK_EVERY 50e-6

/* libcurl's receive buffer per transfer (it reads at most this much at once). */
#define LOAD_CURL_BUFFER 4096L

/* Events taken per epoll_wait. */
#define LOAD_MAX_EVENTS 512

/* Wake-up busy times: 1 us buckets up to 10 ms, longer ones in the last. */
#define LOAD_BUSY_BUCKETS 10001

struct load_loop {
	const struct load_opts *o;
	const struct curlfn *cf;      /* libcurl's functions */
	uint32_t *busy;               /* LOAD_BUSY_BUCKETS counts, wall time */
	uint32_t *busy_cpu;           /* the same, thread CPU time */
	uint64_t n_wakes;
	double busy_max, busy_cpu_max;
	CURLM *multi;
	int ep;
	int stamp_hold;               /* rxstamp_hold(), -1 when none */
	struct epoll_event *mark_evs; /* LOAD_MAX_EVENTS, for the mark passes */
	int mark_ep;                  /* edge-triggered: the streams that received bytes since
				       * the last pass; -1 when none */
	double marked_at;             /* the last mark pass */
	double timer_at;              /* libcurl's timeout; < 0: none */
	struct result_parser *cp;
	struct load_xfer *xf;
	size_t n_xf;
	size_t *free_xf;              /* stack of free slot indexes */
	size_t n_free;
	size_t n_inflight, n_done, n_failed;
	uint64_t n_chunks;
	uint64_t n_stamp_kernel, n_stamp_loop;   /* content chunks by source of their time */
	uint64_t n_retried;           /* requests sent again: a reused connection was dead */
	enum status fatal;            /* an error that stops the run (memory) */
};

static char load_hdr_ctype[] = "Content-Type: application/json";
static char load_hdr_accept[] = "Accept: text/event-stream";
static char load_hdr_expect[] = "Expect:";

static int load_on_event(void *ctx, const char *data, size_t len)
{
	struct load_xfer *x = ctx;
	struct load_result *r = x->r;
	size_t before;

	if (r->done || x->abort_now)
		return 0;   /* nothing is expected after [DONE], nor read after a cancel */
	if (len == 6 && !memcmp(data, "[DONE]", 6)) {
		r->done = true;
		return 0;
	}
	before = r->n_chunks;
	if (result_event(x->lp->cp, r, x->rq->api, x->lp->o->keep_text, x->sse, data, len, x->now))
		return 1;
	x->lp->n_chunks += r->n_chunks - before;
	/* a stream that already said how it finished is over: nothing to cancel */
	if (x->rq->abort_after && r->n_tokens >= x->rq->abort_after && !r->finish_reason[0])
		x->abort_now = true;
	if (x->now_kernel)
		x->lp->n_stamp_kernel += r->n_chunks - before;
	else
		x->lp->n_stamp_loop += r->n_chunks - before;
	return 0;
}

static size_t load_write_cb(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct load_xfer *x = ud;
	struct status_info si;
	size_t n = size * nmemb, k;
	double now = load_now(), kt;

	/* libcurl gives us the bytes of its latest read before reading again */
	x->now = now;
	x->now_kernel = false;
	if (!x->lp->o->loop_times && !rxstamp_last(&kt)) {
		/* the run's one clock relation is exact to tens of ns: a stamp
		 * that reads a hair after the loop's clock came now */
		x->now = kt <= now ? kt : now;
		x->now_kernel = true;
	}
	x->last_byte = x->now;
	if (!x->status)
		x->lp->cf->easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->status != 200) {
		k = LOAD_MAX_ERROR_BODY - x->n_errbody;
		if (k > n)
			k = n;
		memcpy(x->errbody + x->n_errbody, ptr, k);
		x->n_errbody += k;
		x->errbody[x->n_errbody] = '\0';
		return n;
	}
	if (sse_feed(x->sse, ptr, n, &si)) {
		if (!x->r->fail)
			result_fail(x->r, LOAD_FAIL_PROTOCOL, "%s", si.msg);
		return 0;   /* aborts the transfer */
	}
	if (x->abort_now) {
		/* the client's cancel: libcurl closes the connection, as a client
		 * that goes away does */
		x->r->aborted = true;
		return 0;
	}
	return n;
}

static int load_sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
	struct load_loop *lp = userp;
	struct epoll_event ev;

	(void)e;
	(void)socketp;
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(lp->ep, EPOLL_CTL_DEL, s, NULL);
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = ((what & CURL_POLL_IN) ? EPOLLIN : 0) | ((what & CURL_POLL_OUT) ? EPOLLOUT : 0);
	ev.data.fd = s;
	if (epoll_ctl(lp->ep, EPOLL_CTL_MOD, s, &ev) && errno == ENOENT &&
	    epoll_ctl(lp->ep, EPOLL_CTL_ADD, s, &ev))
		return -1;
	return 0;
}

/* libcurl opened a socket: have the kernel stamp what it receives. A socket
 * the kernel will not stamp is timed by the loop (counted in the run). */
static int load_sockopt_cb(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
	const struct load_loop *lp = clientp;
	struct epoll_event ev;

	if (purpose != CURLSOCKTYPE_IPCXN || lp->o->loop_times)
		return CURL_SOCKOPT_OK;
	if (rxstamp_track(fd))
		return CURL_SOCKOPT_OK;
	/* edge-triggered: reports the socket once per arrival, so a mark pass
	 * peeks only at streams that received something */
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | EPOLLET;
	ev.data.fd = fd;
	if (lp->mark_ep >= 0)
		(void)epoll_ctl(lp->mark_ep, EPOLL_CTL_ADD, fd, &ev);
	return CURL_SOCKOPT_OK;
}

static int load_prereq_cb(void *clientp, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
	struct load_xfer *x = clientp;

	(void)primary_ip;
	(void)local_ip;
	(void)primary_port;
	(void)local_port;
	if (x->r)
		x->r->t_sent = load_now();
	return CURL_PREREQFUNC_OK;
}

static int load_closesocket_cb(void *clientp, curl_socket_t fd)
{
	(void)clientp;
	rxstamp_untrack(fd);
	return close(fd);
}

static int load_timer_cb(CURLM *m, long timeout_ms, void *userp)
{
	struct load_loop *lp = userp;

	(void)m;
	lp->timer_at = timeout_ms < 0 ? -1.0 : load_now() + (double)timeout_ms / 1e3;
	return 0;
}

/* Makes the text of a non-200 body printable on one line. */
static void load_flatten(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			*s = ' ';
}

/* Decides the request's outcome from what the transfer did. */
static void load_conclude(struct load_xfer *x, CURLcode rc)
{
	struct load_result *r = x->r;
	long status = 0;

	x->lp->cf->easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
	r->http_status = status;
	/* a complete stream ends when its last byte came; any other when it was given up */
	r->t_end = rc == CURLE_OK && !r->fail && x->last_byte > 0 ? x->last_byte : load_now();
	if (r->fail || r->aborted)
		return;
	if (status && status != 200) {
		load_flatten(x->errbody);
		result_fail(r, LOAD_FAIL_HTTP, "http %ld: %.150s", status, x->errbody);
		return;
	}
	switch (rc) {
	case CURLE_OK:
		if (!r->done)
			result_fail(r, LOAD_FAIL_TRUNCATED, "stream ended before [DONE] after %zu content chunks%s",
				      r->n_chunks, sse_pending(x->sse) ? " and inside an event" : "");
		return;
	case CURLE_PARTIAL_FILE:
		/* the connection went away inside the HTTP body: a transport break,
		 * not a stream the server chose to end early */
		result_fail(r, LOAD_FAIL_RESET, "connection closed inside the response (%s) after %zu content chunks",
			      x->errbuf[0] ? x->errbuf : x->lp->cf->easy_strerror(rc), r->n_chunks);
		return;
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
		result_fail(r, LOAD_FAIL_CONNECT, "could not connect: %s",
			      x->errbuf[0] ? x->errbuf : x->lp->cf->easy_strerror(rc));
		return;
	case CURLE_OPERATION_TIMEDOUT:
		result_fail(r, LOAD_FAIL_TIMEOUT, "request took longer than %.1f s after %zu content chunks",
			      x->lp->o->timeout_s, r->n_chunks);
		return;
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	default:
		result_fail(r, LOAD_FAIL_RESET, "%s after %zu content chunks",
			      x->errbuf[0] ? x->errbuf : x->lp->cf->easy_strerror(rc), r->n_chunks);
		return;
	}
}

/*
 * A request that never reached a live connection: libcurl reused a
 * connection the server had already closed (llama-server closes after every
 * stream while its answers say keep-alive), the request went nowhere and
 * nothing came back. No server fault: it is sent again on a new
 * connection, at most LOAD_MAX_RETRIES times, and the record says so.
 */
#define LOAD_MAX_RETRIES 2

static bool load_retry(struct load_loop *lp, struct load_xfer *x, CURLcode rc)
{
	struct load_result *r = x->r;
	long n_connects = -1;

	if (rc != CURLE_SEND_ERROR && rc != CURLE_RECV_ERROR && rc != CURLE_GOT_NOTHING)
		return false;
	if (r->fail || x->status || x->last_byte > 0 || r->retries >= LOAD_MAX_RETRIES)
		return false;
	/* only a reused connection: a new one that dies is the server's */
	if (lp->cf->easy_getinfo(x->easy, CURLINFO_NUM_CONNECTS, &n_connects) != CURLE_OK || n_connects != 0)
		return false;
	lp->cf->multi_remove_handle(lp->multi, x->easy);
	r->retries++;
	lp->n_retried++;
	r->t_sent = 0;
	x->errbuf[0] = '\0';
	sse_reset(x->sse);
	lp->cf->easy_setopt(x->easy, CURLOPT_FRESH_CONNECT, 1L);
	if (lp->cf->multi_add_handle(lp->multi, x->easy) != CURLM_OK)
		return false;
	return true;
}

static void load_retire(struct load_loop *lp, struct load_xfer *x, CURLcode rc)
{
	if (load_retry(lp, x, rc))
		return;
	load_conclude(x, rc);
	lp->cf->multi_remove_handle(lp->multi, x->easy);
	if (x->r->fail)
		lp->n_failed++;
	lp->n_done++;
	lp->n_inflight--;
	x->r = NULL;
	x->rq = NULL;
	lp->free_xf[lp->n_free++] = (size_t)(x - lp->xf);
}

static enum status load_launch(struct load_loop *lp, const struct load_request *rq,
			       struct load_result *r, size_t seq, struct status_info *si)
{
	struct load_xfer *x;
	const struct load_opts *o = lp->o;

	x = &lp->xf[lp->free_xf[--lp->n_free]];
	x->rq = rq;
	x->r = r;
	x->status = 0;
	x->n_errbody = 0;
	x->errbody[0] = '\0';
	x->errbuf[0] = '\0';
	x->abort_now = false;
	sse_reset(x->sse);
	r->launch_seq = seq;
	r->inflight_at_launch = lp->n_inflight;
	r->t_launch = load_now();
	if (!r->t_sched)
		r->t_sched = r->t_launch;
	x->last_byte = 0;
	x->hdr[2].next = x->hdr[4].data ? &x->hdr[4] : NULL;
	x->hdr[4].next = NULL;
	if (o->request_id_prefix) {
		snprintf(x->xrid, sizeof(x->xrid), "X-Request-Id: %.120s-%zu", o->request_id_prefix, r->index);
		snprintf(r->xid, sizeof(r->xid), "%s", x->xrid + strlen("X-Request-Id: "));
		if (x->hdr[4].data)
			x->hdr[4].next = &x->hdr[3];
		else
			x->hdr[2].next = &x->hdr[3];
	}
	lp->cf->easy_setopt(x->easy, CURLOPT_FRESH_CONNECT, 0L);
	lp->cf->easy_setopt(x->easy, CURLOPT_URL, rq->url);
	lp->cf->easy_setopt(x->easy, CURLOPT_POSTFIELDS, rq->body);
	lp->cf->easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
	lp->cf->easy_setopt(x->easy, CURLOPT_TIMEOUT_MS,
			 o->timeout_s > 0 ? (long)(o->timeout_s * 1e3) : 0L);
	if (lp->cf->multi_add_handle(lp->multi, x->easy) != CURLM_OK) {
		x->r = NULL;
		lp->n_free++;
		return status_set(si, STATUS_NOMEM, "load: cannot add a transfer");
	}
	lp->n_inflight++;
	return STATUS_OK;
}

static void load_mark(struct load_loop *lp, bool force);

static void load_reap(struct load_loop *lp)
{
	CURLMsg *m;
	int left;
	struct load_xfer *x;

	while ((m = lp->cf->multi_info_read(lp->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		x = NULL;
		lp->cf->easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		if (x && x->r)
			load_retire(lp, x, m->data.result);
		/* a decode step can end hundreds of streams at once */
		load_mark(lp, false);
	}
}

/* Fails transfers silent for longer than stall_s. */
static void load_stalls(struct load_loop *lp, double now)
{
	size_t i;
	struct load_xfer *x;
	double since;

	for (i = 0; i < lp->n_xf; i++) {
		x = &lp->xf[i];
		if (!x->r)
			continue;
		since = x->last_byte > 0 ? x->last_byte : x->r->t_launch;
		if (now - since < lp->o->stall_s)
			continue;
		result_fail(x->r, LOAD_FAIL_STALL, "no data for %.1f s after %zu content chunks",
			      lp->o->stall_s, x->r->n_chunks);
		load_retire(lp, x, CURLE_OK);
	}
}

static void load_progress(struct load_loop *lp, size_t n_total, double t0)
{
	struct load_progress p;

	if (!lp->o->progress)
		return;
	p.n_total = n_total;
	p.n_done = lp->n_done;
	p.n_failed = lp->n_failed;
	p.n_inflight = lp->n_inflight;
	p.n_chunks = lp->n_chunks;
	p.elapsed = load_now() - t0;
	lp->o->progress(lp->o->progress_ctx, &p);
}

double load_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void load_bucket(uint32_t *h, double *max, double secs)
{
	long us = (long)(secs * 1e6);

	if (us < 0)
		us = 0;
	if (us >= LOAD_BUSY_BUCKETS)
		us = LOAD_BUSY_BUCKETS - 1;
	h[us]++;
	if (secs > *max)
		*max = secs;
}

static void load_busy_add(struct load_loop *lp, double wall, double cpu)
{
	load_bucket(lp->busy, &lp->busy_max, wall);
	load_bucket(lp->busy_cpu, &lp->busy_cpu_max, cpu);
	lp->n_wakes++;
}

/* Nearest-rank p50 and p99 of a histogram of n values, in seconds. */
static void load_hist_pct(const uint32_t *h, uint64_t n, double *p50, double *p99)
{
	uint64_t seen = 0, r50 = (n * 50 + 99) / 100, r99 = (n * 99 + 99) / 100;
	long i;
	bool have50 = false;

	*p50 = *p99 = 0;
	for (i = 0; n && i < LOAD_BUSY_BUCKETS; i++) {
		seen += h[i];
		if (!have50 && seen >= r50) {
			*p50 = (double)i * 1e-6;
			have50 = true;
		}
		if (seen >= r99) {
			*p99 = (double)i * 1e-6;
			break;
		}
	}
}

static void load_busy_figures(const struct load_loop *lp, struct load_run *run)
{
	run->n_wakes = lp->n_wakes;
	run->busy_max = lp->busy_max;
	run->busy_cpu_max = lp->busy_cpu_max;
	load_hist_pct(lp->busy, lp->n_wakes, &run->busy_p50, &run->busy_p99);
	load_hist_pct(lp->busy_cpu, lp->n_wakes, &run->busy_cpu_p50, &run->busy_cpu_p99);
}

static void load_loop_release(struct load_loop *lp)
{
	size_t i;

	for (i = 0; lp->xf && i < lp->n_xf; i++) {
		if (lp->xf[i].r && lp->multi)
			lp->cf->multi_remove_handle(lp->multi, lp->xf[i].easy);
		if (lp->xf[i].easy)
			lp->cf->easy_cleanup(lp->xf[i].easy);
		sse_free(lp->xf[i].sse);
	}
	free(lp->xf);
	free(lp->free_xf);
	free(lp->busy);
	free(lp->busy_cpu);
	if (lp->multi)
		lp->cf->multi_cleanup(lp->multi);
	if (lp->ep >= 0)
		close(lp->ep);
	rxstamp_drop(lp->stamp_hold);
	free(lp->mark_evs);
	if (lp->mark_ep >= 0)
		close(lp->mark_ep);
	result_parser_free(lp->cp);
}

static enum status load_loop_init(struct load_loop *lp, const struct load_opts *o,
				  const struct curlfn *cf, size_t n_xf, struct status_info *si)
{
	size_t i;
	struct load_xfer *x;
	CURLcode rc;

	memset(lp, 0, sizeof(*lp));
	lp->o = o;
	lp->cf = cf;
	lp->ep = -1;
	lp->stamp_hold = -1;
	lp->mark_ep = -1;
	lp->timer_at = -1.0;
	if (!o->loop_times) {
		rxstamp_clock_sync();
		lp->stamp_hold = rxstamp_hold();
		lp->mark_evs = calloc(LOAD_MAX_EVENTS, sizeof(*lp->mark_evs));
		lp->mark_ep = epoll_create1(EPOLL_CLOEXEC);
		if (lp->mark_ep < 0)
			return status_set(si, STATUS_IO, "load: epoll: %s", strerror(errno));
		if (!lp->mark_evs)
			return status_set(si, STATUS_NOMEM, "load: out of memory");
	}
	lp->ep = epoll_create1(EPOLL_CLOEXEC);
	if (lp->ep < 0)
		return status_set(si, STATUS_IO, "load: epoll: %s", strerror(errno));
	lp->multi = lp->cf->multi_init();
	lp->cp = result_parser_new();
	if (lp->cp && o->keep_ids)
		result_parser_keep_ids(lp->cp, true);
	lp->busy = calloc(LOAD_BUSY_BUCKETS, sizeof(*lp->busy));
	lp->busy_cpu = calloc(LOAD_BUSY_BUCKETS, sizeof(*lp->busy_cpu));
	lp->xf = calloc(n_xf, sizeof(*lp->xf));
	lp->free_xf = calloc(n_xf, sizeof(*lp->free_xf));
	if (!lp->multi || !lp->cp || !lp->xf || !lp->free_xf || !lp->busy || !lp->busy_cpu)
		return status_set(si, STATUS_NOMEM, "load: out of memory");
	lp->n_xf = n_xf;
	lp->cf->multi_setopt(lp->multi, CURLMOPT_SOCKETFUNCTION, load_sock_cb);
	lp->cf->multi_setopt(lp->multi, CURLMOPT_SOCKETDATA, lp);
	lp->cf->multi_setopt(lp->multi, CURLMOPT_TIMERFUNCTION, load_timer_cb);
	lp->cf->multi_setopt(lp->multi, CURLMOPT_TIMERDATA, lp);
	lp->cf->multi_setopt(lp->multi, CURLMOPT_MAXCONNECTS, (long)n_xf);
	lp->cf->multi_setopt(lp->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
	for (i = 0; i < n_xf; i++) {
		x = &lp->xf[i];
		x->lp = lp;
		x->easy = lp->cf->easy_init();
		x->sse = sse_new(0, load_on_event, x);
		if (!x->easy || !x->sse)
			return status_set(si, STATUS_NOMEM, "load: out of memory");
		lp->cf->easy_setopt(x->easy, CURLOPT_PRIVATE, (char *)x);
		lp->cf->easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, load_write_cb);
		lp->cf->easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
		lp->cf->easy_setopt(x->easy, CURLOPT_ERRORBUFFER, x->errbuf);
		/* Expect: empty stops a 100-continue round trip on bodies over 1 KiB */
		x->hdr[0].data = load_hdr_ctype;
		x->hdr[0].next = &x->hdr[1];
		x->hdr[1].data = load_hdr_accept;
		x->hdr[1].next = &x->hdr[2];
		x->hdr[2].data = load_hdr_expect;
		x->hdr[3].data = x->xrid;
		/* the API key from the environment (http.h), never recorded */
		x->hdr[4].data = (char *)http_auth_header();
		/* the whole-exchange timeout is the request's (load_launch) */
		if ((rc = curlfn_easy_setup(lp->cf, x->easy, 0L, 10000L)) != CURLE_OK)
			return status_set(si, STATUS_HTTP, "load: libcurl: %s", lp->cf->easy_strerror(rc));
		lp->cf->easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdr);
		lp->cf->easy_setopt(x->easy, CURLOPT_TCP_NODELAY, 1L);
		lp->cf->easy_setopt(x->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
		/* a stream chunk is a few hundred bytes: 4 KiB per stream instead of
		 * libcurl's 16 keeps a thousand streams' buffers in cache */
		lp->cf->easy_setopt(x->easy, CURLOPT_BUFFERSIZE, LOAD_CURL_BUFFER);
		lp->cf->easy_setopt(x->easy, CURLOPT_SOCKOPTFUNCTION, load_sockopt_cb);
		lp->cf->easy_setopt(x->easy, CURLOPT_SOCKOPTDATA, lp);
		lp->cf->easy_setopt(x->easy, CURLOPT_CLOSESOCKETFUNCTION, load_closesocket_cb);
		lp->cf->easy_setopt(x->easy, CURLOPT_PREREQFUNCTION, load_prereq_cb);
		lp->cf->easy_setopt(x->easy, CURLOPT_PREREQDATA, x);
		lp->free_xf[lp->n_free++] = n_xf - 1 - i;
	}
	return STATUS_OK;
}

/*
 * A mark pass: every stream that received bytes since the last pass gets
 * them marked (rxstamp_mark). Runs as the loop wakes and, while it works
 * through a long list of ready streams, reaping or launching, every
 * LOAD_MARK_EVERY (force: at once).
 */
static void load_mark(struct load_loop *lp, bool force)
{
	double now;
	int ne, k;

	if (lp->mark_ep < 0)
		return;
	now = load_now();
	if (!force && now - lp->marked_at < LOAD_MARK_EVERY)
		return;
	lp->marked_at = now;
	do {
		ne = epoll_wait(lp->mark_ep, lp->mark_evs, LOAD_MAX_EVENTS, 0);
		for (k = 0; k < ne; k++)
			(void)rxstamp_mark(lp->mark_evs[k].data.fd);
	} while (ne == LOAD_MAX_EVENTS);
}

enum status load_run_exec(const struct load_opts *o, const struct load_request *reqs,
			  size_t n, struct load_run **out, struct status_info *si)
{
	struct load_loop lp;
	struct load_run *run = NULL;
	const struct curlfn *cf;
	struct epoll_event evs[LOAD_MAX_EVENTS];
	enum status st = STATUS_OK;
	size_t n_xf, next = 0, i;
	double t0, now, wait, next_prog, next_stall = 0, prog_s, *sched = NULL, woke = 0, woke_cpu = 0, cpu0;
	int ne, running, k, flags, wait_ms;
	uint64_t rng;

	*out = NULL;
	memset(&lp, 0, sizeof(lp));
	lp.ep = -1;
	lp.stamp_hold = -1;
	lp.mark_ep = -1;
	if (!n || n > LOAD_MAX_REQUESTS)
		return status_set(si, STATUS_USAGE, "load: %zu requests (want 1 to %u)", n, LOAD_MAX_REQUESTS);
	if (o->arrival == LOAD_CLOSED && !o->concurrency)
		return status_set(si, STATUS_USAGE, "load: concurrency must be at least 1");
	if (o->arrival == LOAD_POISSON && !(o->rate > 0))
		return status_set(si, STATUS_USAGE, "load: poisson rate must be above 0");
	n_xf = o->arrival == LOAD_CLOSED ? o->concurrency : n;
	if (n_xf > n)
		n_xf = n;
	if (n_xf > LOAD_MAX_INFLIGHT) {
		if (o->arrival != LOAD_POISSON)
			return status_set(si, STATUS_LIMIT, "load: %zu requests in flight (cap %u)",
					  n_xf, LOAD_MAX_INFLIGHT);
		n_xf = LOAD_MAX_INFLIGHT;
	}
	st = curlfn_load(&cf, si);
	if (st)
		return st;
	if (cf->global_init(CURL_GLOBAL_DEFAULT))
		return status_set(si, STATUS_NOMEM, "load: libcurl init failed");
	run = calloc(1, sizeof(*run));
	if (run)
		run->res = calloc(n, sizeof(*run->res));
	if (!run || !run->res) {
		st = status_set(si, STATUS_NOMEM, "load: out of memory");
		goto out;
	}
	run->n = n;
	run->arrival = o->arrival;
	for (i = 0; i < n; i++) {
		run->res[i].index = i;
		run->res[i].prompt_index = reqs[i].prompt_index;
		run->res[i].usage_prompt = -1;
		run->res[i].usage_completion = -1;
		run->res[i].usage_seen = -1;
	}
	st = load_loop_init(&lp, o, cf, n_xf, si);
	if (st)
		goto out;
	prog_s = o->progress_s > 0 ? o->progress_s : 0.1;
	cpu0 = load_cpu();
	t0 = load_now();
	run->t_start = t0;
	run->wall_start = load_wall();
	if (o->arrival == LOAD_POISSON) {
		sched = calloc(n, sizeof(*sched));
		if (!sched) {
			st = status_set(si, STATUS_NOMEM, "load: out of memory");
			goto out;
		}
		rng = o->seed;
		now = t0;
		for (i = 0; i < n; i++) {
			/* u in (0, 1]: -ln(u) is finite */
			double u = rng_unit(&rng);

			if (i)
				now += -log(u) / o->rate;
			sched[i] = now;
			run->res[i].t_sched = now;
		}
	}
	next_prog = t0 + prog_s;
	while (lp.n_done < n) {
		now = load_now();
		/* launch everything that is due, first: the arrival model says
		 * when requests start, not how busy the loop is. libcurl connects
		 * and writes a request at its next call (about 0.1 ms for a new
		 * connection), so each is driven at once, with a mark pass after
		 * it; reading waits, and the marks keep its times */
		for (; next < n && lp.n_free; next++) {
			if (o->arrival == LOAD_CLOSED && lp.n_inflight >= o->concurrency)
				break;
			if (o->arrival == LOAD_POISSON && sched[next] > now)
				break;
			st = load_launch(&lp, &reqs[next], &run->res[next], next, si);
			if (st)
				goto out;
			lp.cf->multi_socket_action(lp.multi, CURL_SOCKET_TIMEOUT, 0, &running);
			load_mark(&lp, false);
		}
		if (lp.n_inflight > run->max_inflight)
			run->max_inflight = lp.n_inflight;
		/* how long may we sleep */
		wait = 1.0;
		if (lp.timer_at >= 0)
			wait = lp.timer_at - now;
		if (o->arrival == LOAD_POISSON && next < n && lp.n_free && sched[next] - now < wait)
			wait = sched[next] - now;
		if (o->stall_s > 0 && wait > 0.05)
			wait = 0.05;
		if (o->progress && next_prog - now < wait)
			wait = next_prog - now;

		wait_ms = wait <= 0 ? 0 : (int)ceil(wait * 1e3);
		if (woke > 0)
			load_busy_add(&lp, load_now() - woke, load_cpu() - woke_cpu);
		ne = epoll_wait(lp.ep, evs, LOAD_MAX_EVENTS, wait_ms);
		/* every wake-up counts, timer ones too: libcurl starts connections
		 * and gives up on transfers from its timer */
		woke = 0;
		if (ne >= 0) {
			woke = load_now();
			woke_cpu = load_cpu();
		}
		if (ne < 0 && errno != EINTR) {
			st = status_set(si, STATUS_IO, "load: epoll_wait: %s", strerror(errno));
			goto out;
		}
		/* the loop reaches the last of these milliseconds from now: note
		 * what is queued on each, with its stamp, before more arrives */
		if (ne > 0)
			load_mark(&lp, true);
		for (k = 0; k < ne; k++) {
			if (k)
				load_mark(&lp, false);
			flags = 0;
			if (evs[k].events & EPOLLIN)
				flags |= CURL_CSELECT_IN;
			if (evs[k].events & EPOLLOUT)
				flags |= CURL_CSELECT_OUT;
			if (evs[k].events & (EPOLLERR | EPOLLHUP))
				flags |= CURL_CSELECT_ERR;
			lp.cf->multi_socket_action(lp.multi, evs[k].data.fd, flags, &running);
		}
		now = load_now();
		if (lp.timer_at >= 0 && now >= lp.timer_at) {
			lp.timer_at = -1.0;
			lp.cf->multi_socket_action(lp.multi, CURL_SOCKET_TIMEOUT, 0, &running);
		}
		load_reap(&lp);
		if (o->stall_s > 0 && now >= next_stall) {
			load_stalls(&lp, now);
			next_stall = now + 0.05;
		}
		if (o->progress && now >= next_prog) {
			load_progress(&lp, n, t0);
			next_prog = now + prog_s;
		}
	}
	run->t_end = run->t_start;
	for (i = 0; i < n; i++)
		if (run->res[i].t_end > run->t_end)
			run->t_end = run->res[i].t_end;
	run->wall_end = run->wall_start + (run->t_end - run->t_start);
	load_busy_figures(&lp, run);
	run->cpu_s = load_cpu() - cpu0;
	run->n_stamp_kernel = lp.n_stamp_kernel;
	run->n_stamp_loop = lp.n_stamp_loop;
	run->n_retried = lp.n_retried;
	load_progress(&lp, n, t0);
out:
	free(sched);
	load_loop_release(&lp);
	cf->global_cleanup();
	if (st) {
		load_run_free(run);
		return st;
	}
	*out = run;
	return STATUS_OK;
}

void load_run_free(struct load_run *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; r->res && i < r->n; i++) {
		free(r->res[i].tok_t);
		free(r->res[i].tok_n);
		free(r->res[i].text);
		free(r->res[i].tok_off);
		free(r->res[i].ids);
		free(r->res[i].ids_off);
	}
	free(r->res);
	free(r);
}
