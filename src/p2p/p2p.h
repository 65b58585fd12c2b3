/*
 * Point-to-point on device addresses: the staging pool, operations and their
 * progress, and the request table (doc/design.md, "Point-to-point").
 *
 * Ownership: the pool owns every staging buffer; an operation borrows one
 * between mgdev_stage_get() and mgdev_stage_put().  An operation is owned by
 * the progress engine until it completes; a nonblocking one then belongs to
 * its generalized request and is freed by the request's free function.
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
#include "staging.h"

/* ---- node lanes (lane.c) ---- */

/* A ring of slots in memory shared by two processes of one node, for the
   pieces of chunked messages from one to the other. */
typedef struct mgp2p_lane mgp2p_lane_t;

int mgp2p_lane_init(void);
void mgp2p_lane_finalize(void);
/* Sender: the lane to world rank w, created at the first call; NULL when w
   is not on this node, MPIGPU_P2P_SHM=off, or it could not be made (pieces
   then go by MPI). */
mgp2p_lane_t *mgp2p_lane_tx(int w);
/* Receiver: the lane from world rank w, whose process id is pid, opened at
   the first call; NULL when it cannot be. */
mgp2p_lane_t *mgp2p_lane_rx(int w, long pid);
/* Bytes of one slot. */
size_t mgp2p_lane_piece(const mgp2p_lane_t *l);
/* Sender: the next slot to fill, or NULL while the ring is full. */
char *mgp2p_lane_slot(mgp2p_lane_t *l);
/* Sender: publish that slot as payload [first, first + len) of message seq
   (len -1: the message failed on the sender and ends there). */
void mgp2p_lane_publish(mgp2p_lane_t *l, int seq, int64_t first, int64_t len);
/* Receiver: the oldest entry not consumed (its slot), or NULL. */
char *mgp2p_lane_peek(mgp2p_lane_t *l, int64_t *seq, int64_t *first, int64_t *len);
/* Receiver: free the oldest entry's slot. */
void mgp2p_lane_consume(mgp2p_lane_t *l);
/* Receiver: message seq failed here with left payload bytes still to come:
   drop them as they arrive, so that later messages find the ring moving. */
void mgp2p_lane_drop(mgp2p_lane_t *l, int seq, int64_t left);

/* ---- messages a probe received early (early.c) ---- */

/* A message that a probe received before any receive took it, because its
   length (exactly one chunk) says it may be a chunked message's first piece,
   whose header holds the length the probe must report. */
typedef struct mgp2p_early {
    struct mgp2p_early *next;
    MPI_Comm comm;
    int source, tag;
    char *buf; /* the message's bytes (mgdev_big_get, capacity size) */
    size_t size;
    int64_t len;        /* bytes received */
    int64_t total;      /* the whole message's payload bytes (chunked) or len */
    MPI_Message handle; /* mpigpu's handle once MPI_Mprobe matched it, else MPI_MESSAGE_NULL */
} mgp2p_early_t;

/* The interposed probes: MPI_Probe (wait, message NULL), MPI_Iprobe,
   MPI_Mprobe (wait) and MPI_Improbe.  A message of exactly one chunk is
   received into the list, and the status gives its whole length. */
int mgp2p_probe(int source, int tag, MPI_Comm comm, int wait, int *flag, MPI_Message *message,
                MPI_Status *status);
/* 1 while the list holds any message (no lock needed). */
int mgp2p_early_any(void);
/* Whether a receive (source, tag, comm), or of *message when message is not
   NULL, would take a message from the list: it must then run as an
   operation (mgp2p_op_init_host for a host buffer). */
int mgp2p_early_waiting(int source, int tag, MPI_Comm comm, const MPI_Message *message);
/* Whether m is a handle that MPI_Mprobe gave for a message in the list. */
int mgp2p_early_is_handle(MPI_Message m);
/* Take the oldest message that the receive matches (or the one of
 *message) out of the list, or NULL. */
mgp2p_early_t *mgp2p_early_take(int source, int tag, MPI_Comm comm, const MPI_Message *message);
void mgp2p_early_free(mgp2p_early_t *e);
/* Free every message still in the list (MPI_Finalize). */
void mgp2p_early_finalize(void);
/* Remember the communicator of a message MPI matched, and take it back at
   the receive (MPI_COMM_WORLD for one not seen): MPI has no call that maps
   a message to its communicator. */
void mgp2p_message_note(MPI_Message message, MPI_Comm comm);
MPI_Comm mgp2p_message_take(MPI_Message message);

/* ---- operations (p2p.c) ---- */

typedef enum mgp2p_op_kind { MGP2P_OP_SEND, MGP2P_OP_RECV } mgp2p_op_kind_t;
typedef enum mgp2p_send_mode {
    MGP2P_MODE_STD = 0,
    MGP2P_MODE_SYNC,
    MGP2P_MODE_READY,
    MGP2P_MODE_BUFFERED
} mgp2p_send_mode_t;
typedef enum mgp2p_op_state {
    MGP2P_OP_NEXT = 0, /* post the next piece (needs a staging buffer) */
    MGP2P_OP_INFLIGHT, /* inner PMPI request of one piece outstanding */
    MGP2P_OP_DONE
} mgp2p_op_state_t;

/* ---- the piece worker (worker.c) ---- */

enum { MGP2P_JOB_IDLE = 0, MGP2P_JOB_QUEUED, MGP2P_JOB_DONE };
typedef struct mgp2p_job {
    struct mgp2p_job *next;
    int (*run)(struct mgp2p_job *job); /* on the worker; returns an MPI error code */
    int rc;
    char *msg;        /* rc's message, carried from the worker's thread */
    atomic_int state; /* MGP2P_JOB_*: release by the worker, acquire by the owner */
} mgp2p_job_t;

/* Queue job->run on the worker thread (started at the first job).  An error
   means the job was not queued: run it in the caller instead. */
int mgp2p_job_submit(mgp2p_job_t *job);
/* 1 once the worker finished job (no lock). */
int mgp2p_job_done(mgp2p_job_t *job);
/* Wait until job is done, record its error message in this thread, make it
   idle again, and return its result. */
int mgp2p_job_end(mgp2p_job_t *job);
/* Jobs the worker ran so far (tests). */
unsigned long mgp2p_worker_jobs(void);
/* Stop the worker (MPI_Finalize, after every operation ended). */
void mgp2p_worker_finalize(void);

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

enum {
    MGP2P_LANE_NONE = 0, /* pieces after the first go by MPI */
    MGP2P_LANE_OFFERED,  /* send: the header offered the lane, no answer yet */
    MGP2P_LANE_ON,       /* the pieces after the first go through the lane */
    MGP2P_LANE_REST      /* the receiver (a host receive) asked for the rest as one MPI
                            message on the shadow communicator */
};

typedef struct mgp2p_op {
    struct mgp2p_op *prev, *next; /* active list, while not DONE */
    struct mgp2p_op *hnext;       /* request table chain */
    MPI_Request greq;             /* user handle; MPI_REQUEST_NULL when blocking */
    mgp2p_op_kind_t kind;
    mgp2p_send_mode_t mode;
    const char *fn;
    MPI_Comm comm;
    int peer, tag; /* as given (wildcards allowed for receives) */
    int count;
    const mgdt_type_t *type;
    MPI_Datatype twin; /* send: what a plain message is sent as (mgdt_type_twin) */
    mgpk_ctx_t *pk;
    int pk_flags;       /* the datatype's method attribute, as mgpk flags */
    char *host;         /* a host receive (mgp2p_host_watch): the caller's buffer */
    MPI_Datatype dt;    /* host receive: the caller's datatype */
    int dense;          /* host receive: the packed bytes are one run in memory */
    int inplace;        /* host receive: the message lands in the caller's buffer */
    cl_mem mem;         /* device buffer */
    int64_t origin;     /* offset of the datatype origin in mem */
    const char *packed; /* send from these packed host bytes instead (borrowed) */
    int64_t n;          /* send: packed bytes; receive: capacity */
    int64_t total;      /* receive: bytes the sender sent */
    int64_t done;       /* payload bytes moved */
    int chunked;        /* more than one piece (header in the first) */
    int discard;        /* receive: truncated, drain the pieces */
    int wpeer;          /* chunked: peer's rank in MPI_COMM_WORLD */
    int seq;            /* chunked: tag of the continuation on the shadow comm */
    int pieces;         /* pieces posted */
    int64_t posted;     /* chunked: payload bytes of the pieces posted */
    int npipe;          /* chunked: pieces in flight, oldest first in pipe[] */
    mgp2p_piece_t pipe[MGDEV_P2P_DEPTH_MAX];
    mgp2p_job_t job; /* chunked: the pack or unpack of one piece on the worker (the
                        newest for a send, the oldest for a receive) */
    char *jhost;     /* the job's piece: host bytes and payload range */
    int64_t jfirst, jlen;
    mgdev_stage_t *stage;
    mgp2p_lane_t *lane;   /* chunked: the node lane offered (send) or accepted */
    int lane_state;       /* MGDEV_LANE_* */
    int lane_reply;       /* send: the receiver's answer to the offer */
    MPI_Request lane_req; /* send: its receive */
    char *big; /* plain message above one chunk: a host buffer of its own (mgdev_big_get) */
    size_t big_size;
    MPI_Request inner;
    mgp2p_op_state_t state;
    int err;       /* MPI error class, MPI_SUCCESS */
    int raised;    /* PMPI already ran the error handler for err */
    int freed;     /* MPI_Request_free'd while active */
    int cancelled; /* MPI_Cancel took effect */
    int source, rtag;
    int matched;         /* receive: the first piece is MPI_Imrecv of message */
    MPI_Message message; /* Mrecv/Imrecv: the matched message, until posted */
    int persistent;      /* *_init: greq is a stand-in that outlives completions */
    int started;         /* persistent: started, completion not yet reported */
    int stag;            /* persistent: tag of the stand-in on the private comm */
    atomic_int gfreed;   /* MPI freed the generalized request */
} mgp2p_op_t;

/* The bytes that count instances of t touch, as offsets from the buffer:
   [*lo, *hi). */
static inline void mgp2p_type_span(const mgdt_type_t *t, int count, int64_t *lo, int64_t *hi)
{
    int64_t span = (int64_t)(count - 1) * t->extent;
    *lo = (span < 0 ? span : 0) + t->true_lb;
    *hi = (span > 0 ? span : 0) + t->true_ub;
}

/* Fill op for a call on buf (kind, checks, device buffer, engine).  Returns
   an error class with the message recorded, nothing raised. */
int mgp2p_op_init(mgp2p_op_t *op, mgp2p_op_kind_t kind, const char *fn, const void *buf, int count,
                  MPI_Datatype dt, int peer, int tag, MPI_Comm comm);
/* Under the chunked protocol, whether a receive into host memory could
   match a chunked message (its capacity is at least one chunk): it then
   becomes an operation too (mgp2p_op_init_host), which lands any message in
   host memory of its own, the pieces of a chunked one included, and copies or
   unpacks it into buf at the end. */
int mgp2p_host_watch(int count, MPI_Datatype dt, int peer);
/* Whether another active host receive's buffer overlaps op's (lock held). */
int mgp2p_host_overlap(const mgp2p_op_t *op);
/* The length of a chunked message's first piece, 0 under the plain protocol
   (no message is chunked). */
int64_t mgp2p_first_len(void);
int mgp2p_op_init_host(mgp2p_op_t *op, const char *fn, void *buf, int count, MPI_Datatype dt,
                       int peer, int tag, MPI_Comm comm);
/* Nothing to move (count 0, a type of size 0, MPI_PROC_NULL): MPI does the
   matching and the status on a host stand-in. */
int mgp2p_op_trivial(const mgp2p_op_t *op);
/* Advance op by at most one piece without blocking (lock held). */
int mgp2p_op_step(mgp2p_op_t *op);
/* A blocking call's fast path: for a message below one chunk while no device
   operation is active, pack, one blocking PMPI call, unpack; op is neither
   linked nor given a request.  Returns 1 when it ran op to DONE, 0 when the
   general path must run it (lock not held). */
int mgp2p_op_blocking(mgp2p_op_t *op);
/* Return op's staging (pool buffer, parked or not, and its own large
   buffer): a persistent op being freed, or one drained at MPI_Finalize. */
void mgp2p_op_unstage_all(mgp2p_op_t *op);
/* Cancel a receive still waiting for its first piece (MPI_Cancel). */
void mgp2p_op_cancel(mgp2p_op_t *op);
/* The payload length of the message whose first (or only) piece is the len
   bytes at buf: the header's total for a chunked message's first piece,
   else len. */
int64_t mgp2p_first_total(const char *buf, int64_t len);
/* Set up and tear down p2p state: the shadow communicator, the pool. */
int mgp2p_init(void);
void mgp2p_finalize(void);

/* The most pieces of one chunked message seen in flight at once (tests). */
int mgp2p_pipe_high(void);
/* Pieces sent and received through node lanes so far (tests). */
void mgp2p_lane_pieces(unsigned long *sent, unsigned long *received);
/* Host receives that took their message in place, and those that landed it
   in host memory of their own first (tests). */
void mgp2p_host_receives(unsigned long *inplace, unsigned long *landed);
/* Rests of messages sent as one MPI message, and asked for by host
   receives (MPIGPU_P2P_HOST_RECV=message; tests). */
void mgp2p_rest_messages(unsigned long *sent, unsigned long *received);

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
int mgp2p_progress_busy(void);
/* Between passes of a waiting loop: let other threads of an oversubscribed
   node run when the progress thread is on. */
void mgp2p_progress_relax(void);
/* Block until op is DONE, progressing everything (lock not held). */
void mgp2p_op_wait(mgp2p_op_t *op);
/* The device operation behind a user request, or NULL (lock held). */
mgp2p_op_t *mgp2p_req_lookup(MPI_Request req);
/* The status an operation reports in the user's datatype. */
void mgp2p_op_status(const mgp2p_op_t *op, MPI_Status *status);
/* Drain at MPI_Finalize: operations freed with MPI_Request_free. */
void mgp2p_progress_drain(void);

#endif /* MGDEV_P2P_H */
