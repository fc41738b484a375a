#include "classify.h"

#include <string.h>

#include "jdoc.h"

enum classify_kind classify_line(const char *line, size_t n, const struct banner_set *rules,
				 struct banner_scratch *sc, struct classify_result *res)
{
	const char *brace = memchr(line, '{', n);

	res->kind = CLASSIFY_OTHER;
	res->obj_off = res->obj_len = 0;
	res->rule = -1;
	if (brace) {
		struct jdoc_check chk;
		size_t off = (size_t)(brace - line);

		if (jdoc_check(brace, n - off, &chk) == 0 && chk.has_ev) {
			res->kind = CLASSIFY_AUDIT;
			res->obj_off = off;
			res->obj_len = n - off;
			return res->kind;
		}
	}
	if (rules) {
		int r = banner_set_match(rules, line, n, sc);
		if (r >= 0) {
			res->kind = CLASSIFY_BANNER;
			res->rule = r;
		}
	}
	return res->kind;
}
