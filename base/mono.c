/*
 * mono.c - the monotonic clock and a sleep on it (see mono.h): one place,
 * so that every part times and waits the same way.
 */
#include "mono.h"

#include <errno.h>
#include <time.h>

double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void mono_sleep(double secs)
{
	struct timespec ts;
	int e = errno;

	if (!(secs > 0))
		return;
	if (secs > 1e9)
		secs = 1e9;   /* about 31 years: time_t holds it, the product below cannot overflow */
	ts.tv_sec = (time_t)secs;
	ts.tv_nsec = (long)((secs - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec > 999999999)
		ts.tv_nsec = 999999999;   /* rounding must not make it EINVAL */
	if (ts.tv_nsec < 0)
		ts.tv_nsec = 0;
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
	errno = e;
}
