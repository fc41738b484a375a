/*
 * jsonw.h - a minimal streaming JSON writer to a FILE, for the --json twins
 * of reports. It tracks commas and nesting; the caller supplies keys and
 * values in order. Output is compact unless `pretty` is set.
 */
#ifndef TTAUDIT_JSONW_H
#define TTAUDIT_JSONW_H

#include <stdint.h>
#include <stdio.h>

#define JSONW_MAX_DEPTH 32

struct jsonw {
	FILE *f;
	int depth;
	int first[JSONW_MAX_DEPTH];  /* no member written yet at this depth */
	int after_key;
};

void jsonw_init(struct jsonw *w, FILE *f);
void jsonw_obj(struct jsonw *w);        /* { */
void jsonw_obj_end(struct jsonw *w);    /* } */
void jsonw_arr(struct jsonw *w);        /* [ */
void jsonw_arr_end(struct jsonw *w);    /* ] */
void jsonw_key(struct jsonw *w, const char *key);
void jsonw_keyn(struct jsonw *w, const char *key, size_t n);   /* a key of n bytes */
void jsonw_str(struct jsonw *w, const char *s);   /* NULL writes null */
void jsonw_strn(struct jsonw *w, const char *s, size_t n);
void jsonw_int(struct jsonw *w, int64_t v);
void jsonw_uint(struct jsonw *w, uint64_t v);
void jsonw_double(struct jsonw *w, double v);     /* non-finite writes null */
/*
 * The shortest text of a finite v that strtod reads back as v (0.0048, not
 * 0.0047999999999999996): into buf (32 bytes hold any), returns buf. The
 * one number format of every report, JSON or not.
 */
char *jsonw_dtoa(char *buf, size_t n, double v);
void jsonw_bool(struct jsonw *w, int v);
void jsonw_null(struct jsonw *w);
/* A finished JSON value written elsewhere (trailing newline dropped). */
void jsonw_raw(struct jsonw *w, const char *json);
/* Shorthands: key then value. */
void jsonw_kstr(struct jsonw *w, const char *key, const char *s);
void jsonw_kint(struct jsonw *w, const char *key, int64_t v);
void jsonw_kuint(struct jsonw *w, const char *key, uint64_t v);
void jsonw_kdouble(struct jsonw *w, const char *key, double v);
void jsonw_kbool(struct jsonw *w, const char *key, int v);

/*
 * A writer into memory, for reports handed on as text (a --json twin that a
 * caller prints or embeds): jsonw_mem_begin sets up w (0, or -1 when out of
 * memory); jsonw_mem_end closes it and returns the text without the final
 * newline, or NULL when out of memory. The caller frees the text.
 */
struct jsonw_mem {
	char *buf;
	size_t n;
};
int jsonw_mem_begin(struct jsonw *w, struct jsonw_mem *m);
char *jsonw_mem_end(struct jsonw *w, struct jsonw_mem *m);

/* Writes s as a JSON string literal (quotes included) to f. */
void jsonw_escape(FILE *f, const char *s, size_t n);

#endif
