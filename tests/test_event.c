/*
 * test_event.c - decoding audit events, and the messages for malformed ones.
 * Every line decoded here also goes through the scanner (event_scan), with
 * AVX2 and with portable code: where it takes the line it must give the
 * tree's event exactly (tests/eventcmp.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analyzer/event.h"
#include "tests/eventcmp.h"

static struct jdoc *doc, *cmp_doc;
static struct event_decoder *dec, *tree_dec, *scan_dec;
static long n_scanned;   /* lines the scanner took, over the suite */
static struct event ev;
static struct status_info si;

static int setup(void **state)
{
	(void)state;
	doc = jdoc_new(1 << 20);
	cmp_doc = jdoc_new(1 << 20);
	dec = event_decoder_new();
	tree_dec = event_decoder_new();
	scan_dec = event_decoder_new();
	return doc && dec && cmp_doc && tree_dec && scan_dec ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	jdoc_free(doc);
	jdoc_free(cmp_doc);
	event_decoder_free(dec);
	event_decoder_free(tree_dec);
	event_decoder_free(scan_dec);
	return 0;
}

/* The scanner and the tree on one line, with both forms of the scanner and both wants. */
static int scan_agrees(const char *line, size_t n)
{
	char why[256];
	int simd, scanned = 0, any = 0;
	unsigned want;

	for (simd = 0; simd < 2; simd++)
		for (want = 0; want <= EVENT_WANT_TOKENS; want += EVENT_WANT_TOKENS) {
			jdoc_simd(simd);
			if (!eventcmp_line(cmp_doc, tree_dec, scan_dec, line, n, JDOC_MAX_DEPTH, want,
					   &scanned, why, sizeof(why)))
				fail_msg("scanner and tree differ on '%.200s': %s", line, why);
			any |= scanned;
			/* as a file read in place has it: its newline, the next line after it */
			if (!eventcmp_line_after(cmp_doc, tree_dec, scan_dec, line, n, line, n,
						 JDOC_MAX_DEPTH, want, &scanned, why, sizeof(why)))
				fail_msg("scanner and tree differ on '%.200s' and a newline: %s", line,
					 why);
		}
	jdoc_simd(1);
	n_scanned += any;
	return any;
}

static enum status decode(const char *line)
{
	scan_agrees(line, strlen(line));
	status_info_clear(&si);
	assert_int_equal(jdoc_parse(doc, line, strlen(line), &si), STATUS_OK);
	status_info_clear(&si);
	return event_decode(dec, doc, jdoc_root(doc), &ev, &si);
}

static void test_merge_full(void **state)
{
	const struct merge_event *m = &ev.u.merge;
	unsigned s;

	(void)state;
	assert_int_equal(decode(
		"{\"ev\":\"merge\",\"step\":141,\"reset_batch\":true,\"mode_switched\":false,"
		"\"host_pos\":[22,25,-1,9223372036854775807],"
		"\"dev_pos\":[29,-9223372036854775808,-1,28,77],"
		"\"host_tok\":[1012,771,90,3311],\"dev_tok\":[88,-1,-1,6402,5],"
		"\"prefilled\":[2,0,99,-3],\"buf_step\":103,\"gen\":12,\"buf_gen\":9,"
		"\"slot_gen\":[7,7,0,1],\"buf_slot_gen\":[4,7,0,2],"
		"\"slot_req\":[\"r41\",\"r42\",null,\"r44\"],\"buf_req\":[\"r33\",null,null,\"r44\"],"
		"\"taken\":[false,true,false,true],\"arm\":\"batch\",\"t\":1790000011.25,"
		"\"unknown_key\":{\"ignored\":[1,2]}}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_MERGE);
	assert_string_equal(ev.ev, "merge");
	assert_int_equal(m->step, 141);
	assert_int_equal(m->n_host, 4);
	assert_int_equal(m->n_dev, 5);
	assert_int_equal(m->host_pos[0], 22);
	assert_int_equal(m->host_pos[2], -1);
	assert_true(m->host_pos[3] == INT64_MAX);
	assert_true(m->dev_pos[1] == INT64_MIN);
	assert_int_equal(m->dev_pos[4], 77);
	assert_true(m->reset_batch);
	assert_false(m->mode_switched);
	assert_int_equal(m->n_host_tok, 4);
	assert_int_equal(m->n_dev_tok, 5);
	assert_int_equal(m->host_tok[3], 3311);
	assert_int_equal(m->dev_tok[4], 5);
	assert_true(m->has_prefilled);
	/* slots 0 and 2 listed; 99 and -3 are outside [0, H) and mask nothing */
	assert_int_equal(m->prefilled[0], 1);
	assert_int_equal(m->prefilled[1], 0);
	assert_int_equal(m->prefilled[2], 1);
	assert_int_equal(m->prefilled[3], 0);
	assert_true(m->has_buf_step);
	assert_int_equal(m->buf_step, 103);
	assert_true(m->has_gen);
	assert_int_equal(m->gen, 12);
	assert_int_equal(m->buf_gen, 9);
	assert_true(m->has_slot_gen);
	assert_int_equal(m->slot_gen[0], 7);
	assert_int_equal(m->buf_slot_gen[0], 4);
	assert_int_equal(m->buf_slot_gen[3], 2);
	assert_true(m->has_req);
	assert_string_equal(m->slot_req[0], "r41");
	assert_string_equal(m->buf_req[0], "r33");
	assert_null(m->buf_req[1]);
	assert_null(m->slot_req[2]);
	assert_string_equal(m->buf_req[3], "r44");
	assert_true(m->has_taken);
	for (s = 0; s < 4; s++)
		assert_int_equal(m->taken[s], s == 1 || s == 3);
	assert_string_equal(m->arm, "batch");
	assert_true(m->has_t);
	assert_true(m->t == 1790000011.25);
}

static void test_merge_minimal(void **state)
{
	const struct merge_event *m = &ev.u.merge;

	(void)state;
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":7,\"host_pos\":[1],\"dev_pos\":[]}"),
			 STATUS_OK);
	assert_int_equal(ev.kind, EVENT_MERGE);
	assert_int_equal(m->step, 7);
	assert_int_equal(m->n_host, 1);
	assert_int_equal(m->n_dev, 0);
	assert_false(m->reset_batch);
	assert_false(m->mode_switched);
	assert_int_equal(m->n_host_tok, 0);
	assert_int_equal(m->n_dev_tok, 0);
	assert_false(m->has_prefilled);
	assert_int_equal(m->prefilled[0], 0);
	assert_false(m->has_buf_step);
	assert_false(m->has_gen);
	assert_false(m->has_slot_gen);
	assert_false(m->has_req);
	assert_false(m->has_taken);
	assert_null(m->arm);
	assert_false(m->has_t);

	/* null stands for absent in optional fields; an integer t is a number */
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":7,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"reset_batch\":null,\"prefilled\":null,\"buf_step\":null,"
				"\"gen\":null,\"buf_gen\":null,\"slot_gen\":null,\"buf_slot_gen\":null,"
				"\"slot_req\":null,\"buf_req\":null,\"taken\":null,\"arm\":null,"
				"\"host_tok\":null,\"t\":5}"), STATUS_OK);
	assert_false(m->reset_batch);
	assert_false(m->has_prefilled);
	assert_false(m->has_buf_step);
	assert_false(m->has_gen);
	assert_false(m->has_slot_gen);
	assert_false(m->has_req);
	assert_false(m->has_taken);
	assert_null(m->arm);
	assert_true(m->has_t);
	assert_true(m->t == 5.0);

	/* an empty prefilled list is present and masks nothing */
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":7,\"host_pos\":[1,2],\"dev_pos\":[1,2],"
				"\"prefilled\":[]}"), STATUS_OK);
	assert_true(m->has_prefilled);
	assert_int_equal(m->prefilled[0], 0);
	assert_int_equal(m->prefilled[1], 0);
}

/* A pair counts only when both halves are there. */
static void test_merge_pairs(void **state)
{
	const struct merge_event *m = &ev.u.merge;

	(void)state;
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"gen\":3}"), STATUS_OK);
	assert_false(m->has_gen);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"buf_gen\":3}"), STATUS_OK);
	assert_false(m->has_gen);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"gen\":3,\"buf_gen\":3}"), STATUS_OK);
	assert_true(m->has_gen);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"slot_gen\":[3]}"), STATUS_OK);
	assert_false(m->has_slot_gen);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"buf_slot_gen\":[3]}"), STATUS_OK);
	assert_false(m->has_slot_gen);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"slot_req\":[\"a\"]}"), STATUS_OK);
	assert_false(m->has_req);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"buf_req\":[\"a\"]}"), STATUS_OK);
	assert_false(m->has_req);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"slot_req\":[null],\"buf_req\":[null]}"), STATUS_OK);
	assert_true(m->has_req);
	assert_null(m->slot_req[0]);
}

/* Each malformed merge event: the status, the message, the byte it points at. */
static void test_merge_malformed(void **state)
{
	static const struct {
		const char *line;
		enum status st;
		const char *msg;
		long byte;     /* 0: not checked */
	} bad[] = {
		{ "{\"ev\":\"merge\",\"host_pos\":[1],\"dev_pos\":[1]}", STATUS_PARSE,
		  "step missing", 0 },
		{ "{\"ev\":\"merge\",\"step\":\"1\",\"host_pos\":[1],\"dev_pos\":[1]}", STATUS_PARSE,
		  "step is not an integer (string)", 22 },
		{ "{\"ev\":\"merge\",\"step\":1.5,\"host_pos\":[1],\"dev_pos\":[1]}", STATUS_PARSE,
		  "step is not an integer (number)", 22 },
		{ "{\"ev\":\"merge\",\"step\":9223372036854775808,\"host_pos\":[1],\"dev_pos\":[1]}",
		  STATUS_PARSE, "step is outside int64", 22 },
		{ "{\"ev\":\"merge\",\"step\":1,\"dev_pos\":[1]}", STATUS_PARSE, "host_pos missing", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1]}", STATUS_PARSE, "dev_pos missing", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":null,\"dev_pos\":[1]}", STATUS_PARSE,
		  "host_pos is not an integer array (null)", 35 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":1,\"dev_pos\":[1]}", STATUS_PARSE,
		  "host_pos is not an integer array (integer)", 35 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1.0],\"dev_pos\":[1]}", STATUS_PARSE,
		  "host_pos[0] is not an integer (number)", 36 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1,2,3,9223372036854775808]}",
		  STATUS_PARSE, "dev_pos[3] is outside int64", 56 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[-9223372036854775809]}",
		  STATUS_PARSE, "dev_pos[0] is outside int64", 50 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[null]}", STATUS_PARSE,
		  "dev_pos[0] is not an integer (null)", 50 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"reset_batch\":1}",
		  STATUS_PARSE, "reset_batch is not a boolean (integer)", 67 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"mode_switched\":\"no\"}",
		  STATUS_PARSE, "mode_switched is not a boolean (string)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"host_tok\":[\"a\"]}",
		  STATUS_PARSE, "host_tok[0] is not an integer (string)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"dev_tok\":{}}",
		  STATUS_PARSE, "dev_tok is not an integer array (object)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"prefilled\":3}",
		  STATUS_PARSE, "prefilled is not an integer array (integer)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"prefilled\":[0,true]}",
		  STATUS_PARSE, "prefilled[1] is not an integer (boolean)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
		  "\"prefilled\":[99999999999999999999]}", STATUS_PARSE,
		  "prefilled[0] is outside int64", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"buf_step\":true}",
		  STATUS_PARSE, "buf_step is not an integer (boolean)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"gen\":1,\"buf_gen\":\"x\"}",
		  STATUS_PARSE, "buf_gen is not an integer (string)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1,2,3,4,5,6,7,8],\"dev_pos\":[1],"
		  "\"slot_gen\":[1,1,1,1,1,1,1],\"buf_slot_gen\":[1,1,1,1,1,1,1,1]}", STATUS_PARSE,
		  "slot_gen has 7 entries, host_pos 8", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1,2],\"dev_pos\":[1],"
		  "\"slot_gen\":[1,1],\"buf_slot_gen\":[1,1,1]}", STATUS_PARSE,
		  "buf_slot_gen has 3 entries, host_pos 2", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1,2],\"dev_pos\":[1],\"slot_req\":[\"a\"]}",
		  STATUS_PARSE, "slot_req has 1 entries, host_pos 2", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"buf_req\":[3]}",
		  STATUS_PARSE, "buf_req[0] is not a string or null (integer)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"slot_req\":\"a\"}",
		  STATUS_PARSE, "slot_req is not an array (string)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1,2,3],\"dev_pos\":[1],"
		  "\"taken\":[true,false,1]}", STATUS_PARSE, "taken[2] is not a boolean (integer)", 77 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1,2,3],\"dev_pos\":[1],\"taken\":[true]}",
		  STATUS_PARSE, "taken has 1 entries, host_pos 3", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"taken\":true}",
		  STATUS_PARSE, "taken is not a boolean array (boolean)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"arm\":5}",
		  STATUS_PARSE, "arm is not a string (integer)", 0 },
		{ "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"t\":\"now\"}",
		  STATUS_PARSE, "t is not a number (string)", 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum status st = decode(bad[i].line);
		if (st != bad[i].st || strcmp(si.msg, bad[i].msg))
			fail_msg("case %zu: status %d '%s', want %d '%s'", i, st, si.msg, bad[i].st,
				 bad[i].msg);
		if (bad[i].byte && si.byte != bad[i].byte)
			fail_msg("case %zu ('%s'): byte %ld, want %ld", i, si.msg, si.byte, bad[i].byte);
	}
}

/*
 * With two bad members the message names the one the field table reads
 * first, whatever their order on the line; a config's negative
 * max_model_len is judged after its other members.
 */
static void test_first_bad_member(void **state)
{
	static const struct {
		const char *line;
		const char *msg;
	} two[] = {
		{ "{\"ev\":\"merge\",\"arm\":1,\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
		  "\"reset_batch\":1}", "reset_batch is not a boolean (integer)" },
		{ "{\"ev\":\"merge\",\"rank\":-1,\"buf_step\":\"x\",\"step\":1,\"host_pos\":[1],"
		  "\"dev_pos\":[1]}", "buf_step is not an integer (string)" },
		{ "{\"ev\":\"merge\",\"t\":\"x\",\"buf_slot_gen\":[1,2],\"step\":1,\"host_pos\":[1],"
		  "\"dev_pos\":[1]}", "buf_slot_gen has 2 entries, host_pos 1" },
		{ "{\"ev\":\"merge\",\"dp\":-2,\"taken\":[1],\"step\":1,\"host_pos\":[1],"
		  "\"dev_pos\":[1]}", "taken[0] is not a boolean (integer)" },
		{ "{\"ev\":\"config\",\"max_model_len\":-1,\"arm\":7}", "arm is not a string (integer)" },
		{ "{\"ev\":\"config\",\"max_model_len\":-1,\"rank\":0}", "max_model_len is negative (-1)" },
		{ "{\"ev\":\"request\",\"rank\":-1,\"phase\":2}", "phase is not a string (integer)" },
		{ "{\"ev\":\"gate\",\"reason\":1,\"keep\":\"yes\"}", "keep is not a boolean (string)" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(two) / sizeof(two[0]); i++) {
		assert_int_equal(decode(two[i].line), STATUS_PARSE);
		if (strcmp(si.msg, two[i].msg))
			fail_msg("'%s': message '%s', want '%s'", two[i].line, si.msg, two[i].msg);
	}
}

static void test_merge_limit(void **state)
{
	size_t cap = 16 * (EVENT_MAX_SLOTS + 2) + 128, n = 0, i;
	char *s = malloc(cap);
	const char *head = "{\"ev\":\"merge\",\"step\":1,\"dev_pos\":[1],\"host_pos\":[";

	(void)state;
	assert_non_null(s);
	/* exactly EVENT_MAX_SLOTS entries: accepted */
	n = (size_t)snprintf(s, cap, "%s", head);
	for (i = 0; i < EVENT_MAX_SLOTS; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s%zu", i ? "," : "", i);
	snprintf(s + n, cap - n, "]}");
	assert_int_equal(decode(s), STATUS_OK);
	assert_int_equal(ev.u.merge.n_host, EVENT_MAX_SLOTS);
	assert_int_equal(ev.u.merge.host_pos[EVENT_MAX_SLOTS - 1], EVENT_MAX_SLOTS - 1);
	/* negative prefilled slots mask nothing and write nothing (the widest event) */
	{
		static const char *const keys[] = { "host_pos", "dev_pos", "slot_gen", "buf_slot_gen" };
		size_t total = 4 * (EVENT_MAX_SLOTS * 2 + 32) + 128, k, j;
		char *t = malloc(total);
		assert_non_null(t);
		k = (size_t)snprintf(t, total, "{\"ev\":\"merge\",\"step\":1,\"prefilled\":[-1,-8,-4096,-163832,-196600]");
		for (j = 0; j < 4; j++) {
			k += (size_t)snprintf(t + k, total - k, ",\"%s\":[", keys[j]);
			for (i = 0; i < EVENT_MAX_SLOTS; i++)
				k += (size_t)snprintf(t + k, total - k, "%s%d", i ? "," : "", j == 0);
			k += (size_t)snprintf(t + k, total - k, "]");
		}
		snprintf(t + k, total - k, "}");
		assert_true(k + 2 < total);
		assert_int_equal(decode(t), STATUS_OK);
		assert_true(ev.u.merge.has_slot_gen);
		assert_true(ev.u.merge.has_prefilled);
		for (i = 0; i < EVENT_MAX_SLOTS; i++) {
			assert_int_equal(ev.u.merge.prefilled[i], 0);
			assert_int_equal(ev.u.merge.dev_pos[i], 0);
			assert_int_equal(ev.u.merge.slot_gen[i], 0);
			assert_int_equal(ev.u.merge.buf_slot_gen[i], 0);
		}
		free(t);
	}
	/* rebuild the widest host_pos for the cap test below */
	n = (size_t)snprintf(s, cap, "%s", head);
	for (i = 0; i < EVENT_MAX_SLOTS; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s%zu", i ? "," : "", i);
	/* one more: a hard cap */
	snprintf(s + n, cap - n, ",5]}");
	assert_int_equal(decode(s), STATUS_LIMIT);
	assert_string_equal(si.msg, "host_pos has 4097 entries, more than 4096");
	assert_int_equal(si.byte, (long)strlen(head));
	free(s);
}

static void test_config(void **state)
{
	(void)state;
	assert_int_equal(decode("{\"ev\":\"config\",\"slots\":8,\"max_model_len\":131072,"
				"\"arm\":\"batch\"}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_CONFIG);
	assert_string_equal(ev.ev, "config");
	assert_int_equal(ev.u.config.slots, 8);
	assert_int_equal(ev.u.config.max_model_len, 131072);
	assert_true(ev.u.config.has_max_model_len);
	assert_string_equal(ev.u.config.arm, "batch");
	assert_int_equal(decode("{\"ev\":\"config\"}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_CONFIG);
	assert_int_equal(ev.u.config.slots, 0);
	assert_int_equal(ev.u.config.max_model_len, 0);
	assert_false(ev.u.config.has_max_model_len);   /* says nothing about the bound */
	assert_null(ev.u.config.arm);
	assert_int_equal(decode("{\"ev\":\"config\",\"max_model_len\":null}"), STATUS_OK);
	assert_false(ev.u.config.has_max_model_len);   /* null is absent */
	assert_int_equal(decode("{\"ev\":\"config\",\"max_model_len\":-5}"), STATUS_PARSE);
	assert_string_equal(si.msg, "max_model_len is negative (-5)");
	assert_int_equal(decode("{\"ev\":\"config\",\"max_model_len\":-1}"), STATUS_PARSE);
	assert_string_equal(si.msg, "max_model_len is negative (-1)");
	assert_int_equal(decode("{\"ev\":\"config\",\"max_model_len\":0}"), STATUS_OK);
	assert_true(ev.u.config.has_max_model_len);    /* 0: the length is not known */
	assert_int_equal(ev.u.config.max_model_len, 0);
	assert_int_equal(decode("{\"ev\":\"config\",\"max_model_len\":\"4096\"}"), STATUS_PARSE);
	assert_string_equal(si.msg, "max_model_len is not an integer (string)");
	assert_int_equal(decode("{\"ev\":\"config\",\"slots\":1.5}"), STATUS_PARSE);
	assert_string_equal(si.msg, "slots is not an integer (number)");
	assert_int_equal(decode("{\"ev\":\"config\",\"arm\":[]}"), STATUS_PARSE);
	assert_string_equal(si.msg, "arm is not a string (array)");
}

static void test_context(void **state)
{
	(void)state;
	assert_int_equal(decode("{\"ev\":\"request\",\"phase\":\"start\",\"req\":\"cmpl-ab\","
				"\"slot\":3,\"step\":40}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_CONTEXT);
	assert_string_equal(ev.u.ctx.ev, "request");
	assert_string_equal(ev.u.ctx.phase, "start");
	assert_string_equal(ev.u.ctx.req, "cmpl-ab");
	assert_true(ev.u.ctx.has_slot);
	assert_int_equal(ev.u.ctx.slot, 3);
	assert_true(ev.u.ctx.has_step);
	assert_int_equal(ev.u.ctx.step, 40);
	assert_int_equal(decode("{\"ev\":\"decode\",\"step\":150}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_CONTEXT);
	assert_string_equal(ev.u.ctx.ev, "decode");
	assert_false(ev.u.ctx.has_slot);
	assert_null(ev.u.ctx.req);
	assert_null(ev.u.ctx.phase);
	assert_int_equal(decode("{\"ev\":\"prefill\",\"step\":29,\"slots\":[2]}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_CONTEXT);
	assert_int_equal(decode("{\"ev\":\"width_change\",\"from\":4,\"to\":8}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_CONTEXT);
	assert_false(ev.u.ctx.has_step);
	assert_int_equal(decode("{\"ev\":\"request\",\"slot\":\"3\"}"), STATUS_PARSE);
	assert_string_equal(si.msg, "slot is not an integer (string)");
	assert_int_equal(decode("{\"ev\":\"request\",\"req\":7}"), STATUS_PARSE);
	assert_string_equal(si.msg, "req is not a string (integer)");
	assert_int_equal(decode("{\"ev\":\"decode\",\"step\":[]}"), STATUS_PARSE);
	assert_string_equal(si.msg, "step is not an integer (array)");
}

static void test_other_and_bad_ev(void **state)
{
	(void)state;
	/* unknown ev values are counted as other and otherwise ignored */
	assert_int_equal(decode("{\"ev\":\"heartbeat\",\"step\":\"whatever\"}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_OTHER);
	assert_string_equal(ev.ev, "heartbeat");
	assert_int_equal(decode("{\"ev\":\"Merge\",\"host_pos\":5}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_OTHER);
	assert_int_equal(decode("{\"ev\":\"\"}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_OTHER);
	assert_int_equal(decode("{\"ev\":3}"), STATUS_PARSE);
	assert_string_equal(si.msg, "ev is not a string (integer)");
	assert_int_equal(si.byte, 7);
	assert_int_equal(decode("{\"x\":3}"), STATUS_PARSE);
	assert_string_equal(si.msg, "ev is not a string (missing)");
	/* the last "ev" decides */
	assert_int_equal(decode("{\"ev\":\"merge\",\"ev\":\"decode\"}"), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_CONTEXT);
}

/* One decoder, many events: nothing leaks from the previous one. */
static void test_decoder_reuse(void **state)
{
	const struct merge_event *m = &ev.u.merge;

	(void)state;
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1,2,3],\"dev_pos\":[1,2,3],"
				"\"prefilled\":[0,1,2],\"taken\":[true,true,true]}"), STATUS_OK);
	assert_int_equal(m->prefilled[2], 1);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":2,\"host_pos\":[1,2,3],\"dev_pos\":[1,2,3],"
				"\"prefilled\":[1]}"), STATUS_OK);
	assert_int_equal(m->prefilled[0], 0);
	assert_int_equal(m->prefilled[1], 1);
	assert_int_equal(m->prefilled[2], 0);
	assert_false(m->has_taken);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":3,\"host_pos\":[1,2,3],\"dev_pos\":[1,2,3]}"),
			 STATUS_OK);
	assert_false(m->has_prefilled);
	assert_int_equal(m->prefilled[1], 0);
}

/* NUL inside ev, and the new events and fields (gate, trace, dp, rank). */
static void test_lengths_and_new_events(void **state)
{
	static const char nul_merge[] = "{\"ev\":\"merge\\u0000\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1]}";
	const struct merge_event *m = &ev.u.merge;

	(void)state;
	assert_int_equal(decode(nul_merge), STATUS_OK);
	assert_int_equal(ev.kind, EVENT_OTHER);
	assert_int_equal(ev.ev_len, 6);
	assert_memory_equal(ev.ev, "merge\0", 6);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],"
				"\"slot_req\":[\"a\\u0000b\"],\"buf_req\":[\"a\\u0000c\"],\"dp\":2,\"rank\":0}"),
			 STATUS_OK);
	assert_int_equal(m->slot_req_len[0], 3);
	assert_memory_equal(m->slot_req[0], "a\0b", 3);
	assert_memory_equal(m->buf_req[0], "a\0c", 3);
	assert_true(m->has_dp && m->dp == 2 && m->has_rank && m->rank == 0);
	assert_int_equal(decode("{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"dp\":-1}"),
			 STATUS_PARSE);
	assert_string_equal(si.msg, "dp is negative");
	assert_int_equal(decode("{\"ev\":\"gate\",\"step\":10,\"keep\":false,\"supports_async_decode\":false,"
				"\"force\":false,\"reason\":\"model does not declare supports_async_decode\"}"),
			 STATUS_OK);
	assert_int_equal(ev.kind, EVENT_GATE);
	assert_true(ev.u.gate.has_keep && !ev.u.gate.keep && ev.u.gate.has_step);
	assert_int_equal(ev.u.gate.step, 10);
	assert_int_equal(ev.u.gate.reason_len, 44);
	assert_int_equal(decode("{\"ev\":\"gate\",\"step\":11,\"keep\":true,\"force\":true,\"dp\":1}"), STATUS_OK);
	assert_true(ev.u.gate.keep && ev.u.gate.force && ev.u.gate.dp == 1);
	assert_int_equal(decode("{\"ev\":\"gate\",\"keep\":\"no\"}"), STATUS_PARSE);
	assert_string_equal(si.msg, "keep is not a boolean (string)");
	assert_int_equal(decode("{\"ev\":\"trace\",\"step\":10,\"op\":\"restage\",\"key\":\"(True, 8)\",\"dp\":0}"),
			 STATUS_OK);
	assert_int_equal(ev.kind, EVENT_CONTEXT);
	assert_true(event_str_is(ev.u.ctx.op, ev.u.ctx.op_len, "restage"));
	assert_true(event_str_is(ev.u.ctx.key, ev.u.ctx.key_len, "(True, 8)"));
	assert_true(ev.u.ctx.has_dp);
	assert_int_equal(decode("{\"ev\":\"config\",\"max_model_len\":7,\"rank\":3}"), STATUS_OK);
	assert_true(ev.u.config.has_rank && ev.u.config.rank == 3);
}

/* Forms the scanner leaves to the tree, and forms it reads: the same events either way. */
static void test_scanner_forms(void **state)
{
	static const char *const declined[] = {
		"{\"step\":1,\"ev\":\"merge\",\"host_pos\":[1],\"dev_pos\":[1]}",   /* ev not first */
		"{\"ev\":\"merge\",\"st\\u0065p\":1,\"host_pos\":[1],\"dev_pos\":[1]}", /* escaped name */
		"{\"ev\":\"merge\",\"step\":1,\"step\":2,\"host_pos\":[1],\"dev_pos\":[1]}", /* twice */
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"ev\":\"x\"}",
		"{\"ev\":\"merge\",\"step\":1.0,\"host_pos\":[1],\"dev_pos\":[1]}",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[01],\"dev_pos\":[1]}",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"taken\":[1]}",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[9223372036854775808]}",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1]} x",
	};
	static const char *const taken[] = {
		"{\"ev\":\"merge\",\"step\":-9223372036854775808,\"host_pos\":[-1,0,9223372036854775807],"
		"\"dev_pos\":[-9223372036854775808,-0,123456789012345678,1,2],\"prefilled\":[5,-1,0]}",
		"{ \"ev\" : \"merge\" , \"step\" : 1 , \"host_pos\" : [ 1 , 2 ] , \"dev_pos\" : [ 1 ,2 ] }\r",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1,2],\"dev_pos\":[1,2],\"slot_req\":[\"\\ud800\",\"\\\"q\"],"
		"\"buf_req\":[\"\\udbff\",null],\"x\":{\"y\":[1,\"z\",[true,null]]},\"t\":1e3}",
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"slot_req\":[\"a-very-long-request-id-0123456789\"],"
		"\"buf_req\":[\"a-very-long-request-id-0123456789\"],\"t\":99999999999999999999}",
		"{\"ev\":\"decode\",\"step\":3,\"slots\":[0,1,2]}",
		"{\"ev\":\"heartbeat\",\"anything\":[[[[1]]]]}",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(declined) / sizeof(declined[0]); i++)
		if (scan_agrees(declined[i], strlen(declined[i])))
			fail_msg("the scanner took '%s'", declined[i]);
	for (i = 0; i < sizeof(taken) / sizeof(taken[0]); i++)
		if (!scan_agrees(taken[i], strlen(taken[i])))
			fail_msg("the scanner declined '%s'", taken[i]);
	/* a long merge: arrays crossing 64-byte blocks, entries of every length */
	{
		char line[8192];
		size_t n = 0, k;
		n += (size_t)snprintf(line + n, sizeof(line) - n, "{\"ev\":\"merge\",\"step\":7");
		for (k = 0; k < 4; k++) {
			static const char *const keys[] = { "host_pos", "dev_pos", "slot_gen", "buf_slot_gen" };
			int64_t v = 1;
			int j;
			n += (size_t)snprintf(line + n, sizeof(line) - n, ",\"%s\":[", keys[k]);
			for (j = 0; j < 40; j++) {
				n += (size_t)snprintf(line + n, sizeof(line) - n, "%s%lld", j ? "," : "",
						      (long long)((j % 3 ? 1 : -1) * (v + (int64_t)k)));
				v = v * 7 + j;
				if (v > INT64_MAX / 10)
					v = j;
			}
			n += (size_t)snprintf(line + n, sizeof(line) - n, "]");
		}
		snprintf(line + n, sizeof(line) - n, "}");
		if (!scan_agrees(line, strlen(line)))
			fail_msg("the scanner declined the long merge");
	}
}

/* event_scan of one line on dec into ev (a padded copy, kept until the next call). */
static int scan_on(struct event_decoder *d, const char *line, unsigned want)
{
	static char buf[4096 + JDOC_SCAN_PAD + 1];
	size_t n = strlen(line);

	assert_true(n < 4096);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, line, n);
	return event_scan(d, buf, n, JDOC_MAX_DEPTH, want, &ev);
}

/*
 * The arrays a merge shares byte for byte with the last one are taken from
 * the decoder: never when something else wrote them since (the tree, a scan
 * that failed halfway, a scan that did not keep the tokens).
 */
static void test_scan_memo(void **state)
{
	static const char a[] =
		"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1,2],\"dev_pos\":[5,6],\"dev_tok\":[7,8],"
		"\"slot_gen\":[1,2],\"buf_slot_gen\":[1,2],\"slot_req\":[\"x\",\"y\"],"
		"\"buf_req\":[\"x\",null],\"taken\":[true,false]}";
	static const char b[] =
		"{\"ev\":\"merge\",\"step\":2,\"host_pos\":[1,2],\"dev_pos\":[9,9],\"dev_tok\":[3,3],"
		"\"slot_gen\":[4,4],\"buf_slot_gen\":[4,4],\"slot_req\":[\"q\",\"q\"],"
		"\"buf_req\":[\"zz\",\"w\"],\"taken\":[false,true]}";
	static const char half[] =   /* dev_pos read halfway, then the line is declined */
		"{\"ev\":\"merge\",\"step\":3,\"host_pos\":[1,2],\"dev_pos\":[9,9,9,9,9,9,9,9,9,9,9,9,"
		"9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,9,x]}";
	const struct merge_event *m = &ev.u.merge;
	struct event_decoder *d = event_decoder_new();
	int round;

	(void)state;
	assert_non_null(d);
	for (round = 0; round < 4; round++) {
		/* round 0: fresh; 1: after the tree wrote b; 2: after a failed scan; 3: again */
		if (round == 1) {
			status_info_clear(&si);
			assert_int_equal(jdoc_parse(doc, b, strlen(b), &si), STATUS_OK);
			assert_int_equal(event_decode(d, doc, jdoc_root(doc), &ev, &si), STATUS_OK);
			assert_int_equal(m->dev_pos[0], 9);
		}
		if (round == 2)
			assert_int_equal(scan_on(d, half, 0), 0);
		/* without the tokens first, then with them: the memo of a check alone gives no values */
		assert_int_equal(scan_on(d, a, 0), 1);
		assert_int_equal(scan_on(d, a, EVENT_WANT_TOKENS), 1);
		assert_int_equal(m->n_dev, 2);
		assert_int_equal(m->dev_pos[0], 5);
		assert_int_equal(m->dev_pos[1], 6);
		assert_int_equal(m->n_dev_tok, 2);
		assert_int_equal(m->dev_tok[0], 7);
		assert_int_equal(m->dev_tok[1], 8);
		assert_int_equal(m->slot_gen[0], 1);
		assert_int_equal(m->buf_slot_gen[1], 2);
		assert_true(m->has_req && m->buf_req[0] && !m->buf_req[1]);
		assert_int_equal(m->buf_req_len[0], 1);
		assert_memory_equal(m->buf_req[0], "x", 1);
		assert_true(m->has_taken && m->taken[0] == 1 && m->taken[1] == 0);
	}
	/* b after a by the scanner: nothing of a stays */
	assert_int_equal(scan_on(d, b, EVENT_WANT_TOKENS), 1);
	assert_int_equal(m->dev_pos[0], 9);
	assert_int_equal(m->dev_tok[0], 3);
	assert_int_equal(m->slot_gen[0], 4);
	assert_int_equal(m->buf_req_len[0], 2);
	assert_memory_equal(m->buf_req[1], "w", 1);
	assert_true(m->taken[0] == 0 && m->taken[1] == 1);
	event_decoder_free(d);
}

/* Last: the lines of the other tests were not all declined (the check above is not idle). */
static void test_scanner_took_lines(void **state)
{
	(void)state;
	assert_true(n_scanned >= 30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lengths_and_new_events),
		cmocka_unit_test(test_scanner_forms),
		cmocka_unit_test(test_merge_full),
		cmocka_unit_test(test_merge_minimal),
		cmocka_unit_test(test_merge_pairs),
		cmocka_unit_test(test_merge_malformed),
		cmocka_unit_test(test_first_bad_member),
		cmocka_unit_test(test_merge_limit),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_context),
		cmocka_unit_test(test_other_and_bad_ev),
		cmocka_unit_test(test_decoder_reuse),
		cmocka_unit_test(test_scan_memo),
		cmocka_unit_test(test_scanner_took_lines),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
