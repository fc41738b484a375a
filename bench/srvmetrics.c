/*
 * srvmetrics.c - what bench reads from a server's /metrics (srvmetrics.h):
 * the configuration hash of its *_info samples and the prefix-cache hit
 * counter, parsed with probe/prom.h.
 */
#include "bench/srvmetrics.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "probe/prom.h"
#include "bench/suite.h"

#define SRVMETRICS_HTTP_TIMEOUT 30.0

static int srvmetrics_label_cmp(const void *a, const void *b)
{
	const struct prom_label *x = *(const struct prom_label *const *)a;
	const struct prom_label *y = *(const struct prom_label *const *)b;

	return strcmp(x->name, y->name);
}

enum status srvmetrics_config_hash(const char *metrics, size_t n, char *out, size_t n_out,
				   struct status_info *si)
{
	struct prom *p = NULL;
	const struct prom_sample *s;
	const struct prom_label *lab[PROM_MAX_LABELS];
	size_t i, j, k, n_info = 0, len;
	uint64_t h = HASH_FNV1A_INIT;
	enum status st;

	out[0] = '\0';
	st = prom_parse(metrics, n, &p, si);
	if (st)
		return st;
	for (i = 0; i < prom_n_samples(p); i++) {
		s = prom_sample(p, i);
		len = strlen(s->name);
		if (len < 5 || strcmp(s->name + len - 5, "_info"))
			continue;
		n_info++;
		h = hash_fnv1a(h, s->name, len + 1);
		k = s->n_labels < PROM_MAX_LABELS ? s->n_labels : PROM_MAX_LABELS;
		for (j = 0; j < k; j++)
			lab[j] = &s->labels[j];
		qsort(lab, k, sizeof(lab[0]), srvmetrics_label_cmp);
		for (j = 0; j < k; j++) {
			h = hash_fnv1a(h, lab[j]->name, strlen(lab[j]->name) + 1);
			h = hash_fnv1a(h, lab[j]->value, strlen(lab[j]->value) + 1);
		}
	}
	prom_free(p);
	if (n_info)
		snprintf(out, n_out, "fnv1a64:%016" PRIx64, h);
	return STATUS_OK;
}

enum status srvmetrics_prefix_hits(const char *metrics, size_t n, double *hits, struct status_info *si)
{
	static const char *const names[] = { "vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits" };
	struct prom *p = NULL;
	const struct prom_sample *s;
	size_t i, k;
	bool found = false;
	enum status st;

	*hits = 0;
	st = prom_parse(metrics, n, &p, si);
	if (st)
		return st;
	for (k = 0; k < 2 && !found; k++)
		for (i = 0; i < prom_n_samples(p); i++) {
			s = prom_sample(p, i);
			if (strcmp(s->name, names[k]))
				continue;
			found = true;
			*hits += s->value;
		}
	prom_free(p);
	if (!found)
		return status_set(si, STATUS_NOTFOUND, "/metrics has no vllm:prefix_cache_hits counter");
	return STATUS_OK;
}

enum status srvmetrics_get(const char *base, struct http_response *res, struct status_info *si)
{
	char url[HTTP_MAX_URL];
	enum status st;

	memset(res, 0, sizeof(*res));
	st = http_join(base, "/metrics", url, sizeof(url));
	if (st)
		return status_set(si, st, "%s: url too long", base);
	st = http_get(url, SRVMETRICS_HTTP_TIMEOUT, 0, res, si);
	if (!st && res->status != 200)
		st = status_set(si, STATUS_HTTP, "%s: http %ld", url, res->status);
	return st;
}

bool srvmetrics_read_hits(const char *base, double *hits)
{
	struct http_response res;
	bool ok;

	ok = !srvmetrics_get(base, &res, NULL) &&
	     !srvmetrics_prefix_hits(res.body, res.n_body, hits, NULL);
	http_response_release(&res);
	return ok;
}
