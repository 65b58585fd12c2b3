/*
 * vcl_bench [PLATFORM-SUBSTRING]: write/read bandwidth (blocking, 8 MiB and
 * up) and the time of a small kernel launch followed by clFinish, on the
 * first device of the named platform (default "mpigpu virtual").  Run it
 * once natively and once through a proxy to compare.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "mpigpu virtual";
    cl_platform_id ps[16], plat = NULL;
    cl_uint np = 0;
    cl_int err;
    char name[128];
    clGetPlatformIDs(16, ps, &np);
    for (cl_uint i = 0; i < np && !plat; i++) {
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (strstr(name, want))
            plat = ps[i];
    }
    if (!plat) {
        fprintf(stderr, "no platform matching \"%s\"\n", want);
        return 1;
    }
    cl_device_id dev;
    clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL);
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    const char *src = "kernel void k(global int *p) { p[get_global_id(0)] = 1; }";
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    clBuildProgram(prog, 1, &dev, "", NULL, NULL);
    cl_kernel k = clCreateKernel(prog, "k", &err);
    printf("# platform \"%s\"\n# bytes  write_GB/s  read_GB/s (best of 5)\n", name);
    for (size_t n = 8u << 20; n <= (256u << 20); n *= 4) {
        char *h = malloc(n);
        memset(h, 1, n);
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n, NULL, &err);
        double bw[2] = {0, 0};
        for (int dir = 0; dir < 2; dir++)
            for (int r = 0; r < 6; r++) {
                double t0 = now();
                err = dir ? clEnqueueReadBuffer(q, m, CL_TRUE, 0, n, h, 0, NULL, NULL)
                          : clEnqueueWriteBuffer(q, m, CL_TRUE, 0, n, h, 0, NULL, NULL);
                double g = n / (now() - t0) / 1e9;
                if (err)
                    return 2;
                if (r && g > bw[dir]) /* the first is a warm-up */
                    bw[dir] = g;
            }
        printf("%zu  %.2f  %.2f\n", n, bw[0], bw[1]);
        clReleaseMemObject(m);
        free(h);
    }
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    clSetKernelArg(k, 0, sizeof m, &m);
    enum { R = 2000 };
    static double t[R];
    size_t g = 1;
    for (int r = 0; r < R + 100; r++) {
        double t0 = now();
        clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
        clFinish(q);
        if (r >= 100)
            t[r - 100] = now() - t0;
    }
    qsort(t, R, sizeof t[0], cmp);
    printf("# launch + clFinish of a 1-item kernel: median %.1f us, p10 %.1f us, p90 %.1f us\n",
           t[R / 2] * 1e6, t[R / 10] * 1e6, t[R * 9 / 10] * 1e6);
    return 0;
}
