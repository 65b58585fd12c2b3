/*
 * The point-to-point engine's face (src/p2p/README.md): operations on device
 * addresses and on host receives that may meet a chunked message, their
 * progress, the request table, and the probes.  The protocols behind an
 * operation are private (p2p_impl.h): the MPI face builds an operation, hands
 * it over, and reads the fields above mgp2p_op_t's union.
 *
 * Ownership: the pool owns every staging buffer; an operation borrows one
 * between mgdev_stage_get() and mgdev_stage_put().  An operation holds what
 * it uses of the call until it is freed, whatever the user frees meanwhile
 * (MPI allows freeing the datatype or communicator of a pending
 * operation): a reference to its decoded datatype (mgdt_type_acquire), and,
 * once it outlives its call (nonblocking, persistent), an MPI reference to
 * its communicator (mgp2p_op_hold).  mgp2p_op_release() drops them; every
 * operation that mgp2p_op_init* filled passes there once.  An operation is
 * owned by the progress engine until it completes; a nonblocking one then
 * belongs to its generalized request and is freed (mgp2p_op_free) once MPI
 * freed the request.
 * Blocking calls own their operation on the stack.  A persistent operation
 * (*_init) is owned by its request table entry from the init call until
 * MPI_Request_free; between starts it keeps its staging buffer "parked":
 * still its own, but the pool may take it back when it runs out.
 *
 * Thread safety: one recursive lock (mgp2p_lock) guards the active list,
 * the request table, every operation's fields and the staging pool.  It is
 * held across nonblocking PMPI calls only, never across a call that waits
 * for another thread.  MPI calls the generalized-request callbacks while
 * holding its own locks, so they never take it (lock order: ours, then
 * MPI's).
 */
#ifndef MGDEV_P2P_H
#define MGDEV_P2P_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>

#include "mgdev.h"
#include "shared.h"
#include "staging.h"

/* ---- messages a probe received early (early.c) ---- */

/* The interposed probes: MPI_Probe (wait, message NULL), MPI_Iprobe,
   MPI_Mprobe (wait) and MPI_Improbe.  A message of exactly one first piece's
   length is received into early.c's list, and the status gives its whole
   length. */
int mgp2p_probe(int source, int tag, MPI_Comm comm, int wait, int *flag, MPI_Message *message,
                MPI_Status *status);
/* Whether a receive (source, tag, comm), or of *message when message is not
   NULL, would take a message from the list: it must then run as an
   operation (mgp2p_op_init_host for a host buffer). */
static inline int mgp2p_early_waiting(int source, int tag, MPI_Comm comm,
                                      const MPI_Message *message);
/* mgp2p_early_waiting while the list holds a message (takes the lock). */
int mgp2p_early_find(int source, int tag, MPI_Comm comm, const MPI_Message *message);
/* Copy src into dst, all but MPI_ERROR, which MPI lets only the calls that
   return several statuses write (and only with MPI_ERR_IN_STATUS); dst may
   be MPI_STATUS_IGNORE. */
static inline void mgp2p_status_copy(MPI_Status *dst, const MPI_Status *src)
{
    if (dst == MPI_STATUS_IGNORE)
        return;
    int err = dst->MPI_ERROR;
    *dst = *src;
    dst->MPI_ERROR = err;
}

/* Whether m is a handle that MPI_Mprobe gave for a message in the list. */
int mgp2p_early_is_handle(MPI_Message m);
/* The communicator of a message MPI matched (MPI_COMM_WORLD for one not
   seen), forgotten: MPI has no call that maps a message to its
   communicator. */
MPI_Comm mgp2p_message_take(MPI_Message message);

/* ---- operations ---- */

/* MGP2P_OP_HOOK: an operation of a layer above (src/coll) that the engine
   tracks, gives a request and steps through its mgp2p_hook_t. */
typedef enum mgp2p_op_kind { MGP2P_OP_SEND, MGP2P_OP_RECV, MGP2P_OP_HOOK } mgp2p_op_kind_t;
typedef enum mgp2p_send_mode {
    MGP2P_MODE_STD = 0,
    MGP2P_MODE_SYNC,
    MGP2P_MODE_READY,
    MGP2P_MODE_BUFFERED
} mgp2p_send_mode_t;
typedef enum mgp2p_op_state {
    MGP2P_OP_NEXT = 0, /* the protocol has something to post (may need a staging buffer) */
    MGP2P_OP_INFLIGHT, /* a plain message's inner request is outstanding */
    MGP2P_OP_DONE
} mgp2p_op_state_t;

/* A protocol: a constant descriptor (p2p_impl.h), chosen once per
   operation. */
typedef struct mgp2p_proto mgp2p_proto_t;
/* The protocols (p2p_impl.h), for the counters: the one that completed an
   operation (a receive counts under the protocol its message arrived by). */
typedef enum mgp2p_proto_id {
    MGP2P_PROTO_PLAIN,
    MGP2P_PROTO_CHUNKED,
    MGP2P_PROTO_LANE,
    MGP2P_PROTO_REST,
    MGP2P_PROTO_HOOK, /* operations of a layer above (mgp2p_hook_t) */
    MGP2P_PROTO_COUNT
} mgp2p_proto_id_t;
/* A ring of slots shared by two processes of one node (lane.c). */
typedef struct mgp2p_lane mgp2p_lane_t;

/* A job of the piece worker (worker.c): owned by its submitter, which must
   not move or free it before it is done. */
enum { MGP2P_JOB_IDLE = 0, MGP2P_JOB_QUEUED, MGP2P_JOB_DONE };
typedef struct mgp2p_job {
    struct mgp2p_job *next;
    int (*run)(struct mgp2p_job *job); /* on the worker; returns an MPI error code */
    int rc;
    char *msg;        /* rc's message, carried from the worker's thread */
    atomic_int state; /* MGP2P_JOB_*: release by the worker, acquire by the owner */
} mgp2p_job_t;

/* A piece of a chunked message in flight (at most MPIGPU_P2P_DEPTH per
   operation): its pool buffer and its inner request. */
typedef enum mgp2p_piece_state {
    MGP2P_PIECE_FLIGHT = 0, /* its send or receive is posted */
    MGP2P_PIECE_PACKING,    /* send: the worker packs it, then it is posted */
    MGP2P_PIECE_UNPACKING   /* receive: arrived, the worker unpacks it */
} mgp2p_piece_state_t;

typedef struct mgp2p_piece {
    mgp2p_piece_state_t state;
    mgdev_stage_t *stage; /* NULL: sent straight from the caller's packed bytes */
    MPI_Request req;      /* MPI_REQUEST_NULL once complete (a buffered send) */
    int64_t first, len;   /* payload bytes [first, first + len) of the message */
    int arrived;          /* receive: complete, with got bytes */
    int64_t got;
} mgp2p_piece_t;

/* State of the plain protocol: one MPI message (a receive's first piece
   too, until it says the message is chunked). */
typedef struct mgp2p_plain_state {
    MPI_Request inner;
} mgp2p_plain_state_t;

/* State of the chunked protocol and of its lane and rest variants, which
   take over after the first piece. */
typedef struct mgp2p_chunked_state {
    int wpeer;         /* the peer's rank in MPI_COMM_WORLD */
    int seq;           /* tag of the pieces after the first (shadow comm, lane) */
    int64_t posted;    /* payload bytes of the pieces posted */
    int64_t piece_max; /* receive: payload bytes of one later piece */
    int discard;       /* receive: truncated, the pieces are drained */
    int npipe;         /* pieces in flight, oldest first in pipe[] */
    mgp2p_piece_t pipe[MGDEV_P2P_DEPTH_MAX];
    mgp2p_job_t job; /* the pack or unpack of one piece on the worker (the
                        newest for a send, the oldest for a receive) */
    char *jhost;     /* the job's piece: host bytes and payload range */
    int64_t jfirst, jlen;
    mgp2p_lane_t *lane; /* send: the node lane offered; receive: accepted */
    int offered;        /* send: the lane's offer awaits the answer in lane_reply */
    int lane_reply;
    MPI_Request lane_req; /* send: the answer's receive */
} mgp2p_chunked_state_t;

/* An operation that a layer above drives (src/mpi/file.c: the nonblocking
   file calls on device buffers): the engine tracks it as one of its own
   (active list, request table, generalized request, the completion calls),
   and each progress step is one call of step instead of a protocol's.
   Constant, one per kind of operation. */
typedef struct mgp2p_op mgp2p_op_t;
typedef struct mgp2p_driver {
    const char *name;
    /* Advance op without blocking (lock held): op->state DONE at the end,
       or mgp2p_op_fail on an error.  op->done: the bytes the status reports. */
    void (*step)(mgp2p_op_t *op);
    /* Raise op's error class err on the handler of the object the operation
       belongs to, and return err (NULL: op->comm's). */
    int (*raise)(const mgp2p_op_t *op, int err);
} mgp2p_driver_t;
/* What a layer above the engine (src/coll) plugs into an operation of kind
   MGP2P_OP_HOOK: the engine links it in the active list, hands the caller
   its request (a generalized request when nonblocking, the stand-in when
   persistent), steps it in every progress pass and completes the request
   when it is done.  Every function runs with the lock held and must not
   block on another process. */
typedef struct mgp2p_hook {
    /* At the first step after the operation (re)starts (MPI_Start of a
       persistent one: inside the call, so that operations start in the
       caller's order).  An error fails the operation. */
    int (*start)(mgp2p_op_t *op);
    /* Advance without blocking; *done = 1 once complete.  An error fails
       the operation. */
    int (*step)(mgp2p_op_t *op, int *done);
    /* After an error: end what is in flight. */
    void (*abort)(mgp2p_op_t *op);
    /* From mgp2p_op_release: free what op->hook_arg holds. */
    void (*release)(mgp2p_op_t *op);
    /* Optional: the status of the completed operation (else one of no
       message). */
    void (*status)(const mgp2p_op_t *op, MPI_Status *status);
} mgp2p_hook_t;

/* An operation: what the call gave, the buffer, the staging the operation
   owns, its progress and its completion, then the state of its protocol.
   The fields above the union are read by the MPI face; the union belongs to
   op->proto alone. */
struct mgp2p_op {
    struct mgp2p_op *prev, *next; /* active list, while not DONE */
    struct mgp2p_op *hnext;       /* request table chain */
    const mgp2p_proto_t *proto;   /* NULL until chosen at the first step */
    const mgp2p_driver_t *driver; /* a layer above's operation (no protocol), or NULL */
    /* the call */
    mgp2p_op_kind_t kind;
    mgp2p_send_mode_t mode;
    const char *fn;
    MPI_Comm comm;
    int peer, tag; /* as given (wildcards allowed for receives) */
    int count;
    /* The buffer as given (for messages), and the decoded type, of which op
       holds a reference (mgp2p_op_release). */
    const void *buf;
    const mgdt_type_t *type;
    MPI_Datatype twin;   /* send: what a plain message is sent as (mgdt_type_twin) */
    const char *packed;  /* send from these packed host bytes instead (borrowed) */
    int matched;         /* receive: the first piece is MPI_Imrecv of message */
    MPI_Message message; /* Mrecv/Imrecv: the matched message, until posted */
    /* the buffer: device memory and its engine, or a host receive's */
    cl_mem mem;
    int64_t origin; /* offset of the datatype origin in mem */
    mgpk_ctx_t *pk;
    int pk_flags; /* the datatype's method attribute, as mgpk flags */
    /* The host method (MPIGPU_PACK=host or the attribute; p2p.c): the CPU
       packs from, or unpacks into, a host view of the typed extent. */
    int hostm;
    char *zc;       /* zero copy: the datatype origin in the buffer's own storage */
    char *xview;    /* the view's first byte (the span's lo) while open, else NULL */
    void *xmap;     /* the view is a map of the extent (mgpk_map) ... */
    char *xbuf;     /* ... or a copy in this host memory (mgdev_big_get; a
                       persistent op keeps it for its next start) */
    size_t xcap;    /* its capacity */
    int64_t xmoved; /* packed bytes moved through the open view */
    char *host;     /* a host receive (host_recv.c): the caller's buffer */
    int dense;      /* host receive: the packed bytes are one run in memory */
    int inplace;    /* host receive: the message lands in the caller's buffer */
    int bare;       /* host receive in place that reads no header (grant.c): no chunked
                       message can match it */
    int64_t n;      /* send: packed bytes; receive: capacity */
    /* staging the operation holds (kept between starts when persistent) */
    mgdev_stage_t *stage;
    char *big; /* a message above one chunk: host memory of its own (mgdev_big_get) */
    size_t big_size;
    /* progress */
    mgp2p_op_state_t state;
    int pieces;    /* pieces posted */
    int64_t total; /* receive: bytes the sender sent */
    int64_t done;  /* payload bytes moved */
    int source, rtag;
    /* completion and the user's request */
    MPI_Request greq;  /* user handle; MPI_REQUEST_NULL when blocking */
    int err;           /* MPI error class, MPI_SUCCESS */
    char *msg;         /* err's message, recorded where it failed (mgp2p_op_report) */
    int raised;        /* PMPI already ran the error handler for err */
    int freed;         /* MPI_Request_free'd while active */
    int cancelled;     /* MPI_Cancel took effect */
    int persistent;    /* *_init: greq is a stand-in that outlives completions */
    int started;       /* persistent: started, completion not yet reported */
    int stag;          /* persistent: tag of the stand-in on the private comm */
    atomic_int gfreed; /* MPI freed the generalized request */
    MPI_Request hold;  /* held: a persistent receive that is never started, */
    int held;          /* MPI's reference to comm while op outlives its call */
    int mem_held;      /* op holds a reference to mem (MPIX_Gpu_free meanwhile is
                          an error of the caller's, never a fault here) */

    /* shared memory (device/shared.h): mem's allocation, else NULL, and the
       bytes [sh_off, sh_off + sh_len) of it that the operation touches */
    struct mgdev_shared *shared;
    size_t sh_off, sh_len;
    /* MGP2P_OP_HOOK: the layer above's functions and state */
    const mgp2p_hook_t *hook;
    void *hook_arg;
    union {
        mgp2p_plain_state_t plain;
        mgp2p_chunked_state_t ck;
    } u;
};

/* The bytes that count instances of t touch, as offsets from the buffer:
   [*lo, *hi).  Returns 0, or -1 when they do not fit an int64 (mgdt_span);
   an operation's own type and count were checked when it was built. */
static inline int mgp2p_type_span(const mgdt_type_t *t, int count, int64_t *lo, int64_t *hi)
{
    return mgdt_span(count, t->extent, t->true_lb, t->true_ub, lo, hi);
}

/* Fill op for a call on buf (kind, checks, device buffer, engine).  Returns
   an error class with the message recorded, nothing raised. */
int mgp2p_op_init(mgp2p_op_t *op, mgp2p_op_kind_t kind, const char *fn, const void *buf, int count,
                  MPI_Datatype dt, int peer, int tag, MPI_Comm comm);
/* Fill op (zeroed by the caller) as an operation of a layer above, named fn
   on comm; it owns arg through hook->release. */
void mgp2p_op_init_hook(mgp2p_op_t *op, const char *fn, MPI_Comm comm, const mgp2p_hook_t *hook,
                        void *arg);
/* Take op's pack engine for context (its buffer's) from mgdev_ctx_get, in the
   calling thread's own scope, and decide the engine's auto table where op
   needs it.  mgp2p_op_init calls it; MPIX_Enqueue_start calls it again on
   an inactive persistent operation, under mgdev_own_scope. */
int mgp2p_op_engine(mgp2p_op_t *op, cl_context context);
/* Under the chunked protocol, whether a receive into host memory could
   match a chunked message (its capacity is at least one chunk): it then
   becomes an operation too (mgp2p_op_init_host), which lands any message in
   host memory of its own, the pieces of a chunked one included, and copies or
   unpacks it into buf at the end. */
static inline int mgp2p_host_watch(int count, MPI_Datatype dt, int peer);
/* The same past the cheap test (out of line: it may query MPI). */
int mgp2p_host_watch_type(int count, MPI_Datatype dt, int peer);
/* The same for a receive of bytes bytes (count times the type's size). */
static inline int mgp2p_host_watch_bytes(int64_t bytes, int peer);
int mgp2p_op_init_host(mgp2p_op_t *op, const char *fn, void *buf, int count, MPI_Datatype dt,
                       int peer, int tag, MPI_Comm comm);
/* An MPI reference to op->comm, which MPI_Comm_free leaves alive, for an
   operation that outlives its call (nonblocking, persistent, enqueued;
   predefined communicators need none).  Dropped by mgp2p_op_release. */
int mgp2p_op_hold(mgp2p_op_t *op);
/* Drop what op holds of its call (its datatype's reference, its hold on the
   communicator, its error message): once, when the caller is done with
   op (a blocking call), or before op's memory goes (mgp2p_op_free). */
void mgp2p_op_release(mgp2p_op_t *op);
/* mgp2p_op_release, then free op (heap memory). */
void mgp2p_op_free(mgp2p_op_t *op);
/* Record op's error message in this thread, for MPI_Error_string: as it was
   recorded where op failed (call NULL or op->fn), or named after the
   completion call that reports it ("mpigpu: MPI_Wait on MPI_Irecv: ...").
   Lock held, or op the caller's. */
void mgp2p_op_report(const mgp2p_op_t *op, const char *call);
/* Pack all of a send's op->n bytes into host (outside the engine's
   operations: MPI_Sendrecv_replace's copy of what goes out).  Lock not
   held. */
int mgp2p_op_pack_all(mgp2p_op_t *op, char *host);
/* Packed bytes [first, first + len) of op's device data into host, or back
   (pieces; not under the host method, whose view mgp2p_op_pack_all and
   mgp2p_op_unpack_all open and close).  Any thread, lock not held. */
int mgp2p_op_pack(mgp2p_op_t *op, char *host, int64_t first, int64_t len);
int mgp2p_op_unpack(mgp2p_op_t *op, char *host, int64_t first, int64_t len);
/* Whether op packs and unpacks through the host method's view of its extent
   (MPIGPU_PACK=host or the datatype's attribute, noncontiguous data). */
int mgp2p_op_host_method(const mgp2p_op_t *op);
/* The piece worker (worker.c): queue job->run on its thread (started at the
   first job); an error means the job was not queued: run it in the caller
   instead.  Done: 1 once the worker finished job (no lock).  End: wait until
   job is done, record its error message in this thread, make it idle again,
   and return its result. */
int mgp2p_job_submit(mgp2p_job_t *job);
int mgp2p_job_done(mgp2p_job_t *job);
int mgp2p_job_end(mgp2p_job_t *job);
/* Unpack the first len packed bytes of a receive's op from host into its
   device data (outside the engine's operations: a file read, src/mpi/file.c);
   the rest of the buffer is left as it is.  Lock not held, or held once. */
int mgp2p_op_unpack_all(mgp2p_op_t *op, const char *host, int64_t len);
/* Record an error class (message already set in this thread, kept in
   op->msg; raised: PMPI already ran the error handler); op is done, its
   staging returned (lock held). */
void mgp2p_op_fail(mgp2p_op_t *op, int err, int raised);
/* Nothing to move (count 0, a type of size 0, MPI_PROC_NULL): MPI does the
   matching and the status on a host stand-in. */
int mgp2p_op_trivial(const mgp2p_op_t *op);
/* Advance op by at most one piece without blocking, choosing its protocol
   at the first step: one indirect call to op->proto (lock held). */
int mgp2p_op_step(mgp2p_op_t *op);
/* A blocking call's fast path: for a message below one chunk while no device
   operation is active, pack, one blocking PMPI call, unpack; op is neither
   linked nor given a request.  Returns 1 when it ran op to DONE, 0 when the
   general path must run it (lock not held). */
int mgp2p_op_blocking(mgp2p_op_t *op);
/* MPI_Cancel: takes back a receive still waiting for its first piece; the
   protocol decides (lock held). */
void mgp2p_op_cancel(mgp2p_op_t *op);
/* Set up and tear down p2p state: the shadow communicator, the pool. */
int mgp2p_init(void);
void mgp2p_finalize(void);

/* The most pieces of one chunked message seen in flight at once (MPI_T, src/mpi/mpit.c). */
int mgp2p_pipe_high(void);
/* Device operations (sends and receives, host receives that ran through the
   engine included) completed without error under protocol id (lock held). */
unsigned long mgp2p_proto_ops(mgp2p_proto_id_t id);
/* Jobs the piece worker ran so far. */
unsigned long mgp2p_worker_jobs(void);
/* Pieces sent and received through node lanes so far (MPI_T, src/mpi/mpit.c). */
void mgp2p_lane_pieces(unsigned long *sent, unsigned long *received);
/* Host receives that took their message in place, and those that landed it
   in host memory of their own first (MPI_T, src/mpi/mpit.c). */
void mgp2p_host_receives(unsigned long *inplace, unsigned long *landed);
/* Landed host receives that skipped their copy: another receive pending on
   the same bytes wrote over them (mgp2p_host_superseded). */
unsigned long mgp2p_host_superseded_count(void);
/* Rests of messages sent as one MPI message, and asked for by host
   receives (MPIGPU_P2P_HOST_RECV=message; MPI_T, src/mpi/mpit.c). */
void mgp2p_rest_messages(unsigned long *sent, unsigned long *received);
/* Host receives that went in place reading no header (no device sender had
   asked for a grant yet). */
unsigned long mgp2p_host_bare_count(void);
/* The grant protocol: requests this process sent, grants it sent and grants
   it received. */
void mgp2p_grants(unsigned long *asked, unsigned long *sent, unsigned long *received);

/* ---- progress, the request table and the lock (progress.c) ---- */

void mgp2p_lock(void);
void mgp2p_unlock(void);
/* The private communicator and, under MPI_THREAD_MULTIPLE, the progress
   thread; stopped before anything else at MPI_Finalize. */
int mgp2p_progress_init(void);
void mgp2p_progress_finalize(void);
/* Track op: link it in the active list (and give it a generalized request
   when nonblocking). */
int mgp2p_op_start(mgp2p_op_t *op, int nonblocking);
/* Make op (filled by mgp2p_op_init, heap memory handed over) persistent: a
   stand-in request in *req, inactive.  Lock held. */
int mgp2p_op_persist(mgp2p_op_t *op, MPI_Request *req);
/* MPI_Start of a persistent op (lock held). */
int mgp2p_op_restart(mgp2p_op_t *op);
/* MPI_Request_free of a persistent op that is not active (lock held): drops
   the table entry and the staging; the caller frees the stand-in and op. */
void mgp2p_op_unpersist(mgp2p_op_t *op);
/* op reached DONE: leave the active list, complete its request (lock held). */
void mgp2p_op_finish(mgp2p_op_t *op);
/* Step every active operation once; completes requests.  The _locked form
   runs with the lock held. */
void mgp2p_progress(void);
void mgp2p_progress_locked(void);
/* 1 while any device operation is active (no lock needed). */
static inline int mgp2p_progress_busy(void);
/* Between passes of a waiting loop: let other threads of an oversubscribed
   node run when the progress thread is on. */
void mgp2p_progress_relax(void);
/* Block until op is DONE, progressing everything (lock not held). */
void mgp2p_op_wait(mgp2p_op_t *op);
/* The device operation behind a user request, or NULL (lock held). */
mgp2p_op_t *mgp2p_req_lookup(MPI_Request req);
/* 0 when no request that mpigpu made is live, so that no lookup can find
   one (no lock needed: a request handed to the caller was counted before). */
static inline int mgp2p_req_any(void);
/* The status an operation reports in the user's datatype. */
void mgp2p_op_status(const mgp2p_op_t *op, MPI_Status *status);
/* Drain at MPI_Finalize: operations freed with MPI_Request_free. */
void mgp2p_progress_drain(void);

/* ---- What the host paths of the interposed calls read on every call ----
   (issue 31: host traffic pays nothing): plain loads, inline, no lock. */

/* Operations not yet DONE, a list under the lock (progress.c). */
extern __attribute__((visibility("hidden"))) mgp2p_op_t *_Atomic mgp2p_active;
/* Table entries whose request MPI has not freed (progress.c). */
extern __attribute__((visibility("hidden"))) atomic_int mgp2p_live;
/* Messages in the list of early messages (early.c). */
extern __attribute__((visibility("hidden"))) atomic_int mgp2p_nearly;

/* Derived from the settings and the engine's state by mgp2p_init and
   mgp2p_finalize (MPI_Init and MPI_Finalize, one thread), the only places
   where what they depend on changes (p2p.c). */
typedef struct mgp2p_hot {
    int64_t first;     /* mgp2p_first_len(): a chunked message's first piece, 0 when none */
    int64_t watch_min; /* first, or INT64_MAX when 0: the host receives to watch */
} mgp2p_hot_t;
extern __attribute__((visibility("hidden"))) mgp2p_hot_t mgp2p_hot;

static inline int mgp2p_progress_busy(void)
{
    return atomic_load_explicit(&mgp2p_active, memory_order_acquire) != NULL;
}

static inline int mgp2p_req_any(void)
{
    return atomic_load_explicit(&mgp2p_live, memory_order_acquire) > 0;
}

static inline int mgp2p_early_any(void)
{
    return atomic_load_explicit(&mgp2p_nearly, memory_order_relaxed) > 0;
}

static inline int mgp2p_early_waiting(int source, int tag, MPI_Comm comm,
                                      const MPI_Message *message)
{
    if (__builtin_expect(!mgp2p_early_any(), 1))
        return 0;
    return mgp2p_early_find(source, tag, comm, message);
}

static inline int mgp2p_host_watch_bytes(int64_t bytes, int peer)
{
    return bytes >= mgp2p_hot.watch_min && peer != MPI_PROC_NULL;
}

static inline int mgp2p_host_watch(int count, MPI_Datatype dt, int peer)
{
    if (__builtin_expect(mgp2p_hot.watch_min == INT64_MAX, 0))
        return 0;
    return mgp2p_host_watch_type(count, dt, peer);
}

#endif /* MGDEV_P2P_H */
