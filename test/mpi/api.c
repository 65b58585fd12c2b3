/* MPIX_ API on one rank: devices, device addresses, copies, errors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgtest_check.h"
#include "mpigpu.h"

/* rc has class cls and its MPI_Error_string contains want (may be NULL). */
static void check_err(int rc, int cls, const char *want, int line)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, got = -1;
    MPI_Error_class(rc, &got);
    MPI_Error_string(rc, msg, &len);
    if (got != cls || (want && !strstr(msg, want))) {
        errs++;
        fprintf(stderr, "api.c:%d: rc %d class %d (want %d) \"%s\" (want \"%s\")\n", line, rc, got,
                cls, msg, want ? want : "");
    }
}
#define CHECK_ERR(rc_, cls_, want_) check_err((rc_), (cls_), (want_), __LINE__)

static int handler_calls, handler_code;
static void count_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    handler_calls++;
    handler_code = *code;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 31 + seed);
}

static void test_query_malloc(void)
{
    cl_context c = NULL;
    cl_device_id d = NULL;
    cl_command_queue q = NULL;
    char *p = NULL, *z = NULL, *z2 = NULL;
    int is_dev = -1;
    cl_mem mem = NULL;
    size_t off = 0;
    int host;

    CHECK(MPIX_Gpu_get_device(&c, &d, &q) == MPI_SUCCESS && c && d && q);
    CHECK(MPIX_Gpu_get_device(NULL, NULL, NULL) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_malloc(4096, (void **)&p) == MPI_SUCCESS && p);
    CHECK(MPIX_Gpu_query(p + 10, &is_dev, &mem, &off) == MPI_SUCCESS);
    CHECK(is_dev == 1 && mem && off == 10);
    CHECK(MPIX_Gpu_query(p + 4095, &is_dev, NULL, NULL) == MPI_SUCCESS && is_dev == 1);
    cl_mem m2 = mem;
    /* Outside every allocation but inside the device range: device, with no
       buffer, never host. */
    CHECK(MPIX_Gpu_query(p + 4096, &is_dev, &m2, &off) == MPI_SUCCESS && is_dev == 1 && !m2 &&
          off == 0);
    CHECK(MPIX_Gpu_query(p - 1, &is_dev, NULL, NULL) == MPI_SUCCESS && is_dev == 1);
    CHECK(MPIX_Gpu_query(&host, &is_dev, NULL, NULL) == MPI_SUCCESS && is_dev == 0);
    cl_context mc = NULL;
    clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(mc), &mc, NULL);
    CHECK(mc == c);

    CHECK(MPIX_Gpu_malloc(0, (void **)&z) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_malloc(0, (void **)&z2) == MPI_SUCCESS && z2 != z);
    CHECK(MPIX_Gpu_query(z, &is_dev, NULL, NULL) == MPI_SUCCESS && is_dev == 1);
    CHECK(MPIX_Gpu_query(z + 1, &is_dev, &m2, NULL) == MPI_SUCCESS && is_dev == 1 && !m2);
    CHECK(MPIX_Gpu_free(z) == MPI_SUCCESS && MPIX_Gpu_free(z2) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_free(NULL) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_free(p) == MPI_SUCCESS);
    m2 = mem;
    off = 7;
    CHECK(MPIX_Gpu_query(p, &is_dev, &m2, &off) == MPI_SUCCESS && is_dev == 1 && !m2 && off == 0);
}

static void test_memcpy(void)
{
    enum { N = 10000 };
    unsigned char *h = malloc(N), *g = malloc(N), *m = malloc(N);
    char *p = NULL, *q = NULL;
    CHECK(MPIX_Gpu_malloc(N, (void **)&p) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_malloc(N, (void **)&q) == MPI_SUCCESS);
    fill(h, N, 1);
    CHECK(MPIX_Gpu_memcpy(p, h, N) == MPI_SUCCESS); /* host to device */
    CHECK(MPIX_Gpu_memcpy(q, p, N) == MPI_SUCCESS); /* device to device */
    memset(g, 0, N);
    CHECK(MPIX_Gpu_memcpy(g, q, N) == MPI_SUCCESS); /* device to host */
    CHECK(memcmp(g, h, N) == 0);
    CHECK(MPIX_Gpu_memcpy(g, h + 1, N - 1) == MPI_SUCCESS && memcmp(g, h + 1, N - 1) == 0);
    /* Overlapping ranges of one buffer behave like memmove. */
    memcpy(m, h, N);
    memmove(m + 100, m, 5000);
    CHECK(MPIX_Gpu_memcpy(p + 100, p, 5000) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_memcpy(g, p, N) == MPI_SUCCESS && memcmp(g, m, N) == 0);
    /* Partial ranges, offsets inside the allocation. */
    CHECK(MPIX_Gpu_memcpy(q + N - 10, h, 10) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_memcpy(g, q + N - 10, 10) == MPI_SUCCESS && memcmp(g, h, 10) == 0);
    CHECK(MPIX_Gpu_memcpy(g, p, 0) == MPI_SUCCESS);

    /* Every byte is checked: one past the end fails and names the range. */
    char want[64];
    snprintf(want, sizeof(want), "%p", (void *)(p + N + 1));
    CHECK_ERR(MPIX_Gpu_memcpy(p + 2, h, N - 1), MPI_ERR_BUFFER, want);
    CHECK_ERR(MPIX_Gpu_memcpy(g, p + 1, N), MPI_ERR_BUFFER, "source");
    /* A range that wraps is named as it is, not as a wrapped pair. */
    snprintf(want, sizeof(want), "[%p, %p + %zu) overflows the address space", (void *)g, (void *)g,
             SIZE_MAX);
    CHECK_ERR(MPIX_Gpu_memcpy(g, h, SIZE_MAX), MPI_ERR_BUFFER, want);
    snprintf(want, sizeof(want), "destination range [%p, %p + %zu) overflows", (void *)p, (void *)p,
             SIZE_MAX - 1);
    CHECK_ERR(MPIX_Gpu_memcpy(p, h, SIZE_MAX - 1), MPI_ERR_BUFFER, want);
    CHECK(MPIX_Gpu_free(p) == MPI_SUCCESS && MPIX_Gpu_free(q) == MPI_SUCCESS);
    snprintf(want, sizeof(want), "lies in a freed range (%d bytes at %p", N, (void *)p);
    CHECK_ERR(MPIX_Gpu_memcpy(g, p, 1), MPI_ERR_BUFFER, want);
    free(h);
    free(g);
    free(m);
}

static void test_register(void)
{
    enum { N = 4096 };
    cl_device_id d = NULL;
    cl_int err;
    unsigned char h[N], g[N];
    char *r = NULL, *r2 = NULL, *p = NULL;
    cl_uint refs = 0;

    MPIX_Gpu_get_device(NULL, &d, NULL);
    /* A context of the application's own, not the library's default. */
    cl_context c2 = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q2 = clCreateCommandQueue(c2, d, 0, &err);
    cl_mem mem = clCreateBuffer(c2, CL_MEM_READ_WRITE, N, NULL, &err);
    fill(h, N, 7);
    clEnqueueWriteBuffer(q2, mem, CL_TRUE, 0, N, h, 0, NULL, NULL);

    CHECK(MPIX_Gpu_register(mem, (void **)&r) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_register(mem, (void **)&r2) == MPI_SUCCESS && r2 != r);
    clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof(refs), &refs, NULL);
    CHECK(refs == 3);
    CHECK(MPIX_Gpu_malloc(N, (void **)&p) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_memcpy(p, r, N) == MPI_SUCCESS); /* across contexts */
    CHECK(MPIX_Gpu_memcpy(g, p, N) == MPI_SUCCESS && memcmp(g, h, N) == 0);
    memset(g, 0, N);
    CHECK(MPIX_Gpu_memcpy(g, r2 + 1, N - 1) == MPI_SUCCESS && memcmp(g, h + 1, N - 1) == 0);

    CHECK_ERR(MPIX_Gpu_free(r), MPI_ERR_BUFFER, "MPIX_Gpu_register");
    CHECK_ERR(MPIX_Gpu_deregister(p), MPI_ERR_BUFFER, "MPIX_Gpu_malloc");
    CHECK(MPIX_Gpu_deregister(r) == MPI_SUCCESS && MPIX_Gpu_deregister(r2) == MPI_SUCCESS);
    clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof(refs), &refs, NULL);
    CHECK(refs == 1);
    CHECK_ERR(MPIX_Gpu_register(NULL, (void **)&r), MPI_ERR_ARG, NULL);
    CHECK(MPIX_Gpu_free(p) == MPI_SUCCESS);
    clReleaseMemObject(mem);
    clReleaseCommandQueue(q2);
    clReleaseContext(c2);
}

static void test_errors(void)
{
    char *p = NULL;
    char want[64];
    int host = 0;
    CHECK(MPIX_Gpu_malloc(256, (void **)&p) == MPI_SUCCESS);
    snprintf(want, sizeof(want), "%p", (void *)(p + 1));
    CHECK_ERR(MPIX_Gpu_free(p + 1), MPI_ERR_BUFFER, want);
    snprintf(want, sizeof(want), "%p", (void *)&host);
    CHECK_ERR(MPIX_Gpu_free(&host), MPI_ERR_BUFFER, want);
    CHECK_ERR(MPIX_Enqueue_send(p, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL, 0, NULL, NULL),
              MPI_ERR_ARG, "MPIX_Enqueue_send: queue is NULL");
    CHECK_ERR(MPIX_Enqueue_recv(p, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL, 0, NULL, NULL),
              MPI_ERR_ARG, "MPIX_Enqueue_recv: queue is NULL");
    MPI_Request req = MPI_REQUEST_NULL;
    CHECK_ERR(MPIX_Event_from_request(NULL, &req, NULL), MPI_ERR_ARG,
              "MPIX_Event_from_request: context is NULL");

    /* Errors go through MPI_COMM_WORLD's handler. */
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(count_handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    handler_calls = 0;
    CHECK(MPIX_Gpu_free(p + 3) == MPI_ERR_BUFFER);
    CHECK(handler_calls == 1 && handler_code == MPI_ERR_BUFFER);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    CHECK(MPIX_Gpu_free(p) == MPI_SUCCESS);
}

/* Host ranges declared pinned: argument errors, and packs into and unpacks
   from a declared range (the direct path where the device does not share
   host memory) give the bytes of host MPI_Pack. */
static void test_host_register(void)
{
    enum { NV = 3000 };
    cl_context c = NULL;
    cl_command_queue q = NULL;
    cl_int err;
    double src[2 * NV], back[2 * NV], *d = NULL;
    char ref[NV * sizeof(double)];
    int pos = 0, host = 0;
    MPI_Datatype vec;
    MPI_Type_vector(NV, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    CHECK(MPIX_Gpu_get_device(&c, NULL, &q) == MPI_SUCCESS);
    CHECK_ERR(MPIX_Gpu_host_register(NULL, 10), MPI_ERR_ARG, "ptr is NULL");
    CHECK_ERR(MPIX_Gpu_host_register(&host, 0), MPI_ERR_ARG, "size is 0");
    CHECK_ERR(MPIX_Gpu_host_deregister(&host), MPI_ERR_ARG, "was not registered");
    CHECK(MPIX_Gpu_host_deregister(NULL) == MPI_SUCCESS);
    /* A range that wraps around the address space. */
    char want[96];
    snprintf(want, sizeof(want), "range [%p, %p + %zu) overflows the address space", (void *)&host,
             (void *)&host, SIZE_MAX);
    CHECK_ERR(MPIX_Gpu_host_register(&host, SIZE_MAX), MPI_ERR_ARG, want);
    CHECK_ERR(MPIX_Gpu_host_deregister(&host), MPI_ERR_ARG, "was not registered");
    CHECK(MPIX_Gpu_malloc(sizeof(src), (void **)&d) == MPI_SUCCESS);
    CHECK_ERR(MPIX_Gpu_host_register(d, 8), MPI_ERR_ARG, "device address");
    cl_mem hm = clCreateBuffer(c, CL_MEM_ALLOC_HOST_PTR, sizeof(ref), NULL, &err);
    CHECK(err == CL_SUCCESS);
    char *pin = clEnqueueMapBuffer(q, hm, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, sizeof(ref), 0,
                                   NULL, NULL, &err);
    CHECK(err == CL_SUCCESS && pin);
    CHECK(MPIX_Gpu_host_register(pin, sizeof(ref)) == MPI_SUCCESS);
    /* Only the start of a declared range deregisters it. */
    CHECK_ERR(MPIX_Gpu_host_deregister(pin + 1), MPI_ERR_ARG, "was not registered");
    for (int i = 0; i < 2 * NV; i++)
        src[i] = i * 0.5 + 1;
    PMPI_Pack(src, 1, vec, ref, sizeof(ref), &pos, MPI_COMM_WORLD);
    CHECK(MPIX_Gpu_memcpy(d, src, sizeof(src)) == MPI_SUCCESS);
    memset(pin, 0, sizeof(ref));
    pos = 0;
    CHECK(MPI_Pack(d, 1, vec, pin, sizeof(ref), &pos, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(pos == (int)sizeof(ref) && memcmp(pin, ref, sizeof(ref)) == 0);
    /* Unpack from it into a cleared buffer: every other double comes back. */
    memset(back, 0, sizeof(back));
    CHECK(MPIX_Gpu_memcpy(d, back, sizeof(back)) == MPI_SUCCESS);
    pos = 0;
    CHECK(MPI_Unpack(pin, sizeof(ref), &pos, d, 1, vec, MPI_COMM_WORLD) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_memcpy(back, d, sizeof(back)) == MPI_SUCCESS);
    int bad = 0;
    for (int i = 0; i < 2 * NV; i++)
        bad += back[i] != (i % 2 ? 0.0 : src[i]);
    CHECK(bad == 0);
    CHECK(MPIX_Gpu_host_deregister(pin) == MPI_SUCCESS);
    CHECK_ERR(MPIX_Gpu_host_deregister(pin), MPI_ERR_ARG, "was not registered");
    clEnqueueUnmapMemObject(q, hm, pin, 0, NULL, NULL);
    clFinish(q);
    clReleaseMemObject(hm);
    CHECK(MPIX_Gpu_free(d) == MPI_SUCCESS);
    MPI_Type_free(&vec);
}

/* A stale device address (freed, and its range not handed out again) gets
   an error naming the freed range from every call that would use it, under
   MPI_ERRORS_RETURN, and nothing is written. */
static void test_stale(void)
{
    char *p = NULL, *q = NULL, want[160];
    int host[64] = {0}, is_dev = -1, pos = 0, flag = 0;
    char packed[512];
    cl_mem mem = NULL;
    size_t off = 5;
    MPI_Request req = MPI_REQUEST_NULL;
    MPI_Status st;

    CHECK(MPIX_Gpu_malloc(256, (void **)&p) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_malloc(256, (void **)&q) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_query(q, &is_dev, &mem, NULL) == MPI_SUCCESS && mem);
    CHECK(MPIX_Gpu_free(p) == MPI_SUCCESS);
    /* Reused last: a new allocation of the same size gets other addresses. */
    char *r = NULL;
    CHECK(MPIX_Gpu_malloc(256, (void **)&r) == MPI_SUCCESS && r != p);
    CHECK(MPIX_Gpu_query(p + 8, &is_dev, &mem, &off) == MPI_SUCCESS);
    CHECK(is_dev == 1 && mem == NULL && off == 0);

    snprintf(want, sizeof(want), "device address %p lies in a freed range (256 bytes at %p, freed",
             (void *)p, (void *)p);
    CHECK_ERR(MPIX_Gpu_memcpy(host, p, 8), MPI_ERR_BUFFER, want);
    CHECK_ERR(MPIX_Gpu_memcpy(p, host, 8), MPI_ERR_BUFFER, want);
    CHECK_ERR(MPIX_Gpu_memcpy(q, p, 8), MPI_ERR_BUFFER, want);
    CHECK_ERR(MPIX_Gpu_free(p), MPI_ERR_BUFFER, want);
    CHECK_ERR(MPI_Send(p, 4, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, want);
    CHECK_ERR(MPI_Isend(p, 4, MPI_INT, 0, 0, MPI_COMM_WORLD, &req), MPI_ERR_BUFFER, want);
    CHECK(req == MPI_REQUEST_NULL);
    CHECK_ERR(MPI_Recv(p, 4, MPI_INT, 0, 0, MPI_COMM_WORLD, &st), MPI_ERR_BUFFER, want);
    CHECK_ERR(MPI_Irecv(p, 4, MPI_INT, 0, 0, MPI_COMM_WORLD, &req), MPI_ERR_BUFFER, want);
    CHECK(req == MPI_REQUEST_NULL);
    CHECK_ERR(MPI_Pack(p, 4, MPI_INT, packed, sizeof(packed), &pos, MPI_COMM_WORLD), MPI_ERR_BUFFER,
              want);
    CHECK(pos == 0);
    CHECK_ERR(MPI_Pack(host, 4, MPI_INT, p, 256, &pos, MPI_COMM_WORLD), MPI_ERR_BUFFER, want);
    CHECK(pos == 0);
    CHECK_ERR(MPI_Unpack(p, 256, &pos, host, 4, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, want);
    CHECK(pos == 0 && host[0] == 0);
    /* Nothing is left to match. */
    MPI_Iprobe(0, 0, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag == 0);
    CHECK(MPIX_Gpu_free(q) == MPI_SUCCESS && MPIX_Gpu_free(r) == MPI_SUCCESS);
}

static void test_set_queue(void)
{
    cl_device_id d = NULL;
    cl_context c0 = NULL, c = NULL;
    cl_command_queue q = NULL;
    cl_int err;
    char *old = NULL, *nu = NULL;
    unsigned char h[1000], g[1000];

    MPIX_Gpu_get_device(&c0, &d, NULL);
    CHECK(MPIX_Gpu_malloc(sizeof(h), (void **)&old) == MPI_SUCCESS);
    fill(h, sizeof(h), 3);
    CHECK(MPIX_Gpu_memcpy(old, h, sizeof(h)) == MPI_SUCCESS);

    cl_context c1 = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q1 = clCreateCommandQueue(c1, d, 0, &err);
    CHECK(MPIX_Gpu_set_queue(q1) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_get_device(&c, NULL, &q) == MPI_SUCCESS && c == c1 && q == q1);
    CHECK(MPIX_Gpu_malloc(sizeof(h), (void **)&nu) == MPI_SUCCESS);
    cl_mem mem = NULL;
    cl_context mc = NULL;
    int is_dev = 0;
    MPIX_Gpu_query(nu, &is_dev, &mem, NULL);
    clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(mc), &mc, NULL);
    CHECK(is_dev && mc == c1);
    /* The old context's addresses stay valid. */
    CHECK(MPIX_Gpu_memcpy(nu, old, sizeof(h)) == MPI_SUCCESS);
    CHECK(MPIX_Gpu_memcpy(g, nu, sizeof(g)) == MPI_SUCCESS && memcmp(g, h, sizeof(h)) == 0);
    /* MPI_Pack and MPI_Unpack between buffers of the two contexts (through a
       host buffer), twice each, against the host's MPI_Pack of the same bytes. */
    MPI_Datatype v;
    MPI_Type_vector(100, 2, 5, MPI_BYTE, &v);
    MPI_Type_commit(&v);
    unsigned char want[200], zero[1000] = {0}, back[1000] = {0};
    int pos = 0;
    MPI_Pack(h, 1, v, want, sizeof(want), &pos, MPI_COMM_WORLD);
    pos = 0;
    MPI_Unpack(want, sizeof(want), &pos, back, 1, v, MPI_COMM_WORLD);
    for (int r = 0; r < 2; r++) {
        pos = 0;
        CHECK(MPIX_Gpu_memcpy(nu, zero, sizeof(zero)) == MPI_SUCCESS);
        CHECK(MPI_Pack(old, 1, v, nu, sizeof(h), &pos, MPI_COMM_WORLD) == MPI_SUCCESS &&
              pos == 200);
        CHECK(MPIX_Gpu_memcpy(g, nu, sizeof(g)) == MPI_SUCCESS && memcmp(g, want, 200) == 0 &&
              memcmp(g + 200, zero, sizeof(g) - 200) == 0);
        pos = 0;
        CHECK(MPIX_Gpu_memcpy(old, zero, sizeof(zero)) == MPI_SUCCESS);
        CHECK(MPI_Unpack(nu, 200, &pos, old, 1, v, MPI_COMM_WORLD) == MPI_SUCCESS && pos == 200);
        CHECK(MPIX_Gpu_memcpy(g, old, sizeof(g)) == MPI_SUCCESS &&
              memcmp(g, back, sizeof(back)) == 0);
        CHECK(MPIX_Gpu_memcpy(old, h, sizeof(h)) == MPI_SUCCESS);
    }
    MPI_Type_free(&v);
    CHECK(MPIX_Gpu_free(old) == MPI_SUCCESS && MPIX_Gpu_free(nu) == MPI_SUCCESS);
    CHECK_ERR(MPIX_Gpu_set_queue(NULL), MPI_ERR_ARG, NULL);
    /* The library retained the queue; the application may drop its own. */
    clReleaseCommandQueue(q1);
    clReleaseContext(c1);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (!MPIX_Query_opencl_support()) {
        int rc = MPIX_Gpu_malloc(1, NULL);
        CHECK_ERR(rc, MPI_ERR_OTHER, "no OpenCL device");
        MPI_Finalize();
        if (errs)
            printf(" Found %d errors\n", errs);
        else
            printf(" No Errors (no OpenCL device: device tests skipped)\n");
        return errs != 0;
    }
    test_query_malloc();
    test_memcpy();
    test_register();
    test_errors();
    test_host_register();
    test_stale();
    test_set_queue();
    MPI_Finalize();
    CHECK(MPIX_Query_opencl_support() == 0);
    if (errs)
        printf(" Found %d errors\n", errs);
    else
        printf(" No Errors\n");
    return errs != 0;
}
