/*
 * The chunked protocol: a message in pieces, so that it never needs more
 * than a few pool buffers.  The first piece is exactly mgp2p_first_len()
 * bytes on the user's communicator and tag and starts with a header (magic,
 * the job's number, total length, sequence number, lane offer); the others go
 * on a shadow duplicate of MPI_COMM_WORLD, addressed by world rank, with the
 * sequence number as tag.  Sequence numbers count per (sender, receiver)
 * pair, so pieces of concurrent messages never match each other.  A receiver
 * recognizes such a first piece by its length, magic and number.
 *
 * Up to MPIGPU_P2P_DEPTH pieces of one message are in flight, each in a pool
 * buffer of its own: the sender packs piece k + 1 (on the piece worker) while
 * MPI moves piece k, and the receiver has the next pieces' receives posted
 * while it unpacks one.  MPI matches the pieces of one message in the order
 * they were posted (same sender, communicator and tag), so each lands at its
 * own offset.
 *
 * When the header offers the node lane, the receiver's answer hands both
 * sides over to a variant after the first piece: the lane protocol
 * (proto_lane.c) or, for a host receive under MPIGPU_P2P_HOST_RECV=message,
 * the rest protocol (proto_rest.c).  The variants share op->u.ck.
 */
#include "config.h"

#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "mgerr.h"
#include "p2p_impl.h"

/* Answers a receiver sends; PMPI_Isend reads them after the call returns. */
static const int answer_no = MGP2P_ANSWER_NO, answer_lane = MGP2P_ANSWER_LANE,
                 answer_rest = MGP2P_ANSWER_REST;

int mgp2p_header_read(const char *buf, mgp2p_header_t *h)
{
    memcpy(h, buf, sizeof(*h));
    return h->magic == MGP2P_MAGIC && h->nonce == mgp2p_engine.nonce;
}

int64_t mgp2p_first_total(const char *buf, int64_t len)
{
    mgp2p_header_t h;
    int64_t f = mgp2p_first_len();
    if (f && len == f && mgp2p_header_read(buf, &h))
        return (int64_t)h.total;
    return len;
}

/* ---- pieces, both sides ---- */

/* A pool buffer for a piece of len bytes: the operation's own (from an
   earlier piece, or parked by a persistent request) when own allows, else
   one from the pool, waiting for it when no piece is in flight (the
   operation's first claim) and only one the pool can spare otherwise. */
static int pipe_buffer(mgp2p_op_t *op, int64_t len, int own, mgdev_stage_t **s)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
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
    size_t want = ck->posted == 0 ? (size_t)len : mgdev_stage_chunk();
    if (ck->npipe == 0)
        return mgdev_stage_get(want, s);
    return mgdev_stage_get_extra(want, s);
}

/* The oldest piece is complete: its buffer becomes the operation's own for
   the next piece, or goes back to the pool. */
static void pipe_retire(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    mgp2p_piece_t *p = &ck->pipe[0];
    op->done += p->len;
    if (p->stage && !op->stage)
        op->stage = p->stage;
    else
        mgdev_stage_put(p->stage);
    ck->npipe--;
    memmove(ck->pipe, ck->pipe + 1, (size_t)ck->npipe * sizeof(*p));
}

/* The message is complete once every piece was retired. */
static int pipe_end(mgp2p_op_t *op, int64_t total)
{
    if (op->done < total)
        return 0;
    op->state = MGP2P_OP_DONE;
    mgp2p_op_unstage(op);
    return 1;
}

static void pipe_grew(const mgp2p_op_t *op)
{
    if (op->u.ck.npipe > mgp2p_engine.stats.pipe_high)
        mgp2p_engine.stats.pipe_high = op->u.ck.npipe;
}

/* A receive is cancelled before its buffer goes back to the pool; a send
   cannot be taken back once matched, so its request is freed and its
   buffer, which MPI may still read, is never reused (it stays counted
   against the pool's cap). */
void mgp2p_pipe_drop(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    if (atomic_load_explicit(&ck->job.state, memory_order_acquire) != MGP2P_JOB_IDLE)
        mgp2p_job_end(&ck->job); /* the worker must be done with its buffer */
    for (int i = 0; i < ck->npipe; i++) {
        mgp2p_piece_t *p = &ck->pipe[i];
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
    ck->npipe = 0;
    if (ck->lane_req != MPI_REQUEST_NULL) {
        PMPI_Cancel(&ck->lane_req);
        PMPI_Wait(&ck->lane_req, MPI_STATUS_IGNORE);
    }
}

/* The worker's job: the pack (send) or unpack (receive) of op's piece. */
static int piece_run(mgp2p_job_t *job)
{
    mgp2p_op_t *op = (mgp2p_op_t *)(void *)((char *)job - offsetof(mgp2p_op_t, u.ck.job));
    mgp2p_chunked_state_t *ck = &op->u.ck;
    if (op->kind == MGP2P_OP_SEND)
        return mgp2p_op_pack(op, ck->jhost, ck->jfirst, ck->jlen);
    return mgp2p_op_unpack(op, ck->jhost, ck->jfirst, ck->jlen);
}

/* Pack or unpack [first, first + len) of the message at host: on the worker
   when another piece is in flight, so that MPI keeps moving it (*queued =
   1; the caller polls ck->job), else here. */
static int piece_work(mgp2p_op_t *op, char *host, int64_t first, int64_t len, int *queued)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    int busy = 0;
    *queued = 0;
    for (int i = 0; i < ck->npipe; i++)
        busy += ck->pipe[i].state == MGP2P_PIECE_FLIGHT && ck->pipe[i].req != MPI_REQUEST_NULL &&
                !ck->pipe[i].arrived;
    if (busy && mgdev_state.settings.p2p_depth > 1) {
        ck->jhost = host;
        ck->jfirst = first;
        ck->jlen = len;
        ck->job.run = piece_run;
        if (mgp2p_job_submit(&ck->job) == MPI_SUCCESS) {
            *queued = 1;
            return MPI_SUCCESS;
        }
    }
    return op->kind == MGP2P_OP_SEND ? mgp2p_op_pack(op, host, first, len)
                                     : mgp2p_op_unpack(op, host, first, len);
}

/* ---- the send ---- */

int mgp2p_send_piece_post(mgp2p_op_t *op, mgp2p_piece_t *p)
{
    int first = p->first == 0; /* the piece with the header */
    int64_t hdr = first ? MGP2P_HDR : 0;
    /* Without a pool buffer: the first piece, or a rest packed by the rest
       protocol, in op's own host memory; a later piece straight from the
       caller's packed bytes. */
    char *buf = p->stage               ? p->stage->ptr
                : first || !op->packed ? op->big
                                       : (char *)op->packed + p->first;
    int rc = mgp2p_send_post(op, buf, p->len + hdr, first, &p->req);
    p->state = MGP2P_PIECE_FLIGHT;
    if (rc != MPI_SUCCESS) {
        mgp2p_op_fail_mpi(op, rc, "posting a send");
        return rc;
    }
    op->pieces++;
    return MPI_SUCCESS;
}

int mgp2p_send_settle(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    while (ck->npipe > 0 && ck->pipe[0].state == MGP2P_PIECE_FLIGHT) {
        int flag = 1;
        if (ck->pipe[0].req != MPI_REQUEST_NULL) {
            int rc = PMPI_Test(&ck->pipe[0].req, &flag, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                mgp2p_op_fail_mpi(op, rc, "a send");
                return 1;
            }
        }
        if (!flag)
            break;
        pipe_retire(op);
    }
    if (pipe_end(op, op->n))
        return 1;
    if (ck->npipe > 0 && ck->pipe[ck->npipe - 1].state == MGP2P_PIECE_PACKING) {
        if (!mgp2p_job_done(&ck->job))
            return 1;
        int rc = mgp2p_job_end(&ck->job);
        if (rc != MPI_SUCCESS) {
            mgp2p_op_fail(op, rc, 0);
            return 1;
        }
        if (mgp2p_send_piece_post(op, &ck->pipe[ck->npipe - 1]) != MPI_SUCCESS)
            return 1;
    }
    return 0;
}

/* The receiver's answer to the lane offer: 1 once it came (op->proto is
   then the variant it chose), 0 while it has not, or when op failed. */
static int lane_answer(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    int flag = 0;
    int rc = PMPI_Test(&ck->lane_req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        mgp2p_op_fail_mpi(op, rc, "the answer to a node lane offer");
        return 0;
    }
    if (!flag)
        return 0;
    ck->offered = 0;
    if (ck->lane_reply == MGP2P_ANSWER_LANE)
        op->proto = &mgp2p_proto_lane_send;
    else if (ck->lane_reply == MGP2P_ANSWER_REST)
        op->proto = &mgp2p_proto_rest_send;
    return 1;
}

/* Under auto only a node lane's peer gets pieces: between two processes of
   one node they skip MPI, and elsewhere pieces by MPI measured little faster
   than one message (doc/performance.md). */
static int chunked_send_applies(const mgp2p_op_t *op, const mgp2p_sel_t *sel)
{
    (void)op;
    return sel->may_chunk && (sel->lane || mgdev_state.settings.p2p_protocol == MGDEV_P2P_CHUNKED);
}

/* A sequence number of its own, and the lane's offer: its answer's receive
   first. */
static int chunked_send_start(mgp2p_op_t *op, const mgp2p_sel_t *sel)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    ck->wpeer = sel->wpeer;
    ck->seq = mgp2p_engine.send_seq[ck->wpeer];
    mgp2p_engine.send_seq[ck->wpeer] = (ck->seq + 1) % mgp2p_engine.seq_limit;
    ck->lane_req = MPI_REQUEST_NULL;
    if (!(ck->lane = sel->lane))
        return MPI_SUCCESS;
    int rc = PMPI_Irecv(&ck->lane_reply, 1, MPI_INT, ck->wpeer, ck->seq, mgp2p_engine.ctrl,
                        &ck->lane_req);
    if (rc != MPI_SUCCESS) {
        mgp2p_op_fail_mpi(op, rc, "posting the receive of a node lane answer");
        return rc;
    }
    ck->offered = 1;
    return MPI_SUCCESS;
}

/* Retire the pieces whose sends completed, then pack and post pieces until
   MPIGPU_P2P_DEPTH are in flight or the pool has no buffer to spare; a piece
   packs on the worker while others are in flight, and is posted once packed
   (pieces are posted in order).  The first piece carries the header and goes
   on the user's communicator, in the call's mode; while the lane's offer
   waits for its answer, it goes alone. */
static void chunked_send_progress(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    int rc = MPI_SUCCESS, queued = 0;
    int64_t chunk = (int64_t)mgdev_stage_chunk(), flen = mgp2p_first_len();
    char *pbuf = NULL;

    if (mgp2p_send_settle(op))
        return;
    if (ck->offered && ck->posted > 0) {
        if (!lane_answer(op))
            return;
        if (op->proto != &mgp2p_proto_chunked_send) {
            op->proto->progress(op);
            return;
        }
    }
    while (op->state != MGP2P_OP_DONE && ck->posted < op->n &&
           ck->npipe < mgdev_state.settings.p2p_depth && (ck->posted == 0 || !ck->offered)) {
        int first = ck->posted == 0;
        int64_t hdr = first ? MGP2P_HDR : 0, len = op->n - ck->posted;
        mgp2p_piece_t *p = &ck->pipe[ck->npipe];
        if (len > (first ? flen - hdr : chunk))
            len = first ? flen - hdr : chunk;
        *p = (mgp2p_piece_t){.req = MPI_REQUEST_NULL, .first = ck->posted, .len = len};
        if (!op->packed || hdr) {
            rc = pipe_buffer(op, len + hdr, 1, &p->stage);
            MG_CHECK(rc, fn_fail);
            if (!p->stage && hdr) {
                /* The first piece goes now, in host memory of op's own when
                   the pool is at its cap (mgp2p_op_buffer says why). */
                rc = mgp2p_op_big(op, (size_t)flen, "a message", op->n);
                MG_CHECK(rc, fn_fail);
                pbuf = op->big;
            } else if (!p->stage) {
                break; /* the pool is at its cap: more after progress */
            }
        }
        if (p->stage)
            pbuf = p->stage->ptr;
        ck->npipe++;
        pipe_grew(op);
        ck->posted += len;
        if (hdr) {
            mgp2p_header_t h = {.magic = MGP2P_MAGIC,
                                .nonce = mgp2p_engine.nonce,
                                .total = (uint64_t)op->n,
                                .seq = (uint64_t)ck->seq,
                                .flags = ck->offered ? MGP2P_OFFER_LANE : 0,
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
        if (mgp2p_send_piece_post(op, p) != MPI_SUCCESS)
            return;
    }
    return;
fn_fail:
    mgp2p_op_fail(op, rc, 0);
}

const mgp2p_proto_t mgp2p_proto_chunked_send = {
    .name = "chunked",
    .id = MGP2P_PROTO_CHUNKED,
    .applies = chunked_send_applies,
    .start = chunked_send_start,
    .progress = chunked_send_progress,
    .abort = mgp2p_pipe_drop,
};

/* ---- the receive ---- */

/* A piece of a host receive goes straight to its place in the landing
   buffer, after the first piece's header, for the copy at the end (never
   while draining a truncated message, whose pieces take pool buffers). */
static int piece_in_place(const mgp2p_op_t *op)
{
    return op->host && !op->u.ck.discard;
}

static char *piece_ptr(mgp2p_op_t *op, const mgp2p_piece_t *p)
{
    return p->stage ? p->stage->ptr : mgp2p_host_payload(op) + p->first;
}

/* Post the receives of the next pieces, up to MPIGPU_P2P_DEPTH in flight;
   own: the operation's buffer is free to take. */
static int recv_pipe_post(mgp2p_op_t *op, int own)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    int rc = MPI_SUCCESS;
    while (ck->posted < op->total && ck->npipe < mgdev_state.settings.p2p_depth) {
        mgp2p_piece_t *p = &ck->pipe[ck->npipe];
        int64_t len = op->total - ck->posted;
        if (len > ck->piece_max)
            len = ck->piece_max;
        *p = (mgp2p_piece_t){.req = MPI_REQUEST_NULL, .first = ck->posted, .len = len};
        if (!piece_in_place(op)) {
            rc = pipe_buffer(op, len, own, &p->stage);
            if (rc != MPI_SUCCESS || !p->stage)
                break;
        }
        ck->npipe++;
        pipe_grew(op);
        rc = PMPI_Irecv_c(piece_ptr(op, p), (MPI_Count)len, MPI_BYTE, ck->wpeer, ck->seq,
                          mgp2p_engine.shadow, &p->req);
        if (rc != MPI_SUCCESS) {
            mgp2p_op_fail_mpi(op, rc, "posting a receive");
            return rc;
        }
        ck->posted += len;
        op->pieces++;
    }
    if (rc != MPI_SUCCESS)
        mgp2p_op_fail(op, rc, 0);
    return rc;
}

/* Test the receives of pieces not yet arrived, oldest first, up to the first
   still pending: it records arrivals, and it is what makes MPI move the
   pieces while the worker unpacks an older one. */
static int recv_pipe_poll(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    for (int i = 0; i < ck->npipe; i++) {
        mgp2p_piece_t *p = &ck->pipe[i];
        int flag = 0;
        MPI_Status st;
        MPI_Count got = 0;
        if (p->state != MGP2P_PIECE_FLIGHT || p->arrived)
            continue;
        int rc = PMPI_Test(&p->req, &flag, &st);
        if (rc != MPI_SUCCESS) {
            mgp2p_op_fail_mpi(op, rc, "a receive");
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

void mgp2p_recv_end(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    if (op->done >= op->total && op->host && !op->inplace &&
        (rc = mgp2p_host_land_end(op, op->big + MGP2P_HDR, op->total)))
        mgp2p_op_fail(op, rc, 0);
    else
        pipe_end(op, op->total);
}

/* Unpack the pieces that arrived, oldest first (on the worker while later
   pieces are in flight, so that MPI keeps moving them), each freeing a
   buffer for the receive of a later piece. */
void mgp2p_recv_pipe(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    int rc = MPI_SUCCESS, queued = 0;
    if (recv_pipe_post(op, 1) != MPI_SUCCESS)
        return;
    while (ck->npipe > 0) {
        mgp2p_piece_t *p = &ck->pipe[0];
        if (recv_pipe_poll(op) != MPI_SUCCESS)
            return;
        if (p->state == MGP2P_PIECE_UNPACKING) {
            if (!mgp2p_job_done(&ck->job))
                break;
            rc = mgp2p_job_end(&ck->job);
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
        if (!ck->discard && !piece_in_place(op)) {
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
    if (op->done >= op->total && ck->discard) {
        mgp2p_op_truncated(op, op->total, 0);
        return;
    }
    mgp2p_recv_end(op);
    return;
fn_fail:
    mgp2p_op_fail(op, rc, 0);
}

/* Answer a lane offer: yes when the lane opens here and the message fits (a
   truncated one is drained by MPI); a host receive asks for the rest as one
   message under MPIGPU_P2P_HOST_RECV=message.  The answer chooses op's
   protocol for the rest. */
static int recv_answer(mgp2p_op_t *op, const mgp2p_header_t *h)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    int rest =
        op->host && !ck->discard && mgdev_state.settings.p2p_host_recv == MGDEV_HOST_RECV_MESSAGE;
    mgp2p_lane_t *l = ck->discard || rest ? NULL : mgp2p_lane_rx(ck->wpeer, (long)h->pid);
    MPI_Request r = MPI_REQUEST_NULL;
    int rc = PMPI_Isend(l      ? &answer_lane
                        : rest ? &answer_rest
                               : &answer_no,
                        1, MPI_INT, ck->wpeer, ck->seq, mgp2p_engine.ctrl, &r);
    if (rc != MPI_SUCCESS) {
        mgp2p_op_fail_mpi(op, rc, "answering a node lane offer");
        return rc;
    }
    PMPI_Request_free(&r);
    if (l) {
        ck->lane = l;
        op->proto = &mgp2p_proto_lane_recv;
    } else if (rest) {
        ck->piece_max = INT64_MAX;
        op->proto = &mgp2p_proto_rest_recv;
        mgp2p_engine.stats.rest_received++;
    }
    return MPI_SUCCESS;
}

void mgp2p_chunked_recv_begin(mgp2p_op_t *op, const mgp2p_header_t *h, char *buf, int64_t len)
{
    int rc = mgp2p_proto_set(op, &mgp2p_proto_chunked_recv, NULL);
    mgp2p_chunked_state_t *ck = &op->u.ck;
    MG_CHECK(rc, fn_fail);
    ck->piece_max = (int64_t)mgdev_stage_chunk();
    ck->lane_req = MPI_REQUEST_NULL;
    op->total = (int64_t)h->total;
    ck->seq = (int)h->seq;
    len -= MGP2P_HDR;
    /* In place: the payload down over the header, before the next pieces
       (which follow it) can arrive. */
    if (op->inplace && h->total <= (uint64_t)op->n)
        memmove(buf, buf + MGP2P_HDR, (size_t)len);
    rc = mgp2p_world_rank(op->comm, op->source, &ck->wpeer);
    MG_CHECK(rc, fn_fail);
    /* Truncated: drain the pieces, so that they match nothing else; the
       operation fails once the last one came (mgp2p_recv_pipe). */
    if (op->total > op->n)
        ck->discard = 1;
    if ((h->flags & MGP2P_OFFER_LANE) && recv_answer(op, h) != MPI_SUCCESS)
        return;
    /* The next pieces' receives first, so that they arrive while this one
       unpacks (its buffer is not theirs to take yet). */
    ck->posted = len;
    if (op->proto != &mgp2p_proto_lane_recv && recv_pipe_post(op, 0) != MPI_SUCCESS)
        return;
    if (!op->host && !ck->discard && len > 0) {
        rc = mgp2p_op_unpack(op, buf + MGP2P_HDR, 0, len);
        MG_CHECK(rc, fn_fail);
    }
    op->done = len;
    op->state = MGP2P_OP_NEXT;
fn_exit:
    return;
fn_fail:
    mgp2p_op_fail(op, rc, 0);
    goto fn_exit;
}

const mgp2p_proto_t mgp2p_proto_chunked_recv = {
    .name = "chunked",
    .id = MGP2P_PROTO_CHUNKED,
    .progress = mgp2p_recv_pipe,
    .abort = mgp2p_pipe_drop,
};
