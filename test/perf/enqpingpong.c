/* 64-byte ping-pong between 2 ranks on device buffers (not a test): the
   blocking MPI_Send/MPI_Recv against the enqueue calls on one in-order
   queue, each round trip waited for with clFinish only.  The two run in
   alternate rounds of ITERS round trips; it prints the median of each and
   their ratio.  Usage: mpiexec -n 2 enqpingpong [BYTES [ITERS [ROUNDS [blocking|enqueue]]]]
   (blocking: the blocking half only, e.g. under MPIGPU_ENQUEUE_PROGRESS=off
   to time it at the level the program asked for; enqueue: the enqueue half
   only, e.g. under MPIGPU_VERBOSE=1 for the enqueue thread's trace without
   the blocking half's log lines). */
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

#include "mpigpu.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rank, n = argc > 1 ? atoi(argv[1]) : 64, iters = argc > 2 ? atoi(argv[2]) : 200;
    int rounds = argc > 3 ? atoi(argv[3]) : 7;
    int only = argc > 4 && !strcmp(argv[4], "blocking"), noblock = argc > 4 && !only;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    cl_context ctx;
    cl_device_id dev;
    MPIX_Gpu_get_device(&ctx, &dev, NULL);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, NULL);
    char *d = NULL;
    MPIX_Gpu_malloc(n, (void **)&d);
    int peer = 1 - rank;
    double *tb = malloc(sizeof(double) * rounds), *te = malloc(sizeof(double) * rounds);
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters && !noblock; i++) {
            if (rank == 0) {
                MPI_Send(d, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                MPI_Recv(d, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(d, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(d, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            }
        }
        double t1 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        for (int i = 0; i < iters && !only; i++) {
            if (rank == 0) {
                MPIX_Enqueue_send(d, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, q, 0, NULL, NULL);
                MPIX_Enqueue_recv(d, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, q, 0, NULL, NULL);
            } else {
                MPIX_Enqueue_recv(d, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, q, 0, NULL, NULL);
                MPIX_Enqueue_send(d, n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, q, 0, NULL, NULL);
            }
            clFinish(q);
        }
        double t3 = MPI_Wtime();
        if (r >= 0) {
            tb[r] = 1e6 * (t1 - t0) / (2.0 * iters);
            te[r] = 1e6 * (t3 - t2) / (2.0 * iters);
        }
    }
    qsort(tb, rounds, sizeof(double), cmp);
    qsort(te, rounds, sizeof(double), cmp);
    if (rank == 0 && noblock)
        printf("# %d B, one-way latency (us), median of %d rounds of %d round trips\n"
               "enqueue %.2f\n",
               n, rounds, iters, te[rounds / 2]);
    else if (rank == 0)
        printf("# %d B, one-way latency (us), median of %d rounds of %d round trips\n"
               "blocking %.2f  enqueue %.2f  ratio %.2f\n",
               n, rounds, iters, tb[rounds / 2], te[rounds / 2], te[rounds / 2] / tb[rounds / 2]);
    MPIX_Gpu_free(d);
    clReleaseCommandQueue(q);
    free(tb);
    free(te);
    MPI_Finalize();
    return 0;
}
