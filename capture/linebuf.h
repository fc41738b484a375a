/*
 * linebuf.h - reassembles lines from the pieces a program writes.
 *
 * A line may arrive in several writes, and one write may carry many lines.
 * linebuf_feed() hands every complete line (without its '\n') to a callback;
 * bytes after the last '\n' wait in the buffer for the next feed. The buffer
 * is caller memory of a fixed size (the shim's per-thread pages): a line
 * longer than that is reported once through the callback with `overlong` set
 * (and the text that fitted), and its remaining bytes up to the next '\n'
 * are skipped. Nothing allocates; safe in a signal handler as long as the
 * same linebuf is not fed re-entrantly.
 *
 * Lines that are complete within one feed are passed straight from the
 * caller's data without a copy.
 */
#ifndef TTAUDIT_LINEBUF_H
#define TTAUDIT_LINEBUF_H

#include <stddef.h>

struct linebuf {
	char *buf;      /* caller's storage for a partial line */
	size_t cap;     /* its size: the longest line kept whole */
	size_t len;     /* bytes of the partial line held */
	int skipping;   /* dropping the rest of an overlong line */
};

/*
 * Called once per line. `line` is valid only during the call. `overlong` is
 * 1 when the line was longer than the buffer: `line` then holds its first
 * `n` (= cap) bytes and the rest is dropped.
 */
typedef void (*linebuf_fn)(void *ctx, const char *line, size_t n, int overlong);

void linebuf_init(struct linebuf *lb, char *storage, size_t cap);
void linebuf_feed(struct linebuf *lb, const char *data, size_t n, linebuf_fn fn, void *ctx);
/* Hands a pending partial line (if any) to fn as a line, e.g. at close or exit. */
void linebuf_flush(struct linebuf *lb, linebuf_fn fn, void *ctx);
/* Forgets a pending partial line (a fork child must not finish its parent's line). */
void linebuf_reset(struct linebuf *lb);
/* 1 when a partial line is pending. */
int linebuf_pending(const struct linebuf *lb);

#endif
