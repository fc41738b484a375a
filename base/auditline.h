/*
 * auditline.h - whether a log line is an audit line, in one place for the
 * capture shim (capture/classify.c, on its write path) and the analyzer's
 * reader (a plain server log read directly).
 *
 * An audit line is one whose text from the first '{' to the end is exactly
 * one JSON object with a top-level string member "ev"; any log prefix may
 * come before it (`(EngineCore_DP0 pid=7) INFO 11-29 20:41:02
 * [generator.py:1930] MERGE_AUDIT `). No allocation.
 */
#ifndef TTAUDIT_AUDITLINE_H
#define TTAUDIT_AUDITLINE_H

#include <stddef.h>

/*
 * A quick reading of s[0..n) as one JSON object, for the common audit line
 * (no escapes in strings, nesting up to 32): returns 1 and sets *has_ev
 * exactly as jdoc_check() would, or -1 when it cannot tell (anything else,
 * including every invalid input): then ask jdoc_check().
 */
int auditline_object(const char *s, size_t n, int *has_ev);

/* 1 when line[0..n) is an audit line, with the object at line + *off (to the end). */
int auditline_find(const char *line, size_t n, size_t *off);

#endif
