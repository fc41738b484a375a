/*
 * jdoc_gram.h - the JSON grammar jdoc's three readers share, private to
 * base/jdoc_*.c: one recursive-descent parser (jp_*) compiled into each file
 * that includes it, so that every reader accepts exactly the same texts.
 *
 * The includer says what the grammar builds with JDOC_GRAM_TREE:
 *   1  nodes of a struct jdoc (jdoc_tree.c, which defines struct jdoc and
 *      jp_node, the only allocating step, before including this file);
 *   0  nothing (jdoc_check.c, the preload shim's validator, and the scanner's
 *      fallbacks in jdoc_scan.c): there is no node code, no allocator and no
 *      strtod in what it compiles, and the shim links only jdoc_check.o
 *      (shim/module.mk checks that its objects reference no allocator).
 * Either way strings are unescaped to p->sp when it is set.
 */
#ifndef TTAUDIT_JDOC_GRAM_H
#define TTAUDIT_JDOC_GRAM_H

#ifndef JDOC_GRAM_TREE
#error "define JDOC_GRAM_TREE (0 or 1) before including jdoc_gram.h"
#endif

#include <string.h>
#if JDOC_GRAM_TREE
#include <stdlib.h>
#endif

#include "base/jdoc.h"

/* Parser state. */
struct jp {
	const char *s;
	size_t n, i;
#if JDOC_GRAM_TREE
	struct jdoc *d;      /* the tree the values go to */
#endif
	char *sp;            /* next free byte of the string arena, or NULL: do not store */
	unsigned depth, max_depth;
	int keep_surrogates;  /* lone surrogates as WTF-8, else U+FFFD */
	const char *err;     /* static message of the first error */
	size_t err_off;
	enum status err_st;
	int has_ev;          /* validation: the top-level "ev" member is a string */
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


#if JDOC_GRAM_TREE
/* A new node of type t at p->i: its index, or -1 (p->err set). In jdoc_tree.c. */
static int32_t jp_node(struct jp *p, enum jtype t);
#else
static inline int32_t jp_node(struct jp *p, enum jtype t)
{
	(void)p;
	(void)t;
	return 0;
}
#endif

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
static __attribute__((unused)) int jp_number_int64(int neg, uint64_t mag, int is_int, int overflow, int64_t *out)
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
#if JDOC_GRAM_TREE
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
#else
	(void)start;
	(void)idx;
	(void)v;
#endif
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
			if (!JDOC_GRAM_TREE && top && jp_key_is_ev(p->s + key_off + 1, key_end - key_off - 2))
				p->has_ev = p->i < p->n && p->s[p->i] == '"';
		}
		if (jp_value(p, &kid))
			return -1;
#if JDOC_GRAM_TREE
		{
			struct jval *k = &p->d->nodes[kid];
			k->key = key;
			k->keylen = keylen;
			if (last < 0)
				p->d->nodes[idx].kid = kid;
			else
				p->d->nodes[last].next = kid;
		}
#else
		(void)keylen;
#endif
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
#if JDOC_GRAM_TREE
	p->d->nodes[idx].n = count;
#else
	(void)idx;
	(void)count;
	(void)last;
#endif
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
#if JDOC_GRAM_TREE
		if (!rc) {
			p->d->nodes[idx].u.s = s;
			p->d->nodes[idx].n = len;
		}
#endif
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

#endif
