/* Fused packing of the all-to-all collectives on device buffers that are
   not zero copy (registered cl_mem objects): MPI_Neighbor_alltoallw,
   MPI_Alltoallw and MPI_Alltoallv with k distinct derived datatypes
   (vector, subarray, indexed, struct with gaps, basic) pack every outgoing
   block in one launch of the pack engine and unpack every incoming block in
   one, whatever k.  Under MPIGPU_PACK=kernel (the testlist), the library's
   MPI_T counters must move by exactly two kernel launches per call where
   both sides are on the device (one where one side is), and by the blocks'
   packed bytes each way, no more (the span between the blocks never
   crosses).  Every result is compared byte for byte with the same call on
   host buffers filled with the same pattern, so the bytes between the
   blocks, and the blocks of MPI_PROC_NULL neighbors, must stay as they
   were.  Also: MPI_IN_PLACE, the nonblocking and persistent forms, a
   Cartesian ring without periods, a receive type that differs from the
   send type with the same signature.  Any number of ranks (the testlist
   runs 2).

   The testlist runs it four ways (argv[1]): "fused" (the default) under
   MPIGPU_PACK=kernel, where the model's choice between fused packing and
   one pack engine call per block (MPIGPU_COLL_PACKED=model) must keep the
   one launch each way; "blocks" under MPIGPU_COLL_PACKED=blocks, one call per block:
   one launch per block that is not one run of bytes; "shared" on a GPU
   shared with other processes (MPIGPU_FORCE_SHARED) whose kernels cost
   100 ms more (MPIGPU_KERNEL_SWITCH) under MPIGPU_COLL_PACKED=model: the
   engine's model must take the per-block copies, without a launch, for an
   Alltoallv of vectors of many short runs (case "Alltoallv (long)");
   "measure", the same GPU under auto: that case's first call runs as the
   model says (block by block) and its second the other way (fused), since
   auto times both ways before it keeps one.  MPI_T's
   mpigpu_coll_packed_fused and _blocks must count every pack and unpack of
   a side of two or more blocks the way it ran. */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpigpu.h"
#include "mpit_read.h"

static int errs, rank, wsize;
static char where[160];
#define CHECK(c_)                                                                                  \
    do {                                                                                           \
        if (!(c_) && errs++ < 20)                                                                  \
            fprintf(stderr, "rank %d [%s]: check failed: %s (line %d)\n", rank, where, #c_,        \
                    __LINE__);                                                                     \
    } while (0)

static cl_context ctx;

/* Send types and receive types of the same signature, k of them. */
#define K 5
static MPI_Datatype st[K], rt[K];
static int tsize[K];
/* Alltoallv (long): 24 ints 8 and 12 bytes apart, sent and received */
static MPI_Datatype lvs, lvr;
static int lvsize;

enum { M_FUSED, M_BLOCKS, M_SHARED, M_MEASURE };
static int mode;
static int first_run[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}; /* by case */

/* Whether count instances of t are one run of bytes (the pack engine then
   copies them, whatever its method). */
static int one_run(MPI_Datatype t, int count)
{
    MPI_Aint lb, ext, tlb, text;
    int size;
    MPI_Type_size(t, &size);
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    return text == size && (count == 1 || ext == size);
}

static void types_make(void)
{
    /* 8 ints as a vector; received as 8 contiguous ints */
    MPI_Type_vector(4, 2, 5, MPI_INT, &st[0]);
    MPI_Type_contiguous(8, MPI_INT, &rt[0]);
    /* a face of a 4^3 cube of doubles, both ways */
    int sz[3] = {4, 4, 4}, sub[3] = {4, 1, 4}, start[3] = {0, 2, 0};
    MPI_Type_create_subarray(3, sz, sub, start, MPI_ORDER_C, MPI_DOUBLE, &st[1]);
    MPI_Type_dup(st[1], &rt[1]);
    /* indexed ints; received as another indexed shape */
    int bl[3] = {3, 1, 2}, d[3] = {0, 5, 9}, bl2[2] = {2, 4}, d2[2] = {1, 7};
    MPI_Type_indexed(3, bl, d, MPI_INT, &st[2]);
    MPI_Type_indexed(2, bl2, d2, MPI_INT, &rt[2]);
    /* a struct with gaps (double, int), extent 24 */
    int sbl[2] = {1, 1};
    MPI_Aint sd[2] = {0, 12};
    MPI_Datatype sty[2] = {MPI_DOUBLE, MPI_INT}, s0;
    MPI_Type_create_struct(2, sbl, sd, sty, &s0);
    MPI_Type_create_resized(s0, 0, 24, &st[3]);
    MPI_Type_free(&s0);
    MPI_Type_dup(st[3], &rt[3]);
    /* a basic type */
    MPI_Type_dup(MPI_DOUBLE, &st[4]);
    MPI_Type_dup(MPI_DOUBLE, &rt[4]);
    for (int i = 0; i < K; i++) {
        MPI_Type_commit(&st[i]);
        MPI_Type_commit(&rt[i]);
        MPI_Type_size(st[i], &tsize[i]);
    }
    MPI_Type_vector(24, 1, 2, MPI_INT, &lvs);
    MPI_Type_vector(24, 1, 3, MPI_INT, &lvr);
    MPI_Type_commit(&lvs);
    MPI_Type_commit(&lvr);
    MPI_Type_size(lvs, &lvsize);
}

/* A pattern of n bytes, distinct per seed. */
static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + seed * 97 + 7);
}

#define BUF 16384 /* bytes of each buffer; blocks at SLOT-byte steps from 64 */
#define SLOT 1200 /* more than any block's span (2 instances of the 512-byte cube) */

typedef struct bufs {
    char *s, *r;   /* host, or device addresses */
    cl_mem sm, rm; /* registered cl_mem objects of device buffers */
} bufs_t;

static char *buf_new(unsigned seed, int dev, cl_mem *m)
{
    unsigned char *h = malloc(BUF);
    fill(h, BUF, seed);
    *m = NULL;
    if (!dev)
        return (char *)h;
    cl_int e;
    void *d = NULL;
    *m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, BUF, NULL, &e);
    MPIX_Gpu_register(*m, &d);
    MPIX_Gpu_memcpy(d, h, BUF);
    free(h);
    return d;
}

static void buf_get(const char *p, int dev, unsigned char *out)
{
    if (dev)
        MPIX_Gpu_memcpy(out, p, BUF);
    else
        memcpy(out, p, BUF);
}

static void buf_del(char *p, int dev, cl_mem m)
{
    if (!dev) {
        free(p);
        return;
    }
    MPIX_Gpu_deregister(p);
    clReleaseMemObject(m);
}

typedef struct counters {
    unsigned long long launches, pbytes, ubytes, fused, blocks;
} counters_t;

static counters_t counters(void)
{
    counters_t c = {mpit_value("mpigpu_kernel_launches"), mpit_value("mpigpu_pack_bytes"),
                    mpit_value("mpigpu_unpack_bytes"), mpit_value("mpigpu_coll_packed_fused"),
                    mpit_value("mpigpu_coll_packed_blocks")};
    return c;
}

enum {
    C_NEIGHBOR,
    C_INEIGHBOR,
    C_PNEIGHBOR,
    C_CART,
    C_ALLTOALLW,
    C_INPLACE,
    C_ALLTOALLV,
    C_LONGV,
    C_N
};
static const char *cname[C_N] = {"Neighbor_alltoallw",
                                 "Ineighbor_alltoallw",
                                 "Neighbor_alltoallw_init",
                                 "Neighbor_alltoallw (cart)",
                                 "Alltoallw",
                                 "Alltoallw (in place)",
                                 "Alltoallv",
                                 "Alltoallv (long)"};

/* The arguments of case c on comm: n blocks per side. */
typedef struct args {
    int n;
    int sc[K], rc[K], ivs[K], ivr[K];
    MPI_Aint sd[K], rd[K];
    int isd[K], ird[K];
    MPI_Datatype stv[K], rtv[K];
    long long sbytes, rbytes; /* packed bytes that move each way */
    int slive, rlive;         /* blocks that move each way */
    int sruns, rruns;         /* of those, the blocks that are not one run of bytes */
} args_t;

/* Block j of a side at 64 + j * SLOT (send) or reversed (receive), count 1
   or 2 of the block's type; peers that are MPI_PROC_NULL move nothing. */
static void args_make(int c, MPI_Comm comm, args_t *a)
{
    memset(a, 0, sizeof(*a));
    int nin = 0, nout = 0, srcs[K], dsts[K];
    if (c == C_ALLTOALLW || c == C_INPLACE || c == C_ALLTOALLV || c == C_LONGV) {
        nin = nout = wsize;
        for (int i = 0; i < wsize; i++)
            srcs[i] = dsts[i] = i;
    } else if (c == C_CART) {
        nin = nout = 2;
        MPI_Cart_shift(comm, 0, 1, &srcs[0], &srcs[1]);
        dsts[0] = srcs[0];
        dsts[1] = srcs[1];
    } else {
        int w = 0;
        MPI_Dist_graph_neighbors_count(comm, &nin, &nout, &w);
        MPI_Dist_graph_neighbors(comm, nin, srcs, MPI_UNWEIGHTED, nout, dsts, MPI_UNWEIGHTED);
    }
    a->n = nout;
    for (int j = 0; j < nout; j++) {
        /* the type of the j-th message: the same at both ends (by the pair's
           ranks for the all-to-all, by j for the graph, whose j-th message
           from r to s is s's j-th receive from r) */
        int t = c >= C_ALLTOALLW ? (rank + dsts[j]) % K : (c == C_CART ? 1 + j : j) % K;
        if (c == C_ALLTOALLV)
            t = 0;
        a->stv[j] = st[t];
        if (c == C_CART)
            a->sc[j] = a->ivs[j] = 1;
        else if (c >= C_ALLTOALLW)
            a->sc[j] = a->ivs[j] = 1 + (rank + dsts[j]) % 2;
        else
            a->sc[j] = a->ivs[j] = 1 + (j + rank) % 2;
        a->sd[j] = a->isd[j] = 64 + j * SLOT;
        if (c == C_ALLTOALLV)
            a->isd[j] = 1 + 3 * j; /* extents of st[0] (68 bytes) */
        if (c == C_LONGV)
            a->isd[j] = 1 + 3 * j; /* extents of lvs (188 bytes) */
        if (dsts[j] != MPI_PROC_NULL) {
            a->sbytes += (long long)a->sc[j] * (c == C_LONGV ? lvsize : tsize[t]);
            a->slive++;
            a->sruns += !one_run(c == C_LONGV ? lvs : a->stv[j], a->sc[j]);
        }
    }
    for (int j = 0; j < nin; j++) {
        int t = c >= C_ALLTOALLW ? (rank + srcs[j]) % K : (c == C_CART ? 2 - j : j) % K;
        if (c == C_ALLTOALLV)
            t = 0;
        a->rtv[j] = rt[t];
        if (c == C_CART) {
            /* the message from below was the neighbor's "above" (type 2),
               sent as st[2] and received as rt[2] (same signature) */
            a->rc[j] = a->ivr[j] = 1;
        } else if (c >= C_ALLTOALLW) {
            a->rc[j] = a->ivr[j] = 1 + (rank + srcs[j]) % 2;
        } else {
            a->rc[j] = a->ivr[j] = 1 + (j + srcs[j]) % 2;
        }
        a->rd[j] = a->ird[j] = 64 + (nin - 1 - j) * SLOT;
        if (c == C_ALLTOALLV)
            a->ird[j] = 2 + 3 * (nin - 1 - j); /* extents of rt[0] (32 bytes) */
        if (c == C_LONGV)
            a->ird[j] = 1 + 3 * (nin - 1 - j); /* extents of lvr (280 bytes) */
        if (srcs[j] != MPI_PROC_NULL) {
            a->rbytes += (long long)a->rc[j] * (c == C_LONGV ? lvsize : tsize[t]);
            a->rlive++;
            a->rruns += !one_run(c == C_LONGV ? lvr : a->rtv[j], a->rc[j]);
        }
    }
    if (c == C_INPLACE) { /* the receive side's blocks go out too */
        a->sbytes = a->rbytes;
        a->slive = a->rlive;
        a->sruns = a->rruns;
    }
}

/* The persistent request of case c (made once, before the counters are
   read: the _init call reads the inputs in too, as MPICH may do its local
   part there). */
static int call_init(int c, MPI_Comm comm, args_t *a, char *s, char *r, MPI_Request *preq)
{
    if (c != C_PNEIGHBOR)
        return MPI_SUCCESS;
    return MPI_Neighbor_alltoallw_init(s, a->sc, a->sd, a->stv, r, a->rc, a->rd, a->rtv, comm,
                                       MPI_INFO_NULL, preq);
}

/* Run case c once on (s, r); returns MPI's error code. */
static int call(int c, MPI_Comm comm, args_t *a, char *s, char *r, MPI_Request *preq)
{
    MPI_Request q;
    int rc;
    switch (c) {
    case C_NEIGHBOR:
    case C_CART:
        return MPI_Neighbor_alltoallw(s, a->sc, a->sd, a->stv, r, a->rc, a->rd, a->rtv, comm);
    case C_INEIGHBOR:
        rc = MPI_Ineighbor_alltoallw(s, a->sc, a->sd, a->stv, r, a->rc, a->rd, a->rtv, comm, &q);
        return rc == MPI_SUCCESS ? MPI_Wait(&q, MPI_STATUS_IGNORE) : rc;
    case C_PNEIGHBOR:
        rc = MPI_Start(preq);
        return rc == MPI_SUCCESS ? MPI_Wait(preq, MPI_STATUS_IGNORE) : rc;
    case C_ALLTOALLW:
        return MPI_Alltoallw(s, a->ivs, a->isd, a->stv, r, a->ivr, a->ird, a->rtv, comm);
    case C_INPLACE:
        return MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, r, a->ivr, a->ird, a->rtv, comm);
    case C_ALLTOALLV:
        return MPI_Alltoallv(s, a->ivs, a->isd, st[0], r, a->ivr, a->ird, rt[0], comm);
    case C_LONGV:
        return MPI_Alltoallv(s, a->ivs, a->isd, lvs, r, a->ivr, a->ird, lvr, comm);
    }
    return MPI_ERR_ARG;
}

/* Case c with the send side on the device (sdev) and the receive side
   (rdev), twice (a persistent request is started twice), against the host
   run. */
static void run_case(int c, MPI_Comm comm, int sdev, int rdev)
{
    args_t a;
    args_make(c, comm, &a);
    if (c == C_INPLACE)
        sdev = 0;
    static unsigned char want_s[BUF], want_r[BUF], got[BUF];
    /* the reference: host buffers */
    cl_mem hm;
    char *hs = buf_new(1 + rank, 0, &hm), *hr = buf_new(100 + rank, 0, &hm);
    MPI_Request hq = MPI_REQUEST_NULL, dq = MPI_REQUEST_NULL;
    CHECK(call_init(c, comm, &a, hs, hr, &hq) == MPI_SUCCESS);
    for (int it = 0; it < 2; it++)
        CHECK(call(c, comm, &a, hs, hr, &hq) == MPI_SUCCESS);
    if (hq != MPI_REQUEST_NULL)
        MPI_Request_free(&hq);
    memcpy(want_s, hs, BUF);
    memcpy(want_r, hr, BUF);
    free(hs);
    free(hr);

    cl_mem sm, rm;
    char *s = buf_new(1 + rank, sdev, &sm), *r = buf_new(100 + rank, rdev, &rm);
    CHECK(call_init(c, comm, &a, s, r, &dq) == MPI_SUCCESS);
    for (int it = 0; it < 2; it++) {
        snprintf(where, sizeof(where), "%s, send %s, receive %s, call %d", cname[c],
                 sdev ? "device" : "host", rdev ? "device" : "host", it);
        counters_t c0 = counters();
        CHECK(call(c, comm, &a, s, r, &dq) == MPI_SUCCESS);
        counters_t c1 = counters();
        long long launches = (long long)(c1.launches - c0.launches);
        long long pb = (long long)(c1.pbytes - c0.pbytes), ub = (long long)(c1.ubytes - c0.ubytes);
        /* one pack launch for every outgoing block, one unpack launch for
           every incoming block; a side whose blocks move no byte, or one
           contiguous run, launches nothing */
        int want_pack = (c == C_INPLACE ? rdev : sdev) && a.sbytes > 0;
        int want_unpack = rdev && a.rbytes > 0;
        /* the sides of two or more blocks, which choose fused or per block */
        long long multi = (want_pack && a.slive > 1) + (want_unpack && a.rlive > 1);
        long long fused = (long long)(c1.fused - c0.fused);
        long long blocks = (long long)(c1.blocks - c0.blocks);
        int want = want_pack + want_unpack;
        if (mode == M_BLOCKS) /* a launch per block of more than one run */
            want = (want_pack ? a.sruns : 0) + (want_unpack ? a.rruns : 0);
        if (mode == M_SHARED && c == C_LONGV)
            want = 0; /* copies, no kernel */
        if (mode == M_MEASURE) {
            /* the first calls of a side: the model's way, then the other */
            CHECK(fused + blocks == multi);
            if (c == C_LONGV && sdev && rdev && first_run[c])
                CHECK(it == 0 ? blocks == multi : fused == multi);
        } else if (mode == M_SHARED && c != C_LONGV) {
            CHECK(fused + blocks == multi);
        } else if (c == C_CART && mode == M_FUSED) {
            CHECK(launches <= want);
        } else {
            CHECK(launches == want);
            if (launches != want && errs < 20)
                fprintf(stderr, "rank %d [%s]: %lld launches, want %d\n", rank, where, launches,
                        want);
        }
        if (mode == M_FUSED)
            CHECK(fused == multi && blocks == 0);
        else if (mode != M_MEASURE)
            CHECK((c == C_LONGV || mode == M_BLOCKS) ? blocks == multi && fused == 0
                                                     : fused + blocks == multi);
        CHECK(pb == (want_pack ? a.sbytes : 0));
        CHECK(ub == (want_unpack ? a.rbytes : 0));
    }
    if (dq != MPI_REQUEST_NULL)
        MPI_Request_free(&dq);
    if (sdev && rdev)
        first_run[c] = 0;
    buf_get(s, sdev, got);
    CHECK(!memcmp(got, want_s, BUF));
    buf_get(r, rdev, got);
    CHECK(!memcmp(got, want_r, BUF));
    if (memcmp(got, want_r, BUF) && errs < 20) {
        for (int i = 0; i < BUF; i++)
            if (got[i] != want_r[i]) {
                fprintf(stderr, "rank %d [%s]: receive byte %d is %d, want %d\n", rank, where, i,
                        got[i], want_r[i]);
                break;
            }
    }
    buf_del(s, sdev, sm);
    buf_del(r, rdev, rm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    cl_device_id dev;
    if (MPIX_Gpu_get_device(&ctx, &dev, NULL) != MPI_SUCCESS) {
        fprintf(stderr, "coll_fused: no device\n");
        MPI_Finalize();
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "blocks"))
        mode = M_BLOCKS;
    else if (argc > 1 && !strcmp(argv[1], "shared"))
        mode = M_SHARED;
    else if (argc > 1 && !strcmp(argv[1], "measure"))
        mode = M_MEASURE;
    if (wsize > K || mpit_read_init()) {
        fprintf(stderr, "coll_fused: needs at most %d ranks and MPI_T\n", K);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    types_make();
    /* a graph of K edges each way: out to rank + 1 + j, in from rank - 1 - j */
    int srcs[K], dsts[K];
    for (int j = 0; j < K; j++) {
        dsts[j] = (rank + 1 + j) % wsize;
        srcs[j] = ((rank - 1 - j) % wsize + wsize) % wsize;
    }
    MPI_Comm dist, cart;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, K, srcs, MPI_UNWEIGHTED, K, dsts, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &dist);
    int dims[1] = {wsize}, per[1] = {0};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &cart);
    MPI_Comm_set_errhandler(dist, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    for (int c = 0; c < C_N; c++) {
        MPI_Comm comm = c == C_CART ? cart : c >= C_ALLTOALLW ? MPI_COMM_WORLD : dist;
        for (int sides = 0; sides < 3; sides++)
            run_case(c, comm, sides != 2, sides != 1);
    }
    MPI_Comm_free(&dist);
    MPI_Comm_free(&cart);
    for (int i = 0; i < K; i++) {
        MPI_Type_free(&st[i]);
        MPI_Type_free(&rt[i]);
    }
    MPI_Type_free(&lvs);
    MPI_Type_free(&lvr);
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    mpit_read_finalize();
    MPI_Finalize();
    if (rank == 0)
        printf("coll_fused: %s (%d errors)\n", all ? "FAIL" : "ok", all);
    return all ? 1 : 0;
}
