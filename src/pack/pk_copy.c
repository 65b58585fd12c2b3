/*
 * The copy method: no kernel.  Vector and subarray shapes become
 * clEnqueueCopyBufferRect commands over whole instances; everything else is
 * one clEnqueueCopyBuffer per contiguous run, found by walking the serialized
 * tree on the host.  Also mgpk_copy, the plain contiguous copy.
 */
#include "config.h"

#include <string.h>

#include "mgpk_impl.h"

/*
 * A host-to-device write of n bytes from host to mem at off.  On NVIDIA's
 * OpenCL a write shorter than 32 KiB (clEnqueueWriteBuffer, or a rectangle
 * of one row) runs on the compute channel: where another process of the
 * node uses the GPU, it waits for a context switch, 140 us against 10 us for
 * the same bytes as a rectangle of two rows (test/perf/shareprobe, H200,
 * doc/performance.md).  So on a shared GPU (kernel_switch_us > 0) a write
 * shorter than settings.inline_max goes as two rows, and an odd length as
 * n - 1 bytes in two rows then its last two bytes as two rows of one.  The
 * last command signals done; blocking makes the last one blocking.
 */
cl_int mgpk_write_queue(mgpk_ctx_t *ctx, cl_command_queue queue, cl_mem mem, size_t off,
                        const void *host, size_t n, cl_bool blocking, cl_uint nwait,
                        const cl_event *wait, cl_event *done, cl_event *lead)
{
    if (lead)
        *lead = NULL;
    if (n < 2 || ctx->settings.kernel_switch_us <= 0 || n >= ctx->settings.inline_max)
        return clEnqueueWriteBuffer(queue, mem, blocking, off, n, host, nwait, wait, done);
    size_t half = n / 2, zero[3] = {0, 0, 0};
    size_t bo[3] = {off, 0, 0}, region[3] = {half, 2, 1};
    cl_event first = NULL;
    cl_int err =
        clEnqueueWriteBufferRect(queue, mem, n % 2 ? CL_FALSE : blocking, bo, zero, region, half, 0,
                                 half, 0, host, nwait, wait, n % 2 ? &first : done);
    if (err != CL_SUCCESS || n % 2 == 0)
        return err;
    /* The tail waits for the first rectangle, so that done covers both on
       an out-of-order queue too. */
    size_t to[3] = {off + n - 2, 0, 0}, tail[3] = {1, 2, 1};
    err = clEnqueueWriteBufferRect(queue, mem, blocking, to, zero, tail, 1, 0, 1, 0,
                                   (const char *)host + n - 2, 1, &first, done);
    if (lead)
        *lead = first;
    else
        clReleaseEvent(first);
    return err;
}

cl_int mgpk_write(mgpk_ctx_t *ctx, cl_mem mem, size_t off, const void *host, size_t n,
                  cl_bool blocking, cl_uint nwait, const cl_event *wait, cl_event *done)
{
    return mgpk_write_queue(ctx, ctx->queue, mem, off, host, n, blocking, nwait, wait, done, NULL);
}

/* The packed side of a copy: a device buffer, or host memory (host set). */
typedef struct {
    cl_mem mem;
    char *host;
} side_t;

static cl_int copy_run(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, side_t packed, int64_t packed_off,
                       int64_t user_off, int64_t len)
{
    size_t t = (size_t)(plan->typed_off + user_off), p = (size_t)packed_off;
    int pack = plan->dir == MGPK_DIR_PACK;
    if (packed.host && pack)
        return clEnqueueReadBuffer(ctx->queue, plan->typed, CL_FALSE, t, (size_t)len,
                                   packed.host + p, 0, NULL, NULL);
    if (packed.host)
        return mgpk_write(ctx, plan->typed, t, packed.host + p, (size_t)len, CL_FALSE, 0, NULL,
                          NULL);
    if (pack)
        return clEnqueueCopyBuffer(ctx->queue, plan->typed, packed.mem, t, p, len, 0, NULL, NULL);
    return clEnqueueCopyBuffer(ctx->queue, packed.mem, plan->typed, p, t, len, 0, NULL, NULL);
}

static int copy_runs(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, side_t packed, int64_t packed_off,
                     int64_t first, int64_t n)
{
    int rc = MPI_SUCCESS;
    int64_t run_off = 0, run_len = 0, run_pk = packed_off;
    for (int64_t pos = first; pos < first + n;) {
        int64_t left, off = mgdt_ref_run(plan->type, pos, &left);
        if (left > first + n - pos)
            left = first + n - pos;
        if (run_len && off == run_off + run_len) {
            run_len += left;
        } else {
            if (run_len)
                MG_CL_CHECK(copy_run(ctx, plan, packed, run_pk, run_off, run_len), "copy of a run",
                            rc, fn_fail);
            run_pk = packed_off + (pos - first);
            run_off = off;
            run_len = left;
        }
        pos += left;
    }
    if (run_len)
        MG_CL_CHECK(copy_run(ctx, plan, packed, run_pk, run_off, run_len), "copy of a run", rc,
                    fn_fail);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/*
 * One rectangle between the typed buffer (at t, with pitches row and slice)
 * and the packed buffer (at pk, tight).  NVIDIA's OpenCL rejects a rectangle
 * whose last slice or row, counted at its full pitch, would end past the
 * buffer, although the bytes copied stay inside (CL_INVALID_VALUE, seen on an
 * H100); the specification counts only the bytes copied.  So a rectangle that
 * ends within one pitch of the buffer's end has its last slice, then its last
 * row, peeled off.
 */
static cl_int rect_copy(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, side_t packed, size_t t,
                        size_t pk, const size_t region[3], size_t row, size_t slice, size_t tsize)
{
    size_t r[3] = {region[0], region[1], region[2]};
    size_t full = r[2] > 1 ? t + r[2] * slice : t + r[1] * row;
    int pack = plan->dir == MGPK_DIR_PACK;
    if (full > tsize && r[2] > 1) {
        size_t lead[3] = {r[0], r[1], r[2] - 1}, last[3] = {r[0], r[1], 1};
        cl_int err = rect_copy(ctx, plan, packed, t, pk, lead, row, slice, tsize);
        if (err == CL_SUCCESS)
            err = rect_copy(ctx, plan, packed, t + (r[2] - 1) * slice,
                            pk + (r[2] - 1) * r[0] * r[1], last, row, 0, tsize);
        return err;
    }
    if (full > tsize && r[1] > 1) {
        size_t lead[3] = {r[0], r[1] - 1, 1};
        size_t tl = t + (r[1] - 1) * row, pl = pk + (r[1] - 1) * r[0];
        cl_int err = rect_copy(ctx, plan, packed, t, pk, lead, row, 0, tsize);
        if (err == CL_SUCCESS)
            err = copy_run(ctx, plan, packed, (int64_t)pl, (int64_t)tl - plan->typed_off,
                           (int64_t)r[0]);
        return err;
    }
    if (r[1] == 1 && r[2] == 1)
        return copy_run(ctx, plan, packed, (int64_t)pk, (int64_t)t - plan->typed_off,
                        (int64_t)r[0]);
    size_t to[3] = {t, 0, 0}, po[3] = {pk, 0, 0}, zero[3] = {0, 0, 0};
    if (packed.host && pack)
        return clEnqueueReadBufferRect(ctx->queue, plan->typed, CL_FALSE, to, zero, r, row, slice,
                                       r[0], r[0] * r[1], packed.host + pk, 0, NULL, NULL);
    if (packed.host)
        return clEnqueueWriteBufferRect(ctx->queue, plan->typed, CL_FALSE, to, zero, r, row, slice,
                                        r[0], r[0] * r[1], packed.host + pk, 0, NULL, NULL);
    if (pack)
        return clEnqueueCopyBufferRect(ctx->queue, plan->typed, packed.mem, to, po, r, row, slice,
                                       r[0], r[0] * r[1], 0, NULL, NULL);
    return clEnqueueCopyBufferRect(ctx->queue, packed.mem, plan->typed, po, to, r, r[0],
                                   r[0] * r[1], row, slice, 0, NULL, NULL);
}

/* Whole instances of a vector or subarray shape as rectangles: the two
   innermost dimensions of (instances, shape dims) go into one rect command
   when their pitches allow, the outer ones loop.  Returns 0 when not
   applicable. */
/* The rectangles of bytes [first, first + n) (whole instances) of count
   instances of a vector or subarray shape: dimensions dn[] of pitch dp[]
   (outermost first, those of one dropped), the innermost `inner` of which
   one rectangle command (region, row and slice pitch) takes; 0 where the
   range or the type has no such shape. */
typedef struct rect_dims {
    int64_t dn[4], dp[4];
    int nd, inner;
    size_t region[3], row, slice;
} rect_dims_t;

static int rect_dims(const mgdt_type_t *type, int64_t count, int64_t first, int64_t n,
                     rect_dims_t *r)
{
    const mgdt_shape_t *sh = &type->shape;
    int64_t *dn = r->dn, *dp = r->dp, bl = sh->blocklen;
    int nd = 0;
    if (type->size <= 0 || first % type->size || n % type->size || !mgpk_shape_ok(type, count) ||
        (sh->kind != MGDT_SHAPE_VECTOR && sh->kind != MGDT_SHAPE_SUBARRAY))
        return 0;
    dn[nd] = n / type->size;
    dp[nd++] = type->extent;
    if (sh->kind == MGDT_SHAPE_VECTOR) {
        dn[nd] = sh->count;
        dp[nd++] = sh->stride;
    } else {
        for (int d = 0; d < 3; d++) {
            dn[nd] = sh->sub[d] > 0 ? sh->sub[d] : 1;
            dp[nd++] = sh->strides[d];
        }
    }
    /* Drop dimensions of one. */
    int m = 0;
    for (int d = 0; d < nd; d++)
        if (dn[d] > 1) {
            dn[m] = dn[d];
            dp[m++] = dp[d];
        }
    nd = m;
    size_t *region = r->region;
    region[0] = (size_t)bl;
    region[1] = region[2] = 1;
    r->row = r->slice = 0;
    r->inner = 0; /* dimensions taken by the rect command */
    r->nd = nd;
    if (nd >= 1) {
        if (dp[nd - 1] < bl)
            return 0;
        region[1] = dn[nd - 1];
        r->row = dp[nd - 1];
        r->inner = 1;
        if (nd >= 2 && dp[nd - 2] > 0 && (size_t)dp[nd - 2] >= region[1] * r->row &&
            dp[nd - 2] % (int64_t)r->row == 0) {
            region[2] = dn[nd - 2];
            r->slice = dp[nd - 2];
            r->inner = 2;
        }
    }
    return 1;
}

int64_t mgpk_rect_commands(const mgdt_type_t *type, int64_t count, int64_t n)
{
    rect_dims_t r;
    if (!rect_dims(type, count, 0, n, &r))
        return 0;
    int64_t k = 1;
    for (int d = 0; d < r.nd - r.inner; d++)
        k *= r.dn[d];
    return k;
}

static int copy_rects(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, side_t packed, int64_t packed_off,
                      int64_t first, int64_t n, int *done_rc)
{
    const mgdt_type_t *type = plan->type;
    const mgdt_shape_t *sh = &type->shape;
    rect_dims_t r;
    int rc = MPI_SUCCESS;
    if (!rect_dims(type, plan->count, first, n, &r))
        return 0;
    const int64_t *dn = r.dn, *dp = r.dp;
    int nd = r.nd, inner = r.inner;
    size_t *region = r.region, row = r.row, slice = r.slice;
    size_t tsize = 0;
    MG_CL_CHECK(clGetMemObjectInfo(plan->typed, CL_MEM_SIZE, sizeof(tsize), &tsize, NULL),
                "clGetMemObjectInfo(CL_MEM_SIZE)", rc, fn_fail);
    int64_t base = plan->typed_off + (first / type->size) * type->extent + sh->offset;
    int64_t idx[4] = {0, 0, 0, 0}, pk = packed_off;
    size_t per = region[0] * region[1] * region[2];
    for (;;) {
        int64_t t = base;
        for (int d = 0; d < nd - inner; d++)
            t += idx[d] * dp[d];
        cl_int err = rect_copy(ctx, plan, packed, (size_t)t, (size_t)pk, region, row, slice, tsize);
        MG_CL_CHECK(err, "copy of a rectangle", rc, fn_fail);
        pk += per;
        int d = nd - inner - 1;
        while (d >= 0 && ++idx[d] == dn[d])
            idx[d--] = 0;
        if (d < 0)
            break;
    }
fn_exit:
    *done_rc = rc;
    return 1;
fn_fail:
    goto fn_exit;
}

int mgpk_contig_enqueue(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, cl_mem packed, int64_t packed_off,
                        int64_t first, int64_t n, cl_uint nwait, const cl_event *wait,
                        cl_event *done)
{
    int rc = MPI_SUCCESS;
    size_t t = (size_t)(plan->typed_off + mgpk_contig_offset(plan->type, plan->count) + first);
    size_t p = (size_t)packed_off;
    cl_mem src = plan->dir == MGPK_DIR_PACK ? plan->typed : packed;
    cl_mem dst = plan->dir == MGPK_DIR_PACK ? packed : plan->typed;
    MG_CL_CHECK(clEnqueueCopyBuffer(mgpk_plan_queue(ctx, plan), src, dst,
                                    plan->dir == MGPK_DIR_PACK ? t : p,
                                    plan->dir == MGPK_DIR_PACK ? p : t, (size_t)n, nwait,
                                    nwait ? wait : NULL, done),
                "clEnqueueCopyBuffer(contiguous type)", rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int copy_plan(mgpk_ctx_t *ctx, mgpk_plan_t *plan, int64_t first, int64_t n, int64_t hint)
{
    int rc = MPI_SUCCESS;
    const mgdt_type_t *type = plan->type;
    if (plan->flags & MGPK_F_EXTERNAL32)
        MG_FAIL(rc, fn_fail, MPI_ERR_UNSUPPORTED_OPERATION,
                "mgpk: the copy method cannot byte-swap for external32");
    plan->width = 0;
    plan->contig = mgpk_contig(type, plan->count);
    plan->what = plan->contig ? "contiguous copy" : "copy commands";
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int copy_enqueue(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, cl_mem packed, int64_t packed_off,
                        int64_t first, int64_t n, cl_uint nwait, const cl_event *wait,
                        cl_event *done)
{
    int rc = MPI_SUCCESS;
    if (plan->contig) {
        rc = mgpk_contig_enqueue(ctx, plan, packed, packed_off, first, n, nwait, wait, done);
        goto fn_exit;
    }
    if (nwait)
        MG_CL_CHECK(clEnqueueBarrierWithWaitList(ctx->queue, nwait, wait, NULL),
                    "clEnqueueBarrierWithWaitList", rc, fn_fail);
    side_t side = {.mem = packed};
    if (!copy_rects(ctx, plan, side, packed_off, first, n, &rc))
        rc = copy_runs(ctx, plan, side, packed_off, first, n);
    MG_CHECK(rc, fn_fail);
    if (done)
        MG_CL_CHECK(clEnqueueMarkerWithWaitList(ctx->queue, 0, NULL, done),
                    "clEnqueueMarkerWithWaitList", rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* The copy method between the typed buffer and host memory with no device
   staging: read or write rectangles and runs straight to or from host, then
   wait (mgpk_transfer_locked takes this route for short ranges on a shared
   GPU, where a copy between device buffers would wait for a context
   switch; see mgpk_write). */
int mgpk_copy_host(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, char *host, int64_t first, int64_t n)
{
    int rc = MPI_SUCCESS;
    side_t side = {.host = host};
    if (!copy_rects(ctx, plan, side, 0, first, n, &rc))
        rc = copy_runs(ctx, plan, side, 0, first, n);
    MG_CHECK(rc, fn_fail);
    MG_CL_CHECK(clFinish(ctx->queue), "clFinish", rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    clFinish(ctx->queue); /* nothing enqueued may outlive the call */
    goto fn_exit;
}

const mgpk_method_ops_t mgpk_copy_ops = {
    .name = "copy",
    .plan = copy_plan,
    .enqueue = copy_enqueue,
};

int mgpk_copy(mgpk_ctx_t *ctx, mgpk_buf_t dst, mgpk_buf_t src, size_t n)
{
    int rc = MPI_SUCCESS;
    cl_event ev = NULL;
    if (n == 0)
        goto fn_exit;
    if (dst.host && src.host) {
        memmove(dst.host, src.host, n);
    } else if (dst.host) {
        MG_CL_CHECK(clEnqueueReadBuffer(ctx->queue, src.mem, CL_TRUE, (size_t)src.offset, n,
                                        dst.host, 0, NULL, NULL),
                    "clEnqueueReadBuffer", rc, fn_fail);
    } else if (src.host) {
        MG_CL_CHECK(
            mgpk_write(ctx, dst.mem, (size_t)dst.offset, src.host, n, CL_TRUE, 0, NULL, NULL),
            "clEnqueueWriteBuffer", rc, fn_fail);
    } else {
        MG_CL_CHECK(clEnqueueCopyBuffer(ctx->queue, src.mem, dst.mem, (size_t)src.offset,
                                        (size_t)dst.offset, n, 0, NULL, &ev),
                    "clEnqueueCopyBuffer", rc, fn_fail);
        MG_CL_CHECK(clWaitForEvents(1, &ev), "clWaitForEvents", rc, fn_fail);
    }
fn_exit:
    if (ev)
        clReleaseEvent(ev);
    return rc;
fn_fail:
    goto fn_exit;
}

int mgpk_maps(const mgpk_ctx_t *ctx)
{
    return ctx->unified && !ctx->settings.force_pipeline;
}

int mgpk_map(mgpk_ctx_t *ctx, cl_mem mem, size_t off, size_t n, int write, void **p)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    *p = NULL;
    if (!mgpk_maps(ctx) || n == 0)
        goto fn_exit;
    *p = clEnqueueMapBuffer(ctx->queue, mem, CL_TRUE, CL_MAP_READ | (write ? CL_MAP_WRITE : 0), off,
                            n, 0, NULL, NULL, &err);
    MG_CL_CHECK(err, "clEnqueueMapBuffer", rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    *p = NULL;
    goto fn_exit;
}

int mgpk_finish(mgpk_ctx_t *ctx)
{
    int rc = MPI_SUCCESS;
    MG_CL_CHECK(clFinish(ctx->queue), "clFinish", rc, fn_fail);
    if (ctx->copy_queue)
        MG_CL_CHECK(clFinish(ctx->copy_queue), "clFinish", rc, fn_fail);
fn_fail:
    return rc;
}

int mgpk_unmap(mgpk_ctx_t *ctx, cl_mem mem, void *p)
{
    int rc = MPI_SUCCESS;
    cl_event ev = NULL;
    if (!p)
        goto fn_exit;
    MG_CL_CHECK(clEnqueueUnmapMemObject(ctx->queue, mem, p, 0, NULL, &ev),
                "clEnqueueUnmapMemObject", rc, fn_fail);
    MG_CL_CHECK(clWaitForEvents(1, &ev), "clWaitForEvents", rc, fn_fail);
fn_exit:
    if (ev)
        clReleaseEvent(ev);
    return rc;
fn_fail:
    goto fn_exit;
}

int mgpk_copy_start(mgpk_ctx_t *ctx, mgpk_buf_t dst, mgpk_buf_t src, size_t n, cl_event *done)
{
    int rc = MPI_SUCCESS;
    *done = NULL;
    if (n == 0)
        goto fn_exit;
    if (dst.host && !src.host)
        MG_CL_CHECK(clEnqueueReadBuffer(ctx->queue, src.mem, CL_FALSE, (size_t)src.offset, n,
                                        dst.host, 0, NULL, done),
                    "clEnqueueReadBuffer", rc, fn_fail);
    else if (src.host && !dst.host)
        MG_CL_CHECK(
            mgpk_write(ctx, dst.mem, (size_t)dst.offset, src.host, n, CL_FALSE, 0, NULL, done),
            "clEnqueueWriteBuffer", rc, fn_fail);
    else
        rc = mgerr_set(MPI_ERR_INTERN, "mpigpu: mgpk_copy_start: one side must be host memory");
fn_exit:
    return rc;
fn_fail:
    *done = NULL;
    goto fn_exit;
}
