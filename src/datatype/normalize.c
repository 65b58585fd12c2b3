/*
 * Normalization: rewrite the decoded tree bottom up into the smallest tree
 * with the same byte map.  Every rewrite keeps the rewritten node's size,
 * extent and packed-byte -> user-offset map, so a parent never notices.
 * Rules are applied one at a time until none fires (see doc/design.md).
 */
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "mgdt_tree.h"

/* Replace *tp by its only child, which inherits the extent seen by the parent. */
static void take_child(mgdt_tree_t **tp)
{
    mgdt_tree_t *t = *tp, *c = t->child;
    c->extent = t->extent;
    t->child = NULL;
    mgdt_tree_free(t);
    *tp = c;
}

static int to_leaf(mgdt_tree_t **tp, int64_t basic)
{
    mgdt_tree_t *t = *tp;
    mgdt_tree_t *l = mgdt_tree_leaf(t->size, t->extent, t->elements, basic, t->ext32_ok);
    if (!l)
        return mgerr_set(MPI_ERR_NO_MEM, "mgdt: out of memory (normalize)");
    mgdt_tree_free(t);
    *tp = l;
    return MPI_SUCCESS;
}

/* One block of blocklen children at byte displacement d: the only way to
   express a displacement on a single child (a CONTIG node has no offset). */
static int to_single_block(mgdt_tree_t *t, int64_t d, int64_t blocklen, mgdt_tree_t *c)
{
    free(t->displs);
    free(t->blocklens);
    free(t->subsizes);
    free(t->strides);
    free(t->kids);
    t->blocklens = t->subsizes = t->strides = NULL;
    t->kids = NULL;
    t->displs = malloc(sizeof(int64_t));
    if (!t->displs)
        return mgerr_set(MPI_ERR_NO_MEM, "mgdt: out of memory (normalize)");
    t->displs[0] = d;
    t->kind = MGDT_K_BLKIDX;
    t->count = 1;
    t->blocklen = blocklen;
    t->ndims = 0;
    t->child = c;
    return MPI_SUCCESS;
}

/* A leaf child whose instances abut absorbs blocklen of them. */
static int widen_leaf(mgdt_tree_t *t)
{
    mgdt_tree_t *c = t->child;
    if (t->blocklen <= 1 || c->kind != MGDT_K_LEAF || c->extent != c->size)
        return 0;
    c->size *= t->blocklen;
    c->elements *= t->blocklen;
    c->extent = c->size;
    mgdt_tree_finish(c);
    t->blocklen = 1;
    return 1;
}

/* Drop blocks that pack nothing: the kernels divide by block sizes. */
static void drop_empty_blocks(mgdt_tree_t *t)
{
    int64_t k = 0;
    for (int64_t h = 0; h < t->count; h++) {
        if (mgdt_tree_block_size(t, h) == 0) {
            if (t->kids)
                mgdt_tree_free(t->kids[h]);
            continue;
        }
        t->displs[k] = t->displs[h];
        t->blocklens[k] = t->blocklens[h];
        if (t->kids)
            t->kids[k] = t->kids[h];
        k++;
    }
    t->count = k;
}

/* STRUCT: abutting leaves are one leaf if they have one basic size, or if
   neither can be swapped for external32 (the byte view; the swap needs the
   size, nothing else does). */
static int merge_struct_leaves(mgdt_tree_t *t)
{
    int64_t k = 0, n = t->count;
    for (int64_t h = 1; h < n; h++) {
        mgdt_tree_t *a = t->kids[k], *b = t->kids[h];
        if (a->kind == MGDT_K_LEAF && b->kind == MGDT_K_LEAF && a->extent == a->size &&
            b->extent == b->size && (a->basic == b->basic || !(a->ext32_ok || b->ext32_ok)) &&
            t->displs[k] + t->blocklens[k] * a->size == t->displs[h]) {
            if (a->basic != b->basic)
                a->basic = 0;
            a->elements = t->blocklens[k] * a->elements + t->blocklens[h] * b->elements;
            a->size = t->blocklens[k] * a->size + t->blocklens[h] * b->size;
            a->extent = a->size;
            a->ext32_ok = a->ext32_ok && b->ext32_ok;
            t->blocklens[k] = 1;
            mgdt_tree_finish(a);
            mgdt_tree_free(b);
        } else {
            k++;
            t->kids[k] = b;
            t->displs[k] = t->displs[h];
            t->blocklens[k] = t->blocklens[h];
        }
    }
    t->count = n > 0 ? k + 1 : 0;
    return t->count != n;
}

/* INDEXED: merge blocks that continue each other, then equal lengths -> BLKIDX. */
static int simplify_indexed(mgdt_tree_t *t)
{
    int64_t ce = t->child->extent, k = 0, n = t->count;
    for (int64_t h = 1; h < n; h++) {
        if (t->displs[k] + t->blocklens[k] * ce == t->displs[h]) {
            t->blocklens[k] += t->blocklens[h];
        } else {
            k++;
            t->displs[k] = t->displs[h];
            t->blocklens[k] = t->blocklens[h];
        }
    }
    t->count = n > 0 ? k + 1 : 0;
    for (int64_t h = 1; h < t->count; h++)
        if (t->blocklens[h] != t->blocklens[0])
            return t->count != n;
    t->kind = MGDT_K_BLKIDX;
    t->blocklen = t->blocklens[0];
    free(t->blocklens);
    t->blocklens = NULL;
    return 1;
}

static int simplify_blkidx(mgdt_tree_t *t)
{
    int64_t d;
    if (widen_leaf(t))
        return 1;
    if (t->count == 1 && t->displs[0] == 0) {
        t->kind = MGDT_K_CONTIG;
        t->count = t->blocklen;
        t->blocklen = 0;
        free(t->displs);
        t->displs = NULL;
        return 1;
    }
    if (t->count < 2 || t->displs[0] != 0)
        return 0;
    d = t->displs[1];
    for (int64_t h = 2; h < t->count; h++)
        if (t->displs[h] != h * d)
            return 0;
    t->kind = MGDT_K_VECTOR;
    t->stride = d;
    free(t->displs);
    t->displs = NULL;
    return 1;
}

static int simplify_vector(mgdt_tree_t *t)
{
    int64_t ce = t->child->extent;
    if (widen_leaf(t))
        return 1;
    if (t->count == 1 || t->stride == t->blocklen * ce) {
        t->kind = MGDT_K_CONTIG;
        t->count *= t->blocklen;
        t->blocklen = 0;
        t->stride = 0;
        return 1;
    }
    return 0;
}

/* CONTIG of a VECTOR whose extent is a whole number of strides is one VECTOR. */
static int simplify_contig(mgdt_tree_t *t)
{
    mgdt_tree_t *v = t->child;
    if (v->kind == MGDT_K_VECTOR && v->stride > 0 && v->extent == v->count * v->stride) {
        t->kind = MGDT_K_VECTOR;
        t->count *= v->count;
        t->blocklen = v->blocklen;
        t->stride = v->stride;
        t->child = v->child;
        v->child = NULL;
        mgdt_tree_free(v);
        return 1;
    }
    return 0;
}

static int simplify_subarray(mgdt_tree_t *t)
{
    mgdt_tree_t *c = t->child;
    int k = 0, changed = 0;
    for (int d = 0; d < t->ndims; d++) {
        if (t->subsizes[d] == 1)
            continue; /* its start is already in t->stride */
        t->subsizes[k] = t->subsizes[d];
        t->strides[k] = t->strides[d];
        k++;
    }
    changed = k != t->ndims;
    t->ndims = k;
    /* Runs along the fastest dimension of a leaf are a wider leaf. */
    while (t->ndims > 0 && c->kind == MGDT_K_LEAF && t->strides[t->ndims - 1] == c->size) {
        c->size *= t->subsizes[t->ndims - 1];
        c->elements *= t->subsizes[t->ndims - 1];
        c->extent = c->size;
        mgdt_tree_finish(c);
        t->ndims--;
        changed = 1;
    }
    if (t->ndims == 0)
        return to_single_block(t, t->stride, 1, c) == MPI_SUCCESS;
    if (t->ndims == 1 && t->strides[0] == c->extent)
        return to_single_block(t, t->stride, t->subsizes[0], c) == MPI_SUCCESS;
    return changed;
}

/* Apply one rule to *tp; returns 1 if something changed. */
static int simplify_once(mgdt_tree_t **tp, int *rc)
{
    mgdt_tree_t *t = *tp;

    if (t->kind == MGDT_K_LEAF)
        return 0;
    if (t->size == 0) {
        *rc = to_leaf(tp, 0);
        return 0;
    }
    /* Contiguous after all: one leaf (a leaf mixing basic sizes is only made
       when external32 cannot use it anyway, since swapping needs the size). */
    if (t->dense && (t->basic != 0 || !t->ext32_ok)) {
        if (t->dense_off == 0) {
            *rc = to_leaf(tp, t->basic);
            return 0;
        }
        if (!(t->kind == MGDT_K_BLKIDX && t->count == 1 && t->blocklen == 1 &&
              t->child->kind == MGDT_K_LEAF)) {
            mgdt_tree_t *l = mgdt_tree_leaf(t->size, t->size, t->elements, t->basic, t->ext32_ok);
            int64_t off = t->dense_off;
            if (!l) {
                *rc = mgerr_set(MPI_ERR_NO_MEM, "mgdt: out of memory (normalize)");
                return 0;
            }
            if (t->kind == MGDT_K_STRUCT)
                for (int64_t h = 0; h < t->count; h++)
                    mgdt_tree_free(t->kids[h]);
            mgdt_tree_free(t->child);
            *rc = to_single_block(t, off, 1, l);
            return *rc == MPI_SUCCESS;
        }
    }
    switch (t->kind) {
    case MGDT_K_CONTIG:
        if (t->count == 1) {
            take_child(tp);
            return 1;
        }
        return simplify_contig(t);
    case MGDT_K_VECTOR:
        return simplify_vector(t);
    case MGDT_K_BLKIDX:
        return simplify_blkidx(t);
    case MGDT_K_INDEXED: {
        int64_t n = t->count;
        drop_empty_blocks(t);
        return simplify_indexed(t) || n != t->count;
    }
    case MGDT_K_STRUCT: {
        int64_t n = t->count;
        drop_empty_blocks(t);
        if (merge_struct_leaves(t))
            return 1;
        if (t->count == 1) {
            mgdt_tree_t *c = t->kids[0];
            *rc = to_single_block(t, t->displs[0], t->blocklens[0], c);
            return *rc == MPI_SUCCESS;
        }
        return n != t->count;
    }
    case MGDT_K_SUBARRAY:
        return simplify_subarray(t);
    }
    return 0;
}

int mgdt_normalize(mgdt_tree_t **tp)
{
    int rc = MPI_SUCCESS;
    mgdt_tree_t *t = *tp;

    if (t->child) {
        rc = mgdt_normalize(&t->child);
        MG_CHECK(rc, fn_fail);
    }
    for (int64_t h = 0; t->kids && h < t->count; h++) {
        rc = mgdt_normalize(&t->kids[h]);
        MG_CHECK(rc, fn_fail);
    }
    mgdt_tree_finish(t);
    while (simplify_once(tp, &rc)) {
        MG_CHECK(rc, fn_fail);
        /* A rewrite may hand a new child up (take_child) or reshape this node. */
        mgdt_tree_finish(*tp);
    }
    MG_CHECK(rc, fn_fail);
    mgdt_tree_finish(*tp);

fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static void forget_ext32(mgdt_tree_t *t)
{
    if (t->child)
        forget_ext32(t->child);
    for (int64_t h = 0; t->kids && h < t->count; h++)
        forget_ext32(t->kids[h]);
    t->ext32_ok = 0;
}

int mgdt_normalize_bytes(mgdt_tree_t **tp)
{
    forget_ext32(*tp);
    return mgdt_normalize(tp);
}
