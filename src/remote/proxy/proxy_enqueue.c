/*
 * mpigpu-proxy: enqueued commands and the bulk thread.
 *
 * A read or write takes its place in the client's queue as a marker and a
 * barrier: m1 (the client's wait list and everything before it in an
 * in-order queue) and m2 (waits on a user event `gate`, and holds back the
 * commands after it).  The bulk thread streams the data
 * in MGW_CHUNK pieces through the context's pinned staging buffers on the
 * queue's companion transfer queue, after m1, with at most
 * MGPX_STAGING_SLOTS chunks in flight, so network and PCIe overlap; then it
 * opens the gate with the transfer's status.  m2 is the command's event.
 * The session thread never waits for the device, so a user event set later
 * by the client cannot deadlock it.
 */
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

/* queue, event, wait list: the head of every enqueue request */
typedef struct enq_head {
    mgpx_obj_t *q;
    uint64_t ev;
    cl_event w[MGW_MAX_WAIT];
    cl_uint nw;
    cl_int err;
} enq_head_t;

/* The head's IDs, each checked for its kind; e->err gets the first error. */
static void head_decode(mgpx_session_t *s, const mgw_enq_head_t *h, enq_head_t *e)
{
    e->ev = h->event;
    e->nw = h->waits.n;
    e->err = CL_SUCCESS;
    e->q = mgpx_map_get(&s->map, h->queue, MGW_K_QUEUE);
    if (!e->q)
        e->err = CL_INVALID_COMMAND_QUEUE;
    for (cl_uint i = 0; i < e->nw; i++) {
        mgpx_obj_t *o = mgpx_map_get(&s->map, mgw_ids_get(&h->waits, i), MGW_K_EVENT);
        e->w[i] = o ? o->h : NULL;
        if (!o)
            e->err = CL_INVALID_EVENT_WAIT_LIST;
    }
    if (e->ev == 0 || mgpx_map_get(&s->map, e->ev, MGW_K_EVENT))
        e->err = CL_INVALID_EVENT;
    else if (!e->err && !s->dry)
        e->err = mgpx_obj_admit(s, MGW_K_EVENT); /* refused before the command is enqueued */
}

/* The head of a decoded request, in a fresh enq_head_t (NULL: no memory). */
static enq_head_t *head_new(mgpx_session_t *s, const mgw_enq_head_t *h)
{
    enq_head_t *e = malloc(sizeof *e);
    if (e)
        head_decode(s, h, e);
    return e;
}

/* The command failed before it had an event: report on the client's event. */
static int fail_event(mgpx_session_t *s, uint64_t ev, cl_int err)
{
    mgw_buf_t b;
    if (s->dry)
        return MGPX_NOREPLY;
    mgpx_slog(s, "session %u (%s): command for event %llu failed: %d", s->num, s->peer,
              (unsigned long long)ev, err);
    mgw_event_done_encode(&b, 0, &(mgw_event_done_t){.event = ev, .status = err});
    pthread_mutex_lock(&s->send_lock);
    if (!s->dead)
        mgtr_msg_send(s->t, s->cmd, &b);
    pthread_mutex_unlock(&s->send_lock);
    mgw_buf_free(&b);
    return MGPX_NOREPLY;
}

static int finish(mgpx_session_t *s, enq_head_t *e, cl_int err, cl_event ev)
{
    if (err != CL_SUCCESS)
        return fail_event(s, e->ev, err);
    err = mgpx_event_track(s, e->ev, e->q->id, ev);
    return err ? fail_event(s, e->ev, err) : MGPX_NOREPLY;
}

/* finish(), then e is freed. */
static int finish_free(mgpx_session_t *s, enq_head_t *e, cl_int err, cl_event ev)
{
    int rc = finish(s, e, err, ev);
    free(e);
    return rc;
}

/* After a command's arguments are checked: an error already met (reported
   on the command's event) or a dry run ends here, with e freed and *rc set;
   returns 1 then. */
static int head_stop(mgpx_session_t *s, enq_head_t *e, int *rc)
{
    if (!e->err && !s->dry)
        return 0;
    *rc = e->err ? fail_event(s, e->ev, e->err) : MGPX_NOREPLY;
    free(e);
    return 1;
}

/* 1 when m is an image (image 1) or a buffer (image 0): every command
 * checks, so that no runtime takes one for the other (PoCL 3.1 reads an
 * image as a buffer).  Not for a dry run (the handles are placeholders). */
int mgpx_is_mem_kind(cl_mem m, int image)
{
    cl_mem_object_type t = 0;
    if (!m || clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof t, &t, NULL))
        return 0;
    return (t != CL_MEM_OBJECT_BUFFER) == (image != 0);
}

static cl_mem mem_of(mgpx_session_t *s, uint64_t id, cl_int *err)
{
    mgpx_obj_t *o = mgpx_map_get(&s->map, id, MGW_K_MEM);
    if (!o && *err == CL_SUCCESS)
        *err = CL_INVALID_MEM_OBJECT;
    return o ? o->h : NULL;
}

/* An argument of a launch in its one form: a value has no num, a buffer or
 * a local size no value; a kind the wire does not know is malformed. */
static int karg_ok(const mgw_karg_t *a)
{
    switch (a->kind) {
    case MGW_ARG_VALUE:
        return a->num == 0;
    case MGW_ARG_MEM:
    case MGW_ARG_LOCAL:
    case MGW_ARG_SAMPLER:
        return a->value.n == 0;
    }
    return 0;
}

int mgpx_op_ndrange(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_ndrange_t m;
    mgw_karg_t a;
    int rc;
    if (mgw_enq_ndrange_decode(c, &m))
        return MGPX_BAD;
    mgw_karg_list_t l = m.args;
    while (mgw_karg_next(&l, &a) == 0)
        if (!karg_ok(&a))
            return MGPX_BAD;
    enq_head_t *e = head_new(s, &m.head);
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    mgpx_obj_t *k = mgpx_map_get(&s->map, m.kernel, MGW_K_KERNEL);
    cl_int err = e->err;
    if (!k && !err)
        err = CL_INVALID_KERNEL;
    if ((m.dim < 1 || m.dim > 3) && !err)
        err = CL_INVALID_WORK_DIMENSION;
    while (mgw_karg_next(&m.args, &a) == 0) {
        size_t n = 0;
        const void *v = NULL;
        cl_mem mem = NULL;
        cl_int aerr = CL_SUCCESS;
        switch (a.kind) {
        case MGW_ARG_VALUE:
            v = a.value.p;
            n = a.value.n;
            break;
        case MGW_ARG_MEM:
            if (a.num)
                mem = mem_of(s, a.num, &aerr);
            v = &mem;
            n = sizeof mem;
            break;
        case MGW_ARG_LOCAL:
            n = (size_t)a.num;
            break;
        default: { /* MGW_ARG_SAMPLER (karg_ok) */
            mgpx_obj_t *so = mgpx_map_get(&s->map, a.num, MGW_K_SAMPLER);
            if (!so)
                aerr = CL_INVALID_SAMPLER;
            else
                v = &so->h; /* a cl_sampler */
            n = sizeof(cl_sampler);
        }
        }
        mgpx_kargs_t *ka = k ? k->aux : NULL;
        cl_uint idx = a.index;
        if (ka && (idx >= ka->n || (ka->kind[idx] != 0xff && ka->kind[idx] != a.kind) ||
                   (ka->kind[idx] == 0xff && a.kind == MGW_ARG_VALUE && n == sizeof(cl_mem))))
            aerr = CL_INVALID_ARG_VALUE; /* unknown kinds: no value may pose as a handle */
        if (!aerr && !err && !s->dry)
            aerr = clSetKernelArg(k->h, idx, n, v);
        if (aerr && !err)
            err = aerr;
    }
    e->err = err;
    if (head_stop(s, e, &rc))
        return rc;
    cl_event ev = NULL;
    err = clEnqueueNDRangeKernel(e->q->h, k->h, m.dim, m.offset, m.global,
                                 m.has_local ? m.local : NULL, e->nw, e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}

static void job_push(mgpx_session_t *s, mgpx_job_t *j)
{
    pthread_mutex_lock(&s->lock);
    j->next = NULL;
    *s->jobs_tail = j;
    s->jobs_tail = &j->next;
    s->jobs_open++;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

/* An image transfer's size: the region's pixels packed, at most 4 GiB
 * (as for a rect); CL_INVALID_MEM_OBJECT when j->mem is no image. */
static cl_int image_size_ok(const mgpx_job_t *j)
{
    size_t elem = 0;
    if (clGetImageInfo(j->mem, CL_IMAGE_ELEMENT_SIZE, sizeof elem, &elem, NULL) || !elem)
        return CL_INVALID_MEM_OBJECT;
    if (j->reg[0] > SIZE_MAX / elem / j->reg[1] / j->reg[2] ||
        j->reg[0] * elem * j->reg[1] * j->reg[2] != j->size)
        return CL_INVALID_VALUE;
    return CL_SUCCESS;
}

/* Common part of the four transfers and their one-copy forms (cma: the
 * payload ends with the client's host address; the job copies from or to
 * [addr, addr + size) of the client and nowhere else).  A write that fails
 * here still gets a job, which drains its data from the bulk lane (a
 * one-copy write has none). */
static int transfer_ps(mgpx_session_t *s, const mgw_xfer_head_t *x, int type, size_t off,
                       const mgw_rect_t *rect, int cma, uint64_t addr, const mgw_peer_send_t *ps)
{
    if (cma && !mgtr_cma_range_ok(addr, x->size))
        return MGPX_BAD; /* malformed: not a range of the client's address space */
    enq_head_t *e = head_new(s, &x->head);
    mgpx_job_t *j = calloc(1, sizeof *j);
    cl_int err;
    int rc = MGPX_NOREPLY;
    int img = type == JOB_WRITE_IMAGE || type == JOB_READ_IMAGE; /* size: image_size_ok */
    if (!e || !j) {
        free(e);
        free(j);
        return CL_OUT_OF_HOST_MEMORY;
    }
    j->type = type;
    j->xfer = x->xfer;
    j->size = x->size;
    err = e->err;
    j->mem = mem_of(s, x->mem, &err);
    if (rect) {
        memcpy(j->bo, rect->origin, sizeof j->bo);
        memcpy(j->reg, rect->region, sizeof j->reg);
        j->brp = rect->row_pitch;
        j->bsp = rect->slice_pitch;
        if (!err &&
            (j->reg[0] == 0 || j->reg[1] == 0 || j->reg[2] == 0 ||
             j->reg[0] > SIZE_MAX / j->reg[1] / j->reg[2] ||
             (!img && j->reg[0] * j->reg[1] * j->reg[2] != j->size) || j->size > (1ull << 32)))
            err = CL_INVALID_VALUE;
    } else {
        j->off = off;
        if (!err && (type == JOB_PEER_SEND || type == JOB_PEER_RECV) && !s->dry &&
            mgpx_is_mem_kind(j->mem, 0)) {
            size_t msize = 0;
            clGetMemObjectInfo(j->mem, CL_MEM_SIZE, sizeof msize, &msize, NULL);
            if (off > msize || x->size > msize - off)
                err = CL_INVALID_VALUE;
        }
    }
    if (ps && !err && !(j->paddr = strdup(ps->addr ? ps->addr : "")))
        err = CL_OUT_OF_HOST_MEMORY;
    if (ps) {
        memcpy(j->psid, ps->sid, MGW_TOKEN);
        memcpy(j->pkey, ps->key, MGW_TOKEN);
    }
    if (cma) {
        j->addr = addr;
        if (!err && s->cma_pid <= 0)
            err = CL_INVALID_OPERATION; /* the lane is not on in this session */
    }
    if (s->dry) {
        free(e);
        free(j->paddr);
        free(j);
        return MGPX_NOREPLY;
    }
    if (!err && !mgpx_is_mem_kind(j->mem, img))
        err = CL_INVALID_MEM_OBJECT;
    if (!err && img)
        err = image_size_ok(j);
    cl_event m2 = NULL;
    if (!err)
        err = clGetCommandQueueInfo(e->q->h, CL_QUEUE_CONTEXT, sizeof j->ctx, &j->ctx, NULL);
    if (!err)
        err = clGetCommandQueueInfo(e->q->h, CL_QUEUE_DEVICE, sizeof j->dev, &j->dev, NULL);
    if (!err)
        j->gate = clCreateUserEvent(j->ctx, &err);
    if (!err)
        err = clEnqueueMarkerWithWaitList(e->q->h, 0, NULL, &j->m1);
    if (!err)
        err = clEnqueueBarrierWithWaitList(e->q->h, 1, &j->gate, &m2);
    if (!err && e->nw && !(j->waits = malloc(e->nw * sizeof *j->waits)))
        err = CL_OUT_OF_HOST_MEMORY;
    if (!err) {
        for (cl_uint i = 0; i < e->nw; i++)
            clRetainEvent(j->waits[i] = e->w[i]);
        j->nwaits = e->nw;
        clRetainEvent(j->m2 = m2);
        j->tq = e->q->aux;
        clRetainCommandQueue(j->tq);
        clRetainMemObject(j->mem);
        rc = finish(s, e, CL_SUCCESS, m2);
        if (type == JOB_PEER_SEND)
            mgpx_peer_send_start(s, j);
        else
            job_push(s, j);
    } else {
        if (j->gate) {
            clSetUserEventStatus(j->gate, err);
            clReleaseEvent(j->gate);
            j->gate = NULL;
        }
        if (j->m1)
            clReleaseEvent(j->m1);
        j->m1 = NULL;
        j->mem = NULL;
        rc = fail_event(s, e->ev, err);
        j->err = err;
        if ((type == JOB_WRITE || type == JOB_WRITE_RECT || type == JOB_WRITE_IMAGE) && !cma)
            job_push(s, j); /* drain */
        else {
            if (type == JOB_PEER_RECV)
                mgpx_peer_refused(s, x->xfer);
            free(j->paddr);
            free(j);
        }
    }
    free(e);
    return rc;
}

static int transfer(mgpx_session_t *s, const mgw_xfer_head_t *x, int type, size_t off,
                    const mgw_rect_t *rect, int cma, uint64_t addr)
{
    return transfer_ps(s, x, type, off, rect, cma, addr, NULL);
}

/* The two ends of a proxy-to-proxy transfer (proxy_peer.c): each a
 * transfer of the client's queue with its m1, gate and m2, the receive run
 * by the bulk thread, the send by a thread of its own. */
int mgpx_op_peer_recv(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_peer_recv_t m;
    return mgw_peer_recv_decode(c, &m)
               ? MGPX_BAD
               : transfer(s, &m.x, JOB_PEER_RECV, m.off, m.rect.region[0] ? &m.rect : NULL, 0, 0);
}

int mgpx_op_peer_send(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_peer_send_t m;
    int rc = MGPX_BAD;
    if (!mgw_peer_send_decode(c, &m))
        rc =
            transfer_ps(s, &m.x, JOB_PEER_SEND, m.off, m.rect.region[0] ? &m.rect : NULL, 0, 0, &m);
    mgw_peer_send_free(&m);
    return rc;
}

int mgpx_op_write(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_write_t m;
    return mgw_enq_write_decode(c, &m) ? MGPX_BAD : transfer(s, &m.x, JOB_WRITE, m.off, NULL, 0, 0);
}

int mgpx_op_read(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_read_t m;
    return mgw_enq_read_decode(c, &m) ? MGPX_BAD : transfer(s, &m.x, JOB_READ, m.off, NULL, 0, 0);
}

int mgpx_op_write_cma(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_write_cma_t m;
    return mgw_enq_write_cma_decode(c, &m) ? MGPX_BAD
                                           : transfer(s, &m.x, JOB_WRITE, m.off, NULL, 1, m.addr);
}

int mgpx_op_read_cma(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_read_cma_t m;
    return mgw_enq_read_cma_decode(c, &m) ? MGPX_BAD
                                          : transfer(s, &m.x, JOB_READ, m.off, NULL, 1, m.addr);
}

int mgpx_op_write_rect(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_write_rect_t m;
    return mgw_enq_write_rect_decode(c, &m) ? MGPX_BAD
                                            : transfer(s, &m.x, JOB_WRITE_RECT, 0, &m.rect, 0, 0);
}

int mgpx_op_read_rect(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_read_rect_t m;
    return mgw_enq_read_rect_decode(c, &m) ? MGPX_BAD
                                           : transfer(s, &m.x, JOB_READ_RECT, 0, &m.rect, 0, 0);
}

int mgpx_op_copy(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_copy_t m;
    int rc;
    if (mgw_enq_copy_decode(c, &m))
        return MGPX_BAD;
    enq_head_t *e = head_new(s, &m.head);
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    cl_mem src = mem_of(s, m.src, &e->err), dst = mem_of(s, m.dst, &e->err);
    if (head_stop(s, e, &rc))
        return rc;
    if (!mgpx_is_mem_kind(src, 0) || !mgpx_is_mem_kind(dst, 0))
        return finish_free(s, e, CL_INVALID_MEM_OBJECT, NULL);
    cl_event ev = NULL;
    cl_int err = clEnqueueCopyBuffer(e->q->h, src, dst, m.src_off, m.dst_off, m.size, e->nw,
                                     e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}

int mgpx_op_copy_rect(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_copy_rect_t m;
    int rc;
    if (mgw_enq_copy_rect_decode(c, &m))
        return MGPX_BAD;
    enq_head_t *e = head_new(s, &m.head);
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    cl_mem src = mem_of(s, m.src, &e->err), dst = mem_of(s, m.dst, &e->err);
    if (head_stop(s, e, &rc))
        return rc;
    if (!mgpx_is_mem_kind(src, 0) || !mgpx_is_mem_kind(dst, 0))
        return finish_free(s, e, CL_INVALID_MEM_OBJECT, NULL);
    cl_event ev = NULL;
    cl_int err = clEnqueueCopyBufferRect(e->q->h, src, dst, m.src_origin, m.dst_origin, m.region,
                                         m.src_row_pitch, m.src_slice_pitch, m.dst_row_pitch,
                                         m.dst_slice_pitch, e->nw, e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}

int mgpx_op_fill(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_fill_t m;
    int rc;
    if (mgw_enq_fill_decode(c, &m))
        return MGPX_BAD;
    enq_head_t *e = head_new(s, &m.head);
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    cl_mem mem = mem_of(s, m.mem, &e->err);
    if (head_stop(s, e, &rc))
        return rc;
    if (!mgpx_is_mem_kind(mem, 0))
        return finish_free(s, e, CL_INVALID_MEM_OBJECT, NULL);
    cl_event ev = NULL;
    cl_int err = clEnqueueFillBuffer(e->q->h, mem, m.pattern.p, m.pattern.n, m.off, m.size, e->nw,
                                     e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}

/* A marker or barrier (same message layout). */
static int marker(mgpx_session_t *s, const mgw_enq_head_t *h, int barrier)
{
    int rc;
    enq_head_t *e = head_new(s, h);
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    if (head_stop(s, e, &rc))
        return rc;
    cl_event ev = NULL;
    cl_int err = barrier ? clEnqueueBarrierWithWaitList(e->q->h, e->nw, e->nw ? e->w : NULL, &ev)
                         : clEnqueueMarkerWithWaitList(e->q->h, e->nw, e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}

int mgpx_op_marker(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_marker_t m;
    return mgw_enq_marker_decode(c, &m) ? MGPX_BAD : marker(s, &m.head, 0);
}

int mgpx_op_barrier(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_barrier_t m;
    return mgw_enq_barrier_decode(c, &m) ? MGPX_BAD : marker(s, &m.head, 1);
}

/* Images (the objects: proxy_image.c).  A write or read of an image is a
 * rect transfer whose packed rows are region[0] pixels; the bulk thread
 * runs it as one (run_rect). */
static int image_transfer(mgpx_session_t *s, const mgw_xfer_head_t *x, int type,
                          const mgw_image_rect_t *ir)
{
    mgw_rect_t rect = {.row_pitch = 0, .slice_pitch = 0};
    memcpy(rect.origin, ir->origin, sizeof rect.origin);
    memcpy(rect.region, ir->region, sizeof rect.region);
    return transfer(s, x, type, 0, &rect, 0, 0);
}

int mgpx_op_write_image(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_write_image_t m;
    return mgw_enq_write_image_decode(c, &m) ? MGPX_BAD
                                             : image_transfer(s, &m.x, JOB_WRITE_IMAGE, &m.rect);
}

int mgpx_op_read_image(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_read_image_t m;
    return mgw_enq_read_image_decode(c, &m) ? MGPX_BAD
                                            : image_transfer(s, &m.x, JOB_READ_IMAGE, &m.rect);
}

int mgpx_op_copy_image(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_copy_image_t m;
    int rc;
    if (mgw_enq_copy_image_decode(c, &m))
        return MGPX_BAD;
    if (m.how > MGW_IMGCOPY_FROM_BUFFER)
        return MGPX_BAD;
    enq_head_t *e = head_new(s, &m.head);
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    cl_mem src = mem_of(s, m.src, &e->err), dst = mem_of(s, m.dst, &e->err);
    if (head_stop(s, e, &rc))
        return rc;
    if (!mgpx_is_mem_kind(src, m.how != MGW_IMGCOPY_FROM_BUFFER) ||
        !mgpx_is_mem_kind(dst, m.how != MGW_IMGCOPY_TO_BUFFER))
        return finish_free(s, e, CL_INVALID_MEM_OBJECT, NULL);
    cl_event ev = NULL;
    const cl_event *w = e->nw ? e->w : NULL;
    cl_int err;
    if (m.how == MGW_IMGCOPY_IMAGE)
        err = clEnqueueCopyImage(e->q->h, src, dst, m.src_origin, m.dst_origin, m.region, e->nw, w,
                                 &ev);
    else if (m.how == MGW_IMGCOPY_TO_BUFFER)
        err = clEnqueueCopyImageToBuffer(e->q->h, src, dst, m.src_origin, m.region, m.dst_origin[0],
                                         e->nw, w, &ev);
    else
        err = clEnqueueCopyBufferToImage(e->q->h, src, dst, m.src_origin[0], m.dst_origin, m.region,
                                         e->nw, w, &ev);
    return finish_free(s, e, err, ev);
}

int mgpx_op_fill_image(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_enq_fill_image_t m;
    int rc;
    if (mgw_enq_fill_image_decode(c, &m))
        return MGPX_BAD;
    enq_head_t *e = head_new(s, &m.head);
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    cl_mem mem = mem_of(s, m.mem, &e->err);
    if (head_stop(s, e, &rc))
        return rc;
    if (!mgpx_is_mem_kind(mem, 1))
        return finish_free(s, e, CL_INVALID_MEM_OBJECT, NULL);
    cl_event ev = NULL;
    cl_int err = clEnqueueFillImage(e->q->h, mem, m.color, m.rect.origin, m.rect.region, e->nw,
                                    e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}
