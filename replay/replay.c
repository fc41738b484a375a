/*
 * replay.c - the replay: each file is read into a job of its own (its
 * processes, counts, notes, explained steps), then merged into the totals in
 * file order, so that reading files in parallel gives what reading them one
 * after another gives, message for message.
 */
#include "replay.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jsonw.h"
#include "rate.h"

/* Distinct garbage values the text report lists. */
#define REPLAY_GARBAGE_SHOWN 8
/* Rates are said at the confidence every report uses (base/rate.h). */
#define REPLAY_CONFIDENCE 0.95
#define REPLAY_CONFIDENCE_TEXT "95%"
/* Per-process rows kept over all files; beyond, rows are counted (the totals stay whole). */
#define REPLAY_ROWS_MAX 65536
/* Files a job reads ahead of the merge at most, per reader. */
#define REPLAY_AHEAD 4

struct replay_explained {
	char *text;     /* human text, owned */
	char *json;     /* one JSON object, owned */
};

/* The state of one process while its file is read. */
struct replay_proc {
	bool has_pid, has_rank, has_dp;
	int64_t pid, rank, dp;
	struct tally *tally;
	struct replay_gate gate;
	/* --explain: the last garbage value per slot, to spot drift */
	int64_t *res_value, *res_step;
	uint8_t *res_seen;
	uint32_t res_cap;
};

/* A config event: it applies to later merges of its pid (and rank, when it names one). */
struct replay_cfg {
	bool has_pid, has_rank;
	int64_t pid, rank, max_model_len;
};

/* Everything one file produced before it is merged. */
struct replay_job {
	const char *path;
	bool skip;                  /* an inode duplicate (of file dup_of): never read */
	size_t dup_of;
	enum status st;             /* the file-level outcome */
	struct status_info si;
	bool unreadable, truncated, strict_stop, done;
	struct audit_reader_stats stats;
	uint64_t malformed;
	uint64_t hash;
	struct replay_proc *procs;
	size_t n_procs, cap_procs, last_proc;
	uint64_t procs_dropped;     /* events of processes beyond REPLAY_MAX_PROCS */
	struct replay_cfg *cfgs;
	size_t n_cfgs, cap_cfgs;
	char (*diag)[640];          /* the first REPLAY_MALFORMED_SHOWN malformed-line messages */
	size_t n_diag;
	struct replay_explained explained[REPLAY_EXPLAIN_MAX];
	size_t n_explained;
	uint64_t explain_dropped;
	struct replay_site *sites;
	size_t n_sites, cap_sites;
	uint64_t sites_dropped;
	struct replay_end ends[REPLAY_ENDS_SHOWN];
	size_t n_ends;
	uint64_t ends_dropped;
	uint64_t prog_bytes, prog_merges;   /* read since the last report to r->prog */
	const struct replay *r;
};

/* Files seen, by identity and by content, for counting each once. */
struct replay_seen {
	uint64_t key, a, b;        /* a, b: dev and inode, or hash and length */
	size_t file;
};

/* What every job has read, for the progress line; drawn by one thread at a time. */
struct replay_prog {
	_Atomic uint64_t bytes, merges;
	atomic_flag drawing;
};

struct replay {
	struct replay_opts opts;
	struct rule rules[RULE_MAX_LIST];
	struct tally *total;
	struct replay_file *files;
	size_t n_files, cap_files;
	uint64_t malformed, shown;
	struct audit_reader_stats stats;   /* summed over files */
	struct replay_gate gate;
	struct replay_explained explained[REPLAY_EXPLAIN_MAX];
	size_t n_explained;
	uint64_t explain_dropped;
	size_t n_unreadable, n_truncated, n_dups, n_bom, n_no_audit;
	size_t n_sites_total;
	uint64_t procs_dropped;
	struct replay_proc_row *rows;
	size_t n_rows, cap_rows;
	uint64_t rows_dropped;
	struct replay_end ends[REPLAY_ENDS_SHOWN];
	size_t n_ends;
	uint64_t ends_dropped;
	struct replay_prog *prog;          /* for opts.progress: counts every job adds to */
	struct replay_seen *seen_id, *seen_content;   /* open addressing, cap_seen slots each */
	size_t n_seen_id, n_seen_content, cap_seen_id, cap_seen_content;
	struct audit_reader *reader;       /* the serial path's reader, reused file to file */
	bool single_input;                 /* replay_add_files with one file: no content to compare */
};

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

/*
 * The growing array arr of *cap elements of `size` bytes, holding n, with
 * room for one more (doubling from `first`, at most `max`): arr itself or
 * its new place. NULL when full or out of memory; arr is then left as it was.
 */
static void *grow(void *arr, size_t *cap, size_t n, size_t size, size_t first, size_t max)
{
	void *na;
	size_t ncap;

	if (n < *cap)
		return arr;
	ncap = *cap ? *cap * 2 : first;
	if (ncap > max)
		ncap = max;
	if (ncap <= n || !(na = realloc(arr, ncap * size)))
		return NULL;
	*cap = ncap;
	return na;
}

/* a - b for any int64, as a sign and a magnitude (65 bits). */
static void diff65(int64_t a, int64_t b, int *neg, uint64_t *mag)
{
	*neg = a < b;
	*mag = a >= b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

static void stats_add(struct audit_reader_stats *d, const struct audit_reader_stats *s)
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

static void gate_add(struct replay_gate *d, const struct replay_gate *s)
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
		free((void *)r->files[i].counts);
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
	void *grown;

	if (!j->r->opts.keep_sites)
		return;
	if (j->n_sites == j->r->opts.max_sites) {
		j->sites_dropped++;
		return;
	}
	if (!(grown = grow(j->sites, &j->cap_sites, j->n_sites, sizeof(*j->sites), 2,
			   j->r->opts.max_sites))) {
		j->sites_dropped++;
		return;
	}
	j->sites = grown;
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
	void *grown;
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
	if (!(grown = grow(j->procs, &j->cap_procs, j->n_procs, sizeof(*j->procs), 4,
			   REPLAY_MAX_PROCS)))
		return NULL;
	j->procs = grown;
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
	/* the config in force for it: the last one of its process so far */
	for (i = j->n_cfgs; i-- > 0;)
		if (cfg_applies(&j->cfgs[i], p)) {
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
	void *grown;
	size_t i;

	if (c->max_model_len <= 0)
		return;   /* names no bound: nothing changes */
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
	if (!(grown = grow(j->cfgs, &j->cap_cfgs, j->n_cfgs, sizeof(*j->cfgs), 4, REPLAY_MAX_PROCS)))
		return;   /* more configs than processes: the existing ones were updated above */
	j->cfgs = grown;
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
	diff65(m->dev_pos[s], p->res_value[s], &dneg, &dv);
	diff65(m->step, p->res_step[s], &sneg, &ds);
	if (dv == 0)
		snprintf(buf, n, "unchanged since step %" PRId64 " (%" PRIu64 " steps): resident in "
			 "the buffer", p->res_step[s], ds);
	else if (!dneg && dv == ds)
		snprintf(buf, n, "grew by %" PRIu64 " over the %" PRIu64 " steps since step %" PRId64
			 ": a plus_one applied each step to a resident stale buffer", dv, ds,
			 p->res_step[s]);
}

static const char *proc_label(bool has_pid, int64_t pid, bool has_rank, int64_t rank, bool has_dp,
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
	proc_label(p->has_pid, p->pid, p->has_rank, p->rank, p->has_dp, p->dp, who, sizeof(who));
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
		int64_t *v = realloc(p->res_value, m->n_host * sizeof(*v));
		int64_t *st = v ? realloc(p->res_step, m->n_host * sizeof(*st)) : NULL;
		uint8_t *seen = st ? realloc(p->res_seen, m->n_host) : NULL;
		if (v)
			p->res_value = v;
		if (st)
			p->res_step = st;
		if (!seen)
			return;   /* no drift reading for this process: only --explain's words are lost */
		memset(seen + p->res_cap, 0, m->n_host - p->res_cap);
		p->res_seen = seen;
		p->res_cap = m->n_host;
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

static struct replay_file *replay_new_row(struct replay *r, const char *path)
{
	struct replay_file *f;
	void *grown;

	if (!(grown = grow(r->files, &r->cap_files, r->n_files, sizeof(*r->files), 8,
			   SIZE_MAX / 2 / sizeof(*f))))
		return NULL;
	r->files = grown;
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
	void *grown;
	size_t i;

	if (!(grown = grow(r->rows, &r->cap_rows, r->n_rows, sizeof(*r->rows), 8, REPLAY_ROWS_MAX))) {
		r->rows_dropped++;
		return;
	}
	r->rows = grown;
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

/* Merges job j (the file of row index `file`) into r. */
static void replay_merge(struct replay *r, struct replay_job *j, struct replay_file *f)
{
	size_t file = (size_t)(f - r->files), i, k;
	struct tally_counts *counts = NULL;
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
	if (!j->unreadable && !j->strict_stop && !j->stats.events && !j->malformed) {
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
	stats_add(&r->stats, &j->stats);
	if (r->opts.keep_sites)
		counts = calloc(r->opts.n_rules, sizeof(*counts));
	for (i = 0; i < j->n_procs; i++) {
		const struct replay_proc *p = &j->procs[i];
		tally_absorb(r->total, p->tally);
		gate_add(&f->gate, &p->gate);
		if (counts)
			for (k = 0; k < r->opts.n_rules; k++)
				tally_add_counts(&counts[k], tally_counts(p->tally, k));
		if (j->n_procs > 1)
			replay_keep_row(r, j, file, p);
	}
	gate_add(&r->gate, &f->gate);
	f->n_procs = j->n_procs;
	f->counts = counts;
	if (counts && !j->n_procs)
		for (k = 0; k < r->opts.n_rules; k++)
			counts[k].fp_first_mismatch_step = -1;
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

/* --- what the replay found -------------------------------------------------- */

const struct tally *replay_tally(const struct replay *r) { return r->total; }
size_t replay_n_files(const struct replay *r) { return r->n_files; }
const struct replay_file *replay_file_at(const struct replay *r, size_t i) { return &r->files[i]; }
uint64_t replay_malformed(const struct replay *r) { return r->malformed; }
size_t replay_n_explained(const struct replay *r) { return r->n_explained; }
size_t replay_n_unreadable(const struct replay *r) { return r->n_unreadable; }
size_t replay_n_truncated(const struct replay *r) { return r->n_truncated; }
size_t replay_n_no_audit(const struct replay *r) { return r->n_no_audit; }
const struct replay_gate *replay_gate(const struct replay *r) { return &r->gate; }
size_t replay_n_proc_rows(const struct replay *r) { return r->n_rows; }
const struct replay_proc_row *replay_proc_row_at(const struct replay *r, size_t i) { return &r->rows[i]; }

/* Which fields a never-evaluated rule lacked, for "not evaluable" lines. */
static const char *rule_needs_text(const struct rule *ru)
{
	if (ru->needs & RULE_NEEDS_STAMP)
		return "no slot_gen/buf_slot_gen or gen/buf_gen";
	if (ru->needs & RULE_NEEDS_BUF_STEP)
		return "no buf_step";
	if (ru->needs & RULE_NEEDS_PREFILLED)
		return "no prefilled";
	if (ru->needs & RULE_NEEDS_MAX_POS)
		return "no max_pos (--max-pos or config.max_model_len)";
	return "every merge event is a shape fallback";
}

static const char *not_evaluable_why(const struct rule *ru, const struct tally_counts *c,
				     const struct replay_gate *g, char *buf, size_t n)
{
	if (!c->merges && g->refused)
		snprintf(buf, n, "the keep never ran: the capability gate refused it on %" PRIu64
			 " step%s", g->refused, g->refused == 1 ? "" : "s");
	else if (!c->merges)
		snprintf(buf, n, "no merge events");
	else if (c->shape_fallback == c->merges)
		snprintf(buf, n, "every merge event is a shape fallback");
	else
		snprintf(buf, n, "%s", rule_needs_text(ru));
	return buf;
}

const char *replay_not_evaluable_why(const struct replay *r, const struct replay_file *f, size_t i)
{
	static __thread char buf[160];
	const struct tally_counts *c = f ? (f->counts ? &f->counts[i] : NULL) : tally_counts(r->total, i);
	struct tally_counts zero;

	if (!c) {
		memset(&zero, 0, sizeof(zero));
		c = &zero;
	}
	return not_evaluable_why(&r->rules[i], c, f ? &f->gate : &r->gate, buf, sizeof(buf));
}

static const char *signal_name(int64_t sig)
{
	if (sig <= 0 || sig >= 65)
		return NULL;
	return sigabbrev_np((int)sig);
}

static int counts_not_evaluable(const struct tally_counts *c)
{
	return c->skipped + c->shape_fallback == c->merges;
}

static void print_fingerprint_text(const struct rule *rules, const struct tally_fingerprint *fp,
				   FILE *f)
{
	size_t i;

	if (fp->verdict == TALLY_NO_TAKEN) {
		fprintf(f, "no merge event records `taken`; the engaged arm cannot be read");
		return;
	}
	fprintf(f, "%s over %" PRIu64 " events with `taken`", tally_verdict_name(fp->verdict),
		fp->events_with_taken);
	if (fp->n_consistent) {
		fprintf(f, "; consistent with:");
		for (i = 0; i < fp->n_consistent; i++)
			fprintf(f, " %s", rules[fp->consistent[i]].name);
		if (fp->n_consistent > 1)
			fprintf(f, " (no event separates them)");
	}
	if (fp->n_unevaluated) {
		fprintf(f, "; never evaluated (not ruled out):");
		for (i = 0; i < fp->n_unevaluated; i++)
			fprintf(f, " %s", rules[fp->unevaluated[i]].name);
	}
}

static void print_proc_rows_text(const struct replay *r, FILE *f)
{
	size_t i, k, last = SIZE_MAX;
	char who[96];

	for (i = 0; i < r->n_rows; i++) {
		const struct replay_proc_row *row = &r->rows[i];
		struct tally_fingerprint fp;
		uint64_t merges = r->opts.n_rules ? row->counts[0].merges : 0;

		if (row->file != last) {
			fprintf(f, "\nper process in %s (%zu processes; the totals above hold them all):\n",
				r->files[row->file].path, r->files[row->file].n_procs);
			last = row->file;
		}
		proc_label(row->has_pid, row->pid, row->has_rank, row->rank, row->has_dp, row->dp, who,
			   sizeof(who));
		fprintf(f, "  %s: %" PRIu64 " merge events", who, merges);
		if (!merges && row->gate.refused)
			fprintf(f, " (the keep never ran: the capability gate refused it on %" PRIu64
				" steps)", row->gate.refused);
		fprintf(f, ", %" PRIu64 " garbage positions; substitutions:", row->garbage);
		for (k = 0; k < r->opts.n_rules; k++) {
			const struct tally_counts *c = &row->counts[k];
			if (counts_not_evaluable(c))
				fprintf(f, " %s -", r->rules[k].name);
			else
				fprintf(f, " %s %" PRIu64, r->rules[k].name, c->substitutions);
		}
		tally_fingerprint_of(row->counts, r->opts.n_rules, row->events_with_taken, &fp);
		fprintf(f, "\n    arm fingerprint: ");
		print_fingerprint_text(r->rules, &fp, f);
		fputc('\n', f);
	}
	if (r->rows_dropped)
		fprintf(f, "  ... and %" PRIu64 " more processes (in the totals, not listed)\n",
			r->rows_dropped);
}

void replay_print_text(const struct replay *r, FILE *f)
{
	const struct tally *t = r->total;
	const struct tally_garbage *g = tally_garbage(t);
	struct tally_fingerprint fp;
	uint64_t merges = 0;
	size_t i, e;
	char why[160];

	if (tally_n_rules(t))
		merges = tally_counts(t, 0)->merges;
	fprintf(f, "%zu file%s, %" PRIu64 " lines, %" PRIu64 " merge events, %" PRIu64
		" malformed line%s", r->n_files, r->n_files == 1 ? "" : "s", r->stats.lines, merges,
		r->malformed, r->malformed == 1 ? "" : "s");
	if (r->stats.other_events)
		fprintf(f, ", %" PRIu64 " other events", r->stats.other_events);
	if (r->stats.other_lines)
		fprintf(f, ", %" PRIu64 " other log lines", r->stats.other_lines);
	if (r->stats.capture_lost)
		fprintf(f, ", %" PRIu64 " lines LOST by the capture", r->stats.capture_lost);
	if (r->stats.capture_uncertain)
		fprintf(f, ", %" PRIu64 " lines UNCERTAIN in the capture", r->stats.capture_uncertain);
	if (r->n_dups)
		fprintf(f, ", %zu duplicate input%s counted once", r->n_dups, r->n_dups == 1 ? "" : "s");
	fputc('\n', f);
	for (i = 0; i < r->n_files; i++) {
		if (r->files[i].unreadable)
			fprintf(f, "%s: could not be read to the end\n", r->files[i].path);
		if (r->files[i].no_audit)
			fprintf(f, "%s: no audit event (what it holds is said on stderr)\n",
				r->files[i].path);
		if (r->files[i].truncated)
			fprintf(f, "%s: truncated gzip after %" PRIu64 " lines: the counts hold what was "
				"read\n", r->files[i].path, r->files[i].stats.lines);
	}
	if (r->stats.uncertain_events)
		fprintf(f, "%" PRIu64 " audit event%s inside uncertain capture records: counted, not "
			"replayed\n", r->stats.uncertain_events, r->stats.uncertain_events == 1 ? "" : "s");
	if (r->stats.partial || r->stats.invalid_utf8)
		fprintf(f, "capture: %" PRIu64 " records of lines no newline ended (partial), %" PRIu64
			" bytes of invalid UTF-8 escaped\n", r->stats.partial, r->stats.invalid_utf8);
	for (i = 0; i < r->n_ends; i++) {
		const struct replay_end *x = &r->ends[i];
		const char *name = signal_name(x->signal);
		fprintf(f, "%s: pid %" PRId64 " died by signal %" PRId64 "%s%s%s%s%s\n",
			r->files[x->file].path, x->pid, x->signal, name ? " (SIG" : "", name ? name : "",
			name ? ")" : "", x->by[0] ? ", reported by " : "", x->by);
	}
	if (r->ends_dropped)
		fprintf(f, "... and %" PRIu64 " more processes died by a signal\n", r->ends_dropped);
	if (!merges && r->gate.refused)
		fprintf(f, "the keep never ran (the capability gate refused it on %" PRIu64 " step%s)\n",
			r->gate.refused, r->gate.refused == 1 ? "" : "s");
	if (r->gate.forced)
		fprintf(f, "the keep was forced on (TT_FORCE_ASYNC_AHEAD_KEEP) against the capability "
			"gate on %" PRIu64 " step%s\n", r->gate.forced, r->gate.forced == 1 ? "" : "s");
	if (r->procs_dropped)
		fprintf(f, "%" PRIu64 " events of processes beyond the first %d of a file were not "
			"replayed\n", r->procs_dropped, REPLAY_MAX_PROCS);
	fprintf(f, "\n%-22s %7s %7s %6s %7s %7s %7s %7s %7s %7s\n", "rule", "merges", "taken",
		"subst", "unverif", "prevent", "forgone", "fired", "skipped", "shape");
	for (i = 0; i < tally_n_rules(t); i++) {
		const struct tally_counts *c = tally_counts(t, i);
		const char *name = tally_rule(t, i)->name;
		if (tally_not_evaluable(t, i)) {
			fprintf(f, "%-22s %7" PRIu64 "   not evaluable on this audit (%s)\n", name,
				c->merges, not_evaluable_why(tally_rule(t, i), c, &r->gate, why, sizeof(why)));
			continue;
		}
		fprintf(f, "%-22s %7" PRIu64 " %7" PRIu64 " %6" PRIu64 " %7" PRIu64 " %7" PRIu64
			" %7" PRIu64 " %7" PRIu64 " %7" PRIu64 " %7" PRIu64 "\n", name, c->merges,
			c->taken, c->substitutions, c->unverified, c->prevented, c->forgone, c->fired,
			c->skipped, c->shape_fallback);
	}
	fprintf(f, "\nevidence behind each take (request / stamp / lifetime / unknown):\n");
	for (i = 0; i < tally_n_rules(t); i++) {
		const struct tally_counts *c = tally_counts(t, i);
		if (tally_not_evaluable(t, i))
			continue;
		fprintf(f, "  %-20s taken", tally_rule(t, i)->name);
		for (e = 1; e <= EVIDENCE__COUNT; e++)
			fprintf(f, " %s%" PRIu64, e == 1 ? "" : "/ ", c->taken_by[e % EVIDENCE__COUNT]);
		fprintf(f, "; substitutions");
		for (e = 1; e < EVIDENCE__COUNT; e++)
			fprintf(f, " %s%" PRIu64, e == 1 ? "" : "/ ", c->subst_by[e]);
		if (c->rejected_unverified)
			fprintf(f, "; %" PRIu64 " refused with staleness unknown", c->rejected_unverified);
		fputc('\n', f);
	}
	/* the merge is the trial: the slots of one merge read the same buffer */
	fprintf(f, "\nmerges with a substitution, with %s Clopper-Pearson intervals (of the merges each rule "
		"evaluated):\n", REPLAY_CONFIDENCE_TEXT);
	for (i = 0; i < tally_n_rules(t); i++) {
		const struct tally_counts *c = tally_counts(t, i);
		char rt[128], pk[96];
		if (tally_not_evaluable(t, i))
			continue;
		fprintf(f, "  %-20s %" PRIu64 " of %" PRIu64 ": %s; %s\n", tally_rule(t, i)->name,
			c->merges_subst, c->merges - c->skipped,
			rate_describe(rt, sizeof(rt), c->merges_subst, c->merges - c->skipped, REPLAY_CONFIDENCE,
				      100, "%"),
			rate_per_1000(pk, sizeof(pk), c->merges_subst, c->merges - c->skipped, REPLAY_CONFIDENCE,
				      "merges"));
	}
	fprintf(f, "\ngarbage positions: %" PRIu64 " (%" PRIu64 " float32-like)\n", g->count,
		g->float32_like);
	for (i = 0; i < g->n_values && i < REPLAY_GARBAGE_SHOWN; i++) {
		double d;
		fprintf(f, "  %" PRId64 " x%" PRIu64, g->values[i].value, g->values[i].n);
		if (tally_float32(g->values[i].value, &d))
			fprintf(f, "  reads as float32 %.2f%s", d,
				tally_float32_like(g->values[i].value) ? " (float32-like)" : "");
		fputc('\n', f);
	}
	if (g->n_values > REPLAY_GARBAGE_SHOWN)
		fprintf(f, "  ... and %zu more distinct values (--json lists up to %d)\n",
			g->n_values - REPLAY_GARBAGE_SHOWN, TALLY_GARBAGE_VALUES);
	if (g->values_dropped)
		fprintf(f, "  ... and %" PRIu64 " positions of values beyond those %d\n",
			g->values_dropped, TALLY_GARBAGE_VALUES);

	tally_fingerprint(t, &fp);
	fprintf(f, "\narm fingerprint: ");
	print_fingerprint_text(r->rules, &fp, f);
	if (fp.verdict == TALLY_NO_TAKEN)
		fprintf(f, " from this audit");
	if (r->n_rows)
		fprintf(f, " (over every process together: see each process below)");
	fputc('\n', f);
	if (fp.verdict != TALLY_NO_TAKEN)
		for (i = 0; i < tally_n_rules(t); i++) {
			const struct tally_counts *c = tally_counts(t, i);
			if (c->fp_mismatch)
				fprintf(f, "  %-20s contradicted on %" PRIu64 " of %" PRIu64
					" events (first at step %" PRId64 ")\n", tally_rule(t, i)->name,
					c->fp_mismatch, c->fp_evaluated, c->fp_first_mismatch_step);
		}
	print_proc_rows_text(r, f);
	if (r->malformed > REPLAY_MALFORMED_SHOWN)
		fprintf(f, "\n%" PRIu64 " malformed lines in total (first %d shown on stderr)\n",
			r->malformed, REPLAY_MALFORMED_SHOWN);
}

static void print_counts_json(struct jsonw *w, const struct tally_counts *c, int evaluable)
{
	size_t e;

	jsonw_obj(w);
	jsonw_kuint(w, "merges", c->merges);
	jsonw_kuint(w, "taken", c->taken);
	jsonw_kuint(w, "substitutions", c->substitutions);
	jsonw_kuint(w, "merges_with_substitution", c->merges_subst);
	jsonw_key(w, "substitution_rate");
	rate_json(w, c->merges_subst, c->merges - c->skipped, REPLAY_CONFIDENCE);
	jsonw_kuint(w, "unverified", c->unverified);
	jsonw_kuint(w, "prevented", c->prevented);
	jsonw_kuint(w, "forgone", c->forgone);
	jsonw_kuint(w, "fired", c->fired);
	jsonw_kuint(w, "skipped", c->skipped);
	jsonw_kuint(w, "shape_fallback", c->shape_fallback);
	jsonw_kuint(w, "rejected_unverified", c->rejected_unverified);
	jsonw_kuint(w, "bare_taken", c->bare_taken);
	jsonw_kbool(w, "evaluable", evaluable);
	jsonw_key(w, "evidence");
	jsonw_obj(w);
	jsonw_key(w, "taken");
	jsonw_obj(w);
	for (e = 0; e < EVIDENCE__COUNT; e++)
		jsonw_kuint(w, evidence_name((enum evidence)e), c->taken_by[e]);
	jsonw_obj_end(w);
	jsonw_key(w, "substitutions");
	jsonw_obj(w);
	for (e = 1; e < EVIDENCE__COUNT; e++)
		jsonw_kuint(w, evidence_name((enum evidence)e), c->subst_by[e]);
	jsonw_obj_end(w);
	jsonw_obj_end(w);
	jsonw_key(w, "fingerprint");
	jsonw_obj(w);
	jsonw_kuint(w, "evaluated", c->fp_evaluated);
	jsonw_kuint(w, "mismatched", c->fp_mismatch);
	if (c->fp_mismatch)
		jsonw_kint(w, "first_mismatch_step", c->fp_first_mismatch_step);
	jsonw_obj_end(w);
	jsonw_obj_end(w);
}

static void print_fingerprint_json(struct jsonw *w, const struct rule *rules,
				   const struct tally_fingerprint *fp)
{
	size_t i;

	jsonw_key(w, "fingerprint");
	jsonw_obj(w);
	jsonw_key(w, "consistent");
	jsonw_arr(w);
	for (i = 0; i < fp->n_consistent; i++)
		jsonw_str(w, rules[fp->consistent[i]].name);
	jsonw_arr_end(w);
	jsonw_key(w, "never_evaluated");
	jsonw_arr(w);
	for (i = 0; i < fp->n_unevaluated; i++)
		jsonw_str(w, rules[fp->unevaluated[i]].name);
	jsonw_arr_end(w);
	jsonw_kstr(w, "verdict", tally_verdict_name(fp->verdict));
	jsonw_kuint(w, "events_with_taken", fp->events_with_taken);
	jsonw_obj_end(w);
}

static void print_gate_json(struct jsonw *w, const struct replay_gate *g, uint64_t merges)
{
	jsonw_key(w, "gate");
	jsonw_obj(w);
	jsonw_kuint(w, "events", g->events);
	jsonw_kuint(w, "refused", g->refused);
	jsonw_kuint(w, "forced", g->forced);
	jsonw_kbool(w, "keep_never_ran", !merges && g->refused);
	jsonw_obj_end(w);
}

void replay_print_explain_json(const struct replay *r, struct jsonw *w)
{
	size_t i;

	jsonw_key(w, "explain");
	jsonw_arr(w);
	for (i = 0; i < r->n_explained; i++)
		jsonw_raw(w, r->explained[i].json);
	jsonw_arr_end(w);
}

void replay_print_explain_text(const struct replay *r, FILE *f)
{
	size_t i;

	for (i = 0; i < r->n_explained; i++)
		fputs(r->explained[i].text, f);
	if (r->explain_dropped)
		fprintf(f, "(%" PRIu64 " more merge events at that step not shown)\n",
			r->explain_dropped);
}

void replay_print_json(const struct replay *r, FILE *f)
{
	const struct tally *t = r->total;
	const struct tally_garbage *g = tally_garbage(t);
	struct tally_fingerprint fp;
	struct jsonw w;
	uint64_t merges = tally_n_rules(t) ? tally_counts(t, 0)->merges : 0;
	size_t i, k;

	jsonw_init(&w, f);
	jsonw_obj(&w);
	jsonw_key(&w, "rules");
	jsonw_obj(&w);
	for (i = 0; i < tally_n_rules(t); i++) {
		jsonw_key(&w, tally_rule(t, i)->name);
		print_counts_json(&w, tally_counts(t, i), !tally_not_evaluable(t, i));
	}
	jsonw_obj_end(&w);
	jsonw_key(&w, "not_evaluable");
	jsonw_arr(&w);
	for (i = 0; i < tally_n_rules(t); i++)
		if (tally_not_evaluable(t, i))
			jsonw_str(&w, tally_rule(t, i)->name);
	jsonw_arr_end(&w);
	jsonw_key(&w, "garbage");
	jsonw_obj(&w);
	jsonw_kuint(&w, "count", g->count);
	jsonw_kuint(&w, "float32_like", g->float32_like);
	jsonw_key(&w, "values");
	jsonw_arr(&w);
	for (i = 0; i < g->n_values; i++) {
		double d;
		jsonw_obj(&w);
		jsonw_kint(&w, "value", g->values[i].value);
		jsonw_kuint(&w, "count", g->values[i].n);
		if (tally_float32(g->values[i].value, &d))
			jsonw_kdouble(&w, "float32", d);
		jsonw_kbool(&w, "float32_like", tally_float32_like(g->values[i].value));
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_kuint(&w, "values_dropped", g->values_dropped);
	jsonw_obj_end(&w);
	jsonw_kuint(&w, "malformed", r->malformed);
	tally_fingerprint(t, &fp);
	print_fingerprint_json(&w, r->rules, &fp);
	print_gate_json(&w, &r->gate, merges);
	jsonw_key(&w, "processes");
	jsonw_arr(&w);
	for (i = 0; i < r->n_rows; i++) {
		const struct replay_proc_row *row = &r->rows[i];
		jsonw_obj(&w);
		jsonw_kstr(&w, "file", r->files[row->file].path);
		if (row->has_pid)
			jsonw_kint(&w, "pid", row->pid);
		if (row->has_rank)
			jsonw_kint(&w, "rank", row->rank);
		if (row->has_dp)
			jsonw_kint(&w, "dp", row->dp);
		jsonw_key(&w, "rules");
		jsonw_obj(&w);
		for (k = 0; k < r->opts.n_rules; k++) {
			jsonw_key(&w, r->rules[k].name);
			print_counts_json(&w, &row->counts[k], !counts_not_evaluable(&row->counts[k]));
		}
		jsonw_obj_end(&w);
		jsonw_key(&w, "garbage");
		jsonw_obj(&w);
		jsonw_kuint(&w, "count", row->garbage);
		jsonw_kuint(&w, "float32_like", row->float32_like);
		jsonw_obj_end(&w);
		tally_fingerprint_of(row->counts, r->opts.n_rules, row->events_with_taken, &fp);
		print_fingerprint_json(&w, r->rules, &fp);
		print_gate_json(&w, &row->gate, r->opts.n_rules ? row->counts[0].merges : 0);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_kuint(&w, "processes_dropped", r->rows_dropped);
	jsonw_key(&w, "input");
	jsonw_obj(&w);
	jsonw_kuint(&w, "files", r->n_files);
	jsonw_kuint(&w, "lines", r->stats.lines);
	jsonw_kuint(&w, "events", r->stats.events);
	jsonw_kuint(&w, "other_events", r->stats.other_events);
	jsonw_kuint(&w, "ignored", r->stats.ignored);
	jsonw_kuint(&w, "capture_records", r->stats.capture_records);
	jsonw_kuint(&w, "capture_lost", r->stats.capture_lost);
	jsonw_kuint(&w, "capture_uncertain", r->stats.capture_uncertain);
	jsonw_kuint(&w, "uncertain_events", r->stats.uncertain_events);
	jsonw_kuint(&w, "partial", r->stats.partial);
	jsonw_kuint(&w, "invalid_utf8", r->stats.invalid_utf8);
	jsonw_kuint(&w, "bytes", r->stats.bytes);
	jsonw_kuint(&w, "log_audit_lines", r->stats.log_audit_lines);
	jsonw_kuint(&w, "other_lines", r->stats.other_lines);
	jsonw_kuint(&w, "bom", r->n_bom);
	jsonw_kuint(&w, "events_beyond_process_cap", r->procs_dropped);
	jsonw_key(&w, "unreadable");
	jsonw_arr(&w);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].unreadable)
			jsonw_str(&w, r->files[i].path);
	jsonw_arr_end(&w);
	jsonw_key(&w, "no_audit");
	jsonw_arr(&w);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].no_audit)
			jsonw_str(&w, r->files[i].path);
	jsonw_arr_end(&w);
	jsonw_key(&w, "truncated");
	jsonw_arr(&w);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].truncated) {
			jsonw_obj(&w);
			jsonw_kstr(&w, "file", r->files[i].path);
			jsonw_kuint(&w, "lines", r->files[i].stats.lines);
			jsonw_obj_end(&w);
		}
	jsonw_arr_end(&w);
	jsonw_key(&w, "duplicates");
	jsonw_arr(&w);
	for (i = 0; i < r->n_files; i++)
		if (r->files[i].dup) {
			jsonw_obj(&w);
			jsonw_kstr(&w, "file", r->files[i].path);
			jsonw_kstr(&w, "same_as", r->files[r->files[i].dup_of].path);
			jsonw_kstr(&w, "by", r->files[i].dup == REPLAY_DUP_INODE ? "inode" : "content");
			jsonw_obj_end(&w);
		}
	jsonw_arr_end(&w);
	jsonw_key(&w, "signals");
	jsonw_arr(&w);
	for (i = 0; i < r->n_ends; i++) {
		const char *name = signal_name(r->ends[i].signal);
		jsonw_obj(&w);
		jsonw_kstr(&w, "file", r->files[r->ends[i].file].path);
		jsonw_kint(&w, "pid", r->ends[i].pid);
		jsonw_kint(&w, "signal", r->ends[i].signal);
		if (name) {
			char sig[32];
			snprintf(sig, sizeof(sig), "SIG%s", name);
			jsonw_kstr(&w, "name", sig);
		}
		if (r->ends[i].by[0])
			jsonw_kstr(&w, "by", r->ends[i].by);
		jsonw_obj_end(&w);
	}
	jsonw_arr_end(&w);
	jsonw_kuint(&w, "signals_dropped", r->ends_dropped);
	jsonw_obj_end(&w);
	if (r->opts.explain)
		replay_print_explain_json(r, &w);
	jsonw_obj_end(&w);
}

/* --- reports added up (ttaudit combine) ------------------------------------- */

/* Reports larger than this are refused (65536 process rows of 32 rules fit). */
#define REPLAY_REPORT_MAX (1024u * 1024u * 1024u)

static enum status report_load(const char *path, struct jdoc **doc, struct status_info *si)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	char *buf = NULL;
	size_t n = 0, cap = 0;
	enum status st = STATUS_OK;

	*doc = NULL;
	if (!f)
		return status_set_at(si, STATUS_IO, path, 0, 0, "cannot open: %s", strerror(errno));
	for (;;) {
		size_t k;
		if (n == cap) {
			char *nb;
			cap = cap ? cap * 2 : 65536;
			if (cap > REPLAY_REPORT_MAX + 1 || !(nb = realloc(buf, cap))) {
				st = cap > REPLAY_REPORT_MAX + 1
					     ? status_set_at(si, STATUS_LIMIT, path, 0, 0, "larger than 1 GiB")
					     : status_set_at(si, STATUS_NOMEM, path, 0, 0, "out of memory");
				goto out;
			}
			buf = nb;
		}
		k = fread(buf + n, 1, cap - n, f);
		n += k;
		if (k == 0)
			break;
	}
	if (ferror(f)) {
		st = status_set_at(si, STATUS_IO, path, 0, 0, "cannot read: %s", strerror(errno));
		goto out;
	}
	if (!(*doc = jdoc_new(n + 1))) {
		st = status_set_at(si, STATUS_NOMEM, path, 0, 0, "out of memory");
		goto out;
	}
	if ((st = jdoc_parse(*doc, buf, n, si))) {
		if (si)
			snprintf(si->file, sizeof(si->file), "%s", path);
		jdoc_free(*doc);
		*doc = NULL;
		goto out;
	}
	if (jdoc_root(*doc)->type != JT_OBJ || !jdoc_get(*doc, jdoc_root(*doc), "rules")) {
		st = status_set_at(si, STATUS_PARSE, path, 0, 0, "not a `ttaudit replay --json` report");
		jdoc_free(*doc);
		*doc = NULL;
	}
out:
	if (f != stdin)
		fclose(f);
	free(buf);
	return st;
}

/* The unsigned integer at key of obj; -1 with si set when absent or not one. */
static int report_uint(const struct jdoc *d, const struct jval *obj, const char *key, uint64_t *out,
		       const char *path, struct status_info *si)
{
	const struct jval *v = obj ? jdoc_get(d, obj, key) : NULL;

	if (!v || v->type != JT_INT || v->u.i < 0) {
		status_set_at(si, STATUS_PARSE, path, 0, v ? (long)v->off + 1 : 0,
			      "\"%s\" is not a count (%s)", key, jdoc_typename(v));
		return -1;
	}
	*out = (uint64_t)v->u.i;
	return 0;
}

static int report_counts(const struct jdoc *d, const struct jval *c, struct tally_counts *out,
			 const char *path, struct status_info *si)
{
	static const char *const names[] = { "merges", "taken", "substitutions",
		"merges_with_substitution", "unverified",
		"prevented", "forgone", "rejected_unverified", "fired", "skipped", "shape_fallback",
		"bare_taken" };
	uint64_t *const vars[] = { &out->merges, &out->taken, &out->substitutions,
		&out->merges_subst, &out->unverified,
		&out->prevented, &out->forgone, &out->rejected_unverified, &out->fired, &out->skipped,
		&out->shape_fallback, &out->bare_taken };
	const struct jval *ev = jdoc_get(d, c, "evidence"), *fp = jdoc_get(d, c, "fingerprint"), *v;
	size_t i;

	memset(out, 0, sizeof(*out));
	out->fp_first_mismatch_step = -1;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (report_uint(d, c, names[i], vars[i], path, si))
			return -1;
	for (i = 0; i < EVIDENCE__COUNT; i++) {
		const char *e = evidence_name((enum evidence)i);
		if (report_uint(d, ev ? jdoc_get(d, ev, "taken") : NULL, e, &out->taken_by[i], path, si))
			return -1;
		if (i && report_uint(d, ev ? jdoc_get(d, ev, "substitutions") : NULL, e, &out->subst_by[i],
				     path, si))
			return -1;
	}
	if (report_uint(d, fp, "evaluated", &out->fp_evaluated, path, si) ||
	    report_uint(d, fp, "mismatched", &out->fp_mismatch, path, si))
		return -1;
	v = jdoc_get(d, fp, "first_mismatch_step");
	if (v && v->type == JT_INT)
		out->fp_first_mismatch_step = v->u.i;
	return 0;
}

/* Reads a report's rules (names and order); the counts are rule by rule in that order. */
static int report_rules(const struct jdoc *d, struct rule *rules, size_t *n, const char *path,
			struct status_info *si)
{
	const struct jval *v;

	*n = 0;
	for (v = jdoc_kid(d, jdoc_get(d, jdoc_root(d), "rules")); v; v = jdoc_next(d, v)) {
		if (*n == RULE_MAX_LIST) {
			status_set_at(si, STATUS_LIMIT, path, 0, 0, "more than %d rules", RULE_MAX_LIST);
			return -1;
		}
		if (rule_parse_len(v->key, v->keylen, &rules[*n], si)) {
			if (si)
				snprintf(si->file, sizeof(si->file), "%s", path);
			return -1;
		}
		(*n)++;
	}
	if (!*n) {
		status_set_at(si, STATUS_PARSE, path, 0, 0, "the report names no rule");
		return -1;
	}
	return 0;
}

enum status replay_new_from_report(struct replay **out, const char *path, struct status_info *si)
{
	struct rule rules[RULE_MAX_LIST];
	struct replay_opts o;
	struct jdoc *d;
	enum status st;

	*out = NULL;
	if ((st = report_load(path, &d, si)))
		return st;
	memset(&o, 0, sizeof(o));
	if (report_rules(d, rules, &o.n_rules, path, si)) {
		jdoc_free(d);
		return STATUS_PARSE;
	}
	jdoc_free(d);
	o.rules = rules;
	*out = replay_new(&o);
	return *out ? STATUS_OK : status_set(si, STATUS_NOMEM, "out of memory");
}

/* The file row of path (the report's name for it), added when new. */
static size_t report_file(struct replay *r, const char *path, size_t first)
{
	size_t i;

	for (i = first; i < r->n_files; i++)
		if (!strcmp(r->files[i].path, path))
			return i;
	return replay_new_row(r, path) ? r->n_files - 1 : SIZE_MAX;
}

static const char *report_str(const struct jdoc *d, const struct jval *obj, const char *key)
{
	const struct jval *v = jdoc_get(d, obj, key);

	return v && v->type == JT_STR ? v->u.s : NULL;
}

enum status replay_add_report(struct replay *r, const char *path, struct status_info *si)
{
	struct rule rules[RULE_MAX_LIST];
	struct tally_counts counts[RULE_MAX_LIST];
	struct tally_garbage g;
	struct jdoc *d;
	const struct jval *root, *v, *in, *x;
	uint64_t ewt = 0, files = 0, u;
	size_t n, i, first = r->n_files;
	enum status st;

	if ((st = report_load(path, &d, si)))
		return st;
	root = jdoc_root(d);
	st = STATUS_PARSE;
	if (report_rules(d, rules, &n, path, si))
		goto out;
	if (n != r->opts.n_rules) {
		status_set_at(si, STATUS_USAGE, path, 0, 0, "%zu rules, the first report has %zu: replay "
			      "every part with the same --rules", n, r->opts.n_rules);
		st = STATUS_USAGE;
		goto out;
	}
	for (i = 0; i < n; i++)
		if (strcmp(rules[i].name, r->rules[i].name)) {
			status_set_at(si, STATUS_USAGE, path, 0, 0, "rule %zu is %s, the first report's is "
				      "%s: replay every part with the same --rules", i + 1, rules[i].name,
				      r->rules[i].name);
			st = STATUS_USAGE;
			goto out;
		}
	for (i = 0, v = jdoc_kid(d, jdoc_get(d, root, "rules")); v; v = jdoc_next(d, v), i++)
		if (report_counts(d, v, &counts[i], path, si))
			goto out;
	memset(&g, 0, sizeof(g));
	x = jdoc_get(d, root, "garbage");
	if (report_uint(d, x, "count", &g.count, path, si) ||
	    report_uint(d, x, "float32_like", &g.float32_like, path, si) ||
	    report_uint(d, x, "values_dropped", &g.values_dropped, path, si))
		goto out;
	for (v = jdoc_kid(d, jdoc_get(d, x, "values")); v; v = jdoc_next(d, v)) {
		const struct jval *val = jdoc_get(d, v, "value");
		if (!val || val->type != JT_INT || report_uint(d, v, "count", &u, path, si))
			goto out;
		if (g.n_values < TALLY_GARBAGE_VALUES) {
			g.values[g.n_values].value = val->u.i;
			g.values[g.n_values++].n = u;
		} else {
			g.values_dropped += u;
		}
	}
	if (report_uint(d, jdoc_get(d, root, "fingerprint"), "events_with_taken", &ewt, path, si) ||
	    report_uint(d, root, "malformed", &u, path, si))
		goto out;
	r->malformed += u;
	x = jdoc_get(d, root, "gate");
	{
		struct replay_gate gt;
		if (report_uint(d, x, "events", &gt.events, path, si) ||
		    report_uint(d, x, "refused", &gt.refused, path, si) ||
		    report_uint(d, x, "forced", &gt.forced, path, si))
			goto out;
		gate_add(&r->gate, &gt);
	}
	tally_absorb_counts(r->total, counts, n, &g, ewt);
	in = jdoc_get(d, root, "input");
	{
		struct audit_reader_stats s;
		static const char *const names[] = { "lines", "events", "other_events", "ignored",
			"capture_records", "capture_lost", "capture_uncertain", "uncertain_events",
			"partial", "invalid_utf8", "bytes", "log_audit_lines", "other_lines" };
		uint64_t *const vars[] = { &s.lines, &s.events, &s.other_events, &s.ignored,
			&s.capture_records, &s.capture_lost, &s.capture_uncertain, &s.uncertain_events,
			&s.partial, &s.invalid_utf8, &s.bytes, &s.log_audit_lines, &s.other_lines };
		memset(&s, 0, sizeof(s));
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (report_uint(d, in, names[i], vars[i], path, si))
				goto out;
		stats_add(&r->stats, &s);
		if (report_uint(d, in, "files", &files, path, si) || report_uint(d, in, "bom", &u, path, si))
			goto out;
		r->n_bom += u;
		if (report_uint(d, in, "events_beyond_process_cap", &u, path, si))
			goto out;
		r->procs_dropped += u;
		if (report_uint(d, in, "signals_dropped", &u, path, si))
			goto out;
		r->ends_dropped += u;
		if (report_uint(d, root, "processes_dropped", &u, path, si))
			goto out;
		r->rows_dropped += u;
	}
	st = STATUS_NOMEM;
	/* the files the report names, then unnamed rows up to its file count */
	for (v = jdoc_kid(d, jdoc_get(d, in, "unreadable")); v; v = jdoc_next(d, v))
		if (v->type == JT_STR && (i = report_file(r, v->u.s, first)) != SIZE_MAX) {
			r->files[i].unreadable = true;
			r->n_unreadable++;
		}
	for (v = jdoc_kid(d, jdoc_get(d, in, "no_audit")); v; v = jdoc_next(d, v))
		if (v->type == JT_STR && (i = report_file(r, v->u.s, first)) != SIZE_MAX) {
			r->files[i].no_audit = true;
			r->n_no_audit++;
		}
	for (v = jdoc_kid(d, jdoc_get(d, in, "truncated")); v; v = jdoc_next(d, v)) {
		const char *p = report_str(d, v, "file");
		if (p && (i = report_file(r, p, first)) != SIZE_MAX) {
			r->files[i].truncated = true;
			report_uint(d, v, "lines", &r->files[i].stats.lines, path, NULL);
			r->n_truncated++;
		}
	}
	for (v = jdoc_kid(d, jdoc_get(d, in, "duplicates")); v; v = jdoc_next(d, v)) {
		const char *p = report_str(d, v, "file"), *same = report_str(d, v, "same_as");
		const char *by = report_str(d, v, "by");
		size_t j;
		if (!p || !same || (j = report_file(r, same, first)) == SIZE_MAX ||
		    (i = report_file(r, p, first)) == SIZE_MAX)
			continue;
		r->files[i].dup = by && !strcmp(by, "inode") ? REPLAY_DUP_INODE : REPLAY_DUP_CONTENT;
		r->files[i].dup_of = j;
		r->n_dups++;
	}
	for (v = jdoc_kid(d, jdoc_get(d, in, "signals")); v; v = jdoc_next(d, v)) {
		const char *p = report_str(d, v, "file"), *by = report_str(d, v, "by");
		const struct jval *pid = jdoc_get(d, v, "pid"), *sig = jdoc_get(d, v, "signal");
		if (!p || !pid || pid->type != JT_INT || !sig || sig->type != JT_INT ||
		    (i = report_file(r, p, first)) == SIZE_MAX)
			continue;
		if (r->n_ends == REPLAY_ENDS_SHOWN) {
			r->ends_dropped++;
			continue;
		}
		memset(&r->ends[r->n_ends], 0, sizeof(r->ends[0]));
		r->ends[r->n_ends].file = i;
		r->ends[r->n_ends].pid = pid->u.i;
		r->ends[r->n_ends].signal = sig->u.i;
		if (by)
			snprintf(r->ends[r->n_ends].by, sizeof(r->ends[0].by), "%s", by);
		r->n_ends++;
	}
	for (v = jdoc_kid(d, jdoc_get(d, root, "processes")); v; v = jdoc_next(d, v)) {
		const char *p = report_str(d, v, "file");
		const struct jval *k, *x2;
		struct replay_proc_row *row;
		struct tally_counts *c;
		void *grown;
		size_t j;

		if (!p || (i = report_file(r, p, first)) == SIZE_MAX)
			goto out;
		if (!(grown = grow(r->rows, &r->cap_rows, r->n_rows, sizeof(*r->rows), 8, REPLAY_ROWS_MAX))) {
			r->rows_dropped++;
			continue;
		}
		r->rows = grown;
		if (!(c = calloc(n, sizeof(*c))))
			goto out;
		row = &r->rows[r->n_rows];
		memset(row, 0, sizeof(*row));
		row->file = i;
		row->counts = c;
		r->n_rows++;
		r->files[i].n_procs++;
		for (j = 0, k = jdoc_kid(d, jdoc_get(d, v, "rules")); k && j < n; k = jdoc_next(d, k), j++)
			if (report_counts(d, k, &c[j], path, si)) {
				st = STATUS_PARSE;
				goto out;
			}
		x2 = jdoc_get(d, v, "pid");
		if ((row->has_pid = x2 && x2->type == JT_INT))
			row->pid = x2->u.i;
		x2 = jdoc_get(d, v, "rank");
		if ((row->has_rank = x2 && x2->type == JT_INT))
			row->rank = x2->u.i;
		x2 = jdoc_get(d, v, "dp");
		if ((row->has_dp = x2 && x2->type == JT_INT))
			row->dp = x2->u.i;
		x2 = jdoc_get(d, v, "garbage");
		report_uint(d, x2, "count", &row->garbage, path, NULL);
		report_uint(d, x2, "float32_like", &row->float32_like, path, NULL);
		report_uint(d, jdoc_get(d, v, "fingerprint"), "events_with_taken", &row->events_with_taken,
			    path, NULL);
		x2 = jdoc_get(d, v, "gate");
		report_uint(d, x2, "events", &row->gate.events, path, NULL);
		report_uint(d, x2, "refused", &row->gate.refused, path, NULL);
		report_uint(d, x2, "forced", &row->gate.forced, path, NULL);
	}
	while (r->n_files - first < files)
		if (!replay_new_row(r, ""))
			goto out;
	st = STATUS_OK;
out:
	if (st == STATUS_NOMEM && si && !si->msg[0])
		status_set_at(si, st, path, 0, 0, "out of memory");
	jdoc_free(d);
	return st;
}
