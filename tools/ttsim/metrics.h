/*
 * metrics.h - ttsim's /metrics: vLLM's Prometheus text (current names, or
 * 0.10's) and llama-server's (--metrics), and the latency histograms behind
 * them, in vLLM's default buckets.
 */
#ifndef TTSIM_METRICS_H
#define TTSIM_METRICS_H

#include <microhttpd.h>

struct ttsim_metrics_hist {
	unsigned long long count, bucket[32];
	double sum;
};

/* One observation (seconds) in time-to-first-token (also e2e) or
 * inter-token buckets. srv->mu held. */
void ttsim_metrics_add_ttft(struct ttsim_metrics_hist *h, double v);
void ttsim_metrics_add_itl(struct ttsim_metrics_hist *h, double v);

struct ttsim_server;
/* Answer GET /metrics on conn: vLLM's, llama-server's. Take srv->mu. */
enum MHD_Result ttsim_metrics_vllm(struct ttsim_server *srv, struct MHD_Connection *conn);
enum MHD_Result ttsim_metrics_llama(struct ttsim_server *srv, struct MHD_Connection *conn);

#endif
