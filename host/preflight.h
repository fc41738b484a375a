/*
 * preflight.h - host checks before a benchmark run: vendor-neutral first
 * (memory floor, memory lost over a run, host lock, running containers),
 * then Tenstorrent ones (PCI devices of vendor 0x1e52 and their NUMA nodes
 * from hwloc, the nodes under /dev/tenstorrent, processes holding a device open).
 *
 * It never resets a board and never stops a container or a process: a
 * failed check carries the command a person should run (`docker stop -t 90`,
 * `sudo tt-smi -r`). `docker rm -f` on a live tt-metal container wedges the
 * cards so that the next open reads as a firmware version mismatch.
 *
 * Everything it reads from the host can be redirected for tests: `root` is
 * prefixed to /proc/meminfo, /proc/<pid>/fd and the device glob, and
 * `topology_xml` loads an hwloc XML export instead of this machine.
 */
#ifndef TTAUDIT_PREFLIGHT_H
#define TTAUDIT_PREFLIGHT_H

#include <stdbool.h>
#include <stdio.h>

#include "host/lock.h"
#include "base/status.h"

#define PREFLIGHT_VENDOR_TENSTORRENT 0x1e52u
#define PREFLIGHT_DEFAULT_FLOOR_GIB 4.0
#define PREFLIGHT_DEFAULT_DEVICE_GLOB "/dev/tenstorrent/*"
#define PREFLIGHT_DEFAULT_LEAK_GIB 1.0
#define PREFLIGHT_MAX_CHECKS 12
#define PREFLIGHT_MAX_ITEMS 64     /* devices, holders, containers kept (more are counted) */

struct preflight_opts {
	const char *root;            /* NULL or "": "/" */
	const char *topology_xml;    /* NULL: discover this machine */
	double mem_floor_gib;        /* <= 0: PREFLIGHT_DEFAULT_FLOOR_GIB */
	const char *lock_dir;        /* NULL: no lock check */
	const char *device_glob;     /* NULL: PREFLIGHT_DEFAULT_DEVICE_GLOB */
	const char *docker;          /* NULL: "docker"; "" skips the container check */
	bool skip_tenstorrent;       /* vendor-neutral checks only */
	const char *record;          /* append a memory record to this JSONL file; NULL: none */
	const char *phase;           /* "before" or "after" (compares with the last "before") */
	double leak_tolerance_gib;   /* <= 0: PREFLIGHT_DEFAULT_LEAK_GIB */
};

enum preflight_result { PREFLIGHT_PASS, PREFLIGHT_FAIL, PREFLIGHT_SKIP };

struct preflight_check {
	const char *name;            /* static: "memory", "lock", "pci" ... */
	enum preflight_result result;
	char detail[1024];
	char remedy[1024];           /* what a person should run or do; "" when nothing */
};

struct preflight_device {
	char busid[32];              /* "0000:01:00.0" */
	unsigned vendor, device;
	int numa[8];
	int n_numa;
};

struct preflight_holder {
	long pid;
	char comm[64];
	char target[256];            /* the device the fd points to */
};

struct preflight_container {
	char id[80];
	char image[160];
	char name[160];
	char status[80];
};

struct preflight_report {
	bool ok;                     /* no check failed */
	size_t n_checks;
	struct preflight_check checks[PREFLIGHT_MAX_CHECKS];
	long long mem_total_kib, mem_available_kib;   /* -1 unknown */
	long long mem_before_kib;    /* phase "after": the "before" record; -1 otherwise */
	size_t n_devices, n_nodes, n_holders, n_containers;  /* totals, may exceed the arrays */
	struct preflight_device devices[PREFLIGHT_MAX_ITEMS];
	char nodes[PREFLIGHT_MAX_ITEMS][256];
	struct preflight_holder holders[PREFLIGHT_MAX_ITEMS];
	struct preflight_container containers[PREFLIGHT_MAX_ITEMS];
	size_t n_unreadable;         /* processes whose fds could not be read */
	enum lock_state lock_state;
	struct lock_owner lock_owner;
};

/*
 * Runs every check into *r (heap-allocate it: it is large). Returns
 * STATUS_OK when the checks ran, whatever they found (r->ok); STATUS_USAGE
 * for bad options, STATUS_IO when the --record file cannot be written,
 * STATUS_NOTFOUND when the device checks need hwloc and it cannot be
 * loaded (host/hwlocfn.h).
 */
enum status preflight_run(const struct preflight_opts *o, struct preflight_report *r,
			  struct status_info *si);

const char *preflight_result_name(enum preflight_result res);

/* Human report on f. */
void preflight_report_print(const struct preflight_report *r, FILE *f);
/* JSON report, malloc'd (caller frees); NULL on allocation failure. */
char *preflight_report_json(const struct preflight_report *r);

#endif
