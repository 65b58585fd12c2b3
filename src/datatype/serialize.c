/*
 * Serialization of a normalized tree into the fixed-length parameter block
 * and the lookaside buffer of mgdt_format.h, the shape summary, and the
 * debugging dump.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "mgdt_tree.h"

static void count_tree(const mgdt_tree_t *t, size_t *nn, size_t *nla)
{
    (*nn)++;
    switch (t->kind) {
    case MGDT_K_BLKIDX:
        *nla += t->count;
        break;
    case MGDT_K_INDEXED:
        *nla += 2 * t->count + 1;
        break;
    case MGDT_K_STRUCT:
        *nla += 3 * t->count + 1;
        break;
    case MGDT_K_SUBARRAY:
        *nla += 2 * t->ndims;
        break;
    }
    if (t->child)
        count_tree(t->child, nn, nla);
    for (int64_t h = 0; t->kind == MGDT_K_STRUCT && h < t->count; h++)
        count_tree(t->kids[h], nn, nla);
}

/* Emit t and its subtree in pre-order; returns t's node index. */
static int64_t emit(const mgdt_tree_t *t, mgdt_type_t *ty, size_t *ni, size_t *nla)
{
    int64_t idx = (int64_t)(*ni)++, *la = NULL, pfx = 0;
    mgdt_node_t *n = &ty->nodes[idx];

    memset(n, 0, sizeof(*n));
    n->kind = t->kind;
    n->ndims = t->kind == MGDT_K_SUBARRAY ? t->ndims : 0;
    n->count = t->kind == MGDT_K_LEAF ? 0 : t->count;
    n->blocklen = (t->kind == MGDT_K_VECTOR || t->kind == MGDT_K_BLKIDX) ? t->blocklen : 0;
    n->stride = (t->kind == MGDT_K_VECTOR || t->kind == MGDT_K_SUBARRAY) ? t->stride : 0;
    n->size = t->size;
    n->extent = t->extent;
    n->true_lb = t->true_lb;
    n->true_ub = t->true_ub;
    n->child_size = t->child ? t->child->size : 0;
    n->child_extent = t->child ? t->child->extent : 0;
    n->la = -1;
    n->elements = t->elements;
    n->align = t->align;
    n->basic = t->basic;
    if (t->kind >= MGDT_K_BLKIDX && t->kind <= MGDT_K_SUBARRAY) {
        n->la = (int64_t)*nla;
        la = &ty->lookaside[*nla];
    }
    switch (t->kind) {
    case MGDT_K_BLKIDX:
        memcpy(la, t->displs, sizeof(int64_t) * t->count);
        *nla += t->count;
        break;
    case MGDT_K_INDEXED:
    case MGDT_K_STRUCT:
        for (int64_t h = 0; h < t->count; h++) {
            la[h] = pfx;
            pfx += mgdt_tree_block_size(t, h);
            la[t->count + 1 + h] = t->displs[h];
        }
        la[t->count] = pfx;
        *nla += (t->kind == MGDT_K_STRUCT ? 3 : 2) * t->count + 1;
        break;
    case MGDT_K_SUBARRAY:
        memcpy(la, t->subsizes, sizeof(int64_t) * t->ndims);
        memcpy(la + t->ndims, t->strides, sizeof(int64_t) * t->ndims);
        *nla += 2 * t->ndims;
        break;
    }
    if (t->child)
        emit(t->child, ty, ni, nla);
    for (int64_t h = 0; t->kind == MGDT_K_STRUCT && h < t->count; h++) {
        /* la may not move: the lookaside was sized before emitting. */
        int64_t c = emit(t->kids[h], ty, ni, nla);
        ty->lookaside[ty->nodes[idx].la + 2 * t->count + 1 + h] = c;
    }
    return idx;
}

static void set_runs(mgdt_shape_t *s, int64_t off, int64_t count, int64_t blocklen, int64_t stride)
{
    s->kind = MGDT_SHAPE_VECTOR;
    s->offset = off;
    s->count = count;
    s->blocklen = blocklen;
    s->stride = stride;
}

/* The specialized-kernel summary; must reproduce the generic traversal. */
static void shape_of(const mgdt_tree_t *t, mgdt_shape_t *s)
{
    const mgdt_tree_t *c = t->child;
    memset(s, 0, sizeof(*s));
    if (t->size == 0 || (t->dense && t->extent == t->size)) {
        s->kind = MGDT_SHAPE_CONTIG;
        s->offset = t->size ? t->dense_off : 0;
        s->blocklen = t->size;
        s->count = 1;
        s->stride = t->size;
        return;
    }
    if (t->dense) {
        /* One run per instance (a leaf with a resized extent, a padded struct). */
        set_runs(s, t->dense_off, 1, t->size, t->size);
        return;
    }
    if (!c || c->kind != MGDT_K_LEAF)
        return;
    switch (t->kind) {
    case MGDT_K_CONTIG:
        set_runs(s, 0, t->count, c->size, c->extent);
        break;
    case MGDT_K_VECTOR:
        if (t->blocklen == 1 || c->extent == c->size)
            set_runs(s, 0, t->count, t->blocklen * c->size, t->stride);
        break;
    case MGDT_K_BLKIDX:
        if (t->count == 1 && (t->blocklen == 1 || c->extent == c->size))
            set_runs(s, t->displs[0], 1, t->blocklen * c->size, t->blocklen * c->size);
        else if (t->count == 1)
            set_runs(s, t->displs[0], t->blocklen, c->size, c->extent);
        break;
    case MGDT_K_SUBARRAY:
        if (t->ndims == 1) {
            set_runs(s, t->stride, t->subsizes[0], c->size, t->strides[0]);
        } else if (t->ndims <= 3) {
            s->kind = MGDT_SHAPE_SUBARRAY;
            s->ndims = t->ndims;
            s->offset = t->stride;
            s->blocklen = c->size;
            for (int d = 0; d < t->ndims; d++) {
                s->sub[d] = t->subsizes[d];
                s->strides[d] = t->strides[d];
            }
        }
        break;
    }
}

int mgdt_serialize(const mgdt_tree_t *t, mgdt_type_t *ty)
{
    int rc = MPI_SUCCESS;
    size_t nn = 0, nla = 0, ni = 0, li = 0;
    int64_t ea;

    count_tree(t, &nn, &nla);
    ty->nodes = calloc(nn, sizeof(mgdt_node_t));
    ty->lookaside = calloc(nla ? nla : 1, sizeof(int64_t));
    if (!ty->nodes || !ty->lookaside)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (serialize)");
    emit(t, ty, &ni, &li);
    ty->nnodes = nn;
    ty->nlookaside = nla;
    ty->elements = t->elements;
    ty->depth = t->depth;
    ty->external32_ok = t->ext32_ok;
    /* count > 1 places instances extent apart: the extent bounds the width too. */
    /* The lowest set bit, in unsigned arithmetic (an extent of INT64_MIN). */
    uint64_t ue = (uint64_t)ty->extent, low = ue & (0 - ue);
    ea = low && low <= 16 ? (int64_t)low : 16;
    ty->align = (int)(t->align < ea ? t->align : (ea > 16 ? 16 : ea));
    shape_of(t, &ty->shape);

fn_exit:
    return rc;
fn_fail:
    free(ty->nodes);
    free(ty->lookaside);
    ty->nodes = NULL;
    ty->lookaside = NULL;
    goto fn_exit;
}

static const char *kind_name(int k)
{
    static const char *names[] = {"LEAF",    "CONTIG", "VECTOR",  "BLKIDX",
                                  "INDEXED", "STRUCT", "SUBARRAY"};
    return k >= 0 && k < MGDT_K_COUNT ? names[k] : "?";
}

void mgdt_type_dump(const mgdt_type_t *ty, FILE *out)
{
    static const char *shapes[] = {"GENERIC", "CONTIG", "VECTOR", "SUBARRAY"};
    const mgdt_shape_t *s = &ty->shape;

    fprintf(out,
            "type size=%" PRId64 " extent=%" PRId64 " lb=%" PRId64 " true=[%" PRId64 ",%" PRId64
            ") elements=%" PRId64 " align=%d depth=%d ext32=%d\n",
            ty->size, ty->extent, ty->lb, ty->true_lb, ty->true_ub, ty->elements, ty->align,
            ty->depth, ty->external32_ok);
    fprintf(out,
            "shape %s ndims=%d offset=%" PRId64 " blocklen=%" PRId64 " count=%" PRId64
            " stride=%" PRId64 " sub={%" PRId64 ",%" PRId64 ",%" PRId64 "} strides={%" PRId64
            ",%" PRId64 ",%" PRId64 "}\n",
            shapes[s->kind], s->ndims, s->offset, s->blocklen, s->count, s->stride, s->sub[0],
            s->sub[1], s->sub[2], s->strides[0], s->strides[1], s->strides[2]);
    for (size_t i = 0; i < ty->nnodes; i++) {
        const mgdt_node_t *n = &ty->nodes[i];
        fprintf(out,
                "node %zu %s ndims=%d count=%" PRId64 " blocklen=%" PRId64 " stride=%" PRId64
                " size=%" PRId64 " extent=%" PRId64 " true=[%" PRId64 ",%" PRId64 ") child=%" PRId64
                "/%" PRId64 " la=%" PRId64 " elements=%" PRId64 " align=%" PRId64 " basic=%" PRId64
                "\n",
                i, kind_name(n->kind), n->ndims, n->count, n->blocklen, n->stride, n->size,
                n->extent, n->true_lb, n->true_ub, n->child_size, n->child_extent, n->la,
                n->elements, n->align, n->basic);
    }
    fprintf(out, "lookaside %zu:", ty->nlookaside);
    for (size_t i = 0; i < ty->nlookaside; i++)
        fprintf(out, " %" PRId64, ty->lookaside[i]);
    fprintf(out, "\n");
}
