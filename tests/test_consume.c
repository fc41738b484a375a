/*
 * test_consume.c - the ring reader: bytes cut into lines per fd in the
 * order they reached the kernel, records settled by commits, and what a
 * process that died left (in-flight writes, stdio calls, open lines,
 * stdio buffers) said as uncertain, partial and lost records, and what a
 * process that lost bytes to a full ring tells at the fd's next entry.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "capture/consume.h"
#include "capture/ring.h"

#define PID 4242

struct fx {
	struct consume *c;
	struct banner_set *rules;
	struct ring_hdr *r;
	int fd;
	char path[64];
	char out[65536];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct consume_opts o;

	assert_non_null(f);
	strcpy(f->path, "/tmp/test_consume.XXXXXX");
	f->fd = mkstemp(f->path);
	assert_true(f->fd >= 0);
	f->rules = banner_set_default();
	memset(&o, 0, sizeof(o));
	o.out_fd = f->fd;
	o.rules = f->rules;
	o.all_lines = 1;
	assert_int_equal(consume_new(&o, &f->c, NULL), STATUS_OK);
	f->r = calloc(1, ring_file_size(1u << 16));
	ring_init(f->r, 1u << 16, PID, 1, RING_CLOCK_MONO);
	assert_int_equal(consume_attach(f->c, f->r, PID), 0);
	*state = f;
	return 0;
}

/* The default: only audit and banner lines are kept. */
static int setup_rules(void **state)
{
	struct fx *f;

	setup(state);
	f = *state;
	consume_free(f->c);
	{
		struct consume_opts o;

		memset(&o, 0, sizeof(o));
		o.out_fd = f->fd;
		o.rules = f->rules;
		assert_int_equal(consume_new(&o, &f->c, NULL), STATUS_OK);
		assert_int_equal(consume_attach(f->c, f->r, PID), 0);
	}
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	consume_free(f->c);
	banner_set_free(f->rules);
	free(f->r);
	close(f->fd);
	unlink(f->path);
	free(f);
	return 0;
}

static void wr(struct fx *f, uint64_t id, int fd, uint16_t flags, const char *s)
{
	size_t n = strlen(s);
	struct ring_ent *e = ring_reserve(f->r, sizeof(struct ring_wr) + n);
	struct ring_wr w = { 1000000000ull, 77, 0 };

	assert_non_null(e);
	memcpy(e + 1, &w, sizeof(w));
	memcpy((char *)(e + 1) + sizeof(w), s, n);
	ring_publish(e, RING_WRITE, flags, id, (uint32_t)fd, (uint32_t)n);
}

static void ent(struct fx *f, uint16_t kind, uint16_t flags, uint64_t ref, uint32_t a, uint32_t b)
{
	struct ring_ent *e = ring_reserve(f->r, 0);

	assert_non_null(e);
	ring_publish(e, kind, flags, ref, a, b);
}

/* What the reader wrote so far, as one string. */
static const char *out(struct fx *f)
{
	ssize_t n;

	consume_drain_attached(f->c);
	n = pread(f->fd, f->out, sizeof(f->out) - 1, 0);
	f->out[n > 0 ? n : 0] = '\0';
	return f->out;
}

static int count(const char *s, const char *what)
{
	int k = 0;

	while ((s = strstr(s, what))) {
		k++;
		s++;
	}
	return k;
}

/* Records (lines) of kind src. */
static int records(const char *s, const char *src)
{
	char want[64];
	int k = 0;

	snprintf(want, sizeof(want), "{\"src\":\"%s\"", src);
	for (; *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : s + strlen(s))
		k += !strncmp(s, want, strlen(want));
	return k;
}

/* Two threads finish each other's lines on one fd: the fd's order, not the threads'. */
static void test_fd_order(void **state)
{
	struct fx *f = *state;

	wr(f, 1, 1, 0, "MERGE_AUDIT {\"ev\":\"merge\",\"step\":1,");
	ent(f, RING_COMMIT, 0, 1, 36, 0);
	wr(f, 2, 1, 0, "\"dev_pos\":[5]}\nMERGE_AUDIT {\"ev\":\"merge\",\"step\":2,");
	ent(f, RING_COMMIT, 0, 2, 1000, 0);
	wr(f, 0, 1, 0, "\"dev_pos\":[7]}\n");
	out(f);
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"merge\",\"step\":1,\"dev_pos\":[5]}"));
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"merge\",\"step\":2,\"dev_pos\":[7]}"));
	assert_int_equal(records(f->out, "audit"), 2);
	assert_non_null(strstr(f->out, "\"pid\":4242,\"tid\":77,\"fd\":1"));
}

/* A write waits for its commit; what the kernel did not take is not the fd's. */
static void test_commit(void **state)
{
	struct fx *f = *state;

	wr(f, 5, 2, 0, "{\"ev\":\"a\"}\n{\"ev\":\"b\"}\n");
	out(f);
	assert_int_equal(records(f->out, "audit"), 0);   /* pending */
	wr(f, 0, 1, 0, "{\"ev\":\"other-fd\"}\n");
	assert_int_equal(records(out(f), "audit"), 1);   /* another fd goes on */
	ent(f, RING_COMMIT, 0, 5, 11, 0);                          /* only the first line */
	out(f);
	assert_non_null(strstr(f->out, "{\"ev\":\"a\"}"));
	assert_null(strstr(f->out, "{\"ev\":\"b\"}"));
	ent(f, RING_END, 0, 0, RING_HOW_EXIT, 3);
	consume_detach(f->c, PID, 3 << 8);
	out(f);
	assert_non_null(strstr(f->out, "\"src\":\"end\""));
	assert_non_null(strstr(f->out, "\"how\":\"exit\",\"code\":3,\"by\":\"shim\",\"lines\":2,\"lost\":0"));
}

/*
 * SIGKILL: a write in flight is uncertain (with the records it would have
 * made), a stdio call that may have written says how many lines, what
 * waited in stdio buffers never reached the fd (lost), and the end is the
 * capture's, with the signal.
 */
static void test_death(void **state)
{
	struct fx *f = *state;

	wr(f, 0, 1, 0, "INFO QWEN36_MERGE_BATCH_GUARD engaged\nopen line");
	wr(f, 9, 2, 0, "{\"ev\":\"merge\",\"step\":9}\n");
	ent(f, RING_RISK, 0, 77, 1, 3);
	atomic_store(&f->r->stdio[0].fd, 3);
	atomic_store(&f->r->stdio[0].lines, 4);
	atomic_store(&f->r->stdio[0].bytes, 2);
	consume_detach(f->c, PID, SIGKILL);
	out(f);
	assert_non_null(strstr(f->out, "\"rule\":\"arm:batch\""));
	assert_non_null(strstr(f->out, "\"text\":\"open line\",\"partial\":true"));
	assert_non_null(strstr(f->out, "\"reason\":\"the process ended while the write of this line was in flight\",\"count\":1,\"record\":{\"src\":\"audit\""));
	assert_non_null(strstr(f->out, "\"reason\":\"the process ended inside a call that may have written these lines\",\"count\":3"));
	assert_non_null(strstr(f->out, "\"count\":5,\"reason\":\"in a stdio buffer when the process died: never written to the fd\""));
	assert_non_null(strstr(f->out, "\"how\":\"signal\",\"signal\":9,\"by\":\"capture\""));
	assert_int_equal(records(f->out, "audit"), 0);
}

/*
 * A signal handler's write while its thread's write was in flight: whole
 * lines onto a line boundary are the same lines in either order; otherwise
 * both are uncertain.
 */
static void test_race(void **state)
{
	struct fx *f = *state;

	wr(f, 1, 2, 0, "{\"ev\":\"main\",\"n\":1}\n");
	wr(f, 0x80000001, 2, RING_W_RACE, "{\"ev\":\"tick\",\"n\":1}\n");
	ent(f, RING_COMMIT, 0, 0x80000001, 100, 0);
	ent(f, RING_COMMIT, 0, 1, 100, 0);
	out(f);
	assert_int_equal(records(f->out, "audit"), 2);
	assert_int_equal(count(f->out, "uncertain"), 0);
	wr(f, 2, 2, 0, "{\"ev\":\"main\",\"n\":2,");
	wr(f, 0x80000002, 2, RING_W_RACE, "\"tick\":2}\n");
	ent(f, RING_COMMIT, 0, 0x80000002, 100, 0);
	ent(f, RING_COMMIT, 0, 2, 100, 0);
	out(f);
	assert_int_equal(records(f->out, "audit"), 2);
	assert_int_equal(count(f->out, "not knowable"), 2);
}

/* Bytes with no known place never join the fd's open line (that would invent one). */
static void test_unlocked(void **state)
{
	struct fx *f = *state;

	wr(f, 0, 1, 0, "{\"ev\":\"half\",");
	wr(f, 0, 1, RING_W_UNLOCKED, "{\"ev\":\"handler\"}\n");
	wr(f, 0, 1, 0, "\"x\":1}\n");
	wr(f, 0, 1, 0, "{\"ev\":\"next\"}\n");
	out(f);
	assert_null(strstr(f->out, "\"ev\":\"half\",{"));
	assert_int_equal(records(f->out, "uncertain"), 2);   /* the handler's line, and the line it may have split */
	assert_non_null(strstr(f->out, "\"mono\":1.000000,\"pid\":4242,\"tid\":77"));
	assert_non_null(strstr(f->out, "{\"src\":\"audit\",\"t\":"));       /* "next" is true */
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"next\"}"));
}

/* Marks: an fd closed with its line open, a fork with a line open, an exec that failed. */
static void test_marks(void **state)
{
	struct fx *f = *state;

	wr(f, 0, 5, 0, "{\"ev\":\"closing\"}");
	ent(f, RING_MARK, RING_M_CLOSE, 0, 5, 0);
	wr(f, 0, 5, 0, "{\"ev\":\"new file\"}\n");
	wr(f, 0, 1, 0, "partial before fork ");
	ent(f, RING_MARK, RING_M_FORK, 0, (uint32_t)-1, 0);
	wr(f, 0, 1, 0, "after\n");
	ent(f, RING_END, 0, 50, RING_HOW_EXEC, (uint32_t)-1);
	ent(f, RING_MARK, RING_E_EXEC_FAILED, 0, (uint32_t)-1, 0);
	wr(f, 0, 2, RING_W_DOUBT, "{\"ev\":\"flush failed\"}\n");
	ent(f, RING_END, 0, 0, RING_HOW__EXIT, 1);
	consume_detach(f->c, PID, 1 << 8);
	out(f);
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"closing\"},\"partial\":true"));
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"new file\"}}"));
	assert_non_null(strstr(f->out, "\"reason\":\"what came before this line on the fd is not known"));
	assert_non_null(strstr(f->out, "\"text\":\"partial before fork after\""));
	assert_non_null(strstr(f->out, "\"reason\":\"a stdio flush failed or went unseen"));
	/* the failed exec's end and stdio loss are void: one end, the _exit */
	assert_int_equal(records(f->out, "end"), 1);
	assert_non_null(strstr(f->out, "\"how\":\"_exit\",\"code\":1"));
	assert_null(strstr(f->out, "in a stdio buffer at exec"));
}

/*
 * Writes none of whose lines can be kept are only counted: the lines they
 * leave open, and those whose rule text is hidden by colour codes or
 * falls in one of several lines, still get their records.
 */
static void test_quiet_lines(void **state)
{
	struct fx *f = *state;

	wr(f, 0, 1, 0, "INFO decode step 1\nINFO decode step 2\nINFO:     Application sta");
	wr(f, 0, 1, 0, "rtup complete.\n");
	wr(f, 0, 1, 0, "INFO \x1b[1mKMD\x1b[0m version 1.2\nplain\n");
	wr(f, 0, 1, 0, "a\nb Opening user mode device driver\nc\n");
	wr(f, 0, 1, 0, "x MERGE_AUDIT {\"ev\":\"merge\",\"step\":3}\ny\n");
	wr(f, 0, 1, 0, "decode step 9 version engaged KMD GPU\n");
	ent(f, RING_END, 0, 0, RING_HOW_EXIT, 0);
	consume_detach(f->c, PID, 0);
	out(f);
	assert_int_equal(records(f->out, "banner"), 3);
	assert_non_null(strstr(f->out, "\"rule\":\"vllm:ready\""));
	assert_non_null(strstr(f->out, "\"text\":\"INFO:     Application startup complete.\""));
	assert_non_null(strstr(f->out, "\"rule\":\"tt:kmd\""));
	assert_non_null(strstr(f->out, "\"rule\":\"tt:device\""));
	assert_int_equal(records(f->out, "audit"), 1);
	assert_int_equal(records(f->out, "line"), 0);
	assert_non_null(strstr(f->out, "\"lines\":11"));
}

/*
 * What the process tells the reader at an fd's next settling entry when no
 * entry could say it in time (the ring stayed full): bytes it lost (and
 * counted) drop the open line and, when they left a line open, the bytes
 * up to the next newline; a write whose commit could not go in is
 * settled, as not known to have reached the fd, by the next commit. No
 * line is invented from pieces on either side of a loss.
 */
static void test_told(void **state)
{
	struct fx *f = *state;

	/* lost: `"x":1}\n{"ev":"b",` (two lines counted lost by the process) */
	wr(f, 0, 1, 0, "{\"ev\":\"a\",");
	wr(f, 0, 1, RING_F_LOSS | RING_F_SKIP, "\"y\":2}\n{\"ev\":\"c\"}\n");
	/* lost: `"z":3}\n` (one line); told by the next write's commit */
	wr(f, 7, 2, 0, "{\"ev\":\"d\",");
	ent(f, RING_COMMIT, 0, 7, 100, 0);
	wr(f, 8, 2, 0, "{\"ev\":\"e\"}\n");
	ent(f, RING_COMMIT, RING_F_LOSS, 8, 100, 0);
	/* lost with no '\n': the skip goes on into the next write */
	wr(f, 0, 2, 0, "{\"ev\":\"j\",");
	wr(f, 0, 2, RING_F_LOSS | RING_F_SKIP, "more of the lost line");
	wr(f, 0, 2, 0, "end of it}\n{\"ev\":\"k\"}\n");
	/* a commit that could not go in: the next commit settles it */
	wr(f, 10, 1, 0, "{\"ev\":\"f\"}\n");
	wr(f, 11, 1, 0, "{\"ev\":\"g\"}\n");
	ent(f, RING_COMMIT, RING_F_UNSETTLED, 11, 100, 0);
	out(f);
	assert_null(strstr(f->out, "\"a\""));
	assert_null(strstr(f->out, "\"y\""));
	assert_null(strstr(f->out, "\"d\""));
	assert_null(strstr(f->out, "\"j\""));
	assert_null(strstr(f->out, "end of it"));
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"c\"}}"));
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"e\"}}"));
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"k\"}}"));
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"g\"}}"));
	assert_non_null(strstr(f->out, "\"reason\":\"the commit of this write could not go in the capture ring"));
	assert_non_null(strstr(f->out, "\"record\":{\"src\":\"audit\""));
	assert_int_equal(records(f->out, "uncertain"), 1);
	/* an fd closed after a loss, and one whose loss was never told: no partial line of either */
	wr(f, 0, 5, 0, "{\"ev\":\"h\"}");
	ring_fdflags(f->r)[5] = RING_FDF_TELL_LOSS;
	wr(f, 0, 6, 0, "{\"ev\":\"i\"}");
	ent(f, RING_MARK, RING_M_CLOSE | RING_F_LOSS, 0, 6, 0);
	wr(f, 0, 6, 0, "{\"ev\":\"l\"}");
	consume_detach(f->c, PID, 0);
	out(f);
	assert_null(strstr(f->out, "\"h\""));
	assert_null(strstr(f->out, "\"i\""));
	assert_non_null(strstr(f->out, "\"event\":{\"ev\":\"l\"},\"partial\":true"));
}

/*
 * Before its records are written the reader checkpoints the ring (what it
 * holds of it: open lines, writes waiting for a commit, stdio calls in
 * flight), and gives the ring's room back only up to the checkpoint.
 */
static void test_checkpoint(void **state)
{
	struct fx *f = *state;
	const struct ring_ck *ck;
	const struct ring_ck_fd *cf;
	const struct ring_ck_q *q;
	const struct ring_ck_risk *rk;
	size_t at = 0;
	int i;

	wr(f, 0, 1, 0, "{\"ev\":\"whole\"}\n{\"ev\":\"open\",");
	wr(f, 9, 2, 0, "{\"ev\":\"pending\"}\n");
	ent(f, RING_RISK, 0, 77, 1, 3);
	out(f);
	assert_int_equal(records(f->out, "audit"), 1);
	ck = ring_ck_find(f->r, UINT64_MAX);
	assert_non_null(ck);
	assert_int_equal(ck->pos, atomic_load(&f->r->head));
	assert_int_equal(atomic_load(&f->r->tail), ck->pos);
	assert_int_equal(ck->lines, 1);
	assert_int_equal(ck->n_risk, 1);
	rk = ring_ck_next(ck, &at, sizeof(*rk));
	assert_int_equal(rk->id, 77);
	assert_int_equal(rk->lines, 3);
	assert_int_equal(ck->n_fds, 2);
	for (i = 0; i < 2; i++) {
		const char *b;
		cf = ring_ck_next(ck, &at, sizeof(*cf));
		assert_non_null(cf);
		b = cf->len ? ring_ck_next(ck, &at, cf->len) : NULL;
		if (cf->fd == 1) {
			assert_int_equal(cf->len, 13);
			assert_memory_equal(b, "{\"ev\":\"open\",", 13);
			assert_int_equal(cf->n_q, 0);
		} else {
			assert_int_equal(cf->fd, 2);
			assert_int_equal(cf->len, 0);
			assert_int_equal(cf->n_q, 1);
			q = ring_ck_next(ck, &at, sizeof(*q));
			assert_int_equal(q->id, 9);
			assert_int_equal(q->committed, 0);
			assert_memory_equal(ring_ck_next(ck, &at, q->len), "{\"ev\":\"pending\"}\n", q->len);
		}
	}
	/* nothing new read: no new generation */
	{
		uint64_t gen = ck->gen;
		out(f);
		assert_int_equal(ring_ck_find(f->r, UINT64_MAX)->gen, gen);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_fd_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_commit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_death, setup, teardown),
		cmocka_unit_test_setup_teardown(test_race, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlocked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_marks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quiet_lines, setup_rules, teardown),
		cmocka_unit_test_setup_teardown(test_told, setup, teardown),
		cmocka_unit_test_setup_teardown(test_checkpoint, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
