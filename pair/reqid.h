/*
 * reqid.h - the index of request ids a pair joins audits by: each request
 * of the bench records under its response id and the X-Request-Id it was
 * sent with (interfaces D), found again from the id an audit carries.
 *
 * vLLM makes its engine id `<external id>-<8 lower-case hex>` and a model
 * sees only that: reqid_find strips one such suffix when the id itself is
 * no request's. The index holds request numbers, not the ids: the caller's
 * match function compares an id with request i, and the requests it reads
 * must stay where they are while the index is used.
 */
#ifndef TTAUDIT_REQID_H
#define TTAUDIT_REQID_H

#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

/* Whether request i carries id (either of its ids). */
typedef bool (*reqid_match_fn)(const void *ctx, size_t i, const char *id);

struct reqid;

/* An empty index sized for n_requests. Free with reqid_free(). */
enum status reqid_new(struct reqid **out, size_t n_requests, reqid_match_fn match, const void *ctx,
		      struct status_info *si);
void reqid_free(struct reqid *x);
/* Files request i under key; "" and a key already filed (the first keeps it) are ignored. */
void reqid_put(struct reqid *x, const char *key, size_t i);
/* The request id names, exactly or without its engine suffix; SIZE_MAX none. */
size_t reqid_find(const struct reqid *x, const char *id);

#endif
