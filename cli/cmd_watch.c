/*
 * cmd_watch.c - `ttaudit watch`: sources followed and replayed live, the
 * counts served as Prometheus metrics (watch/watch.h, watch/serve.h).
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "base/opt.h"
#include "base/outfile.h"
#include "watch/serve.h"
#include "watch/watch.h"

#define WATCH_DEFAULT_LISTEN "127.0.0.1:9478"

static const char *watch_arg_listen = WATCH_DEFAULT_LISTEN, *watch_arg_rules, *watch_arg_port_file;
static const char *watch_arg_out, *watch_arg_host;
static long long watch_arg_max_pos, watch_arg_poll_ms = 25;
static bool watch_arg_from_start, watch_arg_once;
static volatile sig_atomic_t watch_stop;

static void watch_on_signal(int sig)
{
	(void)sig;
	watch_stop = 1;
}

static const char *const watch_usage[] = {
	"watch [--listen HOST:PORT] [--rules LIST] [--max-pos N] [--from-start] [--host NAME] SOURCE...",
	"watch --once [-o FILE] [--rules LIST] [--max-pos N] [--host NAME] SOURCE...",
	NULL,
};

static const struct opt watch_opts[] = {
	OPT_STRING(0, "listen", &watch_arg_listen, "HOST:PORT",
		   "where /metrics and /health are served (default " WATCH_DEFAULT_LISTEN "; port 0 "
		   "picks a free one)"),
	OPT_STRING(0, "port-file", &watch_arg_port_file, "FILE", "write the port listened on to FILE"),
	OPT_STRING(0, "rules", &watch_arg_rules, "LIST",
		   "comma-separated rules, each a base rule or a+b (default the six base rules)"),
	OPT_INT(0, "max-pos", &watch_arg_max_pos, "N", 1, INT64_MAX,
		"positions >= N are garbage; wins over config.max_model_len"),
	OPT_BOOL(0, "from-start", &watch_arg_from_start,
		 "read files that exist already from their start (default: from their end, like tail -F)"),
	OPT_BOOL(0, "once", &watch_arg_once,
		 "read every source from its start to its end, print the exposition and exit "
		 "(cron, the node exporter's textfile collector)"),
	OPT_STRING('o', "output", &watch_arg_out, "FILE", "with --once: the exposition to FILE, written atomically"),
	OPT_STRING(0, "host", &watch_arg_host, "NAME", "the host label (default the host name)"),
	OPT_INT(0, "poll-ms", &watch_arg_poll_ms, "MS", 1, 10000,
		"how often a quiet source is looked at (default 25)"),
	OPT_END(),
};

const struct cmd_doc cmd_watch_doc = {
	.name = "watch",
	.summary = "count substitutions live from server logs and captures, served to Prometheus",
	.usage = watch_usage,
	.description = "Follows each SOURCE (a capture file, a server log, or '-' for standard input, "
		"e.g. journalctl -f -o cat -u vllm | ttaudit watch -) like tail -F: through rotation "
		"and truncation, waiting for a file that does not exist yet, from the end of a file "
		"that exists unless --from-start. Every line is replayed as it arrives with the same "
		"library as ttaudit replay (per rule, per server process), and the counts are served "
		"on /metrics in the Prometheus text format: ttaudit_merges_total, "
		"ttaudit_substitutions_total{rule,evidence}, ttaudit_taken_total{rule} and the rest "
		"(docs/watch.md), labelled by source, pid and host, never by request id. Counters "
		"only go up and start at 0 with the process. /health answers the scraper. One watch "
		"per serving host; Prometheus aggregates the fleet.",
	.opts = watch_opts,
	.exit_notes = NULL,
};

static int watch_write_once(struct watch *w)
{
	struct outfile of;
	struct status_info si;

	status_info_clear(&si);
	if (outfile_open(&of, watch_arg_out, &si)) {
		cli_report_status("watch", STATUS_IO, &si);
		return CLI_USAGE;
	}
	if (watch_write_metrics(w, of.f)) {
		outfile_abort(&of);
		return cli_usage_error("watch", "cannot write the exposition");
	}
	if (outfile_commit(&of, &si)) {
		cli_report_status("watch", STATUS_IO, &si);
		return CLI_USAGE;
	}
	return CLI_OK;
}

static int watch_port_file(unsigned port)
{
	struct outfile of;
	struct status_info si;

	status_info_clear(&si);
	if (outfile_open(&of, watch_arg_port_file, &si)) {
		cli_report_status("watch", STATUS_IO, &si);
		return -1;
	}
	fprintf(of.f, "%u\n", port);
	if (outfile_commit(&of, &si)) {
		cli_report_status("watch", STATUS_IO, &si);
		return -1;
	}
	return 0;
}

int cmd_watch(int argc, char **argv)
{
	struct rule rules[RULE_MAX_LIST];
	struct watch_opts o;
	struct watch *w = NULL;
	struct serve *sv = NULL;
	struct status_info si;
	struct sigaction sa;
	enum status st;
	int n, rc = CLI_OK;

	n = cli_parse(&cmd_watch_doc, argc, argv,
		      &(const struct cli_operands){ 1, CLI_ANY,
						    "no source given: a log or capture file, or - (see --help)", NULL },
		      &rc);
	if (n < 0)
		return rc;
	if (watch_arg_out && !watch_arg_once)
		return cli_usage_error("watch", "-o goes with --once (live, the exposition is on /metrics)");
	memset(&o, 0, sizeof(o));
	status_info_clear(&si);
	if (watch_arg_rules) {
		if (rule_list_parse(watch_arg_rules, rules, RULE_MAX_LIST, &o.n_rules, &si)) {
			cli_report_status("watch", STATUS_USAGE, &si);
			return CLI_USAGE;
		}
	} else {
		o.n_rules = rule_list_default(rules, RULE_MAX_LIST);
	}
	o.rules = rules;
	o.max_pos = watch_arg_max_pos;
	o.sources = (const char *const *)argv;
	o.n_sources = (size_t)n;
	o.from_start = watch_arg_from_start || watch_arg_once;
	o.host = watch_arg_host;
	o.poll_ms = (int)watch_arg_poll_ms;
	o.notes = stderr;
	if ((st = watch_new(&w, &o, &si))) {
		cli_report_status("watch", st, &si);
		return CLI_USAGE;
	}
	if (watch_arg_once) {
		size_t bad = watch_once(w);
		rc = watch_write_once(w);
		if (bad && rc == CLI_OK)
			rc = CLI_USAGE;
		goto out;
	}
	if ((st = serve_start(&sv, w, watch_arg_listen, &si))) {
		cli_report_status("watch", st, &si);
		rc = CLI_USAGE;
		goto out;
	}
	if (watch_arg_port_file && watch_port_file(serve_port(sv))) {
		rc = CLI_USAGE;
		goto out;
	}
	fprintf(stderr, "ttaudit watch: %d source%s, metrics on http://%.*s:%u/metrics\n", n,
		n == 1 ? "" : "s", (int)(strrchr(watch_arg_listen, ':') - watch_arg_listen), watch_arg_listen,
		serve_port(sv));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = watch_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	watch_run(w, &watch_stop);
out:
	serve_stop(sv);
	watch_free(w);
	return rc;
}
