/* Every send call x every completion form x (host|device) sender x
   (host|device) receiver x the datatype set x counts 0, 1, 3: rank 0 sends to
   rank 1, which checks the bytes received, the bytes around them, and the
   status.  With "big" as argument, dev-to-dev messages longer than the
   staging chunk are added (run with a small MPIGPU_STAGING_MAX). */
#include "p2p_common.h"

enum { S_SEND, S_SSEND, S_RSEND, S_BSEND, S_ISEND, S_ISSEND, S_IRSEND, S_IBSEND, S_N };
static const char *snames[S_N] = {"Send",  "Ssend",  "Rsend",  "Bsend",
                                  "Isend", "Issend", "Irsend", "Ibsend"};
enum { R_RECV, R_WAIT, R_TEST, R_WAITANY, R_WAITSOME, R_TESTALL, R_N };
static const char *rnames[R_N] = {"Recv", "Wait", "Test", "Waitany", "Waitsome", "Testall"};

static int rank;

static void do_send(int how, const void *buf, int count, MPI_Datatype t, int tag)
{
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    switch (how) {
    case S_SEND:
        rc = MPI_Send(buf, count, t, 1, tag, MPI_COMM_WORLD);
        break;
    case S_SSEND:
        rc = MPI_Ssend(buf, count, t, 1, tag, MPI_COMM_WORLD);
        break;
    case S_RSEND:
        rc = MPI_Rsend(buf, count, t, 1, tag, MPI_COMM_WORLD);
        break;
    case S_BSEND:
        rc = MPI_Bsend(buf, count, t, 1, tag, MPI_COMM_WORLD);
        break;
    case S_ISEND:
        rc = MPI_Isend(buf, count, t, 1, tag, MPI_COMM_WORLD, &r);
        break;
    case S_ISSEND:
        rc = MPI_Issend(buf, count, t, 1, tag, MPI_COMM_WORLD, &r);
        break;
    case S_IRSEND:
        rc = MPI_Irsend(buf, count, t, 1, tag, MPI_COMM_WORLD, &r);
        break;
    default:
        rc = MPI_Ibsend(buf, count, t, 1, tag, MPI_COMM_WORLD, &r);
        break;
    }
    CHECK(rc == MPI_SUCCESS);
    if (how >= S_ISEND)
        CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS && r == MPI_REQUEST_NULL);
}

/* Post (nonblocking forms) or run (MPI_Recv) the receive; returns its status. */
static void do_recv(int how, void *buf, int count, MPI_Datatype t, int tag, int token_first,
                    MPI_Status *st)
{
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int rc, flag = 0, idx = -1, out = 0, ind[2];
    MPI_Status sts[2];
    int host_dummy = 0;

    if (how == R_RECV) {
        if (token_first)
            MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        CHECK(MPI_Recv(buf, count, t, 0, tag, MPI_COMM_WORLD, st) == MPI_SUCCESS);
        return;
    }
    CHECK(MPI_Irecv(buf, count, t, 0, tag, MPI_COMM_WORLD, &r[0]) == MPI_SUCCESS);
    /* a host request that never completes, next to the device one */
    MPI_Irecv(&host_dummy, 1, MPI_INT, 0, 32000, MPI_COMM_WORLD, &r[1]);
    MPI_Send(NULL, 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD); /* the receive is posted */
    switch (how) {
    case R_WAIT:
        rc = MPI_Wait(&r[0], st);
        break;
    case R_TEST:
        do
            rc = MPI_Test(&r[0], &flag, st);
        while (rc == MPI_SUCCESS && !flag);
        break;
    case R_WAITANY:
        rc = MPI_Waitany(2, r, &idx, st);
        CHECK(idx == 0);
        break;
    case R_WAITSOME:
        rc = MPI_Waitsome(2, r, &out, ind, sts);
        CHECK(out == 1 && ind[0] == 0);
        *st = sts[0];
        break;
    default:
        do
            rc = MPI_Testall(1, r, &flag, sts);
        while (rc == MPI_SUCCESS && !flag);
        *st = sts[0];
        break;
    }
    CHECK(rc == MPI_SUCCESS && r[0] == MPI_REQUEST_NULL);
    CHECK(MPI_Cancel(&r[1]) == MPI_SUCCESS);
    CHECK(MPI_Wait(&r[1], &sts[1]) == MPI_SUCCESS);
}

static void one(int ti, MPI_Datatype t, int count, int sdev, int rdev, int sh, int rh)
{
    static int tag = 1;
    size_t n = buf_size(t, count);
    unsigned dseed = (unsigned)(ti * 5 + count), pseed = 200 + (unsigned)ti;
    tag = tag % 30000 + 1;
    snprintf(where, sizeof(where), "%s x%d %s->%s %s/%s", tnames[ti], count, sdev ? "dev" : "host",
             rdev ? "dev" : "host", snames[sh], rnames[rh]);
    /* Ready sends need the receive posted first: MPI_Recv is then posted only
       after the token, so pair it with a standard send instead. */
    if (rh == R_RECV && (sh == S_RSEND || sh == S_IRSEND))
        sh = S_SEND;
    if (rank == 0) {
        unsigned char *s = buf_make(n, dseed, sdev);
        MPI_Recv(NULL, 0, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        do_send(sh, s + ORIGIN, count, t, tag);
        buf_free(s, sdev);
    } else if (rank == 1) {
        unsigned char *r = buf_make(n, pseed, rdev), *want = expected(t, count, dseed, pseed);
        MPI_Status st;
        int got = -1, elems = -1, tsize = 0;
        memset(&st, 0, sizeof(st));
        do_recv(rh, r + ORIGIN, count, t, tag, 1, &st);
        CHECK(buf_equal(r, want, n, rdev));
        MPI_Get_count(&st, t, &got);
        MPI_Type_size(t, &tsize);
        CHECK(got == count || (tsize == 0 && got == 0));
        MPI_Get_elements(&st, MPI_BYTE, &elems);
        CHECK(elems == count * tsize);
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == tag);
        free(want);
        buf_free(r, rdev);
    }
}

int main(int argc, char **argv)
{
    int size, big = argc > 1 && !strcmp(argv[1], "big");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 2) {
        fprintf(stderr, "p2p_basic needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int bsize = 1 << 22;
    void *battach = malloc(bsize);
    MPI_Buffer_attach(battach, bsize);
    types_create();
    int counts[4] = {0, 1, 3, 3000};
    int ncounts = big ? 4 : 3;
    int cases = 0;
    for (int ti = 0; ti < NTYPES; ti++)
        for (int ci = 0; ci < ncounts; ci++)
            for (int sd = 0; sd < 2; sd++)
                for (int rd = 0; rd < 2; rd++)
                    for (int sh = 0; sh < S_N; sh++)
                        for (int rh = 0; rh < R_N; rh++) {
                            /* Past one staging chunk both sides must be device
                               buffers (doc/user-guide.md, "Known limits"). */
                            if (ci == 3 && !(sd && rd))
                                continue;
                            if (ci == 3 && (rh % 2 || sh % 2))
                                continue;
                            one(ti, types[ti], counts[ci], sd, rd, sh, rh);
                            cases++;
                        }
    types_free();
    MPI_Buffer_detach(&battach, &bsize);
    free(battach);
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf(" No Errors (%d cases)\n", cases);
        else
            printf(" Found %d errors\n", all);
    }
    MPI_Finalize();
    return all != 0;
}
