/*
 * launchprobe: where the per-call time of a small device-to-device pack goes,
 * without MPI and without the library's host code.  On one in-order queue it
 * times (median of ITERS calls, each a launch and a clFinish):
 *   empty0    an empty kernel without arguments (the floor of a launch);
 *   empty15   an empty kernel with 13 long and 2 buffer arguments;
 *   empty2, empty6, empty_s: 2 buffers; 4 longs and 2 buffers; a struct of 13
 *             longs by value and 2 buffers (is the launch's cost per argument
 *             or per byte?);
 *   hand      packbench's hand_vect (8-byte words), every argument set per call;
 *   lib       the library's own grid vector kernel (mg_vecg_pack_w8, built from
 *             the embedded sources as the library builds it: its scalars in
 *             one mgpk_grid_args_t), only the two buffers set per call, as
 *             the library does;
 *   lib_all   the same kernel with all 3 arguments set per call.
 * for the vector of 8 B blocks every STRIDE bytes, NWORDS packed words.  The
 * library's MPI_Pack of the same layout is timed by mpigpu-packbench
 * (pack_d2d); the difference is the library's host path.
 *
 * usage: launchprobe [-s STRIDE] [-i ITERS] [-l LOCAL] NWORDS...
 */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mgdt_format.h"
#include "mgpk.h"

extern const char perf_hand_src[];

#define NARGS 15

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static cl_program build(cl_context ctx, cl_device_id dev, const char *src, const char *opts)
{
    cl_int err;
    size_t len = strlen(src);
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, &len, &err);
    if (err != CL_SUCCESS || clBuildProgram(p, 1, &dev, opts, NULL, NULL) != CL_SUCCESS) {
        char log[2000] = "";
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, NULL);
        fprintf(stderr, "launchprobe: build failed: %s\n", log);
        exit(1);
    }
    return p;
}

static const char empty_src[] =
    "kernel void empty0(void) {}\n"
    "kernel void empty15(long a, long b, long c, long d, long e, long f, long g, long h,\n"
    "                    long i, long j, long k, long l, long m, global uchar *x,\n"
    "                    global uchar *y) {}\n"
    "kernel void empty2(global uchar *x, global uchar *y) {}\n"
    "kernel void empty6(long a, long b, long c, long d, global uchar *x, global uchar *y) {}\n"
    "typedef struct { long v[13]; } args13;\n"
    "kernel void empty_s(args13 a, global uchar *x, global uchar *y) {}\n";

typedef struct probe {
    cl_command_queue q;
    cl_kernel k;
    size_t global, local;
    int nset; /* arguments set before each launch: the last nset */
    size_t sz[NARGS];
    const void *val[NARGS];
    int nargs;
} probe_t;

static double run(const probe_t *p, int iters, double *t)
{
    for (int it = -5; it < iters; it++) {
        double t0 = now_us();
        for (int a = p->nargs - p->nset; a < p->nargs; a++)
            if (clSetKernelArg(p->k, (cl_uint)a, p->sz[a], p->val[a]) != CL_SUCCESS) {
                fprintf(stderr, "launchprobe: clSetKernelArg %d failed\n", a);
                exit(1);
            }
        const size_t *lp = p->local ? &p->local : NULL;
        if (clEnqueueNDRangeKernel(p->q, p->k, 1, NULL, &p->global, lp, 0, NULL, NULL) !=
                CL_SUCCESS ||
            clFinish(p->q) != CL_SUCCESS) {
            fprintf(stderr, "launchprobe: launch failed\n");
            exit(1);
        }
        if (it >= 0)
            t[it] = now_us() - t0;
    }
    qsort(t, (size_t)iters, sizeof(double), cmp_d);
    return t[iters / 2];
}

static void set_all(probe_t *p)
{
    for (int a = 0; a < p->nargs; a++)
        clSetKernelArg(p->k, (cl_uint)a, p->sz[a], p->val[a]);
}

int main(int argc, char **argv)
{
    long stride = 512, local = 256;
    int iters = 1000, argi = 1;
    for (; argi < argc && argv[argi][0] == '-'; argi += 2) {
        if (argi + 1 >= argc)
            break;
        if (!strcmp(argv[argi], "-s"))
            stride = atol(argv[argi + 1]);
        else if (!strcmp(argv[argi], "-i"))
            iters = atoi(argv[argi + 1]);
        else if (!strcmp(argv[argi], "-l"))
            local = atol(argv[argi + 1]);
    }
    if (argi >= argc || iters < 1 || stride < 8 || stride % 8) {
        fprintf(stderr, "usage: launchprobe [-s STRIDE] [-i ITERS] [-l LOCAL] NWORDS...\n");
        return 2;
    }
    cl_platform_id plats[8];
    cl_uint np = 0;
    cl_device_id dev = NULL;
    clGetPlatformIDs(8, plats, &np);
    for (cl_uint i = 0; i < np && !dev; i++)
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_GPU, 1, &dev, NULL) != CL_SUCCESS)
            dev = NULL;
    for (cl_uint i = 0; i < np && !dev; i++)
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS)
            dev = NULL;
    if (!dev) {
        fprintf(stderr, "launchprobe: no OpenCL device\n");
        return 77;
    }
    char name[256] = "";
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name), name, NULL);
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    const mgpk_source_t *shape = NULL;
    for (size_t i = 0; i < mgpk_nsources; i++)
        if (!strcmp(mgpk_sources[i].name, "shape"))
            shape = &mgpk_sources[i];
    if (!shape) {
        fprintf(stderr, "launchprobe: no shape kernels\n");
        return 1;
    }
    cl_program pe = build(ctx, dev, empty_src, "-cl-std=CL1.2");
    cl_program ph = build(ctx, dev, perf_hand_src, "-DT=ulong");
    cl_program pl = build(ctx, dev, shape->text, "-cl-std=CL1.2");
    cl_kernel ke0 = clCreateKernel(pe, "empty0", &err);
    cl_kernel ke15 = clCreateKernel(pe, "empty15", &err);
    cl_kernel ke2 = clCreateKernel(pe, "empty2", &err);
    cl_kernel ke6 = clCreateKernel(pe, "empty6", &err);
    cl_kernel kes = clCreateKernel(pe, "empty_s", &err);
    cl_kernel kh = clCreateKernel(ph, "hand_vect", &err);
    cl_kernel kl = clCreateKernel(pl, "mg_vecg_pack_w8", &err);
    if (!ke0 || !ke15 || !ke2 || !ke6 || !kes || !kh || !kl) {
        fprintf(stderr, "launchprobe: clCreateKernel failed\n");
        return 1;
    }
    printf("# launchprobe on %s: vector of 8 B every %ld B, median us of %d launch+clFinish\n",
           name, stride, iters);
    printf("# nwords      empty0    empty2    empty6   empty15   empty_s      hand       lib   "
           "lib_all\n");
    double *t = malloc(sizeof(double) * (size_t)iters);
    for (int ai = argi; ai < argc; ai++) {
        cl_long nw = atol(argv[ai]);
        if (nw < 1)
            continue;
        size_t src_bytes = (size_t)nw * (size_t)stride, dst_bytes = (size_t)nw * 8;
        cl_mem src = clCreateBuffer(ctx, CL_MEM_READ_WRITE, src_bytes, NULL, &err);
        cl_mem dst = clCreateBuffer(ctx, CL_MEM_READ_WRITE, dst_bytes, NULL, &err);
        if (!src || !dst) {
            fprintf(stderr, "launchprobe: out of device memory at %ld words\n", (long)nw);
            return 1;
        }
        cl_ulong fill = 0x0123456789abcdefull;
        clEnqueueFillBuffer(q, src, &fill, sizeof(fill), 0, src_bytes, 0, NULL, NULL);
        /* The library's arguments: mgpk_grid_args_t by value, typed, packed. */
        cl_long one = 1, hw = 1, hst = stride / 8;
        mgpk_grid_args_t ga = {.nwords = nw, .span = 1, .extent = (cl_long)nw * stride};
        ga.p[0] = 8, ga.p[1] = nw, ga.p[2] = stride;
        cl_ulong hn = (cl_ulong)nw, hoff = 0;
        size_t g = ((size_t)nw + (size_t)local - 1) / (size_t)local * (size_t)local;
        probe_t e0 = {.q = q, .k = ke0, .global = (size_t)local, .local = (size_t)local};
        probe_t e15 = {
            .q = q, .k = ke15, .global = (size_t)local, .local = (size_t)local, .nargs = NARGS};
        probe_t h = {.q = q, .k = kh, .global = g, .local = (size_t)local, .nargs = 6, .nset = 6};
        probe_t l = {.q = q,
                     .k = kl,
                     .global = g,
                     .local = (size_t)local,
                     .nargs = 3,
                     .nset = 2,
                     .sz = {sizeof(ga), sizeof(cl_mem), sizeof(cl_mem)},
                     .val = {&ga, &src, &dst}};
        for (int a = 0; a < NARGS; a++) {
            e15.sz[a] = a >= 13 ? sizeof(cl_mem) : sizeof(cl_long);
            e15.val[a] = a >= 13 ? (const void *)&src : (const void *)&one;
        }
        const void *hv[6] = {&src, &hoff, &dst, &hw, &hst, &hn};
        size_t hs[6] = {sizeof(cl_mem), 8, sizeof(cl_mem), 8, 8, 8};
        memcpy(h.sz, hs, sizeof(hs));
        memcpy(h.val, hv, sizeof(hv));
        cl_long a13[13] = {0};
        probe_t e2 = {.q = q,
                      .k = ke2,
                      .global = (size_t)local,
                      .local = (size_t)local,
                      .nargs = 2,
                      .sz = {sizeof(cl_mem), sizeof(cl_mem)},
                      .val = {&src, &dst}};
        probe_t e6 = {.q = q,
                      .k = ke6,
                      .global = (size_t)local,
                      .local = (size_t)local,
                      .nargs = 6,
                      .sz = {8, 8, 8, 8, sizeof(cl_mem), sizeof(cl_mem)},
                      .val = {&one, &one, &one, &one, &src, &dst}};
        probe_t es = {.q = q,
                      .k = kes,
                      .global = (size_t)local,
                      .local = (size_t)local,
                      .nargs = 3,
                      .sz = {sizeof(a13), sizeof(cl_mem), sizeof(cl_mem)},
                      .val = {a13, &src, &dst}};
        set_all(&e2);
        set_all(&e6);
        set_all(&es);
        set_all(&e15);
        set_all(&l);
        double r2 = run(&e2, iters, t), r6 = run(&e6, iters, t), rs = run(&es, iters, t);
        double r0 = run(&e0, iters, t), r15 = run(&e15, iters, t), rh = run(&h, iters, t),
               rl = run(&l, iters, t);
        probe_t la = l;
        la.nset = la.nargs;
        double rla = run(&la, iters, t);
        /* The two kernels must agree: the library's result against the hand's. */
        cl_ulong *a = malloc(dst_bytes), *b = malloc(dst_bytes);
        run(&h, 1, t);
        clEnqueueReadBuffer(q, dst, CL_TRUE, 0, dst_bytes, a, 0, NULL, NULL);
        cl_ulong pat = 0x5555555555555555ull;
        clEnqueueFillBuffer(q, dst, &pat, sizeof(pat), 0, dst_bytes, 0, NULL, NULL);
        run(&l, 1, t);
        clEnqueueReadBuffer(q, dst, CL_TRUE, 0, dst_bytes, b, 0, NULL, NULL);
        int same = !memcmp(a, b, dst_bytes);
        printf("%8ld  %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f %9.2f%s\n", (long)nw, r0, r2, r6,
               r15, rs, rh, rl, rla, same ? "" : "  MISMATCH");
        free(a);
        free(b);
        clReleaseMemObject(src);
        clReleaseMemObject(dst);
        if (!same)
            return 1;
    }
    free(t);
    return 0;
}
