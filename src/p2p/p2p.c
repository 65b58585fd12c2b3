/*
 * Send and receive operations on device buffers, and the protocol between
 * them (doc/design.md, "Point-to-point").
 *
 * A message of n packed bytes is one MPI message of n MPI_BYTEs: the bytes
 * MPI itself would send for the user's datatype, so either side may be plain
 * MPI, a host buffer or another library.  Up to one chunk
 * (mgdev_stage_chunk()) it is packed into (or unpacked from) a pinned buffer
 * of the staging pool; a longer one gets a host buffer of its own for the
 * time of the operation, so the pool's cap holds whatever the messages'
 * sizes.
 *
 * Under MPIGPU_P2P_PROTOCOL=chunked a message of at least MPIGPU_P2P_FIRST
 * bytes goes in pieces instead, so it never needs more than a few pool
 * buffers; under auto (the default) only one of MPIGPU_P2P_AUTO_MIN bytes to a
 * process of the same node does, whose pieces then skip MPI through the node
 * lane (lane.c).  Every process must use the same settings (checked at
 * MPI_Init).  The first piece is exactly MPIGPU_P2P_FIRST bytes on the user's
 * communicator and tag and starts with a header (magic, the job's number,
 * total length, sequence number, lane offer); the others go through the lane
 * or on a shadow duplicate of MPI_COMM_WORLD, addressed by world rank, with
 * the sequence number as tag.  Sequence numbers count per (sender, receiver)
 * pair, so pieces of concurrent messages never match each other.  A receiver
 * recognizes such a first piece by its length, magic and number; a dense
 * host receive takes it in place (doc/design.md, "Host receives in place").
 * Up to MPIGPU_P2P_DEPTH pieces of one message are in flight, each in a pool
 * buffer of its own: the sender packs piece k + 1 while MPI moves piece k, and
 * the receiver has the next pieces' receives posted while it unpacks one.
 * MPI matches the pieces of one message in the order they were posted (same
 * sender, communicator and tag), so each lands at its own offset.
 */
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "mgerr.h"
#include "p2p.h"

#define P2P_MAGIC 0x6d70696770753031ULL /* "mpigpu01" */

typedef struct p2p_header {
    uint64_t magic;
    uint64_t nonce; /* the job's (rank 0's at MPI_Init, broadcast) */
    uint64_t total; /* payload bytes of the whole message */
    uint64_t seq;   /* tag of the continuation pieces */
    uint32_t flags; /* P2P_OFFER_LANE */
    uint32_t pid;   /* the sender's process id (its lane's name) */
} p2p_header_t;

/* The sender offers the pieces after the first through its node lane to
   the receiver, and waits for the answer (an int: lane_yes, lane_no, or
   lane_rest from a host receive under MPIGPU_P2P_HOST_RECV=message) on the
   control communicator, with the sequence number as tag. */
#define P2P_OFFER_LANE 1u

#define HDR ((int64_t)sizeof(p2p_header_t))

static MPI_Comm shadow = MPI_COMM_NULL;
static MPI_Comm ctrl = MPI_COMM_NULL; /* answers to lane offers */
static int pipe_high;                 /* mgp2p_pipe_high() */
static unsigned long lane_sent, lane_received;
static unsigned long host_inplace, host_landed; /* mgp2p_host_receives() */
static unsigned long rest_sent, rest_received;  /* mgp2p_rest_messages() */
/* Answers to a lane offer: the rest through the lane, in pieces by MPI, or
   as one MPI message (into a host receive's place). */
static const int lane_yes = 1, lane_no = 0, lane_rest = 2;
static int *send_seq; /* next sequence number per world rank */
static int seq_limit; /* MPI_TAG_UB + 1 */
/* A random number the job's processes agree on at MPI_Init: a plain message
   of one chunk is taken for a chunked message's first piece only if it
   starts with the magic and this. */
static uint64_t job_nonce;
static const char *const protocol_names[] = {"plain", "chunked", "auto"};

int mgp2p_init(void)
{
    int size = 0, flag = 0, *ub = NULL;
    mgdev_stage_init(mgdev_state.settings.staging_max, mgdev_state.settings.staging_keep);
    int rc = PMPI_Comm_dup(MPI_COMM_WORLD, &shadow);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_dup(MPI_COMM_WORLD, &ctrl);
    if (rc == MPI_SUCCESS)
        rc = mgp2p_progress_init();
    if (rc == MPI_SUCCESS)
        rc = mgp2p_lane_init();
    if (rc != MPI_SUCCESS)
        return rc;
    PMPI_Comm_set_errhandler(shadow, MPI_ERRORS_RETURN);
    PMPI_Comm_set_errhandler(ctrl, MPI_ERRORS_RETURN);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    seq_limit = flag && ub ? *ub : 32767;
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0 &&
        getrandom(&job_nonce, sizeof(job_nonce), GRND_NONBLOCK) != (ssize_t)sizeof(job_nonce)) {
        struct timespec ts; /* no entropy yet: time and process id */
        clock_gettime(CLOCK_REALTIME, &ts);
        job_nonce = ((uint64_t)ts.tv_sec << 32 ^ (uint64_t)ts.tv_nsec) * 0x9e3779b97f4a7c15ULL ^
                    (uint64_t)getpid();
    }
    rc = PMPI_Bcast(&job_nonce, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        return rc;
    /* Every process must split messages alike: one that expects no pieces
       would take a first piece for a whole message. */
    int64_t f = mgp2p_first_len();
    long v[6] = {mgdev_state.settings.p2p_protocol, (long)f, f ? (long)mgdev_stage_chunk() : 0};
    for (int i = 0; i < 3; i++)
        v[3 + i] = -v[i];
    rc = PMPI_Allreduce(MPI_IN_PLACE, v, 6, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS)
        return rc;
    if (v[0] != -v[3] || v[1] != -v[4] || v[2] != -v[5])
        return mgerr_set(MPI_ERR_OTHER,
                         "mpigpu: MPIGPU_P2P_PROTOCOL, MPIGPU_P2P_FIRST or MPIGPU_STAGING_MAX "
                         "differs between processes (this one: protocol %s, first pieces of "
                         "%lld bytes, pieces of %lld bytes); set them alike on every process",
                         protocol_names[mgdev_state.settings.p2p_protocol], (long long)f,
                         (long long)(f ? mgdev_stage_chunk() : 0));
    send_seq = calloc((size_t)size, sizeof(int));
    if (!send_seq)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory for p2p state");
    return MPI_SUCCESS;
}

int64_t mgp2p_first_len(void)
{
    size_t f = mgdev_state.settings.p2p_first, chunk = mgdev_stage_chunk();
    if (mgdev_state.settings.p2p_protocol == MGDEV_P2P_PLAIN || shadow == MPI_COMM_NULL)
        return 0;
    return (int64_t)(f < chunk ? f : chunk);
}

/* Whether a device message of n bytes may go in pieces (the peer decides
   the rest under auto: only to a node lane's peer). */
static int may_chunk(int64_t n)
{
    int64_t f = mgp2p_first_len(), min = (int64_t)mgdev_state.settings.p2p_auto_min;
    if (!f || n < f)
        return 0;
    return mgdev_state.settings.p2p_protocol == MGDEV_P2P_CHUNKED || n >= min;
}

int mgp2p_host_watch(int count, MPI_Datatype dt, int peer)
{
    MPI_Count size = 0;
    int64_t f = mgp2p_first_len();
    if (!f || count <= 0 || peer == MPI_PROC_NULL || dt == MPI_DATATYPE_NULL ||
        PMPI_Type_size_x(dt, &size) != MPI_SUCCESS || size <= 0)
        return 0; /* PMPI reports what is wrong */
    return (int64_t)count * size >= f;
}

int mgp2p_pipe_high(void)
{
    return pipe_high;
}

void mgp2p_lane_pieces(unsigned long *sent, unsigned long *received)
{
    *sent = lane_sent;
    *received = lane_received;
}

void mgp2p_host_receives(unsigned long *inplace, unsigned long *landed)
{
    *inplace = host_inplace;
    *landed = host_landed;
}

void mgp2p_rest_messages(unsigned long *sent, unsigned long *received)
{
    *sent = rest_sent;
    *received = rest_received;
}

void mgp2p_finalize(void)
{
    mgp2p_progress_finalize();
    mgp2p_worker_finalize();
    mgp2p_early_finalize(); /* its buffers go back to the kept list, freed next */
    mgdev_stage_finalize();
    mgp2p_lane_finalize();
    if (shadow != MPI_COMM_NULL)
        PMPI_Comm_free(&shadow);
    if (ctrl != MPI_COMM_NULL)
        PMPI_Comm_free(&ctrl);
    free(send_seq);
    send_seq = NULL;
}

static int world_rank(MPI_Comm comm, int rank, int *w)
{
    MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
    int inter = 0;
    PMPI_Comm_test_inter(comm, &inter);
    int rc = inter ? PMPI_Comm_remote_group(comm, &g) : PMPI_Comm_group(comm, &g);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_group(MPI_COMM_WORLD, &wg);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Group_translate_ranks(g, 1, &rank, wg, w);
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    if (wg != MPI_GROUP_NULL)
        PMPI_Group_free(&wg);
    if (rc == MPI_SUCCESS && *w == MPI_UNDEFINED)
        rc = mgerr_set(MPI_ERR_RANK,
                       "mpigpu: rank %d of a communicator is outside MPI_COMM_WORLD (spawned "
                       "processes cannot take messages of more than one staging chunk)",
                       rank);
    return rc;
}

/* op is done with its staging: back to the pool, unless op is persistent
   (mgp2p_op_finish parks it for the next start). */
static void op_unstage(mgp2p_op_t *op)
{
    if (op->persistent)
        return;
    mgdev_stage_put(op->stage);
    op->stage = NULL;
    mgdev_big_put(op->big, op->big_size);
    op->big = NULL;
}

void mgp2p_op_unstage_all(mgp2p_op_t *op)
{
    mgdev_stage_unpark(&op->stage);
    mgdev_stage_put(op->stage);
    op->stage = NULL;
    mgdev_big_put(op->big, op->big_size);
    op->big = NULL;
}

/* op's own host memory (op->big) of at least want bytes, the one it holds
   when large enough (a persistent op keeps it for the next start); the error
   names what of len bytes it was for ("a message", "a receive"). */
static int op_big(mgp2p_op_t *op, size_t want, const char *what, int64_t len)
{
    if (op->big && op->big_size >= want)
        return MPI_SUCCESS;
    mgdev_big_put(op->big, op->big_size);
    op->big = NULL;
    if (mgdev_big_get(want, &op->big, &op->big_size) != MPI_SUCCESS)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory for %s of %lld bytes",
                         op->fn, what, (long long)len);
    return MPI_SUCCESS;
}

/* The host buffer of a message of len bytes (a plain message or a chunked
   one's first piece): a pool buffer (pinned, reused) when the pool has one
   now, else op's own (kept by a persistent op for its next start), so that
   every operation posts its message as soon as it starts. */
static int op_buffer(mgp2p_op_t *op, int64_t len, char **buf)
{
    int rc = MPI_SUCCESS;
    *buf = NULL;
    if (op->big && op->big_size >= (size_t)len) {
        *buf = op->big;
        return MPI_SUCCESS;
    }
    if (op->stage && op->stage->size >= (size_t)len) {
        *buf = op->stage->ptr;
        return MPI_SUCCESS;
    }
    if (len <= (int64_t)mgdev_stage_chunk()) {
        rc = mgdev_stage_get((size_t)len, &op->stage);
        if (rc != MPI_SUCCESS || op->stage) {
            *buf = op->stage ? op->stage->ptr : NULL;
            return rc;
        }
        /* The pool is at its cap: host memory of op's own.  Waiting for a
           pool buffer would let a later operation post its message first,
           and MPI's order between two processes is the order of the calls. */
    } else {
        mgdev_stage_put(op->stage); /* a persistent op's parked buffer, too small now */
        op->stage = NULL;
        rc = mgdev_stage_get_big((size_t)len, &op->stage);
        if (rc != MPI_SUCCESS || op->stage) {
            *buf = op->stage ? op->stage->ptr : NULL;
            return rc;
        }
    }
    rc = op_big(op, (size_t)len, "a message", len);
    *buf = rc == MPI_SUCCESS ? op->big : NULL;
    return rc;
}

/* End the pieces of a failed chunked message.  A receive is cancelled before
   its buffer goes back to the pool; a send cannot be taken back once matched,
   so its request is freed and its buffer, which MPI may still read, is never
   reused (it stays counted against the pool's cap). */
static void pipe_drop(mgp2p_op_t *op)
{
    if (atomic_load_explicit(&op->job.state, memory_order_acquire) != MGP2P_JOB_IDLE)
        mgp2p_job_end(&op->job); /* the worker must be done with its buffer */
    for (int i = 0; i < op->npipe; i++) {
        mgp2p_piece_t *p = &op->pipe[i];
        if (p->req != MPI_REQUEST_NULL && op->kind == MGP2P_OP_RECV) {
            PMPI_Cancel(&p->req);
            PMPI_Wait(&p->req, MPI_STATUS_IGNORE);
        } else if (p->req != MPI_REQUEST_NULL) {
            PMPI_Request_free(&p->req);
            p->stage = NULL;
        }
        mgdev_stage_put(p->stage);
        p->stage = NULL;
    }
    op->npipe = 0;
    if (op->lane_req != MPI_REQUEST_NULL) {
        PMPI_Cancel(&op->lane_req);
        PMPI_Wait(&op->lane_req, MPI_STATUS_IGNORE);
    }
    if (op->lane_state == MGP2P_LANE_ON && op->kind == MGP2P_OP_SEND && op->posted < op->n &&
        mgp2p_lane_slot(op->lane))
        mgp2p_lane_publish(op->lane, op->seq, op->posted, -1); /* the receiver fails too */
    else if (op->lane_state == MGP2P_LANE_ON && op->kind == MGP2P_OP_RECV)
        mgp2p_lane_drop(op->lane, op->seq, op->total - op->done);
    op->lane_state = MGP2P_LANE_NONE;
}

/* Record an error class (detailed message already set) on op; it is done. */
static void op_fail(mgp2p_op_t *op, int err, int raised)
{
    if (op->err == MPI_SUCCESS) {
        op->err = err;
        op->raised = raised;
    }
    pipe_drop(op);
    op_unstage(op);
    op->state = MGP2P_OP_DONE;
}

/* An error code from PMPI (already raised on the communicator's handler). */
static void op_fail_mpi(mgp2p_op_t *op, int code, const char *what)
{
    int cls = MPI_ERR_OTHER;
    PMPI_Error_class(code, &cls);
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    PMPI_Error_string(code, msg, &len);
    mgerr_set(cls, "mpigpu: %s: %s of a %s buffer failed: %s", op->fn, what,
              op->host ? "host" : "device", msg);
    op_fail(op, cls, 1);
}

/* A piece was posted with PMPI result rc: in flight, or op failed. */
static int op_posted(mgp2p_op_t *op, int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        op_fail_mpi(op, rc, what);
        return rc;
    }
    op->pieces++;
    op->state = MGP2P_OP_INFLIGHT;
    return MPI_SUCCESS;
}

/* The bytes of a contiguous type (one run in memory order) move between the
   device and pinned staging as one transfer; the engine cannot know that
   staging is pinned, so it would bounce them through its own buffers, and on
   a GPU that ranks share its copy or kernel costs a context switch.  Only
   under MPIGPU_PACK=auto: a forced method still runs the engine. */
static int op_contig(const mgp2p_op_t *op)
{
    return mgdev_state.settings.method == MGPK_METHOD_AUTO && mgpk_contig(op->type, op->count);
}

/* Packed bytes [first, first + len) of op's data into host memory, or back. */
static int op_pack(mgp2p_op_t *op, char *host, int64_t first, int64_t len)
{
    mgpk_buf_t h = {.host = host, .pinned = mgdev_pinned(host, (size_t)len)},
               d = {.mem = op->mem, .offset = op->origin};
    if (!op_contig(op))
        return mgpk_pack(op->pk, op->type, op->count, d, h, first, len, op->pk_flags);
    d.offset += op->type->shape.offset + first;
    return mgpk_copy(op->pk, h, d, (size_t)len);
}

/* Where a dense host receive's packed bytes lie in the caller's buffer. */
static char *host_run(const mgp2p_op_t *op)
{
    return op->host + op->type->shape.offset;
}

/* A host receive landed in bytes: unpack len packed bytes at src (the whole
   message) into the caller's buffer.  A dense layout is one memcpy; else
   the pack engine's host walk (the bytes MPI_Unpack would write). */
static int host_unpack(mgp2p_op_t *op, const char *src, int64_t len)
{
    if (op->dense) {
        memcpy(host_run(op), src, (size_t)len);
        return MPI_SUCCESS;
    }
    return mgpk_host_pack(op->pk, op->type, op->host, (void *)(uintptr_t)src, 0, len, 1);
}

static int op_unpack(mgp2p_op_t *op, char *host, int64_t first, int64_t len)
{
    mgpk_buf_t h = {.host = host, .pinned = mgdev_pinned(host, (size_t)len)},
               d = {.mem = op->mem, .offset = op->origin};
    if (!op_contig(op))
        return mgpk_unpack(op->pk, op->type, op->count, h, d, first, len, op->pk_flags);
    d.offset += op->type->shape.offset + first;
    return mgpk_copy(op->pk, d, h, (size_t)len);
}

/* A plain message goes as count instances of the type's packed twin, whose
   type signature matches the user's datatype (mgdt_type_twin); the pieces of
   a chunked one as bytes. */
static int send_post_piece(mgp2p_op_t *op, char *buf, int64_t len, int first, MPI_Request *req)
{
    MPI_Comm comm = first ? op->comm : shadow;
    int dest = first ? op->peer : op->wpeer, tag = first ? op->tag : op->seq;
    MPI_Count n = op->chunked ? (MPI_Count)len : op->count;
    MPI_Datatype t = op->chunked ? MPI_BYTE : op->twin;
    if (op->mode == MGP2P_MODE_BUFFERED) {
        *req = MPI_REQUEST_NULL;
        return PMPI_Bsend_c(buf, n, t, dest, tag, comm);
    }
    if (first && op->mode == MGP2P_MODE_SYNC)
        return PMPI_Issend_c(buf, n, t, dest, tag, comm, req);
    if (first && op->mode == MGP2P_MODE_READY)
        return PMPI_Irsend_c(buf, n, t, dest, tag, comm, req);
    return PMPI_Isend_c(buf, n, t, dest, tag, comm, req);
}

/* ---- the pieces of a chunked message ---- */

/* A pool buffer for a piece of len bytes: the operation's own (from an
   earlier piece, or parked by a persistent request) when own allows, else
   one from the pool, waiting for it when no piece is in flight (the
   operation's first claim) and only one the pool can spare otherwise. */
static int pipe_buffer(mgp2p_op_t *op, int64_t len, int own, mgdev_stage_t **s)
{
    *s = NULL;
    if (own && op->stage && op->stage->size >= (size_t)len) {
        *s = op->stage;
        op->stage = NULL;
        return MPI_SUCCESS;
    }
    /* Always the chunk class, even for a short last piece: a buffer of
       another class would make the pool release and allocate pinned memory
       back and forth.  A first piece is shorter (MPIGPU_P2P_FIRST), and
       under auto it is a send's only piece by MPI. */
    size_t want = op->posted == 0 ? (size_t)len : mgdev_stage_chunk();
    if (op->npipe == 0)
        return mgdev_stage_get(want, s);
    return mgdev_stage_get_extra(want, s);
}

/* The oldest piece is complete: its buffer becomes the operation's own for
   the next piece, or goes back to the pool. */
static void pipe_retire(mgp2p_op_t *op)
{
    mgp2p_piece_t *p = &op->pipe[0];
    op->done += p->len;
    if (p->stage && !op->stage)
        op->stage = p->stage;
    else
        mgdev_stage_put(p->stage);
    op->npipe--;
    memmove(op->pipe, op->pipe + 1, (size_t)op->npipe * sizeof(*p));
}

/* The message is complete once every piece was retired. */
static int pipe_end(mgp2p_op_t *op, int64_t total)
{
    if (op->done < total)
        return 0;
    op->state = MGP2P_OP_DONE;
    op_unstage(op);
    return 1;
}

/* The worker's job: the pack (send) or unpack (receive) of op's piece. */
static int piece_run(mgp2p_job_t *job)
{
    mgp2p_op_t *op = (mgp2p_op_t *)(void *)((char *)job - offsetof(mgp2p_op_t, job));
    if (op->kind == MGP2P_OP_SEND)
        return op_pack(op, op->jhost, op->jfirst, op->jlen);
    return op_unpack(op, op->jhost, op->jfirst, op->jlen);
}

/* Pack or unpack [first, first + len) of the message at host: on the worker
   when another piece is in flight, so that MPI keeps moving it (*queued =
   1; the caller polls op->job), else here. */
static int piece_work(mgp2p_op_t *op, char *host, int64_t first, int64_t len, int *queued)
{
    int busy = 0;
    *queued = 0;
    for (int i = 0; i < op->npipe; i++)
        busy += op->pipe[i].state == MGP2P_PIECE_FLIGHT && op->pipe[i].req != MPI_REQUEST_NULL &&
                !op->pipe[i].arrived;
    if (busy && mgdev_state.settings.p2p_depth > 1) {
        op->jhost = host;
        op->jfirst = first;
        op->jlen = len;
        op->job.run = piece_run;
        if (mgp2p_job_submit(&op->job) == MPI_SUCCESS) {
            *queued = 1;
            return MPI_SUCCESS;
        }
    }
    return op->kind == MGP2P_OP_SEND ? op_pack(op, host, first, len)
                                     : op_unpack(op, host, first, len);
}

/* Post the send of piece p, packed. */
static int send_piece_post(mgp2p_op_t *op, mgp2p_piece_t *p)
{
    int first = p->first == 0; /* the piece with the header */
    int64_t hdr = first ? HDR : 0;
    /* Without a pool buffer: the first piece, or a rest packed by send_rest,
       in op's own host memory; a later piece straight from the caller's
       packed bytes. */
    char *buf = p->stage               ? p->stage->ptr
                : first || !op->packed ? op->big
                                       : (char *)op->packed + p->first;
    int rc = send_post_piece(op, buf, p->len + hdr, first, &p->req);
    p->state = MGP2P_PIECE_FLIGHT;
    if (rc != MPI_SUCCESS) {
        op_fail_mpi(op, rc, "posting a send");
        return rc;
    }
    op->pieces++;
    return MPI_SUCCESS;
}

/* The receiver's answer to a lane offer: 1 once it came (lane_state is then
   ON or NONE), 0 while it has not, or when op failed. */
static int lane_answer(mgp2p_op_t *op)
{
    int flag = 0;
    int rc = PMPI_Test(&op->lane_req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        op_fail_mpi(op, rc, "the answer to a node lane offer");
        return 0;
    }
    if (flag)
        op->lane_state = op->lane_reply == lane_yes    ? MGP2P_LANE_ON
                         : op->lane_reply == lane_rest ? MGP2P_LANE_REST
                                                       : MGP2P_LANE_NONE;
    return flag;
}

/* The pieces after the first through the node lane: pack each straight into
   a free slot (DMA into the registered slot on a device) and publish it;
   stop when the ring is full, the receiver frees slots as it unpacks. */
static void send_lane(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    int64_t piece = (int64_t)mgp2p_lane_piece(op->lane);
    char *slot;
    while (op->posted < op->n && (slot = mgp2p_lane_slot(op->lane))) {
        int64_t len = op->n - op->posted;
        if (len > piece)
            len = piece;
        if (op->packed)
            memcpy(slot, op->packed + op->posted, (size_t)len);
        else if ((rc = op_pack(op, slot, op->posted, len)) != MPI_SUCCESS)
            break;
        mgp2p_lane_publish(op->lane, op->seq, op->posted, len);
        op->posted += len;
        op->done += len;
        lane_sent++;
    }
    if (rc != MPI_SUCCESS)
        op_fail(op, rc, 0);
    else
        pipe_end(op, op->n);
}

/* The rest of the message after the first piece as one MPI message, which
   the receiver (a host receive) asked for: once the first piece went, packed
   whole into a buffer of its own (a pool buffer, else op's own host memory).
   The receiver has it land in place. */
static void send_rest(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    int64_t len = op->n - op->posted, chunk = (int64_t)mgdev_stage_chunk();
    mgp2p_piece_t *p = &op->pipe[0];

    *p = (mgp2p_piece_t){.req = MPI_REQUEST_NULL, .first = op->posted, .len = len};
    if (!op->packed) {
        /* The first piece's buffer, now op's own, is too short. */
        mgdev_stage_put(op->stage);
        op->stage = NULL;
        rc = len <= chunk ? mgdev_stage_get((size_t)chunk, &p->stage)
                          : mgdev_stage_get_big((size_t)len, &p->stage);
        MG_CHECK(rc, fn_fail);
        if (!p->stage)
            rc = op_big(op, (size_t)len, "a message", op->n);
        MG_CHECK(rc, fn_fail);
        rc = op_pack(op, p->stage ? p->stage->ptr : op->big, p->first, len);
        MG_CHECK(rc, fn_fail);
    }
    op->npipe = 1;
    op->posted = op->n;
    if (send_piece_post(op, p) == MPI_SUCCESS)
        rest_sent++;
    return;
fn_fail:
    op_fail(op, rc, 0);
}

/* A chunked send: retire the pieces whose sends completed, oldest first,
   then pack and post pieces until MPIGPU_P2P_DEPTH are in flight or the pool
   has no buffer to spare; a piece packs on the worker while others are in
   flight, and is posted once packed (pieces are posted in order).  The first
   piece carries the header and goes on the user's communicator, in the
   call's mode. */
static void send_pipe(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS, queued = 0;
    int64_t chunk = (int64_t)mgdev_stage_chunk(), flen = mgp2p_first_len();
    char *pbuf = NULL;

    while (op->npipe > 0 && op->pipe[0].state == MGP2P_PIECE_FLIGHT) {
        int flag = 1;
        if (op->pipe[0].req != MPI_REQUEST_NULL) {
            rc = PMPI_Test(&op->pipe[0].req, &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                op_fail_mpi(op, rc, "a send");
                return;
            }
        }
        if (!flag)
            break;
        pipe_retire(op);
    }
    if (pipe_end(op, op->n))
        return;
    if (op->npipe > 0 && op->pipe[op->npipe - 1].state == MGP2P_PIECE_PACKING) {
        if (!mgp2p_job_done(&op->job))
            return;
        rc = mgp2p_job_end(&op->job);
        MG_CHECK(rc, fn_fail);
        if (send_piece_post(op, &op->pipe[op->npipe - 1]) != MPI_SUCCESS)
            return;
    }
    if (op->lane_state == MGP2P_LANE_OFFERED && op->posted > 0 && !lane_answer(op))
        return;
    if (op->lane_state == MGP2P_LANE_ON) {
        send_lane(op);
        return;
    }
    if (op->lane_state == MGP2P_LANE_REST) {
        if (op->npipe == 0 && op->posted < op->n)
            send_rest(op);
        return;
    }
    while (op->posted < op->n && op->npipe < mgdev_state.settings.p2p_depth &&
           (op->posted == 0 || op->lane_state == MGP2P_LANE_NONE)) {
        int first = op->posted == 0;
        int64_t hdr = first ? HDR : 0, len = op->n - op->posted;
        mgp2p_piece_t *p = &op->pipe[op->npipe];
        if (len > (first ? flen - hdr : chunk))
            len = first ? flen - hdr : chunk;
        *p = (mgp2p_piece_t){.req = MPI_REQUEST_NULL, .first = op->posted, .len = len};
        if (!op->packed || hdr) {
            rc = pipe_buffer(op, len + hdr, 1, &p->stage);
            MG_CHECK(rc, fn_fail);
            if (!p->stage && hdr) {
                /* The first piece goes now, in host memory of op's own when
                   the pool is at its cap (op_buffer says why). */
                rc = op_big(op, (size_t)flen, "a message", op->n);
                MG_CHECK(rc, fn_fail);
                pbuf = op->big;
            } else if (!p->stage) {
                break; /* the pool is at its cap: more after progress */
            }
        }
        if (p->stage)
            pbuf = p->stage->ptr;
        if (++op->npipe > pipe_high)
            pipe_high = op->npipe;
        op->posted += len;
        if (hdr) {
            p2p_header_t h = {.magic = P2P_MAGIC,
                              .nonce = job_nonce,
                              .total = (uint64_t)op->n,
                              .seq = (uint64_t)op->seq,
                              .flags = op->lane_state == MGP2P_LANE_OFFERED ? P2P_OFFER_LANE : 0,
                              .pid = (uint32_t)getpid()};
            memcpy(pbuf, &h, sizeof(h));
            if (op->packed)
                memcpy(pbuf + hdr, op->packed, (size_t)len);
        }
        if (!op->packed) {
            rc = piece_work(op, pbuf + hdr, p->first, len, &queued);
            MG_CHECK(rc, fn_fail);
            if (queued) {
                p->state = MGP2P_PIECE_PACKING;
                return;
            }
        }
        if (send_piece_post(op, p) != MPI_SUCCESS)
            return;
    }
    return;
fn_fail:
    op_fail(op, rc, 0);
}

/* Pack and post a plain message. */
static int send_next(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    int64_t len = op->n;
    char *buf;

    if (op->packed) {
        buf = (char *)op->packed;
    } else {
        rc = op_buffer(op, len, &buf);
        MG_CHECK(rc, fn_fail);
        if (!buf)
            goto fn_exit; /* the pool is at its cap: retry later */
        if (len > 0) {
            rc = op_pack(op, buf, 0, len);
            MG_CHECK(rc, fn_fail);
        }
    }
    rc = op_posted(op, send_post_piece(op, buf, len, 1, &op->inner), "posting a send");
fn_exit:
    return rc;
fn_fail:
    op_fail(op, rc, 0);
    goto fn_exit;
}

static void send_step(mgp2p_op_t *op)
{
    int flag = 1;
    if (op->pieces == 0 && !op->chunked && may_chunk(op->n)) {
        int rc = world_rank(op->comm, op->peer, &op->wpeer);
        if (rc != MPI_SUCCESS) {
            op_fail(op, rc, 0);
            return;
        }
        /* Under auto only a node lane's peer gets pieces: between two
           processes of one node they skip MPI, and elsewhere pieces by MPI
           measured little faster than one message (doc/performance.md). */
        mgp2p_lane_t *lane = mgp2p_lane_tx(op->wpeer);
        if (lane || mgdev_state.settings.p2p_protocol == MGDEV_P2P_CHUNKED) {
            op->chunked = 1;
            op->seq = send_seq[op->wpeer];
            send_seq[op->wpeer] = (op->seq + 1) % seq_limit;
        }
        /* Offer the node lane: its answer's receive first. */
        if ((op->lane = lane)) {
            rc = PMPI_Irecv(&op->lane_reply, 1, MPI_INT, op->wpeer, op->seq, ctrl, &op->lane_req);
            if (rc != MPI_SUCCESS) {
                op_fail_mpi(op, rc, "posting the receive of a node lane answer");
                return;
            }
            op->lane_state = MGP2P_LANE_OFFERED;
        }
    }
    if (op->chunked) {
        send_pipe(op);
        return;
    }
    if (op->state == MGP2P_OP_NEXT)
        send_next(op);
    if (op->state != MGP2P_OP_INFLIGHT)
        return;
    /* A buffered piece is complete once PMPI_Bsend returned. */
    if (op->inner != MPI_REQUEST_NULL) {
        int rc = PMPI_Test(&op->inner, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            op_fail_mpi(op, rc, "a send");
            return;
        }
    }
    if (!flag)
        return;
    op->done = op->n; /* a plain message is one piece */
    op->state = MGP2P_OP_DONE;
    op_unstage(op);
}

static char dummy[1]; /* buffer of empty pieces */

/* Post the receive of a message's first (or only) piece. */
static int recv_next(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    int64_t chunk = (int64_t)mgdev_stage_chunk();
    int64_t len = op->n;
    char *buf = dummy;

    /* A host receive lands in bytes too, in host memory of its own, and is
       copied (dense layout) or unpacked by MPI (host_unpack) once the whole
       message is there.  Receiving in place, in the caller's datatype, would
       save that copy, but the header of a first piece in the caller's buffer
       can be overwritten before it is read by another receive pending on the
       same buffer (osu_bw's window does that; the pieces of such a message
       then never found a receive and both sides hung), and MPICH 4.0.2
       (ch4:ucx) fails some typed receives of bytes, e.g. MPI_ERR_TRUNCATE for
       a padded struct of 13 in 24 bytes whatever the message's length.

       A receive takes the whole message (its buffer's pages are only
       touched by the bytes that arrive); a first piece of one chunk may still
       turn out to start a chunked message.  Under the chunked protocol a
       receive above one chunk lands in host memory of its own, outside the
       pool, so that the pieces of a chunked message find pool buffers while
       it holds it, and a plain message of any length still fits. */
    op->inplace = 0;
    if (op->host && op->dense && !mgp2p_host_overlap(op)) {
        /* A dense host receive takes the message in place: a plain one
           needs nothing more, a chunked one's header is read and its first
           piece moved down over it before anything else arrives.  Not
           while another active host receive overlaps the buffer: it could
           write over the header before it is read. */
        op->inplace = 1;
        host_inplace++;
        buf = host_run(op);
    } else if (op->host || (mgp2p_first_len() && len > chunk)) {
        /* A host receive's landing buffer takes a chunked message's whole
           payload after its header. */
        size_t want = (size_t)len + (op->host ? (size_t)HDR : 0);
        host_landed += op->host != NULL;
        rc = op_big(op, want, "a receive", len);
        MG_CHECK(rc, fn_fail);
        buf = op->big;
    } else if (len > 0) {
        rc = op_buffer(op, len, &buf);
        MG_CHECK(rc, fn_fail);
        if (!buf)
            goto fn_exit; /* the pool is at its cap: retry later */
    }
    if (op->matched)
        rc = PMPI_Imrecv_c(buf, (MPI_Count)len, MPI_BYTE, &op->message, &op->inner);
    else
        rc = PMPI_Irecv_c(buf, (MPI_Count)len, MPI_BYTE, op->peer, op->tag, op->comm, &op->inner);
    rc = op_posted(op, rc, "posting a receive");
fn_exit:
    return rc;
fn_fail:
    op_fail(op, rc, 0);
    goto fn_exit;
}

/* A piece of a host receive goes straight to its place in the landing
   buffer, after the first piece's header, for host_unpack at the end (never
   while draining a truncated message, whose pieces take pool buffers). */
static int piece_in_place(const mgp2p_op_t *op)
{
    return op->host && !op->discard;
}

/* Where payload byte 0 of a host receive goes: the caller's buffer when it
   took the message in place, else after the header in the landing buffer. */
static char *host_payload(mgp2p_op_t *op)
{
    return op->inplace ? host_run(op) : op->big + HDR;
}

static char *piece_ptr(mgp2p_op_t *op, const mgp2p_piece_t *p)
{
    return p->stage ? p->stage->ptr : host_payload(op) + p->first;
}

/* Post the receives of a chunked message's next pieces, up to
   MPIGPU_P2P_DEPTH in flight; own: the operation's buffer is free to take. */
static int recv_pipe_post(mgp2p_op_t *op, int own)
{
    int rc = MPI_SUCCESS;
    int64_t chunk = (int64_t)mgdev_stage_chunk();
    while (op->posted < op->total && op->npipe < mgdev_state.settings.p2p_depth) {
        mgp2p_piece_t *p = &op->pipe[op->npipe];
        int64_t len = op->total - op->posted;
        if (len > chunk && op->lane_state != MGP2P_LANE_REST)
            len = chunk;
        *p = (mgp2p_piece_t){.req = MPI_REQUEST_NULL, .first = op->posted, .len = len};
        if (!piece_in_place(op)) {
            rc = pipe_buffer(op, len, own, &p->stage);
            if (rc != MPI_SUCCESS || !p->stage)
                break;
        }
        if (++op->npipe > pipe_high)
            pipe_high = op->npipe;
        rc = PMPI_Irecv_c(piece_ptr(op, p), (MPI_Count)len, MPI_BYTE, op->wpeer, op->seq, shadow,
                          &p->req);
        if (rc != MPI_SUCCESS) {
            op_fail_mpi(op, rc, "posting a receive");
            return rc;
        }
        op->posted += len;
        op->pieces++;
    }
    if (rc != MPI_SUCCESS)
        op_fail(op, rc, 0);
    return rc;
}

/* Test the receives of pieces not yet arrived, oldest first, up to the first
   still pending: it records arrivals, and it is what makes MPI move the
   pieces while the worker unpacks an older one. */
static int recv_pipe_poll(mgp2p_op_t *op)
{
    for (int i = 0; i < op->npipe; i++) {
        mgp2p_piece_t *p = &op->pipe[i];
        int flag = 0;
        MPI_Status st;
        MPI_Count got = 0;
        if (p->state != MGP2P_PIECE_FLIGHT || p->arrived)
            continue;
        int rc = PMPI_Test(&p->req, &flag, &st);
        if (rc != MPI_SUCCESS) {
            op_fail_mpi(op, rc, "a receive");
            return rc;
        }
        if (!flag)
            break;
        PMPI_Get_count_c(&st, MPI_BYTE, &got);
        p->got = got;
        p->arrived = 1;
    }
    return MPI_SUCCESS;
}

/* A chunked receive ends once its whole payload arrived: a host receive
   copies or unpacks its landing buffer into the caller's buffer first. */
static void recv_end(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    if (op->done >= op->total && op->host && !op->inplace &&
        (rc = host_unpack(op, op->big + HDR, op->total)))
        op_fail(op, rc, 0);
    else
        pipe_end(op, op->total);
}

/* A chunked receive through the node lane: unpack (or, for a host receive,
   copy to their place in the landing buffer) the ring's head entries while
   they belong to this message, freeing each slot once done.  The head may be
   another message's of the same sender: its own operation takes it. */
static void recv_lane(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    int64_t seq, first, len;
    char *src;
    while (op->done < op->total && (src = mgp2p_lane_peek(op->lane, &seq, &first, &len)) &&
           seq == op->seq) {
        if (len < 0)
            MG_FAIL(rc, fn_fail, MPI_ERR_OTHER,
                    "mpigpu: %s: the sender of a message of %lld bytes failed after %lld bytes "
                    "(its own error says why)",
                    op->fn, (long long)op->total, (long long)op->done);
        if (first != op->done || len == 0 || len > op->total - op->done)
            MG_FAIL(rc, fn_fail, MPI_ERR_OTHER,
                    "mpigpu: %s: a node lane piece of bytes [%lld, +%lld) where byte %lld of "
                    "%lld was expected (both sides must run the same mpigpu)",
                    op->fn, (long long)first, (long long)len, (long long)op->done,
                    (long long)op->total);
        if (op->host)
            memcpy(host_payload(op) + first, src, (size_t)len);
        else if ((rc = op_unpack(op, src, first, len)) != MPI_SUCCESS)
            goto fn_fail;
        mgp2p_lane_consume(op->lane);
        op->done += len;
        lane_received++;
    }
    recv_end(op);
    return;
fn_fail:
    op_fail(op, rc, 0);
}

/* A chunked receive: unpack the pieces that arrived, oldest first (on the
   worker while later pieces are in flight, so that MPI keeps moving them),
   each freeing a buffer for the receive of a later piece. */
static void recv_pipe(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS, queued = 0;
    if (op->lane_state == MGP2P_LANE_ON) {
        recv_lane(op);
        return;
    }
    if (recv_pipe_post(op, 1) != MPI_SUCCESS)
        return;
    while (op->npipe > 0) {
        mgp2p_piece_t *p = &op->pipe[0];
        if (recv_pipe_poll(op) != MPI_SUCCESS)
            return;
        if (p->state == MGP2P_PIECE_UNPACKING) {
            if (!mgp2p_job_done(&op->job))
                break;
            rc = mgp2p_job_end(&op->job);
            MG_CHECK(rc, fn_fail);
            pipe_retire(op);
            if (recv_pipe_post(op, 1) != MPI_SUCCESS)
                return;
            continue;
        }
        if (!p->arrived)
            break;
        if (p->got != p->len)
            MG_FAIL(rc, fn_fail, MPI_ERR_OTHER,
                    "mpigpu: %s: a piece of a chunked message has %lld bytes where %lld were "
                    "expected (both sides must run the same mpigpu protocol)",
                    op->fn, (long long)p->got, (long long)p->len);
        if (!op->discard && !piece_in_place(op)) {
            rc = piece_work(op, piece_ptr(op, p), p->first, p->len, &queued);
            MG_CHECK(rc, fn_fail);
            if (queued) {
                p->state = MGP2P_PIECE_UNPACKING;
                continue; /* poll the later pieces */
            }
        }
        pipe_retire(op);
        if (recv_pipe_post(op, 1) != MPI_SUCCESS)
            return;
    }
    if (op->done >= op->total && op->discard) {
        op_fail(op, MPI_ERR_TRUNCATE, 0);
        return;
    }
    recv_end(op);
    return;
fn_fail:
    op_fail(op, rc, 0);
}

/* Whether the first piece at buf starts with the header of a chunked
   message; *h is it then. */
static int header_read(const char *buf, p2p_header_t *h)
{
    memcpy(h, buf, sizeof(*h));
    return h->magic == P2P_MAGIC && h->nonce == job_nonce;
}

int64_t mgp2p_first_total(const char *buf, int64_t len)
{
    p2p_header_t h;
    int64_t f = mgp2p_first_len();
    if (f && len == f && header_read(buf, &h))
        return (int64_t)h.total;
    return len;
}

/* The first (or only) piece arrived with status st: learn the protocol from
   it, and unpack it. */
static void recv_complete_at(mgp2p_op_t *op, MPI_Status *st, char *buf)
{
    int rc = MPI_SUCCESS;
    int64_t f = mgp2p_first_len(), off = 0;
    MPI_Count len = 0;
    p2p_header_t h;

    PMPI_Get_count_c(st, MPI_BYTE, &len);
    op->source = st->MPI_SOURCE;
    op->rtag = st->MPI_TAG;
    op->total = len;
    if (f && len == f && header_read(buf, &h)) {
        op->chunked = 1;
        op->total = (int64_t)h.total;
        op->seq = (int)h.seq;
        off = HDR;
        len -= HDR;
        /* In place: the payload down over the header, before the next
           pieces (which follow it) can arrive. */
        if (op->inplace && h.total <= (uint64_t)op->n)
            memmove(buf, buf + HDR, (size_t)len);
        rc = world_rank(op->comm, op->source, &op->wpeer);
        MG_CHECK(rc, fn_fail);
        if (op->total > op->n) {
            /* Drain the pieces, so that they match nothing else. */
            op->discard = 1;
            mgerr_set(MPI_ERR_TRUNCATE,
                      "mpigpu: %s: message of %lld bytes is longer than the receive buffer "
                      "(%lld bytes of the datatype)",
                      op->fn, (long long)op->total, (long long)op->n);
        }
        /* Answer a lane offer: yes when the lane opens here and the message
           fits (a truncated one is drained by MPI); a host receive asks for
           the rest as one message under MPIGPU_P2P_HOST_RECV=message. */
        if (h.flags & P2P_OFFER_LANE) {
            int rest = op->host && !op->discard &&
                       mgdev_state.settings.p2p_host_recv == MGDEV_HOST_RECV_MESSAGE;
            mgp2p_lane_t *l = op->discard || rest ? NULL : mgp2p_lane_rx(op->wpeer, (long)h.pid);
            MPI_Request r = MPI_REQUEST_NULL;
            rc = PMPI_Isend(l      ? &lane_yes
                            : rest ? &lane_rest
                                   : &lane_no,
                            1, MPI_INT, op->wpeer, op->seq, ctrl, &r);
            if (rc != MPI_SUCCESS) {
                op_fail_mpi(op, rc, "answering a node lane offer");
                return;
            }
            PMPI_Request_free(&r);
            if (l) {
                op->lane = l;
                op->lane_state = MGP2P_LANE_ON;
            } else if (rest) {
                op->lane_state = MGP2P_LANE_REST;
                rest_received++;
            }
        }
        /* The next pieces' receives first, so that they arrive while this
           one unpacks (its buffer is not theirs to take yet). */
        op->posted = len;
        if (op->lane_state != MGP2P_LANE_ON && recv_pipe_post(op, 0) != MPI_SUCCESS)
            return;
    }
    if (op->host && !op->inplace && !op->chunked && len > 0) {
        rc = host_unpack(op, buf, len);
        MG_CHECK(rc, fn_fail);
    } else if (!op->host && !op->discard && len > 0) {
        rc = op_unpack(op, buf + off, 0, len);
        MG_CHECK(rc, fn_fail);
    }
    op->done = len;
    op->state = MGP2P_OP_NEXT; /* chunked: recv_pipe takes over */
    if (!op->chunked) {
        op->state = MGP2P_OP_DONE;
        op_unstage(op);
    }
    return;
fn_fail:
    op_fail(op, rc, 0);
}

static void recv_complete(mgp2p_op_t *op, MPI_Status *st)
{
    recv_complete_at(op, st,
                     op->inplace ? host_run(op)
                     : op->big   ? op->big
                     : op->stage ? op->stage->ptr
                                 : dummy);
}

/* The receive takes e, a message that a probe received early (early.c):
   as if its first piece had just arrived. */
static void recv_early(mgp2p_op_t *op, mgp2p_early_t *e)
{
    MPI_Status st = {.MPI_SOURCE = e->source, .MPI_TAG = e->tag, .MPI_ERROR = MPI_SUCCESS};
    PMPI_Status_set_elements_x(&st, MPI_BYTE, (MPI_Count)e->len);
    op->pieces = 1;
    op->source = e->source;
    op->rtag = e->tag;
    op->inplace = 0;
    if (e->total == e->len && e->len > op->n) {
        mgerr_set(MPI_ERR_TRUNCATE,
                  "mpigpu: %s: message of %lld bytes is longer than the receive buffer (%lld "
                  "bytes of the datatype)",
                  op->fn, (long long)e->len, (long long)op->n);
        op_fail(op, MPI_ERR_TRUNCATE, 0);
    } else if (op->host && e->total != e->len) {
        /* A host receive's pieces land after the header in a buffer of its
           capacity (recv_next); a truncated message needs only the header. */
        size_t want = (size_t)op->n + (size_t)HDR;
        if (op_big(op, want, "a receive", op->n) != MPI_SUCCESS) {
            op_fail(op, MPI_ERR_NO_MEM, 0);
        } else {
            memcpy(op->big, e->buf, (size_t)e->len < want ? (size_t)e->len : want);
            recv_complete(op, &st);
        }
    } else {
        recv_complete_at(op, &st, e->buf);
    }
    mgp2p_early_free(e);
}

static void recv_step(mgp2p_op_t *op)
{
    int flag = 0;
    MPI_Status st;
    if (op->chunked) {
        recv_pipe(op);
        return;
    }
    if (op->state == MGP2P_OP_NEXT && op->pieces == 0) {
        /* A message a probe took early comes first (early.c). */
        mgp2p_early_t *e =
            mgp2p_early_take(op->peer, op->tag, op->comm, op->matched ? &op->message : NULL);
        if (e) {
            if (op->matched)
                op->message = MPI_MESSAGE_NULL;
            recv_early(op, e);
            return;
        }
    }
    if (op->state == MGP2P_OP_NEXT)
        recv_next(op);
    if (op->state != MGP2P_OP_INFLIGHT)
        return;
    int rc = PMPI_Test(&op->inner, &flag, &st);
    if (rc != MPI_SUCCESS) {
        if (op->pieces == 1) {
            op->source = st.MPI_SOURCE;
            op->rtag = st.MPI_TAG;
        }
        op_fail_mpi(op, rc, "a receive");
        return;
    }
    if (flag)
        recv_complete(op, &st);
}

int mgp2p_op_step(mgp2p_op_t *op)
{
    if (op->state != MGP2P_OP_DONE) {
        if (op->kind == MGP2P_OP_SEND)
            send_step(op);
        else
            recv_step(op);
    }
    return op->err;
}

void mgp2p_op_cancel(mgp2p_op_t *op)
{
    MPI_Status st;
    int cancelled = 0;
    /* Only a receive that has not matched yet can be taken back. */
    if (op->kind != MGP2P_OP_RECV || op->matched || op->state != MGP2P_OP_INFLIGHT ||
        op->pieces != 1)
        return;
    PMPI_Cancel(&op->inner);
    if (PMPI_Wait(&op->inner, &st) != MPI_SUCCESS)
        return;
    PMPI_Test_cancelled(&st, &cancelled);
    if (!cancelled) {
        recv_complete(op, &st);
        return;
    }
    op->cancelled = 1;
    op->state = MGP2P_OP_DONE;
    op_unstage(op);
}

/* The blocking call of a message below one chunk, whose bytes need no
   progress from anyone: one PMPI call on the packed bytes. */
static int send_blocking(mgp2p_op_t *op, char *buf)
{
    int n = op->count;
    switch (op->mode) {
    case MGP2P_MODE_SYNC:
        return PMPI_Ssend(buf, n, op->twin, op->peer, op->tag, op->comm);
    case MGP2P_MODE_READY:
        return PMPI_Rsend(buf, n, op->twin, op->peer, op->tag, op->comm);
    case MGP2P_MODE_BUFFERED:
        return PMPI_Bsend(buf, n, op->twin, op->peer, op->tag, op->comm);
    default:
        return PMPI_Send(buf, n, op->twin, op->peer, op->tag, op->comm);
    }
}

static void recv_blocking(mgp2p_op_t *op, char *buf)
{
    MPI_Status st = {.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG};
    MPI_Count len = 0;
    int rc = op->matched ? PMPI_Mrecv(buf, (int)op->n, MPI_BYTE, &op->message, &st)
                         : PMPI_Recv(buf, (int)op->n, MPI_BYTE, op->peer, op->tag, op->comm, &st);
    op->source = st.MPI_SOURCE;
    op->rtag = st.MPI_TAG;
    if (rc != MPI_SUCCESS) {
        op_fail_mpi(op, rc, "a receive");
        return;
    }
    PMPI_Get_count_c(&st, MPI_BYTE, &len);
    op->total = len;
    if (len > 0) {
        rc = op_unpack(op, buf, 0, len);
        if (rc != MPI_SUCCESS) {
            op_fail(op, rc, 0);
            return;
        }
    }
    op->done = len;
}

int mgp2p_op_blocking(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    mgdev_stage_t *s = NULL;

    /* Not for a message that may go in pieces (a receive: that may be one),
       nor for a receive while probes hold messages. */
    int64_t f = mgp2p_first_len();
    if (op->n >= (int64_t)mgdev_stage_chunk() || op->packed ||
        (op->kind == MGP2P_OP_RECV && ((f && op->n >= f) || mgp2p_early_any())) ||
        (op->kind == MGP2P_OP_SEND && may_chunk(op->n)))
        return 0;
    /* With another device operation active, a blocking PMPI call could wait
       for a message that only this process's progress of it sends. */
    mgp2p_lock();
    if (!mgp2p_progress_busy())
        rc = mgdev_stage_get((size_t)op->n, &s);
    mgp2p_unlock();
    if (rc != MPI_SUCCESS) {
        op_fail(op, rc, 0);
        return 1;
    }
    if (!s)
        return 0;
    if (op->kind == MGP2P_OP_SEND) {
        rc = op_pack(op, s->ptr, 0, op->n);
        if (rc != MPI_SUCCESS)
            op_fail(op, rc, 0);
        else if ((rc = send_blocking(op, s->ptr)) != MPI_SUCCESS)
            op_fail_mpi(op, rc, "a send");
        else
            op->done = op->n;
    } else {
        recv_blocking(op, s->ptr);
    }
    mgp2p_lock();
    mgdev_stage_put(s);
    mgp2p_unlock();
    op->state = MGP2P_OP_DONE;
    return 1;
}
