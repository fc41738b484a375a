/*
 * sse.h - incremental parser for server-sent events (text/event-stream).
 *
 * Bytes are fed as they arrive, in pieces of any size; every complete event
 * that carries data is handed to a callback at once, so a caller can time
 * each token at the moment its bytes were read. Memory is bounded: a line or
 * an event's data longer than the cap fails with STATUS_LIMIT, never grows.
 *
 * Follows the event-stream grammar: lines end in CR LF, LF or CR (a CR LF
 * split across two feeds is one line end); "data:" lines (one optional space
 * after the colon is dropped) accumulate, joined by LF; a blank line ends the
 * event; comment lines (":") and the fields id and retry are ignored. The
 * `event:` field (the event's type) is kept for the callback, and so is an
 * `error:` field, which is no field of the grammar but is how llama-server
 * ends a failed stream (`error: {...}` then `data: [DONE]`). An event with
 * neither data lines nor an error field is not dispatched; one with only an
 * error field is dispatched with empty data.
 *
 *	struct sse *p = sse_new(0, on_event, ctx);
 *	while (bytes) if (sse_feed(p, buf, n, &si)) ...stop...
 *	sse_free(p);
 */
#ifndef TTAUDIT_SSE_H
#define TTAUDIT_SSE_H

#include <stddef.h>

#include "base/status.h"

/* Default cap on one line and on one event's data. */
#define SSE_MAX_EVENT (256u * 1024)

/*
 * Called once per event with its data, NUL-terminated (len excludes the NUL).
 * The pointer is valid during the call only. A nonzero return stops the
 * parse: sse_feed returns STATUS_USAGE with "stopped by the caller".
 */
typedef int (*sse_event_fn)(void *ctx, const char *data, size_t len);

struct sse;

/* max_event 0 means SSE_MAX_EVENT. NULL on allocation failure. */
struct sse *sse_new(size_t max_event, sse_event_fn fn, void *ctx);
void sse_free(struct sse *p);

/* Forgets any partial line or event, so the parser can serve a new stream. */
void sse_reset(struct sse *p);

/*
 * Parses buf[0..n). After a failure the parser stays failed (returns the
 * same status) until sse_reset.
 */
enum status sse_feed(struct sse *p, const char *buf, size_t n, struct status_info *si);

/* During the callback: the event's `event:` field, "" when it had none. */
const char *sse_event_type(const struct sse *p);
/* During the callback: the event's `error:` field (NUL-terminated, *len its
 * length when len is not NULL), or NULL when it had none. */
const char *sse_event_error(const struct sse *p, size_t *len);

/* Events dispatched since the last reset. */
size_t sse_events(const struct sse *p);

/* 1 when bytes of an unfinished line or event are pending (a stream that
 * ends here was cut short), else 0. */
int sse_pending(const struct sse *p);

#endif
