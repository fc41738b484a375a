/*
 * ring.c - the capture ring's writer and reader (ring.h). Positions are
 * absolute byte counts; an entry lives at pos % data_size and never wraps:
 * when the room left before the end is too small, the writer reserves it
 * too and marks it padding (or, when not even a header fits there, both
 * sides skip it without one).
 */
#include "capture/ring.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

const char *const ring_lost_reason[RING_LOST__COUNT] = {
	"capture file cannot be opened",
	"capture file write failed",
	"line longer than 65536 bytes",
	"written from signal handlers faster than the shim could keep them",
	"no thread buffer",
	"too many fds with partial lines",
	"the capture ring stayed full (ttaudit capture fell behind)",
	"in a stdio buffer at _exit: never written to the fd",
	"in a stdio buffer at exec: never written to the fd",
	"in a stdio buffer when the process died: never written to the fd",
	"written by a vfork child after it changed its fds",
	"written through stdio from a signal handler while the shim was busy",
	"written through a stdio stream the shim could not follow",
	"in the capture ring when ttaudit capture went away",
	"more records at once than ttaudit capture could hold before writing them",
};

void ring_init(struct ring_hdr *r, uint64_t data_size, int64_t pid, uint64_t starttime, uint32_t clock)
{
	unsigned i;

	/* positions wrap with a mask: a power of two, or no ring at all */
	if (data_size & (data_size - 1))
		data_size = 0;
	r->version = 1;
	r->hdr_size = (uint32_t)sizeof(*r);
	r->size = ring_file_size(data_size);
	r->pid = pid;
	r->starttime = starttime;
	r->data_off = RING_DATA_START;
	r->data_size = data_size;
	r->clock = clock;
	/* positions start a lap in: a zeroed header (pos 0) is never taken for a published one */
	atomic_store_explicit(&r->head, data_size, memory_order_relaxed);
	atomic_store_explicit(&r->tail, data_size, memory_order_relaxed);
	for (i = 0; i < RING_STREAMS; i++)
		atomic_store_explicit(&ring_stream(r, i)->fd, -1, memory_order_relaxed);
	for (i = 0; i < RING_STDIO; i++)
		atomic_store_explicit(&r->stdio[i].fd, -1, memory_order_relaxed);
	atomic_store_explicit(&r->magic, RING_MAGIC, memory_order_release);
}

static char *ring_data(struct ring_hdr *r)
{
	return (char *)r + r->data_off;
}

uint64_t ring_used(struct ring_hdr *r)
{
	return atomic_load_explicit(&r->head, memory_order_relaxed) -
	       atomic_load_explicit(&r->tail, memory_order_relaxed);
}

void (*ring_bell_hook)(struct ring_hdr *r);

static inline struct ring_ent *ring_reserve_in(struct ring_hdr *r, size_t payload, uint64_t keep)
{
	uint64_t d = r->data_size, need, h, total, at, pad, t;
	struct ring_ent *e;

	if (!d || payload > d / 4)
		return NULL;
	need = (sizeof(struct ring_ent) + payload + 7) & ~(uint64_t)7;
	h = atomic_load_explicit(&r->head, memory_order_relaxed);
	do {
		uint64_t off = h & (d - 1);   /* data_size is a power of two: no division */

		pad = d - off < need ? d - off : 0;
		total = pad + need;
		t = atomic_load_explicit(&r->tail, memory_order_acquire);
		if (h + total - t > d - keep)
			return NULL;
	} while (!atomic_compare_exchange_weak_explicit(&r->head, &h, h + total, memory_order_acq_rel,
							memory_order_relaxed));
	if (pad >= sizeof(struct ring_ent)) {
		/* the rest of the lap, as one padding entry */
		struct ring_ent *p = (struct ring_ent *)(ring_data(r) + (h & (d - 1)));
		p->size = (uint32_t)pad;
		p->kind = RING_PAD;
		atomic_store_explicit(&p->pos, h, memory_order_release);
	}
	if (h + total - t > d / 2 && !atomic_load_explicit(&r->bell, memory_order_relaxed) &&
	    !atomic_exchange_explicit(&r->bell, 1, memory_order_relaxed) && ring_bell_hook)
		ring_bell_hook(r);
	at = h + pad;
	e = (struct ring_ent *)(ring_data(r) + (at & (d - 1)));
	e->size = (uint32_t)need;
	/* pos stays stale until ring_publish: the reader waits for it */
	e->ref = at;   /* scratch until publish: where the entry is */
	return e;
}

struct ring_ent *ring_reserve(struct ring_hdr *r, size_t payload)
{
	return ring_reserve_in(r, payload, RING_KEEP(r->data_size));
}

struct ring_ent *ring_reserve_settle(struct ring_hdr *r)
{
	return ring_reserve_in(r, 0, 0);
}

void ring_publish(struct ring_ent *e, uint16_t kind, uint16_t flags, uint64_t ref, uint32_t a,
		  uint32_t b)
{
	uint64_t at = e->ref;

	e->kind = kind;
	e->flags = flags;
	e->ref = ref;
	e->a = a;
	e->b = b;
	atomic_store_explicit(&e->pos, at, memory_order_release);
}

const struct ring_ent *ring_next(struct ring_hdr *r, uint64_t *pos)
{
	uint64_t d = r->data_size;

	for (;;) {
		uint64_t p = *pos, off;
		const struct ring_ent *e;

		if (!d)
			return NULL;
		off = p & (d - 1);
		if (d - off < sizeof(struct ring_ent)) {
			*pos = p + (d - off);   /* padding without a header */
			continue;
		}
		e = (const struct ring_ent *)(ring_data(r) + off);
		if (atomic_load_explicit(&((struct ring_ent *)e)->pos, memory_order_acquire) != p)
			return NULL;    /* reserved, not yet published */
		if (e->size < sizeof(*e) || e->size > d - off || (e->size & 7))
			return NULL;    /* cannot happen with a well-behaved writer */
		if (e->kind == RING_PAD) {
			*pos = p + e->size;
			continue;
		}
		*pos = p + e->size;
		return e;
	}
}

size_t ring_payload_len(const struct ring_ent *e)
{
	return e->size - sizeof(*e);
}

/* The futex word: tail's low 32 bits (a shared futex: writer and reader are two processes). */
static uint32_t *ring_tail_word(struct ring_hdr *r)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return (uint32_t *)&r->tail + 1;
#else
	return (uint32_t *)&r->tail;
#endif
}

void ring_consumed(struct ring_hdr *r, uint64_t pos)
{
	if (atomic_load_explicit(&r->tail, memory_order_relaxed) == pos)
		return;
	atomic_store_explicit(&r->tail, pos, memory_order_seq_cst);
	/* seq_cst on both sides: a writer that saw the old tail is counted in waiting */
	if (atomic_load_explicit(&r->waiting, memory_order_seq_cst))
		syscall(SYS_futex, ring_tail_word(r), FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

int ring_quiet(struct ring_hdr *r)
{
	atomic_store_explicit(&r->bell, 0, memory_order_seq_cst);
	return ring_used(r) > r->data_size / 2;
}

int ring_wait_room(struct ring_hdr *r, uint64_t tail, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	int moved, e = errno;

	atomic_fetch_add_explicit(&r->waiting, 1, memory_order_seq_cst);
	moved = atomic_load_explicit(&r->tail, memory_order_seq_cst) != tail;
	if (!moved)
		syscall(SYS_futex, ring_tail_word(r), FUTEX_WAIT, (uint32_t)tail, &ts, NULL, 0);
	atomic_fetch_sub_explicit(&r->waiting, 1, memory_order_relaxed);
	moved = atomic_load_explicit(&r->tail, memory_order_acquire) != tail;
	errno = e;
	return moved ? 0 : -1;
}

/* --- checkpoints --------------------------------------------------------------- */

struct ring_ck *ring_ck_begin(struct ring_hdr *r)
{
	struct ring_ck *a, *b, *ck;

	if (!r->data_size)
		return NULL;
	a = ring_ck_slot(r, 0);
	b = ring_ck_slot(r, 1);
	ck = atomic_load(&a->gen) <= atomic_load(&b->gen) ? a : b;
	atomic_store_explicit(&ck->gen, 0, memory_order_release);
	atomic_thread_fence(memory_order_seq_cst);
	ck->used = 0;
	ck->n_risk = ck->n_fds = 0;
	return ck;
}

void *ring_ck_add(struct ring_hdr *r, struct ring_ck *ck, size_t n)
{
	size_t need = (n + 7) & ~(size_t)7;
	char *p;

	if (need > ring_ck_size(r->data_size) - sizeof(*ck) - ck->used)
		return NULL;
	p = (char *)(ck + 1) + ck->used;
	ck->used += (uint32_t)need;
	return p;
}

void ring_ck_commit(struct ring_ck *ck, uint64_t gen)
{
	atomic_store_explicit(&ck->gen, gen, memory_order_release);
}

const struct ring_ck *ring_ck_find(struct ring_hdr *r, uint64_t done)
{
	const struct ring_ck *best = NULL;
	uint64_t best_gen = 0;
	int i;

	if (!r->data_size)
		return NULL;
	for (i = 0; i < 2; i++) {
		struct ring_ck *ck = ring_ck_slot(r, i);
		uint64_t g = atomic_load_explicit(&ck->gen, memory_order_acquire);
		if (g && g <= done && g > best_gen && ck->used <= ring_ck_size(r->data_size) - sizeof(*ck)) {
			best = ck;
			best_gen = g;
		}
	}
	return best;
}

const void *ring_ck_next(const struct ring_ck *ck, size_t *at, size_t n)
{
	size_t need = (n + 7) & ~(size_t)7;
	const char *p;

	if (*at > ck->used || need > ck->used - *at)
		return NULL;
	p = (const char *)(ck + 1) + *at;
	*at += need;
	return p;
}
