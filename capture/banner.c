#define PCRE2_CODE_UNIT_WIDTH 8
#include "capture/banner.h"

#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct banner_rule {
	char name[BANNER_NAME_MAX + 1];
	pcre2_code *code;        /* this rule alone: validation and fallback */
	int jit;
};

/*
 * Prefilter: most lines are not banners, and a regex search per line is the
 * shim's largest cost on a busy log. Each rule's pattern is read for literal
 * text every match must contain: in each top-level branch, its longest run
 * of literal bytes (up to BANNER_RUN_MAX, at least BANNER_LIT_MIN). A line
 * can match a rule only if it holds one of the rule's literals, whole.
 *
 * Finding them: every 4-byte window of every literal is indexed by its
 * bytes (`head`/`ent`, a chained hash of the window, with a two-probe Bloom
 * filter in front so that most probes end at one bit test). A literal of m
 * bytes has m - 3 windows, so wherever it occurs in a line one of them
 * starts at a multiple of any stride up to m - 3: the line is probed only
 * at those offsets, `stride` being the smallest m - 3 over all literals.
 * Each window that is indexed names the literals it belongs to and where;
 * the literal is then compared whole (memcmp) at the place the window puts
 * it. Only a rule whose literal is really there has its own regex run, in
 * rule order, so a line full of fragments of rules (`decode`, `version`,
 * `engaged`) costs a few probes and comparisons and no regex. A rule from
 * which no literal can be read (inline options such as `(?i)`, `\Q...\E`,
 * lookarounds, a branch without four literal bytes in a row) is tried on
 * every line: the others stay filtered.
 */
#define BANNER_GRAM_BITS 14
#define BANNER_LIT_MIN 4
#define BANNER_RUN_MAX 32
#define BANNER_MAX_LITS 1024

struct banner_lit {
	unsigned char s[BANNER_RUN_MAX];
	unsigned len;
	unsigned rule;
};

/* One window of one literal: the literal, and the window's offset in it. */
struct banner_ent {
	uint32_t gram;
	uint16_t lit;
	uint8_t off;
	int32_t next;            /* next entry in the same hash chain, -1 ends */
};

struct banner_set {
	struct banner_rule *rules;
	size_t n_rules;
	uint64_t always[BANNER_MAX_RULES / 64];   /* rules without a literal */
	int any_always;
	size_t stride;           /* probe every stride-th window (>= 1 once a literal is added) */
	struct banner_lit *lits;
	size_t n_lits;
	struct banner_ent *ent;
	size_t n_ent;
	int32_t head[1u << BANNER_GRAM_BITS];
	uint64_t gram[(1u << BANNER_GRAM_BITS) / 64];
	uint64_t gram2[(1u << BANNER_GRAM_BITS) / 64];
	struct banner_arena *arena;   /* built there (banner_set_arena), else malloc'd */
};

/* Allocation for a set being built: malloc, or the arena's bump pointer. */
static void *banner_alloc(struct banner_arena *a, size_t n)
{
	void *p;

	if (!a)
		return malloc(n);
	n = (n + 15) & ~(size_t)15;
	if (n > a->cap - a->used)
		return NULL;
	p = a->base + a->used;
	a->used += n;
	return p;
}

static void *banner_realloc(struct banner_arena *a, void *old, size_t old_n, size_t n)
{
	void *p;

	if (!a)
		return realloc(old, n);
	p = banner_alloc(a, n);
	if (p && old)
		memcpy(p, old, old_n < n ? old_n : n);
	return p;
}

static void *banner_pcre_alloc(PCRE2_SIZE size, void *data)
{
	return banner_alloc(data, size);
}

static void banner_pcre_free(void *p, void *data)
{
	(void)p;
	(void)data;
}

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

/* Indexes one literal of rule `rule`. 0 when the set's tables are full. */
static int banner_add_run(struct banner_set *set, unsigned rule, const unsigned char *run, size_t len)
{
	size_t i;
	struct banner_lit *lit;

	if (set->n_lits == BANNER_MAX_LITS)
		return 0;
	lit = &set->lits[set->n_lits];
	memcpy(lit->s, run, len);
	lit->len = (unsigned)len;
	lit->rule = rule;
	for (i = 0; i + BANNER_LIT_MIN <= len; i++) {
		uint32_t v = banner_gram(run + i);
		unsigned h = banner_hash1(v), h2 = banner_hash2(v);
		struct banner_ent *e = &set->ent[set->n_ent];

		set->gram[h / 64] |= (uint64_t)1 << (h % 64);
		set->gram2[h2 / 64] |= (uint64_t)1 << (h2 % 64);
		e->gram = v;
		e->lit = (uint16_t)set->n_lits;
		e->off = (uint8_t)i;
		e->next = set->head[h];
		set->head[h] = (int32_t)set->n_ent++;
	}
	set->n_lits++;
	if (!set->stride || len - (BANNER_LIT_MIN - 1) < set->stride)
		set->stride = len - (BANNER_LIT_MIN - 1);
	return 1;
}

/*
 * Takes the literals from n_lits on (and their windows from n_ent on) back
 * out of the index: they belong to a rule that turned out to have a branch
 * without one. Entries are removed newest first, so each is a chain head.
 */
static void banner_unindex(struct banner_set *set, size_t n_lits, size_t n_ent)
{
	while (set->n_ent > n_ent) {
		struct banner_ent *e = &set->ent[--set->n_ent];
		set->head[banner_hash1(e->gram)] = e->next;
	}
	set->n_lits = n_lits;
	/* Bloom bits are left set: a stale bit only costs a chain walk. */
}

/*
 * Adds to the prefilter the longest literal run of each top-level branch of
 * pat. Returns 0 when some branch has no run of BANNER_LIT_MIN bytes (or the
 * pattern uses something this reading does not follow: options, \Q).
 * Reading too little is safe (the filter lets more lines through); reading a
 * byte as literal that a match need not contain would hide banners.
 */
static int banner_literals(struct banner_set *set, unsigned rule, const char *pat, size_t n)
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
			if (best_len < BANNER_LIT_MIN || !banner_add_run(set, rule, best, best_len))
				return 0;
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

/*
 * Marks in cand (one bit per rule) the rules one of whose literals s holds,
 * whole. Returns 1 when any rule is a candidate.
 */
static int banner_candidates(const struct banner_set *set, const char *s, size_t n,
			     uint64_t *cand)
{
	const unsigned char *u = (const unsigned char *)s;
	const uint64_t *g1 = set->gram, *g2 = set->gram2;
	size_t i, step = set->stride, words = (set->n_rules + 63) / 64, w;
	int any = set->any_always, init = 0;

	if (any) {
		for (w = 0; w < words; w++)
			cand[w] = set->always[w];
		init = 1;
	}
	if (!step || n < BANNER_LIT_MIN)
		return any;
	for (i = 0; i <= n - BANNER_LIT_MIN; i += step) {
		uint32_t v;
		unsigned h;
		int32_t k;

		memcpy(&v, u + i, sizeof(v));
		h = banner_hash1(v);
		if (!(g1[h / 64] >> (h % 64) & 1))
			continue;
		if (!banner_bit(g2, banner_hash2(v)))
			continue;
		for (k = set->head[h]; k >= 0; k = set->ent[k].next) {
			const struct banner_ent *e = &set->ent[k];
			const struct banner_lit *lit = &set->lits[e->lit];

			if (e->gram != v || i < e->off || i - e->off + lit->len > n ||
			    memcmp(u + i - e->off, lit->s, lit->len))
				continue;
			if (!init) {
				for (w = 0; w < words; w++)
					cand[w] = 0;
				init = 1;
			}
			cand[lit->rule / 64] |= (uint64_t)1 << (lit->rule % 64);
			any = 1;
		}
	}
	return any;
}

/*
 * Control Sequence Introducer codes (ESC [ parameters final-byte), the other
 * two-byte ESC sequences, and OSC strings (ESC ] ... BEL or ESC \): what
 * colour and cursor codes a terminal logger writes. Returns the length of
 * the sequence at s[0] (an ESC), or 0 when it is not one.
 */
static size_t banner_ansi_len(const char *s, size_t n)
{
	size_t i;

	if (n < 2)
		return 0;
	if (s[1] == '[') {
		for (i = 2; i < n; i++) {
			unsigned char c = (unsigned char)s[i];
			if (c >= 0x40 && c <= 0x7e)
				return i + 1;
			if (c < 0x20 || c > 0x3f)
				return 0;
		}
		return 0;
	}
	if (s[1] == ']') {
		for (i = 2; i < n; i++) {
			if (s[i] == '\a')
				return i + 1;
			if (s[i] == 0x1b && i + 1 < n && s[i + 1] == '\\')
				return i + 2;
		}
		return 0;
	}
	return (unsigned char)s[1] >= 0x40 && (unsigned char)s[1] <= 0x5f ? 2 : 0;
}

static int banner_name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int banner_word(char c)
{
	return banner_name_start(c) || (c >= '0' && c <= '9') || c == '_';
}

/*
 * Length of a vLLM process prefix at s[0]: `(NAME pid=N) `, `(NAME) ` or
 * `(NAME (SUFFIX)) ` (vLLM's utils/system_utils.py, old and new), NAME a
 * word; 0 when s does not start with one.
 */
size_t banner_prefix_len(const char *s, size_t n)
{
	size_t i = 1;

	if (n < 4 || s[0] != '(' || !banner_name_start(s[1]))
		return 0;
	while (i < n && i < 80 && banner_word(s[i]))
		i++;
	if (i + 5 < n && !memcmp(s + i, " pid=", 5)) {
		size_t d = i + 5;
		while (d < n && s[d] >= '0' && s[d] <= '9')
			d++;
		if (d == i + 5)
			return 0;
		i = d;
	} else if (i + 2 < n && s[i] == ' ' && s[i + 1] == '(') {
		size_t d = i + 2;
		while (d < n && d < 120 && banner_word(s[d]))
			d++;
		if (d == i + 2 || d >= n || s[d] != ')')
			return 0;
		i = d + 1;
	}
	return i + 1 < n && s[i] == ')' && s[i + 1] == ' ' ? i + 2 : 0;
}

const char *banner_strip(const char *s, size_t n, char *out, size_t cap, size_t *out_n)
{
	const char *esc = memchr(s, 0x1b, n);
	size_t i = 0, o = 0, k;

	if (!esc) {
		k = banner_prefix_len(s, n);
		*out_n = n - k;
		return s + k;
	}
	if (n > cap) {
		*out_n = n;
		return s;
	}
	while (i < n) {
		if (s[i] == 0x1b && (k = banner_ansi_len(s + i, n - i))) {
			i += k;
			continue;
		}
		out[o++] = s[i++];
	}
	k = banner_prefix_len(out, o);
	*out_n = o - k;
	return out + k;
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

	if (!set || set->arena)
		return;
	for (i = 0; i < set->n_rules; i++)
		pcre2_code_free(set->rules[i].code);
	free(set->rules);
	free(set->lits);
	free(set->ent);
	free(set);
}

int banner_set_filtered(const struct banner_set *set)
{
	return !set->any_always;
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
				  pcre2_compile_context *cc, struct status_info *si)
{
	int err;
	PCRE2_SIZE off;
	pcre2_code *code;

	code = pcre2_compile((PCRE2_SPTR)pat, n, 0, &err, &off, cc);
	if (!code) {
		PCRE2_UCHAR msg[256];
		pcre2_get_error_message(err, msg, sizeof(msg));
		status_set_at(si, STATUS_PARSE, name, line, (long)off + 1,
			      "pattern error at offset %zu: %s", (size_t)off, (const char *)msg);
	}
	return code;
}

static enum status banner_set_build(const char *text, size_t n, const char *name, struct banner_arena *a,
				    struct banner_set **out, struct status_info *si)
{
	struct banner_set *set = NULL;
	pcre2_compile_context *cc = NULL;
	size_t cap = 0, pos = 0;
	long line = 0;
	enum status st = STATUS_OK;

	*out = NULL;
	set = banner_alloc(a, sizeof(*set));
	if (set) {
		memset(set, 0, sizeof(*set));
		set->arena = a;
		set->lits = banner_alloc(a, BANNER_MAX_LITS * sizeof(*set->lits));
		set->ent = banner_alloc(a, BANNER_MAX_LITS * (BANNER_RUN_MAX - BANNER_LIT_MIN + 1) * sizeof(*set->ent));
	}
	if (a) {
		pcre2_general_context *gc = pcre2_general_context_create(banner_pcre_alloc, banner_pcre_free, a);
		cc = gc ? pcre2_compile_context_create(gc) : NULL;
	}
	if (!set || !set->lits || !set->ent || (a && !cc)) {
		banner_set_free(set);
		return status_set(si, STATUS_NOMEM, "out of memory");
	}
	memset(set->head, 0xff, sizeof(set->head));
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
				struct banner_rule *nr = banner_realloc(a, set->rules, cap * sizeof(*nr), nc * sizeof(*nr));
				if (!nr) {
					st = status_set(si, STATUS_NOMEM, "out of memory");
					goto out;
				}
				set->rules = nr;
				cap = nc;
			}
			r = &set->rules[set->n_rules];
			memset(r, 0, sizeof(*r));
			memcpy(r->name, l + i, nlen);
			r->code = banner_compile(l + j, ll - j, name, line, cc, si);
			if (!r->code) {
				st = STATUS_PARSE;
				goto out;
			}
			r->jit = !a && pcre2_jit_compile(r->code, PCRE2_JIT_COMPLETE) == 0;
			{
				/* a rule's literals go in whole or not at all */
				size_t n_lits = set->n_lits, n_ent = set->n_ent, stride = set->stride;
				if (!banner_literals(set, (unsigned)set->n_rules, l + j, ll - j)) {
					banner_unindex(set, n_lits, n_ent);
					set->stride = stride;
					set->always[set->n_rules / 64] |= (uint64_t)1 << (set->n_rules % 64);
					set->any_always = 1;
				}
			}
			set->n_rules++;
		}
	}
	*out = set;
	set = NULL;
out:
	banner_set_free(set);
	return st;
}

enum status banner_set_parse(const char *text, size_t n, const char *name,
			     struct banner_set **out, struct status_info *si)
{
	return banner_set_build(text, n, name, NULL, out, si);
}

struct banner_set *banner_set_arena(const char *path, struct banner_arena *a)
{
	struct banner_set *set = NULL;
	char *text;
	size_t len = 0, used = a->used;
	int fd;

	if (!path || !*path) {
		banner_set_build(banner_defaults, banner_defaults_len, "built-in rules", a, &set, NULL);
		return set;
	}
	text = banner_alloc(a, BANNER_FILE_MAX + 1);
	fd = text ? (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return NULL;
	for (;;) {
		long r = (long)syscall(SYS_read, fd, text + len, BANNER_FILE_MAX + 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len > BANNER_FILE_MAX)
			break;
	}
	syscall(SYS_close, fd);
	if (len <= BANNER_FILE_MAX)
		banner_set_build(text, len, path, a, &set, NULL);
	if (!set || !set->n_rules) {
		a->used = used;
		return NULL;
	}
	return set;
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

int banner_set_candidates(const struct banner_set *set, const char *s, size_t n)
{
	uint64_t cand[BANNER_MAX_RULES / 64];
	size_t w;
	int k = 0;

	if (!set || !set->n_rules || !banner_candidates(set, s, n, cand))
		return 0;
	for (w = 0; w < (set->n_rules + 63) / 64; w++)
		k += __builtin_popcountll(cand[w]);
	return k;
}

int banner_set_match(const struct banner_set *set, const char *s, size_t n,
		     struct banner_scratch *sc)
{
	uint64_t cand[BANNER_MAX_RULES / 64];
	size_t w;

	if (!set || !set->n_rules || !banner_candidates(set, s, n, cand))
		return -1;
	if (!banner_scratch_ready(sc))
		return -1;
	for (w = 0; w < (set->n_rules + 63) / 64; w++) {
		uint64_t m = cand[w];
		while (m) {
			size_t i = w * 64 + (size_t)__builtin_ctzll(m);
			m &= m - 1;
			if (banner_exec(set->rules[i].code, set->rules[i].jit, s, n, sc->md) >= 0)
				return (int)i;
		}
	}
	return -1;
}
