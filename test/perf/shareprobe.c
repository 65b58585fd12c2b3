/*
 * shareprobe: what one small OpenCL command costs when two processes take
 * turns on one GPU (issue 31: a small device-to-device ping-pong pays about
 * 155 us on the shared H100, a ReadBufferRect send about 21 us).  No
 * library: plain MPI and OpenCL, so that the figures are the runtime's.
 *
 * Two ranks pass a 1-byte token back and forth.  Before passing it on, the
 * rank holding it runs one command of the probed kind on its own context
 * and waits for it (clFinish).  Per kind it prints the median and mean time
 * of one turn (half a round trip), once with both ranks running the
 * command ("shared") and once with rank 1 only passing the token ("solo").
 *
 * Kinds: none (MPI only), read_pageable, read_pinned, write_pinned (BYTES
 * between a device buffer and malloc or mapped CL_MEM_ALLOC_HOST_PTR
 * memory), rect1 and rect2 (clEnqueueReadBufferRect of one row of BYTES, or
 * two rows of BYTES/2, into pinned memory), copy_d2d (clEnqueueCopyBuffer
 * between two device buffers), copy_d2pin (into a CL_MEM_ALLOC_HOST_PTR
 * buffer), kernel (an empty kernel), kernel_read (an empty kernel, then
 * read_pinned), write_pageable, wrect1, wrect2 and wrect_bytes
 * (clEnqueueWriteBufferRect from pinned memory: one row, two rows, or BYTES
 * rows of one byte), map_write (map with CL_MAP_WRITE_INVALIDATE_REGION,
 * memcpy, unmap).
 *
 * usage: mpiexec -n 2 shareprobe [-s BYTES] [-i ITERS] [-p PLATFORM_SUBSTRING]
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cl_command_queue q;
static cl_kernel empty;
static cl_mem dev, dev2, pin;
static void *pin_host, *pageable;
static size_t bytes = 64;

static void check(cl_int e, const char *what)
{
    if (e != CL_SUCCESS) {
        fprintf(stderr, "shareprobe: %s failed: %d\n", what, e);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static cl_device_id pick(const char *want)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    check(clGetPlatformIDs(16, plats, &np), "clGetPlatformIDs");
    for (cl_uint i = 0; i < np; i++) {
        char name[256] = "";
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof(name), name, NULL);
        if (want && !strstr(name, want))
            continue;
        cl_device_id d;
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &d, NULL) == CL_SUCCESS)
            return d;
    }
    fprintf(stderr, "shareprobe: no device%s%s\n", want ? " on a platform named " : "",
            want ? want : "");
    MPI_Abort(MPI_COMM_WORLD, 1);
    return NULL;
}

static void setup(const char *want)
{
    cl_int e;
    cl_device_id d = pick(want);
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
    check(e, "clCreateContext");
    q = clCreateCommandQueueWithProperties(ctx, d, NULL, &e);
    check(e, "clCreateCommandQueue");
    size_t sz = 2 * (bytes < 4096 ? 4096 : bytes);
    dev = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sz, NULL, &e);
    check(e, "clCreateBuffer(dev)");
    dev2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sz, NULL, &e);
    check(e, "clCreateBuffer(dev2)");
    pin = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, sz, NULL, &e);
    check(e, "clCreateBuffer(pinned)");
    pin_host =
        clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, sz, 0, NULL, NULL, &e);
    check(e, "clEnqueueMapBuffer");
    pageable = calloc(1, sz);
    const char *src = "kernel void empty(global char *p) { }";
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
    check(e, "clCreateProgramWithSource");
    check(clBuildProgram(prog, 1, &d, "", NULL, NULL), "clBuildProgram");
    empty = clCreateKernel(prog, "empty", &e);
    check(e, "clCreateKernel");
    check(clSetKernelArg(empty, 0, sizeof(cl_mem), &dev), "clSetKernelArg");
    check(clEnqueueWriteBuffer(q, dev, CL_TRUE, 0, sz, pageable, 0, NULL, NULL), "warm write");
}

enum kind {
    K_NONE,
    K_READ_PAGEABLE,
    K_READ_PINNED,
    K_WRITE_PINNED,
    K_RECT1,
    K_RECT2,
    K_WRITE_PAGEABLE,
    K_WRECT1,
    K_WRECT2,
    K_WRECT_BYTES,
    K_MAP_WRITE,
    K_COPY_D2D,
    K_COPY_D2PIN,
    K_KERNEL,
    K_KERNEL_READ,
    K_COUNT
};
static const char *const names[K_COUNT] = {
    "none",      "read_pageable",  "read_pinned", "write_pinned", "rect1",
    "rect2",     "write_pageable", "wrect1",      "wrect2",       "wrect_bytes",
    "map_write", "copy_d2d",       "copy_d2pin",  "kernel",       "kernel_read"};

static void run(enum kind k)
{
    size_t zero[3] = {0, 0, 0};
    switch (k) {
    case K_NONE:
        return;
    case K_READ_PAGEABLE:
        check(clEnqueueReadBuffer(q, dev, CL_FALSE, 0, bytes, pageable, 0, NULL, NULL), "read");
        break;
    case K_READ_PINNED:
        check(clEnqueueReadBuffer(q, dev, CL_FALSE, 0, bytes, pin_host, 0, NULL, NULL), "read");
        break;
    case K_WRITE_PINNED:
        check(clEnqueueWriteBuffer(q, dev, CL_FALSE, 0, bytes, pin_host, 0, NULL, NULL), "write");
        break;
    case K_RECT1:
    case K_RECT2: {
        size_t rows = k == K_RECT1 ? 1 : 2, row = bytes / rows ? bytes / rows : 1;
        size_t region[3] = {row, rows, 1};
        check(clEnqueueReadBufferRect(q, dev, CL_FALSE, zero, zero, region, 2 * row, 0, row, 0,
                                      pin_host, 0, NULL, NULL),
              "rect");
        break;
    }
    case K_WRITE_PAGEABLE:
        check(clEnqueueWriteBuffer(q, dev, CL_FALSE, 0, bytes, pageable, 0, NULL, NULL), "write");
        break;
    case K_WRECT1:
    case K_WRECT2:
    case K_WRECT_BYTES: {
        size_t rows = k == K_WRECT1 ? 1 : k == K_WRECT2 ? 2 : bytes;
        size_t row = bytes / rows ? bytes / rows : 1;
        size_t region[3] = {row, rows, 1};
        check(clEnqueueWriteBufferRect(q, dev, CL_FALSE, zero, zero, region, row, 0, row, 0,
                                       pin_host, 0, NULL, NULL),
              "write rect");
        break;
    }
    case K_MAP_WRITE: {
        cl_int e;
        void *p = clEnqueueMapBuffer(q, dev, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 0, bytes, 0,
                                     NULL, NULL, &e);
        check(e, "map");
        memcpy(p, pin_host, bytes);
        check(clEnqueueUnmapMemObject(q, dev, p, 0, NULL, NULL), "unmap");
        break;
    }
    case K_COPY_D2D:
        check(clEnqueueCopyBuffer(q, dev, dev2, 0, 0, bytes, 0, NULL, NULL), "copy");
        break;
    case K_COPY_D2PIN:
        check(clEnqueueCopyBuffer(q, dev, pin, 0, 0, bytes, 0, NULL, NULL), "copy");
        break;
    case K_KERNEL:
    case K_KERNEL_READ: {
        size_t g = 1;
        check(clEnqueueNDRangeKernel(q, empty, 1, NULL, &g, NULL, 0, NULL, NULL), "kernel");
        if (k == K_KERNEL_READ)
            check(clEnqueueReadBuffer(q, dev, CL_FALSE, 0, bytes, pin_host, 0, NULL, NULL), "read");
        break;
    }
    default:
        break;
    }
    check(clFinish(q), "clFinish");
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One turn's median and mean in us: half of each round trip. */
static void probe(int rank, enum kind k, int solo, int iters, double *t)
{
    char tok = 0;
    int peer = 1 - rank, warm = iters / 10 + 2;
    for (int i = 0; i < warm + iters; i++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            run(k);
            MPI_Send(&tok, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(&tok, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&tok, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!solo)
                run(k);
            MPI_Send(&tok, 1, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        }
        if (i >= warm)
            t[i - warm] = (MPI_Wtime() - t0) * 1e6 / 2;
    }
}

int main(int argc, char **argv)
{
    int rank, size, iters = 200;
    const char *want = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-s"))
            bytes = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "-i"))
            iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-p"))
            want = argv[i + 1];
    }
    if (size != 2 || bytes == 0 || iters < 1) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n 2 shareprobe [-s BYTES] [-i ITERS] [-p PLATFORM]\n");
        MPI_Finalize();
        return 2;
    }
    setup(want);
    double *t = calloc((size_t)iters, sizeof(*t));
    if (rank == 0)
        printf("# shareprobe: %zu bytes, %d turns; us per turn (half a round trip)\n"
               "# %-14s %12s %12s %12s %12s\n",
               bytes, iters, "kind", "shared_med", "shared_mean", "solo_med", "solo_mean");
    for (int k = 0; k < K_COUNT; k++) {
        double r[4];
        for (int solo = 0; solo < 2; solo++) {
            probe(rank, (enum kind)k, solo, iters, t);
            double sum = 0;
            for (int i = 0; i < iters; i++)
                sum += t[i];
            qsort(t, (size_t)iters, sizeof(*t), cmp);
            r[2 * solo] = t[iters / 2];
            r[2 * solo + 1] = sum / iters;
        }
        if (rank == 0)
            printf("  %-14s %12.2f %12.2f %12.2f %12.2f\n", names[k], r[0], r[1], r[2], r[3]);
    }
    free(t);
    MPI_Finalize();
    return 0;
}
