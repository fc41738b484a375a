/*
 * prom.h - a parser for the Prometheus text exposition format (0.0.4), the
 * body of a vLLM server's GET /metrics.
 *
 * Parsed properly rather than grepped: `# HELP` and `# TYPE` comments (other
 * comments ignored), label values with the escapes \\ \" \n, values such as
 * NaN, +Inf and -Inf, optional integer timestamps, and a trailing comma in a
 * label set. A label value can hold any text, so "name{" found by grep is no
 * evidence that the metric exists.
 *
 *	struct prom *p;
 *	if (prom_parse(body, n, &p, &si)) ...          si: line, byte, reason
 *	const char *want[] = { "cache_dtype", "bfloat8_b" };
 *	s = prom_find(p, "vllm:cache_config_info", want, 1);
 *	prom_free(p);
 */
#ifndef TTAUDIT_PROM_H
#define TTAUDIT_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* Hard caps; input beyond them fails with STATUS_LIMIT. */
#define PROM_MAX_BYTES (64u << 20)
#define PROM_MAX_SAMPLES 1000000u
#define PROM_MAX_LABELS 64u       /* per sample */

struct prom_label {
	const char *name, *value;    /* unescaped, NUL-terminated */
};

struct prom_sample {
	const char *name;
	size_t n_labels;
	const struct prom_label *labels;
	double value;
	bool has_timestamp;
	int64_t timestamp;           /* milliseconds since the epoch, as written */
	long line;                   /* 1-based line of the sample in the input */
};

struct prom;

/*
 * Parses text[0..n) (need not be NUL-terminated; a copy is kept, so text may
 * be freed afterwards). On failure returns STATUS_PARSE or STATUS_LIMIT with
 * si->line, si->byte and the reason, and *out is NULL. Free with prom_free().
 */
enum status prom_parse(const char *text, size_t n, struct prom **out, struct status_info *si);
void prom_free(struct prom *p);

size_t prom_n_samples(const struct prom *p);
/* Sample i in input order; pointers live as long as p. */
const struct prom_sample *prom_sample(const struct prom *p, size_t i);

/* The value of label `name` on s, or NULL. */
const char *prom_label(const struct prom_sample *s, const char *name);

/*
 * The first sample called `name` that carries every label pair of
 * pairs[0..2*n_pairs) (name, value, name, value ...); other labels may be
 * present. NULL when there is none.
 */
const struct prom_sample *prom_find(const struct prom *p, const char *name,
				    const char *const *pairs, size_t n_pairs);

/* The `# HELP` text (unescaped) or `# TYPE` word given for a metric family; NULL if none. */
const char *prom_help(const struct prom *p, const char *family);
const char *prom_type(const struct prom *p, const char *family);

#endif
