/*
 * consume_priv.h - what the files of the capture reader share (consume.h is
 * its interface): the reader's state, one ring per process image, one
 * stream per fd, and the functions the files call across.
 *
 *   consume.c          the rounds: finding rings, mapping them, telling
 *                      when a process ended; a ring's state (one place)
 *   consume_lines.c    reading a ring's entries in order and cutting the
 *                      bytes of each fd into lines, the record of a line
 *   consume_records.c  the records waiting to be written, the checkpoints
 *                      that go with them, one file per process if asked
 *   consume_end.c      what a process left unsaid when it ended or exec'd,
 *                      and its end record
 *
 * Not for the shim: this allocates and uses stdio.
 */
#ifndef TTAUDIT_CONSUME_PRIV_H
#define TTAUDIT_CONSUME_PRIV_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/banner.h"
#include "capture/capfile.h"
#include "capture/caprec.h"
#include "capture/consume.h"
#include "base/linebuf.h"
#include "base/mono.h"
#include "capture/ring.h"

#define CONSUME_FREE_EVERY (256u * 1024)   /* bytes read between writes of records (which free ring room) */
#define CONSUME_OUT_CAP (1024 * 1024)   /* records are written at the next entry boundary past this */
#define CONSUME_REC_CAP (256 * 1024)

#define CONSUME_UNREADY_MS 1000   /* a ring file without its header this long is dropped */

/* A write of one fd waiting to be cut into lines: for its commit, or behind one. */
struct consume_write {
	uint64_t id;            /* 0: written already */
	uint16_t flags;         /* RING_W_*, or RING_M_UNKNOWN / RING_M_CLOSE for a mark */
	int committed;
	uint32_t took;          /* bytes the kernel took */
	uint32_t len;
	uint64_t mono;
	uint32_t tid;
	char *bytes;
};

/* What the reader knows of one fd of one process image. */
struct consume_fd {
	int fd;
	struct linebuf lb;
	char *buf;
	int unknown_next;       /* the next line it completes is uncertain */
	int skipping;           /* bytes up to the next '\n' end a line the process counted lost */
	uint64_t mono;          /* time of the bytes that last fed it (the ring's clock) */
	uint32_t tid;
	struct consume_write *q;
	size_t n_q, cap_q;
};

struct consume_risky_call {
	uint64_t id;
	int fd;
	uint32_t lines;
};

/*
 * Where a process's ring is in its life, as the reader sees it. The steps
 * go one way, and one may be skipped:
 *
 *   LIVE     the process runs (or its ring file is not ready yet): its
 *            ring is read every round
 *   DEAD     it ended (its pidfd, /proc, or a wait said so): its parent has
 *            settle_ms to reap it and write its end record
 *   SETTLED  what it left unsaid is made into records (consume_settle),
 *            also straight from LIVE when it exec'd (a newer ring has its
 *            pid) or was detached
 *   CLOSED   those records are written; the ring is unmapped and its file
 *            removed (also straight from LIVE for a ring file whose maker
 *            died before writing its header)
 *
 * How the end was learnt (reaped by the capture, gone to another parent,
 * its own end record) are facts beside the state, not states.
 */
enum consume_ring_state {
	CONSUME_RING_LIVE,
	CONSUME_RING_DEAD,
	CONSUME_RING_SETTLED,
	CONSUME_RING_CLOSED,
};

struct consume_ring {
	char path[PATH_MAX + 300];
	pid_t pid;
	unsigned long long seq;
	struct ring_hdr *r;
	size_t size;
	int pidfd;
	enum consume_ring_state state;   /* consume_ring_enter changes it, nowhere else */
	int ended;              /* it said how it ended (RING_END); an exec that failed takes it back */
	uint32_t end_how;
	int32_t end_code;
	uint64_t end_lost;      /* an exec's stdio loss, told only once the exec is known to have worked */
	int reaped;             /* reaped by us (its status is known) */
	int gone;               /* reaped by another (its parent, which may say how it ended) */
	int zombie_status;      /* wait status read from /proc while a zombie, -1 */
	long long dead_ms;
	long long seen_ms;      /* when the file was first seen (unready rings) */
	uint64_t pos;
	struct consume_fd *fds;
	size_t n_fds, cap_fds;
	size_t last_fd;         /* the fd looked up last (most writes are to the same one) */
	struct consume_risky_call *risk;
	size_t n_risk, cap_risk;
	uint64_t lines;
	uint64_t lost_long;     /* lines longer than kept (added to the ring's lost[] when it is settled) */
	uint64_t ck_pos;        /* the position of its last checkpoint */
	struct capfile *out;    /* where its records go */
	int borrowed;           /* consume_attach: the memory is the caller's, no file, no pidfd */
};

struct consume_reaped {
	pid_t pid;
	int status;
};

struct consume {
	struct consume_opts o;
	char dir[PATH_MAX];
	struct ring_ctl *ctl;
	uint64_t created_seen;
	long long odd_since_ms;     /* ctl->created odd (a ring being made) since */
	struct consume_ring *rings;
	size_t n_rings, cap_rings;
	struct consume_reaped *reaped;
	size_t n_reaped, cap_reaped;
	pid_t *parent_ended;        /* pids whose end a parent wrote */
	size_t n_parent_ended, cap_parent_ended;
	struct { pid_t pid; struct capfile *cf; } *per_pid;   /* per-pid files */
	size_t n_per_pid, cap_per_pid;
	struct banner_scratch *sc;
	struct capfile *file;       /* the capture file (not with per_pid_base) */
	/* records waiting to be written, in the control file's out area */
	struct consume_out {
		char *bytes;
		size_t len;
		size_t cap;                 /* bytes of the out area (after the control page) */
		struct capfile_rec *recs;   /* what each of them is */
		size_t n_recs, cap_recs;
		struct capfile *to;         /* the file they go to */
	} out;
	char *rec, *rec2;           /* record scratch */
	/* the ring's clock to CLOCK_MONOTONIC and the wall clock */
	struct consume_clock {
		int64_t wall_off_ns;        /* CLOCK_REALTIME - CLOCK_MONOTONIC, this round */
		uint64_t tsc0, tsc1;        /* time stamp counter: the first pair and the latest */
		int64_t mono0, mono1;
	} clock;
	struct consume_stats st;
};

static inline long long consume_now_ms(void)
{
	return (long long)(mono_ns() / 1000000);
}

/* consume.c */
void consume_ring_enter(struct consume_ring *cr, enum consume_ring_state to);

/* consume_records.c: records of process pid to cf, written by consume_flush */
void consume_flush(struct consume *c);
int consume_grow_recs(struct consume *c);
void consume_put(struct consume *c, struct capfile *cf, const char *rec, size_t len, int kind, pid_t pid,
		 uint64_t count);
void consume_warn(void *ctx, const char *msg);
struct capfile *consume_file_for(struct consume *c, pid_t pid);
void consume_head(struct caprec_head *h, pid_t pid, int fd);
void consume_uncertain(struct consume *c, struct consume_ring *cr, int fd, uint64_t count,
		       const char *why, const char *rec, size_t rec_len);
void consume_lost(struct consume *c, struct consume_ring *cr, int fd, uint64_t count, const char *why);

/* consume_lines.c */
struct consume_linectx {
	struct consume *c;
	struct consume_ring *cr;
	struct consume_fd *f;
	const char *why;        /* every line of this feed is uncertain, for this reason */
	int count;              /* lines count toward the process's `lines` */
};

extern const char consume_why_unknown[];
extern const char consume_why_flight[];
/* Everything published in the ring, in order. */
void consume_drain(struct consume *c, struct consume_ring *cr);
/* The record of one line into c->rec (with its '\n'); 0 when the line needs none. */
size_t consume_format(struct consume *c, struct consume_ring *cr, struct consume_fd *f, const char *line, size_t n,
		      int partial);
/* A linebuf callback; ctx is a struct consume_linectx. */
void consume_line(void *ctx, const char *line, size_t n, int overlong);

/* consume_end.c */
/* A parent wrote the end record of pid (RING_F_CHILD_END): the reader writes none. */
void consume_parent_ended(struct consume *c, pid_t pid);
int consume_parent_told(const struct consume *c, pid_t pid);
/* 1 while pid is the process that made the ring (not reaped, not reused). */
int consume_same(struct consume_ring *cr);
/* The process ended: note when, and read how while it is a zombie. */
void consume_died(struct consume_ring *cr);
void consume_settle(struct consume *c, struct consume_ring *cr);

#endif
