/* test_outfile.c - atomic output files (base/outfile.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
#include <cmocka.h>

#include "base/outfile.h"

static char dir[64];

static int t_setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_outfile.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int t_teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void t_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static const char *t_read(const char *path)
{
	static char buf[256];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

/* Files in dir, so that no temporary is left behind. */
static int t_count(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
			n++;
	closedir(d);
	return n;
}

static void test_commit_and_abort(void **state)
{
	struct status_info si = { 0 };
	struct outfile of;
	char path[128];
	struct stat st;

	(void)state;
	snprintf(path, sizeof(path), "%s/fig.svg", dir);
	t_write(path, "old");
	chmod(path, 0640);
	/* abandoned: the old file stays, nothing else is left */
	assert_int_equal(outfile_open(&of, path, &si), STATUS_OK);
	fputs("half", of.f);
	assert_string_equal(t_read(path), "old");
	outfile_abort(&of);
	assert_string_equal(t_read(path), "old");
	assert_int_equal(t_count(), 1);
	/* committed: replaced whole, mode kept */
	assert_int_equal(outfile_open(&of, path, &si), STATUS_OK);
	fputs("new", of.f);
	assert_string_equal(t_read(path), "old");
	assert_int_equal(outfile_commit(&of, &si), STATUS_OK);
	assert_string_equal(t_read(path), "new");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_int_equal(t_count(), 1);
}

static void test_errors(void **state)
{
	struct status_info si = { 0 };
	struct outfile of;
	char path[128];

	(void)state;
	snprintf(path, sizeof(path), "%s/missing/fig.svg", dir);
	assert_int_equal(outfile_open(&of, path, &si), STATUS_IO);
	assert_string_equal(si.file, path);
	assert_non_null(strstr(si.msg, "cannot create"));
	snprintf(path, sizeof(path), "%s/", dir);
	assert_int_equal(outfile_open(&of, path, &si), STATUS_USAGE);
	/* "-" and NULL are stdout, never renamed */
	assert_int_equal(outfile_open(&of, "-", &si), STATUS_OK);
	assert_true(of.is_stdout);
	assert_ptr_equal(of.f, stdout);
	assert_int_equal(outfile_commit(&of, &si), STATUS_OK);
	assert_int_equal(outfile_open(&of, NULL, &si), STATUS_OK);
	assert_true(of.is_stdout);
	outfile_abort(&of);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_and_abort),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, t_setup, t_teardown);
}
