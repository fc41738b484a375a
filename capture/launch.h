/*
 * launch.h - what `ttaudit capture` does before it execs the command: find
 * the preload library and put the capture configuration in the environment.
 *
 * The shim reads (docs/capture.md): TTAUDIT_CAPTURE (capture file, absolute),
 * TTAUDIT_RINGS (the reader's ring directory: records go there, not to the
 * file), TTAUDIT_RULES (banner rules file), TTAUDIT_ENV (environment
 * allow-list), TTAUDIT_ALL_LINES, TTAUDIT_WATCH (glob of extra files to
 * watch), TTAUDIT_PER_PID (one file per process: CAPTURE.<pid>).
 */
#ifndef TTAUDIT_LAUNCH_H
#define TTAUDIT_LAUNCH_H

#include <stddef.h>

#include "base/status.h"

#define LAUNCH_SHIM_NAME "libttaudit-shim.so"

struct launch_opts {
	const char *out;        /* capture file (relative: to the current directory) */
	const char *rules;      /* NULL: built-in banner rules */
	const char *env;        /* extra allow-list patterns, NULL: defaults only */
	const char *watch;      /* NULL: fds 1 and 2 only */
	int all_lines;
	int per_pid;
	int append;             /* keep an existing capture file instead of emptying it */
	const char *rings;      /* the reader's ring directory (TTAUDIT_RINGS), NULL: none */
	int opened;             /* the caller opened and checked the capture file already */
};

/*
 * The shim's path into buf: $TTAUDIT_SHIM if set (must exist), else the
 * directory of this executable, else the install LIBDIR. STATUS_NOTFOUND
 * says where it looked.
 */
enum status launch_find_shim(char *buf, size_t cap, struct status_info *si);

/*
 * Opens the capture file for records: created 0600 or, when it exists, a
 * regular file this user owns (never through a symlink), made 0600 and
 * emptied unless `append`. *fd (O_APPEND, close-on-exec) is the caller's.
 * With `per_pid`, nothing is opened (*fd = -1): the directory must be one
 * this user can create files in. STATUS_IO names the path and the reason.
 */
enum status launch_capture_file(const char *path, int append, int per_pid, int *fd,
				struct status_info *si);
/*
 * Validates the options (rules compile, env patterns parse), opens and
 * checks the capture file (launch_capture_file, unless o->opened or
 * o->append: then the file is not touched), and sets
 * the environment of this process for the command it will exec: the
 * TTAUDIT_* variables (unset ones that were inherited but not asked for)
 * and LD_PRELOAD with the shim first. A capture file that cannot be used
 * is an error: the command must not run believing it is captured.
 */
enum status launch_setup(const struct launch_opts *o, const char *shim, struct status_info *si);
/* The validation of launch_setup alone (rules, env patterns), nothing set or touched. */
enum status launch_check(const struct launch_opts *o, struct status_info *si);

/* p made absolute against the working directory (the command may change
 * directory); malloc'd, the caller frees; NULL when getcwd or malloc fails. */
char *launch_absolute(const char *p);

#endif
