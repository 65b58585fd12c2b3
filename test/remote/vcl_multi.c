/*
 * One context over the devices of several proxies (vcl_multi.sh starts
 * three, each serving PoCL; MPIGPU_VCL_SERVERS names them all).  Modes:
 *   vcl_multi pipeline [ooo]  (ooo: out-of-order queues)
 *                       a buffer through kernels on each proxy in turn, each
 *                       stage gated by the last one's event (an event of
 *                       another proxy) and the first ones by a user event;
 *                       the result checked against the host's
 *   vcl_multi copy MiB  a buffer made on proxy 0 by a kernel, copied into a
 *                       buffer of proxy 1 (clEnqueueCopyBuffer at offsets),
 *                       moved to proxy 2 (clEnqueueMigrateMemObjects) and by
 *                       a rect copy; checked on the devices, and a few
 *                       samples read back: the client carries almost nothing
 *                       (vcl_multi.sh reads the byte counters)
 *   vcl_multi bcast MiB host data broadcast to a buffer on each proxy
 *                       (clEnqueueBroadcastWriteBufferMPIGPU): checked on each
 *                       device; the client sends it once (vcl_multi.sh)
 *   vcl_multi bench MiB timings (best of 3): a write from the host, the
 *                       broadcast to every proxy, a copy between two proxies
 *   vcl_multi events [N] latency of a dependency between proxies (N rounds,
 *                       median us): a launch on proxy 0 behind a user event,
 *                       and a launch on proxy 1 behind it; from the user
 *                       event's set to the end of the proxy-1 launch on the
 *                       client, against the proxy-0 launch alone and a
 *                       dependent launch on proxy 0 (a benchmark, run by
 *                       vclmultibench.sh events with and without
 *                       MPIGPU_VCL_PEER_EVENTS=0)
 *   vcl_multi errors    bad wait lists and a failed event of another proxy
 *                       give OpenCL errors
 *   vcl_multi dead PID  kills proxy PID (the last in MPIGPU_VCL_SERVERS) after
 *                       the context is made: its devices give clean errors,
 *                       the others still work, nothing hangs
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "vcl_test.h"

static const char *src =
    "kernel void stage(global int *a, int k) {\n"
    "    size_t i = get_global_id(0);\n"
    "    a[i] = a[i] * 3 + k + (int)i;\n"
    "}\n"
    "kernel void nop(global int *a) {\n"
    "    if (get_global_id(0) == 0) a[0] += 1;\n"
    "}\n"
    "kernel void gen(global uint *a, uint seed) {\n"
    "    uint i = get_global_id(0);\n"
    "    a[i] = i * 2654435761u ^ seed;\n"
    "}\n"
    /* bad[0] += elements of a[0, n) that are not gen's words from word w0 on */
    "kernel void check(global const uint *a, uint w0, uint seed, global uint *bad) {\n"
    "    uint i = get_global_id(0);\n"
    "    if (a[i] != ((w0 + i) * 2654435761u ^ seed)) atomic_inc(bad);\n"
    "}\n";

#define NDEV 3
static cl_device_id dev[8];
static cl_uint ndev;
static cl_context ctx;
static cl_command_queue q[NDEV];
static cl_program prog;
static int ooo; /* out-of-order queues: only the wait lists (and the moves' events) order */

static void setup(void)
{
    cl_platform_id plat = vt_need_platform("mpigpu virtual");
    CL_OK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 8, dev, &ndev));
    if (ndev < NDEV) {
        fprintf(stderr, "FAIL: %u devices, want %d (one per proxy)\n", ndev, NDEV);
        exit(1);
    }
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    cl_int err;
    /* one context over every proxy's devices */
    ctx = clCreateContextFromType(props, CL_DEVICE_TYPE_ALL, NULL, NULL, &err);
    CL_OK(err);
    cl_uint n = 0;
    CL_OK(clGetContextInfo(ctx, CL_CONTEXT_NUM_DEVICES, sizeof n, &n, NULL));
    CHECK(n == ndev, "the context has %u devices of %u", n, ndev);
    for (int i = 0; i < NDEV; i++) {
        q[i] = clCreateCommandQueue(ctx, dev[i], ooo ? CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE : 0,
                                    &err);
        CL_OK(err);
    }
    prog = vt_build(ctx, src, 0, NULL);
}

static void teardown(void)
{
    for (int i = 0; i < NDEV; i++)
        if (q[i])
            clReleaseCommandQueue(q[i]);
    clReleaseProgram(prog);
    clReleaseContext(ctx);
}

/* Kernels on proxies 0, 1, 2, 0, 1, 2, each behind the last one's event
 * (of another proxy) and the first two also behind a user event, which is
 * set only once all are enqueued; the buffer follows the kernels. */
static void pipeline(void)
{
    enum { N = 4096, STAGES = 6 };
    cl_int err, host[N], got[N];
    for (int i = 0; i < N; i++)
        host[i] = i % 97;
    cl_mem a =
        clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CL_OK(err);
    cl_event user = clCreateUserEvent(ctx, &err);
    CL_OK(err);
    cl_kernel k[STAGES];
    cl_event ev[STAGES];
    for (int s = 0; s < STAGES; s++) {
        k[s] = clCreateKernel(prog, "stage", &err);
        CL_OK(err);
        cl_int kk = 10 * s + 1;
        CL_OK(clSetKernelArg(k[s], 0, sizeof a, &a));
        CL_OK(clSetKernelArg(k[s], 1, sizeof kk, &kk));
        cl_event w[2] = {s ? ev[s - 1] : user, user};
        size_t g = N;
        CL_OK(clEnqueueNDRangeKernel(q[s % NDEV], k[s], 1, NULL, &g, NULL, s < 2 ? (s ? 2 : 1) : 1,
                                     w, &ev[s]));
        for (int i = 0; i < N; i++)
            host[i] = host[i] * 3 + kk + i;
    }
    cl_int st = 0;
    CL_OK(clGetEventInfo(ev[STAGES - 1], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
    CHECK(st != CL_COMPLETE, "the last stage completed before the user event was set");
    CL_OK(clSetUserEventStatus(user, CL_COMPLETE));
    /* read on proxy 0 after the last stage (proxy 2): the buffer comes back */
    CL_OK(clEnqueueReadBuffer(q[0], a, CL_TRUE, 0, sizeof got, got, 1, &ev[STAGES - 1], NULL));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += got[i] != host[i];
    CHECK(!bad, "pipeline: %d of %d elements differ from the host's (first: %d vs %d)", bad, N,
          got[0], host[0]);
    for (int s = 0; s < STAGES; s++) {
        CL_OK(clGetEventInfo(ev[s], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL));
        CHECK(st == CL_COMPLETE, "stage %d: status %d", s, st);
        clReleaseEvent(ev[s]);
        clReleaseKernel(k[s]);
    }
    clReleaseEvent(user);
    clReleaseMemObject(a);
    printf("pipeline: %d stages over %d proxies, results as the host's\n", STAGES, NDEV);
}

/* Mismatches of b's words [at, at + words) against gen's from word w0 on,
 * counted on queue qq's device. */
static cl_uint device_check(cl_command_queue qq, cl_mem b, size_t at, size_t words, cl_uint w0,
                            cl_uint seed)
{
    cl_int err;
    cl_uint bad = 0;
    cl_mem c =
        clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof bad, &bad, &err);
    CL_OK(err);
    cl_kernel k = clCreateKernel(prog, "check", &err);
    CL_OK(err);
    CL_OK(clSetKernelArg(k, 0, sizeof b, &b));
    w0 -= (cl_uint)at; /* the kernel's i runs from at */
    CL_OK(clSetKernelArg(k, 1, sizeof w0, &w0));
    CL_OK(clSetKernelArg(k, 2, sizeof seed, &seed));
    CL_OK(clSetKernelArg(k, 3, sizeof c, &c));
    CL_OK(clEnqueueNDRangeKernel(qq, k, 1, &at, &words, NULL, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(qq, c, CL_TRUE, 0, sizeof bad, &bad, 0, NULL, NULL));
    clReleaseKernel(k);
    clReleaseMemObject(c);
    return bad;
}

static void copy(size_t mib)
{
    const cl_uint seed = 0x5eed;
    size_t words = (mib << 20) / 4, size = words * 4;
    cl_int err;
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
    CL_OK(err);
    cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
    CL_OK(err);
    cl_kernel g = clCreateKernel(prog, "gen", &err);
    CL_OK(err);
    CL_OK(clSetKernelArg(g, 0, sizeof b, &b));
    CL_OK(clSetKernelArg(g, 1, sizeof seed, &seed));
    cl_event made, copied;
    CL_OK(clEnqueueNDRangeKernel(q[0], g, 1, NULL, &words, NULL, 0, NULL, &made));
    /* c (born on proxy 0, unused) starts on proxy 1 without its contents */
    CL_OK(clEnqueueMigrateMemObjects(q[1], 1, &c, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, NULL,
                                     NULL));
    /* b lives on proxy 0; the copy runs on proxy 1: proxy to proxy; all but
       the first and last 4 KiB, shifted by 4 KiB */
    CL_OK(clEnqueueCopyBuffer(q[1], b, c, 4096, 8192, size - 12288, 1, &made, &copied));
    CL_OK(clWaitForEvents(1, &copied));
    cl_uint bad = device_check(q[1], c, 2048, words - 3072, 1024, seed); /* c[2048..] = b[1024..] */
    CHECK(bad == 0, "copy: %u words differ on proxy 1", bad);
    /* a few samples read back */
    cl_uint sample[4], at[4] = {2048, 2049, (cl_uint)(words / 2), (cl_uint)(words - 1024 - 1)};
    for (int i = 0; i < 4; i++) {
        CL_OK(clEnqueueReadBuffer(q[1], c, CL_TRUE, at[i] * 4, 4, &sample[i], 0, NULL, NULL));
        cl_uint want = (at[i] - 1024) * 2654435761u ^ seed;
        CHECK(sample[i] == want, "copy: c[%u] = %u, want %u", at[i], sample[i], want);
    }
    /* explicit migration of b to proxy 2, checked there */
    cl_event moved;
    CL_OK(clEnqueueMigrateMemObjects(q[2], 1, &b, 0, 0, NULL, &moved));
    CL_OK(clWaitForEvents(1, &moved));
    bad = device_check(q[2], b, 0, words, 0, seed);
    CHECK(bad == 0, "migrate: %u words differ on proxy 2", bad);
    /* a sub-buffer of b (on proxy 2) used on proxy 0: its parent moves there */
    cl_buffer_region r = {1 << 20, 1 << 20};
    cl_mem sub = clCreateSubBuffer(b, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    CL_OK(err);
    bad = device_check(q[0], sub, 0, r.size / 4, (cl_uint)(r.origin / 4), seed);
    CHECK(bad == 0, "sub-buffer on proxy 0: %u words differ", bad);
    clReleaseMemObject(sub);
    /* a rect copy from b (on proxy 0 now) into c on proxy 1 */
    size_t so[3] = {0, 0, 0}, dof[3] = {0, 0, 0}, reg[3] = {4096, 16, 1};
    CL_OK(clEnqueueCopyBufferRect(q[1], b, c, so, dof, reg, 8192, 0, 4096, 0, 0, NULL, NULL));
    CL_OK(clFinish(q[1]));
    size_t far[3] = {0, words * 4 / 8192, 0}; /* past b's end: b is still on proxy 0 */
    CHECK(clEnqueueCopyBufferRect(q[1], b, c, far, dof, reg, 8192, 0, 4096, 0, 0, NULL, NULL) ==
              CL_INVALID_VALUE,
          "a rect copy between proxies past the source's end");
    cl_uint row[1024];
    CL_OK(clEnqueueReadBuffer(q[1], c, CL_TRUE, 4096 * 3, sizeof row, row, 0, NULL, NULL));
    for (cl_uint i = 0; i < 1024; i++)
        if (row[i] != ((2048u * 3 + i) * 2654435761u ^ seed)) {
            CHECK(0, "rect copy: row 3 word %u is %u", i, row[i]);
            break;
        }
    clReleaseEvent(made);
    clReleaseEvent(copied);
    clReleaseEvent(moved);
    clReleaseKernel(g);
    clReleaseMemObject(b);
    clReleaseMemObject(c);
    printf(
        "copy: %zu MiB proxy 0 -> proxy 1, moved to proxy 2, a sub-buffer, a rect copy: checked\n",
        mib);
}

typedef cl_int(CL_API_CALL *bcast_fn)(cl_uint, const cl_command_queue *, const cl_mem *, cl_bool,
                                      size_t, size_t, const void *, cl_uint, const cl_event *,
                                      cl_event *);

static bcast_fn get_bcast(void)
{
    cl_platform_id plat;
    CL_OK(clGetDeviceInfo(dev[0], CL_DEVICE_PLATFORM, sizeof plat, &plat, NULL));
    bcast_fn f = (bcast_fn)clGetExtensionFunctionAddressForPlatform(
        plat, "clEnqueueBroadcastWriteBufferMPIGPU");
    if (!f) {
        fprintf(stderr, "FAIL: no clEnqueueBroadcastWriteBufferMPIGPU\n");
        exit(1);
    }
    return f;
}

static void bcast(size_t mib)
{
    const cl_uint seed = 0xb0ca57;
    size_t words = (mib << 20) / 4, size = words * 4;
    cl_uint *host = malloc(size);
    cl_int err;
    cl_mem b[NDEV];
    cl_event ev[NDEV];
    if (!host)
        exit(1);
    for (size_t i = 0; i < words; i++)
        host[i] = (cl_uint)i * 2654435761u ^ seed;
    for (int i = 0; i < NDEV; i++) {
        b[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
        CL_OK(err);
    }
    bcast_fn f = get_bcast();
    CL_OK(f(NDEV, q, b, CL_FALSE, 0, size, host, 0, NULL, ev));
    CL_OK(clWaitForEvents(NDEV, ev));
    CHECK(f(NDEV, q, (cl_mem[]){b[0], b[0], b[1]}, CL_TRUE, 0, 4, host, 0, NULL, NULL) ==
              CL_INVALID_VALUE,
          "a broadcast to one buffer twice");
    CHECK(f(NDEV, q, b, CL_TRUE, size - 2, 4, host, 0, NULL, NULL) == CL_INVALID_VALUE,
          "a broadcast past the buffers' end");
    for (int i = 0; i < NDEV; i++) {
        cl_uint bad = device_check(q[i], b[i], 0, words, 0, seed);
        CHECK(bad == 0, "broadcast: %u words differ on proxy %d", bad, i);
        clReleaseEvent(ev[i]);
        clReleaseMemObject(b[i]);
    }
    free(host);
    printf("bcast: %zu MiB to %d proxies, checked on each device\n", mib, NDEV);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Benchmark, not a test: best of 3 of each, in MB/s of the data size. */
static void bench(size_t mib)
{
    size_t size = mib << 20;
    cl_int err;
    char *host = malloc(size);
    cl_mem b[NDEV];
    if (!host)
        exit(1);
    memset(host, 7, size);
    for (int i = 0; i < NDEV; i++) {
        b[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
        CL_OK(err);
    }
    bcast_fn f = get_bcast();
    double best[3] = {1e30, 1e30, 1e30};
    for (int r = 0; r < 4; r++) { /* round 0 warms up (buffers made and touched) */
        double t0 = now_s();
        CL_OK(clEnqueueWriteBuffer(q[0], b[0], CL_TRUE, 0, size, host, 0, NULL, NULL));
        double t1 = now_s();
        CL_OK(f(NDEV, q, b, CL_TRUE, 0, size, host, 0, NULL, NULL));
        double t2 = now_s();
        CL_OK(clFinish(q[0])); /* b[0] is the last to have been read on proxy 0 */
        double t3 = now_s();
        CL_OK(clEnqueueCopyBuffer(q[1], b[0], b[1], 0, 0, size, 0, NULL, NULL));
        CL_OK(clFinish(q[1]));
        double t4 = now_s();
        if (r) {
            best[0] = t1 - t0 < best[0] ? t1 - t0 : best[0];
            best[1] = t2 - t1 < best[1] ? t2 - t1 : best[1];
            best[2] = t4 - t3 < best[2] ? t4 - t3 : best[2];
        }
    }
    printf("bench,write,%zu,%.1f,MB/s\n", size, size / best[0] / 1e6);
    printf("bench,broadcast%d,%zu,%.1f,MB/s\n", NDEV, size, size / best[1] / 1e6);
    printf("bench,peercopy,%zu,%.1f,MB/s\n", size, size / best[2] / 1e6);
    printf("bench,broadcast_over_write,%zu,%.2f,x\n", size, best[1] / best[0]);
    for (int i = 0; i < NDEV; i++)
        clReleaseMemObject(b[i]);
    free(host);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One round of events: launch ka on qa behind a fresh user event, then (kb
 * not NULL) kb on qb behind it; seconds from setting the user event to the
 * end of the last launch, as the client sees it. */
static double events_round(cl_command_queue qa, cl_kernel ka, cl_command_queue qb, cl_kernel kb)
{
    cl_int err;
    cl_event u = clCreateUserEvent(ctx, &err), e0, e1 = NULL;
    CL_OK(err);
    size_t g = 1;
    CL_OK(clEnqueueNDRangeKernel(qa, ka, 1, NULL, &g, NULL, 1, &u, &e0));
    if (kb)
        CL_OK(clEnqueueNDRangeKernel(qb, kb, 1, NULL, &g, NULL, 1, &e0, &e1));
    CL_OK(clFlush(qa));
    if (kb)
        CL_OK(clFlush(qb));
    double t0 = now_s();
    CL_OK(clSetUserEventStatus(u, CL_COMPLETE));
    CL_OK(clWaitForEvents(1, kb ? &e1 : &e0));
    double t = now_s() - t0;
    CL_OK(clWaitForEvents(1, &e0));
    clReleaseEvent(u);
    clReleaseEvent(e0);
    if (e1)
        clReleaseEvent(e1);
    return t;
}

/* Benchmark, not a test: the latency of a dependency between proxies, n
 * rounds of three cases in turn; medians in us.  Each launch writes a buffer
 * of its own proxy (nothing migrates): "alone" one launch on proxy 0,
 * "same_proxy" a second launch on proxy 0 behind it, "cross_proxy" a launch
 * on proxy 1 behind it. */
static void events(int n)
{
    enum { ALONE, SAME, CROSS, NCASE };
    static const char *name[NCASE] = {"alone", "same_proxy", "cross_proxy"};
    cl_int err;
    cl_kernel k[3];
    cl_mem b[2];
    double *t[NCASE];
    if (n < 1)
        n = 1;
    for (int c = 0; c < NCASE; c++)
        if (!(t[c] = malloc(n * sizeof(double))))
            exit(1);
    for (int i = 0; i < 2; i++) {
        b[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
        CL_OK(err);
    }
    for (int i = 0; i < 3; i++) { /* k[0], k[2]: proxy 0's buffer; k[1]: proxy 1's */
        k[i] = clCreateKernel(prog, "nop", &err);
        CL_OK(err);
        CL_OK(clSetKernelArg(k[i], 0, sizeof(cl_mem), &b[i == 1]));
    }
    for (int r = -5; r < n; r++) { /* 5 rounds warm up (buffers placed, peer connections made) */
        double a = events_round(q[0], k[0], NULL, NULL);
        double s = events_round(q[0], k[0], q[0], k[2]);
        double c = events_round(q[0], k[0], q[1], k[1]);
        if (r >= 0) {
            t[ALONE][r] = a;
            t[SAME][r] = s;
            t[CROSS][r] = c;
        }
    }
    double med[NCASE];
    for (int c = 0; c < NCASE; c++) {
        qsort(t[c], n, sizeof(double), cmp_double);
        med[c] = n % 2 ? t[c][n / 2] : (t[c][n / 2 - 1] + t[c][n / 2]) / 2;
        printf("events,%s,%d,%.1f,us\n", name[c], n, med[c] * 1e6);
        free(t[c]);
    }
    printf("events,cross_minus_alone,%d,%.1f,us\n", n, (med[CROSS] - med[ALONE]) * 1e6);
    for (int i = 0; i < 3; i++)
        clReleaseKernel(k[i]);
    for (int i = 0; i < 2; i++)
        clReleaseMemObject(b[i]);
}

static void errors(void)
{
    cl_int err;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    CL_OK(err);
    cl_event none[1] = {NULL};
    cl_int z = 0;
    CHECK(clEnqueueFillBuffer(q[1], a, &z, 4, 0, 4096, 1, none, NULL) == CL_INVALID_EVENT_WAIT_LIST,
          "a NULL event in a wait list");
    CHECK(clEnqueueFillBuffer(q[1], a, &z, 4, 0, 4096, 1, NULL, NULL) == CL_INVALID_EVENT_WAIT_LIST,
          "a wait list without events");
    /* an event of another context */
    cl_context other = clCreateContext(NULL, 1, &dev[2], NULL, NULL, &err);
    CL_OK(err);
    cl_event oe = clCreateUserEvent(other, &err);
    CL_OK(err);
    CHECK(clEnqueueFillBuffer(q[1], a, &z, 4, 0, 4096, 1, &oe, NULL) == CL_INVALID_CONTEXT,
          "an event of another context");
    CL_OK(clSetUserEventStatus(oe, CL_COMPLETE));
    clReleaseEvent(oe);
    clReleaseContext(other);
    /* a failed event of proxy 0 in a wait list of proxy 1: nothing waits on it
       when it fails */
    cl_event u = clCreateUserEvent(ctx, &err);
    CL_OK(err);
    CL_OK(clSetUserEventStatus(u, -5));
    err = clEnqueueFillBuffer(q[1], a, &z, 4, 0, 4096, 1, &u, NULL);
    CHECK(err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
          "a failed event of another proxy: %d", err);
    clReleaseEvent(u);
    /* a buffer whose last command on proxy 0 failed (through a user event)
       moves to proxy 1 all the same, as on one device a launch that did not
       wait for the failed one runs; a launch that waits for it is refused */
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    CL_OK(err);
    cl_event gate = clCreateUserEvent(ctx, &err), k0, k1;
    CL_OK(err);
    cl_kernel k = clCreateKernel(prog, "stage", &err);
    CL_OK(err);
    CL_OK(clSetKernelArg(k, 0, sizeof m, &m));
    CL_OK(clSetKernelArg(k, 1, sizeof z, &z));
    size_t g = 1024;
    CL_OK(clEnqueueNDRangeKernel(q[0], k, 1, NULL, &g, NULL, 1, &gate, &k0));
    CL_OK(clEnqueueNDRangeKernel(q[1], k, 1, NULL, &g, NULL, 0, NULL, &k1));
    CL_OK(clSetUserEventStatus(gate, -7));
    CHECK(clWaitForEvents(1, &k0) == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
          "the launch behind the failed user event");
    CL_OK(clWaitForEvents(1, &k1));
    /* known failed: refused at once (nothing waits on a failing event) */
    err = clEnqueueNDRangeKernel(q[2], k, 1, NULL, &g, NULL, 1, &k0, NULL);
    CHECK(err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
          "a launch behind a failed launch of another proxy: %d", err);
    clFinish(q[0]);
    clFinish(q[2]);
    clReleaseEvent(k0);
    clReleaseEvent(k1);
    clReleaseEvent(gate);
    clReleaseKernel(k);
    clReleaseMemObject(m);
    /* the context still works after all that */
    CL_OK(clEnqueueFillBuffer(q[2], a, &z, 4, 0, 4096, 0, NULL, NULL));
    cl_int back = 1;
    CL_OK(clEnqueueReadBuffer(q[0], a, CL_TRUE, 100, 4, &back, 0, NULL, NULL));
    CHECK(back == 0, "fill on proxy 2 read on proxy 0: %d", back);
    clReleaseMemObject(a);
    printf("errors: bad wait lists refused, failures across proxies\n");
}

static void dead(pid_t pid)
{
    cl_int err, v[256];
    for (int i = 0; i < 256; i++)
        v[i] = i;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof v, v, &err);
    CL_OK(err);
    CL_OK(clEnqueueFillBuffer(q[NDEV - 1], a, &(cl_int){7}, 4, 0, sizeof v, 0, NULL, NULL));
    CL_OK(clFinish(q[NDEV - 1])); /* a lives on the last proxy now */
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof v, v, &err);
    CL_OK(err);
    if (kill(pid, SIGKILL)) {
        perror("kill");
        exit(1);
    }
    /* the client learns it at the latest on its next send */
    for (int i = 0; i < 50; i++) {
        err = clEnqueueFillBuffer(q[NDEV - 1], b, &(cl_int){1}, 4, 0, 4, 0, NULL, NULL);
        if (err)
            break;
        clFinish(q[NDEV - 1]);
        usleep(100000);
    }
    CHECK(err == CL_DEVICE_NOT_AVAILABLE, "a command on the dead proxy's queue: %d", err);
    CHECK(clFinish(q[NDEV - 1]) == CL_DEVICE_NOT_AVAILABLE, "clFinish of its queue");
    cl_context c2 = clCreateContext(NULL, NDEV, dev, NULL, NULL, &err);
    CHECK(!c2 && err == CL_DEVICE_NOT_AVAILABLE, "a context with the dead proxy's device: %d", err);
    /* a buffer that lives on the dead proxy cannot come back */
    cl_int got[256];
    err = clEnqueueReadBuffer(q[0], a, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL);
    CHECK(err != CL_SUCCESS, "a read of a buffer that lived on the dead proxy succeeded");
    /* the others work on */
    CL_OK(clEnqueueReadBuffer(q[1], b, CL_TRUE, 0, sizeof got, got, 0, NULL, NULL));
    CHECK(got[255] == 255, "a buffer of the live proxies: %d", got[255]);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    printf("dead: the dead proxy's devices fail cleanly, the others work\n");
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "pipeline";
    ooo = argc > 2 && !strcmp(argv[2], "ooo");
    setup();
    if (!strcmp(mode, "pipeline"))
        pipeline();
    else if (!strcmp(mode, "copy"))
        copy(argc > 2 ? (size_t)atoi(argv[2]) : 64);
    else if (!strcmp(mode, "bcast"))
        bcast(argc > 2 ? (size_t)atoi(argv[2]) : 16);
    else if (!strcmp(mode, "bench"))
        bench(argc > 2 ? (size_t)atoi(argv[2]) : 256);
    else if (!strcmp(mode, "events"))
        events(argc > 2 ? atoi(argv[2]) : 200);
    else if (!strcmp(mode, "errors"))
        errors();
    else if (!strcmp(mode, "dead") && argc > 2)
        dead((pid_t)atol(argv[2]));
    else {
        fprintf(stderr,
                "usage: vcl_multi pipeline|copy [MiB]|bcast [MiB]|bench [MiB]|events [N]|errors|"
                "dead PID\n");
        return 2;
    }
    teardown();
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures ? 1 : 0;
}
