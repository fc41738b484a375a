/*
 * test_capfile.c - the capture file as the reader writes it: a file that
 * fills up (here: the file size limit) ends at a record boundary and its
 * last records count what could not be written; a deleted file is made
 * again and says what the deleted one held; record kinds read back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "capture/capfile.h"

struct fx {
	char path[64];
	int fd;
	struct capfile *cf;
	char msgs[4096];
	char buf[1 << 20];
	struct capfile_rec recs[8192];
	size_t len, n;
};

static void warn(void *ctx, const char *msg)
{
	struct fx *f = ctx;

	strncat(f->msgs, msg, sizeof(f->msgs) - strlen(f->msgs) - 2);
	strcat(f->msgs, "\n");
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	strcpy(f->path, "/tmp/test_capfile.XXXXXX");
	f->fd = mkstemp(f->path);
	assert_true(f->fd >= 0);
	assert_int_equal(capfile_new(f->fd, f->path, warn, f, &f->cf, NULL), STATUS_OK);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->cf)
		capfile_free(f->cf);
	close(f->fd);
	unlink(f->path);
	free(f);
	return 0;
}

static void add(struct fx *f, long pid, const char *rec)
{
	struct capfile_rec *r = &f->recs[f->n++];
	size_t n = strlen(rec);

	memcpy(f->buf + f->len, rec, n);
	f->len += n;
	r->len = (uint32_t)n;
	r->pid = pid;
	r->kind = (uint8_t)capfile_kind_of(rec, n, &r->count);
}

static void flush(struct fx *f)
{
	capfile_write(f->cf, f->buf, f->recs, f->n, NULL, NULL);
	f->len = f->n = 0;
}

static void lines(struct fx *f, long pid, int from, int n)
{
	char rec[256];
	int i;

	for (i = from; i < from + n; i++) {
		snprintf(rec, sizeof(rec), "{\"src\":\"audit\",\"t\":1.0,\"pid\":%ld,\"fd\":1,\"event\":{\"ev\":\"merge\",\"step\":%d,\"pad\":\"%080d\"}}\n",
			 pid, i, 0);
		add(f, pid, rec);
	}
}

/* The file's content, and the number of its lines that are not whole records. */
static char *slurp(const char *path, size_t *n, int *torn)
{
	FILE *fp = fopen(path, "r");
	static char data[8 << 20];
	size_t i;

	assert_non_null(fp);
	*n = fread(data, 1, sizeof(data) - 1, fp);
	fclose(fp);
	data[*n] = '\0';
	*torn = *n && data[*n - 1] != '\n';
	for (i = 0; i + 1 < *n; i++)
		if (data[i] == '\n' && data[i + 1] != '{')
			(*torn)++;
	return data;
}

static int count(const char *s, const char *what)
{
	int k = 0;

	while ((s = strstr(s, what))) {
		k++;
		s++;
	}
	return k;
}

static void test_kind(void **state)
{
	uint64_t c;

	(void)state;
	assert_int_equal(capfile_kind_of("{\"src\":\"audit\",\"t\":1}\n", 22, &c), CAPFILE_LINES);
	assert_int_equal(c, 1);
	assert_int_equal(capfile_kind_of("{\"src\":\"lost\",\"t\":1,\"pid\":3,\"count\":17,\"reason\":\"x\"}\n", 52, &c), CAPFILE_LOST);
	assert_int_equal(c, 17);
	assert_int_equal(capfile_kind_of("{\"src\":\"uncertain\",\"t\":1,\"count\":4}\n", 36, &c), CAPFILE_LINES);
	assert_int_equal(c, 4);
	assert_int_equal(capfile_kind_of("{\"src\":\"start\",\"t\":1}\n", 22, &c), CAPFILE_START);
	assert_int_equal(capfile_kind_of("{\"src\":\"end\",\"t\":1}\n", 20, &c), CAPFILE_END);
	assert_int_equal(capfile_kind_of("not a record\n", 13, &c), CAPFILE_OTHER);
}

/*
 * The file fills up (the file size limit: EFBIG, the same path as ENOSPC):
 * whole records up to the room kept, then every line counted, its start,
 * lost and end records kept and written last, each process's count in a
 * lost record just before its end.
 */
static void test_full(void **state)
{
	struct fx *f = *state;
	struct rlimit old, lim;
	size_t n;
	int torn, written;
	char *data, want[128];

	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 300 * 1024;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	capfile_free(f->cf);
	assert_int_equal(capfile_new(f->fd, f->path, warn, f, &f->cf, NULL), STATUS_OK);
	add(f, 7, "{\"src\":\"start\",\"t\":1,\"pid\":7}\n");
	lines(f, 7, 0, 1000);
	flush(f);
	assert_int_equal(capfile_failed(f->cf), 0);
	lines(f, 7, 1000, 3000);
	add(f, 8, "{\"src\":\"start\",\"t\":1,\"pid\":8}\n");
	lines(f, 8, 0, 10);
	add(f, 8, "{\"src\":\"lost\",\"t\":1,\"pid\":8,\"count\":5,\"reason\":\"in a stdio buffer at _exit\"}\n");
	add(f, 8, "{\"src\":\"end\",\"t\":1,\"pid\":8,\"how\":\"exit\"}\n");
	flush(f);
	assert_int_equal(capfile_failed(f->cf), EFBIG);
	assert_non_null(strstr(f->msgs, ": cannot write the capture file: File too large"));
	assert_int_equal(capfile_unwritten(f->cf, 8), 10);
	lines(f, 7, 4000, 500);
	add(f, 7, "{\"src\":\"end\",\"t\":1,\"pid\":7,\"how\":\"exit\"}\n");
	flush(f);
	capfile_free(f->cf);
	f->cf = NULL;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	data = slurp(f->path, &n, &torn);
	assert_int_equal(torn, 0);
	assert_true(n <= 300 * 1024);
	written = count(data, "\"src\":\"audit\"");
	assert_true(written > 1000 && written < 4500);
	snprintf(want, sizeof(want), "\"pid\":7,\"count\":%d,\"reason\":\"the capture file could not be written (File too large)\"",
		 4500 - written);
	assert_non_null(strstr(data, want));
	assert_non_null(strstr(data, "\"pid\":8,\"count\":10,\"reason\":\"the capture file could not be written"));
	assert_non_null(strstr(data, "\"pid\":8,\"count\":5,\"reason\":\"in a stdio buffer at _exit\""));
	/* kept records in their order, each process's count before its end */
	assert_true(strstr(data, "{\"src\":\"start\",\"t\":1,\"pid\":8}") < strstr(data, "\"pid\":8,\"count\":10"));
	assert_true(strstr(data, "\"pid\":8,\"count\":10") < strstr(data, "{\"src\":\"end\",\"t\":1,\"pid\":8,"));
	assert_true(strstr(data, "\"pid\":7,\"count\":") < strstr(data, "{\"src\":\"end\",\"t\":1,\"pid\":7,"));
	assert_int_equal(count(data, "\"src\":\"end\""), 2);
}

/* Deleted while written: made again, begun with the running processes' starts and what the old one held. */
static void test_deleted(void **state)
{
	struct fx *f = *state;
	size_t n;
	int torn;
	char *data;
	struct stat st;

	add(f, 7, "{\"src\":\"start\",\"t\":1,\"pid\":7}\n");
	add(f, 9, "{\"src\":\"start\",\"t\":1,\"pid\":9}\n");
	lines(f, 7, 0, 100);
	add(f, 9, "{\"src\":\"lost\",\"t\":1,\"pid\":9,\"count\":3,\"reason\":\"x\"}\n");
	add(f, 9, "{\"src\":\"end\",\"t\":1,\"pid\":9}\n");
	flush(f);
	assert_int_equal(unlink(f->path), 0);
	lines(f, 7, 100, 50);
	flush(f);
	assert_int_equal(capfile_failed(f->cf), 0);
	assert_non_null(strstr(f->msgs, "was deleted while it was written: made again"));
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(capfile_unwritten(f->cf, 7), 100);
	data = slurp(f->path, &n, &torn);
	assert_int_equal(torn, 0);
	assert_true(strncmp(data, "{\"src\":\"start\",\"t\":1,\"pid\":7}\n", 30) == 0);
	assert_null(strstr(data, "\"pid\":9}"));   /* ended: not started again */
	assert_non_null(strstr(data, "\"pid\":7,\"count\":100,\"reason\":\"in a capture file that was deleted while it was written\""));
	assert_non_null(strstr(data, "\"pid\":9,\"count\":3,\"reason\":\"in a capture file that was deleted"));
	assert_int_equal(count(data, "\"src\":\"audit\""), 50);
	/* made again only where nothing else is: another file there is left alone */
	assert_int_equal(unlink(f->path), 0);
	{
		int other = open(f->path, O_WRONLY | O_CREAT | O_EXCL, 0600);
		assert_true(other >= 0);
		close(other);
	}
	lines(f, 7, 150, 10);
	flush(f);
	assert_int_equal(capfile_failed(f->cf), EEXIST);
	assert_non_null(strstr(f->msgs, "cannot be made again: File exists"));
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_size, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind),
		cmocka_unit_test_setup_teardown(test_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deleted, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
