/*
 * pair.c - the join of pair.h: bench records (through record/record_read.h)
 * and audits read, each merge given to its run by request id (reqid.h) or by
 * time, the substitutions attributed to the failures, a verdict per run.
 * The report is pairreport.c.
 */
#include "pair/pair.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/jsonw.h"
#include "record/record_read.h"
#include "pair/reqid.h"
#include "base/rate.h"
#include "analyzer/reader.h"
#include "analyzer/rule.h"

/* One request record. */
struct preq {
	char id[PAIR_ID_MAX];
	char xid[PAIR_ID_MAX];       /* the X-Request-Id the client sent; "" when none */
	size_t run;
	size_t index, prompt_index;
	long prompt_tokens;          /* -1 unknown */
	char verdict[16];            /* "" when the run has no correctness */
	long at;                     /* diverged_at, -1 */
	long span;                   /* diverged_tokens: the divergent chunk's tokens (1) */
	bool ok;
	char leak_donor[PAIR_ID_MAX];   /* canary: the donor's request id; "" none */
};

struct pair {
	struct pair_opts o;
	struct pair_run *runs;
	size_t n_runs;
	struct preq *reqs;
	size_t n_reqs, cap_reqs;
	struct reqid *ids;           /* the requests by id, once all are read */
	uint64_t outside, malformed, audit_lines;
	uint64_t bytes_done, merges_read;   /* the files read before this one, for the progress line */
	FILE *diag;
	size_t n_diag;
};

const char *pair_match_name(enum pair_match m)
{
	switch (m) {
	case PAIR_EXPLAINED: return "explained";
	case PAIR_POSSIBLE: return "possible";
	case PAIR_LEAK_UNEXPLAINED: return "leak-unexplained";
	case PAIR_NO_FOREIGN: return "no-foreign-token";
	default: return "unexplained";
	}
}

const char *pair_verdict_name(enum pair_verdict v)
{
	switch (v) {
	case PAIR_PASS: return "PASS";
	case PAIR_FAIL: return "FAIL";
	default: return "INCONCLUSIVE";
	}
}

/* --- request ids ---------------------------------------------------------- */

/* Whether request i carries id, as its response id or its X-Request-Id. */
static bool pair_req_match(const void *ctx, size_t i, const char *id)
{
	const struct pair *p = ctx;

	return !strcmp(p->reqs[i].id, id) || !strcmp(p->reqs[i].xid, id);
}

/* The request an audit's id names (reqid.h strips vLLM's engine suffix). */
static struct preq *pair_find(const struct pair *p, const char *id)
{
	size_t k = reqid_find(p->ids, id);

	return k == SIZE_MAX ? NULL : &p->reqs[k];
}

static enum status pair_index_ids(struct pair *p, struct status_info *si)
{
	size_t i;

	if (reqid_new(&p->ids, p->n_reqs, pair_req_match, p, si))
		return STATUS_NOMEM;
	for (i = 0; i < p->n_reqs; i++) {
		reqid_put(p->ids, p->reqs[i].id, i);
		reqid_put(p->ids, p->reqs[i].xid, i);
	}
	return STATUS_OK;
}

/* --- bench records ---------------------------------------------------------- */

static void pair_diag(struct pair *p, const char *file, long line, const char *msg)
{
	p->malformed++;
	if (p->n_diag++ < 10)
		fprintf(p->diag, "%s:%ld: %s\n", file, line, msg);
}

/* x, or dflt when the record lacks it (NAN). */
static double pair_or(double x, double dflt)
{
	return isnan(x) ? dflt : x;
}

static enum status pair_add_run(struct pair *p, const struct record_in *o, size_t file, long line,
				struct status_info *si)
{
	struct pair_run *r;

	if (p->n_runs >= PAIR_MAX_RUNS)
		return status_set_at(si, STATUS_LIMIT, p->o.runs[file], line, 0,
				     "more than %d runs", PAIR_MAX_RUNS);
	r = &p->runs[p->n_runs];
	memset(r, 0, sizeof(*r));
	snprintf(r->run_id, sizeof(r->run_id), "%s", o->run_id ? o->run_id : "");
	snprintf(r->phase, sizeof(r->phase), "%s", o->phase ? o->phase : "");
	snprintf(r->arm, sizeof(r->arm), "%s", o->arm ? o->arm : "");
	snprintf(r->arm_state, sizeof(r->arm_state), "%s", o->arm_state ? o->arm_state : "none");
	r->arm_index = (size_t)pair_or(o->arm_index, 0);
	r->repeat = (unsigned)pair_or(o->repeat, 0);
	r->file = file;
	r->line = line;
	r->wall_start = pair_or(o->wall_start, 0);
	r->wall_end = pair_or(o->wall_end, 0);
	r->mono_start = pair_or(o->mono_start, 0);
	r->mono_end = pair_or(o->mono_end, 0);
	r->makespan = pair_or(o->makespan_s, -1);
	r->out_tok_s = pair_or(o->output_tok_s, -1);
	r->ttft_p50 = pair_or(o->ttft_p50, -1);
	r->itl_p50 = pair_or(o->itl_p50, -1);
	r->has_correctness = o->has_correctness;
	r->arm_rule = SIZE_MAX;
	if (!r->run_id[0])
		return status_set_at(si, STATUS_PARSE, p->o.runs[file], line, 0, "run record without run_id");
	p->n_runs++;
	return STATUS_OK;
}

static enum status pair_add_request(struct pair *p, const struct record_in *o, size_t file, long line,
				    struct status_info *si)
{
	const char *run_id = o->run_id;
	struct preq *q;
	size_t i;

	for (i = p->n_runs; i > 0; i--)
		if (p->runs[i - 1].file == file && run_id && !strcmp(p->runs[i - 1].run_id, run_id))
			break;
	if (!i) {
		pair_diag(p, p->o.runs[file], line, "request record before its run record, or run_id unknown");
		return STATUS_OK;
	}
	if (p->n_reqs >= PAIR_MAX_REQUESTS)
		return status_set_at(si, STATUS_LIMIT, p->o.runs[file], line, 0,
				     "more than %u request records", PAIR_MAX_REQUESTS);
	if (ALLOC_GROW_MAX(p->reqs, p->n_reqs + 1, p->cap_reqs, (size_t)PAIR_MAX_REQUESTS) < 0)
		return status_set(si, STATUS_NOMEM, "out of memory");
	q = &p->reqs[p->n_reqs++];
	memset(q, 0, sizeof(*q));
	q->run = i - 1;
	snprintf(q->id, sizeof(q->id), "%s", o->id ? o->id : "");
	snprintf(q->xid, sizeof(q->xid), "%s", o->request_id ? o->request_id : "");
	q->index = (size_t)pair_or(o->index, 0);
	q->prompt_index = (size_t)pair_or(o->prompt_index, 0);
	q->prompt_tokens = (long)pair_or(o->prompt_tokens, -1);
	q->ok = o->ok;
	snprintf(q->verdict, sizeof(q->verdict), "%s", o->verdict ? o->verdict : "");
	q->at = (long)pair_or(o->diverged_at, -1);
	q->span = (long)pair_or(o->diverged_tokens, 1);
	if (!strcmp(q->verdict, "leaked")) {
		q->at = (long)pair_or(o->leak_at, -1);
		q->span = (long)pair_or(o->leak_at_span, 1);
		snprintf(q->leak_donor, sizeof(q->leak_donor), "%s", o->leak_donor_id ? o->leak_donor_id : "");
	}
	if (q->span < 1)
		q->span = 1;
	if (!p->runs[q->run].n_requests)
		p->runs[q->run].req_lo = p->n_reqs - 1;
	p->runs[q->run].req_hi = p->n_reqs;
	p->runs[q->run].n_requests++;
	p->runs[q->run].n_ok += q->ok;
	if (q->verdict[0]) {
		p->runs[q->run].n_correct++;
		if (strcmp(q->verdict, "identical") && strcmp(q->verdict, "clean"))
			p->runs[q->run].n_failing++;
	}
	return STATUS_OK;
}

/* A run file through the format's reader: malformed lines are named and counted. */
static enum status pair_read_runs(struct pair *p, size_t file, struct status_info *si)
{
	const char *path = p->o.runs[file];
	size_t n_before = p->n_runs;
	struct record_reader *rd = NULL;
	struct status_info li;
	struct record_in rec;
	enum status st;

	st = record_read_open(&rd, path, si);
	if (st)
		return st;
	for (;;) {
		status_info_clear(&li);
		st = record_read_next(rd, &rec, &li);
		if (st == STATUS_EOF) {
			st = STATUS_OK;
			break;
		}
		if (st == STATUS_PARSE) {
			pair_diag(p, li.file, li.line, li.msg);
			continue;
		}
		if (st) {
			if (si)
				*si = li;
			goto out;
		}
		if (rec.kind == RECORD_KIND_RUN)
			st = pair_add_run(p, &rec, file, record_read_line(rd), si);
		else if (rec.kind == RECORD_KIND_REQUEST)
			st = pair_add_request(p, &rec, file, record_read_line(rd), si);
		if (st)
			goto out;
	}
	if (p->n_runs == n_before)
		st = status_set_at(si, STATUS_PARSE, path, 0, 0, "no run record (kind \"run\") in the file");
out:
	record_read_close(rd);
	return st;
}

/* --- audits ---------------------------------------------------------------- */

struct pair_file_cfg {
	bool has;
	struct config_event c;
	char arm[128];
};

static void pair_run_rules(struct pair_run *r, struct rule *rules, size_t *n)
{
	struct rule arm;
	size_t i;

	*n = rule_list_default(rules, RULE_MAX_LIST);
	if (r->arm[0] && !rule_parse(r->arm, &arm, NULL)) {
		for (i = 0; i < *n; i++)
			if (!strcmp(rules[i].name, arm.name))
				break;
		if (i == *n && *n < RULE_MAX_LIST)
			rules[(*n)++] = arm;
		r->arm_rule = i;
	}
}

/* The run a merge belongs to; SIZE_MAX none. */
static size_t pair_run_of(struct pair *p, const struct merge_event *m, const struct audit_item *it,
			  bool *by_id)
{
	size_t i, best = SIZE_MAX;
	double t, lo, hi, dist, best_dist = INFINITY;
	bool mono;
	uint32_t s;

	*by_id = false;
	if (m->has_req) {
		bool any = false;

		for (s = 0; s < m->n_host; s++) {
			struct preq *q = m->slot_req[s] ? pair_find(p, m->slot_req[s]) : NULL;

			any |= m->slot_req[s] != NULL;
			if (q) {
				*by_id = true;
				return q->run;
			}
		}
		/* ids that name no request of these runs: another client's (a probe) */
		if (any)
			return SIZE_MAX;
	}
	mono = it->has_time && it->mono > 0;
	if (!mono && !(it->has_time && it->t > 0) && !m->has_t)
		return SIZE_MAX;
	for (i = 0; i < p->n_runs; i++) {
		const struct pair_run *r = &p->runs[i];

		if (mono && r->mono_end > 0) {
			t = it->mono;
			lo = r->mono_start;
			hi = r->mono_end;
		} else {
			t = it->has_time && it->t > 0 ? it->t : m->t;
			lo = r->wall_start;
			hi = r->wall_end;
			if (hi <= 0)
				continue;
		}
		dist = t < lo ? lo - t : t > hi ? t - hi : 0;
		if (dist <= p->o.slack_s && dist < best_dist) {
			best_dist = dist;
			best = i;
		}
	}
	return best;
}

static void pair_note_pid(struct pair_run *r, const struct audit_item *it)
{
	size_t i;

	if (!it->has_pid)
		return;
	for (i = 0; i < r->n_pids && i < PAIR_MAX_PIDS; i++)
		if (r->pids[i] == it->pid)
			return;
	if (r->n_pids < PAIR_MAX_PIDS)
		r->pids[r->n_pids] = it->pid;
	r->n_pids++;
}

static enum status pair_add_subst(struct pair_run *r, const struct merge_event *m, uint32_t s,
				  enum evidence ev, size_t file, long line, const struct pair *p,
				  struct status_info *si)
{
	struct pair_subst *x;
	struct preq *q;

	if (r->n_substs >= PAIR_MAX_SUBST)
		return STATUS_OK;   /* counted in r->subst, not kept */
	if (ALLOC_GROW_MAX(r->substs, r->n_substs + 1, r->cap_substs, (size_t)PAIR_MAX_SUBST) < 0)
		return status_set(si, STATUS_NOMEM, "out of memory");
	x = &r->substs[r->n_substs++];
	memset(x, 0, sizeof(*x));
	if (m->has_req) {
		/* under the request's own id, so a failure finds it */
		const struct preq *q = m->slot_req[s] ? pair_find(p, m->slot_req[s]) : NULL;
		const struct preq *b = m->buf_req[s] ? pair_find(p, m->buf_req[s]) : NULL;

		snprintf(x->req, sizeof(x->req), "%s", q && q->id[0] ? q->id :
			 m->slot_req[s] ? m->slot_req[s] : "");
		snprintf(x->buf_req, sizeof(x->buf_req), "%s", b && b->id[0] ? b->id :
			 m->buf_req[s] ? m->buf_req[s] : "");
	}
	x->step = m->step;
	x->slot = s;
	x->pos = m->dev_pos[s];
	q = pair_find(p, x->req);
	x->token = q && q->prompt_tokens >= 0 ? x->pos - q->prompt_tokens : -1;
	x->evidence = ev;
	x->file = file;
	x->line = line;
	x->outcome = "not-in-run";
	return STATUS_OK;
}

static enum status pair_merge(struct pair *p, struct pair_run *r, struct pair_file_cfg *fc,
			      size_t file, const struct merge_event *m, const struct audit_item *it,
			      struct status_info *si)
{
	uint8_t take[EVENT_MAX_SLOTS];
	struct rule_ctx ctx;
	enum status st;
	uint32_t s;
	int stale;
	bool any;

	if (!r->tally) {
		struct rule rules[RULE_MAX_LIST];
		size_t n;

		pair_run_rules(r, rules, &n);
		r->tally = tally_new(rules, n, p->o.max_pos);
		if (!r->tally)
			return status_set(si, STATUS_NOMEM, "out of memory");
		r->actual_from_taken = true;
	}
	/* a config applies to the events after it in its own file */
	tally_begin_file(r->tally);
	if (fc->has)
		tally_config(r->tally, &fc->c);
	tally_merge(r->tally, m, p->o.audits[file], it->line);
	r->merges++;
	pair_note_pid(r, it);
	if (m->n_dev < m->n_host)
		return STATUS_OK;   /* shape fallback: nothing is taken */
	if (m->has_taken) {
		memcpy(take, m->taken, m->n_host);
	} else if (r->arm_rule != SIZE_MAX) {
		ctx.max_pos = tally_max_pos(r->tally);
		r->actual_from_taken = false;
		if (rule_eval(tally_rule(r->tally, r->arm_rule), m, &ctx, take, NULL) != RULE_EVALUATED)
			return STATUS_OK;
	} else {
		r->actual_from_taken = false;
		return STATUS_OK;
	}
	any = false;
	for (s = 0; s < m->n_host; s++) {
		enum evidence ev;

		if (!take[s] || !rule_active(m, s))
			continue;
		r->taken++;
		ev = evidence_slot(m, s, &stale);
		if (ev == EVIDENCE_UNKNOWN) {
			r->unverified++;
			continue;
		}
		if (!stale)
			continue;
		r->subst++;
		r->subst_by[ev]++;
		if (!any)
			r->merges_subst++;
		any = true;
		st = pair_add_subst(r, m, s, ev, file, it->line, p, si);
		if (st)
			return st;
	}
	return STATUS_OK;
}

/* A prefill event's prompt length for a request whose record lacks it. */
static void pair_prefill(struct pair *p, const struct audit_item *it)
{
	const struct jval *obj = it->record, *v;
	struct preq *q;

	if (it->src)
		obj = jdoc_get(it->doc, it->record, "event");
	if (!obj || obj->type != JT_OBJ)
		return;
	v = jdoc_get(it->doc, obj, "req");
	if (!v || v->type != JT_STR || !(q = pair_find(p, v->u.s)) || q->prompt_tokens >= 0)
		return;
	v = jdoc_get(it->doc, obj, "prompt_tokens");
	if (v && v->type == JT_INT && v->u.i >= 0)
		q->prompt_tokens = (long)v->u.i;
}

static enum status pair_read_audit(struct pair *p, size_t file, struct status_info *si)
{
	struct audit_reader *rd = NULL;
	struct audit_item it;
	struct pair_file_cfg fc;
	struct status_info rsi;
	enum status st;
	size_t ri;
	bool by_id;

	memset(&fc, 0, sizeof(fc));
	st = audit_reader_open(&rd, p->o.audits[file], NULL, si);
	if (st)
		return st;
	for (;;) {
		status_info_clear(&rsi);
		st = audit_reader_next(rd, &it, &rsi);
		if (st == STATUS_EOF) {
			st = STATUS_OK;
			break;
		}
		if (st == STATUS_PARSE || st == STATUS_LIMIT) {
			char buf[1024];

			p->malformed++;
			if (p->n_diag++ < 10)
				fprintf(p->diag, "%s\n", status_info_format(&rsi, buf, sizeof(buf)));
			continue;
		}
		if (st) {
			*si = rsi;
			break;
		}
		if (!it.has_event)
			continue;
		if (p->o.progress && it.event.kind == EVENT_MERGE && !(++p->merges_read & 255))
			progress_update(p->o.progress, p->bytes_done + audit_reader_stats(rd)->bytes,
					p->merges_read);
		if (it.event.kind == EVENT_CONFIG) {
			fc.has = true;
			fc.c = it.event.u.config;
			snprintf(fc.arm, sizeof(fc.arm), "%s", fc.c.arm ? fc.c.arm : "");
			fc.c.arm = fc.arm[0] ? fc.arm : NULL;
		} else if (it.event.kind == EVENT_CONTEXT && it.event.u.ctx.ev &&
			   !strcmp(it.event.u.ctx.ev, "prefill")) {
			pair_prefill(p, &it);
		} else if (it.event.kind == EVENT_MERGE) {
			if (p->o.pid > 0 && it.has_pid && it.pid != p->o.pid) {
				p->outside++;
				continue;
			}
			ri = pair_run_of(p, &it.event.u.merge, &it, &by_id);
			if (ri == SIZE_MAX) {
				p->outside++;
				continue;
			}
			if (by_id)
				p->runs[ri].by_id++;
			else
				p->runs[ri].by_time++;
			st = pair_merge(p, &p->runs[ri], &fc, file, &it.event.u.merge, &it, si);
			if (st)
				break;
		}
	}
	p->audit_lines += audit_reader_stats(rd)->lines;
	p->bytes_done += audit_reader_stats(rd)->bytes;
	audit_reader_free(rd);
	return st;
}

/* --- attribution ---------------------------------------------------------- */

static const char *pair_arm_verdict(struct pair_run *r)
{
	size_t i;

	if (!r->tally || !r->merges)
		return "no-audit";
	tally_fingerprint(r->tally, &r->fp);
	if (r->fp.verdict == TALLY_NO_TAKEN)
		return "no-decisions";
	if (r->arm_rule == SIZE_MAX)   /* the arm is no rule name: what the decisions say */
		return r->fp.verdict == TALLY_CONSISTENT ? "consistent" :
		       r->fp.verdict == TALLY_WITHHELD ? "not-separated" : "inconsistent";
	for (i = 0; i < r->fp.n_consistent; i++)
		if (r->fp.consistent[i] == r->arm_rule)
			return r->fp.verdict == TALLY_CONSISTENT ? "confirmed" : "not-separated";
	return "contradicted";
}

static const struct pair_run *pair_reference_of(const struct pair *p, const struct pair_run *r)
{
	const struct pair_run *any = NULL;
	size_t i;

	for (i = 0; i < p->n_runs; i++) {
		const struct pair_run *x = &p->runs[i];

		if (x == r || x->file != r->file || strcmp(x->phase, "reference") ||
		    x->arm_index != r->arm_index)
			continue;
		if (x->repeat == r->repeat)
			return x;
		if (!any)
			any = x;
	}
	return any;
}

static const struct preq *pair_req_of(const struct pair *p, size_t run, size_t prompt_index)
{
	size_t i;

	for (i = p->runs[run].req_lo; i < p->runs[run].req_hi; i++)
		if (p->reqs[i].run == run && p->reqs[i].prompt_index == prompt_index)
			return &p->reqs[i];
	return NULL;
}

/* Looks through run x's substitutions of request id for the failure's token. */
static void pair_scan(const struct pair_run *x, const char *id, struct pair_failure *f, bool ref, bool leak)
{
	size_t i;

	if (!id || !*id)
		return;
	for (i = 0; i < x->n_substs; i++) {
		const struct pair_subst *s = &x->substs[i];

		if (strcmp(s->req, id))
			continue;
		f->n_subst++;
		if (f->match == PAIR_EXPLAINED && f->exact)
			continue;
		/* a leak is the stale token itself: at its own position */
		if (f->at >= 0 && s->token >= 0 && s->token + (leak ? 0 : 1) >= f->at && s->token < f->at + f->span) {
			/* at k - 1: outputs are compared as text, so a stale token whose
			 * text is a prefix of the right one shows from the next token on;
			 * up to k + span - 1: the chunk that diverged carried span tokens */
			bool exact = s->token >= f->at;

			if (f->match != PAIR_EXPLAINED || exact) {
				f->match = PAIR_EXPLAINED;
				f->exact = exact;
				f->in_reference = ref;
				f->step = s->step;
				f->slot = s->slot;
				f->token = s->token;
				snprintf(f->donor, sizeof(f->donor), "%s", s->buf_req);
			}
		} else if (f->step < 0) {
			f->step = s->step;
			f->slot = s->slot;
			f->token = s->token;
			f->in_reference = ref;
		}
	}
}

static enum status pair_attribute(struct pair *p, struct status_info *si)
{
	size_t i, j;

	for (i = 0; i < p->n_runs; i++) {
		struct pair_run *r = &p->runs[i];

		r->arm_verdict = pair_arm_verdict(r);
		for (j = 0; j < r->n_substs; j++) {
			const struct preq *q = pair_find(p, r->substs[j].req);

			if (!q)
				continue;
			r->substs[j].outcome = !q->verdict[0] ? "no-verdict" :
				!strcmp(q->verdict, "identical") ? "identical" :
				!strcmp(q->verdict, "diverged") ? "diverged" :
				!strcmp(q->verdict, "wrong") ? "wrong" :
				!strcmp(q->verdict, "failed") ? "failed" : "no-reference";
			if (!strcmp(r->substs[j].outcome, "identical"))
				r->n_subst_correct++;
		}
	}
	for (j = 0; j < p->n_reqs; j++) {
		const struct preq *q = &p->reqs[j];
		struct pair_run *r = &p->runs[q->run];
		const struct pair_run *ref;
		struct pair_failure *f;
		bool leak;

		if (!q->verdict[0] || !strcmp(q->verdict, "identical") || !strcmp(q->verdict, "clean") ||
		    !strcmp(q->verdict, "no-reference"))
			continue;
		if (ALLOC_GROW(r->failures, r->n_failures + 1, r->cap_failures) < 0)
			return status_set(si, STATUS_NOMEM, "out of memory");
		f = &r->failures[r->n_failures++];
		memset(f, 0, sizeof(*f));
		snprintf(f->req, sizeof(f->req), "%s", q->id);
		snprintf(f->verdict, sizeof(f->verdict), "%s", q->verdict);
		f->index = q->index;
		f->prompt_index = q->prompt_index;
		leak = !strcmp(q->verdict, "leaked");
		f->at = !strcmp(q->verdict, "diverged") || leak ? q->at : -1;
		f->span = q->span;
		snprintf(f->canary_donor, sizeof(f->canary_donor), "%s", q->leak_donor);
		f->step = -1;
		f->token = -1;
		f->match = PAIR_UNEXPLAINED;
		if (!strcmp(q->verdict, "failed")) {
			snprintf(f->why, sizeof(f->why), "the request failed: not a token failure");
			r->n_unexplained++;
			continue;
		}
		r->n_wrong++;
		pair_scan(r, q->id, f, false, leak);
		ref = leak ? NULL : pair_reference_of(p, r);
		if (ref) {
			const struct preq *rq = pair_req_of(p, (size_t)(ref - p->runs), q->prompt_index);

			if (rq)
				pair_scan(ref, rq->id, f, true, false);
		}
		if (f->match == PAIR_EXPLAINED) {
			const struct preq *da = f->donor[0] ? pair_find(p, f->donor) : NULL;
			const struct preq *dc = f->canary_donor[0] ? pair_find(p, f->canary_donor) : NULL;
			char dn[PAIR_ID_MAX + 48] = "";

			f->donor_agrees = leak && da && da == dc;
			if (leak && !f->donor_agrees)
				snprintf(dn, sizeof(dn), "; the canary named %.*s", PAIR_ID_MAX - 1,
					 f->canary_donor[0] ? f->canary_donor : "no donor");
			snprintf(f->why, sizeof(f->why),
				 "explained by a substitution from %.*s at step %" PRId64 "%s (slot %u, token %" PRId64
				 "%s)%s", 120, f->donor[0] ? f->donor : "an unknown request", f->step,
				 f->in_reference ? " in the reference request" : "", f->slot, f->token,
				 f->exact ? "" : "; the text differs from the next token on: the stale token's "
				 "text is a prefix of the right one", dn);
		} else if (leak) {
			f->match = PAIR_LEAK_UNEXPLAINED;
			snprintf(f->why, sizeof(f->why),
				 "a leak the audit does not explain: a token of %.*s at output token %ld, %s",
				 120, f->canary_donor[0] ? f->canary_donor : "another request", f->at,
				 !r->merges ? "no audit for this run" :
				 f->n_subst ? "the request's substitutions are at other tokens" :
				 "no substitution into this request");
		} else if (!f->n_subst && r->merges) {
			f->match = PAIR_NO_FOREIGN;
			snprintf(f->why, sizeof(f->why), "divergence without a foreign token (likely numerics): no "
				 "substitution into this request%s", strcmp(q->verdict, "lost") ? "" :
				 " (its own marker lost, none of another's found)");
		} else if (f->n_subst && f->at < 0) {
			f->match = PAIR_POSSIBLE;
			snprintf(f->why, sizeof(f->why),
				 "possibly a substitution at step %" PRId64 "%s: no divergent token to compare",
				 f->step, f->in_reference ? " in the reference request" : "");
		} else if (f->n_subst && f->token < 0) {
			f->match = PAIR_POSSIBLE;
			snprintf(f->why, sizeof(f->why),
				 "possibly a substitution at step %" PRId64 ": prompt length unknown, token not comparable",
				 f->step);
		} else if (f->n_subst) {
			snprintf(f->why, sizeof(f->why),
				 "unexplained: %zu substitution(s) in the request, first at token %" PRId64
				 " (step %" PRId64 "), not at the first divergent token %ld",
				 f->n_subst, f->token, f->step, f->at);
		} else if (!r->merges) {
			snprintf(f->why, sizeof(f->why), "unexplained: no audit for this run");
		} else {
			snprintf(f->why, sizeof(f->why), "unexplained: no substitution in this request");
		}
		if (f->match == PAIR_EXPLAINED)
			r->n_explained++;
		else if (f->match == PAIR_POSSIBLE)
			r->n_possible++;
		else if (f->match == PAIR_LEAK_UNEXPLAINED)
			r->n_leak_unexplained++;
		else if (f->match == PAIR_NO_FOREIGN)
			r->n_no_foreign++;
		else
			r->n_unexplained++;
	}
	return STATUS_OK;
}

/*
 * One run's verdict (pair.h). The baseline check follows `ttaudit plan`: 0
 * failing of n rules out the baseline when n reaches the requests for which
 * 0 failures rule it out at the two-sided confidence, i.e. when the upper end
 * of the Clopper-Pearson interval of 0 of n falls below it.
 */
static void pair_verdict_of(const struct pair *p, struct pair_run *r)
{
	double conf = p->o.confidence, alpha = (1 - conf) / 2;
	char pct[96], cmd[96];
	size_t n = 0;

	r->n_to_bound = 0;
	r->verdict_why[0] = '\0';
	if (r->subst || r->n_failing || !strcmp(r->arm_verdict, "contradicted")) {
		r->verdict = PAIR_FAIL;
		if (r->subst)
			n += (size_t)snprintf(r->verdict_why + n, sizeof(r->verdict_why) - n,
					      "%" PRIu64 " substitution(s) made", r->subst);
		if (r->n_failing && n < sizeof(r->verdict_why))
			n += (size_t)snprintf(r->verdict_why + n, sizeof(r->verdict_why) - n, "%s%zu failing "
					      "request(s)", n ? ", " : "", r->n_failing);
		if (!strcmp(r->arm_verdict, "contradicted") && n < sizeof(r->verdict_why))
			snprintf(r->verdict_why + n, sizeof(r->verdict_why) - n, "%sthe recorded decisions "
				 "contradict the arm", n ? ", " : "");
		return;
	}
	r->verdict = PAIR_INCONCLUSIVE;
	if (!r->merges) {
		snprintf(r->verdict_why, sizeof(r->verdict_why), "no merge event paired with this run: "
			 "the substitutions it received are not known");
		return;
	}
	if (!r->actual_from_taken && r->arm_rule == SIZE_MAX) {
		snprintf(r->verdict_why, sizeof(r->verdict_why), "the audit records no decisions (`taken`) "
			 "and the run declares no rule: the substitutions made are not known");
		return;
	}
	if (r->unverified) {
		snprintf(r->verdict_why, sizeof(r->verdict_why), "%" PRIu64 " take(s) whose staleness no "
			 "evidence on the event can judge", r->unverified);
		return;
	}
	if (r->has_correctness && p->o.baseline > 0) {
		r->n_to_bound = rate_n_to_bound(p->o.baseline, 1 - alpha);
		if (r->n_correct < r->n_to_bound) {
			snprintf(r->verdict_why, sizeof(r->verdict_why), "0 failing of %zu %s, not the baseline "
				 "%g%% per request; %" PRIu64 " requests would (%s)", r->n_correct,
				 rate_describe(pct, sizeof(pct), 0, r->n_correct, conf, 100, "%"),
				 100 * p->o.baseline, r->n_to_bound,
				 rate_plan_command(cmd, sizeof(cmd), p->o.baseline, conf));
			return;
		}
	}
	r->verdict = PAIR_PASS;
	if (r->has_correctness && p->o.baseline > 0)
		snprintf(r->verdict_why, sizeof(r->verdict_why), "clean; 0 failing of %zu rules out the "
			 "baseline %g%%", r->n_correct, 100 * p->o.baseline);
	else
		snprintf(r->verdict_why, sizeof(r->verdict_why), "clean");
}

/* --- lifecycle -------------------------------------------------------------- */

enum status pair_build(const struct pair_opts *o, struct pair **out, struct status_info *si)
{
	struct pair *p;
	enum status st = STATUS_OK;
	size_t i;

	*out = NULL;
	if (!o->n_runs || o->n_runs > PAIR_MAX_FILES || o->n_audits > PAIR_MAX_FILES)
		return status_set(si, STATUS_USAGE, "want 1 to %d run files and at most %d audits",
				  PAIR_MAX_FILES, PAIR_MAX_FILES);
	p = calloc(1, sizeof(*p));
	if (!p || !(p->runs = calloc(PAIR_MAX_RUNS, sizeof(*p->runs)))) {
		free(p);
		return status_set(si, STATUS_NOMEM, "out of memory");
	}
	p->o = *o;
	if (p->o.slack_s < 0)
		p->o.slack_s = PAIR_DEFAULT_SLACK;
	if (!(p->o.confidence > 0 && p->o.confidence < 1))
		p->o.confidence = PAIR_DEFAULT_CONFIDENCE;
	if (!(p->o.baseline > 0 && p->o.baseline < 1))
		p->o.baseline = 0;
	p->diag = o->diag ? o->diag : stderr;
	for (i = 0; !st && i < o->n_runs; i++)
		st = pair_read_runs(p, i, si);
	if (!st)
		st = pair_index_ids(p, si);
	for (i = 0; !st && i < o->n_audits; i++)
		st = pair_read_audit(p, i, si);
	if (!st)
		st = pair_attribute(p, si);
	for (i = 0; !st && i < p->n_runs; i++)
		pair_verdict_of(p, &p->runs[i]);
	if (st) {
		pair_free(p);
		return st;
	}
	*out = p;
	return STATUS_OK;
}

void pair_free(struct pair *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->n_runs; i++) {
		tally_free(p->runs[i].tally);
		free(p->runs[i].substs);
		free(p->runs[i].failures);
	}
	free(p->runs);
	free(p->reqs);
	reqid_free(p->ids);
	free(p);
}

size_t pair_n_runs(const struct pair *p) { return p->n_runs; }
const struct pair_run *pair_run_at(const struct pair *p, size_t i) { return i < p->n_runs ? &p->runs[i] : NULL; }
uint64_t pair_merges_outside(const struct pair *p) { return p->outside; }
uint64_t pair_malformed(const struct pair *p) { return p->malformed; }
uint64_t pair_audit_lines(const struct pair *p) { return p->audit_lines; }
double pair_confidence(const struct pair *p) { return p->o.confidence; }
double pair_baseline(const struct pair *p) { return p->o.baseline; }
const char *pair_audit_file(const struct pair *p, size_t i) { return i < p->o.n_audits ? p->o.audits[i] : ""; }
const char *pair_run_file(const struct pair *p, size_t i) { return i < p->o.n_runs ? p->o.runs[i] : ""; }
size_t pair_n_run_files(const struct pair *p) { return p->o.n_runs; }
size_t pair_n_audit_files(const struct pair *p) { return p->o.n_audits; }
