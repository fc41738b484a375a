/*
 * expo.h - metrics in the Prometheus text exposition format (version 0.0.4):
 * a registry of counter and gauge families, each with labelled series, and
 * the writer that serves them on /metrics.
 *
 * Cardinality is bounded by construction: a registry holds at most
 * EXPO_MAX_SERIES series in all; a new series past that is not created, and
 * the refusal is counted in the registry's own
 * `ttaudit_series_dropped_total`, so a label that should never have been a
 * label (a request id) shows up as a number instead of a memory leak.
 *
 * Thread safety: every function takes the registry's mutex, so readers of
 * sources and the HTTP thread may share one registry.
 */
#ifndef TTAUDIT_EXPO_H
#define TTAUDIT_EXPO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"

#define EXPO_MAX_FAMILIES 64
#define EXPO_MAX_SERIES 4096
#define EXPO_MAX_LABELS 6
#define EXPO_LABEL_MAX 256      /* bytes of one label value; longer values are cut */

enum expo_type { EXPO_COUNTER, EXPO_GAUGE };

struct expo;

/* NULL on allocation failure. */
struct expo *expo_new(void);
void expo_free(struct expo *e);

/*
 * Declares a family (name without the `_total` of counters: that is added).
 * Returns its index, or -1 when the name is not a valid metric name, is
 * declared twice, or the registry is full. Declared families are written
 * even with no series (HELP and TYPE only), so a scrape shows what exists.
 */
int expo_family(struct expo *e, const char *name, enum expo_type type, const char *help);

/*
 * The series of family f with these labels: names[i] = values[i], n pairs
 * (names must be valid label names; values any bytes, escaped on output).
 * A counter only goes up: expo_add with a negative or non-finite delta is
 * refused (STATUS_USAGE). STATUS_LIMIT when the series would be one too many.
 */
enum status expo_add(struct expo *e, int f, const char *const *names, const char *const *values,
		     size_t n, double delta);
enum status expo_set(struct expo *e, int f, const char *const *names, const char *const *values,
		     size_t n, double value);

/* The value of a series, or NAN when it does not exist (for tests). */
double expo_get(struct expo *e, int f, const char *const *names, const char *const *values,
		size_t n);

/* Writes the whole registry in the text format. STATUS_IO when f fails. */
enum status expo_write(struct expo *e, FILE *f);

#endif
