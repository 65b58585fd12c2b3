/*
 * mpigpu-proxy --listen HOST:PORT --key-file FILE [--device SUBSTRING[:N]]...
 *              [--no-shm] [--no-cma] [--no-encrypt] [--streams N]
 *
 * Serves local OpenCL devices to libmpigpu-vcl.so clients, one thread per
 * connection, until SIGTERM or SIGINT.
 *
 * A connection is "pending" from its accept until its handshake is done
 * (for a bulk lane: its JOIN read).  Pending connections are capped per
 * peer address and in total (MPIGPU_PROXY_PENDING_PER_PEER, _MAX), and
 * each has one deadline for its whole handshake
 * (MPIGPU_PROXY_HANDSHAKE_TIMEOUT), which the watchdog thread enforces by
 * shutting the connection down, however slowly its bytes trickle in.  At
 * the descriptor limit the accept loop refuses the waiting connection
 * through a descriptor kept in reserve, and backs off.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mgparam.h"
#include "proxy.h"

static mgpx_proxy_t px;
static mgtr_listener_t *listener;
/* Set by the signal handler, which may run on any thread: a lock-free
   atomic, which C11 allows a handler to write. */
static atomic_int stopping;
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "stopping is written by a signal handler");
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t reg_cond = PTHREAD_COND_INITIALIZER;
static unsigned nthreads, nsessions;

/* Sessions waiting for, or holding, their bulk lane. */
typedef struct reg {
    struct reg *next;
    mgpx_session_t *s;
    uint8_t token[MGW_TOKEN];
} reg_t;
static reg_t *regs;

/* Peer connections that carry event notices (PEER_EVENT), each read by its
 * connection's thread until the peer closes it; shut down at stop. */
typedef struct reader {
    struct reader *next;
    mgtr_ep_t *ep;
} reader_t;
static reader_t *readers;

/* A connection in its handshake (under reg_lock).  The watchdog shuts ep
 * down once deadline_ms passes and sets expired; the connection's thread
 * unlists it when its handshake ends, and takes an expired one as failed. */
typedef struct pend {
    struct pend *next;
    mgtr_ep_t *ep;
    char host[80]; /* the peer's address without its port */
    long long deadline_ms;
    int expired;
} pend_t;
static pend_t *pends;
static unsigned npend;
static unsigned hs_timeout_s = 10, pend_max = 512, pend_per_peer = 128;
static pthread_cond_t dog_cond = PTHREAD_COND_INITIALIZER;
static unsigned long long mem_total, mem_session; /* MPIGPU_PROXY_TOTAL_MEM, _SESSION_MEM */

static void on_signal(int sig)
{
    atomic_store_explicit(&stopping, 1, memory_order_relaxed);
    if (listener)
        px.t->listener_shutdown(listener);
}

static int add_devices(const char *spec)
{
    char sub[256];
    long want = -1;
    const char *colon = strrchr(spec, ':');
    size_t sl = colon ? (size_t)(colon - spec) : strlen(spec);
    if (sl >= sizeof sub)
        return -1;
    memcpy(sub, spec, sl);
    sub[sl] = 0;
    if (colon) {
        char *end;
        want = strtol(colon + 1, &end, 10);
        if (!colon[1] || *end || want < 0)
            return -1;
    }
    cl_platform_id plat[32];
    cl_uint np = 0;
    if (clGetPlatformIDs(32, plat, &np) != CL_SUCCESS)
        np = 0;
    for (cl_uint p = 0; p < np && p < 32; p++) {
        char name[256] = "";
        clGetPlatformInfo(plat[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (sub[0] && !strstr(name, sub))
            continue;
        cl_device_id d[64];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plat[p], CL_DEVICE_TYPE_ALL, 64, d, &nd) != CL_SUCCESS)
            nd = 0;
        if (nd > 64)
            nd = 64;
        for (cl_uint i = 0; i < nd; i++) {
            if (want >= 0 && (long)i != want)
                continue;
            cl_device_id *nv = realloc(px.dev, (px.ndev + 1) * sizeof *nv);
            if (!nv)
                return -1;
            px.dev = nv;
            px.dev[px.ndev++] = d[i];
        }
        if (sub[0])
            return want >= 0 && (cl_uint)want >= nd ? -1 : 0;
    }
    return sub[0] ? -1 : 0;
}

/* The handshake of p is over: unlists it; 1 when its deadline had passed
 * (the watchdog shut it down), 0 otherwise. */
static int pend_done(pend_t *p)
{
    pthread_mutex_lock(&reg_lock);
    for (pend_t **pp = &pends; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    npend--;
    int expired = p->expired;
    pthread_mutex_unlock(&reg_lock);
    free(p);
    return expired;
}

/* Under reg_lock: the pending connections from host. */
static unsigned pend_count(const char *host)
{
    unsigned n = 0;
    for (pend_t *p = pends; p; p = p->next)
        n += !strcmp(p->host, host);
    return n;
}

/* Shuts down the handshakes past their deadline; writes the "suppressed"
 * summary of the rate-limited log when its second is over. */
static void *watchdog_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&reg_lock);
    while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
        long long now = mgtr_now_ms(), next = now + 1000;
        for (pend_t *p = pends; p; p = p->next)
            if (!p->expired && p->deadline_ms <= now) {
                p->expired = 1;
                px.t->shutdown(p->ep);
            } else if (!p->expired && p->deadline_ms < next) {
                next = p->deadline_ms;
            }
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        long long ns = until.tv_nsec + (next - now) * 1000000LL;
        until.tv_sec += ns / 1000000000LL;
        until.tv_nsec = ns % 1000000000LL;
        pthread_cond_timedwait(&dog_cond, &reg_lock, &until);
        pthread_mutex_unlock(&reg_lock);
        mgpx_log_flush();
        pthread_mutex_lock(&reg_lock);
    }
    pthread_mutex_unlock(&reg_lock);
    return NULL;
}

/* The peer-lane key of session sid (mgtr_peer_key_fn). */
static int peer_key(const uint8_t sid[MGW_TOKEN], mgw_key_t *key, void *arg)
{
    int rc = -1;
    (void)arg;
    pthread_mutex_lock(&reg_lock);
    for (reg_t *r = regs; r && rc; r = r->next) {
        pthread_mutex_lock(&r->s->lock);
        if (r->s->peer_on && !sodium_memcmp(r->s->peer_sid, sid, MGW_TOKEN)) {
            memcpy(key->k, r->s->peer_key, MGW_TOKEN);
            key->len = MGW_TOKEN;
            rc = 0;
        }
        pthread_mutex_unlock(&r->s->lock);
    }
    pthread_mutex_unlock(&reg_lock);
    return rc;
}

/* A peer connection after its handshake: hand it, with its PEER_XFER, to
 * the session it authenticated for (0), or -1; a PEER_EVENT (ev) sets that
 * session's stand-in, and the connection is closed. */
static int peer_join(mgtr_ep_t *ep, const uint8_t sid[MGW_TOKEN], const mgw_peer_xfer_t *x,
                     const mgw_peer_event_t *ev)
{
    int rc = -1;
    cl_event set = NULL;
    pthread_mutex_lock(&reg_lock);
    for (reg_t *r = regs; r && rc; r = r->next) {
        pthread_mutex_lock(&r->s->lock);
        if (r->s->peer_on && !sodium_memcmp(r->s->peer_sid, sid, MGW_TOKEN)) {
            if (ev)
                set = mgpx_peer_event(r->s, ev);
            else
                mgpx_peer_park(r->s, ep, x);
            rc = 0;
        }
        pthread_mutex_unlock(&r->s->lock);
    }
    pthread_mutex_unlock(&reg_lock);
    if (set) { /* a peer says complete or failed, nothing else */
        clSetUserEventStatus(set, ev->status < 0 ? ev->status : CL_COMPLETE);
        clReleaseEvent(set);
    }
    return rc;
}

static void *conn_main(void *arg)
{
    mgtr_ep_t *ep = ((void **)arg)[0];
    char *peer = ((void **)arg)[1];
    pend_t *pend = ((void **)arg)[2];
    uint8_t token[MGW_TOKEN];
    char err[256];
    free(arg);
    /* each read and write also has the whole handshake's time at most */
    px.t->set_timeout(ep, (int)hs_timeout_s * 1000);
    int lane = mgtr_auth_proxy(px.t, ep, &px.key, px.crypt, token, peer_key, NULL, err, sizeof err);
    int joined = -1;
    uint8_t tok[MGW_TOKEN];
    uint32_t idx = UINT32_MAX;
    mgw_peer_xfer_t px_xfer = {0};
    mgw_peer_event_t px_ev = {0};
    int is_ev = 0;
    if (lane == MGW_LANE_BULK)
        joined = mgtr_auth_join(px.t, ep, tok, &idx);
    if (lane == MGW_LANE_PEER) {
        uint8_t *buf = NULL;
        size_t cap = 0;
        mgw_hdr_t h;
        mgw_cur_t c;
        if (mgtr_msg_recv(px.t, ep, &h, &buf, &cap, 64) == 0) {
            mgw_cur_init(&c, buf, h.length);
            if (h.op == MGW_OP_PEER_XFER)
                joined = mgw_peer_xfer_decode(&c, &px_xfer) ? -1 : 0;
            else if (h.op == MGW_OP_PEER_EVENT) {
                joined = mgw_peer_event_decode(&c, &px_ev) ? -1 : 0;
                is_ev = 1;
            }
        }
        free(buf);
    }
    if (pend_done(pend)) {
        /* the watchdog shut the connection down: whatever the handshake
           read last, the deadline is why it ended */
        size_t l = lane < 0 ? strlen(err) : 0;
        snprintf(err + l, sizeof err - l, "%shandshake not done within %u s",
                 lane < 0 ? " (shut down: " : "", hs_timeout_s);
        if (lane < 0 && strlen(err) + 2 < sizeof err)
            strcat(err, ")");
        lane = -1;
    }
    if (lane < 0) {
        mgpx_log_limited("connection from %s refused: %s", peer, err);
        px.t->close(ep);
    } else if (lane == MGW_LANE_PEER) {
        if (joined || px.t->set_timeout(ep, 0) ||
            peer_join(ep, token, &px_xfer, is_ev ? &px_ev : NULL)) {
            mgpx_log_limited("peer connection from %s refused: no PEER_XFER or PEER_EVENT, or its "
                             "session ended",
                             peer);
            px.t->close(ep);
        } else if (is_ev) {
            /* more notices follow on it (the peer keeps it per session) */
            reader_t rd = {.ep = ep};
            pthread_mutex_lock(&reg_lock);
            rd.next = readers;
            readers = &rd;
            pthread_mutex_unlock(&reg_lock);
            uint8_t *buf = NULL;
            size_t cap = 0;
            mgw_hdr_t h;
            mgw_cur_t c;
            while (!atomic_load_explicit(&stopping, memory_order_relaxed) &&
                   mgtr_msg_recv(px.t, ep, &h, &buf, &cap, 64) == 0 && h.op == MGW_OP_PEER_EVENT) {
                mgw_cur_init(&c, buf, h.length);
                if (mgw_peer_event_decode(&c, &px_ev) || peer_join(ep, token, NULL, &px_ev))
                    break; /* malformed, or its session is gone */
            }
            free(buf);
            pthread_mutex_lock(&reg_lock);
            for (reader_t **pp = &readers; *pp; pp = &(*pp)->next)
                if (*pp == &rd) {
                    *pp = rd.next;
                    break;
                }
            pthread_mutex_unlock(&reg_lock);
            px.t->close(ep);
        }
    } else if (lane == MGW_LANE_BULK) {
        mgpx_session_t *s = NULL;
        if (!joined && !px.t->set_timeout(ep, 0)) {
            /* The command lane's thread registers its session just after
             * AUTH_OK, so a quick client's bulk lane may arrive first. */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 5;
            int found = 0;
            pthread_mutex_lock(&reg_lock);
            do {
                for (reg_t *r = regs; r && !found; r = r->next)
                    if (!sodium_memcmp(r->token, tok, MGW_TOKEN)) {
                        mgpx_session_t *cand = r->s;
                        found = 1;
                        pthread_mutex_lock(&cand->lock);
                        /* each stripe once, and only those granted */
                        if (!cand->bulk_quit && idx < cand->nstripes && !cand->stripe[idx].ep) {
                            cand->stripe[idx].ep = ep;
                            s = cand;
                            if (++cand->njoined == cand->nstripes && mgpx_bulk_start(cand))
                                cand->t->shutdown(cand->cmd);
                        }
                        pthread_mutex_unlock(&cand->lock);
                    }
            } while (!found && !atomic_load_explicit(&stopping, memory_order_relaxed) &&
                     pthread_cond_timedwait(&reg_cond, &reg_lock, &until) == 0);
            pthread_mutex_unlock(&reg_lock);
        }
        if (!s) {
            mgpx_log_limited("bulk connection from %s refused: unknown session token, or stripe %u "
                             "not granted or already joined",
                             peer, (unsigned)idx);
            px.t->close(ep);
        }
    } else {
        mgpx_session_t *s = malloc(sizeof *s);
        reg_t *r = malloc(sizeof *r);
        if (!s || !r) {
            free(s);
            free(r);
            px.t->close(ep);
        } else {
            px.t->set_timeout(ep, 0);
            mgpx_session_init(s, &px);
            s->cmd = ep;
            snprintf(s->peer, sizeof s->peer, "%s", peer);
            r->s = s;
            memcpy(r->token, token, MGW_TOKEN);
            pthread_mutex_lock(&reg_lock);
            s->num = ++nsessions;
            r->next = regs;
            regs = r;
            pthread_cond_broadcast(&reg_cond);
            pthread_mutex_unlock(&reg_lock);
            mgpx_log("session %u: client %s connected and authenticated, %s", s->num, peer,
                     mgtr_protection(px.t, ep));
            mgpx_session_run(s);
            pthread_mutex_lock(&reg_lock);
            for (reg_t **pp = &regs; *pp; pp = &(*pp)->next)
                if (*pp == r) {
                    *pp = r->next;
                    break;
                }
            pthread_mutex_unlock(&reg_lock);
            free(r);
            mgpx_session_unref(s);
        }
    }
    free(peer);
    pthread_mutex_lock(&reg_lock);
    nthreads--;
    pthread_cond_broadcast(&reg_cond);
    pthread_mutex_unlock(&reg_lock);
    return NULL;
}

/* The proxy's settings (common/mgparam_table.c); a malformed one stops it
   at start.  0, or -1 with the message in err. */
static int settings_read(char *err, size_t errlen)
{
    /* MPIGPU_PROXY_CMA_COPY's words in the table's order: auto, map, pinned, staging. */
    static const int cma_copy[] = {-1, MGPX_CMA_MAP, MGPX_CMA_PINNED, MGPX_CMA_STAGING};
    mgparam_value_t v;
    if (mgparam_read(MGPARAM_PROXY_TEST_DROP_CALLBACKS, &v, err, errlen))
        return -1;
    px.drop_cb = (int)v.num;
    if (mgparam_read(MGPARAM_PROXY_CMA_COPY, &v, err, errlen))
        return -1;
    px.cma_map = cma_copy[v.num];
    if (mgparam_read(MGPARAM_PROXY_SESSION_MEM, &v, err, errlen))
        return -1;
    mem_session = (unsigned long long)v.num;
    if (mgparam_read(MGPARAM_PROXY_TOTAL_MEM, &v, err, errlen))
        return -1;
    mem_total = (unsigned long long)v.num;
    if (mgparam_read(MGPARAM_PROXY_HANDSHAKE_TIMEOUT, &v, err, errlen))
        return -1;
    hs_timeout_s = (unsigned)v.num;
    if (mgparam_read(MGPARAM_PROXY_PENDING_MAX, &v, err, errlen))
        return -1;
    pend_max = (unsigned)v.num;
    if (mgparam_read(MGPARAM_PROXY_PENDING_PER_PEER, &v, err, errlen))
        return -1;
    pend_per_peer = (unsigned)v.num;
    if (mgparam_read(MGPARAM_PROXY_LOG_RATE, &v, err, errlen))
        return -1;
    mgpx_log_rate = (unsigned)v.num;
    static const struct {
        int param, kind;
    } lim[] = {
        {MGPARAM_PROXY_MAX_CONTEXTS, MGW_K_CONTEXT}, {MGPARAM_PROXY_MAX_QUEUES, MGW_K_QUEUE},
        {MGPARAM_PROXY_MAX_MEM_OBJECTS, MGW_K_MEM},  {MGPARAM_PROXY_MAX_PROGRAMS, MGW_K_PROGRAM},
        {MGPARAM_PROXY_MAX_KERNELS, MGW_K_KERNEL},   {MGPARAM_PROXY_MAX_EVENTS, MGW_K_EVENT},
        {MGPARAM_PROXY_MAX_SAMPLERS, MGW_K_SAMPLER}};
    for (size_t i = 0; i < sizeof lim / sizeof lim[0]; i++) {
        if (mgparam_read(lim[i].param, &v, err, errlen))
            return -1;
        px.max_obj[lim[i].kind] = (unsigned long)v.num;
    }
    if (mgtr_crypt_setup(0, &px.crypt, err, errlen))
        return -1;
    return mgtr_spin_setup(MGPARAM_PROXY_SPIN, err, errlen);
}

/* The peer's address without its port ("HOST:PORT", IPv6 HOST included). */
static void peer_host(const char *peer, char *host, size_t len)
{
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    if (n >= len)
        n = len - 1;
    memcpy(host, peer, n);
    host[n] = 0;
}

/* Admits a new connection from peer into the pending list (reg_lock held):
 * the entry, or NULL to refuse it (why says why).  Over the total, the
 * oldest pending connection of the peer with the most is shut down for it,
 * when that peer has more than this one: a flood from a few addresses
 * cannot keep out a client from another. */
static pend_t *pend_admit(mgtr_ep_t *ep, const char *peer, const char **why)
{
    char host[80];
    peer_host(peer, host, sizeof host);
    unsigned mine = pend_count(host);
    if (mine >= pend_per_peer) {
        *why = "too many connections from its address in their handshake "
               "(MPIGPU_PROXY_PENDING_PER_PEER)";
        return NULL;
    }
    if (npend >= pend_max) {
        pend_t *victim = NULL;
        unsigned most = 0;
        for (pend_t *p = pends; p; p = p->next) {
            if (p->expired)
                continue;
            unsigned n = pend_count(p->host);
            if (n > most || (n == most && victim && p->deadline_ms < victim->deadline_ms)) {
                most = n;
                victim = p;
            }
        }
        if (!victim || most <= mine + 1) {
            *why = "too many connections in their handshake (MPIGPU_PROXY_PENDING_MAX)";
            return NULL;
        }
        /* its thread sees the shutdown and leaves; it counts until then */
        victim->expired = 1;
        px.t->shutdown(victim->ep);
        mgpx_log_limited("pending connection from %s dropped for a peer with fewer "
                         "(MPIGPU_PROXY_PENDING_MAX)",
                         victim->host);
    }
    pend_t *p = calloc(1, sizeof *p);
    if (!p) {
        *why = "out of memory";
        return NULL;
    }
    p->ep = ep;
    memcpy(p->host, host, sizeof host);
    p->deadline_ms = mgtr_now_ms() + (long long)hs_timeout_s * 1000;
    p->next = pends;
    pends = p;
    npend++;
    pthread_cond_signal(&dog_cond);
    return p;
}

/* accept failed with errno e.  Out of descriptors (the process's or the
 * system's), the connection waiting would stay in the backlog and accept
 * fail again at once: the descriptor kept in reserve is let go to accept it
 * and close it at once (the peer sees the connection closed, not a hang),
 * then taken again.  Each such turn takes one connection off the backlog,
 * and accept blocks once it is empty.  When no connection could be taken
 * that way (no reserve, or another thread took the descriptor), or on
 * another error, a pause, doubling while this lasts (5 ms to 320 ms), so
 * the loop never spins.  Returns the next pause. */
static int reserve_fd = -1;
static long accept_failed(int e, long pause_ms)
{
    int fd_limit = e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
    if (fd_limit && reserve_fd >= 0) {
        close(reserve_fd);
        reserve_fd = -1;
        mgtr_ep_t *ep;
        char peer[96];
        int taken = !px.t->accept(listener, &ep, peer, sizeof peer);
        if (taken) {
            px.t->close(ep);
            mgpx_log_limited("connection from %s refused: out of file descriptors (%s)", peer,
                             strerror(e));
        }
        reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (taken)
            return 5;
    } else if (fd_limit) {
        reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        mgpx_log_limited("accept: %s, and no descriptor in reserve to refuse with", strerror(e));
    } else if (e != EINTR && e != EAGAIN && e != ECONNABORTED) {
        mgpx_log_limited("accept: %s", strerror(e));
    }
    struct timespec ts = {0, pause_ms * 1000000L};
    nanosleep(&ts, NULL);
    return pause_ms < 320 ? pause_ms * 2 : 320;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpigpu-proxy --listen HOST:PORT --key-file FILE "
            "[--device SUBSTRING[:N]]... [--no-shm] [--no-cma] [--no-encrypt] [--streams N]\n"
            "  --no-encrypt plain TCP lanes (trusted networks only; the clients need\n"
            "               MPIGPU_VCL_ENCRYPT=0); the default is MPIGPU_VCL_ENCRYPT's\n"
            "  --streams N  at most N TCP connections (1-%d, default %d) in a client's bulk\n"
            "               lane; the client asks for its own number (MPIGPU_VCL_STREAMS)\n",
            MGW_STREAMS_MAX, MGW_STREAMS_MAX);
}

int main(int argc, char **argv)
{
    const char *listen_addr = NULL, *keyfile = NULL;
    char err[512], bound[300];
    int ndevargs = 0;
    px.t = &mgtr_transport_tcp;
    mglog_level_raise(MGLOG_LEVEL_INFO); /* a daemon logs its sessions */
    if (settings_read(err, sizeof err)) {
        fprintf(stderr, "mpigpu-proxy: %s\n", err);
        return 2;
    }
    px.max_streams = MGW_STREAMS_MAX;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--listen") && i + 1 < argc) {
            listen_addr = argv[++i];
        } else if (!strcmp(argv[i], "--key-file") && i + 1 < argc) {
            keyfile = argv[++i];
        } else if (!strcmp(argv[i], "--no-shm")) {
            px.no_shm = 1;
        } else if (!strcmp(argv[i], "--no-cma")) {
            px.no_cma = 1;
        } else if (!strcmp(argv[i], "--no-encrypt")) {
            px.crypt = 0;
        } else if (!strcmp(argv[i], "--streams") && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (!argv[i][0] || *end || v < 1 || v > MGW_STREAMS_MAX) {
                fprintf(stderr, "mpigpu-proxy: --streams %s: not a number from 1 to %d\n", argv[i],
                        MGW_STREAMS_MAX);
                return 2;
            }
            px.max_streams = (unsigned)v;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
            ndevargs++;
            if (add_devices(argv[++i])) {
                fprintf(stderr, "mpigpu-proxy: --device %s: no such platform or device\n", argv[i]);
                return 2;
            }
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!listen_addr || !keyfile) {
        usage(stderr);
        return 2;
    }
    if (sodium_init() < 0) {
        MGLOG_ERROR(MGLOG_PROXY, "libsodium initialization failed");
        return 1;
    }
    if (mgw_key_load(keyfile, &px.key, err, sizeof err)) {
        MGLOG_ERROR(MGLOG_PROXY, "%s", err);
        return 1;
    }
    if (!ndevargs && add_devices("")) {
        MGLOG_ERROR(MGLOG_PROXY, "cannot list OpenCL devices");
        return 1;
    }
    if (!px.ndev) {
        MGLOG_ERROR(MGLOG_PROXY, "no OpenCL device to serve");
        return 1;
    }
    if (mgpx_quota_setup(&px, mem_total, mem_session)) {
        MGLOG_ERROR(MGLOG_PROXY, "out of memory");
        return 1;
    }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (px.t->listen(listen_addr, &listener, bound, sizeof bound, err, sizeof err)) {
        MGLOG_ERROR(MGLOG_PROXY, "%s", err);
        return 1;
    }
    for (cl_uint d = 0; d < px.ndev; d++) {
        char name[256] = "";
        clGetDeviceInfo(px.dev[d], CL_DEVICE_NAME, sizeof name, name, NULL);
        mgpx_log("serving device %u: %s (buffers up to %llu bytes in all)", d, name,
                 px.dev_limit[d]);
    }
    if (px.crypt)
        mgpx_log("TCP lanes encrypted (%s%s%s)",
                 px.crypt & MGW_CIPHER_AES256GCM ? "AES-256-GCM, " : "", "ChaCha20-Poly1305",
                 px.crypt & MGW_CIPHER_AES256GCM ? " for clients without AES-NI" : "");
    else
        mgpx_log("TCP lanes NOT encrypted (--no-encrypt or MPIGPU_VCL_ENCRYPT=0): use a trusted "
                 "network only");
    /* The program's answer, not a log line: scripts read the address. */
    fprintf(stderr, "mpigpu-proxy: listening on %s\n", bound);
    fflush(stderr);
    /* a descriptor to let go when there is none left, to refuse with */
    reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    pthread_t dog;
    if (pthread_create(&dog, NULL, watchdog_main, NULL)) {
        MGLOG_ERROR(MGLOG_PROXY, "cannot start the handshake watchdog thread");
        return 1;
    }
    long pause_ms = 5;
    while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
        mgtr_ep_t *ep;
        char peer[96];
        if (px.t->accept(listener, &ep, peer, sizeof peer)) {
            int e = errno;
            if (!atomic_load_explicit(&stopping, memory_order_relaxed))
                pause_ms = accept_failed(e, pause_ms);
            continue;
        }
        pause_ms = 5;
        if (reserve_fd < 0)
            reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        const char *why = "out of memory";
        void **arg = malloc(3 * sizeof *arg);
        pthread_t th;
        if (!arg || !(arg[1] = strdup(peer))) {
            free(arg);
            px.t->close(ep);
            continue;
        }
        arg[0] = ep;
        pthread_mutex_lock(&reg_lock);
        pend_t *p = pend_admit(ep, peer, &why);
        if (p)
            nthreads++;
        pthread_mutex_unlock(&reg_lock);
        arg[2] = p;
        if (!p) {
            mgpx_log_limited("connection from %s refused: %s", peer, why);
            free(arg[1]);
            free(arg);
            px.t->close(ep);
            continue;
        }
        if (pthread_create(&th, NULL, conn_main, arg)) {
            mgpx_log_limited("connection from %s refused: no thread for it", peer);
            free(arg[1]);
            free(arg);
            pend_done(p);
            px.t->close(ep);
            pthread_mutex_lock(&reg_lock);
            nthreads--;
            pthread_mutex_unlock(&reg_lock);
            continue;
        }
        pthread_detach(th);
    }
    pthread_mutex_lock(&reg_lock);
    pthread_cond_broadcast(&dog_cond);
    pthread_mutex_unlock(&reg_lock);
    pthread_join(dog, NULL);
    mgpx_log("stopping: closing %u connection(s)", nthreads);
    pthread_mutex_lock(&reg_lock);
    for (reg_t *r = regs; r; r = r->next)
        r->s->t->shutdown(r->s->cmd);
    for (reader_t *r = readers; r; r = r->next)
        px.t->shutdown(r->ep);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    while (nthreads && pthread_cond_timedwait(&reg_cond, &reg_lock, &until) == 0) {
        for (reg_t *r = regs; r; r = r->next)
            r->s->t->shutdown(r->s->cmd);
        for (reader_t *r = readers; r; r = r->next)
            px.t->shutdown(r->ep);
    }
    pthread_mutex_unlock(&reg_lock);
    px.t->listener_close(listener);
    if (reserve_fd >= 0)
        close(reserve_fd);
    free(px.dev);
    free(px.dev_used);
    free(px.dev_limit);
    sodium_memzero(&px.key, sizeof px.key);
    mgpx_log("stopped");
    return 0;
}
