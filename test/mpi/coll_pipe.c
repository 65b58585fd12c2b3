/* Pipelined collectives (src/coll/pipe.c): blocking MPI_Bcast, MPI_Allreduce,
   MPI_Reduce, MPI_Gather, MPI_Scatter, MPI_Allgather and MPI_Alltoall of at
   least MPIGPU_COLL_PIPELINE_MIN bytes, in chunks of
   MPIGPU_COLL_PIPELINE_CHUNK (the testlist sets both small, and
   MPIGPU_FORCE_PIPELINE=1 so that PoCL's buffers do not share host memory,
   as on a GPU).  Every call runs with its buffers on the device on some
   processes and in host memory on the others (none, all, the first, the
   last, every other), against the same call on host buffers everywhere,
   byte for byte over the whole buffer (bytes between a vector's blocks and
   a non-root's insignificant receive buffer included); every device buffer
   has guard bytes around it that must stay as they were.  Sizes: under the
   threshold, and several chunks with an uneven last one.  MPI_IN_PLACE
   (Allreduce, Gather, Scatter, Allgather, Alltoall; Reduce at root 0: MPICH
   4.0.2 faults on host buffers at another root), a user-defined operation, a contiguous derived
   type, and a vector type on some processes against plain ints on the others (MPI_Bcast: only the
   signatures agree; that call cannot pipeline).  The MPI_T counter mpigpu_coll_pipelined must move
   by one on every process, host buffers included, for a call that should pipeline, and stay for one
   that should not (all host, under the threshold, a non-contiguous side,
   a call that combines on the device instead, the block-wise calls unless
   MPIGPU_COLL_PIPELINE=all), so that the test fails if the pipeline
   silently does not run or runs where it must not.

   argv[1] "quick": fewer placements. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpigpu.h"
#include "mpit_read.h"

static int errs, rank, wsize, quick, force, blockwise;
static long long pmin, pchunk, redmin;
static char where[256];
#define CHECK(c_)                                                                                  \
    do {                                                                                           \
        if (!(c_) && errs++ < 20)                                                                  \
            fprintf(stderr, "rank %d [%s]: check failed: %s (line %d)\n", rank, where, #c_,        \
                    __LINE__);                                                                     \
    } while (0)

#define GUARD 64

enum { K_BCAST, K_ALLREDUCE, K_REDUCE, K_GATHER, K_SCATTER, K_ALLGATHER, K_ALLTOALL };
static const char *kname[] = {"Bcast",   "Allreduce", "Reduce",  "Gather",
                              "Scatter", "Allgather", "Alltoall"};
#define BLOCKS(k) ((k) >= K_GATHER)                  /* one block per process */
enum { T_INT, T_BYTE, T_DOUBLE, T_TRIPLE, T_MIXED }; /* T_MIXED: vector on even ranks */
static const char *tname[] = {"int", "byte", "double", "3 ints", "vector|int"};
static MPI_Datatype triple, strided;
static MPI_Op user_sum;

static void usum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* A call: kind, element type, elements (ints, bytes, doubles, triples),
   root, in place, user op. */
typedef struct pcase {
    int k, t;
    long n;
    int root, inplace, user;
} pcase_t;

/* This rank's datatype, count and buffer bytes for c; elem: bytes of one
   element of the data. */
static void shape(const pcase_t *c, MPI_Datatype *dt, int *count, size_t *span, size_t *bytes)
{
    switch (c->t) {
    case T_BYTE:
        *dt = MPI_BYTE, *count = (int)c->n, *span = (size_t)c->n;
        break;
    case T_DOUBLE:
        *dt = MPI_DOUBLE, *count = (int)c->n, *span = (size_t)c->n * 8;
        break;
    case T_TRIPLE:
        *dt = triple, *count = (int)c->n, *span = (size_t)c->n * 12;
        break;
    case T_MIXED:
        if (rank % 2 == 0) {
            *dt = strided, *count = 1, *span = (size_t)c->n * 8;
            break;
        }
        /* fall through */
    default:
        *dt = MPI_INT, *count = (int)c->n, *span = (size_t)c->n * 4;
        break;
    }
    if (BLOCKS(c->k))
        *span *= (size_t)wsize; /* room for a block of every process, both sides */
    *bytes = c->t == T_BYTE     ? (size_t)c->n
             : c->t == T_DOUBLE ? (size_t)c->n * 8
             : c->t == T_TRIPLE ? (size_t)c->n * 12
                                : (size_t)c->n * 4;
}

/* Fill the host bytes of rank r's buffer b (s: 0 send, 1 receive). */
static void fill(const pcase_t *c, unsigned char *b, size_t span, int r, int s)
{
    for (size_t i = 0; i < span; i++)
        b[i] = (unsigned char)(0xE0 + s);
    int input = c->k == K_BCAST ? r == c->root : (s == 0 || c->inplace);
    if (!input)
        return;
    if (BLOCKS(c->k)) {
        /* every block of the side (MPI reads the ones it sends) */
        for (size_t i = 0; i < span; i++)
            b[i] = (unsigned char)(r * 31 + i * 7 + s);
        return;
    }
    if (c->t == T_DOUBLE) {
        for (long i = 0; i < c->n; i++)
            ((double *)b)[i] = (double)((r * 13 + i * 5) % 29);
    } else if (c->t == T_BYTE) {
        for (long i = 0; i < c->n; i++)
            b[i] = (unsigned char)(r * 7 + i * 3);
    } else if (c->t == T_MIXED && r % 2 == 0) {
        for (long i = 0; i < c->n; i++)
            ((int *)b)[2 * i] = (int)((r * 13 + i * 5) % 1000);
    } else {
        long m = c->t == T_TRIPLE ? 3 * c->n : c->n;
        for (long i = 0; i < m; i++)
            ((int *)b)[i] = (int)((r * 13 + i * 5) % 1000);
    }
}

static void *dev_new(const unsigned char *h, size_t span)
{
    size_t all = span + 2 * GUARD;
    unsigned char *g = malloc(all);
    memset(g, 0xA5, all);
    memcpy(g + GUARD, h, span);
    void *d = NULL;
    MPIX_Gpu_malloc(all, &d);
    MPIX_Gpu_memcpy(d, g, all);
    free(g);
    return (char *)d + GUARD;
}

/* The device bytes back into h; the guards checked; freed. */
static void dev_end(void *d, unsigned char *h, size_t span)
{
    size_t all = span + 2 * GUARD;
    unsigned char *g = malloc(all);
    char *base = (char *)d - GUARD;
    MPIX_Gpu_memcpy(g, base, all);
    int ok = 1;
    for (size_t i = 0; i < GUARD; i++)
        ok &= g[i] == 0xA5 && g[GUARD + span + i] == 0xA5;
    CHECK(ok);
    memcpy(h, g + GUARD, span);
    free(g);
    MPIX_Gpu_free(base);
}

/* Run c with this rank's buffers on the device when dev; the send and
   receive buffers' final bytes into out[0], out[1]. */
static int run(const pcase_t *c, int dev, unsigned char *out[2], size_t span)
{
    MPI_Datatype dt;
    int count;
    size_t sp, bytes;
    shape(c, &dt, &count, &sp, &bytes);
    unsigned char *h[2] = {malloc(span + 1), malloc(span + 1)};
    void *b[2];
    for (int s = 0; s < 2; s++) {
        fill(c, h[s], span, rank, s);
        b[s] = dev ? dev_new(h[s], span) : h[s];
    }
    MPI_Op op = c->user ? user_sum : MPI_SUM;
    int rc = MPI_SUCCESS;
    const void *sb = c->inplace ? MPI_IN_PLACE : b[0];
    switch (c->k) {
    case K_BCAST:
        rc = MPI_Bcast(b[1], count, dt, c->root, MPI_COMM_WORLD);
        break;
    case K_ALLREDUCE:
        rc = MPI_Allreduce(sb, b[1], count, dt, op, MPI_COMM_WORLD);
        break;
    case K_REDUCE:
        if (rank != c->root)
            sb = b[0]; /* MPI_IN_PLACE only at the root */
        rc = MPI_Reduce(sb, b[1], count, dt, op, c->root, MPI_COMM_WORLD);
        break;
    case K_GATHER:
        if (rank != c->root)
            sb = b[0];
        rc = MPI_Gather(sb, count, dt, b[1], count, dt, c->root, MPI_COMM_WORLD);
        break;
    case K_SCATTER:
        /* in place: the root's receive buffer */
        rc = MPI_Scatter(b[0], count, dt, c->inplace && rank == c->root ? MPI_IN_PLACE : b[1],
                         count, dt, c->root, MPI_COMM_WORLD);
        break;
    case K_ALLGATHER:
        rc = MPI_Allgather(sb, count, dt, b[1], count, dt, MPI_COMM_WORLD);
        break;
    default:
        rc = MPI_Alltoall(sb, count, dt, b[1], count, dt, MPI_COMM_WORLD);
        break;
    }
    for (int s = 0; s < 2; s++) {
        if (dev)
            dev_end(b[s], h[s], span);
        memcpy(out[s], h[s], span);
        free(h[s]);
    }
    return rc;
}

/* Whether c should pipeline with placement mask (bit r: rank r's buffers
   on the device). */
static int expect_pipe(const pcase_t *c, unsigned mask)
{
    MPI_Datatype dt;
    int count;
    size_t span, bytes;
    shape(c, &dt, &count, &span, &bytes);
    if (!force || !mask)
        return 0;
    if (c->t == T_MIXED && wsize > 0) /* rank 0 has the vector */
        return 0;
    if (BLOCKS(c->k)) {
        /* bytes of each block, from the threshold on all of them; only
           under MPIGPU_COLL_PIPELINE=all */
        if (!blockwise || (long long)bytes * wsize < pmin)
            return 0;
        return ((long long)bytes + pchunk - 1) / pchunk >= 2;
    }
    if ((long long)bytes < pmin)
        return 0;
    long long unit = c->k == K_BCAST ? 1 : c->t == T_TRIPLE ? 12 : c->t == T_DOUBLE ? 8 : 4;
    long long per = pchunk / unit > 0 ? pchunk / unit : 1, total = (long long)bytes / unit;
    if ((total + per - 1) / per < 2)
        return 0;
    /* every process's buffers on the device, a basic type, a built-in
       operation, from MPIGPU_COLL_REDUCE_MIN: it combines on the device */
    unsigned all = wsize >= 32 ? ~0u : (1u << wsize) - 1;
    if (c->k != K_BCAST && mask == all && !c->user && c->t != T_TRIPLE &&
        (long long)bytes >= redmin)
        return 0;
    return 1;
}

static void one(const pcase_t *c, unsigned mask)
{
    MPI_Datatype dt;
    int count;
    size_t span, bytes;
    shape(c, &dt, &count, &span, &bytes);
    snprintf(where, sizeof where, "%s %s n=%ld root=%d%s%s mask=%x", kname[c->k], tname[c->t], c->n,
             c->root, c->inplace ? " in place" : "", c->user ? " user op" : "", mask);
    if (getenv("COLL_PIPE_TRACE") && rank == 0)
        fprintf(stderr, "%s\n", where);
    unsigned char *ref[2] = {malloc(span + 1), malloc(span + 1)};
    unsigned char *got[2] = {malloc(span + 1), malloc(span + 1)};
    unsigned long long p0 = mpit_value("mpigpu_coll_pipelined");
    CHECK(run(c, 0, ref, span) == MPI_SUCCESS);
    unsigned long long p1 = mpit_value("mpigpu_coll_pipelined");
    CHECK(p1 == p0); /* host buffers everywhere: never */
    CHECK(run(c, (mask >> rank) & 1, got, span) == MPI_SUCCESS);
    unsigned long long p2 = mpit_value("mpigpu_coll_pipelined");
    CHECK(p2 - p1 == (unsigned long long)expect_pipe(c, mask));
    CHECK(memcmp(ref[0], got[0], span) == 0);
    CHECK(memcmp(ref[1], got[1], span) == 0);
    /* the reference itself: a sum of ints at element 1 (Allreduce; Reduce
       at the root), the root's bytes (Bcast), every process's block
       (Allgather) */
    if (c->t == T_INT && !c->user &&
        (c->k == K_ALLREDUCE || (c->k == K_REDUCE && rank == c->root)) && c->n > 1) {
        long want = 0;
        for (int r = 0; r < wsize; r++)
            want += (r * 13 + 5) % 1000;
        CHECK(((int *)ref[1])[1] == want);
    }
    if (c->k == K_BCAST && c->t == T_INT && c->n > 1)
        CHECK(((int *)ref[1])[1] == (c->root * 13 + 5) % 1000);
    if (c->k == K_ALLGATHER && !c->inplace)
        for (int r = 0; r < wsize; r++)
            CHECK(ref[1][(size_t)r * bytes + 1] == (unsigned char)(r * 31 + 7));
    for (int s = 0; s < 2; s++) {
        free(ref[s]);
        free(got[s]);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    quick = argc > 1 && !strcmp(argv[1], "quick");
    if (mpit_read_init() != 0) {
        fprintf(stderr, "coll_pipe: MPI_T does not start\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    const char *f = getenv("MPIGPU_FORCE_PIPELINE");
    force = f && atoi(f) == 1;
    const char *mode = getenv("MPIGPU_COLL_PIPELINE");
    blockwise = mode && !strcmp(mode, "all");
    if (mode && !strcmp(mode, "off"))
        force = 0; /* nothing pipelines */
    pmin = mpit_setting_bytes("MPIGPU_COLL_PIPELINE_MIN");
    pchunk = mpit_setting_bytes("MPIGPU_COLL_PIPELINE_CHUNK");
    redmin = mpit_setting_bytes("MPIGPU_COLL_REDUCE_MIN");
    if (pmin < 0 || pchunk <= 0 || redmin < 0) {
        fprintf(stderr, "coll_pipe: the settings are not readable through MPI_T\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Type_contiguous(3, MPI_INT, &triple);
    MPI_Type_commit(&triple);
    MPI_Op_create(usum, 1, &user_sum);

    /* elements: under the threshold, and several chunks, the last one
       shorter (the testlist: 16K threshold, 4K chunks) */
    long small = 100, big = 9001;
    MPI_Type_vector((int)big, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    unsigned all = (1u << wsize) - 1, last = 1u << (wsize - 1);
    unsigned masks[] = {0, all, 1, last, 0x5 & all, 0xA & all};
    int nmask = quick ? 4 : 6;
    int L = wsize - 1;
    const pcase_t cases[] = {
        {K_BCAST, T_INT, big, 0, 0, 0},
        {K_BCAST, T_INT, big, L, 0, 0},
        {K_BCAST, T_BYTE, 3 * big + 1, 0, 0, 0},
        {K_BCAST, T_TRIPLE, big / 3, L, 0, 0},
        {K_BCAST, T_INT, small, 0, 0, 0},
        {K_BCAST, T_MIXED, big, 0, 0, 0},
        {K_ALLREDUCE, T_INT, big, 0, 0, 0},
        {K_ALLREDUCE, T_DOUBLE, big, 0, 0, 0},
        {K_ALLREDUCE, T_INT, big, 0, 1, 0},
        {K_ALLREDUCE, T_INT, big, 0, 0, 1},
        {K_ALLREDUCE, T_INT, small, 0, 0, 0},
        {K_REDUCE, T_INT, big, 0, 0, 0},
        {K_REDUCE, T_DOUBLE, big, L, 0, 0},
        {K_REDUCE, T_INT, big, 0, 1, 0},
        {K_REDUCE, T_INT, big, L, 0, 1},
        {K_GATHER, T_INT, big, 0, 0, 0},
        {K_GATHER, T_BYTE, 3 * big + 1, L, 0, 0},
        {K_GATHER, T_TRIPLE, big / 3, 0, 1, 0},
        {K_GATHER, T_INT, small, 0, 0, 0},
        {K_SCATTER, T_INT, big, L, 0, 0},
        {K_SCATTER, T_BYTE, 3 * big + 1, 0, 1, 0},
        {K_ALLGATHER, T_INT, big, 0, 0, 0},
        {K_ALLGATHER, T_TRIPLE, big / 3, 0, 1, 0},
        {K_ALLGATHER, T_INT, small, 0, 0, 0},
        {K_ALLTOALL, T_INT, big, 0, 0, 0},
        {K_ALLTOALL, T_BYTE, 3 * big + 1, 0, 1, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        for (int m = 0; m < nmask; m++)
            if (m < 2 || masks[m] != masks[m - 1])
                one(&cases[i], masks[m]);

    MPI_Op_free(&user_sum);
    MPI_Type_free(&triple);
    MPI_Type_free(&strided);
    int all_errs = 0;
    MPI_Allreduce(&errs, &all_errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    unsigned long long np = mpit_value("mpigpu_coll_pipelined");
    unsigned long long nc = mpit_value("mpigpu_coll_pipelined_chunks");
    mpit_read_finalize();
    if (rank == 0)
        printf("coll_pipe: %llu calls pipelined here, %llu chunks\n", np, nc);
    if (rank == 0)
        printf(all_errs ? "coll_pipe: %d errors\n" : " No Errors\n", all_errs);
    MPI_Finalize();
    return all_errs != 0;
}
