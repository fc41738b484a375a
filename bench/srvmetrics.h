/*
 * srvmetrics.h - a server's /metrics as bench uses it: fetched through
 * probe/http.h, the configuration hash that goes into the run identity
 * (record.h) and the prefix-cache hits read before and after a cold run.
 */
#ifndef TTAUDIT_SRVMETRICS_H
#define TTAUDIT_SRVMETRICS_H

#include <stdbool.h>
#include <stddef.h>

#include "probe/http.h"
#include "base/status.h"

/* Hash of every *_info sample (name and sorted labels) of a /metrics body
 * into out ("fnv1a64:..."), "" when there is none. */
enum status srvmetrics_config_hash(const char *metrics, size_t n, char *out, size_t n_out,
				   struct status_info *si);
/* Sum of the prefix-cache hit counter in a /metrics body; STATUS_NOTFOUND when absent. */
enum status srvmetrics_prefix_hits(const char *metrics, size_t n, double *hits, struct status_info *si);
/* GETs base/metrics into res (the caller releases it); STATUS_HTTP unless 200. */
enum status srvmetrics_get(const char *base, struct http_response *res, struct status_info *si);
/* The prefix-cache hits of the server at base; false when they cannot be read. */
bool srvmetrics_read_hits(const char *base, double *hits);

#endif
