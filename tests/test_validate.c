/* test_validate.c - the deployment gate's verdicts per file and its report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <zlib.h>

#include "replay/validate.h"
#include "tests/testutil.h"

static const struct validate_opts no_limit = { .max_forgone_pct = -1 };

static int setup(void **state)
{
	(void)state;
	return testutil_setup("test_validate");
}

static int teardown(void **state)
{
	(void)state;
	return testutil_teardown();
}

static const char *tmpfile_with(const char *name, const char *text)
{
	return testutil_write(name, text, strlen(text));
}

/* One rule replayed over the given files (unreadable ones are recorded, not fatal). */
static struct replay *run(const char *rule, const char *const *files, size_t n)
{
	struct rule r;
	struct replay_opts o = { .rules = &r, .n_rules = 1, .keep_sites = true };
	struct status_info si;
	struct replay *rp;
	FILE *devnull = fopen("/dev/null", "w");
	size_t i;

	assert_int_equal(rule_parse(rule, &r, NULL), STATUS_OK);
	o.diag = devnull;
	rp = replay_new(&o);
	assert_non_null(rp);
	for (i = 0; i < n; i++) {
		enum status st = replay_add_file(rp, files[i], &si);
		assert_true(st == STATUS_OK || st == STATUS_IO);
	}
	fclose(devnull);
	return rp;
}

static enum validate_file_verdict verdict1(const char *rule, const char *file,
					   const struct validate_opts *o)
{
	struct replay *rp = run(rule, &file, 1);
	enum validate_file_verdict v = validate_file(replay_file_at(rp, 0), 0, o);

	replay_free(rp);
	return v;
}

static char *report(const struct replay *rp, const struct validate_opts *o, bool json, int *ok)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*ok = validate_report(rp, 0, o, json, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(validate_verdict_name(VALIDATE_PASS), "pass");
	assert_string_equal(validate_verdict_name(VALIDATE_SUBSTITUTION), "substitution");
	assert_string_equal(validate_verdict_name(VALIDATE_NOT_EVALUABLE), "not-evaluable");
	assert_string_equal(validate_verdict_name(VALIDATE_UNREADABLE), "unreadable");
	assert_string_equal(validate_verdict_name(VALIDATE_MALFORMED), "malformed");
	assert_string_equal(validate_verdict_name(VALIDATE_TOO_COSTLY), "too-costly");
}

static void test_residual_coinciding(void **state)
{
	static const char *const f = "fixtures/audit/residual-coinciding.jsonl";
	struct replay *rp;
	char *text;
	int ok;

	(void)state;
	assert_int_equal(verdict1("batch", f, &no_limit), VALIDATE_SUBSTITUTION);
	assert_int_equal(verdict1("bare", f, &no_limit), VALIDATE_SUBSTITUTION);
	assert_int_equal(verdict1("batch+lifetime", f, &no_limit), VALIDATE_PASS);
	assert_int_equal(verdict1("lifetime+batch", f, &no_limit), VALIDATE_PASS);
	assert_int_equal(verdict1("stamp", f, &no_limit), VALIDATE_PASS);
	assert_int_equal(verdict1("lifetime", f, &no_limit), VALIDATE_PASS);

	rp = run("batch", &f, 1);
	assert_int_equal(replay_file_at(rp, 0)->n_sites, 1);
	assert_int_equal(replay_file_at(rp, 0)->sites[0].step, 202);
	assert_int_equal(replay_file_at(rp, 0)->sites[0].slot, 0);
	assert_int_equal(replay_file_at(rp, 0)->sites[0].line, 2);
	assert_int_equal(replay_file_at(rp, 0)->sites[0].evidence, EVIDENCE_STAMP);
	text = report(rp, &no_limit, false, &ok);
	assert_int_equal(ok, 0);
	assert_non_null(strstr(text, "rule batch over 1 file: FAIL"));
	assert_non_null(strstr(text, "fixtures/audit/residual-coinciding.jsonl: 1 substitution let through"));
	assert_non_null(strstr(text, "fixtures/audit/residual-coinciding.jsonl:2: step 202 slot 0 (evidence stamp)"));
	free(text);
	replay_free(rp);

	rp = run("batch+lifetime", &f, 1);
	text = report(rp, &no_limit, false, &ok);
	assert_int_equal(ok, 1);
	assert_non_null(strstr(text, "rule batch+lifetime over 1 file: PASS"));
	assert_non_null(strstr(text, "prevented 1"));
	free(text);
	replay_free(rp);
}

static void test_not_evaluable(void **state)
{
	const char *empty = tmpfile_with("empty.jsonl", "");
	const char *ctx_only = tmpfile_with("ctx.jsonl", "{\"ev\":\"decode\",\"step\":1}\n");
	struct replay *rp;
	char *text;
	int ok;

	(void)state;
	/* stamp on audits without stamps */
	assert_int_equal(verdict1("stamp", "fixtures/audit/incident-confirmed.jsonl", &no_limit),
			 VALIDATE_NOT_EVALUABLE);
	assert_int_equal(verdict1("stamp", "fixtures/audit/legacy-positions-only.jsonl", &no_limit),
			 VALIDATE_NOT_EVALUABLE);
	assert_int_equal(verdict1("lifetime", "fixtures/audit/legacy-positions-only.jsonl", &no_limit),
			 VALIDATE_NOT_EVALUABLE);
	/* a positions-only audit gives bare nothing to count as a substitution either */
	assert_int_equal(verdict1("bare", "fixtures/audit/legacy-positions-only.jsonl", &no_limit),
			 VALIDATE_PASS);
	assert_int_equal(verdict1("batch", "fixtures/audit/incident-confirmed.jsonl", &no_limit),
			 VALIDATE_PASS);
	/* no merge events at all */
	assert_int_equal(verdict1("bare", empty, &no_limit), VALIDATE_NOT_EVALUABLE);
	assert_int_equal(verdict1("batch", ctx_only, &no_limit), VALIDATE_NOT_EVALUABLE);
	/* only shape fallbacks: nothing decided */
	assert_int_equal(verdict1("bare", tmpfile_with("shape.jsonl",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1,2],\"dev_pos\":[2]}\n"), &no_limit),
		VALIDATE_NOT_EVALUABLE);

	rp = run("bare", &empty, 1);
	text = report(rp, &no_limit, false, &ok);
	assert_int_equal(ok, 0);
	assert_non_null(strstr(text, "not evaluable: no merge events"));
	free(text);
	replay_free(rp);

	{
		static const char *const f = "fixtures/audit/incident-confirmed.jsonl";
		rp = run("stamp", &f, 1);
		text = report(rp, &no_limit, false, &ok);
		assert_int_equal(ok, 0);
		assert_non_null(strstr(text, "not evaluable: the rule was skipped on every merge event"));
		free(text);
		replay_free(rp);
	}
}

static void test_unreadable_and_malformed(void **state)
{
	char missing[512];
	const char *bad = tmpfile_with("bad.jsonl", "{\"not json\n{\"ev\":\"merge\"}\n");
	struct replay *rp;
	char *text;
	int ok;

	(void)state;
	snprintf(missing, sizeof(missing), "%s/missing.jsonl", testutil_dir());
	assert_int_equal(verdict1("bare", missing, &no_limit), VALIDATE_UNREADABLE);
	assert_int_equal(verdict1("bare", bad, &no_limit), VALIDATE_MALFORMED);
	{
		const char *m = missing;
		rp = run("bare", &m, 1);
		text = report(rp, &no_limit, false, &ok);
		assert_int_equal(ok, 0);
		assert_non_null(strstr(text, "missing.jsonl: could not be read"));
		free(text);
		replay_free(rp);
	}
	rp = run("bare", &bad, 1);
	text = report(rp, &no_limit, false, &ok);
	assert_int_equal(ok, 0);
	assert_non_null(strstr(text, "no readable merge events (2 malformed lines)"));
	assert_non_null(strstr(text, "malformed lines: 2"));
	free(text);
	replay_free(rp);
	/* some malformed lines beside good merges: judged on the good ones */
	assert_int_equal(verdict1("bare", tmpfile_with("half.jsonl",
		"not json\n{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1]}\n"), &no_limit),
		VALIDATE_PASS);
}

static void test_forgone_limit(void **state)
{
	static const char *const f = "fixtures/audit/garbage-drift.jsonl";
	struct validate_opts half = { .max_forgone_pct = 50 }, all = { .max_forgone_pct = 100 };
	struct validate_opts zero = { .max_forgone_pct = 0 };
	struct replay *rp;
	char *text;
	int ok;

	(void)state;
	/* batch forgoes both of bare's 2 fresh takes here: 100% */
	assert_int_equal(verdict1("batch", f, &no_limit), VALIDATE_PASS);
	assert_int_equal(verdict1("batch", f, &half), VALIDATE_TOO_COSTLY);
	assert_int_equal(verdict1("batch", f, &all), VALIDATE_PASS);
	/* a zero limit refuses any forgone take; lifetime forgoes nothing and passes */
	assert_int_equal(verdict1("batch", f, &zero), VALIDATE_TOO_COSTLY);
	assert_int_equal(verdict1("lifetime", f, &zero), VALIDATE_PASS);
	rp = run("batch", &f, 1);
	text = report(rp, &half, false, &ok);
	assert_int_equal(ok, 0);
	/* every share with its Clopper-Pearson interval */
	assert_non_null(strstr(text, "forgone 2 of 2 bare takes (100%, 95% CI 15.8% to 100%), above 50.00%"));
	assert_non_null(strstr(text, "cost: forgone 2 of 2 bare takes (100%, 95% CI 15.8% to 100%), fired on 2 "
				     "of 2 merges (100%, 95% CI 15.8% to 100%)"));
	assert_non_null(strstr(text, "residual: substitutions in 0 of 2 merges (rules out only rates above 84.2% "
				     "at 95%)"));
	free(text);
	replay_free(rp);
}

static void test_several_files_and_json(void **state)
{
	static const char *const files[] = {
		"fixtures/audit/residual-coinciding.jsonl",
		"fixtures/audit/incident-confirmed.jsonl",
		"fixtures/audit/slot-reuse.jsonl",
	};
	struct replay *rp;
	struct jdoc *d;
	struct status_info si;
	const struct jval *root, *pf, *v;
	char *text;
	int ok;

	(void)state;
	rp = run("batch", files, 3);
	assert_int_equal(validate_file(replay_file_at(rp, 0), 0, &no_limit), VALIDATE_SUBSTITUTION);
	assert_int_equal(validate_file(replay_file_at(rp, 1), 0, &no_limit), VALIDATE_PASS);
	assert_int_equal(validate_file(replay_file_at(rp, 2), 0, &no_limit), VALIDATE_SUBSTITUTION);
	text = report(rp, &no_limit, true, &ok);
	assert_int_equal(ok, 0);
	d = jdoc_new(strlen(text));
	status_info_clear(&si);
	if (jdoc_parse(d, text, strlen(text), &si))
		fail_msg("validate --json does not parse: %s", si.msg);
	root = jdoc_root(d);
	assert_string_equal(jdoc_get(d, root, "rule")->u.s, "batch");
	assert_string_equal(jdoc_get(d, root, "verdict")->u.s, "FAIL");
	assert_int_equal(jdoc_get(d, root, "files")->u.i, 3);
	assert_int_equal(jdoc_get(d, root, "files_failed")->u.i, 2);
	assert_int_equal(jdoc_get(d, root, "substitutions")->u.i, 2);
	assert_int_equal(jdoc_get(d, root, "prevented")->u.i, 1);
	pf = jdoc_get(d, root, "per_file");
	assert_int_equal(pf->n, 3);
	v = jdoc_kid(d, pf);
	assert_string_equal(jdoc_get(d, v, "verdict")->u.s, "substitution");
	v = jdoc_kid(d, jdoc_get(d, v, "substitution_sites"));
	assert_int_equal(jdoc_get(d, v, "step")->u.i, 202);
	assert_int_equal(jdoc_get(d, v, "slot")->u.i, 0);
	assert_string_equal(jdoc_get(d, v, "evidence")->u.s, "stamp");
	v = jdoc_next(d, jdoc_kid(d, pf));
	assert_string_equal(jdoc_get(d, v, "verdict")->u.s, "pass");
	jdoc_free(d);
	free(text);
	replay_free(rp);

	/* batch+lifetime still lets the slot-reuse substitution through ... */
	rp = run("batch+lifetime", files, 3);
	text = report(rp, &no_limit, false, &ok);
	assert_int_equal(ok, 0);
	assert_non_null(strstr(text, "slot-reuse.jsonl:3: step 30 slot 2 (evidence lifetime)"));
	free(text);
	replay_free(rp);
	/* ... with the slot-reuse mask added it passes every file */
	rp = run("lifetime+batch+prefilled", files, 3);
	text = report(rp, &no_limit, false, &ok);
	assert_int_equal(ok, 1);
	assert_non_null(strstr(text, "rule prefilled+batch+lifetime over 3 files: PASS"));
	free(text);
	replay_free(rp);

	/* no files: nothing was validated, so it does not pass */
	rp = run("batch", files, 0);
	text = report(rp, &no_limit, false, &ok);
	assert_int_equal(ok, 0);
	assert_non_null(strstr(text, "over 0 files: FAIL"));
	free(text);
	replay_free(rp);
}

/* The residual and the cost are rates of the merges R evaluated: a shape fallback is no trial. */
static void test_rates_of_evaluated_merges(void **state)
{
	const char *f = tmpfile_with("rates.jsonl",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5,6],\"dev_pos\":[5]}\n"
		"{\"ev\":\"merge\",\"step\":2,\"host_pos\":[5,6],\"dev_pos\":[5,-1],\"buf_step\":1}\n"
		"{\"ev\":\"merge\",\"step\":3,\"host_pos\":[5],\"dev_pos\":[6]}\n");
	struct replay *rp = run("batch", &f, 1);
	struct jdoc *d;
	struct status_info si;
	const struct jval *root;
	char *text;
	int ok;

	(void)state;
	text = report(rp, &no_limit, true, &ok);
	d = jdoc_new(strlen(text));
	status_info_clear(&si);
	if (jdoc_parse(d, text, strlen(text), &si))
		fail_msg("validate --json does not parse: %s", si.msg);
	root = jdoc_root(d);
	assert_int_equal(jdoc_get(d, root, "merges")->u.i, 3);
	assert_int_equal(jdoc_get(d, jdoc_get(d, root, "substitution_rate"), "n")->u.i, 2);
	assert_int_equal(jdoc_get(d, jdoc_get(d, root, "fired_rate"), "k")->u.i, 1);
	assert_int_equal(jdoc_get(d, jdoc_get(d, root, "fired_rate"), "n")->u.i, 2);
	jdoc_free(d);
	free(text);
	text = report(rp, &no_limit, false, &ok);
	assert_non_null(strstr(text, "residual: substitutions in 0 of 2 merges"));
	assert_non_null(strstr(text, "fired on 1 of 2 merges"));
	free(text);
	replay_free(rp);
}

/* A truncated gzip fails the gate (as truncated, unless a substitution was read); a copy is judged once. */
static void test_truncated_and_duplicate(void **state)
{
	static const char text[] =
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"gen\":1,\"buf_gen\":1}\n"
		"{\"ev\":\"merge\",\"step\":2,\"host_pos\":[1],\"dev_pos\":[1],\"gen\":1,\"buf_gen\":1}\n";
	unsigned char z[512];
	uLongf zn = sizeof(z);
	z_stream zs;
	const char *files[3];
	struct replay *rp;
	char *out;
	int ok;

	(void)state;
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (Bytef *)(uintptr_t)text;
	zs.avail_in = sizeof(text) - 1;
	zs.next_out = z;
	zs.avail_out = (uInt)zn;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	zn = zs.total_out;
	deflateEnd(&zs);
	files[0] = testutil_write("cut.jsonl.gz", (const char *)z, zn - 4);
	files[1] = tmpfile_with("whole.jsonl", text);
	files[2] = tmpfile_with("whole-copy.jsonl", text);
	rp = run("stamp", files, 3);
	assert_int_equal(validate_file(replay_file_at(rp, 0), 0, &no_limit), VALIDATE_TRUNCATED);
	assert_int_equal(validate_file(replay_file_at(rp, 1), 0, &no_limit), VALIDATE_PASS);
	assert_int_equal(validate_file(replay_file_at(rp, 2), 0, &no_limit), VALIDATE_DUPLICATE);
	assert_string_equal(validate_verdict_name(VALIDATE_TRUNCATED), "truncated");
	assert_string_equal(validate_verdict_name(VALIDATE_DUPLICATE), "duplicate");
	out = report(rp, &no_limit, false, &ok);
	assert_false(ok);
	assert_non_null(strstr(out, "cut.jsonl.gz: truncated gzip after 2 lines: the file was not all read"));
	assert_non_null(strstr(out, "whole-copy.jsonl: the same content as"));
	free(out);
	replay_free(rp);
	/* without the cut file the copy neither passes nor fails: PASS */
	rp = run("stamp", files + 1, 2);
	out = report(rp, &no_limit, true, &ok);
	assert_true(ok);
	assert_non_null(strstr(out, "\"verdict\":\"duplicate\""));
	free(out);
	replay_free(rp);
	/* the gate refused the keep on every step: not evaluable, and said why */
	files[0] = "fixtures/audit/gate-refused.jsonl";
	rp = run("batch", files, 1);
	assert_int_equal(validate_file(replay_file_at(rp, 0), 0, &no_limit), VALIDATE_NOT_EVALUABLE);
	out = report(rp, &no_limit, false, &ok);
	assert_false(ok);
	assert_non_null(strstr(out, "not evaluable: the keep never ran: the capability gate refused it on 3 steps"));
	free(out);
	replay_free(rp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_residual_coinciding),
		cmocka_unit_test(test_not_evaluable),
		cmocka_unit_test(test_unreadable_and_malformed),
		cmocka_unit_test(test_forgone_limit),
		cmocka_unit_test(test_several_files_and_json),
		cmocka_unit_test(test_rates_of_evaluated_merges),
		cmocka_unit_test(test_truncated_and_duplicate),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
