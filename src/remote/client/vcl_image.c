/* libmpigpu-vcl.so: images and samplers (OpenCL 1.2).  An image is a cl_mem
 * with its format and descriptor kept here (m->type set); the proxy's image
 * has the same wire ID and kind as a buffer.  Pixels cross the wire packed:
 * rows of region[0] pixels, no padding, rows then slices (or layers); the
 * host's pitches are applied here, as for buffer rects.  Writes stream on
 * the bulk lane, reads come back on it and are unpacked into the host
 * memory when complete (the rect read's path).  A map is a host copy, as
 * for buffers: read on map, written back on unmap of a write mapping. */
#include <stdlib.h>
#include <string.h>

#include "vcl.h"
/* after it: it sets the OpenCL version */
#include "clformat.h"

#define HOST_FLAGS (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)
#define HOST_ACCESS (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)
#define RW_FLAGS (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY)

int mgvcl_is_image(cl_mem m)
{
    return m && m->type && m->type != CL_MEM_OBJECT_BUFFER;
}

/* The image's extent in pixels, rows and slices (layers for arrays: a 1D
 * array's layers are its rows, a 2D array's its slices). */
static void image_dims(cl_mem m, size_t dim[3])
{
    const cl_image_desc *d = &m->desc;
    dim[0] = d->image_width;
    dim[1] = dim[2] = 1;
    switch (m->type) {
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
        dim[1] = d->image_array_size;
        break;
    case CL_MEM_OBJECT_IMAGE2D:
        dim[1] = d->image_height;
        break;
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
        dim[1] = d->image_height;
        dim[2] = d->image_array_size;
        break;
    case CL_MEM_OBJECT_IMAGE3D:
        dim[1] = d->image_height;
        dim[2] = d->image_depth;
        break;
    }
}

/* origin + region inside the image, every region extent at least 1. */
static int region_ok(cl_mem m, const size_t *o, const size_t *r)
{
    size_t dim[3];
    if (!o || !r)
        return 0;
    image_dims(m, dim);
    for (int i = 0; i < 3; i++)
        if (!r[i] || o[i] > dim[i] || r[i] > dim[i] - o[i])
            return 0;
    return 1;
}

/* The host side's pitches of a region of m: rp between rows, sp between
 * slices, defaults filled in (a 1D array's layers are sp apart: its rows
 * use sp).  -1 when a pitch is too small. */
static int host_pitches(cl_mem m, const size_t *r, size_t *rp, size_t *sp)
{
    size_t row = r[0] * m->elem;
    int arr1 = m->type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
    if (!*rp)
        *rp = row;
    if (!*sp)
        *sp = arr1 ? *rp : *rp * r[1];
    if (*rp < row || (arr1 ? *sp < row
                           : (r[2] > 1 || m->type == CL_MEM_OBJECT_IMAGE2D_ARRAY ||
                              m->type == CL_MEM_OBJECT_IMAGE3D) &&
                                 *sp < *rp * r[1]))
        return -1;
    return 0;
}

/* The step between the host's rows of a region: a 1D array's rows are its
 * layers, sp apart. */
static size_t row_step(cl_mem m, size_t rp, size_t sp)
{
    return m->type == CL_MEM_OBJECT_IMAGE1D_ARRAY ? sp : rp;
}

/* Packs (to 1) or unpacks the region r of host memory h (pitches rp, sp)
 * into or out of p. */
static void pack(cl_mem m, const size_t *r, unsigned char *h, size_t rp, size_t sp,
                 unsigned char *p, int to)
{
    size_t row = r[0] * m->elem, step = row_step(m, rp, sp);
    for (size_t z = 0; z < r[2]; z++)
        for (size_t y = 0; y < r[1]; y++) {
            unsigned char *hp = h + z * sp + y * step, *pp = p + (z * r[1] + y) * row;
            if (to)
                memcpy(pp, hp, row);
            else
                memcpy(hp, pp, row);
        }
}

/* Bytes of region r packed, 0 when that overflows. */
static size_t packed_size(cl_mem m, const size_t *r)
{
    if (r[0] > SIZE_MAX / m->elem / r[1] / r[2])
        return 0;
    return r[0] * m->elem * r[1] * r[2];
}

static cl_int image_check(cl_command_queue q, cl_mem m, int access)
{
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    if (!mgvcl_is(m) || !mgvcl_is_image(m))
        return CL_INVALID_MEM_OBJECT;
    if (m->ctx != q->ctx)
        return CL_INVALID_CONTEXT;
    if (((access & 1) && (m->flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS))) ||
        ((access & 2) && (m->flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS))))
        return CL_INVALID_OPERATION;
    return CL_SUCCESS;
}

static mgw_image_rect_t image_rect(const size_t *o, const size_t *r)
{
    mgw_image_rect_t ir;
    memcpy(ir.origin, o, sizeof ir.origin);
    memcpy(ir.region, r, sizeof ir.region);
    return ir;
}

/* Sends the initial contents of a new image (CL_MEM_COPY/USE_HOST_PTR) in
 * pieces of whole rows of at most 16 MiB (one row at least). */
static cl_int image_init(cl_mem m, const unsigned char *host)
{
    size_t dim[3], row, rows, step, per;
    image_dims(m, dim);
    row = dim[0] * m->elem;
    rows = dim[1] * dim[2];
    step = row_step(m, m->hrp, m->hsp);
    per = row < (16u << 20) ? (16u << 20) / row : 1;
    unsigned char *p = malloc((per < rows ? per : rows) * row);
    cl_int rc = p ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    for (size_t i = 0; i < rows && !rc;) {
        /* rows i .. i + n - 1, all of one slice */
        size_t z = i / dim[1], y = i % dim[1], n = dim[1] - y;
        if (n > per)
            n = per;
        for (size_t k = 0; k < n; k++)
            memcpy(p + k * row, host + z * m->hsp + (y + k) * step, row);
        size_t o[3] = {0, y, z}, r[3] = {dim[0], n, 1};
        mgw_buf_t b;
        mgw_image_init_encode(
            &b, 0,
            &(mgw_image_init_t){.id = m->id, .rect = image_rect(o, r), .data = {p, n * row}});
        rc = mgvcl_call(m->ctx->conn, &b, NULL, NULL);
        mgw_buf_free(&b);
        i += n;
    }
    free(p);
    return rc;
}

cl_mem CL_API_CALL mgvcl_clCreateImage(cl_context ctx, cl_mem_flags flags,
                                       const cl_image_format *fmt, const cl_image_desc *desc,
                                       void *host, cl_int *err)
{
    cl_mem m = NULL, buf = NULL;
    cl_int rc = CL_SUCCESS;
    size_t elem = 0;
    cl_mem_flags a, rw;
    if (!flags)
        flags = CL_MEM_READ_WRITE;
    a = flags & HOST_ACCESS;
    rw = flags & RW_FLAGS;
    if (!mgvcl_is(ctx)) {
        rc = CL_INVALID_CONTEXT;
        goto fn_exit;
    }
    if ((a & (a - 1)) || (rw & (rw - 1)) ||
        ((flags & CL_MEM_USE_HOST_PTR) &&
         (flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR))) ||
        (flags & ~(cl_mem_flags)(HOST_FLAGS | HOST_ACCESS | CL_MEM_ALLOC_HOST_PTR | RW_FLAGS))) {
        rc = CL_INVALID_VALUE;
        goto fn_exit;
    }
    if (!fmt || !(elem = mgrc_pixel_size(fmt->image_channel_order, fmt->image_channel_data_type))) {
        rc = CL_INVALID_IMAGE_FORMAT_DESCRIPTOR;
        goto fn_exit;
    }
    if (!desc || desc->num_mip_levels || desc->num_samples ||
        (desc->image_type != CL_MEM_OBJECT_IMAGE1D_BUFFER && desc->buffer)) {
        rc = CL_INVALID_IMAGE_DESCRIPTOR;
        goto fn_exit;
    }
    switch (desc->image_type) {
    case CL_MEM_OBJECT_IMAGE1D_BUFFER:
        buf = desc->buffer;
        if (!mgvcl_is(buf) || mgvcl_is_image(buf) || buf->ctx != ctx ||
            desc->image_width > buf->size / elem)
            rc = CL_INVALID_IMAGE_DESCRIPTOR;
        else if (flags & (HOST_FLAGS | CL_MEM_ALLOC_HOST_PTR))
            rc = CL_INVALID_VALUE; /* the buffer's memory */
        break;
    case CL_MEM_OBJECT_IMAGE1D:
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
    case CL_MEM_OBJECT_IMAGE2D:
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
    case CL_MEM_OBJECT_IMAGE3D:
        break;
    default:
        rc = CL_INVALID_IMAGE_DESCRIPTOR;
    }
    if (rc)
        goto fn_exit;
    if (((flags & HOST_FLAGS) != 0) != (host != NULL)) {
        rc = CL_INVALID_HOST_PTR;
        goto fn_exit;
    }
    if (!host && (desc->image_row_pitch || desc->image_slice_pitch)) {
        rc = CL_INVALID_IMAGE_DESCRIPTOR;
        goto fn_exit;
    }
    if (!(m = mgvcl_mem_new(ctx, flags, 0))) {
        rc = CL_OUT_OF_HOST_MEMORY;
        goto fn_exit;
    }
    m->type = desc->image_type;
    m->fmt = *fmt;
    m->desc = *desc;
    m->elem = elem;
    size_t dim[3], r1[3];
    int pitch_bad = 0;
    image_dims(m, dim);
    if (host) {
        /* the host image's pitches, defaults filled in; the proxy's runtime
           judges them first (its error is the native one), this check only
           guards the reads of host memory below */
        m->hrp = desc->image_row_pitch;
        m->hsp = desc->image_slice_pitch;
        memcpy(r1, dim, sizeof r1);
        pitch_bad = !dim[0] || !dim[1] || !dim[2] || dim[0] > SIZE_MAX / elem;
        if (!pitch_bad)
            pitch_bad = (desc->image_row_pitch && desc->image_row_pitch % elem) ||
                        host_pitches(m, r1, &m->hrp, &m->hsp) || m->hsp % m->hrp;
    }
    if (flags & CL_MEM_USE_HOST_PTR)
        m->host_ptr = host;
    /* an image from host memory gets the host's pitches on the proxy too
       (its runtime may keep them: CL_IMAGE_ROW_PITCH, CL_MEM_SIZE) */
    int slices = m->type == CL_MEM_OBJECT_IMAGE3D || m->type == CL_MEM_OBJECT_IMAGE2D_ARRAY ||
                 m->type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
    mgw_buf_t b;
    mgw_image_create_encode(
        &b, 0,
        &(mgw_image_create_t){
            .id = m->id,
            .ctx = ctx->id,
            .flags = flags & ~(cl_mem_flags)(HOST_FLAGS | HOST_ACCESS),
            .format = {.order = fmt->image_channel_order, .type = fmt->image_channel_data_type},
            .desc = {.type = desc->image_type,
                     .width = desc->image_width,
                     .height = desc->image_height,
                     .depth = desc->image_depth,
                     .array_size = desc->image_array_size,
                     .row_pitch = host ? m->hrp : 0,
                     .slice_pitch = host && slices ? m->hsp : 0,
                     .buffer = buf ? buf->id : 0}});
    rc = mgvcl_call(ctx->conn, &b, NULL, NULL);
    mgw_buf_free(&b);
    if (rc)
        goto fn_fail;
    mgvcl_clRetainContext(ctx);
    if (buf) {
        mgvcl_clRetainMemObject(buf);
        m->parent = buf;
    }
    mgvcl_mem_made(m);
    if (pitch_bad) { /* the proxy's runtime took pitches that OpenCL refuses */
        mgvcl_clReleaseMemObject(m);
        m = NULL;
        rc = CL_INVALID_IMAGE_DESCRIPTOR;
        goto fn_exit;
    }
    /* the proxy's size (its runtime's layout), for CL_MEM_SIZE */
    if (mgvcl_info(ctx->conn, MGW_K_MEM, m->id, 0, CL_MEM_SIZE, sizeof m->size, &m->size, NULL))
        m->size = dim[0] * dim[1] * dim[2] * elem;
    if (host && (rc = image_init(m, host))) {
        mgvcl_clReleaseMemObject(m);
        m = NULL;
    }
    goto fn_exit;
fn_fail:
    free(m);
    m = NULL;
fn_exit:
    if (err)
        *err = rc;
    return m;
}

cl_mem CL_API_CALL mgvcl_clCreateImage2D(cl_context ctx, cl_mem_flags flags,
                                         const cl_image_format *fmt, size_t w, size_t h, size_t rp,
                                         void *host, cl_int *err)
{
    cl_image_desc d = {.image_type = CL_MEM_OBJECT_IMAGE2D,
                       .image_width = w,
                       .image_height = h,
                       .image_row_pitch = rp};
    return mgvcl_clCreateImage(ctx, flags, fmt, &d, host, err);
}

cl_mem CL_API_CALL mgvcl_clCreateImage3D(cl_context ctx, cl_mem_flags flags,
                                         const cl_image_format *fmt, size_t w, size_t h, size_t dp,
                                         size_t rp, size_t sp, void *host, cl_int *err)
{
    cl_image_desc d = {.image_type = CL_MEM_OBJECT_IMAGE3D,
                       .image_width = w,
                       .image_height = h,
                       .image_depth = dp,
                       .image_row_pitch = rp,
                       .image_slice_pitch = sp};
    return mgvcl_clCreateImage(ctx, flags, fmt, &d, host, err);
}

cl_int CL_API_CALL mgvcl_clGetSupportedImageFormats(cl_context ctx, cl_mem_flags flags,
                                                    cl_mem_object_type t, cl_uint n,
                                                    cl_image_format *fmts, cl_uint *nf)
{
    mgw_buf_t b;
    uint8_t *rep = NULL;
    size_t len = 0;
    if (!mgvcl_is(ctx))
        return CL_INVALID_CONTEXT;
    if (fmts && !n)
        return CL_INVALID_VALUE;
    mgw_image_formats_encode(
        &b, 0,
        &(mgw_image_formats_t){
            .ctx = ctx->id, .flags = flags & ~(cl_mem_flags)(HOST_FLAGS | HOST_ACCESS), .type = t});
    cl_int rc = mgvcl_call(ctx->conn, &b, &rep, &len);
    mgw_buf_free(&b);
    if (rc == CL_SUCCESS) {
        mgw_cur_t c;
        mgw_image_formats_reply_t m;
        mgw_image_format_t f;
        mgw_cur_init(&c, rep, len);
        if (mgw_image_formats_reply_decode(&c, &m)) {
            rc = CL_OUT_OF_RESOURCES;
        } else {
            for (cl_uint i = 0; fmts && i < n && mgw_image_format_next(&m.formats, &f) == 0; i++)
                fmts[i] = (cl_image_format){f.order, f.type};
            if (nf)
                *nf = m.formats.n;
        }
    }
    free(rep);
    return rc;
}

cl_int CL_API_CALL mgvcl_clGetImageInfo(cl_mem m, cl_image_info p, size_t size, void *value,
                                        size_t *size_ret)
{
    if (!mgvcl_is(m) || !mgvcl_is_image(m))
        return CL_INVALID_MEM_OBJECT;
    switch (p) {
    case CL_IMAGE_FORMAT:
        return mgvcl_ret(&m->fmt, sizeof m->fmt, size, value, size_ret);
    case CL_IMAGE_ELEMENT_SIZE:
        return mgvcl_ret(&m->elem, sizeof m->elem, size, value, size_ret);
    case CL_IMAGE_BUFFER:
        return mgvcl_ret(&m->desc.buffer, sizeof m->desc.buffer, size, value, size_ret);
    }
    return mgvcl_info(m->ctx->conn, MGW_K_IMAGE, m->id, 0, p, size, value, size_ret);
}

/* A read of region r at o into dst (host pitches rp, sp, filled in): the
 * packed pixels come on the bulk lane into a temporary, unpacked into dst
 * when complete. */
static cl_int image_read(cl_command_queue q, cl_mem m, cl_bool blocking, const size_t *o,
                         const size_t *r, size_t rp, size_t sp, void *dst, cl_uint nw,
                         const cl_event *w, cl_event *out, cl_command_type type)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    size_t n = packed_size(m, r);
    unsigned char *tmp = n ? malloc(n) : NULL;
    if (!tmp)
        return n ? CL_OUT_OF_HOST_MEMORY : CL_INVALID_VALUE;
    cl_int rc = mgvcl_enq_begin(q, nw, w, type, &e);
    if (rc) {
        free(tmp);
        return rc;
    }
    mgw_enq_read_image_encode(
        &b, 0,
        &(mgw_enq_read_image_t){.x = {.xfer = e.ev->id, .size = n, .head = e.head, .mem = m->id},
                                .rect = image_rect(o, r)});
    cl_event ev = e.ev;
    ev->data = 1;
    ev->dsize = n;
    ev->host = dst;
    ev->reg[0] = r[0] * m->elem;
    ev->reg[1] = r[1];
    ev->reg[2] = r[2];
    ev->hrp = row_step(m, rp, sp);
    ev->hsp = sp;
    ev->dst = ev->free_after = tmp;
    rc = mgvcl_enq_end(q, &e, &b, out, blocking, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

/* A write of region r at o from src (pitches filled in): packed here, and
 * on the wire when the call returns (src may be freed at once). */
static cl_int image_write(cl_command_queue q, cl_mem m, cl_bool blocking, const size_t *o,
                          const size_t *r, size_t rp, size_t sp, const void *src, cl_uint nw,
                          const cl_event *w, cl_event *out, cl_command_type type)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    size_t n = packed_size(m, r);
    unsigned char *packed = n ? malloc(n) : NULL;
    if (!packed)
        return n ? CL_OUT_OF_HOST_MEMORY : CL_INVALID_VALUE;
    pack(m, r, (unsigned char *)src, rp, sp, packed, 1);
    cl_int rc = mgvcl_enq_begin(q, nw, w, type, &e);
    if (rc) {
        free(packed);
        return rc;
    }
    uint64_t xfer = e.ev->id;
    mgw_enq_write_image_encode(
        &b, 0,
        &(mgw_enq_write_image_t){.x = {.xfer = xfer, .size = n, .head = e.head, .mem = m->id},
                                 .rect = image_rect(o, r)});
    rc = mgvcl_enq_end(q, &e, &b, out, blocking, xfer, packed, n);
    mgw_buf_free(&b);
    free(packed);
    return rc;
}

cl_int CL_API_CALL mgvcl_clEnqueueReadImage(cl_command_queue q, cl_mem m, cl_bool blocking,
                                            const size_t *o, const size_t *r, size_t rp, size_t sp,
                                            void *dst, cl_uint nw, const cl_event *w, cl_event *out)
{
    cl_int rc = image_check(q, m, 1);
    if (rc)
        return rc;
    if (!dst || !region_ok(m, o, r) || host_pitches(m, r, &rp, &sp))
        return CL_INVALID_VALUE;
    return image_read(q, m, blocking, o, r, rp, sp, dst, nw, w, out, CL_COMMAND_READ_IMAGE);
}

cl_int CL_API_CALL mgvcl_clEnqueueWriteImage(cl_command_queue q, cl_mem m, cl_bool blocking,
                                             const size_t *o, const size_t *r, size_t rp, size_t sp,
                                             const void *src, cl_uint nw, const cl_event *w,
                                             cl_event *out)
{
    cl_int rc = image_check(q, m, 2);
    if (rc)
        return rc;
    if (!src || !region_ok(m, o, r) || host_pitches(m, r, &rp, &sp))
        return CL_INVALID_VALUE;
    return image_write(q, m, blocking, o, r, rp, sp, src, nw, w, out, CL_COMMAND_WRITE_IMAGE);
}

/* Two boxes of region r at a and b overlap. */
static int overlap(const size_t *a, const size_t *b, const size_t *r)
{
    for (int i = 0; i < 3; i++)
        if (a[i] >= b[i] + r[i] || b[i] >= a[i] + r[i])
            return 0;
    return 1;
}

static cl_int copy_send(cl_command_queue q, cl_command_type type, uint8_t how, cl_mem src,
                        cl_mem dst, const size_t *so, const size_t *dof, const size_t *r,
                        cl_uint nw, const cl_event *w, cl_event *out)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    cl_int rc = mgvcl_enq_begin(q, nw, w, type, &e);
    if (rc)
        return rc;
    mgw_enq_copy_image_t m = {.head = e.head, .how = how, .src = src->id, .dst = dst->id};
    memcpy(m.src_origin, so, sizeof m.src_origin);
    memcpy(m.dst_origin, dof, sizeof m.dst_origin);
    memcpy(m.region, r, sizeof m.region);
    mgw_enq_copy_image_encode(&b, 0, &m);
    rc = mgvcl_enq_end(q, &e, &b, out, CL_FALSE, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

/* A buffer of q's context, for the copies between images and buffers. */
static cl_int buffer_check(cl_command_queue q, cl_mem m)
{
    if (!mgvcl_is(m) || mgvcl_is_image(m))
        return CL_INVALID_MEM_OBJECT;
    return m->ctx == q->ctx ? CL_SUCCESS : CL_INVALID_CONTEXT;
}

cl_int CL_API_CALL mgvcl_clEnqueueCopyImage(cl_command_queue q, cl_mem src, cl_mem dst,
                                            const size_t *so, const size_t *dof, const size_t *r,
                                            cl_uint nw, const cl_event *w, cl_event *out)
{
    cl_int rc = image_check(q, src, 0);
    if (!rc)
        rc = image_check(q, dst, 0);
    if (rc)
        return rc;
    if (src->fmt.image_channel_order != dst->fmt.image_channel_order ||
        src->fmt.image_channel_data_type != dst->fmt.image_channel_data_type)
        return CL_IMAGE_FORMAT_MISMATCH;
    if (!region_ok(src, so, r) || !region_ok(dst, dof, r))
        return CL_INVALID_VALUE;
    if (src == dst && overlap(so, dof, r))
        return CL_MEM_COPY_OVERLAP;
    return copy_send(q, CL_COMMAND_COPY_IMAGE, MGW_IMGCOPY_IMAGE, src, dst, so, dof, r, nw, w, out);
}

cl_int CL_API_CALL mgvcl_clEnqueueCopyImageToBuffer(cl_command_queue q, cl_mem src, cl_mem dst,
                                                    const size_t *so, const size_t *r, size_t dof,
                                                    cl_uint nw, const cl_event *w, cl_event *out)
{
    cl_int rc = image_check(q, src, 0);
    if (!rc)
        rc = buffer_check(q, dst);
    if (rc)
        return rc;
    size_t n = region_ok(src, so, r) ? packed_size(src, r) : 0;
    if (!n || dof > dst->size || n > dst->size - dof)
        return CL_INVALID_VALUE;
    size_t d[3] = {dof, 0, 0};
    return copy_send(q, CL_COMMAND_COPY_IMAGE_TO_BUFFER, MGW_IMGCOPY_TO_BUFFER, src, dst, so, d, r,
                     nw, w, out);
}

cl_int CL_API_CALL mgvcl_clEnqueueCopyBufferToImage(cl_command_queue q, cl_mem src, cl_mem dst,
                                                    size_t so, const size_t *dof, const size_t *r,
                                                    cl_uint nw, const cl_event *w, cl_event *out)
{
    cl_int rc = buffer_check(q, src);
    if (!rc)
        rc = image_check(q, dst, 0);
    if (rc)
        return rc;
    size_t n = region_ok(dst, dof, r) ? packed_size(dst, r) : 0;
    if (!n || so > src->size || n > src->size - so)
        return CL_INVALID_VALUE;
    size_t s[3] = {so, 0, 0};
    return copy_send(q, CL_COMMAND_COPY_BUFFER_TO_IMAGE, MGW_IMGCOPY_FROM_BUFFER, src, dst, s, dof,
                     r, nw, w, out);
}

cl_int CL_API_CALL mgvcl_clEnqueueFillImage(cl_command_queue q, cl_mem m, const void *color,
                                            const size_t *o, const size_t *r, cl_uint nw,
                                            const cl_event *w, cl_event *out)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    cl_int rc = image_check(q, m, 0);
    if (rc)
        return rc;
    if (!color || !region_ok(m, o, r))
        return CL_INVALID_VALUE;
    if ((rc = mgvcl_enq_begin(q, nw, w, CL_COMMAND_FILL_IMAGE, &e)))
        return rc;
    mgw_enq_fill_image_t f = {.head = e.head, .mem = m->id, .rect = image_rect(o, r)};
    memcpy(f.color, color, sizeof f.color); /* a cl_float4, cl_int4 or cl_uint4 */
    mgw_enq_fill_image_encode(&b, 0, &f);
    rc = mgvcl_enq_end(q, &e, &b, out, CL_FALSE, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

/* One mapping of an image: the host copy (or the host image's memory with
 * CL_MEM_USE_HOST_PTR), its region and pitches, what unmap writes back. */
typedef struct imap {
    struct imap *next;
    cl_mem m;
    void *p;
    size_t o[3], r[3], rp, sp;
    int write, own;
} imap_t;

static imap_t *imaps;
static pthread_mutex_t imaps_lock = PTHREAD_MUTEX_INITIALIZER;

void *CL_API_CALL mgvcl_clEnqueueMapImage(cl_command_queue q, cl_mem m, cl_bool blocking,
                                          cl_map_flags flags, const size_t *o, const size_t *r,
                                          size_t *rpo, size_t *spo, cl_uint nw, const cl_event *w,
                                          cl_event *out, cl_int *err)
{
    imap_t *mp = NULL;
    int wr = (flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) != 0;
    cl_int rc = image_check(q, m, ((flags & CL_MAP_READ) ? 1 : 0) | (wr ? 2 : 0));
    if (rc)
        goto fn_fail;
    int has_slices = m->type == CL_MEM_OBJECT_IMAGE3D || m->type == CL_MEM_OBJECT_IMAGE2D_ARRAY ||
                     m->type == CL_MEM_OBJECT_IMAGE1D_ARRAY;
    if (!region_ok(m, o, r) || !rpo || (has_slices && !spo) ||
        (flags & ~(cl_map_flags)(CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) ||
        ((flags & CL_MAP_WRITE_INVALIDATE_REGION) && (flags & (CL_MAP_READ | CL_MAP_WRITE)))) {
        rc = CL_INVALID_VALUE;
        goto fn_fail;
    }
    if (!(mp = calloc(1, sizeof *mp))) {
        rc = CL_OUT_OF_HOST_MEMORY;
        goto fn_fail;
    }
    mp->m = m;
    memcpy(mp->o, o, sizeof mp->o);
    memcpy(mp->r, r, sizeof mp->r);
    mp->write = wr;
    if (m->host_ptr) { /* the host image itself, at the region's origin */
        mp->rp = m->hrp;
        mp->sp = m->hsp;
        mp->p = (char *)m->host_ptr + o[2] * m->hsp + o[1] * row_step(m, m->hrp, m->hsp) +
                o[0] * m->elem;
    } else {
        mp->own = 1;
        host_pitches(m, r, &mp->rp, &mp->sp); /* packed */
        if (!(mp->p = malloc(packed_size(m, r)))) {
            rc = CL_OUT_OF_HOST_MEMORY;
            goto fn_fail;
        }
    }
    if (flags & CL_MAP_WRITE_INVALIDATE_REGION)
        rc = mgvcl_clEnqueueMarkerWithWaitList(q, nw, w, out);
    else
        rc = image_read(q, m, blocking, o, r, mp->rp, mp->sp, mp->p, nw, w, out,
                        CL_COMMAND_MAP_IMAGE);
    if (rc)
        goto fn_fail;
    if (out && *out)
        (*out)->type = CL_COMMAND_MAP_IMAGE;
    if (blocking && (flags & CL_MAP_WRITE_INVALIDATE_REGION) && out && *out)
        mgvcl_clWaitForEvents(1, out);
    *rpo = m->type == CL_MEM_OBJECT_IMAGE1D_ARRAY && !m->host_ptr ? mp->sp : mp->rp;
    if (spo)
        *spo = has_slices ? mp->sp : 0;
    mgvcl_clRetainMemObject(m);
    atomic_fetch_add(&m->maps, 1);
    pthread_mutex_lock(&imaps_lock);
    mp->next = imaps;
    imaps = mp;
    pthread_mutex_unlock(&imaps_lock);
    if (err)
        *err = CL_SUCCESS;
    return mp->p;
fn_fail:
    if (mp && mp->own)
        free(mp->p);
    free(mp);
    if (err)
        *err = rc;
    return NULL;
}

cl_int mgvcl_image_unmap(cl_command_queue q, cl_mem m, void *p, cl_uint nw, const cl_event *w,
                         cl_event *out)
{
    imap_t *mp = NULL;
    cl_int rc;
    if (m->ctx != q->ctx)
        return CL_INVALID_CONTEXT;
    pthread_mutex_lock(&imaps_lock);
    for (imap_t **pp = &imaps; *pp; pp = &(*pp)->next)
        if ((*pp)->m == m && (*pp)->p == p) {
            mp = *pp;
            *pp = mp->next;
            break;
        }
    pthread_mutex_unlock(&imaps_lock);
    if (!mp)
        return CL_INVALID_VALUE;
    if (mp->write) /* on the wire when the call returns */
        rc = image_write(q, m, CL_FALSE, mp->o, mp->r, mp->rp, mp->sp, mp->p, nw, w, out,
                         CL_COMMAND_UNMAP_MEM_OBJECT);
    else
        rc = mgvcl_clEnqueueMarkerWithWaitList(q, nw, w, out);
    if (rc == CL_SUCCESS && out && *out)
        (*out)->type = CL_COMMAND_UNMAP_MEM_OBJECT;
    if (mp->own)
        free(mp->p);
    free(mp);
    atomic_fetch_sub(&m->maps, 1);
    mgvcl_clReleaseMemObject(m);
    return rc;
}

cl_sampler CL_API_CALL mgvcl_clCreateSampler(cl_context ctx, cl_bool norm, cl_addressing_mode a,
                                             cl_filter_mode f, cl_int *err)
{
    cl_sampler s = NULL;
    cl_int rc = CL_SUCCESS;
    mgw_buf_t b;
    if (!mgvcl_is(ctx))
        rc = CL_INVALID_CONTEXT;
    else if ((norm != CL_TRUE && norm != CL_FALSE) ||
             (a != CL_ADDRESS_NONE && a != CL_ADDRESS_CLAMP_TO_EDGE && a != CL_ADDRESS_CLAMP &&
              a != CL_ADDRESS_REPEAT && a != CL_ADDRESS_MIRRORED_REPEAT) ||
             (f != CL_FILTER_NEAREST && f != CL_FILTER_LINEAR))
        rc = CL_INVALID_VALUE;
    else if (!(s = calloc(1, sizeof *s)))
        rc = CL_OUT_OF_HOST_MEMORY;
    if (rc)
        goto fn_exit;
    s->dispatch = &mgvcl_dispatch;
    atomic_init(&s->refs, 1);
    s->ctx = ctx;
    s->normalized = norm;
    s->addressing = a;
    s->filter = f;
    s->id = mgvcl_id(ctx->conn);
    mgw_sampler_create_encode(&b, 0,
                              &(mgw_sampler_create_t){.id = s->id,
                                                      .ctx = ctx->id,
                                                      .normalized = norm == CL_TRUE,
                                                      .addressing = a,
                                                      .filter = f});
    rc = mgvcl_call(ctx->conn, &b, NULL, NULL);
    mgw_buf_free(&b);
    if (rc) {
        free(s);
        s = NULL;
    } else {
        mgvcl_clRetainContext(ctx);
    }
fn_exit:
    if (err)
        *err = rc;
    return s;
}

cl_int CL_API_CALL mgvcl_clRetainSampler(cl_sampler s)
{
    if (!mgvcl_is(s))
        return CL_INVALID_SAMPLER;
    atomic_fetch_add(&s->refs, 1);
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clReleaseSampler(cl_sampler s)
{
    if (!mgvcl_is(s))
        return CL_INVALID_SAMPLER;
    if (atomic_fetch_sub(&s->refs, 1) == 1) {
        mgvcl_release_remote(s->ctx->conn, MGW_K_SAMPLER, s->id);
        mgvcl_clReleaseContext(s->ctx);
        free(s);
    }
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clGetSamplerInfo(cl_sampler s, cl_sampler_info p, size_t size, void *value,
                                          size_t *size_ret)
{
    cl_uint u;
    if (!mgvcl_is(s))
        return CL_INVALID_SAMPLER;
    switch (p) {
    case CL_SAMPLER_REFERENCE_COUNT:
        u = (cl_uint)atomic_load(&s->refs);
        return mgvcl_ret(&u, sizeof u, size, value, size_ret);
    case CL_SAMPLER_CONTEXT:
        return mgvcl_ret(&s->ctx, sizeof s->ctx, size, value, size_ret);
    case CL_SAMPLER_NORMALIZED_COORDS:
        return mgvcl_ret(&s->normalized, sizeof s->normalized, size, value, size_ret);
    case CL_SAMPLER_ADDRESSING_MODE:
        return mgvcl_ret(&s->addressing, sizeof s->addressing, size, value, size_ret);
    case CL_SAMPLER_FILTER_MODE:
        return mgvcl_ret(&s->filter, sizeof s->filter, size, value, size_ret);
    }
    return CL_INVALID_VALUE;
}
