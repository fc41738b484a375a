/*
 * main.c - ttaudit's entry point: a command table in the style of git.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>

#include "cli/cli.h"
#include "base/opt.h"
#include "analyzer/reader.h"

struct cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const struct cmd_doc *doc;   /* the command's option table: its summary, help and man page */
};

static const struct cli_cmd cli_commands[] = {
	{ "replay", cmd_replay, &cmd_replay_doc },
	{ "validate", cmd_validate, &cmd_validate_doc },
	{ "capture", cmd_capture, &cmd_capture_doc },
	{ "follow", cmd_follow, &cmd_follow_doc },
	{ "pair", cmd_pair, &cmd_pair_doc },
	{ "ab", cmd_ab, &cmd_ab_doc },
	{ "report", cmd_report, &cmd_report_doc },
	{ "preflight", cmd_preflight, &cmd_preflight_doc },
	{ "lock", cmd_lock, &cmd_lock_doc },
	{ "ready", cmd_ready, &cmd_ready_doc },
	{ "arm", cmd_arm, &cmd_arm_doc },
	{ "plan", cmd_plan, &cmd_plan_doc },
	{ "passthrough", cmd_passthrough, &cmd_passthrough_doc },
	{ "watch", cmd_watch, &cmd_watch_doc },
	{ "combine", cmd_combine, &cmd_combine_doc },
	{ "bench", cmd_bench, &cmd_bench_doc },
};

#define N_COMMANDS (sizeof(cli_commands) / sizeof(cli_commands[0]))

static const struct cli_cmd *cli_find(const char *name)
{
	size_t i;

	for (i = 0; i < N_COMMANDS; i++)
		if (!strcmp(name, cli_commands[i].name))
			return &cli_commands[i];
	return NULL;
}

static void main_usage(FILE *f)
{
	size_t i;
	int w = 0;

	for (i = 0; i < N_COMMANDS; i++)
		if ((int)strlen(cli_commands[i].name) > w)
			w = (int)strlen(cli_commands[i].name);
	fprintf(f, "usage: ttaudit <command> [options] [args]\n\ncommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-*s  %s\n", w, cli_commands[i].name, cli_commands[i].doc->summary);
	fprintf(f, "\n'ttaudit <command> --help' shows a command's options.\n"
		   "exit codes: 0 ok, 1 a verdict failed, 2 bad usage or input\n");
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ttaudit %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_USAGE;
}

void cli_report_status(const char *cmd, enum status st, const struct status_info *si)
{
	char buf[1024];

	if (si && si->msg[0])
		fprintf(stderr, "ttaudit %s: %s\n", cmd, status_info_format(si, buf, sizeof(buf)));
	else
		fprintf(stderr, "ttaudit %s: %s\n", cmd, status_strerror(st));
}

/* "'x' is not a command", with the nearest name when it looks like a typo. */
static int main_unknown(const char *name)
{
	const char *names[N_COMMANDS + 1];
	const char *near;
	size_t i;

	for (i = 0; i < N_COMMANDS; i++)
		names[i] = cli_commands[i].name;
	names[N_COMMANDS] = "help";
	near = opt_nearest(name, names, N_COMMANDS + 1);
	if (near)
		fprintf(stderr, "ttaudit: '%s' is not a command; did you mean '%s'?\n", name, near);
	else
		fprintf(stderr, "ttaudit: '%s' is not a command\n", name);
	fprintf(stderr, "see 'ttaudit help' for the list\n");
	return CLI_USAGE;
}

long long cli_parse_count(const char *s)
{
	char *end;
	long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return -1;
	return v;
}

/* The man page, ttaudit.1, from every command's table (make builds it). */
static void main_man(FILE *f)
{
	size_t i;

	fprintf(f, ".TH TTAUDIT 1 \"\" \"ttaudit %s\" \"User Commands\"\n", TTAUDIT_VERSION);
	fputs(".SH NAME\nttaudit \\- replay merge audits, capture servers, benchmark guards\n"
	      ".SH SYNOPSIS\n\\fBttaudit\\fR \\fIcommand\\fR [\\fIoptions\\fR] [\\fIargs\\fR]\n"
	      ".SH DESCRIPTION\n"
	      "ttaudit is a toolkit for the engineers who serve LLMs with vLLM on Tenstorrent "
	      "hardware: it replays merge audits of the async-ahead token keep against every "
	      "guard rule, captures what a server really printed and had in its environment, "
	      "and benchmarks guards with verdicts that fail closed.\n"
	      ".SH COMMANDS\n", f);
	for (i = 0; i < N_COMMANDS; i++)
		opt_man(cli_commands[i].doc, f);
	fputs(".SH EXIT STATUS\n0 ok, every verdict passed; 1 a verdict failed; 2 bad usage or input.\n"
	      ".SH SEE ALSO\nREADME.md and docs/*.md of the ttaudit distribution.\n", f);
}

/* `ttaudit help [CMD]`, `ttaudit help --man`, `ttaudit help --synopsis CMD`. */
static int main_help(int argc, char **argv)
{
	const struct cli_cmd *c;

	if (argc < 2) {
		main_usage(stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "--man")) {
		main_man(stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "--synopsis") && argc == 3) {
		c = cli_find(argv[2]);
		if (!c)
			return cli_usage_error("help", "no synopsis for '%s'", argv[2]);
		opt_synopsis(c->doc, stdout);
		return CLI_OK;
	}
	c = cli_find(argv[1]);
	if (!c)
		return main_unknown(argv[1]);
	opt_help(c->doc, stdout);
	return CLI_OK;
}

/*
 * SIGBUS from an input read in place that shrank under the reader (a log
 * truncated by logrotate's copytruncate): no report comes from half a file;
 * the file is named and the exit status is 2 (bad input), as for any input
 * that cannot be read whole. Any other SIGBUS is a real fault and is raised
 * again with the default action. Only async-signal-safe calls here.
 */
static void main_sigbus(int sig, siginfo_t *info, void *uc)
{
	static const char a[] = "ttaudit: ", b[] = ": the file shrank while it was read "
		"(truncated in place, as logrotate's copytruncate does); no report. "
		"Read a file that may be truncated through stdin: ttaudit replay - < FILE\n";
	const char *path = info ? audit_reader_fault(info->si_addr) : NULL;
	ssize_t w;

	(void)uc;
	if (!path) {
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	w = write(2, a, sizeof(a) - 1);
	w = write(2, path, strlen(path));
	w = write(2, b, sizeof(b) - 1);
	(void)w;
	_exit(CLI_USAGE);
}

int main(int argc, char **argv)
{
	const struct cli_cmd *c;
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = main_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);

	if (argc < 2) {
		main_usage(stderr);
		return CLI_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		main_usage(stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "help"))
		return main_help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("ttaudit %s\n", TTAUDIT_VERSION);
		return CLI_OK;
	}
	c = cli_find(argv[1]);
	if (c)
		return c->fn(argc - 1, argv + 1);
	return main_unknown(argv[1]);
}
