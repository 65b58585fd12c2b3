/* One client session of mpigpu-proxy: the command loop, replies, event
 * completion reports, and the teardown that frees everything of the client. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

void mgpx_session_init(mgpx_session_t *s, mgpx_proxy_t *px)
{
    memset(s, 0, sizeof *s);
    s->px = px;
    s->t = px ? px->t : NULL;
    pthread_mutex_init(&s->send_lock, NULL);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    atomic_init(&s->refs, 1);
    s->jobs_tail = &s->jobs;
    s->nstripes = 1;
    s->depth = MGPX_STAGING_SLOTS;
    pthread_mutex_init(&s->io_lock, NULL);
    pthread_cond_init(&s->io_cond, NULL);
    mgpx_ratelog_init(&s->log);
    for (int i = 0; i < MGW_STREAMS_MAX; i++) {
        mgtr_bulk_init(&s->stripe[i].bk, s->t, NULL);
        s->stripe[i].tail = &s->stripe[i].head;
    }
}

static void session_free(mgpx_session_t *s)
{
    if (s->cmd)
        s->t->close(s->cmd);
    for (int i = 0; i < MGW_STREAMS_MAX; i++)
        if (s->stripe[i].ep)
            s->t->close(s->stripe[i].ep);
    pthread_mutex_destroy(&s->send_lock);
    pthread_mutex_destroy(&s->io_lock);
    pthread_cond_destroy(&s->io_cond);
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->log.lock);
    free(s);
}

void mgpx_session_unref(mgpx_session_t *s)
{
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
        session_free(s);
}

static int send_locked(mgpx_session_t *s, mgw_buf_t *b)
{
    int rc = 0;
    if (s->dry)
        return 0;
    pthread_mutex_lock(&s->send_lock);
    if (!s->dead)
        rc = mgtr_msg_send(s->t, s->cmd, b);
    pthread_mutex_unlock(&s->send_lock);
    return rc;
}

int mgpx_reply(mgpx_session_t *s, uint32_t seq, cl_int rc, const mgw_buf_t *extra)
{
    mgw_buf_t b;
    int r;
    mgw_reply_init(&b, seq, rc);
    if (extra) /* the op's reply fields, put by its handler */
        mgw_buf_raw(&b, extra->p + MGW_HDR_SIZE, extra->len - MGW_HDR_SIZE);
    r = send_locked(s, &b);
    mgw_buf_free(&b);
    return r;
}

int mgpx_send_error(mgpx_session_t *s, uint32_t seq, cl_int rc, const char *why)
{
    mgw_buf_t b;
    int r;
    mgpx_slog(s, "session %u (%s): error: %s (seq %u)", s->num, s->peer, why, seq);
    mgw_error_encode(&b, seq, &(mgw_error_t){.rc = rc, .why = why});
    r = send_locked(s, &b);
    mgw_buf_free(&b);
    return r;
}

/* Completion callbacks of tracked events.  PoCL 3.1 never runs the
 * CL_COMPLETE callback of an event that fails through what it depends on (an
 * earlier command of its in-order queue, or its wait list), so a callback may
 * never come.  Its state therefore lives in this table, not in memory only the
 * callback would free, and it holds no reference on the session: user_data is
 * the slot index and a generation, a session's slots are dropped when it is
 * torn down, and a callback that finds its slot dropped or reused does
 * nothing.  A FINISH may report the event first (events_report): whoever
 * empties the slot under ev_lock sends the completion, so it goes exactly
 * once. */
typedef struct ev_slot {
    mgpx_session_t *s; /* NULL: free */
    uint64_t id;
    uint64_t qid; /* the command's queue */
    uint32_t gen;
} ev_slot_t;

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static ev_slot_t *ev_tab;
static size_t ev_cap, ev_next;

static void CL_CALLBACK event_done(cl_event e, cl_int status, void *arg)
{
    uintptr_t key = (uintptr_t)arg;
    size_t i = (size_t)(key >> 32);
    uint32_t gen = (uint32_t)key;
    mgpx_session_t *s = NULL;
    uint64_t id = 0;
    (void)e;
    pthread_mutex_lock(&ev_lock);
    if (i < ev_cap && ev_tab[i].s && ev_tab[i].gen == gen &&
        !(ev_tab[i].s->px && ev_tab[i].s->px->drop_cb)) {
        s = ev_tab[i].s;
        id = ev_tab[i].id;
        ev_tab[i].s = NULL;
        /* Alive until the message is sent, teardown or not.  Never s->lock
           here: this runs on the OpenCL runtime's thread (PoCL's device
           worker), and a session thread may hold s->lock across a blocking
           OpenCL call that needs that worker. */
        atomic_fetch_add_explicit(&s->refs, 1, memory_order_acq_rel);
    }
    pthread_mutex_unlock(&ev_lock);
    if (!s)
        return;
    mgw_buf_t b;
    mgw_event_done_encode(&b, 0, &(mgw_event_done_t){.event = id, .status = status});
    send_locked(s, &b);
    mgw_buf_free(&b);
    s->done_by_cb++;
    mgpx_session_unref(s);
}

/* A free slot for (s, id, qid), or SIZE_MAX; ev_lock held. */
static size_t ev_slot_take(mgpx_session_t *s, uint64_t id, uint64_t qid)
{
    for (size_t n = 0; n < ev_cap; n++, ev_next = (ev_next + 1) % ev_cap)
        if (!ev_tab[ev_next].s)
            goto found;
    size_t cap = ev_cap ? 2 * ev_cap : 256;
    ev_slot_t *t = realloc(ev_tab, cap * sizeof *t);
    if (!t)
        return SIZE_MAX;
    memset(t + ev_cap, 0, (cap - ev_cap) * sizeof *t);
    ev_next = ev_cap;
    ev_tab = t;
    ev_cap = cap;
found:
    ev_tab[ev_next].s = s;
    ev_tab[ev_next].id = id;
    ev_tab[ev_next].qid = qid;
    ev_tab[ev_next].gen++;
    return ev_next;
}

/* Drop the callbacks of s that have not come (its teardown). */
static void ev_slots_drop(mgpx_session_t *s)
{
    pthread_mutex_lock(&ev_lock);
    for (size_t i = 0; i < ev_cap; i++)
        if (ev_tab[i].s == s)
            ev_tab[i].s = NULL;
    pthread_mutex_unlock(&ev_lock);
}

int mgpx_event_track(mgpx_session_t *s, uint64_t id, uint64_t qid, cl_event e)
{
    if (mgpx_map_put(&s->map, id, MGW_K_EVENT, e, NULL)) {
        clReleaseEvent(e);
        return CL_INVALID_EVENT;
    }
    pthread_mutex_lock(&ev_lock);
    size_t i = ev_slot_take(s, id, qid);
    uintptr_t key = i == SIZE_MAX ? 0 : ((uintptr_t)i << 32) | ev_tab[i].gen;
    pthread_mutex_unlock(&ev_lock);
    if (i == SIZE_MAX)
        return CL_OUT_OF_HOST_MEMORY;
    if (clSetEventCallback(e, CL_COMPLETE, event_done, (void *)key) != CL_SUCCESS) {
        pthread_mutex_lock(&ev_lock);
        ev_tab[i].s = NULL;
        pthread_mutex_unlock(&ev_lock);
        return CL_OUT_OF_RESOURCES;
    }
    return CL_SUCCESS;
}

/* A tracked event of a FINISH's queue: its slot, and its status once read. */
typedef struct done_ev {
    size_t slot;
    uint32_t gen;
    uint64_t id;
    cl_int st;
} done_ev_t;

/* Sends the completions of the tracked events of queue qid that are
 * complete now, and empties their slots.  The statuses are read without
 * ev_lock held, as a callback may take it while the runtime holds the
 * event's own lock. */
static int events_report(mgpx_session_t *s, uint64_t qid)
{
    done_ev_t *d = NULL;
    size_t n = 0, cap = 0, m = 0;
    int rc = 0;
    pthread_mutex_lock(&ev_lock);
    for (size_t i = 0; i < ev_cap; i++) {
        if (ev_tab[i].s != s || ev_tab[i].qid != qid)
            continue;
        if (n == cap) {
            size_t nc = cap ? 2 * cap : 64;
            done_ev_t *t = realloc(d, nc * sizeof *t);
            if (!t)
                break; /* the rest come by their callbacks */
            d = t;
            cap = nc;
        }
        d[n++] = (done_ev_t){i, ev_tab[i].gen, ev_tab[i].id, CL_QUEUED};
    }
    pthread_mutex_unlock(&ev_lock);
    for (size_t k = 0; k < n; k++) {
        mgpx_obj_t *o = mgpx_map_get(&s->map, d[k].id, MGW_K_EVENT);
        if (!o || clGetEventInfo(o->h, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof d[k].st, &d[k].st,
                                 NULL) != CL_SUCCESS)
            d[k].st = CL_QUEUED;
    }
    pthread_mutex_lock(&ev_lock);
    for (size_t k = 0; k < n; k++) {
        ev_slot_t *t = &ev_tab[d[k].slot];
        if (d[k].st <= CL_COMPLETE && t->s == s && t->gen == d[k].gen) {
            t->s = NULL;
            d[m++] = d[k];
        }
    }
    pthread_mutex_unlock(&ev_lock);
    s->done_by_fin += m;
    mgw_event_status_t *es = m ? malloc(m * sizeof *es) : NULL;
    for (size_t k = 0; k < m && es; k++)
        es[k] = (mgw_event_status_t){.event = d[k].id, .status = d[k].st};
    for (size_t k = 0; k < m && es && rc == 0; k += MGW_MAX_DONE) {
        size_t cnt = m - k < MGW_MAX_DONE ? m - k : MGW_MAX_DONE;
        mgw_buf_t b;
        mgw_events_done_encode(&b, 0,
                               &(mgw_events_done_t){.done = {.n = (uint32_t)cnt, .v = es + k}});
        rc = send_locked(s, &b);
        mgw_buf_free(&b);
    }
    if (m && !es) { /* no memory for the list: one at a time */
        for (size_t k = 0; k < m && rc == 0; k++) {
            mgw_buf_t b;
            mgw_event_done_encode(&b, 0, &(mgw_event_done_t){.event = d[k].id, .status = d[k].st});
            rc = send_locked(s, &b);
            mgw_buf_free(&b);
        }
    }
    free(es);
    free(d);
    return rc;
}

/* 1 if queue qid of s has a tracked event not reported yet. */
static int queue_pending(mgpx_session_t *s, uint64_t qid)
{
    int any = 0;
    pthread_mutex_lock(&ev_lock);
    for (size_t i = 0; i < ev_cap && !any; i++)
        any = ev_tab[i].s == s && ev_tab[i].qid == qid;
    pthread_mutex_unlock(&ev_lock);
    return any;
}

int mgpx_op_finish(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    cl_event w[MGW_MAX_WAIT];
    mgw_finish_t m;
    (void)r;
    if (mgw_finish_decode(c, &m))
        return MGPX_BAD;
    uint64_t qid = m.queue;
    cl_uint n = m.events.n;
    mgpx_obj_t *q = mgpx_map_get(&s->map, qid, MGW_K_QUEUE);
    if (!q)
        return CL_INVALID_COMMAND_QUEUE;
    /* An ID the map does not hold (a command that failed at its enqueue,
       whose failure was reported already, or no event of this session) is
       an error, but the others are still waited for and the queue's
       completions reported: the client's wait must not hang on it. */
    cl_uint nw = 0;
    for (cl_uint i = 0; i < n; i++) {
        mgpx_obj_t *o = mgpx_map_get(&s->map, mgw_ids_get(&m.events, i), MGW_K_EVENT);
        if (o)
            w[nw++] = o->h;
    }
    int rc = nw == n ? MGPX_NOREPLY : CL_INVALID_EVENT;
    /* Nothing of the queue left to report (a repeated FINISH of a client
       that waited while an earlier one ran): no native wait, which could
       otherwise block this thread on commands enqueued since. */
    if (s->dry || !queue_pending(s, qid))
        return rc;
    /* Inline only when every command can complete without a later client
       message: no unset user event, no transfer waiting for data or
       credits (design.md, "Finish"). */
    pthread_mutex_lock(&s->lock);
    int wait = s->user_open == 0 && s->jobs_open == 0;
    if (wait)
        s->finishing_ms = mgtr_now_ms();
    pthread_mutex_unlock(&s->lock);
    if (wait) {
        s->fin_inline++;
        if (nw)
            clWaitForEvents(nw, w); /* a failure is in the statuses reported */
        else if (n == 0)
            clFinish(q->h);
        pthread_mutex_lock(&s->lock);
        s->finishing_ms = 0;
        pthread_mutex_unlock(&s->lock);
    } else {
        s->fin_later++;
    }
    events_report(s, qid);
    return rc;
}

void mgpx_obj_release(mgpx_obj_t *o)
{
    switch (o->kind) {
    case MGW_K_CONTEXT:
        clReleaseContext(o->h);
        break;
    case MGW_K_QUEUE:
        clFinish(o->h);
        if (o->aux) {
            clFinish(o->aux);
            clReleaseCommandQueue(o->aux);
        }
        clReleaseCommandQueue(o->h);
        break;
    case MGW_K_MEM:
        clReleaseMemObject(o->h);
        break;
    case MGW_K_PROGRAM:
        clReleaseProgram(o->h);
        break;
    case MGW_K_KERNEL:
        clReleaseKernel(o->h);
        free(o->aux);
        break;
    case MGW_K_EVENT:
        clReleaseEvent(o->h);
        break;
    case MGW_K_SAMPLER:
        clReleaseSampler(o->h);
        break;
    }
}

int mgpx_session_dispatch(mgpx_session_t *s, const mgw_hdr_t *h, const uint8_t *payload)
{
    mgw_cur_t c;
    mgw_buf_t extra;
    mgpx_handler_t fn = mgpx_handler(h->op);
    int rc;
    if (!fn) {
        char why[64];
        snprintf(why, sizeof why, "unknown op %u", h->op);
        mgpx_send_error(s, h->seq, CL_INVALID_OPERATION, why);
        return 0;
    }
    mgw_cur_init(&c, payload, h->length);
    mgw_buf_init(&extra, MGW_OP_REPLY, 0, h->seq);
    rc = fn(s, &c, &extra);
    if (rc == MGPX_BAD || c.err) {
        char why[80];
        snprintf(why, sizeof why, "malformed request (op %u, %u bytes)", h->op, h->length);
        mgpx_send_error(s, h->seq, CL_INVALID_VALUE, why);
    } else if (mgpx_op_sync(h->op)) {
        if (extra.err)
            rc = CL_OUT_OF_HOST_MEMORY;
        mgpx_reply(s, h->seq, rc, rc == CL_SUCCESS ? &extra : NULL);
    } else if (rc < 0) {
        /* an asynchronous command that had no event to carry its error */
        char why[64];
        snprintf(why, sizeof why, "op %u failed with %d", h->op, rc);
        mgpx_send_error(s, h->seq, rc, why);
    }
    mgw_buf_free(&extra);
    return 0;
}

/* Fails every user event, so that nothing queued waits forever, then frees
 * all objects of the session. */
static void session_teardown(mgpx_session_t *s)
{
    mgpx_map_t *m = &s->map;
    ev_slots_drop(s);
    for (size_t i = 0; i < m->cap; i++) {
        mgpx_obj_t *o = &m->slot[i];
        if (o->id && o->id != UINT64_MAX && o->kind == MGW_K_EVENT) {
            cl_command_type ct = 0;
            clGetEventInfo(o->h, CL_EVENT_COMMAND_TYPE, sizeof ct, &ct, NULL);
            if (ct == CL_COMMAND_USER)
                clSetUserEventStatus(o->h, CL_DEVICE_NOT_AVAILABLE);
        }
    }
    mgpx_bulk_stop(s);
    mgpx_peer_session_end(s);
    mgpx_shm_session_end(s);
    mgpx_cma_session_end(s);
    mgpx_staging_free(s);
    mgpx_map_free(m);
    mgpx_quota_session_end(s);
}

void mgpx_session_run(mgpx_session_t *s)
{
    uint8_t *buf = NULL;
    size_t cap = 0;
    mgw_hdr_t h;
    int r;
    const char *why = "client disconnected";
    while ((r = mgtr_msg_recv(s->t, s->cmd, &h, &buf, &cap, MGW_MSG_MAX)) == 0)
        if (mgpx_session_dispatch(s, &h, buf))
            break;
    if (r == -2) {
        why = "bad message header (magic or oversized length): closing session";
        mgpx_send_error(s, h.seq, CL_INVALID_VALUE, why);
    }
    free(buf);
    /* a frame that failed to open, on the command lane or a stripe (whose
     * thread shut the command lane down) */
    int forged = mgtr_tampered(s->t, s->cmd);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < MGW_STREAMS_MAX; i++)
        forged = forged || mgtr_tampered(s->t, s->stripe[i].ep);
    pthread_mutex_unlock(&s->lock);
    if (forged)
        why = "a frame failed its integrity check (altered, replayed or out of order on the way): "
              "closing session";
    pthread_mutex_lock(&s->send_lock);
    s->dead = 1;
    pthread_mutex_unlock(&s->send_lock);
    s->t->shutdown(s->cmd);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < MGW_STREAMS_MAX; i++)
        if (s->stripe[i].ep)
            s->t->shutdown(s->stripe[i].ep);
    pthread_mutex_unlock(&s->lock);
    session_teardown(s);
    if (s->cma_pid > 0)
        mgpx_log("session %u (%s): one-copy lane moved %llu bytes in, %llu out", s->num, s->peer,
                 (unsigned long long)s->cma_in, (unsigned long long)s->cma_out);
    if (s->fin_inline || s->fin_later)
        mgpx_log("session %u (%s): FINISH %lu inline, %lu without waiting; completions: %lu by "
                 "FINISH, %lu by callback",
                 s->num, s->peer, s->fin_inline, s->fin_later, s->done_by_fin,
                 (unsigned long)s->done_by_cb);
    mgpx_slog_flush(s);
    mgpx_log("session %u (%s): %s; all its objects released (its ID map had at most %zu slots)",
             s->num, s->peer, why, s->map.peak);
}
