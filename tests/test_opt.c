/* test_opt.c - the command option tables (base/opt.c): parsing, errors, help, man. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "base/opt.h"

static bool t_json;
static const char *t_rules, *t_out;
static long long t_max;
static double t_pct;
static struct opt_list t_env;
static int t_calls;
static const char *t_word;
static int t_word_calls;
static const char *t_ops[8];
static size_t t_n_ops;

static int t_cb(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	t_calls++;
	if (arg && !strcmp(arg, "bad")) {
		snprintf(err, n, "'bad' is bad");
		return -1;
	}
	return 0;
}

static int t_word_cb(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)o;
	(void)err;
	(void)n;
	t_word_calls++;
	t_word = arg;
	return 0;
}

static const char *const t_words[] = { "canary", "reference", NULL };

static int t_operand(const char *arg, char *err, size_t n)
{
	if (!strcmp(arg, "nope")) {
		snprintf(err, n, "'%s' refused", arg);
		return -1;
	}
	t_ops[t_n_ops++] = arg;
	return 0;
}

static const char *const t_usage[] = { "t [options] FILE...", "t --other", NULL };

static const struct opt t_opts[] = {
	OPT_STRING(0, "rules", &t_rules, "LIST", "rules to replay"),
	OPT_BOOL('j', "json", &t_json, "as JSON"),
	OPT_STRING('o', "output", &t_out, "FILE", "where it goes"),
	OPT_GROUP("limits"),
	OPT_INT(0, "max-pos", &t_max, "N", 1, 1000, "a bound"),
	OPT_NUM(0, "pct", &t_pct, "P", 0, 100, "a share"),
	OPT_LIST(0, "env", &t_env, "PAT", "repeatable"),
	OPT_CALL(0, "cb", "X", t_cb, "a callback"),
	OPT_WORD(0, "mode", "[MODE]", t_word_cb, t_words, "an optional word"),
	OPT_END(),
};

static const struct cmd_doc t_doc = {
	.name = "t", .summary = "a test command", .usage = t_usage,
	.description = "First paragraph, long enough to wrap around the seventy-nine column limit "
		       "of the help text that the printer applies.\n\n  kept   as is\n",
	.opts = t_opts, .exit_notes = "a verdict failed",
};

static const struct cmd_doc t_first = { .name = "t1", .usage = t_usage, .opts = t_opts,
					.flags = CMD_OPTS_FIRST };
static const struct cmd_doc t_ordered = { .name = "t2", .usage = t_usage, .opts = t_opts,
					  .operand = t_operand };

static int t_reset(void **state)
{
	(void)state;
	t_json = false;
	t_rules = t_out = NULL;
	t_max = 0;
	t_pct = 0;
	memset(&t_env, 0, sizeof(t_env));
	t_calls = 0;
	t_word = NULL;
	t_word_calls = 0;
	t_n_ops = 0;
	return 0;
}

/* Parses a NULL-terminated list of words (copied: opt_parse rewrites argv). */
static int t_parse(const struct cmd_doc *d, char **argv_out, ...)
{
	static char words[16][64];
	va_list ap;
	const char *w;
	int argc = 0;

	va_start(ap, argv_out);
	while ((w = va_arg(ap, const char *)) != NULL && argc < 15) {
		snprintf(words[argc], sizeof(words[argc]), "%s", w);
		argv_out[argc] = words[argc];
		argc++;
	}
	va_end(ap);
	argv_out[argc] = NULL;
	return opt_parse(d, argc, argv_out);
}

static void test_values(void **state)
{
	char *av[16];
	int n;

	(void)state;
	n = t_parse(&t_doc, av, "t", "a.jsonl", "--rules", "bare,batch", "-j", "--max-pos=7", "b.jsonl",
		    "--pct", "2.5", "--env", "A*", "--env=B*", "-oout.svg", "--cb", "x", NULL);
	assert_int_equal(n, 2);
	assert_string_equal(av[0], "a.jsonl");
	assert_string_equal(av[1], "b.jsonl");
	assert_string_equal(t_rules, "bare,batch");
	assert_true(t_json);
	assert_int_equal(t_max, 7);
	assert_true(t_pct == 2.5);
	assert_int_equal(t_env.n, 2);
	assert_string_equal(t_env.v[1], "B*");
	assert_string_equal(t_out, "out.svg");
	assert_int_equal(t_calls, 1);
	/* a value may start with '-'; "-" is an operand; "--" ends options */
	n = t_parse(&t_doc, av, "t", "-o", "-x", "-", "--", "--json", NULL);
	assert_int_equal(n, 2);
	assert_string_equal(t_out, "-x");
	assert_string_equal(av[0], "-");
	assert_string_equal(av[1], "--json");
}

/* An optional word: taken when the next argument is one of the words or
 * given with '=', otherwise the option alone. */
static void test_word(void **state)
{
	char *av[16];
	int n;

	(void)state;
	n = t_parse(&t_doc, av, "t", "--mode", "canary", "a.jsonl", NULL);
	assert_int_equal(n, 1);
	assert_int_equal(t_word_calls, 1);
	assert_string_equal(t_word, "canary");
	n = t_parse(&t_doc, av, "t", "--mode", "a.jsonl", NULL);
	assert_int_equal(n, 1);
	assert_null(t_word);
	assert_string_equal(av[0], "a.jsonl");
	n = t_parse(&t_doc, av, "t", "--mode", NULL);
	assert_int_equal(n, 0);
	assert_null(t_word);
	n = t_parse(&t_doc, av, "t", "--mode=other", NULL);
	assert_string_equal(t_word, "other");
	n = t_parse(&t_doc, av, "t", "--mode", "--json", NULL);
	assert_null(t_word);
	assert_true(t_json);
}

static void test_errors(void **state)
{
	char *av[16];

	(void)state;
	assert_int_equal(t_parse(&t_doc, av, "t", "--jsn", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&t_doc, av, "t", "--js", NULL), OPT_ERROR);       /* no prefixes */
	assert_int_equal(t_parse(&t_doc, av, "t", "--rules", NULL), OPT_ERROR);    /* needs a value */
	assert_int_equal(t_parse(&t_doc, av, "t", "--json=1", NULL), OPT_ERROR);   /* takes none */
	assert_int_equal(t_parse(&t_doc, av, "t", "--max-pos", "0", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&t_doc, av, "t", "--max-pos", "1001", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&t_doc, av, "t", "--max-pos", "7x", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&t_doc, av, "t", "--pct", "nan", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&t_doc, av, "t", "--pct", "101", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&t_doc, av, "t", "--cb", "bad", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&t_doc, av, "t", "-q", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&t_doc, av, "t", "-o", NULL), OPT_ERROR);
	assert_int_equal(opt_exit(OPT_ERROR), 2);
	assert_int_equal(opt_exit(OPT_HELP_SHOWN), 0);
}

/*
 * Integer options take the whole range they document, to INT64_MIN and
 * INT64_MAX themselves (a double as the limit stopped at 9.2e18).
 */
static void test_int64_range(void **state)
{
	static long long whole, pos, narrow;
	static const struct opt opts[] = {
		OPT_INT(0, "whole", &whole, "N", INT64_MIN, INT64_MAX, "any int64"),
		OPT_INT(0, "max-pos", &pos, "N", 1, INT64_MAX, "a bound"),
		OPT_INT(0, "narrow", &narrow, "N", 0, (INT64_C(1) << 53), "2^53 at most"),
		OPT_END(),
	};
	static const struct cmd_doc d = { .name = "t", .usage = t_usage, .opts = opts };
	char *av[16];

	(void)state;
	assert_int_equal(t_parse(&d, av, "t", "--max-pos", "9223372036854775807", NULL), 0);
	assert_true(pos == INT64_MAX);
	assert_int_equal(t_parse(&d, av, "t", "--max-pos", "9223372036854775806", NULL), 0);
	assert_true(pos == INT64_MAX - 1);
	assert_int_equal(t_parse(&d, av, "t", "--max-pos", "9223372036854775808", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&d, av, "t", "--max-pos", "0", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&d, av, "t", "--whole", "-9223372036854775808", NULL), 0);
	assert_true(whole == INT64_MIN);
	assert_int_equal(t_parse(&d, av, "t", "--whole", "9223372036854775807", NULL), 0);
	assert_true(whole == INT64_MAX);
	assert_int_equal(t_parse(&d, av, "t", "--whole", "-9223372036854775809", NULL), OPT_ERROR);
	/* compared as integers: 2^53 + 1 is above 2^53, though not as a double */
	assert_int_equal(t_parse(&d, av, "t", "--narrow", "9007199254740992", NULL), 0);
	assert_int_equal(t_parse(&d, av, "t", "--narrow", "9007199254740993", NULL), OPT_ERROR);
}

static void test_order(void **state)
{
	char *av[16];
	int n;

	(void)state;
	/* CMD_OPTS_FIRST: the first operand ends the options (a command line follows) */
	n = t_parse(&t_first, av, "t1", "-j", "python3", "--json", "x", NULL);
	assert_int_equal(n, 3);
	assert_string_equal(av[0], "python3");
	assert_string_equal(av[1], "--json");
	/* an operand callback sees operands in place, between the options */
	n = t_parse(&t_ordered, av, "t2", "a", "-j", "b", NULL);
	assert_int_equal(n, 0);
	assert_int_equal(t_n_ops, 2);
	assert_string_equal(t_ops[1], "b");
	assert_int_equal(t_parse(&t_ordered, av, "t2", "nope", NULL), OPT_ERROR);
}

static void test_nearest(void **state)
{
	static const char *const names[] = { "replay", "validate", "capture", "follow", "report" };

	(void)state;
	assert_string_equal(opt_nearest("replya", names, 5), "replay");
	assert_string_equal(opt_nearest("valdate", names, 5), "validate");
	assert_string_equal(opt_nearest("cap", names, 5), "capture");
	assert_null(opt_nearest("zzzzzz", names, 5));
	assert_null(opt_nearest("x", names, 5));
}

/* Runs fn(d, f) into a memory buffer; returns it (static). */
static const char *t_render(void (*fn)(const struct cmd_doc *, FILE *), const struct cmd_doc *d)
{
	static char buf[8192];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	assert_non_null(f);
	fn(d, f);
	fclose(f);
	return buf;
}

static void test_help(void **state)
{
	const char *h;
	const char *line;

	(void)state;
	h = t_render(opt_help, &t_doc);
	assert_non_null(strstr(h, "usage: ttaudit t [options] FILE...\n       ttaudit t --other\n"));
	assert_non_null(strstr(h, "      --rules LIST      rules to replay\n"));
	assert_non_null(strstr(h, "  -j, --json            as JSON\n"));
	assert_non_null(strstr(h, "\nlimits:\n"));
	assert_non_null(strstr(h, "  kept   as is\n"));
	assert_non_null(strstr(h, "  -h, --help            show this help\n"));
	assert_non_null(strstr(h, "exit status: 0 ok, 1 a verdict failed, 2 bad usage or input\n"));
	/* no line wider than 79 columns */
	for (line = h; *line;) {
		const char *e = strchr(line, '\n');
		assert_non_null(e);
		assert_true(e - line <= 79);
		line = e + 1;
	}
	h = t_render(opt_man, &t_doc);
	assert_non_null(strstr(h, ".SS \"ttaudit t\"\n"));
	assert_non_null(strstr(h, "\\fB\\-j\\fR, \\fB\\-\\-json\\fR\n"));
	assert_non_null(strstr(h, "\\fB\\-\\-max\\-pos\\fR \\fIN\\fR\n"));
	h = t_render(opt_synopsis, &t_doc);
	assert_string_equal(h, "ttaudit t [options] FILE...\nttaudit t --other\n");
}

/*
 * What ttsim's tables use: another program's name in help, man page and
 * messages; an int variable (bounds past int refused, not wrapped); a
 * callback that writes the variable its line names; a hidden option (parsed,
 * absent from help, man page and hints); no operand taken.
 */
static int t_var_cb(const struct opt *o, const char *arg, char *err, size_t n)
{
	(void)err;
	(void)n;
	*(const char **)o->var = arg;
	return 0;
}

static void test_program(void **state)
{
	static int small;
	static const char *via;
	static bool hidden;
	static const struct opt opts[] = {
		OPT_INT(0, "small", &small, "N", 0, INT64_MAX, "an int"),
		OPT_CALL_VAR(0, "via", &via, "X", t_var_cb, "through its variable"),
		OPT_BOOL(0, "secret-flag", &hidden, NULL),
		OPT_END(),
	};
	static const struct cmd_doc d = { .prog = "ttsim", .name = "serve", .usage = t_usage,
					  .opts = opts, .flags = CMD_NO_OPERANDS };
	char *av[16], err[512];
	const char *h;
	FILE *saved = stderr, *f;

	(void)state;
	assert_int_equal(t_parse(&d, av, "serve", "--small", "2147483647", "--via", "v",
				 "--secret-flag", NULL), 0);
	assert_int_equal(small, INT32_MAX);
	assert_string_equal(via, "v");
	assert_true(hidden);
	memset(err, 0, sizeof(err));
	f = fmemopen(err, sizeof(err) - 1, "w");
	assert_non_null(f);
	stderr = f;
	assert_int_equal(t_parse(&d, av, "serve", "--small", "2147483648", NULL), OPT_ERROR);
	assert_int_equal(small, INT32_MAX);      /* refused, not wrapped */
	assert_int_equal(t_parse(&d, av, "serve", "--secret-flg", NULL), OPT_ERROR);
	assert_int_equal(t_parse(&d, av, "serve", "--small", "1", "extra", NULL), OPT_ERROR);
	stderr = saved;
	fclose(f);
	assert_non_null(strstr(err, "ttsim serve: option '--small' wants an integer"));
	assert_non_null(strstr(err, "see 'ttsim serve --help'"));
	assert_null(strstr(err, "did you mean"));
	assert_non_null(strstr(err, "ttsim serve: unexpected argument 'extra'"));
	assert_int_equal(small, 1);
	h = t_render(opt_help, &d);
	assert_non_null(strstr(h, "usage: ttsim t [options] FILE...\n"));
	assert_null(strstr(h, "secret"));
	h = t_render(opt_man, &d);
	assert_non_null(strstr(h, ".SS \"ttsim serve\"\n"));
	assert_null(strstr(h, "secret"));
	h = t_render(opt_synopsis, &d);
	assert_string_equal(h, "ttsim t [options] FILE...\nttsim t --other\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_values, t_reset),
		cmocka_unit_test_setup(test_word, t_reset),
		cmocka_unit_test_setup(test_errors, t_reset),
		cmocka_unit_test_setup(test_int64_range, t_reset),
		cmocka_unit_test_setup(test_order, t_reset),
		cmocka_unit_test_setup(test_nearest, t_reset),
		cmocka_unit_test_setup(test_help, t_reset),
		cmocka_unit_test_setup(test_program, t_reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
