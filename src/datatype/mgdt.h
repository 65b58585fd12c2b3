/*
 * mgdt: the datatype engine.  Decodes committed MPI datatypes into a tree,
 * normalizes the tree and serializes it into the format of mgdt_format.h.
 * It knows nothing of OpenCL: the pack engine attaches its per-context state
 * through mgdt_type_set_user().
 *
 * Ownership: a type is reference counted.  The cache attached to the MPI
 * datatype (an attribute keyval) holds one reference until the MPI datatype is
 * freed (MPI deletes the attribute then), or until mgdt_finalize() for
 * predefined types.  mgdt_type_get() lends the cache's type; a caller that
 * keeps it past its call (an operation pending after MPI_Type_free, which MPI
 * allows) takes a reference of its own with mgdt_type_acquire() or
 * mgdt_type_hold() and drops it with mgdt_type_release().  mgdt_type_create()
 * hands out a type with one reference, the caller's, dropped by
 * mgdt_type_free().  The last reference frees the type, its twin and its
 * pack-engine state, in whichever thread drops it.
 */
#ifndef MGDT_H
#define MGDT_H

#include <mpi.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "mgdt_format.h"

/* Shape summary used by the pack engine to pick a specialized kernel. */
typedef enum mgdt_shape_kind {
    MGDT_SHAPE_GENERIC = 0, /* only the generic kernel applies */
    MGDT_SHAPE_CONTIG,      /* count instances are one contiguous run */
    MGDT_SHAPE_VECTOR,      /* VECTOR (or CONTIG) of one LEAF */
    MGDT_SHAPE_SUBARRAY     /* SUBARRAY of 2 or 3 dims of one LEAF */
} mgdt_shape_kind_t;

typedef struct mgdt_shape {
    mgdt_shape_kind_t kind;
    int ndims;          /* SUBARRAY: 2 or 3 */
    int64_t offset;     /* byte offset of the first run from the origin */
    int64_t blocklen;   /* VECTOR/SUBARRAY: contiguous run length in bytes */
    int64_t count;      /* VECTOR: runs per instance */
    int64_t stride;     /* VECTOR: bytes between runs */
    int64_t sub[3];     /* SUBARRAY: run counts per outer dim, C order; last
                           entry is the number of runs along the fastest
                           non-contiguous dimension */
    int64_t strides[3]; /* SUBARRAY: byte stride for each entry of sub[] */
} mgdt_shape_t;

typedef struct mgdt_type {
    /* Serialized form (owned by this object). */
    mgdt_node_t *nodes; /* fixed-length parameter block, nodes[0] is the root */
    size_t nnodes;
    int64_t *lookaside; /* variable-length parameters */
    size_t nlookaside;  /* number of int64 entries (may be 0) */
    /* Summary of one instance, copied from the root for convenience. */
    int64_t size;   /* packed bytes (MPI_Type_size) */
    int64_t extent; /* MPI_Type_get_extent */
    int64_t lb;
    int64_t true_lb;   /* MPI_Type_get_true_extent's lb */
    int64_t true_ub;   /* true_lb + true extent */
    int64_t elements;  /* basic elements */
    int align;         /* 1, 2, 4, 8 or 16 */
    int depth;         /* depth of the normalized tree */
    int external32_ok; /* every basic type has the same size natively and in
                          external32, so external32 = byte-swapped native */
    mgdt_shape_t shape;
    /* The byte view: the same byte map with abutting runs of different basic
       types merged (a struct {double, int, int, char} is one 17-byte run),
       for native pack and unpack; NULL where it equals this type (always
       when !external32_ok, whose tree merges them already).  Owned. */
    const struct mgdt_type *bytes;
    /* The packed twin (mgdt_type_twin), MPI_DATATYPE_NULL until asked for. */
    MPI_Datatype twin;
    /* Slot for the pack engine (per-context uploads). */
    void *user;
    void (*user_free)(void *user);
    atomic_int refs; /* references (see the top of this file) */
} mgdt_type_t;

int mgdt_init(void);
void mgdt_finalize(void);

/* The layout of a predefined datatype, as MPI reports it. */
typedef struct mgdt_layout {
    MPI_Datatype dt;
    int used; /* the slot holds a type (layout.c) */
    /* 1 when count instances are the count * size bytes from the buffer's
       address: true lower bound 0, extent and true extent the size, which
       is in [1, 2^31). */
    int dense;
    MPI_Count size, lb, extent, true_lb, true_extent;
} mgdt_layout_t;

/* The table of layout.c: open addressing, MGDT_LAYOUT_SLOTS slots, a type's
   first probe at mgdt_layout_slot(dt).  Written by mgdt_init and
   mgdt_finalize only; read here, inline, by every interposed call. */
#define MGDT_LAYOUT_SLOTS 128 /* a power of two, at least twice the types */
extern __attribute__((visibility("hidden"))) mgdt_layout_t mgdt_layout_table[MGDT_LAYOUT_SLOTS];

static inline unsigned mgdt_layout_slot(MPI_Datatype dt)
{
    uint64_t h = (uint64_t)(uintptr_t)dt * UINT64_C(0x9e3779b97f4a7c15);
    return (unsigned)(h >> 32) & (MGDT_LAYOUT_SLOTS - 1);
}

/* mgdt_predefined past dt's first slot (layout.c). */
const mgdt_layout_t *mgdt_predefined_probe(MPI_Datatype dt);

/* dt's layout when dt is a predefined datatype, from a table that mgdt_init
   fills (layout.c), without a call to MPI; NULL for any other type, and
   before mgdt_init or after mgdt_finalize.  For the checks the interposed
   calls make on every host buffer: a type found at its first slot costs a
   multiplication, a load and two comparisons. */
static inline const mgdt_layout_t *mgdt_predefined(MPI_Datatype dt)
{
    const mgdt_layout_t *l = &mgdt_layout_table[mgdt_layout_slot(dt)];
    if (__builtin_expect(l->dt == dt && l->used, 1))
        return l;
    return mgdt_predefined_probe(dt);
}

/* mgdt_predefined without the probe, no call, for dense types only: dt's
   layout when dt is dense (.dense) and sits at its first slot (the common
   types do: they are entered first), else NULL (dt may still be
   predefined).  For the fast paths that need no calls. */
static inline const mgdt_layout_t *mgdt_predefined_dense(MPI_Datatype dt)
{
    const mgdt_layout_t *l = &mgdt_layout_table[mgdt_layout_slot(dt)];
    return l->dt == dt && l->dense ? l : NULL; /* an unused slot is not dense */
}

/* Decode, normalize and serialize dt, cached on dt.  dt must be committed or
   predefined.  Returns an MPI error code: MPI_ERR_TYPE for MPI_DATATYPE_NULL,
   an uncommitted type (what MPICH answers for the host form of a call), an
   unsupported one, and one whose bytes span more than an int64 holds (its
   sizes, strides or bounds overflow). */
int mgdt_type_get(MPI_Datatype dt, const mgdt_type_t **type);
/* The same, with a reference of the caller's own: *type stays valid after
   MPI_Type_free(dt) until mgdt_type_release(*type). */
int mgdt_type_acquire(MPI_Datatype dt, const mgdt_type_t **type);
/* Take another reference to type (returned), or drop one; NULL is
   ignored. */
const mgdt_type_t *mgdt_type_hold(const mgdt_type_t *type);
void mgdt_type_release(const mgdt_type_t *type);

/* MPI_SUCCESS when dt is predefined or committed; MPI_ERR_TYPE for
   MPI_DATATYPE_NULL and an uncommitted type, with a message.  Decodes
   nothing: for the other side of a call whose buffer is host memory. */
int mgdt_type_check(MPI_Datatype dt);

/* The bytes that count instances of a type touch, relative to the origin:
   instance k (0 <= k < count) sits at k * extent (extent may be negative)
   and touches [true_lb, true_ub) from there.  [*lo, *hi) in checked
   arithmetic, since MPI's own extents may have wrapped (an extent of 2^61, a
   stride of INT64_MIN) and a sum or product that overflows must never pass
   a bounds check as a small offset; the empty range [0, 0) when count <= 0
   or true_ub <= true_lb.  Returns 0, or -1 when the range or its length does
   not fit an int64.  Inline: every host call's classification runs it. */
static inline int mgdt_span(int64_t count, int64_t extent, int64_t true_lb, int64_t true_ub,
                            int64_t *lo, int64_t *hi)
{
    int64_t step, len;
    if (count <= 0 || true_ub <= true_lb) {
        *lo = *hi = 0;
        return 0;
    }
    if (__builtin_mul_overflow(count - 1, extent, &step) ||
        __builtin_add_overflow(step < 0 ? step : 0, true_lb, lo) ||
        __builtin_add_overflow(step > 0 ? step : 0, true_ub, hi) ||
        __builtin_sub_overflow(*hi, *lo, &len))
        return -1;
    return 0;
}

/* p + off as an address, in unsigned arithmetic: a datatype's origin may lie
   outside the memory its bytes touch (a huge lower bound), where the pointer
   sum of C would be undefined though every byte reached is in bounds. */
static inline char *mgdt_addr(const void *p, int64_t off)
{
    return (char *)((uintptr_t)p + (uintptr_t)off);
}

/* [buf + lo, buf + hi) as addresses: [*first, *first + *len).  Returns 0, or
   -1 when the range wraps around the address space (or lo > hi). */
static inline int mgdt_span_addr(const void *buf, int64_t lo, int64_t hi, uintptr_t *first,
                                 size_t *len)
{
    uintptr_t p = (uintptr_t)buf, a, b;
    /* The unsigned sums that wrap are the addresses MPI would compute. */
    int wrap = lo < 0 ? __builtin_sub_overflow(p, (uintptr_t)0 - (uintptr_t)lo, &a)
                      : __builtin_add_overflow(p, (uintptr_t)lo, &a);
    wrap |= hi < 0 ? __builtin_sub_overflow(p, (uintptr_t)0 - (uintptr_t)hi, &b)
                   : __builtin_add_overflow(p, (uintptr_t)hi, &b);
    if (wrap || b < a)
        return -1;
    *first = a;
    *len = b - a;
    return 0;
}

/* Same, uncached: the caller holds the one reference to *type, and drops it
   with mgdt_type_free(). */
int mgdt_type_create(MPI_Datatype dt, mgdt_type_t **type);
void mgdt_type_free(mgdt_type_t *type);

/* The packed twin of dt (whose cached form is type): a committed type with
   dt's type signature and no gaps (extent = size), for sending packed bytes
   so that any receive matching dt accepts them.  dt itself for a basic type;
   otherwise built once and owned by type (freed with it). */
int mgdt_type_twin(const mgdt_type_t *type, MPI_Datatype dt, MPI_Datatype *twin);

/* Attach pack-engine state; freed with user_free when the type goes away. */
void mgdt_type_set_user(const mgdt_type_t *type, void *user, void (*user_free)(void *));

/*
 * Host reference traversal (the paper's Algorithm 1 run on the CPU, byte by
 * byte): copy packed bytes [first, first + n) of count instances starting at
 * buf into/out of packed.  packed points at byte `first` of the packed stream.
 */
void mgdt_ref_pack(const mgdt_type_t *type, const void *buf, int64_t count, void *packed,
                   int64_t first, int64_t n);
void mgdt_ref_unpack(const mgdt_type_t *type, const void *packed, int64_t count, void *buf,
                     int64_t first, int64_t n);
/* User-buffer byte offset (relative to buf) of packed byte pos. */
int64_t mgdt_ref_offset(const mgdt_type_t *type, int64_t pos);
/* The same, plus the bytes left in pos's contiguous leaf run (pos included):
   the run walk of the copy method and of the tests. */
int64_t mgdt_ref_run(const mgdt_type_t *type, int64_t pos, int64_t *left);
/* The mean length of the first (at most) maxruns runs of packed bytes
   [first, first + n), runs that abut in the user buffer counted as one; n
   where there is none.  Cost: one mgdt_ref_run per run. */
int64_t mgdt_ref_mean_run(const mgdt_type_t *type, int64_t first, int64_t n, int maxruns);

/*
 * Host pack and unpack, fast (walk.c): the same bytes as mgdt_ref_pack and
 * mgdt_ref_unpack, moved run by run with constant-size copies for the runs
 * of vectors, subarrays and indexed blocks.  buf is instance 0's origin; the
 * stream has as many instances as first + n reaches.  packed points at
 * byte `first` of the packed stream.  Thread safe: parts of one stream may
 * be moved by different threads.
 */
void mgdt_host_pack(const mgdt_type_t *type, const void *buf, void *packed, int64_t first,
                    int64_t n);
void mgdt_host_unpack(const mgdt_type_t *type, const void *packed, void *buf, int64_t first,
                      int64_t n);

/* Byte-swap a native packed stream in place to or from external32; only valid
   when type->external32_ok. first is the stream offset of buf[0]. */
void mgdt_ref_swap(const mgdt_type_t *type, void *packed, int64_t first, int64_t n);

/* Human-readable dump of the serialized form, for tests and MPIGPU_VERBOSE. */
void mgdt_type_dump(const mgdt_type_t *type, FILE *out);

#endif /* MGDT_H */
