/*
 * drain.c - `ttaudit capture` is gone (killed): the process reads its own
 * ring to the capture file, as the reader would have, and writes its
 * records itself from then on (docs/capture.md, "When the reader goes
 * away").
 *
 * The reader wrote its records in generations (ring.h, struct ring_ck):
 * a checkpoint of every ring it read on, then the records, then the ring's
 * room given back. So the ring still holds everything from the newest
 * checkpoint whose generation is done, and the checkpoint holds what the
 * reader had of it in its memory (open lines, writes waiting for their
 * commits, stdio calls in flight). The thread that sees the reader gone:
 *
 *   1. closes the ring to new entries (RING_HEAD_CLOSED on head: every
 *      entry that went in is before that point, every reservation after
 *      fails and its writer hands the entry here instead);
 *   2. completes the reader's last write of records if it was cut short
 *      (one process of the capture does, for all: ctl takeover), so that
 *      the file ends at a record boundary and that generation is done;
 *   3. restores the checkpoint into the streams direct writes keep (the
 *      open lines, the flags) and drains the entries after it, in ring
 *      order, through the same code the reader's cutting follows: lines
 *      fed to their fd's stream, commits settling writes, marks, records
 *      copied, lines and losses counted;
 *   4. lets the direct writers go (they wait meanwhile: shim_drain_wait).
 *
 * Writes still in flight when that happens (their pending entry is in the
 * ring, their call not returned) stay queued; their threads hand the
 * commit here when it comes (shim_drain_commit), and what is still in
 * flight when the process ends is uncertain, as the reader would say.
 *
 * Rules of the write path: no malloc (the workspace is mmap'd once), no
 * stdio, no lock a signal handler could deadlock on: the drain's own role
 * is taken by compare-and-swap, waited for with a bound, never by a
 * handler on the thread that holds it.
 */
#include "shim/shim.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/mono.h"

#define DRAIN_Q_MAX 4096          /* writes and marks waiting for a commit, all fds */
#define DRAIN_RISK_MAX 1024       /* stdio calls in flight */
#define DRAIN_OUT_CAP (1024u * 1024)   /* records gathered for one write */
#define DRAIN_ARENA (4u * 1024 * 1024) /* bytes handed here that must wait in the queue */
#define DRAIN_WAIT_MS 5000        /* the longest a writer waits for the drain */

struct dq {
	const char *bytes;      /* in the ring, the checkpoint or the arena: stable */
	uint64_t id, mono;
	uint32_t tid, len, took;
	uint16_t flags;
	uint8_t committed, mark;
	int fd;
};

struct drain {
	uint64_t pos, end;      /* the next entry, and where the ring was closed */
	struct dq q[DRAIN_Q_MAX];
	size_t n_q;
	struct {
		uint64_t id;
		int32_t fd;
		uint32_t lines;
	} risk[DRAIN_RISK_MAX];
	size_t n_risk;
	/* a write's stamp to CLOCK_MONOTONIC and CLOCK_REALTIME */
	int tsc;
	uint64_t tsc0;
	int64_t mono0, wall_off;
	double ns_per_tick;
	size_t arena_len;
	char arena[DRAIN_ARENA];
	char out[DRAIN_OUT_CAP];
};

static struct drain *shim_dr;

static const char drain_why_flight[] = "the process ended while the write of this line was in flight";
static const char drain_why_doubt[] = "a stdio flush failed or went unseen: how much of it reached the fd is not known";
static const char drain_why_unsettled[] =
	"the commit of this write could not go in the capture ring (it stayed full): how much of it reached the fd is not known";
static const char drain_why_gone[] = "in the capture ring when ttaudit capture went away";

static uint32_t drain_self(void)
{
	uint32_t t = shim_self_tid();

	return t ? t : (uint32_t)syscall(SYS_gettid);
}

static void drain_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* --- time --------------------------------------------------------------------- */

/*
 * The clock of the ring's stamps. The reader left its calibration in the
 * control page (its first pair and its latest); without it, two pairs a
 * few milliseconds apart.
 */
static void drain_clock(struct drain *d)
{
	struct ring_ctl *c = shim_ctl();
	uint64_t t1;
	int64_t m1;

	d->wall_off = mono_wall_offset_ns();
	d->tsc = shim_area->clock == RING_CLOCK_TSC;
	if (!d->tsc)
		return;
	if (c && c->tsc1 > c->tsc0 + 1000000 && c->mono1 > c->mono0) {
		d->tsc0 = c->tsc1;
		d->mono0 = c->mono1;
		d->ns_per_tick = (double)(c->mono1 - c->mono0) / (double)(c->tsc1 - c->tsc0);
		return;
	}
	d->tsc0 = mono_tsc();
	d->mono0 = mono_ns();
	drain_sleep_ms(2);
	t1 = mono_tsc();
	m1 = mono_ns();
	d->ns_per_tick = t1 > d->tsc0 ? (double)(m1 - d->mono0) / (double)(t1 - d->tsc0) : 1.0;
}

static void drain_origin(const struct drain *d, struct shim_origin *o, uint64_t stamp, uint32_t tid)
{
	int64_t ns = d->tsc ? d->mono0 + (int64_t)((double)(int64_t)(stamp - d->tsc0) * d->ns_per_tick) : (int64_t)stamp;
	int64_t w = ns + d->wall_off;

	o->mono.tv_sec = (time_t)(ns / 1000000000);
	o->mono.tv_nsec = (long)(ns % 1000000000);
	o->t.tv_sec = (time_t)(w / 1000000000);
	o->t.tv_nsec = (long)(w % 1000000000);
	o->tid = tid ? (long)tid : 0;
}

/* --- the queue ------------------------------------------------------------------ */

static int drain_has_q(const struct drain *d, int fd)
{
	size_t i;

	for (i = 0; i < d->n_q; i++)
		if (d->q[i].fd == fd)
			return 1;
	return 0;
}

static struct dq *drain_enqueue(struct drain *d)
{
	if (d->n_q == DRAIN_Q_MAX)
		return NULL;
	memset(&d->q[d->n_q], 0, sizeof(d->q[0]));
	return &d->q[d->n_q++];
}

static void drain_remove(struct drain *d, size_t i)
{
	memmove(&d->q[i], &d->q[i + 1], (d->n_q - i - 1) * sizeof(d->q[0]));
	d->n_q--;
}

/* What the process said happened to the fd before these bytes (RING_F_*, ringw.c). */
static void drain_told(int fd, uint16_t flags)
{
	if (flags & RING_F_LOSS)
		shim_drain_loss(fd, (flags & RING_F_SKIP) != 0);
}

static void drain_feed(struct shim_thread *th, const struct drain *d, int fd, const char *p, size_t n, uint64_t mono,
		       uint32_t tid, const char *why)
{
	struct shim_origin o;

	drain_origin(d, &o, mono, tid);
	shim_origin = &o;
	shim_drain_feed(th, fd, p, n, why);
	shim_origin = NULL;
}

static void drain_loose(struct shim_thread *th, const struct drain *d, int fd, const char *p, size_t n,
			uint64_t mono, uint32_t tid)
{
	struct shim_origin o;

	drain_origin(d, &o, mono, tid);
	shim_origin = &o;
	shim_drain_loose(th, fd, p, n);
	shim_origin = NULL;
}

static int drain_whole(const struct dq *w)
{
	return w->took == w->len && w->took && w->bytes[w->took - 1] == '\n';
}

/*
 * The fd's queue from its head while the head is settled, as the reader
 * applies it (consume.c, consume_apply): a signal handler's writes that
 * ran while the head was in flight follow it, and when their order with
 * it changes a line, all of them are uncertain.
 */
static void drain_apply(struct shim_thread *th, struct drain *d, int fd)
{
	for (;;) {
		size_t i, k, idx[64], n_idx = 0;
		struct dq *w;
		int clean;

		for (i = 0; i < d->n_q && d->q[i].fd != fd; i++)
			;
		if (i == d->n_q || !d->q[i].committed)
			return;
		w = &d->q[i];
		if (w->mark) {
			if (w->flags & RING_M_UNKNOWN)
				shim_drain_fdflag(fd, RING_FDF_UNCERTAIN);
			else if (w->flags & RING_M_CLOSE)
				shim_drain_close(th, fd, (w->flags & RING_F_LOSS) != 0);
			drain_remove(d, i);
			continue;
		}
		if (w->flags & RING_W_UNLOCKED) {
			drain_told(fd, w->flags);
			drain_loose(th, d, fd, w->bytes, w->took, w->mono, w->tid);
			drain_remove(d, i);
			continue;
		}
		idx[n_idx++] = i;
		clean = !shim_drain_open(fd) && drain_whole(w);
		for (k = i + 1; k < d->n_q && n_idx < 64; k++) {
			if (d->q[k].fd != fd)
				continue;
			if (d->q[k].mark || !(d->q[k].flags & RING_W_RACE))
				break;
			if (!d->q[k].committed)
				return;   /* wait for it */
			if (!drain_whole(&d->q[k]))
				clean = 0;
			idx[n_idx++] = k;
		}
		drain_told(fd, w->flags);
		if (n_idx == 1 || clean) {
			for (k = 0; k < n_idx; k++) {
				struct dq *x = &d->q[idx[k]];
				const char *why = (x->flags & RING_F_UNSETTLED) ? drain_why_unsettled :
						  (x->flags & RING_W_DOUBT) ? drain_why_doubt : NULL;
				drain_feed(th, d, fd, x->bytes, x->took, x->mono, x->tid, k ? NULL : why);
			}
		} else {
			for (k = 0; k < n_idx; k++)
				drain_loose(th, d, fd, d->q[idx[k]].bytes, d->q[idx[k]].took, d->q[idx[k]].mono,
					    d->q[idx[k]].tid);
		}
		while (n_idx--)
			drain_remove(d, idx[n_idx]);
	}
}

/* Bytes that must wait in the queue and will not stay where they are: copied to the arena. */
static const char *drain_keep(struct drain *d, const char *p, size_t n)
{
	char *at;

	if (n > DRAIN_ARENA - d->arena_len)
		return NULL;
	at = d->arena + d->arena_len;
	memcpy(at, p, n);
	d->arena_len += (n + 7) & ~(size_t)7;
	if (d->arena_len > DRAIN_ARENA)
		d->arena_len = DRAIN_ARENA;
	return at;
}

/* The queue is empty: the arena can be used from its start again. */
static void drain_arena_reset(struct drain *d)
{
	if (!d->n_q)
		d->arena_len = 0;
}

/*
 * One entry, from the ring or handed here (`stable`: its bytes stay where
 * they are). p: a RING_WRITE's bytes (after struct ring_wr) or a record.
 */
static void drain_entry(struct shim_thread *th, struct drain *d, uint16_t kind, uint16_t flags, uint64_t ref, uint32_t a,
			uint32_t b, const char *p, uint64_t mono, uint32_t tid, int stable)
{
	size_t i, k;
	struct dq *w;
	int fd = (int)a;

	switch (kind) {
	case RING_REC:
		shim_emit(p, b, 0, 0);
		break;
	case RING_WRITE:
		if (a >= RING_FD_MAX)
			break;
		if (flags & RING_W_UNLOCKED) {
			drain_told(fd, flags);
			drain_loose(th, d, fd, p, b, mono, tid);
			break;
		}
		if (!ref && !(flags & RING_W_RACE) && !drain_has_q(d, fd)) {
			drain_told(fd, flags);
			drain_feed(th, d, fd, p, b, mono, tid, (flags & RING_W_DOUBT) ? drain_why_doubt : NULL);
			break;
		}
		{
			const char *kept = stable ? p : drain_keep(d, p, b);
			if (!kept || !(w = drain_enqueue(d))) {
				/* no room to wait: its lines are said as uncertain now, never joined to others */
				drain_loose(th, d, fd, p, b, mono, tid);
				break;
			}
			p = kept;
		}
		w->bytes = p;
		w->id = ref;
		w->mono = mono;
		w->tid = tid;
		w->len = w->took = b;
		w->flags = flags;
		w->committed = !ref;
		w->fd = fd;
		drain_apply(th, d, fd);
		break;
	case RING_COMMIT:
		for (i = 0; i < d->n_risk; i++)
			if (d->risk[i].id == ref) {
				d->risk[i] = d->risk[--d->n_risk];
				return;
			}
		for (i = 0; i < d->n_q; i++) {
			w = &d->q[i];
			if (w->mark || w->committed || w->id != ref)
				continue;
			w->committed = 1;
			w->flags |= flags & (RING_W_DOUBT | RING_F_LOSS | RING_F_SKIP);
			w->took = a < w->len ? a : w->len;
			for (k = 0; (flags & RING_F_UNSETTLED) && k < i; k++)
				if (d->q[k].fd == w->fd && !d->q[k].committed) {
					d->q[k].committed = 1;
					d->q[k].flags |= RING_F_UNSETTLED;
					d->q[k].took = d->q[k].len;
				}
			drain_apply(th, d, w->fd);
			drain_arena_reset(d);
			return;
		}
		break;
	case RING_RISK:
		if (d->n_risk < DRAIN_RISK_MAX) {
			d->risk[d->n_risk].id = ref;
			d->risk[d->n_risk].fd = (int32_t)a;
			d->risk[d->n_risk].lines = b;
			d->n_risk++;
		}
		break;
	case RING_MARK:
		if (flags & RING_E_EXEC_FAILED)
			break;
		if (flags & RING_M_FORK) {
			/* a child shares the fds now: open lines may be continued by it */
			unsigned s;
			for (s = 0; s < RING_STREAMS; s++) {
				int sfd = atomic_load(&ring_stream(shim_area, s)->fd);
				if (sfd >= 0)
					shim_drain_fdflag(sfd, RING_FDF_UNCERTAIN);
			}
			for (i = 0; i < d->n_q; i++)
				shim_drain_fdflag(d->q[i].fd, RING_FDF_UNCERTAIN);
			break;
		}
		if (a >= RING_FD_MAX)
			break;
		if (drain_has_q(d, fd) && (w = drain_enqueue(d))) {
			/* in the fd's order, behind its writes in flight */
			w->mark = 1;
			w->flags = flags;
			w->committed = 1;
			w->fd = fd;
			drain_apply(th, d, fd);
		} else if (flags & RING_M_UNKNOWN) {
			shim_drain_fdflag(fd, RING_FDF_UNCERTAIN);
		} else if (flags & RING_M_CLOSE) {
			shim_drain_close(th, fd, (flags & RING_F_LOSS) != 0);
		}
		break;
	default:
		/* RING_END: the process is ending, and will say so itself */
		break;
	}
}

/* --- the role ------------------------------------------------------------------- */

/*
 * The drain is done by one thread at a time (the area's drain_tid). 1 when
 * this thread has it; 0 when it cannot have it: a signal handler on the
 * thread that holds it, a handler that must not wait, or a wait past its
 * bound.
 */
static int drain_enter(void)
{
	uint32_t me = drain_self(), zero;
	int waited;

	if (atomic_load(&shim_area->drain_tid) == me)
		return 0;
	for (waited = 0; waited < DRAIN_WAIT_MS; waited++) {
		zero = 0;
		if (atomic_compare_exchange_strong(&shim_area->drain_tid, &zero, me))
			return 1;
		if (shim_depth > 1)
			return 0;
		drain_sleep_ms(1);
	}
	return 0;
}

static void drain_leave(void)
{
	shim_batch_end();
	atomic_store(&shim_area->drain_tid, 0);
}

/* --- the reader's last write, and its checkpoint ---------------------------------- */

/* The out area of the control file, mapped; NULL when it cannot be. */
static char *drain_out_area(void)
{
	char path[4200];
	const char *dir = shim_rings_dir();
	void *p;
	int fd;

	if (!dir || strlen(dir) + 5 >= sizeof(path))
		return NULL;
	strcpy(path, dir);
	strcat(path, "/ctl");
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, 4096 + (size_t)shim_ctl()->out_cap, PROT_READ, MAP_SHARED, fd, 0);
	syscall(SYS_close, fd);
	return p == MAP_FAILED ? NULL : (char *)p + 4096;
}

static void drain_u64(char *out, uint64_t v)
{
	char tmp[24];
	int i = (int)sizeof(tmp);

	tmp[--i] = '\0';
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	strcpy(out, tmp + i);
}

/*
 * The reader was killed while it wrote a generation of records: the rest
 * of that write, from the out area, so that the file ends at a record
 * boundary and the generation is done. One process of the capture does it
 * (ctl takeover), the others wait for it. Returns the generation done.
 */
static uint64_t drain_complete(void)
{
	struct ring_ctl *c = shim_ctl();
	int32_t me = (int32_t)shim_pid(), who;
	int waited;

	if (!c)
		return 0;
	for (waited = 0; waited < DRAIN_WAIT_MS; waited++) {
		if (atomic_load(&c->gen_writing) <= atomic_load(&c->gen_done))
			return atomic_load(&c->gen_done);
		who = 0;
		if (atomic_compare_exchange_strong(&c->takeover, &who, me))
			break;
		if (who == RING_CTL_TAKEN)
			return atomic_load(&c->gen_done);
		/* a process that died completing it: another takes it on */
		if (who > 0 && kill((pid_t)who, 0) < 0 && errno == ESRCH &&
		    atomic_compare_exchange_strong(&c->takeover, &who, me))
			break;
		drain_sleep_ms(1);
	}
	if (waited == DRAIN_WAIT_MS)
		return atomic_load(&c->gen_done);
	{
		char path[PATH_MAX + 32], *out = drain_out_area();
		struct stat st;
		int fd;

		strcpy(path, shim_capture_base());
		if (shim_per_pid() && c->out_pid > 0) {
			strcat(path, ".");
			drain_u64(path + strlen(path), (uint64_t)c->out_pid);
		}
		fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
		if (out && fd >= 0 && c->out_len <= c->out_cap && fstat(fd, &st) == 0 && (uint64_t)st.st_size >= c->out_start &&
		    (uint64_t)st.st_size < c->out_start + c->out_len) {
			uint64_t from = (uint64_t)st.st_size - c->out_start;
			const char *p = out + from;
			size_t n = (size_t)(c->out_len - from);
			while (n) {
				ssize_t w = syscall(SYS_write, fd, p, n);
				if (w < 0 && errno == EINTR)
					continue;
				if (w <= 0)
					break;
				p += w;
				n -= (size_t)w;
			}
		}
		if (fd >= 0)
			syscall(SYS_close, fd);
		if (out)
			munmap(out - 4096, 4096 + (size_t)c->out_cap);
		atomic_store(&c->gen_done, atomic_load(&c->gen_writing));
		atomic_store(&c->takeover, RING_CTL_TAKEN);
	}
	return atomic_load(&c->gen_done);
}

/* What the reader had of this ring at its checkpoint: into the streams and the queue. */
static void drain_restore(struct drain *d, uint64_t done)
{
	const struct ring_ck *ck = ring_ck_find(shim_area, done);
	size_t at = 0;
	uint32_t i, k;

	if (!ck) {
		/* no write of the reader's counted this ring yet: all of it is here */
		d->pos = atomic_load(&shim_area->tail);
		return;
	}
	d->pos = ck->pos;
	shim_count_lines_n(ck->lines);
	shim_lost(RING_LOST_LONG, ck->lost_long);
	shim_lost(RING_LOST_CONSUMER, ck->held_lost);
	for (i = 0; i < ck->n_risk; i++) {
		const struct ring_ck_risk *rk = ring_ck_next(ck, &at, sizeof(*rk));
		if (!rk)
			return;
		if (d->n_risk < DRAIN_RISK_MAX) {
			d->risk[d->n_risk].id = rk->id;
			d->risk[d->n_risk].fd = rk->fd;
			d->risk[d->n_risk].lines = rk->lines;
			d->n_risk++;
		}
	}
	for (i = 0; i < ck->n_fds; i++) {
		const struct ring_ck_fd *f = ring_ck_next(ck, &at, sizeof(*f));
		const char *b;

		if (!f || (unsigned)f->fd >= RING_FD_MAX)
			return;
		b = f->len ? ring_ck_next(ck, &at, f->len) : "";
		if (!b)
			return;
		if (f->len || (f->flags & RING_CKF_OVER))
			shim_drain_restore(f->fd, b, f->len, (f->flags & RING_CKF_OVER) != 0);
		if (f->flags & RING_CKF_UNKNOWN)
			shim_drain_fdflag(f->fd, RING_FDF_UNCERTAIN);
		if (f->flags & RING_CKF_SKIP)
			shim_drain_fdflag(f->fd, RING_FDF_DROP);
		for (k = 0; k < f->n_q; k++) {
			const struct ring_ck_q *q = ring_ck_next(ck, &at, sizeof(*q));
			const char *qb;
			struct dq *w;

			if (!q)
				return;
			qb = q->len ? ring_ck_next(ck, &at, q->len) : "";
			if (!qb)
				return;
			if (!(w = drain_enqueue(d))) {
				shim_lost(RING_LOST_CONSUMER, 1);
				continue;
			}
			w->bytes = qb;
			w->id = q->id;
			w->mono = q->mono;
			w->tid = q->tid;
			w->len = q->len;
			w->took = q->took;
			w->flags = q->flags;
			w->committed = q->committed;
			w->mark = q->mark;
			w->fd = f->fd;
		}
	}
}

/* --- taking over -------------------------------------------------------------------- */

/* The entries from d->pos to where the ring was closed. */
static void drain_ring(struct shim_thread *th, struct drain *d)
{
	struct ring_hdr *r = shim_area;

	while (d->pos < d->end) {
		const struct ring_ent *e = ring_next(r, &d->pos);
		int waited;

		/* reserved before the ring closed, not yet published: its writer is about to */
		for (waited = 0; !e && waited < 1000 && d->pos < d->end; waited++) {
			drain_sleep_ms(1);
			e = ring_next(r, &d->pos);
		}
		if (!e) {
			if (d->pos < d->end) {
				/* never published: what it held is not known */
				const struct ring_ent *raw =
					(const struct ring_ent *)((const char *)r + r->data_off + (d->pos & (r->data_size - 1)));
				shim_lost(RING_LOST_CONSUMER, 1);
				if (raw->size < sizeof(*raw) || raw->size & 7 || raw->size > r->data_size)
					break;
				d->pos += raw->size;
			}
			continue;
		}
		if (e->kind == RING_WRITE) {
			struct ring_wr w;
			if (ring_payload_len(e) < sizeof(w) + e->b)
				continue;
			memcpy(&w, ring_payload(e), sizeof(w));
			drain_entry(th, d, e->kind, e->flags, e->ref, e->a, e->b, ring_payload(e) + sizeof(w), w.mono_ns,
				    w.tid, 1);
		} else if (e->kind == RING_REC) {
			if (e->b <= ring_payload_len(e))
				drain_entry(th, d, e->kind, e->flags, e->ref, e->a, e->b, ring_payload(e), 0, 0, 1);
		} else {
			drain_entry(th, d, e->kind, e->flags, e->ref, e->a, e->b, NULL, 0, 0, 1);
		}
	}
	atomic_store(&r->tail, d->end);
}

void shim_take_over(void)
{
	struct ring_hdr *r = shim_area;
	struct shim_thread *th;
	struct ring_ctl *c = shim_ctl();
	struct drain *d;
	uint64_t end;
	uint32_t old;
	int e = errno;

	/* a vfork child runs in its parent's memory, and a handler inside the shim interrupted a write of its own */
	if (!r || !r->data_size || shim_foreign() || shim_depth > 1)
		return;
	old = atomic_fetch_or(&r->state, RING_S_DIRECT | RING_S_DRAINING);
	if (old & RING_S_DIRECT) {
		/* another thread does it: its first step closes the ring, which the caller looks at next */
		int spins;
		for (spins = 0; spins < 1000000 && !shim_ring_closed(); spins++)
			__builtin_ia32_pause();
		return;
	}
	/*
	 * The drain's role first (who sees the ring closed sees who drains
	 * it, and waits for it); then every entry that went in is before end,
	 * and none goes in after.
	 */
	atomic_store(&r->drain_tid, drain_self());
	end = atomic_fetch_or(&r->head, RING_HEAD_CLOSED) & ~RING_HEAD_CLOSED;
	{
		shim_set_direct();
		d = mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		th = shim_thread_get();
		if (d == MAP_FAILED || !th) {
			/* nothing to drain with: what the ring holds is lost, and counted so (one per entry) */
			uint64_t pos = atomic_load(&r->tail), n = 0;
			while (ring_next(r, &pos))
				n++;
			shim_lost(RING_LOST_CONSUMER, n + (pos != end));
			atomic_fetch_and(&r->state, ~(uint32_t)RING_S_DRAINING);
			atomic_store(&r->drain_tid, 0);
			errno = e;
			return;
		}
		d->end = end;
	}
	shim_dr = d;
	shim_drain_rules();
	drain_clock(d);
	if (c && atomic_load(&c->file_failed))
		shim_capture_failed((int)atomic_load(&c->file_failed));
	/* lines the reader could not write to a failing file: counted in this process's last records */
	shim_lost(RING_LOST_WRITE, atomic_load(&r->reader_unwritten));
	drain_restore(d, drain_complete());
	shim_batch_begin(d->out, sizeof(d->out));
	drain_ring(th, d);
	drain_arena_reset(d);
	shim_batch_end();
	atomic_store(&r->drain_tid, 0);
	atomic_fetch_and(&r->state, ~(uint32_t)RING_S_DRAINING);
	syscall(SYS_futex, (uint32_t *)&r->state, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
	errno = e;
}

/* --- hand-offs after the ring closed ----------------------------------------------- */

int shim_drain_commit(uint64_t id, uint32_t took, uint16_t flags)
{
	struct shim_thread *th = shim_thread_get();

	if (!th || !drain_enter())
		return 0;
	if (!shim_dr) {
		drain_leave();
		return 0;
	}
	shim_batch_begin(shim_dr->out, sizeof(shim_dr->out));
	drain_entry(th, shim_dr, RING_COMMIT, flags, id, took, 0, NULL, 0, 0, 1);
	drain_leave();
	return 1;
}

int shim_drain_bytes(int fd, uint16_t flags, const struct iovec *iov, int cnt, size_t from, size_t n, uint64_t mono)
{
	struct shim_thread *th = shim_thread_get();
	const char *p;
	int i;

	if (!th || !n || !drain_enter())
		return 0;
	if (!shim_dr) {
		drain_leave();
		return 0;
	}
	/* one buffer, as the ring would have held it */
	if (cnt == 1) {
		p = (const char *)iov[0].iov_base + from;
	} else if (n <= sizeof(th->gather)) {
		size_t at = 0, skip = from;
		for (i = 0; i < cnt && at < n; i++) {
			size_t len = iov[i].iov_len, k;
			if (skip >= len) {
				skip -= len;
				continue;
			}
			k = len - skip < n - at ? len - skip : n - at;
			memcpy(th->gather + at, (const char *)iov[i].iov_base + skip, k);
			at += k;
			skip = 0;
		}
		p = th->gather;
	} else {
		drain_leave();
		return 0;
	}
	shim_batch_begin(shim_dr->out, sizeof(shim_dr->out));
	drain_entry(th, shim_dr, RING_WRITE, flags, 0, (uint32_t)fd, (uint32_t)n, p, mono, (uint32_t)th->tid, 0);
	drain_leave();
	return 1;
}

int shim_drain_mark(uint16_t flags, int fd)
{
	struct shim_thread *th = shim_thread_get();

	if (!th || !drain_enter())
		return 0;
	if (!shim_dr) {
		drain_leave();
		return 0;
	}
	shim_batch_begin(shim_dr->out, sizeof(shim_dr->out));
	drain_entry(th, shim_dr, RING_MARK, flags, 0, (uint32_t)fd, 0, NULL, 0, 0, 1);
	drain_leave();
	return 1;
}

void shim_drain_wait(void)
{
	struct ring_hdr *r = shim_area;
	int waited;

	if (!r || !r->data_size || !(atomic_load_explicit(&r->state, memory_order_acquire) & RING_S_DRAINING))
		return;
	for (waited = 0; waited < DRAIN_WAIT_MS / 10; waited++) {
		uint32_t st = atomic_load(&r->state);
		struct timespec ten = { 0, 10000000 };

		if (!(st & RING_S_DRAINING) || atomic_load(&r->drain_tid) == drain_self())
			return;
		syscall(SYS_futex, (uint32_t *)&r->state, FUTEX_WAIT, st, &ten, NULL, 0);
	}
}

void shim_drain_finish(void)
{
	struct shim_thread *th = shim_thread_get();
	struct drain *d = shim_dr;
	size_t i;

	if (!d || !th || !drain_enter())
		return;
	shim_batch_begin(d->out, sizeof(d->out));
	/* in flight: the lines these writes would have ended, had they all been written */
	for (i = 0; i < d->n_q; i++) {
		struct dq *w = &d->q[i];
		if (w->mark)
			continue;
		drain_feed(th, d, w->fd, w->bytes, w->len, w->mono, w->tid, drain_why_flight);
	}
	d->n_q = 0;
	for (i = 0; i < d->n_risk; i++)
		shim_uncertain(d->risk[i].fd, d->risk[i].lines,
			       "the process ended inside a call that may have written these lines", NULL, 0);
	d->n_risk = 0;
	(void)drain_why_gone;
	drain_leave();
}
