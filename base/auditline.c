/*
 * auditline.c - is a log line an audit line (auditline.h): the quick
 * allocation-free reading of one JSON object, jdoc_check for the rest.
 */
#include "base/auditline.h"

#include <string.h>

#include "base/jdoc.h"

#define AUDITLINE_DEPTH 32   /* deeper objects are left to jdoc_check */

static int auditline_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static int auditline_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* End of the string whose opening quote is at s[i], or 0 to give up. */
static size_t auditline_string(const char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"')
			return i + 1;
		if (c < 0x20 || c == '\\')
			return 0;
	}
	return 0;
}

/* End of the JSON number at s[i], or 0 when it is not one. */
static size_t auditline_number(const char *s, size_t n, size_t i)
{
	if (s[i] == '-')
		i++;
	if (i >= n || !auditline_digit(s[i]))
		return 0;
	if (s[i] == '0')
		i++;
	else
		while (i < n && auditline_digit(s[i]))
			i++;
	if (i < n && s[i] == '.') {
		if (++i >= n || !auditline_digit(s[i]))
			return 0;
		while (i < n && auditline_digit(s[i]))
			i++;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i >= n || !auditline_digit(s[i]))
			return 0;
		while (i < n && auditline_digit(s[i]))
			i++;
	}
	return i;
}

static size_t auditline_skip(const char *s, size_t n, size_t i)
{
	while (i < n && auditline_ws(s[i]))
		i++;
	return i;
}

/*
 * A member name and its ':' at s[i]; returns where the value starts, or 0.
 * In the top-level object (depth 1) the last "ev" decides, as in jdoc_check.
 */
static size_t auditline_member(const char *s, size_t n, size_t i, int depth, int *ev)
{
	size_t k = i + 1, end = i < n && s[i] == '"' ? auditline_string(s, n, i) : 0;

	if (!end)
		return 0;
	i = auditline_skip(s, n, end);
	if (i >= n || s[i] != ':')
		return 0;
	i = auditline_skip(s, n, i + 1);
	if (depth == 1 && end - k == 3 && s[k] == 'e' && s[k + 1] == 'v')
		*ev = i < n && s[i] == '"';
	return i;
}

int auditline_object(const char *s, size_t n, int *has_ev)
{
	char stack[AUDITLINE_DEPTH];
	int depth = 0, ev = 0;
	size_t i = auditline_skip(s, n, 0);

	if (i >= n || s[i] != '{')
		return -1;
	for (;;) {
		char c;

		/* a value starts at s[i] */
		if (i >= n)
			return -1;
		c = s[i];
		if (c == '{' || c == '[') {
			if (depth == AUDITLINE_DEPTH)
				return -1;
			stack[depth++] = c;
			i = auditline_skip(s, n, i + 1);
			if (i < n && s[i] == (c == '{' ? '}' : ']')) {
				i++;
				depth--;
			} else {
				if (c == '{' && !(i = auditline_member(s, n, i, depth, &ev)))
					return -1;
				continue;
			}
		} else {
			if (c == '"')
				i = auditline_string(s, n, i);
			else if (c == 't')
				i = n - i >= 4 && !memcmp(s + i, "true", 4) ? i + 4 : 0;
			else if (c == 'f')
				i = n - i >= 5 && !memcmp(s + i, "false", 5) ? i + 5 : 0;
			else if (c == 'n')
				i = n - i >= 4 && !memcmp(s + i, "null", 4) ? i + 4 : 0;
			else if (c == '-' || auditline_digit(c))
				/* a run of numbers in an array (positions) in one go */
				while ((i = auditline_number(s, n, i)) && stack[depth - 1] == '[' &&
				       n - i >= 2 && s[i] == ',' && (s[i + 1] == '-' || auditline_digit(s[i + 1])))
					i++;
			else
				i = 0;
			if (!i)
				return -1;
		}
		/* after a value: a ',' before the next one, or closing brackets */
		for (;;) {
			i = auditline_skip(s, n, i);
			if (!depth) {
				if (i != n)
					return -1;
				*has_ev = ev;
				return 1;
			}
			if (i >= n)
				return -1;
			if (s[i] == ',') {
				i = auditline_skip(s, n, i + 1);
				if (stack[depth - 1] == '{' && !(i = auditline_member(s, n, i, depth, &ev)))
					return -1;
				break;
			}
			if (s[i] != (stack[depth - 1] == '{' ? '}' : ']'))
				return -1;
			i++;
			depth--;
		}
	}
}

int auditline_find(const char *line, size_t n, size_t *off)
{
	const char *brace = memchr(line, '{', n);
	struct jdoc_check chk;
	size_t o;
	int ev = 0;

	if (!brace)
		return 0;
	o = (size_t)(brace - line);
	/* The quick reading first; whatever it does not settle, jdoc_check does. */
	if (auditline_object(brace, n - o, &ev) < 0)
		ev = jdoc_check(brace, n - o, &chk) == 0 && chk.has_ev;
	if (ev)
		*off = o;
	return ev;
}
