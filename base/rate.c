/*
 * rate.c - exact binomial intervals, Fisher's exact test and sample sizes
 * (rate.h). The special functions are written out here (a continued
 * fraction for the incomplete beta, log-gamma from libm) rather than taken
 * from a numerics library: ttaudit links nothing of the sort, and these few
 * are well understood. tests/test_rate.c holds them to published values and
 * tests/e2e/ to SciPy's.
 */
#include "base/rate.h"

#include <float.h>
#include <math.h>
#include <stdio.h>

#include "base/jsonw.h"

/* Continued fraction of the incomplete beta (modified Lentz). */
static double rate_betacf(double a, double b, double x)
{
	const double tiny = 1e-300, eps = 1e-15;
	double qab = a + b, qap = a + 1, qam = a - 1;
	double c = 1, d = 1 - qab * x / qap, h;
	int m;

	if (fabs(d) < tiny)
		d = tiny;
	d = 1 / d;
	h = d;
	for (m = 1; m <= 10000; m++) {
		double m2 = 2.0 * m, aa, del;

		aa = m * (b - m) * x / ((qam + m2) * (a + m2));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		h *= d * c;
		aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
		d = 1 + aa * d;
		if (fabs(d) < tiny)
			d = tiny;
		c = 1 + aa / c;
		if (fabs(c) < tiny)
			c = tiny;
		d = 1 / d;
		del = d * c;
		h *= del;
		if (fabs(del - 1) < eps)
			break;
	}
	return h;
}

double rate_ibeta(double a, double b, double x)
{
	double lbt;

	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	lbt = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
	/* The fraction converges fast on the side of the mean; use symmetry. */
	if (x < (a + 1) / (a + b + 2))
		return exp(lbt) * rate_betacf(a, b, x) / a;
	return 1 - exp(lbt) * rate_betacf(b, a, 1 - x) / b;
}

/* The x in [0, 1] with I_x(a, b) = target, by bisection (I is increasing in x). */
static double rate_ibeta_inv(double a, double b, double target)
{
	double lo = 0, hi = 1;
	int i;

	for (i = 0; i < 200 && hi - lo > 1e-16; i++) {
		double mid = 0.5 * (lo + hi);
		if (rate_ibeta(a, b, mid) < target)
			lo = mid;
		else
			hi = mid;
	}
	return 0.5 * (lo + hi);
}

struct rate_interval rate_clopper_pearson(uint64_t k, uint64_t n, double conf)
{
	struct rate_interval r = { 0, 0, 1 };
	double a = (1 - conf) / 2;

	if (n == 0)
		return r;
	if (k > n)
		k = n;
	r.p = (double)k / (double)n;
	/* lo: the p with P(X >= k) = a; hi: the p with P(X <= k) = a. */
	r.lo = k == 0 ? 0 : rate_ibeta_inv((double)k, (double)(n - k + 1), a);
	r.hi = k == n ? 1 : rate_ibeta_inv((double)(k + 1), (double)(n - k), 1 - a);
	return r;
}

/* The standard normal quantile of q in (0, 1): Acklam's rational fit, then
 * one Newton step on erfc, which brings it to double precision. */
static double rate_norm_quantile(double q)
{
	static const double a[] = { -3.969683028665376e+01, 2.209460984245205e+02,
		-2.759285104469687e+02, 1.383577518672690e+02, -3.066479806614716e+01,
		2.506628277459239e+00 };
	static const double b[] = { -5.447609879822406e+01, 1.615858368580409e+02,
		-1.556989798598866e+02, 6.680131188771972e+01, -1.328068155288572e+01 };
	static const double c[] = { -7.784894002430293e-03, -3.223964580411365e-01,
		-2.400758277161838e+00, -2.549732539343734e+00, 4.374664141464968e+00,
		2.938163982698783e+00 };
	static const double d[] = { 7.784695709041462e-03, 3.224671290700398e-01,
		2.445134137142996e+00, 3.754408661907416e+00 };
	double x, r, e, u;

	if (q <= 0)
		return -INFINITY;
	if (q >= 1)
		return INFINITY;
	if (q < 0.02425) {
		r = sqrt(-2 * log(q));
		x = (((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) /
		    ((((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1);
	} else if (q > 1 - 0.02425) {
		r = sqrt(-2 * log(1 - q));
		x = -(((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) /
		    ((((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1);
	} else {
		r = q - 0.5;
		e = r * r;
		x = (((((a[0] * e + a[1]) * e + a[2]) * e + a[3]) * e + a[4]) * e + a[5]) * r /
		    (((((b[0] * e + b[1]) * e + b[2]) * e + b[3]) * e + b[4]) * e + 1);
	}
	e = 0.5 * erfc(-x / sqrt(2)) - q;
	u = e * sqrt(2 * M_PI) * exp(x * x / 2);
	return x - u / (1 + x * u / 2);
}

struct rate_interval rate_wilson(uint64_t k, uint64_t n, double conf)
{
	struct rate_interval r = { 0, 0, 1 };
	double z, zz, p, nn, mid, half;

	if (n == 0)
		return r;
	if (k > n)
		k = n;
	z = rate_norm_quantile(1 - (1 - conf) / 2);
	zz = z * z;
	nn = (double)n;
	p = (double)k / nn;
	mid = (p + zz / (2 * nn)) / (1 + zz / nn);
	half = z * sqrt(p * (1 - p) / nn + zz / (4 * nn * nn)) / (1 + zz / nn);
	r.p = p;
	r.lo = k == 0 ? 0 : mid - half;
	r.hi = k == n ? 1 : mid + half;
	if (r.lo < 0)
		r.lo = 0;
	if (r.hi > 1)
		r.hi = 1;
	return r;
}

double rate_upper_bound(uint64_t k, uint64_t n, double conf)
{
	if (n == 0)
		return 1;
	if (k >= n)
		return 1;
	return rate_ibeta_inv((double)(k + 1), (double)(n - k), conf);
}

double rate_binom_cdf(uint64_t k, uint64_t n, double p)
{
	if (k >= n)
		return 1;
	if (p <= 0)
		return 1;
	if (p >= 1)
		return 0;
	/* P(X <= k) = I_{1-p}(n - k, k + 1) */
	return rate_ibeta((double)(n - k), (double)(k + 1), 1 - p);
}

double rate_binom_sf(uint64_t k, uint64_t n, double p)
{
	if (k == 0)
		return 1;
	if (k > n)
		return 0;
	if (p <= 0)
		return 0;
	if (p >= 1)
		return 1;
	/* P(X >= k) = I_p(k, n - k + 1) */
	return rate_ibeta((double)k, (double)(n - k + 1), p);
}

static double rate_lchoose(uint64_t n, uint64_t k)
{
	return lgamma((double)n + 1) - lgamma((double)k + 1) - lgamma((double)(n - k) + 1);
}

/* log P(X = x) of the hypergeometric law: x successes in the first row of
 * n1, given m successes in N = n1 + n2 trials. */
static double rate_lhyper(uint64_t x, uint64_t n1, uint64_t n2, uint64_t m)
{
	return rate_lchoose(n1, x) + rate_lchoose(n2, m - x) - rate_lchoose(n1 + n2, m);
}

double rate_fisher(uint64_t k1, uint64_t n1, uint64_t k2, uint64_t n2)
{
	uint64_t m, lo, hi, x;
	double lobs, sum = 0;

	if (k1 > n1)
		k1 = n1;
	if (k2 > n2)
		k2 = n2;
	m = k1 + k2;
	if (n1 + n2 == 0 || m == 0 || m == n1 + n2)
		return 1;
	lo = m > n2 ? m - n2 : 0;
	hi = m < n1 ? m : n1;
	lobs = rate_lhyper(k1, n1, n2, m);
	for (x = lo; x <= hi; x++) {
		double l = rate_lhyper(x, n1, n2, m);
		/* R's relative tolerance, so that ties by rounding count as ties. */
		if (l <= lobs + 1e-7 * fabs(lobs) + 1e-12)
			sum += exp(l);
	}
	return sum > 1 ? 1 : sum;
}

double rate_fisher_greater(uint64_t k1, uint64_t n1, uint64_t k2, uint64_t n2)
{
	uint64_t m, hi, x;
	double sum = 0;

	if (k1 > n1)
		k1 = n1;
	if (k2 > n2)
		k2 = n2;
	m = k1 + k2;
	if (n1 + n2 == 0 || m == 0)
		return 1;
	hi = m < n1 ? m : n1;
	for (x = k1; x <= hi; x++)
		sum += exp(rate_lhyper(x, n1, n2, m));
	return sum > 1 ? 1 : sum;
}

double rate_p_zero(double p, uint64_t n)
{
	if (p <= 0)
		return 1;
	if (p >= 1)
		return n ? 0 : 1;
	return exp((double)n * log1p(-p));
}

uint64_t rate_n_to_bound(double p, double conf)
{
	double n;

	if (!(p > 0 && p < 1) || !(conf > 0 && conf < 1))
		return 0;
	n = ceil(log(1 - conf) / log1p(-p));
	/* ceil of a rounded quotient can land one above: check the one below. */
	if (n > 1 && rate_p_zero(p, (uint64_t)n - 1) <= 1 - conf)
		n -= 1;
	return n > 1e18 ? 0 : (uint64_t)n;
}

/* log P(X = k) of Binomial(n, p), 0 < p < 1. */
static double rate_lbinom(uint64_t k, uint64_t n, double p)
{
	return rate_lchoose(n, k) + (double)k * log(p) + (double)(n - k) * log1p(-p);
}

/* The range of k holding all but a negligible share of Binomial(n, p). */
static void rate_support(uint64_t n, double p, uint64_t *lo, uint64_t *hi)
{
	double mu = (double)n * p, sd = sqrt((double)n * p * (1 - p)), a, b;

	a = mu - 12 * sd - 5;
	b = mu + 12 * sd + 5;
	*lo = a <= 0 ? 0 : (uint64_t)a;
	*hi = b >= (double)n ? n : (uint64_t)b;
}

double rate_power(double p0, double p1, uint64_t n, double alpha)
{
	uint64_t lo1, hi1, lo2, hi2, k1, k2;
	double power = 0;

	if (n == 0 || !(p0 > p1) || p0 > 1 || p1 < 0)
		return 0;
	if (p1 <= 0) {
		/* The treatment arm shows 0: the test rejects from the smallest k1
		 * whose most extreme table is rare enough under the null. */
		for (k1 = 1; k1 <= n; k1++)
			if (rate_fisher_greater(k1, n, 0, n) <= alpha)
				return rate_binom_sf(k1, n, p0);
		return 0;
	}
	rate_support(n, p0, &lo1, &hi1);
	rate_support(n, p1, &lo2, &hi2);
	for (k2 = lo2; k2 <= hi2; k2++) {
		double w2 = exp(rate_lbinom(k2, n, p1));
		uint64_t a = k2, b = n + 1;

		if (w2 < 1e-300)
			continue;
		/* Smallest k1 >= k2 that rejects: the p-value falls as k1 grows. */
		if (a < lo1)
			a = lo1;
		while (a < b) {
			uint64_t mid = a + (b - a) / 2;
			if (rate_fisher_greater(mid, n, k2, n) <= alpha)
				b = mid;
			else
				a = mid + 1;
		}
		if (a <= n)
			power += w2 * rate_binom_sf(a, n, p0);
	}
	(void)hi1;
	return power > 1 ? 1 : power;
}

uint64_t rate_n_to_detect(double p0, double p1, double alpha, double power, uint64_t max_n,
			  bool *capped)
{
	uint64_t lo = 1, hi = 1;

	if (capped)
		*capped = false;
	if (!(p0 > p1) || p0 > 1 || p1 < 0 || !(alpha > 0 && alpha < 1) || !(power > 0 && power < 1))
		return 0;
	while (rate_power(p0, p1, hi, alpha) < power) {
		lo = hi + 1;
		if (hi >= max_n) {
			if (capped)
				*capped = true;
			return 0;
		}
		hi = hi * 2 > max_n ? max_n : hi * 2;
	}
	/* Exact power is saw-toothed in n: this is the smallest n the bisection
	 * between the last failing and the first passing doubling finds. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (rate_power(p0, p1, mid, alpha) >= power)
			hi = mid;
		else
			lo = mid + 1;
	}
	return hi;
}

bool rate_median_interval(size_t n, double conf, size_t *k, double *coverage)
{
	size_t j;

	*k = 0;
	*coverage = 0;
	if (n == 0)
		return false;
	*k = 1;
	*coverage = 1 - 2 * rate_binom_cdf(0, n, 0.5);
	if (*coverage < conf)
		return false;
	/* Coverage falls as k grows: the largest k still at conf. */
	for (j = 2; 2 * j <= n + 1; j++) {
		double c = 1 - 2 * rate_binom_cdf(j - 1, n, 0.5);

		if (c < conf)
			break;
		*k = j;
		*coverage = c;
	}
	return true;
}

const char *rate_fmt(char *buf, size_t size, double p, double scale, const char *suffix)
{
	double v = p * scale;
	int dec = 0;

	if (!isfinite(v)) {
		snprintf(buf, size, "?%s", suffix);
		return buf;
	}
	if (v > 0) {
		dec = 2 - (int)floor(log10(v));
		/* 9.996 rounds up to 10.00: one digit fewer */
		if (dec > 0 && floor(log10(v + 0.5 * pow(10, -dec))) > floor(log10(v)))
			dec--;
		if (dec < 0)
			dec = 0;
		if (dec > 9)
			dec = 9;
	}
	snprintf(buf, size, "%.*f%s", dec, v, suffix);
	return buf;
}

const char *rate_describe(char *buf, size_t size, uint64_t k, uint64_t n, double conf,
			  double scale, const char *suffix)
{
	struct rate_interval r = rate_clopper_pearson(k, n, conf);
	char a[32], b[32], c[32], lv[16];

	rate_level(lv, sizeof(lv), conf);
	if (n == 0)
		snprintf(buf, size, "nothing to judge");
	else if (k == 0)
		snprintf(buf, size, "rules out only rates above %s at %s",
			 rate_fmt(a, sizeof(a), r.hi, scale, suffix), lv);
	else if (suffix[0] == '%')
		snprintf(buf, size, "%s, %s CI %s to %s", rate_fmt(a, sizeof(a), r.p, scale, suffix), lv,
			 rate_fmt(b, sizeof(b), r.lo, scale, suffix), rate_fmt(c, sizeof(c), r.hi, scale, suffix));
	else   /* a unit in words is said once: "364, 95% CI 204 to 549 per 1,000" */
		snprintf(buf, size, "%s, %s CI %s to %s%s", rate_fmt(a, sizeof(a), r.p, scale, ""), lv,
			 rate_fmt(b, sizeof(b), r.lo, scale, ""), rate_fmt(c, sizeof(c), r.hi, scale, ""), suffix);
	return buf;
}

const char *rate_against(char *buf, size_t size, uint64_t k, uint64_t n, double conf, double p0)
{
	struct rate_interval r = rate_clopper_pearson(k, n, conf);

	snprintf(buf, size, "%s the baseline %g%%", n && r.lo > p0 ? "above" : n && r.hi < p0 ? "below" :
		 "consistent with", 100 * p0);
	return buf;
}

const char *rate_plan_command(char *buf, size_t size, double p, double conf)
{
	if (fabs(conf - 0.95) < 1e-12)
		snprintf(buf, size, "ttaudit plan --baseline %g --target 0", p);
	else
		snprintf(buf, size, "ttaudit plan --baseline %g --target 0 --confidence %g", p, conf);
	return buf;
}

const char *rate_level(char *buf, size_t size, double conf)
{
	snprintf(buf, size, "%g%%", conf * 100);
	return buf;
}

const char *rate_per_1000(char *buf, size_t size, uint64_t k, uint64_t n, double conf,
			  const char *unit)
{
	struct rate_interval r = rate_clopper_pearson(k, n, conf);
	char a[32], b[32], c[32];

	if (n == 0)
		snprintf(buf, size, "no %s", unit);
	else if (k == 0)
		snprintf(buf, size, "under %s per 1,000 %s", rate_fmt(a, sizeof(a), r.hi, 1000, ""), unit);
	else
		snprintf(buf, size, "%s per 1,000 %s (%s to %s)", rate_fmt(a, sizeof(a), r.p, 1000, ""), unit,
			 rate_fmt(b, sizeof(b), r.lo, 1000, ""), rate_fmt(c, sizeof(c), r.hi, 1000, ""));
	return buf;
}

void rate_json(struct jsonw *w, uint64_t k, uint64_t n, double conf)
{
	struct rate_interval r = rate_clopper_pearson(k, n, conf);

	jsonw_obj(w);
	jsonw_kuint(w, "k", k > n ? n : k);
	jsonw_kuint(w, "n", n);
	jsonw_kdouble(w, "rate", n ? r.p : NAN);
	jsonw_kdouble(w, "lo", r.lo);
	jsonw_kdouble(w, "hi", r.hi);
	jsonw_kdouble(w, "confidence", conf);
	jsonw_kstr(w, "method", "clopper-pearson");
	jsonw_obj_end(w);
}
