/*
 * opt.h - one table per command, from which everything about its command
 * line comes: the parser, `--help`/`-h`, `ttaudit help CMD`, the error
 * messages, the man page (ttaudit.1) and the synopses in README.md. In the
 * manner of git's parse-options: an option's parse, its variable and its
 * help text are one line of the table, so they cannot drift apart.
 *
 * In base/, not cli/, because two programs use it: ttaudit's commands and
 * ttsim's (cmd_doc.prog names the program). It needs nothing but libc.
 *
 * A command writes:
 *
 *   static const char *const replay_usage[] = { "replay [options] FILE...", NULL };
 *   static const struct opt replay_opts[] = {
 *           OPT_STRING(0, "rules", &rules, "LIST", "comma-separated rules ..."),
 *           OPT_BOOL(0, "json", &json, "the same report as one JSON object"),
 *           OPT_END(),
 *   };
 *   const struct cmd_doc cmd_replay_doc = { "replay", "one-line summary",
 *           replay_usage, "what it does, for --help and the man page", replay_opts };
 *
 *   n = opt_parse(&cmd_replay_doc, argc, argv, 0);
 *   if (n < 0) return opt_exit(n);    -- help printed (0) or usage error (2)
 *
 * after which argv[0..n) are the operands, in order.
 */
#ifndef TTAUDIT_OPT_H
#define TTAUDIT_OPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum opt_kind {
	OPT_KIND_END = 0,
	OPT_KIND_BOOL,     /* bool *: set true */
	OPT_KIND_STRING,   /* const char **: the argument (not copied; it is argv's) */
	OPT_KIND_INT,      /* long long * or int * (OPT_INT takes the size from the
			    * variable): decimal integer within [imin, imax] */
	OPT_KIND_NUM,      /* double *: finite number within [min, max] */
	OPT_KIND_LIST,     /* struct opt_list *: each use appends its argument */
	OPT_KIND_CALL,     /* calls fn(o, arg, err, n); arg NULL when the option takes none;
			    * o->var is the variable OPT_CALL_VAR names (NULL otherwise) */
	OPT_KIND_GROUP,    /* a heading in --help, not an option */
};

#define OPT_LIST_MAX 64

struct opt_list {
	const char *v[OPT_LIST_MAX];
	size_t n;
};

struct opt;
/* Returns 0, or -1 with a message (no "PROG CMD: " prefix) in err. */
typedef int (*opt_fn)(const struct opt *o, const char *arg, char *err, size_t n);

struct opt {
	enum opt_kind kind;
	char shrt;              /* short name, 0 for none */
	const char *name;       /* long name without "--"; the heading of a GROUP */
	void *var;
	const char *arg;        /* the value's name in help ("FILE"); NULL: takes none */
	const char *help;       /* one sentence or two, lower case start, no full stop;
				 * NULL: hidden (parsed, never in help, man page or hints) */
	double min, max;        /* NUM bounds, inclusive */
	opt_fn fn;
	/* INT bounds, inclusive: integers, so that the whole int64 range can be taken
	 * (a double cannot hold INT64_MAX) */
	long long imin, imax;
	/* CALL only: the value is optional and one of these words (NULL-ended):
	 * "--name=WORD", or "--name WORD" when the next argument is one of them;
	 * otherwise fn gets NULL. arg is how help shows it ("[MODE]"). */
	const char *const *words;
	size_t size;            /* INT only: sizeof the variable (int or long long) */
};

#define OPT_END() { OPT_KIND_END, 0, NULL, NULL, NULL, NULL, 0, 0, NULL, 0, 0, NULL, 0 }
#define OPT_GROUP(h) { OPT_KIND_GROUP, 0, (h), NULL, NULL, NULL, 0, 0, NULL, 0, 0, NULL, 0 }
#define OPT_BOOL(s, l, v, h) { OPT_KIND_BOOL, (s), (l), (v), NULL, (h), 0, 0, NULL, 0, 0, NULL, 0 }
#define OPT_STRING(s, l, v, a, h) { OPT_KIND_STRING, (s), (l), (v), (a), (h), 0, 0, NULL, 0, 0, NULL, 0 }
#define OPT_INT(s, l, v, a, lo, hi, h) \
	{ OPT_KIND_INT, (s), (l), (v), (a), (h), 0, 0, NULL, (lo), (hi), NULL, sizeof(*(v)) }
#define OPT_NUM(s, l, v, a, lo, hi, h) \
	{ OPT_KIND_NUM, (s), (l), (v), (a), (h), (lo), (hi), NULL, 0, 0, NULL, 0 }
#define OPT_LIST(s, l, v, a, h) { OPT_KIND_LIST, (s), (l), (v), (a), (h), 0, 0, NULL, 0, 0, NULL, 0 }
#define OPT_CALL(s, l, a, fn, h) { OPT_KIND_CALL, (s), (l), NULL, (a), (h), 0, 0, (fn), 0, 0, NULL, 0 }
#define OPT_CALL_VAR(s, l, v, a, fn, h) \
	{ OPT_KIND_CALL, (s), (l), (v), (a), (h), 0, 0, (fn), 0, 0, NULL, 0 }
#define OPT_WORD(s, l, a, fn, w, h) { OPT_KIND_CALL, (s), (l), NULL, (a), (h), 0, 0, (fn), 0, 0, (w), 0 }

/* Flags of a command. */
enum {
	/* Options end at the first operand (a command line to run follows). */
	CMD_OPTS_FIRST = 1 << 0,
	/* The command takes sub-commands (report timeline ...): the first operand
	 * ends the options shared by all, as with CMD_OPTS_FIRST. */
	CMD_SUBCOMMANDS = 1 << 1,
	/* The command takes no operand: one is a usage error. */
	CMD_NO_OPERANDS = 1 << 2,
};

struct cmd_doc {
	const char *name;                 /* "replay"; "report timeline" for a sub-command */
	const char *summary;              /* one line, for the command list */
	const char *const *usage;         /* synopsis lines without the program, NULL-terminated */
	const char *description;          /* paragraphs separated by blank lines; may be NULL */
	const struct opt *opts;           /* ends with OPT_END(); -h/--help are implicit */
	unsigned flags;
	const char *exit_notes;           /* what 1 means for this command; NULL: no verdict */
	/* When set, each operand is handed to it in command-line order, between
	 * the options around it, instead of being collected into argv (for
	 * "--run A B --capture C", where an operand belongs to the option before
	 * it). Returns 0, or -1 with a message in err. */
	int (*operand)(const char *arg, char *err, size_t n);
	/* Sub-commands (with CMD_SUBCOMMANDS), NULL-terminated; their help and
	 * man sections follow the command's. */
	const struct cmd_doc *const *subs;
	const char *prog;                 /* the program, in help and messages; NULL: "ttaudit" */
};

/* The sub-command of d named `name`, or NULL. */
const struct cmd_doc *opt_sub(const struct cmd_doc *d, const char *name);

/* Return values of opt_parse below 0; opt_exit turns them into exit codes. */
enum { OPT_HELP_SHOWN = -1, OPT_ERROR = -2 };

/*
 * Parses argv[1..argc) against d. Options and operands may be mixed (unless
 * CMD_OPTS_FIRST); "--" ends the options; "-" is an operand. Long names are
 * matched exactly, never as prefixes, so that a script keeps its meaning when
 * an option is added. Values come as "--name VALUE", "--name=VALUE",
 * "-x VALUE" or "-xVALUE"; a value may start with '-' ("--from -5").
 *
 * Returns the number of operands, moved to argv[0..n) in order (argv[0], the
 * command name, is overwritten), or OPT_HELP_SHOWN after printing the help on
 * stdout, or OPT_ERROR after printing "PROG CMD: <what is wrong>" and a
 * hint on stderr. Variables of options not given are left as they were.
 */
int opt_parse(const struct cmd_doc *d, int argc, char **argv);

/* "PROG CMD: <message>" and the hint opt_parse gives, on stderr: for the
 * usage errors a command finds after parsing (an operand too many). */
void opt_error(const struct cmd_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 0 for OPT_HELP_SHOWN, 2 for OPT_ERROR. */
int opt_exit(int parse_result);

/* The help of d (usage, description, options, exit codes) on f. */
void opt_help(const struct cmd_doc *d, FILE *f);
/* "usage: PROG ..." lines only, for a usage error that shows them. */
void opt_usage(const struct cmd_doc *d, FILE *f);
/* The command's section of the man page, in roff (man(7)). */
void opt_man(const struct cmd_doc *d, FILE *f);
/* The synopsis lines, sub-commands' included, as README.md's synopsis blocks hold them
 * (tests/doc/run-examples.py checks them, make readme writes them). */
void opt_synopsis(const struct cmd_doc *d, FILE *f);

/*
 * The closest of names[0..n) to s by edit distance, or NULL when none is
 * close enough to be a likely typo. For "did you mean" hints.
 */
const char *opt_nearest(const char *s, const char *const *names, size_t n);

#endif
