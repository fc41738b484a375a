/*
 * fuzz_capture.c - libFuzzer target for the capture's line path:
 *
 *   - reassembly in pieces (small buffer, so overlong lines happen) by
 *     linebuf_feed, and by linebuf_peek + linebuf_take (what the shim does
 *     around a write) with the same lines in the same order;
 *   - classification with the built-in banner rules and every record kind:
 *     each record one line holding exactly one JSON object in valid UTF-8,
 *     whatever bytes the line had; classify_object() agreeing with
 *     jdoc_check() whenever it answers;
 *   - the ring reader (consume.c): the input is also read as a sequence of
 *     ring entries (writes of several fds, pending or not, commits of any
 *     length, handlers' racing and unlocked writes, marks, ends) of a
 *     process that then dies; everything the reader writes must be valid
 *     JSON lines of valid UTF-8.
 *
 * build: tests/fuzz/run.sh (it lists the sources).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/caprec.h"
#include "capture/classify.h"
#include "capture/consume.h"
#include "capture/jbuf.h"
#include "base/jdoc.h"
#include "base/linebuf.h"
#include "capture/ring.h"

static struct banner_set *rules;
static struct banner_scratch sc;
static char out[4 * 256 + 512];
static char wrap[4096 + 8];

/* 1 when s[0..n) is valid UTF-8. */
static int utf8_ok(const char *s, size_t n)
{
	size_t i = 0, k;

	while (i < n) {
		k = jbuf_utf8_len((const unsigned char *)s + i, n - i);
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

/* One record: one line, one JSON object, valid UTF-8. */
static void check_line(const char *p, size_t n)
{
	struct jdoc_check chk;

	if (!n || p[n - 1] != '\n' || memchr(p, '\n', n - 1) || jdoc_check(p, n - 1, &chk) != 0 ||
	    !utf8_ok(p, n - 1))
		abort();
}

static void check(size_t n)
{
	if (!n)
		return;           /* did not fit: allowed, the shim counts it lost */
	check_line(out, n);
}

static void quick(const char *s, size_t n)
{
	struct jdoc_check chk;
	int ev = -1;

	if (classify_object(s, n, &ev) == 1 && (jdoc_check(s, n, &chk) != 0 || chk.has_ev != ev))
		abort();
}

static void on_line(void *ctx, const char *line, size_t n, int overlong)
{
	struct classify_result res;
	struct caprec_head h = { { 1, 2 }, { 3, 4 }, 5, 6, 1, 0 };
	const char *brace = memchr(line, '{', n);

	(void)ctx;
	if (n > 256 || (overlong && n != 256))
		abort();
	quick(line, n);
	if (brace)
		quick(brace, n - (size_t)(brace - line));
	classify_line(line, n, rules, &sc, &res);
	if (res.kind == CLASSIFY_AUDIT)
		check(caprec_audit(out, sizeof(out), &h, res.obj, res.obj_len));
	check(caprec_banner(out, sizeof(out), &h, "r", line, n));
	check(caprec_line(out, 300, &h, line, n));   /* small: text gets cut */
	check(caprec_lost(out, sizeof(out), &h, n, "x"));
}

/* Lines as text, for comparing two ways of cutting the same bytes. */
static char seen_a[8192], seen_b[8192];
static size_t seen_na, seen_nb;

static void seen(char *buf, size_t *len, const char *line, size_t n, int overlong)
{
	if (*len + n + 2 > 8192)
		return;
	memcpy(buf + *len, line, n);
	*len += n;
	buf[(*len)++] = overlong ? '!' : '|';
}

static void on_a(void *ctx, const char *line, size_t n, int overlong)
{
	(void)ctx;
	seen(seen_a, &seen_na, line, n, overlong);
}

static void on_b(void *ctx, const char *line, size_t n, int overlong)
{
	(void)ctx;
	seen(seen_b, &seen_nb, line, n, overlong);
}

static void on_peek(void *ctx, const char *line, size_t n, int overlong, size_t end)
{
	(void)end;
	on_b(ctx, line, n, overlong);
}

/*
 * The shim's way: before a "write" of `step` bytes the lines it would end
 * are peeked (up to 3), then a prefix is taken (as a short write would),
 * the rest follows. Same lines as one linebuf_feed of everything.
 */
static void peek_take(const uint8_t *d, size_t size, size_t step)
{
	char m1[64], m2[64];
	struct linebuf a, b;
	size_t i;

	seen_na = seen_nb = 0;
	linebuf_init(&a, m1, sizeof(m1));
	linebuf_init(&b, m2, sizeof(m2));
	linebuf_feed(&a, (const char *)d, size, on_a, NULL);
	for (i = 0; i < size;) {
		size_t n = size - i < step ? size - i : step, took = (d[i] % 3 == 0) ? n / 2 : n, peeked;
		const char *p = (const char *)d + i;
		size_t mark = seen_nb;

		peeked = linebuf_peek(&b, p, took, 3, on_peek, NULL);
		/* the peek reported lines took would end; take the same bytes, skipping them */
		(void)mark;
		linebuf_take(&b, p, took, peeked, on_b, NULL);
		i += took ? took : 1;
		if (!took)
			linebuf_take(&b, p, 1, 0, on_b, NULL);
	}
	if (seen_na != seen_nb || memcmp(seen_a, seen_b, seen_na))
		abort();
}

/* --- the ring reader --------------------------------------------------------- */

static struct consume *cons;
static int cons_fd = -1;
static struct ring_hdr *cring;
static pid_t cons_pid = 100000;

/* The input as ring entries of one process, which then dies; the output checked. */
static void ring_path(const uint8_t *d, size_t size)
{
	static uint64_t ids[8];
	size_t i = 0, k, n;
	char buf[65536];
	ssize_t got;

	if (!cons) {
		struct consume_opts o;

		cons_fd = memfd_create("fuzz-capture", 0);
		memset(&o, 0, sizeof(o));
		o.out_fd = cons_fd;
		o.rules = rules;
		o.all_lines = 1;
		if (cons_fd < 0 || consume_new(&o, &cons, NULL) != STATUS_OK)
			abort();
		cring = malloc(ring_file_size(1u << 15));
	}
	memset(cring, 0, ring_file_size(1u << 15));
	ring_init(cring, 1u << 15, ++cons_pid, 0, RING_CLOCK_MONO);
	if (ftruncate(cons_fd, 0) || lseek(cons_fd, 0, SEEK_SET))
		abort();
	consume_attach(cons, cring, cons_pid);
	memset(ids, 0, sizeof(ids));
	while (i + 2 < size) {
		uint8_t op = d[i], arg = d[i + 1];
		struct ring_ent *e;
		int fd = arg & 3;

		i += 2;
		switch (op % 6) {
		case 0: case 1: case 2: {   /* a write: pending or not, racing, unlocked, in doubt */
			static const uint16_t flags[4] = { 0, RING_W_RACE, RING_W_UNLOCKED, RING_W_DOUBT };
			struct ring_wr w = { 5, 1, 0 };
			n = arg >> 2;
			if (n > size - i)
				n = size - i;
			e = ring_reserve(cring, sizeof(w) + n);
			if (!e)
				break;
			memcpy(e + 1, &w, sizeof(w));
			memcpy((char *)(e + 1) + sizeof(w), d + i, n);
			k = op & 7;
			ids[k] = op % 6 == 0 ? 0 : (uint64_t)i + 1;
			ring_publish(e, RING_WRITE, flags[(op >> 3) & 3], ids[k], (uint32_t)fd, (uint32_t)n);
			i += n;
			break;
		}
		case 3:                     /* a commit, of any length, of a write or of nothing */
			e = ring_reserve(cring, 0);
			if (e)
				ring_publish(e, RING_COMMIT, 0, ids[op & 7] ? ids[op & 7] : arg, arg, 0);
			break;
		case 4: {                   /* marks and risks */
			static const uint16_t marks[4] = { RING_M_CLOSE, RING_M_FORK, RING_M_UNKNOWN, RING_E_EXEC_FAILED };
			e = ring_reserve(cring, 0);
			if (e && (arg & 4))
				ring_publish(e, RING_RISK, 0, arg, (uint32_t)fd, arg >> 3);
			else if (e)
				ring_publish(e, RING_MARK, marks[arg >> 6], 0, (uint32_t)fd, 0);
			break;
		}
		default:                    /* the end, as the process says it */
			e = ring_reserve(cring, 0);
			if (e)
				ring_publish(e, RING_END, 0, arg & 7, 1 + arg % 3, arg);
			break;
		}
		if (op & 0x80)
			consume_drain_attached(cons);
	}
	atomic_store(&cring->stdio[0].fd, 1);
	atomic_store(&cring->stdio[0].lines, d[0] & 3);
	consume_detach(cons, cons_pid, d[0] & 1 ? 9 : 0);
	got = pread(cons_fd, buf, sizeof(buf), 0);
	for (i = 0; got > 0 && i < (size_t)got;) {
		const char *nl = memchr(buf + i, '\n', (size_t)got - i);
		if (!nl) {
			if (got < (ssize_t)sizeof(buf))
				abort();   /* a record without its newline */
			break;
		}
		check_line(buf + i, (size_t)(nl + 1 - (buf + i)));
		i = (size_t)(nl + 1 - buf);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char mem[256];
	struct linebuf lb;
	size_t i, step;

	if (!rules) {
		rules = banner_set_default();
		banner_scratch_init(&sc);
	}
	if (size)
		peek_take(data, size, (size_t)data[0] % 13 + 1);
	ring_path(data, size);
	if (!size)
		return 0;
	quick((const char *)data + 1, size - 1);
	/* the same text one level down, where an "ev" no longer counts */
	if (size - 1 <= sizeof(wrap) - 8) {
		memcpy(wrap, "{\"w\":[", 6);
		memcpy(wrap + 6, data + 1, size - 1);
		memcpy(wrap + 6 + size - 1, "]}", 2);
		quick(wrap, size - 1 + 8);
	}
	step = (size_t)data[0] % 17 + 1;
	linebuf_init(&lb, mem, sizeof(mem));
	for (i = 1; i < size; i += step)
		linebuf_feed(&lb, (const char *)data + i, size - i < step ? size - i : step, on_line, NULL);
	linebuf_flush(&lb, on_line, NULL);
	return 0;
}
