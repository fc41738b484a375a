/*
 * consume.c - reads the capture rings of every process of a capture and
 * writes their records (consume.h). The writer side is the shim; the format
 * is ring.h.
 */
#include "consume.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "banner.h"
#include "capfile.h"
#include "caprec.h"
#include "mono.h"
#include "classify.h"
#include "linebuf.h"
#include "procstat.h"
#include "ring.h"

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
	struct { pid_t pid; struct capfile *cf; } *pp;   /* per-pid files */
	size_t n_pp, cap_pp;
	struct banner_scratch *sc;
	struct capfile *file;       /* the capture file (not with per_pid_base) */
	char *out;                  /* records waiting to be written */
	size_t out_len;
	struct capfile_rec *recs;   /* what each of them is */
	size_t n_recs, cap_recs;
	struct capfile *out_to;     /* the file they go to */
	size_t out_cap;             /* bytes of the out area (after the control page) */
	char *rec, *rec2;           /* record scratch */
	int64_t wall_off_ns;      /* CLOCK_REALTIME - CLOCK_MONOTONIC, this round */
	/* time stamp counter to CLOCK_MONOTONIC: the first pair and the latest */
	uint64_t tsc0, tsc1;
	int64_t mono0, mono1;
	struct consume_stats st;
};

static long long consume_now_ms(void)
{
	return (long long)(mono_ns() / 1000000);
}

/* The one place a ring's state changes: forward only (a later step asked again is nothing). */
static void consume_ring_enter(struct consume_ring *cr, enum consume_ring_state to)
{
	if (to <= cr->state)
		return;
	if (to == CONSUME_RING_DEAD)
		cr->dead_ms = consume_now_ms();
	cr->state = to;
}

/* --- output -------------------------------------------------------------------- */

/* Lines that bytes p[0..n) touch: their newlines, and the one they leave open. */
static uint64_t consume_lines_in(const char *p, size_t n)
{
	uint64_t k = 0;
	size_t i;

	for (i = 0; i < n; i++)
		k += p[i] == '\n';
	return k + (n && p[n - 1] != '\n');
}

/*
 * A checkpoint of the ring at cr->pos in generation gen (ring.h, struct
 * ring_ck): what a process taking over needs to go on from there. State
 * that does not fit is counted: the lines it holds are lost then.
 */
static void consume_checkpoint(struct consume *c, struct consume_ring *cr, uint64_t gen)
{
	struct ring_hdr *r = cr->r;
	struct ring_ck *ck = ring_ck_begin(r);
	size_t i, k;

	(void)c;
	if (!ck)
		return;
	ck->pos = cr->pos;
	ck->lines = cr->lines;
	ck->lost_long = cr->lost_long;
	ck->held_lost = 0;
	for (i = 0; i < cr->n_risk; i++) {
		struct ring_ck_risk *rk = ring_ck_add(r, ck, sizeof(*rk));
		if (!rk) {
			ck->held_lost += cr->risk[i].lines;
			continue;
		}
		rk->id = cr->risk[i].id;
		rk->fd = cr->risk[i].fd;
		rk->lines = cr->risk[i].lines;
		ck->n_risk++;
	}
	for (i = 0; i < cr->n_fds; i++) {
		struct consume_fd *f = &cr->fds[i];
		struct ring_ck_fd *cf;
		char *b;
		uint32_t used = ck->used;

		if (!f->lb.len && !f->lb.over && !f->unknown_next && !f->skipping && !f->n_q)
			continue;
		cf = ring_ck_add(r, ck, sizeof(*cf));
		b = cf ? ring_ck_add(r, ck, f->lb.len) : NULL;
		if (!b && cf && f->lb.len)
			cf = NULL;
		for (k = 0; cf && k < f->n_q; k++) {
			struct consume_write *w = &f->q[k];
			struct ring_ck_q *q = ring_ck_add(r, ck, sizeof(*q));
			char *qb = q ? ring_ck_add(r, ck, w->len) : NULL;
			if (!q || (w->len && !qb)) {
				cf = NULL;
				break;
			}
			q->id = w->id;
			q->mono = w->mono;
			q->tid = w->tid;
			q->took = w->took;
			q->len = w->len;
			q->flags = w->flags;
			q->committed = (uint8_t)w->committed;
			q->mark = (w->flags & (RING_M_UNKNOWN | RING_M_CLOSE)) && !w->bytes ? 1 : 0;
			if (w->len)
				memcpy(qb, w->bytes, w->len);
		}
		if (!cf) {
			/* it does not fit: its open line and the lines queued behind are lost, and said so */
			ck->used = used;
			ck->held_lost += (f->lb.len || f->lb.over) ? 1 : 0;
			for (k = 0; k < f->n_q; k++)
				if (f->q[k].bytes)
					ck->held_lost += consume_lines_in(f->q[k].bytes, f->q[k].len);
			/* a marker: the rest of that line is to be skipped */
			if ((cf = ring_ck_add(r, ck, sizeof(*cf)))) {
				memset(cf, 0, sizeof(*cf));
				cf->fd = f->fd;
				cf->flags = RING_CKF_SKIP;
				ck->n_fds++;
			}
			continue;
		}
		cf->fd = f->fd;
		cf->flags = (f->unknown_next ? RING_CKF_UNKNOWN : 0) | (f->lb.over ? RING_CKF_OVER : 0) |
			    (f->skipping ? RING_CKF_SKIP : 0);
		cf->mono = f->mono;
		cf->tid = f->tid;
		cf->len = (uint32_t)f->lb.len;
		cf->n_q = (uint32_t)f->n_q;
		cf->unused = 0;
		if (f->lb.len)
			memcpy(b, f->lb.buf, f->lb.len);
		ck->n_fds++;
	}
	ring_ck_commit(ck, gen);
	cr->ck_pos = cr->pos;
}

/* Says where the records about to be written go, for a process completing the write if this one is killed. */
static void consume_before(void *ctx, uint64_t at, size_t len)
{
	struct consume *c = ctx;

	c->ctl->out_start = at;
	c->ctl->out_len = len;
	atomic_store(&c->ctl->gen_writing, atomic_load(&c->ctl->gen_done) + 1);
}

/*
 * The records made so far to their file, with what a process that goes on
 * without the reader needs: every ring read on gets a checkpoint first,
 * then the write, then the generation is done and the rings' room is
 * given back up to their checkpoints (never before: until the records
 * are in the file, what the ring holds from there on is the only copy).
 */
static void consume_flush(struct consume *c)
{
	uint64_t gen = atomic_load(&c->ctl->gen_done) + 1;
	size_t i;
	int any = 0;

	for (i = 0; i < c->n_rings; i++) {
		struct consume_ring *cr = &c->rings[i];
		if (cr->state != CONSUME_RING_CLOSED && cr->r && cr->pos != cr->ck_pos) {
			consume_checkpoint(c, cr, gen);
			any = 1;
		}
	}
	if (c->n_recs && c->out_to) {
		long pid = c->o.per_pid_base ? c->recs[0].pid : 0;
		c->ctl->out_pid = (int32_t)pid;
		capfile_write(c->out_to, c->out, c->recs, c->n_recs, consume_before, c);
		atomic_store(&c->ctl->file_failed, (uint32_t)capfile_failed(c->out_to));
	}
	c->out_len = 0;
	c->n_recs = 0;
	if (any || atomic_load(&c->ctl->gen_writing) == gen) {
		atomic_store(&c->ctl->gen_writing, gen);
		atomic_store(&c->ctl->gen_done, gen);
	}
	for (i = 0; i < c->n_rings; i++) {
		struct consume_ring *cr = &c->rings[i];
		if (cr->state == CONSUME_RING_CLOSED || !cr->r)
			continue;
		ring_consumed(cr->r, cr->ck_pos);
		if (cr->out)
			atomic_store(&cr->r->reader_unwritten, capfile_unwritten(cr->out, cr->pid));
	}
}

/* Room for more record descriptions; -1 when there is none. */
static int consume_grow_recs(struct consume *c)
{
	size_t nc = c->cap_recs ? 2 * c->cap_recs : 16384;
	struct capfile_rec *nr;

	if (nc > (1u << 22) || !(nr = realloc(c->recs, nc * sizeof(*nr))))
		return -1;
	c->recs = nr;
	c->cap_recs = nc;
	return 0;
}

/* One record line (with its '\n') of process pid to cf: what it is (enum capfile_kind) and its count. */
static void consume_put(struct consume *c, struct capfile *cf, const char *rec, size_t len, int kind, pid_t pid,
			uint64_t count)
{
	struct capfile_rec *r;

	if (!len || !cf)
		return;
	/* (another file: consume_drain wrote the records before it began another process's ring) */
	if (c->n_recs && c->out_to != cf)
		consume_flush(c);
	c->out_to = cf;
	c->st.records++;
	if (len > c->out_cap - c->out_len || (c->n_recs == c->cap_recs && consume_grow_recs(c))) {
		/* records are written at entry boundaries only: this entry's do not all fit */
		size_t i;
		for (i = 0; i < c->n_rings; i++)
			if (c->rings[i].pid == pid && c->rings[i].state != CONSUME_RING_CLOSED && c->rings[i].r)
				atomic_fetch_add(&c->rings[i].r->lost[RING_LOST_HELD], kind == CAPFILE_LOST ? count : kind == CAPFILE_LINES ? count : 0);
		return;
	}
	memcpy(c->out + c->out_len, rec, len);
	c->out_len += len;
	r = &c->recs[c->n_recs++];
	r->len = (uint32_t)len;
	r->kind = (uint8_t)kind;
	r->pid = pid;
	r->count = count;
}

static void consume_warn(void *ctx, const char *msg)
{
	struct consume *c = ctx;

	if (c->o.warn)
		c->o.warn(c->o.warn_ctx, msg);
}

/* The file a process's records go to. */
static struct capfile *consume_file_for(struct consume *c, pid_t pid)
{
	char path[PATH_MAX + 32];
	struct capfile *cf = NULL;
	size_t i;
	int fd;

	if (!c->o.per_pid_base)
		return c->file;
	for (i = 0; i < c->n_pp; i++)
		if (c->pp[i].pid == pid)
			return c->pp[i].cf;
	snprintf(path, sizeof(path), "%s.%ld", c->o.per_pid_base, (long)pid);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (c->o.append ? 0 : O_TRUNC), 0600);
	if (fd >= 0) {
		fchmod(fd, 0600);
		if (capfile_new(fd, path, consume_warn, c, &cf, NULL) != STATUS_OK)
			cf = NULL;
		close(fd);
	} else {
		char msg[PATH_MAX + 128];
		snprintf(msg, sizeof(msg), "%s: cannot create the capture file: %s: the records of process %ld are lost",
			 path, strerror(errno), (long)pid);
		consume_warn(c, msg);
	}
	if (c->n_pp == c->cap_pp) {
		size_t nc = c->cap_pp ? 2 * c->cap_pp : 16;
		void *np = realloc(c->pp, nc * sizeof(*c->pp));
		if (!np) {
			capfile_free(cf);
			return NULL;
		}
		c->pp = np;
		c->cap_pp = nc;
	}
	c->pp[c->n_pp].pid = pid;
	c->pp[c->n_pp].cf = cf;
	c->n_pp++;
	return cf;
}

static void consume_head(struct caprec_head *h, pid_t pid, int fd)
{
	caprec_head_now(h);
	h->pid = pid;
	h->tid = 0;
	h->fd = fd;
}

static void consume_uncertain(struct consume *c, struct consume_ring *cr, int fd, uint64_t count,
			      const char *why, const char *rec, size_t rec_len)
{
	struct caprec_head h;
	size_t len;

	consume_head(&h, cr->pid, fd);
	len = caprec_uncertain(c->rec2, CONSUME_REC_CAP, &h, count, why, rec, rec_len);
	if (!len)
		len = caprec_uncertain(c->rec2, CONSUME_REC_CAP, &h, count, why, NULL, 0);
	consume_put(c, cr->out, c->rec2, len, CAPFILE_LINES, cr->pid, count);
	c->st.uncertain += count;
}

static void consume_lost(struct consume *c, struct consume_ring *cr, int fd, uint64_t count, const char *why)
{
	struct caprec_head h;
	char buf[512];

	if (!count)
		return;
	consume_head(&h, cr->pid, fd);
	consume_put(c, cr->out, buf, caprec_lost(buf, sizeof(buf), &h, count, why), CAPFILE_LOST, cr->pid, count);
	c->st.lost_records++;
}

/* --- cutting a process's bytes into lines ------------------------------------ */

static const char consume_why_order[] =
	"the order of this line's bytes and a signal handler's was not knowable";
static const char consume_why_unknown[] =
	"what came before this line on the fd is not known (a fork child sharing it, a cancelled or unseen write)";
static const char consume_why_doubt[] =
	"a stdio flush failed or went unseen: how much of it reached the fd is not known";
static const char consume_why_flight[] =
	"the process ended while the write of this line was in flight";
static const char consume_why_unsettled[] =
	"the commit of this write could not go in the capture ring (it stayed full): how much of it reached the fd is not known";

static struct consume_fd *consume_fd(struct consume_ring *cr, int fd)
{
	struct consume_fd *f;
	size_t i;

	if (cr->last_fd < cr->n_fds && cr->fds[cr->last_fd].fd == fd)
		return &cr->fds[cr->last_fd];
	for (i = 0; i < cr->n_fds; i++)
		if (cr->fds[i].fd == fd) {
			cr->last_fd = i;
			return &cr->fds[i];
		}
	if (cr->n_fds == cr->cap_fds) {
		size_t nc = cr->cap_fds ? 2 * cr->cap_fds : 4;
		struct consume_fd *nf = realloc(cr->fds, nc * sizeof(*nf));
		if (!nf)
			return NULL;
		cr->fds = nf;
		cr->cap_fds = nc;
	}
	f = &cr->fds[cr->n_fds];
	memset(f, 0, sizeof(*f));
	f->buf = malloc(RING_LINE_CAP);
	if (!f->buf)
		return NULL;
	f->fd = fd;
	linebuf_init(&f->lb, f->buf, RING_LINE_CAP);
	cr->n_fds++;
	return f;
}

/* A write's time in CLOCK_MONOTONIC ns, from the ring's clock. */
static uint64_t consume_ns(const struct consume *c, const struct consume_ring *cr, uint64_t t)
{
	double rate;

	if (cr->r->clock != RING_CLOCK_TSC)
		return t;
	if (c->tsc1 <= c->tsc0)
		return (uint64_t)c->mono1 + (t > c->tsc1 ? (t - c->tsc1) / 3 : 0);   /* ~3 GHz until measured */
	rate = (double)(c->mono1 - c->mono0) / (double)(c->tsc1 - c->tsc0);
	return (uint64_t)(c->mono1 + (long long)(((double)(int64_t)(t - c->tsc1)) * rate));
}

/* The record of one line into c->rec (with its '\n'); 0 when the line needs none. */
static size_t consume_format(struct consume *c, struct consume_ring *cr, struct consume_fd *f, const char *line, size_t n,
			     int partial)
{
	struct classify_result res;
	struct caprec_head h;
	uint64_t ns;

	classify_line(line, n, c->o.rules, c->sc, &res);
	if (res.kind == CLASSIFY_OTHER && !c->o.all_lines)
		return 0;
	/* f->mono is in the ring's clock: converted only for the lines that get a record */
	ns = consume_ns(c, cr, f->mono);
	/* the time of the bytes that ended the line; wall time from the offset now */
	h.mono.tv_sec = (time_t)(ns / 1000000000u);
	h.mono.tv_nsec = (long)(ns % 1000000000u);
	{
		long long t = (long long)ns + c->wall_off_ns;
		h.t.tv_sec = (time_t)(t / 1000000000);
		h.t.tv_nsec = (long)(t % 1000000000);
	}
	h.pid = cr->pid;
	h.tid = f->tid;
	h.fd = f->fd;
	h.partial = partial;
	if (res.kind == CLASSIFY_AUDIT)
		return caprec_audit(c->rec, CONSUME_REC_CAP, &h, res.obj, res.obj_len);
	if (res.kind == CLASSIFY_BANNER)
		return caprec_banner(c->rec, CONSUME_REC_CAP, &h, banner_set_name(c->o.rules, (size_t)res.rule),
				     line, n);
	return caprec_line(c->rec, CONSUME_REC_CAP, &h, line, n);
}

struct consume_linectx {
	struct consume *c;
	struct consume_ring *cr;
	struct consume_fd *f;
	const char *why;        /* every line of this feed is uncertain, for this reason */
	int count;              /* lines count toward the process's `lines` */
};

static void consume_line(void *ctx, const char *line, size_t n, int overlong)
{
	struct consume_linectx *x = ctx;
	const char *why = x->why;
	size_t len;

	if (x->count)
		x->cr->lines++;
	if (x->f->unknown_next) {
		x->f->unknown_next = 0;
		if (!why)
			why = consume_why_unknown;
	}
	if (overlong) {
		x->cr->lost_long++;
		return;
	}
	len = consume_format(x->c, x->cr, x->f, line, n, 0);
	if (!len)
		return;
	if (why)
		consume_uncertain(x->c, x->cr, x->f->fd, 1, why, x->c->rec, len - 1);
	else
		consume_put(x->c, x->cr->out, x->c->rec, len, CAPFILE_LINES, x->cr->pid, 1);
}

/*
 * 1 when no line of p[0..n) can get a record: the capture keeps only audit
 * and banner lines, and the bytes hold no '{' (an audit object starts with
 * one), no ESC (colour codes, which are stripped before rules are matched,
 * could hide a rule's text) and no rule's literal text anywhere (a line
 * that matches a rule holds it: banner.c's prefilter, run once over all
 * the lines). Most of a server's lines are settled so.
 */
static int consume_quiet(const struct consume *c, const char *p, size_t n)
{
	return !c->o.all_lines && n <= RING_LINE_CAP && !memchr(p, '{', n) && !memchr(p, 0x1b, n) &&
	       !banner_set_candidates(c->o.rules, p, n);
}

/* Bytes that reached the fd, in order, into its stream. */
static void consume_feed(struct consume *c, struct consume_ring *cr, struct consume_fd *f, const char *p, size_t n,
			 const char *why)
{
	struct consume_linectx x = { c, cr, f, why, 1 };

	if (f->skipping) {
		/* the rest of a line the process counted lost */
		const char *nl = memchr(p, '\n', n);
		if (!nl)
			return;
		f->skipping = 0;
		cr->lines++;
		n -= (size_t)(nl + 1 - p);
		p = nl + 1;
		if (!n)
			return;
	}
	if (!why && !f->unknown_next && !linebuf_pending(&f->lb) && consume_quiet(c, p, n)) {
		/* its lines are counted, and a last one left open is kept for the bytes that end it */
		const char *end = p + n, *q = p, *nl;

		while ((nl = memchr(q, '\n', (size_t)(end - q)))) {
			cr->lines++;
			q = nl + 1;
		}
		if (q < end)
			linebuf_feed(&f->lb, q, (size_t)(end - q), consume_line, &x);
		return;
	}
	linebuf_feed(&f->lb, p, n, consume_line, &x);
	if (why && linebuf_pending(&f->lb))
		f->unknown_next = 1;
}

/*
 * What the process says happened to the fd before these bytes, where no
 * entry could say it when it happened (RING_F_*): lost bytes, whose lines
 * it counted; the open line is one of them, and so are the bytes up to the
 * next '\n' when they left a line open.
 */
static void consume_told(struct consume_fd *f, uint16_t flags)
{
	if (flags & RING_F_LOSS) {
		linebuf_reset(&f->lb);
		f->unknown_next = 0;
		f->skipping = (flags & RING_F_SKIP) != 0;
	}
}

/*
 * Bytes whose place among the fd's others is not known: written as
 * uncertain lines of their own, never joined to the fd's partial line
 * (which would invent a line), and the fd's next line uncertain too.
 * Unless `strict`, whole lines onto a line boundary, being the same lines
 * in any order, are fed.
 */
static void consume_loose(struct consume *c, struct consume_ring *cr, struct consume_fd *f, const char *p, size_t n,
			  int strict)
{
	struct consume_fd tmp;
	struct consume_linectx x = { c, cr, &tmp, consume_why_order, 1 };
	char *buf;

	if (!n)
		return;
	if (!strict && !linebuf_pending(&f->lb) && p[n - 1] == '\n') {
		consume_feed(c, cr, f, p, n, NULL);
		return;
	}
	/* a stream of their own, forgotten after */
	buf = malloc(RING_LINE_CAP);
	if (!buf)
		return;
	tmp = *f;
	tmp.unknown_next = 0;
	linebuf_init(&tmp.lb, buf, RING_LINE_CAP);
	linebuf_feed(&tmp.lb, p, n, consume_line, &x);
	linebuf_flush(&tmp.lb, consume_line, &x);
	free(buf);
	f->unknown_next = 1;
}

/* 1 when the write's accepted bytes end a line and it was all written. */
static int consume_whole(const struct consume_write *w)
{
	return w->took == w->len && w->took && w->bytes[w->took - 1] == '\n';
}

/* Applies the fd's queue from its head while the head is settled. */
static void consume_apply(struct consume *c, struct consume_ring *cr, struct consume_fd *f)
{
	size_t i, k;

	while (f->n_q && f->q[0].committed) {
		struct consume_write *w = &f->q[0];
		size_t used = 1;

		if (w->flags & RING_M_UNKNOWN) {
			f->unknown_next = 1;
		} else if (w->flags & RING_M_CLOSE) {
			/* the fd closed with its last line open: a partial line */
			struct consume_linectx x = { c, cr, f, NULL, 0 };
			size_t len;

			if (w->flags & RING_F_LOSS) {
				/* lost, and counted: nothing of it is recorded */
			} else if (f->lb.over) {
				cr->lost_long++;
			} else if (f->lb.len && (len = consume_format(c, cr, f, f->lb.buf, f->lb.len, 1))) {
				if (f->unknown_next)
					consume_uncertain(c, cr, f->fd, 1, consume_why_unknown, c->rec, len - 1);
				else
					consume_put(c, cr->out, c->rec, len, CAPFILE_LINES, cr->pid, 1);
			}
			(void)x;
			linebuf_reset(&f->lb);
			f->unknown_next = 0;
			f->skipping = 0;
		} else {
			f->mono = w->mono;
			f->tid = w->tid;
			if (w->flags & RING_W_UNLOCKED) {
				consume_told(f, w->flags);
				consume_loose(c, cr, f, w->bytes, w->took, 0);
			} else {
				/*
				 * Handlers' writes that ran while this one was in flight
				 * follow it: if the order matters, all of them are uncertain.
				 */
				int clean = !linebuf_pending(&f->lb) && consume_whole(w);
				for (k = 1; k < f->n_q && (f->q[k].flags & RING_W_RACE); k++)
					if (!f->q[k].committed)
						return;   /* wait for it */
					else if (!consume_whole(&f->q[k]))
						clean = 0;
				if (k == 1 || clean) {
					consume_told(f, w->flags);
					consume_feed(c, cr, f, w->bytes, w->took,
						     (w->flags & RING_F_UNSETTLED) ? consume_why_unsettled :
						     (w->flags & RING_W_DOUBT) ? consume_why_doubt : NULL);
					for (i = 1; i < k; i++) {
						f->mono = f->q[i].mono;
						consume_feed(c, cr, f, f->q[i].bytes, f->q[i].took, NULL);
					}
				} else {
					consume_told(f, w->flags);
					for (i = 0; i < k; i++)
						consume_loose(c, cr, f, f->q[i].bytes, f->q[i].took, 1);
				}
				used = k;
			}
		}
		for (i = 0; i < used; i++)
			free(f->q[i].bytes);
		memmove(f->q, f->q + used, (f->n_q - used) * sizeof(*f->q));
		f->n_q -= used;
	}
}

static struct consume_write *consume_enqueue(struct consume_fd *f)
{
	if (f->n_q == f->cap_q) {
		size_t nc = f->cap_q ? 2 * f->cap_q : 8;
		struct consume_write *nq = realloc(f->q, nc * sizeof(*nq));
		if (!nq)
			return NULL;
		f->q = nq;
		f->cap_q = nc;
	}
	memset(&f->q[f->n_q], 0, sizeof(f->q[0]));
	return &f->q[f->n_q++];
}

static void consume_commit(struct consume *c, struct consume_ring *cr, const struct ring_ent *e)
{
	size_t i, k;

	for (i = 0; i < cr->n_risk; i++)
		if (cr->risk[i].id == e->ref) {
			cr->risk[i] = cr->risk[--cr->n_risk];
			return;
		}
	for (i = 0; i < cr->n_fds; i++) {
		struct consume_fd *f = &cr->fds[i];
		for (k = 0; k < f->n_q; k++)
			if (f->q[k].id == e->ref && !f->q[k].committed) {
				size_t j;
				f->q[k].committed = 1;
				f->q[k].flags |= e->flags & (RING_W_DOUBT | RING_F_LOSS | RING_F_SKIP);
				f->q[k].took = e->a < f->q[k].len ? e->a : f->q[k].len;
				/* writes before it whose commits could not go in: whether they were written is not known */
				for (j = 0; (e->flags & RING_F_UNSETTLED) && j < k; j++)
					if (!f->q[j].committed) {
						f->q[j].committed = 1;
						f->q[j].flags |= RING_F_UNSETTLED;
						f->q[j].took = f->q[j].len;
					}
				consume_apply(c, cr, f);
				return;
			}
	}
}

static void consume_parent_ended(struct consume *c, pid_t pid)
{
	if (c->n_parent_ended == c->cap_parent_ended) {
		size_t nc = c->cap_parent_ended ? 2 * c->cap_parent_ended : 16;
		pid_t *np = realloc(c->parent_ended, nc * sizeof(*np));
		if (!np)
			return;
		c->parent_ended = np;
		c->cap_parent_ended = nc;
	}
	c->parent_ended[c->n_parent_ended++] = pid;
}

static int consume_parent_told(const struct consume *c, pid_t pid)
{
	size_t i;

	for (i = 0; i < c->n_parent_ended; i++)
		if (c->parent_ended[i] == pid)
			return 1;
	return 0;
}

/* Everything published in the ring, in order. */
static void consume_drain(struct consume *c, struct consume_ring *cr)
{
	const struct ring_ent *e;
	uint64_t freed = cr->pos, pass;
	size_t i;

	/* the process took the ring over (it thought the reader gone): it is its own now */
	if (atomic_load(&cr->r->state) & RING_S_DIRECT)
		return;
	/* records go to one file at a time: the other file's now, at an entry boundary */
	if (c->n_recs && c->out_to != cr->out)
		consume_flush(c);
again:
	pass = cr->pos;
	while ((e = ring_next(cr->r, &cr->pos))) {
		const char *p = ring_payload(e);
		size_t room = ring_payload_len(e);
		struct consume_fd *f;
		struct consume_write *w;

		switch (e->kind) {
		case RING_REC:
			if (e->b <= room) {
				uint64_t cnt;
				enum capfile_kind kind = capfile_kind_of(p, e->b, &cnt);
				consume_put(c, cr->out, p, e->b, (int)kind, cr->pid, cnt);
			}
			if (e->flags & RING_F_CHILD_END)
				consume_parent_ended(c, (pid_t)e->ref);
			break;
		case RING_WRITE:
			if (e->a >= RING_FD_MAX || sizeof(struct ring_wr) + e->b > room)
				break;
			f = consume_fd(cr, (int)e->a);
			if (f && !f->n_q && !(e->flags & RING_W_RACE)) {
				/*
				 * The usual case: nothing of this fd waits, and the write is
				 * settled (written already, or its commit is the next entry):
				 * cut it into lines straight from the ring, no copy.
				 */
				uint64_t look = cr->pos;
				const struct ring_ent *nx = e->ref ? ring_next(cr->r, &look) : NULL;
				uint32_t took = e->b;

				if (e->ref && (!nx || nx->kind != RING_COMMIT || nx->ref != e->ref))
					goto queue;
				if (nx) {
					took = nx->a < e->b ? nx->a : e->b;
					cr->pos = look;
				}
				{
					struct ring_wr wr;
					memcpy(&wr, p, sizeof(wr));
					f->mono = wr.mono_ns;
					f->tid = wr.tid;
				}
				{
					uint16_t fl = e->flags | (nx ? nx->flags : 0);
					if (fl & RING_F_LOSS)
						consume_told(f, fl);
					if (e->flags & RING_W_UNLOCKED)
						consume_loose(c, cr, f, p + sizeof(struct ring_wr), took, 0);
					else
						consume_feed(c, cr, f, p + sizeof(struct ring_wr), took,
							     (fl & RING_W_DOUBT) ? consume_why_doubt : NULL);
				}
				break;
			}
		queue:
			w = f ? consume_enqueue(f) : NULL;
			if (!w)
				break;
			w->bytes = malloc(e->b ? e->b : 1);
			if (!w->bytes) {
				f->n_q--;
				break;
			}
			{
				struct ring_wr wr;
				memcpy(&wr, p, sizeof(wr));
				w->mono = wr.mono_ns;
				w->tid = wr.tid;
			}
			memcpy(w->bytes, p + sizeof(struct ring_wr), e->b);
			w->id = e->ref;
			w->flags = e->flags;
			w->len = e->b;
			w->committed = !e->ref;
			w->took = e->b;
			consume_apply(c, cr, f);
			break;
		case RING_COMMIT:
			consume_commit(c, cr, e);
			break;
		case RING_RISK:
			if (cr->n_risk == cr->cap_risk) {
				size_t nc = cr->cap_risk ? 2 * cr->cap_risk : 8;
				struct consume_risky_call *nr = realloc(cr->risk, nc * sizeof(*nr));
				if (!nr)
					break;
				cr->risk = nr;
				cr->cap_risk = nc;
			}
			cr->risk[cr->n_risk].id = e->ref;
			cr->risk[cr->n_risk].fd = (int)e->a;
			cr->risk[cr->n_risk].lines = e->b;
			cr->n_risk++;
			break;
		case RING_MARK:
			if (e->flags & RING_E_EXEC_FAILED) {
				cr->ended = 0;   /* the exec failed: the process goes on */
			} else if (e->flags & RING_M_FORK) {
				/* a child shares the fds now: open lines may be continued by it */
				for (i = 0; i < cr->n_fds; i++)
					if (linebuf_pending(&cr->fds[i].lb) || cr->fds[i].n_q)
						cr->fds[i].unknown_next = 1;
			} else if (e->a < RING_FD_MAX && (f = consume_fd(cr, (int)e->a)) && (w = consume_enqueue(f))) {
				/* in the fd's order, behind its writes in flight */
				w->flags = e->flags;
				w->committed = 1;
				consume_apply(c, cr, f);
			}
			break;
		case RING_END:
			cr->ended = 1;
			cr->end_how = e->a;
			cr->end_code = (int32_t)e->b;
			cr->end_lost = e->ref;
			break;
		default:
			break;
		}
		/* free room as the reading goes, not only at its end: writers may be waiting */
		if (cr->pos - freed >= CONSUME_FREE_EVERY || c->out_len >= CONSUME_OUT_CAP) {
			consume_flush(c);
			freed = cr->pos;
		}
	}
	if (cr->pos - freed >= CONSUME_FREE_EVERY / 4)
		consume_flush(c);
	/* rung again while this pass read: read on, as long as there is something to read */
	if (ring_quiet(cr->r) && cr->pos != pass) {
		freed = cr->pos;
		goto again;
	}
}

/* --- processes ----------------------------------------------------------------- */

/* 1 while pid is the process that made the ring (not reaped, not reused). */
static int consume_same(struct consume_ring *cr)
{
	long long st = procstat_read(cr->pid, PROCSTAT_STARTTIME, NULL);

	return st >= 0 && (!cr->r->starttime || (uint64_t)st == cr->r->starttime);
}

static int consume_reaped_status(struct consume *c, pid_t pid, int *status)
{
	size_t i;

	for (i = c->n_reaped; i-- > 0;)
		if (c->reaped[i].pid == pid) {
			*status = c->reaped[i].status;
			return 1;
		}
	return 0;
}

void consume_reaped(struct consume *c, pid_t pid, int status)
{
	size_t i;

	if (c->n_reaped == c->cap_reaped) {
		size_t nc = c->cap_reaped ? 2 * c->cap_reaped : 16;
		struct consume_reaped *np = realloc(c->reaped, nc * sizeof(*np));
		if (!np)
			return;
		c->reaped = np;
		c->cap_reaped = nc;
	}
	c->reaped[c->n_reaped].pid = pid;
	c->reaped[c->n_reaped].status = status;
	c->n_reaped++;
	for (i = 0; i < c->n_rings; i++)
		if (c->rings[i].pid == pid && c->rings[i].state != CONSUME_RING_CLOSED) {
			c->rings[i].reaped = 1;
			consume_ring_enter(&c->rings[i], CONSUME_RING_DEAD);
		}
}

/* The process ended: note when, and read how while it is a zombie. */
static void consume_died(struct consume_ring *cr)
{
	char state = 0;
	long long code;

	if (cr->state != CONSUME_RING_LIVE)
		return;
	consume_ring_enter(cr, CONSUME_RING_DEAD);
	if (consume_same(cr)) {
		code = procstat_read(cr->pid, PROCSTAT_EXIT_CODE, &state);
		if (state == 'Z' && code >= 0)
			cr->zombie_status = (int)code;
	} else {
		cr->gone = 1;
	}
}

/* The end record of a process that wrote none (by "capture"), unless its parent wrote one. */
static void consume_end(struct consume *c, struct consume_ring *cr)
{
	struct caprec_head h;
	struct caprec_end e;
	char buf[512];
	int status = -1;
	size_t i;

	for (i = 0; i < c->n_parent_ended; i++)
		if (c->parent_ended[i] == cr->pid)
			return;
	if (!consume_reaped_status(c, cr->pid, &status))
		status = cr->zombie_status;
	memset(&e, 0, sizeof(e));
	e.by = "capture";
	e.code = -1;
	if (status >= 0 && WIFSIGNALED(status)) {
		e.how = "signal";
		e.sig = WTERMSIG(status);
	} else if (status >= 0 && WIFEXITED(status)) {
		/* exited without its end record: a process whose shim did not get to write one */
		e.how = "exit";
		e.code = WEXITSTATUS(status);
	} else {
		e.how = "unknown";
	}
	consume_head(&h, cr->pid, -1);
	consume_put(c, cr->out, buf, caprec_end(buf, sizeof(buf), &h, &e), CAPFILE_END, cr->pid, 0);
}

/* The end record the process asked for (RING_END), with the lines counted here. */
static void consume_own_end(struct consume *c, struct consume_ring *cr)
{
	struct caprec_head h;
	struct caprec_end e;
	char buf[512];
	uint64_t lost = 0;
	int k;

	for (k = 0; k < RING_LOST__COUNT; k++)
		lost += atomic_load(&cr->r->lost[k]);
	/* its records so far to the file: what could not be written is counted in lost */
	if (cr->out && c->n_recs)
		consume_flush(c);
	memset(&e, 0, sizeof(e));
	e.how = cr->end_how == RING_HOW_EXEC ? "exec" : cr->end_how == RING_HOW__EXIT ? "_exit" : "exit";
	e.code = cr->end_how == RING_HOW_EXEC ? -1 : cr->end_code;
	e.by = "shim";
	e.counts = 1;
	e.lines = cr->lines;
	e.lost = lost + (cr->out ? capfile_unwritten(cr->out, cr->pid) : 0);
	consume_head(&h, cr->pid, -1);
	consume_put(c, cr->out, buf, caprec_end(buf, sizeof(buf), &h, &e), CAPFILE_END, cr->pid, 0);
}

/*
 * The end of a process image (it ended, or it exec'd): what it left
 * unsaid. Writes still in flight are uncertain, and so are the lines of
 * stdio calls that may have been writing; a line whose bytes reached the
 * fd with no '\n' after them is partial; lines in stdio buffers never
 * reached an fd (lost); then the losses not yet told, and the end record.
 */
static void consume_settle(struct consume *c, struct consume_ring *cr)
{
	struct ring_hdr *r = cr->r;
	size_t i, k;
	int j;

	if (atomic_load(&r->state) & RING_S_DIRECT) {
		/* the process wrote its own records since: only an end it could not write */
		if (!atomic_load(&r->direct_end))
			consume_end(c, cr);
		consume_ring_enter(cr, CONSUME_RING_SETTLED);
		return;
	}
	consume_drain(c, cr);
	if (cr->pos != atomic_load(&r->head))
		consume_uncertain(c, cr, -1, 1, "the process ended while writing records: the rest of its ring could not be read", NULL, 0);
	for (i = 0; i < cr->n_fds; i++) {
		struct consume_fd *f = &cr->fds[i];
		int pending = 0;

		for (k = 0; k < f->n_q; k++) {
			struct consume_write *w = &f->q[k];
			if (w->flags & (RING_M_UNKNOWN | RING_M_CLOSE))
				continue;
			/* the lines this write would have ended, had it all been written */
			struct consume_linectx x = { c, cr, f, consume_why_flight, 0 };
			f->mono = w->mono;
			f->tid = w->tid;
			linebuf_feed(&f->lb, w->bytes, w->len, consume_line, &x);
			pending = 1;
		}
		if (pending) {
			if (linebuf_pending(&f->lb))
				consume_uncertain(c, cr, f->fd, 1, consume_why_flight, NULL, 0);
		} else if ((unsigned)f->fd < RING_FD_MAX && (ring_fdflags(r)[f->fd] & RING_FDF_TELL_LOSS)) {
			/* bytes after it were lost, and no entry said so: the process counted the line */
		} else if (f->lb.over) {
			cr->lost_long++;
		} else if (f->lb.len) {
			size_t len = consume_format(c, cr, f, f->lb.buf, f->lb.len, 1);
			if (len && f->unknown_next)
				consume_uncertain(c, cr, f->fd, 1, consume_why_unknown, c->rec, len - 1);
			else if (len)
				consume_put(c, cr->out, c->rec, len, CAPFILE_LINES, cr->pid, 1);
		}
		linebuf_reset(&f->lb);
	}
	for (i = 0; i < cr->n_risk; i++)
		consume_uncertain(c, cr, cr->risk[i].fd, cr->risk[i].lines,
				  "the process ended inside a call that may have written these lines", NULL, 0);
	if (!cr->ended) {
		for (j = 0; j < RING_STDIO; j++) {
			int fd = atomic_load(&r->stdio[j].fd), risky = 0;
			uint64_t lines = atomic_load(&r->stdio[j].lines) + (atomic_load(&r->stdio[j].bytes) ? 1 : 0);

			for (i = 0; i < cr->n_risk; i++)
				risky |= cr->risk[i].fd == fd;
			if (fd >= 0 && lines && !risky)
				atomic_fetch_add(&r->lost[RING_LOST_STDIO_DEATH], lines);
		}
	}
	cr->n_risk = 0;
	if (cr->ended && cr->end_how == RING_HOW_EXEC && cr->end_lost)
		atomic_fetch_add(&r->lost[RING_LOST_STDIO_EXEC], cr->end_lost);
	atomic_fetch_add(&r->lost[RING_LOST_LONG], cr->lost_long);
	cr->lost_long = 0;
	for (j = 0; j < RING_LOST__COUNT; j++) {
		uint64_t total = atomic_load(&r->lost[j]), told = atomic_load(&r->lost_told[j]);
		if (total > told) {
			consume_lost(c, cr, -1, total - told, ring_lost_reason[j]);
			atomic_store(&r->lost_told[j], total);
		}
	}
	if (cr->ended)
		consume_own_end(c, cr);
	else
		consume_end(c, cr);
	consume_ring_enter(cr, CONSUME_RING_SETTLED);
}

static void consume_close(struct consume_ring *cr);

/* Rings settled whose last records are in the file (consume_flush) are closed. */
static void consume_close_settled(struct consume *c)
{
	size_t i;

	for (i = 0; i < c->n_rings; i++)
		if (c->rings[i].state == CONSUME_RING_SETTLED)
			consume_close(&c->rings[i]);
}

static void consume_close(struct consume_ring *cr)
{
	size_t i, k;

	if (cr->r && !cr->borrowed)
		munmap(cr->r, cr->size);
	cr->r = NULL;
	if (cr->pidfd >= 0)
		close(cr->pidfd);
	cr->pidfd = -1;
	if (!cr->borrowed)
		unlink(cr->path);
	for (i = 0; i < cr->n_fds; i++) {
		for (k = 0; k < cr->fds[i].n_q; k++)
			free(cr->fds[i].q[k].bytes);
		free(cr->fds[i].q);
		free(cr->fds[i].buf);
	}
	free(cr->fds);
	cr->fds = NULL;
	cr->n_fds = cr->cap_fds = 0;
	free(cr->risk);
	cr->risk = NULL;
	cr->n_risk = cr->cap_risk = 0;
	consume_ring_enter(cr, CONSUME_RING_CLOSED);
}

/* Maps a ring file once its header is there; 0 while it is not (yet). */
static int consume_map(struct consume *c, struct consume_ring *cr)
{
	struct stat st;
	struct ring_hdr *r;
	int fd;

	fd = open(cr->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || (uint64_t)st.st_size < ring_file_size(0)) {
		close(fd);
		return 0;
	}
	r = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r == MAP_FAILED)
		return 0;
	if (atomic_load(&r->magic) != RING_MAGIC || r->size != (uint64_t)st.st_size || r->pid != cr->pid) {
		munmap(r, (size_t)st.st_size);
		return 0;
	}
	cr->r = r;
	cr->size = (size_t)st.st_size;
	cr->pos = atomic_load(&r->tail);
	cr->out = consume_file_for(c, cr->pid);
	cr->pidfd = (int)syscall(SYS_pidfd_open, cr->pid, 0);
	/* without pidfd_open (Linux < 5.3, valgrind) liveness is polled below */
	if ((cr->pidfd < 0 && errno == ESRCH) || !consume_same(cr))
		consume_died(cr);
	c->st.processes++;
	return 1;
}

static void consume_scan(struct consume *c)
{
	DIR *d = opendir(c->dir);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		long pid;
		unsigned long long seq;
		char tail;
		size_t i;
		struct consume_ring *cr;

		if (sscanf(de->d_name, "ring.%ld.%llu%c", &pid, &seq, &tail) != 2 || pid <= 0)
			continue;
		for (i = 0; i < c->n_rings; i++)
			if (c->rings[i].pid == pid && c->rings[i].seq == seq)
				break;
		if (i < c->n_rings)
			continue;
		if (c->n_rings == c->cap_rings) {
			size_t nc = c->cap_rings ? 2 * c->cap_rings : 16;
			struct consume_ring *nr = realloc(c->rings, nc * sizeof(*nr));
			if (!nr)
				break;
			c->rings = nr;
			c->cap_rings = nc;
		}
		cr = &c->rings[c->n_rings++];
		memset(cr, 0, sizeof(*cr));
		snprintf(cr->path, sizeof(cr->path), "%s/%s", c->dir, de->d_name);
		cr->pid = (pid_t)pid;
		cr->seq = seq;
		cr->pidfd = -1;
		cr->zombie_status = -1;
		cr->seen_ms = consume_now_ms();
	}
	closedir(d);
	/*
	 * In the order they were made (seq counts rings across processes):
	 * an exec'd image's ring after the ring of the image before it.
	 */
	for (size_t i = 1; i < c->n_rings; i++) {
		struct consume_ring t = c->rings[i];
		size_t j = i;
		while (j > 0 && c->rings[j - 1].seq > t.seq) {
			c->rings[j] = c->rings[j - 1];
			j--;
		}
		c->rings[j] = t;
	}
}

size_t consume_round(struct consume *c)
{
	uint64_t created = atomic_load(&c->ctl->created);
	long long now = consume_now_ms();
	size_t i, j, open = 0;

	c->wall_off_ns = mono_wall_offset_ns();
	if (c->ctl->clock == RING_CLOCK_TSC) {
		mono_tsc_pair(&c->tsc1, &c->mono1);
		/* for a process that goes on without the reader */
		c->ctl->tsc0 = c->tsc0;
		c->ctl->mono0 = c->mono0;
		c->ctl->tsc1 = c->tsc1;
		c->ctl->mono1 = c->mono1;
	}
	if (created != c->created_seen) {
		consume_scan(c);
		c->created_seen = created;
	}
	if (created & 1) {
		if (!c->odd_since_ms)
			c->odd_since_ms = now;
	} else {
		c->odd_since_ms = 0;
	}
	for (i = 0; i < c->n_rings; i++) {
		struct consume_ring *cr = &c->rings[i];

		if (cr->state == CONSUME_RING_CLOSED || cr->borrowed)
			continue;
		if (!cr->r && !consume_map(c, cr)) {
			/* a ring file without its header: being made, or its maker died making it */
			if (now - cr->seen_ms > CONSUME_UNREADY_MS && kill(cr->pid, 0) && errno == ESRCH) {
				unlink(cr->path);
				consume_ring_enter(cr, CONSUME_RING_CLOSED);
			} else {
				open++;
			}
			continue;
		}
		consume_drain(c, cr);
	}
	for (i = 0; i < c->n_rings; i++) {
		struct consume_ring *cr = &c->rings[i];
		struct pollfd pf;

		if (cr->state == CONSUME_RING_CLOSED || !cr->r || cr->borrowed)
			continue;
		if (cr->state == CONSUME_RING_LIVE && cr->pidfd >= 0) {
			pf.fd = cr->pidfd;
			pf.events = POLLIN;
			pf.revents = 0;
			if (poll(&pf, 1, 0) > 0)
				consume_died(cr);
		} else if (cr->state == CONSUME_RING_LIVE) {
			char state = 0;
			/* no pidfd: gone, reused, or a zombie is an end */
			if (!consume_same(cr) || (procstat_read(cr->pid, PROCSTAT_STATE, &state), state == 'Z'))
				consume_died(cr);
		}
		/* an exec: the same process, a newer ring of its own */
		if (cr->ended && cr->state == CONSUME_RING_LIVE) {
			for (j = 0; j < c->n_rings; j++)
				if (j != i && c->rings[j].pid == cr->pid && c->rings[j].seq > cr->seq && c->rings[j].r &&
				    c->rings[j].r->starttime == cr->r->starttime)
					break;
			if (j < c->n_rings) {
				consume_drain(c, cr);
				consume_settle(c, cr);
				continue;
			}
		}
		if (cr->state == CONSUME_RING_DEAD) {
			if (!cr->reaped && !cr->gone && !consume_same(cr))
				cr->gone = 1;
			/*
			 * A parent that reaps it says how it ended (its record may come
			 * a little after the death is seen): give it time to.
			 */
			if (cr->reaped || (cr->gone && (cr->ended || consume_parent_told(c, cr->pid))) ||
			    now - cr->dead_ms >= c->o.settle_ms) {
				consume_settle(c, cr);
				continue;
			}
		}
		open++;
	}
	if ((created & 1) && now - c->odd_since_ms < CONSUME_UNREADY_MS)
		open++;
	consume_flush(c);
	consume_close_settled(c);
	return open;
}

int consume_attach(struct consume *c, struct ring_hdr *r, pid_t pid)
{
	struct consume_ring *cr;

	if (c->n_rings == c->cap_rings) {
		size_t nc = c->cap_rings ? 2 * c->cap_rings : 16;
		struct consume_ring *nr = realloc(c->rings, nc * sizeof(*nr));
		if (!nr)
			return -1;
		c->rings = nr;
		c->cap_rings = nc;
	}
	cr = &c->rings[c->n_rings++];
	memset(cr, 0, sizeof(*cr));
	cr->pid = pid;
	cr->seq = ~0ull;
	cr->r = r;
	cr->size = (size_t)r->size;
	cr->pidfd = -1;
	cr->zombie_status = -1;
	cr->borrowed = 1;
	cr->pos = atomic_load(&r->tail);
	cr->out = consume_file_for(c, pid);
	c->st.processes++;
	return 0;
}

void consume_drain_attached(struct consume *c)
{
	size_t i;

	for (i = 0; i < c->n_rings; i++)
		if (c->rings[i].borrowed && c->rings[i].state != CONSUME_RING_CLOSED)
			consume_drain(c, &c->rings[i]);
	consume_flush(c);
}

void consume_detach(struct consume *c, pid_t pid, int status)
{
	size_t i;

	for (i = 0; i < c->n_rings; i++) {
		struct consume_ring *cr = &c->rings[i];
		if (!cr->borrowed || cr->state == CONSUME_RING_CLOSED || cr->pid != pid)
			continue;
		consume_ring_enter(cr, CONSUME_RING_DEAD);
		cr->zombie_status = status;
		consume_settle(c, cr);
	}
	consume_flush(c);
	consume_close_settled(c);
}

size_t consume_pollfds(struct consume *c, struct pollfd *fds, size_t cap)
{
	size_t i, n = 0;

	for (i = 0; i < c->n_rings && n < cap; i++)
		if (c->rings[i].state == CONSUME_RING_LIVE && c->rings[i].pidfd >= 0) {
			fds[n].fd = c->rings[i].pidfd;
			fds[n].events = POLLIN;
			fds[n].revents = 0;
			n++;
		}
	return n;
}

void consume_stats(const struct consume *c, struct consume_stats *st)
{
	*st = c->st;
}

const char *consume_dir(const struct consume *c)
{
	return c->dir;
}

void consume_set_reader(struct consume *c, pid_t pid)
{
	c->ctl->consumer_pid = pid;
}

void consume_forget(struct consume *c)
{
	size_t i;

	if (!c)
		return;
	for (i = 0; i < c->n_rings; i++) {
		struct consume_ring *cr = &c->rings[i];
		if (cr->state == CONSUME_RING_CLOSED)
			continue;
		/* memory only: the files are the other reader's */
		cr->borrowed = 1;
		if (cr->r)
			munmap(cr->r, cr->size);
		cr->r = NULL;
		consume_close(cr);
	}
	if (c->ctl)
		munmap(c->ctl, 4096 + c->out_cap);
	c->ctl = NULL;
	/* the files are the other reader's: nothing written, nothing given back */
	for (i = 0; i < c->n_pp; i++)
		capfile_forget(c->pp[i].cf);
	c->n_pp = 0;
	capfile_forget(c->file);
	c->file = NULL;
	c->n_recs = 0;
	consume_free(c);
}

/* mkdtemp under the first of /dev/shm, $TMPDIR, /tmp that takes it. */
static int consume_mkdir(char *dir, size_t cap)
{
	const char *bases[3] = { "/dev/shm", getenv("TMPDIR"), "/tmp" };
	int i;

	for (i = 0; i < 3; i++) {
		if (!bases[i] || !*bases[i])
			continue;
		if ((size_t)snprintf(dir, cap, "%s/ttaudit-cap.XXXXXX", bases[i]) >= cap)
			continue;
		if (mkdtemp(dir))
			return 0;
	}
	return -1;
}

enum status consume_new(const struct consume_opts *o, struct consume **out, struct status_info *si)
{
	struct consume *c;
	char path[PATH_MAX + 8];
	int fd = -1;
	enum status st;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return status_set(si, STATUS_NOMEM, "out of memory");
	c->o = *o;
	if (!c->o.settle_ms)
		c->o.settle_ms = 200;
	c->rec = malloc(CONSUME_REC_CAP);
	c->rec2 = malloc(CONSUME_REC_CAP);
	c->sc = malloc(sizeof(*c->sc));
	if (consume_grow_recs(c) || !c->rec || !c->rec2 || !c->sc) {
		st = status_set(si, STATUS_NOMEM, "out of memory");
		goto fail;
	}
	banner_scratch_init(c->sc);
	if (o->out_fd >= 0 && !o->per_pid_base &&
	    (st = capfile_new(o->out_fd, o->out_path, consume_warn, c, &c->file, si)) != STATUS_OK)
		goto fail;
	if (consume_mkdir(c->dir, sizeof(c->dir))) {
		st = status_set(si, STATUS_IO, "cannot make a directory for the capture rings in /dev/shm, $TMPDIR or /tmp: %s",
				strerror(errno));
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/ctl", c->dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	/* the out area is sparse, but a file size limit counts its length: within it */
	c->out_cap = RING_CTL_OUT_CAP;
	{
		struct rlimit rl;
		if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 4096 + (rlim_t)c->out_cap)
			c->out_cap = rl.rlim_cur > 8192 ? (size_t)((rl.rlim_cur - 4096) & ~(rlim_t)4095) : 4096;
	}
	if (fd < 0 || ftruncate(fd, (off_t)(4096 + c->out_cap))) {
		st = status_set(si, STATUS_IO, "%s: cannot create: %s", path, strerror(errno));
		goto fail;
	}
	c->ctl = mmap(NULL, 4096 + c->out_cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	fd = -1;
	if (c->ctl == MAP_FAILED) {
		c->ctl = NULL;
		st = status_set(si, STATUS_IO, "%s: cannot map: %s", path, strerror(errno));
		goto fail;
	}
	/* the records wait in the control file, where a process taking over can find them */
	c->out = (char *)c->ctl + 4096;
	c->ctl->out_cap = (uint32_t)c->out_cap;
	c->ctl->consumer_pid = getpid();
	/* each process puts it in its start record (it may not load the rules itself) */
	c->ctl->mode_len = (uint32_t)caprec_mode(c->ctl->mode, sizeof(c->ctl->mode), o->all_lines, o->rules,
						 o->rules_from);
	c->ctl->clock = mono_tsc_is_clocksource() ? RING_CLOCK_TSC : RING_CLOCK_MONO;
	if (c->ctl->clock == RING_CLOCK_TSC) {
		/* the rate comes from this pair and the newest, taken every round */
		mono_tsc_pair(&c->tsc0, &c->mono0);
		c->tsc1 = c->tsc0;
		c->mono1 = c->mono0;
	}
	c->wall_off_ns = mono_wall_offset_ns();
	atomic_store(&c->ctl->magic, RING_CTL_MAGIC);
	*out = c;
	return STATUS_OK;
fail:
	if (fd >= 0)
		close(fd);
	consume_free(c);
	return st;
}

void consume_free(struct consume *c)
{
	char path[PATH_MAX + 8];
	size_t i;

	if (!c)
		return;
	if (c->ctl) {
		for (i = 0; i < c->n_rings; i++) {
			struct consume_ring *cr = &c->rings[i];
			if (cr->state == CONSUME_RING_CLOSED)
				continue;
			/*
			 * Ended processes are settled; live ones (the reader is
			 * stopping early) only read: their shim sees the reader gone
			 * and writes to the capture file itself from then on.
			 */
			if (cr->r) {
				consume_drain(c, cr);
				if (cr->state == CONSUME_RING_DEAD)
					consume_settle(c, cr);
			}
		}
		/* the live ones' checkpoints with it: their shims go on from there */
		consume_flush(c);
		for (i = 0; i < c->n_rings; i++)
			if (c->rings[i].state != CONSUME_RING_CLOSED)
				consume_close(&c->rings[i]);
		munmap(c->ctl, 4096 + c->out_cap);
		snprintf(path, sizeof(path), "%s/ctl", c->dir);
		unlink(path);
		rmdir(c->dir);
	}
	for (i = 0; i < c->n_pp; i++)
		capfile_free(c->pp[i].cf);
	capfile_free(c->file);
	free(c->pp);
	free(c->rings);
	free(c->reaped);
	free(c->parent_ended);
	free(c->recs);
	free(c->rec);
	free(c->rec2);
	free(c->sc);
	free(c);
}
