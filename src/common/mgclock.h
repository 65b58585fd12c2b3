/*
 * mgclock: the one clock for intervals and deadlines that no condition
 * variable waits on: CLOCK_MONOTONIC, which no settimeofday or NTP step
 * moves.  Inline, because the spin loops read it between checks.
 *
 * Absolute deadlines of pthread_cond_timedwait stay on CLOCK_REALTIME, the
 * clock of a default condition variable; log stamps (mglog) are calendar
 * time.
 */
#ifndef MGCLOCK_H
#define MGCLOCK_H

#include <stdint.h>
#include <time.h>

/* Nanoseconds since an arbitrary point fixed at boot. */
static inline uint64_t mg_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The same in seconds, for measurements reported as such. */
static inline double mg_clock_s(void)
{
    return (double)mg_clock_ns() * 1e-9;
}

#endif /* MGCLOCK_H */
