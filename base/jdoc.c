/*
 * jdoc.c - the one JSON reader: the tree parser (jdoc_parse), the validating
 * checker (jdoc_check) and the member-by-member scanner (jdoc_scan_*). All
 * three run the same grammar functions (jp_*); the scanner adds word-at-a-time
 * fast paths for the shapes audits are made of (integer, boolean and
 * string-or-null arrays) and hands everything else to jp_value.
 */
#include "jdoc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

struct jdoc {
	size_t max_len;
	struct jval *nodes;   /* grows up to max_len + 1 nodes, kept between lines */
	size_t n_nodes, cap_nodes;
	char *strs;           /* unescaped strings; sized to the input, never longer */
	size_t cap_strs;
	int32_t root;
	unsigned max_depth;
	int keep_surrogates;
};

/* Parser state. d == NULL: validate only (jdoc_check), nothing is stored. */
struct jp {
	const char *s;
	size_t n, i;
	struct jdoc *d;
	char *sp;            /* next free byte in d->strs */
	unsigned depth, max_depth;
	int keep_surrogates;  /* lone surrogates as WTF-8, else U+FFFD */
	const char *err;     /* static message of the first error */
	size_t err_off;
	enum status err_st;
	int has_ev;
	int one_line;        /* for the scanner: a newline ends the input, never whitespace */
};

static int jp_fail(struct jp *p, const char *msg)
{
	if (!p->err) {
		p->err = msg;
		p->err_off = p->i;
		p->err_st = STATUS_PARSE;
	}
	return -1;
}

static void jp_ws(struct jp *p)
{
	/* compact JSON has no whitespace: leave on the first byte above ' ' */
	if (p->i < p->n && (unsigned char)p->s[p->i] > ' ')
		return;
	while (p->i < p->n) {
		char c = p->s[p->i];
		if (c != ' ' && c != '\t' && (c != '\n' || p->one_line) && c != '\r')
			break;
		p->i++;
	}
}

static int32_t jp_node(struct jp *p, enum jtype t)
{
	struct jdoc *d = p->d;
	struct jval *v;

	if (!d)
		return 0;
	if (d->n_nodes == d->cap_nodes) {
		/* a value takes a byte at least; node indexes are int32_t */
		size_t max = d->max_len < INT32_MAX ? d->max_len + 1 : INT32_MAX;
		size_t want = d->n_nodes + 1 < 256 ? 256 : d->n_nodes + 1;

		if (d->n_nodes + 1 > max) {
			p->err_st = STATUS_LIMIT;
			p->err = "too many values";
			p->err_off = p->i;
			return -1;
		}
		if (ALLOC_GROW_MAX(d->nodes, want < max ? want : max, d->cap_nodes, max) < 0) {
			p->err_st = STATUS_NOMEM;
			p->err = "out of memory";
			p->err_off = p->i;
			return -1;
		}
	}
	v = &d->nodes[d->n_nodes];
	v->type = t;
	v->int_overflow = 0;
	v->n = 0;
	v->kid = -1;
	v->next = -1;
	v->off = (uint32_t)p->i;
	v->key = NULL;
	v->keylen = 0;
	v->u.i = 0;
	return (int32_t)d->n_nodes++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int jp_hex4(struct jp *p, unsigned *out)
{
	unsigned v = 0;
	int k;

	if (p->n - p->i < 4)
		return jp_fail(p, "truncated \\u escape");
	for (k = 0; k < 4; k++) {
		int h = hexval(p->s[p->i + k]);
		if (h < 0) {
			p->i += k;
			return jp_fail(p, "bad hex digit in \\u escape");
		}
		v = v * 16 + (unsigned)h;
	}
	p->i += 4;
	*out = v;
	return 0;
}

static void jp_put_utf8(struct jp *p, unsigned cp)
{
	char *o = p->sp;

	if (!o)
		return;
	if (cp < 0x80) {
		*o++ = (char)cp;
	} else if (cp < 0x800) {
		*o++ = (char)(0xC0 | (cp >> 6));
		*o++ = (char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*o++ = (char)(0xE0 | (cp >> 12));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*o++ = (char)(0x80 | (cp & 0x3F));
	} else {
		*o++ = (char)(0xF0 | (cp >> 18));
		*o++ = (char)(0x80 | ((cp >> 12) & 0x3F));
		*o++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*o++ = (char)(0x80 | (cp & 0x3F));
	}
	p->sp = o;
}

/*
 * Parses a string at p->i (on the opening quote). In doc mode the unescaped
 * bytes go to p->sp and out/len describe them. An escape never expands
 * (\uXXXX is 6 bytes in, at most 4 out; a surrogate pair 12 in, 4 out), so
 * the arena sized to the input always suffices.
 */
static int jp_string(struct jp *p, const char **out, uint32_t *len)
{
	char *start = p->sp;

	p->i++;
	for (;;) {
		unsigned char c;
		if (p->i >= p->n)
			return jp_fail(p, "unterminated string");
		c = (unsigned char)p->s[p->i];
		if (c == '"') {
			p->i++;
			break;
		}
		if (c < 0x20)
			return jp_fail(p, "control character in string");
		if (c != '\\') {
			if (p->sp)
				*p->sp++ = (char)c;
			p->i++;
			continue;
		}
		p->i++;
		if (p->i >= p->n)
			return jp_fail(p, "unterminated escape");
		c = (unsigned char)p->s[p->i++];
		switch (c) {
		case '"': case '\\': case '/':
			break;
		case 'b': c = '\b'; break;
		case 'f': c = '\f'; break;
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case 'u': {
			unsigned cp, lo;
			if (jp_hex4(p, &cp))
				return -1;
			if (cp >= 0xD800 && cp <= 0xDBFF && p->n - p->i >= 6 &&
			    p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
				size_t save = p->i;
				p->i += 2;
				if (jp_hex4(p, &lo))
					return -1;
				if (lo >= 0xDC00 && lo <= 0xDFFF)
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				else
					p->i = save;   /* lone high surrogate; the next escape stands alone */
			}
			/*
			 * A lone surrogate keeps its own three bytes (WTF-8) where strings
			 * are identities: \ud800 and \udbff stay different, and so do the
			 * \udcNN escapes a capture writes for invalid bytes. Readers of
			 * text may ask for U+FFFD instead.
			 */
			if (cp >= 0xD800 && cp <= 0xDFFF && !p->keep_surrogates)
				cp = 0xFFFD;
			jp_put_utf8(p, cp);
			continue;
		}
		default:
			p->i--;
			return jp_fail(p, "bad escape in string");
		}
		if (p->sp)
			*p->sp++ = (char)c;
	}
	if (p->sp) {
		*len = (uint32_t)(p->sp - start);
		*p->sp++ = '\0';
		*out = start;
	}
	return 0;
}

static int isdigit_c(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Validates the number literal at p->i and passes over it. *is_int: no
 * fraction or exponent; *overflow: an integer literal whose magnitude *mag
 * does not fit a uint64.
 */
static int jp_number_lit(struct jp *p, int *neg, uint64_t *mag_out, int *is_int_out,
			 int *overflow_out)
{
	int is_int = 1, overflow = 0;
	uint64_t mag = 0;

	*neg = 0;
	if (p->s[p->i] == '-') {
		*neg = 1;
		p->i++;
	}
	if (p->i >= p->n || !isdigit_c(p->s[p->i]))
		return jp_fail(p, "bad number");
	if (p->s[p->i] == '0') {
		p->i++;
		if (p->i < p->n && isdigit_c(p->s[p->i]))
			return jp_fail(p, "leading zero in number");
	} else {
		/* 19 digits always fit a uint64; only longer literals take the
		 * overflow-checked loop */
		size_t first = p->i;
		while (p->i < p->n && isdigit_c(p->s[p->i]) && p->i - first < 19)
			mag = mag * 10 + (unsigned)(p->s[p->i++] - '0');
		while (p->i < p->n && isdigit_c(p->s[p->i])) {
			unsigned dgt = (unsigned)(p->s[p->i++] - '0');
			if (mag > (UINT64_MAX - dgt) / 10)
				overflow = 1;
			else
				mag = mag * 10 + dgt;
		}
	}
	if (p->i < p->n && p->s[p->i] == '.') {
		is_int = 0;
		p->i++;
		if (p->i >= p->n || !isdigit_c(p->s[p->i]))
			return jp_fail(p, "bad fraction in number");
		while (p->i < p->n && isdigit_c(p->s[p->i]))
			p->i++;
	}
	if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
		is_int = 0;
		p->i++;
		if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
			p->i++;
		if (p->i >= p->n || !isdigit_c(p->s[p->i]))
			return jp_fail(p, "bad exponent in number");
		while (p->i < p->n && isdigit_c(p->s[p->i]))
			p->i++;
	}
	*mag_out = mag;
	*is_int_out = is_int;
	*overflow_out = overflow;
	return 0;
}

/* 1 when the literal read by jp_number_lit is an int64, with its value. */
static int jp_number_int64(int neg, uint64_t mag, int is_int, int overflow, int64_t *out)
{
	if (!is_int || overflow || (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX))
		return 0;
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 1;
}

static int jp_number(struct jp *p, int32_t idx)
{
	size_t start = p->i;
	int neg, is_int, overflow;
	uint64_t mag;
	struct jval *v;

	if (jp_number_lit(p, &neg, &mag, &is_int, &overflow))
		return -1;
	if (!p->d)
		return 0;
	v = &p->d->nodes[idx];
	if (jp_number_int64(neg, mag, is_int, overflow, &v->u.i)) {
		v->type = JT_INT;
		return 0;
	}
	{
		/*
		 * strtod needs a terminated copy. It goes to the free end of the
		 * string arena, which is not advanced: what the arena holds never
		 * exceeds the input consumed before this literal, so the literal and
		 * its NUL fit whatever its length (a valid literal is never refused).
		 */
		size_t len = p->i - start;
		memcpy(p->sp, p->s + start, len);
		p->sp[len] = '\0';
		v->type = JT_REAL;
		v->int_overflow = is_int;
		v->u.d = strtod(p->sp, NULL);
	}
	return 0;
}

static int jp_lit(struct jp *p, const char *lit, size_t len)
{
	if (p->n - p->i < len || memcmp(p->s + p->i, lit, len))
		return jp_fail(p, "unexpected character");
	p->i += len;
	return 0;
}

static int jp_value(struct jp *p, int32_t *out);

/*
 * 1 when the member name raw[0..n) (between its quotes, already validated by
 * jp_string) reads "ev" once escapes are undone, so that jdoc_check agrees
 * with jdoc_get(..., "ev") on names such as "\u0065v".
 */
static int jp_key_is_ev(const char *raw, size_t n)
{
	static const char want[] = "ev";
	size_t i = 0, k = 0;
	int j;

	while (i < n) {
		unsigned c = (unsigned char)raw[i++];
		if (c == '\\') {
			c = (unsigned char)raw[i++];
			if (c == 'u') {
				for (c = 0, j = 0; j < 4; j++)
					c = c * 16 + (unsigned)hexval(raw[i++]);
			} else {
				c = 0;   /* a one-letter escape is never 'e' or 'v' */
			}
		}
		if (k == 2 || c != (unsigned char)want[k])
			return 0;
		k++;
	}
	return k == 2;
}

/* Parses '[' ... ']' or '{' ... '}' at p->i into node idx. */
static int jp_container(struct jp *p, int32_t idx, int is_obj)
{
	int32_t last = -1;
	uint32_t count = 0;
	int top = (p->depth == 1);

	p->i++;
	jp_ws(p);
	if (p->i < p->n && p->s[p->i] == (is_obj ? '}' : ']')) {
		p->i++;
		return 0;
	}
	for (;;) {
		const char *key = NULL;
		uint32_t keylen = 0;
		int32_t kid;

		jp_ws(p);
		if (is_obj) {
			size_t key_off = p->i, key_end;
			if (p->i >= p->n || p->s[p->i] != '"')
				return jp_fail(p, "expected a member name");
			if (jp_string(p, &key, &keylen))
				return -1;
			key_end = p->i;
			jp_ws(p);
			if (p->i >= p->n || p->s[p->i] != ':')
				return jp_fail(p, "expected ':' after member name");
			p->i++;
			jp_ws(p);
			/*
			 * jdoc_check: the top-level member "ev" with a string value. The
			 * last "ev" decides, as it does for jdoc_get().
			 */
			if (!p->d && top && jp_key_is_ev(p->s + key_off + 1, key_end - key_off - 2))
				p->has_ev = p->i < p->n && p->s[p->i] == '"';
		}
		if (jp_value(p, &kid))
			return -1;
		if (p->d) {
			struct jval *k = &p->d->nodes[kid];
			k->key = key;
			k->keylen = keylen;
			if (last < 0)
				p->d->nodes[idx].kid = kid;
			else
				p->d->nodes[last].next = kid;
		}
		last = kid;
		count++;
		jp_ws(p);
		if (p->i >= p->n)
			return jp_fail(p, is_obj ? "unterminated object" : "unterminated array");
		if (p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (p->s[p->i] == (is_obj ? '}' : ']')) {
			p->i++;
			break;
		}
		return jp_fail(p, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
	if (p->d)
		p->d->nodes[idx].n = count;
	return 0;
}

static int jp_value(struct jp *p, int32_t *out)
{
	int32_t idx;
	int rc;
	char c;

	jp_ws(p);
	if (p->i >= p->n)
		return jp_fail(p, "unexpected end of input");
	c = p->s[p->i];
	switch (c) {
	case '{': case '[':
		if (++p->depth > p->max_depth) {
			p->err_st = STATUS_LIMIT;
			if (!p->err) {
				p->err = "nesting too deep";
				p->err_off = p->i;
			}
			return -1;
		}
		if ((idx = jp_node(p, c == '{' ? JT_OBJ : JT_ARR)) < 0)
			return -1;
		rc = jp_container(p, idx, c == '{');
		p->depth--;
		break;
	case '"': {
		const char *s = NULL;
		uint32_t len = 0;
		if ((idx = jp_node(p, JT_STR)) < 0)
			return -1;
		rc = jp_string(p, &s, &len);
		if (!rc && p->d) {
			p->d->nodes[idx].u.s = s;
			p->d->nodes[idx].n = len;
		}
		break;
	}
	case 't':
		if ((idx = jp_node(p, JT_TRUE)) < 0)
			return -1;
		rc = jp_lit(p, "true", 4);
		break;
	case 'f':
		if ((idx = jp_node(p, JT_FALSE)) < 0)
			return -1;
		rc = jp_lit(p, "false", 5);
		break;
	case 'n':
		if ((idx = jp_node(p, JT_NULL)) < 0)
			return -1;
		rc = jp_lit(p, "null", 4);
		break;
	default:
		if (c != '-' && !isdigit_c(c))
			return jp_fail(p, "unexpected character");
		if ((idx = jp_node(p, JT_INT)) < 0)
			return -1;
		rc = jp_number(p, idx);
		break;
	}
	*out = idx;
	return rc;
}

struct jdoc *jdoc_new(size_t max_len)
{
	struct jdoc *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->max_len = max_len ? max_len : 1;
	d->root = -1;
	d->max_depth = JDOC_MAX_DEPTH;
	return d;
}

void jdoc_set_keep_surrogates(struct jdoc *d, int keep)
{
	d->keep_surrogates = keep != 0;
}

void jdoc_set_max_depth(struct jdoc *d, unsigned depth)
{
	d->max_depth = depth < 1 ? 1 : depth > JDOC_DEPTH_LIMIT ? JDOC_DEPTH_LIMIT : depth;
}

void jdoc_free(struct jdoc *d)
{
	if (!d)
		return;
	free(d->nodes);
	free(d->strs);
	free(d);
}

enum status jdoc_parse(struct jdoc *d, const char *s, size_t n, struct status_info *si)
{
	struct jp p;
	int32_t root;

	d->n_nodes = 0;
	d->root = -1;
	if (n > d->max_len)
		return status_set_at(si, STATUS_LIMIT, NULL, si ? si->line : 0, (long)d->max_len + 1,
				     "line longer than %zu bytes", d->max_len);
	if (ALLOC_GROW(d->strs, n + 1, d->cap_strs) < 0)
		return status_set(si, STATUS_NOMEM, "out of memory");
	memset(&p, 0, sizeof(p));
	p.s = s;
	p.n = n;
	p.d = d;
	p.sp = d->strs;
	p.max_depth = d->max_depth;
	p.keep_surrogates = d->keep_surrogates;
	if (jp_value(&p, &root) == 0) {
		jp_ws(&p);
		if (p.i < p.n)
			jp_fail(&p, "trailing characters after the value");
	}
	if (p.err) {
		if (si) {
			si->byte = (long)p.err_off + 1;
			if (p.err_st == STATUS_LIMIT && !strcmp(p.err, "nesting too deep"))
				snprintf(si->msg, sizeof(si->msg), "nesting deeper than %u at byte %zu",
					 p.max_depth, p.err_off + 1);
			else
				snprintf(si->msg, sizeof(si->msg), "%s at byte %zu", p.err, p.err_off + 1);
		}
		return p.err_st;
	}
	d->root = root;
	return STATUS_OK;
}

const struct jval *jdoc_root(const struct jdoc *d)
{
	return d->root < 0 ? NULL : &d->nodes[d->root];
}

const struct jval *jdoc_kid(const struct jdoc *d, const struct jval *v)
{
	return v->kid < 0 ? NULL : &d->nodes[v->kid];
}

const struct jval *jdoc_next(const struct jdoc *d, const struct jval *v)
{
	return v->next < 0 ? NULL : &d->nodes[v->next];
}

const struct jval *jdoc_get(const struct jdoc *d, const struct jval *obj, const char *key)
{
	const struct jval *k, *found = NULL;
	size_t len = strlen(key);

	if (!obj || obj->type != JT_OBJ)
		return NULL;
	for (k = jdoc_kid(d, obj); k; k = jdoc_next(d, k))
		if (k->keylen == len && !memcmp(k->key, key, len))
			found = k;
	return found;
}

int jdoc_str_is(const struct jval *v, const char *z, size_t n)
{
	return v && v->type == JT_STR && v->n == n && !memcmp(v->u.s, z, n);
}

const char *jdoc_typename(const struct jval *v)
{
	static const char *const names[] = {
		"null", "boolean", "boolean", "integer", "number", "string", "array", "object"
	};
	if (!v)
		return "missing";
	return names[v->type];
}

int jdoc_check(const char *s, size_t n, struct jdoc_check *out)
{
	struct jp p;
	int32_t root;

	memset(&p, 0, sizeof(p));
	p.s = s;
	p.n = n;
	p.max_depth = JDOC_MAX_DEPTH;
	if (out)
		out->has_ev = 0;
	jp_ws(&p);
	if (p.i >= p.n || p.s[p.i] != '{')
		return -1;
	if (jp_value(&p, &root))
		return -1;
	jp_ws(&p);
	if (p.i < p.n)
		return -1;
	if (out)
		out->has_ev = p.has_ev;
	return 0;
}

/* --- the scanner ---------------------------------------------------------- */

/*
 * Word-at-a-time helpers. The scanner may read up to 64 bytes past the
 * position it looks at; the caller guarantees a NUL at s[n] and
 * JDOC_SCAN_PAD readable bytes after it, and every fast path stops on that
 * NUL because it is neither a digit, a quote nor a separator.
 */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define JDOC_SWAR 1
#else
#define JDOC_SWAR 0
#endif

static inline uint64_t js_load64(const char *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

#if JDOC_SWAR
/* The number of leading ASCII digits in the 8 bytes of w (first byte lowest). */
static inline unsigned js_digits8(uint64_t w)
{
	uint64_t m = ((w + 0x4646464646464646ull) | (w - 0x3030303030303030ull)) &
		     0x8080808080808080ull;

	return m ? (unsigned)__builtin_ctzll(m) >> 3 : 8;
}

/* The value of 8 ASCII digits (or zero bytes standing for leading zeros). */
static inline uint64_t js_eight_digits(uint64_t w)
{
	w = ((w & 0x0F0F0F0F0F0F0F0Full) * 2561) >> 8;
	w = ((w & 0x00FF00FF00FF00FFull) * 6553601) >> 16;
	return ((w & 0x0000FFFF0000FFFFull) * 42949672960001ull) >> 32;
}
#endif

/* Literals, compared as words (the compiler turns these into one or two loads). */
#define JS_IS_NULL(p)  (!memcmp((p), "null", 4))
#define JS_IS_TRUE(p)  (!memcmp((p), "true", 4))
#define JS_IS_FALSE(p) (!memcmp((p), "false", 5))

/* The scanner reads one line: a newline ends it, even where whitespace may stand. */
static inline const char *js_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

/* Skips whitespace only where there is some: compact JSON has none. */
#define JS_WS(p) do { if ((unsigned char)*(p) <= ' ') (p) = js_ws(p); } while (0)

/*
 * An integer literal at p within int64: its value in *out and the byte after
 * it, or NULL for anything else (the tree reads it as a number, or rejects it).
 */
static inline __attribute__((always_inline)) const char *js_int(const char *p, int64_t *out)
{
	int neg = *p == '-';
	uint64_t mag;
	unsigned k;

	p += neg;
#if JDOC_SWAR
	{
		uint64_t w = js_load64(p);
		k = js_digits8(w);
		if (k == 0)
			return NULL;
		if (k < 8) {
			if (k > 1 && *p == '0')
				return NULL;
			mag = js_eight_digits(w << (64 - 8 * k));
			p += k;
			goto tail;
		}
	}
#endif
	if (*p < '0' || *p > '9')
		return NULL;
	if (*p == '0') {
		p++;
		if (*p >= '0' && *p <= '9')
			return NULL;
		mag = 0;
	} else {
		mag = 0;
		for (k = 0; *p >= '0' && *p <= '9'; k++, p++) {
			unsigned d = (unsigned)(*p - '0');
			if (k >= 19 && mag > (UINT64_MAX - d) / 10)
				return NULL;
			mag = mag * 10 + d;
		}
	}
#if JDOC_SWAR
tail:
#endif
	if (*p == '.' || *p == 'e' || *p == 'E')
		return NULL;
	if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
		return NULL;
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return p;
}

/*
 * The end of a string whose opening quote is at p: the first '"', '\\' or
 * control byte after it.
 */
static inline __attribute__((always_inline)) const char *js_str_stop(const char *q)
{
#if defined(__SSE2__)
	const __m128i quote = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\');
	const __m128i ctl = _mm_set1_epi8(0x1f);

	for (;; q += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
		__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bs)),
					   _mm_cmpeq_epi8(_mm_subs_epu8(x, ctl), _mm_setzero_si128()));
		unsigned m = (unsigned)_mm_movemask_epi8(hit);
		if (m)
			return q + __builtin_ctz(m);
	}
#else
	while (*q != '"' && *q != '\\' && (unsigned char)*q >= 0x20)
		q++;
	return q;
#endif
}

/* js_str_stop within the 16 bytes at q only: NULL when none of them stops a string. */
static inline __attribute__((always_inline)) const char *js_str_stop16(const char *q)
{
#if defined(__SSE2__)
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)q);
	__m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('"')),
						_mm_cmpeq_epi8(x, _mm_set1_epi8('\\'))),
				   _mm_cmpeq_epi8(_mm_subs_epu8(x, _mm_set1_epi8(0x1f)),
						  _mm_setzero_si128()));
	unsigned m = (unsigned)_mm_movemask_epi8(hit);

	return m ? q + __builtin_ctz(m) : NULL;
#else
	int i;

	for (i = 0; i < 16; i++)
		if (q[i] == '"' || q[i] == '\\' || (unsigned char)q[i] < 0x20)
			return q + i;
	return NULL;
#endif
}

static int jdoc_simd_allowed = 1;

void jdoc_simd(int allow)
{
	jdoc_simd_allowed = allow != 0;
}

int jdoc_simd_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
	return jdoc_simd_allowed && __builtin_cpu_supports("avx2");
#else
	return 0;
#endif
}

void jdoc_scan_init(struct jdoc_scan *sc, const char *s, size_t n, unsigned max_depth,
		    char *arena, size_t arena_len)
{
	sc->s = s;
	sc->p = s;
	sc->end = s + n;
	sc->depth = 0;
	sc->max_depth = max_depth < 1 ? 1 : max_depth > JDOC_DEPTH_LIMIT ? JDOC_DEPTH_LIMIT : max_depth;
	sc->first = 0;
	sc->arena = arena;
	sc->arena_end = arena + arena_len;
}

/* The grammar functions of the tree, positioned where the scan is. */
static void js_jp(const struct jdoc_scan *sc, struct jp *p, char *sp)
{
	memset(p, 0, sizeof(*p));
	p->s = sc->s;
	p->n = (size_t)(sc->end - sc->s);
	p->i = (size_t)(sc->p - sc->s);
	p->sp = sp;
	p->depth = sc->depth;
	p->max_depth = sc->max_depth;
	p->keep_surrogates = 1;
	p->one_line = 1;
}

int jdoc_scan_object(struct jdoc_scan *sc)
{
	const char *p = sc->p;

	JS_WS(p);
	if (*p != '{' || sc->depth + 1 > sc->max_depth)
		return -1;
	sc->depth++;
	sc->first = 1;
	sc->p = p + 1;
	return 1;
}

/*
 * What comes before an object's member or an array's element: the closing
 * byte (0: the container is done, left behind), or, after the first, a ','
 * (1, *pp past it and its whitespace); -1 for anything else.
 */
static inline __attribute__((always_inline)) int js_next(struct jdoc_scan *sc, const char **pp, char close)
{
	const char *p = *pp;

	JS_WS(p);
	if (*p == close) {
		sc->p = p + 1;
		sc->depth--;
		sc->first = 0;
		return 0;
	}
	if (!sc->first) {
		if (*p != ',')
			return -1;
		p++;
		JS_WS(p);
	}
	*pp = p;
	return 1;
}

int jdoc_scan_key(struct jdoc_scan *sc, const char **key, size_t *len)
{
	const char *p = sc->p, *q;
	int rc = js_next(sc, &p, '}');

	if (rc <= 0)
		return rc;
	if (*p != '"')
		return -1;
	q = js_str_stop(p + 1);
	if (*q != '"')
		return -1;    /* an escape in the name (or bad input): the tree decides */
	*key = p + 1;
	*len = (size_t)(q - p - 1);
	p = q + 1;
	JS_WS(p);
	if (*p != ':')
		return -1;
	p++;
	JS_WS(p);
	sc->first = 0;
	sc->p = p;
	return 1;
}

enum jtype jdoc_scan_peek(const struct jdoc_scan *sc)
{
	const char *p = sc->p;

	JS_WS(p);
	switch (*p) {
	case '{': return JT_OBJ;
	case '[': return JT_ARR;
	case '"': return JT_STR;
	case 'n': return JT_NULL;
	case 't': return JT_TRUE;
	case 'f': return JT_FALSE;
	default: return JT_REAL;
	}
}

int jdoc_scan_array(struct jdoc_scan *sc)
{
	const char *p = sc->p;

	JS_WS(p);
	if (*p != '[' || sc->depth + 1 > sc->max_depth)
		return -1;
	sc->depth++;
	sc->first = 1;
	sc->p = p + 1;
	return 1;
}

int jdoc_scan_elem(struct jdoc_scan *sc)
{
	const char *p = sc->p;
	int rc = js_next(sc, &p, ']');

	if (rc <= 0)
		return rc;
	sc->first = 0;
	sc->p = p;
	return 1;
}

void jdoc_scan_name_init(struct jdoc_scan_name *nm, const char *name, size_t n, int first)
{
	unsigned char text[24];
	size_t len = 0, i;

	memset(nm, 0, sizeof(*nm));
	if (n > 20 || (first ? n + 3 : n + 4) > sizeof(text))
		return;   /* len 0: never matches */
	if (!first)
		text[len++] = ',';
	text[len++] = '"';
	memcpy(text + len, name, n);
	len += n;
	text[len++] = '"';
	text[len++] = ':';
	for (i = 0; i < len; i++) {
		nm->w[i / 8] |= (uint64_t)text[i] << (8 * (i % 8));
		nm->m[i / 8] |= (uint64_t)0xFF << (8 * (i % 8));
	}
	nm->len = (uint8_t)len;
}

int jdoc_scan_key_is(struct jdoc_scan *sc, const struct jdoc_scan_name *nm)
{
	const char *p = sc->p;

	if (!JDOC_SWAR)
		return 0;   /* the words are laid out little-endian */
	if (!nm->len || (((js_load64(p) ^ nm->w[0]) & nm->m[0]) |
			 ((js_load64(p + 8) ^ nm->w[1]) & nm->m[1]) |
			 ((js_load64(p + 16) ^ nm->w[2]) & nm->m[2])))
		return 0;
	p += nm->len;
	JS_WS(p);
	sc->first = 0;
	sc->p = p;
	return 1;
}

int jdoc_scan_end(struct jdoc_scan *sc)
{
	const char *p = sc->p;

	JS_WS(p);
	return p == sc->end && sc->depth == 0 ? 1 : -1;
}

int jdoc_scan_end_line(struct jdoc_scan *sc, size_t *len)
{
	const char *p = sc->p;

	JS_WS(p);
	if (sc->depth || p > sc->end || (p < sc->end && *p != '\n'))
		return -1;
	*len = (size_t)(p - sc->s);
	return 1;
}

int jdoc_scan_skip(struct jdoc_scan *sc)
{
	struct jp p;
	int32_t idx;
	uint32_t n;

	/* the common unknown member is an integer array: take the fast road first */
	if (*sc->p == '[' && jdoc_scan_int_array(sc, NULL, SIZE_MAX, &n) == 1)
		return 1;
	js_jp(sc, &p, NULL);
	if (jp_value(&p, &idx))
		return -1;
	sc->p = sc->s + p.i;
	return 1;
}

int jdoc_scan_int(struct jdoc_scan *sc, int64_t *out)
{
	const char *p = sc->p;

	if (JS_IS_NULL(p)) {
		sc->p = p + 4;
		return 0;
	}
	if (!(p = js_int(p, out)))
		return -1;
	sc->p = p;
	return 1;
}

int jdoc_scan_bool(struct jdoc_scan *sc, int *out)
{
	const char *p = sc->p;

	if (JS_IS_TRUE(p)) {
		*out = 1;
		sc->p = p + 4;
		return 1;
	}
	if (JS_IS_NULL(p)) {
		sc->p = p + 4;
		return 0;
	}
	if (JS_IS_FALSE(p)) {
		*out = 0;
		sc->p = p + 5;
		return 1;
	}
	return -1;
}

int jdoc_scan_number(struct jdoc_scan *sc, double *out)
{
	const char *p = sc->p;
	int64_t i;
	struct jp jp;
	int neg, is_int, overflow;
	uint64_t mag;

	if (JS_IS_NULL(p)) {
		sc->p = p + 4;
		return 0;
	}
	if (*p != '-' && (*p < '0' || *p > '9'))
		return -1;
	js_jp(sc, &jp, NULL);
	if (jp_number_lit(&jp, &neg, &mag, &is_int, &overflow))
		return -1;
	if (out) {
		if (jp_number_int64(neg, mag, is_int, overflow, &i)) {
			*out = (double)i;
		} else {
			/* strtod as the tree does, on a terminated copy in the arena */
			size_t len = jp.i - (size_t)(p - sc->s);
			if ((size_t)(sc->arena_end - sc->arena) < len + 1)
				return -1;
			memcpy(sc->arena, p, len);
			sc->arena[len] = '\0';
			*out = strtod(sc->arena, NULL);
		}
	}
	sc->p = sc->s + jp.i;
	return 1;
}

/* A string at p (on its quote) into the arena: its start, length and the byte after it. */
static inline const char *js_str(struct jdoc_scan *sc, const char *p, const char **out,
				 uint32_t *len)
{
	const char *q = js_str_stop(p + 1);
	size_t n = (size_t)(q - p - 1);
	char *a = sc->arena;

	if (*q == '"') {
		if ((size_t)(sc->arena_end - a) < n + 1)
			return NULL;
		memcpy(a, p + 1, n);
		a[n] = '\0';
		sc->arena = a + n + 1;
		*out = a;
		*len = (uint32_t)n;
		return q + 1;
	}
	{
		/* escapes: the tree's own unescaping, into the arena */
		struct jp jp;
		const char *z = NULL;
		uint32_t zn = 0;
		const char *save = sc->p;
		if ((size_t)(sc->arena_end - a) < (size_t)(sc->end - p))
			return NULL;
		sc->p = p;
		js_jp(sc, &jp, a);
		sc->p = save;
		if (jp_string(&jp, &z, &zn))
			return NULL;
		sc->arena = jp.sp;
		*out = z;
		*len = zn;
		return sc->s + jp.i;
	}
}

int jdoc_scan_str_inplace(struct jdoc_scan *sc, const char **out, uint32_t *len)
{
	const char *p = sc->p, *q;

	if (*p != '"' || *(q = js_str_stop(p + 1)) != '"')
		return -1;
	*out = p + 1;
	*len = (uint32_t)(q - p - 1);
	sc->p = q + 1;
	return 1;
}

int jdoc_scan_str(struct jdoc_scan *sc, const char **out, uint32_t *len)
{
	const char *p = sc->p;

	if (JS_IS_NULL(p)) {
		sc->p = p + 4;
		return 0;
	}
	if (*p != '"' || !(p = js_str(sc, p, out, len)))
		return -1;
	sc->p = p;
	return 1;
}

/*
 * The shared frame of the array readers: '[' (or null), entries read by ENTRY
 * (which advances p or leaves with -1), ',' between them, ']'.
 */
#define JS_ARRAY(sc, n, ENTRY) JS_ARRAY_RUN(sc, n, (void)0, ENTRY)

/*
 * JS_ARRAY whose RUN (after the '[', p on the first entry) may take a run
 * of entries at once: it adds them to k and leaves p on the entry after
 * them (after their last ',').
 */
#define JS_ARRAY_RUN(sc, n, RUN, ENTRY) do {                               \
	const char *p = (sc)->p;                                           \
	uint32_t k = 0;                                                    \
	if (*p != '[') {                                                   \
		if (JS_IS_NULL(p)) {                             \
			(sc)->p = p + 4;                                   \
			*(n) = 0;                                          \
			return 0;                                          \
		}                                                          \
		return -1;                                                 \
	}                                                                  \
	if ((sc)->depth + 1 > (sc)->max_depth)                             \
		return -1;                                                 \
	p++;                                                               \
	JS_WS(p);                                                          \
	if (*p != ']') {                                                   \
		RUN;                                                       \
		for (;;) {                                                 \
			if (k >= cap)                                      \
				return -1;                                 \
			ENTRY;                                             \
			k++;                                               \
			JS_WS(p);                                          \
			if (*p == ',') {                                   \
				p++;                                       \
				JS_WS(p);                                  \
				continue;                                  \
			}                                                  \
			if (*p != ']')                                     \
				return -1;                                 \
			break;                                             \
		}                                                          \
	}                                                                  \
	(sc)->p = p + 1;                                                   \
	*(n) = k;                                                          \
	return 1;                                                          \
} while (0)

#if defined(__SSE2__) && JDOC_SWAR
/* Byte classes of the 64 bytes at p, one bit per byte. */
struct js_classes {
	uint64_t digit, minus, comma, zero, other;   /* other: none of digit, '-', ',' */
};

static inline __attribute__((always_inline)) void js_classify64(const char *p,
								struct js_classes *k)
{
	const __m128i c = _mm_set1_epi8(','), minus = _mm_set1_epi8('-');
	const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
	uint64_t dg = 0, mi = 0, cm = 0, ze = 0;
	int i;

	for (i = 0; i < 4; i++) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
		__m128i t = _mm_sub_epi8(x, zero);
		__m128i dig = _mm_cmpeq_epi8(_mm_min_epu8(t, nine), t);
		dg |= (uint64_t)(unsigned)_mm_movemask_epi8(dig) << (16 * i);
		mi |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, minus)) << (16 * i);
		cm |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, c)) << (16 * i);
		ze |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, zero)) << (16 * i);
	}
	k->digit = dg;
	k->minus = mi;
	k->comma = cm;
	k->zero = ze;
	k->other = ~(dg | mi | cm);
}

/*
 * The value of the entry s[0..len), already known to be an optional '-' and
 * 1 to 18 digits without a leading zero: no check left but none needed.
 */
static inline __attribute__((always_inline)) int64_t js_entry_value(const char *s, size_t len)
{
	size_t neg = s[0] == '-', d = len - neg;
	const char *q = s + neg;
	uint64_t mag;

	if (__builtin_expect(d <= 8, 1)) {
		mag = js_eight_digits(js_load64(q) << (64 - 8 * d));
	} else if (d <= 16) {
		/* 9 to 16 digits: the first d - 8, then the last 8 */
		mag = js_eight_digits(js_load64(q) << (64 - 8 * (d - 8))) * 100000000u +
		      js_eight_digits(js_load64(q + d - 8));
	} else {
		size_t i;
		/* 17 or 18 digits: below 10^18, no overflow */
		for (mag = 0, i = 0; i < d; i++)
			mag = mag * 10 + (uint64_t)(q[i] - '0');
	}
	/* branch-free: signs vary from entry to entry */
	return (int64_t)((mag ^ (0 - (uint64_t)neg)) + neg);
}

/* What a block of an integer array carries over to the next one. */
struct js_carry {
	uint64_t in_start, in_minus, in_zero;   /* bit 0 of the next block starts an entry / follows '-' / follows a leading 0 */
	unsigned run;                           /* digits ending the block */
};

/*
 * The grammar of every entry of one 64-byte block, checked on the whole
 * block with masks: a '-' only first and before a digit, no empty entry, no
 * leading zero, no run of 19 digits or more (only the exact path may judge
 * those). *comma gets the separators before the first stop, *stop1 that stop
 * (a ']' or 0 when the array goes on). 0 to go on, -1 to decline.
 */
static inline __attribute__((always_inline)) int js_block_check(const char *base,
								 struct js_carry *cy,
								 uint64_t *comma, uint64_t *stop1,
								 const struct js_classes *pre)
{
	struct js_classes k;
	uint64_t s1, before, upto, starts, dstarts, after_minus, bad, runs;

	if (pre)
		k = *pre;
	else
		js_classify64(base, &k);
	s1 = k.other & (0 - k.other);
	before = s1 ? s1 - 1 : ~0ull;
	upto = before | s1;
	k.digit &= before;
	k.minus &= before;
	k.comma &= before;
	k.zero &= before;
	starts = ((k.comma << 1) | cy->in_start) & upto;
	after_minus = ((k.minus << 1) | cy->in_minus) & upto;
	dstarts = (starts & k.digit) | after_minus;
	bad = (k.minus & ~starts) | (after_minus & ~k.digit) | (starts & ~(k.digit | k.minus)) |
	      ((((k.zero & dstarts) << 1) | cy->in_zero) & k.digit);
	runs = k.digit;
	runs &= runs >> 1;
	runs &= runs >> 2;
	runs &= runs >> 4;
	runs &= runs >> 8;
	runs &= runs >> 3;
	if (bad | runs ||
	    cy->run + (unsigned)__builtin_ctzll(~k.digit | s1 | (1ull << 63)) >= 19)
		return -1;
	if (s1 && base[__builtin_ctzll(s1)] != ']')
		return -1;
	cy->in_start = k.comma >> 63;
	cy->in_minus = k.minus >> 63;
	cy->in_zero = (k.zero & dstarts) >> 63;
	/* a block of 64 digits is a run of 19 already: ~k.digit is never 0 here */
	cy->run = k.digit >> 63 ? cy->run * (k.digit == ~0ull) + (unsigned)__builtin_clzll(~k.digit)
				: 0;
	*comma = k.comma;
	*stop1 = s1;
	return 0;
}

/*
 * An integer array from p (just after '['), 64 bytes at a time: the entries
 * are checked by js_block_check, and values are converted only when dst
 * wants them (a token array is validated without a single conversion). 1
 * when the array was read to its ']' with nothing but digits, '-' and ',';
 * 0 for anything else (spaces, a bad or long entry, the cap): the scalar
 * reader then decides from the start.
 */
static int js_int_array_blocks(struct jdoc_scan *sc, const char *p, int64_t *dst, size_t cap,
			       uint32_t *n)
{
	const char *base = p, *start = p;
	struct js_carry cy = { 1, 0, 0, 0 };
	uint64_t count = 0, comma, stop1;

	for (;; base += 64) {
		if (js_block_check(base, &cy, &comma, &stop1, NULL))
			return 0;
		count += (uint64_t)__builtin_popcountll(comma) + (stop1 != 0);
		if (count > cap)
			return 0;
		if (dst) {
			uint64_t c = comma;
			for (; c; c &= c - 1) {
				const char *e = base + __builtin_ctzll(c);
				*dst++ = js_entry_value(start, (size_t)(e - start));
				start = e + 1;
			}
			if (stop1)
				*dst = js_entry_value(start, (size_t)(base + __builtin_ctzll(stop1) - start));
		}
		if (stop1) {
			sc->p = base + __builtin_ctzll(stop1) + 1;
			*n = (uint32_t)count;
			return 1;
		}
		if (comma)
			start = base + 64 - __builtin_clzll(comma);
	}
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define JDOC_AVX2 1

/* js_classify64 with two 32-byte loads. */
__attribute__((target("avx2"))) static inline void js_classify64_avx2(const char *p,
								    struct js_classes *k)
{
	const __m256i c = _mm256_set1_epi8(','), minus = _mm256_set1_epi8('-');
	const __m256i zero = _mm256_set1_epi8('0'), nine = _mm256_set1_epi8(9);
	uint64_t dg = 0, mi = 0, cm = 0, ze = 0;
	int i;

	for (i = 0; i < 2; i++) {
		__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * i));
		__m256i t = _mm256_sub_epi8(x, zero);
		__m256i dig = _mm256_cmpeq_epi8(_mm256_min_epu8(t, nine), t);
		dg |= (uint64_t)(uint32_t)_mm256_movemask_epi8(dig) << (32 * i);
		mi |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, minus)) << (32 * i);
		cm |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, c)) << (32 * i);
		ze |= (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, zero)) << (32 * i);
	}
	k->digit = dg;
	k->minus = mi;
	k->comma = cm;
	k->zero = ze;
	k->other = ~(dg | mi | cm);
}

/*
 * Four entries at s[0..3] (each ends at a ',' or ']' within its first 8
 * bytes, else 0 is returned and nothing written) into dst[0..3]. In each
 * 64-bit lane: the bytes before the separator are kept (a prefix OR of the
 * separator bytes), counted (sad), '-' and padding become 0 with a saturating
 * subtract, the digits are moved to the top of the lane, and pairs, quads and
 * halves are combined with maddubs, madd and mul (js_eight_digits in SIMD).
 */
__attribute__((target("avx2"))) static inline int js_convert4_avx2(const char *s0, const char *s1,
								   const char *s2, const char *s3,
								   int64_t *dst)
{
	const __m256i comma = _mm256_set1_epi8(','), close = _mm256_set1_epi8(']');
	const __m256i zero = _mm256_set1_epi8('0'), ones = _mm256_set1_epi8(1);
	const __m256i w10 = _mm256_set1_epi16(0x010A);       /* bytes 10, 1 */
	const __m256i w100 = _mm256_set1_epi32(0x00010064);  /* words 100, 1 */
	const __m256i w1e4 = _mm256_set1_epi64x(10000), minus = _mm256_set1_epi64x('-');
	const __m256i byte0 = _mm256_set1_epi64x(0xFF), all = _mm256_set1_epi64x(-1);
	__m256i w = _mm256_set_epi64x((long long)js_load64(s3), (long long)js_load64(s2),
				      (long long)js_load64(s1), (long long)js_load64(s0));
	__m256i t = _mm256_or_si256(_mm256_cmpeq_epi8(w, comma), _mm256_cmpeq_epi8(w, close));
	__m256i keep, len, neg, v;

	t = _mm256_or_si256(t, _mm256_slli_epi64(t, 8));
	t = _mm256_or_si256(t, _mm256_slli_epi64(t, 16));
	t = _mm256_or_si256(t, _mm256_slli_epi64(t, 32));
	if (_mm256_movemask_epi8(_mm256_cmpeq_epi64(t, _mm256_setzero_si256())))
		return 0;   /* an entry of 8 bytes or more */
	keep = _mm256_xor_si256(t, all);
	len = _mm256_sad_epu8(_mm256_and_si256(keep, ones), _mm256_setzero_si256());
	neg = _mm256_cmpeq_epi64(_mm256_and_si256(w, byte0), minus);
	v = _mm256_subs_epu8(_mm256_and_si256(w, keep), zero);
	v = _mm256_sllv_epi64(v, _mm256_sub_epi64(_mm256_set1_epi64x(64), _mm256_slli_epi64(len, 3)));
	v = _mm256_maddubs_epi16(v, w10);
	v = _mm256_madd_epi16(v, w100);
	v = _mm256_add_epi64(_mm256_mul_epu32(v, w1e4), _mm256_srli_epi64(v, 32));
	v = _mm256_sub_epi64(_mm256_xor_si256(v, neg), neg);
	_mm256_storeu_si256((__m256i *)(void *)dst, v);
	return 1;
}

/* The entries of one block (separators comma, then stop1) from start into dst. */
__attribute__((target("avx2"))) static int64_t *js_convert_avx2(const char *base, const char *start,
								uint64_t comma, uint64_t stop1,
								int64_t *dst, const char **next)
{
	uint64_t c = comma | stop1;
	unsigned cnt = (unsigned)__builtin_popcountll(c);

	/* four separators at a time: the entry starts come straight from the mask */
	for (; cnt >= 4; cnt -= 4, dst += 4) {
		const char *s1, *s2, *s3, *e;
		s1 = base + __builtin_ctzll(c) + 1;
		c &= c - 1;
		s2 = base + __builtin_ctzll(c) + 1;
		c &= c - 1;
		s3 = base + __builtin_ctzll(c) + 1;
		c &= c - 1;
		e = base + __builtin_ctzll(c);
		c &= c - 1;
		if (!js_convert4_avx2(start, s1, s2, s3, dst)) {
			dst[0] = js_entry_value(start, (size_t)(s1 - 1 - start));
			dst[1] = js_entry_value(s1, (size_t)(s2 - 1 - s1));
			dst[2] = js_entry_value(s2, (size_t)(s3 - 1 - s2));
			dst[3] = js_entry_value(s3, (size_t)(e - s3));
		}
		start = e + 1;
	}
	for (; c; c &= c - 1) {
		const char *e = base + __builtin_ctzll(c);
		*dst++ = js_entry_value(start, (size_t)(e - start));
		start = e + 1;
	}
	*next = start;
	return dst;
}

__attribute__((target("avx2"))) static int js_int_array_blocks_avx2(struct jdoc_scan *sc,
								    const char *p, int64_t *dst,
								    size_t cap, uint32_t *n)
{
	const char *base = p, *start = p;
	struct js_carry cy = { 1, 0, 0, 0 };
	uint64_t count = 0, comma, stop1;

	for (;; base += 64) {
		struct js_classes k;
		js_classify64_avx2(base, &k);
		if (js_block_check(base, &cy, &comma, &stop1, &k))
			return 0;
		count += (uint64_t)__builtin_popcountll(comma) + (stop1 != 0);
		if (count > cap)
			return 0;
		if (dst)
			dst = js_convert_avx2(base, start, comma, stop1, dst, &start);
		else if (comma)
			start = base + 64 - __builtin_clzll(comma);
		if (stop1) {
			sc->p = base + __builtin_ctzll(stop1) + 1;
			*n = (uint32_t)count;
			return 1;
		}
	}
}
#else
#define JDOC_AVX2 0
#endif
#endif

int jdoc_scan_int_array(struct jdoc_scan *sc, int64_t *dst, size_t cap, uint32_t *n)
{
	int64_t v;

	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
#if defined(__SSE2__) && JDOC_SWAR
	if (sc->p[0] == '[' && sc->depth + 1 <= sc->max_depth && sc->p[1] != ']' &&
	    (unsigned char)sc->p[1] > ' ') {
#if JDOC_AVX2
		if (jdoc_simd_avx2()) {
			if (js_int_array_blocks_avx2(sc, sc->p + 1, dst, cap, n))
				return 1;
		} else
#endif
		if (js_int_array_blocks(sc, sc->p + 1, dst, cap, n))
			return 1;
	}
#endif
	JS_ARRAY(sc, n, {
		if (!(p = js_int(p, &v)))
			return -1;
		if (dst)
			dst[k] = v;
	});
}

/*
 * The length of the prefix of the 32 bytes at p that repeats pat (a period
 * of 5 or 6 bytes laid out over 32), in whole periods: the entries of a run
 * of `null,` or `false,` read with two compares. Within the line and its
 * padding: the caller is inside the array, before its NUL.
 */
static inline __attribute__((always_inline)) unsigned js_run32(const char *p, const char *pat,
							    unsigned period)
{
#if defined(__SSE2__)
	__m128i a = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)p),
				   _mm_loadu_si128((const __m128i *)(const void *)pat));
	__m128i b = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)(p + 16)),
				   _mm_loadu_si128((const __m128i *)(const void *)(pat + 16)));
	uint32_t m = (uint32_t)_mm_movemask_epi8(a) | (uint32_t)_mm_movemask_epi8(b) << 16;

	return (unsigned)__builtin_ctzll(~(uint64_t)m) / period;
#else
	unsigned i = 0;

	while (i < 32 && p[i] == pat[i])
		i++;
	return i / period;
#endif
}

static const char js_nulls[33] = "null,null,null,null,null,null,nu";
static const char js_falses[33] = "false,false,false,false,false,fa";

int jdoc_scan_bool_array(struct jdoc_scan *sc, uint8_t *dst, size_t cap, uint32_t *n)
{
	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	/*
	 * A run of `false,` (the common taken array) five entries at a time,
	 * what follows it (the last entry included) by the reader entry by
	 * entry. Only with jdoc_simd on, so the tests hold both readings
	 * together.
	 */
	JS_ARRAY_RUN(sc, n, {
		uint32_t r;
		while (jdoc_simd_allowed && (r = js_run32(p, js_falses, 6)) > 0 && k + r <= cap) {
			if (dst)
				memset(dst + k, 0, r);
			k += r;
			p += 6 * r;
			JS_WS(p);
			if (r < 5)
				break;
		}
	}, {
		uint8_t b;
		if (JS_IS_TRUE(p)) {
			b = 1;
			p += 4;
		} else if (JS_IS_FALSE(p)) {
			b = 0;
			p += 5;
		} else {
			return -1;
		}
		if (dst)
			dst[k] = b;
	});
}

int jdoc_scan_str_array(struct jdoc_scan *sc, const char **dst, uint32_t *lens, size_t cap,
			uint32_t *n)
{
	const char *p = sc->p;
	uint32_t k = 0;

	if (cap > UINT32_MAX)
		cap = UINT32_MAX;
	/*
	 * The compact form first (entries of strings without escapes and nulls,
	 * commas, no spaces), in a loop with nothing else to look at; anything
	 * else goes to the general reader below, from the start. Both readings of
	 * an entry are made at once and one is selected, with no branch on which:
	 * request id arrays mix strings and nulls slot by slot. A string stays
	 * where it is in the input.
	 */
	if (p[0] == '[' && p[1] != ']' && sc->depth + 1 <= sc->max_depth) {
		for (p++;; p++) {
			const char *q, *z;
			int is_null, is_str;
			uint32_t r;
			if (*p == 'n' && jdoc_simd_allowed && (r = js_run32(p, js_nulls, 5)) > 0 &&
			    k + r <= cap) {
				/* a run of `null,` (most slots are free), six at a time */
				if (dst) {
					uint32_t j;
					for (j = 0; j < r; j++) {
						dst[k + j] = NULL;
						lens[k + j] = 0;
					}
				}
				k += r;
				p += 5 * r - 1;   /* on the run's last ',' */
				continue;
			}
			q = js_str_stop16(p + 1);
			is_null = JS_IS_NULL(p);
			if (__builtin_expect(!q, 0))
				q = *p == '"' ? js_str_stop(p + 17) : p;   /* longer than 15 bytes */
			is_str = (*p == '"') & (*q == '"');
			if (__builtin_expect(!(is_null | is_str) || k >= cap, 0))
				break;
			z = is_str ? p + 1 : NULL;
			if (dst) {
				dst[k] = z;
				lens[k] = is_str ? (uint32_t)(q - p - 1) : 0;
			}
			k++;
			p = is_str ? q + 1 : p + 4;
			if (*p == ',')
				continue;
			if (*p == ']') {
				sc->p = p + 1;
				*n = k;
				return 1;
			}
			break;
		}
	}
	JS_ARRAY(sc, n, {
		const char *z = NULL;
		const char *q;
		uint32_t zn = 0;
		if (*p == '"' && *(q = js_str_stop(p + 1)) == '"') {
			z = p + 1;   /* no escape: it stays in the input, as above */
			zn = (uint32_t)(q - p - 1);
			p = q + 1;
		} else if (*p == '"') {
			if (!(p = js_str(sc, p, &z, &zn)))
				return -1;
		} else if (JS_IS_NULL(p)) {
			p += 4;
		} else {
			return -1;
		}
		if (dst) {
			dst[k] = z;
			lens[k] = zn;
		}
	});
}
