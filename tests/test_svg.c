/* test_svg.c - the timeline's marks and counts, the charts, escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>
#include <cmocka.h>

#include "report/svg.h"
#include "analyzer/tally.h"
#include "tests/testutil.h"

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
	assert_int_equal(testutil_count(svg, "class=\"subst\""), 1);
	/* nothing on step 30 says whether slot 7's buffer was stale: refused, staleness unknown */
	assert_int_equal(st.refused, 1);
	assert_int_equal(testutil_count(svg, "class=\"refused\""), 1);
	assert_non_null(strstr(svg, "class=\"refused\" data-step=\"30\" data-slot=\"7\""));
	assert_non_null(strstr(svg, "class=\"subst\" data-step=\"31\" data-slot=\"0\""));
	/* its tooltip names the request and the one the buffer was written for */
	assert_non_null(strstr(svg, "step 31 slot 0: SUBSTITUTION (taken, stale); request a, buffer written for b; "
				    "evidence request"));
	assert_int_equal(testutil_count(svg, "class=\"subst-marker\""), 1);
	assert_int_equal(testutil_count(svg, "class=\"density-subst\""), 1);
	assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(svg, "</svg>\n"));
	free(svg);

	/* a step window keeps only what is inside */
	o.from_step = 31;
	o.to_step = 31;
	svg = capture_timeline(audit, &o, &st, &rst);
	assert_int_equal(st.merges, 1);
	assert_int_equal(st.rejects, 0);
	assert_int_equal(testutil_count(svg, "class=\"subst\""), 1);
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

static void test_timeline_counterfactual(void **state)
{
	/* the running code took slot 0 (stale: the buffer is of generation 1, the
	 * batch of 2); --rule stamp replays the stamp guard's decisions on the
	 * same audit, the recorded `taken` notwithstanding: the take it refuses
	 * is prevented, not a substitution */
	const char audit[] =
		"{\"ev\":\"merge\",\"step\":7,\"host_pos\":[5,9],\"dev_pos\":[6,9],\"gen\":2,\"buf_gen\":1,"
		"\"taken\":[true,true]}\n";
	struct svg_timeline_opts o = { .to_step = -1 };
	struct svg_timeline_stats st;
	enum status rst;
	char *svg;

	(void)state;
	svg = capture_timeline(audit, &o, &st, &rst);
	assert_int_equal(st.substs, 2);       /* as recorded: both taken, both stale */
	free(svg);
	o.rule = "stamp";
	svg = capture_timeline(audit, &o, &st, &rst);
	assert_int_equal(rst, STATUS_OK);
	assert_int_equal(st.substs, 0);
	assert_int_equal(st.rejects, 2);
	assert_int_equal(st.prevented, 2);
	assert_int_equal(testutil_count(svg, "class=\"prevented\""), 2);
	assert_non_null(strstr(svg, "stamp replayed on"));
	free(svg);
}

static void test_timeline_classes(void **state)
{
	/* a fresh bare match refused is forgone, a stale one prevented; a
	 * rule that cannot judge an event decides nothing there */
	const char audit[] =
		"{\"ev\":\"merge\",\"step\":10,\"host_pos\":[5,9],\"dev_pos\":[6,9],\"buf_step\":9,"
		"\"slot_req\":[\"a\",\"b\"],\"buf_req\":[\"a\",\"x\"],\"mode_switched\":true}\n"
		"{\"ev\":\"merge\",\"step\":11,\"host_pos\":[5],\"dev_pos\":[6]}\n";
	struct svg_timeline_opts o = { .rule = "lifetime", .to_step = -1 };
	struct svg_timeline_stats st;
	enum status rst;
	char *svg = capture_timeline(audit, &o, &st, &rst);

	(void)state;
	assert_int_equal(rst, STATUS_OK);
	assert_int_equal(st.forgone, 1);     /* slot 0: its own request's buffer */
	assert_int_equal(st.prevented, 1);   /* slot 1: written for x */
	assert_int_equal(st.skipped, 1);     /* step 11 has no buf_step */
	assert_int_equal(st.refused, 0);
	assert_int_equal(testutil_count(svg, "class=\"forgone\""), 1);
	assert_int_equal(testutil_count(svg, "class=\"density-forgone\""), 1);
	assert_int_equal(testutil_count(svg, "class=\"density-prevented\""), 1);
	free(svg);
}

static void test_timeline_model(void **state)
{
	/* two files: a boundary at the second, one where the pid changes, and
	 * density bins that merge in pairs past SVG_BINS merges */
	char a[] = "/tmp/test_svg_a.XXXXXX", b[] = "/tmp/test_svg_b.XXXXXX";
	struct svg_timeline_opts o = { .rule = "batch", .to_step = -1 };
	struct status_info si = { 0 };
	struct svg_tl *t = NULL;
	char *buf = NULL;
	size_t n = 0, i;
	FILE *f;
	int fd;

	(void)state;
	fd = mkstemp(a);
	f = fdopen(fd, "w");
	for (i = 0; i < 5000; i++)
		fprintf(f, "{\"src\":\"audit\",\"pid\":%d,\"mono\":%zu,\"event\":{\"ev\":\"merge\",\"step\":%zu,"
			"\"host_pos\":[5,-1],\"dev_pos\":[%d,-1],\"slot_req\":[\"r%zu\",null],\"buf_req\":[\"%s%zu\",null]}}\n",
			i < 10 ? 1 : 2, i, i, i % 100 == 0 ? 6 : 5, i, i % 100 == 0 ? "old" : "r", i);
	fclose(f);
	fd = mkstemp(b);
	f = fdopen(fd, "w");
	fputs("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5,-1],\"dev_pos\":[6,-1]}\n", f);
	fclose(f);
	assert_int_equal(svg_tl_new(&t, &o, &si), STATUS_OK);
	assert_int_equal(svg_tl_add(t, a, "boot 0", NULL, 0, &si), STATUS_OK);
	assert_int_equal(svg_tl_add(t, b, "boot 1", NULL, 0, &si), STATUS_OK);
	assert_int_equal(svg_tl_stats(t)->merges, 5001);
	assert_int_equal(svg_tl_stats(t)->drawn, SVG_MAX_COLUMNS);
	/* batch lets every one of the 50 stale takes through: the residual class */
	assert_int_equal(svg_tl_stats(t)->substs, 50);
	assert_int_equal(svg_tl_n_substs(t), 50);
	assert_string_equal(svg_tl_subst(t, 1)->req, "r100");
	assert_string_equal(svg_tl_subst(t, 1)->buf_req, "old100");
	assert_int_equal(tally_counts(svg_tl_tally(t), 0)->substitutions, 50);   /* bare */
	assert_int_equal(tally_counts(svg_tl_tally(t), svg_tl_tally_rule(t))->substitutions, 50);
	assert_int_equal(svg_tl_stats(t)->boundaries, 3);   /* boot 0, pid 2, boot 1 */
	f = open_memstream(&buf, &n);
	svg_tl_draw(t, f, false);
	fclose(f);
	assert_null(strstr(buf, "<?xml"));
	assert_non_null(strstr(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\""));
	assert_int_equal(testutil_count(buf, "class=\"boundary\""), 2);   /* the third lies past the drawn columns */
	assert_non_null(strstr(buf, ">pid 2</text>"));
	/* every merge is in the strip, the 50 substitutions in 50 of its bins */
	assert_non_null(strstr(buf, "all 5001 merges in order, 4 per bin"));
	assert_int_equal(testutil_count(buf, "class=\"density-subst\""), 50);
	assert_true(testutil_count(buf, "class=\"tick\"") > 5);
	free(buf);
	svg_tl_free(t);
	remove(a);
	remove(b);
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
	assert_int_equal(testutil_count(buf, "class=\"cdf\""), 2);
	assert_non_null(strstr(buf, "ctl &lt;A&gt;"));
	assert_non_null(strstr(buf, "treat &amp; B"));
	assert_null(strstr(buf, "nan"));
	free(buf);
	f = open_memstream(&buf, &n);
	svg_repeats(f, "m", "s", s, 2);
	fclose(f);
	assert_int_equal(testutil_count(buf, "class=\"point\""), 4);   /* the NaN is not drawn */
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
		cmocka_unit_test(test_timeline_counterfactual),
		cmocka_unit_test(test_timeline_classes),
		cmocka_unit_test(test_timeline_model),
		cmocka_unit_test(test_timeline_empty_and_missing),
		cmocka_unit_test(test_charts),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
