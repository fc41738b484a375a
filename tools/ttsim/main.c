/*
 * main.c - ttsim's command line: the command table (cmd.h) and what is
 * about all of them (usage, `help [--synopsis] CMD`, --version). `ttsim
 * engine-core` is the engine process `ttsim serve` starts (enginecore.h),
 * not a command for people: the list leaves it out.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tools/ttsim/cmd.h"
#include "tools/ttsim/enginecore.h"

#ifndef TTAUDIT_VERSION
#define TTAUDIT_VERSION "0"
#endif

static const struct {
	const struct cmd_doc *doc;
	int (*fn)(int argc, char **argv);
} main_cmds[] = {
	{ &ttsim_cmd_serve_doc, ttsim_cmd_serve },
	{ &ttsim_cmd_run_doc, ttsim_cmd_run },
};

#define MAIN_N_CMDS (sizeof(main_cmds) / sizeof(main_cmds[0]))

static void main_usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: ttsim <command> [options]\n\ncommands:\n");
	for (i = 0; i < MAIN_N_CMDS; i++)
		fprintf(f, "  %-7s %s\n", main_cmds[i].doc->name, main_cmds[i].doc->summary);
	fprintf(f, "\n'ttsim <command> --help' shows a command's options.\n");
}

static const struct cmd_doc *main_find(const char *name)
{
	size_t i;

	for (i = 0; i < MAIN_N_CMDS; i++)
		if (!strcmp(name, main_cmds[i].doc->name))
			return main_cmds[i].doc;
	return NULL;
}

/* `ttsim help`, `ttsim help CMD` (its --help), `ttsim help --synopsis CMD`
 * (the lines README.md's synopsis blocks hold, tests/doc/run-examples.py). */
static int main_help(int argc, char **argv)
{
	const struct cmd_doc *d;
	bool synopsis = argc == 3 && !strcmp(argv[1], "--synopsis");

	if (argc == 1) {
		main_usage(stdout);
		return 0;
	}
	if (argc != 2 && !synopsis) {
		fprintf(stderr, "usage: ttsim help [--synopsis] [COMMAND]\n");
		return 2;
	}
	d = main_find(argv[argc - 1]);
	if (!d) {
		fprintf(stderr, "ttsim help: '%s' is not a command\n", argv[argc - 1]);
		main_usage(stderr);
		return 2;
	}
	if (synopsis)
		opt_synopsis(d, stdout);
	else
		opt_help(d, stdout);
	return 0;
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		main_usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		main_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "help"))
		return main_help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version")) {
		printf("ttsim %s\n", TTAUDIT_VERSION);
		return 0;
	}
	for (i = 0; i < MAIN_N_CMDS; i++)
		if (!strcmp(argv[1], main_cmds[i].doc->name))
			return main_cmds[i].fn(argc - 1, argv + 1);
	if (!strcmp(argv[1], "engine-core"))
		return ttsim_enginecore_main(argc > 2 ? argv[2] : NULL);
	fprintf(stderr, "ttsim: '%s' is not a command\n", argv[1]);
	main_usage(stderr);
	return 2;
}
