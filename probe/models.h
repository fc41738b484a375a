/*
 * models.h - the one reader of an OpenAI-style model list (GET /v1/models):
 * {"data":[{"id":"name", ...}, ...]}. The readiness ladder asks it whether
 * a model is listed, the arm evidence which values a model's entry carries.
 */
#ifndef TTAUDIT_MODELS_H
#define TTAUDIT_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/jdoc.h"
#include "base/status.h"

struct models;

/*
 * Reads body[0..n) (strict JSON, integers exact). STATUS_PARSE when it is
 * not JSON (si->byte, si->msg "not JSON at byte N: ...") or holds no "data"
 * array (si->msg "not a model list (no data array)"); STATUS_NOMEM. An empty
 * list parses: models_count() is then 0. *out holds no pointer into body.
 * Free with models_free().
 */
enum status models_parse(const char *body, size_t n, struct models **out, struct status_info *si);
void models_free(struct models *m);

/* The number of entries in data[]. */
size_t models_count(const struct models *m);
/* Entry i's "id" when it is a string (NUL-terminated, valid until models_free), else NULL. */
const char *models_id(const struct models *m, size_t i);
/* Entry i's member `name` (any type), or NULL when the entry is no object or lacks it. */
const struct jval *models_field(const struct models *m, size_t i, const char *name);
/*
 * The first entry whose id is want (compared with its length), or, when
 * want is NULL, the first with a string id; -1 when there is none.
 */
long models_find(const struct models *m, const char *want);

#endif
