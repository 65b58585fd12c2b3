/* Collectives on device addresses, table driven: every collective call of
   MPICH 4.0.2 (blocking, I, _init; a few _c forms), on every combination of
   host and device buffers for its send and receive sides, over four
   datatypes (basic, vector, subarray, struct with gaps), against the same
   call on host buffers.  Each buffer starts filled with a known pattern, so
   "byte-identical to the host run" covers the bytes MPI must not touch
   too: the gaps of the datatypes and the blocks of MPI_PROC_NULL neighbors.
   Device buffers come from MPIX_Gpu_malloc (zero copy on a CPU device) and
   from MPIX_Gpu_register of a buffer of the application's (staged through
   host copies), alternately.  Also MPI_IN_PLACE, a user-defined operation
   that checks it sees the caller's datatype, intercommunicators, Cartesian,
   graph and distributed-graph communicators, a persistent request started
   twice, and an error on a bad root.  Runs at 1 to 4 ranks (testlist). */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpigpu.h"

static int errs, rank, wsize, quick;
static char where[200];
#define CHECK(c_)                                                                                  \
    do {                                                                                           \
        if (!(c_) && errs++ < 20)                                                                  \
            fprintf(stderr, "rank %d [%s]: check failed: %s (line %d)\n", rank, where, #c_,        \
                    __LINE__);                                                                     \
    } while (0)

#define NT 4
static MPI_Datatype types[NT];
static const char *tname[NT] = {"int", "vector", "subarray", "struct"};
static MPI_Op uop;
static cl_context ctx;

#define MAXB 16    /* blocks of one side at most (group size, degree) */
#define SLOT 3     /* instances reserved per block (counts are 1 or 2) */
#define ORIGIN 128 /* bytes before the datatype origin */

enum {
    K_BCAST,
    K_GATHER,
    K_GATHERV,
    K_SCATTER,
    K_SCATTERV,
    K_ALLGATHER,
    K_ALLGATHERV,
    K_ALLTOALL,
    K_ALLTOALLV,
    K_ALLTOALLW,
    K_REDUCE,
    K_ALLREDUCE,
    K_REDUCE_SCATTER,
    K_REDUCE_SCATTER_BLOCK,
    K_SCAN,
    K_EXSCAN,
    K_REDUCE_LOCAL,
    K_NALLGATHER,
    K_NALLGATHERV,
    K_NALLTOALL,
    K_NALLTOALLV,
    K_NALLTOALLW,
    K_N
};
static const char *kname[K_N] = {"Bcast",
                                 "Gather",
                                 "Gatherv",
                                 "Scatter",
                                 "Scatterv",
                                 "Allgather",
                                 "Allgatherv",
                                 "Alltoall",
                                 "Alltoallv",
                                 "Alltoallw",
                                 "Reduce",
                                 "Allreduce",
                                 "Reduce_scatter",
                                 "Reduce_scatter_block",
                                 "Scan",
                                 "Exscan",
                                 "Reduce_local",
                                 "Neighbor_allgather",
                                 "Neighbor_allgatherv",
                                 "Neighbor_alltoall",
                                 "Neighbor_alltoallv",
                                 "Neighbor_alltoallw"};
static const char *mname[4] = {"blocking", "I+Wait", "I+Test", "init+Start"};

/* A user-defined operation: inout = 3 * inout + in on the ints of the
   datatype, which must be the caller's (one of types[]: their ints' offsets
   in an instance, and the instance's extent, in ints). */
static const int uop_ints[NT][7] = {{1, 0}, {3, 0, 2, 4}, {6, 6, 7, 8, 11, 12, 13}, {3, 1, 4, 5}};
static const int uop_ext[NT] = {1, 6, 20, 8};
static void user_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout, t = 0;
    while (t < NT && types[t] != *dt)
        t++;
    if (t == NT) {
        fprintf(stderr, "user_fn: a datatype that is not the caller's\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    for (int i = 0; i < *len; i++)
        for (int j = 1; j <= uop_ints[t][0]; j++) {
            int k = uop_ext[t] * i + uop_ints[t][j];
            b[k] = 3 * b[k] + a[k];
        }
}

static void types_make(void)
{
    types[0] = MPI_INT;
    MPI_Datatype v;
    MPI_Type_vector(3, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 6 * sizeof(int), &types[1]);
    MPI_Type_free(&v);
    int sizes[2] = {4, 5}, sub[2] = {2, 3}, start[2] = {1, 1};
    MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_INT, &types[2]);
    int bl[2] = {1, 2};
    MPI_Aint disp[2] = {4, 16};
    MPI_Datatype st[2] = {MPI_INT, MPI_INT}, s0;
    MPI_Type_create_struct(2, bl, disp, st, &s0);
    MPI_Type_create_resized(s0, 0, 32, &types[3]);
    MPI_Type_free(&s0);
    for (int i = 1; i < NT; i++)
        MPI_Type_commit(&types[i]);
    MPI_Op_create(user_fn, 0, &uop);
}

static MPI_Aint extent_of(MPI_Datatype t)
{
    MPI_Aint lb, ext;
    MPI_Type_get_extent(t, &lb, &ext);
    return ext;
}

static size_t buf_bytes(MPI_Datatype t)
{
    return ORIGIN + (size_t)(MAXB * SLOT + 4) * (size_t)extent_of(t) + 64;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    /* small ints in every int slot, so that reductions stay exact */
    for (size_t i = 0; i < n; i++)
        p[i] =
            (unsigned char)((i % 4) == 0 ? (i / 4 * 7 + seed * 13) % 50 : (i % 4 == 1 ? seed : 0));
}

/* A buffer of n bytes filled with seed: host (kind 0), MPIX_Gpu_malloc (1)
   or a registered cl_mem (2). */
static char *buf_new(size_t n, unsigned seed, int kind, cl_mem *mem)
{
    unsigned char *h = malloc(n);
    fill(h, n, seed);
    *mem = NULL;
    if (kind == 0)
        return (char *)h;
    void *d = NULL;
    if (kind == 1) {
        MPIX_Gpu_malloc(n, &d);
    } else {
        cl_int e;
        *mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n, NULL, &e);
        MPIX_Gpu_register(*mem, &d);
    }
    MPIX_Gpu_memcpy(d, h, n);
    free(h);
    return d;
}

static void buf_del(char *p, int kind, cl_mem mem)
{
    if (kind == 0)
        free(p);
    else if (kind == 1)
        MPIX_Gpu_free(p);
    else {
        MPIX_Gpu_deregister(p);
        clReleaseMemObject(mem);
    }
}

static unsigned char *buf_read(const char *p, size_t n)
{
    unsigned char *h = malloc(n);
    MPIX_Gpu_memcpy(h, p, n);
    return h;
}

/* One call's arguments on one process. */
typedef struct tcase {
    int kind, mode, t, inplace, user, root, wide;
    MPI_Comm comm;
    int inter, me, g, lsize, indeg, outdeg;
    int scount, rcount;
    int scounts[MAXB], sdispls[MAXB], rcounts[MAXB], rdispls[MAXB];
    int swb[MAXB], rwb[MAXB];       /* byte displacements, Alltoallw */
    MPI_Aint sab[MAXB], rab[MAXB];  /* the same as MPI_Aint */
    MPI_Count scc[MAXB], rcc[MAXB]; /* counts as MPI_Count (_c) */
    MPI_Aint sdc[MAXB], rdc[MAXB];  /* displacements as MPI_Aint (_c) */
    MPI_Datatype st[MAXB], rt[MAXB];
} tcase_t;

static int complete(int mode, MPI_Request *req)
{
    if (mode == 1 || mode == 3)
        return MPI_Wait(req, MPI_STATUS_IGNORE);
    int flag = 0, rc = MPI_SUCCESS;
    while (!flag && rc == MPI_SUCCESS)
        rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    return rc;
}

/* B, I: blocking and nonblocking names; the call's arguments follow. */
#define RUN(B, I, ...)                                                                             \
    do {                                                                                           \
        if (c->mode == 0) {                                                                        \
            rc = MPI_##B(__VA_ARGS__);                                                             \
        } else if (c->mode == 3) {                                                                 \
            rc = MPI_##B##_init(__VA_ARGS__, MPI_INFO_NULL, &req);                                 \
            if (rc == MPI_SUCCESS)                                                                 \
                rc = MPI_Start(&req);                                                              \
            if (rc == MPI_SUCCESS)                                                                 \
                rc = complete(3, &req);                                                            \
            if (rc == MPI_SUCCESS)                                                                 \
                rc = MPI_Request_free(&req);                                                       \
        } else {                                                                                   \
            rc = MPI_##I(__VA_ARGS__, &req);                                                       \
            if (rc == MPI_SUCCESS)                                                                 \
                rc = complete(c->mode, &req);                                                      \
        }                                                                                          \
    } while (0)

static int call(const tcase_t *c, char *sb, char *rb)
{
    int rc = MPI_SUCCESS;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Datatype t = types[c->t];
    MPI_Op op = c->user ? uop : MPI_SUM;
    const char *s = c->inplace ? MPI_IN_PLACE : sb + ORIGIN;
    char *r = rb + ORIGIN;
    MPI_Comm comm = c->comm;
    switch (c->kind) {
    case K_BCAST:
        if (c->wide)
            rc = MPI_Bcast_c(r, c->rcount, t, c->root, comm);
        else
            RUN(Bcast, Ibcast, r, c->rcount, t, c->root, comm);
        break;
    case K_GATHER:
        RUN(Gather, Igather, s, c->scount, t, r, c->rcount, t, c->root, comm);
        break;
    case K_GATHERV:
        if (c->wide)
            rc = MPI_Gatherv_c(s, c->scount, t, r, c->rcc, c->rdc, t, c->root, comm);
        else
            RUN(Gatherv, Igatherv, s, c->scount, t, r, c->rcounts, c->rdispls, t, c->root, comm);
        break;
    case K_SCATTER:
        RUN(Scatter, Iscatter, sb + ORIGIN, c->scount, t, c->inplace ? MPI_IN_PLACE : r, c->rcount,
            t, c->root, comm);
        break;
    case K_SCATTERV:
        RUN(Scatterv, Iscatterv, sb + ORIGIN, c->scounts, c->sdispls, t,
            c->inplace ? MPI_IN_PLACE : r, c->rcount, t, c->root, comm);
        break;
    case K_ALLGATHER:
        RUN(Allgather, Iallgather, s, c->scount, t, r, c->rcount, t, comm);
        break;
    case K_ALLGATHERV:
        RUN(Allgatherv, Iallgatherv, s, c->scount, t, r, c->rcounts, c->rdispls, t, comm);
        break;
    case K_ALLTOALL:
        RUN(Alltoall, Ialltoall, s, c->scount, t, r, c->rcount, t, comm);
        break;
    case K_ALLTOALLV:
        if (c->wide)
            rc = MPI_Alltoallv_c(s, c->scc, c->sdc, t, r, c->rcc, c->rdc, t, comm);
        else
            RUN(Alltoallv, Ialltoallv, s, c->scounts, c->sdispls, t, r, c->rcounts, c->rdispls, t,
                comm);
        break;
    case K_ALLTOALLW:
        RUN(Alltoallw, Ialltoallw, s, c->scounts, c->swb, c->st, r, c->rcounts, c->rwb, c->rt,
            comm);
        break;
    case K_REDUCE:
        RUN(Reduce, Ireduce, s, r, c->scount, t, op, c->root, comm);
        break;
    case K_ALLREDUCE:
        if (c->wide)
            rc = MPI_Allreduce_c(s, r, c->scount, t, op, comm);
        else
            RUN(Allreduce, Iallreduce, s, r, c->scount, t, op, comm);
        break;
    case K_REDUCE_SCATTER:
        RUN(Reduce_scatter, Ireduce_scatter, s, r, c->rcounts, t, op, comm);
        break;
    case K_REDUCE_SCATTER_BLOCK:
        RUN(Reduce_scatter_block, Ireduce_scatter_block, s, r, c->rcount, t, op, comm);
        break;
    case K_SCAN:
        RUN(Scan, Iscan, s, r, c->scount, t, op, comm);
        break;
    case K_EXSCAN:
        RUN(Exscan, Iexscan, s, r, c->scount, t, op, comm);
        break;
    case K_REDUCE_LOCAL:
        rc = MPI_Reduce_local(sb + ORIGIN, r, c->scount, t, op);
        break;
    case K_NALLGATHER:
        RUN(Neighbor_allgather, Ineighbor_allgather, s, c->scount, t, r, c->rcount, t, comm);
        break;
    case K_NALLGATHERV:
        RUN(Neighbor_allgatherv, Ineighbor_allgatherv, s, c->scount, t, r, c->rcounts, c->rdispls,
            t, comm);
        break;
    case K_NALLTOALL:
        RUN(Neighbor_alltoall, Ineighbor_alltoall, s, c->scount, t, r, c->rcount, t, comm);
        break;
    case K_NALLTOALLV:
        RUN(Neighbor_alltoallv, Ineighbor_alltoallv, s, c->scounts, c->sdispls, t, r, c->rcounts,
            c->rdispls, t, comm);
        break;
    case K_NALLTOALLW:
        if (c->wide) {
            MPI_Request q;
            rc = MPI_Ineighbor_alltoallw_c(s, c->scc, c->sab, c->st, r, c->rcc, c->rab, c->rt, comm,
                                           &q);
            if (rc == MPI_SUCCESS)
                rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else {
            RUN(Neighbor_alltoallw, Ineighbor_alltoallw, s, c->scounts, c->sab, c->st, r,
                c->rcounts, c->rab, c->rt, comm);
        }
        break;
    }
    return rc;
}

/* Fill in the counts of c for its communicator and this process. */
static void layout(tcase_t *c)
{
    MPI_Comm_test_inter(c->comm, &c->inter);
    MPI_Comm_rank(c->comm, &c->me);
    MPI_Comm_size(c->comm, &c->lsize);
    c->g = c->lsize;
    if (c->inter)
        MPI_Comm_remote_size(c->comm, &c->g);
    c->indeg = c->outdeg = c->g;
    if (c->kind >= K_NALLGATHER) {
        int topo, nd, w;
        MPI_Topo_test(c->comm, &topo);
        if (topo == MPI_CART) {
            MPI_Cartdim_get(c->comm, &nd);
            c->indeg = c->outdeg = 2 * nd;
        } else if (topo == MPI_GRAPH) {
            MPI_Graph_neighbors_count(c->comm, c->me, &nd);
            c->indeg = c->outdeg = nd;
        } else {
            MPI_Dist_graph_neighbors_count(c->comm, &c->indeg, &c->outdeg, &w);
        }
    }
    MPI_Aint ext = extent_of(types[c->t]);
    int reduction = c->kind >= K_REDUCE && c->kind <= K_REDUCE_LOCAL;
    c->scount = c->rcount = reduction ? 3 : 2;
    if (c->kind == K_REDUCE_SCATTER_BLOCK)
        c->rcount = 2;
    int nb = c->indeg > c->outdeg ? c->indeg : c->outdeg;
    if (nb < c->lsize)
        nb = c->lsize;
    for (int i = 0; i < nb && i < MAXB; i++) {
        /* v forms: block i holds 1 or 2 instances, in reverse order with gaps */
        int v = c->kind == K_ALLTOALLV || c->kind == K_ALLTOALLW || c->kind == K_NALLTOALLV ||
                c->kind == K_NALLTOALLW;
        /* a neighbor may sit on several edges (small graphs): one count per type */
        int nv = c->kind == K_NALLTOALLV || c->kind == K_NALLTOALLW;
        c->scounts[i] = nv ? 1 + c->t % 2 : v ? 1 + (c->me + i) % 2 : c->scount;
        c->rcounts[i] = nv ? 1 + c->t % 2 : v ? 1 + (c->me + i) % 2 : c->rcount;
        if (c->kind == K_GATHERV || c->kind == K_ALLGATHERV || c->kind == K_SCATTERV ||
            c->kind == K_NALLGATHERV)
            c->rcounts[i] = c->scounts[i] = 1 + i % 2;
        if (c->kind == K_REDUCE_SCATTER)
            c->rcounts[i] = 1 + i % 2;
        c->sdispls[i] = SLOT * (MAXB - 1 - i) - (MAXB - nb) * SLOT;
        c->rdispls[i] = SLOT * i + 1;
        /* MPICH 4.0.2's MPI_Allgatherv on one process ignores the
           displacement (stage.c works around it on device buffers): the
           host reference needs 0 */
        if (c->kind == K_ALLGATHERV && c->g == 1)
            c->rdispls[i] = 0;
        c->swb[i] = (int)(c->sdispls[i] * ext);
        c->rwb[i] = (int)(c->rdispls[i] * ext);
        c->sab[i] = c->swb[i];
        c->rab[i] = c->rwb[i];
        c->scc[i] = c->scounts[i];
        c->rcc[i] = c->rcounts[i];
        c->sdc[i] = c->sdispls[i];
        c->rdc[i] = c->rdispls[i];
        c->st[i] = c->rt[i] = types[c->t];
    }
    if (c->kind == K_GATHERV || c->kind == K_ALLGATHERV || c->kind == K_NALLGATHERV) {
        /* what this process sends: its own block's count */
        c->scount = 1 + c->me % 2;
        if (c->kind == K_NALLGATHERV) {
            /* every neighbor sends 1 + its rank % 2: ask for the sources */
            int srcs[MAXB], dsts[MAXB], sw[MAXB], dw[MAXB], topo;
            MPI_Topo_test(c->comm, &topo);
            if (topo == MPI_DIST_GRAPH) {
                MPI_Dist_graph_neighbors(c->comm, c->indeg, srcs, sw, c->outdeg, dsts, dw);
            } else if (topo == MPI_GRAPH) {
                MPI_Graph_neighbors(c->comm, c->me, c->indeg, srcs);
            } else {
                for (int d = 0; d < c->indeg / 2; d++)
                    MPI_Cart_shift(c->comm, d, 1, &srcs[2 * d], &srcs[2 * d + 1]);
            }
            for (int i = 0; i < c->indeg; i++)
                c->rcounts[i] = srcs[i] == MPI_PROC_NULL ? 1 : 1 + srcs[i] % 2;
        }
    }
    if (c->kind == K_SCATTERV)
        c->rcount = 1 + c->me % 2;
}

static void describe(const tcase_t *c, int sk, int rk, const char *cname)
{
    snprintf(where, sizeof(where), "%s%s %s %s %s send %d recv %d%s%s root %d", kname[c->kind],
             c->wide ? "_c" : "", mname[c->mode], tname[c->t], cname, sk, rk,
             c->inplace ? " in place" : "", c->user ? " user op" : "", c->root);
}

/* Run c on host buffers, then with send on sk and receive on rk (0 host,
   1 or 2 device), and compare both whole buffers. */
static void check_case(tcase_t *c, int sk, int rk, const char *cname)
{
    size_t n = buf_bytes(types[c->t]);
    unsigned ss = 3 + c->me, rs = 11 + c->me;
    cl_mem m0, m1, m2, m3;
    describe(c, sk, rk, cname);
    if (getenv("COLL_VERBOSE"))
        fprintf(stderr, "%s\n", where);
    char *hs = buf_new(n, ss, 0, &m0), *hr = buf_new(n, rs, 0, &m1);
    int rc = call(c, hs, hr);
    CHECK(rc == MPI_SUCCESS);
    char *ds = buf_new(n, ss, sk, &m2), *dr = buf_new(n, rs, rk, &m3);
    rc = call(c, ds, dr);
    CHECK(rc == MPI_SUCCESS);
    unsigned char *gs = buf_read(ds, n), *gr = buf_read(dr, n);
    CHECK(memcmp(gs, hs, n) == 0);
    CHECK(memcmp(gr, hr, n) == 0);
    if (memcmp(gr, hr, n) && errs < 20)
        for (size_t i = 0; i < n; i++)
            if (gr[i] != (unsigned char)hr[i]) {
                fprintf(stderr, "  first difference at byte %zu: %d, want %d\n", i, gr[i],
                        (unsigned char)hr[i]);
                break;
            }
    free(gs);
    free(gr);
    buf_del(hs, 0, m0);
    buf_del(hr, 0, m1);
    buf_del(ds, sk, m2);
    buf_del(dr, rk, m3);
}

static int has_inplace(int kind)
{
    return kind != K_BCAST && kind != K_REDUCE_LOCAL && kind < K_NALLGATHER;
}

/* Every kind valid on comm (intra: all but neighborhood; topo: those). */
static void sweep(MPI_Comm comm, const char *cname, int topo, int modes)
{
    int inter = 0, me = 0;
    MPI_Comm_test_inter(comm, &inter);
    MPI_Comm_rank(comm, &me);
    for (int kind = 0; kind < K_N; kind++) {
        if ((kind >= K_NALLGATHER) != topo)
            continue;
        /* COLL_KIND=name runs one collective only (debugging) */
        const char *only = getenv("COLL_KIND");
        if (only && strcmp(only, kname[kind]))
            continue;
        if (inter && (kind == K_SCAN || kind == K_EXSCAN || kind == K_REDUCE_LOCAL ||
                      kind == K_REDUCE_SCATTER || kind == K_REDUCE_SCATTER_BLOCK))
            continue;
        for (int t = 0; t < NT; t++) {
            for (int mode = 0; mode < 4; mode++) {
                if (!(modes & (1 << mode)) || (kind == K_REDUCE_LOCAL && mode))
                    continue;
                /* quick (3 and 4 ranks): blocking and one other mode per
                   call and datatype */
                if (quick && mode && mode != 1 + (kind + t) % 3)
                    continue;
                /* MPICH 4.0.2's MPI_Reduce_scatter(_block) of a derived
                   datatype fails in MPICH itself on host buffers: a yaksa
                   assertion (I), a heap overrun (_init), and a heap
                   overrun or a fault with a user-defined operation from 2
                   ranks (blocking) */
                if (t > 0 && (kind == K_REDUCE_SCATTER_BLOCK || kind == K_REDUCE_SCATTER))
                    continue;
                int reduction = kind >= K_REDUCE && kind <= K_REDUCE_LOCAL;
                for (int ip = 0; ip < 2; ip++) {
                    if (ip && (inter || !has_inplace(kind)))
                        continue;
                    /* MPICH defines MPI_SUM on predefined types only */
                    for (int user = reduction && t > 0; user < 1 + reduction; user++) {
                        /* the device kinds of both sides, varied with the case */
                        int rot = (kind + t + mode + ip) % 2;
                        int sides[4][2] = {{0, 0}, {1 + rot, 0}, {0, 2 - rot}, {2 - rot, 1 + rot}};
                        for (int k = 0; k < 4; k++) {
                            if (quick && (k == 1 || k == 2) && k != 1 + (kind + t + mode) % 2)
                                continue;
                            tcase_t c = {
                                .kind = kind, .mode = mode, .t = t, .user = user, .comm = comm};
                            c.root = 0;
                            layout(&c);
                            int rooted = kind == K_BCAST || kind == K_GATHER || kind == K_GATHERV ||
                                         kind == K_SCATTER || kind == K_SCATTERV ||
                                         kind == K_REDUCE;
                            if (rooted && inter) {
                                /* group of world rank 0 holds the root */
                                int wr;
                                MPI_Comm_rank(MPI_COMM_WORLD, &wr);
                                int lowgroup = wr % 2 == 0;
                                c.root = lowgroup ? (me == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
                            } else if (rooted) {
                                c.root = c.lsize - 1;
                            }
                            /* in place: the root only, on rooted calls */
                            c.inplace = ip && (!rooted || c.me == c.root);
                            if (ip && rooted && !c.inplace)
                                c.inplace = 0;
                            check_case(&c, sides[k][0], sides[k][1], cname);
                        }
                    }
                }
            }
        }
    }
}

/* The _c forms, a persistent request started twice, and a bad root. */
static void extras(void)
{
    int wide_kinds[] = {K_BCAST, K_GATHERV, K_ALLTOALLV, K_ALLREDUCE};
    for (unsigned i = 0; i < sizeof(wide_kinds) / sizeof(wide_kinds[0]); i++)
        for (int t = 0; t < NT; t++) {
            tcase_t c = {.kind = wide_kinds[i],
                         .t = t,
                         .wide = 1,
                         .comm = MPI_COMM_WORLD,
                         .user = wide_kinds[i] == K_ALLREDUCE && t > 0};
            layout(&c);
            check_case(&c, 2, 1, "world");
        }

    /* MPI_Allreduce_init started twice, the input changed in between. */
    size_t n = 64 * sizeof(int);
    int h[64], out[64], want[64];
    cl_mem m1, m2;
    char *s = buf_new(n, 1, 2, &m1), *r = buf_new(n, 2, 1, &m2);
    MPI_Request req;
    snprintf(where, sizeof(where), "Allreduce_init started twice");
    CHECK(MPI_Allreduce_init(s, r, 64, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req) ==
          MPI_SUCCESS);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 64; i++)
            h[i] = i * (round + 1) + rank;
        MPIX_Gpu_memcpy(s, h, n);
        CHECK(MPI_Start(&req) == MPI_SUCCESS);
        CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        PMPI_Allreduce(h, want, 64, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        MPIX_Gpu_memcpy(out, r, n);
        CHECK(memcmp(out, want, n) == 0);
    }
    MPI_Request_free(&req);

    /* MPI_Ibcast of a device address mixed with a host request in Waitall. */
    snprintf(where, sizeof(where), "Ibcast + Iallreduce host, Waitall");
    MPI_Request two[2];
    int hv = rank, hsum = 0;
    for (int i = 0; i < 64; i++)
        h[i] = rank == 0 ? 1000 + i : -1;
    MPIX_Gpu_memcpy(r, h, n);
    CHECK(MPI_Ibcast(r, 64, MPI_INT, 0, MPI_COMM_WORLD, &two[0]) == MPI_SUCCESS);
    CHECK(MPI_Iallreduce(&hv, &hsum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &two[1]) == MPI_SUCCESS);
    MPI_Status st2[2];
    CHECK(MPI_Waitall(2, two, st2) == MPI_SUCCESS);
    MPIX_Gpu_memcpy(out, r, n);
    for (int i = 0; i < 64; i++)
        CHECK(out[i] == 1000 + i);
    CHECK(hsum == wsize * (wsize - 1) / 2);

    /* A bad root on a device buffer: MPI_ERR_ROOT, nothing moved. */
    snprintf(where, sizeof(where), "bad root");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Bcast(r, 4, MPI_INT, wsize, MPI_COMM_WORLD), cls = MPI_SUCCESS;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ROOT);
    /* a device range that runs past its allocation: MPI_ERR_BUFFER */
    snprintf(where, sizeof(where), "past the allocation");
    rc = MPI_Allreduce(MPI_IN_PLACE, r, 65, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    buf_del(s, 2, m1);
    buf_del(r, 1, m2);
}

int main(int argc, char **argv)
{
    int provided = 0;
    /* COLL_MULTIPLE: under MPI_THREAD_MULTIPLE, the progress thread steps
       the nonblocking and persistent calls too */
    if (getenv("COLL_MULTIPLE"))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    quick = (argc > 1 && !strcmp(argv[1], "quick")) || getenv("COLL_QUICK");
    cl_device_id dev;
    if (MPIX_Gpu_get_device(&ctx, &dev, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "no device\n");
        MPI_Finalize();
        return 77;
    }
    types_make();
    /* every mode on the world communicator; blocking and nonblocking on a
       duplicate of COMM_SELF-sized groups keep the run short */
    sweep(MPI_COMM_WORLD, "world", 0, 0xf);

    /* neighborhood calls: a non-periodic ring (MPI_PROC_NULL at its ends),
       a graph ring and a distributed graph of two neighbors each way */
    MPI_Comm cart, graph, dist;
    int dims[1] = {wsize}, per[1] = {0};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &cart);
    sweep(cart, "cart", 1, 0xf);
    int *index = malloc(wsize * sizeof(int)), *edges = malloc(2 * wsize * sizeof(int));
    for (int i = 0; i < wsize; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + 1) % wsize;
        edges[2 * i + 1] = (i + wsize - 1) % wsize;
    }
    MPI_Graph_create(MPI_COMM_WORLD, wsize, index, edges, 0, &graph);
    sweep(graph, "graph", 1, 0x3);
    int srcs[2] = {(rank + wsize - 1) % wsize, (rank + wsize - 2) % wsize};
    int dsts[2] = {(rank + 1) % wsize, (rank + 2) % wsize};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, wsize > 1 ? 2 : 0, srcs, MPI_UNWEIGHTED,
                                   wsize > 1 ? 2 : 0, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL, 0,
                                   &dist);
    sweep(dist, "distgraph", 1, 0x5);
    free(index);
    free(edges);

    /* an intercommunicator: even world ranks against odd ones */
    if (wsize >= 2) {
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter);
        sweep(inter, "intercomm", 0, 0x3);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    extras();
    MPI_Comm_free(&cart);
    MPI_Comm_free(&graph);
    MPI_Comm_free(&dist);
    MPI_Op_free(&uop);
    for (int i = 1; i < NT; i++)
        MPI_Type_free(&types[i]);
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "coll: %d errors\n" : "coll: No Errors\n", all);
    MPI_Finalize();
    return all != 0;
}
