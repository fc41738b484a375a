/*
 * mono.c - the monotonic clock and a sleep on it (see mono.h): one place,
 * so that every part times and waits the same way.
 */
#include "base/mono.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

int64_t mono_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t mono_wall_offset_ns(void)
{
	struct timespec rt, mt;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mt);
	return ((int64_t)rt.tv_sec - mt.tv_sec) * 1000000000 + (rt.tv_nsec - mt.tv_nsec);
}

void mono_tsc_pair(uint64_t *tsc, int64_t *ns)
{
	uint64_t a = mono_tsc();
	int64_t m = mono_ns();
	uint64_t b = mono_tsc();

	/* the TSC halfway between the two reads around the clock's */
	*tsc = a + (b - a) / 2;
	*ns = m;
}

int mono_tsc_is_clocksource(void)
{
#if defined(__x86_64__)
	char buf[32];
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	return n == 4 && !memcmp(buf, "tsc\n", 4);
#else
	return 0;
#endif
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
