/*
 * cmd_capture.c - `ttaudit capture` (preload the shim and exec a command)
 * and `ttaudit follow` (the host-side reader). Logic: capture/launch.c,
 * capture/follow.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/banner.h"
#include "cli/cli.h"
#include "capture/consume.h"
#include "capture/envlist.h"
#include "capture/follow.h"
#include "base/jsonw.h"
#include "capture/launch.h"
#include "base/opt.h"
#include "capture/supervise.h"

static const char *cap_out = "ttaudit.cap.jsonl", *cap_rules, *cap_env, *cap_watch;
static bool cap_all_lines, cap_per_pid, cap_append;

static const char *const capture_usage[] = {
	"capture [-o FILE] [--rules FILE] [--env PATTERNS] [--all-lines] [--watch GLOB] [--per-pid] "
	"[--append] -- CMD [ARGS...]",
	NULL,
};

static const struct opt capture_opts[] = {
	OPT_STRING('o', "output", &cap_out, "FILE", "capture file (default ttaudit.cap.jsonl), emptied first"),
	OPT_BOOL(0, "append", &cap_append, "keep what FILE holds and append"),
	OPT_STRING(0, "rules", &cap_rules, "FILE",
		   "banner rules, one 'NAME PCRE2-PATTERN' per line (default: the built-in vLLM, tt-metal "
		   "and guard-arm set)"),
	OPT_STRING(0, "env", &cap_env, "PATTERNS",
		   "more environment names to record, comma-separated globs (always: " ENVLIST_DEFAULT
		   "; values of secret-looking names are never recorded)"),
	OPT_BOOL(0, "all-lines", &cap_all_lines, "also record every other line (\"line\" records)"),
	OPT_STRING(0, "watch", &cap_watch, "GLOB", "also watch files whose path matches GLOB when opened for writing"),
	OPT_BOOL(0, "per-pid", &cap_per_pid, "one file per process: FILE.<pid>"),
	OPT_END(),
};

const struct cmd_doc cmd_capture_doc = {
	.name = "capture",
	.summary = "run a command with the capture shim preloaded (audit lines, banners)",
	.usage = capture_usage,
	.description =
		"Runs CMD with libttaudit-shim.so preloaded. Every process of CMD that keeps "
		"LD_PRELOAD is captured into FILE: a start record (argv, exe, host, allow-listed "
		"environment, the banner rules in force; secrets redacted), each merge-audit line and "
		"banner that reached fds 1 and 2 (and the watched files), lost and uncertain counts, "
		"and an end record that says how the process ended. The record of a line is written "
		"once its bytes reached the kernel, never before (docs/capture.md).\n"
		"\n"
		"ttaudit stays CMD's parent: it reads the records from shared memory while CMD runs, "
		"passes on the signals sent to it, waits for every process of the capture, and exits "
		"as CMD did (128+N for a signal N). FILE must be creatable, or a regular file you own "
		"(it is made 0600); otherwise CMD is not started.",
	.opts = capture_opts,
	.flags = CMD_OPTS_FIRST,
};

static const char *fol_out, *fol_rules;
static bool fol_all_lines, fol_once, fol_append, fol_json;
static long long fol_poll = 200;

static const char *const follow_usage[] = {
	"follow [-o FILE] [--rules FILE] [--all-lines] [--once] [--append] [--poll MS] [--json] PATH|-",
	NULL,
};

static const struct opt follow_opts[] = {
	OPT_STRING('o', "output", &fol_out, "FILE", "capture file (default: stdout), emptied first unless --append"),
	OPT_BOOL(0, "append", &fol_append, "keep what FILE holds and append"),
	OPT_STRING(0, "rules", &fol_rules, "FILE", "banner rules (as for capture)"),
	OPT_BOOL(0, "all-lines", &fol_all_lines, "also record every other line"),
	OPT_BOOL(0, "once", &fol_once, "stop at the end of PATH instead of waiting for more"),
	OPT_INT(0, "poll", &fol_poll, "MS", 1, 60000, "how often a quiet file is looked at (default 200)"),
	OPT_BOOL(0, "json", &fol_json, "the summary on stderr as one JSON object"),
	OPT_END(),
};

const struct cmd_doc cmd_follow_doc = {
	.name = "follow",
	.summary = "turn a server log file or stream into a capture file, like tail -F",
	.usage = follow_usage,
	.description =
		"Reads a server log from outside the process and writes the capture format: follows "
		"PATH by name like tail -F (from its start; waits for it to appear; survives rotation "
		"and truncation), or reads '-' (stdin) to its end. Records carry read times and no "
		"pid, tid or fd: what reached the file, without the process's side of it. SIGINT or "
		"SIGTERM end it cleanly with an end record. A summary goes to stderr.",
	.opts = follow_opts,
};

static void capture_warn(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "ttaudit capture: %s\n", msg);
}

int cmd_capture(int argc, char **argv)
{
	struct launch_opts lo = { 0 };
	struct consume_opts co = { .out_fd = -1 };
	struct supervise_opts so;
	struct banner_set *rules = NULL;
	struct consume *c = NULL;
	struct status_info si;
	char shim[4096], *out = NULL;
	enum status st;
	int n, fd = -1, wstatus = 0, bg = 0, rc = CLI_USAGE;

	n = cli_parse(&cmd_capture_doc, argc, argv,
		      &(const struct cli_operands){ 1, CLI_ANY,
						    "no command to run (ttaudit capture [options] -- CMD ...)", NULL },
		      &rc);
	if (n < 0)
		return rc;
	if (!*cap_out)
		return cli_usage_error("capture", "-o needs a file name");
	lo.out = cap_out;
	lo.rules = cap_rules;
	lo.env = cap_env;
	lo.watch = cap_watch;
	lo.all_lines = cap_all_lines;
	lo.per_pid = cap_per_pid;
	lo.append = cap_append;
	status_info_clear(&si);
	st = launch_find_shim(shim, sizeof(shim), &si);
	/* everything checked before the capture file is made: a refusal leaves no file behind */
	if (st == STATUS_OK)
		st = launch_check(&lo, &si);
	if (st == STATUS_OK && lo.rules)
		st = banner_set_load(lo.rules, &rules, &si);
	if (st == STATUS_OK && !rules && !(rules = banner_set_default()))
		st = status_set(&si, STATUS_NOMEM, "out of memory");
	if (st == STATUS_OK && !(out = launch_absolute(lo.out)))
		st = status_set(&si, STATUS_NOMEM, "cannot make '%s' absolute (current directory unreadable?)", lo.out);
	/* the capture file before anything runs: refused, the command never starts */
	supervise_ignore_xfsz();
	if (st == STATUS_OK)
		st = launch_capture_file(out, lo.append, lo.per_pid, &fd, &si);
	if (st == STATUS_OK) {
		co.out_fd = fd;
		co.out_path = out;
		co.warn = capture_warn;
		co.per_pid_base = lo.per_pid ? out : NULL;
		co.append = lo.append;
		co.rules = rules;
		co.rules_from = lo.rules;
		co.all_lines = lo.all_lines;
		st = consume_new(&co, &c, &si);
	}
	if (st == STATUS_OK) {
		lo.out = out;
		lo.opened = 1;
		lo.rings = consume_dir(c);
		st = launch_setup(&lo, shim, &si);
	}
	if (st != STATUS_OK) {
		cli_report_status("capture", st, &si);
		goto out;
	}
	argv[n] = NULL;   /* the operands were moved down: CMD's argv ends here */
	so.argv = argv;
	so.consume = c;
	so.background = &bg;
	st = supervise_run(&so, &wstatus, &si);
	if (bg < 0) {
		/* the reader in the background, done: the processes it read have all ended */
		consume_free(c);
		_exit(0);
	}
	if (bg > 0)
		consume_forget(c);
	else
		consume_free(c);
	c = NULL;
	if (st != STATUS_OK) {
		fprintf(stderr, "ttaudit capture: %s\n", si.msg);
		goto out;
	}
	rc = supervise_mirror(wstatus);
out:
	consume_free(c);
	if (fd >= 0)
		close(fd);
	banner_set_free(rules);
	free(out);
	return rc;
}

static volatile sig_atomic_t follow_stop;

static void follow_on_signal(int sig)
{
	(void)sig;
	follow_stop = 1;
}

int cmd_follow(int argc, char **argv)
{
	struct follow_opts fo = { .poll_ms = 200, .stop = &follow_stop };
	struct follow_stats fs;
	struct banner_set *rules = NULL;
	struct status_info si;
	struct sigaction sa;
	const char *out = NULL, *rules_path = NULL;
	int n, append, json, rc = CLI_USAGE, fd;
	FILE *f = NULL;
	enum status st;

	n = cli_parse(&cmd_follow_doc, argc, argv,
		      &(const struct cli_operands){ 1, 1, "give exactly one PATH, or '-' for stdin",
						    "give exactly one PATH, or '-' for stdin" },
		      &rc);
	if (n < 0)
		return rc;
	out = fol_out;
	rules_path = fol_rules;
	append = fol_append;
	json = fol_json;
	fo.all_lines = fol_all_lines;
	fo.once = fol_once;
	fo.poll_ms = (int)fol_poll;
	fo.path = argv[0];
	status_info_clear(&si);
	st = rules_path ? banner_set_load(rules_path, &rules, &si) : STATUS_OK;
	if (st == STATUS_OK && !rules) {
		rules = banner_set_default();
		if (!rules)
			st = status_set(&si, STATUS_NOMEM, "out of memory");
	}
	if (st != STATUS_OK) {
		cli_report_status("follow", st, &si);
		goto out;
	}
	if (out && strcmp(out, "-")) {
		fd = open(out, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (append ? O_APPEND : O_TRUNC), 0600);
		f = fd >= 0 ? fdopen(fd, append ? "a" : "w") : NULL;
		if (!f) {
			fprintf(stderr, "ttaudit follow: %s: cannot open: %s\n", out, strerror(errno));
			if (fd >= 0)
				close(fd);
			goto out;
		}
		fo.out = f;
	} else {
		fo.out = stdout;
	}
	fo.rules = rules;
	fo.rules_from = rules_path;
	fo.notes = stderr;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = follow_on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocked read of stdin must return to see the stop. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	st = follow_run(&fo, &fs, &si);
	if (json) {
		struct jsonw w;

		jsonw_init(&w, stderr);
		jsonw_obj(&w);
		jsonw_kuint(&w, "lines", fs.lines);
		jsonw_kuint(&w, "audit", fs.audit);
		jsonw_kuint(&w, "banner", fs.banner);
		jsonw_kuint(&w, "lost", fs.lost);
		jsonw_kuint(&w, "rotations", fs.rotations);
		jsonw_kuint(&w, "truncations", fs.truncations);
		jsonw_obj_end(&w);
	} else
		fprintf(stderr, "ttaudit follow: %s: %llu lines, %llu audit, %llu banner, %llu lost\n",
			fo.path, (unsigned long long)fs.lines, (unsigned long long)fs.audit,
			(unsigned long long)fs.banner, (unsigned long long)fs.lost);
	if (st != STATUS_OK) {
		cli_report_status("follow", st, &si);
		goto out;
	}
	rc = CLI_OK;
out:
	if (f && fclose(f) && rc == CLI_OK) {
		fprintf(stderr, "ttaudit follow: %s: cannot write: %s\n", out, strerror(errno));
		rc = CLI_USAGE;
	}
	banner_set_free(rules);
	return rc;
}
