/*
 * The kernel method: picks the kernel family (contiguous copy, vector,
 * subarray, generic, byte-swapping generic) and the word width W, then
 * launches it over sub-ranges of the packed stream.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgpk_impl.h"

int mgpk_width(uint64_t mix)
{
    int w = 16;
    while (w > 1 && (mix & (uint64_t)(w - 1)))
        w >>= 1;
    return w;
}

static int64_t shape_sub(int64_t s)
{
    return s > 0 ? s : 1;
}

int mgpk_shape_ok(const mgdt_type_t *type, int64_t count)
{
    const mgdt_shape_t *sh = &type->shape;
    switch (sh->kind) {
    case MGDT_SHAPE_CONTIG:
        return count == 1 || type->extent == type->size;
    case MGDT_SHAPE_VECTOR:
        return sh->blocklen > 0 && sh->count > 0 && sh->blocklen * sh->count == type->size;
    case MGDT_SHAPE_SUBARRAY:
        return sh->blocklen > 0 && (sh->ndims == 2 || sh->ndims == 3) &&
               sh->blocklen * shape_sub(sh->sub[0]) * shape_sub(sh->sub[1]) *
                       shape_sub(sh->sub[2]) ==
                   type->size;
    default:
        return 0;
    }
}

/* The form of type (itself or its byte view) whose shape says that count
   instances are one run in memory order, or NULL: a contiguous shape, or one
   run per instance (a resized or padded type whose bytes abut), of one
   instance or of instances without gaps between them.  The byte view counts
   too: a struct whose fields abut ({double, int, int}) is one run there. */
static const mgdt_type_t *contig_form(const mgdt_type_t *type, int64_t count)
{
    const mgdt_type_t *forms[2] = {type, type->bytes};
    for (int i = 0; i < 2; i++) {
        const mgdt_type_t *f = forms[i];
        if (!f || !mgpk_shape_ok(f, count) || (count > 1 && f->extent != f->size))
            continue;
        if (f->shape.kind == MGDT_SHAPE_CONTIG ||
            (f->shape.kind == MGDT_SHAPE_VECTOR &&
             (f->shape.count == 1 || f->shape.stride == f->shape.blocklen)))
            return f;
    }
    return NULL;
}

int mgpk_contig(const mgdt_type_t *type, int64_t count)
{
    return contig_form(type, count) != NULL;
}

int64_t mgpk_contig_offset(const mgdt_type_t *type, int64_t count)
{
    const mgdt_type_t *f = contig_form(type, count);
    return f ? f->shape.offset : 0;
}

/* The basic size shared by every leaf, 0 when they differ, -1 when a leaf
   mixes sizes (no device swap possible). */
static int64_t uniform_basic(const mgdt_type_t *type)
{
    int64_t b = -2;
    for (size_t i = 0; i < type->nnodes; i++) {
        const mgdt_node_t *nd = &type->nodes[i];
        if (nd->kind != MGDT_K_LEAF)
            continue;
        if (nd->basic <= 0)
            return -1;
        b = b == -2 ? nd->basic : (b == nd->basic ? b : 0);
    }
    return b < 0 ? 0 : b;
}

/* The repeating unit of the packed stream of count instances: units of
   *usize packed bytes whose origins lie *ustep apart, found by descending
   CONTIG nodes and VECTOR nodes of one child per block for as long as their
   children keep one step (count * step of a node's children equals the step
   of its own instances). */
static void map_unit(const mgdt_type_t *type, int64_t count, int64_t *usize, int64_t *ustep)
{
    int64_t size = type->size, step = type->extent, n = count;
    for (size_t ni = 0; ni + 1 < type->nnodes; ni++) {
        const mgdt_node_t *nd = &type->nodes[ni];
        int64_t s;
        if (nd->kind == MGDT_K_CONTIG)
            s = nd->child_extent;
        else if (nd->kind == MGDT_K_VECTOR && nd->blocklen == 1)
            s = nd->stride;
        else
            break;
        if (nd->child_size <= 0 || nd->count < 1 || (n > 1 && step != nd->count * s))
            break;
        size = nd->child_size;
        step = s;
        n *= nd->count;
    }
    *usize = size;
    *ustep = step;
}

/*
 * The form of type that native packing runs (mgdt.h, "byte view"): the byte
 * view, whose merged runs let a shape kernel replace a walk per field, except
 * on GPUs where the exact form takes the map kernel.  There a table lookup
 * per word costs the same whatever the runs, and on the H100 the map kernel
 * (W = 1) packed the struct {double, int, int, char} at 328 GB/s against 261
 * for the byte view's vector kernel (W = 1) at 16 MiB (doc/performance.md).
 */
const mgdt_type_t *mgpk_native_view(const mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t count)
{
    if (!type->bytes)
        return type;
    if (!ctx->cpu && !mgpk_shape_ok(type, count)) {
        int map_max = ctx->settings.map_max ? ctx->settings.map_max : MGPK_MAP_MAX;
        int64_t usize, ustep;
        map_unit(type, count, &usize, &ustep);
        if (map_max > 0 && usize <= map_max)
            return type;
    }
    return type->bytes;
}

/* The table of the multi kernels (mgpk_pack_multi) on the device, into
   *mem: one of the last MGPK_NMULTI tables where it is the same (a repeated
   halo exchange writes its table once), else the least recently used slot,
   rewritten after the commands that may still read it. */
static int multi_table(mgpk_ctx_t *ctx, const cl_long *tab, size_t len, cl_mem *mem)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    struct mgpk_multi_tab *t = NULL;
    for (int i = 0; i < MGPK_NMULTI; i++) {
        struct mgpk_multi_tab *m = &ctx->multi[i];
        if (m->mem && m->len == len && !memcmp(tab, m->host, len * sizeof(cl_long))) {
            m->used = ++ctx->tick;
            *mem = m->mem;
            return MPI_SUCCESS;
        }
        if (!t || m->used < t->used)
            t = m;
    }
    MG_CL_CHECK(clFinish(ctx->queue), "clFinish", rc, fn_fail);
    t->len = 0;
    if (len > t->cap) {
        cl_long *h = realloc(t->host, len * sizeof(cl_long));
        if (!h)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgpk: out of host memory");
        t->host = h;
        if (t->mem)
            clReleaseMemObject(t->mem);
        t->mem = clCreateBuffer(ctx->context, CL_MEM_READ_ONLY, len * sizeof(cl_long), NULL, &err);
        t->cap = t->mem ? len : 0;
        MG_CL_CHECK(err, "clCreateBuffer", rc, fn_fail);
    }
    MG_CL_CHECK(clEnqueueWriteBuffer(ctx->queue, t->mem, CL_TRUE, 0, len * sizeof(cl_long), tab, 0,
                                     NULL, NULL),
                "clEnqueueWriteBuffer", rc, fn_fail);
    memcpy(t->host, tab, len * sizeof(cl_long));
    t->len = len;
    t->used = ++ctx->tick;
    *mem = t->mem;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* The multi family where every block of a batched call has a contiguous,
   vector or subarray shape (its native view): *ok = 1, the table written,
   the width chosen.  Else *ok = 0 and the type's own family runs. */
static int multi_plan(mgpk_ctx_t *ctx, mgpk_plan_t *plan, int64_t first, int64_t n, int64_t hint,
                      int *ok)
{
    int rc = MPI_SUCCESS;
    *ok = 0;
    if (!plan->blocks || plan->nblocks < 1 || plan->count != 1 || (plan->flags & MGPK_F_EXTERNAL32))
        return MPI_SUCCESS;
    cl_long *tab = malloc((size_t)plan->nblocks * MGPK_MULTI_NP * sizeof(cl_long));
    if (!tab)
        return mgerr_set(MPI_ERR_NO_MEM, "mgpk: out of host memory");
    uint64_t mix = (uint64_t)plan->typed_off | (uint64_t)first | (uint64_t)n | (uint64_t)hint;
    int64_t at = 0;
    size_t len = 0;
    for (int i = 0; i < plan->nblocks; i++) {
        const mgpk_block_t *b = &plan->blocks[i];
        if (b->count <= 0 || b->type->size == 0)
            continue;
        /* the type, or its byte view (the same packed bytes) */
        const mgdt_type_t *v = b->type;
        if (!mgpk_shape_ok(v, b->count))
            v = b->type->bytes;
        if (!v || !mgpk_shape_ok(v, b->count))
            goto fn_exit; /* not a shape: the struct's own kernel */
        const mgdt_shape_t *sh = &v->shape;
        cl_long *d = tab + len;
        d[0] = at;
        d[1] = b->count * v->size;
        d[2] = b->disp + sh->offset;
        d[3] = v->extent;
        d[4] = v->size;
        d[6] = d[7] = d[8] = 1;
        d[9] = d[10] = d[11] = 0;
        if (sh->kind == MGDT_SHAPE_CONTIG) {
            d[5] = v->size;
        } else if (sh->kind == MGDT_SHAPE_VECTOR) {
            d[5] = sh->blocklen;
            d[8] = sh->count;
            d[11] = sh->stride;
        } else {
            d[5] = sh->blocklen;
            for (int k = 0; k < 3; k++) {
                d[6 + k] = shape_sub(sh->sub[k]);
                d[9 + k] = sh->strides[k];
            }
        }
        mix |= (uint64_t)v->align | (uint64_t)d[0] | (uint64_t)d[1] | (uint64_t)d[2] |
               (uint64_t)d[5] | (uint64_t)d[9] | (uint64_t)d[10] | (uint64_t)d[11];
        if (b->count > 1)
            mix |= (uint64_t)v->extent;
        at += d[1];
        len += MGPK_MULTI_NP;
    }
    if (!len || at != plan->type->size)
        goto fn_exit; /* not the blocks of this type */
    rc = mgpk_prog_ensure(ctx);
    MG_CHECK(rc, fn_exit);
    if (!ctx->kernels[MGPK_FAM_MULTI][0][0])
        goto fn_exit; /* a program cached before the multi kernels: not built */
    rc = multi_table(ctx, tab, len, &plan->tab);
    MG_CHECK(rc, fn_exit);
    plan->ntab = (cl_long)(len / MGPK_MULTI_NP);
    plan->width = mgpk_width(mix);
    plan->contig = 0;
    plan->family = MGPK_FAM_MULTI;
    plan->what = "multi kernel";
    *ok = 1;
fn_exit:
    free(tab);
    return rc;
}

static int type_plan(mgpk_ctx_t *ctx, mgpk_plan_t *plan, int64_t first, int64_t n, int64_t hint)
{
    int rc = MPI_SUCCESS;
    const mgdt_type_t *type = plan->type;
    uint64_t mix = (uint64_t)type->align | (uint64_t)plan->typed_off | (uint64_t)first |
                   (uint64_t)n | (uint64_t)hint;
    if (plan->count > 1)
        mix |= (uint64_t)type->extent;
    plan->width = mgpk_width(mix);
    plan->contig = 0;
    plan->family = MGPK_FAM_GENERIC;
    plan->what = "generic kernel";

    if (plan->flags & MGPK_F_EXTERNAL32) {
        int64_t b = uniform_basic(type);
        if (!type->external32_ok || b < 0)
            MG_FAIL(rc, fn_fail, MPI_ERR_UNSUPPORTED_OPERATION,
                    "mgpk: external32 of this type needs the host path");
        if (b != 1) {
            plan->family = MGPK_FAM_SWAP;
            plan->width = (b == 2 || b == 4 || b == 8) && plan->width >= b ? (int)b : 1;
            plan->what = "swap kernel";
        }
    } else if (mgpk_shape_ok(type, plan->count)) {
        switch (type->shape.kind) {
        case MGDT_SHAPE_CONTIG:
            plan->contig = 1;
            plan->width = 0;
            plan->what = "contiguous copy";
            break;
        case MGDT_SHAPE_VECTOR:
            plan->family = MGPK_FAM_VECTOR;
            plan->what = "vector kernel";
            break;
        default:
            plan->family = MGPK_FAM_SUB;
            plan->what = "subarray kernel";
            break;
        }
    }
    if (plan->contig)
        goto fn_exit;
    rc = mgpk_prog_ensure(ctx);
    MG_CHECK(rc, fn_fail);
    if (plan->family == MGPK_FAM_GENERIC || plan->family == MGPK_FAM_SWAP) {
        /* Small instances on GPUs: one table lookup per word instead of a
           tree walk per run (the generic family's cost on byte-wide types).
           CPU devices copy long spans, where walking once per run wins. */
        int map_max =
            ctx->settings.map_max ? ctx->settings.map_max : (ctx->cpu ? -1 : MGPK_MAP_MAX);
        int64_t map_size = 0;
        if (plan->family == MGPK_FAM_GENERIC && map_max > 0) {
            map_unit(type, plan->count, &plan->unit_size, &plan->unit_step);
            if (plan->unit_size <= map_max)
                map_size = plan->unit_size;
        }
        rc = mgpk_upload_get(ctx, type, map_size, &plan->nodes, &plan->la, &plan->map);
        MG_CHECK(rc, fn_fail);
        if (plan->map) {
            plan->family = MGPK_FAM_MAP;
            plan->what = "map kernel";
        }
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int kernel_plan(mgpk_ctx_t *ctx, mgpk_plan_t *plan, int64_t first, int64_t n, int64_t hint)
{
    int multi = 0;
    int rc = multi_plan(ctx, plan, first, n, hint, &multi);
    if (rc != MPI_SUCCESS || multi)
        return rc;
    return type_plan(ctx, plan, first, n, hint);
}

/*
 * Words per work-item.  GPUs: one word when W >= 4, so that adjacent
 * work-items touch adjacent words (coalesced), and 16 bytes when W is small,
 * so that a byte-wide type walks the tree once per run piece instead of once
 * per byte.  CPU devices: a few spans per compute unit, at least 256 bytes,
 * since there each work-item costs far more than a word's copy.
 */
static cl_long kernel_span(const mgpk_ctx_t *ctx, mgpk_family_t family, int width, cl_long nwords)
{
    cl_long span;
    if (ctx->settings.span_bytes)
        span = (cl_long)ctx->settings.span_bytes / width;
    else if (!ctx->cpu)
        span = width >= 4 || family == MGPK_FAM_MAP ? 1 : 16 / width;
    else {
        cl_long parts = 4 * (cl_long)ctx->ncu;
        span = (nwords + parts - 1) / parts;
        if (span < 256 / width)
            span = 256 / width;
    }
    return span > 0 ? span : 1;
}

/* Words per work-item of the grid kernels, or 0 where the span kernels run:
   GPUs by default, any device when settings.grid_words > 0 (tests), never
   with a forced span or a grid too large.  By default one word when W >= 4
   (the vector of 8 B words runs at the memory's rate with 1 to 4), and
   MGPK_GRID_WORDS_NARROW when W < 4: there the arithmetic per word is the
   limit, and four words per work-item raised a byte-wide struct on the H100
   from 212 to 320 GB/s (in the git history of doc/performance.md). */
static cl_long grid_words(const mgpk_ctx_t *ctx, mgpk_family_t family, int width, cl_long nwords)
{
    int g = ctx->settings.grid_words;
    if (family != MGPK_FAM_VECTOR && family != MGPK_FAM_SUB && family != MGPK_FAM_MAP)
        return 0;
    if (g < 0 || ctx->settings.span_bytes || (g == 0 && ctx->cpu))
        return 0;
    if (g == 0)
        g = width >= 4 ? MGPK_GRID_WORDS : MGPK_GRID_WORDS_NARROW;
    g = g > MGPK_GRID_MAX_WORDS ? MGPK_GRID_MAX_WORDS : g;
    return (nwords + g - 1) / g > MGPK_GRID_MAX_ITEMS ? 0 : g;
}

#define SET_ARG(k_, i_, v_)                                                                        \
    MG_CL_CHECK(clSetKernelArg((k_), (i_), sizeof(v_), &(v_)), "clSetKernelArg", rc, fn_fail)

/* A 64-bit scalar argument, set only where it differs from the value this
   kernel last ran with (ka, the kernel's cache; OpenCL keeps a kernel's
   arguments between launches): a repeated pack of one type sets none of its
   7 to 13 scalars.  Buffers always go through SET_ARG. */
#define SET_LONG(i_, v_)                                                                           \
    do {                                                                                           \
        cl_uint ai_ = (i_);                                                                        \
        cl_long x_ = (cl_long)(v_);                                                                \
        if (!(ka->set & (1u << ai_)) || ka->v[ai_] != x_) {                                        \
            MG_CL_CHECK(clSetKernelArg(k, ai_, sizeof(x_), &x_), "clSetKernelArg", rc, fn_fail);   \
            ka->v[ai_] = x_;                                                                       \
            ka->set |= 1u << ai_;                                                                  \
        }                                                                                          \
    } while (0)

static int kernel_enqueue(mgpk_ctx_t *ctx, const mgpk_plan_t *plan, cl_mem packed,
                          int64_t packed_off, int64_t first, int64_t n, cl_uint nwait,
                          const cl_event *wait, cl_event *done)
{
    int rc = MPI_SUCCESS;
    const mgdt_type_t *type = plan->type;
    const mgdt_shape_t *sh = &type->shape;
    if (plan->contig) {
        rc = mgpk_contig_enqueue(ctx, plan, packed, packed_off, first, n, nwait, wait, done);
        goto fn_exit;
    }
    int widx = 0;
    while ((1 << widx) < plan->width)
        widx++;
    cl_long nwords = n / plan->width, first_l = first, poff = packed_off;
    cl_long gw = grid_words(ctx, plan->family, plan->width, nwords);
    cl_long span = gw ? gw : kernel_span(ctx, plan->family, plan->width, nwords);
    int fam = gw ? (int)plan->family + (MGPK_FAM_VECTOR_GRID - MGPK_FAM_VECTOR) : (int)plan->family;
    cl_kernel k = ctx->kernels[fam][plan->dir][widx];
    mgpk_kargs_t *ka = &ctx->kargs[fam][plan->dir][widx];
    if (!k)
        MG_FAIL(rc, fn_fail, MPI_ERR_INTERN, "mgpk: no kernel for family %d W=%d", fam,
                plan->width);
    cl_long extent = type->extent, size = type->size;
    cl_long toff = plan->typed_off;
    cl_uint a = 0;
    if (gw) {
        /* Grid kernels: the scalars in one by-value struct, set where it
           differs from the last launch's. */
        mgpk_grid_args_t ga = {.typed_off = toff,
                               .packed_off = poff,
                               .first = first_l,
                               .nwords = nwords,
                               .span = span,
                               .extent = extent};
        if (plan->family == MGPK_FAM_MAP) {
            /* the map's unit: one instance, or several where they are small */
            ga.extent = plan->unit_step;
            ga.p[0] = plan->unit_size;
            SET_ARG(k, a++, plan->map);
        } else if (plan->family == MGPK_FAM_VECTOR) {
            ga.typed_off = toff + sh->offset;
            ga.p[0] = sh->blocklen;
            ga.p[1] = sh->count;
            ga.p[2] = sh->stride;
        } else {
            ga.typed_off = toff + sh->offset;
            ga.p[0] = sh->blocklen;
            for (int d = 0; d < 3; d++) {
                ga.p[1 + d] = shape_sub(sh->sub[d]);
                ga.p[4 + d] = sh->strides[d];
            }
        }
        if (!ka->grid_set || memcmp(&ka->grid, &ga, sizeof(ga))) {
            MG_CL_CHECK(clSetKernelArg(k, a, sizeof(ga), &ga), "clSetKernelArg", rc, fn_fail);
            ka->grid = ga;
            ka->grid_set = 1;
        }
        a++;
    } else if (plan->family == MGPK_FAM_MULTI) {
        SET_LONG(a++, plan->ntab);
        SET_LONG(a++, toff);
        SET_LONG(a++, poff);
        SET_LONG(a++, first_l);
        SET_LONG(a++, nwords);
        SET_LONG(a++, span);
        SET_ARG(k, a++, plan->tab);
    } else if (plan->family == MGPK_FAM_MAP) {
        SET_ARG(k, a++, plan->map);
        SET_LONG(a++, plan->unit_size);
        SET_LONG(a++, plan->unit_step);
        SET_LONG(a++, toff);
        SET_LONG(a++, poff);
        SET_LONG(a++, first_l);
        SET_LONG(a++, nwords);
        SET_LONG(a++, span);
    } else if (plan->family == MGPK_FAM_GENERIC || plan->family == MGPK_FAM_SWAP) {
        SET_ARG(k, a++, plan->nodes);
        SET_ARG(k, a++, plan->la);
        SET_LONG(a++, size);
        SET_LONG(a++, extent);
        SET_LONG(a++, toff);
        SET_LONG(a++, poff);
        SET_LONG(a++, first_l);
        SET_LONG(a++, nwords);
        SET_LONG(a++, span);
    } else {
        SET_LONG(a++, toff + sh->offset);
        SET_LONG(a++, poff);
        SET_LONG(a++, first_l);
        SET_LONG(a++, nwords);
        SET_LONG(a++, span);
        SET_LONG(a++, extent);
        SET_LONG(a++, sh->blocklen);
        if (plan->family == MGPK_FAM_VECTOR) {
            SET_LONG(a++, sh->count);
            SET_LONG(a++, sh->stride);
        } else {
            for (int d = 0; d < 3; d++)
                SET_LONG(a++, shape_sub(sh->sub[d]));
            for (int d = 0; d < 3; d++)
                SET_LONG(a++, sh->strides[d]);
        }
    }
    SET_ARG(k, a++, plan->typed);
    SET_ARG(k, a++, packed);
    /* Grid kernels: every word in one launch, span words per work-item.
       Span kernels: at most MGPK_MAX_GLOBAL work-items, looping over the rest.
       GPUs get an explicit work-group size and a grid rounded up to it (the
       kernels check their bounds): NVIDIA's choice for a NULL local size
       follows the divisors of the global size, which can be small.  On a CPU
       device every span work-item is a long span: one per work-group, so
       that the runtime spreads them over its threads (a NULL local size may
       put them all into one work-group). */
    cl_long items = (nwords + span - 1) / span;
    if (!gw && items > MGPK_MAX_GLOBAL)
        items = MGPK_MAX_GLOBAL;
    size_t global = (size_t)items, local = 1;
    const size_t *lp = &local;
    if (!ctx->cpu || (gw && ctx->settings.local_size > 0)) {
        local = ctx->settings.local_size > 0 ? (size_t)ctx->settings.local_size : MGPK_LOCAL_SIZE;
        global = (global + local - 1) / local * local;
    } else if (gw) {
        lp = NULL; /* grid kernels on a CPU device (tests): the runtime's choice */
    }
    MG_CL_CHECK(clEnqueueNDRangeKernel(mgpk_plan_queue(ctx, plan), k, 1, NULL, &global, lp, nwait,
                                       nwait ? wait : NULL, done),
                "clEnqueueNDRangeKernel", rc, fn_fail);
    ctx->stats.launches++;
    ctx->stats.last_width = plan->width;
    ctx->stats.last_grid = (int)gw;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

const mgpk_method_ops_t mgpk_kernel_ops = {
    .name = "kernel",
    .plan = kernel_plan,
    .enqueue = kernel_enqueue,
};
