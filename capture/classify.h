/*
 * classify.h - what a complete log line is: an audit line, a banner, or
 * neither.
 *
 * An audit line is one whose text from the first '{' to the end is exactly
 * one JSON object with a top-level string member "ev" (a log prefix such as
 * `INFO 11-29 20:41:02 [generator.py:1930] MERGE_AUDIT ` may come before it).
 * Otherwise the banner rules are tried. No allocation (jdoc_check and
 * banner_set_match), so the shim calls it on its write path.
 */
#ifndef TTAUDIT_CLASSIFY_H
#define TTAUDIT_CLASSIFY_H

#include <stddef.h>

#include "capture/banner.h"

enum classify_kind { CLASSIFY_OTHER, CLASSIFY_AUDIT, CLASSIFY_BANNER };

struct classify_result {
	enum classify_kind kind;
	const char *obj;           /* CLASSIFY_AUDIT: the object (in the line, or in sc->strip) */
	size_t obj_len;
	int rule;                  /* CLASSIFY_BANNER: index in the banner set */
};

/*
 * base/auditline.h's auditline_object() (the audit part of classify_line
 * lives there, shared with the analyzer's reader); tests/fuzz/fuzz_capture.c
 * holds it to jdoc_check.
 */
int classify_object(const char *s, size_t n, int *has_ev);

/*
 * What classify_line looks for, found in one pass over s[0..n) (16 bytes
 * at a time where the CPU has SSE2): the first '\n', the first '{', and
 * whether an ESC (a colour code) is there. For a caller that looks at
 * the bytes anyway (the shim: is this write one line?).
 */
struct classify_scan {
	const char *nl;       /* first '\n', or NULL */
	const char *brace;    /* first '{', or NULL */
	int esc;              /* an ESC byte is there */
};
void classify_scan(const char *s, size_t n, struct classify_scan *out);
/* classify_line, with the scan of the same bytes already done. */
enum classify_kind classify_line_scanned(const char *line, size_t n, const struct classify_scan *scan,
					 const struct banner_set *rules, struct banner_scratch *sc,
					 struct classify_result *res);

/*
 * `rules` may be NULL (no banners). `sc` is the caller's per-thread scratch.
 * The line is read without its ANSI colour codes and vLLM process prefix
 * (banner_strip): res->obj may point into sc until the next call.
 */
enum classify_kind classify_line(const char *line, size_t n, const struct banner_set *rules,
				 struct banner_scratch *sc, struct classify_result *res);

#endif
