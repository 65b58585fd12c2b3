/*
 * hostbench: the project's own OSU-style benchmark of host buffers (issue 31:
 * "host traffic pays nothing").  A plain MPI program: built with mpicc, not
 * linked with libmpigpu and without its header, so that running it as it is
 * and under LD_PRELOAD=libmpigpu.so compares plain MPI with MPI through the
 * library (test/perf/hostbench.sh does both, in alternate rounds).
 *
 *   hostbench lat        ping-pong between ranks 0 and 1: half a round trip (us)
 *   hostbench bw [-W N]  osu_bw: rank 0 sends a window of N MPI_Isend from one
 *                        buffer, rank 1 posts N MPI_Irecv into one buffer, both
 *                        MPI_Waitall, then a 4-byte ack; MB/s (10^6 B/s).
 *                        -R hidx: each receive as one instance of a two-block
 *                        hindexed type of bytes instead (its first 40 bytes
 *                        into a header of its own, the rest in place), the
 *                        layout that would keep a chunked message's header
 *                        out of the caller's buffer (doc/design.md, "Why
 *                        overlapped host receives do not go in place"); it
 *                        measures what MPI itself takes for such a receive
 *   hostbench allreduce  MPI_Allreduce of doubles, MPI_SUM, on every rank; the
 *                        average over ranks of each rank's mean time (us)
 *   hostbench isendrecv  ranks 0 and 1 exchange n bytes with MPI_Isendrecv +
 *                        MPI_Wait (the library serves host buffers itself
 *                        there, MPICH 4.0.2's being faulty): time per
 *                        exchange (us)
 *
 * Options: -m MIN:MAX sizes in bytes, powers of 2 (K and M suffixes; default
 * 1:4M, allreduce from 8, one double), -i N iterations and -x N warmup for
 * sizes up to 8 KiB, -I N and -X N above (defaults as OSU 7.4: lat 10000/100
 * and 1000/10, bw 100/10 and 20/2, allreduce 1000/200 and 100/10), -W N the
 * window (bw, default 64), --csv (a "size,value" table).
 *
 * The header says whether the library is in the process ("# libmpigpu:
 * yes" when dlsym finds MPIX_Gpu_malloc, that is when it is preloaded).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LARGE 8192 /* OSU's large_message_size: fewer iterations above */
#define ACK_TAG 101
#define WIN_TAG 100
#define HIDX_HEAD 40 /* bw -R hidx: bytes into a header of the receive's own */

enum mode { LAT, BW, ALLREDUCE, ISENDRECV };

static struct {
    enum mode mode;
    long min, max;
    int iters, skip, iters_large, skip_large, window, csv;
    int hidx; /* bw -R hidx */
} opt;

static int rank, nproc;

static void usage(void)
{
    if (rank == 0)
        fprintf(stderr,
                "usage: hostbench lat|bw|allreduce|isendrecv [-m MIN:MAX] [-i N] [-x N] [-I N] "
                "[-X N] [-W N] [-R contig|hidx] [--csv]\n");
    MPI_Finalize();
    exit(2);
}

static long parse_size(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    return *end == '\0' || *end == ':' ? v : -1;
}

static int parse_int(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v < 0 || v > 100000000 ? -1 : (int)v;
}

static void parse(int argc, char **argv)
{
    if (argc < 2)
        usage();
    if (!strcmp(argv[1], "lat"))
        opt.mode = LAT, opt.iters = 10000, opt.skip = 100, opt.iters_large = 1000,
        opt.skip_large = 10;
    else if (!strcmp(argv[1], "bw"))
        opt.mode = BW, opt.iters = 100, opt.skip = 10, opt.iters_large = 20, opt.skip_large = 2;
    else if (!strcmp(argv[1], "isendrecv"))
        opt.mode = ISENDRECV, opt.iters = 10000, opt.skip = 100, opt.iters_large = 1000,
        opt.skip_large = 10;
    else if (!strcmp(argv[1], "allreduce"))
        opt.mode = ALLREDUCE, opt.iters = 1000, opt.skip = 200, opt.iters_large = 100,
        opt.skip_large = 10;
    else
        usage();
    opt.min = opt.mode == ALLREDUCE ? (long)sizeof(double) : 1;
    opt.max = 4L << 20;
    opt.window = 64;
    for (int a = 2; a < argc; a++) {
        const char *v = a + 1 < argc ? argv[a + 1] : NULL;
        int *ip = NULL;
        if (!strcmp(argv[a], "--csv")) {
            opt.csv = 1;
            continue;
        }
        if (!v)
            usage();
        if (!strcmp(argv[a], "-m")) {
            const char *c = strchr(v, ':');
            opt.min = parse_size(v);
            opt.max = c ? parse_size(c + 1) : opt.min;
            if (opt.min <= 0 || opt.max < opt.min || opt.max > (1L << 30))
                usage();
        } else if (!strcmp(argv[a], "-i")) {
            ip = &opt.iters;
        } else if (!strcmp(argv[a], "-x")) {
            ip = &opt.skip;
        } else if (!strcmp(argv[a], "-I")) {
            ip = &opt.iters_large;
        } else if (!strcmp(argv[a], "-X")) {
            ip = &opt.skip_large;
        } else if (!strcmp(argv[a], "-W")) {
            ip = &opt.window;
        } else if (!strcmp(argv[a], "-R")) {
            if (strcmp(v, "contig") && strcmp(v, "hidx"))
                usage();
            opt.hidx = !strcmp(v, "hidx");
        } else {
            usage();
        }
        if (ip && (*ip = parse_int(v)) < 0)
            usage();
        a++;
    }
    if (opt.iters < 1 || opt.iters_large < 1 || opt.window < 1)
        usage();
    if (opt.hidx && (opt.mode != BW || opt.min <= HIDX_HEAD))
        usage();
    if (opt.mode == ALLREDUCE && opt.min < (long)sizeof(double))
        opt.min = sizeof(double);
    if (opt.mode != ALLREDUCE && nproc < 2) {
        if (rank == 0)
            fprintf(stderr, "hostbench: %s needs 2 ranks\n", argv[1]);
        MPI_Finalize();
        exit(2);
    }
}

static void *buf_new(size_t n)
{
    void *p = NULL;
    long page = sysconf(_SC_PAGESIZE);
    if (posix_memalign(&p, page > 0 ? (size_t)page : 4096, n ? n : 1)) {
        fprintf(stderr, "hostbench: out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(p, rank + 1, n);
    return p;
}

/* Half a round trip between ranks 0 and 1 (the others wait), in us. */
static double run_lat(char *s, char *r, int n, int iters, int skip)
{
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip)
            t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(s, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(r, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(r, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(s, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

/* osu_bw: windows of Isend/Irecv on one buffer each side, an ack after each,
   in MB/s (rank 0's figure). */
static double run_bw(char *s, char *r, int n, int iters, int skip, MPI_Request *req, MPI_Status *st)
{
    int w = opt.window;
    double t0 = 0;
    /* -R hidx: receive j takes its first HIDX_HEAD bytes into head[j] and the
       rest in place (absolute displacements, from MPI_BOTTOM). */
    MPI_Datatype *rt = NULL;
    char(*head)[HIDX_HEAD] = NULL;
    if (opt.hidx && rank == 1) {
        rt = malloc((size_t)w * sizeof(*rt));
        head = malloc((size_t)w * sizeof(*head));
        if (!rt || !head)
            MPI_Abort(MPI_COMM_WORLD, 1);
        for (int j = 0; j < w; j++) {
            int len[2] = {HIDX_HEAD, n - HIDX_HEAD};
            MPI_Aint at[2];
            MPI_Get_address(head[j], &at[0]);
            MPI_Get_address(r + HIDX_HEAD, &at[1]);
            MPI_Type_create_hindexed(2, len, at, MPI_BYTE, &rt[j]);
            MPI_Type_commit(&rt[j]);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip)
            t0 = MPI_Wtime();
        if (rank == 0) {
            for (int j = 0; j < w; j++)
                MPI_Isend(s, n, MPI_CHAR, 1, WIN_TAG, MPI_COMM_WORLD, &req[j]);
            MPI_Waitall(w, req, st);
            MPI_Recv(r, 4, MPI_CHAR, 1, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            for (int j = 0; j < w; j++) {
                if (rt)
                    MPI_Irecv(MPI_BOTTOM, 1, rt[j], 0, WIN_TAG, MPI_COMM_WORLD, &req[j]);
                else
                    MPI_Irecv(r, n, MPI_CHAR, 0, WIN_TAG, MPI_COMM_WORLD, &req[j]);
            }
            MPI_Waitall(w, req, st);
            MPI_Send(s, 4, MPI_CHAR, 0, ACK_TAG, MPI_COMM_WORLD);
        }
    }
    double t = MPI_Wtime() - t0;
    for (int j = 0; rt && j < w; j++)
        MPI_Type_free(&rt[j]);
    free(rt);
    free(head);
    return (double)n / 1e6 * iters * w / t;
}

/* Ranks 0 and 1 exchange n bytes with MPI_Isendrecv (the others wait): us
   per exchange. */
static double run_isendrecv(char *s, char *r, int n, int iters, int skip)
{
    double t0 = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        if (i == skip)
            t0 = MPI_Wtime();
        if (rank < 2) {
            MPI_Request q;
            MPI_Isendrecv(s, n, MPI_CHAR, 1 - rank, 2, r, n, MPI_CHAR, 1 - rank, 2, MPI_COMM_WORLD,
                          &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / iters;
}

/* MPI_Allreduce of n bytes of doubles: the mean over ranks of each rank's
   mean time per call (the barrier between calls not counted), in us. */
static double run_allreduce(double *s, double *r, int n, int iters, int skip)
{
    double sum = 0, avg = 0;
    int count = n / (int)sizeof(double);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < iters + skip; i++) {
        double t = MPI_Wtime();
        MPI_Allreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        if (i >= skip)
            sum += t;
        MPI_Barrier(MPI_COMM_WORLD);
    }
    sum = sum * 1e6 / iters;
    MPI_Reduce(&sum, &avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    return avg / nproc;
}

int main(int argc, char **argv)
{
    static const char *names[] = {"lat", "bw", "allreduce", "isendrecv"};
    static const char *units[] = {"Latency (us)", "Bandwidth (MB/s)", "Avg Latency (us)",
                                  "Exchange (us)"};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nproc);
    parse(argc, argv);

    size_t max = (size_t)opt.max;
    char *s = buf_new(max < 4 ? 4 : max), *r = buf_new(max < 4 ? 4 : max);
    /* Statuses as osu_bw has them (MPI fills them in). */
    MPI_Request *req = malloc((size_t)opt.window * sizeof(*req));
    MPI_Status *st = malloc((size_t)opt.window * sizeof(*st));
    if (!req || !st)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0) {
        char lib = dlsym(RTLD_DEFAULT, "MPIX_Gpu_malloc") ? 'y' : 'n';
        printf("# hostbench %s: %d ranks", names[opt.mode], nproc);
        if (opt.mode == BW)
            printf(", window %d%s", opt.window, opt.hidx ? ", receives as two-block hindexed" : "");
        printf(", iterations %d (warmup %d) up to %d B, %d (%d) above\n", opt.iters, opt.skip,
               LARGE, opt.iters_large, opt.skip_large);
        printf("# libmpigpu: %s\n", lib == 'y' ? "yes" : "no");
        if (opt.csv)
            printf("size,%s\n", opt.mode == BW ? "mbps" : "us");
        else
            printf("# %-10s%18s\n", "Size", units[opt.mode]);
        fflush(stdout);
    }
    for (long n = opt.min; n <= opt.max; n *= 2) {
        int big = n > LARGE;
        int iters = big ? opt.iters_large : opt.iters, skip = big ? opt.skip_large : opt.skip;
        double v = 0;
        switch (opt.mode) {
        case LAT:
            v = run_lat(s, r, (int)n, iters, skip);
            break;
        case BW:
            v = run_bw(s, r, (int)n, iters, skip, req, st);
            break;
        case ALLREDUCE:
            v = run_allreduce((double *)s, (double *)r, (int)n, iters, skip);
            break;
        case ISENDRECV:
            v = run_isendrecv(s, r, (int)n, iters, skip);
            break;
        }
        if (rank == 0) {
            if (opt.csv)
                printf("%ld,%.2f\n", n, v);
            else
                printf("%-12ld%18.2f\n", n, v);
            fflush(stdout);
        }
    }
    free(req);
    free(st);
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
