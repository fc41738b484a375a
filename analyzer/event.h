/*
 * event.h - audit events decoded from a parsed JSON object, with the
 * validation the format asks for (types, lengths, int64 range).
 *
 * Two decoders, one result: event_decode() reads a jdoc tree; event_scan()
 * reads a line directly with the jdoc scanner, building no tree, and declines
 * (returns 0) whenever the line is not a plain event in a form it reads, so
 * that the caller decodes that line with the tree instead. For every line it
 * takes, event_scan() gives exactly the event event_decode() gives (the
 * differential test and fuzz target hold it to that).
 *
 * A struct event_decoder owns the arrays a decoded event points to; they stay
 * valid until the next decode on the same decoder. String pointers (slot_req,
 * arm ...) point into the struct jdoc the object came from (event_decode) or
 * into the decoder or the line itself (event_scan) and live until the next
 * parse or decode. Every string is a byte string with a length beside it:
 * compare and print with the length (a JSON string may hold a NUL). Those of
 * event_decode are also NUL-terminated; the request ids of event_scan are not.
 */
#ifndef TTAUDIT_EVENT_H
#define TTAUDIT_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/jdoc.h"
#include "base/status.h"

/* Default widest batch (entries of an integer array); wider is malformed (STATUS_LIMIT). */
#define EVENT_MAX_SLOTS 4096
/* The largest cap event_decoder_new_opts() accepts. */
#define EVENT_SLOTS_LIMIT 65536

enum event_kind {
	EVENT_MERGE,
	EVENT_CONFIG,
	EVENT_CONTEXT,   /* decode, prefill, width_change, request, trace */
	EVENT_OTHER,     /* an "ev" this format does not know: counted, ignored */
	EVENT_GATE,      /* the capability gate decided whether the keep runs */
};

struct merge_event {
	int64_t step;
	uint32_t n_host, n_dev;              /* H and D */
	const int64_t *host_pos, *dev_pos;   /* [H], [D]; -1 = inactive */
	bool reset_batch, mode_switched;
	uint32_t n_host_tok, n_dev_tok;      /* 0 when absent (or not wanted by event_scan) */
	const int64_t *host_tok, *dev_tok;
	bool has_prefilled;
	const uint8_t *prefilled;            /* [H]: 1 when the slot is listed */
	bool has_buf_step;
	int64_t buf_step;
	bool has_gen;                        /* both gen and buf_gen present */
	int64_t gen, buf_gen;
	bool has_slot_gen;                   /* both slot_gen and buf_slot_gen, length H */
	const int64_t *slot_gen, *buf_slot_gen;
	bool has_req;                        /* both slot_req and buf_req, length H */
	const char *const *slot_req, *const *buf_req;  /* NULL entries for JSON null */
	const uint32_t *slot_req_len, *buf_req_len;    /* byte lengths, [H] */
	bool has_taken;
	const uint8_t *taken;                /* [H] */
	const char *arm;                     /* NULL when absent */
	uint32_t arm_len;
	bool has_t;
	double t;
	bool has_dp, has_rank;               /* data-parallel chunk index and rank, >= 0 */
	int64_t dp, rank;
};

struct config_event {
	int64_t slots;          /* 0 when absent */
	bool has_max_model_len; /* present and not null (0 included: "not known") */
	int64_t max_model_len;  /* 0 when absent */
	const char *arm;        /* NULL when absent */
	uint32_t arm_len;
	bool has_rank;
	int64_t rank;
};

/* Context events carry what pairing needs; other fields are ignored. */
struct context_event {
	const char *ev;         /* "decode", "prefill", "width_change", "request", "trace" */
	bool has_step;
	int64_t step;
	const char *phase;      /* request: "start" | "finish" */
	uint32_t phase_len;
	const char *req;        /* request id, NULL when absent */
	uint32_t req_len;
	bool has_slot;
	int64_t slot;
	const char *op, *key;   /* trace: "replay" | "restage", the trace key */
	uint32_t op_len, key_len;
	bool has_dp, has_rank;
	int64_t dp, rank;
};

/* The capability gate (docs/audit-format.md): keep false is a refused keep. */
struct gate_event {
	bool has_step;
	int64_t step;
	bool has_keep, keep;
	bool has_supports, supports_async_decode;
	bool force;
	const char *reason;
	uint32_t reason_len;
	bool has_dp, has_rank;
	int64_t dp, rank;
};

struct event {
	enum event_kind kind;
	const char *ev;         /* the "ev" string as written */
	uint32_t ev_len;
	union {
		struct merge_event merge;
		struct config_event config;
		struct context_event ctx;
		struct gate_event gate;
	} u;
};

/* 1 when the string z[0..n) is exactly the C string lit (a literal name). */
int event_str_is(const char *z, uint32_t n, const char *lit);

struct event_decoder_opts {
	uint32_t max_slots;     /* entries in an integer array; 0: EVENT_MAX_SLOTS */
};

struct event_decoder;

/* NULL on allocation failure or a max_slots above EVENT_SLOTS_LIMIT. */
struct event_decoder *event_decoder_new(void);
struct event_decoder *event_decoder_new_opts(const struct event_decoder_opts *o);
void event_decoder_free(struct event_decoder *dec);
uint32_t event_decoder_max_slots(const struct event_decoder *dec);

/*
 * Decodes obj (a JSON object with a string "ev") into *out. Fails with
 * STATUS_PARSE (or STATUS_LIMIT) and a message naming the field when a known
 * event has a wrong type, a wrong length or an out-of-range number; si->byte
 * points at the offending value.
 */
enum status event_decode(struct event_decoder *dec, const struct jdoc *doc,
			 const struct jval *obj, struct event *out, struct status_info *si);

/* Optional fields event_scan() stores; the others it validates and drops. */
enum {
	EVENT_WANT_TOKENS = 1u << 0,   /* host_tok, dev_tok (--explain) */
};

/*
 * Decodes the line s[0..n) (a NUL or its newline at s[n], JDOC_SCAN_PAD readable bytes
 * after it) when it is a plain event object whose first member is "ev".
 * Returns 1 with *out filled, 0 when it declines (anything else, including
 * every malformed line: decode that line with jdoc_parse and event_decode),
 * -1 when out of memory.
 */
int event_scan(struct event_decoder *dec, const char *s, size_t n, unsigned max_depth,
	       unsigned want, struct event *out);
/*
 * event_scan on a line whose end is not known yet: s[0..n) holds the line
 * and may run on past its newline (a file read in place); the first newline
 * ends the line, or n does. Returns what event_scan returns, with *len the
 * line's length (the newline not counted) when 1. The scanner never reads
 * past the newline, so the result is event_scan's on s[0..*len).
 */
int event_scan_line(struct event_decoder *dec, const char *s, size_t n, unsigned max_depth,
		    unsigned want, struct event *out, size_t *len);

#endif
