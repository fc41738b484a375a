/*
 * envlist.h - which environment variables a capture records.
 *
 * An allow-list of glob patterns (`*` any run of characters, `?` one
 * character, everything else literal; case-sensitive) decides which names
 * are recorded. Names that look secret (containing KEY, TOKEN, SECRET,
 * PASSWORD, PASSWD, CREDENTIAL or AUTH, in any case) never have their value
 * recorded, whatever the patterns say.
 *
 * The list is a fixed-size struct the caller owns: no allocation, so the
 * shim can keep one in static memory.
 */
#ifndef TTAUDIT_ENVLIST_H
#define TTAUDIT_ENVLIST_H

#include <stddef.h>

#include "status.h"

#define ENVLIST_MAX 64          /* patterns */
#define ENVLIST_TEXT_MAX 2048   /* bytes of pattern text in all */

/* Default allow-list, comma-separated (docs/capture.md). */
#define ENVLIST_DEFAULT "QWEN36_*,TT_*,VLLM_*,MESH_DEVICE,ARCH_NAME,WH_ARCH_YAML,HF_MODEL*"

struct envlist {
	size_t n;
	const char *pat[ENVLIST_MAX];   /* pointers into text, NUL-terminated */
	char text[ENVLIST_TEXT_MAX];
};

void envlist_init(struct envlist *el);
/*
 * Adds the patterns in `spec`, separated by commas, colons or whitespace.
 * STATUS_LIMIT when too many or too long (the list keeps what fitted),
 * STATUS_PARSE when a pattern has a character outside [A-Za-z0-9_*?].
 */
enum status envlist_add(struct envlist *el, const char *spec, struct status_info *si);
/* 1 when NAME[0..n) matches a pattern. */
int envlist_allows(const struct envlist *el, const char *name, size_t n);
/* 1 when NAME[0..n) looks like it holds a secret. */
int envlist_is_secret(const char *name, size_t n);
/* Glob match of s[0..n) against the NUL-terminated pattern (same rules). */
int envlist_glob(const char *pat, const char *s, size_t n);

#endif
