/* test_ttsim_enginecore.c - the pipe protocol between `ttsim serve` and its
 * engine core: records written and read back, lines that are no record, and
 * the engine core's loop in a real child process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "base/alloc.h"
#include "tools/ttsim/enginecore.h"

/* Encodes r, checks the line, decodes it back into *out (fields in buf). */
static void roundtrip(const struct ttsim_enginecore_rec *r, const char *want, char *buf,
		      size_t n, struct ttsim_enginecore_rec *out)
{
	size_t len = ttsim_enginecore_encode(r, buf, n);

	assert_string_equal(buf, want);
	assert_int_equal(len, strlen(want));
	buf[len - 1] = '\0';
	assert_int_equal(ttsim_enginecore_decode(buf, out), 0);
	assert_int_equal(out->kind, r->kind);
}

static void test_records(void **state)
{
	static const struct ttsim_enginecore_rec vllm = {
		TTSIM_ENGINECORE_VLLM, "WARNING", "platform.py:460", "a | b"
	}, loguru = {
		TTSIM_ENGINECORE_LOGURU, "INFO", "generator:1930", "MERGE_AUDIT {\"ev\":\"x\"}"
	}, spdlog = {
		TTSIM_ENGINECORE_SPDLOG, NULL, NULL, "   Device | INFO | Opening"
	}, sync = {
		TTSIM_ENGINECORE_SYNC, NULL, NULL, NULL
	};
	struct ttsim_enginecore_rec r;
	char buf[256];

	(void)state;
	roundtrip(&vllm, "L|WARNING|platform.py:460|a | b\n", buf, sizeof(buf), &r);
	assert_string_equal(r.level, "WARNING");
	assert_string_equal(r.where, "platform.py:460");
	assert_string_equal(r.text, "a | b");       /* the text may hold '|' */
	roundtrip(&loguru, "G|INFO|generator:1930|MERGE_AUDIT {\"ev\":\"x\"}\n", buf, sizeof(buf), &r);
	assert_string_equal(r.text, "MERGE_AUDIT {\"ev\":\"x\"}");
	roundtrip(&spdlog, "S|   Device | INFO | Opening\n", buf, sizeof(buf), &r);
	assert_null(r.level);
	assert_string_equal(r.text, "   Device | INFO | Opening");
	roundtrip(&sync, "Y|\n", buf, sizeof(buf), &r);
	assert_null(r.text);
}

/* A record is one line: a newline in a field ends the field; a buffer too
 * small cuts the text but keeps the line's newline. */
static void test_cut(void **state)
{
	static const struct ttsim_enginecore_rec nl = {
		TTSIM_ENGINECORE_LOGURU, "IN\nFO", "w", "one\ntwo"
	}, longer = {
		TTSIM_ENGINECORE_VLLM, "INFO", "w", "0123456789"
	};
	char buf[64], small[12];

	(void)state;
	assert_int_equal(ttsim_enginecore_encode(&nl, buf, sizeof(buf)), strlen("G|IN|w|one\n"));
	assert_string_equal(buf, "G|IN|w|one\n");
	assert_int_equal(ttsim_enginecore_encode(&longer, small, sizeof(small)), 11);
	assert_string_equal(small, "L|INFO|w|0\n");
	assert_int_equal(ttsim_enginecore_encode(&longer, small, 1), 0);
	assert_string_equal(small, "");
}

/* Lines that are no record are refused, not half-read. */
static void test_not_records(void **state)
{
	static const char *const bad[] = {
		"", "L", "LINFO|w|t", "L|INFO", "L|INFO|where", "G|INFO|where", "X|a|b|c",
		"|INFO|w|t",
	};
	struct ttsim_enginecore_rec r;
	char line[64];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(line, sizeof(line), "%s", bad[i]);
		assert_int_equal(ttsim_enginecore_decode(line, &r), -1);
	}
	/* empty fields are fields */
	snprintf(line, sizeof(line), "L|||");
	assert_int_equal(ttsim_enginecore_decode(line, &r), 0);
	assert_string_equal(r.text, "");
}

/* Reads the file fd from its start into a malloc'ed string. */
static char *slurp(int fd)
{
	size_t len = 0, cap = 0;      /* bytes of s, its '\0' included */
	char *s = NULL;
	ssize_t got;

	assert_int_equal(ALLOC_GROW(s, (1 << 16) + 1, cap), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	while ((got = read(fd, s + len, cap - 1 - len)) > 0) {
		len += (size_t)got;
		if (len + 1 == cap)
			assert_int_equal(ALLOC_GROW(s, cap + 1, cap), 0);
	}
	s[len] = '\0';
	return s;
}

/*
 * The engine core in a child: its records on fd 3, answers on fd 4; what it
 * writes, with its process prefix, in files (a pipe nobody reads yet would
 * stall it on the long line). A record
 * longer than the line cap is cut and the loop goes on (a SYNC right after
 * still answers).
 */
static void test_process(void **state)
{
	int in[2], ack[2], out, err, st;
	FILE *fo, *fe;
	char line[512], b = 0, *o, *e, *big;
	struct ttsim_enginecore_rec r = { TTSIM_ENGINECORE_VLLM, "INFO", "core.py:108", "engine up" };
	struct pollfd p;
	size_t len;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(ack), 0);
	/* after the pipes, so that no dup2 onto 3 or 4 below closes them */
	fo = tmpfile();
	fe = tmpfile();
	assert_non_null(fo);
	assert_non_null(fe);
	out = fileno(fo);
	err = fileno(fe);
	assert_true(out > 4 && err > 4 && in[0] >= 3 && ack[1] >= 3);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (dup2(in[0], 3) < 0 || dup2(ack[1], 4) < 0 || dup2(out, 1) < 0 ||
		    dup2(err, 2) < 0)
			_exit(99);
		for (st = 5; st < 64; st++)
			close(st);
		_exit(ttsim_enginecore_main("EngineCore"));
	}
	close(in[0]);
	close(ack[1]);
	len = ttsim_enginecore_encode(&r, line, sizeof(line));
	assert_int_equal(write(in[1], line, len), (ssize_t)len);
	r = (struct ttsim_enginecore_rec){ TTSIM_ENGINECORE_LOGURU, "INFO", "generator_vllm:21",
					   "ttaudit: guard none engaged (unguarded merge)" };
	len = ttsim_enginecore_encode(&r, line, sizeof(line));
	assert_int_equal(write(in[1], line, len), (ssize_t)len);
	assert_int_equal(write(in[1], "X|not|a|record\nS|spd line\n", 26), 26);
	/* an overlong spdlog record, then a SYNC */
	big = malloc(TTSIM_ENGINECORE_LINE_MAX + 16);
	assert_non_null(big);
	memset(big, 'x', TTSIM_ENGINECORE_LINE_MAX + 10);
	big[0] = 'S';
	big[1] = '|';
	memcpy(big + TTSIM_ENGINECORE_LINE_MAX + 10, "\nY|\n", 4);
	assert_int_equal(write(in[1], big, TTSIM_ENGINECORE_LINE_MAX + 14),
			 (ssize_t)TTSIM_ENGINECORE_LINE_MAX + 14);
	free(big);
	p.fd = ack[0];
	p.events = POLLIN;
	assert_int_equal(poll(&p, 1, 20000), 1);
	assert_int_equal(read(ack[0], &b, 1), 1);
	assert_int_equal(b, 'y');
	close(in[1]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	o = slurp(out);
	e = slurp(err);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_non_null(strstr(o, "(EngineCore pid="));
	assert_non_null(strstr(o, "[core.py:108] engine up\n"));
	assert_non_null(strstr(o, ") spd line\n"));
	assert_null(strstr(o, "not|a|record"));
	assert_non_null(strstr(e, "| INFO | generator_vllm:21 - ttaudit: guard none engaged"));
	free(o);
	free(e);
	close(ack[0]);
	fclose(fo);
	fclose(fe);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_records),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_not_records),
		cmocka_unit_test(test_process),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
