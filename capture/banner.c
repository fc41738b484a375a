#define PCRE2_CODE_UNIT_WIDTH 8
#include "banner.h"

#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct banner_rule {
	char name[BANNER_NAME_MAX + 1];
	pcre2_code *code;        /* this rule alone: validation and fallback */
	int jit;
};

/*
 * Prefilter: most lines are not banners, and one regex search per line is
 * the shim's largest cost on a busy log. Each rule's pattern is read for
 * literal text every match must contain (one run per top-level branch); the
 * first four bytes of each such run are hashed into `gram`. A line none of
 * whose 4-byte windows hits the table cannot match, and skips the regex.
 * A rule without a usable literal sets `always` and disables the filter.
 */
#define BANNER_GRAM_BITS 16
#define BANNER_LIT_MIN 4

struct banner_set {
	struct banner_rule *rules;
	size_t n_rules;
	pcre2_code *all;         /* every rule in one alternation, or NULL */
	int all_jit;
	int always;              /* some rule has no literal: no prefilter */
	uint64_t gram[(1u << BANNER_GRAM_BITS) / 64];
};

static unsigned banner_gram_hash(const unsigned char *p)
{
	uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;

	return (unsigned)((v * 2654435761u) >> (32 - BANNER_GRAM_BITS));
}

static int banner_meta(char c)
{
	return c && strchr("\\^$.|?*+()[]{}", c) != NULL;
}

/*
 * Adds to the prefilter the first BANNER_LIT_MIN bytes of a literal run from
 * each top-level branch of pat. Returns 0 when some branch has none (or the
 * pattern uses something this reading does not follow: options, \Q).
 */
static int banner_literals(struct banner_set *set, const char *pat, size_t n)
{
	unsigned char run[BANNER_LIT_MIN];
	size_t i = 0, len = 0;
	int depth = 0, found = 0, cls = 0;

	for (;; i++) {
		char c = i < n ? pat[i] : '\0';
		char lit = 0;       /* a literal byte at depth 0, or 0 */
		int breaks = 1;     /* ends the current run */
		int last = 0;       /* a literal that ends the run after itself ("a+") */

		if (i == n || (c == '|' && depth == 0 && !cls)) {
			if (!found)
				return 0;
			if (i == n)
				return 1;
			found = 0;
			len = 0;
			continue;
		}
		if (cls) {                      /* inside [...] */
			if (c == '\\')
				i++;
			else if (c == ']')
				cls = 0;
			continue;
		}
		if (c == '\\') {
			char e = i + 1 < n ? pat[i + 1] : '\0';
			if (e == 'Q' || e == 'E')
				return 0;
			i++;
			if (depth == 0 && banner_meta(e)) {
				lit = e;
				breaks = 0;
			}
		} else if (c == '[') {
			cls = 1;
			if (i + 1 < n && pat[i + 1] == ']')
				i++;
		} else if (c == '(') {
			if (i + 1 < n && (pat[i + 1] == '?' || pat[i + 1] == '*') &&
			    !(i + 2 < n && pat[i + 1] == '?' && pat[i + 2] == ':'))
				return 0;      /* options, lookaround, verbs: not followed */
			depth++;
		} else if (c == ')') {
			depth--;
		} else if (!banner_meta(c) && depth == 0) {
			lit = c;
			breaks = 0;
		}
		if (!breaks) {
			/* a quantifier after this byte makes it optional */
			char q = i + 1 < n ? pat[i + 1] : '\0';
			if (q == '?' || q == '*' || q == '{')
				breaks = 1;
			else if (q == '+')
				last = 1;
		}
		if (breaks) {
			len = 0;
			continue;
		}
		if (len < BANNER_LIT_MIN)
			run[len++] = (unsigned char)lit;
		if (len == BANNER_LIT_MIN && !found) {
			unsigned h = banner_gram_hash(run);
			set->gram[h / 64] |= (uint64_t)1 << (h % 64);
			found = 1;
		}
		if (last)
			len = 0;
	}
}

/* 1 when some 4-byte window of s is in the prefilter. */
static int banner_maybe(const struct banner_set *set, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i;

	if (set->always)
		return 1;
	for (i = 0; i + BANNER_LIT_MIN <= n; i++) {
		unsigned h = banner_gram_hash(u + i);
		if (set->gram[h / 64] >> (h % 64) & 1)
			return 1;
	}
	return 0;
}

/*
 * The default set: the guard "engaged" banners (docs/interfaces in
 * docs/capture.md) and the start-up lines that identify a vLLM / tt-metal
 * server. Names are stable; the analyzer keys on the arm:* ones.
 */
static const char banner_defaults[] =
	"arm:bare async merge: unguarded position match \\(no merge guard engaged\\)\n"
	"arm:prefilled QWEN36_PREFILLED_SLOTS_FIX engaged\n"
	"arm:batch QWEN36_MERGE_BATCH_GUARD engaged\n"
	"arm:lifetime QWEN36_MERGE_LIFETIME_GUARD engaged\n"
	"arm:stamp QWEN36_MERGE_STAMP_GUARD engaged\n"
	"arm:bound QWEN36_MERGE_GARBAGE_BOUND engaged\n"
	"vllm:version vLLM API server version \\S+\n"
	"vllm:args non-default args: \n"
	"vllm:engine Initializing an? (V1 )?LLM engine\n"
	"vllm:kv_cache GPU KV cache size: |# GPU blocks: |Maximum concurrency for \n"
	"vllm:ready Application startup complete|Uvicorn running on \n"
	"tt:device Opening user mode device driver|Detected chips\n"
	"tt:firmware [Ff]irmware (bundle )?version\n"
	"tt:kmd KMD version\n"
	"tt:mesh [Mm]esh device shape|MESH_DEVICE=\n";

void banner_scratch_init(struct banner_scratch *sc)
{
	sc->md = NULL;
	sc->used = 0;
	sc->failed = 0;
}

/* PCRE2 allocator over the scratch arena: a bump pointer, never freed. */
static void *banner_arena_alloc(PCRE2_SIZE size, void *data)
{
	struct banner_scratch *sc = data;
	size_t need = (size + 15) & ~(size_t)15;
	void *p;

	if (need > sizeof(sc->arena) - sc->used)
		return NULL;
	p = sc->arena + sc->used;
	sc->used += need;
	return p;
}

static void banner_arena_free(void *p, void *data)
{
	(void)p;
	(void)data;
}

static int banner_scratch_ready(struct banner_scratch *sc)
{
	pcre2_general_context *gc;

	if (sc->md)
		return 1;
	if (sc->failed)
		return 0;
	gc = pcre2_general_context_create(banner_arena_alloc, banner_arena_free, sc);
	if (gc)
		sc->md = pcre2_match_data_create(1, gc);
	if (!sc->md)
		sc->failed = 1;
	return sc->md != NULL;
}

void banner_set_free(struct banner_set *set)
{
	size_t i;

	if (!set)
		return;
	for (i = 0; i < set->n_rules; i++)
		pcre2_code_free(set->rules[i].code);
	pcre2_code_free(set->all);
	free(set->rules);
	free(set);
}

int banner_set_filtered(const struct banner_set *set)
{
	return !set->always;
}

size_t banner_set_count(const struct banner_set *set)
{
	return set->n_rules;
}

const char *banner_set_name(const struct banner_set *set, size_t i)
{
	return i < set->n_rules ? set->rules[i].name : "";
}

static int banner_name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == ':' || c == '-';
}

/* Compiles one pattern; on error fills si with the PCRE2 message. */
static pcre2_code *banner_compile(const char *pat, size_t n, const char *name, long line,
				  struct status_info *si)
{
	int err;
	PCRE2_SIZE off;
	pcre2_code *code;

	code = pcre2_compile((PCRE2_SPTR)pat, n, 0, &err, &off, NULL);
	if (!code) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(err, msg, sizeof(msg));
		status_set_at(si, STATUS_PARSE, name, line, (long)off + 1,
			      "pattern error at offset %zu: %s", (size_t)off, (const char *)msg);
	}
	return code;
}

/* Builds "(*MARK:0)(?:p0)|(*MARK:1)(?:p1)|..." so one match finds the first rule. */
static void banner_build_all(struct banner_set *set, char **pats, size_t *lens)
{
	size_t i, total = 0, len = 0;
	char *s;
	int err;
	PCRE2_SIZE off;

	for (i = 0; i < set->n_rules; i++)
		total += lens[i] + 32;
	s = malloc(total + 1);
	if (!s)
		return;
	for (i = 0; i < set->n_rules; i++) {
		len += (size_t)snprintf(s + len, total + 1 - len, "%s(*MARK:%zu)(?:", i ? "|" : "", i);
		memcpy(s + len, pats[i], lens[i]);
		len += lens[i];
		s[len++] = ')';
	}
	set->all = pcre2_compile((PCRE2_SPTR)s, len, 0, &err, &off, NULL);
	free(s);
	/* A rule using start-of-pattern items cannot be combined: match rule by rule. */
	if (set->all)
		set->all_jit = pcre2_jit_compile(set->all, PCRE2_JIT_COMPLETE) == 0;
}

enum status banner_set_parse(const char *text, size_t n, const char *name,
			     struct banner_set **out, struct status_info *si)
{
	struct banner_set *set = NULL;
	char **pats = NULL;
	size_t *lens = NULL;
	size_t cap = 0, pos = 0;
	long line = 0;
	enum status st = STATUS_OK;

	*out = NULL;
	set = calloc(1, sizeof(*set));
	if (!set)
		return status_set(si, STATUS_NOMEM, "out of memory");
	while (pos < n) {
		const char *l = text + pos, *nl = memchr(l, '\n', n - pos);
		size_t ll = nl ? (size_t)(nl - l) : n - pos, i = 0, nlen;
		struct banner_rule *r;

		pos += ll + (nl ? 1 : 0);
		line++;
		if (ll && l[ll - 1] == '\r')
			ll--;
		while (i < ll && (l[i] == ' ' || l[i] == '\t'))
			i++;
		if (i == ll || l[i] == '#')
			continue;
		nlen = 0;
		while (i + nlen < ll && l[i + nlen] != ' ' && l[i + nlen] != '\t') {
			if (!banner_name_char(l[i + nlen])) {
				st = status_set_at(si, STATUS_PARSE, name, line, (long)(i + nlen) + 1,
						   "rule name has character '%c' (allowed: letters, digits, _ . : -)",
						   l[i + nlen]);
				goto out;
			}
			nlen++;
		}
		if (nlen > BANNER_NAME_MAX) {
			st = status_set_at(si, STATUS_PARSE, name, line, (long)i + 1,
					   "rule name longer than %d bytes", BANNER_NAME_MAX);
			goto out;
		}
		{
			size_t j = i + nlen;
			while (j < ll && (l[j] == ' ' || l[j] == '\t'))
				j++;
			if (j == ll) {
				st = status_set_at(si, STATUS_PARSE, name, line, (long)j + 1,
						   "rule '%.*s' has no pattern", (int)nlen, l + i);
				goto out;
			}
			if (set->n_rules == BANNER_MAX_RULES) {
				st = status_set_at(si, STATUS_LIMIT, name, line, 1,
						   "more than %d rules", BANNER_MAX_RULES);
				goto out;
			}
			if (set->n_rules == cap) {
				size_t nc = cap ? cap * 2 : 16;
				struct banner_rule *nr = realloc(set->rules, nc * sizeof(*nr));
				char **np;
				size_t *nlens;
				if (nr)
					set->rules = nr;
				np = nr ? realloc(pats, nc * sizeof(*np)) : NULL;
				if (np)
					pats = np;
				nlens = np ? realloc(lens, nc * sizeof(*nlens)) : NULL;
				if (!nlens) {
					st = status_set(si, STATUS_NOMEM, "out of memory");
					goto out;
				}
				lens = nlens;
				cap = nc;
			}
			r = &set->rules[set->n_rules];
			memset(r, 0, sizeof(*r));
			memcpy(r->name, l + i, nlen);
			r->code = banner_compile(l + j, ll - j, name, line, si);
			if (!r->code) {
				st = STATUS_PARSE;
				goto out;
			}
			r->jit = pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;
			if (!banner_literals(set, l + j, ll - j))
				set->always = 1;
			pats[set->n_rules] = (char *)(l + j);
			lens[set->n_rules] = ll - j;
			set->n_rules++;
		}
	}
	if (set->n_rules)
		banner_build_all(set, pats, lens);
	*out = set;
	set = NULL;
out:
	free(pats);
	free(lens);
	banner_set_free(set);
	return st;
}

struct banner_set *banner_set_default(void)
{
	struct banner_set *set = NULL;

	banner_set_parse(banner_defaults, sizeof(banner_defaults) - 1, "built-in rules", &set, NULL);
	return set;
}

enum status banner_set_load(const char *path, struct banner_set **out, struct status_info *si)
{
	char *text = NULL;
	size_t len = 0;
	int fd = -1;
	enum status st;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		st = status_set_at(si, STATUS_IO, path, 0, 0, "cannot open rules file: %s",
				   strerror(errno));
		goto out;
	}
	text = malloc(BANNER_FILE_MAX + 1);
	if (!text) {
		st = status_set(si, STATUS_NOMEM, "out of memory");
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, text + len, BANNER_FILE_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			st = status_set_at(si, STATUS_IO, path, 0, 0, "cannot read rules file: %s",
					   strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > BANNER_FILE_MAX) {
			st = status_set_at(si, STATUS_LIMIT, path, 0, 0,
					   "rules file larger than %d bytes", BANNER_FILE_MAX);
			goto out;
		}
	}
	st = banner_set_parse(text, len, path, out, si);
	if (st == STATUS_OK && banner_set_count(*out) == 0) {
		banner_set_free(*out);
		*out = NULL;
		st = status_set_at(si, STATUS_PARSE, path, 0, 0, "rules file has no rules");
	}
out:
	free(text);
	if (fd >= 0)
		close(fd);
	return st;
}

static int banner_exec(pcre2_code *code, int jit, const char *s, size_t n, pcre2_match_data *md)
{
	if (jit)
		return pcre2_jit_match(code, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
	return pcre2_match(code, (PCRE2_SPTR)s, n, 0, 0, md, NULL);
}

int banner_set_match(const struct banner_set *set, const char *s, size_t n,
		     struct banner_scratch *sc)
{
	size_t i;

	if (!set || !set->n_rules || !banner_maybe(set, s, n) || !banner_scratch_ready(sc))
		return -1;
	if (set->all) {
		PCRE2_SPTR mark;
		size_t k = 0;

		if (banner_exec(set->all, set->all_jit, s, n, sc->md) < 0)
			return -1;
		mark = pcre2_get_mark(sc->md);
		if (!mark || !*mark)
			return -1;
		for (; *mark; mark++)
			k = k * 10 + (size_t)(*mark - '0');
		return k < set->n_rules ? (int)k : -1;
	}
	for (i = 0; i < set->n_rules; i++)
		if (banner_exec(set->rules[i].code, set->rules[i].jit, s, n, sc->md) >= 0)
			return (int)i;
	return -1;
}
