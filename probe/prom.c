#include "probe/prom.h"
#include "base/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <strings.h>

struct prom_family {
	const char *name;
	const char *help;   /* NULL when no HELP line */
	const char *type;   /* NULL when no TYPE line */
};

struct prom {
	char *buf;                    /* the copy every string points into */
	struct prom_sample *samples;
	size_t n_samples, cap_samples;
	struct prom_label *labels;    /* all samples' labels, back to back */
	size_t n_labels, cap_labels;
	size_t *label_first;          /* per sample: index of its first label */
	struct prom_family *families;
	size_t n_families, cap_families;
};

/* Parser state for one line: p walks the line, base is its first byte. */
struct prom_cursor {
	char *p;
	char *base;
	long line;
	struct status_info *si;
};

static enum status prom_err(struct prom_cursor *c, enum status st, const char *msg, const char *what)
{
	return status_set_at(c->si, st, NULL, c->line, (long)(c->p - c->base) + 1, "%s%s%s%s", msg,
			     what ? " '" : "", what ? what : "", what ? "'" : "");
}

static int prom_is_name_start(int ch, int colon)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' ||
	       (colon && ch == ':');
}

static int prom_is_name_char(int ch, int colon)
{
	return prom_is_name_start(ch, colon) || (ch >= '0' && ch <= '9');
}

static void prom_skip_ws(struct prom_cursor *c)
{
	while (*c->p == ' ' || *c->p == '\t')
		c->p++;
}

/* Grows arr (capacity cap) to hold one more than its n elements, up to max:
 * STATUS_LIMIT at max, STATUS_NOMEM when memory is short (arr untouched). */
#define PROM_GROW(arr, cap, n, max) \
	((n) >= (max) ? STATUS_LIMIT : ALLOC_GROW_MAX(arr, (n) + 1, cap, max) < 0 ? STATUS_NOMEM : STATUS_OK)

static struct prom_family *prom_family_get(struct prom *p, const char *name, enum status *st)
{
	size_t i;

	for (i = 0; i < p->n_families; i++)
		if (!strcmp(p->families[i].name, name))
			return &p->families[i];
	*st = PROM_GROW(p->families, p->cap_families, p->n_families, (size_t)PROM_MAX_SAMPLES);
	if (*st)
		return NULL;
	p->families[p->n_families] = (struct prom_family){ name, NULL, NULL };
	return &p->families[p->n_families++];
}

/* "# HELP name text" and "# TYPE name type"; any other comment is ignored. */
static enum status prom_comment(struct prom *p, struct prom_cursor *c)
{
	char *kw, *name, *w, *r;
	struct prom_family *f;
	enum status st = STATUS_OK;
	int is_help;

	c->p++;
	prom_skip_ws(c);
	kw = c->p;
	if (!strncmp(kw, "HELP", 4) && (kw[4] == ' ' || kw[4] == '\t'))
		is_help = 1;
	else if (!strncmp(kw, "TYPE", 4) && (kw[4] == ' ' || kw[4] == '\t'))
		is_help = 0;
	else
		return STATUS_OK;
	c->p += 4;
	prom_skip_ws(c);
	name = c->p;
	if (!prom_is_name_start(*c->p, 1))
		return prom_err(c, STATUS_PARSE, is_help ? "HELP without a metric name" :
				"TYPE without a metric name", NULL);
	while (prom_is_name_char(*c->p, 1))
		c->p++;
	if (*c->p && *c->p != ' ' && *c->p != '\t')
		return prom_err(c, STATUS_PARSE, "bad character in metric name", NULL);
	if (*c->p) {
		*c->p++ = '\0';
		prom_skip_ws(c);
	}
	f = prom_family_get(p, name, &st);
	if (!f)
		return prom_err(c, st, "too many metric families", NULL);
	if (is_help) {
		/* HELP text escapes only backslash and newline. */
		for (r = w = c->p; *r; r++) {
			if (*r == '\\' && r[1] == '\\')
				*w++ = '\\', r++;
			else if (*r == '\\' && r[1] == 'n')
				*w++ = '\n', r++;
			else
				*w++ = *r;
		}
		*w = '\0';
		if (f->help) {
			c->p = name;
			return prom_err(c, STATUS_PARSE, "second HELP line for", name);
		}
		f->help = c->p;
		return STATUS_OK;
	}
	kw = c->p;
	while (*c->p && *c->p != ' ' && *c->p != '\t')
		c->p++;
	if (*c->p) {
		*c->p++ = '\0';
		prom_skip_ws(c);
	}
	if (strcmp(kw, "counter") && strcmp(kw, "gauge") && strcmp(kw, "histogram") &&
	    strcmp(kw, "summary") && strcmp(kw, "untyped")) {
		c->p = kw;
		return prom_err(c, STATUS_PARSE, "unknown metric type", kw);
	}
	if (*c->p)
		return prom_err(c, STATUS_PARSE, "text after the metric type", NULL);
	if (f->type) {
		c->p = name;
		return prom_err(c, STATUS_PARSE, "second TYPE line for", name);
	}
	f->type = kw;
	return STATUS_OK;
}

/* The label set after '{'; leaves c->p after '}'. */
/*
 * A sample value as the text format allows it: whatever Go's
 * strconv.ParseFloat accepts. Infinities and NaN in any case ("inf",
 * "+Inf", "-Infinity", "NaN"; llama-server writes "inf"), decimal numbers
 * with an optional exponent, and hexadecimal ones only with their 'p'
 * exponent. 0 with *v, or -1.
 */
static int prom_value(const char *tok, double *v)
{
	const char *t = tok, *hex;
	char *end;

	if (*t == '+' || *t == '-')
		t++;
	if (!strcasecmp(t, "inf") || !strcasecmp(t, "infinity")) {
		*v = *tok == '-' ? -INFINITY : INFINITY;
		return 0;
	}
	if (t == tok && !strcasecmp(t, "nan")) {
		*v = NAN;
		return 0;
	}
	/* strtod would take "nan(...)", "infinite" prefixes and hex without an
	 * exponent: ParseFloat does not */
	if (strpbrk(t, "nNiI"))
		return -1;
	hex = (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) ? t : NULL;
	if (hex && !strpbrk(hex, "pP"))
		return -1;
	if (!hex && strpbrk(t, "xXpP"))
		return -1;
	errno = 0;
	*v = strtod(tok, &end);
	if (end == tok || *end)
		return -1;
	return 0;
}

static enum status prom_labels(struct prom *p, struct prom_cursor *c, size_t first)
{
	char *name, *w;
	enum status st;
	size_t i;

	for (;;) {
		prom_skip_ws(c);
		if (*c->p == '}') {
			c->p++;
			return STATUS_OK;
		}
		name = c->p;
		if (!prom_is_name_start(*c->p, 0))
			return prom_err(c, STATUS_PARSE, *c->p ? "bad label name" :
					"label set not closed", NULL);
		while (prom_is_name_char(*c->p, 0))
			c->p++;
		if (*c->p == ' ' || *c->p == '\t') {
			*c->p++ = '\0';
			prom_skip_ws(c);
		}
		if (*c->p != '=')
			return prom_err(c, STATUS_PARSE, "'=' expected after label name", NULL);
		*c->p++ = '\0';
		prom_skip_ws(c);
		if (*c->p != '"')
			return prom_err(c, STATUS_PARSE, "label value not quoted for", name);
		w = ++c->p;
		st = PROM_GROW(p->labels, p->cap_labels, p->n_labels, (size_t)PROM_MAX_SAMPLES * 4);
		if (st)
			return prom_err(c, st, "too many labels", NULL);
		p->labels[p->n_labels].name = name;
		p->labels[p->n_labels].value = w;
		for (;;) {
			if (!*c->p)
				return prom_err(c, STATUS_PARSE, "label value not terminated for", name);
			if (*c->p == '"')
				break;
			if (*c->p == '\\') {
				c->p++;
				if (*c->p == '\\' || *c->p == '"')
					*w++ = *c->p++;
				else if (*c->p == 'n')
					*w++ = '\n', c->p++;
				else
					return prom_err(c, STATUS_PARSE, "bad escape in label value of", name);
				continue;
			}
			*w++ = *c->p++;
		}
		c->p++;
		*w = '\0';
		for (i = first; i < p->n_labels; i++)
			if (!strcmp(p->labels[i].name, name))
				return prom_err(c, STATUS_PARSE, "repeated label", name);
		if (p->n_labels - first >= PROM_MAX_LABELS)
			return prom_err(c, STATUS_LIMIT, "too many labels on one sample", NULL);
		p->n_labels++;
		prom_skip_ws(c);
		if (*c->p == ',')
			c->p++;
		else if (*c->p != '}')
			return prom_err(c, STATUS_PARSE, *c->p ? "',' or '}' expected in label set" :
					"label set not closed", NULL);
	}
}

/* Cuts the next blank-separated token; NULL at the end of the line. */
static char *prom_token(struct prom_cursor *c)
{
	char *t;

	prom_skip_ws(c);
	if (!*c->p)
		return NULL;
	t = c->p;
	while (*c->p && *c->p != ' ' && *c->p != '\t')
		c->p++;
	if (*c->p)
		*c->p++ = '\0';
	return t;
}

static enum status prom_sample_line(struct prom *p, struct prom_cursor *c)
{
	struct prom_sample *s;
	char *name, *tok, *end;
	size_t first = p->n_labels;
	enum status st;
	char delim;

	if (p->n_samples == p->cap_samples) {
		/* two arrays, one capacity: it moves once both have grown */
		size_t cap_s = p->cap_samples, cap_f = p->cap_samples;

		if (p->n_samples >= PROM_MAX_SAMPLES)
			return prom_err(c, STATUS_LIMIT, "too many samples", NULL);
		if (ALLOC_GROW_MAX(p->samples, p->n_samples + 1, cap_s, (size_t)PROM_MAX_SAMPLES) < 0 ||
		    ALLOC_GROW_MAX(p->label_first, p->n_samples + 1, cap_f, (size_t)PROM_MAX_SAMPLES) < 0)
			return prom_err(c, STATUS_NOMEM, "out of memory", NULL);
		p->cap_samples = cap_s < cap_f ? cap_s : cap_f;
	}
	name = c->p;
	if (!prom_is_name_start(*c->p, 1))
		return prom_err(c, STATUS_PARSE, "metric name expected", NULL);
	while (prom_is_name_char(*c->p, 1))
		c->p++;
	delim = *c->p;
	if (delim != '{' && delim != ' ' && delim != '\t')
		return prom_err(c, STATUS_PARSE, delim ? "bad character in metric name" :
				"sample without a value", NULL);
	*c->p++ = '\0';
	if (delim != '{') {
		prom_skip_ws(c);
		if (*c->p == '{') {
			c->p++;
			delim = '{';
		}
	}
	if (delim == '{') {
		st = prom_labels(p, c, first);
		if (st)
			return st;
	}
	s = &p->samples[p->n_samples];
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->line = c->line;
	s->n_labels = p->n_labels - first;
	p->label_first[p->n_samples] = first;
	tok = prom_token(c);
	if (!tok)
		return prom_err(c, STATUS_PARSE, "sample without a value:", name);
	if (prom_value(tok, &s->value)) {
		c->p = tok;
		return prom_err(c, STATUS_PARSE, "bad sample value", tok);
	}
	tok = prom_token(c);
	if (tok) {
		long long ts;

		errno = 0;
		ts = strtoll(tok, &end, 10);
		if (errno || end == tok || *end) {
			c->p = tok;
			return prom_err(c, STATUS_PARSE, "bad timestamp", tok);
		}
		s->has_timestamp = true;
		s->timestamp = ts;
		if (prom_token(c))
			return prom_err(c, STATUS_PARSE, "text after the timestamp", NULL);
	}
	p->n_samples++;
	return STATUS_OK;
}

enum status prom_parse(const char *text, size_t n, struct prom **out, struct status_info *si)
{
	struct prom_cursor c = { 0 };
	struct prom *p = NULL;
	enum status st = STATUS_OK;
	char *line, *nl;
	size_t i;

	*out = NULL;
	if (n > PROM_MAX_BYTES)
		return status_set(si, STATUS_LIMIT, "metrics text is %zu bytes, the cap is %u", n,
				  PROM_MAX_BYTES);
	if (memchr(text, '\0', n))
		return status_set(si, STATUS_PARSE, "metrics text holds a NUL byte");
	p = calloc(1, sizeof(*p));
	if (!p || !(p->buf = malloc(n + 1))) {
		st = status_set(si, STATUS_NOMEM, "out of memory");
		goto out;
	}
	memcpy(p->buf, text, n);
	p->buf[n] = '\0';
	c.si = si;
	for (line = p->buf; line; line = nl) {
		size_t len;

		c.line++;
		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		len = strlen(line);
		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		c.base = c.p = line;
		prom_skip_ws(&c);
		if (!*c.p)
			continue;
		st = *c.p == '#' ? prom_comment(p, &c) : prom_sample_line(p, &c);
		if (st)
			goto out;
	}
	/* Set once the label array stops moving; NULL + 0 is not a pointer. */
	for (i = 0; i < p->n_samples; i++)
		p->samples[i].labels = p->samples[i].n_labels ? p->labels + p->label_first[i] : NULL;
out:
	if (st) {
		prom_free(p);
		return st;
	}
	*out = p;
	return STATUS_OK;
}

void prom_free(struct prom *p)
{
	if (!p)
		return;
	free(p->buf);
	free(p->samples);
	free(p->labels);
	free(p->label_first);
	free(p->families);
	free(p);
}

size_t prom_n_samples(const struct prom *p)
{
	return p->n_samples;
}

const struct prom_sample *prom_sample(const struct prom *p, size_t i)
{
	return i < p->n_samples ? &p->samples[i] : NULL;
}

const char *prom_label(const struct prom_sample *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i].name, name))
			return s->labels[i].value;
	return NULL;
}

const struct prom_sample *prom_find(const struct prom *p, const char *name,
				    const char *const *pairs, size_t n_pairs)
{
	size_t i, j;

	for (i = 0; i < p->n_samples; i++) {
		const struct prom_sample *s = &p->samples[i];

		if (strcmp(s->name, name))
			continue;
		for (j = 0; j < n_pairs; j++) {
			const char *v = prom_label(s, pairs[2 * j]);

			if (!v || strcmp(v, pairs[2 * j + 1]))
				break;
		}
		if (j == n_pairs)
			return s;
	}
	return NULL;
}

static const struct prom_family *prom_family_find(const struct prom *p, const char *family)
{
	size_t i;

	for (i = 0; i < p->n_families; i++)
		if (!strcmp(p->families[i].name, family))
			return &p->families[i];
	return NULL;
}

const char *prom_help(const struct prom *p, const char *family)
{
	const struct prom_family *f = prom_family_find(p, family);

	return f ? f->help : NULL;
}

const char *prom_type(const struct prom *p, const char *family)
{
	const struct prom_family *f = prom_family_find(p, family);

	return f ? f->type : NULL;
}
