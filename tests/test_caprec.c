/* test_caprec.c - capture record formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "capture/banner.h"
#include "capture/caprec.h"

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
	h.partial = 0;
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
			    "\"fd\":2,\"count\":3,\"reason\":\"capture file write failed\"}");
	h.fd = -1;
	n = caprec_lost(buf, sizeof(buf), &h, 3, "x");
	assert_string_equal(z(buf, n), "{\"src\":\"lost\",\"t\":1764448862.500000,\"pid\":42,"
			    "\"count\":3,\"reason\":\"x\"}");
	h.fd = 2;
	{
		struct caprec_end e = { "exit", 3, 0, "shim", 1, 10, 3 };
		n = caprec_end(buf, sizeof(buf), &h, &e);
		assert_string_equal(z(buf, n), "{\"src\":\"end\",\"t\":1764448862.500000,\"pid\":42,"
				    "\"how\":\"exit\",\"code\":3,\"by\":\"shim\",\"lines\":10,\"lost\":3}");
		e = (struct caprec_end){ "signal", -1, 9, "capture", 0, 0, 0 };
		n = caprec_end(buf, sizeof(buf), &h, &e);
		assert_string_equal(z(buf, n), "{\"src\":\"end\",\"t\":1764448862.500000,\"pid\":42,"
				    "\"how\":\"signal\",\"signal\":9,\"by\":\"capture\"}");
		e = (struct caprec_end){ "exec", -1, 0, "shim", 1, 0, 0 };
		n = caprec_end(buf, sizeof(buf), &h, &e);
		assert_string_equal(z(buf, n), "{\"src\":\"end\",\"t\":1764448862.500000,\"pid\":42,"
				    "\"how\":\"exec\",\"by\":\"shim\",\"lines\":0,\"lost\":0}");
	}
}

/* uncertain records, partial lines and bytes that are not UTF-8 (interfaces.md C) */
static void test_truth_marks(void **state)
{
	char buf[512], rec[256];
	struct caprec_head h = head(42, 43, 1);
	size_t n, rn;

	(void)state;
	h.partial = 1;
	rn = caprec_audit(rec, sizeof(rec), &h, "{\"ev\":\"merge\",\"r\":\"a\xff\"}", 23);
	assert_string_equal(z(rec, rn), "{\"src\":\"audit\",\"t\":1764448862.500000,\"mono\":12.000001,"
			    "\"pid\":42,\"tid\":43,\"fd\":1,\"event\":{\"ev\":\"merge\",\"r\":\"a\\udcff\"},"
			    "\"partial\":true,\"invalid_utf8\":1}");
	h.partial = 0;
	n = caprec_uncertain(buf, sizeof(buf), &h, 1, "in flight", rec, rn - 1);
	assert_string_equal(z(buf, n), "{\"src\":\"uncertain\",\"t\":1764448862.500000,\"mono\":12.000001,"
			    "\"pid\":42,\"fd\":1,\"reason\":\"in flight\",\"count\":1,\"record\":"
			    "{\"src\":\"audit\",\"t\":1764448862.500000,\"mono\":12.000001,\"pid\":42,\"tid\":43,"
			    "\"fd\":1,\"event\":{\"ev\":\"merge\",\"r\":\"a\\udcff\"},\"partial\":true,\"invalid_utf8\":1}}");
	h.fd = -1;
	n = caprec_uncertain(buf, sizeof(buf), &h, 4, "r", NULL, 0);
	assert_string_equal(z(buf, n), "{\"src\":\"uncertain\",\"t\":1764448862.500000,\"mono\":12.000001,"
			    "\"pid\":42,\"reason\":\"r\",\"count\":4}");
	h.fd = 2;
	h.partial = 1;
	n = caprec_banner(buf, sizeof(buf), &h, "arm:batch", "x\xc3\x28", 3);
	assert_string_equal(z(buf, n), "{\"src\":\"banner\",\"t\":1764448862.500000,\"mono\":12.000001,"
			    "\"pid\":42,\"tid\":43,\"fd\":2,\"rule\":\"arm:batch\",\"text\":\"x\\udcc3(\","
			    "\"partial\":true,\"invalid_utf8\":1}");
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
		"\"env_redacted\":[\"VLLM_API_KEY\"],\"argv_redacted\":[]}");
	assert_null(strstr(buf, "s3cret"));
	/* too small for every entry: entries are dropped whole and the record says so */
	tn = caprec_start_tail(tail, 200, argv, 3, "/usr/bin/python3", "host1", envp, &el);
	assert_true(tn > 0 && tn <= 200);
	tail[tn] = '\0';
	assert_non_null(strstr(tail, "\"env_cut\":true}"));
	assert_int_equal(caprec_start_tail(tail, 40, argv, 3, "/usr/bin/python3", "host1", envp, &el), 0);
}

/* Secrets in argv and env never leave the process; what was redacted is named. */
static void test_redact(void **state)
{
	char *argv[] = {
		(char *)"vllm", (char *)"serve", (char *)"M", (char *)"--api-key", (char *)"sk-live-1",
		(char *)"--hf-token=hf_2", (char *)"--tokenizer", (char *)"tok", (char *)"--db",
		(char *)"postgres://u:pw3@h/db", (char *)"--sentry=https://key4@o1.sentry.io/5",
		(char *)"https://u:pw6@x/y", (char *)"--password", (char *)"--port", (char *)"8000", NULL,
	};
	char *envp[] = {
		(char *)"PATH=/bin", (char *)"MY_PASS=s7", (char *)"PGPASS=s8",
		(char *)"DATABASE_URL=postgres://app:s9@db/x", (char *)"GITHUB_PAT=s10",
		(char *)"SENTRY_DSN=https://s11@o1.ingest.sentry.io/1", (char *)"TT_METAL_HOME=/opt/tt", NULL,
	};
	static const char *const secrets[] = {
		"sk-live-1", "hf_2", "pw3", "key4", "pw6", "s7", "s8", "s9", "s10", "s11",
	};
	struct envlist el;
	char tail[2048];
	size_t tn, i;

	(void)state;
	envlist_init(&el);
	envlist_add(&el, "*", NULL);
	tn = caprec_start_tail(tail, sizeof(tail), argv, 15, "/usr/bin/python3", "h", envp, &el);
	assert_true(tn > 0);
	tail[tn] = '\0';
	for (i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
		if (strstr(tail, secrets[i]))
			fail_msg("'%s' is in %s", secrets[i], tail);
	assert_non_null(strstr(tail, "\"argv\":[\"vllm\",\"serve\",\"M\",\"--api-key\",\"<redacted>\","
				      "\"--hf-token=<redacted>\",\"--tokenizer\",\"tok\",\"--db\","
				      "\"postgres://<redacted>@h/db\",\"--sentry=https://<redacted>@o1.sentry.io/5\","
				      "\"https://<redacted>@x/y\",\"--password\",\"--port\",\"8000\"]"));
	assert_non_null(strstr(tail, "\"env\":{\"PATH\":\"/bin\",\"TT_METAL_HOME\":\"/opt/tt\"}"));
	assert_non_null(strstr(tail, "\"env_redacted\":[\"MY_PASS\",\"PGPASS\",\"DATABASE_URL\","
				      "\"GITHUB_PAT\",\"SENTRY_DSN\"]"));
	assert_non_null(strstr(tail, "\"argv_redacted\":[\"--api-key\",\"--hf-token\",\"--db\","
				      "\"--sentry\",\"argv[11]\"]"));
}

/* How the capture was made, in the start record: the rules by name, cut whole when they do not fit. */
/* A member, not a record: no newline at its end. */
static const char *zm(char *buf, size_t len)
{
	buf[len] = '\0';
	return buf;
}

static void test_mode(void **state)
{
	struct banner_set *set = NULL;
	char buf[256], tail[64] = "\"argv\":[],\"host\":\"h\"}";
	size_t n, tn = strlen(tail);

	(void)state;
	assert_int_equal(banner_set_parse("a:one x\nb:two y\n", 16, "t", &set, NULL), 0);
	n = caprec_mode(buf, sizeof(buf), 0, set, NULL);
	assert_string_equal(zm(buf, n),
		"\"capture\":{\"all_lines\":false,\"rules_from\":\"built-in\",\"rules\":[\"a:one\",\"b:two\"]}");
	n = caprec_mode(buf, sizeof(buf), 1, NULL, NULL);
	assert_string_equal(zm(buf, n), "\"capture\":{\"all_lines\":true}");
	/* room for the first name only */
	n = caprec_mode(buf, 90, 0, set, "/r");
	assert_true(n > 0 && n <= 90);
	assert_string_equal(zm(buf, n),
		"\"capture\":{\"all_lines\":false,\"rules_from\":\"/r\",\"rules\":[\"a:one\"],\"rules_cut\":true}");
	n = caprec_mode(buf, sizeof(buf), 1, NULL, NULL);
	tn = caprec_tail_add(tail, tn, sizeof(tail), buf, n);
	assert_string_equal(zm(tail, tn), "\"argv\":[],\"host\":\"h\",\"capture\":{\"all_lines\":true}}");
	/* no room: the tail stays as it was */
	assert_int_equal(caprec_tail_add(tail, tn, tn + 4, buf, n), tn);
	banner_set_free(set);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_truth_marks),
		cmocka_unit_test(test_redact),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_start),
		cmocka_unit_test(test_mode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
