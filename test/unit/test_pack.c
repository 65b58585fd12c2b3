/*
 * Unit tests of the pack engine on the first OpenCL device (PoCL in CI):
 * every path and kernel against a reference enumeration of hand-built types.
 * MGPK_TEST_SMALL=1 runs a subset that still launches every kernel family
 * and width once (for check-oclgrind, which also sets MGPK_TEST_OCLGRIND=1
 * to leave out the two long pipeline tests whose kernels the others run).
 * MGPK_TEST_CACHE=1 keeps the program cache on in the subset: under
 * valgrind, building the programs from source in every test is what takes
 * the time.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mgerr.h"
#include "mgpk.h"
#include "test_pack_types.h"

/* The datatype engine is not linked: attach the pack engine's state here. */
void mgdt_type_set_user(const mgdt_type_t *type, void *user, void (*user_free)(void *))
{
    mgdt_type_t *t = (mgdt_type_t *)type;
    t->user = user;
    t->user_free = user_free;
}

static void tt_free(mgdt_type_t *t)
{
    if (t->user && t->user_free)
        t->user_free(t->user);
    free(t->nodes);
    free(t->lookaside);
    free(t);
}

/* ---- the device ----------------------------------------------------------- */

static cl_context g_cl;
static cl_device_id g_dev;
static cl_command_queue g_q;
static int g_small, g_oclgrind, g_cache_on;
static int g_map_max; /* map_max of the contexts made by mk_ctx_full */
static int g_grid;    /* grid_words of the contexts made by mk_ctx_full */
static char g_cache[256];

/* Outside a test: no ck_assert. */
#define ENV_CHECK(cond_, what_)                                                                    \
    do {                                                                                           \
        if (!(cond_)) {                                                                            \
            fprintf(stderr, "test_pack: %s failed\n", (what_));                                    \
            exit(EXIT_FAILURE);                                                                    \
        }                                                                                          \
    } while (0)

static void env_setup(void)
{
    cl_platform_id pf;
    cl_int err;
    g_small = getenv("MGPK_TEST_SMALL") && atoi(getenv("MGPK_TEST_SMALL"));
    g_oclgrind = getenv("MGPK_TEST_OCLGRIND") && atoi(getenv("MGPK_TEST_OCLGRIND"));
    g_cache_on = !g_small || (getenv("MGPK_TEST_CACHE") && atoi(getenv("MGPK_TEST_CACHE")));
    ENV_CHECK(clGetPlatformIDs(1, &pf, NULL) == CL_SUCCESS, "clGetPlatformIDs");
    ENV_CHECK(clGetDeviceIDs(pf, CL_DEVICE_TYPE_ALL, 1, &g_dev, NULL) == CL_SUCCESS,
              "clGetDeviceIDs");
    g_cl = clCreateContext(NULL, 1, &g_dev, NULL, NULL, &err);
    ENV_CHECK(err == CL_SUCCESS, "clCreateContext");
    g_q = clCreateCommandQueue(g_cl, g_dev, 0, &err);
    ENV_CHECK(err == CL_SUCCESS, "clCreateCommandQueue");
    snprintf(g_cache, sizeof(g_cache), "/tmp/mgpk-test-%ld", (long)getpid());
    for (int i = 0; i < NCASES; i++)
        types[i] = makers[i]();
}

static void env_teardown(void)
{
    for (int i = 0; i < NCASES; i++)
        tt_free(types[i]);
    clReleaseCommandQueue(g_q);
    clReleaseContext(g_cl);
}

static mgpk_ctx_t *mk_ctx_full(mgpk_method_t method, int force_pipeline, size_t chunk, size_t span,
                               int copy_threads)
{
    char dir[300];
    snprintf(dir, sizeof(dir), "%s/shared", g_cache);
    mgpk_settings_t s = {.method = method,
                         .force_pipeline = force_pipeline,
                         .chunk_bytes = chunk,
                         .span_bytes = span,
                         .copy_threads = copy_threads,
                         .map_max = g_map_max,
                         .grid_words = g_grid,
                         /* auto is the kernel method here; test_calib tests the table */
                         .calibrate = MGPK_CALIB_OFF,
                         .cache_dir = g_cache_on ? dir : NULL,
                         .verbose = getenv("MGPK_TEST_VERBOSE") != NULL};
    mgpk_ctx_t *ctx = NULL;
    int rc = mgpk_ctx_create(g_cl, g_dev, g_q, &s, &ctx);
    ck_assert_msg(rc == MPI_SUCCESS, "mgpk_ctx_create: %s", mgerr_get(rc));
    return ctx;
}

static mgpk_ctx_t *mk_ctx_span(mgpk_method_t method, int force_pipeline, size_t chunk, size_t span)
{
    return mk_ctx_full(method, force_pipeline, chunk, span, 0);
}

static mgpk_ctx_t *mk_ctx(mgpk_method_t method, int force_pipeline, size_t chunk)
{
    return mk_ctx_span(method, force_pipeline, chunk, 0);
}

static mgdt_type_t *generic_copy(const mgdt_type_t *t)
{
    mgdt_type_t *g = malloc(sizeof(*g));
    *g = *t;
    g->nodes = malloc(t->nnodes * sizeof(mgdt_node_t));
    memcpy(g->nodes, t->nodes, t->nnodes * sizeof(mgdt_node_t));
    g->lookaside = malloc((t->nlookaside ? t->nlookaside : 1) * sizeof(int64_t));
    memcpy(g->lookaside, t->lookaside, t->nlookaside * sizeof(int64_t));
    g->shape.kind = MGDT_SHAPE_GENERIC;
    g->user = NULL;
    g->user_free = NULL;
    return g;
}

/* ---- one call against the reference --------------------------------------- */

typedef struct run {
    mgpk_ctx_t *ctx;
    const mgdt_type_t *t;
    int64_t count, shift; /* shift: extra offset of the typed origin */
    int64_t first, n;     /* n < 0: to the end */
    int dev;              /* packed side on the device */
    int64_t pshift;       /* offset of the packed side */
    int flags;
    int unpack;
    int pinned;                 /* mark the host packed side page-locked */
    const mgpk_block_t *blocks; /* mgpk_pack_multi of these blocks of t (count 1, whole) */
    int nblocks;
} run_t;

static unsigned char pat(int64_t i, int seed)
{
    return (unsigned char)(i * 131 + 7 + seed * 29);
}

static cl_mem dev_buf(size_t len, const void *init)
{
    cl_int err;
    cl_mem m =
        clCreateBuffer(g_cl, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, len, (void *)init, &err);
    ck_assert_int_eq(err, CL_SUCCESS);
    return m;
}

static void dev_read(cl_mem m, size_t len, void *out)
{
    ck_assert_int_eq(clEnqueueReadBuffer(g_q, m, CL_TRUE, 0, len, out, 0, NULL, NULL), CL_SUCCESS);
}

/* Runs r and checks every byte of both sides; returns the width used. */
/* Index of the first byte where a and b differ, or n. */
static int64_t first_diff(const unsigned char *a, const unsigned char *b, int64_t n)
{
    int64_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
}

static int check(run_t r)
{
    const mgdt_type_t *t = r.t;
    int64_t total = r.count * t->size, lo = INT64_MAX, hi = INT64_MIN;
    int64_t n = r.n < 0 ? total - r.first : r.n;
    for (int64_t k = 0; k < r.count; k++) {
        lo = tb_min(lo, k * t->extent + t->true_lb);
        hi = tb_max(hi, k * t->extent + t->true_ub);
    }
    int64_t origin = -lo + r.shift, ulen = hi - lo + r.shift + 32, plen = n + r.pshift + 64;
    int64_t *map = malloc(sizeof(int64_t) * (total + 1)),
            *swp = malloc(sizeof(int64_t) * (total + 1));
    unsigned char *user = malloc(ulen), *uexp = malloc(ulen), *uout = malloc(ulen);
    unsigned char *pk = aligned_alloc(64, (plen + 63) / 64 * 64), *pexp = malloc(plen);
    ref_map(t, r.count, map, swp);
    const int64_t *m = (r.flags & MGPK_F_EXTERNAL32) ? swp : map;
    for (int64_t i = 0; i < ulen; i++)
        user[i] = uexp[i] = pat(i, 1);
    for (int64_t i = 0; i < plen; i++)
        pk[i] = pexp[i] = r.unpack ? pat(i, 2) : 0xee;
    for (int64_t i = 0; i < n; i++) {
        if (r.unpack)
            uexp[origin + m[r.first + i]] = pk[r.pshift + i];
        else
            pexp[r.pshift + i] = user[origin + m[r.first + i]];
    }
    cl_mem tm = dev_buf(ulen, user), pm = r.dev ? dev_buf(plen, pk) : NULL;
    mgpk_buf_t typed = {.mem = tm, .offset = origin};
    mgpk_buf_t packed = r.dev ? (mgpk_buf_t){.mem = pm, .offset = r.pshift}
                              : (mgpk_buf_t){.host = pk + r.pshift, .pinned = r.pinned};
    int rc;
    if (r.blocks)
        rc = r.unpack ? mgpk_unpack_multi(r.ctx, t, r.blocks, r.nblocks, packed, typed, r.flags)
                      : mgpk_pack_multi(r.ctx, t, r.blocks, r.nblocks, typed, packed, r.flags);
    else
        rc = r.unpack ? mgpk_unpack(r.ctx, t, r.count, packed, typed, r.first, n, r.flags)
                      : mgpk_pack(r.ctx, t, r.count, typed, packed, r.first, n, r.flags);
    ck_assert_msg(rc == MPI_SUCCESS, "rc %d: %s", rc, mgerr_get(rc));
    dev_read(tm, ulen, uout);
    if (r.dev)
        dev_read(pm, plen, pk);
    /* Check reports every ck_assert to its runner through a pipe, so assert
       once per buffer and name the first differing byte. */
    int64_t ud = first_diff(uout, uexp, ulen), pd = first_diff(pk, pexp, plen);
    ck_assert_msg(ud == ulen, "%s: user byte %lld: %d != %d (first %lld n %lld)",
                  r.unpack ? "unpack" : "pack", (long long)(ud - origin), ud < ulen ? uout[ud] : 0,
                  ud < ulen ? uexp[ud] : 0, (long long)r.first, (long long)n);
    ck_assert_msg(pd == plen, "%s: packed byte %lld: %d != %d (first %lld n %lld)",
                  r.unpack ? "unpack" : "pack", (long long)(pd - r.pshift), pd < plen ? pk[pd] : 0,
                  pd < plen ? pexp[pd] : 0, (long long)r.first, (long long)n);
    clReleaseMemObject(tm);
    if (pm)
        clReleaseMemObject(pm);
    free(map), free(swp), free(user), free(uexp), free(uout), free(pk), free(pexp);
    mgpk_stats_t st;
    mgpk_ctx_stats(r.ctx, &st);
    return st.last_width;
}

/* Both directions, host and device packed side. */
static void check4(run_t r)
{
    for (int unpack = 0; unpack < 2; unpack++)
        for (int dev = 0; dev < 2; dev++) {
            r.unpack = unpack;
            r.dev = dev;
            check(r);
        }
}

static int case_used(int c)
{
    return !g_small || c == C_VEC || c == C_STRUCT || c == C_SUB3;
}

/* ---- tests ------------------------------------------------------------------ */

START_TEST(test_whole)
{
    mgpk_ctx_t *ctx = mk_ctx(MGPK_METHOD_AUTO, 0, 0);
    for (int c = 0; c < NCASES; c++)
        for (int64_t count = 1; count <= 3; count += 2)
            for (int64_t shift = 0; shift <= 5; shift += 5)
                if (case_used(c))
                    check4((run_t){.ctx = ctx,
                                   .t = types[c],
                                   .count = count,
                                   .shift = shift,
                                   .n = -1,
                                   .pshift = 3});
    mgpk_stats_t st;
    mgpk_ctx_stats(ctx, &st);
    ck_assert_str_eq(st.last_path, "device");
    check((run_t){.ctx = ctx, .t = types[C_VEC], .count = 1, .n = -1});
    mgpk_ctx_stats(ctx, &st);
    ck_assert_str_eq(st.last_path, mgpk_ctx_host_unified(ctx) ? "direct" : "pipeline");
    mgpk_ctx_free(ctx);
}
END_TEST

START_TEST(test_partial)
{
    mgpk_ctx_t *ctx = mk_ctx(MGPK_METHOD_AUTO, 0, 0);
    for (int c = 0; c < NCASES; c++) {
        if (!case_used(c))
            continue;
        int64_t size = types[c]->size, total = 3 * size;
        int64_t firsts[] = {1, 3, size - 1, size + 2};
        int64_t ns[] = {1, 5, 2 * size - 3};
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 3; j++) {
                int64_t n = tb_min(ns[j], total - firsts[i]);
                check4((run_t){.ctx = ctx,
                               .t = types[c],
                               .count = 3,
                               .shift = 3,
                               .first = firsts[i],
                               .n = n,
                               .pshift = 1});
            }
    }
    mgpk_ctx_free(ctx);
}
END_TEST

START_TEST(test_pipeline)
{
    mgpk_ctx_t *ctx = mk_ctx(MGPK_METHOD_AUTO, 1, 64);
    for (int c = 0; c < NCASES; c++) {
        if (!case_used(c))
            continue;
        int64_t total = 3 * types[c]->size;
        for (int unpack = 0; unpack < 2; unpack++) {
            check((run_t){.ctx = ctx, .t = types[c], .count = 3, .n = -1, .unpack = unpack});
            check((run_t){.ctx = ctx,
                          .t = types[c],
                          .count = 3,
                          .shift = 1,
                          .first = 7,
                          .n = total - 9,
                          .pshift = 5,
                          .unpack = unpack});
        }
    }
    mgpk_stats_t st;
    mgpk_ctx_stats(ctx, &st);
    ck_assert_str_eq(st.last_path, "pipeline");
    mgpk_ctx_free(ctx);
}
END_TEST

/* Chunks large enough that the copy pool splits them (32 KiB parts): whole
   chunks, a short last chunk, one chunk, and ranges that start and end
   inside parts, with as many threads as parts and with fewer. */
START_TEST(test_pipeline_threads)
{
    const int threads[2] = {4, 3};
    for (int k = 0; k < (g_small ? 1 : 2); k++) {
        mgpk_ctx_t *ctx = mk_ctx_full(MGPK_METHOD_AUTO, 1, 128 << 10, 0, threads[k]);
        const int cases[2] = {C_VEC, C_STRUCT};
        for (int c = 0; c < 2; c++) {
            const mgdt_type_t *t = types[cases[c]];
            int64_t count = ((g_small ? 160 : 700) << 10) / t->size + 1, total = count * t->size;
            for (int unpack = 0; unpack < 2; unpack++) {
                check((run_t){.ctx = ctx, .t = t, .count = count, .n = -1, .unpack = unpack});
                check((run_t){.ctx = ctx,
                              .t = t,
                              .count = count,
                              .shift = 3,
                              .first = 4099,
                              .n = total - 4099 - 77,
                              .pshift = 1,
                              .unpack = unpack});
                check((run_t){.ctx = ctx,
                              .t = t,
                              .count = count,
                              .first = 5,
                              .n = (128 << 10) - 3,
                              .pshift = 2,
                              .unpack = unpack});
            }
        }
        mgpk_stats_t st;
        mgpk_ctx_stats(ctx, &st);
        ck_assert_str_eq(st.last_path, "pipeline");
        ck_assert_int_eq(st.copy_threads, threads[k]);
        mgpk_ctx_free(ctx);
    }
}
END_TEST

/* The host walk split over the copy pool (mgpk_host_pack from 4 MiB of work, or
   512 KiB while a helper is awake): every hand-built type, whole and as a slice,
   against the reference traversal; unpacks into poisoned buffers, whose bytes
   outside the type must stay.  Each type is walked long (always split) and
   short (split only when a helper still watches from the long one). */
START_TEST(test_host_walk)
{
    mgpk_ctx_t *ctx = mk_ctx_full(MGPK_METHOD_AUTO, 0, 0, 0, 3);
    int splits = 0;
    for (int c = 0; c < 2 * NCASES; c++) {
        const mgdt_type_t *t = types[c / 2];
        if (t->size <= 0 || !case_used(c / 2))
            continue;
        int64_t want = c % 2 ? (int64_t)600 << 10 : (int64_t)9 << 19;
        splits += c % 2 == 0;
        int64_t count = want / t->size + 1, total = count * t->size;
        int64_t ext = t->extent > 0 ? t->extent : -t->extent, lo = t->true_lb < 0 ? t->true_lb : 0;
        int64_t span = (count + 1) * (ext > t->true_ub ? ext : t->true_ub) - lo;
        int64_t origin = (t->extent < 0 ? (count - 1) * ext : 0) - lo;
        char *typed = malloc((size_t)span), *u1 = malloc((size_t)span), *u2 = malloc((size_t)span);
        char *p1 = malloc((size_t)total + 1), *p2 = malloc((size_t)total + 1);
        ck_assert(typed && u1 && u2 && p1 && p2);
        for (int64_t i = 0; i < span; i++)
            typed[i] = (char)(i * 131 + c);
        const int64_t slice[2][2] = {{0, total}, {4099, total - 4099 - 77}};
        for (int k = 0; k < 2; k++) {
            int64_t first = slice[k][0], n = slice[k][1];
            memset(p1, 0x5a, (size_t)total + 1);
            memset(p2, 0x5a, (size_t)total + 1);
            mgdt_ref_pack(t, typed + origin, count, p1, first, n);
            ck_assert_int_eq(mgpk_host_pack(ctx, t, typed + origin, p2, first, n, 0), MPI_SUCCESS);
            ck_assert_msg(memcmp(p1, p2, (size_t)total + 1) == 0, "pack: case %d (%s) slice %d",
                          c / 2, c % 2 ? "short" : "long", k);
            memset(u1, 0xa5, (size_t)span);
            memset(u2, 0xa5, (size_t)span);
            mgdt_ref_unpack(t, p1, count, u1 + origin, first, n);
            ck_assert_int_eq(mgpk_host_pack(ctx, t, u2 + origin, p1, first, n, 1), MPI_SUCCESS);
            ck_assert_msg(memcmp(u1, u2, (size_t)span) == 0, "unpack: case %d (%s) slice %d", c / 2,
                          c % 2 ? "short" : "long", k);
        }
        free(typed);
        free(u1);
        free(u2);
        free(p1);
        free(p2);
    }
    mgpk_stats_t st;
    mgpk_ctx_stats(ctx, &st);
    ck_assert_int_eq(st.copy_threads, 3);
    /* Each long walk splits, once per slice and direction. */
    ck_assert_int_ge(st.host_splits, 4 * splits);
    mgpk_ctx_free(ctx);
}
END_TEST

static mgpk_ctx_t *mk_ctx_dma(mgpk_method_t method, size_t chunk, mgpk_dma_t dma)
{
    mgpk_settings_t s = {.method = method,
                         .force_pipeline = 1,
                         .chunk_bytes = chunk,
                         .host_dma = dma,
                         .split_bytes = 256 << 10,
                         .verbose = getenv("MGPK_TEST_VERBOSE") != NULL};
    mgpk_ctx_t *ctx = NULL;
    int rc = mgpk_ctx_create(g_cl, g_dev, g_q, &s, &ctx);
    ck_assert_msg(rc == MPI_SUCCESS, "mgpk_ctx_create: %s", mgerr_get(rc));
    return ctx;
}

static void expect_path(mgpk_ctx_t *ctx, const char *path)
{
    mgpk_stats_t st;
    mgpk_ctx_stats(ctx, &st);
    ck_assert_str_eq(st.last_path, path);
}

/* Transfers straight between device staging and host memory marked pinned
   (MPIGPU_HOST_DMA=auto) or any host memory (on), and the staging ring for
   unmarked memory or under off: many chunks with a short last one, one
   chunk of at least split_bytes (256 KiB here) cut into pieces, one small piece, ranges
   that start and end inside words, the contiguous type's single transfer,
   and the copy method through the same path. */
START_TEST(test_dma)
{
    const mgpk_dma_t modes[3] = {MGPK_DMA_AUTO, MGPK_DMA_ON, MGPK_DMA_OFF};
    const int cases[3] = {C_VEC, C_STRUCT, C_CONTIG};
    /* Small runs (Oclgrind, valgrind): auto only, one chunk cut into pieces
       and the small piece, the vector type. */
    for (int md = 0; md < (g_small ? 1 : 3); md++) {
        for (int chunk = g_small; chunk < 2; chunk++) {
            mgpk_ctx_t *ctx =
                mk_ctx_dma(MGPK_METHOD_AUTO, chunk ? (size_t)4 << 20 : 96 << 10, modes[md]);
            for (int c = 0; c < (g_small ? 1 : 3); c++) {
                const mgdt_type_t *t = types[cases[c]];
                int64_t count = ((g_small ? 1100 : 1500) << 10) / t->size + 1,
                        total = count * t->size;
                for (int unpack = 0; unpack < 2; unpack++)
                    for (int pinned = 0; pinned < 2; pinned++) {
                        run_t r = {.ctx = ctx,
                                   .t = t,
                                   .count = count,
                                   .n = -1,
                                   .unpack = unpack,
                                   .pinned = pinned};
                        const char *want = md == 1 || (md == 0 && pinned) ? "dma" : "pipeline";
                        check(r);
                        expect_path(ctx, want);
                        r.shift = 3, r.first = 4099, r.n = total - 4099 - 77, r.pshift = 1;
                        check(r);
                        expect_path(ctx, want);
                        r.shift = 0, r.first = 5, r.n = 3000, r.pshift = 2;
                        check(r);
                        expect_path(ctx, want);
                    }
            }
            mgpk_ctx_free(ctx);
        }
    }
    /* The copy method, pinned, several chunks. */
    mgpk_ctx_t *ctx = mk_ctx_dma(MGPK_METHOD_COPY, 256 << 10, MGPK_DMA_AUTO);
    for (int unpack = 0; unpack < 2; unpack++) {
        check((run_t){.ctx = ctx,
                      .t = types[C_VEC],
                      .count = (600 << 10) / types[C_VEC]->size + 1,
                      .n = -1,
                      .unpack = unpack,
                      .pinned = 1});
        expect_path(ctx, "dma");
    }
    mgpk_ctx_free(ctx);
}
END_TEST

/* Every W of the generic and the vector kernels, both directions. */
START_TEST(test_widths)
{
    mgpk_ctx_t *ctx = mk_ctx(MGPK_METHOD_KERNEL, 0, 0);
    mgdt_type_t *g = generic_copy(types[C_VEC16]);
    const mgdt_type_t *ts[2] = {g, types[C_VEC16]};
    int64_t shifts[] = {0, 1, 2, 4, 8};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 5; i++)
            for (int unpack = 0; unpack < 2; unpack++) {
                int w = check((run_t){.ctx = ctx,
                                      .t = ts[k],
                                      .count = 2,
                                      .shift = shifts[i],
                                      .n = -1,
                                      .dev = 1,
                                      .unpack = unpack});
                ck_assert_int_eq(w, shifts[i] ? shifts[i] : 16);
            }
    tt_free(g);
    mgpk_ctx_free(ctx);
}
END_TEST

/* Work-item spans of one word (the GPU mapping for W >= 4), a few words, and
   more than a run, with ranges that start and end inside runs and spans. */
START_TEST(test_spans)
{
    size_t spans[] = {1, 3, 16, 4096};
    int cases[] = {C_STRUCT, C_VEC, C_SUB3, C_INDEXED};
    for (int i = 0; i < 4; i++) {
        if (g_small && (spans[i] == 1 || spans[i] == 4096))
            continue;
        mgpk_ctx_t *ctx = mk_ctx_span(MGPK_METHOD_KERNEL, 0, 0, spans[i]);
        for (int c = 0; c < 4; c++) {
            if (g_small && c == 3)
                continue;
            mgdt_type_t *g = generic_copy(types[cases[c]]);
            const mgdt_type_t *ts[2] = {types[cases[c]], g};
            for (int j = 0; j < 2; j++) {
                int64_t total = 3 * ts[j]->size;
                check4((run_t){.ctx = ctx, .t = ts[j], .count = 3, .n = -1});
                check4((run_t){
                    .ctx = ctx, .t = ts[j], .count = 3, .shift = 1, .first = 5, .n = total - 7});
                check((run_t){.ctx = ctx,
                              .t = ts[j],
                              .count = 3,
                              .n = -1,
                              .dev = 1,
                              .flags = MGPK_F_EXTERNAL32});
            }
            tt_free(g);
        }
        mgpk_ctx_free(ctx);
    }
}
END_TEST

/* The generic family's two kernels on every type (as a generic tree): the
   tree walk (map_max < 0) and the byte-offset table of small instances, with
   one-word and longer spans, partial ranges, both directions and sides. */
/* 600 of mk_struct's layout back to back: larger than a map, made of a
   small repeating unit. */
static mgdt_type_t *mk_contig_struct(void)
{
    tb_t b = {.nn = 0};
    tb_node(&b, MGDT_K_CONTIG, 600, 0, 0);
    int s = tb_node(&b, MGDT_K_STRUCT, 2, 0, 0);
    tb_la(&b, s, 3, (int64_t[]){2, 3, 0});
    tb_la(&b, s, 2, (int64_t[]){4, 200});
    int v = tb_node(&b, MGDT_K_VECTOR, 3, 1, 12);
    tb_leaf(&b, 4, 4);
    int l = tb_leaf(&b, 8, 8);
    tb_la(&b, s, 2, (int64_t[]){v, l});
    return tb_type(&b);
}

START_TEST(test_map)
{
    const int map_max[2] = {-1, 4096}; /* 4096: on CPU devices too */
    const size_t spans[2] = {0, 24};
    for (int m = 0; m < 2; m++)
        for (int sp = 0; sp < 2; sp++) {
            g_map_max = map_max[m];
            mgpk_ctx_t *ctx = mk_ctx_span(MGPK_METHOD_KERNEL, 0, 0, spans[sp]);
            g_map_max = 0;
            for (int c = 0; c < NCASES; c++) {
                if (!case_used(c) || types[c]->size == 0)
                    continue;
                mgdt_type_t *g = generic_copy(types[c]);
                int64_t total = 3 * g->size;
                const char *want = m == 1 && g->size <= 4096 ? "map kernel" : "generic kernel";
                mgpk_stats_t st;
                /* One instance (a VECTOR of one child per block is then a
                   unit of that child) and three (the table is rebuilt). */
                check4((run_t){.ctx = ctx, .t = g, .count = 1, .n = -1});
                check4((run_t){.ctx = ctx, .t = g, .count = 3, .n = -1});
                mgpk_ctx_stats(ctx, &st);
                ck_assert_str_eq(st.last_what, want);
                if (total > 8) {
                    check4((run_t){
                        .ctx = ctx, .t = g, .count = 3, .shift = 1, .first = 5, .n = total - 7});
                    mgpk_ctx_stats(ctx, &st);
                    ck_assert_str_eq(st.last_what, want);
                }
                tt_free(g);
            }
            /* A type of 28,800 bytes packed through its 48-byte unit. */
            mgdt_type_t *cs = mk_contig_struct();
            ck_assert_int_gt(cs->size, 4096);
            for (int64_t count = 1; count <= 2; count++) {
                int64_t total = count * cs->size;
                check4((run_t){.ctx = ctx, .t = cs, .count = count, .n = -1});
                check4((run_t){
                    .ctx = ctx, .t = cs, .count = count, .shift = 3, .first = 77, .n = total - 99});
                mgpk_stats_t st;
                mgpk_ctx_stats(ctx, &st);
                ck_assert_str_eq(st.last_what, m == 1 ? "map kernel" : "generic kernel");
            }
            tt_free(cs);
            mgpk_ctx_free(ctx);
        }
}
END_TEST

/* The grid kernels (one launch, 1 to 4 words per work-item strided by the
   grid, no span loop; GPUs by default), forced here on any device: vector,
   subarray and map families, whole and partial ranges, both directions and
   sides, and enough instances for several words per work-item. */
START_TEST(test_grid)
{
    const int words[4] = {1, 2, 3, 4};
    int grid_runs = 0;
    for (int g = 0; g < (g_small ? 2 : 4); g++) {
        g_map_max = 4096;
        g_grid = words[g_small ? 2 * g : g];
        mgpk_ctx_t *ctx = mk_ctx(MGPK_METHOD_KERNEL, 0, 0);
        int want = g_grid;
        g_map_max = 0;
        g_grid = 0;
        for (int c = 0; c < NCASES; c++) {
            if (!case_used(c) || types[c]->size == 0)
                continue;
            const mgdt_type_t *t = types[c];
            const int64_t counts[2] = {3, 101};
            for (int i = 0; i < (g_small ? 1 : 2); i++) {
                int64_t total = counts[i] * t->size;
                check4((run_t){.ctx = ctx, .t = t, .count = counts[i], .n = -1});
                if (total > 12)
                    check4((run_t){.ctx = ctx,
                                   .t = t,
                                   .count = counts[i],
                                   .shift = 3,
                                   .first = 5,
                                   .n = total - 7,
                                   .pshift = 1});
                mgpk_stats_t st;
                mgpk_ctx_stats(ctx, &st);
                if (!strcmp(st.last_what, "vector kernel") ||
                    !strcmp(st.last_what, "subarray kernel") ||
                    !strcmp(st.last_what, "map kernel")) {
                    ck_assert_int_eq(st.last_grid, want);
                    grid_runs++;
                } else if (!strcmp(st.last_what, "generic kernel")) {
                    ck_assert_int_eq(st.last_grid, 0);
                }
            }
        }
        mgpk_ctx_free(ctx);
    }
    ck_assert_int_gt(grid_runs, 4);
}
END_TEST

/* A call's method flag overrides the context's method, both ways. */
START_TEST(test_call_method)
{
    mgpk_ctx_t *kctx = mk_ctx(MGPK_METHOD_KERNEL, 0, 0), *cctx = mk_ctx(MGPK_METHOD_COPY, 0, 0);
    mgpk_stats_t st;
    for (int unpack = 0; unpack < 2; unpack++) {
        run_t r = {.ctx = kctx, .t = types[C_VEC], .count = 3, .n = -1, .dev = 1, .unpack = unpack};
        check(r);
        mgpk_ctx_stats(kctx, &st);
        ck_assert_str_eq(st.last_what, "vector kernel");
        r.flags = MGPK_F_METHOD(MGPK_METHOD_COPY);
        check(r);
        mgpk_ctx_stats(kctx, &st);
        ck_assert_str_eq(st.last_what, "copy commands");
        r.ctx = cctx;
        r.flags = MGPK_F_METHOD(MGPK_METHOD_KERNEL);
        check(r);
        mgpk_ctx_stats(cctx, &st);
        ck_assert_str_eq(st.last_what, "vector kernel");
        r.flags = 0;
        check(r);
        mgpk_ctx_stats(cctx, &st);
        ck_assert_str_eq(st.last_what, "copy commands");
    }
    /* HOST is the caller's business. */
    static char zeros[4096];
    cl_mem m = dev_buf(sizeof(zeros), zeros);
    char out[64];
    ck_assert_int_eq(mgpk_pack(kctx, types[C_VEC], 1, (mgpk_buf_t){.mem = m},
                               (mgpk_buf_t){.host = out}, 0, 8, MGPK_F_METHOD(MGPK_METHOD_HOST)),
                     MPI_ERR_UNSUPPORTED_OPERATION);
    clReleaseMemObject(m);
    mgpk_ctx_free(kctx);
    mgpk_ctx_free(cctx);
}
END_TEST

/* Shape kernels and CONTIG copies give the generic kernels' bytes. */
START_TEST(test_specialized)
{
    mgpk_ctx_t *ctx = mk_ctx(MGPK_METHOD_AUTO, 0, 0);
    int cases[] = {C_LEAF, C_VEC, C_VEC16, C_SUB3, C_SUB2};
    for (int i = 0; i < 5; i++) {
        if (g_small && cases[i] == C_VEC16)
            continue;
        mgdt_type_t *g = generic_copy(types[cases[i]]);
        for (int64_t count = 1; count <= 2; count++) {
            int64_t total = count * g->size;
            unsigned char *a = malloc(total), *b = malloc(total);
            unsigned char *user = calloc(1, 4096);
            for (int j = 0; j < 4096; j++)
                user[j] = pat(j, 3);
            cl_mem tm = dev_buf(4096, user);
            mgpk_buf_t src = {.mem = tm, .offset = 1024};
            ck_assert_int_eq(
                mgpk_pack(ctx, types[cases[i]], count, src, (mgpk_buf_t){.host = a}, 0, total, 0),
                MPI_SUCCESS);
            ck_assert_int_eq(mgpk_pack(ctx, g, count, src, (mgpk_buf_t){.host = b}, 0, total, 0),
                             MPI_SUCCESS);
            ck_assert_int_eq(memcmp(a, b, total), 0);
            check4((run_t){.ctx = ctx, .t = types[cases[i]], .count = count, .n = -1});
            check4((run_t){.ctx = ctx, .t = g, .count = count, .n = -1});
            clReleaseMemObject(tm);
            free(a), free(b), free(user);
        }
        tt_free(g);
    }
    mgpk_ctx_free(ctx);
}
END_TEST

/* A struct of four blocks of shapes (2 vectors at 8, a 3D subarray at 600,
   3 contiguous leaves at 1200, 2 2D subarrays at 1400), as a caller of
   mgpk_pack_multi makes it: node indices fixed by the order of creation. */
static mgdt_type_t *mk_multi(void)
{
    tb_t b = {.nn = 0};
    int s = tb_node(&b, MGDT_K_STRUCT, 4, 0, 0);
    tb_la(&b, s, 5, (int64_t[]){2, 1, 3, 2, 0});
    tb_la(&b, s, 4, (int64_t[]){8, 600, 1200, 1400});
    tb_la(&b, s, 4, (int64_t[]){1, 3, 5, 6});
    tb_node(&b, MGDT_K_VECTOR, 5, 3, 40); /* 1 */
    tb_leaf(&b, 4, 4);
    int u = tb_node(&b, MGDT_K_SUBARRAY, 0, 0, (1 * 30 + 1 * 6 + 2) * 4); /* 3 */
    b.nodes[u].ndims = 3;
    b.nodes[u].extent = 480;
    tb_la(&b, u, 6, (int64_t[]){2, 3, 4, 120, 24, 4});
    tb_leaf(&b, 4, 4);
    tb_leaf(&b, 24, 4);                                          /* 5 */
    int w = tb_node(&b, MGDT_K_SUBARRAY, 0, 0, (2 * 8 + 1) * 8); /* 6 */
    b.nodes[w].ndims = 2;
    b.nodes[w].extent = 384;
    tb_la(&b, w, 4, (int64_t[]){3, 4, 64, 8});
    tb_leaf(&b, 8, 8);
    return tb_type(&b);
}

/* mgpk_pack_multi: every block in one launch of the multi kernel, the
   struct's bytes (the reference's) on every path, a chunked pipeline
   included; blocks that are not all shapes take the struct's own kernel. */
START_TEST(test_multi)
{
    mgdt_type_t *t = mk_multi();
    const mgpk_block_t blocks[4] = {{types[C_VEC], 2, 8},
                                    {types[C_SUB3], 1, 600},
                                    {types[C_LEAF], 3, 1200},
                                    {types[C_SUB2], 2, 1400}};
    ck_assert_int_eq(t->size, 2 * types[C_VEC]->size + types[C_SUB3]->size +
                                  3 * types[C_LEAF]->size + 2 * types[C_SUB2]->size);
    /* 0: direct, 1: a chunked pipeline, 2: spans of 12 bytes (runs cut
       anywhere) */
    for (int pipe = 0; pipe < 3; pipe++) {
        mgpk_ctx_t *ctx = pipe == 2 ? mk_ctx_span(MGPK_METHOD_KERNEL, 0, 0, 12)
                                    : mk_ctx(MGPK_METHOD_KERNEL, pipe, pipe ? 256 : 0);
        for (int unpack = 0; unpack < 2; unpack++)
            for (int dev = 0; dev < 2; dev++) {
                mgpk_stats_t a, z;
                mgpk_ctx_stats(ctx, &a);
                check((run_t){.ctx = ctx,
                              .t = t,
                              .count = 1,
                              .n = -1,
                              .unpack = unpack,
                              .dev = dev,
                              .shift = 8,
                              .blocks = blocks,
                              .nblocks = 4});
                mgpk_ctx_stats(ctx, &z);
                ck_assert_str_eq(z.last_what, "multi kernel");
                /* one launch per call; per chunk of the pipeline */
                if (pipe != 1 || dev)
                    ck_assert_int_eq(z.launches - a.launches, 1);
                else
                    ck_assert_int_ge(z.launches - a.launches, 2);
            }
        /* an indexed block: the struct's generic kernel, the same bytes */
        const mgpk_block_t bad[4] = {blocks[0], {types[C_INDEXED], 1, 600}, blocks[2], blocks[3]};
        unsigned char *p1 = calloc(1, 4096), *p2 = calloc(1, 4096), *user = malloc(4096);
        for (int j = 0; j < 4096; j++)
            user[j] = pat(j, 5);
        cl_mem tm = dev_buf(4096, user);
        mgpk_buf_t src = {.mem = tm, .offset = 16};
        ck_assert_int_eq(mgpk_pack_multi(ctx, t, bad, 4, src, (mgpk_buf_t){.host = p1}, 0),
                         MPI_SUCCESS);
        mgpk_stats_t z;
        mgpk_ctx_stats(ctx, &z);
        ck_assert_str_ne(z.last_what, "multi kernel");
        ck_assert_int_eq(mgpk_pack(ctx, t, 1, src, (mgpk_buf_t){.host = p2}, 0, t->size, 0),
                         MPI_SUCCESS);
        ck_assert_int_eq(memcmp(p1, p2, t->size), 0);
        clReleaseMemObject(tm);
        free(p1), free(p2), free(user);
        mgpk_ctx_free(ctx);
    }
    tt_free(t);
}
END_TEST

START_TEST(test_copy_method)
{
    mgpk_ctx_t *ctx = mk_ctx(MGPK_METHOD_COPY, 0, 0);
    for (int c = 0; c < NCASES; c++)
        for (int64_t count = 1; count <= 3; count += 2) {
            check4((run_t){
                .ctx = ctx, .t = types[c], .count = count, .shift = 2, .n = -1, .pshift = 1});
            check4((run_t){.ctx = ctx,
                           .t = types[c],
                           .count = count,
                           .first = 3,
                           .n = count * types[c]->size - 4});
        }
    char out[64] = "";
    cl_mem tm = dev_buf(sizeof(out), out);
    int rc = mgpk_pack(ctx, types[C_VEC], 1, (mgpk_buf_t){.mem = tm}, (mgpk_buf_t){.host = out}, 0,
                       4, MGPK_F_EXTERNAL32);
    ck_assert_int_eq(rc, MPI_ERR_UNSUPPORTED_OPERATION);
    clReleaseMemObject(tm);
    mgpk_ctx_free(ctx);
}
END_TEST

START_TEST(test_external32)
{
    mgpk_ctx_t *ctx = mk_ctx(MGPK_METHOD_AUTO, 0, 0);
    /* basic 2, 4, 8 (word kernels), mixed (byte kernel), and misaligned (byte kernel). */
    int cases[] = {C_INDEXED, C_VEC, C_BLKIDX, C_STRUCT, C_SUB3};
    int widths[] = {2, 4, 8, 1, 4};
    for (int i = 0; i < 5; i++)
        for (int64_t shift = 0; shift <= 1; shift++)
            for (int unpack = 0; unpack < 2; unpack++) {
                int w = check((run_t){.ctx = ctx,
                                      .t = types[cases[i]],
                                      .count = 2,
                                      .shift = shift,
                                      .n = -1,
                                      .dev = 1,
                                      .unpack = unpack,
                                      .flags = MGPK_F_EXTERNAL32});
                ck_assert_int_eq(w, shift ? 1 : widths[i]);
            }
    /* A leaf of mixed basic sizes cannot be swapped on the device. */
    tb_t b = {.nn = 0};
    tb_leaf(&b, 12, 0);
    mgdt_type_t *mixed = tb_type(&b);
    static const char zeros[64];
    cl_mem tm = dev_buf(sizeof(zeros), zeros);
    char out[12];
    int rc = mgpk_pack(ctx, mixed, 1, (mgpk_buf_t){.mem = tm}, (mgpk_buf_t){.host = out}, 0, 12,
                       MGPK_F_EXTERNAL32);
    ck_assert_int_eq(rc, MPI_ERR_UNSUPPORTED_OPERATION);
    clReleaseMemObject(tm);
    tt_free(mixed);
    mgpk_ctx_free(ctx);
}
END_TEST

static int count_files(const char *dir, const char *suffix)
{
    int n = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strlen(e->d_name) > strlen(suffix) &&
            !strcmp(e->d_name + strlen(e->d_name) - strlen(suffix), suffix))
            n++;
    if (d)
        closedir(d);
    return n;
}

static mgpk_ctx_t *cache_ctx(const char *dir, mgpk_stats_t *st)
{
    mgpk_settings_t s = {.cache_dir = dir};
    mgpk_ctx_t *ctx = NULL;
    ck_assert_int_eq(mgpk_ctx_create(g_cl, g_dev, NULL, &s, &ctx), MPI_SUCCESS);
    int rc = mgpk_ctx_prepare(ctx);
    ck_assert_msg(rc == MPI_SUCCESS, "prepare: %s", mgerr_get(rc));
    mgpk_ctx_stats(ctx, st);
    return ctx;
}

START_TEST(test_cache)
{
    char dir[300], cmd[400];
    mgpk_stats_t st;
    snprintf(dir, sizeof(dir), "%s/own/sub", g_cache);
    mgpk_ctx_t *a = cache_ctx(dir, &st);
    ck_assert_int_eq(st.programs_built, (int)mgpk_nsources);
    ck_assert_int_eq(count_files(dir, ".bin"), (int)mgpk_nsources);
    ck_assert_int_eq(count_files(dir, ".tmp"), 0);
    mgpk_ctx_t *b = cache_ctx(dir, &st);
    ck_assert_int_eq(st.programs_loaded, (int)mgpk_nsources);
    ck_assert_int_eq(st.programs_built, 0);
    check4((run_t){.ctx = b, .t = types[C_STRUCT], .count = 2, .n = -1});
    /* Corrupt every cached binary: builds from source again and still packs. */
    snprintf(cmd, sizeof(cmd),
             "for f in %s/*.bin; do dd if=/dev/urandom of=$f bs=1 seek=40 count=64 conv=notrunc "
             "status=none; done",
             dir);
    ck_assert_int_eq(system(cmd), 0);
    mgpk_ctx_t *c = cache_ctx(dir, &st);
    ck_assert_int_eq(st.programs_built, (int)mgpk_nsources);
    check4((run_t){.ctx = c, .t = types[C_STRUCT], .count = 2, .n = -1});
    snprintf(cmd, sizeof(cmd), "for f in %s/*.bin; do head -c 20 $f > $f.x && mv $f.x $f; done",
             dir);
    ck_assert_int_eq(system(cmd), 0);
    mgpk_ctx_t *d = cache_ctx(dir, &st);
    ck_assert_int_eq(st.programs_built, (int)mgpk_nsources);
    check4((run_t){.ctx = d, .t = types[C_SUB3], .count = 1, .n = -1});
    mgpk_ctx_free(a);
    mgpk_ctx_free(b);
    mgpk_ctx_free(c);
    mgpk_ctx_free(d);
}
END_TEST

/* Types and contexts die in either order. */
START_TEST(test_lifetime)
{
    mgdt_type_t *t = mk_struct(), *u = mk_vecvec();
    mgpk_ctx_t *x = mk_ctx(MGPK_METHOD_AUTO, 0, 0), *y = mk_ctx(MGPK_METHOD_AUTO, 0, 0);
    check((run_t){.ctx = x, .t = t, .count = 1, .n = -1});
    check((run_t){.ctx = y, .t = t, .count = 1, .n = -1});
    check((run_t){.ctx = x, .t = u, .count = 1, .n = -1});
    mgpk_ctx_free(x);
    check((run_t){.ctx = y, .t = t, .count = 2, .n = -1});
    tt_free(t);
    check((run_t){.ctx = y, .t = u, .count = 1, .n = -1});
    mgpk_ctx_free(y);
    tt_free(u);
}
END_TEST

START_TEST(test_misc)
{
    mgpk_settings_t s = {.method = MGPK_METHOD_HOST};
    mgpk_ctx_t *ctx = NULL;
    char buf[64];
    ck_assert_int_eq(mgpk_ctx_create(g_cl, g_dev, g_q, &s, &ctx), MPI_SUCCESS);
    ck_assert_ptr_eq(mgpk_ctx_queue(ctx), g_q);
    ck_assert_ptr_eq(mgpk_ctx_context(ctx), g_cl);
    ck_assert_ptr_eq(mgpk_ctx_device(ctx), g_dev);
    cl_mem m = dev_buf(64, buf);
    ck_assert_int_eq(
        mgpk_pack(ctx, types[C_VEC], 1, (mgpk_buf_t){.mem = m}, (mgpk_buf_t){.host = buf}, 0, 4, 0),
        MPI_ERR_UNSUPPORTED_OPERATION);
    mgpk_ctx_free(ctx);
    /* mgpk_copy between all sides. */
    ctx = mk_ctx(MGPK_METHOD_AUTO, 0, 0);
    char in[64], out[64];
    for (int i = 0; i < 64; i++)
        in[i] = (char)pat(i, 4);
    cl_mem m2 = dev_buf(64, buf);
    ck_assert_int_eq(
        mgpk_copy(ctx, (mgpk_buf_t){.mem = m, .offset = 3}, (mgpk_buf_t){.host = in}, 40),
        MPI_SUCCESS);
    ck_assert_int_eq(mgpk_copy(ctx, (mgpk_buf_t){.mem = m2, .offset = 1},
                               (mgpk_buf_t){.mem = m, .offset = 3}, 40),
                     MPI_SUCCESS);
    ck_assert_int_eq(
        mgpk_copy(ctx, (mgpk_buf_t){.host = out}, (mgpk_buf_t){.mem = m2, .offset = 1}, 40),
        MPI_SUCCESS);
    ck_assert_int_eq(memcmp(in, out, 40), 0);
    /* Empty ranges and out-of-range requests. */
    ck_assert_int_eq(
        mgpk_pack(ctx, types[C_VEC], 1, (mgpk_buf_t){.mem = m}, (mgpk_buf_t){.host = out}, 0, 0, 0),
        MPI_SUCCESS);
    ck_assert_int_eq(mgpk_pack(ctx, types[C_VEC], 1, (mgpk_buf_t){.mem = m},
                               (mgpk_buf_t){.host = out}, 50, 20, 0),
                     MPI_ERR_ARG);
    clReleaseMemObject(m);
    clReleaseMemObject(m2);
    mgpk_ctx_free(ctx);
}
END_TEST

int main(void)
{
    env_setup();
    Suite *s = suite_create("pack");
    TCase *tc = tcase_create("pack");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_widths);
    tcase_add_test(tc, test_spans);
    tcase_add_test(tc, test_specialized);
    tcase_add_test(tc, test_multi);
    tcase_add_test(tc, test_external32);
    tcase_add_test(tc, test_pipeline);
    /* Under Oclgrind (check-oclgrind) the pipelines of worker threads and of
       transfers into pinned memory run the kernels that the tests above already
       check, over 0.2 to 1 MiB each: they are left to the native runs. */
    if (!g_oclgrind)
        tcase_add_test(tc, test_pipeline_threads);
    tcase_add_test(tc, test_host_walk);
    if (!g_oclgrind)
        tcase_add_test(tc, test_dma);
    tcase_add_test(tc, test_map);
    tcase_add_test(tc, test_grid);
    tcase_add_test(tc, test_call_method);
    tcase_add_test(tc, test_whole);
    if (!g_small) {
        tcase_add_test(tc, test_partial);
        tcase_add_test(tc, test_copy_method);
        tcase_add_test(tc, test_cache);
        tcase_add_test(tc, test_lifetime);
        tcase_add_test(tc, test_misc);
    }
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    env_teardown();
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", g_cache);
    if (system(cmd) != 0)
        failed++;
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
