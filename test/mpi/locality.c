/* The default device on 2-4 ranks: each rank's MPIGPU_VERBOSE line (captured
   from its stderr during MPI_Init) names this rank, its place on the node
   and the device MPIX_Gpu_get_device returns; without a GPU every rank took
   the first device, with GPUs a GPU.  A device ring checks the device works.
   Argument "named": MPIGPU_DEVICE set to the first platform's name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mgtest_check.h"
#include "mpigpu.h"

/* What OpenCL offers, seen before MPI_Init: the first device of any
   platform, and whether there is a GPU. */
static int machine_scan(cl_device_id *first, char *plat0, size_t len)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    int gpus = 0;
    *first = NULL;
    plat0[0] = '\0';
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS)
        return 0;
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_uint n = 0;
        if (!plat0[0])
            clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, len, plat0, NULL);
        if (!*first)
            clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 1, first, NULL);
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_GPU, 0, NULL, &n) == CL_SUCCESS)
            gpus += (int)n;
    }
    return gpus;
}

/* MPI_Init with stderr going to a file; returns what was written. */
static char *init_captured(int *argc, char ***argv)
{
    FILE *f = tmpfile();
    int saved = dup(2);
    if (!f || saved < 0) {
        MPI_Init(argc, argv);
        return NULL;
    }
    fflush(stderr);
    dup2(fileno(f), 2);
    MPI_Init(argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    long n = ftell(f);
    char *text = n >= 0 ? calloc((size_t)n + 1, 1) : NULL;
    if (text) {
        rewind(f);
        if (fread(text, 1, (size_t)n, f) != (size_t)n)
            text[0] = '\0';
    }
    fclose(f);
    return text;
}

int main(int argc, char **argv)
{
    int named = argc > 1 && !strcmp(argv[1], "named");
    cl_device_id first;
    char plat0[256], setting[300];
    int gpus = machine_scan(&first, plat0, sizeof(plat0));
    if (named) {
        snprintf(setting, sizeof(setting), "%s:0", plat0);
        setenv("MPIGPU_DEVICE", setting, 1);
    }
    int verbose = getenv("MPIGPU_VERBOSE") && atoi(getenv("MPIGPU_VERBOSE")) == 1;

    char *text = init_captured(&argc, &argv);
    if (text)
        fputs(text, stderr); /* keep the output visible in the log */

    int rank, size, lrank, lsize;
    MPI_Comm node;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &lrank);
    MPI_Comm_size(node, &lsize);

    cl_context ctx = NULL;
    cl_device_id dev = NULL;
    cl_command_queue queue = NULL;
    int rc = MPIX_Gpu_get_device(&ctx, &dev, &queue);
    CHECK(first == NULL || rc == MPI_SUCCESS);
    if (rc == MPI_SUCCESS) {
        CHECK(ctx && dev && queue);
        cl_device_type type = 0;
        clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
        if (!named && gpus > 0)
            CHECK(type & CL_DEVICE_TYPE_GPU);
        if (!named && gpus == 0)
            CHECK(dev == first);
        if (named)
            CHECK(dev == first);
    }

    if (verbose && rc == MPI_SUCCESS) {
        char name[256] = "", want[256] = "", why[512] = "";
        int r = -1, l = -1, ls = -1;
        const char *line = text ? strstr(text, "mpigpu: rank ") : NULL;
        clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(want), want, NULL);
        CHECK(line != NULL);
        if (line) {
            int got = sscanf(line,
                             "mpigpu: rank %d (local %d of %d): device \"%255[^\"]\" of platform "
                             "\"%*[^\"]\" (%511[^)])",
                             &r, &l, &ls, name, why);
            CHECK(got == 5);
            CHECK(r == rank && l == lrank && ls == lsize);
            CHECK(!strcmp(name, want));
            if (named)
                CHECK(!strcmp(why, "MPIGPU_DEVICE"));
            else if (gpus == 0)
                CHECK(!strcmp(why, "first device: no GPU found"));
            else
                CHECK(!strncmp(why, "hwloc locality: GPU ", 20) ||
                      !strncmp(why, "first GPU: no PCI locality", 26));
            if (errs)
                fprintf(stderr, "rank %d: verbose line: %.300s\n", rank, line);
        }
    }

    /* Every rank's device carries a message around the ring. */
    if (rc == MPI_SUCCESS && size > 1) {
        enum { N = 4096 };
        unsigned char *h = malloc(N);
        void *d = NULL;
        CHECK(MPIX_Gpu_malloc(N, &d) == MPI_SUCCESS);
        for (int i = 0; i < N; i++)
            h[i] = (unsigned char)(rank * 7 + i);
        CHECK(MPIX_Gpu_memcpy(d, h, N) == MPI_SUCCESS);
        CHECK(MPI_Sendrecv_replace(d, N, MPI_BYTE, (rank + 1) % size, 0, (rank + size - 1) % size,
                                   0, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        CHECK(MPIX_Gpu_memcpy(h, d, N) == MPI_SUCCESS);
        int from = (rank + size - 1) % size, bad = 0;
        for (int i = 0; i < N; i++)
            bad += h[i] != (unsigned char)(from * 7 + i);
        CHECK(bad == 0);
        MPIX_Gpu_free(d);
        free(h);
    }

    free(text);
    MPI_Comm_free(&node);
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return all != 0;
}
