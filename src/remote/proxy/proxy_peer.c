/*
 * mpigpu-proxy: the peer lane, bytes that go from one proxy to another.
 *
 * A client whose context spans several proxies moves a buffer range from
 * proxy Q to proxy P without carrying it: it asks P for a peer ID and key
 * (PEER_OPEN, over its authenticated and encrypted command lane), then
 * sends P a PEER_RECV (a transfer of its queue, as ENQ_WRITE, whose bytes
 * come from a peer) and Q a PEER_SEND naming P's address, ID and key.
 * Q's send thread waits for the command's wait list, connects to P and
 * runs the handshake on the peer lane with that key (so P accepts peer
 * traffic only for a session of an authenticated client, and the records
 * are encrypted as a client's are), sends PEER_XFER and the bytes straight
 * from the mapped buffer.  P's listener parks the connection under its
 * transfer; P's bulk thread, at that job, takes it and receives into the
 * mapped destination.  A send that fails before it connects is told to P
 * by the client (PEER_CANCEL, once Q's event failed); one that fails on
 * the way breaks the connection, which fails the receive.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy.h"

/* A peer connection (or a cancel: ep NULL) waiting for its receive job. */
typedef struct mgpx_park {
    struct mgpx_park *next;
    uint64_t xfer;
    size_t size;
    cl_int status;
    mgtr_ep_t *ep;
    int refused; /* no receive job: its receive was refused (mgpx_peer_refused) */
} mgpx_park_t;

#define PEER_PIECE ((size_t)4 << 20) /* bytes per send or receive call */

static mgpx_park_t *refused_take(mgpx_session_t *s, uint64_t xfer);

/* A notice for a stand-in not made yet. */
typedef struct mgpx_early {
    struct mgpx_early *next;
    uint64_t id;
    cl_int status;
} mgpx_early_t;

/* A connection for event notices to a peer session (fwd_main). */
typedef struct mgpx_pconn {
    struct mgpx_pconn *next;
    char *addr;
    uint8_t sid[MGW_TOKEN];
    mgtr_ep_t *ep;
    pthread_mutex_t lock; /* one send at a time */
    int broken;
} mgpx_pconn_t;

/* A client user event that a peer may set (a stand-in), under s->lock. */
typedef struct mgpx_ue {
    struct mgpx_ue *next;
    uint64_t id;
    cl_event e; /* retained */
    int peer_set;
} mgpx_ue_t;

void mgpx_ue_add(mgpx_session_t *s, uint64_t id, cl_event e)
{
    mgpx_ue_t *u = malloc(sizeof *u);
    if (!u)
        return; /* then only the client sets it */
    u->id = id;
    u->e = e;
    u->peer_set = 0;
    clRetainEvent(e);
    cl_int early = 1;
    pthread_mutex_lock(&s->lock);
    if (id > s->ue_max)
        s->ue_max = id;
    /* a notice that came before its stand-in was made (another connection) */
    for (mgpx_early_t **pp = &s->early; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            mgpx_early_t *x = *pp;
            *pp = x->next;
            early = x->status;
            s->nearly--;
            free(x);
            u->peer_set = 1;
            s->fwd_direct++;
            break;
        }
    u->next = s->ues;
    s->ues = u;
    pthread_mutex_unlock(&s->lock);
    if (early <= 0)
        clSetUserEventStatus(e, early < 0 ? early : CL_COMPLETE);
}

int mgpx_ue_take(mgpx_session_t *s, uint64_t id)
{
    mgpx_ue_t *u = NULL;
    pthread_mutex_lock(&s->lock);
    for (mgpx_ue_t **pp = &s->ues; *pp; pp = &(*pp)->next)
        if ((*pp)->id == id) {
            u = *pp;
            *pp = u->next;
            break;
        }
    pthread_mutex_unlock(&s->lock);
    if (!u)
        return -1;
    int rc = !u->peer_set;
    clReleaseEvent(u->e);
    free(u);
    return rc;
}

cl_event mgpx_peer_event(mgpx_session_t *s, const mgw_peer_event_t *m)
{
    for (mgpx_ue_t *u = s->ues; u; u = u->next)
        if (u->id == m->standin && !u->peer_set) {
            u->peer_set = 1;
            s->fwd_direct++;
            clRetainEvent(u->e);
            return u->e;
        }
    /* not made yet (its USER_EVENT_CREATE is still on its way here), or the
       client's setting came first: kept for ue_add, a bounded number */
    mgpx_early_t *x = s->nearly < 4096 ? malloc(sizeof *x) : NULL;
    if (x && m->standin > s->ue_max) {
        x->id = m->standin;
        x->status = m->status < 0 ? m->status : CL_COMPLETE;
        x->next = s->early;
        s->early = x;
        s->nearly++;
    } else {
        free(x);
        s->fwd_late++;
    }
    return NULL;
}

/* An event forward: when e completes, tell the stand-in on a peer. */
typedef struct fwd {
    mgpx_session_t *s;
    cl_event e;
    uint64_t standin;
    char *addr;
    uint8_t sid[MGW_TOKEN], key[MGW_TOKEN];
} fwd_t;

/* Connects to a peer session and runs the peer lane's handshake: the
 * endpoint, or NULL (logged). */
static mgtr_ep_t *peer_connect(mgpx_session_t *s, const char *addr, const uint8_t sid_in[MGW_TOKEN],
                               const uint8_t key_in[MGW_TOKEN])
{
    char err[256];
    mgtr_ep_t *ep = NULL;
    mgw_key_t key = {.len = MGW_TOKEN};
    uint8_t sid[MGW_TOKEN];
    memcpy(key.k, key_in, MGW_TOKEN);
    memcpy(sid, sid_in, MGW_TOKEN);
    if (!s->t->connect) { /* a transport that only accepts (the fuzzer's) */
        snprintf(err, sizeof err, "no outgoing connections on transport %s", s->t->name);
        mgpx_slog(s, "session %u (%s): peer %s: %s", s->num, s->peer, addr, err);
    } else if (s->t->connect(addr, &ep, err, sizeof err)) {
        mgpx_slog(s, "session %u (%s): peer %s: %s", s->num, s->peer, addr, err);
        ep = NULL;
    } else {
        s->t->set_timeout(ep, 10000); /* the handshake */
        if (mgtr_auth_client(s->t, ep, &key, s->px ? s->px->crypt : 0, MGW_LANE_PEER, 0, sid, err,
                             sizeof err)) {
            mgpx_slog(s, "session %u (%s): peer %s refused: %s", s->num, s->peer, addr, err);
            s->t->close(ep);
            ep = NULL;
        } else {
            s->t->set_timeout(ep, 0);
        }
    }
    sodium_memzero(&key, sizeof key);
    return ep;
}

/* The session's connection for event notices to peer session sid at addr
 * (made on first use, kept until the session ends), locked for one send;
 * NULL when it cannot be made. */
static mgpx_pconn_t *pconn_get(mgpx_session_t *s, const fwd_t *f)
{
    mgpx_pconn_t *pc;
    pthread_mutex_lock(&s->lock);
    for (pc = s->pconns; pc; pc = pc->next)
        if (!pc->broken && !strcmp(pc->addr, f->addr) && !memcmp(pc->sid, f->sid, MGW_TOKEN))
            break;
    pthread_mutex_unlock(&s->lock);
    if (pc) {
        pthread_mutex_lock(&pc->lock);
        return pc;
    }
    mgtr_ep_t *ep = peer_connect(s, f->addr, f->sid, f->key);
    if (!ep || !(pc = calloc(1, sizeof *pc)) || !(pc->addr = strdup(f->addr))) {
        if (ep)
            s->t->close(ep);
        free(pc);
        return NULL;
    }
    pc->ep = ep;
    memcpy(pc->sid, f->sid, MGW_TOKEN);
    pthread_mutex_init(&pc->lock, NULL);
    pthread_mutex_lock(&pc->lock);
    pthread_mutex_lock(&s->lock);
    pc->next = s->pconns;
    s->pconns = pc;
    pthread_mutex_unlock(&s->lock);
    return pc;
}

static void *fwd_main(void *arg)
{
    fwd_t *f = arg;
    mgpx_session_t *s = f->s;
    cl_int st = CL_COMPLETE;
    /* the connection first (the first notice to a peer need not wait for its
       handshake), then the event */
    mgpx_pconn_t *pc = pconn_get(s, f);
    if (pc)
        pthread_mutex_unlock(&pc->lock);
    clWaitForEvents(1, &f->e);
    clGetEventInfo(f->e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (pc) {
        pthread_mutex_lock(&pc->lock);
        if (pc->broken) { /* a send of another notice failed meanwhile */
            pthread_mutex_unlock(&pc->lock);
            pc = pconn_get(s, f);
        }
    }
    if (pc) {
        mgw_buf_t b;
        mgw_peer_event_encode(&b, 0, &(mgw_peer_event_t){.standin = f->standin, .status = st});
        if (mgtr_msg_send(s->t, pc->ep, &b))
            pc->broken = 1; /* the next notice makes a new one */
        mgw_buf_free(&b);
        pthread_mutex_unlock(&pc->lock);
    }
    clReleaseEvent(f->e);
    sodium_memzero(f->key, sizeof f->key);
    free(f->addr);
    free(f);
    pthread_mutex_lock(&s->lock);
    s->nsending--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    mgpx_session_unref(s);
    return NULL;
}

int mgpx_op_event_forward(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_event_forward_t m;
    int rc = MGPX_NOREPLY;
    if (mgw_event_forward_decode(c, &m)) {
        mgw_event_forward_free(&m);
        return MGPX_BAD;
    }
    mgpx_obj_t *o = mgpx_map_get(&s->map, m.event, MGW_K_EVENT);
    fwd_t *f = NULL;
    if (!o)
        rc = CL_INVALID_EVENT; /* released already: the client sets the stand-in */
    else if (!s->dry && (!(f = calloc(1, sizeof *f)) || !(f->addr = strdup(m.addr ? m.addr : ""))))
        rc = CL_OUT_OF_HOST_MEMORY;
    if (f && rc == MGPX_NOREPLY) {
        pthread_t th;
        pthread_attr_t a;
        f->s = s;
        f->e = o->h;
        clRetainEvent(f->e);
        f->standin = m.standin;
        memcpy(f->sid, m.sid, MGW_TOKEN);
        memcpy(f->key, m.key, MGW_TOKEN);
        atomic_fetch_add(&s->refs, 1);
        pthread_mutex_lock(&s->lock);
        s->nsending++;
        pthread_mutex_unlock(&s->lock);
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &a, fwd_main, f)) {
            pthread_mutex_lock(&s->lock);
            s->nsending--;
            pthread_mutex_unlock(&s->lock);
            atomic_fetch_sub(&s->refs, 1);
            clReleaseEvent(f->e);
            rc = CL_OUT_OF_RESOURCES;
        } else {
            f = NULL;
        }
        pthread_attr_destroy(&a);
    }
    if (f) {
        free(f->addr);
        free(f);
    }
    sodium_memzero(m.key, sizeof m.key);
    mgw_event_forward_free(&m);
    return rc;
}

int mgpx_op_peer_open(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_peer_open_t m;
    mgw_peer_open_reply_t rep;
    if (mgw_peer_open_decode(c, &m))
        return MGPX_BAD;
    pthread_mutex_lock(&s->lock);
    if (!s->peer_on) {
        randombytes_buf(s->peer_sid, MGW_TOKEN);
        randombytes_buf(s->peer_key, MGW_TOKEN);
        s->peer_on = 1;
    }
    memcpy(rep.sid, s->peer_sid, MGW_TOKEN);
    memcpy(rep.key, s->peer_key, MGW_TOKEN);
    pthread_mutex_unlock(&s->lock);
    mgw_peer_open_reply_put(r, &rep);
    sodium_memzero(&rep, sizeof rep);
    return CL_SUCCESS;
}

static void park_add(mgpx_session_t *s, mgtr_ep_t *ep, uint64_t xfer, size_t size, cl_int status)
{
    mgpx_park_t *p = calloc(1, sizeof *p);
    if (!p) {
        if (ep)
            s->t->close(ep);
        return;
    }
    p->xfer = xfer;
    p->size = size;
    p->status = status;
    p->ep = ep;
    p->next = s->parked;
    s->parked = p;
    pthread_cond_broadcast(&s->cond);
}

int mgpx_op_peer_cancel(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_peer_cancel_t m;
    if (mgw_peer_cancel_decode(c, &m))
        return MGPX_BAD;
    if (s->dry)
        return MGPX_NOREPLY;
    pthread_mutex_lock(&s->lock);
    mgpx_park_t *rt = refused_take(s, m.xfer); /* no receive waits for it either */
    if (rt)
        free(rt);
    else
        park_add(s, NULL, m.xfer, 0, m.status < 0 ? m.status : CL_DEVICE_NOT_AVAILABLE);
    pthread_mutex_unlock(&s->lock);
    return MGPX_NOREPLY;
}

/* A refused receive's marker for xfer (taken from the list), or NULL. */
static mgpx_park_t *refused_take(mgpx_session_t *s, uint64_t xfer)
{
    for (mgpx_park_t **pp = &s->parked; *pp; pp = &(*pp)->next)
        if ((*pp)->xfer == xfer && (*pp)->refused) {
            mgpx_park_t *p = *pp;
            *pp = p->next;
            return p;
        }
    return NULL;
}

void mgpx_peer_refused(mgpx_session_t *s, uint64_t xfer)
{
    pthread_mutex_lock(&s->lock);
    park_add(s, NULL, xfer, 0, CL_INVALID_OPERATION);
    if (s->parked && s->parked->xfer == xfer && !s->parked->ep)
        s->parked->refused = 1;
    pthread_mutex_unlock(&s->lock);
}

void mgpx_peer_park(mgpx_session_t *s, mgtr_ep_t *ep, const mgw_peer_xfer_t *x)
{
    mgpx_park_t *r = refused_take(s, x->xfer);
    if (s->bulk_quit || r) { /* no receive will read it: the sender fails at once */
        free(r);
        s->t->close(ep);
        return;
    }
    park_add(s, ep, x->xfer, x->size, x->status < 0 ? x->status : CL_SUCCESS);
}

/* Waits for the connection (or cancel) of j's transfer; NULL with j->err set
 * when the session ends first or the sender failed. */
static mgpx_park_t *park_take(mgpx_session_t *s, mgpx_job_t *j)
{
    mgpx_park_t *p = NULL;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        for (mgpx_park_t **pp = &s->parked; *pp; pp = &(*pp)->next)
            if ((*pp)->xfer == j->xfer && !(*pp)->refused) {
                p = *pp;
                *pp = p->next;
                break;
            }
        if (p || s->bulk_quit)
            break;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&s->cond, &s->lock, &until);
    }
    pthread_mutex_unlock(&s->lock);
    if (!p && !j->err)
        j->err = CL_DEVICE_NOT_AVAILABLE;
    if (p && p->status && !j->err)
        j->err = p->status;
    return p;
}

static void park_free(mgpx_session_t *s, mgpx_park_t *p)
{
    if (p && p->ep)
        s->t->close(p->ep);
    free(p);
}

/* Receives into the mapped destination range; the gate is the bulk
 * thread's (bulk_main frees the job). */
int mgpx_peer_recv_run(mgpx_session_t *s, mgpx_job_t *j)
{
    mgpx_job_wait(j);
    mgpx_park_t *p = park_take(s, j);
    if (!j->err && p->size != j->size)
        j->err = CL_INVALID_VALUE; /* the two ends disagree */
    void *dst = NULL;
    cl_int err = CL_SUCCESS;
    int rect = j->reg[0] != 0; /* packed on the way: received whole, then written as a rect */
    if (!j->err && j->size && rect) {
        if (!(dst = malloc(j->size)))
            j->err = CL_OUT_OF_HOST_MEMORY;
    } else if (!j->err && j->size) {
        dst = clEnqueueMapBuffer(j->tq, j->mem, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, j->off,
                                 j->size, 0, NULL, NULL, &err);
        if (!dst)
            j->err = err ? err : CL_MAP_FAILURE;
    }
    for (size_t o = 0; dst && !j->err && o < j->size; o += PEER_PIECE) {
        size_t n = j->size - o < PEER_PIECE ? j->size - o : PEER_PIECE;
        if (s->t->recv(p->ep, (char *)dst + o, n)) {
            mgpx_slog(s, "session %u (%s): peer transfer %llu broken after %zu of %zu bytes",
                      s->num, s->peer, (unsigned long long)j->xfer, o, j->size);
            j->err = CL_DEVICE_NOT_AVAILABLE;
            break;
        }
        s->peer_in += n;
    }
    if (dst && rect) {
        size_t ho[3] = {0, 0, 0};
        if (!j->err)
            j->err =
                clEnqueueWriteBufferRect(j->tq, j->mem, CL_TRUE, j->bo, ho, j->reg, j->brp, j->bsp,
                                         j->reg[0], j->reg[0] * j->reg[1], dst, 0, NULL, NULL);
        free(dst);
    } else if (dst) {
        cl_event e = NULL;
        err = clEnqueueUnmapMemObject(j->tq, j->mem, dst, 0, NULL, &e);
        if (!err)
            err = clWaitForEvents(1, &e);
        if (e)
            clReleaseEvent(e);
        if (err && !j->err)
            j->err = err;
    }
    park_free(s, p);
    return 0;
}

/* The send: connect, handshake with the receiving session's key, PEER_XFER,
 * the bytes.  j->err gets any failure. */
static void peer_send(mgpx_session_t *s, mgpx_job_t *j, const void *src)
{
    pthread_mutex_lock(&s->lock);
    int quit = s->bulk_quit;
    pthread_mutex_unlock(&s->lock);
    mgtr_ep_t *ep = quit ? NULL : peer_connect(s, j->paddr, j->psid, j->pkey);
    if (!ep) {
        j->err = CL_DEVICE_NOT_AVAILABLE;
        return;
    }
    pthread_mutex_lock(&s->lock);
    j->pep = ep;
    pthread_mutex_unlock(&s->lock);
    mgw_buf_t b;
    mgw_peer_xfer_encode(&b, 0,
                         &(mgw_peer_xfer_t){.xfer = j->xfer, .size = j->size, .status = j->err});
    if (mgtr_msg_send(s->t, ep, &b))
        j->err = CL_DEVICE_NOT_AVAILABLE;
    mgw_buf_free(&b);
    for (size_t o = 0; !j->err && o < j->size; o += PEER_PIECE) {
        size_t n = j->size - o < PEER_PIECE ? j->size - o : PEER_PIECE;
        if (s->t->send(ep, (const char *)src + o, n)) {
            j->err = CL_DEVICE_NOT_AVAILABLE;
            break;
        }
        s->peer_out += n;
    }
    pthread_mutex_lock(&s->lock);
    j->pep = NULL;
    pthread_mutex_unlock(&s->lock);
    s->t->close(ep);
}

static void *send_main(void *arg)
{
    mgpx_job_t *j = arg;
    mgpx_session_t *s = j->s;
    void *src = NULL;
    cl_int err = CL_SUCCESS;
    /* the buffer's last command here, finished or failed: the bytes are what
       they are (as on one device, where a command that did not wait for a
       failed one runs); the receiving side has the command's own wait list */
    for (cl_uint i = 0; i <= j->nwaits; i++) {
        cl_event e = i < j->nwaits ? j->waits[i] : j->m1;
        if (e)
            clWaitForEvents(1, &e);
    }
    int rect = j->reg[0] != 0; /* packed on the way */
    if (!j->err && j->size && rect) {
        size_t ho[3] = {0, 0, 0};
        if (!(src = malloc(j->size)))
            j->err = CL_OUT_OF_HOST_MEMORY;
        else if ((err = clEnqueueReadBufferRect(j->tq, j->mem, CL_TRUE, j->bo, ho, j->reg, j->brp,
                                                j->bsp, j->reg[0], j->reg[0] * j->reg[1], src, 0,
                                                NULL, NULL)))
            j->err = err;
    } else if (!j->err && j->size) {
        src = clEnqueueMapBuffer(j->tq, j->mem, CL_TRUE, CL_MAP_READ, j->off, j->size, 0, NULL,
                                 NULL, &err);
        if (!src)
            j->err = err ? err : CL_MAP_FAILURE;
    }
    /* a failure before the connection is told to the receiver in PEER_XFER */
    peer_send(s, j, src);
    if (src && rect) {
        free(src);
    } else if (src) {
        cl_event e = NULL;
        err = clEnqueueUnmapMemObject(j->tq, j->mem, src, 0, NULL, &e);
        if (!err)
            err = clWaitForEvents(1, &e);
        if (e)
            clReleaseEvent(e);
        if (err && !j->err)
            j->err = err;
    }
    pthread_mutex_lock(&s->lock);
    for (mgpx_job_t **pp = &s->sending; *pp; pp = &(*pp)->pnext)
        if (*pp == j) {
            *pp = j->pnext;
            break;
        }
    s->nsending--;
    s->jobs_open--;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    mgpx_job_free(j);
    mgpx_session_unref(s);
    return NULL;
}

void mgpx_peer_send_start(mgpx_session_t *s, mgpx_job_t *j)
{
    pthread_t th;
    pthread_attr_t a;
    j->s = s;
    atomic_fetch_add(&s->refs, 1);
    pthread_mutex_lock(&s->lock);
    j->pnext = s->sending;
    s->sending = j;
    s->nsending++;
    s->jobs_open++; /* a FINISH does not wait inline while it runs (see FINISH) */
    pthread_mutex_unlock(&s->lock);
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&th, &a, send_main, j);
    pthread_attr_destroy(&a);
    if (rc) {
        pthread_mutex_lock(&s->lock);
        s->sending = j->pnext;
        s->nsending--;
        s->jobs_open--;
        pthread_mutex_unlock(&s->lock);
        j->err = CL_OUT_OF_RESOURCES;
        mgpx_job_free(j);
        mgpx_session_unref(s);
    }
}

void mgpx_peer_session_end(mgpx_session_t *s)
{
    pthread_mutex_lock(&s->lock);
    while (s->nsending) {
        for (mgpx_job_t *j = s->sending; j; j = j->pnext)
            if (j->pep)
                s->t->shutdown(j->pep);
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += 1;
        pthread_cond_timedwait(&s->cond, &s->lock, &until);
    }
    mgpx_park_t *p = s->parked;
    s->parked = NULL;
    mgpx_ue_t *u = s->ues;
    s->ues = NULL;
    mgpx_pconn_t *pc = s->pconns;
    s->pconns = NULL;
    while (s->early) {
        mgpx_early_t *x = s->early;
        s->early = x->next;
        free(x);
    }
    pthread_mutex_unlock(&s->lock);
    while (pc) {
        mgpx_pconn_t *n = pc->next;
        s->t->close(pc->ep);
        pthread_mutex_destroy(&pc->lock);
        free(pc->addr);
        free(pc);
        pc = n;
    }
    while (u) {
        mgpx_ue_t *n = u->next;
        clReleaseEvent(u->e);
        free(u);
        u = n;
    }
    while (p) {
        mgpx_park_t *n = p->next;
        park_free(s, p);
        p = n;
    }
    if (s->peer_in || s->peer_out || s->fwd_direct || s->fwd_late)
        mgpx_log("session %u (%s): peer lane moved %llu bytes in, %llu out; stand-ins set by a "
                 "peer first %lu, after the client %lu",
                 s->num, s->peer, (unsigned long long)s->peer_in, (unsigned long long)s->peer_out,
                 s->fwd_direct, s->fwd_late);
}
