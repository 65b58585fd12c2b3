/*
 * The mpigpu remote protocol (client libmpigpu-vcl.so <-> mpigpu-proxy).
 *
 * Every message is a fixed 16-byte header followed by `length` payload bytes:
 *   u32 magic (MGRM_MAGIC, carries the protocol version), u16 op, u16 flags,
 *   u32 length, u32 seq (request id; replies carry the request's seq).
 * All integers are little-endian.  Payloads are written with mgrm_buf_* and
 * read with mgrm_cur_*; every read is bounds-checked and an error is sticky
 * (cur->err), so a decoder checks once at the end and never reads past the
 * payload.  No message is longer than MGRM_MSG_MAX.
 *
 * Objects are named by 64-bit wire IDs that the client allocates; raw
 * pointers never cross the wire.  See doc/design.md, "Remote devices".
 */
#ifndef MGRM_WIRE_H
#define MGRM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define MGRM_MAGIC 0x4d47520eu /* "MGR" + version 14 */
#define MGRM_HDR_SIZE 16
#define MGRM_MSG_MAX (64u << 20)
#define MGRM_CHUNK (1u << 20) /* bulk chunk size */
#define MGRM_NONCE 32
#define MGRM_MAC 32
#define MGRM_TOKEN 32
#define MGRM_MAX_WAIT 4096 /* events in one wait list */
#define MGRM_MAX_DEVS 256
#define MGRM_MAX_DONE 4096  /* completions in one EVENTS_DONE */
#define MGRM_STREAMS_MAX 16 /* TCP connections (stripes) of a session's bulk lane */

/* Message flags. */
#define MGRM_F_LAST 1u /* last bulk chunk of a transfer */

/* Object kinds in the ID map. */
enum mgrm_kind {
    MGRM_K_NONE = 0,
    MGRM_K_CONTEXT,
    MGRM_K_QUEUE,
    MGRM_K_MEM,
    MGRM_K_PROGRAM,
    MGRM_K_KERNEL,
    MGRM_K_EVENT,
    MGRM_K_DEVICE,        /* info queries only: ID = index of a served device */
    MGRM_K_PROGRAM_BUILD, /* info: program build info, aux = device */
    MGRM_K_KERNEL_WG,     /* info: kernel work-group info, aux = device */
    MGRM_K_KERNEL_ARG,    /* info: kernel argument info, aux = arg index */
    MGRM_K_PROFILING,     /* info: event profiling info */
    MGRM_K_MAX
};

/* Kernel argument kinds, from the proxy's clGetKernelArgInfo. */
enum mgrm_argkind { MGRM_ARG_VALUE = 0, MGRM_ARG_MEM, MGRM_ARG_LOCAL, MGRM_ARG_SAMPLER };

enum mgrm_op {
    /* handshake (both lanes) */
    MGRM_OP_HELLO = 1, /* c->p: u8 lane, nonce */
    MGRM_OP_CHALLENGE, /* p->c: nonce, mac(proxy) */
    MGRM_OP_RESPONSE,  /* c->p: mac(client) */
    MGRM_OP_AUTH_OK,   /* p->c: command lane: token */
    MGRM_OP_JOIN,      /* c->p (bulk lane, after auth): token, u32 stripe index */
    /* command lane, client -> proxy; (r) = answered by REPLY */
    MGRM_OP_DEVICES = 16,     /* (r) served devices and their info */
    MGRM_OP_CONTEXT_CREATE,   /* (r) */
    MGRM_OP_QUEUE_CREATE,     /* (r) */
    MGRM_OP_BUFFER_CREATE,    /* (r) */
    MGRM_OP_SUBBUFFER_CREATE, /* (r) */
    MGRM_OP_BUFFER_INIT,      /* (r) initial contents (CL_MEM_COPY_HOST_PTR) */
    MGRM_OP_RELEASE,          /* kind, id */
    MGRM_OP_GET_INFO,         /* (r) kind, id, aux, param */
    MGRM_OP_PROGRAM_SOURCE,   /* (r) */
    MGRM_OP_PROGRAM_BINARY,   /* (r) */
    MGRM_OP_PROGRAM_BUILD,    /* (r) */
    MGRM_OP_PROGRAM_COMPILE,  /* (r) */
    MGRM_OP_PROGRAM_LINK,     /* (r) */
    MGRM_OP_KERNEL_CREATE,    /* (r) */
    MGRM_OP_ENQ_NDRANGE,
    MGRM_OP_ENQ_WRITE, /* data follows on the bulk lane */
    MGRM_OP_ENQ_READ,  /* data comes back on the bulk lane */
    MGRM_OP_ENQ_COPY,
    MGRM_OP_ENQ_COPY_RECT,
    MGRM_OP_ENQ_WRITE_RECT,
    MGRM_OP_ENQ_READ_RECT,
    MGRM_OP_ENQ_FILL,
    MGRM_OP_ENQ_MARKER,
    MGRM_OP_ENQ_BARRIER,
    MGRM_OP_USER_EVENT_CREATE,
    MGRM_OP_USER_EVENT_SET,
    MGRM_OP_FLUSH,
    MGRM_OP_PING,      /* (r) */
    MGRM_OP_SHM_OPEN,  /* (r) proxy makes a segment; reply: string name */
    MGRM_OP_SHM_READY, /* (r) u32 mapped: proxy unlinks; 1 switches the bulk lane to shm */
    /* the one-copy lane (bulk.h, proxy_cma.c), after SHM_READY */
    MGRM_OP_CMA_OPEN,      /* (r) reply: u32 proxy pid, MGRM_CMA_NONCE bytes (raw) */
    MGRM_OP_CMA_READY,     /* (r) u32 client pid, u64 address of the nonce in its memory */
    MGRM_OP_ENQ_WRITE_CMA, /* ENQ_WRITE's payload, then u64 client address; no bulk data */
    MGRM_OP_ENQ_READ_CMA,  /* ENQ_READ's payload, then u64 client address */
    MGRM_OP_FINISH, /* u64 queue, u32 n, n x u64 event (0: the whole queue): report the queue's
                       completed events after waiting for those (EVENTS_DONE) */
    MGRM_OP_RELEASE_EVENTS, /* u32 n (<= MGRM_MAX_WAIT), n x u64 event: RELEASE of each */
    /* before any bulk connection joins: u32 stripes wanted (1..MGRM_STREAMS_MAX);
     * (r) reply: u32 stripes granted (the proxy's cap); not sent: 1 */
    MGRM_OP_STREAMS,
    MGRM_OP_CMD_MAX,
    /* proxy -> client */
    MGRM_OP_REPLY = 64,  /* i32 rc, then op-specific */
    MGRM_OP_EVENT_DONE,  /* u64 event, i32 status */
    MGRM_OP_ERROR,       /* i32 rc, string: a request the proxy could not decode */
    MGRM_OP_EVENTS_DONE, /* u32 n (<= MGRM_MAX_DONE), then n x (u64 event, i32 status) */
    /* bulk lane, both ways: u64 xfer, u64 offset, i32 status, then data
     * (stream) or u32 slot, u32 offset, u32 length (shm); see bulk.h */
    MGRM_OP_BULK = 80,
};

enum mgrm_lane { MGRM_LANE_CMD = 1, MGRM_LANE_BULK = 2 };

typedef struct mgrm_hdr {
    uint32_t magic;
    uint16_t op;
    uint16_t flags;
    uint32_t length;
    uint32_t seq;
} mgrm_hdr_t;

/* A growing output buffer; the first MGRM_HDR_SIZE bytes are the header,
 * filled in by mgrm_buf_finish.  Allocation failure is sticky in err. */
typedef struct mgrm_buf {
    uint8_t *p;
    size_t len, cap;
    int err;
} mgrm_buf_t;

/* A read cursor over a payload the caller owns. */
typedef struct mgrm_cur {
    const uint8_t *p;
    size_t len, off;
    int err;
} mgrm_cur_t;

void mgrm_buf_init(mgrm_buf_t *b, uint16_t op, uint16_t flags, uint32_t seq);
void mgrm_buf_free(mgrm_buf_t *b);
void mgrm_buf_u8(mgrm_buf_t *b, uint8_t v);
void mgrm_buf_u32(mgrm_buf_t *b, uint32_t v);
void mgrm_buf_i32(mgrm_buf_t *b, int32_t v);
void mgrm_buf_u64(mgrm_buf_t *b, uint64_t v);
void mgrm_buf_raw(mgrm_buf_t *b, const void *p, size_t n);
/* u32 length + bytes */
void mgrm_buf_bytes(mgrm_buf_t *b, const void *p, size_t n);
void mgrm_buf_str(mgrm_buf_t *b, const char *s);
/* Writes the header; returns 0, or -1 if allocation failed or too long. */
int mgrm_buf_finish(mgrm_buf_t *b);

void mgrm_cur_init(mgrm_cur_t *c, const void *p, size_t n);
uint8_t mgrm_cur_u8(mgrm_cur_t *c);
uint32_t mgrm_cur_u32(mgrm_cur_t *c);
int32_t mgrm_cur_i32(mgrm_cur_t *c);
uint64_t mgrm_cur_u64(mgrm_cur_t *c);
/* u64 that must fit a size_t and be <= max */
size_t mgrm_cur_size(mgrm_cur_t *c, size_t max);
/* Points into the payload (no copy); NULL and err set if out of bounds. */
const void *mgrm_cur_raw(mgrm_cur_t *c, size_t n);
/* u32 length + bytes; *n gets the length */
const void *mgrm_cur_bytes(mgrm_cur_t *c, size_t *n);
/* A string: returns a malloc'd NUL-terminated copy (caller frees), or NULL
 * with err set; an embedded NUL is an error. */
char *mgrm_cur_strdup(mgrm_cur_t *c);
/* u32 count (<= max) followed by that many u64; fills out (caller-sized). */
uint32_t mgrm_cur_ids(mgrm_cur_t *c, uint64_t *out, uint32_t max);
/* 0 when every read stayed in bounds and the payload was consumed exactly. */
int mgrm_cur_done(const mgrm_cur_t *c);

/* A JOIN payload of n bytes: token and u32 stripe.  0 when n is
 * MGRM_TOKEN + 4 and stripe < MGRM_STREAMS_MAX; -1 otherwise.  (Fuzzed.) */
int mgrm_join_decode(const uint8_t *p, size_t n, uint8_t token[MGRM_TOKEN], uint32_t *stripe);

/* Parses and validates a header: magic, length <= max. 0 or -1. */
int mgrm_hdr_parse(const uint8_t raw[MGRM_HDR_SIZE], mgrm_hdr_t *h, uint32_t max);
void mgrm_hdr_write(uint8_t raw[MGRM_HDR_SIZE], const mgrm_hdr_t *h);

#endif
