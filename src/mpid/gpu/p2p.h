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
 * Thread safety: one recursive lock (mgdev_p2p_lock) guards the active list,
 * the request table, every operation's fields and the staging pool.  It is
 * held across nonblocking PMPI calls only, never across a call that waits
 * for another thread.  MPI calls the generalized-request callbacks while
 * holding its own locks, so they never take it (lock order: ours, then
 * MPI's).
 */
#ifndef MGDEV_P2P_H
#define MGDEV_P2P_H

#include <mpi.h>
#include <stdint.h>

#include "mgdev.h"

/* ---- staging pool (staging.c) ---- */

typedef struct mgdev_stage {
    struct mgdev_stage *next;   /* free or parked list */
    struct mgdev_stage **owner; /* parked: the operation's slot, cleared on reclaim */
    cl_mem mem;                 /* CL_MEM_ALLOC_HOST_PTR on the default context, mapped once */
    char *ptr;                  /* the mapping */
    size_t size;
} mgdev_stage_t;

/* Create the pool (nothing is allocated until first use). */
void mgdev_stage_init(size_t cap, size_t keep);
/* Unmap and release every buffer; none may be borrowed. */
void mgdev_stage_finalize(void);
/* A buffer of at least want bytes (want <= mgdev_stage_chunk()), or *s = NULL
   when the pool is at its cap and every buffer is borrowed: try again after
   some operation progressed.  Returns an MPI error code. */
int mgdev_stage_get(size_t want, mgdev_stage_t **s);
/* A buffer of at least want bytes (want > mgdev_stage_chunk()) for a long
   plain message, in the pool's power-of-two classes up to the cap, or *s =
   NULL when the cap does not allow one now (the caller takes host memory of
   its own instead of waiting). */
int mgdev_stage_get_big(size_t want, mgdev_stage_t **s);
void mgdev_stage_put(mgdev_stage_t *s);
/* A host buffer (pageable, not pinned) of at least want bytes for a long
   plain message the pool cannot stage: a kept one, else a new one.  *size is
   its capacity.  Put returns it to be kept for the next long message, within
   MPIGPU_STAGING_KEEP bytes (the oldest go first), else frees it.  Fresh
   pages for every long message cost more than the message's transfers (page
   faults, design.md "Long plain messages"). */
int mgdev_big_get(size_t want, char **buf, size_t *size);
void mgdev_big_put(char *buf, size_t size);
/* Bytes kept now, and buffers allocated so far (tests). */
void mgdev_big_usage(size_t *kept, unsigned long *allocs);
/* A buffer of at least want bytes (want <= mgdev_stage_chunk()) for a
   further piece of a chunked message in flight, only when the pool can still
   give one chunk to another operation after it; else *s = NULL (the
   operation goes on with fewer pieces in flight). */
int mgdev_stage_get_extra(size_t want, mgdev_stage_t **s);
/* Park *slot (a persistent operation's buffer between starts): the pool may
   reclaim it, setting *slot to NULL, when it needs memory.  Unpark takes it
   back (or finds *slot NULL).  Both take NULL. */
void mgdev_stage_park(mgdev_stage_t **slot);
void mgdev_stage_unpark(mgdev_stage_t **slot);
/* The largest buffer, which is also the protocol's chunk size. */
size_t mgdev_stage_chunk(void);
/* Pinned bytes allocated now, their high-water mark, and the cap (tests). */
void mgdev_staging_usage(size_t *allocated, size_t *high_water, size_t *cap);

/* ---- node lanes (lane.c) ---- */

/* A ring of slots in memory shared by two processes of one node, for the
   pieces of chunked messages from one to the other. */
typedef struct mgdev_lane mgdev_lane_t;

int mgdev_lane_init(void);
void mgdev_lane_finalize(void);
/* Sender: the lane to world rank w, created at the first call; NULL when w
   is not on this node, MPIGPU_P2P_SHM=off, or it could not be made (pieces
   then go by MPI). */
mgdev_lane_t *mgdev_lane_tx(int w);
/* Receiver: the lane from world rank w, whose process id is pid, opened at
   the first call; NULL when it cannot be. */
mgdev_lane_t *mgdev_lane_rx(int w, long pid);
/* Bytes of one slot. */
size_t mgdev_lane_piece(const mgdev_lane_t *l);
/* Sender: the next slot to fill, or NULL while the ring is full. */
char *mgdev_lane_slot(mgdev_lane_t *l);
/* Sender: publish that slot as payload [first, first + len) of message seq
   (len -1: the message failed on the sender and ends there). */
void mgdev_lane_publish(mgdev_lane_t *l, int seq, int64_t first, int64_t len);
/* Receiver: the oldest entry not consumed (its slot), or NULL. */
char *mgdev_lane_peek(mgdev_lane_t *l, int64_t *seq, int64_t *first, int64_t *len);
/* Receiver: free the oldest entry's slot. */
void mgdev_lane_consume(mgdev_lane_t *l);
/* Receiver: message seq failed here with left payload bytes still to come:
   drop them as they arrive, so that later messages find the ring moving. */
void mgdev_lane_drop(mgdev_lane_t *l, int seq, int64_t left);

/* ---- messages a probe received early (early.c) ---- */

/* A message that a probe received before any receive took it, because its
   length (exactly one chunk) says it may be a chunked message's first piece,
   whose header holds the length the probe must report. */
typedef struct mgdev_early {
    struct mgdev_early *next;
    MPI_Comm comm;
    int source, tag;
    char *buf; /* the message's bytes (mgdev_big_get, capacity size) */
    size_t size;
    int64_t len;        /* bytes received */
    int64_t total;      /* the whole message's payload bytes (chunked) or len */
    MPI_Message handle; /* mpigpu's handle once MPI_Mprobe matched it, else MPI_MESSAGE_NULL */
} mgdev_early_t;

/* The interposed probes: MPI_Probe (wait, message NULL), MPI_Iprobe,
   MPI_Mprobe (wait) and MPI_Improbe.  A message of exactly one chunk is
   received into the list, and the status gives its whole length. */
int mgdev_probe(int source, int tag, MPI_Comm comm, int wait, int *flag, MPI_Message *message,
                MPI_Status *status);
/* 1 while the list holds any message (no lock needed). */
int mgdev_early_any(void);
/* Whether a receive (source, tag, comm), or of *message when message is not
   NULL, would take a message from the list: it must then run as an
   operation (mgdev_op_init_host for a host buffer). */
int mgdev_early_waiting(int source, int tag, MPI_Comm comm, const MPI_Message *message);
/* Whether m is a handle that MPI_Mprobe gave for a message in the list. */
int mgdev_early_is_handle(MPI_Message m);
/* Take the oldest message that the receive matches (or the one of
 *message) out of the list, or NULL. */
mgdev_early_t *mgdev_early_take(int source, int tag, MPI_Comm comm, const MPI_Message *message);
void mgdev_early_free(mgdev_early_t *e);
/* Free every message still in the list (MPI_Finalize). */
void mgdev_early_finalize(void);
/* Remember the communicator of a message MPI matched (sendrecv.c). */
void mgdev_message_note(MPI_Message message, MPI_Comm comm);

/* ---- operations (p2p.c) ---- */

typedef enum mgdev_op_kind { MGDEV_OP_SEND, MGDEV_OP_RECV } mgdev_op_kind_t;
typedef enum mgdev_send_mode {
    MGDEV_MODE_STD = 0,
    MGDEV_MODE_SYNC,
    MGDEV_MODE_READY,
    MGDEV_MODE_BUFFERED
} mgdev_send_mode_t;
typedef enum mgdev_op_state {
    MGDEV_OP_NEXT = 0, /* post the next piece (needs a staging buffer) */
    MGDEV_OP_INFLIGHT, /* inner PMPI request of one piece outstanding */
    MGDEV_OP_DONE
} mgdev_op_state_t;

/* ---- the piece worker (worker.c) ---- */

enum { MGDEV_JOB_IDLE = 0, MGDEV_JOB_QUEUED, MGDEV_JOB_DONE };
typedef struct mgdev_job {
    struct mgdev_job *next;
    int (*run)(struct mgdev_job *job); /* on the worker; returns an MPI error code */
    int rc;
    char *msg; /* rc's message, carried from the worker's thread */
    int state; /* MGDEV_JOB_*, atomic */
} mgdev_job_t;

/* Queue job->run on the worker thread (started at the first job).  An error
   means the job was not queued: run it in the caller instead. */
int mgdev_job_submit(mgdev_job_t *job);
/* 1 once the worker finished job (no lock). */
int mgdev_job_done(mgdev_job_t *job);
/* Wait until job is done, record its error message in this thread, make it
   idle again, and return its result. */
int mgdev_job_end(mgdev_job_t *job);
/* Jobs the worker ran so far (tests). */
unsigned long mgdev_worker_jobs(void);
/* Stop the worker (MPI_Finalize, after every operation ended). */
void mgdev_worker_finalize(void);

/* A piece of a chunked message in flight (at most MPIGPU_P2P_DEPTH per
   operation): its pool buffer and its inner request. */
typedef enum mgdev_piece_state {
    MGDEV_PIECE_FLIGHT = 0, /* its send or receive is posted */
    MGDEV_PIECE_PACKING,    /* send: the worker packs it, then it is posted */
    MGDEV_PIECE_UNPACKING   /* receive: arrived, the worker unpacks it */
} mgdev_piece_state_t;

typedef struct mgdev_piece {
    mgdev_piece_state_t state;
    mgdev_stage_t *stage; /* NULL: sent straight from the caller's packed bytes */
    MPI_Request req;      /* MPI_REQUEST_NULL once complete (a buffered send) */
    int64_t first, len;   /* payload bytes [first, first + len) of the message */
    int arrived;          /* receive: complete, with got bytes */
    int64_t got;
} mgdev_piece_t;

enum {
    MGDEV_LANE_NONE = 0, /* pieces after the first go by MPI */
    MGDEV_LANE_OFFERED,  /* send: the header offered the lane, no answer yet */
    MGDEV_LANE_ON,       /* the pieces after the first go through the lane */
    MGDEV_LANE_REST      /* the receiver (a host receive) asked for the rest as one MPI
                            message on the shadow communicator */
};

typedef struct mgdev_op {
    struct mgdev_op *prev, *next; /* active list, while not DONE */
    struct mgdev_op *hnext;       /* request table chain */
    MPI_Request greq;             /* user handle; MPI_REQUEST_NULL when blocking */
    mgdev_op_kind_t kind;
    mgdev_send_mode_t mode;
    const char *fn;
    MPI_Comm comm;
    int peer, tag; /* as given (wildcards allowed for receives) */
    int count;
    const mgdt_type_t *type;
    MPI_Datatype twin; /* send: what a plain message is sent as (mgdt_type_twin) */
    mgpk_ctx_t *pk;
    int pk_flags;       /* the datatype's method attribute, as mgpk flags */
    char *host;         /* a host receive (mgdev_host_watch): the caller's buffer */
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
    mgdev_piece_t pipe[MGDEV_P2P_DEPTH_MAX];
    mgdev_job_t job; /* chunked: the pack or unpack of one piece on the worker (the
                        newest for a send, the oldest for a receive) */
    char *jhost;     /* the job's piece: host bytes and payload range */
    int64_t jfirst, jlen;
    mgdev_stage_t *stage;
    mgdev_lane_t *lane;   /* chunked: the node lane offered (send) or accepted */
    int lane_state;       /* MGDEV_LANE_* */
    int lane_reply;       /* send: the receiver's answer to the offer */
    MPI_Request lane_req; /* send: its receive */
    char *big; /* plain message above one chunk: a host buffer of its own (mgdev_big_get) */
    size_t big_size;
    MPI_Request inner;
    mgdev_op_state_t state;
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
    int gfreed;          /* MPI freed the generalized request (atomic) */
} mgdev_op_t;

/* The bytes that count instances of t touch, as offsets from the buffer:
   [*lo, *hi). */
static inline void mgdev_type_span(const mgdt_type_t *t, int count, int64_t *lo, int64_t *hi)
{
    int64_t span = (int64_t)(count - 1) * t->extent;
    *lo = (span < 0 ? span : 0) + t->true_lb;
    *hi = (span > 0 ? span : 0) + t->true_ub;
}

/* Fill op for a call on buf (kind, checks, device buffer, engine).  Returns
   an error class with the message recorded, nothing raised. */
int mgdev_op_init(mgdev_op_t *op, mgdev_op_kind_t kind, const char *fn, const void *buf, int count,
                  MPI_Datatype dt, int peer, int tag, MPI_Comm comm);
/* Under the chunked protocol, whether a receive into host memory could
   match a chunked message (its capacity is at least one chunk): it then
   becomes an operation too (mgdev_op_init_host), which lands any message in
   host memory of its own, the pieces of a chunked one included, and copies or
   unpacks it into buf at the end. */
int mgdev_host_watch(int count, MPI_Datatype dt, int peer);
/* Whether another active host receive's buffer overlaps op's (lock held). */
int mgdev_host_overlap(const mgdev_op_t *op);
/* The length of a chunked message's first piece, 0 under the plain protocol
   (no message is chunked). */
int64_t mgdev_p2p_first_len(void);
int mgdev_op_init_host(mgdev_op_t *op, const char *fn, void *buf, int count, MPI_Datatype dt,
                       int peer, int tag, MPI_Comm comm);
/* Nothing to move (count 0, a type of size 0, MPI_PROC_NULL): MPI does the
   matching and the status on a host stand-in. */
int mgdev_op_trivial(const mgdev_op_t *op);
/* Advance op by at most one piece without blocking (lock held). */
int mgdev_op_step(mgdev_op_t *op);
/* A blocking call's fast path: for a message below one chunk while no device
   operation is active, pack, one blocking PMPI call, unpack; op is neither
   linked nor given a request.  Returns 1 when it ran op to DONE, 0 when the
   general path must run it (lock not held). */
int mgdev_op_blocking(mgdev_op_t *op);
/* Return op's staging (pool buffer, parked or not, and its own large
   buffer): a persistent op being freed, or one drained at MPI_Finalize. */
void mgdev_op_unstage_all(mgdev_op_t *op);
/* Cancel a receive still waiting for its first piece (MPI_Cancel). */
void mgdev_op_cancel(mgdev_op_t *op);
/* The payload length of the message whose first (or only) piece is the len
   bytes at buf: the header's total for a chunked message's first piece,
   else len. */
int64_t mgdev_p2p_first_total(const char *buf, int64_t len);
/* Set up and tear down p2p state: the shadow communicator, the pool. */
int mgdev_p2p_init(void);
void mgdev_p2p_finalize(void);

/* The most pieces of one chunked message seen in flight at once (tests). */
int mgdev_p2p_pipe_high(void);
/* Pieces sent and received through node lanes so far (tests). */
void mgdev_p2p_lane_pieces(unsigned long *sent, unsigned long *received);
/* Host receives that took their message in place, and those that landed it
   in host memory of their own first (tests). */
void mgdev_p2p_host_receives(unsigned long *inplace, unsigned long *landed);
/* Rests of messages sent as one MPI message, and asked for by host
   receives (MPIGPU_P2P_HOST_RECV=message; tests). */
void mgdev_p2p_rest_messages(unsigned long *sent, unsigned long *received);

/* 1 when any byte that count instances of dt at buf touch lies in the
   reserved device range. */
int mgdev_buf_is_device(const void *buf, MPI_Count count, MPI_Datatype dt);

/* ---- progress, the request table and the lock (progress.c) ---- */

void mgdev_p2p_lock(void);
void mgdev_p2p_unlock(void);
/* The private communicator and, under MPI_THREAD_MULTIPLE, the progress
   thread; stopped before anything else at MPI_Finalize. */
int mgdev_progress_init(void);
void mgdev_progress_finalize(void);
/* Track op: link it in the active list (and give it a generalized request
   when nonblocking). */
int mgdev_op_start(mgdev_op_t *op, int nonblocking);
/* Make op (filled by mgdev_op_init, heap memory handed over) persistent: a
   stand-in request in *req, inactive.  Lock held. */
int mgdev_op_persist(mgdev_op_t *op, MPI_Request *req);
/* MPI_Start of a persistent op (lock held). */
int mgdev_op_restart(mgdev_op_t *op);
/* MPI_Request_free of a persistent op that is not active (lock held): drops
   the table entry and the staging; the caller frees the stand-in and op. */
void mgdev_op_unpersist(mgdev_op_t *op);
/* op reached DONE: leave the active list, complete its request (lock held). */
void mgdev_op_finish(mgdev_op_t *op);
/* Step every active operation once; completes requests.  The _locked form
   runs with the lock held. */
void mgdev_progress(void);
void mgdev_progress_locked(void);
/* 1 while any device operation is active (no lock needed). */
int mgdev_progress_busy(void);
/* Between passes of a waiting loop: let other threads of an oversubscribed
   node run when the progress thread is on. */
void mgdev_progress_relax(void);
/* Block until op is DONE, progressing everything (lock not held). */
void mgdev_op_wait(mgdev_op_t *op);
/* The device operation behind a user request, or NULL (lock held). */
mgdev_op_t *mgdev_req_lookup(MPI_Request req);
/* The status an operation reports in the user's datatype. */
void mgdev_op_status(const mgdev_op_t *op, MPI_Status *status);
/* Drain at MPI_Finalize: operations freed with MPI_Request_free. */
void mgdev_progress_drain(void);

#endif /* MGDEV_P2P_H */
