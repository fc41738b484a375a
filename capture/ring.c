/*
 * ring.c - the capture ring's writer and reader (ring.h). Positions are
 * absolute byte counts; an entry lives at pos % data_size and never wraps:
 * when the room left before the end is too small, the writer reserves it
 * too and marks it padding (or, when not even a header fits there, both
 * sides skip it without one).
 */
#include "ring.h"

#include <string.h>

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
	r->data_off = ring_file_size(0);
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

struct ring_ent *ring_reserve(struct ring_hdr *r, size_t payload)
{
	uint64_t d = r->data_size, need, h, total, at, pad;
	struct ring_ent *e;

	if (!d || payload > d / 4)
		return NULL;
	need = (sizeof(struct ring_ent) + payload + 7) & ~(uint64_t)7;
	h = atomic_load_explicit(&r->head, memory_order_relaxed);
	do {
		uint64_t off = h & (d - 1);   /* data_size is a power of two: no division */

		pad = d - off < need ? d - off : 0;
		total = pad + need;
		if (h + total - atomic_load_explicit(&r->tail, memory_order_acquire) > d)
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
	at = h + pad;
	e = (struct ring_ent *)(ring_data(r) + (at & (d - 1)));
	e->size = (uint32_t)need;
	/* pos stays stale until ring_publish: the reader waits for it */
	e->ref = at;   /* scratch until publish: where the entry is */
	return e;
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

void ring_consumed(struct ring_hdr *r, uint64_t pos)
{
	atomic_store_explicit(&r->tail, pos, memory_order_release);
}
