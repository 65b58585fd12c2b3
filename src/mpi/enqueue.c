/*
 * The MPIX_Enqueue_ calls and MPIX_Event_from_request: MPI operations
 * ordered by OpenCL events (doc/design.md, "Enqueued operations").
 *
 * An enqueued operation is a job.  On the caller's queue it is a user event
 * (clCreateUserEvent) that the library completes: a marker carrying the
 * call's wait list says when the job may start (its callback), and on an
 * in-order queue a barrier holds back every command enqueued later until the
 * job is over (it waits for a second user event, bgate, set right after the
 * job's own).  The MPI work runs on the enqueue thread, started
 * at the first call: it starts the jobs whose marker completed, tests those
 * in flight, and sets each user event's status when its job is done.  A send
 * or receive is an operation of the point-to-point engine (mgp2p_op_init,
 * its protocols and progress), except a host send and an operation that
 * moves nothing, which go to PMPI.  A device file access goes through the
 * library's MPI_File_write_at / MPI_File_read_at (file.c, pipelined), a host
 * one packs through the interposed MPI_Pack and MPI_Unpack and accesses the
 * file through PMPI.
 *
 * The pack of a short device send and the unpack of a short device receive
 * (up to MPIGPU_ENQUEUE_QUEUE_MAX) are commands on the caller's queue, into
 * and out of page-locked staging: the send's pack is its gate, and the
 * receive's unpack waits for a second user event (net) that the thread sets
 * once the message is in.  Every other command that moves an enqueued
 * operation's data goes on a queue that the application's commands cannot
 * hold back: the operations are built, and files accessed, under
 * mgdev_own_scope, so that an operation on a buffer of a context whose
 * engine packs on the application's queue (the default queue, an adopted
 * one) packs on a second engine of that context, with a queue of its own.
 * Otherwise a kernel enqueued after a receive on the default queue, which
 * waits for the receive's event, would hold back the receive's own unpack: a
 * deadlock.
 *
 * The enqueue thread calls MPI while the application's threads may, so MPI
 * must run at MPI_THREAD_MULTIPLE: init.c asks for it whatever level the
 * application asked for when the program refers to an enqueue call
 * (MPIGPU_ENQUEUE_PROGRESS=auto) or always (thread).
 *
 * Locks: enq.lock guards the job list, the counters and the condition.  It
 * is held only to link, unlink and wait, never across an MPI or OpenCL
 * call, because OpenCL runs a marker's callback (which takes it) on a
 * runtime thread that the enqueue thread may itself be waiting for (a pack
 * engine's clFinish), or inside clSetUserEventStatus.  Once a job is
 * listed, its fields belong to the enqueue thread, but gate and
 * gate_status, which the callback writes (release/acquire on gate).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpigpu.h"
#include "mgerr.h"
#include "mglog.h"
#include "mgspin.h"
#include "mgmpi.h"
#include "registry.h"

/* While operations are in flight the thread polls MPI (a pass tests each
   one) for ENQ_SPIN_NS after the last pass that moved anything, then waits
   on its condition for a nap that doubles from ENQ_NAP_MIN_NS to
   ENQ_NAP_MAX_NS until something moves: MPI has no way to wake it when a
   message arrives, while a call or a marker's callback does (enq_kick).
   With nothing in flight it watches for a wake-up for ENQ_IDLE_SPIN_NS
   (mgspin.h), then sleeps until one. */
#define ENQ_SPIN_NS 200000
#define ENQ_NAP_MIN_NS 20000
#define ENQ_NAP_MAX_NS 1000000
#define ENQ_IDLE_SPIN_NS 20000
/* A job's gate opens at its marker's callback or at the first pass that
   reads the marker complete, whichever comes first; while a job waits for
   its gate the thread passes as while operations are in flight.  The status
   is read because a callback can come late: on an H100 shared by two
   processes, the callback of a marker behind a barrier on a user event came
   about 20 ms after the marker completed in some runs (eventprobe, "behind_cb"
   20,075 us against "behind_poll" 14 us, issue 23), and PoCL 3.1 calls no
   callback at all for a command that failed (a failed wait-list event). */
/* How long a job whose gate failed on an in-order queue waits for the
   runtime to fail the commands queued behind its marker (its unpack, its
   barrier) before it sets its own events: PoCL 3.1 fails them in the thread
   that failed the wait-list event, and when this thread fails net or the
   job's event while that cascade is still under way, two threads fail one
   command at once and PoCL aborts (pocl_update_event_running_unlocked:
   event->status == CL_SUBMITTED).  A runtime that fails nothing behind a
   failed command is waited for this long. */
#define ENQ_FAIL_SETTLE_NS 50000000

typedef enum enq_part_kind {
    ENQ_OP,    /* an operation of the point-to-point engine */
    ENQ_SEND,  /* PMPI_Isend: a host buffer, or nothing to move */
    ENQ_RECV,  /* PMPI_Irecv of nothing (count 0, MPI_PROC_NULL) */
    ENQ_REQ,   /* a request taken over (MPIX_Event_from_request) */
    ENQ_START, /* MPI_Start of the caller's persistent request */
    ENQ_WRITE, /* MPI-IO at an explicit offset */
    ENQ_READ
} enq_part_kind_t;

/* One MPI operation of a job. */
typedef struct enq_part {
    enq_part_kind_t kind;
    int done, err;   /* err: an MPI error code */
    mgp2p_op_t *op;  /* ENQ_OP (heap; held comm and type) */
    MPI_Request req; /* the request in flight */
    const void *buf; /* ENQ_SEND, ENQ_RECV, files: posted at start */
    int count;
    MPI_Datatype dt; /* a duplicate of the caller's derived type, or a named one */
    int dt_own;
    int peer, tag;
    MPI_Comm comm;
    MPI_Request hold; /* an MPI reference to comm, as mgp2p_op_hold */
    MPI_File fh;
    MPI_Offset offset;
    int dev; /* files: buf is a device address */
    /* On the caller's queue (an ENQ_OP of a device buffer, up to
       MPIGPU_ENQUEUE_QUEUE_MAX packed bytes): the n packed bytes in host
       memory of the part's own.  A send's op sends them (op->packed) once
       the queue packed them there; a receive's op is a host receive into
       them, and dop, never started, is the device buffer's operation, whose
       type, memory and engine the unpack and the tail fill use. */
    char *stg;
    mgdev_stage_t *stage; /* stg's buffer of the staging pool (page-locked) */
    int64_t n;
    mgp2p_op_t *dop;
} enq_part_t;

/* Events of commands the library enqueued for a job besides its marker and
   barrier (the on-queue receive's net user event and unpack, a pack kernel,
   a staging write), kept until the job is retired, as the barrier is. */
#define ENQ_HELD 8

typedef struct enq_job {
    struct enq_job *prev, *next;
    const char *fn;
    cl_event user;   /* the job on the queue (the library's reference) */
    cl_event marker; /* completes when the job may start; NULL: it may now */
    /* The in-order queue's barrier behind the job, kept until the job's
       event is set: PoCL 3.1 aborts (pocl_update_event_failed) when a
       command whose event nobody holds fails with commands behind it. */
    cl_event barrier;
    /* What the barrier waits for: a user event of the job's own, set to
       CL_COMPLETE right after the job's event (user) gets its status.  The
       barrier never waits for user itself: when user failed while the
       command queued before the barrier was completing in a runtime thread,
       PoCL 3.1 had the barrier both run and fail, and aborted
       (pocl_update_event_running_unlocked: event->status == CL_SUBMITTED).
       So a failed job does not fail the commands queued after it (OpenCL
       leaves that to the implementation); its own event carries the error. */
    cl_event bgate;
    /* An on-queue receive: net, a user event set once the message is in
       the part's staging, gates the unpack on the caller's queue, whose
       event (unpack) must complete before the job's.  held: see ENQ_HELD. */
    cl_event net, unpack;
    cl_event held[ENQ_HELD];
    int nheld;
    int net_set, unpacked;
    int failed_seen;   /* the thread has acted on a failed gate */
    uint64_t t_failed; /* when (mg_clock_ns) */
    cl_int unpack_status;
    atomic_int gate; /* 1 once it may start; then gate_status is the marker's */
    cl_int gate_status;
    /* Who opens the gate (the callback or a pass) sets gate_status and
       gate; claim makes it one of them.  cb_wait: the marker's callback is
       registered and has not run, so the job's memory stays (job_drop). */
    atomic_int claim, cb_wait;
    int started;
    /* The trace (MPIGPU_VERBOSE=1 and more, enq_trace): when the call
       returned, the gate opened, the MPI work started and ended (ns), and
       whether a poll rather than the callback opened the gate. */
    uint64_t t_call, t_gate, t_start, t_done;
    int polled;
    int nparts;
    enq_part_t part[2];
} enq_job_t;

/* The events of a finished job, released once the barrier behind it has
   completed, and by a caller's thread (at its next enqueue call, or at
   MPI_Finalize), never by the enqueue thread: PoCL 3.1 does not hold the
   events of a command's wait list (pocl issue 1431), nor the last command of
   a queue, which a clEnqueue in another thread reads while the event is
   freed; either way it aborted in pocl_lock_events_inorder. */
typedef struct enq_retired {
    struct enq_retired *next;
    cl_event barrier; /* released with the others once complete */
    int n;
    cl_event ev[ENQ_HELD + 2]; /* user, marker, held */
} enq_retired_t;

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* a job was listed or may start, or stop */
    pthread_t tid;
    int on, stop;
    enq_job_t *head;
    enq_retired_t *retired; /* under lock */
    int pending;            /* wake-ups the thread has not seen (written under
                               lock, read by the thread's spin without it) */
    int inflight;           /* jobs started and not finished */
    enq_job_t *late;        /* finished jobs whose gate callback has not run (under lock) */
    /* The trace's sums (enqueue thread only): jobs, and ns from the call to
       the gate, the gate to the start, the start to the MPI work's end, and
       that end to the event's completion; gates opened by a poll. */
    int trace;
    long long t_jobs, t_polled;
    uint64_t t_sum[4];
} enq = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static char empty[1]; /* the buffer of an operation that moves nothing */

static void enq_kick(void)
{
    pthread_mutex_lock(&enq.lock);
    __atomic_add_fetch(&enq.pending, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&enq.wake);
    pthread_mutex_unlock(&enq.lock);
}

/* On an OpenCL runtime thread: record, wake the enqueue thread, nothing
   more (no MPI, no OpenCL). */
/* Open job's gate with the marker's status st, unless it is open already. */
static void gate_open(enq_job_t *job, cl_int st, int polled)
{
    if (atomic_exchange_explicit(&job->claim, 1, memory_order_acq_rel))
        return;
    job->gate_status = st;
    job->polled = polled;
    if (enq.trace)
        job->t_gate = mg_clock_ns();
    atomic_store_explicit(&job->gate, 1, memory_order_release);
}

static void CL_CALLBACK gate_cb(cl_event ev, cl_int status, void *arg)
{
    enq_job_t *job = arg;
    (void)ev;
    gate_open(job, status, 0);
    /* The last touch of job: once cb_wait is clear the thread may free it. */
    atomic_store_explicit(&job->cb_wait, 0, memory_order_release);
    enq_kick();
}

/* ---- the parts of a job ---- */

static void part_clear(enq_part_t *p)
{
    p->req = p->hold = MPI_REQUEST_NULL;
    p->dt = MPI_DATATYPE_NULL;
    p->fh = MPI_FILE_NULL;
    p->comm = MPI_COMM_NULL;
}

/* Keep dt for a start after the call returned, whatever the caller frees:
   a duplicate of a derived type (committed as dt is). */
static int part_keep_type(enq_part_t *p, MPI_Datatype dt)
{
    if (mgdt_predefined(dt)) {
        p->dt = dt;
        return MPI_SUCCESS;
    }
    int rc = PMPI_Type_dup(dt, &p->dt);
    p->dt_own = rc == MPI_SUCCESS;
    return rc;
}

static int part_keep_comm(enq_part_t *p, MPI_Comm comm)
{
    p->comm = comm;
    if (comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF)
        return MPI_SUCCESS;
    return PMPI_Recv_init(empty, 0, MPI_BYTE, MPI_PROC_NULL, 0, comm, &p->hold);
}

static void part_release(enq_part_t *p)
{
    if (p->op)
        mgp2p_op_free(p->op);
    p->op = NULL;
    if (p->dop)
        mgp2p_op_free(p->dop);
    p->dop = NULL;
    if (p->stage) {
        mgp2p_lock();
        mgdev_stage_put(p->stage);
        mgp2p_unlock();
    }
    p->stage = NULL;
    p->stg = NULL;
    if (p->dt_own)
        PMPI_Type_free(&p->dt);
    p->dt_own = 0;
    if (p->hold != MPI_REQUEST_NULL)
        PMPI_Request_free(&p->hold);
}

/* Whether op, a device buffer's operation, packs or unpacks on the
   caller's queue: its buffer is of the queue's context and its engine of
   the queue's device (whose kernels the queue runs), it is not
   host-coherent memory (kept coherent by the library's own commands), and
   it moves from 1 byte to MPIGPU_ENQUEUE_QUEUE_MAX. */
static int part_on_queue(const mgp2p_op_t *op, cl_command_queue queue, cl_context qctx)
{
    cl_device_id qdev = NULL;
    if (!op->mem || !op->pk || op->shared || op->n <= 0 || op->n > INT_MAX ||
        (size_t)op->n > mgdev_state.settings.enqueue_queue_max || mgpk_ctx_context(op->pk) != qctx)
        return 0;
    return clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(qdev), &qdev, NULL) == CL_SUCCESS &&
           qdev == mgpk_ctx_device(op->pk);
}

/* Make p an on-queue part of op (part_on_queue) where the staging pool
   gives page-locked host memory for it and still has a chunk for another
   operation: a transfer between the device and pageable memory is not
   asynchronous on every runtime (NVIDIA stages it, and may block the caller
   until the queue reaches it).  A send's op then sends from the staging; a
   receive's becomes p->dop, and p->op a host receive into the staging.
   Else *on = 0 and op stays the engine's. */
static int part_queue_init(enq_part_t *p, mgp2p_op_t *op, const char *fn, int send, int *on)
{
    int rc = MPI_SUCCESS;
    *on = 0;
    if ((size_t)op->n <= mgdev_stage_chunk()) {
        mgp2p_lock();
        rc = mgdev_stage_get_extra((size_t)op->n, &p->stage);
        mgp2p_unlock();
    }
    if (rc != MPI_SUCCESS || !p->stage)
        return rc;
    *on = 1;
    p->n = op->n;
    p->stg = p->stage->ptr;
    MGLOG_DEBUG(MGLOG_MPI, "%s: the %s of %lld B runs on the caller's queue", fn,
                send ? "pack" : "unpack", (long long)op->n);
    if (send) {
        op->packed = p->stg;
        p->op = op;
        return MPI_SUCCESS;
    }
    mgp2p_op_t *h = calloc(1, sizeof(*h));
    if (!h)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn);
    rc = mgp2p_op_init_host(h, fn, p->stg, (int)p->n, MPI_BYTE, op->peer, op->tag, op->comm);
    if (rc != MPI_SUCCESS) {
        mgp2p_op_free(h);
        return rc;
    }
    p->dop = op;
    p->op = h;
    return MPI_SUCCESS;
}

/* A send (send 1) or receive part: an operation of the engine for a device
   buffer or a host receive (which may meet a message in pieces, and whose
   errors must reach the event, not an error handler), PMPI for a host send
   and for an operation that moves nothing.  *raised: MPI raised the error
   already. */
static int part_p2p(enq_part_t *p, const char *fn, int send, const void *buf, int count,
                    MPI_Datatype dt, int peer, int tag, MPI_Comm comm, cl_command_queue queue,
                    cl_context qctx, int *raised)
{
    mgp2p_op_t *op = NULL;
    int rc = mgmpi_check_p2p(fn, send, count, dt, peer, tag, comm, raised);
    MG_CHECK(rc, fn_exit);
    int dev = mgdev_buf_is_device(buf, count, dt);
    p->count = count;
    p->peer = peer;
    p->tag = tag;
    p->buf = buf;
    if (dev || !send) {
        if (!(op = calloc(1, sizeof(*op))))
            MG_FAIL(rc, fn_exit, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn);
        rc = dev ? mgp2p_op_init(op, send ? MGP2P_OP_SEND : MGP2P_OP_RECV, fn, buf, count, dt, peer,
                                 tag, comm)
                 : mgp2p_op_init_host(op, fn, (void *)buf, count, dt, peer, tag, comm);
        MG_CHECK(rc, fn_exit);
        if (!mgp2p_op_trivial(op)) {
            p->kind = ENQ_OP;
            int on = 0;
            if (dev && part_on_queue(op, queue, qctx)) {
                rc = part_queue_init(p, op, fn, send, &on);
                if (rc != MPI_SUCCESS) {
                    if (p->op != op && p->dop != op)
                        mgp2p_op_free(op);
                    return rc;
                }
            }
            if (!on)
                p->op = op;
            mgp2p_lock();
            rc = mgp2p_op_hold(p->op);
            mgp2p_unlock();
            return rc;
        }
        mgp2p_op_free(op);
        op = NULL;
        p->buf = empty;
    } else {
        rc = mgmpi_check_type(fn, dt);
        MG_CHECK(rc, fn_exit);
    }
    p->kind = send ? ENQ_SEND : ENQ_RECV;
    rc = part_keep_type(p, dt);
    if (rc == MPI_SUCCESS)
        rc = part_keep_comm(p, comm);
fn_exit:
    if (op)
        mgp2p_op_free(op);
    return rc;
}

/* A file part: the arguments as MPI checks them, and a device buffer's
   bytes against its allocation (an operation of the engine built and
   dropped, as MPI_Sendrecv's dry run). */
static int part_file(enq_part_t *p, const char *fn, int write, MPI_File fh, MPI_Offset offset,
                     const void *buf, int count, MPI_Datatype dt)
{
    int rc = MPI_SUCCESS, size = 0;
    if (fh == MPI_FILE_NULL)
        MG_FAIL(rc, fn_exit, MPI_ERR_FILE, "mpigpu: %s: fh is MPI_FILE_NULL", fn);
    if (count < 0)
        MG_FAIL(rc, fn_exit, MPI_ERR_COUNT, "mpigpu: %s: count %d is negative", fn, count);
    if (offset < 0)
        MG_FAIL(rc, fn_exit, MPI_ERR_ARG, "mpigpu: %s: offset %lld is negative", fn,
                (long long)offset);
    rc = mgmpi_check_type(fn, dt);
    MG_CHECK(rc, fn_exit);
    p->kind = write ? ENQ_WRITE : ENQ_READ;
    p->fh = fh;
    p->offset = offset;
    p->buf = buf;
    p->count = count;
    p->dev = mgdev_buf_is_device(buf, count, dt);
    if (p->dev) {
        mgp2p_op_t dry = {0};
        rc = mgp2p_op_init(&dry, write ? MGP2P_OP_SEND : MGP2P_OP_RECV, fn, buf, count, dt, 0, 0,
                           MPI_COMM_SELF);
        mgp2p_op_release(&dry);
        MG_CHECK(rc, fn_exit);
        rc = PMPI_Pack_size(count, dt, MPI_COMM_SELF, &size);
        MG_CHECK(rc, fn_exit);
    }
    rc = part_keep_type(p, dt);
fn_exit:
    return rc;
}

/* A file access, run to its end on the enqueue thread.  A device buffer's
   goes through the library's MPI_File_write_at or MPI_File_read_at
   (file.c): in place where the buffer's storage is host memory, else in
   pieces of a staging chunk, the device moving one piece while MPI writes or
   reads the other.  A host buffer's: the packed bytes, as MPI_BYTE (ROMIO's
   own walk of a host type with a negative displacement wrote the wrong
   bytes in the test). */
static int part_file_run(enq_part_t *p)
{
    MPI_Status st;
    char *host = NULL;
    int size = 0, pos = 0, got = 0, rc;
    if (p->dev)
        return p->kind == ENQ_WRITE
                   ? MPI_File_write_at(p->fh, p->offset, p->buf, p->count, p->dt, &st)
                   : MPI_File_read_at(p->fh, p->offset, (void *)p->buf, p->count, p->dt, &st);
    rc = PMPI_Pack_size(p->count, p->dt, MPI_COMM_SELF, &size);
    MG_CHECK(rc, fn_exit);
    if (!(host = malloc(size > 0 ? (size_t)size : 1)))
        MG_FAIL(rc, fn_exit, MPI_ERR_NO_MEM, "mpigpu: out of host memory (%d bytes)", size);
    if (p->kind == ENQ_WRITE) {
        rc = MPI_Pack(p->buf, p->count, p->dt, host, size, &pos, MPI_COMM_SELF);
        if (rc == MPI_SUCCESS)
            rc = PMPI_File_write_at(p->fh, p->offset, host, size, MPI_BYTE, &st);
        goto fn_exit;
    }
    rc = PMPI_File_read_at(p->fh, p->offset, host, size, MPI_BYTE, &st);
    MG_CHECK(rc, fn_exit);
    /* Past the end of the file fewer bytes come, as MPI_File_read_at
       leaves the rest of buf: only whole instances are unpacked. */
    rc = PMPI_Get_count(&st, MPI_BYTE, &got);
    MG_CHECK(rc, fn_exit);
    int whole = size > 0 ? (int)((long long)got * p->count / size) : 0;
    if (whole > 0)
        rc = MPI_Unpack(host, size, &pos, (void *)p->buf, whole, p->dt, MPI_COMM_SELF);
fn_exit:
    free(host);
    return rc;
}

static void part_start(enq_part_t *p)
{
    int rc = MPI_SUCCESS;
    switch (p->kind) {
    case ENQ_OP:
        rc = mgp2p_op_start(p->op, 0);
        break;
    case ENQ_SEND:
        rc = PMPI_Isend(p->buf, p->count, p->dt, p->peer, p->tag, p->comm, &p->req);
        break;
    case ENQ_RECV:
        rc = PMPI_Irecv((void *)p->buf, p->count, p->dt, p->peer, p->tag, p->comm, &p->req);
        break;
    case ENQ_START:
        rc = MPI_Start(&p->req);
        break;
    case ENQ_REQ:
        break;
    case ENQ_WRITE:
    case ENQ_READ:
        rc = part_file_run(p);
        p->done = 1;
        break;
    }
    if (rc != MPI_SUCCESS) {
        p->err = rc;
        p->done = 1;
    }
}

static void part_test(enq_part_t *p)
{
    int flag = 0, rc = MPI_SUCCESS;
    switch (p->kind) {
    case ENQ_OP:
        mgp2p_lock();
        flag = p->op->state == MGP2P_OP_DONE;
        mgp2p_unlock();
        if (flag && (rc = p->op->err) != MPI_SUCCESS)
            MGLOG_INFO(MGLOG_MPI, "%s failed after its call returned: %s", p->op->fn,
                       p->op->msg ? p->op->msg : "(no message)");
        break;
    case ENQ_SEND:
    case ENQ_RECV:
        rc = PMPI_Test(&p->req, &flag, MPI_STATUS_IGNORE);
        break;
    case ENQ_REQ:
    case ENQ_START:
        rc = MPI_Test(&p->req, &flag, MPI_STATUS_IGNORE);
        if ((flag || rc != MPI_SUCCESS) && p->kind == ENQ_REQ && p->req != MPI_REQUEST_NULL)
            MPI_Request_free(&p->req); /* persistent, and ours */
        break;
    case ENQ_WRITE:
    case ENQ_READ:
        flag = 1;
        break;
    }
    if (flag || rc != MPI_SUCCESS) {
        p->done = 1;
        p->err = rc;
    }
}

/* ---- jobs and the enqueue thread ---- */

static enq_job_t *job_new(const char *fn, int nparts)
{
    enq_job_t *job = calloc(1, sizeof(*job));
    if (!job)
        return NULL;
    job->fn = fn;
    job->nparts = nparts;
    for (int i = 0; i < nparts; i++)
        part_clear(&job->part[i]);
    return job;
}

/* Free a job that was never listed, or was unlinked (MPI still running). */
static void job_free(enq_job_t *job)
{
    for (int i = 0; i < job->nparts; i++)
        part_release(&job->part[i]);
    if (job->marker)
        clReleaseEvent(job->marker);
    if (job->barrier)
        clReleaseEvent(job->barrier);
    for (int i = 0; i < job->nheld; i++)
        clReleaseEvent(job->held[i]);
    if (job->user)
        clReleaseEvent(job->user);
    free(job);
}

static void retired_release(enq_retired_t *r)
{
    for (int i = 0; i < r->n; i++)
        clReleaseEvent(r->ev[i]);
    if (r->barrier)
        clReleaseEvent(r->barrier);
    free(r);
}

/* In a caller's thread: release the retired events whose barrier completed
   (all when all). */
static void retired_sweep(int all)
{
    pthread_mutex_lock(&enq.lock);
    enq_retired_t *list = enq.retired, *keep = NULL;
    enq.retired = NULL;
    pthread_mutex_unlock(&enq.lock);
    while (list) {
        enq_retired_t *r = list;
        list = r->next;
        cl_int st = CL_COMPLETE;
        if (r->barrier && !all)
            clGetEventInfo(r->barrier, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
        if (st > CL_COMPLETE) {
            r->next = keep;
            keep = r;
            continue;
        }
        retired_release(r);
    }
    if (!keep)
        return;
    pthread_mutex_lock(&enq.lock);
    enq_retired_t *tail = keep;
    while (tail->next)
        tail = tail->next;
    tail->next = enq.retired;
    enq.retired = keep;
    pthread_mutex_unlock(&enq.lock);
}

/* The execution status a finished job gives its event. */
static cl_int job_status(const enq_job_t *job)
{
    if (job->gate_status < 0)
        return job->gate_status; /* passed on as it is */
    if (job->unpack_status < 0 && job->part[0].err == MPI_SUCCESS)
        return job->unpack_status;
    for (int i = 0; i < job->nparts; i++) {
        int cls = MPI_ERR_OTHER;
        if (job->part[i].err == MPI_SUCCESS)
            continue;
        PMPI_Error_class(job->part[i].err, &cls);
        return MPIX_ENQUEUE_ERROR_BASE - cls;
    }
    return CL_COMPLETE;
}

/* An on-queue receive whose MPI part is over (or never started): fill what
   the message left of the staging with the buffer's own bytes, so that the
   unpack rewrites them unchanged (a short message, a failure: MPI_Recv
   leaves the rest of its buffer), open net, then 1 once the unpack is over.
   Other jobs: 1. */
static int job_unpack_step(enq_job_t *job, int *moved, int *waiting)
{
    if (!job->net)
        return 1;
    if (!job->net_set) {
        enq_part_t *p = &job->part[0]; /* the receive comes first */
        int64_t got = job->started && p->err == MPI_SUCCESS ? p->op->done : 0;
        cl_int st = job->gate_status < 0 ? job->gate_status : CL_COMPLETE;
        if (got < p->n && st == CL_COMPLETE) {
            char *all = malloc((size_t)p->n);
            int rc = all ? mgp2p_op_pack_all(p->dop, all) : MPI_ERR_NO_MEM;
            if (rc == MPI_SUCCESS)
                memcpy(p->stg + got, all + got, (size_t)(p->n - got));
            else if (p->err == MPI_SUCCESS)
                p->err = rc;
            if (rc != MPI_SUCCESS)
                st = MPIX_ENQUEUE_ERROR_BASE - MPI_ERR_OTHER; /* the unpack must not run */
            free(all);
        }
        job->net_set = 1;
        *moved = 1;
        clSetUserEventStatus(job->net, st);
    }
    if (!job->unpacked) {
        cl_int st = CL_QUEUED;
        clGetEventInfo(job->unpack, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
        if (st > CL_COMPLETE) {
            (*waiting)++; /* the thread's poll comes back if no callback does */
            return 0;
        }
        job->unpacked = 1;
        job->unpack_status = st;
        *moved = 1;
    }
    return 1;
}

/* 1 once the job whose gate failed may set its own events: on an in-order
   queue, when the runtime has failed the barrier behind it (and so every
   command of the job before it), or ENQ_FAIL_SETTLE_NS after the failure was
   seen (see there). */
static int job_fail_settled(enq_job_t *job)
{
    if (!job->barrier)
        return 1; /* out of order: nothing of the job waits for the marker */
    cl_int st = CL_QUEUED;
    clGetEventInfo(job->barrier, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
    if (st <= CL_COMPLETE)
        return 1;
    if (mg_clock_ns() - job->t_failed < ENQ_FAIL_SETTLE_NS)
        return 0;
    MGLOG_DEBUG(MGLOG_MPI,
                "%s: a wait-list event failed and the runtime has not failed the commands "
                "behind it after %d ms: the job's events are set now",
                job->fn, ENQ_FAIL_SETTLE_NS / 1000000);
    return 1;
}

/* Start job when it may, test its parts; 1 when it is finished.  *moved is
   set when anything changed; *waiting counts the jobs the thread must come
   back to without a wake-up (a gate, an unpack). */
static int job_step(enq_job_t *job, int *moved, int *ops, int *waiting)
{
    int all = 1;
    if (!job->started) {
        if (!atomic_load_explicit(&job->gate, memory_order_acquire)) {
            cl_int st = CL_QUEUED;
            clGetEventInfo(job->marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
            if (st > CL_COMPLETE) {
                (*waiting)++;
                return 0;
            }
            gate_open(job, st, 1); /* or the callback just did */
        }
        if (job->gate_status < 0) {
            /* A wait-list event failed: nothing starts. */
            if (!job->failed_seen) {
                *moved = job->failed_seen = 1;
                job->t_failed = mg_clock_ns();
            }
            if (!job_fail_settled(job)) {
                (*waiting)++;
                return 0;
            }
            return job_unpack_step(job, moved, waiting);
        }
        *moved = 1;
        job->started = 1;
        if (enq.trace)
            job->t_start = mg_clock_ns();
        pthread_mutex_lock(&enq.lock);
        enq.inflight++;
        pthread_mutex_unlock(&enq.lock);
        for (int i = 0; i < job->nparts; i++)
            part_start(&job->part[i]);
        mgp2p_progress(); /* launch the first pieces now */
    }
    for (int i = 0; i < job->nparts; i++) {
        enq_part_t *p = &job->part[i];
        if (!p->done) {
            part_test(p);
            *moved |= p->done;
        }
        *ops += !p->done && p->kind == ENQ_OP;
        all &= p->done;
    }
    if (all && enq.trace && !job->t_done)
        job->t_done = mg_clock_ns();
    return all && job_unpack_step(job, moved, waiting);
}

static void job_unlink_locked(enq_job_t *job)
{
    if (job->prev)
        job->prev->next = job->next;
    else
        enq.head = job->next;
    if (job->next)
        job->next->prev = job->prev;
    if (job->started)
        enq.inflight--;
}

/* The trace of a finished job: one line at debug level, and the sums that
   MPI_Finalize reports.  A job that never started counts only its gate. */
static void trace_job(const enq_job_t *job)
{
    uint64_t now = mg_clock_ns();
    /* No t_gate: the gate was open at the call (an out-of-order queue, an
       empty wait list). */
    uint64_t gate = job->t_gate ? job->t_gate : job->started ? job->t_start : now;
    uint64_t start = job->started ? job->t_start : gate;
    uint64_t done = job->started && job->t_done ? job->t_done : start;
    uint64_t d[4] = {gate > job->t_call ? gate - job->t_call : 0, start - gate, done - start,
                     now - done};
    enq.t_jobs++;
    enq.t_polled += job->polled;
    for (int i = 0; i < 4; i++)
        enq.t_sum[i] += d[i];
    MGLOG_DEBUG(MGLOG_MPI,
                "enqueue trace: %s: call to gate %.1f us (%s), gate to start %.1f us, start to "
                "done %.1f us, done to event %.1f us",
                job->fn, d[0] * 1e-3, job->polled ? "poll" : "callback", d[1] * 1e-3, d[2] * 1e-3,
                d[3] * 1e-3);
}

/* Free job, or keep it on the late list until its gate callback has run
   (a pass opened the gate first): the callback writes into it. */
static void job_drop(enq_job_t *job)
{
    if (!atomic_load_explicit(&job->cb_wait, memory_order_acquire)) {
        job_free(job);
        return;
    }
    pthread_mutex_lock(&enq.lock);
    job->next = enq.late;
    enq.late = job;
    pthread_mutex_unlock(&enq.lock);
}

/* Free the late jobs whose callback has run. */
static void late_sweep(void)
{
    pthread_mutex_lock(&enq.lock);
    enq_job_t *list = enq.late, *keep = NULL;
    enq.late = NULL;
    pthread_mutex_unlock(&enq.lock);
    while (list) {
        enq_job_t *job = list;
        list = job->next;
        if (atomic_load_explicit(&job->cb_wait, memory_order_acquire)) {
            job->next = keep;
            keep = job;
        } else {
            job_free(job);
        }
    }
    if (!keep)
        return;
    pthread_mutex_lock(&enq.lock);
    enq_job_t *tail = keep;
    while (tail->next)
        tail = tail->next;
    tail->next = enq.late;
    enq.late = keep;
    pthread_mutex_unlock(&enq.lock);
}

/* Complete a finished job's event and free the job.  Not under enq.lock:
   completing the event may run another job's gate_cb in this thread. */
static void job_finish(enq_job_t *job)
{
    cl_int status = job_status(job);
    pthread_mutex_lock(&enq.lock);
    job_unlink_locked(job);
    pthread_mutex_unlock(&enq.lock);
    for (int i = 0; i < job->nparts; i++)
        part_release(&job->part[i]);
    clSetUserEventStatus(job->user, status);
    if (job->bgate)
        clSetUserEventStatus(job->bgate, CL_COMPLETE);
    if (enq.trace)
        trace_job(job);
    enq_retired_t *r = malloc(sizeof(*r));
    if (r) {
        r->n = 0;
        r->ev[r->n++] = job->user;
        if (job->marker)
            r->ev[r->n++] = job->marker;
        for (int i = 0; i < job->nheld; i++)
            r->ev[r->n++] = job->held[i];
        r->barrier = job->barrier;
        pthread_mutex_lock(&enq.lock);
        r->next = enq.retired;
        enq.retired = r;
        pthread_mutex_unlock(&enq.lock);
        job->user = job->marker = job->barrier = NULL;
        job->nheld = 0;
    }
    job_drop(job);
}

/* One pass over the listed jobs; returns whether anything moved.  Jobs are
   linked at the head by the callers' threads and unlinked here only, so the
   next pointers this pass follows stay valid.  *waiting: see job_step. */
static int enq_pass(int *ops, int *waiting)
{
    int moved = 0, n = 0;
    *waiting = 0;
    if (enq.late)
        late_sweep(); /* a racy look: the next pass sees what this one misses */
    if (*ops)
        mgp2p_progress();
    pthread_mutex_lock(&enq.lock);
    enq_job_t *job = enq.head;
    pthread_mutex_unlock(&enq.lock);
    while (job) {
        int fin = job_step(job, &moved, &n, waiting);
        pthread_mutex_lock(&enq.lock);
        enq_job_t *next = job->next;
        pthread_mutex_unlock(&enq.lock);
        if (fin)
            job_finish(job);
        job = next;
    }
    *ops = n;
    return moved;
}

/* Wait on the condition until a wake-up or ns from now; lock held. */
static void enq_nap(uint64_t ns)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ns / 1000000000u);
    until.tv_nsec += (long)(ns % 1000000000u);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&enq.wake, &enq.lock, &until);
}

/* The enqueue thread.  A pass runs at each wake-up (a call listed a job, a
   marker's callback opened a gate, stop) and, while MPI work is in flight
   or a job waits for its gate or its unpack, in a spin of ENQ_SPIN_NS after
   the last pass that moved anything, then after naps of ENQ_NAP_MIN_NS
   doubling to ENQ_NAP_MAX_NS.  With nothing in flight it spins
   ENQ_IDLE_SPIN_NS for a wake-up, then sleeps on the condition. */
static void *enq_main(void *arg)
{
    int ops = 0, waiting = 0;
    uint64_t nap = ENQ_NAP_MIN_NS, last_move = mg_clock_ns();
    (void)arg;
    mgdev_own_scope(1); /* file accesses pack on engines of their own */
    pthread_mutex_lock(&enq.lock);
    for (;;) {
        if (enq.stop && !enq.inflight)
            break;
        if (!enq.pending && !enq.inflight && !waiting) {
            /* Nothing in flight: a wake-up comes from a call or a callback. */
            pthread_mutex_unlock(&enq.lock);
            MG_SPIN_WHILE(!__atomic_load_n(&enq.pending, __ATOMIC_ACQUIRE), ENQ_IDLE_SPIN_NS,
                          mg_cpu_relax());
            pthread_mutex_lock(&enq.lock);
            if (!enq.pending && !enq.inflight && !enq.stop)
                pthread_cond_wait(&enq.wake, &enq.lock);
            continue;
        }
        __atomic_store_n(&enq.pending, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&enq.lock);
        int moved = enq_pass(&ops, &waiting);
        if (moved) {
            last_move = mg_clock_ns();
            nap = ENQ_NAP_MIN_NS;
        } else if (mg_clock_ns() - last_move < ENQ_SPIN_NS) {
            /* Free at once where the core is idle; on an oversubscribed node
               it lets the peer rank and the runtime's threads run. */
            sched_yield();
        } else {
            /* Work in flight and nothing moved for a while: a nap that a
               call or a callback cuts short. */
            pthread_mutex_lock(&enq.lock);
            if (!enq.pending && !enq.stop)
                enq_nap(nap);
            if (nap < ENQ_NAP_MAX_NS)
                nap *= 2;
            continue;
        }
        pthread_mutex_lock(&enq.lock);
    }
    pthread_mutex_unlock(&enq.lock);
    return NULL;
}

int mgmpi_enq_init(void)
{
    enq.stop = 0;
    return MPI_SUCCESS;
}

/* Before the point-to-point engine stops: jobs in flight complete; jobs that
   never started fail (their events get an error status) and are dropped,
   except that the memory of a job whose marker may still call back is left
   (a job per call enqueued and never started before MPI_Finalize). */
void mgmpi_enq_fini(void)
{
    pthread_mutex_lock(&enq.lock);
    enq.stop = 1;
    int on = enq.on;
    pthread_cond_signal(&enq.wake);
    pthread_mutex_unlock(&enq.lock);
    if (on)
        pthread_join(enq.tid, NULL);
    enq.on = 0;
    if (enq.trace && enq.t_jobs > 0) {
        double n = (double)enq.t_jobs;
        MGLOG_INFO(MGLOG_MPI,
                   "enqueue trace: %lld jobs, mean us: call to gate %.1f, gate to start %.1f, "
                   "start to done %.1f, done to event %.1f; %lld gates found by a poll",
                   enq.t_jobs, enq.t_sum[0] * 1e-3 / n, enq.t_sum[1] * 1e-3 / n,
                   enq.t_sum[2] * 1e-3 / n, enq.t_sum[3] * 1e-3 / n, enq.t_polled);
    }
    retired_sweep(1);
    for (;;) {
        pthread_mutex_lock(&enq.lock);
        enq_job_t *job = enq.head;
        if (job)
            job_unlink_locked(job);
        pthread_mutex_unlock(&enq.lock);
        if (!job)
            break;
        int gated = atomic_load_explicit(&job->gate, memory_order_acquire);
        MGLOG_WARN(MGLOG_MPI, "MPI_Finalize: %s enqueued and not started: its event fails",
                   job->fn);
        if (job->net && !job->net_set)
            clSetUserEventStatus(job->net, MPIX_ENQUEUE_ERROR_BASE - MPI_ERR_OTHER);
        for (int i = 0; i < job->nparts; i++)
            part_release(&job->part[i]);
        clSetUserEventStatus(job->user, MPIX_ENQUEUE_ERROR_BASE - MPI_ERR_OTHER);
        if (job->bgate)
            clSetUserEventStatus(job->bgate, CL_COMPLETE);
        if (gated)
            job_drop(job);
    }
    /* Jobs whose gate callback never came stay (a failed marker on PoCL
       3.1, or a runtime that has not called back yet). */
    late_sweep();
}

/* ---- the calls ---- */

/* The enqueue thread, started at the first call; MPI must run at
   MPI_THREAD_MULTIPLE. */
static int enq_ready(const char *fn)
{
    int level = MPI_THREAD_SINGLE, rc = MPI_SUCCESS;
    PMPI_Query_thread(&level);
    if (level != MPI_THREAD_MULTIPLE)
        return mgerr_set(MPI_ERR_OTHER,
                         "mpigpu: %s: MPI runs below MPI_THREAD_MULTIPLE, and the enqueue "
                         "thread calls MPI: ask MPI_Init_thread for MPI_THREAD_MULTIPLE or set "
                         "MPIGPU_ENQUEUE_PROGRESS=thread (MPIGPU_ENQUEUE_PROGRESS=off, or the "
                         "enqueue calls reached through dlopen or a static link)",
                         fn);
    retired_sweep(0);
    pthread_mutex_lock(&enq.lock);
    if (!enq.on)
        enq.trace = mglog_enabled(MGLOG_LEVEL_INFO);
    if (enq.stop)
        rc = mgerr_set(MPI_ERR_OTHER, "mpigpu: %s: MPI_Finalize is under way", fn);
    else if (!enq.on) {
        if (pthread_create(&enq.tid, NULL, enq_main, NULL) == 0)
            enq.on = 1;
        else
            rc = mgerr_set(MPI_ERR_OTHER, "mpigpu: %s: cannot start the enqueue thread", fn);
    }
    pthread_mutex_unlock(&enq.lock);
    return rc;
}

static int enq_wait_list(const char *fn, cl_uint n, const cl_event *list)
{
    if ((n > 0 && !list) || (n == 0 && list))
        return mgerr_set(MPI_ERR_ARG,
                         "mpigpu: %s: num_events_in_wait_list is %u and event_wait_list is %s "
                         "(CL_INVALID_EVENT_WAIT_LIST)",
                         fn, n, list ? "not NULL" : "NULL");
    for (cl_uint i = 0; i < n; i++)
        if (!list[i])
            return mgerr_set(MPI_ERR_ARG, "mpigpu: %s: event_wait_list[%u] is NULL", fn, i);
    return MPI_SUCCESS;
}

/* The queue's context and order; the wait list's shape. */
static int enq_queue(const char *fn, cl_command_queue queue, cl_uint n, const cl_event *list,
                     cl_context *ctx, int *inorder)
{
    cl_command_queue_properties props = 0;
    if (!queue)
        return mgerr_set(MPI_ERR_ARG, "mpigpu: %s: queue is NULL", fn);
    cl_int e = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(*ctx), ctx, NULL);
    if (e == CL_SUCCESS)
        e = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof(props), &props, NULL);
    if (e != CL_SUCCESS)
        return mgerr_set(MPI_ERR_ARG, "mpigpu: %s: queue %p is not a command queue (%s)", fn,
                         (void *)queue, mgerr_cl_name(e));
    *inorder = !(props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    return enq_wait_list(fn, n, list);
}

/* A callback that only wakes the enqueue thread (no job: the thread polls
   the event's status, and frees the job once it is done). */
static void CL_CALLBACK unpack_cb(cl_event ev, cl_int status, void *arg)
{
    (void)ev;
    (void)status;
    (void)arg;
    enq_kick();
}

/* Enqueue on queue, after the wait list, the pack of send's buffer into its
   staging: a read of the run for contiguous data, else the pack engine's
   kernel into device memory of the call's own, then a read of it.  *done:
   the read's event (the caller's reference). */
static int part_pack_enqueue(enq_job_t *job, enq_part_t *p, cl_command_queue queue, cl_context ctx,
                             cl_uint n, const cl_event *list, cl_event *done)
{
    int rc = MPI_SUCCESS;
    cl_int e = CL_SUCCESS;
    mgp2p_op_t *op = p->op;
    cl_mem d = NULL;
    if (mgpk_contig(op->type, op->count)) {
        size_t off = (size_t)(op->origin + mgpk_contig_offset(op->type, op->count));
        e = clEnqueueReadBuffer(queue, op->mem, CL_FALSE, off, (size_t)p->n, p->stg, n, list, done);
        MG_CL_CHECK(e, "clEnqueueReadBuffer", rc, fn_exit);
        goto fn_exit;
    }
    d = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (size_t)p->n, NULL, &e);
    MG_CL_CHECK(e, "clCreateBuffer", rc, fn_exit);
    cl_event k = NULL;
    mgpk_buf_t typed = {.mem = op->mem, .offset = op->origin}, packed = {.mem = d};
    rc =
        mgpk_enqueue(op->pk, queue, op->type, op->count, 0, typed, packed, 0, p->n, n, list, &k, 0);
    MG_CHECK(rc, fn_exit);
    job->held[job->nheld++] = k;
    e = clEnqueueReadBuffer(queue, d, CL_FALSE, 0, (size_t)p->n, p->stg, 1, &k, done);
    MG_CL_CHECK(e, "clEnqueueReadBuffer", rc, fn_exit);
fn_exit:
    if (d)
        clReleaseMemObject(d); /* OpenCL keeps it until its commands end */
    return rc;
}

/* Enqueue on queue the unpack of recv's staging into its buffer, gated by
   the job's net event: a write of the run for contiguous data, else a write
   into device memory of the call's own and the pack engine's kernel from
   it.  job->unpack: the last command's event. */
static int part_unpack_enqueue(enq_job_t *job, enq_part_t *p, cl_command_queue queue,
                               cl_context ctx)
{
    int rc = MPI_SUCCESS;
    cl_int e = CL_SUCCESS;
    mgp2p_op_t *op = p->dop;
    cl_mem d = NULL;
    job->net = clCreateUserEvent(ctx, &e);
    MG_CL_CHECK(e, "clCreateUserEvent", rc, fn_exit);
    job->held[job->nheld++] = job->net;
    if (mgpk_contig(op->type, op->count)) {
        size_t off = (size_t)(op->origin + mgpk_contig_offset(op->type, op->count));
        cl_event lead = NULL;
        e = mgpk_write_queue(op->pk, queue, op->mem, off, p->stg, (size_t)p->n, CL_FALSE, 1,
                             &job->net, &job->unpack, &lead);
        if (lead)
            job->held[job->nheld++] = lead;
        MG_CL_CHECK(e, "clEnqueueWriteBuffer", rc, fn_exit);
        job->held[job->nheld++] = job->unpack;
        goto fn_exit;
    }
    d = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (size_t)p->n, NULL, &e);
    MG_CL_CHECK(e, "clCreateBuffer", rc, fn_exit);
    cl_event w = NULL;
    cl_event lead = NULL;
    e = mgpk_write_queue(op->pk, queue, d, 0, p->stg, (size_t)p->n, CL_FALSE, 1, &job->net, &w,
                         &lead);
    if (lead)
        job->held[job->nheld++] = lead;
    MG_CL_CHECK(e, "clEnqueueWriteBuffer", rc, fn_exit);
    job->held[job->nheld++] = w;
    mgpk_buf_t typed = {.mem = op->mem, .offset = op->origin}, packed = {.mem = d};
    rc = mgpk_enqueue(op->pk, queue, op->type, op->count, 1, typed, packed, 0, p->n, 1, &w,
                      &job->unpack, 0);
    MG_CHECK(rc, fn_exit);
    job->held[job->nheld++] = job->unpack;
fn_exit:
    if (d)
        clReleaseMemObject(d);
    return rc;
}

static void job_link(enq_job_t *job)
{
    pthread_mutex_lock(&enq.lock);
    job->prev = NULL;
    job->next = enq.head;
    if (enq.head)
        enq.head->prev = job;
    enq.head = job;
    if (enq.trace)
        job->t_call = mg_clock_ns();
    __atomic_add_fetch(&enq.pending, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&enq.wake);
    pthread_mutex_unlock(&enq.lock);
}

/* Put job on queue (its parts built) and hand it to the enqueue thread.  On
   failure job is freed here and nothing waits for it. */
static int job_enqueue(enq_job_t *job, cl_command_queue queue, cl_context ctx, int inorder,
                       cl_uint n, const cl_event *list, cl_event *event)
{
    int rc = MPI_SUCCESS, queued = 0;
    cl_int e = CL_SUCCESS;
    cl_event packed = NULL, *wl = NULL;
    enq_part_t *send = NULL, *recv = NULL;
    for (int i = 0; i < job->nparts; i++)
        if (job->part[i].stg) {
            if (job->part[i].dop)
                recv = &job->part[i];
            else
                send = &job->part[i];
        }
    job->user = clCreateUserEvent(ctx, &e);
    MG_CL_CHECK(e, "clCreateUserEvent", rc, fn_fail);
    /* A send's pack into its staging, first, after the wait list. */
    if (send) {
        queued = 1;
        rc = part_pack_enqueue(job, send, queue, ctx, n, list, &packed);
        MG_CHECK(rc, fn_fail);
    }
    if (send && job->nparts == 1) {
        job->marker = packed; /* the pack's end is the gate */
    } else if (inorder || n > 0 || packed) {
        /* With an empty wait list a marker waits for every command enqueued
           before it, which on an out-of-order queue no other command does. */
        cl_uint nw = n;
        const cl_event *w = list;
        if (packed && !inorder) {
            if (!(wl = malloc((n + 1) * sizeof(*wl))))
                MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", job->fn);
            for (cl_uint i = 0; i < n; i++)
                wl[i] = list[i];
            wl[n] = packed;
            nw = n + 1;
            w = wl;
        }
        if (packed)
            job->held[job->nheld++] = packed;
        e = clEnqueueMarkerWithWaitList(queue, nw, w, &job->marker);
        MG_CL_CHECK(e, "clEnqueueMarkerWithWaitList", rc, fn_fail);
    } else {
        atomic_store_explicit(&job->gate, 1, memory_order_relaxed);
    }
    /* A receive's unpack from its staging, once the message is there. */
    if (recv) {
        queued = 1;
        rc = part_unpack_enqueue(job, recv, queue, ctx);
        MG_CHECK(rc, fn_fail);
        /* Only a wake-up: the job is polled for the unpack's status, since
           PoCL calls no callback for a command that failed. */
        clSetEventCallback(job->unpack, CL_COMPLETE, unpack_cb, NULL);
    }
    if (inorder) {
        job->bgate = clCreateUserEvent(ctx, &e);
        MG_CL_CHECK(e, "clCreateUserEvent", rc, fn_fail);
        job->held[job->nheld++] = job->bgate;
        e = clEnqueueBarrierWithWaitList(queue, 1, &job->bgate, &job->barrier);
        MG_CL_CHECK(e, "clEnqueueBarrierWithWaitList", rc, fn_fail);
    }
    /* Submit the marker now: a runtime may hold commands back until the queue
       is flushed, and then the marker's callback never comes (NVIDIA: every
       enqueued operation waited for the enqueue thread's 5 ms poll). */
    e = clFlush(queue);
    MG_CL_CHECK(e, "clFlush", rc, fn_fail);
    if (event && clRetainEvent(job->user) == CL_SUCCESS)
        *event = job->user;
    /* The callback goes on before the job is listed: once listed, the
       enqueue thread may start, finish and free it at any time (a job whose
       gate is open already, on an out-of-order queue), so nothing here may
       touch it after job_link (ASan: a use after free of job->marker). */
    if (job->marker) {
        atomic_store_explicit(&job->cb_wait, 1, memory_order_relaxed);
        e = clSetEventCallback(job->marker, CL_COMPLETE, gate_cb, job);
        if (e != CL_SUCCESS) {
            /* The job fails now (its barrier waits for it to be over). */
            rc = mgerr_cl(e, "clSetEventCallback", __FILE__, __LINE__);
            gate_cb(job->marker, e, job);
            if (event) {
                clReleaseEvent(*event);
                *event = NULL;
            }
        }
    }
    free(wl);
    job_link(job);
    return rc;
fn_fail:
    free(wl);
    if (packed && job->marker != packed && !(job->nheld && job->held[job->nheld - 1] == packed))
        clReleaseEvent(packed);
    if (job->net)
        clSetUserEventStatus(job->net, MPIX_ENQUEUE_ERROR_BASE - MPI_ERR_OTHER);
    if (job->user)
        clSetUserEventStatus(job->user,
                             e != CL_SUCCESS ? e : MPIX_ENQUEUE_ERROR_BASE - MPI_ERR_OTHER);
    if (job->bgate)
        clSetUserEventStatus(job->bgate, CL_COMPLETE);
    /* A command already enqueued may still read or write the staging: it
       stays borrowed (on a failed enqueue only). */
    for (int i = 0; queued && i < job->nparts; i++)
        job->part[i].stage = NULL; /* the pool has one buffer less */
    job_free(job);
    return rc;
}

/* Both point-to-point calls: a receive part first, then a send part. */
static int enq_p2p(const char *fn, const void *sbuf, int scount, MPI_Datatype stype, int dest,
                   int stag, void *rbuf, int rcount, MPI_Datatype rtype, int source, int rtag,
                   MPI_Comm comm, int sends, int recvs, cl_command_queue queue, cl_uint n,
                   const cl_event *list, cl_event *event)
{
    int raised = 0, inorder = 1;
    cl_context ctx = NULL;
    enq_job_t *job = NULL;
    int rc = mgmpi_api_enter(fn);
    MG_CHECK(rc, fn_fail);
    rc = enq_queue(fn, queue, n, list, &ctx, &inorder);
    MG_CHECK(rc, fn_fail);
    rc = enq_ready(fn);
    MG_CHECK(rc, fn_fail);
    if (!(job = job_new(fn, sends + recvs)))
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn);
    mgdev_own_scope(1);
    if (recvs)
        rc = part_p2p(&job->part[0], fn, 0, rbuf, rcount, rtype, source, rtag, comm, queue, ctx,
                      &raised);
    if (rc == MPI_SUCCESS && sends)
        rc = part_p2p(&job->part[recvs], fn, 1, sbuf, scount, stype, dest, stag, comm, queue, ctx,
                      &raised);
    mgdev_own_scope(0);
    MG_CHECK(rc, fn_fail);
    rc = job_enqueue(job, queue, ctx, inorder, n, list, event);
    job = NULL;
    MG_CHECK(rc, fn_fail);
    return MPI_SUCCESS;
fn_fail:
    if (job)
        job_free(job);
    return mgmpi_raise(comm, rc, raised);
}

int MPIX_Enqueue_send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                      MPI_Comm comm, cl_command_queue queue, cl_uint num_events_in_wait_list,
                      const cl_event *event_wait_list, cl_event *event)
{
    return enq_p2p("MPIX_Enqueue_send", buf, count, datatype, dest, tag, NULL, 0, MPI_DATATYPE_NULL,
                   0, 0, comm, 1, 0, queue, num_events_in_wait_list, event_wait_list, event);
}

int MPIX_Enqueue_recv(void *buf, int count, MPI_Datatype datatype, int source, int tag,
                      MPI_Comm comm, cl_command_queue queue, cl_uint num_events_in_wait_list,
                      const cl_event *event_wait_list, cl_event *event)
{
    return enq_p2p("MPIX_Enqueue_recv", NULL, 0, MPI_DATATYPE_NULL, 0, 0, buf, count, datatype,
                   source, tag, comm, 0, 1, queue, num_events_in_wait_list, event_wait_list, event);
}

int MPIX_Enqueue_sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                          int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                          int source, int recvtag, MPI_Comm comm, cl_command_queue queue,
                          cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                          cl_event *event)
{
    return enq_p2p("MPIX_Enqueue_sendrecv", sendbuf, sendcount, sendtype, dest, sendtag, recvbuf,
                   recvcount, recvtype, source, recvtag, comm, 1, 1, queue, num_events_in_wait_list,
                   event_wait_list, event);
}

/* A persistent request of the point-to-point engine, inactive, packs from
   now on as the enqueue calls' own operations do (on an engine of its own
   where its context's engine uses the application's queue), whichever
   start comes next. */
static int start_own_engine(MPI_Request req)
{
    int rc = MPI_SUCCESS;
    mgp2p_lock();
    mgp2p_op_t *op = mgp2p_req_lookup(req);
    cl_context ctx = op && op->mem && op->pk && !op->started ? mgpk_ctx_context(op->pk) : NULL;
    mgp2p_unlock();
    if (ctx) {
        mgdev_own_scope(1);
        rc = mgp2p_op_engine(op, ctx);
        mgdev_own_scope(0);
    }
    return rc;
}

int MPIX_Enqueue_start(MPI_Request *request, cl_command_queue queue,
                       cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                       cl_event *event)
{
    const char *fn = "MPIX_Enqueue_start";
    int inorder = 1;
    cl_context ctx = NULL;
    enq_job_t *job = NULL;
    int rc = mgmpi_api_enter(fn);
    MG_CHECK(rc, fn_fail);
    if (!request || *request == MPI_REQUEST_NULL)
        MG_FAIL(rc, fn_fail, MPI_ERR_REQUEST, "mpigpu: %s: request is %s", fn,
                request ? "MPI_REQUEST_NULL" : "NULL");
    rc = enq_queue(fn, queue, num_events_in_wait_list, event_wait_list, &ctx, &inorder);
    MG_CHECK(rc, fn_fail);
    rc = enq_ready(fn);
    MG_CHECK(rc, fn_fail);
    rc = start_own_engine(*request);
    MG_CHECK(rc, fn_fail);
    if (!(job = job_new(fn, 1)))
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn);
    job->part[0].kind = ENQ_START;
    job->part[0].req = *request;
    rc = job_enqueue(job, queue, ctx, inorder, num_events_in_wait_list, event_wait_list, event);
fn_fail:
    return mgmpi_error(MPI_COMM_WORLD, rc);
}

int MPIX_Event_from_request(cl_context context, MPI_Request *request, cl_event *event)
{
    const char *fn = "MPIX_Event_from_request";
    enq_job_t *job = NULL;
    cl_int e = CL_SUCCESS;
    int rc = mgmpi_api_enter(fn);
    MG_CHECK(rc, fn_fail);
    if (!request)
        MG_FAIL(rc, fn_fail, MPI_ERR_REQUEST, "mpigpu: %s: request is NULL", fn);
    if (!context)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: %s: context is NULL", fn);
    rc = enq_ready(fn);
    MG_CHECK(rc, fn_fail);
    if (!(job = job_new(fn, 1)))
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn);
    job->user = clCreateUserEvent(context, &e);
    if (e != CL_SUCCESS) {
        job_free(job);
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: %s: context %p: clCreateUserEvent: %s", fn,
                (void *)context, mgerr_cl_name(e));
    }
    job->part[0].kind = ENQ_REQ;
    job->part[0].req = *request;
    *request = MPI_REQUEST_NULL;
    atomic_store_explicit(&job->gate, 1, memory_order_relaxed);
    if (event && clRetainEvent(job->user) == CL_SUCCESS)
        *event = job->user;
    job_link(job);
fn_fail:
    return mgmpi_error(MPI_COMM_WORLD, rc);
}

static int enq_file(const char *fn, int write, MPI_File fh, MPI_Offset offset, const void *buf,
                    int count, MPI_Datatype datatype, cl_command_queue queue, cl_uint n,
                    const cl_event *list, cl_event *event)
{
    int inorder = 1;
    cl_context ctx = NULL;
    enq_job_t *job = NULL;
    int rc = mgmpi_api_enter(fn);
    MG_CHECK(rc, fn_fail);
    rc = enq_queue(fn, queue, n, list, &ctx, &inorder);
    MG_CHECK(rc, fn_fail);
    rc = enq_ready(fn);
    MG_CHECK(rc, fn_fail);
    if (!(job = job_new(fn, 1)))
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", fn);
    mgdev_own_scope(1); /* the engine the enqueue thread's MPI_Pack will use */
    rc = part_file(&job->part[0], fn, write, fh, offset, buf, count, datatype);
    mgdev_own_scope(0);
    MG_CHECK(rc, fn_fail);
    rc = job_enqueue(job, queue, ctx, inorder, n, list, event);
    job = NULL;
    MG_CHECK(rc, fn_fail);
    return MPI_SUCCESS;
fn_fail:
    if (job)
        job_free(job);
    /* MPI raises a file call's errors on the file's handler
       (MPI_ERRORS_RETURN unless set). */
    if (fh != MPI_FILE_NULL && rc != MPI_SUCCESS && mgdev_state.ready)
        PMPI_File_call_errhandler(fh, rc);
    return rc;
}

int MPIX_Enqueue_file_write_at(MPI_File fh, MPI_Offset offset, const void *buf, int count,
                               MPI_Datatype datatype, cl_command_queue queue,
                               cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                               cl_event *event)
{
    return enq_file("MPIX_Enqueue_file_write_at", 1, fh, offset, buf, count, datatype, queue,
                    num_events_in_wait_list, event_wait_list, event);
}

int MPIX_Enqueue_file_read_at(MPI_File fh, MPI_Offset offset, void *buf, int count,
                              MPI_Datatype datatype, cl_command_queue queue,
                              cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                              cl_event *event)
{
    return enq_file("MPIX_Enqueue_file_read_at", 0, fh, offset, buf, count, datatype, queue,
                    num_events_in_wait_list, event_wait_list, event);
}
