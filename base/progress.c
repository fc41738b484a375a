/*
 * progress.c - the progress line on a terminal (progress.h).
 */
#include "base/progress.h"
#include "base/mono.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void progress_init(struct progress *p, const char *what, const char *items, uint64_t total)
{
	const char *env = getenv("TTAUDIT_PROGRESS");

	memset(p, 0, sizeof(*p));
	p->f = stderr;
	p->what = what;
	p->items = items;
	p->total = total;
	if (env && !strcmp(env, "0"))
		p->on = false;
	else if (env && !strcmp(env, "1"))
		p->on = true;
	else
		p->on = isatty(STDERR_FILENO) == 1;
	p->t0 = p->last = mono_now();
}

uint64_t progress_input_size(const char *const *paths, size_t n)
{
	uint64_t total = 0;
	size_t i, len;
	struct stat sb;

	for (i = 0; i < n; i++) {
		len = strlen(paths[i]);
		if ((len == 1 && paths[i][0] == '-') || (len >= 3 && !memcmp(paths[i] + len - 3, ".gz", 3)) ||
		    stat(paths[i], &sb) || !S_ISREG(sb.st_mode) || sb.st_size < 0 ||
		    (uint64_t)sb.st_size > UINT64_MAX - total)
			return 0;
		total += (uint64_t)sb.st_size;
	}
	return total;
}

/* "1.8 GiB", "512.0 MiB", "300 B" */
static void progress_bytes(char *buf, size_t n, double v)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* "3.1 M", "41.2 k", "77" */
static void progress_count(char *buf, size_t n, uint64_t v)
{
	if (v >= 1000000)
		snprintf(buf, n, "%.1f M", (double)v / 1e6);
	else if (v >= 10000)
		snprintf(buf, n, "%.1f k", (double)v / 1e3);
	else
		snprintf(buf, n, "%llu", (unsigned long long)v);
}

const char *progress_format(const struct progress *p, uint64_t bytes, uint64_t items, double now,
			    char *buf, size_t n)
{
	char done[32], total[32], rate[32], cnt[32];
	double secs = now - p->t0, bps = secs > 0 ? (double)bytes / secs : 0;
	size_t k;

	progress_bytes(done, sizeof(done), (double)bytes);
	progress_bytes(rate, sizeof(rate), bps);
	progress_count(cnt, sizeof(cnt), items);
	if (p->total && bytes <= p->total) {
		double left = bps > 0 ? (double)(p->total - bytes) / bps : 0;

		progress_bytes(total, sizeof(total), (double)p->total);
		snprintf(buf, n, "%s: %s of %s (%.0f%%), %s %s, %s/s, ETA %.0f s", p->what, done, total,
			 100.0 * (double)bytes / (double)p->total, cnt, p->items, rate, left);
	} else {
		snprintf(buf, n, "%s: %s, %s %s, %s/s", p->what, done, cnt, p->items, rate);
	}
	/* A terminal line, never wrapped into two. */
	k = strlen(buf);
	if (k > 78)
		buf[78] = 0;
	return buf;
}

void progress_update(struct progress *p, uint64_t bytes, uint64_t items)
{
	char line[128];
	double now;

	if (!p->on)
		return;
	now = mono_now();
	if (now - p->t0 < 1.0 || now - p->last < 0.1)
		return;
	p->last = now;
	fprintf(p->f, "\r\033[K%s", progress_format(p, bytes, items, now, line, sizeof(line)));
	fflush(p->f);
	p->drawn = true;
}

void progress_release(struct progress *p)
{
	if (p->drawn) {
		fputs("\r\033[K", p->f);
		fflush(p->f);
	}
	p->drawn = false;
}
