/*
 * mgpk_pack / mgpk_unpack: choose the method, then route the packed side.
 *   device buffer            -> the method writes it directly;
 *   host, unified memory     -> the method writes host memory through a cached
 *                               CL_MEM_USE_HOST_PTR wrapper (zero copy);
 *   host, pinned ("dma")     -> chunks through device staging, each read
 *                               straight into (written straight from) the
 *                               caller's memory on the second queue while
 *                               the next chunk's kernel runs; contiguous
 *                               types are one read or write, no staging;
 *   host, otherwise          -> chunks through a ring of device and pinned
 *                               host staging: the kernels and reads of the
 *                               next chunks overlap the host's copy of chunk
 *                               k, split over the copy pool.
 * A range of one chunk is one kernel and one blocking transfer below
 * settings.split_bytes (4 MiB), NSTAGE pieces from there on.  Contiguous
 * data skips all of this: one buffer transfer under every method
 * (contig_move).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "mgpk_impl.h"

static const mgpk_method_ops_t *const method_table[] = {
    [MGPK_METHOD_AUTO] = &mgpk_kernel_ops,
    [MGPK_METHOD_KERNEL] = &mgpk_kernel_ops,
    [MGPK_METHOD_COPY] = &mgpk_copy_ops,
    [MGPK_METHOD_HOST] = NULL, /* the caller's business */
};

static int wait_release(cl_uint n, cl_event *evs, int rc)
{
    cl_event live[2 * MGPK_NSTAGE + 2];
    cl_uint nlive = 0;
    for (cl_uint i = 0; i < n; i++)
        if (evs[i])
            live[nlive++] = evs[i];
    if (nlive) {
        cl_int err = clWaitForEvents(nlive, live);
        if (rc == MPI_SUCCESS && err != CL_SUCCESS)
            rc = mgerr_cl(err, "clWaitForEvents", __FILE__, __LINE__);
    }
    for (cl_uint i = 0; i < n; i++)
        if (evs[i]) {
            clReleaseEvent(evs[i]);
            evs[i] = NULL;
        }
    return rc;
}

static void set_event(cl_event *slot, cl_event ev)
{
    if (*slot)
        clReleaseEvent(*slot);
    *slot = ev;
}

/* A packed range that fits one chunk: one queue, no events where the queue is
   in order, one blocking read or finish.  Small messages cost a kernel plus
   one transfer.  The transfer goes straight to or from host when it is pinned
   (direct), else through the pinned ring's first slot and a host copy. */
static int pipeline_one(mgpk_ctx_t *ctx, const mgpk_method_ops_t *ops, const mgpk_plan_t *plan,
                        char *host, int64_t first, int64_t n, int direct)
{
    int rc = MPI_SUCCESS;
    cl_event ev[2] = {NULL};
    cl_event *mine = ctx->in_order ? NULL : &ev[0];
    cl_uint nwait = ctx->in_order ? 0 : 1;
    char *xfer = direct ? host : ctx->pinp[0];
    if (plan->dir == MGPK_DIR_PACK) {
        rc = ops->enqueue(ctx, plan, ctx->stage[0], 0, first, n, 0, NULL, mine);
        MG_CHECK(rc, fn_fail);
        MG_CL_CHECK(clEnqueueReadBuffer(ctx->queue, ctx->stage[0], CL_TRUE, 0, (size_t)n, xfer,
                                        nwait, nwait ? ev : NULL, NULL),
                    "clEnqueueReadBuffer(staging)", rc, fn_fail);
        if (!direct)
            mgpk_hcopy_run(ctx->hcopy, host, xfer, (size_t)n);
    } else {
        if (!direct)
            mgpk_hcopy_run(ctx->hcopy, xfer, host, (size_t)n);
        MG_CL_CHECK(clEnqueueWriteBuffer(ctx->queue, ctx->stage[0], CL_FALSE, 0, (size_t)n, xfer, 0,
                                         NULL, mine),
                    "clEnqueueWriteBuffer(staging)", rc, fn_fail);
        rc = ops->enqueue(ctx, plan, ctx->stage[0], 0, first, n, nwait, nwait ? ev : NULL,
                          nwait ? &ev[1] : NULL);
        MG_CHECK(rc, fn_fail);
        if (ctx->in_order)
            MG_CL_CHECK(clFinish(ctx->queue), "clFinish", rc, fn_fail);
    }
fn_exit:
    return wait_release(2, ev, rc);
fn_fail:
    goto fn_exit;
}

/* Wait for one event, then release it. */
static int wait_one(cl_event *ev)
{
    return wait_release(1, ev, MPI_SUCCESS);
}

/* Pack: chunk i of the ring into slot s: the kernel fills stage[s] on the main
   queue, the copy queue reads it into pin[s].  Waits for the read that last
   used stage[s]; the host has copied pin[s] out already. */
static int pack_post(mgpk_ctx_t *ctx, const mgpk_method_ops_t *ops, const mgpk_plan_t *plan,
                     cl_event *ev, int s, int64_t first, int64_t len)
{
    int rc = MPI_SUCCESS;
    cl_event *kev = &ev[s], *cev = &ev[MGPK_NSTAGE + s], k = NULL, c = NULL;
    rc = ops->enqueue(ctx, plan, ctx->stage[s], 0, first, len, *cev ? 1 : 0, cev, &k);
    MG_CHECK(rc, fn_fail);
    set_event(kev, k);
    MG_CL_CHECK(clFlush(ctx->queue), "clFlush", rc, fn_fail);
    MG_CL_CHECK(clEnqueueReadBuffer(ctx->copy_queue, ctx->stage[s], CL_FALSE, 0, len, ctx->pinp[s],
                                    1, kev, &c),
                "clEnqueueReadBuffer(staging)", rc, fn_fail);
    set_event(cev, c);
    MG_CL_CHECK(clFlush(ctx->copy_queue), "clFlush", rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Unpack: the host fills pin[s] once the write that last used it is done, the
   copy queue writes it to stage[s] after the kernel that last read stage[s],
   and the kernel scatters it. */
static int unpack_post(mgpk_ctx_t *ctx, const mgpk_method_ops_t *ops, const mgpk_plan_t *plan,
                       cl_event *ev, int s, const char *host, int64_t first, int64_t len)
{
    int rc = MPI_SUCCESS;
    cl_event *kev = &ev[s], *cev = &ev[MGPK_NSTAGE + s], k = NULL, c = NULL;
    if (*cev) {
        rc = wait_one(cev);
        MG_CHECK(rc, fn_fail);
    }
    mgpk_hcopy_run(ctx->hcopy, ctx->pinp[s], host, len);
    MG_CL_CHECK(clEnqueueWriteBuffer(ctx->copy_queue, ctx->stage[s], CL_FALSE, 0, len, ctx->pinp[s],
                                     *kev ? 1 : 0, *kev ? kev : NULL, &c),
                "clEnqueueWriteBuffer(staging)", rc, fn_fail);
    set_event(cev, c);
    MG_CL_CHECK(clFlush(ctx->copy_queue), "clFlush", rc, fn_fail);
    rc = ops->enqueue(ctx, plan, ctx->stage[s], 0, first, len, 1, cev, &k);
    MG_CHECK(rc, fn_fail);
    set_event(kev, k);
    MG_CL_CHECK(clFlush(ctx->queue), "clFlush", rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Bytes per pipeline step for a host range of n bytes: the whole range
   (up to a chunk) below split_bytes, else at least NSTAGE steps of at most one chunk, so
   that a range of one or two chunks overlaps as well as a long one. */
static int64_t piece_bytes(const mgpk_ctx_t *ctx, int64_t n)
{
    int64_t chunk = (int64_t)ctx->stage_bytes, p;
    int64_t split = ctx->settings.split_bytes ? (int64_t)ctx->settings.split_bytes : MGPK_SPLIT_MIN;
    if (n < split)
        return n < chunk ? n : chunk;
    p = ((n + MGPK_NSTAGE - 1) / MGPK_NSTAGE + 4095) & ~(int64_t)4095;
    return p < chunk ? p : chunk;
}

/*
 * Host side through the staging ring of MGPK_NSTAGE slots (device chunk
 * stage[s], pinned host chunk pin[s]).  Transfers to pinned memory run at the
 * bus's speed; into pageable memory the driver bounces them through its own
 * buffer.  Pack keeps NSTAGE - 1 chunks queued ahead of the one the host
 * copies out, so that the copy queue reads back to back while the copy pool
 * empties pinned slots; unpack lets the host fill up to NSTAGE slots ahead of
 * the writes and kernels.  ev[s] (kernel) and ev[NSTAGE + s] (transfer) are
 * the last commands that used slot s.
 */
static int run_pipeline(mgpk_ctx_t *ctx, const mgpk_method_ops_t *ops, const mgpk_plan_t *plan,
                        char *host, int64_t first, int64_t n)
{
    int rc = mgpk_ctx_stage(ctx);
    cl_event ev[2 * MGPK_NSTAGE] = {NULL};
    MG_CHECK(rc, fn_fail);
    int64_t chunk = piece_bytes(ctx, n);
    if (n <= chunk) {
        rc = pipeline_one(ctx, ops, plan, host, first, n, 0);
        goto fn_exit;
    }
    int64_t nchunks = (n + chunk - 1) / chunk;
    for (int64_t i = 0; i < nchunks + (plan->dir == MGPK_DIR_PACK ? MGPK_NSTAGE - 1 : 0); i++) {
        int64_t off = i * chunk, len = n - off < chunk ? n - off : chunk;
        if (plan->dir == MGPK_DIR_UNPACK) {
            rc = unpack_post(ctx, ops, plan, ev, (int)(i % MGPK_NSTAGE), host + off, first + off,
                             len);
            MG_CHECK(rc, fn_fail);
            continue;
        }
        if (i < nchunks) {
            /* Slot i % NSTAGE held chunk i - NSTAGE, copied out at step i - 1. */
            rc = pack_post(ctx, ops, plan, ev, (int)(i % MGPK_NSTAGE), first + off, len);
            MG_CHECK(rc, fn_fail);
        }
        int64_t j = i - (MGPK_NSTAGE - 1), joff = j * chunk;
        if (j >= 0) {
            int s = (int)(j % MGPK_NSTAGE);
            rc = wait_one(&ev[MGPK_NSTAGE + s]);
            MG_CHECK(rc, fn_fail);
            mgpk_hcopy_run(ctx->hcopy, host + joff, ctx->pinp[s],
                           (size_t)(n - joff < chunk ? n - joff : chunk));
        }
    }
fn_exit:
    return wait_release(2 * MGPK_NSTAGE, ev, rc);
fn_fail:
    goto fn_exit;
}

/* A contiguous type needs no staging: one transfer between the typed buffer
   and host memory. */
static int dma_contig(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, char *host, int64_t first,
                      int64_t n)
{
    int rc = MPI_SUCCESS;
    size_t t = (size_t)(plan->typed_off + mgpk_contig_offset(plan->type, plan->count) + first);
    if (plan->dir == MGPK_DIR_PACK)
        MG_CL_CHECK(clEnqueueReadBuffer(ctx->queue, plan->typed, CL_TRUE, t, (size_t)n, host, 0,
                                        NULL, NULL),
                    "clEnqueueReadBuffer(contiguous type)", rc, fn_fail);
    else
        MG_CL_CHECK(mgpk_write(ctx, plan->typed, t, host, (size_t)n, CL_TRUE, 0, NULL, NULL),
                    "clEnqueueWriteBuffer(contiguous type)", rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Pack step i into slot s: the method fills stage[s] on the main queue once
   the read that last used it is done. */
static int dma_kernel(mgpk_ctx_t *ctx, const mgpk_method_ops_t *ops, const mgpk_plan_t *plan,
                      cl_event *ev, int s, int64_t first, int64_t len)
{
    int rc = MPI_SUCCESS;
    cl_event *cev = &ev[MGPK_NSTAGE + s], k = NULL;
    rc = ops->enqueue(ctx, plan, ctx->stage[s], 0, first, len, *cev ? 1 : 0, cev, &k);
    MG_CHECK(rc, fn_fail);
    set_event(&ev[s], k);
    MG_CL_CHECK(clFlush(ctx->queue), "clFlush", rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/*
 * Host memory read or written straight by the transfers, chunk by chunk
 * through the NSTAGE device staging slots.  Pack enqueues the kernel of step
 * i + 1 before the read of step i, so that a driver whose non-blocking read
 * blocks (pageable memory) still runs the next kernel meanwhile.  Unpack
 * writes step i into stage[s] once the kernel that last read it is done, and
 * scatters it.  ev[s] (method) and ev[NSTAGE + s] (transfer) are the last
 * commands that used slot s.
 */
static int run_dma(mgpk_ctx_t *ctx, const mgpk_method_ops_t *ops, const mgpk_plan_t *plan,
                   char *host, int64_t first, int64_t n)
{
    int rc = MPI_SUCCESS;
    cl_event ev[2 * MGPK_NSTAGE] = {NULL};
    if (plan->contig) {
        rc = dma_contig(ctx, plan, host, first, n);
        goto fn_exit;
    }
    rc = mgpk_ctx_stage(ctx);
    MG_CHECK(rc, fn_fail);
    int64_t step = piece_bytes(ctx, n);
    if (n <= step) {
        rc = pipeline_one(ctx, ops, plan, host, first, n, 1);
        goto fn_exit;
    }
    int64_t nsteps = (n + step - 1) / step;
    if (plan->dir == MGPK_DIR_PACK) {
        rc = dma_kernel(ctx, ops, plan, ev, 0, first, step);
        MG_CHECK(rc, fn_fail);
    }
    for (int64_t i = 0; i < nsteps; i++) {
        int s = (int)(i % MGPK_NSTAGE);
        int64_t off = i * step, len = n - off < step ? n - off : step;
        cl_event *kev = &ev[s], *cev = &ev[MGPK_NSTAGE + s], c = NULL, k = NULL;
        if (plan->dir == MGPK_DIR_PACK) {
            if (i + 1 < nsteps) {
                int64_t noff = off + step, nlen = n - noff < step ? n - noff : step;
                rc = dma_kernel(ctx, ops, plan, ev, (int)((i + 1) % MGPK_NSTAGE), first + noff,
                                nlen);
                MG_CHECK(rc, fn_fail);
            }
            MG_CL_CHECK(clEnqueueReadBuffer(ctx->copy_queue, ctx->stage[s], CL_FALSE, 0,
                                            (size_t)len, host + off, 1, kev, &c),
                        "clEnqueueReadBuffer(to host)", rc, fn_fail);
            set_event(cev, c);
            MG_CL_CHECK(clFlush(ctx->copy_queue), "clFlush", rc, fn_fail);
        } else {
            MG_CL_CHECK(clEnqueueWriteBuffer(ctx->copy_queue, ctx->stage[s], CL_FALSE, 0,
                                             (size_t)len, host + off, *kev ? 1 : 0,
                                             *kev ? kev : NULL, &c),
                        "clEnqueueWriteBuffer(from host)", rc, fn_fail);
            set_event(cev, c);
            MG_CL_CHECK(clFlush(ctx->copy_queue), "clFlush", rc, fn_fail);
            rc = ops->enqueue(ctx, plan, ctx->stage[s], 0, first + off, len, 1, cev, &k);
            MG_CHECK(rc, fn_fail);
            set_event(kev, k);
            MG_CL_CHECK(clFlush(ctx->queue), "clFlush", rc, fn_fail);
        }
    }
fn_exit:
    return wait_release(2 * MGPK_NSTAGE, ev, rc);
fn_fail:
    goto fn_exit;
}

/* Host side written in place: map/unmap around the method so that the
   runtime keeps host memory and the buffer coherent (free where unified). */
static int run_direct(mgpk_ctx_t *ctx, const mgpk_method_ops_t *ops, const mgpk_plan_t *plan,
                      cl_mem wrap, int64_t first, int64_t n)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    cl_event ev[3] = {NULL};
    void *p;
    if (plan->dir == MGPK_DIR_UNPACK) {
        p = clEnqueueMapBuffer(ctx->queue, wrap, CL_FALSE, CL_MAP_WRITE, 0, n, 0, NULL, &ev[0],
                               &err);
        MG_CL_CHECK(err, "clEnqueueMapBuffer", rc, fn_fail);
        MG_CL_CHECK(clEnqueueUnmapMemObject(ctx->queue, wrap, p, 1, &ev[0], &ev[1]),
                    "clEnqueueUnmapMemObject", rc, fn_fail);
        rc = ops->enqueue(ctx, plan, wrap, 0, first, n, 1, &ev[1], &ev[2]);
        MG_CHECK(rc, fn_fail);
    } else {
        rc = ops->enqueue(ctx, plan, wrap, 0, first, n, 0, NULL, &ev[0]);
        MG_CHECK(rc, fn_fail);
        p = clEnqueueMapBuffer(ctx->queue, wrap, CL_FALSE, CL_MAP_READ, 0, n, 1, &ev[0], &ev[1],
                               &err);
        MG_CL_CHECK(err, "clEnqueueMapBuffer", rc, fn_fail);
        MG_CL_CHECK(clEnqueueUnmapMemObject(ctx->queue, wrap, p, 1, &ev[1], &ev[2]),
                    "clEnqueueUnmapMemObject", rc, fn_fail);
    }
fn_exit:
    return wait_release(3, ev, rc);
fn_fail:
    goto fn_exit;
}

/* Both sides on the device: the method's commands, then one clFinish where
   the queue is in order (no event to create, wait for and release, as a
   hand-written launch does), else a wait for the method's event. */
static int run_device(mgpk_ctx_t *ctx, const mgpk_method_ops_t *ops, const mgpk_plan_t *plan,
                      mgpk_buf_t packed, int64_t first, int64_t n)
{
    cl_event ev = NULL;
    int rc = ops->enqueue(ctx, plan, packed.mem, packed.offset, first, n, 0, NULL,
                          ctx->in_order ? NULL : &ev);
    if (rc == MPI_SUCCESS && ctx->in_order) {
        cl_int err = clFinish(ctx->queue);
        if (err != CL_SUCCESS)
            rc = mgerr_cl(err, "clFinish", __FILE__, __LINE__);
    }
    return wait_release(1, &ev, rc);
}

/* The call's method: its flags' choice, else the setting. */
static mgpk_method_t call_method(const mgpk_ctx_t *ctx, int flags)
{
    mgpk_method_t m = MGPK_F_METHOD_OF(flags);
    return m != MGPK_METHOD_AUTO ? m : ctx->settings.method;
}

/* contig: the call moves one run (contig_move), whatever its method. */
static int check_args(const mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count,
                      mgpk_buf_t typed, int64_t first, int64_t n, int flags, int contig)
{
    int rc = MPI_SUCCESS;
    mgpk_method_t method = call_method(ctx, flags);
    if (!contig && ((unsigned)method >= sizeof(method_table) / sizeof(method_table[0]) ||
                    !method_table[method]))
        MG_FAIL(rc, fn_fail, MPI_ERR_UNSUPPORTED_OPERATION,
                "mgpk: method %d is handled by the caller", (int)method);
    if (!typed.mem || typed.host)
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER, "mgpk: the typed side must be a device buffer");
    if (n < 0 || first < 0 || count < 0 || (type->size > 0 && first + n > count * type->size))
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mgpk: range [%lld, +%lld) outside %lld bytes",
                (long long)first, (long long)n, (long long)(count * type->size));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Route the packed side and run; ctx->lock held. */
int mgpk_transfer_locked(mgpk_ctx_t *ctx, mgpk_plan_t *plan, mgpk_buf_t packed, int64_t first,
                         int64_t n)
{
    int rc = MPI_SUCCESS;
    mgpk_method_t m = call_method(ctx, plan->flags);
    if (m == MGPK_METHOD_AUTO) {
        m = mgpk_calib_choose(ctx, plan->type, plan->count, n, packed.host != NULL, 0, plan->flags);
        /* The copy method moves whole instances as rectangles; a range that
           cuts an instance (a piece of the chunked protocol) would take one
           command per run, thousands for a fine type. */
        int64_t sz = plan->type->size;
        if (m == MGPK_METHOD_COPY && sz > 0 && (first % sz || n % sz))
            m = MGPK_METHOD_KERNEL;
        plan->flags = (plan->flags & ~MGPK_F_METHOD(3)) | MGPK_F_METHOD(m);
    }
    const mgpk_method_ops_t *ops = method_table[m];
    const char *path;
    cl_mem wrap = NULL;
    int64_t hint = 0;
    int dma = 0, rect = 0;

    if (!packed.host) {
        path = "device";
        hint = packed.offset;
    } else if (ctx->unified && !ctx->settings.force_pipeline) {
        path = "direct";
        hint = (int64_t)(intptr_t)packed.host;
        rc = mgpk_ctx_wrap(ctx, packed.host, (size_t)n, &wrap);
        MG_CHECK(rc, fn_fail);
    } else if (m == MGPK_METHOD_COPY && mgpk_host_rect(ctx, plan->type, plan->count, n)) {
        /* A shared GPU: rectangles straight to or from host, no copy
           between device buffers (mgpk_write says why). */
        path = "rect";
        rect = 1;
    } else if (ctx->settings.host_dma == MGPK_DMA_ON ||
               (ctx->settings.host_dma == MGPK_DMA_AUTO && packed.pinned)) {
        path = "dma";
        dma = 1;
    } else {
        path = "pipeline";
    }
    rc = ops->plan(ctx, plan, first, n, hint);
    MG_CHECK(rc, fn_fail);
    MGPK_LOG(ctx, "%s %lld B %s W=%d %s%s", plan->dir ? "unpack" : "pack", (long long)n, plan->what,
             plan->width, path, plan->flags & MGPK_F_EXTERNAL32 ? " external32" : "");
    if (!packed.host)
        rc = run_device(ctx, ops, plan, packed, first, n);
    else if (wrap)
        rc = run_direct(ctx, ops, plan, wrap, first, n);
    else if (rect)
        rc = mgpk_copy_host(ctx, plan, packed.host, first, n);
    else if (dma)
        rc = run_dma(ctx, ops, plan, packed.host, first, n);
    else
        rc = run_pipeline(ctx, ops, plan, packed.host, first, n);
    MG_CHECK(rc, fn_fail);
    ctx->stats.last_path = path;
    ctx->stats.last_what = plan->what;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Contiguous data (mgpk_contig), native: one buffer transfer between the
   typed buffer and the packed side, under every method and on every path
   (no kernel, no staging, no wrapper; the driver stages pageable memory
   itself).  A kernel, even a copy kernel, costs a context switch where
   processes share a GPU (issue 31), and a transfer needs none.  Counted as
   the copy method. */
static int contig_move(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, mgpk_dir_t dir,
                       mgpk_buf_t typed, mgpk_buf_t packed, int64_t first, int64_t n)
{
    typed.offset += mgpk_contig_offset(type, count) + first;
    typed.pinned = 0;
    int rc = dir == MGPK_DIR_PACK ? mgpk_copy(ctx, packed, typed, (size_t)n)
                                  : mgpk_copy(ctx, typed, packed, (size_t)n);
    if (rc != MPI_SUCCESS)
        return rc;
    const char *path = packed.host ? "transfer" : "device";
    mgpk_count_call(ctx, dir == MGPK_DIR_UNPACK, MGPK_METHOD_COPY, n);
    pthread_mutex_lock(&ctx->lock);
    ctx->stats.last_path = path;
    ctx->stats.last_what = "contiguous copy";
    pthread_mutex_unlock(&ctx->lock);
    MGPK_LOG(ctx, "%s %lld B contiguous copy W=0 %s", dir ? "unpack" : "pack", (long long)n, path);
    return rc;
}

static int transfer(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, mgpk_dir_t dir,
                    mgpk_buf_t typed, mgpk_buf_t packed, int64_t first, int64_t n, int flags,
                    const mgpk_block_t *blocks, int nblocks)
{
    int contig = !(flags & MGPK_F_EXTERNAL32) && mgpk_contig(type, count);
    int rc = check_args(ctx, type, count, typed, first, n, flags, contig);
    MG_CHECK(rc, fn_exit);
    if (n == 0 || type->size == 0)
        goto fn_exit;
    if (contig) {
        rc = contig_move(ctx, type, count, dir, typed, packed, first, n);
        goto fn_exit;
    }
    const mgdt_type_t *view = flags & MGPK_F_EXTERNAL32 ? type : mgpk_native_view(ctx, type, count);
    mgpk_plan_t plan = {.type = view,
                        .count = count,
                        .dir = dir,
                        .flags = flags,
                        .typed = typed.mem,
                        .typed_off = typed.offset,
                        .blocks = blocks,
                        .nblocks = nblocks};
    pthread_mutex_lock(&ctx->lock);
    rc = mgpk_transfer_locked(ctx, &plan, packed, first, n);
    pthread_mutex_unlock(&ctx->lock);
    if (rc == MPI_SUCCESS)
        mgpk_count_call(ctx, dir == MGPK_DIR_UNPACK, MGPK_F_METHOD_OF(plan.flags), n);
fn_exit:
    return rc;
}

int mgpk_pack(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, mgpk_buf_t src,
              mgpk_buf_t dst, int64_t first, int64_t n, int flags)
{
    return transfer(ctx, type, count, MGPK_DIR_PACK, src, dst, first, n, flags, NULL, 0);
}

int mgpk_unpack(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count, mgpk_buf_t src,
                mgpk_buf_t dst, int64_t first, int64_t n, int flags)
{
    return transfer(ctx, type, count, MGPK_DIR_UNPACK, dst, src, first, n, flags, NULL, 0);
}

int mgpk_pack_multi(mgpk_ctx_t *ctx, const mgdt_type_t *type, const mgpk_block_t *blocks,
                    int nblocks, mgpk_buf_t src, mgpk_buf_t dst, int flags)
{
    return transfer(ctx, type, 1, MGPK_DIR_PACK, src, dst, 0, type->size, flags, blocks, nblocks);
}

int mgpk_unpack_multi(mgpk_ctx_t *ctx, const mgdt_type_t *type, const mgpk_block_t *blocks,
                      int nblocks, mgpk_buf_t src, mgpk_buf_t dst, int flags)
{
    return transfer(ctx, type, 1, MGPK_DIR_UNPACK, dst, src, 0, type->size, flags, blocks, nblocks);
}

int mgpk_enqueue(mgpk_ctx_t *ctx, cl_command_queue queue, const mgdt_type_t *type, int64_t count,
                 int unpack, mgpk_buf_t typed, mgpk_buf_t packed, int64_t first, int64_t n,
                 cl_uint nwait, const cl_event *wait, cl_event *done, int flags)
{
    int rc = MPI_SUCCESS;
    mgpk_dir_t dir = unpack ? MGPK_DIR_UNPACK : MGPK_DIR_PACK;
    *done = NULL;
    if (!packed.mem || packed.host || !typed.mem || typed.host || count < 0 || first < 0 ||
        n <= 0 || first + n > count * type->size)
        MG_FAIL(rc, fn_exit, MPI_ERR_ARG,
                "mgpk: mgpk_enqueue takes two device buffers and a range of the packed bytes");
    const mgdt_type_t *view = flags & MGPK_F_EXTERNAL32 ? type : mgpk_native_view(ctx, type, count);
    mgpk_plan_t plan = {.type = view,
                        .count = count,
                        .dir = dir,
                        .flags = (flags & ~MGPK_F_METHOD(3)) | MGPK_F_METHOD(MGPK_METHOD_KERNEL),
                        .typed = typed.mem,
                        .typed_off = typed.offset};
    if (!(flags & MGPK_F_EXTERNAL32) && mgpk_contig(type, count)) {
        /* one run: a copy between the buffers */
        plan.contig = 1;
        plan.queue = queue;
        rc =
            mgpk_contig_enqueue(ctx, &plan, packed.mem, packed.offset, first, n, nwait, wait, done);
        goto fn_exit;
    }
    pthread_mutex_lock(&ctx->lock);
    /* The plan uploads what the kernel reads (created from host memory,
       complete at once) on the engine's side; only the launch goes on queue. */
    rc = mgpk_kernel_ops.plan(ctx, &plan, first, n, packed.offset);
    plan.queue = queue;
    if (rc == MPI_SUCCESS)
        rc = mgpk_kernel_ops.enqueue(ctx, &plan, packed.mem, packed.offset, first, n, nwait, wait,
                                     done);
    pthread_mutex_unlock(&ctx->lock);
    if (rc == MPI_SUCCESS)
        mgpk_count_call(ctx, unpack, MGPK_METHOD_KERNEL, n);
fn_exit:
    return rc;
}
