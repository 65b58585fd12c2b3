/* mpigpu-proxy: image and sampler objects (IMAGE_FORMATS, IMAGE_CREATE,
 * IMAGE_INIT, SAMPLER_CREATE).  Images are memory objects (MGW_K_MEM) in
 * the session's map, like buffers; their commands are in proxy_enqueue.c.
 * As every handler, each decodes its whole request and checks every ID
 * before it calls OpenCL; s->dry stops there. */
#include <stdlib.h>
#include <string.h>

#include "proxy.h"
/* after it: it sets the OpenCL version */
#include "clformat.h"

/* The flags a client may ask for: host pointers stay on the client (the
 * initial contents come in IMAGE_INIT); access flags are the device's. */
#define IMAGE_FLAGS_OK                                                                             \
    (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR |            \
     CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)

int mgpx_op_image_formats(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_image_formats_t m;
    cl_uint n = 0;
    if (mgw_image_formats_decode(c, &m))
        return MGPX_BAD;
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, m.ctx, MGW_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (s->dry)
        return CL_SUCCESS;
    cl_int err = clGetSupportedImageFormats(ctx->h, m.flags, m.type, 0, NULL, &n);
    if (err)
        return err;
    if (n > MGW_MAX_FORMATS)
        n = MGW_MAX_FORMATS;
    cl_image_format *f = malloc((n ? n : 1) * sizeof *f);
    mgw_image_format_t *w = malloc((n ? n : 1) * sizeof *w);
    if (!f || !w)
        err = CL_OUT_OF_HOST_MEMORY;
    if (!err && n)
        err = clGetSupportedImageFormats(ctx->h, m.flags, m.type, n, f, NULL);
    for (cl_uint i = 0; i < n && !err; i++)
        w[i] = (mgw_image_format_t){.order = f[i].image_channel_order,
                                    .type = f[i].image_channel_data_type};
    if (!err)
        mgw_image_formats_reply_put(r, &(mgw_image_formats_reply_t){.formats = {.n = n, .v = w}});
    free(f);
    free(w);
    return err;
}

/* Bytes of host memory that an image with these pitches may span, however
 * the runtime reads them (pixels of up to 16 bytes, pitches at least the
 * rows' and slices' extents, every slice whole), so that a runtime that
 * takes pitches it should refuse still reads no further; 0 when that does
 * not fit a size_t or a dimension is 0. */
static size_t image_bytes(const mgw_image_desc_t *d)
{
    size_t w = d->width, rows = 1, n = 1, rp, sp;
    switch (d->type) {
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
        n = d->array_size;
        break;
    case CL_MEM_OBJECT_IMAGE2D:
        rows = d->height;
        break;
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
    case CL_MEM_OBJECT_IMAGE3D:
        rows = d->height;
        n = d->type == CL_MEM_OBJECT_IMAGE3D ? d->depth : d->array_size;
        break;
    }
    if (!w || !rows || !n || w > SIZE_MAX / 16)
        return 0;
    rp = d->row_pitch > w * 16 ? d->row_pitch : w * 16;
    if (rows > SIZE_MAX / rp)
        return 0;
    sp = d->slice_pitch > rp * rows ? d->slice_pitch : rp * rows;
    return n <= SIZE_MAX / sp ? n * sp : 0;
}

/* The device bytes of an image as asked (its pixels, packed), counted
 * against the quotas before the runtime makes it; SIZE_MAX when that does
 * not fit a size_t (refused as over any quota).  Its format is one the
 * client sizes too (checked before). */
static size_t image_charge(const mgw_image_create_t *m)
{
    const mgw_image_desc_t *d = &m->desc;
    size_t px = mgrc_pixel_size(m->format.order, m->format.type), dims[3] = {d->width, 1, 1},
           n = px;
    switch (d->type) {
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
        dims[1] = d->array_size;
        break;
    case CL_MEM_OBJECT_IMAGE2D:
        dims[1] = d->height;
        break;
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
        dims[1] = d->height;
        dims[2] = d->array_size;
        break;
    case CL_MEM_OBJECT_IMAGE3D:
        dims[1] = d->height;
        dims[2] = d->depth;
        break;
    }
    for (int i = 0; i < 3; i++) {
        if (dims[i] && n > SIZE_MAX / dims[i])
            return SIZE_MAX;
        n *= dims[i];
    }
    return n;
}

int mgpx_op_image_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_image_create_t m;
    cl_int err = CL_SUCCESS;
    if (mgw_image_create_decode(c, &m))
        return MGPX_BAD;
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, m.ctx, MGW_K_CONTEXT);
    mgpx_obj_t *buf = m.desc.buffer ? mgpx_map_get(&s->map, m.desc.buffer, MGW_K_MEM) : NULL;
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (m.desc.buffer && !buf)
        return CL_INVALID_IMAGE_DESCRIPTOR;
    if (m.flags & ~(cl_mem_flags)IMAGE_FLAGS_OK)
        return CL_INVALID_VALUE;
    /* a format without a pixel size is one the client refuses too: never
       made, so never sized or charged by a guess */
    if (!mgrc_pixel_size(m.format.order, m.format.type))
        return CL_INVALID_IMAGE_FORMAT_DESCRIPTOR;
    if (s->dry)
        return CL_SUCCESS;
    if (buf && !mgpx_is_mem_kind(buf->h, 0))
        return CL_INVALID_IMAGE_DESCRIPTOR;
    if ((err = mgpx_obj_admit(s, MGW_K_MEM)))
        return err;
    cl_image_format fmt = {m.format.order, m.format.type};
    cl_image_desc d = {.image_type = m.desc.type,
                       .image_width = m.desc.width,
                       .image_height = m.desc.height,
                       .image_depth = m.desc.depth,
                       .image_array_size = m.desc.array_size,
                       .image_row_pitch = m.desc.row_pitch,
                       .image_slice_pitch = m.desc.slice_pitch,
                       .num_mip_levels = m.desc.mip_levels,
                       .num_samples = m.desc.samples,
                       .buffer = buf ? buf->h : NULL};
    /* pitches: the client's image is made from host memory with them; made
       here from zeros with the same pitches (IMAGE_INIT brings the data),
       so that the runtime lays it out as it would natively */
    void *zeros = NULL;
    cl_mem_flags flags = m.flags;
    if (m.desc.row_pitch || m.desc.slice_pitch) {
        size_t n = image_bytes(&m.desc);
        if (!n)
            return CL_INVALID_IMAGE_DESCRIPTOR;
        if (!(zeros = calloc(1, n)))
            return CL_OUT_OF_HOST_MEMORY;
        flags |= CL_MEM_COPY_HOST_PTR;
    }
    /* counted against the quotas, and allocated now (proxy_limits.c) */
    cl_mem mem = mgpx_image_create(s, ctx->h, flags, &fmt, &d, zeros, image_charge(&m), &err);
    free(zeros);
    if (err == CL_SUCCESS && mgpx_map_put(&s->map, m.id, MGW_K_MEM, mem, NULL)) {
        clReleaseMemObject(mem);
        err = CL_INVALID_VALUE;
    }
    return err;
}

/* The packed rect's bytes: region's pixels of elem bytes, or 0 when that
 * does not fit a size_t. */
static size_t packed_size(const size_t *reg, size_t elem)
{
    if (!reg[0] || !reg[1] || !reg[2] || !elem || reg[0] > SIZE_MAX / elem / reg[1] / reg[2])
        return 0;
    return reg[0] * elem * reg[1] * reg[2];
}

int mgpx_op_image_init(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_image_init_t m;
    cl_context ctx;
    cl_device_id dev;
    size_t elem = 0;
    if (mgw_image_init_decode(c, &m))
        return MGPX_BAD;
    mgpx_obj_t *o = mgpx_map_get(&s->map, m.id, MGW_K_MEM);
    if (!o)
        return CL_INVALID_MEM_OBJECT;
    if (s->dry)
        return CL_SUCCESS;
    if (!mgpx_is_mem_kind(o->h, 1) ||
        clGetImageInfo(o->h, CL_IMAGE_ELEMENT_SIZE, sizeof elem, &elem, NULL) ||
        clGetMemObjectInfo(o->h, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL) ||
        clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL))
        return CL_INVALID_MEM_OBJECT;
    size_t n = packed_size(m.rect.region, elem);
    if (!n || n != m.data.n)
        return CL_INVALID_VALUE;
    mgpx_staging_t *st = mgpx_staging_get(s, ctx, dev, 0);
    if (!st)
        return CL_OUT_OF_RESOURCES;
    return clEnqueueWriteImage(st->q, o->h, CL_TRUE, m.rect.origin, m.rect.region, 0, 0, m.data.p,
                               0, NULL, NULL);
}

int mgpx_op_sampler_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_sampler_create_t m;
    cl_int err = CL_SUCCESS;
    if (mgw_sampler_create_decode(c, &m))
        return MGPX_BAD;
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, m.ctx, MGW_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (m.normalized > 1)
        return CL_INVALID_VALUE;
    if (s->dry)
        return CL_SUCCESS;
    if ((err = mgpx_obj_admit(s, MGW_K_SAMPLER)))
        return err;
    cl_sampler sm =
        clCreateSampler(ctx->h, m.normalized ? CL_TRUE : CL_FALSE, m.addressing, m.filter, &err);
    if (err == CL_SUCCESS && mgpx_map_put(&s->map, m.id, MGW_K_SAMPLER, sm, NULL)) {
        clReleaseSampler(sm);
        err = CL_INVALID_VALUE;
    }
    return err;
}
