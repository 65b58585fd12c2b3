/*
 * The remote protocol's messages, each declared once for both ends
 * (included by wire.h).  Two X-macro tables:
 *
 *   MGW_OPS(X): every op, as X(NAME, number, replied).  The numbers are the
 *   wire's and never move; `replied` is 1 for a request the proxy answers
 *   with a REPLY of the same seq.  enum mgw_op and mgw_op_replied come
 *   from it.
 *
 *   MGW_MESSAGES(M, F): the payload of each fixed-layout message, as
 *   M(NAME, name, F(type, field) ...) in wire order.  Each gives
 *     mgw_<name>_t                        the fields, one member each;
 *     mgw_<name>_encode(b, seq, &m)       starts b as op NAME with seq and
 *                                         appends the fields (the caller
 *                                         frees b, as after mgw_buf_init);
 *     mgw_<name>_decode(c, &m)            reads the fields through the
 *                                         cursor, bounds-checked; 0 when the
 *                                         payload was exactly these fields.
 *   Field types (wire form):
 *     u32, i32, u64  little-endian integers;
 *     size           u64 that must fit a size_t;
 *     str            u32 length + bytes, no NUL among them.  Decoded into a
 *                    malloc'd NUL-terminated copy that the caller frees,
 *                    whatever decode returned (NULL when absent);
 *     bytes          u32 length + bytes.  Decoded as a view into the
 *                    payload (mgw_bytes_t), valid while the payload is.
 *     devs, events   u32 count (<= MGW_MAX_DEVS, MGW_MAX_WAIT) + that many
 *                    u64 IDs (mgw_ids_t): encoded from .v, decoded as a
 *                    view into the payload; read either with mgw_ids_get.
 *
 * Messages whose payload depends on earlier fields (enqueues, kernel
 * launches, program lists, DEVICES and REPLY payloads) are still written
 * and read field by field where they are built and handled; their layouts
 * are in the comments of MGW_OPS.
 */
#ifndef MGW_MESSAGES_H
#define MGW_MESSAGES_H

/* clang-format off */
#define MGW_OPS(X)                                                                                 \
    /* handshake (both lanes; transport/handshake.c) */                                            \
    X(HELLO, 1, 0)             /* c->p: u8 lane, nonce */                                          \
    X(CHALLENGE, 2, 0)         /* p->c: nonce, mac(proxy) */                                       \
    X(RESPONSE, 3, 0)          /* c->p: mac(client) */                                             \
    X(AUTH_OK, 4, 0)           /* p->c: command lane: token */                                     \
    X(JOIN, 5, 0)              /* c->p (bulk lane, after auth): token, u32 stripe index */         \
    /* command lane, client -> proxy */                                                            \
    X(DEVICES, 16, 1)          /* served devices and their info */                                 \
    X(CONTEXT_CREATE, 17, 1)                                                                       \
    X(QUEUE_CREATE, 18, 1)                                                                         \
    X(BUFFER_CREATE, 19, 1)                                                                        \
    X(SUBBUFFER_CREATE, 20, 1)                                                                     \
    X(BUFFER_INIT, 21, 1)      /* initial contents (CL_MEM_COPY_HOST_PTR) */                       \
    X(RELEASE, 22, 0)                                                                              \
    X(GET_INFO, 23, 1)                                                                             \
    X(PROGRAM_SOURCE, 24, 1)                                                                       \
    X(PROGRAM_BINARY, 25, 1)                                                                       \
    X(PROGRAM_BUILD, 26, 1)                                                                        \
    X(PROGRAM_COMPILE, 27, 1)                                                                      \
    X(PROGRAM_LINK, 28, 1)                                                                         \
    X(KERNEL_CREATE, 29, 1)                                                                        \
    X(ENQ_NDRANGE, 30, 0)                                                                          \
    X(ENQ_WRITE, 31, 0)        /* data follows on the bulk lane */                                 \
    X(ENQ_READ, 32, 0)         /* data comes back on the bulk lane */                              \
    X(ENQ_COPY, 33, 0)                                                                             \
    X(ENQ_COPY_RECT, 34, 0)                                                                        \
    X(ENQ_WRITE_RECT, 35, 0)                                                                       \
    X(ENQ_READ_RECT, 36, 0)                                                                        \
    X(ENQ_FILL, 37, 0)                                                                             \
    X(ENQ_MARKER, 38, 0)                                                                           \
    X(ENQ_BARRIER, 39, 0)                                                                          \
    X(USER_EVENT_CREATE, 40, 0)                                                                    \
    X(USER_EVENT_SET, 41, 0)                                                                       \
    X(FLUSH, 42, 0)                                                                                \
    X(PING, 43, 1)                                                                                 \
    X(SHM_OPEN, 44, 1)         /* proxy makes a segment; reply: string name */                     \
    X(SHM_READY, 45, 1)        /* 1 switches the bulk lane to shm; the proxy unlinks */            \
    /* the one-copy lane (transport/bulk.h, proxy/proxy_cma.c), after SHM_READY */                 \
    X(CMA_OPEN, 46, 1)         /* reply: u32 proxy pid, MGTR_CMA_NONCE bytes (raw) */              \
    X(CMA_READY, 47, 1)                                                                            \
    X(ENQ_WRITE_CMA, 48, 0)    /* ENQ_WRITE's payload, then u64 client address; no bulk data */    \
    X(ENQ_READ_CMA, 49, 0)     /* ENQ_READ's payload, then u64 client address */                   \
    X(FINISH, 50, 0)           /* report the queue's completed events (EVENTS_DONE) after */       \
                               /* waiting for those named (none: the whole queue) */               \
    X(RELEASE_EVENTS, 51, 0)   /* RELEASE of each */                                               \
    X(STREAMS, 52, 1)          /* before any bulk connection joins; not sent: 1 stripe; */         \
                               /* reply: u32 stripes granted (the proxy's cap) */                  \
    /* proxy -> client */                                                                          \
    X(REPLY, 64, 0)            /* i32 rc, then op-specific */                                      \
    X(EVENT_DONE, 65, 0)                                                                           \
    X(ERROR, 66, 0)            /* a request the proxy could not decode */                          \
    X(EVENTS_DONE, 67, 0)      /* u32 n (<= MGW_MAX_DONE), then n x (u64 event, i32 status) */     \
    /* bulk lane, both ways: u64 xfer, u64 offset, i32 status, then data (stream) or */            \
    /* u32 slot, u32 offset, u32 length (shm); see transport/bulk.h */                             \
    X(BULK, 80, 0)

#define MGW_MESSAGES(M, F)                                                                         \
    M(CONTEXT_CREATE, context_create, F(u64, id) F(devs, devs))                                    \
    M(QUEUE_CREATE, queue_create, F(u64, id) F(u64, ctx) F(u64, dev) F(u64, props))                \
    M(BUFFER_CREATE, buffer_create, F(u64, id) F(u64, ctx) F(u64, flags) F(size, size))            \
    M(SUBBUFFER_CREATE, subbuffer_create,                                                          \
      F(u64, id) F(u64, parent) F(u64, flags) F(size, origin) F(size, size))                       \
    M(BUFFER_INIT, buffer_init, F(u64, id) F(size, off) F(bytes, data))                            \
    M(RELEASE, release, F(u32, kind) F(u64, id))                                                   \
    M(GET_INFO, get_info, F(u32, kind) F(u64, id) F(u64, aux) F(u32, param))                       \
    M(KERNEL_CREATE, kernel_create, F(u64, id) F(u64, program) F(str, name))                       \
    M(USER_EVENT_CREATE, user_event_create, F(u64, id) F(u64, ctx))                                \
    M(USER_EVENT_SET, user_event_set, F(u64, id) F(i32, status))                                   \
    M(FLUSH, flush, F(u64, queue))                                                                 \
    M(SHM_READY, shm_ready, F(u32, mapped))                                                        \
    M(CMA_READY, cma_ready, F(u32, pid) F(u64, addr)) /* addr: the nonce in the client */          \
    M(STREAMS, streams, F(u32, want))                 /* 1 .. MGW_STREAMS_MAX */                   \
    M(FINISH, finish, F(u64, queue) F(events, events))                                             \
    M(RELEASE_EVENTS, release_events, F(events, events))                                           \
    M(EVENT_DONE, event_done, F(u64, event) F(i32, status))                                        \
    M(ERROR, error, F(i32, rc) F(str, why))
/* clang-format on */

/* A byte string in a payload (type bytes). */
typedef struct mgw_bytes {
    const void *p;
    size_t n;
} mgw_bytes_t;

/* A list of IDs (types devs, events): .v when encoding; a decoded one is a
 * view into the payload (.raw, little-endian), valid while the payload is. */
typedef struct mgw_ids {
    uint32_t n;
    const uint64_t *v;
    const uint8_t *raw;
} mgw_ids_t;

/* Field types: the member, its encoder and its decoder. */
#define MGW_T_u32 uint32_t
#define MGW_T_i32 int32_t
#define MGW_T_u64 uint64_t
#define MGW_T_size size_t
#define MGW_T_str const char *
#define MGW_T_bytes mgw_bytes_t
#define MGW_T_devs mgw_ids_t
#define MGW_T_events mgw_ids_t
#define MGW_ENC_u32(b, v) mgw_buf_u32(b, v)
#define MGW_ENC_i32(b, v) mgw_buf_i32(b, v)
#define MGW_ENC_u64(b, v) mgw_buf_u64(b, v)
#define MGW_ENC_size(b, v) mgw_buf_u64(b, (uint64_t)(v))
#define MGW_ENC_str(b, v) mgw_buf_str(b, v)
#define MGW_ENC_bytes(b, v) mgw_buf_bytes(b, (v).p, (v).n)
#define MGW_ENC_devs(b, v) mgw_buf_ids(b, &(v))
#define MGW_ENC_events(b, v) mgw_buf_ids(b, &(v))
#define MGW_DEC_u32(c, v) (v) = mgw_cur_u32(c)
#define MGW_DEC_i32(c, v) (v) = mgw_cur_i32(c)
#define MGW_DEC_u64(c, v) (v) = mgw_cur_u64(c)
#define MGW_DEC_size(c, v) (v) = mgw_cur_size(c, SIZE_MAX)
#define MGW_DEC_str(c, v) (v) = mgw_cur_strdup(c)
#define MGW_DEC_bytes(c, v) (v).p = mgw_cur_bytes(c, &(v).n)
#define MGW_DEC_devs(c, v) mgw_cur_idview(c, &(v), MGW_MAX_DEVS)
#define MGW_DEC_events(c, v) mgw_cur_idview(c, &(v), MGW_MAX_WAIT)

enum mgw_op {
#define MGW_OP_ENUM(name, num, replied) MGW_OP_##name = num,
    MGW_OPS(MGW_OP_ENUM)
#undef MGW_OP_ENUM
        MGW_OP_CMD_MAX = MGW_OP_STREAMS + 1 /* bound of the command-lane requests */
};

/* 1 when the proxy answers op with a REPLY. */
static inline int mgw_op_replied(int op)
{
    switch (op) {
#define MGW_OP_CASE(name, num, replied)                                                            \
    case num:                                                                                      \
        return replied;
        MGW_OPS(MGW_OP_CASE)
#undef MGW_OP_CASE
    }
    return 0;
}

#define MGW_FIELD_MEMBER(type, field) MGW_T_##type field;
#define MGW_FIELD_ENC(type, field) MGW_ENC_##type(b, m->field);
#define MGW_FIELD_DEC(type, field) MGW_DEC_##type(c, m->field);
#define MGW_STRUCT(OP, name, fields)                                                               \
    typedef struct mgw_##name {                                                                    \
        fields                                                                                     \
    } mgw_##name##_t;
#define MGW_ENCODER(OP, name, fields)                                                              \
    static inline void mgw_##name##_encode(mgw_buf_t *b, uint32_t seq, const mgw_##name##_t *m)    \
    {                                                                                              \
        mgw_buf_init(b, MGW_OP_##OP, 0, seq);                                                      \
        fields                                                                                     \
    }
#define MGW_DECODER(OP, name, fields)                                                              \
    static inline int mgw_##name##_decode(mgw_cur_t *c, mgw_##name##_t *m)                         \
    {                                                                                              \
        fields return mgw_cur_done(c);                                                             \
    }
/* Every message's struct, encoder and decoder; wire.h expands it once the
 * buffer and the cursor are declared. */
#define MGW_MESSAGES_DEFINE()                                                                      \
    MGW_MESSAGES(MGW_STRUCT, MGW_FIELD_MEMBER)                                                     \
    MGW_MESSAGES(MGW_ENCODER, MGW_FIELD_ENC)                                                       \
    MGW_MESSAGES(MGW_DECODER, MGW_FIELD_DEC)

#endif
