/* test_ring.c - the capture ring: entries in order, padding at the end of a lap, a full ring, the room kept for settling entries, checkpoints, many writers and a reader at once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>

#include "capture/ring.h"

static struct ring_hdr *ring_new(uint64_t data)
{
	struct ring_hdr *r = calloc(1, ring_file_size(data));

	assert_non_null(r);
	ring_init(r, data, 42, 7, RING_CLOCK_MONO);
	return r;
}

static void put(struct ring_hdr *r, uint64_t ref, const char *s)
{
	size_t n = strlen(s);
	struct ring_ent *e = ring_reserve(r, n);

	assert_non_null(e);
	memcpy(e + 1, s, n);
	ring_publish(e, RING_REC, 0, ref, 0, (uint32_t)n);
}

static void test_order(void **state)
{
	struct ring_hdr *r = ring_new(4096);
	const struct ring_ent *e;
	uint64_t pos = atomic_load(&r->tail);
	int i;

	(void)state;
	assert_int_equal(atomic_load(&r->magic), RING_MAGIC);
	assert_int_equal(r->data_size, 4096);
	assert_null(ring_next(r, &pos));
	put(r, 1, "first");
	put(r, 2, "second entry");
	for (i = 1; i <= 2; i++) {
		e = ring_next(r, &pos);
		assert_non_null(e);
		assert_int_equal(e->ref, (uint64_t)i);
		assert_memory_equal(ring_payload(e), i == 1 ? "first" : "second entry", e->b);
	}
	assert_null(ring_next(r, &pos));
	ring_consumed(r, pos);
	assert_int_equal(ring_used(r), 0);
	free(r);
	/* a size that is not a power of two gives no ring at all */
	r = calloc(1, ring_file_size(3000));
	ring_init(r, 3000, 1, 0, RING_CLOCK_MONO);
	assert_null(ring_reserve(r, 8));
	free(r);
}

/* Entries never straddle the end: the rest of a lap is padding, read past. */
static void test_laps(void **state)
{
	struct ring_hdr *r = ring_new(1024);
	char text[200];
	uint64_t pos = atomic_load(&r->tail), ref;
	const struct ring_ent *e;

	(void)state;
	for (ref = 1; ref <= 500; ref++) {
		struct ring_ent *w;
		size_t n = (size_t)(ref * 37 % 190) + 1;

		memset(text, 'a' + (int)(ref % 26), n);
		w = ring_reserve(r, n);
		assert_non_null(w);
		memcpy(w + 1, text, n);
		ring_publish(w, RING_REC, 0, ref, 0, (uint32_t)n);
		e = ring_next(r, &pos);
		assert_non_null(e);
		assert_int_equal(e->ref, ref);
		assert_int_equal(e->b, n);
		assert_memory_equal(ring_payload(e), text, n);
		assert_null(ring_next(r, &pos));
		ring_consumed(r, pos);
	}
	free(r);
}

/* A full ring refuses an entry (the writer decides what to do); reading frees it. */
static void test_full(void **state)
{
	struct ring_hdr *r = ring_new(1024);
	uint64_t pos = atomic_load(&r->tail);
	int n = 0;

	(void)state;
	while (ring_reserve(r, 100) && n < 100)
		n++;
	assert_true(n > 3 && n < 100);
	assert_null(ring_reserve(r, 100));
	/* reserved but never published: the reader waits at the first */
	assert_null(ring_next(r, &pos));
	assert_null(ring_reserve(r, 300));   /* more than a quarter: never */
	free(r);
}

/*
 * The last RING_KEEP bytes are only for settling entries (commits, marks):
 * a write that went in always finds room for its commit.
 */
static void test_keep(void **state)
{
	struct ring_hdr *r = ring_new(4096);
	int n = 0;

	(void)state;
	while (ring_reserve(r, 0))
		n++;
	assert_int_equal(n, (4096 - RING_KEEP(4096)) / 32);
	for (n = 0; ring_reserve_settle(r); n++)
		assert_null(ring_reserve(r, 0));
	assert_int_equal(n, RING_KEEP(4096) / 32);
	free(r);
}

/*
 * Checkpoints: written into the older slot (its generation 0 meanwhile),
 * found by the newest generation that is done, walked part by part.
 */
static void test_checkpoint(void **state)
{
	struct ring_hdr *r = ring_new(1u << 16);
	struct ring_ck *ck;
	const struct ring_ck *got;
	size_t at = 0;
	uint64_t *p;
	int i;

	(void)state;
	assert_null(ring_ck_find(r, 100));
	for (i = 1; i <= 3; i++) {
		ck = ring_ck_begin(r);
		assert_non_null(ck);
		assert_int_equal(atomic_load(&ck->gen), 0);
		ck->pos = 1000u * (unsigned)i;
		p = ring_ck_add(r, ck, 3);   /* padded to 8 */
		assert_non_null(p);
		*p = (uint64_t)i;
		ring_ck_commit(ck, (uint64_t)i);
	}
	/* two slots: generations 2 and 3 are there; 3 is not done yet */
	got = ring_ck_find(r, 2);
	assert_non_null(got);
	assert_int_equal(got->pos, 2000);
	assert_int_equal(*(const uint64_t *)ring_ck_next(got, &at, 3), 2);
	assert_null(ring_ck_next(got, &at, 1));
	assert_int_equal(ring_ck_find(r, 9)->pos, 3000);
	assert_null(ring_ck_find(r, 1));
	/* being rewritten: not found until committed */
	ck = ring_ck_begin(r);
	assert_int_equal(ring_ck_find(r, 9)->pos, 3000);
	assert_null(ring_ck_add(r, ck, ring_ck_size(r->data_size)));
	ring_ck_commit(ck, 4);
	assert_int_equal(ring_ck_find(r, 9)->gen, 4);
	free(r);
}

#define WRITERS 4
#define PER_WRITER 20000

struct writer {
	struct ring_hdr *r;
	uint32_t id;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	uint32_t i;

	for (i = 0; i < PER_WRITER; i++) {
		struct ring_ent *e;
		uint32_t payload[4] = { w->id, i, w->id ^ i, 0xfeedu };

		while (!(e = ring_reserve(w->r, sizeof(payload))))
			;
		memcpy(e + 1, payload, sizeof(payload));
		ring_publish(e, RING_REC, 0, ((uint64_t)w->id << 32) | i, w->id, sizeof(payload));
	}
	return NULL;
}

/* Many writers, one reader, at once: every entry read once, each writer's in order, intact. */
static void test_concurrent(void **state)
{
	struct ring_hdr *r = ring_new(1u << 16);
	struct writer w[WRITERS];
	pthread_t t[WRITERS];
	uint32_t next[WRITERS] = { 0 };
	uint64_t pos = atomic_load(&r->tail), seen = 0;
	int k;

	(void)state;
	for (k = 0; k < WRITERS; k++) {
		w[k].r = r;
		w[k].id = (uint32_t)k;
		assert_int_equal(pthread_create(&t[k], NULL, writer_main, &w[k]), 0);
	}
	while (seen < (uint64_t)WRITERS * PER_WRITER) {
		const struct ring_ent *e = ring_next(r, &pos);
		uint32_t p[4];

		if (!e) {
			ring_consumed(r, pos);
			continue;
		}
		memcpy(p, ring_payload(e), sizeof(p));
		assert_true(p[0] < WRITERS);
		assert_int_equal(p[1], next[p[0]]);
		assert_int_equal(p[2], p[0] ^ p[1]);
		assert_int_equal(p[3], 0xfeedu);
		assert_int_equal(e->ref, ((uint64_t)p[0] << 32) | p[1]);
		next[p[0]]++;
		seen++;
		if (seen % 64 == 0)
			ring_consumed(r, pos);
	}
	for (k = 0; k < WRITERS; k++)
		pthread_join(t[k], NULL);
	assert_null(ring_next(r, &pos));
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_laps),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_keep),
		cmocka_unit_test(test_checkpoint),
		cmocka_unit_test(test_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
