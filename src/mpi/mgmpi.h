/*
 * mgmpi: what the files of the MPI face share among themselves (private to
 * src/mpi).  Nothing below the MPI face calls these.
 */
#ifndef MGMPI_H
#define MGMPI_H

#include <mpi.h>
#include <stdint.h>

#include "mpigpu.h" /* MPIGPU_EXPORT, on each interposed MPI_ call */
#include "mgdev.h"
#include "p2p.h"

/* Raise rc (an error class) on comm's error handler and return it.  With
   MPI_ERRORS_ARE_FATAL the recorded message is printed first, so that the
   abort says why.  MPI_SUCCESS passes through. */
int mgmpi_error(MPI_Comm comm, int rc);

/* Argument checks of the device paths (args.c): what MPICH 4.0.2 checks for
   the host form of a call, with the class it returns.  Each returns
   MPI_SUCCESS or an error class with a message naming fn, and raises
   nothing, except that an invalid communicator other than MPI_COMM_NULL is
   raised by MPI itself, as for the host call (*raised is then set). */

/* comm: MPI_ERR_COMM for MPI_COMM_NULL; *nranks the ranks a peer may name
   (the remote group's size for an intercommunicator). */
int mgmpi_check_comm(const char *fn, MPI_Comm comm, int *nranks, int *raised);
/* A send (send 1) or receive: comm, count >= 0, a datatype, the tag (0 to
   MPI_TAG_UB; MPI_ANY_TAG for receives) and the peer (a rank of comm or
   MPI_PROC_NULL; MPI_ANY_SOURCE for receives).  Commit is checked where the
   datatype is decoded. */
int mgmpi_check_p2p(const char *fn, int send, int64_t count, MPI_Datatype dt, int peer, int tag,
                    MPI_Comm comm, int *raised);
/* A datatype that is not decoded here (a host buffer's beside a device
   one): MPI_ERR_TYPE for MPI_DATATYPE_NULL or an uncommitted type. */
int mgmpi_check_type(const char *fn, MPI_Datatype dt);
/* A request argument: MPI_ERR_ARG when NULL. */
int mgmpi_check_request(const char *fn, const void *req);
/* mgmpi_error(comm, rc) unless MPI raised rc already. */
int mgmpi_raise(MPI_Comm comm, int rc, int raised);

/* The point-to-point calls under the name of the call that makes them, so
   that a large-count form passing to its int form keeps its own name in
   error messages (sendrecv.c, persist.c).  nb: nonblocking, into *req. */
int mgmpi_send(const char *fn, mgp2p_send_mode_t mode, const void *buf, int count, MPI_Datatype dt,
               int dest, int tag, MPI_Comm comm, int nb, MPI_Request *req);
int mgmpi_recv(const char *fn, void *buf, int count, MPI_Datatype dt, int source, int tag,
               MPI_Comm comm, MPI_Status *status, int nb, MPI_Request *req);
int mgmpi_sendrecv(const char *fn, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, MPI_Status *status);
int mgmpi_sendrecv_replace(const char *fn, void *buf, int count, MPI_Datatype datatype, int dest,
                           int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status);
/* The same, nonblocking when req is not NULL (MPI_Isendrecv,
   MPI_Isendrecv_replace): one request for both. */
int mgmpi_isendrecv(const char *fn, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                    int source, int recvtag, MPI_Comm comm, MPI_Status *status, MPI_Request *req);
int mgmpi_isendrecv_replace(const char *fn, void *buf, int count, MPI_Datatype datatype, int dest,
                            int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status,
                            MPI_Request *req);
int mgmpi_mrecv(const char *fn, void *buf, int count, MPI_Datatype dt, MPI_Message *message,
                MPI_Status *status, int nb, MPI_Request *req);
/* A persistent request: kind MGP2P_OP_SEND (of mode) or MGP2P_OP_RECV. */
int mgmpi_init(const char *fn, mgp2p_op_kind_t kind, mgp2p_send_mode_t mode, const void *buf,
               int count, MPI_Datatype dt, int peer, int tag, MPI_Comm comm, MPI_Request *req);

/* The start of every MPIX_ call but MPIX_Query_opencl_support (api.c):
   MPI_ERR_OTHER with a message before MPI_Init, after MPI_Finalize, or when
   the library did not start. */
int mgmpi_api_enter(const char *fn);

/* The enqueue calls' module (enqueue.c): init does nothing (the enqueue
   thread starts at the first call); fini stops the thread once the jobs in
   flight are done, and fails the events of jobs that never started. */
int mgmpi_enq_init(void);
void mgmpi_enq_fini(void);

#endif /* MGMPI_H */
