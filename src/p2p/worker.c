/*
 * The piece worker: one thread that runs the engine's blocking packs and
 * unpacks of chunked messages' pieces, so that the progress loop keeps MPI
 * moving the other pieces meanwhile (doc/design.md, "Point-to-point").
 *
 * It starts at the first job and stops at MPI_Finalize.  Jobs queue in
 * submission order; each is owned by its submitter, which polls
 * mgp2p_job_done() and must not free or move the job before it is done.
 * The worker never calls MPI and takes no lock of the device layer but its
 * own queue lock (the engine serializes calls on one context itself).
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "p2p_impl.h"

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    mgp2p_job_t *head, *tail;
    pthread_t tid;
    int on, stop;
    unsigned long jobs; /* run so far (tests) */
} w = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

static void *worker_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&w.lock);
    for (;;) {
        while (!w.head && !w.stop)
            pthread_cond_wait(&w.wake, &w.lock);
        if (!w.head)
            break;
        mgp2p_job_t *job = w.head;
        w.jobs++;
        w.head = job->next;
        if (!w.head)
            w.tail = NULL;
        pthread_mutex_unlock(&w.lock);
        int rc = job->run(job);
        job->rc = rc;
        if (rc != MPI_SUCCESS) {
            /* Messages are per thread: hand this one over with the job. */
            const char *m = mgerr_get(rc);
            job->msg = m ? strdup(m) : NULL;
        }
        atomic_store_explicit(&job->state, MGP2P_JOB_DONE, memory_order_release);
        pthread_mutex_lock(&w.lock);
    }
    pthread_mutex_unlock(&w.lock);
    return NULL;
}

int mgp2p_job_submit(mgp2p_job_t *job)
{
    int rc = MPI_SUCCESS;
    job->next = NULL;
    job->rc = MPI_SUCCESS;
    job->msg = NULL;
    /* published to the worker by w.lock */
    atomic_store_explicit(&job->state, MGP2P_JOB_QUEUED, memory_order_relaxed);
    pthread_mutex_lock(&w.lock);
    if (!w.on) {
        w.stop = 0;
        if (pthread_create(&w.tid, NULL, worker_main, NULL) != 0)
            rc = mgerr_set(MPI_ERR_OTHER, "mpigpu: cannot start the piece worker thread");
        else
            w.on = 1;
    }
    if (rc == MPI_SUCCESS) {
        if (w.tail)
            w.tail->next = job;
        else
            w.head = job;
        w.tail = job;
        pthread_cond_signal(&w.wake);
    } else {
        atomic_store_explicit(&job->state, MGP2P_JOB_IDLE, memory_order_relaxed);
    }
    pthread_mutex_unlock(&w.lock);
    return rc;
}

int mgp2p_job_done(mgp2p_job_t *job)
{
    return atomic_load_explicit(&job->state, memory_order_acquire) == MGP2P_JOB_DONE;
}

int mgp2p_job_end(mgp2p_job_t *job)
{
    while (atomic_load_explicit(&job->state, memory_order_acquire) == MGP2P_JOB_QUEUED)
        sched_yield();
    int rc = job->rc;
    if (rc != MPI_SUCCESS)
        mgerr_set(rc, "%s", job->msg ? job->msg : "mpigpu: a piece's pack or unpack failed");
    free(job->msg);
    job->msg = NULL;
    atomic_store_explicit(&job->state, MGP2P_JOB_IDLE, memory_order_relaxed);
    return rc;
}

unsigned long mgp2p_worker_jobs(void)
{
    pthread_mutex_lock(&w.lock);
    unsigned long n = w.jobs;
    pthread_mutex_unlock(&w.lock);
    return n;
}

void mgp2p_worker_finalize(void)
{
    pthread_mutex_lock(&w.lock);
    if (!w.on) {
        pthread_mutex_unlock(&w.lock);
        return;
    }
    w.stop = 1;
    pthread_cond_signal(&w.wake);
    pthread_mutex_unlock(&w.lock);
    pthread_join(w.tid, NULL);
    w.on = 0;
}
