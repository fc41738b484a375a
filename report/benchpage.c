/*
 * benchpage.c - the page of a bench record file (benchpage.h): read once
 * through the run records' reader (record/record_read.h), drawn as inline
 * SVG with a <title> on every mark.
 */
#include "report/benchpage.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/rate.h"
#include "record/record_read.h"
#include "report/svg.h"

#define BP_MAX_LEAKS 4096        /* leaks drawn in the matrix */
#define BP_MAX_REQS 600          /* requests drawn per churn run */
#define BP_MAX_RUNS 8            /* churn runs drawn */
#define BP_W 900

static const char bp_css[] =
	"body{font-family:sans-serif;margin:16px 24px;color:#222;max-width:1000px}"
	"h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:22px 0 6px}"
	".strip{display:flex;flex-wrap:wrap;gap:6px}"
	".verdict{border-radius:4px;padding:6px 8px;min-width:130px;max-width:232px;font-size:12px}"
	".verdict .value{font-size:17px;font-weight:bold;margin:2px 0}"
	".pass{background:#b8e0b8}.fail{background:#f4b6b6}.open{background:#f7dc9c}.plain{background:#cfd8e3}"
	".note{font-size:12px;color:#444;max-width:960px}";

struct bp_leak {
	double donor, victim;        /* sent marker indexes */
	bool finished, aborted;
	char victim_id[96], donor_id[96];
	double at;
};

struct bp_req {
	double t0, t1;               /* from its run's start */
	unsigned seq;
	bool sync, abort, over, leaked, prefix, pressure, again;
	char id[96];
};

struct bp_run {
	char run_id[128];
	double mono_start;
	struct bp_req *req;
	size_t n, cap;
};

struct bp {
	cJSON *summary;              /* the last summary record (owned) */
	struct bp_leak *leaks;
	size_t n_leaks, leaks_total;
	struct bp_run runs[BP_MAX_RUNS];
	size_t n_runs;
	bool churn;
};

bool benchpage_is_bench(const char *path)
{
	struct record_reader *rd = NULL;
	struct record_in rec;
	bool yes = false;

	if (record_read_open(&rd, path, NULL))
		return false;
	if (!record_read_next(rd, &rec, NULL))
		yes = rec.kind == RECORD_KIND_RUN;
	record_read_close(rd);
	return yes;
}

static double bp_num(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* The member named k when it is an object (NULL for any other type). */
static const cJSON *bp_obj(const cJSON *o, const char *k)
{
	const cJSON *v;

	if (!o)
		return NULL;
	cJSON_ArrayForEach(v, o)
		if (cJSON_IsObject(v) && v->string && !strcmp(v->string, k))
			return v;
	return NULL;
}

static const char *bp_str(const cJSON *o, const char *k)
{
	const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;

	return cJSON_IsString(v) ? v->valuestring : "";
}

static bool bp_has(const cJSON *arr, const char *s)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, arr)
		if (cJSON_IsString(e) && !strcmp(e->valuestring, s))
			return true;
	return false;
}

static void bp_request(struct bp *b, const cJSON *o)
{
	const cJSON *can = bp_obj(o, "canary"), *leak = bp_obj(can, "leak"), *ch = bp_obj(o, "churn");
	const char *run_id = bp_str(o, "run_id");
	struct bp_run *r = NULL;
	struct bp_req *q;
	size_t i;

	if (leak) {
		b->leaks_total++;
		if (b->n_leaks < BP_MAX_LEAKS) {
			struct bp_leak *l = &b->leaks[b->n_leaks++];

			l->victim = bp_num(can, "marker_index", 0);
			l->donor = bp_num(leak, "donor_marker", 0);
			l->finished = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(leak, "donor_finished"));
			l->aborted = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(leak, "donor_aborted"));
			l->at = bp_num(leak, "at", 0);
			snprintf(l->victim_id, sizeof(l->victim_id), "%s", bp_str(o, "request_id"));
			snprintf(l->donor_id, sizeof(l->donor_id), "%s", bp_str(leak, "donor_id"));
		}
	}
	if (!ch)
		return;
	b->churn = true;
	for (i = 0; i < b->n_runs; i++)
		if (!strcmp(b->runs[i].run_id, run_id))
			r = &b->runs[i];
	if (!r || r->n >= BP_MAX_REQS)
		return;
	if (ALLOC_GROW_MAX(r->req, r->n + 1, r->cap, (size_t)BP_MAX_REQS) < 0)
		return;
	q = &r->req[r->n++];
	memset(q, 0, sizeof(*q));
	q->t0 = bp_num(o, "t_sent", bp_num(o, "t_launch", r->mono_start)) - r->mono_start;
	q->t1 = q->t0 + bp_num(o, "e2e_s", 0);
	q->seq = (unsigned)bp_num(o, "launch_seq", 0);
	q->sync = bp_has(cJSON_GetObjectItemCaseSensitive(ch, "transitions"), "sync-path");
	q->abort = bp_has(cJSON_GetObjectItemCaseSensitive(ch, "transitions"), "client-abort");
	q->over = bp_has(cJSON_GetObjectItemCaseSensitive(ch, "transitions"), "over-max-num-seqs");
	q->prefix = bp_has(cJSON_GetObjectItemCaseSensitive(ch, "transitions"), "prefix-first");
	q->pressure = bp_has(cJSON_GetObjectItemCaseSensitive(ch, "transitions"), "cache-pressure");
	q->again = bp_has(cJSON_GetObjectItemCaseSensitive(ch, "transitions"), "prefix-again");
	q->leaked = leak != NULL;
	snprintf(q->id, sizeof(q->id), "%s", bp_str(o, "request_id"));
}

static enum status bp_read(struct bp *b, const char *path, struct status_info *si)
{
	struct record_reader *rd = NULL;
	struct record_in rec;
	const cJSON *o;
	enum status st;

	b->leaks = calloc(BP_MAX_LEAKS, sizeof(*b->leaks));
	if (!b->leaks)
		return status_set(si, STATUS_NOMEM, "out of memory");
	st = record_read_open(&rd, path, si);
	if (st)
		return st;
	for (;;) {
		st = record_read_next(rd, &rec, si);
		if (st == STATUS_EOF) {
			st = STATUS_OK;
			break;
		}
		if (st)
			break;
		o = record_read_object(rd);
		if (rec.kind == RECORD_KIND_RUN) {
			const cJSON *w = bp_obj(o, "workload");

			if (w && !strcmp(bp_str(w, "kind"), "churn") && b->n_runs < BP_MAX_RUNS) {
				struct bp_run *r = &b->runs[b->n_runs++];

				snprintf(r->run_id, sizeof(r->run_id), "%s", rec.run_id ? rec.run_id : "");
				r->mono_start = isnan(rec.mono_start) ? 0 : rec.mono_start;
			}
		} else if (rec.kind == RECORD_KIND_REQUEST) {
			bp_request(b, o);
		} else if (rec.kind_name && !strcmp(rec.kind_name, "summary")) {
			cJSON_Delete(b->summary);
			b->summary = cJSON_Duplicate(o, 1);
		}
	}
	record_read_close(rd);
	return st;
}

static void bp_box(FILE *f, struct html_stats *st, const char *verdict, const char *label, const char *detail)
{
	const char *cls = !strcmp(verdict, "PASS") ? "pass" : !strcmp(verdict, "FAIL") ? "fail" :
			  !strcmp(verdict, "INCONCLUSIVE") ? "open" : "plain";

	if (!st->verdicts)
		snprintf(st->headline, sizeof(st->headline), "%s", verdict);
	st->verdicts++;
	fprintf(f, "<div class=\"verdict %s\"><div>", cls);
	svg_escape(f, label);
	fputs("</div><div class=\"value\">", f);
	svg_escape(f, verdict);
	fputs("</div><div>", f);
	svg_escape(f, detail);
	fputs("</div></div>\n", f);
}

/* A box of counts that is no verdict: plain, and not the page's headline. */
static void bp_label_box(FILE *f, const char *value, const char *label, const char *detail)
{
	fputs("<div class=\"verdict plain\"><div>", f);
	svg_escape(f, label);
	fputs("</div><div class=\"value\">", f);
	svg_escape(f, value);
	fputs("</div><div>", f);
	svg_escape(f, detail);
	fputs("</div></div>\n", f);
}

/* Accuracy against concurrency, per server, with the intervals (the control dashed). */
static void bp_curve(FILE *f, struct html_stats *st, const cJSON *sum)
{
	static const char *const colors[] = { "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b" };
	const cJSON *cells = cJSON_GetObjectItemCaseSensitive(sum, "cells"), *c;
	double levels[64];
	size_t n_levels = 0, k, arm, n_arms = 0;
	int H = 260, L = 60, B = 40, T = 20;

	cJSON_ArrayForEach(c, cells) {
		double lv = bp_num(c, "concurrency", bp_num(c, "rate", bp_num(c, "batch", 0)));

		if (!bp_obj(c, "accuracy"))
			continue;
		for (k = 0; k < n_levels && levels[k] != lv; k++)
			;
		if (k == n_levels && n_levels < 64)
			levels[n_levels++] = lv;
		if ((size_t)bp_num(c, "arm_index", 0) + 1 > n_arms)
			n_arms = (size_t)bp_num(c, "arm_index", 0) + 1;
	}
	if (!n_levels)
		return;
	fputs("<h2>Accuracy against concurrency</h2>\n", f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" class=\"accuracy-curve\">\n",
		BP_W, H);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n", L, H - B, BP_W - 20, H - B);
	for (k = 0; k <= 4; k++) {
		int y = H - B - (int)((H - B - T) * k / 4);

		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#eee\"/>"
			"<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"end\">%zu%%</text>\n", L, y, BP_W - 20, y,
			L - 4, y + 4, k * 25);
	}
	for (k = 0; k < n_levels; k++)
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">%g</text>\n",
			L + (int)((BP_W - 20 - L) * (k + 0.5) / n_levels), H - B + 16, levels[k]);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">level (requests in flight, "
		"or rate)</text>\n", (L + BP_W) / 2, H - 6);
	for (arm = 0; arm < n_arms; arm++) {
		const char *col = colors[arm % 5];
		double px = -1, py = -1;
		bool control = false;

		cJSON_ArrayForEach(c, cells) {
			const cJSON *a = bp_obj(c, "accuracy"), *r = bp_obj(a, "rate");
			double lv = bp_num(c, "concurrency", bp_num(c, "rate", bp_num(c, "batch", 0)));
			double x, y, lo, hi;

			if (!a || (size_t)bp_num(c, "arm_index", 0) != arm || !bp_num(r, "n", 0))
				continue;
			control = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(a, "control"));
			for (k = 0; k < n_levels && levels[k] != lv; k++)
				;
			x = L + (BP_W - 20 - L) * (k + 0.5) / (double)n_levels;
			y = H - B - (H - B - T) * bp_num(r, "rate", 0);
			lo = H - B - (H - B - T) * bp_num(r, "lo", 0);
			hi = H - B - (H - B - T) * bp_num(r, "hi", 0);
			if (px >= 0)
				fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"%s/>\n", px, py,
					x, y, col, control ? " stroke-dasharray=\"5,3\"" : "");
			fprintf(f, "<line class=\"acc-interval\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				"stroke=\"%s\"/>", x, lo, x, hi, col);
			fprintf(f, "<circle class=\"acc-point\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"><title>server %zu%s "
				"level %g: %.0f of %.0f right (%.1f%%, CI %.1f%% to %.1f%%)%s%s</title></circle>\n", x, y, col, arm,
				control ? " (control)" : "", lv, bp_num(r, "k", 0), bp_num(r, "n", 0), 100 * bp_num(r, "rate", 0),
				100 * bp_num(r, "lo", 0), 100 * bp_num(r, "hi", 0),
				cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(a, "fisher_p")) ? "; against the control: " : "",
				bp_str(a, "verdict"));
			st->curve_points++;
			px = x;
			py = y;
		}
		fprintf(f, "<text x=\"%d\" y=\"%zu\" font-size=\"11\" fill=\"%s\">server %zu%s</text>\n", L + 8,
			(size_t)H - B - 8 - 14 * (n_arms - 1 - arm), col, arm, control ? " (control, dashed)" : "");
	}
	fputs("</svg>\n", f);
}

/* Every leak: the donor's marker against the victim's (both in the order they were sent). */
static void bp_matrix(FILE *f, struct html_stats *st, const struct bp *b)
{
	double max = 1;
	size_t i;
	int S = 420, M = 50;

	if (!b->n_leaks)
		return;
	for (i = 0; i < b->n_leaks; i++) {
		if (b->leaks[i].donor > max)
			max = b->leaks[i].donor;
		if (b->leaks[i].victim > max)
			max = b->leaks[i].victim;
	}
	fprintf(f, "<h2>Canary leaks: donor &rarr; victim (%zu)</h2>\n", b->leaks_total);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" class=\"donor-matrix\">\n",
		S + M + 20, S + M + 10);
	fprintf(f, "<rect x=\"%d\" y=\"10\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#999\"/>\n", M, S, S);
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"10\" stroke=\"#ddd\"/>\n", M, S + 10, M + S);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">donor (marker, in the order "
		"sent)</text>\n", M + S / 2, S + 40);
	fprintf(f, "<text x=\"14\" y=\"%d\" font-size=\"11\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">"
		"victim</text>\n", 10 + S / 2, 10 + S / 2);
	for (i = 0; i < b->n_leaks; i++) {
		const struct bp_leak *l = &b->leaks[i];
		double x = M + S * l->donor / max, y = 10 + S - S * l->victim / max;

		fprintf(f, "<circle class=\"leak %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"><title>", l->aborted ?
			"donor-aborted" : l->finished ? "donor-finished" : "donor-streaming", x, y,
			l->aborted ? "#9467bd" : l->finished ? "#d62728" : "#ff7f0e");
		svg_escape(f, l->victim_id);
		fprintf(f, " at output token %.0f holds a piece of ", l->at);
		svg_escape(f, l->donor_id[0] ? l->donor_id : "another request");
		fprintf(f, " (%s)</title></circle>\n", l->aborted ? "aborted" : l->finished ? "finished" : "still streaming");
		st->leaks++;
	}
	fputs("</svg>\n<p class=\"note\">Red: the donor had finished; orange: still streaming; purple: cancelled "
	      "by the client. Above the diagonal the donor was sent after its victim.</p>\n", f);
}

/* A churn run's requests, one row each by launch order, with their transitions. */
static void bp_timeline(FILE *f, struct html_stats *st, const struct bp_run *r)
{
	double tmax = 0;
	size_t i;
	int L = 40, row = 3, H;

	if (!r->n)
		return;
	for (i = 0; i < r->n; i++)
		if (r->req[i].t1 > tmax)
			tmax = r->req[i].t1;
	if (tmax <= 0)
		tmax = 1;
	H = (int)r->n * row + 40;
	fputs("<h3 style=\"font-size:13px\">", f);
	svg_escape(f, r->run_id);
	fprintf(f, "</h3>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" class=\"transitions\">\n",
		BP_W, H);
	for (i = 0; i < r->n; i++) {
		const struct bp_req *q = &r->req[i];
		double x0 = L + (BP_W - L - 10) * q->t0 / tmax, x1 = L + (BP_W - L - 10) * q->t1 / tmax;
		int y = 10 + (int)(q->seq < r->n ? q->seq : r->n - 1) * row;
		const char *col = q->sync ? "#1f77b4" : q->again ? "#2ca02c" : q->prefix ? "#98df8a" :
				  q->pressure ? "#c7c7c7" : "#7f7f7f";

		if (x1 < x0 + 1)
			x1 = x0 + 1;
		fprintf(f, "<rect class=\"req%s%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"><title>",
			q->sync ? " sync" : "", q->abort ? " abort" : "", x0, y, x1 - x0, row - 1, col);
		svg_escape(f, q->id);
		fprintf(f, ": %.1f to %.1f ms%s%s%s%s%s%s</title></rect>", q->t0 * 1e3, q->t1 * 1e3,
			q->sync ? ", sync-forcing" : "", q->abort ? ", cancelled by the client" : "",
			q->over ? ", queued over max_num_seqs" : "", q->prefix ? ", shared prefix" : "",
			q->again ? ", shared prefix again" : "", q->leaked ? ", LEAKED" : "");
		if (q->abort)
			fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"2\" height=\"%d\" fill=\"#9467bd\"/>", x1, y, row);
		if (q->leaked)
			fprintf(f, "<circle class=\"victim\" cx=\"%.1f\" cy=\"%d\" r=\"2.5\" fill=\"#d62728\"/>", x1 + 4,
				y + 1);
		fputc('\n', f);
		st->timeline_requests++;
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">0</text><text x=\"%d\" y=\"%d\" font-size=\"11\" "
		"text-anchor=\"end\">%.1f ms</text>\n", L, H - 6, BP_W - 10, H - 6, tmax * 1e3);
	fputs("</svg>\n", f);
}

enum status benchpage_write(FILE *f, const char *path, struct html_stats *st, struct status_info *si)
{
	struct bp b;
	enum status e;
	const cJSON *x;
	char d[256];
	size_t i;

	memset(&b, 0, sizeof(b));
	st->mode = "bench";
	e = bp_read(&b, path, si);
	if (e)
		goto out;
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>bench ");
	svg_escape(f, path);
	fprintf(f, "</title>\n<style>%s</style></head>\n<body>\n<h1>bench ", bp_css);
	svg_escape(f, path);
	fputs("</h1>\n<div class=\"strip\">\n", f);
	if ((x = bp_obj(b.summary, "canary"))) {
		snprintf(d, sizeof(d), "%.0f leaked, %.0f lost of %.0f requests; decoys in %.0f", bp_num(x, "leaked", 0),
			 bp_num(x, "lost", 0), bp_num(x, "requests", 0), bp_num(x, "decoy_outputs", 0));
		bp_box(f, st, bp_str(x, "verdict"), "canary", d);
	}
	if ((x = bp_obj(b.summary, "accuracy"))) {
		snprintf(d, sizeof(d), "against %s", cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(x, "control")) ?
			 "the synchronous control" : "no control");
		bp_box(f, st, bp_str(x, "verdict"), "accuracy", d);
	}
	if ((x = bp_obj(b.summary, "correctness")))
		bp_box(f, st, bp_str(x, "verdict"), "correctness", "against the reference");
	if ((x = bp_obj(b.summary, "margins"))) {
		/* labels, not a verdict: drawn plain, after the correctness box */
		const cJSON *l = bp_obj(x, "labels");
		char v[64];

		snprintf(d, sizeof(d), "%.0f near-tie, %.0f low-probability, %.0f duplicated-token, %.0f "
			 "past-vocabulary, %.0f not-evaluable (epsilon %g)", bp_num(l, "near-tie", 0),
			 bp_num(l, "low-probability", 0), bp_num(l, "duplicated-token", 0),
			 bp_num(l, "past-vocabulary", 0), bp_num(l, "not-evaluable", 0), bp_num(x, "epsilon", 0));
		snprintf(v, sizeof(v), "%.0f re-scored", bp_num(x, "scored", 0));
		bp_label_box(f, v, "margins", d);
	}
	if (!b.summary)
		bp_box(f, st, "INCONCLUSIVE", "summary", "no summary record: the run did not finish");
	fputs("</div>\n", f);
	if (b.summary)
		bp_curve(f, st, b.summary);
	bp_matrix(f, st, &b);
	if (b.churn) {
		fputs("<h2>Churn: requests and the transitions they caused</h2>\n<p class=\"note\">One row per "
		      "request in launch order, from when it was written to its end. Blue: sync-forcing; light "
		      "green: the shared prefix; green: the shared prefix again; light grey: cache pressure; a "
		      "purple tick: cancelled by the client; a red dot: the request leaked.</p>\n", f);
		for (i = 0; i < b.n_runs; i++)
			bp_timeline(f, st, &b.runs[i]);
	}
	fprintf(f, "<p class=\"note\">Written by ttaudit %s (<code>ttaudit report html</code>). Intervals are "
		"two-sided Clopper-Pearson intervals of k of n.</p>\n</body></html>\n", TTAUDIT_VERSION);
out:
	cJSON_Delete(b.summary);
	free(b.leaks);
	for (i = 0; i < b.n_runs; i++)
		free(b.runs[i].req);
	return e;
}
