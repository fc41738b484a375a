/*
 * test_watch.c - ttaudit watch's replay and metric mapping (watch/watch.c):
 * counters follow the replay as lines arrive, only go up, survive rotation,
 * keep processes apart by pid, and say when a rule is contradicted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tests/testutil.h"
#include "watch/watch.h"

static char *t_metrics(struct watch *w)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	assert_non_null(f);
	assert_int_equal(watch_write_metrics(w, f), STATUS_OK);
	fclose(f);
	return buf;
}

static void t_append(const char *path, const char *s)
{
	FILE *f = fopen(path, "a");

	assert_non_null(f);
	fputs(s, f);
	fclose(f);
}

/* A stale bare take (request ids differ) on slot 0, a fresh one on slot 1. */
#define MERGE(step, pid) "(EngineCore_DP0 pid=" pid ") INFO MERGE_AUDIT {\"ev\":\"merge\",\"step\":" step \
	",\"host_pos\":[5,7],\"dev_pos\":[5,8],\"slot_req\":[\"a\",\"b\"],\"buf_req\":[\"x\",\"b\"],\"taken\":[true,true]}\n"

static void test_counts_follow_lines(void **state)
{
	struct rule rules[2];
	const char *src[1];
	struct watch_opts o;
	struct watch *w;
	struct status_info si;
	size_t n, up, total;
	char *m, rotated[600], want[900];
	const char *p = testutil_write("w.log", "", 0);

	(void)state;
	status_info_clear(&si);
	assert_int_equal(rule_list_parse("bare,stamp", rules, 2, &n, &si), STATUS_OK);
	memset(&o, 0, sizeof(o));
	o.rules = rules;
	o.n_rules = n;
	src[0] = p;
	o.sources = src;
	o.n_sources = 1;
	o.host = "h";
	assert_int_equal(watch_new(&w, &o, &si), STATUS_OK);
	watch_poll(w, false);
	m = t_metrics(w);
	/* declared families show with no series; the source is up */
	assert_non_null(strstr(m, "# TYPE ttaudit_substitutions_total counter"));
	assert_null(strstr(m, "ttaudit_merges_total{"));
	free(m);
	watch_health(w, &up, &total);
	assert_int_equal(up, 1);
	assert_int_equal(total, 1);

	t_append(p, "a plain log line\n" MERGE("1", "7") MERGE("2", "7"));
	watch_poll(w, false);
	m = t_metrics(w);
	assert_non_null(strstr(m, "ttaudit_merges_total{source=\"" ));
	assert_non_null(strstr(m, "host=\"h\",pid=\"7\"} 2\n"));
	assert_non_null(strstr(m, "ttaudit_substitutions_total{rule=\"bare\",evidence=\"request\","));
	assert_non_null(strstr(m, "evidence=\"request\",source=\"" ));
	/* bare took both slots, as recorded: consistent; stamp is skipped (no stamps): absent, not 0 */
	assert_non_null(strstr(m, "ttaudit_arm_consistent{rule=\"bare\""));
	assert_null(strstr(m, "ttaudit_arm_consistent{rule=\"stamp\""));
	free(m);

	/* rotation: the counters go on from where they were */
	snprintf(rotated, sizeof(rotated), "%s.1", p);
	assert_int_equal(rename(p, rotated), 0);
	t_append(p, MERGE("3", "7") MERGE("1", "8"));
	watch_poll(w, false);
	watch_poll(w, false);
	m = t_metrics(w);
	assert_non_null(strstr(m, "host=\"h\",pid=\"7\"} 3\n"));
	assert_non_null(strstr(m, "host=\"h\",pid=\"8\"} 1\n"));
	free(m);
	/* a recorded decision bare would not have made: 0 for bare */
	t_append(p, "(EngineCore_DP0 pid=9) MERGE_AUDIT {\"ev\":\"merge\",\"step\":4,\"host_pos\":[5],"
		    "\"dev_pos\":[5],\"taken\":[false]}\n");
	watch_poll(w, false);
	m = t_metrics(w);
	snprintf(want, sizeof(want), "ttaudit_arm_consistent{rule=\"bare\",source=\"%s\",host=\"h\",pid=\"9\"} 0\n", p);
	assert_non_null(strstr(m, want));
	snprintf(want, sizeof(want), "ttaudit_arm_consistent{rule=\"bare\",source=\"%s\",host=\"h\",pid=\"7\"} 1\n", p);
	assert_non_null(strstr(m, want));
	free(m);
	/* a malformed audit line is counted */
	t_append(p, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":\"x\"}\n");
	watch_poll(w, false);
	m = t_metrics(w);
	assert_non_null(strstr(m, "ttaudit_malformed_lines_total{source=\""));
	assert_non_null(strstr(m, "\",host=\"h\"} 1\n"));
	free(m);
	watch_free(w);
}

static void test_bad_options(void **state)
{
	struct rule r;
	size_t n;
	const char *src[2] = { "a", "a" };
	struct watch_opts o;
	struct watch *w;
	struct status_info si;

	(void)state;
	status_info_clear(&si);
	assert_int_equal(rule_list_parse("bare", &r, 1, &n, &si), STATUS_OK);
	memset(&o, 0, sizeof(o));
	o.rules = &r;
	o.n_rules = 1;
	o.sources = src;
	o.n_sources = 2;
	assert_int_equal(watch_new(&w, &o, &si), STATUS_USAGE);
	assert_non_null(strstr(si.msg, "given twice"));
	o.n_sources = 0;
	assert_int_equal(watch_new(&w, &o, &si), STATUS_USAGE);
}

static int setup(void **state)
{
	(void)state;
	return testutil_setup("test_watch");
}

static int teardown(void **state)
{
	(void)state;
	return testutil_teardown();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_follow_lines),
		cmocka_unit_test(test_bad_options),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
