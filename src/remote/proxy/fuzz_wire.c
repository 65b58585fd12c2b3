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
 */
#include <stdlib.h>
#include <string.h>

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
        /* IDs 1..6: one object of each kind; 7: a second buffer */
        static const int kinds[] = {MGW_K_CONTEXT, MGW_K_QUEUE, MGW_K_MEM, MGW_K_PROGRAM,
                                    MGW_K_KERNEL,  MGW_K_EVENT, MGW_K_MEM};
        static mgpx_kargs_t *ka;
        ka = malloc(sizeof *ka + 5);
        ka->n = 5;
        memcpy(ka->kind, (uint8_t[]){MGW_ARG_MEM, MGW_ARG_MEM, MGW_ARG_LOCAL, MGW_ARG_VALUE, 0xff},
               5);
        for (int i = 0; i < 7; i++)
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t n)
{
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
