/*
 * event.h - audit events decoded from a parsed JSON object, with the
 * validation the format asks for (types, lengths, int64 range).
 *
 * A struct event_decoder owns the arrays a decoded event points to; they stay
 * valid until the next event_decode() on the same decoder. String pointers
 * (slot_req, arm ...) point into the struct jdoc the object came from and
 * live as long as that parse.
 */
#ifndef TTAUDIT_EVENT_H
#define TTAUDIT_EVENT_H

#include <stdbool.h>
#include <stdint.h>

#include "jdoc.h"
#include "status.h"

/* Widest batch accepted; a wider merge event is malformed (STATUS_LIMIT). */
#define EVENT_MAX_SLOTS 4096

enum event_kind {
	EVENT_MERGE,
	EVENT_CONFIG,
	EVENT_CONTEXT,   /* decode, prefill, width_change, request */
	EVENT_OTHER,     /* an "ev" this format does not know: counted, ignored */
};

struct merge_event {
	int64_t step;
	uint32_t n_host, n_dev;              /* H and D */
	const int64_t *host_pos, *dev_pos;   /* [H], [D]; -1 = inactive */
	bool reset_batch, mode_switched;
	uint32_t n_host_tok, n_dev_tok;      /* 0 when absent */
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
	bool has_taken;
	const uint8_t *taken;                /* [H] */
	const char *arm;                     /* NULL when absent */
	bool has_t;
	double t;
};

struct config_event {
	int64_t slots;          /* 0 when absent */
	int64_t max_model_len;  /* 0 when absent */
	const char *arm;        /* NULL when absent */
};

/* Context events carry what pairing needs; other fields are ignored. */
struct context_event {
	const char *ev;         /* "decode", "prefill", "width_change", "request" */
	bool has_step;
	int64_t step;
	const char *phase;      /* request: "start" | "finish" */
	const char *req;        /* request id, NULL when absent */
	bool has_slot;
	int64_t slot;
};

struct event {
	enum event_kind kind;
	const char *ev;         /* the "ev" string as written */
	union {
		struct merge_event merge;
		struct config_event config;
		struct context_event ctx;
	} u;
};

struct event_decoder;

struct event_decoder *event_decoder_new(void);   /* NULL on allocation failure */
void event_decoder_free(struct event_decoder *dec);

/*
 * Decodes obj (a JSON object with a string "ev") into *out. Fails with
 * STATUS_PARSE (or STATUS_LIMIT) and a message naming the field when a known
 * event has a wrong type, a wrong length or an out-of-range number; si->byte
 * points at the offending value.
 */
enum status event_decode(struct event_decoder *dec, const struct jdoc *doc,
			 const struct jval *obj, struct event *out, struct status_info *si);

#endif
