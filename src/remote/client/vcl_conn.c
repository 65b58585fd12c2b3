/* libmpigpu-vcl.so: connections to the proxies named by MPIGPU_VCL_SERVERS,
 * their receiver threads, requests and replies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "mgparam.h"
#include "vcl.h"

pthread_mutex_t mgvcl_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t mgvcl_cond = PTHREAD_COND_INITIALIZER;
atomic_ulong mgvcl_msgs, mgvcl_bytes_out, mgvcl_bytes_in;
atomic_ulong mgvcl_cma_out, mgvcl_cma_in;

/* A request waiting for its reply (on the waiter's stack). */
struct pend {
    struct pend *next;
    uint32_t seq;
    int done;
    cl_int rc;
    uint8_t *payload;
    size_t len;
};

static mgvcl_conn_t **conns;
static int nconns;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* One ID space for every proxy: an object of a context of several proxies
 * has the same ID on each. */
static atomic_uint_fast64_t next_id = 1;

uint64_t mgvcl_id(mgvcl_conn_t *c)
{
    (void)c;
    return atomic_fetch_add(&next_id, 1);
}

/* MPIGPU_VCL_TIMEOUT, read by init_once before any connection. */
static int vcl_timeout_s;

/* Sends the event releases gathered so far (the heartbeat calls it every
 * second): one message for up to MGVCL_REL_BATCH events, so that a launch is
 * not followed by a message of its own that the proxy's session thread
 * handles before the next command. */
static void release_flush(mgvcl_conn_t *c, uint64_t id)
{
    uint64_t ids[MGVCL_REL_BATCH];
    int n = 0;
    pthread_mutex_lock(&c->rel_lock);
    if (id)
        c->rel[c->nrel++] = id;
    if (!id || c->nrel == MGVCL_REL_BATCH) {
        n = c->nrel;
        memcpy(ids, c->rel, n * sizeof *ids);
        c->nrel = 0;
    }
    pthread_mutex_unlock(&c->rel_lock);
    if (!n)
        return;
    mgw_buf_t b;
    mgw_release_events_encode(&b, 0,
                              &(mgw_release_events_t){.events = {.n = (uint32_t)n, .v = ids}});
    mgvcl_send(c, &b);
    mgw_buf_free(&b);
}

/* While the client waits for something, a proxy that stays silent is
 * pinged every 2 s, and given up after MPIGPU_VCL_TIMEOUT seconds: this
 * catches a hung proxy, which TCP keepalive cannot see.  The proxy answers
 * pings from its session thread; while that thread waits in a native
 * clFinish (FINISH), the session's bulk thread sends an empty EVENTS_DONE
 * every second instead. */
static void *heartbeat_main(void *arg)
{
    mgvcl_conn_t *c = arg;
    long long last_ping = 0, busy_since = 0;
    for (;;) {
        sleep(1);
        pthread_mutex_lock(&mgvcl_lock);
        int dead = atomic_load_explicit(&c->dead, memory_order_relaxed),
            busy = c->nev > 0 || c->pend != NULL;
        pthread_mutex_unlock(&mgvcl_lock);
        if (dead)
            return NULL;
        release_flush(c, 0);
        long long t = mgtr_now_ms(), rx = atomic_load(&c->last_rx);
        if (!busy) {
            busy_since = 0;
            continue;
        }
        if (!busy_since)
            busy_since = t; /* silence while nothing was asked does not count */
        long long quiet = t - (rx > busy_since ? rx : busy_since);
        if (quiet > vcl_timeout_s * 1000LL) {
            MGLOG_ERROR(MGLOG_VCL, "%s: no answer from the proxy for %lld s", c->addr,
                        quiet / 1000);
            mgvcl_conn_fail(c);
            return NULL;
        }
        if (quiet > 2000 && t - last_ping > 2000) {
            mgw_buf_t b;
            mgw_ping_encode(&b, 0, &(mgw_ping_t){});
            mgvcl_send(c, &b); /* its REPLY has no waiter and only counts as traffic */
            mgw_buf_free(&b);
            last_ping = t;
        }
    }
}

static void stats_print(void)
{
    /* Asked for by MPIGPU_VCL_STATS=1, whatever the log level. */
    mglog_write(MGLOG_LEVEL_INFO, MGLOG_VCL,
                "messages=%lu bytes_out=%lu bytes_in=%lu cma_out=%lu cma_in=%lu",
                (unsigned long)mgvcl_msgs, (unsigned long)mgvcl_bytes_out,
                (unsigned long)mgvcl_bytes_in, (unsigned long)mgvcl_cma_out,
                (unsigned long)mgvcl_cma_in);
}

static int send_msg(mgvcl_conn_t *c, mgtr_ep_t *ep, mgw_buf_t *b)
{
    if (mgw_buf_finish(b) || c->t->send(ep, b->p, b->len))
        return -1;
    mgvcl_msgs++;
    mgvcl_bytes_out += b->len;
    return 0;
}

cl_int mgvcl_send(mgvcl_conn_t *c, mgw_buf_t *b)
{
    int rc;
    pthread_mutex_lock(&c->cmd_lock);
    if (b->len >= MGW_HDR_SIZE) {
        uint32_t seq = ++c->seq;
        for (int i = 0; i < 4; i++)
            b->p[12 + i] = (uint8_t)(seq >> (8 * i));
    }
    rc = atomic_load_explicit(&c->dead, memory_order_relaxed) ? -1 : send_msg(c, c->cmd, b);
    pthread_mutex_unlock(&c->cmd_lock);
    return rc ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS;
}

static int conn_stopped(void *arg)
{
    mgvcl_conn_t *c = arg;
    return atomic_load_explicit(&c->dead, memory_order_relaxed);
}

/* A stripe's sender thread (several stripes): sends the chunks posted to
 * it, in order.  It lives as long as the connection (never freed). */
static void *tx_main(void *arg)
{
    mgvcl_stripe_t *sp = arg;
    mgvcl_conn_t *c = sp->c;
    for (;;) {
        pthread_mutex_lock(&c->tx_lock);
        while (!sp->head)
            pthread_cond_wait(&c->tx_cond, &c->tx_lock);
        mgvcl_tx_t *t = sp->head;
        if (!(sp->head = t->next))
            sp->tail = &sp->head;
        pthread_mutex_unlock(&c->tx_lock);
        int bad = conn_stopped(c) || sp->bk.ops->send(&sp->bk, &t->ch, t->p);
        if (bad)
            mgvcl_conn_fail(c);
        pthread_mutex_lock(&c->tx_lock);
        if (bad)
            *t->failed = 1;
        --*t->left;
        pthread_cond_broadcast(&c->tx_cond);
        pthread_mutex_unlock(&c->tx_lock);
    }
    return NULL;
}

/* Several stripes: the chunks go to the stripes' sender threads, chunk k
 * of all write chunks to stripe k mod nstripes (the proxy expects them
 * there), and the call returns when all are sent.  bulk_lock held. */
static cl_int send_striped(mgvcl_conn_t *c, uint64_t xfer, const char *p, size_t n)
{
    size_t nchunks = n ? (n + MGW_CHUNK - 1) / MGW_CHUNK : 1, left = nchunks;
    int failed = 0;
    mgvcl_tx_t *t = calloc(nchunks, sizeof *t);
    if (!t)
        return CL_OUT_OF_HOST_MEMORY; /* the command went: the lane is out of step */
    pthread_mutex_lock(&c->tx_lock);
    for (size_t i = 0; i < nchunks; i++) {
        size_t off = i * MGW_CHUNK, k = n - off < MGW_CHUNK ? n - off : MGW_CHUNK;
        mgvcl_stripe_t *sp = &c->stripe[c->wnext++ % c->nstripes];
        t[i].ch =
            (mgtr_chunk_t){.xfer = xfer, .off = off, .n = k, .last = i + 1 == nchunks, .slot = -1};
        t[i].p = p + off;
        t[i].left = &left;
        t[i].failed = &failed;
        *sp->tail = &t[i];
        sp->tail = &t[i].next;
        mgvcl_msgs++;
        mgvcl_bytes_out += MGW_HDR_SIZE + MGTR_BULK_PREFIX + k;
    }
    pthread_cond_broadcast(&c->tx_cond);
    while (left)
        pthread_cond_wait(&c->tx_cond, &c->tx_lock);
    pthread_mutex_unlock(&c->tx_lock);
    free(t);
    return failed ? CL_DEVICE_NOT_AVAILABLE : CL_SUCCESS;
}

cl_int mgvcl_send_bulk(mgvcl_conn_t *c, mgw_buf_t *b, uint64_t xfer, const void *p, size_t n)
{
    cl_int rc;
    size_t off = 0;
    mgtr_bulk_t *bk = &c->stripe[0].bk;
    pthread_mutex_lock(&c->bulk_lock);
    rc = mgvcl_send(c, b);
    if (rc == CL_SUCCESS && c->nstripes > 1) {
        rc = send_striped(c, xfer, p, n);
        if (rc == CL_OUT_OF_HOST_MEMORY)
            mgvcl_conn_fail(c);
        pthread_mutex_unlock(&c->bulk_lock);
        return rc;
    }
    while (rc == CL_SUCCESS) {
        size_t k = n - off < MGW_CHUNK ? n - off : MGW_CHUNK;
        mgtr_chunk_t ch = {.slot = -1};
        if (k && bk->ops->acquire(bk, &ch)) {
            rc = CL_DEVICE_NOT_AVAILABLE;
            break;
        }
        ch.xfer = xfer;
        ch.off = off;
        ch.n = k;
        ch.last = off + k >= n;
        if (bk->ops->send(bk, &ch, (const char *)p + off))
            rc = CL_DEVICE_NOT_AVAILABLE;
        mgvcl_msgs++;
        mgvcl_bytes_out += MGW_HDR_SIZE + MGTR_BULK_PREFIX + k;
        off += k;
        if (off >= n)
            break;
    }
    pthread_mutex_unlock(&c->bulk_lock);
    return rc;
}

cl_int mgvcl_call(mgvcl_conn_t *c, mgw_buf_t *b, uint8_t **reply, size_t *len)
{
    struct pend p = {0};
    pthread_mutex_lock(&c->cmd_lock);
    p.seq = ++c->seq;
    for (int i = 0; i < 4; i++)
        b->p[12 + i] = (uint8_t)(p.seq >> (8 * i));
    pthread_mutex_lock(&mgvcl_lock);
    p.next = c->pend;
    c->pend = &p;
    pthread_mutex_unlock(&mgvcl_lock);
    int bad = atomic_load_explicit(&c->dead, memory_order_relaxed) || send_msg(c, c->cmd, b);
    pthread_mutex_unlock(&c->cmd_lock);
    pthread_mutex_lock(&mgvcl_lock);
    MGTR_WAIT_WHILE(!p.done && !atomic_load_explicit(&c->dead, memory_order_relaxed) && !bad,
                    &mgvcl_lock, &mgvcl_cond);
    for (struct pend **pp = &c->pend; *pp; pp = &(*pp)->next)
        if (*pp == &p) {
            *pp = p.next;
            break;
        }
    pthread_mutex_unlock(&mgvcl_lock);
    if (!p.done) {
        free(p.payload);
        if (bad)
            mgvcl_conn_fail(c); /* a failed send: the proxy is gone */
        return CL_DEVICE_NOT_AVAILABLE;
    }
    if (reply)
        *reply = p.payload;
    else
        free(p.payload);
    if (len)
        *len = p.len;
    return p.rc;
}

static void reply_done(mgvcl_conn_t *c, uint32_t seq, cl_int rc, const uint8_t *p, size_t n)
{
    pthread_mutex_lock(&mgvcl_lock);
    for (struct pend *q = c->pend; q; q = q->next)
        if (q->seq == seq && !q->done) {
            q->rc = rc;
            q->payload = malloc(n ? n : 1);
            if (q->payload && n)
                memcpy(q->payload, p, n);
            q->len = n;
            q->done = 1;
            pthread_cond_broadcast(&mgvcl_cond);
            break;
        }
    pthread_mutex_unlock(&mgvcl_lock);
}

/* A completion from the proxy (EVENT_DONE, or one of EVENTS_DONE). */
static void event_done(mgvcl_conn_t *c, uint64_t id, cl_int st)
{
    pthread_mutex_lock(&mgvcl_lock);
    cl_event e = mgvcl_event_find(c, id);
    if (e && e->data && st >= 0)
        e = NULL; /* a read completes when its data is in */
    if (e && e->data && e->busy) {
        e->failst = st; /* a stripe is copying into it: completed when done */
        e = NULL;
    } else if (e && e->data) {
        e->rdone = 1;
    }
    if (e)
        atomic_fetch_add(&e->refs, 1);
    pthread_mutex_unlock(&mgvcl_lock);
    if (e) {
        mgvcl_event_complete(e, st);
        mgvcl_event_unref(e);
    }
}

static void *rx_cmd_main(void *arg)
{
    mgvcl_conn_t *c = arg;
    uint8_t *buf = NULL;
    size_t cap = 0;
    mgw_hdr_t h;
    while (mgtr_msg_recv(c->t, c->cmd, &h, &buf, &cap, MGW_MSG_MAX) == 0) {
        mgw_cur_t cur;
        atomic_store(&c->last_rx, mgtr_now_ms());
        mgvcl_bytes_in += MGW_HDR_SIZE + h.length;
        mgw_cur_init(&cur, buf, h.length);
        if (h.op == MGW_OP_REPLY) {
            cl_int rc = mgw_cur_i32(&cur); /* then the op's reply fields */
            if (!cur.err)
                reply_done(c, h.seq, rc, buf + cur.off, h.length - cur.off);
        } else if (h.op == MGW_OP_EVENT_DONE) {
            mgw_event_done_t m;
            (void)mgw_event_done_decode(&cur, &m); /* a longer one is read as before */
            if (!cur.err)
                event_done(c, m.event, m.status);
        } else if (h.op == MGW_OP_EVENTS_DONE) {
            mgw_events_done_t m;
            mgw_event_status_t d;
            if (!mgw_events_done_decode(&cur, &m))
                while (mgw_event_status_next(&m.done, &d) == 0)
                    event_done(c, d.event, d.status);
        } else if (h.op == MGW_OP_ERROR) {
            mgw_error_t m;
            (void)mgw_error_decode(&cur, &m); /* what could be read is reported */
            cl_int rc = m.rc;
            char *why = (char *)m.why; /* decode's copy: ours to free */
            /* The caller gets rc; only this line has the proxy's reason. */
            MGLOG_WARN(MGLOG_VCL, "%s: proxy reports error %d: %s", c->addr, rc, why ? why : "?");
            free(why);
            reply_done(c, h.seq, rc, NULL, 0);
        }
    }
    free(buf);
    mgvcl_conn_fail(c);
    return NULL;
}

/* Accepts chunk ch of read e (under mgvcl_lock): inside the read, no
 * more bytes than the read has (or than its end chunk announced), one end
 * chunk.  An end chunk of n bytes at off says the read has off + n bytes in
 * all; of 0 bytes, that off bytes came before it (on any stripe). */
static int chunk_accept(cl_event e, const mgtr_chunk_t *ch)
{
    size_t n = ch->n;
    if (!e->data || e->rdone || ch->off > e->dsize || n > e->dsize - ch->off ||
        n > e->dsize - e->claimed || (e->ended && n > e->expect - e->claimed))
        return 0;
    if (ch->last) {
        size_t all = (size_t)ch->off + n;
        if (e->ended || e->claimed + n > all)
            return 0;
        e->ended = 1;
        e->expect = all;
        e->est = ch->status;
    }
    e->claimed += n;
    e->busy++;
    return 1;
}

/* Read data of one stripe: straight into the destination (or a packed
 * temp for rects); on the shm lane, one copy out of the slot.  A read
 * completes when its end chunk has come and all the bytes it announced
 * are copied, whichever stripe brings the last of them. */
static void *rx_bulk_main(void *arg)
{
    mgvcl_stripe_t *sp = arg;
    mgvcl_conn_t *c = sp->c;
    mgtr_bulk_t *bk = &sp->bk;
    for (;;) {
        mgtr_chunk_t ch;
        if (bk->ops->recv_hdr(bk, &ch))
            break;
        size_t n = ch.n, off = ch.off;
        atomic_store(&c->last_rx, mgtr_now_ms());
        mgvcl_bytes_in += MGW_HDR_SIZE + MGTR_BULK_PREFIX + n;
        pthread_mutex_lock(&mgvcl_lock);
        cl_event e = mgvcl_event_find(c, ch.xfer);
        int ok = e && chunk_accept(e, &ch);
        /* The end of a read that failed, whose failure the command lane
           reported first (a FINISH or a callback): its event is gone or
           done, and the lanes do not keep each other's order. */
        int late = !ok && n == 0 && ch.last && ch.status < 0 && (!e || (e->data && e->rdone));
        if (ok)
            atomic_fetch_add(&e->refs, 1);
        pthread_mutex_unlock(&mgvcl_lock);
        if (late) {
            int bad = bk->ops->recv_data(bk, &ch, NULL);
            bk->ops->release(bk, &ch);
            if (bad)
                break;
            continue;
        }
        if (!ok && !conn_stopped(c)) {
            MGLOG_ERROR(MGLOG_VCL,
                        "%s: bulk chunk of transfer %llu at offset %zu (%zu bytes) "
                        "matches no read in progress",
                        c->addr, (unsigned long long)ch.xfer, off, n);
        }
        if (!ok) {
            bk->ops->release(bk, &ch);
            break; /* out of step with the proxy, or failed already */
        }
        int bad = bk->ops->recv_data(bk, &ch, n ? e->dst + off : NULL);
        if (!bad && n && ch.p != e->dst + off)
            memcpy(e->dst + off, ch.p, n);
        bk->ops->release(bk, &ch);
        cl_int fin = 1; /* > 0: not complete yet */
        pthread_mutex_lock(&mgvcl_lock);
        e->busy--;
        e->got += n;
        if (bad && !e->failst)
            e->failst = CL_DEVICE_NOT_AVAILABLE;
        if (!e->rdone && !e->busy) {
            if (e->failst < 0)
                fin = e->failst;
            else if (e->ended && e->got == e->expect)
                fin = e->est < 0 ? e->est : CL_COMPLETE;
            e->rdone = fin <= 0;
        }
        pthread_mutex_unlock(&mgvcl_lock);
        if (fin == CL_COMPLETE && e->host) { /* unpack a rect */
            for (size_t z = 0; z < e->reg[2]; z++)
                for (size_t y = 0; y < e->reg[1]; y++)
                    memcpy(e->host + z * e->hsp + y * e->hrp,
                           e->dst + (z * e->reg[1] + y) * e->reg[0], e->reg[0]);
        }
        if (fin <= 0)
            mgvcl_event_complete(e, fin);
        mgvcl_event_unref(e);
        if (bad)
            break; /* the lane broke */
    }
    mgvcl_conn_fail(c);
    return NULL;
}

/* A request on the command lane before the receiver threads run (its
 * reply at most max bytes): its reply code, with cur over the reply's fields
 * after it, or 1 when the lane broke. */
static int early_call(mgvcl_conn_t *c, mgw_buf_t *b, uint8_t **rep, size_t *cap, uint32_t max,
                      mgw_cur_t *cur)
{
    mgw_hdr_t h;
    mgvcl_msgs++;
    mgvcl_bytes_out += MGW_HDR_SIZE;
    if (mgtr_msg_send(c->t, c->cmd, b) || mgtr_msg_recv(c->t, c->cmd, &h, rep, cap, max) ||
        h.op != MGW_OP_REPLY)
        return 1;
    mgw_cur_init(cur, *rep, h.length);
    int32_t rc = mgw_cur_i32(cur);
    return cur->err ? 1 : rc;
}

/* MPIGPU_VCL_SHM is not 0 and the proxy is on this host: the shm lane will
 * be tried. */
static int shm_wanted(mgvcl_conn_t *c)
{
    return mgparam_read_or_default(MGPARAM_VCL_SHM, MGLOG_VCL).num && c->t->is_local &&
           c->t->is_local(c->cmd);
}

/* The shared-memory bulk lane, with a proxy on this host (unless
 * MPIGPU_VCL_SHM=0): the proxy makes a segment only this user can open; a
 * client that cannot map it stays on the stream lane.  0, or -1 when the
 * command lane broke. */
static int shm_setup(mgvcl_conn_t *c)
{
    uint8_t *rep = NULL;
    size_t cap = 0;
    mgw_cur_t cur;
    mgw_buf_t b;
    mgw_shm_open_reply_t m;
    unsigned char *base = NULL;
    int rc = 0, r;
    if (!shm_wanted(c))
        return 0;
    mgw_shm_open_encode(&b, 2, &(mgw_shm_open_t){});
    r = early_call(c, &b, &rep, &cap, 4096, &cur);
    mgw_buf_free(&b);
    if (r == 1)
        rc = -1;
    if (r)
        goto fn_exit;
    int mapped = !mgw_shm_open_reply_decode(&cur, &m) && !strncmp(m.name, "/mpigpu-", 8) &&
                 !mgtr_shm_attach(m.name, &base);
    mgw_shm_open_reply_free(&m);
    mgw_shm_ready_encode(&b, 3, &(mgw_shm_ready_t){.mapped = (uint32_t)mapped});
    r = early_call(c, &b, &rep, &cap, 4096, &cur);
    mgw_buf_free(&b);
    if (r == 0 && mapped) {
        mgtr_bulk_use_shm(&c->stripe[0].bk, base, 0);
        base = NULL;
    } else if (r == 1) {
        rc = -1;
    }
    if (base)
        munmap(base, MGTR_SHM_SIZE);
fn_exit:
    free(rep);
    return rc;
}

/* Yama's ptrace_scope: 0 classic (same user may attach), 1 restricted
 * (descendants, or a ptracer named by prctl), 2-3 admin only or none; -1
 * without Yama (same as 0). */
static int yama_scope(void)
{
    int v = -1;
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
    if (f) {
        if (fscanf(f, "%d", &v) != 1)
            v = 3;
        fclose(f);
    }
    return v;
}

/* The one-copy lane, once the shm lane runs (unless MPIGPU_VCL_CMA=0): the
 * proxy may attach to this process and copy plain writes and reads itself.
 * The proxy's pid is taken only if the kernel says that process holds the
 * proxy's end of the command connection; under Yama scope 1 this process
 * names it as its ptracer (one per process: a second local proxy gets no
 * one-copy lane).  Anything that fails leaves the shm lane.  0, or -1 when
 * the command lane broke. */
static int cma_setup(mgvcl_conn_t *c)
{
    static pthread_mutex_t tracer_lock = PTHREAD_MUTEX_INITIALIZER;
    static long tracer;
    int want = (int)mgparam_read_or_default(MGPARAM_VCL_CMA, MGLOG_VCL).num;
    uint8_t *rep = NULL;
    size_t cap = 0;
    mgw_cur_t cur;
    mgw_buf_t b;
    mgw_cma_open_reply_t m;
    int rc = 0, r, scope = yama_scope();
    if (!want || c->stripe[0].bk.ops != &mgtr_bulk_shm || !c->t->peer_is_pid || scope >= 2)
        return 0;
    mgw_cma_open_encode(&b, 4, &(mgw_cma_open_t){});
    r = early_call(c, &b, &rep, &cap, 4096, &cur);
    mgw_buf_free(&b);
    if (r)
        goto fn_exit; /* 1: the lane broke (rc set below); else not offered */
    long pid = 0;
    if (mgw_cma_open_reply_decode(&cur, &m) || !c->t->peer_is_pid(c->cmd, pid = (long)m.pid))
        goto fn_exit; /* not the process this connection leads to */
    memcpy(c->cma_nonce, m.nonce, MGTR_CMA_NONCE);
    if (scope == 1) {
        pthread_mutex_lock(&tracer_lock);
        int ok =
            tracer == pid || (!tracer && prctl(PR_SET_PTRACER, (unsigned long)pid, 0, 0, 0) == 0);
        if (ok)
            tracer = pid;
        pthread_mutex_unlock(&tracer_lock);
        if (!ok)
            goto fn_exit;
    }
    mgw_cma_ready_encode(
        &b, 5,
        &(mgw_cma_ready_t){.pid = (uint32_t)getpid(), .addr = (uint64_t)(uintptr_t)c->cma_nonce});
    r = early_call(c, &b, &rep, &cap, 4096, &cur);
    mgw_buf_free(&b);
    c->cma = r == 0;
fn_exit:
    if (r == 1)
        rc = -1;
    free(rep);
    return rc;
}

/* The DEVICES reply: each served device and its parameters. */
static void devs_parse(mgvcl_conn_t *c, mgw_cur_t *cur)
{
    mgw_devices_reply_t m;
    mgw_device_t dm;
    if (mgw_devices_reply_decode(cur, &m) ||
        !(c->devs = calloc(m.devices.n ? m.devices.n : 1, sizeof *c->devs)))
        return;
    for (uint32_t d = 0; mgw_device_next(&m.devices, &dm) == 0; d++) {
        struct _cl_device_id *dev = &c->devs[d];
        mgw_dev_param_t pm;
        dev->dispatch = &mgvcl_dispatch;
        dev->conn = c;
        dev->idx = d;
        dev->params = calloc(dm.params.n ? dm.params.n : 1, sizeof *dev->params);
        if (!dev->params)
            return;
        while (mgw_dev_param_next(&dm.params, &pm) == 0) {
            dev_param_t *dp = &dev->params[dev->nparams];
            size_t len = pm.value.n;
            if (!(dp->value = malloc(len ? len : 1)))
                break;
            memcpy(dp->value, pm.value.p, len);
            dp->param = pm.param;
            dp->size = len;
            dev->nparams++;
            if (dp->param == CL_DEVICE_TYPE && len == sizeof(cl_device_type))
                memcpy(&dev->type, dp->value, len);
            /* host memory is not the device's (images are served: vcl_image.c) */
            if (dp->param == CL_DEVICE_HOST_UNIFIED_MEMORY && len == sizeof(cl_bool))
                memset(dp->value, 0, len);
        }
        c->ndev = d + 1;
    }
}

static unsigned vcl_streams = 1; /* MPIGPU_VCL_STREAMS, or by the online CPUs */
static unsigned vcl_crypt;       /* MPIGPU_VCL_ENCRYPT, MPIGPU_VCL_CIPHER (mgtr_crypt_setup) */

/* STREAMS: asks the proxy for want stripes (> 1); the number granted (1 if
 * the proxy says no).  *broken: the command lane broke, or the proxy
 * granted what was not asked. */
static unsigned streams_ask(mgvcl_conn_t *c, unsigned want, int *broken)
{
    uint8_t *rep = NULL;
    size_t cap = 0;
    mgw_buf_t b;
    mgw_cur_t cur;
    mgw_streams_reply_t m;
    unsigned got = 1;
    mgw_streams_encode(&b, 1, &(mgw_streams_t){.want = want});
    int r = early_call(c, &b, &rep, &cap, 4096, &cur);
    mgw_buf_free(&b);
    if (r == 1) {
        *broken = 1;
    } else if (r == 0) {
        if (mgw_streams_reply_decode(&cur, &m) || m.granted < 1 || m.granted > want)
            *broken = 1;
        else
            got = m.granted;
    }
    free(rep);
    return got;
}

static mgvcl_conn_t *conn_open(const char *addr, const mgw_key_t *key)
{
    mgvcl_conn_t *c = calloc(1, sizeof *c);
    uint8_t token[MGW_TOKEN];
    char err[256] = "";
    uint8_t *rep = NULL;
    unsigned i;
    int bad = 0;
    if (!c)
        return NULL;
    c->t = &mgtr_transport_tcp;
    snprintf(c->addr, sizeof c->addr, "%s", addr);
    pthread_mutex_init(&c->cmd_lock, NULL);
    pthread_mutex_init(&c->bulk_lock, NULL);
    pthread_mutex_init(&c->rel_lock, NULL);
    pthread_mutex_init(&c->tx_lock, NULL);
    pthread_cond_init(&c->tx_cond, NULL);
    atomic_init(&c->next_id, 1);
    /* the handshake and the device list within 10 s each, then no limit */
    if (c->t->connect(addr, &c->cmd, err, sizeof err) || c->t->set_timeout(c->cmd, 10000) ||
        mgtr_auth_client(c->t, c->cmd, key, vcl_crypt, MGW_LANE_CMD, 0, token, err, sizeof err)) {
        MGLOG_WARN(MGLOG_VCL, "%s: %s", addr, err);
        goto fn_fail;
    }
    /* a client that will try the shm lane asks for one stripe: that lane
     * runs on stripe 0 alone */
    c->nstripes = vcl_streams > 1 && !shm_wanted(c) ? streams_ask(c, vcl_streams, &bad) : 1;
    if (bad) {
        MGLOG_WARN(MGLOG_VCL, "%s: no answer to the bulk stripe request", addr);
        goto fn_fail;
    }
    for (i = 0; i < c->nstripes; i++) {
        mgvcl_stripe_t *sp = &c->stripe[i];
        sp->c = c;
        sp->tail = &sp->head;
        if (c->t->connect(addr, &sp->ep, err, sizeof err) || c->t->set_timeout(sp->ep, 10000) ||
            mgtr_auth_client(c->t, sp->ep, key, vcl_crypt, MGW_LANE_BULK, i, token, err,
                             sizeof err) ||
            c->t->set_timeout(sp->ep, 0)) {
            MGLOG_WARN(MGLOG_VCL, "%s: %s", addr, err);
            goto fn_fail;
        }
        mgtr_bulk_init(&sp->bk, c->t, sp->ep);
    }
    c->stripe[0].bk.stopped = conn_stopped;
    c->stripe[0].bk.arg = c;
    /* the device list, read here under the handshake's time limit; the
     * receiver threads then wait without one (keepalive finds dead peers) */
    mgw_buf_t b;
    mgw_cur_t cur;
    size_t cap = 0;
    mgw_devices_encode(&b, 1, &(mgw_devices_t){});
    bad = early_call(c, &b, &rep, &cap, MGW_MSG_MAX, &cur) != 0;
    mgw_buf_free(&b);
    if (!bad)
        devs_parse(c, &cur);
    free(rep);
    bad = bad || (c->nstripes == 1 && (shm_setup(c) || cma_setup(c)));
    if (bad || c->t->set_timeout(c->cmd, 0)) {
        MGLOG_WARN(MGLOG_VCL, "%s: cannot list the devices", addr);
        goto fn_fail;
    }
    if (pthread_create(&c->rx_cmd, NULL, rx_cmd_main, c))
        goto fn_fail;
    pthread_detach(c->rx_cmd);
    for (i = 0; i < c->nstripes; i++) {
        mgvcl_stripe_t *sp = &c->stripe[i];
        if (pthread_create(&sp->rx, NULL, rx_bulk_main, sp) ||
            (c->nstripes > 1 && pthread_create(&sp->tx, NULL, tx_main, sp))) {
            /* the threads started own c: it is failed, not freed */
            mgvcl_conn_fail(c);
            return NULL;
        }
        pthread_detach(sp->rx);
        if (c->nstripes > 1)
            pthread_detach(sp->tx);
    }
    atomic_store(&c->last_rx, mgtr_now_ms());
    MGLOG_INFO(MGLOG_VCL, "%s: connected, %u bulk stripe(s), %s", addr, c->nstripes,
               mgtr_protection(c->t, c->cmd));
    if (pthread_create(&c->heartbeat, NULL, heartbeat_main, c) == 0)
        pthread_detach(c->heartbeat);
    return c; /* threads own it now; never freed */
fn_fail:
    mgtr_bulk_fini(&c->stripe[0].bk);
    if (c->cmd)
        c->t->close(c->cmd);
    for (i = 0; i < MGW_STREAMS_MAX; i++)
        if (c->stripe[i].ep)
            c->t->close(c->stripe[i].ep);
    free(c);
    return NULL;
}

static void init_once(void)
{
    const char *servers = mgparam_read_or_default(MGPARAM_VCL_SERVERS, MGLOG_VCL).text;
    const char *keyfile = mgparam_read_or_default(MGPARAM_VCL_KEY_FILE, MGLOG_VCL).text;
    mgparam_value_t streams = mgparam_read_or_default(MGPARAM_VCL_STREAMS, MGLOG_VCL);
    mgw_key_t key;
    char err[512];
    long cpus = sysconf(_SC_NPROCESSORS_ONLN) / 2;
    if (mgparam_read_or_default(MGPARAM_VCL_STATS, MGLOG_VCL).num)
        atexit(stats_print);
    vcl_streams = cpus < 1 ? 1 : cpus > 4 ? 4 : (unsigned)cpus;
    if (streams.set)
        vcl_streams = (unsigned)streams.num;
    vcl_timeout_s = (int)mgparam_read_or_default(MGPARAM_VCL_TIMEOUT, MGLOG_VCL).num;
    mgvcl_forward = (int)mgparam_read_or_default(MGPARAM_VCL_PEER_EVENTS, MGLOG_VCL).num;
    if (mgtr_spin_setup(MGPARAM_VCL_SPIN, err, sizeof err))
        MGLOG_WARN(MGLOG_VCL, "%s; not spinning", err);
    /* a malformed value keeps the default, encryption on: the safe side */
    if (mgtr_crypt_setup(1, &vcl_crypt, err, sizeof err)) {
        MGLOG_WARN(MGLOG_VCL, "%s; encrypting with any cipher", err);
        vcl_crypt = mgtr_sec_ciphers() | MGW_CIPHER_CHACHA20POLY1305;
    }
    if (!servers || !servers[0])
        return;
    if (!keyfile || !keyfile[0]) {
        MGLOG_WARN(MGLOG_VCL, "MPIGPU_VCL_SERVERS is set but MPIGPU_VCL_KEY_FILE is not; "
                              "no remote devices");
        return;
    }
    if (mgw_key_load(keyfile, &key, err, sizeof err)) {
        MGLOG_WARN(MGLOG_VCL, "%s; no remote devices", err);
        return;
    }
    char *list = strdup(servers), *save = NULL;
    for (char *a = list ? strtok_r(list, ",", &save) : NULL; a; a = strtok_r(NULL, ",", &save)) {
        mgvcl_conn_t *c = conn_open(a, &key);
        mgvcl_conn_t **n = c ? realloc(conns, (nconns + 1) * sizeof *n) : NULL;
        if (n) {
            conns = n;
            conns[nconns++] = c;
        }
    }
    free(list);
    memset(&key, 0, sizeof key);
}

int mgvcl_init(mgvcl_conn_t ***out, int *n)
{
    pthread_once(&once, init_once);
    *out = conns;
    *n = nconns;
    return 0;
}

cl_int mgvcl_info(mgvcl_conn_t *c, int kind, uint64_t id, uint64_t aux, cl_uint param, size_t size,
                  void *value, size_t *size_ret)
{
    mgw_buf_t b;
    uint8_t *rep = NULL;
    size_t len = 0;
    mgw_get_info_encode(
        &b, 0, &(mgw_get_info_t){.kind = (uint32_t)kind, .id = id, .aux = aux, .param = param});
    cl_int rc = mgvcl_call(c, &b, &rep, &len);
    mgw_buf_free(&b);
    if (rc == CL_SUCCESS) {
        mgw_cur_t cur;
        mgw_get_info_reply_t m;
        mgw_cur_init(&cur, rep, len);
        rc = mgw_get_info_reply_decode(&cur, &m)
                 ? CL_OUT_OF_RESOURCES
                 : mgvcl_ret(m.value.p, m.value.n, size, value, size_ret);
    }
    free(rep);
    return rc;
}

void mgvcl_release_remote(mgvcl_conn_t *c, int kind, uint64_t id)
{
    mgw_buf_t b;
    if (kind == MGW_K_EVENT) {
        release_flush(c, id);
        return;
    }
    mgw_release_encode(&b, 0, &(mgw_release_t){.kind = (uint32_t)kind, .id = id});
    mgvcl_send(c, &b);
    mgw_buf_free(&b);
}

cl_int mgvcl_ret(const void *v, size_t n, size_t size, void *value, size_t *size_ret)
{
    if (value) {
        if (size < n)
            return CL_INVALID_VALUE;
        if (n)
            memcpy(value, v, n);
    }
    if (size_ret)
        *size_ret = n;
    return CL_SUCCESS;
}
