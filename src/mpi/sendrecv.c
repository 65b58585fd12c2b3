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

/* The send of mode, nonblocking (into req) when nb (inline: the host fast
   path's mode and nb are constants). */
static inline __attribute__((always_inline)) int send_pmpi(mgp2p_send_mode_t mode, int nb,
                                                           const void *buf, int count,
                                                           MPI_Datatype dt, int dest, int tag,
                                                           MPI_Comm comm, MPI_Request *req)
{
    switch (mode) {
    case MGP2P_MODE_SYNC:
        return nb ? PMPI_Issend(buf, count, dt, dest, tag, comm, req)
                  : PMPI_Ssend(buf, count, dt, dest, tag, comm);
    case MGP2P_MODE_READY:
        return nb ? PMPI_Irsend(buf, count, dt, dest, tag, comm, req)
                  : PMPI_Rsend(buf, count, dt, dest, tag, comm);
    case MGP2P_MODE_BUFFERED:
        return nb ? PMPI_Ibsend(buf, count, dt, dest, tag, comm, req)
                  : PMPI_Bsend(buf, count, dt, dest, tag, comm);
    default:
        return nb ? PMPI_Isend(buf, count, dt, dest, tag, comm, req)
                  : PMPI_Send(buf, count, dt, dest, tag, comm);
    }
}

/* The result of a blocking op: its error raised on its communicator unless
   PMPI did, with its message recorded in this thread (the progress thread
   may have run it). */
static int op_result(mgp2p_op_t *op)
{
    mgp2p_op_report(op, NULL);
    return op->err == MPI_SUCCESS || op->raised ? op->err : mgmpi_error(op->comm, op->err);
}

/* Start op: blocking when req is NULL (op is then the caller's, released
   here), else a generalized request in *req (op is then heap memory handed
   over, freed here when it could not start). */
static int op_run(mgp2p_op_t *op, MPI_Request *req)
{
    int rc = MPI_SUCCESS;
    if (!req && mgp2p_op_blocking(op)) {
        rc = op_result(op);
        goto fn_exit;
    }
    rc = mgp2p_op_start(op, req != NULL);
    if (rc != MPI_SUCCESS) {
        if (req)
            mgp2p_op_free(op);
        goto fn_exit;
    }
    if (req) {
        *req = op->greq;
        mgp2p_progress(); /* launch the first piece now */
        return MPI_SUCCESS;
    }
    mgp2p_op_wait(op);
    rc = op_result(op);
fn_exit:
    if (!req)
        mgp2p_op_release(op);
    return rc;
}

/* The checks MPI makes of a call's arguments (args.c), for a call that does
   not reach MPI as it is: a send (send 1) or receive, nonblocking (nb 1:
   req must not be NULL) or not. */
static int p2p_check(const char *fn, int send, int count, MPI_Datatype dt, int peer, int tag,
                     MPI_Comm comm, int nb, const MPI_Request *req)
{
    int raised = 0;
    int rc = mgmpi_check_p2p(fn, send, count, dt, peer, tag, comm, &raised);
    if (rc == MPI_SUCCESS && nb)
        rc = mgmpi_check_request(fn, req);
    return rc == MPI_SUCCESS ? rc : mgmpi_raise(comm, rc, raised);
}

/* A device send: blocking when nb is 0 (req NULL), else a generalized
   request in *req. */
static int send_common(const char *fn, mgp2p_send_mode_t mode, const void *buf, int count,
                       MPI_Datatype dt, int dest, int tag, MPI_Comm comm, int nb, MPI_Request *req,
                       const char *packed)
{
    mgp2p_op_t local = {0}, *op = &local;
    int rc = p2p_check(fn, 1, count, dt, dest, tag, comm, nb, req);
    if (rc != MPI_SUCCESS)
        return rc;
    if (req && !(op = calloc(1, sizeof(*op))))
        return mgmpi_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
    rc = mgp2p_op_init(op, MGP2P_OP_SEND, fn, buf, count, dt, dest, tag, comm);
    if (rc == MPI_SUCCESS && mgp2p_op_trivial(op)) {
        rc = send_pmpi(mode, nb, empty, count, dt, dest, tag, comm, req);
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
    mgp2p_op_release(op);
    if (op != &local)
        free(op);
    return rc;
}

/* A receive into device memory (dev, as the caller classified buf) or into
   host memory that a chunked message could match; message is the matched
   message of MPI_Mrecv/MPI_Imrecv (taken over and set to MPI_MESSAGE_NULL;
   the caller checked the arguments) or NULL.  Blocking when nb is 0. */
static int recv_common(const char *fn, int dev, void *buf, int count, MPI_Datatype dt, int source,
                       int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status, int nb,
                       MPI_Request *req)
{
    mgp2p_op_t local = {0}, *op = &local;
    int rc = message ? MPI_SUCCESS : p2p_check(fn, 0, count, dt, source, tag, comm, nb, req);
    if (rc != MPI_SUCCESS)
        return rc;
    if (req && !(op = calloc(1, sizeof(*op))))
        return mgmpi_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
    rc = dev ? mgp2p_op_init(op, MGP2P_OP_RECV, fn, buf, count, dt, source, tag, comm)
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
    if (!req) {
        /* op_run releases op, not its fields: the status is still there. */
        rc = op_run(op, NULL);
        mgp2p_op_status(op, status);
        return rc;
    }
    return op_run(op, req);
fn_free:
    mgp2p_op_release(op);
    if (op != &local)
        free(op);
    return rc;
}

/* Both sides of MPI_Sendrecv or MPI_Sendrecv_replace, and their datatypes'
   commit (a device side's is checked again where it is decoded). */
static int sendrecv_check(const char *fn, int scount, MPI_Datatype stype, int dest, int stag,
                          int rcount, MPI_Datatype rtype, int source, int rtag, MPI_Comm comm)
{
    int rc = p2p_check(fn, 1, scount, stype, dest, stag, comm, 0, NULL);
    if (rc == MPI_SUCCESS)
        rc = p2p_check(fn, 0, rcount, rtype, source, rtag, comm, 0, NULL);
    if (rc != MPI_SUCCESS)
        return rc; /* raised */
    rc = mgmpi_check_type(fn, stype);
    if (rc == MPI_SUCCESS)
        rc = mgmpi_check_type(fn, rtype);
    return rc == MPI_SUCCESS ? rc : mgmpi_error(comm, rc);
}

/* ---- The host path (issue 31: host traffic pays nothing) ----
   Each MPI_ entry point first asks the quick tests below, inline and without
   a call, lock or allocation (one relaxed load: the early list's count): a
   predefined type at its first slot, a buffer in host memory for certain, a
   receive that no chunked and no early message can reach.  The call then
   goes to PMPI at once.  Any other call goes through mgmpi_send or
   mgmpi_recv (out of line), which decide exactly, with one lookup of a
   predefined type serving both checks of a receive. */

/* 1 when a send of count instances of dt at buf goes to MPI for certain. */
static inline __attribute__((always_inline)) int send_quick(const void *buf, int count,
                                                            MPI_Datatype dt)
{
    const mgdt_layout_t *l = mgdt_predefined_dense(dt);
    return l && count > 0 && mgdev_bytes_host_quick(buf, (uint64_t)count * l->size);
}

/* 1 when such a receive from source goes to MPI for certain: count <=
   INT_MAX and a dense type's size below 2^31 keep its bytes below 2^62. */
static inline __attribute__((always_inline)) int recv_quick(const void *buf, int count,
                                                            MPI_Datatype dt, int source)
{
    const mgdt_layout_t *l = mgdt_predefined_dense(dt);
    if (!l || count <= 0)
        return 0;
    int64_t bytes = (int64_t)count * l->size;
    return !mgp2p_early_any() && mgdev_bytes_host_quick(buf, (uint64_t)bytes) &&
           !mgp2p_host_watch_bytes(bytes, source);
}

/* Whether a send goes to MPI as it is (its buffer is host memory). */
static inline __attribute__((always_inline)) int send_fast(const void *buf, int count,
                                                           MPI_Datatype dt)
{
    const mgdt_layout_t *l = count > 0 ? mgdt_predefined(dt) : NULL;
    if (l)
        return !mgdev_buf_is_device_layout(buf, count, l);
    return !DEV(buf, count, dt);
}

/* Whether a receive goes to MPI as it is (host memory that no chunked and
   no early message can reach); *dev gets mgdev_buf_is_device's answer.
   The device and size tests share one lookup of a predefined type. */
static inline __attribute__((always_inline)) int
recv_fast(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, int *dev)
{
    const mgdt_layout_t *l = count > 0 ? mgdt_predefined(dt) : NULL;
    if (l) {
        *dev = mgdev_buf_is_device_layout(buf, count, l);
        if (*dev || mgp2p_host_watch_bytes((int64_t)count * l->size, source))
            return 0;
    } else {
        *dev = DEV(buf, count, dt);
        if (*dev || WATCH(count, dt, source))
            return 0;
    }
    return !EARLY(source, tag, comm);
}

__attribute__((noinline)) int mgmpi_send(const char *fn, mgp2p_send_mode_t mode, const void *buf,
                                         int count, MPI_Datatype dt, int dest, int tag,
                                         MPI_Comm comm, int nb, MPI_Request *req)
{
    if (send_fast(buf, count, dt))
        return send_pmpi(mode, nb, buf, count, dt, dest, tag, comm, req);
    return send_common(fn, mode, buf, count, dt, dest, tag, comm, nb, req, NULL);
}

__attribute__((noinline)) int mgmpi_recv(const char *fn, void *buf, int count, MPI_Datatype dt,
                                         int source, int tag, MPI_Comm comm, MPI_Status *status,
                                         int nb, MPI_Request *req)
{
    int dev = 0;
    if (recv_fast(buf, count, dt, source, tag, comm, &dev)) {
        if (nb)
            return PMPI_Irecv(buf, count, dt, source, tag, comm, req);
        if (!mgp2p_progress_busy())
            return PMPI_Recv(buf, count, dt, source, tag, comm, status);
        /* Device operations may need progress for this message to come. */
        MPI_Request r;
        int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, &r);
        return rc != MPI_SUCCESS ? rc : MPI_Wait(&r, status);
    }
    return recv_common(fn, dev, buf, count, dt, source, tag, comm, NULL, status, nb, req);
}

/* ---- MPI_Isendrecv and MPI_Isendrecv_replace on the device path ----
   The receive and the send run as requests of their own (device operations
   or MPI's); one operation of the engine (MGP2P_OP_HOOK) completes when both
   have, and its status is the receive's. */

typedef struct srq {
    MPI_Request r[2]; /* the receive, the send */
    MPI_Status st[2];
    int err[2];
    char *packed;   /* _replace: the outgoing bytes, taken before anything came in */
    mgp2p_op_t tmp; /* _replace: the operation that packed them (holds the twin type) */
} srq_t;

static int srq_step(mgp2p_op_t *op, int *done)
{
    srq_t *q = op->hook_arg;
    for (int k = 0; k < 2; k++) {
        int flag = 0;
        if (q->r[k] == MPI_REQUEST_NULL)
            continue;
        /* A device operation's request is a generalized request that the
           engine completes (its callbacks never take the engine's lock). */
        int rc = PMPI_Test(&q->r[k], &flag, &q->st[k]);
        if (rc != MPI_SUCCESS) {
            q->err[k] = rc;
            q->r[k] = MPI_REQUEST_NULL;
        }
    }
    if (q->r[0] != MPI_REQUEST_NULL || q->r[1] != MPI_REQUEST_NULL)
        return MPI_SUCCESS;
    *done = 1;
    int rc = q->err[0] != MPI_SUCCESS ? q->err[0] : q->err[1];
    if (rc == MPI_SUCCESS)
        return rc;
    /* The failed request's message, if the engine recorded one. */
    char s[MPI_MAX_ERROR_STRING];
    int len = 0, cls = MPI_ERR_OTHER;
    PMPI_Error_class(rc, &cls);
    PMPI_Error_string(rc, s, &len);
    return mgerr_set(cls, "mpigpu: %s: %s", op->fn, s);
}

static void srq_status(const mgp2p_op_t *op, MPI_Status *status)
{
    const srq_t *q = op->hook_arg;
    mgp2p_status_copy(status, &q->st[0]);
}

static void srq_release(mgp2p_op_t *op)
{
    srq_t *q = op->hook_arg;
    if (!q)
        return;
    /* Requests still pending after a failure complete on their own. */
    for (int k = 0; k < 2; k++)
        if (q->r[k] != MPI_REQUEST_NULL)
            PMPI_Request_free(&q->r[k]);
    mgp2p_op_release(&q->tmp);
    free(q->packed);
    free(q);
}

static const mgp2p_hook_t srq_hook = {
    .step = srq_step,
    .status = srq_status,
    .release = srq_release,
};

/* The two posted requests of q as one request in *req (q handed over). */
static int srq_start(const char *fn, MPI_Comm comm, srq_t *q, MPI_Request *req)
{
    mgp2p_op_t *op = calloc(1, sizeof(*op));
    if (!op) {
        srq_release(&(mgp2p_op_t){.hook_arg = q});
        return mgmpi_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
    }
    mgp2p_op_init_hook(op, fn, comm, &srq_hook, q);
    int rc = mgp2p_op_start(op, 1);
    if (rc != MPI_SUCCESS) {
        mgp2p_op_free(op); /* its release frees q */
        return mgmpi_error(comm, rc);
    }
    *req = op->greq;
    return MPI_SUCCESS;
}

/* MPI_Isendrecv_replace on a host buffer that no message in pieces can
   reach (MPICH 4.0.2's own has the faults of its MPI_Isendrecv): the
   outgoing data packed first, then MPI's receive into buf and send of the
   packed bytes. */
static int isendrecv_replace_host(const char *fn, void *buf, int count, MPI_Datatype dt, int dest,
                                  int sendtag, int source, int recvtag, MPI_Comm comm,
                                  MPI_Request *req)
{
    int size = 0, pos = 0;
    srq_t *q = calloc(1, sizeof(*q));
    int rc = q ? PMPI_Pack_size(count, dt, comm, &size) : MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS && !(q->packed = malloc(size > 0 ? (size_t)size : 1)))
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Pack(buf, count, dt, q->packed, size, &pos, comm);
    q && (q->r[0] = q->r[1] = MPI_REQUEST_NULL);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Irecv(buf, count, dt, source, recvtag, comm, &q->r[0]);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Isend(q->packed, pos, MPI_PACKED, dest, sendtag, comm, &q->r[1]);
    if (rc != MPI_SUCCESS) {
        if (q && q->r[0] != MPI_REQUEST_NULL) {
            PMPI_Cancel(&q->r[0]);
            PMPI_Wait(&q->r[0], MPI_STATUS_IGNORE);
        }
        if (q)
            srq_release(&(mgp2p_op_t){.hook_arg = q});
        if (rc == MPI_ERR_NO_MEM)
            return mgmpi_error(comm,
                               mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
        return rc; /* MPI raised it */
    }
    return srq_start(fn, comm, q, req);
}

int mgmpi_sendrecv(const char *fn, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                   int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    return mgmpi_isendrecv(fn, sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                           recvtype, source, recvtag, comm, status, NULL);
}

int mgmpi_isendrecv(const char *fn, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                    int dest, int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                    int source, int recvtag, MPI_Comm comm, MPI_Status *status, MPI_Request *req)
{
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    /* MPI_Isendrecv never goes to MPI as it is: MPICH 4.0.2's leaves the
       status empty (source 0, tag 0, count 0) and releases a derived
       datatype once too often (MPI_Type_free then fails an assertion). */
    int rdev = 0;
    if (!req && send_fast(sendbuf, sendcount, sendtype) &&
        recv_fast(recvbuf, recvcount, recvtype, source, recvtag, comm, &rdev) &&
        !mgp2p_progress_busy())
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                             recvtype, source, recvtag, comm, status);
    /* MPI checks both sides before anything starts. */
    int rc = sendrecv_check(fn, sendcount, sendtype, dest, sendtag, recvcount, recvtype, source,
                            recvtag, comm);
    if (rc == MPI_SUCCESS && req)
        rc = p2p_check(fn, 0, recvcount, recvtype, source, recvtag, comm, 1, req);
    if (rc != MPI_SUCCESS)
        return rc;
    if (DEV(sendbuf, sendcount, sendtype)) {
        /* A device send that cannot start (its span, its allocation) must
           fail before the receive may take a message: built once here and
           dropped (it owns nothing), built again below. */
        mgp2p_op_t dry = {0};
        rc = mgp2p_op_init(&dry, MGP2P_OP_SEND, fn, sendbuf, sendcount, sendtype, dest, sendtag,
                           comm);
        mgp2p_op_release(&dry); /* the references it took */
        if (rc != MPI_SUCCESS)
            return mgmpi_error(comm, rc);
    }
    rc = mgmpi_recv(fn, recvbuf, recvcount, recvtype, source, recvtag, comm, NULL, 1, &r[0]);
    if (rc != MPI_SUCCESS)
        return rc;
    rc =
        mgmpi_send(fn, MGP2P_MODE_STD, sendbuf, sendcount, sendtype, dest, sendtag, comm, 1, &r[1]);
    if (rc != MPI_SUCCESS) {
        MPI_Cancel(&r[0]);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        return rc;
    }
    if (req) {
        srq_t *q = calloc(1, sizeof(*q));
        if (!q) {
            MPI_Waitall(2, r, st);
            return mgmpi_error(comm,
                               mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
        }
        q->r[0] = r[0];
        q->r[1] = r[1];
        return srq_start(fn, comm, q, req);
    }
    rc = MPI_Waitall(2, r, st);
    if (rc == MPI_ERR_IN_STATUS)
        rc = st[0].MPI_ERROR != MPI_SUCCESS ? st[0].MPI_ERROR : st[1].MPI_ERROR;
    mgp2p_status_copy(status, &st[0]);
    return rc;
}

int mgmpi_sendrecv_replace(const char *fn, void *buf, int count, MPI_Datatype datatype, int dest,
                           int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    return mgmpi_isendrecv_replace(fn, buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                   status, NULL);
}

int mgmpi_isendrecv_replace(const char *fn, void *buf, int count, MPI_Datatype datatype, int dest,
                            int sendtag, int source, int recvtag, MPI_Comm comm, MPI_Status *status,
                            MPI_Request *req)
{
    mgp2p_op_t op = {0};
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    char *packed = NULL;

    int dev = DEV(buf, count, datatype);
    int plain = !dev && !WATCH(count, datatype, source) && !EARLY(source, recvtag, comm);
    if (plain && !req)
        return PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                     status);
    int rc =
        sendrecv_check(fn, count, datatype, dest, sendtag, count, datatype, source, recvtag, comm);
    if (rc == MPI_SUCCESS && req)
        rc = p2p_check(fn, 0, count, datatype, source, recvtag, comm, 1, req);
    if (rc != MPI_SUCCESS)
        return rc;
    if (plain)
        return isendrecv_replace_host(fn, buf, count, datatype, dest, sendtag, source, recvtag,
                                      comm, req);
    /* The packed copy of what goes out is taken before anything comes in. */
    rc = dev ? mgp2p_op_init(&op, MGP2P_OP_SEND, fn, buf, count, datatype, dest, sendtag, comm)
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
    rc = recv_common(fn, dev, buf, count, datatype, source, recvtag, comm, NULL, NULL, 1, &r[0]);
    if (rc != MPI_SUCCESS)
        goto fn_exit; /* raised */
    if (dev)
        rc = send_common(fn, MGP2P_MODE_STD, buf, count, datatype, dest, sendtag, comm, 1, &r[1],
                         packed);
    else
        rc = PMPI_Isend(packed, count, op.twin, dest, sendtag, comm, &r[1]);
    if (rc != MPI_SUCCESS) {
        MPI_Cancel(&r[0]);
        MPI_Wait(&r[0], MPI_STATUS_IGNORE);
        goto fn_exit;
    }
    if (req) {
        srq_t *q = calloc(1, sizeof(*q));
        if (!q) {
            MPI_Waitall(2, r, st);
            rc = mgmpi_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
            goto fn_exit;
        }
        q->r[0] = r[0];
        q->r[1] = r[1];
        q->packed = packed;
        q->tmp = op; /* the twin type lives until the send is done */
        packed = NULL;
        op = (mgp2p_op_t){0};
        return srq_start(fn, comm, q, req);
    }
    rc = MPI_Waitall(2, r, st);
    if (rc == MPI_ERR_IN_STATUS)
        rc = st[0].MPI_ERROR != MPI_SUCCESS ? st[0].MPI_ERROR : st[1].MPI_ERROR;
    mgp2p_status_copy(status, &st[0]);
fn_exit:
    mgp2p_op_release(&op);
    free(packed);
    return rc;
fn_fail:
    rc = mgmpi_error(comm, rc);
    goto fn_exit;
}

/* The eight send calls and the two receives: a host buffer goes to PMPI
   unchanged.  Each has its rest out of line, with the entry point's own
   arguments (NAME_slow), so that the quick path needs no frame and ends in
   a jump to PMPI. */
#define SEND_SLOW(name_, mode_)                                                                    \
    static __attribute__((noinline, cold)) int name_##_slow(                                       \
        const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)             \
    {                                                                                              \
        return mgmpi_send(#name_, mode_, buf, count, dt, dest, tag, comm, 0, NULL);                \
    }
#define ISEND_SLOW(name_, mode_)                                                                   \
    static __attribute__((noinline, cold)) int name_##_slow(const void *buf, int count,            \
                                                            MPI_Datatype dt, int dest, int tag,    \
                                                            MPI_Comm comm, MPI_Request *req)       \
    {                                                                                              \
        return mgmpi_send(#name_, mode_, buf, count, dt, dest, tag, comm, 1, req);                 \
    }

SEND_SLOW(MPI_Send, MGP2P_MODE_STD)
SEND_SLOW(MPI_Ssend, MGP2P_MODE_SYNC)
SEND_SLOW(MPI_Rsend, MGP2P_MODE_READY)
SEND_SLOW(MPI_Bsend, MGP2P_MODE_BUFFERED)
ISEND_SLOW(MPI_Isend, MGP2P_MODE_STD)
ISEND_SLOW(MPI_Issend, MGP2P_MODE_SYNC)
ISEND_SLOW(MPI_Irsend, MGP2P_MODE_READY)
ISEND_SLOW(MPI_Ibsend, MGP2P_MODE_BUFFERED)

MPIGPU_EXPORT
int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (__builtin_expect(send_quick(buf, count, datatype), 1))
        return PMPI_Send(buf, count, datatype, dest, tag, comm);
    return MPI_Send_slow(buf, count, datatype, dest, tag, comm);
}

MPIGPU_EXPORT
int MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (__builtin_expect(send_quick(buf, count, datatype), 1))
        return PMPI_Ssend(buf, count, datatype, dest, tag, comm);
    return MPI_Ssend_slow(buf, count, datatype, dest, tag, comm);
}

MPIGPU_EXPORT
int MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (__builtin_expect(send_quick(buf, count, datatype), 1))
        return PMPI_Rsend(buf, count, datatype, dest, tag, comm);
    return MPI_Rsend_slow(buf, count, datatype, dest, tag, comm);
}

MPIGPU_EXPORT
int MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    if (__builtin_expect(send_quick(buf, count, datatype), 1))
        return PMPI_Bsend(buf, count, datatype, dest, tag, comm);
    return MPI_Bsend_slow(buf, count, datatype, dest, tag, comm);
}

MPIGPU_EXPORT
int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    if (__builtin_expect(send_quick(buf, count, datatype), 1))
        return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
    return MPI_Isend_slow(buf, count, datatype, dest, tag, comm, request);
}

MPIGPU_EXPORT
int MPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (__builtin_expect(send_quick(buf, count, datatype), 1))
        return PMPI_Issend(buf, count, datatype, dest, tag, comm, request);
    return MPI_Issend_slow(buf, count, datatype, dest, tag, comm, request);
}

MPIGPU_EXPORT
int MPI_Irsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (__builtin_expect(send_quick(buf, count, datatype), 1))
        return PMPI_Irsend(buf, count, datatype, dest, tag, comm, request);
    return MPI_Irsend_slow(buf, count, datatype, dest, tag, comm, request);
}

MPIGPU_EXPORT
int MPI_Ibsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    if (__builtin_expect(send_quick(buf, count, datatype), 1))
        return PMPI_Ibsend(buf, count, datatype, dest, tag, comm, request);
    return MPI_Ibsend_slow(buf, count, datatype, dest, tag, comm, request);
}

static __attribute__((noinline, cold)) int recv_slow(void *buf, int count, MPI_Datatype dt,
                                                     int source, int tag, MPI_Comm comm,
                                                     MPI_Status *status)
{
    return mgmpi_recv("MPI_Recv", buf, count, dt, source, tag, comm, status, 0, NULL);
}

MPIGPU_EXPORT
int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    if (__builtin_expect(recv_quick(buf, count, datatype, source) && !mgp2p_progress_busy(), 1))
        return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
    return recv_slow(buf, count, datatype, source, tag, comm, status);
}

static __attribute__((noinline, cold)) int irecv_slow(void *buf, int count, MPI_Datatype dt,
                                                      int source, int tag, MPI_Comm comm,
                                                      MPI_Request *req)
{
    return mgmpi_recv("MPI_Irecv", buf, count, dt, source, tag, comm, NULL, 1, req);
}

MPIGPU_EXPORT
int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    if (__builtin_expect(recv_quick(buf, count, datatype, source), 1))
        return PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
    return irecv_slow(buf, count, datatype, source, tag, comm, request);
}

MPIGPU_EXPORT
int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status)
{
    return mgmpi_sendrecv("MPI_Sendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                          recvcount, recvtype, source, recvtag, comm, status);
}

MPIGPU_EXPORT
int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    return mgmpi_sendrecv_replace("MPI_Sendrecv_replace", buf, count, datatype, dest, sendtag,
                                  source, recvtag, comm, status);
}

MPIGPU_EXPORT
int MPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                  MPI_Comm comm, MPI_Request *request)
{
    if (!request) /* not the blocking call */
        return mgmpi_error(comm, mgmpi_check_request("MPI_Isendrecv", request));
    return mgmpi_isendrecv("MPI_Isendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                           recvcount, recvtype, source, recvtag, comm, NULL, request);
}

MPIGPU_EXPORT
int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                          int source, int recvtag, MPI_Comm comm, MPI_Request *request)
{
    if (!request)
        return mgmpi_error(comm, mgmpi_check_request("MPI_Isendrecv_replace", request));
    return mgmpi_isendrecv_replace("MPI_Isendrecv_replace", buf, count, datatype, dest, sendtag,
                                   source, recvtag, comm, NULL, request);
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

/* The arguments of a matched receive on the device path: MPICH checks them
   before it takes the message, keeps the message on an error and raises it
   on MPI_COMM_WORLD. */
static int mrecv_check(const char *fn, int count, MPI_Datatype dt, const MPI_Message *message,
                       int nb, const MPI_Request *req)
{
    int rc = MPI_SUCCESS;
    if (count < 0)
        rc = mgerr_set(MPI_ERR_COUNT, "mpigpu: %s: negative count %d", fn, count);
    else if (dt == MPI_DATATYPE_NULL)
        rc = mgerr_set(MPI_ERR_TYPE, "mpigpu: %s: the datatype is MPI_DATATYPE_NULL", fn);
    else if (nb && !req)
        rc = mgmpi_check_request(fn, req);
    else if (*message == MPI_MESSAGE_NULL)
        rc = mgerr_set(MPI_ERR_REQUEST, "mpigpu: %s: the message is MPI_MESSAGE_NULL", fn);
    else
        rc = mgmpi_check_type(fn, dt);
    return rc == MPI_SUCCESS ? rc : mgmpi_error(MPI_COMM_WORLD, rc);
}

/* A matched receive that MPI runs: the note of the message's communicator
   goes once MPI has taken the message. */
static int mrecv_pmpi(void *buf, int count, MPI_Datatype dt, MPI_Message *message,
                      MPI_Status *status, int nb, MPI_Request *req)
{
    MPI_Message m = *message;
    MPI_Request r;
    int rc;
    if (nb)
        rc = PMPI_Imrecv(buf, count, dt, message, req);
    else if (!mgp2p_progress_busy())
        rc = PMPI_Mrecv(buf, count, dt, message, status);
    else if ((rc = PMPI_Imrecv(buf, count, dt, message, &r)) == MPI_SUCCESS)
        rc = MPI_Wait(&r, status); /* device operations may need progress */
    if (*message != m)
        mgp2p_message_take(m);
    return rc;
}

int mgmpi_mrecv(const char *fn, void *buf, int count, MPI_Datatype dt, MPI_Message *message,
                MPI_Status *status, int nb, MPI_Request *req)
{
    if (!message) /* MPI says what is wrong */
        return nb ? PMPI_Imrecv(buf, count, dt, message, req)
                  : PMPI_Mrecv(buf, count, dt, message, status);
    int peer = *message == MPI_MESSAGE_NO_PROC ? MPI_PROC_NULL : MPI_ANY_SOURCE;
    int dev = DEV(buf, count, dt);
    if (!dev && !WATCH(count, dt, peer) && !mgp2p_early_is_handle(*message))
        return mrecv_pmpi(buf, count, dt, message, status, nb, req);
    int rc = mrecv_check(fn, count, dt, message, nb, req);
    if (rc != MPI_SUCCESS)
        return rc;
    MPI_Comm comm = mgp2p_message_take(*message);
    return recv_common(fn, dev, buf, count, dt, peer, MPI_ANY_TAG, comm, message, status, nb, req);
}

MPIGPU_EXPORT
int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
    return mgmpi_mrecv("MPI_Mrecv", buf, count, datatype, message, status, 0, NULL);
}

MPIGPU_EXPORT
int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
               MPI_Request *request)
{
    return mgmpi_mrecv("MPI_Imrecv", buf, count, datatype, message, NULL, 1, request);
}
