/* test_hash.c - FNV-1a 64 against the published test vectors (its values are written into results). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "base/hash.h"

static void test_vectors(void **state)
{
	(void)state;
	assert_true(hash_fnv1a(HASH_FNV1A_INIT, "", 0) == 0xcbf29ce484222325ull);
	assert_true(hash_fnv1a(HASH_FNV1A_INIT, "a", 1) == 0xaf63dc4c8601ec8cull);
	assert_true(hash_fnv1a(HASH_FNV1A_INIT, "foobar", 6) == 0x85944171f73967e8ull);
	assert_true(hash_fnv1a_str(HASH_FNV1A_INIT, "foobar") == 0x85944171f73967e8ull);
	/* continuing from h is hashing the concatenation */
	assert_true(hash_fnv1a(hash_fnv1a(HASH_FNV1A_INIT, "foo", 3), "bar", 3) == 0x85944171f73967e8ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
