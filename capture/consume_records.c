/*
 * consume_records.c - the capture reader's records on their way to the
 * file (consume_priv.h): gathered in the control page's out area, where a
 * process taking over can find them, written at entry boundaries with a
 * checkpoint of every ring read on, and one file per process when asked.
 */
#include "capture/consume_priv.h"
#include "base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
void consume_flush(struct consume *c)
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
	if (c->out.n_recs && c->out.to) {
		long pid = c->o.per_pid_base ? c->out.recs[0].pid : 0;
		c->ctl->out_pid = (int32_t)pid;
		capfile_write(c->out.to, c->out.bytes, c->out.recs, c->out.n_recs, consume_before, c);
		atomic_store(&c->ctl->file_failed, (uint32_t)capfile_failed(c->out.to));
	}
	c->out.len = 0;
	c->out.n_recs = 0;
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
int consume_grow_recs(struct consume *c)
{
	/* a first batch of 16,384, then half as many again each time, 4 Mi at most */
	return ALLOC_GROW_MAX(c->out.recs, c->out.cap_recs ? c->out.cap_recs + 1 : 16384, c->out.cap_recs,
			      (size_t)1 << 22);
}

/* One record line (with its '\n') of process pid to cf: what it is (enum capfile_kind) and its count. */
void consume_put(struct consume *c, struct capfile *cf, const char *rec, size_t len, int kind, pid_t pid,
			uint64_t count)
{
	struct capfile_rec *r;

	if (!len || !cf)
		return;
	/* (another file: consume_drain wrote the records before it began another process's ring) */
	if (c->out.n_recs && c->out.to != cf)
		consume_flush(c);
	c->out.to = cf;
	c->st.records++;
	if (len > c->out.cap - c->out.len || (c->out.n_recs == c->out.cap_recs && consume_grow_recs(c))) {
		/* records are written at entry boundaries only: this entry's do not all fit */
		size_t i;
		for (i = 0; i < c->n_rings; i++)
			if (c->rings[i].pid == pid && c->rings[i].state != CONSUME_RING_CLOSED && c->rings[i].r)
				atomic_fetch_add(&c->rings[i].r->lost[RING_LOST_HELD], kind == CAPFILE_LOST ? count : kind == CAPFILE_LINES ? count : 0);
		return;
	}
	memcpy(c->out.bytes + c->out.len, rec, len);
	c->out.len += len;
	r = &c->out.recs[c->out.n_recs++];
	r->len = (uint32_t)len;
	r->kind = (uint8_t)kind;
	r->pid = pid;
	r->count = count;
}

void consume_warn(void *ctx, const char *msg)
{
	struct consume *c = ctx;

	if (c->o.warn)
		c->o.warn(c->o.warn_ctx, msg);
}

/* The file a process's records go to. */
struct capfile *consume_file_for(struct consume *c, pid_t pid)
{
	char path[PATH_MAX + 32];
	struct capfile *cf = NULL;
	size_t i;
	int fd;

	if (!c->o.per_pid_base)
		return c->file;
	for (i = 0; i < c->n_per_pid; i++)
		if (c->per_pid[i].pid == pid)
			return c->per_pid[i].cf;
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
	if (ALLOC_GROW(c->per_pid, c->n_per_pid + 1, c->cap_per_pid) < 0) {
		capfile_free(cf);
		return NULL;
	}
	c->per_pid[c->n_per_pid].pid = pid;
	c->per_pid[c->n_per_pid].cf = cf;
	c->n_per_pid++;
	return cf;
}

void consume_head(struct caprec_head *h, pid_t pid, int fd)
{
	caprec_head_now(h);
	h->pid = pid;
	h->tid = 0;
	h->fd = fd;
}

void consume_uncertain(struct consume *c, struct consume_ring *cr, int fd, uint64_t count,
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

void consume_lost(struct consume *c, struct consume_ring *cr, int fd, uint64_t count, const char *why)
{
	struct caprec_head h;
	char buf[512];

	if (!count)
		return;
	consume_head(&h, cr->pid, fd);
	consume_put(c, cr->out, buf, caprec_lost(buf, sizeof(buf), &h, count, why), CAPFILE_LOST, cr->pid, count);
	c->st.lost_records++;
}
