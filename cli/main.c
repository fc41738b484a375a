/*
 * main.c - ttaudit's entry point: a command table in the style of git.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

#include "cli.h"

struct cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct cli_cmd cli_commands[] = {
	{ "replay", cmd_replay, "replay merge audits against every guard rule and count" },
	{ "validate", cmd_validate, "gate a guard rule on an incident corpus before deployment" },
	{ "capture", cmd_capture, "run a command with the capture shim preloaded (audit lines, banners)" },
	{ "follow", cmd_follow, "turn a server log file or stream into a capture file, like tail -F" },
	{ "pair", cmd_pair, "join bench runs with their audits, attribute wrong outputs to substitutions" },
	{ "ab", cmd_ab, "validate a guard: control vs treatment under capture, noise floor, verdict" },
	{ "report", cmd_report, "SVG figures: slots x steps timeline of an audit, latency CDF, makespan" },
	{ "preflight", cmd_preflight, "check the host before a run: memory floor, lock, devices, holders" },
	{ "lock", cmd_lock, "hold the exclusive host lock while a command runs (never steals)" },
	{ "ready", cmd_ready, "wait until a server generates a real token, each rung timed" },
	{ "arm", cmd_arm, "confirm the engaged guard arm from the server's own output" },
	{ "bench", cmd_bench, "load a server: honest latency and throughput, correctness under load" },
};

#define N_COMMANDS (sizeof(cli_commands) / sizeof(cli_commands[0]))

static void main_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: ttaudit <command> [options] [args]\n\ncommands:\n");
	for (i = 0; i < N_COMMANDS; i++)
		fprintf(f, "  %-10s %s\n", cli_commands[i].name, cli_commands[i].summary);
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

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		main_usage(stderr);
		return CLI_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		main_usage(stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("ttaudit %s\n", TTAUDIT_VERSION);
		return CLI_OK;
	}
	for (i = 0; i < N_COMMANDS; i++)
		if (!strcmp(argv[1], cli_commands[i].name))
			return cli_commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "ttaudit: '%s' is not a command\n", argv[1]);
	main_usage(stderr);
	return CLI_USAGE;
}
