/*
 * The large-count (MPI-4 "_c") forms of the point-to-point calls.  A host
 * send goes to PMPI_*_c unchanged, a host receive whose count fits an int to
 * the int form's code (which may have to run it, sendrecv.c).  A device
 * buffer goes to the int form's code under the _c name (mgmpi_send and the
 * rest, so the same checks, operation, protocol and request handling, and
 * messages naming the call made) when the count fits an int; a larger count
 * is refused with MPI_ERR_COUNT, after the checks MPI makes first and before
 * anything moves, instead of letting MPI fault on the device address.  (The
 * packed bytes of a message may exceed INT_MAX: the protocol posts them with
 * the _c forms.)
 */
#include "config.h"

#include <limits.h>

#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"

#define DEV(buf_, count_, dt_) mgdev_buf_is_device((buf_), (count_), (dt_))

static int too_big(MPI_Comm comm, const char *fn, MPI_Count count)
{
    return mgmpi_error(comm, mgerr_set(MPI_ERR_COUNT,
                                       "mpigpu: %s: count %lld of a device buffer is larger than "
                                       "an int; nothing was sent or received",
                                       fn, (long long)count));
}

/* The same after the checks MPI makes first (args.c): a send (send 1) or
   receive on comm. */
static int too_big_p2p(const char *fn, int send, MPI_Count count, MPI_Datatype dt, int peer,
                       int tag, MPI_Comm comm)
{
    int raised = 0;
    int rc = mgmpi_check_p2p(fn, send, count, dt, peer, tag, comm, &raised);
    if (rc == MPI_SUCCESS)
        rc = mgmpi_check_type(fn, dt);
    return rc != MPI_SUCCESS ? mgmpi_raise(comm, rc, raised) : too_big(comm, fn, count);
}

#define FITS(count_) ((count_) <= INT_MAX)

/* A device send of fn (mgmpi_send's mode, nb and request), or its
   refusal when the count does not fit an int. */
static int send_c(const char *fn, mgp2p_send_mode_t mode, const void *buf, MPI_Count count,
                  MPI_Datatype dt, int dest, int tag, MPI_Comm comm, int nb, MPI_Request *request)
{
    return FITS(count) ? mgmpi_send(fn, mode, buf, (int)count, dt, dest, tag, comm, nb, request)
                       : too_big_p2p(fn, 1, count, dt, dest, tag, comm);
}

/* The same for a persistent send (mgmpi_init). */
static int send_init_c(const char *fn, mgp2p_send_mode_t mode, const void *buf, MPI_Count count,
                       MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *request)
{
    return FITS(count)
               ? mgmpi_init(fn, MGP2P_OP_SEND, mode, buf, (int)count, dt, dest, tag, comm, request)
               : too_big_p2p(fn, 1, count, dt, dest, tag, comm);
}

/* Send-side calls without and with a request (I and _init forms). */
MPIGPU_EXPORT
int MPI_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
               MPI_Comm comm)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Send_c(buf, count, datatype, dest, tag, comm);
    return send_c("MPI_Send_c", MGP2P_MODE_STD, buf, count, datatype, dest, tag, comm, 0, NULL);
}

MPIGPU_EXPORT
int MPI_Ssend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Ssend_c(buf, count, datatype, dest, tag, comm);
    return send_c("MPI_Ssend_c", MGP2P_MODE_SYNC, buf, count, datatype, dest, tag, comm, 0, NULL);
}

MPIGPU_EXPORT
int MPI_Rsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Rsend_c(buf, count, datatype, dest, tag, comm);
    return send_c("MPI_Rsend_c", MGP2P_MODE_READY, buf, count, datatype, dest, tag, comm, 0, NULL);
}

MPIGPU_EXPORT
int MPI_Bsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Bsend_c(buf, count, datatype, dest, tag, comm);
    return send_c("MPI_Bsend_c", MGP2P_MODE_BUFFERED, buf, count, datatype, dest, tag, comm, 0,
                  NULL);
}

MPIGPU_EXPORT
int MPI_Isend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                MPI_Comm comm, MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Isend_c(buf, count, datatype, dest, tag, comm, request);
    return send_c("MPI_Isend_c", MGP2P_MODE_STD, buf, count, datatype, dest, tag, comm, 1, request);
}

MPIGPU_EXPORT
int MPI_Issend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Issend_c(buf, count, datatype, dest, tag, comm, request);
    return send_c("MPI_Issend_c", MGP2P_MODE_SYNC, buf, count, datatype, dest, tag, comm, 1,
                  request);
}

MPIGPU_EXPORT
int MPI_Irsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Irsend_c(buf, count, datatype, dest, tag, comm, request);
    return send_c("MPI_Irsend_c", MGP2P_MODE_READY, buf, count, datatype, dest, tag, comm, 1,
                  request);
}

MPIGPU_EXPORT
int MPI_Ibsend_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Ibsend_c(buf, count, datatype, dest, tag, comm, request);
    return send_c("MPI_Ibsend_c", MGP2P_MODE_BUFFERED, buf, count, datatype, dest, tag, comm, 1,
                  request);
}

MPIGPU_EXPORT
int MPI_Send_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Send_init_c(buf, count, datatype, dest, tag, comm, request);
    return send_init_c("MPI_Send_init_c", MGP2P_MODE_STD, buf, count, datatype, dest, tag, comm,
                       request);
}

MPIGPU_EXPORT
int MPI_Ssend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Ssend_init_c(buf, count, datatype, dest, tag, comm, request);
    return send_init_c("MPI_Ssend_init_c", MGP2P_MODE_SYNC, buf, count, datatype, dest, tag, comm,
                       request);
}

MPIGPU_EXPORT
int MPI_Rsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Rsend_init_c(buf, count, datatype, dest, tag, comm, request);
    return send_init_c("MPI_Rsend_init_c", MGP2P_MODE_READY, buf, count, datatype, dest, tag, comm,
                       request);
}

MPIGPU_EXPORT
int MPI_Bsend_init_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm, MPI_Request *request)
{
    if (!DEV(buf, count, datatype))
        return PMPI_Bsend_init_c(buf, count, datatype, dest, tag, comm, request);
    return send_init_c("MPI_Bsend_init_c", MGP2P_MODE_BUFFERED, buf, count, datatype, dest, tag,
                       comm, request);
}

/* Receive-side calls go to the int form whenever the count fits, host
   buffers too: a host receive may have to take a chunked message or one that
   a probe received early (sendrecv.c). */
MPIGPU_EXPORT
int MPI_Irecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                MPI_Comm comm, MPI_Request *request)
{
    if (FITS(count))
        return mgmpi_recv("MPI_Irecv_c", buf, (int)count, datatype, source, tag, comm, NULL, 1,
                          request);
    if (!DEV(buf, count, datatype))
        return PMPI_Irecv_c(buf, count, datatype, source, tag, comm, request);
    return too_big_p2p("MPI_Irecv_c", 0, count, datatype, source, tag, comm);
}

MPIGPU_EXPORT
int MPI_Recv_init_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    if (FITS(count))
        return mgmpi_init("MPI_Recv_init_c", MGP2P_OP_RECV, MGP2P_MODE_STD, buf, (int)count,
                          datatype, source, tag, comm, request);
    if (!DEV(buf, count, datatype))
        return PMPI_Recv_init_c(buf, count, datatype, source, tag, comm, request);
    return too_big_p2p("MPI_Recv_init_c", 0, count, datatype, source, tag, comm);
}

MPIGPU_EXPORT
int MPI_Recv_c(void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
               MPI_Comm comm, MPI_Status *status)
{
    if (FITS(count))
        return mgmpi_recv("MPI_Recv_c", buf, (int)count, datatype, source, tag, comm, status, 0,
                          NULL);
    if (!DEV(buf, count, datatype))
        return PMPI_Recv_c(buf, count, datatype, source, tag, comm, status);
    return too_big_p2p("MPI_Recv_c", 0, count, datatype, source, tag, comm);
}

MPIGPU_EXPORT
int MPI_Mrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,
                MPI_Status *status)
{
    if (FITS(count))
        return mgmpi_mrecv("MPI_Mrecv_c", buf, (int)count, datatype, message, status, 0, NULL);
    if (!DEV(buf, count, datatype))
        return PMPI_Mrecv_c(buf, count, datatype, message, status);
    return too_big(MPI_COMM_WORLD, "MPI_Mrecv_c", count);
}

MPIGPU_EXPORT
int MPI_Imrecv_c(void *buf, MPI_Count count, MPI_Datatype datatype, MPI_Message *message,
                 MPI_Request *request)
{
    if (FITS(count))
        return mgmpi_mrecv("MPI_Imrecv_c", buf, (int)count, datatype, message, NULL, 1, request);
    if (!DEV(buf, count, datatype))
        return PMPI_Imrecv_c(buf, count, datatype, message, request);
    return too_big(MPI_COMM_WORLD, "MPI_Imrecv_c", count);
}

MPIGPU_EXPORT
int MPI_Sendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                   int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    if (FITS(sendcount) && FITS(recvcount))
        return mgmpi_sendrecv("MPI_Sendrecv_c", sendbuf, (int)sendcount, sendtype, dest, sendtag,
                              recvbuf, (int)recvcount, recvtype, source, recvtag, comm, status);
    if (!DEV(sendbuf, sendcount, sendtype) && !DEV(recvbuf, recvcount, recvtype))
        return PMPI_Sendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                               recvtype, source, recvtag, comm, status);
    return too_big(comm, "MPI_Sendrecv_c", FITS(sendcount) ? recvcount : sendcount);
}

MPIGPU_EXPORT
int MPI_Isendrecv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, int dest,
                    int sendtag, void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                    int source, int recvtag, MPI_Comm comm, MPI_Request *request)
{
    if (!request)
        return mgmpi_error(comm, mgmpi_check_request("MPI_Isendrecv_c", request));
    if (FITS(sendcount) && FITS(recvcount))
        return mgmpi_isendrecv("MPI_Isendrecv_c", sendbuf, (int)sendcount, sendtype, dest, sendtag,
                               recvbuf, (int)recvcount, recvtype, source, recvtag, comm, NULL,
                               request);
    if (!DEV(sendbuf, sendcount, sendtype) && !DEV(recvbuf, recvcount, recvtype))
        return PMPI_Isendrecv_c(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                                recvtype, source, recvtag, comm, request);
    return too_big(comm, "MPI_Isendrecv_c", FITS(sendcount) ? recvcount : sendcount);
}

MPIGPU_EXPORT
int MPI_Isendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                            int sendtag, int source, int recvtag, MPI_Comm comm,
                            MPI_Request *request)
{
    if (!request)
        return mgmpi_error(comm, mgmpi_check_request("MPI_Isendrecv_replace_c", request));
    if (FITS(count))
        return mgmpi_isendrecv_replace("MPI_Isendrecv_replace_c", buf, (int)count, datatype, dest,
                                       sendtag, source, recvtag, comm, NULL, request);
    if (!DEV(buf, count, datatype))
        return PMPI_Isendrecv_replace_c(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                        request);
    return too_big(comm, "MPI_Isendrecv_replace_c", count);
}

MPIGPU_EXPORT
int MPI_Sendrecv_replace_c(void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int sendtag,
                           int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    if (FITS(count))
        return mgmpi_sendrecv_replace("MPI_Sendrecv_replace_c", buf, (int)count, datatype, dest,
                                      sendtag, source, recvtag, comm, status);
    if (!DEV(buf, count, datatype))
        return PMPI_Sendrecv_replace_c(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                       status);
    return too_big(comm, "MPI_Sendrecv_replace_c", count);
}
