/*
 * capfile.h - the capture file as `ttaudit capture` writes it: whole
 * records only, room kept for its last records, and what could not be
 * written counted (docs/capture.md, "Lost, uncertain and ends").
 *
 * Records come in batches (back to back in one buffer, each described by
 * a struct capfile_rec). A batch is written whole when it can be; when
 * the file cannot take it all (ENOSPC, EDQUOT, EFBIG or the file size
 * limit, EIO, ...) the file ends at the last record boundary written (a
 * record cut short is truncated away), the failure is said once through
 * the warn callback with the path, and from then on nothing more is
 * written: the lines of every record not written are counted by process,
 * and its start, lost and end records are kept. When the capture ends
 * (capfile_free) they are written in the room that was reserved for them
 * up front (fallocate beyond the end of the file, FALLOC_FL_KEEP_SIZE),
 * each process's lines not written in a lost record before its end; what
 * does not fit even there is said through warn with the counts.
 *
 * A capture file deleted while it is written (its link count 0) is made
 * again at its path, if nothing else is there: the new file starts with
 * the start records of the processes that are still running and, for each
 * process, a lost record counting what the deleted file held. If it
 * cannot be made again, that is a failure as above.
 *
 * Not for the shim: allocates and uses the file system freely.
 */
#ifndef TTAUDIT_CAPFILE_H
#define TTAUDIT_CAPFILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* What a record is, for the counts. */
enum capfile_kind {
	CAPFILE_LINES,    /* audit, banner, line (count 1) or uncertain (count N): lines recorded */
	CAPFILE_LOST,     /* a lost record of count lines */
	CAPFILE_START,    /* a process starts */
	CAPFILE_END,      /* a process (image) ends: its records are done */
	CAPFILE_OTHER,
};

struct capfile_rec {
	uint32_t len;     /* bytes, its '\n' included */
	uint8_t kind;     /* enum capfile_kind */
	long pid;
	uint64_t count;
};

/* The kind and count of a record as caprec wrote it (for records passed through as bytes). */
enum capfile_kind capfile_kind_of(const char *rec, size_t len, uint64_t *count);

typedef void (*capfile_warn_fn)(void *ctx, const char *msg);

struct capfile;

/*
 * The file open on fd (a regular file opened O_APPEND; capfile writes to
 * its own duplicate of it, the caller keeps fd), at `path` (absolute, for
 * messages and to make it again; NULL: none, it is not made again). warn
 * (may be NULL) gets messages a user must see, without a prefix.
 */
enum status capfile_new(int fd, const char *path, capfile_warn_fn warn, void *warn_ctx, struct capfile **out,
			struct status_info *si);
/*
 * Writes the batch (n records, back to back in buf), or counts what cannot
 * be written. `before` (may be NULL) is called just before the write with
 * where it goes in the file and how many bytes of buf (the first ones) it
 * writes: the reader's way to say so to whoever may complete it.
 */
typedef void (*capfile_before_fn)(void *ctx, uint64_t at, size_t len);
void capfile_write(struct capfile *cf, const char *buf, const struct capfile_rec *recs, size_t n,
		   capfile_before_fn before, void *ctx);
/* The file's size before the next batch (where it will start). */
uint64_t capfile_size(const struct capfile *cf);
/* Lines of pid not in the file (for its end record's "lost"). */
uint64_t capfile_unwritten(const struct capfile *cf, long pid);
/* 0 while the file takes records, else the errno that stopped it. */
int capfile_failed(const struct capfile *cf);
/* The last records (when it failed), the reserve given back, the file closed; frees cf. */
void capfile_free(struct capfile *cf);
/* Frees cf without writing anything (a reader that handed over to another process). */
void capfile_forget(struct capfile *cf);

#endif
