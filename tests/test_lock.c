/* test_lock.c - the host lock: owner file, held by a live pid, stale (dead pid), never stolen,
 * released by its owner only, held across a command and released on SIGTERM. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "host/lock.h"

static char base[256], dir[300];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/ttaudit-test-lock.XXXXXX");
	if (!mkdtemp(base))
		return -1;
	snprintf(dir, sizeof(dir), "%s/host.lock", base);
	return 0;
}

static int teardown(void **state)
{
	char cmd[400];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", base);
	return system(cmd) == 0 ? 0 : -1;
}

static int exists(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0;
}

/* A pid that is certainly dead: a child that exited and was reaped. */
static long dead_pid(void)
{
	pid_t p = fork();

	if (p == 0)
		_exit(0);
	waitpid(p, NULL, 0);
	return (long)p;
}

static void write_owner(long pid, const char *command)
{
	char path[400], host[256];
	FILE *f;

	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/owner", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	gethostname(host, sizeof(host));
	fprintf(f, "user=someone\nhost=%s\npid=%ld\nstarted=1700000000\ncommand=%s\n", host, pid, command);
	fclose(f);
}

static void test_acquire_release(void **state)
{
	struct lock *l = lock_new(dir), *l2 = lock_new(dir);
	struct status_info si = { 0 };
	struct lock_owner o;
	enum lock_state s;

	(void)state;
	assert_int_equal(lock_inspect(l, &o, &s, &si), STATUS_OK);
	assert_int_equal(s, LOCK_FREE);
	assert_int_equal(lock_acquire(l, "bench.sh --arm batch", &o, &s, &si), STATUS_OK);
	assert_int_equal(lock_inspect(l2, &o, &s, &si), STATUS_OK);
	assert_int_equal(s, LOCK_HELD);
	assert_int_equal(o.pid, (long)getpid());
	assert_string_equal(o.command, "bench.sh --arm batch");
	assert_true(o.started > 0 && o.started <= (long long)time(NULL));
	assert_true(o.user[0] && o.host[0]);
	/* a second taker is refused while we hold it */
	assert_int_equal(lock_acquire(l2, "other", &o, &s, &si), STATUS_BUSY);
	assert_int_equal(s, LOCK_HELD);
	assert_int_equal(lock_release(l2, &si), STATUS_USAGE);   /* l2 never held it */
	assert_true(exists(dir));
	assert_int_equal(lock_release(l, &si), STATUS_OK);
	assert_false(exists(dir));
	lock_free(l);
	lock_free(l2);
}

static void test_live_pid_not_stolen(void **state)
{
	struct lock *l = lock_new(dir);
	struct status_info si = { 0 };
	struct lock_owner o;
	enum lock_state s;

	(void)state;
	write_owner(1, "someone else's run");   /* pid 1 is alive */
	assert_int_equal(lock_acquire(l, "mine", &o, &s, &si), STATUS_BUSY);
	assert_int_equal(s, LOCK_HELD);
	assert_int_equal(o.pid, 1);
	assert_string_equal(o.command, "someone else's run");
	assert_true(strstr(si.msg, "held") != NULL);
	assert_int_equal(lock_inspect(l, &o, &s, &si), STATUS_OK);
	assert_int_equal(o.pid, 1);
	lock_free(l);
}

static void test_dead_pid_is_stale_and_not_stolen(void **state)
{
	struct lock *l = lock_new(dir);
	struct status_info si = { 0 };
	struct lock_owner o;
	enum lock_state s;
	long pid = dead_pid();
	char rm[400], want[400];

	(void)state;
	write_owner(pid, "killed run");
	assert_int_equal(lock_inspect(l, &o, &s, &si), STATUS_OK);
	assert_int_equal(s, LOCK_STALE);
	assert_int_equal(lock_acquire(l, "mine", &o, &s, &si), STATUS_BUSY);
	assert_int_equal(s, LOCK_STALE);
	assert_int_equal(o.pid, pid);
	/* still the dead owner's lock */
	assert_int_equal(lock_inspect(l, &o, &s, &si), STATUS_OK);
	assert_int_equal(o.pid, pid);
	assert_string_equal(o.command, "killed run");
	snprintf(want, sizeof(want), "rm -r -- '%s'", dir);
	assert_string_equal(lock_remove_command(l, rm, sizeof(rm)), want);
	lock_free(l);   /* not held: must not remove it */
	assert_true(exists(dir));
}

static void test_no_owner_is_unknown(void **state)
{
	struct lock *l = lock_new(dir);
	struct status_info si = { 0 };
	struct lock_owner o;
	enum lock_state s;

	(void)state;
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(lock_acquire(l, "mine", &o, &s, &si), STATUS_BUSY);
	assert_int_equal(s, LOCK_UNKNOWN);
	assert_true(exists(dir));
	lock_free(l);
}

static void test_release_checks_owner(void **state)
{
	struct lock *l = lock_new(dir);
	struct status_info si = { 0 };
	char path[400];
	FILE *f;

	(void)state;
	assert_int_equal(lock_acquire(l, "mine", NULL, NULL, &si), STATUS_OK);
	/* someone rewrote the owner file: we must not remove their lock */
	snprintf(path, sizeof(path), "%s/owner", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "pid=1\ncommand=theirs\n");
	fclose(f);
	assert_int_equal(lock_release(l, &si), STATUS_BUSY);
	assert_true(exists(dir));
	lock_free(l);
}

static void test_run_exit_code(void **state)
{
	char *argv[] = { (char *)"sh", (char *)"-c", (char *)"test -d \"$0\" && exit 3", dir, NULL };
	char *missing[] = { (char *)"/nonexistent/ttaudit-no-such-cmd", NULL };
	struct lock *l = lock_new(dir);
	struct status_info si = { 0 };
	int code = -1;

	(void)state;
	assert_int_equal(lock_acquire(l, "sh", NULL, NULL, &si), STATUS_OK);
	assert_int_equal(lock_run(l, argv, &code, &si), STATUS_OK);
	assert_int_equal(code, 3);   /* ran while the lock existed */
	assert_false(exists(dir));
	assert_int_equal(lock_acquire(l, "missing", NULL, NULL, &si), STATUS_OK);
	assert_int_equal(lock_run(l, missing, &code, &si), STATUS_CHILD);
	assert_int_equal(code, 127);
	assert_false(exists(dir));
	lock_free(l);
}

/* pid has a child process (/proc/PID/task/PID/children not empty). */
static int has_child(pid_t pid)
{
	char path[64], buf[32];
	size_t n = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	fp = fopen(path, "r");
	if (!fp)
		return 0;
	n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	return n > 0;
}

/* SIGTERM to the holder: the command is stopped, the lock released, and the holder exits. */
static void test_run_sigterm(void **state)
{
	char marker[400], *argv[] = { (char *)"sh", (char *)"-c", NULL, NULL };
	char script[600];
	int wst = 0, i;
	pid_t holder;

	(void)state;
	snprintf(marker, sizeof(marker), "%s/after", base);
	/* If the handler returned instead of exiting, lock_run would go on and... nothing
	 * would tell; so the command itself proves it was stopped: it never writes marker. */
	snprintf(script, sizeof(script), "sleep 5; touch '%s'", marker);
	argv[2] = script;
	holder = fork();
	if (holder == 0) {
		struct lock *l = lock_new(dir);
		struct status_info si = { 0 };
		int code;

		if (lock_acquire(l, "sleeper", NULL, NULL, &si))
			_exit(90);
		lock_run(l, argv, &code, &si);
		_exit(91);   /* reached only if the handler returned */
	}
	/* ordering, not a pause: lock_run installs its handler before it forks
	 * the command, so once the holder has a child the SIGTERM is handled
	 * (a fixed 100 ms pause raced a slow holder on a loaded machine) */
	for (i = 0; i < 3000 && !(exists(dir) && has_child(holder)); i++)
		usleep(10000);
	assert_true(exists(dir));
	assert_true(has_child(holder));
	kill(holder, SIGTERM);
	waitpid(holder, &wst, 0);
	assert_true(WIFEXITED(wst));
	assert_int_equal(WEXITSTATUS(wst), 128 + SIGTERM);
	assert_false(exists(dir));
	sleep(0);
	assert_false(exists(marker));
}

static void test_pid_is_ours(void **state)
{
	(void)state;
	assert_true(lock_pid_is_ours((long)getpid()));
	assert_true(lock_pid_is_ours((long)getppid()));
	assert_false(lock_pid_is_ours(dead_pid()));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_acquire_release, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live_pid_not_stolen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dead_pid_is_stale_and_not_stolen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_owner_is_unknown, setup, teardown),
		cmocka_unit_test_setup_teardown(test_release_checks_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_exit_code, setup, teardown),
		cmocka_unit_test_setup_teardown(test_run_sigterm, setup, teardown),
		cmocka_unit_test(test_pid_is_ours),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
