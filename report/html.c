/*
 * html.c - the page of html.h: a verdict strip, the counterfactual timeline
 * (svg.h's model, drawn inline), the cost plots of an A/B, and tables, in
 * one HTML document that needs nothing but itself.
 */
#include "report/html.h"
#include "report/benchpage.h"
#include "record/record_read.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "analyzer/evidence.h"
#include "base/rate.h"
#include "analyzer/tally.h"

#define HTML_MAX_JSON (64u << 20)     /* ab-report.json read whole, at most */
#define HTML_MAX_PHASES 64
#define HTML_SUBSTS_SHOWN 60          /* residual substitutions listed; the rest counted */

/* Colours the browser test counts (tests/e2e/74-report-browser.sh). */
#define HTML_PASS "#b7e4b7"
#define HTML_FAIL "#f4b6b6"
#define HTML_OPEN "#ffd59e"           /* INCONCLUSIVE, WITHHELD, NOT SHOWN */
#define HTML_PLAIN "#cfd8e3"           /* a figure, no verdict (apart from the timeline's grey) */
#define HTML_BAND "#fff2b3"           /* the noise band */
#define HTML_POINT "#17becf"          /* a round's paired difference, treatment - control */
#define HTML_NOISE "#6a3d9a"          /* the negative control's */
#define HTML_INTERVAL "#8c564b"       /* the median's interval */

static const char html_css[] =
	"body{font-family:sans-serif;margin:16px 24px;color:#222;max-width:1000px}"
	"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}"
	"p.sub{color:#555;margin:0 0 12px;font-size:13px}"
	".strip{display:flex;flex-wrap:wrap;gap:6px}"
	".verdict{border-radius:4px;padding:6px 8px;min-width:130px;max-width:232px;font-size:12px}"
	".verdict .label{color:#444}.verdict .value{font-size:17px;font-weight:bold;margin:2px 0}"
	".verdict .detail{color:#333}"
	".pass{background:" HTML_PASS "}.fail{background:" HTML_FAIL "}.open{background:" HTML_OPEN "}"
	".plain{background:" HTML_PLAIN "}"
	"table{border-collapse:collapse;font-size:12px;margin:4px 0}"
	"td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}th{background:#f2f2f2}"
	".costs{display:flex;flex-wrap:wrap;gap:8px}"
	".note{font-size:12px;color:#444;max-width:960px}"
	"code{font-size:12px}";

static void html_text(FILE *f, const char *s)
{
	svg_escape(f, s ? s : "");
}

/* The class of a verdict word's box. */
static const char *html_class(const char *verdict)
{
	if (!verdict)
		return "plain";
	if (!strcmp(verdict, "PASS"))
		return "pass";
	if (!strcmp(verdict, "FAIL"))
		return "fail";
	if (!strcmp(verdict, "INCONCLUSIVE") || !strcmp(verdict, "WITHHELD") || !strcmp(verdict, "NOT SHOWN") ||
	    !strcmp(verdict, "not evaluable"))
		return "open";
	return "plain";
}

static void html_box(FILE *f, struct html_stats *st, const char *cls, const char *label, const char *value,
		     const char *detail)
{
	if (!st->verdicts)
		snprintf(st->headline, sizeof(st->headline), "%s", value);
	st->verdicts++;
	fprintf(f, "<div class=\"verdict %s\" title=\"", cls);
	html_text(f, detail);
	fputs("\"><div class=\"label\">", f);
	html_text(f, label);
	fputs("</div><div class=\"value\">", f);
	html_text(f, value);
	fputs("</div><div class=\"detail\">", f);
	html_text(f, detail);
	fputs("</div></div>\n", f);
}

/* A box of k of n: the value "k of n UNIT", the detail the rate as every report says it. */
static void html_rate_box(FILE *f, struct html_stats *st, const char *cls, const char *label, uint64_t k,
			  uint64_t n, const char *unit, double conf, const char *more)
{
	char v[96], d[320], r[128];

	snprintf(v, sizeof(v), "%" PRIu64 " of %" PRIu64, k, n);
	snprintf(d, sizeof(d), "%s %s%s%s", unit, rate_describe(r, sizeof(r), k, n, conf, 100, "%"),
		 more ? "; " : "", more ? more : "");
	html_box(f, st, cls, label, v, d);
}

static void html_head(FILE *f, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>", f);
	html_text(f, title);
	fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<h1>", html_css);
	html_text(f, title);
	fputs("</h1>\n", f);
}

static void html_foot(FILE *f)
{
	fprintf(f, "<p class=\"note\">Written by ttaudit %s (<code>ttaudit report html</code>). Intervals are "
		"two-sided Clopper-Pearson intervals of k of n; 0 of n is said as the rates it rules out. Hover "
		"a mark for its step, slot, request ids and evidence.</p>\n</body></html>\n", TTAUDIT_VERSION);
}

/* The residual substitutions of the timeline, listed. */
static void html_substs(FILE *f, const struct svg_tl *t, const char *what)
{
	size_t i, n = svg_tl_n_substs(t);

	fprintf(f, "<h2>%s: %" PRIu64 "</h2>\n", what, svg_tl_stats(t)->substs);
	if (!n) {
		fputs("<p class=\"note\">None.</p>\n", f);
		return;
	}
	fputs("<table class=\"substs\"><tr><th>step</th><th>slot</th><th>request</th><th>buffer written for</th>"
	      "<th>evidence</th><th>where</th></tr>\n", f);
	for (i = 0; i < n && i < HTML_SUBSTS_SHOWN; i++) {
		const struct svg_subst *x = svg_tl_subst(t, i);

		fprintf(f, "<tr class=\"subst-row\"><td>%" PRId64 "</td><td>%u</td><td>", x->step, x->slot);
		html_text(f, x->req[0] ? x->req : "?");
		fputs("</td><td>", f);
		html_text(f, x->buf_req[0] ? x->buf_req : "?");
		fputs("</td><td>", f);
		html_text(f, x->evidence);
		fputs("</td><td>", f);
		html_text(f, x->file);
		fprintf(f, ":%ld</td></tr>\n", x->line);
	}
	fputs("</table>\n", f);
	if (svg_tl_stats(t)->substs > HTML_SUBSTS_SHOWN)
		fprintf(f, "<p class=\"note\">... and %" PRIu64 " more (<code>ttaudit replay --explain STEP</code> "
			"walks one).</p>\n", svg_tl_stats(t)->substs - HTML_SUBSTS_SHOWN);
}

static void html_legend(FILE *f)
{
	fputs("<p class=\"note\">Each column is a merge event, each row a slot. <b>green</b> "
	      "taken from the device buffer and fresh; <b>olive</b> taken, but nothing on "
	      "the event says whether it was stale; <b>red</b> a substitution: taken and "
	      "stale (a triangle above marks its merge); <b>blue</b> prevented: a stale "
	      "bare match the decisions refused; <b>orange</b> forgone: a fresh bare match "
	      "refused (the guard's cost); <b>purple</b> refused, staleness unknown; grey "
	      "active, no match. The strip above bins every merge, each row scaled to its largest bin; dashed "
	      "lines mark where a file, a run or a process begins.</p>\n", f);
}

/* The merge rate of the decisions shown against bare's, on the same merges. */
static void html_rate_verdict(FILE *f, struct html_stats *st, const struct svg_timeline_stats *ts,
			      const char *rule, double conf)
{
	double alpha = (1 - conf) / 2, p;
	char d[512], a[128], b[128];
	uint64_t k = ts->merges_subst, kb = ts->bare_merges_subst, n = ts->merges, need;
	bool capped;
	const char *v;

	p = rate_fisher(kb, n, k, n);
	if (k) {
		v = "FAIL";
		snprintf(d, sizeof(d), "%s made substitutions in %" PRIu64 " of %" PRIu64 " merges: %s", rule, k, n,
			 rate_describe(a, sizeof(a), k, n, conf, 100, "%"));
	} else if (!kb) {
		v = "NOT SHOWN";
		snprintf(d, sizeof(d), "bare made no substitution in %" PRIu64 " merges: this audit cannot show what "
			 "%s prevents", n, rule);
	} else if (p < 1 - conf) {
		v = "PASS";
		snprintf(d, sizeof(d), "0 of %" PRIu64 " merges %s, against bare's %" PRIu64 " (%s): Fisher's exact "
			 "test p = %.3g", n, rate_describe(a, sizeof(a), 0, n, conf, 100, "%"), kb,
			 rate_describe(b, sizeof(b), kb, n, conf, 100, "%"), p);
	} else {
		v = "INCONCLUSIVE";
		need = rate_n_to_detect((double)kb / (double)n, 0, alpha, 0.8, 100000000, &capped);
		snprintf(d, sizeof(d), "0 of %" PRIu64 " merges against bare's %" PRIu64 ": Fisher's exact test "
			 "p = %.3g, not under %g; about %" PRIu64 " merges would tell them apart", n, kb, p, 1 - conf,
			 need);
	}
	html_box(f, st, html_class(v), "residual rate, merges", v, d);
}

static enum status html_audit(FILE *f, const struct html_opts *o, struct html_stats *st, struct status_info *si)
{
	struct svg_timeline_opts to;
	struct svg_tl *t = NULL;
	const struct svg_timeline_stats *ts;
	double conf = o->confidence > 0 && o->confidence < 1 ? o->confidence : 0.95;
	char title[1200], d[512], v[64];
	enum status rs;

	memset(&to, 0, sizeof(to));
	to.rule = o->rule;
	to.from_step = o->from_step;
	to.to_step = o->to_step;
	to.progress = o->progress;
	to.title = o->input;
	rs = svg_tl_new(&t, &to, si);
	if (rs)
		return rs;
	rs = svg_tl_add(t, o->input, NULL, NULL, 0, si);
	if (rs)
		goto out;
	st->mode = "audit";
	st->files = 1;
	ts = svg_tl_stats(t);
	st->timeline = *ts;
	snprintf(title, sizeof(title), "ttaudit report: %s", o->input);
	html_head(f, title);
	fprintf(f, "<p class=\"sub\">%s</p>\n<div class=\"strip\">\n",
		o->rule ? "the candidate guard's decisions replayed on every merge of the audit" :
		"the decisions the audit records (bare where an event records none)");
	if (o->rule) {
		const struct tally *tl = svg_tl_tally(t);
		const struct tally_counts *rc = tally_counts(tl, svg_tl_tally_rule(t)), *bc = tally_counts(tl, 0);
		const char *val = tally_not_evaluable(tl, svg_tl_tally_rule(t)) ? "not evaluable" :
				  rc->substitutions ? "FAIL" : "PASS";

		snprintf(d, sizeof(d), "%s", !strcmp(val, "not evaluable") ? "the rule needs fields this audit never "
			 "records: nothing it would do can be judged" : rc->substitutions ?
			 "substitutions let through (listed below)" : "no substitution let through");
		snprintf(v, sizeof(v), "validate --rule %s", o->rule);
		html_box(f, st, html_class(val), v, val, d);
		if (strcmp(val, "not evaluable"))
			html_rate_verdict(f, st, ts, o->rule, conf);
		snprintf(v, sizeof(v), "%" PRIu64, bc->substitutions);
		snprintf(d, sizeof(d), "by evidence: request %" PRIu64 " / stamp %" PRIu64 " / lifetime %" PRIu64
			 ", in %" PRIu64 " of %" PRIu64 " merges", bc->subst_by[EVIDENCE_REQUEST],
			 bc->subst_by[EVIDENCE_STAMP], bc->subst_by[EVIDENCE_LIFETIME], ts->bare_merges_subst, ts->merges);
		html_box(f, st, "plain", "substitutions, unguarded (bare)", v, d);
		snprintf(v, sizeof(v), "%" PRIu64, rc->substitutions);
		snprintf(d, sizeof(d), "by evidence: request %" PRIu64 " / stamp %" PRIu64 " / lifetime %" PRIu64
			 "; %" PRIu64 " taken with staleness unknown", rc->subst_by[EVIDENCE_REQUEST],
			 rc->subst_by[EVIDENCE_STAMP], rc->subst_by[EVIDENCE_LIFETIME], rc->unverified);
		html_box(f, st, rc->substitutions ? "fail" : "plain", "residual substitutions", v, d);
		snprintf(v, sizeof(v), "%" PRIu64, rc->prevented);
		html_box(f, st, "plain", "prevented", v, "stale bare matches the guard refused");
		html_rate_box(f, st, "plain", "forgone", rc->forgone, rc->bare_taken, "fresh bare takes refused:", conf,
			      NULL);
		html_rate_box(f, st, "plain", "fired", rc->fired, rc->merges, "merges where the guard refused a match:",
			      conf, NULL);
	} else {
		html_box(f, st, "plain", "decisions", "recorded", "the audit's own `taken`; --rule R replays a "
			 "candidate guard instead");
		html_rate_box(f, st, ts->substs ? "fail" : "plain", "merges with a substitution", ts->merges_subst,
			      ts->merges, "", conf, NULL);
		snprintf(v, sizeof(v), "%" PRIu64 " / %" PRIu64, ts->prevented, ts->forgone);
		html_box(f, st, "plain", "prevented / forgone", v, "bare matches the running code refused, stale / fresh");
	}
	snprintf(v, sizeof(v), "%" PRIu64 " merges", ts->merges);
	snprintf(d, sizeof(d), "1 file, %u slots, %" PRIu64 " malformed lines%s", ts->slots, ts->malformed,
		 ts->merges > ts->drawn ? "; the timeline draws the first merges, the strip all" : "");
	html_box(f, st, "plain", "corpus", v, d);
	fputs("</div>\n", f);
	fprintf(f, "<h2>%s</h2>\n", o->rule ? "The counterfactual timeline" : "The timeline");
	svg_tl_draw(t, f, false);
	html_legend(f);
	html_substs(f, t, o->rule ? "Residual substitutions" : "Substitutions");
	html_foot(f);
out:
	svg_tl_free(t);
	return rs;
}

/* --- the A/B page ------------------------------------------------------------ */

static double html_num(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

static const char *html_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const cJSON *html_obj(const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;

	return cJSON_IsObject(v) ? v : NULL;
}

/* DIR/basename(p): the A/B's files where the directory is now. */
static void html_in_dir(char *out, size_t n, const char *dir, const char *p)
{
	const char *b = p ? strrchr(p, '/') : NULL;

	snprintf(out, n, "%s/%s", dir, b ? b + 1 : p ? p : "");
}

static enum status html_read_all(const char *path, char **out, struct status_info *si)
{
	FILE *f = fopen(path, "re");
	size_t n = 0, cap = 0, k;
	char *buf = NULL;

	*out = NULL;
	if (!f)
		return status_set_at(si, STATUS_IO, path, 0, 0, "cannot open: %s", strerror(errno));
	for (;;) {
		if (n > HTML_MAX_JSON) {
			free(buf);
			fclose(f);
			return status_set_at(si, STATUS_LIMIT, path, 0, 0, "larger than %u MiB", HTML_MAX_JSON >> 20);
		}
		if (ALLOC_GROW(buf, n + 4096 + 1, cap) < 0) {
			free(buf);
			fclose(f);
			return status_set(si, STATUS_NOMEM, "out of memory");
		}
		k = fread(buf + n, 1, 4096, f);
		n += k;
		if (k < 4096)
			break;
	}
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return status_set_at(si, STATUS_IO, path, 0, 0, "read failed");
	}
	fclose(f);
	buf[n] = '\0';
	*out = buf;
	return STATUS_OK;
}

/*
 * The runs of a boot's records as phases of its capture: "reference r1",
 * "correctness r1". Read through the format's reader (record/record_read.h): a
 * malformed record line or a records file that cannot be read fails the
 * page with file:line, rather than drawing it without those boundaries.
 */
static enum status html_phases(const char *path, unsigned round, struct svg_phase *ph, char labels[][48],
			       size_t max, size_t *n_out, struct status_info *si)
{
	struct record_reader *rd = NULL;
	struct record_in rec;
	enum status rs;
	size_t n = 0;

	*n_out = 0;
	rs = record_read_open(&rd, path, si);
	if (rs)
		return rs;
	while ((rs = record_read_next(rd, &rec, si)) == STATUS_OK) {
		if (rec.kind != RECORD_KIND_RUN || !rec.phase || !(rec.mono_start > 0) || n >= max)
			continue;
		snprintf(labels[n], 48, "%s r%u", rec.phase, round + 1);
		ph[n].label = labels[n];
		ph[n].mono_start = rec.mono_start;
		n++;
	}
	record_read_close(rd);
	if (rs != STATUS_EOF)
		return rs;
	*n_out = n;
	return STATUS_OK;
}

/* One cost plot: the paired differences of every round, the noise band, the interval. */
static void html_cost_plot(FILE *f, struct html_stats *st, const cJSON *root, const char *fig, const char *key,
			   const char *says)
{
	const cJSON *roles = html_obj(root, "roles");
	const cJSON *ct = html_obj(html_obj(roles, "control"), "rounds");
	const cJSON *tr = html_obj(html_obj(roles, "treatment"), "rounds");
	const cJSON *ng = html_obj(html_obj(roles, "negative-control"), "rounds");
	const cJSON *cost = cJSON_GetObjectItemCaseSensitive(root, "cost"), *c = NULL, *x;
	const cJSON *a = ct ? cJSON_GetObjectItemCaseSensitive(ct, key) : NULL;
	const cJSON *b = tr ? cJSON_GetObjectItemCaseSensitive(tr, key) : NULL;
	const cJSON *e = ng ? cJSON_GetObjectItemCaseSensitive(ng, key) : NULL;
	double floor = html_num(html_obj(root, "noise_floor"), fig, NAN), d[2][64], ymax = 0.01;
	int w = 470, h = 230, x0 = 58, x1 = w - 90, y0 = 30, y1 = h - 36, n[2] = { 0, 0 }, i, k, nr;
	bool published;

	cJSON_ArrayForEach(x, cost)
		if (html_str(x, "figure") && !strcmp(html_str(x, "figure"), fig))
			c = x;
	published = c != NULL;
	nr = cJSON_GetArraySize(a);
	for (k = 0; k < 2; k++) {
		const cJSON *y = k ? e : b;

		for (i = 0; i < nr && i < 64; i++) {
			double base = cJSON_IsNumber(cJSON_GetArrayItem(a, i)) ? cJSON_GetArrayItem(a, i)->valuedouble : NAN;
			const cJSON *v = cJSON_GetArrayItem(y, i);

			d[k][i] = cJSON_IsNumber(v) && base > 0 ? (v->valuedouble - base) / base : NAN;
			if (isfinite(d[k][i]) && fabs(d[k][i]) > ymax)
				ymax = fabs(d[k][i]);
			n[k] += isfinite(d[k][i]);
		}
	}
	if (isfinite(floor) && floor > ymax)
		ymax = floor;
	if (published && fabs(html_num(c, "lo", 0)) > ymax)
		ymax = fabs(html_num(c, "lo", 0));
	if (published && fabs(html_num(c, "hi", 0)) > ymax)
		ymax = fabs(html_num(c, "hi", 0));
	ymax *= 1.15;
#define HTML_Y(v) ((y0 + y1) / 2.0 - (v) / ymax * (y1 - y0) / 2.0)
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"cost\" data-figure=\"%s\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n<title>%s: "
		"treatment - control per round</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
		"fill=\"white\" stroke=\"#ccc\"/>\n<text x=\"8\" y=\"17\" font-size=\"13\">%s, (treatment - control) "
		"/ control</text>\n", fig, w, h, w, h, says, w, h, says);
	if (isfinite(floor))
		fprintf(f, "<rect class=\"noise-band\" x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"%s\">"
			"<title>noise floor: the largest |A' - A| over rounds, %.2f%%</title></rect>\n", x0,
			HTML_Y(floor), x1 - x0, HTML_Y(-floor) - HTML_Y(floor), HTML_BAND, 100 * floor);
	fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#999\"/>\n", x0, HTML_Y(0), x1, HTML_Y(0));
	for (k = -1; k <= 1; k++)
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%+.1f%%</text>\n", x0 - 4, HTML_Y(k * ymax / 1.15) + 4,
			100 * k * ymax / 1.15);
	for (i = 0; i < nr && i < 64; i++) {
		double x = x0 + (x1 - x0) * (i + 0.5) / nr;

		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">round %d</text>\n", x, h - 20, i + 1);
		for (k = 1; k >= 0; k--) {
			if (!isfinite(d[k][i]))
				continue;
			fprintf(f, "<circle class=\"%s\" data-round=\"%d\" data-value=\"%g\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" "
				"fill=\"%s\"><title>round %d: %s - control %+.2f%%</title></circle>\n",
				k ? "noise-point" : "cost-point", i + 1, d[k][i], x + (k ? 8 : -8), HTML_Y(d[k][i]),
				k ? 4 : 6, k ? HTML_NOISE : HTML_POINT, i + 1, k ? "negative control" : "treatment",
				100 * d[k][i]);
			st->cost_points++;
		}
	}
	if (published && isfinite(html_num(c, "lo", NAN)) && isfinite(html_num(c, "hi", NAN))) {
		double lo = html_num(c, "lo", 0), hi = html_num(c, "hi", 0), md = html_num(c, "delta", 0);
		double cov = html_num(c, "coverage", 0);
		int xm = x1 + 40;

		fprintf(f, "<rect class=\"cost-interval\" x=\"%d\" y=\"%.1f\" width=\"10\" height=\"%.1f\" fill=\"%s\">"
			"<title>median %+.2f%%, interval %+.2f%% to %+.2f%% (%g%% coverage): %s</title></rect>\n",
			xm - 5, HTML_Y(hi), HTML_Y(lo) - HTML_Y(hi) < 2 ? 2 : HTML_Y(lo) - HTML_Y(hi), HTML_INTERVAL,
			100 * md, 100 * lo, 100 * hi, 100 * cov, html_str(c, "verdict") ? html_str(c, "verdict") : "");
		fprintf(f, "<line class=\"cost-median\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#000\" "
			"stroke-width=\"2\"/>\n<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">median</text>\n"
			"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%g%% CI</text>\n", xm - 9, HTML_Y(md), xm + 9,
			HTML_Y(md), xm, y0 - 2, xm, h - 20, 100 * cov);
		fprintf(f, "<text x=\"8\" y=\"%d\">%+.2f%% (%+.2f%% to %+.2f%%): ", h - 5, 100 * md, 100 * lo, 100 * hi);
		html_text(f, html_str(c, "verdict"));
		fputs("</text>\n", f);
		st->cost_intervals++;
	} else {
		fprintf(f, "<text x=\"8\" y=\"%d\">%s</text>\n", h - 5, published ? "WITHHELD: one round has no interval" :
			"WITHHELD: no interval is published (see the cost verdict)");
	}
#undef HTML_Y
	fputs("</svg>\n", f);
}

/* A role's rate object "k of n" into a box. */
static void html_role_rate(FILE *f, struct html_stats *st, const char *cls, const char *label, const cJSON *rate,
			   const char *unit, double conf, const char *more)
{
	if (!rate)
		return;
	html_rate_box(f, st, cls, label, (uint64_t)html_num(rate, "k", 0), (uint64_t)html_num(rate, "n", 0), unit,
		      conf, more);
}

static enum status html_ab(FILE *f, const struct html_opts *o, struct html_stats *st, struct status_info *si)
{
	static const char *const figs[][3] = {
		{ "makespan", "makespan_s", "makespan" }, { "ttft_p50", "ttft_p50_s", "TTFT p50" },
		{ "itl_p50", "itl_p50_s", "ITL p50" }, { "tok_s", "output_tok_s", "output tokens/s" },
	};
	char path[4096], title[1400], d[1024], v[96], labels[HTML_MAX_PHASES][48];
	struct svg_phase ph[HTML_MAX_PHASES];
	struct svg_timeline_opts to;
	struct svg_tl *t = NULL;
	const cJSON *roles, *tr, *boots, *b, *r;
	const char *rule, *gv, *cv;
	char *text = NULL;
	cJSON *root = NULL;
	double conf;
	enum status rs;
	size_t k;

	snprintf(path, sizeof(path), "%s/ab-report.json", o->input);
	rs = html_read_all(path, &text, si);
	if (rs)
		return rs;
	root = cJSON_Parse(text);
	free(text);
	if (!root || !cJSON_IsObject(root) || !html_str(root, "guard_verdict")) {
		cJSON_Delete(root);
		return status_set_at(si, STATUS_PARSE, path, 0, 0, "not the JSON report of a finished A/B");
	}
	conf = html_num(root, "confidence", 0.95);
	roles = html_obj(root, "roles");
	tr = html_obj(roles, "treatment");
	rule = o->rule ? o->rule : html_str(root, "treatment");
	memset(&to, 0, sizeof(to));
	to.rule = rule;
	to.from_step = o->from_step;
	to.to_step = o->to_step;
	to.progress = o->progress;
	to.title = "the control's own audit";
	rs = svg_tl_new(&t, &to, si);
	if (rs) {
		/* a treatment arm that is no rule name cannot be replayed: the recorded decisions */
		if (o->rule)
			goto out;
		to.rule = NULL;
		rule = NULL;
		rs = svg_tl_new(&t, &to, si);
		if (rs)
			goto out;
	}
	boots = cJSON_GetObjectItemCaseSensitive(root, "boots");
	cJSON_ArrayForEach(b, boots) {
		const char *role = html_str(b, "role");
		unsigned round = (unsigned)html_num(b, "round", 0);
		size_t n_ph;

		if (!role || strcmp(role, "control"))
			continue;
		html_in_dir(path, sizeof(path), o->input, html_str(b, "records"));
		rs = html_phases(path, round, ph, labels, HTML_MAX_PHASES, &n_ph, si);
		if (rs)
			goto out;
		html_in_dir(path, sizeof(path), o->input, html_str(b, "capture"));
		snprintf(v, sizeof(v), "control r%u", round + 1);
		rs = svg_tl_add(t, path, v, ph, n_ph, si);
		if (rs)
			goto out;
		st->files++;
	}
	st->mode = "ab";
	st->timeline = *svg_tl_stats(t);
	snprintf(title, sizeof(title), "A/B: %s (control) vs %s (treatment)", html_str(root, "control"),
		 html_str(root, "treatment"));
	html_head(f, title);
	fprintf(f, "<p class=\"sub\">%s, %d round(s); rates with %g%% Clopper-Pearson intervals</p>\n",
		o->input, (int)html_num(root, "rounds", 0), 100 * conf);
	fputs("<div class=\"strip\">\n", f);
	gv = html_str(root, "guard_verdict");
	html_box(f, st, html_class(gv), "guard effect", gv, html_str(root, "guard_why"));
	cv = html_str(root, "cost_verdict");
	snprintf(d, sizeof(d), "%s", html_str(root, "cost_reason") ? html_str(root, "cost_reason") :
		 "each figure's median paired difference with its interval, below");
	html_box(f, st, html_class(!strcmp(cv ? cv : "", "published") ? "plain" : cv), "cost", cv ? cv : "?", d);
	html_role_rate(f, st, "plain", "control arm: merges with a substitution",
		       html_obj(html_obj(root, "control_arm"), "substitution_rate"), "control and negative control:",
		       conf, NULL);
	if (tr) {
		const cJSON *ev = html_obj(tr, "substitutions_by_evidence");
		const cJSON *cmp = html_obj(root, "treatment_against_control");

		snprintf(d, sizeof(d), "%.0f substitutions (request %.0f / stamp %.0f / lifetime %.0f); Fisher's exact "
			 "test against the control arm p = %.3g", html_num(tr, "substitutions", 0),
			 html_num(ev, "request", 0), html_num(ev, "stamp", 0), html_num(ev, "lifetime", 0),
			 html_num(cmp, "substitution_fisher_p", NAN));
		html_role_rate(f, st, html_num(tr, "substitutions", 0) > 0 ? "fail" : "plain",
			       "treatment: merges with a substitution", html_obj(tr, "substitution_rate"), "", conf, d);
		snprintf(v, sizeof(v), "%.0f", html_num(tr, "prevented", 0));
		html_box(f, st, "plain", "prevented", v, "stale bare matches the treatment's guard refused");
		html_role_rate(f, st, "plain", "forgone", html_obj(tr, "forgone_rate"), "of bare takes:", conf, NULL);
		html_role_rate(f, st, "plain", "fired", html_obj(tr, "fired_rate"), "of merges:", conf, NULL);
		html_role_rate(f, st, html_num(tr, "failing", 0) > 0 ? "fail" : "plain", "treatment: failing requests",
			       html_obj(tr, "failing_rate"), "", conf, NULL);
	}
	html_role_rate(f, st, "plain", "control arm: failing requests",
		       html_obj(html_obj(root, "control_arm"), "failing_rate"), "", conf, NULL);
	if (rule) {
		snprintf(v, sizeof(v), "%" PRIu64, st->timeline.substs);
		snprintf(d, sizeof(d), "%s replayed on the control's %" PRIu64 " merges lets %" PRIu64 " stale token(s) "
			 "through, in %" PRIu64 " merge(s); prevented %" PRIu64 ", forgone %" PRIu64, rule,
			 st->timeline.merges, st->timeline.substs, st->timeline.merges_subst, st->timeline.prevented,
			 st->timeline.forgone);
		html_box(f, st, st->timeline.substs ? "fail" : "plain", "residual, counterfactual", v, d);
	}
	fputs("</div>\n", f);
	if (rule)
		fprintf(f, "<h2>The counterfactual timeline: %s replayed on the control's own audit</h2>\n", rule);
	else
		fputs("<h2>The control's timeline (its recorded decisions: the treatment is no rule to replay)</h2>\n", f);
	svg_tl_draw(t, f, false);
	html_legend(f);
	html_substs(f, t, rule ? "Residual substitutions on the control's audit" : "Substitutions");
	fputs("<h2>Cost</h2>\n<p class=\"note\">Per round, the treatment against the control booted in the same "
	      "round (large cyan points) and the negative control against it "
	      "(small purple points); the yellow band is the noise floor, the largest "
	      "difference between the control and the negative control; the bar on the right is the median "
	      "paired difference and its order-statistic interval, with that interval's real coverage.</p>\n"
	      "<div class=\"costs\">\n", f);
	for (k = 0; k < sizeof(figs) / sizeof(figs[0]); k++)
		html_cost_plot(f, st, root, figs[k][0], figs[k][1], figs[k][2]);
	fputs("</div>\n", f);
	fputs("<h2>Correctness</h2>\n<table><tr><th>role</th><th>arm</th><th>boots</th><th>failing requests</th>"
	      "<th>merges with a substitution</th><th>arm verdict</th></tr>\n", f);
	cJSON_ArrayForEach(r, roles) {
		const cJSON *fr = html_obj(r, "failing_rate"), *sr = html_obj(r, "substitution_rate");
		char x[128], y[128];

		fputs("<tr><td>", f);
		html_text(f, r->string);
		fputs("</td><td>", f);
		html_text(f, html_str(r, "arm"));
		fprintf(f, "</td><td>%.0f</td><td>%.0f of %.0f: %s</td><td>%.0f of %.0f: %s</td><td>",
			html_num(r, "boots", 0), html_num(fr, "k", 0), html_num(fr, "n", 0),
			rate_describe(x, sizeof(x), (uint64_t)html_num(fr, "k", 0), (uint64_t)html_num(fr, "n", 0), conf,
				      100, "%"),
			html_num(sr, "k", 0), html_num(sr, "n", 0),
			rate_describe(y, sizeof(y), (uint64_t)html_num(sr, "k", 0), (uint64_t)html_num(sr, "n", 0), conf,
				      100, "%"));
		html_text(f, html_str(r, "arm_verdict"));
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
	html_foot(f);
out:
	svg_tl_free(t);
	cJSON_Delete(root);
	return rs;
}

enum status html_report(FILE *f, const struct html_opts *o, struct html_stats *st, struct status_info *si)
{
	struct stat sb;

	memset(st, 0, sizeof(*st));
	if (!o->input)
		return status_set(si, STATUS_USAGE, "no input");
	if (stat(o->input, &sb))
		return status_set_at(si, STATUS_IO, o->input, 0, 0, "cannot open: %s", strerror(errno));
	if (S_ISDIR(sb.st_mode))
		return html_ab(f, o, st, si);
	if (benchpage_is_bench(o->input))
		return benchpage_write(f, o->input, st, si);
	return html_audit(f, o, st, si);
}
