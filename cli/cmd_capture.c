/*
 * cmd_capture.c - `ttaudit capture` (preload the shim and exec a command)
 * and `ttaudit follow` (the host-side reader). Logic: capture/launch.c,
 * capture/follow.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "banner.h"
#include "cli.h"
#include "consume.h"
#include "envlist.h"
#include "follow.h"
#include "launch.h"
#include "supervise.h"

static const char capture_usage[] =
	"usage: ttaudit capture [-o FILE] [--rules FILE] [--env PATTERNS] [--all-lines]\n"
	"                       [--watch GLOB] [--per-pid] [--append] -- CMD [ARGS...]\n"
	"\n"
	"Runs CMD with libttaudit-shim.so preloaded. Every process of CMD that keeps\n"
	"LD_PRELOAD writes to FILE: a start record (argv, exe, host, allow-listed\n"
	"environment; secrets redacted), each merge-audit line and banner that reached\n"
	"fds 1 and 2, lost and uncertain counts, and an end record. ttaudit stays CMD's\n"
	"parent, reads the records from shared memory while CMD runs, passes on signals\n"
	"sent to it, waits for every process of the capture, and exits as CMD did.\n"
	"FILE must be creatable, or a regular file you own (it is made 0600).\n"
	"\n"
	"  -o, --output FILE  capture file (default ttaudit.cap.jsonl), emptied first\n"
	"  --append           keep what FILE holds and append\n"
	"  --rules FILE       banner rules, one 'NAME PCRE2-PATTERN' per line\n"
	"                     (default: the built-in vLLM / tt-metal / guard-arm set)\n"
	"  --env PATTERNS     more environment names to record, comma-separated globs\n"
	"                     (always: " ENVLIST_DEFAULT ";\n"
	"                     values of secret-looking names are never recorded)\n"
	"  --all-lines        also record every other line (\"line\" records)\n"
	"  --watch GLOB       also watch files whose path matches GLOB when opened for writing\n"
	"  --per-pid          one file per process: FILE.<pid>\n";

static const char follow_usage[] =
	"usage: ttaudit follow [-o FILE] [--rules FILE] [--all-lines] [--once] [--append]\n"
	"                      [--poll MS] [--json] PATH|-\n"
	"\n"
	"Reads a server log from outside the process and writes the capture format:\n"
	"follows PATH by name like tail -F (from its start; waits for it to appear;\n"
	"survives rotation and truncation), or reads '-' (stdin) to its end. Records\n"
	"carry read times and no pid/tid/fd. SIGINT or SIGTERM end it cleanly with an\n"
	"end record. A summary goes to stderr (--json: as one JSON object).\n"
	"\n"
	"  -o, --output FILE  capture file (default: stdout), emptied first unless --append\n"
	"  --rules FILE       banner rules (as for capture)\n"
	"  --all-lines        also record every other line\n"
	"  --once             stop at the end of PATH instead of waiting for more\n"
	"  --poll MS          how often a quiet file is looked at (default 200)\n";

enum { OPT_RULES = 256, OPT_ENV, OPT_ALL_LINES, OPT_WATCH, OPT_PER_PID, OPT_APPEND, OPT_ONCE,
       OPT_POLL, OPT_JSON, OPT_HELP };

static const struct option capture_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "rules", required_argument, NULL, OPT_RULES },
	{ "env", required_argument, NULL, OPT_ENV },
	{ "all-lines", no_argument, NULL, OPT_ALL_LINES },
	{ "watch", required_argument, NULL, OPT_WATCH },
	{ "per-pid", no_argument, NULL, OPT_PER_PID },
	{ "append", no_argument, NULL, OPT_APPEND },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "poll", required_argument, NULL, OPT_POLL },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

/* FILE made absolute: the command may change directory. */
static char *capture_absolute(const char *p)
{
	char cwd[4096], *s;

	if (p[0] == '/')
		return strdup(p);
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	s = malloc(strlen(cwd) + strlen(p) + 2);
	if (s)
		sprintf(s, "%s/%s", cwd, p);
	return s;
}

int cmd_capture(int argc, char **argv)
{
	struct launch_opts lo = { .out = "ttaudit.cap.jsonl" };
	struct consume_opts co = { .out_fd = -1 };
	struct supervise_opts so;
	struct banner_set *rules = NULL;
	struct consume *c = NULL;
	struct status_info si;
	char shim[4096], *out = NULL;
	enum status st;
	int o, fd = -1, wstatus = 0, rc = CLI_USAGE;

	optind = 1;
	opterr = 0;
	/* '+': stop at CMD, whose own options are not ours. */
	while ((o = getopt_long(argc, argv, "+o:", capture_options, NULL)) != -1) {
		switch (o) {
		case 'o': lo.out = optarg; break;
		case OPT_RULES: lo.rules = optarg; break;
		case OPT_ENV: lo.env = optarg; break;
		case OPT_ALL_LINES: lo.all_lines = 1; break;
		case OPT_WATCH: lo.watch = optarg; break;
		case OPT_PER_PID: lo.per_pid = 1; break;
		case OPT_APPEND: lo.append = 1; break;
		case OPT_HELP: fputs(capture_usage, stdout); return CLI_OK;
		default:
			if (optopt == 'o' || (optopt >= OPT_RULES && optopt <= OPT_POLL))
				return cli_usage_error("capture", "option '%s' needs a value", argv[optind - 1]);
			return cli_usage_error("capture", "unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("capture", "no command to run (ttaudit capture [options] -- CMD ...)");
	if (!*lo.out)
		return cli_usage_error("capture", "-o needs a file name");
	status_info_clear(&si);
	st = launch_find_shim(shim, sizeof(shim), &si);
	if (st == STATUS_OK && lo.rules)
		st = banner_set_load(lo.rules, &rules, &si);
	if (st == STATUS_OK && !rules && !(rules = banner_set_default()))
		st = status_set(&si, STATUS_NOMEM, "out of memory");
	if (st == STATUS_OK && !(out = capture_absolute(lo.out)))
		st = status_set(&si, STATUS_NOMEM, "cannot make '%s' absolute (current directory unreadable?)", lo.out);
	/* the capture file before anything runs: refused, the command never starts */
	if (st == STATUS_OK)
		st = launch_capture_file(out, lo.append, lo.per_pid, &fd, &si);
	if (st == STATUS_OK) {
		co.out_fd = fd;
		co.per_pid_base = lo.per_pid ? out : NULL;
		co.append = lo.append;
		co.rules = rules;
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
	so.argv = argv + optind;
	so.consume = c;
	st = supervise_run(&so, &wstatus, &si);
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
	int o, append = 0, json = 0, rc = CLI_USAGE, fd;
	long long v;
	FILE *f = NULL;
	enum status st;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "o:", capture_options, NULL)) != -1) {
		switch (o) {
		case 'o': out = optarg; break;
		case OPT_RULES: rules_path = optarg; break;
		case OPT_ALL_LINES: fo.all_lines = 1; break;
		case OPT_ONCE: fo.once = 1; break;
		case OPT_APPEND: append = 1; break;
		case OPT_JSON: json = 1; break;
		case OPT_POLL:
			v = cli_parse_count(optarg);
			if (v < 1 || v > 60000)
				return cli_usage_error("follow", "--poll '%s' is not a number of milliseconds in 1..60000", optarg);
			fo.poll_ms = (int)v;
			break;
		case OPT_HELP: fputs(follow_usage, stdout); return CLI_OK;
		case OPT_ENV: case OPT_WATCH: case OPT_PER_PID:
			return cli_usage_error("follow", "'%s' is a capture option", argv[optind - 1]);
		default:
			return cli_usage_error("follow", "unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cli_usage_error("follow", "give exactly one PATH, or '-' for stdin");
	fo.path = argv[optind];
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
	fo.notes = stderr;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = follow_on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocked read of stdin must return to see the stop. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	st = follow_run(&fo, &fs, &si);
	if (json)
		fprintf(stderr, "{\"lines\":%llu,\"audit\":%llu,\"banner\":%llu,\"lost\":%llu,"
			"\"rotations\":%llu,\"truncations\":%llu}\n",
			(unsigned long long)fs.lines, (unsigned long long)fs.audit,
			(unsigned long long)fs.banner, (unsigned long long)fs.lost,
			(unsigned long long)fs.rotations, (unsigned long long)fs.truncations);
	else
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
