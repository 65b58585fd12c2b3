/*
 * Byte-stream transports of the remote path.  A transport is a table of
 * function pointers with named fields (as libfabric's hmem_ops), so that an
 * RDMA one (UCX) can sit beside TCP later.  An endpoint is owned by whoever
 * connected or accepted it and is freed by close.
 */
#ifndef MGRM_TRANSPORT_H
#define MGRM_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

typedef struct mgrm_ep mgrm_ep_t; /* a connected endpoint */
typedef struct mgrm_listener mgrm_listener_t;

typedef struct mgrm_transport {
    const char *name;
    /* "HOST:PORT"; 0 or -1 with a message in err */
    int (*connect)(const char *addr, mgrm_ep_t **ep, char *err, size_t errlen);
    /* PORT 0 picks a free port; bound gets "HOST:PORT" with the real port */
    int (*listen)(const char *addr, mgrm_listener_t **l, char *bound, size_t boundlen, char *err,
                  size_t errlen);
    /* blocks; peer gets the remote address as text */
    int (*accept)(mgrm_listener_t *l, mgrm_ep_t **ep, char *peer, size_t peerlen);
    /* all n bytes or -1 */
    int (*send)(mgrm_ep_t *ep, const void *p, size_t n);
    /* exactly n bytes or -1 (EOF, error, keepalive timeout) */
    int (*recv)(mgrm_ep_t *ep, void *p, size_t n);
    /* send and receive time limit in ms (0: none); a call past it fails */
    int (*set_timeout)(mgrm_ep_t *ep, int ms);
    /* 1 when the peer is on this host (loopback, or one of its own
     * addresses): the shared-memory bulk lane may be tried */
    int (*is_local)(mgrm_ep_t *ep);
    /* 1 when process pid (of this host and pid namespace) holds the peer's
     * end of the connection: the kernel's word, not the peer's (TCP: the
     * socket's inode from /proc/net/tcp*, found among /proc/PID/fd).  May
     * be NULL: no such check on this transport. */
    int (*peer_is_pid)(mgrm_ep_t *ep, long pid);
    /* returns once a byte is ready to read (or the end, or an error), or
     * after about spin_ns of checking without sleeping, whichever is first.
     * May be NULL. */
    void (*spin_readable)(mgrm_ep_t *ep, long spin_ns);
    /* wakes any thread blocked in send/recv/accept; the endpoint stays valid */
    void (*shutdown)(mgrm_ep_t *ep);
    void (*close)(mgrm_ep_t *ep);
    void (*listener_shutdown)(mgrm_listener_t *l);
    void (*listener_close)(mgrm_listener_t *l);
} mgrm_transport_t;

extern const mgrm_transport_t mgrm_transport_tcp;

/* How long a thread that waits for the next message, or for the end of
 * its commands, first checks without sleeping (ns; 0: sleep at once).  A
 * sleeping thread's wake-up costs tens of microseconds on a virtual machine,
 * which a launch and its clFinish pay several times over (design.md,
 * "Finish").  Set once at start by mgrm_spin_setup. */
#define MGRM_SPIN_DEFAULT_US 100
#define MGRM_SPIN_MIN_CPUS 8
extern long mgrm_spin_ns;
/* From the environment variable `var` (microseconds, 0 to 100000), else
 * MGRM_SPIN_DEFAULT_US where the host has at least MGRM_SPIN_MIN_CPUS online
 * CPUs and 0 on smaller ones, where a spinning thread takes the core that the
 * thread it waits for needs.  -1 (nothing set) when the variable holds
 * anything else. */
int mgrm_spin_setup(const char *var);
/* CLOCK_MONOTONIC in ns, and in ms. */
double mgrm_now_ns(void);
long long mgrm_now_ms(void);
/* With *LOCKP (a pthread mutex) held: while COND (read under the lock)
 * holds, for up to mgrm_spin_ns, let go of the lock briefly and check
 * again.  The caller then sleeps on its condition variable if COND still
 * holds. */
#define MGRM_SPIN_WHILE(COND, LOCKP)                                                               \
    do {                                                                                           \
        if ((COND) && mgrm_spin_ns > 0) {                                                          \
            double end_ = mgrm_now_ns() + (double)mgrm_spin_ns;                                    \
            do {                                                                                   \
                pthread_mutex_unlock(LOCKP);                                                       \
                for (volatile int i_ = 0; i_ < 64; i_++)                                           \
                    ;                                                                              \
                pthread_mutex_lock(LOCKP);                                                         \
            } while ((COND) && mgrm_now_ns() < end_);                                              \
        }                                                                                          \
    } while (0)
/* The same, then while COND still holds, sleep on *CONDP (a pthread
 * condition variable used with *LOCKP). */
#define MGRM_WAIT_WHILE(COND, LOCKP, CONDP)                                                        \
    do {                                                                                           \
        MGRM_SPIN_WHILE(COND, LOCKP);                                                              \
        while (COND)                                                                               \
            pthread_cond_wait(CONDP, LOCKP);                                                       \
    } while (0)

/* A message on an endpoint: header and payload.  Receives into a growing
 * buffer owned by the caller (*buf, *cap); returns 0, or -1 on transport
 * error, or -2 on a bad header (h holds what was read). */
int mgrm_msg_recv(const mgrm_transport_t *t, mgrm_ep_t *ep, mgrm_hdr_t *h, uint8_t **buf,
                  size_t *cap, uint32_t max);
/* Sends a finished mgrm_buf_t (mgrm_buf_finish done by this call). */
int mgrm_msg_send(const mgrm_transport_t *t, mgrm_ep_t *ep, mgrm_buf_t *b);

/* Shared-key authentication (auth.c).  The key is the contents of a file
 * readable by its owner only, trailing newline stripped, >= 16 bytes. */
#define MGRM_KEY_MAX 1024
typedef struct mgrm_key {
    unsigned char k[MGRM_KEY_MAX];
    size_t len;
} mgrm_key_t;
int mgrm_key_load(const char *path, mgrm_key_t *key, char *err, size_t errlen);
/* Client side of the handshake on a fresh endpoint; lane = MGRM_LANE_*.
 * For the command lane token receives the session token; for the bulk lane
 * token is sent to join that session as its connection number stripe. */
int mgrm_auth_client(const mgrm_transport_t *t, mgrm_ep_t *ep, const mgrm_key_t *key, int lane,
                     unsigned stripe, uint8_t token[MGRM_TOKEN], char *err, size_t errlen);
/* Proxy side; returns the lane the client asked for (> 0) or -1 with err.
 * token gets the fresh random token sent to the client in AUTH_OK (the
 * session token when the lane is the command lane). */
int mgrm_auth_proxy(const mgrm_transport_t *t, mgrm_ep_t *ep, const mgrm_key_t *key,
                    uint8_t token[MGRM_TOKEN], char *err, size_t errlen);

#endif
