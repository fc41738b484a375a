/* test_caprec.c - capture record formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "caprec.h"

static struct caprec_head head(long pid, long tid, int fd)
{
	struct caprec_head h;

	h.t.tv_sec = 1764448862;
	h.t.tv_nsec = 500000000;
	h.mono.tv_sec = 12;
	h.mono.tv_nsec = 1000;
	h.pid = pid;
	h.tid = tid;
	h.fd = fd;
	return h;
}

static const char *z(char *buf, size_t len)
{
	assert_true(len > 0);
	assert_int_equal(buf[len - 1], '\n');
	buf[len - 1] = '\0';
	return buf;
}

static void test_records(void **state)
{
	char buf[512];
	struct caprec_head h = head(42, 43, 2), r = head(0, 0, -1);
	size_t n;

	(void)state;
	n = caprec_audit(buf, sizeof(buf), &h, " {\"ev\":\"merge\"}\r ", 17);
	assert_string_equal(z(buf, n), "{\"src\":\"audit\",\"t\":1764448862.500000,\"mono\":12.000001,"
			    "\"pid\":42,\"tid\":43,\"fd\":2,\"event\":{\"ev\":\"merge\"}}");
	n = caprec_banner(buf, sizeof(buf), &h, "arm:batch", "x \"q\"\r", 6);
	assert_string_equal(z(buf, n), "{\"src\":\"banner\",\"t\":1764448862.500000,\"mono\":12.000001,"
			    "\"pid\":42,\"tid\":43,\"fd\":2,\"rule\":\"arm:batch\",\"text\":\"x \\\"q\\\"\"}");
	/* the host-side reader has no pid, tid or fd */
	n = caprec_line(buf, sizeof(buf), &r, "plain", 5);
	assert_string_equal(z(buf, n), "{\"src\":\"line\",\"t\":1764448862.500000,\"mono\":12.000001,"
			    "\"text\":\"plain\"}");
	n = caprec_lost(buf, sizeof(buf), &h, 3, "capture file write failed");
	assert_string_equal(z(buf, n), "{\"src\":\"lost\",\"t\":1764448862.500000,\"pid\":42,"
			    "\"count\":3,\"reason\":\"capture file write failed\"}");
	n = caprec_end(buf, sizeof(buf), &h, 10, 3);
	assert_string_equal(z(buf, n), "{\"src\":\"end\",\"t\":1764448862.500000,\"pid\":42,"
			    "\"lines\":10,\"lost\":3}");
}

static void test_cut(void **state)
{
	char buf[160], text[400];
	struct caprec_head h = head(1, 1, 1);
	size_t n;

	(void)state;
	memset(text, 'a', sizeof(text));
	n = caprec_banner(buf, sizeof(buf), &h, "r", text, sizeof(text));
	assert_true(n > 0 && n <= sizeof(buf));
	assert_non_null(strstr(z(buf, n), "\",\"cut\":true}"));
	/* an audit object never is cut: it fits or the record is refused */
	assert_int_equal(caprec_audit(buf, 40, &h, "{\"ev\":\"merge\"}", 14), 0);
}

static void test_start(void **state)
{
	char *argv[] = { (char *)"vllm", (char *)"serve", (char *)"m\"x", NULL };
	char *envp[] = { (char *)"PATH=/bin", (char *)"TT_METAL_HOME=/opt/tt", (char *)"VLLM_API_KEY=s3cret",
			 (char *)"QWEN36_MERGE_BATCH_GUARD=1", NULL };
	struct envlist el;
	char tail[512], buf[1024];
	struct caprec_head h = head(7, 0, -1);
	size_t tn, n;

	(void)state;
	envlist_init(&el);
	envlist_add(&el, ENVLIST_DEFAULT, NULL);
	tn = caprec_start_tail(tail, sizeof(tail), argv, 3, "/usr/bin/python3", "host1", envp, &el);
	assert_true(tn > 0);
	n = caprec_start(buf, sizeof(buf), &h, 6, tail, tn);
	assert_string_equal(z(buf, n),
		"{\"src\":\"start\",\"t\":1764448862.500000,\"mono\":12.000001,\"pid\":7,\"ppid\":6,"
		"\"argv\":[\"vllm\",\"serve\",\"m\\\"x\"],\"exe\":\"/usr/bin/python3\",\"host\":\"host1\","
		"\"env\":{\"TT_METAL_HOME\":\"/opt/tt\",\"QWEN36_MERGE_BATCH_GUARD\":\"1\"},"
		"\"env_redacted\":[\"VLLM_API_KEY\"]}");
	assert_null(strstr(buf, "s3cret"));
	/* too small for every entry: entries are dropped whole and the record says so */
	tn = caprec_start_tail(tail, 200, argv, 3, "/usr/bin/python3", "host1", envp, &el);
	assert_true(tn > 0 && tn <= 200);
	tail[tn] = '\0';
	assert_non_null(strstr(tail, "\"env_cut\":true}"));
	assert_int_equal(caprec_start_tail(tail, 40, argv, 3, "/usr/bin/python3", "host1", envp, &el), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_start),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
