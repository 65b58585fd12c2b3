/*
 * mgdt: the datatype engine.  Decodes committed MPI datatypes into a tree,
 * normalizes the tree and serializes it into the format of mgdt_format.h.
 * It knows nothing of OpenCL: the pack engine attaches its per-context state
 * through mgdt_type_set_user().
 *
 * Ownership: an mgdt_type_t returned by mgdt_type_get() is owned by the cache
 * attached to the MPI datatype (an attribute keyval) and lives until the MPI
 * datatype is freed, or until mgdt_finalize() for predefined types.  Callers
 * borrow it and never free it.  mgdt_type_create() hands out a type the caller
 * owns and releases with mgdt_type_free().
 */
#ifndef MGDT_H
#define MGDT_H

#include <mpi.h>
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
} mgdt_type_t;

int mgdt_init(void);
void mgdt_finalize(void);

/* The layout of a predefined datatype, as MPI reports it. */
typedef struct mgdt_layout {
    MPI_Datatype dt;
    MPI_Count size, lb, extent, true_lb, true_extent;
} mgdt_layout_t;

/* dt's layout when dt is a predefined datatype, from a table that mgdt_init
   fills (layout.c), without a call to MPI; NULL for any other type, and
   before mgdt_init or after mgdt_finalize.  For the checks the interposed
   calls make on every host buffer. */
const mgdt_layout_t *mgdt_predefined(MPI_Datatype dt);

/* Decode, normalize and serialize dt, cached on dt.  dt must be committed or
   predefined.  Returns an MPI error code (MPI_ERR_TYPE for an uncommitted or
   unsupported type). */
int mgdt_type_get(MPI_Datatype dt, const mgdt_type_t **type);

/* Same, uncached: the caller owns *type. */
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
