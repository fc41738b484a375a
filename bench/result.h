/*
 * result.h - a request's stream read into its result (load.h: struct
 * load_result), event by event, for the load loop and the tests. One parser
 * per loop, reused chunk after chunk: no allocation per token.
 */
#ifndef TTAUDIT_RESULT_H
#define TTAUDIT_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/load.h"

/* Marks r failed with f and the reason; the first cause stands. */
void result_fail(struct load_result *r, enum load_fail f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Parses one stream chunk (the data of one event, not [DONE]) into r as the
 * load loop does, at receive time `now`. Returns 0, or -1 with
 * r->fail and r->reason set.
 */
struct result_parser;
struct result_parser *result_parser_new(void);
void result_parser_free(struct result_parser *cp);
/* Chunks this parser read by its fast path (compact, no escapes, no usage or
 * error member) rather than a full parse; both give the same result. */
size_t result_parser_fast(const struct result_parser *cp);
/* Keep each chunk's token ids in its result (load_opts.keep_ids). */
void result_parser_keep_ids(struct result_parser *cp, bool on);
/* Tests: every chunk through jdoc's tree, to compare with the scanner. */
void result_parser_tree_only(struct result_parser *cp, bool on);
int result_chunk(struct result_parser *cp, struct load_result *r, enum load_api api,
	       bool keep_text, const char *data, size_t len, double now);
/*
 * One event of the stream as sse dispatched it (call from its callback: the
 * event's type and `error:` field are read from p): an `event: error` or an
 * `error:` field is a server failure with the server's message; anything else
 * is result_chunk. Returns 0, or -1 with r failed.
 */
struct sse;
int result_event(struct result_parser *cp, struct load_result *r, enum load_api api,
	       bool keep_text, const struct sse *p, const char *data, size_t len, double now);

#endif
