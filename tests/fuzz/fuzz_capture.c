/*
 * fuzz_capture.c - libFuzzer target for the shim's line path: reassembly in
 * pieces (small buffer, so overlong lines happen), classification with the
 * built-in banner rules, and every record kind. Each record must be one
 * line holding exactly one JSON object, whatever bytes the line had. The
 * quick object reading of classify_object() must agree with jdoc_check()
 * whenever it answers, on each line and on the whole input.
 *
 * build: clang -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -std=c11 \
 *   -Ianalyzer -Icapture tests/fuzz/fuzz_capture.c capture/{linebuf,classify,banner,envlist,caprec,jbuf}.c \
 *   base/jdoc.c base/status.c -lpcre2-8
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "caprec.h"
#include "classify.h"
#include "jdoc.h"
#include "linebuf.h"

static struct banner_set *rules;
static struct banner_scratch sc;
static char out[4 * 256 + 512];
static char wrap[4096 + 8];

static void check(size_t n)
{
	struct jdoc_check chk;

	if (!n)
		return;           /* did not fit: allowed, the shim counts it lost */
	if (out[n - 1] != '\n' || memchr(out, '\n', n - 1) || jdoc_check(out, n - 1, &chk) != 0)
		abort();
}

static void quick(const char *s, size_t n)
{
	struct jdoc_check chk;
	int ev = -1;

	if (classify_object(s, n, &ev) == 1 && (jdoc_check(s, n, &chk) != 0 || chk.has_ev != ev))
		abort();
}

static void on_line(void *ctx, const char *line, size_t n, int overlong)
{
	struct classify_result res;
	struct caprec_head h = { { 1, 2 }, { 3, 4 }, 5, 6, 1 };
	const char *brace = memchr(line, '{', n);

	(void)ctx;
	if (n > 256 || (overlong && n != 256))
		abort();
	quick(line, n);
	if (brace)
		quick(brace, n - (size_t)(brace - line));
	classify_line(line, n, rules, &sc, &res);
	if (res.kind == CLASSIFY_AUDIT)
		check(caprec_audit(out, sizeof(out), &h, res.obj, res.obj_len));
	check(caprec_banner(out, sizeof(out), &h, "r", line, n));
	check(caprec_line(out, 300, &h, line, n));   /* small: text gets cut */
	check(caprec_lost(out, sizeof(out), &h, n, "x"));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char mem[256];
	struct linebuf lb;
	size_t i, step;

	if (!rules) {
		rules = banner_set_default();
		banner_scratch_init(&sc);
	}
	if (!size)
		return 0;
	quick((const char *)data + 1, size - 1);
	/* the same text one level down, where an "ev" no longer counts */
	if (size - 1 <= sizeof(wrap) - 8) {
		memcpy(wrap, "{\"w\":[", 6);
		memcpy(wrap + 6, data + 1, size - 1);
		memcpy(wrap + 6 + size - 1, "]}", 2);
		quick(wrap, size - 1 + 8);
	}
	step = (size_t)data[0] % 17 + 1;
	linebuf_init(&lb, mem, sizeof(mem));
	for (i = 1; i < size; i += step)
		linebuf_feed(&lb, (const char *)data + i, size - i < step ? size - i : step, on_line, NULL);
	linebuf_flush(&lb, on_line, NULL);
	return 0;
}
