/*
 * Internals of the pack engine shared by the files of src/pack.
 *
 * Every method (kernel, copy) implements one primitive: move packed bytes
 * [first, first + n) between a typed device buffer and a contiguous device
 * buffer.  mgpk_pack/mgpk_unpack (pk_pack.c) route host sides through it,
 * either straight into host memory (unified devices) or through a ring of
 * device staging chunks.
 */
#ifndef MGPK_IMPL_H
#define MGPK_IMPL_H

#include <pthread.h>
#include <stdatomic.h>

#include "mgclock.h"
#include "mgerr.h"
#include "mglog.h"
#include "mgpk.h"

#define MGPK_NSTAGE 4             /* staging chunks in flight */
#define MGPK_NWRAP 8              /* cached host-memory wrappers */
#define MGPK_NMULTI 4             /* cached block tables of the multi kernels */
#define MGPK_MAX_PROGS 4          /* programs (one per .cl file) */
#define MGPK_NWIDTHS 5            /* W = 1, 2, 4, 8, 16 */
#define MGPK_MAX_GLOBAL (1 << 20) /* work-items per launch of the span kernels; the rest loop */
/* Grid kernels (GPUs): words per work-item, strided by the grid, for W >= 4
   and for W < 4 (1 to MGPK_GRID_MAX_WORDS; settings.grid_words overrides
   both), the work-group size
   (settings.local_size overrides), and the largest grid, above which the
   span kernels run. */
#define MGPK_GRID_WORDS 1
#define MGPK_GRID_WORDS_NARROW 4
#define MGPK_GRID_MAX_WORDS 4
#define MGPK_LOCAL_SIZE 256

/* The engine's info lines.  A context's verbose setting (MPIGPU_VERBOSE
   through the device layer, or a test's own) is its threshold, so that the
   calibration can silence the packs it measures. */
#define MGPK_LOG(ctx_, ...)                                                                        \
    do {                                                                                           \
        if ((ctx_)->settings.verbose)                                                              \
            mglog_write(MGLOG_LEVEL_INFO, MGLOG_PACK, __VA_ARGS__);                                \
    } while (0)
#define MGPK_GRID_MAX_ITEMS ((int64_t)1 << 30)
/* Default of settings.split_bytes: a host range at least this long moves in
   at least NSTAGE pieces, so that its kernels and transfers (and host copies)
   overlap; below it, one kernel and one transfer cost less on the H100 than
   the pieces' cross-queue waits (performance.md). */
#define MGPK_SPLIT_MIN ((int64_t)4 << 20)
/* Largest instance size (bytes) packed by the map kernels: the table holds
   one 32-bit offset per packed byte of one instance. */
#define MGPK_MAP_MAX 4096

/* Kernel families; each has a pack and an unpack kernel per width. */
typedef enum mgpk_family {
    MGPK_FAM_GENERIC = 0,
    MGPK_FAM_SWAP,   /* generic walk with byte reversal (W = 1, 2, 4, 8) */
    MGPK_FAM_VECTOR, /* SHAPE_VECTOR */
    MGPK_FAM_SUB,    /* SHAPE_SUBARRAY */
    MGPK_FAM_MAP,    /* small instances: a per-type table of each packed byte's offset */
    /* The grid kernels of the three families above (GPUs): no span loop,
       MGPK_FAM_GRID_OF(family) */
    MGPK_FAM_VECTOR_GRID,
    MGPK_FAM_SUB_GRID,
    MGPK_FAM_MAP_GRID,
    MGPK_FAM_MULTI, /* blocks of shapes, one table (mgpk_pack_multi) */
    MGPK_FAM_COUNT
} mgpk_family_t;

typedef enum mgpk_dir { MGPK_DIR_PACK = 0, MGPK_DIR_UNPACK = 1 } mgpk_dir_t;

/* The scalar arguments a kernel last ran with (pk_kernel.c, SET_LONG). */
#define MGPK_MAX_KARGS 16
typedef struct mgpk_kargs {
    cl_long v[MGPK_MAX_KARGS];
    uint32_t set; /* bit i: v[i] holds the kernel's argument i */
    int grid_set; /* grid kernels: grid holds the struct argument */
    mgpk_grid_args_t grid;
} mgpk_kargs_t;

/* One decision of mgpk_calib_choose and the call it was for: a repeated call
   skips the walk over the type's first runs that finds its block length.  A
   stale entry (a freed type's address reused) can only cost speed: every
   method gives the same bytes. */
typedef struct mgpk_calib_memo {
    const mgdt_type_t *type;
    int64_t size, extent, count, n;
    int to_host, allow_host, flags, valid;
    mgpk_method_t method;
} mgpk_calib_memo_t;
#define MGPK_MEMO 2

typedef struct mgpk_upload mgpk_upload_t;
typedef struct mgpk_hcopy mgpk_hcopy_t;

typedef struct mgpk_wrap {
    void *ptr;
    size_t len;
    cl_mem mem;
    uint64_t used; /* LRU tick */
} mgpk_wrap_t;

struct mgpk_ctx {
    cl_context context;
    cl_device_id device;
    cl_command_queue queue;      /* kernels and device-side copies */
    cl_command_queue copy_queue; /* host transfers of the pipeline */
    mgpk_settings_t settings;
    char *cache_dir;
    int unified;
    int cpu;              /* CL_DEVICE_TYPE_CPU: long spans per work-item */
    cl_uint ncu;          /* compute units */
    pthread_mutex_t lock; /* one call at a time: kernel arguments, staging, wrappers */

    int built;
    cl_program progs[MGPK_MAX_PROGS];
    cl_kernel kernels[MGPK_FAM_COUNT][2][MGPK_NWIDTHS];
    mgpk_kargs_t kargs[MGPK_FAM_COUNT][2][MGPK_NWIDTHS]; /* cleared with the kernels */
    mgpk_stats_t stats;
    /* The counters of stats.bytes and stats.calls, kept apart because the
       host walk counts them without ctx->lock. */
    atomic_llong bytes[2];
    atomic_llong calls[4];

    int in_order;              /* ctx->queue executes in order: no events needed on it */
    cl_mem stage[MGPK_NSTAGE]; /* device staging chunks */
    cl_mem pin[MGPK_NSTAGE];   /* pinned host chunks (CL_MEM_ALLOC_HOST_PTR) ... */
    void *pinp[MGPK_NSTAGE];   /* ... mapped once, for the life of the context */
    size_t stage_bytes;
    mgpk_hcopy_t *hcopy; /* host copy threads, started with the staging */
    mgpk_wrap_t wrap[MGPK_NWRAP];
    uint64_t tick;

    mgpk_upload_t *uploads;  /* registry, guarded by the global upload lock */
    mgpk_calib_info_t calib; /* the AUTO decision table (pk_calib.c), ctx->lock */
    /* Set (release) once calib.source is decided, so mgpk_calib_load() returns
       without ctx->lock on every later operation. */
    atomic_int calib_decided;
    /* The last decisions taken from it, ctx->lock: a pack to host asks twice
       per call (the device layer with host staging allowed, then the
       engine without), so one entry would miss every time. */
    mgpk_calib_memo_t memo[MGPK_MEMO];
    int memo_next;
    /* The block tables of the multi kernels (pk_kernel.c): the last few
       calls' tables on the device (a halo's phases each have theirs), the
       least recently used one rewritten for a new table; ctx->lock. */
    struct mgpk_multi_tab {
        cl_mem mem;
        cl_long *host;
        size_t cap, len; /* longs */
        uint64_t used;
    } multi[MGPK_NMULTI];
};

/* One call, as the methods see it. */
typedef struct mgpk_plan {
    const mgdt_type_t *type;
    int64_t count;
    mgpk_dir_t dir;
    int flags;
    cl_mem typed;
    int64_t typed_off;
    int width; /* W */
    mgpk_family_t family;
    int contig;                   /* SHAPE_CONTIG: plain copy commands */
    cl_mem nodes, la;             /* uploaded tree (generic and swap families) */
    cl_mem map;                   /* byte-offset table (map family) ... */
    int64_t unit_size, unit_step; /* ... of one repeating unit of this size, and the
                                     distance between the units' origins */
    const char *what;             /* for the verbose line */
    const mgpk_block_t *blocks;   /* mgpk_pack_multi: the blocks of type (a struct of them) */
    int nblocks;
    cl_mem tab;             /* multi family: the block table on the device ... */
    cl_long ntab;           /* ... and its blocks */
    cl_command_queue queue; /* where the kernel method and contiguous copies
                               enqueue (mgpk_enqueue: the caller's); NULL:
                               ctx->queue */
} mgpk_plan_t;

/* Longs per block of the multi kernels' table (shape.cl, MG_MULTI_NP). */
#define MGPK_MULTI_NP 12

/* The queue a plan's commands go on. */
static inline cl_command_queue mgpk_plan_queue(const mgpk_ctx_t *ctx, const mgpk_plan_t *plan)
{
    return plan->queue ? plan->queue : ctx->queue;
}

/* A method: plan a call, then enqueue sub-ranges of it on ctx->queue.  The
   enqueue waits for `wait` and hands back one event that completes when the
   range has moved. */
typedef struct mgpk_method_ops {
    const char *name;
    int (*plan)(mgpk_ctx_t *ctx, mgpk_plan_t *plan, int64_t first, int64_t n, int64_t hint);
    int (*enqueue)(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, cl_mem packed, int64_t packed_off,
                   int64_t first, int64_t n, cl_uint nwait, const cl_event *wait, cl_event *done);
} mgpk_method_ops_t;

extern const mgpk_method_ops_t mgpk_kernel_ops;
extern const mgpk_method_ops_t mgpk_copy_ops;

/* pk_ctx.c: the device and pinned staging chunks (allocated once) and a cached
   CL_MEM_USE_HOST_PTR wrapper of [ptr, ptr + len); ctx->lock held. */
int mgpk_ctx_stage(mgpk_ctx_t *ctx);
/* The host copy pool, started at the first need (the staging, or a host pack
   long enough to split): ctx->settings.copy_threads threads, else every CPU
   the process may use on a CPU device and half of them elsewhere; ctx->lock
   held. */
int mgpk_ctx_hcopy(mgpk_ctx_t *ctx);
int mgpk_ctx_wrap(mgpk_ctx_t *ctx, void *ptr, size_t len, cl_mem *mem);

/* pk_hcopy.c: a pool of nthreads - 1 helper threads (nthreads <= 0: chosen
   from the CPUs the process may use), the memcpy it splits among them and
   the caller, and any job of parts.  One job at a time (ctx->lock). */
int mgpk_hcopy_create(int nthreads, mgpk_hcopy_t **h);
void mgpk_hcopy_free(mgpk_hcopy_t *h);
int mgpk_hcopy_threads(const mgpk_hcopy_t *h);
/* Helpers still watching for a job after their last one (a job handed to
   them starts at once; a sleeping one takes tens of microseconds to wake). */
int mgpk_hcopy_awake(const mgpk_hcopy_t *h);
/* Wake the sleeping helpers without a job, to watch for the next one. */
void mgpk_hcopy_poke(mgpk_hcopy_t *h);
void mgpk_hcopy_run(mgpk_hcopy_t *h, void *dst, const void *src, size_t n);
/* The CPUs this process may run on. */
int mgpk_hcopy_cpus(void);
/* pk_host.c: mgpk_host_pack with ctx->lock held (ctx NULL: no threads). */
int mgpk_host_pack_locked(mgpk_ctx_t *ctx, const mgdt_type_t *type, void *typed, void *packed,
                          int64_t first, int64_t n, int unpack);
/* Cut [0, n) into at most nparts ranges of whole 64-byte lines (no more
   than 4 per thread of the pool) and run fn(arg, off, len) on each, over the
   caller and the helpers; returns once every range is done.  With fewer
   than two parts, one call on the caller's thread. */
void mgpk_hcopy_ranges(mgpk_hcopy_t *h, size_t n, size_t nparts,
                       void (*fn)(void *arg, size_t off, size_t len), void *arg);

/* pk_prog.c: build (or load) every program and kernel once; ctx->lock held. */
int mgpk_prog_ensure(mgpk_ctx_t *ctx);
void mgpk_prog_release(mgpk_ctx_t *ctx);
#define MGPK_FNV_BASIS 0xcbf29ce484222325ULL
uint64_t mgpk_fnv1a(uint64_t h, const void *data, size_t len);

/* pk_upload.c: the type's tree on this context's device, uploaded once, and
   with map_size > 0, the table of the user offsets of its first map_size
   packed bytes (*map NULL where an offset does not fit 32 bits). */
int mgpk_upload_get(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t map_size, cl_mem *nodes,
                    cl_mem *la, cl_mem *map);
void mgpk_upload_release_ctx(mgpk_ctx_t *ctx);

/* pk_pack.c: route and run one call with the method of plan->flags (not
   AUTO); ctx->lock held.  The calibration times it. */
int mgpk_transfer_locked(mgpk_ctx_t *ctx, mgpk_plan_t *plan, mgpk_buf_t packed, int64_t first,
                         int64_t n);

/* pk_calib.c: the AUTO decision, calibrating first if needed; ctx->lock held. */
mgpk_method_t mgpk_calib_choose(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, int64_t n,
                                int to_host, int allow_host, int flags);

/* pk_copy.c: shared by both methods. */
int mgpk_contig_enqueue(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, cl_mem packed, int64_t packed_off,
                        int64_t first, int64_t n, cl_uint nwait, const cl_event *wait,
                        cl_event *done);
/* A host-to-device write, as two-row rectangles where it is short and the
   GPU shared (settings.inline_max). */
cl_int mgpk_write(mgpk_ctx_t *ctx, cl_mem mem, size_t off, const void *host, size_t n,
                  cl_bool blocking, cl_uint nwait, const cl_event *wait, cl_event *done);
/* How many rectangle commands the copy method takes for n bytes (whole
   instances) of count instances of type; 0: the type has no rectangle
   shape (a command per run instead). */
int64_t mgpk_rect_commands(const mgdt_type_t *type, int64_t count, int64_t n);
/* Whether a copy-method range of n bytes between the typed buffer and host
   memory moves by rectangles straight to or from host (n at most
   settings.inline_max, on a shared GPU or as one rectangle on a discrete
   one): the route mgpk_transfer_locked takes and the cost auto's choice
   charges. */
static inline int mgpk_host_rect(const mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count,
                                 int64_t n)
{
    if ((uint64_t)n > ctx->settings.inline_max)
        return 0;
    if (ctx->settings.kernel_switch_us > 0)
        return 1;
    /* A discrete GPU of the process's own: where one rectangle covers the
       range.  On the H100 with a GPU per rank, 8 B every 64 B from 64 B to
       64 KiB moved this way in 21.8 to 59.6 us a ping-pong message against
       39.9 to 69.5 for the kernel into device staging and a read, while a
       subarray of 12 rectangles lost to the kernel from 5 KB up
       (doc/performance.md, S22-9). */
    return !ctx->unified && mgpk_rect_commands(type, count, n) == 1;
}
/* The copy method straight between the typed buffer and host memory,
   blocking. */
int mgpk_copy_host(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, char *host, int64_t first, int64_t n);
/* Largest W in {1..16} dividing every value OR-ed into mix. */
int mgpk_width(uint64_t mix);
/* Whether the shape fields describe the type (else the generic path runs). */
int mgpk_shape_ok(const mgdt_type_t *type, int64_t count);
/* The form of type that native packing runs on this device (pk_kernel.c). */
const mgdt_type_t *mgpk_native_view(const mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count);

/* Count a call that moved n packed bytes with method m (dir 0 pack, 1
   unpack); no lock needed. */
static inline void mgpk_count_call(mgpk_ctx_t *ctx, int dir, mgpk_method_t m, int64_t n)
{
    atomic_fetch_add_explicit(&ctx->bytes[dir ? 1 : 0], n, memory_order_relaxed);
    atomic_fetch_add_explicit(&ctx->calls[m & 3], 1, memory_order_relaxed);
}

#endif /* MGPK_IMPL_H */
