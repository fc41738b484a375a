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
 * literal text every match must contain: in each top-level branch, its
 * longest run of literal bytes (up to BANNER_RUN_MAX). Every 4-byte window
 * of that run is hashed into `gram`. A run of m bytes has m - 3 windows, so
 * wherever it occurs in a line, one of them starts at a multiple of any
 * stride up to m - 3: the line is probed only at those offsets, `stride`
 * being the smallest m - 3 over all branches. A line none of whose probes
 * hits the table cannot match, and skips the regex. Each window is hashed
 * twice, into `gram` and `gram2` (a two-probe Bloom filter), so that few
 * ordinary lines pay for a regex search they did not need. A rule without
 * a usable literal sets `always` and disables the filter.
 */
#define BANNER_GRAM_BITS 16
#define BANNER_LIT_MIN 4
#define BANNER_RUN_MAX 32

struct banner_set {
	struct banner_rule *rules;
	size_t n_rules;
	pcre2_code *all;         /* every rule in one alternation, or NULL */
	int all_jit;
	int always;              /* some rule has no literal: no prefilter */
	size_t stride;           /* probe every stride-th window (>= 1 once a run is added) */
	uint64_t gram[(1u << BANNER_GRAM_BITS) / 64];
	uint64_t gram2[(1u << BANNER_GRAM_BITS) / 64];
};

/* Four bytes as one word, in host order: the table is built and probed alike. */
static uint32_t banner_gram(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static unsigned banner_hash1(uint32_t v)
{
	return (unsigned)((v * 2654435761u) >> (32 - BANNER_GRAM_BITS));
}

static unsigned banner_hash2(uint32_t v)
{
	return (unsigned)((v * 0x85ebca6bu) >> (32 - BANNER_GRAM_BITS));
}

static int banner_bit(const uint64_t *t, unsigned h)
{
	return (int)(t[h / 64] >> (h % 64) & 1);
}

static int banner_meta(char c)
{
	return c && strchr("\\^$.|?*+()[]{}", c) != NULL;
}

static int banner_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/*
 * How many pattern bytes after `\e` (at p[0..n)) are the escape's argument
 * rather than literal text: \x41, \101, \cA, \pL, \g-1, \k<name>. Arguments
 * in braces (\x{41}, \p{Lu}) are skipped by the caller as braces.
 */
static size_t banner_escape_args(const char *p, size_t n, char e)
{
	size_t k = 0;

	if (e == 'c')
		return n ? 1 : 0;
	if (e == 'x') {
		while (k < n && k < 2 && banner_hex(p[k]))
			k++;
		return k;
	}
	if (e == 'p' || e == 'P')
		return n && p[0] != '{' ? 1 : 0;
	if ((e == 'g' || e == 'k') && n && (p[0] == '<' || p[0] == '\'')) {
		char end = p[0] == '<' ? '>' : '\'';
		for (k = 1; k < n && p[k] != end; k++)
			;
		return k < n ? k + 1 : k;
	}
	if ((e == 'g' || e == 'k') && n && (p[0] == '+' || p[0] == '-'))
		k = 1;
	if ((e >= '0' && e <= '9') || e == 'g' || e == 'k')
		while (k < n && p[k] >= '0' && p[k] <= '9')
			k++;
	return k;
}

/* Index of the '}' closing the brace at p[0], or 0 when '{' is literal text. */
static size_t banner_brace_end(const char *p, size_t n)
{
	size_t k;

	for (k = 1; k < n; k++) {
		if (p[k] == '}')
			return k;
		if (strchr("|()[\\{", p[k]))
			return 0;
	}
	return 0;
}

static void banner_add_run(struct banner_set *set, const unsigned char *run, size_t len)
{
	size_t i;

	for (i = 0; i + BANNER_LIT_MIN <= len; i++) {
		uint32_t v = banner_gram(run + i);
		unsigned h = banner_hash1(v), h2 = banner_hash2(v);
		set->gram[h / 64] |= (uint64_t)1 << (h % 64);
		set->gram2[h2 / 64] |= (uint64_t)1 << (h2 % 64);
	}
	if (!set->stride || len - (BANNER_LIT_MIN - 1) < set->stride)
		set->stride = len - (BANNER_LIT_MIN - 1);
}

/*
 * Adds to the prefilter the longest literal run of each top-level branch of
 * pat. Returns 0 when some branch has no run of BANNER_LIT_MIN bytes (or the
 * pattern uses something this reading does not follow: options, \Q).
 * Reading too little is safe (the filter lets more lines through); reading a
 * byte as literal that a match need not contain would hide banners.
 */
static int banner_literals(struct banner_set *set, const char *pat, size_t n)
{
	unsigned char run[BANNER_RUN_MAX], best[BANNER_RUN_MAX];
	size_t i = 0, len = 0, best_len = 0;
	int depth = 0, cls = 0;

	for (;; i++) {
		char c = i < n ? pat[i] : '\0';
		char lit = 0;       /* a literal byte at depth 0, or 0 */
		int breaks = 1;     /* ends the current run */
		int last = 0;       /* a literal that ends the run after itself ("a+") */

		if (i == n || (c == '|' && depth == 0 && !cls)) {
			if (best_len < BANNER_LIT_MIN)
				return 0;
			banner_add_run(set, best, best_len);
			if (i == n)
				return 1;
			len = best_len = 0;
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
			} else if (i < n) {
				i += banner_escape_args(pat + i + 1, n - i - 1, e);
			}
		} else if (c == '[') {
			cls = 1;
			if (i + 1 < n && pat[i + 1] == ']')
				i++;
		} else if (c == '{') {
			/* a quantifier's or an escape's argument: not literal text */
			size_t k = banner_brace_end(pat + i, n - i);
			if (k)
				i += k;
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
		if (len < BANNER_RUN_MAX) {
			run[len++] = (unsigned char)lit;
			if (len > best_len) {
				memcpy(best, run, len);
				best_len = len;
			}
		}
		if (last)
			len = 0;
	}
}

/* 1 when some probed 4-byte window of s is in the prefilter. */
static int banner_maybe(const struct banner_set *set, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, step = set->stride;

	if (set->always)
		return 1;
	for (i = 0; i + BANNER_LIT_MIN <= n; i += step) {
		uint32_t v = banner_gram(u + i);
		if (banner_bit(set->gram, banner_hash1(v)) && banner_bit(set->gram2, banner_hash2(v)))
			return 1;
	}
	return 0;
}

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

	banner_set_parse(banner_defaults, banner_defaults_len, "built-in rules", &set, NULL);
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
