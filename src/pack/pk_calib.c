/*
 * Method choice for MPIGPU_PACK=auto.  At the first AUTO decision on a
 * context, the engine times the kernel, copy and host methods over a small
 * grid of (block stride, packed size, block length) points, packing a vector
 * of 8 blocks per instance (block stride 2 or 8 block lengths: half or an
 * eighth of the span packed) into device memory and into host memory.  A
 * call's estimate per method interpolates between the two strides by how
 * sparse its data lies.  The table is cached on disk next to the program
 * binaries, keyed by device, driver and library version, in a text format
 * (doc/design.md, "Method choice"):
 *
 *   mpigpu-calibration 5
 *   device <CL_DEVICE_NAME>
 *   driver <CL_DRIVER_VERSION>
 *   library <PACKAGE_VERSION>
 *   sizes 4096 262144 1048576 8388608
 *   blocks 8 64 512
 *   strides 2 8
 *   <dev|host> <stride> <size> <block> <kernel us> <copy us> <host us or ->
 *   ... (48 rows)
 *   runs <dev us> <host us>
 *   map <stride> <us at each size>      (one line per stride)
 *   end                                 ("map -" alone where nothing maps)
 *
 * "runs" is what each further command adds to the copy method where it
 * takes one command per run of bytes (types without a vector or subarray
 * shape): nine 8-byte copies against one, device to device and to host.
 * The host times are the CPU's walk (mgpk_host_pack) over the extent: in host
 * memory where the device shares it, after a read of the extent elsewhere.
 * "map" is what a map and an unmap of that extent add on a device that shares
 * the host's memory, at each stride and size; a zero-copy buffer
 * (MGPK_F_ZERO_COPY) does without.
 *
 * Anything else (a foreign device, a bad number, a missing row) is ignored
 * and the file is rewritten after a new measurement.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mgpk_impl.h"

#define CAL_MAGIC "mpigpu-calibration 5"
#define CAL_NBLK 8 /* blocks per instance of the synthetic vector */
#define CAL_MAX_US 1e9
#define CAL_LINE 512

static const int64_t cal_sizes[MGPK_CAL_NSIZES] = {4096, 256 << 10, 1 << 20, 8 << 20};
static const int64_t cal_blocks[MGPK_CAL_NBLOCKS] = {8, 64, 512};
static const int64_t cal_strides[MGPK_CAL_NSTRIDES] = {2, 8};
#define CAL_MAXSIZE ((int64_t)8 << 20)
#define CAL_MAXSPAN (8 * CAL_MAXSIZE) /* the sparse vector's extent */

static double now(void)
{
    return mg_clock_s();
}

static int nearest(int64_t v, const int64_t *grid, int n)
{
    int best = 0;
    double x = (double)(v > 1 ? v : 1), bd = INFINITY;
    for (int i = 0; i < n; i++) {
        /* log distance, as a ratio >= 1 */
        double g = (double)grid[i], d = x > g ? x / g : g / x;
        if (d < bd) {
            bd = d;
            best = i;
        }
    }
    return best;
}

void mgpk_calib_cell(int64_t n, int64_t blocklen, int *si, int *bi)
{
    *si = nearest(n, cal_sizes, MGPK_CAL_NSIZES);
    *bi = nearest(blocklen, cal_blocks, MGPK_CAL_NBLOCKS);
}

/* The run length the call moves: the shape's block, else the mean of the
   first runs of the packed stream (at most 16, so that the walk stays cheap). */
int64_t mgpk_calib_blocklen(const mgdt_type_t *type, int64_t count, int64_t n)
{
    const mgdt_shape_t *sh = &type->shape;
    if ((sh->kind == MGDT_SHAPE_VECTOR || sh->kind == MGDT_SHAPE_SUBARRAY) &&
        mgpk_shape_ok(type, count))
        return sh->blocklen;
    return mgdt_ref_mean_run(type, 0, n, 16);
}

/* ---------------------------------------------------------------- cache */

static int cal_key(mgpk_ctx_t *ctx, char *name, char *driver, size_t len)
{
    int rc = MPI_SUCCESS;
    MG_CL_CHECK(clGetDeviceInfo(ctx->device, CL_DEVICE_NAME, len, name, NULL),
                "clGetDeviceInfo(CL_DEVICE_NAME)", rc, fn_fail);
    MG_CL_CHECK(clGetDeviceInfo(ctx->device, CL_DRIVER_VERSION, len, driver, NULL),
                "clGetDeviceInfo(CL_DRIVER_VERSION)", rc, fn_fail);
    name[len - 1] = driver[len - 1] = '\0';
    /* One line each in the file. */
    for (char *p = name; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    for (char *p = driver; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static void cal_path(mgpk_ctx_t *ctx, const char *name, const char *driver)
{
    mgpk_calib_info_t *c = &ctx->calib;
    c->path[0] = '\0';
    if (!ctx->cache_dir)
        return;
    uint64_t h = mgpk_fnv1a(MGPK_FNV_BASIS, name, strlen(name) + 1);
    h = mgpk_fnv1a(h, driver, strlen(driver) + 1);
    h = mgpk_fnv1a(h, PACKAGE_VERSION, sizeof(PACKAGE_VERSION));
    snprintf(c->path, sizeof(c->path), "%s/calib-%016llx.txt", ctx->cache_dir,
             (unsigned long long)h);
}

/* A field "-" (not measured, allowed where `dash`) or a time in us. */
static int parse_time(const char *f, int dash, double *t)
{
    char *end;
    if (!strcmp(f, "-")) {
        *t = -1;
        return dash;
    }
    double v = strtod(f, &end);
    if (end == f || *end || !isfinite(v) || v <= 0 || v > CAL_MAX_US)
        return 0;
    *t = v * 1e-6;
    return 1;
}

/* Reads a line without its newline; 0 at the end, on a line too long or on
   a NUL byte. */
static int read_line(FILE *f, char *buf)
{
    if (!fgets(buf, CAL_LINE, f))
        return 0;
    size_t l = strlen(buf);
    if (l == 0 || buf[l - 1] != '\n')
        return 0;
    buf[l - 1] = '\0';
    return 1;
}

static int expect(FILE *f, char *buf, const char *key, const char *value)
{
    size_t kl = strlen(key);
    return read_line(f, buf) && !strncmp(buf, key, kl) && buf[kl] == ' ' &&
           !strcmp(buf + kl + 1, value);
}

/* "key g[0] g[1] ..." for a grid of n. */
static void grid_line(char *buf, size_t len, const char *key, const int64_t *g, int n)
{
    size_t at = (size_t)snprintf(buf, len, "%s", key);
    for (int i = 0; i < n && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, " %lld", (long long)g[i]);
}

/* The grid lines of the file, in its order. */
static const struct {
    const char *key;
    const int64_t *g;
    int n;
} cal_grids[] = {{"sizes", cal_sizes, MGPK_CAL_NSIZES},
                 {"blocks", cal_blocks, MGPK_CAL_NBLOCKS},
                 {"strides", cal_strides, MGPK_CAL_NSTRIDES}};
#define CAL_NGRIDS ((int)(sizeof(cal_grids) / sizeof(cal_grids[0])))

/* The index of v in grid g of n points, n where it is none of them. */
static int grid_at(const int64_t *g, int n, long long v)
{
    int i = 0;
    while (i < n && g[i] != v)
        i++;
    return i;
}

/* "map <stride> <time at each size>": the times of one stride, or 0 where
   the line is not exactly that. */
static int parse_map(char *buf, int64_t stride, double map[MGPK_CAL_NSIZES])
{
    char want[32], *save = NULL, *tok;
    snprintf(want, sizeof(want), "map %lld ", (long long)stride);
    if (strncmp(buf, want, strlen(want)))
        return 0;
    tok = strtok_r(buf + strlen(want), " ", &save);
    for (int si = 0; si < MGPK_CAL_NSIZES; si++, tok = strtok_r(NULL, " ", &save))
        if (!tok || !parse_time(tok, 0, &map[si]))
            return 0;
    return tok == NULL;
}

/* The table of the file at c->path if it is whole and ours. */
static int cal_load(mgpk_ctx_t *ctx, const char *name, const char *driver)
{
    mgpk_calib_info_t *c = &ctx->calib;
    char buf[CAL_LINE], grid[128];
    int seen[2][MGPK_CAL_NSTRIDES][MGPK_CAL_NSIZES][MGPK_CAL_NBLOCKS] = {{{{0}}}}, ok = 0;
    double t[2][MGPK_CAL_NSTRIDES][MGPK_CAL_NSIZES][MGPK_CAL_NBLOCKS][MGPK_CAL_NMETHODS];
    FILE *f = c->path[0] ? fopen(c->path, "r") : NULL;
    if (!f)
        return 0;
    if (!read_line(f, buf) || strcmp(buf, CAL_MAGIC) || !expect(f, buf, "device", name) ||
        !expect(f, buf, "driver", driver) || !expect(f, buf, "library", PACKAGE_VERSION))
        goto done;
    for (int i = 0; i < CAL_NGRIDS; i++) {
        grid_line(grid, sizeof(grid), cal_grids[i].key, cal_grids[i].g, cal_grids[i].n);
        if (!read_line(f, buf) || strcmp(buf, grid))
            goto done;
    }
    for (int row = 0; row < 2 * MGPK_CAL_NSTRIDES * MGPK_CAL_NSIZES * MGPK_CAL_NBLOCKS; row++) {
        char dir[8], fk[32], fc[32], fh[32], extra;
        long long stride, size, blk;
        int d, k, si, bi;
        if (!read_line(f, buf) || sscanf(buf, "%7s %lld %lld %lld %31s %31s %31s %c", dir, &stride,
                                         &size, &blk, fk, fc, fh, &extra) != 7)
            goto done;
        if (!strcmp(dir, "dev"))
            d = 0;
        else if (!strcmp(dir, "host"))
            d = 1;
        else
            goto done;
        k = grid_at(cal_strides, MGPK_CAL_NSTRIDES, stride);
        si = grid_at(cal_sizes, MGPK_CAL_NSIZES, size);
        bi = grid_at(cal_blocks, MGPK_CAL_NBLOCKS, blk);
        if (k == MGPK_CAL_NSTRIDES || si == MGPK_CAL_NSIZES || bi == MGPK_CAL_NBLOCKS ||
            seen[d][k][si][bi]++)
            goto done;
        double *v = t[d][k][si][bi];
        if (!parse_time(fk, 0, &v[0]) || !parse_time(fc, 1, &v[1]) || !parse_time(fh, 1, &v[2]))
            goto done;
    }
    double run[2];
    char fd[32], fh[32], extra;
    if (!read_line(f, buf) || sscanf(buf, "runs %31s %31s %c", fd, fh, &extra) != 2 ||
        !parse_time(fd, 0, &run[0]) || !parse_time(fh, 0, &run[1]))
        goto done;
    double map[MGPK_CAL_NSTRIDES][MGPK_CAL_NSIZES] = {{0}};
    if (!read_line(f, buf))
        goto done;
    if (strcmp(buf, "map -")) {
        /* One line per stride, in the grid's order. */
        for (int k = 0; k < MGPK_CAL_NSTRIDES; k++)
            if ((k > 0 && !read_line(f, buf)) || !parse_map(buf, cal_strides[k], map[k]))
                goto done;
    }
    if (!read_line(f, buf) || strcmp(buf, "end") || fgetc(f) != EOF)
        goto done;
    memcpy(c->t, t, sizeof(t));
    memcpy(c->run, run, sizeof(run));
    memcpy(c->map, map, sizeof(map));
    ok = 1;
done:
    fclose(f);
    return ok;
}

/* Best effort: without a cache the next process measures again. */
static void cal_store(mgpk_ctx_t *ctx, const char *name, const char *driver)
{
    mgpk_calib_info_t *c = &ctx->calib;
    char tmp[4200], grid[128];
    int ok = 0;
    if (!c->path[0])
        return;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", c->path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f) {
        fprintf(f, "%s\ndevice %s\ndriver %s\nlibrary %s\n", CAL_MAGIC, name, driver,
                PACKAGE_VERSION);
        for (int i = 0; i < CAL_NGRIDS; i++) {
            grid_line(grid, sizeof(grid), cal_grids[i].key, cal_grids[i].g, cal_grids[i].n);
            fprintf(f, "%s\n", grid);
        }
        for (int d = 0; d < 2; d++)
            for (int k = 0; k < MGPK_CAL_NSTRIDES; k++)
                for (int si = 0; si < MGPK_CAL_NSIZES; si++)
                    for (int bi = 0; bi < MGPK_CAL_NBLOCKS; bi++) {
                        fprintf(f, "%s %lld %lld %lld", d ? "host" : "dev",
                                (long long)cal_strides[k], (long long)cal_sizes[si],
                                (long long)cal_blocks[bi]);
                        for (int m = 0; m < MGPK_CAL_NMETHODS; m++) {
                            double v = c->t[d][k][si][bi][m];
                            if (v > 0)
                                fprintf(f, " %.3f", v * 1e6 < CAL_MAX_US ? v * 1e6 : CAL_MAX_US);
                            else
                                fprintf(f, " -");
                        }
                        fprintf(f, "\n");
                    }
        fprintf(f, "runs %.3f %.3f\n", c->run[0] * 1e6, c->run[1] * 1e6);
        if (c->map[0][0] > 0)
            for (int k = 0; k < MGPK_CAL_NSTRIDES; k++) {
                fprintf(f, "map %lld", (long long)cal_strides[k]);
                for (int si = 0; si < MGPK_CAL_NSIZES; si++)
                    fprintf(f, " %.3f", c->map[k][si] * 1e6);
                fprintf(f, "\n");
            }
        else
            fprintf(f, "map -\n");
        fprintf(f, "end\n");
        ok = !ferror(f);
        ok = fclose(f) == 0 && ok;
    }
    if (!ok || rename(tmp, c->path)) {
        unlink(tmp);
        ok = 0;
    }
    if (!ok)
        MGPK_LOG(ctx, "calibration cache %s not written", c->path);
}

/* ---------------------------------------------------------- measurement */

/* A vector of CAL_NBLK blocks of bl bytes, sm bl apart, extent CAL_NBLK sm
   bl: the vector kernel's shape and one rectangle for the copy method. */
static void cal_type(mgdt_type_t *t, mgdt_node_t nodes[2], int64_t bl, int64_t sm)
{
    int64_t basic = bl % 8 == 0 ? 8 : 1, align = bl % 16 == 0 ? 16 : bl % 8 == 0 ? 8 : 1;
    memset(t, 0, sizeof(*t));
    memset(nodes, 0, 2 * sizeof(*nodes));
    nodes[1] = (mgdt_node_t){.kind = MGDT_K_LEAF,
                             .size = bl,
                             .extent = bl,
                             .true_ub = bl,
                             .la = -1,
                             .elements = bl / basic,
                             .align = align,
                             .basic = basic};
    nodes[0] = (mgdt_node_t){.kind = MGDT_K_VECTOR,
                             .count = CAL_NBLK,
                             .blocklen = 1,
                             .stride = sm * bl,
                             .size = CAL_NBLK * bl,
                             .extent = CAL_NBLK * sm * bl,
                             .true_ub = (CAL_NBLK - 1) * sm * bl + bl,
                             .child_size = bl,
                             .child_extent = bl,
                             .la = -1,
                             .elements = CAL_NBLK * (bl / basic),
                             .align = align};
    t->nodes = nodes;
    t->nnodes = 2;
    t->size = nodes[0].size;
    t->extent = nodes[0].extent;
    t->true_ub = nodes[0].true_ub;
    t->elements = nodes[0].elements;
    t->align = (int)align;
    t->depth = 2;
    t->twin = MPI_DATATYPE_NULL;
    t->shape = (mgdt_shape_t){
        .kind = MGDT_SHAPE_VECTOR, .blocklen = bl, .count = CAL_NBLK, .stride = sm * bl};
}

typedef struct cal_bufs {
    cl_mem typed, packed;
    char *host, *scratch;
} cal_bufs_t;

/* One call of method m (kernel, copy, host) for `count` instances of t. */
static int cal_once(mgpk_ctx_t *ctx, const cal_bufs_t *b, const mgdt_type_t *t, int64_t count,
                    int to_host, mgpk_method_t m)
{
    int rc = MPI_SUCCESS;
    int64_t n = count * t->size;
    if (m == MGPK_METHOD_HOST) {
        /* What the device layer does: on a device that shares the host's
           memory, walk the extent in place (cal_map times the map that a
           buffer other than a zero-copy one adds); elsewhere read the extent
           first. */
        int64_t ext = count * t->extent;
        const char *from = b->scratch;
        if (!ctx->unified || ctx->settings.force_pipeline)
            MG_CL_CHECK(clEnqueueReadBuffer(ctx->queue, b->typed, CL_TRUE, 0, (size_t)ext,
                                            b->scratch, 0, NULL, NULL),
                        "clEnqueueReadBuffer(calibration)", rc, fn_fail);
        /* The host method's own walk (mgpk_host_pack), with its threads. */
        rc = mgpk_host_pack_locked(ctx, t, (void *)(uintptr_t)from, b->host, 0, n, 0);
        goto fn_exit;
    }
    mgpk_plan_t plan = {.type = t,
                        .count = count,
                        .dir = MGPK_DIR_PACK,
                        .flags = MGPK_F_METHOD(m),
                        .typed = b->typed,
                        .typed_off = 0};
    mgpk_buf_t packed = {.host = to_host ? b->host : NULL, .mem = to_host ? NULL : b->packed};
    rc = mgpk_transfer_locked(ctx, &plan, packed, 0, n);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* k copy commands of 8 bytes each (device to device, or to host), then a
   wait: what the copy method does for a type of k runs. */
static int cal_runs_once(mgpk_ctx_t *ctx, const cal_bufs_t *b, int to_host, int k, double *dt)
{
    int rc = MPI_SUCCESS;
    double t0 = now();
    for (int i = 0; i < k; i++) {
        size_t src = (size_t)i * 64, dst = (size_t)i * 8;
        if (to_host)
            MG_CL_CHECK(clEnqueueReadBuffer(ctx->queue, b->typed, CL_FALSE, src, 8, b->host + dst,
                                            0, NULL, NULL),
                        "clEnqueueReadBuffer(calibration)", rc, fn_fail);
        else
            MG_CL_CHECK(
                clEnqueueCopyBuffer(ctx->queue, b->typed, b->packed, src, dst, 8, 0, NULL, NULL),
                "clEnqueueCopyBuffer(calibration)", rc, fn_fail);
    }
    MG_CL_CHECK(clFinish(ctx->queue), "clFinish", rc, fn_fail);
    *dt = now() - t0;
fn_fail:
    return rc;
}

/* Seconds per further command: (nine commands - one) / 8, each the best of
   five, after a warm-up. */
static int cal_runs(mgpk_ctx_t *ctx, const cal_bufs_t *b, int to_host, double *per)
{
    int rc = MPI_SUCCESS;
    double best[2] = {INFINITY, INFINITY}, dt = 0;
    for (int r = 0; r < 6; r++)
        for (int j = 0; j < 2; j++) {
            rc = cal_runs_once(ctx, b, to_host, j ? 9 : 1, &dt);
            MG_CHECK(rc, fn_exit);
            if (r > 0 && dt < best[j])
                best[j] = dt;
        }
    *per = (best[1] - best[0]) / 8;
    if (*per < 1e-7)
        *per = 1e-7;
fn_exit:
    return rc;
}

/* Seconds of a map and an unmap of the extent of each calibration vector
   (its span is sm times its packed bytes), best of five after a warm-up; 0
   where the host method does not map. */
static int cal_map(mgpk_ctx_t *ctx, const cal_bufs_t *b, int64_t sm, double map[MGPK_CAL_NSIZES])
{
    int rc = MPI_SUCCESS;
    for (int si = 0; si < MGPK_CAL_NSIZES; si++) {
        double best = INFINITY;
        map[si] = 0;
        for (int r = 0; r < 6; r++) {
            void *p = NULL;
            double t0 = now();
            rc = mgpk_map(ctx, b->typed, 0, (size_t)(sm * cal_sizes[si]), 0, &p);
            MG_CHECK(rc, fn_exit);
            if (!p)
                goto fn_exit;
            rc = mgpk_unmap(ctx, b->typed, p);
            MG_CHECK(rc, fn_exit);
            double dt = now() - t0;
            if (r > 0 && dt < best)
                best = dt;
        }
        map[si] = best > 1e-7 ? best : 1e-7;
    }
fn_exit:
    return rc;
}

/* The times of one cell's methods into v (v[m] for method m + 1; -1 where
   skip[m] says not to run it), each the best of up to 4 timed calls after a
   warm-up: 4 below 2 ms, 2 below 20 ms, else 1.  The methods take turns, so that a
   stretch where the VM's scheduler held the process up (seen on the development VM: 130 to
   240 us for a 20 us cell) slows all of them, not one method's calls. */
static int cal_cell(mgpk_ctx_t *ctx, const cal_bufs_t *b, const mgdt_type_t *t, int64_t count,
                    int to_host, const int *skip, double v[MGPK_CAL_NMETHODS])
{
    int rc = MPI_SUCCESS, reps[MGPK_CAL_NMETHODS];
    for (int m = 0; m < MGPK_CAL_NMETHODS; m++) {
        v[m] = -1;
        reps[m] = 0;
        if (skip[m])
            continue;
        double t0 = now();
        rc = cal_once(ctx, b, t, count, to_host, (mgpk_method_t)(m + 1));
        MG_CHECK(rc, fn_exit);
        double warm = now() - t0;
        reps[m] = warm > 0.02 ? 1 : warm > 0.002 ? 2 : 4;
        v[m] = INFINITY;
    }
    for (int r = 0; r < 4; r++)
        for (int m = 0; m < MGPK_CAL_NMETHODS; m++) {
            if (r >= reps[m])
                continue;
            double t0 = now();
            rc = cal_once(ctx, b, t, count, to_host, (mgpk_method_t)(m + 1));
            MG_CHECK(rc, fn_exit);
            double dt = now() - t0;
            if (dt < v[m])
                v[m] = dt > 1e-7 ? dt : 1e-7;
        }
fn_exit:
    return rc;
}

static int cal_measure(mgpk_ctx_t *ctx)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    cal_bufs_t b = {0};
    mgpk_calib_info_t *c = &ctx->calib;
    mgpk_stats_t saved = ctx->stats;
    int verbose = ctx->settings.verbose;
    ctx->settings.verbose = 0;

    rc = mgpk_prog_ensure(ctx);
    MG_CHECK(rc, fn_fail);
    b.typed = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, CAL_MAXSPAN, NULL, &err);
    MG_CL_CHECK(err, "clCreateBuffer(calibration)", rc, fn_fail);
    b.packed = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, CAL_MAXSIZE, NULL, &err);
    MG_CL_CHECK(err, "clCreateBuffer(calibration)", rc, fn_fail);
    b.host = malloc(CAL_MAXSIZE);
    b.scratch = malloc(CAL_MAXSPAN);
    if (!b.host || !b.scratch)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgpk: no host memory for the calibration");
    memset(b.scratch, 0, CAL_MAXSPAN);
    MG_CL_CHECK(clEnqueueWriteBuffer(ctx->queue, b.typed, CL_TRUE, 0, CAL_MAXSPAN, b.scratch, 0,
                                     NULL, NULL),
                "clEnqueueWriteBuffer(calibration)", rc, fn_fail);
    for (int k = 0; k < MGPK_CAL_NSTRIDES; k++)
        for (int bi = 0; bi < MGPK_CAL_NBLOCKS; bi++) {
            mgdt_type_t t;
            mgdt_node_t nodes[2];
            cal_type(&t, nodes, cal_blocks[bi], cal_strides[k]);
            for (int si = 0; si < MGPK_CAL_NSIZES; si++) {
                int64_t count = cal_sizes[si] / t.size;
                for (int d = 0; d < 2; d++) {
                    /* Host staging only packs to the host. */
                    int skip[MGPK_CAL_NMETHODS] = {0};
                    skip[MGPK_METHOD_HOST - 1] = !d;
                    rc = cal_cell(ctx, &b, &t, count, d, skip, c->t[d][k][si][bi]);
                    MG_CHECK(rc, fn_fail);
                }
            }
        }
    for (int d = 0; d < 2; d++) {
        rc = cal_runs(ctx, &b, d, &c->run[d]);
        MG_CHECK(rc, fn_fail);
    }
    for (int k = 0; k < MGPK_CAL_NSTRIDES; k++) {
        rc = cal_map(ctx, &b, cal_strides[k], c->map[k]);
        MG_CHECK(rc, fn_fail);
    }
fn_exit:
    /* No cached wrapper may outlive the host buffer. */
    for (int i = 0; i < MGPK_NWRAP; i++)
        if (ctx->wrap[i].mem && ctx->wrap[i].ptr == b.host) {
            clReleaseMemObject(ctx->wrap[i].mem);
            memset(&ctx->wrap[i], 0, sizeof(ctx->wrap[i]));
        }
    clFinish(ctx->queue);
    clFinish(ctx->copy_queue);
    if (b.typed)
        clReleaseMemObject(b.typed);
    if (b.packed)
        clReleaseMemObject(b.packed);
    free(b.host);
    free(b.scratch);
    saved.programs_built = ctx->stats.programs_built;
    saved.programs_loaded = ctx->stats.programs_loaded;
    saved.copy_threads = ctx->stats.copy_threads;
    ctx->stats = saved;
    ctx->settings.verbose = verbose;
    return rc;
fn_fail:
    goto fn_exit;
}

/* Decide the table once per context: cache, measurement or static rule. */
static int cal_ensure(mgpk_ctx_t *ctx)
{
    int rc = MPI_SUCCESS;
    mgpk_calib_info_t *c = &ctx->calib;
    char name[256], driver[256];
    if (c->source != MGPK_CAL_NONE)
        return MPI_SUCCESS;
    memcpy(c->sizes, cal_sizes, sizeof(cal_sizes));
    memcpy(c->blocks, cal_blocks, sizeof(cal_blocks));
    memcpy(c->strides, cal_strides, sizeof(cal_strides));
    if (ctx->settings.calibrate == MGPK_CALIB_OFF) {
        c->source = MGPK_CAL_STATIC;
        return MPI_SUCCESS;
    }
    rc = cal_key(ctx, name, driver, sizeof(name));
    MG_CHECK(rc, fn_fail);
    cal_path(ctx, name, driver);
    if (ctx->settings.calibrate != MGPK_CALIB_FORCE && cal_load(ctx, name, driver)) {
        c->source = MGPK_CAL_CACHED;
        MGPK_LOG(ctx, "method table read from %s", c->path);
        goto fn_exit;
    }
    /* The programs are built (or loaded) first: the first kernel would build
       them anyway, and seconds of compiling are no part of the measurement. */
    rc = mgpk_prog_ensure(ctx);
    MG_CHECK(rc, fn_fail);
    double t0 = now();
    rc = cal_measure(ctx);
    MG_CHECK(rc, fn_fail);
    c->seconds = now() - t0;
    c->source = MGPK_CAL_MEASURED;
    cal_store(ctx, name, driver);
    MGPK_LOG(ctx, "calibrated pack methods in %.3f s, cached in %s", c->seconds,
             c->path[0] ? c->path : "(no cache directory)");
fn_exit:
    return rc;
fn_fail:
    /* A device that cannot run the measurement still packs: static rule. */
    MGPK_LOG(ctx, "calibration failed (%s): kernel method for auto",
             mgerr_get(rc) ? mgerr_get(rc) : "no message");
    c->source = MGPK_CAL_STATIC;
    rc = MPI_SUCCESS;
    goto fn_exit;
}

/* How much sparser than the calibration's dense vector (packed bytes half of
   the span) the type's data lies: 1 for as dense or denser, else 0.5 /
   density, where density is the packed bytes over the bytes from the first
   to the last one the message touches. */
static double cal_sparseness(const mgdt_type_t *type, int64_t count)
{
    double span =
        (double)(count - 1) * fabs((double)type->extent) + (double)(type->true_ub - type->true_lb);
    double packed = (double)count * (double)type->size;
    if (packed <= 0 || span <= 2 * packed)
        return 1.0;
    return span / (2 * packed);
}

/* The time of method m in a cell at sparseness x: the dense vector's up to
   x = 1, the sparse one's from x = strides[1] / strides[0], geometric
   interpolation between.  Beyond the sparse vector, what moves the whole
   span (`grows`: host staging that reads the extent, a rectangle copy whose
   time follows its pitch) grows in proportion; the rest stays. */
static double cal_at(const mgpk_calib_info_t *c, int d, int si, int bi, int m, double x, int grows)
{
    double t0 = c->t[d][0][si][bi][m], t1 = c->t[d][1][si][bi][m];
    double x1 = (double)c->strides[1] / (double)c->strides[0];
    if (t0 <= 0 || t1 <= 0)
        return -1;
    if (x <= 1)
        return t0;
    if (x >= x1)
        return grows ? t1 * x / x1 : t1;
    return t0 * pow(t1 / t0, log(x) / log(x1));
}

/* The model's estimate for a call of auto (or of the forced method `force`,
   not AUTO): the method it takes and its seconds in *cost, or -1 where the
   table has no time for it.  The table must be decided (not static). */
static mgpk_method_t cal_estimate(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count,
                                  int64_t n, int to_host, int allow_host, int flags,
                                  mgpk_method_t force, double *cost)
{
    const mgdt_shape_t *sh = &type->shape;
    const mgpk_calib_info_t *c = &ctx->calib;
    int64_t bl = mgpk_calib_blocklen(type, count, n);
    int si, bi, d = to_host ? 1 : 0;
    mgpk_calib_cell(n, bl, &si, &bi);
    /* The measurement's copy method is one rectangle; a type without a
       vector or subarray shape takes one command per run, so it is only a
       candidate when its runs are few. */
    int rect = (sh->kind == MGDT_SHAPE_VECTOR || sh->kind == MGDT_SHAPE_SUBARRAY) &&
               mgpk_shape_ok(type, count);
    /* A host side on a discrete device moves in pieces of multiples of 4 KiB
       (at most a chunk) from 4 MiB up; a piece that cuts an instance leaves
       the rectangles for one command per run (seen on the H100: 0.5 s for a
       16 MiB subarray), so whole instances must fit the pieces. */
    int64_t chunk = (int64_t)ctx->settings.chunk_bytes;
    int shared = ctx->unified && !ctx->settings.force_pipeline;
    int one_piece = !to_host || shared || (n < MGPK_SPLIT_MIN && n <= chunk);
    int aligned = one_piece || (4096 % type->size == 0 && chunk % type->size == 0);
    int copy_ok =
        !(flags & MGPK_F_EXTERNAL32) && ((rect && aligned) || n / (bl > 0 ? bl : 1) <= 16);
    /* Each method's time at this call's sparseness, between the table's
       dense and sparse vectors.  Past the sparse one, host staging and a
       rectangle copy grow with the span on a discrete device (H100: 512 rows
       of 8 B took 20 us 64 B apart and 58 us 512 B apart, in the git history of
       doc/performance.md); where the device's memory is the host's, nothing is
       copied (mgpk_map) and every method touches the same lines. */
    double x = cal_sparseness(type, count);
    mgpk_method_t best = MGPK_METHOD_KERNEL;
    double kernel = cal_at(c, d, si, bi, 0, x, 0), bt = kernel;
    /* The table was measured by this process alone; on a GPU that other
       processes of the node also run kernels on, each kernel waits for a
       context switch first (MPIGPU_KERNEL_SWITCH). */
    double sw = ctx->settings.kernel_switch_us * 1e-6;
    if (bt > 0)
        bt += sw;
    /* The measured copy is one command; without a shape every run is one
       more (c->run).  A copy between device buffers waits for the switch
       as a kernel does (NVIDIA runs it on the compute channel); short
       ranges to or from host move by rectangles straight to host instead
       (mgpk_transfer_locked, mgpk_write), which do not, and whose time
       follows their rows rather than their span: on the H200 with two
       ranks on its GPU, 8 B every 64 B took 52 to 141 us from 64 to 256 KiB
       this way against 184 to 210 us for the kernel, which the span model
       had chosen (doc/performance.md, S18). */
    int host_rect = to_host && mgpk_host_rect(ctx, type, count, n);
    double copy = cal_at(c, d, si, bi, 1, x, rect && !shared && !host_rect);
    /* (A forced copy whose pieces cut instances, too.) */
    if ((!rect || (force == MGPK_METHOD_COPY && !aligned)) && copy > 0)
        copy += (double)((n + bl - 1) / (bl > 0 ? bl : 1) - 1) * c->run[d];
    if (copy > 0 && !host_rect)
        copy += sw;
    if (force == MGPK_METHOD_KERNEL || force == MGPK_METHOD_COPY) {
        *cost = force == MGPK_METHOD_KERNEL ? bt : copy;
        return force;
    }
    if (copy_ok && copy > 0 && copy < bt)
        best = MGPK_METHOD_COPY, bt = copy;
    /* The table's copy is a copy between device buffers, which NVIDIA runs
       as a kernel; a rectangle straight to host moves on the copy engine,
       at a few ns a row.  Where it applies to a vector or subarray shape it
       beat the kernel at every size measured (S18: 8 B every 64 B, 64 B to
       256 KiB, 18 to 145 us against 168 to 215 for the kernel, which waits
       for the switch), whatever the table says; its estimate is the
       table's copy without the switch. */
    if (host_rect && rect && copy_ok)
        best = MGPK_METHOD_COPY, bt = copy;
    /* Host staging walks the type with the library's own walk
       (mgpk_host_pack), whose time follows the run length as the
       measurement's does, whatever the type's shape.  A zero-copy typed
       side is read in place: no map and unmap. */
    double host = cal_at(c, d, si, bi, 2, x, !shared);
    if (host > 0 && !(flags & MGPK_F_ZERO_COPY)) {
        double x1 = (double)c->strides[1] / (double)c->strides[0];
        double m0 = c->map[0][si], m1 = c->map[1][si];
        host += x <= 1 ? m0 : x >= x1 ? m1 * x / x1 : m0 + (m1 - m0) * (x - 1) / (x1 - 1);
    }
    if (allow_host && to_host && !(flags & MGPK_F_EXTERNAL32) && host > 0 && host < bt)
        best = MGPK_METHOD_HOST, bt = host;
    *cost = bt > 0 ? bt : -1;
    return best;
}

mgpk_method_t mgpk_calib_choose(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, int64_t n,
                                int to_host, int allow_host, int flags)
{
    /* Contiguous types are one copy command whichever method runs. */
    if (mgpk_contig(type, count))
        return MGPK_METHOD_KERNEL;
    cal_ensure(ctx);
    if (ctx->calib.source == MGPK_CAL_STATIC)
        return MGPK_METHOD_KERNEL;
    mgpk_calib_memo_t key = {.type = type,
                             .size = type->size,
                             .extent = type->extent,
                             .count = count,
                             .n = n,
                             .to_host = to_host,
                             .allow_host = allow_host,
                             .flags = flags,
                             .valid = 1};
    for (int i = 0; i < MGPK_MEMO; i++) {
        const mgpk_calib_memo_t *mo = &ctx->memo[i];
        if (mo->valid && mo->type == key.type && mo->size == key.size && mo->extent == key.extent &&
            mo->count == count && mo->n == n && mo->to_host == to_host &&
            mo->allow_host == allow_host && mo->flags == flags)
            return mo->method;
    }
    ctx->stats.choices++;
    double cost;
    key.method =
        cal_estimate(ctx, type, count, n, to_host, allow_host, flags, MGPK_METHOD_AUTO, &cost);
    ctx->memo[ctx->memo_next] = key;
    ctx->memo_next = (ctx->memo_next + 1) % MGPK_MEMO;
    return key.method;
}

double mgpk_method_cost(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, int to_host,
                        int flags, mgpk_method_t *method)
{
    mgpk_method_t m = MGPK_F_METHOD_OF(flags), dummy;
    double cost = -1;
    int64_t n = count * type->size;
    if (!method)
        method = &dummy;
    if (m == MGPK_METHOD_AUTO)
        m = ctx->settings.method;
    *method = m == MGPK_METHOD_AUTO ? MGPK_METHOD_KERNEL : m;
    if (n <= 0 || m == MGPK_METHOD_HOST)
        return n <= 0 ? 0 : -1;
    int contig = !(flags & MGPK_F_EXTERNAL32) && mgpk_contig(type, count);
    const mgdt_type_t *view =
        contig || (flags & MGPK_F_EXTERNAL32) ? type : mgpk_native_view(ctx, type, count);
    pthread_mutex_lock(&ctx->lock);
    cal_ensure(ctx);
    if (ctx->calib.source != MGPK_CAL_STATIC && ctx->calib.source != MGPK_CAL_NONE) {
        if (contig) {
            /* One buffer transfer under every method (contig_move), no kernel
               and so no switch: the table's nearest is its copy of the
               longest runs, densest, less the switch that cal_estimate
               charges a copy between device buffers. */
            const mgpk_calib_info_t *c = &ctx->calib;
            int si, bi;
            mgpk_calib_cell(n, n, &si, &bi);
            cost = cal_at(c, to_host ? 1 : 0, si, bi, 1, 1.0, 0);
            *method = MGPK_METHOD_COPY;
        } else {
            *method =
                cal_estimate(ctx, view, count, n, to_host, 0, flags & ~MGPK_F_METHOD(3), m, &cost);
        }
    }
    pthread_mutex_unlock(&ctx->lock);
    return cost;
}

mgpk_method_t mgpk_method_choose(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, int64_t n,
                                 int to_host, int allow_host, int flags)
{
    pthread_mutex_lock(&ctx->lock);
    mgpk_method_t m = mgpk_calib_choose(ctx, type, count, n, to_host, allow_host, flags);
    pthread_mutex_unlock(&ctx->lock);
    return m;
}

int mgpk_calib_get(mgpk_ctx_t *ctx, mgpk_calib_info_t *info)
{
    pthread_mutex_lock(&ctx->lock);
    int rc = cal_ensure(ctx);
    *info = ctx->calib;
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

int mgpk_calib_load(mgpk_ctx_t *ctx)
{
    /* Decided once per context: later operations read the flag, not the lock
       (a failed decision is retried under the lock by the next caller). */
    if (atomic_load_explicit(&ctx->calib_decided, memory_order_acquire))
        return MPI_SUCCESS;
    pthread_mutex_lock(&ctx->lock);
    int rc = cal_ensure(ctx);
    if (rc == MPI_SUCCESS && ctx->calib.source != MGPK_CAL_NONE)
        atomic_store_explicit(&ctx->calib_decided, 1, memory_order_release);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

void mgpk_calib_share(mgpk_ctx_t *dst, mgpk_ctx_t *src)
{
    if (dst == src || !atomic_load_explicit(&src->calib_decided, memory_order_acquire))
        return;
    /* src's table no longer changes once decided. */
    pthread_mutex_lock(&dst->lock);
    if (dst->calib.source == MGPK_CAL_NONE) {
        dst->calib = src->calib;
        atomic_store_explicit(&dst->calib_decided, 1, memory_order_release);
    }
    pthread_mutex_unlock(&dst->lock);
}
