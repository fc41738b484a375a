/*
 * jbuf.h - a bounded JSON writer into a caller-provided buffer.
 *
 * Used on the preload shim's write path, so it never allocates, never uses
 * stdio or locale and is safe to call from a signal handler: every function
 * only touches the struct and the buffer it is given. When the buffer is
 * full the writer stops, sets `overflow` and keeps ignoring further output;
 * the caller checks jbuf_ok() once at the end.
 *
 * The struct is public so that it can live on the stack; callers read
 * `len` and `overflow` and otherwise leave the fields alone.
 */
#ifndef TTAUDIT_JBUF_H
#define TTAUDIT_JBUF_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct jbuf {
	char *buf;      /* caller's buffer, not NUL-terminated by the writer */
	size_t cap;     /* its size */
	size_t len;     /* bytes written so far */
	int overflow;   /* 1 once something did not fit */
	size_t invalid; /* bytes written as \udcNN because they were not UTF-8 */
};

void jbuf_init(struct jbuf *w, char *buf, size_t cap);
/* Appends bytes as they are (the caller guarantees they are valid JSON). */
void jbuf_raw(struct jbuf *w, const char *s, size_t n);
void jbuf_rawz(struct jbuf *w, const char *s);
/*
 * Appends JSON text s[0..n) as it is, except that each byte that is not
 * part of valid UTF-8 becomes \udcNN (counted in `invalid`). Only for text
 * whose bytes >= 0x80 all lie inside strings (a JSON object jdoc_check()
 * accepted): there the escape is legal, and it is what Python's
 * surrogateescape gives back for the byte.
 */
void jbuf_raw_utf8(struct jbuf *w, const char *s, size_t n);
/*
 * Appends s[0..n) as a quoted JSON string. Control characters, '"' and '\\'
 * are escaped; each byte that is not part of valid UTF-8 becomes \udcNN
 * (its value in the low surrogate range, as Python's surrogateescape reads
 * it: reversible, and the output is valid UTF-8 JSON whatever the input),
 * counted in `invalid`.
 */
void jbuf_str(struct jbuf *w, const char *s, size_t n);
void jbuf_strz(struct jbuf *w, const char *s);
/* The inside of a JSON string (escaped as jbuf_str does, no quotes): for a string built in parts. */
void jbuf_esc(struct jbuf *w, const char *s, size_t n);
/*
 * Like jbuf_str but stops before the closing quote would not fit in
 * `reserve` bytes short of the end, so a long text can be cut instead of
 * overflowing the record. Returns 1 when the text was cut.
 */
int jbuf_str_cut(struct jbuf *w, const char *s, size_t n, size_t reserve);
void jbuf_i64(struct jbuf *w, int64_t v);
void jbuf_u64(struct jbuf *w, uint64_t v);
/* A timespec as seconds with six decimals ("1764448862.123456"). */
void jbuf_time(struct jbuf *w, const struct timespec *ts);
/* `"key":` (key written as is: callers pass literal ASCII names). */
void jbuf_key(struct jbuf *w, const char *key);
/*
 * Length of the valid UTF-8 sequence at s[0..n) (n >= 1), or 0 when the
 * bytes there are not one (overlong forms, surrogates and values above
 * U+10FFFF are invalid, as RFC 3629 says).
 */
size_t jbuf_utf8_len(const unsigned char *s, size_t n);
/* 1 when nothing overflowed. */
int jbuf_ok(const struct jbuf *w);

#endif
