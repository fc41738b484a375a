#include "svg.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "evidence.h"
#include "reader.h"
#include "rule.h"

#define SVG_W 960
#define SVG_MARGIN_L 70
#define SVG_MARGIN_R 20
#define SVG_MARGIN_T 40
#define SVG_MARGIN_B 50
#define SVG_MARK_MIN 3.0          /* narrowest substitution mark, px */

static const char *const svg_colors[SVG_MAX_SERIES] = {
	"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f",
};

void svg_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			/* XML 1.0 forbids most control characters, even escaped */
			if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n')
				fputc('?', f);
			else
				fputc(*s, f);
		}
	}
}

static void svg_open(FILE *f, int w, int h, const char *title)
{
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n", w, h, w, h);
	fprintf(f, "<title>");
	svg_escape(f, title);
	fprintf(f, "</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n", w, h);
	fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\">", SVG_MARGIN_L);
	svg_escape(f, title);
	fprintf(f, "</text>\n");
}

/* --- timeline ------------------------------------------------------------- */

struct svg_col {
	int64_t step;
	uint32_t n;
	uint8_t *cell;    /* per slot: 0 idle, 1 active, 2 taken, 3 reject, 4 subst */
};

enum { CELL_IDLE, CELL_ACTIVE, CELL_TAKEN, CELL_REJECT, CELL_SUBST };

enum status svg_timeline(FILE *f, const char *path, const struct svg_timeline_opts *o,
			 struct svg_timeline_stats *st, struct status_info *si)
{
	static const char *const cls[] = { "idle", "active", "taken", "reject", "subst" };
	static const char *const fill[] = { "none", "#e8e8e8", "#2ca02c", "#ff7f0e", "#d62728" };
	struct audit_reader *rd = NULL;
	struct audit_item it;
	struct status_info rsi;
	struct svg_col *cols = NULL;
	struct rule rule;
	struct rule_ctx ctx = { 0 };
	uint8_t take[EVENT_MAX_SLOTS], bare;
	size_t n_cols = 0, i;
	uint32_t s, slots = 0;
	enum status rst = STATUS_OK;
	int h, w = SVG_W, plot_w, row_h, pass;
	double col_w;
	char title[512];

	memset(st, 0, sizeof(*st));
	if (rule_parse(o && o->rule ? o->rule : "bare", &rule, si))
		return STATUS_USAGE;
	cols = calloc(SVG_MAX_COLUMNS, sizeof(*cols));
	if (!cols)
		return status_set(si, STATUS_NOMEM, "out of memory");
	rst = audit_reader_open(&rd, path, NULL, si);
	if (rst)
		goto out;
	for (;;) {
		const struct merge_event *m;
		struct svg_col *c;
		int stale;

		status_info_clear(&rsi);
		rst = audit_reader_next(rd, &it, &rsi);
		if (rst == STATUS_EOF) {
			rst = STATUS_OK;
			break;
		}
		if (rst == STATUS_PARSE || rst == STATUS_LIMIT) {
			st->malformed++;
			continue;
		}
		if (rst) {
			*si = rsi;
			goto out;
		}
		if (!it.has_event)
			continue;
		if (it.event.kind == EVENT_CONFIG && it.event.u.config.max_model_len > 0)
			ctx.max_pos = it.event.u.config.max_model_len;
		if (it.event.kind != EVENT_MERGE)
			continue;
		m = &it.event.u.merge;
		if (o && (m->step < o->from_step || (o->to_step >= 0 && m->step > o->to_step)))
			continue;
		st->merges++;
		if (n_cols >= SVG_MAX_COLUMNS)
			continue;
		c = &cols[n_cols];
		c->step = m->step;
		c->n = m->n_host;
		c->cell = calloc(m->n_host ? m->n_host : 1, 1);
		if (!c->cell) {
			rst = status_set(si, STATUS_NOMEM, "out of memory");
			goto out;
		}
		n_cols++;
		st->drawn++;
		if (m->n_host > slots)
			slots = m->n_host;
		memset(take, 0, m->n_host);
		if (m->n_dev >= m->n_host) {
			if (m->has_taken)
				memcpy(take, m->taken, m->n_host);
			else if (rule_eval(&rule, m, &ctx, take, NULL) != RULE_EVALUATED)
				memset(take, 0, m->n_host);
		}
		for (s = 0; s < m->n_host; s++) {
			if (!rule_active(m, s))
				continue;
			c->cell[s] = CELL_ACTIVE;
			bare = m->n_dev >= m->n_host && rule_bare_take(m, s);
			if (take[s]) {
				if (evidence_slot(m, s, &stale) != EVIDENCE_UNKNOWN && stale) {
					c->cell[s] = CELL_SUBST;
					st->substs++;
				} else {
					c->cell[s] = CELL_TAKEN;
					st->taken++;
				}
			} else if (bare) {
				c->cell[s] = CELL_REJECT;
				st->rejects++;
			}
		}
	}
	st->slots = slots;
	row_h = slots > 64 ? 4 : slots > 16 ? 10 : 24;
	h = SVG_MARGIN_T + (int)slots * row_h + SVG_MARGIN_B + 30;
	plot_w = w - SVG_MARGIN_L - SVG_MARGIN_R;
	col_w = n_cols ? (double)plot_w / (double)n_cols : plot_w;
	if (col_w > 24)
		col_w = 24;
	snprintf(title, sizeof(title), "%s: %" PRIu64 " merges, %" PRIu64 " substitutions, %" PRIu64
		 " guard rejects, %" PRIu64 " taken%s", o && o->title ? o->title : path, st->merges,
		 st->substs, st->rejects, st->taken,
		 st->merges > st->drawn ? " (first merges drawn)" : "");
	svg_open(f, w, h, title);
	fprintf(f, "<g class=\"axes\" stroke=\"#999\">\n");
	/* the axis ends with the last column: with few merges the columns keep
	 * their width and do not fill the plot */
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\"/>\n", SVG_MARGIN_L,
		SVG_MARGIN_T + (int)slots * row_h,
		n_cols ? SVG_MARGIN_L + (double)n_cols * col_w : (double)(w - SVG_MARGIN_R),
		SVG_MARGIN_T + (int)slots * row_h);
	fprintf(f, "</g>\n");
	for (s = 0; s < slots; s++)
		if (slots <= 16 || s % 8 == 0)
			fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">slot %u</text>\n",
				SVG_MARGIN_L - 6, SVG_MARGIN_T + (int)s * row_h + row_h / 2 + 4, s);
	fprintf(f, "<g class=\"cells\">\n");
	/* substitutions last and at least SVG_MARK_MIN wide: among thousands of
	 * merges a column is a fraction of a pixel, and they are what a reader
	 * looks for */
	for (pass = 0; pass < 2; pass++)
	for (i = 0; i < n_cols; i++) {
		double x = SVG_MARGIN_L + (double)i * col_w;
		double cw = col_w > 2 ? col_w - 1 : col_w;

		if (pass == 1 && cw < SVG_MARK_MIN) {
			x -= (SVG_MARK_MIN - cw) / 2;
			cw = SVG_MARK_MIN;
		}
		for (s = 0; s < cols[i].n; s++) {
			uint8_t k = cols[i].cell[s];

			if (k == CELL_IDLE || (k == CELL_SUBST) != (pass == 1))
				continue;
			fprintf(f, "<rect class=\"%s\" data-step=\"%" PRId64 "\" data-slot=\"%u\" x=\"%.2f\" "
				"y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>step %" PRId64
				" slot %u: %s</title></rect>\n", cls[k], cols[i].step, s, x,
				SVG_MARGIN_T + (int)s * row_h + 1, cw, row_h - 2,
				fill[k], cols[i].step, s, cls[k]);
		}
	}
	fprintf(f, "</g>\n");
	if (n_cols) {
		int y = SVG_MARGIN_T + (int)slots * row_h + 16;

		/* one line, so the two ends cannot overlap however few columns */
		fprintf(f, "<text x=\"%d\" y=\"%d\">%zu merge events in order, step %" PRId64 " to step %" PRId64
			"</text>\n", SVG_MARGIN_L, y, n_cols, cols[0].step, cols[n_cols - 1].step);
	}
	{
		int y = h - 12, x = SVG_MARGIN_L;

		for (i = 1; i < 5; i++, x += 150) {
			fprintf(f, "<rect class=\"legend\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
				"<text x=\"%d\" y=\"%d\">%s</text>\n", x, y - 10, fill[i], x + 16, y,
				i == CELL_ACTIVE ? "active, not taken" : i == CELL_TAKEN ? "taken" :
				i == CELL_REJECT ? "guard reject" : "substitution");
		}
	}
	fprintf(f, "</svg>\n");
out:
	for (i = 0; i < n_cols; i++)
		free(cols[i].cell);
	free(cols);
	audit_reader_free(rd);
	return rst;
}

/* --- charts --------------------------------------------------------------- */

static int svg_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* A round axis maximum at or above v. */
static double svg_nice(double v)
{
	double p, m;

	if (!(v > 0) || !isfinite(v))
		return 1;
	p = pow(10, floor(log10(v)));
	m = v / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void svg_axes(FILE *f, int w, int h, double xmax, double ymax, const char *xlabel,
		     const char *ylabel, bool x_is_index)
{
	int x0 = SVG_MARGIN_L, y0 = h - SVG_MARGIN_B, x1 = w - SVG_MARGIN_R, y1 = SVG_MARGIN_T;
	int k;

	fprintf(f, "<g class=\"axes\" stroke=\"#999\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
		"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/></g>\n", x0, y0, x1, y0, x0, y0, x0, y1);
	for (k = 0; k <= 4; k++) {
		double fx = x0 + (x1 - x0) * k / 4.0, fy = y0 - (y0 - y1) * k / 4.0;

		if (!x_is_index)
			fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n", fx, y0 + 16,
				xmax * k / 4.0);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", x0 - 6, fy + 4,
			ymax * k / 4.0);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">", (x0 + x1) / 2, h - 12);
	svg_escape(f, xlabel);
	fprintf(f, "</text>\n<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" "
		"text-anchor=\"middle\">", (y0 + y1) / 2, (y0 + y1) / 2);
	svg_escape(f, ylabel);
	fprintf(f, "</text>\n");
}

static void svg_legend(FILE *f, int w, const struct svg_series *s, size_t n)
{
	size_t i;

	for (i = 0; i < n && i < SVG_MAX_SERIES; i++) {
		int y = SVG_MARGIN_T + 4 + (int)i * 16;

		fprintf(f, "<rect class=\"legend\" x=\"%d\" y=\"%d\" width=\"12\" height=\"3\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\">", w - 260, y, svg_colors[i], w - 244, y + 5);
		svg_escape(f, s[i].name);
		fprintf(f, " (n=%zu)</text>\n", s[i].n);
	}
}

void svg_cdf(FILE *f, const char *title, const char *xlabel, const struct svg_series *s, size_t n)
{
	int w = SVG_W, h = 420, x0 = SVG_MARGIN_L, y0 = h - SVG_MARGIN_B;
	int pw = w - SVG_MARGIN_L - SVG_MARGIN_R, ph = h - SVG_MARGIN_T - SVG_MARGIN_B;
	double xmax = 0;
	size_t i, j;

	for (i = 0; i < n && i < SVG_MAX_SERIES; i++)
		for (j = 0; j < s[i].n; j++)
			if (isfinite(s[i].v[j]) && s[i].v[j] > xmax)
				xmax = s[i].v[j];
	xmax = svg_nice(xmax);
	svg_open(f, w, h, title);
	svg_axes(f, w, h, xmax, 1.0, xlabel, "fraction of requests", false);
	for (i = 0; i < n && i < SVG_MAX_SERIES; i++) {
		double *v = s[i].n ? malloc(s[i].n * sizeof(double)) : NULL;
		size_t m = 0;

		for (j = 0; v && j < s[i].n; j++)
			if (isfinite(s[i].v[j]))
				v[m++] = s[i].v[j];
		if (!m) {
			free(v);
			continue;
		}
		qsort(v, m, sizeof(double), svg_cmp);
		fprintf(f, "<polyline class=\"cdf\" data-series=\"");
		svg_escape(f, s[i].name);
		fprintf(f, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%d,%d", svg_colors[i], x0, y0);
		for (j = 0; j < m; j++) {
			double x = x0 + pw * v[j] / xmax;

			fprintf(f, " %.1f,%.1f %.1f,%.1f", x, y0 - ph * (double)j / (double)m, x,
				y0 - ph * (double)(j + 1) / (double)m);
		}
		fprintf(f, "\"/>\n");
		free(v);
	}
	svg_legend(f, w, s, n);
	fprintf(f, "</svg>\n");
}

void svg_repeats(FILE *f, const char *title, const char *ylabel, const struct svg_series *s, size_t n)
{
	int w = SVG_W, h = 360, x0 = SVG_MARGIN_L, y0 = h - SVG_MARGIN_B;
	int pw = w - SVG_MARGIN_L - SVG_MARGIN_R, ph = h - SVG_MARGIN_T - SVG_MARGIN_B;
	double ymax = 0;
	size_t i, j, nmax = 1;

	for (i = 0; i < n && i < SVG_MAX_SERIES; i++) {
		if (s[i].n > nmax)
			nmax = s[i].n;
		for (j = 0; j < s[i].n; j++)
			if (isfinite(s[i].v[j]) && s[i].v[j] > ymax)
				ymax = s[i].v[j];
	}
	ymax = svg_nice(ymax);
	svg_open(f, w, h, title);
	svg_axes(f, w, h, 0, ymax, "repeat", ylabel, true);
	for (j = 0; j < nmax; j++)
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%zu</text>\n",
			x0 + pw * (j + 0.5) / (double)nmax, y0 + 16, j + 1);
	for (i = 0; i < n && i < SVG_MAX_SERIES; i++) {
		for (j = 0; j < s[i].n; j++) {
			double x, y;

			if (!isfinite(s[i].v[j]))
				continue;
			x = x0 + pw * (j + 0.5) / (double)nmax + ((double)i - (double)(n - 1) / 2) * 10;
			y = y0 - ph * s[i].v[j] / ymax;
			fprintf(f, "<circle class=\"point\" data-series=\"");
			svg_escape(f, s[i].name);
			fprintf(f, "\" data-repeat=\"%zu\" data-value=\"%g\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" "
				"fill=\"%s\"/>\n", j, s[i].v[j], x, y, svg_colors[i]);
		}
	}
	svg_legend(f, w, s, n);
	fprintf(f, "</svg>\n");
}
