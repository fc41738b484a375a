/*
 * jdoc_tree.c - jdoc_parse: one JSON text into a tree of struct jval nodes
 * that the struct jdoc owns and reuses from line to line. The only jdoc
 * file that allocates.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/jdoc.h"

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

#define JDOC_GRAM_TREE 1
#include "base/jdoc_gram.h"

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
