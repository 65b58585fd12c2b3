/* Matched probes: every rank but 0 sends to rank 0, which matches each
   message with MPI_Mprobe or MPI_Improbe on MPI_ANY_SOURCE and MPI_ANY_TAG
   and receives it with MPI_Mrecv or MPI_Imrecv, for (host|device) sender x
   (host|device) receiver x the datatype set x counts 0, 1, 3 (and 3000,
   longer than the staging chunk when MPIGPU_STAGING_MAX is small: a chunked
   message under MPIGPU_P2P_PROTOCOL=chunked, whose whole length the probe
   must report).  Rank 0 checks the bytes, the bytes around them and the status.
   Also: truncation of a matched device receive, MPI_MESSAGE_NO_PROC, and the
   large-count forms MPI_Send_c and MPI_Irecv_c. */
#include "p2p_common.h"

static int rank, size;

static unsigned seed_of(int ti, int count, int src)
{
    return (unsigned)(ti * 13 + count + src * 29 + 3);
}

static void one(int ti, MPI_Datatype t, int count, int sd, int rd, int how, int base)
{
    size_t n = buf_size(t, count);
    snprintf(where, sizeof(where), "%s x%d %s->%s %s", tnames[ti], count, sd ? "dev" : "host",
             rd ? "dev" : "host", how ? "Improbe/Imrecv" : "Mprobe/Mrecv");
    if (rank > 0) {
        unsigned char *s = buf_make(n, seed_of(ti, count, rank), sd);
        CHECK(MPI_Send(s + ORIGIN, count, t, 0, base + rank, MPI_COMM_WORLD) == MPI_SUCCESS);
        buf_free(s, sd);
    } else {
        int tsize = 0;
        MPI_Type_size(t, &tsize);
        for (int i = 1; i < size; i++) {
            unsigned pseed = 50 + (unsigned)i;
            unsigned char *r = buf_make(n, pseed, rd);
            MPI_Message msg = MPI_MESSAGE_NULL;
            MPI_Status pst, st;
            MPI_Request req;
            int flag = 0, got = -1;
            if (how == 0) {
                CHECK(MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &msg, &pst) ==
                      MPI_SUCCESS);
            } else {
                do
                    CHECK(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg,
                                      &pst) == MPI_SUCCESS);
                while (!flag);
            }
            int src = pst.MPI_SOURCE;
            CHECK(src >= 1 && src < size && pst.MPI_TAG == base + src);
            /* The whole message's length, a chunked one's too. */
            MPI_Get_count(&pst, t, &got);
            CHECK(got == count || (tsize == 0 && got == 0));
            memset(&st, 0, sizeof(st));
            if (how == 0) {
                CHECK(MPI_Mrecv(r + ORIGIN, count, t, &msg, &st) == MPI_SUCCESS);
            } else {
                CHECK(MPI_Imrecv(r + ORIGIN, count, t, &msg, &req) == MPI_SUCCESS);
                CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS);
            }
            CHECK(msg == MPI_MESSAGE_NULL);
            unsigned char *want = expected(t, count, seed_of(ti, count, src), pseed);
            CHECK(buf_equal(r, want, n, rd));
            got = -1;
            MPI_Get_count(&st, t, &got);
            CHECK(got == count || (tsize == 0 && got == 0));
            CHECK(st.MPI_SOURCE == src && st.MPI_TAG == base + src);
            free(want);
            buf_free(r, rd);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD); /* no wildcard matches the next case */
}

static void truncation(void)
{
    MPI_Datatype t = types[1];
    size_t n = buf_size(t, 3);
    snprintf(where, sizeof(where), "truncation");
    if (rank == 1) {
        unsigned char *s = buf_make(n, 1, 1);
        MPI_Send(s + ORIGIN, 3, t, 0, 5, MPI_COMM_WORLD);
        buf_free(s, 1);
    } else if (rank == 0) {
        unsigned char *r = buf_make(n, 2, 1), *h = malloc(n);
        MPI_Message msg;
        MPI_Status st;
        MPI_Request req;
        fill(h, n, 2);
        CHECK(MPI_Mprobe(1, 5, MPI_COMM_WORLD, &msg, &st) == MPI_SUCCESS);
        CHECK(MPI_Mrecv(r + ORIGIN, 1, t, &msg, &st) == MPI_ERR_TRUNCATE);
        CHECK(buf_equal(r, h, n, 1));
        /* MPI_PROC_NULL matches at once with MPI_MESSAGE_NO_PROC. */
        CHECK(MPI_Mprobe(MPI_PROC_NULL, 5, MPI_COMM_WORLD, &msg, &st) == MPI_SUCCESS);
        CHECK(msg == MPI_MESSAGE_NO_PROC);
        CHECK(MPI_Imrecv(r + ORIGIN, 3, t, &msg, &req) == MPI_SUCCESS);
        CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL);
        CHECK(buf_equal(r, h, n, 1));
        free(h);
        buf_free(r, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* The large-count forms on device buffers: delegated when the count fits,
   MPI_ERR_COUNT beyond. */
static void large_count(void)
{
    MPI_Datatype t = types[4];
    size_t n = buf_size(t, 3);
    snprintf(where, sizeof(where), "_c forms");
    if (rank == 1) {
        unsigned char *s = buf_make(n, 4, 1);
        CHECK(MPI_Send_c(s + ORIGIN, 3, t, 0, 6, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(MPI_Send_c(s + ORIGIN, (MPI_Count)1 << 40, t, 0, 6, MPI_COMM_WORLD) == MPI_ERR_COUNT);
        buf_free(s, 1);
    } else if (rank == 0) {
        unsigned char *r = buf_make(n, 3, 1), *want = expected(t, 3, 4, 3);
        MPI_Request req;
        MPI_Status st;
        MPI_Count c = -1;
        CHECK(MPI_Irecv_c(r + ORIGIN, 3, t, 1, 6, MPI_COMM_WORLD, &req) == MPI_SUCCESS);
        CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS);
        MPI_Get_count_c(&st, t, &c);
        CHECK(c == 3 && buf_equal(r, want, n, 1));
        free(want);
        buf_free(r, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int cases = 0, base = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 2) {
        fprintf(stderr, "p2p_mprobe needs 2 ranks or more\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    types_create();
    int counts[4] = {0, 1, 3, 3000};
    for (int ti = 0; ti < NTYPES; ti++)
        for (int ci = 0; ci < 4; ci++)
            for (int sd = 0; sd < 2; sd++)
                for (int rd = 0; rd < 2; rd++)
                    for (int how = 0; how < 2; how++) {
                        base = (base + size) % 30000;
                        one(ti, types[ti], counts[ci], sd, rd, how, base);
                        cases++;
                    }
    truncation();
    large_count();
    types_free();
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
