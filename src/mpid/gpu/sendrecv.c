/*
 * The interposed point-to-point calls.  A call whose buffer is a host address
 * goes to PMPI unchanged; one with a device address becomes a device operation
 * (p2p.c), blocking or behind a generalized request (request.c).
 */
#include "config.h"

#include <stdlib.h>

#include "mgerr.h"
#include "p2p.h"

static char empty[1]; /* stands for a device buffer of which nothing moves */

#define DEV(buf_, count_, dt_) mgdev_buf_is_device((buf_), (count_), (dt_))
/* A host receive that a chunked message could match (mgdev_host_watch). */
#define WATCH(count_, dt_, peer_) mgdev_host_watch((count_), (dt_), (peer_))
/* A host receive that would take a message a probe received early. */
#define EARLY(peer_, tag_, comm_) mgdev_early_waiting((peer_), (tag_), (comm_), NULL)

/* The call's own fields, device and host operations alike. */
static void op_call(mgdev_op_t *op, mgdev_op_kind_t kind, const char *fn, int count, int peer,
                    int tag, MPI_Comm comm)
{
    op->kind = kind;
    op->fn = fn;
    op->comm = comm;
    op->peer = peer;
    op->tag = tag;
    op->count = count;
    op->inner = MPI_REQUEST_NULL;
    op->lane_req = MPI_REQUEST_NULL;
    op->source = MPI_ANY_SOURCE;
    op->rtag = MPI_ANY_TAG;
}

/* Classify buf for op and check that every byte the datatype touches lies in
   one live device allocation. */
int mgdev_op_init(mgdev_op_t *op, mgdev_op_kind_t kind, const char *fn, const void *buf, int count,
                  MPI_Datatype dt, int peer, int tag, MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    mgdev_reg_entry_t e;
    size_t off = 0;

    op_call(op, kind, fn, count, peer, tag, comm);
    rc = mgdev_require_device(fn);
    MG_CHECK(rc, fn_fail);
    if (count < 0)
        MG_FAIL(rc, fn_fail, MPI_ERR_COUNT, "mpigpu: %s: negative count %d", fn, count);
    rc = mgdt_type_get(dt, &op->type);
    MG_CHECK(rc, fn_fail);
    mgpk_method_t m = mgdev_type_method(dt);
    op->pk_flags = m == MGPK_METHOD_HOST ? 0 : MGPK_F_METHOD(m);
    op->n = count * op->type->size;
    if (op->n == 0 || peer == MPI_PROC_NULL)
        goto fn_exit;
    if (kind == MGDEV_OP_SEND) {
        rc = mgdt_type_twin(op->type, dt, &op->twin);
        MG_CHECK(rc, fn_fail);
    }
    int64_t lo, hi;
    mgdev_type_span(op->type, count, &lo, &hi);
    const char *first = (const char *)buf + lo;
    if (!mgdev_reg_lookup(first, &e, &off) || (size_t)(hi - lo) > e.size - off)
        MG_FAIL(rc, fn_fail, MPI_ERR_BUFFER,
                "mpigpu: %s: access [%p, %p) from device address %p is not inside one live "
                "device allocation; nothing was sent or received",
                fn, (const void *)first, (const void *)(first + (hi - lo)), buf);
    op->mem = e.mem;
    op->origin = (int64_t)off - lo;
    rc = mgdev_ctx_get(e.context, &op->pk);
fn_exit:
fn_fail:
    return rc;
}

int mgdev_op_init_host(mgdev_op_t *op, const char *fn, void *buf, int count, MPI_Datatype dt,
                       int peer, int tag, MPI_Comm comm)
{
    op_call(op, MGDEV_OP_RECV, fn, count, peer, tag, comm);
    op->host = buf;
    op->dt = dt;
    int rc = mgdt_type_get(dt, &op->type);
    if (rc != MPI_SUCCESS)
        return rc;
    op->n = count * op->type->size;
    op->dense = mgpk_contig(op->type, count);
    return MPI_SUCCESS;
}

int mgdev_op_trivial(const mgdev_op_t *op)
{
    return op->n == 0 || op->peer == MPI_PROC_NULL;
}

static int send_pmpi(mgdev_send_mode_t mode, const void *buf, int count, MPI_Datatype dt, int dest,
                     int tag, MPI_Comm comm, MPI_Request *req)
{
    switch (mode) {
    case MGDEV_MODE_SYNC:
        return req ? PMPI_Issend(buf, count, dt, dest, tag, comm, req)
                   : PMPI_Ssend(buf, count, dt, dest, tag, comm);
    case MGDEV_MODE_READY:
        return req ? PMPI_Irsend(buf, count, dt, dest, tag, comm, req)
                   : PMPI_Rsend(buf, count, dt, dest, tag, comm);
    case MGDEV_MODE_BUFFERED:
        return req ? PMPI_Ibsend(buf, count, dt, dest, tag, comm, req)
                   : PMPI_Bsend(buf, count, dt, dest, tag, comm);
    default:
        return req ? PMPI_Isend(buf, count, dt, dest, tag, comm, req)
                   : PMPI_Send(buf, count, dt, dest, tag, comm);
    }
}

/* Start op: blocking when req is NULL (op is then the caller's), else a
   generalized request in *req (op is then heap memory handed over). */
static int op_run(mgdev_op_t *op, MPI_Request *req)
{
    if (!req && mgdev_op_blocking(op))
        return op->err == MPI_SUCCESS || op->raised ? op->err : mgdev_error(op->comm, op->err);
    int rc = mgdev_op_start(op, req != NULL);
    if (rc != MPI_SUCCESS)
        return rc;
    if (req) {
        *req = op->greq;
        mgdev_progress(); /* launch the first piece now */
        return MPI_SUCCESS;
    }
    mgdev_op_wait(op);
    return op->err == MPI_SUCCESS || op->raised ? op->err : mgdev_error(op->comm, op->err);
}

static int send_common(const char *fn, mgdev_send_mode_t mode, const void *buf, int count,
                       MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req,
                       const char *packed)
{
    mgdev_op_t local = {0}, *op = &local;
    if (req && !(op = calloc(1, sizeof(*op))))
        return mgdev_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
    int rc = mgdev_op_init(op, MGDEV_OP_SEND, fn, buf, count, dt, dest, tag, comm);
    if (rc == MPI_SUCCESS && mgdev_op_trivial(op)) {
        rc = send_pmpi(mode, empty, count, dt, dest, tag, comm, req);
        goto fn_free;
    }
    if (rc != MPI_SUCCESS) {
        rc = mgdev_error(comm, rc);
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
    mgdev_op_t local = {0}, *op = &local;
    if (req && !(op = calloc(1, sizeof(*op))))
        return mgdev_error(comm, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn));
    int rc = dev ? mgdev_op_init(op, MGDEV_OP_RECV, fn, buf, count, dt, source, tag, comm)
                 : mgdev_op_init_host(op, fn, buf, count, dt, source, tag, comm);
    /* A receive of nothing still takes a message a probe received early
       (a truncation, whose pieces the operation drains). */
    if (rc == MPI_SUCCESS && mgdev_op_trivial(op) &&
        (source == MPI_PROC_NULL || !mgdev_early_waiting(source, tag, comm, message))) {
        if (message)
            rc = req ? PMPI_Imrecv(empty, count, dt, message, req)
                     : PMPI_Mrecv(empty, count, dt, message, status);
        else
            rc = req ? PMPI_Irecv(empty, count, dt, source, tag, comm, req)
                     : PMPI_Recv(empty, count, dt, source, tag, comm, status);
        goto fn_free;
    }
    if (rc != MPI_SUCCESS) {
        rc = mgdev_error(comm, rc);
        goto fn_free;
    }
    if (message) {
        op->matched = 1;
        op->message = *message;
        *message = MPI_MESSAGE_NULL;
    }
    rc = op_run(op, req);
    if (!req)
        mgdev_op_status(op, status);
    return rc;
fn_free:
    if (op != &local)
        free(op);
    return rc;
}

/* The eight send calls: a host buffer goes to PMPI unchanged. */
#define SEND_BLOCKING(name_, mode_)                                                                \
    int MPI_##name_(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,          \
                    MPI_Comm comm)                                                                 \
    {                                                                                              \
        if (!DEV(buf, count, datatype))                                                            \
            return PMPI_##name_(buf, count, datatype, dest, tag, comm);                            \
        return send_common("MPI_" #name_, mode_, buf, count, datatype, dest, tag, comm, NULL,      \
                           NULL);                                                                  \
    }
#define SEND_NONBLOCKING(name_, mode_)                                                             \
    int MPI_##name_(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,          \
                    MPI_Comm comm, MPI_Request *request)                                           \
    {                                                                                              \
        if (!DEV(buf, count, datatype))                                                            \
            return PMPI_##name_(buf, count, datatype, dest, tag, comm, request);                   \
        return send_common("MPI_" #name_, mode_, buf, count, datatype, dest, tag, comm, request,   \
                           NULL);                                                                  \
    }

SEND_BLOCKING(Send, MGDEV_MODE_STD)
SEND_BLOCKING(Ssend, MGDEV_MODE_SYNC)
SEND_BLOCKING(Rsend, MGDEV_MODE_READY)
SEND_BLOCKING(Bsend, MGDEV_MODE_BUFFERED)
SEND_NONBLOCKING(Isend, MGDEV_MODE_STD)
SEND_NONBLOCKING(Issend, MGDEV_MODE_SYNC)
SEND_NONBLOCKING(Irsend, MGDEV_MODE_READY)
SEND_NONBLOCKING(Ibsend, MGDEV_MODE_BUFFERED)

int MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, source) && !EARLY(source, tag, comm)) {
        if (!mgdev_progress_busy())
            return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
        /* Device operations may need progress for this message to come. */
        MPI_Request r;
        int rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, &r);
        return rc != MPI_SUCCESS ? rc : MPI_Wait(&r, status);
    }
    return recv_common("MPI_Recv", dev, buf, count, datatype, source, tag, comm, NULL, status,
                       NULL);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, source) && !EARLY(source, tag, comm))
        return PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
    return recv_common("MPI_Irecv", dev, buf, count, datatype, source, tag, comm, NULL, NULL,
                       request);
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status)
{
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    if (!DEV(sendbuf, sendcount, sendtype) && !DEV(recvbuf, recvcount, recvtype) &&
        !WATCH(recvcount, recvtype, source) && !EARLY(source, recvtag, comm) &&
        !mgdev_progress_busy())
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

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag,
                         int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    const char *fn = "MPI_Sendrecv_replace";
    mgdev_op_t op = {0};
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[2];
    char *packed = NULL;

    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, source) && !EARLY(source, recvtag, comm))
        return PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, comm,
                                     status);
    /* The packed copy of what goes out is taken before anything comes in. */
    int rc = dev ? mgdev_op_init(&op, MGDEV_OP_SEND, fn, buf, count, datatype, dest, sendtag, comm)
                 : mgdev_op_init_host(&op, fn, buf, count, datatype, source, recvtag, comm);
    MG_CHECK(rc, fn_fail);
    if (!mgdev_op_trivial(&op)) {
        if (!(packed = malloc((size_t)op.n)))
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory (%lld bytes)", fn,
                    (long long)op.n);
        mgpk_buf_t src = {.mem = op.mem, .offset = op.origin}, dst = {.host = packed};
        if (dev)
            rc = mgpk_pack(op.pk, op.type, count, src, dst, 0, op.n, op.pk_flags);
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
        rc = send_common(fn, MGDEV_MODE_STD, buf, count, datatype, dest, sendtag, comm, &r[1],
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
    rc = mgdev_error(comm, rc);
    goto fn_exit;
}

int MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    int flag = 0;
    return mgdev_probe(source, tag, comm, 1, &flag, NULL, status);
}

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    return mgdev_probe(source, tag, comm, 0, flag, NULL, status);
}

/* Matched messages and their communicators: MPI has no call that maps a
   message to its communicator, which a device receive needs for errors and
   for the world rank of a chunked message's sender.  Filled by the probes,
   emptied by the receives; guarded by the p2p lock. */
static struct {
    MPI_Message *msg;
    MPI_Comm *comm;
    size_t n, cap;
} matched;

void mgdev_message_note(MPI_Message message, MPI_Comm comm)
{
    if (message == MPI_MESSAGE_NULL || message == MPI_MESSAGE_NO_PROC)
        return;
    mgdev_p2p_lock();
    if (matched.n == matched.cap) {
        size_t cap = matched.cap ? 2 * matched.cap : 16;
        MPI_Message *m = realloc(matched.msg, cap * sizeof(*m));
        if (m)
            matched.msg = m;
        MPI_Comm *c = realloc(matched.comm, cap * sizeof(*c));
        if (c)
            matched.comm = c;
        if (m && c)
            matched.cap = cap;
    }
    if (matched.n < matched.cap) {
        matched.msg[matched.n] = message;
        matched.comm[matched.n++] = comm;
    }
    mgdev_p2p_unlock();
}

/* The communicator of a matched message, forgotten, or MPI_COMM_WORLD for
   one not seen. */
static MPI_Comm message_take(MPI_Message message)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    mgdev_p2p_lock();
    for (size_t i = 0; i < matched.n; i++) {
        if (matched.msg[i] == message) {
            comm = matched.comm[i];
            matched.msg[i] = matched.msg[--matched.n];
            matched.comm[i] = matched.comm[matched.n];
            break;
        }
    }
    if (matched.n == 0) {
        free(matched.msg);
        free(matched.comm);
        matched.msg = NULL;
        matched.comm = NULL;
        matched.cap = 0;
    }
    mgdev_p2p_unlock();
    return comm;
}

int MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    int flag = 0;
    return mgdev_probe(source, tag, comm, 1, &flag, message, status);
}

int MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                MPI_Status *status)
{
    return mgdev_probe(source, tag, comm, 0, flag, message, status);
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
    MPI_Comm comm = message_take(*message);
    int peer = *message == MPI_MESSAGE_NO_PROC ? MPI_PROC_NULL : MPI_ANY_SOURCE;
    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, peer) && !mgdev_early_is_handle(*message)) {
        if (!mgdev_progress_busy())
            return PMPI_Mrecv(buf, count, datatype, message, status);
        MPI_Request r;
        int rc = PMPI_Imrecv(buf, count, datatype, message, &r);
        return rc != MPI_SUCCESS ? rc : MPI_Wait(&r, status);
    }
    return recv_common("MPI_Mrecv", dev, buf, count, datatype, peer, MPI_ANY_TAG, comm, message,
                       status, NULL);
}

int MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
               MPI_Request *request)
{
    MPI_Comm comm = message_take(*message);
    int peer = *message == MPI_MESSAGE_NO_PROC ? MPI_PROC_NULL : MPI_ANY_SOURCE;
    int dev = DEV(buf, count, datatype);
    if (!dev && !WATCH(count, datatype, peer) && !mgdev_early_is_handle(*message))
        return PMPI_Imrecv(buf, count, datatype, message, request);
    return recv_common("MPI_Imrecv", dev, buf, count, datatype, peer, MPI_ANY_TAG, comm, message,
                       NULL, request);
}
