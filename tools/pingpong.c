/*
 * mpigpu-pingpong: datatype ping-pong latency on 2 ranks, in the layout of the
 * OSU micro-benchmarks (osu_latency): '# ' header lines, then one
 * "size latency(us)" row per size, size in packed bytes, latency = half a
 * round trip averaged over the timed iterations.
 *
 *   mpiexec -n 2 mpigpu-pingpong [-D TYPE] [-m MIN:MAX] [-i ITERS] [-x SKIP]
 *        [-W WINDOW] [-d SIDE[:SIDE]] [--method auto|kernel|copy|host] [--baseline
 * none|rect|floor|all]
 *        [--csv FILE]
 *   TYPE: cont | vect:STRIDE:BLOCKLEN | subarray4d | indexed:BLOCKLEN | struct[:strided]
 *   SIDE: device | host.  -d device:host (also "device,host" or OSU's two words
 *        "device host") puts rank 0's buffer on the device and rank 1's in host
 *        memory; one word sets both.  Default device:device.
 *
 * --baseline rect adds a column: the same exchange done the way a user does it
 * without mpigpu.  A device side packs with clEnqueueReadBufferRect (or one
 * clEnqueueReadBuffer per block for indexed and struct) into pinned host memory
 * and sends the packed bytes as MPI_PACKED; the receiver receives them into
 * pinned memory and scatters them with clEnqueueWriteBufferRect.  A host side
 * sends and receives the datatype directly.
 *
 * --baseline floor adds another: the rect exchange plus one empty kernel on the
 * same queue before each read and after each write, what any kernel-based pack
 * pays per message at the least (on a GPU that two ranks share, each message
 * then runs kernels in both processes).  --baseline all adds both columns.
 *
 * -W WINDOW adds two columns in the manner of osu_bw: rank 0 posts WINDOW
 * nonblocking sends of the message, rank 1 as many receives, then one
 * zero-byte reply; GB/s of packed bytes with a window of 1 and of WINDOW.
 * The ratio shows how much outstanding operations overlap their packing,
 * transfer and unpacking.  (The receives of one window share one buffer, as
 * in osu_bw, so only the timing means anything there.)
 *
 * Before timing, each size and mode is checked once in both directions: a
 * checksum of the packed bytes received must equal the sender's.
 *
 * The last two columns say what the library did on rank 0 and on rank 1 for
 * the mpigpu column (its check and timed exchanges), read through MPI_T from
 * the library's performance variables, not from the settings: the pack
 * methods that ran ("kernel", "copy", "host", joined by '+'; "-" for none),
 * then '/' and the point-to-point protocols that completed ("plain",
 * "chunked", "lane", "rest"); "-" alone where the library moved nothing (a
 * host buffer that MPI served).  The header's method is the MPIGPU_PACK the
 * library read (its MPI_T control variable).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_common.h"

#define MAXSIZES 64

enum { MODE_MPIGPU, MODE_RECT, MODE_FLOOR, NMODES };
static const char *const mode_name[NMODES] = {"mpigpu", "rect", "floor"};

/* One rank's side of one size. */
typedef struct pp_side {
    int device; /* buffer in device memory */
    MPI_Datatype t;
    perf_layout_t lay;
    int psize;
    MPI_Aint lb;
    size_t span;
    char *buf; /* device address or host memory, at the true lower bound */
    perf_pinned_t pin;
    char *h; /* host scratch of span bytes */
} pp_side_t;

static const perf_spec_t *g_spec;
static perf_hand_t *g_hand; /* the empty kernel of MODE_FLOOR */

static void usage(void)
{
    fprintf(stderr, "usage: mpiexec -n 2 mpigpu-pingpong [-D cont|vect:STRIDE:BLOCKLEN|"
                    "subarray4d|indexed:BLOCKLEN|struct[:strided]] [-m MIN:MAX] [-i ITERS] "
                    "[-x SKIP] [-W WINDOW] [-d device|host[:device|host]] "
                    "[--method auto|kernel|copy|host] [--baseline none|rect|floor|all] "
                    "[--csv FILE]\n");
    exit(2);
}

static int parse_side(const char *s, int *dev)
{
    if (!strcmp(s, "device"))
        *dev = 1;
    else if (!strcmp(s, "host"))
        *dev = 0;
    else
        return -1;
    return 0;
}

static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static void pp_send(const pp_side_t *s, int mode, int peer)
{
    if (mode != MODE_MPIGPU && s->device) {
        if (mode == MODE_FLOOR)
            perf_hand_empty(g_hand); /* in order before the read, which waits for it */
        perf_copy_read(g_spec, &s->lay, s->buf, s->pin.ptr);
        MPI_Send(s->pin.ptr, s->psize, MPI_PACKED, peer, 1, MPI_COMM_WORLD);
    } else {
        MPI_Send(s->buf - s->lb, 1, s->t, peer, 1, MPI_COMM_WORLD);
    }
}

static void pp_recv(pp_side_t *s, int mode, int peer)
{
    if (mode != MODE_MPIGPU && s->device) {
        MPI_Recv(s->pin.ptr, s->psize, MPI_PACKED, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        perf_copy_write(g_spec, &s->lay, s->buf, s->pin.ptr);
        if (mode == MODE_FLOOR) {
            cl_command_queue q;
            MPIX_Gpu_get_device(NULL, NULL, &q);
            perf_hand_empty(g_hand);
            clFinish(q);
        }
    } else {
        MPI_Recv(s->buf - s->lb, 1, s->t, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* Fill (pattern != 0) or clear the buffer. */
static void pp_fill(pp_side_t *s, int pattern)
{
    for (size_t i = 0; i < s->span; i++)
        s->h[i] = pattern ? (char)(i * 13 + (i >> 10) + 1) : 0;
    if (s->device)
        MPIX_Gpu_memcpy(s->buf, s->h, s->span);
    else
        memcpy(s->buf, s->h, s->span);
}

/* Checksum of the packed bytes the buffer holds. */
static uint64_t pp_checksum(pp_side_t *s)
{
    int pos = 0;
    char *packed = malloc((size_t)s->psize);
    if (s->device)
        MPIX_Gpu_memcpy(s->h, s->buf, s->span);
    else
        memcpy(s->h, s->buf, s->span);
    PMPI_Pack(s->h - s->lb, 1, s->t, packed, s->psize, &pos, MPI_COMM_WORLD);
    uint64_t c = fnv1a((unsigned char *)packed, (size_t)s->psize);
    free(packed);
    return c;
}

/* One message each way with fresh data; returns 0 when both arrive intact. */
static int pp_check(pp_side_t *s, int rank, int mode)
{
    uint64_t sent = 0, got = 0;
    int ok = 1;
    for (int dir = 0; dir < 2; dir++) {
        int from = dir, to = 1 - dir;
        pp_fill(s, rank == from);
        if (rank == from) {
            sent = pp_checksum(s);
            pp_send(s, mode, to);
            MPI_Send(&sent, 1, MPI_UINT64_T, to, 2, MPI_COMM_WORLD);
        } else {
            pp_recv(s, mode, from);
            MPI_Recv(&sent, 1, MPI_UINT64_T, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            got = pp_checksum(s);
            ok &= got == sent;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return ok ? 0 : -1;
}

/* osu_bw: seconds per message with `window` messages outstanding (rank 0). */
static double pp_window(pp_side_t *s, int rank, int window, int iters, int skip)
{
    MPI_Request *rq = malloc(sizeof(*rq) * (size_t)window);
    MPI_Status *st = malloc(sizeof(*st) * (size_t)window);
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip)
            t0 = perf_now();
        for (int w = 0; w < window; w++) {
            if (rank == 0)
                MPI_Isend(s->buf - s->lb, 1, s->t, 1, 2, MPI_COMM_WORLD, &rq[w]);
            else
                MPI_Irecv(s->buf - s->lb, 1, s->t, 0, 2, MPI_COMM_WORLD, &rq[w]);
        }
        MPI_Waitall(window, rq, st);
        if (rank == 0)
            MPI_Recv(NULL, 0, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        else
            MPI_Send(NULL, 0, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    }
    free(st);
    free(rq);
    return (perf_now() - t0) / ((double)iters * window);
}

/* Half the average round trip, in seconds (meaningful on rank 0). */
static double pp_time(pp_side_t *s, int rank, int mode, int iters, int skip)
{
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip)
            t0 = perf_now();
        if (rank == 0) {
            pp_send(s, mode, 1);
            pp_recv(s, mode, 1);
        } else {
            pp_recv(s, mode, 0);
            pp_send(s, mode, 0);
        }
    }
    return (perf_now() - t0) / (2.0 * iters);
}

int main(int argc, char **argv)
{
    perf_spec_t spec;
    long lo = 64, hi = 4 << 20, sizes[MAXSIZES];
    int iters = 0, skip = -1, side[2] = {1, 1}, baseline = 0, rank, np, window = 0;
    const char *csv = NULL;
    perf_spec_parse("vect:64:8", &spec);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "-D")) {
            if (perf_spec_parse(v, &spec))
                return 2;
            if (spec.kind == PERF_FACE) {
                fprintf(stderr, "mpigpu-pingpong: faces are for mpigpu-packbench\n");
                return 2;
            }
        } else if (!strcmp(a, "-m")) {
            perf_parse_range(v, &lo, &hi);
        } else if (!strcmp(a, "-i")) {
            iters = atoi(v);
        } else if (!strcmp(a, "-x")) {
            skip = atoi(v);
        } else if (!strcmp(a, "-W")) {
            window = atoi(v);
            if (window < 2 || window > 1024)
                usage();
        } else if (!strcmp(a, "-d")) {
            char w[2][16] = {"", ""};
            int n = sscanf(v, "%15[a-z]%*[:,]%15[a-z]", w[0], w[1]);
            if (n == 1 && i + 1 < argc && !parse_side(argv[i + 1], &side[1]))
                snprintf(w[1], sizeof(w[1]), "%s", argv[++i]); /* OSU: -d device host */
            else if (n == 1)
                snprintf(w[1], sizeof(w[1]), "%s", w[0]);
            if (n < 1 || parse_side(w[0], &side[0]) || parse_side(w[1], &side[1]))
                usage();
        } else if (!strcmp(a, "--method")) {
            if (perf_method_set(v))
                return 2;
        } else if (!strcmp(a, "--baseline")) {
            if (!strcmp(v, "none"))
                baseline = 0;
            else if (!strcmp(v, "rect"))
                baseline = 1 << MODE_RECT;
            else if (!strcmp(v, "floor"))
                baseline = 1 << MODE_FLOOR;
            else if (!strcmp(v, "all"))
                baseline = 1 << MODE_RECT | 1 << MODE_FLOOR;
            else
                usage();
        } else if (!strcmp(a, "--csv")) {
            csv = v;
        } else {
            usage();
        }
    }
    if (lo < 1 || hi < lo)
        usage();
    g_spec = &spec;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    perf_used_init(); /* without MPI_T the last columns read "?" */
    if (np != 2) {
        if (rank == 0)
            fprintf(stderr, "mpigpu-pingpong: run on 2 ranks (mpiexec -n 2)\n");
        MPI_Finalize();
        return 2;
    }
    if ((side[0] || side[1]) && !MPIX_Query_opencl_support()) {
        fprintf(stderr, "mpigpu-pingpong: no OpenCL device; use -d host\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (baseline & 1 << MODE_FLOOR && side[rank] && !(g_hand = perf_hand_create())) {
        fprintf(stderr, "mpigpu-pingpong: cannot build the hand kernels\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    FILE *cf = NULL;
    if (rank == 0) {
        cl_device_id dev;
        char devname[256] = "?", meth[64];
        perf_setting("MPIGPU_PACK", meth, sizeof(meth));
        if (MPIX_Query_opencl_support()) {
            MPIX_Gpu_get_device(NULL, &dev, NULL);
            clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(devname), devname, NULL);
        }
        printf("# mpigpu-pingpong (OSU latency layout)  -D %s  -d %s:%s  method %s\n", spec.name,
               side[0] ? "device" : "host", side[1] ? "device" : "host", meth);
        printf("# device: %s\n", devname);
        printf("# rank0, rank1: pack method/protocol each rank ran for the mpigpu column "
               "(MPI_T counters; '-': none)\n");
        printf("# Size  Latency(us)%s%s", baseline & 1 << MODE_RECT ? "     rect(us)" : "",
               baseline & 1 << MODE_FLOOR ? "    floor(us)" : "");
        if (window)
            printf("   W1(GB/s)  W%-4d(GB/s)", window);
        printf("  %-16s %s\n", "rank0", "rank1");
        if (csv && !(cf = fopen(csv, "w"))) {
            perror(csv);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (cf)
            fprintf(cf, "type,size,sides,method,latency_us,gbps\n");
    }
    int ns = perf_sizes(&spec, lo, hi, sizes, MAXSIZES), bad = 0;
    double t_start = perf_now();
    for (int si = 0; si < ns; si++) {
        pp_side_t s;
        MPI_Aint tex;
        memset(&s, 0, sizeof(s));
        s.device = side[rank];
        s.t = perf_type_create(&spec, sizes[si], &s.lay);
        MPI_Pack_size(1, s.t, MPI_COMM_WORLD, &s.psize);
        MPI_Type_get_true_extent(s.t, &s.lb, &tex);
        s.span = (size_t)tex;
        s.h = malloc(s.span);
        if (s.device) {
            if (MPIX_Gpu_malloc(perf_alloc_bytes(&s.lay, s.span), (void **)&s.buf) ||
                perf_pinned_alloc((size_t)s.psize, &s.pin))
                MPI_Abort(MPI_COMM_WORLD, 1);
        } else {
            s.buf = malloc(s.span);
        }
        int n = iters > 0 ? iters : (s.psize <= 65536 ? 200 : 20);
        int sk = skip >= 0 ? skip : (s.psize <= 65536 ? 20 : 2);
        double lat[NMODES] = {-1, -1, -1};
        int modes = 1 << MODE_MPIGPU | (side[0] || side[1] ? baseline : 0);
        perf_used_t u0 = {{0}}, u1 = {{0}};
        char used[2][64];
        for (int mode = 0; mode < NMODES; mode++) {
            if (!(modes & 1 << mode))
                continue;
            if (mode == MODE_MPIGPU)
                perf_used_read(&u0);
            if (pp_check(&s, rank, mode)) {
                if (rank == 0)
                    fprintf(stderr, "mpigpu-pingpong: %s: checksum mismatch at size %d\n",
                            mode_name[mode], s.psize);
                bad = 1;
                continue;
            }
            lat[mode] = pp_time(&s, rank, mode, n, sk);
            if (mode == MODE_MPIGPU)
                perf_used_read(&u1);
        }
        perf_used_label(&u0, &u1, 1, used[rank], sizeof(used[0]));
        /* Rank 1's label to rank 0, which prints both. */
        if (rank == 1)
            MPI_Send(used[1], sizeof(used[1]), MPI_CHAR, 0, 4, MPI_COMM_WORLD);
        else
            MPI_Recv(used[1], sizeof(used[1]), MPI_CHAR, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double bw1 = 0, bww = 0;
        if (window) {
            bw1 = s.psize / pp_window(&s, rank, 1, n, sk) / 1e9;
            bww = s.psize / pp_window(&s, rank, window, n, sk) / 1e9;
        }
        if (rank == 0) {
            printf("%-10d%13.2f", s.psize, lat[0] * 1e6);
            for (int mode = MODE_RECT; mode < NMODES; mode++) {
                if (baseline & 1 << mode && lat[mode] >= 0)
                    printf("%13.2f", lat[mode] * 1e6);
                else if (baseline & 1 << mode)
                    printf("%13s", "-");
            }
            if (window)
                printf("%11.3f%13.3f", bw1, bww);
            printf("  %-16s %s\n", used[0], used[1]);
            fflush(stdout);
            for (int mode = 0; cf && mode < NMODES; mode++)
                if (lat[mode] >= 0)
                    fprintf(cf, "%s,%d,%s:%s,%s,%.3f,%.4f\n", spec.name, s.psize,
                            side[0] ? "device" : "host", side[1] ? "device" : "host",
                            mode_name[mode], lat[mode] * 1e6, s.psize / lat[mode] / 1e9);
            double el = perf_now() - t_start;
            if (el > 2.0)
                fprintf(stderr, "mpigpu-pingpong: %d/%d sizes done, %.0f s\n", si + 1, ns, el);
        }
        if (s.device) {
            perf_pinned_free(&s.pin);
            MPIX_Gpu_free(s.buf);
        } else {
            free(s.buf);
        }
        free(s.h);
        MPI_Type_free(&s.t);
    }
    if (cf)
        fclose(cf);
    if (g_hand)
        perf_hand_free(g_hand);
    perf_used_finalize();
    MPI_Finalize();
    return bad;
}
