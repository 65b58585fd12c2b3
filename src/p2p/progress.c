/*
 * Progress of device operations: the active list, the request table, the
 * lock that guards them, persistent requests and the progress thread
 * (doc/design.md, "Point-to-point").
 *
 * A nonblocking device operation hands the user a generalized request
 * (MPI_Grequest_start), so its handle is a real MPI request that mixes with
 * host requests in one array.  A generalized request cannot be restarted, so
 * a persistent one hands out a stand-in instead: a persistent receive of 0
 * bytes on a private duplicate of MPI_COMM_SELF with a tag of its own.
 * MPI_Start starts the stand-in with the operation; when the operation is
 * done, a 0-byte send to self completes it.  Either way MPI itself answers
 * for the handle in every call, interposed or not.
 *
 * MPI calls the generalized-request callbacks with its own locks held, so
 * they never take ours: the query reads fields that are final once the
 * request is complete, and the free function only marks the operation; the
 * next progress pass unlinks and frees it ("reaps").  Lookups skip marked
 * operations, whose handle MPI may already have given to a new request.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "mgerr.h"
#include "p2p_impl.h"

#define REQ_BUCKETS 256
/* Sleep of the progress thread between passes over active operations: short
   enough for overlap, long enough not to take a core from the application. */
#define PROGRESS_THREAD_NAP_NS 20000

static pthread_mutex_t lock;
static pthread_once_t lock_once = PTHREAD_ONCE_INIT;
/* Written under the lock; also read without it (mgp2p_progress_busy). */
mgp2p_op_t *_Atomic mgp2p_active;      /* ops not yet DONE */
static mgp2p_op_t *table[REQ_BUCKETS]; /* ops with a live user request */
static atomic_int zombies;             /* ops marked by greq_free, not reaped */
/* Table entries whose request MPI has not freed (mgp2p_req_any): up on
   table_add, down in greq_free or when a persistent one leaves the table. */
atomic_int mgp2p_live;
static MPI_Comm selfcomm = MPI_COMM_NULL;
static int stand_tag, tag_limit;
static char stand_buf[1];

static struct {
    pthread_t tid;
    int on, stop;
    pthread_cond_t wake; /* an operation became active, or stop */
} pth = {.wake = PTHREAD_COND_INITIALIZER};

static void lock_create(void)
{
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    /* Recursive: an error handler that PMPI calls under the lock may call
       back into an interposed function. */
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&lock, &a);
    pthread_mutexattr_destroy(&a);
}

void mgp2p_lock(void)
{
    pthread_once(&lock_once, lock_create);
    pthread_mutex_lock(&lock);
}

void mgp2p_unlock(void)
{
    pthread_mutex_unlock(&lock);
}

static unsigned req_hash(MPI_Request r)
{
    return ((unsigned)r * 2654435761u) % REQ_BUCKETS;
}

mgp2p_op_t *mgp2p_req_lookup(MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        return NULL;
    for (mgp2p_op_t *op = table[req_hash(req)]; op; op = op->hnext)
        if (op->greq == req && !atomic_load_explicit(&op->gfreed, memory_order_acquire))
            return op;
    return NULL;
}

static void table_add(mgp2p_op_t *op)
{
    unsigned h = req_hash(op->greq);
    op->hnext = table[h];
    table[h] = op;
    atomic_fetch_add_explicit(&mgp2p_live, 1, memory_order_release);
}

static void table_remove(mgp2p_op_t *op)
{
    for (mgp2p_op_t **p = &table[req_hash(op->greq)]; *p; p = &(*p)->hnext) {
        if (*p == op) {
            *p = op->hnext;
            return;
        }
    }
}

/* Free the operations whose generalized request MPI has freed. */
static void reap(void)
{
    int n = atomic_load_explicit(&zombies, memory_order_acquire);
    if (n == 0)
        return;
    for (int b = 0; b < REQ_BUCKETS; b++) {
        for (mgp2p_op_t **p = &table[b]; *p;) {
            mgp2p_op_t *op = *p;
            if (atomic_load_explicit(&op->gfreed, memory_order_acquire)) {
                *p = op->hnext;
                mgp2p_op_free(op);
                atomic_fetch_sub_explicit(&zombies, 1, memory_order_acq_rel);
            } else {
                p = &op->hnext;
            }
        }
    }
}

void mgp2p_op_status(const mgp2p_op_t *op, MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    if (op->hook && op->hook->status) {
        op->hook->status(op, status);
        return;
    }
    status->MPI_SOURCE = op->kind == MGP2P_OP_RECV ? op->source : MPI_ANY_SOURCE;
    status->MPI_TAG = op->kind == MGP2P_OP_RECV ? op->rtag : MPI_ANY_TAG;
    /* Bytes received: MPI_Get_count and MPI_Get_elements derive the counts in
       the user's datatype from them. */
    PMPI_Status_set_elements_x(
        status, MPI_BYTE,
        (op->kind == MGP2P_OP_RECV || op->driver) && !op->cancelled ? op->done : 0);
    PMPI_Status_set_cancelled(status, op->cancelled);
}

static int greq_query(void *extra, MPI_Status *status)
{
    mgp2p_op_status(extra, status); /* op is DONE: its fields are final */
    return MPI_SUCCESS;
}

static int greq_free(void *extra)
{
    mgp2p_op_t *op = extra;
    atomic_fetch_sub_explicit(&mgp2p_live, 1, memory_order_release);
    atomic_fetch_add_explicit(&zombies, 1, memory_order_acq_rel);
    atomic_store_explicit(&op->gfreed, 1, memory_order_release);
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
    (void)extra;
    (void)complete;
    return MPI_SUCCESS; /* MPI_Cancel is interposed (request.c) */
}

/* The list under the lock, which orders the read. */
static inline mgp2p_op_t *active_locked(void)
{
    return atomic_load_explicit(&mgp2p_active, memory_order_relaxed);
}

static void active_link(mgp2p_op_t *op)
{
    op->prev = NULL;
    op->next = active_locked();
    if (op->next)
        op->next->prev = op;
    atomic_store_explicit(&mgp2p_active, op, memory_order_release);
    if (pth.on)
        pthread_cond_signal(&pth.wake);
}

static void active_unlink(mgp2p_op_t *op)
{
    if (op->prev)
        op->prev->next = op->next;
    else
        atomic_store_explicit(&mgp2p_active, op->next, memory_order_release);
    if (op->next)
        op->next->prev = op->prev;
    op->prev = op->next = NULL;
}

int mgp2p_op_start(mgp2p_op_t *op, int nonblocking)
{
    int rc = MPI_SUCCESS;
    op->greq = MPI_REQUEST_NULL;
    mgp2p_lock();
    if (nonblocking) {
        rc = mgp2p_op_hold(op);
        if (rc != MPI_SUCCESS)
            goto fn_exit;
        rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, op, &op->greq);
        if (rc != MPI_SUCCESS)
            goto fn_exit;
        table_add(op);
    }
    active_link(op);
fn_exit:
    mgp2p_unlock();
    return rc;
}

int mgp2p_op_persist(mgp2p_op_t *op, MPI_Request *req)
{
    op->persistent = 1;
    op->state = MGP2P_OP_DONE;
    op->stag = stand_tag;
    stand_tag = (stand_tag + 1) % tag_limit;
    int rc = mgp2p_op_hold(op);
    if (rc != MPI_SUCCESS)
        return rc;
    rc = PMPI_Recv_init(stand_buf, 0, MPI_BYTE, 0, op->stag, selfcomm, &op->greq);
    if (rc != MPI_SUCCESS)
        return rc;
    table_add(op);
    *req = op->greq;
    return MPI_SUCCESS;
}

int mgp2p_op_restart(mgp2p_op_t *op)
{
    if (op->started)
        return mgerr_set(MPI_ERR_REQUEST,
                         "mpigpu: MPI_Start: the persistent request of %s is still active", op->fn);
    mgdev_stage_unpark(&op->stage);
    op->err = MPI_SUCCESS;
    free(op->msg);
    op->msg = NULL;
    op->raised = op->cancelled = op->pieces = 0;
    op->done = op->total = 0;
    op->proto = NULL; /* chosen again at the first step */
    op->source = MPI_ANY_SOURCE;
    op->rtag = MPI_ANY_TAG;
    op->state = MGP2P_OP_NEXT;
    int rc = op->shared ? mgdev_shared_device_use(op->shared, op->sh_off, op->sh_len,
                                                  op->kind == MGP2P_OP_RECV, 0)
                        : MPI_SUCCESS;
    if (rc != MPI_SUCCESS) {
        op->state = MGP2P_OP_DONE;
        mgdev_stage_park(&op->stage);
        return rc;
    }
    rc = PMPI_Start(&op->greq);
    if (rc != MPI_SUCCESS) {
        op->state = MGP2P_OP_DONE;
        mgdev_stage_park(&op->stage);
        return rc;
    }
    op->started = 1;
    active_link(op);
    mgp2p_progress_locked(); /* launch the first piece now */
    return MPI_SUCCESS;
}

void mgp2p_op_unpersist(mgp2p_op_t *op)
{
    table_remove(op);
    atomic_fetch_sub_explicit(&mgp2p_live, 1, memory_order_release);
    mgp2p_op_unstage_all(op);
}

void mgp2p_op_finish(mgp2p_op_t *op)
{
    active_unlink(op);
    if (op->bare) {
        op->bare = 0;
        mgp2p_engine.grant.bare--;
    }
    if (op->proto && op->err == MPI_SUCCESS)
        mgp2p_engine.stats.ops[op->proto->id]++;
    if (op->persistent) {
        mgdev_stage_park(&op->stage);
        /* The stand-in receive is posted: this send completes at once. */
        PMPI_Send(stand_buf, 0, MPI_BYTE, 0, op->stag, selfcomm);
        if (op->freed) {
            MPI_Request r = op->greq;
            mgp2p_op_unpersist(op);
            PMPI_Request_free(&r);
            mgp2p_op_free(op);
        }
        return;
    }
    if (op->greq == MPI_REQUEST_NULL)
        return;
    PMPI_Grequest_complete(op->greq);
    if (op->freed) {
        MPI_Request r = op->greq;
        PMPI_Request_free(&r);
    }
}

void mgp2p_progress_locked(void)
{
    mgp2p_op_t *op = active_locked();
    while (op) {
        mgp2p_op_t *next = op->next;
        mgp2p_op_step(op);
        if (op->state == MGP2P_OP_DONE)
            mgp2p_op_finish(op);
        op = next;
    }
    mgp2p_grant_progress();
    reap();
}

void mgp2p_progress(void)
{
    /* Nothing to step and nothing to reap: no lock (MPI_Iprobe on host
       traffic comes here, issue 31).  An operation that becomes active
       after these loads is stepped by the next pass, as it would be had the
       lock been taken first. */
    if (!atomic_load_explicit(&mgp2p_active, memory_order_acquire) &&
        atomic_load_explicit(&zombies, memory_order_acquire) == 0)
        return;
    mgp2p_lock();
    mgp2p_progress_locked();
    mgp2p_unlock();
}

void mgp2p_progress_relax(void)
{
    if (pth.on)
        sched_yield();
}

void mgp2p_op_wait(mgp2p_op_t *op)
{
    for (;;) {
        mgp2p_lock();
        mgp2p_progress_locked();
        int done = op->state == MGP2P_OP_DONE;
        mgp2p_unlock();
        if (done)
            return;
        mgp2p_progress_relax();
    }
}

void mgp2p_progress_drain(void)
{
    while (mgp2p_progress_busy())
        mgp2p_progress();
}

/* The progress thread (MPI_THREAD_MULTIPLE only): steps active operations
   while the application computes, and sleeps on a condition while none is
   active. */
static void *progress_main(void *arg)
{
    (void)arg;
    struct timespec nap = {0, PROGRESS_THREAD_NAP_NS};
    mgp2p_lock();
    while (!pth.stop) {
        if (!active_locked()) {
            pthread_cond_wait(&pth.wake, &lock);
            continue;
        }
        mgp2p_progress_locked();
        mgp2p_unlock();
        nanosleep(&nap, NULL);
        mgp2p_lock();
    }
    mgp2p_unlock();
    return NULL;
}

int mgp2p_progress_init(void)
{
    int flag = 0, *ub = NULL, level = MPI_THREAD_SINGLE;
    pthread_once(&lock_once, lock_create);
    int rc = PMPI_Comm_dup(MPI_COMM_SELF, &selfcomm);
    if (rc != MPI_SUCCESS)
        return rc;
    PMPI_Comm_set_errhandler(selfcomm, MPI_ERRORS_RETURN);
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    tag_limit = flag && ub ? *ub : 32767;
    stand_tag = 0;
    /* The application's level, not MPI's: MPI may run at MULTIPLE for the
       enqueue calls' thread only. */
    level = mgdev_state.app_level;
    if (level == MPI_THREAD_MULTIPLE) {
        pth.stop = 0;
        if (pthread_create(&pth.tid, NULL, progress_main, NULL) != 0)
            return mgerr_set(MPI_ERR_OTHER, "mpigpu: cannot start the progress thread");
        pth.on = 1;
    }
    return MPI_SUCCESS;
}

void mgp2p_progress_finalize(void)
{
    if (pth.on) {
        mgp2p_lock();
        pth.stop = 1;
        pthread_cond_signal(&pth.wake);
        mgp2p_unlock();
        pthread_join(pth.tid, NULL);
        pth.on = 0;
    }
    mgp2p_progress_drain();
    /* Persistent requests the application never freed: MPI frees their
       stand-ins at MPI_Finalize; their operations go here. */
    for (int b = 0; b < REQ_BUCKETS; b++) {
        while (table[b]) {
            mgp2p_op_t *op = table[b];
            table[b] = op->hnext;
            if (op->persistent)
                mgp2p_op_unstage_all(op);
            if (op->persistent || atomic_load_explicit(&op->gfreed, memory_order_acquire))
                mgp2p_op_free(op);
            else
                mgp2p_op_release(op); /* its request was never freed: MPI's now */
        }
    }
    atomic_store_explicit(&zombies, 0, memory_order_relaxed);
    atomic_store_explicit(&mgp2p_live, 0, memory_order_relaxed);
    if (selfcomm != MPI_COMM_NULL)
        PMPI_Comm_free(&selfcomm);
}

int mgp2p_active_covers(const mgp2p_op_t *op, const char *lo, const char *hi)
{
    int64_t olo = 0, ohi = 0;
    for (mgp2p_op_t *o = active_locked(); o; o = o->next) {
        if (o == op || !o->host || !o->dense || o->state == MGP2P_OP_DONE || o->count <= 0)
            continue;
        (void)mgp2p_type_span(o->type, o->count, &olo, &ohi); /* checked at init */
        if (o->host + olo <= lo && hi <= o->host + ohi)
            return 1;
    }
    return 0;
}

int mgp2p_active_overlap(const mgp2p_op_t *op, const char *lo, const char *hi)
{
    int64_t olo = 0, ohi = 0;
    for (mgp2p_op_t *o = active_locked(); o; o = o->next) {
        if (o == op || !o->host || o->state == MGP2P_OP_DONE || o->count <= 0)
            continue;
        (void)mgp2p_type_span(o->type, o->count, &olo, &ohi); /* checked at init */
        if (o->host + olo < hi && lo < o->host + ohi)
            return 1;
    }
    return 0;
}
