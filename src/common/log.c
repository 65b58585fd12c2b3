/* The one logger (mglog.h). */
#include "config.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mglog.h"
#include "mgparam.h"

static const struct {
    const char *name;
    const char *program; /* the line's prefix */
    int stamp;           /* a daemon's lines carry the time of day */
} subsys_tab[MGLOG_NSUBSYS] = {
    [MGLOG_COMMON] = {"common", "mpigpu", 0},     [MGLOG_DATATYPE] = {"datatype", "mpigpu", 0},
    [MGLOG_PACK] = {"pack", "mpigpu", 0},         [MGLOG_DEVICE] = {"device", "mpigpu", 0},
    [MGLOG_P2P] = {"p2p", "mpigpu", 0},           [MGLOG_COLL] = {"coll", "mpigpu", 0},
    [MGLOG_MPI] = {"mpi", "mpigpu", 0},           [MGLOG_VCL] = {"vcl", "mpigpu-vcl", 0},
    [MGLOG_PROXY] = {"proxy", "mpigpu-proxy", 1},
};

/* -1 until the first call reads MPIGPU_VERBOSE.  Racing first calls read the
   same variable and store the same value. */
static atomic_int threshold = -1;

static int threshold_get(void)
{
    int t = atomic_load_explicit(&threshold, memory_order_relaxed);
    if (t >= 0)
        return t;
    /* MPIGPU_VERBOSE from the settings table; a malformed value counts as
       0 here, and MPI_Init reports it. */
    mgparam_value_t v;
    int verbose = mgparam_read(MGPARAM_VERBOSE, &v, NULL, 0) == 0 ? (int)v.num : 0;
    int want = verbose >= 2 ? MGLOG_LEVEL_DEBUG : verbose ? MGLOG_LEVEL_INFO : MGLOG_LEVEL_WARN;
    int expected = -1;
    if (!atomic_compare_exchange_strong_explicit(&threshold, &expected, want, memory_order_relaxed,
                                                 memory_order_relaxed))
        want = expected; /* a raise got there first */
    return want;
}

int mglog_enabled(mglog_level_t level)
{
    return (int)level <= threshold_get();
}

void mglog_level_raise(mglog_level_t level)
{
    int t = threshold_get();
    while (t < (int)level &&
           !atomic_compare_exchange_weak_explicit(&threshold, &t, (int)level, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

const char *mglog_subsys_name(mglog_subsys_t subsys)
{
    return subsys < MGLOG_NSUBSYS ? subsys_tab[subsys].name : "?";
}

void mglog_write(mglog_level_t level, mglog_subsys_t subsys, const char *fmt, ...)
{
    char small[1024], *msg = small, ts[64] = "";
    va_list ap;
    (void)level;
    if (subsys >= MGLOG_NSUBSYS)
        subsys = MGLOG_COMMON;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (msg = malloc((size_t)n + 1))) {
        va_start(ap, fmt);
        vsnprintf(msg, (size_t)n + 1, fmt, ap);
        va_end(ap);
    } else if (!msg) {
        msg = small; /* truncated rather than lost */
    }
    if (subsys_tab[subsys].stamp) {
        /* A calendar time for the reader of a log, not a measure of
           intervals (those use mg_clock_ns). */
        struct timespec now;
        struct tm tm;
        char day[32];
        clock_gettime(CLOCK_REALTIME, &now);
        gmtime_r(&now.tv_sec, &tm);
        strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(ts, sizeof ts, "%s.%03ldZ ", day, now.tv_nsec / 1000000L);
    }
    /* One fprintf: stderr is unbuffered, and glibc writes an unbuffered
       stream's whole formatted call at once. */
    fprintf(stderr, "%s%s: %s\n", ts, subsys_tab[subsys].program, msg);
    if (msg != small)
        free(msg);
}
