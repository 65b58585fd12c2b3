/*
 * mpigpu-proxy --listen HOST:PORT --key-file FILE [--device SUBSTRING[:N]]...
 *              [--no-shm] [--no-cma] [--no-encrypt] [--streams N]
 *
 * Serves local OpenCL devices to libmpigpu-vcl.so clients, one thread per
 * connection, until SIGTERM or SIGINT.
 */
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

static void *conn_main(void *arg)
{
    mgtr_ep_t *ep = ((void **)arg)[0];
    char *peer = ((void **)arg)[1];
    uint8_t token[MGW_TOKEN];
    char err[256];
    free(arg);
    /* a peer that stalls the handshake is dropped after 10 s */
    px.t->set_timeout(ep, 10000);
    int lane = mgtr_auth_proxy(px.t, ep, &px.key, px.crypt, token, err, sizeof err);
    if (lane < 0) {
        mgpx_log("connection from %s refused: %s", peer, err);
        px.t->close(ep);
    } else if (lane == MGW_LANE_BULK) {
        uint8_t tok[MGW_TOKEN];
        mgpx_session_t *s = NULL;
        uint32_t idx = UINT32_MAX;
        if (!mgtr_auth_join(px.t, ep, tok, &idx) && !px.t->set_timeout(ep, 0)) {
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
            mgpx_log("bulk connection from %s refused: unknown session token, or stripe %u not "
                     "granted or already joined",
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
    if (mgtr_crypt_setup(0, &px.crypt, err, errlen))
        return -1;
    return mgtr_spin_setup(MGPARAM_PROXY_SPIN, err, errlen);
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
        mgpx_log("serving device %u: %s", d, name);
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
    while (!atomic_load_explicit(&stopping, memory_order_relaxed)) {
        mgtr_ep_t *ep;
        char peer[96];
        if (px.t->accept(listener, &ep, peer, sizeof peer))
            continue;
        void **arg = malloc(2 * sizeof *arg);
        pthread_t th;
        if (!arg || !(arg[1] = strdup(peer))) {
            free(arg);
            px.t->close(ep);
            continue;
        }
        arg[0] = ep;
        pthread_mutex_lock(&reg_lock);
        nthreads++;
        pthread_mutex_unlock(&reg_lock);
        if (pthread_create(&th, NULL, conn_main, arg)) {
            free(arg[1]);
            free(arg);
            px.t->close(ep);
            pthread_mutex_lock(&reg_lock);
            nthreads--;
            pthread_mutex_unlock(&reg_lock);
            continue;
        }
        pthread_detach(th);
    }
    mgpx_log("stopping: closing %u connection(s)", nthreads);
    pthread_mutex_lock(&reg_lock);
    for (reg_t *r = regs; r; r = r->next)
        r->s->t->shutdown(r->s->cmd);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    while (nthreads && pthread_cond_timedwait(&reg_cond, &reg_lock, &until) == 0)
        for (reg_t *r = regs; r; r = r->next)
            r->s->t->shutdown(r->s->cmd);
    pthread_mutex_unlock(&reg_lock);
    px.t->listener_close(listener);
    free(px.dev);
    sodium_memzero(&px.key, sizeof px.key);
    mgpx_log("stopped");
    return 0;
}
