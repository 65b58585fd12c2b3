/*
 * Building an operation from a call's arguments: the call's own fields, the
 * device buffer's allocation and pack engine (a host receive's buffer:
 * host_recv.c).  The protocol is chosen later, at the first step.  Also
 * what the operation holds of the call until it is freed, and its error
 * message.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

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

int mgp2p_op_check(mgp2p_op_t *op, int count, MPI_Datatype dt, int64_t *lo, int64_t *hi)
{
    int rc = MPI_SUCCESS;
    const char *fn = op->fn;
    if (count < 0)
        MG_FAIL(rc, fn_fail, MPI_ERR_COUNT, "mpigpu: %s: negative count %d", fn, count);
    rc = mgdt_type_acquire(dt, &op->type); /* the operation's own reference */
    if (rc != MPI_SUCCESS) {
        rc = mgerr_prepend(rc, fn); /* not committed, or overflowing */
        goto fn_fail;
    }
    if (__builtin_mul_overflow((int64_t)count, op->type->size, &op->n))
        MG_FAIL(rc, fn_fail, MPI_ERR_COUNT,
                "mpigpu: %s: %d instances of %lld bytes overflow an int64; nothing was sent or "
                "received",
                fn, count, (long long)op->type->size);
    if (mgp2p_type_span(op->type, count, lo, hi) != 0)
        MG_FAIL(rc, fn_fail, MPI_ERR_TYPE,
                "mpigpu: %s: %d instances of a datatype of extent %lld and true bounds [%lld, "
                "%lld) span more bytes than an int64 holds; nothing was sent or received",
                fn, count, (long long)op->type->extent, (long long)op->type->true_lb,
                (long long)op->type->true_ub);
fn_fail:
    return rc;
}

/* Classify buf for op and check that every byte the datatype touches lies in
   one live device allocation. */
int mgp2p_op_init(mgp2p_op_t *op, mgp2p_op_kind_t kind, const char *fn, const void *buf, int count,
                  MPI_Datatype dt, int peer, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    mgdev_reg_entry_t e;
    size_t off = 0;

    int64_t lo, hi;
    uintptr_t first;
    size_t len;

    mgp2p_op_call(op, kind, fn, count, peer, tag, comm);
    op->buf = buf;
    rc = mgdev_require_device(fn);
    MG_CHECK(rc, fn_fail);
    rc = mgp2p_op_check(op, count, dt, &lo, &hi);
    MG_CHECK(rc, fn_fail);
    mgpk_method_t m = mgdev_type_method(dt);
    op->pk_flags = MGPK_F_METHOD(m);
    op->hostm = m == MGPK_METHOD_HOST;
    if (op->n == 0 || peer == MPI_PROC_NULL)
        goto fn_exit;
    if (kind == MGP2P_OP_SEND) {
        rc = mgdt_type_twin(op->type, dt, &op->twin);
        MG_CHECK(rc, fn_fail);
    }
    if (mgdt_span_addr(buf, lo, hi, &first, &len) != 0)
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER,
                "mpigpu: %s: the bytes [%lld, %lld) from %p wrap around the address space; "
                "nothing was sent or received",
                fn, (long long)lo, (long long)hi, buf);
    if (!mgdev_reg_lookup((const void *)first, &e, &off)) {
        char why[MGDEV_REG_WHY_LEN];
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER,
                "mpigpu: %s: access [%p, %p) from device address %p is not inside one live "
                "device allocation: %s; nothing was sent or received",
                fn, (const void *)first, (const void *)(first + len), buf,
                mgdev_reg_why((const void *)first, why, sizeof(why)));
    }
    if (len > e.size - off)
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER,
                "mpigpu: %s: access [%p, %p) from device address %p is not inside one live "
                "device allocation; nothing was sent or received",
                fn, (const void *)first, (const void *)(first + len), buf);
    /* Shared memory (MPIX_Gpu_malloc_shared): a send reads what the host
       stored; a receive makes the host's copies invalid before it lands.  A
       persistent operation does it again at every start (op_restart). */
    if (e.shared) {
        op->sh_off = off;
        op->sh_len = len;
        op->shared = e.shared;
        rc = mgdev_shared_device_use(e.shared, off, len, kind == MGP2P_OP_RECV, 0);
        MG_CHECK(rc, fn_fail);
    }
    op->mem = e.mem;
    if (clRetainMemObject(op->mem) == CL_SUCCESS)
        op->mem_held = 1;
    op->origin = (int64_t)off - lo;
    op->zc = e.host ? e.host + op->origin : NULL;
    rc = mgp2p_op_engine(op, e.context);
fn_exit:
fn_fail:
    return rc;
}

int mgp2p_op_engine(mgp2p_op_t *op, cl_context context)
{
    mgpk_ctx_t *pk = NULL;
    int rc = mgdev_ctx_get(context, &pk);
    MG_CHECK(rc, fn_fail);
    /* The auto table is loaded or measured here, at the engine's first
       operation, never inside a progress step under the engine's lock.
       Contiguous data never needs it (one transfer under every method), so a
       process that moves only contiguous data runs no calibration kernel. */
    if (MGPK_F_METHOD_OF(op->pk_flags) == MGPK_METHOD_AUTO && !mgpk_contig(op->type, op->count))
        rc = mgpk_calib_load(pk);
    MG_CHECK(rc, fn_fail);
    op->pk = pk;
fn_fail:
    return rc;
}

int mgp2p_op_trivial(const mgp2p_op_t *op)
{
    return op->n == 0 || op->peer == MPI_PROC_NULL;
}

int mgp2p_op_hold(mgp2p_op_t *op)
{
    static char none[1];
    /* A layer's operation (MGP2P_OP_HOOK) holds an MPI request of its own
       on comm, which keeps it.  The stand-in below would harm it: in MPICH
       4.0.2 a persistent neighborhood collective started after such a
       receive was freed on its communicator never completes. */
    if (op->held || op->kind == MGP2P_OP_HOOK || op->comm == MPI_COMM_WORLD ||
        op->comm == MPI_COMM_SELF || op->comm == MPI_COMM_NULL)
        return MPI_SUCCESS;
    /* MPI has no call that only counts a reference to a communicator; an
       inactive persistent request holds one (MPICH frees a communicator
       once no request refers to it), costs no traffic and is never
       started. */
    int rc = PMPI_Recv_init(none, 0, MPI_BYTE, MPI_PROC_NULL, 0, op->comm, &op->hold);
    if (rc == MPI_SUCCESS)
        op->held = 1;
    return rc;
}

void mgp2p_op_init_hook(mgp2p_op_t *op, const char *fn, MPI_Comm comm, const mgp2p_hook_t *hook,
                        void *arg)
{
    mgp2p_op_call(op, MGP2P_OP_HOOK, fn, 0, MPI_PROC_NULL, 0, comm);
    op->hook = hook;
    op->hook_arg = arg;
}

void mgp2p_op_release(mgp2p_op_t *op)
{
    if (op->hook && op->hook->release)
        op->hook->release(op);
    op->hook = NULL;
    op->hook_arg = NULL;
    mgdt_type_release(op->type);
    op->type = NULL;
    if (op->held)
        PMPI_Request_free(&op->hold);
    op->held = 0;
    if (op->mem_held)
        clReleaseMemObject(op->mem);
    op->mem_held = 0;
    free(op->msg);
    op->msg = NULL;
}

void mgp2p_op_free(mgp2p_op_t *op)
{
    if (!op)
        return;
    mgp2p_op_release(op);
    free(op);
}

void mgp2p_op_report(const mgp2p_op_t *op, const char *call)
{
    static const char prefix[] = "mpigpu: ";
    const char *m = op->msg;
    size_t fl = strlen(op->fn);
    if (op->err == MPI_SUCCESS || !m)
        return;
    if (!call || !strcmp(call, op->fn)) {
        mgerr_set(op->err, "%s", m);
        return;
    }
    /* "mpigpu: MPI_Irecv: what" becomes "mpigpu: MPI_Wait on MPI_Irecv: what". */
    if (!strncmp(m, prefix, sizeof(prefix) - 1))
        m += sizeof(prefix) - 1;
    if (!strncmp(m, op->fn, fl) && !strncmp(m + fl, ": ", 2))
        m += fl + 2;
    mgerr_set(op->err, "mpigpu: %s on %s: %s", call, op->fn, m);
}
