/* libmpigpu-vcl.so: events.  Every enqueued command gets an event with a
 * client-allocated wire ID (so no enqueue waits for a round trip); it sits
 * in its connection's table until the proxy reports its completion (a read:
 * until its last data chunk arrives), or the connection dies. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vcl.h"

int mgvcl_is(const void *obj)
{
    return obj && *(struct _cl_icd_dispatch *const *)obj == &mgvcl_dispatch;
}

cl_event mgvcl_event_find(mgvcl_conn_t *c, uint64_t id)
{
    cl_event e = c->ev[id % MGVCL_HASH];
    while (e && e->id != id)
        e = e->hnext;
    return e;
}

cl_event mgvcl_event_new(cl_context ctx, cl_command_queue q, cl_command_type type)
{
    cl_event e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->dispatch = &mgvcl_dispatch;
    atomic_init(&e->refs, 2); /* the caller's and the table's */
    e->conn = q ? q->conn : ctx->conn;
    e->id = mgvcl_id(e->conn);
    e->ctx = ctx;
    e->q = q;
    e->type = type;
    e->status = q ? CL_QUEUED : CL_SUBMITTED;
    pthread_mutex_lock(&mgvcl_lock);
    e->in_table = 1;
    e->hnext = e->conn->ev[e->id % MGVCL_HASH];
    e->conn->ev[e->id % MGVCL_HASH] = e;
    e->conn->nev++;
    if (q)
        q->pending++;
    pthread_mutex_unlock(&mgvcl_lock);
    return e;
}

void mgvcl_event_unref(cl_event e)
{
    if (atomic_fetch_sub(&e->refs, 1) != 1)
        return;
    if (!atomic_load_explicit(&e->conn->dead, memory_order_relaxed))
        mgvcl_release_remote(e->conn, MGW_K_EVENT, e->id);
    mgvcl_standins_free(e);
    mgvcl_deps_free(e);
    while (e->cbs) {
        ev_cb_t *cb = e->cbs;
        e->cbs = cb->next;
        free(cb);
    }
    free(e->free_after);
    free(e);
}

void mgvcl_event_complete(cl_event e, cl_int status)
{
    ev_cb_t *cbs;
    /* a command of another proxy that this one waited for is complete when
       this one is, though its own proxy's notice may come later (the two
       proxies told each other directly) */
    if (status >= 0 && e->ndeps)
        mgvcl_deps_complete(e);
    pthread_mutex_lock(&mgvcl_lock);
    if (!e->in_table) {
        pthread_mutex_unlock(&mgvcl_lock);
        return;
    }
    e->status = status > 0 ? CL_COMPLETE : status;
    e->in_table = 0;
    for (cl_event *pp = &e->conn->ev[e->id % MGVCL_HASH]; *pp; pp = &(*pp)->hnext)
        if (*pp == e) {
            *pp = e->hnext;
            break;
        }
    e->conn->nev--;
    if (e->q) {
        e->q->pending--;
        if (e->status < 0)
            e->q->failed = 1;
    }
    cbs = e->cbs;
    e->cbs = NULL;
    pthread_cond_broadcast(&mgvcl_cond);
    pthread_mutex_unlock(&mgvcl_lock);
    free(e->free_after);
    e->free_after = NULL;
    mgvcl_standins_set(e, e->status); /* its stand-ins on other proxies */
    if (status >= 0 && e->ndeps)      /* (a failure may come while the command is made: unref) */
        mgvcl_deps_free(e);
    while (cbs) {
        ev_cb_t *cb = cbs;
        cbs = cb->next;
        cb->fn(e, e->status, cb->data);
        free(cb);
    }
    mgvcl_event_unref(e); /* the table's */
}

void mgvcl_conn_fail(mgvcl_conn_t *c)
{
    pthread_mutex_lock(&mgvcl_lock);
    /* Said before dead is set: a thread that sees dead may fail its call and
       end the program at once. */
    if (!atomic_load_explicit(&c->dead, memory_order_relaxed)) {
        int forged = mgtr_tampered(c->t, c->cmd);
        for (unsigned i = 0; i < c->nstripes; i++)
            forged = forged || mgtr_tampered(c->t, c->stripe[i].ep);
        MGLOG_ERROR(MGLOG_VCL,
                    "%s: connection to the proxy lost%s; its devices are no longer available",
                    c->addr,
                    forged ? " (a frame from the proxy failed its integrity check: altered, "
                             "replayed or out of order on the way)"
                           : "");
    }
    atomic_store_explicit(&c->dead, 1, memory_order_release);
    pthread_cond_broadcast(&mgvcl_cond);
    pthread_mutex_unlock(&mgvcl_lock);
    c->t->shutdown(c->cmd);
    for (unsigned i = 0; i < c->nstripes; i++)
        c->t->shutdown(c->stripe[i].ep);
    for (;;) {
        cl_event e = NULL;
        pthread_mutex_lock(&mgvcl_lock);
        /* a read that a stripe is copying into is failed by that stripe's
         * thread when its copy is done (the shutdown ends it soon) */
        for (int i = 0; i < MGVCL_HASH && !e; i++)
            for (cl_event x = c->ev[i]; x && !e; x = x->hnext)
                if (x->busy)
                    x->failst = CL_DEVICE_NOT_AVAILABLE;
                else if (!x->rdone) /* else its completion is under way */
                    e = x;
        if (e)
            atomic_fetch_add(&e->refs, 1);
        pthread_mutex_unlock(&mgvcl_lock);
        if (!e)
            break;
        mgvcl_event_complete(e, CL_DEVICE_NOT_AVAILABLE);
        mgvcl_event_unref(e);
    }
}

/* The command is made: what it holds goes, the context's lock too. */
static void enq_release(mgvcl_enq_t *e, cl_command_queue q)
{
    if (e->wids != e->wbuf)
        free(e->wids);
    e->wids = e->wbuf;
    for (cl_uint i = 0; i < e->nhold; i++)
        mgvcl_event_unref(e->hold[i]);
    free(e->hold);
    e->hold = NULL;
    e->nhold = 0;
    if (e->locked)
        pthread_mutex_unlock(&q->ctx->mig_lock);
    e->locked = 0;
}

cl_int mgvcl_enq_begin(cl_command_queue q, cl_uint nw, const cl_event *w, cl_command_type t,
                       mgvcl_enq_t *e)
{
    e->ev = NULL;
    e->wids = e->wbuf;
    e->wcap = 0;
    e->hold = NULL;
    e->nhold = 0;
    e->locked = 0;
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    if (atomic_load_explicit(&q->conn->dead, memory_order_relaxed))
        return CL_DEVICE_NOT_AVAILABLE;
    if ((nw && !w) || (!nw && w) || nw > MGW_MAX_WAIT)
        return CL_INVALID_EVENT_WAIT_LIST;
    for (cl_uint i = 0; i < nw; i++) {
        if (!mgvcl_is(w[i]))
            return CL_INVALID_EVENT_WAIT_LIST;
        if (w[i]->ctx != q->ctx)
            return CL_INVALID_CONTEXT;
    }
    if (nw > sizeof e->wbuf / sizeof e->wbuf[0]) {
        if (!(e->wids = malloc(nw * sizeof *e->wids)))
            return CL_OUT_OF_HOST_MEMORY;
        e->wcap = nw;
    }
    if (q->ctx->nconn > 1) { /* one step for the buffers' homes (vcl_multi.c) */
        pthread_mutex_lock(&q->ctx->mig_lock);
        e->locked = 1;
    }
    if (!(e->ev = mgvcl_event_new(q->ctx, q, t))) {
        enq_release(e, q);
        return CL_OUT_OF_HOST_MEMORY;
    }
    e->head = (mgw_enq_head_t){.queue = q->id, .event = e->ev->id, .waits = {.n = 0, .v = e->wids}};
    cl_int rc = CL_SUCCESS;
    for (cl_uint i = 0; i < nw && rc == CL_SUCCESS; i++) {
        if (w[i]->conn == q->conn)
            e->wids[e->head.waits.n++] = w[i]->id;
        else /* an event of another proxy: its stand-in on this one */
            rc = mgvcl_wait_add(e, q, w[i]);
    }
    if (rc != CL_SUCCESS) {
        mgvcl_enq_abort(e, rc);
        return rc;
    }
    return CL_SUCCESS;
}

void mgvcl_enq_abort(mgvcl_enq_t *e, cl_int rc)
{
    cl_event ev = e->ev;
    cl_command_queue q = ev ? ev->q : NULL;
    if (ev) {
        mgvcl_event_complete(ev, rc < 0 ? rc : CL_OUT_OF_RESOURCES);
        mgvcl_event_unref(ev);
    }
    e->ev = NULL;
    if (q)
        enq_release(e, q);
}

/* FINISH: the proxy reports the queue's completed commands after its own
 * clFinish (n == 0) or clWaitForEvents of w, sooner than its runtime's
 * callbacks may (design.md, "Finish"); the caller then waits as before. */
static void finish_send(cl_command_queue q, cl_uint n, const cl_event *w)
{
    mgw_buf_t b;
    uint64_t *ids = n ? malloc(n * sizeof *ids) : NULL;
    if (n && !ids)
        return; /* the caller's wait goes on as before; a later FINISH retries */
    for (cl_uint i = 0; i < n; i++)
        ids[i] = w[i]->id;
    mgw_finish_encode(&b, 0, &(mgw_finish_t){.queue = q->id, .events = {.n = n, .v = ids}});
    free(ids);
    mgvcl_send(q->conn, &b);
    mgw_buf_free(&b);
}

/* A FINISH is asked again while the wait goes on: first after
 * FINISH_RETRY_MS, then at twice the interval each time, up to
 * FINISH_RETRY_MAX_MS.  The proxy reports a command complete once, by its
 * FINISH or by its runtime's callback; a FINISH that may not wait there
 * (design.md, "Finish") reports only what is complete then, and PoCL 3.1
 * never runs the callback of a command that fails through what it depends
 * on.  The next FINISH finds that command failed and reports it. */
#define FINISH_RETRY_MS 20
#define FINISH_RETRY_MAX_MS 1000

/* Sleeps on the connection condition for up to ms milliseconds
 * (mgvcl_lock held); 1 when the time ran out. */
static int timed_sleep(long ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return pthread_cond_timedwait(&mgvcl_cond, &mgvcl_lock, &t) == ETIMEDOUT;
}

/* Sends FINISH again (mgvcl_lock held, let go meanwhile) and doubles
 * the interval to the next one, up to FINISH_RETRY_MAX_MS. */
static void finish_again(cl_command_queue q, cl_uint n, const cl_event *w, long *ms)
{
    pthread_mutex_unlock(&mgvcl_lock);
    finish_send(q, n, w);
    pthread_mutex_lock(&mgvcl_lock);
    *ms = *ms * 2 < FINISH_RETRY_MAX_MS ? *ms * 2 : FINISH_RETRY_MAX_MS;
}

/* Waits for the events; CL_SUCCESS, or the wait-list error if one failed.
 * While one is not complete, FINISH is asked again for its queue, naming
 * the open events of that queue (a user event is set by this client). */
static cl_int wait_events(cl_uint n, const cl_event *list)
{
    cl_int rc = CL_SUCCESS;
    long ms = FINISH_RETRY_MS;
    pthread_mutex_lock(&mgvcl_lock);
    for (cl_uint i = 0; i < n; i++) {
        cl_command_queue q = list[i]->q;
        MGTR_SPIN_WHILE(list[i]->status > 0, &mgvcl_lock);
        while (list[i]->status > 0) {
            if (!timed_sleep(ms) || list[i]->status <= 0 || !q ||
                atomic_load_explicit(&q->conn->dead, memory_order_relaxed))
                continue;
            cl_event open[MGW_MAX_WAIT];
            cl_uint k = 0; /* list[i] is one: open while its status is */
            for (cl_uint j = i; j < n && k < MGW_MAX_WAIT; j++)
                if (list[j]->q == q && list[j]->in_table)
                    open[k++] = list[j];
            finish_again(q, k, open, &ms);
        }
        if (list[i]->status < 0)
            rc = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    }
    pthread_mutex_unlock(&mgvcl_lock);
    return rc;
}

cl_int mgvcl_enq_end(cl_command_queue q, mgvcl_enq_t *e, mgw_buf_t *b, cl_event *out,
                     cl_bool blocking, uint64_t xfer, const void *p, size_t n)
{
    cl_event ev = e->ev;
    cl_int rc = !b     ? CL_SUCCESS /* sent already (proxy to proxy: vcl_multi.c) */
                : xfer ? mgvcl_send_bulk(q->conn, b, xfer, p, n)
                       : mgvcl_send(q->conn, b);
    enq_release(e, q);
    if (rc != CL_SUCCESS) {
        mgvcl_conn_fail(q->conn); /* a failed send: the proxy is gone */
        mgvcl_event_complete(ev, CL_DEVICE_NOT_AVAILABLE);
    } else if (blocking && (rc = wait_events(1, &ev)) &&
               atomic_load_explicit(&q->conn->dead, memory_order_relaxed))
        rc = CL_DEVICE_NOT_AVAILABLE; /* the proxy is gone */
    if (out && rc != CL_DEVICE_NOT_AVAILABLE)
        *out = ev;
    else
        mgvcl_event_unref(ev);
    return rc;
}

cl_int CL_API_CALL mgvcl_clWaitForEvents(cl_uint n, const cl_event *list)
{
    if (!n || !list)
        return CL_INVALID_VALUE;
    int one_q = 1, pending = 0;
    for (cl_uint i = 0; i < n; i++) {
        if (!mgvcl_is(list[i]))
            return CL_INVALID_EVENT;
        if (list[i]->ctx != list[0]->ctx)
            return CL_INVALID_CONTEXT;
        one_q &= list[i]->q != NULL && list[i]->q == list[0]->q;
    }
    if (one_q && n <= MGW_MAX_WAIT) {
        pthread_mutex_lock(&mgvcl_lock);
        for (cl_uint i = 0; i < n; i++)
            pending |= list[i]->in_table;
        pending &= !atomic_load_explicit(&list[0]->conn->dead, memory_order_relaxed);
        pthread_mutex_unlock(&mgvcl_lock);
    }
    if (pending) /* events of one queue: FINISH for them */
        finish_send(list[0]->q, n, list);
    return wait_events(n, list);
}

cl_int CL_API_CALL mgvcl_clGetEventInfo(cl_event e, cl_event_info p, size_t size, void *value,
                                        size_t *size_ret)
{
    cl_int st;
    cl_uint refs;
    if (!mgvcl_is(e))
        return CL_INVALID_EVENT;
    switch (p) {
    case CL_EVENT_COMMAND_QUEUE:
        return mgvcl_ret(&e->q, sizeof e->q, size, value, size_ret);
    case CL_EVENT_CONTEXT:
        return mgvcl_ret(&e->ctx, sizeof e->ctx, size, value, size_ret);
    case CL_EVENT_COMMAND_TYPE:
        return mgvcl_ret(&e->type, sizeof e->type, size, value, size_ret);
    case CL_EVENT_COMMAND_EXECUTION_STATUS:
        pthread_mutex_lock(&mgvcl_lock);
        st = e->status;
        pthread_mutex_unlock(&mgvcl_lock);
        return mgvcl_ret(&st, sizeof st, size, value, size_ret);
    case CL_EVENT_REFERENCE_COUNT:
        refs = (cl_uint)atomic_load(&e->refs) - (e->in_table ? 1 : 0);
        return mgvcl_ret(&refs, sizeof refs, size, value, size_ret);
    }
    return CL_INVALID_VALUE;
}

cl_int CL_API_CALL mgvcl_clGetEventProfilingInfo(cl_event e, cl_profiling_info p, size_t size,
                                                 void *value, size_t *size_ret)
{
    if (!mgvcl_is(e))
        return CL_INVALID_EVENT;
    if (!e->q || !(e->q->props & CL_QUEUE_PROFILING_ENABLE) || e->status != CL_COMPLETE)
        return CL_PROFILING_INFO_NOT_AVAILABLE;
    return mgvcl_info(e->conn, MGW_K_PROFILING, e->id, 0, p, size, value, size_ret);
}

cl_int CL_API_CALL mgvcl_clRetainEvent(cl_event e)
{
    if (!mgvcl_is(e))
        return CL_INVALID_EVENT;
    atomic_fetch_add(&e->refs, 1);
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clReleaseEvent(cl_event e)
{
    if (!mgvcl_is(e))
        return CL_INVALID_EVENT;
    mgvcl_event_unref(e);
    return CL_SUCCESS;
}

cl_event CL_API_CALL mgvcl_clCreateUserEvent(cl_context ctx, cl_int *err)
{
    cl_event e;
    mgw_buf_t b;
    cl_int rc = CL_SUCCESS;
    if (!mgvcl_is(ctx)) {
        rc = CL_INVALID_CONTEXT;
        e = NULL;
    } else if (!(e = mgvcl_event_new(ctx, NULL, CL_COMMAND_USER))) {
        rc = CL_OUT_OF_HOST_MEMORY;
    } else {
        mgw_user_event_create_encode(&b, 0,
                                     &(mgw_user_event_create_t){.id = e->id, .ctx = ctx->id});
        rc = mgvcl_send(ctx->conn, &b);
        mgw_buf_free(&b);
        if (rc) {
            mgvcl_event_complete(e, CL_DEVICE_NOT_AVAILABLE);
            mgvcl_event_unref(e);
            e = NULL;
        }
    }
    if (err)
        *err = rc;
    return e;
}

cl_int CL_API_CALL mgvcl_clSetUserEventStatus(cl_event e, cl_int status)
{
    mgw_buf_t b;
    if (!mgvcl_is(e) || e->type != CL_COMMAND_USER)
        return CL_INVALID_EVENT;
    if (status > 0)
        return CL_INVALID_VALUE;
    pthread_mutex_lock(&mgvcl_lock);
    int done = !e->in_table;
    pthread_mutex_unlock(&mgvcl_lock);
    if (done)
        return CL_INVALID_OPERATION;
    mgw_user_event_set_encode(&b, 0, &(mgw_user_event_set_t){.id = e->id, .status = status});
    cl_int rc = mgvcl_send(e->conn, &b);
    mgw_buf_free(&b);
    mgvcl_event_complete(e, status);
    return rc;
}

cl_int CL_API_CALL mgvcl_clSetEventCallback(cl_event e, cl_int when,
                                            void(CL_CALLBACK *fn)(cl_event, cl_int, void *),
                                            void *data)
{
    if (!mgvcl_is(e))
        return CL_INVALID_EVENT;
    if (!fn || (when != CL_COMPLETE && when != CL_SUBMITTED && when != CL_RUNNING))
        return CL_INVALID_VALUE;
    ev_cb_t *cb = malloc(sizeof *cb);
    if (!cb)
        return CL_OUT_OF_HOST_MEMORY;
    cb->fn = fn;
    cb->data = data;
    cb->when = when;
    pthread_mutex_lock(&mgvcl_lock);
    int done = !e->in_table;
    if (!done) {
        cb->next = e->cbs;
        e->cbs = cb;
    }
    cl_int st = e->status;
    pthread_mutex_unlock(&mgvcl_lock);
    if (done) {
        fn(e, st, data);
        free(cb);
    }
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clFinish(cl_command_queue q)
{
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    pthread_mutex_lock(&mgvcl_lock);
    int pending = q->pending > 0 && !atomic_load_explicit(&q->conn->dead, memory_order_relaxed);
    pthread_mutex_unlock(&mgvcl_lock);
    if (pending)
        finish_send(q, 0, NULL);
    pthread_mutex_lock(&mgvcl_lock);
    /* A short command's completion comes within the spin: no wake-up. */
    MGTR_SPIN_WHILE(q->pending > 0, &mgvcl_lock);
    for (long ms = FINISH_RETRY_MS; q->pending > 0;) {
        if (!timed_sleep(ms) || q->pending <= 0 ||
            atomic_load_explicit(&q->conn->dead, memory_order_relaxed))
            continue;
        finish_again(q, 0, NULL, &ms);
    }
    int failed = q->failed;
    q->failed = 0;
    pthread_mutex_unlock(&mgvcl_lock);
    if (atomic_load_explicit(&q->conn->dead, memory_order_relaxed))
        return CL_DEVICE_NOT_AVAILABLE;
    return failed ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : CL_SUCCESS;
}

/* The proxy flushes every command as it enqueues it. */
cl_int CL_API_CALL mgvcl_clFlush(cl_command_queue q)
{
    return mgvcl_is(q) ? CL_SUCCESS : CL_INVALID_COMMAND_QUEUE;
}

static cl_int marker(cl_command_queue q, cl_uint nw, const cl_event *w, cl_event *out, int barrier)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    cl_int rc = mgvcl_enq_begin(q, nw, w, barrier ? CL_COMMAND_BARRIER : CL_COMMAND_MARKER, &e);
    if (rc != CL_SUCCESS)
        return rc;
    if (barrier)
        mgw_enq_barrier_encode(&b, 0, &(mgw_enq_barrier_t){.head = e.head});
    else
        mgw_enq_marker_encode(&b, 0, &(mgw_enq_marker_t){.head = e.head});
    rc = mgvcl_enq_end(q, &e, &b, out, CL_FALSE, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

cl_int CL_API_CALL mgvcl_clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint nw,
                                                     const cl_event *w, cl_event *out)
{
    return marker(q, nw, w, out, 0);
}

cl_int CL_API_CALL mgvcl_clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint nw,
                                                      const cl_event *w, cl_event *out)
{
    return marker(q, nw, w, out, 1);
}

cl_int CL_API_CALL mgvcl_clEnqueueMarker(cl_command_queue q, cl_event *out)
{
    if (!out)
        return CL_INVALID_VALUE;
    return marker(q, 0, NULL, out, 0);
}

cl_int CL_API_CALL mgvcl_clEnqueueBarrier(cl_command_queue q)
{
    return marker(q, 0, NULL, NULL, 1);
}

cl_int CL_API_CALL mgvcl_clEnqueueWaitForEvents(cl_command_queue q, cl_uint n, const cl_event *w)
{
    if (!n || !w)
        return CL_INVALID_VALUE;
    return marker(q, n, w, NULL, 1);
}
