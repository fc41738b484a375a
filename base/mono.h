/*
 * mono.h - the monotonic clock every part times with, and a sleep on it.
 *
 * CLOCK_MONOTONIC: never steps back, unaffected by settimeofday and NTP
 * slews of the wall clock; not comparable across machines or boots.
 *
 * Everything here is async-signal-safe (it calls only clock_gettime,
 * clock_nanosleep, open, read and close, which are on POSIX's list, and
 * allocates and locks nothing): the shim's write path and drain use these
 * clocks too.
 */
#ifndef TTAUDIT_MONO_H
#define TTAUDIT_MONO_H

#include <stdint.h>

/* Seconds since an arbitrary start (the boot). */
double mono_now(void);
/* The same in nanoseconds. */
int64_t mono_ns(void);
/* The wall clock (CLOCK_REALTIME) in nanoseconds since the epoch. */
int64_t mono_wall_ns(void);
/* CLOCK_REALTIME minus CLOCK_MONOTONIC now, in ns: a monotonic time plus it is a wall time. */
int64_t mono_wall_offset_ns(void);

/*
 * Ticks of the time stamp counter (x86-64; 0 elsewhere): not nanoseconds.
 * The capture stamps writes with it where the kernel's own clock is the
 * TSC (mono_tsc_is_clocksource), being cheaper than clock_gettime.
 */
static inline uint64_t mono_tsc(void)
{
#if defined(__x86_64__)
	return __builtin_ia32_rdtsc();
#else
	return 0;
#endif
}
/* A (TSC ticks, CLOCK_MONOTONIC ns) pair taken together: two such pairs give the tick rate. */
void mono_tsc_pair(uint64_t *tsc, int64_t *ns);
/* 1 when the kernel keeps time with the TSC (so it is invariant and the same on every CPU). */
int mono_tsc_is_clocksource(void);
/*
 * Sleeps `secs` seconds (nothing when secs <= 0 or not a number), resumed
 * after a signal handler interrupts it, so the whole time passes. errno is
 * kept. A caller that must react to signals sleeps in short steps instead.
 */
void mono_sleep(double secs);

#endif
