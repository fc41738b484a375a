/*
 * boot.c - one boot of an A/B arm (boot.h): the arm's environment from the
 * spec, the serve command as its own process group under the capture shim,
 * its URL, the bench through it, the graceful stop, and the boot's figures
 * paired with its capture into the A/B's state.
 */
#include "ab/boot.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe/arms.h"
#include "bench/driver.h"
#include "report/html.h"
#include "probe/http.h"
#include "base/jsonw.h"
#include "capture/launch.h"
#include "host/lock.h"
#include "base/outfile.h"
#include "pair/pair.h"
#include "report/series.h"
#include "host/preflight.h"
#include "base/rate.h"
#include "analyzer/rule.h"
#include "report/svg.h"

/* --- the arm environment ------------------------------------------------- */

void boot_env_release(struct ab_env *e)
{
	size_t i;

	for (i = 0; i < e->n; i++) {
		free(e->name[i]);
		free(e->value[i]);
	}
	e->n = 0;
}

enum status boot_env_load(struct ab_ctx *c, const char *arm, struct ab_env *e, struct status_info *si)
{
	char *buf = NULL, *line, *save = NULL, *eq;
	size_t n = 0;
	enum status st;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return status_set(si, STATUS_NOMEM, "out of memory");
	st = arm_spec_print_env(c->spec, arm, f, si);
	fclose(f);
	if (st)
		goto out;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t i;

		eq = strchr(line, '=');
		if (!eq || eq == line)
			continue;
		*eq = '\0';
		if (e->n >= AB_MAX_ENV) {
			st = status_set(si, STATUS_LIMIT, "arm '%s': more than %d variables", arm, AB_MAX_ENV);
			goto out;
		}
		e->name[e->n] = strdup(line);
		e->value[e->n] = strdup(eq + 1);
		if (!e->name[e->n] || !e->value[e->n]) {
			st = status_set(si, STATUS_NOMEM, "out of memory");
			goto out;
		}
		e->n++;
		for (i = 0; i < c->all.n && strcmp(c->all.name[i], line); i++)
			;
		if (i == c->all.n && c->all.n < AB_MAX_ENV) {
			c->all.name[c->all.n] = strdup(line);
			c->all.value[c->all.n] = strdup("");
			c->all.n++;
		}
	}
out:
	free(buf);
	return st;
}

/* --- the server process ---------------------------------------------------- */

/* In the child: environment, capture, exec. Never returns. */
static void boot_child(struct ab_ctx *c, const struct ab_boot *b, const char *serve)
{
	const struct ab_env *e = &c->env[b->role];
	struct launch_opts lo;
	struct status_info si = { 0 };
	char num[32];
	size_t i;
	int fd;

	setsid();
	fd = open(b->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		dup2(fd, 1);
		dup2(fd, 2);
	}
	/* a control must not inherit a treatment's flag from our environment */
	for (i = 0; i < c->all.n; i++)
		unsetenv(c->all.name[i]);
	for (i = 0; i < e->n; i++)
		setenv(e->name[i], e->value[i], 1);
	setenv("TTAUDIT_AB_ARM", ab_role_arm(c->o, b->role), 1);
	setenv("TTAUDIT_AB_ROLE", ab_role_name(b->role), 1);
	snprintf(num, sizeof(num), "%zu", (size_t)(b - c->boots));
	setenv("TTAUDIT_AB_BOOT", num, 1);
	setenv("TTAUDIT_AB_PORT_FILE", b->port_file, 1);
	memset(&lo, 0, sizeof(lo));
	lo.out = b->capture;
	/* every line the server prints, with the built-in rules naming the
	 * banners: any server's log lines can then be evidence, and an absent
	 * line is one the server did not print, not one the capture dropped */
	lo.all_lines = 1;
	if (launch_setup(&lo, c->shim, &si)) {
		fprintf(stderr, "ttaudit ab: capture setup failed: %s\n", si.msg);
		_exit(127);
	}
	execl("/bin/sh", "sh", "-c", serve, (char *)NULL);
	fprintf(stderr, "ttaudit ab: cannot run /bin/sh: %s\n", strerror(errno));
	_exit(127);
}

static void boot_sleep(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* 1 while any process of the group is alive (the shell reaped or not). */
static int boot_group_alive(pid_t pgid, pid_t pid, int *reaped, int *wstatus)
{
	if (!*reaped && waitpid(pid, wstatus, WNOHANG) == pid)
		*reaped = 1;
	return kill(-pgid, 0) == 0 || errno == EPERM;
}

static int boot_wait_gone(pid_t pid, double secs, int *reaped, int *wstatus)
{
	double t;

	for (t = 0; t < secs; t += 0.05) {
		if (!boot_group_alive(pid, pid, reaped, wstatus))
			return 1;
		boot_sleep(0.05);
	}
	return !boot_group_alive(pid, pid, reaped, wstatus);
}

/*
 * Stops the server's process group gracefully. Returns 1 when it is gone;
 * 0 when it is left running (res->fail_command says what to run).
 */
static int boot_stop(struct ab_ctx *c, pid_t pid, int *reaped, int *wstatus)
{
	const struct ab_opts *o = c->o;
	double wait = o->stop_timeout > 0 ? o->stop_timeout : AB_DEFAULT_STOP_TIMEOUT;
	int sig = o->stop_signal ? o->stop_signal : SIGINT;

	if (!boot_group_alive(pid, pid, reaped, wstatus))
		return 1;
	if (o->stop_cmd) {
		char num[32];
		int rc;

		snprintf(num, sizeof(num), "%ld", (long)pid);
		setenv("TTAUDIT_AB_PID", num, 1);
		ab_say(c, "stopping the server: %s", o->stop_cmd);
		rc = system(o->stop_cmd);
		unsetenv("TTAUDIT_AB_PID");
		if (rc != 0)
			ab_say(c, "stop command exited %d", rc);
	} else {
		ab_say(c, "stopping the server (process group %ld) with %s", (long)pid, strsignal(sig));
		kill(-pid, sig);
	}
	if (boot_wait_gone(pid, wait, reaped, wstatus))
		return 1;
	ab_say(c, "the server is still running after %g s: SIGTERM", wait);
	kill(-pid, SIGTERM);
	if (boot_wait_gone(pid, wait, reaped, wstatus))
		return 1;
	snprintf(c->res->fail_command, sizeof(c->res->fail_command),
		 "ps -o pid,stat,cmd -g %ld  # then, once it is safe for the device: kill -TERM -%ld",
		 (long)pid, (long)pid);
	return 0;
}

/* Waits for the port file and makes the URL. */
static int boot_url(struct ab_ctx *c, const struct ab_boot *b, pid_t pid, int *reaped, int *wstatus,
		  char *url, size_t n)
{
	double t, limit = c->o->ready_timeout > 0 ? c->o->ready_timeout : 600;
	long port;
	FILE *f;

	if (c->o->url) {
		snprintf(url, n, "%s", c->o->url);
		return 1;
	}
	for (t = 0; t < limit && !ab_signalled; t += 0.05) {
		f = fopen(b->port_file, "re");
		if (f) {
			int ok = fscanf(f, "%ld", &port) == 1 && port > 0 && port < 65536;

			fclose(f);
			if (ok) {
				snprintf(url, n, "http://127.0.0.1:%ld", port);
				return 1;
			}
		}
		if (!*reaped && waitpid(pid, wstatus, WNOHANG) == pid) {
			*reaped = 1;
			return 0;
		}
		boot_sleep(0.05);
	}
	return 0;
}

/* --- one boot --------------------------------------------------------------- */

static void boot_take_figures(struct ab_ctx *c, struct ab_boot *b, const struct pair *p)
{
	struct ab_role_result *rr = &c->res->role[b->role];
	size_t i, f, k = c->n_fig[b->role];
	double sum[AB_N_FIG] = { 0 };
	unsigned long long forgone = 0;
	size_t n = 0;

	rr->n_boots++;
	for (i = 0; i < pair_n_runs(p); i++) {
		const struct pair_run *r = pair_run_at(p, i);

		rr->merges += r->merges;
		rr->merges_subst += r->merges_subst;
		rr->taken += r->taken;
		rr->subst += r->subst;
		rr->subst_request += r->subst_by[EVIDENCE_REQUEST];
		rr->subst_stamp += r->subst_by[EVIDENCE_STAMP];
		rr->subst_lifetime += r->subst_by[EVIDENCE_LIFETIME];
		rr->subst_correct += r->n_subst_correct;
		if (r->tally && r->arm_rule != SIZE_MAX) {
			const struct tally_counts *tc = tally_counts(r->tally, r->arm_rule);

			rr->guard_known = true;
			rr->fired += tc->fired;
			rr->prevented += tc->prevented;
			rr->forgone += tc->forgone;
			rr->bare_taken += tc->bare_taken;
			if (strcmp(r->phase, "reference"))
				forgone += tc->forgone;
		}
		if (r->merges)
			snprintf(rr->arm_verdict, sizeof(rr->arm_verdict), "%s", r->arm_verdict);
		if (!strcmp(r->phase, "reference"))
			continue;
		rr->requests += r->n_correct;
		rr->failing += r->n_failing;
		rr->explained += r->n_explained;
		rr->possible += r->n_possible;
		rr->unexplained += r->n_unexplained;
		if (r->makespan >= 0) {
			sum[AB_MAKESPAN] += r->makespan;
			sum[AB_TTFT] += r->ttft_p50;
			sum[AB_ITL] += r->itl_p50;
			sum[AB_TOK_S] += r->out_tok_s;
			n++;
		}
	}
	if (k < AB_MAX_REPEATS) {
		for (f = 0; f < AB_N_FIG; f++)
			c->fig[b->role][f][k] = n ? sum[f] / (double)n : NAN;
		/* the forgone takes of the measured runs, whose time the figures are */
		rr->forgone_round[k] = forgone;
		c->n_fig[b->role]++;
	}
}

/* TTFT of the measured requests of a boot's records, for the CDF. */
static void boot_take_ttft(struct ab_ctx *c, const struct ab_boot *b)
{
	struct report_series ser[1];
	struct status_info si = { 0 };
	const char *paths[1] = { b->records };
	double **v = &c->ttft[b->role];
	size_t *n = &c->n_ttft[b->role], k, n_ser = 0;

	if (!*v && !(*v = calloc(AB_MAX_TTFT, sizeof(double))))
		return;
	if (report_series_read(paths, 1, ser, 1, &n_ser, &si)) {
		ab_say(c, "%s: no latency figure: %s", b->records, si.msg);
		return;
	}
	for (k = 0; n_ser && k < ser[0].n_ttft && *n < AB_MAX_TTFT; k++)
		(*v)[(*n)++] = ser[0].ttft[k];
	report_series_release(ser, n_ser);
}

/*
 * Host memory after a boot, against the record taken before it: memory that
 * does not come back is the signature of pinned pages outliving a process.
 * A warning, not a gate: the figures of the boot are not wrong for it.
 */
static void boot_memory_after(struct ab_ctx *c, const struct ab_boot *b)
{
	struct preflight_report *pr = calloc(1, sizeof(*pr));
	struct preflight_opts pf;
	struct status_info si = { 0 };
	size_t i;

	if (!pr)
		return;
	memset(&pf, 0, sizeof(pf));
	pf.skip_tenstorrent = true;
	pf.docker = "";
	pf.mem_floor_gib = c->o->mem_floor_gib;
	pf.record = c->mem_record;
	pf.phase = "after";
	pf.root = c->o->preflight_root;
	if (preflight_run(&pf, pr, &si)) {
		ab_say(c, "%s: host memory after the boot not read: %s", ab_role_name(b->role), si.msg);
	} else {
		for (i = 0; i < pr->n_checks; i++) {
			if (strcmp(pr->checks[i].name, "memory-delta") ||
			    pr->checks[i].result != PREFLIGHT_FAIL)
				continue;
			c->res->n_mem_warnings++;
			snprintf(c->res->mem_warning, sizeof(c->res->mem_warning), "%s boot %zu: %s",
				 ab_role_name(b->role), (size_t)(b - c->boots), pr->checks[i].detail);
			ab_say(c, "warning: %s (%s)", c->res->mem_warning, pr->checks[i].remedy);
		}
	}
	free(pr);
}

enum status boot_run(struct ab_ctx *c, struct ab_boot *b, struct status_info *si)
{
	const struct ab_opts *o = c->o;
	const char *arm = ab_role_arm(o, b->role);
	const char *serve = b->role == AB_SENSITIVITY && o->sensitivity_serve ? o->sensitivity_serve : o->serve;
	struct preflight_report *pr = NULL;
	struct lock *lk = NULL;
	struct driver_opts dopt;
	struct driver_report drep;
	struct pair *p = NULL;
	struct pair_opts po;
	const char *runs[1], *auds[1];
	char url[HTTP_MAX_URL];
	enum status st = STATUS_OK;
	int reaped = 0, wstatus = 0, stopped;
	bool drep_live = false;
	pid_t pid = -1;
	size_t i;

	memset(&drep, 0, sizeof(drep));
	ab_say(c, "boot %zu: %s, arm %s, round %u", (size_t)(b - c->boots), ab_role_name(b->role), arm,
	       b->round + 1);
	/* 1. preflight */
	if (!o->no_preflight) {
		struct preflight_opts pf;

		pr = calloc(1, sizeof(*pr));
		if (!pr) {
			st = status_set(si, STATUS_NOMEM, "out of memory");
			goto out;
		}
		memset(&pf, 0, sizeof(pf));
		pf.lock_dir = o->lock_dir ? o->lock_dir : LOCK_DEFAULT_DIR;
		pf.skip_tenstorrent = o->vendor_neutral;
		pf.docker = o->no_docker ? "" : NULL;
		pf.mem_floor_gib = o->mem_floor_gib;
		pf.record = c->mem_record;
		pf.phase = "before";
		pf.root = o->preflight_root;
		st = preflight_run(&pf, pr, si);
		if (st)
			goto out;
		if (!pr->ok) {
			for (i = 0; i < pr->n_checks; i++)
				if (pr->checks[i].result == PREFLIGHT_FAIL)
					break;
			ab_fail(c, "%s: preflight failed: %s: %s", ab_role_name(b->role),
				i < pr->n_checks ? pr->checks[i].name : "?",
				i < pr->n_checks ? pr->checks[i].detail : "");
			if (i < pr->n_checks)
				snprintf(c->res->fail_command, sizeof(c->res->fail_command), "%s",
					 pr->checks[i].remedy);
			goto out;
		}
	}
	/* 2. the host lock, taken at the first boot and held to the end of the
	 * A/B, so no other job runs on the host between two arms */
	if (!c->lock) {
		struct lock_owner holder;
		enum lock_state ls;
		struct status_info lsi = { 0 };

		c->lock = lock_new(o->lock_dir);
		if (!c->lock) {
			st = status_set(si, STATUS_USAGE, "bad lock directory");
			goto out;
		}
		if (lock_acquire(c->lock, "ttaudit ab", &holder, &ls, &lsi)) {
			ab_fail(c, "host lock %s is %s (pid %ld, %s): %s", lock_dir(c->lock), lock_state_name(ls),
				holder.pid, holder.command, lsi.msg);
			if (ls == LOCK_STALE)
				lock_remove_command(c->lock, c->res->fail_command, sizeof(c->res->fail_command));
			lock_free(c->lock);
			c->lock = NULL;
			goto out;
		}
	}
	lk = c->lock;
	/* 3. the server, under capture */
	unlink(b->port_file);
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		st = status_set(si, STATUS_CHILD, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		boot_child(c, b, serve);
	setpgid(pid, pid);   /* also done by the child's setsid; whichever runs first */
	ab_server_pgid = pid;
	if (!boot_url(c, b, pid, &reaped, &wstatus, url, sizeof(url))) {
		if (ab_signalled)
			ab_fail(c, "%s: interrupted by %s", ab_role_name(b->role), strsignal(ab_signalled));
		else
			ab_fail(c, "%s: the server did not write its port to %s (%s; log: %s)", ab_role_name(b->role),
			b->port_file, reaped ? "it exited" : "deadline passed", b->log);
		goto stop;
	}
	/* 4. readiness, arm confirmation, reference, correctness under load */
	memset(&dopt, 0, sizeof(dopt));
	dopt.n_arms = 1;
	dopt.arms[0].url = url;
	dopt.arms[0].arm = arm;
	dopt.arms[0].capture = b->capture;
	dopt.spec = o->spec;
	dopt.model = o->model;
	dopt.suite = o->suite;
	dopt.gen = o->gen;
	dopt.arrival = LOAD_CLOSED;
	dopt.levels[0] = o->concurrency;
	dopt.n_levels = 1;
	dopt.n_requests = o->n_requests;
	dopt.repeats = 1;
	dopt.correctness = true;
	dopt.corpus_seed = o->corpus_seed;
	dopt.temperature = 0;
	dopt.timeout_s = o->timeout_s > 0 ? o->timeout_s : 600;
	dopt.stall_s = 60;
	dopt.ready_timeout = o->ready_timeout;
	dopt.out = b->records;
	dopt.log_to = c->log;
	st = driver_run(&dopt, &drep, si);
	drep_live = true;
	if (ab_signalled) {
		st = STATUS_OK;
		ab_fail(c, "%s: interrupted by %s during the bench", ab_role_name(b->role),
			strsignal(ab_signalled));
		goto stop;
	}
	if (st)
		goto stop;
	if (drep.gate_failed) {
		ab_fail(c, "%s (arm %s): %s", ab_role_name(b->role), arm, drep.gate_message);
		if (drep.arm_report)
			fputs(drep.arm_report, c->log);
		goto stop;
	}
stop:
	/* 5. graceful stop; never SIGKILL */
	stopped = boot_stop(c, pid, &reaped, &wstatus);
	if (stopped)
		ab_server_pgid = 0;
	if (!stopped) {
		c->leave_lock = true;   /* a device process is still running: the lock stays */
		if (!c->res->failed)
			ab_fail(c, "%s: the server (process group %ld) did not stop after the stop signal "
				"and SIGTERM; it is left running and the host lock %s stays held",
				ab_role_name(b->role), (long)pid, lock_dir(lk));
		ab_say(c, "a person should check it and stop it: %s", c->res->fail_command);
		goto out;
	}
	if (!o->no_preflight)
		boot_memory_after(c, b);
	if (st || c->res->failed)
		goto out;
	/* 6. pair */
	memset(&po, 0, sizeof(po));
	runs[0] = b->records;
	auds[0] = b->capture;
	po.runs = runs;
	po.n_runs = 1;
	po.audits = auds;
	po.n_audits = 1;
	po.slack_s = -1;
	po.diag = c->log;
	st = pair_build(&po, &p, si);
	if (st)
		goto out;
	boot_take_figures(c, b, p);
	boot_take_ttft(c, b);
	{
		const struct ab_role_result *rr = &c->res->role[b->role];

		ab_say(c, "%s: %llu merges, %llu substitutions, %zu failing of %zu, arm verdict %s",
		       ab_role_name(b->role), rr->merges, rr->subst, rr->failing, rr->requests,
		       rr->arm_verdict[0] ? rr->arm_verdict : "no-audit");
		if (!strcmp(rr->arm_verdict, "contradicted")) {
			char rejected[AB_PATH + 16];

			/* its numbers are not the arm's: set aside, never published */
			snprintf(rejected, sizeof(rejected), "%s.rejected", b->records);
			rename(b->records, rejected);
			ab_fail(c, "%s: arm '%s' not engaged: the recorded merge decisions contradict it "
				"(its banner is no proof); its records are set aside as %s",
				ab_role_name(b->role), arm, rejected);
		}
	}
out:
	if (drep_live)
		driver_report_release(&drep);
	pair_free(p);
	free(pr);
	return st;
}
