/*
 * consume.c - reads the capture rings of every process of a capture and
 * writes their records (consume.h): the rounds, finding and mapping rings,
 * telling when a process ended. The writer side is the shim; the format is
 * ring.h; the other files of the reader are listed in consume_priv.h.
 */
#include "capture/consume_priv.h"
#include "base/alloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/procstat.h"

static void consume_close(struct consume_ring *cr);

/* The one place a ring's state changes: forward only (a later step asked again is nothing). */
void consume_ring_enter(struct consume_ring *cr, enum consume_ring_state to)
{
	if (to <= cr->state)
		return;
	if (to == CONSUME_RING_DEAD)
		cr->dead_ms = consume_now_ms();
	cr->state = to;
}

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
		if (ALLOC_GROW(c->rings, c->n_rings + 1, c->cap_rings) < 0)
			break;
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

	c->clock.wall_off_ns = mono_wall_offset_ns();
	if (c->ctl->clock == RING_CLOCK_TSC) {
		mono_tsc_pair(&c->clock.tsc1, &c->clock.mono1);
		/* for a process that goes on without the reader */
		c->ctl->tsc0 = c->clock.tsc0;
		c->ctl->mono0 = c->clock.mono0;
		c->ctl->tsc1 = c->clock.tsc1;
		c->ctl->mono1 = c->clock.mono1;
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

	if (ALLOC_GROW(c->rings, c->n_rings + 1, c->cap_rings) < 0)
		return -1;
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
		munmap(c->ctl, 4096 + c->out.cap);
	c->ctl = NULL;
	/* the files are the other reader's: nothing written, nothing given back */
	for (i = 0; i < c->n_per_pid; i++)
		capfile_forget(c->per_pid[i].cf);
	c->n_per_pid = 0;
	capfile_forget(c->file);
	c->file = NULL;
	c->out.n_recs = 0;
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
	c->out.cap = RING_CTL_OUT_CAP;
	{
		struct rlimit rl;
		if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 4096 + (rlim_t)c->out.cap)
			c->out.cap = rl.rlim_cur > 8192 ? (size_t)((rl.rlim_cur - 4096) & ~(rlim_t)4095) : 4096;
	}
	if (fd < 0 || ftruncate(fd, (off_t)(4096 + c->out.cap))) {
		st = status_set(si, STATUS_IO, "%s: cannot create: %s", path, strerror(errno));
		goto fail;
	}
	c->ctl = mmap(NULL, 4096 + c->out.cap, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	fd = -1;
	if (c->ctl == MAP_FAILED) {
		c->ctl = NULL;
		st = status_set(si, STATUS_IO, "%s: cannot map: %s", path, strerror(errno));
		goto fail;
	}
	/* the records wait in the control file, where a process taking over can find them */
	c->out.bytes = (char *)c->ctl + 4096;
	c->ctl->out_cap = (uint32_t)c->out.cap;
	c->ctl->consumer_pid = getpid();
	/* each process puts it in its start record (it may not load the rules itself) */
	c->ctl->mode_len = (uint32_t)caprec_mode(c->ctl->mode, sizeof(c->ctl->mode), o->all_lines, o->rules,
						 o->rules_from);
	c->ctl->clock = mono_tsc_is_clocksource() ? RING_CLOCK_TSC : RING_CLOCK_MONO;
	if (c->ctl->clock == RING_CLOCK_TSC) {
		/* the rate comes from this pair and the newest, taken every round */
		mono_tsc_pair(&c->clock.tsc0, &c->clock.mono0);
		c->clock.tsc1 = c->clock.tsc0;
		c->clock.mono1 = c->clock.mono0;
	}
	c->clock.wall_off_ns = mono_wall_offset_ns();
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
		munmap(c->ctl, 4096 + c->out.cap);
		snprintf(path, sizeof(path), "%s/ctl", c->dir);
		unlink(path);
		rmdir(c->dir);
	}
	for (i = 0; i < c->n_per_pid; i++)
		capfile_free(c->per_pid[i].cf);
	capfile_free(c->file);
	free(c->per_pid);
	free(c->rings);
	free(c->reaped);
	free(c->parent_ended);
	free(c->out.recs);
	free(c->rec);
	free(c->rec2);
	free(c->sc);
	free(c);
}
