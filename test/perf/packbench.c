/*
 * mpigpu-packbench: pack/unpack microbenchmark on one rank.
 *
 *   mpigpu-packbench [-D TYPE] [-m MIN:MAX] [-i ITERS] [--csv FILE]
 *   TYPE: cont | vect:STRIDE:BLOCKLEN | subarray4d | indexed:BLOCKLEN | struct[:strided]
 *
 * For each packed size from MIN to MAX (powers of two) it times:
 *   pack_d2h   MPI_Pack of a device buffer into host memory (the library)
 *   pack_d2d   MPI_Pack of a device buffer into device memory (the library)
 *   unpack_h2d MPI_Unpack of host packed data into a device buffer (the library)
 *   stage_host copy the whole extent to the host, then host MPI_Pack (PMPI_Pack)
 *   host_pack  host MPI_Pack (PMPI_Pack) of the same data already in host memory
 * Times are medians over the iterations; GB/s counts packed bytes.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpigpu.h"

typedef struct bench_type {
    char kind[32];
    long stride, blocklen;
    int strided;
} bench_type_t;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static long parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k':
    case 'K':
        v *= 1024;
        break;
    case 'm':
    case 'M':
        v *= 1024 * 1024;
        break;
    case 'g':
    case 'G':
        v *= 1024.0 * 1024 * 1024;
        break;
    default:
        break;
    }
    return (long)v;
}

/* Build a datatype whose packed size is close to want bytes; returns the type
   (committed) with count 1. */
static MPI_Datatype make_type(const bench_type_t *bt, long want)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    if (!strcmp(bt->kind, "cont")) {
        MPI_Type_contiguous((int)(want / 8 > 0 ? want / 8 : 1), MPI_DOUBLE, &t);
    } else if (!strcmp(bt->kind, "vect") || !strcmp(bt->kind, "indexed")) {
        long bl = bt->blocklen, st = bt->stride ? bt->stride : 512;
        long n = want / bl > 0 ? want / bl : 1;
        int w = (bl % 8 == 0 && st % 8 == 0) ? 8 : 1;
        MPI_Datatype base = w == 8 ? MPI_DOUBLE : MPI_BYTE;
        if (!strcmp(bt->kind, "vect")) {
            MPI_Type_vector((int)n, (int)(bl / w), (int)(st / w), base, &t);
        } else {
            int *bls = malloc(n * sizeof(int)), *ds = malloc(n * sizeof(int));
            for (long i = 0; i < n; i++) {
                bls[i] = (int)(bl / w);
                ds[i] = (int)(i * st / w);
            }
            MPI_Type_indexed((int)n, bls, ds, base, &t);
            free(bls);
            free(ds);
        }
    } else if (!strcmp(bt->kind, "subarray4d")) {
        int sizes[4] = {64, 64, 64, 64}, sub[4], starts[4] = {0, 0, 0, 0};
        int s = (int)floor(pow((double)want / 8.0, 0.25) + 1e-9);
        if (s < 1)
            s = 1;
        if (s > 64)
            s = 64;
        for (int i = 0; i < 4; i++)
            sub[i] = s;
        MPI_Type_create_subarray(4, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
    } else if (!strcmp(bt->kind, "struct")) {
        struct s {
            double d;
            int a, b;
            char c;
        };
        int bl[4] = {1, 1, 1, 1};
        MPI_Aint disp[4] = {0, 8, 12, 16};
        MPI_Datatype ty[4] = {MPI_DOUBLE, MPI_INT, MPI_INT, MPI_CHAR}, one, rz;
        MPI_Type_create_struct(4, bl, disp, ty, &one);
        MPI_Type_create_resized(one, 0, sizeof(struct s), &rz);
        MPI_Type_free(&one);
        long n = want / 17 > 0 ? want / 17 : 1;
        if (bt->strided)
            MPI_Type_vector((int)n, 1, 2, rz, &t);
        else
            MPI_Type_contiguous((int)n, rz, &t);
        MPI_Type_free(&rz);
    } else {
        fprintf(stderr, "mpigpu-packbench: unknown -D type '%s'\n", bt->kind);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Type_commit(&t);
    return t;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

#define MAXIT 1000

int main(int argc, char **argv)
{
    bench_type_t bt = {"vect", 64, 8, 0};
    long lo = 64, hi = 4 << 20;
    int iters = 0;
    const char *csv = NULL;
    MPI_Init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-D") && i + 1 < argc) {
            const char *d = argv[++i];
            memset(&bt, 0, sizeof(bt));
            sscanf(d, "%31[^:]", bt.kind);
            if (!strncmp(d, "vect:", 5))
                sscanf(d + 5, "%ld:%ld", &bt.stride, &bt.blocklen);
            else if (!strncmp(d, "indexed:", 8))
                sscanf(d + 8, "%ld", &bt.blocklen), bt.stride = 512;
            else if (!strcmp(d, "struct:strided"))
                bt.strided = 1;
        } else if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            char *c = strchr(argv[++i], ':');
            if (c) {
                *c = 0;
                lo = parse_size(argv[i]);
                hi = parse_size(c + 1);
            } else {
                hi = parse_size(argv[i]);
            }
        } else if (!strcmp(argv[i], "-i") && i + 1 < argc) {
            iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--csv") && i + 1 < argc) {
            csv = argv[++i];
        } else {
            fprintf(stderr, "usage: mpigpu-packbench [-D cont|vect:STRIDE:BLOCKLEN|subarray4d|"
                            "indexed:BLOCKLEN|struct[:strided]] [-m MIN:MAX] [-i ITERS] "
                            "[--csv FILE]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if ((!strcmp(bt.kind, "vect") || !strcmp(bt.kind, "indexed")) && bt.blocklen <= 0) {
        fprintf(stderr, "mpigpu-packbench: BLOCKLEN must be positive\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (!MPIX_Query_opencl_support()) {
        fprintf(stderr, "mpigpu-packbench: no OpenCL device\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    cl_device_id dev;
    char devname[256] = "?";
    MPIX_Gpu_get_device(NULL, &dev, NULL);
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(devname), devname, NULL);
    FILE *cf = csv ? fopen(csv, "w") : NULL;
    if (csv && !cf) {
        perror(csv);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    static const char *names[] = {"pack_d2h", "pack_d2d", "unpack_h2d", "stage_host", "host_pack"};
    enum { NM = 5 };
    printf("# mpigpu-packbench -D %s", bt.kind);
    if (!strcmp(bt.kind, "vect"))
        printf(":%ld:%ld", bt.stride, bt.blocklen);
    if (!strcmp(bt.kind, "indexed"))
        printf(":%ld", bt.blocklen);
    printf("  device: %s\n# %-10s", devname, "size");
    for (int m = 0; m < NM; m++)
        printf(" %11s_us %8s", names[m], "GB/s");
    printf("\n");
    if (cf)
        fprintf(cf, "type,size,method,usec,gbps\n");
    for (long want = lo; want <= hi; want *= 2) {
        MPI_Datatype t = make_type(&bt, want);
        int psize;
        MPI_Aint tlb, tex;
        MPI_Pack_size(1, t, MPI_COMM_WORLD, &psize);
        MPI_Type_get_true_extent(t, &tlb, &tex);
        size_t span = (size_t)tex;
        char *h = malloc(span), *hp = malloc((size_t)psize), *hs = malloc(span);
        for (size_t i = 0; i < span; i++)
            h[i] = (char)(i * 7);
        void *d, *dp;
        MPIX_Gpu_malloc(span, &d);
        MPIX_Gpu_malloc((size_t)psize, &dp);
        MPIX_Gpu_memcpy(d, h, span);
        int n = iters > 0 ? iters : (psize < (1 << 20) ? 50 : (psize < (16 << 20) ? 10 : 4));
        if (n > MAXIT)
            n = MAXIT;
        double med[NM];
        for (int m = 0; m < NM; m++) {
            double tt[MAXIT];
            for (int it = -1; it < n; it++) { /* it = -1 warms up */
                int pos = 0;
                double t0 = now();
                switch (m) {
                case 0:
                    MPI_Pack((char *)d - tlb, 1, t, hp, psize, &pos, MPI_COMM_WORLD);
                    break;
                case 1:
                    MPI_Pack((char *)d - tlb, 1, t, dp, psize, &pos, MPI_COMM_WORLD);
                    break;
                case 2:
                    MPI_Unpack(hp, psize, &pos, (char *)d - tlb, 1, t, MPI_COMM_WORLD);
                    break;
                case 3:
                    MPIX_Gpu_memcpy(hs, d, span);
                    PMPI_Pack(hs - tlb, 1, t, hp, psize, &pos, MPI_COMM_WORLD);
                    break;
                default:
                    PMPI_Pack(h - tlb, 1, t, hp, psize, &pos, MPI_COMM_WORLD);
                    break;
                }
                double dt = now() - t0;
                if (it >= 0)
                    tt[it] = dt;
            }
            qsort(tt, (size_t)n, sizeof(double), cmp_double);
            med[m] = tt[n / 2];
        }
        printf("%-12d", psize);
        for (int m = 0; m < NM; m++) {
            double gbps = psize / med[m] / 1e9;
            printf(" %14.2f %8.3f", med[m] * 1e6, gbps);
            if (cf)
                fprintf(cf, "%s,%d,%s,%.3f,%.4f\n", bt.kind, psize, names[m], med[m] * 1e6, gbps);
        }
        printf("\n");
        fflush(stdout);
        MPIX_Gpu_free(d);
        MPIX_Gpu_free(dp);
        free(h);
        free(hp);
        free(hs);
        MPI_Type_free(&t);
    }
    if (cf)
        fclose(cf);
    MPI_Finalize();
    return 0;
}
