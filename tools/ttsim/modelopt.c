/*
 * modelopt.c - the callbacks of the model's option block (modelopt.h): the
 * values that are words or lists rather than numbers.
 */
#include "tools/ttsim/modelopt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ttsim/guard.h"

int ttsim_modelopt_arm(const struct opt *o, const char *arg, char *err, size_t n)
{
	struct ttsim_modelopt_arm *a = o->var;
	struct status_info si;

	status_info_clear(&si);
	if (ttsim_guard_parse(arg, &a->mask, &si)) {
		snprintf(err, n, "%s", si.msg);
		return -1;
	}
	a->set = true;
	return 0;
}

int ttsim_modelopt_pick(const char *arg, const char *const *words, char *err, size_t n)
{
	size_t i, k, len;

	for (i = 0; words[i]; i++)
		if (!strcmp(arg, words[i]))
			return (int)i;
	len = (size_t)snprintf(err, n, "'%s': want ", arg);
	for (k = 0; k < i && len < n; k++)
		len += (size_t)snprintf(err + len, n - len, "%s%s", k == 0 ? "" : k + 1 < i ? ", " : " or ",
					words[k]);
	return -1;
}

int ttsim_modelopt_generator(const struct opt *o, const char *arg, char *err, size_t n)
{
	static const char *const words[] = { "qwen36", "generic", NULL };
	enum ttsim_generator *g = o->var;
	int i = ttsim_modelopt_pick(arg, words, err, n);

	if (i < 0)
		return -1;
	*g = i == 0 ? TTSIM_GEN_QWEN36 : TTSIM_GEN_GENERIC;
	return 0;
}

int ttsim_modelopt_trace_key(const struct opt *o, const char *arg, char *err, size_t n)
{
	static const char *const words[] = { "sampling+batch", "sampling", NULL };
	bool *sampling_only = o->var;
	int i = ttsim_modelopt_pick(arg, words, err, n);

	if (i < 0)
		return -1;
	*sampling_only = i == 1;
	return 0;
}

/* "1,2,4,8": ascending positive widths; the model checks them against the
 * chunk's rows. */
int ttsim_modelopt_buckets(const struct opt *o, const char *arg, char *err, size_t n)
{
	struct ttsim_model_config *mc = o->var;
	char buf[256], *p, *tok, *save = NULL, *end;
	long long v;
	int k = 0;

	if (!*arg || strlen(arg) >= sizeof(buf))
		goto bad;
	strcpy(buf, arg);
	for (p = buf; (tok = strtok_r(p, ",", &save)); p = NULL) {
		errno = 0;
		v = strtoll(tok, &end, 10);
		if (k == TTSIM_MAX_BUCKETS || errno || *end || v < 1 || v > TTSIM_MAX_SLOTS ||
		    (k && v <= mc->buckets[k - 1]))
			goto bad;
		mc->buckets[k++] = (int)v;
	}
	mc->n_buckets = k;
	if (k > 0)
		return 0;
bad:
	snprintf(err, n, "'%s': want ascending widths like 1,2,4,8 (at most %d)", arg,
		 TTSIM_MAX_BUCKETS);
	return -1;
}

int ttsim_modelopt_refresh_every(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	(void)arg;
	/* the old stand-in for the buffer's staleness: there is no host copy on
	 * the real stack */
	snprintf(err, n, "gone: the keep reads the device's trace buffers, which every decode of "
		 "their key rewrites; a stale one comes from --host-sampling P (decodes of another "
		 "sampling mode) or --decode-buckets LIST (width changes) (docs/ttsim.md)");
	return -1;
}
