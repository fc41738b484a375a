/*
 * fuzz_replay.c - libFuzzer target: one input is a set of audit files (one
 * to three, split at line ends), replayed end to end (reader, decoders,
 * per-process tally, explain, reports, the gate).
 *
 * The same files are replayed three ways, as `ttaudit replay` selects them:
 * through the scanner one file after another (the normal path), through the
 * tree only (--tree, the reference path) with other read and inflate buffer
 * sizes, and through the scanner with three readers at once (--jobs 3; with
 * one file the run is the serial one, as replay_add_files makes it). Every
 * output must be the same bytes: the JSON report, the text report, the
 * explanation, the gate's report and the messages on the diagnostic stream,
 * each file's status among them. Sanitizers watch the arithmetic (steps and
 * positions are any int64) and the memory.
 *
 * AVX2 code and portable code take turns (one for each run); the scanner's
 * runs read the files in place (mapped) every other input. The first byte
 * picks the options: which rules, --max-pos, --explain step, --strict, gzip
 * (each file cut, or its check value damaged, as the next byte says), and
 * the first file given twice (counted once). The input's length picks how
 * many files.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "base/jsonw.h"
#include "replay/replay.h"
#include "replay/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_FILES 3

static void fail(const char *what, const char *how, const char *a, const char *b)
{
	fprintf(stderr, "fuzz_replay: %s differs between the scanner and %s\n"
		"--- scanner:\n%s\n--- %s:\n%s\n", what, how, a, how, b);
	abort();
}

struct outputs {
	char *json, *text, *explain, *gate, *diag;
	size_t n_json, n_text, n_explain, n_gate, n_diag;
};

/* Each file's status as the command reports it, into the diagnostic stream. */
static void on_status(void *ctx, const char *path, enum status st, const struct status_info *si)
{
	fprintf((FILE *)ctx, "status %s: %s: %s\n", path, status_strerror(st), si ? si->msg : "");
}

static void run(const char *const *paths, size_t n_paths, uint8_t opt, int tree, unsigned jobs,
		struct outputs *o)
{
	static const char *const rule_sets[] = { "bare,prefilled,batch,lifetime,stamp,bound",
						 "batch+lifetime,stamp", "bound,prefilled+bound",
						 "bare" };
	struct rule rules[RULE_MAX_LIST];
	struct replay_opts ro = { 0 };
	struct validate_opts vo = { .max_forgone_pct = (opt & 0x40) ? 10 : -1 };
	struct replay *r;
	FILE *f, *diag;
	size_t n_rules = 0;

	if (rule_list_parse(rule_sets[opt & 3], rules, RULE_MAX_LIST, &n_rules, NULL))
		abort();
	ro.rules = rules;
	ro.n_rules = n_rules;
	ro.max_pos = (opt & 4) ? 100 : 0;
	ro.explain = (opt & 8) != 0;
	ro.explain_step = 1;
	ro.strict = (opt & 0x10) != 0;
	ro.tree = tree;
	ro.keep_sites = true;
	ro.max_slots = 64;
	diag = open_memstream(&o->diag, &o->n_diag);
	ro.diag = diag;
	r = replay_new(&ro);
	if (!r || !diag)
		abort();
	fprintf(diag, "added: %s\n",
		status_strerror(replay_add_files(r, paths, n_paths, jobs, on_status, diag)));
	f = open_memstream(&o->json, &o->n_json);
	replay_print_json(r, f);
	fclose(f);
	f = open_memstream(&o->text, &o->n_text);
	replay_print_text(r, f);
	fclose(f);
	f = open_memstream(&o->explain, &o->n_explain);
	replay_print_explain_text(r, f);
	fclose(f);
	f = open_memstream(&o->gate, &o->n_gate);
	validate_report(r, 0, &vo, (opt & 0x20) != 0, f);
	fclose(f);
	fclose(diag);
	replay_free(r);
}

static void release(struct outputs *o)
{
	free(o->json);
	free(o->text);
	free(o->explain);
	free(o->gate);
	free(o->diag);
}

static void compare(const struct outputs *a, const struct outputs *b, const char *how)
{
	if (a->n_json != b->n_json || memcmp(a->json, b->json, a->n_json))
		fail("the JSON report", how, a->json, b->json);
	if (a->n_text != b->n_text || memcmp(a->text, b->text, a->n_text))
		fail("the text report", how, a->text, b->text);
	if (a->n_explain != b->n_explain || memcmp(a->explain, b->explain, a->n_explain))
		fail("the explanation", how, a->explain, b->explain);
	if (a->n_gate != b->n_gate || memcmp(a->gate, b->gate, a->n_gate))
		fail("the gate's report", how, a->gate, b->gate);
	if (a->n_diag != b->n_diag || memcmp(a->diag, b->diag, a->n_diag))
		fail("the diagnostics", how, a->diag, b->diag);
}

/*
 * The input as a gzip stream, as the control byte says: bit 0 cuts it at a
 * point the other bits choose, bit 1 flips a byte of its CRC-32 (the check
 * zlib reads after the member's bytes), else it is whole.
 */
static size_t gzipped(const uint8_t *data, size_t size, uint8_t *out, size_t cap, uint8_t ctl)
{
	z_stream zs;
	size_t n;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)size;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	deflate(&zs, Z_FINISH);
	n = cap - zs.avail_out;
	deflateEnd(&zs);
	if (ctl & 1)
		n = n * (ctl >> 2) / 64;
	else if ((ctl & 2) && n >= 18)
		out[n - 8 + (ctl >> 2) % 4] ^= (uint8_t)(1u << (ctl >> 4) % 8);
	return n;
}

/* A memfd holding data[0..size) (gzipped when ctl >= 0): its fd, or -1. */
static int file_of(const uint8_t *data, size_t size, int ctl)
{
	int fd = memfd_create("fuzz_replay", 0);
	size_t cap = size + size / 2 + 64, n = size;
	uint8_t *z = NULL;
	const uint8_t *bytes = data;

	if (fd < 0)
		return -1;
	if (ctl >= 0) {
		if (!(z = malloc(cap))) {
			close(fd);
			return -1;
		}
		n = gzipped(data, size, z, cap, (uint8_t)ctl);
		bytes = z;
	}
	if (n && write(fd, bytes, n) != (ssize_t)n) {
		free(z);
		close(fd);
		return -1;
	}
	free(z);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outputs a, b, c;
	static char names[MAX_FILES][64];
	const char *paths[MAX_FILES + 1];
	int fds[MAX_FILES], ctl = -1;
	size_t n_files, n_paths = 0, i, from = 0;
	uint8_t opt;

	if (size < 2)
		return 0;
	opt = data[0];
	data++;
	size--;
	if ((opt & 0x60) == 0x60) {
		/* gzip files instead of plain ones (the gate's JSON bit picks it too) */
		ctl = data[0];
		data++;
		size--;
	}
	/* one to three files, each ending at the first line end past its share */
	n_files = 1 + size % MAX_FILES;
	for (i = 0; i < n_files; i++) {
		size_t to = i + 1 == n_files ? size : size * (i + 1) / n_files;
		const uint8_t *nl;
		if (to < from)
			to = from;
		if (i + 1 < n_files && to < size && (nl = memchr(data + to, '\n', size - to)))
			to = (size_t)(nl - data) + 1;
		else if (i + 1 < n_files)
			to = size;
		fds[i] = file_of(data + from, to - from, ctl);
		if (fds[i] < 0) {
			while (i-- > 0)
				close(fds[i]);
			return 0;
		}
		snprintf(names[i], sizeof(names[i]), "/proc/self/fd/%d", fds[i]);
		paths[n_paths++] = names[i];
		from = to;
	}
	if (opt & 0x80)
		paths[n_paths++] = names[0];   /* the same file again: counted once */
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	/*
	 * AVX2 and portable code alternate, the other one for the tree: the
	 * scanner's two forms are held to the tree, and the slot masks'
	 * two forms to each other
	 */
	jdoc_simd(size & 1);
	/* the scanner's runs read the files in place every other input, the tree's never */
	audit_reader_map_sizes(size & 2 ? 0 : SIZE_MAX, 0);
	run(paths, n_paths, opt, 0, 1, &a);
	run(paths, n_paths, opt, 0, 3, &c);
	jdoc_simd(!(size & 1));
	audit_reader_map_sizes(SIZE_MAX, 0);
	/* small buffers, whose ends fall elsewhere in every line and gzip member */
	audit_reader_buffer_sizes(16 + size % 4093, 16 + size % 509);
	run(paths, n_paths, opt, 1, 1, &b);
	audit_reader_buffer_sizes(0, 0);
	jdoc_simd(1);
	for (i = 0; i < n_files; i++)
		close(fds[i]);
	compare(&a, &b, "the tree");
	compare(&a, &c, "--jobs 3");
	release(&a);
	release(&b);
	release(&c);
	return 0;
}
