#include "envlist.h"

#include <string.h>

void envlist_init(struct envlist *el)
{
	el->n = 0;
	el->text[0] = '\0';
}

static int envlist_sep(char c)
{
	return c == ',' || c == ':' || c == ' ' || c == '\t' || c == '\n';
}

static int envlist_patchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '*' || c == '?';
}

enum status envlist_add(struct envlist *el, const char *spec, struct status_info *si)
{
	size_t used = 0, i;

	for (i = 0; i < el->n; i++)
		used += strlen(el->pat[i]) + 1;
	while (*spec) {
		size_t len = 0;

		while (*spec && envlist_sep(*spec))
			spec++;
		if (!*spec)
			break;
		while (spec[len] && !envlist_sep(spec[len])) {
			if (!envlist_patchar(spec[len]))
				return status_set(si, STATUS_PARSE,
						  "environment pattern '%.*s' has character '%c' (allowed: letters, digits, _ * ?)",
						  (int)(len + 1), spec, spec[len]);
			len++;
		}
		if (el->n == ENVLIST_MAX || used + len + 1 > ENVLIST_TEXT_MAX)
			return status_set(si, STATUS_LIMIT, "more than %d environment patterns or %d bytes of them",
					  ENVLIST_MAX, ENVLIST_TEXT_MAX);
		memcpy(el->text + used, spec, len);
		el->text[used + len] = '\0';
		el->pat[el->n++] = el->text + used;
		used += len + 1;
		spec += len;
	}
	return STATUS_OK;
}

int envlist_glob(const char *pat, const char *s, size_t n)
{
	size_t i = 0;
	const char *star = NULL;   /* pattern just after the last '*' */
	size_t star_i = 0;         /* where in s that '*' match started */

	for (;;) {
		if (*pat == '*') {
			star = ++pat;
			star_i = i;
			continue;
		}
		if (i == n) {
			if (!*pat)
				return 1;
		} else if (*pat && (*pat == '?' || *pat == s[i])) {
			pat++;
			i++;
			continue;
		}
		/* Mismatch: let the last '*' swallow one more character. */
		if (!star || star_i == n)
			return 0;
		pat = star;
		i = ++star_i;
	}
}

int envlist_allows(const struct envlist *el, const char *name, size_t n)
{
	size_t i;

	for (i = 0; i < el->n; i++)
		if (envlist_glob(el->pat[i], name, n))
			return 1;
	return 0;
}

int envlist_is_secret(const char *name, size_t n)
{
	static const char *const words[] = {
		"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH",
	};
	size_t w, i, k;

	for (w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
		size_t wl = strlen(words[w]);
		for (i = 0; i + wl <= n; i++) {
			for (k = 0; k < wl; k++) {
				char c = name[i + k];
				if (c >= 'a' && c <= 'z')
					c = (char)(c - 'a' + 'A');
				if (c != words[w][k])
					break;
			}
			if (k == wl)
				return 1;
		}
	}
	return 0;
}
