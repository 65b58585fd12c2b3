/* Contiguous data never launches a kernel (issue 31): rank 0 sends to rank 1
   contiguous data of every shape the library should see as one run (bytes,
   ints, a contiguous derived type, a struct whose fields abut, a vector
   whose stride is its block, an indexed type of abutting blocks), under every
   pack method (the datatype attribute: auto, kernel, copy, host), device to
   device, device to host and host to device, blocking and nonblocking, at
   sizes below and above MPIGPU_P2P_FIRST, MPIGPU_P2P_AUTO_MIN and one
   staging chunk (the testlist runs it under each protocol).  Rank 1 checks
   every byte and the bytes around them; after each case both ranks read the
   library's MPI_T counters (mpit_read.c): mpigpu_kernel_launches must not
   move, nor may the host method's CPU walk (mpigpu_pack_calls_host) or the
   kernel method (mpigpu_pack_calls_kernel) run.  At the end the protocol
   counters must show that the protocols this run's settings choose did run
   (so that the checks above covered them). */
#include <stdint.h>

#include "mpit_read.h"
#include "p2p_common.h"

enum { T_BYTE, T_INT, T_CONTIG, T_STRUCT, T_VECTOR, T_INDEXED, NT };
static const char *const cnames[NT] = {"byte", "int", "contig", "struct", "vector", "indexed"};
static MPI_Datatype ctypes[NT];
static int csize[NT]; /* packed bytes of one instance */

#define NM 4
static const char *const mnames[NM] = {"auto", "kernel", "copy", "host"};
static const int mvalues[NM] = {MPIX_GPU_PACK_AUTO, MPIX_GPU_PACK_KERNEL, MPIX_GPU_PACK_COPY,
                                MPIX_GPU_PACK_HOST};

static int rank;

static void ctypes_create(void)
{
    ctypes[T_BYTE] = MPI_BYTE;
    ctypes[T_INT] = MPI_INT;
    MPI_Type_contiguous(4, MPI_DOUBLE, &ctypes[T_CONTIG]);
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {0, 8, 12};
    MPI_Datatype st[3] = {MPI_DOUBLE, MPI_INT, MPI_INT};
    MPI_Type_create_struct(3, bl, disp, st, &ctypes[T_STRUCT]);
    MPI_Type_vector(2, 3, 3, MPI_INT, &ctypes[T_VECTOR]);
    int ibl[2] = {2, 3}, idisp[2] = {0, 2};
    MPI_Type_indexed(2, ibl, idisp, MPI_INT, &ctypes[T_INDEXED]);
    for (int i = T_CONTIG; i < NT; i++)
        MPI_Type_commit(&ctypes[i]);
    for (int i = 0; i < NT; i++) {
        MPI_Aint lb, ext;
        MPI_Type_size(ctypes[i], &csize[i]);
        MPI_Type_get_extent(ctypes[i], &lb, &ext);
        if (ext != csize[i] || lb != 0) { /* the test's premise: no gaps between instances */
            fprintf(stderr, "p2p_contig: type %s has extent %ld for size %d\n", cnames[i],
                    (long)ext, csize[i]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

static void ctypes_free(void)
{
    for (int i = T_CONTIG; i < NT; i++)
        MPI_Type_free(&ctypes[i]);
}

/* A duplicate of t that carries method m (auto: no attribute). */
static MPI_Datatype with_method(MPI_Datatype t, int m)
{
    MPI_Datatype d;
    int kv = MPI_KEYVAL_INVALID;
    MPI_Type_dup(t, &d);
    if (mvalues[m] != MPIX_GPU_PACK_AUTO) {
        CHECK(MPIX_Gpu_pack_keyval(&kv) == MPI_SUCCESS);
        CHECK(MPI_Type_set_attr(d, kv, (void *)(intptr_t)mvalues[m]) == MPI_SUCCESS);
    }
    return d;
}

/* The counters that must not move, summed over both ranks. */
typedef struct moved {
    unsigned long long launches, kernel_calls, host_calls, copy_calls;
} moved_t;

static moved_t counters(void)
{
    unsigned long long v[4] = {mpit_value("mpigpu_kernel_launches"),
                               mpit_value("mpigpu_pack_calls_kernel"),
                               mpit_value("mpigpu_pack_calls_host"),
                               mpit_value("mpigpu_pack_calls_copy")},
                       sum[4];
    MPI_Allreduce(v, sum, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return (moved_t){sum[0], sum[1], sum[2], sum[3]};
}

static void one(int ti, int m, int bytes, int sdev, int rdev, int nonblocking)
{
    static int tag = 1;
    int count = bytes / csize[ti];
    MPI_Datatype t = with_method(ctypes[ti], m);
    size_t n = buf_size(t, count);
    unsigned dseed = (unsigned)(ti * 3 + m + bytes), pseed = 100 + (unsigned)ti;
    tag = tag % 30000 + 1;
    snprintf(where, sizeof(where), "%s x%d (%d B) method %s %s->%s %s", cnames[ti], count,
             count * csize[ti], mnames[m], sdev ? "dev" : "host", rdev ? "dev" : "host",
             nonblocking ? "Isend/Irecv" : "Send/Recv");
    moved_t before = counters();
    if (rank == 0) {
        unsigned char *s = buf_make(n, dseed, sdev);
        MPI_Request r;
        if (nonblocking) {
            CHECK(MPI_Isend(s + ORIGIN, count, t, 1, tag, MPI_COMM_WORLD, &r) == MPI_SUCCESS);
            CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        } else {
            CHECK(MPI_Send(s + ORIGIN, count, t, 1, tag, MPI_COMM_WORLD) == MPI_SUCCESS);
        }
        buf_free(s, sdev);
    } else if (rank == 1) {
        unsigned char *r = buf_make(n, pseed, rdev), *want = expected(t, count, dseed, pseed);
        MPI_Status st;
        MPI_Request rq;
        int got = -1;
        if (nonblocking) {
            CHECK(MPI_Irecv(r + ORIGIN, count, t, 0, tag, MPI_COMM_WORLD, &rq) == MPI_SUCCESS);
            CHECK(MPI_Wait(&rq, &st) == MPI_SUCCESS);
        } else {
            CHECK(MPI_Recv(r + ORIGIN, count, t, 0, tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        }
        CHECK(buf_equal(r, want, n, rdev));
        MPI_Get_count(&st, t, &got);
        CHECK(got == count);
        free(want);
        buf_free(r, rdev);
    }
    moved_t after = counters();
    CHECK(after.launches == before.launches);
    CHECK(after.kernel_calls == before.kernel_calls);
    CHECK(after.host_calls == before.host_calls);
    /* Each device side moved its data once through the engine, as a copy
       (a chunked message in several pieces counts one call per piece). */
    CHECK(after.copy_calls - before.copy_calls >= (unsigned long long)(sdev + rdev));
    MPI_Type_free(&t);
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size != 2) {
        fprintf(stderr, "p2p_contig needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (mpit_read_init()) {
        fprintf(stderr, "p2p_contig: MPI_T does not start\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    ctypes_create();
    /* Packed sizes around the settings of the testlist's runs: below the
       first piece (8K there), between it and MPIGPU_P2P_AUTO_MIN (32K),
       above both, and above one staging chunk (256K of a 1M pool). */
    long long first = p2p_first_len();
    const int sizes[] = {64, 4000, 20000, 48000, 300000};
    const int nsizes = sizeof(sizes) / sizeof(sizes[0]);
    unsigned long long ops0[4] = {
        mpit_value("mpigpu_p2p_ops_plain"), mpit_value("mpigpu_p2p_ops_chunked"),
        mpit_value("mpigpu_p2p_ops_lane"), mpit_value("mpigpu_p2p_ops_rest")};
    moved_t start = counters();
    int cases = 0, pieces = 0;
    for (int ti = 0; ti < NT; ti++)
        for (int m = 0; m < NM; m++)
            for (int si = 0; si < nsizes; si++)
                for (int sides = 0; sides < 3; sides++)
                    for (int nb = 0; nb < 2; nb++) {
                        int sdev = sides != 2, rdev = sides != 1;
                        int bytes = sizes[si] / csize[ti] * csize[ti];
                        one(ti, m, bytes, sdev, rdev, nb);
                        pieces += sdev && p2p_in_pieces(bytes);
                        cases++;
                    }
    moved_t end = counters();
    snprintf(where, sizeof(where), "whole run");
    CHECK(end.launches == start.launches);
    unsigned long long ops[4] = {mpit_value("mpigpu_p2p_ops_plain") - ops0[0],
                                 mpit_value("mpigpu_p2p_ops_chunked") - ops0[1],
                                 mpit_value("mpigpu_p2p_ops_lane") - ops0[2],
                                 mpit_value("mpigpu_p2p_ops_rest") - ops0[3]};
    MPI_Allreduce(MPI_IN_PLACE, ops, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    /* The protocols ran that the settings choose: plain messages always;
       messages in pieces exactly when the settings split some of them. */
    CHECK(ops[0] > 0);
    if (pieces)
        CHECK(ops[1] + ops[2] + ops[3] > 0);
    else
        CHECK(ops[1] + ops[2] + ops[3] == 0);
    ctypes_free();
    mpit_read_finalize();
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf(" No Errors (%d cases, %d sent in pieces; first piece %lld B; protocol ops "
                   "plain %llu chunked %llu lane %llu rest %llu)\n",
                   cases, pieces, first, ops[0], ops[1], ops[2], ops[3]);
        else
            printf(" Found %d errors\n", all);
    }
    MPI_Finalize();
    return all != 0;
}
