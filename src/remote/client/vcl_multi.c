/* libmpigpu-vcl.so: contexts over the devices of several proxies.
 *
 * The context is a native context of the same wire ID on each of its
 * proxies (IDs are one space for all connections, so every object keeps
 * one ID wherever it is made).  A buffer is born on the context's first
 * proxy and lives where it was last used: a command on another proxy moves
 * it there first, from proxy to proxy (PEER_RECV on the new home, PEER_SEND
 * on the old one, which the old home's own queue of the context runs after
 * the buffer's last command there); the client's link carries the two
 * commands only.  An event of one proxy in a wait list of another stands
 * there as a user event that the client sets when the event completes. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "vcl.h"

static pthread_mutex_t peer_lock = PTHREAD_MUTEX_INITIALIZER;
int mgvcl_forward = 1; /* MPIGPU_VCL_PEER_EVENTS */

int mgvcl_ctx_ci(cl_context ctx, mgvcl_conn_t *c)
{
    for (cl_uint i = 0; i < ctx->nconn; i++)
        if (ctx->conns[i] == c)
            return (int)i;
    return -1;
}

cl_int mgvcl_call_each(cl_context ctx, uint32_t mask, mgw_buf_t *b, uint32_t *made)
{
    cl_int rc = CL_SUCCESS;
    for (cl_uint i = 0; i < ctx->nconn; i++) {
        if (!(mask & (1u << i)))
            continue;
        cl_int r = mgvcl_call(ctx->conns[i], b, NULL, NULL);
        if (r == CL_SUCCESS && made)
            *made |= 1u << i;
        else if (r != CL_SUCCESS && rc == CL_SUCCESS)
            rc = r;
    }
    return rc;
}

/* The native contexts: one per proxy, each with that proxy's devices. */
cl_int mgvcl_ctx_make(cl_context ctx)
{
    uint64_t idx[MGW_MAX_DEVS];
    cl_int rc = CL_SUCCESS;
    mgw_buf_t b;
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE); /* a move begins commands of its own */
    pthread_mutex_init(&ctx->mig_lock, &a);
    pthread_mutexattr_destroy(&a);
    ctx->nconn = 0;
    for (cl_uint i = 0; i < ctx->ndev && rc == CL_SUCCESS; i++) {
        if (mgvcl_ctx_ci(ctx, ctx->devs[i]->conn) >= 0)
            continue;
        if (ctx->nconn == MGVCL_MAX_CONNS) {
            rc = CL_INVALID_DEVICE; /* more proxies than one context spans */
            break;
        }
        mgvcl_conn_t *c = ctx->devs[i]->conn;
        cl_uint n = 0;
        for (cl_uint j = 0; j < ctx->ndev && n < MGW_MAX_DEVS; j++)
            if (ctx->devs[j]->conn == c)
                idx[n++] = ctx->devs[j]->idx;
        mgw_context_create_encode(
            &b, 0, &(mgw_context_create_t){.id = ctx->id, .devs = {.n = n, .v = idx}});
        rc = mgvcl_call(c, &b, NULL, NULL);
        mgw_buf_free(&b);
        if (rc == CL_SUCCESS)
            ctx->conns[ctx->nconn++] = c;
    }
    ctx->conn = ctx->nconn ? ctx->conns[0] : ctx->devs[0]->conn;
    if (rc != CL_SUCCESS)
        mgvcl_ctx_unmake(ctx);
    return rc;
}

void mgvcl_ctx_unmake(cl_context ctx)
{
    for (cl_uint i = 0; i < ctx->nconn; i++) {
        cl_command_queue hq = ctx->hq[i];
        if (hq) {
            mgvcl_clFinish(hq); /* its events point at it */
            mgvcl_release_remote(hq->conn, MGW_K_QUEUE, hq->id);
            free(hq);
            ctx->hq[i] = NULL;
        }
        mgvcl_release_remote(ctx->conns[i], MGW_K_CONTEXT, ctx->id);
    }
    ctx->nconn = 0;
    pthread_mutex_destroy(&ctx->mig_lock);
}

/* The context's own in-order queue on conns[ci] (mig_lock held). */
static cl_command_queue hidden_queue(cl_context ctx, int ci, cl_int *rc)
{
    if (ctx->hq[ci])
        return ctx->hq[ci];
    cl_device_id dev = NULL;
    for (cl_uint i = 0; i < ctx->ndev && !dev; i++)
        if (ctx->devs[i]->conn == ctx->conns[ci])
            dev = ctx->devs[i];
    cl_command_queue q = calloc(1, sizeof *q);
    if (!q) {
        *rc = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    q->dispatch = &mgvcl_dispatch;
    atomic_init(&q->refs, 1);
    q->ctx = ctx;
    q->dev = dev;
    q->conn = ctx->conns[ci];
    q->id = mgvcl_id(q->conn);
    mgw_buf_t b;
    mgw_queue_create_encode(
        &b, 0, &(mgw_queue_create_t){.id = q->id, .ctx = ctx->id, .dev = dev->idx, .props = 0});
    *rc = mgvcl_call(q->conn, &b, NULL, NULL);
    mgw_buf_free(&b);
    if (*rc) {
        free(q);
        return NULL;
    }
    return ctx->hq[ci] = q;
}

/* The receiving session's peer ID and key (PEER_OPEN, once per connection). */
static cl_int peer_open(mgvcl_conn_t *c)
{
    cl_int rc = CL_SUCCESS;
    pthread_mutex_lock(&peer_lock);
    if (!c->peer_ok) {
        mgw_buf_t b;
        uint8_t *rep = NULL;
        size_t len = 0;
        mgw_peer_open_encode(&b, 0, &(mgw_peer_open_t){});
        rc = mgvcl_call(c, &b, &rep, &len);
        mgw_buf_free(&b);
        if (rc == CL_SUCCESS) {
            mgw_peer_open_reply_t m;
            mgw_cur_t cur;
            mgw_cur_init(&cur, rep, len);
            if (mgw_peer_open_reply_decode(&cur, &m)) {
                rc = CL_OUT_OF_RESOURCES;
            } else {
                memcpy(c->peer_sid, m.sid, MGW_TOKEN);
                memcpy(c->peer_key, m.key, MGW_TOKEN);
                c->peer_ok = 1;
            }
            sodium_memzero(&m, sizeof m);
        }
        if (rep)
            sodium_memzero(rep, len);
        free(rep);
    }
    pthread_mutex_unlock(&peer_lock);
    return rc;
}

/* Room for one more ID in e's wait list. */
static cl_int wait_room(mgvcl_enq_t *e)
{
    cl_uint n = e->head.waits.n;
    cl_uint cap = e->wids == e->wbuf ? (cl_uint)(sizeof e->wbuf / sizeof e->wbuf[0]) : e->wcap;
    if (n < cap)
        return CL_SUCCESS;
    if (n >= MGW_MAX_WAIT)
        return CL_INVALID_EVENT_WAIT_LIST;
    cl_uint ncap = cap * 2 < MGW_MAX_WAIT ? cap * 2 : MGW_MAX_WAIT;
    uint64_t *w = malloc(ncap * sizeof *w);
    if (!w)
        return CL_OUT_OF_HOST_MEMORY;
    memcpy(w, e->wids, n * sizeof *w);
    if (e->wids != e->wbuf)
        free(e->wids);
    e->wids = w;
    e->wcap = ncap;
    e->head.waits.v = w;
    return CL_SUCCESS;
}

static cl_int wait_id(mgvcl_enq_t *e, uint64_t id)
{
    cl_int rc = wait_room(e);
    if (rc == CL_SUCCESS)
        e->wids[e->head.waits.n++] = id;
    return rc;
}

static void standin_send_set(mgvcl_standin_t *s, cl_int status)
{
    mgw_buf_t b;
    if (atomic_load_explicit(&s->c->dead, memory_order_relaxed))
        return;
    mgw_user_event_set_encode(&b, 0, &(mgw_user_event_set_t){.id = s->id, .status = status});
    mgvcl_send(s->c, &b);
    mgw_buf_free(&b);
}

static cl_int peer_open(mgvcl_conn_t *c);

/* Asks w's proxy to set the stand-in on c itself when w completes (over the
 * peer lane, EVENT_FORWARD); the client sets it too, and the proxy takes
 * the first of the two.  Without it (an old proxy, an error) the client's
 * setting is the only one. */
static void forward(cl_event w, mgvcl_conn_t *c, uint64_t standin)
{
    if (!mgvcl_forward || peer_open(c) != CL_SUCCESS ||
        atomic_load_explicit(&w->conn->dead, memory_order_relaxed))
        return;
    mgw_event_forward_t f = {.event = w->id, .standin = standin, .addr = c->addr};
    memcpy(f.sid, c->peer_sid, MGW_TOKEN);
    memcpy(f.key, c->peer_key, MGW_TOKEN);
    mgw_buf_t b;
    mgw_event_forward_encode(&b, 0, &f);
    sodium_memzero(f.key, sizeof f.key);
    mgvcl_send(w->conn, &b);
    sodium_memzero(b.p, b.len);
    mgw_buf_free(&b);
}

/* w (a command of another proxy, not a read) is in the wait list of e's
 * command: held until that completes (mgvcl_deps_complete). */
static void dep_add(mgvcl_enq_t *e, cl_event w)
{
    cl_event ev = e->ev;
    if (!ev || !w->q || w->data)
        return; /* a user event is the client's; a read completes when its data is in */
    cl_event *d = realloc(ev->deps, (ev->ndeps + 1) * sizeof *d);
    if (!d)
        return; /* then only its own proxy's notice completes it */
    ev->deps = d;
    mgvcl_clRetainEvent(w);
    d[ev->ndeps++] = w;
}

void mgvcl_deps_complete(cl_event e)
{
    for (cl_uint i = 0; i < e->ndeps; i++)
        mgvcl_event_complete(e->deps[i], CL_COMPLETE); /* nothing when done already */
}

void mgvcl_deps_free(cl_event e)
{
    for (cl_uint i = 0; i < e->ndeps; i++)
        mgvcl_event_unref(e->deps[i]);
    free(e->deps);
    e->deps = NULL;
    e->ndeps = 0;
}

cl_int mgvcl_wait_add(mgvcl_enq_t *e, cl_command_queue q, cl_event w)
{
    if (w->conn == q->conn)
        return wait_id(e, w->id);
    pthread_mutex_lock(&mgvcl_lock);
    if (!w->in_table) { /* complete: nothing to wait for, unless it failed */
        cl_int st = w->status;
        pthread_mutex_unlock(&mgvcl_lock);
        return st < 0 ? CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST : CL_SUCCESS;
    }
    for (mgvcl_standin_t *s = w->stand; s; s = s->next)
        if (s->c == q->conn) {
            uint64_t id = s->id;
            pthread_mutex_unlock(&mgvcl_lock);
            dep_add(e, w);
            return wait_id(e, id);
        }
    mgvcl_standin_t *s = calloc(1, sizeof *s);
    if (!s) {
        pthread_mutex_unlock(&mgvcl_lock);
        return CL_OUT_OF_HOST_MEMORY;
    }
    s->c = q->conn;
    s->id = mgvcl_id(q->conn);
    s->next = w->stand;
    w->stand = s;
    pthread_mutex_unlock(&mgvcl_lock);
    /* made outside the lock; a completion meanwhile marks it due */
    mgw_buf_t b;
    mgw_user_event_create_encode(&b, 0, &(mgw_user_event_create_t){.id = s->id, .ctx = q->ctx->id});
    cl_int rc = mgvcl_send(q->conn, &b);
    mgw_buf_free(&b);
    pthread_mutex_lock(&mgvcl_lock);
    s->created = rc == CL_SUCCESS;
    int due = s->due;
    cl_int st = w->status;
    pthread_mutex_unlock(&mgvcl_lock);
    if (due && s->created)
        standin_send_set(s, st);
    if (rc == CL_SUCCESS && w->q && !due)
        forward(w, q->conn, s->id);
    if (rc == CL_SUCCESS)
        dep_add(e, w);
    return rc == CL_SUCCESS ? wait_id(e, s->id) : rc;
}

void mgvcl_standins_set(cl_event e, cl_int status)
{
    mgvcl_standin_t *list[64];
    int n = 0;
    /* called once e is out of its table: no stand-in can be added any more
       (mgvcl_wait_add checks under the lock), so an empty list stays empty */
    if (!e->stand)
        return;
    pthread_mutex_lock(&mgvcl_lock);
    for (mgvcl_standin_t *s = e->stand; s; s = s->next) {
        if (s->due)
            continue;
        s->due = 1;
        if (s->created && n < 64)
            list[n++] = s;
        else if (s->created) /* many: send under the lock (rare) */
            standin_send_set(s, status);
    }
    pthread_mutex_unlock(&mgvcl_lock);
    for (int i = 0; i < n; i++)
        standin_send_set(list[i], status);
}

void mgvcl_standins_free(cl_event e)
{
    while (e->stand) {
        mgvcl_standin_t *s = e->stand;
        e->stand = s->next;
        if (s->created && !atomic_load_explicit(&s->c->dead, memory_order_relaxed))
            mgvcl_release_remote(s->c, MGW_K_EVENT, s->id);
        free(s);
    }
}

/* Makes m on conns[ci] (a sub-buffer: its parent first); mig_lock held. */
static cl_int mem_make(cl_context ctx, cl_mem m, int ci)
{
    mgw_buf_t b;
    cl_int rc;
    if (m->made & (1u << ci))
        return CL_SUCCESS;
    if (m->parent) {
        if ((rc = mem_make(ctx, m->parent, ci)))
            return rc;
        mgw_subbuffer_create_encode(&b, 0,
                                    &(mgw_subbuffer_create_t){.id = m->id,
                                                              .parent = m->parent->id,
                                                              .flags = m->flags & CL_MEM_READ_WRITE,
                                                              .origin = m->origin,
                                                              .size = m->size});
    } else {
        mgw_buffer_create_encode(
            &b, 0,
            &(mgw_buffer_create_t){.id = m->id,
                                   .ctx = ctx->id,
                                   .flags = m->flags & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY |
                                                        CL_MEM_WRITE_ONLY | CL_MEM_ALLOC_HOST_PTR),
                                   .size = m->size});
    }
    rc = mgvcl_call(ctx->conns[ci], &b, NULL, NULL);
    mgw_buf_free(&b);
    if (rc == CL_SUCCESS)
        m->made |= 1u << ci;
    return rc;
}

void mgvcl_mem_unmake(cl_mem m)
{
    cl_context ctx = m->ctx;
    for (cl_uint i = 0; i < ctx->nconn; i++)
        if (m->made & (1u << i))
            mgvcl_release_remote(ctx->conns[i], MGW_K_MEM, m->id);
    if (m->last)
        mgvcl_event_unref(m->last);
    m->last = NULL;
}

typedef struct cancel_arg {
    mgvcl_conn_t *c;
    uint64_t xfer;
} cancel_arg_t;

/* The sending side's event completed: a failure fails the receive. */
static void CL_CALLBACK send_done(cl_event ev, cl_int st, void *data)
{
    cancel_arg_t *a = data;
    (void)ev;
    if (st < 0 && !atomic_load_explicit(&a->c->dead, memory_order_relaxed)) {
        mgw_buf_t b;
        mgw_peer_cancel_encode(&b, 0, &(mgw_peer_cancel_t){.xfer = a->xfer, .status = st});
        mgvcl_send(a->c, &b);
        mgw_buf_free(&b);
    }
    free(a);
}

static cl_int hold(mgvcl_enq_t *e, cl_event ev)
{
    cl_event *h = realloc(e->hold, (e->nhold + 1) * sizeof *h);
    if (!h)
        return CL_OUT_OF_HOST_MEMORY;
    e->hold = h;
    h[e->nhold++] = ev;
    return CL_SUCCESS;
}

/* The bytes [so, so + n) of src on conns[from] (or its rect srect, packed)
 * go into dst at dof (or its rect drect) on q's proxy: rx, an event of q
 * (its ID the transfer's), begun with its head; the sending side runs on
 * the context's queue of `from` after src's last command there.  mig_lock
 * held. */
static cl_int peer_move(cl_command_queue q, int from, cl_mem src, cl_mem dst, size_t so, size_t dof,
                        size_t n, const mgw_rect_t *srect, const mgw_rect_t *drect,
                        const mgw_enq_head_t *rxhead, cl_event rx, cl_event *sent)
{
    const mgw_rect_t none = {.row_pitch = 0};
    cl_context ctx = q->ctx;
    cl_int rc = peer_open(q->conn);
    cl_command_queue hq = rc ? NULL : hidden_queue(ctx, from, &rc);
    if (rc)
        return rc;
    mgvcl_enq_t se;
    if ((rc = mgvcl_enq_begin(hq, 0, NULL, CL_COMMAND_COPY_BUFFER, &se)))
        return rc;
    if (src->last && (rc = mgvcl_wait_add(&se, hq, src->last)) &&
        rc != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) {
        mgvcl_enq_abort(&se, rc);
        return rc;
    }
    /* a failed last command fails nothing here: the data is what it is */
    mgw_buf_t b;
    mgw_xfer_head_t rx_x = {.xfer = rx->id, .size = n, .head = *rxhead, .mem = dst->id};
    mgw_peer_recv_encode(&b, 0,
                         &(mgw_peer_recv_t){.x = rx_x, .off = dof, .rect = drect ? *drect : none});
    rc = mgvcl_send(q->conn, &b);
    mgw_buf_free(&b);
    if (rc != CL_SUCCESS) {
        mgvcl_conn_fail(q->conn);
        mgvcl_enq_abort(&se, CL_DEVICE_NOT_AVAILABLE);
        return CL_DEVICE_NOT_AVAILABLE;
    }
    cancel_arg_t *ca = malloc(sizeof *ca);
    if (ca) {
        ca->c = q->conn;
        ca->xfer = rx->id;
        if (mgvcl_clSetEventCallback(se.ev, CL_COMPLETE, send_done, ca))
            free(ca);
    }
    mgw_peer_send_t ps = {
        .x = {.xfer = rx->id, .size = n, .head = se.head, .mem = src->id},
        .off = so,
        .rect = srect ? *srect : none,
        .addr = q->conn->addr,
    };
    memcpy(ps.sid, q->conn->peer_sid, MGW_TOKEN);
    memcpy(ps.key, q->conn->peer_key, MGW_TOKEN);
    mgw_peer_send_encode(&b, 0, &ps);
    sodium_memzero(ps.key, sizeof ps.key);
    cl_event sev = se.ev;
    mgvcl_clRetainEvent(sev);
    /* a failed send fails its event, whose callback cancels the receive */
    mgvcl_enq_end(hq, &se, &b, NULL, CL_FALSE, 0, NULL, 0);
    sodium_memzero(b.p, b.len);
    mgw_buf_free(&b);
    if (sent)
        *sent = sev;
    else
        mgvcl_event_unref(sev);
    return CL_SUCCESS;
}

/* Moves the whole of root (a buffer) to q's proxy, as a command of q that
 * e then waits for. */
static cl_int migrate(mgvcl_enq_t *e, cl_command_queue q, cl_mem root, int ci, int content)
{
    cl_context ctx = q->ctx;
    cl_int rc = mem_make(ctx, root, ci);
    if (rc)
        return rc;
    if (!content) {
        root->home = ci;
        return CL_SUCCESS;
    }
    mgvcl_enq_t re;
    if ((rc = mgvcl_enq_begin(q, 0, NULL, CL_COMMAND_MIGRATE_MEM_OBJECTS, &re)))
        return rc;
    cl_event rx = re.ev;
    rc = peer_move(q, root->home, root, root, 0, 0, root->size, NULL, NULL, &re.head, rx, NULL);
    if (rc != CL_SUCCESS) {
        mgvcl_enq_abort(&re, rc);
        return rc;
    }
    mgvcl_clRetainEvent(rx);
    mgvcl_enq_end(q, &re, NULL, NULL, CL_FALSE, 0, NULL, 0); /* sent: peer_move */
    if (rc == CL_SUCCESS) {
        root->home = ci;
        if (root->last)
            mgvcl_event_unref(root->last);
        mgvcl_clRetainEvent(rx);
        root->last = rx;
        rc = wait_id(e, rx->id);
    }
    if (rc == CL_SUCCESS)
        rc = hold(e, rx);
    else
        mgvcl_event_unref(rx);
    return rc;
}

cl_int mgvcl_mem_use(mgvcl_enq_t *e, cl_command_queue q, cl_mem m)
{
    return mgvcl_mem_move(e, q, m, 1);
}

cl_int mgvcl_mem_move(mgvcl_enq_t *e, cl_command_queue q, cl_mem m, int content)
{
    cl_context ctx = q->ctx;
    if (ctx->nconn < 2 || !m)
        return CL_SUCCESS;
    cl_mem root = m->parent ? m->parent : m;
    int ci = mgvcl_ctx_ci(ctx, q->conn);
    cl_int rc = CL_SUCCESS;
    if (ci < 0)
        return CL_INVALID_COMMAND_QUEUE;
    if (root->home != ci) {
        if (mgvcl_is_image(root))
            return CL_INVALID_OPERATION; /* images stay on their first proxy */
        rc = migrate(e, q, root, ci, content && !root->fresh);
    }
    root->fresh = 0;
    if (rc == CL_SUCCESS && m != root)
        rc = mem_make(ctx, m, ci);
    if (rc == CL_SUCCESS && e->ev) {
        if (root->last)
            mgvcl_event_unref(root->last);
        mgvcl_clRetainEvent(e->ev);
        root->last = e->ev;
    }
    return rc;
}

/* 1 when the rect (o, reg, pitches as OpenCL defaults them) passes size. */
static int rect_out(const size_t *o, const size_t *reg, size_t rp, size_t sp, size_t size)
{
    if (!rp)
        rp = reg[0];
    if (!sp)
        sp = reg[1] * rp;
    if (rp < reg[0] || sp < reg[1] * rp)
        return 1;
    size_t last = (o[2] + reg[2] - 1) * sp + (o[1] + reg[1] - 1) * rp + o[0] + reg[0];
    return last > size;
}

int mgvcl_copy_rect_peer(mgvcl_enq_t *e, cl_command_queue q, cl_mem src, cl_mem dst,
                         const size_t *so, const size_t *dof, const size_t *reg, size_t srp,
                         size_t ssp, size_t drp, size_t dsp, cl_int *rc)
{
    cl_context ctx = q->ctx;
    cl_mem root = src->parent ? src->parent : src, droot = dst->parent ? dst->parent : dst;
    int ci = mgvcl_ctx_ci(ctx, q->conn);
    if (ctx->nconn < 2 || root->home == ci || mgvcl_is_image(root) || droot == root)
        return 1;
    if (reg[0] > SIZE_MAX / reg[1] / reg[2] || reg[0] * reg[1] * reg[2] > (1ull << 32) ||
        rect_out(so, reg, srp, ssp, src->size) || rect_out(dof, reg, drp, dsp, dst->size)) {
        *rc = CL_INVALID_VALUE; /* as the proxies' rect transfers; past a buffer's end */
        return 0;
    }
    if ((*rc = mgvcl_mem_move(e, q, dst, !droot->fresh)))
        return 0;
    /* the rects on the roots: a sub-buffer's origin shifts the x origin */
    mgw_rect_t sr = {.row_pitch = srp, .slice_pitch = ssp},
               dr = {.row_pitch = drp, .slice_pitch = dsp};
    memcpy(sr.origin, so, sizeof sr.origin);
    memcpy(dr.origin, dof, sizeof dr.origin);
    memcpy(sr.region, reg, sizeof sr.region);
    memcpy(dr.region, reg, sizeof dr.region);
    sr.origin[0] += src->origin;
    dr.origin[0] += dst->origin;
    cl_event sent = NULL;
    *rc = peer_move(q, root->home, root, droot, 0, 0, reg[0] * reg[1] * reg[2], &sr, &dr, &e->head,
                    e->ev, &sent);
    if (sent) {
        if (root->last)
            mgvcl_event_unref(root->last);
        root->last = sent;
    }
    return 0;
}

int mgvcl_copy_peer(mgvcl_enq_t *e, cl_command_queue q, cl_mem src, cl_mem dst, size_t so,
                    size_t dof, size_t n, cl_int *rc)
{
    cl_context ctx = q->ctx;
    cl_mem root = src->parent ? src->parent : src;
    int ci = mgvcl_ctx_ci(ctx, q->conn);
    cl_mem droot0 = dst->parent ? dst->parent : dst;
    if (ctx->nconn < 2 || root->home == ci || mgvcl_is_image(root) || droot0 == root)
        return 1; /* a copy within one proxy (sub-buffers of one parent: it moves whole) */
    cl_mem droot = dst->parent ? dst->parent : dst;
    /* a destination written whole needs none of its old contents */
    int whole = !dst->parent && dof == 0 && n == dst->size;
    if ((*rc = mgvcl_mem_move(e, q, dst, !whole && !droot->fresh)))
        return 0;
    /* the command's wait list holds for the sending side too */
    cl_event sent = NULL;
    *rc = peer_move(q, root->home, root, dst->parent ? dst->parent : dst, so + src->origin,
                    dof + dst->origin, n, NULL, NULL, &e->head, e->ev, &sent);
    if (sent) {
        if (root->last)
            mgvcl_event_unref(root->last);
        root->last = sent; /* a later writer of src waits for this read */
    }
    return 0;
}

#define BCAST_PIECES 8                    /* a broadcast goes in this many pieces */
#define PARENT(i) (((i)-1) / 2)           /* a binary tree: buffer i gets a piece from this one */
#define BCAST_PIECE_MIN ((size_t)4 << 20) /* ... each at least this big */

cl_int CL_API_CALL mgvcl_broadcast_write(cl_uint nb, const cl_command_queue *queues,
                                         const cl_mem *bufs, cl_bool blocking, size_t off, size_t n,
                                         const void *ptr, cl_uint nw, const cl_event *w,
                                         cl_event *events)
{
    if (!nb || !queues || !bufs || !ptr || !n)
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < nb; i++) {
        if (!mgvcl_is(queues[i]))
            return CL_INVALID_COMMAND_QUEUE;
        if (!mgvcl_is(bufs[i]) || mgvcl_is_image(bufs[i]))
            return CL_INVALID_MEM_OBJECT;
        if (queues[i]->ctx != queues[0]->ctx || bufs[i]->ctx != queues[0]->ctx)
            return CL_INVALID_CONTEXT;
        if (off > bufs[i]->size || n > bufs[i]->size - off)
            return CL_INVALID_VALUE;
        for (cl_uint j = 0; j < i; j++)
            if (bufs[j] == bufs[i])
                return CL_INVALID_VALUE;
    }
    /* in pieces, so that the proxies pass piece k on while piece k + 1
       arrives: a pipeline down the tree */
    size_t piece = n / BCAST_PIECES > BCAST_PIECE_MIN ? (n + BCAST_PIECES - 1) / BCAST_PIECES : n;
    cl_uint np = (cl_uint)((n + piece - 1) / piece);
    cl_event *ev = calloc((size_t)nb * np, sizeof *ev); /* ev[p * nb + i] */
    cl_event *last = calloc(nb, sizeof *last);
    if (!ev || !last) {
        free(ev);
        free(last);
        return CL_OUT_OF_HOST_MEMORY;
    }
    /* the client writes each piece into the first buffer; buffer i gets it
       from buffer (i - 1) / 2, proxy to proxy, once that one has it: the
       holders double each round */
    cl_int rc = CL_SUCCESS;
    size_t made = 0;
    for (cl_uint p = 0; p < np && rc == CL_SUCCESS; p++) {
        size_t o = off + (size_t)p * piece,
               k = n - (size_t)p * piece < piece ? n - (size_t)p * piece : piece;
        cl_event *pe = ev + (size_t)p * nb;
        rc = mgvcl_clEnqueueWriteBuffer(queues[0], bufs[0], CL_FALSE, o, k,
                                        (const char *)ptr + (o - off), nw, w, &pe[0]);
        made += rc == CL_SUCCESS;
        for (cl_uint i = 1; i < nb && rc == CL_SUCCESS; i++, made++)
            rc = mgvcl_clEnqueueCopyBuffer(queues[i], bufs[PARENT(i)], bufs[i], o, o, k, 1,
                                           &pe[PARENT(i)], &pe[i]);
    }
    /* one event per buffer: a marker behind its pieces */
    for (cl_uint i = 0; i < nb && rc == CL_SUCCESS; i++) {
        cl_event wl[BCAST_PIECES + 1];
        for (cl_uint p = 0; p < np; p++)
            wl[p] = ev[(size_t)p * nb + i];
        rc = np == 1 ? mgvcl_clRetainEvent(last[i] = wl[0])
                     : mgvcl_clEnqueueMarkerWithWaitList(queues[i], np, wl, &last[i]);
    }
    if (rc == CL_SUCCESS && blocking)
        rc = mgvcl_clWaitForEvents(nb, last);
    for (size_t j = 0; j < made; j++) /* made in order: piece by piece, buffer by buffer */
        mgvcl_clReleaseEvent(ev[j]);
    for (cl_uint i = 0; i < nb; i++) {
        if (events && rc == CL_SUCCESS)
            events[i] = last[i];
        else if (last[i])
            mgvcl_clReleaseEvent(last[i]);
    }
    free(ev);
    free(last);
    return rc;
}
