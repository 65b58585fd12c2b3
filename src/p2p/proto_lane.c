/*
 * The lane protocol: a chunked message between two processes of one node
 * whose receiver accepted the node lane (lane.c) offered in the first
 * piece's header.  The pieces after the first skip MPI: the sender packs
 * each straight into a free slot of the ring in shared memory (DMA into the
 * registered slot on a device) and publishes it; the receiver unpacks the
 * ring's head entries and frees their slots.  It takes over the chunked
 * protocol's state (op->u.ck) once the answer came.
 */
#include "config.h"

#include <string.h>

#include "mgerr.h"
#include "p2p_impl.h"

/* Fill slots while the ring has free ones; the receiver frees them as it
   unpacks. */
static void lane_send_progress(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    int rc = MPI_SUCCESS;
    if (mgp2p_send_settle(op))
        return;
    int64_t piece = (int64_t)mgp2p_lane_piece(ck->lane);
    char *slot;
    while (ck->posted < op->n && (slot = mgp2p_lane_slot(ck->lane))) {
        int64_t len = op->n - ck->posted;
        if (len > piece)
            len = piece;
        if (op->packed)
            memcpy(slot, op->packed + ck->posted, (size_t)len);
        else if ((rc = mgp2p_op_pack(op, slot, ck->posted, len)) != MPI_SUCCESS)
            break;
        mgp2p_lane_publish(ck->lane, ck->seq, ck->posted, len);
        ck->posted += len;
        op->done += len;
        mgp2p_engine.stats.lane_sent++;
    }
    if (rc != MPI_SUCCESS) {
        mgp2p_op_fail(op, rc, 0);
    } else if (op->done >= op->n) {
        op->state = MGP2P_OP_DONE;
        mgp2p_op_unstage(op);
    }
}

/* The receiver fails too: a slot that says so, when one is free (else it
   finds out from the sender's own error). */
static void lane_send_abort(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    mgp2p_pipe_drop(op);
    if (ck->lane && ck->posted < op->n && mgp2p_lane_slot(ck->lane))
        mgp2p_lane_publish(ck->lane, ck->seq, ck->posted, -1);
    ck->lane = NULL;
}

/* Unpack (or, for a host receive, copy to their place in the landing buffer)
   the ring's head entries while they belong to this message, freeing each
   slot once done.  The head may be another message's of the same sender: its
   own operation takes it. */
static void lane_recv_progress(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    int rc = MPI_SUCCESS;
    int64_t seq, first, len;
    char *src;
    while (op->done < op->total && (src = mgp2p_lane_peek(ck->lane, &seq, &first, &len)) &&
           seq == ck->seq) {
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
            memcpy(mgp2p_host_payload(op) + first, src, (size_t)len);
        else if ((rc = mgp2p_op_unpack(op, src, first, len)) != MPI_SUCCESS)
            goto fn_fail;
        mgp2p_lane_consume(ck->lane);
        op->done += len;
        mgp2p_engine.stats.lane_received++;
    }
    mgp2p_recv_end(op);
    return;
fn_fail:
    mgp2p_op_fail(op, rc, 0);
}

/* The rest of the message still comes through the ring: drop it there, so
   that later messages find the ring moving. */
static void lane_recv_abort(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    mgp2p_pipe_drop(op);
    if (ck->lane)
        mgp2p_lane_drop(ck->lane, ck->seq, op->total - op->done);
    ck->lane = NULL;
}

const mgp2p_proto_t mgp2p_proto_lane_send = {
    .name = "lane",
    .id = MGP2P_PROTO_LANE,
    .progress = lane_send_progress,
    .abort = lane_send_abort,
};

const mgp2p_proto_t mgp2p_proto_lane_recv = {
    .name = "lane",
    .id = MGP2P_PROTO_LANE,
    .progress = lane_recv_progress,
    .abort = lane_recv_abort,
};
