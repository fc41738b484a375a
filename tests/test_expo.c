/* test_expo.c - the Prometheus exposition registry and writer (watch/expo.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "watch/expo.h"

/* The exposition as text; the caller frees it. */
static char *t_write(struct expo *e)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	assert_non_null(f);
	assert_int_equal(expo_write(e, f), STATUS_OK);
	fclose(f);
	return buf;
}

static void test_families_and_series(void **state)
{
	static const char *const ln[] = { "rule", "evidence" };
	const char *lv[] = { "bare", "request" };
	struct expo *e = expo_new();
	int subst, up;
	char *out;

	(void)state;
	assert_non_null(e);
	subst = expo_family(e, "ttaudit_substitutions", EXPO_COUNTER, "stale tokens taken");
	up = expo_family(e, "ttaudit_source_up", EXPO_GAUGE, "1 while the source\nis read");
	assert_true(subst >= 0 && up >= 0);
	assert_int_equal(expo_family(e, "ttaudit_substitutions", EXPO_COUNTER, "again"), -1);
	assert_int_equal(expo_family(e, "bad name", EXPO_GAUGE, ""), -1);
	assert_int_equal(expo_add(e, subst, ln, lv, 2, 3), STATUS_OK);
	assert_int_equal(expo_add(e, subst, ln, lv, 2, 1), STATUS_OK);
	assert_true(expo_get(e, subst, ln, lv, 2) == 4);
	/* counters only go up; gauges are set */
	assert_int_equal(expo_add(e, subst, ln, lv, 2, -1), STATUS_USAGE);
	assert_int_equal(expo_add(e, subst, ln, lv, 2, NAN), STATUS_USAGE);
	assert_int_equal(expo_add(e, up, NULL, NULL, 0, 1), STATUS_USAGE);
	lv[1] = "a \"quoted\\\" \n value";
	assert_int_equal(expo_add(e, subst, ln, lv, 2, 0.5), STATUS_OK);
	{
		static const char *const sn[] = { "source" };
		const char *sv[] = { "/var/log/vllm.log" };
		assert_int_equal(expo_set(e, up, sn, sv, 1, 1), STATUS_OK);
		assert_int_equal(expo_set(e, up, sn, sv, 1, 0), STATUS_OK);
	}
	assert_true(isnan(expo_get(e, up, NULL, NULL, 0)));
	out = t_write(e);
	assert_non_null(strstr(out, "# HELP ttaudit_substitutions_total stale tokens taken\n"
				    "# TYPE ttaudit_substitutions_total counter\n"
				    "ttaudit_substitutions_total{rule=\"bare\",evidence=\"request\"} 4\n"));
	assert_non_null(strstr(out, "ttaudit_substitutions_total{rule=\"bare\",evidence=\"a \\\"quoted\\\\\\\" \\n value\"} 0.5\n"));
	assert_non_null(strstr(out, "# HELP ttaudit_source_up 1 while the source\\nis read\n"));
	assert_non_null(strstr(out, "ttaudit_source_up{source=\"/var/log/vllm.log\"} 0\n"));
	assert_non_null(strstr(out, "ttaudit_series_dropped_total 0\n"));
	free(out);
	expo_free(e);
}

static void test_cardinality_cap(void **state)
{
	static const char *const ln[] = { "req" };
	struct expo *e = expo_new();
	char v[32];
	const char *lv[] = { v };
	int f, i;

	(void)state;
	f = expo_family(e, "ttaudit_x", EXPO_COUNTER, "x");
	for (i = 0; i < EXPO_MAX_SERIES; i++) {
		snprintf(v, sizeof(v), "r%d", i);
		assert_int_equal(expo_add(e, f, ln, lv, 1, 1), STATUS_OK);
	}
	snprintf(v, sizeof(v), "one-too-many");
	assert_int_equal(expo_add(e, f, ln, lv, 1, 1), STATUS_LIMIT);
	snprintf(v, sizeof(v), "r7");
	assert_int_equal(expo_add(e, f, ln, lv, 1, 1), STATUS_OK);   /* existing ones go on */
	assert_true(expo_get(e, f, ln, lv, 1) == 2);
	{
		char *out = t_write(e);
		assert_non_null(strstr(out, "ttaudit_series_dropped_total 1\n"));
		free(out);
	}
	expo_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_families_and_series),
		cmocka_unit_test(test_cardinality_cap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
