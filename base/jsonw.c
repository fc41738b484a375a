#include "base/jsonw.h"

#include <inttypes.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

void jsonw_init(struct jsonw *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
	w->first[0] = 1;
}

/* Writes the separator a new value needs at the current depth. */
static void jsonw_sep(struct jsonw *w)
{
	if (w->after_key) {
		w->after_key = 0;
		return;
	}
	if (!w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = 0;
}

static void jsonw_open(struct jsonw *w, char c)
{
	jsonw_sep(w);
	fputc(c, w->f);
	if (w->depth + 1 < JSONW_MAX_DEPTH)
		w->depth++;
	w->first[w->depth] = 1;
}

static void jsonw_close(struct jsonw *w, char c)
{
	fputc(c, w->f);
	if (w->depth > 0)
		w->depth--;
	if (w->depth == 0)
		fputc('\n', w->f);
}

void jsonw_obj(struct jsonw *w) { jsonw_open(w, '{'); }
void jsonw_obj_end(struct jsonw *w) { jsonw_close(w, '}'); }
void jsonw_arr(struct jsonw *w) { jsonw_open(w, '['); }
void jsonw_arr_end(struct jsonw *w) { jsonw_close(w, ']'); }

void jsonw_escape(FILE *f, const char *s, size_t n)
{
	size_t i;

	fputc('"', f);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (c < 0x20)
				fprintf(f, "\\u%04x", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

void jsonw_keyn(struct jsonw *w, const char *key, size_t n)
{
	jsonw_sep(w);
	jsonw_escape(w->f, key, n);
	fputc(':', w->f);
	w->after_key = 1;
}

void jsonw_key(struct jsonw *w, const char *key)
{
	jsonw_keyn(w, key, strlen(key));
}

void jsonw_strn(struct jsonw *w, const char *s, size_t n)
{
	jsonw_sep(w);
	jsonw_escape(w->f, s, n);
}

void jsonw_str(struct jsonw *w, const char *s)
{
	if (!s) {
		jsonw_null(w);
		return;
	}
	jsonw_strn(w, s, strlen(s));
}

void jsonw_int(struct jsonw *w, int64_t v)
{
	jsonw_sep(w);
	fprintf(w->f, "%" PRId64, v);
}

void jsonw_uint(struct jsonw *w, uint64_t v)
{
	jsonw_sep(w);
	fprintf(w->f, "%" PRIu64, v);
}

char *jsonw_dtoa(char *buf, size_t n, double v)
{
	int prec;

	/* 17 significant digits always read back; fewer often do, and the first
	 * that does is the shortest (printf rounds correctly in glibc). */
	for (prec = 1; prec < 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	if (prec == 17)
		snprintf(buf, n, "%.17g", v);
	/*
	 * %g writes an exponent once the digits run out before the decimal
	 * point (70 at one digit is "7e+01"): below 1e17 whole numbers are
	 * written out, as every JSON writer writes them ("70", "1500").
	 */
	{
		const char *e = strchr(buf, 'e');
		int x = e ? atoi(e + 1) : -1;
		if (x >= 0 && x < 17) {
			char alt[32];
			snprintf(alt, sizeof(alt), "%.*g", x + 1, v);
			if (strtod(alt, NULL) == v && strlen(alt) < n)
				memcpy(buf, alt, strlen(alt) + 1);
		}
	}
	return buf;
}

void jsonw_double(struct jsonw *w, double v)
{
	char buf[32];

	jsonw_sep(w);
	if (isfinite(v))
		fputs(jsonw_dtoa(buf, sizeof(buf), v), w->f);
	else
		fputs("null", w->f);
}

void jsonw_bool(struct jsonw *w, int v)
{
	jsonw_sep(w);
	fputs(v ? "true" : "false", w->f);
}

void jsonw_null(struct jsonw *w)
{
	jsonw_sep(w);
	fputs("null", w->f);
}

void jsonw_raw(struct jsonw *w, const char *json)
{
	size_t n = strlen(json);

	while (n && json[n - 1] == '\n')
		n--;
	jsonw_sep(w);
	fwrite(json, 1, n, w->f);
}

void jsonw_kstr(struct jsonw *w, const char *key, const char *s) { jsonw_key(w, key); jsonw_str(w, s); }
void jsonw_kint(struct jsonw *w, const char *key, int64_t v) { jsonw_key(w, key); jsonw_int(w, v); }
void jsonw_kuint(struct jsonw *w, const char *key, uint64_t v) { jsonw_key(w, key); jsonw_uint(w, v); }
void jsonw_kdouble(struct jsonw *w, const char *key, double v) { jsonw_key(w, key); jsonw_double(w, v); }
void jsonw_kbool(struct jsonw *w, const char *key, int v) { jsonw_key(w, key); jsonw_bool(w, v); }

int jsonw_mem_begin(struct jsonw *w, struct jsonw_mem *m)
{
	FILE *f;

	m->buf = NULL;
	m->n = 0;
	if (!(f = open_memstream(&m->buf, &m->n)))
		return -1;
	jsonw_init(w, f);
	return 0;
}

char *jsonw_mem_end(struct jsonw *w, struct jsonw_mem *m)
{
	int err = ferror(w->f);

	/* the text is complete (and m->buf final) only after fclose */
	if (fclose(w->f) || err || !m->buf) {
		free(m->buf);
		m->buf = NULL;
		return NULL;
	}
	while (m->n && m->buf[m->n - 1] == '\n')
		m->buf[--m->n] = '\0';
	return m->buf;
}
