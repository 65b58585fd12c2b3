/*
 * mgspin: spin-then-wait.  A thread about to block on a condition variable
 * first watches its condition for a bounded time, because waking a sleeper
 * costs tens of microseconds on a virtual machine, as long as the work it
 * waits for (doc/performance.md).  Each caller keeps its own bound, which
 * was measured where it is used.
 *
 *   MG_SPIN_WHILE(COND, SPIN_NS, BETWEEN);  then block while COND holds.
 *
 * COND is evaluated first, and again after each BETWEEN (a statement: a
 * pause, or letting go of a lock) until it is false or SPIN_NS (from
 * mg_clock_ns) have passed.  The caller still has to check COND and sleep:
 * the spin only saves the sleep when the wait is short.
 */
#ifndef MGSPIN_H
#define MGSPIN_H

#include "mgclock.h"

/* A pause between checks: it frees the core's shared resources for its
   sibling hyperthread and keeps the loop off the memory bus. */
static inline void mg_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

#define MG_SPIN_WHILE(COND, SPIN_NS, BETWEEN)                                                      \
    do {                                                                                           \
        if ((COND) && (SPIN_NS) > 0) {                                                             \
            uint64_t mg_spin_end_ = mg_clock_ns() + (uint64_t)(SPIN_NS);                           \
            do {                                                                                   \
                BETWEEN;                                                                           \
            } while ((COND) && mg_clock_ns() < mg_spin_end_);                                      \
        }                                                                                          \
    } while (0)

#endif /* MGSPIN_H */
