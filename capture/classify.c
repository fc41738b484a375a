/* classify.c - a complete log line as audit, banner or other (classify.h). */
#include "classify.h"

#include "auditline.h"

int classify_object(const char *s, size_t n, int *has_ev)
{
	return auditline_object(s, n, has_ev);
}

enum classify_kind classify_line(const char *line, size_t n, const struct banner_set *rules,
				 struct banner_scratch *sc, struct classify_result *res)
{
	size_t off = 0;

	res->kind = CLASSIFY_OTHER;
	res->obj_off = res->obj_len = 0;
	res->rule = -1;
	if (auditline_find(line, n, &off)) {
		res->kind = CLASSIFY_AUDIT;
		res->obj_off = off;
		res->obj_len = n - off;
		return res->kind;
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
