/*
 * The collective calls: every one of MPI 4.0 that takes a buffer, blocking,
 * nonblocking (I) and persistent (_init), in their int and large-count (_c)
 * forms.  Each describes its arguments to the collective engine
 * (src/coll/coll.h); a call whose significant buffers are all host memory
 * goes to its PMPI twin unchanged (no lock, no allocation), any other runs
 * in the engine.  MPI_Barrier and its forms take no buffer and are not
 * interposed.
 */
#include "config.h"

#include <stdint.h>

#include "coll.h"
#include "mgerr.h"
#include "mgmpi.h"

/* A call on device addresses: the communicator as MPI checks it, then the
   engine; errors raised on the call's communicator (MPI_COMM_WORLD for
   MPI_Reduce_local, which has none). */
static int coll_enter(const mgcoll_call_t *c)
{
    int raised = 0, n = 0, rc = MPI_SUCCESS;
    MPI_Comm comm = c->kind == MGCOLL_REDUCE_LOCAL ? MPI_COMM_WORLD : c->comm;
    if (c->kind != MGCOLL_REDUCE_LOCAL)
        rc = mgmpi_check_comm(c->fn, c->comm, &n, &raised);
    if (rc == MPI_SUCCESS)
        rc = mgcoll_run(c, &raised);
    return mgmpi_raise(comm, rc, raised);
}

MPIGPU_EXPORT
int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Bcast",
                       .kind = MGCOLL_BCAST,
                       .mode = MGCOLL_BLOCKING,
                       .rbuf = buffer,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .root = root,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Bcast(buffer, count, datatype, root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Bcast_c",
                       .kind = MGCOLL_BCAST,
                       .mode = MGCOLL_BLOCKING,
                       .rbuf = buffer,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .root = root,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Bcast_c(buffer, count, datatype, root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
               MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ibcast",
                       .kind = MGCOLL_BCAST,
                       .mode = MGCOLL_NONBLOCKING,
                       .rbuf = buffer,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .root = root,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ibcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ibcast_c",
                       .kind = MGCOLL_BCAST,
                       .mode = MGCOLL_NONBLOCKING,
                       .rbuf = buffer,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .root = root,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ibcast_c(buffer, count, datatype, root, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                   MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Bcast_init",
                       .kind = MGCOLL_BCAST,
                       .mode = MGCOLL_PERSISTENT,
                       .rbuf = buffer,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Bcast_init(buffer, count, datatype, root, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Bcast_init_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                     MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Bcast_init_c",
                       .kind = MGCOLL_BCAST,
                       .mode = MGCOLL_PERSISTENT,
                       .rbuf = buffer,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Bcast_init_c(buffer, count, datatype, root, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Gather",
                       .kind = MGCOLL_GATHER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Gather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Gather_c",
                       .kind = MGCOLL_GATHER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Gather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                             comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Igather",
                       .kind = MGCOLL_GATHER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                            request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Igather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Igather_c",
                       .kind = MGCOLL_GATHER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Igather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                              comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                    MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Gather_init",
                       .kind = MGCOLL_GATHER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Gather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Gather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Gather_init_c",
                       .kind = MGCOLL_GATHER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Gather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                  comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Gatherv",
                       .kind = MGCOLL_GATHERV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                            root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                  int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Gatherv_c",
                       .kind = MGCOLL_GATHERV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Gatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                              root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Igatherv",
                       .kind = MGCOLL_GATHERV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                             root, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Igatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                   int root, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Igatherv_c",
                       .kind = MGCOLL_GATHERV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Igatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                               root, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                     MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Gatherv_init",
                       .kind = MGCOLL_GATHERV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Gatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, root, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Gatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Gatherv_init_c",
                       .kind = MGCOLL_GATHERV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Gatherv_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                   recvtype, root, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Scatter",
                       .kind = MGCOLL_SCATTER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Scatter_c",
                       .kind = MGCOLL_SCATTER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Scatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                              comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iscatter",
                       .kind = MGCOLL_SCATTER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm,
                             request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iscatter_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                   MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iscatter_c",
                       .kind = MGCOLL_SCATTER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Iscatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                               comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                     MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Scatter_init",
                       .kind = MGCOLL_SCATTER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Scatter_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                 comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scatter_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                       MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Scatter_init_c",
                       .kind = MGCOLL_SCATTER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Scatter_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                   comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Scatterv",
                       .kind = MGCOLL_SCATTERV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = displs,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                             root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                   MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Scatterv_c",
                       .kind = MGCOLL_SCATTERV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = displs,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Scatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                               root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iscatterv",
                       .kind = MGCOLL_SCATTERV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = displs,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                              root, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iscatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iscatterv_c",
                       .kind = MGCOLL_SCATTERV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = displs,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Iscatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                                root, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Scatterv_init",
                       .kind = MGCOLL_SCATTERV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = displs,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Scatterv_init(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                  recvtype, root, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scatterv_init_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                        MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Scatterv_init_c",
                       .kind = MGCOLL_SCATTERV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = displs,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Scatterv_init_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                    recvtype, root, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Allgather",
                       .kind = MGCOLL_ALLGATHER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Allgather_c",
                       .kind = MGCOLL_ALLGATHER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iallgather",
                       .kind = MGCOLL_ALLGATHER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Iallgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                               request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iallgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                     MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iallgather_c",
                       .kind = MGCOLL_ALLGATHER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Iallgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                 request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Allgather_init",
                       .kind = MGCOLL_ALLGATHER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                   info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Allgather_init_c",
                       .kind = MGCOLL_ALLGATHER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Allgather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                     comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Allgatherv",
                       .kind = MGCOLL_ALLGATHERV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                               comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                     MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Allgatherv_c",
                       .kind = MGCOLL_ALLGATHERV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iallgatherv",
                       .kind = MGCOLL_ALLGATHERV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iallgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iallgatherv_c",
                       .kind = MGCOLL_ALLGATHERV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Iallgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                  recvtype, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Allgatherv_init",
                       .kind = MGCOLL_ALLGATHERV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                    recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Allgatherv_init_c",
                       .kind = MGCOLL_ALLGATHERV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Allgatherv_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                      recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoall",
                       .kind = MGCOLL_ALLTOALL,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoall_c",
                       .kind = MGCOLL_ALLTOALL,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ialltoall",
                       .kind = MGCOLL_ALLTOALL,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ialltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                              request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ialltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ialltoall_c",
                       .kind = MGCOLL_ALLTOALL,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ialltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                      MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoall_init",
                       .kind = MGCOLL_ALLTOALL,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                  info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoall_init_c",
                       .kind = MGCOLL_ALLTOALL,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoallv",
                       .kind = MGCOLL_ALLTOALLV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoallv_c",
                       .kind = MGCOLL_ALLTOALLV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                rdispls, recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ialltoallv",
                       .kind = MGCOLL_ALLTOALLV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                               recvtype, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ialltoallv_c",
                       .kind = MGCOLL_ALLTOALLV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ialltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                 rdispls, recvtype, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                       MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoallv_init",
                       .kind = MGCOLL_ALLTOALLV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                   rdispls, recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoallv_init_c",
                       .kind = MGCOLL_ALLTOALLV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                     rdispls, recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                  const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoallw",
                       .kind = MGCOLL_ALLTOALLW,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
                              recvtypes, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoallw_c",
                       .kind = MGCOLL_ALLTOALLW,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                rdispls, recvtypes, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                   MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ialltoallw",
                       .kind = MGCOLL_ALLTOALLW,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                               rdispls, recvtypes, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ialltoallw_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     const MPI_Datatype sendtypes[], void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                     MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ialltoallw_c",
                       .kind = MGCOLL_ALLTOALLW,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ialltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                 rdispls, recvtypes, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                       const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                       MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoallw_init",
                       .kind = MGCOLL_ALLTOALLW,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                   rdispls, recvtypes, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[], void *recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                         MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Alltoallw_init_c",
                       .kind = MGCOLL_ALLTOALLW,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Alltoallw_init_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                     rdispls, recvtypes, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce",
                       .kind = MGCOLL_REDUCE,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .root = root,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_c",
                       .kind = MGCOLL_REDUCE,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .root = root,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                int root, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ireduce",
                       .kind = MGCOLL_REDUCE,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .root = root,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ireduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ireduce_c",
                       .kind = MGCOLL_REDUCE,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .root = root,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ireduce_c(sendbuf, recvbuf, count, datatype, op, root, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_init",
                       .kind = MGCOLL_REDUCE,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_init(sendbuf, recvbuf, count, datatype, op, root, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_init_c",
                       .kind = MGCOLL_REDUCE,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .root = root,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_init_c(sendbuf, recvbuf, count, datatype, op, root, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Allreduce",
                       .kind = MGCOLL_ALLREDUCE,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Allreduce_c",
                       .kind = MGCOLL_ALLREDUCE,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iallreduce",
                       .kind = MGCOLL_ALLREDUCE,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iallreduce_c",
                       .kind = MGCOLL_ALLREDUCE,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Iallreduce_c(sendbuf, recvbuf, count, datatype, op, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Allreduce_init",
                       .kind = MGCOLL_ALLREDUCE,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Allreduce_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Allreduce_init_c",
                       .kind = MGCOLL_ALLREDUCE,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Allreduce_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_scatter",
                       .kind = MGCOLL_REDUCE_SCATTER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_scatter_c",
                       .kind = MGCOLL_REDUCE_SCATTER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ireduce_scatter",
                       .kind = MGCOLL_REDUCE_SCATTER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ireduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ireduce_scatter_c",
                       .kind = MGCOLL_REDUCE_SCATTER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ireduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_scatter_init",
                       .kind = MGCOLL_REDUCE_SCATTER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_scatter_init(sendbuf, recvbuf, recvcounts, datatype, op, comm, info,
                                        request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_scatter_init_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                              MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_scatter_init_c",
                       .kind = MGCOLL_REDUCE_SCATTER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_scatter_init_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, info,
                                          request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_scatter_block",
                       .kind = MGCOLL_REDUCE_SCATTER_BLOCK,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_scatter_block_c",
                       .kind = MGCOLL_REDUCE_SCATTER_BLOCK,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ireduce_scatter_block",
                       .kind = MGCOLL_REDUCE_SCATTER_BLOCK,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ireduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ireduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ireduce_scatter_block_c",
                       .kind = MGCOLL_REDUCE_SCATTER_BLOCK,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ireduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm,
                                            request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_scatter_block_init",
                       .kind = MGCOLL_REDUCE_SCATTER_BLOCK,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_scatter_block_init(sendbuf, recvbuf, recvcount, datatype, op, comm, info,
                                              request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_scatter_block_init_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_scatter_block_init_c",
                       .kind = MGCOLL_REDUCE_SCATTER_BLOCK,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_scatter_block_init_c(sendbuf, recvbuf, recvcount, datatype, op, comm,
                                                info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Scan",
                       .kind = MGCOLL_SCAN,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
               MPI_Op op, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Scan_c",
                       .kind = MGCOLL_SCAN,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Scan_c(sendbuf, recvbuf, count, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
              MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iscan",
                       .kind = MGCOLL_SCAN,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Iscan(sendbuf, recvbuf, count, datatype, op, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iscan_c",
                       .kind = MGCOLL_SCAN,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Iscan_c(sendbuf, recvbuf, count, datatype, op, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Scan_init",
                       .kind = MGCOLL_SCAN,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Scan_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Scan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Scan_init_c",
                       .kind = MGCOLL_SCAN,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Scan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Exscan",
                       .kind = MGCOLL_EXSCAN,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Exscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Exscan_c",
                       .kind = MGCOLL_EXSCAN,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Exscan_c(sendbuf, recvbuf, count, datatype, op, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iexscan",
                       .kind = MGCOLL_EXSCAN,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Iexscan(sendbuf, recvbuf, count, datatype, op, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Iexscan_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Iexscan_c",
                       .kind = MGCOLL_EXSCAN,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Iexscan_c(sendbuf, recvbuf, count, datatype, op, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Exscan_init",
                       .kind = MGCOLL_EXSCAN,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Exscan_init(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Exscan_init_c(const void *sendbuf, void *recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Exscan_init_c",
                       .kind = MGCOLL_EXSCAN,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .rbuf = recvbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Exscan_init_c(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype datatype, MPI_Op op)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_local",
                       .kind = MGCOLL_REDUCE_LOCAL,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = inbuf,
                       .rbuf = inoutbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .comm = MPI_COMM_NULL};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_local(inbuf, inoutbuf, count, datatype, op);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Reduce_local_c(const void *inbuf, void *inoutbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op)
{
    mgcoll_call_t c = {.fn = "MPI_Reduce_local_c",
                       .kind = MGCOLL_REDUCE_LOCAL,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = inbuf,
                       .rbuf = inoutbuf,
                       .scount = count,
                       .rcount = count,
                       .stype = datatype,
                       .rtype = datatype,
                       .op = op,
                       .wide_counts = 1,
                       .wide_displs = 1,
                       .comm = MPI_COMM_NULL};
    if (!mgcoll_device(&c))
        return PMPI_Reduce_local_c(inbuf, inoutbuf, count, datatype, op);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_allgather",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                       comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_allgather_c",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHER,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                         comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_allgather",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                        comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_allgather_c",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHER,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                          recvtype, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_allgather_init",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_allgather_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                            recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_allgather_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_allgather_init_c",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHER,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_allgather_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                              recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int displs[],
                            MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_allgatherv",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHERV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                        recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                              MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_allgatherv_c",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHERV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                          recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_allgatherv",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHERV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                         recvtype, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_allgatherv_c",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHERV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                           displs, recvtype, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                 MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_allgatherv_init",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHERV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_allgatherv_init(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                             displs, recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_allgatherv_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, const MPI_Count recvcounts[],
                                   const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                   MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_allgatherv_init_c",
                       .kind = MGCOLL_NEIGHBOR_ALLGATHERV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = displs,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_allgatherv_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                               displs, recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoall",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALL,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                      comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                            MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoall_c",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALL,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                        comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                           MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_alltoall",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALL,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                       comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_alltoall_c",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALL,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                         comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoall_init",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALL,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoall_init(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                           recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                 MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoall_init_c",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALL,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scount = sendcount,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcount = recvcount,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoall_init_c(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                             recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                           MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                           const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoallv",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                       rdispls, recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                             const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                             const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                             MPI_Datatype recvtype, MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoallv_c",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLV,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                         recvcounts, rdispls, recvtype, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_alltoallv",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                        rdispls, recvtype, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                              const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_alltoallv_c",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLV,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                          recvcounts, rdispls, recvtype, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoallv_init",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoallv_init(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                            recvcounts, rdispls, recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                  const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                  const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                  MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoallv_init_c",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLV,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stype = sendtype,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtype = recvtype,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoallv_init_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                              recvcounts, rdispls, recvtype, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                           const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoallw",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLW,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts,
                                       rdispls, recvtypes, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                             const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                             void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                             const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoallw_c",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLW,
                       .mode = MGCOLL_BLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                         recvcounts, rdispls, recvtypes, comm);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_alltoallw",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLW,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .req = request,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                        recvcounts, rdispls, recvtypes, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Ineighbor_alltoallw_c(const void *sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                              void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Ineighbor_alltoallw_c",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLW,
                       .mode = MGCOLL_NONBLOCKING,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Ineighbor_alltoallw_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                          recvcounts, rdispls, recvtypes, comm, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoallw_init(const void *sendbuf, const int sendcounts[],
                                const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[],
                                const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoallw_init",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLW,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoallw_init(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                            recvcounts, rdispls, recvtypes, comm, info, request);
    return coll_enter(&c);
}

MPIGPU_EXPORT
int MPI_Neighbor_alltoallw_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                  const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                  void *recvbuf, const MPI_Count recvcounts[],
                                  const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                  MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    mgcoll_call_t c = {.fn = "MPI_Neighbor_alltoallw_init_c",
                       .kind = MGCOLL_NEIGHBOR_ALLTOALLW,
                       .mode = MGCOLL_PERSISTENT,
                       .sbuf = sendbuf,
                       .scounts = sendcounts,
                       .sdispls = sdispls,
                       .stypes = sendtypes,
                       .rbuf = recvbuf,
                       .rcounts = recvcounts,
                       .rdispls = rdispls,
                       .rtypes = recvtypes,
                       .comm = comm,
                       .info = info,
                       .req = request,
                       .wide_counts = 1,
                       .wide_displs = 1};
    if (!mgcoll_device(&c))
        return PMPI_Neighbor_alltoallw_init_c(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                              recvcounts, rdispls, recvtypes, comm, info, request);
    return coll_enter(&c);
}
