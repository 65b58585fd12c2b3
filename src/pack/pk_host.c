/*
 * Host pack and unpack of host memory: the datatype engine's walk
 * (mgdt_host_pack), split over the context's thread pool for long ranges.
 * It serves the host method of the device layer (a zero-copy buffer of a CPU
 * device is host memory; elsewhere a staged or mapped copy of the extent).
 *
 * The walk moves the same bytes as MPI_Pack in the same order, so its output
 * is interchangeable with MPI's; it beats MPICH 4.0.2's own pack where that
 * one copies runs of variable length (doc/performance.md, S13-2).
 */
#include "config.h"

#include "mgpk_impl.h"

/* Jobs of less work than this stay on the caller's thread: handing out
   parts costs more than it saves.  The pool's helpers watch for work a
   while before they sleep (pk_hcopy.c), so the bound can be low: split in
   parts of 256 KiB, 1 MiB of contiguous bytes packed 1.2 to 1.4x faster than
   one memcpy on the VM, where 1 MiB parts left it whole (the 2026-11-24 PoCL runs in the
   git history of doc/performance.md).  The work of a range counts its packed bytes plus
   MGPK_HOST_RUN_COST per run. */
#define MGPK_HOST_SPLIT_MIN ((int64_t)512 << 10)
/* Below this much work a job is split only while a helper is awake: waking
   a sleeping one cost 10 to 20 us on the VM, more than a split of less
   saves (the same runs, helpers that never watch: 1 MiB of contiguous bytes
   took 23 to 39 us split against 16 to 19 us on one thread; 2 MiB of
   8-byte runs 252 to 280 us split against 387 to 421). */
#define MGPK_HOST_WAKE_MIN ((int64_t)4 << 20)
/* A split job is cut finer, into parts of this much work (the pool allows
   a few per thread), so that a helper that wakes late holds up the caller
   for one small part, not half the job. */
#define MGPK_HOST_GRAIN ((int64_t)64 << 10)
#define MGPK_HOST_RUN_COST 64

/* The walk's cost of n packed bytes from `first`, in bytes of memcpy: each
   run adds about as much as 64 bytes of copying (indexed:8 at 1 MiB, 128 Ki
   runs: 586 us on one thread on the VM, against 50 us for 1 MiB of 128-byte
   runs; S14-1).  The mean run length is that of the first 16 runs, at
   most 9 times n in all. */
static int64_t host_work(const mgdt_type_t *type, int64_t first, int64_t n)
{
    if (n < MGPK_HOST_SPLIT_MIN / 9)
        return n;
    int64_t bl = mgdt_ref_mean_run(type, first, n, 16);
    if (bl < MGPK_HOST_RUN_COST / 8)
        bl = MGPK_HOST_RUN_COST / 8;
    return n + n / bl * MGPK_HOST_RUN_COST;
}

typedef struct host_job {
    const mgdt_type_t *type;
    char *typed, *packed;
    int64_t first;
    int unpack;
} host_job_t;

static void host_range(void *arg, size_t off, size_t len)
{
    const host_job_t *j = arg;
    int64_t o = (int64_t)off, l = (int64_t)len;
    if (j->unpack)
        mgdt_host_unpack(j->type, j->packed + o, j->typed, j->first + o, l);
    else
        mgdt_host_pack(j->type, j->typed, j->packed + o, j->first + o, l);
}

/* n packed bytes of job j, of the given work (host_work): on the caller's
   thread, or split over ctx's pool (ctx->lock held; NULL: no threads). */
static int host_run(mgpk_ctx_t *ctx, host_job_t *j, int64_t n, int64_t work)
{
    int rc = MPI_SUCCESS;
    if (work < MGPK_HOST_SPLIT_MIN || !ctx) {
        if (n > 0)
            host_range(j, 0, (size_t)n);
        goto fn_exit;
    }
    rc = mgpk_ctx_hcopy(ctx);
    MG_CHECK(rc, fn_exit);
    if (work < MGPK_HOST_WAKE_MIN && !mgpk_hcopy_awake(ctx->hcopy)) {
        /* This one runs alone; the next, in a loop of packs, finds the
           helpers awake. */
        mgpk_hcopy_poke(ctx->hcopy);
        host_range(j, 0, (size_t)n);
        goto fn_exit;
    }
    ctx->stats.host_splits++;
    mgpk_hcopy_ranges(ctx->hcopy, (size_t)n, (size_t)(work / MGPK_HOST_GRAIN), host_range, j);
fn_exit:
    return rc;
}

/* Both entry points: `lock` takes ctx->lock for a job long enough to split
   (a shorter one never touches ctx). */
static int host_pack(mgpk_ctx_t *ctx, int lock, const mgdt_type_t *type, void *typed, void *packed,
                     int64_t first, int64_t n, int unpack)
{
    host_job_t j = {.type = type->bytes ? type->bytes : type,
                    .typed = typed,
                    .packed = packed,
                    .first = first,
                    .unpack = unpack};
    int64_t work = ctx ? host_work(j.type, first, n) : 0;
    lock = lock && work >= MGPK_HOST_SPLIT_MIN;
    if (lock)
        pthread_mutex_lock(&ctx->lock);
    int rc = host_run(ctx, &j, n, work);
    if (lock)
        pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int mgpk_host_pack_locked(mgpk_ctx_t *ctx, const mgdt_type_t *type, void *typed, void *packed,
                          int64_t first, int64_t n, int unpack)
{
    return host_pack(ctx, 0, type, typed, packed, first, n, unpack);
}

int mgpk_host_pack(mgpk_ctx_t *ctx, const mgdt_type_t *type, void *typed, void *packed,
                   int64_t first, int64_t n, int unpack)
{
    int rc = host_pack(ctx, 1, type, typed, packed, first, n, unpack);
    if (rc == MPI_SUCCESS && ctx && n > 0)
        mgpk_count_call(ctx, unpack, MGPK_METHOD_HOST, n);
    return rc;
}
