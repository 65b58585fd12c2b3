/* Shared helpers of the point-to-point tests: the datatype set, poisoned
   buffers and their expected contents (computed with PMPI_Pack/PMPI_Unpack on
   the host). */
#ifndef P2P_COMMON_H
#define P2P_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpigpu.h"

static int errs;
static char where[256] = "";
#define CHECK(cond_)                                                                               \
    do {                                                                                           \
        if (!(cond_)) {                                                                            \
            if (errs++ < 20)                                                                       \
                fprintf(stderr, "%s:%d [%s]: check failed: %s\n", __FILE__, __LINE__, where,       \
                        #cond_);                                                                   \
        }                                                                                          \
    } while (0)

#define NTYPES 6
__attribute__((unused)) static const char *const tnames[NTYPES] = {"contig",  "vector8", "face3d",
                                                                   "indexed", "struct",  "neglb"};
static MPI_Datatype types[NTYPES];

#define ORIGIN 64 /* byte offset of the datatype origin in every buffer */

/* A byte count from the environment, as mpigpu reads it (K, M, G). */
static inline long long env_bytes(const char *name, long long dflt)
{
    const char *v = getenv(name);
    char *end = NULL;
    if (!v || !v[0])
        return dflt;
    long long n = strtoll(v, &end, 10);
    if (*end == 'K' || *end == 'k')
        n <<= 10;
    else if (*end == 'M' || *end == 'm')
        n <<= 20;
    else if (*end == 'G' || *end == 'g')
        n <<= 30;
    return n;
}

/* What mpigpu's settings make of a device message between two processes of
   one node with node lanes on (doc/user-guide.md, "Point-to-point"): the
   length of a chunked message's first piece (0 under the plain protocol),
   and whether a message of n bytes goes in pieces, which a raw PMPI receive
   cannot take. */
__attribute__((unused)) static long long p2p_first_len(void)
{
    const char *proto = getenv("MPIGPU_P2P_PROTOCOL");
    long long cap = env_bytes("MPIGPU_STAGING_MAX", 64LL << 20), chunk = 4096;
    long long first = env_bytes("MPIGPU_P2P_FIRST", 64LL << 10);
    if (proto && !strcmp(proto, "plain"))
        return 0;
    while (chunk * 2 <= cap / 4)
        chunk *= 2;
    return first < chunk ? first : chunk;
}

/* Whether a host receive of that many packed bytes runs through mpigpu (it
   could meet a message in pieces). */
__attribute__((unused)) static int p2p_host_watched(long long capacity)
{
    long long f = p2p_first_len();
    return f && capacity >= f;
}

__attribute__((unused)) static int p2p_in_pieces(long long n)
{
    const char *proto = getenv("MPIGPU_P2P_PROTOCOL");
    long long f = p2p_first_len();
    if (!f || n < f)
        return 0;
    return (proto && !strcmp(proto, "chunked")) || n >= env_bytes("MPIGPU_P2P_AUTO_MIN", 1LL << 20);
}

/* Whether a host receive of a message in pieces asks for its rest as one
   MPI message (MPIGPU_P2P_HOST_RECV=message, node lanes on). */
__attribute__((unused)) static int p2p_host_rest(void)
{
    const char *v = getenv("MPIGPU_P2P_HOST_RECV"), *shm = getenv("MPIGPU_P2P_SHM");
    return v && !strcmp(v, "message") && !(shm && (!strcmp(shm, "off") || !strcmp(shm, "0")));
}

static inline void types_create(void)
{
    MPI_Type_contiguous(5, MPI_INT, &types[0]);
    MPI_Type_vector(4, 1, 3, MPI_DOUBLE, &types[1]);
    int sizes[3] = {6, 5, 4}, sub[3] = {6, 5, 1}, starts[3] = {0, 0, 2};
    MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, MPI_FLOAT, &types[2]);
    int bl[3] = {2, 1, 3}, disp[3] = {0, 4, 9};
    MPI_Type_indexed(3, bl, disp, MPI_INT, &types[3]);
    struct padded {
        char c;
        double d;
        int i;
    };
    int sbl[3] = {1, 1, 1};
    MPI_Aint sdisp[3] = {0, 8, 16};
    MPI_Datatype st[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, s0;
    MPI_Type_create_struct(3, sbl, sdisp, st, &s0);
    MPI_Type_create_resized(s0, 0, sizeof(struct padded), &types[4]);
    MPI_Type_free(&s0);
    int hbl[2] = {1, 1};
    MPI_Aint hdisp[2] = {-16, 8};
    MPI_Datatype h0;
    MPI_Type_create_hindexed(2, hbl, hdisp, MPI_DOUBLE, &h0);
    MPI_Type_create_resized(h0, -24, 40, &types[5]);
    MPI_Type_free(&h0);
    for (int i = 0; i < NTYPES; i++)
        MPI_Type_commit(&types[i]);
}

static inline void types_free(void)
{
    for (int i = 0; i < NTYPES; i++)
        MPI_Type_free(&types[i]);
}

static inline size_t buf_size(MPI_Datatype t, int count)
{
    MPI_Aint lb, ext, tlb, text;
    MPI_Type_get_extent(t, &lb, &ext);
    MPI_Type_get_true_extent(t, &tlb, &text);
    return ORIGIN + (size_t)(count > 0 ? count : 1) * (size_t)ext + (size_t)(tlb + text) + 64;
}

static inline void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 7 + seed * 31 + 1);
}

/* What a receive buffer poisoned with seed `poison` holds after receiving
   count instances of t sent from a buffer filled with seed `data`. */
static inline unsigned char *expected(MPI_Datatype t, int count, unsigned data, unsigned poison)
{
    size_t n = buf_size(t, count);
    unsigned char *src = malloc(n), *dst = malloc(n);
    int psize = 0, pos = 0;
    fill(src, n, data);
    fill(dst, n, poison);
    PMPI_Pack_size(count, t, MPI_COMM_WORLD, &psize);
    char *packed = malloc(psize + 1);
    PMPI_Pack(src + ORIGIN, count, t, packed, psize, &pos, MPI_COMM_WORLD);
    pos = 0;
    PMPI_Unpack(packed, psize, &pos, dst + ORIGIN, count, t, MPI_COMM_WORLD);
    free(packed);
    free(src);
    return dst;
}

/* A buffer of n bytes filled with seed, on the device or the host. */
static inline unsigned char *buf_make(size_t n, unsigned seed, int dev)
{
    unsigned char *h = malloc(n);
    fill(h, n, seed);
    if (!dev)
        return h;
    void *d = NULL;
    MPIX_Gpu_malloc(n, &d);
    MPIX_Gpu_memcpy(d, h, n);
    free(h);
    return d;
}

static inline void buf_free(void *p, int dev)
{
    if (dev)
        MPIX_Gpu_free(p);
    else
        free(p);
}

/* 1 when buffer p (device or host) holds exactly want[0..n). */
static inline int buf_equal(const void *p, const unsigned char *want, size_t n, int dev)
{
    unsigned char *h = malloc(n);
    MPIX_Gpu_memcpy(h, p, n);
    int ok = memcmp(h, want, n) == 0;
    if (!ok && dev >= 0) {
        for (size_t i = 0; i < n; i++)
            if (h[i] != want[i]) {
                fprintf(stderr, "  first difference at byte %zu: %d, want %d\n", i, h[i], want[i]);
                break;
            }
    }
    free(h);
    return ok;
}

/* Arrays of ints in host memory (malloc) or device memory
   (MPIX_Gpu_malloc), filled and read back whole. */
__attribute__((unused)) static int *p2p_ints_make(int dev, size_t words)
{
    int *p = NULL;
    if (dev)
        CHECK(MPIX_Gpu_malloc(words * sizeof(int), (void **)&p) == MPI_SUCCESS);
    else
        p = malloc(words * sizeof(int));
    return p;
}

__attribute__((unused)) static void p2p_ints_put(int dev, int *p, const int *h, size_t words)
{
    if (dev)
        CHECK(MPIX_Gpu_memcpy(p, h, words * sizeof(int)) == MPI_SUCCESS);
    else
        memcpy(p, h, words * sizeof(int));
}

__attribute__((unused)) static void p2p_ints_get(int dev, int *h, const int *p, size_t words)
{
    if (dev)
        CHECK(MPIX_Gpu_memcpy(h, p, words * sizeof(int)) == MPI_SUCCESS);
    else
        memcpy(h, p, words * sizeof(int));
}

__attribute__((unused)) static void p2p_ints_free(int dev, int *p)
{
    if (dev)
        MPIX_Gpu_free(p);
    else
        free(p);
}

#endif
