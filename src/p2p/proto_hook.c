/*
 * The protocol of operations that a layer above the engine defines
 * (MGP2P_OP_HOOK, p2p.h): the engine owns their request and their place in
 * the active list, and calls the layer's functions to start and advance
 * them.  Nothing goes on the wire here.
 */
#include "config.h"

#include "p2p_impl.h"

static int hook_start(mgp2p_op_t *op, const mgp2p_sel_t *sel)
{
    (void)sel;
    int rc = op->hook->start ? op->hook->start(op) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        mgp2p_op_fail(op, rc, 0);
    return rc;
}

static void hook_progress(mgp2p_op_t *op)
{
    int done = 0;
    int rc = op->hook->step(op, &done);
    if (rc != MPI_SUCCESS)
        mgp2p_op_fail(op, rc, 0);
    else if (done)
        op->state = MGP2P_OP_DONE;
}

static void hook_abort(mgp2p_op_t *op)
{
    if (op->hook->abort)
        op->hook->abort(op);
}

const mgp2p_proto_t mgp2p_proto_hook = {
    .name = "hook",
    .id = MGP2P_PROTO_HOOK,
    .start = hook_start,
    .progress = hook_progress,
    .abort = hook_abort,
};
