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

static int refuse(const char *fn)
{
    return mgerr_set(MPI_ERR_BUFFER, "device buffers are not supported by %s", fn);
}

static int refuse_comm(MPI_Comm comm, const char *fn)
{
    return mgmpi_error(comm, refuse(fn));
}

/* Receive sizes of rooted and all-to-all collectives: the bytes of one
   process's part times the group size. */
static MPI_Count group_count(MPI_Comm comm, int count)
{
    int size = 1, inter = 0;
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
    if (DEV(buffer, count, datatype))
        return refuse_comm(comm, "MPI_Bcast");
    return PMPI_Bcast(buffer, count, datatype, root, comm);
}

MPIGPU_EXPORT
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm)
{
    if (DEV(sendbuf, count, datatype) || DEV(recvbuf, count, datatype))
        return refuse_comm(comm, "MPI_Reduce");
    return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

MPIGPU_EXPORT
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    if (DEV(sendbuf, count, datatype) || DEV(recvbuf, count, datatype))
        return refuse_comm(comm, "MPI_Allreduce");
    return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

MPIGPU_EXPORT
int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (DEV(sendbuf, sendcount, sendtype) || DEV(recvbuf, group_count(comm, recvcount), recvtype))
        return refuse_comm(comm, "MPI_Gather");
    return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

MPIGPU_EXPORT
int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    if (DEV(sendbuf, group_count(comm, sendcount), sendtype) || DEV(recvbuf, recvcount, recvtype))
        return refuse_comm(comm, "MPI_Scatter");
    return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
}

MPIGPU_EXPORT
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (DEV(sendbuf, sendcount, sendtype) || DEV(recvbuf, group_count(comm, recvcount), recvtype))
        return refuse_comm(comm, "MPI_Allgather");
    return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

MPIGPU_EXPORT
int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (DEV(sendbuf, group_count(comm, sendcount), sendtype) ||
        DEV(recvbuf, group_count(comm, recvcount), recvtype))
        return refuse_comm(comm, "MPI_Alltoall");
    return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

MPIGPU_EXPORT
int MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
            int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
            MPI_Win win)
{
    if (DEV(origin_addr, origin_count, origin_datatype)) {
        int rc = refuse("MPI_Put");
        PMPI_Win_call_errhandler(win, rc);
        return rc;
    }
    return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                    target_count, target_datatype, win);
}

MPIGPU_EXPORT
int MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win)
{
    if (DEV(origin_addr, origin_count, origin_datatype)) {
        int rc = refuse("MPI_Get");
        PMPI_Win_call_errhandler(win, rc);
        return rc;
    }
    return PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                    target_count, target_datatype, win);
}

MPIGPU_EXPORT
int MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype datatype,
                   MPI_Status *status)
{
    if (DEV(buf, count, datatype)) {
        int rc = refuse("MPI_File_write");
        PMPI_File_call_errhandler(fh, rc);
        return rc;
    }
    return PMPI_File_write(fh, buf, count, datatype, status);
}

MPIGPU_EXPORT
int MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status)
{
    if (DEV(buf, count, datatype)) {
        int rc = refuse("MPI_File_read");
        PMPI_File_call_errhandler(fh, rc);
        return rc;
    }
    return PMPI_File_read(fh, buf, count, datatype, status);
}
