/*
 * The point-to-point engine's private interface: the protocol descriptor, the
 * engine's state, the helpers the protocol files share, node lanes, the piece
 * worker and the early-message list.  Only src/p2p includes it.
 *
 * Ownership: mgp2p_engine holds the shadow and control communicators and the
 * sequence numbers from mgp2p_init() to mgp2p_finalize().  An operation owns
 * its staging (op->stage, op->big) and, through its protocol, the pieces in
 * op->u.
 *
 * Locks: every function here that takes an operation runs under the p2p lock
 * (mgp2p_lock), which also guards mgp2p_engine.stats and send_seq.  The
 * worker's jobs and the lanes' rings are shared with another thread or
 * process through their own atomics (worker.c, lane.c).
 */
#ifndef MGP2P_IMPL_H
#define MGP2P_IMPL_H

#include "p2p.h"

/* ---- protocols ---- */

/* What the engine knows when it chooses a send's protocol. */
typedef struct mgp2p_sel {
    int may_chunk;      /* the length allows pieces (MPIGPU_P2P_PROTOCOL, _FIRST, _AUTO_MIN) */
    int wpeer;          /* may_chunk: the peer's world rank */
    mgp2p_lane_t *lane; /* may_chunk: the node lane to the peer, or NULL */
} mgp2p_sel_t;

/* A protocol: constant, one per way a message goes on the wire (README.md has
   the table).  A send's protocol is chosen by walking the send table and
   taking the first that applies; a receive starts under the plain protocol,
   and the first piece's header (chunked), and the answer to the sender's lane
   offer, choose the rest.  Every function runs with the p2p lock held. */
struct mgp2p_proto {
    const char *name;
    mgp2p_proto_id_t id; /* which counter of mgp2p_engine.stats.ops it adds to */
    /* Send protocols: whether this one carries op.  NULL: chosen by another
       protocol, never by the table. */
    int (*applies)(const mgp2p_op_t *op, const mgp2p_sel_t *sel);
    /* Set up op->u for this protocol (zeroed before).  An error fails op. */
    int (*start)(mgp2p_op_t *op, const mgp2p_sel_t *sel);
    /* Advance op by at most one piece without blocking; op->state is DONE
       at the end or after an error (op_fail). */
    void (*progress)(mgp2p_op_t *op);
    /* After an error: end what is in flight (requests, the worker's job, the
       lane), so that op's buffers may go back. */
    void (*abort)(mgp2p_op_t *op);
    /* MPI_Cancel; NULL: the protocol cannot take op back. */
    void (*cancel)(mgp2p_op_t *op);
};

extern const mgp2p_proto_t mgp2p_proto_plain_send, mgp2p_proto_plain_recv;     /* proto_plain.c */
extern const mgp2p_proto_t mgp2p_proto_chunked_send, mgp2p_proto_chunked_recv; /* proto_chunked.c */
extern const mgp2p_proto_t mgp2p_proto_lane_send, mgp2p_proto_lane_recv;       /* proto_lane.c */
extern const mgp2p_proto_t mgp2p_proto_rest_send, mgp2p_proto_rest_recv;       /* proto_rest.c */
extern const mgp2p_proto_t mgp2p_proto_hook; /* proto_hook.c: a layer above's operations */

/* Hand op over to proto: op->u zeroed, then proto->start (lock held). */
int mgp2p_proto_set(mgp2p_op_t *op, const mgp2p_proto_t *proto, const mgp2p_sel_t *sel);

/* ---- the wire of a chunked message (proto_chunked.c) ---- */

#define MGP2P_MAGIC 0x6d70696770753031ULL /* "mpigpu01" */

/* The start of a chunked message's first piece. */
typedef struct mgp2p_header {
    uint64_t magic;
    uint64_t nonce; /* the job's (rank 0's at MPI_Init, broadcast) */
    uint64_t total; /* payload bytes of the whole message */
    uint64_t seq;   /* tag of the continuation pieces */
    uint32_t flags; /* MGP2P_OFFER_LANE */
    uint32_t pid;   /* the sender's process id (its lane's name) */
} mgp2p_header_t;

/* The sender offers the pieces after the first through its node lane to the
   receiver, and waits for the answer (an int, MGP2P_ANSWER_*) on the control
   communicator, with the sequence number as tag. */
#define MGP2P_OFFER_LANE 1u
enum {
    MGP2P_ANSWER_NO = 0,   /* the rest in pieces by MPI */
    MGP2P_ANSWER_LANE = 1, /* the rest through the lane */
    MGP2P_ANSWER_REST = 2  /* the rest as one MPI message (a host receive) */
};

#define MGP2P_HDR ((int64_t)sizeof(mgp2p_header_t))

/* Whether the first piece at buf starts with a chunked message's header;
 *h is it then. */
int mgp2p_header_read(const char *buf, mgp2p_header_t *h);
/* The payload length of the message whose first (or only) piece is the len
   bytes at buf: the header's total for a chunked message's first piece,
   else len. */
int64_t mgp2p_first_total(const char *buf, int64_t len);
/* The receive's first piece at buf (len bytes) holds header h: the chunked
   protocol (or its lane or rest variant) takes op over. */
void mgp2p_chunked_recv_begin(mgp2p_op_t *op, const mgp2p_header_t *h, char *buf, int64_t len);

/* ---- helpers the protocols share (chunked pieces: proto_chunked.c) ---- */

/* Retire the sends that completed, end op when all did, post a piece the
   worker finished packing.  Returns 1 when op has nothing more to do in this
   step (it ended, failed, or waits for the worker). */
int mgp2p_send_settle(mgp2p_op_t *op);
/* Post the send of piece p, packed. */
int mgp2p_send_piece_post(mgp2p_op_t *op, mgp2p_piece_t *p);
/* The receive of a chunked message's pieces, each of at most
   op->u.ck.piece_max payload bytes, and their unpacking. */
void mgp2p_recv_pipe(mgp2p_op_t *op);
/* The chunked protocol's abort: the worker's job, the pieces in flight and an
   unanswered lane offer. */
void mgp2p_pipe_drop(mgp2p_op_t *op);
/* A chunked receive ends once its whole payload arrived (a host receive
   copies its landing buffer first). */
void mgp2p_recv_end(mgp2p_op_t *op);

/* p2p.c */
static inline int64_t mgp2p_first_len(void)
{
    return mgp2p_hot.first;
}
/* Whether a device message of n bytes may go in pieces (under auto the peer
   decides the rest: only a node lane's peer gets them). */
int mgp2p_may_chunk(int64_t n);
int mgp2p_world_rank(MPI_Comm comm, int rank, int *w);
/* op is done with its staging: back to the pool, unless op is persistent
   (mgp2p_op_finish parks it for the next start). */
void mgp2p_op_unstage(mgp2p_op_t *op);
/* Every staging buffer op holds, parked or not (a persistent op being freed,
   or one drained at MPI_Finalize). */
void mgp2p_op_unstage_all(mgp2p_op_t *op);
/* op's own host memory (op->big) of at least want bytes; the error names
   what of len bytes it was for. */
int mgp2p_op_big(mgp2p_op_t *op, size_t want, const char *what, int64_t len);
/* The host buffer of a plain message or a first piece of len bytes: a pool
   buffer, else op's own.  NULL with MPI_SUCCESS: retry later. */
int mgp2p_op_buffer(mgp2p_op_t *op, int64_t len, char **buf);
/* mgp2p_op_fail: p2p.h. */
/* A receive met a message longer than its buffer (len bytes; -1: MPI
   truncated it and did not say): op fails with MPI_ERR_TRUNCATE, a message
   that names the call and the caller's buffer, and a status of 0 bytes
   received (raised: PMPI already ran the error handler). */
void mgp2p_op_truncated(mgp2p_op_t *op, int64_t len, int raised);
/* An error code from PMPI (already raised on the communicator's handler). */
void mgp2p_op_fail_mpi(mgp2p_op_t *op, int code, const char *what);
/* The host method's copy of op's extent, where it needs one (p2p.c): taken
   at the first step of each start, lock held, so that no piece takes pool
   memory from the worker.  mgp2p_op_unstage returns it. */
int mgp2p_op_host_prepare(mgp2p_op_t *op);
/* mgp2p_op_pack, mgp2p_op_unpack: p2p.h. */
/* The count and type a plain message of len packed bytes goes as: the
   type's packed twin, or bytes where only receives landing in bytes can
   match it (p2p.c says why). */
MPI_Datatype mgp2p_plain_type(const mgp2p_op_t *op, int64_t len, MPI_Count *n);
/* Post one piece (the first on the user's communicator, in the call's mode;
   the others on the shadow communicator) of len bytes at buf. */
int mgp2p_send_post(mgp2p_op_t *op, char *buf, int64_t len, int first, MPI_Request *req);

/* op.c: the call's own fields, device and host operations alike. */
void mgp2p_op_call(mgp2p_op_t *op, mgp2p_op_kind_t kind, const char *fn, int count, int peer,
                   int tag, MPI_Comm comm);
/* The count and datatype of op's call (after mgp2p_op_call): count >= 0,
   the decoded type (committed), op->n and the span [*lo, *hi) of the bytes
   touched, each in checked arithmetic.  An error class naming op->fn. */
int mgp2p_op_check(mgp2p_op_t *op, int count, MPI_Datatype dt, int64_t *lo, int64_t *hi);
/* progress.c: whether an active host receive other than op writes into
   [lo, hi). */
int mgp2p_active_overlap(const mgp2p_op_t *op, const char *lo, const char *hi);
/* Whether a dense active host receive other than op, not yet done, will
   write every byte of [lo, hi). */
int mgp2p_active_covers(const mgp2p_op_t *op, const char *lo, const char *hi);

/* host_recv.c: a host receive's buffers */
int mgp2p_host_overlap(const mgp2p_op_t *op);
/* Where a dense host receive's packed bytes lie in the caller's buffer. */
char *mgp2p_host_run(const mgp2p_op_t *op);
/* Where payload byte 0 goes: the caller's buffer in place, else after the
   header in the landing buffer. */
char *mgp2p_host_payload(mgp2p_op_t *op);
/* The buffer of a host receive's first piece: in place, or a landing buffer
   of op's own for the whole message after a header. */
int mgp2p_host_first_buffer(mgp2p_op_t *op, char **buf);
/* Copy or unpack len packed bytes at src (the whole message) into the
   caller's buffer. */
int mgp2p_host_unpack(mgp2p_op_t *op, const char *src, int64_t len);
/* Whether another receive still pending will write over every byte that
   op's dense layout covers: receives pending on overlapping buffers (an
   erroneous program, but osu_bw's window) then skip the landed copy, whose
   bytes the later message replaces anyway. */
int mgp2p_host_superseded(const mgp2p_op_t *op);
/* The same at the end of a landed receive, unless another pending receive
   will write over all of it (mgp2p_host_superseded). */
int mgp2p_host_land_end(mgp2p_op_t *op, const char *src, int64_t len);

/* ---- the grant protocol (grant.c) ---- */

typedef struct mgp2p_grant {
    int size;             /* processes of MPI_COMM_WORLD */
    int hdr;              /* a request came: new host receives read headers */
    unsigned long bare;   /* bare host receives (op->bare) not finished */
    char *state;          /* sender, per world rank: not asked, asked, granted */
    char *want;           /* receiver, per world rank: asked, not granted yet */
    char *from;           /* receiver, per world rank: its request arrived */
    int nwant, nasked;    /* entries of want set; of state asked with a receive posted */
    MPI_Request ask_recv; /* the wildcard receive of requests */
    int ask_buf;
    int *gbuf;               /* per world rank: the grant's int */
    MPI_Request *req;        /* the three arrays below, in one allocation */
    MPI_Request *ask_send;   /* per world rank: our request */
    MPI_Request *grant_recv; /* per world rank: the receive of its grant */
    MPI_Request *grant_send; /* per world rank: our grant */
} mgp2p_grant_t;

int mgp2p_grant_init(int size);
void mgp2p_grant_finalize(void);
/* Sender: whether world rank w granted chunked messages; the first call for
   w asks it (never waits). */
int mgp2p_granted(int w);
/* Whether a device sender asked this process for a grant: before, no
   chunked message can reach it (so a message MPI showed a probe before this
   returned 0 is plain).  Takes the lock. */
int mgp2p_grant_reading(void);
/* Requests and grants that arrived, grants due (every progress pass). */
void mgp2p_grant_progress(void);

/* ---- the engine's state (p2p.c) ---- */

typedef struct mgp2p_engine {
    MPI_Comm shadow;        /* pieces after the first, by world rank and sequence number */
    MPI_Comm ctrl;          /* answers to lane offers */
    int *send_seq;          /* next sequence number per world rank */
    int seq_limit;          /* MPI_TAG_UB - 1: the two above are the grant protocol's */
    uint64_t nonce;         /* the job's random number, in every header */
    int tag_ask, tag_grant; /* the grant protocol's tags on ctrl, above every sequence number */
    mgp2p_grant_t grant;
    struct {
        int pipe_high;
        unsigned long lane_sent, lane_received;
        unsigned long host_inplace, host_landed, host_superseded, host_bare;
        unsigned long grants_asked, grants_sent, grants_received;
        unsigned long rest_sent, rest_received;
        unsigned long ops[MGP2P_PROTO_COUNT]; /* operations completed, by protocol */
    } stats;
} mgp2p_engine_t;

extern mgp2p_engine_t mgp2p_engine;

/* ---- node lanes (lane.c) ---- */

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

/* ---- the piece worker (worker.c) ---- */

/* mgp2p_job_submit, mgp2p_job_done, mgp2p_job_end: p2p.h. */
/* Stop the worker (MPI_Finalize, after every operation ended). */
void mgp2p_worker_finalize(void);

/* ---- messages a probe received early (early.c) ---- */

/* A message that a probe received before any receive took it, because its
   length (exactly one first piece) says it may be a chunked message's first
   piece, whose header holds the length the probe must report. */
typedef struct mgp2p_early {
    struct mgp2p_early *next;
    MPI_Comm comm;
    int source, tag;
    char *buf; /* the message's bytes (mgdev_big_get, capacity size) */
    size_t size;
    int64_t len;              /* bytes received */
    int64_t total;            /* the whole message's payload bytes (chunked) or len */
    MPI_Message handle;       /* the stand-in's handle once MPI_Mprobe matched it, else
                                 MPI_MESSAGE_NULL (early.c) */
    MPI_Request standin_send; /* the stand-in's send, complete once it is received */
} mgp2p_early_t;

/* Free every message still in the list (MPI_Finalize). */
void mgp2p_early_finalize(void);
/* Take the oldest message that the receive matches (or the one of
 *message, whose stand-in is received) out of the list, or NULL. */
mgp2p_early_t *mgp2p_early_take(int source, int tag, MPI_Comm comm, const MPI_Message *message);
void mgp2p_early_free(mgp2p_early_t *e);
/* Remember the communicator of a message MPI matched (mgp2p_message_take). */
void mgp2p_message_note(MPI_Message message, MPI_Comm comm);

#endif /* MGP2P_IMPL_H */
