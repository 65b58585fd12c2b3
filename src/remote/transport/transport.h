/*
 * Byte-stream transports of the remote path.  A transport is a table of
 * function pointers with named fields (as libfabric's hmem_ops), so that an
 * RDMA one (UCX) can sit beside TCP later.  An endpoint is owned by whoever
 * connected or accepted it and is freed by close.
 */
#ifndef MGTR_TRANSPORT_H
#define MGTR_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include <sys/uio.h>

#include "wire.h"
#include "mgspin.h"

typedef struct mgtr_ep mgtr_ep_t; /* a connected endpoint */
typedef struct mgtr_listener mgtr_listener_t;
typedef struct mgtr_sec mgtr_sec_t; /* the record layer of an encrypted endpoint */

typedef struct mgtr_transport {
    const char *name;
    /* "HOST:PORT"; 0 or -1 with a message in err */
    int (*connect)(const char *addr, mgtr_ep_t **ep, char *err, size_t errlen);
    /* PORT 0 picks a free port; bound gets "HOST:PORT" with the real port */
    int (*listen)(const char *addr, mgtr_listener_t **l, char *bound, size_t boundlen, char *err,
                  size_t errlen);
    /* blocks; peer gets the remote address as text */
    int (*accept)(mgtr_listener_t *l, mgtr_ep_t **ep, char *peer, size_t peerlen);
    /* all n bytes or -1 */
    int (*send)(mgtr_ep_t *ep, const void *p, size_t n);
    /* exactly n bytes or -1 (EOF, error, keepalive timeout) */
    int (*recv)(mgtr_ep_t *ep, void *p, size_t n);
    /* send and receive time limit in ms (0: none); a call past it fails */
    int (*set_timeout)(mgtr_ep_t *ep, int ms);
    /* 1 when the peer is on this host (loopback, or one of its own
     * addresses): the shared-memory bulk lane may be tried */
    int (*is_local)(mgtr_ep_t *ep);
    /* 1 when process pid (of this host and pid namespace) holds the peer's
     * end of the connection: the kernel's word, not the peer's (TCP: the
     * socket's inode from /proc/net/tcp*, found among /proc/PID/fd).  May
     * be NULL: no such check on this transport. */
    int (*peer_is_pid)(mgtr_ep_t *ep, long pid);
    /* returns once a byte is ready to read (or the end, or an error), or
     * after about spin_ns of checking without sleeping, whichever is first.
     * May be NULL. */
    void (*spin_readable)(mgtr_ep_t *ep, long spin_ns);
    /* Puts the record layer sec (secure.c) under send and recv, which from
     * then on seal and open every byte; the endpoint owns sec (close frees
     * it).  May be NULL: a transport that cannot encrypt. */
    int (*secure)(mgtr_ep_t *ep, mgtr_sec_t *sec);
    /* The endpoint's record layer, or NULL while it is plain. */
    mgtr_sec_t *(*sec)(mgtr_ep_t *ep);
    /* wakes any thread blocked in send/recv/accept; the endpoint stays valid */
    void (*shutdown)(mgtr_ep_t *ep);
    void (*close)(mgtr_ep_t *ep);
    void (*listener_shutdown)(mgtr_listener_t *l);
    void (*listener_close)(mgtr_listener_t *l);
} mgtr_transport_t;

extern const mgtr_transport_t mgtr_transport_tcp;

/* How long a thread that waits for the next message, or for the end of
 * its commands, first checks without sleeping (ns; 0: sleep at once).  A
 * sleeping thread's wake-up costs tens of microseconds on a virtual machine,
 * which a launch and its clFinish pay several times over (design.md,
 * "Finish").  Set once at start by mgtr_spin_setup. */
#define MGTR_SPIN_DEFAULT_US 100
#define MGTR_SPIN_MIN_CPUS 8
extern long mgtr_spin_ns;
/* From the setting `param` (microseconds, 0 to 100000), else
 * MGTR_SPIN_DEFAULT_US where the host has at least MGTR_SPIN_MIN_CPUS online
 * CPUs and 0 on smaller ones, where a spinning thread takes the core that the
 * thread it waits for needs.  -1 (nothing set) when the variable holds
 * anything else, with the message in err.  param: MGPARAM_VCL_SPIN or
 * MGPARAM_PROXY_SPIN (common/mgparam.h). */
int mgtr_spin_setup(int param, char *err, size_t errlen);
/* mg_clock_ns (mgclock.h) in ns, and in ms. */
double mgtr_now_ns(void);
long long mgtr_now_ms(void);
/* With *LOCKP (a pthread mutex) held: while COND (read under the lock)
 * holds, for up to mgtr_spin_ns, let go of the lock briefly and check
 * again.  The caller then sleeps on its condition variable if COND still
 * holds. */
#define MGTR_SPIN_WHILE(COND, LOCKP)                                                               \
    MG_SPIN_WHILE(COND, mgtr_spin_ns, {                                                            \
        pthread_mutex_unlock(LOCKP);                                                               \
        for (volatile int i_ = 0; i_ < 64; i_++) /* a short gap for the lock's holder */           \
            ;                                                                                      \
        pthread_mutex_lock(LOCKP);                                                                 \
    })
/* The same, then while COND still holds, sleep on *CONDP (a pthread
 * condition variable used with *LOCKP). */
#define MGTR_WAIT_WHILE(COND, LOCKP, CONDP)                                                        \
    do {                                                                                           \
        MGTR_SPIN_WHILE(COND, LOCKP);                                                              \
        while (COND)                                                                               \
            pthread_cond_wait(CONDP, LOCKP);                                                       \
    } while (0)

/* A message on an endpoint: header and payload.  Receives into a growing
 * buffer owned by the caller (*buf, *cap); returns 0, or -1 on transport
 * error, or -2 on a bad header (h holds what was read). */
int mgtr_msg_recv(const mgtr_transport_t *t, mgtr_ep_t *ep, mgw_hdr_t *h, uint8_t **buf,
                  size_t *cap, uint32_t max);
/* Sends a finished mgw_buf_t (mgw_buf_finish done by this call). */
int mgtr_msg_send(const mgtr_transport_t *t, mgtr_ep_t *ep, mgw_buf_t *b);

/* Encryption (secure.c).  A side's offer is what it offers or accepts in
 * the handshake: 0 for plain traffic, else the MGW_CIPHER_* bits it can run.
 * Client and proxy must agree on plain or encrypted; the proxy picks
 * AES-256-GCM when both can run it, else ChaCha20-Poly1305. */
#define MGTR_SEC_RECORD (64u << 10) /* plaintext bytes of one record at most */
#define MGTR_SEC_TAG 16
/* From MPIGPU_VCL_ENCRYPT, and for the client (client = 1) MPIGPU_VCL_CIPHER.
 * 0, or -1 with err (a malformed value; a cipher this CPU cannot run). */
int mgtr_crypt_setup(int client, unsigned *offer, char *err, size_t errlen);
/* The MGW_CIPHER_* bits this host runs (AES-256-GCM needs AES-NI and
 * PCLMUL), and a cipher's name ("none" for 0). */
unsigned mgtr_sec_ciphers(void);
const char *mgtr_sec_cipher_name(int cipher);
/* The raw stream under a record layer: all of iov sent, or iov filled
 * exactly; 0 or -1. */
typedef int (*mgtr_sendv_fn)(void *arg, struct iovec *iov, int n);
typedef int (*mgtr_recvv_fn)(void *arg, struct iovec *iov, int n);
/* A record layer with its two keys (tx: this side's records; rx: the
 * peer's); NULL when out of memory or the cipher is not available. */
mgtr_sec_t *mgtr_sec_new(int cipher, const uint8_t tx[MGW_SESSION_KEY],
                         const uint8_t rx[MGW_SESSION_KEY]);
void mgtr_sec_free(mgtr_sec_t *s);
/* A transport's send and recv over its raw stream: same contract as
 * theirs.  One sender and one receiver at a time (the two may run at once). */
int mgtr_sec_send(mgtr_sec_t *s, mgtr_sendv_fn sendv, void *arg, const void *p, size_t n);
int mgtr_sec_recv(mgtr_sec_t *s, mgtr_recvv_fn recvv, void *arg, void *p, size_t n);
/* Every 2^20 records (64 GiB at most) a direction moves to its next key,
 * a hash of the last; for tests, after every `records` instead (0: the
 * default).  Set it alike on both sides before the first record. */
void mgtr_sec_rekey_every(mgtr_sec_t *s, uint64_t records);
/* Opened bytes waiting for the next recv (a spin for readable ends at once). */
size_t mgtr_sec_buffered(const mgtr_sec_t *s);
/* 1 once a record failed to open (altered, replayed, reordered, forged): the
 * endpoint refuses everything after it.  s may be NULL (0). */
int mgtr_sec_failed(const mgtr_sec_t *s);
/* The same for an endpoint: 1 when its recv failed on a record that was not
 * genuine, as opposed to a closed or broken connection. */
int mgtr_tampered(const mgtr_transport_t *t, mgtr_ep_t *ep);
/* "encrypted (AES-256-GCM)", "encrypted (ChaCha20-Poly1305)" or "plain (not
 * encrypted)": for logs. */
const char *mgtr_protection(const mgtr_transport_t *t, mgtr_ep_t *ep);

/* The handshake (handshake.c), over the MACs of wire.h's mgw_auth_mac.
 * offer: mgtr_crypt_setup's.  With encryption on, the endpoint is
 * encrypted from AUTH_OK on (its token and JOIN's never travel in clear),
 * with keys of its own (mgw_auth_keys). */
/* Client side of the handshake on a fresh endpoint; lane = MGW_LANE_*.
 * For the command lane token receives the session token; for the bulk lane
 * token is sent to join that session as its connection number stripe. */
int mgtr_auth_client(const mgtr_transport_t *t, mgtr_ep_t *ep, const mgw_key_t *key, unsigned offer,
                     int lane, unsigned stripe, uint8_t token[MGW_TOKEN], char *err, size_t errlen);
/* The peer lane's key of the session sid of the accepting proxy: 0 with
 * *key set, or -1 (no such session, or it opened no peer lane). */
typedef int (*mgtr_peer_key_fn)(const uint8_t sid[MGW_TOKEN], mgw_key_t *key, void *arg);
/* Proxy side; returns the lane the client asked for (> 0) or -1 with err.
 * token gets the fresh random token sent to the client in AUTH_OK (the
 * session token when the lane is the command lane; on the peer lane, the
 * sid that HELLO named).  peer_key (NULL: no peer lane accepted) gives the
 * key of a peer lane's session in place of key.  On the peer lane the
 * client side (mgtr_auth_client, lane MGW_LANE_PEER) passes the sid in
 * token and the session's peer key as key. */
int mgtr_auth_proxy(const mgtr_transport_t *t, mgtr_ep_t *ep, const mgw_key_t *key, unsigned offer,
                    uint8_t token[MGW_TOKEN], mgtr_peer_key_fn peer_key, void *arg, char *err,
                    size_t errlen);
/* Proxy side, bulk lane: the JOIN after the handshake.  0 with the session
 * token and the stripe (< MGW_STREAMS_MAX); -1 otherwise (*stripe: the one
 * asked for, or UINT32_MAX). */
int mgtr_auth_join(const mgtr_transport_t *t, mgtr_ep_t *ep, uint8_t token[MGW_TOKEN],
                   uint32_t *stripe);

#endif
