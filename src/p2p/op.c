/*
 * Building an operation from a call's arguments: the call's own fields, the
 * device buffer's allocation and pack engine (a host receive's buffer:
 * host_recv.c).  The protocol is chosen later, at the first step.
 */
#include "config.h"

#include "mgerr.h"
#include "p2p_impl.h"

void mgp2p_op_call(mgp2p_op_t *op, mgp2p_op_kind_t kind, const char *fn, int count, int peer,
                   int tag, MPI_Comm comm)
{
    op->kind = kind;
    op->fn = fn;
    op->comm = comm;
    op->peer = peer;
    op->tag = tag;
    op->count = count;
    op->source = MPI_ANY_SOURCE;
    op->rtag = MPI_ANY_TAG;
}

/* Classify buf for op and check that every byte the datatype touches lies in
   one live device allocation. */
int mgp2p_op_init(mgp2p_op_t *op, mgp2p_op_kind_t kind, const char *fn, const void *buf, int count,
                  MPI_Datatype dt, int peer, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    mgdev_reg_entry_t e;
    size_t off = 0;

    mgp2p_op_call(op, kind, fn, count, peer, tag, comm);
    rc = mgdev_require_device(fn);
    MG_CHECK(rc, fn_fail);
    if (count < 0)
        MG_FAIL(rc, fn_fail, MPI_ERR_COUNT, "mpigpu: %s: negative count %d", fn, count);
    rc = mgdt_type_get(dt, &op->type);
    MG_CHECK(rc, fn_fail);
    mgpk_method_t m = mgdev_type_method(dt);
    op->pk_flags = MGPK_F_METHOD(m);
    op->hostm = m == MGPK_METHOD_HOST;
    op->n = count * op->type->size;
    if (op->n == 0 || peer == MPI_PROC_NULL)
        goto fn_exit;
    if (kind == MGP2P_OP_SEND) {
        rc = mgdt_type_twin(op->type, dt, &op->twin);
        MG_CHECK(rc, fn_fail);
    }
    int64_t lo, hi;
    mgp2p_type_span(op->type, count, &lo, &hi);
    const char *first = (const char *)buf + lo;
    if (!mgdev_reg_lookup(first, &e, &off) || (size_t)(hi - lo) > e.size - off)
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER,
                "mpigpu: %s: access [%p, %p) from device address %p is not inside one live "
                "device allocation; nothing was sent or received",
                fn, (const void *)first, (const void *)(first + (hi - lo)), buf);
    op->mem = e.mem;
    op->origin = (int64_t)off - lo;
    op->zc = e.host ? e.host + op->origin : NULL;
    rc = mgdev_ctx_get(e.context, &op->pk);
    MG_CHECK(rc, fn_fail);
    /* The auto table is loaded or measured here, at the engine's first
       operation, never inside a progress step under the engine's lock.
       Contiguous data never needs it (one transfer under every method), so a
       process that moves only contiguous data runs no calibration kernel. */
    if (m == MGPK_METHOD_AUTO && !mgpk_contig(op->type, count))
        rc = mgpk_calib_load(op->pk);
fn_exit:
fn_fail:
    return rc;
}

int mgp2p_op_trivial(const mgp2p_op_t *op)
{
    return op->n == 0 || op->peer == MPI_PROC_NULL;
}
