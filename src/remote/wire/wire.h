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
#include <stdlib.h>
#include <string.h>

#define MGW_MAGIC 0x4d475212u /* "MGR" + version 18 */
#define MGW_HDR_SIZE 16
#define MGW_MSG_MAX (64u << 20)
#define MGW_CHUNK (1u << 20) /* bulk chunk size */
#define MGW_NONCE 32
#define MGW_MAC 32
#define MGW_TOKEN 32

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
    MGW_K_SAMPLER,       /* a sampler (RELEASE) */
    MGW_K_IMAGE,         /* info: clGetImageInfo of a MGW_K_MEM image */
    MGW_K_MAX
};

/* Kernel argument kinds, from the proxy's clGetKernelArgInfo. */
enum mgw_argkind { MGW_ARG_VALUE = 0, MGW_ARG_MEM, MGW_ARG_LOCAL, MGW_ARG_SAMPLER };

/* ENQ_COPY_IMAGE's how: clEnqueueCopyImage, ...ImageToBuffer, ...BufferToImage. */
enum mgw_imgcopy { MGW_IMGCOPY_IMAGE = 0, MGW_IMGCOPY_TO_BUFFER, MGW_IMGCOPY_FROM_BUFFER };

/* The ops, the messages' layouts and their bounds (messages.h). */
#include "messages.h"

enum mgw_lane { MGW_LANE_CMD = 1, MGW_LANE_BULK = 2, MGW_LANE_PEER = 3 };
/* The AEAD ciphers of the encrypted lanes (transport/secure.c): bits of
 * HELLO's ciphers, values of CHALLENGE's cipher. */
enum mgw_cipher { MGW_CIPHER_CHACHA20POLY1305 = 1, MGW_CIPHER_AES256GCM = 2 };
#define MGW_SESSION_KEY 32 /* bytes of each key of an encrypted lane */

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
/* Sets the header's flags of a started buffer (BULK: MGW_F_LAST). */
void mgw_buf_flags(mgw_buf_t *b, uint16_t flags);
/* Starts b as a REPLY to seq: the header and rc; the op's reply fields
 * follow (messages.h, MGW_REPLIES). */
void mgw_reply_init(mgw_buf_t *b, uint32_t seq, int32_t rc);
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
/* n bytes copied into out (zeros, and err set, if out of bounds) */
void mgw_cur_copy(mgw_cur_t *c, void *out, size_t n);
/* u32 length + bytes; *n gets the length */
const void *mgw_cur_bytes(mgw_cur_t *c, size_t *n);
/* A string: returns a malloc'd NUL-terminated copy (caller frees), or NULL
 * with err set; an embedded NUL is an error. */
char *mgw_cur_strdup(mgw_cur_t *c);
/* A list of IDs (messages.h): u32 count (<= max), then the u64s. */
void mgw_buf_ids(mgw_buf_t *b, const mgw_ids_t *ids);
void mgw_cur_idview(mgw_cur_t *c, mgw_ids_t *ids, uint32_t max);
static inline uint64_t mgw_ids_get(const mgw_ids_t *ids, uint32_t i)
{
    if (ids->v)
        return ids->v[i];
    uint64_t v = 0;
    for (int k = 0; k < 8; k++)
        v |= (uint64_t)ids->raw[8 * (size_t)i + k] << (8 * k);
    return v;
}
/* 0 when every read stayed in bounds and the payload was consumed exactly. */
int mgw_cur_done(const mgw_cur_t *c);

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
/* What a handshake agreed on, bound into its MACs and its keys: the lane,
 * both sides' encrypt bytes, the ciphers offered and the one chosen. */
#define MGW_AUTH_CTX 5
/* HMAC-SHA256(key, label | ctx | a | b), a and b MGW_NONCE bytes each: the
 * proof each side of the handshake gives that it holds the key. */
void mgw_auth_mac(const mgw_key_t *key, const char *label, const uint8_t ctx[MGW_AUTH_CTX],
                  const uint8_t *a, const uint8_t *b, uint8_t out[MGW_MAC]);
/* The session keys of one connection: HMAC-SHA256(key, "mgrm-key-c2p" |
 * ctx | nc | ns) for the client's frames, "mgrm-key-p2c" for the proxy's (nc:
 * the client's nonce, ns: the proxy's).  Fresh nonces on every connection
 * give each lane and each direction keys of its own. */
void mgw_auth_keys(const mgw_key_t *key, const uint8_t ctx[MGW_AUTH_CTX], const uint8_t *nc,
                   const uint8_t *ns, uint8_t c2p[MGW_SESSION_KEY], uint8_t p2c[MGW_SESSION_KEY]);

/* Every record's, message's and reply's struct, encoder and decoder
 * (messages.h). */
MGW_MESSAGES_DEFINE()

#endif
