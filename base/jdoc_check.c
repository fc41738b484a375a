/*
 * jdoc_check.c - validation of one JSON object without storing anything:
 * the preload shim's reader. It compiles the shared grammar with no node
 * code, so it references no allocator, no stdio and no locale (shim/module.mk
 * fails the build if it ever does).
 */
#include <string.h>

#include "base/jdoc.h"

#define JDOC_GRAM_TREE 0
#include "base/jdoc_gram.h"

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
