/*
 * svg.c - the figures of svg.h, written out as SVG text.
 */
#include "report/svg.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "analyzer/evidence.h"
#include "analyzer/reader.h"
#include "analyzer/rule.h"
#include "analyzer/tally.h"

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

enum { CELL_IDLE, CELL_ACTIVE, CELL_TAKEN, CELL_UNVERIFIED, CELL_SUBST, CELL_PREVENTED, CELL_FORGONE,
       CELL_REFUSED, CELL__N };

static const char *const svg_cell_cls[CELL__N] = {
	"idle", "active", "taken", "unverified", "subst", "prevented", "forgone", "refused",
};
static const char *const svg_cell_fill[CELL__N] = {
	"none", "#e8e8e8", "#2ca02c", "#bcbd22", "#d62728", "#1f77b4", "#ff7f0e", "#9467bd",
};
static const char *const svg_cell_says[CELL__N] = {
	"idle", "active, no bare match", "taken, fresh", "taken, staleness unknown", "SUBSTITUTION (taken, stale)",
	"prevented (a stale bare match refused)", "forgone (a fresh bare match refused)",
	"refused, staleness unknown",
};

const char *svg_mark_color(const char *cls)
{
	size_t i;

	for (i = 0; i < CELL__N; i++)
		if (!strcmp(cls, svg_cell_cls[i]))
			return svg_cell_fill[i];
	return "#000000";
}

#define SVG_BINS 2048          /* density bins kept; pairs merge when full */
#define SVG_MAX_BOUNDS 256
#define SVG_ID 64

struct svg_cell_note {
	uint32_t slot;
	uint8_t cls;
	char req[SVG_ID], buf_req[SVG_ID];
	const char *evidence;
};

struct svg_col {
	int64_t step;
	uint32_t n;
	uint8_t *cell;                /* per slot: CELL_* */
	struct svg_cell_note *notes;  /* the cells other than idle and active, with their ids */
	uint32_t n_notes;
	const char *file;
	long line;
};

struct svg_bin {
	uint32_t merges, substs, prevented, forgone;
	int64_t step_lo, step_hi;
};

struct svg_bound {
	uint64_t merge;               /* the index of the first merge after it (a column when drawn) */
	char label[96];
};

struct svg_tl {
	struct svg_timeline_opts o;
	struct rule rule;             /* the decisions: the counterfactual rule, or the fallback */
	bool counterfactual;
	char title[256];
	struct svg_col *cols;
	size_t n_cols;
	struct svg_bin bins[SVG_BINS];
	size_t n_bins;
	uint64_t bin_width;           /* merges per bin, a power of 2 */
	struct svg_bound bounds[SVG_MAX_BOUNDS];
	size_t n_bounds;
	struct svg_subst *substs;
	size_t n_substs;
	struct tally *tally;
	size_t tally_rule;
	struct svg_timeline_stats st;
	char **paths;                 /* copies of the files added, for the lists */
	size_t n_paths, cap_paths;
	uint64_t bytes_done, merges_read;   /* files read before this one; for o.progress */
};

static void svg_copy_id(char *dst, const char *src)
{
	snprintf(dst, SVG_ID, "%s", src ? src : "");
}

enum status svg_tl_new(struct svg_tl **out, const struct svg_timeline_opts *o, struct status_info *si)
{
	struct svg_tl *t;
	struct rule rules[2];
	size_t n = 1;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return status_set(si, STATUS_NOMEM, "out of memory");
	if (o)
		t->o = *o;
	else
		t->o.to_step = -1;
	t->counterfactual = t->o.rule != NULL;
	if (rule_parse(t->o.rule ? t->o.rule : t->o.fallback ? t->o.fallback : "bare", &t->rule, si) ||
	    rule_parse("bare", &rules[0], si)) {
		free(t);
		return STATUS_USAGE;
	}
	if (t->counterfactual && strcmp(t->rule.name, "bare"))
		rules[n++] = t->rule;
	t->tally_rule = n - 1;
	t->tally = tally_new(rules, n, 0);
	t->cols = calloc(SVG_MAX_COLUMNS, sizeof(*t->cols));
	t->substs = calloc(SVG_MAX_SUBSTS, sizeof(*t->substs));
	if (!t->tally || !t->cols || !t->substs) {
		svg_tl_free(t);
		return status_set(si, STATUS_NOMEM, "out of memory");
	}
	t->bin_width = 1;
	*out = t;
	return STATUS_OK;
}

void svg_tl_free(struct svg_tl *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; t->cols && i < t->n_cols; i++) {
		free(t->cols[i].cell);
		free(t->cols[i].notes);
	}
	for (i = 0; i < t->n_paths; i++)
		free(t->paths[i]);
	free(t->paths);
	free(t->cols);
	free(t->substs);
	tally_free(t->tally);
	free(t);
}

const struct svg_timeline_stats *svg_tl_stats(const struct svg_tl *t) { return &t->st; }
const struct tally *svg_tl_tally(const struct svg_tl *t) { return t->tally; }
size_t svg_tl_tally_rule(const struct svg_tl *t) { return t->tally_rule; }
size_t svg_tl_n_substs(const struct svg_tl *t) { return t->n_substs; }
const struct svg_subst *svg_tl_subst(const struct svg_tl *t, size_t i)
{
	return i < t->n_substs ? &t->substs[i] : NULL;
}

static void svg_bound(struct svg_tl *t, const char *label)
{
	struct svg_bound *b;

	if (t->n_bounds && t->bounds[t->n_bounds - 1].merge == t->st.merges) {
		/* two at one place: one line, both names */
		b = &t->bounds[t->n_bounds - 1];
		if (strlen(b->label) + strlen(label) + 3 < sizeof(b->label)) {
			strcat(b->label, ", ");
			strcat(b->label, label);
		}
		return;
	}
	t->st.boundaries++;
	if (t->n_bounds >= SVG_MAX_BOUNDS)
		return;
	b = &t->bounds[t->n_bounds++];
	b->merge = t->st.merges;
	snprintf(b->label, sizeof(b->label), "%s", label);
}

/* One merge into the density bins; when they are full, pairs merge. */
static void svg_bin_add(struct svg_tl *t, int64_t step, uint32_t substs, uint32_t prevented, uint32_t forgone)
{
	uint64_t idx = t->st.merges - 1;   /* this merge's index */
	size_t b = (size_t)(idx / t->bin_width), i;
	struct svg_bin *x;

	if (b >= SVG_BINS) {
		for (i = 0; i < SVG_BINS / 2; i++) {
			struct svg_bin *p = &t->bins[2 * i], *q = &t->bins[2 * i + 1];

			t->bins[i].merges = p->merges + q->merges;
			t->bins[i].substs = p->substs + q->substs;
			t->bins[i].prevented = p->prevented + q->prevented;
			t->bins[i].forgone = p->forgone + q->forgone;
			t->bins[i].step_lo = p->step_lo;
			t->bins[i].step_hi = q->merges ? q->step_hi : p->step_hi;
		}
		memset(&t->bins[SVG_BINS / 2], 0, sizeof(t->bins) / 2);
		t->bin_width *= 2;
		t->n_bins = SVG_BINS / 2;
		b = (size_t)(idx / t->bin_width);
	}
	x = &t->bins[b];
	if (!x->merges)
		x->step_lo = step;
	x->step_hi = step;
	x->merges++;
	x->substs += substs;
	x->prevented += prevented;
	x->forgone += forgone;
	if (b + 1 > t->n_bins)
		t->n_bins = b + 1;
}

static enum status svg_tl_merge(struct svg_tl *t, const struct merge_event *m, const char *file, long line,
				const struct rule_ctx *ctx, struct status_info *si)
{
	uint8_t take[EVENT_MAX_SLOTS], cls;
	uint32_t s, n_subst = 0, n_prev = 0, n_forg = 0, n_bare = 0;
	struct svg_col *c = NULL;
	int stale;
	bool decided = true;

	t->st.merges++;
	if (t->n_cols < SVG_MAX_COLUMNS) {
		c = &t->cols[t->n_cols];
		c->step = m->step;
		c->n = m->n_host;
		c->file = file;
		c->line = line;
		c->cell = calloc(m->n_host ? m->n_host : 1, 1);
		if (!c->cell)
			return status_set(si, STATUS_NOMEM, "out of memory");
		t->n_cols++;
		t->st.drawn++;
		if (m->n_host > t->st.slots)
			t->st.slots = m->n_host;
	}
	memset(take, 0, m->n_host);
	if (m->n_dev >= m->n_host) {
		if (m->has_taken && !t->counterfactual)
			memcpy(take, m->taken, m->n_host);
		else if (rule_eval(&t->rule, m, ctx, take, NULL) != RULE_EVALUATED) {
			memset(take, 0, m->n_host);
			decided = false;
			t->st.skipped++;
		}
	}
	for (s = 0; s < m->n_host; s++) {
		enum evidence ev;
		bool bare;

		if (!rule_active(m, s))
			continue;
		cls = CELL_ACTIVE;
		bare = m->n_dev >= m->n_host && rule_bare_take(m, s);
		ev = evidence_slot(m, s, &stale);
		n_bare += bare && ev != EVIDENCE_UNKNOWN && stale;
		if (take[s])
			cls = ev == EVIDENCE_UNKNOWN ? CELL_UNVERIFIED : stale ? CELL_SUBST : CELL_TAKEN;
		else if (bare && decided)
			cls = ev == EVIDENCE_UNKNOWN ? CELL_REFUSED : stale ? CELL_PREVENTED : CELL_FORGONE;
		switch (cls) {
		case CELL_TAKEN: t->st.taken++; break;
		case CELL_UNVERIFIED: t->st.unverified++; break;
		case CELL_SUBST: t->st.substs++; n_subst++; break;
		case CELL_PREVENTED: t->st.prevented++; n_prev++; break;
		case CELL_FORGONE: t->st.forgone++; n_forg++; break;
		case CELL_REFUSED: t->st.refused++; break;
		default: break;
		}
		if (cls == CELL_SUBST && t->n_substs < SVG_MAX_SUBSTS) {
			struct svg_subst *x = &t->substs[t->n_substs++];

			x->step = m->step;
			x->slot = s;
			svg_copy_id(x->req, m->has_req ? m->slot_req[s] : NULL);
			svg_copy_id(x->buf_req, m->has_req ? m->buf_req[s] : NULL);
			x->evidence = evidence_name(ev);
			x->file = file;
			x->line = line;
		}
		if (!c)
			continue;
		c->cell[s] = cls;
		if (cls != CELL_ACTIVE) {
			struct svg_cell_note *nt;

			if (!c->notes) {
				c->notes = calloc(m->n_host, sizeof(*c->notes));
				if (!c->notes)
					return status_set(si, STATUS_NOMEM, "out of memory");
			}
			nt = &c->notes[c->n_notes++];
			nt->slot = s;
			nt->cls = cls;
			nt->evidence = evidence_name(ev);
			svg_copy_id(nt->req, m->has_req ? m->slot_req[s] : NULL);
			svg_copy_id(nt->buf_req, m->has_req ? m->buf_req[s] : NULL);
		}
	}
	t->st.rejects = t->st.prevented + t->st.forgone + t->st.refused;
	t->st.merges_subst += n_subst > 0;
	t->st.bare_merges_subst += n_bare > 0;
	svg_bin_add(t, m->step, n_subst, n_prev, n_forg);
	return STATUS_OK;
}

enum status svg_tl_add(struct svg_tl *t, const char *path, const char *label,
		       const struct svg_phase *phases, size_t n_phases, struct status_info *si)
{
	struct audit_reader *rd = NULL;
	struct audit_item it;
	struct status_info rsi;
	struct rule_ctx ctx = { 0 };
	enum status rst;
	size_t next_phase = 0;
	int64_t last_step = INT64_MIN, last_pid = -1;
	char *file, buf[64];

	if (ALLOC_GROW(t->paths, t->n_paths + 1, t->cap_paths) < 0)
		return status_set(si, STATUS_NOMEM, "out of memory");
	file = t->paths[t->n_paths] = strdup(path);
	if (!file)
		return status_set(si, STATUS_NOMEM, "out of memory");
	t->n_paths++;
	rst = audit_reader_open(&rd, path, NULL, si);
	if (rst)
		return rst;
	if (label)
		svg_bound(t, label);
	tally_begin_file(t->tally);
	for (;;) {
		const struct merge_event *m;

		status_info_clear(&rsi);
		rst = audit_reader_next(rd, &it, &rsi);
		if (rst == STATUS_EOF) {
			rst = STATUS_OK;
			break;
		}
		if (rst == STATUS_PARSE || rst == STATUS_LIMIT) {
			t->st.malformed++;
			continue;
		}
		if (rst) {
			*si = rsi;
			break;
		}
		if (!it.has_event)
			continue;
		if (it.event.kind == EVENT_CONFIG) {
			tally_config(t->tally, &it.event.u.config);
			ctx.max_pos = tally_max_pos(t->tally);
		}
		if (it.event.kind != EVENT_MERGE)
			continue;
		if (t->o.progress && !(++t->merges_read & 255))
			progress_update(t->o.progress, t->bytes_done + audit_reader_stats(rd)->bytes,
					t->merges_read);
		m = &it.event.u.merge;
		if (m->step < t->o.from_step || (t->o.to_step >= 0 && m->step > t->o.to_step))
			continue;
		/* where a run of the file begins, where its process changes, where steps go back */
		while (next_phase < n_phases && it.has_time && it.mono >= phases[next_phase].mono_start) {
			if (next_phase + 1 >= n_phases || it.mono < phases[next_phase + 1].mono_start)
				svg_bound(t, phases[next_phase].label);
			next_phase++;
		}
		if (it.has_pid && last_pid >= 0 && it.pid != last_pid) {
			snprintf(buf, sizeof(buf), "pid %" PRId64, it.pid);
			svg_bound(t, buf);
		} else if (last_step != INT64_MIN && m->step < last_step) {
			svg_bound(t, "steps restart");
		}
		if (it.has_pid)
			last_pid = it.pid;
		last_step = m->step;
		tally_merge(t->tally, m, file, it.line);
		rst = svg_tl_merge(t, m, file, it.line, &ctx, si);
		if (rst)
			break;
	}
	t->bytes_done += audit_reader_stats(rd)->bytes;
	audit_reader_free(rd);
	return rst;
}

/* x of column i */
#define SVG_TL_X(i) (SVG_MARGIN_L + (double)(i) * col_w)

void svg_tl_draw(const struct svg_tl *t, FILE *f, bool standalone)
{
	static const int kinds[3] = { CELL_SUBST, CELL_PREVENTED, CELL_FORGONE };
	static const char *const kind_cls[3] = { "density-subst", "density-prevented", "density-forgone" };
	static const char *const kind_says[3] = { "substitutions", "prevented", "forgone" };
	const struct svg_timeline_stats *st = &t->st;
	uint32_t slots = st->slots, s;
	int w = SVG_W, plot_w = SVG_W - SVG_MARGIN_L - SVG_MARGIN_R, row_h, pass, strip_h = 12;
	int y_strip, y_grid, y_axis, h, k;
	double col_w, bw, strip_w;
	char title[768], lead[320];
	size_t i, j, n_cols = t->n_cols;
	uint32_t maxc[3] = { 0, 0, 0 };

	row_h = slots > 64 ? 4 : slots > 16 ? 10 : 24;
	y_strip = SVG_MARGIN_T + 14;                    /* the density strip: 3 rows */
	y_grid = y_strip + 3 * strip_h + 24;            /* the cells */
	y_axis = y_grid + (int)slots * row_h;
	h = y_axis + 70;
	col_w = n_cols ? (double)plot_w / (double)n_cols : plot_w;
	if (col_w > 24)
		col_w = 24;
	if (t->counterfactual)
		snprintf(lead, sizeof(lead), "%s replayed on %s", t->rule.name,
			 t->o.title ? t->o.title : t->n_paths ? t->paths[0] : "");
	else
		snprintf(lead, sizeof(lead), "%s", t->o.title ? t->o.title : t->n_paths ? t->paths[0] : "");
	snprintf(title, sizeof(title), "%s: %" PRIu64 " merges, %" PRIu64 " substitutions, %" PRIu64
		 " guard rejects (%" PRIu64 " prevented, %" PRIu64 " forgone), %" PRIu64 " taken%s", lead,
		 st->merges, st->substs, st->rejects, st->prevented, st->forgone, st->taken,
		 st->merges > st->drawn ? " (first merges drawn)" : "");
	if (standalone)
		svg_open(f, w, h, title);
	else {
		/* inside a page, under its heading: the counts on a line of their own */
		fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"timeline\" width=\"%d\" height=\"%d\" "
			"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n<title>", w, h, w, h);
		svg_escape(f, title);
		fprintf(f, "</title>\n<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"white\"/>\n"
			"<text x=\"%d\" y=\"22\" font-size=\"13\">", w, h, SVG_MARGIN_L);
		svg_escape(f, title + strlen(lead) + 2);
		fprintf(f, "</text>\n");
	}
	/* the density strip: every merge, binned, each row scaled to its own
	 * largest bin, so that 32 substitutions among 3,000 merges show */
	for (i = 0; i < t->n_bins; i++)
		for (k = 0; k < 3; k++) {
			uint32_t v = kinds[k] == CELL_SUBST ? t->bins[i].substs : kinds[k] == CELL_PREVENTED ?
				     t->bins[i].prevented : t->bins[i].forgone;
			if (v > maxc[k])
				maxc[k] = v;
		}
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">all %" PRIu64 " merges in order, %" PRIu64
		" per bin</text>\n", SVG_MARGIN_L, y_strip - 3, st->merges, (uint64_t)t->bin_width);
	/* the strip is as wide as the columns when every merge is drawn */
	strip_w = st->merges && st->merges == n_cols ? (double)n_cols * col_w : plot_w;
	bw = t->n_bins ? strip_w / (double)t->n_bins : strip_w;
	fprintf(f, "<g class=\"density\">\n");
	for (k = 0; k < 3; k++) {
		int y0 = y_strip + k * strip_h;

		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-size=\"10\">%s</text>\n", SVG_MARGIN_L - 6,
			y0 + strip_h - 2, kind_says[k]);
		fprintf(f, "<rect class=\"density-row\" x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"#f7f7f7\"/>\n",
			SVG_MARGIN_L, y0, strip_w, strip_h - 1);
		for (i = 0; i < t->n_bins; i++) {
			const struct svg_bin *b = &t->bins[i];
			uint32_t v = kinds[k] == CELL_SUBST ? b->substs : kinds[k] == CELL_PREVENTED ? b->prevented :
				     b->forgone;
			double bh, x = SVG_MARGIN_L + (double)i * bw, ww = bw < 2 ? 2 : bw;

			if (!v)
				continue;
			/* at least 4 of 11 pixels: a single event must show */
			bh = 4 + (double)(strip_h - 5) * v / maxc[k];
			fprintf(f, "<rect class=\"%s\" data-count=\"%u\" data-from-step=\"%" PRId64 "\" data-to-step=\""
				"%" PRId64 "\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"><title>steps "
				"%" PRId64 " to %" PRId64 ": %u %s in %u merges</title></rect>\n", kind_cls[k], v, b->step_lo,
				b->step_hi, x, y0 + strip_h - 1 - bh, ww, bh, svg_cell_fill[kinds[k]], b->step_lo,
				b->step_hi, v, kind_says[k], b->merges);
		}
	}
	fprintf(f, "</g>\n");
	fprintf(f, "<g class=\"axes\" stroke=\"#999\">\n");
	/* the axis ends with the last column: with few merges the columns keep
	 * their width and do not fill the plot */
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\"/>\n", SVG_MARGIN_L, y_axis,
		n_cols ? SVG_TL_X(n_cols) : (double)(w - SVG_MARGIN_R), y_axis);
	fprintf(f, "</g>\n");
	for (s = 0; s < slots; s++)
		if (slots <= 16 || s % 8 == 0)
			fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">slot %u</text>\n",
				SVG_MARGIN_L - 6, y_grid + (int)s * row_h + row_h / 2 + 4, s);
	fprintf(f, "<g class=\"cells\">\n");
	/* substitutions last and at least SVG_MARK_MIN wide: among thousands of
	 * merges a column is a fraction of a pixel, and they are what a reader
	 * looks for */
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < n_cols; i++) {
			const struct svg_col *c = &t->cols[i];
			double x = SVG_TL_X(i), cw = col_w > 2 ? col_w - 1 : col_w;

			if (pass == 1 && cw < SVG_MARK_MIN) {
				x -= (SVG_MARK_MIN - cw) / 2;
				cw = SVG_MARK_MIN;
			}
			for (s = 0; s < c->n; s++) {
				uint8_t cl = c->cell[s];
				const struct svg_cell_note *nt = NULL;

				if (cl == CELL_IDLE || (cl == CELL_SUBST) != (pass == 1))
					continue;
				for (j = 0; cl != CELL_ACTIVE && j < c->n_notes; j++)
					if (c->notes[j].slot == s)
						nt = &c->notes[j];
				fprintf(f, "<rect class=\"%s\" data-step=\"%" PRId64 "\" data-slot=\"%u\" x=\"%.2f\" "
					"y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\"%s><title>step %" PRId64
					" slot %u: %s", svg_cell_cls[cl], c->step, s, x, y_grid + (int)s * row_h + 1, cw,
					row_h - 2, svg_cell_fill[cl],
					cl == CELL_SUBST && col_w >= 6 ? " stroke=\"#000000\" stroke-width=\"0.5\"" : "", c->step, s,
					svg_cell_says[cl]);
				if (nt && (nt->req[0] || nt->buf_req[0])) {
					fputs("; request ", f);
					svg_escape(f, nt->req[0] ? nt->req : "?");
					fputs(", buffer written for ", f);
					svg_escape(f, nt->buf_req[0] ? nt->buf_req : "?");
				}
				if (nt) {
					fprintf(f, "; evidence %s; ", nt->evidence);
					svg_escape(f, c->file);
					fprintf(f, ":%ld", c->line);
				}
				fputs("</title></rect>\n", f);
			}
		}
	fprintf(f, "</g>\n");
	/* residual substitutions marked above the grid, so none hides */
	fprintf(f, "<g class=\"markers\">\n");
	for (i = 0; i < n_cols; i++)
		for (s = 0; s < t->cols[i].n; s++)
			if (t->cols[i].cell[s] == CELL_SUBST) {
				double x = SVG_TL_X(i) + col_w / 2;

				fprintf(f, "<path class=\"subst-marker\" data-step=\"%" PRId64 "\" d=\"M%.2f %d l-4 -8 h8 z\" "
					"fill=\"%s\"><title>substitution at step %" PRId64 " (slot %u)</title></path>\n",
					t->cols[i].step, x, y_grid - 2, svg_cell_fill[CELL_SUBST], t->cols[i].step, s);
				break;
			}
	fprintf(f, "</g>\n");
	/* boundaries of files, runs and processes */
	fprintf(f, "<g class=\"boundaries\">\n");
	for (i = 0; i < t->n_bounds; i++) {
		const struct svg_bound *b = &t->bounds[i];
		double x = SVG_TL_X(b->merge), xs = SVG_MARGIN_L + (st->merges ? strip_w * (double)b->merge /
							 (double)st->merges : 0);

		/* in the strip, where every merge is */
		fprintf(f, "<line class=\"boundary-strip\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" "
			"stroke=\"#333333\"/>\n", xs, y_strip, xs, y_strip + 3 * strip_h);
		if (b->merge >= n_cols)
			continue;   /* past the columns drawn */
		fprintf(f, "<line class=\"boundary\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#333333\" "
			"stroke-dasharray=\"3,3\"><title>", x, y_grid - 12, x, y_axis + 4);
		svg_escape(f, b->label);
		fprintf(f, "</title></line>\n<text class=\"boundary-label\" x=\"%.2f\" y=\"%d\" font-size=\"10\">", x + 2,
			y_grid - 12 - (int)(i % 2) * 10);   /* neighbours' names staggered */
		svg_escape(f, b->label);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "</g>\n");
	/* step ticks: the step of every ~100 pixels' column */
	if (n_cols) {
		size_t every = (size_t)ceil(100.0 / col_w);

		if (every < 1)
			every = 1;
		fprintf(f, "<g class=\"ticks\">\n");
		for (i = 0; i < n_cols; i += every) {
			double x = SVG_TL_X(i) + col_w / 2;

			fprintf(f, "<line class=\"tick\" x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%d\" stroke=\"#666666\"/>"
				"<text x=\"%.2f\" y=\"%d\" text-anchor=\"middle\" font-size=\"10\">%" PRId64 "</text>\n",
				x, y_axis, x, y_axis + 5, x, y_axis + 16, t->cols[i].step);
		}
		fprintf(f, "</g>\n<text x=\"%d\" y=\"%d\">merge events in order (%zu drawn), labelled by step: "
			"step %" PRId64 " to step %" PRId64 "</text>\n", SVG_MARGIN_L, y_axis + 32, n_cols,
			t->cols[0].step, t->cols[n_cols - 1].step);
	}
	{
		int y = h - 12, x = SVG_MARGIN_L;
		static const int order[] = { CELL_ACTIVE, CELL_TAKEN, CELL_UNVERIFIED, CELL_SUBST, CELL_PREVENTED,
					     CELL_FORGONE, CELL_REFUSED };

		for (k = 0; k < (int)(sizeof(order) / sizeof(order[0])); k++, x += 122) {
			static const char *const name[CELL__N] = { "", "active", "taken", "taken, unknown",
				"substitution", "prevented", "forgone", "refused, unknown" };

			fprintf(f, "<rect class=\"legend\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
				"<text x=\"%d\" y=\"%d\">%s</text>\n", x, y - 10, svg_cell_fill[order[k]], x + 16, y,
				name[order[k]]);
		}
	}
	fprintf(f, "</svg>\n");
}

enum status svg_timeline(FILE *f, const char *path, const struct svg_timeline_opts *o,
			 struct svg_timeline_stats *st, struct status_info *si)
{
	struct svg_tl *t = NULL;
	enum status rst;

	memset(st, 0, sizeof(*st));
	rst = svg_tl_new(&t, o, si);
	if (rst)
		return rst;
	rst = svg_tl_add(t, path, NULL, NULL, 0, si);
	if (!rst) {
		*st = t->st;
		svg_tl_draw(t, f, true);
	}
	svg_tl_free(t);
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
