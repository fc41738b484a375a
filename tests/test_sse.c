/* test_sse.c - the incremental event-stream parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "bench/sse.h"

struct got {
	char ev[16][128];
	size_t n;
	int stop_at;   /* stop when this many events were seen (0: never) */
};

static int on_event(void *ctx, const char *data, size_t len)
{
	struct got *g = ctx;

	assert_int_equal(strlen(data), len);
	if (g->n < 16)
		snprintf(g->ev[g->n], sizeof(g->ev[0]), "%s", data);
	g->n++;
	return g->stop_at && (int)g->n >= g->stop_at;
}

static void feed_all(struct sse *p, const char *s, size_t step)
{
	size_t n = strlen(s), i;

	for (i = 0; i < n; i += step)
		assert_int_equal(sse_feed(p, s + i, n - i < step ? n - i : step, NULL), STATUS_OK);
}

static const char stream[] =
	": comment\r\n"
	"data: {\"a\":1}\r\n\r\n"
	"event: x\n"
	"id: 7\n"
	"data:{\"b\":2}\n\n"
	"data: one\n"
	"data:  two\n\n"
	"retry: 10\n\n"
	"data\n\n"
	"data: [DONE]\r\r";

/* Every split of the stream into pieces gives the same events. */
static void test_pieces(void **state)
{
	size_t step;

	(void)state;
	for (step = 1; step <= sizeof(stream); step++) {
		struct got g = { .n = 0 };
		struct sse *p = sse_new(0, on_event, &g);

		assert_non_null(p);
		feed_all(p, stream, step);
		assert_int_equal(g.n, 5);
		assert_string_equal(g.ev[0], "{\"a\":1}");
		assert_string_equal(g.ev[1], "{\"b\":2}");
		assert_string_equal(g.ev[2], "one\n two");
		assert_string_equal(g.ev[3], "");
		assert_string_equal(g.ev[4], "[DONE]");
		assert_int_equal(sse_events(p), 5);
		assert_int_equal(sse_pending(p), 0);
		sse_free(p);
	}
}

/* A stream cut inside an event leaves it pending, never dispatched. */
static void test_cut(void **state)
{
	struct got g = { .n = 0 };
	struct sse *p = sse_new(0, on_event, &g);

	(void)state;
	feed_all(p, "data: a\n\ndata: b\n", 3);
	assert_int_equal(g.n, 1);
	assert_int_equal(sse_pending(p), 1);
	sse_reset(p);
	assert_int_equal(sse_pending(p), 0);
	feed_all(p, "data: c\n\n", 1);
	assert_int_equal(g.n, 2);
	assert_string_equal(g.ev[1], "c");
	sse_free(p);
}

/* Lines and events past the cap fail with STATUS_LIMIT and stay failed. */
static void test_limit(void **state)
{
	struct got g = { .n = 0 };
	struct status_info si;
	struct sse *p = sse_new(16, on_event, &g);
	char big[64];

	(void)state;
	memset(big, 'x', sizeof(big));
	/* a long unterminated line, carried over */
	assert_int_equal(sse_feed(p, "data: ", 6, NULL), STATUS_OK);
	assert_int_equal(sse_feed(p, big, sizeof(big), &si), STATUS_LIMIT);
	assert_non_null(strstr(si.msg, "longer than 16"));
	assert_int_equal(sse_feed(p, "\n\n", 2, NULL), STATUS_LIMIT);
	sse_reset(p);
	/* a long line within one feed */
	assert_int_equal(sse_feed(p, "data: 0123456789abcdef\n", 23, NULL), STATUS_LIMIT);
	sse_reset(p);
	/* short lines whose joined data exceeds the cap */
	assert_int_equal(sse_feed(p, "data: 0123456789\ndata: 0123456789\n", 34, &si), STATUS_LIMIT);
	assert_non_null(strstr(si.msg, "event data"));
	sse_reset(p);
	feed_all(p, "data: ok\n\n", 4);
	assert_int_equal(g.n, 1);
	sse_free(p);
}

/* llama-server's failed stream: an `error:` field, then data: [DONE]; and
 * an `event: error`. Both reach the callback with their type and field. */
struct got_err {
	int n;
	char type[16][64];
	char err[16][128];
};

static struct sse *err_p;

static int on_err_event(void *ctx, const char *data, size_t len)
{
	struct got_err *g = ctx;
	const char *e = sse_event_error(err_p, NULL);

	(void)data;
	(void)len;
	if (g->n < 16) {
		snprintf(g->type[g->n], sizeof(g->type[0]), "%s", sse_event_type(err_p));
		snprintf(g->err[g->n], sizeof(g->err[0]), "%s", e ? e : "-");
	}
	g->n++;
	return 0;
}

static void test_error_field(void **state)
{
	static const char s[] = "data: {\"a\":1}\n\n"
				"error: {\"code\":500,\"message\":\"boom\"}\n\n"
				"data: [DONE]\n\n"
				"event: error\ndata: {\"message\":\"x\"}\n\n"
				"event: ping\n\n"
				"data: after\n\n";
	struct got_err g;
	size_t step;

	(void)state;
	for (step = 1; step < sizeof(s); step++) {
		memset(&g, 0, sizeof(g));
		err_p = sse_new(0, on_err_event, &g);
		assert_non_null(err_p);
		feed_all(err_p, s, step);
		assert_int_equal(g.n, 5);
		assert_string_equal(g.err[0], "-");
		assert_string_equal(g.err[1], "{\"code\":500,\"message\":\"boom\"}");
		assert_string_equal(g.type[1], "");
		assert_string_equal(g.err[2], "-");
		assert_string_equal(g.type[3], "error");
		/* a type without data is not dispatched and does not carry over */
		assert_string_equal(g.type[4], "");
		sse_free(err_p);
	}
}

static void test_stop(void **state)
{
	struct got g = { .n = 0, .stop_at = 1 };
	struct sse *p = sse_new(0, on_event, &g);

	(void)state;
	assert_int_equal(sse_feed(p, "data: a\n\ndata: b\n\n", 18, NULL), STATUS_USAGE);
	assert_int_equal(g.n, 1);
	sse_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_stop),
		cmocka_unit_test(test_error_field),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
