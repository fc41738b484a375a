/*
 * expo.c - the Prometheus text exposition format (expo.h): families,
 * labelled series in a bounded pool with a hash index, and the writer.
 */
#include "watch/expo.h"
#include "base/hash.h"
#include "base/jsonw.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>


#define EXPO_HASH (EXPO_MAX_SERIES * 2)   /* open addressing, at most half full */

struct expo_family {
	char name[128];
	char help[256];
	enum expo_type type;
};

struct expo_series {
	int family;
	char *labels;       /* rendered: `{a="x",b="y"}` or "" (owned) */
	uint64_t hash;
	double value;
};

struct expo {
	pthread_mutex_t mu;
	struct expo_family fam[EXPO_MAX_FAMILIES];
	size_t n_fam;
	struct expo_series *series;       /* EXPO_MAX_SERIES */
	size_t n_series;
	int32_t *index;                   /* EXPO_HASH slots: series + 1, 0 empty */
	uint64_t dropped;                 /* series refused at the cap */
};

struct expo *expo_new(void)
{
	struct expo *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->series = calloc(EXPO_MAX_SERIES, sizeof(*e->series));
	e->index = calloc(EXPO_HASH, sizeof(*e->index));
	if (!e->series || !e->index || pthread_mutex_init(&e->mu, NULL) != 0) {
		free(e->series);
		free(e->index);
		free(e);
		return NULL;
	}
	return e;
}

void expo_free(struct expo *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->n_series; i++)
		free(e->series[i].labels);
	free(e->series);
	free(e->index);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* for metrics, without ':' for labels. */
static bool expo_valid_name(const char *s, bool colon)
{
	size_t i;

	if (!s || !*s)
		return false;
	for (i = 0; s[i]; i++) {
		char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
			  (colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
		if (!ok)
			return false;
	}
	return i < 128;
}

int expo_family(struct expo *e, const char *name, enum expo_type type, const char *help)
{
	size_t i;
	int f = -1;

	if (!expo_valid_name(name, true))
		return -1;
	pthread_mutex_lock(&e->mu);
	for (i = 0; i < e->n_fam; i++)
		if (!strcmp(e->fam[i].name, name))
			goto out;
	if (e->n_fam >= EXPO_MAX_FAMILIES)
		goto out;
	snprintf(e->fam[e->n_fam].name, sizeof(e->fam[0].name), "%s", name);
	snprintf(e->fam[e->n_fam].help, sizeof(e->fam[0].help), "%s", help ? help : "");
	e->fam[e->n_fam].type = type;
	f = (int)e->n_fam++;
out:
	pthread_mutex_unlock(&e->mu);
	return f;
}

/* Appends s (n bytes) escaped as a label value: backslash, quote, newline. */
static size_t expo_escape(char *out, size_t cap, size_t k, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n && k + 2 < cap; i++) {
		if (s[i] == '\\' || s[i] == '"') {
			out[k++] = '\\';
			out[k++] = s[i];
		} else if (s[i] == '\n') {
			out[k++] = '\\';
			out[k++] = 'n';
		} else {
			out[k++] = s[i];
		}
	}
	return k;
}

/* `{a="x",b="y"}` into buf; -1 when a name is not a label name. */
static int expo_render(char *buf, size_t cap, const char *const *names, const char *const *values,
		       size_t n)
{
	size_t i, k = 0;

	buf[0] = 0;
	if (n == 0)
		return 0;
	if (n > EXPO_MAX_LABELS)
		return -1;
	buf[k++] = '{';
	for (i = 0; i < n; i++) {
		size_t ln = strlen(names[i]), vn = values[i] ? strlen(values[i]) : 0;

		if (!expo_valid_name(names[i], false) || !strncmp(names[i], "__", 2))
			return -1;
		if (vn > EXPO_LABEL_MAX)
			vn = EXPO_LABEL_MAX;
		if (k + ln + 4 >= cap)
			return -1;
		if (i)
			buf[k++] = ',';
		memcpy(buf + k, names[i], ln);
		k += ln;
		buf[k++] = '=';
		buf[k++] = '"';
		k = expo_escape(buf, cap - 2, k, values[i] ? values[i] : "", vn);
		buf[k++] = '"';
	}
	buf[k++] = '}';
	buf[k] = 0;
	return 0;
}

/* The series (created when create), or NULL; call with the mutex held. */
static struct expo_series *expo_find(struct expo *e, int f, const char *labels, bool create,
				     enum status *st)
{
	uint64_t h = hash_fnv1a_str(HASH_FNV1A_INIT ^ (uint64_t)(unsigned)f, labels);
	size_t slot = (size_t)(h % EXPO_HASH);
	struct expo_series *s;

	*st = STATUS_OK;
	while (e->index[slot]) {
		s = &e->series[e->index[slot] - 1];
		if (s->hash == h && s->family == f && !strcmp(s->labels, labels))
			return s;
		slot = (slot + 1) % EXPO_HASH;
	}
	if (!create)
		return NULL;
	if (e->n_series >= EXPO_MAX_SERIES) {
		e->dropped++;
		*st = STATUS_LIMIT;
		return NULL;
	}
	s = &e->series[e->n_series];
	s->labels = strdup(labels);
	if (!s->labels) {
		*st = STATUS_NOMEM;
		return NULL;
	}
	s->family = f;
	s->hash = h;
	s->value = 0;
	e->index[slot] = (int32_t)++e->n_series;
	return s;
}

static enum status expo_update(struct expo *e, int f, const char *const *names,
			       const char *const *values, size_t n, double v, bool add)
{
	char labels[EXPO_MAX_LABELS * (EXPO_LABEL_MAX * 2 + 140) + 4];
	struct expo_series *s;
	enum status st;

	if (!isfinite(v) || (add && v < 0))
		return STATUS_USAGE;
	if (expo_render(labels, sizeof(labels), names, values, n) != 0)
		return STATUS_USAGE;
	pthread_mutex_lock(&e->mu);
	if (f < 0 || (size_t)f >= e->n_fam || (add && e->fam[f].type != EXPO_COUNTER)) {
		pthread_mutex_unlock(&e->mu);
		return STATUS_USAGE;
	}
	s = expo_find(e, f, labels, true, &st);
	if (s) {
		if (add)
			s->value += v;
		else
			s->value = v;
	}
	pthread_mutex_unlock(&e->mu);
	return st;
}

enum status expo_add(struct expo *e, int f, const char *const *names, const char *const *values,
		     size_t n, double delta)
{
	return expo_update(e, f, names, values, n, delta, true);
}

enum status expo_set(struct expo *e, int f, const char *const *names, const char *const *values,
		     size_t n, double value)
{
	return expo_update(e, f, names, values, n, value, false);
}

double expo_get(struct expo *e, int f, const char *const *names, const char *const *values,
		size_t n)
{
	char labels[EXPO_MAX_LABELS * (EXPO_LABEL_MAX * 2 + 140) + 4];
	struct expo_series *s;
	enum status st;
	double v = NAN;

	if (expo_render(labels, sizeof(labels), names, values, n) != 0)
		return NAN;
	pthread_mutex_lock(&e->mu);
	s = expo_find(e, f, labels, false, &st);
	if (s)
		v = s->value;
	pthread_mutex_unlock(&e->mu);
	return v;
}

/* HELP text escapes backslash and newline only. */
static void expo_help(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void expo_value(FILE *f, double v)
{
	if (v == floor(v) && fabs(v) < 9007199254740992.0)
		fprintf(f, "%.0f\n", v);
	else {
		char buf[32];
		fprintf(f, "%s\n", jsonw_dtoa(buf, sizeof(buf), v));
	}
}

enum status expo_write(struct expo *e, FILE *f)
{
	size_t i, j;

	pthread_mutex_lock(&e->mu);
	for (i = 0; i < e->n_fam; i++) {
		const struct expo_family *fam = &e->fam[i];
		const char *suffix = fam->type == EXPO_COUNTER ? "_total" : "";

		fprintf(f, "# HELP %s%s ", fam->name, suffix);
		expo_help(f, fam->help);
		fprintf(f, "\n# TYPE %s%s %s\n", fam->name, suffix,
			fam->type == EXPO_COUNTER ? "counter" : "gauge");
		for (j = 0; j < e->n_series; j++) {
			if (e->series[j].family != (int)i)
				continue;
			fprintf(f, "%s%s%s ", fam->name, suffix, e->series[j].labels);
			expo_value(f, e->series[j].value);
		}
	}
	fputs("# HELP ttaudit_series_dropped_total series not created because the registry was full "
	      "(a label with unbounded values)\n# TYPE ttaudit_series_dropped_total counter\n", f);
	fprintf(f, "ttaudit_series_dropped_total %llu\n", (unsigned long long)e->dropped);
	pthread_mutex_unlock(&e->mu);
	return ferror(f) ? STATUS_IO : STATUS_OK;
}
