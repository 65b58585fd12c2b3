/*
 * mpigpu-packbench: pack/unpack microbenchmark on one rank.
 *
 *   mpigpu-packbench [-D TYPE] [-m MIN:MAX] [-i ITERS] [--method auto|kernel|copy|host]
 *                    [--methods M1,M2,...] [--csv FILE] [--contend] [--interleave]
 *   TYPE: cont | vect:STRIDE:BLOCKLEN | subarray4d | indexed:BLOCKLEN | struct[:strided]
 *         | face:[N:]xy|xz|yz  (faces of an N^3 cube of doubles; no N: 64..512)
 *
 * For each packed size from MIN to MAX (powers of two) it times, in one run:
 *   pack_d2h   MPI_Pack of a device buffer into (pageable) host memory  (library)
 *   pack_d2p   the same into pinned host memory                          (library)
 *   pack_d2d   MPI_Pack of a device buffer into device memory            (library)
 *   unpack_h2d MPI_Unpack of host packed data into a device buffer       (library)
 *   unpack_p2d the same from pinned host memory                         (library)
 *   hand_d2d   a hand-written kernel for this one layout (tools/hand.cl)
 *   hand_d2h   that kernel, then a read of the packed bytes into pinned memory
 *   copy_d2h   clEnqueueReadBufferRect into pinned memory (cont, vect, face,
 *              subarray4d: one 3D rectangle per outer index), or one
 *              clEnqueueReadBuffer per block (indexed, struct)
 *   stage_host copy the whole extent to the host, then host MPI_Pack (PMPI_Pack)
 *   host_pack  host MPI_Pack (PMPI_Pack) of the same data already in host memory
 *   read_d2h   a read of the packed size of contiguous bytes into pinned memory
 *   floor_d2h  an empty kernel, then that read, on the same queue
 * --method sets the library rows' method on the benchmark's datatype (the
 * attribute of MPIX_Gpu_pack_keyval; auto leaves MPIGPU_PACK in charge),
 * and the last column says which method each library row ran, read through
 * MPI_T (the mpigpu_pack_calls_* counters around its first, untimed call):
 * "kernel", "copy" or "host" (joined by '+' when a call ran several), in the
 * order of the library rows shown.  Times are medians over the
 * iterations (the first call of each size is not timed); GB/s counts packed
 * bytes.  Each size is checked once: the library, hand and copy results must
 * equal host MPI_Pack.  By default each method runs all its iterations in
 * turn; --interleave runs them in rounds of one call per method instead, so
 * that two methods compared in one run see the same clocks and load.
 *
 * Variants of the hand kernel for layouts of blocks (cont, vect, struct,
 * faces), to compare the library with the best hand kernel:
 * PERF_HAND_WPI=1..4 runs hand_vect_x (32-bit index math, that many words
 * per work-item strided by the grid) instead of hand_vect, and
 * PERF_HAND_LOCAL sets the work-group size (default 256).
 *
 * --contend (the paper's sections 3.3 and 4.4) replaces the table: a busy
 * user kernel that fills every compute unit runs on a second queue of the
 * same device (about 0.2 s alone), and the library's MPI_Pack into device
 * memory (d2d) and into host memory (d2h) is timed while it runs, with the
 * method forced per datatype (MPIX_Gpu_pack_keyval) to kernel, copy and
 * host.  Per line: the pack's median time idle and under contention, and the
 * busy kernel's run time on the device (profiling events) with that pack
 * against its time alone (its slowdown).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_common.h"

enum {
    M_PACK_D2H,
    M_PACK_D2P,
    M_PACK_D2D,
    M_UNPACK_H2D,
    M_UNPACK_P2D,
    M_HAND_D2D,
    M_HAND_D2H,
    M_COPY_D2H,
    M_STAGE_HOST,
    M_HOST_PACK,
    M_READ_D2H,
    M_FLOOR_D2H,
    NM
};
static const char *names[NM] = {"pack_d2h",   "pack_d2p",  "pack_d2d", "unpack_h2d",
                                "unpack_p2d", "hand_d2d",  "hand_d2h", "copy_d2h",
                                "stage_host", "host_pack", "read_d2h", "floor_d2h"};

#define MAXIT 1000
#define MAXSIZES 64

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    fprintf(stderr, "usage: mpigpu-packbench [-D cont|vect:STRIDE:BLOCKLEN|subarray4d|"
                    "indexed:BLOCKLEN|struct[:strided]|face:[N:]xy|xz|yz] [-m MIN:MAX] "
                    "[-i ITERS] [--method auto|kernel|copy|host] [--methods M1,M2,...] "
                    "[--csv FILE] [--contend] [--interleave]\n");
    exit(2);
}

static int parse_methods(char *list, int *on)
{
    memset(on, 0, NM * sizeof(int));
    for (char *m = strtok(list, ","); m; m = strtok(NULL, ",")) {
        int k = 0;
        while (k < NM && strcmp(names[k], m))
            k++;
        if (k == NM) {
            fprintf(stderr, "mpigpu-packbench: unknown method '%s'\n", m);
            return -1;
        }
        on[k] = 1;
    }
    return 0;
}

/* Everything one size needs. */
typedef struct bench_bufs {
    MPI_Datatype t;
    perf_layout_t lay;
    int psize;
    MPI_Aint lb;
    size_t span;
    char *h, *hp, *hs, *ref;
    void *d, *dp;
    cl_mem dpmem;
    perf_pinned_t pin;
} bench_bufs_t;

/* One call of method m; returns 0, 1 when the method does not apply, -1 on error. */
static int bench_call(int m, const perf_spec_t *spec, bench_bufs_t *b, perf_hand_t *hand)
{
    cl_command_queue q;
    int pos = 0;
    char *dorg = (char *)b->d - b->lb;
    MPIX_Gpu_get_device(NULL, NULL, &q);
    switch (m) {
    case M_PACK_D2H:
        return MPI_Pack(dorg, 1, b->t, b->hp, b->psize, &pos, MPI_COMM_WORLD) ? -1 : 0;
    case M_PACK_D2P:
        return MPI_Pack(dorg, 1, b->t, b->pin.ptr, b->psize, &pos, MPI_COMM_WORLD) ? -1 : 0;
    case M_PACK_D2D:
        return MPI_Pack(dorg, 1, b->t, b->dp, b->psize, &pos, MPI_COMM_WORLD) ? -1 : 0;
    case M_UNPACK_H2D:
        return MPI_Unpack(b->ref, b->psize, &pos, dorg, 1, b->t, MPI_COMM_WORLD) ? -1 : 0;
    case M_UNPACK_P2D:
        return MPI_Unpack(b->pin.ptr, b->psize, &pos, dorg, 1, b->t, MPI_COMM_WORLD) ? -1 : 0;
    case M_HAND_D2D:
        return perf_hand_pack(hand, spec, &b->lay, b->d, b->dpmem);
    case M_HAND_D2H:
        if (perf_hand_pack(hand, spec, &b->lay, b->d, b->dpmem))
            return -1;
        return clEnqueueReadBuffer(q, b->dpmem, CL_TRUE, 0, b->psize, b->pin.ptr, 0, NULL, NULL)
                   ? -1
                   : 0;
    case M_COPY_D2H: {
        long n = perf_copy_read(spec, &b->lay, b->d, b->pin.ptr);
        return n < 0 ? -1 : (n == 0);
    }
    case M_STAGE_HOST:
        MPIX_Gpu_memcpy(b->hs, b->d, b->span);
        return PMPI_Pack(b->hs - b->lb, 1, b->t, b->hp, b->psize, &pos, MPI_COMM_WORLD) ? -1 : 0;
    case M_HOST_PACK:
        return PMPI_Pack(b->h - b->lb, 1, b->t, b->hp, b->psize, &pos, MPI_COMM_WORLD) ? -1 : 0;
    case M_READ_D2H:
        return clEnqueueReadBuffer(q, b->dpmem, CL_TRUE, 0, b->psize, b->pin.ptr, 0, NULL, NULL)
                   ? -1
                   : 0;
    default: /* M_FLOOR_D2H */
        if (perf_hand_empty(hand))
            return -1;
        return clEnqueueReadBuffer(q, b->dpmem, CL_TRUE, 0, b->psize, b->pin.ptr, 0, NULL, NULL)
                   ? -1
                   : 0;
    }
}

/* Where method m leaves its packed bytes, to check against host MPI_Pack. */
static const void *bench_result(int m, bench_bufs_t *b)
{
    switch (m) {
    case M_PACK_D2H:
    case M_STAGE_HOST:
        return b->hp;
    case M_PACK_D2P:
    case M_HAND_D2H:
    case M_COPY_D2H:
        return b->pin.ptr;
    case M_PACK_D2D:
    case M_HAND_D2D:
        MPIX_Gpu_memcpy(b->hs, b->dp, b->psize);
        return b->hs;
    default:
        return NULL;
    }
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return v[n / 2];
}

/* The busy kernel's own run time (profiling: start to end on the device),
   once the event has completed; releases the event. */
static double busy_time(cl_event ev)
{
    cl_ulong t0 = 0, t1 = 0;
    clWaitForEvents(1, &ev);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL);
    clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL);
    clReleaseEvent(ev);
    return t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0;
}

/* Busy-kernel iterations for about `target` seconds alone, and that time. */
static unsigned contend_tune(perf_hand_t *hand, cl_command_queue q2, double target, double *alone)
{
    unsigned it = 1 << 10;
    cl_event ev;
    for (;;) {
        if (perf_hand_busy(hand, q2, it, &ev))
            return 0;
        double dt = busy_time(ev);
        if (dt >= target || it >= (1u << 30)) {
            double v[3];
            for (int r = 0; r < 3; r++) {
                if (perf_hand_busy(hand, q2, it, &ev))
                    return 0;
                v[r] = busy_time(ev);
            }
            *alone = median(v, 3);
            return it;
        }
        double f = dt > 1e-4 ? target / dt : 16;
        it = (unsigned)(it * (f > 16 ? 16 : f < 1.2 ? 1.2 : f));
    }
}

/* --contend: see the header. */
static int contend_size(const perf_spec_t *spec, bench_bufs_t *b, perf_hand_t *hand,
                        cl_command_queue q2, unsigned iters, double alone, int keyval, FILE *cf)
{
    static const struct {
        const char *name;
        int value;
    } meths[] = {{"kernel", MPIX_GPU_PACK_KERNEL},
                 {"copy", MPIX_GPU_PACK_COPY},
                 {"host", MPIX_GPU_PACK_HOST}};
    const int dirs[2] = {M_PACK_D2D, M_PACK_D2H};
    enum { REPS = 5 };
    int bad = 0;
    for (int mi = 0; mi < 3; mi++) {
        MPI_Type_set_attr(b->t, keyval, (void *)(intptr_t)meths[mi].value);
        for (int di = 0; di < 2; di++) {
            int m = dirs[di];
            double idle[REPS], busy[REPS], user[REPS];
            if (bench_call(m, spec, b, hand))
                return -1;
            const void *res = bench_result(m, b);
            if (res && memcmp(res, b->ref, (size_t)b->psize)) {
                fprintf(stderr, "mpigpu-packbench: %s.%s gives wrong bytes at size %d\n", names[m],
                        meths[mi].name, b->psize);
                bad = 1;
            }
            for (int r = 0; r < REPS; r++) {
                double t0 = perf_now();
                bench_call(m, spec, b, hand);
                idle[r] = perf_now() - t0;
            }
            for (int r = 0; r < REPS; r++) {
                double t0 = perf_now();
                cl_event ev;
                if (perf_hand_busy(hand, q2, iters, &ev))
                    return -1;
                /* Let the busy kernel take the compute units first. */
                while (perf_now() - t0 < 0.01 * alone)
                    ;
                double t1 = perf_now();
                bench_call(m, spec, b, hand);
                busy[r] = perf_now() - t1;
                user[r] = busy_time(ev);
            }
            double mi_ = median(idle, REPS), mb = median(busy, REPS), mu = median(user, REPS);
            printf("%-12d %-6s %-8s %12.1f %12.1f %10.1f %8.2f\n", b->psize, meths[mi].name,
                   names[m], mi_ * 1e6, mb * 1e6, mu * 1e3, mu / alone);
            if (cf)
                fprintf(cf, "%s,%d,%s.%s,%.3f,%.3f,%.3f,%.3f\n", spec->name, b->psize, names[m],
                        meths[mi].name, mi_ * 1e6, mb * 1e6, mu * 1e3, mu / alone);
        }
    }
    MPI_Type_delete_attr(b->t, keyval);
    fflush(stdout);
    return bad;
}

static int bench_setup(const perf_spec_t *spec, long want, bench_bufs_t *b)
{
    MPI_Aint tex;
    memset(b, 0, sizeof(*b));
    b->t = perf_type_create(spec, want, &b->lay);
    MPI_Pack_size(1, b->t, MPI_COMM_WORLD, &b->psize);
    MPI_Type_get_true_extent(b->t, &b->lb, &tex);
    b->span = (size_t)tex;
    b->h = malloc(b->span);
    b->hs = malloc(b->span > (size_t)b->psize ? b->span : (size_t)b->psize);
    b->hp = malloc((size_t)b->psize);
    b->ref = malloc((size_t)b->psize);
    if (!b->h || !b->hs || !b->hp || !b->ref)
        return -1;
    for (size_t i = 0; i < b->span; i++)
        b->h[i] = (char)(i * 7 + (i >> 12));
    int pos = 0, isdev;
    size_t off;
    PMPI_Pack(b->h - b->lb, 1, b->t, b->ref, b->psize, &pos, MPI_COMM_WORLD);
    if (MPIX_Gpu_malloc(perf_alloc_bytes(&b->lay, b->span), &b->d) ||
        MPIX_Gpu_malloc((size_t)b->psize, &b->dp) ||
        MPIX_Gpu_query(b->dp, &isdev, &b->dpmem, &off) || off != 0 ||
        perf_pinned_alloc((size_t)b->psize, &b->pin))
        return -1;
    MPIX_Gpu_memcpy(b->d, b->h, b->span);
    return 0;
}

static void bench_teardown(bench_bufs_t *b)
{
    perf_pinned_free(&b->pin);
    MPIX_Gpu_free(b->d);
    MPIX_Gpu_free(b->dp);
    free(b->h);
    free(b->hp);
    free(b->hs);
    free(b->ref);
    MPI_Type_free(&b->t);
}

int main(int argc, char **argv)
{
    perf_spec_t spec;
    long lo = 64, hi = 4 << 20, sizes[MAXSIZES];
    int iters = 0, on[NM], contend = 0, interleave = 0;
    int want_method = MPIX_GPU_PACK_AUTO, pack_keyval = MPI_KEYVAL_INVALID;
    const char *csv = NULL, *meth = "auto";
    perf_spec_parse("vect:64:8", &spec);
    for (int m = 0; m < NM; m++)
        on[m] = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--contend")) {
            contend = 1;
            continue;
        }
        if (!strcmp(a, "--interleave")) {
            interleave = 1;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "-D")) {
            if (perf_spec_parse(v, &spec))
                return 2;
        } else if (!strcmp(a, "-m")) {
            perf_parse_range(v, &lo, &hi);
        } else if (!strcmp(a, "-i")) {
            iters = atoi(v);
        } else if (!strcmp(a, "--csv")) {
            csv = v;
        } else if (!strcmp(a, "--method")) {
            if ((want_method = perf_method_value(v)) < 0) {
                fprintf(stderr, "--method must be auto, kernel, copy or host, not '%s'\n", v);
                return 2;
            }
            meth = v;
        } else if (!strcmp(a, "--methods")) {
            char tmp[256];
            snprintf(tmp, sizeof(tmp), "%s", v);
            if (parse_methods(tmp, on))
                return 2;
        } else {
            usage();
        }
    }
    if (lo < 1 || hi < lo)
        usage();
    MPI_Init(&argc, &argv);
    if (!MPIX_Query_opencl_support()) {
        fprintf(stderr, "mpigpu-packbench: no OpenCL device\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    cl_device_id dev;
    char devname[256] = "?";
    MPIX_Gpu_get_device(NULL, &dev, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(devname), devname, NULL);
    perf_hand_t *hand = perf_hand_create();
    FILE *cf = csv ? fopen(csv, "w") : NULL;
    if (!hand || (csv && !cf)) {
        fprintf(stderr, "mpigpu-packbench: %s\n", hand ? csv : "hand kernels failed");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    char setting[64];
    perf_used_init();
    perf_setting("MPIGPU_PACK", setting, sizeof(setting));
    if (want_method != MPIX_GPU_PACK_AUTO && MPIX_Gpu_pack_keyval(&pack_keyval)) {
        fprintf(stderr, "mpigpu-packbench: no pack attribute\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (contend) {
        int ns = perf_sizes(&spec, lo, hi, sizes, MAXSIZES), bad = 0, keyval;
        cl_context ctx;
        cl_int err;
        double alone = 0;
        MPIX_Gpu_get_device(&ctx, NULL, NULL);
        cl_command_queue q2 = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
        unsigned it = err == CL_SUCCESS ? contend_tune(hand, q2, 0.2, &alone) : 0;
        if (!it || MPIX_Gpu_pack_keyval(&keyval)) {
            fprintf(stderr, "mpigpu-packbench: the busy kernel failed\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("# mpigpu-packbench --contend -D %s  device: %s\n", spec.name, devname);
        printf("# busy kernel on a second queue: %u iterations, %.1f ms alone\n", it, alone * 1e3);
        printf("# %-10s %-6s %-8s %12s %12s %10s %8s\n", "size", "method", "pack", "idle_us",
               "busy_us", "user_ms", "slowdown");
        if (cf)
            fprintf(cf, "type,size,method,idle_us,busy_us,user_ms,slowdown\n");
        for (int si = 0; si < ns && !bad; si++) {
            bench_bufs_t b;
            if (bench_setup(&spec, sizes[si], &b)) {
                fprintf(stderr, "mpigpu-packbench: out of memory at size %ld\n", sizes[si]);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            bad = contend_size(&spec, &b, hand, q2, it, alone, keyval, cf);
            bench_teardown(&b);
        }
        clReleaseCommandQueue(q2);
        if (cf)
            fclose(cf);
        perf_hand_free(hand);
        perf_used_finalize();
        MPI_Finalize();
        return bad != 0;
    }
    printf("# mpigpu-packbench -D %s  method: %s (MPIGPU_PACK=%s)  device: %s\n", spec.name, meth,
           setting, devname);
    printf("# each method: median us, GB/s of packed bytes ('-': not applicable); used: the method "
           "each library row ran (MPI_T)\n# %-10s",
           "size");
    int nlib = 0;
    for (int m = 0; m < NM; m++)
        if (on[m]) {
            printf(" %17s", names[m]);
            nlib += m <= M_UNPACK_P2D;
        }
    printf(nlib ? "  used\n" : "\n");
    if (cf)
        fprintf(cf, "type,size,method,usec,gbps\n");
    int ns = perf_sizes(&spec, lo, hi, sizes, MAXSIZES), bad = 0;
    double t_start = perf_now();
    for (int si = 0; si < ns; si++) {
        bench_bufs_t b;
        if (bench_setup(&spec, sizes[si], &b)) {
            fprintf(stderr, "mpigpu-packbench: out of memory at size %ld\n", sizes[si]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (want_method != MPIX_GPU_PACK_AUTO)
            MPI_Type_set_attr(b.t, pack_keyval, (void *)(intptr_t)want_method);
        char used[NM][32];
        int n = iters > 0 ? iters : (b.psize < (1 << 20) ? 50 : (b.psize < (16 << 20) ? 10 : 4));
        n = n > MAXIT ? MAXIT : n;
        double med[NM], tt[NM][MAXIT];
        int nm[NM];
        for (int m = 0; m < NM; m++) {
            int st = 0;
            med[m] = -1;
            nm[m] = 0;
            if (!on[m])
                continue;
            /* The untimed first call also checks the result and caps the count
               of slow methods (block-by-block copies) to keep runs short. */
            if (m == M_UNPACK_P2D) /* the packed bytes, in pinned memory */
                memcpy(b.pin.ptr, b.ref, (size_t)b.psize);
            perf_used_t u0, u1;
            perf_used_read(&u0);
            double t0 = perf_now();
            st = bench_call(m, &spec, &b, hand);
            double first = perf_now() - t0;
            perf_used_read(&u1);
            perf_used_label(&u0, &u1, 0, used[m], sizeof(used[m]));
            const void *res = st == 0 ? bench_result(m, &b) : NULL;
            if (res && memcmp(res, b.ref, (size_t)b.psize)) {
                fprintf(stderr, "mpigpu-packbench: %s gives wrong bytes at size %d\n", names[m],
                        b.psize);
                bad = 1;
            }
            if (st)
                continue;
            nm[m] = first > 1.0 ? 1 : (first > 0.1 && n > 3 ? 3 : n);
            for (int k = 0; !interleave && k < nm[m]; k++) {
                t0 = perf_now();
                bench_call(m, &spec, &b, hand);
                tt[m][k] = perf_now() - t0;
            }
        }
        /* --interleave: round k calls every method once, so that a drift of
           the clocks during the run weighs on all methods alike. */
        for (int k = 0; interleave && k < n; k++)
            for (int m = 0; m < NM; m++) {
                if (k >= nm[m])
                    continue;
                double t0 = perf_now();
                bench_call(m, &spec, &b, hand);
                tt[m][k] = perf_now() - t0;
            }
        for (int m = 0; m < NM; m++)
            if (nm[m]) {
                qsort(tt[m], (size_t)nm[m], sizeof(double), cmp_double);
                med[m] = tt[m][nm[m] / 2];
            }
        printf("%-12d", b.psize);
        for (int m = 0; m < NM; m++) {
            if (!on[m])
                continue;
            if (med[m] < 0) {
                printf(" %17s", "-");
                continue;
            }
            double gbps = b.psize / med[m] / 1e9;
            printf(" %9.2f %7.3f", med[m] * 1e6, gbps);
            if (cf) {
                if (spec.kind == PERF_FACE)
                    fprintf(cf, "face:%ld:%s", sizes[si], spec.plane);
                else
                    fprintf(cf, "%s", spec.name);
                /* Library rows under a forced method: "pack_d2h.kernel". */
                int lib = m <= M_UNPACK_P2D && want_method != MPIX_GPU_PACK_AUTO;
                fprintf(cf, ",%d,%s%s%s,%.3f,%.4f\n", b.psize, names[m], lib ? "." : "",
                        lib ? meth : "", med[m] * 1e6, gbps);
            }
        }
        for (int m = 0, k = 0; m <= M_UNPACK_P2D; m++)
            if (on[m])
                printf("%s%s", k++ ? "," : "  ", nm[m] ? used[m] : "-");
        printf("\n");
        fflush(stdout);
        bench_teardown(&b);
        double el = perf_now() - t_start;
        if (el > 2.0)
            fprintf(stderr, "mpigpu-packbench: %s: %d/%d sizes done, %.0f s\n", spec.name, si + 1,
                    ns, el);
    }
    if (cf)
        fclose(cf);
    perf_hand_free(hand);
    perf_used_finalize();
    MPI_Finalize();
    return bad;
}
