/* mpigpu-proxy: the bulk thread of a session, which alone reads and writes
 * the bulk lane.  Jobs run in the order the session thread queued them,
 * which is the order the client sent their data. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bulk.h"
#include "proxy.h"

/* Receives the bulk chunk (xfer, off) of exactly n bytes: into dst (stream
 * lane) or in place (shm lane); ch->p gets where the bytes are.  The caller
 * releases ch when done with them. */
static int chunk_recv(mgrm_session_t *s, mgrm_chunk_t *ch, uint64_t xfer, size_t off, size_t n,
                      void *dst)
{
    mgrm_bulk_t *bk = &s->bk;
    if (bk->ops->recv_hdr(bk, ch))
        return -1;
    if (ch->xfer != xfer || ch->off != off || ch->n != n || bk->ops->recv_data(bk, ch, dst)) {
        bk->ops->release(bk, ch);
        return -1;
    }
    return 0;
}

/* Sends a chunk from p (ch from acquire, or NULL for a status). */
/* The running job stops counting as open (for FINISH's rule): once it no
   longer waits for the client, and at the latest before the client learns
   that its read ended, since the client's next FINISH must find it settled
   (a FINISH that does not wait leaves completions to callbacks, which PoCL
   3.1 never runs for a command behind a failed event). */
static void job_settle(mgrm_session_t *s)
{
    if (s->job_settled)
        return;
    s->job_settled = 1;
    pthread_mutex_lock(&s->lock);
    s->jobs_open--;
    pthread_mutex_unlock(&s->lock);
}

static int chunk_send(mgrm_session_t *s, mgrm_chunk_t *ch, uint64_t xfer, size_t off, const void *p,
                      size_t n, cl_int status, int last)
{
    mgrm_chunk_t none = {.slot = -1};
    if (last)
        job_settle(s);
    if (!ch)
        ch = &none;
    ch->xfer = xfer;
    ch->off = off;
    ch->n = n;
    ch->status = status;
    ch->last = last;
    return s->bk.ops->send(&s->bk, ch, p);
}

static cl_int wait_ok(cl_event *e)
{
    cl_int st = CL_SUCCESS, err;
    if (!*e)
        return CL_SUCCESS;
    err = clWaitForEvents(1, e);
    clGetEventInfo(*e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    clReleaseEvent(*e);
    *e = NULL;
    return st < 0 ? st : err;
}

static size_t min_sz(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Waits here for m1 and the client's wait list, instead of making OpenCL
 * commands depend on them: PoCL 3.1 mishandles failures passed on to other
 * queues, or to a command that also waits for an unset user event
 * (pocl_update_event_failed); a failure fails the transfer. */
static void wait_m1(mgrm_job_t *j)
{
    for (cl_uint i = 0; i <= j->nwaits && !j->err; i++) {
        cl_event e = i < j->nwaits ? j->waits[i] : j->m1;
        if (!e)
            continue;
        clRetainEvent(e);
        j->err = wait_ok(&e);
    }
}

/* One-copy lane: n bytes at offset off of the job's client range, from
 * (to_client 0) or to p; par: cut among the helper threads.  0, or -1 with j->err set (a range the
 * client does not have mapped, or a client gone): the job fails, the lane stays. */
static int cma_chunk(mgrm_session_t *s, mgrm_job_t *j, int to_client, size_t off, void *p, size_t n,
                     int par)
{
    if (!mgrm_cma_alive(s)) {
        j->err = CL_DEVICE_NOT_AVAILABLE; /* the client is gone: its pid may be another's */
        return -1;
    }
    if ((par ? mgrm_cma_copy_par : mgrm_cma_copy)(s->cma_pid, to_client, j->addr + off, p, n)) {
        mgrm_log("session %u (%s): one-copy %s of %zu bytes at offset %zu failed: %m", s->num,
                 s->peer, to_client ? "write to the client" : "read from the client", n, off);
        j->err = CL_OUT_OF_RESOURCES;
        return -1;
    }
    if (to_client)
        s->cma_out += n;
    else
        s->cma_in += n;
    return 0;
}

/* The kernel's cross-memory copy pins and copies page by page: on 4 KiB
 * pages it runs at about half of memcpy's speed, on transparent huge pages
 * at memcpy's (doc/performance.md).  The mapped region is the proxy's own
 * memory (a CPU device's buffer): ask for huge pages where it is not yet
 * touched (a buffer's first transfer).  Only the advice changes; an error
 * (memory that is not anonymous) is of no consequence. */
static void huge_advise(void *p, size_t n)
{
    const uintptr_t h = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + h - 1) & ~(h - 1), b = ((uintptr_t)p + n) & ~(h - 1);
    if (b > a)
        madvise((void *)a, b - a, MADV_HUGEPAGE);
}


/* One-copy lane: map the whole buffer region and copy straight between it
 * and the client, the copy cut among the helper threads.  On a CPU device
 * the map is the buffer's own memory (the only copy); a GPU runtime maps
 * into pinned memory of its own and moves it at unmap, at full PCIe speed.
 * (Mapping in 2 MiB pieces, 3 at once, to overlap copy and DMA was 3 to 4
 * times slower on the H100: doc/performance.md.)  j->err gets any error. */
static void cma_mapped(mgrm_session_t *s, mgrm_job_t *j, int to_client, int cpu)
{
    cl_event e = NULL;
    cl_int err = CL_SUCCESS;
    void *p = clEnqueueMapBuffer(j->tq, j->mem, CL_TRUE,
                                 to_client ? CL_MAP_READ : CL_MAP_WRITE_INVALIDATE_REGION, j->off,
                                 j->size, 0, NULL, NULL, &err);
    if (!p) {
        j->err = err ? err : CL_MAP_FAILURE;
        return;
    }
    if (cpu)
        huge_advise(p, j->size);
    cma_chunk(s, j, to_client, 0, p, j->size, 1);
    err = clEnqueueUnmapMemObject(j->tq, j->mem, p, 0, NULL, &e);
    if (err == CL_SUCCESS)
        err = wait_ok(&e);
    if (err && !j->err)
        j->err = err;
}

#define CMA_PIN_MIN ((size_t)4 << 20) /* auto on a GPU: pinned regions from here, staging below */

/* One-copy lane through the two pinned regions: pieces of up to MGRM_PIN_CHUNK,
 * each one OpenCL command and one copy cut among the helper threads; a
 * read copies piece i to the client while piece i + 1 comes from the
 * device, a write fills one region while the other goes to it.  j->err
 * gets any error. */
static void cma_pinned(mgrm_session_t *s, mgrm_job_t *j, int to_client)
{
    mgrm_staging_t *st = mgrm_staging_pinned(s, j->ctx, j->dev);
    cl_event ev[2] = {NULL, NULL};
    /* whole regions: on the H100 a transfer in 2 MiB pieces ran at half the
       speed of one piece (doc/performance.md, "Session 5") */
    size_t piece = MGRM_PIN_CHUNK;
    size_t npieces = (j->size + piece - 1) / piece;
    if (!st) {
        j->err = CL_OUT_OF_RESOURCES;
        return;
    }
    for (size_t i = 0; i < npieces && !j->err; i++) {
        size_t o = i * piece, n = min_sz(piece, j->size - o);
        int k = (int)(i % 2);
        cl_int e = CL_SUCCESS;
        if (to_client) {
            /* piece i is on its way (issued in the last round, or now);
               piece i + 1 goes to the other region, free since its piece
               i - 1 was copied out */
            for (size_t m = i ? i + 1 : 0; m <= i + 1 && m < npieces && !e; m++) {
                size_t om = m * piece;
                e = clEnqueueReadBuffer(j->tq, j->mem, CL_FALSE, j->off + om,
                                        min_sz(piece, j->size - om), st->pinp[m % 2], 0,
                                        NULL, &ev[m % 2]);
                clFlush(j->tq);
            }
            if (e || (e = wait_ok(&ev[k]))) {
                j->err = e;
                break;
            }
            cma_chunk(s, j, 1, o, st->pinp[k], n, 1);
        } else {
            if ((e = wait_ok(&ev[k]))) { /* the region's previous piece */
                j->err = e;
                break;
            }
            if (cma_chunk(s, j, 0, o, st->pinp[k], n, 1))
                break;
            e = clEnqueueWriteBuffer(j->tq, j->mem, CL_FALSE, j->off + o, n, st->pinp[k], 0, NULL,
                                     &ev[k]);
            if (e)
                j->err = e;
            clFlush(j->tq);
        }
    }
    for (int k = 0; k < 2; k++) {
        cl_int e = wait_ok(&ev[k]);
        if (e && !j->err)
            j->err = e;
    }
}

/* One-copy lane: MGRM_CMA_MAP, _PINNED or _STAGING?  MPIGPU_PROXY_CMA_COPY,
 * or auto: map on a CPU device (the buffer is host memory: no copy); on
 * others the pinned regions from CMA_PIN_MIN, staging below
 * (doc/performance.md, "Session 5"). */
static int cma_method(mgrm_session_t *s, mgrm_job_t *j, int *cpu)
{
    cl_device_type t = 0;
    *cpu = clGetDeviceInfo(j->dev, CL_DEVICE_TYPE, sizeof t, &t, NULL) == CL_SUCCESS &&
           (t & CL_DEVICE_TYPE_CPU);
    if (s->px && s->px->cma_map >= 0)
        return s->px->cma_map;
    if (*cpu)
        return MGRM_CMA_MAP;
    return j->size >= CMA_PIN_MIN ? MGRM_CMA_PINNED : MGRM_CMA_STAGING;
}

/* The one-copy lane's map and pinned methods: 1 if the job ran here. */
static int cma_direct(mgrm_session_t *s, mgrm_job_t *j, int to_client)
{
    int cpu, m;
    if (!j->addr || j->err || (m = cma_method(s, j, &cpu)) == MGRM_CMA_STAGING)
        return 0;
    wait_m1(j);
    if (!j->err && m == MGRM_CMA_MAP)
        cma_mapped(s, j, to_client, cpu);
    else if (!j->err)
        cma_pinned(s, j, to_client);
    return 1;
}

/* Opens the job's gate: its command event m2 (a marker behind the gate on
 * the client's queue) then completes, or fails with the job's error. */
static void gate_open(mgrm_job_t *j)
{
    if (!j->gate)
        return;
    cl_int st = CL_COMPLETE;
    if (j->m2)
        clGetEventInfo(j->m2, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (st >= 0) /* m2 not already failed by OpenCL (see wait_m1) */
        clSetUserEventStatus(j->gate, j->err < 0 ? j->err : CL_COMPLETE);
    clReleaseEvent(j->gate);
    j->gate = NULL;
}

/* Polls e's status for up to ms milliseconds (no blocking wait: what e
 * waits for may be held back by a client user event). */
static void poll_done(cl_event e, int ms)
{
    cl_int st = CL_QUEUED;
    for (int i = 0; e && i < 20 * ms; i++) {
        if (clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) ||
            st <= CL_COMPLETE)
            break;
        usleep(50);
    }
}

/* The 0-byte status chunk that ends a read.  A failed read fails m2 first
 * and gives it up to 200 ms to be failed: PoCL fails what follows a failed
 * command in an in-order queue, so a command the client enqueues once it
 * has seen the failure must find m2 failed and done already, as natively
 * it finds the failed read done; otherwise it inherited the failure (a
 * later clFinish of vcl_basic finish returned -14 in about 1 of 60 runs
 * under load).  Before that it gives m1 (what was before the read on the
 * queue; not waited for when the wait list failed) up to 200 ms to
 * complete: failing m2 while m1 still ran made PoCL 3.1 finish m2 twice
 * (an assertion on the queue's command count, 1 of 100 runs).  Both waits
 * are bounded: a client user event may hold m1 back. */
static int end_chunk(mgrm_session_t *s, mgrm_job_t *j)
{
    if (j->err && j->gate) {
        poll_done(j->m1, 200);
        gate_open(j);
        poll_done(j->m2, 200);
    }
    return chunk_send(s, NULL, j->xfer, 0, NULL, 0, j->err, 1);
}

/* Returns -1 when the lane broke; job errors go into j->err.  On the shm
 * lane the device reads straight from the slot, which is freed when that
 * write is complete.  On the one-copy lane each chunk is read from the
 * client into a pinned staging buffer while the previous ones go to the
 * device (or the whole range into the mapped buffer). */
static int run_write(mgrm_session_t *s, mgrm_job_t *j, void *scratch)
{
    if (cma_direct(s, j, 0))
        return 0;
    mgrm_staging_t *st = j->err ? NULL : mgrm_staging_get(s, j->ctx, j->dev, 1);
    cl_event ev[MGRM_STAGING_SLOTS] = {0};
    mgrm_chunk_t ch[MGRM_STAGING_SLOTS];
    size_t off = 0;
    int rc = 0;
    for (int k = 0; k < MGRM_STAGING_SLOTS; k++)
        ch[k].slot = -1;
    if (!st && !j->err)
        j->err = CL_OUT_OF_RESOURCES;
    wait_m1(j);
    for (int i = 0;; i++) {
        size_t n = min_sz(MGRM_CHUNK, j->size - off);
        int slot = i % MGRM_STAGING_SLOTS;
        cl_int e = wait_ok(&ev[slot]);
        s->bk.ops->release(&s->bk, &ch[slot]);
        if (e && !j->err)
            j->err = e;
        void *dst = j->err ? scratch : st->ptr[slot];
        if (j->addr) {
            if (j->err || cma_chunk(s, j, 0, off, dst, n, 0))
                break; /* nothing to drain */
            ch[slot].p = dst;
        } else if (chunk_recv(s, &ch[slot], j->xfer, off, n, dst)) {
            j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
            rc = -1;
            break;
        }
        if (!j->err && n) {
            e = clEnqueueWriteBuffer(j->tq, j->mem, CL_FALSE, j->off + off, n, ch[slot].p, 0, NULL,
                                     &ev[slot]);
            if (e)
                j->err = e;
            else
                clFlush(j->tq);
        }
        off += n;
        if (off >= j->size)
            break;
    }
    for (int k = 0; k < MGRM_STAGING_SLOTS; k++) {
        cl_int e = wait_ok(&ev[k]);
        if (e && !j->err)
            j->err = e;
    }
    for (int k = 0; k < MGRM_STAGING_SLOTS; k++)
        s->bk.ops->release(&s->bk, &ch[k]);
    return rc;
}

/* On the shm lane the device writes straight into the slot.  On the
 * one-copy lane each chunk goes from its staging buffer to the client
 * while the next ones come from the device (or the whole range from the
 * mapped buffer); then a status chunk of 0 bytes ends the transfer. */
static int run_read(mgrm_session_t *s, mgrm_job_t *j)
{
    if (cma_direct(s, j, 1))
        return end_chunk(s, j);
    mgrm_staging_t *st = j->err ? NULL : mgrm_staging_get(s, j->ctx, j->dev, 1);
    cl_event ev[MGRM_STAGING_SLOTS] = {0};
    mgrm_chunk_t ch[MGRM_STAGING_SLOTS];
    void *dst[MGRM_STAGING_SLOTS];
    size_t nchunks = j->size ? (j->size + MGRM_CHUNK - 1) / MGRM_CHUNK : 0, issued = 0;
    if (!st && !j->err)
        j->err = CL_OUT_OF_RESOURCES;
    wait_m1(j);
    for (size_t i = 0; i < nchunks && !j->err; i++) {
        for (; issued < nchunks && issued < i + MGRM_STAGING_SLOTS && !j->err; issued++) {
            size_t o = issued * MGRM_CHUNK, k = issued % MGRM_STAGING_SLOTS;
            ch[k].p = NULL;
            if (!j->addr && s->bk.ops->acquire(&s->bk, &ch[k])) {
                j->err = CL_DEVICE_NOT_AVAILABLE;
                break;
            }
            dst[k] = ch[k].p ? ch[k].p : st->ptr[k];
            cl_int e =
                clEnqueueReadBuffer(j->tq, j->mem, CL_FALSE, j->off + o,
                                    min_sz(MGRM_CHUNK, j->size - o), dst[k], 0, NULL, &ev[k]);
            if (e)
                j->err = e;
            clFlush(j->tq);
        }
        cl_int e = wait_ok(&ev[i % MGRM_STAGING_SLOTS]);
        if (e && !j->err)
            j->err = e;
        if (j->err)
            break;
        size_t o = i * MGRM_CHUNK, k = i % MGRM_STAGING_SLOTS;
        if (j->addr) {
            if (cma_chunk(s, j, 1, o, dst[k], min_sz(MGRM_CHUNK, j->size - o), 0))
                break;
            continue;
        }
        if (chunk_send(s, &ch[k], j->xfer, o, dst[k], min_sz(MGRM_CHUNK, j->size - o), CL_SUCCESS,
                       i + 1 == nchunks)) {
            j->err = CL_DEVICE_NOT_AVAILABLE;
            for (int q = 0; q < MGRM_STAGING_SLOTS; q++)
                wait_ok(&ev[q]);
            return -1;
        }
    }
    for (int k = 0; k < MGRM_STAGING_SLOTS; k++)
        wait_ok(&ev[k]);
    if (j->err || nchunks == 0 || j->addr) {
        return end_chunk(s, j);
    }
    return 0;
}

/* Rectangles move as one packed host buffer (region[0] x region[1] x
 * region[2] bytes). */
static int run_rect(mgrm_session_t *s, mgrm_job_t *j, void *scratch)
{
    unsigned char *p = j->err ? NULL : malloc(j->size);
    size_t ho[3] = {0, 0, 0};
    if (!p && !j->err)
        j->err = CL_OUT_OF_HOST_MEMORY;
    wait_m1(j);
    if (j->type == JOB_WRITE_RECT) {
        for (size_t off = 0; off < j->size || off == 0; off += MGRM_CHUNK) {
            size_t n = min_sz(MGRM_CHUNK, j->size - off);
            mgrm_chunk_t ch = {.slot = -1};
            void *dst = p ? p + off : scratch;
            if (chunk_recv(s, &ch, j->xfer, off, n, dst)) {
                free(p);
                j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
                return -1;
            }
            if (n && ch.p != dst)
                memcpy(dst, ch.p, n);
            s->bk.ops->release(&s->bk, &ch);
            if (j->size == 0)
                break;
        }
        if (!j->err)
            j->err =
                clEnqueueWriteBufferRect(j->tq, j->mem, CL_TRUE, j->bo, ho, j->reg, j->brp, j->bsp,
                                         j->reg[0], j->reg[0] * j->reg[1], p, 0, NULL, NULL);
        free(p);
        return 0;
    }
    if (!j->err)
        j->err = clEnqueueReadBufferRect(j->tq, j->mem, CL_TRUE, j->bo, ho, j->reg, j->brp, j->bsp,
                                         j->reg[0], j->reg[0] * j->reg[1], p, 0, NULL, NULL);
    int rc = 0;
    for (size_t off = 0; !j->err && off < j->size && !rc; off += MGRM_CHUNK) {
        size_t n = min_sz(MGRM_CHUNK, j->size - off);
        mgrm_chunk_t ch;
        rc = s->bk.ops->acquire(&s->bk, &ch) ||
                     chunk_send(s, &ch, j->xfer, off, p + off, n, CL_SUCCESS, off + n >= j->size)
                 ? -1
                 : 0;
    }
    if (j->err)
        rc = end_chunk(s, j);
    free(p);
    return rc;
}

static void job_free(mgrm_job_t *j)
{
    gate_open(j);
    for (cl_uint i = 0; i < j->nwaits; i++)
        clReleaseEvent(j->waits[i]);
    free(j->waits);
    if (j->m2)
        clReleaseEvent(j->m2);
    if (j->m1)
        clReleaseEvent(j->m1);
    if (j->mem)
        clReleaseMemObject(j->mem);
    if (j->tq)
        clReleaseCommandQueue(j->tq);
    free(j);
}

static int bulk_stopped(void *arg)
{
    mgrm_session_t *s = arg;
    pthread_mutex_lock(&s->lock);
    int q = s->bulk_quit;
    pthread_mutex_unlock(&s->lock);
    return q;
}

/* Waits up to 1 s for a job (s->lock held).  While the session thread is
 * in a native clFinish (FINISH), it reads no PING, so this thread, idle
 * then, tells the client every second that the proxy lives: an empty
 * EVENTS_DONE. */
static void keepalive_wait(mgrm_session_t *s)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&s->cond, &s->lock, &until);
    if (s->finishing_ms && mgrm_now_ms() - s->finishing_ms >= 1000) {
        mgrm_buf_t b;
        pthread_mutex_unlock(&s->lock);
        mgrm_buf_init(&b, MGRM_OP_EVENTS_DONE, 0, 0);
        mgrm_buf_u32(&b, 0);
        pthread_mutex_lock(&s->send_lock);
        if (!s->dead)
            mgrm_msg_send(s->t, s->cmd, &b);
        pthread_mutex_unlock(&s->send_lock);
        mgrm_buf_free(&b);
        pthread_mutex_lock(&s->lock);
    }
}

static void *bulk_main(void *arg)
{
    mgrm_session_t *s = arg;
    void *scratch = malloc(MGRM_CHUNK);
    int broken = scratch == NULL;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        MGRM_SPIN_WHILE(!s->jobs && !s->bulk_quit, &s->lock);
        while (!s->jobs && !s->bulk_quit)
            keepalive_wait(s);
        mgrm_job_t *j = s->jobs;
        if (j && !(s->jobs = j->next))
            s->jobs_tail = &s->jobs;
        pthread_mutex_unlock(&s->lock);
        if (!j)
            break;
        int rc = 0;
        s->job_settled = 0;
        if (broken)
            j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
        else if (j->type == JOB_WRITE)
            rc = run_write(s, j, scratch);
        else if (j->type == JOB_READ)
            rc = run_read(s, j);
        else
            rc = run_rect(s, j, scratch);
        job_settle(s); /* only opening the gate is left */
        if (rc && !broken) {
            broken = 1;
            mgrm_log("session %u (%s): bulk lane broken or out of step; closing session", s->num,
                     s->peer);
            s->t->shutdown(s->cmd); /* ends the session thread too */
        }
        job_free(j);
    }
    free(scratch);
    return NULL;
}

int mgrm_bulk_start(mgrm_session_t *s)
{
    /* the lane's endpoint (the caller holds s->lock); the session thread
     * may switch the lane to shm before the first job, under s->lock */
    s->bk.t = s->t;
    s->bk.ep = s->bulk;
    s->bk.stopped = bulk_stopped;
    s->bk.arg = s;
    if (pthread_create(&s->bulk_thread, NULL, bulk_main, s))
        return -1;
    s->bulk_started = 1;
    return 0;
}

void mgrm_bulk_stop(mgrm_session_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->bulk_quit = 1;
    pthread_cond_broadcast(&s->cond);
    int started = s->bulk_started;
    pthread_mutex_unlock(&s->lock);
    if (started)
        pthread_join(s->bulk_thread, NULL);
    while (s->jobs) {
        mgrm_job_t *j = s->jobs;
        s->jobs = j->next;
        j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
        job_free(j);
    }
    s->jobs_tail = &s->jobs;
}
