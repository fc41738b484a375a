/*
 * mono.h - the monotonic clock every part times with, and a sleep on it.
 *
 * CLOCK_MONOTONIC: never steps back, unaffected by settimeofday and NTP
 * slews of the wall clock; not comparable across machines or boots.
 */
#ifndef TTAUDIT_MONO_H
#define TTAUDIT_MONO_H

#include <stdint.h>

/* Seconds since an arbitrary start (the boot). */
double mono_now(void);
/* The same in nanoseconds. */
int64_t mono_ns(void);
/*
 * Sleeps `secs` seconds (nothing when secs <= 0 or not a number), resumed
 * after a signal handler interrupts it, so the whole time passes. errno is
 * kept. A caller that must react to signals sleeps in short steps instead.
 */
void mono_sleep(double secs);

#endif
