/*
 * dmaprobe: how fast the OpenCL runtime moves bytes between device memory and
 * each kind of host memory the library may hand it (doc/design.md, "Node
 * lanes"): pageable malloc memory, CL_MEM_ALLOC_HOST_PTR memory (pinned),
 * POSIX shared memory as it is, and the same shared pages once a
 * CL_MEM_USE_HOST_PTR buffer was made over them (which page-locks them on
 * NVIDIA's driver).  Best of 5 after 2 warm-up transfers, GB/s, reads
 * (device to host) and writes.  No MPI.  Usage: dmaprobe [MAX_MiB]
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static cl_command_queue q;
static cl_mem dev;

static void check(cl_int e, const char *what)
{
    if (e != CL_SUCCESS) {
        fprintf(stderr, "dmaprobe: %s failed: %d\n", what, e);
        exit(1);
    }
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* GB/s of a read (write = 0) or write of n bytes between dev and host. */
static double rate(void *host, size_t n, int write)
{
    double best = 1e30;
    for (int r = 0; r < 7; r++) {
        double t0 = now();
        if (write)
            check(clEnqueueWriteBuffer(q, dev, CL_FALSE, 0, n, host, 0, NULL, NULL), "write");
        else
            check(clEnqueueReadBuffer(q, dev, CL_FALSE, 0, n, host, 0, NULL, NULL), "read");
        check(clFinish(q), "clFinish");
        double t = now() - t0;
        if (r >= 2 && t < best)
            best = t;
    }
    return (double)n / best / 1e9;
}

int main(int argc, char **argv)
{
    cl_platform_id pl[8];
    cl_uint np = 0;
    cl_device_id d = NULL;
    cl_int e = CL_DEVICE_NOT_FOUND;
    char name[256] = "";
    size_t max = (size_t)(argc > 1 ? atoi(argv[1]) : 64) << 20;

    check(clGetPlatformIDs(8, pl, &np), "clGetPlatformIDs");
    for (cl_uint i = 0; i < np && e != CL_SUCCESS; i++)
        e = clGetDeviceIDs(pl[i], CL_DEVICE_TYPE_GPU, 1, &d, NULL);
    if (e != CL_SUCCESS)
        check(clGetDeviceIDs(pl[0], CL_DEVICE_TYPE_ALL, 1, &d, NULL), "clGetDeviceIDs");
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof(name), name, NULL);
    printf("device %s\n", name);
    cl_context ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
    check(e, "clCreateContext");
    q = clCreateCommandQueueWithProperties(ctx, d, NULL, &e);
    check(e, "clCreateCommandQueueWithProperties");
    dev = clCreateBuffer(ctx, CL_MEM_READ_WRITE, max, NULL, &e);
    check(e, "clCreateBuffer");

    char *pageable = malloc(max);
    cl_mem pin = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, max, NULL, &e);
    check(e, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)");
    char *pinned =
        clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, max, 0, NULL, NULL, &e);
    check(e, "clEnqueueMapBuffer");
    char shname[64];
    snprintf(shname, sizeof(shname), "/dmaprobe.%ld", (long)getpid());
    int fd = shm_open(shname, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)max) != 0) {
        perror("dmaprobe: shm_open");
        return 1;
    }
    shm_unlink(shname);
    char *shared = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (!pageable || shared == MAP_FAILED) {
        fprintf(stderr, "dmaprobe: out of memory\n");
        return 1;
    }
    memset(pageable, 1, max);
    memset(pinned, 1, max);
    memset(shared, 1, max);

    printf("%-10s %8s %8s %8s %8s %8s %8s %8s %8s\n", "bytes", "page_r", "page_w", "pin_r", "pin_w",
           "shm_r", "shm_w", "shmreg_r", "shmreg_w");
    double res[32][6];
    int rows = 0;
    for (size_t n = (size_t)1 << 20; n <= max && rows < 32; n *= 4, rows++) {
        res[rows][0] = rate(pageable, n, 0);
        res[rows][1] = rate(pageable, n, 1);
        res[rows][2] = rate(pinned, n, 0);
        res[rows][3] = rate(pinned, n, 1);
        res[rows][4] = rate(shared, n, 0);
        res[rows][5] = rate(shared, n, 1);
    }
    double t0 = now();
    cl_mem reg = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, max, shared, &e);
    check(e, "clCreateBuffer(CL_MEM_USE_HOST_PTR)");
    double treg = now() - t0;
    rows = 0;
    for (size_t n = (size_t)1 << 20; n <= max && rows < 32; n *= 4, rows++)
        printf("%-10zu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f\n", n, res[rows][0],
               res[rows][1], res[rows][2], res[rows][3], res[rows][4], res[rows][5],
               rate(shared, n, 0), rate(shared, n, 1));
    printf("CL_MEM_USE_HOST_PTR buffer over %zu shared bytes made in %.1f us\n", max, treg * 1e6);
    clReleaseMemObject(reg);
    check(clEnqueueUnmapMemObject(q, pin, pinned, 0, NULL, NULL), "unmap");
    clFinish(q);
    clReleaseMemObject(pin);
    clReleaseMemObject(dev);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    munmap(shared, max);
    free(pageable);
    return 0;
}
