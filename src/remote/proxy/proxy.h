/*
 * mpigpu-proxy internals.  A session is one authenticated client: a command
 * lane (read by the session thread, which runs every command in order), a
 * bulk lane (driven by the session's bulk thread: one connection that it
 * reads and writes itself, or several stripes, each read and written by
 * its own thread on the bulk thread's behalf), and one ID -> object map.  Objects in the map are
 * owned by the session and released when the client releases them or the session ends.
 */
#ifndef MGPX_PROXY_H
#define MGPX_PROXY_H

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bulk.h"
#include "mglog.h"
#include "transport.h"

#define MGPX_STAGING_SLOTS 4             /* bulk chunks in flight per transfer (one stripe) */
#define MGPX_STAGING_MAX 8               /* the same with several stripes */
#define MGPX_PIN_CHUNK ((size_t)8 << 20) /* one-copy lane: a pinned region, one command */

typedef struct mgpx_obj {
    uint64_t id; /* 0: empty slot, UINT64_MAX: deleted */
    int kind;
    void *h;   /* the OpenCL handle */
    void *aux; /* queue: its transfer queue; kernel: its mgpx_kargs_t */
} mgpx_obj_t;

/* A kernel's argument kinds (enum mgw_argkind, 0xff: unknown), checked
 * against every launch, so that no client can make a value pass for a
 * buffer. */
typedef struct mgpx_kargs {
    cl_uint n;
    uint8_t kind[];
} mgpx_kargs_t;

typedef struct mgpx_map {
    mgpx_obj_t *slot;
    size_t cap, used;        /* used counts deleted slots too */
    size_t live;             /* objects in the map */
    size_t peak;             /* the largest cap so far (logged at session end) */
    size_t nkind[MGW_K_MAX]; /* objects in the map of each kind */
} mgpx_map_t;

typedef struct mgpx_staging {
    struct mgpx_staging *next;
    cl_context ctx;
    cl_command_queue q; /* maps the staging buffers */
    cl_mem mem[MGPX_STAGING_MAX];
    void *ptr[MGPX_STAGING_MAX];
    cl_mem pin[2]; /* the one-copy lane's pinned regions (MGPX_PIN_CHUNK each), made on first use */
    void *pinp[2];
} mgpx_staging_t;

/* A receive or send that the bulk thread posts to a stripe's thread. */
typedef struct mgpx_io {
    struct mgpx_io *next;
    int send;        /* 1: send ch from p; 0: receive the chunk (ch.xfer, ch.off, ch.n) into p */
    mgtr_chunk_t ch; /* receive: what must come; ch.p gets where the bytes are */
    void *p;
    int posted, done, rc; /* rc: 0, or -1 (stripe broken, or a chunk that is not the one due) */
} mgpx_io_t;

/* One TCP connection of the bulk lane.  With one stripe the bulk thread
 * uses stripe[0].bk itself (and it may turn into the shm lane); with more,
 * thread th runs the stripe's queue of posted receives and sends in order. */
typedef struct mgpx_stripe {
    mgtr_ep_t *ep; /* owned by the session */
    mgtr_bulk_t bk;
    pthread_t th;
    int started;
    mgpx_io_t *head, **tail;
} mgpx_stripe_t;

typedef struct mgpx_job mgpx_job_t;

/* MPIGPU_PROXY_CMA_COPY: 1 MiB pinned staging chunks, the buffer mapped, or
 * MGPX_PIN_CHUNK pinned regions */
enum { MGPX_CMA_STAGING, MGPX_CMA_MAP, MGPX_CMA_PINNED };

typedef struct mgpx_proxy {
    cl_device_id *dev;
    cl_uint ndev;
    mgw_key_t key;
    const mgtr_transport_t *t;
    int no_shm;           /* --no-shm: never offer the shared-memory bulk lane */
    int no_cma;           /* --no-cma: never offer the one-copy lane */
    unsigned crypt;       /* ciphers accepted (MPIGPU_VCL_ENCRYPT); 0: plain (--no-encrypt) */
    int drop_cb;          /* testing (MPIGPU_PROXY_TEST_DROP_CALLBACKS=1): completion callbacks send
                             nothing, as PoCL 3.1 for a command behind a failed event; FINISH reports */
    int cma_map;          /* one-copy writes/reads (MGPX_CMA_*): how the device is reached, or -1:
                             by device type and size */
    unsigned max_streams; /* --streams: the most stripes a session gets */
    /* Device memory (proxy_limits.c): bytes of buffers held on each served
     * device by all sessions (under the quota lock), and the most allowed
     * (MPIGPU_PROXY_TOTAL_MEM, at most CL_DEVICE_GLOBAL_MEM_SIZE); the most
     * one session may hold (MPIGPU_PROXY_SESSION_MEM; 0: no own limit). */
    unsigned long long *dev_used, *dev_limit;
    unsigned long long session_limit;
    /* The most objects of each kind (MGW_K_*) one session may hold at once
     * (MPIGPU_PROXY_MAX_CONTEXTS, ...); 0: no limit. */
    unsigned long max_obj[MGW_K_MAX];
} mgpx_proxy_t;

/* A session's device-memory account: bytes its buffers hold.  It outlives
 * the session while the runtime still holds one of its buffers (a buffer
 * gives its bytes back from its destructor callback, once the runtime has
 * really freed it). */
typedef struct mgpx_quota {
    unsigned long long used; /* under the quota lock */
    atomic_int refs;
} mgpx_quota_t;

/* A log of at most MPIGPU_PROXY_LOG_RATE lines a second (mgpx_slog). */
typedef struct mgpx_ratelog {
    pthread_mutex_t lock;
    long long window_ms; /* start of the current second */
    unsigned lines;      /* lines written in it */
    unsigned long dropped;
} mgpx_ratelog_t;

typedef struct mgpx_session {
    mgpx_proxy_t *px;
    const mgtr_transport_t *t;
    mgtr_ep_t *cmd;
    unsigned num;
    char peer[96];
    pthread_mutex_t send_lock; /* command-lane sends: replies and event callbacks */
    pthread_mutex_t lock;      /* refs, dead, job queue */
    pthread_cond_t cond;
    atomic_int refs; /* the session thread + callbacks sending (atomic: callbacks run on
                        the OpenCL runtime's threads and must never wait for lock) */
    int dead;
    int dry; /* fuzzing: decode and validate, call no OpenCL */
    mgpx_map_t map;
    mgpx_quota_t *quota; /* NULL until the first buffer */
    mgpx_ratelog_t log;  /* the session's lines a client can cause (mgpx_slog) */
    mgpx_job_t *jobs, **jobs_tail;
    int jobs_open;          /* jobs queued or running (under lock): a FINISH waits only without */
    int job_settled;        /* bulk thread: the running job no longer counts in jobs_open */
    long long finishing_ms; /* under lock: when an inline FINISH began (0: none), for keepalives */
    int user_open; /* client user events not set yet (session thread only): a FINISH waits only
                      without */
    unsigned long fin_inline, fin_later, done_by_fin; /* FINISH statistics (session thread) */
    _Atomic unsigned long done_by_cb;                 /* completions sent by callbacks */
    int bulk_started, bulk_quit;
    mgpx_staging_t *staging; /* one pool per context, made on first use */
    pthread_t bulk_thread;
    /* the bulk lane: nstripes connections (STREAMS, before any joins; else
     * 1), njoined of them joined so far (under s->lock); stripe[0].bk is
     * stream, or shm once both sides mapped it (one stripe only) */
    unsigned nstripes, njoined;
    mgpx_stripe_t stripe[MGW_STREAMS_MAX];
    int depth;               /* staging slots a transfer uses */
    pthread_mutex_t io_lock; /* the stripes' queues and their mgpx_io_t */
    pthread_cond_t io_cond;
    int io_quit, io_broken;
    unsigned long long wnext, rnext; /* stripe of the next write / read chunk, mod nstripes */
    unsigned char *shm_base;         /* the segment offered (owned until bk takes it) */
    char shm_name[MGTR_SHM_NAME];    /* its name while it is still linked */
    /* the one-copy lane: cma_pid > 0 once the client's pid is verified and
     * the probe read its nonce (the session thread sets it before any
     * CMA command is decoded; the bulk thread reads it in jobs) */
    long cma_pid;
    int cma_pidfd; /* pidfd of cma_pid (valid while cma_pid > 0): is it still alive? */
    int cma_offered;
    unsigned char cma_nonce[MGTR_CMA_NONCE];
    _Atomic unsigned long long cma_in, cma_out; /* bytes copied from / to the client */
    /* the peer lane (proxy_peer.c), under lock: this session's ID and key
     * once PEER_OPEN made them; peer connections that came for a transfer
     * (or cancels), waiting for its receive job; the send jobs running */
    int peer_on;
    uint8_t peer_sid[MGW_TOKEN];
    uint8_t peer_key[MGW_TOKEN];
    struct mgpx_park *parked;
    mgpx_job_t *sending;
    int nsending;              /* sends and event forwards running */
    struct mgpx_ue *ues;       /* the client's user events (a peer may set a stand-in first) */
    struct mgpx_pconn *pconns; /* connections for event notices to peer sessions */
    struct mgpx_early *early;  /* notices for stand-ins not made yet */
    unsigned nearly;
    uint64_t ue_max;          /* the highest user event ID made so far (under lock) */
    unsigned long fwd_direct; /* stand-ins set by a peer proxy's PEER_EVENT */
    unsigned long fwd_late;   /* PEER_EVENTs that came after the client's setting */
    _Atomic unsigned long long peer_in, peer_out; /* bytes received from / sent to peer proxies */
} mgpx_session_t;

/* The proxy's session log: the logger's proxy subsystem, at info (which the
   proxy shows by default). */
#define mgpx_log(...) MGLOG_INFO(MGLOG_PROXY, __VA_ARGS__)
/* The same for lines a peer can cause at will: at most
 * MPIGPU_PROXY_LOG_RATE a second of each kind, those of connections before
 * their session (refusals: mgpx_log_limited) and those of each session (its
 * errors and refusals: mgpx_slog); the lines dropped are counted and told
 * in one "suppressed" line when the next second's first line comes, or
 * mgpx_log_flush / mgpx_slog_flush runs. */
extern unsigned mgpx_log_rate;
void mgpx_ratelog_init(mgpx_ratelog_t *rl);
void mgpx_log_limited(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mgpx_log_flush(void);

void mgpx_slog(mgpx_session_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mgpx_slog_flush(mgpx_session_t *s);

/* Device memory (proxy_limits.c).  Sets px->dev_used and px->dev_limit from
 * the devices and MPIGPU_PROXY_TOTAL_MEM; 0 or -1 (out of memory). */
int mgpx_quota_setup(mgpx_proxy_t *px, unsigned long long total, unsigned long long session);
/* clCreateBuffer, counted: the bytes are charged to s's account and to every
 * device of ctx, the call fails with CL_MEM_OBJECT_ALLOCATION_FAILURE when
 * either would pass its limit, and the charge goes back when the runtime
 * destroys the buffer.  back: have the runtime allocate it now (a migration
 * to the device, waited for), so that a runtime that allocates lazily fails
 * here, not in a later command. */
cl_mem mgpx_mem_create(mgpx_session_t *s, cl_context ctx, cl_mem_flags flags, size_t size, int back,
                       cl_int *err);
/* clCreateImage, counted the same way: size is the image's bytes as the
 * client asked (pixels x pixel size), reserved before the runtime makes it;
 * the charge grows to CL_MEM_SIZE when the runtime says it holds more.  An
 * image of a buffer is not counted again.  The image is always backed. */
cl_mem mgpx_image_create(mgpx_session_t *s, cl_context ctx, cl_mem_flags flags,
                         const cl_image_format *fmt, const cl_image_desc *d, void *host,
                         size_t size, cl_int *err);
void mgpx_quota_session_end(mgpx_session_t *s);
/* CL_SUCCESS when s may make one more object of kind (MGW_K_*), else
 * CL_OUT_OF_RESOURCES, logged (mgpx_slog): the session holds as many as
 * px->max_obj[kind] allows.  Called before the object is made. */
cl_int mgpx_obj_admit(mgpx_session_t *s, int kind);

/* ID map (proxy_map.c) */
int mgpx_map_put(mgpx_map_t *m, uint64_t id, int kind, void *h, void *aux);
mgpx_obj_t *mgpx_map_get(mgpx_map_t *m, uint64_t id, int kind);
void mgpx_map_del(mgpx_map_t *m, mgpx_obj_t *o);
void mgpx_map_compact(mgpx_map_t *m);
void mgpx_map_free(mgpx_map_t *m);
void mgpx_obj_release(mgpx_obj_t *o);

/* Sessions (proxy_session.c) */
void mgpx_session_init(mgpx_session_t *s, mgpx_proxy_t *px);
/* Runs the command loop until the client goes; then frees everything. */
void mgpx_session_run(mgpx_session_t *s);
/* Decodes and runs one command-lane message; sends the reply.  Returns 0, or
 * -1 when the session must end. */
int mgpx_session_dispatch(mgpx_session_t *s, const mgw_hdr_t *h, const uint8_t *payload);
void mgpx_session_unref(mgpx_session_t *s);
int mgpx_reply(mgpx_session_t *s, uint32_t seq, cl_int rc, const mgw_buf_t *extra);
int mgpx_send_error(mgpx_session_t *s, uint32_t seq, cl_int rc, const char *why);
/* Registers a new event under id, a command of queue qid (wire IDs), and
 * reports its completion to the client. */
int mgpx_event_track(mgpx_session_t *s, uint64_t id, uint64_t qid, cl_event e);
/* FINISH: after a native clFinish of q, or clWaitForEvents of the events
 * named (only when nothing the device runs can wait for a later client
 * message, see design.md), or at once otherwise, sends the completions of
 * q's events that are complete now in EVENTS_DONE messages; each event is
 * reported once, by this or by its callback. */
int mgpx_op_finish(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);

/* Command handlers (proxy_ops.c: objects; proxy_enqueue.c: commands).  Each
 * returns a cl_int for the reply, or a positive MGPX_BAD for a malformed
 * request. */
#define MGPX_BAD 1
#define MGPX_NOREPLY 2
typedef int (*mgpx_handler_t)(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);
mgpx_handler_t mgpx_handler(int op);
int mgpx_op_sync(int op); /* 1: the op is answered by a REPLY */
/* The staging pool of ctx (made on first use, with its queue on dev); NULL
 * on failure.  Thread-safe. */
mgpx_staging_t *mgpx_staging_get(mgpx_session_t *s, cl_context ctx, cl_device_id dev, int buffers);
/* The two pinned regions of ctx's staging (made on first use), or NULL. */
mgpx_staging_t *mgpx_staging_pinned(mgpx_session_t *s, cl_context ctx, cl_device_id dev);
void mgpx_staging_free(mgpx_session_t *s);
cl_device_id mgpx_dev(mgpx_session_t *s, uint64_t idx);
int mgpx_wait_list(mgpx_session_t *s, mgw_cur_t *c, cl_event *w, cl_uint *n);
/* 1 when m is an image (image 1) or a buffer (image 0); not in a dry run. */
int mgpx_is_mem_kind(cl_mem m, int image);

enum {
    JOB_WRITE,
    JOB_READ,
    JOB_WRITE_RECT,
    JOB_READ_RECT,
    JOB_WRITE_IMAGE,
    JOB_READ_IMAGE,
    JOB_PEER_RECV, /* bytes from a peer proxy (proxy_peer.c) */
    JOB_PEER_SEND  /* bytes to a peer proxy, on a thread of its own */
};

/* A transfer for the bulk thread (proxy_enqueue.c makes it, proxy_bulk.c
 * runs it).  It holds references to tq, mem, m1 and gate. */
struct mgpx_job {
    mgpx_job_t *next;
    int type;
    cl_int err; /* set: the data is drained (write) or an error is sent (read) */
    uint64_t xfer;
    size_t size, off;
    cl_command_queue tq;
    cl_context ctx;
    cl_device_id dev;
    cl_mem mem;
    cl_event m1, m2, gate;
    cl_event *waits; /* the client's wait list */
    cl_uint nwaits;
    size_t bo[3], reg[3], brp, bsp;
    uint64_t addr; /* one-copy lane: the client's host range [addr, addr + size); 0: none */
    size_t sent;   /* a read on several stripes: its bytes sent; end: its end chunk is */
    int end;       /* due once the job is freed (the gate set) */
    /* JOB_PEER_SEND: the receiving session's address, ID and key; its
     * connection while it runs (under s->lock) */
    char *paddr;
    uint8_t psid[MGW_TOKEN], pkey[MGW_TOKEN];
    mgtr_ep_t *pep;
    mgpx_session_t *s;
    mgpx_job_t *pnext;
};

/* The bulk thread's helpers (proxy_bulk.c): waits for the job's wait list
 * and m1 (a failure goes to j->err); opens the gate and frees the job. */
void mgpx_job_wait(mgpx_job_t *j);
void mgpx_job_free(mgpx_job_t *j);

/* The peer lane (proxy_peer.c). */
int mgpx_op_peer_open(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);
int mgpx_op_peer_cancel(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);
/* A peer connection that authenticated for s (the caller found s under
 * the registry's lock, with s->lock held): read its PEER_XFER, then hand
 * it to the receive job of that transfer.  Takes ep. */
void mgpx_peer_park(mgpx_session_t *s, mgtr_ep_t *ep, const mgw_peer_xfer_t *x);
/* A PEER_RECV refused before it became a job: its sender's connection,
 * when it comes, is closed at once (and a cancel for it dropped). */
void mgpx_peer_refused(mgpx_session_t *s, uint64_t xfer);
/* The bulk thread's run of a JOB_PEER_RECV; -1 never (the lane is not involved). */
int mgpx_peer_recv_run(mgpx_session_t *s, mgpx_job_t *j);
/* Starts a JOB_PEER_SEND's thread (it owns j and a session reference). */
void mgpx_peer_send_start(mgpx_session_t *s, mgpx_job_t *j);
/* Session end: shuts the running sends' connections down, waits for them,
 * closes what is parked. */
void mgpx_peer_session_end(mgpx_session_t *s);
/* Events of another proxy in a wait list: the client's user event `id`
 * (its stand-in here) may be set by a peer's PEER_EVENT (ue_add, from
 * USER_EVENT_CREATE) or by the client's USER_EVENT_SET (ue_take: 1 when the
 * client must set it now, 0 when a peer did, -1 when unknown), whichever
 * comes first. */
void mgpx_ue_add(mgpx_session_t *s, uint64_t id, cl_event e);
int mgpx_ue_take(mgpx_session_t *s, uint64_t id);
/* A peer's PEER_EVENT for s (s->lock held by the caller): the stand-in's
 * handle (retained), which the caller sets once it let go of the locks, or
 * NULL (unknown, or the client set it first). */
cl_event mgpx_peer_event(mgpx_session_t *s, const mgw_peer_event_t *m);
int mgpx_op_event_forward(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);

/* The shared-memory bulk lane (proxy_shm.c): SHM_OPEN and SHM_READY, and
 * the unlink/unmap at session end. */
int mgpx_op_shm_open(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);
int mgpx_op_shm_ready(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);
void mgpx_shm_session_end(mgpx_session_t *s);

/* The one-copy lane (proxy_cma.c): CMA_OPEN and CMA_READY. */
int mgpx_op_cma_open(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);
int mgpx_op_cma_ready(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);
/* 1 while the client process of the lane lives: the pid is not yet free
 * for another process to take (checked before every copy). */
int mgpx_cma_alive(mgpx_session_t *s);
void mgpx_cma_session_end(mgpx_session_t *s);

/* Bulk thread (proxy_bulk.c): started when the last stripe of the bulk
 * lane joins (the caller holds s->lock); stop wakes every stripe, waits for
 * the threads and fails the jobs they did not run. */
int mgpx_bulk_start(mgpx_session_t *s);
void mgpx_bulk_stop(mgpx_session_t *s);

/* The stripes (proxy_stripe.c).  STREAMS sets how many the session has. */
int mgpx_op_streams(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *reply);
/* Starts a thread per stripe when there are several (s->lock held). */
int mgpx_stripes_start(mgpx_session_t *s);
/* Waits for the stripes' threads (their queues are empty: see io_wait). */
void mgpx_stripes_stop(mgpx_session_t *s);
/* Wakes every thread blocked on a stripe; the stripes stay open. */
void mgpx_stripes_shutdown(mgpx_session_t *s);
/* Posts io (send or receive) to stripe seq mod nstripes; with one stripe it
 * runs at once on stripe[0].bk.  io stays the caller's, untouched until
 * mgpx_io_wait says it is done; every posted io must be waited for. */
void mgpx_io_post(mgpx_session_t *s, mgpx_io_t *io, unsigned long long seq);
/* 0 for an io not posted; else waits for it and returns its rc. */
int mgpx_io_wait(mgpx_session_t *s, mgpx_io_t *io);

#endif
