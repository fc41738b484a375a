#include "sse.h"

#include <stdlib.h>
#include <string.h>

struct sse {
	sse_event_fn fn;
	void *ctx;
	size_t cap;         /* cap on line and data (bytes, NUL excluded) */
	char *line;         /* partial line carried between feeds */
	size_t n_line, sz_line;
	char *data;         /* the current event's data, NUL-terminated */
	size_t n_data, sz_data;
	int has_data;       /* a data line was seen in this event */
	int after_cr;       /* the last byte fed was CR: a following LF is not a line */
	size_t n_events;
	enum status failed; /* sticky */
};

struct sse *sse_new(size_t max_event, sse_event_fn fn, void *ctx)
{
	struct sse *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->fn = fn;
	p->ctx = ctx;
	p->cap = max_event ? max_event : SSE_MAX_EVENT;
	return p;
}

void sse_free(struct sse *p)
{
	if (!p)
		return;
	free(p->line);
	free(p->data);
	free(p);
}

void sse_reset(struct sse *p)
{
	p->n_line = 0;
	p->n_data = 0;
	p->has_data = 0;
	p->after_cr = 0;
	p->n_events = 0;
	p->failed = STATUS_OK;
}

size_t sse_events(const struct sse *p)
{
	return p->n_events;
}

int sse_pending(const struct sse *p)
{
	return p->n_line > 0 || p->has_data;
}

/* Grows *buf to hold need+1 bytes, doubling, never past cap+1. */
static enum status sse_reserve(char **buf, size_t *sz, size_t need, size_t cap)
{
	size_t nsz;
	char *nb;

	if (need > cap)
		return STATUS_LIMIT;
	if (need + 1 <= *sz)
		return STATUS_OK;
	nsz = *sz ? *sz : 256;
	while (nsz < need + 1)
		nsz *= 2;
	if (nsz > cap + 1)
		nsz = cap + 1;
	nb = realloc(*buf, nsz);
	if (!nb)
		return STATUS_NOMEM;
	*buf = nb;
	*sz = nsz;
	return STATUS_OK;
}

static enum status sse_fail(struct sse *p, enum status st, struct status_info *si, const char *what)
{
	p->failed = st;
	if (st == STATUS_LIMIT)
		return status_set(si, st, "event stream: %s longer than %zu bytes", what, p->cap);
	if (st == STATUS_NOMEM)
		return status_set(si, st, "event stream: out of memory");
	return status_set(si, st, "event stream: stopped by the caller");
}

/* One complete line (without its terminator). */
static enum status sse_line(struct sse *p, const char *s, size_t n, struct status_info *si)
{
	enum status st;
	size_t vlen, need;
	const char *v;

	if (n == 0) {
		if (!p->has_data)
			return STATUS_OK;
		p->data[p->n_data] = '\0';
		p->n_events++;
		p->has_data = 0;
		n = p->n_data;
		p->n_data = 0;
		if (p->fn && p->fn(p->ctx, p->data, n))
			return sse_fail(p, STATUS_USAGE, si, NULL);
		return STATUS_OK;
	}
	if (n < 4 || memcmp(s, "data", 4) || (n > 4 && s[4] != ':'))
		return STATUS_OK;   /* comment, another field, or "dataX": ignored */
	v = s + 4;
	vlen = n - 4;
	if (vlen) {
		v++;
		vlen--;
		if (vlen && *v == ' ') {
			v++;
			vlen--;
		}
	}
	need = p->n_data + (p->has_data ? 1 : 0) + vlen;
	st = sse_reserve(&p->data, &p->sz_data, need, p->cap);
	if (st)
		return sse_fail(p, st, si, "event data");
	if (p->has_data)
		p->data[p->n_data++] = '\n';
	memcpy(p->data + p->n_data, v, vlen);
	p->n_data += vlen;
	p->has_data = 1;
	return STATUS_OK;
}

enum status sse_feed(struct sse *p, const char *buf, size_t n, struct status_info *si)
{
	enum status st;
	size_t i = 0, start, len;

	if (p->failed)
		return status_set(si, p->failed, "event stream: parser failed earlier");
	while (i < n) {
		if (p->after_cr) {
			p->after_cr = 0;
			if (buf[i] == '\n') {
				i++;
				continue;
			}
		}
		start = i;
		{
			/* the first LF or CR, by memchr: a data line is long */
			const char *nl = memchr(buf + i, '\n', n - i);
			size_t end = nl ? (size_t)(nl - buf) : n;
			const char *cr = memchr(buf + i, '\r', end - i);

			i = cr ? (size_t)(cr - buf) : end;
		}
		len = i - start;
		if (i == n) {
			/* no terminator yet: carry the piece over */
			st = sse_reserve(&p->line, &p->sz_line, p->n_line + len, p->cap);
			if (st)
				return sse_fail(p, st, si, "line");
			memcpy(p->line + p->n_line, buf + start, len);
			p->n_line += len;
			break;
		}
		if (buf[i] == '\r')
			p->after_cr = 1;
		i++;
		if (p->n_line) {
			st = sse_reserve(&p->line, &p->sz_line, p->n_line + len, p->cap);
			if (st)
				return sse_fail(p, st, si, "line");
			memcpy(p->line + p->n_line, buf + start, len);
			len += p->n_line;
			p->n_line = 0;
			st = sse_line(p, p->line, len, si);
		} else {
			if (len > p->cap)
				return sse_fail(p, STATUS_LIMIT, si, "line");
			st = sse_line(p, buf + start, len, si);
		}
		if (st)
			return st;
	}
	return STATUS_OK;
}
