/* The in-memory type tree: allocation and the derived per-node fields. */
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "mgdt_tree.h"

mgdt_tree_t *mgdt_tree_new(int kind)
{
    mgdt_tree_t *t = calloc(1, sizeof(*t));
    if (t)
        t->kind = kind;
    return t;
}

void mgdt_tree_free(mgdt_tree_t *t)
{
    if (!t)
        return;
    if (t->kids) {
        for (int64_t h = 0; h < t->count; h++)
            mgdt_tree_free(t->kids[h]);
        free(t->kids);
    }
    mgdt_tree_free(t->child);
    free(t->displs);
    free(t->blocklens);
    free(t->subsizes);
    free(t->strides);
    free(t);
}

mgdt_tree_t *mgdt_tree_leaf(int64_t size, int64_t extent, int64_t elements, int64_t basic,
                            int ext32_ok)
{
    mgdt_tree_t *t = mgdt_tree_new(MGDT_K_LEAF);
    if (!t)
        return NULL;
    t->size = size;
    t->extent = extent;
    t->elements = elements;
    t->basic = basic;
    t->ext32_ok = ext32_ok;
    mgdt_tree_finish(t);
    return t;
}

int64_t mgdt_tree_block_size(const mgdt_tree_t *t, int64_t h)
{
    int ovf = 0; /* a finished tree without t->overflow has none */
    if (t->kind == MGDT_K_STRUCT)
        return mgdt_mul(t->blocklens[h], t->kids[h]->size, &ovf);
    if (t->kind == MGDT_K_INDEXED)
        return mgdt_mul(t->blocklens[h], t->child->size, &ovf);
    return mgdt_mul(t->blocklen, t->child->size, &ovf);
}

static int64_t align_of(int64_t x)
{
    uint64_t u = (uint64_t)x;
    uint64_t low = u & (~u + 1);
    return (x == 0 || low >= 16) ? 16 : (int64_t)low;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Bounds accumulated over the child instances of a node; ovf is set when
   one does not fit an int64. */
typedef struct span {
    int any;
    int ovf;
    int64_t lo, hi;
} span_t;

/* Add a block of b instances of c, ce bytes apart, starting at displacement d. */
static void span_add(span_t *s, int64_t d, int64_t b, int64_t ce, const mgdt_tree_t *c)
{
    int64_t lo, hi;
    if (b <= 0 || c->size == 0)
        return;
    if (mgdt_span(b, ce, c->true_lb, c->true_ub, &lo, &hi) != 0) {
        s->ovf = 1;
        return;
    }
    lo = mgdt_add(d, lo, &s->ovf);
    hi = mgdt_add(d, hi, &s->ovf);
    s->lo = s->any ? min64(s->lo, lo) : lo;
    s->hi = s->any ? max64(s->hi, hi) : hi;
    s->any = 1;
}

/* Merge basic/ext32/align/depth of one non-empty child into t. */
static void inherit(mgdt_tree_t *t, const mgdt_tree_t *c, int *first)
{
    if (c->size == 0)
        return;
    if (*first) {
        t->basic = c->basic;
        t->ext32_ok = c->ext32_ok;
        *first = 0;
    } else {
        if (t->basic != c->basic)
            t->basic = 0;
        t->ext32_ok = t->ext32_ok && c->ext32_ok;
    }
    t->align = min64(t->align, c->align);
    if (c->depth + 1 > t->depth)
        t->depth = c->depth + 1;
}

static void finish_blocks(mgdt_tree_t *t, span_t *s, int *first)
{
    const mgdt_tree_t *c = t->child;
    int64_t pos = 0;
    t->dense = 1;
    for (int64_t h = 0; h < t->count; h++) {
        const mgdt_tree_t *k = t->kind == MGDT_K_STRUCT ? t->kids[h] : c;
        int64_t b = t->kind == MGDT_K_BLKIDX ? t->blocklen : t->blocklens[h];
        int64_t bsize = mgdt_mul(b, k->size, &s->ovf);
        if (bsize == 0)
            continue;
        t->overflow |= k->overflow;
        t->size = mgdt_add(t->size, bsize, &s->ovf);
        t->elements = mgdt_add(t->elements, mgdt_mul(b, k->elements, &s->ovf), &s->ovf);
        span_add(s, t->displs[h], b, k->extent, k);
        t->align = min64(t->align, align_of(t->displs[h]));
        if (b > 1)
            t->align = min64(t->align, align_of(k->extent));
        inherit(t, k, first);
        /* Dense when every block continues where the previous one ended. */
        int wrap = 0;
        int64_t at = mgdt_add(t->displs[h], k->dense_off, &wrap);
        if (!k->dense || (b > 1 && k->extent != k->size) || wrap)
            t->dense = 0;
        else if (pos == 0)
            t->dense_off = at;
        else if (at != mgdt_add(t->dense_off, pos, &wrap) || wrap)
            t->dense = 0;
        pos = mgdt_add(pos, bsize, &s->ovf);
    }
}

void mgdt_tree_finish(mgdt_tree_t *t)
{
    mgdt_tree_t *c = t->child;
    span_t s = {0, 0, 0, 0};
    int first = 1;

    t->depth = 1;
    t->dense = 0;
    t->dense_off = 0;
    if (t->kind == MGDT_K_LEAF) {
        t->align = align_of(t->size);
        t->dense = 1;
        t->true_lb = 0;
        t->true_ub = t->size;
        return;
    }
    t->size = 0;
    t->elements = 0;
    t->align = 16;
    t->basic = 0;
    t->ext32_ok = 1;
    switch (t->kind) {
    case MGDT_K_CONTIG:
        t->size = mgdt_mul(t->count, c->size, &s.ovf);
        t->elements = mgdt_mul(t->count, c->elements, &s.ovf);
        span_add(&s, 0, t->count, c->extent, c);
        if (t->count > 1)
            t->align = align_of(c->extent);
        t->dense = c->dense && (t->count <= 1 || c->extent == c->size);
        t->dense_off = c->dense_off;
        break;
    case MGDT_K_VECTOR:
        t->size = mgdt_mul(mgdt_mul(t->count, t->blocklen, &s.ovf), c->size, &s.ovf);
        t->elements = mgdt_mul(mgdt_mul(t->count, t->blocklen, &s.ovf), c->elements, &s.ovf);
        span_add(&s, 0, t->blocklen, c->extent, c);
        if (t->count > 0)
            span_add(&s, mgdt_mul(t->count - 1, t->stride, &s.ovf), t->blocklen, c->extent, c);
        if (t->blocklen > 1)
            t->align = min64(t->align, align_of(c->extent));
        if (t->count > 1)
            t->align = min64(t->align, align_of(t->stride));
        t->dense = c->dense && (t->blocklen <= 1 || c->extent == c->size) &&
                   (t->count <= 1 || t->stride == t->blocklen * c->size);
        t->dense_off = c->dense_off;
        break;
    case MGDT_K_BLKIDX:
    case MGDT_K_INDEXED:
    case MGDT_K_STRUCT:
        finish_blocks(t, &s, &first);
        break;
    case MGDT_K_SUBARRAY: {
        int64_t n = 1, last = t->stride, expect = c->size;
        t->dense = c->dense;
        for (int d = t->ndims - 1; d >= 0; d--) {
            n = mgdt_mul(n, t->subsizes[d], &s.ovf);
            if (t->subsizes[d] > 0)
                last = mgdt_add(last, mgdt_mul(t->subsizes[d] - 1, t->strides[d], &s.ovf), &s.ovf);
            if (t->subsizes[d] > 1) {
                t->align = min64(t->align, align_of(t->strides[d]));
                if (t->strides[d] != expect)
                    t->dense = 0;
            }
            expect = mgdt_mul(expect, t->subsizes[d], &s.ovf);
        }
        t->count = n;
        t->size = mgdt_mul(n, c->size, &s.ovf);
        t->elements = mgdt_mul(n, c->elements, &s.ovf);
        t->align = min64(t->align, align_of(t->stride));
        if (n > 0) {
            span_add(&s, t->stride, 1, 0, c);
            span_add(&s, last, 1, 0, c);
        }
        t->dense_off = t->stride + c->dense_off;
        break;
    }
    default:
        break;
    }
    if (c && t->size > 0)
        inherit(t, c, &first);
    if (c)
        t->overflow |= c->overflow;
    /* The true extent must fit too: MPI_Type_get_true_extent_x returns it. */
    int64_t text;
    if (s.any && __builtin_sub_overflow(s.hi, s.lo, &text))
        s.ovf = 1;
    t->overflow |= s.ovf;
    if (t->size == 0) {
        t->dense = 1;
        t->dense_off = 0;
        t->basic = 0;
    }
    t->true_lb = s.any && t->size > 0 ? s.lo : 0;
    t->true_ub = s.any && t->size > 0 ? s.hi : 0;
}

int mgdt_tree_subarray(int ndims, const int *sizes, const int *subsizes, const int *starts,
                       int order, mgdt_tree_t *child, mgdt_tree_t **out)
{
    int rc = MPI_SUCCESS;
    mgdt_tree_t *t = mgdt_tree_new(MGDT_K_SUBARRAY);
    int64_t step = child->extent;

    if (!t)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (subarray)");
    t->child = child;
    t->ndims = ndims;
    t->subsizes = malloc(sizeof(int64_t) * (ndims ? ndims : 1));
    t->strides = malloc(sizeof(int64_t) * (ndims ? ndims : 1));
    if (!t->subsizes || !t->strides)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (subarray)");
    /* Fortran order lists the fastest dimension first: reverse into C order. */
    for (int i = ndims - 1; i >= 0; i--) {
        int src = order == MPI_ORDER_FORTRAN ? ndims - 1 - i : i;
        t->subsizes[i] = subsizes[src];
        t->strides[i] = step;
        t->stride = mgdt_add(t->stride, mgdt_mul(starts[src], step, &t->overflow), &t->overflow);
        step = mgdt_mul(step, sizes[src], &t->overflow);
    }
    t->extent = step;
    mgdt_tree_finish(t);
    *out = t;

fn_exit:
    return rc;
fn_fail:
    if (t)
        t->child = NULL; /* still owned by the caller on failure */
    mgdt_tree_free(t);
    goto fn_exit;
}
