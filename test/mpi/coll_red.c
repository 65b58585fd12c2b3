/* Reductions that combine on the device (src/coll/reduce.c): MPI_Allreduce,
   MPI_Reduce, MPI_Reduce_scatter_block and MPI_Reduce_scatter of device
   buffers, every basic type with every built-in operation it takes, against
   the same call on host buffers, byte for byte.  The inputs are small whole
   numbers, so that every order of the operations gives the same result (the
   device path's order is the ring's, not MPICH's).  Sizes: one element, an
   odd count that no group size divides, and counts of several messages of
   MPIGPU_COLL_REDUCE_CHUNK (the testlist sets it small, so that chunks
   pipeline).  MPI_IN_PLACE, every root, uneven MPI_Reduce_scatter counts,
   zero counts.  Every device buffer has guard bytes before and after the
   data, which must stay as they were.  The MPI_T counter
   mpigpu_coll_device_reductions must move on every process for a call that
   should combine on the device, and must not for one that should stage (a
   user-defined operation, a process with host buffers, a count under
   MPIGPU_COLL_REDUCE_MIN under auto), so that the test fails if the path
   silently stages or is taken where it must not be.

   argv[1]: "device" (MPIGPU_COLL_REDUCE=device: every device call takes the
   path) or "auto" (MPIGPU_COLL_REDUCE=auto under MPIGPU_FORCE_PIPELINE=1:
   calls from MPIGPU_COLL_REDUCE_MIN bytes take it); argv[2] "quick": every
   type with MPI_SUM and every operation on int, fewer of the other forms. */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpigpu.h"
#include "mpit_read.h"

static int errs, rank, wsize, automode, quick;
static long long red_min;
static char where[200];
static cl_context ctx;
#define CHECK(c_)                                                                                  \
    do {                                                                                           \
        if (!(c_) && errs++ < 20)                                                                  \
            fprintf(stderr, "rank %d [%s]: check failed: %s (line %d)\n", rank, where, #c_,        \
                    __LINE__);                                                                     \
    } while (0)

#define GUARD 64 /* bytes before and after the data of a device buffer */

enum { K_ALLREDUCE, K_REDUCE, K_RSB, K_RS, K_N };
static const char *kname[K_N] = {"Allreduce", "Reduce", "Reduce_scatter_block", "Reduce_scatter"};

#define NTYPES 10
static MPI_Datatype types[NTYPES];
static const char *tnames[NTYPES] = {"signed char", "unsigned char", "short", "unsigned short",
                                     "int",         "unsigned",      "long",  "unsigned long",
                                     "float",       "double"};
static const int tsize[NTYPES] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
#define NOPS 10
static MPI_Op ops[NOPS];
static const char *onames[NOPS] = {"SUM", "PROD", "MIN",  "MAX", "LAND",
                                   "LOR", "LXOR", "BAND", "BOR", "BXOR"};

/* Element i of rank r's input, as a small whole number that keeps every
   result exact (products of up to four ranks of 1..3 fit a signed char). */
static long value(int op, int r, long i)
{
    if (op == 1)
        return 1 + (r + i) % 3;
    if (op >= 4 && op <= 6)
        return (r * 7 + i * 3) % 3; /* 0, 1, 2 */
    return (r * 13 + i * 5) % 29;
}

static void put(void *base, int t, long i, long v)
{
    switch (t) {
    case 0:
        ((signed char *)base)[i] = (signed char)v;
        break;
    case 1:
        ((unsigned char *)base)[i] = (unsigned char)v;
        break;
    case 2:
        ((short *)base)[i] = (short)v;
        break;
    case 3:
        ((unsigned short *)base)[i] = (unsigned short)v;
        break;
    case 4:
        ((int *)base)[i] = (int)v;
        break;
    case 5:
        ((unsigned *)base)[i] = (unsigned)v;
        break;
    case 6:
        ((long *)base)[i] = v;
        break;
    case 7:
        ((unsigned long *)base)[i] = (unsigned long)v;
        break;
    case 8:
        ((float *)base)[i] = (float)v;
        break;
    default:
        ((double *)base)[i] = (double)v;
        break;
    }
}

/* A device buffer of n data bytes between guards: MPIX_Gpu_malloc (zero
   copy on a CPU device) or a registered cl_mem, by kind. */
typedef struct dbuf {
    char *d; /* the allocation; data at d + GUARD */
    cl_mem mem;
    size_t n;
} dbuf_t;

static void guard_fill(unsigned char *h, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h[i] = (unsigned char)(0xA5 ^ i);
}

static dbuf_t dbuf_new(const void *data, size_t n, int kind)
{
    dbuf_t b = {.n = n};
    size_t all = n + 2 * GUARD;
    unsigned char *h = malloc(all);
    guard_fill(h, all);
    if (data)
        memcpy(h + GUARD, data, n);
    void *d = NULL;
    if (kind == 0) {
        MPIX_Gpu_malloc(all, &d);
    } else {
        cl_int e;
        b.mem = clCreateBuffer(ctx, CL_MEM_READ_WRITE, all, NULL, &e);
        MPIX_Gpu_register(b.mem, &d);
    }
    MPIX_Gpu_memcpy(d, h, all);
    free(h);
    b.d = d;
    return b;
}

/* The data bytes back (into out, n bytes); the guards checked, and the
   data bytes past `written` (which the call must not write) too. */
static void dbuf_end(dbuf_t *b, void *out, size_t written)
{
    size_t all = b->n + 2 * GUARD;
    unsigned char *h = malloc(all), *g = malloc(all);
    MPIX_Gpu_memcpy(h, b->d, all);
    guard_fill(g, all);
    CHECK(memcmp(h, g, GUARD) == 0);
    CHECK(memcmp(h + GUARD + b->n, g + GUARD + b->n, GUARD) == 0);
    if (out)
        memcpy(out, h + GUARD, written);
    free(h);
    free(g);
    if (b->mem) {
        MPIX_Gpu_deregister(b->d);
        clReleaseMemObject(b->mem);
    } else {
        MPIX_Gpu_free(b->d);
    }
}

static int op_valid(int t, int o)
{
    return t < 8 || o < 4; /* logical and bit operations on integers only */
}

static unsigned long long counter(void)
{
    return mpit_value("mpigpu_coll_device_reductions");
}

/* One call of kind k on count elements per block unit (Allreduce, Reduce:
   the vector; the reduce-scatter forms: see counts), type t, op o, root;
   dev: this process's buffers on the device (kind: which sort of device
   buffer); uop, unless MPI_OP_NULL, replaces the operation (a user-defined
   one, which stages).  expect: whether it should combine on the device. */
static void one(int k, int t, int o, long count, int inplace, int root, int dev, int kind,
                MPI_Op uop, int expect)
{
    MPI_Datatype type = types[t];
    MPI_Op saved = ops[o];
    if (uop != MPI_OP_NULL)
        ops[o] = uop;
    int es = tsize[t];
    int counts[16];
    long n = count, mine = count;
    if (k == K_RSB) {
        n = count * wsize;
    } else if (k == K_RS) {
        n = 0;
        for (int i = 0; i < wsize; i++) {
            counts[i] = (int)(i % 3 == 1 ? 0 : count + i * 3); /* uneven, some zero */
            n += counts[i];
        }
        mine = counts[rank];
    }
    if (k == K_RSB)
        mine = count;
    snprintf(where, sizeof where, "%s %s %s n=%ld%s root=%d %s kind=%d", kname[k], tnames[t],
             onames[o], n, inplace ? " in place" : "", root, dev ? "device" : "host", kind);
    if (getenv("COLL_RED_TRACE"))
        fprintf(stderr, "rank %d: %s\n", rank, where);
    size_t nb = (size_t)n * (size_t)es, mb = (size_t)mine * (size_t)es;
    char *in = malloc(nb + 1), *ref = malloc(nb + 1), *got = malloc(nb + 1);
    for (long i = 0; i < n; i++)
        put(in, t, i, value(o, rank, i));
    /* the reference: the same call on host buffers */
    memcpy(ref, in, nb);
    int isroot = k != K_REDUCE || rank == root;
    const void *hs = inplace && (isroot || k == K_REDUCE) ? MPI_IN_PLACE : in;
    void *hr = inplace && (isroot || k == K_REDUCE) ? ref : malloc(nb + 1);
    switch (k) {
    case K_ALLREDUCE:
        MPI_Allreduce(hs, hr, (int)n, type, ops[o], MPI_COMM_WORLD);
        break;
    case K_REDUCE:
        /* MPICH 4.0.2 faults on MPI_Reduce in place at a root other than 0
           from a few thousand elements (host buffers, no mpigpu): the
           root's result from MPI_Allreduce instead */
        MPI_Allreduce(hs, hr, (int)n, type, ops[o], MPI_COMM_WORLD);
        break;
    case K_RSB:
        MPI_Reduce_scatter_block(hs, hr, (int)count, type, ops[o], MPI_COMM_WORLD);
        break;
    default:
        MPI_Reduce_scatter(hs, hr, counts, type, ops[o], MPI_COMM_WORLD);
        break;
    }
    if (hr != ref) {
        memcpy(ref, hr, nb);
        free(hr);
    }
    size_t rlen = k == K_REDUCE && !isroot ? 0 : (k == K_ALLREDUCE || k == K_REDUCE ? nb : mb);

    unsigned long long before = counter();
    int rc;
    if (dev) {
        dbuf_t s = {0}, r = {0};
        const void *sp = MPI_IN_PLACE;
        void *rp = NULL;
        if (inplace && isroot) {
            r = dbuf_new(in, nb, kind);
            rp = r.d + GUARD;
        } else {
            s = dbuf_new(in, nb, kind);
            sp = s.d + GUARD;
            if (isroot) {
                r = dbuf_new(NULL, k == K_ALLREDUCE || k == K_REDUCE ? nb : mb, 1 - kind);
                rp = r.d + GUARD;
            } else {
                rp = (void *)(uintptr_t)0x10; /* insignificant: never read */
            }
        }
        switch (k) {
        case K_ALLREDUCE:
            rc = MPI_Allreduce(sp, rp, (int)n, type, ops[o], MPI_COMM_WORLD);
            break;
        case K_REDUCE:
            rc = MPI_Reduce(sp, rp, (int)n, type, ops[o], root, MPI_COMM_WORLD);
            break;
        case K_RSB:
            rc = MPI_Reduce_scatter_block(sp, rp, (int)count, type, ops[o], MPI_COMM_WORLD);
            break;
        default:
            rc = MPI_Reduce_scatter(sp, rp, counts, type, ops[o], MPI_COMM_WORLD);
            break;
        }
        CHECK(rc == MPI_SUCCESS);
        if (s.d) {
            /* the input is unchanged, guards included */
            dbuf_end(&s, got, nb);
            CHECK(memcmp(got, in, nb) == 0);
        }
        if (r.d) {
            dbuf_end(&r, got, r.n);
            CHECK(memcmp(got, ref, rlen) == 0);
            if (inplace && r.n > rlen && k != K_ALLREDUCE && k != K_REDUCE) {
                /* MPI leaves the rest of an in-place reduce-scatter buffer
                   undefined; nothing to check there */
            }
        }
    } else {
        char *r = malloc(nb + 1);
        if (inplace && isroot) {
            memcpy(r, in, nb);
            hs = MPI_IN_PLACE;
        } else {
            hs = in;
        }
        switch (k) {
        case K_ALLREDUCE:
            rc = MPI_Allreduce(hs, r, (int)n, type, ops[o], MPI_COMM_WORLD);
            break;
        case K_REDUCE:
            rc = MPI_Reduce(hs, r, (int)n, type, ops[o], root, MPI_COMM_WORLD);
            break;
        case K_RSB:
            rc = MPI_Reduce_scatter_block(hs, r, (int)count, type, ops[o], MPI_COMM_WORLD);
            break;
        default:
            rc = MPI_Reduce_scatter(hs, r, counts, type, ops[o], MPI_COMM_WORLD);
            break;
        }
        CHECK(rc == MPI_SUCCESS);
        CHECK(memcmp(r, ref, rlen) == 0);
        free(r);
    }
    unsigned long long moved = counter() - before;
    CHECK(moved == (unsigned long long)expect);
    ops[o] = saved;
    free(in);
    free(ref);
    free(got);
}

/* MPI_SUM of ints as a user-defined operation (which stages). */
static void int_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* Whether a call of nb bytes on device buffers everywhere takes the path. */
static int takes(size_t nb)
{
    return !automode || (long long)nb >= red_min;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    automode = argc > 1 && strcmp(argv[1], "auto") == 0;
    quick = argc > 2 && strcmp(argv[2], "quick") == 0;
    if (mpit_read_init() != 0) {
        fprintf(stderr, "MPI_T did not start\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    cl_device_id dev;
    if (MPIX_Gpu_get_device(&ctx, &dev, NULL) != MPI_SUCCESS) {
        if (rank == 0)
            printf("no OpenCL device: skipped\n");
        mpit_read_finalize();
        MPI_Finalize();
        return 77;
    }
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof(fp), &fp, NULL);
    red_min = mpit_setting_bytes("MPIGPU_COLL_REDUCE_MIN");
    long long chunk = mpit_setting_bytes("MPIGPU_COLL_REDUCE_CHUNK");
    MPI_Datatype t0[NTYPES] = {MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_SHORT, MPI_UNSIGNED_SHORT,
                               MPI_INT,         MPI_UNSIGNED,      MPI_LONG,  MPI_UNSIGNED_LONG,
                               MPI_FLOAT,       MPI_DOUBLE};
    MPI_Op o0[NOPS] = {MPI_SUM, MPI_PROD, MPI_MIN,  MPI_MAX, MPI_LAND,
                       MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
    memcpy(types, t0, sizeof types);
    memcpy(ops, o0, sizeof ops);
    int cases = 0;
    /* elements of several chunks, odd */
    long big = chunk > 0 ? (long)(chunk * 5 / 2) + 3 : 10003;

    if (!automode) {
        /* every type x operation, Allreduce, a few elements and several
           chunks (per type's size), in place every other */
        for (int t = 0; t < NTYPES; t++)
            for (int o = 0; o < NOPS; o++) {
                if (!op_valid(t, o) || (quick && o != 0 && t != 4))
                    continue;
                int exp = t != 9 || fp != 0;
                one(K_ALLREDUCE, t, o, 7, (t + o) % 2, 0, 1, (t + o) % 2, MPI_OP_NULL, exp);
                one(K_ALLREDUCE, t, o, big / tsize[t] + 1, (t + o + 1) % 2, 0, 1, t % 2,
                    MPI_OP_NULL, exp);
                cases += 2;
            }
        /* the other forms: a few types and operations, every root */
        static const int tt[] = {0, 4, 7, 9}, oo[] = {0, 3, 9};
        for (int k = K_REDUCE; k < K_N; k++)
            for (int a = 0; a < 4; a++)
                for (int b = 0; b < 3; b++) {
                    int t = tt[a], o = oo[b];
                    if (!op_valid(t, o) || (t == 9 && !fp) || (quick && (a % 2 == 0 || b == 1)))
                        continue;
                    long sizes[3] = {1, 7, big / tsize[t] / wsize + 1};
                    for (int z = 0; z < 3; z++)
                        for (int ip = 0; ip < 2; ip++) {
                            int root = (a + b + z) % wsize;
                            one(k, t, o, sizes[z], ip, root, 1, (a + z + ip) % 2, MPI_OP_NULL, 1);
                            cases++;
                        }
                }
    } else {
        /* around the threshold: one element under it stages, at it combines */
        for (int t = 4; t < NTYPES; t += 5) {
            long at = (long)(red_min / tsize[t]);
            for (int k = 0; k < K_N; k++) {
                long unit = k == K_RSB ? wsize : 1;
                if (k == K_RS)
                    continue; /* its total is not a multiple of a unit */
                long c = (at + unit - 1) / unit;
                one(k, t, 0, c, 0, wsize - 1, 1, 1, MPI_OP_NULL,
                    takes((size_t)(c * unit * tsize[t])));
                if (c > 1) /* in place at root 0: see one() */
                    one(k, t, 0, c - 1, 1, 0, 1, 1, MPI_OP_NULL,
                        takes((size_t)((c - 1) * unit * tsize[t])));
                cases += 2;
            }
        }
    }

    /* what must stage, above any threshold: a derived datatype; a process
       with host buffers (the others vote with theirs); host buffers
       everywhere */
    long many = automode ? (long)red_min / 4 + 5 : 1001;
    MPI_Op usum;
    MPI_Op_create(int_sum, 1, &usum);
    one(K_ALLREDUCE, 4, 0, many, 0, 0, 1, 0, usum, 0);
    MPI_Op_free(&usum);
    one(K_ALLREDUCE, 4, 0, many, 0, 0, rank != 0, 0, MPI_OP_NULL, 0);
    one(K_REDUCE, 9, 3, many, 1, 0, rank != 0, 1, MPI_OP_NULL, 0); /* root 0: see one() */
    one(K_RSB, 4, 9, many, 0, 0, rank % 2, 1, MPI_OP_NULL, 0);
    one(K_ALLREDUCE, 4, 0, many, 1, 0, 0, 0, MPI_OP_NULL, 0);
    cases += 5;

    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("coll_red (%s, %d ranks): %d cases, %s\n", automode ? "auto" : "device", wsize,
               cases, all ? "FAILED" : "passed");
    mpit_read_finalize();
    MPI_Finalize();
    return all ? 1 : 0;
}
