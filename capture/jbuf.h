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
};

void jbuf_init(struct jbuf *w, char *buf, size_t cap);
/* Appends bytes as they are (the caller guarantees they are valid JSON). */
void jbuf_raw(struct jbuf *w, const char *s, size_t n);
void jbuf_rawz(struct jbuf *w, const char *s);
/*
 * Appends s[0..n) as a quoted JSON string. Control characters, '"' and '\\'
 * are escaped; bytes that are not valid UTF-8 become U+FFFD so the output is
 * always valid JSON whatever the input.
 */
void jbuf_str(struct jbuf *w, const char *s, size_t n);
void jbuf_strz(struct jbuf *w, const char *s);
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
/* 1 when nothing overflowed. */
int jbuf_ok(const struct jbuf *w);

#endif
