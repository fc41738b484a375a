#include "capture/envlist.h"

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

/* Upper-case of an ASCII letter, anything else as is. */
static char envlist_up(char c)
{
	return c >= 'a' && c <= 'z' ? (char)(c - 'a' + 'A') : c;
}

/*
 * 1 when the name segment s[0..n) (between '_', '-' or '.') is, or ends
 * with, a word that names a secret: KEY, TOKEN, SECRET, PASSWORD, PASSWD,
 * PASS, PASSPHRASE, PAT, DSN, CREDENTIAL(S), CREDS, AUTH(ORIZATION), COOKIE. Whole
 * segments, so PATH, TOKENIZERS or KEYBOARD are not secrets; "ends with"
 * so that PGPASS, APIKEY or HFTOKEN are.
 */
static int envlist_secret_segment(const char *s, size_t n)
{
	static const char *const words[] = {
		"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PASSPHRASE", "PAT", "DSN",
		"CREDENTIAL", "CREDENTIALS", "CREDS", "AUTH", "AUTHORIZATION", "COOKIE",
	};
	size_t w, k;

	for (w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
		size_t wl = strlen(words[w]);
		if (wl > n)
			continue;
		for (k = 0; k < wl && envlist_up(s[n - wl + k]) == words[w][k]; k++)
			;
		if (k == wl)
			return 1;
	}
	return 0;
}

static int envlist_segment_sep(char c)
{
	return c == '_' || c == '-' || c == '.';
}

int envlist_is_secret(const char *name, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;
		while (j < n && !envlist_segment_sep(name[j]))
			j++;
		if (j > i && envlist_secret_segment(name + i, j - i))
			return 1;
		i = j + 1;
	}
	return 0;
}

int envlist_secret_option(const char *arg, size_t n)
{
	size_t i = 0, last;

	while (i < n && arg[i] == '-')
		i++;
	if (i == 0 || i == n)
		return 0;
	/* the last segment of the option's name decides: --api-key, --hf-token, --db-password */
	last = n;
	while (last > i && !envlist_segment_sep(arg[last - 1]))
		last--;
	return envlist_secret_segment(arg + last, n - last);
}

static int envlist_scheme_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '+' || c == '-' || c == '.';
}

int envlist_url_cred(const char *s, size_t n, size_t from, size_t *off, size_t *len)
{
	size_t i;

	for (i = from; i + 3 <= n; i++) {
		size_t a, end, at;

		if (memcmp(s + i, "://", 3) || !i || !envlist_scheme_char(s[i - 1]))
			continue;
		a = i + 3;
		for (end = a; end < n && s[end] != '/' && s[end] != '?' && s[end] != '#' &&
			      s[end] != ' ' && s[end] != '\t'; end++)
			;
		for (at = end; at > a && s[at - 1] != '@'; at--)
			;
		if (at > a) {
			*off = a;
			*len = at - 1 - a;
			return 1;
		}
	}
	return 0;
}
