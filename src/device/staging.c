/*
 * The staging pool: pinned host buffers (CL_MEM_ALLOC_HOST_PTR on the default
 * context, mapped once for their whole life) in power-of-two size classes from
 * 4 KiB up to the chunk size.  The bytes allocated never exceed the cap
 * (MPIGPU_STAGING_MAX); when a request would, free buffers are released first,
 * then buffers parked by idle persistent requests, and if that is not enough
 * the caller waits for a borrowed one to return.  Every function runs with
 * the p2p lock held (p2p.h).
 */
#include "config.h"

#include <stdlib.h>

#include "locality.h"
#include "mgerr.h"
#include "mgdev.h"
#include "staging.h"

#define STAGE_MIN ((size_t)4096)

static struct {
    size_t cap, chunk;
    size_t allocated, high_water;
    mgdev_stage_t *free;   /* unsorted */
    mgdev_stage_t *parked; /* held by idle persistent requests */
} pool;

/* Host buffers of long plain messages kept for the next ones, oldest first.
   As many as a window of 64 host receives on one buffer lands (osu_bw's,
   host_recv.c), each rounded to 64 KiB only: with 8 kept, rounded to 1 MiB,
   such a window freed and allocated most of them again every time, with
   their page faults (design.md, "Long plain messages"). */
#define BIG_KEEP_MAX 64
#define BIG_ROUND ((size_t)64 << 10)
static struct {
    size_t keep; /* MPIGPU_STAGING_KEEP, 0: none */
    size_t bytes;
    unsigned long allocs; /* buffers allocated, for tests */
    int n;
    char *ptr[BIG_KEEP_MAX];
    size_t size[BIG_KEEP_MAX];
} big;

/* Kept buffer i, out of the list. */
static char *big_take(int i)
{
    char *p = big.ptr[i];
    big.bytes -= big.size[i];
    for (int j = i; j + 1 < big.n; j++) {
        big.ptr[j] = big.ptr[j + 1];
        big.size[j] = big.size[j + 1];
    }
    big.n--;
    return p;
}

static void big_drop(int i)
{
    free(big_take(i));
}

int mgdev_big_get(size_t want, char **buf, size_t *size)
{
    int best = -1;
    for (int i = 0; i < big.n; i++)
        if (big.size[i] >= want && (best < 0 || big.size[i] < big.size[best]))
            best = i;
    if (best >= 0) {
        *size = big.size[best];
        *buf = big_take(best);
        return MPI_SUCCESS;
    }
    /* Rounded up so that messages of nearby lengths share buffers. */
    size_t sz = want <= SIZE_MAX - BIG_ROUND ? (want + BIG_ROUND - 1) & ~(BIG_ROUND - 1) : want;
    *buf = malloc(sz);
    if (!*buf && big.n) {
        while (big.n) /* memory is short: give the kept ones back first */
            big_drop(0);
        *buf = malloc(sz);
    }
    *size = *buf ? sz : 0;
    big.allocs += *buf != NULL;
    return *buf ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

void mgdev_big_put(char *buf, size_t size)
{
    if (!buf)
        return;
    if (size > big.keep) {
        free(buf);
        return;
    }
    while (big.n && (big.n == BIG_KEEP_MAX || big.bytes + size > big.keep))
        big_drop(0);
    big.ptr[big.n] = buf;
    big.size[big.n] = size;
    big.bytes += size;
    big.n++;
}

void mgdev_big_usage(size_t *kept, unsigned long *allocs)
{
    if (kept)
        *kept = big.bytes;
    if (allocs)
        *allocs = big.allocs;
}

void mgdev_stage_init(size_t cap, size_t keep)
{
    size_t chunk = STAGE_MIN;
    /* A quarter of the cap, so that at least four messages stage at once. */
    while (chunk * 2 <= cap / 4)
        chunk *= 2;
    pool.cap = cap;
    pool.chunk = chunk;
    big.keep = keep;
    pool.allocated = pool.high_water = 0;
    pool.free = pool.parked = NULL;
}

size_t mgdev_stage_chunk(void)
{
    return pool.chunk;
}

void mgdev_staging_usage(size_t *allocated, size_t *high_water, size_t *cap)
{
    if (allocated)
        *allocated = pool.allocated;
    if (high_water)
        *high_water = pool.high_water;
    if (cap)
        *cap = pool.cap;
}

static void stage_release(mgdev_stage_t *s)
{
    mgdev_pinned_remove(s->ptr);
    clEnqueueUnmapMemObject(s->queue, s->mem, s->ptr, 0, NULL, NULL);
    clFinish(s->queue);
    clReleaseCommandQueue(s->queue);
    clReleaseMemObject(s->mem);
    pool.allocated -= s->size;
    free(s);
}

static int stage_alloc(size_t size, mgdev_stage_t **out)
{
    int rc = MPI_SUCCESS;
    cl_context context = NULL;
    cl_command_queue queue = NULL;
    cl_int clrc;
    mgdev_stage_t *s = calloc(1, sizeof(*s));

    if (!s)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: out of host memory for a staging buffer");
    /* Not the default queue: a receive's staging buffer may be made while a
       kernel there waits for that receive (an enqueued operation). */
    rc = mgdev_default_own_queue(&context, &queue);
    MG_CHECK(rc, free_s);
    s->mem = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, NULL, &clrc);
    MG_CL_CHECK(clrc, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", rc, free_s);
    s->ptr = clEnqueueMapBuffer(queue, s->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, size, 0,
                                NULL, NULL, &clrc);
    MG_CL_CHECK(clrc, "clEnqueueMapBuffer(staging)", rc, release_mem);
    clRetainCommandQueue(queue);
    s->queue = queue;
    mgdev_staging_bind(s->ptr, size); /* NUMA node of the device: locality.c */
    rc = mgdev_pinned_add(s->ptr, size);
    if (rc != MPI_SUCCESS) {
        clEnqueueUnmapMemObject(queue, s->mem, s->ptr, 0, NULL, NULL);
        clFinish(queue);
        clReleaseCommandQueue(queue);
        goto release_mem;
    }
    s->size = size;
    pool.allocated += size;
    if (pool.allocated > pool.high_water)
        pool.high_water = pool.allocated;
    *out = s;
fn_exit:
    return rc;
release_mem:
    clReleaseMemObject(s->mem);
free_s:
    free(s);
fn_fail:
    goto fn_exit;
}

/* The pool's buffer of class size (a power of two) for want bytes: a free
   one, or a new one once the cap allows (free, then parked, buffers are
   released to make room); NULL when it cannot have one now. */
static int stage_take(size_t size, mgdev_stage_t **out)
{
    mgdev_stage_t **best = NULL;

    *out = NULL;
    /* The smallest free buffer that fits, but not one more than twice the
       class: a small message should not hold a chunk-sized buffer. */
    for (mgdev_stage_t **p = &pool.free; *p; p = &(*p)->next)
        if ((*p)->size >= size && (*p)->size <= 2 * size && (!best || (*p)->size < (*best)->size))
            best = p;
    if (best) {
        *out = *best;
        *best = (*best)->next;
        return MPI_SUCCESS;
    }
    while (pool.allocated + size > pool.cap && pool.free) {
        mgdev_stage_t *s = pool.free;
        pool.free = s->next;
        stage_release(s);
    }
    while (pool.allocated + size > pool.cap && pool.parked) {
        mgdev_stage_t *s = pool.parked;
        pool.parked = s->next;
        *s->owner = NULL; /* the persistent request takes a new one at its start */
        stage_release(s);
    }
    if (pool.allocated + size > pool.cap)
        return MPI_SUCCESS; /* wait for a borrowed buffer */
    return stage_alloc(size, out);
}

/* The pool's class (a power of two, up to the chunk) for want bytes. */
static size_t stage_class(size_t want)
{
    size_t size = STAGE_MIN;
    while (size < want && size < pool.chunk)
        size *= 2;
    return size;
}

int mgdev_stage_get(size_t want, mgdev_stage_t **out)
{
    return stage_take(stage_class(want), out);
}

int mgdev_stage_get_extra(size_t want, mgdev_stage_t **out)
{
    size_t size = stage_class(want), room = pool.cap - pool.allocated;
    *out = NULL;
    for (mgdev_stage_t *s = pool.free; s; s = s->next)
        room += s->size;
    /* Parked buffers do not count: taking them is for a first piece. */
    if (room < size + pool.chunk)
        return MPI_SUCCESS;
    return stage_take(size, out);
}

int mgdev_stage_get_big(size_t want, mgdev_stage_t **out)
{
    size_t size = pool.chunk;
    *out = NULL;
    while (size < want && size <= pool.cap / 2)
        size *= 2;
    if (size < want)
        return MPI_SUCCESS;
    return stage_take(size, out);
}

void mgdev_stage_put(mgdev_stage_t *s)
{
    if (!s)
        return;
    s->next = pool.free;
    pool.free = s;
}

void mgdev_stage_park(mgdev_stage_t **slot)
{
    mgdev_stage_t *s = *slot;
    if (!s)
        return;
    s->owner = slot;
    s->next = pool.parked;
    pool.parked = s;
}

void mgdev_stage_unpark(mgdev_stage_t **slot)
{
    if (!*slot)
        return; /* never had one, or the pool took it back */
    for (mgdev_stage_t **p = &pool.parked; *p; p = &(*p)->next) {
        if (*p == *slot) {
            *p = (*p)->next;
            break;
        }
    }
    (*slot)->owner = NULL;
    (*slot)->next = NULL;
}

void mgdev_stage_finalize(void)
{
    while (big.n)
        big_drop(0);
    while (pool.parked) {
        mgdev_stage_t *s = pool.parked;
        pool.parked = s->next;
        *s->owner = NULL;
        stage_release(s);
    }
    while (pool.free) {
        mgdev_stage_t *s = pool.free;
        pool.free = s->next;
        stage_release(s);
    }
}
