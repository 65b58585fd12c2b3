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

static void head_decode(mgpx_session_t *s, mgw_cur_t *c, enq_head_t *e)
{
    uint64_t ids[MGW_MAX_WAIT];
    uint64_t qid = mgw_cur_u64(c);
    e->ev = mgw_cur_u64(c);
    e->nw = mgw_cur_ids(c, ids, MGW_MAX_WAIT);
    e->err = CL_SUCCESS;
    e->q = mgpx_map_get(&s->map, qid, MGW_K_QUEUE);
    if (!e->q)
        e->err = CL_INVALID_COMMAND_QUEUE;
    for (cl_uint i = 0; i < e->nw; i++) {
        mgpx_obj_t *o = mgpx_map_get(&s->map, ids[i], MGW_K_EVENT);
        e->w[i] = o ? o->h : NULL;
        if (!o)
            e->err = CL_INVALID_EVENT_WAIT_LIST;
    }
    if (e->ev == 0 || mgpx_map_get(&s->map, e->ev, MGW_K_EVENT))
        e->err = CL_INVALID_EVENT;
}

/* The command failed before it had an event: report on the client's event. */
static int fail_event(mgpx_session_t *s, uint64_t ev, cl_int err)
{
    mgw_buf_t b;
    if (s->dry)
        return MGPX_NOREPLY;
    mgpx_log("session %u (%s): command for event %llu failed: %d", s->num, s->peer,
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

/* After a command's arguments are decoded: a malformed request, an error
   already met (reported on the command's event) or a dry run ends here, with
   e freed and *rc set; returns 1 then. */
static int head_stop(mgpx_session_t *s, mgw_cur_t *c, enq_head_t *e, int *rc)
{
    if (!mgw_cur_done(c) && !e->err && !s->dry)
        return 0;
    *rc = mgw_cur_done(c) ? MGPX_BAD : e->err ? fail_event(s, e->ev, e->err) : MGPX_NOREPLY;
    free(e);
    return 1;
}

static cl_mem mem_of(mgpx_session_t *s, uint64_t id, cl_int *err)
{
    mgpx_obj_t *o = mgpx_map_get(&s->map, id, MGW_K_MEM);
    if (!o && *err == CL_SUCCESS)
        *err = CL_INVALID_MEM_OBJECT;
    return o ? o->h : NULL;
}

int mgpx_op_ndrange(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    enq_head_t *e = malloc(sizeof *e);
    size_t off[3], gws[3], lws[3];
    int rc;
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    head_decode(s, c, e);
    mgpx_obj_t *k = mgpx_map_get(&s->map, mgw_cur_u64(c), MGW_K_KERNEL);
    uint32_t dim = mgw_cur_u32(c);
    for (int i = 0; i < 3; i++) {
        off[i] = mgw_cur_size(c, SIZE_MAX);
        gws[i] = mgw_cur_size(c, SIZE_MAX);
        lws[i] = mgw_cur_size(c, SIZE_MAX);
    }
    uint8_t has_lws = mgw_cur_u8(c);
    uint32_t nargs = mgw_cur_u32(c);
    cl_int err = e->err;
    if (!k && !err)
        err = CL_INVALID_KERNEL;
    if ((dim < 1 || dim > 3) && !err)
        err = CL_INVALID_WORK_DIMENSION;
    for (uint32_t i = 0; i < nargs && !c->err; i++) {
        cl_uint idx = mgw_cur_u32(c);
        uint8_t kind = mgw_cur_u8(c);
        size_t n = 0;
        const void *v = NULL;
        cl_mem m = NULL;
        cl_int aerr = CL_SUCCESS;
        switch (kind) {
        case MGW_ARG_VALUE:
            v = mgw_cur_bytes(c, &n);
            break;
        case MGW_ARG_MEM: {
            uint64_t id = mgw_cur_u64(c);
            if (id)
                m = mem_of(s, id, &aerr);
            v = &m;
            n = sizeof m;
            break;
        }
        case MGW_ARG_LOCAL:
            n = mgw_cur_size(c, SIZE_MAX);
            break;
        default:
            aerr = CL_INVALID_ARG_VALUE; /* samplers are not served */
            c->err |= kind != MGW_ARG_SAMPLER;
        }
        mgpx_kargs_t *ka = k ? k->aux : NULL;
        if (ka && (idx >= ka->n || (ka->kind[idx] != 0xff && ka->kind[idx] != kind) ||
                   (ka->kind[idx] == 0xff && kind == MGW_ARG_VALUE && n == sizeof(cl_mem))))
            aerr = CL_INVALID_ARG_VALUE; /* unknown kinds: no value may pose as a handle */
        if (!aerr && !err && !s->dry && !c->err)
            aerr = clSetKernelArg(k->h, idx, n, v);
        if (aerr && !err)
            err = aerr;
    }
    e->err = err;
    if (head_stop(s, c, e, &rc))
        return rc;
    cl_event ev = NULL;
    err = clEnqueueNDRangeKernel(e->q->h, k->h, dim, off, gws, has_lws ? lws : NULL, e->nw,
                                 e->nw ? e->w : NULL, &ev);
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

/* Common part of the four transfers and their one-copy forms (cma: the
 * payload ends with the client's host address; the job copies from or to
 * [addr, addr + size) of the client and nowhere else).  A write that fails
 * here still gets a job, which drains its data from the bulk lane (a
 * one-copy write has none). */
static int transfer(mgpx_session_t *s, mgw_cur_t *c, int type, int cma)
{
    enq_head_t *e = malloc(sizeof *e);
    mgpx_job_t *j = calloc(1, sizeof *j);
    cl_int err;
    int rc = MGPX_NOREPLY, rect = type == JOB_WRITE_RECT || type == JOB_READ_RECT;
    if (!e || !j) {
        free(e);
        free(j);
        return CL_OUT_OF_HOST_MEMORY;
    }
    j->type = type;
    j->xfer = mgw_cur_u64(c);
    j->size = mgw_cur_size(c, SIZE_MAX);
    head_decode(s, c, e);
    err = e->err;
    j->mem = mem_of(s, mgw_cur_u64(c), &err);
    if (rect) {
        for (int i = 0; i < 3; i++)
            j->bo[i] = mgw_cur_size(c, SIZE_MAX);
        for (int i = 0; i < 3; i++)
            j->reg[i] = mgw_cur_size(c, SIZE_MAX);
        j->brp = mgw_cur_size(c, SIZE_MAX);
        j->bsp = mgw_cur_size(c, SIZE_MAX);
        if (!err && (j->reg[0] == 0 || j->reg[1] == 0 || j->reg[2] == 0 ||
                     j->reg[0] > SIZE_MAX / j->reg[1] / j->reg[2] ||
                     j->reg[0] * j->reg[1] * j->reg[2] != j->size || j->size > (1ull << 32)))
            err = CL_INVALID_VALUE;
    } else {
        j->off = mgw_cur_size(c, SIZE_MAX);
    }
    if (cma) {
        j->addr = mgw_cur_u64(c);
        if (!mgtr_cma_range_ok(j->addr, j->size))
            c->err = 1; /* malformed: not a range of the client's address space */
        else if (!err && s->cma_pid <= 0)
            err = CL_INVALID_OPERATION; /* the lane is not on in this session */
    }
    if (mgw_cur_done(c)) {
        free(e);
        free(j);
        return MGPX_BAD;
    }
    if (s->dry) {
        free(e);
        free(j);
        return MGPX_NOREPLY;
    }
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
        if ((type == JOB_WRITE || type == JOB_WRITE_RECT) && !cma)
            job_push(s, j); /* drain */
        else
            free(j);
    }
    free(e);
    return rc;
}

int mgpx_op_write(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    return transfer(s, c, JOB_WRITE, 0);
}

int mgpx_op_read(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    return transfer(s, c, JOB_READ, 0);
}

int mgpx_op_write_cma(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    return transfer(s, c, JOB_WRITE, 1);
}

int mgpx_op_read_cma(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    return transfer(s, c, JOB_READ, 1);
}

int mgpx_op_write_rect(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    return transfer(s, c, JOB_WRITE_RECT, 0);
}

int mgpx_op_read_rect(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    return transfer(s, c, JOB_READ_RECT, 0);
}

int mgpx_op_copy(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    enq_head_t *e = malloc(sizeof *e);
    int rc;
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    head_decode(s, c, e);
    cl_mem src = mem_of(s, mgw_cur_u64(c), &e->err), dst = mem_of(s, mgw_cur_u64(c), &e->err);
    size_t so = mgw_cur_size(c, SIZE_MAX), dof = mgw_cur_size(c, SIZE_MAX);
    size_t n = mgw_cur_size(c, SIZE_MAX);
    if (head_stop(s, c, e, &rc))
        return rc;
    cl_event ev = NULL;
    cl_int err =
        clEnqueueCopyBuffer(e->q->h, src, dst, so, dof, n, e->nw, e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}

int mgpx_op_copy_rect(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    enq_head_t *e = malloc(sizeof *e);
    size_t v[13];
    int rc;
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    head_decode(s, c, e);
    cl_mem src = mem_of(s, mgw_cur_u64(c), &e->err), dst = mem_of(s, mgw_cur_u64(c), &e->err);
    for (int i = 0; i < 13; i++)
        v[i] = mgw_cur_size(c, SIZE_MAX);
    if (head_stop(s, c, e, &rc))
        return rc;
    cl_event ev = NULL;
    cl_int err = clEnqueueCopyBufferRect(e->q->h, src, dst, v, v + 3, v + 6, v[9], v[10], v[11],
                                         v[12], e->nw, e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}

int mgpx_op_fill(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    enq_head_t *e = malloc(sizeof *e);
    size_t plen;
    int rc;
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    head_decode(s, c, e);
    cl_mem m = mem_of(s, mgw_cur_u64(c), &e->err);
    const void *pat = mgw_cur_bytes(c, &plen);
    size_t off = mgw_cur_size(c, SIZE_MAX), n = mgw_cur_size(c, SIZE_MAX);
    if (head_stop(s, c, e, &rc))
        return rc;
    cl_event ev = NULL;
    cl_int err =
        clEnqueueFillBuffer(e->q->h, m, pat, plen, off, n, e->nw, e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}

static int marker(mgpx_session_t *s, mgw_cur_t *c, int barrier)
{
    enq_head_t *e = malloc(sizeof *e);
    int rc;
    if (!e)
        return CL_OUT_OF_HOST_MEMORY;
    head_decode(s, c, e);
    if (head_stop(s, c, e, &rc))
        return rc;
    cl_event ev = NULL;
    cl_int err = barrier ? clEnqueueBarrierWithWaitList(e->q->h, e->nw, e->nw ? e->w : NULL, &ev)
                         : clEnqueueMarkerWithWaitList(e->q->h, e->nw, e->nw ? e->w : NULL, &ev);
    return finish_free(s, e, err, ev);
}

int mgpx_op_marker(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    return marker(s, c, 0);
}

int mgpx_op_barrier(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    return marker(s, c, 1);
}
