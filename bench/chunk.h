/*
 * chunk.h - one streamed chunk of an OpenAI-compatible server (the data of
 * one server-sent event), read into the few fields the load driver needs:
 * the id, the answer text and the reasoning text, finish_reason, how many
 * tokens the chunk carries (token_ids, per-chunk usage) and an error the
 * server put inside it.
 *
 * One JSON reader, two entry points: jdoc's scanner reads the usual chunk
 * member by member without building a tree; whatever it declines (an error
 * object, a number it leaves to the tree, invalid input) is read by jdoc's
 * tree, which then decides and names the error. Both give the same fields:
 * tests/test_chunk.c holds them to it on the field's chunk shapes
 * (fixtures/sse) and on every form that makes the scanner decline.
 */
#ifndef TTAUDIT_CHUNK_H
#define TTAUDIT_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A chunk is one small JSON object; anything larger is refused. */
#define CHUNK_MAX (1u << 20)

/*
 * What a chunk says. Strings are spans (with their length; a string may hold
 * a NUL written as \u0000), valid until the next chunk_read on the reader.
 */
struct chunk_fields {
	const char *id, *content, *finish, *reasoning;
	size_t n_id, n_content, n_finish, n_reasoning;
	bool has_id, has_content, has_finish, has_role, has_reasoning;
	long n_token_ids;           /* elements of the choice's `token_ids`; -1: none */
	const int64_t *token_ids;   /* with chunk_reader_keep_ids: the first n_ids_kept of them */
	size_t n_ids_kept;
	bool has_usage;             /* a `usage` object */
	long usage_prompt, usage_completion;   /* its integers; -1: absent */
	bool choice;                /* choices[0] is an object (a per-choice chunk) */
};

enum chunk_error {
	CHUNK_OK = 0,
	CHUNK_BAD,                  /* not JSON, or not an object: a protocol failure */
	CHUNK_SERVER,               /* the chunk holds an error object: the server's failure */
};

struct chunk_reader;

/* NULL on allocation failure. Reused chunk after chunk: no allocation per token. */
struct chunk_reader *chunk_reader_new(void);
void chunk_reader_free(struct chunk_reader *cr);

/*
 * Reads data[0..len) (a chat chunk when chat, else a completions chunk) into
 * *f. On CHUNK_BAD or CHUNK_SERVER, msg says what is wrong (the server's own
 * message for CHUNK_SERVER).
 */
enum chunk_error chunk_read(struct chunk_reader *cr, bool chat, const char *data, size_t len,
			    struct chunk_fields *f, char *msg, size_t n_msg);

/*
 * The message of an error a server sent outside a chunk (llama-server's
 * `error:` field, the data of an `event: error`): the `message` of its error
 * object, else the text itself. Into buf, cut to fit.
 */
void chunk_error_message(struct chunk_reader *cr, const char *text, char *buf, size_t n);

/* Keep the values of `token_ids` (up to CHUNK_IDS_KEEP a chunk), not only
 * their count; off by default, so the usual read writes none of them. */
#define CHUNK_IDS_KEEP 4096
void chunk_reader_keep_ids(struct chunk_reader *cr, bool on);

/* Chunks read by the scanner, without a tree (the rest went to the tree). */
size_t chunk_reader_scanned(const struct chunk_reader *cr);
/* Tests: read every chunk with the tree (on), so the two can be compared. */
void chunk_reader_tree_only(struct chunk_reader *cr, bool on);

#endif
