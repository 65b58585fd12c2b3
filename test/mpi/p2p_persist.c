/* Persistent requests: every *_init send mode x (host|device) sender x
   (host|device) receiver x the datatype set x counts 0, 1, 3, each pair of
   requests started 100 times with new data.  Every start goes through
   MPI_Startall together with a host persistent request, and the receiver
   completes them with Wait, Waitall, Waitany, Waitsome and Test next to an
   inactive persistent request.  Rank 1 checks the bytes, the bytes around
   them, the status, and that staging memory stays flat over the restarts.
   Also: MPI_Cancel of a started device receive, which then restarts;
   MPI_Request_free of an active device send.  With "big" as argument, device
   to device messages longer than the staging chunk (run with a small
   MPIGPU_STAGING_MAX), started 20 times each: with the chunked protocol every
   start is a few kernels and messages per chunk, and 100 starts took minutes
   on a loaded 2-core machine under the sanitizers. */
#include "mpit_read.h"
#include "p2p_common.h"

#define ITERS_SMALL 100
#define ITERS_BIG 20
#define TAG_EXTRA 31000
#define TAG_IDLE 31001

enum { M_SEND, M_SSEND, M_RSEND, M_BSEND, M_N };
static const char *mnames[M_N] = {"Send_init", "Ssend_init", "Rsend_init", "Bsend_init"};
static int rank, iters = ITERS_SMALL;

static int send_init(int mode, const void *buf, int count, MPI_Datatype t, int tag, MPI_Request *r)
{
    switch (mode) {
    case M_SSEND:
        return MPI_Ssend_init(buf, count, t, 1, tag, MPI_COMM_WORLD, r);
    case M_RSEND:
        return MPI_Rsend_init(buf, count, t, 1, tag, MPI_COMM_WORLD, r);
    case M_BSEND:
        return MPI_Bsend_init(buf, count, t, 1, tag, MPI_COMM_WORLD, r);
    default:
        return MPI_Send_init(buf, count, t, 1, tag, MPI_COMM_WORLD, r);
    }
}

static unsigned seed_of(int ti, int count, int k)
{
    return (unsigned)(ti * 7 + count * 3 + k * 11 + 1);
}

static void sender(int ti, MPI_Datatype t, int count, int sd, int mode, int tag)
{
    size_t n = buf_size(t, count);
    unsigned char *s = buf_make(n, 0, sd), *h = malloc(n);
    MPI_Request rq[2];
    MPI_Status sts[2];
    int extra = 0, flag = 0;
    CHECK(send_init(mode, s + ORIGIN, count, t, tag, &rq[0]) == MPI_SUCCESS);
    CHECK(MPI_Send_init(&extra, 1, MPI_INT, 1, TAG_EXTRA, MPI_COMM_WORLD, &rq[1]) == MPI_SUCCESS);
    for (int k = 0; k < iters; k++) {
        fill(h, n, seed_of(ti, count, k));
        MPIX_Gpu_memcpy(s, h, n);
        extra = k;
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* posted */
        CHECK(MPI_Startall(2, rq) == MPI_SUCCESS);
        switch (k % 3) {
        case 0:
            CHECK(MPI_Waitall(2, rq, sts) == MPI_SUCCESS);
            break;
        case 1:
            CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE) == MPI_SUCCESS);
            CHECK(MPI_Wait(&rq[0], MPI_STATUS_IGNORE) == MPI_SUCCESS);
            break;
        default:
            do
                CHECK(MPI_Testall(2, rq, &flag, sts) == MPI_SUCCESS);
            while (!flag);
            break;
        }
        CHECK(rq[0] != MPI_REQUEST_NULL && rq[1] != MPI_REQUEST_NULL);
    }
    CHECK(MPI_Request_free(&rq[0]) == MPI_SUCCESS && rq[0] == MPI_REQUEST_NULL);
    CHECK(MPI_Request_free(&rq[1]) == MPI_SUCCESS);
    free(h);
    buf_free(s, sd);
}

/* Complete rq[0] (data) and rq[1] (extra) the k-th way; *st gets rq[0]'s
   status. */
static void recv_complete(int k, MPI_Request rq[2], MPI_Request idle, MPI_Status *st)
{
    MPI_Status sts[3];
    int flag = 0, idx, out, ind[3], left = 2;
    MPI_Request arr[3] = {idle, rq[0], rq[1]};
    switch (k % 5) {
    case 0:
        CHECK(MPI_Waitall(2, rq, sts) == MPI_SUCCESS);
        *st = sts[0];
        break;
    case 1:
        while (left > 0) {
            CHECK(MPI_Waitany(3, arr, &idx, &sts[0]) == MPI_SUCCESS);
            CHECK(idx == 1 || idx == 2);
            if (idx == 1)
                *st = sts[0];
            left--;
        }
        CHECK(MPI_Waitany(3, arr, &idx, &sts[0]) == MPI_SUCCESS && idx == MPI_UNDEFINED);
        break;
    case 2:
        do
            CHECK(MPI_Test(&rq[0], &flag, st) == MPI_SUCCESS);
        while (!flag);
        CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE) == MPI_SUCCESS);
        break;
    case 3:
        arr[0] = rq[0];
        arr[1] = idle;
        while (left > 0) {
            CHECK(MPI_Waitsome(3, arr, &out, ind, sts) == MPI_SUCCESS);
            for (int i = 0; i < out; i++) {
                CHECK(ind[i] == 0 || ind[i] == 2);
                if (ind[i] == 0)
                    *st = sts[i];
            }
            left -= out;
        }
        break;
    default:
        CHECK(MPI_Wait(&rq[1], MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(MPI_Wait(&rq[0], st) == MPI_SUCCESS);
        break;
    }
}

static void receiver(int ti, MPI_Datatype t, int count, int rd, int tag)
{
    size_t n = buf_size(t, count), a0 = 0, a1 = 0;
    unsigned pseed = 100 + (unsigned)ti;
    unsigned char *r = buf_make(n, pseed, rd);
    MPI_Request rq[2], idle;
    int extra = -1, dummy, tsize = 0;
    MPI_Type_size(t, &tsize);
    CHECK(MPI_Recv_init(r + ORIGIN, count, t, 0, tag, MPI_COMM_WORLD, &rq[0]) == MPI_SUCCESS);
    CHECK(MPI_Recv_init(&extra, 1, MPI_INT, 0, TAG_EXTRA, MPI_COMM_WORLD, &rq[1]) == MPI_SUCCESS);
    MPI_Recv_init(&dummy, 1, MPI_INT, 0, TAG_IDLE, MPI_COMM_WORLD, &idle); /* never started */
    for (int k = 0; k < iters; k++) {
        unsigned char *want = expected(t, count, seed_of(ti, count, k), pseed);
        MPI_Status st;
        int got = -1;
        memset(&st, 0, sizeof(st));
        CHECK(MPI_Startall(2, rq) == MPI_SUCCESS);
        MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        recv_complete(k, rq, idle, &st);
        CHECK(buf_equal(r, want, n, rd));
        CHECK(extra == k);
        MPI_Get_count(&st, t, &got);
        CHECK(got == count || (tsize == 0 && got == 0));
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == tag);
        free(want);
        if (k == 0)
            a0 = mpit_value("mpigpu_staging_bytes");
    }
    a1 = mpit_value("mpigpu_staging_bytes");
    CHECK(a1 == a0); /* staging reused, not grown */
    CHECK(MPI_Request_free(&rq[0]) == MPI_SUCCESS && rq[0] == MPI_REQUEST_NULL);
    MPI_Request_free(&rq[1]);
    MPI_Request_free(&idle);
    buf_free(r, rd);
}

/* A started device receive is cancelled, then restarted and used; an active
   device send is freed and still delivers. */
static void cancel_and_free(void)
{
    MPI_Datatype t = types[1];
    size_t n = buf_size(t, 3);
    unsigned char *want = expected(t, 3, 9, 8);
    MPI_Request r;
    MPI_Status st;
    int cancelled = 0;
    snprintf(where, sizeof(where), "cancel/free");
    if (rank == 1) {
        unsigned char *b = buf_make(n, 8, 1);
        CHECK(MPI_Recv_init(b + ORIGIN, 3, t, 0, 77, MPI_COMM_WORLD, &r) == MPI_SUCCESS);
        CHECK(MPI_Start(&r) == MPI_SUCCESS);
        CHECK(MPI_Cancel(&r) == MPI_SUCCESS);
        CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS);
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(cancelled);
        unsigned char *untouched = malloc(n);
        fill(untouched, n, 8);
        CHECK(buf_equal(b, untouched, n, 1));
        free(untouched);
        CHECK(MPI_Start(&r) == MPI_SUCCESS);
        MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS);
        MPI_Test_cancelled(&st, &cancelled);
        CHECK(!cancelled && st.MPI_TAG == 77);
        CHECK(buf_equal(b, want, n, 1));
        MPI_Request_free(&r);
        buf_free(b, 1);
    } else if (rank == 0) {
        unsigned char *s = buf_make(n, 9, 1);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(MPI_Send_init(s + ORIGIN, 3, t, 1, 77, MPI_COMM_WORLD, &r) == MPI_SUCCESS);
        CHECK(MPI_Start(&r) == MPI_SUCCESS);
        CHECK(MPI_Request_free(&r) == MPI_SUCCESS && r == MPI_REQUEST_NULL);
        MPI_Barrier(MPI_COMM_WORLD); /* the receiver has the data */
        buf_free(s, 1);
    }
    if (rank == 1)
        MPI_Barrier(MPI_COMM_WORLD);
    free(want);
}

int main(int argc, char **argv)
{
    int size, big = argc > 1 && !strcmp(argv[1], "big"), cases = 0, tag = 0;
    if (big)
        iters = ITERS_BIG;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size != 2) {
        fprintf(stderr, "p2p_persist needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (mpit_read_init()) {
        fprintf(stderr, "p2p_persist: MPI_T does not start\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int bsize = 1 << 22;
    void *battach = malloc(bsize);
    MPI_Buffer_attach(battach, bsize);
    types_create();
    int counts[3] = {0, 1, 3};
    for (int ti = 0; ti < NTYPES; ti++)
        for (int ci = 0; ci < (big ? 1 : 3); ci++)
            for (int sd = 0; sd < 2; sd++)
                for (int rd = 0; rd < 2; rd++)
                    for (int m = 0; m < M_N; m++) {
                        /* Past one staging chunk both sides must be device
                           buffers (doc/user-guide.md, "Known limits"). */
                        int count = big ? 3000 : counts[ci];
                        if (big && !(sd && rd))
                            continue;
                        snprintf(where, sizeof(where), "%s x%d %s->%s %s", tnames[ti], count,
                                 sd ? "dev" : "host", rd ? "dev" : "host", mnames[m]);
                        tag = tag % 30000 + 1;
                        if (rank == 0)
                            sender(ti, types[ti], count, sd, m, tag);
                        else
                            receiver(ti, types[ti], count, rd, tag);
                        cases++;
                    }
    cancel_and_free();
    types_free();
    mpit_read_finalize();
    MPI_Buffer_detach(&battach, &bsize);
    free(battach);
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf(" No Errors (%d cases x %d starts)\n", cases, iters);
        else
            printf(" Found %d errors\n", all);
    }
    MPI_Finalize();
    return all != 0;
}
