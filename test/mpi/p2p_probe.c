/* Probes of long messages (2 ranks, run with a 64K pool: 16 KiB chunks).
   Under MPIGPU_P2P_PROTOCOL=chunked a device message longer than one chunk
   goes in pieces; MPI_Probe, MPI_Iprobe, MPI_Mprobe and MPI_Improbe must
   still report its whole length, and the receive that follows (device or
   host, any receive call) must get all of it, in MPI's order.  Also:
   - plain messages of exactly one chunk (the length of a first piece),
     one of them starting with mpigpu's magic, probed and received;
   - a probed chunked message received into a buffer too small
     (MPI_ERR_TRUNCATE), after which the next message still arrives;
   - order: a probed message is received before a later one of the same
     sender that matches the same receive;
   - MPI_Mrecv of a probed message with count 0 (MPI_ERR_TRUNCATE).
   Rank 1 sends, rank 0 probes and receives; every byte is checked. */
#include <stdint.h>

#include "p2p_common.h"

#define N 5000 /* doubles: 40,000 bytes, more than two 16 KiB chunks */
#define CHUNK 16384

static int rank;
static int trace; /* P2P_PROBE_TRACE=1: name each case on stderr */
#define STEP() (trace ? fprintf(stderr, "%d: %s\n", rank, where) : 0)

static int err_class(int code)
{
    int cls = MPI_ERR_OTHER;
    MPI_Error_class(code, &cls);
    return cls;
}

static double *dev_doubles(int n, double base)
{
    double *h = malloc((size_t)n * sizeof(double));
    void *d = NULL;
    for (int i = 0; i < n; i++)
        h[i] = base + i;
    MPIX_Gpu_malloc((size_t)n * sizeof(double), &d);
    MPIX_Gpu_memcpy(d, h, (size_t)n * sizeof(double));
    free(h);
    return d;
}

/* 1 when n doubles at p (device or host) are base, base + 1, ... */
static int doubles_ok(const double *p, int n, double base)
{
    double *h = malloc((size_t)n * sizeof(double));
    MPIX_Gpu_memcpy(h, p, (size_t)n * sizeof(double));
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = h[i] == base + i;
    free(h);
    return ok;
}

/* Rank 1: a device message of n doubles from base with tag. */
static void send_dev(int n, double base, int tag)
{
    double *d = dev_doubles(n, base);
    CHECK(MPI_Send(d, n, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD) == MPI_SUCCESS);
    MPIX_Gpu_free(d);
}

/* Rank 0: receive n doubles (device or host buffer of cap doubles) with the
   call numbered how, after a probe; check data, count and the bytes past. */
static void recv_check(int how, int dev, int n, double base, int tag)
{
    int cap = n + 8, got = -1;
    double *b = dev ? dev_doubles(cap, -1.0) : malloc((size_t)cap * sizeof(double));
    MPI_Status st;
    MPI_Request r;
    if (!dev)
        for (int i = 0; i < cap; i++)
            b[i] = -1.0 + i;
    memset(&st, 0, sizeof(st));
    switch (how) {
    case 0:
        CHECK(MPI_Recv(b, cap, MPI_DOUBLE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st) ==
              MPI_SUCCESS);
        break;
    case 1:
        CHECK(MPI_Irecv(b, cap, MPI_DOUBLE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &r) == MPI_SUCCESS);
        CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS);
        break;
    case 2:
        CHECK(MPI_Recv_c(b, cap, MPI_DOUBLE, 1, tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        break;
    default:
        CHECK(MPI_Sendrecv(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, b, cap, MPI_DOUBLE, 1, tag,
                           MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        break;
    }
    MPI_Get_count(&st, MPI_DOUBLE, &got);
    CHECK(got == n && st.MPI_SOURCE == 1 && st.MPI_TAG == tag);
    CHECK(doubles_ok(b, n, base));
    CHECK(doubles_ok(b + n, 8, -1.0 + n));
    if (dev)
        MPIX_Gpu_free(b);
    else
        free(b);
}

/* Probe (Probe or Iprobe) a chunked message and receive it every way. */
static void probe_then_receive(void)
{
    for (int how = 0; how < 4; how++)
        for (int dev = 0; dev < 2; dev++) {
            int tag = 10 + how * 2 + dev;
            snprintf(where, sizeof(where), "probe, receive %d into %s", how, dev ? "dev" : "host");
            STEP();
            if (rank == 1) {
                send_dev(N, 1000.0 * tag, tag);
            } else {
                MPI_Status st;
                int flag = 0, got = -1;
                if (how % 2)
                    CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st) ==
                          MPI_SUCCESS);
                else
                    while (!flag)
                        CHECK(MPI_Iprobe(1, tag, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS);
                MPI_Get_count(&st, MPI_DOUBLE, &got);
                CHECK(got == N && st.MPI_SOURCE == 1 && st.MPI_TAG == tag);
                /* A second probe sees the same message. */
                CHECK(MPI_Probe(1, tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
                MPI_Get_count(&st, MPI_DOUBLE, &got);
                CHECK(got == N);
                recv_check(how, dev, N, 1000.0 * tag, tag);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
}

/* MPI_Mprobe / MPI_Improbe, then MPI_Mrecv / MPI_Imrecv (and the _c form). */
static void matched(void)
{
    for (int how = 0; how < 3; how++)
        for (int dev = 0; dev < 2; dev++) {
            int tag = 30 + how * 2 + dev;
            snprintf(where, sizeof(where), "matched %d into %s", how, dev ? "dev" : "host");
            STEP();
            if (rank == 1) {
                send_dev(N, 7.0 * tag, tag);
            } else {
                MPI_Message m = MPI_MESSAGE_NULL;
                MPI_Status st;
                MPI_Request r;
                int flag = 0, got = -1;
                if (how == 1)
                    while (!flag)
                        CHECK(MPI_Improbe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st) ==
                              MPI_SUCCESS);
                else
                    CHECK(MPI_Mprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS);
                MPI_Get_count(&st, MPI_DOUBLE, &got);
                CHECK(got == N && st.MPI_SOURCE == 1 && st.MPI_TAG == tag);
                double *b = dev ? dev_doubles(N, 0.0) : calloc(N, sizeof(double));
                memset(&st, 0, sizeof(st));
                if (how == 0) {
                    CHECK(MPI_Mrecv(b, N, MPI_DOUBLE, &m, &st) == MPI_SUCCESS);
                } else if (how == 1) {
                    CHECK(MPI_Imrecv(b, N, MPI_DOUBLE, &m, &r) == MPI_SUCCESS);
                    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS);
                } else {
                    CHECK(MPI_Mrecv_c(b, N, MPI_DOUBLE, &m, &st) == MPI_SUCCESS);
                }
                CHECK(m == MPI_MESSAGE_NULL);
                got = -1;
                MPI_Get_count(&st, MPI_DOUBLE, &got);
                CHECK(got == N && st.MPI_SOURCE == 1 && st.MPI_TAG == tag);
                CHECK(doubles_ok(b, N, 7.0 * tag));
                if (dev)
                    MPIX_Gpu_free(b);
                else
                    free(b);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
}

/* Plain host messages of exactly one chunk, one of them starting with
   mpigpu's magic: a probe reports one chunk and the receive gets it as it
   was sent. */
static void one_chunk(void)
{
    for (int k = 0; k < 4; k++) {
        int dev = k % 2, magic = k / 2, tag = 50 + k;
        snprintf(where, sizeof(where), "one chunk%s into %s", magic ? " with magic" : "",
                 dev ? "dev" : "host");
        unsigned char *want = malloc(CHUNK);
        fill(want, CHUNK, (unsigned)k);
        if (magic) {
            uint64_t m = 0x6d70696770753031ULL; /* "mpigpu01", in the header's order */
            memcpy(want, &m, sizeof(m));
        }
        if (rank == 1) {
            CHECK(MPI_Send(want, CHUNK, MPI_BYTE, 0, tag, MPI_COMM_WORLD) == MPI_SUCCESS);
        } else {
            MPI_Status st;
            int got = -1;
            CHECK(MPI_Probe(1, tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
            MPI_Get_count(&st, MPI_BYTE, &got);
            CHECK(got == CHUNK);
            unsigned char *b = buf_make(CHUNK, 99, dev);
            got = -1;
            CHECK(MPI_Recv(b, CHUNK, MPI_BYTE, 1, tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
            MPI_Get_count(&st, MPI_BYTE, &got);
            CHECK(got == CHUNK);
            CHECK(buf_equal(b, want, CHUNK, dev));
            buf_free(b, dev);
        }
        free(want);
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* A probed chunked message into a receive too small, device and host:
   MPI_ERR_TRUNCATE, nothing written past the buffer, and the next message
   (which follows the dropped pieces) arrives whole. */
static void truncated(void)
{
    for (int dev = 0; dev < 2; dev++) {
        int tag = 60 + dev;
        snprintf(where, sizeof(where), "truncated into %s", dev ? "dev" : "host");
        STEP();
        if (rank == 1) {
            send_dev(N, 5.0, tag);
            send_dev(N, 6.0, tag);
        } else {
            MPI_Status st;
            int got = -1, small = N / 4;
            CHECK(MPI_Probe(1, tag, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
            MPI_Get_count(&st, MPI_DOUBLE, &got);
            CHECK(got == N);
            double *b = dev ? dev_doubles(small + 8, -1.0) : malloc((small + 8) * sizeof(double));
            if (!dev)
                for (int i = 0; i < small + 8; i++)
                    b[i] = -1.0 + i;
            CHECK(err_class(MPI_Recv(b, small, MPI_DOUBLE, 1, tag, MPI_COMM_WORLD, &st)) ==
                  MPI_ERR_TRUNCATE);
            CHECK(doubles_ok(b + small, 8, -1.0 + small));
            if (dev)
                MPIX_Gpu_free(b);
            else
                free(b);
            recv_check(0, dev, N, 6.0, tag);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* Order: rank 1 sends A (chunked, tag 70), B (short, tag 70), C (chunked,
   tag 71).  Rank 0 probes tag 71 first (C), then receives with
   MPI_ANY_TAG three times: A, B, C in that order. */
static void order(void)
{
    snprintf(where, sizeof(where), "order");
    STEP();
    if (rank == 1) {
        /* Nonblocking: rank 0 probes C before it receives A. */
        double *d[3] = {dev_doubles(N, 100.0), dev_doubles(10, 200.0), dev_doubles(N, 300.0)};
        MPI_Request r[3];
        MPI_Status sts[3];
        CHECK(MPI_Isend(d[0], N, MPI_DOUBLE, 0, 70, MPI_COMM_WORLD, &r[0]) == MPI_SUCCESS);
        CHECK(MPI_Isend(d[1], 10, MPI_DOUBLE, 0, 70, MPI_COMM_WORLD, &r[1]) == MPI_SUCCESS);
        CHECK(MPI_Isend(d[2], N, MPI_DOUBLE, 0, 71, MPI_COMM_WORLD, &r[2]) == MPI_SUCCESS);
        CHECK(MPI_Waitall(3, r, sts) == MPI_SUCCESS);
        for (int i = 0; i < 3; i++)
            MPIX_Gpu_free(d[i]);
    } else {
        MPI_Status st;
        int got = -1;
        CHECK(MPI_Probe(1, 71, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        MPI_Get_count(&st, MPI_DOUBLE, &got);
        CHECK(got == N && st.MPI_TAG == 71);
        CHECK(MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
        MPI_Get_count(&st, MPI_DOUBLE, &got);
        CHECK(got == N && st.MPI_TAG == 70);
        double *b = dev_doubles(N, 0.0);
        const int tags[3] = {70, 70, 71}, counts[3] = {N, 10, N};
        const double bases[3] = {100.0, 200.0, 300.0};
        for (int i = 0; i < 3; i++) {
            CHECK(MPI_Recv(b, N, MPI_DOUBLE, 1, MPI_ANY_TAG, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
            MPI_Get_count(&st, MPI_DOUBLE, &got);
            if (trace)
                fprintf(stderr, "order %d: tag %d count %d\n", i, st.MPI_TAG, got);
            CHECK(st.MPI_TAG == tags[i] && got == counts[i]);
            CHECK(doubles_ok(b, counts[i], bases[i]));
        }
        MPIX_Gpu_free(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* MPI_Mrecv of a probed chunked message with count 0: MPI_ERR_TRUNCATE. */
static void zero_count(void)
{
    snprintf(where, sizeof(where), "Mrecv count 0");
    STEP();
    if (rank == 1) {
        send_dev(N, 1.0, 80);
    } else {
        MPI_Message m;
        MPI_Status st;
        CHECK(MPI_Mprobe(1, 80, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS);
        /* (MPICH leaves the handle of a failed MPI_Mrecv as it was.) */
        CHECK(err_class(MPI_Mrecv(NULL, 0, MPI_DOUBLE, &m, &st)) == MPI_ERR_TRUNCATE);
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
        fprintf(stderr, "p2p_probe needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    trace = getenv("P2P_PROBE_TRACE") != NULL;
    probe_then_receive();
    matched();
    one_chunk();
    truncated();
    order();
    zero_count();
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all == 0 ? " No Errors\n" : " Found %d errors\n", all);
    MPI_Finalize();
    return all != 0;
}
