/*
 * Internal to src/datatype: the in-memory type tree built by the decoder,
 * rewritten by the normalizer and flattened by the serializer.
 *
 * Ownership: every node owns its arrays and its children (a tree, never a
 * DAG: a datatype used twice is decoded twice), freed by mgdt_tree_free().
 */
#ifndef MGDT_TREE_H
#define MGDT_TREE_H

#include <mpi.h>
#include <stdint.h>

#include "mgdt.h"

typedef struct mgdt_tree {
    int kind;                    /* MGDT_K_* */
    int ndims;                   /* SUBARRAY: dimensions, C order */
    int64_t count;               /* blocks (CONTIG: children); SUBARRAY: unused until serialized */
    int64_t blocklen;            /* VECTOR/BLKIDX: children per block */
    int64_t stride;              /* VECTOR: bytes between blocks; SUBARRAY: start offset in bytes */
    int64_t *displs;             /* BLKIDX/INDEXED/STRUCT: byte displacements, count entries */
    int64_t *blocklens;          /* INDEXED/STRUCT: children per block */
    int64_t *subsizes, *strides; /* SUBARRAY: ndims entries, strides in bytes */
    struct mgdt_tree *child;     /* every kind but LEAF and STRUCT */
    struct mgdt_tree **kids;     /* STRUCT: count children */

    /* Inputs for a LEAF, computed by mgdt_tree_finish() otherwise. */
    int64_t size;
    int64_t elements;
    int64_t basic; /* uniform basic element size (swap unit), 0 if mixed */
    int ext32_ok;
    /* Always an input: the spacing a parent uses between instances. */
    int64_t extent;

    /* Computed by mgdt_tree_finish(). */
    int64_t true_lb, true_ub; /* bytes actually touched; 0, 0 when size is 0 */
    int64_t align;
    int depth;
    int dense; /* packed byte p lies at user offset dense_off + p */
    int64_t dense_off;
    /* A size, stride, displacement or bound of this node or of one below it
       does not fit an int64 (MPI's own arithmetic wrapped): the type is
       refused.  Set by the decoder and mgdt_tree_finish(), never cleared. */
    int overflow;
} mgdt_tree_t;

/* a * b and a + b in checked arithmetic: on overflow *ovf is set and 0
   returned (the tree is refused, so the value is never used). */
static inline int64_t mgdt_mul(int64_t a, int64_t b, int *ovf)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        *ovf = 1;
        return 0;
    }
    return r;
}

static inline int64_t mgdt_add(int64_t a, int64_t b, int *ovf)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        *ovf = 1;
        return 0;
    }
    return r;
}

/* ref.c: the largest h in [0, count) with pfx[h] <= p (pfx non-decreasing),
   the block of an indexed or struct node that packed byte p falls in. */
int64_t mgdt_block_search(const int64_t *pfx, int64_t count, int64_t p);

mgdt_tree_t *mgdt_tree_new(int kind);
void mgdt_tree_free(mgdt_tree_t *t);
/* A LEAF of size bytes of basic elements (swap unit basic). */
mgdt_tree_t *mgdt_tree_leaf(int64_t size, int64_t extent, int64_t elements, int64_t basic,
                            int ext32_ok);
/* Recompute the derived fields of t from its parameters and children. */
void mgdt_tree_finish(mgdt_tree_t *t);
/* Size, in bytes, of block h of t's children (STRUCT/INDEXED). */
int64_t mgdt_tree_block_size(const mgdt_tree_t *t, int64_t h);
/* Copy SUBARRAY geometry given in C order (last dim fastest) in element units. */
int mgdt_tree_subarray(int ndims, const int *sizes, const int *subsizes, const int *starts,
                       int order, mgdt_tree_t *child, mgdt_tree_t **out);

/* decode.c: MPI datatype -> tree (DUP/RESIZED folded, displacements in bytes). */
int mgdt_decode(MPI_Datatype dt, int depth, mgdt_tree_t **out);
/* darray.c: the tree of an MPI_COMBINER_DARRAY given its integer contents. */
int mgdt_decode_darray(const int *ints, mgdt_tree_t *oldtree, int64_t extent, mgdt_tree_t **out);
/* normalize.c: simplify bottom up; may replace *t. */
int mgdt_normalize(mgdt_tree_t **t);
/* The same for the byte view (mgdt_type_t.bytes): leaves forget that they
   could be swapped for external32, so abutting runs of different basic types
   merge too. */
int mgdt_normalize_bytes(mgdt_tree_t **t);
/* serialize.c: flatten a normalized tree into type (nodes, lookaside, summary). */
int mgdt_serialize(const mgdt_tree_t *t, mgdt_type_t *type);
/* layout.c: fill (mgdt_init) and empty (mgdt_finalize) the table of the
   predefined types' layouts. */
void mgdt_layout_init(void);
void mgdt_layout_finalize(void);

#endif /* MGDT_TREE_H */
