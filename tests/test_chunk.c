/*
 * test_chunk.c - a streamed chunk read by jdoc's scanner and by its tree
 * (bench/chunk.c) gives the same fields, on every chunk of the field's
 * transcripts (fixtures/sse), on each of them spaced out and with members
 * repeated, and on the forms the scanner declines.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include <cmocka.h>

#include "bench/chunk.h"

static struct chunk_reader *scan, *tree;

static int setup(void **state)
{
	(void)state;
	scan = chunk_reader_new();
	tree = chunk_reader_new();
	if (!scan || !tree)
		return -1;
	chunk_reader_tree_only(tree, true);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	chunk_reader_free(scan);
	chunk_reader_free(tree);
	return 0;
}

static void same_span(const char *what, bool ha, const char *a, size_t na, bool hb, const char *b,
		      size_t nb)
{
	if (ha != hb || (ha && (na != nb || memcmp(a, b, na))))
		fail_msg("%s differs: scanner %d '%.*s', tree %d '%.*s'", what, ha, (int)na, ha ? a : "",
			 hb, (int)nb, hb ? b : "");
}

/* Reads c both ways; returns 1 when the scanner took it. */
static int both(const char *c, bool chat)
{
	struct chunk_fields a, b;
	char ma[200], mb[200];
	size_t before = chunk_reader_scanned(scan);
	enum chunk_error ea = chunk_read(scan, chat, c, strlen(c), &a, ma, sizeof(ma));
	enum chunk_error eb = chunk_read(tree, chat, c, strlen(c), &b, mb, sizeof(mb));

	if (ea != eb)
		fail_msg("'%s': scanner %d, tree %d", c, ea, eb);
	assert_string_equal(ma, mb);
	if (ea)
		return 0;
	same_span("id", a.has_id, a.id, a.n_id, b.has_id, b.id, b.n_id);
	same_span("content", a.has_content, a.content, a.n_content, b.has_content, b.content, b.n_content);
	same_span("finish", a.has_finish, a.finish, a.n_finish, b.has_finish, b.finish, b.n_finish);
	same_span("reasoning", a.has_reasoning, a.reasoning, a.n_reasoning, b.has_reasoning, b.reasoning,
		  b.n_reasoning);
	assert_int_equal(a.has_role, b.has_role);
	assert_int_equal(a.n_token_ids, b.n_token_ids);
	assert_int_equal(a.has_usage, b.has_usage);
	assert_int_equal(a.usage_prompt, b.usage_prompt);
	assert_int_equal(a.usage_completion, b.usage_completion);
	assert_int_equal(a.choice, b.choice);
	return chunk_reader_scanned(scan) > before;
}

/* c with a space after every ',' ':' '{' '[' outside strings. */
static void spaced(const char *c, char *out, size_t n)
{
	size_t k = 0;
	int in_str = 0, esc = 0;

	for (; *c && k + 3 < n; c++) {
		out[k++] = *c;
		if (in_str) {
			if (esc)
				esc = 0;
			else if (*c == '\\')
				esc = 1;
			else if (*c == '"')
				in_str = 0;
		} else if (*c == '"') {
			in_str = 1;
		} else if (strchr(",:{[", *c)) {
			out[k++] = ' ';
		}
	}
	out[k] = 0;
}

static void test_fixtures(void **state)
{
	glob_t g;
	size_t i, n_chunks = 0, n_scanned = 0;
	char line[16384], sp[32768], dup[32800];

	(void)state;
	assert_int_equal(glob("fixtures/sse/*.sse", 0, NULL, &g), 0);
	for (i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");
		bool chat = strstr(g.gl_pathv[i], "chat") != NULL;

		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			char *d = line;
			size_t n;

			if (strncmp(d, "data:", 5) && strncmp(d, "error:", 6))
				continue;
			d += *d == 'd' ? 5 : 6;
			if (*d == ' ')
				d++;
			n = strcspn(d, "\r\n");
			d[n] = 0;
			if (!strcmp(d, "[DONE]"))
				continue;
			n_chunks++;
			n_scanned += (size_t)both(d, chat);
			spaced(d, sp, sizeof(sp));
			both(sp, chat);
			/* every member repeated with another value first: the last stands */
			if (d[0] == '{' && d[1] == '"') {
				snprintf(dup, sizeof(dup), "{\"choices\":[{\"text\":\"x\",\"delta\":{\"content\":\"y\"}}],\"id\":7,%s", d + 1);
				both(dup, chat);
			}
		}
		fclose(f);
	}
	globfree(&g);
	/* the transcripts hold the real shapes: the scanner reads all but errors */
	assert_true(n_chunks >= 20);
	assert_true(n_scanned + 3 >= n_chunks);
}

static void test_declined(void **state)
{
	static const char *const c[] = {
		"{\"error\":{\"message\":\"boom\"}}",
		"{\"error\":\"plain\"}",
		"{\"ch\\u006fices\":[{\"text\":\"k\"}]}",
		"{\"choices\":[{\"text\":\"a\"}],\"usage\":{\"completion_tokens\":1.5}}",
		"{\"choices\":[{\"text\":\"a\",\"token_ids\":[1,\"x\"]}]}",
		"{\"choices\":[{\"text\":\"a\"}],\"n\":01}",
		"{\"choices\":[{\"text\":\"a\"}]}x",
		"[1]",
		"",
		"{\"a\":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]}",
	};
	struct chunk_fields f;
	char m[200];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(*c); i++) {
		assert_int_equal(both(c[i], true), 0);
		assert_int_equal(both(c[i], false), 0);
	}
	assert_int_equal(chunk_read(scan, true, c[0], strlen(c[0]), &f, m, sizeof(m)), CHUNK_SERVER);
	assert_string_equal(m, "boom");
	assert_int_equal(chunk_read(scan, true, c[7], strlen(c[7]), &f, m, sizeof(m)), CHUNK_BAD);
	assert_string_equal(m, "chunk is a json array, not an object");
	chunk_error_message(scan, "{\"error\":{\"code\":500,\"message\":\"context too long\"}}", m, sizeof(m));
	assert_string_equal(m, "context too long");
	chunk_error_message(scan, "not json at all", m, sizeof(m));
	assert_string_equal(m, "not json at all");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures),
		cmocka_unit_test(test_declined),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
