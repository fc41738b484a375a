/* test_correct.c - the correctness stage's verdicts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bench/correct.h"

/* Fills r with the chunks of a NULL-terminated list. */
static void out(struct load_result *r, size_t prompt, const char *const *chunks)
{
	size_t n = 0, len = 0, i;

	memset(r, 0, sizeof(*r));
	r->prompt_index = prompt;
	while (chunks[n])
		len += strlen(chunks[n++]);
	r->text = calloc(len + 1, 1);
	r->tok_off = calloc(n + 1, sizeof(size_t));
	r->n_chunks = n;
	for (i = 0; i < n; i++) {
		r->tok_off[i] = r->text_len;
		memcpy(r->text + r->text_len, chunks[i], strlen(chunks[i]));
		r->text_len += strlen(chunks[i]);
	}
	r->tok_off[n] = r->text_len;
}

static void drop(struct load_result *r, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(r[i].text);
		free(r[i].tok_off);
	}
}

static void test_verdicts(void **state)
{
	static const char *const ref0[] = { " The", " capital", " is", " Paris", ".", NULL };
	static const char *const ref1[] = { " four", NULL };
	static const char *const same_packed[] = { " The capital", " is", " Paris.", NULL };
	static const char *const phrasing[] = { " The", " capital", " city", " is", " Paris", NULL };
	static const char *const wrong[] = { " The", " capital", " is", " Lyon", ".", NULL };
	static const char *const short1[] = { " fo", NULL };
	char *exp0[] = { (char *)"Paris" }, *exp1[] = { (char *)"four" };
	struct suite_entry e[2] = {
		{ .id = (char *)"a", .max_tokens = 5, .expect = exp0, .n_expect = 1 },
		{ .id = (char *)"b", .max_tokens = 1, .expect = exp1, .n_expect = 1 },
	};
	struct suite s = { .e = e, .n = 2 };
	struct load_result rr[2], gr[6];
	struct load_run ref = { .res = rr, .n = 2 }, got = { .res = gr, .n = 6 };
	struct correct_report rep;

	(void)state;
	out(&rr[0], 0, ref0);
	out(&rr[1], 1, ref1);
	out(&gr[0], 0, ref0);          /* identical */
	out(&gr[1], 0, same_packed);   /* two tokens in a chunk: still identical */
	out(&gr[2], 0, phrasing);      /* diverged at token 2, answer intact */
	out(&gr[3], 0, wrong);         /* Paris missing: wrong */
	out(&gr[4], 1, short1);        /* "four" missing: wrong */
	out(&gr[5], 1, ref1);
	gr[5].fail = LOAD_FAIL_RESET;  /* failed, whatever its text */
	assert_int_equal(correct_compare(&s, &ref, &got, &rep, NULL), STATUS_OK);
	assert_int_equal(rep.items[0].verdict, CORRECT_IDENTICAL);
	assert_int_equal(rep.items[1].verdict, CORRECT_IDENTICAL);
	assert_int_equal(rep.items[2].verdict, CORRECT_DIVERGED);
	assert_int_equal(rep.items[2].at, 2);
	assert_string_equal(rep.items[2].ref_excerpt, "is Paris.");
	assert_string_equal(rep.items[2].got_excerpt, "city is Paris");
	assert_int_equal(rep.items[3].verdict, CORRECT_WRONG);
	assert_string_equal(rep.items[3].missing, "Paris");
	assert_int_equal(rep.items[4].verdict, CORRECT_WRONG);
	assert_int_equal(rep.items[5].verdict, CORRECT_FAILED);
	assert_int_equal(rep.n_identical, 2);
	assert_int_equal(rep.n_diverged, 1);
	assert_int_equal(rep.n_wrong, 2);
	assert_int_equal(rep.n_failed, 1);
	assert_int_equal(rep.n_failing, 4);
	assert_int_equal(rep.n_ref_wrong, 0);
	assert_string_equal(correct_verdict_name(rep.items[2].verdict), "diverged");
	correct_report_release(&rep);

	/* the reference wrong (counted) or failed (no baseline for that prompt) */
	drop(rr, 2);
	out(&rr[0], 0, wrong);
	out(&rr[1], 1, ref1);
	rr[1].fail = LOAD_FAIL_HTTP;
	assert_int_equal(correct_compare(&s, &ref, &got, &rep, NULL), STATUS_OK);
	assert_int_equal(rep.n_ref_wrong, 1);
	assert_int_equal(rep.n_ref_failed, 1);
	assert_int_equal(rep.items[0].verdict, CORRECT_DIVERGED);   /* differs from a wrong reference */
	assert_int_equal(rep.items[4].verdict, CORRECT_WRONG);
	drop(&gr[4], 1);
	out(&gr[4], 1, ref1);
	correct_report_release(&rep);
	assert_int_equal(correct_compare(&s, &ref, &got, &rep, NULL), STATUS_OK);
	assert_int_equal(rep.items[4].verdict, CORRECT_NO_REFERENCE);
	correct_report_release(&rep);

	/* a reference that is not one request per prompt is refused */
	ref.n = 1;
	assert_int_equal(correct_compare(&s, &ref, &got, &rep, NULL), STATUS_USAGE);
	drop(rr, 2);
	drop(gr, 6);
}

/* No expect at all: only the comparison decides. */
static void test_no_expect(void **state)
{
	static const char *const a[] = { " x", " y", NULL };
	static const char *const b[] = { " x", " y", " z", NULL };
	struct suite_entry e[1] = { { .id = (char *)"a", .max_tokens = 3 } };
	struct suite s = { .e = e, .n = 1 };
	struct load_result rr[1], gr[1];
	struct load_run ref = { .res = rr, .n = 1 }, got = { .res = gr, .n = 1 };
	struct correct_report rep;

	(void)state;
	out(&rr[0], 0, a);
	out(&gr[0], 0, b);
	assert_null(correct_missing(&e[0], NULL));
	assert_int_equal(correct_compare(&s, &ref, &got, &rep, NULL), STATUS_OK);
	/* the output runs on past the reference's end: diverged at the extra token */
	assert_int_equal(rep.items[0].verdict, CORRECT_DIVERGED);
	assert_int_equal(rep.items[0].at, 2);
	correct_report_release(&rep);
	drop(rr, 1);
	drop(gr, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verdicts),
		cmocka_unit_test(test_no_expect),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
