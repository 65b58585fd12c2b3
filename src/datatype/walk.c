/*
 * Host pack and unpack over the serialized form, fast: the walk visits each
 * node once per instance it crosses, not once per run, and moves the runs of
 * a node whose children are leaves in one loop of constant-size copies.  It
 * is what the reference traversal (ref.c) computes, run by run instead of
 * byte by byte, and the tests hold the two against MPI_Pack.
 *
 * A range [p0, p1) of a node's packed bytes maps onto a sequence of its
 * children: a partial first child, whole ones, a partial last one.  Partial
 * children recurse; whole ones that are leaves become runs.
 */
#include <string.h>

#include "mgdt_tree.h"

typedef struct walk {
    const mgdt_node_t *nodes;
    const int64_t *la;
    char *user;   /* instance 0's origin */
    char *packed; /* cursor: the next packed byte */
    int to_packed;
} walk_t;

static void walk_node(walk_t *w, int64_t i, int64_t off, int64_t p0, int64_t p1);

/* Copy m runs of L bytes between the packed cursor p and the user side u +
   AT(t), one loop per direction.  With a constant L, a case label per common
   length, the compiler moves each run with a few loads and stores. */
#define RUNS_LOOP(L, AT)                                                                           \
    do {                                                                                           \
        if (w->to_packed)                                                                          \
            for (int64_t t = 0; t < m; t++)                                                        \
                memcpy(p + t * (L), u + AT(t), (size_t)(L));                                       \
        else                                                                                       \
            for (int64_t t = 0; t < m; t++)                                                        \
                memcpy(u + AT(t), p + t * (L), (size_t)(L));                                       \
    } while (0)
#define AT_STRIDE(t) ((t)*stride)
#define AT_DISPL(t) (d[t])
#define RUNS_CASE(L, AT)                                                                           \
    case L:                                                                                        \
        RUNS_LOOP(L, AT);                                                                          \
        break

/* m runs of len bytes, the first at user offset off, stride bytes apart. */
static void walk_runs(walk_t *w, int64_t off, int64_t stride, int64_t len, int64_t m)
{
    char *u = mgdt_addr(w->user, off), *p = w->packed;
    if (m <= 0)
        return;
    if (stride == len || m == 1) {
        if (w->to_packed)
            memcpy(p, u, (size_t)(len * m));
        else
            memcpy(u, p, (size_t)(len * m));
    } else {
        switch (len) {
            RUNS_CASE(1, AT_STRIDE);
            RUNS_CASE(2, AT_STRIDE);
            RUNS_CASE(4, AT_STRIDE);
            RUNS_CASE(8, AT_STRIDE);
            RUNS_CASE(12, AT_STRIDE);
            RUNS_CASE(16, AT_STRIDE);
            RUNS_CASE(24, AT_STRIDE);
            RUNS_CASE(32, AT_STRIDE);
            RUNS_CASE(64, AT_STRIDE);
            RUNS_CASE(128, AT_STRIDE);
        default:
            RUNS_LOOP(len, AT_STRIDE);
        }
    }
    w->packed += len * m;
}

/* Blocks of len bytes at user offsets off + d[0..m), one run each. */
static void walk_runs_at(walk_t *w, int64_t off, const int64_t *d, int64_t len, int64_t m)
{
    char *u = mgdt_addr(w->user, off), *p = w->packed;
    switch (len) {
        RUNS_CASE(4, AT_DISPL);
        RUNS_CASE(8, AT_DISPL);
        RUNS_CASE(16, AT_DISPL);
        RUNS_CASE(32, AT_DISPL);
        RUNS_CASE(64, AT_DISPL);
        RUNS_CASE(128, AT_DISPL);
    default:
        RUNS_LOOP(len, AT_DISPL);
    }
    w->packed += len * m;
}

/* m whole instances of node c (cs bytes each), the first at off, step bytes
   apart. */
static void walk_whole(walk_t *w, int64_t c, int64_t off, int64_t step, int64_t cs, int64_t m)
{
    if (w->nodes[c].kind == MGDT_K_LEAF) {
        walk_runs(w, off, step, cs, m);
        return;
    }
    for (int64_t t = 0; t < m; t++)
        walk_node(w, c, off + t * step, 0, cs);
}

/* Packed bytes [q0, q1) of a row of instances of node c (cs bytes each),
   the first at off, step bytes apart.  A leaf's instance may be longer than
   the leaf (cs a multiple of its size): a block of leaves that abut is one
   contiguous run. */
static void walk_row(walk_t *w, int64_t c, int64_t off, int64_t step, int64_t cs, int64_t q0,
                     int64_t q1)
{
    if (q0 >= q1)
        return;
    int64_t k0 = q0 / cs, k1 = q1 / cs;
    if (k0 == k1) { /* inside one instance */
        walk_node(w, c, off + k0 * step, q0 - k0 * cs, q1 - k0 * cs);
        return;
    }
    if (q0 > k0 * cs) {
        walk_node(w, c, off + k0 * step, q0 - k0 * cs, cs);
        k0++;
    }
    walk_whole(w, c, off + k0 * step, step, cs, k1 - k0);
    if (q1 > k1 * cs)
        walk_node(w, c, off + k1 * step, 0, q1 - k1 * cs);
}

/* A vector's blocks [p0, p1): blocks of bl children ce apart, the blocks
   stride apart. */
static void walk_vector(walk_t *w, const mgdt_node_t *n, int64_t c, int64_t off, int64_t p0,
                        int64_t p1)
{
    int64_t cs = n->child_size, ce = n->child_extent, bs = n->blocklen * cs;
    if (w->nodes[c].kind == MGDT_K_LEAF && ce == cs) {
        /* Each block one contiguous run: a row of blocks, stride apart. */
        walk_row(w, c, off, n->stride, bs, p0, p1);
        return;
    }
    int64_t b0 = p0 / bs, b1 = p1 / bs;
    for (int64_t b = b0; b <= b1 && b * bs < p1; b++) {
        int64_t q0 = p0 > b * bs ? p0 - b * bs : 0, q1 = p1 < (b + 1) * bs ? p1 - b * bs : bs;
        walk_row(w, c, off + b * n->stride, ce, cs, q0, q1);
    }
}

/* A subarray's children [p0, p1): rows along the last dimension, the outer
   indices kept as an odometer. */
static void walk_subarray(walk_t *w, const mgdt_node_t *n, int64_t c, int64_t off, int64_t p0,
                          int64_t p1)
{
    const int64_t *a = w->la + n->la;
    int nd = n->ndims;
    int64_t cs = n->child_size, last = a[nd - 1], rs = last * cs;
    int64_t idx[MGDT_MAX_DIMS];
    int64_t r = p0 / rs; /* row of p0 */
    for (int d = nd - 2; d >= 0; d--) {
        idx[d] = r % a[d];
        r /= a[d];
    }
    off += n->stride;
    for (int64_t rp = p0 / rs * rs; rp < p1; rp += rs) {
        int64_t ro = off;
        for (int d = 0; d < nd - 1; d++)
            ro += idx[d] * a[nd + d];
        int64_t q0 = p0 > rp ? p0 - rp : 0, q1 = p1 < rp + rs ? p1 - rp : rs;
        walk_row(w, c, ro, a[2 * nd - 1], cs, q0, q1);
        for (int d = nd - 2; d >= 0 && ++idx[d] == a[d]; d--)
            idx[d] = 0;
    }
}

/* Packed bytes [p0, p1) of one instance of node i at user offset off
   (0 <= p0 < p1 <= its size). */
static void walk_node(walk_t *w, int64_t i, int64_t off, int64_t p0, int64_t p1)
{
    const mgdt_node_t *n = &w->nodes[i];
    const int64_t *a = n->la >= 0 ? w->la + n->la : NULL;
    int64_t cs = n->child_size, ce = n->child_extent;

    switch (n->kind) {
    case MGDT_K_LEAF:
        walk_runs(w, off + p0, 0, p1 - p0, 1);
        break;
    case MGDT_K_CONTIG:
        walk_row(w, i + 1, off, ce, cs, p0, p1);
        break;
    case MGDT_K_VECTOR:
        walk_vector(w, n, i + 1, off, p0, p1);
        break;
    case MGDT_K_BLKIDX: {
        int64_t bs = n->blocklen * cs, b = p0 / bs, b1 = p1 / bs;
        if (w->nodes[i + 1].kind == MGDT_K_LEAF && ce == cs && b1 > b + 1) {
            /* Each block one run: the partial ends, the whole blocks in one loop. */
            if (p0 > b * bs) {
                walk_runs(w, off + a[b] + (p0 - b * bs), 0, (b + 1) * bs - p0, 1);
                b++;
            }
            walk_runs_at(w, off, a + b, bs, b1 - b);
            if (p1 > b1 * bs)
                walk_runs(w, off + a[b1], 0, p1 - b1 * bs, 1);
            break;
        }
        for (; b * bs < p1; b++) {
            int64_t q0 = p0 > b * bs ? p0 - b * bs : 0, q1 = p1 < (b + 1) * bs ? p1 - b * bs : bs;
            walk_row(w, i + 1, off + a[b], ce, cs, q0, q1);
        }
        break;
    }
    case MGDT_K_INDEXED:
    case MGDT_K_STRUCT:
        for (int64_t h = mgdt_block_search(a, n->count, p0); h < n->count && a[h] < p1; h++) {
            int64_t c = i + 1, bs = a[h + 1] - a[h];
            if (bs == 0)
                continue;
            if (n->kind == MGDT_K_STRUCT) {
                c = a[2 * n->count + 1 + h];
                cs = w->nodes[c].size;
                ce = w->nodes[c].extent;
            }
            int64_t q0 = p0 > a[h] ? p0 - a[h] : 0, q1 = p1 < a[h + 1] ? p1 - a[h] : bs;
            walk_row(w, c, off + a[n->count + 1 + h], ce, cs, q0, q1);
        }
        break;
    case MGDT_K_SUBARRAY:
        walk_subarray(w, n, i + 1, off, p0, p1);
        break;
    default:
        break;
    }
}

static void walk_stream(const mgdt_type_t *ty, char *user, char *packed, int64_t first, int64_t n,
                        int to_packed)
{
    if (ty->size <= 0 || n <= 0)
        return;
    walk_t w = {.nodes = ty->nodes,
                .la = ty->lookaside,
                .user = user,
                .packed = packed,
                .to_packed = to_packed};
    /* The instances are a row of the root, extent apart. */
    walk_row(&w, 0, 0, ty->extent, ty->size, first, first + n);
}

void mgdt_host_pack(const mgdt_type_t *type, const void *buf, void *packed, int64_t first,
                    int64_t n)
{
    walk_stream(type, (char *)buf, packed, first, n, 1);
}

void mgdt_host_unpack(const mgdt_type_t *type, const void *packed, void *buf, int64_t first,
                      int64_t n)
{
    walk_stream(type, buf, (char *)packed, first, n, 0);
}
