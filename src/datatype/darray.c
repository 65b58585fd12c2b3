/*
 * MPI_COMBINER_DARRAY: turn the distribution into the global indices this
 * rank owns along each dimension (MPI-3.1 section 4.1.4, as MPICH's
 * MPIR_Type_block/MPIR_Type_cyclic do), then into a tree.  Owned indices are
 * kept as runs of consecutive indices; the typemap visits them in increasing
 * order, fastest dimension innermost.
 */
#include <stdlib.h>

#include "mgerr.h"
#include "mgdt_tree.h"

typedef struct dim_runs {
    int64_t n;            /* number of runs */
    int64_t *start, *len; /* in elements of the dimension */
} dim_runs_t;

static int runs_of(int gsize, int distrib, int darg, int psize, int coord, dim_runs_t *r)
{
    int64_t blk, step, cap;

    if (distrib == MPI_DISTRIBUTE_NONE) {
        blk = gsize;
        step = gsize;
        coord = 0;
    } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
        blk = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + psize - 1) / psize : darg;
        step = (int64_t)gsize + 1; /* one block at most */
    } else {
        blk = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        step = blk * psize;
    }
    cap = blk > 0 ? gsize / step + 2 : 1;
    r->n = 0;
    r->start = malloc(sizeof(int64_t) * cap);
    r->len = malloc(sizeof(int64_t) * cap);
    if (!r->start || !r->len)
        return mgerr_set(MPI_ERR_NO_MEM, "mgdt: out of memory (darray)");
    for (int64_t s = coord * blk; blk > 0 && s < gsize; s += step) {
        r->start[r->n] = s;
        r->len[r->n] = (s + blk < gsize ? s + blk : gsize) - s;
        r->n++;
    }
    return MPI_SUCCESS;
}

int mgdt_decode_darray(const int *ints, mgdt_tree_t *oldtree, int64_t extent, mgdt_tree_t **out)
{
    int rc = MPI_SUCCESS;
    int nd = ints[2], rank = ints[1];
    const int *gs = ints + 3, *dist = ints + 3 + nd, *darg = ints + 3 + 2 * nd,
              *ps = ints + 3 + 3 * nd;
    int order = ints[3 + 4 * nd];
    dim_runs_t *r = calloc(nd > 0 ? nd : 1, sizeof(*r)); /* C order */
    int *sz = malloc(sizeof(int) * 3 * (nd > 0 ? nd : 1));
    int64_t *stride = malloc(sizeof(int64_t) * (nd > 0 ? nd : 1));
    int single = 1, empty = 0, ovf = 0;
    mgdt_tree_t *t = oldtree;

    if (!r || !sz || !stride)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (darray)");
    /* The process grid is row-major whatever the array order. */
    for (int i = nd - 1, rest = rank; i >= 0; i--) {
        int coord = rest % ps[i];
        int ci = order == MPI_ORDER_FORTRAN ? nd - 1 - i : i;
        rest /= ps[i];
        rc = runs_of(gs[i], dist[i], darg[i], ps[i], coord, &r[ci]);
        MG_CHECK(rc, fn_fail);
        sz[ci] = gs[i];
        single = single && r[ci].n == 1;
        empty = empty || r[ci].n == 0;
    }
    for (int i = nd - 1; i >= 0; i--)
        stride[i] = i == nd - 1 ? extent : mgdt_mul(stride[i + 1], sz[i + 1], &ovf);

    if (empty || nd == 0) {
        t = mgdt_tree_new(MGDT_K_CONTIG);
        if (!t)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (darray)");
        t->count = empty ? 0 : 1;
        t->child = oldtree;
        mgdt_tree_finish(t);
    } else if (single) {
        for (int i = 0; i < nd; i++) {
            sz[nd + i] = (int)r[i].len[0];
            sz[2 * nd + i] = (int)r[i].start[0];
        }
        rc = mgdt_tree_subarray(nd, sz, sz + nd, sz + 2 * nd, MPI_ORDER_C, oldtree, &t);
        MG_CHECK(rc, fn_fail);
    } else {
        /* One INDEXED node per dimension, innermost = fastest; each node's
           extent is one row of its dimension, the step of its parent. */
        for (int i = nd - 1; i >= 0; i--) {
            mgdt_tree_t *n = mgdt_tree_new(MGDT_K_INDEXED);
            if (!n)
                MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (darray)");
            n->child = t;
            t = n;
            n->count = r[i].n;
            n->blocklens = r[i].len;
            n->displs = r[i].start;
            r[i].len = r[i].start = NULL;
            for (int64_t h = 0; h < n->count; h++)
                n->displs[h] = mgdt_mul(n->displs[h], stride[i], &n->overflow);
            n->extent = mgdt_mul(stride[i], sz[i], &n->overflow);
            mgdt_tree_finish(n);
        }
    }
    t->overflow |= ovf;
    *out = t;

fn_exit:
    for (int i = 0; r && i < nd; i++) {
        free(r[i].start);
        free(r[i].len);
    }
    free(r);
    free(sz);
    free(stride);
    return rc;
fn_fail:
    /* Nodes built so far own oldtree; detach it so the caller keeps it. */
    if (t != oldtree) {
        mgdt_tree_t *p = t;
        while (p && p->child != oldtree)
            p = p->child;
        if (p)
            p->child = NULL;
        mgdt_tree_free(t);
    }
    goto fn_exit;
}
