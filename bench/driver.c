/*
 * driver.c - a bench run (driver.h), stage by stage: the gates of every
 * server (driver_gate.c), the prompts, the canary's calibration and the
 * correctness reference, each cell's repeats through the load loop, the
 * medians and verdicts (driver_verdict.c), the records. /metrics is
 * srvmetrics.c, sizing sizer.c, the report benchreport.c.
 */
#include "bench/driver_priv.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/benchreport.h"
#include "bench/graded.h"
#include "base/hash.h"
#include "probe/http.h"
#include "bench/sizer.h"
#include "bench/srvmetrics.h"

/* --- progress ------------------------------------------------------------- */

static void driver_progress(void *ctx, const struct load_progress *p)
{
	struct driver_prog *g = ctx;
	char bar[31];
	size_t i, fill = p->n_total ? p->n_done * 30 / p->n_total : 0;

	for (i = 0; i < 30; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[30] = '\0';
	fprintf(g->f, "\r%-28s [%s] %zu/%zu done  %.0f tok/s  %zu errors ", g->label, bar, p->n_done,
		p->n_total, p->elapsed > 0 ? (double)p->n_chunks / p->elapsed : 0.0, p->n_failed);
	fflush(g->f);
	g->drawn = true;
}

static void driver_progress_end(struct driver_prog *g)
{
	if (g->f && g->drawn) {
		fprintf(g->f, "\r%*s\r", 110, "");
		fflush(g->f);
	}
	g->drawn = false;
}

/* --- one load run ------------------------------------------------------- */

/* A canary run: which markers its requests carry, and where its verdicts go. */
struct driver_can {
	size_t entry;               /* the suite entry of its first request */
	enum canary_kind kind;      /* CANARY_SENT (checked) or CANARY_CALIB */
	size_t first;               /* its first marker of that kind */
	const struct canary_calib *cal;
	struct canary_report *rep;  /* SENT: the verdicts */
};

/* How the prompts of a run are kept from the server's prefix cache. */
enum driver_nonce {
	DRIVER_NONCE_PER_REQUEST,   /* cold: every request its own nonce, from cell and request */
	DRIVER_NONCE_PER_PROMPT,    /* correctness: the reference and the run under test send the
				     * same body for a prompt */
	DRIVER_NONCE_SHARED,        /* warm: one nonce for the whole run */
	DRIVER_NONCE_NONE,          /* canary: request i is the suite's entry `entry` + i, whose
				     * unique marker keeps it cold */
};

/* The settings of one load run of one server (driver_one). */
struct driver_req {
	size_t arm;                 /* index in driver_opts.arms */
	const char *phase;          /* "bench", "correctness", "canary", "accuracy" (runs under
				     * test), "reference", "calibration": in run ids and records */
	enum load_arrival arrival;
	double level;               /* concurrency, batch size or rate */
	unsigned repeat;
	size_t n;                   /* requests */
	enum driver_nonce nonce;    /* DRIVER_NONCE_NONE whenever can is set */
	double temperature;
	bool keep_text;             /* keep outputs (a reference, a run compared with one) */
	const struct load_run *ref; /* the reference to compare with, or NULL */
	const struct driver_can *can;   /* a canary run, or NULL */
};

static uint64_t driver_key(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	uint64_t k[5] = { a, b, c, d, e };

	return hash_fnv1a(HASH_FNV1A_INIT, k, sizeof(k));
}

/* Builds n requests for arm a: bodies, urls. Caller frees with driver_requests_free. */
struct driver_reqs {
	struct load_request *rq;
	char **bodies;
	char **urls;
	size_t n;
};

static void driver_requests_free(struct driver_reqs *r)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		if (r->bodies)
			free(r->bodies[i]);
		if (r->urls)
			free(r->urls[i]);
	}
	free(r->bodies);
	free(r->urls);
	free(r->rq);
	memset(r, 0, sizeof(*r));
}

/* The n requests of run q: bodies and urls, the nonces q->nonce says. */
static enum status driver_requests(struct driver_ctx *c, const struct driver_req *q, uint64_t cell_key,
				   struct churn_plan *plan, struct driver_reqs *r, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	const size_t a = q->arm, n = q->n, entry = q->can ? q->can->entry : 0;
	struct suite_body_opts bo;
	char nonce[SUITE_NONCE_LEN + 1], url[HTTP_MAX_URL];
	const char *route;
	size_t i, p;
	uint64_t key;

	memset(r, 0, sizeof(*r));
	r->rq = calloc(n, sizeof(*r->rq));
	r->bodies = calloc(n, sizeof(char *));
	r->urls = calloc(n, sizeof(char *));
	r->n = n;
	if (!r->rq || !r->bodies || !r->urls)
		return status_set(si, STATUS_NOMEM, "out of memory building requests");
	memset(&bo, 0, sizeof(bo));
	bo.model = c->as[a].model[0] ? c->as[a].model : NULL;
	bo.nonce = nonce;
	bo.temperature = q->temperature;
	bo.ignore_eos = o->ignore_eos;
	bo.no_usage = o->no_usage;
	/* canary: each request its own entry, its marker keeps it cold */
	bo.return_token_ids = q->nonce == DRIVER_NONCE_NONE || o->accuracy || o->margins;
	for (i = 0; i < n; i++) {
		p = q->nonce == DRIVER_NONCE_NONE ? entry + i : i % c->suite->n;
		if (p >= c->suite->n)
			return status_set(si, STATUS_USAGE, "request %zu past the %zu prompts", i, c->suite->n);
		if (q->nonce == DRIVER_NONCE_PER_REQUEST)
			key = driver_key(o->corpus_seed, cell_key, i, 1, 0);
		else if (q->nonce == DRIVER_NONCE_PER_PROMPT)
			key = driver_key(o->corpus_seed, p, 2, 0, 0);
		else
			key = driver_key(o->corpus_seed, 3, 0, 0, 0);
		suite_nonce(key, nonce);
		bo.nonce = q->nonce == DRIVER_NONCE_NONE ? NULL : nonce;
		if (plan) {
			churn_resolve(plan, i, c->suite->e[p].max_tokens);
			bo.max_tokens = plan->r[i].max_tokens;
			bo.preface = churn_preface(plan, i);
			/* the entry decides the API: a chat entry has messages */
			bo.extra = churn_extra(plan, i, c->suite->e[p].messages != NULL);
			r->rq[i].abort_after = (size_t)plan->r[i].abort_at;
		}
		r->bodies[i] = suite_body(c->suite, p, &bo, &route, &r->rq[i].body_len);
		if (!r->bodies[i] || http_join(c->as[a].id.url, route, url, sizeof(url)) ||
		    !(r->urls[i] = strdup(url)))
			return status_set(si, STATUS_NOMEM, "out of memory building requests");
		r->rq[i].url = r->urls[i];
		r->rq[i].body = r->bodies[i];
		r->rq[i].api = !strcmp(route, "/v1/chat/completions") ? LOAD_API_CHAT : LOAD_API_COMPLETIONS;
		r->rq[i].prompt_index = p;
	}
	return STATUS_OK;
}

/* The largest max_tokens of the suite's entries: churn's M. */
static long driver_max_tokens(const struct suite *su)
{
	long m = 2;
	size_t i;

	for (i = 0; i < su->n; i++)
		if (su->e[i].max_tokens > m)
			m = su->e[i].max_tokens;
	return m;
}

/* The cell of arm a at `level`, or NULL for a level no cell has (a reference, a calibration). */
static struct driver_cell *driver_cell_of(struct driver_ctx *c, size_t a, double level)
{
	struct driver_cell *dc = NULL;
	size_t li;

	for (li = 0; li < c->o->n_levels; li++)
		if (c->o->levels[li] == level)
			dc = &c->rep->cells[a * c->o->n_levels + li];
	return dc;
}

/* Churn shapes the runs under test, never a reference or a calibration. */
static bool driver_under_test(const char *phase)
{
	return !strcmp(phase, "bench") || !strcmp(phase, "canary") || !strcmp(phase, "correctness") ||
	       !strcmp(phase, "accuracy");
}

/* The load loop's options for run q. */
static void driver_load_opts(struct driver_ctx *c, const struct driver_req *q, const char *run_id,
			     struct load_opts *lo)
{
	const struct driver_opts *o = c->o;

	memset(lo, 0, sizeof(*lo));
	lo->request_id_prefix = run_id;
	lo->arrival = q->arrival;
	lo->concurrency = q->arrival == LOAD_CLOSED ? (unsigned)q->level : 0;
	lo->rate = q->arrival == LOAD_POISSON ? q->level : 0;
	lo->seed = o->arrival_seed + q->repeat;
	lo->timeout_s = o->timeout_s;
	lo->stall_s = o->stall_s;
	lo->keep_text = q->keep_text || q->can || o->accuracy;
	lo->keep_ids = q->can != NULL || o->accuracy || o->margins;
	lo->loop_times = o->loop_times;
	if (o->progress) {
		c->prog.f = o->progress;
		snprintf(c->prog.label, sizeof(c->prog.label), "%s%s%.24s %s%g rep %u", q->phase,
			 o->arms[q->arm].arm ? " " : "", o->arms[q->arm].arm ? o->arms[q->arm].arm : "",
			 q->arrival == LOAD_CLOSED ? "c=" : q->arrival == LOAD_BATCH ? "b=" : "r=", q->level,
			 q->repeat + 1);
		lo->progress = driver_progress;
		lo->progress_ctx = &c->prog;
	}
}

/*
 * The grade of every request of an accuracy run: "failed", "cut" (cut short
 * by design: no answer to grade), "wrong" (missing[i]: the expected string
 * not found) or "right". *grades and *missing are the caller's to free.
 */
static enum status driver_grade(struct driver_ctx *c, const struct load_run *run, const struct churn_plan *plan,
				const char ***grades, const char ***missing, struct status_info *si)
{
	size_t i;

	*grades = calloc(run->n ? run->n : 1, sizeof(**grades));
	*missing = calloc(run->n ? run->n : 1, sizeof(**missing));
	if (!*grades || !*missing)
		return status_set(si, STATUS_NOMEM, "out of memory");
	for (i = 0; i < run->n; i++) {
		const struct load_result *x = &run->res[i];
		const struct suite_entry *e = &c->suite->e[x->prompt_index];

		if (x->fail)
			(*grades)[i] = "failed";
		else if (x->aborted || (plan && plan->r[i].max_tokens < plan->r[i].entry_max))
			(*grades)[i] = "cut";
		else
			(*grades)[i] = ((*missing)[i] = correct_missing(e, x->text)) ? "wrong" : "right";
	}
	return STATUS_OK;
}

/* A canary run: every request's end noted, then (SENT) its outputs checked. */
static enum status driver_canary_run(struct driver_ctx *c, const struct driver_can *dcan,
				     const struct load_run *run, struct status_info *si)
{
	size_t i;

	/* every request's end first: a donor in this run is then known */
	for (i = 0; i < run->n; i++) {
		const struct load_result *x = &run->res[i];

		/* a donor has finished once its last token came (or the
		 * client cancelled it), not only at [DONE] */
		canary_note(c->can, dcan->kind, dcan->first + i, x->xid[0] ? x->xid : x->id,
			    x->aborted || !x->t_last ? x->t_end : x->t_last, x->aborted);
	}
	if (!dcan->rep)
		return STATUS_OK;
	return canary_check(c->can, dcan->cal, run, dcan->first, dcan->rep, si);
}

/* What a run adds to its cell and to the report once recorded: accuracy
 * grades and anomalies, churn's transitions, the cold claim. */
static void driver_count(struct driver_ctx *c, const struct driver_req *q, const struct load_run *run,
			 const char *const *grades, const struct churn_plan *plan, bool hits_ok, double hits)
{
	struct driver_cell *dc;
	size_t i, k;

	if (grades && (dc = driver_cell_of(c, q->arm, q->level))) {
		for (i = 0; i < run->n; i++) {
			dc->acc_cut += !strcmp(grades[i], "cut");
			dc->acc_failed += !strcmp(grades[i], "failed");
			if (!strcmp(grades[i], "right") || !strcmp(grades[i], "wrong")) {
				dc->acc_n++;
				dc->acc_right += !strcmp(grades[i], "right");
			}
		}
		driver_tally_anomalies(dc, run, c->o->vocab_size);
	}
	if (plan) {
		for (i = 0; i < run->n; i++) {
			unsigned t = churn_transitions(plan, i, &run->res[i]);

			for (k = 0; k < CHURN_T__COUNT; k++)
				c->rep->transitions[k] += (t >> k) & 1u;
		}
		return;
	}
	/* the runs that claim to be cold: the prefix cache must not have hit */
	if (q->nonce == DRIVER_NONCE_PER_REQUEST || (q->can && q->can->kind == CANARY_SENT)) {
		dc = driver_cell_of(c, q->arm, q->level);
		if (dc) {
			if (!hits_ok)
				dc->n_cold_unchecked++;
			else if (hits > 0)
				dc->n_cold_invalid++;
			dc->prefix_hits += hits_ok ? hits : 0;
		}
	}
}

/*
 * One load run q: its requests built, sent through the load loop, compared
 * with q->ref, graded or checked for markers, recorded, counted into its
 * cell. Hands back the run (*out_run, the caller's to load_run_free), its
 * figures (*out_st) and its comparison (*corr; empty without q->ref), both
 * the caller's to release; on error nothing is handed back.
 */
static enum status driver_one(struct driver_ctx *c, const struct driver_req *req, struct load_run **out_run,
			      struct stats_run *out_st, struct correct_report *corr, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct driver_req q = *req;
	const size_t a = q.arm;
	struct driver_reqs rq;
	struct load_opts lo;
	struct record_cell cell;
	struct churn_plan plan;
	bool have_plan = false;
	const char **grades = NULL, **missing = NULL;
	char run_id[160];
	double h0 = 0, h1 = 0;
	bool h0_ok, h1_ok;
	enum status st;
	uint64_t cell_key = driver_key(a, (uint64_t)(q.level * 1000), q.repeat, q.phase[0], 7);

	*out_run = NULL;
	memset(out_st, 0, sizeof(*out_st));
	memset(corr, 0, sizeof(*corr));
	memset(&plan, 0, sizeof(plan));
	memset(&rq, 0, sizeof(rq));
	if (q.can)
		q.nonce = DRIVER_NONCE_NONE;
	if (o->churn && driver_under_test(q.phase)) {
		/* accuracy: the same plan for every server at a level, so the
		 * control sees the treatment's workload */
		st = churn_plan_make(&plan, driver_key(o->corpus_seed, o->accuracy ?
							driver_key((uint64_t)(q.level * 1000), q.repeat, 5, 0, 0) :
							cell_key, 11, 0, 0), q.n,
				     driver_max_tokens(c->suite), o->max_num_seqs,
				     o->churn_pressure ? o->churn_pressure : 512, !o->correctness, si);
		if (st)
			goto out;
		have_plan = true;
	}
	st = driver_requests(c, &q, cell_key, have_plan ? &plan : NULL, &rq, si);
	if (st)
		goto out;
	snprintf(run_id, sizeof(run_id), "%016" PRIx64 "-%s-a%zu-%g-r%u", o->corpus_seed, q.phase, a, q.level,
		 q.repeat);
	driver_load_opts(c, &q, run_id, &lo);
	h0_ok = srvmetrics_read_hits(c->as[a].id.url, &h0);
	st = load_run_exec(&lo, rq.rq, rq.n, out_run, si);
	driver_progress_end(&c->prog);
	if (st)
		goto out;
	h1_ok = h0_ok && srvmetrics_read_hits(c->as[a].id.url, &h1);
	st = stats_run_compute(*out_run, out_st, si);
	if (st)
		goto out;
	if (q.ref) {
		st = correct_compare(c->suite, q.ref, *out_run, corr, si);
		if (!st && c->mg)
			st = margins_collect(c->mg, a, c->as[a].id.url, c->as[a].model[0] ? c->as[a].model : NULL,
					     rq.bodies, *out_run, q.ref, corr, si);
		if (st)
			goto out;
	}
	if (o->accuracy && !strcmp(q.phase, "accuracy")) {
		st = driver_grade(c, *out_run, have_plan ? &plan : NULL, &grades, &missing, si);
		if (st)
			goto out;
	}
	if (q.can) {
		st = driver_canary_run(c, q.can, *out_run, si);
		if (st)
			goto out;
	}
	memset(&cell, 0, sizeof(cell));
	cell.run_id = run_id;
	cell.phase = q.phase;
	cell.arm_index = a;
	cell.repeat = q.repeat;
	cell.arrival = q.arrival;
	cell.concurrency = q.arrival == LOAD_CLOSED ? (unsigned)q.level : 0;
	cell.batch = q.arrival == LOAD_BATCH ? (unsigned)q.level : 0;
	cell.rate = q.arrival == LOAD_POISSON ? q.level : 0;
	cell.arrival_seed = lo.seed;
	/* churn sends a shared prefix on purpose: no cold claim to check */
	cell.cache_claim = have_plan ? "shared-prefix" :
			   q.nonce == DRIVER_NONCE_PER_REQUEST || q.nonce == DRIVER_NONCE_NONE ? "cold" : "warm";
	cell.prefix_known = h1_ok;
	cell.prefix_hits_delta = h1 - h0;
	cell.cold_claim_valid = h1_ok && h1 - h0 <= 0;
	cell.temperature = q.temperature;
	cell.correct = q.ref ? corr : NULL;
	cell.canary = q.can ? q.can->rep : NULL;
	cell.canary_set = q.can ? c->can : NULL;
	cell.canary_first = q.can ? q.can->first : 0;
	cell.canary_kind = q.can ? (int)q.can->kind : 0;
	cell.churn = have_plan ? &plan : NULL;
	cell.anomalies = q.can != NULL || grades;
	cell.grades = grades;
	cell.grade_missing = missing;
	cell.vocab_size = o->vocab_size;
	st = record_run(c->rec, &c->as[a].id, &cell, *out_run, out_st, o->token_times, si);
	if (st)
		goto out;
	driver_count(c, &q, *out_run, grades, have_plan ? &plan : NULL, h1_ok, h1 - h0);
out:
	driver_requests_free(&rq);
	churn_plan_release(&plan);
	free(grades);
	free(missing);
	if (st) {
		load_run_free(*out_run);
		*out_run = NULL;
		stats_run_release(out_st);
		correct_report_release(corr);
	}
	return st;
}

/* Copies figures of a run into dst (staircase duplicated). */
static enum status driver_keep(struct stats_run *dst, const struct stats_run *src)
{
	stats_run_release(dst);
	*dst = *src;
	dst->staircase = NULL;
	if (src->n_staircase) {
		dst->staircase = malloc(src->n_staircase * sizeof(double));
		if (!dst->staircase)
			return STATUS_NOMEM;
		memcpy(dst->staircase, src->staircase, src->n_staircase * sizeof(double));
	}
	return STATUS_OK;
}

/* --- what the stages need ------------------------------------------------ */

/* Requests of a run at `level` (the suite's n for the usual stage). */
static size_t driver_cell_n(const struct driver_opts *o, double level, size_t suite_n)
{
	if (o->arrival == LOAD_BATCH)
		return (size_t)level;
	if (o->n_requests)
		return o->n_requests;
	if (o->churn)
		/* two waves at least: rows freed and filled again */
		return level < 32 || o->arrival == LOAD_POISSON ? 64 : 2 * (size_t)ceil(level);
	if (o->canary)
		return o->arrival == LOAD_POISSON || level < 32 ? 32 : (size_t)ceil(level);
	return suite_n > (size_t)level ? suite_n : (size_t)ceil(level);
}


/*
 * The canary's markers by the server's tokenizer, for the search of token
 * ids: every marker as it stands in an answer (after a space), the task's
 * own words as the ids every marker shares. Off, with the reason in the arm's
 * note, when the server sends no ids or has no tokenizer route.
 */
static enum status driver_canary_ids(struct driver_ctx *c, struct status_info *si)
{
	struct driver_report *rep = c->rep;
	struct sizer *z = NULL;
	struct status_info esi;
	int64_t ids[CANARY_MAX_IDS], common[4 * CANARY_MAX_IDS];
	size_t k, i, n, n_common = 0, a;
	char text[CANARY_MARKER_LEN + 2], idp[64];
	enum status st;
	static const char *const words[] = { "Code: \nCopy: \nCopy:",
		"Code: \nRepeat the code four times, separated by spaces, and write nothing else." };

	for (a = 0; a < c->o->n_arms; a++)
		if (!rep->arms[a].cal.ids_returned || strcmp(rep->arms[a].model, rep->arms[0].model)) {
			for (k = 0; k < c->o->n_arms; k++)
				snprintf(rep->arms[k].ids_note, sizeof(rep->arms[k].ids_note), "%s",
					 !rep->arms[a].cal.ids_returned ?
					 "token ids not searched: a server sent none with its chunks" :
					 "token ids not searched: the servers serve different models");
			return STATUS_OK;
		}
	snprintf(idp, sizeof(idp), "%016" PRIx64 "-canary", c->o->corpus_seed);
	st = sizer_new(&z, c->o->arms[0].url, rep->arms[0].model[0] ? rep->arms[0].model : NULL, idp, si);
	if (st)
		return st;
	status_info_clear(&esi);
	for (i = 0; i < 2 && !st; i++) {
		st = sizer_ids(z, words[i], common + n_common, 2 * CANARY_MAX_IDS, &n, &esi);
		n_common += n;
	}
	for (k = 0; k < CANARY__KINDS && !st; k++)
		for (i = 0; i < canary_count(c->can, (enum canary_kind)k) && !st; i++) {
			snprintf(text, sizeof(text), " %s", canary_text(c->can, (enum canary_kind)k, i));
			st = sizer_ids(z, text, ids, CANARY_MAX_IDS, &n, &esi);
			if (!st)
				canary_set_ids(c->can, (enum canary_kind)k, i, ids, n);
		}
	sizer_free(z);
	if (st) {
		for (a = 0; a < c->o->n_arms; a++)
			snprintf(rep->arms[a].ids_note, sizeof(rep->arms[a].ids_note),
				 "token ids not searched: no tokenizer (%.90s)", esi.msg);
		return STATUS_OK;
	}
	st = canary_ids_done(c->can, common, n_common, si);
	for (a = 0; !st && a < c->o->n_arms; a++)
		rep->arms[a].ids_searched = true;
	return st;
}

static enum status driver_check_opts(const struct driver_opts *o, struct status_info *si)
{
	size_t i;

	if (!o->n_arms)
		return status_set(si, STATUS_USAGE, "no server (--url)");
	if (o->n_arms > DRIVER_MAX_ARMS)
		return status_set(si, STATUS_USAGE, "more than %d servers", DRIVER_MAX_ARMS);
	if (!o->n_levels || o->n_levels > DRIVER_MAX_LEVELS)
		return status_set(si, STATUS_USAGE, "%zu levels (want 1 to %d)", o->n_levels, DRIVER_MAX_LEVELS);
	if (!o->repeats || o->repeats > DRIVER_MAX_REPEATS)
		return status_set(si, STATUS_USAGE, "repeats %u (want 1 to %d)", o->repeats, DRIVER_MAX_REPEATS);
	if (!o->out)
		return status_set(si, STATUS_USAGE, "no record file (-o)");
	for (i = 0; i < o->n_levels; i++) {
		if (o->arrival == LOAD_POISSON ? !(o->levels[i] > 0)
					       : (o->levels[i] < 1 || o->levels[i] > LOAD_MAX_INFLIGHT ||
						  o->levels[i] != floor(o->levels[i])))
			return status_set(si, STATUS_USAGE, "level %g is not valid for %s arrivals",
					  o->levels[i], record_arrival_name(o->arrival));
	}
	for (i = 0; i < o->n_arms; i++)
		if (o->arms[i].arm && !o->no_arm_check && !o->spec)
			return status_set(si, STATUS_USAGE, "arm '%s' named without --spec (or --no-arm-check)",
					  o->arms[i].arm);
	if (o->arrival == LOAD_BATCH && o->n_requests)
		return status_set(si, STATUS_USAGE, "--requests does not apply to --batch (a run is one batch "
				  "of the level's size; use --repeats)");
	if (o->correctness && o->warm)
		return status_set(si, STATUS_USAGE, "--correctness and --warm together (correctness sends "
				  "the reference's bodies)");
	if (o->churn && (o->arrival == LOAD_BATCH || o->warm))
		return status_set(si, STATUS_USAGE, "--workload churn is a closed loop or Poisson arrivals, "
				  "cold: not with --batch or --warm");
	if (o->accuracy && (o->warm || o->correctness || o->canary))
		return status_set(si, STATUS_USAGE, "--correctness accuracy is a stage of its own");
	if (o->canary && (o->suite || o->warm || o->correctness))
		return status_set(si, STATUS_USAGE, "--correctness canary writes its own prompts: not with "
				  "--suite, --warm or the reference stage");
	return STATUS_OK;
}

static void driver_fill_identity(struct driver_ctx *c)
{
	size_t a;

	for (a = 0; a < c->o->n_arms; a++) {
		c->as[a].id.suite_hash = c->suite->hash;
		c->as[a].id.suite_source = c->suite->source;
		c->as[a].id.sizing = c->suite->sizing;
		c->as[a].id.corpus_seed = c->o->corpus_seed;
	}
}

/* --- the stages of a run -------------------------------------------------- */

/* The report's settings and its cells (arm-major), and the figures kept per repeat. */
static enum status driver_report_init(struct driver_ctx *c, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct driver_report *rep = c->rep;
	size_t i;

	rep->n_arms = o->n_arms;
	rep->arrival = o->arrival;
	rep->correctness = o->correctness;
	rep->canary = o->canary;
	rep->accuracy = o->accuracy;
	rep->control = o->accuracy && o->n_arms >= 2 ? o->n_arms - 1 : SIZE_MAX;
	rep->vocab_size = o->vocab_size;
	rep->churn = o->churn;
	rep->max_num_seqs = o->max_num_seqs;
	rep->confidence = o->confidence > 0 && o->confidence < 1 ? o->confidence : 0.95;
	rep->baseline = o->baseline > 0 && o->baseline < 1 ? o->baseline : 0;
	rep->warm = o->warm;
	rep->corpus_seed = o->corpus_seed;
	if (gethostname(c->host, sizeof(c->host) - 1))
		snprintf(c->host, sizeof(c->host), "unknown");
	rep->n_cells = o->n_arms * o->n_levels;
	rep->cells = calloc(rep->n_cells, sizeof(*rep->cells));
	c->keep = calloc(rep->n_cells * o->repeats, sizeof(*c->keep));
	if (!rep->cells || !c->keep)
		return status_set(si, STATUS_NOMEM, "out of memory");
	for (i = 0; i < rep->n_cells; i++) {
		rep->cells[i].arm_index = i / o->n_levels;
		rep->cells[i].level = o->levels[i % o->n_levels];
		rep->cells[i].tok_s = calloc(o->repeats, sizeof(double));
		if (!rep->cells[i].tok_s)
			return status_set(si, STATUS_NOMEM, "out of memory");
	}
	return STATUS_OK;
}

/* Stage 1: every server's gate, in order; the first that fails stops the
 * run (rep->gate_failed says why). */
static enum status driver_gates(struct driver_ctx *c, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct arm_spec *spec = NULL;
	bool passed = true;
	enum status st = STATUS_OK;
	size_t a;

	if (o->spec && !o->no_arm_check) {
		st = arm_spec_load(o->spec, &spec, si);
		if (st)
			return st;
	}
	for (a = 0; a < o->n_arms && passed && !st; a++)
		st = driver_gate(c, a, spec, &passed, si);
	arm_spec_free(spec);
	return st;
}

/* Stage 2: the prompts: the canary's, the graded set, or a suite generated
 * and sized with the first server's tokenizer (a --suite was loaded before
 * the gates). */
static enum status driver_prompts(struct driver_ctx *c, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct driver_report *rep = c->rep;
	enum status st = STATUS_OK;
	size_t li, total = 0;
	unsigned r;

	if (o->canary) {
		for (r = 0; r < o->repeats; r++)
			for (li = 0; li < o->n_levels; li++)
				total += o->n_arms * driver_cell_n(o, o->levels[li], 0);
		st = canary_set_new(o->corpus_seed, total, CANARY_CALIBRATION * o->n_arms, &c->can, si);
		if (!st)
			st = canary_suite(c->can, o->gen.chat, o->gen.max_tokens > 0 ? o->gen.max_tokens : 16,
					  &c->suite, si);
	} else if (o->accuracy && !o->suite) {
		st = graded_suite(o->corpus_seed, o->gen.chat, o->gen.max_tokens > 0 ? o->gen.max_tokens : 48,
				  &c->suite, si);
	} else if (!o->suite) {
		struct suite_sizer sz;
		struct sizer *z = NULL;
		char idp[64];

		/* its requests named like the load's (the corpus seed first) */
		snprintf(idp, sizeof(idp), "%016" PRIx64, o->corpus_seed);
		st = sizer_new(&z, o->arms[0].url, c->as[0].model[0] ? c->as[0].model : NULL, idp, si);
		if (st)
			return st;
		sizer_bind(z, &sz);
		st = suite_generate(&c->suite, &o->gen, &sz, si);
		/* how the server's tokenizer was asked, or why it was not used */
		if (!st)
			sizer_refine(z, c->suite->sizing, sizeof(c->suite->sizing));
		sizer_free(z);
	}
	if (st)
		return st;
	snprintf(rep->suite_hash, sizeof(rep->suite_hash), "%s", c->suite->hash);
	snprintf(rep->suite_source, sizeof(rep->suite_source), "%s", c->suite->source);
	snprintf(rep->sizing, sizeof(rep->sizing), "%s", c->suite->sizing);
	rep->suite_n = c->suite->n;
	driver_fill_identity(c);
	return STATUS_OK;
}

/* Stage 3a: the canary's calibration of every server (markers it is never
 * sent), then the markers' token ids. */
static enum status driver_calibration(struct driver_ctx *c, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct load_run *run = NULL;
	struct stats_run st_run;
	struct correct_report corr;
	enum status st;
	size_t a;

	for (a = 0; a < o->n_arms; a++) {
		struct driver_can dcan = { canary_count(c->can, CANARY_SENT) + a * CANARY_CALIBRATION,
					   CANARY_CALIB, a * CANARY_CALIBRATION, NULL, NULL };
		struct driver_req q = { .arm = a, .phase = "calibration", .arrival = LOAD_CLOSED, .level = 1,
					.repeat = 0, .n = CANARY_CALIBRATION, .nonce = DRIVER_NONCE_NONE,
					.temperature = 0.0, .keep_text = true, .ref = NULL, .can = &dcan };

		st = driver_one(c, &q, &run, &st_run, &corr, si);
		if (st)
			return st;
		canary_calibrate(c->can, run, a * CANARY_CALIBRATION, &c->rep->arms[a].cal);
		stats_run_release(&st_run);
		correct_report_release(&corr);
		load_run_free(run);
		run = NULL;
	}
	return driver_canary_ids(c, si);
}

/* Stage 3b: the correctness reference of every server: every prompt alone,
 * temperature 0; its own answers checked against the suite's expect strings. */
static enum status driver_references(struct driver_ctx *c, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct driver_report *rep = c->rep;
	struct stats_run st_run;
	struct correct_report corr;
	enum status st;
	size_t a, i;

	for (a = 0; a < o->n_arms; a++) {
		struct driver_req q = { .arm = a, .phase = "reference", .arrival = LOAD_CLOSED, .level = 1,
					.repeat = 0, .n = c->suite->n, .nonce = DRIVER_NONCE_PER_PROMPT,
					.temperature = 0.0, .keep_text = true, .ref = NULL, .can = NULL };

		st = driver_one(c, &q, &c->as[a].ref, &st_run, &corr, si);
		if (st)
			return st;
		for (i = 0; i < c->as[a].ref->n; i++) {
			const struct load_result *x = &c->as[a].ref->res[i];

			rep->arms[a].ref_requests++;
			if (x->fail)
				rep->arms[a].ref_failed++;
			else if (correct_missing(&c->suite->e[x->prompt_index], x->text))
				rep->arms[a].ref_wrong++;
		}
		rep->ref_wrong += rep->arms[a].ref_wrong;
		rep->ref_failed += rep->arms[a].ref_failed;
		stats_run_release(&st_run);
		correct_report_release(&corr);
	}
	return STATUS_OK;
}

/* Stage 4, one cell's repeat r: the run under test, tallied into its cell,
 * its figures kept for the median. */
static enum status driver_cell_run(struct driver_ctx *c, size_t a, size_t li, unsigned r, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct driver_report *rep = c->rep;
	struct driver_cell *dc = &rep->cells[a * o->n_levels + li];
	struct canary_report crep;
	struct driver_can dcan = { c->can_next, CANARY_SENT, c->can_next, &rep->arms[a].cal, &crep };
	struct load_run *run = NULL;
	struct stats_run st_run;
	struct correct_report corr;
	struct driver_req q;
	enum status st;

	memset(&crep, 0, sizeof(crep));
	memset(&q, 0, sizeof(q));
	q.arm = a;
	q.phase = o->correctness ? "correctness" : o->canary ? "canary" : o->accuracy ? "accuracy" : "bench";
	q.arrival = o->arrival;
	q.level = o->levels[li];
	q.repeat = r;
	q.n = driver_cell_n(o, q.level, c->suite->n);
	q.nonce = o->correctness ? DRIVER_NONCE_PER_PROMPT : o->warm ? DRIVER_NONCE_SHARED : DRIVER_NONCE_PER_REQUEST;
	q.temperature = o->correctness || o->canary || o->accuracy ? 0.0 : o->temperature;
	q.keep_text = o->correctness;
	q.ref = o->correctness ? c->as[a].ref : NULL;
	q.can = o->canary ? &dcan : NULL;
	if (o->canary)
		c->can_next += q.n;
	st = driver_one(c, &q, &run, &st_run, &corr, si);
	if (st)
		goto out;
	driver_tally(dc, run, &st_run, &corr, o->correctness);
	if (o->canary) {
		driver_tally_anomalies(dc, run, o->vocab_size);
		driver_tally_canary(dc, &crep, run, c->can);
	}
	dc->tok_s[r] = st_run.out_tok_s;
	dc->n_repeats = r + 1;
	c->keep[(a * o->n_levels + li) * o->repeats + r] = st_run;
	correct_report_release(&corr);
	load_run_free(run);
out:
	canary_report_release(&crep);
	return st;
}

/* Stage 4: every cell's repeats, arms interleaved (A B A B ...) so that a
 * drifting host shows as spread, not as a difference between arms. */
static enum status driver_cells(struct driver_ctx *c, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	enum status st;
	size_t a, li;
	unsigned r;

	for (r = 0; r < o->repeats; r++)
		for (li = 0; li < o->n_levels; li++)
			for (a = 0; a < o->n_arms; a++) {
				st = driver_cell_run(c, a, li, r, si);
				if (st)
					return st;
			}
	return STATUS_OK;
}

/* Stage 5: per cell the median repeat and its spread, the verdicts; the
 * report's totals and worst verdicts. */
static enum status driver_summarise(struct driver_ctx *c, struct status_info *si)
{
	const struct driver_opts *o = c->o;
	struct driver_report *rep = c->rep;
	enum status st;
	size_t i, k;

	for (i = 0; i < rep->n_cells; i++) {
		struct driver_cell *dc = &rep->cells[i];

		dc->median_repeat = stats_median_repeat(dc->tok_s, dc->n_repeats, &dc->spread);
		dc->unstable = dc->spread > STATS_UNSTABLE_SPREAD;
		st = driver_keep(&dc->median, &c->keep[i * o->repeats + dc->median_repeat]);
		if (st)
			return status_set(si, st, "out of memory");
		rep->any_unstable |= dc->unstable;
		rep->any_cold_invalid |= dc->n_cold_invalid > 0;
		rep->total_requests += dc->n_requests;
		rep->total_failed += dc->n_failed;
		rep->stamped_kernel += dc->stamped_kernel;
		rep->retried += dc->retried;
		rep->stamped_loop += dc->stamped_loop;
		if (dc->send_delay_max > rep->send_delay_max)
			rep->send_delay_max = dc->send_delay_max;
		for (k = 0; k < LOAD_FAIL__COUNT; k++)
			rep->n_fail[k] += dc->n_fail[k];
		rep->corr_requests += dc->corr_requests;
		rep->corr_failing += dc->corr_failing;
		if (o->canary) {
			driver_canary_verdict(rep, dc);
			rep->can_requests += dc->can_requests;
			rep->can_leaked += dc->can_leaked;
			rep->can_lost += dc->can_lost;
			rep->can_decoy += dc->can_decoy;
			rep->an_past_vocab += dc->an_past_vocab;
			rep->an_special += dc->an_special;
			rep->an_empty_tokens += dc->an_empty_tokens;
			rep->an_empty += dc->an_empty;
			if (dc->can_verdict == DRIVER_FAIL ||
			    (dc->can_verdict == DRIVER_INCONCLUSIVE && rep->can_verdict == DRIVER_PASS))
				rep->can_verdict = dc->can_verdict;
		}
		if (o->correctness) {
			driver_verdict_of(rep, dc);
			/* the worst: FAIL over INCONCLUSIVE over PASS */
			if (dc->corr_verdict == DRIVER_FAIL ||
			    (dc->corr_verdict == DRIVER_INCONCLUSIVE && rep->corr_verdict == DRIVER_PASS))
				rep->corr_verdict = dc->corr_verdict;
		}
	}
	if (o->accuracy)
		driver_accuracy_verdicts(rep, o->n_levels);
	return STATUS_OK;
}

/* The summary, the records' last line. */
/* Stage 6: the quiet pass (--margins), after every load: one request at a
 * time re-scores each diverged output; its labels go to the record. */
static enum status driver_margins(struct driver_ctx *c, struct status_info *si)
{
	enum status st = margins_run(c->mg, c->o->timeout_s, &c->rep->mrep, si);

	c->rep->margins = !st;
	if (!st)
		st = record_margins(c->rec, &c->rep->mrep, si);
	return st;
}

static enum status driver_write_summary(struct driver_ctx *c, struct status_info *si)
{
	char *js = benchreport_json(c->rep);
	enum status st;

	if (!js)
		return status_set(si, STATUS_NOMEM, "out of memory");
	st = record_line(c->rec, js, si);
	free(js);
	return st;
}

enum status driver_run(const struct driver_opts *o, struct driver_report *rep, struct status_info *si)
{
	struct driver_ctx c;
	enum status st;
	size_t a, i;

	memset(rep, 0, sizeof(*rep));
	memset(&c, 0, sizeof(c));
	st = driver_check_opts(o, si);
	if (st)
		return st;
	/* the ready gate takes a failed exchange for a server not ready: a
	 * missing libcurl is said as what it is first */
	st = http_init(si);
	if (st)
		return st;
	c.o = o;
	c.rep = rep;
	st = driver_report_init(&c, si);
	/* bad input is refused before any server is waited for */
	if (!st && o->suite)
		st = suite_load(&c.suite, o->suite, si);
	if (!st)
		st = driver_gates(&c, si);
	if (st || rep->gate_failed)
		goto out;
	st = driver_prompts(&c, si);
	if (!st)
		st = record_open(&c.rec, o->out, si);
	if (!st && o->margins && o->correctness)
		st = margins_new(o->margin_eps, o->vocab_size, &c.mg, si);
	if (!st && o->canary)
		st = driver_calibration(&c, si);
	if (!st && o->correctness)
		st = driver_references(&c, si);
	if (!st)
		st = driver_cells(&c, si);
	if (!st)
		st = driver_summarise(&c, si);
	if (!st && c.mg)
		st = driver_margins(&c, si);
	if (!st)
		st = driver_write_summary(&c, si);
out:
	if (c.rec) {
		enum status cst = record_close(c.rec, st ? NULL : si);

		if (!st)
			st = cst;
	}
	if (c.keep)
		for (i = 0; i < rep->n_cells * o->repeats; i++)
			stats_run_release(&c.keep[i]);
	free(c.keep);
	for (a = 0; a < DRIVER_MAX_ARMS; a++) {
		free(c.as[a].ready_json);
		free(c.as[a].arm_json);
		load_run_free(c.as[a].ref);
	}
	suite_free(c.suite);
	canary_set_free(c.can);
	margins_free(c.mg);
	return st;
}

void driver_report_release(struct driver_report *rep)
{
	size_t i;

	for (i = 0; rep->cells && i < rep->n_cells; i++) {
		stats_run_release(&rep->cells[i].median);
		free(rep->cells[i].tok_s);
	}
	free(rep->cells);
	free(rep->arm_report);
	margins_report_release(&rep->mrep);
	memset(rep, 0, sizeof(*rep));
}

