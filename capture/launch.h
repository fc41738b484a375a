/*
 * launch.h - what `ttaudit capture` does before it execs the command: find
 * the preload library and put the capture configuration in the environment.
 *
 * The shim reads (docs/capture.md): TTAUDIT_CAPTURE (capture file, absolute),
 * TTAUDIT_RULES (banner rules file), TTAUDIT_ENV (environment allow-list),
 * TTAUDIT_ALL_LINES, TTAUDIT_WATCH (glob of extra files to watch),
 * TTAUDIT_PER_PID (one file per process: CAPTURE.<pid>).
 */
#ifndef TTAUDIT_LAUNCH_H
#define TTAUDIT_LAUNCH_H

#include <stddef.h>

#include "status.h"

#define LAUNCH_SHIM_NAME "libttaudit-shim.so"

struct launch_opts {
	const char *out;        /* capture file (relative: to the current directory) */
	const char *rules;      /* NULL: built-in banner rules */
	const char *env;        /* extra allow-list patterns, NULL: defaults only */
	const char *watch;      /* NULL: fds 1 and 2 only */
	int all_lines;
	int per_pid;
	int append;             /* keep an existing capture file instead of emptying it */
};

/*
 * The shim's path into buf: $TTAUDIT_SHIM if set (must exist), else the
 * directory of this executable, else the install LIBDIR. STATUS_NOTFOUND
 * says where it looked.
 */
enum status launch_find_shim(char *buf, size_t cap, struct status_info *si);

/*
 * Validates the options (rules compile, env patterns parse), empties the
 * capture file unless o->append, and sets the environment of this process
 * for the command it will exec: the TTAUDIT_* variables (unset ones that
 * were inherited but not asked for) and LD_PRELOAD with the shim first.
 * A capture file that cannot be created is not an error here: the shim
 * warns and the command runs uncaptured, as it would in a child process.
 */
enum status launch_setup(const struct launch_opts *o, const char *shim, struct status_info *si);

#endif
