/*
 * models.c - GET /v1/models read once, by jdoc, for every command that asks
 * about the served models (models.h).
 */
#include "probe/models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A model list is a few entries; a server listing more is not one we read. */
#define MODELS_MAX_ENTRIES 4096

struct models {
	struct jdoc *doc;
	const struct jval **entry;   /* data[i], in order */
	size_t n_entry;
};

enum status models_parse(const char *body, size_t n, struct models **out, struct status_info *si)
{
	struct models *m = NULL;
	struct status_info tsi = { 0 };
	const struct jval *root, *data, *e;
	enum status st = STATUS_NOMEM;
	size_t i;

	*out = NULL;
	if (!(m = calloc(1, sizeof(*m))) || !(m->doc = jdoc_new(n + 1)))
		goto nomem;
	st = jdoc_parse(m->doc, body, n, &tsi);
	if (st == STATUS_NOMEM)
		goto nomem;
	if (st) {
		st = status_set_at(si, STATUS_PARSE, NULL, 0, tsi.byte, "not JSON at byte %ld: %.100s",
				   tsi.byte, tsi.msg);
		goto out;
	}
	root = jdoc_root(m->doc);
	data = jdoc_get(m->doc, root, "data");
	if (!data || data->type != JT_ARR) {
		st = status_set(si, STATUS_PARSE, "not a model list (no data array)");
		goto out;
	}
	if (data->n > MODELS_MAX_ENTRIES) {
		st = status_set(si, STATUS_LIMIT, "more than %d models listed", MODELS_MAX_ENTRIES);
		goto out;
	}
	if (data->n && !(m->entry = calloc(data->n, sizeof(*m->entry))))
		goto nomem;
	for (i = 0, e = jdoc_kid(m->doc, data); e && i < data->n; e = jdoc_next(m->doc, e))
		m->entry[i++] = e;
	m->n_entry = i;
	*out = m;
	return STATUS_OK;
nomem:
	st = status_set(si, STATUS_NOMEM, "out of memory");
out:
	models_free(m);
	return st;
}

void models_free(struct models *m)
{
	if (!m)
		return;
	jdoc_free(m->doc);
	free(m->entry);
	free(m);
}

size_t models_count(const struct models *m)
{
	return m->n_entry;
}

const struct jval *models_field(const struct models *m, size_t i, const char *name)
{
	if (i >= m->n_entry || m->entry[i]->type != JT_OBJ)
		return NULL;
	return jdoc_get(m->doc, m->entry[i], name);
}

const char *models_id(const struct models *m, size_t i)
{
	const struct jval *id = models_field(m, i, "id");

	return id && id->type == JT_STR ? id->u.s : NULL;
}

long models_find(const struct models *m, const char *want)
{
	size_t i;

	for (i = 0; i < m->n_entry; i++) {
		const struct jval *id = models_field(m, i, "id");
		if (!id || id->type != JT_STR)
			continue;
		if (!want || jdoc_str_is(id, want, strlen(want)))
			return (long)i;
	}
	return -1;
}
