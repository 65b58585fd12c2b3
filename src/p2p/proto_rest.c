/*
 * The rest protocol: a chunked message offered the node lane by its sender
 * and taken by a host receive under MPIGPU_P2P_HOST_RECV=message, which
 * answers "rest".  After the first piece the sender packs the rest whole
 * into one buffer and sends it as one MPI message on the shadow communicator
 * (sequence number as tag); the receiver has it land in place, after the
 * first piece's payload.  It takes over the chunked protocol's state
 * (op->u.ck) once the answer came.
 */
#include "config.h"

#include "mgerr.h"
#include "p2p_impl.h"

/* Once the first piece went: the rest packed whole into a buffer of its own
   (a pool buffer, else op's own host memory), then posted. */
static void send_rest(mgp2p_op_t *op)
{
    mgp2p_chunked_state_t *ck = &op->u.ck;
    int rc = MPI_SUCCESS;
    int64_t len = op->n - ck->posted, chunk = (int64_t)mgdev_stage_chunk();
    mgp2p_piece_t *p = &ck->pipe[0];

    *p = (mgp2p_piece_t){.req = MPI_REQUEST_NULL, .first = ck->posted, .len = len};
    if (!op->packed) {
        /* The first piece's buffer, now op's own, is too short. */
        mgdev_stage_put(op->stage);
        op->stage = NULL;
        rc = len <= chunk ? mgdev_stage_get((size_t)chunk, &p->stage)
                          : mgdev_stage_get_big((size_t)len, &p->stage);
        MG_CHECK(rc, fn_fail);
        if (!p->stage)
            rc = mgp2p_op_big(op, (size_t)len, "a message", op->n);
        MG_CHECK(rc, fn_fail);
        rc = mgp2p_op_pack(op, p->stage ? p->stage->ptr : op->big, p->first, len);
        MG_CHECK(rc, fn_fail);
    }
    ck->npipe = 1;
    ck->posted = op->n;
    if (mgp2p_send_piece_post(op, p) == MPI_SUCCESS)
        mgp2p_engine.stats.rest_sent++;
    return;
fn_fail:
    mgp2p_op_fail(op, rc, 0);
}

static void rest_send_progress(mgp2p_op_t *op)
{
    if (mgp2p_send_settle(op))
        return;
    if (op->u.ck.npipe == 0 && op->u.ck.posted < op->n)
        send_rest(op);
}

const mgp2p_proto_t mgp2p_proto_rest_send = {
    .name = "rest",
    .id = MGP2P_PROTO_REST,
    .progress = rest_send_progress,
    .abort = mgp2p_pipe_drop,
};

/* The receive: the chunked protocol's, with one piece of the whole rest
   (op->u.ck.piece_max), in place. */
const mgp2p_proto_t mgp2p_proto_rest_recv = {
    .name = "rest",
    .id = MGP2P_PROTO_REST,
    .progress = mgp2p_recv_pipe,
    .abort = mgp2p_pipe_drop,
};
