/* test_preflight.c - every preflight check against fixtures that make it pass and fail
 * (fixtures/preflight: fake roots, hwloc XML topologies, stand-in docker CLIs). */
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
#include <unistd.h>
#include <cmocka.h>

#include "host/preflight.h"

static char fx[512];
static struct preflight_report *rep;

static const char *F(const char *rel)
{
	static char buf[8][700];
	static int k;

	k = (k + 1) % 8;
	snprintf(buf[k], sizeof(buf[k]), "%s/preflight/%s", fx, rel);
	return buf[k];
}

static int setup(void **state)
{
	const char *e = getenv("TTAUDIT_FIXTURES");

	(void)state;
	snprintf(fx, sizeof(fx), "%s", e ? e : "fixtures");
	rep = malloc(sizeof(*rep));
	return rep ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	free(rep);
	return 0;
}

/* Options for a healthy two-board host. */
static struct preflight_opts base_opts(void)
{
	struct preflight_opts o = { 0 };

	o.root = F("root-ok");
	o.topology_xml = F("topo-2dev.xml");
	o.docker = F("docker-none.sh");
	return o;
}

static const struct preflight_check *check(const char *name)
{
	size_t i;

	for (i = 0; i < rep->n_checks; i++)
		if (!strcmp(rep->checks[i].name, name))
			return &rep->checks[i];
	fail_msg("no check '%s'", name);
	return NULL;
}

static void run(const struct preflight_opts *o)
{
	struct status_info si = { 0 };
	enum status st = preflight_run(o, rep, &si);

	if (st)
		fail_msg("preflight_run: %s", si.msg);
}

/* Exactly `name` fails (or nothing, for NULL); every other check passes or skips. */
static void only_fails(const char *name)
{
	size_t i;

	for (i = 0; i < rep->n_checks; i++) {
		int want_fail = name && !strcmp(rep->checks[i].name, name);

		if ((rep->checks[i].result == PREFLIGHT_FAIL) != want_fail)
			fail_msg("check '%s' is %s: %s", rep->checks[i].name,
				 preflight_result_name(rep->checks[i].result), rep->checks[i].detail);
	}
	assert_int_equal(rep->ok, name == NULL);
}

static void contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' lacks '%s'", hay, needle);
}

static void test_healthy_host(void **state)
{
	struct preflight_opts o = base_opts();

	(void)state;
	run(&o);
	only_fails(NULL);
	assert_int_equal(rep->n_checks, 5);
	assert_int_equal(rep->n_devices, 2);
	assert_string_equal(rep->devices[0].busid, "0000:11:00.0");
	assert_int_equal(rep->devices[0].numa[0], 0);
	assert_string_equal(rep->devices[1].busid, "0000:21:00.0");
	assert_int_equal(rep->devices[1].numa[0], 1);
	assert_int_equal(rep->devices[1].device, 0xb140);
	assert_int_equal(rep->n_nodes, 2);
	assert_true(rep->mem_available_kib == 67108864);
}

static void test_memory_below_floor(void **state)
{
	struct preflight_opts o = base_opts();

	(void)state;
	o.root = F("root-lowmem");
	run(&o);
	only_fails("memory");
	contains(check("memory")->detail, "2.5 GiB is below the floor of 4.0 GiB");
	contains(check("memory")->remedy, "not reclaimed by a driver reload");
	contains(check("memory")->remedy, "reboot");
	/* the floor is an option */
	o.mem_floor_gib = 2.0;
	run(&o);
	only_fails(NULL);
	o.root = F("root-ok");
	o.mem_floor_gib = 65;
	run(&o);
	only_fails("memory");
}

static void test_memory_unknown(void **state)
{
	struct preflight_opts o = base_opts();

	(void)state;
	o.root = F("root-nomemavail");
	run(&o);
	only_fails("memory");
	contains(check("memory")->detail, "no MemAvailable line");
	o.root = F("no-such-root");
	o.skip_tenstorrent = true;
	run(&o);
	only_fails("memory");
}

static void test_no_pci_device(void **state)
{
	struct preflight_opts o = base_opts();

	(void)state;
	o.topology_xml = F("topo-none.xml");
	o.root = F("root-nodev");
	run(&o);
	assert_int_equal(check("pci")->result, PREFLIGHT_FAIL);
	assert_int_equal(check("device-nodes")->result, PREFLIGHT_FAIL);
	contains(check("pci")->detail, "no PCI device of vendor 0x1e52");
	assert_false(rep->ok);
	/* vendor-neutral mode does not look */
	o.skip_tenstorrent = true;
	run(&o);
	only_fails(NULL);
	assert_int_equal(rep->n_checks, 2);
}

static void test_device_nodes(void **state)
{
	struct preflight_opts o = base_opts();

	(void)state;
	o.root = F("root-nodev");
	run(&o);
	only_fails("device-nodes");
	contains(check("device-nodes")->remedy, "modprobe");
	o.root = F("root-onedev");
	run(&o);
	only_fails("device-nodes");
	contains(check("device-nodes")->detail, "2 PCI device(s) but 1 device node(s)");
	/* the glob is an option */
	o.device_glob = "/dev/tenstorrent/[01]";
	o.root = F("root-ok");
	run(&o);
	only_fails(NULL);
	o.device_glob = "/dev/tenstorrent/9";
	run(&o);
	only_fails("device-nodes");
}

static void test_foreign_holder(void **state)
{
	struct preflight_opts o = base_opts();

	(void)state;
	o.root = F("root-holder");
	run(&o);
	only_fails("device-holders");
	assert_int_equal(rep->n_holders, 1);
	assert_int_equal(rep->holders[0].pid, 4000001);
	assert_string_equal(rep->holders[0].comm, "python3");
	assert_string_equal(rep->holders[0].target, "/dev/tenstorrent/1");
	contains(check("device-holders")->remedy, "never docker rm -f");
	contains(check("device-holders")->remedy, "tt-smi -r");
}

static void test_containers(void **state)
{
	struct preflight_opts o = base_opts();

	(void)state;
	o.docker = F("docker-running.sh");
	run(&o);
	only_fails("containers");
	assert_int_equal(rep->n_containers, 1);
	assert_string_equal(rep->containers[0].name, "vllm-qwen36");
	assert_string_equal(rep->containers[0].image, "vllm-tt:0.9");
	contains(check("containers")->remedy, "docker stop -t 90 vllm-qwen36");
	contains(check("containers")->remedy, "never 'docker rm -f'");
	/* a docker CLI that does not answer is a skip, said so, not a pass */
	o.docker = F("docker-down.sh");
	run(&o);
	only_fails(NULL);
	assert_int_equal(check("containers")->result, PREFLIGHT_SKIP);
	contains(check("containers")->detail, "Cannot connect");
	o.docker = "/nonexistent/docker";
	run(&o);
	assert_int_equal(check("containers")->result, PREFLIGHT_SKIP);
	o.docker = "";
	run(&o);
	assert_int_equal(check("containers")->result, PREFLIGHT_SKIP);
}

static void write_lock(const char *dir, long pid)
{
	char path[700];
	char host[256];
	FILE *f;

	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/owner", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	gethostname(host, sizeof(host));
	fprintf(f, "user=u\nhost=%s\npid=%ld\nstarted=1\ncommand=bench.sh\n", host, pid);
	fclose(f);
}

static void test_lock(void **state)
{
	struct preflight_opts o = base_opts();
	char tmp[] = "/tmp/ttaudit-test-preflight.XXXXXX", dir[600], cmd[700];
	pid_t dead, live;

	(void)state;
	assert_non_null(mkdtemp(tmp));
	snprintf(dir, sizeof(dir), "%s/lock", tmp);
	o.lock_dir = dir;
	run(&o);
	only_fails(NULL);
	contains(check("lock")->detail, "is free");
	live = fork();              /* a live process that is not our ancestor */
	if (live == 0) {
		pause();
		_exit(0);
	}
	write_lock(dir, (long)live);
	run(&o);
	kill(live, SIGKILL);
	waitpid(live, NULL, 0);
	only_fails("lock");
	snprintf(cmd, sizeof(cmd), "held by pid %ld", (long)live);
	contains(check("lock")->detail, cmd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	dead = fork();
	if (dead == 0)
		_exit(0);
	waitpid(dead, NULL, 0);
	write_lock(dir, (long)dead);
	run(&o);
	only_fails("lock");
	contains(check("lock")->detail, "stale");
	contains(check("lock")->detail, "never taken over");
	snprintf(cmd, sizeof(cmd), "rm -r -- '%s'", dir);
	contains(check("lock")->remedy, cmd);
	assert_int_equal(access(dir, F_OK), 0);   /* reported, not removed */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
	write_lock(dir, (long)getpid());           /* our own run holds it */
	run(&o);
	only_fails(NULL);
	contains(check("lock")->detail, "held by this run");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
}

static void test_memory_record(void **state)
{
	struct preflight_opts o = base_opts();
	char tmp[] = "/tmp/ttaudit-test-record.XXXXXX", file[600], cmd[700];
	struct status_info si = { 0 };

	(void)state;
	assert_non_null(mkdtemp(tmp));
	snprintf(file, sizeof(file), "%s/mem.jsonl", tmp);
	o.record = file;
	o.skip_tenstorrent = true;
	o.phase = "after";            /* no before record: fails closed */
	run(&o);
	only_fails("memory-delta");
	o.phase = "before";
	run(&o);
	only_fails(NULL);
	o.phase = "after";
	run(&o);
	only_fails(NULL);
	contains(check("memory-delta")->detail, "64.00 GiB before, 64.00 GiB after");
	o.root = F("root-lowmem");     /* 61.5 GiB gone since the last before */
	o.mem_floor_gib = 1;
	run(&o);
	only_fails("memory-delta");
	contains(check("memory-delta")->detail, "fell by 61.50 GiB");
	contains(check("memory-delta")->remedy, "reboot");
	assert_true(rep->mem_before_kib == 67108864);
	o.leak_tolerance_gib = 62;
	run(&o);
	only_fails(NULL);
	o.phase = "during";
	assert_int_equal(preflight_run(&o, rep, &si), STATUS_USAGE);
	o.phase = "before";
	o.record = "/nonexistent/dir/mem.jsonl";
	assert_int_equal(preflight_run(&o, rep, &si), STATUS_IO);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	assert_int_equal(system(cmd), 0);
}

static void test_bad_topology(void **state)
{
	struct preflight_opts o = base_opts();
	struct status_info si = { 0 };

	(void)state;
	o.topology_xml = F("no-such.xml");
	assert_int_equal(preflight_run(&o, rep, &si), STATUS_USAGE);
	contains(si.msg, "no-such.xml");
	o.topology_xml = F("docker-none.sh");   /* not XML */
	assert_int_equal(preflight_run(&o, rep, &si), STATUS_PARSE);
	contains(si.msg, "not a loadable hwloc topology");
}

static void test_json(void **state)
{
	struct preflight_opts o = base_opts();
	char *js;

	(void)state;
	o.root = F("root-holder");
	run(&o);
	js = preflight_report_json(rep);
	assert_non_null(js);
	contains(js, "\"verdict\":\"FAIL\"");
	contains(js, "\"busid\":\"0000:21:00.0\"");
	contains(js, "\"pid\":4000001");
	free(js);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_healthy_host),
		cmocka_unit_test(test_memory_below_floor),
		cmocka_unit_test(test_memory_unknown),
		cmocka_unit_test(test_no_pci_device),
		cmocka_unit_test(test_device_nodes),
		cmocka_unit_test(test_foreign_holder),
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_memory_record),
		cmocka_unit_test(test_bad_topology),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
