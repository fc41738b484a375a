/* test_launch.c - what `ttaudit capture` sets up before exec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "capture/envlist.h"
#include "capture/launch.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/test_launch.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static void path(char *buf, size_t cap, const char *name)
{
	snprintf(buf, cap, "%s/%s", dir, name);
}

static void touch(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_find(void **state)
{
	char so[256], buf[512];
	struct status_info si;

	(void)state;
	path(so, sizeof(so), "shim.so");
	touch(so, "");
	setenv("TTAUDIT_SHIM", so, 1);
	assert_int_equal(launch_find_shim(buf, sizeof(buf), NULL), STATUS_OK);
	assert_string_equal(buf, so);
	setenv("TTAUDIT_SHIM", "/nonexistent/shim.so", 1);
	status_info_clear(&si);
	assert_int_equal(launch_find_shim(buf, sizeof(buf), &si), STATUS_NOTFOUND);
	assert_non_null(strstr(si.msg, "/nonexistent/shim.so"));
	unsetenv("TTAUDIT_SHIM");
	unlink(so);
}

static void test_setup(void **state)
{
	char out[256], rules[256];
	struct launch_opts o = { 0 };
	struct status_info si;
	struct stat st;

	(void)state;
	path(out, sizeof(out), "run.cap.jsonl");
	touch(out, "old run\n");
	path(rules, sizeof(rules), "rules");
	touch(rules, "mine ^x\n");
	setenv("LD_PRELOAD", "/other.so", 1);
	setenv("TTAUDIT_ALL_LINES", "1", 1);   /* inherited, not asked for: removed */
	o.out = out;
	o.rules = rules;
	o.env = "MY_*";
	o.watch = "/tmp/*.jsonl";
	assert_int_equal(launch_setup(&o, "/lib/shim.so", NULL), STATUS_OK);
	assert_string_equal(getenv("TTAUDIT_CAPTURE"), out);
	assert_string_equal(getenv("TTAUDIT_RULES"), rules);
	assert_string_equal(getenv("TTAUDIT_ENV"), ENVLIST_DEFAULT ",MY_*");
	assert_string_equal(getenv("TTAUDIT_WATCH"), "/tmp/*.jsonl");
	assert_null(getenv("TTAUDIT_ALL_LINES"));
	assert_null(getenv("TTAUDIT_PER_PID"));
	assert_null(getenv("TTAUDIT_RINGS"));       /* no reader: the shim writes the file */
	assert_string_equal(getenv("LD_PRELOAD"), "/lib/shim.so:/other.so");
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_size, 0);            /* emptied */
	/* --append keeps it */
	touch(out, "old run\n");
	o.append = 1;
	unsetenv("LD_PRELOAD");
	assert_int_equal(launch_setup(&o, "/lib/shim.so", NULL), STATUS_OK);
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_size, 8);
	assert_string_equal(getenv("LD_PRELOAD"), "/lib/shim.so");
	o.rings = "/dev/shm/ttaudit-cap.test";
	assert_int_equal(launch_setup(&o, "/lib/shim.so", NULL), STATUS_OK);
	assert_string_equal(getenv("TTAUDIT_RINGS"), "/dev/shm/ttaudit-cap.test");
	o.rings = NULL;
	/* bad rules and bad env patterns are refused before anything is set */
	touch(rules, "bad (\n");
	status_info_clear(&si);
	assert_int_equal(launch_setup(&o, "/lib/shim.so", &si), STATUS_PARSE);
	assert_int_equal(si.line, 1);
	o.rules = NULL;
	o.env = "A-B";
	assert_int_equal(launch_setup(&o, "/lib/shim.so", NULL), STATUS_PARSE);
	unlink(out);
	unlink(rules);
}

/* The capture file: refused (with the path and why) unless it is a regular file of ours; 0600 always. */
static void test_capture_file(void **state)
{
	char out[256], link[256], sub[256], msg[600];
	struct status_info si;
	struct stat st;
	int fd;

	(void)state;
	path(out, sizeof(out), "reused.cap");
	touch(out, "old\n");
	chmod(out, 0644);
	assert_int_equal(launch_capture_file(out, 0, 0, &fd, NULL), STATUS_OK);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 0);
	assert_true(fcntl(fd, F_GETFL) & O_APPEND);
	close(fd);
	touch(out, "kept\n");
	chmod(out, 0666);
	assert_int_equal(launch_capture_file(out, 1, 0, &fd, NULL), STATUS_OK);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_size, 5);
	close(fd);
	path(link, sizeof(link), "link.cap");
	assert_int_equal(symlink(out, link), 0);
	status_info_clear(&si);
	assert_int_equal(launch_capture_file(link, 0, 0, &fd, &si), STATUS_IO);
	assert_int_equal(fd, -1);
	snprintf(msg, sizeof(msg), "%s: is a symbolic link", link);
	assert_non_null(strstr(si.msg, msg));
	status_info_clear(&si);
	assert_int_equal(launch_capture_file(dir, 0, 0, &fd, &si), STATUS_IO);
	assert_non_null(strstr(si.msg, "is a directory"));
	status_info_clear(&si);
	assert_int_equal(launch_capture_file("/dev/null", 0, 0, &fd, &si), STATUS_IO);
	assert_non_null(strstr(si.msg, "/dev/null: is not a regular file"));
	path(sub, sizeof(sub), "missing/x.cap");
	status_info_clear(&si);
	assert_int_equal(launch_capture_file(sub, 0, 0, &fd, &si), STATUS_IO);
	assert_non_null(strstr(si.msg, "cannot create the capture file: No such file or directory"));
	status_info_clear(&si);
	assert_int_equal(launch_capture_file(sub, 0, 1, &fd, &si), STATUS_IO);
	assert_non_null(strstr(si.msg, "cannot create capture files in"));
	/* per-pid in a directory that takes files: nothing opened */
	assert_int_equal(launch_capture_file(out, 0, 1, &fd, NULL), STATUS_OK);
	assert_int_equal(fd, -1);
	unlink(link);
	unlink(out);
}

static void test_relative(void **state)
{
	struct launch_opts o = { 0 };
	char cwd[512], want[600];

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(dir), 0);
	o.out = "rel.cap";
	o.per_pid = 1;
	assert_int_equal(launch_setup(&o, "/lib/shim.so", NULL), STATUS_OK);
	snprintf(want, sizeof(want), "%s/rel.cap", dir);
	assert_string_equal(getenv("TTAUDIT_CAPTURE"), want);
	assert_string_equal(getenv("TTAUDIT_PER_PID"), "1");
	assert_int_equal(access("rel.cap", F_OK), -1);   /* per-pid: the base file is not made */
	assert_int_equal(chdir(cwd), 0);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find),
		cmocka_unit_test(test_setup),
		cmocka_unit_test(test_capture_file),
		cmocka_unit_test(test_relative),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
