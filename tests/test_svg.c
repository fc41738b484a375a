/* test_svg.c - the timeline's marks and counts, the charts, escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "svg.h"

/* Runs fn into a memory buffer and returns it (caller frees). */
static char *capture_timeline(const char *audit_text, const struct svg_timeline_opts *o,
			      struct svg_timeline_stats *st, enum status *rst)
{
	char path[] = "/tmp/test_svg.XXXXXX";
	struct status_info si = { 0 };
	char *buf = NULL;
	size_t n = 0;
	int fd = mkstemp(path);
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(audit_text, f);
	fclose(f);
	f = open_memstream(&buf, &n);
	*rst = svg_timeline(f, path, o, st, &si);
	fclose(f);
	remove(path);
	return buf;
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s++;
	}
	return n;
}

static void test_timeline_marks(void **state)
{
	/* step 30: the confirmed incident under batch (fires, slot 7 rejected);
	 * step 31: a stale take; step 32: a fresh take; step 33: malformed */
	const char audit[] =
		"{\"ev\":\"merge\",\"step\":30,\"host_pos\":[22,25,27,25,22,25,27,27],"
		"\"dev_pos\":[29,-1,-1,-1,-1,-1,-1,28],\"taken\":[false,false,false,false,false,false,false,false]}\n"
		"{\"ev\":\"merge\",\"step\":31,\"host_pos\":[5,-1],\"dev_pos\":[6,-1],"
		"\"slot_req\":[\"a\",null],\"buf_req\":[\"b\",null],\"taken\":[true,false]}\n"
		"{\"ev\":\"merge\",\"step\":32,\"host_pos\":[5,-1],\"dev_pos\":[6,-1],"
		"\"slot_req\":[\"a\",null],\"buf_req\":[\"a\",null],\"taken\":[true,false]}\n"
		"{\"ev\":\"merge\",\"step\":33}\n";
	struct svg_timeline_opts o = { .to_step = -1 };
	struct svg_timeline_stats st;
	enum status rst;
	char *svg = capture_timeline(audit, &o, &st, &rst);

	(void)state;
	assert_int_equal(rst, STATUS_OK);
	assert_int_equal(st.merges, 3);
	assert_int_equal(st.malformed, 1);
	assert_int_equal(st.rejects, 1);      /* slot 7 at step 30 */
	assert_int_equal(st.substs, 1);       /* step 31 */
	assert_int_equal(st.taken, 1);        /* step 32 */
	assert_int_equal(st.slots, 8);
	assert_int_equal(count(svg, "class=\"subst\""), 1);
	assert_int_equal(count(svg, "class=\"reject\""), 1);
	assert_non_null(strstr(svg, "class=\"reject\" data-step=\"30\" data-slot=\"7\""));
	assert_non_null(strstr(svg, "class=\"subst\" data-step=\"31\" data-slot=\"0\""));
	assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(svg, "</svg>\n"));
	free(svg);

	/* a step window keeps only what is inside */
	o.from_step = 31;
	o.to_step = 31;
	svg = capture_timeline(audit, &o, &st, &rst);
	assert_int_equal(st.merges, 1);
	assert_int_equal(st.rejects, 0);
	assert_int_equal(count(svg, "class=\"subst\""), 1);
	free(svg);
}

static void test_timeline_rule(void **state)
{
	/* without `taken`, decisions come from the rule: bare takes the stale slot,
	 * stamp refuses it (a reject) */
	const char audit[] =
		"{\"ev\":\"merge\",\"step\":7,\"host_pos\":[5],\"dev_pos\":[6],\"gen\":2,\"buf_gen\":1}\n";
	struct svg_timeline_opts o = { .to_step = -1 };
	struct svg_timeline_stats st;
	enum status rst;
	char *svg;

	(void)state;
	svg = capture_timeline(audit, &o, &st, &rst);
	assert_int_equal(st.substs, 1);
	free(svg);
	o.rule = "stamp";
	svg = capture_timeline(audit, &o, &st, &rst);
	assert_int_equal(st.substs, 0);
	assert_int_equal(st.rejects, 1);
	free(svg);
	o.rule = "nosuch";
	svg = capture_timeline(audit, &o, &st, &rst);
	assert_int_equal(rst, STATUS_USAGE);
	free(svg);
}

static void test_timeline_empty_and_missing(void **state)
{
	struct svg_timeline_stats st;
	struct status_info si = { 0 };
	enum status rst;
	char *svg = capture_timeline("", NULL, &st, &rst);
	FILE *f = fopen("/dev/null", "w");

	(void)state;
	assert_int_equal(rst, STATUS_OK);
	assert_int_equal(st.merges, 0);
	assert_non_null(strstr(svg, "0 merges, 0 substitutions"));
	free(svg);
	assert_int_equal(svg_timeline(f, "/nonexistent/audit.jsonl", NULL, &st, &si), STATUS_IO);
	fclose(f);
}

static void test_charts(void **state)
{
	double a[] = { 0.3, 0.1, 0.2 }, b[] = { NAN, 0.5 };
	struct svg_series s[2] = { { "ctl <A>", a, 3 }, { "treat & B", b, 2 } };
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	(void)state;
	svg_cdf(f, "t", "x", s, 2);
	fclose(f);
	assert_int_equal(count(buf, "class=\"cdf\""), 2);
	assert_non_null(strstr(buf, "ctl &lt;A&gt;"));
	assert_non_null(strstr(buf, "treat &amp; B"));
	assert_null(strstr(buf, "nan"));
	free(buf);
	f = open_memstream(&buf, &n);
	svg_repeats(f, "m", "s", s, 2);
	fclose(f);
	assert_int_equal(count(buf, "class=\"point\""), 4);   /* the NaN is not drawn */
	free(buf);
	/* no data at all still makes a document */
	f = open_memstream(&buf, &n);
	svg_cdf(f, "empty", "x", NULL, 0);
	fclose(f);
	assert_non_null(strstr(buf, "</svg>"));
	free(buf);
}

static void test_escape(void **state)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	(void)state;
	svg_escape(f, "a<b>&\"'\x01z");
	fclose(f);
	assert_string_equal(buf, "a&lt;b&gt;&amp;&quot;&apos;?z");
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timeline_marks),
		cmocka_unit_test(test_timeline_rule),
		cmocka_unit_test(test_timeline_empty_and_missing),
		cmocka_unit_test(test_charts),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
