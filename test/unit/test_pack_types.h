/*
 * Hand-built serialized types for test_pack (no datatype engine, no MPI), and
 * an independent reference: a recursive enumeration of each type's bytes in
 * pack order, written straight from the semantics of mgdt_format.h.
 */
#ifndef TEST_PACK_TYPES_H
#define TEST_PACK_TYPES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mgdt.h"

#define TB_NATURAL INT64_MIN

typedef struct tb {
    mgdt_node_t nodes[64];
    int nn;
    int64_t la[512];
    int nla;
} tb_t;

static int64_t tb_p2(int64_t x)
{
    int64_t w = 16;
    while (w > 1 && (x % w))
        w >>= 1;
    return w;
}

static int64_t tb_min(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t tb_max(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int tb_node(tb_t *b, int kind, int64_t count, int64_t blocklen, int64_t stride)
{
    mgdt_node_t *nd = &b->nodes[b->nn];
    memset(nd, 0, sizeof(*nd));
    nd->kind = kind;
    nd->count = count;
    nd->blocklen = blocklen;
    nd->stride = stride;
    nd->la = -1;
    nd->extent = TB_NATURAL;
    return b->nn++;
}

static int tb_leaf(tb_t *b, int64_t size, int64_t basic)
{
    int i = tb_node(b, MGDT_K_LEAF, 0, 0, 0);
    b->nodes[i].size = size;
    b->nodes[i].basic = basic;
    return i;
}

/* Lookaside for BLKIDX (displs), INDEXED/STRUCT (pfx slots first hold the
   blocklens; tb_finish turns them into packed prefix sums), SUBARRAY. */
static void tb_la(tb_t *b, int node, int n, const int64_t *v)
{
    if (b->nodes[node].la < 0)
        b->nodes[node].la = b->nla;
    for (int i = 0; i < n; i++)
        b->la[b->nla++] = v[i];
}

/* Fills the derived fields of node i and returns the node after its subtree. */
static int tb_finish(tb_t *b, int i)
{
    mgdt_node_t *nd = &b->nodes[i];
    int64_t *la = b->la + (nd->la >= 0 ? nd->la : 0), lo = INT64_MAX, hi = INT64_MIN;
    int64_t align = 16, next = i + 1;
    mgdt_node_t *ch = &b->nodes[i + 1];
    if (nd->kind == MGDT_K_LEAF) {
        nd->true_lb = 0;
        nd->true_ub = nd->size;
        nd->elements = nd->basic ? nd->size / nd->basic : 1;
        nd->align = tb_p2(nd->size);
        if (nd->extent == TB_NATURAL)
            nd->extent = nd->size;
        return i + 1;
    }
    if (nd->kind != MGDT_K_STRUCT) {
        next = tb_finish(b, i + 1);
        nd->child_size = ch->size;
        nd->child_extent = ch->extent;
        align = tb_min(ch->align, tb_p2(ch->extent));
    }
    /* Each (displacement, number of children) block widens [lo, hi). */
#define TB_BLOCK(d_, n_, c_)                                                                       \
    do {                                                                                           \
        if ((n_) > 0) {                                                                            \
            lo = tb_min(lo, (d_) + tb_min(0, ((n_)-1) * (c_)->extent) + (c_)->true_lb);            \
            hi = tb_max(hi, (d_) + tb_max(0, ((n_)-1) * (c_)->extent) + (c_)->true_ub);            \
        }                                                                                          \
        align = tb_min(align, tb_p2(d_));                                                          \
    } while (0)
    switch (nd->kind) {
    case MGDT_K_CONTIG:
        nd->size = nd->count * ch->size;
        TB_BLOCK(0, nd->count, ch);
        break;
    case MGDT_K_VECTOR:
    case MGDT_K_BLKIDX:
        nd->size = nd->count * nd->blocklen * ch->size;
        for (int64_t j = 0; j < nd->count; j++)
            TB_BLOCK(nd->kind == MGDT_K_VECTOR ? j * nd->stride : la[j], nd->blocklen, ch);
        break;
    case MGDT_K_INDEXED: {
        int64_t p = 0;
        for (int64_t j = 0; j <= nd->count; j++) {
            int64_t bl = j < nd->count ? la[j] : 0;
            la[j] = p;
            p += bl * ch->size;
            if (j < nd->count)
                TB_BLOCK(la[nd->count + 1 + j], bl, ch);
        }
        nd->size = p;
        break;
    }
    case MGDT_K_STRUCT: {
        int64_t p = 0;
        for (int64_t j = 0; j < nd->count; j++)
            next = tb_finish(b, (int)la[2 * nd->count + 1 + j]);
        for (int64_t j = 0; j <= nd->count; j++) {
            int64_t bl = j < nd->count ? la[j] : 0;
            la[j] = p;
            if (j == nd->count)
                break;
            mgdt_node_t *c = &b->nodes[la[2 * nd->count + 1 + j]];
            p += bl * c->size;
            TB_BLOCK(la[nd->count + 1 + j], bl, c);
            align = tb_min(align, tb_min(c->align, tb_p2(c->extent)));
        }
        nd->size = p;
        break;
    }
    case MGDT_K_SUBARRAY: {
        int64_t l = nd->stride + ch->true_lb, h = nd->stride + ch->true_ub;
        nd->count = 1;
        for (int d = 0; d < nd->ndims; d++) {
            int64_t s = la[d], t = la[nd->ndims + d];
            nd->count *= s;
            l += tb_min(0, (s - 1) * t);
            h += tb_max(0, (s - 1) * t);
            align = tb_min(align, tb_p2(t));
        }
        align = tb_min(align, tb_p2(nd->stride));
        lo = l;
        hi = h;
        nd->size = nd->count * ch->size;
        break;
    }
    }
#undef TB_BLOCK
    nd->true_lb = lo;
    nd->true_ub = hi;
    nd->align = align;
    if (nd->extent == TB_NATURAL)
        nd->extent = hi - lo;
    return (int)next;
}

/* The finished type; shape is GENERIC unless the caller sets it. */
static mgdt_type_t *tb_type(tb_t *b)
{
    mgdt_type_t *t = calloc(1, sizeof(*t));
    t->twin = MPI_DATATYPE_NULL;
    tb_finish(b, 0);
    t->nnodes = b->nn;
    t->nodes = malloc(sizeof(mgdt_node_t) * b->nn);
    memcpy(t->nodes, b->nodes, sizeof(mgdt_node_t) * b->nn);
    t->nlookaside = b->nla;
    t->lookaside = malloc(sizeof(int64_t) * (b->nla ? b->nla : 1));
    memcpy(t->lookaside, b->la, sizeof(int64_t) * b->nla);
    t->size = b->nodes[0].size;
    t->extent = b->nodes[0].extent;
    t->true_lb = b->nodes[0].true_lb;
    t->true_ub = b->nodes[0].true_ub;
    t->align = (int)b->nodes[0].align;
    t->external32_ok = 1;
    for (int i = 0; i < b->nn; i++)
        if (b->nodes[i].kind == MGDT_K_LEAF && !b->nodes[i].basic)
            t->external32_ok = 0;
    return t;
}

/* Reference: map[P] = user offset of packed byte P, swap[P] = the byte that
   external32 puts there. */
static void ref_emit(const mgdt_type_t *t, int ni, int64_t base, int64_t *map, int64_t *swap,
                     int64_t *pos)
{
    const mgdt_node_t *nd = &t->nodes[ni];
    const int64_t *la = t->lookaside + (nd->la >= 0 ? nd->la : 0);
    switch (nd->kind) {
    case MGDT_K_LEAF:
        for (int64_t b = 0; b < nd->size; b++) {
            int64_t e = nd->basic ? b % nd->basic : 0, bs = nd->basic ? nd->basic : 1;
            map[*pos] = base + b;
            swap[(*pos)++] = base + b - e + (bs - 1 - e);
        }
        break;
    case MGDT_K_CONTIG:
        for (int64_t i = 0; i < nd->count; i++)
            ref_emit(t, ni + 1, base + i * nd->child_extent, map, swap, pos);
        break;
    case MGDT_K_VECTOR:
    case MGDT_K_BLKIDX:
        for (int64_t j = 0; j < nd->count; j++)
            for (int64_t i = 0; i < nd->blocklen; i++)
                ref_emit(t, ni + 1,
                         base + (nd->kind == MGDT_K_VECTOR ? j * nd->stride : la[j]) +
                             i * nd->child_extent,
                         map, swap, pos);
        break;
    case MGDT_K_INDEXED:
    case MGDT_K_STRUCT:
        for (int64_t j = 0; j < nd->count; j++) {
            int c = nd->kind == MGDT_K_STRUCT ? (int)la[2 * nd->count + 1 + j] : ni + 1;
            int64_t bl = (la[j + 1] - la[j]) / t->nodes[c].size;
            for (int64_t i = 0; i < bl; i++)
                ref_emit(t, c, base + la[nd->count + 1 + j] + i * t->nodes[c].extent, map, swap,
                         pos);
        }
        break;
    case MGDT_K_SUBARRAY:
        for (int64_t c = 0; c < nd->count; c++) {
            int64_t off = nd->stride, r = c;
            for (int d = nd->ndims - 1; d >= 0; d--) {
                off += (r % la[d]) * la[nd->ndims + d];
                r /= la[d];
            }
            ref_emit(t, ni + 1, base + off, map, swap, pos);
        }
        break;
    }
}

static void ref_map(const mgdt_type_t *t, int64_t count, int64_t *map, int64_t *swap)
{
    int64_t pos = 0;
    for (int64_t k = 0; k < count; k++)
        ref_emit(t, 0, k * t->extent, map, swap, &pos);
}

/* ---- the test types ---------------------------------------------------------- */

static mgdt_type_t *mk_leaf(void)
{
    tb_t b = {.nn = 0};
    tb_leaf(&b, 24, 4);
    mgdt_type_t *t = tb_type(&b);
    t->shape = (mgdt_shape_t){.kind = MGDT_SHAPE_CONTIG};
    return t;
}

static mgdt_type_t *mk_vector(void)
{
    tb_t b = {.nn = 0};
    tb_node(&b, MGDT_K_VECTOR, 5, 3, 40);
    tb_leaf(&b, 4, 4);
    mgdt_type_t *t = tb_type(&b);
    t->shape = (mgdt_shape_t){.kind = MGDT_SHAPE_VECTOR, .blocklen = 12, .count = 5, .stride = 40};
    return t;
}

/* 16-byte runs, 16-aligned everywhere: reaches W = 16. */
static mgdt_type_t *mk_vec16(void)
{
    tb_t b = {.nn = 0};
    tb_node(&b, MGDT_K_VECTOR, 4, 1, 48);
    tb_leaf(&b, 16, 8);
    mgdt_type_t *t = tb_type(&b);
    t->shape = (mgdt_shape_t){.kind = MGDT_SHAPE_VECTOR, .blocklen = 16, .count = 4, .stride = 48};
    return t;
}

static mgdt_type_t *mk_blkidx(void)
{
    tb_t b = {.nn = 0};
    int n = tb_node(&b, MGDT_K_BLKIDX, 4, 2, 0);
    tb_la(&b, n, 4, (int64_t[]){0, 96, 32, 64});
    tb_leaf(&b, 8, 8);
    return tb_type(&b);
}

static mgdt_type_t *mk_indexed(void)
{
    tb_t b = {.nn = 0};
    int n = tb_node(&b, MGDT_K_INDEXED, 3, 0, 0);
    tb_la(&b, n, 4, (int64_t[]){3, 0, 5, 0});
    tb_la(&b, n, 3, (int64_t[]){10, 50, 0});
    tb_leaf(&b, 2, 2);
    return tb_type(&b);
}

/* Two blocks of different children (one a vector), with gaps. */
static mgdt_type_t *mk_struct(void)
{
    tb_t b = {.nn = 0};
    int s = tb_node(&b, MGDT_K_STRUCT, 2, 0, 0);
    tb_la(&b, s, 3, (int64_t[]){2, 3, 0});
    tb_la(&b, s, 2, (int64_t[]){4, 200});
    int v = tb_node(&b, MGDT_K_VECTOR, 3, 1, 12);
    tb_leaf(&b, 4, 4);
    int l = tb_leaf(&b, 8, 8);
    tb_la(&b, s, 2, (int64_t[]){v, l});
    return tb_type(&b);
}

/* float a[4][5][6], box 2x3x4 at (1,1,2); resized to the whole array. */
static mgdt_type_t *mk_sub3(void)
{
    tb_t b = {.nn = 0};
    int n = tb_node(&b, MGDT_K_SUBARRAY, 0, 0, (1 * 30 + 1 * 6 + 2) * 4);
    b.nodes[n].ndims = 3;
    b.nodes[n].extent = 480;
    tb_la(&b, n, 6, (int64_t[]){2, 3, 4, 120, 24, 4});
    tb_leaf(&b, 4, 4);
    mgdt_type_t *t = tb_type(&b);
    t->shape = (mgdt_shape_t){.kind = MGDT_SHAPE_SUBARRAY,
                              .ndims = 3,
                              .offset = 152,
                              .blocklen = 16,
                              .sub = {0, 2, 3},
                              .strides = {0, 120, 24}};
    return t;
}

/* double a[6][8], box 3x4 at (2,1). */
static mgdt_type_t *mk_sub2(void)
{
    tb_t b = {.nn = 0};
    int n = tb_node(&b, MGDT_K_SUBARRAY, 0, 0, (2 * 8 + 1) * 8);
    b.nodes[n].ndims = 2;
    b.nodes[n].extent = 384;
    tb_la(&b, n, 4, (int64_t[]){3, 4, 64, 8});
    tb_leaf(&b, 8, 8);
    mgdt_type_t *t = tb_type(&b);
    t->shape = (mgdt_shape_t){.kind = MGDT_SHAPE_SUBARRAY,
                              .ndims = 2,
                              .offset = 136,
                              .blocklen = 32,
                              .sub = {3, 0, 0},
                              .strides = {64, 0, 0}};
    return t;
}

/* Vector of vectors with a negative outer stride and a negative extent. */
static mgdt_type_t *mk_vecvec(void)
{
    tb_t b = {.nn = 0};
    tb_node(&b, MGDT_K_VECTOR, 3, 1, -100);
    b.nodes[0].extent = -300;
    tb_node(&b, MGDT_K_VECTOR, 4, 2, 12);
    tb_leaf(&b, 4, 4);
    return tb_type(&b);
}

static mgdt_type_t *mk_contig(void)
{
    tb_t b = {.nn = 0};
    tb_node(&b, MGDT_K_CONTIG, 3, 0, 0);
    tb_node(&b, MGDT_K_VECTOR, 2, 1, 8);
    tb_leaf(&b, 2, 2);
    return tb_type(&b);
}

typedef mgdt_type_t *(*mk_fn)(void);
enum {
    C_LEAF,
    C_VEC,
    C_VEC16,
    C_BLKIDX,
    C_INDEXED,
    C_STRUCT,
    C_SUB3,
    C_SUB2,
    C_VECVEC,
    C_CONTIG,
    NCASES
};
static const mk_fn makers[NCASES] = {mk_leaf,   mk_vector, mk_vec16, mk_blkidx, mk_indexed,
                                     mk_struct, mk_sub3,   mk_sub2,  mk_vecvec, mk_contig};
static mgdt_type_t *types[NCASES];

#endif /* TEST_PACK_TYPES_H */
