/* mpigpu-proxy: the bulk thread of a session, which alone reads and writes
 * the bulk lane.  Jobs run in the order the session thread queued them,
 * which is the order the client sent their data. */
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

#define PREFIX 20 /* u64 xfer, u64 offset, i32 status */

/* Receives the bulk chunk (xfer, off) of exactly n bytes into dst. */
static int chunk_recv(mgrm_session_t *s, uint64_t xfer, size_t off, size_t n, void *dst)
{
    uint8_t raw[MGRM_HDR_SIZE], pre[PREFIX];
    mgrm_hdr_t h;
    mgrm_cur_t c;
    if (s->t->recv(s->bulk, raw, sizeof raw) || mgrm_hdr_parse(raw, &h, MGRM_CHUNK + PREFIX) ||
        h.op != MGRM_OP_BULK || h.length != n + PREFIX || s->t->recv(s->bulk, pre, PREFIX))
        return -1;
    mgrm_cur_init(&c, pre, PREFIX);
    if (mgrm_cur_u64(&c) != xfer || mgrm_cur_u64(&c) != off)
        return -1;
    return n ? s->t->recv(s->bulk, dst, n) : 0;
}

static int chunk_send(mgrm_session_t *s, uint64_t xfer, size_t off, const void *p, size_t n,
                      cl_int status, int last)
{
    mgrm_buf_t b;
    int rc;
    mgrm_buf_init(&b, MGRM_OP_BULK, last ? MGRM_F_LAST : 0, 0);
    mgrm_buf_u64(&b, xfer);
    mgrm_buf_u64(&b, off);
    mgrm_buf_i32(&b, status);
    if (mgrm_buf_finish(&b)) {
        mgrm_buf_free(&b);
        return -1;
    }
    b.p[8] = (uint8_t)(PREFIX + n);
    b.p[9] = (uint8_t)((PREFIX + n) >> 8);
    b.p[10] = (uint8_t)((PREFIX + n) >> 16);
    b.p[11] = (uint8_t)((PREFIX + n) >> 24);
    rc = s->t->send(s->bulk, b.p, b.len) || (n && s->t->send(s->bulk, p, n)) ? -1 : 0;
    mgrm_buf_free(&b);
    return rc;
}

static cl_int wait_ok(cl_event *e)
{
    cl_int st = CL_SUCCESS, err;
    if (!*e)
        return CL_SUCCESS;
    err = clWaitForEvents(1, e);
    clGetEventInfo(*e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    clReleaseEvent(*e);
    *e = NULL;
    return st < 0 ? st : err;
}

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Waits here for m1 and the client's wait list, instead of making OpenCL
 * commands depend on them: PoCL 3.1 mishandles failures passed on to other
 * queues, or to a command that also waits for an unset user event
 * (pocl_update_event_failed); a failure fails the transfer. */
static void wait_m1(mgrm_job_t *j)
{
    for (cl_uint i = 0; i <= j->nwaits && !j->err; i++) {
        cl_event e = i < j->nwaits ? j->waits[i] : j->m1;
        if (!e)
            continue;
        clRetainEvent(e);
        j->err = wait_ok(&e);
    }
}

/* Returns -1 when the lane broke; job errors go into j->err. */
static int run_write(mgrm_session_t *s, mgrm_job_t *j, void *scratch)
{
    mgrm_staging_t *st = j->err ? NULL : mgrm_staging_get(s, j->ctx, j->dev, 1);
    cl_event ev[MGRM_STAGING_SLOTS] = {0};
    size_t off = 0;
    if (!st && !j->err)
        j->err = CL_OUT_OF_RESOURCES;
    wait_m1(j);
    for (int i = 0;; i++) {
        size_t n = min_sz(MGRM_CHUNK, j->size - off);
        int slot = i % MGRM_STAGING_SLOTS;
        cl_int e = wait_ok(&ev[slot]);
        if (e && !j->err)
            j->err = e;
        void *dst = j->err ? scratch : st->ptr[slot];
        if (chunk_recv(s, j->xfer, off, n, dst)) {
            j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
            for (int k = 0; k < MGRM_STAGING_SLOTS; k++)
                wait_ok(&ev[k]);
            return -1;
        }
        if (!j->err && n) {
            e = clEnqueueWriteBuffer(j->tq, j->mem, CL_FALSE, j->off + off, n, dst, 0, NULL,
                                     &ev[slot]);
            if (e)
                j->err = e;
            else
                clFlush(j->tq);
        }
        off += n;
        if (off >= j->size)
            break;
    }
    for (int k = 0; k < MGRM_STAGING_SLOTS; k++) {
        cl_int e = wait_ok(&ev[k]);
        if (e && !j->err)
            j->err = e;
    }
    return 0;
}

static int run_read(mgrm_session_t *s, mgrm_job_t *j)
{
    mgrm_staging_t *st = j->err ? NULL : mgrm_staging_get(s, j->ctx, j->dev, 1);
    cl_event ev[MGRM_STAGING_SLOTS] = {0};
    size_t nchunks = j->size ? (j->size + MGRM_CHUNK - 1) / MGRM_CHUNK : 0, issued = 0;
    if (!st && !j->err)
        j->err = CL_OUT_OF_RESOURCES;
    wait_m1(j);
    for (size_t i = 0; i < nchunks && !j->err; i++) {
        for (; issued < nchunks && issued < i + MGRM_STAGING_SLOTS && !j->err; issued++) {
            size_t o = issued * MGRM_CHUNK;
            cl_int e = clEnqueueReadBuffer(
                j->tq, j->mem, CL_FALSE, j->off + o, min_sz(MGRM_CHUNK, j->size - o),
                st->ptr[issued % MGRM_STAGING_SLOTS], 0, NULL, &ev[issued % MGRM_STAGING_SLOTS]);
            if (e)
                j->err = e;
            clFlush(j->tq);
        }
        cl_int e = wait_ok(&ev[i % MGRM_STAGING_SLOTS]);
        if (e && !j->err)
            j->err = e;
        if (j->err)
            break;
        size_t o = i * MGRM_CHUNK;
        if (chunk_send(s, j->xfer, o, st->ptr[i % MGRM_STAGING_SLOTS],
                       min_sz(MGRM_CHUNK, j->size - o), CL_SUCCESS, i + 1 == nchunks)) {
            j->err = CL_DEVICE_NOT_AVAILABLE;
            for (int k = 0; k < MGRM_STAGING_SLOTS; k++)
                wait_ok(&ev[k]);
            return -1;
        }
    }
    for (int k = 0; k < MGRM_STAGING_SLOTS; k++)
        wait_ok(&ev[k]);
    if (j->err || nchunks == 0) {
        return chunk_send(s, j->xfer, 0, NULL, 0, j->err, 1);
    }
    return 0;
}

/* Rectangles move as one packed host buffer (region[0] x region[1] x
 * region[2] bytes). */
static int run_rect(mgrm_session_t *s, mgrm_job_t *j, void *scratch)
{
    unsigned char *p = j->err ? NULL : malloc(j->size);
    size_t ho[3] = {0, 0, 0};
    if (!p && !j->err)
        j->err = CL_OUT_OF_HOST_MEMORY;
    wait_m1(j);
    if (j->type == JOB_WRITE_RECT) {
        for (size_t off = 0; off < j->size || off == 0; off += MGRM_CHUNK) {
            size_t n = min_sz(MGRM_CHUNK, j->size - off);
            if (chunk_recv(s, j->xfer, off, n, p ? p + off : scratch)) {
                free(p);
                j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
                return -1;
            }
            if (j->size == 0)
                break;
        }
        if (!j->err)
            j->err =
                clEnqueueWriteBufferRect(j->tq, j->mem, CL_TRUE, j->bo, ho, j->reg, j->brp, j->bsp,
                                         j->reg[0], j->reg[0] * j->reg[1], p, 0, NULL, NULL);
        free(p);
        return 0;
    }
    if (!j->err)
        j->err = clEnqueueReadBufferRect(j->tq, j->mem, CL_TRUE, j->bo, ho, j->reg, j->brp, j->bsp,
                                         j->reg[0], j->reg[0] * j->reg[1], p, 0, NULL, NULL);
    int rc = 0;
    for (size_t off = 0; !j->err && off < j->size && !rc; off += MGRM_CHUNK) {
        size_t n = min_sz(MGRM_CHUNK, j->size - off);
        rc = chunk_send(s, j->xfer, off, p + off, n, CL_SUCCESS, off + n >= j->size);
    }
    if (j->err)
        rc = chunk_send(s, j->xfer, 0, NULL, 0, j->err, 1);
    free(p);
    return rc;
}

static void job_free(mgrm_job_t *j)
{
    if (j->gate) {
        cl_int st = CL_COMPLETE;
        if (j->m2)
            clGetEventInfo(j->m2, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
        if (st >= 0) /* m2 not already failed by OpenCL (see wait_m1) */
            clSetUserEventStatus(j->gate, j->err < 0 ? j->err : CL_COMPLETE);
        clReleaseEvent(j->gate);
    }
    for (cl_uint i = 0; i < j->nwaits; i++)
        clReleaseEvent(j->waits[i]);
    free(j->waits);
    if (j->m2)
        clReleaseEvent(j->m2);
    if (j->m1)
        clReleaseEvent(j->m1);
    if (j->mem)
        clReleaseMemObject(j->mem);
    if (j->tq)
        clReleaseCommandQueue(j->tq);
    free(j);
}

static void *bulk_main(void *arg)
{
    mgrm_session_t *s = arg;
    void *scratch = malloc(MGRM_CHUNK);
    int broken = scratch == NULL;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        while (!s->jobs && !s->bulk_quit)
            pthread_cond_wait(&s->cond, &s->lock);
        mgrm_job_t *j = s->jobs;
        if (j && !(s->jobs = j->next))
            s->jobs_tail = &s->jobs;
        pthread_mutex_unlock(&s->lock);
        if (!j)
            break;
        int rc = 0;
        if (broken)
            j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
        else if (j->type == JOB_WRITE)
            rc = run_write(s, j, scratch);
        else if (j->type == JOB_READ)
            rc = run_read(s, j);
        else
            rc = run_rect(s, j, scratch);
        if (rc && !broken) {
            broken = 1;
            mgrm_log("session %u (%s): bulk lane broken or out of step; closing session", s->num,
                     s->peer);
            s->t->shutdown(s->cmd); /* ends the session thread too */
        }
        job_free(j);
    }
    free(scratch);
    return NULL;
}

int mgrm_bulk_start(mgrm_session_t *s)
{
    if (pthread_create(&s->bulk_thread, NULL, bulk_main, s))
        return -1;
    s->bulk_started = 1;
    return 0;
}

void mgrm_bulk_stop(mgrm_session_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->bulk_quit = 1;
    pthread_cond_broadcast(&s->cond);
    int started = s->bulk_started;
    pthread_mutex_unlock(&s->lock);
    if (started)
        pthread_join(s->bulk_thread, NULL);
    while (s->jobs) {
        mgrm_job_t *j = s->jobs;
        s->jobs = j->next;
        j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
        job_free(j);
    }
    s->jobs_tail = &s->jobs;
}
