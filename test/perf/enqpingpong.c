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
#include <sys/resource.h>

#include "mpigpu.h"

/* CPU seconds of the process so far, every thread's. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
           1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

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
    double cb = 0, ce = 0;              /* CPU seconds of rank 0 in each half, all rounds */
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        MPI_Barrier(MPI_COMM_WORLD);
        double c0 = cpu_s();
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
        double c1 = cpu_s();
        MPI_Barrier(MPI_COMM_WORLD);
        double c2 = cpu_s();
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
        double c3 = cpu_s();
        if (r >= 0) {
            cb += c1 - c0;
            ce += c3 - c2;
            tb[r] = 1e6 * (t1 - t0) / (2.0 * iters);
            te[r] = 1e6 * (t3 - t2) / (2.0 * iters);
        }
    }
    qsort(tb, rounds, sizeof(double), cmp);
    qsort(te, rounds, sizeof(double), cmp);
    /* CPU time of rank 0 (its threads and the runtime's) per one-way
       message, mean over the rounds: what the wait costs besides time. */
    double ops = 2.0 * iters * rounds;
    if (rank == 0 && noblock)
        printf("# %d B, one-way latency (us), median of %d rounds of %d round trips\n"
               "enqueue %.2f\n",
               n, rounds, iters, te[rounds / 2]);
    else if (rank == 0)
        printf("# %d B, one-way latency (us), median of %d rounds of %d round trips\n"
               "blocking %.2f  enqueue %.2f  ratio %.2f\n",
               n, rounds, iters, tb[rounds / 2], te[rounds / 2], te[rounds / 2] / tb[rounds / 2]);
    if (rank == 0)
        printf("# rank 0's CPU time per one-way message (us): blocking %.2f  enqueue %.2f\n",
               only || !noblock ? 1e6 * cb / ops : 0.0, only ? 0.0 : 1e6 * ce / ops);
    MPIX_Gpu_free(d);
    clReleaseCommandQueue(q);
    free(tb);
    free(te);
    MPI_Finalize();
    return 0;
}
