/*
 * test_dynlib.c - the dlopen loader of base/dynlib.c on a real library
 * (Debian's zlib, which the tests link too: the pointers it gives are the
 * linked functions), a soname that does not exist, a symbol the library
 * lacks, a table entry outside its table, and the once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "base/dynlib.h"
#include "tests/testutil.h"

struct ztab {
	const char *(*version)(void);
	uLong (*crc)(uLong crc, const Bytef *buf, uInt len);
};

static const struct dynlib_sym zsyms[] = {
	{ "zlibVersion", offsetof(struct ztab, version) },
	{ "crc32", offsetof(struct ztab, crc) },
};
static const struct dynlib_spec zspec = { "zlib1g", zsyms, 2, sizeof(struct ztab) };

static void test_load(void **state)
{
	struct ztab t;
	struct status_info si = { 0 };

	(void)state;
	assert_int_equal(dynlib_load("libz.so.1", &zspec, &t, &si), STATUS_OK);
	assert_int_equal(testutil_null_fns(&t, sizeof(t)), 0);
	assert_ptr_equal(t.version, zlibVersion);
	assert_string_equal(t.version(), zlibVersion());
	assert_int_equal(t.crc(0, (const Bytef *)"123456789", 9), 0xcbf43926);
	assert_string_equal(si.msg, "");
}

static void test_missing_soname(void **state)
{
	struct ztab t;
	struct status_info si = { 0 };

	(void)state;
	memset(&t, 0xff, sizeof(t));
	assert_int_equal(dynlib_load("libttaudit-nosuch.so.9", &zspec, &t, &si), STATUS_NOTFOUND);
	assert_int_equal(testutil_null_fns(&t, sizeof(t)), 2);
	/* the soname, dlerror()'s reason, and the package */
	assert_non_null(strstr(si.msg, "libttaudit-nosuch.so.9 cannot be loaded: "));
	assert_non_null(strstr(si.msg, "cannot open shared object file"));
	assert_non_null(strstr(si.msg, "; install zlib1g (Debian)"));
}

static void test_missing_symbol(void **state)
{
	static const struct dynlib_sym syms[] = {
		{ "zlibVersion", offsetof(struct ztab, version) },
		{ "ttaudit_nosuch_fn", offsetof(struct ztab, crc) },
	};
	static const struct dynlib_spec spec = { "zlib1g", syms, 2, sizeof(struct ztab) };
	struct ztab t;
	struct status_info si = { 0 };

	(void)state;
	assert_int_equal(dynlib_load("libz.so.1", &spec, &t, &si), STATUS_NOTFOUND);
	/* what was resolved before the missing one is not left behind */
	assert_int_equal(testutil_null_fns(&t, sizeof(t)), 2);
	assert_non_null(strstr(si.msg, "libz.so.1 cannot be loaded: "));
	assert_non_null(strstr(si.msg, "undefined symbol: ttaudit_nosuch_fn"));
}

static void test_outside_table(void **state)
{
	static const struct dynlib_sym syms[] = {
		{ "zlibVersion", offsetof(struct ztab, version) },
		{ "crc32", sizeof(struct ztab) },
	};
	static const struct dynlib_spec spec = { "zlib1g", syms, 2, sizeof(struct ztab) };
	struct ztab t;
	struct status_info si = { 0 };

	(void)state;
	assert_int_equal(dynlib_load("libz.so.1", &spec, &t, &si), STATUS_USAGE);
	assert_int_equal(testutil_null_fns(&t, sizeof(t)), 2);
	assert_non_null(strstr(si.msg, "'crc32' lies outside its table"));
}

static struct ztab once_t, once_t2;
static const struct dynlib_spec zspec_once = { "zlib1g", zsyms, 2, sizeof(struct ztab) };
static struct dynlib_once once_ok = DYNLIB_ONCE_INIT("libz.so.1", &zspec_once, &once_t);
static struct dynlib_once once_bad = DYNLIB_ONCE_INIT("libttaudit-nosuch.so.9", &zspec_once, &once_t2);
static int n_ok, n_bad;

static void init_ok(void)
{
	n_ok++;
	dynlib_once_run(&once_ok);
}

static void init_bad(void)
{
	n_bad++;
	dynlib_once_run(&once_bad);
}

static void test_once(void **state)
{
	struct status_info si;
	enum status st;
	int i;

	(void)state;
	for (i = 0; i < 3; i++) {
		memset(&si, 0, sizeof(si));
		st = STATUS_IO;
		assert_ptr_equal(dynlib_once(&once_ok, init_ok, &st, &si), &once_t);
		assert_int_equal(st, STATUS_OK);
		assert_string_equal(si.msg, "");
	}
	assert_int_equal(n_ok, 1);
	assert_ptr_equal(once_t.version, zlibVersion);
	/* a failure is said to every caller, each with its own copy */
	for (i = 0; i < 3; i++) {
		memset(&si, 0, sizeof(si));
		assert_null(dynlib_once(&once_bad, init_bad, &st, &si));
		assert_int_equal(st, STATUS_NOTFOUND);
		assert_non_null(strstr(si.msg, "libttaudit-nosuch.so.9 cannot be loaded"));
	}
	assert_null(dynlib_once(&once_bad, init_bad, &st, NULL));
	assert_int_equal(st, STATUS_NOTFOUND);
	assert_int_equal(n_bad, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_load),
		cmocka_unit_test(test_missing_soname),
		cmocka_unit_test(test_missing_symbol),
		cmocka_unit_test(test_outside_table),
		cmocka_unit_test(test_once),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
