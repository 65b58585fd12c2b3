/*
 * Persistent requests: the *_init calls, MPI_Start and MPI_Startall.  A call
 * on a host buffer (or one that moves nothing) makes a PMPI persistent
 * request; one on a device buffer makes a persistent device operation whose
 * handle is a stand-in request (progress.c).  MPI_Start tells them apart by
 * the request table, so one MPI_Startall may mix them.
 */
#include "config.h"

#include <stdlib.h>

#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"

static char empty[1]; /* stands for a device buffer of which nothing moves */

static int init_pmpi(mgp2p_op_kind_t kind, mgp2p_send_mode_t mode, const void *buf, int count,
                     MPI_Datatype dt, int peer, int tag, MPI_Comm comm, MPI_Request *req)
{
    if (kind == MGP2P_OP_RECV)
        return PMPI_Recv_init((void *)buf, count, dt, peer, tag, comm, req);
    switch (mode) {
    case MGP2P_MODE_SYNC:
        return PMPI_Ssend_init(buf, count, dt, peer, tag, comm, req);
    case MGP2P_MODE_READY:
        return PMPI_Rsend_init(buf, count, dt, peer, tag, comm, req);
    case MGP2P_MODE_BUFFERED:
        return PMPI_Bsend_init(buf, count, dt, peer, tag, comm, req);
    default:
        return PMPI_Send_init(buf, count, dt, peer, tag, comm, req);
    }
}

int mgmpi_init(const char *fn, mgp2p_op_kind_t kind, mgp2p_send_mode_t mode, const void *buf,
               int count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm, MPI_Request *req)
{
    int dev = mgdev_buf_is_device(buf, count, dt), raised = 0;
    if (!dev && (kind == MGP2P_OP_SEND || !mgp2p_host_watch(count, dt, peer)))
        return init_pmpi(kind, mode, buf, count, dt, peer, tag, comm, req);
    /* The checks MPI would make (args.c); commit and span where the type is
       decoded. */
    int rc = mgmpi_check_p2p(fn, kind == MGP2P_OP_SEND, count, dt, peer, tag, comm, &raised);
    if (rc == MPI_SUCCESS)
        rc = mgmpi_check_request(fn, req);
    if (rc != MPI_SUCCESS)
        return mgmpi_raise(comm, rc, raised);
    mgp2p_op_t *op = calloc(1, sizeof(*op));
    if (!op)
        return mgmpi_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
    rc = dev ? mgp2p_op_init(op, kind, fn, buf, count, dt, peer, tag, comm)
             : mgp2p_op_init_host(op, fn, (void *)buf, count, dt, peer, tag, comm);
    if (rc != MPI_SUCCESS) {
        rc = mgmpi_error(comm, rc);
        goto free_op;
    }
    if (mgp2p_op_trivial(op)) {
        rc = init_pmpi(kind, mode, empty, count, dt, peer, tag, comm, req);
        goto free_op;
    }
    op->mode = mode;
    mgp2p_lock();
    rc = mgp2p_op_persist(op, req);
    mgp2p_unlock();
    if (rc != MPI_SUCCESS)
        goto free_op;
    return MPI_SUCCESS;
free_op:
    mgp2p_op_free(op);
    return rc;
}

MPIGPU_EXPORT
int MPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                  MPI_Comm comm, MPI_Request *request)
{
    return mgmpi_init("MPI_Send_init", MGP2P_OP_SEND, MGP2P_MODE_STD, buf, count, datatype, dest,
                      tag, comm, request);
}

MPIGPU_EXPORT
int MPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    return mgmpi_init("MPI_Ssend_init", MGP2P_OP_SEND, MGP2P_MODE_SYNC, buf, count, datatype, dest,
                      tag, comm, request);
}

MPIGPU_EXPORT
int MPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    return mgmpi_init("MPI_Rsend_init", MGP2P_OP_SEND, MGP2P_MODE_READY, buf, count, datatype, dest,
                      tag, comm, request);
}

MPIGPU_EXPORT
int MPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                   MPI_Comm comm, MPI_Request *request)
{
    return mgmpi_init("MPI_Bsend_init", MGP2P_OP_SEND, MGP2P_MODE_BUFFERED, buf, count, datatype,
                      dest, tag, comm, request);
}

MPIGPU_EXPORT
int MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                  MPI_Request *request)
{
    return mgmpi_init("MPI_Recv_init", MGP2P_OP_RECV, MGP2P_MODE_STD, buf, count, datatype, source,
                      tag, comm, request);
}

MPIGPU_EXPORT
int MPI_Start(MPI_Request *request)
{
    if (__builtin_expect(!mgp2p_req_any(), 1)) /* no lookup can find it: no lock */
        return PMPI_Start(request);
    mgp2p_lock();
    mgp2p_op_t *op = request ? mgp2p_req_lookup(*request) : NULL;
    if (!op) {
        mgp2p_unlock();
        return PMPI_Start(request);
    }
    MPI_Comm comm = op->comm;
    int rc = mgp2p_op_restart(op);
    mgp2p_unlock();
    return rc == MPI_SUCCESS ? rc : mgmpi_error(comm, rc);
}

MPIGPU_EXPORT
int MPI_Startall(int count, MPI_Request array_of_requests[])
{
    int rc = MPI_SUCCESS;
    for (int i = 0; i < count && rc == MPI_SUCCESS; i++)
        rc = MPI_Start(&array_of_requests[i]);
    return rc;
}
