/*
 * rate.h - rates with their uncertainty: exact binomial intervals, the
 * exact comparison of two rates, and how many trials a run needs to show
 * what it is meant to show.
 *
 * Why exact: the rates ttaudit reports are small counts of rare events (15
 * substitutions in 77 merges, 0 failing requests of 192). Normal
 * approximations put intervals below zero and call 0 of 192 "0%"; the
 * Clopper-Pearson interval says what 0 of 192 really rules out (rates above
 * 1.9% at 95%), which is the question a deploy decision asks.
 *
 * All functions but rate_json are pure and allocation-free. Counts are uint64_t; k <= n
 * is the caller's to ensure (a k above n is treated as n). `conf` is the
 * two-sided confidence level, e.g. 0.95.
 *
 * The convention of every report (rate_describe, rate_json): a rate is k of n
 * with its two-sided Clopper-Pearson interval at C; 0 of n is said as the
 * rates it rules out (the upper end: 0 of 192 rules out only rates above
 * 1.90% at 95%), never as "0%"; two rates are compared with Fisher's exact
 * test, two-sided, at 1 - C.
 */
#ifndef TTAUDIT_RATE_H
#define TTAUDIT_RATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rate_interval {
	double p;      /* k / n; 0 when n == 0 */
	double lo, hi; /* bounds; [0, 1] when n == 0 (nothing known) */
};

/* Clopper-Pearson: the exact interval, never narrower than it should be. */
struct rate_interval rate_clopper_pearson(uint64_t k, uint64_t n, double conf);
/* Wilson score interval (narrower, approximate; for comparison). */
struct rate_interval rate_wilson(uint64_t k, uint64_t n, double conf);
/*
 * One-sided exact upper bound: the largest rate still consistent with k of n
 * at level conf ("0 of 192 rules out rates above 1.55% at 95%, one-sided").
 */
double rate_upper_bound(uint64_t k, uint64_t n, double conf);

/*
 * Fisher's exact test of a 2x2 table (k1 of n1 against k2 of n2), two-sided:
 * the probability, with the margins fixed, of a table at most as likely as
 * the one observed. Returns 1 for an empty table.
 */
double rate_fisher(uint64_t k1, uint64_t n1, uint64_t k2, uint64_t n2);
/* One-sided: the probability of k1 or more in the first row (rate 1 > rate 2). */
double rate_fisher_greater(uint64_t k1, uint64_t n1, uint64_t k2, uint64_t n2);

/* P(X <= k) and P(X >= k) for X ~ Binomial(n, p). */
double rate_binom_cdf(uint64_t k, uint64_t n, double p);
double rate_binom_sf(uint64_t k, uint64_t n, double p);

/*
 * Trials a run needs so that observing 0 events rules out rates >= p at
 * level conf (one-sided): the smallest n with (1 - p)^n <= 1 - conf. The
 * number behind "the guard makes it zero". 0 when p <= 0 or p >= 1.
 */
uint64_t rate_n_to_bound(double p, double conf);

/*
 * Trials per arm, equal in both arms, for a one-sided exact test (Fisher's,
 * rate 1 > rate 2) at level alpha to detect p0 against p1 < p0 with the
 * given power; computed exactly by searching n over the binomial
 * distributions of both arms. 0 when p1 >= p0 or the answer exceeds
 * max_n (then *capped is set).
 */
uint64_t rate_n_to_detect(double p0, double p1, double alpha, double power, uint64_t max_n,
			  bool *capped);

/* The power of that test with n trials per arm (exact). */
double rate_power(double p0, double p1, uint64_t n, double alpha);

/* Probability of seeing 0 events in n trials at rate p: (1 - p)^n. */
double rate_p_zero(double p, uint64_t n);

/* Regularised incomplete beta I_x(a, b), for a, b > 0 and x in [0, 1]. */
double rate_ibeta(double a, double b, double x);

/*
 * The distribution-free interval of a median from n values (the paired
 * differences of n rounds): [x_(k), x_(n+1-k)] of the sorted values covers
 * the true median with probability 1 - 2 P(X <= k - 1), X ~ Binomial(n, 1/2).
 * Sets *k to the largest k >= 1 whose coverage is at least conf and
 * *coverage to that coverage, and returns true. When even k = 1 (the
 * minimum and the maximum) covers less than conf (n < 6 at 95%: 75% with 3
 * rounds, 93.75% with 5) it sets k = 1 and its real coverage and returns
 * false; n = 0 gives k = 0, coverage 0.
 */
bool rate_median_interval(size_t n, double conf, size_t *k, double *coverage);

/*
 * p (a proportion) times scale with three significant digits, trailing zeros
 * kept, then suffix: (0.019, 100, "%") "1.90%", (0.271, 100, "%") "27.1%",
 * (0.364, 1000, "") "364". Returns buf.
 */
const char *rate_fmt(char *buf, size_t size, double p, double scale, const char *suffix);

/*
 * How a report says k of n at conf, into buf (returned), scaled as
 * rate_fmt does ("%" with 100, " per 1,000" with 1000):
 *   k > 0   "27.1%, 95% CI 15.3% to 41.8%"
 *   k = 0   "rules out only rates above 1.90% at 95%"
 *   n = 0   "nothing to judge"
 */
const char *rate_describe(char *buf, size_t size, uint64_t k, uint64_t n, double conf,
			  double scale, const char *suffix);

/*
 * Where a baseline rate p0 lies against the interval of k of n, into buf
 * (returned): "above the baseline 0.48%" (the interval is above it),
 * "below the baseline 0.48%", or "consistent with the baseline 0.48%".
 */
const char *rate_against(char *buf, size_t size, uint64_t k, uint64_t n, double conf, double p0);

/* The `ttaudit plan` command that gives the number a report says is needed
 * to rule out p at conf ("ttaudit plan --baseline 0.0048 --target 0"). */
const char *rate_plan_command(char *buf, size_t size, double p, double conf);

/* The confidence level as a report says it: "95%", "99.5%". Returns buf. */
const char *rate_level(char *buf, size_t size, double conf);

/*
 * The same rate per 1,000 of `unit` ("merges"), into buf (returned):
 *   k > 0   "559 per 1,000 merges (424 to 688)"
 *   k = 0   "under 74.0 per 1,000 merges"
 */
const char *rate_per_1000(char *buf, size_t size, uint64_t k, uint64_t n, double conf,
			  const char *unit);

/*
 * k of n at conf as one JSON object, the --json twin of rate_describe:
 * {"k":..,"n":..,"rate":..,"lo":..,"hi":..,"confidence":..,"method":"clopper-pearson"}
 * (rate null when n is 0).
 */
struct jsonw;
void rate_json(struct jsonw *w, uint64_t k, uint64_t n, double conf);

#endif
