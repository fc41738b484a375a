/*
 * fuzz_replay.c - libFuzzer target: one input is one whole audit file, replayed
 * end to end (reader, decoders, per-process tally, explain, reports, the gate).
 *
 * The same file is replayed twice, once through the scanner and once through
 * the tree only (--tree, the reference path), and every output must be the
 * same bytes: the JSON report, the text report, the explanation, the gate's
 * report and the messages on the diagnostic stream. Sanitizers watch the
 * arithmetic (steps and positions are any int64) and the memory.
 *
 * AVX2 code and portable code take turns (one for each run); the scanner's
 * run reads the file in place (mapped) every other input. The first byte
 * picks the options: which rules, --max-pos, --explain step,
 * --strict, gzip (with a cut), and the file given twice (counted once).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "jsonw.h"
#include "replay.h"
#include "validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, const char *a, const char *b)
{
	fprintf(stderr, "fuzz_replay: %s differs between the scanner and the tree\n"
		"--- scanner:\n%s\n--- tree:\n%s\n", what, a, b);
	abort();
}

struct outputs {
	char *json, *text, *explain, *gate, *diag;
	size_t n_json, n_text, n_explain, n_gate, n_diag;
};

static void run(const char *path, uint8_t opt, int tree, struct outputs *o)
{
	static const char *const rule_sets[] = { "bare,prefilled,batch,lifetime,stamp,bound",
						 "batch+lifetime,stamp", "bound,prefilled+bound",
						 "bare" };
	struct rule rules[RULE_MAX_LIST];
	struct replay_opts ro = { 0 };
	struct validate_opts vo = { .max_forgone_pct = (opt & 0x40) ? 10 : -1 };
	struct status_info si;
	struct replay *r;
	FILE *f, *diag;
	size_t n_rules = 0;
	int twice = (opt & 0x80) != 0;

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
	status_info_clear(&si);
	replay_add_file(r, path, &si);
	if (twice)
		replay_add_file(r, path, &si);
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

/* The input as a gzip stream cut at a point the data chooses (or whole). */
static size_t gzipped(const uint8_t *data, size_t size, uint8_t *out, size_t cap, uint8_t cut)
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
	if (cut & 1)
		n = n * (cut >> 1) / 128;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outputs a, b;
	char path[64];
	uint8_t opt;
	int fd;

	if (size < 2)
		return 0;
	opt = data[0];
	data++;
	size--;
	fd = memfd_create("fuzz_replay", 0);
	if (fd < 0)
		return 0;
	if ((opt & 0x60) == 0x60) {
		/* a gzip file instead of a plain one (the gate's JSON bit picks it too) */
		size_t cap = size + size / 2 + 64, n;
		uint8_t *z = malloc(cap);
		if (!z) {
			close(fd);
			return 0;
		}
		n = gzipped(data + 1, size - 1, z, cap, data[0]);
		if (write(fd, z, n) != (ssize_t)n) {
			free(z);
			close(fd);
			return 0;
		}
		free(z);
	} else if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	/*
	 * AVX2 and portable code alternate, the other one for the tree: the
	 * scanner's two forms are held to the tree, and the slot masks'
	 * two forms to each other
	 */
	jdoc_simd(size & 1);
	/* the scanner's run reads the file in place every other input, the tree's never */
	audit_reader_map_sizes(size & 2 ? 0 : SIZE_MAX, 0);
	run(path, opt, 0, &a);
	jdoc_simd(!(size & 1));
	audit_reader_map_sizes(SIZE_MAX, 0);
	run(path, opt, 1, &b);
	jdoc_simd(1);
	close(fd);
	if (a.n_json != b.n_json || memcmp(a.json, b.json, a.n_json))
		fail("the JSON report", a.json, b.json);
	if (a.n_text != b.n_text || memcmp(a.text, b.text, a.n_text))
		fail("the text report", a.text, b.text);
	if (a.n_explain != b.n_explain || memcmp(a.explain, b.explain, a.n_explain))
		fail("the explanation", a.explain, b.explain);
	if (a.n_gate != b.n_gate || memcmp(a.gate, b.gate, a.n_gate))
		fail("the gate's report", a.gate, b.gate);
	if (a.n_diag != b.n_diag || memcmp(a.diag, b.diag, a.n_diag))
		fail("the diagnostics", a.diag, b.diag);
	release(&a);
	release(&b);
	return 0;
}
