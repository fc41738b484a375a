#include "host/preflight.h"
#include "host/hwlocfn.h"
#include "base/mono.h"
#include "base/jdoc.h"
#include "base/jsonw.h"
#include "base/lineread.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PREFLIGHT_DOCKER_TIMEOUT_MS 10000
#define PREFLIGHT_DOCKER_MAX_OUT (256u << 10)

const char *preflight_result_name(enum preflight_result res)
{
	switch (res) {
	case PREFLIGHT_PASS: return "pass";
	case PREFLIGHT_FAIL: return "FAIL";
	default: return "skip";
	}
}

static struct preflight_check *preflight_add(struct preflight_report *r, const char *name,
					     enum preflight_result res, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static struct preflight_check *preflight_add(struct preflight_report *r, const char *name,
					     enum preflight_result res, const char *fmt, ...)
{
	static struct preflight_check overflow;
	struct preflight_check *c;
	va_list ap;

	if (r->n_checks >= PREFLIGHT_MAX_CHECKS)
		c = &overflow;  /* cannot happen with the fixed set of checks */
	else
		c = &r->checks[r->n_checks++];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->result = res;
	va_start(ap, fmt);
	vsnprintf(c->detail, sizeof(c->detail), fmt, ap);
	va_end(ap);
	if (res == PREFLIGHT_FAIL)
		r->ok = false;
	return c;
}

static void preflight_path(const struct preflight_opts *o, const char *path, char *buf, size_t n)
{
	const char *root = o->root && *o->root ? o->root : "";
	size_t lr = strlen(root);

	while (lr && root[lr - 1] == '/')
		lr--;
	snprintf(buf, n, "%.*s%s", (int)lr, root, path);
}

static double preflight_gib(long long kib)
{
	return (double)kib / (1024.0 * 1024.0);
}

/* --- memory ---------------------------------------------------------- */

static void preflight_memory(const struct preflight_opts *o, struct preflight_report *r)
{
	double floor_gib = o->mem_floor_gib > 0 ? o->mem_floor_gib : PREFLIGHT_DEFAULT_FLOOR_GIB;
	char path[1200], line[256];
	struct preflight_check *c;
	FILE *f;

	r->mem_total_kib = r->mem_available_kib = -1;
	preflight_path(o, "/proc/meminfo", path, sizeof(path));
	f = fopen(path, "re");
	if (!f) {
		preflight_add(r, "memory", PREFLIGHT_FAIL, "%s: %s", path, strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		long long v;

		if (sscanf(line, "MemTotal: %lld kB", &v) == 1)
			r->mem_total_kib = v;
		else if (sscanf(line, "MemAvailable: %lld kB", &v) == 1)
			r->mem_available_kib = v;
	}
	fclose(f);
	if (r->mem_available_kib < 0) {
		preflight_add(r, "memory", PREFLIGHT_FAIL, "%s: no MemAvailable line", path);
		return;
	}
	if (preflight_gib(r->mem_available_kib) >= floor_gib) {
		preflight_add(r, "memory", PREFLIGHT_PASS, "MemAvailable %.1f GiB, floor %.1f GiB",
			      preflight_gib(r->mem_available_kib), floor_gib);
		return;
	}
	c = preflight_add(r, "memory", PREFLIGHT_FAIL,
			  "MemAvailable %.1f GiB is below the floor of %.1f GiB: a device open this "
			  "low can hard-freeze the host",
			  preflight_gib(r->mem_available_kib), floor_gib);
	snprintf(c->remedy, sizeof(c->remedy),
		 "reboot the host: pinned host memory left by a killed tt-metal process is not "
		 "reclaimed by a driver reload (rmmod/modprobe), only by a reboot");
}

/* A --record line is one small object; a longer line is not one of ours. */
#define PREFLIGHT_RECORD_LINE 4096

/* The last "before" record of a --record file, in KiB; -1 when none. */
static long long preflight_last_before(const char *file)
{
	struct jdoc *doc = NULL;
	struct lineread lr;
	ssize_t len;
	long long kib = -1;
	FILE *f = fopen(file, "re");

	if (!f)
		return -1;
	lineread_init(&lr, f, PREFLIGHT_RECORD_LINE);
	if (!(doc = jdoc_new(PREFLIGHT_RECORD_LINE)))
		goto out;
	/* a line over the cap is no record of ours: skipped, as one that does not parse */
	while ((len = lineread_next(&lr)) != LINEREAD_EOF) {
		const struct jval *root, *mem;

		if (len == LINEREAD_NOMEM)
			break;
		if (len < 0 || jdoc_parse(doc, lr.buf, (size_t)len, NULL))
			continue;
		root = jdoc_root(doc);
		mem = jdoc_get(doc, root, "mem_available_kib");
		if (!jdoc_str_is(jdoc_get(doc, root, "phase"), "before", 6) || !mem)
			continue;
		if (mem->type == JT_INT)
			kib = mem->u.i;
		else if (mem->type == JT_REAL)
			kib = (long long)mem->u.d;
	}
out:
	jdoc_free(doc);
	lineread_release(&lr);
	fclose(f);
	return kib;
}

static enum status preflight_record(const struct preflight_opts *o, struct preflight_report *r,
				    struct status_info *si)
{
	double tol = o->leak_tolerance_gib > 0 ? o->leak_tolerance_gib : PREFLIGHT_DEFAULT_LEAK_GIB;
	const char *phase = o->phase ? o->phase : "before";
	struct preflight_check *c;
	struct timespec ts;
	struct jsonw w;
	FILE *f;
	int bad;

	r->mem_before_kib = -1;
	if (!strcmp(phase, "after") && r->mem_available_kib >= 0) {
		long long before = preflight_last_before(o->record), lost;

		r->mem_before_kib = before;
		if (before < 0) {
			c = preflight_add(r, "memory-delta", PREFLIGHT_FAIL,
					  "%s: no \"before\" record to compare with", o->record);
			snprintf(c->remedy, sizeof(c->remedy),
				 "run 'ttaudit preflight --record %s' before the run", o->record);
		} else if ((lost = before - r->mem_available_kib) > (long long)(tol * 1024 * 1024)) {
			c = preflight_add(r, "memory-delta", PREFLIGHT_FAIL,
					  "MemAvailable fell by %.2f GiB over the run (%.2f -> %.2f GiB, "
					  "tolerance %.2f GiB): the signature of pinned pages outliving "
					  "a killed process",
					  preflight_gib(lost), preflight_gib(before),
					  preflight_gib(r->mem_available_kib), tol);
			snprintf(c->remedy, sizeof(c->remedy),
				 "check for leftover device processes; reclaiming pinned host memory "
				 "takes a reboot, a driver reload reclaims nothing");
		} else {
			preflight_add(r, "memory-delta", PREFLIGHT_PASS,
				      "MemAvailable %.2f GiB before, %.2f GiB after",
				      preflight_gib(before), preflight_gib(r->mem_available_kib));
		}
	}
	f = fopen(o->record, "ae");
	if (!f)
		return status_set(si, STATUS_IO, "%s: %s", o->record, strerror(errno));
	clock_gettime(CLOCK_REALTIME, &ts);
	jsonw_init(&w, f);
	jsonw_obj(&w);
	/* to the millisecond */
	jsonw_kdouble(&w, "t", (double)ts.tv_sec + (double)((ts.tv_nsec + 500000) / 1000000) / 1e3);
	jsonw_kstr(&w, "phase", phase);
	jsonw_kint(&w, "mem_available_kib", r->mem_available_kib);
	jsonw_kint(&w, "mem_total_kib", r->mem_total_kib);
	jsonw_obj_end(&w);
	bad = ferror(f);
	bad |= fclose(f);
	if (bad)
		return status_set(si, STATUS_IO, "%s: write failed", o->record);
	return STATUS_OK;
}

/* --- host lock -------------------------------------------------------- */

static void preflight_lock(const struct preflight_opts *o, struct preflight_report *r)
{
	struct lock *l = lock_new(o->lock_dir);
	struct status_info si = { 0 };
	struct preflight_check *c;
	struct lock_owner *w = &r->lock_owner;
	char rm[LOCK_PATH_MAX + 32];

	if (!l) {
		preflight_add(r, "lock", PREFLIGHT_FAIL, "'%s': bad lock path", o->lock_dir);
		return;
	}
	if (lock_inspect(l, w, &r->lock_state, &si)) {
		preflight_add(r, "lock", PREFLIGHT_FAIL, "%s", si.msg);
		goto out;
	}
	switch (r->lock_state) {
	case LOCK_FREE:
		preflight_add(r, "lock", PREFLIGHT_PASS, "%s is free", o->lock_dir);
		break;
	case LOCK_HELD:
		if (lock_pid_is_ours(w->pid)) {
			preflight_add(r, "lock", PREFLIGHT_PASS, "%s is held by this run (pid %ld)",
				      o->lock_dir, w->pid);
			break;
		}
		c = preflight_add(r, "lock", PREFLIGHT_FAIL,
				  "%s is held by pid %ld (%s@%s, command '%s')", o->lock_dir, w->pid,
				  w->user, w->host, w->command);
		snprintf(c->remedy, sizeof(c->remedy),
			 "wait for that run to finish; the host runs one tt-metal process at a time");
		break;
	case LOCK_STALE:
		c = preflight_add(r, "lock", PREFLIGHT_FAIL,
				  "%s is stale: pid %ld (command '%s') is not running; it is never "
				  "taken over automatically", o->lock_dir, w->pid, w->command);
		snprintf(c->remedy, sizeof(c->remedy),
			 "check that no tt-metal process or container still uses the cards, then "
			 "remove the lock by hand: %s", lock_remove_command(l, rm, sizeof(rm)));
		break;
	default:
		c = preflight_add(r, "lock", PREFLIGHT_FAIL,
				  "%s exists but names no owner (being created, or damaged)", o->lock_dir);
		snprintf(c->remedy, sizeof(c->remedy), "look inside; if nobody is starting a run, "
			 "remove it by hand: %s", lock_remove_command(l, rm, sizeof(rm)));
		break;
	}
out:
	lock_free(l);
}

/* --- containers ------------------------------------------------------- */

/*
 * Runs argv with stdout and stderr captured (each capped), for at most
 * timeout_ms. Returns the exit status, 127 when it could not start, -1 on
 * timeout (the child is killed).
 */
static int preflight_capture(char *const argv[], int timeout_ms, char *out, size_t n_out,
			     char *err, size_t n_err)
{
	int po[2] = { -1, -1 }, pe[2] = { -1, -1 }, wst = 0, rc = 127;
	size_t lo = 0, le = 0;
	int64_t t0;
	pid_t pid = -1;

	out[0] = err[0] = '\0';
	if (pipe2(po, O_CLOEXEC) || pipe2(pe, O_CLOEXEC))
		goto out;
	pid = fork();
	if (pid < 0)
		goto out;
	if (pid == 0) {
		int nul = open("/dev/null", O_RDONLY);

		if (nul >= 0)
			dup2(nul, 0);
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execvp(argv[0], argv);
		dprintf(2, "%s: %s", argv[0], strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	t0 = mono_ns();
	while (po[0] >= 0 || pe[0] >= 0) {
		struct pollfd pf[2] = { { po[0], POLLIN, 0 }, { pe[0], POLLIN, 0 } };
		long left;
		int i;

		left = timeout_ms - (long)((mono_ns() - t0) / 1000000);
		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			pid = -1;
			rc = -1;
			goto out;
		}
		if (poll(pf, 2, (int)left) < 0 && errno != EINTR)
			break;
		for (i = 0; i < 2; i++) {
			int *fd = i ? &pe[0] : &po[0];
			char *buf = i ? err : out, tmp[4096];
			size_t *len = i ? &le : &lo, cap = i ? n_err : n_out;
			ssize_t k;

			if (*fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			k = read(*fd, tmp, sizeof(tmp));
			if (k <= 0) {
				close(*fd);
				*fd = -1;
				continue;
			}
			if (*len + 1 < cap) {
				size_t keep = (size_t)k < cap - 1 - *len ? (size_t)k : cap - 1 - *len;

				memcpy(buf + *len, tmp, keep);
				*len += keep;
				buf[*len] = '\0';
			}
		}
	}
	while (waitpid(pid, &wst, 0) == -1 && errno == EINTR)
		;
	pid = -1;
	rc = WIFEXITED(wst) ? WEXITSTATUS(wst) : 128 + (WIFSIGNALED(wst) ? WTERMSIG(wst) : 0);
out:
	for (int i = 0; i < 2; i++) {
		if (po[i] >= 0)
			close(po[i]);
		if (pe[i] >= 0)
			close(pe[i]);
	}
	return rc;
}

static void preflight_containers(const struct preflight_opts *o, struct preflight_report *r)
{
	char *argv[] = { (char *)(o->docker ? o->docker : "docker"), (char *)"ps", (char *)"--format",
			 (char *)"{{.ID}}\t{{.Image}}\t{{.Names}}\t{{.Status}}", NULL };
	char *out = NULL, err[1024], *line, *save = NULL;
	struct preflight_check *c;
	size_t k, off = 0;
	int rc;

	if (o->docker && !*o->docker) {
		preflight_add(r, "containers", PREFLIGHT_SKIP, "container check disabled");
		return;
	}
	out = malloc(PREFLIGHT_DOCKER_MAX_OUT);
	if (!out) {
		preflight_add(r, "containers", PREFLIGHT_FAIL, "out of memory");
		return;
	}
	rc = preflight_capture(argv, PREFLIGHT_DOCKER_TIMEOUT_MS, out, PREFLIGHT_DOCKER_MAX_OUT,
			       err, sizeof(err));
	if (rc != 0) {
		err[strcspn(err, "\n")] = '\0';
		preflight_add(r, "containers", PREFLIGHT_SKIP, "'%s ps' did not answer (%s%s%s)", argv[0],
			      rc < 0 ? "no answer within 10 s" : rc == 127 ? "not runnable" : "failed",
			      err[0] ? ": " : "", err);
		goto out;
	}
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		struct preflight_container *ct;
		char *f[4] = { 0 }, *s2 = NULL;
		int i;

		if (!*line)
			continue;
		if (r->n_containers++ >= PREFLIGHT_MAX_ITEMS)
			continue;
		ct = &r->containers[r->n_containers - 1];
		f[0] = strtok_r(line, "\t", &s2);
		for (i = 1; i < 4; i++)
			f[i] = strtok_r(NULL, "\t", &s2);
		snprintf(ct->id, sizeof(ct->id), "%s", f[0] ? f[0] : "");
		snprintf(ct->image, sizeof(ct->image), "%s", f[1] ? f[1] : "");
		snprintf(ct->name, sizeof(ct->name), "%s", f[2] ? f[2] : "");
		snprintf(ct->status, sizeof(ct->status), "%s", f[3] ? f[3] : "");
	}
	if (!r->n_containers) {
		preflight_add(r, "containers", PREFLIGHT_PASS, "no running container");
		goto out;
	}
	c = preflight_add(r, "containers", PREFLIGHT_FAIL,
			  "%zu running container(s) not started by this run: a job we did not start "
			  "holds no lock of ours", r->n_containers);
	off = (size_t)snprintf(c->remedy, sizeof(c->remedy), "if it uses the cards, stop it gently "
			       "(never 'docker rm -f' a live tt-metal container: it wedges the cards):");
	for (k = 0; k < r->n_containers && k < PREFLIGHT_MAX_ITEMS && off < sizeof(c->remedy); k++)
		off += (size_t)snprintf(c->remedy + off, sizeof(c->remedy) - off,
					"%s docker stop -t 90 %s", k ? ";" : "", r->containers[k].name[0] ?
					r->containers[k].name : r->containers[k].id);
out:
	free(out);
}

/* --- Tenstorrent devices ---------------------------------------------- */

static enum status preflight_pci(const struct preflight_opts *o, struct preflight_report *r,
				 struct status_info *si)
{
	const struct hwlocfn *hf;
	hwloc_topology_t topo = NULL;
	hwloc_obj_t obj = NULL;
	struct preflight_check *c;
	char list[900];
	size_t off = 0, i;
	enum status st;
	int depth;

	if (o->topology_xml && access(o->topology_xml, R_OK) != 0)
		return status_set(si, STATUS_USAGE, "%s: %s", o->topology_xml, strerror(errno));
	st = hwlocfn_load(&hf, si);
	if (st)
		return st;
	if (hf->topology_init(&topo) != 0) {
		preflight_add(r, "pci", PREFLIGHT_FAIL, "hwloc: topology init failed");
		return STATUS_OK;
	}
	if ((o->topology_xml && hf->topology_set_xml(topo, o->topology_xml) != 0) ||
	    hf->topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL) != 0 ||
	    hf->topology_load(topo) != 0) {
		int e = errno;

		hf->topology_destroy(topo);
		if (o->topology_xml)
			return status_set(si, STATUS_PARSE, "%s: not a loadable hwloc topology (%s)",
					  o->topology_xml, strerror(e));
		preflight_add(r, "pci", PREFLIGHT_FAIL, "hwloc: topology discovery failed: %s",
			      strerror(e));
		return STATUS_OK;
	}
	/* hwloc_get_next_pcidev and hwloc_bitmap_foreach_begin are inline in
	 * hwloc.h and call hwloc by name: their walks, through the table */
	depth = hf->get_type_depth(topo, HWLOC_OBJ_PCI_DEVICE);
	while (depth != HWLOC_TYPE_DEPTH_UNKNOWN && depth != HWLOC_TYPE_DEPTH_MULTIPLE &&
	       (obj = obj ? obj->next_cousin : hf->get_obj_by_depth(topo, depth, 0))) {
		struct preflight_device *d;
		hwloc_obj_t anc;
		int node;

		if (obj->attr->pcidev.vendor_id != PREFLIGHT_VENDOR_TENSTORRENT)
			continue;
		if (r->n_devices++ >= PREFLIGHT_MAX_ITEMS)
			continue;
		d = &r->devices[r->n_devices - 1];
		snprintf(d->busid, sizeof(d->busid), "%04x:%02x:%02x.%01x", obj->attr->pcidev.domain,
			 obj->attr->pcidev.bus, obj->attr->pcidev.dev, obj->attr->pcidev.func);
		d->vendor = obj->attr->pcidev.vendor_id;
		d->device = obj->attr->pcidev.device_id;
		anc = hwloc_get_non_io_ancestor_obj(topo, obj);
		for (node = anc && anc->nodeset ? hf->bitmap_first(anc->nodeset) : -1;
		     node >= 0 && d->n_numa < 8; node = hf->bitmap_next(anc->nodeset, node))
			d->numa[d->n_numa++] = node;
	}
	hf->topology_destroy(topo);
	if (!r->n_devices) {
		c = preflight_add(r, "pci", PREFLIGHT_FAIL, "no PCI device of vendor 0x1e52 (Tenstorrent)%s%s",
				  o->topology_xml ? " in " : "", o->topology_xml ? o->topology_xml : "");
		snprintf(c->remedy, sizeof(c->remedy), "check that the boards are seated and powered: lspci -d 1e52:");
		return STATUS_OK;
	}
	list[0] = '\0';
	for (i = 0; i < r->n_devices && i < PREFLIGHT_MAX_ITEMS && off < sizeof(list); i++) {
		const struct preflight_device *d = &r->devices[i];

		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s [%04x:%04x] numa %d%s",
					i ? ", " : "", d->busid, d->vendor, d->device,
					d->n_numa ? d->numa[0] : -1, d->n_numa > 1 ? "+" : "");
	}
	preflight_add(r, "pci", PREFLIGHT_PASS, "%zu device(s): %s", r->n_devices, list);
	return STATUS_OK;
}

static void preflight_nodes(const struct preflight_opts *o, struct preflight_report *r)
{
	const char *pat = o->device_glob ? o->device_glob : PREFLIGHT_DEFAULT_DEVICE_GLOB;
	struct preflight_check *c;
	char path[1200];
	glob_t g;
	size_t i;
	int rc;

	preflight_path(o, pat, path, sizeof(path));
	rc = glob(path, 0, NULL, &g);
	if (rc == 0) {
		for (i = 0; i < g.gl_pathc; i++) {
			if (r->n_nodes++ < PREFLIGHT_MAX_ITEMS)
				snprintf(r->nodes[r->n_nodes - 1], sizeof(r->nodes[0]), "%s",
					 g.gl_pathv[i]);
		}
		globfree(&g);
	}
	if (!r->n_nodes) {
		c = preflight_add(r, "device-nodes", PREFLIGHT_FAIL, "no device node matches %s", path);
		snprintf(c->remedy, sizeof(c->remedy),
			 "load the driver: sudo modprobe tenstorrent (a reset is not the fix)");
	} else if (r->n_devices && r->n_nodes != r->n_devices) {
		c = preflight_add(r, "device-nodes", PREFLIGHT_FAIL,
				  "%zu PCI device(s) but %zu device node(s) match %s", r->n_devices,
				  r->n_nodes, path);
		snprintf(c->remedy, sizeof(c->remedy),
			 "the driver did not bind every board; only when nothing uses the cards: "
			 "sudo tt-smi -r");
	} else {
		preflight_add(r, "device-nodes", PREFLIGHT_PASS, "%zu device node(s) match %s",
			      r->n_nodes, path);
	}
}

static int preflight_is_pid(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

static void preflight_holders(const struct preflight_opts *o, struct preflight_report *r)
{
	const char *pat = o->device_glob ? o->device_glob : PREFLIGHT_DEFAULT_DEVICE_GLOB;
	char proc[1200], list[600];
	struct preflight_check *c;
	struct dirent *de;
	size_t i, off = 0;
	DIR *d;

	preflight_path(o, "/proc", proc, sizeof(proc));
	d = opendir(proc);
	if (!d) {
		preflight_add(r, "device-holders", PREFLIGHT_FAIL, "%s: %s", proc, strerror(errno));
		return;
	}
	while ((de = readdir(d))) {
		char fdpath[1500], lpath[1800], target[256];
		struct dirent *fe;
		long pid;
		DIR *fdd;

		if (!preflight_is_pid(de->d_name))
			continue;
		pid = strtol(de->d_name, NULL, 10);
		snprintf(fdpath, sizeof(fdpath), "%s/%s/fd", proc, de->d_name);
		fdd = opendir(fdpath);
		if (!fdd) {
			if (errno == EACCES || errno == EPERM)
				r->n_unreadable++;
			continue;
		}
		while ((fe = readdir(fdd))) {
			struct preflight_holder *h;
			ssize_t k;

			if (!preflight_is_pid(fe->d_name))
				continue;
			snprintf(lpath, sizeof(lpath), "%s/%s", fdpath, fe->d_name);
			k = readlink(lpath, target, sizeof(target) - 1);
			if (k <= 0)
				continue;
			target[k] = '\0';
			if (fnmatch(pat, target, FNM_PATHNAME) != 0 || lock_pid_is_ours(pid))
				continue;
			if (r->n_holders++ >= PREFLIGHT_MAX_ITEMS)
				break;
			h = &r->holders[r->n_holders - 1];
			h->pid = pid;
			snprintf(h->target, sizeof(h->target), "%s", target);
			snprintf(lpath, sizeof(lpath), "%s/%s/comm", proc, de->d_name);
			{
				FILE *f = fopen(lpath, "re");

				if (f) {
					if (fgets(h->comm, sizeof(h->comm), f))
						h->comm[strcspn(h->comm, "\n")] = '\0';
					fclose(f);
				}
			}
			break;  /* one entry per process is enough */
		}
		closedir(fdd);
	}
	closedir(d);
	if (!r->n_holders) {
		preflight_add(r, "device-holders", PREFLIGHT_PASS,
			      "no other process holds a device open%s", r->n_unreadable ?
			      " (some processes could not be inspected: run as root to see all)" : "");
		return;
	}
	list[0] = '\0';
	for (i = 0; i < r->n_holders && i < PREFLIGHT_MAX_ITEMS && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%spid %ld (%s) on %s",
					i ? ", " : "", r->holders[i].pid,
					r->holders[i].comm[0] ? r->holders[i].comm : "?",
					r->holders[i].target);
	c = preflight_add(r, "device-holders", PREFLIGHT_FAIL,
			  "%zu process(es) not ours hold a device open: %s", r->n_holders, list);
	snprintf(c->remedy, sizeof(c->remedy),
		 "stop them by their own means (a container: docker stop -t 90 NAME, never "
		 "docker rm -f); if the cards read as wedged afterwards: sudo tt-smi -r");
}

enum status preflight_run(const struct preflight_opts *o, struct preflight_report *r,
			  struct status_info *si)
{
	enum status st;

	memset(r, 0, sizeof(*r));
	r->ok = true;
	r->mem_before_kib = -1;
	if (o->phase && strcmp(o->phase, "before") && strcmp(o->phase, "after"))
		return status_set(si, STATUS_USAGE, "phase '%s' is neither 'before' nor 'after'", o->phase);
	preflight_memory(o, r);
	if (o->record) {
		st = preflight_record(o, r, si);
		if (st)
			return st;
	}
	if (o->lock_dir)
		preflight_lock(o, r);
	preflight_containers(o, r);
	if (o->skip_tenstorrent)
		return STATUS_OK;
	st = preflight_pci(o, r, si);
	if (st)
		return st;
	preflight_nodes(o, r);
	preflight_holders(o, r);
	return STATUS_OK;
}

void preflight_report_print(const struct preflight_report *r, FILE *f)
{
	size_t i;

	for (i = 0; i < r->n_checks; i++) {
		const struct preflight_check *c = &r->checks[i];

		fprintf(f, "%-4s  %-14s %s\n", preflight_result_name(c->result), c->name, c->detail);
		if (c->remedy[0])
			fprintf(f, "      %-14s -> %s\n", "", c->remedy);
	}
	fprintf(f, "preflight: %s\n", r->ok ? "PASS" : "FAIL");
}

char *preflight_report_json(const struct preflight_report *r)
{
	struct jsonw w;
	struct jsonw_mem m;
	size_t i;
	int k;

	if (jsonw_mem_begin(&w, &m))
		return NULL;
	jsonw_obj(&w);
	jsonw_kstr(&w, "verdict", r->ok ? "PASS" : "FAIL");
	jsonw_kint(&w, "mem_total_kib", r->mem_total_kib);
	jsonw_kint(&w, "mem_available_kib", r->mem_available_kib);
	if (r->mem_before_kib >= 0)
		jsonw_kint(&w, "mem_before_kib", r->mem_before_kib);
	jsonw_key(&w, "checks");
	jsonw_arr(&w);
	for (i = 0; i < r->n_checks; i++) {
		jsonw_obj(&w);
		jsonw_kstr(&w, "check", r->checks[i].name);
		jsonw_kstr(&w, "result", r->checks[i].result == PREFLIGHT_PASS ? "pass" :
			   r->checks[i].result == PREFLIGHT_FAIL ? "fail" : "skip");
		jsonw_kstr(&w, "detail", r->checks[i].detail);
		if (r->checks[i].remedy[0])
			jsonw_kstr(&w, "remedy", r->checks[i].remedy);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "devices");
	jsonw_arr(&w);
	for (i = 0; i < r->n_devices && i < PREFLIGHT_MAX_ITEMS; i++) {
		const struct preflight_device *d = &r->devices[i];

		jsonw_obj(&w);
		jsonw_kstr(&w, "busid", d->busid);
		jsonw_kint(&w, "vendor", d->vendor);
		jsonw_kint(&w, "device", d->device);
		jsonw_key(&w, "numa");
		jsonw_arr(&w);
		for (k = 0; k < d->n_numa; k++)
			jsonw_int(&w, d->numa[k]);
		jsonw_arr_end(&w);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "device_nodes");
	jsonw_arr(&w);
	for (i = 0; i < r->n_nodes && i < PREFLIGHT_MAX_ITEMS; i++)
		jsonw_str(&w, r->nodes[i]);
	jsonw_arr_end(&w);
	jsonw_key(&w, "holders");
	jsonw_arr(&w);
	for (i = 0; i < r->n_holders && i < PREFLIGHT_MAX_ITEMS; i++) {
		jsonw_obj(&w);
		jsonw_kint(&w, "pid", r->holders[i].pid);
		jsonw_kstr(&w, "comm", r->holders[i].comm);
		jsonw_kstr(&w, "device", r->holders[i].target);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "containers");
	jsonw_arr(&w);
	for (i = 0; i < r->n_containers && i < PREFLIGHT_MAX_ITEMS; i++) {
		jsonw_obj(&w);
		jsonw_kstr(&w, "id", r->containers[i].id);
		jsonw_kstr(&w, "image", r->containers[i].image);
		jsonw_kstr(&w, "name", r->containers[i].name);
		jsonw_kstr(&w, "status", r->containers[i].status);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	return jsonw_mem_end(&w, &m);
}
