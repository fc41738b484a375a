/*
 * cmd.h - ttsim's commands. main.c's table maps a name to one of these.
 *
 * How to add a command: write cmd_NAME.c with its option table (base/opt.h,
 * .prog = "ttsim"; the model's options are TTSIM_MODEL_OPTS of modelopt.h),
 * its cmd_doc and its function, declare both here and add a line to main.c's
 * table. Exit codes: 0 ok, 1 failure at run time, 2 bad usage.
 */
#ifndef TTSIM_CMD_H
#define TTSIM_CMD_H

#include "base/opt.h"

/* What 1 means for every ttsim command (cmd_doc.exit_notes). */
#define TTSIM_CMD_EXIT_NOTES "failure at run time"

extern const struct cmd_doc ttsim_cmd_serve_doc;
extern const struct cmd_doc ttsim_cmd_run_doc;

/* argv[0] is the command's name. */
int ttsim_cmd_serve(int argc, char **argv);
int ttsim_cmd_run(int argc, char **argv);

#endif
