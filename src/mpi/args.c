/*
 * Argument checks of the device paths.  A call on host buffers goes to MPI,
 * which checks its arguments; one on a device buffer never reaches MPI in
 * that form, so the checks MPICH 4.0.2 makes are made here, with the class
 * MPICH returns for the host form (test/mpi/bad_args.c compares them call by
 * call).  Commit and span checks follow, in the layers below (mgdt_type_get,
 * mgdt_span).
 */
#include "config.h"

#include <stdatomic.h>

#include "mgdt.h"
#include "mgerr.h"
#include "mgmpi.h"

static atomic_int tag_ub; /* MPI_TAG_UB, read at the first check */

static int get_tag_ub(void)
{
    int ub = atomic_load_explicit(&tag_ub, memory_order_relaxed);
    if (!ub) {
        int *v = NULL, flag = 0;
        PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
        ub = flag && v ? *v : 32767; /* the least the standard allows */
        atomic_store_explicit(&tag_ub, ub, memory_order_relaxed);
    }
    return ub;
}

int mgmpi_check_comm(const char *fn, MPI_Comm comm, int *nranks, int *raised)
{
    int inter = 0, rc;
    *raised = 0;
    if (comm == MPI_COMM_NULL)
        return mgerr_set(MPI_ERR_COMM, "mpigpu: %s: the communicator is MPI_COMM_NULL", fn);
    /* Another invalid handle: MPI raises it itself, as for the host call. */
    rc = PMPI_Comm_test_inter(comm, &inter);
    if (rc == MPI_SUCCESS)
        rc = inter ? PMPI_Comm_remote_size(comm, nranks) : PMPI_Comm_size(comm, nranks);
    *raised = rc != MPI_SUCCESS;
    return rc;
}

int mgmpi_check_p2p(const char *fn, int send, int64_t count, MPI_Datatype dt, int peer, int tag,
                    MPI_Comm comm, int *raised)
{
    int n = 0, ub;
    int rc = mgmpi_check_comm(fn, comm, &n, raised);
    if (rc != MPI_SUCCESS)
        return rc;
    if (count < 0)
        return mgerr_set(MPI_ERR_COUNT, "mpigpu: %s: negative count %lld", fn, (long long)count);
    if (dt == MPI_DATATYPE_NULL)
        return mgerr_set(MPI_ERR_TYPE, "mpigpu: %s: the datatype is MPI_DATATYPE_NULL", fn);
    ub = get_tag_ub();
    if ((tag < 0 && (send || tag != MPI_ANY_TAG)) || tag > ub)
        return mgerr_set(MPI_ERR_TAG, "mpigpu: %s: %s tag %d is not in [0, MPI_TAG_UB = %d]%s", fn,
                         send ? "send" : "receive", tag, ub, send ? "" : " nor MPI_ANY_TAG");
    if (peer != MPI_PROC_NULL && (send || peer != MPI_ANY_SOURCE) && (peer < 0 || peer >= n))
        return mgerr_set(MPI_ERR_RANK, "mpigpu: %s: %s rank %d is not in [0, %d), MPI_PROC_NULL%s",
                         fn, send ? "destination" : "source", peer, n,
                         send ? "" : " nor MPI_ANY_SOURCE");
    return MPI_SUCCESS;
}

int mgmpi_check_type(const char *fn, MPI_Datatype dt)
{
    int rc = mgdt_type_check(dt);
    return rc == MPI_SUCCESS ? rc : mgerr_prepend(rc, fn);
}

int mgmpi_check_request(const char *fn, const void *req)
{
    return req ? MPI_SUCCESS
               : mgerr_set(MPI_ERR_ARG, "mpigpu: %s: the request argument is NULL", fn);
}

int mgmpi_raise(MPI_Comm comm, int rc, int raised)
{
    return raised ? rc : mgmpi_error(comm, rc);
}
