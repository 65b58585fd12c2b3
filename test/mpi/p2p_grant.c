/* The grant protocol (doc/design.md, "Host receives that read no header").
   Two ranks.

   Host only: rank 1 posts windows of W receives on one host buffer (osu_bw's
   -W 64) of 64 KiB to 1 MiB; rank 0 sends them from host memory.  No
   process sends device data, so nobody asks for a grant: every receive goes
   in place bare (mpigpu_p2p_host_recv_bare), none lands and none reads a
   header (in place or landed counters unchanged), and the buffer holds the
   window's last message.

   A device sender: rank 1 posts K receives into host buffers of its own,
   then rank 0 sends K device messages long enough for pieces.  The first
   asks rank 1 for a grant, which cannot come while those receives (from
   before the request) are pending, so all K go plain and arrive whole in
   the bare receives.  Then rank 0 sends device messages one at a time, each
   received into a host buffer and acknowledged, until its chunked or lane
   counter moves (the grant arrived): every message byte-exact, at most
   MAXTRY, and the messages after the grant go in pieces (the counters say
   so on both sides). */
#include "mgtest.h"
#include "p2p_common.h"

#define W 64
#define WINDOWS 2
#define K 4
#define MAXTRY 200

static MPI_Status kst[K];

static unsigned long chunky(void)
{
    return mgp2p_proto_ops(MGP2P_PROTO_CHUNKED) + mgp2p_proto_ops(MGP2P_PROTO_LANE) +
           mgp2p_proto_ops(MGP2P_PROTO_REST);
}

static void host_window(int rank, size_t n)
{
    unsigned char *buf = malloc(n), *want = malloc(n), ack[4] = {0};
    MPI_Request req[W];
    MPI_Status st[W];
    for (int w = 0; w < WINDOWS; w++) {
        fill(want, n, (unsigned)(n + (size_t)w));
        if (rank == 0) {
            CHECK(MPI_Recv(ack, 4, MPI_BYTE, 1, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
            for (int j = 0; j < W; j++)
                CHECK(MPI_Isend(want, (int)n, MPI_BYTE, 1, 100 + j % 3, MPI_COMM_WORLD, &req[j]) ==
                      MPI_SUCCESS);
            CHECK(MPI_Waitall(W, req, st) == MPI_SUCCESS);
            CHECK(MPI_Recv(ack, 4, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
        } else {
            memset(buf, 0xee, n);
            for (int j = 0; j < W; j++)
                CHECK(MPI_Irecv(buf, (int)n, MPI_BYTE, 0, 100 + j % 3, MPI_COMM_WORLD, &req[j]) ==
                      MPI_SUCCESS);
            CHECK(MPI_Send(ack, 4, MPI_BYTE, 0, 98, MPI_COMM_WORLD) == MPI_SUCCESS);
            CHECK(MPI_Waitall(W, req, st) == MPI_SUCCESS);
            for (int j = 0; j < W; j++) {
                int got = -1;
                MPI_Get_count(&st[j], MPI_BYTE, &got);
                CHECK(got == (int)n && st[j].MPI_SOURCE == 0 && st[j].MPI_TAG == 100 + j % 3);
            }
            CHECK(memcmp(buf, want, n) == 0);
            CHECK(MPI_Send(ack, 4, MPI_BYTE, 0, 99, MPI_COMM_WORLD) == MPI_SUCCESS);
        }
    }
    free(buf);
    free(want);
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    snprintf(where, sizeof(where), "grant rank %d", rank);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "p2p_grant: needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    long long first = p2p_first_len();
    unsigned long in0, land0, in1, land1, asked, sent, got;

    /* ---- host only ---- */
    mgp2p_host_receives(&in0, &land0);
    unsigned long bare0 = mgp2p_host_bare_count();
    size_t sizes[] = {64 << 10, 256 << 10, 1 << 20};
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
        host_window(rank, sizes[s]);
    mgp2p_host_receives(&in1, &land1);
    unsigned long bare1 = mgp2p_host_bare_count();
    mgp2p_grants(&asked, &sent, &got);
    CHECK(asked == 0 && sent == 0 && got == 0);
    CHECK(land1 == land0 && in1 == in0); /* no landing, no header read */
    if (rank == 1 && first > 0)
        CHECK(bare1 - bare0 == (unsigned long)(3 * WINDOWS * W));
    if (rank == 1 && first == 0)
        CHECK(bare1 == bare0);

    /* ---- a device sender: plain first, in pieces after the grant ---- */
    /* A length in pieces under every protocol that has them (auto from
       MPIGPU_P2P_AUTO_MIN, to a process of the node). */
    size_t n = (size_t)env_bytes("MPIGPU_P2P_AUTO_MIN", 1 << 20);
    if (n < (size_t)first)
        n = (size_t)first;
    n += 4096 + 8;
    unsigned char *want = malloc(n), ack[4] = {0};
    unsigned long c0 = chunky();
    int tries = 0, pieces = 0;
    if (rank == 0) {
        unsigned char *dev[K];
        MPI_Request req[K];
        for (int i = 0; i < K; i++)
            dev[i] = buf_make(n, 1000u + (unsigned)i, 1);
        CHECK(MPI_Recv(ack, 4, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        for (int i = 0; i < K; i++)
            CHECK(MPI_Isend(dev[i], (int)n, MPI_BYTE, 1, 10 + i, MPI_COMM_WORLD, &req[i]) ==
                  MPI_SUCCESS);
        CHECK(MPI_Waitall(K, req, kst) == MPI_SUCCESS);
        CHECK(chunky() == c0); /* the grant waits for rank 1's receives */
        for (int i = 0; i < K; i++)
            buf_free(dev[i], 1);
        unsigned char *d = buf_make(n, 7u, 1);
        int more = 1;
        while (more) {
            unsigned long before = chunky();
            tries++;
            CHECK(MPI_Send(d, (int)n, MPI_BYTE, 1, 20, MPI_COMM_WORLD) == MPI_SUCCESS);
            CHECK(MPI_Recv(ack, 4, MPI_BYTE, 1, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
            if (chunky() > before)
                pieces++;
            /* One more message after the first in pieces: they keep going in
               pieces. */
            more = tries < MAXTRY && pieces < 2 && first > 0;
            if (first == 0)
                more = tries < 3;
            CHECK(MPI_Send(&more, 1, MPI_INT, 1, 22, MPI_COMM_WORLD) == MPI_SUCCESS);
        }
        buf_free(d, 1);
        mgp2p_grants(&asked, &sent, &got);
        if (first > 0) {
            CHECK(pieces == 2 && asked == 1 && got == 1 && sent == 0);
        } else {
            CHECK(pieces == 0 && asked == 0 && got == 0);
        }
    } else {
        unsigned char *h[K];
        MPI_Request req[K], pr = MPI_REQUEST_NULL;
        unsigned long b0 = mgp2p_host_bare_count();
        unsigned char *r = malloc(n);
        /* Two persistent receives started, one of any source, one plain. */
        for (int i = 0; i < K; i++) {
            h[i] = malloc(n);
            memset(h[i], 0xee, n);
            if (i < 2)
                CHECK(MPI_Recv_init(h[i], (int)n, MPI_BYTE, 0, 10 + i, MPI_COMM_WORLD, &req[i]) ==
                          MPI_SUCCESS &&
                      MPI_Start(&req[i]) == MPI_SUCCESS);
            else
                CHECK(MPI_Irecv(h[i], (int)n, MPI_BYTE, i == 2 ? MPI_ANY_SOURCE : 0, 10 + i,
                                MPI_COMM_WORLD, &req[i]) == MPI_SUCCESS);
        }
        /* Made before the request, started after it. */
        CHECK(MPI_Recv_init(r, (int)n, MPI_BYTE, 0, 20, MPI_COMM_WORLD, &pr) == MPI_SUCCESS);
        CHECK(MPI_Send(ack, 4, MPI_BYTE, 0, 7, MPI_COMM_WORLD) == MPI_SUCCESS);
        CHECK(MPI_Waitall(K, req, kst) == MPI_SUCCESS);
        for (int i = 0; i < K; i++) {
            fill(want, n, 1000u + (unsigned)i);
            CHECK(memcmp(h[i], want, n) == 0);
            free(h[i]);
            if (i < 2)
                MPI_Request_free(&req[i]);
        }
        if (first > 0)
            CHECK(mgp2p_host_bare_count() - b0 == K);
        unsigned long b1 = mgp2p_host_bare_count();
        fill(want, n, 7u);
        int more = 1;
        while (more) {
            memset(r, 0xee, n);
            MPI_Status st;
            int cnt = -1;
            /* The persistent receive, MPI_Mprobe and MPI_Mrecv, MPI_Recv in
               turn. */
            if (tries % 3 == 0) {
                CHECK(MPI_Start(&pr) == MPI_SUCCESS && MPI_Wait(&pr, &st) == MPI_SUCCESS);
            } else if (tries % 3 == 1) {
                MPI_Message m = MPI_MESSAGE_NULL;
                CHECK(MPI_Mprobe(0, 20, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS);
                MPI_Get_count(&st, MPI_BYTE, &cnt);
                CHECK(cnt == (int)n);
                CHECK(MPI_Mrecv(r, (int)n, MPI_BYTE, &m, &st) == MPI_SUCCESS);
            } else {
                CHECK(MPI_Recv(r, (int)n, MPI_BYTE, 0, 20, MPI_COMM_WORLD, &st) == MPI_SUCCESS);
            }
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK(cnt == (int)n && memcmp(r, want, n) == 0);
            CHECK(MPI_Send(ack, 4, MPI_BYTE, 0, 21, MPI_COMM_WORLD) == MPI_SUCCESS);
            CHECK(MPI_Recv(&more, 1, MPI_INT, 0, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
            tries++;
        }
        MPI_Request_free(&pr);
        free(r);
        /* Receives that may meet pieces are not bare: at most those before
           rank 1 saw the request. */
        CHECK(mgp2p_host_bare_count() - b1 <= (unsigned long)(tries > 2 ? tries - 2 : 0));
        mgp2p_grants(&asked, &sent, &got);
        if (first > 0)
            CHECK(sent == 1 && asked == 0 && got == 0 && chunky() - c0 == 2);
    }

    /* ---- to self, of any source; then rank 1 asks rank 0 and both end
       while that request may still be in flight ---- */
    unsigned char *d = buf_make(n, 55u, 1), *h = malloc(n);
    fill(want, n, 55u);
    for (int i = 0; i < 3; i++) {
        MPI_Request q;
        MPI_Status st;
        memset(h, 0xee, n);
        CHECK(MPI_Isend(d, (int)n, MPI_BYTE, rank, 30, MPI_COMM_WORLD, &q) == MPI_SUCCESS);
        CHECK(MPI_Recv(h, (int)n, MPI_BYTE, MPI_ANY_SOURCE, 30, MPI_COMM_WORLD, &st) ==
              MPI_SUCCESS);
        CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(st.MPI_SOURCE == rank && memcmp(h, want, n) == 0);
    }
    if (rank == 1) {
        CHECK(MPI_Send(d, (int)n, MPI_BYTE, 0, 31, MPI_COMM_WORLD) == MPI_SUCCESS);
    } else {
        memset(h, 0xee, n);
        CHECK(MPI_Recv(h, (int)n, MPI_BYTE, 1, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
              MPI_SUCCESS);
        CHECK(memcmp(h, want, n) == 0);
    }
    buf_free(d, 1);
    free(h);
    free(want);
    CHECK(!mgp2p_req_any());
    fprintf(stderr, "%s: %d errors; host windows bare %lu; device messages %d, in pieces %d\n",
            where, errs, bare1 - bare0, tries, pieces);
    MPI_Finalize();
    return errs ? 1 : 0;
}
