#include "ab.h"

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

#include "arms.h"
#include "driver.h"
#include "html.h"
#include "http.h"
#include "jsonw.h"
#include "launch.h"
#include "lock.h"
#include "outfile.h"
#include "pair.h"
#include "series.h"
#include "preflight.h"
#include "rate.h"
#include "rule.h"
#include "svg.h"

#define AB_MAX_ENV 64
#define AB_PATH 1024
#define AB_MAX_TTFT 100000u   /* TTFT values kept per role for the CDF */

const char *ab_fig_name(enum ab_fig f)
{
	switch (f) {
	case AB_MAKESPAN: return "makespan";
	case AB_TTFT: return "ttft_p50";
	case AB_ITL: return "itl_p50";
	case AB_TOK_S: return "tok_s";
	default: return "?";
	}
}

const char *ab_role_name(enum ab_role r)
{
	switch (r) {
	case AB_CONTROL: return "control";
	case AB_TREATMENT: return "treatment";
	case AB_NEGATIVE: return "negative-control";
	case AB_SENSITIVITY: return "sensitivity";
	default: return "?";
	}
}

/*
 * SIGINT/SIGTERM/SIGHUP during an A/B: the handler passes the stop signal
 * on to the server's process group, so the bench in progress ends with
 * failed requests and the boot goes on to its graceful stop and the lock's
 * release; the A/B then stops with FAIL. Exiting from the handler would
 * leave a device process running and the lock held. A second signal ends
 * ttaudit at once (the lock then reads as stale: the safe direction).
 */
static volatile sig_atomic_t ab_signalled;
static volatile pid_t ab_server_pgid;
static volatile int ab_server_signal = SIGINT;

static void ab_on_signal(int sig)
{
	int saved = errno;

	if (ab_signalled) {
		/* a second signal: out now; the lock stays and reads as stale */
		signal(sig, SIG_DFL);
		raise(sig);
	}
	ab_signalled = sig;
	if (ab_server_pgid > 0)
		kill(-ab_server_pgid, ab_server_signal);
	errno = saved;
}

struct ab_env {
	char *name[AB_MAX_ENV], *value[AB_MAX_ENV];
	size_t n;
};

struct ab_boot {
	enum ab_role role;
	unsigned round;
	char capture[AB_PATH], records[AB_PATH], log[AB_PATH], port_file[AB_PATH];
};

struct ab_ctx {
	const struct ab_opts *o;
	struct ab_result *res;
	FILE *log;
	struct arm_spec *spec;
	struct ab_env env[AB__ROLES];        /* each role's arm environment */
	struct ab_env all;                   /* every variable any arm sets (names only) */
	struct ab_boot boots[AB_MAX_BOOTS];
	size_t n_boots;
	double fig[AB__ROLES][AB_N_FIG][AB_MAX_REPEATS];   /* enum ab_fig, per round */
	size_t n_fig[AB__ROLES];
	double *ttft[AB__ROLES];
	size_t n_ttft[AB__ROLES];
	char shim[AB_PATH];
	char mem_record[AB_PATH];            /* host memory before and after each boot */
	struct lock *lock;                   /* the host lock, held from the first boot */
	bool leave_lock;                     /* a server was left running: keep the lock */
};

static void ab_say(struct ab_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ab_say(struct ab_ctx *c, const char *fmt, ...)
{
	va_list ap;

	fputs("ab: ", c->log);
	va_start(ap, fmt);
	vfprintf(c->log, fmt, ap);
	va_end(ap);
	fputc('\n', c->log);
	fflush(c->log);
}

static void ab_fail(struct ab_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ab_fail(struct ab_ctx *c, const char *fmt, ...)
{
	va_list ap;

	c->res->failed = true;
	va_start(ap, fmt);
	vsnprintf(c->res->fail_message, sizeof(c->res->fail_message), fmt, ap);
	va_end(ap);
	ab_say(c, "FAIL: %s", c->res->fail_message);
}

static const char *ab_role_arm(const struct ab_opts *o, enum ab_role r)
{
	return r == AB_TREATMENT ? o->treatment : r == AB_SENSITIVITY ? o->sensitivity : o->control;
}

/* --- the arm environment ------------------------------------------------- */

static void ab_env_release(struct ab_env *e)
{
	size_t i;

	for (i = 0; i < e->n; i++) {
		free(e->name[i]);
		free(e->value[i]);
	}
	e->n = 0;
}

static enum status ab_env_load(struct ab_ctx *c, const char *arm, struct ab_env *e, struct status_info *si)
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
static void ab_child(struct ab_ctx *c, const struct ab_boot *b, const char *serve)
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

static void ab_sleep(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	nanosleep(&ts, NULL);
}

/* 1 while any process of the group is alive (the shell reaped or not). */
static int ab_group_alive(pid_t pgid, pid_t pid, int *reaped, int *wstatus)
{
	if (!*reaped && waitpid(pid, wstatus, WNOHANG) == pid)
		*reaped = 1;
	return kill(-pgid, 0) == 0 || errno == EPERM;
}

static int ab_wait_gone(pid_t pid, double secs, int *reaped, int *wstatus)
{
	double t;

	for (t = 0; t < secs; t += 0.05) {
		if (!ab_group_alive(pid, pid, reaped, wstatus))
			return 1;
		ab_sleep(0.05);
	}
	return !ab_group_alive(pid, pid, reaped, wstatus);
}

/*
 * Stops the server's process group gracefully. Returns 1 when it is gone;
 * 0 when it is left running (res->fail_command says what to run).
 */
static int ab_stop(struct ab_ctx *c, pid_t pid, int *reaped, int *wstatus)
{
	const struct ab_opts *o = c->o;
	double wait = o->stop_timeout > 0 ? o->stop_timeout : AB_DEFAULT_STOP_TIMEOUT;
	int sig = o->stop_signal ? o->stop_signal : SIGINT;

	if (!ab_group_alive(pid, pid, reaped, wstatus))
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
	if (ab_wait_gone(pid, wait, reaped, wstatus))
		return 1;
	ab_say(c, "the server is still running after %g s: SIGTERM", wait);
	kill(-pid, SIGTERM);
	if (ab_wait_gone(pid, wait, reaped, wstatus))
		return 1;
	snprintf(c->res->fail_command, sizeof(c->res->fail_command),
		 "ps -o pid,stat,cmd -g %ld  # then, once it is safe for the device: kill -TERM -%ld",
		 (long)pid, (long)pid);
	return 0;
}

/* Waits for the port file and makes the URL. */
static int ab_url(struct ab_ctx *c, const struct ab_boot *b, pid_t pid, int *reaped, int *wstatus,
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
		ab_sleep(0.05);
	}
	return 0;
}

/* --- one boot --------------------------------------------------------------- */

static void ab_take_figures(struct ab_ctx *c, struct ab_boot *b, const struct pair *p)
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
static void ab_take_ttft(struct ab_ctx *c, const struct ab_boot *b)
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
static void ab_memory_after(struct ab_ctx *c, const struct ab_boot *b)
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

static enum status ab_boot_run(struct ab_ctx *c, struct ab_boot *b, struct status_info *si)
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
		ab_child(c, b, serve);
	setpgid(pid, pid);   /* also done by the child's setsid; whichever runs first */
	ab_server_pgid = pid;
	if (!ab_url(c, b, pid, &reaped, &wstatus, url, sizeof(url))) {
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
	stopped = ab_stop(c, pid, &reaped, &wstatus);
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
		ab_memory_after(c, b);
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
	ab_take_figures(c, b, p);
	ab_take_ttft(c, b);
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

/* --- verdict ---------------------------------------------------------------- */

static int ab_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median of v[0..n) (the mean of the two middle ones for an even n); NAN for none. */
static double ab_median(const double *v, size_t n)
{
	double w[AB_MAX_REPEATS];
	size_t i, m = 0;

	for (i = 0; i < n && i < AB_MAX_REPEATS; i++)
		if (isfinite(v[i]))
			w[m++] = v[i];
	if (!m)
		return NAN;
	qsort(w, m, sizeof(double), ab_cmp);
	return m % 2 ? w[m / 2] : (w[m / 2 - 1] + w[m / 2]) / 2;
}

/*
 * The median of the paired relative differences (y_r - x_r) / x_r over the
 * rounds both have, with its order-statistic interval at conf.
 */
static void ab_paired(const double *x, size_t nx, const double *y, size_t ny, double conf,
		      double *med, double *lo, double *hi, double *coverage, size_t *rounds)
{
	double d[AB_MAX_REPEATS];
	size_t i, m = 0, k = 0;

	for (i = 0; i < nx && i < ny && i < AB_MAX_REPEATS; i++)
		if (isfinite(x[i]) && isfinite(y[i]) && x[i] > 0)
			d[m++] = (y[i] - x[i]) / x[i];
	*rounds = m;
	*med = *lo = *hi = NAN;
	*coverage = 0;
	if (!m)
		return;
	qsort(d, m, sizeof(double), ab_cmp);
	*med = m % 2 ? d[m / 2] : (d[m / 2 - 1] + d[m / 2]) / 2;
	rate_median_interval(m, conf, &k, coverage);
	if (m >= 2 && k >= 1) {
		*lo = d[k - 1];
		*hi = d[m - k];
	}
}

/* The guard effect (ab.h): the treatment against the control arm. */
static void ab_guard(const struct ab_judge_opts *jo, double conf, struct ab_result *res)
{
	const struct ab_role_result *ct = &res->role[AB_CONTROL], *ng = &res->role[AB_NEGATIVE];
	const struct ab_role_result *tr = &res->role[AB_TREATMENT];
	double alpha = (1 - conf) / 2, pm;
	char a[96], b[96];
	bool capped;
	size_t n = 0;

	res->ctl_merges = ct->merges + ng->merges;
	res->ctl_merges_subst = ct->merges_subst + ng->merges_subst;
	res->ctl_requests = ct->requests + ng->requests;
	res->ctl_failing = ct->failing + ng->failing;
	res->p_subst = rate_fisher(res->ctl_merges_subst, res->ctl_merges, tr->merges_subst, tr->merges);
	res->p_fail = rate_fisher(res->ctl_failing, res->ctl_requests, tr->failing, tr->requests);
	res->baseline = 0;
	res->baseline_from = NULL;
	if (jo->baseline > 0 && jo->baseline < 1) {
		res->baseline = jo->baseline;
		res->baseline_from = "--baseline";
	} else if (res->ctl_failing && res->ctl_requests) {
		res->baseline = (double)res->ctl_failing / (double)res->ctl_requests;
		res->baseline_from = "the control arm";
	}
	res->n_to_bound = res->baseline > 0 && res->baseline < 1 ? rate_n_to_bound(res->baseline, 1 - alpha) : 0;
	pm = res->ctl_merges ? (double)res->ctl_merges_subst / (double)res->ctl_merges : 0;
	res->n_detect_merges = pm > 0 && pm < 1 ? rate_n_to_detect(pm, 0, alpha, 0.8, 100000000, &capped) : 0;
	res->n_detect_requests = res->ctl_failing && res->baseline < 1 ?
		rate_n_to_detect((double)res->ctl_failing / (double)res->ctl_requests, 0, alpha, 0.8, 100000000,
				 &capped) : 0;
	res->guard_why[0] = '\0';
	if (tr->subst || tr->failing) {
		res->guard_verdict = "FAIL";
		snprintf(res->guard_why, sizeof(res->guard_why), "the treatment made %llu substitution(s) and "
			 "had %zu failing request(s)", tr->subst, tr->failing);
	} else if (!ct->subst && !ng->subst) {
		res->guard_verdict = "NOT SHOWN";
		snprintf(res->guard_why, sizeof(res->guard_why), "the control arm made no substitution on this "
			 "workload: the A/B cannot show what the guard prevents");
	} else {
		res->guard_verdict = "PASS";
		if (!(res->p_subst < 1 - conf)) {
			n += (size_t)snprintf(res->guard_why + n, sizeof(res->guard_why) - n,
					      "merges with a substitution, 0 of %llu against the control arm's %llu "
					      "of %llu: Fisher's exact test p = %.3g, not under %g; %s%llu merges "
					      "per arm would show it (power 80%%)", tr->merges, res->ctl_merges_subst,
					      res->ctl_merges, res->p_subst, 1 - conf,
					      res->n_detect_merges ? "about " : "more than ",
					      res->n_detect_merges ? (unsigned long long)res->n_detect_merges : 100000000ull);
		}
		if (res->ctl_failing && !(res->p_fail < 1 - conf) && n < sizeof(res->guard_why))
			n += (size_t)snprintf(res->guard_why + n, sizeof(res->guard_why) - n,
					      "%sfailing requests, 0 of %zu against the control arm's %zu of %zu: "
					      "Fisher's exact test p = %.3g, not under %g; %s%llu requests per "
					      "arm would show it", n ? "; " : "", tr->requests, res->ctl_failing,
					      res->ctl_requests, res->p_fail, 1 - conf,
					      res->n_detect_requests ? "about " : "more than ",
					      res->n_detect_requests ? (unsigned long long)res->n_detect_requests : 100000000ull);
		if (res->n_to_bound && tr->requests < res->n_to_bound && n < sizeof(res->guard_why))
			n += (size_t)snprintf(res->guard_why + n, sizeof(res->guard_why) - n,
					      "%s0 failing of %zu %s, not the baseline %s (%s); %llu requests "
					      "would", n ? "; " : "", tr->requests,
					      rate_describe(a, sizeof(a), 0, tr->requests, conf, 100, "%"),
					      rate_fmt(b, sizeof(b), res->baseline, 100, "%"), res->baseline_from,
					      (unsigned long long)res->n_to_bound);
		if (n)
			res->guard_verdict = "INCONCLUSIVE";
		else
			snprintf(res->guard_why, sizeof(res->guard_why), "the treatment made no substitution in "
				 "%llu merges and failed none of %zu requests, told apart from the control arm "
				 "(Fisher's exact test, merges p = %.3g)", tr->merges, tr->requests, res->p_subst);
	}
	res->guard_ok = !strcmp(res->guard_verdict, "PASS");
}

void ab_judge(const double fig[AB__ROLES][AB_N_FIG][AB_MAX_REPEATS], const size_t n_fig[AB__ROLES],
	      const struct ab_judge_opts *jo, struct ab_result *res)
{
	double sep = jo->separation > 0 ? jo->separation : AB_DEFAULT_SEPARATION;
	double conf = jo->confidence > 0 && jo->confidence < 1 ? jo->confidence : AB_DEFAULT_CONFIDENCE;
	double mk_sens[AB_MAX_REPEATS], fx[AB_MAX_REPEATS], d[AB_MAX_REPEATS];
	size_t f, r, k, n, nr = n_fig[AB_CONTROL] < n_fig[AB_TREATMENT] ? n_fig[AB_CONTROL] : n_fig[AB_TREATMENT];

	res->confidence = conf;
	for (r = 0; r < AB__ROLES; r++) {
		res->role[r].n_rounds = n_fig[r] < AB_MAX_REPEATS ? n_fig[r] : AB_MAX_REPEATS;
		for (f = 0; f < AB_N_FIG; f++) {
			res->role[r].med[f] = ab_median(fig[r][f], res->role[r].n_rounds);
			for (k = 0; k < res->role[r].n_rounds; k++)
				res->role[r].fig[f][k] = fig[r][f][k];
		}
	}
	ab_guard(jo, conf, res);
	for (f = 0; f < AB_N_FIG; f++) {
		struct ab_delta *x = &res->delta[f];
		double c;

		x->figure = ab_fig_name((enum ab_fig)f);
		x->control = res->role[AB_CONTROL].med[f];
		x->treatment = res->role[AB_TREATMENT].med[f];
		ab_paired(fig[AB_CONTROL][f], n_fig[AB_CONTROL], fig[AB_TREATMENT][f], n_fig[AB_TREATMENT], conf,
			  &x->delta, &x->lo, &x->hi, &x->coverage, &x->rounds);
		ab_paired(fig[AB_CONTROL][f], n_fig[AB_CONTROL], fig[AB_NEGATIVE][f], n_fig[AB_NEGATIVE], conf,
			  &x->neg_delta, &x->neg_lo, &x->neg_hi, &c, &n);
		/* the largest A vs A difference over the rounds: one quiet round proves nothing */
		x->floor = NAN;
		for (k = 0; k < n_fig[AB_CONTROL] && k < n_fig[AB_NEGATIVE] && k < AB_MAX_REPEATS; k++) {
			double a = fig[AB_CONTROL][f][k], b = fig[AB_NEGATIVE][f][k];
			double rel = a > 0 ? fabs(b - a) / a : NAN;

			if (isfinite(rel) && !(rel <= x->floor))
				x->floor = rel;
		}
		if (!isfinite(x->delta) || !isfinite(x->floor))
			x->verdict = "unknown";
		else if (!isfinite(x->lo) || !isfinite(x->hi))
			x->verdict = "WITHHELD";     /* one round: no interval */
		else if (x->lo >= -x->floor && x->hi <= x->floor)
			x->verdict = "flat, not a win";
		else if (x->lo > x->floor || x->hi < -x->floor)
			/* tokens/s: higher is better; the others: lower */
			x->verdict = (f == AB_TOK_S) == (x->lo > x->floor) ? "better" : "worse";
		else
			x->verdict = "WITHHELD";     /* the interval straddles the floor */
	}
	/* forgone takes as decode time: forgone x the treatment's ITL p50, per round */
	res->forgone_rounds = 0;
	for (k = 0; k < nr && k < AB_MAX_REPEATS; k++) {
		double itl = fig[AB_TREATMENT][AB_ITL][k], mk = fig[AB_CONTROL][AB_MAKESPAN][k];

		if (!res->role[AB_TREATMENT].guard_known || !isfinite(itl) || !(mk > 0))
			continue;
		fx[res->forgone_rounds] = (double)res->role[AB_TREATMENT].forgone_round[k] * itl;
		d[res->forgone_rounds] = fx[res->forgone_rounds] / mk;
		res->forgone_rounds++;
	}
	res->forgone_expected_s = ab_median(fx, res->forgone_rounds);
	res->forgone_expected_rel = ab_median(d, res->forgone_rounds);
	res->negative_delta = res->delta[AB_MAKESPAN].floor;
	res->sensitivity_delta = NAN;
	res->separation = NAN;
	res->cost_withheld = false;
	res->cost_reason[0] = '\0';
	if (jo->has_sensitivity) {
		for (k = n = 0; k < n_fig[AB_CONTROL] && k < n_fig[AB_SENSITIVITY] && k < AB_MAX_REPEATS; k++) {
			double a = fig[AB_CONTROL][AB_MAKESPAN][k], b = fig[AB_SENSITIVITY][AB_MAKESPAN][k];

			if (a > 0 && isfinite(b))
				mk_sens[n++] = fabs(b - a) / a;
		}
		res->sensitivity_delta = ab_median(mk_sens, n);
		res->separation = res->sensitivity_delta - res->negative_delta;
	}
	if (res->delta[AB_MAKESPAN].rounds < 2) {
		res->cost_withheld = true;
		snprintf(res->cost_reason, sizeof(res->cost_reason),
			 "%zu round: one pair of boots has no interval, and its difference cannot be told from "
			 "the noise between boots (--repeats %d at least)", res->delta[AB_MAKESPAN].rounds,
			 AB_DEFAULT_REPEATS);
	} else if (!jo->has_sensitivity) {
		res->cost_withheld = true;
		snprintf(res->cost_reason, sizeof(res->cost_reason),
			 "no sensitivity arm (--sensitivity): nothing shows this bench can see a %.0f%% effect",
			 sep * 100);
	} else if (!isfinite(res->separation) || res->separation < sep) {
		res->cost_withheld = true;
		snprintf(res->cost_reason, sizeof(res->cost_reason),
			 "the sensitivity arm moves makespan by %.1f%%, the negative control (A vs A) by "
			 "%.1f%%: separated by %.1f points, under the %.0f%% separation floor",
			 100 * res->sensitivity_delta, 100 * res->negative_delta, 100 * res->separation,
			 100 * sep);
	}
}

static void ab_verdict(struct ab_ctx *c)
{
	struct ab_judge_opts jo;
	size_t r;

	for (r = 0; r < AB__ROLES; r++)
		c->res->role[r].arm = ab_role_arm(c->o, (enum ab_role)r);
	jo.has_sensitivity = c->o->sensitivity != NULL;
	jo.separation = c->o->separation;
	jo.confidence = c->o->confidence;
	jo.baseline = c->o->baseline;
	ab_judge((const double (*)[AB_N_FIG][AB_MAX_REPEATS])c->fig, c->n_fig, &jo, c->res);
}

/* --- reports ---------------------------------------------------------------- */

static void ab_pct(FILE *f, double v)
{
	if (isfinite(v))
		fprintf(f, "%+.2f%%", 100 * v);
	else
		fputs("n/a", f);
}

/* "+2.10% to +9.90% (75%)", or "none (1 round)". */
static void ab_interval(FILE *f, double lo, double hi, double coverage, size_t rounds)
{
	if (!isfinite(lo) || !isfinite(hi)) {
		fprintf(f, "none (%zu round%s)", rounds, rounds == 1 ? "" : "s");
		return;
	}
	ab_pct(f, lo);
	fputs(" to ", f);
	ab_pct(f, hi);
	fprintf(f, " (%g%%)", 100 * coverage);
}

static void ab_write_md(struct ab_ctx *c, FILE *f)
{
	const struct ab_result *res = c->res;
	const struct ab_opts *o = c->o;
	const struct ab_role_result *tr = &res->role[AB_TREATMENT];
	double conf = res->confidence;
	char a[128], b[128], lv[16];
	size_t r, k;

	rate_level(lv, sizeof(lv), conf);
	fprintf(f, "# A/B: %s (control) vs %s (treatment)\n\n", o->control, o->treatment);
	fprintf(f, "Guard effect: **%s**. Cost: **%s**. %zu round%s; rates with %s Clopper-Pearson intervals, "
		"Fisher's exact test two-sided at %g.\n\n", res->guard_verdict,
		res->cost_withheld ? "WITHHELD" : "published", res->role[AB_CONTROL].n_rounds,
		res->role[AB_CONTROL].n_rounds == 1 ? "" : "s", lv, 1 - conf);
	fprintf(f, "%s: %s.\n\n", res->guard_verdict, res->guard_why);
	fprintf(f, "## Guard effect\n\n");
	fprintf(f, "| role | arm | boots | merges | merges with a substitution | substitutions (request/stamp/lifetime) "
		"| taken | fired | prevented | forgone | arm verdict |\n");
	fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (r = 0; r < AB__ROLES; r++) {
		const struct ab_role_result *x = &res->role[r];

		if (!x->n_boots)
			continue;
		fprintf(f, "| %s | %s | %zu | %llu | %llu of %llu: %s | %llu (%llu/%llu/%llu) | %llu | ",
			ab_role_name((enum ab_role)r), x->arm, x->n_boots, x->merges, x->merges_subst, x->merges,
			rate_describe(a, sizeof(a), x->merges_subst, x->merges, conf, 100, "%"), x->subst,
			x->subst_request, x->subst_stamp, x->subst_lifetime, x->taken);
		if (x->guard_known)
			fprintf(f, "%llu | %llu | %llu | ", x->fired, x->prevented, x->forgone);
		else
			fprintf(f, "n/a | n/a | n/a | ");
		fprintf(f, "%s |\n", x->arm_verdict[0] ? x->arm_verdict : "no-audit");
	}
	fprintf(f, "\nThe treatment against the control arm (its control and negative-control boots: one "
		"configuration): merges with a substitution %llu of %llu against %llu of %llu, Fisher's exact "
		"test p = %.3g.\n", tr->merges_subst, tr->merges, res->ctl_merges_subst, res->ctl_merges,
		res->p_subst);
	if (tr->guard_known)
		fprintf(f, "The treatment's guard fired on %llu of %llu merges (%s); it forwent %llu of %llu bare "
			"takes (%s).\n", tr->fired, tr->merges, rate_describe(a, sizeof(a), tr->fired, tr->merges,
									    conf, 100, "%"),
			tr->forgone, tr->bare_taken, rate_describe(b, sizeof(b), tr->forgone, tr->bare_taken, conf,
								   100, "%"));
	if (res->n_mem_warnings)
		fprintf(f, "\nHost memory did not come back after %zu boot(s): %s.\n", res->n_mem_warnings,
			res->mem_warning);
	fprintf(f, "\n## Correctness\n\n| role | failing of requests | rate | explained | possible | unexplained "
		"| substitutions with correct output |\n|---|---|---|---|---|---|---|\n");
	for (r = 0; r < AB__ROLES; r++) {
		const struct ab_role_result *x = &res->role[r];

		if (x->n_boots)
			fprintf(f, "| %s | %zu of %zu | %s | %zu | %zu | %zu | %zu |\n", ab_role_name((enum ab_role)r),
				x->failing, x->requests, rate_describe(a, sizeof(a), x->failing, x->requests, conf,
								       100, "%"),
				x->explained, x->possible, x->unexplained, x->subst_correct);
	}
	fprintf(f, "\nThe treatment against the control arm: failing requests %zu of %zu against %zu of %zu, "
		"Fisher's exact test p = %.3g.", tr->failing, tr->requests, res->ctl_failing, res->ctl_requests,
		res->p_fail);
	if (res->baseline > 0)
		fprintf(f, " Baseline %s per request (%s): the treatment's %zu of %zu %s; %llu requests rule it "
			"out.\n", rate_fmt(a, sizeof(a), res->baseline, 100, "%"), res->baseline_from, tr->failing,
			tr->requests, rate_describe(b, sizeof(b), tr->failing, tr->requests, conf, 100, "%"),
			(unsigned long long)res->n_to_bound);
	else
		fprintf(f, " No baseline: the control arm failed no request and none was given (--baseline).\n");
	fprintf(f, "\n## Cost\n\n");
	fprintf(f, "Each figure is the median over rounds of the paired difference (treatment - control) / "
		"control, both booted in the same round, with the order-statistic interval of that median "
		"(its real coverage in brackets: with 3 rounds it is the smallest and the largest difference, "
		"which cover the median 75%% of the time, not %s).\n", lv);
	fprintf(f, "Noise floor (the negative control, %s booted again in the same round, against the "
		"control; the largest difference over rounds): makespan %.2f%%, TTFT p50 %.2f%%, ITL p50 %.2f%%, "
		"tokens/s %.2f%%.\n", o->control, 100 * res->delta[AB_MAKESPAN].floor,
		100 * res->delta[AB_TTFT].floor, 100 * res->delta[AB_ITL].floor, 100 * res->delta[AB_TOK_S].floor);
	if (o->sensitivity)
		fprintf(f, "Sensitivity arm %s: makespan moved %.2f%% (median over rounds), separation from the "
			"negative control %.2f points (floor %.0f%%).\n", o->sensitivity, 100 * res->sensitivity_delta,
			100 * res->separation, 100 * (o->separation > 0 ? o->separation : AB_DEFAULT_SEPARATION));
	if (res->cost_withheld) {
		fprintf(f, "\n**WITHHELD**: %s. The treatment's cost is not published.\n", res->cost_reason);
	} else {
		fprintf(f, "\n| figure | control | treatment | paired difference | interval | negative control "
			"(A' - A) | noise floor | verdict |\n|---|---|---|---|---|---|---|---|\n");
		for (k = 0; k < AB_N_FIG; k++) {
			const struct ab_delta *d = &res->delta[k];

			fprintf(f, "| %s | %.4g | %.4g | ", d->figure, d->control, d->treatment);
			ab_pct(f, d->delta);
			fputs(" | ", f);
			ab_interval(f, d->lo, d->hi, d->coverage, d->rounds);
			fputs(" | ", f);
			ab_pct(f, d->neg_delta);
			fputs(", ", f);
			ab_interval(f, d->neg_lo, d->neg_hi, d->coverage, d->rounds);
			fprintf(f, " | %.2f%% | %s%s |\n", 100 * d->floor, d->verdict,
				!strcmp(d->verdict, "WITHHELD") ? ": the interval straddles the noise floor" : "");
		}
	}
	if (tr->guard_known) {
		fprintf(f, "\nForgone takes of the treatment per round:");
		for (k = 0; k < tr->n_rounds; k++)
			fprintf(f, " %llu", tr->forgone_round[k]);
		fprintf(f, ". At one ITL p50 of decode time each they would cost %.4g s, %.2f%% of the control's "
			"makespan (median over rounds)", res->forgone_expected_s, 100 * res->forgone_expected_rel);
		if (res->cost_withheld) {
			fprintf(f, "; the measured difference is withheld.\n");
		} else {
			fprintf(f, ", beside the measured makespan difference ");
			ab_pct(f, res->delta[AB_MAKESPAN].delta);
			fputs(" (interval ", f);
			ab_interval(f, res->delta[AB_MAKESPAN].lo, res->delta[AB_MAKESPAN].hi,
				    res->delta[AB_MAKESPAN].coverage, res->delta[AB_MAKESPAN].rounds);
			fputs(").\n", f);
		}
	}
	fprintf(f, "\n## Boots\n\n");
	for (k = 0; k < c->n_boots; k++)
		fprintf(f, "- %s r%u (%s): capture `%s`, records `%s`\n", ab_role_name(c->boots[k].role),
			c->boots[k].round + 1, ab_role_arm(o, c->boots[k].role), c->boots[k].capture,
			c->boots[k].records);
	fprintf(f, "\nFigures: `%s`, `%s`, `%s`, `%s`; the page: `%s` (ttaudit report html).\n", res->svg_timeline,
		res->svg_timeline_treatment, res->svg_latency, res->svg_makespan, res->report_html);
}

/* figure values of one role per round, by figure name */
static void ab_json_rounds(struct jsonw *w, const struct ab_role_result *x)
{
	static const char *const keys[AB_N_FIG] = { "makespan_s", "ttft_p50_s", "itl_p50_s", "output_tok_s" };
	size_t f, k;

	jsonw_key(w, "rounds");
	jsonw_obj(w);
	for (f = 0; f < AB_N_FIG; f++) {
		jsonw_key(w, keys[f]);
		jsonw_arr(w);
		for (k = 0; k < x->n_rounds; k++)
			jsonw_double(w, x->fig[f][k]);
		jsonw_arr_end(w);
	}
	if (x->guard_known) {
		jsonw_key(w, "forgone");
		jsonw_arr(w);
		for (k = 0; k < x->n_rounds; k++)
			jsonw_uint(w, x->forgone_round[k]);
		jsonw_arr_end(w);
	}
	jsonw_obj_end(w);
}

static void ab_write_json(struct ab_ctx *c, FILE *f)
{
	const struct ab_result *res = c->res;
	const struct ab_opts *o = c->o;
	double conf = res->confidence;
	struct jsonw w;
	size_t r, k;

	jsonw_init(&w, f);
	jsonw_obj(&w);
	jsonw_kstr(&w, "control", o->control);
	jsonw_kstr(&w, "treatment", o->treatment);
	jsonw_kstr(&w, "sensitivity", o->sensitivity);
	jsonw_kbool(&w, "failed", res->failed);
	jsonw_kstr(&w, "fail_message", res->failed ? res->fail_message : NULL);
	jsonw_kdouble(&w, "confidence", conf);
	jsonw_kuint(&w, "rounds", res->role[AB_CONTROL].n_rounds);
	jsonw_kstr(&w, "guard_verdict", res->guard_verdict);
	jsonw_kstr(&w, "guard_why", res->guard_why);
	jsonw_key(&w, "roles");
	jsonw_obj(&w);
	for (r = 0; r < AB__ROLES; r++) {
		const struct ab_role_result *x = &res->role[r];

		if (!x->n_boots)
			continue;
		jsonw_key(&w, ab_role_name((enum ab_role)r));
		jsonw_obj(&w);
		jsonw_kstr(&w, "arm", x->arm);
		jsonw_kuint(&w, "boots", x->n_boots);
		jsonw_kuint(&w, "merges", x->merges);
		jsonw_kuint(&w, "merges_with_substitution", x->merges_subst);
		jsonw_key(&w, "substitution_rate");
		rate_json(&w, x->merges_subst, x->merges, conf);
		jsonw_kuint(&w, "taken", x->taken);
		jsonw_kuint(&w, "substitutions", x->subst);
		jsonw_key(&w, "substitutions_by_evidence");
		jsonw_obj(&w);
		jsonw_kuint(&w, "request", x->subst_request);
		jsonw_kuint(&w, "stamp", x->subst_stamp);
		jsonw_kuint(&w, "lifetime", x->subst_lifetime);
		jsonw_obj_end(&w);
		if (x->guard_known) {
			jsonw_kuint(&w, "fired", x->fired);
			jsonw_key(&w, "fired_rate");
			rate_json(&w, x->fired, x->merges, conf);
			jsonw_kuint(&w, "prevented", x->prevented);
			jsonw_kuint(&w, "forgone", x->forgone);
			jsonw_kuint(&w, "bare_taken", x->bare_taken);
			jsonw_key(&w, "forgone_rate");
			rate_json(&w, x->forgone, x->bare_taken, conf);
		}
		jsonw_kstr(&w, "arm_verdict", x->arm_verdict[0] ? x->arm_verdict : "no-audit");
		jsonw_kuint(&w, "requests", x->requests);
		jsonw_kuint(&w, "failing", x->failing);
		jsonw_key(&w, "failing_rate");
		rate_json(&w, x->failing, x->requests, conf);
		jsonw_kuint(&w, "explained", x->explained);
		jsonw_kuint(&w, "possible", x->possible);
		jsonw_kuint(&w, "unexplained", x->unexplained);
		jsonw_kuint(&w, "substitutions_with_correct_output", x->subst_correct);
		jsonw_kdouble(&w, "makespan_s", x->med[AB_MAKESPAN]);
		jsonw_kdouble(&w, "ttft_p50_s", x->med[AB_TTFT]);
		jsonw_kdouble(&w, "itl_p50_s", x->med[AB_ITL]);
		jsonw_kdouble(&w, "output_tok_s", x->med[AB_TOK_S]);
		ab_json_rounds(&w, x);
		jsonw_obj_end(&w);
	}
	jsonw_obj_end(&w);
	jsonw_key(&w, "control_arm");
	jsonw_obj(&w);
	jsonw_key(&w, "substitution_rate");
	rate_json(&w, res->ctl_merges_subst, res->ctl_merges, conf);
	jsonw_key(&w, "failing_rate");
	rate_json(&w, res->ctl_failing, res->ctl_requests, conf);
	jsonw_obj_end(&w);
	jsonw_key(&w, "treatment_against_control");
	jsonw_obj(&w);
	jsonw_kdouble(&w, "substitution_fisher_p", res->p_subst);
	jsonw_kdouble(&w, "failing_fisher_p", res->p_fail);
	jsonw_kdouble(&w, "baseline", res->baseline > 0 ? res->baseline : NAN);
	jsonw_kstr(&w, "baseline_from", res->baseline_from);
	jsonw_kuint(&w, "requests_to_rule_out_baseline", res->n_to_bound);
	jsonw_kuint(&w, "merges_per_arm_to_detect", res->n_detect_merges);
	jsonw_kuint(&w, "requests_per_arm_to_detect", res->n_detect_requests);
	jsonw_obj_end(&w);
	jsonw_kuint(&w, "host_memory_warnings", res->n_mem_warnings);
	jsonw_kstr(&w, "host_memory_warning", res->n_mem_warnings ? res->mem_warning : NULL);
	jsonw_key(&w, "noise_floor");
	jsonw_obj(&w);
	for (k = 0; k < AB_N_FIG; k++)
		jsonw_kdouble(&w, res->delta[k].figure, res->delta[k].floor);
	jsonw_obj_end(&w);
	jsonw_kdouble(&w, "sensitivity_delta", res->sensitivity_delta);
	jsonw_kdouble(&w, "separation", res->separation);
	jsonw_kdouble(&w, "separation_floor", o->separation > 0 ? o->separation : AB_DEFAULT_SEPARATION);
	jsonw_kstr(&w, "cost_verdict", res->cost_withheld ? "WITHHELD" : "published");
	jsonw_kstr(&w, "cost_reason", res->cost_withheld ? res->cost_reason : NULL);
	jsonw_key(&w, "cost");
	if (res->cost_withheld) {
		jsonw_null(&w);
	} else {
		jsonw_arr(&w);
		for (k = 0; k < AB_N_FIG; k++) {
			const struct ab_delta *d = &res->delta[k];

			jsonw_obj(&w);
			jsonw_kstr(&w, "figure", d->figure);
			jsonw_kdouble(&w, "control", d->control);
			jsonw_kdouble(&w, "treatment", d->treatment);
			jsonw_kdouble(&w, "delta", d->delta);
			jsonw_kdouble(&w, "lo", d->lo);
			jsonw_kdouble(&w, "hi", d->hi);
			jsonw_kdouble(&w, "coverage", d->coverage);
			jsonw_kstr(&w, "interval", "order statistics of the median of paired differences");
			jsonw_kuint(&w, "rounds", d->rounds);
			jsonw_kdouble(&w, "negative_delta", d->neg_delta);
			jsonw_kdouble(&w, "negative_lo", d->neg_lo);
			jsonw_kdouble(&w, "negative_hi", d->neg_hi);
			jsonw_kdouble(&w, "noise_floor", d->floor);
			jsonw_kstr(&w, "verdict", d->verdict);
			jsonw_obj_end(&w);
		}
		jsonw_arr_end(&w);
	}
	jsonw_key(&w, "forgone_cost");
	if (res->role[AB_TREATMENT].guard_known) {
		jsonw_obj(&w);
		jsonw_kdouble(&w, "expected_s", res->forgone_expected_s);
		jsonw_kdouble(&w, "expected_relative", res->forgone_expected_rel);
		jsonw_kstr(&w, "model", "forgone takes x the treatment's ITL p50, median over rounds");
		jsonw_kdouble(&w, "measured_relative", res->cost_withheld ? NAN : res->delta[AB_MAKESPAN].delta);
		jsonw_obj_end(&w);
	} else {
		jsonw_null(&w);
	}
	jsonw_key(&w, "boots");
	jsonw_arr(&w);
	for (k = 0; k < c->n_boots; k++) {
		jsonw_obj(&w);
		jsonw_kstr(&w, "role", ab_role_name(c->boots[k].role));
		jsonw_kuint(&w, "round", c->boots[k].round);
		jsonw_kstr(&w, "arm", ab_role_arm(o, c->boots[k].role));
		jsonw_kstr(&w, "capture", c->boots[k].capture);
		jsonw_kstr(&w, "records", c->boots[k].records);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_key(&w, "figures");
	jsonw_arr(&w);
	jsonw_str(&w, res->svg_timeline);
	jsonw_str(&w, res->svg_timeline_treatment);
	jsonw_str(&w, res->svg_latency);
	jsonw_str(&w, res->svg_makespan);
	jsonw_arr_end(&w);
	jsonw_kstr(&w, "html", res->report_html[0] ? res->report_html : NULL);
	jsonw_obj_end(&w);
	fputc('\n', f);
}

/* The timeline of the first boot of a role into DIR/name. */
static enum status ab_timeline(struct ab_ctx *c, enum ab_role role, char *path, size_t n_path,
			       const char *name, struct status_info *si)
{
	const char *arm = ab_role_arm(c->o, role);
	struct svg_timeline_stats ts;
	struct svg_timeline_opts to;
	char title[256];
	enum status st;
	struct rule rl;
	size_t k;
	struct outfile of;

	for (k = 0; k < c->n_boots && c->boots[k].role != role; k++)
		;
	if (k == c->n_boots)
		return STATUS_OK;
	snprintf(path, n_path, "%s/%s", c->o->dir, name);
	if (outfile_open(&of, path, si))
		return STATUS_IO;
	memset(&to, 0, sizeof(to));
	to.to_step = -1;
	/* the recorded decisions; events without `taken` are read as the arm's
	 * rule, or bare for other names */
	to.fallback = rule_parse(arm, &rl, NULL) ? NULL : arm;
	snprintf(title, sizeof(title), "%s (%s), first boot", ab_role_name(role), arm);
	to.title = title;
	st = svg_timeline(of.f, c->boots[k].capture, &to, &ts, si);
	if (st)
		outfile_abort(&of);
	else
		st = outfile_commit(&of, si);
	return st;
}

static enum status ab_write(struct ab_ctx *c, struct status_info *si)
{
	struct ab_result *res = c->res;
	const char *dir = c->o->dir;
	struct svg_series s[AB__ROLES];
	struct outfile of;
	size_t n = 0, r;
	enum status st;

	/* timelines: the first boot of the control (its substitutions) and of
	 * the treatment (its guard rejects) */
	st = ab_timeline(c, AB_CONTROL, res->svg_timeline, sizeof(res->svg_timeline), "ab-timeline.svg", si);
	if (!st)
		st = ab_timeline(c, AB_TREATMENT, res->svg_timeline_treatment,
				 sizeof(res->svg_timeline_treatment), "ab-timeline-treatment.svg", si);
	if (st)
		return st;
	for (r = 0; r < AB__ROLES; r++)
		if (c->n_ttft[r]) {
			s[n].name = ab_role_name((enum ab_role)r);
			s[n].v = c->ttft[r];
			s[n].n = c->n_ttft[r];
			n++;
		}
	snprintf(res->svg_latency, sizeof(res->svg_latency), "%s/ab-latency.svg", dir);
	if (outfile_open(&of, res->svg_latency, si))
		return STATUS_IO;
	svg_cdf(of.f, "TTFT, measured requests, per role", "TTFT (s)", s, n);
	if (outfile_commit(&of, si))
		return STATUS_IO;
	n = 0;
	for (r = 0; r < AB__ROLES; r++)
		if (c->n_fig[r]) {
			s[n].name = ab_role_name((enum ab_role)r);
			s[n].v = c->fig[r][AB_MAKESPAN];
			s[n].n = c->n_fig[r];
			n++;
		}
	snprintf(res->svg_makespan, sizeof(res->svg_makespan), "%s/ab-makespan.svg", dir);
	if (outfile_open(&of, res->svg_makespan, si))
		return STATUS_IO;
	svg_repeats(of.f, "makespan per repeat, per role", "makespan (s)", s, n);
	if (outfile_commit(&of, si))
		return STATUS_IO;
	snprintf(res->report_html, sizeof(res->report_html), "%s/ab-report.html", dir);
	snprintf(res->report_md, sizeof(res->report_md), "%s/ab-report.md", dir);
	if (outfile_open(&of, res->report_md, si))
		return STATUS_IO;
	ab_write_md(c, of.f);
	if (outfile_commit(&of, si))
		return STATUS_IO;
	snprintf(res->report_json, sizeof(res->report_json), "%s/ab-report.json", dir);
	if (outfile_open(&of, res->report_json, si))
		return STATUS_IO;
	ab_write_json(c, of.f);
	if (outfile_commit(&of, si))
		return STATUS_IO;
	/* the page reads what was just written: one reading of the A/B, whoever draws it */
	{
		struct html_opts ho;
		struct html_stats hs;

		memset(&ho, 0, sizeof(ho));
		ho.input = dir;
		ho.to_step = -1;
		st = outfile_open(&of, res->report_html, si);
		if (st)
			return st;
		st = html_report(of.f, &ho, &hs, si);
		if (st)
			outfile_abort(&of);
		else
			st = outfile_commit(&of, si);
	}
	return st;
}

/* --- the whole A/B ------------------------------------------------------------ */

enum status ab_run(const struct ab_opts *o, struct ab_result *res, struct status_info *si)
{
	struct ab_ctx *c = NULL;
	struct sigaction old_int, old_term, old_hup;
	bool handlers = false;
	enum status st = STATUS_OK;
	unsigned r;
	size_t k;
	int role;

	memset(res, 0, sizeof(*res));
	if (!o->control || !o->treatment || !o->spec || !o->serve || !o->dir)
		return status_set(si, STATUS_USAGE, "control, treatment, spec, serve and dir are needed");
	if (o->repeats < 1 || o->repeats > AB_MAX_REPEATS)
		return status_set(si, STATUS_USAGE, "repeats must be 1 to %d", AB_MAX_REPEATS);
	if (o->concurrency < 1)
		return status_set(si, STATUS_USAGE, "concurrency must be at least 1");
	c = calloc(1, sizeof(*c));
	if (!c)
		return status_set(si, STATUS_NOMEM, "out of memory");
	c->o = o;
	c->res = res;
	c->log = o->log ? o->log : stderr;
	if (mkdir(o->dir, 0755) && errno != EEXIST) {
		st = status_set_at(si, STATUS_IO, o->dir, 0, 0, "cannot create: %s", strerror(errno));
		goto out;
	}
	snprintf(c->mem_record, sizeof(c->mem_record), "%s/host-memory.jsonl", o->dir);
	st = launch_find_shim(c->shim, sizeof(c->shim), si);
	if (st)
		goto out;
	st = arm_spec_load(o->spec, &c->spec, si);
	if (st)
		goto out;
	for (role = 0; role < AB__ROLES; role++) {
		const char *arm = ab_role_arm(o, (enum ab_role)role);

		if (!arm)
			continue;
		if (!arm_spec_has(c->spec, arm)) {
			st = status_set_at(si, STATUS_NOTFOUND, o->spec, 0, 0, "arm '%s' (%s) is not in the spec",
					   arm, ab_role_name((enum ab_role)role));
			goto out;
		}
		st = ab_env_load(c, arm, &c->env[role], si);
		if (st)
			goto out;
	}
	for (r = 0; r < o->repeats; r++)
		for (role = 0; role < AB__ROLES; role++) {
			struct ab_boot *b;

			if (role == AB_SENSITIVITY && !o->sensitivity)
				continue;
			b = &c->boots[c->n_boots];
			b->role = (enum ab_role)role;
			b->round = r;
			snprintf(b->capture, sizeof(b->capture), "%s/boot-%02zu-%s.cap.jsonl", o->dir, c->n_boots,
				 ab_role_name(b->role));
			snprintf(b->records, sizeof(b->records), "%s/boot-%02zu-%s.run.jsonl", o->dir, c->n_boots,
				 ab_role_name(b->role));
			snprintf(b->log, sizeof(b->log), "%s/boot-%02zu-%s.log", o->dir, c->n_boots,
				 ab_role_name(b->role));
			snprintf(b->port_file, sizeof(b->port_file), "%s/boot-%02zu.port", o->dir, c->n_boots);
			c->n_boots++;
		}
	ab_signalled = 0;
	ab_server_pgid = 0;
	ab_server_signal = o->stop_signal ? o->stop_signal : SIGINT;
	{
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = ab_on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		sigaction(SIGHUP, &sa, &old_hup);
		handlers = true;
	}
	for (k = 0; k < c->n_boots && !ab_signalled; k++) {
		snprintf(res->boots[k], sizeof(res->boots[k]), "%s r%u", ab_role_name(c->boots[k].role),
			 c->boots[k].round + 1);
		res->n_boots = k + 1;
		st = ab_boot_run(c, &c->boots[k], si);
		if (st || res->failed)
			goto out;
	}
	if (ab_signalled && !res->failed) {
		ab_fail(c, "interrupted by %s between boots", strsignal(ab_signalled));
		goto out;
	}
	ab_verdict(c);
	st = ab_write(c, si);
out:
	if (handlers) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGHUP, &old_hup, NULL);
	}
	if (c) {
		/* lock_free releases the lock; over a server left running it stays */
		if (c->lock && !c->leave_lock)
			lock_free(c->lock);
		for (role = 0; role < AB__ROLES; role++) {
			ab_env_release(&c->env[role]);
			free(c->ttft[role]);
		}
		ab_env_release(&c->all);
		arm_spec_free(c->spec);
		free(c);
	}
	return st;
}
