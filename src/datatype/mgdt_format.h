/*
 * Serialized datatype format, shared verbatim by the C library and the OpenCL
 * kernels (the build prepends this file to every kernel source).
 *
 * A committed MPI datatype becomes two position-independent arrays:
 *   - the fixed-length parameter block: an array of mgdt_node_t in tree
 *     pre-order ("in order" in the paper's words: a parent precedes its first
 *     child, so a non-struct node's only child is the next node);
 *   - the lookaside buffer: an array of 64-bit integers holding the
 *     variable-length parameters, addressed by element index (node.la).
 * Nothing in either array is a pointer, so both can be uploaded to any
 * OpenCL 1.2 device as they are.
 *
 * Traversal works on packed-byte positions rather than element counts: a
 * byte position p inside one instance of a node selects exactly one child
 * instance and a byte position inside it (paper section 3.2.1, with bytes as
 * the unit).  The packed offset of a work-item is therefore its global byte
 * position; only the user-buffer offset is computed by walking the tree.
 *
 * Layout of the lookaside per kind (all int64, offsets relative to node.la):
 *   BLKIDX   displs[count]                       byte displacements
 *   INDEXED  pfx[count + 1], displs[count]        pfx[h] = packed byte offset of
 *                                                block h; pfx[count] = node.size
 *   STRUCT   pfx[count + 1], displs[count],       pfx as above; child[h] is the
 *            child[count]                        node index of block h's type
 *   SUBARRAY subsizes[ndims], strides[ndims]     C order (last dim fastest),
 *                                                strides in bytes; node.stride
 *                                                holds the start offset in bytes
 */
#ifndef MGDT_FORMAT_H
#define MGDT_FORMAT_H

#ifdef __OPENCL_VERSION__
typedef long mgdt_i64;
typedef int mgdt_i32;
#else
#include <stdint.h>
typedef int64_t mgdt_i64;
typedef int32_t mgdt_i32;
#endif

#define MGDT_FORMAT_VERSION 1

/* Node kinds. */
#define MGDT_K_LEAF 0     /* contiguous run of node.size bytes */
#define MGDT_K_CONTIG 1   /* count children, child_extent apart */
#define MGDT_K_VECTOR 2   /* count blocks of blocklen children, blocks stride bytes apart */
#define MGDT_K_BLKIDX 3   /* count blocks of blocklen children at displs[] */
#define MGDT_K_INDEXED 4  /* count blocks of varying length at displs[] */
#define MGDT_K_STRUCT 5   /* count blocks, each of its own child type */
#define MGDT_K_SUBARRAY 6 /* ndims-dimensional box of children */
#define MGDT_K_COUNT 7

/* Maximum nesting depth accepted (MPICH's dataloops also stop at 16; we allow more). */
#define MGDT_MAX_DEPTH 32
/* Maximum subarray/darray dimensions kept in one SUBARRAY node. */
#define MGDT_MAX_DIMS 32

/*
 * One node of the fixed-length parameter block.  16 x 8 bytes = 128 bytes, so
 * a node never straddles a 128-byte line and a depth-16 tree fits in 2 KiB.
 */
typedef struct mgdt_node {
    mgdt_i32 kind;         /* MGDT_K_* */
    mgdt_i32 ndims;        /* SUBARRAY: number of dimensions; else 0 */
    mgdt_i64 count;        /* CONTIG: children; VECTOR/BLKIDX/INDEXED/STRUCT: blocks;
                              SUBARRAY: children in the box (product of subsizes) */
    mgdt_i64 blocklen;     /* VECTOR/BLKIDX: children per block; else 0 */
    mgdt_i64 stride;       /* VECTOR: byte stride between blocks; SUBARRAY: start offset */
    mgdt_i64 size;         /* packed bytes of one instance of this node (> 0) */
    mgdt_i64 extent;       /* extent of one instance (may be <= 0 after resizing) */
    mgdt_i64 true_lb;      /* lowest byte touched, relative to the instance origin */
    mgdt_i64 true_ub;      /* one past the highest byte touched */
    mgdt_i64 child_size;   /* size of the child (0 for LEAF and STRUCT) */
    mgdt_i64 child_extent; /* extent of the child (0 for LEAF and STRUCT) */
    mgdt_i64 la;           /* lookaside index of this node's parameters, or -1 */
    mgdt_i64 elements;     /* basic elements in one instance (MPI_Get_elements) */
    mgdt_i64 align;        /* largest power of two (<= 16) dividing every offset and
                              run length below this node */
    mgdt_i64 basic;        /* LEAF: size in bytes of the basic type it holds, or 0
                              when it mixes basic types of different sizes */
    mgdt_i64 reserved[2];
} mgdt_node_t;

/*
 * The scalar arguments of the pack engine's grid kernels (shape.cl), passed
 * by value as one argument: NVIDIA's launch costs about 0.05 us per scalar
 * argument and 0.3 us per buffer (test/perf/launchprobe.c; the run is in the git history of
 * doc/performance.md), and one small struct costs about as much as four scalars.
 * All fields are 64-bit, so the layout is the same on both sides.
 */
#define MGPK_GRID_NP 7
typedef struct mgpk_grid_args {
    mgdt_i64 typed_off;  /* user offset of the first run, bytes */
    mgdt_i64 packed_off; /* offset of packed byte `first` in the packed buffer */
    mgdt_i64 first;      /* first packed byte of the launch */
    mgdt_i64 nwords;     /* packed words of the launch */
    mgdt_i64 span;       /* words per work-item */
    mgdt_i64 extent;     /* of one instance */
    /* vector: blocklen, count, stride; subarray: blocklen, s0, s1, s2, t0,
       t1, t2; map: size (bytes of one instance) */
    mgdt_i64 p[MGPK_GRID_NP];
} mgpk_grid_args_t;

#endif /* MGDT_FORMAT_H */
