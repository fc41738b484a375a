/*
 * outfile.h - output files written atomically: the bytes go to a temporary
 * file beside the target, which replaces the target by rename(2) only when
 * everything was written. A failed or abandoned write leaves the old file
 * as it was (a typo in an input never destroys yesterday's figure), and a
 * reader never sees half a file.
 *
 *   struct outfile of;
 *   if (outfile_open(&of, path, &si)) ...;     path NULL or "-": stdout
 *   fprintf(of.f, ...);
 *   st = outfile_commit(&of, &si);             or outfile_abort(&of)
 *
 * The new file gets mode 0666 less the umask, like one made by fopen; an
 * existing target's mode is kept. A symlink at the target is replaced by the
 * file, not followed.
 */
#ifndef TTAUDIT_OUTFILE_H
#define TTAUDIT_OUTFILE_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/status.h"

struct outfile {
	FILE *f;                  /* write here; stdout when the path was NULL or "-" */
	bool is_stdout;
	char path[PATH_MAX];      /* the target */
	char tmp[PATH_MAX];       /* the temporary file beside it, "" once gone */
};

/* STATUS_IO (the directory is not writable, ...) or STATUS_LIMIT (path too long). */
enum status outfile_open(struct outfile *o, const char *path, struct status_info *si);
/*
 * Flushes, syncs and renames the temporary file over the target; closes the
 * stream either way. STATUS_IO when a write failed (the target untouched).
 */
enum status outfile_commit(struct outfile *o, struct status_info *si);
/* Closes and removes the temporary file; the target stays as it was. */
void outfile_abort(struct outfile *o);

#endif
