/* test_canary.c - canary markers, their search, calibration and verdicts (bench/canary.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bench/canary.h"

/* A result whose text is `text`, one chunk per white-space-separated word,
 * ending at t_end; chunk j received at 10 + j. */
static void res_text(struct load_result *r, const char *text, double t_end)
{
	size_t n = 0, i, len = strlen(text);

	memset(r, 0, sizeof(*r));
	r->text = strdup(text);
	r->text_len = len;
	r->tok_off = calloc(len + 2, sizeof(size_t));
	r->tok_t = calloc(len + 1, sizeof(double));
	for (i = 0; i < len; i++)
		if (text[i] == ' ' && i + 1 < len && text[i + 1] != ' ') {
			r->tok_off[n] = i;
			r->tok_t[n] = 10 + (double)n;
			n++;
		}
	r->n_chunks = n;
	r->n_tokens = n;
	r->tok_off[n] = len;
	r->t_end = t_end;
}

static void res_free(struct load_result *r)
{
	free(r->text);
	free(r->tok_off);
	free(r->tok_t);
	free(r->ids);
	free(r->ids_off);
}

/* Markers: unique groups of the alphabet, with letters and digits. */
static void test_markers(void **state)
{
	struct canary_set *s = NULL;
	size_t i, j, k, g;
	char seen[4000][CANARY_GROUP_LEN + 1];
	size_t n_seen = 0;

	(void)state;
	assert_int_equal(canary_set_new(7, 200, 3, &s, NULL), STATUS_OK);
	assert_int_equal(canary_count(s, CANARY_SENT), 200);
	assert_int_equal(canary_count(s, CANARY_CALIB), 3);
	assert_int_equal(canary_count(s, CANARY_DECOY), 203);
	for (k = 0; k < CANARY__KINDS; k++)
		for (i = 0; i < canary_count(s, (enum canary_kind)k); i++) {
			const char *t = canary_text(s, (enum canary_kind)k, i);

			assert_int_equal(strlen(t), CANARY_MARKER_LEN - 1);
			for (g = 0; g < CANARY_GROUPS; g++) {
				int letters = 0, digits = 0;

				for (j = 0; j < CANARY_GROUP_LEN; j++) {
					char c = t[g * (CANARY_GROUP_LEN + 1) + j];

					assert_non_null(strchr("BCDFGHJKLMNPQRSTVWXZ23456789", c));
					letters += c >= 'A';
					digits += c < 'A';
				}
				assert_true(letters >= 2 && digits >= 2);
				memcpy(seen[n_seen], t + g * (CANARY_GROUP_LEN + 1), CANARY_GROUP_LEN);
				seen[n_seen++][CANARY_GROUP_LEN] = 0;
			}
		}
	for (i = 0; i < n_seen; i++)
		for (j = i + 1; j < n_seen; j++)
			assert_string_not_equal(seen[i], seen[j]);
	canary_set_free(s);
}

struct hits {
	size_t n;
	enum canary_kind kind[16];
	size_t owner[16], group[16], off[16];
};

static void hit_cb(void *ctx, enum canary_kind k, size_t owner, size_t group, size_t off)
{
	struct hits *h = ctx;

	if (h->n < 16) {
		h->kind[h->n] = k;
		h->owner[h->n] = owner;
		h->group[h->n] = group;
		h->off[h->n] = off;
	}
	h->n++;
}

/* The search finds a group anywhere, glued to other symbols too, and names its owner. */
static void test_scan(void **state)
{
	struct canary_set *s = NULL;
	struct hits h;
	char text[256], g1[8];

	(void)state;
	assert_int_equal(canary_set_new(1, 4, 1, &s, NULL), STATUS_OK);
	memcpy(g1, canary_text(s, CANARY_SENT, 2) + 7, 6);
	g1[6] = 0;
	snprintf(text, sizeof(text), "abc %s, x%sQ and %s", canary_text(s, CANARY_SENT, 0), g1,
		 canary_text(s, CANARY_DECOY, 3));
	memset(&h, 0, sizeof(h));
	canary_scan(s, text, strlen(text), hit_cb, &h);
	assert_int_equal(h.n, 3 + 1 + 3);
	assert_int_equal(h.kind[0], CANARY_SENT);
	assert_int_equal(h.owner[0], 0);
	assert_int_equal(h.kind[3], CANARY_SENT);
	assert_int_equal(h.owner[3], 2);
	assert_int_equal(h.group[3], 1);
	assert_int_equal(h.kind[4], CANARY_DECOY);
	assert_int_equal(h.owner[4], 3);
	/* the tasks hold no group of their own words */
	memset(&h, 0, sizeof(h));
	canary_scan(s, "Code: Copy: Repeat the code four times, separated by spaces", 60, hit_cb, &h);
	assert_int_equal(h.n, 0);
	canary_set_free(s);
}

/* Verdicts: clean, leaked with donor, position and whether it had ended,
 * lost only when the model repeats and the output is long enough, decoys
 * counted apart. */
static void test_check(void **state)
{
	struct canary_set *s = NULL;
	struct load_result res[4], cal_res[1];
	struct load_run run = { .res = res, .n = 4 }, cal_run = { .res = cal_res, .n = 1 };
	struct canary_calib cal;
	struct canary_report rep;
	char t[4][256];
	const char *m[4];
	size_t i;

	(void)state;
	assert_int_equal(canary_set_new(3, 6, 1, &s, NULL), STATUS_OK);
	for (i = 0; i < 4; i++)
		m[i] = canary_text(s, CANARY_SENT, 2 + i);
	/* the calibration answer repeats its marker: 3 tokens to write it */
	snprintf(t[0], sizeof(t[0]), " %s %s", canary_text(s, CANARY_CALIB, 0), canary_text(s, CANARY_CALIB, 0));
	res_text(&cal_res[0], t[0], 1);
	canary_calibrate(s, &cal_run, 0, &cal);
	assert_int_equal(cal.n, 1);
	assert_true(cal.repeats);
	assert_int_equal(cal.tokens_for_marker, 3);
	/* request 0: clean; 1: the third group replaced by request 3's first, which
	 * ended at 11.5 (before its chunk 2 came at 12); 2: its own marker lost in
	 * a long output, and a decoy; 3: a short output (not evaluable) */
	snprintf(t[0], sizeof(t[0]), " %s %s", m[0], m[0]);
	snprintf(t[1], sizeof(t[1]), " %.13s %.6s", m[1], m[3]);
	snprintf(t[2], sizeof(t[2]), " w1 w2 w3 w4 %.6s", canary_text(s, CANARY_DECOY, 0));
	snprintf(t[3], sizeof(t[3]), " %.6s", m[3]);
	for (i = 0; i < 4; i++)
		res_text(&res[i], t[i], 20);
	res[3].t_end = 11.5;
	for (i = 0; i < 4; i++)
		canary_note(s, CANARY_SENT, 2 + i, i == 3 ? "run-3" : "x", res[i].t_end, false);
	assert_int_equal(canary_check(s, &cal, &run, 2, &rep, NULL), STATUS_OK);
	assert_int_equal(rep.items[0].verdict, CANARY_CLEAN);
	assert_int_equal(rep.items[0].own, CANARY_OWN_OK);
	assert_int_equal(rep.items[1].verdict, CANARY_LEAKED);
	assert_int_equal(rep.items[1].leak.kind, CANARY_SENT);
	assert_int_equal(rep.items[1].leak.donor, 5);
	assert_string_equal(rep.items[1].leak.donor_id, "run-3");
	assert_int_equal(rep.items[1].leak.at, 2);
	assert_true(rep.items[1].leak.donor_finished);
	assert_false(rep.items[1].leak.by_id);
	assert_int_equal(rep.items[1].own_groups, 2);
	assert_int_equal(rep.items[2].verdict, CANARY_LOST);
	assert_int_equal(rep.items[2].n_decoy, 1);
	assert_int_equal(rep.items[3].verdict, CANARY_CLEAN);
	assert_int_equal(rep.items[3].own, CANARY_OWN_NOT_EVALUABLE);
	assert_int_equal(rep.n_leaked, 1);
	assert_int_equal(rep.n_lost, 1);
	assert_int_equal(rep.n_decoy_outputs, 1);
	assert_int_equal(rep.n_own_checked, 3);
	canary_report_release(&rep);
	/* the donor still streaming when the piece came: not finished */
	res[3].t_end = 30;
	canary_note(s, CANARY_SENT, 5, "run-3", 30, false);
	assert_int_equal(canary_check(s, &cal, &run, 2, &rep, NULL), STATUS_OK);
	assert_false(rep.items[1].leak.donor_finished);
	canary_report_release(&rep);
	/* a model that does not repeat: no own check at all, leaks still found */
	cal.repeats = false;
	assert_int_equal(canary_check(s, &cal, &run, 2, &rep, NULL), STATUS_OK);
	assert_int_equal(rep.n_own_checked, 0);
	assert_int_equal(rep.items[2].verdict, CANARY_CLEAN);
	assert_int_equal(rep.items[2].own, CANARY_OWN_NOT_EVALUABLE);
	assert_int_equal(rep.items[1].verdict, CANARY_LEAKED);
	canary_report_release(&rep);
	/* a failed request is failed; a run past the markers is refused */
	res[0].fail = LOAD_FAIL_RESET;
	assert_int_equal(canary_check(s, &cal, &run, 2, &rep, NULL), STATUS_OK);
	assert_int_equal(rep.items[0].verdict, CANARY_FAILED);
	canary_report_release(&rep);
	assert_int_equal(canary_check(s, &cal, &run, 3, &rep, NULL), STATUS_USAGE);
	for (i = 0; i < 4; i++)
		res_free(&res[i]);
	res_free(&cal_res[0]);
	canary_set_free(s);
}

/* Token ids: an id only one other marker's tokens hold is a leak by id; the
 * task's own and shared ids are no evidence. */
static void test_ids(void **state)
{
	struct canary_set *s = NULL;
	struct load_result res[1];
	struct load_run run = { .res = res, .n = 1 };
	struct canary_report rep;
	int64_t a[3] = { 100, 101, 7 }, b[3] = { 200, 201, 7 }, common[1] = { 101 };
	size_t k, i;

	(void)state;
	assert_int_equal(canary_set_new(5, 2, 0, &s, NULL), STATUS_OK);
	canary_set_ids(s, CANARY_SENT, 0, a, 3);
	canary_set_ids(s, CANARY_SENT, 1, b, 3);
	for (k = CANARY_CALIB; k < CANARY__KINDS; k++)
		for (i = 0; i < canary_count(s, (enum canary_kind)k); i++)
			canary_set_ids(s, (enum canary_kind)k, i, NULL, 0);
	assert_int_equal(canary_ids_done(s, common, 1, NULL), STATUS_OK);
	res_text(&res[0], " x y z", 20);
	res[0].ids = malloc(3 * sizeof(int32_t));
	res[0].ids_off = calloc(4, sizeof(size_t));
	res[0].ids[0] = 100;   /* its own */
	res[0].ids[1] = 7;     /* shared by both: nothing */
	res[0].ids[2] = 201;   /* marker 1's alone */
	res[0].n_ids = 3;
	res[0].ids_off[1] = 1;
	res[0].ids_off[2] = 2;
	res[0].ids_off[3] = 3;
	canary_note(s, CANARY_SENT, 1, "other", 5, true);
	assert_int_equal(canary_check(s, NULL, &run, 0, &rep, NULL), STATUS_OK);
	assert_int_equal(rep.items[0].verdict, CANARY_LEAKED);
	assert_true(rep.items[0].leak.by_id);
	assert_int_equal(rep.items[0].leak.donor, 1);
	assert_int_equal(rep.items[0].leak.at, 2);
	assert_true(rep.items[0].leak.donor_aborted);
	assert_int_equal(rep.n_id_checked, 1);
	canary_report_release(&rep);
	res[0].ids[2] = 101;   /* the task's word: nothing */
	assert_int_equal(canary_check(s, NULL, &run, 0, &rep, NULL), STATUS_OK);
	assert_int_equal(rep.items[0].verdict, CANARY_CLEAN);
	canary_report_release(&rep);
	res_free(&res[0]);
	canary_set_free(s);
}

/* The suite: one task per marker, completions or chat, nothing that would
 * force a synchronous path. */
static void test_suite(void **state)
{
	struct canary_set *s = NULL;
	struct suite *st = NULL;
	struct suite_body_opts bo = { .temperature = 0 };
	const char *route;
	size_t len;
	char *b;

	(void)state;
	assert_int_equal(canary_set_new(2, 3, 1, &s, NULL), STATUS_OK);
	assert_int_equal(canary_suite(s, false, 16, &st, NULL), STATUS_OK);
	assert_int_equal(st->n, 4);
	assert_non_null(strstr(st->e[1].prompt, canary_text(s, CANARY_SENT, 1)));
	assert_non_null(strstr(st->e[3].prompt, canary_text(s, CANARY_CALIB, 0)));
	b = suite_body(st, 0, &bo, &route, &len);
	assert_string_equal(route, "/v1/completions");
	assert_null(strstr(b, "logprobs"));
	assert_null(strstr(b, "penalty"));
	free(b);
	suite_free(st);
	assert_int_equal(canary_suite(s, true, 16, &st, NULL), STATUS_OK);
	assert_non_null(strstr(st->e[0].messages, "Repeat the code"));
	suite_free(st);
	canary_set_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_markers),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_suite),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
