#include "bench/sse.h"

#include "base/alloc.h"

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
	char type[64];      /* the event's `event:` field ("" = message), cut at 63 bytes */
	char *error;        /* the event's `error:` field (llama-server), NUL-terminated */
	size_t n_error, sz_error;
	int has_error;
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
	free(p->error);
	free(p);
}

void sse_reset(struct sse *p)
{
	p->n_line = 0;
	p->n_data = 0;
	p->has_data = 0;
	p->has_error = 0;
	p->n_error = 0;
	p->type[0] = '\0';
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
	return p->n_line > 0 || p->has_data || p->has_error;
}

const char *sse_event_type(const struct sse *p)
{
	return p->type;
}

const char *sse_event_error(const struct sse *p, size_t *len)
{
	if (!p->has_error)
		return NULL;
	if (len)
		*len = p->n_error;
	return p->error;
}

/* Grows *buf to hold need+1 bytes, never past cap+1. */
static enum status sse_reserve(char **buf, size_t *sz, size_t need, size_t cap)
{
	if (need > cap)
		return STATUS_LIMIT;
	if (ALLOC_GROW_MAX(*buf, need + 1, *sz, cap + 1) < 0)
		return STATUS_NOMEM;
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

/* Appends a field's value to *buf (NUL-terminated), joined by LF to what a
 * line of the same field gave before in this event. */
static enum status sse_append(char **buf, size_t *len, size_t *sz, int *has, const char *v, size_t vlen,
			      size_t cap)
{
	enum status st = sse_reserve(buf, sz, *len + (*has ? 1 : 0) + vlen, cap);

	if (st)
		return st;
	if (*has)
		(*buf)[(*len)++] = '\n';
	memcpy(*buf + *len, v, vlen);
	*len += vlen;
	(*buf)[*len] = '\0';
	*has = 1;
	return STATUS_OK;
}

/* The value of a field line: after the colon, one optional space dropped. */
static const char *sse_value(const char *s, size_t n, size_t name_len, size_t *vlen)
{
	const char *v = s + name_len;

	*vlen = n - name_len;
	if (*vlen) {
		v++;
		(*vlen)--;
		if (*vlen && *v == ' ') {
			v++;
			(*vlen)--;
		}
	}
	return v;
}

/* s[0..n) is field `name` (followed by ':' or the line's end). */
static int sse_is_field(const char *s, size_t n, const char *name, size_t name_len)
{
	return n >= name_len && !memcmp(s, name, name_len) && (n == name_len || s[name_len] == ':');
}

/* One complete line (without its terminator). */
static enum status sse_line(struct sse *p, const char *s, size_t n, struct status_info *si)
{
	enum status st;
	size_t vlen;
	const char *v;

	if (n == 0) {
		if (!p->has_data && !p->has_error) {
			p->type[0] = '\0';
			return STATUS_OK;
		}
		if (!p->has_data && sse_reserve(&p->data, &p->sz_data, 0, p->cap))
			return sse_fail(p, STATUS_NOMEM, si, NULL);
		p->data[p->n_data] = '\0';
		p->n_events++;
		n = p->n_data;
		p->n_data = 0;
		if (p->fn && p->fn(p->ctx, p->data, n))
			return sse_fail(p, STATUS_USAGE, si, NULL);
		/* the type and error field belong to the event just dispatched */
		p->has_data = 0;
		p->has_error = 0;
		p->n_error = 0;
		p->type[0] = '\0';
		return STATUS_OK;
	}
	if (sse_is_field(s, n, "event", 5)) {
		v = sse_value(s, n, 5, &vlen);
		if (vlen >= sizeof(p->type))
			vlen = sizeof(p->type) - 1;
		memcpy(p->type, v, vlen);
		p->type[vlen] = '\0';
		return STATUS_OK;
	}
	if (sse_is_field(s, n, "error", 5)) {
		/* not a field of the grammar, but llama-server ends a failed
		 * stream with one: kept so that the caller can see it */
		v = sse_value(s, n, 5, &vlen);
		st = sse_append(&p->error, &p->n_error, &p->sz_error, &p->has_error, v, vlen, p->cap);
		return st ? sse_fail(p, st, si, "error field") : STATUS_OK;
	}
	if (!sse_is_field(s, n, "data", 4))
		return STATUS_OK;   /* comment, another field, or "dataX": ignored */
	v = sse_value(s, n, 4, &vlen);
	st = sse_append(&p->data, &p->n_data, &p->sz_data, &p->has_data, v, vlen, p->cap);
	return st ? sse_fail(p, st, si, "event data") : STATUS_OK;
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
