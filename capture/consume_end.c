/*
 * consume_end.c - the end of a process image as the capture reader sees
 * it (consume_priv.h): how it ended (its own end record, a wait, /proc
 * while a zombie, a parent's record), and what it left unsaid: writes in
 * flight, stdio calls that may have written, partial lines, lines in stdio
 * buffers, losses not yet told.
 */
#include "capture/consume_priv.h"
#include "base/alloc.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "base/procstat.h"

void consume_parent_ended(struct consume *c, pid_t pid)
{
	if (ALLOC_GROW(c->parent_ended, c->n_parent_ended + 1, c->cap_parent_ended) < 0)
		return;
	c->parent_ended[c->n_parent_ended++] = pid;
}

int consume_parent_told(const struct consume *c, pid_t pid)
{
	size_t i;

	for (i = 0; i < c->n_parent_ended; i++)
		if (c->parent_ended[i] == pid)
			return 1;
	return 0;
}


/* 1 while pid is the process that made the ring (not reaped, not reused). */
int consume_same(struct consume_ring *cr)
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

	if (ALLOC_GROW(c->reaped, c->n_reaped + 1, c->cap_reaped) < 0)
		return;
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
void consume_died(struct consume_ring *cr)
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
	if (cr->out && c->out.n_recs)
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
void consume_settle(struct consume *c, struct consume_ring *cr)
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
