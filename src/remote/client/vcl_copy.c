/* libmpigpu-vcl.so: device-side copies and fills of buffers, map/unmap
 * (host copies); images and samplers are in vcl_image.c. */
#include <stdlib.h>
#include <string.h>

#include "vcl.h"

cl_int CL_API_CALL mgvcl_clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t so,
                                             size_t dof, size_t n, cl_uint nw, const cl_event *w,
                                             cl_event *out)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    if (!mgvcl_is(src) || !mgvcl_is(dst) || mgvcl_is_image(src) || mgvcl_is_image(dst))
        return CL_INVALID_MEM_OBJECT;
    if (src->ctx != q->ctx || dst->ctx != q->ctx)
        return CL_INVALID_CONTEXT;
    if (!n || so > src->size || n > src->size - so || dof > dst->size || n > dst->size - dof)
        return CL_INVALID_VALUE;
    if (src == dst && so < dof + n && dof < so + n)
        return CL_MEM_COPY_OVERLAP;
    cl_int rc = mgvcl_enq_begin(q, nw, w, CL_COMMAND_COPY_BUFFER, &e);
    if (rc)
        return rc;
    if (!mgvcl_copy_peer(&e, q, src, dst, so, dof, n, &rc)) {
        /* src lives on another proxy: the bytes went proxy to proxy */
        if (rc) {
            mgvcl_enq_abort(&e, rc);
            return rc;
        }
        return mgvcl_enq_end(q, &e, NULL, out, CL_FALSE, 0, NULL, 0);
    }
    if ((rc = mgvcl_mem_use(&e, q, src)) || (rc = mgvcl_mem_use(&e, q, dst))) {
        mgvcl_enq_abort(&e, rc);
        return rc;
    }
    mgw_enq_copy_encode(&b, 0,
                        &(mgw_enq_copy_t){.head = e.head,
                                          .src = src->id,
                                          .dst = dst->id,
                                          .src_off = so,
                                          .dst_off = dof,
                                          .size = n});
    rc = mgvcl_enq_end(q, &e, &b, out, CL_FALSE, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

cl_int CL_API_CALL mgvcl_clEnqueueCopyBufferRect(cl_command_queue q, cl_mem src, cl_mem dst,
                                                 const size_t *so, const size_t *dof,
                                                 const size_t *reg, size_t srp, size_t ssp,
                                                 size_t drp, size_t dsp, cl_uint nw,
                                                 const cl_event *w, cl_event *out)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    if (!mgvcl_is(src) || !mgvcl_is(dst) || mgvcl_is_image(src) || mgvcl_is_image(dst))
        return CL_INVALID_MEM_OBJECT;
    if (src->ctx != q->ctx || dst->ctx != q->ctx)
        return CL_INVALID_CONTEXT;
    if (!so || !dof || !reg || !reg[0] || !reg[1] || !reg[2])
        return CL_INVALID_VALUE;
    cl_int rc = mgvcl_enq_begin(q, nw, w, CL_COMMAND_COPY_BUFFER_RECT, &e);
    if (rc)
        return rc;
    if (!mgvcl_copy_rect_peer(&e, q, src, dst, so, dof, reg, srp, ssp, drp, dsp, &rc)) {
        /* src lives on another proxy: the rect went proxy to proxy, packed */
        if (rc) {
            mgvcl_enq_abort(&e, rc);
            return rc;
        }
        return mgvcl_enq_end(q, &e, NULL, out, CL_FALSE, 0, NULL, 0);
    }
    if ((rc = mgvcl_mem_use(&e, q, src)) || (rc = mgvcl_mem_use(&e, q, dst))) {
        mgvcl_enq_abort(&e, rc);
        return rc;
    }
    mgw_enq_copy_rect_t m = {.head = e.head,
                             .src = src->id,
                             .dst = dst->id,
                             .src_row_pitch = srp,
                             .src_slice_pitch = ssp,
                             .dst_row_pitch = drp,
                             .dst_slice_pitch = dsp};
    memcpy(m.src_origin, so, sizeof m.src_origin);
    memcpy(m.dst_origin, dof, sizeof m.dst_origin);
    memcpy(m.region, reg, sizeof m.region);
    mgw_enq_copy_rect_encode(&b, 0, &m);
    rc = mgvcl_enq_end(q, &e, &b, out, CL_FALSE, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

cl_int CL_API_CALL mgvcl_clEnqueueMigrateMemObjects(cl_command_queue q, cl_uint n, const cl_mem *m,
                                                    cl_mem_migration_flags f, cl_uint nw,
                                                    const cl_event *w, cl_event *out)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    if (!n || !m ||
        (f & ~(cl_mem_migration_flags)(CL_MIGRATE_MEM_OBJECT_HOST |
                                       CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED)))
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < n; i++) {
        if (!mgvcl_is(m[i]))
            return CL_INVALID_MEM_OBJECT;
        if (m[i]->ctx != q->ctx)
            return CL_INVALID_CONTEXT;
    }
    cl_int rc = mgvcl_enq_begin(q, nw, w, CL_COMMAND_MIGRATE_MEM_OBJECTS, &e);
    if (rc)
        return rc;
    /* to the host: the data stays where it is (host access goes through its
     * proxy); else to q's proxy, proxy to proxy */
    for (cl_uint i = 0; i < n && !rc && !(f & CL_MIGRATE_MEM_OBJECT_HOST); i++)
        rc = mgvcl_mem_move(&e, q, m[i], !(f & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED));
    if (rc) {
        mgvcl_enq_abort(&e, rc);
        return rc;
    }
    mgw_enq_marker_encode(&b, 0, &(mgw_enq_marker_t){.head = e.head});
    rc = mgvcl_enq_end(q, &e, &b, out, CL_FALSE, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

cl_int CL_API_CALL mgvcl_clEnqueueFillBuffer(cl_command_queue q, cl_mem m, const void *pat,
                                             size_t plen, size_t off, size_t n, cl_uint nw,
                                             const cl_event *w, cl_event *out)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    if (!mgvcl_is(m) || mgvcl_is_image(m))
        return CL_INVALID_MEM_OBJECT;
    if (m->ctx != q->ctx)
        return CL_INVALID_CONTEXT;
    if (!pat || !plen || plen > 128 || (plen & (plen - 1)) || off % plen || n % plen ||
        off > m->size || n > m->size - off)
        return CL_INVALID_VALUE;
    cl_int rc = mgvcl_enq_begin(q, nw, w, CL_COMMAND_FILL_BUFFER, &e);
    if (rc)
        return rc;
    if ((rc = mgvcl_mem_use(&e, q, m))) {
        mgvcl_enq_abort(&e, rc);
        return rc;
    }
    mgw_enq_fill_encode(
        &b, 0,
        &(mgw_enq_fill_t){
            .head = e.head, .mem = m->id, .pattern = {pat, plen}, .off = off, .size = n});
    rc = mgvcl_enq_end(q, &e, &b, out, CL_FALSE, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

/* One mapping: the host copy and what unmap must write back. */
typedef struct mapping {
    struct mapping *next;
    cl_mem m;
    void *p;
    size_t off, n;
    int write, own;
} mapping_t;

static mapping_t *maps;
static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

void *CL_API_CALL mgvcl_clEnqueueMapBuffer(cl_command_queue q, cl_mem m, cl_bool blocking,
                                           cl_map_flags flags, size_t off, size_t n, cl_uint nw,
                                           const cl_event *w, cl_event *out, cl_int *err)
{
    cl_int rc = CL_SUCCESS;
    mapping_t *mp = NULL;
    if (!mgvcl_is(q))
        rc = CL_INVALID_COMMAND_QUEUE;
    else if (!mgvcl_is(m) || mgvcl_is_image(m))
        rc = CL_INVALID_MEM_OBJECT;
    else if (m->ctx != q->ctx)
        rc = CL_INVALID_CONTEXT;
    else if (!n || off > m->size || n > m->size - off ||
             (flags &
              ~(cl_map_flags)(CL_MAP_READ | CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) ||
             ((flags & CL_MAP_WRITE_INVALIDATE_REGION) && (flags & (CL_MAP_READ | CL_MAP_WRITE))))
        rc = CL_INVALID_VALUE;
    else if (((flags & CL_MAP_READ) &&
              (m->flags & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS))) ||
             ((flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) &&
              (m->flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS))))
        rc = CL_INVALID_OPERATION;
    else if (!(mp = calloc(1, sizeof *mp)))
        rc = CL_OUT_OF_HOST_MEMORY;
    if (rc)
        goto fn_fail;
    mp->m = m;
    mp->off = off;
    mp->n = n;
    mp->write = (flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) != 0;
    if (m->host_ptr) {
        mp->p = (char *)m->host_ptr + off;
    } else {
        mp->own = 1;
        if (!(mp->p = malloc(n))) {
            rc = CL_OUT_OF_HOST_MEMORY;
            goto fn_fail;
        }
    }
    if (flags & CL_MAP_WRITE_INVALIDATE_REGION)
        rc = mgvcl_clEnqueueMarkerWithWaitList(q, nw, w, out);
    else
        rc = mgvcl_read_any(q, m, blocking, off, n, mp->p, nw, w, out);
    if (rc)
        goto fn_fail;
    if (out && *out)
        (*out)->type = CL_COMMAND_MAP_BUFFER;
    if (blocking && (flags & CL_MAP_WRITE_INVALIDATE_REGION) && out && *out)
        mgvcl_clWaitForEvents(1, out);
    mgvcl_clRetainMemObject(m);
    atomic_fetch_add(&m->maps, 1);
    pthread_mutex_lock(&maps_lock);
    mp->next = maps;
    maps = mp;
    pthread_mutex_unlock(&maps_lock);
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

cl_int CL_API_CALL mgvcl_clEnqueueUnmapMemObject(cl_command_queue q, cl_mem m, void *p, cl_uint nw,
                                                 const cl_event *w, cl_event *out)
{
    mapping_t *mp = NULL;
    cl_int rc;
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    if (!mgvcl_is(m))
        return CL_INVALID_MEM_OBJECT;
    if (mgvcl_is_image(m))
        return mgvcl_image_unmap(q, m, p, nw, w, out);
    pthread_mutex_lock(&maps_lock);
    for (mapping_t **pp = &maps; *pp; pp = &(*pp)->next)
        if ((*pp)->m == m && (*pp)->p == p) {
            mp = *pp;
            *pp = mp->next;
            break;
        }
    pthread_mutex_unlock(&maps_lock);
    if (!mp)
        return CL_INVALID_VALUE;
    if (mp->write) /* the data is on the wire when the call returns */
        rc = mgvcl_write_now(q, m, mp->off, mp->n, mp->p, nw, w, out);
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
