/*
 * jdoc.h - a small strict JSON parser for one line at a time.
 *
 * Why not cJSON: audit positions are int64 (a device buffer can hold any bit
 * pattern) and cJSON keeps numbers as doubles, which cannot tell 2^53+1 from
 * 2^53 nor say that a number is outside int64. jdoc keeps integer literals
 * exact, reports the byte offset of the first error, and reuses its memory
 * from line to line so a reader's footprint stays flat.
 *
 * A parsed document is a tree of struct jval nodes owned by the struct jdoc;
 * every pointer it hands out is valid until the next jdoc_parse() on the same
 * jdoc or jdoc_free().
 */
#ifndef TTAUDIT_JDOC_H
#define TTAUDIT_JDOC_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

#define JDOC_MAX_DEPTH 64

enum jtype { JT_NULL, JT_FALSE, JT_TRUE, JT_INT, JT_REAL, JT_STR, JT_ARR, JT_OBJ };

struct jval {
	enum jtype type;
	int int_overflow;  /* JT_REAL read from an integer literal outside int64 */
	uint32_t n;        /* JT_STR: byte length; JT_ARR/JT_OBJ: member count */
	int32_t kid;       /* index of the first member, -1 if none */
	int32_t next;      /* index of the next sibling, -1 if last */
	uint32_t off;      /* 0-based byte offset of the value in the input */
	const char *key;   /* member name when inside an object (NUL-terminated) */
	uint32_t keylen;
	union {
		int64_t i;        /* JT_INT */
		double d;         /* JT_REAL */
		const char *s;    /* JT_STR, NUL-terminated, may contain NULs (\u0000) */
	} u;
};

struct jdoc;

/*
 * max_len caps the input accepted by jdoc_parse (longer input: STATUS_LIMIT).
 * Returns NULL on allocation failure. Free with jdoc_free().
 */
struct jdoc *jdoc_new(size_t max_len);
void jdoc_free(struct jdoc *d);

/*
 * Parses s[0..n) as exactly one JSON value with optional surrounding
 * whitespace. On failure returns STATUS_PARSE (or STATUS_LIMIT, STATUS_NOMEM)
 * and sets si->byte to the 1-based offset of the offending byte and si->msg.
 */
enum status jdoc_parse(struct jdoc *d, const char *s, size_t n, struct status_info *si);

/* The root of the last successful parse. */
const struct jval *jdoc_root(const struct jdoc *d);
/* First member of an array/object, the sibling after v; NULL at the end. */
const struct jval *jdoc_kid(const struct jdoc *d, const struct jval *v);
const struct jval *jdoc_next(const struct jdoc *d, const struct jval *v);
/* The member `key` of object obj (the last one if repeated), or NULL. */
const struct jval *jdoc_get(const struct jdoc *d, const struct jval *obj, const char *key);

/* "null", "boolean", "integer", "number", "string", "array", "object". */
const char *jdoc_typename(const struct jval *v);

/*
 * jdoc_check - allocation-free validation for code that may not allocate
 * (the preload shim's write path, signal handlers).
 *
 * Returns 0 when s[0..n) is exactly one JSON object (surrounding whitespace
 * allowed) and -1 otherwise. Sets out->has_ev when the object has a
 * top-level member "ev" whose value is a string. No allocation, no globals,
 * no locale; nesting is bounded by JDOC_MAX_DEPTH.
 */
struct jdoc_check {
	int has_ev;
};
int jdoc_check(const char *s, size_t n, struct jdoc_check *out);

#endif
