/*
 * Requests of device operations and the completion calls.
 *
 * A nonblocking device operation hands the user a generalized request
 * (MPI_Grequest_start), so its handle is a real MPI request that mixes with
 * host requests in one array.  The operation completes the generalized
 * request once its last piece is done; the query function then reports the
 * status in the user's datatype.  Every completion call first steps every
 * active operation (progress), then asks MPI about the whole array with the
 * PMPI Test form, so Waitany/Waitsome/Testsome return requests as they
 * complete, host and device alike.  Calls whose arrays hold no device
 * request, while no device operation is active, go to PMPI unchanged.
 *
 * Errors of device operations are reported by these calls, not by the query
 * function, so that they go through the operation's communicator.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "p2p.h"

#define REQ_BUCKETS 256

static mgdev_op_t *active;             /* ops not yet DONE */
static mgdev_op_t *table[REQ_BUCKETS]; /* ops with a live generalized request */

static unsigned req_hash(MPI_Request r)
{
    return ((unsigned)r * 2654435761u) % REQ_BUCKETS;
}

mgdev_op_t *mgdev_req_lookup(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return NULL;
    for (mgdev_op_t *op = table[req_hash(req)]; op; op = op->hnext)
        if (op->greq == req)
            return op;
    return NULL;
}

static void table_remove(mgdev_op_t *op)
{
    for (mgdev_op_t **p = &table[req_hash(op->greq)]; *p; p = &(*p)->hnext) {
        if (*p == op) {
            *p = op->hnext;
            return;
        }
    }
}

void mgdev_op_status(const mgdev_op_t *op, MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    status->MPI_SOURCE = op->kind == MGDEV_OP_RECV ? op->source : MPI_ANY_SOURCE;
    status->MPI_TAG = op->kind == MGDEV_OP_RECV ? op->rtag : MPI_ANY_TAG;
    /* Bytes received: MPI_Get_count and MPI_Get_elements derive the counts in
       the user's datatype from them. */
    PMPI_Status_set_elements_x(status, MPI_BYTE,
                               op->kind == MGDEV_OP_RECV && !op->cancelled ? op->done : 0);
    PMPI_Status_set_cancelled(status, op->cancelled);
}

static int greq_query(void *extra, MPI_Status *status)
{
    mgdev_op_status(extra, status);
    return MPI_SUCCESS;
}

static int greq_free(void *extra)
{
    mgdev_op_t *op = extra;
    table_remove(op);
    free(op);
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS; /* MPI_Cancel is interposed; see below */
}

int mgdev_op_start(mgdev_op_t *op, int nonblocking)
{
    op->greq = MPI_REQUEST_NULL;
    if (nonblocking) {
        int rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, op, &op->greq);
        if (rc != MPI_SUCCESS)
            return rc;
        unsigned h = req_hash(op->greq);
        op->hnext = table[h];
        table[h] = op;
    }
    op->prev = NULL;
    op->next = active;
    if (active)
        active->prev = op;
    active = op;
    return MPI_SUCCESS;
}

static void op_unlink(mgdev_op_t *op)
{
    if (op->prev)
        op->prev->next = op->next;
    else
        active = op->next;
    if (op->next)
        op->next->prev = op->prev;
    op->prev = op->next = NULL;
}

/* op reached DONE: leave the active list and complete its request.  A freed
   request goes away with it (the free function frees op). */
static void op_finish(mgdev_op_t *op)
{
    op_unlink(op);
    if (op->greq == MPI_REQUEST_NULL)
        return;
    PMPI_Grequest_complete(op->greq);
    if (op->freed) {
        MPI_Request r = op->greq;
        PMPI_Request_free(&r);
    }
}

void mgdev_progress(void)
{
    mgdev_op_t *op = active;
    while (op) {
        mgdev_op_t *next = op->next;
        mgdev_op_step(op);
        if (op->state == MGDEV_OP_DONE)
            op_finish(op);
        op = next;
    }
}

int mgdev_progress_busy(void)
{
    return active != NULL;
}

void mgdev_op_wait(mgdev_op_t *op)
{
    while (op->state != MGDEV_OP_DONE)
        mgdev_progress();
}

void mgdev_progress_drain(void)
{
    while (active)
        mgdev_progress();
}

/* ---- completion calls ---- */

/* Errors of the device requests in reqs[0..n), taken before PMPI frees them:
   err[i] is an error class, comm[i] the communicator to raise it on. */
typedef struct req_errs {
    int any_dev;
    int err_small[16], *err;
    MPI_Comm comm_small[16], *comm;
    int raised_small[16], *raised;
} req_errs_t;

static int errs_take(req_errs_t *e, int n, const MPI_Request reqs[])
{
    memset(e, 0, sizeof(*e));
    e->err = e->err_small;
    e->comm = e->comm_small;
    e->raised = e->raised_small;
    if (n > 16) {
        e->err = calloc((size_t)n, sizeof(int));
        e->comm = calloc((size_t)n, sizeof(MPI_Comm));
        e->raised = calloc((size_t)n, sizeof(int));
        if (!e->err || !e->comm || !e->raised)
            return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory in a completion call");
    }
    for (int i = 0; i < n; i++) {
        mgdev_op_t *op = mgdev_req_lookup(reqs[i]);
        e->err[i] = op ? op->err : MPI_SUCCESS;
        e->comm[i] = op ? op->comm : MPI_COMM_NULL;
        e->raised[i] = op ? op->raised : 0;
        e->any_dev |= op != NULL;
    }
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
}

static int errs_raise(const req_errs_t *e, int i)
{
    return e->raised[i] ? e->err[i] : mgdev_error(e->comm[i], e->err[i]);
}

/* Record index i's error in status (for the _all/_some forms). */
static int errs_mark(const req_errs_t *e, int i, MPI_Status *statuses, int k)
{
    if (e->err[i] == MPI_SUCCESS)
        return 0;
    if (statuses != MPI_STATUSES_IGNORE)
        statuses[k].MPI_ERROR = e->err[i];
    errs_raise(e, i);
    return 1;
}

/* The operation behind reqs[i] may have completed since errs_take(). */
static void errs_refresh(req_errs_t *e, int n, const MPI_Request reqs[])
{
    for (int i = 0; i < n; i++) {
        mgdev_op_t *op = mgdev_req_lookup(reqs[i]);
        if (op) {
            e->err[i] = op->err;
            e->raised[i] = op->raised;
        }
    }
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    mgdev_op_t *op = request ? mgdev_req_lookup(*request) : NULL;
    if (!op && !mgdev_progress_busy())
        return PMPI_Test(request, flag, status);
    mgdev_progress();
    if (!op)
        return PMPI_Test(request, flag, status);
    int err = op->err, raised = op->raised;
    MPI_Comm comm = op->comm;
    int rc = PMPI_Test(request, flag, status);
    if (rc == MPI_SUCCESS && *flag && err != MPI_SUCCESS)
        rc = raised ? err : mgdev_error(comm, err);
    return rc;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    mgdev_op_t *op = request ? mgdev_req_lookup(*request) : NULL;
    if (!op && !mgdev_progress_busy())
        return PMPI_Wait(request, status);
    if (!op) {
        int flag = 0, rc;
        do {
            mgdev_progress();
            rc = PMPI_Test(request, &flag, status);
        } while (rc == MPI_SUCCESS && !flag);
        return rc;
    }
    mgdev_op_wait(op);
    int err = op->err, raised = op->raised;
    MPI_Comm comm = op->comm;
    int rc = PMPI_Wait(request, status);
    if (rc == MPI_SUCCESS && err != MPI_SUCCESS)
        rc = raised ? err : mgdev_error(comm, err);
    return rc;
}

static int all_common(int count, MPI_Request reqs[], int *flag, MPI_Status statuses[], int block)
{
    req_errs_t e;
    int rc = errs_take(&e, count, reqs);
    if (rc != MPI_SUCCESS)
        goto fn_exit;
    if (!e.any_dev && !mgdev_progress_busy()) {
        rc =
            block ? PMPI_Waitall(count, reqs, statuses) : PMPI_Testall(count, reqs, flag, statuses);
        goto fn_exit;
    }
    int f = 0;
    do {
        mgdev_progress();
        errs_refresh(&e, count, reqs);
        rc = PMPI_Testall(count, reqs, &f, statuses);
    } while (rc == MPI_SUCCESS && !f && block);
    if (flag)
        *flag = f;
    if (rc != MPI_SUCCESS || !f)
        goto fn_exit;
    int bad = 0;
    for (int i = 0; i < count; i++)
        bad |= errs_mark(&e, i, statuses, i);
    if (bad)
        rc = MPI_ERR_IN_STATUS;
fn_exit:
    errs_free(&e);
    return rc;
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[])
{
    return all_common(count, array_of_requests, NULL, array_of_statuses, 1);
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[])
{
    return all_common(count, array_of_requests, flag, array_of_statuses, 0);
}

static int any_common(int count, MPI_Request reqs[], int *index, int *flag, MPI_Status *status,
                      int block)
{
    req_errs_t e;
    int rc = errs_take(&e, count, reqs);
    if (rc != MPI_SUCCESS)
        goto fn_exit;
    if (!e.any_dev && !mgdev_progress_busy()) {
        rc = block ? PMPI_Waitany(count, reqs, index, status)
                   : PMPI_Testany(count, reqs, index, flag, status);
        goto fn_exit;
    }
    int f = 0;
    do {
        mgdev_progress();
        errs_refresh(&e, count, reqs);
        rc = PMPI_Testany(count, reqs, index, &f, status);
    } while (rc == MPI_SUCCESS && !f && block);
    if (flag)
        *flag = f;
    if (rc == MPI_SUCCESS && f && *index != MPI_UNDEFINED && e.err[*index] != MPI_SUCCESS)
        rc = errs_raise(&e, *index);
fn_exit:
    errs_free(&e);
    return rc;
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status)
{
    return any_common(count, array_of_requests, index, NULL, status, 1);
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status)
{
    return any_common(count, array_of_requests, index, flag, status, 0);
}

static int some_common(int incount, MPI_Request reqs[], int *outcount, int indices[],
                       MPI_Status statuses[], int block)
{
    req_errs_t e;
    int rc = errs_take(&e, incount, reqs);
    if (rc != MPI_SUCCESS)
        goto fn_exit;
    if (!e.any_dev && !mgdev_progress_busy()) {
        rc = block ? PMPI_Waitsome(incount, reqs, outcount, indices, statuses)
                   : PMPI_Testsome(incount, reqs, outcount, indices, statuses);
        goto fn_exit;
    }
    do {
        mgdev_progress();
        errs_refresh(&e, incount, reqs);
        rc = PMPI_Testsome(incount, reqs, outcount, indices, statuses);
    } while (rc == MPI_SUCCESS && *outcount == 0 && block);
    if (rc != MPI_SUCCESS || *outcount == MPI_UNDEFINED)
        goto fn_exit;
    int bad = 0;
    for (int k = 0; k < *outcount; k++)
        bad |= errs_mark(&e, indices[k], statuses, k);
    if (bad)
        rc = MPI_ERR_IN_STATUS;
fn_exit:
    errs_free(&e);
    return rc;
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
    return some_common(incount, array_of_requests, outcount, array_of_indices, array_of_statuses,
                       1);
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[])
{
    return some_common(incount, array_of_requests, outcount, array_of_indices, array_of_statuses,
                       0);
}

int MPI_Request_free(MPI_Request *request)
{
    mgdev_op_t *op = request ? mgdev_req_lookup(*request) : NULL;
    if (!op)
        return PMPI_Request_free(request);
    if (op->state == MGDEV_OP_DONE)
        return PMPI_Request_free(request);
    /* Still active: it completes in a later progress call (at the latest in
       MPI_Finalize), which frees the request then. */
    op->freed = 1;
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request *request)
{
    mgdev_op_t *op = request ? mgdev_req_lookup(*request) : NULL;
    if (!op)
        return PMPI_Cancel(request);
    if (op->state != MGDEV_OP_DONE) {
        mgdev_op_cancel(op);
        if (op->state == MGDEV_OP_DONE)
            op_finish(op);
    }
    return MPI_SUCCESS;
}
