/*
 * envlist.h - which environment variables a capture records.
 *
 * An allow-list of glob patterns (`*` any run of characters, `?` one
 * character, everything else literal; case-sensitive) decides which names
 * are recorded. Names that look secret (a segment between '_', '-' or '.'
 * that is or ends with KEY, TOKEN, SECRET, PASSWORD, PASSWD, PASS,
 * PASSPHRASE, PAT, DSN, CREDENTIAL(S), CREDS, AUTH(ORIZATION) or COOKIE, in any case)
 * never have their value recorded, whatever the patterns say. The same
 * words name secret command-line options (--api-key, --hf-token).
 *
 * The list is a fixed-size struct the caller owns: no allocation, so the
 * shim can keep one in static memory.
 */
#ifndef TTAUDIT_ENVLIST_H
#define TTAUDIT_ENVLIST_H

#include <stddef.h>

#include "base/status.h"

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
/* 1 when NAME[0..n) looks like it holds a secret (MY_PASS, PGPASS, GITHUB_PAT; not PATH). */
int envlist_is_secret(const char *name, size_t n);
/*
 * 1 when the option arg[0..n) (its name, without "=value": "--api-key",
 * "--hf-token", "--aws-secret") takes a secret: the last segment of its name
 * is a secret word. Arguments that do not start with '-' are not options.
 */
int envlist_secret_option(const char *arg, size_t n);
/*
 * Finds the credentials of a URL in s[from..n): `scheme://USERINFO@host`.
 * Returns 1 and the span of USERINFO (user, or user:password) in *off, *len;
 * 0 when there is none.
 */
int envlist_url_cred(const char *s, size_t n, size_t from, size_t *off, size_t *len);
/* Glob match of s[0..n) against the NUL-terminated pattern (same rules). */
int envlist_glob(const char *pat, const char *s, size_t n);

#endif
