/*
 * fuzz_prom.c - libFuzzer target for the Prometheus text parser (probe/prom.c):
 * any input must parse or fail with a line number, and every sample found must
 * be reachable through prom_find by its own name and labels.
 *
 * clang -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -std=c11 -Ianalyzer -Ibench \
 *   tests/fuzz/fuzz_prom.c probe/prom.c base/status.c -o build/fuzz/fuzz_prom
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe/prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	struct status_info si = { 0 };
	struct prom *p = NULL;
	const char *pairs[2 * PROM_MAX_LABELS];
	size_t i, j;

	if (prom_parse((const char *)data, n, &p, &si) != STATUS_OK) {
		if (p || (si.line < 1 && n && !memchr(data, 0, n)))
			abort();
		return 0;
	}
	for (i = 0; i < prom_n_samples(p); i++) {
		const struct prom_sample *s = prom_sample(p, i);

		for (j = 0; j < s->n_labels; j++) {
			pairs[2 * j] = s->labels[j].name;
			pairs[2 * j + 1] = s->labels[j].value;
		}
		if (!prom_find(p, s->name, pairs, s->n_labels) || s->line < 1)
			abort();
		(void)prom_help(p, s->name);
	}
	prom_free(p);
	return 0;
}
