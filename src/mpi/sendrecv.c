/*
 * The interposed point-to-point calls.  A call whose buffer is a host address
 * goes to PMPI unchanged; one with a device address becomes a device operation
 * (p2p.c), blocking or behind a generalized request (request.c).
 */
#include "config.h"

#include <stdlib.h>

#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"

static char empty[1]; /* stands for a device buffer of which nothing moves */

#define DEV(buf_, count_, dt_) mgdev_buf_is_device((buf_), (count_), (dt_))
/* A host receive that a chunked message could match (mgp2p_host_watch). */
#define WATCH(count_, dt_, peer_) mgp2p_host_watch((count_), (dt_), (peer_))
/* A host receive that would take a message a probe received early. */
#define EARLY(peer_, tag_, comm_) mgp2p_early_waiting((peer_), (tag_), (comm_), NULL)

static int send_pmpi(mgp2p_send_mode_t mode, const void *buf, int count, MPI_Datatype dt, int dest,
                     int tag, MPI_Comm comm, MPI_Request *req)
{
    switch (mode) {
    case MGP2P_MODE_SYNC:
        return req ? PMPI_Issend(buf, count, dt, dest, tag, comm, req)
                   : PMPI_Ssend(buf, count, dt, dest, tag, comm);
    case MGP2P_MODE_READY:
        return req ? PMPI_Irsend(buf, count, dt, dest, tag, comm, req)
                   : PMPI_Rsend(buf, count, dt, dest, tag, comm);
    case MGP2P_MODE_BUFFERED:
        return req ? PMPI_Ibsend(buf, count, dt, dest, tag, comm, req)
                   : PMPI_Bsend(buf, count, dt, dest, tag, comm);
    default:
        return req ? PMPI_Isend(buf, count, dt, dest, tag, comm, req)
                   : PMPI_Send(buf, count, dt, dest, tag, comm);
    }
}

/* Start op: blocking when req is NULL (op is then the caller's), else a
   generalized request in *req (op is then heap memory handed over). */
static int op_run(mgp2p_op_t *op, MPI_Request *req)
{
    if (!req && mgp2p_op_blocking(op))
        return op->err == MPI_SUCCESS || op->raised ? op->err : mgmpi_error(op->comm, op->err);
    int rc = mgp2p_op_start(op, req != NULL);
    if (rc != MPI_SUCCESS)
        return rc;
    if (req) {
        *req = op->greq;
        mgp2p_progress(); /* launch the first piece now */
        return MPI_SUCCESS;
    }
    mgp2p_op_wait(op);
    return op->err == MPI_SUCCESS || op->raised ? op->err : mgmpi_error(op->comm, op->err);
}

static int send_common(const char *fn, mgp2p_send_mode_t mode, const void *buf, int count,
                       MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req,
                       const char *packed)
{
    mgp2p_op_t local = {0}, *op = &local;
    if (req && !(op = calloc(1, sizeof(*op))))
        return mgmpi_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
    int rc = mgp2p_op_init(op, MGP2P_OP_SEND, fn, buf, count, dt, dest, tag, comm);
    if (rc == MPI_SUCCESS && mgp2p_op_trivial(op)) {
        rc = send_pmpi(mode, empty, count, dt, dest, tag, comm, req);
        goto fn_free;
    }
    if (rc != MPI_SUCCESS) {
        rc = mgmpi_error(comm, rc);
        goto fn_free;
    }
    op->mode = mode;
    op->packed = packed;
    return op_run(op, req);
fn_free:
    if (op != &local)
        free(op);
    return rc;
}

/* A receive into device memory (dev, as the caller classified buf) or into
   host memory that a chunked message could match; message is the matched
   message of MPI_Mrecv/MPI_Imrecv (taken over and set to MPI_MESSAGE_NULL) or
   NULL. */
static int recv_common(const char *fn, int dev, void *buf, int count, MPI_Datatype dt, int source,
                       int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status,
                       MPI_Request *req)
{
    mgp2p_op_t local = {0}, *op = &local;
    if (req && !(op = calloc(1, sizeof(*op))))
        return mgmpi_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
    int rc = dev ? mgp2p_op_init(op, MGP2P_OP_RECV, fn, buf, count, dt, source, tag, comm)
                 : mgp2p_op_init_host(op, fn, buf, count, dt, source, tag, comm);
    /* A receive of nothing still takes a message a probe received early
       (a truncation, whose pieces the operation drains). */
    if (rc == MPI_SUCCESS && mgp2p_op_trivial(op) &&
        (source == MPI_PROC_NULL || !mgp2p_early_waiting(source, tag, comm, message))) {
        if (message)
            rc = req ? PMPI_Imrecv(empty, count, dt, message, req)
                     : PMPI_Mrecv(empty, count, dt, message, status);
        else
            rc = req ? PMPI_Irecv(empty, count, dt, source, tag, comm, req)
                     : PMPI_Recv(empty, count, dt, source, tag, comm, status);
        goto fn_free;
    }
    if (rc != MPI_SUCCESS) {
        rc = mgmpi_error(comm, rc);
        goto fn_free;
    }
    if (message) {
        op->matched = 1;
        op->message = *message;
        *message = MPI_MESSAGE_NULL;
    }
    rc = op_run(op, req);
    if (!req)
        mgp2p_op_status(op, status);
    return rc;
fn_free:
    if (op != &local)
        free(op);
    return rc;
}

/* The eight send calls: a host buffer goes to PMPI unchanged. */
MPIGPU_EXPORT
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Send(buf, count, datatype, dest, tag, comm);
    return send_common("MPI_Send", MGP2P_MODE_STD, buf, count, datatype, dest, tag, comm, NULL,
                       NULL);
}

MPIGPU_EXPORT
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Ssend(buf, count, datatype, dest, tag, comm);
    return send_common("MPI_Ssend", MGP2P_MODE_SYNC, buf, count, datatype, dest, tag, comm, NULL,
                       NULL);
}

MPIGPU_EXPORT
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Rsend(buf, count, datatype, dest, tag, comm);
    return send_common("MPI_Rsend", MGP2P_MODE_READY, buf, count, datatype, dest, tag, comm, NULL,
                       NULL);
}

MPIGPU_EXPORT
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Bsend(buf, count, datatype, dest, tag, comm);
    return send_common("MPI_Bsend", MGP2P_MODE_BUFFERED, buf, count, datatype, dest, tag, comm,
                       NULL, NULL);
}

MPIGPU_EXPORT
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
    return send_common("MPI_Isend", MGP2P_MODE_STD, buf, count, datatype, dest, tag, comm, request,
                       NULL);
}

MPIGPU_EXPORT
int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Issend(buf, count, datatype, dest, tag, comm, request);
    return send_common("MPI_Issend", MGP2P_MODE_SYNC, buf, count, datatype, dest, tag, comm,
                       request, NULL);
}

MPIGPU_EXPORT
int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Irsend(buf, count, datatype, dest, tag, comm, request);
    return send_common("MPI_Irsend", MGP2P_MODE_READY, buf, count, datatype, dest, tag, comm,
                       request, NULL);
}

MPIGPU_EXPORT
int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Ibsend(buf, count, datatype, dest, tag, comm, request);
    return send_common("MPI_Ibsend", MGP2P_MODE_BUFFERED, buf, count, datatype, dest, tag, comm,
                       request, NULL);
}

MPIGPU_EXPORT
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, source) && !EARLY(source, tag, comm)) {
        if (!mgp2p_progress_busy())
            return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
        /* Device operations may need progress for this message to come. */
        MPI_Request r;
        int rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, &r);
        return rc != MPI_SUCCESS ? rc : MPI_Wait(&r, status);
    }
    return recv_common("MPI_Recv", dev, buf, count, datatype, source, tag, comm, NULL, status,
                       NULL);
}

MPIGPU_EXPORT
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, source) && !EARLY(source, tag, comm))
        return PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
    return recv_common("MPI_Irecv", dev, buf, count, datatype, source, tag, comm, NULL, NULL,
                       request);
}

MPIGPU_EXPORT
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status)
{
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    if (!DEV(sendbuf, sendcount, sendtype) && !DEV(recvbuf, recvcount, recvtype) &&
        !WATCH(recvcount, recvtype, source) && !EARLY(source, recvtag, comm) &&
        !mgp2p_progress_busy())
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                             recvtype, source, recvtag, comm, status);
    int rc = MPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &r[0]);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = MPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &r[1]);
    if (rc != MPI_SUCCESS) {
        MPI_Cancel(&r[0]);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        return rc;
    }
    rc = MPI_Waitall(2, r, st);
    if (rc == MPI_ERR_IN_STATUS)
        rc = st[0].MPI_ERROR != MPI_SUCCESS ? st[0].MPI_ERROR : st[1].MPI_ERROR;
    if (status != MPI_STATUS_IGNORE)
        *status = st[0];
    return rc;
}

MPIGPU_EXPORT
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    const char *fn = "MPI_Sendrecv_replace";
    mgp2p_op_t op = {0};
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    char *packed = NULL;

    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, source) && !EARLY(source, recvtag, comm))
        return PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                     status);
    /* The packed copy of what goes out is taken before anything comes in. */
    int rc = dev ? mgp2p_op_init(&op, MGP2P_OP_SEND, fn, buf, count, datatype, dest, sendtag, comm)
                 : mgp2p_op_init_host(&op, fn, buf, count, datatype, source, recvtag, comm);
    MG_CHECK(rc, fn_fail);
    if (!mgp2p_op_trivial(&op)) {
        if (!(packed = malloc((size_t)op.n)))
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory (%lld bytes)", fn,
                    (long long)op.n);
        if (dev)
            rc = mgp2p_op_pack_all(&op, packed);
        else
            rc = mgpk_host_pack(op.pk, op.type, buf, packed, 0, op.n, 0);
        MG_CHECK(rc, fn_fail);
    }
    if (!dev) {
        rc = mgdt_type_twin(op.type, datatype, &op.twin);
        MG_CHECK(rc, fn_fail);
    }
    rc = recv_common(fn, dev, buf, count, datatype, source, recvtag, comm, NULL, NULL, &r[0]);
    if (rc != MPI_SUCCESS)
        goto fn_exit; /* raised */
    if (dev)
        rc = send_common(fn, MGP2P_MODE_STD, buf, count, datatype, dest, sendtag, comm, &r[1],
                         packed);
    else
        rc = PMPI_Isend(packed, count, op.twin, dest, sendtag, comm, &r[1]);
    if (rc != MPI_SUCCESS) {
        MPI_Cancel(&r[0]);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        goto fn_exit;
    }
    rc = MPI_Waitall(2, r, st);
    if (rc == MPI_ERR_IN_STATUS)
        rc = st[0].MPI_ERROR != MPI_SUCCESS ? st[0].MPI_ERROR : st[1].MPI_ERROR;
    if (status != MPI_STATUS_IGNORE)
        *status = st[0];
fn_exit:
    free(packed);
    return rc;
fn_fail:
    rc = mgmpi_error(comm, rc);
    goto fn_exit;
}

MPIGPU_EXPORT
int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    int flag = 0;
    return mgp2p_probe(source, tag, comm, 1, &flag, NULL, status);
}

MPIGPU_EXPORT
int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    return mgp2p_probe(source, tag, comm, 0, flag, NULL, status);
}

MPIGPU_EXPORT
int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    int flag = 0;
    return mgp2p_probe(source, tag, comm, 1, &flag, message, status);
}

MPIGPU_EXPORT
int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status)
{
    return mgp2p_probe(source, tag, comm, 0, flag, message, status);
}

MPIGPU_EXPORT
int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
    MPI_Comm comm = mgp2p_message_take(*message);
    int peer = *message == MPI_MESSAGE_NO_PROC ? MPI_PROC_NULL : MPI_ANY_SOURCE;
    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, peer) && !mgp2p_early_is_handle(*message)) {
        if (!mgp2p_progress_busy())
            return PMPI_Mrecv(buf, count, datatype, message, status);
        MPI_Request r;
        int rc = PMPI_Imrecv(buf, count, datatype, message, &r);
        return rc != MPI_SUCCESS ? rc : MPI_Wait(&r, status);
    }
    return recv_common("MPI_Mrecv", dev, buf, count, datatype, peer, MPI_ANY_TAG, comm, message,
                       status, NULL);
}

MPIGPU_EXPORT
int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
               MPI_Request *request)
{
    MPI_Comm comm = mgp2p_message_take(*message);
    int peer = *message == MPI_MESSAGE_NO_PROC ? MPI_PROC_NULL : MPI_ANY_SOURCE;
    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, peer) && !mgp2p_early_is_handle(*message))
        return PMPI_Imrecv(buf, count, datatype, message, request);
    return recv_common("MPI_Imrecv", dev, buf, count, datatype, peer, MPI_ANY_TAG, comm, message,
                       NULL, request);
}
