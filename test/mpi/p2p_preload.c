/* An unmodified MPI program: built with plain mpicc, not linked with
   libmpigpu and without its header.  p2p_preload.sh runs it as it is ("plain")
   and with LD_PRELOAD=libmpigpu.so ("preload").  It ping-pongs derived types
   between host buffers, and, when dlsym finds MPIX_Gpu_malloc (only when
   preloaded), between every mix of host and device buffers too.  Rank 0
   checks every byte of the buffer, inside the type and around it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*gpu_malloc_fn)(size_t, void **);
typedef int (*gpu_free_fn)(void *);
typedef int (*gpu_memcpy_fn)(void *, const void *, size_t);

static gpu_malloc_fn gmalloc;
static gpu_free_fn gfree;
static gpu_memcpy_fn gmemcpy;
static int errs, rank;

#define N 4096
#define ORIGIN 64
#define TRIPS 20

static void *buf_new(int dev, const unsigned char *init)
{
    void *p = NULL;
    if (!dev) {
        p = malloc(N);
        memcpy(p, init, N);
        return p;
    }
    gmalloc(N, &p);
    gmemcpy(p, init, N);
    return p;
}

static void buf_get(unsigned char *h, const void *p, int dev)
{
    if (dev)
        gmemcpy(h, p, N);
    else
        memcpy(h, p, N);
}

/* TRIPS round trips of count instances of t: rank 0 sends from a buffer of
   kind d0, rank 1 receives into one of kind d1 and sends it back, rank 0
   receives into a second buffer of kind d0, poisoned, and compares with the
   host reference (MPI_Pack/MPI_Unpack of host buffers). */
static void pingpong(MPI_Datatype t, int count, int d0, int d1, int nb)
{
    unsigned char src[N], poison[N], want[N], got[N], packed[N];
    for (int i = 0; i < N; i++) {
        src[i] = (unsigned char)(i * 7 + 1);
        poison[i] = (unsigned char)(i * 3 + 5);
    }
    int pos = 0;
    memcpy(want, poison, N);
    MPI_Pack(src + ORIGIN, count, t, packed, N, &pos, MPI_COMM_WORLD);
    pos = 0;
    MPI_Unpack(packed, N, &pos, want + ORIGIN, count, t, MPI_COMM_WORLD);
    unsigned char *a = buf_new(rank == 0 ? d0 : d1, src), *b = buf_new(rank == 0 ? d0 : d1, poison);
    for (int k = 0; k < TRIPS; k++) {
        MPI_Request r;
        if (rank == 0) {
            if (nb) {
                MPI_Irecv(b + ORIGIN, count, t, 1, k, MPI_COMM_WORLD, &r);
                MPI_Send(a + ORIGIN, count, t, 1, k, MPI_COMM_WORLD);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Send(a + ORIGIN, count, t, 1, k, MPI_COMM_WORLD);
                MPI_Recv(b + ORIGIN, count, t, 1, k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else if (rank == 1) {
            MPI_Status st;
            int c = -1;
            MPI_Recv(b + ORIGIN, count, t, 0, k, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, t, &c);
            errs += c != count;
            MPI_Isend(b + ORIGIN, count, t, 0, k, MPI_COMM_WORLD, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
    }
    if (rank == 0) {
        buf_get(got, b, d0);
        if (memcmp(got, want, N) != 0) {
            errs++;
            fprintf(stderr, "p2p_preload: wrong bytes, count %d, %s->%s\n", count,
                    d0 ? "dev" : "host", d1 ? "dev" : "host");
        }
    }
    int dev = rank == 0 ? d0 : d1;
    if (dev) {
        gfree(a);
        gfree(b);
    } else {
        free(a);
        free(b);
    }
}

int main(int argc, char **argv)
{
    int preload = argc > 1 && !strcmp(argv[1], "preload"), cases = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    gmalloc = (gpu_malloc_fn)dlsym(RTLD_DEFAULT, "MPIX_Gpu_malloc");
    gfree = (gpu_free_fn)dlsym(RTLD_DEFAULT, "MPIX_Gpu_free");
    gmemcpy = (gpu_memcpy_fn)dlsym(RTLD_DEFAULT, "MPIX_Gpu_memcpy");
    int have = gmalloc && gfree && gmemcpy;
    if (have != preload) {
        fprintf(stderr, "p2p_preload: libmpigpu is %s, expected %s\n", have ? "loaded" : "absent",
                preload ? "loaded" : "absent");
        errs++;
    }
    if (have) {
        void *p = NULL; /* a device must exist for the device cases */
        if (gmalloc(16, &p) != MPI_SUCCESS)
            have = 0;
        else
            gfree(p);
    }
    MPI_Datatype vec, st0, st;
    MPI_Type_vector(8, 1, 3, MPI_DOUBLE, &vec);
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {0, 8, 16};
    MPI_Datatype tt[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(3, bl, disp, tt, &st0);
    MPI_Type_create_resized(st0, 0, 24, &st);
    MPI_Type_commit(&vec);
    MPI_Type_commit(&st);
    MPI_Datatype types[2] = {vec, st};
    int counts[2] = {1, 5};
    for (int ti = 0; ti < 2; ti++)
        for (int d0 = 0; d0 <= have; d0++)
            for (int d1 = 0; d1 <= have; d1++)
                for (int nb = 0; nb < 2; nb++) {
                    pingpong(types[ti], counts[ti], d0, d1, nb);
                    cases++;
                }
    MPI_Type_free(&vec);
    MPI_Type_free(&st0);
    MPI_Type_free(&st);
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf(" No Errors (%s, %d cases)\n", preload ? "preloaded" : "plain", cases);
        else
            printf(" Found %d errors\n", all);
    }
    MPI_Finalize();
    return all != 0;
}
