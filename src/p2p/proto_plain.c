/*
 * The plain protocol: the message is one MPI message of its packed bytes, on
 * the user's communicator and tag, in the call's mode.  Up to one chunk
 * (mgdev_stage_chunk()) it is packed into (or unpacked from) a pinned buffer
 * of the staging pool; a longer one gets a host buffer of its own for the
 * time of the operation, so the pool's cap holds whatever the messages'
 * sizes.
 *
 * Every receive starts here: its first (or only) piece is one MPI receive,
 * and what arrives says what the message is.  A piece of exactly the first
 * piece's length that starts with the header hands the operation over to
 * the chunked protocol (mgp2p_chunked_recv_begin).
 *
 * Also here: the blocking fast path, one blocking PMPI call for a message
 * below one chunk while nothing else is active.
 */
#include "config.h"

#include <string.h>

#include "mgerr.h"
#include "p2p_impl.h"

static char dummy[1]; /* buffer of empty messages */

/* A piece was posted with PMPI result rc: in flight, or op failed. */
static int op_posted(mgp2p_op_t *op, int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        mgp2p_op_fail_mpi(op, rc, what);
        return rc;
    }
    op->pieces++;
    op->state = MGP2P_OP_INFLIGHT;
    return MPI_SUCCESS;
}

static int plain_start(mgp2p_op_t *op, const mgp2p_sel_t *sel)
{
    (void)sel;
    op->u.plain.inner = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

static int plain_send_applies(const mgp2p_op_t *op, const mgp2p_sel_t *sel)
{
    (void)op;
    (void)sel;
    return 1;
}

/* Pack and post the message. */
static int send_next(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    int64_t len = op->n;
    char *buf;

    if (op->packed) {
        buf = (char *)op->packed;
    } else {
        rc = mgp2p_op_buffer(op, len, &buf);
        MG_CHECK(rc, fn_fail);
        if (!buf)
            goto fn_exit; /* the pool is at its cap: retry later */
        if (len > 0) {
            rc = mgp2p_op_pack(op, buf, 0, len);
            MG_CHECK(rc, fn_fail);
        }
    }
    rc = op_posted(op, mgp2p_send_post(op, buf, len, 1, &op->u.plain.inner), "posting a send");
fn_exit:
    return rc;
fn_fail:
    mgp2p_op_fail(op, rc, 0);
    goto fn_exit;
}

static void plain_send_progress(mgp2p_op_t *op)
{
    int flag = 1;
    if (op->state == MGP2P_OP_NEXT)
        send_next(op);
    if (op->state != MGP2P_OP_INFLIGHT)
        return;
    /* A buffered send is complete once PMPI_Bsend returned. */
    if (op->u.plain.inner != MPI_REQUEST_NULL) {
        int rc = PMPI_Test(&op->u.plain.inner, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            mgp2p_op_fail_mpi(op, rc, "a send");
            return;
        }
    }
    if (!flag)
        return;
    op->done = op->n;
    op->state = MGP2P_OP_DONE;
    mgp2p_op_unstage(op);
}

/* Post the receive of a message's first (or only) piece. */
static int recv_next(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    int64_t chunk = (int64_t)mgdev_stage_chunk();
    int64_t len = op->n;
    char *buf = dummy;

    /* A receive takes the whole message (its buffer's pages are only touched
       by the bytes that arrive); a first piece of one chunk may still turn
       out to start a chunked message.  Under the chunked protocol a receive
       above one chunk lands in host memory of its own, outside the pool, so
       that the pieces of a chunked message find pool buffers while it holds
       it, and a plain message of any length still fits. */
    if (op->host) {
        rc = mgp2p_host_first_buffer(op, &buf);
        MG_CHECK(rc, fn_fail);
    } else if (mgp2p_first_len() && len > chunk) {
        rc = mgp2p_op_big(op, (size_t)len, "a receive", len);
        MG_CHECK(rc, fn_fail);
        buf = op->big;
    } else if (len > 0) {
        rc = mgp2p_op_buffer(op, len, &buf);
        MG_CHECK(rc, fn_fail);
        if (!buf)
            goto fn_exit; /* the pool is at its cap: retry later */
    }
    if (op->matched)
        rc = PMPI_Imrecv_c(buf, (MPI_Count)len, MPI_BYTE, &op->message, &op->u.plain.inner);
    else
        rc = PMPI_Irecv_c(buf, (MPI_Count)len, MPI_BYTE, op->peer, op->tag, op->comm,
                          &op->u.plain.inner);
    rc = op_posted(op, rc, "posting a receive");
fn_exit:
    return rc;
fn_fail:
    mgp2p_op_fail(op, rc, 0);
    goto fn_exit;
}

/* The first (or only) piece arrived at buf with status st: a chunked
   message's header hands op on, else the message is whole. */
static void recv_complete_at(mgp2p_op_t *op, MPI_Status *st, char *buf)
{
    int rc = MPI_SUCCESS;
    int64_t f = mgp2p_first_len();
    MPI_Count len = 0;
    mgp2p_header_t h;

    PMPI_Get_count_c(st, MPI_BYTE, &len);
    op->source = st->MPI_SOURCE;
    op->rtag = st->MPI_TAG;
    op->total = len;
    if (f && len == f && !op->bare && mgp2p_header_read(buf, &h)) {
        mgp2p_chunked_recv_begin(op, &h, buf, len);
        return;
    }
    if (op->host && !op->inplace && len > 0) {
        rc = mgp2p_host_land_end(op, buf, len);
        MG_CHECK(rc, fn_fail);
    } else if (!op->host && len > 0) {
        rc = mgp2p_op_unpack(op, buf, 0, len);
        MG_CHECK(rc, fn_fail);
    }
    op->done = len;
    op->state = MGP2P_OP_DONE;
    mgp2p_op_unstage(op);
    return;
fn_fail:
    mgp2p_op_fail(op, rc, 0);
}

static void recv_complete(mgp2p_op_t *op, MPI_Status *st)
{
    recv_complete_at(op, st,
                     op->inplace ? mgp2p_host_run(op)
                     : op->big   ? op->big
                     : op->stage ? op->stage->ptr
                                 : dummy);
}

/* The receive takes e, a message that a probe received early (early.c):
   as if its first piece had just arrived. */
static void recv_early(mgp2p_op_t *op, mgp2p_early_t *e)
{
    MPI_Status st = {.MPI_SOURCE = e->source, .MPI_TAG = e->tag, .MPI_ERROR = MPI_SUCCESS};
    PMPI_Status_set_elements_x(&st, MPI_BYTE, (MPI_Count)e->len);
    op->pieces = 1;
    op->source = e->source;
    op->rtag = e->tag;
    op->inplace = 0;
    if (e->total == e->len && e->len > op->n) {
        mgp2p_op_truncated(op, e->len, 0);
    } else if (op->host && e->total != e->len) {
        /* A host receive's pieces land after the header in a buffer of its
           capacity (mgp2p_host_first_buffer); a truncated message needs only
           the header. */
        size_t want = (size_t)op->n + (size_t)MGP2P_HDR;
        if (mgp2p_op_big(op, want, "a receive", op->n) != MPI_SUCCESS) {
            mgp2p_op_fail(op, MPI_ERR_NO_MEM, 0);
        } else {
            memcpy(op->big, e->buf, (size_t)e->len < want ? (size_t)e->len : want);
            recv_complete(op, &st);
        }
    } else {
        recv_complete_at(op, &st, e->buf);
    }
    mgp2p_early_free(e);
}

static void plain_recv_progress(mgp2p_op_t *op)
{
    int flag = 0;
    MPI_Status st;
    if (op->state == MGP2P_OP_NEXT && op->pieces == 0) {
        /* A message a probe took early comes first (early.c). */
        mgp2p_early_t *e =
            mgp2p_early_take(op->peer, op->tag, op->comm, op->matched ? &op->message : NULL);
        if (e) {
            if (op->matched)
                op->message = MPI_MESSAGE_NULL;
            recv_early(op, e);
            return;
        }
    }
    if (op->state == MGP2P_OP_NEXT)
        recv_next(op);
    if (op->state != MGP2P_OP_INFLIGHT)
        return;
    int rc = PMPI_Test(&op->u.plain.inner, &flag, &st);
    if (rc != MPI_SUCCESS) {
        if (op->pieces == 1) {
            op->source = st.MPI_SOURCE;
            op->rtag = st.MPI_TAG;
        }
        mgp2p_op_fail_mpi(op, rc, "a receive");
        return;
    }
    if (flag)
        recv_complete(op, &st);
}

/* Only a receive that has not matched yet can be taken back. */
static void plain_recv_cancel(mgp2p_op_t *op)
{
    MPI_Status st;
    int cancelled = 0;
    if (op->matched || op->state != MGP2P_OP_INFLIGHT || op->pieces != 1)
        return;
    PMPI_Cancel(&op->u.plain.inner);
    if (PMPI_Wait(&op->u.plain.inner, &st) != MPI_SUCCESS)
        return;
    PMPI_Test_cancelled(&st, &cancelled);
    if (!cancelled) {
        recv_complete(op, &st);
        return;
    }
    op->cancelled = 1;
    op->state = MGP2P_OP_DONE;
    mgp2p_op_unstage(op);
}

/* Nothing to end on failure: a failed post or test leaves no request. */
const mgp2p_proto_t mgp2p_proto_plain_send = {
    .name = "plain",
    .id = MGP2P_PROTO_PLAIN,
    .applies = plain_send_applies,
    .start = plain_start,
    .progress = plain_send_progress,
};

const mgp2p_proto_t mgp2p_proto_plain_recv = {
    .name = "plain",
    .id = MGP2P_PROTO_PLAIN,
    .start = plain_start,
    .progress = plain_recv_progress,
    .cancel = plain_recv_cancel,
};

/* ---- the blocking fast path ---- */

/* op is not linked, and the call runs without the lock; a failure returns
   op's host memory (the host method's copy) to the pool, under the lock. */
static void blocking_fail(mgp2p_op_t *op, int rc, const char *what)
{
    mgp2p_lock();
    if (what)
        mgp2p_op_fail_mpi(op, rc, what);
    else
        mgp2p_op_fail(op, rc, 0);
    mgp2p_unlock();
}

/* The blocking call of a message below one chunk, whose bytes need no
   progress from anyone: one PMPI call on the packed bytes. */
static int send_blocking(mgp2p_op_t *op, char *buf)
{
    MPI_Count n = 0;
    MPI_Datatype t = mgp2p_plain_type(op, op->n, &n);
    switch (op->mode) {
    case MGP2P_MODE_SYNC:
        return PMPI_Ssend_c(buf, n, t, op->peer, op->tag, op->comm);
    case MGP2P_MODE_READY:
        return PMPI_Rsend_c(buf, n, t, op->peer, op->tag, op->comm);
    case MGP2P_MODE_BUFFERED:
        return PMPI_Bsend_c(buf, n, t, op->peer, op->tag, op->comm);
    default:
        return PMPI_Send_c(buf, n, t, op->peer, op->tag, op->comm);
    }
}

static void recv_blocking(mgp2p_op_t *op, char *buf)
{
    MPI_Status st = {.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG};
    MPI_Count len = 0;
    int rc = op->matched ? PMPI_Mrecv(buf, (int)op->n, MPI_BYTE, &op->message, &st)
                         : PMPI_Recv(buf, (int)op->n, MPI_BYTE, op->peer, op->tag, op->comm, &st);
    op->source = st.MPI_SOURCE;
    op->rtag = st.MPI_TAG;
    if (rc != MPI_SUCCESS) {
        blocking_fail(op, rc, "a receive");
        return;
    }
    PMPI_Get_count_c(&st, MPI_BYTE, &len);
    op->total = len;
    if (len > 0) {
        rc = mgp2p_op_unpack(op, buf, 0, len);
        if (rc != MPI_SUCCESS) {
            blocking_fail(op, rc, NULL);
            return;
        }
    }
    op->done = len;
}

int mgp2p_op_blocking(mgp2p_op_t *op)
{
    int rc = MPI_SUCCESS;
    mgdev_stage_t *s = NULL;

    /* Not for a message that may go in pieces (a receive: that may be one),
       nor for a receive while probes hold messages. */
    int64_t f = mgp2p_first_len();
    if (op->n >= (int64_t)mgdev_stage_chunk() || op->packed ||
        (op->kind == MGP2P_OP_RECV && ((f && op->n >= f) || mgp2p_early_any())) ||
        (op->kind == MGP2P_OP_SEND && mgp2p_may_chunk(op->n)))
        return 0;
    /* With another device operation active, a blocking PMPI call could wait
       for a message that only this process's progress of it sends. */
    mgp2p_lock();
    if (!mgp2p_progress_busy()) {
        rc = mgp2p_op_host_prepare(op);
        if (rc == MPI_SUCCESS)
            rc = mgdev_stage_get((size_t)op->n, &s);
    }
    mgp2p_unlock();
    if (rc != MPI_SUCCESS) {
        blocking_fail(op, rc, NULL);
        return 1;
    }
    if (!s)
        return 0;
    if (op->kind == MGP2P_OP_SEND) {
        rc = mgp2p_op_pack(op, s->ptr, 0, op->n);
        if (rc != MPI_SUCCESS)
            blocking_fail(op, rc, NULL);
        else if ((rc = send_blocking(op, s->ptr)) != MPI_SUCCESS)
            blocking_fail(op, rc, "a send");
        else
            op->done = op->n;
    } else {
        recv_blocking(op, s->ptr);
    }
    mgp2p_lock();
    mgdev_stage_put(s);
    mgp2p_op_unstage(op); /* the host method's copy */
    if (op->err == MPI_SUCCESS)
        mgp2p_engine.stats.ops[MGP2P_PROTO_PLAIN]++;
    mgp2p_unlock();
    op->state = MGP2P_OP_DONE;
    return 1;
}
