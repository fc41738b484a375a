/*
 * supervise.h - `ttaudit capture` running its command: it stays the
 * command's parent, reads the processes' capture rings while they run
 * (consume.h), and ends the way the command ended.
 *
 * The command is forked with the signal mask and dispositions this process
 * had. This process becomes a child subreaper (PR_SET_CHILD_SUBREAPER), so
 * descendants whose parent ends are reaped here and their ends are known.
 * Signals sent to it (kill PID: SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1,
 * SIGUSR2, SIGWINCH) are passed on to the command; signals the terminal sends
 * to the foreground process group (Ctrl-C, ...) reach the command directly,
 * as it is in the same group, and are not passed on twice. It returns when
 * the command has ended and every process writing to the capture has, or,
 * when processes outlive the command by more than a moment and the caller
 * asked for it (`background`), hands the reading over to a fork of itself
 * that reads on until they end: the command returns as it would uncaptured.
 */
#ifndef TTAUDIT_SUPERVISE_H
#define TTAUDIT_SUPERVISE_H

#include "capture/consume.h"
#include "base/status.h"

struct supervise_opts {
	char **argv;             /* the command (argv[0] is looked up in PATH) */
	struct consume *consume; /* reads the rings (its directory is in the environment) */
	/*
	 * When set, processes still running a moment after the command ended
	 * are read by a fork of this process: then *background is 1 in this
	 * process (consume_forget the reader, and exit as the command did) and
	 * -1 in the fork (consume_free the reader once supervise_run returned,
	 * and _exit(0): it has nothing to say).
	 */
	int *background;
};

/*
 * Runs the command and returns when it and every process of the capture
 * ended. *wstatus: the command's wait status. STATUS_CHILD when it cannot
 * be run (si says why, as "'CMD' cannot be run: ..."), STATUS_IO when the
 * process cannot be set up.
 */
enum status supervise_run(const struct supervise_opts *o, int *wstatus, struct status_info *si);
/*
 * Past the file size limit (RLIMIT_FSIZE) a write or ftruncate raises
 * SIGXFSZ, whose default action would end the reader: call this before
 * making any file, so that they fail with EFBIG instead (capfile.c); the
 * command gets back the disposition it had.
 */
void supervise_ignore_xfsz(void);
/*
 * Ends this process the way wstatus says a process ended: the same exit
 * code, or the same signal (raised on itself with its default action and
 * no core file, so that a shell shows 128+N). Returns only if it could not.
 */
int supervise_mirror(int wstatus);

#endif
