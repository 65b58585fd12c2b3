/*
 * The remote protocol's messages, each declared once for both ends
 * (included by wire.h).  Four X-macro tables:
 *
 *   MGW_OPS(X): every op, as X(NAME, number).  The numbers are the wire's
 *   and never move.  enum mgw_op comes from it.
 *
 *   MGW_RECORDS(R, F): groups of fields that messages embed or repeat, as
 *   R(name, F(kind, field, ...) ...).  A record may use only records
 *   declared before it.
 *
 *   MGW_MESSAGES(M, F): the payload of every message but REPLY, as
 *   M(NAME, name, fields) in wire order (a message without payload has no
 *   fields).
 *
 *   MGW_REPLIES(M, F): the requests the proxy answers with a REPLY of the
 *   same seq, each with its reply's fields, as M(NAME, name, fields).  A
 *   REPLY is i32 rc, then these fields when rc is CL_SUCCESS (just rc
 *   otherwise).  mgw_op_replied comes from this table.
 *
 * Per record or message `name` (a reply's is `name_reply`) come
 *   mgw_<name>_t                  the fields, one member each;
 *   mgw_<name>_put(b, &m)         appends the fields to b;
 *   mgw_<name>_get(c, &m)         reads them through the cursor, bounds-
 *                                 checked; every member is set, also after
 *                                 an error (c->err, sticky);
 *   mgw_<name>_free(&m)           frees what a get allocated (str);
 * per record, its list (kind list):
 *   mgw_<name>_list_t             n and .v (an array) when encoding; a
 *                                 decoded list is a view into the payload;
 *   mgw_<name>_next(&l, &m)       the next element, either way: 0, or -1
 *                                 at the end (a decoded element's str is
 *                                 the caller's to free);
 * per message:
 *   mgw_<name>_encode(b, seq, &m) starts b as op NAME with seq and appends
 *                                 the fields (the caller frees b, as after
 *                                 mgw_buf_init);
 *   mgw_<name>_decode(c, &m)      0 when the payload was exactly the
 *                                 fields; the caller then (or whatever it
 *                                 returned) calls mgw_<name>_free;
 * per reply:
 *   mgw_<name>_reply_encode(b, seq, rc, &m)  a whole REPLY (rc, fields);
 *   mgw_<name>_reply_decode(c, &m)           the fields after rc, exactly.
 *
 * Field kinds (wire form; member):
 *   u8, u32, i32, u64  little-endian integers;
 *   size               u64 that must fit a size_t; size_t;
 *   sizes, N           N x size; size_t[N];
 *   fixed, N           N raw bytes (nonces, MACs, tokens); uint8_t[N];
 *   str                u32 length + bytes, no NUL among them; decoded into
 *                      a malloc'd NUL-terminated copy (NULL when absent),
 *                      freed by mgw_<name>_free;
 *   bytes              u32 length + bytes; mgw_bytes_t, decoded as a view
 *                      into the payload (valid while the payload is);
 *   ids, MAX           u32 count (<= MAX) + that many u64 IDs; mgw_ids_t
 *                      (encoded from .v, decoded as a view; read either
 *                      with mgw_ids_get);
 *   rec, R             record R's fields, in place; mgw_R_t;
 *   list, R, MAX       u32 count (<= MAX) + that many records R;
 *                      mgw_R_list_t.
 */
#ifndef MGW_MESSAGES_H
#define MGW_MESSAGES_H

#define MGW_MAX_WAIT 4096 /* events in one wait list */
#define MGW_MAX_DEVS 256
#define MGW_MAX_DONE 4096   /* completions in one EVENTS_DONE */
#define MGW_MAX_ARGS 4096   /* a kernel's arguments */
#define MGW_MAX_PARAMS 4096 /* parameters of one device in DEVICES */
#define MGW_MAX_HEADERS 64  /* embedded headers of one PROGRAM_COMPILE */
#define MGW_CMA_NONCE 16    /* the one-copy lane's probe */
#define MGW_STREAMS_MAX 16  /* TCP connections (stripes) of a session's bulk lane */

#define MGW_MAX_FORMATS 4096 /* image formats in one IMAGE_FORMATS reply */

/* clang-format off */
#define MGW_OPS(X)                                                                                 \
    /* handshake (both lanes; transport/handshake.c) */                                            \
    X(HELLO, 1)                                                                                    \
    X(CHALLENGE, 2)                                                                                \
    X(RESPONSE, 3)                                                                                 \
    X(AUTH_OK, 4)                                                                                  \
    X(JOIN, 5)                 /* bulk lane, after auth */                                         \
    /* command lane, client -> proxy */                                                            \
    X(DEVICES, 16)             /* served devices and their info */                                 \
    X(CONTEXT_CREATE, 17)                                                                          \
    X(QUEUE_CREATE, 18)                                                                            \
    X(BUFFER_CREATE, 19)                                                                           \
    X(SUBBUFFER_CREATE, 20)                                                                        \
    X(BUFFER_INIT, 21)         /* initial contents (CL_MEM_COPY_HOST_PTR) */                       \
    X(RELEASE, 22)                                                                                 \
    X(GET_INFO, 23)                                                                                \
    X(PROGRAM_SOURCE, 24)                                                                          \
    X(PROGRAM_BINARY, 25)                                                                          \
    X(PROGRAM_BUILD, 26)                                                                           \
    X(PROGRAM_COMPILE, 27)                                                                         \
    X(PROGRAM_LINK, 28)                                                                            \
    X(KERNEL_CREATE, 29)                                                                           \
    X(ENQ_NDRANGE, 30)                                                                             \
    X(ENQ_WRITE, 31)           /* data follows on the bulk lane */                                 \
    X(ENQ_READ, 32)            /* data comes back on the bulk lane */                              \
    X(ENQ_COPY, 33)                                                                                \
    X(ENQ_COPY_RECT, 34)                                                                           \
    X(ENQ_WRITE_RECT, 35)                                                                          \
    X(ENQ_READ_RECT, 36)                                                                           \
    X(ENQ_FILL, 37)                                                                                \
    X(ENQ_MARKER, 38)                                                                              \
    X(ENQ_BARRIER, 39)                                                                             \
    X(USER_EVENT_CREATE, 40)                                                                       \
    X(USER_EVENT_SET, 41)                                                                          \
    X(FLUSH, 42)                                                                                   \
    X(PING, 43)                                                                                    \
    X(SHM_OPEN, 44)            /* the proxy makes a segment and names it */                        \
    X(SHM_READY, 45)           /* 1 switches the bulk lane to shm; the proxy unlinks */            \
    /* the one-copy lane (transport/bulk.h, proxy/proxy_cma.c), after SHM_READY */                 \
    X(CMA_OPEN, 46)                                                                                \
    X(CMA_READY, 47)                                                                               \
    X(ENQ_WRITE_CMA, 48)       /* no bulk data: the proxy copies from the client */                \
    X(ENQ_READ_CMA, 49)        /* no bulk data: the proxy copies into the client */                \
    X(FINISH, 50)              /* report the queue's completed events (EVENTS_DONE) after */       \
                               /* waiting for those named (none: the whole queue) */               \
    X(RELEASE_EVENTS, 51)      /* RELEASE of each */                                               \
    X(STREAMS, 52)             /* before any bulk connection joins; not sent: 1 stripe */          \
    /* images and samplers (client/vcl_image.c, proxy/proxy_image.c) */                            \
    X(IMAGE_FORMATS, 53)       /* clGetSupportedImageFormats */                                    \
    X(IMAGE_CREATE, 54)                                                                            \
    X(IMAGE_INIT, 55)          /* initial contents (CL_MEM_COPY/USE_HOST_PTR), packed */           \
    X(SAMPLER_CREATE, 56)                                                                          \
    X(ENQ_WRITE_IMAGE, 57)     /* packed data follows on the bulk lane */                          \
    X(ENQ_READ_IMAGE, 58)      /* packed data comes back on the bulk lane */                       \
    X(ENQ_COPY_IMAGE, 59)      /* image <-> image, image <-> buffer (enum mgw_imgcopy) */          \
    X(ENQ_FILL_IMAGE, 60)                                                                          \
    /* proxy to proxy (proxy/proxy_peer.c): the client names the ends, the bytes go direct */      \
    X(PEER_OPEN, 61)           /* this session's peer ID and key, for the other proxies */         \
    X(PEER_SEND, 62)           /* send a buffer range to a peer proxy's session */                 \
    X(PEER_RECV, 63)           /* receive a range from a peer (as ENQ_WRITE, bytes from a peer) */ \
    X(PEER_CANCEL, 70)         /* the sending side failed: fail the receive */                     \
    X(EVENT_FORWARD, 71)       /* tell a peer's stand-in user event when an event completes */    \
    /* proxy -> client */                                                                          \
    X(REPLY, 64)               /* i32 rc, then the op's MGW_REPLIES fields */                      \
    X(EVENT_DONE, 65)                                                                              \
    X(ERROR, 66)               /* a request the proxy could not decode, or failed without */       \
                               /* an event to carry the failure */                                 \
    X(EVENTS_DONE, 67)                                                                             \
    /* bulk lane, both ways; see transport/bulk.h */                                               \
    X(BULK, 80)                                                                                    \
    /* peer lane, after its handshake: the sender's one transfer, then its bytes */                \
    X(PEER_XFER, 81)                                                                               \
    X(PEER_EVENT, 82)          /* or: an event completed, set its stand-in */

#define MGW_RECORDS(R, F)                                                                          \
    /* the head of every enqueue: the client's queue, the command's event, its wait list */        \
    R(enq_head, F(u64, queue) F(u64, event) F(ids, waits, MGW_MAX_WAIT))                           \
    /* a transfer: its ID on the bulk lane (the event's), its size, the buffer */                  \
    R(xfer_head, F(u64, xfer) F(size, size) F(rec, head, enq_head) F(u64, mem))                    \
    /* a buffer rect: origin, region, the buffer's pitches */                                      \
    R(rect, F(sizes, origin, 3) F(sizes, region, 3) F(size, row_pitch) F(size, slice_pitch))       \
    /* a launch's argument (enum mgw_argkind): num is a buffer's ID (0: none) or a local */        \
    /* size; value holds a value's bytes */                                                        \
    R(karg, F(u32, index) F(u8, kind) F(u64, num) F(bytes, value))                                 \
    R(karg_info, F(u8, kind) F(str, type)) /* kind (0xff: unknown), type name */                   \
    R(binary, F(u64, dev) F(bytes, data))                                                          \
    R(header, F(u64, program) F(str, name)) /* an embedded header of PROGRAM_COMPILE */            \
    R(status, F(i32, status))                                                                      \
    R(blob, F(bytes, data))                                                                        \
    R(dev_param, F(u32, param) F(bytes, value))                                                    \
    R(device, F(list, params, dev_param, MGW_MAX_PARAMS))                                          \
    R(event_status, F(u64, event) F(i32, status))                                                  \
    /* the shm lane's tail of a BULK message: where the chunk's bytes lie */                       \
    R(shm_desc, F(u32, slot) F(u32, off) F(u32, len))                                              \
    /* images: a cl_image_format; a cl_image_desc (buffer: a buffer's ID, 0: none) */              \
    R(image_format, F(u32, order) F(u32, type))                                                    \
    R(image_desc,                                                                                  \
      F(u32, type) F(size, width) F(size, height) F(size, depth) F(size, array_size)               \
      F(size, row_pitch) F(size, slice_pitch) F(u32, mip_levels) F(u32, samples) F(u64, buffer))   \
    /* an image region: origin and region in pixels (rows, slices or layers) */                    \
    R(image_rect, F(sizes, origin, 3) F(sizes, region, 3))

#define MGW_MESSAGES(M, F)                                                                         \
    /* handshake: MACs of the nonces, see transport/handshake.c; encrypt: 0 plain or 1 (each  \
       side's MPIGPU_VCL_ENCRYPT), ciphers: the MGW_CIPHER_* the client offers, cipher: the  \
       one the proxy chose (0 when plain) */                                                   \
    /* sid: the peer lane's session ID (PEER_OPEN; zeros on the other lanes) */                   \
    M(HELLO, hello,                                                                                \
      F(u8, lane) F(fixed, nonce, MGW_NONCE) F(u8, encrypt) F(u8, ciphers)                         \
      F(fixed, sid, MGW_TOKEN))                                                                    \
    M(CHALLENGE, challenge,                                                                    \
      F(fixed, nonce, MGW_NONCE) F(fixed, mac, MGW_MAC) F(u8, encrypt) F(u8, cipher))          \
    M(RESPONSE, response, F(fixed, mac, MGW_MAC))                                                  \
    M(AUTH_OK, auth_ok, F(fixed, token, MGW_TOKEN))                                                \
    M(JOIN, join, F(fixed, token, MGW_TOKEN) F(u32, stripe)) /* stripe < MGW_STREAMS_MAX */        \
    /* command lane */                                                                             \
    M(DEVICES, devices, )                                                                          \
    M(CONTEXT_CREATE, context_create, F(u64, id) F(ids, devs, MGW_MAX_DEVS))                       \
    M(QUEUE_CREATE, queue_create, F(u64, id) F(u64, ctx) F(u64, dev) F(u64, props))                \
    M(BUFFER_CREATE, buffer_create, F(u64, id) F(u64, ctx) F(u64, flags) F(size, size))            \
    M(SUBBUFFER_CREATE, subbuffer_create,                                                          \
      F(u64, id) F(u64, parent) F(u64, flags) F(size, origin) F(size, size))                       \
    M(BUFFER_INIT, buffer_init, F(u64, id) F(size, off) F(bytes, data))                            \
    M(RELEASE, release, F(u32, kind) F(u64, id))                                                   \
    M(GET_INFO, get_info, F(u32, kind) F(u64, id) F(u64, aux) F(u32, param))                       \
    M(PROGRAM_SOURCE, program_source, F(u64, id) F(u64, ctx) F(bytes, source))                     \
    M(PROGRAM_BINARY, program_binary,                                                              \
      F(u64, id) F(u64, ctx) F(list, binaries, binary, MGW_MAX_DEVS))                              \
    M(PROGRAM_BUILD, program_build, F(u64, id) F(ids, devs, MGW_MAX_DEVS) F(str, options))         \
    M(PROGRAM_COMPILE, program_compile,                                                            \
      F(u64, id) F(ids, devs, MGW_MAX_DEVS) F(str, options)                                        \
      F(list, headers, header, MGW_MAX_HEADERS))                                                   \
    M(PROGRAM_LINK, program_link,                                                                  \
      F(u64, id) F(u64, ctx) F(ids, devs, MGW_MAX_DEVS) F(str, options)                            \
      F(ids, programs, MGW_MAX_DEVS))                                                              \
    M(KERNEL_CREATE, kernel_create, F(u64, id) F(u64, program) F(str, name))                       \
    M(ENQ_NDRANGE, enq_ndrange,                                                                    \
      F(rec, head, enq_head) F(u64, kernel) F(u32, dim) F(sizes, offset, 3)                        \
      F(sizes, global, 3) F(sizes, local, 3) F(u8, has_local)                                      \
      F(list, args, karg, MGW_MAX_ARGS)) /* the arguments changed since the last launch */         \
    M(ENQ_WRITE, enq_write, F(rec, x, xfer_head) F(size, off))                                     \
    M(ENQ_READ, enq_read, F(rec, x, xfer_head) F(size, off))                                       \
    M(ENQ_COPY, enq_copy,                                                                          \
      F(rec, head, enq_head) F(u64, src) F(u64, dst) F(size, src_off) F(size, dst_off)             \
      F(size, size))                                                                               \
    M(ENQ_COPY_RECT, enq_copy_rect,                                                                \
      F(rec, head, enq_head) F(u64, src) F(u64, dst) F(sizes, src_origin, 3)                       \
      F(sizes, dst_origin, 3) F(sizes, region, 3) F(size, src_row_pitch)                           \
      F(size, src_slice_pitch) F(size, dst_row_pitch) F(size, dst_slice_pitch))                    \
    M(ENQ_WRITE_RECT, enq_write_rect, F(rec, x, xfer_head) F(rec, rect, rect))                     \
    M(ENQ_READ_RECT, enq_read_rect, F(rec, x, xfer_head) F(rec, rect, rect))                       \
    M(ENQ_FILL, enq_fill,                                                                          \
      F(rec, head, enq_head) F(u64, mem) F(bytes, pattern) F(size, off) F(size, size))             \
    M(ENQ_MARKER, enq_marker, F(rec, head, enq_head))                                              \
    M(ENQ_BARRIER, enq_barrier, F(rec, head, enq_head))                                            \
    M(USER_EVENT_CREATE, user_event_create, F(u64, id) F(u64, ctx))                                \
    M(USER_EVENT_SET, user_event_set, F(u64, id) F(i32, status))                                   \
    M(FLUSH, flush, F(u64, queue))                                                                 \
    M(PING, ping, )                                                                                \
    M(SHM_OPEN, shm_open, )                                                                        \
    M(SHM_READY, shm_ready, F(u32, mapped))                                                        \
    M(CMA_OPEN, cma_open, )                                                                        \
    M(CMA_READY, cma_ready, F(u32, pid) F(u64, addr)) /* addr: the nonce in the client */          \
    /* addr: the client's host range [addr, addr + x.size) */                                      \
    M(ENQ_WRITE_CMA, enq_write_cma, F(rec, x, xfer_head) F(size, off) F(u64, addr))                \
    M(ENQ_READ_CMA, enq_read_cma, F(rec, x, xfer_head) F(size, off) F(u64, addr))                  \
    M(FINISH, finish, F(u64, queue) F(ids, events, MGW_MAX_WAIT))                                  \
    M(RELEASE_EVENTS, release_events, F(ids, events, MGW_MAX_WAIT))                                \
    M(STREAMS, streams, F(u32, want))                 /* 1 .. MGW_STREAMS_MAX */                   \
    M(IMAGE_FORMATS, image_formats, F(u64, ctx) F(u64, flags) F(u32, type))                        \
    M(IMAGE_CREATE, image_create,                                                                  \
      F(u64, id) F(u64, ctx) F(u64, flags) F(rec, format, image_format) F(rec, desc, image_desc))  \
    /* data: the rect's pixels packed (rows of region[0] pixels, no padding) */                    \
    M(IMAGE_INIT, image_init, F(u64, id) F(rec, rect, image_rect) F(bytes, data))                  \
    M(SAMPLER_CREATE, sampler_create,                                                              \
      F(u64, id) F(u64, ctx) F(u32, normalized) F(u32, addressing) F(u32, filter))                 \
    /* x.size: the rect's pixels packed, in bytes */                                               \
    M(ENQ_WRITE_IMAGE, enq_write_image, F(rec, x, xfer_head) F(rec, rect, image_rect))             \
    M(ENQ_READ_IMAGE, enq_read_image, F(rec, x, xfer_head) F(rec, rect, image_rect))               \
    /* a buffer's side: offset in src_origin[0] or dst_origin[0] (the others 0) */                 \
    M(ENQ_COPY_IMAGE, enq_copy_image,                                                              \
      F(rec, head, enq_head) F(u8, how) F(u64, src) F(u64, dst) F(sizes, src_origin, 3)            \
      F(sizes, dst_origin, 3) F(sizes, region, 3))                                                 \
    /* color: a cl_float4, cl_int4 or cl_uint4 by the image's channel type */                      \
    M(ENQ_FILL_IMAGE, enq_fill_image,                                                              \
      F(rec, head, enq_head) F(u64, mem) F(fixed, color, 16) F(rec, rect, image_rect))             \
    M(PEER_OPEN, peer_open, )                                                                      \
    /* x: the source range's transfer (x.xfer: the receive's, x.head on a queue of this proxy, */  \
    /* x.mem the source buffer), off its offset, or rect (region[0] > 0) its rect, packed on */    \
    /* the way; addr, sid, key: the receiving proxy's session */                                   \
    M(PEER_SEND, peer_send,                                                                        \
      F(rec, x, xfer_head) F(size, off) F(rec, rect, rect) F(str, addr) F(fixed, sid, MGW_TOKEN)   \
      F(fixed, key, MGW_TOKEN))                                                                    \
    M(PEER_RECV, peer_recv, F(rec, x, xfer_head) F(size, off) F(rec, rect, rect))                  \
    M(PEER_CANCEL, peer_cancel, F(u64, xfer) F(i32, status))                                       \
    /* when event completes, set the user event standin of the session (addr, sid, key) */         \
    M(EVENT_FORWARD, event_forward,                                                                \
      F(u64, event) F(u64, standin) F(str, addr) F(fixed, sid, MGW_TOKEN)                          \
      F(fixed, key, MGW_TOKEN))                                                                    \
    /* proxy -> client */                                                                          \
    M(EVENT_DONE, event_done, F(u64, event) F(i32, status))                                        \
    M(ERROR, error, F(i32, rc) F(str, why))                                                        \
    M(EVENTS_DONE, events_done, F(list, done, event_status, MGW_MAX_DONE))                         \
    /* bulk lane: then the chunk's bytes (stream lane) or a shm_desc (shm lane); the */            \
    /* header's length counts them and its flags say MGW_F_LAST */                                 \
    M(BULK, bulk, F(u64, xfer) F(u64, off) F(i32, status))                                         \
    /* peer lane: size bytes follow when status is 0 */                                            \
    M(PEER_XFER, peer_xfer, F(u64, xfer) F(size, size) F(i32, status))                             \
    M(PEER_EVENT, peer_event, F(u64, standin) F(i32, status))

#define MGW_REPLIES(M, F)                                                                          \
    M(DEVICES, devices, F(list, devices, device, MGW_MAX_DEVS))                                    \
    M(CONTEXT_CREATE, context_create, )                                                            \
    M(QUEUE_CREATE, queue_create, )                                                                \
    M(BUFFER_CREATE, buffer_create, )                                                              \
    M(SUBBUFFER_CREATE, subbuffer_create, )                                                        \
    M(BUFFER_INIT, buffer_init, )                                                                  \
    /* value; CL_PROGRAM_BINARIES: one binary per device instead */                                \
    M(GET_INFO, get_info, F(bytes, value) F(list, binaries, blob, MGW_MAX_DEVS))                   \
    M(PROGRAM_SOURCE, program_source, )                                                            \
    M(PROGRAM_BINARY, program_binary, F(list, statuses, status, MGW_MAX_DEVS))                     \
    M(PROGRAM_BUILD, program_build, )                                                              \
    M(PROGRAM_COMPILE, program_compile, )                                                          \
    M(PROGRAM_LINK, program_link, )                                                                \
    M(KERNEL_CREATE, kernel_create, F(list, args, karg_info, MGW_MAX_ARGS))                        \
    M(PING, ping, )                                                                                \
    M(SHM_OPEN, shm_open, F(str, name))                                                            \
    M(SHM_READY, shm_ready, )                                                                      \
    M(CMA_OPEN, cma_open, F(u32, pid) F(fixed, nonce, MGW_CMA_NONCE))                              \
    M(CMA_READY, cma_ready, )                                                                      \
    M(STREAMS, streams, F(u32, granted)) /* 1 .. want, at most the proxy's cap */                  \
    M(IMAGE_FORMATS, image_formats, F(list, formats, image_format, MGW_MAX_FORMATS))               \
    M(IMAGE_CREATE, image_create, )                                                                \
    M(IMAGE_INIT, image_init, )                                                                    \
    M(SAMPLER_CREATE, sampler_create, )                                                            \
    M(PEER_OPEN, peer_open, F(fixed, sid, MGW_TOKEN) F(fixed, key, MGW_TOKEN))
/* clang-format on */

/* A byte string in a payload (kind bytes). */
typedef struct mgw_bytes {
    const void *p;
    size_t n;
} mgw_bytes_t;

/* A list of IDs (kind ids): .v when encoding; a decoded one is a view into
 * the payload (.raw, little-endian), valid while the payload is. */
typedef struct mgw_ids {
    uint32_t n;
    const uint64_t *v;
    const uint8_t *raw;
} mgw_ids_t;

enum mgw_op {
#define MGW_OP_ENUM(name, num) MGW_OP_##name = num,
    MGW_OPS(MGW_OP_ENUM)
#undef MGW_OP_ENUM
        MGW_OP_CMD_MAX = MGW_OP_EVENT_FORWARD + 1 /* bound of the command-lane requests */
};

/* 1 when the proxy answers op with a REPLY (op has an MGW_REPLIES entry). */
static inline int mgw_op_replied(int op)
{
    switch (op) {
#define MGW_OP_CASE(OP, name, ...)                                                                 \
    case MGW_OP_##OP:                                                                              \
        return 1;
#define MGW_NO_FIELD(kind, ...)
        MGW_REPLIES(MGW_OP_CASE, MGW_NO_FIELD)
#undef MGW_OP_CASE
    }
    return 0;
}

/* Per kind: the member (MGW_M_), how it is put (MGW_P_), got (MGW_G_) and
 * freed (MGW_X_).  v is the member; the rest are the kind's arguments. */
#define MGW_M_u8(f, ...) uint8_t f;
#define MGW_M_u32(f, ...) uint32_t f;
#define MGW_M_i32(f, ...) int32_t f;
#define MGW_M_u64(f, ...) uint64_t f;
#define MGW_M_size(f, ...) size_t f;
#define MGW_M_sizes(f, n) size_t f[n];
#define MGW_M_fixed(f, n) uint8_t f[n];
#define MGW_M_str(f, ...) const char *f;
#define MGW_M_bytes(f, ...) mgw_bytes_t f;
#define MGW_M_ids(f, max) mgw_ids_t f;
#define MGW_M_rec(f, r) mgw_##r##_t f;
#define MGW_M_list(f, r, max) mgw_##r##_list_t f;
#define MGW_P_u8(b, v, ...) mgw_buf_u8(b, v);
#define MGW_P_u32(b, v, ...) mgw_buf_u32(b, v);
#define MGW_P_i32(b, v, ...) mgw_buf_i32(b, v);
#define MGW_P_u64(b, v, ...) mgw_buf_u64(b, v);
#define MGW_P_size(b, v, ...) mgw_buf_u64(b, (uint64_t)(v));
#define MGW_P_sizes(b, v, n)                                                                       \
    for (int i_ = 0; i_ < (n); i_++)                                                               \
        mgw_buf_u64(b, (uint64_t)(v)[i_]);
#define MGW_P_fixed(b, v, n) mgw_buf_raw(b, v, n);
#define MGW_P_str(b, v, ...) mgw_buf_str(b, v);
#define MGW_P_bytes(b, v, ...) mgw_buf_bytes(b, (v).p, (v).n);
#define MGW_P_ids(b, v, max) mgw_buf_ids(b, &(v));
#define MGW_P_rec(b, v, r) mgw_##r##_put(b, &(v));
#define MGW_P_list(b, v, r, max) mgw_##r##_list_put(b, &(v));
#define MGW_G_u8(c, v, ...) (v) = mgw_cur_u8(c);
#define MGW_G_u32(c, v, ...) (v) = mgw_cur_u32(c);
#define MGW_G_i32(c, v, ...) (v) = mgw_cur_i32(c);
#define MGW_G_u64(c, v, ...) (v) = mgw_cur_u64(c);
#define MGW_G_size(c, v, ...) (v) = mgw_cur_size(c, SIZE_MAX);
#define MGW_G_sizes(c, v, n)                                                                       \
    for (int i_ = 0; i_ < (n); i_++)                                                               \
        (v)[i_] = mgw_cur_size(c, SIZE_MAX);
#define MGW_G_fixed(c, v, n) mgw_cur_copy(c, v, n);
#define MGW_G_str(c, v, ...) (v) = mgw_cur_strdup(c);
#define MGW_G_bytes(c, v, ...) (v).p = mgw_cur_bytes(c, &(v).n);
#define MGW_G_ids(c, v, max) mgw_cur_idview(c, &(v), max);
#define MGW_G_rec(c, v, r) mgw_##r##_get(c, &(v));
#define MGW_G_list(c, v, r, max) mgw_##r##_list_get(c, &(v), max);
#define MGW_X_u8(v, ...)
#define MGW_X_u32(v, ...)
#define MGW_X_i32(v, ...)
#define MGW_X_u64(v, ...)
#define MGW_X_size(v, ...)
#define MGW_X_sizes(v, ...)
#define MGW_X_fixed(v, ...)
#define MGW_X_str(v, ...)                                                                          \
    free((char *)(v));                                                                             \
    (v) = NULL;
#define MGW_X_bytes(v, ...)
#define MGW_X_ids(v, ...)
#define MGW_X_rec(v, r) mgw_##r##_free(&(v));
#define MGW_X_list(v, ...)

#define MGW_F_MEMBER(kind, ...) MGW_M_##kind(__VA_ARGS__)
#define MGW_F_PUT(kind, f, ...) MGW_P_##kind(b, m->f, __VA_ARGS__)
#define MGW_F_GET(kind, f, ...) MGW_G_##kind(c, m->f, __VA_ARGS__)
#define MGW_F_FREE(kind, f, ...) MGW_X_##kind(m->f, __VA_ARGS__)

/* A group of fields `name`: its struct, and the prototypes of its functions
 * (so that the definitions may come in any order). */
#define MGW_GROUP_STRUCT(name, ...)                                                                \
    typedef struct mgw_##name {                                                                    \
        __VA_ARGS__                                                                                \
    } mgw_##name##_t;                                                                              \
    static inline void mgw_##name##_put(mgw_buf_t *b, const mgw_##name##_t *m);                    \
    static inline void mgw_##name##_get(mgw_cur_t *c, mgw_##name##_t *m);                          \
    static inline void mgw_##name##_free(mgw_##name##_t *m);
/* A record's list: encoded from .v (n elements); decoded as a view of the
 * n elements' bytes (raw, len), each checked once by the decoder and read
 * again by mgw_<name>_next. */
#define MGW_LIST_TYPE(name)                                                                        \
    typedef struct mgw_##name##_list {                                                             \
        uint32_t n;                                                                                \
        const mgw_##name##_t *v;                                                                   \
        const uint8_t *raw;                                                                        \
        size_t len;                                                                                \
        uint32_t i; /* next element */                                                             \
        size_t at;  /* its offset in raw */                                                        \
    } mgw_##name##_list_t;
#define MGW_LIST_FUNCS(name)                                                                       \
    static inline void mgw_##name##_list_put(mgw_buf_t *b, const mgw_##name##_list_t *l)           \
    {                                                                                              \
        mgw_buf_u32(b, l->n);                                                                      \
        if (!l->v) {                                                                               \
            mgw_buf_raw(b, l->raw, l->len); /* a decoded list, already checked */                  \
            return;                                                                                \
        }                                                                                          \
        for (uint32_t i = 0; i < l->n; i++)                                                        \
            mgw_##name##_put(b, &l->v[i]);                                                         \
    }                                                                                              \
    static inline void mgw_##name##_list_get(mgw_cur_t *c, mgw_##name##_list_t *l, uint32_t max)   \
    {                                                                                              \
        uint32_t n = mgw_cur_u32(c);                                                               \
        size_t start = c->off;                                                                     \
        memset(l, 0, sizeof *l);                                                                   \
        if (n > max)                                                                               \
            c->err = 1;                                                                            \
        for (uint32_t i = 0; i < n && !c->err; i++) {                                              \
            mgw_##name##_t e;                                                                      \
            mgw_##name##_get(c, &e);                                                               \
            mgw_##name##_free(&e);                                                                 \
        }                                                                                          \
        if (!c->err) {                                                                             \
            l->n = n;                                                                              \
            l->raw = c->p + start;                                                                 \
            l->len = c->off - start;                                                               \
        }                                                                                          \
    }                                                                                              \
    static inline int mgw_##name##_next(mgw_##name##_list_t *l, mgw_##name##_t *e)                 \
    {                                                                                              \
        if (l->i >= l->n)                                                                          \
            return -1;                                                                             \
        if (l->v) {                                                                                \
            *e = l->v[l->i++];                                                                     \
            return 0;                                                                              \
        }                                                                                          \
        mgw_cur_t c;                                                                               \
        mgw_cur_init(&c, l->raw, l->len);                                                          \
        c.off = l->at;                                                                             \
        mgw_##name##_get(&c, e);                                                                   \
        l->at = c.off;                                                                             \
        l->i++;                                                                                    \
        return c.err ? -1 : 0;                                                                     \
    }

/* Records */
#define MGW_REC_STRUCT(name, ...)                                                                  \
    MGW_GROUP_STRUCT(name, __VA_ARGS__)                                                            \
    MGW_LIST_TYPE(name)                                                                            \
    static inline void mgw_##name##_list_put(mgw_buf_t *b, const mgw_##name##_list_t *l);          \
    static inline void mgw_##name##_list_get(mgw_cur_t *c, mgw_##name##_list_t *l, uint32_t max);  \
    static inline int mgw_##name##_next(mgw_##name##_list_t *l, mgw_##name##_t *e);
#define MGW_REC_PUT(name, ...)                                                                     \
    static inline void mgw_##name##_put(mgw_buf_t *b, const mgw_##name##_t *m)                     \
    {                                                                                              \
        __VA_ARGS__(void) b;                                                                       \
        (void)m;                                                                                   \
    }
#define MGW_REC_GET(name, ...)                                                                     \
    static inline void mgw_##name##_get(mgw_cur_t *c, mgw_##name##_t *m)                           \
    {                                                                                              \
        memset(m, 0, sizeof *m);                                                                   \
        __VA_ARGS__(void) c;                                                                       \
    }
#define MGW_REC_FREE(name, ...)                                                                    \
    static inline void mgw_##name##_free(mgw_##name##_t *m)                                        \
    {                                                                                              \
        __VA_ARGS__(void) m;                                                                       \
    }
#define MGW_REC_LIST(name, ...) MGW_LIST_FUNCS(name)

/* Messages and replies, as groups named name and name_reply. */
#define MGW_MSG_STRUCT(OP, name, ...) MGW_GROUP_STRUCT(name, __VA_ARGS__)
#define MGW_MSG_PUT(OP, name, ...) MGW_REC_PUT(name, __VA_ARGS__)
#define MGW_MSG_GET(OP, name, ...) MGW_REC_GET(name, __VA_ARGS__)
#define MGW_MSG_FREE(OP, name, ...) MGW_REC_FREE(name, __VA_ARGS__)
#define MGW_MSG_CODEC(OP, name, ...)                                                               \
    static inline void mgw_##name##_encode(mgw_buf_t *b, uint32_t seq, const mgw_##name##_t *m)    \
    {                                                                                              \
        mgw_buf_init(b, MGW_OP_##OP, 0, seq);                                                      \
        mgw_##name##_put(b, m);                                                                    \
    }                                                                                              \
    static inline int mgw_##name##_decode(mgw_cur_t *c, mgw_##name##_t *m)                         \
    {                                                                                              \
        mgw_##name##_get(c, m);                                                                    \
        return mgw_cur_done(c);                                                                    \
    }
#define MGW_REP_STRUCT(OP, name, ...) MGW_GROUP_STRUCT(name##_reply, __VA_ARGS__)
#define MGW_REP_PUT(OP, name, ...) MGW_REC_PUT(name##_reply, __VA_ARGS__)
#define MGW_REP_GET(OP, name, ...) MGW_REC_GET(name##_reply, __VA_ARGS__)
#define MGW_REP_FREE(OP, name, ...) MGW_REC_FREE(name##_reply, __VA_ARGS__)
#define MGW_REP_CODEC(OP, name, ...)                                                               \
    static inline void mgw_##name##_reply_encode(mgw_buf_t *b, uint32_t seq, int32_t rc,           \
                                                 const mgw_##name##_reply_t *m)                    \
    {                                                                                              \
        mgw_reply_init(b, seq, rc);                                                                \
        if (rc == 0)                                                                               \
            mgw_##name##_reply_put(b, m);                                                          \
    }                                                                                              \
    static inline int mgw_##name##_reply_decode(mgw_cur_t *c, mgw_##name##_reply_t *m)             \
    {                                                                                              \
        mgw_##name##_reply_get(c, m);                                                              \
        return mgw_cur_done(c);                                                                    \
    }

/* Every record's, message's and reply's struct and functions; wire.h
 * expands it once the buffer and the cursor are declared. */
#define MGW_MESSAGES_DEFINE()                                                                      \
    MGW_RECORDS(MGW_REC_STRUCT, MGW_F_MEMBER)                                                      \
    MGW_MESSAGES(MGW_MSG_STRUCT, MGW_F_MEMBER)                                                     \
    MGW_REPLIES(MGW_REP_STRUCT, MGW_F_MEMBER)                                                      \
    MGW_RECORDS(MGW_REC_PUT, MGW_F_PUT)                                                            \
    MGW_RECORDS(MGW_REC_GET, MGW_F_GET)                                                            \
    MGW_RECORDS(MGW_REC_FREE, MGW_F_FREE)                                                          \
    MGW_RECORDS(MGW_REC_LIST, MGW_NO_FIELD)                                                        \
    MGW_MESSAGES(MGW_MSG_PUT, MGW_F_PUT)                                                           \
    MGW_MESSAGES(MGW_MSG_GET, MGW_F_GET)                                                           \
    MGW_MESSAGES(MGW_MSG_FREE, MGW_F_FREE)                                                         \
    MGW_MESSAGES(MGW_MSG_CODEC, MGW_NO_FIELD)                                                      \
    MGW_REPLIES(MGW_REP_PUT, MGW_F_PUT)                                                            \
    MGW_REPLIES(MGW_REP_GET, MGW_F_GET)                                                            \
    MGW_REPLIES(MGW_REP_FREE, MGW_F_FREE)                                                          \
    MGW_REPLIES(MGW_REP_CODEC, MGW_NO_FIELD)

#endif
