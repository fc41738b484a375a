/* test_ttsim_modelopt.c - the options of ttsim's model, shared by `ttsim
 * serve` and `ttsim run`: parsed through the same table lines both hold. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "tools/ttsim/guard.h"
#include "tools/ttsim/modelopt.h"

static struct ttsim_model_config t_mc;
static struct ttsim_modelopt_arm t_arm;
static const struct opt t_opts[] = { TTSIM_MODEL_OPTS(t_mc, t_arm), OPT_END() };
static const char *const t_usage[] = { "t", NULL };
static const struct cmd_doc t_doc = { .prog = "ttsim", .name = "t", .usage = t_usage,
				      .opts = t_opts, .flags = CMD_NO_OPERANDS };

/* opt_parse on the words (copied: it rewrites argv), stderr kept in err. */
static int t_parse(char *err, size_t n, const char *const *words)
{
	static char buf[24][64];
	char *av[25];
	FILE *saved = stderr, *f;
	int argc = 0, r;

	ttsim_model_config_default(&t_mc);
	memset(&t_arm, 0, sizeof(t_arm));
	for (; words[argc] && argc < 24; argc++) {
		snprintf(buf[argc], sizeof(buf[argc]), "%s", words[argc]);
		av[argc] = buf[argc];
	}
	av[argc] = NULL;
	memset(err, 0, n);
	f = fmemopen(err, n - 1, "w");
	assert_non_null(f);
	stderr = f;
	r = opt_parse(&t_doc, argc, av);
	stderr = saved;
	fclose(f);
	return r;
}

static void test_pick(void **state)
{
	static const char *const two[] = { "a", "b", NULL }, *const three[] = { "x", "y", "z", NULL };
	char err[128];

	(void)state;
	assert_int_equal(ttsim_modelopt_pick("b", two, err, sizeof(err)), 1);
	assert_int_equal(ttsim_modelopt_pick("c", two, err, sizeof(err)), -1);
	assert_string_equal(err, "'c': want a or b");
	assert_int_equal(ttsim_modelopt_pick("", three, err, sizeof(err)), -1);
	assert_string_equal(err, "'': want x, y or z");
	/* a short buffer is cut, never overrun */
	assert_int_equal(ttsim_modelopt_pick("long-value", three, err, 8), -1);
	assert_string_equal(err, "'long-v");
}

static void test_values(void **state)
{
	static const char *const w[] = {
		"t", "--arm", "stamp+batch", "--slots", "16", "--seed", "9223372036854775807",
		"--decode-buckets", "1,2,4", "--trace-key", "sampling", "--generator", "generic",
		"--dp", "2", "--host-sampling", "0.5", NULL
	};
	char err[512], name[TTSIM_ARM_NAME_MAX];

	(void)state;
	assert_int_equal(t_parse(err, sizeof(err), w), 0);
	assert_true(t_arm.set);
	assert_string_equal(ttsim_guard_name(t_arm.mask, name, sizeof(name)), "batch+stamp");
	assert_int_equal(t_mc.slots, 16);
	assert_true(t_mc.seed == 9223372036854775807ull);
	assert_int_equal(t_mc.n_buckets, 3);
	assert_int_equal(t_mc.buckets[2], 4);
	assert_true(t_mc.trace_key_sampling);
	assert_int_equal(t_mc.generator, TTSIM_GEN_GENERIC);
	assert_int_equal(t_mc.dp, 2);
	assert_true(t_mc.host_sampling == 0.5);
}

/* Every refusal names the option and what it wants; the old --refresh-every
 * says what replaced it and is in no help. */
static void test_refused(void **state)
{
	static const struct { const char *opt, *val, *msg; } bad[] = {
		{ "--arm", "nope", "option '--arm': 'nope': unknown arm" },
		{ "--slots", "0", "option '--slots' wants an integer from 1 to 256" },
		{ "--seed", "-1", "option '--seed' wants an integer from 0" },
		{ "--decode-buckets", "4,2", "'4,2': want ascending widths" },
		{ "--decode-buckets", ",", "want ascending widths" },
		{ "--trace-key", "width", "'width': want sampling+batch or sampling" },
		{ "--generator", "gpu", "'gpu': want qwen36 or generic" },
		{ "--host-sampling", "2", "wants a number from 0 to 1" },
		{ "--refresh-every", "4", "gone: the keep reads the device's trace buffers" },
	};
	const char *w[4] = { "t", NULL, NULL, NULL };
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		w[1] = bad[i].opt;
		w[2] = bad[i].val;
		assert_int_equal(t_parse(err, sizeof(err), w), OPT_ERROR);
		if (!strstr(err, bad[i].msg))
			fail_msg("%s %s: '%s' lacks '%s'", bad[i].opt, bad[i].val, err, bad[i].msg);
	}
	for (i = 0; t_opts[i].kind != OPT_KIND_END; i++)
		if (t_opts[i].name && !strcmp(t_opts[i].name, "refresh-every"))
			assert_null(t_opts[i].help);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
