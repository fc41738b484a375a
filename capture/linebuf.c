#include "linebuf.h"

#include <string.h>

void linebuf_init(struct linebuf *lb, char *storage, size_t cap)
{
	lb->buf = storage;
	lb->cap = cap;
	lb->len = 0;
	lb->skipping = 0;
}

void linebuf_reset(struct linebuf *lb)
{
	lb->len = 0;
	lb->skipping = 0;
}

int linebuf_pending(const struct linebuf *lb)
{
	return lb->len > 0 || lb->skipping;
}

/* Appends a piece of the current line; reports it once if it overflows. */
static void linebuf_append(struct linebuf *lb, const char *p, size_t n, linebuf_fn fn, void *ctx)
{
	size_t room;

	if (lb->skipping)
		return;
	room = lb->cap - lb->len;
	if (n <= room) {
		memcpy(lb->buf + lb->len, p, n);
		lb->len += n;
		return;
	}
	memcpy(lb->buf + lb->len, p, room);
	fn(ctx, lb->buf, lb->cap, 1);
	lb->len = 0;
	lb->skipping = 1;
}

void linebuf_feed(struct linebuf *lb, const char *data, size_t n, linebuf_fn fn, void *ctx)
{
	const char *p = data, *end = data + n;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl) {
			linebuf_append(lb, p, (size_t)(end - p), fn, ctx);
			return;
		}
		if (lb->skipping) {
			lb->skipping = 0;
		} else if (lb->len == 0) {
			if ((size_t)(nl - p) <= lb->cap)
				fn(ctx, p, (size_t)(nl - p), 0);
			else
				fn(ctx, p, lb->cap, 1);
		} else {
			linebuf_append(lb, p, (size_t)(nl - p), fn, ctx);
			if (lb->skipping) {
				lb->skipping = 0;
			} else {
				/* Reset before the call: the callback may feed again (fork). */
				size_t len = lb->len;
				lb->len = 0;
				fn(ctx, lb->buf, len, 0);
			}
		}
		p = nl + 1;
	}
}

void linebuf_flush(struct linebuf *lb, linebuf_fn fn, void *ctx)
{
	size_t len = lb->len;

	lb->len = 0;
	lb->skipping = 0;
	if (len)
		fn(ctx, lb->buf, len, 0);
}
