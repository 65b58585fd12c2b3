/* MPI_Isendrecv and MPI_Isendrecv_replace (MPI 4.0) and their _c forms on
   2 ranks: every pair of host and device buffers on the two sides, a
   contiguous and a strided type, short messages and long ones (above the
   first piece, and above MPIGPU_P2P_AUTO_MIN, so that messages between two
   processes of a node go in pieces); each rank exchanges with the other.
   Checks the data, every byte outside it, the status (source, tag, count)
   and that the call returned before its peer posted anything (a request
   pending until the peer's barrier).  Then the errors: a NULL request, a
   device buffer outside its allocation. */
#include <stdint.h>

#include "p2p_common.h"

static int rank, peer;

/* n ints, or the ints every other element of 2n (vector). */
static MPI_Datatype mk_type(int strided)
{
    MPI_Datatype t;
    if (!strided)
        return MPI_INT;
    MPI_Type_vector(1, 1, 2, MPI_INT, &t); /* one int in an extent of one */
    MPI_Datatype r;
    MPI_Type_create_resized(t, 0, 2 * sizeof(int), &r);
    MPI_Type_free(&t);
    MPI_Type_commit(&r);
    return r;
}

static int val(int who, int i, int salt)
{
    return who * 1000003 + i * 7 + salt;
}

/* A buffer of words ints, host or device, all poisoned. */
static int *ibuf_make(int dev, size_t words)
{
    int *p = p2p_ints_make(dev, words), *h = malloc(words * sizeof(int));
    for (size_t i = 0; i < words; i++)
        h[i] = -1;
    if (p)
        p2p_ints_put(dev, p, h, words);
    free(h);
    return p;
}

/* One exchange: sdev/rdev the kinds of this rank's two buffers, n
   elements, replace: MPI_Isendrecv_replace, large: the _c form. */
static void exchange(int sdev, int rdev, int strided, int n, int replace, int large)
{
    MPI_Datatype t = mk_type(strided);
    size_t words = (size_t)n * (strided ? 2 : 1) + 16;
    int *h = malloc(words * sizeof(int)), *g = malloc(words * sizeof(int));
    int *sb = ibuf_make(sdev, words), *rb = replace ? sb : ibuf_make(rdev, words);
    int salt = n + 31 * strided + 7 * replace;
    snprintf(where, sizeof(where), "rank %d %s%s send %s recv %s %s n=%d", rank,
             replace ? "Isendrecv_replace" : "Isendrecv", large ? "_c" : "",
             sdev ? "device" : "host", rdev ? "device" : "host", strided ? "vector" : "contig", n);
    for (size_t i = 0; i < words; i++)
        h[i] = -1;
    for (int i = 0; i < n; i++)
        h[8 + (strided ? 2 * i : i)] = val(rank, i, salt);
    p2p_ints_put(sdev, sb, h, words);

    MPI_Request r = MPI_REQUEST_NULL;
    int rc;
    int tag = 40 + replace;
    if (replace)
        rc = large ? MPI_Isendrecv_replace_c(sb + 8, n, t, peer, tag, peer, tag, MPI_COMM_WORLD, &r)
                   : MPI_Isendrecv_replace(sb + 8, n, t, peer, tag, peer, tag, MPI_COMM_WORLD, &r);
    else if (large)
        rc = MPI_Isendrecv_c(sb + 8, n, t, peer, tag, rb + 8, n, t, peer, tag, MPI_COMM_WORLD, &r);
    else
        rc = MPI_Isendrecv(sb + 8, n, t, peer, tag, rb + 8, n, t, peer, tag, MPI_COMM_WORLD, &r);
    CHECK(rc == MPI_SUCCESS && r != MPI_REQUEST_NULL);
    /* The peer has not posted yet (rank 1 waits at the barrier first):
       the call returned without waiting for it. */
    if (rank == 0)
        MPI_Barrier(MPI_COMM_WORLD);
    int flag = 0;
    MPI_Status st;
    if (rank == 1) {
        CHECK(MPI_Test(&r, &flag, &st) == MPI_SUCCESS);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (!flag)
        CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS);
    CHECK(r == MPI_REQUEST_NULL);
    int cnt = -1;
    MPI_Get_count(&st, t, &cnt);
    CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == tag && cnt == n);

    p2p_ints_get(rdev, g, rb, words);
    int bad = 0;
    for (size_t i = 0; i < words; i++) {
        int want = -1;
        size_t k = i - 8;
        if (i >= 8 && (!strided || k % 2 == 0) && (strided ? k / 2 : k) < (size_t)n)
            want = val(peer, (int)(strided ? k / 2 : k), salt);
        else if (replace)
            want = h[i]; /* the send buffer's own bytes between the elements */
        if (g[i] != want && bad++ < 3)
            fprintf(stderr, "%s: word %zu is %d, want %d\n", where, i, g[i], want);
    }
    CHECK(bad == 0);
    if (!replace)
        p2p_ints_free(rdev, rb);
    p2p_ints_free(sdev, sb);
    free(h);
    free(g);
    if (strided)
        MPI_Type_free(&t);
}

static void errors(void)
{
    int *d = NULL, x = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPIX_Gpu_malloc(64, (void **)&d) == MPI_SUCCESS);
    snprintf(where, sizeof(where), "rank %d errors", rank);
    int rc = MPI_Isendrecv(d, 4, MPI_INT, peer, 5, &x, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, NULL);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG); /* as MPICH reports a NULL request */
    /* 100 ints from a 64-byte allocation: refused, nothing posted. */
    MPI_Request r = MPI_REQUEST_NULL;
    rc = MPI_Isendrecv(d, 100, MPI_INT, peer, 6, &x, 1, MPI_INT, peer, 6, MPI_COMM_WORLD, &r);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER && r == MPI_REQUEST_NULL);
    rc = MPI_Isendrecv_replace(d, 100, MPI_INT, peer, 7, peer, 7, MPI_COMM_WORLD, &r);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER && r == MPI_REQUEST_NULL);
    MPIX_Gpu_free(d);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    int size = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "p2p_isendrecv: needs 2 ranks\n");
        MPI_Finalize();
        return 77;
    }
    peer = 1 - rank;
    /* Short, above the first piece (64 KiB), above AUTO_MIN (1 MiB). */
    const int ns[] = {5, 40000, 300000};
    int cases = 0;
    for (int k = 0; k < 3; k++)
        for (int strided = 0; strided < 2; strided++)
            for (int kinds = 0; kinds < 4; kinds++) {
                int sdev = kinds & 1, rdev = (kinds >> 1) & 1;
                exchange(sdev, rdev, strided, ns[k], 0, (kinds + k) % 2);
                cases++;
                if (sdev == rdev) {
                    exchange(sdev, sdev, strided, ns[k], 1, (kinds + k + 1) % 2);
                    cases++;
                }
            }
    errors();
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("p2p_isendrecv: %d cases per rank\n%s\n", cases,
               all ? "Errors found" : " No Errors");
    MPI_Finalize();
    return all != 0;
}
