/*
 * The bulk-data lane of a session, behind a table of function pointers with
 * named fields.  Two implementations:
 *   - stream (bulk_stream.c): the chunk's bytes follow its BULK message on
 *     the bulk endpoint (any transport, any host);
 *   - shm (bulk_shm.c): client and proxy on one host share a POSIX shm
 *     segment that holds two rings of slots (client->proxy for writes,
 *     proxy->client for reads); the BULK message carries only a descriptor
 *     (record shm_desc: slot, offset in the slot, length).  Flow control: each
 *     slot has a state word in the segment (0 free, 1 full); the sender
 *     waits for its next slot to be free (a credit), the receiver frees it
 *     when it is done with the bytes (a futex wakes the sender).
 *
 * Every BULK message is the 16-byte header (op MGW_OP_BULK, flags
 * MGW_F_LAST on the last chunk of a transfer) and the prefix, message bulk
 * of wire/messages.h (xfer, offset in the transfer, status); then the data
 * (stream) or the descriptor (shm).  A chunk is at most MGW_CHUNK bytes.
 *
 * A third lane moves no bytes at all: the one-copy lane (bulk_cma.c, a
 * client on this host that let its proxy attach to its memory).  A plain
 * write or read command then names the client's host range (u64 address;
 * the length is the command's) instead of having its bytes follow on the
 * bulk endpoint; the proxy copies that range straight into its staging or
 * the mapped buffer (process_vm_readv), or out of it (process_vm_writev),
 * and touches no other address.  A read's end still comes as one BULK
 * message of 0 bytes with its status and MGW_F_LAST, on whichever lane
 * the session uses, after the bytes are in.
 *
 * One thread sends and one thread receives on a lane at a time (the
 * callers' locks see to it).  The segment is owned by the mgtr_bulk_t that
 * mapped it and unmapped by mgtr_bulk_fini.
 */
#ifndef MGTR_BULK_H
#define MGTR_BULK_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transport.h"

#define MGTR_BULK_PREFIX 20 /* the encoded size of message bulk (wire/messages.h) */
#define MGTR_SHM_DESC 12    /* ... and of record shm_desc */
#define MGTR_SHM_SLOTS 8    /* slots per ring (per direction) */
#define MGTR_SHM_SLOT MGW_CHUNK
#define MGTR_SHM_HDR 4096 /* segment header: magic, geometry, slot states */
#define MGTR_SHM_MAGIC 0x6d67736du
#define MGTR_SHM_SIZE ((size_t)MGTR_SHM_HDR + 2 * (size_t)MGTR_SHM_SLOTS * MGTR_SHM_SLOT)
#define MGTR_SHM_NAME 48 /* "/mpigpu-" and 32 hex digits */

/* Rings: which way the data goes. */
enum { MGTR_RING_C2P = 0, MGTR_RING_P2C = 1 };

/* The segment's first page. */
typedef struct mgtr_shm_hdr {
    uint32_t magic, nslots, slot_size, pad;
    _Atomic uint32_t state[2][MGTR_SHM_SLOTS]; /* [ring][slot]: 0 free, 1 full */
} mgtr_shm_hdr_t;
/* The client and the proxy share the slot states: lock-free words of the
   plain type's size, or the two processes would not see one another. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2 && sizeof(_Atomic uint32_t) == sizeof(uint32_t),
               "shm slot states are lock-free 32-bit atomics");

typedef struct mgtr_chunk {
    uint64_t xfer, off; /* transfer and offset in it */
    int32_t status;
    int last;
    size_t n;
    void *p;  /* the bytes: in the caller's buffer (stream) or in a slot (shm) */
    int slot; /* shm: the slot; -1 for stream */
} mgtr_chunk_t;

typedef struct mgtr_bulk mgtr_bulk_t;

typedef struct mgtr_bulk_ops {
    const char *name;
    /* Sender: where to put the next chunk's n bytes.  shm: waits for the
     * next free slot of the outgoing ring (ch->p = the slot); stream: ch->p
     * = NULL (send takes the bytes from the caller).  0 or -1. */
    int (*acquire)(mgtr_bulk_t *b, mgtr_chunk_t *ch);
    /* Sends ch; src holds the bytes (shm copies them into the slot unless
     * src is the slot).  A chunk of 0 bytes (a status) takes no slot and
     * gives back the slots acquired and not sent.  0 or -1. */
    int (*send)(mgtr_bulk_t *b, const mgtr_chunk_t *ch, const void *src);
    /* Receiver: reads the next BULK message and checks it (descriptor in
     * bounds).  0, or -1 (lane broken or out of step). */
    int (*recv_hdr)(mgtr_bulk_t *b, mgtr_chunk_t *ch);
    /* The chunk's bytes: stream reads them into dst (ch->p = dst; dst may
     * be NULL only if ch->n is 0); shm sets ch->p to the slot (no copy). */
    int (*recv_data)(mgtr_bulk_t *b, mgtr_chunk_t *ch, void *dst);
    /* Receiver is done with ch's bytes (shm: frees the slot). */
    void (*release)(mgtr_bulk_t *b, mgtr_chunk_t *ch);
} mgtr_bulk_ops_t;

struct mgtr_bulk {
    const mgtr_bulk_ops_t *ops;
    const mgtr_transport_t *t;
    mgtr_ep_t *ep;
    /* shm */
    unsigned char *base;
    mgtr_shm_hdr_t *hdr;
    int tx_ring, rx_ring;
    unsigned tx_acq, tx_next, rx_next; /* next slot acquired / sent / expected */
    int (*stopped)(void *arg);         /* waits for a slot give up when true */
    void *arg;
};

extern const mgtr_bulk_ops_t mgtr_bulk_stream, mgtr_bulk_shm;

void mgtr_bulk_init(mgtr_bulk_t *b, const mgtr_transport_t *t, mgtr_ep_t *ep);
/* Proxy: creates a fresh segment (O_EXCL, mode 0600, random name) and maps
 * it; name gets its name.  0 or -1. */
int mgtr_shm_create(char name[MGTR_SHM_NAME], unsigned char **base);
/* Client: opens and maps the segment name and checks its header; the
 * client unlinks it at once.  0 or -1 (another user, no such segment). */
int mgtr_shm_attach(const char *name, unsigned char **base);
/* Switches b to the shm lane over base; proxy: 1 for the proxy side. */
void mgtr_bulk_use_shm(mgtr_bulk_t *b, unsigned char *base, int proxy);
/* Unmaps the segment if any. */
void mgtr_bulk_fini(mgtr_bulk_t *b);
/* Decodes a descriptor of n bytes; 0 when n is MGTR_SHM_DESC, slot <
 * nslots and off + len <= slot_size; -1 otherwise.  The caller checks len
 * against its transfer.  (Fuzzed by fuzz_wire.c.) */
int mgtr_shm_desc_decode(const uint8_t *p, size_t n, uint32_t nslots, uint32_t slot_size,
                         uint32_t *slot, uint32_t *off, uint32_t *len);
/* One-copy lane (bulk_cma.c).  MGTR_CMA_NONCE: the probe's size. */
#define MGTR_CMA_NONCE MGW_CMA_NONCE
#define MGTR_CMA_MAX ((uint64_t)1 << 48) /* no host range is longer */
/* 1 when [addr, addr + size) is a range of a 64-bit address space: addr
 * not 0, size <= MGTR_CMA_MAX, no wrap, fits a pointer.  (Fuzzed.) */
int mgtr_cma_range_ok(uint64_t addr, uint64_t size);
/* Copies n bytes between local and the range at addr of process pid
 * (to_client: local -> pid), partial transfers resumed.  0, or -1 with
 * errno (EPERM: no ptrace right; EFAULT: a range not mapped there; ESRCH:
 * the process is gone). */
int mgtr_cma_copy(long pid, int to_client, uint64_t addr, void *local, size_t n);
/* The same, cut into pieces copied at once by a pool of helper threads
 * (MPIGPU_PROXY_CMA_THREADS, default: online CPUs - 1, at most 7) and the
 * caller; returns when all are done.  Thread-safe. */
int mgtr_cma_copy_par(long pid, int to_client, uint64_t addr, void *local, size_t n);

/* Common BULK header + prefix (both lanes): sends them, and desc (shm lane)
 * if not NULL; the header counts data more bytes, which the caller sends
 * next (stream lane). */
int mgtr_bulk_hdr_send(mgtr_bulk_t *b, const mgtr_chunk_t *ch, const mgw_shm_desc_t *desc,
                       size_t data);
int mgtr_bulk_hdr_recv(mgtr_bulk_t *b, mgtr_chunk_t *ch, size_t *extra, size_t max_extra);

#endif
