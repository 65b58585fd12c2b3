/* The one-copy (cross-memory attach) lane of a client on this host: the
 * proxy copies straight between the client's memory and its own with
 * process_vm_readv / process_vm_writev.  See bulk.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "bulk.h"
#include "mglog.h"
#include "mgparam.h"

int mgtr_cma_range_ok(uint64_t addr, uint64_t size)
{
    return addr != 0 && size <= MGTR_CMA_MAX && addr <= UINT64_MAX - size &&
           (uintptr_t)addr == addr && (uintptr_t)(addr + size) == addr + size;
}

int mgtr_cma_copy(long pid, int to_client, uint64_t addr, void *local, size_t n)
{
    size_t done = 0;
    while (done < n) {
        struct iovec l = {(char *)local + done, n - done};
        struct iovec r = {(void *)(uintptr_t)(addr + done), n - done};
        ssize_t k = to_client ? process_vm_writev((pid_t)pid, &l, 1, &r, 1, 0)
                              : process_vm_readv((pid_t)pid, &l, 1, &r, 1, 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        done += (size_t)k;
    }
    return 0;
}

/* Parallel copies.  The kernel pins the other process's pages one by one:
 * on 4 KiB pages one thread copies at about half of memcpy's speed
 * (doc/performance.md), so a large range is cut into pieces that a small
 * pool of helper threads and the caller copy at once.  Tasks queue in
 * order; a helper takes pieces of the first task that has some left. */
typedef struct cma_task {
    struct cma_task *next;
    long pid;
    int to_client;
    uint64_t addr;
    unsigned char *local;
    size_t n, piece, npieces;
    atomic_size_t taken, done;
    atomic_int err;
    int users; /* helpers inside task_run (pool_lock): the caller's frame holds the task, so
                  it returns only once none is left, not just once every piece is done */
} cma_task_t;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_work = PTHREAD_COND_INITIALIZER, pool_done = PTHREAD_COND_INITIALIZER;
static cma_task_t *pool_q;
static int pool_threads = -1;

/* Copies pieces of t until none is left; 1 if it copied the last one. */
static int task_run(cma_task_t *t)
{
    int last = 0;
    for (size_t i; (i = atomic_fetch_add(&t->taken, 1)) < t->npieces;) {
        size_t off = i * t->piece, k = t->n - off < t->piece ? t->n - off : t->piece;
        if (!atomic_load(&t->err) &&
            mgtr_cma_copy(t->pid, t->to_client, t->addr + off, t->local + off, k))
            atomic_store(&t->err, errno ? errno : EIO);
        last = atomic_fetch_add(&t->done, 1) + 1 == t->npieces;
    }
    return last;
}

/* The first queued task with pieces left, or NULL; pool_lock held. */
static cma_task_t *pool_next(void)
{
    cma_task_t *t = pool_q;
    while (t && atomic_load(&t->taken) >= t->npieces)
        t = t->next;
    return t;
}

static void *pool_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&pool_lock);
    for (;;) {
        cma_task_t *t = pool_next();
        if (!t) {
            /* Spin first: the next copy of a transfer follows soon. */
            MGTR_WAIT_WHILE(!pool_next(), &pool_lock, &pool_work);
            continue;
        }
        t->users++;
        pthread_mutex_unlock(&pool_lock);
        int last = task_run(t); /* t stays valid: its caller waits for users to drop */
        pthread_mutex_lock(&pool_lock);
        if (--t->users == 0 || last)
            pthread_cond_broadcast(&pool_done);
    }
    return NULL;
}

/* Helpers: MPIGPU_PROXY_CMA_THREADS, or one less than the online CPUs, at
 * most 7.  Started on first use; they live as long as the process. */
static void pool_start(void)
{
    mgparam_value_t v = mgparam_read_or_default(MGPARAM_PROXY_CMA_THREADS, MGLOG_PROXY);
    long n = v.set ? (long)v.num : sysconf(_SC_NPROCESSORS_ONLN) - 1;
    n = n < 0 ? 0 : n > 7 ? 7 : n;
    pool_threads = 0;
    for (long i = 0; i < n; i++) {
        pthread_t th;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &a, pool_main, NULL) == 0)
            pool_threads++;
        pthread_attr_destroy(&a);
    }
}

int mgtr_cma_copy_par(long pid, int to_client, uint64_t addr, void *local, size_t n)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    const size_t min_piece = (size_t)256 << 10;
    pthread_once(&once, pool_start);
    if (pool_threads <= 0 || n < 2 * min_piece)
        return mgtr_cma_copy(pid, to_client, addr, local, n);
    cma_task_t t = {.pid = pid, .to_client = to_client, .addr = addr, .local = local, .n = n};
    size_t parts = (size_t)pool_threads + 1;
    t.piece = (n + parts - 1) / parts;
    t.piece = t.piece < min_piece ? min_piece : (t.piece + 4095) & ~(size_t)4095;
    t.npieces = (n + t.piece - 1) / t.piece;
    atomic_init(&t.taken, 0);
    atomic_init(&t.done, 0);
    atomic_init(&t.err, 0);
    pthread_mutex_lock(&pool_lock);
    cma_task_t **pp = &pool_q;
    while (*pp)
        pp = &(*pp)->next;
    *pp = &t;
    pthread_cond_broadcast(&pool_work);
    pthread_mutex_unlock(&pool_lock);
    task_run(&t);
    pthread_mutex_lock(&pool_lock);
    /* A helper that took t just before the last piece went may still be
       about to look at t->taken: wait for it to leave too. */
    MGTR_WAIT_WHILE(atomic_load(&t.done) < t.npieces || t.users > 0, &pool_lock, &pool_done);
    for (pp = &pool_q; *pp != &t; pp = &(*pp)->next)
        ;
    *pp = t.next;
    pthread_mutex_unlock(&pool_lock);
    errno = atomic_load(&t.err);
    return errno ? -1 : 0;
}
