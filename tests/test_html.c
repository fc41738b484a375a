/* test_html.c - the page of an audit and of an A/B directory: verdicts, marks, bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "report/html.h"
#include "tests/testutil.h"

static const char *write_file(const char *name, const char *text)
{
	return testutil_write(name, text, strlen(text));
}

static int setup(void **state)
{
	(void)state;
	return testutil_setup("test_html");
}

static int teardown(void **state)
{
	(void)state;
	return testutil_teardown();
}


/* The page of o into a buffer (caller frees); *rs the status. */
static char *page(const struct html_opts *o, struct html_stats *st, enum status *rs)
{
	struct status_info si = { 0 };
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	*rs = html_report(f, o, st, &si);
	fclose(f);
	return buf;
}

/* The confirmed incident: slot 7 takes a stale token at step 141. */
static const char INCIDENT[] =
	"{\"ev\":\"merge\",\"step\":120,\"host_pos\":[10,11],\"dev_pos\":[11,12],\"buf_step\":119,"
	"\"slot_req\":[\"r33\",\"r34\"],\"buf_req\":[\"r33\",\"r34\"],\"taken\":[true,true]}\n"
	"{\"ev\":\"merge\",\"step\":141,\"host_pos\":[22,27],\"dev_pos\":[-1,28],\"buf_step\":103,"
	"\"slot_req\":[\"r41\",\"r48\"],\"buf_req\":[null,\"r40\"],\"taken\":[false,true]}\n";

static void test_audit_page(void **state)
{
	struct html_opts o = { .to_step = -1 };
	struct html_stats st;
	enum status rs;
	char *h;

	(void)state;
	o.input = write_file("incident.jsonl", INCIDENT);
	/* the recorded decisions: one substitution, listed with its ids */
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_OK);
	assert_string_equal(st.mode, "audit");
	assert_int_equal(st.timeline.substs, 1);
	assert_non_null(strstr(h, "<!DOCTYPE html>"));
	assert_non_null(strstr(h, "<tr class=\"subst-row\"><td>141</td><td>1</td><td>r48</td><td>r40</td>"));
	/* self-contained: no script, nothing fetched */
	assert_null(strstr(h, "<script"));
	assert_null(strstr(h, "src="));
	assert_null(strstr(h, "href="));
	assert_null(strstr(h, "url("));
	free(h);
	/* lifetime replayed: it lets nothing through, but 0 of 2 merges cannot
	 * be told from bare's 1 of 2: validate PASS, the rate INCONCLUSIVE */
	o.rule = "lifetime";
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_OK);
	assert_string_equal(st.headline, "PASS");
	assert_int_equal(st.timeline.substs, 0);
	assert_int_equal(st.timeline.prevented, 1);
	assert_non_null(strstr(h, "<div class=\"verdict open\""));
	assert_non_null(strstr(h, "<div class=\"value\">INCONCLUSIVE</div>"));
	assert_non_null(strstr(h, "class=\"prevented\" data-step=\"141\" data-slot=\"1\""));
	free(h);
	/* bare replayed: the substitution is a residual one, FAIL */
	o.rule = "bare";
	h = page(&o, &st, &rs);
	assert_string_equal(st.headline, "FAIL");
	assert_non_null(strstr(h, "<div class=\"verdict fail\""));
	free(h);
	/* a rule the audit cannot judge is not evaluable, never PASS */
	o.rule = "stamp";
	h = page(&o, &st, &rs);
	assert_string_equal(st.headline, "not evaluable");
	free(h);
	o.rule = "nosuch";
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_USAGE);
	free(h);
}

/* A finished A/B of one round: its JSON report and one control boot. */
static void write_ab(const char *sub, const char *json)
{
	char d[512], p[600];
	FILE *f;

	snprintf(d, sizeof(d), "%s/%s", testutil_dir(), sub);
	mkdir(d, 0755);
	snprintf(p, sizeof(p), "%s/ab-report.json", d);
	f = fopen(p, "w");
	fputs(json, f);
	fclose(f);
	snprintf(p, sizeof(p), "%s/boot-00-control.cap.jsonl", d);
	f = fopen(p, "w");
	fprintf(f, "{\"src\":\"audit\",\"pid\":7,\"t\":100.5,\"mono\":1.5,\"event\":{\"ev\":\"merge\",\"step\":3,\"host_pos\":[4],"
		"\"dev_pos\":[5],\"slot_req\":[\"a\"],\"buf_req\":[\"b\"],\"gen\":2,\"buf_gen\":1,\"taken\":[true]}}\n"
		"{\"src\":\"audit\",\"pid\":7,\"t\":101.5,\"mono\":2.5,\"event\":{\"ev\":\"merge\",\"step\":9,\"host_pos\":[4],"
		"\"dev_pos\":[5],\"slot_req\":[\"c\"],\"buf_req\":[\"c\"],\"gen\":2,\"buf_gen\":2,\"taken\":[true]}}\n");
	fclose(f);
	snprintf(p, sizeof(p), "%s/boot-00-control.run.jsonl", d);
	f = fopen(p, "w");
	fprintf(f, "{\"kind\":\"run\",\"phase\":\"reference\",\"mono_start\":1.0}\n"
		"{\"kind\":\"run\",\"phase\":\"correctness\",\"mono_start\":2.0}\n");
	fclose(f);
}

static const char AB_JSON[] =
	"{\"control\":\"bare\",\"treatment\":\"stamp\",\"confidence\":0.95,\"rounds\":3,"
	"\"guard_verdict\":\"PASS\",\"guard_why\":\"told apart\",\"roles\":{"
	"\"control\":{\"arm\":\"bare\",\"boots\":3,\"failing_rate\":{\"k\":3,\"n\":30},"
	"\"substitution_rate\":{\"k\":5,\"n\":40},\"rounds\":{\"makespan_s\":[1,1,1]}},"
	"\"treatment\":{\"arm\":\"stamp\",\"boots\":3,\"substitutions\":0,\"prevented\":5,"
	"\"failing_rate\":{\"k\":0,\"n\":30},\"substitution_rate\":{\"k\":0,\"n\":40},"
	"\"fired_rate\":{\"k\":40,\"n\":40},\"forgone_rate\":{\"k\":0,\"n\":9},"
	"\"rounds\":{\"makespan_s\":[1.02,1.03,1.01]}},"
	"\"negative-control\":{\"arm\":\"bare\",\"boots\":3,\"rounds\":{\"makespan_s\":[1.01,0.99,1.0]}}},"
	"\"noise_floor\":{\"makespan\":0.01},\"cost_verdict\":\"%s\",\"cost\":%s,"
	"\"boots\":[{\"role\":\"control\",\"round\":0,\"capture\":\"/elsewhere/boot-00-control.cap.jsonl\","
	"\"records\":\"/elsewhere/boot-00-control.run.jsonl\"}]}\n";

static void test_ab_page(void **state)
{
	struct html_opts o = { .to_step = -1 };
	struct html_stats st;
	char json[4096], d[512];
	enum status rs;
	char *h;

	(void)state;
	/* published: every round's points, the band, the interval */
	snprintf(json, sizeof(json), AB_JSON, "published",
		 "[{\"figure\":\"makespan\",\"delta\":0.02,\"lo\":0.01,\"hi\":0.03,\"coverage\":0.75,"
		 "\"verdict\":\"WITHHELD\"}]");
	write_ab("ab1", json);
	snprintf(d, sizeof(d), "%s/ab1", testutil_dir());
	o.input = d;
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_OK);
	assert_string_equal(st.mode, "ab");
	assert_string_equal(st.headline, "PASS");
	assert_int_equal(st.files, 1);
	/* stamp replayed on the control: the stale take at step 3 is prevented */
	assert_int_equal(st.timeline.prevented, 1);
	assert_int_equal(st.timeline.substs, 0);
	/* the boot and its two runs are marked (the boot's start and its first run are one line) */
	assert_int_equal(st.timeline.boundaries, 2);
	assert_non_null(strstr(h, ">control r1, reference r1</text>"));
	assert_non_null(strstr(h, ">correctness r1</text>"));
	/* 3 rounds of treatment and negative-control points for the makespan */
	assert_int_equal(testutil_count(h, "class=\"cost-point\""), 3);
	assert_int_equal(testutil_count(h, "class=\"noise-point\""), 3);
	assert_int_equal(testutil_count(h, "class=\"noise-band\""), 1);
	assert_int_equal(st.cost_intervals, 1);
	assert_non_null(strstr(h, "<title>round 2: treatment - control +3.00%</title>"));
	/* 0 of 30 is said as what it rules out */
	assert_non_null(strstr(h, "rules out only rates above 11.6% at 95%"));
	free(h);
	/* withheld: the points stay, no interval is drawn */
	snprintf(json, sizeof(json), AB_JSON, "WITHHELD", "null");
	write_ab("ab2", json);
	snprintf(d, sizeof(d), "%s/ab2", testutil_dir());
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_OK);
	assert_int_equal(st.cost_intervals, 0);
	assert_non_null(strstr(h, "<div class=\"verdict open\"")); /* the cost box */
	assert_non_null(strstr(h, "WITHHELD: no interval is published"));
	free(h);
	/* a boot's records with a malformed line: the page fails, never drawn
	 * without the run boundaries that line may have held */
	snprintf(json, sizeof(json), AB_JSON, "WITHHELD", "null");
	write_ab("ab4", json);
	write_file("ab4/boot-00-control.run.jsonl",
		   "{\"kind\":\"run\",\"phase\":\"reference\",\"mono_start\":1.0}\n{\"kind\":\"run\",\"pha\n");
	snprintf(d, sizeof(d), "%s/ab4", testutil_dir());
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_PARSE);
	free(h);
	/* and a boot whose records are missing */
	write_ab("ab5", json);
	snprintf(d, sizeof(d), "%s/ab5/boot-00-control.run.jsonl", testutil_dir());
	unlink(d);
	snprintf(d, sizeof(d), "%s/ab5", testutil_dir());
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_IO);
	free(h);
	/* a directory without a finished A/B's report */
	snprintf(d, sizeof(d), "%s/ab3", testutil_dir());
	mkdir(d, 0755);
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_IO);
	free(h);
	write_file("ab3/ab-report.json", "{\"failed\":true}\n");
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_PARSE);
	free(h);
	/* a missing input */
	o.input = "/nonexistent/ab";
	h = page(&o, &st, &rs);
	assert_int_equal(rs, STATUS_IO);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_audit_page),
		cmocka_unit_test(test_ab_page),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
