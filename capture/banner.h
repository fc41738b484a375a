/*
 * banner.h - named banner patterns: the startup lines that say what a server
 * runs (vLLM version and arguments, tt-metal device lines) and the guard
 * "engaged" lines that say which merge guard is on.
 *
 * A rules file has one rule per line, `NAME PATTERN`: the name is the first
 * whitespace-delimited word ([A-Za-z0-9_.:-], at most BANNER_NAME_MAX bytes),
 * the pattern (PCRE2 syntax) is the rest of the line after the whitespace.
 * Blank lines and lines starting with '#' are ignored. A line matches the
 * first rule (in file order) whose pattern matches anywhere in it.
 *
 * Each rule is JIT-compiled. A literal prefilter (banner.c) finds the rules
 * whose required text the line holds, whole, and only their patterns run,
 * so a line that holds none costs no regex search whatever the rules are.
 * Callers match the text banner_strip() leaves: the line without ANSI colour
 * codes and without a vLLM process prefix (`(APIServer pid=N) `).
 *
 * Building a set allocates (do it at start-up). Matching does not: it uses a
 * struct banner_scratch the caller owns, one per thread (see below).
 */
#ifndef TTAUDIT_BANNER_H
#define TTAUDIT_BANNER_H

#include <stddef.h>

#include "base/status.h"

#define BANNER_NAME_MAX 63
#define BANNER_MAX_RULES 256
#define BANNER_FILE_MAX (1024 * 1024)

struct banner_set;

/*
 * Per-thread match state in caller memory: PCRE2's match data is carved out
 * of `arena` on first use, so matching never calls malloc. Zero it (or call
 * banner_scratch_init) before first use; never share one between threads or
 * use it re-entrantly.
 */
struct banner_scratch {
	void *md;                    /* pcre2_match_data, inside arena */
	size_t used;
	int failed;                  /* arena too small: matching reports no match */
	_Alignas(16) char arena[32768];   /* room for the interpreter's 20 KiB frames when JIT is unavailable */
	char strip[65536];           /* a line without its colour codes (banner_strip) */
};

void banner_scratch_init(struct banner_scratch *sc);

/* The built-in rules as rules-file text (banner_rules.c), and their length. */
extern const char banner_defaults[];
extern const size_t banner_defaults_len;

/* The built-in rule set (docs/capture.md lists it). NULL on allocation failure. */
struct banner_set *banner_set_default(void);

/*
 * Memory a set is built in without malloc (the shim, when it must build
 * one on a write path: signal handlers, fork children): a bump pointer
 * over [base, base+cap), never freed but all at once by its owner. Such a
 * set is not JIT-compiled (the JIT's allocator takes a lock) and its
 * banner_set_free does nothing.
 */
struct banner_arena {
	char *base;
	size_t cap, used;
};
/*
 * The rules of file `path` (NULL or "": the built-in ones) built in arena
 * a: read with raw system calls, compiled without JIT. NULL when they
 * cannot be (no room, or the file is bad: the reader checked it first).
 */
struct banner_set *banner_set_arena(const char *path, struct banner_arena *a);
/*
 * Rules from a file. On error returns NULL-set with STATUS_PARSE (a bad line
 * or pattern: si names file, line and the PCRE2 message), STATUS_IO,
 * STATUS_LIMIT or STATUS_NOMEM. *out is owned by the caller: banner_set_free.
 */
enum status banner_set_load(const char *path, struct banner_set **out, struct status_info *si);
/* The same from text in memory; `name` is used in messages. */
enum status banner_set_parse(const char *text, size_t n, const char *name,
			     struct banner_set **out, struct status_info *si);
void banner_set_free(struct banner_set *set);

size_t banner_set_count(const struct banner_set *set);
/* Rule name, valid as long as the set. */
const char *banner_set_name(const struct banner_set *set, size_t i);
/*
 * 1 when every rule has literal text the prefilter can use, so most lines
 * are rejected without a regex search (docs/capture.md, "Cost").
 */
int banner_set_filtered(const struct banner_set *set);
/*
 * The text of line s[0..n) that rules are matched against (and audit
 * objects are read from): without ANSI escape sequences (CSI colour codes,
 * OSC strings) and without one leading vLLM process prefix, `(NAME pid=N) `,
 * `(NAME) ` or `(NAME (SUFFIX)) ` (vllm utils/system_utils.py). Returns a
 * pointer into s when nothing had to be removed but the prefix, else into
 * out (cap bytes; a longer line with escape codes is returned as it is).
 */
const char *banner_strip(const char *s, size_t n, char *out, size_t cap, size_t *out_n);
/* The length of a vLLM process prefix at the start of s[0..n) (0: none), as banner_strip sees it. */
size_t banner_prefix_len(const char *s, size_t n);
/*
 * How many rules' patterns a match of s[0..n) would run: those whose
 * literal the line holds whole, and those without one (tests, benchmarks).
 */
int banner_set_candidates(const struct banner_set *set, const char *s, size_t n);
/* The rule index that matches s[0..n), or -1. */
int banner_set_match(const struct banner_set *set, const char *s, size_t n,
		     struct banner_scratch *sc);

#endif
