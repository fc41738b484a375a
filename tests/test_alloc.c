/*
 * test_alloc.c - ALLOC_GROW (base/alloc.h): the capacity grows by alloc_nr or
 * to what is asked, nothing moves when the capacity suffices, a count whose
 * bytes overflow or that passes the cap fails before any allocation, and a
 * failed realloc leaves the array and its capacity as they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/alloc.h"

/* realloc is wrapped (tests/module.mk): the next call fails when set, and
 * every call is counted */
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
static int fail_next;
static int n_realloc;

void *__wrap_realloc(void *p, size_t n)
{
	n_realloc++;
	if (fail_next) {
		fail_next = 0;
		return NULL;
	}
	return __real_realloc(p, n);
}

struct item {
	int a;
	double b;
};

static void test_nr(void **state)
{
	(void)state;
	assert_int_equal(alloc_nr(0), 24);
	assert_int_equal(alloc_nr(24), 60);
	assert_int_equal(alloc_nr(SIZE_MAX), SIZE_MAX);
	assert_int_equal(alloc_nr(SIZE_MAX / 3 * 2), SIZE_MAX);
	assert_true(alloc_nr(SIZE_MAX / 3) > SIZE_MAX / 3);
}

static void test_growth(void **state)
{
	struct item *v = NULL;
	size_t n = 0, cap = 0, i, prev;
	int grew = 0;

	(void)state;
	n_realloc = 0;
	for (i = 0; i < 10000; i++) {
		prev = cap;
		assert_int_equal(ALLOC_GROW(v, n + 1, cap), 0);
		assert_true(cap >= n + 1);
		if (cap != prev) {
			grew++;
			assert_true(cap >= alloc_nr(prev) || cap == n + 1);
		}
		v[n].a = (int)i;
		v[n++].b = (double)i;
	}
	/* geometric: a few dozen reallocs for 10,000 appends, one per growth */
	assert_true(grew < 30);
	assert_int_equal(n_realloc, grew);
	for (i = 0; i < n; i++)
		assert_int_equal(v[i].a, (int)i);
	/* a capacity that suffices: nothing called */
	n_realloc = 0;
	assert_int_equal(ALLOC_GROW(v, cap, cap), 0);
	assert_int_equal(n_realloc, 0);
	/* a jump past alloc_nr: exactly what is asked */
	prev = cap;
	assert_int_equal(ALLOC_GROW(v, 10 * prev, cap), 0);
	assert_int_equal(cap, 10 * prev);
	free(v);
}

static void test_overflow(void **state)
{
	struct item *v = NULL;
	size_t cap = 0;
	char *s = NULL;
	size_t scap = 0;

	(void)state;
	n_realloc = 0;
	/* elements whose bytes do not fit in a size_t: refused before realloc */
	assert_int_equal(ALLOC_GROW(v, SIZE_MAX / sizeof(*v) + 1, cap), -1);
	assert_int_equal(ALLOC_GROW(v, SIZE_MAX, cap), -1);
	assert_null(v);
	assert_int_equal(cap, 0);
	assert_int_equal(n_realloc, 0);
	/* near the top, alloc_nr saturates to the largest count that fits */
	assert_int_equal(ALLOC_GROW(s, 8, scap), 0);
	scap = SIZE_MAX - 4;    /* pretend, without touching s: the next step cannot wrap */
	assert_int_equal(ALLOC_GROW_MAX(s, SIZE_MAX - 2, scap, SIZE_MAX - 3), -1);
	assert_int_equal(scap, SIZE_MAX - 4);
	free(s);
}

static void test_cap(void **state)
{
	int *v = NULL;
	size_t cap = 0;

	(void)state;
	/* alloc_nr(0) is 24: clamped to the cap */
	assert_int_equal(ALLOC_GROW_MAX(v, 1, cap, 10), 0);
	assert_int_equal(cap, 10);
	assert_int_equal(ALLOC_GROW_MAX(v, 10, cap, 10), 0);
	assert_int_equal(ALLOC_GROW_MAX(v, 11, cap, 10), -1);
	assert_int_equal(cap, 10);
	free(v);
}

static void test_failure_keeps_old(void **state)
{
	int *v = NULL, *before;
	size_t cap = 0, i;

	(void)state;
	assert_int_equal(ALLOC_GROW(v, 100, cap), 0);
	for (i = 0; i < 100; i++)
		v[i] = (int)i * 7;
	before = v;
	fail_next = 1;
	assert_int_equal(ALLOC_GROW(v, 1000, cap), -1);
	assert_ptr_equal(v, before);
	assert_int_equal(cap, 100);
	for (i = 0; i < 100; i++)
		assert_int_equal(v[i], (int)i * 7);
	/* and it grows again once memory is back */
	assert_int_equal(ALLOC_GROW(v, 1000, cap), 0);
	assert_int_equal(cap, 1000);
	for (i = 0; i < 100; i++)
		assert_int_equal(v[i], (int)i * 7);
	free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nr),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_failure_keeps_old),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
