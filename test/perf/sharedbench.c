/* Issue 29's targets for host-coherent device memory, one process:
     init:  a host loop stores N bytes through a shared pointer
            (MPIX_Gpu_malloc_shared), then a kernel reads them; against a
            host loop into malloc memory + clEnqueueWriteBuffer + the kernel;
     sum:   a kernel writes N bytes, then the host sums them through the
            shared pointer; against the kernel + clEnqueueReadBuffer + the sum.
   Each is timed end to end (median of -r runs) and printed with the ratio
   shared / explicit.  -n: no kernels, only the data movement (the read
   kernel becomes MPIX_Gpu_sync, the write kernel a clEnqueueFillBuffer), so
   that the costs of the protocol stand out from the kernels' on a CPU
   device.  Usage: sharedbench [-m MiB] [-r runs] [-n]; the settings
   (MPIGPU_SHARED_ZERO_COPY, MPIGPU_SHARED_BLOCK, MPIGPU_SHARED_DIRTY) choose
   the mode.  Run: mpiexec -n 1 test/perf/sharedbench -m 256 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpigpu.h"

static cl_command_queue q;
static cl_kernel k_read, k_write;
static cl_mem acc;
static int nokernel;

static const char *src =
    "kernel void rd(global const uint *a, global uint *acc, uint n) {\n"
    "    size_t i = get_global_id(0), g = get_global_size(0); uint s = 0;\n"
    "    for (size_t j = i; j < n; j += g) s += a[j];\n"
    "    acc[i] = s; }\n"
    "kernel void wr(global uint *a, uint n, uint seed) {\n"
    "    size_t i = get_global_id(0), g = get_global_size(0);\n"
    "    for (size_t j = i; j < n; j += g) a[j] = (uint)j * 2654435761u + seed; }\n";

#define GLOBAL 4096

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what, cl_int err)
{
    fprintf(stderr, "sharedbench: %s failed (%d)\n", what, err);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void kernel_read(cl_mem m, cl_uint n)
{
    size_t g = GLOBAL;
    if (nokernel)
        return;
    cl_int err = clSetKernelArg(k_read, 0, sizeof(m), &m);
    err |= clSetKernelArg(k_read, 1, sizeof(acc), &acc);
    err |= clSetKernelArg(k_read, 2, sizeof(n), &n);
    if (err || (err = clEnqueueNDRangeKernel(q, k_read, 1, NULL, &g, NULL, 0, NULL, NULL)) ||
        (err = clFinish(q)))
        die("the read kernel", err);
}

static void kernel_write(cl_mem m, cl_uint n, cl_uint seed)
{
    size_t g = GLOBAL;
    if (nokernel) {
        cl_int err =
            clEnqueueFillBuffer(q, m, &seed, sizeof(seed), 0, (size_t)n * 4, 0, NULL, NULL);
        if (err || (err = clFinish(q)))
            die("clEnqueueFillBuffer", err);
        return;
    }
    cl_int err = clSetKernelArg(k_write, 0, sizeof(m), &m);
    err |= clSetKernelArg(k_write, 1, sizeof(n), &n);
    err |= clSetKernelArg(k_write, 2, sizeof(seed), &seed);
    if (err || (err = clEnqueueNDRangeKernel(q, k_write, 1, NULL, &g, NULL, 0, NULL, NULL)) ||
        (err = clFinish(q)))
        die("the write kernel", err);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(*t), cmp);
    return t[n / 2];
}

int main(int argc, char **argv)
{
    size_t mib = 256;
    int runs = 5, opt;
    cl_context ctx;
    cl_device_id dev;
    cl_int err;
    MPI_Init(&argc, &argv);
    while ((opt = getopt(argc, argv, "m:r:n")) != -1) {
        if (opt == 'n')
            nokernel = 1;
        else if (opt == 'm')
            mib = strtoull(optarg, NULL, 10);
        else if (opt == 'r')
            runs = atoi(optarg);
    }
    if (runs < 1 || runs > 100)
        runs = 5;
    size_t bytes = mib << 20, n = bytes / 4;
    MPIX_Gpu_get_device(&ctx, &dev, &q);
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    if (err || (err = clBuildProgram(p, 1, &dev, "", NULL, NULL)))
        die("the build", err);
    k_read = clCreateKernel(p, "rd", &err);
    k_write = clCreateKernel(p, "wr", &err);
    acc = clCreateBuffer(ctx, CL_MEM_READ_WRITE, GLOBAL * 4, NULL, &err);

    uint32_t *sh = NULL, *h = malloc(bytes);
    cl_mem plain = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err || !h || MPIX_Gpu_malloc_shared(bytes, (void **)&sh) != MPI_SUCCESS)
        die("the allocations", err);
    cl_mem shm = NULL;
    int isdev;
    MPIX_Gpu_query(sh, &isdev, &shm, NULL);
    memset(h, 0, bytes); /* first touch out of the timings */

    double t_init_sh[100], t_init_ex[100], t_sum_sh[100], t_sum_ex[100];
    volatile uint64_t sink = 0;
    for (int r = 0; r < runs; r++) {
        double t0 = now();
        for (size_t i = 0; i < n; i++)
            sh[i] = (uint32_t)(i + r);
        if (nokernel)
            MPIX_Gpu_sync(sh, bytes);
        kernel_read(shm, (cl_uint)n);
        double t1 = now();
        for (size_t i = 0; i < n; i++)
            h[i] = (uint32_t)(i + r);
        if ((err = clEnqueueWriteBuffer(q, plain, CL_TRUE, 0, bytes, h, 0, NULL, NULL)))
            die("clEnqueueWriteBuffer", err);
        kernel_read(plain, (cl_uint)n);
        double t2 = now();
        kernel_write(shm, (cl_uint)n, (cl_uint)r);
        uint64_t s = 0;
        for (size_t i = 0; i < n; i++)
            s += sh[i];
        double t3 = now();
        kernel_write(plain, (cl_uint)n, (cl_uint)r);
        if ((err = clEnqueueReadBuffer(q, plain, CL_TRUE, 0, bytes, h, 0, NULL, NULL)))
            die("clEnqueueReadBuffer", err);
        uint64_t s2 = 0;
        for (size_t i = 0; i < n; i++)
            s2 += h[i];
        double t4 = now();
        if (s != s2) {
            fprintf(stderr, "sharedbench: sums differ (%llu, %llu)\n", (unsigned long long)s,
                    (unsigned long long)s2);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        sink += s;
        t_init_sh[r] = t1 - t0;
        t_init_ex[r] = t2 - t1;
        t_sum_sh[r] = t3 - t2;
        t_sum_ex[r] = t4 - t3;
    }
    double a = median(t_init_sh, runs), b = median(t_init_ex, runs);
    double c = median(t_sum_sh, runs), d = median(t_sum_ex, runs);
    const char *zc = getenv("MPIGPU_SHARED_ZERO_COPY"), *blk = getenv("MPIGPU_SHARED_BLOCK"),
               *dirty = getenv("MPIGPU_SHARED_DIRTY");
    printf("# %zu MiB, median of %d%s; ZERO_COPY=%s BLOCK=%s DIRTY=%s\n", mib, runs,
           nokernel ? ", no kernels" : "", zc ? zc : "-", blk ? blk : "-", dirty ? dirty : "-");
    printf("init: shared %.1f ms  explicit %.1f ms  ratio %.2f\n", a * 1e3, b * 1e3, a / b);
    printf("sum:  shared %.1f ms  explicit %.1f ms  ratio %.2f\n", c * 1e3, d * 1e3, c / d);
    MPIX_Gpu_free(sh);
    clReleaseMemObject(plain);
    clReleaseMemObject(acc);
    clReleaseKernel(k_read);
    clReleaseKernel(k_write);
    clReleaseProgram(p);
    free(h);
    MPI_Finalize();
    return 0;
}
