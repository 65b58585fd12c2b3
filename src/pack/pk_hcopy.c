/*
 * Host copies of the pipelined path, and host packs (mgpk_host_pack), split
 * over a small persistent thread pool.  One thread's memcpy between pinned
 * staging and the caller's buffer runs near 10 GB/s, a fifth of what a
 * pinned device-to-host read delivers.  The pool starts with the staging
 * ring or the first host pack long enough to split, and is joined by
 * mgpk_ctx_free.
 *
 * A job is cut into parts; the caller and the helpers claim parts under the
 * lock until none is left, and the caller returns once every part is done.
 * The job's fields change only while no part is unfinished.  A helper
 * watches for the next job a while before it sleeps, and the caller for
 * the last part: a loop of packs hands each one to helpers already awake.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "config.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mgpk_impl.h"
#include "mgspin.h"

/* Parts smaller than this cost more to hand out than they save. */
#define MGPK_HCOPY_MIN_PART ((size_t)32 << 10)
#define MGPK_HCOPY_MAX_THREADS 8
/* A job has up to this many parts per thread, so that the caller takes
   more of them while a helper is still waking up. */
#define MGPK_HCOPY_PARTS_PER_THREAD 4
/* After a job, a helper watches for the next one, and the caller for the
   last part, this long before sleeping on a condition variable: waking a
   sleeper took tens of microseconds on a shared VM, as long as a part of
   1 MiB of 8-byte runs takes (the 2026-11-24 PoCL runs in the git history
   of doc/performance.md). */
#define MGPK_HCOPY_SPIN_NS 100000L

struct mgpk_hcopy {
    pthread_mutex_t lock;
    pthread_cond_t go;   /* a new job, or quit */
    pthread_cond_t done; /* the last part finished */
    pthread_t *helpers;
    int nhelpers;
    int quit;
    /* Written under the lock; gen, unfinished and awake are also read
       without it by a thread watching before it sleeps. */
    atomic_uint gen; /* job number (wraps) */
    void (*fn)(void *arg, size_t off, size_t len);
    void *arg;
    size_t n, part;         /* the job's range [0, n), in parts of part bytes */
    int nparts, next;       /* parts of the job, next one to claim */
    atomic_uint unfinished; /* parts claimed or not, not yet done */
    unsigned pokes;         /* wake-ups without a job (mgpk_hcopy_poke) */
    atomic_int awake;       /* helpers watching for a job (still), not asleep */
};

/* Reads under the lock: it orders them, so no fence is needed. */
static inline unsigned gen_locked(const mgpk_hcopy_t *h)
{
    return atomic_load_explicit(&h->gen, memory_order_relaxed);
}

static inline unsigned unfinished_locked(const mgpk_hcopy_t *h)
{
    return atomic_load_explicit(&h->unfinished, memory_order_relaxed);
}

/* Claim and run parts until none is left; lock held on entry and exit. */
static void claim_parts(mgpk_hcopy_t *h)
{
    while (h->next < h->nparts) {
        size_t off = (size_t)h->next++ * h->part;
        size_t len = h->n - off < h->part ? h->n - off : h->part;
        pthread_mutex_unlock(&h->lock);
        h->fn(h->arg, off, len);
        pthread_mutex_lock(&h->lock);
        if (atomic_fetch_sub_explicit(&h->unfinished, 1, memory_order_release) == 1)
            pthread_cond_signal(&h->done);
    }
}

/* Whether *v still equals `was` after watching it without the lock for up
   to MGPK_HCOPY_SPIN_NS (lock not held). */
static int still(const atomic_uint *v, unsigned was)
{
    MG_SPIN_WHILE(atomic_load_explicit(v, memory_order_acquire) == was, MGPK_HCOPY_SPIN_NS,
                  for (int i = 0; i < 64; i++) mg_cpu_relax());
    return atomic_load_explicit(v, memory_order_acquire) == was;
}

static void *helper_main(void *arg)
{
    mgpk_hcopy_t *h = arg;
    unsigned seen = 0;
    pthread_mutex_lock(&h->lock);
    for (;;) {
        if (gen_locked(h) == seen && !h->quit) {
            atomic_fetch_add_explicit(&h->awake, 1, memory_order_relaxed);
            pthread_mutex_unlock(&h->lock);
            still(&h->gen, seen);
            pthread_mutex_lock(&h->lock);
            atomic_fetch_sub_explicit(&h->awake, 1, memory_order_relaxed);
        }
        unsigned pokes = h->pokes;
        while (gen_locked(h) == seen && !h->quit && h->pokes == pokes)
            pthread_cond_wait(&h->go, &h->lock);
        if (h->quit)
            break;
        if (gen_locked(h) == seen)
            continue; /* poked: watch again */
        seen = gen_locked(h);
        claim_parts(h);
    }
    pthread_mutex_unlock(&h->lock);
    return NULL;
}

/* CPUs this process may run on: under an MPI launcher that binds ranks, the
   pool stays within the rank's own cores. */
int mgpk_hcopy_cpus(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

int mgpk_hcopy_create(int nthreads, mgpk_hcopy_t **out)
{
    int rc = MPI_SUCCESS;
    mgpk_hcopy_t *h = calloc(1, sizeof(*h));
    if (nthreads <= 0)
        nthreads = mgpk_hcopy_cpus() / 2;
    if (nthreads > MGPK_HCOPY_MAX_THREADS)
        nthreads = MGPK_HCOPY_MAX_THREADS;
    if (nthreads < 1)
        nthreads = 1;
    if (!h)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgpk: no memory for the copy pool");
    pthread_mutex_init(&h->lock, NULL);
    pthread_cond_init(&h->go, NULL);
    pthread_cond_init(&h->done, NULL);
    if (nthreads > 1) {
        h->helpers = calloc((size_t)nthreads - 1, sizeof(pthread_t));
        if (!h->helpers)
            MG_FAIL(rc, fail_pool, MPI_ERR_NO_MEM, "mgpk: no memory for the copy pool");
    }
    for (; h->nhelpers < nthreads - 1; h->nhelpers++) {
        int err = pthread_create(&h->helpers[h->nhelpers], NULL, helper_main, h);
        if (err)
            MG_FAIL(rc, fail_pool, MPI_ERR_OTHER, "mgpk: pthread_create of a copy helper: %s",
                    strerror(err));
    }
    *out = h;
fn_exit:
    return rc;
fail_pool:
    mgpk_hcopy_free(h);
fn_fail:
    goto fn_exit;
}

void mgpk_hcopy_free(mgpk_hcopy_t *h)
{
    if (!h)
        return;
    pthread_mutex_lock(&h->lock);
    h->quit = 1;
    /* A helper watching gen (still) sees the change at once. */
    atomic_store_explicit(&h->gen, gen_locked(h) + 1, memory_order_release);
    pthread_cond_broadcast(&h->go);
    pthread_mutex_unlock(&h->lock);
    for (int i = 0; i < h->nhelpers; i++)
        pthread_join(h->helpers[i], NULL);
    pthread_cond_destroy(&h->done);
    pthread_cond_destroy(&h->go);
    pthread_mutex_destroy(&h->lock);
    free(h->helpers);
    free(h);
}

int mgpk_hcopy_threads(const mgpk_hcopy_t *h)
{
    return h->nhelpers + 1;
}

int mgpk_hcopy_awake(const mgpk_hcopy_t *h)
{
    return atomic_load_explicit(&h->awake, memory_order_relaxed);
}

void mgpk_hcopy_poke(mgpk_hcopy_t *h)
{
    pthread_mutex_lock(&h->lock);
    if (!atomic_load_explicit(&h->awake, memory_order_relaxed) && h->nhelpers > 0) {
        h->pokes++;
        pthread_cond_broadcast(&h->go);
    }
    pthread_mutex_unlock(&h->lock);
}

void mgpk_hcopy_ranges(mgpk_hcopy_t *h, size_t n, size_t nparts,
                       void (*fn)(void *arg, size_t off, size_t len), void *arg)
{
    size_t most = ((size_t)h->nhelpers + 1) * MGPK_HCOPY_PARTS_PER_THREAD;
    if (nparts > most)
        nparts = most;
    if (nparts < 2) {
        if (n > 0)
            fn(arg, 0, n);
        return;
    }
    pthread_mutex_lock(&h->lock);
    h->fn = fn;
    h->arg = arg;
    h->n = n;
    /* Parts of whole cache lines, so that no two threads write one line. */
    h->part = ((n + nparts - 1) / nparts + 63) & ~(size_t)63;
    h->nparts = (int)((n + h->part - 1) / h->part);
    h->next = 0;
    atomic_store_explicit(&h->unfinished, (unsigned)h->nparts, memory_order_relaxed);
    atomic_store_explicit(&h->gen, gen_locked(h) + 1, memory_order_release);
    pthread_cond_broadcast(&h->go);
    claim_parts(h);
    if (unfinished_locked(h) > 0) {
        unsigned left = unfinished_locked(h);
        pthread_mutex_unlock(&h->lock);
        while (left > 0 && !still(&h->unfinished, left))
            left = atomic_load_explicit(&h->unfinished, memory_order_acquire);
        pthread_mutex_lock(&h->lock);
    }
    while (unfinished_locked(h) > 0)
        pthread_cond_wait(&h->done, &h->lock);
    pthread_mutex_unlock(&h->lock);
}

typedef struct hcopy_job {
    char *dst;
    const char *src;
} hcopy_job_t;

static void copy_range(void *arg, size_t off, size_t len)
{
    const hcopy_job_t *j = arg;
    memcpy(j->dst + off, j->src + off, len);
}

void mgpk_hcopy_run(mgpk_hcopy_t *h, void *dst, const void *src, size_t n)
{
    hcopy_job_t j = {.dst = dst, .src = src};
    mgpk_hcopy_ranges(h, n, n / MGPK_HCOPY_MIN_PART, copy_range, &j);
}
