/* test_margins.c - the margin pass: reading an echo answer, labelling a divergence. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "bench/margins.h"

/* An echo answer in vLLM's completions shape: "the cat sat" + " down" generated;
 * position 2 (" sat") has " sat" and " ran" in its top list. */
static const char *echo_body(double lp_sat, double lp_ran)
{
	static char b[1024];

	snprintf(b, sizeof(b),
		 "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,"
		 "\"text\":\"the cat sat down\",\"logprobs\":{\"text_offset\":[0,3,7,11],"
		 "\"token_logprobs\":[null,-0.5,%g,-0.1],\"tokens\":[\"the\",\" cat\",\" sat\",\" down\"],"
		 "\"top_logprobs\":[null,{\" cat\":-0.5},{\" sat\":%g,\" ran\":%g},{\" down\":-0.1}]},"
		 "\"finish_reason\":\"length\"}]}",
		 lp_sat, lp_sat, lp_ran);
	return b;
}

static enum margins_label judge(const char *body, size_t off, const char *ref, bool past, bool dup,
				enum margins_why *why)
{
	struct margins_obs ob;

	margins_read(body, strlen(body), off, ref, &ob);
	return margins_judge(&ob, past, dup, 0.1, why);
}

static void t_near_tie(void **s)
{
	enum margins_why w;

	(void)s;
	/* output " sat" at character 7, the reference " ran" 0.05 nats above */
	assert_int_equal(judge(echo_body(-0.75, -0.70), 7, " ran", false, false, &w), MARGINS_NEAR_TIE);
	assert_int_equal(w, MARGINS_WHY_NONE);
	/* the reference goes on past its token: the alternative it continues with */
	assert_int_equal(judge(echo_body(-0.75, -0.70), 7, " ran off", false, false, &w), MARGINS_NEAR_TIE);
	/* the first differing byte inside the token (" sat" / " ran" part at
	 * the space): the token's own head, then the reference's rest */
	assert_int_equal(judge(echo_body(-0.75, -0.70), 8, "ran off", false, false, &w), MARGINS_NEAR_TIE);
	assert_int_equal(judge(echo_body(-0.75, -0.70), 8, "rat", false, false, &w), MARGINS_NOT_EVALUABLE);
	assert_int_equal(w, MARGINS_WHY_REF_ABSENT);
}

static void t_low_prob(void **s)
{
	enum margins_why w;

	(void)s;
	assert_int_equal(judge(echo_body(-6.0, -0.01), 7, " ran", false, false, &w), MARGINS_LOW_PROB);
}

static void t_eps_edge(void **s)
{
	struct margins_obs ob;
	enum margins_why w;

	(void)s;
	memset(&ob, 0, sizeof(ob));
	ob.ref_known = true;
	ob.lp_ref = -0.5;
	/* exactly epsilon apart is no near tie; a hair under is */
	ob.lp_got = -0.75;
	assert_int_equal(margins_judge(&ob, false, false, 0.25, &w), MARGINS_LOW_PROB);
	ob.lp_got = -0.7499;
	assert_int_equal(margins_judge(&ob, false, false, 0.25, &w), MARGINS_NEAR_TIE);
	/* the quiet pass preferring the output by epsilon: the reference is no baseline */
	ob.lp_got = -0.2;
	assert_int_equal(margins_judge(&ob, false, false, 0.25, &w), MARGINS_NOT_EVALUABLE);
	assert_int_equal(w, MARGINS_WHY_PREFERS_GOT);
}

static void t_duplicate_and_vocab(void **s)
{
	enum margins_why w;

	(void)s;
	/* structural facts win over any margin, and need no logprobs */
	assert_int_equal(judge(echo_body(-0.75, -0.70), 7, " ran", false, true, &w), MARGINS_DUPLICATE);
	assert_int_equal(judge("{}", 2, " ran", false, true, &w), MARGINS_DUPLICATE);
	assert_int_equal(judge("{}", 2, " ran", true, true, &w), MARGINS_PAST_VOCAB);
}

static void t_not_evaluable(void **s)
{
	enum margins_why w;
	struct margins_obs ob;
	const char *llama = "{\"error\":{\"code\":500,\"message\":\"Unsupported param: echo\",\"type\":\"server_error\"}}";
	const char *nolp = "{\"choices\":[{\"index\":0,\"text\":\"the cat sat down\",\"logprobs\":null}]}";

	(void)s;
	assert_int_equal(judge(llama, 7, " ran", false, false, &w), MARGINS_NOT_EVALUABLE);
	assert_int_equal(w, MARGINS_WHY_NO_LOGPROBS);
	assert_int_equal(judge(nolp, 7, " ran", false, false, &w), MARGINS_NOT_EVALUABLE);
	assert_int_equal(w, MARGINS_WHY_NO_LOGPROBS);
	assert_int_equal(judge("not json", 7, " ran", false, false, &w), MARGINS_NOT_EVALUABLE);
	assert_int_equal(w, MARGINS_WHY_NO_LOGPROBS);
	/* past the last position */
	assert_int_equal(judge(echo_body(-0.7, -0.7), 400, " ran", false, false, &w), MARGINS_NOT_EVALUABLE);
	assert_int_equal(w, MARGINS_WHY_SHORT);
	/* the first position has no logprob: nothing to judge there */
	assert_int_equal(judge(echo_body(-0.7, -0.7), 0, " ran", false, false, &w), MARGINS_NOT_EVALUABLE);
	assert_int_equal(w, MARGINS_WHY_SHORT);
	/* the reference token not among the top alternatives */
	assert_int_equal(judge(echo_body(-0.7, -0.7), 7, " flew", false, false, &w), MARGINS_NOT_EVALUABLE);
	assert_int_equal(w, MARGINS_WHY_REF_ABSENT);
	/* the reader's why passes through */
	memset(&ob, 0, sizeof(ob));
	ob.why = MARGINS_WHY_REFUSED;
	assert_int_equal(margins_judge(&ob, false, false, 0.1, &w), MARGINS_NOT_EVALUABLE);
	assert_int_equal(w, MARGINS_WHY_REFUSED);
	assert_string_equal(margins_why_name(MARGINS_WHY_CHAT), "chat");
	assert_string_equal(margins_label_name(MARGINS_NEAR_TIE), "near-tie");
}

static void t_read_offsets(void **s)
{
	struct margins_obs ob;
	/* a BOS decoded in front ("<s>", 3 characters the text lacks) */
	const char *bos =
		"{\"choices\":[{\"text\":\"the cat\",\"logprobs\":{\"text_offset\":[0,3,6],"
		"\"token_logprobs\":[null,null,-2.5],\"tokens\":[\"<s>\",\"the\",\" cat\"],"
		"\"top_logprobs\":[null,null,{\" dog\":-0.1,\" cat\":-2.5}]}}]}";

	(void)s;
	margins_read(bos, strlen(bos), 3, " dog", &ob);
	assert_int_equal(ob.why, MARGINS_WHY_NONE);
	assert_string_equal(ob.got_tok, " cat");
	assert_true(fabs(ob.lp_got + 2.5) < 1e-9);
	assert_true(ob.ref_known);
	assert_true(fabs(ob.lp_top + 0.1) < 1e-9);
	/* a position inside a token reads the token that covers it */
	margins_read(echo_body(-1, -2), strlen(echo_body(-1, -2)), 8, " ran", &ob);
	assert_string_equal(ob.got_tok, " sat");
}

static void t_body(void **s)
{
	char *b = margins_body("m", "the cat", " sat");

	(void)s;
	assert_non_null(b);
	assert_non_null(strstr(b, "\"prompt\":\"the cat sat\""));
	assert_non_null(strstr(b, "\"echo\":true"));
	assert_non_null(strstr(b, "\"logprobs\":5"));
	assert_non_null(strstr(b, "\"max_tokens\":1"));
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_near_tie),
		cmocka_unit_test(t_low_prob),
		cmocka_unit_test(t_eps_edge),
		cmocka_unit_test(t_duplicate_and_vocab),
		cmocka_unit_test(t_not_evaluable),
		cmocka_unit_test(t_read_offsets),
		cmocka_unit_test(t_body),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
