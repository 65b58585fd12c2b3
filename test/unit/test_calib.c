/*
 * Unit tests of the calibrated method choice (MPIGPU_PACK=auto, pk_calib.c)
 * on the first OpenCL device: the table is measured and cached, read back,
 * a corrupt or foreign file is rejected and rewritten, MPIGPU_CALIBRATE=0
 * and force behave, forced methods win over auto, and auto takes what the
 * table says (a crafted table read from the cache).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mgerr.h"
#include "mgpk.h"

/* The datatype engine is not linked: attach the pack engine's state here. */
void mgdt_type_set_user(const mgdt_type_t *type, void *user, void (*user_free)(void *))
{
    mgdt_type_t *t = (mgdt_type_t *)type;
    t->user = user;
    t->user_free = user_free;
}

static cl_context g_cl;
static cl_device_id g_dev;
static cl_command_queue g_q;
static char g_dir[256];

#define ENV_CHECK(cond_, what_)                                                                    \
    do {                                                                                           \
        if (!(cond_)) {                                                                            \
            fprintf(stderr, "test_calib: %s failed\n", (what_));                                   \
            exit(EXIT_FAILURE);                                                                    \
        }                                                                                          \
    } while (0)

static mgpk_ctx_t *mk(mgpk_method_t method, mgpk_calib_mode_t mode, const char *dir)
{
    mgpk_settings_t s = {.method = method,
                         .calibrate = mode,
                         .cache_dir = dir,
                         .verbose = getenv("MGPK_TEST_VERBOSE") != NULL};
    mgpk_ctx_t *ctx = NULL;
    int rc = mgpk_ctx_create(g_cl, g_dev, g_q, &s, &ctx);
    ck_assert_msg(rc == MPI_SUCCESS, "mgpk_ctx_create: %s", mgerr_get(rc));
    return ctx;
}

static mgpk_calib_info_t info_of(mgpk_ctx_t *ctx)
{
    mgpk_calib_info_t info;
    ck_assert_int_eq(mgpk_calib_get(ctx, &info), MPI_SUCCESS);
    return info;
}

/* A vector of 4 blocks of bl bytes at stride sm bl (extent 4 sm bl). */
typedef struct vec {
    mgdt_type_t t;
    mgdt_node_t nodes[2];
} vec_t;

static void mk_vec_s(vec_t *v, int64_t bl, int64_t sm)
{
    memset(v, 0, sizeof(*v));
    v->nodes[1] = (mgdt_node_t){.kind = MGDT_K_LEAF,
                                .size = bl,
                                .extent = bl,
                                .true_ub = bl,
                                .la = -1,
                                .elements = bl,
                                .align = 8,
                                .basic = 1};
    v->nodes[0] = (mgdt_node_t){.kind = MGDT_K_VECTOR,
                                .count = 4,
                                .blocklen = 1,
                                .stride = sm * bl,
                                .size = 4 * bl,
                                .extent = 4 * sm * bl,
                                .true_ub = (3 * sm + 1) * bl,
                                .child_size = bl,
                                .child_extent = bl,
                                .la = -1,
                                .elements = 4 * bl,
                                .align = 8};
    v->t.nodes = v->nodes;
    v->t.nnodes = 2;
    v->t.size = 4 * bl;
    v->t.extent = 4 * sm * bl;
    v->t.true_ub = (3 * sm + 1) * bl;
    v->t.elements = 4 * bl;
    v->t.align = 8;
    v->t.depth = 2;
    v->t.twin = MPI_DATATYPE_NULL;
    v->t.shape =
        (mgdt_shape_t){.kind = MGDT_SHAPE_VECTOR, .blocklen = bl, .count = 4, .stride = sm * bl};
}

static void mk_vec(vec_t *v, int64_t bl)
{
    mk_vec_s(v, bl, 3);
}

static void vec_free(vec_t *v)
{
    if (v->t.user && v->t.user_free)
        v->t.user_free(v->t.user);
}

static int file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static double dabs(double x)
{
    return x < 0 ? -x : x;
}

START_TEST(test_measure_and_cache)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/a", g_dir);
    mkdir(g_dir, 0700);
    mkdir(dir, 0700);
    mgpk_ctx_t *a = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    mgpk_calib_info_t ia = info_of(a);
    ck_assert_int_eq(ia.source, MGPK_CAL_MEASURED);
    /* How long it takes is a benchmark (doc/performance.md), not a check:
     * under valgrind the same calibration takes about 7 s. */
    ck_assert_msg(ia.seconds > 0, "calibration took %.3f s", ia.seconds);
    printf("test_calib: calibration took %.3f s\n", ia.seconds);
    ck_assert_msg(file_exists(ia.path), "no cache file %s", ia.path);
    ck_assert_ptr_nonnull(strstr(ia.path, dir));
    ck_assert(ia.strides[0] == 2 && ia.strides[1] == 8);
    for (int k = 0; k < MGPK_CAL_NSTRIDES; k++)
        for (int s = 0; s < MGPK_CAL_NSIZES; s++)
            for (int b = 0; b < MGPK_CAL_NBLOCKS; b++) {
                const double *dv = ia.t[0][k][s][b], *hv = ia.t[1][k][s][b];
                ck_assert(dv[0] > 0 && dv[1] > 0 && hv[0] > 0);
                ck_assert(dv[2] < 0 && hv[2] > 0);
            }
    /* Read back: the same table. */
    mgpk_ctx_t *b = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    mgpk_calib_info_t ib = info_of(b);
    ck_assert_int_eq(ib.source, MGPK_CAL_CACHED);
    ck_assert_str_eq(ib.path, ia.path);
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < MGPK_CAL_NSTRIDES; k++)
            for (int s = 0; s < MGPK_CAL_NSIZES; s++)
                for (int bl = 0; bl < MGPK_CAL_NBLOCKS; bl++)
                    for (int m = 0; m < MGPK_CAL_NMETHODS; m++)
                        ck_assert_msg(dabs(ia.t[d][k][s][bl][m] - ib.t[d][k][s][bl][m]) < 2e-9,
                                      "cell %d %d %d %d %d: %g vs %g", d, k, s, bl, m,
                                      ia.t[d][k][s][bl][m], ib.t[d][k][s][bl][m]);
    for (int k = 0; k < MGPK_CAL_NSTRIDES; k++)
        for (int s = 0; s < MGPK_CAL_NSIZES; s++)
            ck_assert(dabs(ia.map[k][s] - ib.map[k][s]) < 2e-9);
    /* force measures although the cache is valid. */
    mgpk_ctx_t *c = mk(MGPK_METHOD_AUTO, MGPK_CALIB_FORCE, dir);
    ck_assert_int_eq(info_of(c).source, MGPK_CAL_MEASURED);
    /* 0: the static rule, no file needed. */
    mgpk_ctx_t *d = mk(MGPK_METHOD_AUTO, MGPK_CALIB_OFF, NULL);
    ck_assert_int_eq(info_of(d).source, MGPK_CAL_STATIC);
    vec_t v;
    mk_vec(&v, 64);
    ck_assert_int_eq(mgpk_method_choose(d, &v.t, 1024, 1024 * v.t.size, 1, 1, 0),
                     MGPK_METHOD_KERNEL);
    /* No cache directory: measured, nothing written. */
    mgpk_ctx_t *e = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, NULL);
    mgpk_calib_info_t ie = info_of(e);
    ck_assert_int_eq(ie.source, MGPK_CAL_MEASURED);
    ck_assert_str_eq(ie.path, "");
    mgpk_ctx_free(a);
    mgpk_ctx_free(b);
    mgpk_ctx_free(c);
    mgpk_ctx_free(d);
    mgpk_ctx_free(e);
    vec_free(&v);
}
END_TEST

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char *buf = calloc(1, 1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(text, f);
    ck_assert_int_eq(fclose(f), 0);
}

/* Replace the first occurrence of `from` in good by `to`, write it, and check
   that a new context rejects it (measures) and rewrites a valid file. */
static void reject(const char *dir, const char *path, const char *good, const char *from,
                   const char *to)
{
    const char *at = strstr(good, from);
    ck_assert_msg(at != NULL, "'%s' not in the cache file", from);
    size_t pre = (size_t)(at - good);
    char *bad = calloc(1, strlen(good) + strlen(to) + 1);
    memcpy(bad, good, pre);
    strcat(bad, to);
    strcat(bad, at + strlen(from));
    spit(path, bad);
    mgpk_ctx_t *ctx = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    ck_assert_msg(info_of(ctx).source == MGPK_CAL_MEASURED, "accepted a file with '%s' -> '%s'",
                  from, to);
    mgpk_ctx_free(ctx);
    char *now = slurp(path);
    ck_assert_msg(strstr(now, "\nend\n") && strcmp(now, bad) != 0,
                  "not rewritten after '%s' -> '%s'", from, to);
    mgpk_ctx_t *again = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    ck_assert_int_eq(info_of(again).source, MGPK_CAL_CACHED);
    mgpk_ctx_free(again);
    free(now);
    free(bad);
}

START_TEST(test_corrupt)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/b", g_dir);
    mkdir(g_dir, 0700);
    mkdir(dir, 0700);
    mgpk_ctx_t *a = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    mgpk_calib_info_t ia = info_of(a);
    mgpk_ctx_free(a);
    char *good = slurp(ia.path);
    reject(dir, ia.path, good, "\ndev 2 4096 8 ", "\ndev 2 4096 8 nan ");
    reject(dir, ia.path, good, "\ndev 2 4096 8 ", "\ndev 2 4096 8 -5 ");
    reject(dir, ia.path, good, "\ndev 2 4096 8 ", "\ndev 2 4096 9 ");
    reject(dir, ia.path, good, "\ndev 8 4096 8 ", "\ndev 4 4096 8 ");
    reject(dir, ia.path, good, "\nhost 8 8388608 512 ", "\nhost 8 8388608 64 "); /* row twice */
    reject(dir, ia.path, good, "\nsizes 4096 262144 1048576 ", "\nsizes 4096 262144 ");
    reject(dir, ia.path, good, "\nhost 8 8388608 512 ", "\nhost 2 8388608 512 ");
    reject(dir, ia.path, good, "\ndev 2 4096 8 ", "\ndev 4096 8 "); /* a row of format 4 */
    reject(dir, ia.path, good, "\nstrides 2 8\n", "\nstrides 2 16\n");
    reject(dir, ia.path, good, "\nstrides 2 8\n", "\n");
    reject(dir, ia.path, good, "\ndevice ", "\ndevice Foreign GPU 9000 ");
    reject(dir, ia.path, good, "\nlibrary ", "\nlibrary 0.0.0-");
    reject(dir, ia.path, good, "\nend\n", "\n"); /* truncated */
    reject(dir, ia.path, good, "mpigpu-calibration 5", "mpigpu-calibration 4");
    reject(dir, ia.path, good, "\nmap ", "\nmap x");
    reject(dir, ia.path, good, "\nmap ", "\nmaps ");
    reject(dir, ia.path, good, "\nmap ", "\nmap 7.0\nend\nmap "); /* one value: format 3 */
    if (strstr(good, "\nmap -\n")) {
        reject(dir, ia.path, good, "\nmap -\n", "\nmap 2 1.0 2.0 3.0 4.0\n"); /* one stride */
    } else {
        reject(dir, ia.path, good, "\nmap 2 ", "\nmap 8 ");     /* strides out of order */
        reject(dir, ia.path, good, "\nmap 8 ", "\nmap 2.0 ");   /* a stride not the grid's */
        reject(dir, ia.path, good, "\nmap 8 ", "\nmap 8 1.0 "); /* four values */
        reject(dir, ia.path, good, "\nmap 2 ", "\nmap ");       /* format 4's line */
    }
    reject(dir, ia.path, good, "\nruns ", "\nruns -");
    reject(dir, ia.path, good, "\nruns ", "\nruns x");
    reject(dir, ia.path, good, "\nruns ", "\nrun ");
    reject(dir, ia.path, good, "\nend\n", "\nend\ntrailing garbage\n");
    /* Binary garbage and an empty file. */
    spit(ia.path, "\x7f"
                  "ELF\x01\x02\x03\n\n\n");
    a = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    ck_assert_int_eq(info_of(a).source, MGPK_CAL_MEASURED);
    mgpk_ctx_free(a);
    spit(ia.path, "");
    a = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    ck_assert_int_eq(info_of(a).source, MGPK_CAL_MEASURED);
    mgpk_ctx_free(a);
    free(good);
}
END_TEST

/* Pack count instances of v into host or device memory with the given
   context and flags; checks the bytes and returns what moved them. */
static const char *pack_what(mgpk_ctx_t *ctx, vec_t *v, int64_t count, int to_host, int flags)
{
    int64_t ext = count * v->t.extent, n = count * v->t.size, bl = v->t.shape.blocklen;
    unsigned char *src = malloc((size_t)ext), *out = malloc((size_t)n);
    cl_int err;
    for (int64_t i = 0; i < ext; i++)
        src[i] = (unsigned char)(i * 7 + i / 251);
    cl_mem m =
        clCreateBuffer(g_cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, (size_t)ext, src, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    cl_mem p = clCreateBuffer(g_cl, CL_MEM_READ_WRITE, (size_t)n, NULL, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    mgpk_buf_t dst = to_host ? (mgpk_buf_t){.host = out} : (mgpk_buf_t){.mem = p};
    int rc = mgpk_pack(ctx, &v->t, count, (mgpk_buf_t){.mem = m}, dst, 0, n, flags);
    ck_assert_msg(rc == MPI_SUCCESS, "mgpk_pack: %s", mgerr_get(rc));
    if (!to_host)
        ck_assert_int_eq(clEnqueueReadBuffer(g_q, p, CL_TRUE, 0, (size_t)n, out, 0, NULL, NULL),
                         CL_SUCCESS);
    for (int64_t i = 0; i < n; i++) {
        int64_t blk = i / bl,
                off = (blk / 4) * v->t.extent + (blk % 4) * v->t.shape.stride + i % bl;
        ck_assert_msg(out[i] == src[off], "byte %lld", (long long)i);
    }
    clReleaseMemObject(m);
    clReleaseMemObject(p);
    free(src);
    free(out);
    mgpk_stats_t st;
    mgpk_ctx_stats(ctx, &st);
    return st.last_what;
}

/* A cache directory g_dir/sub with this device's measured table in it
   (its path in *ia), and in text the header lines of a crafted table for
   this device; returns the length written. */
static int crafted_start(char *dir, size_t dlen, const char *sub, char *text, mgpk_calib_info_t *ia)
{
    char name[256], driver[256];
    snprintf(dir, dlen, "%s/%s", g_dir, sub);
    mkdir(g_dir, 0700);
    mkdir(dir, 0700);
    mgpk_ctx_t *a = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    *ia = info_of(a);
    mgpk_ctx_free(a);
    ck_assert_int_eq(clGetDeviceInfo(g_dev, CL_DEVICE_NAME, sizeof(name), name, NULL), CL_SUCCESS);
    ck_assert_int_eq(clGetDeviceInfo(g_dev, CL_DRIVER_VERSION, sizeof(driver), driver, NULL),
                     CL_SUCCESS);
    return snprintf(text, 1 << 16,
                    "mpigpu-calibration 5\ndevice %s\ndriver %s\nlibrary %s\n"
                    "sizes 4096 262144 1048576 8388608\nblocks 8 64 512\nstrides 2 8\n",
                    name, driver, PACKAGE_VERSION);
}

/* A crafted table in the cache: auto takes each cell's fastest method, a
   forced method (context or call) wins over it. */
START_TEST(test_choice)
{
    char dir[300], *text = calloc(1, 1 << 16);
    mgpk_calib_info_t ia;
    int len = crafted_start(dir, sizeof(dir), "c", text, &ia);
    /* Winner per cell: device side, block 8 -> kernel, 64 -> copy, 512 ->
       copy; host side, 4 KiB -> host, 256 KiB -> copy, 8 MiB -> kernel.
       Both strides alike: no sparseness changes a choice. */
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2; k++)
            for (int s = 0; s < MGPK_CAL_NSIZES; s++)
                for (int b = 0; b < 3; b++) {
                    int win = d == 0 ? (b == 0 ? 0 : 1) : (s == 0 ? 2 : s == 1 ? 1 : 0);
                    double t[3] = {100, 100, 100};
                    t[win] = 10;
                    if (d == 1 && s == 1)
                        t[2] = 5; /* the walk alone; a map adds 95 */
                    len += snprintf(text + len, (1 << 16) - len, "%s %lld %lld %lld %.1f %.1f ",
                                    d ? "host" : "dev", (long long)ia.strides[k],
                                    (long long)ia.sizes[s], (long long)ia.blocks[b], t[0], t[1]);
                    len += snprintf(text + len, (1 << 16) - len, d ? "%.1f\n" : "-\n", t[2]);
                }
    strcat(text, "runs 5.0 5.0\nmap 2 5.0 95.0 95.0 95.0\nmap 8 5.0 95.0 95.0 95.0\nend\n");
    spit(ia.path, text);

    mgpk_ctx_t *ctx = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    ck_assert_int_eq(info_of(ctx).source, MGPK_CAL_CACHED);
    vec_t v8, v64, v512;
    mk_vec(&v8, 8);
    mk_vec(&v64, 64);
    mk_vec(&v512, 512);
    /* The choices against the table (nearest cells). */
    ck_assert_int_eq(mgpk_method_choose(ctx, &v8.t, 4096, 4096 * 32, 0, 1, 0), MGPK_METHOD_KERNEL);
    ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 1024, 1024 * 256, 0, 1, 0), MGPK_METHOD_COPY);
    ck_assert_int_eq(mgpk_method_choose(ctx, &v512.t, 8, 8 * 2048, 0, 1, 0), MGPK_METHOD_COPY);
    ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 16, 16 * 256, 1, 1, 0), MGPK_METHOD_HOST);
    ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 16, 16 * 256, 1, 0, 0), MGPK_METHOD_KERNEL);
    ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 1024, 1024 * 256, 1, 1, 0), MGPK_METHOD_COPY);
    ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 1024, 1024 * 256, 1, 1, MGPK_F_EXTERNAL32),
                     MGPK_METHOD_KERNEL);
    ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 1 << 16, (1 << 16) * 256, 1, 1, 0),
                     MGPK_METHOD_KERNEL);
    /* Host staging of a zero-copy buffer pays no map (the walk's 5 us; a
       map adds 95 at 256 KiB): it beats the copy's 10 us where the map made
       it lose. */
    ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 1024, 1024 * 256, 1, 1, MGPK_F_ZERO_COPY),
                     MGPK_METHOD_HOST);
    ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 1024, 1024 * 256, 1, 0, MGPK_F_ZERO_COPY),
                     MGPK_METHOD_COPY);
    /* Repeated calls come from the last decision (ctx->memo), and a call that
       differs in any part of its key gets its own. */
    for (int rep = 0; rep < 2; rep++) {
        ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 16, 16 * 256, 1, 1, 0), MGPK_METHOD_HOST);
        ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 16, 16 * 256, 1, 1, 0), MGPK_METHOD_HOST);
        ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 16, 16 * 256, 1, 0, 0),
                         MGPK_METHOD_KERNEL);
        ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 1024, 1024 * 256, 0, 1, 0),
                         MGPK_METHOD_COPY);
        ck_assert_int_eq(mgpk_method_choose(ctx, &v8.t, 4096, 4096 * 32, 0, 1, 0),
                         MGPK_METHOD_KERNEL);
        ck_assert_int_eq(mgpk_method_choose(ctx, &v64.t, 1024, 1024 * 256, 1, 1, MGPK_F_EXTERNAL32),
                         MGPK_METHOD_KERNEL);
    }
    /* A pack to host asks with and without host staging allowed (the device
       layer, then the engine): alternating, both keys stay remembered. */
    mgpk_stats_t s0, s1;
    mgpk_ctx_stats(ctx, &s0);
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(mgpk_method_choose(ctx, &v8.t, 64, 64 * 32, 1, 1, 0),
                         mgpk_method_choose(ctx, &v8.t, 64, 64 * 32, 1, 1, 0));
        mgpk_method_choose(ctx, &v8.t, 64, 64 * 32, 1, 0, 0);
    }
    mgpk_ctx_stats(ctx, &s1);
    ck_assert_int_eq(s1.choices - s0.choices, 2);
    /* And the packs run what was chosen, with the right bytes. */
    ck_assert_str_eq(pack_what(ctx, &v8, 4096, 0, 0), "vector kernel");
    ck_assert_str_eq(pack_what(ctx, &v64, 1024, 0, 0), "copy commands");
    ck_assert_str_eq(pack_what(ctx, &v64, 1024, 1, 0), "copy commands");
    ck_assert_str_eq(pack_what(ctx, &v64, 16, 1, 0), "vector kernel"); /* host: not the engine's */
    /* A forced method wins: per call, and per context. */
    ck_assert_str_eq(pack_what(ctx, &v64, 1024, 0, MGPK_F_METHOD(MGPK_METHOD_KERNEL)),
                     "vector kernel");
    ck_assert_str_eq(pack_what(ctx, &v8, 4096, 0, MGPK_F_METHOD(MGPK_METHOD_COPY)),
                     "copy commands");
    mgpk_ctx_t *k = mk(MGPK_METHOD_KERNEL, MGPK_CALIB_ON, dir);
    ck_assert_str_eq(pack_what(k, &v64, 1024, 0, 0), "vector kernel");
    mgpk_ctx_t *c = mk(MGPK_METHOD_COPY, MGPK_CALIB_ON, dir);
    ck_assert_str_eq(pack_what(c, &v8, 4096, 0, 0), "copy commands");
    /* Grid cells. */
    int si, bi;
    mgpk_calib_cell(100, 3, &si, &bi);
    ck_assert(si == 0 && bi == 0);
    mgpk_calib_cell(1 << 19, 128, &si, &bi);
    ck_assert(si == 1 && bi == 1);
    mgpk_calib_cell(2 << 20, 16, &si, &bi);
    ck_assert(si == 2 && bi == 0);
    mgpk_calib_cell((int64_t)1 << 30, 1 << 20, &si, &bi);
    ck_assert(si == 3 && bi == 2);
    ck_assert_int_eq(mgpk_calib_blocklen(&v64.t, 3, 3 * 256), 64);
    /* Without a shape the copy method takes one command per run: 4 runs of
       64 B cost 10 + 3 x 5 us with this table's "runs" (copy wins against
       the kernel's 100), 10 + 3 x 50 with another (the kernel wins); the
       shaped vector is one rectangle either way. */
    vec_t g;
    mk_vec(&g, 64);
    g.t.shape.kind = MGDT_SHAPE_GENERIC;
    ck_assert_int_eq(mgpk_method_choose(ctx, &g.t, 1, 256, 0, 1, 0), MGPK_METHOD_COPY);
    char *runs = strstr(text, "runs 5.0 5.0\n");
    ck_assert_ptr_nonnull(runs);
    strcpy(runs, "runs 50.0 50.0\nmap 2 5.0 95.0 95.0 95.0\nmap 8 5.0 95.0 95.0 95.0\nend\n");
    spit(ia.path, text);
    mgpk_ctx_t *r = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    ck_assert_int_eq(info_of(r).source, MGPK_CAL_CACHED);
    ck_assert_int_eq(mgpk_method_choose(r, &g.t, 1, 256, 0, 1, 0), MGPK_METHOD_KERNEL);
    ck_assert_int_eq(mgpk_method_choose(r, &v64.t, 1, 256, 0, 1, 0), MGPK_METHOD_COPY);
    mgpk_ctx_free(r);
    vec_free(&g);
    /* On a GPU that other processes share, a kernel and a copy between device
       buffers count a context switch more (MPIGPU_KERNEL_SWITCH): the
       kernel's 10 us + 95 still beats the copy's 100 + 95. */
    ck_assert_int_eq(mgpk_method_choose(ctx, &v8.t, 4096, 4096 * 32, 0, 1, 0), MGPK_METHOD_KERNEL);
    mgpk_ctx_set_kernel_switch(ctx, 95);
    ck_assert_int_eq(mgpk_method_choose(ctx, &v8.t, 4096, 4096 * 32, 0, 1, 0), MGPK_METHOD_KERNEL);
    mgpk_ctx_set_kernel_switch(ctx, 0);
    /* With rectangles straight to host (settings.inline_max 16 MiB), a shaped
       range to or from host of at most inline_max bytes takes the copy
       method on a shared GPU, although the table's kernel wins at 8 MiB;
       not on the device, not past inline_max, not on an unshared GPU, and
       setting the switch forgets the remembered choices. */
    mgpk_settings_t is = {.method = MGPK_METHOD_AUTO,
                          .calibrate = MGPK_CALIB_ON,
                          .cache_dir = dir,
                          .inline_max = 16 << 20};
    mgpk_ctx_t *in = NULL;
    ck_assert_int_eq(mgpk_ctx_create(g_cl, g_dev, g_q, &is, &in), MPI_SUCCESS);
    int64_t n8 = 1 << 18, n32 = 1 << 20; /* 8 and 32 MiB of v8 */
    ck_assert_int_eq(mgpk_method_choose(in, &v8.t, n8, n8 * 32, 1, 0, 0), MGPK_METHOD_KERNEL);
    mgpk_ctx_set_kernel_switch(in, 95);
    ck_assert_int_eq(mgpk_method_choose(in, &v8.t, n8, n8 * 32, 1, 0, 0), MGPK_METHOD_COPY);
    ck_assert_int_eq(mgpk_method_choose(in, &v8.t, n8, n8 * 32, 0, 0, 0), MGPK_METHOD_KERNEL);
    ck_assert_int_eq(mgpk_method_choose(in, &v8.t, n32, n32 * 32, 1, 0, 0), MGPK_METHOD_KERNEL);
    mgpk_ctx_set_kernel_switch(in, 0);
    ck_assert_int_eq(mgpk_method_choose(in, &v8.t, n8, n8 * 32, 1, 0, 0), MGPK_METHOD_KERNEL);
    mgpk_ctx_free(in);
    mgpk_ctx_free(ctx);
    mgpk_ctx_free(k);
    mgpk_ctx_free(c);
    vec_free(&v8);
    vec_free(&v64);
    vec_free(&v512);
    free(text);
}
END_TEST

/* mgpk_method_cost: the estimate of the method a call would run, from a
   crafted table (every cell: kernel 10 us, copy 40, host 100 on the host
   side; 5 us a further run; both strides alike). */
START_TEST(test_cost)
{
    char dir[300], *text = calloc(1, 1 << 16);
    mgpk_calib_info_t ia;
    int len = crafted_start(dir, sizeof(dir), "cost", text, &ia);
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2; k++)
            for (int s = 0; s < MGPK_CAL_NSIZES; s++)
                for (int b = 0; b < 3; b++)
                    len += snprintf(text + len, (1 << 16) - len, "%s %lld %lld %lld 10.0 40.0 %s\n",
                                    d ? "host" : "dev", (long long)ia.strides[k],
                                    (long long)ia.sizes[s], (long long)ia.blocks[b],
                                    d ? "100.0" : "-");
    strcat(text, "runs 5.0 5.0\nmap 2 5.0 5.0 5.0 5.0\nmap 8 5.0 5.0 5.0 5.0\nend\n");
    spit(ia.path, text);
    mgpk_settings_t is = {.method = MGPK_METHOD_AUTO,
                          .calibrate = MGPK_CALIB_ON,
                          .cache_dir = dir,
                          .inline_max = 16 << 20};
    mgpk_ctx_t *ctx = NULL;
    ck_assert_int_eq(mgpk_ctx_create(g_cl, g_dev, g_q, &is, &ctx), MPI_SUCCESS);
    vec_t v, g, c;
    mk_vec(&v, 64);
    mk_vec(&g, 64);
    g.t.shape.kind = MGDT_SHAPE_GENERIC;
    mk_vec_s(&c, 64, 1); /* one run */
    mgpk_method_t m = MGPK_METHOD_AUTO;
    mgpk_stats_t s0, s1;
    mgpk_ctx_stats(ctx, &s0);
    /* auto: the kernel's 10 us; a forced copy: the copy's 40 */
    ck_assert(dabs(mgpk_method_cost(ctx, &v.t, 16, 0, 0, &m) - 10e-6) < 1e-9);
    ck_assert_int_eq(m, MGPK_METHOD_KERNEL);
    ck_assert(dabs(mgpk_method_cost(ctx, &v.t, 16, 1, MGPK_F_METHOD(MGPK_METHOD_COPY), &m) -
                   40e-6) < 1e-9);
    ck_assert_int_eq(m, MGPK_METHOD_COPY);
    /* without a shape a copy takes a command per run: 4 runs, 40 + 3 x 5 */
    ck_assert(dabs(mgpk_method_cost(ctx, &g.t, 1, 0, MGPK_F_METHOD(MGPK_METHOD_COPY), &m) - 55e-6) <
              1e-9);
    /* one run: one transfer, the copy's time */
    ck_assert(dabs(mgpk_method_cost(ctx, &c.t, 4, 0, 0, &m) - 40e-6) < 1e-9);
    ck_assert_int_eq(m, MGPK_METHOD_COPY);
    ck_assert(mgpk_method_cost(ctx, &v.t, 0, 0, 0, NULL) == 0);
    /* a shared GPU: 95 us more for a kernel and a copy between device
       buffers, none for a transfer or a rectangle copy straight to host
       (inline_max 16 MiB), which auto then takes */
    mgpk_ctx_set_kernel_switch(ctx, 95);
    ck_assert(dabs(mgpk_method_cost(ctx, &v.t, 16, 0, 0, &m) - 105e-6) < 1e-9);
    ck_assert_int_eq(m, MGPK_METHOD_KERNEL);
    ck_assert(dabs(mgpk_method_cost(ctx, &v.t, 16, 0, MGPK_F_METHOD(MGPK_METHOD_COPY), &m) -
                   135e-6) < 1e-9);
    ck_assert(dabs(mgpk_method_cost(ctx, &v.t, 16, 1, 0, &m) - 40e-6) < 1e-9);
    ck_assert_int_eq(m, MGPK_METHOD_COPY);
    ck_assert(dabs(mgpk_method_cost(ctx, &c.t, 4, 0, 0, &m) - 40e-6) < 1e-9);
    /* estimates are no decisions: nothing counted */
    mgpk_ctx_stats(ctx, &s1);
    ck_assert_int_eq(s1.choices, s0.choices);
    /* no table: no estimate */
    mgpk_ctx_t *st = mk(MGPK_METHOD_AUTO, MGPK_CALIB_OFF, dir);
    ck_assert(mgpk_method_cost(st, &v.t, 16, 0, 0, &m) < 0);
    mgpk_ctx_free(st);
    mgpk_ctx_free(ctx);
    vec_free(&v);
    vec_free(&g);
    vec_free(&c);
    free(text);
}
END_TEST

/* The sparseness axis: a crafted table where the kernel wins on the dense
   vector and host staging on the sparse one (host side, every cell: kernel
   10 us dense and 60 us sparse, copy 100, host 20 and no map).  A call's
   estimate interpolates in log scale between the two by how sparse its data
   lies: half of the span packed (x = 1) to an eighth (x = 4). */
START_TEST(test_sparse)
{
    char dir[300], *text = calloc(1, 1 << 16);
    mgpk_calib_info_t ia;
    int len = crafted_start(dir, sizeof(dir), "d", text, &ia);
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2; k++)
            for (int s = 0; s < MGPK_CAL_NSIZES; s++)
                for (int b = 0; b < 3; b++)
                    len += snprintf(text + len, (1 << 16) - len,
                                    "%s %lld %lld %lld %.1f 100.0 %s\n", d ? "host" : "dev",
                                    (long long)ia.strides[k], (long long)ia.sizes[s],
                                    (long long)ia.blocks[b], k ? 60.0 : 10.0, d ? "20.0" : "-");
    strcat(text, "runs 5.0 5.0\nmap -\nend\n");
    spit(ia.path, text);
    mgpk_ctx_t *ctx = mk(MGPK_METHOD_AUTO, MGPK_CALIB_ON, dir);
    ck_assert_int_eq(info_of(ctx).source, MGPK_CAL_CACHED);
    /* Block stride over block length 2, 3, 5 and 16: x = 1, 1.5, 2.5 and 8.
       The kernel's estimate is 10, 16.9, 32.7 and 60 us against host
       staging's 20 (40 at x = 8 on a discrete device, where staging reads
       the whole span). */
    static const int64_t sm[4] = {2, 3, 5, 16};
    static const mgpk_method_t want[4] = {MGPK_METHOD_KERNEL, MGPK_METHOD_KERNEL, MGPK_METHOD_HOST,
                                          MGPK_METHOD_HOST};
    for (int i = 0; i < 4; i++) {
        vec_t v;
        mk_vec_s(&v, 64, sm[i]);
        ck_assert_msg(mgpk_method_choose(ctx, &v.t, 1024, 1024 * 256, 1, 1, 0) == want[i],
                      "stride %lld block lengths", (long long)sm[i]);
        /* Without host staging allowed, and device to device: the kernel. */
        ck_assert_int_eq(mgpk_method_choose(ctx, &v.t, 1024, 1024 * 256, 1, 0, 0),
                         MGPK_METHOD_KERNEL);
        ck_assert_int_eq(mgpk_method_choose(ctx, &v.t, 1024, 1024 * 256, 0, 1, 0),
                         MGPK_METHOD_KERNEL);
        /* A type without a shape stages on the host alike (the library's
           walk, whatever the shape), but never in external32. */
        v.t.shape.kind = MGDT_SHAPE_GENERIC;
        ck_assert_int_eq(mgpk_method_choose(ctx, &v.t, 1024, 1024 * 256, 1, 1, 0), want[i]);
        ck_assert_int_eq(mgpk_method_choose(ctx, &v.t, 1024, 1024 * 256, 1, 1, MGPK_F_EXTERNAL32),
                         MGPK_METHOD_KERNEL);
        vec_free(&v);
    }
    mgpk_ctx_free(ctx);
    free(text);
}
END_TEST

int main(void)
{
    cl_platform_id pf;
    cl_int err;
    ENV_CHECK(clGetPlatformIDs(1, &pf, NULL) == CL_SUCCESS, "clGetPlatformIDs");
    ENV_CHECK(clGetDeviceIDs(pf, CL_DEVICE_TYPE_ALL, 1, &g_dev, NULL) == CL_SUCCESS,
              "clGetDeviceIDs");
    g_cl = clCreateContext(NULL, 1, &g_dev, NULL, NULL, &err);
    ENV_CHECK(err == CL_SUCCESS, "clCreateContext");
    g_q = clCreateCommandQueue(g_cl, g_dev, 0, &err);
    ENV_CHECK(err == CL_SUCCESS, "clCreateCommandQueue");
    snprintf(g_dir, sizeof(g_dir), "/tmp/mgpk-calib-%ld", (long)getpid());
    Suite *s = suite_create("calib");
    TCase *tc = tcase_create("calib");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_measure_and_cache);
    tcase_add_test(tc, test_corrupt);
    tcase_add_test(tc, test_choice);
    tcase_add_test(tc, test_cost);
    tcase_add_test(tc, test_sparse);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    /* The OpenCL context was made before the fork check would do. */
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "test_calib: could not remove %s\n", g_dir);
    clReleaseCommandQueue(g_q);
    clReleaseContext(g_cl);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
