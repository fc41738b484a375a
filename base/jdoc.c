#include "jdoc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jdoc {
	size_t max_len;
	struct jval *nodes;   /* grows up to max_len + 1 nodes, kept between lines */
	size_t n_nodes, cap_nodes;
	char *strs;           /* unescaped strings; sized to the input, never longer */
	size_t cap_strs;
	int32_t root;
};

/* Parser state. d == NULL: validate only (jdoc_check), nothing is stored. */
struct jp {
	const char *s;
	size_t n, i;
	struct jdoc *d;
	char *sp;            /* next free byte in d->strs */
	int depth;
	const char *err;     /* static message of the first error */
	size_t err_off;
	enum status err_st;
	int has_ev;
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
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
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
		size_t cap = d->cap_nodes ? d->cap_nodes * 2 : 256;
		struct jval *nn;
		if (cap > d->max_len + 1)
			cap = d->max_len + 1;
		if (cap <= d->n_nodes || cap > INT32_MAX) {
			p->err_st = STATUS_LIMIT;
			p->err = "too many values";
			p->err_off = p->i;
			return -1;
		}
		nn = realloc(d->nodes, cap * sizeof(*nn));
		if (!nn) {
			p->err_st = STATUS_NOMEM;
			p->err = "out of memory";
			p->err_off = p->i;
			return -1;
		}
		d->nodes = nn;
		d->cap_nodes = cap;
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
			if (cp >= 0xD800 && cp <= 0xDFFF)
				cp = 0xFFFD;   /* lone surrogate: replacement character */
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

static int jp_number(struct jp *p, int32_t idx)
{
	size_t start = p->i;
	int neg = 0, is_int = 1;
	uint64_t mag = 0;
	int overflow = 0;
	struct jval *v;

	if (p->s[p->i] == '-') {
		neg = 1;
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
	if (!p->d)
		return 0;
	v = &p->d->nodes[idx];
	if (is_int && !overflow && (neg ? mag <= (uint64_t)INT64_MAX + 1 : mag <= (uint64_t)INT64_MAX)) {
		v->type = JT_INT;
		v->u.i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
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
		if (++p->depth > JDOC_MAX_DEPTH) {
			p->err_st = STATUS_LIMIT;
			if (!p->err) {
				p->err = "nesting deeper than 64";
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
	return d;
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
	if (d->cap_strs < n + 1) {
		char *ns = realloc(d->strs, n + 1);
		if (!ns)
			return status_set(si, STATUS_NOMEM, "out of memory");
		d->strs = ns;
		d->cap_strs = n + 1;
	}
	memset(&p, 0, sizeof(p));
	p.s = s;
	p.n = n;
	p.d = d;
	p.sp = d->strs;
	if (jp_value(&p, &root) == 0) {
		jp_ws(&p);
		if (p.i < p.n)
			jp_fail(&p, "trailing characters after the value");
	}
	if (p.err) {
		if (si) {
			si->byte = (long)p.err_off + 1;
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
