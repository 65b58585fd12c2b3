/* File I/O through the enqueue calls (not a test): MIB MiB of packed bytes
   written to and read from a file, from a host buffer with MPI_File_write_at
   and MPI_File_read_at against a device buffer with
   MPIX_Enqueue_file_write_at and MPIX_Enqueue_file_read_at waited for with
   clFinish, in alternate rounds on one rank; it prints the median time of
   each, the rates, and the ratio of the device's rate to the host's (issue
   23's target: at least 0.9).  TYPE cont moves MPI_BYTE; vect moves every
   other double of a buffer twice as long (the pack engine packs it), against
   the host writing the same packed bytes, and also against a host buffer of
   the same layout and datatype (MPI, i.e. ROMIO, packs it).
   Usage: enqfile [MIB [ROUNDS [DIR [cont|vect]]]] (DIR default /dev/shm). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpigpu.h"

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(double), cmp);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 256;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    const char *dir = argc > 3 ? argv[3] : "/dev/shm";
    int vect = argc > 4 && !strcmp(argv[4], "vect");
    size_t n = mib << 20; /* packed bytes */
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    cl_context ctx;
    cl_device_id dev;
    MPIX_Gpu_get_device(&ctx, &dev, NULL);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, NULL);
    MPI_Datatype dt = MPI_BYTE;
    int count = (int)n;
    size_t span = n;
    if (vect) {
        MPI_Type_vector((int)(n / 8), 1, 2, MPI_DOUBLE, &dt);
        MPI_Type_commit(&dt);
        count = 1;
        span = 2 * n;
    }
    char *h = malloc(n), *back = malloc(n), *d = NULL;
    if (!h || !back || MPIX_Gpu_malloc(span, (void **)&d) != MPI_SUCCESS) {
        fprintf(stderr, "enqfile: out of memory for %zu MiB\n", mib);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < n; i++)
        h[i] = (char)(i * 7 + 1);
    /* the device buffer holds the same packed bytes */
    if (vect) {
        double *t = calloc(span / 8, 8);
        for (size_t i = 0; i < n / 8; i++)
            memcpy(&t[2 * i], h + 8 * i, 8);
        MPIX_Gpu_memcpy(d, t, span);
        free(t);
    } else {
        MPIX_Gpu_memcpy(d, h, n);
    }
    char path[512];
    snprintf(path, sizeof(path), "%s/mpigpu-enqfile-%d.bin", dir, (int)getpid());
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) !=
        MPI_SUCCESS) {
        fprintf(stderr, "enqfile: cannot open %s\n", path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *t[6];
    char *hv = NULL; /* vect: a host buffer of the device's layout */
    if (vect) {
        hv = malloc(span);
        MPIX_Gpu_memcpy(hv, d, span);
    }
    for (int k = 0; k < 6; k++)
        t[k] = malloc(sizeof(double) * rounds);
    int bad = 0;
    for (int r = -1; r < rounds; r++) { /* round -1 warms up */
        double t0 = MPI_Wtime();
        MPI_File_write_at(fh, 0, h, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
        double t1 = MPI_Wtime();
        MPIX_Enqueue_file_write_at(fh, 0, d, count, dt, q, 0, NULL, NULL);
        clFinish(q);
        double t2 = MPI_Wtime();
        MPI_File_read_at(fh, 0, back, (int)n, MPI_BYTE, MPI_STATUS_IGNORE);
        double t3 = MPI_Wtime();
        bad |= memcmp(back, h, n) != 0; /* the device wrote the host's bytes */
        double t3b = MPI_Wtime();
        MPIX_Enqueue_file_read_at(fh, 0, d, count, dt, q, 0, NULL, NULL);
        clFinish(q);
        double t4 = MPI_Wtime();
        double t5 = MPI_Wtime(), t6 = t5, t7 = t5;
        if (vect) {
            MPI_File_write_at(fh, 0, hv, 1, dt, MPI_STATUS_IGNORE);
            t6 = MPI_Wtime();
            MPI_File_read_at(fh, 0, hv, 1, dt, MPI_STATUS_IGNORE);
            t7 = MPI_Wtime();
        }
        if (r >= 0) {
            t[4][r] = t6 - t5;
            t[5][r] = t7 - t6;
            t[0][r] = t1 - t0;
            t[1][r] = t2 - t1;
            t[2][r] = t3 - t2;
            t[3][r] = t4 - t3b;
        }
    }
    MPI_File_close(&fh);
    unlink(path);
    double m[6];
    for (int k = 0; k < 6; k++)
        m[k] = median(t[k], rounds);
    printf("# %zu MiB packed (%s) to %s, median of %d rounds, ms and GB/s\n", mib,
           vect ? "vector of doubles, stride 2" : "MPI_BYTE", dir, rounds);
    printf("write host %.2f ms %.2f GB/s  device %.2f ms %.2f GB/s  device/host rate %.2f\n",
           1e3 * m[0], n / m[0] * 1e-9, 1e3 * m[1], n / m[1] * 1e-9, m[0] / m[1]);
    printf("read  host %.2f ms %.2f GB/s  device %.2f ms %.2f GB/s  device/host rate %.2f\n",
           1e3 * m[2], n / m[2] * 1e-9, 1e3 * m[3], n / m[3] * 1e-9, m[2] / m[3]);
    if (vect)
        printf("host buffer of the same layout and type: write %.2f ms (device/host rate %.2f)  "
               "read %.2f ms (%.2f)\n",
               1e3 * m[4], m[4] / m[1], 1e3 * m[5], m[5] / m[3]);
    if (bad)
        printf("WRONG BYTES: the file written from the device differs from the host's\n");
    for (int k = 0; k < 6; k++)
        free(t[k]);
    free(hv);
    if (vect)
        MPI_Type_free(&dt);
    MPIX_Gpu_free(d);
    free(h);
    free(back);
    clReleaseCommandQueue(q);
    MPI_Finalize();
    return bad;
}
