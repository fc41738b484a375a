/*
 * alloc.h - growing an array in place, in the manner of git's ALLOC_GROW,
 * except that it never dies: a failure is returned and the caller goes to
 * its `out:` label with the buffer it had.
 *
 *   struct item *v = NULL;      -- with v's element count and capacity
 *   size_t n_v = 0, cap_v = 0;
 *
 *   if (ALLOC_GROW(v, n_v + 1, cap_v) < 0)
 *           goto out;           -- v, n_v and cap_v as they were
 *   v[n_v++] = x;
 *
 * The capacity grows by alloc_nr() (half as much again, plus 16) or to what
 * is asked when that is more, so that n appends cost O(n) copies. The new
 * elements are not zeroed. ALLOC_GROW_MAX caps the capacity (every growing
 * buffer has a hard cap): asking for more than max elements fails, and the
 * capacity never passes max.
 */
#ifndef TTAUDIT_ALLOC_H
#define TTAUDIT_ALLOC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The next capacity after x, saturating instead of wrapping. */
static inline size_t alloc_nr(size_t x)
{
	/* (x + 16) * 3 / 2, computed so that it cannot wrap below the bound */
	return x > (SIZE_MAX - 24) / 3 * 2 ? SIZE_MAX : (x + 16) + (x + 16) / 2;
}

/*
 * The work of ALLOC_GROW_MAX: pp is the address of the array's pointer
 * (any object pointer type), elem the size of one element. 0 when *alloc
 * already holds nr or the array was grown (*alloc then its new capacity);
 * -1 when nr is over max, nr * elem does not fit in a size_t, or realloc
 * failed: the array and *alloc are then untouched.
 */
static inline int alloc_grow_(void *pp, size_t elem, size_t nr, size_t *alloc, size_t max)
{
	void *old, *p;
	size_t cap, bytes;

	if (nr <= *alloc)
		return 0;
	if (elem && max > SIZE_MAX / elem)
		max = SIZE_MAX / elem;
	if (nr > max)
		return -1;
	cap = alloc_nr(*alloc);
	if (cap < nr)
		cap = nr;
	if (cap > max)
		cap = max;
	/* the pointer is read and written as bytes: pp may point to any
	 * object pointer type, which all share void *'s representation here */
	memcpy(&old, pp, sizeof(old));
	bytes = cap * elem;
	p = realloc(old, bytes ? bytes : 1);
	if (!p)
		return -1;
	memcpy(pp, &p, sizeof(p));
	*alloc = cap;
	return 0;
}

/*
 * Makes the array p (an lvalue: a pointer to its first element, or NULL)
 * hold at least nr elements, alloc (an lvalue of type size_t) being its
 * capacity in elements. 0, or -1 with p and alloc unchanged. p and alloc are
 * evaluated more than once.
 */
#define ALLOC_GROW(p, nr, alloc) ALLOC_GROW_MAX(p, nr, alloc, SIZE_MAX)
/* ALLOC_GROW with a cap of max elements. */
#define ALLOC_GROW_MAX(p, nr, alloc, max)                                                             \
	((void)sizeof(char[sizeof(p) == sizeof(void *) ? 1 : -1]),                                  \
	 (size_t)(nr) <= (alloc) ? 0 : alloc_grow_(&(p), sizeof(*(p)), (size_t)(nr), &(alloc), (max)))

#endif
