/*
 * The completion calls on requests of device operations (progress.c makes
 * them).
 *
 * Every completion call first steps every active operation (progress), then
 * asks MPI about the whole array with the PMPI Test form, so
 * Waitany/Waitsome/Testsome return requests as they complete, host and
 * device alike.  One pass (progress, the errors of the device requests, the
 * PMPI test, the statuses of persistent device requests) runs under the p2p
 * lock, so that no other thread completes an operation in between; the Wait
 * forms repeat passes, releasing the lock between them.  Calls whose arrays
 * hold no device request, while no device operation is active, go to PMPI
 * unchanged.
 *
 * Errors of device operations are reported by these calls, not by the query
 * function, so that they go through the operation's communicator, with the
 * operation's message named after the completion call ("mpigpu: MPI_Wait on
 * MPI_Irecv: ...").  Only the _all and _some forms write MPI_ERROR, and only
 * when they return MPI_ERR_IN_STATUS (MPI 3.2.5): the error class of each
 * request that failed, MPI_SUCCESS in the others'.  MPI answers for a
 * persistent device request's stand-in; its status is then replaced by the
 * operation's.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"

/* What a pass needs of the device requests in reqs[0..n), taken under the
   lock before PMPI frees them: err[i] is an error class, comm[i] the
   communicator to raise it on, op[i] the operation behind an active device
   request (valid while the lock is held: only a progress pass frees one). */
typedef struct req_errs {
    const char *fn; /* the completion call, for messages */
    int any_dev, n;
    int err_small[16], *err;
    MPI_Comm comm_small[16], *comm;
    int raised_small[16], *raised;
    mgp2p_op_t *op_small[16], **op;
} req_errs_t;

/* Take (or, later in the call, refresh) the errors; lock held. */
static void errs_refresh(req_errs_t *e, const MPI_Request reqs[])
{
    e->any_dev = 0;
    for (int i = 0; i < e->n; i++) {
        mgp2p_op_t *op = mgp2p_req_lookup(reqs[i]);
        int live = op && (!op->persistent || op->started);
        e->err[i] = live ? op->err : MPI_SUCCESS;
        e->comm[i] = op ? op->comm : MPI_COMM_NULL;
        e->raised[i] = live ? op->raised : 0;
        e->op[i] = live ? op : NULL;
        e->any_dev |= op != NULL;
    }
}

static int errs_take(req_errs_t *e, const char *fn, int n, const MPI_Request reqs[])
{
    memset(e, 0, sizeof(*e));
    e->fn = fn;
    e->n = n;
    e->err = e->err_small;
    e->comm = e->comm_small;
    e->raised = e->raised_small;
    e->op = e->op_small;
    if (n > 16) {
        e->err = calloc((size_t)n, sizeof(int));
        e->comm = calloc((size_t)n, sizeof(MPI_Comm));
        e->raised = calloc((size_t)n, sizeof(int));
        e->op = calloc((size_t)n, sizeof(mgp2p_op_t *));
        if (!e->err || !e->comm || !e->raised || !e->op)
            return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory in a completion call");
    }
    mgp2p_lock();
    errs_refresh(e, reqs);
    mgp2p_unlock();
    return MPI_SUCCESS;
}

static void errs_free(req_errs_t *e)
{
    if (e->err != e->err_small)
        free(e->err);
    if (e->comm != e->comm_small)
        free(e->comm);
    if (e->raised != e->raised_small)
        free(e->raised);
    if (e->op != e->op_small)
        free(e->op);
}

/* Raise index i's error.  Lock held: the operation, and with it its hold
   on a communicator that the user may have freed, lives until a progress
   pass reaps it. */
static int errs_raise(const req_errs_t *e, int i)
{
    const mgp2p_op_t *op = e->op[i];
    if (e->raised[i])
        return e->err[i];
    if (op && op->driver && op->driver->raise)
        return op->driver->raise(op, e->err[i]); /* a file's handler (file.c) */
    return mgmpi_error(e->comm[i], e->err[i]);
}

/* The _all/_some forms return MPI_ERR_IN_STATUS: index i's status (the k-th)
   gets its error class, MPI_SUCCESS when it has none, and its error is
   raised.  Lock held. */
static void errs_mark(const req_errs_t *e, int i, MPI_Status *statuses, int k)
{
    if (statuses != MPI_STATUSES_IGNORE)
        statuses[k].MPI_ERROR = e->err[i];
    if (e->err[i] != MPI_SUCCESS)
        errs_raise(e, i);
}

/* reqs[i] completed in this pass: a device request's error message is
   recorded here, named after the completion call; a persistent one reports
   its operation's status and becomes startable again.  Lock held. */
static void errs_complete(const req_errs_t *e, int i, MPI_Status *status)
{
    mgp2p_op_t *op = e->op[i];
    if (!op)
        return;
    mgp2p_op_report(op, e->fn);
    if (!op->persistent)
        return;
    mgp2p_op_status(op, status);
    op->started = 0;
}

static MPI_Status *status_at(MPI_Status statuses[], int k)
{
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[k];
}

/* One pass of MPI_Test on one request (lock held). */
static int test_pass(MPI_Request *request, int *flag, MPI_Status *status, req_errs_t *e)
{
    mgp2p_progress_locked();
    errs_refresh(e, request);
    int rc = PMPI_Test(request, flag, status);
    if (rc == MPI_SUCCESS && *flag)
        errs_complete(e, 0, status);
    return rc;
}

/* No request of mpigpu's is live and no device operation is active: the
   requests are all MPI's, and the call goes to PMPI with no lock, lookup or
   copy (issue 31: host traffic pays nothing).  Each entry point tests it
   inline first (two plain loads) and jumps to PMPI; the _common forms,
   out of line, test it again. */
#define HOST_ONLY() (!mgp2p_req_any() && !mgp2p_progress_busy())

/* The passes of every form below end with the lock held, released once the
   errors are raised. */
static __attribute__((noinline)) int one_common(const char *fn, MPI_Request *request, int *flag,
                                                MPI_Status *status, int block)
{
    if (HOST_ONLY())
        return block ? PMPI_Wait(request, status) : PMPI_Test(request, flag, status);
    req_errs_t e;
    int f = 0, rc = errs_take(&e, fn, 1, request);
    if (rc != MPI_SUCCESS)
        return rc;
    if (!e.any_dev && !mgp2p_progress_busy())
        return block ? PMPI_Wait(request, status) : PMPI_Test(request, flag, status);
    for (;;) {
        mgp2p_lock();
        rc = test_pass(request, &f, status, &e);
        if (rc != MPI_SUCCESS || f || !block)
            break;
        mgp2p_unlock();
        mgp2p_progress_relax();
    }
    if (rc == MPI_SUCCESS && f && e.err[0] != MPI_SUCCESS)
        rc = errs_raise(&e, 0);
    mgp2p_unlock();
    if (flag)
        *flag = f;
    return rc;
}

MPIGPU_EXPORT
int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    if (__builtin_expect(HOST_ONLY(), 1))
        return PMPI_Test(request, flag, status);
    return one_common("MPI_Test", request, flag, status, 0);
}

MPIGPU_EXPORT
int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    if (__builtin_expect(HOST_ONLY(), 1))
        return PMPI_Wait(request, status);
    return one_common("MPI_Wait", request, NULL, status, 1);
}

static __attribute__((noinline)) int all_common(const char *fn, int count, MPI_Request reqs[],
                                                int *flag, MPI_Status statuses[], int block)
{
    if (HOST_ONLY())
        return block ? PMPI_Waitall(count, reqs, statuses)
                     : PMPI_Testall(count, reqs, flag, statuses);
    req_errs_t e;
    int rc = errs_take(&e, fn, count, reqs);
    if (rc != MPI_SUCCESS)
        goto fn_exit;
    if (!e.any_dev && !mgp2p_progress_busy()) {
        rc =
            block ? PMPI_Waitall(count, reqs, statuses) : PMPI_Testall(count, reqs, flag, statuses);
        goto fn_exit;
    }
    int f = 0;
    for (;;) {
        mgp2p_lock();
        mgp2p_progress_locked();
        errs_refresh(&e, reqs);
        rc = PMPI_Testall(count, reqs, &f, statuses);
        if (rc == MPI_SUCCESS && f)
            for (int i = 0; i < count; i++)
                errs_complete(&e, i, status_at(statuses, i));
        if (rc != MPI_SUCCESS || f || !block)
            break;
        mgp2p_unlock();
        mgp2p_progress_relax();
    }
    if (flag)
        *flag = f;
    int bad = 0;
    for (int i = 0; rc == MPI_SUCCESS && f && i < count; i++)
        bad |= e.err[i] != MPI_SUCCESS;
    for (int i = 0; bad && i < count; i++)
        errs_mark(&e, i, statuses, i);
    if (bad)
        rc = MPI_ERR_IN_STATUS;
    mgp2p_unlock();
fn_exit:
    errs_free(&e);
    return rc;
}

MPIGPU_EXPORT
int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    if (__builtin_expect(HOST_ONLY(), 1))
        return PMPI_Waitall(count, array_of_requests, array_of_statuses);
    return all_common("MPI_Waitall", count, array_of_requests, NULL, array_of_statuses, 1);
}

MPIGPU_EXPORT
int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[])
{
    if (__builtin_expect(HOST_ONLY(), 1))
        return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
    return all_common("MPI_Testall", count, array_of_requests, flag, array_of_statuses, 0);
}

static __attribute__((noinline)) int any_common(const char *fn, int count, MPI_Request reqs[],
                                                int *index, int *flag, MPI_Status *status,
                                                int block)
{
    if (HOST_ONLY())
        return block ? PMPI_Waitany(count, reqs, index, status)
                     : PMPI_Testany(count, reqs, index, flag, status);
    req_errs_t e;
    int rc = errs_take(&e, fn, count, reqs);
    if (rc != MPI_SUCCESS)
        goto fn_exit;
    if (!e.any_dev && !mgp2p_progress_busy()) {
        rc = block ? PMPI_Waitany(count, reqs, index, status)
                   : PMPI_Testany(count, reqs, index, flag, status);
        goto fn_exit;
    }
    int f = 0;
    for (;;) {
        mgp2p_lock();
        mgp2p_progress_locked();
        errs_refresh(&e, reqs);
        rc = PMPI_Testany(count, reqs, index, &f, status);
        if (rc == MPI_SUCCESS && f && *index != MPI_UNDEFINED)
            errs_complete(&e, *index, status);
        if (rc != MPI_SUCCESS || f || !block)
            break;
        mgp2p_unlock();
        mgp2p_progress_relax();
    }
    if (flag)
        *flag = f;
    if (rc == MPI_SUCCESS && f && *index != MPI_UNDEFINED && e.err[*index] != MPI_SUCCESS)
        rc = errs_raise(&e, *index);
    mgp2p_unlock();
fn_exit:
    errs_free(&e);
    return rc;
}

MPIGPU_EXPORT
int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    if (__builtin_expect(HOST_ONLY(), 1))
        return PMPI_Waitany(count, array_of_requests, index, status);
    return any_common("MPI_Waitany", count, array_of_requests, index, NULL, status, 1);
}

MPIGPU_EXPORT
int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status)
{
    if (__builtin_expect(HOST_ONLY(), 1))
        return PMPI_Testany(count, array_of_requests, index, flag, status);
    return any_common("MPI_Testany", count, array_of_requests, index, flag, status, 0);
}

static __attribute__((noinline)) int some_common(const char *fn, int incount, MPI_Request reqs[],
                                                 int *outcount, int indices[],
                                                 MPI_Status statuses[], int block)
{
    if (HOST_ONLY())
        return block ? PMPI_Waitsome(incount, reqs, outcount, indices, statuses)
                     : PMPI_Testsome(incount, reqs, outcount, indices, statuses);
    req_errs_t e;
    int rc = errs_take(&e, fn, incount, reqs);
    if (rc != MPI_SUCCESS)
        goto fn_exit;
    if (!e.any_dev && !mgp2p_progress_busy()) {
        rc = block ? PMPI_Waitsome(incount, reqs, outcount, indices, statuses)
                   : PMPI_Testsome(incount, reqs, outcount, indices, statuses);
        goto fn_exit;
    }
    for (;;) {
        mgp2p_lock();
        mgp2p_progress_locked();
        errs_refresh(&e, reqs);
        rc = PMPI_Testsome(incount, reqs, outcount, indices, statuses);
        if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED)
            for (int k = 0; k < *outcount; k++)
                errs_complete(&e, indices[k], status_at(statuses, k));
        if (rc != MPI_SUCCESS || *outcount != 0 || !block)
            break;
        mgp2p_unlock();
        mgp2p_progress_relax();
    }
    int bad = 0;
    for (int k = 0; rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED && k < *outcount; k++)
        bad |= e.err[indices[k]] != MPI_SUCCESS;
    for (int k = 0; bad && k < *outcount; k++)
        errs_mark(&e, indices[k], statuses, k);
    if (bad)
        rc = MPI_ERR_IN_STATUS;
    mgp2p_unlock();
fn_exit:
    errs_free(&e);
    return rc;
}

MPIGPU_EXPORT
int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
    if (__builtin_expect(HOST_ONLY(), 1))
        return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices,
                             array_of_statuses);
    return some_common("MPI_Waitsome", incount, array_of_requests, outcount, array_of_indices,
                       array_of_statuses, 1);
}

MPIGPU_EXPORT
int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
    if (__builtin_expect(HOST_ONLY(), 1))
        return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices,
                             array_of_statuses);
    return some_common("MPI_Testsome", incount, array_of_requests, outcount, array_of_indices,
                       array_of_statuses, 0);
}

MPIGPU_EXPORT
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    if (__builtin_expect(!mgp2p_req_any(), 1)) /* no lookup can find it */
        return PMPI_Request_get_status(request, flag, status);
    mgp2p_lock();
    mgp2p_op_t *op = mgp2p_req_lookup(request);
    if (!op) {
        mgp2p_unlock();
        return PMPI_Request_get_status(request, flag, status);
    }
    mgp2p_progress_locked();
    int rc = PMPI_Request_get_status(request, flag, status);
    if (rc == MPI_SUCCESS && *flag && op->persistent && op->started)
        mgp2p_op_status(op, status);
    mgp2p_unlock();
    return rc;
}

MPIGPU_EXPORT
int MPI_Request_free(MPI_Request *request)
{
    if (__builtin_expect(!mgp2p_req_any(), 1)) /* no lookup can find it */
        return PMPI_Request_free(request);
    mgp2p_lock();
    mgp2p_op_t *op = request ? mgp2p_req_lookup(*request) : NULL;
    if (!op) {
        mgp2p_unlock();
        return PMPI_Request_free(request);
    }
    if (op->state != MGP2P_OP_DONE) {
        /* Still active: it completes in a later progress pass (at the latest
           in MPI_Finalize), which frees the request then. */
        op->freed = 1;
        *request = MPI_REQUEST_NULL;
        mgp2p_unlock();
        return MPI_SUCCESS;
    }
    if (op->persistent)
        mgp2p_op_unpersist(op);
    int rc = PMPI_Request_free(request);
    mgp2p_unlock();
    if (op->persistent)
        mgp2p_op_free(op);
    return rc;
}

MPIGPU_EXPORT
int MPI_Cancel(MPI_Request *request)
{
    if (__builtin_expect(!mgp2p_req_any(), 1)) /* no lookup can find it */
        return PMPI_Cancel(request);
    mgp2p_lock();
    mgp2p_op_t *op = request ? mgp2p_req_lookup(*request) : NULL;
    if (!op) {
        mgp2p_unlock();
        return PMPI_Cancel(request);
    }
    if (op->state != MGP2P_OP_DONE) {
        mgp2p_op_cancel(op);
        if (op->state == MGP2P_OP_DONE)
            mgp2p_op_finish(op);
    }
    mgp2p_unlock();
    return MPI_SUCCESS;
}
