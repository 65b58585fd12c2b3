/*
 * Host pack and unpack of host memory: the datatype engine's walk
 * (mgdt_host_pack), split over the context's thread pool for long ranges.
 * It serves the host method of the device layer (a zero-copy buffer of a CPU
 * device is host memory; elsewhere a staged or mapped copy of the extent).
 *
 * The walk moves the same bytes as MPI_Pack in the same order, so its output
 * is interchangeable with MPI's; it beats MPICH 4.0.2's own pack where that
 * one copies runs of variable length (doc/performance.md, session 13).
 */
#include "config.h"

#include "mgpk_impl.h"

/* Parts of less work than this cost more to hand out than they save:
   waking a helper took tens of microseconds on a shared VM.  The work of a
   range counts its packed bytes plus MGPK_HOST_RUN_COST per run. */
#define MGPK_HOST_MIN_PART ((int64_t)1 << 20)
#define MGPK_HOST_RUN_COST 64

/* The walk's cost of n packed bytes from `first`, in bytes of memcpy: each
   run adds about as much as 64 bytes of copying (indexed:8 at 1 MiB, 128 Ki
   runs: 586 us on one thread on the VM, against 50 us for 1 MiB of 128-byte
   runs; session 14).  The mean run length is that of the first 16 runs, at
   most 9 times n in all. */
static int64_t host_work(const mgdt_type_t *type, int64_t first, int64_t n)
{
    if (n < 2 * MGPK_HOST_MIN_PART / 9)
        return n;
    int64_t bl = mgdt_ref_mean_run(type, first, n, 16);
    if (bl < MGPK_HOST_RUN_COST / 8)
        bl = MGPK_HOST_RUN_COST / 8;
    return n + n / bl * MGPK_HOST_RUN_COST;
}

typedef struct host_job {
    const mgdt_type_t *type;
    char *typed, *packed;
    int64_t first, n, part;
    int unpack;
} host_job_t;

static void host_part(void *arg, int part)
{
    const host_job_t *j = arg;
    int64_t off = (int64_t)part * j->part;
    int64_t len = j->n - off < j->part ? j->n - off : j->part;
    if (j->unpack)
        mgdt_host_unpack(j->type, j->packed + off, j->typed, j->first + off, len);
    else
        mgdt_host_pack(j->type, j->typed, j->packed + off, j->first + off, len);
}

int mgpk_host_pack_locked(mgpk_ctx_t *ctx, const mgdt_type_t *type, void *typed, void *packed,
                          int64_t first, int64_t n, int unpack)
{
    int rc = MPI_SUCCESS;
    host_job_t j = {.type = type->bytes ? type->bytes : type,
                    .typed = typed,
                    .packed = packed,
                    .first = first,
                    .n = n,
                    .part = n,
                    .unpack = unpack};
    int64_t nparts = host_work(j.type, first, n) / MGPK_HOST_MIN_PART;
    /* One run of bytes is one memcpy, which one thread already moves at
       the memory's speed: split in two it took 1.8x as long at 2 MiB on the
       VM (performance.md, session 13). */
    int one_run = j.type->nodes[0].kind == MGDT_K_LEAF && j.type->extent == j.type->size;
    if (nparts < 2 || !ctx || one_run) {
        host_part(&j, 0);
        goto fn_exit;
    }
    rc = mgpk_ctx_hcopy(ctx);
    MG_CHECK(rc, fn_exit);
    if (nparts > mgpk_hcopy_threads(ctx->hcopy))
        nparts = mgpk_hcopy_threads(ctx->hcopy);
    /* Parts of whole cache lines of the packed side. */
    j.part = ((n + nparts - 1) / nparts + 63) & ~(int64_t)63;
    mgpk_hcopy_parts(ctx->hcopy, (int)((n + j.part - 1) / j.part), host_part, &j);
fn_exit:
    return rc;
}

int mgpk_host_pack(mgpk_ctx_t *ctx, const mgdt_type_t *type, void *typed, void *packed,
                   int64_t first, int64_t n, int unpack)
{
    if (!ctx || host_work(type->bytes ? type->bytes : type, first, n) < 2 * MGPK_HOST_MIN_PART)
        return mgpk_host_pack_locked(NULL, type, typed, packed, first, n, unpack);
    pthread_mutex_lock(&ctx->lock);
    int rc = mgpk_host_pack_locked(ctx, type, typed, packed, first, n, unpack);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}
