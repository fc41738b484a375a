/*
 * opt.c - the option tables of the commands (opt.h): parsing, help, the man
 * page and README synopses, all from the one table per command.
 */
#include "base/opt.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define OPT_WIDTH 79        /* help text is wrapped to this many columns */
#define OPT_COL 24          /* where an option's help starts */

/* The program d belongs to: "ttaudit" unless its table names another. */
static const char *opt_prog(const struct cmd_doc *d)
{
	return d->prog ? d->prog : "ttaudit";
}

/* An option help and the man page show (a NULL help hides one). */
static bool opt_shown(const struct opt *o)
{
	return o->kind == OPT_KIND_GROUP || o->help != NULL;
}

void opt_error(const struct cmd_doc *d, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s %s: ", opt_prog(d), d->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nsee '%s %s --help'\n", opt_prog(d), d->name);
}

static bool opt_takes_value(const struct opt *o)
{
	return o->arg != NULL;
}

/* The option's name as the user would write it, for messages. */
static const char *opt_label(const struct opt *o, char *buf, size_t n)
{
	if (o->name)
		snprintf(buf, n, "--%s", o->name);
	else
		snprintf(buf, n, "-%c", o->shrt);
	return buf;
}

/* Stores arg in o's variable; 0, or -1 after an error message. */
static int opt_store(const struct cmd_doc *d, const struct opt *o, const char *arg)
{
	char label[80], err[256];

	opt_label(o, label, sizeof(label));
	switch (o->kind) {
	case OPT_KIND_BOOL:
		*(bool *)o->var = true;
		return 0;
	case OPT_KIND_STRING:
		*(const char **)o->var = arg;
		return 0;
	case OPT_KIND_LIST: {
		struct opt_list *l = o->var;
		if (l->n >= OPT_LIST_MAX) {
			opt_error(d, "option '%s' given more than %d times", label, OPT_LIST_MAX);
			return -1;
		}
		l->v[l->n++] = arg;
		return 0;
	}
	case OPT_KIND_INT: {
		char *end;
		long long v;

		errno = 0;
		v = strtoll(arg, &end, 10);
		if (!*arg || *end || errno || v < o->imin || v > o->imax ||
		    (o->size == sizeof(int) && (v < INT_MIN || v > INT_MAX))) {
			opt_error(d, "option '%s' wants an integer from %lld to %lld, not '%s'",
				  label, o->imin, o->imax, arg);
			return -1;
		}
		if (o->size == sizeof(int))
			*(int *)o->var = (int)v;
		else
			*(long long *)o->var = v;
		return 0;
	}
	case OPT_KIND_NUM: {
		char *end;
		double v;

		errno = 0;
		v = strtod(arg, &end);
		if (!*arg || *end || errno || !isfinite(v) || v < o->min || v > o->max) {
			opt_error(d, "option '%s' wants a number from %g to %g, not '%s'",
				  label, o->min, o->max, arg);
			return -1;
		}
		*(double *)o->var = v;
		return 0;
	}
	case OPT_KIND_CALL:
		err[0] = 0;
		if (o->fn(o, arg, err, sizeof(err)) != 0) {
			if (err[0])
				opt_error(d, "option '%s': %s", label, err);
			else
				opt_error(d, "option '%s': bad value '%s'", label, arg ? arg : "");
			return -1;
		}
		return 0;
	default:
		return -1;
	}
}

static const struct opt *opt_find_long(const struct opt *opts, const char *name, size_t n)
{
	const struct opt *o;

	for (o = opts; o->kind != OPT_KIND_END; o++)
		if (o->kind != OPT_KIND_GROUP && o->name && strlen(o->name) == n &&
		    !memcmp(o->name, name, n))
			return o;
	return NULL;
}

static const struct opt *opt_find_short(const struct opt *opts, char c)
{
	const struct opt *o;

	for (o = opts; o->kind != OPT_KIND_END; o++)
		if (o->kind != OPT_KIND_GROUP && o->shrt == c)
			return o;
	return NULL;
}

/* Levenshtein distance of a and b, capped at 9 (all a hint needs). */
static size_t opt_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t prev[65], cur[65];

	if (la > 64 || lb > 64)
		return 9;
	for (j = 0; j <= lb; j++)
		prev[j] = j;
	for (i = 1; i <= la; i++) {
		cur[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t del = prev[j] + 1, ins = cur[j - 1] + 1;
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
			cur[j] = del < ins ? del : ins;
			if (sub < cur[j])
				cur[j] = sub;
		}
		memcpy(prev, cur, (lb + 1) * sizeof(prev[0]));
	}
	return prev[lb] < 9 ? prev[lb] : 9;
}

const char *opt_nearest(const char *s, const char *const *names, size_t n)
{
	const char *best = NULL;
	size_t best_d = 9, i, ls = strlen(s);

	for (i = 0; i < n; i++) {
		size_t d = opt_distance(s, names[i]);
		/* A prefix of a name is a likely slip too ("--max" for "--max-pos"). */
		if (ls >= 3 && !strncmp(names[i], s, ls) && d > 1)
			d = 1;
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	/* Two edits at most, and fewer than half the word's letters. */
	if (best && best_d <= 2 && best_d * 2 < (ls > 2 ? ls : 2))
		return best;
	return NULL;
}

static void opt_unknown(const struct cmd_doc *d, const char *arg, size_t n)
{
	const char *names[128];
	const struct opt *o;
	const char *near;
	char want[80];
	size_t k = 0;

	snprintf(want, sizeof(want), "%.*s", (int)(n < 70 ? n : 70), arg);
	for (o = d->opts; o->kind != OPT_KIND_END && k < 127; o++)
		if (o->kind != OPT_KIND_GROUP && o->name && o->help)
			names[k++] = o->name;
	names[k++] = "help";
	near = opt_nearest(want, names, k);
	if (near)
		opt_error(d, "unknown option '--%s' (did you mean '--%s'?)", want, near);
	else
		opt_error(d, "unknown option '--%s'", want);
}

int opt_parse(const struct cmd_doc *d, int argc, char **argv)
{
	int i, n_ops = 0;
	bool opts_done = false;
	char label[80];

	for (i = 1; i < argc; i++) {
		char *a = argv[i];
		const struct opt *o;

		if (opts_done || a[0] != '-' || !a[1]) {
			if (d->operand) {
				char err[256] = "";

				if (d->operand(a, err, sizeof(err)) != 0) {
					opt_error(d, "%s", err[0] ? err : "unexpected argument");
					return OPT_ERROR;
				}
				continue;
			}
			if (d->flags & CMD_NO_OPERANDS) {
				opt_error(d, "unexpected argument '%s'", a);
				return OPT_ERROR;
			}
			argv[n_ops++] = a;
			if (d->flags & (CMD_OPTS_FIRST | CMD_SUBCOMMANDS))
				opts_done = true;
			continue;
		}
		if (!strcmp(a, "--")) {
			opts_done = true;
			continue;
		}
		if (a[1] == '-') {
			const char *name = a + 2, *eq = strchr(name, '=');
			size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
			const char *val = eq ? eq + 1 : NULL;

			if (nlen == 4 && !memcmp(name, "help", 4)) {
				opt_help(d, stdout);
				return OPT_HELP_SHOWN;
			}
			o = opt_find_long(d->opts, name, nlen);
			if (!o) {
				opt_unknown(d, name, nlen);
				return OPT_ERROR;
			}
			opt_label(o, label, sizeof(label));
			if (o->words) {
				/* an optional value: given with '=', or the next
				 * argument when it is one of the words */
				size_t w;

				for (w = 0; !val && i + 1 < argc && o->words[w]; w++)
					if (!strcmp(argv[i + 1], o->words[w]))
						val = argv[++i];
				if (opt_store(d, o, val) != 0)
					return OPT_ERROR;
				continue;
			}
			if (!opt_takes_value(o)) {
				if (val) {
					opt_error(d, "option '%s' takes no value", label);
					return OPT_ERROR;
				}
			} else if (!val) {
				if (i + 1 >= argc) {
					opt_error(d, "option '%s' needs a value: %s", label, o->arg);
					return OPT_ERROR;
				}
				val = argv[++i];
			}
			if (opt_store(d, o, val) != 0)
				return OPT_ERROR;
			continue;
		}
		/* One or more short options: -j, -o FILE, -oFILE, -vj. */
		for (a++; *a; a++) {
			if (*a == 'h') {
				opt_help(d, stdout);
				return OPT_HELP_SHOWN;
			}
			o = opt_find_short(d->opts, *a);
			if (!o) {
				opt_error(d, "unknown option '-%c'", *a);
				return OPT_ERROR;
			}
			if (!opt_takes_value(o)) {
				if (opt_store(d, o, NULL) != 0)
					return OPT_ERROR;
				continue;
			}
			if (a[1]) {
				if (opt_store(d, o, a + 1) != 0)
					return OPT_ERROR;
			} else if (i + 1 < argc) {
				if (opt_store(d, o, argv[++i]) != 0)
					return OPT_ERROR;
			} else {
				opt_error(d, "option '-%c' needs a value: %s", *a, o->arg);
				return OPT_ERROR;
			}
			break;
		}
	}
	return n_ops;
}

int opt_exit(int parse_result)
{
	return parse_result == OPT_HELP_SHOWN ? 0 : 2;
}

/* --- help ------------------------------------------------------------------ */

/* Writes text wrapped to OPT_WIDTH, each line starting at column `indent`
 * (the first at `col`, where the cursor already is). */
static void opt_wrap(FILE *f, const char *s, size_t indent, size_t col)
{
	while (*s) {
		const char *w = s;
		size_t len;

		while (*w == ' ')
			w++;
		len = strcspn(w, " ");
		if (!*w)
			break;
		if (col > indent && col + 1 + len > OPT_WIDTH) {
			fprintf(f, "\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			fputc(' ', f);
			col++;
		}
		fwrite(w, 1, len, f);
		col += len;
		s = w + len;
	}
	fputc('\n', f);
}

/*
 * Description text: paragraphs separated by blank lines are wrapped; a line
 * that starts with two spaces is kept as it is (lists, examples).
 */
static void opt_paragraphs(FILE *f, const char *s)
{
	char para[4096];
	size_t n = 0;

	while (*s) {
		const char *eol = strchr(s, '\n');
		size_t len = eol ? (size_t)(eol - s) : strlen(s);

		if (len >= 2 && s[0] == ' ' && s[1] == ' ') {
			if (n) {
				para[n] = 0;
				opt_wrap(f, para, 0, 0);
				n = 0;
			}
			fprintf(f, "%.*s\n", (int)len, s);
		} else if (len == 0) {
			if (n) {
				para[n] = 0;
				opt_wrap(f, para, 0, 0);
				n = 0;
			}
			fputc('\n', f);
		} else {
			if (n && n + 1 < sizeof(para))
				para[n++] = ' ';
			if (n + len >= sizeof(para))
				len = sizeof(para) - 1 - n;
			memcpy(para + n, s, len);
			n += len;
		}
		s += len + (eol ? 1 : 0);
		if (!eol)
			break;
	}
	if (n) {
		para[n] = 0;
		opt_wrap(f, para, 0, 0);
	}
}

void opt_usage(const struct cmd_doc *d, FILE *f)
{
	size_t i;

	for (i = 0; d->usage && d->usage[i]; i++)
		fprintf(f, "%s %s %s\n", i ? "      " : "usage:", opt_prog(d), d->usage[i]);
}

/* "  -o, --output FILE" into buf; returns its length. */
static size_t opt_head(const struct opt *o, char *buf, size_t n)
{
	int k;

	if (o->shrt && o->name)
		k = snprintf(buf, n, "  -%c, --%s%s%s", o->shrt, o->name, o->arg ? " " : "",
			     o->arg ? o->arg : "");
	else if (o->shrt)
		k = snprintf(buf, n, "  -%c%s%s", o->shrt, o->arg ? " " : "", o->arg ? o->arg : "");
	else
		k = snprintf(buf, n, "      --%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	return k < 0 ? 0 : (size_t)k >= n ? n - 1 : (size_t)k;
}

void opt_help(const struct cmd_doc *d, FILE *f)
{
	const struct opt *o;
	char head[160];

	opt_usage(d, f);
	if (d->summary) {
		fputc('\n', f);
		opt_wrap(f, d->summary, 0, 0);
	}
	if (d->description) {
		fputc('\n', f);
		opt_paragraphs(f, d->description);
	}
	if (d->subs) {
		size_t i;

		fprintf(f, "\ncommands:\n");
		for (i = 0; d->subs[i]; i++) {
			const char *sp = strchr(d->subs[i]->name, ' ');
			fprintf(f, "  %-12s", sp ? sp + 1 : d->subs[i]->name);
			opt_wrap(f, d->subs[i]->summary ? d->subs[i]->summary : "", 14, 14);
		}
		fprintf(f, "\n'%s %s COMMAND --help' shows a command's options.\n", opt_prog(d),
			d->name);
	}
	fprintf(f, "\noptions:\n");
	for (o = d->opts; o && o->kind != OPT_KIND_END; o++) {
		size_t len;

		if (!opt_shown(o))
			continue;
		if (o->kind == OPT_KIND_GROUP) {
			snprintf(head, sizeof(head), "%s:", o->name);
			fputc('\n', f);
			opt_wrap(f, head, 0, 0);
			continue;
		}
		len = opt_head(o, head, sizeof(head));
		fputs(head, f);
		if (len + 2 > OPT_COL) {
			fprintf(f, "\n%*s", OPT_COL, "");
			len = OPT_COL;
		} else {
			fprintf(f, "%*s", (int)(OPT_COL - len), "");
			len = OPT_COL;
		}
		opt_wrap(f, o->help, OPT_COL, len);
	}
	fprintf(f, "  -h, --help%*sshow this help\n", OPT_COL - 12, "");
	fprintf(f, "\nexit status: 0 ok");
	if (d->exit_notes)
		fprintf(f, ", 1 %s", d->exit_notes);
	fprintf(f, ", 2 bad usage or input\n");
}

/* --- man page and README --------------------------------------------------- */

/* Text escaped for roff: backslashes, and a leading '.' or '\''. */
static void opt_roff(FILE *f, const char *s, size_t n)
{
	size_t i;

	if (n && (s[0] == '.' || s[0] == '\''))
		fputs("\\&", f);
	for (i = 0; i < n; i++) {
		if (s[i] == '\\')
			fputs("\\e", f);
		else if (s[i] == '-')
			fputs("\\-", f);
		else
			fputc(s[i], f);
	}
}

static void opt_roff_z(FILE *f, const char *s)
{
	opt_roff(f, s, strlen(s));
}

void opt_man(const struct cmd_doc *d, FILE *f)
{
	const struct opt *o;
	const char *s;
	size_t i;

	fprintf(f, ".SS \"%s %s\"\n", opt_prog(d), d->name);
	for (i = 0; d->usage && d->usage[i]; i++) {
		fprintf(f, ".nf\n\\fB%s\\fR ", opt_prog(d));
		opt_roff_z(f, d->usage[i]);
		fputs("\n.fi\n", f);
	}
	if (d->summary) {
		fputs(".PP\n", f);
		opt_roff_z(f, d->summary);
		fputc('\n', f);
	}
	for (s = d->description; s && *s;) {
		const char *eol = strchr(s, '\n');
		size_t len = eol ? (size_t)(eol - s) : strlen(s);

		if (len == 0)
			fputs(".PP\n", f);
		else if (len >= 2 && s[0] == ' ' && s[1] == ' ') {
			fputs(".nf\n", f);
			opt_roff(f, s, len);
			fputs("\n.fi\n", f);
		} else {
			opt_roff(f, s, len);
			fputc('\n', f);
		}
		s += len + (eol ? 1 : 0);
		if (!eol)
			break;
	}
	for (o = d->opts; o && o->kind != OPT_KIND_END; o++) {
		if (!opt_shown(o))
			continue;
		if (o->kind == OPT_KIND_GROUP) {
			fputs(".PP\n\\fI", f);
			opt_roff_z(f, o->name);
			fputs("\\fR\n", f);
			continue;
		}
		fputs(".TP\n", f);
		if (o->shrt)
			fprintf(f, "\\fB\\-%c\\fR%s", o->shrt, o->name ? ", " : "");
		if (o->name) {
			fputs("\\fB\\-\\-", f);
			opt_roff_z(f, o->name);
			fputs("\\fR", f);
		}
		if (o->arg) {
			fputs(" \\fI", f);
			opt_roff_z(f, o->arg);
			fputs("\\fR", f);
		}
		fputc('\n', f);
		opt_roff_z(f, o->help);
		fputc('\n', f);
	}
	fputs(".PP\nExit status: 0 ok", f);
	if (d->exit_notes) {
		fputs(", 1 ", f);
		opt_roff_z(f, d->exit_notes);
	}
	fputs(", 2 bad usage or input.\n", f);
	for (i = 0; d->subs && d->subs[i]; i++)
		opt_man(d->subs[i], f);
}

const struct cmd_doc *opt_sub(const struct cmd_doc *d, const char *name)
{
	size_t i, n = strlen(d->name);

	for (i = 0; d->subs && d->subs[i]; i++) {
		const char *s = d->subs[i]->name;
		if (!strncmp(s, d->name, n) && s[n] == ' ' && !strcmp(s + n + 1, name))
			return d->subs[i];
	}
	return NULL;
}

void opt_synopsis(const struct cmd_doc *d, FILE *f)
{
	size_t i;

	for (i = 0; d->usage && d->usage[i]; i++)
		fprintf(f, "%s %s\n", opt_prog(d), d->usage[i]);
	for (i = 0; d->subs && d->subs[i]; i++) {
		size_t j;
		for (j = 0; d->subs[i]->usage && d->subs[i]->usage[j]; j++)
			fprintf(f, "%s %s\n", opt_prog(d->subs[i]), d->subs[i]->usage[j]);
	}
}
