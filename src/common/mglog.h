/*
 * mglog: the one logger, with levels and subsystems (libfabric's FI_WARN).
 *
 *   MGLOG_WARN(MGLOG_P2P, "no node lane to rank %d", peer);
 *
 * A line reads "<program>: <message>", the program being the subsystem's
 * ("mpigpu" for the library's layers, "mpigpu-vcl" for the ICD,
 * "mpigpu-proxy" for the proxy, whose lines also carry a UTC time stamp).
 * Scripts and tests match these prefixes, so they do not change with the
 * level.  Each line is written to stderr with one write, so lines of ranks
 * that share a file do not interleave.
 *
 * The threshold comes from MPIGPU_VERBOSE, read once: unset or 0 shows
 * errors and warnings, any other value adds info (the decision lines the
 * user guide documents for MPIGPU_VERBOSE=1), 2 or more adds debug.  A
 * program may raise it (the proxy logs its sessions at info by default).
 *
 * Owns nothing it hands out; thread-safe without a lock.
 */
#ifndef MGLOG_H
#define MGLOG_H

typedef enum {
    MGLOG_LEVEL_ERROR,
    MGLOG_LEVEL_WARN,
    MGLOG_LEVEL_INFO,
    MGLOG_LEVEL_DEBUG,
} mglog_level_t;

typedef enum {
    MGLOG_COMMON,
    MGLOG_DATATYPE,
    MGLOG_PACK,
    MGLOG_DEVICE,
    MGLOG_P2P,
    MGLOG_COLL, /* the collectives (src/coll) */
    MGLOG_MPI,
    MGLOG_VCL,   /* the remote ICD (client) */
    MGLOG_PROXY, /* mpigpu-proxy */
    MGLOG_NSUBSYS
} mglog_subsys_t;

/* Whether a line at `level` would be written. */
int mglog_enabled(mglog_level_t level);
/* Raise the threshold to at least `level` (never lowers it). */
void mglog_level_raise(mglog_level_t level);
/* Write one line whatever the threshold: for the macros below, and for a
   report that a setting asked for by name (MPIGPU_VCL_STATS). */
void mglog_write(mglog_level_t level, mglog_subsys_t subsys, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The subsystem's name ("p2p"), for listings. */
const char *mglog_subsys_name(mglog_subsys_t subsys);

#define MGLOG_AT(level_, subsys_, ...)                                                             \
    do {                                                                                           \
        if (mglog_enabled(level_))                                                                 \
            mglog_write((level_), (subsys_), __VA_ARGS__);                                         \
    } while (0)
#define MGLOG_ERROR(subsys_, ...) MGLOG_AT(MGLOG_LEVEL_ERROR, subsys_, __VA_ARGS__)
#define MGLOG_WARN(subsys_, ...) MGLOG_AT(MGLOG_LEVEL_WARN, subsys_, __VA_ARGS__)
#define MGLOG_INFO(subsys_, ...) MGLOG_AT(MGLOG_LEVEL_INFO, subsys_, __VA_ARGS__)
#define MGLOG_DEBUG(subsys_, ...) MGLOG_AT(MGLOG_LEVEL_DEBUG, subsys_, __VA_ARGS__)

#endif /* MGLOG_H */
