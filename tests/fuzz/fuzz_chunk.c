/*
 * fuzz_chunk.c - libFuzzer target for the stream chunk reader (bench/chunk.c):
 * any input (the data of one server-sent event, a chat chunk when the first
 * byte is odd) read by jdoc's scanner and by its tree alone must give the same
 * verdict, the same message and the same fields.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench/chunk.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n);

static int fz_span_differs(bool ha, const char *a, size_t na, bool hb, const char *b, size_t nb)
{
	return ha != hb || (ha && (na != nb || memcmp(a, b, na)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
	static struct chunk_reader *scan, *tree;
	struct chunk_fields a, b;
	char ma[200], mb[200];
	enum chunk_error ea, eb;
	bool chat;

	if (!scan) {
		scan = chunk_reader_new();
		tree = chunk_reader_new();
		if (!scan || !tree)
			abort();
		chunk_reader_tree_only(tree, true);
	}
	if (n < 1)
		return 0;
	chat = data[0] & 1;
	ea = chunk_read(scan, chat, (const char *)data + 1, n - 1, &a, ma, sizeof(ma));
	eb = chunk_read(tree, chat, (const char *)data + 1, n - 1, &b, mb, sizeof(mb));
	if (ea != eb || strcmp(ma, mb))
		abort();
	if (ea)
		return 0;
	if (fz_span_differs(a.has_id, a.id, a.n_id, b.has_id, b.id, b.n_id) ||
	    fz_span_differs(a.has_content, a.content, a.n_content, b.has_content, b.content, b.n_content) ||
	    fz_span_differs(a.has_finish, a.finish, a.n_finish, b.has_finish, b.finish, b.n_finish) ||
	    fz_span_differs(a.has_reasoning, a.reasoning, a.n_reasoning, b.has_reasoning, b.reasoning,
			    b.n_reasoning) ||
	    a.has_role != b.has_role || a.n_token_ids != b.n_token_ids || a.has_usage != b.has_usage ||
	    a.usage_prompt != b.usage_prompt || a.usage_completion != b.usage_completion ||
	    a.choice != b.choice)
		abort();
	return 0;
}
