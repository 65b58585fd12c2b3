/* What a pending operation uses stays alive until it completes (issue 22,
   item 9), on 2 ranks.  Freeing the datatype or the communicator of a
   pending operation is legal MPI; the operation must complete normally.

   1. MPI_Irecv into a strided type (every other int), of 32 KiB, 512 KiB
      and 2 MiB of data, MPI_Type_free before the message is even sent, then
      MPI_Wait: every element checked, and every gap still holding its
      poison, for (host|device) sender x (host|device) receiver.  Other
      types are built and decoded in between, so that freed memory is
      reused.
   2. MPI_Isend from a strided type, freed before MPI_Wait (a long message
      is packed piece by piece after MPI_Isend returned).
   3. MPI_Recv_init and MPI_Send_init of strided types, freed before the
      first MPI_Start; two rounds.
   4. MPI_Irecv and MPI_Isend on a duplicate of MPI_COMM_WORLD, MPI_Comm_free
      before the message is sent and a new communicator made meanwhile
      (which MPICH may give the freed handle): the data arrive, and a
      truncation on a freed communicator still returns MPI_ERR_TRUNCATE. */
#include "p2p_common.h"

static int rank;

static int *ints_make(size_t n, int dev, int seed, int strided)
{
    int *h = malloc(n * sizeof(int));
    for (size_t i = 0; i < n; i++)
        h[i] = strided && (i & 1) ? -1 - (int)i : seed * 7919 + (int)(strided ? i / 2 : i);
    if (!dev)
        return h;
    void *d = NULL;
    MPIX_Gpu_malloc(n * sizeof(int), &d);
    MPIX_Gpu_memcpy(d, h, n * sizeof(int));
    free(h);
    return d;
}

/* Wrong elements of p (n ints; strided: the data in the even ones, the odd
   ones left as poisoned by ints_make(..., poison, 1)). */
static long ints_wrong(const int *p, size_t n, int seed, int strided, int poison)
{
    int *h = malloc(n * sizeof(int));
    long bad = 0;
    MPIX_Gpu_memcpy(h, p, n * sizeof(int));
    for (size_t i = 0; i < n; i++) {
        int want = !strided ? seed * 7919 + (int)i
                   : i & 1  ? -1 - (int)i
                            : seed * 7919 + (int)(i / 2);
        (void)poison;
        bad += h[i] != want;
    }
    free(h);
    if (bad)
        fprintf(stderr, "  [%s] %ld of %zu elements wrong\n", where, bad, n);
    return bad;
}

/* Build, commit, decode (a pack of a device buffer) and free a few types,
   so that memory a freed type's state held is taken again. */
static void churn(void)
{
    void *d = NULL;
    char packed[4096];
    MPIX_Gpu_malloc(4096, &d);
    for (int k = 0; k < 4; k++) {
        MPI_Datatype x;
        int pos = 0;
        MPI_Type_vector(k + 2, 1 + k, 5, k & 1 ? MPI_DOUBLE : MPI_INT, &x);
        MPI_Type_commit(&x);
        MPI_Pack(d, 1, x, packed, sizeof(packed), &pos, MPI_COMM_WORLD);
        MPI_Type_free(&x);
    }
    MPIX_Gpu_free(d);
}

static MPI_Datatype strided(size_t n)
{
    MPI_Datatype t;
    MPI_Type_vector((int)n, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    return t;
}

/* The receiver tells the sender that it freed what it had to. */
static void go_send(int tag)
{
    int go = 1;
    MPI_Send(&go, 1, MPI_INT, 0, tag, MPI_COMM_WORLD);
}

static void go_wait(int tag)
{
    int go = 0;
    MPI_Recv(&go, 1, MPI_INT, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static const size_t lens[3] = {32 << 10, 512 << 10, 2 << 20}; /* bytes of data */

static void test_irecv(void)
{
    int tag = 100;
    for (int li = 0; li < 3; li++)
        for (int sd = 0; sd < 2; sd++)
            for (int rd = 0; rd < 2; rd++, tag += 2) {
                size_t n = lens[li] / sizeof(int);
                snprintf(where, sizeof(where), "Irecv %zu KiB %s->%s, type freed", lens[li] >> 10,
                         sd ? "dev" : "host", rd ? "dev" : "host");
                if (rank == 0) {
                    int *s = ints_make(n, sd, tag, 0);
                    go_wait(tag + 1);
                    CHECK(MPI_Send(s, (int)n, MPI_INT, 1, tag, MPI_COMM_WORLD) == MPI_SUCCESS);
                    buf_free(s, sd);
                } else {
                    int *r = ints_make(2 * n, rd, 0, 1);
                    MPI_Datatype t = strided(n);
                    MPI_Request q;
                    MPI_Status st;
                    int got = -1;
                    CHECK(MPI_Irecv(r, 1, t, 0, tag, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
                    CHECK(MPI_Type_free(&t) == MPI_SUCCESS);
                    churn();
                    go_send(tag + 1);
                    CHECK(MPI_Wait(&q, &st) == MPI_SUCCESS);
                    MPI_Get_count(&st, MPI_INT, &got);
                    CHECK(got == (int)n);
                    CHECK(ints_wrong(r, 2 * n, tag, 1, 0) == 0);
                    buf_free(r, rd);
                }
            }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_isend(void)
{
    int tag = 200;
    for (int li = 0; li < 3; li++)
        for (int sd = 0; sd < 2; sd++, tag += 2) {
            size_t n = lens[li] / sizeof(int);
            snprintf(where, sizeof(where), "Isend %zu KiB %s, type freed", lens[li] >> 10,
                     sd ? "dev" : "host");
            if (rank == 0) {
                int *s = ints_make(2 * n, sd, tag, 1);
                MPI_Datatype t = strided(n);
                MPI_Request q;
                CHECK(MPI_Isend(s, 1, t, 1, tag, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
                CHECK(MPI_Type_free(&t) == MPI_SUCCESS);
                churn();
                go_wait(tag + 1);
                CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
                buf_free(s, sd);
            } else {
                int *r = ints_make(n, 0, 0, 0);
                go_send(tag + 1);
                CHECK(MPI_Recv(r, (int)n, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                      MPI_SUCCESS);
                CHECK(ints_wrong(r, n, tag, 0, 0) == 0);
                free(r);
            }
        }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_persistent(void)
{
    int tag = 300;
    for (int li = 0; li < 3; li++, tag += 4) {
        size_t n = lens[li] / sizeof(int);
        snprintf(where, sizeof(where), "Send_init/Recv_init %zu KiB dev, types freed",
                 lens[li] >> 10);
        int *b = rank == 0 ? ints_make(2 * n, 1, tag, 1) : NULL;
        MPI_Datatype t = strided(n);
        MPI_Request q;
        if (rank == 0)
            CHECK(MPI_Send_init(b, 1, t, 1, tag, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
        CHECK(MPI_Type_free(&t) == MPI_SUCCESS);
        for (int round = 0; round < 2; round++) {
            if (rank == 1) {
                b = ints_make(2 * n, 1, 0, 1);
                t = strided(n);
                CHECK(MPI_Recv_init(b, 1, t, 0, tag, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
                CHECK(MPI_Type_free(&t) == MPI_SUCCESS);
                churn();
                CHECK(MPI_Start(&q) == MPI_SUCCESS);
                go_send(tag + 1);
                CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
                CHECK(ints_wrong(b, 2 * n, tag, 1, 0) == 0);
                /* The second round starts it again. */
                int *h = ints_make(2 * n, 0, 0, 1);
                MPIX_Gpu_memcpy(b, h, 2 * n * sizeof(int));
                free(h);
                CHECK(MPI_Start(&q) == MPI_SUCCESS);
                go_send(tag + 1);
                CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
                CHECK(ints_wrong(b, 2 * n, tag, 1, 0) == 0);
                CHECK(MPI_Request_free(&q) == MPI_SUCCESS);
                buf_free(b, 1);
                b = NULL;
            } else {
                churn();
                for (int k = 0; k < 2; k++) {
                    go_wait(tag + 1);
                    CHECK(MPI_Start(&q) == MPI_SUCCESS);
                    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
                }
            }
        }
        if (rank == 0) {
            CHECK(MPI_Request_free(&q) == MPI_SUCCESS);
            buf_free(b, 1);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_comm_free(void)
{
    const size_t n = (2 << 20) / sizeof(int);
    int tag = 400;
    for (int rd = 0; rd < 2; rd++, tag += 10) {
        MPI_Comm c, c2, other = MPI_COMM_NULL, other2 = MPI_COMM_NULL;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_dup(MPI_COMM_WORLD, &c2);
        MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(c2, MPI_ERRORS_RETURN);
        snprintf(where, sizeof(where), "Irecv/Isend 2 MiB %s, communicator freed",
                 rd ? "dev" : "host");
        if (rank == 0) {
            int *s = ints_make(n, 1, tag, 0);
            MPI_Request q;
            go_wait(tag + 1);
            CHECK(MPI_Isend(s, (int)n, MPI_INT, 1, tag, c, &q) == MPI_SUCCESS);
            CHECK(MPI_Comm_free(&c) == MPI_SUCCESS);
            MPI_Comm_dup(MPI_COMM_SELF, &other);
            CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            /* The truncated one: 2 MiB into 1 MiB. */
            go_wait(tag + 2);
            MPI_Send(s, (int)n, MPI_INT, 1, tag + 3, c2);
            MPI_Comm_free(&c2);
            buf_free(s, 1);
        } else {
            int *r = ints_make(n, rd, 0, 0);
            MPI_Request q;
            MPI_Status st;
            int got = -1, cls = -1;
            CHECK(MPI_Irecv(r, (int)n, MPI_INT, 0, tag, c, &q) == MPI_SUCCESS);
            CHECK(MPI_Comm_free(&c) == MPI_SUCCESS);
            /* MPI_ERRORS_ARE_FATAL: an error raised on the freed handle,
               should MPI give it to this one, would abort. */
            MPI_Comm_dup(MPI_COMM_SELF, &other);
            MPI_Comm_set_errhandler(other, MPI_ERRORS_ARE_FATAL);
            go_send(tag + 1);
            CHECK(MPI_Wait(&q, &st) == MPI_SUCCESS);
            MPI_Get_count(&st, MPI_INT, &got);
            CHECK(got == (int)n && st.MPI_SOURCE == 0 && st.MPI_TAG == tag);
            CHECK(ints_wrong(r, n, tag, 0, 0) == 0);
            snprintf(where, sizeof(where), "truncation %s, communicator freed",
                     rd ? "dev" : "host");
            CHECK(MPI_Irecv(r, (int)n / 2, MPI_INT, 0, tag + 3, c2, &q) == MPI_SUCCESS);
            CHECK(MPI_Comm_free(&c2) == MPI_SUCCESS);
            MPI_Comm_dup(MPI_COMM_SELF, &other2);
            MPI_Comm_set_errhandler(other2, MPI_ERRORS_ARE_FATAL);
            go_send(tag + 2);
            MPI_Error_class(MPI_Wait(&q, &st), &cls);
            CHECK(cls == MPI_ERR_TRUNCATE);
            buf_free(r, rd);
        }
        if (other != MPI_COMM_NULL)
            MPI_Comm_free(&other);
        if (other2 != MPI_COMM_NULL)
            MPI_Comm_free(&other2);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* A device buffer freed (MPIX_Gpu_free) while its operation is pending: an
   error of the caller's, which must still never fault.  The operation holds
   its own reference to the buffer's cl_mem, so the send still carries the
   bytes it was given and the receive lands in memory nobody reads. */
static void test_buffer_free(void)
{
    int tag = 400;
    for (int li = 0; li < 3; li++, tag += 4) {
        size_t n = lens[li] / sizeof(int);
        snprintf(where, sizeof(where), "Isend %zu KiB dev, buffer freed", lens[li] >> 10);
        if (rank == 0) {
            int *s = ints_make(2 * n, 1, tag, 1);
            MPI_Datatype t = strided(n);
            MPI_Request q;
            CHECK(MPI_Isend(s, 1, t, 1, tag, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
            CHECK(MPIX_Gpu_free(s) == MPI_SUCCESS);
            int *other = ints_make(2 * n, 1, tag + 99, 0); /* takes memory meanwhile */
            go_wait(tag + 1);
            CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            MPI_Type_free(&t);
            MPIX_Gpu_free(other);
            /* The receive side's turn: rank 1 frees its buffer before this
               message comes. */
            int *h = ints_make(n, 0, tag + 2, 0);
            go_wait(tag + 3);
            CHECK(MPI_Send(h, (int)n, MPI_INT, 1, tag + 2, MPI_COMM_WORLD) == MPI_SUCCESS);
            free(h);
        } else {
            int *r = ints_make(n, 0, 0, 0);
            go_send(tag + 1);
            CHECK(MPI_Recv(r, (int)n, MPI_INT, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
            CHECK(ints_wrong(r, n, tag, 0, 0) == 0);
            free(r);
            int *d = ints_make(n, 1, 0, 0);
            MPI_Request q;
            CHECK(MPI_Irecv(d, (int)n, MPI_INT, 0, tag + 2, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
            CHECK(MPIX_Gpu_free(d) == MPI_SUCCESS);
            go_send(tag + 3);
            /* It lands in the operation's own reference to the buffer. */
            CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int size = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size != 2) {
        fprintf(stderr, "p2p_typefree needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    test_irecv();
    test_isend();
    test_persistent();
    test_comm_free();
    test_buffer_free();
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", all);
    }
    MPI_Finalize();
    return all != 0;
}
