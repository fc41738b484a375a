/*
 * linebuf.h - reassembles lines from the pieces a program writes.
 *
 * A line may arrive in several writes, and one write may carry many lines.
 * linebuf_feed() hands every complete line (without its '\n') to a callback;
 * bytes after the last '\n' wait in the buffer for the next feed. The buffer
 * is caller memory of a fixed size (one of the shim's per-fd streams): a
 * line longer than that keeps its first `cap` bytes and is reported once,
 * with `overlong` set, when its '\n' arrives. Nothing allocates; safe in a
 * signal handler as long as the same linebuf is not fed re-entrantly.
 *
 * Lines that are complete within one feed are passed straight from the
 * caller's data without a copy.
 *
 * The shim classifies the lines a write() will complete before the bytes
 * reach the kernel, and accounts for what the kernel accepted after:
 * linebuf_peek() shows the lines data would complete without changing the
 * linebuf, linebuf_take() then accepts the prefix that was written.
 */
#ifndef TTAUDIT_LINEBUF_H
#define TTAUDIT_LINEBUF_H

#include <stddef.h>

struct linebuf {
	char *buf;      /* caller's storage for a partial line */
	size_t cap;     /* its size: the longest line kept whole */
	size_t len;     /* bytes of the partial line held (at most cap) */
	int over;       /* the partial line had more bytes than cap */
};

/*
 * Called once per line. `line` is valid only during the call. `overlong` is
 * 1 when the line was longer than the buffer: `line` then holds its first
 * `n` (= cap) bytes and the rest was dropped.
 */
typedef void (*linebuf_fn)(void *ctx, const char *line, size_t n, int overlong);
/* The same for linebuf_peek, with `end`: the offset in data just past the line's '\n'. */
typedef void (*linebuf_peek_fn)(void *ctx, const char *line, size_t n, int overlong, size_t end);

void linebuf_init(struct linebuf *lb, char *storage, size_t cap);
/* Accepts data[0..n): every line it completes goes to fn; the rest waits. */
void linebuf_feed(struct linebuf *lb, const char *data, size_t n, linebuf_fn fn, void *ctx);
/*
 * The first `max` lines data[0..n) would complete, in order, to fn; lb's
 * state does not change (the first line, when a partial one is pending, is
 * assembled in the buffer after the pending bytes). Returns how many.
 */
size_t linebuf_peek(struct linebuf *lb, const char *data, size_t n, size_t max,
		    linebuf_peek_fn fn, void *ctx);
/*
 * Accepts data[0..n) as linebuf_feed does, but the first `skip` lines it
 * completes are not passed to fn (the caller handled them from linebuf_peek).
 */
void linebuf_take(struct linebuf *lb, const char *data, size_t n, size_t skip, linebuf_fn fn,
		  void *ctx);
/* Hands a pending partial line (if any) to fn as a line, e.g. at close or exit. */
void linebuf_flush(struct linebuf *lb, linebuf_fn fn, void *ctx);
/* Forgets a pending partial line (a fork child must not finish its parent's line). */
void linebuf_reset(struct linebuf *lb);
/* 1 when a partial line is pending. */
int linebuf_pending(const struct linebuf *lb);

#endif
