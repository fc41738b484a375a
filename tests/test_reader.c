/*
 * test_reader.c - the streaming reader: plain, capture and mixed input, gzip,
 * stdin, the line cap, malformed lines, and allocation failures.
 *
 * Linked with -Wl,--wrap for the allocation functions (tests/module.mk): the
 * __wrap_* functions below count live allocations and fail the Nth one.
 */
#include <dirent.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <cmocka.h>

#include "analyzer/reader.h"
#include "tests/testutil.h"

/* --- allocation failure injection ------------------------------------------ */

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void __real_free(void *p);
int __real_inflateInit2_(z_streamp strm, int bits, const char *version, int size);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
void __wrap_free(void *p);
int __wrap_inflateInit2_(z_streamp strm, int bits, const char *version, int size);

static long fail_countdown;   /* > 0: the allocation this many calls from now fails */
static long n_failed;         /* failures injected */
static long live;             /* allocations made through the wrappers, not yet freed */

static int fail_now(void)
{
	if (fail_countdown > 0 && --fail_countdown == 0) {
		n_failed++;
		return 1;
	}
	return 0;
}

void *__wrap_malloc(size_t n)
{
	void *p;

	if (fail_now())
		return NULL;
	p = __real_malloc(n);
	live += p != NULL;
	return p;
}

void *__wrap_calloc(size_t k, size_t n)
{
	void *p;

	if (fail_now())
		return NULL;
	p = __real_calloc(k, n);
	live += p != NULL;
	return p;
}

void *__wrap_realloc(void *old, size_t n)
{
	void *p;

	if (fail_now())
		return NULL;
	p = __real_realloc(old, n);
	live += p != NULL && old == NULL;
	return p;
}

char *__wrap_strdup(const char *s)
{
	char *p;

	if (fail_now())
		return NULL;
	p = __real_strdup(s);
	live += p != NULL;
	return p;
}

void __wrap_free(void *p)
{
	live -= p != NULL;
	__real_free(p);
}

/* zlib allocates inside itself; its failure shows as inflateInit2 saying so. */
int __wrap_inflateInit2_(z_streamp strm, int bits, const char *version, int size)
{
	if (fail_now())
		return Z_MEM_ERROR;
	return __real_inflateInit2_(strm, bits, version, size);
}

/* --- helpers --------------------------------------------------------------- */


static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;   /* the directory's own descriptor */
}

static int setup(void **state)
{
	(void)state;
	return testutil_setup("test_reader");
}

static int teardown(void **state)
{
	(void)state;
	return testutil_teardown();
}

#define WRITE(name, text) testutil_write(name, text, sizeof(text) - 1)

static struct audit_reader *open_ok(const char *path, size_t max_line)
{
	struct audit_reader_opts o = { .max_line = max_line };
	struct audit_reader *r = NULL;
	struct status_info si;

	status_info_clear(&si);
	if (audit_reader_open(&r, path, &o, &si))
		fail_msg("open %s: %s", path, si.msg);
	return r;
}

/*
 * Reads everything; a compact trace of what came out, one token per item:
 * "E<line><kind>" for an event (kind: m, c, x context, o other), "R<line>:<src>"
 * for other capture records, "!<line>" for a malformed line (message kept in
 * msgs), "L<line>" for one over the cap.
 */
static char msgs[8][600];

static const char *read_all(struct audit_reader *r)
{
	static char trace[2048];
	struct audit_item it;
	struct status_info si;
	enum status st;
	size_t n = 0, k = 0;

	trace[0] = '\0';
	memset(msgs, 0, sizeof(msgs));
	for (;;) {
		status_info_clear(&si);
		st = audit_reader_next(r, &it, &si);
		if (st == STATUS_EOF)
			break;
		if (st == STATUS_PARSE || st == STATUS_LIMIT) {
			char buf[600];
			n += (size_t)snprintf(trace + n, sizeof(trace) - n, "%s%c%ld", n ? " " : "",
					      st == STATUS_LIMIT ? 'L' : '!', si.line);
			if (k < 8)
				snprintf(msgs[k++], sizeof(msgs[0]), "%s",
					 status_info_format(&si, buf, sizeof(buf)));
			continue;
		}
		if (st)
			fail_msg("reader stopped: %s", si.msg);
		if (it.has_event) {
			static const char kinds[] = "mcxo";
			n += (size_t)snprintf(trace + n, sizeof(trace) - n, "%sE%ld%c", n ? " " : "",
					      it.line, kinds[it.event.kind]);
		} else {
			n += (size_t)snprintf(trace + n, sizeof(trace) - n, "%sR%ld:%s", n ? " " : "",
					      it.line, it.src ? it.src : "?");
		}
	}
	/* EOF is sticky */
	assert_int_equal(audit_reader_next(r, &it, &si), STATUS_EOF);
	return trace;
}

static const char *stats_str(const struct audit_reader *r)
{
	static char buf[256];
	const struct audit_reader_stats *s = audit_reader_stats(r);

	snprintf(buf, sizeof(buf), "lines %llu blank %llu events %llu other %llu malformed %llu "
		 "ignored %llu capture %llu lost %llu", (unsigned long long)s->lines,
		 (unsigned long long)s->blank, (unsigned long long)s->events,
		 (unsigned long long)s->other_events, (unsigned long long)s->malformed,
		 (unsigned long long)s->ignored, (unsigned long long)s->capture_records,
		 (unsigned long long)s->capture_lost);
	return buf;
}

/* --- tests ----------------------------------------------------------------- */

static const char plain[] =
	"{\"ev\":\"config\",\"slots\":2,\"max_model_len\":4096}\n"
	"\n"
	"   \t\r\n"
	"{\"ev\":\"merge\",\"step\":5,\"host_pos\":[1,2],\"dev_pos\":[2,9223372036854775808]}\n"
	"{\"ev\":\"merge\",\"step\":6,\"host_pos\":[1,2],\"dev_pos\":[2,2]}\r\n"
	"[1,2]\n"
	"{\"ev\":\"decode\",\"step\":7}\n"
	"{\"note\":\"neither an event nor a capture record\"}\n"
	"{\"ev\":\"heartbeat\"}\n"
	"{\"ev\":\"merge\",\"step\":8,\n"
	"not json\n"
	"{\"ev\":\"merge\",\"step\":9,\"host_pos\":[3],\"dev_pos\":[4]}";   /* no final newline */

static void test_plain(void **state)
{
	const char *path = WRITE("plain.jsonl", plain);
	struct audit_reader *r = open_ok(path, 0);
	struct audit_item it;
	struct status_info si;
	char want[600];

	(void)state;
	assert_string_equal(read_all(r), "E1c !4 E5m E7x E9o !10 E12m");
	assert_string_equal(stats_str(r),
			    "lines 12 blank 2 events 5 other 1 malformed 2 ignored 1 capture 0 lost 0");
	snprintf(want, sizeof(want), "%s:4: dev_pos[1] is outside int64", path);
	assert_string_equal(msgs[0], want);
	/* lines 6 ([1,2]) and 11 (not json) are `other`, not malformed */
	snprintf(want, sizeof(want), "%s:10: expected a member name at byte 24", path);
	assert_string_equal(msgs[1], want);
	assert_int_equal(audit_reader_stats(r)->other_lines, 2);
	audit_reader_free(r);

	/* the items themselves: line, doc, event fields */
	r = open_ok(path, 0);
	assert_int_equal(audit_reader_next(r, &it, &si), STATUS_OK);
	assert_string_equal(it.file, path);
	assert_int_equal(it.line, 1);
	assert_null(it.src);
	assert_true(it.has_event);
	assert_int_equal(it.event.kind, EVENT_CONFIG);
	assert_int_equal(it.event.u.config.max_model_len, 4096);
	assert_non_null(it.doc);
	assert_ptr_equal(it.record, jdoc_root(it.doc));
	assert_false(it.has_pid);
	assert_false(it.has_time);
	status_info_clear(&si);
	assert_int_equal(audit_reader_next(r, &it, &si), STATUS_PARSE);
	assert_int_equal(si.line, 4);
	assert_int_equal(si.byte, 54);
	assert_string_equal(si.file, path);
	assert_int_equal(audit_reader_next(r, &it, &si), STATUS_OK);
	assert_int_equal(it.line, 5);
	assert_int_equal(it.event.u.merge.step, 6);
	assert_int_equal(it.event.u.merge.dev_pos[1], 2);
	audit_reader_free(r);
}

static const char capture[] =
	"{\"src\":\"start\",\"t\":1790000000.5,\"pid\":4242,\"ppid\":1,\"argv\":[\"vllm\"],"
	"\"exe\":\"/usr/bin/python3\",\"env\":{},\"host\":\"h\"}\n"
	"{\"src\":\"banner\",\"t\":1790000001.25,\"mono\":101.25,\"pid\":4242,\"tid\":4243,\"fd\":2,"
	"\"rule\":\"guard_engaged\",\"text\":\"QWEN36_MERGE_BATCH_GUARD engaged\"}\n"
	"{\"src\":\"audit\",\"t\":1790000010,\"mono\":110.5,\"pid\":4242,\"tid\":4250,\"fd\":2,"
	"\"event\":{\"ev\":\"merge\",\"step\":3,\"host_pos\":[1],\"dev_pos\":[2]}}\n"
	"{\"src\":\"lost\",\"count\":3,\"reason\":\"line over the shim's buffer\"}\n"
	"{\"src\":\"audit\",\"pid\":1,\"event\":\"merge\"}\n"
	"{\"src\":\"lost\",\"count\":4,\"reason\":\"pipe full\"}\n"
	"{\"src\":\"lost\",\"reason\":\"no count\"}\n"
	"{\"src\":7}\n"
	"{\"src\":\"audit\",\"event\":{\"ev\":\"merge\",\"step\":3,\"host_pos\":[1]}}\n"
	"{\"src\":\"audit\",\"event\":{\"ev\":\"later-kind\"}}\n"
	"{\"src\":\"line\",\"t\":1.0,\"mono\":2.0,\"pid\":9,\"tid\":9,\"fd\":1,\"text\":\"hello\"}\n"
	"{\"ev\":\"merge\",\"step\":4,\"host_pos\":[1],\"dev_pos\":[1]}\n"
	"{\"src\":\"lost\",\"count\":-2}\n"
	"{\"src\":\"end\",\"t\":1790000020.0,\"pid\":4242,\"lines\":5,\"lost\":3}\n";

static void test_capture_and_mixed(void **state)
{
	const char *path = WRITE("capture.jsonl", capture);
	struct audit_reader *r = open_ok(path, 0);
	struct audit_item it;
	struct status_info si;
	char want[600];

	(void)state;
	assert_string_equal(read_all(r), "R1:start R2:banner E3m R4:lost !5 R6:lost !7 !8 !9 E10o "
					  "R11:line E12m !13 R14:end");
	/* the lost records' counts are summed; the end record's "lost" is not added again */
	assert_string_equal(stats_str(r),
			    "lines 14 blank 0 events 3 other 1 malformed 5 ignored 0 capture 13 lost 7");
	snprintf(want, sizeof(want), "%s:5: audit record's event is not an object (string)", path);
	assert_string_equal(msgs[0], want);
	snprintf(want, sizeof(want), "%s:7: lost record has no count", path);
	assert_string_equal(msgs[1], want);
	snprintf(want, sizeof(want), "%s:8: src is not a string (integer)", path);
	assert_string_equal(msgs[2], want);
	snprintf(want, sizeof(want), "%s:9: dev_pos missing", path);
	assert_string_equal(msgs[3], want);
	audit_reader_free(r);

	/* capture metadata on an audit record */
	r = open_ok(path, 0);
	assert_int_equal(audit_reader_next(r, &it, &si), STATUS_OK);
	assert_string_equal(it.src, "start");
	assert_true(it.has_pid);
	assert_int_equal(it.pid, 4242);
	assert_true(it.has_time);
	assert_true(it.t == 1790000000.5);
	assert_int_equal(audit_reader_next(r, &it, &si), STATUS_OK);
	assert_string_equal(it.src, "banner");
	assert_false(it.has_event);
	assert_int_equal(it.tid, 4243);
	assert_true(it.mono == 101.25);
	assert_int_equal(audit_reader_next(r, &it, &si), STATUS_OK);
	assert_string_equal(it.src, "audit");
	assert_true(it.has_event);
	assert_int_equal(it.event.kind, EVENT_MERGE);
	assert_int_equal(it.event.u.merge.step, 3);
	assert_int_equal(it.event.u.merge.dev_pos[0], 2);
	assert_int_equal(it.pid, 4242);
	assert_int_equal(it.tid, 4250);
	assert_true(it.t == 1790000010.0);
	assert_true(it.mono == 110.5);
	audit_reader_free(r);
}

/* An event may carry any unknown key, "src" among them: it stays an event. */
static void test_event_with_src_key(void **state)
{
	const char *path = WRITE("evsrc.jsonl",
		"{\"ev\":\"merge\",\"src\":\"generator.py:1915\",\"step\":4,\"host_pos\":[1],\"dev_pos\":[2]}\n"
		"{\"src\":\"banner\",\"rule\":\"r\",\"text\":\"t\"}\n");
	struct audit_reader *r = open_ok(path, 0);

	(void)state;
	assert_string_equal(read_all(r), "E1m R2:banner");
	assert_string_equal(stats_str(r),
			    "lines 2 blank 0 events 1 other 0 malformed 0 ignored 0 capture 1 lost 0");
	audit_reader_free(r);
}

/* A server log: audit lines after any prefix (the pid of vLLM's), other lines counted apart. */
static const char vllm_log[] =
	"(APIServer pid=11) INFO 11-29 20:41:00 [api_server.py:1] vLLM server version 0.11, serving model m\n"
	"(EngineCore_DP0 pid=12) INFO 11-29 20:41:02 [generator.py:1930] MERGE_AUDIT "
	"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2]}\n"
	"(EngineCore_DP0 pid=12) 2026-09-08 20:35:14.930 | INFO | model_config:591 - {'a': 1}\n"
	"MERGE_AUDIT {\"ev\":\"merge\",\"step\":2,\"host_pos\":[1],\"dev_pos\":[\"x\"]}\n"
	"{\"ev\":\"decode\",\"step\":3}\r\n";

/*
 * llama-server's start-up log as recorded: its chat template printed over
 * several lines, three beginning with "{{" or "{%": log lines (other), never
 * malformed audit lines; a line that starts as an object ('{' then '"') and
 * breaks is still malformed.
 */
static void test_log_braces(void **state)
{
	struct audit_reader *r;
	const struct audit_reader_stats *st;

	(void)state;
	r = open_ok("fixtures/llamacpp/startup-chat-template.log", 0);
	assert_string_equal(read_all(r), "");
	st = audit_reader_stats(r);
	assert_int_equal(st->lines, 19);
	assert_int_equal(st->other_lines, 19);
	assert_int_equal(st->malformed, 0);
	audit_reader_free(r);

	r = open_ok(WRITE("braces.log", "{'model': 'm'}\n{{ x }}\n{% if a %}\n{ \"ev\":\"merge\",\n{\n{}\n"
				"{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2]}\n"), 0);
	assert_string_equal(read_all(r), "!4 !5 E7m");
	st = audit_reader_stats(r);
	assert_int_equal(st->other_lines, 3);
	assert_int_equal(st->malformed, 2);
	audit_reader_free(r);
}

static void test_log_lines(void **state)
{
	struct audit_reader *r;
	struct audit_item it;
	struct status_info si;
	const struct audit_reader_stats *st;
	char what[512];
	const char *p, *e;
	long line = 0;

	(void)state;
	r = open_ok(WRITE("server.log", vllm_log), 0);
	assert_string_equal(read_all(r), "E2m !4 E5x");
	st = audit_reader_stats(r);
	assert_int_equal(st->other_lines, 2);
	assert_int_equal(st->vllm_lines, 2);
	assert_int_equal(st->log_audit_lines, 2);
	assert_int_equal(st->malformed, 1);
	assert_int_equal(audit_reader_describe(st, what, sizeof(what)), 0);
	audit_reader_free(r);

	/* the same lines fed one by one give the same items; the prefix names the pid */
	assert_int_equal(audit_reader_open_lines(&r, "fed", NULL, &si), STATUS_OK);
	for (p = vllm_log; *p; p = e + 1) {
		enum status rc;
		e = strchr(p, '\n');
		status_info_clear(&si);
		rc = audit_reader_line(r, p, (size_t)(e - p), &it, &si);
		line++;
		if (line == 2) {
			assert_int_equal(rc, STATUS_OK);
			assert_true(it.has_event && it.has_pid);
			assert_int_equal(it.pid, 12);
			assert_int_equal(it.line, 2);
		} else if (line == 4) {
			assert_int_equal(rc, STATUS_PARSE);
			assert_string_equal(si.file, "fed");
			assert_int_equal(si.line, 4);
		} else if (line == 5) {
			assert_int_equal(rc, STATUS_OK);
			assert_false(it.has_pid);
		} else {
			assert_int_equal(rc, STATUS_EOF);
		}
	}
	assert_int_equal(audit_reader_stats(r)->other_lines, 2);
	audit_reader_free(r);

	/* no audit event at all: what the file looked like, in words */
	r = open_ok(WRITE("noaudit.log", "(APIServer pid=11) INFO a\n(APIServer pid=11) INFO b\n"), 0);
	assert_string_equal(read_all(r), "");
	assert_int_equal(audit_reader_describe(audit_reader_stats(r), what, sizeof(what)), 1);
	assert_non_null(strstr(what, "a vLLM log (2 of 2 lines with a process prefix, line 1: "
				     "'(APIServer pid=11) INFO a') without audit lines"));
	audit_reader_free(r);
	r = open_ok(WRITE("empty.log", ""), 0);
	assert_string_equal(read_all(r), "");
	assert_int_equal(audit_reader_describe(audit_reader_stats(r), what, sizeof(what)), 1);
	assert_non_null(strstr(what, "the file is empty"));
	audit_reader_free(r);
	r = open_ok(WRITE("cap.jsonl", "{\"src\":\"start\",\"pid\":3}\n{\"src\":\"end\",\"pid\":3}\n"), 0);
	assert_string_equal(read_all(r), "R1:start R2:end");
	assert_int_equal(audit_reader_describe(audit_reader_stats(r), what, sizeof(what)), 1);
	assert_non_null(strstr(what, "a capture of 2 records without audit records"));
	audit_reader_free(r);
}

static void test_line_cap(void **state)
{
	size_t big = 200000, n;
	char *text = malloc(big + 400);
	const char *path;
	struct audit_reader *r;
	char want[600];

	(void)state;
	assert_non_null(text);
	/* line 1 exactly 64 bytes (accepted), line 2 65 bytes, line 3 far over, line 4 fine */
	n = (size_t)sprintf(text, "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1],\"x\":\"%s\"}\n",
			    "abcde");
	assert_int_equal(n, 65);
	n += (size_t)sprintf(text + n, "{\"ev\":\"merge\",\"step\":2,\"host_pos\":[1],\"dev_pos\":[1],\"x\":\"%s\"}\n",
			     "abcdef");
	text[n++] = '{';
	memset(text + n, ' ', big);
	n += big;
	n += (size_t)sprintf(text + n, "}\n{\"ev\":\"decode\",\"step\":4}\n");
	/* a last line over the cap with no newline */
	memset(text + n, 'x', 100);
	n += 100;
	path = testutil_write("long.jsonl", text, n);
	r = open_ok(path, 64);
	assert_string_equal(read_all(r), "E1m L2 L3 E4x L5");
	assert_string_equal(stats_str(r),
			    "lines 5 blank 0 events 2 other 0 malformed 3 ignored 0 capture 0 lost 0");
	snprintf(want, sizeof(want), "%s:2: line longer than 64 bytes", path);
	assert_string_equal(msgs[0], want);
	snprintf(want, sizeof(want), "%s:3: line longer than 64 bytes", path);
	assert_string_equal(msgs[1], want);
	audit_reader_free(r);

	/* with the default cap the long line is one (blank-padded) object, ignored */
	r = open_ok(path, 0);
	/* ... and the last line, not JSON, is `other` */
	assert_string_equal(read_all(r), "E1m E2m E4x");
	assert_string_equal(stats_str(r),
			    "lines 5 blank 0 events 3 other 0 malformed 0 ignored 1 capture 0 lost 0");
	assert_int_equal(audit_reader_stats(r)->other_lines, 1);
	audit_reader_free(r);
	free(text);
}

static void test_empty_and_blank(void **state)
{
	struct audit_reader *r;

	(void)state;
	r = open_ok(testutil_write("empty.jsonl", "", 0), 0);
	assert_string_equal(read_all(r), "");
	assert_string_equal(stats_str(r),
			    "lines 0 blank 0 events 0 other 0 malformed 0 ignored 0 capture 0 lost 0");
	audit_reader_free(r);
	r = open_ok(WRITE("blank.jsonl", "\n\n \n"), 0);
	assert_string_equal(read_all(r), "");
	assert_string_equal(stats_str(r),
			    "lines 3 blank 3 events 0 other 0 malformed 0 ignored 0 capture 0 lost 0");
	audit_reader_free(r);
	/* a NUL byte inside a line is malformed, not an end of line */
	r = open_ok(testutil_write("nul.jsonl", "{\"ev\":\"x\"}\0\n{\"ev\":\"y\"}\n", 23), 0);
	assert_string_equal(read_all(r), "!1 E2o");
	audit_reader_free(r);
}

static void test_gzip(void **state)
{
	char path[512];
	gzFile gz;
	struct audit_reader *r;
	int i;

	(void)state;
	snprintf(path, sizeof(path), "%s/plain.jsonl.gz", testutil_dir());
	gz = gzopen(path, "wb");
	assert_non_null(gz);
	assert_int_equal(gzwrite(gz, plain, sizeof(plain) - 1), (int)sizeof(plain) - 1);
	assert_int_equal(gzclose(gz), Z_OK);
	r = open_ok(path, 0);
	assert_string_equal(read_all(r), "E1c !4 E5m E7x E9o !10 E12m");
	assert_string_equal(stats_str(r),
			    "lines 12 blank 2 events 5 other 1 malformed 2 ignored 1 capture 0 lost 0");
	audit_reader_free(r);

	/* a large compressed file: many buffer refills, every line read */
	snprintf(path, sizeof(path), "%s/many.jsonl.gz", testutil_dir());
	gz = gzopen(path, "wb");
	assert_non_null(gz);
	for (i = 0; i < 20000; i++)
		gzprintf(gz, "{\"ev\":\"merge\",\"step\":%d,\"host_pos\":[%d,-1],\"dev_pos\":[%d,-1]}\n",
			 i, i, i + 1);
	assert_int_equal(gzclose(gz), Z_OK);
	r = open_ok(path, 0);
	{
		struct audit_item it;
		struct status_info si;
		long n = 0;
		while (audit_reader_next(r, &it, &si) == STATUS_OK) {
			assert_int_equal(it.event.u.merge.step, n);
			assert_int_equal(it.line, n + 1);
			n++;
		}
		assert_int_equal(n, 20000);
	}
	audit_reader_free(r);

	/* a truncated gzip stream: what was read counts, then an error or the end */
	{
		FILE *f = fopen(path, "rb");
		char *buf = malloc(1 << 20);
		size_t n;
		struct audit_item it;
		struct status_info si;
		enum status st;
		long got = 0;
		assert_non_null(f);
		assert_non_null(buf);
		n = fread(buf, 1, 1 << 20, f);
		fclose(f);
		r = open_ok(testutil_write("cut.jsonl.gz", buf, n / 2), 0);
		while ((st = audit_reader_next(r, &it, &si)) == STATUS_OK || st == STATUS_PARSE)
			got++;
		assert_true(got > 0 && got < 20000);
		/* a cut stream is never a quiet end: it is said, with the lines read before it */
		assert_int_equal(st, STATUS_IO);
		assert_true(audit_reader_stats(r)->truncated);
		{
			char want[128];
			snprintf(want, sizeof(want), "truncated gzip after %ld lines (", got);
			assert_non_null(strstr(si.msg, want));
		}
		assert_int_equal(audit_reader_next(r, &it, &si), STATUS_IO);   /* and it stays so */
		assert_int_equal((long)audit_reader_stats(r)->lines, got);
		audit_reader_free(r);
		free(buf);
	}
}

/* Reads a file to its end: the status that ended it, and the lines read. */
static enum status drain(const char *path, bool scan, long *lines, char *msg, size_t n)
{
	struct audit_reader_opts o = { .scan = scan };
	struct audit_reader *r = NULL;
	struct audit_item it;
	struct status_info si;
	enum status st;

	status_info_clear(&si);
	if ((st = audit_reader_open(&r, path, &o, &si)))
		return st;
	while ((st = audit_reader_next(r, &it, &si)) == STATUS_OK || st == STATUS_PARSE ||
	       st == STATUS_LIMIT)
		;
	*lines = (long)audit_reader_stats(r)->lines;
	snprintf(msg, n, "%s", si.msg);
	audit_reader_free(r);
	return st;
}

static size_t gz_of(const char *text, unsigned char *out, size_t cap)
{
	z_stream zs;
	size_t n;

	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (Bytef *)(uintptr_t)text;
	zs.avail_in = (uInt)strlen(text);
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	n = cap - zs.avail_out;
	deflateEnd(&zs);
	return n;
}

/* Members one after another; a cut or garbage anywhere after the first is said. */
static void test_gzip_members(void **state)
{
	static const char m1[] = "{\"ev\":\"decode\",\"step\":1}\n{\"ev\":\"decode\",\"step\":2}\n";
	static const char m2[] = "{\"ev\":\"decode\",\"step\":3}\n";
	unsigned char a[256], b[256], buf[1024];
	size_t na = gz_of(m1, a, sizeof(a)), nb = gz_of(m2, b, sizeof(b)), cut;
	char msg[600];
	long lines;
	int scan;

	(void)state;
	memcpy(buf, a, na);
	memcpy(buf + na, b, nb);
	for (scan = 0; scan < 2; scan++) {
		assert_int_equal(drain(testutil_write("two.gz", (char *)buf, na + nb), scan, &lines, msg,
				       sizeof(msg)), STATUS_EOF);
		assert_int_equal(lines, 3);
		/* cut inside the second member, at every length */
		for (cut = 1; cut < nb; cut++) {
			char want[64];
			assert_int_equal(drain(testutil_write("cut.gz", (char *)buf, na + cut), scan, &lines,
					       msg, sizeof(msg)), STATUS_IO);
			/* the third line counts once its bytes came out whole (a cut in the trailer) */
			assert_true(lines == 2 || (lines == 3 && cut > nb - 10));
			snprintf(want, sizeof(want), "truncated gzip after %ld lines (", lines);
			if (strncmp(msg, want, strlen(want)))
				fail_msg("cut at %zu: '%s'", cut, msg);
		}
		/* garbage after a whole member */
		memcpy(buf + na, "junk", 4);
		assert_int_equal(drain(testutil_write("junk.gz", (char *)buf, na + 4), scan, &lines, msg,
				       sizeof(msg)), STATUS_IO);
		assert_string_equal(msg, "truncated gzip after 2 lines (incorrect header check)");
		memcpy(buf + na, b, nb);
		/* a corrupt byte inside the first member */
		buf[na / 2] ^= 0x55;
		assert_int_equal(drain(testutil_write("bad.gz", (char *)buf, na + nb), scan, &lines, msg,
				       sizeof(msg)), STATUS_IO);
		assert_non_null(strstr(msg, "truncated gzip after"));
		buf[na / 2] ^= 0x55;
	}
}

/* stats.bytes counts the lines read, whatever the buffers (or the window) held beyond them. */
static void test_bytes_of_lines_read(void **state)
{
	static const size_t sizes[][3] = { { 0, 0, SIZE_MAX }, { 100, 7, SIZE_MAX }, { 0, 0, 0 } };
	char text[8192];
	size_t n = 0, want3 = 0, i;
	const char *path;
	int k;

	(void)state;
	for (k = 0; k < 100; k++) {
		n += (size_t)snprintf(text + n, sizeof(text) - n,
			"{\"ev\":\"merge\",\"step\":%d,\"host_pos\":[5],\"dev_pos\":[5]}\n", k);
		if (k == 2)
			want3 = n;
	}
	path = testutil_write("bytes.jsonl", text, n);
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct audit_reader_opts o = { .scan = true };
		struct audit_reader *r = NULL;
		struct audit_item it;
		struct status_info si;
		audit_reader_buffer_sizes(sizes[i][0], sizes[i][1]);
		audit_reader_map_sizes(sizes[i][2], 0);    /* the last one: read in place */
		assert_int_equal(audit_reader_open(&r, path, &o, &si), STATUS_OK);
		for (k = 0; k < 3; k++)
			assert_int_equal(audit_reader_next(r, &it, &si), STATUS_OK);
		/* stopped after three lines (as --strict stops): their bytes, not the buffer's */
		assert_int_equal(audit_reader_stats(r)->bytes, want3);
		while (audit_reader_next(r, &it, &si) == STATUS_OK)
			;
		assert_int_equal(audit_reader_stats(r)->bytes, n);
		audit_reader_free(r);
	}
	audit_reader_buffer_sizes(0, 0);
	audit_reader_map_sizes(1024 * 1024, 0);
}

/*
 * A member whose check value is bad (or whose data is corrupt): every
 * complete line zlib decoded is read, then the failure is said, and the count
 * is the file's whatever the buffers' sizes.
 */
static void test_gzip_bad_check(void **state)
{
	static const size_t sizes[][2] = { { 0, 0 }, { 4096, 512 }, { 100000, 7 } };
	static const char one[] = "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[5],\"dev_pos\":[5]}\n";
	size_t cap = 20000 * 80, n_text = 0, n_gz, k;
	char *text = malloc(cap), msg[600];
	unsigned char *gz = malloc(cap), small[256];
	long lines, first_corrupt = -1;
	int i, scan;

	(void)state;
	assert_non_null(text);
	assert_non_null(gz);
	for (i = 0; i < 20000; i++)
		n_text += (size_t)snprintf(text + n_text, cap - n_text,
			"{\"ev\":\"merge\",\"step\":%d,\"host_pos\":[5,6,7],\"dev_pos\":[5,6,8]}\n", i);
	n_gz = gz_of(text, gz, cap);
	gz[n_gz - 8] ^= 1;                     /* the CRC-32, before ISIZE */
	k = gz_of(one, small, sizeof(small));
	small[k - 8] ^= 1;
	for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++) {
		audit_reader_buffer_sizes(sizes[i][0], sizes[i][1]);
		for (scan = 0; scan < 2; scan++) {
			assert_int_equal(drain(testutil_write("crc1.gz", (char *)small, k), scan, &lines, msg,
					       sizeof(msg)), STATUS_IO);
			assert_string_equal(msg, "truncated gzip after 1 lines (incorrect data check)");
			assert_int_equal(drain(testutil_write("crc.gz", (char *)gz, n_gz), scan, &lines, msg,
					       sizeof(msg)), STATUS_IO);
			if (lines != 20000)
				fail_msg("buffers %zu/%zu: %ld lines before the bad check value", sizes[i][0],
					 sizes[i][1], lines);
			assert_string_equal(msg, "truncated gzip after 20000 lines (incorrect data check)");
			/* data damaged inside the member: the same count for every buffer size */
			gz[n_gz - 8] ^= 1;
			gz[n_gz / 2] ^= 0x5a;
			assert_int_equal(drain(testutil_write("mid.gz", (char *)gz, n_gz), scan, &lines, msg,
					       sizeof(msg)), STATUS_IO);
			gz[n_gz / 2] ^= 0x5a;
			gz[n_gz - 8] ^= 1;
			if (first_corrupt < 0)
				first_corrupt = lines;
			if (lines != first_corrupt)
				fail_msg("buffers %zu/%zu: %ld lines before the damage, %ld with the defaults",
					 sizes[i][0], sizes[i][1], lines, first_corrupt);
			assert_non_null(strstr(msg, "truncated gzip after"));
		}
	}
	assert_true(first_corrupt > 0 && first_corrupt < 20000);
	audit_reader_buffer_sizes(0, 0);
	free(text);
	free(gz);
}

/*
 * A byte order mark before the first line is skipped and noted; elsewhere it
 * is a log prefix like any other (the shim's classifier reads it so too).
 */
static void test_bom(void **state)
{
	const char *path = WRITE("bom.jsonl", "\xef\xbb\xbf{\"ev\":\"config\",\"max_model_len\":9}\n"
					      "\xef\xbb\xbf{\"ev\":\"decode\"}\n");
	struct audit_reader *r = open_ok(path, 0);

	(void)state;
	assert_string_equal(read_all(r), "E1c E2x");
	assert_true(audit_reader_stats(r)->bom);
	assert_int_equal(audit_reader_stats(r)->log_audit_lines, 1);
	audit_reader_free(r);
}

/* The capture records of interfaces C: uncertain apart from lost, end, partial, invalid bytes. */
static void test_capture_records(void **state)
{
	const char *path = WRITE("records.jsonl",
		"{\"src\":\"uncertain\",\"pid\":3,\"count\":2,\"record\":{\"src\":\"audit\",\"pid\":3,"
		"\"event\":{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1]}}}\n"
		"{\"src\":\"uncertain\",\"pid\":3,\"count\":1,\"reason\":\"no record\"}\n"
		"{\"src\":\"uncertain\",\"pid\":3}\n"
		"{\"src\":\"lost\",\"count\":5}\n"
		"{\"src\":\"line\",\"pid\":3,\"text\":\"x\",\"partial\":true,\"invalid_utf8\":4}\n"
		"{\"src\":\"audit\",\"pid\":3,\"partial\":true,\"event\":{\"ev\":\"decode\"}}\n"
		"{\"src\":\"end\",\"pid\":3,\"how\":\"signal\",\"signal\":9,\"by\":\"parent\"}\n"
		"{\"src\":\"end\",\"pid\":4,\"how\":\"exit\",\"code\":1}\n"
		"{\"src\":\"audit\\u0000\",\"pid\":3,\"event\":{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[1]}}\n");
	struct audit_reader *r = open_ok(path, 0);
	const struct audit_reader_stats *st;
	struct audit_item it;
	struct status_info si;
	int ends = 0;

	(void)state;
	while (audit_reader_next(r, &it, &si) != STATUS_EOF) {
		if (!it.has_end)
			continue;
		if (!ends++) {
			assert_true(event_str_is(it.end.how, it.end.how_len, "signal"));
			assert_true(it.end.has_signal && it.end.signal == 9);
			assert_true(event_str_is(it.end.by, it.end.by_len, "parent"));
		} else {
			assert_true(event_str_is(it.end.how, it.end.how_len, "exit"));
			assert_true(it.end.has_code && it.end.code == 1 && !it.end.has_signal);
		}
	}
	st = audit_reader_stats(r);
	assert_int_equal(ends, 2);
	assert_int_equal(st->capture_uncertain, 3);
	assert_int_equal(st->uncertain_events, 1);
	assert_int_equal(st->capture_lost, 5);
	assert_int_equal(st->malformed, 1);      /* the uncertain record without a count */
	assert_int_equal(st->partial, 2);
	assert_int_equal(st->invalid_utf8, 4);
	assert_int_equal(st->events, 1);         /* only the partial audit's decode; audit\0 is no audit */
	audit_reader_free(r);
}

/* The scan mode: no tree for the lines it reads, the same items otherwise; reopen; identity; hash. */
static void test_scan_mode_and_reopen(void **state)
{
	struct audit_reader_opts o = { .scan = true };
	const char *path = WRITE("scan.jsonl", plain);
	struct audit_reader *r = NULL, *t = NULL;
	struct status_info si;
	unsigned char z[4096];
	dev_t dev;
	ino_t ino;
	struct stat stt;
	uint64_t h_plain, h_gz;

	(void)state;
	assert_int_equal(audit_reader_open(&r, path, &o, &si), STATUS_OK);
	{
		struct audit_item it;
		int scanned = 0;
		enum status st;
		while ((st = audit_reader_next(r, &it, &si)) != STATUS_EOF)
			if (st == STATUS_OK && it.has_event && !it.doc)
				scanned++;
		assert_true(scanned >= 4);
	}
	assert_string_equal(stats_str(r),
			    "lines 12 blank 2 events 5 other 1 malformed 2 ignored 1 capture 0 lost 0");
	h_plain = audit_reader_content_hash(r);
	audit_reader_identity(r, &dev, &ino);
	assert_int_equal(stat(path, &stt), 0);
	assert_true(dev == stt.st_dev && ino == stt.st_ino);
	/* reopened on the same content compressed: same lines, same content hash */
	assert_int_equal(audit_reader_reopen(r, testutil_write("scan.jsonl.gz", (char *)z,
			 gz_of(plain, z, sizeof(z))), &si), STATUS_OK);
	assert_string_equal(read_all(r), "E1c !4 E5m E7x E9o !10 E12m");
	h_gz = audit_reader_content_hash(r);
	assert_true(h_plain == h_gz);
	assert_true(audit_reader_stats(r)->gzip);
	/* reopened on a missing file: nothing to read, and it can be reopened again */
	assert_int_equal(audit_reader_reopen(r, "/nonexistent/x", &si), STATUS_IO);
	assert_int_equal(audit_reader_next(r, &(struct audit_item){ 0 }, &si), STATUS_EOF);
	assert_int_equal(audit_reader_reopen(r, path, &si), STATUS_OK);
	assert_true(audit_reader_content_hash(r) != h_plain);   /* nothing read yet */
	read_all(r);
	assert_true(audit_reader_content_hash(r) == h_plain);
	/* a different content hashes differently */
	t = open_ok(WRITE("other.jsonl", "{\"ev\":\"decode\"}\n"), 0);
	read_all(t);
	assert_true(audit_reader_content_hash(t) != h_plain);
	audit_reader_free(t);
	audit_reader_free(r);
}

static void test_stdin(void **state)
{
	static const char text[] = "{\"ev\":\"merge\",\"step\":1,\"host_pos\":[1],\"dev_pos\":[2]}\n"
				   "{\"src\":\"lost\",\"count\":2}\n";
	int pfd[2], saved;
	struct audit_reader *r;
	struct audit_item it;
	struct status_info si;

	(void)state;
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(write(pfd[1], text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(pfd[1]);
	saved = dup(0);
	assert_true(saved >= 0);
	assert_int_equal(dup2(pfd[0], 0), 0);
	close(pfd[0]);
	r = open_ok("-", 0);
	assert_int_equal(dup2(saved, 0), 0);   /* the reader holds its own copy */
	close(saved);
	assert_int_equal(audit_reader_next(r, &it, &si), STATUS_OK);
	assert_string_equal(it.file, "-");
	assert_int_equal(it.event.u.merge.step, 1);
	assert_string_equal(read_all(r), "R2:lost");
	assert_int_equal(audit_reader_stats(r)->capture_lost, 2);
	audit_reader_free(r);
}

static void test_open_errors(void **state)
{
	struct audit_reader *r = (struct audit_reader *)&r;
	struct audit_item it;
	struct status_info si;
	char path[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/does-not-exist.jsonl", testutil_dir());
	status_info_clear(&si);
	assert_int_equal(audit_reader_open(&r, path, NULL, &si), STATUS_IO);
	assert_null(r);
	assert_string_equal(si.file, path);
	assert_string_equal(si.msg, "cannot open: No such file or directory");
	/* a directory opens but cannot be read: an I/O error that stops the reader */
	r = open_ok(testutil_dir(), 0);
	status_info_clear(&si);
	assert_int_equal(audit_reader_next(r, &it, &si), STATUS_IO);
	assert_string_equal(si.file, testutil_dir());
	assert_string_equal(si.msg, "read error: Is a directory");
	audit_reader_free(r);
	audit_reader_free(NULL);
}

/* Allocation N fails, for N = 1, 2, ... until open succeeds: clean errors, nothing kept. */
static void test_open_alloc_failures(void **state)
{
	const char *path = WRITE("inject.jsonl", plain);
	long base_live, n;
	int base_fds = count_fds();

	(void)state;
	assert_true(base_fds > 0);
	base_live = live;
	for (n = 1;; n++) {
		struct audit_reader *r = (struct audit_reader *)&r;
		struct status_info si;
		enum status st;

		status_info_clear(&si);
		n_failed = 0;
		fail_countdown = n;
		st = audit_reader_open(&r, path, NULL, &si);
		fail_countdown = 0;
		if (st == STATUS_OK) {
			assert_int_equal(n_failed, 0);
			assert_non_null(r);
			assert_string_equal(read_all(r), "E1c !4 E5m E7x E9o !10 E12m");
			audit_reader_free(r);
			break;
		}
		assert_int_equal(n_failed, 1);
		assert_int_equal(st, STATUS_NOMEM);
		assert_null(r);
		if (live != base_live)
			fail_msg("allocation %ld failed: %ld allocations left behind", n,
				 live - base_live);
		assert_int_equal(count_fds(), base_fds);
	}
	/* reader struct, buffer, jdoc, decoder and its arrays, name (the gzip buffer comes later) */
	assert_int_equal(n, 7);
	assert_int_equal(live, base_live);
	assert_int_equal(count_fds(), base_fds);
}

/* Allocation N while reading fails: the reader says so and frees cleanly. */
static void test_read_alloc_failures(void **state)
{
	const char *path = WRITE("inject2.jsonl", plain);
	long base_live = live, n, failures = 0;

	(void)state;
	for (n = 1; n < 100; n++) {
		struct audit_reader *r = open_ok(path, 0);
		struct audit_item it;
		struct status_info si;
		enum status st;
		long items = 0;

		n_failed = 0;
		fail_countdown = n;
		while ((st = audit_reader_next(r, &it, &si)) != STATUS_EOF) {
			if (st == STATUS_NOMEM)
				break;
			assert_true(st == STATUS_OK || st == STATUS_PARSE);
			items++;
		}
		fail_countdown = 0;
		audit_reader_free(r);
		assert_int_equal(live, base_live);
		if (st == STATUS_EOF) {
			assert_int_equal(n_failed, 0);
			assert_int_equal(items, 7);   /* 5 events, 2 malformed; 2 other lines yield none */
			break;
		}
		assert_int_equal(n_failed, 1);
		assert_string_equal(si.msg, "out of memory");
		failures++;
	}
	/*
	 * the string arena and the node array on the first line, the arena again
	 * when a longer line comes (line 4)
	 */
	assert_int_equal(failures, 3);

	/* a gzip file: its input buffer, then the decompressor, can fail too */
	{
		unsigned char z[1024];
		const char *gz = testutil_write("inject.jsonl.gz", (const char *)z, gz_of(plain, z, sizeof(z)));
		long gz_failures = 0;
		for (n = 1; n < 100; n++) {
			struct audit_reader *r = open_ok(gz, 0);
			struct audit_item it;
			struct status_info si;
			enum status st;
			n_failed = 0;
			fail_countdown = n;
			while ((st = audit_reader_next(r, &it, &si)) != STATUS_EOF && st != STATUS_NOMEM)
				;
			fail_countdown = 0;
			audit_reader_free(r);
			assert_int_equal(live, base_live);
			if (st == STATUS_EOF)
				break;
			assert_int_equal(n_failed, 1);
			assert_true(!strcmp(si.msg, "out of memory") ||
				    !strcmp(si.msg, "cannot start decompression"));
			gz_failures++;
		}
		/* the input buffer, the decompressor, then the parser's as above */
		assert_true(gz_failures >= 2);
	}
}

/*
 * One file read in place through small windows by the scanner, and with
 * read(2) by the tree, item by item: the same lines, events, values,
 * messages, stats and content hash.
 * The file has lines across page and window boundaries, lines at and over
 * the cap, blank and whitespace lines, a cut line whose next line would
 * complete it, and ends without a newline exactly on a page boundary.
 */
/*
 * A file read in place that shrinks under the reader (copytruncate) raises
 * SIGBUS; audit_reader_fault() names the file from the fault address, so
 * the program can say so (the executable does, exit 2).
 */
#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifndef TEST_ASAN
static sigjmp_buf bus_jump;
static const char *bus_path;

static void on_bus(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)uc;
	bus_path = audit_reader_fault(info->si_addr);
	siglongjmp(bus_jump, 1);
}
#endif

static void test_truncated_in_place(void **state)
{
#ifdef TEST_ASAN
	(void)state;
	skip();   /* ASan keeps SIGBUS for itself */
#else
	size_t n = 0, size = 64 * 4096;
	char *text = malloc(size);
	const char *path;
	struct audit_reader_opts o = { .max_line = 4096, .scan = true };
	struct audit_reader *volatile a = NULL;
	struct sigaction sa, old;
	struct status_info si;
	struct audit_item it;
	volatile int items = 0;

	(void)state;
	assert_non_null(text);
	while (n + 200 < size)
		n += (size_t)sprintf(text + n, "{\"ev\":\"merge\",\"step\":%zu,\"host_pos\":[1,-1],"
				     "\"dev_pos\":[2,-1]}\n", n);
	path = testutil_write("shrinks.jsonl", text, n);
	free(text);
	audit_reader_map_sizes(0, 1);   /* in place, small windows */
	assert_int_equal(audit_reader_open((struct audit_reader **)&a, path, &o, &si), STATUS_OK);
	audit_reader_map_sizes(1024 * 1024, 0);
	assert_int_equal(audit_reader_next(a, &it, &si), STATUS_OK);
	assert_null(audit_reader_fault(&it));          /* not an address of a window */
	assert_int_equal(truncate(path, 0), 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	bus_path = NULL;
	if (!sigsetjmp(bus_jump, 1)) {
		while (audit_reader_next(a, &it, &si) == STATUS_OK)
			items++;
		sigaction(SIGBUS, &old, NULL);
		fail_msg("read %d more items of a file truncated to 0 without a fault", items);
	}
	sigaction(SIGBUS, &old, NULL);
	assert_non_null(bus_path);
	assert_string_equal(bus_path, path);
	audit_reader_free(a);
	/* the slot is given back: the same addresses name nothing now */
	assert_null(audit_reader_fault(bus_path));
#endif
}

static void test_mapped_windows(void **state)
{
	size_t cap = 4096, n = 0, size = 200 * 4096, i;
	char *text = malloc(size + 1);
	const char *path;
	struct audit_reader_opts o = { .max_line = cap, .scan = true };
	struct audit_reader *a = NULL, *b = NULL;
	struct status_info sa, sb;
	uint64_t mapped_events = 0, scanned = 0;

	(void)state;
	assert_non_null(text);
	for (i = 0; n + 5000 < size; i++) {
		size_t k = i % 9, pad;
		if (k == 0) {
			/* a merge whose arrays repeat the last one's bytes, or not */
			n += (size_t)sprintf(text + n, "{\"ev\":\"merge\",\"step\":%zu,\"host_pos\":[%zu,-1],"
					     "\"dev_pos\":[%zu,-1],\"slot_req\":[\"r%zu\",null],"
					     "\"buf_req\":[\"r%zu\",null],\"taken\":[false,false]}\n",
					     i, i, i / 27, i / 27, i / 36);
		} else if (k == 1) {
			/* long lines: up to the cap and one byte over */
			pad = cap - 40 + (i % 5 == 0 ? 1 : 0) - (i % 3);
			n += (size_t)sprintf(text + n, "{\"ev\":\"decode\",\"step\":%zu,\"x\":\"", i % 10);
			memset(text + n, 'a', pad - 36);
			n += pad - 36;
			n += (size_t)sprintf(text + n, "\"}\n");
		} else if (k == 2) {
			n += (size_t)sprintf(text + n, "\n   \t\r\n");
		} else if (k == 3) {
			/* cut short: the next line would complete the object */
			n += (size_t)sprintf(text + n, "{\"ev\":\"merge\",\"step\":\n%zu,\"host_pos\":[1],"
					     "\"dev_pos\":[1]}\n", i);
		} else if (k == 4) {
			n += (size_t)sprintf(text + n, "{\"ev\":\"merge\",\"step\":%zu,\"host_pos\":[1,\n2],"
					     "\"dev_pos\":[1,2]}   \n", i);
		} else {
			n += (size_t)sprintf(text + n, "{\"ev\":\"request\",\"phase\":\"start\",\"req\":\"r%zu\","
					     "\"slot\":%zu,\"step\":%zu}\n", i, i % 7, i);
		}
	}
	/* whitespace up to the page boundary, then a last line without a newline */
	while (n < size - 40)
		text[n++] = ' ';
	n += (size_t)sprintf(text + n, "\n{\"ev\":\"decode\",\"step\":1}");
	while (n < size)
		text[n++] = ' ';
	path = testutil_write("mapped.jsonl", text, n);
	assert_int_equal(n % 4096, 0);

	audit_reader_map_sizes(0, 1);             /* every file, windows as small as the cap allows */
	assert_int_equal(audit_reader_open(&a, path, &o, &sa), STATUS_OK);
	audit_reader_map_sizes(SIZE_MAX, 0);      /* read(2), and every line through the tree */
	o.scan = false;
	assert_int_equal(audit_reader_open(&b, path, &o, &sb), STATUS_OK);
	audit_reader_map_sizes(1024 * 1024, 0);
	for (;;) {
		struct audit_item x, y;
		enum status ea, eb;
		uint32_t j;
		status_info_clear(&sa);
		status_info_clear(&sb);
		ea = audit_reader_next(a, &x, &sa);
		eb = audit_reader_next(b, &y, &sb);
		assert_int_equal(ea, eb);
		assert_string_equal(sa.msg, sb.msg);
		assert_int_equal(sa.line, sb.line);
		if (ea == STATUS_EOF)
			break;
		if (ea)
			continue;
		assert_int_equal(x.line, y.line);
		assert_int_equal(x.has_event, y.has_event);
		if (!x.has_event)
			continue;
		mapped_events++;
		scanned += !x.doc;   /* a line ended by its newline is scanned, not declined */
		assert_int_equal(x.event.kind, y.event.kind);
		assert_int_equal(x.event.ev_len, y.event.ev_len);
		assert_memory_equal(x.event.ev, y.event.ev, x.event.ev_len);
		if (x.event.kind == EVENT_MERGE) {
			const struct merge_event *p = &x.event.u.merge, *q = &y.event.u.merge;
			assert_int_equal(p->step, q->step);
			assert_int_equal(p->n_host, q->n_host);
			assert_int_equal(p->n_dev, q->n_dev);
			assert_memory_equal(p->host_pos, q->host_pos, p->n_host * sizeof(int64_t));
			assert_memory_equal(p->dev_pos, q->dev_pos, p->n_dev * sizeof(int64_t));
			assert_int_equal(p->has_req, q->has_req);
			for (j = 0; p->has_req && j < p->n_host; j++) {
				assert_int_equal(p->slot_req_len[j], q->slot_req_len[j]);
				assert_int_equal(p->buf_req_len[j], q->buf_req_len[j]);
				assert_int_equal(!p->slot_req[j], !q->slot_req[j]);
				assert_int_equal(!p->buf_req[j], !q->buf_req[j]);
				if (p->slot_req[j])
					assert_memory_equal(p->slot_req[j], q->slot_req[j], p->slot_req_len[j]);
				if (p->buf_req[j])
					assert_memory_equal(p->buf_req[j], q->buf_req[j], p->buf_req_len[j]);
			}
		}
	}
	assert_true(mapped_events > 100);
	assert_true(scanned > mapped_events / 2);
	assert_string_equal(stats_str(a), stats_str(b));
	assert_true(audit_reader_stats(a)->bytes == n && audit_reader_stats(b)->bytes == n);
	assert_true(audit_reader_content_hash(a) == audit_reader_content_hash(b));
	assert_true(audit_reader_stats(a)->malformed > 50);
	audit_reader_free(a);
	audit_reader_free(b);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),
		cmocka_unit_test(test_log_lines),
		cmocka_unit_test(test_log_braces),
		cmocka_unit_test(test_capture_and_mixed),
		cmocka_unit_test(test_event_with_src_key),
		cmocka_unit_test(test_line_cap),
		cmocka_unit_test(test_empty_and_blank),
		cmocka_unit_test(test_gzip),
		cmocka_unit_test(test_gzip_members),
		cmocka_unit_test(test_gzip_bad_check),
		cmocka_unit_test(test_bytes_of_lines_read),
		cmocka_unit_test(test_bom),
		cmocka_unit_test(test_capture_records),
		cmocka_unit_test(test_scan_mode_and_reopen),
		cmocka_unit_test(test_stdin),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_open_alloc_failures),
		cmocka_unit_test(test_read_alloc_failures),
		cmocka_unit_test(test_mapped_windows),
		cmocka_unit_test(test_truncated_in_place),
	};
	int failed;

	failed = cmocka_run_group_tests(tests, setup, teardown);
	/* all of it again with every plain file read in place */
	audit_reader_map_sizes(0, 0);
	failed += cmocka_run_group_tests(tests, setup, teardown);
	return failed;
}
