/*
 * consume.h - the reader of the capture rings (ring.h): what `ttaudit
 * capture` runs while the command does.
 *
 * It makes a private directory for the rings (mode 0700, under /dev/shm,
 * else $TMPDIR or /tmp) with a control page, finds each ring a process of
 * the capture makes there, copies its records to the capture file, and
 * settles records that wait on a write. When a process ends it reads what
 * the process left: records still pending (its write was in flight),
 * stdio calls that may have been writing, partial lines of its fds, lines
 * still in its stdio buffers, losses not yet reported, and writes the
 * records that say so (uncertain, partial, lost) and, unless the process
 * wrote one itself or its parent did, its end record (by "capture").
 *
 * Not for the shim: this allocates and uses stdio.
 */
#ifndef TTAUDIT_CONSUME_H
#define TTAUDIT_CONSUME_H

#include <poll.h>
#include <stddef.h>
#include <sys/types.h>

#include "capture/banner.h"
#include "base/status.h"

struct consume_opts {
	int out_fd;                   /* the capture file, opened O_APPEND (not with per_pid_base; -1: none) */
	const char *out_path;         /* its path (absolute): messages, and to make it again if deleted */
	const char *per_pid_base;     /* one file per process: BASE.<pid> (absolute) */
	int append;                   /* per-pid files are kept, not emptied */
	const struct banner_set *rules;   /* how the shim classifies (for partial lines at death) */
	int all_lines;
	const char *rules_from;       /* the rules file (NULL: the built-in rules), for the start records */
	int settle_ms;                /* how long an ended process's parent has to reap it and say so
	                                 (default 200) */
	/* what a user must see (the capture file cannot be written, was deleted), without a prefix */
	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
};

struct consume;

/* Makes the directory and its control page. */
enum status consume_new(const struct consume_opts *o, struct consume **out, struct status_info *si);
/* The ring directory, for TTAUDIT_RINGS. */
const char *consume_dir(const struct consume *c);
/*
 * One pass: new rings found, every ring read, ended processes settled, the
 * records written. Returns the number of rings still open (processes not
 * yet ended, or ended and not yet settled), counting one for a ring that
 * is being made.
 */
size_t consume_round(struct consume *c);
/* The capture process reaped `pid` (its child, or an orphan handed to it): how it ended. */
void consume_reaped(struct consume *c, pid_t pid, int status);
/* The pidfds of live processes, for the caller's poll (readable when one ends). */
size_t consume_pollfds(struct consume *c, struct pollfd *fds, size_t cap);
/*
 * A ring in memory that is not a file of the directory (unit tests, the
 * fuzzer): read as the records of process `pid`. consume_drain_attached
 * reads what is in it; consume_detach reads the rest and settles it as
 * ended, `status` being its wait status (-1: not known).
 */
struct ring_hdr;
int consume_attach(struct consume *c, struct ring_hdr *r, pid_t pid);
void consume_drain_attached(struct consume *c);
void consume_detach(struct consume *c, pid_t pid, int status);
/* Counts, for the caller's summary. */
struct consume_stats {
	unsigned long long processes, records, uncertain, lost_records;
};
void consume_stats(const struct consume *c, struct consume_stats *st);
/* Settles everything still open as ended, removes the directory, frees. */
void consume_free(struct consume *c);
/*
 * A reader handing over to another process (a fork of it that goes on
 * reading): the processes of the capture are told that `pid` reads their
 * rings from now on (they check that it lives, and wake it).
 */
void consume_set_reader(struct consume *c, pid_t pid);
/* Frees c's memory in a process that handed over: no record written, no file touched. */
void consume_forget(struct consume *c);

#endif
