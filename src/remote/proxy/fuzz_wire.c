/*
 * libFuzzer target of the message decoding (make fuzz).  Input: a u16 op
 * then the payload.
 *   - The payload goes through the table's decoders of that op
 *     (wire/messages.h): the request's and, for a replied op, the reply's.
 *     A payload a decoder accepts must encode back to the same bytes.
 *   - The session runs it "dry": every handler decodes its whole request
 *     and validates its IDs against a map of placeholder objects, then stops
 *     before calling OpenCL, so no device is needed.  The one-copy ops
 *     (CMA_OPEN, CMA_READY, ENQ_WRITE_CMA, ENQ_READ_CMA) and STREAMS are
 *     dispatched like every other op.
 *   - The first 16 bytes go through the header parser; the payload through
 *     the shm lane's descriptor decoder, whose accepted descriptors must lie
 *     inside their slot, and (as u64 address, u64 size) through the one-copy
 *     lane's range check, whose accepted ranges must not wrap.
 *
 * MGRM_FUZZ_MODE picks another target (test/remote/fuzz.sh runs each):
 *   - real: the input is a command-lane stream of records (u16 op, u16
 *     length, the payload) made into frames, which a whole session runs
 *     (mgpx_session_run, teardown included) with its real handlers against
 *     the first OpenCL device (PoCL), over an in-memory transport whose
 *     sends are dropped.  Each session starts with real objects under the
 *     dry map's IDs (context 1, queue 2, buffer 3 of 3 MiB, program 4,
 *     kernel 5, user event 6, buffer 7), quotas of 32 MiB a session and 64
 *     MiB in all, and object limits just above those (4 memory objects, 8
 *     events, 2 of each other kind).  Left out, as they would test the device rather than the
 *     proxy: launches of kernels other than 5 or of more than 65536 work
 *     items (PoCL runs kernels in the proxy's own process), and program
 *     binaries;
 *   - handshake: the proxy's side of the handshake and the bulk lane's
 *     JOIN (mgtr_auth_proxy, mgtr_auth_join) over a socketpair.  Input
 *     byte 0 even: the rest is the client's byte stream; odd: the real
 *     client (mgtr_auth_client, with the right key, the lane and stripe
 *     from bytes 1 and 2; the peer lane with one session's ID and peer
 *     key, which only it may pass) runs on the other end, and the rest of
 *     the input is (offset, xor) pairs applied to its bytes;
 *   - bulk: a real session whose bulk lane has 1 to 3 stripes (byte 0)
 *     reading the input (the rest, split among them) while the session
 *     runs a write of buffer 3 (its size from byte 1), a read (byte 2) and
 *     a FINISH: the chunk headers, offsets and the stripes' state machine.
 */
#include <poll.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy.h"

/* The bulk thread never runs dry; the session only stops it. */
int mgpx_bulk_start(mgpx_session_t *s);

static mgpx_session_t *session(void)
{
    static mgpx_session_t s;
    static mgpx_proxy_t px;
    static cl_device_id devs[2] = {(cl_device_id)16, (cl_device_id)32};
    static int done;
    if (!done) {
        px.dev = devs;
        px.ndev = 2;
        mgpx_session_init(&s, &px);
        s.dry = 1;
        /* IDs 1..6: one object of each kind; 7: a second buffer; 8: a sampler */
        static const int kinds[] = {MGW_K_CONTEXT, MGW_K_QUEUE, MGW_K_MEM, MGW_K_PROGRAM,
                                    MGW_K_KERNEL,  MGW_K_EVENT, MGW_K_MEM, MGW_K_SAMPLER};
        static mgpx_kargs_t *ka;
        ka = malloc(sizeof *ka + 6);
        ka->n = 6;
        memcpy(ka->kind,
               (uint8_t[]){MGW_ARG_MEM, MGW_ARG_MEM, MGW_ARG_LOCAL, MGW_ARG_VALUE, 0xff,
                           MGW_ARG_SAMPLER},
               6);
        for (int i = 0; i < 8; i++)
            mgpx_map_put(&s.map, (uint64_t)i + 1, kinds[i], (void *)(uintptr_t)(64 * (i + 1)),
                         kinds[i] == MGW_K_KERNEL ? ka : NULL);
        done = 1;
    }
    return &s;
}

/* A payload that decoder name accepted encodes back to the same bytes. */
#define SAME_BYTES(name, m, p, n)                                                                  \
    do {                                                                                           \
        mgw_buf_t b_;                                                                              \
        mgw_buf_init(&b_, 0, 0, 0);                                                                \
        mgw_##name##_put(&b_, &m);                                                                 \
        if (b_.err || b_.len - MGW_HDR_SIZE != (n) || memcmp(b_.p + MGW_HDR_SIZE, p, n))           \
            abort();                                                                               \
        mgw_buf_free(&b_);                                                                         \
    } while (0)
#define NO_FIELD(kind, ...)
#define REQ_CASE(OP, name, ...)                                                                    \
    case MGW_OP_##OP: {                                                                            \
        mgw_##name##_t m;                                                                          \
        mgw_cur_init(&c, p, n);                                                                    \
        if (!mgw_##name##_decode(&c, &m))                                                          \
            SAME_BYTES(name, m, p, n);                                                             \
        mgw_##name##_free(&m);                                                                     \
        break;                                                                                     \
    }
#define REP_CASE(OP, name, ...)                                                                    \
    case MGW_OP_##OP: {                                                                            \
        mgw_##name##_reply_t m;                                                                    \
        mgw_cur_init(&c, p, n);                                                                    \
        if (!mgw_##name##_reply_decode(&c, &m))                                                    \
            SAME_BYTES(name##_reply, m, p, n);                                                     \
        mgw_##name##_reply_free(&m);                                                               \
        break;                                                                                     \
    }

/* The table's decoders of op: its request's, and its reply's. */
static void table_decode(uint16_t op, const uint8_t *p, size_t n)
{
    mgw_cur_t c;
    switch (op) {
        MGW_MESSAGES(REQ_CASE, NO_FIELD)
    }
    switch (op) {
        MGW_REPLIES(REP_CASE, NO_FIELD)
    }
}

/* ---- an in-memory transport: reads come from a buffer, sends vanish;
 * or (fd >= 0) a socket, whose sends may be edited ---- */
typedef struct fz_ep {
    const uint8_t *p;
    size_t n, off;
    int fd;
    atomic_int down;
    const uint8_t *edits; /* (offset, xor) pairs for the bytes sent */
    size_t nedits, sent;
} fz_ep_t;

static int fz_send(mgtr_ep_t *e, const void *p, size_t n)
{
    fz_ep_t *ep = (fz_ep_t *)e;
    if (atomic_load(&ep->down))
        return -1;
    if (ep->fd < 0)
        return 0;
    uint8_t *b = malloc(n ? n : 1);
    if (!b)
        return -1;
    memcpy(b, p, n);
    for (size_t i = 0; i + 1 < ep->nedits; i += 2) {
        size_t at = ep->edits[i];
        if (at >= ep->sent && at < ep->sent + n)
            b[at - ep->sent] ^= ep->edits[i + 1];
    }
    ep->sent += n;
    int rc = write(ep->fd, b, n) == (ssize_t)n ? 0 : -1;
    free(b);
    return rc;
}

static int fz_recv(mgtr_ep_t *e, void *p, size_t n)
{
    fz_ep_t *ep = (fz_ep_t *)e;
    if (ep->fd >= 0) {
        for (size_t got = 0; got < n;) {
            /* an edited length can leave both sides waiting: the real
               transport's timeout, shortened */
            struct pollfd pf = {.fd = ep->fd, .events = POLLIN};
            if (poll(&pf, 1, 100) != 1)
                return -1;
            ssize_t r = read(ep->fd, (char *)p + got, n - got);
            if (r <= 0)
                return -1;
            got += (size_t)r;
        }
        return 0;
    }
    if (atomic_load(&ep->down) || n > ep->n - ep->off)
        return -1;
    memcpy(p, ep->p + ep->off, n);
    ep->off += n;
    return 0;
}

static int fz_set_timeout(mgtr_ep_t *e, int ms)
{
    (void)e;
    (void)ms;
    return 0;
}

static int fz_is_local(mgtr_ep_t *e)
{
    (void)e;
    return 0; /* no shm lane: its other end is not there */
}

static void fz_shutdown(mgtr_ep_t *e)
{
    fz_ep_t *ep = (fz_ep_t *)e;
    atomic_store(&ep->down, 1);
    if (ep->fd >= 0)
        shutdown(ep->fd, SHUT_RDWR);
}

static void fz_close(mgtr_ep_t *e)
{
    (void)e; /* owned by the caller */
}

static const mgtr_transport_t fz_transport = {.name = "fuzz",
                                              .send = fz_send,
                                              .recv = fz_recv,
                                              .set_timeout = fz_set_timeout,
                                              .is_local = fz_is_local,
                                              .shutdown = fz_shutdown,
                                              .close = fz_close};

static void fz_ep_init(fz_ep_t *ep, const uint8_t *p, size_t n, int fd)
{
    memset(ep, 0, sizeof *ep);
    ep->p = p;
    ep->n = n;
    ep->fd = fd;
    atomic_init(&ep->down, 0);
}

/* ---- real sessions against the device ---- */
static mgpx_proxy_t rpx;
static struct {
    cl_context ctx;
    cl_command_queue q, tq;
    cl_mem mem, mem2;
    cl_program prog;
    cl_kernel k;
} base;

static const char fz_src[] =
    "kernel void k(global int *a, global int *b, local int *l, int v, int w) { }";

static int real_setup(void)
{
    static cl_device_id dev;
    cl_platform_id plat;
    cl_int err;
    if (clGetPlatformIDs(1, &plat, NULL) || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL))
        return -1;
    rpx.dev = &dev;
    rpx.ndev = 1;
    rpx.t = &fz_transport;
    rpx.max_streams = MGW_STREAMS_MAX;
    rpx.cma_map = -1;
    if (mgpx_quota_setup(&rpx, 64 << 20, 32 << 20))
        return -1;
    /* object limits a few above the base objects of real_session, so that
       one input can reach each kind's refusal */
    rpx.max_obj[MGW_K_CONTEXT] = rpx.max_obj[MGW_K_QUEUE] = rpx.max_obj[MGW_K_PROGRAM] = 2;
    rpx.max_obj[MGW_K_KERNEL] = rpx.max_obj[MGW_K_SAMPLER] = 2;
    rpx.max_obj[MGW_K_MEM] = 4;
    rpx.max_obj[MGW_K_EVENT] = 8;
    const char *src = fz_src;
    base.ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    base.q = clCreateCommandQueue(base.ctx, dev, 0, &err);
    base.tq = clCreateCommandQueue(base.ctx, dev, 0, &err);
    base.mem = clCreateBuffer(base.ctx, CL_MEM_READ_WRITE, 3 << 20, NULL, &err);
    base.mem2 = clCreateBuffer(base.ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    base.prog = clCreateProgramWithSource(base.ctx, 1, &src, NULL, &err);
    if (err || clBuildProgram(base.prog, 1, &dev, "", NULL, NULL))
        return -1;
    base.k = clCreateKernel(base.prog, "k", &err);
    return err ? -1 : 0;
}

/* A session over cmd holding the base objects (retained) under IDs 1-7. */
static mgpx_session_t *real_session(fz_ep_t *cmd)
{
    static unsigned num;
    cl_int err;
    mgpx_session_t *s = malloc(sizeof *s);
    mgpx_kargs_t *ka = malloc(sizeof *ka + 5);
    cl_event ue = clCreateUserEvent(base.ctx, &err);
    if (!s || !ka || err) {
        free(s);
        free(ka);
        return NULL;
    }
    mgpx_session_init(s, &rpx);
    s->cmd = (mgtr_ep_t *)cmd;
    s->num = ++num;
    snprintf(s->peer, sizeof s->peer, "fuzz");
    ka->n = 5;
    memcpy(ka->kind,
           (uint8_t[]){MGW_ARG_MEM, MGW_ARG_MEM, MGW_ARG_LOCAL, MGW_ARG_VALUE, MGW_ARG_VALUE}, 5);
    clRetainContext(base.ctx);
    clRetainCommandQueue(base.q);
    clRetainCommandQueue(base.tq);
    clRetainMemObject(base.mem);
    clRetainProgram(base.prog);
    clRetainKernel(base.k);
    clRetainMemObject(base.mem2);
    mgpx_map_put(&s->map, 1, MGW_K_CONTEXT, base.ctx, NULL);
    mgpx_map_put(&s->map, 2, MGW_K_QUEUE, base.q, base.tq);
    mgpx_map_put(&s->map, 3, MGW_K_MEM, base.mem, NULL);
    mgpx_map_put(&s->map, 4, MGW_K_PROGRAM, base.prog, NULL);
    mgpx_map_put(&s->map, 5, MGW_K_KERNEL, base.k, ka);
    mgpx_map_put(&s->map, 6, MGW_K_EVENT, ue, NULL);
    mgpx_map_put(&s->map, 7, MGW_K_MEM, base.mem2, NULL);
    s->user_open = 1;
    return s;
}

/* Appends a frame of op with payload p (n bytes) to b. */
static void frame(mgw_buf_t *b, uint16_t op, uint32_t seq, const uint8_t *p, size_t n)
{
    uint8_t h[MGW_HDR_SIZE];
    mgw_hdr_write(h, &(mgw_hdr_t){MGW_MAGIC, op, 0, (uint32_t)n, seq});
    mgw_buf_raw(b, h, sizeof h);
    mgw_buf_raw(b, p, n);
}

/* 1 for a record real mode leaves out (see the top). */
static int real_skip(uint16_t op, const uint8_t *p, size_t n)
{
    if (op == MGW_OP_PROGRAM_BINARY)
        return 1;
    if (op != MGW_OP_ENQ_NDRANGE)
        return 0;
    mgw_enq_ndrange_t m;
    mgw_cur_t c;
    mgw_cur_init(&c, p, n);
    if (mgw_enq_ndrange_decode(&c, &m))
        return 0; /* malformed: the handler refuses it */
    unsigned long long items = 1;
    for (int i = 0; i < 3; i++)
        items *= m.global[i] ? (m.global[i] < 65537 ? m.global[i] : 65537) : 1;
    int skip = m.kernel != 5 || items > 65536;
    mgw_enq_ndrange_free(&m);
    return skip;
}

/* Runs s over the frames in b (a stream for its command lane), then frees it. */
static void real_run(mgpx_session_t *s, fz_ep_t *cmd, const mgw_buf_t *b)
{
    cmd->p = b->p;
    cmd->n = b->err ? 0 : b->len;
    cmd->off = 0;
    mgpx_session_run(s);
    mgpx_session_unref(s);
}

static void fuzz_real(const uint8_t *data, size_t n)
{
    fz_ep_t cmd;
    mgw_buf_t b;
    fz_ep_init(&cmd, NULL, 0, -1);
    mgw_buf_init(&b, 0, 0, 0);
    b.len = 0;
    for (size_t i = 0; i + 4 <= n;) {
        uint16_t op = (uint16_t)(data[i] | data[i + 1] << 8);
        size_t len = (size_t)(data[i + 2] | data[i + 3] << 8);
        i += 4;
        if (len > n - i)
            len = n - i;
        if (!real_skip(op, data + i, len))
            frame(&b, op, (uint32_t)i, data + i, len);
        i += len;
    }
    mgpx_session_t *s = real_session(&cmd);
    if (s)
        real_run(s, &cmd, &b);
    mgw_buf_free(&b);
}

static void fuzz_bulk(const uint8_t *data, size_t n)
{
    if (n < 3)
        return;
    unsigned k = 1 + data[0] % 3;
    size_t wsize = ((size_t)data[1] << 14) + (data[1] & 1), rsize = (size_t)data[2] << 14;
    data += 3;
    n -= 3;
    fz_ep_t cmd, st[3];
    fz_ep_init(&cmd, NULL, 0, -1);
    for (unsigned i = 0; i < k; i++)
        fz_ep_init(&st[i], data + i * (n / k), i == k - 1 ? n - i * (n / k) : n / k, -1);
    mgpx_session_t *s = real_session(&cmd);
    if (!s)
        return;
    mgw_buf_t m, b;
    mgw_buf_init(&b, 0, 0, 0);
    b.len = 0;
    /* the lane's stripes (as conn_main joins them), then the commands */
    mgw_streams_encode(&m, 1, &(mgw_streams_t){.want = k});
    mgw_buf_finish(&m);
    mgw_hdr_t h;
    mgw_hdr_parse(m.p, &h, MGW_MSG_MAX);
    mgpx_session_dispatch(s, &h, m.p + MGW_HDR_SIZE);
    mgw_buf_free(&m);
    pthread_mutex_lock(&s->lock);
    for (unsigned i = 0; i < s->nstripes; i++)
        s->stripe[i].ep = (mgtr_ep_t *)&st[i];
    s->njoined = s->nstripes;
    int started = !mgpx_bulk_start(s);
    pthread_mutex_unlock(&s->lock);
    mgw_enq_write_encode(
        &m, 2,
        &(mgw_enq_write_t){
            .x = {.xfer = 20, .size = wsize, .head = {.queue = 2, .event = 20}, .mem = 3}});
    mgw_buf_finish(&m);
    mgw_buf_raw(&b, m.p, m.len);
    mgw_buf_free(&m);
    mgw_enq_read_encode(
        &m, 3,
        &(mgw_enq_read_t){
            .x = {.xfer = 21, .size = rsize, .head = {.queue = 2, .event = 21}, .mem = 3}});
    mgw_buf_finish(&m);
    mgw_buf_raw(&b, m.p, m.len);
    mgw_buf_free(&m);
    mgw_finish_encode(&m, 4, &(mgw_finish_t){.queue = 2});
    mgw_buf_finish(&m);
    mgw_buf_raw(&b, m.p, m.len);
    mgw_buf_free(&m);
    if (!started) { /* the session still frees what it has */
        pthread_mutex_lock(&s->lock);
        s->njoined = 0;
        for (unsigned i = 0; i < k; i++)
            s->stripe[i].ep = NULL;
        pthread_mutex_unlock(&s->lock);
    }
    real_run(s, &cmd, &b);
    mgw_buf_free(&b);
}

/* ---- the handshake ---- */
static mgw_key_t fz_key, fz_peer_key; /* the proxies' key; one session's peer key */
#define FZ_SID 0x5a                   /* that session's peer ID: 32 bytes of it */

/* The peer lane's key lookup: one session, FZ_SID's. */
static int fz_peer_lookup(const uint8_t sid[MGW_TOKEN], mgw_key_t *key, void *arg)
{
    (void)arg;
    for (int i = 0; i < MGW_TOKEN; i++)
        if (sid[i] != FZ_SID)
            return -1;
    *key = fz_peer_key;
    return 0;
}

typedef struct {
    fz_ep_t ep;
    int lane;
    unsigned stripe;
} fz_client_t;

static void *client_main(void *arg)
{
    fz_client_t *c = arg;
    uint8_t token[MGW_TOKEN] = {0};
    char err[128];
    if (c->lane == MGW_LANE_PEER)
        memset(token, FZ_SID, sizeof token);
    mgtr_auth_client(&fz_transport, (mgtr_ep_t *)&c->ep,
                     c->lane == MGW_LANE_PEER ? &fz_peer_key : &fz_key, 0, c->lane, c->stripe,
                     token, err, sizeof err);
    shutdown(c->ep.fd, SHUT_WR);
    return NULL;
}

static void fuzz_handshake(const uint8_t *data, size_t n)
{
    int sv[2];
    if (n < 3 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return;
    fz_ep_t px_ep;
    fz_client_t cl;
    pthread_t th;
    int threaded = 0;
    fz_ep_init(&px_ep, NULL, 0, sv[0]);
    fz_ep_init(&cl.ep, NULL, 0, sv[1]);
    if (data[0] & 1) {
        cl.lane = data[1] % 3 == 2 ? MGW_LANE_PEER : data[1] & 1 ? MGW_LANE_BULK : MGW_LANE_CMD;
        cl.stripe = data[2];
        cl.ep.edits = data + 3;
        cl.ep.nedits = n - 3;
        threaded = !pthread_create(&th, NULL, client_main, &cl);
    } else {
        /* the client's bytes, written before the proxy reads (a socket
           buffer holds them: inputs are short) */
        size_t len = n - 1 < 65536 ? n - 1 : 65536;
        if (write(sv[1], data + 1, len) != (ssize_t)len) {
            close(sv[0]);
            close(sv[1]);
            return;
        }
        shutdown(sv[1], SHUT_WR);
    }
    uint8_t token[MGW_TOKEN], tok[MGW_TOKEN];
    uint32_t idx;
    char err[256];
    int lane = mgtr_auth_proxy(&fz_transport, (mgtr_ep_t *)&px_ep, &fz_key, 0, token,
                               fz_peer_lookup, NULL, err, sizeof err);
    if (lane == MGW_LANE_BULK && !mgtr_auth_join(&fz_transport, (mgtr_ep_t *)&px_ep, tok, &idx) &&
        idx >= MGW_STREAMS_MAX)
        abort(); /* a JOIN accepted with a stripe out of range */
    if (lane >= 0 && lane != MGW_LANE_CMD && lane != MGW_LANE_BULK && lane != MGW_LANE_PEER)
        abort();
    /* the peer lane only for a client that holds the session's peer key */
    if (lane == MGW_LANE_PEER && !(threaded && cl.lane == MGW_LANE_PEER))
        abort();
    if (threaded && (data[0] & 1) && n == 3 && lane != cl.lane)
        abort(); /* the real client with nothing edited must be accepted */
    shutdown(sv[0], SHUT_RDWR);
    if (threaded)
        pthread_join(th, NULL);
    close(sv[0]);
    close(sv[1]);
}

enum { MODE_DRY, MODE_REAL, MODE_HANDSHAKE, MODE_BULK };
static int mode;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *m = getenv("MGRM_FUZZ_MODE");
    if (!m || !*m || !strcmp(m, "dry"))
        return 0;
    if (!strcmp(m, "real"))
        mode = MODE_REAL;
    else if (!strcmp(m, "handshake"))
        mode = MODE_HANDSHAKE;
    else if (!strcmp(m, "bulk"))
        mode = MODE_BULK;
    else {
        fprintf(stderr, "MGRM_FUZZ_MODE=%s: not dry, real, handshake or bulk\n", m);
        exit(2);
    }
    if (sodium_init() < 0)
        exit(2);
    memset(fz_key.k, 7, 32);
    fz_key.len = 32;
    memset(fz_peer_key.k, 9, MGW_TOKEN);
    fz_peer_key.len = MGW_TOKEN;
    if (mode != MODE_HANDSHAKE && real_setup()) {
        fprintf(stderr, "MGRM_FUZZ_MODE=%s: no OpenCL device\n", m);
        exit(2);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
    if (mode == MODE_REAL) {
        fuzz_real(data, n);
        return 0;
    }
    if (mode == MODE_BULK) {
        fuzz_bulk(data, n);
        return 0;
    }
    if (mode == MODE_HANDSHAKE) {
        fuzz_handshake(data, n);
        return 0;
    }
    mgw_hdr_t h;
    if (n >= MGW_HDR_SIZE)
        mgw_hdr_parse(data, &h, MGW_MSG_MAX);
    if (n < 2)
        return 0;
    h.magic = MGW_MAGIC;
    h.op = (uint16_t)(data[0] | data[1] << 8);
    h.flags = 0;
    h.seq = 1;
    h.length = (uint32_t)(n - 2);
    uint32_t slot, off, len;
    if (!mgtr_shm_desc_decode(data + 2, n - 2, MGTR_SHM_SLOTS, MGTR_SHM_SLOT, &slot, &off, &len) &&
        (n - 2 != MGTR_SHM_DESC || slot >= MGTR_SHM_SLOTS || (uint64_t)off + len > MGTR_SHM_SLOT))
        abort();
    if (n - 2 >= 16) {
        uint64_t a = 0, z = 0;
        for (int i = 0; i < 8; i++) {
            a |= (uint64_t)data[2 + i] << (8 * i);
            z |= (uint64_t)data[10 + i] << (8 * i);
        }
        if (mgtr_cma_range_ok(a, z) && (a == 0 || z > MGTR_CMA_MAX || a + z < a))
            abort();
    }
    /* a copy of exactly the payload, so that ASan sees any overread */
    uint8_t *p = malloc(n - 2 ? n - 2 : 1);
    if (!p)
        return 0;
    memcpy(p, data + 2, n - 2);
    table_decode(h.op, p, n - 2);
    mgpx_session_dispatch(session(), &h, p);
    free(p);
    return 0;
}
