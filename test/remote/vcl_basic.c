/*
 * A plain OpenCL program (no mpigpu) run through the "mpigpu virtual"
 * platform.  Modes:
 *   vcl_basic            all checks below
 *   vcl_basic quick      a roundtrip and a kernel (for many clients at once)
 *   vcl_basic setarg N   creates a kernel, sets its argument N times, exits
 *   vcl_basic bigwrite   writes 64 MiB over and over (killed by the test)
 *   vcl_basic bigread    reads 64 MiB over and over until an error
 *   vcl_basic idle       a roundtrip, 12 s of silence, a roundtrip
 *   vcl_basic odd        transfers at odd offsets, host addresses and lengths
 *                        (non-blocking, in flight together, sub-buffers)
 *   vcl_basic nodump     a non-dumpable process (no process may attach to
 *                        it): quick, which must pass on the shm lane
 *   vcl_basic finish     clFinish (the proxy's FINISH): behind a user event
 *                        set later by another thread, callbacks once each,
 *                        failures (also part of "all")
 *   vcl_basic longfinish clFinish of a kernel that runs 3 s or more (run with
 *                        MPIGPU_VCL_TIMEOUT=2: the proxy must show that it
 *                        lives while it waits in its own clFinish)
 *   vcl_basic marker     writes 1 MiB of the line MARKER_W over and over and
 *                        reads it back; fills 1 MiB on the device with
 *                        MARKER_R and reads that (vcl_crypt.sh looks for
 *                        both in a capture of the TCP traffic)
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "vcl_test.h"

static const char *src =
    "kernel void scale(global float *out, global const float *in, local float *tmp,\n"
    "                  float a, int n) {\n"
    "    size_t g = get_global_id(0), l = get_local_id(0);\n"
    "    tmp[l] = g < n ? in[g] * a : 0.0f;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    size_t o = l ^ 1;\n"
    "    if (o < get_local_size(0) && g < n) out[g] = tmp[l] + tmp[o];\n"
    "}\n"
    "kernel void touch(global int *p) { p[get_global_id(0)] += 1; }\n"
    "kernel void spin(global uint *p, uint n) {\n"
    "    uint x = p[0];\n"
    "    for (ulong i = 0; i < 16ul * n; i++) x = x * 1103515245u + 12345u;\n"
    "    p[0] = x;\n"
    "}\n";

static cl_platform_id plat;
static cl_device_id dev;
static cl_context ctx;
static cl_command_queue q;
static cl_program prog;

static void setup(void)
{
    cl_int err;
    const char *want = getenv("VCL_TEST_PLATFORM");
    plat = vt_need_platform(want ? want : "mpigpu virtual");
    CL_OK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CL_OK(err);
    q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
    CL_OK(err);
    prog = vt_build(ctx, src, 1, &dev);
}

static void roundtrip(size_t n)
{
    cl_int err;
    unsigned char *a = malloc(n), *b = malloc(n);
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)(i * 7 + n);
    memset(b, 0, n);
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n, NULL, &err);
    CL_OK(err);
    CL_OK(clEnqueueWriteBuffer(q, m, CL_FALSE, 0, n, a, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, n, b, 0, NULL, NULL));
    CHECK(!memcmp(a, b, n), "roundtrip of %zu bytes differs", n);
    clReleaseMemObject(m);
    free(a);
    free(b);
}

static void subbuffer(void)
{
    cl_int err;
    int host[256], back[64];
    for (int i = 0; i < 256; i++)
        host[i] = i;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, sizeof host, host, &err);
    CL_OK(err);
    cl_buffer_region r = {128 * sizeof(int), 64 * sizeof(int)};
    cl_mem s = clCreateSubBuffer(m, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r, &err);
    CL_OK(err);
    CL_OK(clEnqueueReadBuffer(q, s, CL_TRUE, 0, sizeof back, back, 0, NULL, NULL));
    CHECK(back[0] == 128 && back[63] == 191, "sub-buffer read %d %d", back[0], back[63]);
    int v = -5;
    CL_OK(clEnqueueWriteBuffer(q, s, CL_TRUE, 4, sizeof v, &v, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, 129 * sizeof(int), sizeof v, &v, 0, NULL, NULL));
    CHECK(v == -5, "write through a sub-buffer: parent sees %d", v);
    cl_mem par = NULL;
    clGetMemObjectInfo(s, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof par, &par, NULL);
    CHECK(par == m, "CL_MEM_ASSOCIATED_MEMOBJECT");
    clReleaseMemObject(s);
    clReleaseMemObject(m);
}

static void rect(void)
{
    cl_int err;
    enum { W = 16, H = 8 };
    unsigned char h[W * H], out[W * H];
    for (int i = 0; i < W * H; i++)
        h[i] = (unsigned char)i;
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, W * H, NULL, &err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, W * H, NULL, &err);
    CL_OK(clEnqueueWriteBuffer(q, a, CL_TRUE, 0, W * H, h, 0, NULL, NULL));
    unsigned char zero[W * H] = {0};
    CL_OK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, W * H, zero, 0, NULL, NULL));
    size_t so[3] = {2, 1, 0}, dof[3] = {0, 0, 0}, reg[3] = {4, 3, 1};
    CL_OK(clEnqueueCopyBufferRect(q, a, b, so, dof, reg, W, 0, 4, 0, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, 12, out, 0, NULL, NULL));
    int ok = 1;
    for (int y = 0; y < 3; y++)
        for (int x = 0; x < 4; x++)
            ok &= out[y * 4 + x] == h[(y + 1) * W + x + 2];
    CHECK(ok, "clEnqueueCopyBufferRect");
    /* read rect into a strided host layout, write rect back from it */
    unsigned char hr[32 * 4];
    memset(hr, 0xee, sizeof hr);
    size_t bo[3] = {1, 2, 0}, ho[3] = {3, 1, 0}, reg2[3] = {5, 2, 1};
    CL_OK(clEnqueueReadBufferRect(q, a, CL_TRUE, bo, ho, reg2, W, 0, 32, 0, hr, 0, NULL, NULL));
    ok = hr[0] == 0xee;
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 5; x++)
            ok &= hr[(y + 1) * 32 + 3 + x] == h[(y + 2) * W + 1 + x];
    CHECK(ok, "clEnqueueReadBufferRect");
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 5; x++)
            hr[(y + 1) * 32 + 3 + x] = (unsigned char)(200 + y * 5 + x);
    CL_OK(clEnqueueWriteBufferRect(q, b, CL_TRUE, bo, ho, reg2, W, 0, 32, 0, hr, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, W * H, out, 0, NULL, NULL));
    CHECK(out[2 * W + 1] == 200 && out[3 * W + 5] == 209 && out[2 * W + 6] == 0,
          "clEnqueueWriteBufferRect: %d %d %d", out[2 * W + 1], out[3 * W + 5], out[2 * W + 6]);
    clReleaseMemObject(a);
    clReleaseMemObject(b);
}

static void map(void)
{
    cl_int err;
    size_t n = 4096;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, n, NULL, &err);
    CL_OK(err);
    unsigned char *p = clEnqueueMapBuffer(q, m, CL_TRUE, CL_MAP_WRITE, 0, n, 0, NULL, NULL, &err);
    CL_OK(err);
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i ^ 0x5a);
    cl_uint mc = 0;
    clGetMemObjectInfo(m, CL_MEM_MAP_COUNT, sizeof mc, &mc, NULL);
    CHECK(mc == 1, "map count %u", mc);
    CL_OK(clEnqueueUnmapMemObject(q, m, p, 0, NULL, NULL));
    p = clEnqueueMapBuffer(q, m, CL_TRUE, CL_MAP_READ, 100, 100, 0, NULL, NULL, &err);
    CL_OK(err);
    int ok = 1;
    for (size_t i = 0; i < 100; i++)
        ok &= p[i] == (unsigned char)((i + 100) ^ 0x5a);
    CHECK(ok, "map/unmap roundtrip");
    CL_OK(clEnqueueUnmapMemObject(q, m, p, 0, NULL, NULL));
    CL_OK(clFinish(q));
    clReleaseMemObject(m);
}

/* Byte-exact transfers at odd places: a host range at an odd address,
 * buffer offsets at odd bytes, lengths that are no multiple of a chunk or
 * a page; several non-blocking writes in flight at once, then non-blocking
 * reads, each waited for by its event; a sub-buffer at an aligned origin
 * read and written at odd offsets; a map written back on unmap. */
static void odd(void)
{
    cl_int err;
    cl_uint align = 0;
    const size_t n = (3u << 20) + 333, off = 17;
    unsigned char *ha = malloc(n + 16), *hb = malloc(n + 16), *a = ha + 3, *b = hb + 5;
    for (size_t i = 0; i < n; i++)
        a[i] = (unsigned char)(i * 131 + (i >> 12));
    memset(hb, 0, n + 16);
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n + 64, NULL, &err);
    CL_OK(err);
    /* three pieces in flight, the middle one starting at an odd byte */
    size_t cut[4] = {0, 1000001, 2500003, n};
    cl_event w[3], r[3];
    for (int i = 0; i < 3; i++)
        CL_OK(clEnqueueWriteBuffer(q, m, CL_FALSE, off + cut[i], cut[i + 1] - cut[i], a + cut[i], 0,
                                   NULL, &w[i]));
    for (int i = 0; i < 3; i++)
        CL_OK(clEnqueueReadBuffer(q, m, CL_FALSE, off + cut[i], cut[i + 1] - cut[i], b + cut[i], 1,
                                  &w[i], &r[i]));
    CL_OK(clWaitForEvents(3, r));
    for (int i = 0; i < 3; i++) {
        cl_int st = 1;
        clGetEventInfo(r[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
        CHECK(st == CL_COMPLETE, "read %d status %d", i, st);
        clReleaseEvent(w[i]);
        clReleaseEvent(r[i]);
    }
    CHECK(!memcmp(a, b, n), "odd-offset non-blocking roundtrip of %zu bytes differs", n);
    CHECK(hb[4] == 0 && b[n] == 0, "a read wrote outside its host range");
    /* a blocking read of 1 byte at an odd offset, and of the last bytes */
    unsigned char one = 0, tail[7];
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, off + 12345, 1, &one, 0, NULL, NULL));
    CHECK(one == a[12345], "1-byte read: %d, not %d", one, a[12345]);
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, off + n - 7, 7, tail, 0, NULL, NULL));
    CHECK(!memcmp(tail, a + n - 7, 7), "read of the last 7 bytes differs");
    /* a sub-buffer at the device's base alignment, odd offsets within */
    clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof align, &align, NULL);
    size_t org = align >= 8 ? (2u << 20) / (align / 8) * (align / 8) : 2u << 20;
    cl_buffer_region reg = {org, (1u << 20) + 99};
    cl_mem sb = clCreateSubBuffer(m, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &err);
    CL_OK(err);
    memset(hb, 0, n + 16);
    CL_OK(clEnqueueReadBuffer(q, sb, CL_TRUE, 3, reg.size - 3, b, 0, NULL, NULL));
    CHECK(!memcmp(b, a + org + 3 - off, reg.size - 3), "sub-buffer read at offset 3 differs");
    for (size_t i = 0; i < 4099; i++)
        b[i] = (unsigned char)~b[i];
    cl_event e;
    CL_OK(clEnqueueWriteBuffer(q, sb, CL_FALSE, 5, 4099, b, 0, NULL, &e));
    CL_OK(clWaitForEvents(1, &e));
    clReleaseEvent(e);
    memset(hb, 0, n + 16);
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, org + 5, 4099, b, 0, NULL, NULL));
    int ok = 1;
    for (size_t i = 0; i < 4099; i++)
        ok &= b[i] == (unsigned char)~a[org + 3 - off + i];
    CHECK(ok, "write through a sub-buffer at offset 5: parent differs");
    clReleaseMemObject(sb);
    /* a map written back on unmap (the host copy is freed at once) */
    unsigned char *p =
        clEnqueueMapBuffer(q, m, CL_TRUE, CL_MAP_WRITE, 101, 70001, 0, NULL, NULL, &err);
    CL_OK(err);
    for (size_t i = 0; i < 70001; i++)
        p[i] = (unsigned char)(i % 251);
    CL_OK(clEnqueueUnmapMemObject(q, m, p, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, 100, 70003, b, 0, NULL, NULL));
    ok = b[0] == a[100 - off] && b[70002] == a[70102 - off];
    for (size_t i = 0; i < 70001; i++)
        ok &= b[i + 1] == (unsigned char)(i % 251);
    CHECK(ok, "map written back on unmap differs");
    clReleaseMemObject(m);
    free(ha);
    free(hb);
}

static int cb_status = 1;
static void CL_CALLBACK on_done(cl_event e, cl_int st, void *data)
{
    __atomic_store_n((int *)data, st, __ATOMIC_SEQ_CST);
}

static void kernel(void)
{
    cl_int err;
    enum { N = 1000, L = 8 };
    float in[1024], out[1024];
    for (int i = 0; i < 1024; i++) {
        in[i] = (float)i;
        out[i] = -1;
    }
    cl_mem bi = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, sizeof in, in, &err);
    cl_mem bo = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, sizeof out, out, &err);
    cl_kernel k = clCreateKernel(prog, "scale", &err);
    CL_OK(err);
    float a = 2.0f;
    int n = N;
    CL_OK(clSetKernelArg(k, 0, sizeof bo, &bo));
    CL_OK(clSetKernelArg(k, 1, sizeof bi, &bi));
    CL_OK(clSetKernelArg(k, 2, L * sizeof(float), NULL));
    CL_OK(clSetKernelArg(k, 3, sizeof a, &a));
    CL_OK(clSetKernelArg(k, 4, sizeof n, &n));
    size_t g = 1024, l = L;
    cl_event ev;
    CL_OK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, &ev));
    CL_OK(clSetEventCallback(ev, CL_COMPLETE, on_done, &cb_status));
    CL_OK(clEnqueueReadBuffer(q, bo, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
    int ok = 1;
    for (int i = 0; i < 1024; i++) {
        float want = i < N ? 2.0f * i + 2.0f * (i ^ 1) : -1;
        ok &= out[i] == want;
    }
    CHECK(ok, "NDRange result (out[3] = %g)", out[3]);
    /* profiling */
    cl_ulong t0 = 0, t1 = 0;
    CL_OK(clWaitForEvents(1, &ev));
    CL_OK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL));
    CL_OK(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL));
    CHECK(t0 > 0 && t1 >= t0, "profiling start %llu end %llu", (unsigned long long)t0,
          (unsigned long long)t1);
    for (int i = 0; i < 500 && __atomic_load_n(&cb_status, __ATOMIC_SEQ_CST) != CL_COMPLETE; i++)
        usleep(10000);
    CHECK(cb_status == CL_COMPLETE, "event callback not called (status %d)", cb_status);
    clReleaseEvent(ev);
    /* second launch changing one argument */
    a = 3.0f;
    CL_OK(clSetKernelArg(k, 3, sizeof a, &a));
    CL_OK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(q, bo, CL_TRUE, 0, sizeof out, out, 0, NULL, NULL));
    CHECK(out[5] == 3.0f * 5 + 3.0f * 4, "relaunch with a changed argument: %g", out[5]);
    cl_uint nargs = 0;
    clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL);
    CHECK(nargs == 5, "CL_KERNEL_NUM_ARGS %u", nargs);
    size_t wg = 0;
    CL_OK(clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof wg, &wg, NULL));
    CHECK(wg >= 1, "CL_KERNEL_WORK_GROUP_SIZE");
    clReleaseKernel(k);
    clReleaseMemObject(bi);
    clReleaseMemObject(bo);
}

static void user_event(void)
{
    cl_int err, st;
    int v[4] = {1, 2, 3, 4}, back[4] = {0};
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof v, NULL, &err);
    cl_event u = clCreateUserEvent(ctx, &err), w, r;
    CL_OK(err);
    CL_OK(clEnqueueWriteBuffer(q, m, CL_FALSE, 0, sizeof v, v, 1, &u, &w));
    CL_OK(clEnqueueReadBuffer(q, m, CL_FALSE, 0, sizeof back, back, 1, &w, &r));
    usleep(200000);
    clGetEventInfo(r, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    CHECK(st > 0, "read gated by a user event ran early (status %d)", st);
    CL_OK(clSetUserEventStatus(u, CL_COMPLETE));
    CL_OK(clWaitForEvents(1, &r));
    CHECK(back[3] == 4, "gated read got %d", back[3]);
    clReleaseEvent(u);
    clReleaseEvent(w);
    clReleaseEvent(r);

    /* a command whose wait list fails fails too, on its event */
    u = clCreateUserEvent(ctx, &err);
    CL_OK(clEnqueueReadBuffer(q, m, CL_FALSE, 0, sizeof back, back, 1, &u, &r));
    CL_OK(clSetUserEventStatus(u, -1));
    err = clWaitForEvents(1, &r);
    clGetEventInfo(r, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    CHECK(err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST && st < 0,
          "failing command: wait %d, status %d", err, st);
    err = clFinish(q);
    CHECK(err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, "clFinish after a failure: %d", err);
    CL_OK(clFinish(q)); /* reported once */
    clReleaseEvent(u);
    clReleaseEvent(r);

    /* a command the device rejects: its error arrives on its event */
    cl_mem small = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    cl_kernel k = clCreateKernel(prog, "touch", &err);
    CL_OK(clSetKernelArg(k, 0, sizeof small, &small));
    size_t g = 16, l = 7; /* 16 is not a multiple of 7 */
    err = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, &l, 0, NULL, &r);
    if (err == CL_SUCCESS) {
        err = clWaitForEvents(1, &r);
        clGetEventInfo(r, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
        CHECK(st < 0 && err != CL_SUCCESS, "rejected launch: status %d", st);
        clReleaseEvent(r);
        clFinish(q);
    }
    clReleaseKernel(k);
    clReleaseMemObject(small);
    clReleaseMemObject(m);
}

static void CL_CALLBACK count_cb(cl_event e, cl_int st, void *data)
{
    (void)e;
    /* a complete call counts 1, a failed one 1000 */
    __atomic_add_fetch((int *)data, st == CL_COMPLETE ? 1 : 1000, __ATOMIC_SEQ_CST);
}

static void on_alarm(int sig)
{
    static const char msg[] = "FAIL: clFinish did not return within 60 s (deadlock?)\n";
    (void)sig;
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(2);
    _exit(1);
}

static void *set_later(void *arg)
{
    usleep(300000);
    clSetUserEventStatus(arg, CL_COMPLETE);
    return NULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int status_of(cl_event e)
{
    cl_int st = 1;
    clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    return st;
}

/* clFinish, which asks the proxy to report what is complete after its own
 * clFinish (FINISH) */
static void finish(void)
{
    cl_int err;
    int v[16] = {0}, w[16];
    cl_mem m = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, sizeof v, v, &err);
    cl_mem m2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof w, NULL, &err);
    cl_kernel k = clCreateKernel(prog, "touch", &err);
    CL_OK(err);
    CL_OK(clSetKernelArg(k, 0, sizeof m, &m));
    size_t g = 16;
    for (int i = 0; i < 16; i++)
        w[i] = 100 + i;
    signal(SIGALRM, on_alarm);
    alarm(60);

    /* (a) a launch and a write behind a user event that another thread sets
       while this one is in clFinish: no deadlock, and no early return */
    cl_event u = clCreateUserEvent(ctx, &err);
    CL_OK(err);
    CL_OK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 1, &u, NULL));
    CL_OK(clEnqueueWriteBuffer(q, m2, CL_FALSE, 0, sizeof w, w, 1, &u, NULL));
    pthread_t t;
    double t0 = now_s();
    CHECK(pthread_create(&t, NULL, set_later, u) == 0, "pthread_create");
    CL_OK(clFinish(q));
    double dt = now_s() - t0;
    pthread_join(t, NULL);
    CHECK(dt >= 0.25, "clFinish returned %.3f s after start, before the user event was set", dt);
    clReleaseEvent(u);
    memset(w, 0, sizeof w);
    CL_OK(clEnqueueReadBuffer(q, m2, CL_TRUE, 0, sizeof w, w, 0, NULL, NULL));
    CHECK(w[0] == 100 && w[15] == 115, "gated write: %d %d", w[0], w[15]);

    /* (b) every event is complete when clFinish returns, and its callback
       runs once (the callback and FINISH may both see it complete) */
    enum { NL = 200 };
    cl_event ev[NL];
    static int calls[NL];
    for (int i = 0; i < NL; i++) {
        CL_OK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, &ev[i]));
        CL_OK(clSetEventCallback(ev[i], CL_COMPLETE, count_cb, &calls[i]));
    }
    CL_OK(clFinish(q));
    int open = 0, wrong = 0;
    for (int i = 0; i < NL; i++)
        open += status_of(ev[i]) != CL_COMPLETE;
    CHECK(open == 0, "%d of %d events not complete after clFinish", open, NL);
    usleep(300000); /* callbacks run just after the count drops, and late ones would come */
    for (int i = 0; i < NL; i++) {
        wrong += __atomic_load_n(&calls[i], __ATOMIC_SEQ_CST) != 1;
        clReleaseEvent(ev[i]);
    }
    CHECK(wrong == 0, "%d of %d callbacks not called exactly once with CL_COMPLETE", wrong, NL);
    /* clWaitForEvents on events of one queue asks the same (FINISH naming them) */
    for (int i = 0; i < 2; i++) {
        calls[i] = 0;
        CL_OK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, &ev[i]));
        CL_OK(clSetEventCallback(ev[i], CL_COMPLETE, count_cb, &calls[i]));
    }
    CL_OK(clWaitForEvents(2, ev));
    CHECK(status_of(ev[0]) == CL_COMPLETE && status_of(ev[1]) == CL_COMPLETE,
          "after clWaitForEvents: statuses %d %d", status_of(ev[0]), status_of(ev[1]));
    CL_OK(clFinish(q));
    usleep(300000);
    CHECK(calls[0] == 1 && calls[1] == 1, "after clWaitForEvents: callbacks %d %d", calls[0],
          calls[1]);
    clReleaseEvent(ev[0]);
    clReleaseEvent(ev[1]);
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof v, v, 0, NULL, NULL));
    CHECK(v[0] == 3 + NL && v[15] == 3 + NL, "%d launches: %d %d", 3 + NL, v[0], v[15]);

    /* (c) failures arrive at clFinish, once; on a queue of their own (PoCL
       fails what follows a failed command in an in-order queue) */
    cl_command_queue qf = clCreateCommandQueue(ctx, dev, 0, &err);
    CL_OK(err);
    cl_event e;
    int fcalls = 0;
    u = clCreateUserEvent(ctx, &err);
    CL_OK(clEnqueueNDRangeKernel(qf, k, 1, NULL, &g, NULL, 1, &u, &e));
    CL_OK(clSetEventCallback(e, CL_COMPLETE, count_cb, &fcalls));
    CL_OK(clSetUserEventStatus(u, -7));
    err = clFinish(qf);
    CHECK(err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
          "clFinish after a launch behind a failed user event: %d", err);
    CHECK(status_of(e) < 0, "launch behind a failed user event: status %d", status_of(e));
    CL_OK(clFinish(qf)); /* reported once */
    usleep(100000);
    CHECK(__atomic_load_n(&fcalls, __ATOMIC_SEQ_CST) == 1000,
          "failed launch: callback count %d (1000: once, with a failure)", fcalls);
    clReleaseEvent(e);
    clReleaseEvent(u);
    size_t l = 7; /* 16 is not a multiple of 7: rejected */
    if (clEnqueueNDRangeKernel(qf, k, 1, NULL, &g, &l, 0, NULL, NULL) == CL_SUCCESS) {
        err = clFinish(qf);
        CHECK(err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST,
              "clFinish after a rejected launch: %d", err);
    }
    CL_OK(clFinish(qf));
    alarm(0);
    clReleaseCommandQueue(qf);
    clReleaseKernel(k);
    clReleaseMemObject(m);
    clReleaseMemObject(m2);
}

/* Launches spin with twice the work each time until launch + clFinish
 * takes 3 s; every clFinish must succeed. */
static void longfinish(void)
{
    cl_int err;
    cl_uint zero = 0;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &err);
    cl_kernel k = clCreateKernel(prog, "spin", &err);
    CL_OK(err);
    CL_OK(clSetKernelArg(k, 0, sizeof m, &m));
    double dt = 0;
    for (cl_uint n = 1u << 18; dt < 3 && n; n *= 2) {
        size_t one = 1;
        CL_OK(clSetKernelArg(k, 1, sizeof n, &n));
        double t0 = now_s();
        CL_OK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, 0, NULL, NULL));
        err = clFinish(q);
        dt = now_s() - t0;
        CHECK(err == CL_SUCCESS, "clFinish of a %.1f s kernel: %d", dt, err);
        if (err)
            break;
    }
    CHECK(dt >= 3, "the longest launch took only %.1f s", dt);
    printf("longest launch + clFinish: %.1f s\n", dt);
    clReleaseKernel(k);
    clReleaseMemObject(m);
}

/* 64 bytes each; the test script spells them too */
#define MARKER_W "mpigpu-clear-text-marker-WRITE:0123456789abcdefghijklmnopqrstuv\n"
#define MARKER_R "mpigpu-clear-text-marker-READ:0123456789abcdefghijklmnopqrstuvw\n"

static void marker(void)
{
    size_t n = 1u << 20, line = sizeof MARKER_W - 1;
    char *w = malloc(n), *r = malloc(n);
    cl_int err;
    _Static_assert(sizeof MARKER_W == 65 && sizeof MARKER_R == 65, "64-byte marker lines");
    for (size_t i = 0; i < n; i += line)
        memcpy(w + i, MARKER_W, line);
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n, NULL, &err);
    CL_OK(err);
    CL_OK(clEnqueueWriteBuffer(q, m, CL_TRUE, 0, n, w, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, n, r, 0, NULL, NULL));
    CHECK(!memcmp(w, r, n), "marker buffer read back");
    CL_OK(clEnqueueFillBuffer(q, m, MARKER_R, line, 0, n, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, n, r, 0, NULL, NULL));
    CHECK(!memcmp(r, MARKER_R, line) && !memcmp(r + n - line, MARKER_R, line), "filled buffer");
    clReleaseMemObject(m);
    free(w);
    free(r);
}

static void quick(void)
{
    roundtrip(1 << 20);
    cl_int err;
    int v[16] = {0};
    cl_mem m = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, sizeof v, v, &err);
    cl_kernel k = clCreateKernel(prog, "touch", &err);
    CL_OK(err);
    CL_OK(clSetKernelArg(k, 0, sizeof m, &m));
    size_t g = 16;
    for (int i = 0; i < 10; i++)
        CL_OK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    CL_OK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof v, v, 0, NULL, NULL));
    CHECK(v[0] == 10 && v[15] == 10, "10 launches: %d %d", v[0], v[15]);
    clReleaseKernel(k);
    clReleaseMemObject(m);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "all";
    if (!strcmp(mode, "nodump")) /* before setup: the connections open there */
        CHECK(prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0, "prctl(PR_SET_DUMPABLE, 0)");
    setup();
    if (!strcmp(mode, "setarg")) {
        cl_int err;
        int n = argc > 2 ? atoi(argv[2]) : 0;
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
        cl_kernel k = clCreateKernel(prog, "scale", &err);
        CL_OK(err);
        for (int i = 0; i < n; i++) {
            float a = (float)i;
            CL_OK(clSetKernelArg(k, 0, sizeof m, &m));
            CL_OK(clSetKernelArg(k, 3, sizeof a, &a));
        }
        return 0; /* objects left to process exit, as both runs do */
    } else if (!strcmp(mode, "bigwrite") || !strcmp(mode, "bigread")) {
        size_t n = 64u << 20;
        cl_int err;
        void *p = calloc(1, n);
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n, NULL, &err);
        CL_OK(err);
        fprintf(stderr, "transferring\n");
        for (;;) {
            err = mode[3] == 'w' ? clEnqueueWriteBuffer(q, m, CL_TRUE, 0, n, p, 0, NULL, NULL)
                                 : clEnqueueReadBuffer(q, m, CL_TRUE, 0, n, p, 0, NULL, NULL);
            if (err) {
                fprintf(stderr, "transfer error %d\n", err);
                free(p);
                return 3;
            }
        }
    } else if (!strcmp(mode, "quick") || !strcmp(mode, "nodump")) {
        quick();
    } else if (!strcmp(mode, "odd")) {
        odd();
    } else if (!strcmp(mode, "marker")) {
        marker();
        quick();
    } else if (!strcmp(mode, "finish")) {
        finish();
    } else if (!strcmp(mode, "longfinish")) {
        longfinish();
    } else if (!strcmp(mode, "idle")) {
        roundtrip(4096);
        sleep(12);
        roundtrip(4096);
    } else {
        roundtrip(1);
        roundtrip(4096 + 3);
        roundtrip(64u << 20);
        subbuffer();
        odd();
        rect();
        map();
        kernel();
        user_event();
        finish();
        quick();
    }
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    else
        printf("vcl_basic %s: all checks passed\n", mode);
    return failures ? 1 : 0;
}
