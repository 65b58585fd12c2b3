/*
 * mpigpu-vclbench: the costs a remote OpenCL device adds, measured the same
 * way on any platform (plain OpenCL; no mpigpu, no MPI).  Run it natively and
 * through "mpigpu virtual" in the same session to compare
 * (test/remote/vclbench.sh does).
 *
 *   mpigpu-vclbench [-n BEST_OF] [-l LAUNCHES] [-m MIN_MIB:MAX_MIB] [--csv FILE] PLATFORM
 *   mpigpu-vclbench --setarg-test COUNT PLATFORM
 *   mpigpu-vclbench --tcp-loopback
 *
 * PLATFORM is a substring of the platform name; the first device is used.
 * Measures: blocking clEnqueueWriteBuffer and clEnqueueReadBuffer bandwidth
 * from page-aligned, mlock()ed (where allowed) host memory, sizes MIN..MAX MiB
 * in powers of two, best of BEST_OF; the latency of a one-work-item kernel
 * launch followed by clFinish, median of LAUNCHES; the cost of one
 * clSetKernelArg call.  After each size the buffer is read back untimed and
 * checked byte for byte (all of it, and a part at offset 4097 whose length
 * is no multiple of a chunk); wrong data fails the run.  Prints CSV
 * (platform,test,bytes,value,unit) and a table.
 * --setarg-test sets the kernel's scalar argument COUNT times (a new value
 * each time), launches once, and checks that the kernel saw the last value:
 * with MPIGPU_VCL_STATS=1, the message count of COUNT=1000 and COUNT=1 must
 * be the same (clSetKernelArg sends nothing).
 * --tcp-loopback times 2 GiB sent over one loopback TCP connection to a
 * child process in 1 MiB send() calls: the most any TCP transport can carry
 * here, the ceiling of a virtual device's bandwidth on this machine.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024L * 1024L)

#define CL_CHECK(err, what, label)                                                                 \
    do {                                                                                           \
        if ((err) != CL_SUCCESS) {                                                                 \
            fprintf(stderr, "mpigpu-vclbench: %s failed: OpenCL error %d\n", what, (int)(err));    \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

static const char *kernel_src =
    "__kernel void tiny(__global int *a, int v) { if (get_global_id(0) == 0) a[0] = v; }\n";

typedef struct bench {
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    cl_kernel k;
    cl_mem small;
    char platform[256];
    char device[256];
} bench_t;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int bench_open(const char *want, bench_t *b)
{
    cl_platform_id plats[16], plat = NULL;
    cl_device_id dev;
    cl_uint n = 0, i;
    cl_int err;
    int rc = -1;

    memset(b, 0, sizeof(*b));
    err = clGetPlatformIDs(16, plats, &n);
    CL_CHECK(err, "clGetPlatformIDs", fn_fail);
    for (i = 0; i < n && i < 16; i++) {
        char name[256] = "";
        clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof(name), name, NULL);
        if (strstr(name, want)) {
            plat = plats[i];
            snprintf(b->platform, sizeof(b->platform), "%s", name);
            break;
        }
    }
    if (!plat) {
        fprintf(stderr, "mpigpu-vclbench: no platform whose name contains '%s'\n", want);
        goto fn_fail;
    }
    err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL);
    CL_CHECK(err, "clGetDeviceIDs", fn_fail);
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(b->device), b->device, NULL);
    b->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CL_CHECK(err, "clCreateContext", fn_fail);
    b->q = clCreateCommandQueue(b->ctx, dev, 0, &err);
    CL_CHECK(err, "clCreateCommandQueue", fn_fail);
    b->prog = clCreateProgramWithSource(b->ctx, 1, &kernel_src, NULL, &err);
    CL_CHECK(err, "clCreateProgramWithSource", fn_fail);
    err = clBuildProgram(b->prog, 1, &dev, "", NULL, NULL);
    CL_CHECK(err, "clBuildProgram", fn_fail);
    b->k = clCreateKernel(b->prog, "tiny", &err);
    CL_CHECK(err, "clCreateKernel", fn_fail);
    b->small = clCreateBuffer(b->ctx, CL_MEM_READ_WRITE, sizeof(cl_int), NULL, &err);
    CL_CHECK(err, "clCreateBuffer", fn_fail);
    err = clSetKernelArg(b->k, 0, sizeof(cl_mem), &b->small);
    CL_CHECK(err, "clSetKernelArg", fn_fail);
    rc = 0;
fn_fail:
    return rc;
}

static void bench_close(bench_t *b)
{
    if (b->small)
        clReleaseMemObject(b->small);
    if (b->k)
        clReleaseKernel(b->k);
    if (b->prog)
        clReleaseProgram(b->prog);
    if (b->q)
        clReleaseCommandQueue(b->q);
    if (b->ctx)
        clReleaseContext(b->ctx);
}

/* Launch the kernel with v and return what it wrote (or -1 on error). */
static int launch(bench_t *b, cl_int v, cl_int *seen)
{
    size_t one = 1;
    cl_int err;
    int rc = -1;

    err = clSetKernelArg(b->k, 1, sizeof(cl_int), &v);
    CL_CHECK(err, "clSetKernelArg", fn_fail);
    err = clEnqueueNDRangeKernel(b->q, b->k, 1, NULL, &one, &one, 0, NULL, NULL);
    CL_CHECK(err, "clEnqueueNDRangeKernel", fn_fail);
    err = clFinish(b->q);
    CL_CHECK(err, "clFinish", fn_fail);
    if (seen) {
        err = clEnqueueReadBuffer(b->q, b->small, CL_TRUE, 0, sizeof(*seen), seen, 0, NULL, NULL);
        CL_CHECK(err, "clEnqueueReadBuffer", fn_fail);
    }
    rc = 0;
fn_fail:
    return rc;
}

static int setarg_test(bench_t *b, long count)
{
    cl_int v = 0, seen = -1, err;
    long i;

    for (i = 1; i <= count; i++) {
        v = (cl_int)i;
        err = clSetKernelArg(b->k, 1, sizeof(cl_int), &v);
        CL_CHECK(err, "clSetKernelArg", fn_fail);
    }
    {
        size_t one = 1;
        err = clEnqueueNDRangeKernel(b->q, b->k, 1, NULL, &one, &one, 0, NULL, NULL);
        CL_CHECK(err, "clEnqueueNDRangeKernel", fn_fail);
        err = clEnqueueReadBuffer(b->q, b->small, CL_TRUE, 0, sizeof(seen), &seen, 0, NULL, NULL);
        CL_CHECK(err, "clEnqueueReadBuffer", fn_fail);
    }
    if (seen != v) {
        fprintf(stderr, "mpigpu-vclbench: kernel saw argument %d, expected the last value %d\n",
                (int)seen, (int)v);
        return -1;
    }
    printf("setarg-test: %ld clSetKernelArg calls, 1 launch, kernel saw %d: ok\n", count,
           (int)seen);
    return 0;
fn_fail:
    return -1;
}

/* Loopback TCP bandwidth in GB/s, or a negative value on error. */
static double tcp_loopback(void)
{
    const long total = 2L << 30, chunk = 1L << 20;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    double t, bw = -1;
    char *buf = NULL;
    int l = -1, s = -1;
    pid_t pid;

    if (!(buf = malloc(chunk)))
        goto fn_exit;
    memset(buf, 1, chunk);
    l = socket(AF_INET, SOCK_STREAM, 0);
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
        getsockname(l, (struct sockaddr *)&a, &alen))
        goto fn_exit;
    pid = fork();
    if (pid < 0)
        goto fn_exit;
    if (pid == 0) {
        long got = 0;
        ssize_t n;
        int c = accept(l, NULL, NULL);
        while (c >= 0 && got < total && (n = recv(c, buf, chunk, 0)) > 0)
            got += n;
        _exit(got == total ? 0 : 1);
    }
    s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)))
        goto fn_exit;
    t = now_s();
    for (long sent = 0; sent < total;) {
        ssize_t n = send(s, buf, chunk, 0);
        if (n <= 0)
            goto fn_exit;
        sent += n;
    }
    close(s);
    s = -1;
    {
        int st = 1;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            goto fn_exit;
    }
    bw = total / (now_s() - t) / 1e9;
fn_exit:
    if (s >= 0)
        close(s);
    if (l >= 0)
        close(l);
    free(buf);
    return bw;
}

static void emit(FILE *csv, const bench_t *b, const char *test, long bytes, double v,
                 const char *unit)
{
    printf("%s,%s,%ld,%.4f,%s\n", b->platform, test, bytes, v, unit);
    if (csv)
        fprintf(csv, "%s,%s,%ld,%.4f,%s\n", b->platform, test, bytes, v, unit);
}

int main(int argc, char **argv)
{
    long best_of = 5, launches = 1000, lo_mib = 1, hi_mib = 256, setarg = 0, nsz = 0, i, s;
    const char *want = NULL, *csvname = NULL;
    double wbw[16], rbw[16], lat_med = 0, lat_min = 0, setarg_ns = 0, *lat = NULL;
    long sizes[16];
    unsigned char *host = NULL, *ref = NULL;
    cl_mem buf = NULL;
    FILE *csv = NULL;
    bench_t b;
    cl_int err;
    int rc = 1, a;

    memset(&b, 0, sizeof(b));
    for (a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-n") && a + 1 < argc)
            best_of = atol(argv[++a]);
        else if (!strcmp(argv[a], "-l") && a + 1 < argc)
            launches = atol(argv[++a]);
        else if (!strcmp(argv[a], "-m") && a + 1 < argc) {
            if (sscanf(argv[++a], "%ld:%ld", &lo_mib, &hi_mib) != 2)
                goto usage;
        } else if (!strcmp(argv[a], "--csv") && a + 1 < argc)
            csvname = argv[++a];
        else if (!strcmp(argv[a], "--tcp-loopback")) {
            double bw = tcp_loopback();
            if (bw < 0) {
                perror("mpigpu-vclbench: loopback TCP");
                return 1;
            }
            printf("loopback-tcp,tcp,%ld,%.4f,GB/s\n", 2L << 30, bw);
            return 0;
        } else if (!strcmp(argv[a], "--setarg-test") && a + 1 < argc)
            setarg = atol(argv[++a]);
        else if (argv[a][0] != '-' && !want)
            want = argv[a];
        else
            goto usage;
    }
    if (!want || best_of < 1 || launches < 1 || lo_mib < 1 || hi_mib < lo_mib || hi_mib > 4096)
        goto usage;
    if (bench_open(want, &b))
        goto fn_exit;
    if (setarg) {
        rc = setarg_test(&b, setarg) ? 1 : 0;
        goto fn_exit;
    }
    if (csvname && !(csv = fopen(csvname, "w"))) {
        perror(csvname);
        goto fn_exit;
    }
    printf("# mpigpu-vclbench: platform '%s', device '%s'\n", b.platform, b.device);
    printf("platform,test,bytes,value,unit\n");

    /* Bandwidth: one device buffer of the largest size, host memory
       page-aligned, touched, and locked if the limit allows. */
    if (posix_memalign((void **)&host, 4096, hi_mib * MIB)) {
        fprintf(stderr, "mpigpu-vclbench: cannot allocate %ld MiB\n", hi_mib);
        goto fn_exit;
    }
    if (!(ref = malloc(hi_mib * MIB))) {
        fprintf(stderr, "mpigpu-vclbench: cannot allocate %ld MiB\n", hi_mib);
        goto fn_exit;
    }
    for (long x = 0; x < hi_mib * MIB; x++) /* differs in every byte of a MiB, and per MiB */
        ref[x] = (unsigned char)(x ^ (x >> 8) ^ (x >> 16) ^ (x >> 24));
    memcpy(host, ref, hi_mib * MIB);
    (void)mlock(host, hi_mib * MIB);
    buf = clCreateBuffer(b.ctx, CL_MEM_READ_WRITE, hi_mib * MIB, NULL, &err);
    CL_CHECK(err, "clCreateBuffer", fn_exit);
    for (s = lo_mib; s <= hi_mib && nsz < 16; s *= 2) {
        double bw = 0, rb = 0, t;
        long bytes = s * MIB;
        for (i = -1; i < best_of; i++) { /* i == -1: warm-up */
            t = now_s();
            err = clEnqueueWriteBuffer(b.q, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
            CL_CHECK(err, "clEnqueueWriteBuffer", fn_exit);
            t = now_s() - t;
            if (i >= 0 && bytes / t > bw)
                bw = bytes / t;
            t = now_s();
            err = clEnqueueReadBuffer(b.q, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
            CL_CHECK(err, "clEnqueueReadBuffer", fn_exit);
            t = now_s() - t;
            if (i >= 0 && bytes / t > rb)
                rb = bytes / t;
        }
        /* untimed: the whole buffer, and a part whose offset and length
           are not multiples of any chunk size, checked byte for byte */
        memset(host, 0, bytes);
        err = clEnqueueReadBuffer(b.q, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL);
        CL_CHECK(err, "clEnqueueReadBuffer", fn_exit);
        if (memcmp(host, ref, bytes)) {
            fprintf(stderr, "mpigpu-vclbench: read back wrong data at %ld MiB\n", s);
            goto fn_exit;
        }
        memset(host, 0, bytes);
        err = clEnqueueReadBuffer(b.q, buf, CL_TRUE, 4097, bytes - 4097 - 1001, host + 4097, 0,
                                  NULL, NULL);
        CL_CHECK(err, "clEnqueueReadBuffer", fn_exit);
        if (memcmp(host + 4097, ref + 4097, bytes - 4097 - 1001)) {
            fprintf(stderr, "mpigpu-vclbench: read at offset 4097 wrong at %ld MiB\n", s);
            goto fn_exit;
        }
        memcpy(host, ref, bytes);
        sizes[nsz] = bytes;
        wbw[nsz] = bw / 1e9;
        rbw[nsz] = rb / 1e9;
        emit(csv, &b, "write", bytes, wbw[nsz], "GB/s");
        emit(csv, &b, "read", bytes, rbw[nsz], "GB/s");
        nsz++;
    }

    /* Launch + finish latency. */
    lat = malloc(launches * sizeof(*lat));
    if (!lat)
        goto fn_exit;
    for (i = 0; i < 10; i++)
        if (launch(&b, (cl_int)i, NULL))
            goto fn_exit;
    for (i = 0; i < launches; i++) {
        double t = now_s();
        if (launch(&b, (cl_int)i, NULL))
            goto fn_exit;
        lat[i] = (now_s() - t) * 1e6;
    }
    qsort(lat, launches, sizeof(*lat), cmp_double);
    lat_med = lat[launches / 2];
    lat_min = lat[0];
    {
        cl_int seen = -1;
        if (launch(&b, 4242, &seen) || seen != 4242) {
            fprintf(stderr, "mpigpu-vclbench: kernel wrote %d, expected 4242\n", (int)seen);
            goto fn_exit;
        }
    }
    emit(csv, &b, "launch_median", 0, lat_med, "us");
    emit(csv, &b, "launch_min", 0, lat_min, "us");

    /* clSetKernelArg: the cost of one call, from 100000. */
    {
        long n = 100000;
        double t = now_s();
        for (i = 0; i < n; i++) {
            cl_int v = (cl_int)i;
            err = clSetKernelArg(b.k, 1, sizeof(v), &v);
            CL_CHECK(err, "clSetKernelArg", fn_exit);
        }
        setarg_ns = (now_s() - t) * 1e9 / n;
    }
    emit(csv, &b, "setkernelarg", 0, setarg_ns, "ns");

    printf("\n# %-12s %14s %14s\n", "size", "write GB/s", "read GB/s");
    for (i = 0; i < nsz; i++)
        printf("  %8ld MiB %14.2f %14.2f\n", sizes[i] / MIB, wbw[i], rbw[i]);
    printf("# launch + clFinish: median %.1f us, min %.1f us (%ld launches)\n", lat_med, lat_min,
           launches);
    printf("# clSetKernelArg: %.1f ns per call\n", setarg_ns);
    rc = 0;
fn_exit:
    if (csv)
        fclose(csv);
    free(lat);
    if (buf)
        clReleaseMemObject(buf);
    free(host);
    free(ref);
    bench_close(&b);
    return rc;
usage:
    fprintf(stderr, "usage: mpigpu-vclbench [-n BEST_OF] [-l LAUNCHES] [-m MIN_MIB:MAX_MIB] "
                    "[--csv FILE] PLATFORM\n"
                    "       mpigpu-vclbench --setarg-test COUNT PLATFORM\n"
                    "       mpigpu-vclbench --tcp-loopback\n");
    return 2;
}
