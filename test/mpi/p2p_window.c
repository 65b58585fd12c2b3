/* A window of host receives on one buffer, as osu_bw posts them (issue 31):
   rank 0 sends WINDOWS windows of W messages of 128 KiB from host memory,
   rank 1 posts W MPI_Irecv into one host buffer, tells rank 0 to start,
   MPI_Waitall, and answers with a 4-byte ack.  Under the default protocol each of these receives
   runs through mpigpu (it could meet a chunked message); all but the first
   of a window overlap a pending receive and land in a host buffer of their
   own (doc/design.md, "Host receives in place").
   Checks on rank 1: every status says 128 KiB from rank 0 with its tag, the
   buffer holds the window's last message, W - 1 receives per window landed,
   after the first window no landing buffer was allocated (the kept buffers,
   MPIGPU_STAGING_KEEP, cover a window of 64), and at the end no request of
   mpigpu's is live (mgp2p_req_any). */
#include "mgtest.h"
#include "p2p_common.h"

#define W 64
#define WINDOWS 6
#define N (128 << 10)

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    snprintf(where, sizeof(where), "window rank %d", rank);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "p2p_window: needs 2 ranks\n");
        MPI_Finalize();
        return 1;
    }
    unsigned char *buf = malloc(N), *sent = malloc(N), ack[4] = {0};
    MPI_Request req[W];
    MPI_Status st[W];
    unsigned long allocs0 = 0, allocs1 = 0, in0 = 0, land0 = 0, in1 = 0, land1 = 0, sup0 = 0,
                  sup1 = 0;

    for (int w = 0; w < WINDOWS; w++) {
        if (w == 1) {
            mgdev_big_usage(NULL, &allocs0);
            mgp2p_host_receives(&in0, &land0);
            sup0 = mgp2p_host_superseded_count();
        }
        if (rank == 0) {
            /* One buffer per message would be osu_bw's one buffer; the
               last one's bytes differ per window, so a stale copy shows. */
            for (int i = 0; i < N; i++)
                sent[i] = (unsigned char)(i * 13 + w * 7 + 1);
            /* The window starts when all W receives are posted, so that
               they overlap whatever the timing. */
            CHECK(MPI_Recv(ack, 4, MPI_BYTE, 1, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
            for (int j = 0; j < W; j++)
                CHECK(MPI_Isend(sent, N, MPI_BYTE, 1, 100 + (j % 3), MPI_COMM_WORLD, &req[j]) ==
                      MPI_SUCCESS);
            CHECK(MPI_Waitall(W, req, st) == MPI_SUCCESS);
            CHECK(MPI_Recv(ack, 4, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
        } else {
            memset(buf, 0xee, N);
            for (int j = 0; j < W; j++)
                CHECK(MPI_Irecv(buf, N, MPI_BYTE, 0, 100 + (j % 3), MPI_COMM_WORLD, &req[j]) ==
                      MPI_SUCCESS);
            CHECK(MPI_Send(ack, 4, MPI_BYTE, 0, 98, MPI_COMM_WORLD) == MPI_SUCCESS);
            CHECK(MPI_Waitall(W, req, st) == MPI_SUCCESS);
            for (int j = 0; j < W; j++) {
                int got = -1;
                MPI_Get_count(&st[j], MPI_BYTE, &got);
                CHECK(got == N && st[j].MPI_SOURCE == 0 && st[j].MPI_TAG == 100 + (j % 3));
            }
            for (int i = 0; i < N; i++)
                sent[i] = (unsigned char)(i * 13 + w * 7 + 1);
            CHECK(memcmp(buf, sent, N) == 0);
            CHECK(MPI_Send(ack, 4, MPI_BYTE, 0, 99, MPI_COMM_WORLD) == MPI_SUCCESS);
        }
    }
    mgdev_big_usage(NULL, &allocs1);
    mgp2p_host_receives(&in1, &land1);
    sup1 = mgp2p_host_superseded_count();
    if (rank == 1 && p2p_first_len() > 0) {
        /* The path under test ran: in each window one receive in place and
           W - 1 landed. */
        CHECK(in1 - in0 == WINDOWS - 1 && land1 - land0 == (unsigned long)(WINDOWS - 1) * (W - 1));
        CHECK(allocs1 == allocs0);
        /* A landed receive skips its copy while another pending receive
           covers its bytes: at least all but the last to complete in each
           window (the in-place one may still be pending then too). */
        unsigned long sup = sup1 - sup0;
        CHECK(sup >= (unsigned long)(WINDOWS - 1) * (W - 2) &&
              sup <= (unsigned long)(WINDOWS - 1) * (W - 1));
    }
    /* The receives' requests are freed: the completion calls take their
       host-only path again (mgp2p_req_any). */
    CHECK(!mgp2p_req_any());
    if (rank == 1 || errs)
        fprintf(stderr,
                "%s: %d errors; windows %d of %d x %d B; landed %lu (copy skipped %lu), in place "
                "%lu; landing buffers allocated after the first window: %lu\n",
                where, errs, WINDOWS, W, N, land1 - land0, sup1 - sup0, in1 - in0,
                allocs1 - allocs0);
    free(buf);
    free(sent);
    MPI_Finalize();
    return errs ? 1 : 0;
}
