/*
 * Calls that do not accept device addresses yet (collectives, one-sided, file
 * I/O) refuse them with MPI_ERR_BUFFER instead of letting MPI fault on the
 * reserved range.  Host buffers go to PMPI unchanged.
 */
#include "config.h"

#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"

#define DEV(buf_, count_, dt_) mgdev_buf_is_device((buf_), (count_), (dt_))

/* k: what the call's buffers hold (mgdev_buf_is_device), the first not
   MGDEV_BUF_HOST. */
static int refuse(const char *fn, int k)
{
    if (k == MGDEV_BUF_SPAN)
        return mgerr_set(MPI_ERR_TYPE,
                         "mpigpu: %s: the datatype's instances span more bytes than an int64 or "
                         "an address holds, and may reach device addresses; nothing was moved",
                         fn);
    return mgerr_set(MPI_ERR_BUFFER, "device buffers are not supported by %s", fn);
}

static int refuse_comm(MPI_Comm comm, const char *fn, int k)
{
    return mgmpi_error(comm, refuse(fn, k));
}

/* Receive sizes of rooted and all-to-all collectives: the bytes of one
   process's part times the group size. */
static MPI_Count group_count(MPI_Comm comm, int count)
{
    int size = 1, inter = 0;
    if (comm == MPI_COMM_NULL)
        return count; /* MPI reports it, once */
    PMPI_Comm_test_inter(comm, &inter);
    if (inter)
        PMPI_Comm_remote_size(comm, &size);
    else
        PMPI_Comm_size(comm, &size);
    return (MPI_Count)count * size;
}

MPIGPU_EXPORT
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    int k = DEV(buffer, count, datatype);
    if (k)
        return refuse_comm(comm, "MPI_Bcast", k);
    return PMPI_Bcast(buffer, count, datatype, root, comm);
}

MPIGPU_EXPORT
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm)
{
    int k = DEV(sendbuf, count, datatype);
    if (!k)
        k = DEV(recvbuf, count, datatype);
    if (k)
        return refuse_comm(comm, "MPI_Reduce", k);
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

MPIGPU_EXPORT
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    int k = DEV(sendbuf, count, datatype);
    if (!k)
        k = DEV(recvbuf, count, datatype);
    if (k)
        return refuse_comm(comm, "MPI_Allreduce", k);
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

MPIGPU_EXPORT
int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int k = DEV(sendbuf, sendcount, sendtype);
    if (!k)
        k = DEV(recvbuf, group_count(comm, recvcount), recvtype);
    if (k)
        return refuse_comm(comm, "MPI_Gather", k);
    return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

MPIGPU_EXPORT
int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int k = DEV(sendbuf, group_count(comm, sendcount), sendtype);
    if (!k)
        k = DEV(recvbuf, recvcount, recvtype);
    if (k)
        return refuse_comm(comm, "MPI_Scatter", k);
    return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

MPIGPU_EXPORT
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int k = DEV(sendbuf, sendcount, sendtype);
    if (!k)
        k = DEV(recvbuf, group_count(comm, recvcount), recvtype);
    if (k)
        return refuse_comm(comm, "MPI_Allgather", k);
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

MPIGPU_EXPORT
int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    int k = DEV(sendbuf, group_count(comm, sendcount), sendtype);
    if (!k)
        k = DEV(recvbuf, group_count(comm, recvcount), recvtype);
    if (k)
        return refuse_comm(comm, "MPI_Alltoall", k);
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}
