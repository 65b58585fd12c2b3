/*
 * Speaks the wire protocol directly, to test what a hostile or broken
 * client cannot do.  rawclient HOST:PORT KEYFILE MODE, MODE one of:
 *   foreign    session B uses object IDs of session A: refused; A unaffected
 *   malformed  truncated, trailing-garbage, unknown-op and oversized messages
 *   auth       expects the handshake to fail (wrong key)
 *   cma PID    the one-copy lane's handshake: a pid that is not the
 *              client's (PID: another process of the same user), and the
 *              client's own pid with a wrong nonce, are both refused; a
 *              second try in one session too
 *   stripes CAP  the striped bulk lane of a proxy run with --streams CAP
 *              (< 16): STREAMS out of bounds is malformed, more than CAP
 *              are capped, a stripe not granted or joined twice is
 *              refused, STREAMS after a join is refused; a chunk with the
 *              wrong offset, and a stripe closed mid-write, end the session
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "bulk.h"
#include "transport.h"

#define CL_SUCCESS 0
#define CL_MEM_SIZE 0x1102

static const mgtr_transport_t *t = &mgtr_transport_tcp;
static unsigned crypt_offer; /* MPIGPU_VCL_ENCRYPT, MPIGPU_VCL_CIPHER */
static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static mgtr_ep_t *session(const char *addr, const mgw_key_t *key, int *ok)
{
    mgtr_ep_t *ep;
    uint8_t token[MGW_TOKEN];
    char err[256];
    if (t->connect(addr, &ep, err, sizeof err)) {
        fprintf(stderr, "connect: %s\n", err);
        exit(1);
    }
    *ok = !mgtr_auth_client(t, ep, key, crypt_offer, MGW_LANE_CMD, 0, token, err, sizeof err);
    if (!*ok)
        fprintf(stderr, "handshake refused as expected? %s\n", err);
    return ep;
}

/* Sends m, returns the op of the answer (REPLY or ERROR) and its rc; *out
 * and *outlen get the reply's fields after rc (mgw_<op>_reply_decode). */
static int ask(mgtr_ep_t *ep, mgw_buf_t *m, int32_t *rc, uint8_t **out, size_t *outlen)
{
    static uint32_t seq = 100;
    static uint8_t *buf;
    static size_t cap;
    mgw_hdr_t h;
    uint32_t s = ++seq;
    m->p[12] = (uint8_t)s;
    m->p[13] = (uint8_t)(s >> 8);
    if (mgtr_msg_send(t, ep, m))
        return -1;
    mgw_buf_free(m);
    do
        if (mgtr_msg_recv(t, ep, &h, &buf, &cap, MGW_MSG_MAX))
            return -1;
    while (h.op == MGW_OP_EVENT_DONE);
    mgw_cur_t c;
    mgw_cur_init(&c, buf, h.length);
    *rc = mgw_cur_i32(&c); /* REPLY and ERROR both begin with it */
    if (out) {
        *out = buf + c.off;
        *outlen = h.length - c.off;
    }
    return h.seq == s ? h.op : -2;
}

static int ping(mgtr_ep_t *ep)
{
    mgw_buf_t m;
    int32_t rc;
    mgw_ping_encode(&m, 0, &(mgw_ping_t){});
    return ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0;
}

static int mem_size(mgtr_ep_t *ep, uint64_t id, uint64_t *size)
{
    mgw_buf_t m;
    int32_t rc;
    uint8_t *out;
    size_t n;
    mgw_get_info_encode(&m, 0,
                        &(mgw_get_info_t){.kind = MGW_K_MEM, .id = id, .param = CL_MEM_SIZE});
    int op = ask(ep, &m, &rc, &out, &n);
    if (op != MGW_OP_REPLY)
        return -1000;
    mgw_get_info_reply_t r;
    mgw_cur_t c;
    mgw_cur_init(&c, out, n);
    if (rc == 0 && !mgw_get_info_reply_decode(&c, &r) && r.value.n == 8)
        memcpy(size, r.value.p, 8);
    return rc;
}

/* The status the proxy reports for event id (skipping other messages). */
static int32_t event_status(mgtr_ep_t *ep, uint64_t id)
{
    static uint8_t *buf;
    static size_t cap;
    mgw_hdr_t h;
    while (mgtr_msg_recv(t, ep, &h, &buf, &cap, MGW_MSG_MAX) == 0) {
        mgw_cur_t c;
        mgw_event_done_t m;
        mgw_cur_init(&c, buf, h.length);
        if (h.op == MGW_OP_EVENT_DONE && !mgw_event_done_decode(&c, &m) && m.event == id)
            return m.status;
    }
    return 1000;
}

/* Sends FINISH(q), then a PING; counts the reports of event id (EVENT_DONE,
 * or in an EVENTS_DONE) until the PING's reply, *st gets the last status.
 * -1 if the lane broke. */
static int finish_reports(mgtr_ep_t *ep, uint64_t q, uint64_t id, int32_t *st)
{
    static uint8_t *buf;
    static size_t cap;
    mgw_hdr_t h;
    mgw_buf_t m;
    int n = 0;
    mgw_finish_encode(&m, 0, &(mgw_finish_t){.queue = q, .events = {.n = 1, .v = &id}});
    int bad = mgtr_msg_send(t, ep, &m);
    mgw_buf_free(&m);
    mgw_ping_encode(&m, 4321, &(mgw_ping_t){});
    bad = bad || mgtr_msg_send(t, ep, &m);
    mgw_buf_free(&m);
    while (!bad && mgtr_msg_recv(t, ep, &h, &buf, &cap, MGW_MSG_MAX) == 0) {
        mgw_cur_t c;
        mgw_event_done_t one;
        mgw_events_done_t all;
        mgw_event_status_t d;
        mgw_cur_init(&c, buf, h.length);
        if (h.op == MGW_OP_REPLY && h.seq == 4321)
            return n;
        if (h.op == MGW_OP_EVENT_DONE && !mgw_event_done_decode(&c, &one) && one.event == id) {
            *st = one.status;
            n++;
        }
        if (h.op == MGW_OP_EVENTS_DONE && !mgw_events_done_decode(&c, &all))
            while (mgw_event_status_next(&all.done, &d) == 0)
                if (d.event == id) {
                    *st = d.status;
                    n++;
                }
    }
    return -1;
}

/* An NDRange of kernel 104 on queue q with one argument (kind, payload). */
static void launch(mgtr_ep_t *ep, uint64_t q, uint64_t ev, uint8_t kind, uint64_t v)
{
    mgw_buf_t m;
    mgw_karg_t a = {.index = 0, .kind = kind};
    if (kind == MGW_ARG_VALUE)
        a.value = (mgw_bytes_t){&v, sizeof v};
    else
        a.num = v;
    mgw_enq_ndrange_encode(&m, 9,
                           &(mgw_enq_ndrange_t){.head = {.queue = q, .event = ev},
                                                .kernel = 104,
                                                .dim = 1,
                                                .global = {1, 1, 1},
                                                .local = {1, 1, 1},
                                                .args = {.n = 1, .v = &a}});
    mgtr_msg_send(t, ep, &m);
    mgw_buf_free(&m);
}

/* Session A builds a kernel; a value posing as its buffer argument is
 * refused on the launch's event, and so is B's launch of A's kernel. */
static void kernel_checks(mgtr_ep_t *a, mgtr_ep_t *b)
{
    mgw_buf_t m;
    int32_t rc;
    uint8_t *out;
    size_t n;
    static const char src[] = "kernel void k(global int *p) { p[0] = 7; }";
    mgw_queue_create_encode(&m, 0, &(mgw_queue_create_t){.id = 102, .ctx = 100});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "A: queue (%d)", rc);
    mgw_program_source_encode(
        &m, 0, &(mgw_program_source_t){.id = 103, .ctx = 100, .source = {src, sizeof src - 1}});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "A: program (%d)", rc);
    mgw_program_build_encode(&m, 0, &(mgw_program_build_t){.id = 103, .options = ""});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "A: build (%d)", rc);
    mgw_kernel_create_encode(&m, 0, &(mgw_kernel_create_t){.id = 104, .program = 103, .name = "k"});
    int op = ask(a, &m, &rc, &out, &n);
    mgw_kernel_create_reply_t kr;
    mgw_karg_info_t ai = {0};
    mgw_cur_t c;
    mgw_cur_init(&c, out, n);
    CHECK(op == MGW_OP_REPLY && rc == 0 && !mgw_kernel_create_reply_decode(&c, &kr) &&
              kr.args.n == 1 && !mgw_karg_info_next(&kr.args, &ai) && ai.kind == MGW_ARG_MEM &&
              ai.type && !strcmp(ai.type, "int*"),
          "A: kernel with one buffer argument (%d)", rc);
    mgw_karg_info_free(&ai);
    launch(a, 102, 105, MGW_ARG_VALUE, 0x4141414141414141ull);
    rc = event_status(a, 105);
    CHECK(rc < 0, "a value passed as a buffer argument: event status %d", rc);
    launch(b, 102, 205, MGW_ARG_MEM, 101);
    rc = event_status(b, 205);
    CHECK(rc < 0, "B launches A's kernel on A's queue: event status %d", rc);
    launch(a, 102, 106, MGW_ARG_MEM, 101);
    rc = event_status(a, 106);
    CHECK(rc == 0, "A's own launch: event status %d", rc);
    /* FINISH: reports each completion once, whoever sees it first */
    launch(a, 102, 107, MGW_ARG_MEM, 101);
    int32_t st = 1000;
    int k = finish_reports(a, 102, 107, &st);
    if (k == 0) /* its callback is still sending it */
        k = finish_reports(a, 102, 107, &st);
    usleep(200000);
    k += finish_reports(a, 102, 107, &st);
    CHECK(k == 1 && st == 0, "A's launch then FINISH: reported %d times, status %d", k, st);
    mgw_finish_encode(&m, 0, &(mgw_finish_t){.queue = 102});
    CHECK(ask(b, &m, &rc, NULL, NULL) == MGW_OP_ERROR && rc == -36,
          "B finishes A's queue: rc %d (want CL_INVALID_COMMAND_QUEUE)", rc);
    mgw_buf_init(&m, MGW_OP_FINISH, 0, 0);
    mgw_buf_u32(&m, 102);
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR && rc == -30,
          "a truncated FINISH: rc %d (want CL_INVALID_VALUE)", rc);
    uint64_t bev = 205; /* B's event */
    mgw_finish_encode(&m, 0, &(mgw_finish_t){.queue = 102, .events = {.n = 1, .v = &bev}});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR && rc == -58,
          "FINISH waiting for another session's event: rc %d (want CL_INVALID_EVENT)", rc);
}

static void foreign(const char *addr, const mgw_key_t *key)
{
    int ok;
    int32_t rc;
    mgw_buf_t m;
    mgtr_ep_t *a = session(addr, key, &ok), *b;
    CHECK(ok, "session A authenticates");
    static const uint64_t dev0 = 0;
    mgw_context_create_encode(&m, 0,
                              &(mgw_context_create_t){.id = 100, .devs = {.n = 1, .v = &dev0}});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "A: context (%d)", rc);
    mgw_buffer_create_encode(
        &m, 0,
        &(mgw_buffer_create_t){
            .id = 101, .ctx = 100, .flags = 1 /* CL_MEM_READ_WRITE */, .size = 4096});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "A: buffer (%d)", rc);
    b = session(addr, key, &ok);
    CHECK(ok, "session B authenticates");
    uint64_t size = 0;
    rc = mem_size(b, 101, &size);
    CHECK(rc < 0 && rc != -1000, "B reads A's buffer 101: rc %d", rc);
    mgw_queue_create_encode(&m, 0, &(mgw_queue_create_t){.id = 7, .ctx = 100 /* A's */});
    CHECK(ask(b, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == -34,
          "B makes a queue in A's context: rc %d (want CL_INVALID_CONTEXT)", rc);
    mgw_release_encode(&m, 0, &(mgw_release_t){.kind = MGW_K_MEM, .id = 101});
    CHECK(ask(b, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "B releases A's buffer: no error");
    /* the same ID under the wrong kind in A's own session */
    mgw_release_encode(&m, 0, &(mgw_release_t){.kind = MGW_K_PROGRAM, .id = 101});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "A: release of 101 as a program");
    kernel_checks(a, b);
    size = 0;
    rc = mem_size(a, 101, &size);
    CHECK(rc == 0 && size == 4096, "A's buffer after B's attempts: rc %d size %llu", rc,
          (unsigned long long)size);
    CHECK(ping(a) && ping(b), "both sessions still served");
    t->close(a);
    t->close(b);
}

static void malformed(const char *addr, const mgw_key_t *key)
{
    int ok;
    int32_t rc;
    mgw_buf_t m;
    mgtr_ep_t *a = session(addr, key, &ok);
    CHECK(ok, "authenticates");
    mgw_buf_init(&m, MGW_OP_CONTEXT_CREATE, 0, 0);
    mgw_buf_u32(&m, 5); /* truncated: an ID needs 8 bytes */
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "truncated request answered");
    mgw_buf_init(&m, MGW_OP_CONTEXT_CREATE, 0, 0);
    mgw_buf_u64(&m, 5);
    mgw_buf_u32(&m, 0xffffffffu); /* device count far past the payload */
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "bad count answered");
    mgw_buf_init(&m, MGW_OP_PING, 0, 0);
    mgw_buf_u64(&m, 0); /* trailing bytes */
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "trailing bytes answered");
    mgw_buf_init(&m, 999, 0, 0);
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "unknown op answered");
    mgw_buf_init(&m, MGW_OP_RELEASE_EVENTS, 0, 0);
    mgw_buf_u32(&m, 2);
    mgw_buf_u64(&m, 5); /* one of the two IDs */
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "short event release list answered");
    mgw_buf_init(&m, MGW_OP_RELEASE_EVENTS, 0, 0);
    mgw_buf_u32(&m, 5000); /* over MGW_MAX_WAIT */
    for (int i = 0; i < 5000; i++)
        mgw_buf_u64(&m, (uint64_t)i + 1000);
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "too long event release list answered");
    mgw_program_source_encode(&m, 0,
                              &(mgw_program_source_t){.id = 9,
                                                      .ctx = 12345, /* no such context */
                                                      .source = {"kernel void k() {}", 18}});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == -34, "unknown context: %d", rc);
    CHECK(ping(a), "still served after bad messages");
    /* an oversized length: answered, then the session is closed */
    uint8_t raw[MGW_HDR_SIZE];
    mgw_hdr_t h = {MGW_MAGIC, MGW_OP_PING, 0, MGW_MSG_MAX + 1, 77};
    mgw_hdr_write(raw, &h);
    CHECK(!t->send(a, raw, sizeof raw), "send oversized header");
    uint8_t *buf = NULL;
    size_t cap = 0;
    CHECK(!mgtr_msg_recv(t, a, &h, &buf, &cap, MGW_MSG_MAX) && h.op == MGW_OP_ERROR,
          "oversized message answered");
    CHECK(mgtr_msg_recv(t, a, &h, &buf, &cap, MGW_MSG_MAX) != 0, "session closed after it");
    free(buf);
    t->close(a);
    a = session(addr, key, &ok);
    CHECK(ok && ping(a), "a new session is served");
    t->close(a);
}

/* SHM_OPEN, SHM_READY, CMA_OPEN on a fresh session; the nonce in nonce. */
static mgtr_ep_t *cma_session(const char *addr, const mgw_key_t *key, uint8_t *nonce)
{
    int ok;
    int32_t rc;
    uint8_t *out;
    size_t n;
    unsigned char *base = NULL;
    mgw_buf_t m;
    mgtr_ep_t *ep = session(addr, key, &ok);
    CHECK(ok, "handshake");
    mgw_shm_open_encode(&m, 0, &(mgw_shm_open_t){});
    CHECK(ask(ep, &m, &rc, &out, &n) == MGW_OP_REPLY && rc == 0, "SHM_OPEN: %d", rc);
    mgw_cur_t c;
    mgw_shm_open_reply_t so;
    mgw_cur_init(&c, out, n);
    int named = !mgw_shm_open_reply_decode(&c, &so);
    CHECK(named && !mgtr_shm_attach(so.name, &base), "shm segment %s", named ? so.name : "?");
    mgw_shm_open_reply_free(&so);
    mgw_shm_ready_encode(&m, 0, &(mgw_shm_ready_t){.mapped = base != NULL});
    CHECK(ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "SHM_READY: %d", rc);
    mgw_cma_open_encode(&m, 0, &(mgw_cma_open_t){});
    int op = ask(ep, &m, &rc, &out, &n);
    mgw_cma_open_reply_t co;
    mgw_cur_init(&c, out, n);
    int offered = op == MGW_OP_REPLY && rc == 0 && !mgw_cma_open_reply_decode(&c, &co);
    CHECK(offered, "CMA_OPEN: %d", rc);
    if (offered) {
        prctl(PR_SET_PTRACER, (unsigned long)co.pid, 0, 0, 0); /* Yama 1; EINVAL without Yama */
        memcpy(nonce, co.nonce, MGTR_CMA_NONCE);
    }
    return ep; /* the segment stays mapped until exit */
}

static int32_t cma_ready(mgtr_ep_t *ep, long pid, const void *at)
{
    mgw_buf_t m;
    int32_t rc = 0;
    mgw_cma_ready_encode(&m, 0,
                         &(mgw_cma_ready_t){.pid = (uint32_t)pid, .addr = (uint64_t)(uintptr_t)at});
    return ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY ? rc : 1000;
}

static void cma(const char *addr, const mgw_key_t *key, long victim)
{
    static uint8_t nonce[MGTR_CMA_NONCE], wrong[MGTR_CMA_NONCE];
    mgtr_ep_t *ep = cma_session(addr, key, nonce);
    /* the victim does not hold this connection: refused before any read */
    int32_t rc = cma_ready(ep, victim, nonce);
    CHECK(rc < 0, "CMA_READY with another process's pid: %d", rc);
    /* one try per session, even with the right pid now */
    rc = cma_ready(ep, (long)getpid(), nonce);
    CHECK(rc < 0, "a second CMA_READY in one session: %d", rc);
    CHECK(ping(ep), "session alive after refused CMA_READY");
    t->close(ep);
    /* our own pid, but the named address does not hold the nonce */
    ep = cma_session(addr, key, nonce);
    memcpy(wrong, nonce, sizeof wrong);
    wrong[0] ^= 1;
    rc = cma_ready(ep, (long)getpid(), wrong);
    CHECK(rc < 0, "CMA_READY with a wrong nonce: %d", rc);
    t->close(ep);
    /* and the real thing is accepted (the probe reads this process) */
    ep = cma_session(addr, key, nonce);
    rc = cma_ready(ep, (long)getpid(), nonce);
    CHECK(rc == 0, "CMA_READY of the client itself: %d", rc);
    t->close(ep);
}

/* 1 when the proxy closes ep within 10 s (anything it sends first is
 * skipped). */
static int closed(mgtr_ep_t *ep)
{
    uint8_t b[4096];
    t->set_timeout(ep, 10000);
    for (int i = 0; i < 100000; i++)
        if (t->recv(ep, b, 1))
            return 1;
    return 0;
}

static mgtr_ep_t *striped_session(const char *addr, const mgw_key_t *key, uint32_t want,
                                  uint32_t *granted, uint8_t tok[MGW_TOKEN])
{
    mgtr_ep_t *ep;
    char err[256];
    int32_t rc = 0;
    uint8_t *out;
    size_t n = 0;
    mgw_buf_t m;
    if (t->connect(addr, &ep, err, sizeof err) ||
        mgtr_auth_client(t, ep, key, crypt_offer, MGW_LANE_CMD, 0, tok, err, sizeof err)) {
        fprintf(stderr, "session: %s\n", err);
        exit(1);
    }
    mgw_streams_encode(&m, 0, &(mgw_streams_t){.want = want});
    *granted = 0;
    mgw_streams_reply_t r;
    mgw_cur_t c;
    if (ask(ep, &m, &rc, &out, &n) == MGW_OP_REPLY && rc == 0) {
        mgw_cur_init(&c, out, n);
        if (!mgw_streams_reply_decode(&c, &r))
            *granted = r.granted;
    }
    return ep;
}

static mgtr_ep_t *join(const char *addr, const mgw_key_t *key, uint8_t tok[MGW_TOKEN], unsigned idx)
{
    mgtr_ep_t *ep;
    char err[256];
    if (t->connect(addr, &ep, err, sizeof err) ||
        mgtr_auth_client(t, ep, key, crypt_offer, MGW_LANE_BULK, idx, tok, err, sizeof err)) {
        fprintf(stderr, "join: %s\n", err);
        exit(1);
    }
    return ep;
}

/* Context 100, queue 102, buffer 101 of 2 MiB; then an ENQ_WRITE of all of
 * it (event and transfer 300), whose data the caller sends. */
static void write_begin(mgtr_ep_t *ep)
{
    mgw_buf_t m;
    int32_t rc = 0;
    static const uint64_t dev0 = 0;
    mgw_context_create_encode(&m, 0,
                              &(mgw_context_create_t){.id = 100, .devs = {.n = 1, .v = &dev0}});
    CHECK(ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "context (%d)", rc);
    mgw_buffer_create_encode(
        &m, 0, &(mgw_buffer_create_t){.id = 101, .ctx = 100, .flags = 1, .size = 2 << 20});
    CHECK(ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "buffer (%d)", rc);
    mgw_queue_create_encode(&m, 0, &(mgw_queue_create_t){.id = 102, .ctx = 100});
    CHECK(ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "queue (%d)", rc);
    /* transfer and event 300 on queue 102, no wait list; buffer 101 from 0 */
    mgw_enq_write_encode(
        &m, 0,
        &(mgw_enq_write_t){
            .x = {.xfer = 300, .size = 2 << 20, .head = {.queue = 102, .event = 300}, .mem = 101}});
    CHECK(mgtr_msg_send(t, ep, &m) == 0, "ENQ_WRITE sent");
    mgw_buf_free(&m);
}

static int chunk_send(mgtr_ep_t *ep, uint64_t off, int last)
{
    static uint8_t data[MGW_CHUNK];
    mgtr_bulk_t bk;
    mgtr_chunk_t ch = {.xfer = 300, .off = off, .n = MGW_CHUNK, .last = last, .slot = -1};
    mgtr_bulk_init(&bk, t, ep);
    return bk.ops->send(&bk, &ch, data);
}

static void stripes(const char *addr, const mgw_key_t *key, uint32_t cap)
{
    uint8_t tok[MGW_TOKEN];
    uint32_t got;
    int32_t rc = 0;
    mgw_buf_t m;
    mgtr_ep_t *ep = striped_session(addr, key, 0, &got, tok), *s[4];
    CHECK(got == 0, "STREAMS 0 granted %u", got);
    mgw_streams_encode(&m, 0, &(mgw_streams_t){.want = MGW_STREAMS_MAX + 1});
    CHECK(ask(ep, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "STREAMS %d not refused",
          MGW_STREAMS_MAX + 1);
    mgw_streams_encode(&m, 0, &(mgw_streams_t){.want = cap + 1});
    CHECK(ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "STREAMS %u: %d", cap + 1, rc);
    t->close(ep);
    /* a fresh session: cap + 1 asked, cap granted */
    ep = striped_session(addr, key, cap + 1, &got, tok);
    CHECK(got == cap, "STREAMS %u granted %u, not the cap %u", cap + 1, got, cap);
    s[0] = join(addr, key, tok, cap); /* not granted */
    CHECK(closed(s[0]), "stripe %u of %u accepted", cap, cap);
    t->close(s[0]);
    s[0] = join(addr, key, tok, 0);
    /* A JOIN has no answer, and the proxy reads each connection's in a thread
       of its own: give the first one time to be taken, so that the second is
       the one refused (under a load of 15 on 2 cores they came in the other
       order, and stripe 0 closed under chunk 0 below). */
    usleep(200 * 1000);
    s[2] = join(addr, key, tok, 0); /* twice */
    CHECK(closed(s[2]), "stripe 0 joined twice");
    t->close(s[2]);
    for (uint32_t i = 1; i < cap && i < 4; i++)
        s[i] = join(addr, key, tok, i);
    mgw_streams_encode(&m, 0, &(mgw_streams_t){.want = 1});
    CHECK(ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc < 0, "STREAMS after the joins: %d",
          rc);
    CHECK(ping(ep), "session alive");
    /* chunk 1 of the transfer is due on stripe 1 at offset 1 MiB */
    write_begin(ep);
    CHECK(chunk_send(s[0], 0, 0) == 0, "chunk 0 sent");
    /* The proxy may refuse the chunk from its header and close the stripe
       before the client has written all of it: the send may fail. */
    (void)chunk_send(s[1], 12345, 1);
    CHECK(closed(ep), "a chunk at the wrong offset did not end the session");
    t->close(ep);
    for (uint32_t i = 0; i < cap && i < 4; i++)
        t->close(s[i]);
    /* a stripe closed after chunk 0 */
    ep = striped_session(addr, key, 2, &got, tok);
    CHECK(got == 2, "STREAMS 2 granted %u", got);
    s[0] = join(addr, key, tok, 0);
    s[1] = join(addr, key, tok, 1);
    write_begin(ep);
    CHECK(chunk_send(s[0], 0, 0) == 0, "chunk 0 sent");
    t->close(s[1]);
    CHECK(closed(ep), "a stripe closed mid-write did not end the session");
    t->close(ep);
    t->close(s[0]);
}

int main(int argc, char **argv)
{
    mgw_key_t key;
    char err[512];
    if (argc != 4 && !(argc == 5 && (!strcmp(argv[3], "cma") || !strcmp(argv[3], "stripes")))) {
        fprintf(stderr,
                "usage: rawclient HOST:PORT KEYFILE foreign|malformed|auth|cma PID|stripes CAP\n");
        return 2;
    }
    if (mgw_key_load(argv[2], &key, err, sizeof err) ||
        mgtr_crypt_setup(1, &crypt_offer, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    if (!strcmp(argv[3], "foreign")) {
        foreign(argv[1], &key);
    } else if (!strcmp(argv[3], "malformed")) {
        malformed(argv[1], &key);
    } else if (!strcmp(argv[3], "cma")) {
        cma(argv[1], &key, atol(argv[4]));
    } else if (!strcmp(argv[3], "stripes")) {
        uint32_t cap = (uint32_t)atol(argv[4]);
        if (cap < 2 || cap >= MGW_STREAMS_MAX)
            return 2;
        stripes(argv[1], &key, cap);
    } else {
        int ok;
        t->close(session(argv[1], &key, &ok));
        CHECK(!ok, "a wrong key was accepted");
    }
    if (!failures)
        printf("rawclient %s: all checks passed\n", argv[3]);
    return failures ? 1 : 0;
}
