/*
 * consume_lines.c - the capture reader's hot path (consume_priv.h): a
 * ring's entries in order, each fd's bytes cut into lines in the order
 * they reached the kernel (writes wait for their commits, handlers' writes
 * and fork children make lines uncertain), and the record of each line
 * that gets one.
 */
#include "capture/consume_priv.h"
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/classify.h"

static const char consume_why_order[] =
	"the order of this line's bytes and a signal handler's was not knowable";
const char consume_why_unknown[] =
	"what came before this line on the fd is not known (a fork child sharing it, a cancelled or unseen write)";
static const char consume_why_doubt[] =
	"a stdio flush failed or went unseen: how much of it reached the fd is not known";
const char consume_why_flight[] =
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
	if (ALLOC_GROW(cr->fds, cr->n_fds + 1, cr->cap_fds) < 0)
		return NULL;
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
	if (c->clock.tsc1 <= c->clock.tsc0)
		return (uint64_t)c->clock.mono1 + (t > c->clock.tsc1 ? (t - c->clock.tsc1) / 3 : 0);   /* ~3 GHz until measured */
	rate = (double)(c->clock.mono1 - c->clock.mono0) / (double)(c->clock.tsc1 - c->clock.tsc0);
	return (uint64_t)(c->clock.mono1 + (long long)(((double)(int64_t)(t - c->clock.tsc1)) * rate));
}

/* The record of one line into c->rec (with its '\n'); 0 when the line needs none. */
size_t consume_format(struct consume *c, struct consume_ring *cr, struct consume_fd *f, const char *line, size_t n,
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
		long long t = (long long)ns + c->clock.wall_off_ns;
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

void consume_line(void *ctx, const char *line, size_t n, int overlong)
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
	if (ALLOC_GROW(f->q, f->n_q + 1, f->cap_q) < 0)
		return NULL;
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

/* Everything published in the ring, in order. */
void consume_drain(struct consume *c, struct consume_ring *cr)
{
	const struct ring_ent *e;
	uint64_t freed = cr->pos, pass;
	size_t i;

	/* the process took the ring over (it thought the reader gone): it is its own now */
	if (atomic_load(&cr->r->state) & RING_S_DIRECT)
		return;
	/* records go to one file at a time: the other file's now, at an entry boundary */
	if (c->out.n_recs && c->out.to != cr->out)
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
			if (ALLOC_GROW(cr->risk, cr->n_risk + 1, cr->cap_risk) < 0)
				break;
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
		if (cr->pos - freed >= CONSUME_FREE_EVERY || c->out.len >= CONSUME_OUT_CAP) {
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
