/*
 * mgpk: the pack engine.  Runs packs and unpacks of serialized datatypes
 * (mgdt_type_t) on one OpenCL device: kernel choice, type upload, program
 * cache, staging and pipelining.  It knows nothing of MPI requests or of
 * device addresses: callers hand it cl_mem objects and byte offsets that they
 * have already checked against the allocation.
 *
 * Ownership: an mgpk_ctx_t is created and freed by its caller (the device
 * layer keeps one per OpenCL context).  It retains the cl_context, device and
 * queue it is given and releases them in mgpk_ctx_free().  Per-type uploads are
 * attached to the mgdt_type_t and freed with it.
 */
#ifndef MGPK_H
#define MGPK_H

#include <CL/cl.h>
#include <stdint.h>

#include "mgdt.h"

typedef struct mgpk_ctx mgpk_ctx_t;

/* How to move the data (MPIGPU_PACK). */
typedef enum mgpk_method {
    MGPK_METHOD_AUTO = 0, /* choose per call */
    MGPK_METHOD_KERNEL,   /* a pack kernel (specialized or generic) */
    MGPK_METHOD_COPY,     /* clEnqueue{Read,Write,Copy}Buffer{,Rect}, no kernel */
    MGPK_METHOD_HOST      /* stage the whole extent and pack on the CPU */
} mgpk_method_t;

/* One side of a pack: host memory (host != NULL) or a device buffer.  offset
   is the byte offset of the datatype origin (or of packed byte `first`) inside
   mem; for the typed side it may be negative as long as every byte touched
   lies inside mem.  pinned: the host memory is page-locked (the mapping of a
   CL_MEM_ALLOC_HOST_PTR buffer, say), so that reads and writes between it and
   device memory run at the bus's speed without a bounce through staging. */
typedef struct mgpk_buf {
    void *host;
    cl_mem mem;
    int64_t offset;
    int pinned;
} mgpk_buf_t;

/* How host sides reach a device without host-unified memory
   (MPIGPU_HOST_DMA): */
typedef enum mgpk_dma {
    MGPK_DMA_AUTO = 0, /* straight between device staging and pinned host memory,
                          through the pinned staging ring for pageable memory */
    MGPK_DMA_ON,       /* straight for every host side */
    MGPK_DMA_OFF       /* always through the staging ring */
} mgpk_dma_t;

/* Options of one call. */
#define MGPK_F_EXTERNAL32 0x1 /* byte-swap to/from external32 (type->external32_ok) */
/* Method choice only: the typed side's storage is host memory the caller
   reads in place (a zero-copy buffer), so host staging pays no map. */
#define MGPK_F_ZERO_COPY 0x2
/* A method for this call in place of settings.method (kernel or copy; AUTO:
   the setting): flags |= MGPK_F_METHOD(m). */
#define MGPK_F_METHOD(m_) ((int)(m_) << 4)
#define MGPK_F_METHOD_OF(flags_) ((mgpk_method_t)(((flags_) >> 4) & 0x3))

/* Calibration of MPIGPU_PACK=auto (MPIGPU_CALIBRATE): */
typedef enum mgpk_calib_mode {
    MGPK_CALIB_ON = 0, /* measure at the first AUTO decision unless the disk cache holds a
                          valid table for this device, driver and library */
    MGPK_CALIB_OFF,    /* no measurement: the static rule (the kernel method) */
    MGPK_CALIB_FORCE   /* measure at the first AUTO decision, then rewrite the cache */
} mgpk_calib_mode_t;

typedef struct mgpk_settings {
    mgpk_method_t method;        /* forced method, or AUTO */
    int verbose;                 /* print method decisions to stderr */
    size_t chunk_bytes;          /* pipeline chunk size for non-unified devices; 0: the
                                    default of MPIGPU_CHUNK */
    int force_pipeline;          /* use the chunked device-staging path even where the
                                    device shares host memory (tests) */
    const char *cache_dir;       /* on-disk program binary cache, NULL to disable */
    size_t span_bytes;           /* packed bytes per kernel work-item; 0: chosen per device
                                    (tests force both mappings) */
    int copy_threads;            /* threads of the pipeline's host copies, the caller's
                                    included; 0: half the CPUs the process may use, at
                                    most 8 */
    mgpk_dma_t host_dma;         /* see mgpk_dma_t */
    size_t split_bytes;          /* host ranges from this long up move in pieces that
                                    overlap; 0: 4 MiB */
    int map_max;                 /* largest instance size in bytes that the map kernels
                                    pack (a table of each packed byte's offset, built
                                    once per type); 0: 4096 on GPUs, never on CPU
                                    devices; negative: never */
    mgpk_calib_mode_t calibrate; /* see mgpk_calib_mode_t */
    int grid_words;              /* words per work-item of the grid kernels (vector,
                                    subarray and map families without a span loop),
                                    1 to 4; 0: on GPUs 1 for words of 4 bytes and
                                    more, 4 for narrower ones, the span kernels on
                                    CPU devices; negative: never the grid kernels */
    int local_size;              /* work-group size of kernel launches on GPUs, and of
                                    forced grid kernels on CPU devices; 0: 256 on
                                    GPUs, the runtime's choice for those */
    double kernel_switch_us;     /* what a kernel costs beyond its calibrated time (a
                                    context switch on a GPU that other processes use),
                                    added to the kernel method's time by auto; 0: none */
    size_t inline_max;           /* where kernel_switch_us > 0 (a shared GPU):
                                    host-to-device writes shorter than this go as
                                    two-row rectangles (mgpk_write), and copy-method
                                    packs of at most this many bytes between the
                                    typed buffer and host memory move by rectangles
                                    straight to or from the host; 0: neither */
} mgpk_settings_t;

/* Create an engine for (context, device).  queue may be NULL, in which case
   one is created; otherwise it is retained and used for all work. */
int mgpk_ctx_create(cl_context context, cl_device_id device, cl_command_queue queue,
                    const mgpk_settings_t *settings, mgpk_ctx_t **ctx);
void mgpk_ctx_free(mgpk_ctx_t *ctx);
/* Set settings.kernel_switch_us after creation (the device layer learns at
   MPI_Init, after the default engine exists, how many processes share its
   GPU); forgets the auto choices taken so far. */
void mgpk_ctx_set_kernel_switch(mgpk_ctx_t *ctx, double us);
cl_command_queue mgpk_ctx_queue(const mgpk_ctx_t *ctx);
cl_context mgpk_ctx_context(const mgpk_ctx_t *ctx);
cl_device_id mgpk_ctx_device(const mgpk_ctx_t *ctx);
int mgpk_ctx_host_unified(const mgpk_ctx_t *ctx);

/*
 * Pack bytes [first, first + n) of the packed stream of `count` instances of
 * type, whose origin is src (a device buffer), into dst (host or device; dst
 * receives exactly n bytes starting at dst.offset / dst.host).  Blocking:
 * returns once dst holds the data.  Returns an MPI error code.  Contiguous
 * data (mgpk_contig, native) moves as one buffer transfer under every
 * method, MGPK_METHOD_HOST included, and counts as the copy method; other
 * data under MGPK_METHOD_HOST is the caller's (MPI_ERR_UNSUPPORTED_OPERATION).
 */
int mgpk_pack(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, mgpk_buf_t src,
              mgpk_buf_t dst, int64_t first, int64_t n, int flags);
/* The reverse: scatter packed bytes [first, first + n) from src (host or
   device) into count instances of type whose origin is dst (a device buffer).
   Only the type's bytes within that range are written. */
int mgpk_unpack(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, mgpk_buf_t src,
                mgpk_buf_t dst, int64_t first, int64_t n, int flags);

/*
 * Batched packing: the blocks of one call, each count instances of its type
 * at byte offset disp from the typed origin, packed one after the other in
 * this order (the packed stream of one instance of a struct of the blocks).
 * type is that struct, made by the caller (its size is the blocks' total):
 * where every block has a contiguous, vector or subarray shape and the
 * kernel method runs, one launch of the multi kernel moves every block,
 * whatever their number, from a table of the blocks; otherwise the call is
 * mgpk_pack (mgpk_unpack) of one instance of type.  Blocking; the whole
 * stream, [0, type->size).  Returns an MPI error code.
 */
typedef struct mgpk_block {
    const mgdt_type_t *type;
    int64_t count;
    int64_t disp;
} mgpk_block_t;
int mgpk_pack_multi(mgpk_ctx_t *ctx, const mgdt_type_t *type, const mgpk_block_t *blocks,
                    int nblocks, mgpk_buf_t src, mgpk_buf_t dst, int flags);
int mgpk_unpack_multi(mgpk_ctx_t *ctx, const mgdt_type_t *type, const mgpk_block_t *blocks,
                      int nblocks, mgpk_buf_t src, mgpk_buf_t dst, int flags);

/* Pack (or, with unpack, unpack) bytes [first, first + n) of the native
   packed stream of instances of type whose origin is typed, both in host
   memory, on the CPU: the datatype engine's walk, split over ctx's copy
   threads from 4 MiB of work, or 512 KiB while they are awake, each run
   counted as 64 bytes (ctx may be NULL: the caller's thread alone).  packed
   points at byte `first`.  The bytes are MPI_Pack's. */
int mgpk_host_pack(mgpk_ctx_t *ctx, const mgdt_type_t *type, void *typed, void *packed,
                   int64_t first, int64_t n, int unpack);

/* Enqueue on queue (a queue of ctx's context), after its wait list, the pack
   of packed bytes [first, first + n) of count instances of type whose origin
   is typed into packed, or with unpack the reverse, both device buffers
   (packed.offset: where byte first goes); *done completes when the bytes
   have moved (the caller releases it).  Non-blocking: nothing waits for queue.  The kernel method,
   or one buffer copy for contiguous data; the engine's own queue sees none of it. flags:
   MGPK_F_EXTERNAL32 only. */
int mgpk_enqueue(mgpk_ctx_t *ctx, cl_command_queue queue, const mgdt_type_t *type, int64_t count,
                 int unpack, mgpk_buf_t typed, mgpk_buf_t packed, int64_t first, int64_t n,
                 cl_uint nwait, const cl_event *wait, cl_event *done, int flags);
/* Enqueue on queue (of ctx's context) a host-to-device write of n bytes
   from host to mem at off, after its wait list, the way the engine writes:
   as two-row rectangles where it is short and the GPU shared
   (settings.inline_max; a short clEnqueueWriteBuffer waited about 150 us
   for a context switch on the H100 shared by two processes, a rectangle
   11 us).  *done (may be NULL) completes when every byte is written, also
   on an out-of-order queue.  lead (may be NULL): where the write takes two
   commands, the first one's event, for a caller that must hold every event
   of its commands (PoCL 3.1 aborts when a command whose event nobody holds
   fails with commands behind it); NULL otherwise. */
cl_int mgpk_write_queue(mgpk_ctx_t *ctx, cl_command_queue queue, cl_mem mem, size_t off,
                        const void *host, size_t n, cl_bool blocking, cl_uint nwait,
                        const cl_event *wait, cl_event *done, cl_event *lead);
/* Blocking contiguous copy of n bytes between any two sides of this context. */
int mgpk_copy(mgpk_ctx_t *ctx, mgpk_buf_t dst, mgpk_buf_t src, size_t n);
/* The same between host memory and a device buffer, without waiting: *done
   (never NULL) is the event of the last command, NULL when n is 0.  The
   caller waits for it and releases it; host memory stays untouched by the
   caller until then. */
int mgpk_copy_start(mgpk_ctx_t *ctx, mgpk_buf_t dst, mgpk_buf_t src, size_t n, cl_event *done);
/* Whether count instances of type are one run of bytes in memory order (a
   contiguous shape, or one run per instance, in the type or its byte view;
   and one instance or no gap between instances).  Such data moves as one
   buffer transfer under every method (mgpk_pack), never a kernel. */
int mgpk_contig(const mgdt_type_t *type, int64_t count);
/* The offset of that run's first byte from the datatype origin (0 when
   !mgpk_contig). */
int64_t mgpk_contig_offset(const mgdt_type_t *type, int64_t count);

/* On a device whose memory is the host's (CL_DEVICE_HOST_UNIFIED_MEMORY, a
   CPU device; not under the setting that forces the pipeline): a blocking map
   of [off, off + n) of mem for reading, or for reading and writing, so that
   the CPU (un)packs in place instead of staging a copy.  *p is NULL, and the
   call does nothing, on other devices.  mgpk_unmap ends the map and waits
   for it. */
int mgpk_map(mgpk_ctx_t *ctx, cl_mem mem, size_t off, size_t n, int write, void **p);
/* Whether mgpk_map maps on ctx (else it leaves *p NULL). */
int mgpk_maps(const mgpk_ctx_t *ctx);
int mgpk_unmap(mgpk_ctx_t *ctx, cl_mem mem, void *p);
/* Wait until every command the engine enqueued is complete (before the host
   touches a buffer's storage directly). */
int mgpk_finish(mgpk_ctx_t *ctx);

/* Build (or load from the disk cache) every program now rather than at the
   first kernel launch, e.g. at MPI_Init. */
int mgpk_ctx_prepare(mgpk_ctx_t *ctx);

/*
 * The method MPIGPU_PACK=auto takes for a pack or unpack of bytes
 * [0, n) of count instances of type whose packed side is host memory
 * (to_host) or a device buffer: MGPK_METHOD_KERNEL, _COPY, or, where
 * allow_host is set and to_host, _HOST (which the caller carries out).
 * Calibrates (or loads the cached table) at the first call on ctx.
 * flags: as for mgpk_pack (external32 rules the copy method out).
 */
mgpk_method_t mgpk_method_choose(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, int64_t n,
                                 int to_host, int allow_host, int flags);

/*
 * The seconds that auto's model predicts for mgpk_pack (or mgpk_unpack) of
 * all count instances of type between a device buffer and host memory
 * (to_host) or another device buffer, under the method that call would
 * run: flags' method, else the setting; under auto the one auto picks
 * (never host).  A kernel's estimate includes settings.kernel_switch_us (a
 * shared GPU), as auto's comparison does; contiguous data is one transfer
 * (no kernel, no switch).  *method (may be NULL) gets the method.  Returns
 * 0 for no bytes, and a negative value where the model cannot say: no
 * table (MPIGPU_CALIBRATE=0, a failed measurement), or the host method.
 * Decides the table first, as the first auto decision would; remembers
 * nothing and counts no choice.  For callers that compare ways of moving
 * the same bytes (the fused packing of the collectives).
 */
double mgpk_method_cost(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, int to_host,
                        int flags, mgpk_method_t *method);

/* The calibration grid and table (a copy, for tests and diagnostics). */
#define MGPK_CAL_NSIZES 4   /* packed sizes 4 KiB, 256 KiB, 1 MiB, 8 MiB */
#define MGPK_CAL_NBLOCKS 3  /* block lengths 8, 64, 512 B */
#define MGPK_CAL_NMETHODS 3 /* kernel, copy, host (index = method - 1) */
#define MGPK_CAL_NSTRIDES 2 /* block strides of 2 and 8 block lengths */
typedef enum mgpk_calib_source {
    MGPK_CAL_NONE = 0, /* not decided yet */
    MGPK_CAL_STATIC,   /* MPIGPU_CALIBRATE=0, or the measurement failed */
    MGPK_CAL_MEASURED, /* measured by this process */
    MGPK_CAL_CACHED    /* read back from the disk cache */
} mgpk_calib_source_t;
typedef struct mgpk_calib_info {
    mgpk_calib_source_t source;
    double seconds;  /* time the measurement took (MEASURED) */
    char path[4096]; /* cache file, "" when there is no cache directory */
    int64_t sizes[MGPK_CAL_NSIZES];
    int64_t blocks[MGPK_CAL_NBLOCKS];
    int64_t strides[MGPK_CAL_NSTRIDES]; /* block stride over block length */
    /* [to_host][stride][size][block][method - 1]: seconds per call, < 0
       where not measured */
    double t[2][MGPK_CAL_NSTRIDES][MGPK_CAL_NSIZES][MGPK_CAL_NBLOCKS][MGPK_CAL_NMETHODS];
    /* [to_host]: seconds each further copy command adds to a call of the
       copy method that takes one command per run (types without a vector or
       subarray shape) */
    double run[2];
    /* [stride][size]: seconds of a map and an unmap of the extent of each
       calibration vector (devices that share the host's memory), which the
       host method pays on top of the host times where the typed side is not
       zero copy; 0 where the host method reads the extent instead (the host
       times include that read) */
    double map[MGPK_CAL_NSTRIDES][MGPK_CAL_NSIZES];
} mgpk_calib_info_t;
/* Calibrates first if nothing is decided yet. */
int mgpk_calib_get(mgpk_ctx_t *ctx, mgpk_calib_info_t *info);
/* Decide the AUTO table now, as the first AUTO decision would (the cache, a
   measurement or the static rule, per MPIGPU_CALIBRATE), so that no pack
   call pays for it.  A failed measurement leaves the static rule. */
int mgpk_calib_load(mgpk_ctx_t *ctx);
/* Give dst, an engine of the same device whose table is not decided yet, the
   table of src when src's is decided (a second engine on one device then
   neither loads nor measures one); otherwise nothing. */
void mgpk_calib_share(mgpk_ctx_t *dst, mgpk_ctx_t *src);
/* Grid cell nearest (in log scale) to a call of n packed bytes whose runs are
   blocklen bytes long; and the block length the engine assumes for a call. */
void mgpk_calib_cell(int64_t n, int64_t blocklen, int *si, int *bi);
int64_t mgpk_calib_blocklen(const mgdt_type_t *type, int64_t count, int64_t n);

/* Counters for tests and diagnostics (a copy; nothing to free). */
typedef struct mgpk_stats {
    int programs_built;    /* programs compiled from source */
    int programs_loaded;   /* programs created from the disk cache */
    int last_width;        /* W of the last kernel launch (0: no kernel ran) */
    const char *last_path; /* "direct", "device", "dma", "pipeline" or "transfer"
                              (contiguous data to or from host memory) */
    long long launches;    /* kernels enqueued */
    int copy_threads;      /* threads of the host copies (0: pipeline not used yet) */
    const char *last_what; /* what moved the last range ("map kernel", ...) */
    int last_grid;         /* words per work-item of the last launch when a grid
                              kernel ran, 0 for a span kernel */
    long long choices;     /* MPIGPU_PACK=auto decisions computed (not remembered) */
    long long host_splits; /* host walks split over the copy pool */
    /* Calls of mgpk_pack, mgpk_unpack and mgpk_host_pack that moved bytes
       (calibration runs not counted): packed bytes by direction (0 pack,
       1 unpack), and calls by the method that ran (mgpk_method_t; AUTO
       counts nothing, as auto resolves to one of the others). */
    long long bytes[2];
    long long calls[4];
} mgpk_stats_t;
void mgpk_ctx_stats(const mgpk_ctx_t *ctx, mgpk_stats_t *stats);

/* Embedded kernel sources (generated at build time, see src/pack/kernels). */
typedef struct mgpk_source {
    const char *name;
    const char *text;
    size_t len;
} mgpk_source_t;
extern const mgpk_source_t mgpk_sources[];
extern const size_t mgpk_nsources;

#endif /* MGPK_H */
