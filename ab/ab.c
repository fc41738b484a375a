/*
 * ab.c - the whole A/B of ab.h: the arms' environments, the boots in their
 * interleaved order under the host lock, the stop signal passed on to the
 * server, then the verdict (verdict.c) and the reports (abreport.c). One
 * boot is boot.c.
 */
#include "ab/ab.h"
#include "ab/abctx.h"
#include "ab/abreport.h"
#include "ab/boot.h"
#include "ab/verdict.h"

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

#include "ab/ab.h"

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
volatile sig_atomic_t ab_signalled;
volatile pid_t ab_server_pgid;
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

void ab_say(struct ab_ctx *c, const char *fmt, ...)
{
	va_list ap;

	fputs("ab: ", c->log);
	va_start(ap, fmt);
	vfprintf(c->log, fmt, ap);
	va_end(ap);
	fputc('\n', c->log);
	fflush(c->log);
}

void ab_fail(struct ab_ctx *c, const char *fmt, ...)
{
	va_list ap;

	c->res->failed = true;
	va_start(ap, fmt);
	vsnprintf(c->res->fail_message, sizeof(c->res->fail_message), fmt, ap);
	va_end(ap);
	ab_say(c, "FAIL: %s", c->res->fail_message);
}

const char *ab_role_arm(const struct ab_opts *o, enum ab_role r)
{
	return r == AB_TREATMENT ? o->treatment : r == AB_SENSITIVITY ? o->sensitivity : o->control;
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
	verdict_judge((const double (*)[AB_N_FIG][AB_MAX_REPEATS])c->fig, c->n_fig, &jo, c->res);
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
		st = boot_env_load(c, arm, &c->env[role], si);
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
		st = boot_run(c, &c->boots[k], si);
		if (st || res->failed)
			goto out;
	}
	if (ab_signalled && !res->failed) {
		ab_fail(c, "interrupted by %s between boots", strsignal(ab_signalled));
		goto out;
	}
	ab_verdict(c);
	st = abreport_write(c, si);
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
			boot_env_release(&c->env[role]);
			free(c->ttft[role]);
		}
		boot_env_release(&c->all);
		arm_spec_free(c->spec);
		free(c);
	}
	return st;
}
