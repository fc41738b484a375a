#include "capture/jbuf.h"

#include <string.h>

void jbuf_init(struct jbuf *w, char *buf, size_t cap)
{
	w->buf = buf;
	w->cap = cap;
	w->len = 0;
	w->overflow = 0;
	w->invalid = 0;
}

void jbuf_raw(struct jbuf *w, const char *s, size_t n)
{
	if (w->overflow)
		return;
	if (n > w->cap - w->len) {
		w->overflow = 1;
		return;
	}
	memcpy(w->buf + w->len, s, n);
	w->len += n;
}

void jbuf_rawz(struct jbuf *w, const char *s)
{
	jbuf_raw(w, s, strlen(s));
}

/* 1 when s[0..n) is all ASCII (eight bytes at a time). */
static int jbuf_ascii(const char *s, size_t n)
{
	uint64_t acc = 0, v;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&v, s + i, 8);
		acc |= v;
	}
	for (; i < n; i++)
		acc |= (unsigned char)s[i];
	return !(acc & 0x8080808080808080ull);
}

void jbuf_raw_utf8(struct jbuf *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, run;

	if (jbuf_ascii(s, n)) {
		jbuf_raw(w, s, n);
		return;
	}
	while (i < n && !w->overflow) {
		/* copy the longest run that needs nothing done to it */
		for (run = i; run < n; ) {
			size_t l = u[run] < 0x80 ? 1 : jbuf_utf8_len(u + run, n - run);
			if (!l)
				break;
			run += l;
		}
		jbuf_raw(w, s + i, run - i);
		if (run == n)
			return;
		{
			char esc[6] = { '\\', 'u', 'd', 'c', hex[u[run] >> 4], hex[u[run] & 15] };
			jbuf_raw(w, esc, sizeof(esc));
		}
		w->invalid++;
		i = run + 1;
	}
}

/*
 * Length of the valid UTF-8 sequence at s[0..n), or 0 when the bytes there
 * are not one (overlong forms, surrogates and values above U+10FFFF count
 * as invalid, as RFC 3629 says).
 */
size_t jbuf_utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len, i;
	unsigned cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
	    (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

/*
 * Writes the escaped form of s[0..n) without quotes, stopping before the
 * output would pass `limit` bytes. Returns the number of input bytes used.
 */
static size_t jbuf_escape(struct jbuf *w, const char *s, size_t n, size_t limit)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		char esc[8];
		const char *out = esc;
		size_t olen, ulen;
		unsigned c = u[i];

		if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
			/* Runs of plain ASCII are the common case: copy them whole. */
			size_t j = i + 1;
			while (j < n && u[j] >= 0x20 && u[j] < 0x80 && u[j] != '"' && u[j] != '\\')
				j++;
			size_t run = j - i;

			olen = run;
			if (w->len + olen > limit)
				olen = limit > w->len ? limit - w->len : 0;
			memcpy(w->buf + w->len, s + i, olen);
			w->len += olen;
			i += olen;
			if (olen < run)
				return i;
			continue;
		}
		ulen = 1;
		if (c == '"' || c == '\\') {
			esc[0] = '\\';
			esc[1] = (char)c;
			olen = 2;
		} else if (c < 0x20) {
			esc[0] = '\\';
			switch (c) {
			case '\n': esc[1] = 'n'; olen = 2; break;
			case '\r': esc[1] = 'r'; olen = 2; break;
			case '\t': esc[1] = 't'; olen = 2; break;
			case '\b': esc[1] = 'b'; olen = 2; break;
			case '\f': esc[1] = 'f'; olen = 2; break;
			default:
				memcpy(esc + 1, "u00", 3);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				olen = 6;
			}
		} else {
			ulen = jbuf_utf8_len(u + i, n - i);
			if (ulen) {
				out = s + i;
				olen = ulen;
			} else {
				/* Python's surrogateescape: reversible, and the byte stays visible */
				memcpy(esc, "\\udc", 4);
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				olen = 6;
				ulen = 1;
			}
		}
		if (w->len + olen > limit)
			return i;
		memcpy(w->buf + w->len, out, olen);
		w->len += olen;
		if (out == esc && c >= 0x80)
			w->invalid++;
		i += ulen;
	}
	return i;
}

void jbuf_str(struct jbuf *w, const char *s, size_t n)
{
	size_t used;

	if (w->overflow)
		return;
	jbuf_raw(w, "\"", 1);
	if (w->overflow)
		return;
	used = jbuf_escape(w, s, n, w->cap);
	if (used < n) {
		w->overflow = 1;
		return;
	}
	jbuf_raw(w, "\"", 1);
}

void jbuf_esc(struct jbuf *w, const char *s, size_t n)
{
	if (w->overflow)
		return;
	if (jbuf_escape(w, s, n, w->cap) < n)
		w->overflow = 1;
}

void jbuf_strz(struct jbuf *w, const char *s)
{
	jbuf_str(w, s, strlen(s));
}

int jbuf_str_cut(struct jbuf *w, const char *s, size_t n, size_t reserve)
{
	size_t limit, used;

	if (w->overflow)
		return 0;
	if (w->cap < reserve + 2 || w->len > w->cap - reserve - 2) {
		w->overflow = 1;
		return 0;
	}
	limit = w->cap - reserve - 1;
	jbuf_raw(w, "\"", 1);
	used = jbuf_escape(w, s, n, limit);
	jbuf_raw(w, "\"", 1);
	return used < n;
}

static const char jbuf_pairs[201] =
	"00010203040506070809101112131415161718192021222324252627282930313233343536373839"
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879"
	"8081828384858687888990919293949596979899";

/* Writes v's decimal digits to end at `end`; returns where they start. */
static char *jbuf_digits(char *end, uint64_t v)
{
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100);
		v /= 100;
		end -= 2;
		memcpy(end, jbuf_pairs + 2 * d, 2);
	}
	if (v >= 10) {
		end -= 2;
		memcpy(end, jbuf_pairs + 2 * v, 2);
	} else {
		*--end = (char)('0' + v);
	}
	return end;
}

void jbuf_u64(struct jbuf *w, uint64_t v)
{
	char tmp[24], *p = jbuf_digits(tmp + sizeof(tmp), v);

	jbuf_raw(w, p, (size_t)(tmp + sizeof(tmp) - p));
}

void jbuf_i64(struct jbuf *w, int64_t v)
{
	char tmp[24], *p;

	if (v < 0) {
		p = jbuf_digits(tmp + sizeof(tmp), (uint64_t)0 - (uint64_t)v);
		*--p = '-';
	} else {
		p = jbuf_digits(tmp + sizeof(tmp), (uint64_t)v);
	}
	jbuf_raw(w, p, (size_t)(tmp + sizeof(tmp) - p));
}

void jbuf_time(struct jbuf *w, const struct timespec *ts)
{
	char tmp[40], *end = tmp + sizeof(tmp), *p;
	unsigned us = (unsigned)(ts->tv_nsec / 1000);
	int64_t sec = (int64_t)ts->tv_sec;

	/* six decimals, always */
	memcpy(end - 2, jbuf_pairs + 2 * (us % 100), 2);
	memcpy(end - 4, jbuf_pairs + 2 * (us / 100 % 100), 2);
	memcpy(end - 6, jbuf_pairs + 2 * (us / 10000 % 100), 2);
	end[-7] = '.';
	p = end - 7;
	if (sec < 0) {
		p = jbuf_digits(p, (uint64_t)0 - (uint64_t)sec);
		*--p = '-';
	} else {
		p = jbuf_digits(p, (uint64_t)sec);
	}
	jbuf_raw(w, p, (size_t)(end - p));
}

void jbuf_key(struct jbuf *w, const char *key)
{
	jbuf_raw(w, "\"", 1);
	jbuf_rawz(w, key);
	jbuf_raw(w, "\":", 2);
}

int jbuf_ok(const struct jbuf *w)
{
	return !w->overflow;
}
