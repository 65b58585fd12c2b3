/* Partitioned communication (MPI_Psend_init, MPI_Precv_init, MPI_Pready,
   _range, _list, MPI_Parrived) on 2 ranks, every pair of host and device
   buffers, contiguous and strided types, three starts of each request with
   new data; rank 0 sends, rank 1 receives.  Checks every word of the
   receive buffer, the gaps of a strided type included, and that a
   partition reported by MPI_Parrived is on the device at once.  Then a
   device buffer attached for MPI_Bsend: the sends work, and
   MPI_Buffer_detach hands back the device address. */
#include "p2p_common.h"

#define PARTS 6
#define PER 1000

static int rank;

static MPI_Datatype mk_type(int strided)
{
    MPI_Datatype t, r;
    if (!strided)
        return MPI_INT;
    MPI_Type_vector(1, 1, 1, MPI_INT, &t);
    MPI_Type_create_resized(t, 0, 2 * sizeof(int), &r); /* one int every two */
    MPI_Type_free(&t);
    MPI_Type_commit(&r);
    return r;
}

static void one(int sdev, int rdev, int strided)
{
    MPI_Datatype t = mk_type(strided);
    const int n = PARTS * PER, stride = strided ? 2 : 1;
    size_t words = (size_t)n * stride + 8;
    int dev = rank == 0 ? sdev : rdev;
    int *buf = p2p_ints_make(dev, words), *h = malloc(words * sizeof(int));
    MPI_Request r = MPI_REQUEST_NULL;
    snprintf(where, sizeof(where), "rank %d send %s recv %s %s", rank, sdev ? "device" : "host",
             rdev ? "device" : "host", strided ? "vector" : "contig");
    if (rank == 0)
        CHECK(MPI_Psend_init(buf + 4, PARTS, PER, t, 1, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r) ==
              MPI_SUCCESS);
    else
        CHECK(MPI_Precv_init(buf + 4, PARTS, PER, t, 0, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r) ==
              MPI_SUCCESS);
    for (int it = 0; it < 3; it++) {
        for (size_t i = 0; i < words; i++)
            h[i] = rank == 0 ? (int)i * 3 + it : -(int)i - 1;
        p2p_ints_put(dev, buf, h, words);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(MPI_Start(&r) == MPI_SUCCESS);
        if (rank == 0) {
            /* Partitions ready out of order, by the three calls. */
            CHECK(MPI_Pready(PARTS - 1, r) == MPI_SUCCESS);
            int list[3] = {3, 0, 4};
            CHECK(MPI_Pready_list(3, list, r) == MPI_SUCCESS);
            CHECK(MPI_Pready_range(1, 2, r) == MPI_SUCCESS);
            CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        } else {
            /* Poll partition 0 until it arrives: it must be readable then. */
            int flag = 0;
            for (long spin = 0; !flag && spin < 100000000L; spin++)
                CHECK(MPI_Parrived(r, 0, &flag) == MPI_SUCCESS);
            CHECK(flag);
            if (rdev) {
                int first[2] = {0, 0};
                p2p_ints_get(1, first, buf + 4, 2);
                CHECK(first[0] == 4 * 3 + it);
            }
            CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            p2p_ints_get(dev, h, buf, words);
            int bad = 0;
            for (size_t i = 0; i < words; i++) {
                size_t k = i - 4;
                int data = i >= 4 && k < (size_t)n * stride && k % stride == 0;
                int want = data ? (int)i * 3 + it : -(int)i - 1;
                if (h[i] != want && bad++ < 3)
                    fprintf(stderr, "%s: start %d word %zu is %d, want %d\n", where, it, i, h[i],
                            want);
            }
            CHECK(bad == 0);
        }
    }
    CHECK(MPI_Request_free(&r) == MPI_SUCCESS);
    p2p_ints_free(dev, buf);
    free(h);
    if (strided)
        MPI_Type_free(&t);
}

static void bsend(void)
{
    int size = 0, *d = NULL, x[4] = {1, 2, 3, 4}, y[4] = {0};
    snprintf(where, sizeof(where), "rank %d Buffer_attach", rank);
    MPI_Pack_size(4, MPI_INT, MPI_COMM_WORLD, &size);
    size = 4 * (size + MPI_BSEND_OVERHEAD);
    CHECK(MPIX_Gpu_malloc((size_t)size, (void **)&d) == MPI_SUCCESS);
    CHECK(MPI_Buffer_attach(d, size) == MPI_SUCCESS);
    if (rank == 0) {
        for (int i = 0; i < 3; i++)
            CHECK(MPI_Bsend(x, 4, MPI_INT, 1, 20 + i, MPI_COMM_WORLD) == MPI_SUCCESS);
    } else {
        for (int i = 0; i < 3; i++) {
            CHECK(MPI_Recv(y, 4, MPI_INT, 0, 20 + i, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS);
            CHECK(y[0] == 1 && y[3] == 4);
        }
    }
    void *back = NULL;
    int bsize = 0;
    CHECK(MPI_Buffer_detach(&back, &bsize) == MPI_SUCCESS);
    CHECK(back == d && bsize == size);
    MPIX_Gpu_free(d);
}

int main(int argc, char **argv)
{
    int size = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "p2p_partitioned: needs 2 ranks\n");
        MPI_Finalize();
        return 77;
    }
    for (int kinds = 0; kinds < 4; kinds++)
        for (int strided = 0; strided < 2; strided++)
            one(kinds & 1, kinds >> 1, strided);
    bsend();
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s\n", all ? "Errors found" : " No Errors");
    MPI_Finalize();
    return all != 0;
}
