/*
 * metrics.c - ttsim's /metrics bodies, vLLM's and llama-server's, from the
 * model's counters and the server's histograms (see metrics.h).
 */
#include "tools/ttsim/metrics.h"
#include "tools/ttsim/engine.h"
#include "tools/ttsim/reply.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* vLLM's default histogram buckets (seconds). */
static const double metrics_ttft_buckets[] = { 0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
	0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0 };
static const double metrics_itl_buckets[] = { 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4,
	0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0 };
#define METRICS_NB_TTFT (sizeof(metrics_ttft_buckets) / sizeof(metrics_ttft_buckets[0]))
#define METRICS_NB_ITL (sizeof(metrics_itl_buckets) / sizeof(metrics_itl_buckets[0]))

static void metrics_hist_add(struct ttsim_metrics_hist *h, const double *b, size_t nb, double v)
{
	size_t i;

	h->count++;
	h->sum += v;
	for (i = 0; i < nb; i++)
		if (v <= b[i])
			h->bucket[i]++;
}

void ttsim_metrics_add_ttft(struct ttsim_metrics_hist *h, double v)
{
	metrics_hist_add(h, metrics_ttft_buckets, METRICS_NB_TTFT, v);
}

void ttsim_metrics_add_itl(struct ttsim_metrics_hist *h, double v)
{
	metrics_hist_add(h, metrics_itl_buckets, METRICS_NB_ITL, v);
}

/* A growing text buffer for /metrics, capped. */
struct metrics_buf {
	char *s;
	size_t len, cap;
	bool full;
};

static void metrics_put(struct metrics_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void metrics_put(struct metrics_buf *b, const char *fmt, ...)
{
	va_list ap;
	int w;

	if (b->full)
		return;
	va_start(ap, fmt);
	w = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= b->cap - b->len)
		b->full = true;
	else
		b->len += (size_t)w;
}

static void metrics_hist_put(struct metrics_buf *b, const char *name, const char *help, const char *lbl,
			     const struct ttsim_metrics_hist *h, const double *bk, size_t nb)
{
	size_t i;

	metrics_put(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	metrics_put(b, "%s_sum{%s} %.6f\n", name, lbl, h->sum);
	for (i = 0; i < nb; i++)
		metrics_put(b, "%s_bucket{%s,le=\"%g\"} %llu.0\n", name, lbl, bk[i], h->bucket[i]);
	metrics_put(b, "%s_bucket{%s,le=\"+Inf\"} %llu.0\n", name, lbl, h->count);
	metrics_put(b, "%s_count{%s} %llu.0\n", name, lbl, h->count);
}

enum MHD_Result ttsim_metrics_vllm(struct ttsim_server *srv, struct MHD_Connection *conn)
{
	struct metrics_buf b = { NULL, 0, 256 * 1024, false };
	struct ttsim_model_stats st;
	const struct ttsim_model_config *mc = &srv->c.model;
	char lbl[2 * TTSIM_ENGINE_NAME_MAX + 64];
	enum MHD_Result ret;
	int running, waiting;

	b.s = malloc(b.cap);
	if (!b.s)
		return MHD_NO;
	snprintf(lbl, sizeof(lbl), "engine=\"0\",model_name=%s", srv->model_json);
	pthread_mutex_lock(&srv->mu);
	ttsim_model_stats(srv->model, &st);
	running = ttsim_model_running(srv->model);
	waiting = ttsim_model_waiting(srv->model);
	metrics_put(&b, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
		   "# TYPE vllm:cache_config_info gauge\n"
		   "vllm:cache_config_info{block_size=\"%d\",cache_dtype=\"auto\",engine=\"0\","
		   "enable_prefix_caching=\"%s\",gpu_memory_utilization=\"0.9\","
		   "num_gpu_blocks=\"%lld\",prefix_caching_hash_algo=\"builtin\"} 1.0\n",
	       mc->block_size, mc->cache_blocks > 0 ? "True" : "False",
	       (long long)mc->slots * mc->max_model_len / mc->block_size);
	metrics_put(&b, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
		   "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{%s} %d.0\n",
	       lbl, running);
	metrics_put(&b, "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n"
		   "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{%s} %d.0\n",
	       lbl, waiting);
	metrics_put(&b, "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
		   "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{%s} %llu.0\n",
	       lbl, st.prompt_tokens);
	metrics_put(&b, "# HELP vllm:generation_tokens_total Number of generation tokens processed.\n"
		   "# TYPE vllm:generation_tokens_total counter\n"
		   "vllm:generation_tokens_total{%s} %llu.0\n", lbl, st.generation_tokens);
	metrics_put(&b, "# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number "
		   "of queried tokens.\n# TYPE vllm:prefix_cache_queries_total counter\n"
		   "vllm:prefix_cache_queries_total{%s} %llu.0\n", lbl, st.prompt_tokens);
	metrics_put(&b, "# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of "
		   "cached tokens.\n# TYPE vllm:prefix_cache_hits_total counter\n"
		   "vllm:prefix_cache_hits_total{%s} %llu.0\n", lbl, st.cached_tokens);
	metrics_put(&b, "# HELP vllm:request_success_total Count of successfully processed requests.\n"
		   "# TYPE vllm:request_success_total counter\n"
		   "vllm:request_success_total{%s,finished_reason=\"length\"} %llu.0\n"
		   "vllm:request_success_total{%s,finished_reason=\"abort\"} %llu.0\n",
	       lbl, srv->req_ok, lbl, srv->req_aborted);
	metrics_hist_put(&b, "vllm:time_to_first_token_seconds", "Histogram of time to first token in "
		"seconds.", lbl, &srv->ttft, metrics_ttft_buckets, METRICS_NB_TTFT);
	if (srv->c.vllm_minor != 10)
		metrics_hist_put(&b, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in "
			"seconds.", lbl, &srv->itl, metrics_itl_buckets, METRICS_NB_ITL);
	if (srv->c.vllm_minor == 10) {
		/* 0.10.1: this name, and the gpu_ prefix-cache counters beside */
		metrics_hist_put(&b, "vllm:time_per_output_token_seconds", "Histogram of time per output token in "
			"seconds.", lbl, &srv->itl, metrics_itl_buckets, METRICS_NB_ITL);
		metrics_put(&b, "# HELP vllm:gpu_prefix_cache_queries_total GPU prefix cache queries.\n"
			   "# TYPE vllm:gpu_prefix_cache_queries_total counter\n"
			   "vllm:gpu_prefix_cache_queries_total{%s} %llu.0\n", lbl, st.prompt_tokens);
		metrics_put(&b, "# HELP vllm:gpu_prefix_cache_hits_total GPU prefix cache hits.\n"
			   "# TYPE vllm:gpu_prefix_cache_hits_total counter\n"
			   "vllm:gpu_prefix_cache_hits_total{%s} %llu.0\n", lbl, st.cached_tokens);
	} else {
		metrics_hist_put(&b, "vllm:request_time_per_output_token_seconds",
				 "Histogram of time_per_output_token_seconds "
			"per request.", lbl, &srv->itl, metrics_itl_buckets, METRICS_NB_ITL);
	}
	metrics_hist_put(&b, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in "
		"seconds.", lbl, &srv->e2e, metrics_ttft_buckets, METRICS_NB_TTFT);
	pthread_mutex_unlock(&srv->mu);
	ret = ttsim_reply_send(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", b.s, b.len);
	free(b.s);
	return ret;
}

/* llama-server's /metrics (with --metrics): llamacpp:* names, no *_info
 * gauge, no prefix-cache counter, and rates that read `inf` before any
 * time was measured. */
enum MHD_Result ttsim_metrics_llama(struct ttsim_server *srv, struct MHD_Connection *conn)
{
	struct metrics_buf b = { NULL, 0, 16 * 1024, false };
	struct ttsim_model_stats st;
	enum MHD_Result ret;
	int running, waiting;

	b.s = malloc(b.cap);
	if (!b.s)
		return MHD_NO;
	pthread_mutex_lock(&srv->mu);
	ttsim_model_stats(srv->model, &st);
	running = ttsim_model_running(srv->model);
	waiting = ttsim_model_waiting(srv->model);
	pthread_mutex_unlock(&srv->mu);
	metrics_put(&b, "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
		   "# TYPE llamacpp:prompt_tokens_total counter\nllamacpp:prompt_tokens_total %llu\n",
	       st.prompt_tokens);
	metrics_put(&b, "# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.\n"
		   "# TYPE llamacpp:tokens_predicted_total counter\nllamacpp:tokens_predicted_total %llu\n",
	       st.generation_tokens);
	metrics_put(&b, "# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.\n"
		   "# TYPE llamacpp:prompt_tokens_seconds gauge\nllamacpp:prompt_tokens_seconds inf\n");
	metrics_put(&b, "# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s.\n"
		   "# TYPE llamacpp:predicted_tokens_seconds gauge\nllamacpp:predicted_tokens_seconds inf\n");
	metrics_put(&b, "# HELP llamacpp:requests_processing Number of requests processing.\n"
		   "# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing %d\n", running);
	metrics_put(&b, "# HELP llamacpp:requests_deferred Number of requests deferred.\n"
		   "# TYPE llamacpp:requests_deferred gauge\nllamacpp:requests_deferred %d\n", waiting);
	ret = ttsim_reply_send(conn, MHD_HTTP_OK, "text/plain; version=0.0.4", b.s, b.len);
	free(b.s);
	return ret;
}
