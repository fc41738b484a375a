/*
 * run.c - the offline driver (see run.h).
 */
#include "tools/ttsim/run.h"
#include "base/rng.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/ttsim/vocab.h"

/* One live request of the workload; outputs are checked when it finishes. */
struct runreq {
	char id[TTSIM_ID_MAX];
	int *prompt, n_prompt, max_tokens;
	int *out, n_out;
	bool done;
	struct ttsim_req_result res;
	struct runreq *next;        /* live list */
};

struct runctx {
	struct runreq *live;
	unsigned long long finished, diverged, unexplained, undiverged;
	unsigned long long seed;
	int n_queued;               /* submitted and not finished */
	bool nomem;
};

void ttsim_run_config_default(struct ttsim_run_config *c)
{
	memset(c, 0, sizeof(*c));
	ttsim_model_config_default(&c->model);
	c->steps = 10000;
	c->prompt_min = 16;
	c->prompt_max = 48;
	c->gen_min = 8;
	c->gen_max = 64;
}

static int run_uniform(uint64_t *s, int lo, int hi)
{
	return lo + (int)(rng_next(s) % (uint64_t)(hi - lo + 1));
}

static void run_req_free(struct runreq *q)
{
	if (!q)
		return;
	free(q->prompt);
	free(q->out);
	free(q);
}

static void run_on_token(void *ctx, void *user, int index, int tok)
{
	struct runreq *q = user;

	(void)ctx;
	if (index == q->n_out && q->n_out < q->max_tokens)
		q->out[q->n_out++] = tok;
}

/* Compares with the reference: a changed substitution must be exactly where
 * the output first departs from it. */
static void run_on_finish(void *ctx, void *user, const struct ttsim_req_result *res)
{
	struct runctx *rc = ctx;
	struct runreq *q = user;
	int *ref, i, first_diff = -1;

	q->done = true;
	q->res = *res;
	rc->n_queued--;
	if (res->aborted)
		return;
	rc->finished++;
	ref = malloc((size_t)q->max_tokens * sizeof(int));
	if (!ref) {
		rc->nomem = true;
		return;
	}
	ttsim_model_reference(rc->seed, q->prompt, q->n_prompt, q->n_out, ref);
	for (i = 0; i < q->n_out; i++)
		if (ref[i] != q->out[i]) {
			first_diff = i;
			break;
		}
	free(ref);
	if (first_diff >= 0) {
		rc->diverged++;
		if (res->first_sub < 0 || first_diff < res->first_sub)
			rc->unexplained++;
	} else if (res->n_subs > 0) {
		/* Taken stale tokens that equal the reference token change nothing;
		 * counted so a reader sees them, never silently. */
		rc->undiverged++;
	}
}

static enum status run_submit(struct ttsim_model *m, struct runctx *rc,
			      const struct ttsim_run_config *c, uint64_t *rng,
			      unsigned long long n, struct status_info *si)
{
	struct runreq *q = calloc(1, sizeof(*q));
	enum status st;
	int i;

	if (!q)
		return status_set(si, STATUS_NOMEM, "run: out of memory");
	q->n_prompt = run_uniform(rng, c->prompt_min, c->prompt_max);
	q->max_tokens = run_uniform(rng, c->gen_min, c->gen_max);
	q->prompt = malloc((size_t)q->n_prompt * sizeof(int));
	q->out = malloc((size_t)q->max_tokens * sizeof(int));
	if (!q->prompt || !q->out) {
		run_req_free(q);
		return status_set(si, STATUS_NOMEM, "run: out of memory");
	}
	for (i = 0; i < q->n_prompt; i++)
		q->prompt[i] = (int)(rng_next(rng) % TTSIM_VOCAB_WORDS);
	snprintf(q->id, sizeof(q->id), "run-%06llu", n);
	st = ttsim_model_submit(m, q->id, q->prompt, q->n_prompt, q->max_tokens, q, NULL, si);
	if (st) {
		run_req_free(q);
		return st;
	}
	q->next = rc->live;
	rc->live = q;
	rc->n_queued++;
	return STATUS_OK;
}

/* Frees finished requests from the live list. */
static void run_reap(struct runctx *rc)
{
	struct runreq **pp = &rc->live, *q;

	while ((q = *pp)) {
		if (q->done) {
			*pp = q->next;
			run_req_free(q);
		} else {
			pp = &q->next;
		}
	}
}

enum status ttsim_run(const struct ttsim_run_config *c, struct ttsim_audit *audit,
		      struct ttsim_run_result *res, struct status_info *si)
{
	struct ttsim_model *m = NULL;
	struct runctx rc;
	struct ttsim_model_sink sink;
	struct ttsim_step step;
	enum status st;
	uint64_t rng;
	unsigned long long n_sub = 0;
	int queue, i;
	unsigned running;
	long long k;
	const struct ttsim_rule_stats *rs;

	memset(&rc, 0, sizeof(rc));
	memset(res, 0, sizeof(*res));
	if (c->prompt_min < 1 || c->prompt_max < c->prompt_min || c->gen_min < 1 ||
	    c->gen_max < c->gen_min || c->steps < 0 || !(c->arrival >= 0 && c->arrival <= 1))
		return status_set(si, STATUS_USAGE, "bad workload: prompt %d..%d, max_tokens %d..%d, "
				  "arrival %g", c->prompt_min, c->prompt_max, c->gen_min, c->gen_max,
				  c->arrival);
	if ((long long)c->prompt_max + c->gen_max > c->model.max_model_len)
		return status_set(si, STATUS_USAGE, "workload does not fit max_model_len %lld",
				  c->model.max_model_len);
	st = ttsim_model_new(&c->model, &m, si);
	if (st)
		return st;
	rc.seed = c->model.seed;
	sink.token = run_on_token;
	sink.finish = run_on_finish;
	sink.ctx = &rc;
	ttsim_model_set_sink(m, &sink);
	res->rule_mask[res->n_rules++] = 0;
	for (i = 0; i < TTSIM_RULE_COUNT; i++)
		res->rule_mask[res->n_rules++] = 1u << i;
	/* the running code's rules as a row of their own: a combination, or
	 * the arm with the generic path's prefilled mask */
	running = ttsim_model_running_rules(&c->model);
	if (__builtin_popcount(running) > 1)
		res->rule_mask[res->n_rules++] = running;
	for (i = 0; i < res->n_rules; i++)
		ttsim_model_track(m, res->rule_mask[i]);
	ttsim_model_set_audit(m, audit);
	rng = c->model.seed ^ 0x776f726b6c6f6164ull;
	queue = c->queue > 0 ? c->queue : c->model.slots;

	for (k = 0; k < c->steps; k++) {
		if (c->arrival > 0) {
			if ((double)(rng_next(&rng) >> 11) / 9007199254740992.0 < c->arrival) {
				st = run_submit(m, &rc, c, &rng, n_sub++, si);
				if (st)
					goto out;
			}
		} else {
			while (ttsim_model_waiting(m) < queue) {
				st = run_submit(m, &rc, c, &rng, n_sub++, si);
				if (st)
					goto out;
			}
		}
		ttsim_model_step(m, &step);
		run_reap(&rc);
		if (rc.nomem) {
			st = status_set(si, STATUS_NOMEM, "run: out of memory");
			goto out;
		}
	}
	res->model = c->model;
	res->steps = c->steps;
	ttsim_model_stats(m, &res->st);
	for (i = 0; i < res->n_rules; i++) {
		rs = ttsim_model_rule_stats(m, res->rule_mask[i]);
		if (rs)
			res->rule[i] = *rs;
	}
	res->requests = res->st.started;
	res->finished = rc.finished;
	res->diverged = rc.diverged;
	res->diverged_unexplained = rc.unexplained;
	res->changed_undiverged = rc.undiverged;
	st = STATUS_OK;
out:
	ttsim_model_free(m);  /* frees the model's copies; ours are on the live list */
	while (rc.live) {
		struct runreq *q = rc.live;

		rc.live = q->next;
		run_req_free(q);
	}
	return st;
}

/* "qwen36 path, traces keyed (sampling, batch), padded widths, host sampling 0" */
static void run_keep_desc(const struct ttsim_model_config *m, char *buf, size_t n)
{
	size_t len;
	int i;

	len = (size_t)snprintf(buf, n, "%s path, traces keyed %s, ",
			       m->generator == TTSIM_GEN_GENERIC ? "generic" : "qwen36",
			       m->trace_key_sampling ? "(sampling)" : "(sampling, batch)");
	if (!m->n_buckets && len < n)
		len += (size_t)snprintf(buf + len, n - len, "padded widths");
	for (i = 0; i < m->n_buckets && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, "%s%d", i ? "," : "widths ", m->buckets[i]);
	if (len < n)
		snprintf(buf + len, n - len, ", host sampling %g", m->host_sampling);
}

static double run_per(unsigned long long a, unsigned long long b, double scale)
{
	return b ? scale * (double)a / (double)b : 0.0;
}

void ttsim_run_print(FILE *f, const struct ttsim_run_result *r, bool json)
{
	char arm[TTSIM_ARM_NAME_MAX], name[TTSIM_ARM_NAME_MAX], keep[256];
	const struct ttsim_model_stats *s = &r->st;
	int i;

	ttsim_guard_name(r->model.arm, arm, sizeof(arm));
	run_keep_desc(&r->model, keep, sizeof(keep));
	if (json) {
		fprintf(f, "{\"steps\":%lld,\"slots\":%d,\"seed\":%llu,\"arm\":\"%s\","
			"\"running_rules\":\"%s\",\"generator\":\"%s\",\"trace_key\":\"%s\",\"host_sampling\":%g,"
			"\"decode_buckets\":[", r->steps, r->model.slots, r->model.seed, arm,
			ttsim_guard_name(ttsim_model_running_rules(&r->model), name, sizeof(name)),
			r->model.generator == TTSIM_GEN_GENERIC ? "generic" : "qwen36",
			r->model.trace_key_sampling ? "sampling" : "sampling+batch",
			r->model.host_sampling);
		for (i = 0; i < r->model.n_buckets; i++)
			fprintf(f, i ? ",%d" : "%d", r->model.buckets[i]);
		fprintf(f, "],\"garbage_rate\":%g,\"requests\":%llu,\"finished\":%llu,"
			"\"prefills\":%llu,\"decodes\":%llu,\"host_sampled\":%llu,\"restages\":%llu,"
			"\"merges\":%llu,\"fallbacks\":%llu,\"takes\":%llu,"
			"\"substitutions\":%llu,\"substitutions_changed\":%llu,"
			"\"per_1k_merges\":%.4f,\"per_request\":%.6f,\"requests_affected\":%llu,"
			"\"diverged\":%llu,\"diverged_unexplained\":%llu,\"changed_undiverged\":%llu,"
			"\"refused\":%llu,\"modeled_seconds\":%.4f,\"generation_tokens\":%llu,\"rules\":{",
			r->model.garbage_rate, r->requests, r->finished, s->prefills, s->decodes,
			s->host_sampled, s->restages, s->merges, s->fallbacks, s->takes,
			s->substitutions, s->changed,
			run_per(s->substitutions, s->merges, 1000), run_per(s->substitutions, r->requests, 1),
			s->with_subs, r->diverged, r->diverged_unexplained, r->changed_undiverged,
			s->forgone, s->modeled_seconds, s->generation_tokens);
		for (i = 0; i < r->n_rules; i++) {
			const struct ttsim_rule_stats *q = &r->rule[i];

			fprintf(f, "%s\"%s\":{\"merges\":%llu,\"taken\":%llu,\"substitutions\":%llu,"
				"\"prevented\":%llu,\"forgone\":%llu,\"fired\":%llu,\"skipped\":%llu,"
				"\"shape_fallback\":%llu,\"per_1k_merges\":%.4f,\"per_request\":%.6f}",
				i ? "," : "", ttsim_guard_name(r->rule_mask[i], name, sizeof(name)),
				q->merges, q->taken, q->substitutions, q->prevented, q->forgone,
				q->fired, q->skipped, q->shape_fallback,
				run_per(q->substitutions, q->merges, 1000),
				run_per(q->substitutions, r->requests, 1));
		}
		fprintf(f, "}}\n");
		return;
	}
	fprintf(f, "ttsim run: %lld ticks, %d slots, seed %llu, arm %s, %s, garbage rate %g\n",
		r->steps, r->model.slots, r->model.seed, arm, keep, r->model.garbage_rate);
	fprintf(f, "  %llu requests (%llu finished), %llu prefills, %llu decodes (%llu sampled on "
		"the host), %llu merges (%llu fell back to host tokens), %.1f s modeled\n",
		r->requests, r->finished, s->prefills, s->decodes, s->host_sampled, s->merges,
		s->fallbacks, s->modeled_seconds);
	if (ttsim_model_running_rules(&r->model) != r->model.arm)
		fprintf(f, "  (the generic path's keep masks rows prefilled since the last decode "
			"itself: the running rules are %s)\n",
			ttsim_guard_name(ttsim_model_running_rules(&r->model), name, sizeof(name)));
	fprintf(f, "  engaged arm %s: %llu substitutions = %.2f per 1,000 merges, %.4f per request; "
		"%llu requests affected; %llu bare takes refused (prevented + forgone)\n", arm,
		s->substitutions, run_per(s->substitutions, s->merges, 1000), run_per(s->substitutions, r->requests, 1),
		s->with_subs, s->forgone);
	fprintf(f, "  outputs differing from the sequential reference: %llu of %llu finished; "
		"not explained by a substitution: %llu\n", r->diverged, r->finished,
		r->diverged_unexplained);
	if (r->changed_undiverged)
		fprintf(f, "  note: %llu requests took a stale token equal to their own\n",
			r->changed_undiverged);
	fprintf(f, "\n  each rule on the same merges (what-if; the run followed arm %s):\n", arm);
	fprintf(f, "  %-22s %8s %8s %8s %10s %12s %10s %8s %8s\n", "rule", "merges", "taken",
		"subst", "per-1k", "per-request", "prevented", "forgone", "fired");
	for (i = 0; i < r->n_rules; i++) {
		const struct ttsim_rule_stats *q = &r->rule[i];

		fprintf(f, "  %-22s %8llu %8llu %8llu %10.2f %12.4f %10llu %8llu %8llu\n",
			ttsim_guard_name(r->rule_mask[i], name, sizeof(name)), q->merges, q->taken,
			q->substitutions, run_per(q->substitutions, q->merges, 1000),
			run_per(q->substitutions, r->requests, 1), q->prevented, q->forgone, q->fired);
	}
}
