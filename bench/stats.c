#include "bench/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int stats_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double stats_percentile(const double *sorted, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

void stats_dist_of(double *v, size_t n, struct stats_dist *d)
{
	size_t i;
	double sum = 0;

	memset(d, 0, sizeof(*d));
	d->n = n;
	if (!n)
		return;
	qsort(v, n, sizeof(*v), stats_cmp);
	for (i = 0; i < n; i++)
		sum += v[i];
	d->min = v[0];
	d->max = v[n - 1];
	d->mean = sum / (double)n;
	d->p50 = stats_percentile(v, n, 50);
	d->p90 = stats_percentile(v, n, 90);
	d->p99 = stats_percentile(v, n, 99);
}

void stats_run_release(struct stats_run *s)
{
	free(s->staircase);
	s->staircase = NULL;
}

enum status stats_run_compute(const struct load_run *run, struct stats_run *s, struct status_info *si)
{
	enum status st = STATUS_OK;
	double *ttft = NULL, *ttlt = NULL, *e2e = NULL, *itl = NULL, *ttfa = NULL;
	double *ttft_s = NULL, *e2e_s = NULL, *lag = NULL;
	size_t i, j, n_ttft = 0, n_ttlt = 0, n_e2e = 0, n_itl = 0, n_gaps = 0, n_ttfa = 0, n_per_token = 0;
	size_t n_ttft_s = 0, n_e2e_s = 0, n_lag = 0;
	size_t n_usage = 0, n_prompt = 0;
	long prompt = 0;
	double t0;
	const struct load_result *r;

	memset(s, 0, sizeof(*s));
	s->n = run->n;
	s->prompt_tokens = -1;
	/* one gap per token after the first chunk: a chunk of k tokens stands
	 * for k gaps of a k-th of its own */
	for (i = 0; i < run->n; i++) {
		r = &run->res[i];
		if (r->fail)
			continue;
		for (j = 1; j < r->n_chunks && j < LOAD_MAX_TOKENS; j++)
			n_gaps += r->tok_n ? r->tok_n[j] : 1;
	}
	ttft = malloc((run->n + 1) * sizeof(double));
	ttlt = malloc((run->n + 1) * sizeof(double));
	e2e = malloc((run->n + 1) * sizeof(double));
	itl = malloc((n_gaps + 1) * sizeof(double));
	ttfa = malloc((run->n + 1) * sizeof(double));
	ttft_s = malloc((run->n + 1) * sizeof(double));
	e2e_s = malloc((run->n + 1) * sizeof(double));
	lag = malloc((run->n + 1) * sizeof(double));
	s->staircase = malloc((run->n + 1) * sizeof(double));
	if (!ttft || !ttlt || !e2e || !itl || !ttfa || !ttft_s || !e2e_s || !lag || !s->staircase) {
		st = status_set(si, STATUS_NOMEM, "stats: out of memory");
		goto out;
	}
	s->n_staircase = run->n;
	for (i = 0; i < run->n; i++)
		s->staircase[i] = -1;
	for (i = 0; i < run->n; i++) {
		r = &run->res[i];
		t0 = load_result_origin(r);
		if (r->launch_seq < run->n && r->t_first > 0)
			s->staircase[r->launch_seq] = r->t_first - t0;
		if (run->arrival == LOAD_POISSON && r->t_sched > 0)
			lag[n_lag++] = t0 - r->t_sched;
		if (r->fail) {
			s->n_failed++;
			s->n_fail[r->fail < LOAD_FAIL__COUNT ? r->fail : LOAD_FAIL_PROTOCOL]++;
			continue;
		}
		s->n_ok++;
		if (r->aborted)
			s->n_aborted++;
		else
			e2e[n_e2e++] = r->t_end - t0;
		if (run->arrival == LOAD_POISSON && r->t_sched > 0) {
			e2e_s[n_e2e_s++] = r->t_end - r->t_sched;
			if (r->t_first > 0)
				ttft_s[n_ttft_s++] = r->t_first - r->t_sched;
		}
		if (r->t_first > 0) {
			ttft[n_ttft++] = r->t_first - t0;
			if (!r->aborted)
				ttlt[n_ttlt++] = r->t_last - t0;
			if (r->t_first - t0 > s->max_ttft)
				s->max_ttft = r->t_first - t0;
		}
		if (r->t_first_answer > 0)
			ttfa[n_ttfa++] = r->t_first_answer - t0;
		for (j = 1; j < r->n_chunks && j < LOAD_MAX_TOKENS; j++) {
			size_t k = r->tok_n ? r->tok_n[j] : 1, m;
			double g = r->tok_t[j] - r->tok_t[j - 1];

			for (m = 0; m < k && n_itl < n_gaps; m++)
				itl[n_itl++] = g / (double)k;
		}
		if (r->count_src != LOAD_COUNT_CHUNKS)
			n_per_token++;
		s->out_chunks += (long)r->n_chunks;
		s->reasoning_tokens += (long)r->n_reasoning_tokens;
		s->answer_tokens += (long)r->n_answer_tokens;
		if (r->usage_completion >= 0) {
			n_usage++;
			if ((size_t)r->usage_completion != r->n_tokens)
				s->n_usage_mismatch++;
		}
		if (r->usage_prompt >= 0) {
			n_prompt++;
			prompt += r->usage_prompt;
		}
	}
	if (!s->n_ok)
		s->tps_source = "none";
	else if (n_usage == s->n_ok)
		s->tps_source = "usage";
	else if (!n_usage)
		s->tps_source = "chunks";
	else
		s->tps_source = "mixed";
	for (i = 0; i < run->n; i++) {
		r = &run->res[i];
		if (r->fail)
			continue;
		s->out_tokens += r->usage_completion >= 0 ? r->usage_completion : (long)r->n_tokens;
	}
	if (s->n_ok && n_prompt == s->n_ok)
		s->prompt_tokens = prompt;
	s->makespan = run->t_end - run->t_start;
	if (s->makespan > 0) {
		s->out_tok_s = (double)s->out_tokens / s->makespan;
		s->req_s = (double)s->n_ok / s->makespan;
	}
	if (run->arrival == LOAD_BATCH && s->prompt_tokens > 0 && s->max_ttft > 0)
		s->prefill_tok_s = (double)s->prompt_tokens / s->max_ttft;
	stats_dist_of(ttft, n_ttft, &s->ttft);
	stats_dist_of(ttlt, n_ttlt, &s->ttlt);
	stats_dist_of(e2e, n_e2e, &s->e2e);
	stats_dist_of(itl, n_itl, &s->itl);
	stats_dist_of(ttfa, n_ttfa, &s->ttft_answer);
	s->open_loop = run->arrival == LOAD_POISSON;
	stats_dist_of(ttft_s, n_ttft_s, &s->ttft_sched);
	stats_dist_of(e2e_s, n_e2e_s, &s->e2e_sched);
	stats_dist_of(lag, n_lag, &s->sched_lag);
	s->itl_source = !n_per_token ? "chunks" : n_per_token == s->n_ok ? "tokens" : "mixed";
out:
	free(ttft_s);
	free(e2e_s);
	free(lag);
	free(ttfa);
	free(ttft);
	free(ttlt);
	free(e2e);
	free(itl);
	if (st)
		stats_run_release(s);
	return st;
}

size_t stats_median_repeat(const double *fig, size_t n, double *spread)
{
	size_t *idx, i, j, t, m;
	double lo, hi, med;

	*spread = 0;
	if (n < 2)
		return 0;
	idx = malloc(n * sizeof(*idx));
	if (!idx)
		return 0;
	for (i = 0; i < n; i++)
		idx[i] = i;
	/* insertion sort of indexes by figure: n is a handful of repeats */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && fig[idx[j - 1]] > fig[idx[j]]; j--) {
			t = idx[j];
			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	m = idx[(n - 1) / 2];
	lo = fig[idx[0]];
	hi = fig[idx[n - 1]];
	med = fig[m];
	free(idx);
	*spread = med != 0 ? (hi - lo) / fabs(med) : (hi != lo ? INFINITY : 0);
	return m;
}
