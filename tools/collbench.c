/*
 * mpigpu-collbench: OSU-style collective latency on device and host buffers.
 *
 *   mpiexec -n N mpigpu-collbench [-c COLL[,COLL...]] [-D TYPE] [-m MIN:MAX]
 *        [-i ITERS] [-x SKIP] [-d device|host] [--side MIN:MAX] [--csv FILE]
 *        [--reduce auto|device|stage|both]
 *
 * For each collective and size: the time of the call on the chosen buffers
 * (the slowest rank's average), the same call on host buffers, and the
 * staging floor: the host call plus one device-to-host and one host-to-device
 * copy of each process's data (MPIX_Gpu_memcpy), which is what a user who
 * stages by hand pays.  Neighbor_alltoallw exchanges the 6 faces of a 3D
 * halo (a periodic Cartesian grid of the processes, a cube of doubles of
 * side --side per process), against 6 MPI_Isend/MPI_Irecv pairs of the same
 * faces on the same buffers.  --reduce sets the library's MPIGPU_COLL_REDUCE
 * through MPI_T for the Allreduce rows (device: combine on the device,
 * stage: through host memory around MPI's collective); both: two rows per
 * size, allreduce/device and allreduce/stage, measured in the same run.
 * Rows of the all-to-all calls on device buffers end with how the library
 * packed their sides of two or more blocks (MPI_T mpigpu_coll_packed_fused
 * and _blocks, summed over the processes): "packed: fused", "blocks" or
 * both (MPIGPU_COLL_PACKED); nothing where no such side was packed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_common.h"

enum { C_BCAST, C_ALLREDUCE, C_ALLTOALL, C_ALLTOALLV, C_ALLTOALLW, C_NEIGHBOR, C_N };
static const char *const cname[C_N] = {"bcast",     "allreduce", "alltoall",
                                       "alltoallv", "alltoallw", "neighbor_alltoallw"};

static int rank, np, iters = 0, skip = -1;
/* --reduce: MPIGPU_COLL_REDUCE's handle, and the paths to time */
static MPI_T_cvar_handle red_cvar = MPI_T_CVAR_HANDLE_NULL;
static const char *red_paths[2];
static int red_npaths;

/* MPI_T mpigpu_coll_packed_fused and _blocks, read around the device runs */
static MPI_T_pvar_session pk_session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle pk_handle[2];
static int pk_ok;

static void packed_init(void)
{
    static const char *const names[2] = {"mpigpu_coll_packed_fused", "mpigpu_coll_packed_blocks"};
    int provided, idx, cnt;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return;
    if (MPI_T_pvar_session_create(&pk_session) != MPI_SUCCESS)
        return;
    for (int i = 0; i < 2; i++)
        if (MPI_T_pvar_get_index(names[i], MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS ||
            MPI_T_pvar_handle_alloc(pk_session, idx, NULL, &pk_handle[i], &cnt) != MPI_SUCCESS)
            return;
    pk_ok = 1;
}

static void packed_read(unsigned long long v[2])
{
    for (int i = 0; i < 2; i++)
        if (!pk_ok || MPI_T_pvar_read(pk_session, pk_handle[i], &v[i]) != MPI_SUCCESS)
            v[i] = 0;
}

/* "  packed: fused" (blocks, fused+blocks) for the packs every process made
   since v0, or "" (a collective: every process calls it). */
static void packed_label(const unsigned long long v0[2], char *buf, size_t len)
{
    unsigned long long v1[2], d[2], all[2];
    packed_read(v1);
    d[0] = v1[0] - v0[0];
    d[1] = v1[1] - v0[1];
    MPI_Allreduce(d, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    snprintf(buf, len, "%s%s%s%s", all[0] || all[1] ? "  packed: " : "", all[0] ? "fused" : "",
             all[0] && all[1] ? "+" : "", all[1] ? "blocks" : "");
}

static void usage(void)
{
    if (rank == 0)
        fprintf(
            stderr,
            "usage: mpiexec -n N mpigpu-collbench [-c bcast,allreduce,alltoall,alltoallv,"
            "alltoallw,neighbor_alltoallw|all] [-D cont|vect:STRIDE:BLOCKLEN|subarray4d|"
            "indexed:BLOCKLEN|struct[:strided]] [-m MIN:MAX] [-i ITERS] [-x SKIP] "
            "[-d device|host] [--side MIN:MAX] [--csv FILE] [--reduce auto|device|stage|both]\n");
    exit(2);
}

static char *alloc(size_t n, int dev)
{
    void *p = NULL;
    if (dev)
        MPIX_Gpu_malloc(n ? n : 1, &p);
    else
        p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "mpigpu-collbench: out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static void release(void *p, int dev)
{
    if (dev)
        MPIX_Gpu_free(p);
    else
        free(p);
}

/* One call of collective c on sb/rb: count instances of t per process
   (per block of the all-to-all forms). */
typedef struct args {
    int c, count;
    MPI_Datatype t;
    char *sb, *rb;
    int *counts, *displs;
    MPI_Datatype *types;
} args_t;

static void run_once(const args_t *a)
{
    switch (a->c) {
    case C_BCAST:
        MPI_Bcast(a->sb, a->count, a->t, 0, MPI_COMM_WORLD);
        break;
    case C_ALLREDUCE:
        MPI_Allreduce(a->sb, a->rb, a->count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case C_ALLTOALL:
        MPI_Alltoall(a->sb, a->count, a->t, a->rb, a->count, a->t, MPI_COMM_WORLD);
        break;
    case C_ALLTOALLV:
        MPI_Alltoallv(a->sb, a->counts, a->displs, a->t, a->rb, a->counts, a->displs, a->t,
                      MPI_COMM_WORLD);
        break;
    default: {
        int *bd = a->displs + np; /* byte displacements */
        MPI_Alltoallw(a->sb, a->counts, bd, a->types, a->rb, a->counts, bd, a->types,
                      MPI_COMM_WORLD);
    }
    }
}

/* Seconds per call, the slowest rank's average. */
static double timed(void (*fn)(const void *), const void *arg)
{
    for (int i = 0; i < skip; i++)
        fn(arg);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = perf_now();
    for (int i = 0; i < iters; i++)
        fn(arg);
    double t = (perf_now() - t0) / iters, worst = 0;
    MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst;
}

static void run_fn(const void *a)
{
    run_once(a);
}

/* The staging copies of n bytes each way: a device buffer and a host one. */
typedef struct copies {
    char *d, *h;
    size_t n;
} copies_t;

static void copy_fn(const void *arg)
{
    const copies_t *c = arg;
    MPIX_Gpu_memcpy(c->h, c->d, c->n);
    MPIX_Gpu_memcpy(c->d, c->h, c->n);
}

static FILE *cf;

static void row(const char *coll, const char *tname, long size, double tdev, double thost,
                double tcopy, int dev, const char *note)
{
    double floor_ = thost + tcopy;
    if (rank == 0) {
        printf("%-20s %10ld %12.2f %12.2f %12.2f %7.2f%s\n", coll, size, tdev * 1e6, thost * 1e6,
               floor_ * 1e6, dev ? tdev / floor_ : tdev / thost, note);
        if (cf)
            fprintf(cf, "%s,%s,%ld,%s,%.3f,%.3f,%.3f,%.4f\n", coll, tname, size,
                    dev ? "device" : "host", tdev * 1e6, thost * 1e6, floor_ * 1e6,
                    dev ? tdev / floor_ : tdev / thost);
        fflush(stdout);
    }
}

/* Bytes of count instances of t at an origin 0 (true extent from 0). */
static size_t span_of(MPI_Datatype t, long count)
{
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    return (size_t)((count - 1) * ext + tlb + text);
}

static void bench_sizes(int c, const perf_spec_t *spec, long lo, long hi, int dev)
{
    long sizes[64];
    int nsz = perf_sizes(spec, lo, hi, sizes, 64);
    int g = c == C_BCAST || c == C_ALLREDUCE ? 1 : np;
    for (int k = 0; k < nsz; k++) {
        perf_layout_t lay;
        MPI_Datatype t = c == C_ALLREDUCE ? MPI_DOUBLE : perf_type_create(spec, sizes[k], &lay);
        int tsize = 0;
        MPI_Type_size(t, &tsize);
        long count = c == C_ALLREDUCE ? (sizes[k] + 7) / 8 : 1;
        size_t one = span_of(t, count), n = one * (size_t)g;
        args_t a = {.c = c, .count = (int)count, .t = t};
        a.counts = malloc(sizeof(int) * 2 * (size_t)np);
        a.displs = malloc(sizeof(int) * 2 * (size_t)np);
        a.types = malloc(sizeof(MPI_Datatype) * (size_t)np);
        MPI_Aint lb, ext;
        MPI_Type_get_extent(t, &lb, &ext);
        for (int i = 0; i < np; i++) {
            a.counts[i] = (int)count;
            a.displs[i] = (int)(i * ((long)one + ext - 1) / ext); /* in extents */
            a.displs[np + i] = (int)(a.displs[i] * ext);          /* in bytes */
            a.types[i] = t;
        }
        n = (size_t)(a.displs[np - 1] * ext) + one;
        if (c == C_BCAST || c == C_ALLREDUCE)
            n = one;
        long packed = (long)tsize * count * (c == C_BCAST || c == C_ALLREDUCE ? 1 : np);
        char *sd = alloc(n, dev), *rd = alloc(n, dev), *sh = alloc(n, 0), *rh = alloc(n, 0);
        a.sb = sd;
        a.rb = rd;
        double tpath[2] = {0, 0};
        int npath = c == C_ALLREDUCE && red_npaths ? red_npaths : 1;
        unsigned long long pk0[2];
        char note[64] = "";
        packed_read(pk0);
        for (int q = 0; q < npath; q++) {
            if (c == C_ALLREDUCE && red_npaths)
                MPI_T_cvar_write(red_cvar, red_paths[q]);
            tpath[q] = timed(run_fn, &a);
        }
        packed_label(pk0, note, sizeof note);
        a.sb = sh;
        a.rb = rh;
        double thost = timed(run_fn, &a);
        double tcopy = 0;
        if (dev) {
            /* what each process stages by hand: its input and its output */
            copies_t cp = {.d = sd, .h = sh, .n = (size_t)packed};
            if (cp.n > n)
                cp.n = n;
            tcopy = timed(copy_fn, &cp);
        }
        for (int q = 0; q < npath; q++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s%s", cname[c], npath > 1 ? "/" : "",
                     npath > 1 ? red_paths[q] : "");
            row(name, c == C_ALLREDUCE ? "double" : spec->name, packed, tpath[q], thost, tcopy, dev,
                note);
        }
        release(sd, dev);
        release(rd, dev);
        release(sh, 0);
        release(rh, 0);
        free(a.counts);
        free(a.displs);
        free(a.types);
        if (c != C_ALLREDUCE)
            MPI_Type_free(&t);
    }
}

/* ---- the 3D halo: Neighbor_alltoallw against 6 Isend/Irecv pairs ---- */

typedef struct halo {
    MPI_Comm cart;
    char *buf;
    MPI_Datatype send[6], recv[6];
    int counts[6];
    MPI_Aint displs[6];
    int nbr[6];
} halo_t;

static void halo_coll(const void *arg)
{
    const halo_t *h = arg;
    MPI_Neighbor_alltoallw(h->buf, h->counts, h->displs, h->send, h->buf, h->counts, h->displs,
                           h->recv, h->cart);
}

static void halo_p2p(const void *arg)
{
    const halo_t *h = arg;
    MPI_Request r[12];
    for (int f = 0; f < 6; f++) {
        MPI_Irecv(h->buf, 1, h->recv[f], h->nbr[f], f, h->cart, &r[f]);
        /* the face sent to neighbor f arrives there as its face f ^ 1 */
        MPI_Isend(h->buf, 1, h->send[f], h->nbr[f], f ^ 1, h->cart, &r[6 + f]);
    }
    MPI_Status st[12];
    MPI_Waitall(12, r, st);
}

static void bench_halo(long lo, long hi, int dev)
{
    int dims[3] = {0, 0, 0}, per[3] = {1, 1, 1};
    MPI_Dims_create(np, 3, dims);
    for (long side = lo; side <= hi; side *= 2) {
        halo_t h;
        MPI_Cart_create(MPI_COMM_WORLD, 3, dims, per, 0, &h.cart);
        for (int d = 0; d < 3; d++)
            MPI_Cart_shift(h.cart, d, 1, &h.nbr[2 * d], &h.nbr[2 * d + 1]);
        int full = (int)side + 2, sizes[3] = {full, full, full};
        for (int f = 0; f < 6; f++) {
            int d = f / 2, sub[3] = {(int)side, (int)side, (int)side}, ss[3] = {1, 1, 1},
                rs[3] = {1, 1, 1};
            sub[d] = 1;
            /* the Cartesian order is -1 then +1 along each dimension: send
               the inner plane next to that side, receive into its ghost plane */
            ss[d] = f % 2 ? (int)side : 1;
            rs[d] = f % 2 ? (int)side + 1 : 0;
            MPI_Type_create_subarray(3, sizes, sub, ss, MPI_ORDER_C, MPI_DOUBLE, &h.send[f]);
            MPI_Type_create_subarray(3, sizes, sub, rs, MPI_ORDER_C, MPI_DOUBLE, &h.recv[f]);
            MPI_Type_commit(&h.send[f]);
            MPI_Type_commit(&h.recv[f]);
            h.counts[f] = 1;
            h.displs[f] = 0;
        }
        size_t n = (size_t)full * full * full * sizeof(double);
        char *dbuf = alloc(n, dev), *hbuf = alloc(n, 0);
        h.buf = dbuf;
        unsigned long long pk0[2];
        char note[64] = "";
        packed_read(pk0);
        double tcoll = timed(halo_coll, &h);
        packed_label(pk0, note, sizeof note);
        double tp2p = timed(halo_p2p, &h);
        h.buf = hbuf;
        double thost = timed(halo_coll, &h);
        long packed = 6 * side * side * (long)sizeof(double);
        if (rank == 0) {
            printf("%-20s %10ld %12.2f %12.2f %12.2f %7.2f   side %ld, 6 Isend/Irecv pairs in "
                   "the third column%s\n",
                   "neighbor_alltoallw", packed, tcoll * 1e6, thost * 1e6, tp2p * 1e6, tcoll / tp2p,
                   side, note);
            if (cf)
                fprintf(cf, "neighbor_alltoallw,face%ld,%ld,%s,%.3f,%.3f,%.3f,%.4f\n", side, packed,
                        dev ? "device" : "host", tcoll * 1e6, thost * 1e6, tp2p * 1e6,
                        tcoll / tp2p);
            fflush(stdout);
        }
        release(dbuf, dev);
        release(hbuf, 0);
        for (int f = 0; f < 6; f++) {
            MPI_Type_free(&h.send[f]);
            MPI_Type_free(&h.recv[f]);
        }
        MPI_Comm_free(&h.cart);
    }
}

int main(int argc, char **argv)
{
    perf_spec_t spec;
    long lo = 1024, hi = 1 << 20, slo = 16, shi = 32;
    int dev = 1, which = (1 << C_N) - 1;
    const char *csv = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    perf_spec_parse("cont", &spec);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "-c")) {
            which = 0;
            char buf[256];
            snprintf(buf, sizeof(buf), "%s", v);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                int k = 0;
                while (k < C_N && strcmp(tok, cname[k]))
                    k++;
                if (!strcmp(tok, "all"))
                    which = (1 << C_N) - 1;
                else if (k == C_N)
                    usage();
                else
                    which |= 1 << k;
            }
        } else if (!strcmp(a, "-D")) {
            if (perf_spec_parse(v, &spec))
                return 2;
            if (spec.kind == PERF_FACE)
                usage();
        } else if (!strcmp(a, "-m")) {
            perf_parse_range(v, &lo, &hi);
        } else if (!strcmp(a, "--side")) {
            perf_parse_range(v, &slo, &shi);
        } else if (!strcmp(a, "-i")) {
            iters = atoi(v);
        } else if (!strcmp(a, "-x")) {
            skip = atoi(v);
        } else if (!strcmp(a, "-d")) {
            if (!strcmp(v, "device"))
                dev = 1;
            else if (!strcmp(v, "host"))
                dev = 0;
            else
                usage();
        } else if (!strcmp(a, "--csv")) {
            csv = v;
        } else if (!strcmp(a, "--reduce")) {
            if (!strcmp(v, "both")) {
                red_paths[0] = "device";
                red_paths[1] = "stage";
                red_npaths = 2;
            } else if (!strcmp(v, "auto") || !strcmp(v, "device") || !strcmp(v, "stage")) {
                red_paths[0] = v;
                red_npaths = 1;
            } else {
                usage();
            }
        } else {
            usage();
        }
    }
    if (lo < 1 || hi < lo || slo < 1 || shi < slo)
        usage();
    if (iters <= 0)
        iters = 20;
    if (skip < 0)
        skip = 2;
    if (red_npaths) {
        /* MPIGPU_COLL_REDUCE is writable through MPI_T (the same value on
           every process) */
        int provided, idx, cnt;
        MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
        if (MPI_T_cvar_get_index("MPIGPU_COLL_REDUCE", &idx) != MPI_SUCCESS ||
            MPI_T_cvar_handle_alloc(idx, NULL, &red_cvar, &cnt) != MPI_SUCCESS) {
            if (rank == 0)
                fprintf(stderr, "mpigpu-collbench: no MPI_T variable MPIGPU_COLL_REDUCE\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (dev && !MPIX_Query_opencl_support()) {
        if (rank == 0)
            fprintf(stderr, "mpigpu-collbench: no OpenCL device; use -d host\n");
        MPI_Finalize();
        return 2;
    }
    packed_init();
    if (rank == 0) {
        char devname[256] = "?";
        if (MPIX_Query_opencl_support()) {
            cl_device_id d;
            MPIX_Gpu_get_device(NULL, &d, NULL);
            clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof(devname), devname, NULL);
        }
        printf("# mpigpu-collbench  %d processes  -D %s  -d %s  device: %s\n", np, spec.name,
               dev ? "device" : "host", devname);
        printf("# size: packed bytes per process (allreduce: doubles); times in us, the slowest "
               "process's average over %d calls\n",
               iters);
        printf("# %-18s %10s %12s %12s %12s %7s\n", "collective", "size", dev ? "device" : "mpigpu",
               "host", dev ? "floor" : "-", "ratio");
        printf("# floor: host time + a device-to-host and a host-to-device copy of the data; "
               "ratio: device / floor\n");
        if (csv && !(cf = fopen(csv, "w"))) {
            perror(csv);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (cf)
            fprintf(cf, "collective,type,size,buffers,time_us,host_us,floor_us,ratio\n");
    }
    for (int c = 0; c < C_NEIGHBOR; c++)
        if (which & (1 << c))
            bench_sizes(c, &spec, lo, hi, dev);
    if (which & (1 << C_NEIGHBOR))
        bench_halo(slo, shi, dev);
    if (cf)
        fclose(cf);
    if (red_npaths) {
        MPI_T_cvar_handle_free(&red_cvar);
        MPI_T_finalize();
    }
    if (pk_session != MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_free(&pk_session);
    MPI_T_finalize();
    MPI_Finalize();
    return 0;
}
