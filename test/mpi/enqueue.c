/* The MPIX_Enqueue_ calls and MPIX_Event_from_request on 2 ranks, at the
   thread level named by argv[1] (single, funneled, serialized, multiple):
   ordering by events and queues, calls that return before the peer posts,
   many derived-type operations in flight, errors as negative event
   statuses, requests turned into events, persistent requests started in
   queue order, and file writes read back; then the clDataTransfer pattern
   (a receive, a kernel that reads it, a send of the result, on one in-order
   queue, then a persistent start and a file write and read, each with a
   kernel behind it) on the library's own queue, that of MPIX_Gpu_get_device
   and one adopted with MPIX_Gpu_set_queue, whose pack engine must not put
   the operations' packs behind the kernel that waits for them (the testlist's
   timeLimit turns that deadlock into a failure).  After enqueueing, the
   waiting side calls only clFinish or clWaitForEvents. */
#include <string.h>
#include <unistd.h>

#include "p2p_common.h"

static cl_context ctx;
static cl_device_id dev;
static cl_command_queue q, qo; /* in order, out of order (NULL if refused) */
static cl_kernel inc;
static int rank;

static const char *src = "__kernel void inc(__global int *a, int off) {\n"
                         "    a[off + get_global_id(0)] += 1;\n"
                         "}\n";

static void trace(const char *what)
{
    if (getenv("ENQUEUE_TRACE"))
        fprintf(stderr, "[%d] %s\n", rank, what);
}

static cl_int status_of(cl_event ev)
{
    cl_int st = 1;
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
    return st;
}

/* The cl_mem and element offset of device address p (of ints). */
static void mem_of(void *p, cl_mem *mem, int *off)
{
    int isdev = 0;
    size_t o = 0;
    MPIX_Gpu_query(p, &isdev, mem, &o);
    *off = (int)(o / sizeof(int));
}

static void enqueue_inc(cl_command_queue queue, void *p, size_t n, cl_uint nw, const cl_event *w,
                        cl_event *ev)
{
    cl_mem mem;
    int off;
    mem_of(p, &mem, &off);
    clSetKernelArg(inc, 0, sizeof(mem), &mem);
    clSetKernelArg(inc, 1, sizeof(off), &off);
    CHECK(clEnqueueNDRangeKernel(queue, inc, 1, NULL, &n, NULL, nw, w, ev) == CL_SUCCESS);
}

/* A send gated by a user event reads its buffer only after the event. */
static void test_gated(void)
{
    enum { N = 256 };
    int h[N];
    strcpy(where, "gated send");
    if (rank == 0) {
        int *d = NULL;
        MPIX_Gpu_malloc(sizeof(h), (void **)&d);
        for (int i = 0; i < N; i++)
            h[i] = -1;
        MPIX_Gpu_memcpy(d, h, sizeof(h));
        cl_event gate = clCreateUserEvent(ctx, NULL), ev = NULL;
        CHECK(MPIX_Enqueue_send(d, N, MPI_INT, 1, 1, MPI_COMM_WORLD, q, 1, &gate, &ev) ==
              MPI_SUCCESS);
        usleep(30000);
        CHECK(status_of(ev) > CL_COMPLETE); /* nothing moved yet */
        for (int i = 0; i < N; i++)
            h[i] = i * 3;
        MPIX_Gpu_memcpy(d, h, sizeof(h)); /* before the gate opens */
        clSetUserEventStatus(gate, CL_COMPLETE);
        CHECK(clWaitForEvents(1, &ev) == CL_SUCCESS);
        CHECK(status_of(ev) == CL_COMPLETE);
        clReleaseEvent(ev);
        clReleaseEvent(gate);
        MPIX_Gpu_free(d);
    } else {
        MPI_Recv(h, N, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int ok = 1;
        for (int i = 0; i < N; i++)
            ok &= h[i] == i * 3;
        CHECK(ok);
    }
}

/* The receive is enqueued before the peer posts its send (the call must
   return for the "go" to go); a kernel enqueued after it on the in-order
   queue, then one after it on the out-of-order queue through events, see
   the data.  The receiver then only calls clFinish / clWaitForEvents. */
static void test_order(cl_command_queue queue, const char *name)
{
    enum { N = 1000 };
    int h[N], go = 1;
    strcpy(where, name);
    if (rank == 0) {
        MPI_Recv(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        usleep(20000);
        for (int i = 0; i < N; i++)
            h[i] = 5 * i;
        MPI_Send(h, N, MPI_INT, 1, 3, MPI_COMM_WORLD);
        return;
    }
    int *d = NULL;
    MPIX_Gpu_malloc(sizeof(h), (void **)&d);
    cl_event ev = NULL, kev = NULL;
    CHECK(MPIX_Enqueue_recv(d, N, MPI_INT, 0, 3, MPI_COMM_WORLD, queue, 0, NULL, &ev) ==
          MPI_SUCCESS);
    MPI_Send(&go, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    if (queue == q)
        enqueue_inc(queue, d, N, 0, NULL, &kev);
    else
        enqueue_inc(queue, d, N, 1, &ev, &kev);
    CHECK(clWaitForEvents(1, &kev) == CL_SUCCESS);
    CHECK(clFinish(queue) == CL_SUCCESS);
    CHECK(status_of(ev) == CL_COMPLETE);
    clReleaseEvent(ev);
    clReleaseEvent(kev);
    MPIX_Gpu_memcpy(h, d, sizeof(h));
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= h[i] == 5 * i + 1;
    CHECK(ok);
    MPIX_Gpu_free(d);
}

/* On queue, the library's default queue: rank 1 receives every other int
   (a vector: the pack engine unpacks it), a kernel on queue adds 1 to every
   int, and two sends on queue return the vector and the whole buffer, all
   enqueued before rank 0 posts its send; then clFinish.  The engine's
   unpack and packs must run although the kernel and sends wait for them.
   Then a persistent send started on queue and a file write and read, each
   with a kernel behind it. */
static void test_default(cl_command_queue queue, const char *name)
{
    enum { N = 512 };
    int h[N], back[N], go = 1;
    MPI_Datatype vec;
    MPI_Type_vector(N / 2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    strcpy(where, name);
    if (rank == 0) {
        MPI_Recv(&go, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        usleep(20000);
        for (int i = 0; i < N / 2; i++)
            h[i] = 7 * i;
        MPI_Send(h, N / 2, MPI_INT, 1, 4, MPI_COMM_WORLD);
        MPI_Recv(h, N / 2, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(back, N, MPI_INT, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int ok = 1;
        for (int i = 0; i < N / 2; i++)
            ok &= h[i] == 7 * i + 1;
        CHECK(ok);
        for (int i = 0; i < N; i++)
            ok &= back[i] == (i % 2 ? 1 : 7 * (i / 2) + 1);
        CHECK(ok);
    } else {
        int *d = NULL;
        cl_event ev[3] = {NULL, NULL, NULL};
        memset(h, 0, sizeof(h));
        CHECK(MPIX_Gpu_malloc(sizeof(h), (void **)&d) == MPI_SUCCESS);
        MPIX_Gpu_memcpy(d, h, sizeof(h));
        CHECK(MPIX_Enqueue_recv(d, 1, vec, 0, 4, MPI_COMM_WORLD, queue, 0, NULL, &ev[0]) ==
              MPI_SUCCESS);
        MPI_Send(&go, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        enqueue_inc(queue, d, N, 0, NULL, NULL);
        CHECK(MPIX_Enqueue_send(d, 1, vec, 0, 5, MPI_COMM_WORLD, queue, 0, NULL, &ev[1]) ==
              MPI_SUCCESS);
        CHECK(MPIX_Enqueue_send(d, N, MPI_INT, 0, 6, MPI_COMM_WORLD, queue, 0, NULL, &ev[2]) ==
              MPI_SUCCESS);
        CHECK(clFinish(queue) == CL_SUCCESS);
        for (int i = 0; i < 3; i++) {
            CHECK(status_of(ev[i]) == CL_COMPLETE);
            clReleaseEvent(ev[i]);
        }
        /* A blocking call on the same engine still works after them. */
        CHECK(MPI_Send(d, 1, vec, 0, 5, MPI_COMM_WORLD) == MPI_SUCCESS);
        /* A persistent send started on queue, a kernel behind it. */
        MPI_Request p = MPI_REQUEST_NULL;
        CHECK(MPI_Send_init(d, 1, vec, 0, 8, MPI_COMM_WORLD, &p) == MPI_SUCCESS);
        CHECK(MPIX_Enqueue_start(&p, queue, 0, NULL, NULL) == MPI_SUCCESS);
        enqueue_inc(queue, d, N, 0, NULL, NULL);
        CHECK(clFinish(queue) == CL_SUCCESS);
        MPI_Request_free(&p);
        /* A file written from d and read back into e on queue, a kernel
           behind the read (the read's unpack on the enqueue thread). */
        char path[256];
        const char *dir = getenv("TMPDIR");
        MPI_File fh;
        int *e = NULL;
        snprintf(path, sizeof(path), "%s/mpigpu-enqdef-%d.bin", dir ? dir : "/tmp", (int)getpid());
        CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                            &fh) == MPI_SUCCESS);
        memset(back, 0, sizeof(back));
        CHECK(MPIX_Gpu_malloc(sizeof(back), (void **)&e) == MPI_SUCCESS);
        MPIX_Gpu_memcpy(e, back, sizeof(back));
        CHECK(MPIX_Enqueue_file_write_at(fh, 0, d, 1, vec, queue, 0, NULL, NULL) == MPI_SUCCESS);
        CHECK(MPIX_Enqueue_file_read_at(fh, 0, e, 1, vec, queue, 0, NULL, NULL) == MPI_SUCCESS);
        enqueue_inc(queue, e, N, 0, NULL, NULL);
        CHECK(clFinish(queue) == CL_SUCCESS);
        MPI_File_close(&fh);
        unlink(path);
        MPIX_Gpu_memcpy(back, e, sizeof(back));
        int ok = 1;
        for (int i = 0; i < N; i++)
            ok &= back[i] == (i % 2 ? 1 : 7 * (i / 2) + 3);
        CHECK(ok);
        MPIX_Gpu_free(e);
        MPIX_Gpu_free(d);
    }
    if (rank == 0) {
        for (int tag = 5; tag <= 8; tag += 3) {
            MPI_Recv(h, N / 2, MPI_INT, 1, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            int ok = 1;
            for (int i = 0; i < N / 2; i++)
                ok &= h[i] == 7 * i + 1;
            CHECK(ok);
        }
    }
    MPI_Type_free(&vec);
}

/* Every datatype, on each mix of device and host buffers, in flight at once
   (on the out-of-order queue, where nothing holds one back, else one after
   the other on the in-order one) and matched in the reverse order of
   posting; then a sendrecv exchange. */
static void test_many(void)
{
    enum { COUNT = 3, NB = NTYPES * 4 };
    void *bufs[NB];
    int devs[NB];
    cl_event evs[NB];
    cl_command_queue queue = qo ? qo : q;
    strcpy(where, "many in flight");
    int k = 0;
    for (int t = 0; t < NTYPES; t++)
        for (int m = 0; m < 4; m++, k++) {
            int sdev = m & 1, rdev = (m >> 1) & 1;
            size_t n = buf_size(types[t], COUNT);
            devs[k] = rank == 0 ? sdev : rdev;
            bufs[k] = buf_make(n, rank == 0 ? 10 + k : 200 + k, devs[k]);
        }
    for (int j = 0; j < NB; j++) {
        int kk = rank == 0 ? j : NB - 1 - j, t = kk / 4;
        char *b = (char *)bufs[kk] + ORIGIN;
        if (rank == 0)
            CHECK(MPIX_Enqueue_send(b, COUNT, types[t], 1, 100 + kk, MPI_COMM_WORLD, queue, 0, NULL,
                                    &evs[j]) == MPI_SUCCESS);
        else
            CHECK(MPIX_Enqueue_recv(b, COUNT, types[t], 0, 100 + kk, MPI_COMM_WORLD, queue, 0, NULL,
                                    &evs[j]) == MPI_SUCCESS);
    }
    CHECK(clWaitForEvents(NB, evs) == CL_SUCCESS);
    for (k = 0; k < NB; k++)
        clReleaseEvent(evs[k]);
    if (rank == 1)
        for (k = 0; k < NB; k++) {
            int t = k / 4;
            unsigned char *want = expected(types[t], COUNT, 10 + k, 200 + k);
            snprintf(where, sizeof(where), "many: %s, mix %d", tnames[t], k % 4);
            CHECK(buf_equal(bufs[k], want, buf_size(types[t], COUNT), devs[k]));
            free(want);
        }
    for (k = 0; k < NB; k++)
        buf_free(bufs[k], devs[k]);

    /* sendrecv: each rank sends its face3d and receives the peer's */
    strcpy(where, "sendrecv");
    size_t n = buf_size(types[2], COUNT);
    void *s = buf_make(n, 40 + rank, 1), *r = buf_make(n, 60 + rank, rank);
    cl_event ev = NULL;
    CHECK(MPIX_Enqueue_sendrecv((char *)s + ORIGIN, COUNT, types[2], 1 - rank, 7,
                                (char *)r + ORIGIN, COUNT, types[2], 1 - rank, 7, MPI_COMM_WORLD, q,
                                0, NULL, &ev) == MPI_SUCCESS);
    CHECK(clWaitForEvents(1, &ev) == CL_SUCCESS);
    clReleaseEvent(ev);
    unsigned char *want = expected(types[2], COUNT, 40 + (1 - rank), 60 + rank);
    CHECK(buf_equal(r, want, n, rank));
    free(want);
    buf_free(s, 1);
    buf_free(r, rank);
}

/* A message long enough to go in pieces (the engine's chunked protocol and
   node lanes), both sides enqueued, gated by a user event on the sender. */
static void test_large(void)
{
    enum { COUNT = 1 << 16 }; /* of vector8: 2 MiB packed */
    size_t n = buf_size(types[1], COUNT);
    void *b = buf_make(n, rank == 0 ? 3 : 4, 1);
    cl_event ev = NULL, gate = clCreateUserEvent(ctx, NULL);
    strcpy(where, "large");
    if (rank == 0)
        CHECK(MPIX_Enqueue_send((char *)b + ORIGIN, COUNT, types[1], 1, 9, MPI_COMM_WORLD, q, 1,
                                &gate, &ev) == MPI_SUCCESS);
    else
        CHECK(MPIX_Enqueue_recv((char *)b + ORIGIN, COUNT, types[1], 0, 9, MPI_COMM_WORLD, q, 1,
                                &gate, &ev) == MPI_SUCCESS);
    clSetUserEventStatus(gate, CL_COMPLETE);
    CHECK(clWaitForEvents(1, &ev) == CL_SUCCESS);
    clReleaseEvent(ev);
    clReleaseEvent(gate);
    if (rank == 1) {
        unsigned char *want = expected(types[1], COUNT, 3, 4);
        CHECK(buf_equal(b, want, n, 1));
        free(want);
    }
    buf_free(b, 1);
}

/* Errors after the call: truncation and a failed wait-list event become
   negative statuses that later commands see; bad arguments are returned. */
static void test_errors(void)
{
    enum { N = 64 };
    int h[N];
    int *d = NULL;
    cl_event ev = NULL;
    strcpy(where, "errors");
    /* MPICH raises a truncation that it finds in a test of the inner
       request on MPI_COMM_WORLD's handler. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPIX_Gpu_malloc(sizeof(h), (void **)&d);
    for (int i = 0; i < N; i++)
        h[i] = i + 1000;
    if (rank == 0) {
        MPI_Send(h, N, MPI_INT, 1, 20, MPI_COMM_WORLD); /* truncated there */
        /* The marker behind the failed event also waits for q's last command
           (test_large's barrier): PoCL 3.1 aborts when a command's wait-list
           event fails while another one completes (user guide, "Known
           limits"), so q is drained first. */
        CHECK(clFinish(q) == CL_SUCCESS);
        cl_event bad = clCreateUserEvent(ctx, NULL);
        CHECK(MPIX_Enqueue_send(h, N, MPI_INT, 1, 21, MPI_COMM_WORLD, q, 1, &bad, &ev) ==
              MPI_SUCCESS);
        clSetUserEventStatus(bad, -5);
        clWaitForEvents(1, &ev); /* returns, with an error */
        CHECK(status_of(ev) < 0);
        clReleaseEvent(ev);
        clReleaseEvent(bad);
        clFinish(q);
        h[0] = 77; /* the failed send moved nothing: this one comes first */
        MPI_Send(h, N, MPI_INT, 1, 21, MPI_COMM_WORLD);
    } else {
        /* The status is checked on the event itself: OpenCL passes it on to
           the commands that wait for it, but PoCL 3.1 may abort or hang then
           (a failed event with two commands waiting for it, a failed command
           of an out-of-order queue: user guide, "Known limits"). */
        CHECK(MPIX_Enqueue_recv(d, N / 2, MPI_INT, 0, 20, MPI_COMM_WORLD, q, 0, NULL, &ev) ==
              MPI_SUCCESS);
        clWaitForEvents(1, &ev);
        clFinish(q);
        CHECK(status_of(ev) == MPIX_ENQUEUE_ERROR_BASE - MPI_ERR_TRUNCATE);
        CHECK(MPIX_ENQUEUE_ERROR_CLASS(status_of(ev)) == MPI_ERR_TRUNCATE);
        clReleaseEvent(ev);
        MPI_Recv(h, N, MPI_INT, 0, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(h[0] == 77);
    }
    /* Bad arguments: returned at once, nothing enqueued. */
    MPI_Datatype loose;
    MPI_Type_vector(2, 1, 2, MPI_INT, &loose);
    ev = NULL;
    CHECK(MPIX_Enqueue_send(d, N, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, NULL, 0, NULL, &ev) ==
          MPI_ERR_ARG);
    CHECK(ev == NULL);
    CHECK(MPIX_Enqueue_recv(d, N, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, q, 1, NULL, &ev) ==
          MPI_ERR_ARG);
    CHECK(MPIX_Enqueue_send(d, N, MPI_INT, 5, 0, MPI_COMM_WORLD, q, 0, NULL, &ev) == MPI_ERR_RANK);
    CHECK(MPIX_Enqueue_send(d, 2, loose, 1 - rank, 0, MPI_COMM_WORLD, q, 0, NULL, &ev) ==
          MPI_ERR_TYPE);
    CHECK(MPIX_Enqueue_recv(d, N + 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, q, 0, NULL, &ev) ==
          MPI_ERR_BUFFER);
    CHECK(MPIX_Enqueue_sendrecv(d, N, MPI_INT, 1 - rank, 0, d, -1, MPI_INT, 1 - rank, 0,
                                MPI_COMM_WORLD, q, 0, NULL, &ev) == MPI_ERR_COUNT);
    CHECK(ev == NULL);
    MPI_Request r = MPI_REQUEST_NULL;
    CHECK(MPIX_Enqueue_start(&r, q, 0, NULL, &ev) == MPI_ERR_REQUEST);
    CHECK(MPIX_Event_from_request(NULL, &r, &ev) == MPI_ERR_ARG);
    CHECK(MPIX_Enqueue_file_write_at(MPI_FILE_NULL, 0, d, N, MPI_INT, q, 0, NULL, &ev) ==
          MPI_ERR_FILE);
    CHECK(ev == NULL);
    MPI_Type_free(&loose);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    CHECK(clFinish(q) == CL_SUCCESS);
    MPIX_Gpu_free(d);
}

/* Device buffers that pack and unpack on the caller's queue (below
   MPIGPU_ENQUEUE_QUEUE_MAX): a message shorter than the receive, contiguous
   and a vector, lands and the rest of the buffer keeps its bytes; a device
   send and a device receive whose wait-list event failed move nothing, fail
   their events, and the messages go to the calls after them; a vector
   receive of a message too long fails with the truncation's class and
   leaves the buffer as it was. */
static void test_short_failed(void)
{
    enum { N = 64, M = 10 };
    int h[N], back[N];
    int *d = NULL;
    cl_event ev = NULL, bad = NULL;
    MPI_Datatype vec;
    MPI_Type_vector(N / 2, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    strcpy(where, "short and failed");
    MPIX_Gpu_malloc(sizeof(h), (void **)&d);
    if (rank == 0) {
        for (int i = 0; i < M; i++)
            h[i] = 100 + i;
        MPI_Send(h, M, MPI_INT, 1, 30, MPI_COMM_WORLD);
        MPI_Send(h, M, MPI_INT, 1, 31, MPI_COMM_WORLD);
        for (int i = 0; i < N; i++)
            h[i] = 7;
        MPIX_Gpu_memcpy(d, h, sizeof(h));
        bad = clCreateUserEvent(ctx, NULL);
        CHECK(MPIX_Enqueue_send(d, N, MPI_INT, 1, 32, MPI_COMM_WORLD, q, 1, &bad, &ev) ==
              MPI_SUCCESS);
        clSetUserEventStatus(bad, -5);
        clWaitForEvents(1, &ev);
        CHECK(status_of(ev) < 0);
        clReleaseEvent(ev);
        clReleaseEvent(bad);
        clFinish(q);
        h[0] = 8; /* the failed send moved nothing: this one comes first */
        MPI_Send(h, N, MPI_INT, 1, 32, MPI_COMM_WORLD);
        MPI_Send(h, N, MPI_INT, 1, 33, MPI_COMM_WORLD);
        MPI_Send(h, N, MPI_INT, 1, 34, MPI_COMM_WORLD); /* truncated there */
    } else {
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < N; i++)
                h[i] = -i;
            MPIX_Gpu_memcpy(d, h, sizeof(h));
            CHECK(MPIX_Enqueue_recv(d, pass ? 1 : N, pass ? vec : MPI_INT, 0, 30 + pass,
                                    MPI_COMM_WORLD, q, 0, NULL, &ev) == MPI_SUCCESS);
            CHECK(clFinish(q) == CL_SUCCESS);
            CHECK(status_of(ev) == CL_COMPLETE);
            clReleaseEvent(ev);
            MPIX_Gpu_memcpy(back, d, sizeof(back));
            int ok = 1;
            for (int i = 0; i < N; i++) {
                int k = pass ? i / 2 : i, in = pass ? i % 2 == 0 && k < M : i < M;
                ok &= back[i] == (in ? 100 + k : -i);
            }
            CHECK(ok);
        }
        MPI_Recv(back, N, MPI_INT, 0, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(back[0] == 8);
        for (int i = 0; i < N; i++)
            h[i] = -i;
        MPIX_Gpu_memcpy(d, h, sizeof(h));
        bad = clCreateUserEvent(ctx, NULL);
        CHECK(MPIX_Enqueue_recv(d, N, MPI_INT, 0, 33, MPI_COMM_WORLD, q, 1, &bad, &ev) ==
              MPI_SUCCESS);
        clSetUserEventStatus(bad, -5);
        clWaitForEvents(1, &ev);
        CHECK(status_of(ev) < 0);
        clReleaseEvent(ev);
        clReleaseEvent(bad);
        clFinish(q);
        MPI_Recv(back, N, MPI_INT, 0, 33, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(back[0] == 8);
        MPIX_Gpu_memcpy(back, d, sizeof(back));
        int ok = 1;
        for (int i = 0; i < N; i++)
            ok &= back[i] == -i;
        CHECK(ok);
        /* A vector receive (unpacked by a kernel on q) of a message too long:
           the event's status is the truncation, the buffer keeps its bytes. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        CHECK(MPIX_Enqueue_recv(d, 1, vec, 0, 34, MPI_COMM_WORLD, q, 0, NULL, &ev) == MPI_SUCCESS);
        clWaitForEvents(1, &ev);
        clFinish(q);
        CHECK(status_of(ev) == MPIX_ENQUEUE_ERROR_BASE - MPI_ERR_TRUNCATE);
        clReleaseEvent(ev);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        MPIX_Gpu_memcpy(back, d, sizeof(back));
        ok = 1;
        for (int i = 0; i < N; i++)
            ok &= back[i] == -i;
        CHECK(ok);
    }
    MPI_Type_free(&vec);
    MPIX_Gpu_free(d);
}

/* MPIX_Event_from_request on host and device requests, a started
   persistent one included; persistent requests started 100 times in queue
   order. */
static void test_requests(void)
{
    enum { N = 128, ROUNDS = 100 };
    int h[N];
    int *d = NULL;
    cl_event ev[3];
    MPI_Request r[3];
    strcpy(where, "event from request");
    MPIX_Gpu_malloc(sizeof(h), (void **)&d);
    if (rank == 0) {
        for (int i = 0; i < N; i++)
            h[i] = 9 * i;
        MPIX_Gpu_memcpy(d, h, sizeof(h));
        MPI_Send_init(d, N, MPI_INT, 1, 32, MPI_COMM_WORLD, &r[2]);
        MPI_Isend(h, N, MPI_INT, 1, 30, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(d, N, MPI_INT, 1, 31, MPI_COMM_WORLD, &r[1]);
        MPI_Start(&r[2]);
    } else {
        MPI_Recv_init(d, N, MPI_INT, 0, 32, MPI_COMM_WORLD, &r[2]);
        MPI_Irecv(h, N, MPI_INT, 0, 30, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(d, N, MPI_INT, 0, 31, MPI_COMM_WORLD, &r[1]);
    }
    for (int i = 0; i < 2; i++) {
        CHECK(MPIX_Event_from_request(ctx, &r[i], &ev[i]) == MPI_SUCCESS);
        CHECK(r[i] == MPI_REQUEST_NULL);
    }
    CHECK(clWaitForEvents(2, ev) == CL_SUCCESS);
    if (rank == 1) {
        int ok = 1;
        for (int i = 0; i < N; i++)
            ok &= h[i] == 9 * i;
        CHECK(ok);
        memset(h, 0, sizeof(h));
        MPIX_Gpu_memcpy(h, d, sizeof(h));
        ok = 1;
        for (int i = 0; i < N; i++)
            ok &= h[i] == 9 * i;
        CHECK(ok);
        MPI_Start(&r[2]);
    }
    CHECK(MPIX_Event_from_request(ctx, &r[2], &ev[2]) == MPI_SUCCESS);
    CHECK(r[2] == MPI_REQUEST_NULL);
    CHECK(clWaitForEvents(1, &ev[2]) == CL_SUCCESS);
    for (int i = 0; i < 3; i++)
        clReleaseEvent(ev[i]);

    /* persistent, 100 starts: the sender fills the buffer with the round
       number on the queue, the receiver reads it back after its start */
    strcpy(where, "enqueue start");
    cl_mem mem;
    int off;
    mem_of(d, &mem, &off);
    MPI_Request p;
    if (rank == 0)
        MPI_Send_init(d, N, MPI_INT, 1, 33, MPI_COMM_WORLD, &p);
    else
        MPI_Recv_init(d, N, MPI_INT, 0, 33, MPI_COMM_WORLD, &p);
    int bad = 0;
    for (int i = 0; i < ROUNDS; i++) {
        if (rank == 0) {
            CHECK(clEnqueueFillBuffer(q, mem, &i, sizeof(i), off * sizeof(int), sizeof(h), 0, NULL,
                                      NULL) == CL_SUCCESS);
            CHECK(MPIX_Enqueue_start(&p, q, 0, NULL, NULL) == MPI_SUCCESS);
        } else {
            CHECK(MPIX_Enqueue_start(&p, q, 0, NULL, NULL) == MPI_SUCCESS);
            CHECK(clEnqueueReadBuffer(q, mem, CL_FALSE, off * sizeof(int), sizeof(h), h, 0, NULL,
                                      NULL) == CL_SUCCESS);
        }
        CHECK(clFinish(q) == CL_SUCCESS);
        if (rank == 1)
            for (int j = 0; j < N; j++)
                bad += h[j] != i;
    }
    CHECK(bad == 0);
    CHECK(p != MPI_REQUEST_NULL);
    MPI_Request_free(&p);
    MPIX_Gpu_free(d);
}

/* Each datatype on both kinds of buffer: written at an offset, the file's
   bytes are the packed data, and read back into a poisoned buffer gives
   what an unpack gives. */
static void test_files(void)
{
    enum { COUNT = 4, SLOT = 1 << 12 };
    char name[256];
    MPI_File fh;
    strcpy(where, "files");
    const char *dir = getenv("TMPDIR");
    snprintf(name, sizeof(name), "%s/mpigpu-enqueue-%d-%d.bin", dir ? dir : "/tmp", (int)getpid(),
             rank);
    CHECK(MPI_File_open(MPI_COMM_SELF, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
          MPI_SUCCESS);
    for (int t = 0; t < NTYPES; t++)
        for (int kind = 0; kind < 2; kind++) {
            int slot = t * 2 + kind, psize = 0, pos = 0;
            size_t n = buf_size(types[t], COUNT);
            snprintf(where, sizeof(where), "files: %s on %s", tnames[t], kind ? "device" : "host");
            void *w = buf_make(n, 70 + slot, kind), *r = buf_make(n, 90 + slot, kind);
            cl_event ev = NULL;
            CHECK(MPIX_Enqueue_file_write_at(fh, (MPI_Offset)slot * SLOT, (char *)w + ORIGIN, COUNT,
                                             types[t], q, 0, NULL, &ev) == MPI_SUCCESS);
            CHECK(MPIX_Enqueue_file_read_at(fh, (MPI_Offset)slot * SLOT, (char *)r + ORIGIN, COUNT,
                                            types[t], q, 0, NULL, NULL) == MPI_SUCCESS);
            CHECK(clFinish(q) == CL_SUCCESS);
            CHECK(status_of(ev) == CL_COMPLETE);
            clReleaseEvent(ev);
            unsigned char *want = expected(types[t], COUNT, 70 + slot, 90 + slot);
            CHECK(buf_equal(r, want, n, kind));
            free(want);
            /* the file holds the packed bytes */
            unsigned char *h = malloc(n);
            fill(h, n, 70 + slot);
            PMPI_Pack_size(COUNT, types[t], MPI_COMM_SELF, &psize);
            char *packed = malloc(psize), *file = malloc(psize);
            PMPI_Pack(h + ORIGIN, COUNT, types[t], packed, psize, &pos, MPI_COMM_SELF);
            PMPI_File_read_at(fh, (MPI_Offset)slot * SLOT, file, psize, MPI_BYTE,
                              MPI_STATUS_IGNORE);
            CHECK(memcmp(packed, file, psize) == 0);
            free(h);
            free(packed);
            free(file);
            buf_free(w, kind);
            buf_free(r, kind);
        }

    /* A view applies: etype MPI_INT, every other int of the file.  The
       device write of ints lands where a host write through the same view
       puts them, and reads back. */
    enum { NV = 64 };
    int hv[NV], back[NV], raw[2 * NV + 2];
    int *dv = NULL;
    MPI_Datatype every2;
    strcpy(where, "files: view");
    MPI_Type_vector(1, 1, 2, MPI_INT, &every2);
    MPI_Datatype ft;
    MPI_Type_create_resized(every2, 0, 2 * sizeof(int), &ft);
    MPI_Type_commit(&ft);
    for (int i = 0; i < NV; i++)
        hv[i] = 1000 * rank + i;
    MPIX_Gpu_malloc(sizeof(hv), (void **)&dv);
    MPIX_Gpu_memcpy(dv, hv, sizeof(hv));
    MPI_File_set_view(fh, 0, MPI_INT, ft, "native", MPI_INFO_NULL);
    CHECK(MPIX_Enqueue_file_write_at(fh, 1, dv, NV, MPI_INT, q, 0, NULL, NULL) == MPI_SUCCESS);
    CHECK(clFinish(q) == CL_SUCCESS);
    memset(back, 0, sizeof(back));
    MPIX_Gpu_memcpy(dv, back, sizeof(back));
    CHECK(MPIX_Enqueue_file_read_at(fh, 1, dv, NV, MPI_INT, q, 0, NULL, NULL) == MPI_SUCCESS);
    CHECK(clFinish(q) == CL_SUCCESS);
    MPIX_Gpu_memcpy(back, dv, sizeof(back));
    CHECK(memcmp(back, hv, sizeof(hv)) == 0);
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    PMPI_File_read_at(fh, 0, raw, sizeof(raw), MPI_BYTE, MPI_STATUS_IGNORE);
    int ok = 1;
    for (int i = 0; i < NV; i++)
        ok &= raw[2 * (i + 1)] == hv[i]; /* offset 1 etype = the 2nd int of the view */
    CHECK(ok);
    MPI_Type_free(&ft);
    MPI_Type_free(&every2);
    MPIX_Gpu_free(dv);
    MPI_File_close(&fh);
    unlink(name);
}

/* MPIGPU_ENQUEUE_PROGRESS=off under MPI_THREAD_SINGLE: MPI runs at that
   level, and the enqueue calls refuse with MPI_ERR_OTHER, enqueueing
   nothing. */
static int test_off(int *argc, char ***argv)
{
    int provided = -1, got = -1;
    MPI_Init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    strcpy(where, "MPIGPU_ENQUEUE_PROGRESS=off");
    PMPI_Query_thread(&got);
    CHECK(provided == MPI_THREAD_SINGLE && got == MPI_THREAD_SINGLE);
    if (MPIX_Query_opencl_support()) {
        cl_command_queue dq;
        cl_event ev = NULL;
        int x = 0;
        MPIX_Gpu_get_device(&ctx, &dev, &dq);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        CHECK(MPIX_Enqueue_send(&x, 1, MPI_INT, 1 - rank, 0, MPI_COMM_WORLD, dq, 0, NULL, &ev) ==
              MPI_ERR_OTHER);
        CHECK(ev == NULL);
        CHECK(clFinish(dq) == CL_SUCCESS);
    }
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s\n", all ? "FAILED" : "No Errors");
    MPI_Finalize();
    return all != 0;
}

int main(int argc, char **argv)
{
    const char *names[] = {"single", "funneled", "serialized", "multiple"};
    const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED,
                          MPI_THREAD_MULTIPLE};
    int level = MPI_THREAD_SINGLE, provided = -1, got = -1;
    for (int i = 0; argc > 1 && i < 4; i++)
        if (!strcmp(argv[1], names[i]))
            level = levels[i];
    if (argc > 1 && !strcmp(argv[1], "off"))
        return test_off(&argc, &argv);
    MPI_Init_thread(&argc, &argv, level, &provided);
    MPI_Query_thread(&got);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    snprintf(where, sizeof(where), "init at %s", argc > 1 ? argv[1] : "single");
    CHECK(provided == level); /* the level asked for, whatever MPI runs at */
    CHECK(got == level);
    /* MPIGPU_ENQUEUE_PROGRESS=auto: this program calls the enqueue calls, so
       MPI itself runs at MPI_THREAD_MULTIPLE. */
    PMPI_Query_thread(&got);
    CHECK(getenv("MPIGPU_ENQUEUE_PROGRESS") || got == MPI_THREAD_MULTIPLE);
    if (!MPIX_Query_opencl_support()) {
        if (rank == 0)
            printf("no OpenCL device: skipped\n");
        MPI_Finalize();
        return 77;
    }
    cl_command_queue dq;
    MPIX_Gpu_get_device(&ctx, &dev, &dq);
    q = clCreateCommandQueue(ctx, dev, 0, NULL);
    qo = clCreateCommandQueue(ctx, dev, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE, NULL);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, NULL);
    CHECK(clBuildProgram(prog, 1, &dev, "", NULL, NULL) == CL_SUCCESS);
    inc = clCreateKernel(prog, "inc", NULL);
    types_create();

    /* First, while the staging pool is empty: a staging buffer made for an
       enqueued operation must not be mapped behind the kernel either. */
    trace("default queue");
    test_default(dq, "default queue");
    trace("gated");
    test_gated();
    test_order(q, "in-order queue");
    if (qo)
        test_order(qo, "out-of-order queue");
    else if (rank == 0)
        printf("out-of-order queues refused: that case skipped\n");
    trace("many");
    test_many();
    trace("large");
    test_large();
    trace("errors");
    test_errors();
    trace("short and failed");
    test_short_failed();
    trace("requests");
    test_requests();
    trace("files");
    test_files();
    trace("adopted queue");
    CHECK(MPIX_Gpu_set_queue(q) == MPI_SUCCESS);
    test_default(q, "adopted queue");

    types_free();
    clReleaseKernel(inc);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    if (qo)
        clReleaseCommandQueue(qo);
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s\n", all ? "FAILED" : "No Errors");
    MPI_Finalize();
    return all != 0;
}
