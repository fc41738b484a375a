/*
 * testutil.h - what several cmocka suites share: a merge event built in
 * place, and a per-suite temporary directory with files written into it.
 * Header-only (static inline), so each suite stays one binary with no extra
 * link step. Include after <cmocka.h>.
 */
#ifndef TTAUDIT_TESTUTIL_H
#define TTAUDIT_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/event.h"

#define MAXS 16

/* A merge event whose every array points into the fixture itself. */
struct fx {
	struct merge_event m;
	int64_t host[MAXS], dev[MAXS], slot_gen[MAXS], buf_slot_gen[MAXS];
	uint8_t prefilled[MAXS], taken[MAXS];
	const char *slot_req[MAXS], *buf_req[MAXS];
};

/* Zeroes f and points the event's arrays at f's own; every has_* is false. */
static inline void fx_bind(struct fx *f)
{
	memset(f, 0, sizeof(*f));
	f->m.host_pos = f->host;
	f->m.dev_pos = f->dev;
	f->m.prefilled = f->prefilled;
	f->m.taken = f->taken;
	f->m.slot_gen = f->slot_gen;
	f->m.buf_slot_gen = f->buf_slot_gen;
	f->m.slot_req = f->slot_req;
	f->m.buf_req = f->buf_req;
}

static inline void fx_init(struct fx *f, int64_t step, const int64_t *host, uint32_t h,
			   const int64_t *dev, uint32_t d)
{
	fx_bind(f);
	memcpy(f->host, host, h * sizeof(*host));
	memcpy(f->dev, dev, d * sizeof(*dev));
	f->m.step = step;
	f->m.n_host = h;
	f->m.n_dev = d;
}

#define FX(f, step, host, dev) \
	fx_init(f, step, host, sizeof(host) / sizeof(host[0]), dev, sizeof(dev) / sizeof(dev[0]))

/* The suite's temporary directory ("" until testutil_setup made it). */
static inline char *testutil_dir(void)
{
	static char dir[256];
	return dir;
}

/* Makes $TMPDIR/<suite>.XXXXXX; 0 on success, as cmocka group setups return. */
static inline int testutil_setup(const char *suite)
{
	char *dir = testutil_dir();
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, 256, "%s/%s.XXXXXX", tmp ? tmp : "/tmp", suite);
	return mkdtemp(dir) ? 0 : -1;
}

static inline int testutil_teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", testutil_dir());
	return system(cmd) == 0 ? 0 : -1;
}

/*
 * Writes text[0..n) to <dir>/<name>; returns the path, valid for the next
 * seven calls (a test may hold several at once).
 */
static inline const char *testutil_write(const char *name, const char *text, size_t n)
{
	static char paths[8][512];
	static unsigned k;
	char *path = paths[k++ % 8];
	FILE *f;

	snprintf(path, 512, "%s/%s", testutil_dir(), name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return path;
}

/* How many times needle occurs in s (overlapping ones too). */
static inline size_t testutil_count(const char *s, const char *needle)
{
	size_t n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s++;
	}
	return n;
}

/* How many of the function pointers that fill table[0..size) (a table of
 * base/dynlib.h) are NULL. */
static inline size_t testutil_null_fns(const void *table, size_t size)
{
	const char *p = table;
	size_t n = 0, i;
	void (*fn)(void);

	for (i = 0; i + sizeof(fn) <= size; i += sizeof(fn)) {
		memcpy(&fn, p + i, sizeof(fn));
		n += !fn;
	}
	return n;
}

#endif
