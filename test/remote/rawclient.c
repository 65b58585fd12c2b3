/*
 * Speaks the wire protocol directly, to test what a hostile or broken
 * client cannot do.  rawclient HOST:PORT KEYFILE MODE, MODE one of:
 *   foreign    session B uses object IDs of session A: refused; A unaffected;
 *              images and buffers never taken for each other, samplers
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
 *   quota MIB SESSION_MIB TOTAL_MIB CMD  a proxy run with
 *              MPIGPU_PROXY_SESSION_MEM=SESSION_MIB M and _TOTAL_MEM=TOTAL_MIB M:
 *              session A1 makes MIB MiB buffers until refused by its quota,
 *              A2 until refused by the total (CL_MEM_OBJECT_ALLOCATION_FAILURE
 *              both, at the exact count), a buffer larger than the total is
 *              refused; A2 leaves, A1 gives back half its buffers and may
 *              make one again; CMD (a shell command: another client, session
 *              B) must succeed while A1 holds its buffers; A1 still served
 *   imgquota MIB SESSION_MIB CMD  a proxy run with
 *              MPIGPU_PROXY_SESSION_MEM=SESSION_MIB M: images of MIB MiB
 *              until refused at the exact count, then a buffer and a huge
 *              image refused too (one account), CMD (another client) must
 *              succeed; an image given back makes room for one image, then
 *              for a buffer; a new session may hold as many images again
 *   objects    a proxy run with MPIGPU_PROXY_MAX_CONTEXTS=3, _QUEUES=2,
 *              _MEM_OBJECTS=8, _PROGRAMS=3, _KERNELS=5, _EVENTS=50,
 *              _SAMPLERS=4: each kind refused at its limit with
 *              CL_OUT_OF_RESOURCES (a command's event too, before the
 *              command runs), a release makes room for one; the session
 *              and another one still served
 *   bigalloc MIB  buffers of MIB MiB until one is refused (a proxy whose
 *              address space is limited): the refusal is
 *              CL_MEM_OBJECT_ALLOCATION_FAILURE, as is an image of MIB MiB
 *              then, and the session and a new one are still served
 *   cycles PID N KIB  N create/set/release cycles of a user event in one
 *              session (pipelined), after N / 8 to warm up: prints the VmRSS
 *              of process PID (the proxy) after each; its growth over the N
 *              must stay under KIB KiB (0: not judged)
 *   flood SRC N DRIP_MS HOLD_MS  N connections from source address SRC that
 *              never finish their handshake: one byte every DRIP_MS (0: none),
 *              held HOLD_MS; prints how many the proxy refused at once (closed
 *              within 500 ms), closed later (and the latest, in ms), and how
 *              many were still open at the end
 *   probe      one handshake and a PING: exit 0 when served, 3 when refused
 *              (the connection closed), with the time it took
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h> /* constants only */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bulk.h"
#include "transport.h"
#include "vcl_check.h"

#define CL_SUCCESS 0
#define CL_MEM_SIZE 0x1102

static const mgtr_transport_t *t = &mgtr_transport_tcp;
static unsigned crypt_offer; /* MPIGPU_VCL_ENCRYPT, MPIGPU_VCL_CIPHER */

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

/* Images and samplers (after kernel_checks: A has context 100, buffer 101,
 * queue 102, kernel 104 of one buffer argument): no command takes an image
 * for a buffer or the reverse, IDs of the other session or of the wrong
 * kind are refused, and a bad request is malformed. */
static void image_checks(mgtr_ep_t *a, mgtr_ep_t *b)
{
    mgw_buf_t m;
    int32_t rc;
    mgw_image_create_t ic = {.id = 110,
                             .ctx = 100,
                             .flags = 1 /* CL_MEM_READ_WRITE */,
                             .format = {.order = CL_RGBA, .type = CL_UNORM_INT8},
                             .desc = {.type = CL_MEM_OBJECT_IMAGE2D, .width = 8, .height = 8}};
    mgw_image_create_encode(&m, 0, &ic);
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "A: image (%d)", rc);
    ic.id = 210;
    mgw_image_create_encode(&m, 0, &ic);
    CHECK(ask(b, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == -34,
          "B makes an image in A's context: rc %d (want CL_INVALID_CONTEXT)", rc);
    ic.id = 111;
    ic.desc.type = CL_MEM_OBJECT_IMAGE1D_BUFFER;
    ic.desc.buffer = 110; /* an image, not a buffer */
    mgw_image_create_encode(&m, 0, &ic);
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == -65,
          "a 1D buffer image over an image: rc %d (want CL_INVALID_IMAGE_DESCRIPTOR)", rc);
    /* formats without a pixel size (mgrc_pixel_size 0, which the client
       refuses): never made or sized by a guess; refused before OpenCL */
    static const uint32_t badfmt[][2] = {{CL_RGBA, CL_UNORM_SHORT_565},
                                         {CL_RGB, CL_UNORM_INT8},
                                         {0x1234, CL_UNORM_INT8},
                                         {CL_RGBA, 0x1234}};
    for (int i = 0; i < 4; i++) {
        mgw_image_create_t bad = ic;
        bad.id = 112 + (uint64_t)i;
        bad.desc = (mgw_image_desc_t){.type = CL_MEM_OBJECT_IMAGE2D, .width = 8, .height = 8};
        bad.format.order = badfmt[i][0];
        bad.format.type = badfmt[i][1];
        mgw_image_create_encode(&m, 0, &bad);
        CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY &&
                  rc == CL_INVALID_IMAGE_FORMAT_DESCRIPTOR,
              "format %#x/%#x: rc %d (want CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)", badfmt[i][0],
              badfmt[i][1], rc);
    }
    uint8_t pat[4] = {1, 2, 3, 4};
    mgw_enq_fill_encode(
        &m, 0,
        &(mgw_enq_fill_t){
            .head = {.queue = 102, .event = 120}, .mem = 110, .pattern = {pat, 4}, .size = 64});
    mgtr_msg_send(t, a, &m);
    mgw_buf_free(&m);
    rc = event_status(a, 120);
    CHECK(rc == -38, "a buffer fill of an image: event status %d (want -38)", rc);
    mgw_enq_fill_image_encode(&m, 0,
                              &(mgw_enq_fill_image_t){.head = {.queue = 102, .event = 121},
                                                      .mem = 101,
                                                      .rect = {.region = {1, 1, 1}}});
    mgtr_msg_send(t, a, &m);
    mgw_buf_free(&m);
    rc = event_status(a, 121);
    CHECK(rc == -38, "an image fill of a buffer: event status %d (want -38)", rc);
    mgw_enq_copy_image_encode(&m, 0,
                              &(mgw_enq_copy_image_t){.head = {.queue = 102, .event = 122},
                                                      .how = MGW_IMGCOPY_TO_BUFFER,
                                                      .src = 101,
                                                      .dst = 110,
                                                      .region = {1, 1, 1}});
    mgtr_msg_send(t, a, &m);
    mgw_buf_free(&m);
    rc = event_status(a, 122);
    CHECK(rc == -38, "an image-to-buffer copy of a buffer into an image: status %d", rc);
    mgw_enq_copy_image_encode(&m, 0,
                              &(mgw_enq_copy_image_t){.head = {.queue = 102, .event = 123},
                                                      .how = 7,
                                                      .src = 110,
                                                      .dst = 110,
                                                      .region = {1, 1, 1}});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "a copy of an unknown kind answered");
    mgw_sampler_create_encode(&m, 0,
                              &(mgw_sampler_create_t){.id = 130,
                                                      .ctx = 100,
                                                      .normalized = 2,
                                                      .addressing = CL_ADDRESS_CLAMP,
                                                      .filter = CL_FILTER_NEAREST});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == -30,
          "a sampler with normalized 2: rc %d (want CL_INVALID_VALUE)", rc);
    mgw_sampler_create_encode(
        &m, 0,
        &(mgw_sampler_create_t){
            .id = 130, .ctx = 100, .addressing = CL_ADDRESS_CLAMP, .filter = CL_FILTER_NEAREST});
    CHECK(ask(a, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "A: sampler (%d)", rc);
    launch(a, 102, 124, MGW_ARG_SAMPLER, 130); /* the kernel's argument is a buffer */
    rc = event_status(a, 124);
    CHECK(rc < 0, "a sampler passed as a buffer argument: event status %d", rc);
    mgw_release_encode(&m, 0, &(mgw_release_t){.kind = MGW_K_SAMPLER, .id = 130});
    CHECK(ask(b, &m, &rc, NULL, NULL) == MGW_OP_ERROR, "B releases A's sampler: no error");
    mgw_release_encode(&m, 0, &(mgw_release_t){.kind = MGW_K_SAMPLER, .id = 130});
    mgtr_msg_send(t, a, &m); /* A's own: no reply */
    mgw_buf_free(&m);
    mgw_release_encode(&m, 0, &(mgw_release_t){.kind = MGW_K_MEM, .id = 110});
    mgtr_msg_send(t, a, &m);
    mgw_buf_free(&m);
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
    image_checks(a, b);
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

#ifndef CL_MEM_OBJECT_ALLOCATION_FAILURE
#define CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)
#endif

static mgtr_ep_t *ctx_session(const char *addr, const mgw_key_t *key)
{
    int ok;
    int32_t rc = 0;
    mgw_buf_t m;
    static const uint64_t dev0 = 0;
    mgtr_ep_t *ep = session(addr, key, &ok);
    CHECK(ok, "session authenticates");
    mgw_context_create_encode(&m, 0,
                              &(mgw_context_create_t){.id = 100, .devs = {.n = 1, .v = &dev0}});
    CHECK(ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY && rc == 0, "context (%d)", rc);
    return ep;
}

static int32_t buffer(mgtr_ep_t *ep, uint64_t id, uint64_t size)
{
    mgw_buf_t m;
    int32_t rc = 1000;
    mgw_buffer_create_encode(
        &m, 0, &(mgw_buffer_create_t){.id = id, .ctx = 100, .flags = 1, .size = size});
    return ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY ? rc : 1000;
}

static void release(mgtr_ep_t *ep, uint32_t kind, uint64_t id)
{
    mgw_buf_t m;
    mgw_release_encode(&m, 0, &(mgw_release_t){.kind = kind, .id = id});
    mgtr_msg_send(t, ep, &m);
    mgw_buf_free(&m);
}

/* Buffers of size bytes with IDs from id0 until one is refused: their number;
 * *rc gets the refusal's code. */
static int fill(mgtr_ep_t *ep, uint64_t id0, uint64_t size, int32_t *rc)
{
    int n = 0;
    while (n < 256 && (*rc = buffer(ep, id0 + (uint64_t)n, size)) == 0)
        n++;
    return n;
}

static void quota(const char *addr, const mgw_key_t *key, uint64_t mib, uint64_t sess_mib,
                  uint64_t total_mib, const char *cmd)
{
    uint64_t size = mib << 20;
    int32_t rc = 0;
    mgtr_ep_t *a1 = ctx_session(addr, key), *a2;
    int n1 = fill(a1, 1000, size, &rc), want1 = (int)(sess_mib / mib);
    CHECK(n1 == want1 && rc == CL_MEM_OBJECT_ALLOCATION_FAILURE,
          "A1: %d buffers of %llu MiB then rc %d (want %d, then the session quota's %d)", n1,
          (unsigned long long)mib, rc, want1, CL_MEM_OBJECT_ALLOCATION_FAILURE);
    printf("A1: %d buffers of %llu MiB, then refused (%d)\n", n1, (unsigned long long)mib, rc);
    CHECK(ping(a1), "A1 served after its refusal");
    a2 = ctx_session(addr, key);
    int n2 = fill(a2, 1000, size, &rc), want2 = (int)((total_mib - (uint64_t)n1 * mib) / mib);
    CHECK(n2 == want2 && rc == CL_MEM_OBJECT_ALLOCATION_FAILURE,
          "A2: %d buffers then rc %d (want %d, then the total's %d)", n2, rc, want2,
          CL_MEM_OBJECT_ALLOCATION_FAILURE);
    printf("A2: %d buffers of %llu MiB, then refused (%d)\n", n2, (unsigned long long)mib, rc);
    rc = buffer(a2, 5000, (total_mib + 1) << 20);
    CHECK(rc == CL_MEM_OBJECT_ALLOCATION_FAILURE, "a buffer larger than the total: rc %d", rc);
    rc = buffer(a2, 5001, 1ull << 50);
    CHECK(rc == CL_MEM_OBJECT_ALLOCATION_FAILURE, "a buffer of 1 PiB: rc %d", rc);
    CHECK(ping(a2), "A2 served after its refusals");
    t->close(a2);
    for (int i = 0; i < n1 / 2; i++)
        release(a1, MGW_K_MEM, 1000 + (uint64_t)i);
    /* the releases have no answer: a PING behind them */
    CHECK(ping(a1), "A1 served after its releases");
    rc = buffer(a1, 2000, size);
    CHECK(rc == 0, "A1: a buffer after giving back half: rc %d", rc);
    release(a1, MGW_K_MEM, 2000);
    int st = system(cmd);
    CHECK(st == 0, "session B (%s) failed: status %d", cmd, st);
    CHECK(ping(a1), "A1 still served after B");
    t->close(a1);
}

/* A 2D RGBA8 image of mib MiB (16384 pixels wide) with ID id in context 100. */
static int32_t image(mgtr_ep_t *ep, uint64_t id, uint64_t mib)
{
    mgw_buf_t m;
    int32_t rc = 1000;
    mgw_image_create_t ic = {
        .id = id,
        .ctx = 100,
        .flags = CL_MEM_READ_WRITE,
        .format = {CL_RGBA, CL_UNSIGNED_INT8},
        .desc = {.type = CL_MEM_OBJECT_IMAGE2D, .width = 16384, .height = (size_t)mib * 16}};
    mgw_image_create_encode(&m, 0, &ic);
    return ask(ep, &m, &rc, NULL, NULL) == MGW_OP_REPLY ? rc : 1000;
}

static void imgquota(const char *addr, const mgw_key_t *key, uint64_t mib, uint64_t sess_mib,
                     const char *cmd)
{
    int32_t rc = 0;
    int n = 0, want = (int)(sess_mib / mib);
    mgtr_ep_t *a = ctx_session(addr, key);
    while (n < 256 && (rc = image(a, 1000 + (uint64_t)n, mib)) == 0)
        n++;
    CHECK(n == want && rc == CL_MEM_OBJECT_ALLOCATION_FAILURE,
          "%d images of %llu MiB then rc %d (want %d, then the session quota's %d)", n,
          (unsigned long long)mib, rc, want, CL_MEM_OBJECT_ALLOCATION_FAILURE);
    printf("imgquota: %d images of %llu MiB, then refused (%d)\n", n, (unsigned long long)mib, rc);
    /* images and buffers share the account */
    rc = buffer(a, 3000, 1 << 20);
    CHECK(rc == CL_MEM_OBJECT_ALLOCATION_FAILURE, "a buffer beside the images: rc %d", rc);
    rc = image(a, 3001, 1ull << 40);
    CHECK(rc == CL_MEM_OBJECT_ALLOCATION_FAILURE, "an image of 2^40 MiB: rc %d", rc);
    CHECK(ping(a), "served after the refusals");
    int st = system(cmd);
    CHECK(st == 0, "another session (%s) failed: status %d", cmd, st);
    release(a, MGW_K_MEM, 1000);
    CHECK(ping(a), "served after a release");
    rc = image(a, 2000, mib);
    CHECK(rc == 0, "an image after giving one back: rc %d", rc);
    rc = image(a, 2001, mib);
    CHECK(rc == CL_MEM_OBJECT_ALLOCATION_FAILURE, "one more: rc %d", rc);
    release(a, MGW_K_MEM, 2000);
    CHECK(ping(a), "served after a release");
    rc = buffer(a, 2002, mib << 20);
    CHECK(rc == 0, "a buffer in an image's place: rc %d", rc);
    t->close(a);
    /* the session's images are given back at its end */
    a = ctx_session(addr, key);
    for (int i = 0; i < want; i++) {
        /* the end of the last session may still be under way */
        for (int k = 0; k < 50 && (rc = image(a, 1000 + (uint64_t)i, mib)) != 0; k++)
            usleep(100 * 1000);
        CHECK(rc == 0, "a new session's image %d: rc %d", i, rc);
    }
    t->close(a);
}

static void bigalloc(const char *addr, const mgw_key_t *key, uint64_t mib)
{
    int32_t rc = 0;
    mgtr_ep_t *a = ctx_session(addr, key), *b;
    int n = fill(a, 1000, mib << 20, &rc);
    printf("bigalloc: %d buffers of %llu MiB, then rc %d\n", n, (unsigned long long)mib, rc);
    CHECK(n < 256 && rc == CL_MEM_OBJECT_ALLOCATION_FAILURE,
          "%d buffers of %llu MiB, then rc %d (want %d)", n, (unsigned long long)mib, rc,
          CL_MEM_OBJECT_ALLOCATION_FAILURE);
    CHECK(ping(a), "served after the refusal");
    rc = image(a, 3000, mib);
    CHECK(rc == CL_MEM_OBJECT_ALLOCATION_FAILURE, "an image of %llu MiB then: rc %d",
          (unsigned long long)mib, rc);
    CHECK(ping(a), "served after the image's refusal");
    b = ctx_session(addr, key);
    CHECK(buffer(b, 1000, 1 << 20) == 0 && ping(b), "a new session and its 1 MiB buffer");
    t->close(b);
    t->close(a);
}

#ifndef CL_OUT_OF_RESOURCES
#define CL_OUT_OF_RESOURCES (-5)
#endif

/* Objects of one kind until one is refused: make(ep, id) for IDs from id0,
 * at most cap + 1 times; their number, *rc the refusal's code. */
static int until_refused(mgtr_ep_t *ep, int32_t (*make)(mgtr_ep_t *, uint64_t), uint64_t id0,
                         int cap, int32_t *rc)
{
    int n = 0;
    while (n <= cap && (*rc = make(ep, id0 + (uint64_t)n)) == 0)
        n++;
    return n;
}

static int32_t ask_rc(mgtr_ep_t *ep, mgw_buf_t *m)
{
    int32_t rc = 1000;
    int op = ask(ep, m, &rc, NULL, NULL);
    return op == MGW_OP_REPLY || op == MGW_OP_ERROR ? rc : 1000;
}

static int32_t mk_context(mgtr_ep_t *ep, uint64_t id)
{
    static const uint64_t dev0 = 0;
    mgw_buf_t m;
    mgw_context_create_encode(&m, 0,
                              &(mgw_context_create_t){.id = id, .devs = {.n = 1, .v = &dev0}});
    return ask_rc(ep, &m);
}

static int32_t mk_queue(mgtr_ep_t *ep, uint64_t id)
{
    mgw_buf_t m;
    mgw_queue_create_encode(&m, 0, &(mgw_queue_create_t){.id = id, .ctx = 100});
    return ask_rc(ep, &m);
}

static int32_t mk_buffer(mgtr_ep_t *ep, uint64_t id)
{
    return buffer(ep, id, 4096);
}

static int32_t mk_sampler(mgtr_ep_t *ep, uint64_t id)
{
    mgw_buf_t m;
    mgw_sampler_create_encode(
        &m, 0,
        &(mgw_sampler_create_t){
            .id = id, .ctx = 100, .addressing = CL_ADDRESS_CLAMP, .filter = CL_FILTER_NEAREST});
    return ask_rc(ep, &m);
}

static int32_t mk_program(mgtr_ep_t *ep, uint64_t id)
{
    static const char src[] = "kernel void k(global int *p) { p[0] = 7; }";
    mgw_buf_t m;
    mgw_program_source_encode(
        &m, 0, &(mgw_program_source_t){.id = id, .ctx = 100, .source = {src, sizeof src - 1}});
    return ask_rc(ep, &m);
}

static int32_t mk_kernel(mgtr_ep_t *ep, uint64_t id)
{
    mgw_buf_t m;
    mgw_kernel_create_encode(&m, 0, &(mgw_kernel_create_t){.id = id, .program = 400, .name = "k"});
    return ask_rc(ep, &m);
}

/* A user event: no answer when it is made, an ERROR when refused; a PING
 * behind it tells which (0: made). */
static int32_t mk_user_event(mgtr_ep_t *ep, uint64_t id)
{
    static uint8_t *buf;
    static size_t cap;
    mgw_hdr_t h;
    mgw_buf_t m;
    int32_t rc = 0;
    mgw_user_event_create_encode(&m, 0, &(mgw_user_event_create_t){.id = id, .ctx = 100});
    int bad = mgtr_msg_send(t, ep, &m);
    mgw_buf_free(&m);
    mgw_ping_encode(&m, 4322, &(mgw_ping_t){});
    bad = bad || mgtr_msg_send(t, ep, &m);
    mgw_buf_free(&m);
    while (!bad && mgtr_msg_recv(t, ep, &h, &buf, &cap, MGW_MSG_MAX) == 0) {
        mgw_cur_t c;
        mgw_cur_init(&c, buf, h.length);
        if (h.op == MGW_OP_ERROR)
            rc = mgw_cur_i32(&c);
        if (h.op == MGW_OP_REPLY && h.seq == 4322)
            return rc;
    }
    return 1000;
}

static int32_t marker(mgtr_ep_t *ep, uint64_t q, uint64_t ev)
{
    mgw_buf_t m;
    mgw_enq_marker_encode(&m, 0, &(mgw_enq_marker_t){.head = {.queue = q, .event = ev}});
    if (mgtr_msg_send(t, ep, &m))
        return 1000;
    mgw_buf_free(&m);
    return event_status(ep, ev);
}

/* A proxy run with MPIGPU_PROXY_MAX_CONTEXTS=3, _QUEUES=2, _MEM_OBJECTS=8,
 * _PROGRAMS=3, _KERNELS=5, _EVENTS=50, _SAMPLERS=4: each kind is refused
 * with CL_OUT_OF_RESOURCES at its limit, a release makes room for one, the
 * session and another are served. */
static void objects(const char *addr, const mgw_key_t *key)
{
    static const struct {
        const char *kind;
        int32_t (*make)(mgtr_ep_t *, uint64_t);
        uint64_t id0;
        int max;
        uint32_t wkind;
    } k[] = {{"contexts", mk_context, 200, 3 - 1, MGW_K_CONTEXT}, /* 100 is one */
             {"queues", mk_queue, 300, 2, MGW_K_QUEUE},
             {"programs", mk_program, 400, 3, MGW_K_PROGRAM},
             {"memory objects", mk_buffer, 500, 8, MGW_K_MEM},
             {"samplers", mk_sampler, 600, 4, MGW_K_SAMPLER},
             {"kernels", mk_kernel, 700, 5, MGW_K_KERNEL},
             {"user events", mk_user_event, 800, 50, MGW_K_EVENT}};
    mgtr_ep_t *a = ctx_session(addr, key), *b;
    mgw_buf_t m;
    int32_t rc = 0;
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        if (k[i].make == mk_kernel) {
            mgw_program_build_encode(&m, 0, &(mgw_program_build_t){.id = 400, .options = ""});
            CHECK((rc = ask_rc(a, &m)) == 0, "build (%d)", rc);
        }
        int n = until_refused(a, k[i].make, k[i].id0, k[i].max, &rc);
        CHECK(n == k[i].max && rc == CL_OUT_OF_RESOURCES, "%d %s, then rc %d (want %d, then %d)", n,
              k[i].kind, rc, k[i].max, CL_OUT_OF_RESOURCES);
        printf("objects: %d %s, then refused (%d)\n", n, k[i].kind, rc);
        if (k[i].make == mk_program)
            continue; /* the kernels need one */
        if (k[i].wkind == MGW_K_EVENT) {
            /* a command's event too: refused on the event, before it runs */
            rc = marker(a, 301, 900);
            CHECK(rc == CL_OUT_OF_RESOURCES, "a marker's event at the limit: status %d", rc);
        }
        release(a, k[i].wkind, k[i].id0);
        rc = k[i].make(a, k[i].id0 + 1000);
        CHECK(rc == 0, "%s: one after a release: rc %d", k[i].kind, rc);
        rc = k[i].make(a, k[i].id0 + 1001);
        CHECK(rc == CL_OUT_OF_RESOURCES, "%s: and no more: rc %d", k[i].kind, rc);
    }
    rc = image(a, 1000, 1);
    CHECK(rc == CL_OUT_OF_RESOURCES, "an image at the memory objects' limit: rc %d", rc);
    release(a, MGW_K_EVENT, 801);
    rc = marker(a, 301, 901);
    CHECK(rc == 0, "a marker after an event's release: status %d", rc);
    CHECK(ping(a), "served after the refusals");
    /* the limits are each session's */
    b = ctx_session(addr, key);
    CHECK(mk_sampler(b, 600) == 0 && mk_queue(b, 300) == 0 && mk_buffer(b, 500) == 0,
          "another session's objects");
    CHECK(ping(b), "the other session served");
    t->close(b);
    t->close(a);
}

static long vmrss_kib(long pid)
{
    char path[64], line[256];
    long kib = -1;
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* n cycles of USER_EVENT_CREATE and USER_EVENT_SET of a fresh ID, with a
 * RELEASE_EVENTS of every 256, sent without waiting, then a PING. */
static void event_cycles(mgtr_ep_t *ep, uint64_t *next, long n)
{
    mgw_buf_t m;
    uint64_t ids[256];
    int k = 0, bad = 0;
    for (long i = 0; i < n && !bad; i++) {
        uint64_t id = (*next)++;
        mgw_user_event_create_encode(&m, 0, &(mgw_user_event_create_t){.id = id, .ctx = 100});
        bad |= mgtr_msg_send(t, ep, &m);
        mgw_buf_free(&m);
        mgw_user_event_set_encode(&m, 0, &(mgw_user_event_set_t){.id = id, .status = 0});
        bad |= mgtr_msg_send(t, ep, &m);
        mgw_buf_free(&m);
        ids[k++] = id;
        if (k == 256 || i == n - 1) {
            mgw_release_events_encode(
                &m, 0, &(mgw_release_events_t){.events = {.n = (uint32_t)k, .v = ids}});
            bad |= mgtr_msg_send(t, ep, &m);
            mgw_buf_free(&m);
            k = 0;
        }
    }
    CHECK(!bad, "cycles sent");
    CHECK(ping(ep), "served after the cycles");
}

static void cycles(const char *addr, const mgw_key_t *key, long pid, long n, long max_kib)
{
    uint64_t next = 1000;
    mgtr_ep_t *ep = ctx_session(addr, key);
    event_cycles(ep, &next, n / 8);
    long r0 = vmrss_kib(pid);
    event_cycles(ep, &next, n);
    long r1 = vmrss_kib(pid);
    printf("proxy VmRSS: %ld KiB after %ld warm-up cycles, %ld KiB after %ld more (%+ld KiB)\n", r0,
           n / 8, r1, n, r1 - r0);
    CHECK(!max_kib || (r0 > 0 && r1 - r0 < max_kib), "the proxy grew by %ld KiB over %ld cycles",
          r1 - r0, n);
    t->close(ep);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A TCP connection from src to addr (HOST:PORT, IPv4), or -1. */
static int connect_from(const char *src, const char *addr)
{
    char host[64];
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof host)
        return -1;
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET}, da = {.sin_family = AF_INET};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || inet_pton(AF_INET, src, &sa.sin_addr) != 1 ||
        inet_pton(AF_INET, host, &da.sin_addr) != 1 || bind(fd, (void *)&sa, sizeof sa)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    da.sin_port = htons((uint16_t)atoi(colon + 1));
    if (connect(fd, (void *)&da, sizeof da) && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int e = 0;
    socklen_t el = sizeof e;
    if (poll(&p, 1, 3000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) || e) {
        close(fd);
        return -1;
    }
    return fd;
}

static void flood(const char *addr, const char *src, int n, int drip_ms, int hold_ms)
{
    int *fd = calloc((size_t)n, sizeof *fd);
    double *t0 = calloc((size_t)n, sizeof *t0), start = now_ms(), last = start, latest = 0;
    int failed = 0, early = 0, later = 0, open = 0, sent = 0;
    uint8_t hello[MGW_HDR_SIZE];
    mgw_hdr_write(hello, &(mgw_hdr_t){MGW_MAGIC, MGW_OP_HELLO, 0, 40, 0});
    for (int i = 0; i < n; i++) {
        fd[i] = connect_from(src, addr);
        t0[i] = now_ms();
        failed += fd[i] < 0;
    }
    while (now_ms() - start < hold_ms) {
        int drip = drip_ms > 0 && now_ms() - last >= drip_ms && sent < MGW_HDR_SIZE;
        if (drip)
            last = now_ms();
        for (int i = 0; i < n; i++) {
            if (fd[i] < 0)
                continue;
            char b;
            ssize_t r = recv(fd[i], &b, 1, MSG_DONTWAIT);
            int gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
            if (!gone && drip && send(fd[i], hello + sent, 1, MSG_NOSIGNAL) < 0)
                gone = 1;
            if (gone) {
                double dt = now_ms() - t0[i];
                if (dt < 500)
                    early++;
                else
                    later++;
                if (dt > latest)
                    latest = dt;
                close(fd[i]);
                fd[i] = -1;
            }
        }
        sent += drip;
        usleep(10 * 1000);
    }
    for (int i = 0; i < n; i++)
        if (fd[i] >= 0) {
            open++;
            close(fd[i]);
        }
    printf("flood from %s: %d connections, %d failed to connect, %d refused at once, %d closed "
           "later (the latest after %.0f ms), %d open after %d ms\n",
           src, n, failed, early, later, latest, open, hold_ms);
    free(fd);
    free(t0);
}

static int probe(const char *addr, const mgw_key_t *key)
{
    mgtr_ep_t *ep;
    uint8_t token[MGW_TOKEN];
    char err[256];
    double t0 = now_ms();
    if (t->connect(addr, &ep, err, sizeof err)) {
        printf("probe: refused at connect after %.0f ms: %s\n", now_ms() - t0, err);
        return 3;
    }
    t->set_timeout(ep, 20000);
    int ok = !mgtr_auth_client(t, ep, key, crypt_offer, MGW_LANE_CMD, 0, token, err, sizeof err) &&
             ping(ep);
    printf("probe: %s after %.0f ms%s%s\n", ok ? "served" : "refused", now_ms() - t0,
           ok ? "" : ": ", ok ? "" : err);
    t->close(ep);
    return ok ? 0 : 3;
}

int main(int argc, char **argv)
{
    mgw_key_t key;
    char err[512];
    static const struct {
        const char *mode;
        int argc;
    } modes[] = {{"foreign", 4}, {"malformed", 4}, {"auth", 4},     {"probe", 4},
                 {"cma", 5},     {"bigalloc", 5},  {"stripes", 5},  {"cycles", 7},
                 {"quota", 8},   {"flood", 8},     {"imgquota", 7}, {"objects", 4}};
    int known = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        known |= argc >= 4 && !strcmp(argv[3], modes[i].mode) && argc == modes[i].argc;
    if (!known) {
        fprintf(stderr, "usage: rawclient HOST:PORT KEYFILE foreign|malformed|auth|probe|cma "
                        "PID|stripes CAP|bigalloc MIB|cycles PID N KIB|quota MIB SESSION_MIB "
                        "TOTAL_MIB CMD|imgquota MIB SESSION_MIB CMD|objects|flood "
                        "SRC N DRIP_MS HOLD_MS\n");
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
    } else if (!strcmp(argv[3], "probe")) {
        return probe(argv[1], &key);
    } else if (!strcmp(argv[3], "quota")) {
        quota(argv[1], &key, (uint64_t)atol(argv[4]), (uint64_t)atol(argv[5]),
              (uint64_t)atol(argv[6]), argv[7]);
    } else if (!strcmp(argv[3], "objects")) {
        objects(argv[1], &key);
    } else if (!strcmp(argv[3], "imgquota")) {
        imgquota(argv[1], &key, (uint64_t)atol(argv[4]), (uint64_t)atol(argv[5]), argv[6]);
    } else if (!strcmp(argv[3], "bigalloc")) {
        bigalloc(argv[1], &key, (uint64_t)atol(argv[4]));
    } else if (!strcmp(argv[3], "cycles")) {
        cycles(argv[1], &key, atol(argv[4]), atol(argv[5]), atol(argv[6]));
    } else if (!strcmp(argv[3], "flood")) {
        flood(argv[1], argv[4], atoi(argv[5]), atoi(argv[6]), atoi(argv[7]));
        return 0;
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
