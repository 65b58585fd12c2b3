/*
 * The mpigpu remote protocol (client libmpigpu-vcl.so <-> mpigpu-proxy).
 *
 * Every message is a fixed 16-byte header followed by `length` payload bytes:
 *   u32 magic (MGW_MAGIC, carries the protocol version), u16 op, u16 flags,
 *   u32 length, u32 seq (request id; replies carry the request's seq).
 * All integers are little-endian.  Payloads are written with mgw_buf_* and
 * read with mgw_cur_*; every read is bounds-checked and an error is sticky
 * (cur->err), so a decoder checks once at the end and never reads past the
 * payload.  No message is longer than MGW_MSG_MAX.
 *
 * Objects are named by 64-bit wire IDs that the client allocates; raw
 * pointers never cross the wire.  See doc/design.md, "Remote devices".
 */
#ifndef MGW_WIRE_H
#define MGW_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define MGW_MAGIC 0x4d47520eu /* "MGR" + version 14 */
#define MGW_HDR_SIZE 16
#define MGW_MSG_MAX (64u << 20)
#define MGW_CHUNK (1u << 20) /* bulk chunk size */
#define MGW_NONCE 32
#define MGW_MAC 32
#define MGW_TOKEN 32
#define MGW_MAX_WAIT 4096 /* events in one wait list */
#define MGW_MAX_DEVS 256
#define MGW_MAX_DONE 4096  /* completions in one EVENTS_DONE */
#define MGW_STREAMS_MAX 16 /* TCP connections (stripes) of a session's bulk lane */

/* Message flags. */
#define MGW_F_LAST 1u /* last bulk chunk of a transfer */

/* Object kinds in the ID map. */
enum mgw_kind {
    MGW_K_NONE = 0,
    MGW_K_CONTEXT,
    MGW_K_QUEUE,
    MGW_K_MEM,
    MGW_K_PROGRAM,
    MGW_K_KERNEL,
    MGW_K_EVENT,
    MGW_K_DEVICE,        /* info queries only: ID = index of a served device */
    MGW_K_PROGRAM_BUILD, /* info: program build info, aux = device */
    MGW_K_KERNEL_WG,     /* info: kernel work-group info, aux = device */
    MGW_K_KERNEL_ARG,    /* info: kernel argument info, aux = arg index */
    MGW_K_PROFILING,     /* info: event profiling info */
    MGW_K_MAX
};

/* Kernel argument kinds, from the proxy's clGetKernelArgInfo. */
enum mgw_argkind { MGW_ARG_VALUE = 0, MGW_ARG_MEM, MGW_ARG_LOCAL, MGW_ARG_SAMPLER };

enum mgw_op {
    /* handshake (both lanes) */
    MGW_OP_HELLO = 1, /* c->p: u8 lane, nonce */
    MGW_OP_CHALLENGE, /* p->c: nonce, mac(proxy) */
    MGW_OP_RESPONSE,  /* c->p: mac(client) */
    MGW_OP_AUTH_OK,   /* p->c: command lane: token */
    MGW_OP_JOIN,      /* c->p (bulk lane, after auth): token, u32 stripe index */
    /* command lane, client -> proxy; (r) = answered by REPLY */
    MGW_OP_DEVICES = 16,     /* (r) served devices and their info */
    MGW_OP_CONTEXT_CREATE,   /* (r) */
    MGW_OP_QUEUE_CREATE,     /* (r) */
    MGW_OP_BUFFER_CREATE,    /* (r) */
    MGW_OP_SUBBUFFER_CREATE, /* (r) */
    MGW_OP_BUFFER_INIT,      /* (r) initial contents (CL_MEM_COPY_HOST_PTR) */
    MGW_OP_RELEASE,          /* kind, id */
    MGW_OP_GET_INFO,         /* (r) kind, id, aux, param */
    MGW_OP_PROGRAM_SOURCE,   /* (r) */
    MGW_OP_PROGRAM_BINARY,   /* (r) */
    MGW_OP_PROGRAM_BUILD,    /* (r) */
    MGW_OP_PROGRAM_COMPILE,  /* (r) */
    MGW_OP_PROGRAM_LINK,     /* (r) */
    MGW_OP_KERNEL_CREATE,    /* (r) */
    MGW_OP_ENQ_NDRANGE,
    MGW_OP_ENQ_WRITE, /* data follows on the bulk lane */
    MGW_OP_ENQ_READ,  /* data comes back on the bulk lane */
    MGW_OP_ENQ_COPY,
    MGW_OP_ENQ_COPY_RECT,
    MGW_OP_ENQ_WRITE_RECT,
    MGW_OP_ENQ_READ_RECT,
    MGW_OP_ENQ_FILL,
    MGW_OP_ENQ_MARKER,
    MGW_OP_ENQ_BARRIER,
    MGW_OP_USER_EVENT_CREATE,
    MGW_OP_USER_EVENT_SET,
    MGW_OP_FLUSH,
    MGW_OP_PING,      /* (r) */
    MGW_OP_SHM_OPEN,  /* (r) proxy makes a segment; reply: string name */
    MGW_OP_SHM_READY, /* (r) u32 mapped: proxy unlinks; 1 switches the bulk lane to shm */
    /* the one-copy lane (bulk.h, proxy_cma.c), after SHM_READY */
    MGW_OP_CMA_OPEN,      /* (r) reply: u32 proxy pid, MGTR_CMA_NONCE bytes (raw) */
    MGW_OP_CMA_READY,     /* (r) u32 client pid, u64 address of the nonce in its memory */
    MGW_OP_ENQ_WRITE_CMA, /* ENQ_WRITE's payload, then u64 client address; no bulk data */
    MGW_OP_ENQ_READ_CMA,  /* ENQ_READ's payload, then u64 client address */
    MGW_OP_FINISH, /* u64 queue, u32 n, n x u64 event (0: the whole queue): report the queue's
                       completed events after waiting for those (EVENTS_DONE) */
    MGW_OP_RELEASE_EVENTS, /* u32 n (<= MGW_MAX_WAIT), n x u64 event: RELEASE of each */
    /* before any bulk connection joins: u32 stripes wanted (1..MGW_STREAMS_MAX);
     * (r) reply: u32 stripes granted (the proxy's cap); not sent: 1 */
    MGW_OP_STREAMS,
    MGW_OP_CMD_MAX,
    /* proxy -> client */
    MGW_OP_REPLY = 64,  /* i32 rc, then op-specific */
    MGW_OP_EVENT_DONE,  /* u64 event, i32 status */
    MGW_OP_ERROR,       /* i32 rc, string: a request the proxy could not decode */
    MGW_OP_EVENTS_DONE, /* u32 n (<= MGW_MAX_DONE), then n x (u64 event, i32 status) */
    /* bulk lane, both ways: u64 xfer, u64 offset, i32 status, then data
     * (stream) or u32 slot, u32 offset, u32 length (shm); see bulk.h */
    MGW_OP_BULK = 80,
};

enum mgw_lane { MGW_LANE_CMD = 1, MGW_LANE_BULK = 2 };

typedef struct mgw_hdr {
    uint32_t magic;
    uint16_t op;
    uint16_t flags;
    uint32_t length;
    uint32_t seq;
} mgw_hdr_t;

/* A growing output buffer; the first MGW_HDR_SIZE bytes are the header,
 * filled in by mgw_buf_finish.  Allocation failure is sticky in err. */
typedef struct mgw_buf {
    uint8_t *p;
    size_t len, cap;
    int err;
} mgw_buf_t;

/* A read cursor over a payload the caller owns. */
typedef struct mgw_cur {
    const uint8_t *p;
    size_t len, off;
    int err;
} mgw_cur_t;

void mgw_buf_init(mgw_buf_t *b, uint16_t op, uint16_t flags, uint32_t seq);
void mgw_buf_free(mgw_buf_t *b);
void mgw_buf_u8(mgw_buf_t *b, uint8_t v);
void mgw_buf_u32(mgw_buf_t *b, uint32_t v);
void mgw_buf_i32(mgw_buf_t *b, int32_t v);
void mgw_buf_u64(mgw_buf_t *b, uint64_t v);
void mgw_buf_raw(mgw_buf_t *b, const void *p, size_t n);
/* u32 length + bytes */
void mgw_buf_bytes(mgw_buf_t *b, const void *p, size_t n);
void mgw_buf_str(mgw_buf_t *b, const char *s);
/* Writes the header; returns 0, or -1 if allocation failed or too long. */
int mgw_buf_finish(mgw_buf_t *b);

void mgw_cur_init(mgw_cur_t *c, const void *p, size_t n);
uint8_t mgw_cur_u8(mgw_cur_t *c);
uint32_t mgw_cur_u32(mgw_cur_t *c);
int32_t mgw_cur_i32(mgw_cur_t *c);
uint64_t mgw_cur_u64(mgw_cur_t *c);
/* u64 that must fit a size_t and be <= max */
size_t mgw_cur_size(mgw_cur_t *c, size_t max);
/* Points into the payload (no copy); NULL and err set if out of bounds. */
const void *mgw_cur_raw(mgw_cur_t *c, size_t n);
/* u32 length + bytes; *n gets the length */
const void *mgw_cur_bytes(mgw_cur_t *c, size_t *n);
/* A string: returns a malloc'd NUL-terminated copy (caller frees), or NULL
 * with err set; an embedded NUL is an error. */
char *mgw_cur_strdup(mgw_cur_t *c);
/* u32 count (<= max) followed by that many u64; fills out (caller-sized). */
uint32_t mgw_cur_ids(mgw_cur_t *c, uint64_t *out, uint32_t max);
/* 0 when every read stayed in bounds and the payload was consumed exactly. */
int mgw_cur_done(const mgw_cur_t *c);

/* A JOIN payload of n bytes: token and u32 stripe.  0 when n is
 * MGW_TOKEN + 4 and stripe < MGW_STREAMS_MAX; -1 otherwise.  (Fuzzed.) */
int mgw_join_decode(const uint8_t *p, size_t n, uint8_t token[MGW_TOKEN], uint32_t *stripe);

/* Parses and validates a header: magic, length <= max. 0 or -1. */
int mgw_hdr_parse(const uint8_t raw[MGW_HDR_SIZE], mgw_hdr_t *h, uint32_t max);
void mgw_hdr_write(uint8_t raw[MGW_HDR_SIZE], const mgw_hdr_t *h);

/* Shared-key authentication (auth.c), and the MACs of the handshake.  The key is the contents of a
 * file readable by its owner only, trailing newline stripped, >= 16 bytes. */
#define MGW_KEY_MAX 1024
typedef struct mgw_key {
    unsigned char k[MGW_KEY_MAX];
    size_t len;
} mgw_key_t;
int mgw_key_load(const char *path, mgw_key_t *key, char *err, size_t errlen);
/* HMAC-SHA256(key, label | lane | a | b), a and b MGW_NONCE bytes each: the
 * proof each side of the handshake gives that it holds the key. */
void mgw_auth_mac(const mgw_key_t *key, const char *label, uint8_t lane, const uint8_t *a,
                  const uint8_t *b, uint8_t out[MGW_MAC]);

#endif
