/*
 * cmd_passthrough.c - `ttaudit passthrough`: what a multi-rank (tt-run)
 * launch must forward so that every rank is captured and instrumented.
 *
 * The TT plugin's launcher copies into the ranks' environment only the
 * variables matching its `env_passthrough` patterns, by default VLLM_* and
 * MESH_DEVICE (vllm_tt_plugin/launcher.py), so LD_PRELOAD, the capture's
 * TTAUDIT_* variables, PYTHONPATH with the kit's sitecustomize and the guard
 * flags never reach the ranks unless added.
 * This command takes the options `ttaudit capture` would take, works out the
 * environment that capture gives the server (capture/launch.c, without
 * touching the capture file), and prints the patterns and the values.
 */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "base/jsonw.h"
#include "capture/launch.h"
#include "base/opt.h"
#include "analyzer/rule.h"

extern char **environ;

/* The plugin's default, kept first: env_passthrough replaces it. */
static const char *const passthrough_default[] = { "VLLM_*", "MESH_DEVICE" };
static const char *const passthrough_ours[] = {
	"LD_PRELOAD", "PYTHONPATH", "TTAUDIT_*", "QWEN36_*",
};

static const char *passthrough_out = "ttaudit.cap.jsonl", *passthrough_rules, *passthrough_env;
static const char *passthrough_watch, *passthrough_kit;
static bool passthrough_all_lines, passthrough_per_pid, passthrough_json;
static struct opt_list passthrough_guard;

static const char *const passthrough_usage[] = {
	"passthrough [CAPTURE-OPTIONS] [--guard ARM]... [--kit DIR] [--json]",
	NULL,
};

static const struct opt passthrough_opts[] = {
	OPT_GROUP("the capture, as for `ttaudit capture`"),
	OPT_STRING('o', "output", &passthrough_out, "FILE",
		   "capture file (default ttaudit.cap.jsonl); not touched here"),
	OPT_STRING(0, "rules", &passthrough_rules, "FILE", "banner rules file"),
	OPT_STRING(0, "env", &passthrough_env, "PATTERNS", "more environment names the capture records"),
	OPT_BOOL(0, "all-lines", &passthrough_all_lines, "the capture records every line"),
	OPT_STRING(0, "watch", &passthrough_watch, "GLOB", "the capture watches files matching GLOB"),
	OPT_BOOL(0, "per-pid", &passthrough_per_pid, "one capture file per process (FILE.<pid>)"),
	OPT_GROUP("the engine"),
	OPT_LIST(0, "guard", &passthrough_guard, "ARM",
		 "engage a guard, one of" RULE_GUARD_NAMES " (sets its QWEN36_* flag to 1)"),
	OPT_STRING(0, "kit", &passthrough_kit, "DIR",
		   "the ttaudit_emit package directory: put its sitecustomize on PYTHONPATH and set TTAUDIT_EMIT=1"),
	OPT_BOOL(0, "json", &passthrough_json, "patterns, values and the --additional-config object as JSON"),
	OPT_END(),
};

const struct cmd_doc cmd_passthrough_doc = {
	.name = "passthrough",
	.summary = "what a tt-run (multi-rank) launch must forward for capture and the kit",
	.usage = passthrough_usage,
	.description =
		"A tt-run launch forwards to its ranks only the variables that match the TT "
		"plugin's env_passthrough patterns (default VLLM_* and MESH_DEVICE). This prints "
		"the patterns to give instead (the default plus LD_PRELOAD, PYTHONPATH, TTAUDIT_* "
		"and QWEN36_*), ready for --additional-config, and the "
		"values they forward: the environment `ttaudit capture` with the same options "
		"gives the server, the guard flags and the kit. The values also serve as the "
		"rank binding's global_env.\n"
		"\n"
		"The preload library and the capture file's directory must exist at the same "
		"paths on every host; with ranks on several hosts, --per-pid keeps one file per "
		"process.",
	.opts = passthrough_opts,
};

static int passthrough_wanted(const char *name, size_t len)
{
	char buf[256];
	size_t i;

	if (len >= sizeof(buf))
		return 0;
	memcpy(buf, name, len);
	buf[len] = '\0';
	for (i = 0; i < sizeof(passthrough_ours) / sizeof(passthrough_ours[0]); i++)
		if (!fnmatch(passthrough_ours[i], buf, 0))
			return 1;
	return 0;
}

static int passthrough_setenv(const char *name, const char *value)
{
	if (setenv(name, value, 1)) {
		fprintf(stderr, "ttaudit passthrough: cannot set %s\n", name);
		return -1;
	}
	return 0;
}

/* PYTHONPATH with DIR/boot and DIR's parent first, and TTAUDIT_EMIT=1: what
 * `python3 -m ttaudit_emit.run` gives the server. */
static int passthrough_add_kit(const char *dir)
{
	const char *old = getenv("PYTHONPATH");
	size_t n = strlen(dir);
	char *pp, *parent, *slash;
	int rc;

	while (n > 1 && dir[n - 1] == '/')
		n--;
	parent = strndup(dir, n);
	if (!parent)
		return -1;
	slash = strrchr(parent, '/');
	if (!slash)
		strcpy(parent, ".");
	else if (slash == parent)
		parent[1] = '\0';
	else
		*slash = '\0';
	pp = malloc(n + strlen(parent) + (old ? strlen(old) : 0) + 16);
	if (!pp) {
		free(parent);
		return -1;
	}
	sprintf(pp, "%.*s/boot:%s%s%s", (int)n, dir, parent, old && *old ? ":" : "",
		old && *old ? old : "");
	rc = passthrough_setenv("PYTHONPATH", pp) || passthrough_setenv("TTAUDIT_EMIT", "1") ? -1 : 0;
	free(pp);
	free(parent);
	return rc;
}

/* Each --guard's flag (analyzer/rule.h, the one list of them) set to 1. */
static int passthrough_apply_guards(void)
{
	const char *flag;
	size_t i;

	for (i = 0; i < passthrough_guard.n; i++) {
		flag = rule_guard_flag(passthrough_guard.v[i]);
		if (!flag) {
			cli_usage_error("passthrough", "--guard '%s' is not an arm (one of" RULE_GUARD_NAMES ")",
					passthrough_guard.v[i]);
			return -1;
		}
		if (passthrough_setenv(flag, "1"))
			return -1;
	}
	return 0;
}

/* The patterns tt-run forwards: its defaults, then ours. */
static void passthrough_patterns(struct jsonw *w)
{
	size_t i;

	jsonw_arr(w);
	for (i = 0; i < sizeof(passthrough_default) / sizeof(passthrough_default[0]); i++)
		jsonw_str(w, passthrough_default[i]);
	for (i = 0; i < sizeof(passthrough_ours) / sizeof(passthrough_ours[0]); i++)
		jsonw_str(w, passthrough_ours[i]);
	jsonw_arr_end(w);
}

/* tt-run's --additional-config: {"tt":{"env_passthrough":[...]}}. */
static void passthrough_config(struct jsonw *w)
{
	jsonw_obj(w);
	jsonw_key(w, "tt");
	jsonw_obj(w);
	jsonw_key(w, "env_passthrough");
	passthrough_patterns(w);
	jsonw_obj_end(w);
	jsonw_obj_end(w);
}

static int passthrough_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int cmd_passthrough(int argc, char **argv)
{
	struct launch_opts lo = { 0 };
	struct status_info si;
	struct jsonw w;
	struct jsonw_mem mem;
	const char **names = NULL;
	char shim[4096], *txt = NULL;
	size_t n_env = 0, i, n_names = 0;
	enum status st;
	int n, rc = CLI_USAGE;

	n = cli_parse(&cmd_passthrough_doc, argc, argv, NULL, &rc);
	if (n < 0)
		return rc;
	if (n > 0)
		return cli_usage_error("passthrough", "takes no operands ('%s')", argv[0]);
	if (!*passthrough_out)
		return cli_usage_error("passthrough", "-o needs a file name");
	if (passthrough_apply_guards() || (passthrough_kit && passthrough_add_kit(passthrough_kit)))
		return CLI_USAGE;
	lo.out = passthrough_out;
	lo.rules = passthrough_rules;
	lo.env = passthrough_env;
	lo.watch = passthrough_watch;
	lo.all_lines = passthrough_all_lines;
	lo.per_pid = passthrough_per_pid;
	lo.append = 1;          /* the capture file is the launch's business, not ours */
	status_info_clear(&si);
	st = launch_find_shim(shim, sizeof(shim), &si);
	if (st == STATUS_OK)
		st = launch_setup(&lo, shim, &si);
	if (st != STATUS_OK) {
		cli_report_status("passthrough", st, &si);
		return CLI_USAGE;
	}
	while (environ[n_env])
		n_env++;
	names = calloc(n_env + 1, sizeof(*names));
	if (!names)
		goto nomem;
	for (i = 0; i < n_env; i++) {
		const char *eq = strchr(environ[i], '=');

		if (eq && passthrough_wanted(environ[i], (size_t)(eq - environ[i])))
			names[n_names++] = environ[i];
	}
	qsort(names, n_names, sizeof(*names), passthrough_cmp);

	if (passthrough_json) {
		jsonw_init(&w, stdout);
		jsonw_obj(&w);
		jsonw_key(&w, "env_passthrough");
		passthrough_patterns(&w);
		jsonw_key(&w, "env");
		jsonw_obj(&w);
		for (i = 0; i < n_names; i++) {
			const char *eq = strchr(names[i], '=');

			jsonw_keyn(&w, names[i], (size_t)(eq - names[i]));
			jsonw_str(&w, eq + 1);
		}
		jsonw_obj_end(&w);
		jsonw_key(&w, "additional_config");
		passthrough_config(&w);
		jsonw_obj_end(&w);
	} else {
		if (jsonw_mem_begin(&w, &mem))
			goto nomem;
		passthrough_config(&w);
		if (!(txt = jsonw_mem_end(&w, &mem)))
			goto nomem;
		printf("tt-run forwards only the variables matching env_passthrough; give it\n"
		       "  --additional-config '%s'\n"
		       "(merge the \"tt\" object with yours). These values are forwarded "
		       "(also usable as the rank binding's global_env):\n", txt);
		for (i = 0; i < n_names; i++)
			printf("  %s\n", names[i]);
		printf("The preload library and the capture file's directory must exist at these "
		       "paths on every host.\n");
	}
	rc = CLI_OK;
	goto out;
nomem:
	fprintf(stderr, "ttaudit passthrough: out of memory\n");
	rc = CLI_USAGE;
out:
	free(txt);
	free(names);
	return rc;
}
