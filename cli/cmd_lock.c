/*
 * ttaudit lock - hold the exclusive host lock for the duration of a command.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "lock.h"

static void lock_usage(FILE *f)
{
	fprintf(f,
		"usage: ttaudit lock [--lock DIR] [--json] -- CMD [ARGS...]\n"
		"       ttaudit lock --status [--lock DIR] [--json]\n"
		"  --lock DIR   lock directory (default " LOCK_DEFAULT_DIR ")\n"
		"  --status     say who holds the lock, take nothing\n"
		"A held or stale lock is never taken over: a stale one is reported with the\n"
		"command to remove it by hand.\n"
		"exit: CMD's own status; 1 when the lock is held, stale or unreadable; 2 bad usage\n");
}

static void lock_print(const struct lock *l, enum lock_state s, const struct lock_owner *o, int json,
		       FILE *f)
{
	char rm[LOCK_PATH_MAX + 32];

	lock_remove_command(l, rm, sizeof(rm));
	if (json) {
		cJSON *root = cJSON_CreateObject();
		char *txt;

		if (!root)
			return;
		cJSON_AddStringToObject(root, "lock", lock_dir(l));
		cJSON_AddStringToObject(root, "state", lock_state_name(s));
		if (s == LOCK_HELD || s == LOCK_STALE) {
			cJSON_AddNumberToObject(root, "pid", (double)o->pid);
			cJSON_AddStringToObject(root, "user", o->user);
			cJSON_AddStringToObject(root, "host", o->host);
			cJSON_AddNumberToObject(root, "started", (double)o->started);
			cJSON_AddStringToObject(root, "command", o->command);
		}
		if (s == LOCK_STALE || s == LOCK_UNKNOWN)
			cJSON_AddStringToObject(root, "remove_by_hand", rm);
		txt = cJSON_Print(root);
		if (txt)
			fprintf(f, "%s\n", txt);
		cJSON_free(txt);
		cJSON_Delete(root);
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
	static const struct option opts[] = {
		{ "lock", required_argument, NULL, 'l' },
		{ "status", no_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *dir = NULL;
	struct status_info si = { 0 };
	struct lock_owner owner;
	enum lock_state state = LOCK_FREE;
	struct lock *l = NULL;
	char cmdline[1024];
	int c, json = 0, status_only = 0, code = 0, rc = CLI_USAGE, i;
	size_t off = 0;
	enum status st;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'l': dir = optarg; break;
		case 's': status_only = 1; break;
		case 'j': json = 1; break;
		case 'h': lock_usage(stdout); return CLI_OK;
		default: lock_usage(stderr); return CLI_USAGE;
		}
	}
	if (!status_only && optind >= argc)
		return cli_usage_error("lock", "no command given (ttaudit lock -- CMD ...)");
	if (status_only && optind < argc)
		return cli_usage_error("lock", "--status takes no command");
	l = lock_new(dir);
	if (!l)
		return cli_usage_error("lock", "'%s' is not a usable lock path", dir ? dir : "");
	if (status_only) {
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
	for (i = optind; i < argc && off < sizeof(cmdline); i++)
		off += (size_t)snprintf(cmdline + off, sizeof(cmdline) - off, "%s%s", i > optind ? " " : "",
					argv[i]);
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
	st = lock_run(l, argv + optind, &code, &si);
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
