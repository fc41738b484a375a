/*
 * replay.c - the replay: each file is read into a job of its own (its
 * processes, counts, notes, explained steps), then merged into the totals in
 * file order, so that reading files in parallel gives what reading them one
 * after another gives, message for message. What was found is said by
 * replay_report.c; reports are added up by replay_combine.c.
 */
#include "replay/replay_priv.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/jsonw.h"
#include "base/rate.h"

/* --- small helpers -------------------------------------------------------- */

static uint64_t mix64(uint64_t a, uint64_t b)
{
	uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull + (a << 6) + (a >> 2));

	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ull;
	return x ^ (x >> 29);
}

/* Finds (a, b) in a seen table; adds it for `file` when absent. Returns the earlier file or SIZE_MAX. */
static size_t seen_check(struct replay_seen **tab, size_t *n, size_t *cap, uint64_t a, uint64_t b,
			 size_t file, bool add)
{
	uint64_t key = mix64(a, b);
	size_t i, mask;

	if (*cap) {
		mask = *cap - 1;
		for (i = key & mask; (*tab)[i].key; i = (i + 1) & mask)
			if ((*tab)[i].key == key && (*tab)[i].a == a && (*tab)[i].b == b)
				return (*tab)[i].file;
	}
	if (!add)
		return SIZE_MAX;
	if ((*n + 1) * 2 > *cap) {
		size_t ncap = *cap ? *cap * 2 : 64, k;
		struct replay_seen *nt = calloc(ncap, sizeof(*nt));
		if (!nt)
			return SIZE_MAX;   /* not remembered: a later copy would be counted again */
		for (k = 0; k < *cap; k++) {
			if (!(*tab)[k].key)
				continue;
			for (i = (*tab)[k].key & (ncap - 1); nt[i].key; i = (i + 1) & (ncap - 1))
				;
			nt[i] = (*tab)[k];
		}
		free(*tab);
		*tab = nt;
		*cap = ncap;
	}
	mask = *cap - 1;
	for (i = key & mask; (*tab)[i].key; i = (i + 1) & mask)
		;
	(*tab)[i] = (struct replay_seen){ key ? key : 1, a, b, file };
	(*n)++;
	return SIZE_MAX;
}

/* a - b for any int64, as a sign and a magnitude (65 bits). */
static void replay_gap(int64_t a, int64_t b, int *neg, uint64_t *mag)
{
	*neg = a < b;
	*mag = a >= b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

void replay_stats_add(struct audit_reader_stats *d, const struct audit_reader_stats *s)
{
	d->lines += s->lines;
	d->blank += s->blank;
	d->events += s->events;
	d->other_events += s->other_events;
	d->malformed += s->malformed;
	d->ignored += s->ignored;
	d->capture_records += s->capture_records;
	d->capture_lost += s->capture_lost;
	d->capture_uncertain += s->capture_uncertain;
	d->uncertain_events += s->uncertain_events;
	d->partial += s->partial;
	d->invalid_utf8 += s->invalid_utf8;
	d->bytes += s->bytes;
	d->log_audit_lines += s->log_audit_lines;
	d->other_lines += s->other_lines;
	d->vllm_lines += s->vllm_lines;
}

void replay_gate_add(struct replay_gate *d, const struct replay_gate *s)
{
	d->events += s->events;
	d->refused += s->refused;
	d->forced += s->forced;
}

/* --- new / free ------------------------------------------------------------ */

struct replay *replay_new(const struct replay_opts *opts)
{
	struct replay *r;

	if (!opts->n_rules || opts->n_rules > RULE_MAX_LIST)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->opts = *opts;
	memcpy(r->rules, opts->rules, opts->n_rules * sizeof(*opts->rules));
	r->opts.rules = r->rules;
	if (!r->opts.max_sites)
		r->opts.max_sites = 1000;
	if (!r->opts.diag)
		r->opts.diag = stderr;
	r->total = tally_new(r->rules, opts->n_rules, opts->max_pos);
	if (opts->progress) {
		r->prog = calloc(1, sizeof(*r->prog));
		if (r->prog)
			atomic_flag_clear(&r->prog->drawing);
	}
	if (!r->total || (opts->progress && !r->prog)) {
		replay_free(r);
		return NULL;
	}
	return r;
}

static void explained_free(struct replay_explained *e, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(e[i].text);
		free(e[i].json);
	}
}

void replay_free(struct replay *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->n_files; i++) {
		free(r->files[i].sites);
		free((char *)r->files[i].path);
	}
	for (i = 0; i < r->n_rows; i++)
		free((void *)r->rows[i].counts);
	explained_free(r->explained, r->n_explained);
	free(r->rows);
	free(r->files);
	free(r->seen_id);
	free(r->seen_content);
	audit_reader_free(r->reader);
	tally_free(r->total);
	while (r->slab) {
		struct replay_slab *next = r->slab->next;
		free(r->slab);
		r->slab = next;
	}
	free(r->prog);
	free(r);
}

static void job_init(struct replay_job *j, const struct replay *r, const char *path)
{
	memset(j, 0, sizeof(*j));
	j->r = r;
	j->path = path;
}

static void job_release(struct replay_job *j)
{
	size_t i;

	for (i = 0; i < j->n_procs; i++) {
		tally_free(j->procs[i].tally);
		free(j->procs[i].res_value);
		free(j->procs[i].res_step);
		free(j->procs[i].res_seen);
	}
	free(j->procs);
	free(j->cfgs);
	free(j->diag);
	free(j->sites);
	explained_free(j->explained, j->n_explained);
	j->procs = NULL;
	j->cfgs = NULL;
	j->diag = NULL;
	j->sites = NULL;
	j->n_procs = j->n_cfgs = j->n_explained = 0;
}

/* --- one file -------------------------------------------------------------- */

static void job_observe(void *ctx, const struct tally_subst *s)
{
	struct replay_job *j = ctx;

	if (!j->r->opts.keep_sites)
		return;
	if (j->n_sites == j->r->opts.max_sites) {
		j->sites_dropped++;
		return;
	}
	if (ALLOC_GROW_MAX(j->sites, j->n_sites + 1, j->cap_sites, j->r->opts.max_sites) < 0) {
		j->sites_dropped++;
		return;
	}
	j->sites[j->n_sites++] = (struct replay_site){ s->line, s->m->step, s->slot, s->rule,
							s->evidence };
}

static bool cfg_applies(const struct replay_cfg *c, const struct replay_proc *p)
{
	if (c->has_pid != p->has_pid || (c->has_pid && c->pid != p->pid))
		return false;
	return !c->has_rank || (p->has_rank && c->rank == p->rank);
}

/*
 * The process a line belongs to: its capture pid and the event's rank and
 * data-parallel chunk. NULL when out of memory or beyond REPLAY_MAX_PROCS.
 */
static struct replay_proc *job_proc(struct replay_job *j, const struct audit_item *it,
				    bool has_rank, int64_t rank, bool has_dp, int64_t dp)
{
	struct replay_proc *p;
	struct config_event cfg = { 0 };
	size_t i;

#define PROC_IS(p) ((p)->has_pid == it->has_pid && (!(p)->has_pid || (p)->pid == it->pid) && \
		     (p)->has_rank == has_rank && (!has_rank || (p)->rank == rank) && \
		     (p)->has_dp == has_dp && (!has_dp || (p)->dp == dp))
	/* the process of the line before, most of the time */
	if (j->n_procs && PROC_IS(&j->procs[j->last_proc]))
		return &j->procs[j->last_proc];
	for (i = 0; i < j->n_procs; i++)
		if (PROC_IS(&j->procs[i])) {
			j->last_proc = i;
			return &j->procs[i];
		}
#undef PROC_IS
	if (ALLOC_GROW_MAX(j->procs, j->n_procs + 1, j->cap_procs, (size_t)REPLAY_MAX_PROCS) < 0)
		return NULL;
	p = &j->procs[j->n_procs];
	memset(p, 0, sizeof(*p));
	p->has_pid = it->has_pid;
	p->pid = it->has_pid ? it->pid : 0;
	p->has_rank = has_rank;
	p->rank = has_rank ? rank : 0;
	p->has_dp = has_dp;
	p->dp = has_dp ? dp : 0;
	p->tally = tally_new(j->r->rules, j->r->opts.n_rules, j->r->opts.max_pos);
	if (!p->tally)
		return NULL;
	tally_set_observer(p->tally, job_observe, j);
	/* the config in force for it: the last one of its process so far (0: none) */
	for (i = j->n_cfgs; i-- > 0;)
		if (cfg_applies(&j->cfgs[i], p)) {
			cfg.has_max_model_len = true;
			cfg.max_model_len = j->cfgs[i].max_model_len;
			tally_config(p->tally, &cfg);
			break;
		}
	j->last_proc = j->n_procs++;
	return p;
}

static void job_config(struct replay_job *j, const struct audit_item *it,
		       const struct config_event *c)
{
	struct replay_cfg cfg = { it->has_pid, c->has_rank, it->has_pid ? it->pid : 0,
				  c->has_rank ? c->rank : 0, c->max_model_len };
	size_t i;

	if (!c->has_max_model_len)
		return;   /* says nothing about the bound: the one in force stays */
	for (i = 0; i < j->n_procs; i++)
		if (cfg_applies(&cfg, &j->procs[i]))
			tally_config(j->procs[i].tally, c);
	/* kept (one entry per key) for processes that appear later */
	for (i = 0; i < j->n_cfgs; i++)
		if (j->cfgs[i].has_pid == cfg.has_pid && j->cfgs[i].pid == cfg.pid &&
		    j->cfgs[i].has_rank == cfg.has_rank && j->cfgs[i].rank == cfg.rank) {
			memmove(&j->cfgs[i], &j->cfgs[i + 1], (j->n_cfgs - i - 1) * sizeof(cfg));
			j->n_cfgs--;
			break;
		}
	if (ALLOC_GROW_MAX(j->cfgs, j->n_cfgs + 1, j->cap_cfgs, (size_t)REPLAY_MAX_PROCS) < 0)
		return;   /* more configs than processes: the existing ones were updated above */
	j->cfgs[j->n_cfgs++] = cfg;
}

static void explain_slot_drift(const struct replay_proc *p, const struct merge_event *m,
			       uint32_t s, char *buf, size_t n)
{
	int dneg, sneg;
	uint64_t dv, ds;

	buf[0] = '\0';
	if (s >= p->res_cap || !p->res_seen[s] || m->step <= p->res_step[s])
		return;
	replay_gap(m->dev_pos[s], p->res_value[s], &dneg, &dv);
	replay_gap(m->step, p->res_step[s], &sneg, &ds);
	if (dv == 0)
		snprintf(buf, n, "unchanged since step %" PRId64 " (%" PRIu64 " steps): resident in "
			 "the buffer", p->res_step[s], ds);
	else if (!dneg && dv == ds)
		snprintf(buf, n, "grew by %" PRIu64 " over the %" PRIu64 " steps since step %" PRId64
			 ": a plus_one applied each step to a resident stale buffer", dv, ds,
			 p->res_step[s]);
}

const char *replay_proc_label(bool has_pid, int64_t pid, bool has_rank, int64_t rank, bool has_dp,
			      int64_t dp, char *buf, size_t n)
{
	size_t o = 0;

	buf[0] = '\0';
	if (has_pid)
		o += (size_t)snprintf(buf + o, n - o, "pid %" PRId64, pid);
	if (has_rank && o < n)
		o += (size_t)snprintf(buf + o, n - o, "%srank %" PRId64, o ? " " : "", rank);
	if (has_dp && o < n)
		o += (size_t)snprintf(buf + o, n - o, "%sdp %" PRId64, o ? " " : "", dp);
	if (!o)
		snprintf(buf, n, "no pid");
	return buf;
}

/* Describes merge event m, slot by slot, as text and JSON; stores both. */
static void job_explain(struct replay_job *j, const struct replay_proc *p,
			const struct merge_event *m, long line, int64_t max_pos)
{
	const struct replay *r = j->r;
	struct replay_explained *ex;
	struct rule_ctx ctx = { .max_pos = max_pos };
	int64_t gpos = max_pos > 0 ? max_pos : TALLY_DEFAULT_GARBAGE_POS;
	uint8_t *take = NULL, *allowed = NULL;
	char why[512], drift[256], d1[32], who[96];
	size_t tlen = 0, jlen = 0, i;
	FILE *tf = NULL, *jf = NULL;
	struct jsonw w;
	uint32_t s;

	if (j->n_explained == REPLAY_EXPLAIN_MAX) {
		j->explain_dropped++;
		return;
	}
	ex = &j->explained[j->n_explained];
	take = malloc(m->n_host ? m->n_host : 1);
	allowed = malloc(m->n_host ? m->n_host : 1);
	tf = open_memstream(&ex->text, &tlen);
	jf = open_memstream(&ex->json, &jlen);
	if (!tf || !jf || !take || !allowed) {
		if (tf)
			fclose(tf);
		if (jf)
			fclose(jf);
		free(ex->text);
		free(ex->json);
		ex->text = ex->json = NULL;
		j->explain_dropped++;
		goto out;
	}
	j->n_explained++;
	jsonw_init(&w, jf);
	jsonw_obj(&w);
	jsonw_kstr(&w, "file", j->path);
	jsonw_kint(&w, "line", line);
	if (p->has_pid)
		jsonw_kint(&w, "pid", p->pid);
	if (p->has_rank)
		jsonw_kint(&w, "rank", p->rank);
	if (p->has_dp)
		jsonw_kint(&w, "dp", p->dp);
	jsonw_kint(&w, "step", m->step);
	jsonw_kbool(&w, "reset_batch", m->reset_batch);
	jsonw_kbool(&w, "mode_switched", m->mode_switched);
	jsonw_kuint(&w, "host_slots", m->n_host);
	jsonw_kuint(&w, "dev_slots", m->n_dev);
	replay_proc_label(p->has_pid, p->pid, p->has_rank, p->rank, p->has_dp, p->dp, who, sizeof(who));
	fprintf(tf, "%s:%ld: merge at step %" PRId64 "%s%s, %u host slots, %u device slots%s%s%s\n",
		j->path, line, m->step, m->reset_batch ? " (reset_batch)" : "",
		m->mode_switched ? " (mode_switched)" : "", m->n_host, m->n_dev,
		p->has_pid || p->has_rank || p->has_dp ? " (" : "",
		p->has_pid || p->has_rank || p->has_dp ? who : "",
		p->has_pid || p->has_rank || p->has_dp ? ")" : "");
	if (m->has_buf_step)
		fprintf(tf, "  buffer written at step %" PRId64 " (%s steps before)\n", m->buf_step,
			rule_step_diff(m->step, m->buf_step, d1, sizeof(d1)));
	if (m->n_dev < m->n_host) {
		fprintf(tf, "  shape fallback: device buffer has %u slots, batch %u: no rule takes "
			"anything\n", m->n_dev, m->n_host);
		jsonw_kbool(&w, "shape_fallback", 1);
		jsonw_obj_end(&w);
		fclose(tf);
		fclose(jf);
		goto out;
	}
	jsonw_kbool(&w, "shape_fallback", 0);
	jsonw_key(&w, "slots");
	jsonw_arr(&w);
	for (s = 0; s < m->n_host; s++) {
		int stale = 0;
		enum evidence ev = evidence_slot(m, s, &stale);
		int64_t d = m->dev_pos[s];
		double f32;

		jsonw_obj(&w);
		jsonw_kuint(&w, "slot", s);
		jsonw_kint(&w, "host_pos", m->host_pos[s]);
		jsonw_kint(&w, "dev_pos", d);
		fprintf(tf, "  slot %u: host_pos %" PRId64 ", dev_pos %" PRId64, s, m->host_pos[s], d);
		if (s < m->n_host_tok) {
			fprintf(tf, ", host_tok %" PRId64, m->host_tok[s]);
			jsonw_kint(&w, "host_tok", m->host_tok[s]);
		}
		if (s < m->n_dev_tok) {
			fprintf(tf, ", dev_tok %" PRId64, m->dev_tok[s]);
			jsonw_kint(&w, "dev_tok", m->dev_tok[s]);
		}
		if (m->has_taken) {
			fprintf(tf, ", taken %s", m->taken[s] ? "yes" : "no");
			jsonw_kbool(&w, "taken", m->taken[s]);
		}
		fputc('\n', tf);
		if (d < -1 || d >= gpos) {
			int like = tally_float32_like(d);
			explain_slot_drift(p, m, s, drift, sizeof(drift));
			fprintf(tf, "    garbage position (>= %" PRId64 " or < -1)", gpos);
			jsonw_key(&w, "garbage");
			jsonw_obj(&w);
			if (tally_float32(d, &f32)) {
				fprintf(tf, "; as float32 bits it reads %.2f%s", f32,
					like ? " (float32-like)" : "");
				jsonw_kdouble(&w, "float32", f32);
			}
			jsonw_kbool(&w, "float32_like", like);
			if (drift[0]) {
				fprintf(tf, "; %s", drift);
				jsonw_kstr(&w, "drift", drift);
			}
			jsonw_obj_end(&w);
			fputc('\n', tf);
		}
		if (m->host_pos[s] == -1) {
			fprintf(tf, "    inactive: never counts\n");
			jsonw_kbool(&w, "active", 0);
			jsonw_obj_end(&w);
			continue;
		}
		jsonw_kbool(&w, "active", 1);
		evidence_why(m, s, why, sizeof(why));
		fprintf(tf, "    staleness: %s (evidence %s: %s)\n",
			ev == EVIDENCE_UNKNOWN ? "unknown" : stale ? "STALE" : "fresh",
			evidence_name(ev), why);
		jsonw_key(&w, "stale");
		if (ev == EVIDENCE_UNKNOWN)
			jsonw_null(&w);
		else
			jsonw_bool(&w, stale);
		jsonw_kstr(&w, "evidence", evidence_name(ev));
		jsonw_kstr(&w, "evidence_why", why);
		if (!rule_bare_take(m, s))
			fprintf(tf, "    positions do not match (dev_pos is neither host_pos nor "
				"host_pos + 1): no rule takes it\n");
		jsonw_key(&w, "rules");
		jsonw_obj(&w);
		for (i = 0; i < r->opts.n_rules; i++) {
			const struct rule *ru = &r->rules[i];
			enum rule_outcome o = rule_eval(ru, m, &ctx, take, allowed);
			const char *verdict;
			jsonw_key(&w, ru->name);
			jsonw_obj(&w);
			if (o == RULE_SKIPPED) {
				rule_missing(ru, m, &ctx, why, sizeof(why));
				if (rule_bare_take(m, s))
					fprintf(tf, "    %-16s skipped: needs %s\n", ru->name, why);
				jsonw_kstr(&w, "outcome", "skipped");
				jsonw_kstr(&w, "missing", why);
				jsonw_obj_end(&w);
				continue;
			}
			rule_why(ru, m, &ctx, s, why, sizeof(why));
			if (take[s])
				verdict = ev == EVIDENCE_UNKNOWN ? "takes (unverified)"
					: stale ? "takes: SUBSTITUTION" : "takes (fresh)";
			else if (rule_bare_take(m, s))
				verdict = ev == EVIDENCE_UNKNOWN ? "refuses (staleness unknown)"
					: stale ? "refuses: prevented" : "refuses: forgone";
			else
				verdict = "does not take";
			if (rule_bare_take(m, s))
				fprintf(tf, "    %-16s %s; %s\n", ru->name, verdict, why);
			jsonw_kstr(&w, "outcome", take[s] ? "take" : allowed[s] ? "no-match" : "refuse");
			jsonw_kstr(&w, "verdict", verdict);
			jsonw_kstr(&w, "why", why);
			jsonw_obj_end(&w);
		}
		jsonw_obj_end(&w);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_obj_end(&w);
	fclose(tf);
	fclose(jf);
out:
	free(take);
	free(allowed);
}

/* Remembers the garbage resident in each slot of p's buffer (for drift). */
static void proc_note_resident(struct replay_proc *p, const struct merge_event *m, int64_t max_pos)
{
	int64_t gpos = max_pos > 0 ? max_pos : TALLY_DEFAULT_GARBAGE_POS;
	uint32_t s;

	if (m->n_dev < m->n_host)
		return;
	if (m->n_host > p->res_cap) {
		/* three arrays, one capacity, at most a slot count: it moves once all have grown */
		size_t cap_v = p->res_cap, cap_st = p->res_cap, cap_seen = p->res_cap;

		if (ALLOC_GROW_MAX(p->res_value, m->n_host, cap_v, UINT32_MAX) < 0 ||
		    ALLOC_GROW_MAX(p->res_step, m->n_host, cap_st, cap_v) < 0 ||
		    ALLOC_GROW_MAX(p->res_seen, m->n_host, cap_seen, cap_v) < 0)
			return;   /* no drift reading for this process: only --explain's words are lost */
		memset(p->res_seen + p->res_cap, 0, cap_seen - p->res_cap);
		p->res_cap = (uint32_t)cap_seen;
	}
	for (s = 0; s < m->n_host; s++) {
		int64_t d = m->dev_pos[s];
		if (d < -1 || d >= gpos) {
			p->res_value[s] = d;
			p->res_step[s] = m->step;
			p->res_seen[s] = 1;
		} else {
			p->res_seen[s] = 0;
		}
	}
}

static void job_diag(struct replay_job *j, const struct status_info *si)
{
	char buf[1024];

	if (j->n_diag == REPLAY_MALFORMED_SHOWN)
		return;
	if (!j->diag && !(j->diag = calloc(REPLAY_MALFORMED_SHOWN, sizeof(*j->diag))))
		return;
	snprintf(j->diag[j->n_diag++], sizeof(j->diag[0]), "%s",
		 status_info_format(si, buf, sizeof(buf)));
}

static void job_end(struct replay_job *j, const struct audit_item *it)
{
	struct replay_end *e;

	if (!it->has_pid || !event_str_is(it->end.how, it->end.how_len, "signal"))
		return;
	if (j->n_ends == REPLAY_ENDS_SHOWN) {
		j->ends_dropped++;
		return;
	}
	e = &j->ends[j->n_ends++];
	memset(e, 0, sizeof(*e));
	e->pid = it->pid;
	e->signal = it->end.has_signal ? it->end.signal : -1;
	if (it->end.by)
		snprintf(e->by, sizeof(e->by), "%.*s", (int)it->end.by_len, it->end.by);
}

/* One item of j's file: an end, a config, a merge or a gate decision. */
static void job_item(struct replay_job *j, const struct audit_item *it)
{
	const struct replay *r = j->r;
	struct replay_proc *p;
	const struct event *e;

	if (it->has_end)
		job_end(j, it);
	if (!it->has_event)
		return;
	e = &it->event;
	if (e->kind == EVENT_CONFIG) {
		job_config(j, it, &e->u.config);
	} else if (e->kind == EVENT_MERGE) {
		const struct merge_event *m = &e->u.merge;
		int64_t max_pos;
		if (!(p = job_proc(j, it, m->has_rank, m->rank, m->has_dp, m->dp))) {
			j->procs_dropped++;
			return;
		}
		max_pos = tally_max_pos(p->tally);
		if (r->opts.explain && m->step == r->opts.explain_step)
			job_explain(j, p, m, it->line, max_pos);
		tally_merge(p->tally, m, j->path, it->line);
		j->prog_merges++;
		if (r->opts.explain)
			proc_note_resident(p, m, max_pos);
	} else if (e->kind == EVENT_GATE) {
		const struct gate_event *g = &e->u.gate;
		if (!(p = job_proc(j, it, g->has_rank, g->rank, g->has_dp, g->dp))) {
			j->procs_dropped++;
			return;
		}
		p->gate.events++;
		if (g->has_keep && !g->keep)
			p->gate.refused++;
		if (g->has_keep && g->keep && g->force)
			p->gate.forced++;
	}
}

/* Adds what j read since it last did to the shared counts; draws if no other thread is. */
static void job_progress(struct replay_job *j, const struct audit_reader *rd)
{
	struct replay_prog *pr = j->r->prog;
	uint64_t b = audit_reader_stats(rd)->bytes;

	atomic_fetch_add(&pr->bytes, b - j->prog_bytes);
	atomic_fetch_add(&pr->merges, j->prog_merges);
	j->prog_bytes = b;
	j->prog_merges = 0;
	if (!atomic_flag_test_and_set(&pr->drawing)) {
		progress_update(j->r->opts.progress, atomic_load(&pr->bytes), atomic_load(&pr->merges));
		atomic_flag_clear(&pr->drawing);
	}
}

/* Reads j's file to the end with *rd (opened or reopened here). */
static void job_read(struct replay_job *j, struct audit_reader **rd)
{
	const struct replay *r = j->r;
	struct audit_reader_opts ro = { .max_line = r->opts.max_line, .max_depth = r->opts.max_depth,
					.max_slots = r->opts.max_slots, .scan = !r->opts.tree,
					.want = r->opts.explain ? EVENT_WANT_TOKENS : 0,
					.no_hash = r->single_input };
	struct audit_item it;
	struct status_info lsi;
	enum status st;

	status_info_clear(&j->si);
	st = *rd ? audit_reader_reopen(*rd, j->path, &j->si)
		 : audit_reader_open(rd, j->path, &ro, &j->si);
	if (st) {
		j->unreadable = true;
		j->st = st;
		return;
	}
	/* cleared once, and again after each error: the reader fills it only on one */
	status_info_clear(&lsi);
	for (;;) {
		st = audit_reader_next(*rd, &it, &lsi);
		if (st == STATUS_EOF) {
			st = STATUS_OK;
			break;
		}
		if (st == STATUS_PARSE || st == STATUS_LIMIT) {
			j->malformed++;
			if (r->opts.strict) {
				j->si = lsi;
				j->strict_stop = true;
				break;
			}
			job_diag(j, &lsi);
			status_info_clear(&lsi);
			continue;
		}
		if (st) {
			j->si = lsi;
			if (audit_reader_stats(*rd)->truncated)
				j->truncated = true;
			else
				j->unreadable = true;
			break;
		}
		job_item(j, &it);
		if (r->prog && j->prog_merges >= 256)
			job_progress(j, *rd);
	}
	if (r->prog)
		job_progress(j, *rd);
	j->st = st;
	j->stats = *audit_reader_stats(*rd);
	j->hash = audit_reader_content_hash(*rd);
}

/* --- merging a file into the replay, in file order ------------------------- */

struct replay_file *replay_new_row(struct replay *r, const char *path)
{
	struct replay_file *f;

	if (ALLOC_GROW(r->files, r->n_files + 1, r->cap_files) < 0)
		return NULL;
	f = &r->files[r->n_files];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	r->n_files++;
	return f;
}

/* The identity of path (stdin for "-"), or 0 when it cannot be had. */
static int replay_identity(const char *path, uint64_t *dev, uint64_t *ino)
{
	struct stat st;

	if (strcmp(path, "-") ? stat(path, &st) : fstat(0, &st))
		return 0;
	*dev = (uint64_t)st.st_dev;
	*ino = (uint64_t)st.st_ino;
	return 1;
}

/* The earlier file path is the same file as (device and inode), or SIZE_MAX; remembers path's. */
static size_t replay_same_file(struct replay *r, const char *path, size_t file)
{
	uint64_t dev, ino;

	if (!replay_identity(path, &dev, &ino))
		return SIZE_MAX;
	return seen_check(&r->seen_id, &r->n_seen_id, &r->cap_seen_id, dev, ino, file, true);
}

static void replay_note_dup(struct replay *r, struct replay_file *f, enum replay_dup how,
			    size_t earlier)
{
	f->dup = how;
	f->dup_of = earlier;
	r->n_dups++;
	fprintf(r->opts.diag, "%s: the same %s as %s: counted once\n", f->path,
		how == REPLAY_DUP_INODE ? "file (device and inode)" : "content",
		r->files[earlier].path);
}

/* The row of process p (counts: its own copy, or the live ones). */
static void proc_row_fill(struct replay_proc_row *row, const struct replay_proc *p, size_t file,
			  const struct tally_counts *counts)
{
	memset(row, 0, sizeof(*row));
	row->file = file;
	row->has_pid = p->has_pid;
	row->has_rank = p->has_rank;
	row->has_dp = p->has_dp;
	row->pid = p->pid;
	row->rank = p->rank;
	row->dp = p->dp;
	row->gate = p->gate;
	row->events_with_taken = tally_events_with_taken(p->tally);
	row->garbage = tally_garbage(p->tally)->count;
	row->float32_like = tally_garbage(p->tally)->float32_like;
	row->counts = counts;
}

static void replay_keep_row(struct replay *r, const struct replay_job *j, size_t file,
			    const struct replay_proc *p)
{
	struct replay_proc_row *row;
	struct tally_counts *c;
	size_t i;

	if (ALLOC_GROW_MAX(r->rows, r->n_rows + 1, r->cap_rows, (size_t)REPLAY_ROWS_MAX) < 0) {
		r->rows_dropped++;
		return;
	}
	c = calloc(r->opts.n_rules, sizeof(*c));
	if (!c) {
		r->rows_dropped++;
		return;
	}
	for (i = 0; i < r->opts.n_rules; i++)
		c[i] = *tally_counts(p->tally, i);
	row = &r->rows[r->n_rows++];
	proc_row_fill(row, p, file, c);
	(void)j;
}

/* n_rules zeroed counts for one file, from r's current block (a new one when it is full). */
static struct tally_counts *replay_slab_counts(struct replay *r)
{
	size_t n = r->opts.n_rules, per = REPLAY_SLAB_FILES * n;
	struct replay_slab *b = r->slab;

	if (!b || b->used + n > per) {
		b = calloc(1, sizeof(*b) + per * sizeof(b->c[0]));
		if (!b)
			return NULL;
		b->next = r->slab;
		r->slab = b;
	}
	b->used += n;
	return &b->c[b->used - n];
}

/*
 * Merges job j (the file of row index `file`) into r. The processes of the
 * file are added up first, as events of one file (the first contradiction is
 * the one on the earliest line, whichever process holds it), then the file
 * into the totals, after every earlier file.
 */
static void replay_merge(struct replay *r, struct replay_job *j, struct replay_file *f)
{
	size_t file = (size_t)(f - r->files), i, k;
	struct tally_counts *counts = NULL, fc[RULE_MAX_LIST];
	struct tally_garbage fg;
	uint64_t events_with_taken = 0;
	size_t earlier;

	f->unreadable = j->unreadable;
	f->truncated = j->truncated;
	f->malformed = j->malformed;
	f->stats = j->stats;
	if (!j->unreadable && !j->truncated && !j->strict_stop && j->stats.bytes > 0 &&
	    !r->single_input) {
		earlier = seen_check(&r->seen_content, &r->n_seen_content, &r->cap_seen_content,
				     j->hash, j->stats.bytes, file, true);
		if (earlier != SIZE_MAX) {
			replay_note_dup(r, f, REPLAY_DUP_CONTENT, earlier);
			memset(&f->stats, 0, sizeof(f->stats));
			f->malformed = 0;
			return;
		}
	}
	for (i = 0; i < j->n_diag; i++)
		if (r->shown++ < REPLAY_MALFORMED_SHOWN)
			fprintf(r->opts.diag, "%s\n", j->diag[i]);
	if (!j->unreadable && !j->strict_stop && !j->stats.events) {
		char what[512];
		audit_reader_describe(&j->stats, what, sizeof(what));
		f->no_audit = true;
		r->n_no_audit++;
		fprintf(r->opts.diag, "%s: no audit event: %s\n", f->path, what);
	}
	if (j->stats.bom && !r->n_bom++)
		fprintf(r->opts.diag, "%s: a UTF-8 byte order mark at the start was skipped (said once "
			"for all files)\n", f->path);
	r->malformed += j->malformed;
	r->n_unreadable += j->unreadable;
	r->n_truncated += j->truncated;
	r->procs_dropped += j->procs_dropped;
	replay_stats_add(&r->stats, &j->stats);
	memset(fc, 0, sizeof(fc));
	memset(&fg, 0, sizeof(fg));
	for (k = 0; k < r->opts.n_rules; k++)
		fc[k].fp_first_mismatch_step = -1;
	for (i = 0; i < j->n_procs; i++) {
		const struct replay_proc *p = &j->procs[i];
		for (k = 0; k < r->opts.n_rules; k++)
			tally_add_counts_interleaved(&fc[k], tally_counts(p->tally, k));
		tally_add_garbage(&fg, tally_garbage(p->tally));
		events_with_taken += tally_events_with_taken(p->tally);
		replay_gate_add(&f->gate, &p->gate);
		if (j->n_procs > 1)
			replay_keep_row(r, j, file, p);
	}
	tally_absorb_counts(r->total, fc, r->opts.n_rules, &fg, events_with_taken);
	if (r->opts.keep_sites && (counts = replay_slab_counts(r)))
		memcpy(counts, fc, r->opts.n_rules * sizeof(*counts));
	replay_gate_add(&r->gate, &f->gate);
	f->n_procs = j->n_procs;
	f->counts = counts;
	/* sites: the job's own, within the cap over all files */
	if (j->n_sites && r->n_sites_total < REPLAY_SITES_TOTAL) {
		size_t take = j->n_sites;
		if (take > REPLAY_SITES_TOTAL - r->n_sites_total)
			take = REPLAY_SITES_TOTAL - r->n_sites_total;
		f->sites = j->sites;
		f->n_sites = take;
		f->sites_dropped = j->sites_dropped + (j->n_sites - take);
		r->n_sites_total += take;
		j->sites = NULL;
	} else {
		f->sites_dropped = j->sites_dropped + j->n_sites;
	}
	for (i = 0; i < j->n_explained; i++) {
		if (r->n_explained == REPLAY_EXPLAIN_MAX) {
			r->explain_dropped++;
			continue;
		}
		r->explained[r->n_explained++] = j->explained[i];
		j->explained[i].text = j->explained[i].json = NULL;
	}
	r->explain_dropped += j->explain_dropped;
	for (i = 0; i < j->n_ends; i++) {
		if (r->n_ends == REPLAY_ENDS_SHOWN) {
			r->ends_dropped++;
			continue;
		}
		r->ends[r->n_ends] = j->ends[i];
		r->ends[r->n_ends++].file = file;
	}
	r->ends_dropped += j->ends_dropped;
}

enum status replay_add_file(struct replay *r, const char *path, struct status_info *si)
{
	struct replay_job j;
	struct replay_file *f;
	size_t earlier;
	enum status st;

	f = replay_new_row(r, path);
	if (!f)
		return status_set(si, STATUS_NOMEM, "out of memory");
	earlier = replay_same_file(r, path, r->n_files - 1);
	if (earlier != SIZE_MAX) {
		replay_note_dup(r, f, REPLAY_DUP_INODE, earlier);
		return STATUS_OK;
	}
	job_init(&j, r, path);
	job_read(&j, &r->reader);
	replay_merge(r, &j, f);
	st = j.st;
	if (st && si)
		*si = j.si;
	job_release(&j);
	return st;
}

/* --- many files, in parallel ----------------------------------------------- */

struct replay_pool {
	struct replay *r;
	const char *const *paths;
	size_t n;
	/*
	 * A ring of `window` jobs: file i is read into jobs[i % window] by one
	 * worker and merged by the caller, and a worker starts file i only once
	 * file i - window has been merged, so memory does not grow with n.
	 */
	struct replay_job *jobs;
	size_t *dup_of;              /* [n]: the earlier file each is the same file as, or SIZE_MAX */
	size_t next;                 /* the next file a worker takes */
	size_t merged;               /* files merged so far: workers stay within a window of it */
	size_t window;
	bool stop;
	pthread_mutex_t mu;
	pthread_cond_t cv_done, cv_room;
};

static void *replay_worker(void *arg)
{
	struct replay_pool *pl = arg;
	struct audit_reader *rd = NULL;

	for (;;) {
		size_t i;
		pthread_mutex_lock(&pl->mu);
		while (!pl->stop && pl->next < pl->n && pl->next >= pl->merged + pl->window)
			pthread_cond_wait(&pl->cv_room, &pl->mu);
		if (pl->stop || pl->next >= pl->n) {
			pthread_mutex_unlock(&pl->mu);
			break;
		}
		i = pl->next++;
		/* the slot is free (its last file merged); set up under the lock the merge reads it by */
		job_init(&pl->jobs[i % pl->window], pl->r, pl->paths[i]);
		pl->jobs[i % pl->window].dup_of = pl->dup_of[i];
		pl->jobs[i % pl->window].skip = pl->dup_of[i] != SIZE_MAX;
		pthread_mutex_unlock(&pl->mu);
		if (!pl->jobs[i % pl->window].skip)
			job_read(&pl->jobs[i % pl->window], &rd);
		pthread_mutex_lock(&pl->mu);
		pl->jobs[i % pl->window].done = true;
		pthread_cond_broadcast(&pl->cv_done);
		pthread_mutex_unlock(&pl->mu);
	}
	audit_reader_free(rd);
	return NULL;
}

enum status replay_add_files(struct replay *r, const char *const *paths, size_t n, unsigned jobs,
			     replay_status_fn fn, void *ctx)
{
	struct replay_pool pl;
	pthread_t th[REPLAY_MAX_JOBS];
	unsigned n_th = 0, t;
	enum status ret = STATUS_OK;
	size_t i;

	if (jobs <= 1 || n <= 1) {
		/* one input in a run that has no other: no content to compare it with */
		r->single_input = n == 1 && r->n_files == 0;
		for (i = 0; i < n; i++) {
			struct status_info si;
			enum status st;
			status_info_clear(&si);
			st = replay_add_file(r, paths[i], &si);
			if (st && fn)
				fn(ctx, paths[i], st, &si);
			if (st && st != STATUS_IO) {
				ret = st;    /* out of memory, or --strict */
				break;
			}
		}
		if (r->single_input) {
			/* its reader skipped the hash: a later file needs one that does not */
			audit_reader_free(r->reader);
			r->reader = NULL;
			r->single_input = false;
		}
		return ret;
	}
	if (jobs > REPLAY_MAX_JOBS)
		jobs = REPLAY_MAX_JOBS;
	memset(&pl, 0, sizeof(pl));
	pl.r = r;
	pl.paths = paths;
	pl.n = n;
	pl.window = (size_t)jobs * REPLAY_AHEAD;
	pl.jobs = calloc(pl.window, sizeof(*pl.jobs));
	pl.dup_of = calloc(n, sizeof(*pl.dup_of));
	if (!pl.jobs || !pl.dup_of) {
		free(pl.jobs);
		free(pl.dup_of);
		return STATUS_NOMEM;
	}
	pthread_mutex_init(&pl.mu, NULL);
	pthread_cond_init(&pl.cv_done, NULL);
	pthread_cond_init(&pl.cv_room, NULL);
	/* decided before any file is read, in file order, as the serial path decides it */
	for (i = 0; i < n; i++)
		pl.dup_of[i] = replay_same_file(r, paths[i], r->n_files + i);
	for (t = 0; t < jobs; t++)
		if (!pthread_create(&th[n_th], NULL, replay_worker, &pl))
			n_th++;
	if (!n_th)
		ret = STATUS_NOMEM;
	/* the merge, in file order, as replay_add_file would have done it */
	for (i = 0; i < n && n_th; i++) {
		struct replay_job *j = &pl.jobs[i % pl.window];
		struct replay_file *f = replay_new_row(r, paths[i]);

		if (!f) {
			ret = STATUS_NOMEM;
			break;
		}
		pthread_mutex_lock(&pl.mu);
		while (pl.next <= i || !j->done)
			pthread_cond_wait(&pl.cv_done, &pl.mu);
		pthread_mutex_unlock(&pl.mu);
		if (j->skip) {
			replay_note_dup(r, f, REPLAY_DUP_INODE, j->dup_of);
		} else {
			replay_merge(r, j, f);
			if (j->st && fn)
				fn(ctx, paths[i], j->st, &j->si);
		}
		job_release(j);
		pthread_mutex_lock(&pl.mu);
		j->done = false;
		pl.merged = i + 1;
		if (!j->skip && j->st && j->st != STATUS_IO) {
			ret = j->st;
			pl.stop = true;
		}
		pthread_cond_broadcast(&pl.cv_room);
		pthread_mutex_unlock(&pl.mu);
		if (pl.stop)
			break;
	}
	pthread_mutex_lock(&pl.mu);
	pl.stop = true;
	pthread_cond_broadcast(&pl.cv_room);
	pthread_mutex_unlock(&pl.mu);
	for (t = 0; t < n_th; t++)
		pthread_join(th[t], NULL);
	for (i = 0; i < pl.window; i++)
		job_release(&pl.jobs[i]);
	pthread_cond_destroy(&pl.cv_done);
	pthread_cond_destroy(&pl.cv_room);
	pthread_mutex_destroy(&pl.mu);
	free(pl.jobs);
	free(pl.dup_of);
	return ret;
}

/* --- one source fed line by line (watch) ----------------------------------- */

struct replay_stream {
	struct replay_job job;
	struct audit_reader *rd;
	struct audit_item it;
};

struct replay_stream *replay_stream_new(const struct replay *r, const char *name)
{
	struct replay_stream *s = calloc(1, sizeof(*s));
	struct audit_reader_opts ro = { .max_line = r->opts.max_line, .max_depth = r->opts.max_depth,
					.max_slots = r->opts.max_slots, .scan = !r->opts.tree,
					.no_hash = true };
	struct status_info si;
	char *path = strdup(name);

	status_info_clear(&si);
	if (!s || !path || audit_reader_open_lines(&s->rd, name, &ro, &si)) {
		free(path);
		free(s);
		return NULL;
	}
	job_init(&s->job, r, path);
	return s;
}

void replay_stream_free(struct replay_stream *s)
{
	if (!s)
		return;
	job_release(&s->job);
	audit_reader_free(s->rd);
	free((char *)s->job.path);
	free(s);
}

enum status replay_stream_line(struct replay_stream *s, const char *line, size_t n,
			       struct status_info *si)
{
	enum status st = audit_reader_line(s->rd, line, n, &s->it, si);

	if (st == STATUS_OK)
		job_item(&s->job, &s->it);
	else if (st == STATUS_PARSE || st == STATUS_LIMIT)
		s->job.malformed++;
	return st == STATUS_EOF ? STATUS_OK : st;
}

const struct audit_reader_stats *replay_stream_stats(const struct replay_stream *s)
{
	return audit_reader_stats(s->rd);
}

size_t replay_stream_n_procs(const struct replay_stream *s)
{
	return s->job.n_procs;
}

void replay_stream_proc(const struct replay_stream *s, size_t i, struct replay_proc_row *row)
{
	const struct replay_proc *p = &s->job.procs[i];

	proc_row_fill(row, p, 0, tally_counts(p->tally, 0));
}

uint64_t replay_stream_procs_dropped(const struct replay_stream *s)
{
	return s->job.procs_dropped;
}

