/*
 * reqid.c - the request-id index of reqid.h: open addressing over FNV-1a,
 * request number + 1 per slot, 0 empty, at most a quarter full.
 */
#include "pair/reqid.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

struct reqid {
	size_t *slot;
	size_t n;               /* a power of two */
	reqid_match_fn match;
	const void *ctx;
};

enum status reqid_new(struct reqid **out, size_t n_requests, reqid_match_fn match, const void *ctx,
		      struct status_info *si)
{
	struct reqid *x;
	size_t n = 1024;

	*out = NULL;
	while (n < 4 * n_requests)
		n <<= 1;
	x = calloc(1, sizeof(*x));
	if (x)
		x->slot = calloc(n, sizeof(*x->slot));
	if (!x || !x->slot) {
		free(x);
		return status_set(si, STATUS_NOMEM, "out of memory");
	}
	x->n = n;
	x->match = match;
	x->ctx = ctx;
	*out = x;
	return STATUS_OK;
}

void reqid_free(struct reqid *x)
{
	if (!x)
		return;
	free(x->slot);
	free(x);
}

static size_t reqid_find_exact(const struct reqid *x, const char *id)
{
	size_t i, k;

	if (!x || !id || !*id)
		return SIZE_MAX;
	i = (size_t)(hash_fnv1a_str(HASH_FNV1A_INIT, id) & (x->n - 1));
	for (; (k = x->slot[i]); i = (i + 1) & (x->n - 1))
		if (x->match(x->ctx, k - 1, id))
			return k - 1;
	return SIZE_MAX;
}

size_t reqid_find(const struct reqid *x, const char *id)
{
	size_t k = reqid_find_exact(x, id), n, i;
	char base[128];         /* ids are kept to 127 bytes (PAIR_ID_MAX) */

	if (k != SIZE_MAX || !id)
		return k;
	n = strlen(id);
	if (n < 10 || n - 9 >= sizeof(base) || id[n - 9] != '-')
		return SIZE_MAX;
	for (i = n - 8; i < n; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return SIZE_MAX;
	memcpy(base, id, n - 9);
	base[n - 9] = '\0';
	return reqid_find_exact(x, base);
}

void reqid_put(struct reqid *x, const char *key, size_t i)
{
	size_t j;

	if (!key[0] || reqid_find_exact(x, key) != SIZE_MAX)
		return;   /* a repeated id keeps its first record */
	j = (size_t)(hash_fnv1a_str(HASH_FNV1A_INIT, key) & (x->n - 1));
	while (x->slot[j])
		j = (j + 1) & (x->n - 1);
	x->slot[j] = i + 1;
}
