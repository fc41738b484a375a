/*
 * ttaudit lock - hold the exclusive host lock for the duration of a command.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/jsonw.h"
#include "host/lock.h"
#include "base/opt.h"

static const char *lock_dir_opt;
static bool lock_status_only, lock_json;

static const char *const lock_usage[] = {
	"lock [--lock DIR] [--json] -- CMD [ARGS...]",
	"lock --status [--lock DIR] [--json]",
	NULL,
};

static const struct opt lock_opts[] = {
	OPT_STRING(0, "lock", &lock_dir_opt, "DIR", "lock directory (default " LOCK_DEFAULT_DIR ")"),
	OPT_BOOL(0, "status", &lock_status_only, "say who holds the lock, take nothing"),
	OPT_BOOL(0, "json", &lock_json, "the lock's state as JSON"),
	OPT_END(),
};

const struct cmd_doc cmd_lock_doc = {
	.name = "lock",
	.summary = "hold the exclusive host lock while a command runs (never steals)",
	.usage = lock_usage,
	.description = "Holds the exclusive host lock (a mkdir directory with owner, pid, start time and "
		"command) while CMD runs, and releases it when CMD ends or on SIGINT, SIGTERM or "
		"SIGHUP (forwarded to CMD; the handler exits, it does not return). A lock held by a "
		"live process is refused; a stale one is reported with the command to remove it by "
		"hand, and never taken over.\n"
		"\n"
		"The exit status is CMD's own when it ran.",
	.opts = lock_opts,
	.flags = CMD_OPTS_FIRST,
	.exit_notes = "the lock is held, stale or unreadable",
};

static void lock_print(const struct lock *l, enum lock_state s, const struct lock_owner *o, int json,
		       FILE *f)
{
	char rm[LOCK_PATH_MAX + 32];

	lock_remove_command(l, rm, sizeof(rm));
	if (json) {
		struct jsonw w;

		jsonw_init(&w, f);
		jsonw_obj(&w);
		jsonw_kstr(&w, "lock", lock_dir(l));
		jsonw_kstr(&w, "state", lock_state_name(s));
		if (s == LOCK_HELD || s == LOCK_STALE) {
			jsonw_kint(&w, "pid", o->pid);
			jsonw_kstr(&w, "user", o->user);
			jsonw_kstr(&w, "host", o->host);
			jsonw_kint(&w, "started", o->started);
			jsonw_kstr(&w, "command", o->command);
		}
		if (s == LOCK_STALE || s == LOCK_UNKNOWN)
			jsonw_kstr(&w, "remove_by_hand", rm);
		jsonw_obj_end(&w);
		return;
	}
	switch (s) {
	case LOCK_FREE:
		fprintf(f, "%s: free\n", lock_dir(l));
		break;
	case LOCK_HELD:
		fprintf(f, "%s: held by pid %ld (%s@%s) since %lld: %s\n", lock_dir(l), o->pid, o->user,
			o->host, o->started, o->command);
		break;
	case LOCK_STALE:
		fprintf(f, "%s: stale: pid %ld (%s) is not running; never taken over\n"
			"check that nothing still uses the cards, then remove it by hand: %s\n",
			lock_dir(l), o->pid, o->command, rm);
		break;
	default:
		fprintf(f, "%s: present but names no owner (being created, or damaged); "
			"if nobody is starting a run, remove it by hand: %s\n", lock_dir(l), rm);
		break;
	}
}

int cmd_lock(int argc, char **argv)
{
	const char *dir;
	struct status_info si = { 0 };
	struct lock_owner owner;
	enum lock_state state = LOCK_FREE;
	struct lock *l = NULL;
	char cmdline[1024];
	int n, json, code = 0, rc = CLI_USAGE, i;
	size_t off = 0;
	enum status st;

	n = cli_parse(&cmd_lock_doc, argc, argv, NULL, &rc);
	if (n < 0)
		return rc;
	dir = lock_dir_opt;
	json = lock_json;
	if (!lock_status_only && n == 0)
		return cli_usage_error("lock", "no command given (ttaudit lock -- CMD ...)");
	if (lock_status_only && n > 0)
		return cli_usage_error("lock", "--status takes no command");
	l = lock_new(dir);
	if (!l)
		return cli_usage_error("lock", "'%s' is not a usable lock path", dir ? dir : "");
	if (lock_status_only) {
		st = lock_inspect(l, &owner, &state, &si);
		if (st) {
			cli_report_status("lock", st, &si);
			goto out;
		}
		lock_print(l, state, &owner, json, stdout);
		rc = state == LOCK_FREE ? CLI_OK : CLI_FAIL;
		goto out;
	}
	cmdline[0] = '\0';
	for (i = 0; i < n && off < sizeof(cmdline); i++)
		off += (size_t)snprintf(cmdline + off, sizeof(cmdline) - off, "%s%s", i ? " " : "", argv[i]);
	argv[n] = NULL;
	st = lock_acquire(l, cmdline, &owner, &state, &si);
	if (st == STATUS_BUSY) {
		lock_print(l, state, &owner, json, json ? stdout : stderr);
		rc = CLI_FAIL;
		goto out;
	}
	if (st) {
		cli_report_status("lock", st, &si);
		goto out;
	}
	st = lock_run(l, argv, &code, &si);
	if (st) {
		cli_report_status("lock", st, &si);
		rc = code ? code : CLI_USAGE;
		goto out;
	}
	rc = code;
out:
	lock_free(l);
	return rc;
}
