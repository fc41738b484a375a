/* test_ttsim_vocab.c - ttsim's word-list tokenizer and its audit writer's
 * line forms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "tools/ttsim/audit.h"
#include "tools/ttsim/vocab.h"

/* Every generated token has its own text and tokenizes back to itself. */
static void test_roundtrip(void **state)
{
	char buf[64], text[TTSIM_VOCAB_WORDS * 16];
	size_t len = 0;
	int tok, back, *toks;

	(void)state;
	text[0] = 0;
	for (tok = 0; tok < TTSIM_VOCAB_WORDS; tok++) {
		ttsim_vocab_word(tok, buf, sizeof(buf));
		assert_true(buf[0] != 0);
		assert_int_equal(ttsim_vocab_tokenize(buf, strlen(buf), &back, 1), 1);
		assert_int_equal(back, tok);
		assert_int_equal(ttsim_vocab_append(tok, text, sizeof(text), &len), 0);
	}
	toks = malloc(TTSIM_VOCAB_WORDS * sizeof(int));
	assert_non_null(toks);
	assert_int_equal(ttsim_vocab_tokenize(text, len, toks, TTSIM_VOCAB_WORDS),
			 TTSIM_VOCAB_WORDS);
	for (tok = 0; tok < TTSIM_VOCAB_WORDS; tok++)
		assert_int_equal(toks[tok], tok);
	free(toks);
}

static void test_prompt_pieces(void **state)
{
	int t[8], u[8];

	(void)state;
	/* words outside the list hash to stable prompt-only ids */
	assert_int_equal(ttsim_vocab_tokenize("  Zebra\tquux  time\n", 19, t, 8), 3);
	assert_int_equal(ttsim_vocab_tokenize("Zebra quux time", 15, u, 8), 3);
	assert_memory_equal(t, u, sizeof(int) * 3);
	assert_true(t[0] >= TTSIM_VOCAB_WORDS && t[0] < TTSIM_VOCAB_SIZE);
	assert_true(t[2] < TTSIM_VOCAB_WORDS);
	/* the count is complete even past the array */
	assert_int_equal(ttsim_vocab_tokenize("a b c d e", 9, t, 2), 5);
	assert_int_equal(ttsim_vocab_tokenize("   ", 3, t, 2), 0);
}

static void test_append_cap(void **state)
{
	char buf[8];
	size_t len = 0;

	(void)state;
	buf[0] = 0;
	assert_int_equal(ttsim_vocab_append(0, buf, sizeof(buf), &len), 0);   /* " time" */
	assert_string_equal(buf, " time");
	assert_int_equal(ttsim_vocab_append(0, buf, sizeof(buf), &len), -1);
	assert_string_equal(buf, " time");
	assert_int_equal(len, 5);
	assert_string_equal(ttsim_vocab_word(-1, buf, sizeof(buf)), "");
	assert_string_equal(ttsim_vocab_word(TTSIM_VOCAB_WORDS + 5, buf, sizeof(buf)), "tok2053");
}

static char *slurp_fd(int fd)
{
	static char buf[65536];
	ssize_t n;

	lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	assert_true(n >= 0);
	buf[n] = 0;
	return buf;
}

static void test_audit_lines(void **state)
{
	char path[] = "/tmp/ttsim-audit.XXXXXX";
	int fd = mkstemp(path);
	struct ttsim_audit *a;
	static const long long hp[2] = { 5, -1 }, dp[2] = { 6, 1206993122 }, sg[2] = { 1, 0 };
	static const int ht[2] = { 7, -1 }, dt[2] = { 8, -1 };
	static const unsigned char pre[2] = { 1, 0 }, tk[2] = { 1, 0 };
	static const char *const sr[2] = { "cmpl-a\"b", NULL }, *const br[2] = { "cmpl-x", NULL };
	struct ttsim_merge m;
	char *text;

	(void)state;
	assert_true(fd >= 0);
	a = ttsim_audit_new_fd(fd, true);
	assert_non_null(a);
	memset(&m, 0, sizeof(m));
	m.step = 9;
	m.reset_batch = true;
	m.n_host = m.n_dev = 2;
	m.host_pos = hp;
	m.dev_pos = dp;
	m.host_tok = ht;
	m.dev_tok = dt;
	m.prefilled = pre;
	m.has_buf_step = true;
	m.buf_step = 4;
	m.has_gen = true;
	m.gen = 3;
	m.buf_gen = 2;
	m.slot_gen = sg;
	m.buf_slot_gen = sg;
	m.slot_req = sr;
	m.buf_req = br;
	m.taken = tk;
	m.arm = "bare";
	ttsim_audit_merge(a, &m);
	ttsim_audit_decode(a, 10, (const int[]){ 0 }, 1);
	assert_int_equal(ttsim_audit_events(a), 2);
	text = slurp_fd(fd);
	assert_non_null(strstr(text, "[generator.py:1930] MERGE_AUDIT {\"ev\":\"merge\",\"step\":9,"
			       "\"reset_batch\":true,\"mode_switched\":false,\"host_pos\":[5,-1],"
			       "\"dev_pos\":[6,1206993122],\"host_tok\":[7,-1],\"dev_tok\":[8,-1],"
			       "\"prefilled\":[0],\"buf_step\":4,\"gen\":3,\"buf_gen\":2,"
			       "\"slot_gen\":[1,0],\"buf_slot_gen\":[1,0],"
			       "\"slot_req\":[\"cmpl-a\\\"b\",null],\"buf_req\":[\"cmpl-x\",null],"
			       "\"taken\":[true,false],\"arm\":\"bare\"}\n"));
	assert_int_equal(strncmp(text, "INFO ", 5), 0);
	assert_non_null(strstr(text, "MERGE_AUDIT {\"ev\":\"decode\",\"step\":10,\"slots\":[0]}\n"));
	ttsim_audit_free(a);
	close(fd);
	unlink(path);
}

static void test_audit_write_error(void **state)
{
	struct ttsim_audit *a = ttsim_audit_new_fd(-1, false);
	struct status_info si;

	(void)state;
	assert_non_null(a);
	ttsim_audit_request(a, "start", "r", 0, 1, 0, 0, false);
	assert_int_equal(ttsim_audit_events(a), 0);
	assert_int_equal(ttsim_audit_lost(a), 1);
	ttsim_audit_free(a);
	assert_int_equal(ttsim_audit_open("/nonexistent/dir/x", false, &a, &si), STATUS_IO);
	assert_null(a);
	assert_string_equal(si.file, "/nonexistent/dir/x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_prompt_pieces),
		cmocka_unit_test(test_append_cap),
		cmocka_unit_test(test_audit_lines),
		cmocka_unit_test(test_audit_write_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
