/*
 * linebuf.c - line reassembly (linebuf.h). A line longer than the buffer
 * keeps its first `cap` bytes and is handed over, marked overlong, when its
 * '\n' arrives (or at flush): one report per line, at the place in the
 * stream where the line ends, so that peek and take agree on every line.
 */
#include "base/linebuf.h"

#include <string.h>

void linebuf_init(struct linebuf *lb, char *storage, size_t cap)
{
	lb->buf = storage;
	lb->cap = cap;
	lb->len = 0;
	lb->over = 0;
}

void linebuf_reset(struct linebuf *lb)
{
	lb->len = 0;
	lb->over = 0;
}

int linebuf_pending(const struct linebuf *lb)
{
	return lb->len > 0 || lb->over;
}

/* Appends p[0..n) to the pending line, keeping what fits. */
static void linebuf_append(struct linebuf *lb, const char *p, size_t n)
{
	size_t room = lb->cap - lb->len;

	if (n > room) {
		n = room;
		lb->over = 1;
	}
	memcpy(lb->buf + lb->len, p, n);
	lb->len += n;
}

size_t linebuf_peek(struct linebuf *lb, const char *data, size_t n, size_t max,
		    linebuf_peek_fn fn, void *ctx)
{
	const char *p = data, *end = data + n, *nl;
	size_t lines = 0;

	while (lines < max && p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		size_t k = (size_t)(nl - p);

		if (lines == 0 && linebuf_pending(lb)) {
			/* assembled after the pending bytes, which stay pending */
			size_t room = lb->cap - lb->len, take = k < room ? k : room;
			memcpy(lb->buf + lb->len, p, take);
			fn(ctx, lb->buf, lb->len + take, lb->over || k > room, (size_t)(nl + 1 - data));
		} else if (k <= lb->cap) {
			fn(ctx, p, k, 0, (size_t)(nl + 1 - data));
		} else {
			fn(ctx, p, lb->cap, 1, (size_t)(nl + 1 - data));
		}
		lines++;
		p = nl + 1;
	}
	return lines;
}

void linebuf_take(struct linebuf *lb, const char *data, size_t n, size_t skip, linebuf_fn fn,
		  void *ctx)
{
	const char *p = data, *end = data + n, *nl;
	size_t index = 0;

	while (p < end && (nl = memchr(p, '\n', (size_t)(end - p)))) {
		size_t k = (size_t)(nl - p);

		if (index == 0 && linebuf_pending(lb)) {
			size_t len;
			int over;

			linebuf_append(lb, p, k);
			len = lb->len;
			over = lb->over;
			/* reset before the call: the callback may feed again */
			lb->len = 0;
			lb->over = 0;
			if (index >= skip)
				fn(ctx, lb->buf, len, over);
		} else if (index >= skip) {
			if (k <= lb->cap)
				fn(ctx, p, k, 0);
			else
				fn(ctx, p, lb->cap, 1);
		}
		index++;
		p = nl + 1;
	}
	if (p < end)
		linebuf_append(lb, p, (size_t)(end - p));
}

void linebuf_feed(struct linebuf *lb, const char *data, size_t n, linebuf_fn fn, void *ctx)
{
	linebuf_take(lb, data, n, 0, fn, ctx);
}

void linebuf_flush(struct linebuf *lb, linebuf_fn fn, void *ctx)
{
	size_t len = lb->len;
	int over = lb->over;

	lb->len = 0;
	lb->over = 0;
	if (len || over)
		fn(ctx, lb->buf, len, over);
}
