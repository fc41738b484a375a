/*
 * jdoc.h - a small strict JSON parser for one line at a time.
 *
 * Why not cJSON: audit positions are int64 (a device buffer can hold any bit
 * pattern) and cJSON keeps numbers as doubles, which cannot tell 2^53+1 from
 * 2^53 nor say that a number is outside int64. jdoc keeps integer literals
 * exact, reports the byte offset of the first error, and reuses its memory
 * from line to line so a reader's footprint stays flat.
 *
 * Two ways in, one grammar:
 *   jdoc_parse   builds a tree of struct jval nodes owned by the struct jdoc;
 *                every pointer it hands out is valid until the next
 *                jdoc_parse() on the same jdoc or jdoc_free().
 *   jdoc_scan_*  reads one object member by member without building nodes or
 *                allocating, for hot paths that know which members they want
 *                (the replay reads 90 MB audits this way). It accepts only
 *                what jdoc_parse accepts and reads the same values; whatever
 *                it does not take (bad input, a limit, a form it leaves to the
 *                tree such as an escaped member name) it declines with -1,
 *                and the caller parses that line with jdoc_parse instead.
 *   jdoc_check   validates without storing anything (the preload shim).
 *
 * One grammar (jdoc_gram.h) is compiled into each: jdoc_tree.c (the only file
 * that allocates), jdoc_check.c (what the shim links; shim/module.mk fails
 * the build if it references the allocator), jdoc_scan.c and its block
 * reader of integer arrays, jdoc_simd.c.
 *
 * Strings are byte strings with a length: "\u0000" is a NUL inside the
 * string, and a lone surrogate escape (\ud800) is kept as its own three-byte
 * sequence (the generalized UTF-8 of WTF-8), so two different escapes never
 * read as the same bytes.
 */
#ifndef TTAUDIT_JDOC_H
#define TTAUDIT_JDOC_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Default nesting bound (the root object is depth 1); jdoc_set_max_depth changes it. */
#define JDOC_MAX_DEPTH 64
/* The largest nesting bound jdoc_set_max_depth and jdoc_scan accept. */
#define JDOC_DEPTH_LIMIT 4096

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
		const char *s;    /* JT_STR, n bytes then a NUL; may hold NULs (\u0000) */
	} u;
};

struct jdoc;

/*
 * max_len caps the input accepted by jdoc_parse (longer input: STATUS_LIMIT).
 * Returns NULL on allocation failure. Free with jdoc_free().
 */
struct jdoc *jdoc_new(size_t max_len);
void jdoc_free(struct jdoc *d);
/* Lone surrogates kept as WTF-8 (keep != 0) or read as U+FFFD (the default). */
void jdoc_set_keep_surrogates(struct jdoc *d, int keep);
/* Nesting deeper than depth (1 to JDOC_DEPTH_LIMIT, default JDOC_MAX_DEPTH) is STATUS_LIMIT. */
void jdoc_set_max_depth(struct jdoc *d, unsigned depth);

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
/* 1 when string value v holds exactly the n bytes z (NULs count). */
int jdoc_str_is(const struct jval *v, const char *z, size_t n);

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

/*
 * jdoc_scan - one object, member by member, without nodes or allocation.
 *
 * The input s[0..n) must be followed by a NUL or a newline at s[n], and the
 * bytes from there to the next NUL and JDOC_SCAN_PAD bytes after it must be
 * readable: the scanner reads ahead in words and never past a NUL. The
 * scanner reads one line: a newline is never whitespace to it (a JSON text
 * across lines is the tree's), so it never reads past s[n] either, and a
 * line of a file read in place (its newline at s[n], the next lines after
 * it, zeros after the mapped text) qualifies. With jdoc_scan_end_line the
 * input may run on past the line: the first newline ends it.
 * Strings are unescaped into the caller's arena (at least n + 1 bytes for one
 * input), each followed by a NUL; they live as long as the arena.
 *
 *	jdoc_scan_init(&sc, line, n, JDOC_MAX_DEPTH, arena, n + 1);
 *	if (jdoc_scan_object(&sc) < 0) fall back;
 *	while ((rc = jdoc_scan_key(&sc, &key, &len)) == 1) {
 *		switch on key: jdoc_scan_int(&sc, &v) ... or jdoc_scan_skip(&sc)
 *	}
 *	if (rc < 0 || jdoc_scan_end(&sc) < 0) fall back;
 *
 * Value functions return 1 when they read a value of their type, 0 when the
 * value is null (the value is consumed either way), and -1 otherwise: the
 * input is invalid, over a limit, of another type, or in a form left to
 * jdoc_parse. After -1 the scan is over and the caller uses jdoc_parse on the
 * same input, which then decides (and names the error) as it always has.
 */
#define JDOC_SCAN_PAD 64

/*
 * The scanner (and the analyzer's slot masks) use AVX2 where the CPU has it.
 * jdoc_simd(0) makes them use their portable code instead, so that tests can
 * hold both to the same results; call it before any scan, not while threads
 * scan. jdoc_simd_avx2() says which is in use.
 */
void jdoc_simd(int allow);
int jdoc_simd_avx2(void);

struct jdoc_scan {           /* on the caller's stack; members are private */
	const char *s, *p, *end;
	unsigned depth, max_depth;
	int first;               /* the next member is the object's first */
	char *arena, *arena_end;
};

void jdoc_scan_init(struct jdoc_scan *sc, const char *s, size_t n, unsigned max_depth,
		    char *arena, size_t arena_len);
/* Enters the object at the scan position (1), or -1. */
int jdoc_scan_object(struct jdoc_scan *sc);
/*
 * The next member's name (raw bytes between the quotes; a name holding an
 * escape declines with -1) and positions on its value: 1. At the end of the
 * object consumes '}' and returns 0.
 */
int jdoc_scan_key(struct jdoc_scan *sc, const char **key, size_t *len);
/*
 * A member name as written in compact JSON (`,"name":`, or `"name":` for an
 * object's first member), to be recognized in one compare. Names of up to 20
 * bytes; a longer one never matches.
 */
struct jdoc_scan_name {
	uint64_t w[3], m[3];
	uint8_t len;
};
void jdoc_scan_name_init(struct jdoc_scan_name *nm, const char *name, size_t n, int first);
/*
 * 1 when the next member is named nm, and then positions on its value like
 * jdoc_scan_key; 0 when it is not (nothing consumed: ask jdoc_scan_key).
 */
int jdoc_scan_key_is(struct jdoc_scan *sc, const struct jdoc_scan_name *nm);
/*
 * Enters the array at the scan position (1), or -1; then jdoc_scan_elem
 * positions on each element in turn (1) for a value function to read, and at
 * the end consumes ']' (0); -1 on invalid input.
 */
int jdoc_scan_array(struct jdoc_scan *sc);
int jdoc_scan_elem(struct jdoc_scan *sc);
/*
 * The type the next value has by its first byte, consuming nothing: JT_OBJ,
 * JT_ARR, JT_STR, JT_NULL, JT_TRUE, JT_FALSE, or JT_REAL for anything else
 * (a number, or invalid input the value functions will decline).
 */
enum jtype jdoc_scan_peek(const struct jdoc_scan *sc);
/* After the root object: 1 when only spaces, tabs or CRs are left, else -1. */
int jdoc_scan_end(struct jdoc_scan *sc);
/*
 * jdoc_scan_end for input that runs on after the line: 1 when the object is
 * complete and only spaces follow it up to a newline or to the end of the
 * input, with *len the line's length (the newline not counted); else -1.
 */
int jdoc_scan_end_line(struct jdoc_scan *sc, size_t *len);
/* Validates and passes over any value: 1, or -1. */
int jdoc_scan_skip(struct jdoc_scan *sc);
/* An integer literal within int64 (a fraction, exponent or overflow: -1). */
int jdoc_scan_int(struct jdoc_scan *sc, int64_t *out);
int jdoc_scan_bool(struct jdoc_scan *sc, int *out);
/* Any number, as jdoc_parse reads it: an int64 literal converted, else strtod. out may be NULL. */
int jdoc_scan_number(struct jdoc_scan *sc, double *out);
/*
 * A string without escapes, where it is in the input (not NUL-terminated):
 * 1, or -1 for anything else (null, escapes, not a string), sc unchanged.
 */
int jdoc_scan_str_inplace(struct jdoc_scan *sc, const char **out, uint32_t *len);
int jdoc_scan_str(struct jdoc_scan *sc, const char **out, uint32_t *len);
/*
 * Arrays, read in one call. dst may be NULL (validate and count only). More
 * than cap entries: -1. The entry count goes to *n.
 */
int jdoc_scan_int_array(struct jdoc_scan *sc, int64_t *dst, size_t cap, uint32_t *n);
int jdoc_scan_bool_array(struct jdoc_scan *sc, uint8_t *dst, size_t cap, uint32_t *n);
/*
 * Entries that are strings or null (NULL, length 0). A string may point
 * into the input itself, and is then NOT NUL-terminated: use its length. One
 * with escapes is unescaped into the arena.
 */
int jdoc_scan_str_array(struct jdoc_scan *sc, const char **dst, uint32_t *lens, size_t cap,
			uint32_t *n);

#endif
