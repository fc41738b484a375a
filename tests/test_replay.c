/*
 * test_replay.c - replaying the fixture audits (run from the repo root): the
 * counts equal the hand-verified .expected.json beside each fixture, read
 * with the library's own parser; --explain; several files; strict mode.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/jsonw.h"
#include "replay/replay.h"
#include "tests/testutil.h"

static const char *const fixtures[] = {
	"capture-mixed", "garbage-drift", "incident-confirmed", "legacy-positions-only",
	"residual-coinciding", "residual-step202", "shape-fallback", "slot-reuse",
	"capture-two-servers", "capture-dp-drift", "gate-refused", "capture-uncertain",
};


static int setup(void **state)
{
	(void)state;
	return testutil_setup("test_replay");
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

/* Whole file into a malloc'd buffer (caller frees); *n its length. */
static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	if (!f)
		fail_msg("cannot open %s (tests run from the repo root)", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len >= 0);
	rewind(f);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	*n = (size_t)len;
	return buf;
}

static struct replay *replay_with(const char *rules, int64_t max_pos, bool explain, int64_t step,
				  FILE *diag)
{
	static struct rule rs[RULE_MAX_LIST];
	struct replay_opts o = { 0 };
	struct status_info si;
	struct replay *r;
	size_t n = 0;

	if (rules) {
		assert_int_equal(rule_list_parse(rules, rs, RULE_MAX_LIST, &n, &si), STATUS_OK);
	} else {
		n = rule_list_default(rs, RULE_MAX_LIST);
	}
	o.rules = rs;
	o.n_rules = n;
	o.max_pos = max_pos;
	o.explain = explain;
	o.explain_step = step;
	o.diag = diag;
	o.keep_sites = true;
	r = replay_new(&o);
	assert_non_null(r);
	return r;
}

static void add(struct replay *r, const char *path)
{
	struct status_info si;

	status_info_clear(&si);
	if (replay_add_file(r, path, &si))
		fail_msg("%s: %s", path, si.msg);
}

static size_t rule_index(const struct tally *t, const char *name)
{
	size_t i;

	for (i = 0; i < tally_n_rules(t); i++)
		if (!strcmp(tally_rule(t, i)->name, name))
			return i;
	fail_msg("rule %s not replayed", name);
	return 0;
}

static uint64_t count_of(const struct tally *t, size_t i, const char *key)
{
	const struct tally_counts *c = tally_counts(t, i);

	if (!strcmp(key, "merges")) return c->merges;
	if (!strcmp(key, "taken")) return c->taken;
	if (!strcmp(key, "substitutions")) return c->substitutions;
	if (!strcmp(key, "unverified")) return c->unverified;
	if (!strcmp(key, "prevented")) return c->prevented;
	if (!strcmp(key, "forgone")) return c->forgone;
	if (!strcmp(key, "rejected_unverified")) return c->rejected_unverified;
	if (!strcmp(key, "fired")) return c->fired;
	if (!strcmp(key, "skipped")) return c->skipped;
	if (!strcmp(key, "shape_fallback")) return c->shape_fallback;
	if (!strcmp(key, "evaluable")) return !tally_not_evaluable(t, i);
	fail_msg("unknown count '%s' in an expected file", key);
	return 0;
}

/* Compares r's totals with one .expected.json; returns the number of values checked. */
static size_t compare_expected(const struct replay *r, const char *name)
{
	const struct tally *t = replay_tally(r);
	char path[256];
	size_t n, checked = 0;
	char *text;
	struct jdoc *d;
	struct status_info si;
	const struct jval *root, *rules, *rv, *kv, *v;
	struct tally_fingerprint fp;
	uint64_t lost = 0;
	size_t i;

	snprintf(path, sizeof(path), "fixtures/audit/%s.expected.json", name);
	text = slurp(path, &n);
	d = jdoc_new(n);
	assert_non_null(d);
	status_info_clear(&si);
	if (jdoc_parse(d, text, n, &si))
		fail_msg("%s: %s", path, si.msg);
	root = jdoc_root(d);
	rules = jdoc_get(d, root, "rules");
	assert_non_null(rules);
	assert_int_equal(rules->n, 6);
	for (rv = jdoc_kid(d, rules); rv; rv = jdoc_next(d, rv)) {
		size_t ri = rule_index(t, rv->key);
		for (kv = jdoc_kid(d, rv); kv; kv = jdoc_next(d, kv)) {
			uint64_t want = kv->type == JT_TRUE ? 1 : kv->type == JT_FALSE ? 0
				      : (uint64_t)kv->u.i;
			uint64_t got = count_of(t, ri, kv->key);
			if (got != want)
				fail_msg("%s: rule %s %s = %llu, expected %llu", name, rv->key, kv->key,
					 (unsigned long long)got, (unsigned long long)want);
			checked++;
		}
	}
	v = jdoc_get(d, jdoc_get(d, root, "garbage"), "count");
	assert_int_equal(tally_garbage(t)->count, v->u.i);
	v = jdoc_get(d, jdoc_get(d, root, "garbage"), "float32_like");
	assert_int_equal(tally_garbage(t)->float32_like, v->u.i);
	assert_int_equal(replay_malformed(r), jdoc_get(d, root, "malformed")->u.i);
	for (i = 0; i < replay_n_files(r); i++)
		lost += replay_file_at(r, i)->stats.capture_lost;
	assert_int_equal(lost, jdoc_get(d, root, "capture_lost")->u.i);
	tally_fingerprint(t, &fp);
	v = jdoc_get(d, root, "fingerprint");
	assert_string_equal(tally_verdict_name(fp.verdict), jdoc_get(d, v, "verdict")->u.s);
	v = jdoc_get(d, v, "consistent");
	assert_int_equal(fp.n_consistent, v->n);
	for (i = 0, kv = jdoc_kid(d, v); kv; kv = jdoc_next(d, kv), i++)
		assert_string_equal(tally_rule(t, fp.consistent[i])->name, kv->u.s);
	checked += 6 + fp.n_consistent;
	jdoc_free(d);
	free(text);
	return checked;
}

static void test_fixtures_match_expected(void **state)
{
	size_t i, checked = 0;

	(void)state;
	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		char path[256];
		struct replay *r = replay_with(NULL, 0, false, 0, NULL);
		snprintf(path, sizeof(path), "fixtures/audit/%s.jsonl", fixtures[i]);
		add(r, path);
		assert_int_equal(replay_n_files(r), 1);
		assert_false(replay_file_at(r, 0)->unreadable);
		checked += compare_expected(r, fixtures[i]);
		replay_free(r);
	}
	/* 12 fixtures x (6 rules x 11 values + garbage, malformed, lost, verdict) at least */
	assert_true(checked >= 12 * (66 + 6));
}

/* The spec's known cases, stated here as well as in the expected files. */
static void test_known_cases(void **state)
{
	struct replay *r;
	const struct tally *t;

	(void)state;
	r = replay_with(NULL, 0, false, 0, NULL);
	add(r, "fixtures/audit/incident-confirmed.jsonl");
	t = replay_tally(r);
	assert_int_equal(tally_counts(t, 0)->substitutions, 1);   /* bare */
	assert_int_equal(tally_counts(t, 2)->prevented, 1);       /* batch */
	assert_int_equal(tally_counts(t, 2)->fired, 1);
	assert_int_equal(tally_counts(t, 2)->substitutions, 0);
	assert_int_equal(tally_not_evaluable(t, 4), 1);           /* stamp */
	replay_free(r);

	r = replay_with(NULL, 0, false, 0, NULL);
	add(r, "fixtures/audit/residual-coinciding.jsonl");
	t = replay_tally(r);
	assert_int_equal(tally_counts(t, 2)->substitutions, 1);   /* batch lets it through */
	assert_int_equal(tally_counts(t, 2)->fired, 0);
	assert_int_equal(tally_counts(t, 3)->prevented, 1);       /* lifetime stops it */
	assert_int_equal(tally_counts(t, 4)->prevented, 1);       /* stamp stops it */
	assert_int_equal(tally_garbage(t)->float32_like, 1);
	assert_int_equal(tally_garbage(t)->values[0].value, 1206993122);
	assert_int_equal(replay_file_at(r, 0)->n_sites, 4);       /* bare, prefilled, batch, bound */
	replay_free(r);

	r = replay_with(NULL, 0, false, 0, NULL);
	add(r, "fixtures/audit/slot-reuse.jsonl");
	t = replay_tally(r);
	assert_int_equal(tally_counts(t, 0)->taken, 3);
	assert_int_equal(tally_counts(t, 1)->taken, 2);
	assert_int_equal(tally_counts(t, 1)->prevented, 1);
	replay_free(r);
}

static char *capture_output(void (*fn)(const struct replay *, FILE *), const struct replay *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fn(r, f);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static void test_explain_drift(void **state)
{
	struct replay *r = replay_with(NULL, 0, true, 202, NULL);
	char *text;

	(void)state;
	add(r, "fixtures/audit/garbage-drift.jsonl");
	assert_int_equal(replay_n_explained(r), 1);
	text = capture_output(replay_print_explain_text, r);
	assert_non_null(strstr(text, "fixtures/audit/garbage-drift.jsonl:4: merge at step 202"));
	assert_non_null(strstr(text, "grew by 111 over the 111 steps since step 91"));
	assert_non_null(strstr(text, "reads 123522.63 (float32-like)"));
	/* -7 is garbage but not float32-like, and has no drift (slot 3 was -1 before) */
	assert_non_null(strstr(text, "dev_pos -7"));
	assert_null(strstr(text, "since step 150"));
	free(text);
	replay_free(r);

	/* without --explain nothing is described */
	r = replay_with(NULL, 0, false, 202, NULL);
	add(r, "fixtures/audit/garbage-drift.jsonl");
	assert_int_equal(replay_n_explained(r), 0);
	replay_free(r);
	/* a step with no merge: nothing either */
	r = replay_with(NULL, 0, true, 150, NULL);
	add(r, "fixtures/audit/garbage-drift.jsonl");
	assert_int_equal(replay_n_explained(r), 0);
	replay_free(r);
}

/* Drift is said only when it matches the steps, and never across files. */
static void test_explain_drift_cases(void **state)
{
	const char *a = tmpfile_with("d1.jsonl",
		"{\"ev\":\"merge\",\"step\":10,\"host_pos\":[1,1,1],\"dev_pos\":[1206993122,-5,900000000]}\n"
		"{\"ev\":\"merge\",\"step\":20,\"host_pos\":[1,1,1],\"dev_pos\":[1206993200,-5,900000010]}\n");
	const char *b = tmpfile_with("d2.jsonl",
		"{\"ev\":\"merge\",\"step\":30,\"host_pos\":[1,1,1],\"dev_pos\":[1206993210,-5,900000020]}\n");
	struct replay *r;
	char *text;

	(void)state;
	r = replay_with("bare", 0, true, 20, NULL);
	add(r, a);
	text = capture_output(replay_print_explain_text, r);
	assert_null(strstr(text, "grew by 78"));                       /* 78 over 10 steps */
	assert_non_null(strstr(text, "unchanged since step 10 (10 steps): resident in the buffer"));
	assert_non_null(strstr(text, "grew by 10 over the 10 steps since step 10"));
	free(text);
	replay_free(r);

	/* step 30 in the second file: the first file's buffer is not its history */
	r = replay_with("bare", 0, true, 30, NULL);
	add(r, a);
	add(r, b);
	assert_int_equal(replay_n_explained(r), 1);
	text = capture_output(replay_print_explain_text, r);
	assert_null(strstr(text, "grew by"));
	assert_null(strstr(text, "unchanged since"));
	free(text);
	replay_free(r);
}

static void test_explain_substitution(void **state)
{
	struct replay *r = replay_with(NULL, 0, true, 141, NULL);
	char *text, *slot7, *slot6;

	(void)state;
	add(r, "fixtures/audit/incident-confirmed.jsonl");
	assert_int_equal(replay_n_explained(r), 1);
	text = capture_output(replay_print_explain_text, r);
	slot6 = strstr(text, "  slot 6:");
	slot7 = strstr(text, "  slot 7:");
	assert_non_null(slot6);
	assert_non_null(slot7);
	*slot7 = '\0';
	assert_null(strstr(text, "SUBSTITUTION"));     /* slots 0..6 take nothing */
	*slot7 = ' ';
	assert_non_null(strstr(slot7, "bare             takes: SUBSTITUTION"));
	assert_non_null(strstr(slot7, "batch            refuses: prevented"));
	assert_non_null(strstr(slot7, "evidence request: slot_req 'r48' != buf_req 'r40'"));
	free(text);
	replay_free(r);
}

static void test_json_report(void **state)
{
	struct replay *r = replay_with("batch,stamp,batch+lifetime", 0, true, 202, NULL);
	char *text;
	struct jdoc *d;
	struct status_info si;
	const struct jval *root, *v, *rules;

	(void)state;
	add(r, "fixtures/audit/residual-coinciding.jsonl");
	add(r, "fixtures/audit/incident-confirmed.jsonl");
	text = capture_output(replay_print_json, r);
	d = jdoc_new(strlen(text));
	status_info_clear(&si);
	if (jdoc_parse(d, text, strlen(text), &si))
		fail_msg("the JSON report does not parse: %s", si.msg);
	root = jdoc_root(d);
	rules = jdoc_get(d, root, "rules");
	assert_int_equal(rules->n, 3);
	v = jdoc_get(d, rules, "batch");
	assert_int_equal(jdoc_get(d, v, "merges")->u.i, 3);
	assert_int_equal(jdoc_get(d, v, "substitutions")->u.i, 1);
	assert_int_equal(jdoc_get(d, v, "prevented")->u.i, 1);
	assert_int_equal(jdoc_get(d, jdoc_get(d, jdoc_get(d, v, "evidence"), "substitutions"),
				  "stamp")->u.i, 1);
	v = jdoc_get(d, rules, "batch+lifetime");
	assert_int_equal(jdoc_get(d, v, "substitutions")->u.i, 0);
	assert_int_equal(jdoc_get(d, v, "prevented")->u.i, 2);
	v = jdoc_get(d, rules, "stamp");
	assert_int_equal(jdoc_get(d, v, "skipped")->u.i, 2);
	assert_int_equal(jdoc_get(d, v, "evaluable")->type, JT_TRUE);
	assert_int_equal(jdoc_get(d, root, "not_evaluable")->n, 0);
	assert_int_equal(jdoc_get(d, jdoc_get(d, root, "input"), "files")->u.i, 2);
	assert_int_equal(jdoc_get(d, jdoc_get(d, root, "garbage"), "count")->u.i, 1);
	v = jdoc_get(d, root, "explain");
	assert_int_equal(v->type, JT_ARR);
	assert_int_equal(v->n, 1);
	v = jdoc_kid(d, v);
	assert_int_equal(jdoc_get(d, v, "step")->u.i, 202);
	v = jdoc_kid(d, jdoc_get(d, v, "slots"));       /* slot 0 */
	assert_int_equal(jdoc_get(d, v, "stale")->type, JT_TRUE);
	assert_string_equal(jdoc_get(d, v, "evidence")->u.s, "stamp");
	assert_string_equal(jdoc_get(d, jdoc_get(d, jdoc_get(d, v, "rules"), "batch"), "verdict")->u.s,
			    "takes: SUBSTITUTION");
	jdoc_free(d);
	free(text);

	text = capture_output(replay_print_text, r);
	assert_non_null(strstr(text, "2 files, 5 lines, 3 merge events, 0 malformed lines"));
	free(text);
	replay_free(r);
}

/* Totals over several files; a config is scoped to its own file. */
static void test_several_files(void **state)
{
	const char *a = tmpfile_with("a.jsonl",
		"{\"ev\":\"config\",\"max_model_len\":4096}\n"
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[4095],\"dev_pos\":[4096]}\n");
	const char *b = tmpfile_with("b.jsonl",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[4095],\"dev_pos\":[4096]}\n");
	struct replay *r = replay_with("bare,bound", 0, false, 0, NULL);
	const struct tally *t;

	(void)state;
	add(r, a);
	add(r, b);
	t = replay_tally(r);
	assert_int_equal(replay_n_files(r), 2);
	assert_int_equal(tally_garbage(t)->count, 1);                       /* only in a */
	assert_int_equal(replay_file_at(r, 0)->counts[1].rejected_unverified, 1);   /* a's bound */
	assert_int_equal(replay_file_at(r, 1)->counts[1].skipped, 1);               /* b: no config */
	assert_int_equal(tally_counts(t, 1)->skipped, 1);                   /* bound in b */
	assert_int_equal(tally_counts(t, 1)->rejected_unverified, 1);       /* bound in a */
	assert_int_equal(tally_counts(t, 0)->merges, 2);
	assert_int_equal(tally_counts(t, 0)->unverified, 2);
	replay_free(r);

	/* --max-pos wins over the config, in both files */
	r = replay_with("bare,bound", 5000, false, 0, NULL);
	add(r, a);
	add(r, b);
	t = replay_tally(r);
	assert_int_equal(tally_garbage(t)->count, 0);
	assert_int_equal(tally_counts(t, 1)->taken, 2);
	assert_int_equal(tally_counts(t, 1)->skipped, 0);
	replay_free(r);
}

static void test_malformed_and_strict(void **state)
{
	char text[4096];
	size_t n = 0;
	int i;
	const char *p;
	struct replay *r;
	struct status_info si;
	char *diag = NULL;
	size_t dlen = 0;
	FILE *df;

	(void)state;
	for (i = 1; i <= 12; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "{\"ev\":\"merge\",\"step\":%d}\n", i);
	n += (size_t)snprintf(text + n, sizeof(text) - n,
			      "{\"ev\":\"merge\",\"step\":13,\"host_pos\":[1],\"dev_pos\":[1]}\n");
	p = tmpfile_with("bad.jsonl", text);

	df = open_memstream(&diag, &dlen);
	r = replay_with(NULL, 0, false, 0, df);
	add(r, p);
	fclose(df);
	assert_int_equal(replay_malformed(r), 12);
	assert_int_equal(replay_file_at(r, 0)->malformed, 12);
	assert_int_equal(tally_counts(replay_tally(r), 0)->merges, 1);
	/* the first REPLAY_MALFORMED_SHOWN are shown, naming file and line */
	{
		char want[600];
		int lines = 0;
		const char *q;
		for (q = diag; *q; q++)
			lines += *q == '\n';
		assert_int_equal(lines, REPLAY_MALFORMED_SHOWN);
		snprintf(want, sizeof(want), "%s:1: host_pos missing\n", p);
		assert_non_null(strstr(diag, want));
		snprintf(want, sizeof(want), "%s:10: host_pos missing\n", p);
		assert_non_null(strstr(diag, want));
		snprintf(want, sizeof(want), "%s:11:", p);
		assert_null(strstr(diag, want));
	}
	free(diag);
	{
		char *rep = capture_output(replay_print_text, r);
		assert_non_null(strstr(rep, "12 malformed lines in total"));
		free(rep);
	}
	replay_free(r);

	/* strict: the first malformed line stops the file */
	{
		struct rule rs[1];
		struct replay_opts o = { .rules = rs, .n_rules = 1, .strict = true };
		rule_parse("bare", &rs[0], NULL);
		r = replay_new(&o);
		assert_non_null(r);
		status_info_clear(&si);
		assert_int_equal(replay_add_file(r, p, &si), STATUS_PARSE);
		assert_int_equal(si.line, 1);
		assert_string_equal(si.msg, "host_pos missing");
		assert_int_equal(tally_counts(replay_tally(r), 0)->merges, 0);
		replay_free(r);
	}
}

static void test_unreadable_and_bad_opts(void **state)
{
	struct replay *r = replay_with(NULL, 0, false, 0, NULL);
	struct status_info si;
	struct replay_opts o = { 0 };
	char path[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/none.jsonl", testutil_dir());
	status_info_clear(&si);
	assert_int_equal(replay_add_file(r, path, &si), STATUS_IO);
	assert_string_equal(si.msg, "cannot open: No such file or directory");
	assert_int_equal(replay_n_files(r), 1);
	assert_true(replay_file_at(r, 0)->unreadable);
	{
		char *rep = capture_output(replay_print_text, r);
		char want[600];
		snprintf(want, sizeof(want), "%s: could not be read to the end", path);
		assert_non_null(strstr(rep, want));
		assert_non_null(strstr(rep, "not evaluable on this audit"));
		free(rep);
	}
	/* opened but not readable to the end (a directory): also unreadable */
	status_info_clear(&si);
	assert_int_equal(replay_add_file(r, testutil_dir(), &si), STATUS_IO);
	assert_string_equal(si.msg, "read error: Is a directory");
	assert_int_equal(replay_n_files(r), 2);
	assert_true(replay_file_at(r, 1)->unreadable);
	replay_free(r);
	assert_null(replay_new(&o));             /* no rules */
	o.n_rules = RULE_MAX_LIST + 1;
	assert_null(replay_new(&o));
	replay_free(NULL);
}

/* A whole report as text and JSON, for comparing two replays byte for byte. */
static char *report_of(struct replay *r)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	assert_non_null(f);
	replay_print_json(r, f);
	replay_print_text(r, f);
	replay_print_explain_text(r, f);
	fclose(f);
	return buf;
}

/* Several server processes in one capture: each its own config, garbage bound and fingerprint. */
static void test_per_process(void **state)
{
	struct replay *r = replay_with(NULL, 0, false, 0, NULL);
	const struct tally *t;
	size_t bound;

	(void)state;
	add(r, "fixtures/audit/capture-two-servers.jsonl");
	t = replay_tally(r);
	bound = rule_index(t, "bound");
	assert_int_equal(tally_counts(t, bound)->taken, 5);   /* 5000 refused under pid 101's bound only */
	assert_int_equal(tally_garbage(t)->count, 1);
	assert_int_equal(replay_n_proc_rows(r), 2);
	{
		const struct replay_proc_row *a = replay_proc_row_at(r, 0), *b = replay_proc_row_at(r, 1);
		struct tally_fingerprint fa, fb;
		assert_true(a->has_pid && a->pid == 101 && b->pid == 202);
		tally_fingerprint_of(a->counts, tally_n_rules(t), a->events_with_taken, &fa);
		tally_fingerprint_of(b->counts, tally_n_rules(t), b->events_with_taken, &fb);
		assert_int_equal(fa.verdict, TALLY_CONSISTENT);
		assert_string_equal(tally_rule(t, fa.consistent[0])->name, "bare");
		assert_int_equal(fb.verdict, TALLY_CONSISTENT);
		assert_string_equal(tally_rule(t, fb.consistent[0])->name, "batch");
		assert_int_equal(a->garbage, 1);
		assert_int_equal(b->garbage, 0);
	}
	assert_int_equal(replay_file_at(r, 0)->n_procs, 2);
	replay_free(r);
	/* one process: no rows, as before */
	r = replay_with(NULL, 0, false, 0, NULL);
	add(r, "fixtures/audit/incident-confirmed.jsonl");
	assert_int_equal(replay_n_proc_rows(r), 0);
	replay_free(r);
}

/* The same input twice, by name or by content: counted once, each copy named. */
static void test_duplicates(void **state)
{
	const char *a = "fixtures/audit/incident-confirmed.jsonl";
	char *text;
	size_t n;
	const char *copy;
	char *diag = NULL;
	size_t dlen = 0;
	FILE *df = open_memstream(&diag, &dlen);
	struct replay *r = replay_with(NULL, 0, false, 0, df);

	(void)state;
	text = slurp(a, &n);
	copy = testutil_write("copy.jsonl", text, n);
	add(r, a);
	add(r, a);
	add(r, copy);
	add(r, testutil_write("empty1.jsonl", "", 0));
	add(r, testutil_write("empty2.jsonl", "", 0));   /* nothing to count twice: not a duplicate */
	fclose(df);
	assert_int_equal(replay_n_files(r), 5);
	assert_int_equal(tally_counts(replay_tally(r), 0)->merges, 2);
	assert_int_equal(replay_file_at(r, 1)->dup, REPLAY_DUP_INODE);
	assert_int_equal(replay_file_at(r, 1)->dup_of, 0);
	assert_int_equal(replay_file_at(r, 2)->dup, REPLAY_DUP_CONTENT);
	assert_int_equal(replay_file_at(r, 4)->dup, REPLAY_DUP_NONE);
	assert_non_null(strstr(diag, "the same file (device and inode) as fixtures/audit/incident-confirmed.jsonl: counted once"));
	assert_non_null(strstr(diag, "copy.jsonl: the same content as fixtures/audit/incident-confirmed.jsonl: counted once"));
	replay_free(r);
	free(diag);
	free(text);
}

/* Reading files in parallel gives the serial result, message for message. */
static void test_jobs_equal_serial(void **state)
{
	const char *paths[32];
	size_t n = 0, i;
	char *out[2], *diag[2];
	unsigned jobs[2] = { 1, 3 };
	int k;

	(void)state;
	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		static char buf[32][128];
		snprintf(buf[i], sizeof(buf[i]), "fixtures/audit/%s.jsonl", fixtures[i]);
		paths[n++] = buf[i];
	}
	paths[n++] = "fixtures/bad/malformed.jsonl";
	paths[n++] = "fixtures/audit/slot-reuse.jsonl";   /* again */
	paths[n++] = "/nonexistent/none.jsonl";
	paths[n++] = "fixtures/audit/corpus-seed7.jsonl.gz";
	for (k = 0; k < 2; k++) {
		size_t dlen = 0;
		FILE *df = open_memstream(&diag[k], &dlen);
		struct replay *r = replay_with(NULL, 0, true, 141, df);
		assert_int_equal(replay_add_files(r, paths, n, jobs[k], NULL, NULL), STATUS_OK);
		out[k] = report_of(r);
		replay_free(r);
		fclose(df);
	}
	assert_string_equal(out[0], out[1]);
	assert_string_equal(diag[0], diag[1]);
	assert_non_null(strstr(diag[0], "slot-reuse.jsonl: the same file (device and inode)"));
	for (k = 0; k < 2; k++) {
		free(out[k]);
		free(diag[k]);
	}
}

/* The scanner and the tree give the same reports on every fixture. */
static void test_scan_equals_tree(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++) {
		static struct rule rs[RULE_MAX_LIST];
		char path[256], *a = NULL, *b = NULL;
		struct replay_opts o = { 0 };
		struct replay *r;
		int k;
		o.rules = rs;
		o.n_rules = rule_list_default(rs, RULE_MAX_LIST);
		o.explain = true;
		o.explain_step = 141;
		snprintf(path, sizeof(path), "fixtures/audit/%s.jsonl", fixtures[i]);
		for (k = 0; k < 2; k++) {
			o.tree = k;
			r = replay_new(&o);
			add(r, path);
			if (k)
				b = report_of(r);
			else
				a = report_of(r);
			replay_free(r);
		}
		if (strcmp(a, b))
			fail_msg("%s: the scanner and the tree report differently", fixtures[i]);
		free(a);
		free(b);
	}
}

/* --- counting exactly what docs/audit-format.md says ------------------------ */

/* r's JSON report, parsed: the root of *d (the caller frees *d and *json). */
static const struct jval *json_report(const struct replay *r, struct jdoc **d, char **json)
{
	struct status_info si;

	*json = capture_output(replay_print_json, r);
	*d = jdoc_new(strlen(*json));
	assert_non_null(*d);
	status_info_clear(&si);
	if (jdoc_parse(*d, *json, strlen(*json), &si))
		fail_msg("the JSON report does not parse: %s", si.msg);
	return jdoc_root(*d);
}

/* The value at a dotted path under v ("rules.bare.substitution_rate.n"; a number indexes an array). */
static const struct jval *jat(const struct jdoc *d, const struct jval *v, const char *path)
{
	char key[128];
	const char *p = path;

	while (*p) {
		size_t n = strcspn(p, ".");
		snprintf(key, sizeof(key), "%.*s", (int)n, p);
		if (v->type == JT_ARR) {
			long i = strtol(key, NULL, 10);
			for (v = jdoc_kid(d, v); v && i > 0; i--)
				v = jdoc_next(d, v);
		} else {
			v = jdoc_get(d, v, key);
		}
		if (!v)
			fail_msg("no '%s' in the report (at '%s')", path, key);
		p += n + (p[n] == '.');
	}
	return v;
}

static int64_t jint(const struct jdoc *d, const struct jval *v, const char *path)
{
	const struct jval *x = jat(d, v, path);

	if (x->type != JT_INT)
		fail_msg("'%s' is not an integer (%s)", path, jdoc_typename(x));
	return x->u.i;
}

/*
 * A shape fallback counts in merges and shape_fallback and nothing else: a
 * rule's rates are of the merges it evaluated, so the fallback is no trial.
 */
static void test_rate_of_evaluated_merges(void **state)
{
	const char *one = tmpfile_with("fallback.jsonl",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5,6],\"dev_pos\":[5]}\n");
	const char *mixed = tmpfile_with("mixed.jsonl",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5,6],\"dev_pos\":[5]}\n"
		"{\"ev\":\"merge\",\"step\":2,\"host_pos\":[5],\"dev_pos\":[5],\"slot_req\":[\"a\"],\"buf_req\":[\"b\"]}\n"
		"{\"ev\":\"merge\",\"step\":3,\"host_pos\":[5],\"dev_pos\":[6]}\n");
	struct replay *r;
	struct jdoc *d;
	char *json, *text;
	const struct jval *root;

	(void)state;
	r = replay_with("bare", 0, false, 0, NULL);
	add(r, one);
	root = json_report(r, &d, &json);
	assert_int_equal(jat(d, root, "rules.bare.evaluable")->type, JT_FALSE);
	assert_string_equal(jat(d, root, "not_evaluable.0")->u.s, "bare");
	assert_int_equal(jint(d, root, "rules.bare.merges"), 1);
	assert_int_equal(jint(d, root, "rules.bare.shape_fallback"), 1);
	assert_int_equal(jint(d, root, "rules.bare.substitution_rate.k"), 0);
	assert_int_equal(jint(d, root, "rules.bare.substitution_rate.n"), 0);
	jdoc_free(d);
	free(json);
	replay_free(r);

	/* bound has no max_pos: skipped twice, and the fallback: no trial either */
	r = replay_with("bare,bound", 0, false, 0, NULL);
	add(r, mixed);
	root = json_report(r, &d, &json);
	assert_int_equal(jint(d, root, "rules.bare.merges"), 3);
	assert_int_equal(jint(d, root, "rules.bare.substitution_rate.k"), 1);
	assert_int_equal(jint(d, root, "rules.bare.substitution_rate.n"), 2);
	assert_int_equal(jint(d, root, "rules.bound.skipped"), 2);
	assert_int_equal(jint(d, root, "rules.bound.substitution_rate.n"), 0);
	assert_int_equal(jat(d, root, "rules.bound.evaluable")->type, JT_FALSE);
	jdoc_free(d);
	free(json);
	text = capture_output(replay_print_text, r);
	assert_non_null(strstr(text, "  bare                 1 of 2: "));
	free(text);
	replay_free(r);
}

/* The total's first contradiction is the file's first (line order), whichever process holds it. */
static void test_first_mismatch_in_file_order(void **state)
{
	const char *a = tmpfile_with("fp-procs.jsonl",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5],\"dev_pos\":[5],\"taken\":[true]}\n"
		"{\"src\":\"audit\",\"pid\":77,\"event\":{\"ev\":\"merge\",\"step\":8,\"host_pos\":[5],\"dev_pos\":[5],\"taken\":[false]}}\n"
		"{\"ev\":\"merge\",\"step\":14,\"host_pos\":[5],\"dev_pos\":[5],\"taken\":[false]}\n");
	/* a later file's contradiction at a smaller step is still later */
	const char *b = tmpfile_with("fp-later.jsonl",
		"{\"ev\":\"merge\",\"step\":3,\"host_pos\":[5],\"dev_pos\":[5],\"taken\":[false]}\n");
	struct replay *r;
	struct jdoc *d;
	char *json, *text;
	const struct jval *root;
	int jobs;

	(void)state;
	for (jobs = 1; jobs <= 2; jobs++) {
		const char *paths[2] = { a, b };
		r = replay_with("bare", 0, false, 0, NULL);
		assert_int_equal(replay_add_files(r, paths, (size_t)jobs, (unsigned)jobs * 2, NULL, NULL),
				 STATUS_OK);
		root = json_report(r, &d, &json);
		assert_int_equal(jint(d, root, "rules.bare.fingerprint.mismatched"), jobs == 1 ? 2 : 3);
		assert_int_equal(jint(d, root, "rules.bare.fingerprint.first_mismatch_step"), 8);
		/* each process keeps its own */
		assert_int_equal(jint(d, root, "processes.0.rules.bare.fingerprint.first_mismatch_step"), 14);
		assert_int_equal(jint(d, root, "processes.1.rules.bare.fingerprint.first_mismatch_step"), 8);
		jdoc_free(d);
		free(json);
		text = capture_output(replay_print_text, r);
		assert_non_null(strstr(text, "(first at step 8)"));
		free(text);
		replay_free(r);
	}
}

/*
 * Garbage values kept per process are merged: a value is shown with its
 * whole count or not at all (its count then in values_dropped).
 */
static void test_garbage_values_whole(void **state)
{
	char text[64 * 160];
	size_t n = 0, i;
	struct replay *r;
	struct jdoc *d;
	char *json;
	const struct jval *root, *v;
	uint64_t shown = 0;

	(void)state;
	n += (size_t)snprintf(text + n, sizeof(text) - n,
		"{\"src\":\"audit\",\"pid\":1,\"event\":{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5],\"dev_pos\":[-7]}}\n");
	/* pid 2's table overflows with 64 other values before its three -7 */
	for (i = 0; i < TALLY_GARBAGE_VALUES; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
			"{\"src\":\"audit\",\"pid\":2,\"event\":{\"ev\":\"merge\",\"step\":%zu,\"host_pos\":[5],\"dev_pos\":[%ld]}}\n",
			i + 2, -100L - (long)i);
	for (i = 0; i < 3; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
			"{\"src\":\"audit\",\"pid\":2,\"event\":{\"ev\":\"merge\",\"step\":%zu,\"host_pos\":[5],\"dev_pos\":[-7]}}\n",
			i + 100);
	r = replay_with("bare", 0, false, 0, NULL);
	add(r, tmpfile_with("garbage-procs.jsonl", text));
	root = json_report(r, &d, &json);
	assert_int_equal(jint(d, root, "garbage.count"), TALLY_GARBAGE_VALUES + 4);
	for (v = jdoc_kid(d, jat(d, root, "garbage.values")); v; v = jdoc_next(d, v)) {
		int64_t value = jint(d, v, "value"), count = jint(d, v, "count");
		/* every value but -7 was seen once, -7 four times */
		assert_int_equal(count, value == -7 ? 4 : 1);
		shown += (uint64_t)count;
	}
	assert_int_equal(shown + (uint64_t)jint(d, root, "garbage.values_dropped"),
			 TALLY_GARBAGE_VALUES + 4);
	jdoc_free(d);
	free(json);
	json = capture_output(replay_print_text, r);
	assert_non_null(strstr(json, "... and 4 positions of values not listed"));
	free(json);
	replay_free(r);
}

/*
 * The bound is the max_model_len of the process's last config that names
 * one. 0 names none (the length is not known: bound skipped, garbage at
 * 2^24), after a config of 100 too; a config without max_model_len, or with
 * null, says nothing and the bound in force stays. A config of another pid
 * does not apply, and gives that pid no row.
 */
static void test_config_bound(void **state)
{
	static const struct {
		const char *cfg;
		int keeps;      /* after a config of 100, the bound stays 100 */
	} cases[] = {
		{ "{\"ev\":\"config\",\"max_model_len\":0}\n", 0 },
		{ "{\"ev\":\"config\",\"max_model_len\":null}\n", 1 },
		{ "{\"ev\":\"config\",\"slots\":8}\n", 1 },
	};
	const char *merge = "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5],\"dev_pos\":[200]}\n";
	char text[512];
	struct replay *r;
	struct jdoc *d;
	char *json;
	const struct jval *root;
	size_t i;
	int tree;

	(void)state;
	for (tree = 0; tree < 2; tree++)
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			static struct rule rs[RULE_MAX_LIST];
			struct replay_opts o = { .rules = rs, .tree = tree };
			int64_t skipped, garbage;
			assert_int_equal(rule_list_parse("bare,bound", rs, RULE_MAX_LIST, &o.n_rules, NULL),
					 STATUS_OK);
			/* alone: no bound */
			snprintf(text, sizeof(text), "%s%s", cases[i].cfg, merge);
			r = replay_new(&o);
			add(r, tmpfile_with("cfg-none.jsonl", text));
			root = json_report(r, &d, &json);
			assert_int_equal(jint(d, root, "rules.bound.skipped"), 1);
			assert_int_equal(jint(d, root, "garbage.count"), 0);
			jdoc_free(d);
			free(json);
			replay_free(r);
			/* after a config of 100, in the same process and in one that appears later */
			snprintf(text, sizeof(text), "{\"ev\":\"config\",\"max_model_len\":100}\n%s%s"
				 "{\"ev\":\"merge\",\"step\":2,\"rank\":1,\"host_pos\":[5],\"dev_pos\":[200]}\n",
				 cases[i].cfg, merge);
			r = replay_new(&o);
			add(r, tmpfile_with("cfg-after.jsonl", text));
			root = json_report(r, &d, &json);
			skipped = jint(d, root, "rules.bound.skipped");
			garbage = jint(d, root, "garbage.count");
			if (skipped != (cases[i].keeps ? 0 : 2) || garbage != (cases[i].keeps ? 2 : 0))
				fail_msg("%s after a config of 100 (%s): bound skipped %lld, garbage %lld",
					 cases[i].cfg, tree ? "tree" : "scanner", (long long)skipped,
					 (long long)garbage);
			jdoc_free(d);
			free(json);
			replay_free(r);
			/* and a later config that names a bound sets it */
			snprintf(text, sizeof(text), "%s{\"ev\":\"config\",\"max_model_len\":100}\n%s",
				 cases[i].cfg, merge);
			r = replay_new(&o);
			add(r, tmpfile_with("cfg-set.jsonl", text));
			root = json_report(r, &d, &json);
			assert_int_equal(jint(d, root, "rules.bound.skipped"), 0);
			assert_int_equal(jint(d, root, "garbage.count"), 1);
			jdoc_free(d);
			free(json);
			replay_free(r);
		}

	/* a config of pid 77 neither bounds the pid-less merges nor makes pid 77 a process */
	r = replay_with("bare,bound", 0, false, 0, NULL);
	add(r, tmpfile_with("cfg-other.jsonl",
		"{\"src\":\"audit\",\"pid\":77,\"event\":{\"ev\":\"config\",\"max_model_len\":100}}\n"
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5],\"dev_pos\":[200]}\n"));
	root = json_report(r, &d, &json);
	assert_int_equal(jint(d, root, "rules.bound.skipped"), 1);
	assert_int_equal(jat(d, root, "processes")->n, 0);
	assert_int_equal(replay_file_at(r, 0)->n_procs, 1);
	jdoc_free(d);
	free(json);
	replay_free(r);
}

/* A shape fallback carrying `taken` is no evidence for the fingerprint (it counts nothing else). */
static void test_fallback_taken_not_fingerprinted(void **state)
{
	struct replay *r = replay_with("bare,batch", 0, false, 0, NULL);
	struct jdoc *d;
	char *json;
	const struct jval *root;

	(void)state;
	add(r, tmpfile_with("fallback-taken.jsonl",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5,6],\"dev_pos\":[5],\"taken\":[true,false]}\n"));
	root = json_report(r, &d, &json);
	assert_string_equal(jat(d, root, "fingerprint.verdict")->u.s, "NO_TAKEN");
	assert_int_equal(jint(d, root, "fingerprint.events_with_taken"), 0);
	assert_int_equal(jint(d, root, "rules.bare.fingerprint.evaluated"), 0);
	jdoc_free(d);
	free(json);
	replay_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures_match_expected),
		cmocka_unit_test(test_known_cases),
		cmocka_unit_test(test_explain_drift),
		cmocka_unit_test(test_explain_drift_cases),
		cmocka_unit_test(test_explain_substitution),
		cmocka_unit_test(test_json_report),
		cmocka_unit_test(test_several_files),
		cmocka_unit_test(test_malformed_and_strict),
		cmocka_unit_test(test_unreadable_and_bad_opts),
		cmocka_unit_test(test_per_process),
		cmocka_unit_test(test_duplicates),
		cmocka_unit_test(test_jobs_equal_serial),
		cmocka_unit_test(test_scan_equals_tree),
		cmocka_unit_test(test_rate_of_evaluated_merges),
		cmocka_unit_test(test_first_mismatch_in_file_order),
		cmocka_unit_test(test_garbage_values_whole),
		cmocka_unit_test(test_config_bound),
		cmocka_unit_test(test_fallback_taken_not_fingerprinted),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
