/* 10^4 round trips of a vector type between device buffers on 2 ranks,
   checked every iteration, with flat memory use: resident memory and the
   staging pool's pinned bytes do not grow after a warm-up.
   With the argument "long" (and a small MPIGPU_STAGING_MAX): 100 trips of
   a message of 1 MiB, longer than the pool can stage, whose host buffers
   must be reused (MPIGPU_STAGING_KEEP), not allocated for every message.
   With "pipe" (under MPIGPU_P2P_PROTOCOL=chunked, node lanes off): 100
   trips of 1 MiB in pieces by MPI, MPIGPU_P2P_DEPTH of them in flight.
   With "lane" (chunked, MPIGPU_P2P_SHM_PIECE set): the same through the node
   lane, every piece after the first of each message through its ring. */
#include <unistd.h>

#include "mpit_read.h"
#include "p2p_common.h"

static long rss_kib(void)
{
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return 0;
    if (fscanf(f, "%ld %ld", &pages, &res) != 2)
        res = 0;
    fclose(f);
    return res * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char **argv)
{
    int rank, iters = 10000, warm = 200, count = 4, islong = 0, pipe = 0, lane = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (mpit_read_init()) {
        fprintf(stderr, "p2p_pingpong: MPI_T does not start\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (argc > 1 && !strcmp(argv[1], "long")) {
        islong = 1;
        iters = 100;
        warm = 20;
        count = 2048; /* 1 MiB packed */
    } else if (argc > 1 && !strcmp(argv[1], "pipe")) {
        /* Under MPIGPU_P2P_PROTOCOL=chunked: 1 MiB in pieces of the pool's
           chunk, MPIGPU_P2P_DEPTH of them in flight. */
        pipe = 1;
        iters = 100;
        warm = 20;
        count = 2048;
    } else if (argc > 1 && !strcmp(argv[1], "lane")) {
        lane = 1;
        iters = 100;
        warm = 20;
        count = 2048;
    } else if (argc > 1) {
        iters = atoi(argv[1]);
    }
    MPI_Datatype t;
    MPI_Type_vector(64, 1, 4, MPI_DOUBLE, &t); /* 512 packed bytes, 8-byte blocks */
    MPI_Type_commit(&t);
    size_t n = buf_size(t, count);
    unsigned char *d = buf_make(n, 1, 1), *h = malloc(n);
    long rss0 = 0;
    unsigned long long alloc0 = 0, hw = 0, alloc1 = 0, kept = 0, big0 = 0, big1 = 0;
    int peer = 1 - rank;

    snprintf(where, sizeof(where), "pingpong rank %d", rank);
    for (int i = 0; i < iters + warm; i++) {
        if (i == warm) {
            rss0 = rss_kib();
            alloc0 = mpit_value("mpigpu_staging_bytes");
            big0 = mpit_value("mpigpu_long_buffer_allocs");
        }
        int sender = i % 2;
        if (rank == sender) {
            /* Change the data every trip so that a stale buffer shows. */
            fill(h, n, (unsigned)i);
            MPIX_Gpu_memcpy(d, h, n);
            CHECK(MPI_Send(d + ORIGIN, count, t, peer, i & 1023, MPI_COMM_WORLD) == MPI_SUCCESS);
        } else {
            MPI_Status st;
            int got = -1;
            CHECK(MPI_Recv(d + ORIGIN, count, t, peer, i & 1023, MPI_COMM_WORLD, &st) ==
                  MPI_SUCCESS);
            MPI_Get_count(&st, t, &got);
            CHECK(got == count);
            /* Outside the type the buffer keeps what the previous trip left. */
            MPIX_Gpu_memcpy(h, d, n);
            unsigned char *e = expected(t, count, (unsigned)i, (unsigned)(i - 1));
            CHECK(i == 0 || memcmp(h, e, n) == 0);
            free(e);
        }
        if (errs > 0)
            break;
    }
    long rss1 = rss_kib();
    /* The library's counters through MPI_T (mpit_read.c); the pool's cap is
       the MPIGPU_STAGING_MAX it read. */
    alloc1 = mpit_value("mpigpu_staging_bytes");
    hw = mpit_value("mpigpu_staging_bytes_high");
    kept = mpit_value("mpigpu_long_buffer_bytes");
    big1 = mpit_value("mpigpu_long_buffer_allocs");
    long long cap = mpit_setting_bytes("MPIGPU_STAGING_MAX");
    CHECK(cap > 0);
    CHECK(hw <= (unsigned long long)cap);
    CHECK(alloc1 == alloc0);
    /* Long messages: host buffers were needed (the warm-up allocated them),
       and every later message reused one. */
    CHECK(!islong || (big0 > 0 && big1 == big0 && kept > 0));
    /* Pieces: as many in flight as MPIGPU_P2P_DEPTH says (the 64K pool has
       four 16K chunks, so three fit beside one spare), no long-message
       buffer was allocated after the warm-up (the receive's landing buffer
       is kept), and with more than one piece in flight the worker thread
       packed or unpacked pieces while MPI moved others. */
    const char *dv = getenv("MPIGPU_P2P_DEPTH");
    int depth = dv ? atoi(dv) : 3, high = (int)mpit_value("mpigpu_p2p_pipeline_depth_high");
    unsigned long jobs = (unsigned long)mpit_value("mpigpu_p2p_worker_jobs");
    CHECK(!pipe || (high == depth && big1 == big0));
    CHECK(!pipe || (depth > 1 ? jobs > 0 : jobs == 0));
    /* Lane: each rank sent and received (iters + warm) / 2 messages, each a
       first piece (MPIGPU_P2P_FIRST or the pool's quarter, less the 40-byte
       header)
       by MPI and the rest in pieces of one slot through the ring. */
    unsigned long lsent = (unsigned long)mpit_value("mpigpu_p2p_lane_pieces_sent"),
                  lrecv = (unsigned long)mpit_value("mpigpu_p2p_lane_pieces_received");
    long slot = env_bytes("MPIGPU_P2P_SHM_PIECE", 8 << 20),
         rest = (long)(count * 512) - ((long)p2p_first_len() - 40);
    unsigned long want =
        (unsigned long)((iters + warm) / 2) * (unsigned long)((rest + slot - 1) / slot);
    CHECK(!lane || (lsent == want && lrecv == want && high == 1 && big1 == big0));
    CHECK(lane || (lsent == 0 && lrecv == 0) || !pipe);
    /* A leak of even 100 bytes per trip would show as ~1 MiB.  AddressSanitizer
       keeps freed memory in quarantine (up to 256 MiB), so there only the
       staging checks above apply. */
#ifndef __SANITIZE_ADDRESS__
    CHECK(rss1 - rss0 < 512);
#endif
    if (rank == 0 || errs)
        fprintf(stderr,
                "rank %d: rss %ld -> %ld KiB, staging %llu -> %llu B (high water %llu, cap %lld), "
                "long-message buffers: %llu -> %llu allocated, %llu B kept, pieces in flight %d, "
                "worker jobs %lu, lane pieces sent %lu received %lu\n",
                rank, rss0, rss1, alloc0, alloc1, hw, cap, big0, big1, kept, high, jobs, lsent,
                lrecv);
    MPI_Type_free(&t);
    buf_free(d, 1);
    free(h);
    mpit_read_finalize();
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all == 0 ? " No Errors\n" : " Found %d errors\n", all);
    MPI_Finalize();
    return all != 0;
}
