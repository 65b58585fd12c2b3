/*
 * eventprobe: how long an OpenCL runtime takes to act on the events the
 * enqueue calls rely on (src/mpi/enqueue.c), without MPI and without the
 * library.  Median of ITERS trials, us:
 *   marker_cb    a marker with no wait list, flushed: from its enqueue
 *                until its CL_COMPLETE callback runs;
 *   user_poll    a marker waiting on a user event: from
 *                clSetUserEventStatus(CL_COMPLETE) until clGetEventInfo
 *                reports the marker complete;
 *   user_cb      the same, until the marker's callback runs;
 *   user_finish  a barrier waiting on a user event, then a 64-byte read:
 *                from clSetUserEventStatus until clFinish returns;
 *   behind_cb    a barrier waiting on a user event, then a marker: from
 *                clSetUserEventStatus until the marker's callback runs;
 *   behind_flush the same with clFlush of the queue after
 *                clSetUserEventStatus;
 *   late_finish, late_wait, late_poll: a barrier waiting on a user event,
 *                then a marker; the calling thread is already in clFinish
 *                (of the queue), clWaitForEvents (of the marker) or a
 *                clGetEventInfo loop when another thread sets the user
 *                event 200 us later: from that call until the wait ends;
 *   other_read, other_poll: the calling thread in clFinish as late_finish;
 *                the other thread first reads 64 bytes on a second queue of
 *                the context, blocking (other_read) or non-blocking and
 *                polled with clGetEventInfo (other_poll): how long that read
 *                took;
 *   kernel       an empty kernel: from its enqueue until clFinish returns;
 *   read64       a blocking 64-byte read.
 *
 * With -H MS the program measures nothing: for -T SECONDS it keeps its queue
 * the way an enqueued receive keeps the caller's queue while the message is
 * on its way (a barrier waiting on a user event, then a 64-byte read),
 * setting the event MS milliseconds later, over and over; -H 0 keeps a context
 * open and idle instead.  Run beside a measuring eventprobe on the same GPU,
 * it shows what such a queue costs another process (issue 23: the enqueue
 * calls with two processes on one GPU).
 *
 * -k K runs the K-th measurement alone (0 marker_cb ... 17
 * behind_listed_cb), the others print 0.
 *
 * usage: eventprobe [-i ITERS] [-p PLATFORM_SUBSTRING] [-k K] [-H MS [-T SECONDS]]
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static void check(cl_int e, const char *what)
{
    if (e != CL_SUCCESS) {
        fprintf(stderr, "eventprobe: %s failed: %d\n", what, e);
        exit(1);
    }
}

/* Read ev's status until it is complete or failed. */
static void poll_done(cl_event ev)
{
    cl_int st = CL_QUEUED;
    while (st != CL_COMPLETE && st >= 0)
        check(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL),
              "clGetEventInfo");
}

static atomic_int fired;
static _Atomic double fired_at;

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *arg)
{
    (void)ev;
    (void)status;
    (void)arg;
    atomic_store(&fired_at, now_us());
    atomic_store(&fired, 1);
}

static _Atomic double set_at;

static cl_command_queue q2;
static cl_mem buf2;
static int read_mode; /* 0: none, 1: blocking, 2: polled */
static _Atomic double read_us;

static void *late_set(void *arg)
{
    usleep(200);
    if (read_mode) {
        char h[64];
        cl_event ev = NULL;
        double t0 = now_us();
        check(clEnqueueReadBuffer(q2, buf2, read_mode == 1, 0, 64, h, 0, NULL,
                                  read_mode == 2 ? &ev : NULL),
              "read");
        if (read_mode == 2) {
            check(clFlush(q2), "clFlush");
            poll_done(ev);
            clReleaseEvent(ev);
        }
        atomic_store(&read_us, now_us() - t0);
    }
    atomic_store(&set_at, now_us());
    check(clSetUserEventStatus((cl_event)arg, CL_COMPLETE), "clSetUserEventStatus");
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t, int n)
{
    qsort(t, (size_t)n, sizeof(*t), cmp);
    return t[n / 2];
}

/* -H: hold the queue behind user events for seconds s (see the top). */
static void hold(cl_context ctx, cl_command_queue q, cl_mem buf, int ms, int s)
{
    char host[64];
    double end = now_us() + s * 1e6;
    cl_int e;
    while (now_us() < end) {
        if (ms <= 0) {
            usleep(100000);
            continue;
        }
        cl_event u = clCreateUserEvent(ctx, &e);
        check(e, "clCreateUserEvent");
        check(clEnqueueBarrierWithWaitList(q, 1, &u, NULL), "barrier");
        check(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, 64, host, 0, NULL, NULL), "read");
        check(clFlush(q), "clFlush");
        usleep((useconds_t)ms * 1000);
        check(clSetUserEventStatus(u, CL_COMPLETE), "clSetUserEventStatus");
        check(clFinish(q), "clFinish");
        clReleaseEvent(u);
    }
}

int main(int argc, char **argv)
{
    int iters = 100, hold_ms = -1, hold_s = 10, only = -1;
    const char *want = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-i"))
            iters = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-p"))
            want = argv[i + 1];
        else if (!strcmp(argv[i], "-H"))
            hold_ms = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-T"))
            hold_s = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-k"))
            only = atoi(argv[i + 1]);
    }
    if (iters < 1)
        iters = 1;
    cl_platform_id plats[16];
    cl_uint np = 0;
    cl_device_id dev = NULL;
    check(clGetPlatformIDs(16, plats, &np), "clGetPlatformIDs");
    for (cl_uint i = 0; i < np && !dev; i++) {
        char name[256] = "";
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof(name), name, NULL);
        if (!want || strstr(name, want))
            if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS)
                dev = NULL;
    }
    if (!dev) {
        fprintf(stderr, "eventprobe: no device\n");
        return 1;
    }
    cl_int e;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
    check(e, "clCreateContext");
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &e);
    check(e, "clCreateCommandQueue");
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &e);
    check(e, "clCreateBuffer");
    char host[64];
    if (hold_ms >= 0) {
        hold(ctx, q, buf, hold_ms, hold_s);
        return 0;
    }
    static const char *src = "__kernel void empty(__global char *b) { }";
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
    check(e, "clCreateProgramWithSource");
    check(clBuildProgram(prog, 1, &dev, "", NULL, NULL), "clBuildProgram");
    cl_kernel kern = clCreateKernel(prog, "empty", &e);
    check(e, "clCreateKernel");
    check(clSetKernelArg(kern, 0, sizeof(buf), &buf), "clSetKernelArg");
    double *t = calloc((size_t)iters, sizeof(*t));
    double r[18];
    q2 = clCreateCommandQueueWithProperties(ctx, dev, NULL, &e);
    check(e, "clCreateCommandQueue(2)");
    buf2 = buf;
    for (int k = 0; k < 18; k++) {
        r[k] = 0;
        if (only >= 0 && k != only)
            continue;
        for (int i = 0; i < iters; i++) {
            cl_event u = NULL, m = NULL;
            atomic_store(&fired, 0);
            if (k >= 13) {
                /* behind a barrier on a user event: 13 a read, its callback;
                   14 a marker, clFinish; 15 a marker, clWaitForEvents;
                   16 a marker, polled; 17 a marker that also lists the user
                   event, its callback. */
                u = clCreateUserEvent(ctx, &e);
                check(e, "clCreateUserEvent");
                check(clEnqueueBarrierWithWaitList(q, 1, &u, NULL), "barrier");
                if (k == 13)
                    check(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, 64, host, 0, NULL, &m), "read");
                else
                    check(clEnqueueMarkerWithWaitList(q, k == 17, k == 17 ? &u : NULL, &m),
                          "marker");
                if (k == 13 || k == 17)
                    check(clSetEventCallback(m, CL_COMPLETE, on_complete, NULL), "callback");
                check(clFlush(q), "clFlush");
                double t0 = now_us();
                check(clSetUserEventStatus(u, CL_COMPLETE), "clSetUserEventStatus");
                if (k == 13 || k == 17) {
                    while (!atomic_load(&fired))
                        ;
                    t[i] = atomic_load(&fired_at) - t0;
                } else if (k == 14) {
                    check(clFinish(q), "clFinish");
                    t[i] = now_us() - t0;
                } else if (k == 15) {
                    check(clWaitForEvents(1, &m), "clWaitForEvents");
                    t[i] = now_us() - t0;
                } else {
                    poll_done(m);
                    t[i] = now_us() - t0;
                }
            } else if (k >= 11) {
                size_t one = 1;
                double t0 = now_us();
                if (k == 11) {
                    check(clEnqueueNDRangeKernel(q, kern, 1, NULL, &one, NULL, 0, NULL, NULL),
                          "kernel");
                    check(clFinish(q), "clFinish");
                } else {
                    check(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, 64, host, 0, NULL, NULL), "read");
                }
                t[i] = now_us() - t0;
            } else if (k >= 6) {
                u = clCreateUserEvent(ctx, &e);
                check(e, "clCreateUserEvent");
                check(clEnqueueBarrierWithWaitList(q, 1, &u, NULL), "barrier");
                check(clEnqueueMarkerWithWaitList(q, 0, NULL, &m), "marker");
                check(clFlush(q), "clFlush");
                pthread_t th;
                read_mode = k >= 9 ? k - 8 : 0;
                pthread_create(&th, NULL, late_set, u);
                if (k == 6 || k >= 9) {
                    check(clFinish(q), "clFinish");
                } else if (k == 7) {
                    check(clWaitForEvents(1, &m), "clWaitForEvents");
                } else {
                    poll_done(m);
                }
                t[i] = now_us() - atomic_load(&set_at);
                pthread_join(th, NULL);
                if (k >= 9)
                    t[i] = atomic_load(&read_us);
            } else if (k == 0) {
                double t0 = now_us();
                check(clEnqueueMarkerWithWaitList(q, 0, NULL, &m), "marker");
                check(clSetEventCallback(m, CL_COMPLETE, on_complete, NULL), "callback");
                check(clFlush(q), "clFlush");
                while (!atomic_load(&fired))
                    ;
                t[i] = atomic_load(&fired_at) - t0;
            } else {
                u = clCreateUserEvent(ctx, &e);
                check(e, "clCreateUserEvent");
                if (k >= 3)
                    check(clEnqueueBarrierWithWaitList(q, 1, &u, NULL), "barrier");
                if (k >= 4)
                    check(clEnqueueMarkerWithWaitList(q, 0, NULL, &m), "marker");
                if (k < 3)
                    check(clEnqueueMarkerWithWaitList(q, 1, &u, &m), "marker");
                if (k == 2 || k >= 4)
                    check(clSetEventCallback(m, CL_COMPLETE, on_complete, NULL), "callback");
                if (k == 3)
                    check(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, 64, host, 0, NULL, NULL),
                          "read");
                check(clFlush(q), "clFlush");
                double t0 = now_us();
                check(clSetUserEventStatus(u, CL_COMPLETE), "clSetUserEventStatus");
                if (k == 1) {
                    poll_done(m);
                    t[i] = now_us() - t0;
                } else if (k == 2 || k >= 4) {
                    if (k == 5)
                        check(clFlush(q), "clFlush");
                    while (!atomic_load(&fired))
                        ;
                    t[i] = atomic_load(&fired_at) - t0;
                } else {
                    check(clFinish(q), "clFinish");
                    t[i] = now_us() - t0;
                }
            }
            check(clFinish(q), "clFinish");
            if (m)
                clReleaseEvent(m);
            if (u)
                clReleaseEvent(u);
        }
        r[k] = median(t, iters);
    }
    printf("# eventprobe: %d trials, median us\n"
           "marker_cb %.2f  user_poll %.2f  user_cb %.2f  user_finish %.2f  behind_cb %.2f  "
           "behind_flush %.2f\nlate_finish %.2f  late_wait %.2f  late_poll %.2f  other_read %.2f  "
           "other_poll %.2f  kernel %.2f  read64 %.2f\nbehind_read_cb %.2f  behind_finish %.2f  "
           "behind_wait %.2f  behind_poll %.2f  behind_listed_cb %.2f\n",
           iters, r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
           r[13], r[14], r[15], r[16], r[17]);
    free(t);
    clReleaseKernel(kern);
    clReleaseProgram(prog);
    return 0;
}
