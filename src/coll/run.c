/*
 * Running a collective on device addresses: blocking (stage in, MPI's
 * collective on host memory, stage out), nonblocking and persistent.  A
 * nonblocking or persistent call is an operation of the point-to-point
 * engine (MGP2P_OP_HOOK, p2p.h): the engine gives it its request, steps it
 * in every progress pass (the completion calls, the progress thread), and
 * completes the request once its step has tested MPI's request complete
 * and written the outputs back.  So the caller's MPI_Wait, MPI_Test and
 * their array forms, mixed with any other requests, end the staging.
 */
#include "config.h"

#include <stdlib.h>

#include "mgerr.h"
#include "coll_impl.h"

/* MPI's own error, recorded under the call's name (MPI ran the handler). */
static int mpi_failed(const char *fn, int code)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0, cls = MPI_ERR_OTHER;
    PMPI_Error_class(code, &cls);
    PMPI_Error_string(code, s, &len);
    return mgerr_set(cls, "mpigpu: %s: %s", fn, s);
}

/* The refusal of a side outside its allocation, recorded again (the call
   ran on scratch memory meanwhile). */
static int coll_refused(const coll_state_t *st)
{
    return st->msg ? mgerr_set(st->err, "%s", st->msg) : st->err;
}

/* ---- nonblocking and persistent: the engine's hook ---- */

/* MPI_Start of a persistent call: read the inputs, start MPI's request. */
static int hook_start(mgp2p_op_t *op)
{
    coll_state_t *st = op->hook_arg;
    if (st->hc.mode != MGCOLL_PERSISTENT)
        return MPI_SUCCESS; /* posted by the call itself */
    int rc = coll_stage_in(st);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Start(&st->inner);
    return rc == MPI_SUCCESS ? rc : mpi_failed(op->fn, rc);
}

static int hook_step(mgp2p_op_t *op, int *done)
{
    coll_state_t *st = op->hook_arg;
    int flag = 0;
    int rc = PMPI_Test(&st->inner, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS)
        return mpi_failed(op->fn, rc);
    if (!flag)
        return MPI_SUCCESS;
    *done = 1;
    return st->err ? coll_refused(st) : coll_stage_out(st);
}

static void hook_release(mgp2p_op_t *op)
{
    coll_state_t *st = op->hook_arg;
    if (!st)
        return;
    if (st->inner != MPI_REQUEST_NULL) {
        /* A persistent request (inactive once its operation is done), or one
           of a call whose operation never ran: MPI's work ends first. */
        if (st->hc.mode == MGCOLL_NONBLOCKING)
            PMPI_Wait(&st->inner, MPI_STATUS_IGNORE);
        else
            PMPI_Request_free(&st->inner);
    }
    coll_state_free(st);
    free(st);
}

static const mgp2p_hook_t coll_hook = {
    .start = hook_start,
    .step = hook_step,
    .release = hook_release,
};

static int run_request(const mgcoll_call_t *c, coll_state_t *st, int *raised)
{
    int rc = MPI_SUCCESS;
    mgp2p_op_t *op = NULL;
    if (!c->req)
        MG_FAIL(rc, fn_fail, MPI_ERR_REQUEST, "mpigpu: %s: request is NULL", c->fn);
    /* Nonblocking: posted now, so that collectives start in the caller's
       order.  Persistent: MPICH 4.0.2 runs the local part of some persistent
       collectives at the _init call already (MPI_Gather_init on one
       process copies the send buffer then), so the host view holds the
       inputs from the start; MPI_Start reads them in again. */
    rc = coll_stage_in(st);
    MG_CHECK(rc, fn_fail);
    rc = coll_pmpi(&st->hc, &st->inner);
    if (rc != MPI_SUCCESS) {
        *raised = 1;
        rc = mpi_failed(c->fn, rc);
        goto fn_fail;
    }
    op = calloc(1, sizeof(*op));
    if (!op)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
    mgp2p_op_init_hook(op, c->fn, c->comm, &coll_hook, st);
    st = NULL; /* op's now */
    if (c->mode == MGCOLL_NONBLOCKING) {
        rc = mgp2p_op_start(op, 1);
    } else {
        mgp2p_lock();
        rc = mgp2p_op_persist(op, c->req);
        mgp2p_unlock();
    }
    if (rc != MPI_SUCCESS) {
        *raised = 1;
        goto fn_fail;
    }
    if (c->mode == MGCOLL_NONBLOCKING)
        *c->req = op->greq;
    return MPI_SUCCESS;
fn_fail:
    if (op)
        mgp2p_op_free(op); /* its release ends MPI's request */
    if (st) {
        hook_release(&(mgp2p_op_t){.hook_arg = st});
    }
    return rc;
}

/* A blocking call that could pipeline: its state is built before the vote,
   so that everything this process can fail at is known when it votes. */
static coll_state_t *pipe_prepare(const mgcoll_call_t *c, coll_pipe_t *pp, int *rc)
{
    coll_state_t *st = NULL;
    *rc = mgdev_require_device(c->fn);
    if (*rc == MPI_SUCCESS && !(st = calloc(1, sizeof(*st))))
        *rc = mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
    if (*rc == MPI_SUCCESS)
        *rc = coll_state_init(st, c);
    pp->can = *rc == MPI_SUCCESS && coll_pipe_local(st, pp);
    return st;
}

static void state_drop(coll_state_t *st)
{
    if (!st)
        return;
    coll_state_free(st);
    free(st);
}

int mgcoll_run(const mgcoll_call_t *c, int *raised)
{
    int rc = MPI_SUCCESS, strc = MPI_SUCCESS;
    *raised = 0;
    int taken = 0;
    coll_pipe_t pp;
    coll_state_t *st = NULL;
    if (c->host_pipe)
        return coll_pipe_host(c, raised); /* host buffers; the vote is done */
    if (coll_pipe_could(c, &pp))
        st = pipe_prepare(c, &pp, &strc);
    rc = coll_red_try(c, &taken, raised, &pp);
    if (taken || strc != MPI_SUCCESS) {
        state_drop(st);
        return taken ? rc : strc;
    }
    if (pp.go) {
        rc = coll_pipe_run(st, c, &pp, raised); /* never a refused side: it cannot */
        state_drop(st);
        return rc;
    }
    if (!st) {
        rc = mgdev_require_device(c->fn);
        if (rc != MPI_SUCCESS)
            return rc;
        st = calloc(1, sizeof(*st));
        if (!st)
            return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
        rc = coll_state_init(st, c);
        if (rc != MPI_SUCCESS) {
            state_drop(st);
            return rc;
        }
    }
    if (c->mode != MGCOLL_BLOCKING)
        return run_request(c, st, raised);
    rc = coll_stage_in(st);
    if (rc == MPI_SUCCESS) {
        rc = coll_pmpi(&st->hc, NULL);
        if (rc != MPI_SUCCESS) {
            *raised = 1;
            rc = mpi_failed(c->fn, rc);
        }
    }
    if (rc == MPI_SUCCESS)
        rc = st->err ? coll_refused(st) : coll_stage_out(st);
    state_drop(st);
    return rc;
}
