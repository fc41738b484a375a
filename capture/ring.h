/*
 * ring.h - the shared-memory file through which a preloaded process hands
 * its capture records to `ttaudit capture` (docs/capture.md, "The ring").
 *
 * One file per process image, in a private directory `ttaudit capture`
 * made (mode 0700, under /dev/shm or $TMPDIR), mapped MAP_SHARED by the
 * process: its pages belong to the page cache, so what the process wrote
 * there survives its SIGKILL. The file holds, after a header page:
 *
 *   - per-fd locks, so that the bytes of each fd enter the ring in the
 *     order they reached the kernel whatever thread wrote them;
 *   - the process's loss counters and how many lines wait in its stdio
 *     buffers (bytes that never reached an fd when the process dies);
 *   - a ring of entries (struct ring_ent): the bytes of each write to a
 *     watched fd (pending until a commit says how many the kernel took),
 *     records the process formats itself (start, lost, uncertain, ...),
 *     and marks (an fd closed, a fork, the end).
 *
 * The reader cuts each fd's bytes into lines and classifies them: the
 * process only copies bytes, which costs it a few stores per write.
 * (struct ring_stream and the streams part serve the process that writes
 * its records itself, without a reader.)
 *
 * Writers are the threads of the process (lock-free: an entry is reserved
 * by CAS on `head`, written, then published by storing its absolute
 * position last, with release order); the reader is the consumer, which
 * copies what it reads before it moves `tail`. No allocation, no lock, no
 * system call on the writer's side: callable from a signal handler, a vfork
 * child and a fork child.
 *
 * The same layout without the ring (data_size 0) serves as private memory
 * for a process that writes its records to the capture file itself.
 */
#ifndef TTAUDIT_RING_H
#define TTAUDIT_RING_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define RING_MAGIC 0x31676e6972747474ull   /* "tttring1" */
#define RING_CTL_MAGIC 0x316c746374747474ull   /* "tttctl1" */
#define RING_FD_MAX 65536          /* fds at or above this are never watched */
#define RING_STREAMS 16            /* fds with a partial line at once */
#define RING_LINE_CAP (64 * 1024)  /* longest line kept whole */
#define RING_STDIO 16              /* stdio streams whose pending lines are counted */
#define RING_LOST_MAX 16           /* loss reasons */
#define RING_DATA_SIZE (2u << 20)  /* the ring proper */

/* Entry kinds. */
enum ring_kind {
	RING_PAD = 1,     /* skip to the end of the data area */
	RING_REC,         /* a record line, true as written (flags: RING_F_CHILD_END) */
	RING_WRITE,       /* bytes of fd `a` (payload: struct ring_wr, then `b` bytes);
	                     ref != 0: pending until RING_COMMIT of that id */
	RING_COMMIT,      /* ref: a RING_WRITE or RING_RISK id; a: bytes the kernel took */
	RING_RISK,        /* a stdio call that may write `b` complete lines to fd `a` runs (ref: id) */
	RING_MARK,        /* flags RING_M_*: something happened to fd `a` (or to all) */
	RING_END,         /* the process (image) ends: a = how (RING_HOW_*), b = code (or -1) */
};

/* Entry flags. */
enum {
	RING_F_CHILD_END = 2,   /* RING_REC: an end written by a parent for child `ref` */
	RING_W_RACE = 4,        /* RING_WRITE: a signal handler's, while a write of this thread to the
	                           same fd was in flight: which reached the kernel first is not known */
	RING_W_UNLOCKED = 8,    /* RING_WRITE: a signal handler's, while another thread held the fd:
	                           its place among the fd's bytes is not known */
	RING_W_DOUBT = 16,      /* RING_WRITE or its RING_COMMIT: a failed stdio flush: these bytes
	                           may not all have reached the fd */
	RING_M_CLOSE = 32,      /* RING_MARK: fd `a` is closed or replaced: its partial line ends */
	RING_M_FORK = 64,       /* RING_MARK: a fork: a child shares the fds (the parent's mark) */
	RING_M_UNKNOWN = 128,   /* RING_MARK: what came before the next line of fd `a` is not known */
	RING_E_EXEC_FAILED = 256, /* RING_MARK: the exec after the last end failed: it is void */
	/*
	 * On a RING_COMMIT, a RING_WRITE written already (ref 0) or a
	 * RING_M_CLOSE: what happened to the fd before these bytes, which no
	 * entry could say when it happened (the ring was full).
	 */
	RING_F_LOSS = 512,      /* bytes of the fd were lost (counted): its open line is dropped */
	RING_F_SKIP = 1024,     /* ... and they left a line open: bytes up to the next '\n' are its rest */
	RING_F_UNSETTLED = 2048,/* writes of the fd still pending had their commit lost: settle them
	                           as not known to have reached the fd */
};

/* The start of a RING_WRITE payload; the bytes follow. */
struct ring_wr {
	uint64_t mono_ns;       /* when the bytes were handed over: CLOCK_MONOTONIC ns, or TSC ticks */
	uint32_t tid;           /* the thread that wrote them */
	uint32_t unused;
};

/*
 * The clock of the writes' times. The time stamp counter costs a third of
 * a vDSO clock_gettime; it is used only when the kernel itself keeps time
 * with it (clocksource "tsc": invariant and the same on every CPU), and
 * the reader turns it into CLOCK_MONOTONIC from pairs it reads itself.
 */
enum { RING_CLOCK_MONO = 0, RING_CLOCK_TSC = 1 };

/* RING_END how. */
enum { RING_HOW_EXIT = 1, RING_HOW__EXIT, RING_HOW_EXEC };

struct ring_ent {
	_Atomic uint64_t pos;   /* absolute position of the entry; stored last: published */
	uint32_t size;          /* the whole entry, header included, a multiple of 8 */
	uint16_t kind;
	uint16_t flags;
	uint64_t ref;
	uint32_t a;
	uint32_t b;
};

/* A partial line of one fd (owned by whoever holds that fd's lock). */
struct ring_stream {
	_Atomic int32_t fd;     /* -1: free */
	uint32_t len;           /* bytes held */
	uint32_t over;          /* more bytes than RING_LINE_CAP arrived */
	uint32_t flags;         /* RING_SF_* */
	char buf[RING_LINE_CAP];
};

/* Stream flags. */
enum {
	RING_SF_UNCERTAIN_NEXT = 1,   /* the next line it completes is not known to be true */
};

/* Per-fd state flags (fdflags[]). */
enum {
	RING_FDF_SKIP = 1,      /* no stream was free: drop bytes up to the next '\n' */
	RING_FDF_UNCERTAIN = 2, /* as RING_SF_UNCERTAIN_NEXT, for an fd without a stream */
	RING_FDF_OPEN = 4,      /* (ring) the last byte written was not '\n': a line is open */
	/* (ring) what the fd's next settling entry must tell (RING_F_*), kept by the lock holder */
	RING_FDF_TELL_LOSS = 8,       /* RING_F_LOSS (RING_F_SKIP with it while LOST_OPEN) */
	RING_FDF_LOST_OPEN = 16,      /* lost bytes left a line open that no '\n' has ended yet */
	RING_FDF_TELL_UNSETTLED = 32, /* RING_F_UNSETTLED */
	RING_FDF_ATTN = RING_FDF_TELL_LOSS | RING_FDF_LOST_OPEN | RING_FDF_TELL_UNSETTLED,
	RING_FDF_DROP = 64,     /* (no ring) drop bytes up to the next '\n': the rest of a line counted lost */
};

/* Header states. */
enum {
	RING_S_DIRECT = 2,      /* the writer gave the ring up (consumer gone): it drains it itself */
	RING_S_KNOCKED = 4,     /* the writer asked the consumer to hurry */
	RING_S_DRAINING = 8,    /* (with DIRECT) what the ring held is not all in the file yet */
};

/*
 * head with this bit: the ring takes no more entries (a process that
 * drains its own ring sets it, so that every entry that went in is
 * before it, and every reservation after fails).
 */
#define RING_HEAD_CLOSED (1ull << 62)

struct ring_hdr {
	_Atomic uint64_t magic;        /* stored last by the creator */
	uint32_t version;
	uint32_t hdr_size;
	uint64_t size;                 /* the whole file */
	int64_t pid;
	uint64_t starttime;            /* /proc/PID/stat field 22: a reused pid is told apart */
	uint64_t data_off, data_size;
	/*
	 * head is the writers' line and tail the reader's: apart, so that the
	 * reader never pulls the line the writers change on every entry
	 * (it finds published entries by their pos alone).
	 */
	_Alignas(64) _Atomic uint64_t head;   /* bytes reserved by writers (absolute) */
	_Atomic uint32_t bell;         /* 1: a writer rang (the ring passed half full), reset by the reader */
	_Alignas(64) _Atomic uint64_t tail;   /* bytes read by the consumer (absolute) */
	_Atomic uint32_t waiting;      /* writers waiting for room (futex on tail's low word) */
	_Alignas(64) _Atomic uint64_t next_id;   /* RISK ids */
	_Atomic uint32_t state;        /* RING_S_* */
	int32_t fork_parent;           /* the pid this image was forked from, or 0 */
	uint32_t clock;                /* what struct ring_wr's time counts: RING_CLOCK_* */
	_Atomic uint32_t drain_tid;    /* the thread draining the ring (DIRECT), 0: none */
	_Atomic uint32_t direct_end;   /* 1: after DIRECT, the process wrote its end record itself */
	_Atomic uint32_t unused;
	_Atomic uint64_t reader_unwritten;   /* lines of this process the reader could not write
	                                        to the capture file (it failed), counted nowhere else */
	_Atomic uint64_t lost[RING_LOST_MAX];       /* lines lost, by reason */
	_Atomic uint64_t lost_told[RING_LOST_MAX];  /* of which a lost record was written */
	struct {
		_Atomic int32_t fd;    /* -1: free */
		_Atomic uint32_t lines;   /* complete lines pending in this stdio stream */
		_Atomic uint32_t bytes;   /* bytes pending after the last '\n' (a partial line) */
	} stdio[RING_STDIO];
};

/* Offsets of the parts of the file. */
#define RING_HDR_SIZE 4096u
#define RING_LOCKS_OFF RING_HDR_SIZE
#define RING_FDSTREAM_OFF (RING_LOCKS_OFF + RING_FD_MAX * 4u)
#define RING_FDFLAGS_OFF (RING_FDSTREAM_OFF + RING_FD_MAX)
#define RING_STREAMS_OFF (RING_FDFLAGS_OFF + RING_FD_MAX)
#define RING_DATA_OFF (RING_STREAMS_OFF + RING_STREAMS * (uint32_t)sizeof(struct ring_stream))

/* Where the ring proper starts. */
#define RING_DATA_START (((uint64_t)RING_DATA_OFF + 4095) / 4096 * 4096)
/* Bytes of one of the two checkpoint slots after a ring of data_size bytes (struct ring_ck). */
static inline uint64_t ring_ck_size(uint64_t data_size)
{
	return data_size < 65536 ? 65536 : data_size;
}

/*
 * Size of a file (or private area) whose ring holds data_size bytes: the
 * parts above, the ring, and (with a ring) two checkpoint slots.
 */
static inline uint64_t ring_file_size(uint64_t data_size)
{
	return RING_DATA_START + data_size + (data_size ? 2 * ring_ck_size(data_size) : 0);
}

static inline _Atomic uint32_t *ring_locks(struct ring_hdr *r)
{
	return (_Atomic uint32_t *)((char *)r + RING_LOCKS_OFF);
}

/* fdstream[fd]: 1 + the index of fd's stream, 0 for none. */
static inline uint8_t *ring_fdstream(struct ring_hdr *r)
{
	return (uint8_t *)r + RING_FDSTREAM_OFF;
}

static inline uint8_t *ring_fdflags(struct ring_hdr *r)
{
	return (uint8_t *)r + RING_FDFLAGS_OFF;
}

static inline struct ring_stream *ring_stream(struct ring_hdr *r, unsigned i)
{
	return (struct ring_stream *)((char *)r + RING_STREAMS_OFF) + i;
}

/* The `reason` of each loss counter, by index (also the shim's enum). */
enum ring_lost {
	RING_LOST_OPEN,       /* capture file cannot be opened */
	RING_LOST_WRITE,      /* capture file write failed */
	RING_LOST_LONG,       /* line longer than RING_LINE_CAP */
	RING_LOST_BUSY,       /* written from signal handlers faster than kept */
	RING_LOST_NOMEM,      /* no thread buffer */
	RING_LOST_STREAMS,    /* too many fds with partial lines */
	RING_LOST_FULL,       /* the ring stayed full */
	RING_LOST_STDIO_EXIT, /* in a stdio buffer at _exit */
	RING_LOST_STDIO_EXEC, /* in a stdio buffer at exec */
	RING_LOST_STDIO_DEATH,/* in a stdio buffer when the process died */
	RING_LOST_VFORK,      /* written by a vfork child after it changed its fds */
	RING_LOST_HANDLER,    /* stdio in a signal handler while the shim was busy */
	RING_LOST_STDIO_WIDE, /* a stdio stream the shim could not follow */
	RING_LOST_CONSUMER,   /* in the ring when `ttaudit capture` went away */
	RING_LOST_HELD,       /* more records at once than the reader's out area holds */
	RING_LOST__COUNT
};
extern const char *const ring_lost_reason[RING_LOST__COUNT];

/* Bytes of one RING_WRITE entry at most: a longer write takes several. */
#define RING_WRITE_MAX (256u * 1024)

#define RING_CTL_MODE_CAP 3584

/*
 * The directory's control page ("ctl"): who reads the rings, and a counter
 * of rings made, so the reader looks for new ones only when it moved.
 */
struct ring_ctl {
	_Atomic uint64_t magic;
	int64_t consumer_pid;
	_Atomic uint64_t created;
	uint32_t clock;          /* RING_CLOCK_*: what the processes stamp their writes with */
	uint32_t mode_len;       /* bytes of mode (0: none) */
	char mode[RING_CTL_MODE_CAP];   /* how the capture is made: the start record's "capture"
	                                   member (caprec_mode), written before magic */
	/*
	 * The reader's writes of records, so that the processes that go on
	 * when it is gone start exactly where it stopped (ring_ck below).
	 * Its records wait in the out area (RING_CTL_OUT_CAP bytes after this
	 * page, in the same file) until they are written.
	 */
	_Atomic uint64_t gen_done;     /* the last generation whose records are all in the file */
	_Atomic uint64_t gen_writing;  /* > gen_done: that generation's records are being written */
	uint64_t out_start;            /* ... at this offset of the file (its size before) */
	uint64_t out_len;              /* ... these bytes of the out area */
	int32_t out_pid;               /* with --per-pid, the process whose file it is; 0: the capture file */
	_Atomic uint32_t file_failed;  /* errno that stopped the reader writing the file (capfile.h), 0 */
	_Atomic int32_t takeover;      /* 0, a process completing that write, or RING_CTL_TAKEN */
	uint32_t out_cap;              /* bytes of the out area (RING_CTL_OUT_CAP, less under a file size limit) */
	/* the reader's time stamp counter calibration (RING_CLOCK_TSC): its first pair and its latest */
	uint64_t tsc0, tsc1;
	int64_t mono0, mono1;
};
_Static_assert(sizeof(struct ring_ctl) <= 4096, "the control page is one page");
/*
 * The out area is large and sparse: records are written at entry
 * boundaries only (a checkpoint must match them), after about a MiB; an
 * entry whose records are more than what is left is counted lost.
 */
#define RING_CTL_OUT_CAP (64u * 1024 * 1024)
#define RING_CTL_TAKEN (-1)

/*
 * A checkpoint: the reader's state for one ring at a position. The
 * reader writes one for every ring it read on before each write of
 * records, then the records, then moves the ring's tail to it (never
 * before: what the ring holds from there on is still there). A process
 * whose reader is gone takes the newest checkpoint whose generation is
 * done (ctl gen_done, once the reader's last write is completed) and goes
 * on from its position with its state: nothing written twice, nothing
 * missed. Two slots, the older one rewritten (its gen 0 meanwhile).
 *
 * After the header: n_risk struct ring_ck_risk, then n_fds times a struct
 * ring_ck_fd, its partial line's bytes (padded to 8) and its n_q queued
 * entries, each a struct ring_ck_q and its bytes (padded to 8).
 */
struct ring_ck {
	_Atomic uint64_t gen;   /* 0: being written; else its generation */
	uint64_t pos;           /* the ring's entries before it: in the file, or held below */
	uint64_t lines;         /* lines the reader counted before pos */
	uint64_t lost_long;     /* lines longer than kept, found before pos (not in lost[]) */
	uint64_t held_lost;     /* lines of state that did not fit in the slot: lost */
	uint32_t n_risk, n_fds;
	uint32_t used;          /* bytes after the header */
	uint32_t unused;
};
struct ring_ck_risk {
	uint64_t id;
	int32_t fd;
	uint32_t lines;
};
enum {
	RING_CKF_UNKNOWN = 1,   /* the next line it completes is uncertain */
	RING_CKF_OVER = 2,      /* its open line is longer than kept */
	RING_CKF_SKIP = 4,      /* bytes up to the next '\n' end a line counted lost */
};
struct ring_ck_fd {
	int32_t fd;
	uint32_t flags;         /* RING_CKF_* */
	uint64_t mono;          /* the ring's clock */
	uint32_t tid;
	uint32_t len;           /* bytes of its open line */
	uint32_t n_q;
	uint32_t unused;
};
struct ring_ck_q {
	uint64_t id;            /* 0: written already */
	uint64_t mono;
	uint32_t tid, took, len;
	uint16_t flags;         /* RING_W_*, RING_F_*, or a mark's RING_M_* */
	uint8_t committed;
	uint8_t mark;           /* 1: a mark (RING_M_CLOSE / RING_M_UNKNOWN), no bytes */
};

static inline struct ring_ck *ring_ck_slot(struct ring_hdr *r, int i)
{
	return (struct ring_ck *)((char *)r + r->data_off + r->data_size + (uint64_t)i * ring_ck_size(r->data_size));
}
/* The reader: the slot to write (the older one), emptied and marked as being written; NULL without a ring. */
struct ring_ck *ring_ck_begin(struct ring_hdr *r);
/* n more bytes of the slot (8-aligned), or NULL when they do not fit. */
void *ring_ck_add(struct ring_hdr *r, struct ring_ck *ck, size_t n);
/* The slot is whole: generation gen. */
void ring_ck_commit(struct ring_ck *ck, uint64_t gen);
/* A process taking over: the newest slot of a generation up to done, or NULL. */
const struct ring_ck *ring_ck_find(struct ring_hdr *r, uint64_t done);
/* Walks a slot's parts: *at starts at 0; NULL at the end or when what is left is too short. */
const void *ring_ck_next(const struct ring_ck *ck, size_t *at, size_t n);

/* Writer side. */

/*
 * Prepares a new header in zeroed memory of ring_file_size(data_size) bytes
 * (magic last). data_size is a power of two (0: no ring).
 */
void ring_init(struct ring_hdr *r, uint64_t data_size, int64_t pid, uint64_t starttime, uint32_t clock);
/*
 * Reserves an entry with `payload` bytes after its header. Returns the
 * header (fill the payload after it, then ring_publish), or NULL when the
 * ring has no room (or none at all). The last RING_KEEP(data_size) bytes
 * are left to ring_reserve_settle.
 */
struct ring_ent *ring_reserve(struct ring_hdr *r, size_t payload);
/*
 * An entry without payload that settles what is in the ring already (a
 * commit, a mark, an end): it may take the room ring_reserve leaves, so
 * that a write that went in is never left pending for want of room for
 * its commit while the reader is slow.
 */
struct ring_ent *ring_reserve_settle(struct ring_hdr *r);
#define RING_KEEP(d) ((d) / 32)

/*
 * Called (when set) by the writer whose reservation took the ring past
 * half full while the bell was quiet: the writer's way to wake the reader
 * (the shim sends it SIGURG). The reader quiets the bell after reading.
 */
extern void (*ring_bell_hook)(struct ring_hdr *r);
/*
 * Waits up to `ms` milliseconds for the reader to free room (tail moving
 * on from `tail`); 0 when it moved, -1 when it did not.
 */
int ring_wait_room(struct ring_hdr *r, uint64_t tail, int ms);
void ring_publish(struct ring_ent *e, uint16_t kind, uint16_t flags, uint64_t ref, uint32_t a,
		  uint32_t b);
/* Bytes in use (written, not yet read). */
uint64_t ring_used(struct ring_hdr *r);

/* Reader side. */

/*
 * The next published entry at *pos (the reader's position, starting at
 * tail), or NULL when there is none yet; *pos moves past padding. The
 * entry stays valid until ring_consumed() moves tail past it.
 */
const struct ring_ent *ring_next(struct ring_hdr *r, uint64_t *pos);
/* The payload of an entry and its length. */
static inline const char *ring_payload(const struct ring_ent *e)
{
	return (const char *)(e + 1);
}
size_t ring_payload_len(const struct ring_ent *e);
/* Frees the space up to pos for writers, and wakes those waiting for it. */
void ring_consumed(struct ring_hdr *r, uint64_t pos);
/* After reading: the bell may ring again. 1 when the ring is past half full already. */
int ring_quiet(struct ring_hdr *r);

#endif
