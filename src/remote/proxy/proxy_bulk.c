/* mpigpu-proxy: the bulk thread of a session, which alone drives the bulk
 * lane (itself, or through the stripes' threads: proxy_stripe.c).  Jobs run
 * in the order the session thread queued them, which is the order the
 * client sent their data. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bulk.h"
#include "proxy.h"

/* The receive of chunk (xfer, off, n) into dst (stream; shm: in place). */
static void io_recv(mgpx_io_t *io, uint64_t xfer, size_t off, size_t n, void *dst)
{
    io->send = 0;
    io->ch = (mgtr_chunk_t){.xfer = xfer, .off = off, .n = n, .slot = -1};
    io->p = dst;
}

/* The running job stops counting as open (for FINISH's rule): once it no
   longer waits for the client, and at the latest before the client learns
   that its read ended (its last chunk is posted), since the client's next
   FINISH must find it settled (a FINISH that does not wait leaves
   completions to callbacks, which PoCL 3.1 never runs for a command behind
   a failed event). */
static void job_settle(mgpx_session_t *s)
{
    if (s->job_settled)
        return;
    s->job_settled = 1;
    pthread_mutex_lock(&s->lock);
    s->jobs_open--;
    pthread_mutex_unlock(&s->lock);
}

/* The send of chunk (xfer, off, n) from p; ch->p and ch->slot from acquire
 * are kept. */
static void io_send(mgpx_io_t *io, uint64_t xfer, size_t off, const void *p, size_t n, int last)
{
    io->send = 1;
    io->ch.xfer = xfer;
    io->ch.off = off;
    io->ch.n = n;
    io->ch.status = CL_SUCCESS;
    io->ch.last = last;
    io->p = (void *)p;
}

/* Posts a send; a read's last chunk settles the job first. */
static void send_post(mgpx_session_t *s, mgpx_io_t *io)
{
    if (io->ch.last)
        job_settle(s);
    mgpx_io_post(s, io, s->rnext++);
}

/* Sends n bytes at offset o of a read from p (with one stripe, last marks
 * the read's end chunk; with several, bulk_main sends one after the gate).
 * -1 when one stripe's send, made at once, failed. */
static int read_send(mgpx_session_t *s, mgpx_io_t *io, uint64_t xfer, size_t o, const void *p,
                     size_t n, int last)
{
    io_send(io, xfer, o, p, n, s->nstripes <= 1 && last);
    send_post(s, io);
    return s->nstripes <= 1 && io->rc ? -1 : 0;
}

/* Ends a read with a status chunk of 0 bytes; its offset tells the client
 * how many bytes of the read were sent before it (on any stripe). */
static int read_end(mgpx_session_t *s, uint64_t xfer, cl_int err, size_t sent)
{
    mgpx_io_t io = {.send = 1,
                    .ch = {.xfer = xfer, .off = sent, .status = err, .last = 1, .slot = -1}};
    send_post(s, &io);
    return mgpx_io_wait(s, &io);
}

/* Waits for every posted io of a transfer; after a broken one the others
 * may wait for bytes that never come, so all stripes are woken first. */
static void io_drain(mgpx_session_t *s, mgpx_io_t *io, int n, int broken)
{
    if (broken)
        mgpx_stripes_shutdown(s);
    for (int k = 0; k < n; k++)
        mgpx_io_wait(s, &io[k]);
}

static void io_release(mgpx_session_t *s, mgpx_io_t *io)
{
    s->stripe[0].bk.ops->release(&s->stripe[0].bk, &io->ch);
    io->ch.slot = -1;
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
void mgpx_job_wait(mgpx_job_t *j)
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
static int cma_chunk(mgpx_session_t *s, mgpx_job_t *j, int to_client, size_t off, void *p, size_t n,
                     int par)
{
    if (!mgpx_cma_alive(s)) {
        j->err = CL_DEVICE_NOT_AVAILABLE; /* the client is gone: its pid may be another's */
        return -1;
    }
    if ((par ? mgtr_cma_copy_par : mgtr_cma_copy)(s->cma_pid, to_client, j->addr + off, p, n)) {
        mgpx_log("session %u (%s): one-copy %s of %zu bytes at offset %zu failed: %m", s->num,
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
static void cma_mapped(mgpx_session_t *s, mgpx_job_t *j, int to_client, int cpu)
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

/* One-copy lane through the two pinned regions: pieces of up to MGPX_PIN_CHUNK,
 * each one OpenCL command and one copy cut among the helper threads; a
 * read copies piece i to the client while piece i + 1 comes from the
 * device, a write fills one region while the other goes to it.  j->err
 * gets any error. */
static void cma_pinned(mgpx_session_t *s, mgpx_job_t *j, int to_client)
{
    mgpx_staging_t *st = mgpx_staging_pinned(s, j->ctx, j->dev);
    cl_event ev[2] = {NULL, NULL};
    /* whole regions: on the H100 a transfer in 2 MiB pieces ran at half the
       speed of one piece (doc/performance.md, "Session 5") */
    size_t piece = MGPX_PIN_CHUNK;
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
                                        min_sz(piece, j->size - om), st->pinp[m % 2], 0, NULL,
                                        &ev[m % 2]);
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

/* One-copy lane: MGPX_CMA_MAP, _PINNED or _STAGING?  MPIGPU_PROXY_CMA_COPY,
 * or auto: map on a CPU device (the buffer is host memory: no copy); on
 * others the pinned regions from CMA_PIN_MIN, staging below
 * (doc/performance.md, "Session 5"). */
static int cma_method(mgpx_session_t *s, mgpx_job_t *j, int *cpu)
{
    cl_device_type t = 0;
    *cpu = clGetDeviceInfo(j->dev, CL_DEVICE_TYPE, sizeof t, &t, NULL) == CL_SUCCESS &&
           (t & CL_DEVICE_TYPE_CPU);
    if (s->px && s->px->cma_map >= 0)
        return s->px->cma_map;
    if (*cpu)
        return MGPX_CMA_MAP;
    return j->size >= CMA_PIN_MIN ? MGPX_CMA_PINNED : MGPX_CMA_STAGING;
}

/* The one-copy lane's map and pinned methods: 1 if the job ran here. */
static int cma_direct(mgpx_session_t *s, mgpx_job_t *j, int to_client)
{
    int cpu, m;
    if (!j->addr || j->err || (m = cma_method(s, j, &cpu)) == MGPX_CMA_STAGING)
        return 0;
    mgpx_job_wait(j);
    if (!j->err && m == MGPX_CMA_MAP)
        cma_mapped(s, j, to_client, cpu);
    else if (!j->err)
        cma_pinned(s, j, to_client);
    return 1;
}

/* Opens the job's gate: its command event m2 (a marker behind the gate on
 * the client's queue) then completes, or fails with the job's error. */
static void gate_open(mgpx_job_t *j)
{
    if (!j->gate)
        return;
    cl_int st = CL_COMPLETE;
    if (j->m2)
        clGetEventInfo(j->m2, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    if (st >= 0) /* m2 not already failed by OpenCL (see mgpx_job_wait) */
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

/* Before the 0-byte status chunk that ends a read.  A failed read fails m2 first
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
static void gate_fail_first(mgpx_job_t *j)
{
    if (j->err && j->gate) {
        poll_done(j->m1, 200);
        gate_open(j);
        poll_done(j->m2, 200);
    }
}

/* read_end (sent: the bytes sent before it) after gate_fail_first. */
static int end_chunk(mgpx_session_t *s, mgpx_job_t *j, size_t sent)
{
    gate_fail_first(j);
    return read_end(s, j->xfer, j->err, sent);
}

/* Returns -1 when the lane broke; job errors go into j->err.  Receives
 * are posted up to s->depth chunks ahead with several stripes (each into a
 * staging buffer the device is done with), one at a time with one.  On the
 * shm lane the device reads straight from the slot, which is freed when
 * that write is complete.  On the one-copy lane each chunk is read from the
 * client into a pinned staging buffer while the previous ones go to the
 * device (or the whole range into the mapped buffer).  A failed job drains
 * its chunks into scratch (s->depth chunks). */
static int run_write(mgpx_session_t *s, mgpx_job_t *j, unsigned char *scratch)
{
    if (cma_direct(s, j, 0))
        return 0;
    mgpx_staging_t *st = j->err ? NULL : mgpx_staging_get(s, j->ctx, j->dev, 1);
    const int depth = s->depth;
    const size_t ahead = s->nstripes > 1 ? (size_t)depth : 1;
    cl_event ev[MGPX_STAGING_MAX] = {0};
    mgpx_io_t io[MGPX_STAGING_MAX] = {0};
    size_t nchunks = j->size ? (j->size + MGW_CHUNK - 1) / MGW_CHUNK : 1, posted = 0;
    int rc = 0;
    for (int k = 0; k < MGPX_STAGING_MAX; k++)
        io[k].ch.slot = -1;
    if (!st && !j->err)
        j->err = CL_OUT_OF_RESOURCES;
    mgpx_job_wait(j);
    for (size_t i = 0; i < nchunks; i++) {
        for (; !j->addr && posted < nchunks && posted < i + ahead; posted++) {
            int k = (int)(posted % (size_t)depth);
            size_t o = posted * MGW_CHUNK;
            cl_int e = wait_ok(&ev[k]);
            io_release(s, &io[k]);
            if (e && !j->err)
                j->err = e;
            io_recv(&io[k], j->xfer, o, min_sz(MGW_CHUNK, j->size - o),
                    j->err ? scratch + (size_t)k * MGW_CHUNK : st->ptr[k]);
            mgpx_io_post(s, &io[k], s->wnext++);
        }
        int k = (int)(i % (size_t)depth);
        size_t o = i * MGW_CHUNK, n = min_sz(MGW_CHUNK, j->size - o);
        if (j->addr) {
            cl_int e = wait_ok(&ev[k]);
            if (e && !j->err)
                j->err = e;
            void *dst = j->err ? scratch : st->ptr[k];
            if (j->err || cma_chunk(s, j, 0, o, dst, n, 0))
                break; /* nothing to drain */
            io[k].ch.p = dst;
        } else if (mgpx_io_wait(s, &io[k])) {
            j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
            rc = -1;
            break;
        }
        if (!j->err && n) {
            cl_int e = clEnqueueWriteBuffer(j->tq, j->mem, CL_FALSE, j->off + o, n, io[k].ch.p, 0,
                                            NULL, &ev[k]);
            if (e)
                j->err = e;
            else
                clFlush(j->tq);
        }
    }
    io_drain(s, io, depth, rc);
    for (int k = 0; k < depth; k++) {
        cl_int e = wait_ok(&ev[k]);
        if (e && !j->err)
            j->err = e;
    }
    for (int k = 0; k < depth; k++)
        io_release(s, &io[k]);
    return rc;
}

/* Device reads run up to s->depth chunks ahead of the sends; a staging
 * buffer is read into again once its send is done.  On the shm lane the
 * device writes straight into the slot.  On the one-copy lane each chunk
 * goes from its staging buffer to the client while the next ones come from
 * the device (or the whole range from the mapped buffer); then a status
 * chunk of 0 bytes ends the transfer. */
static int run_read(mgpx_session_t *s, mgpx_job_t *j)
{
    if (cma_direct(s, j, 1))
        return end_chunk(s, j, 0);
    mgpx_staging_t *st = j->err ? NULL : mgpx_staging_get(s, j->ctx, j->dev, 1);
    const int depth = s->depth;
    cl_event ev[MGPX_STAGING_MAX] = {0};
    mgpx_io_t io[MGPX_STAGING_MAX] = {0};
    void *dst[MGPX_STAGING_MAX];
    size_t nchunks = j->size ? (j->size + MGW_CHUNK - 1) / MGW_CHUNK : 0, issued = 0, sent = 0;
    int rc = 0;
    if (!st && !j->err)
        j->err = CL_OUT_OF_RESOURCES;
    mgpx_job_wait(j);
    for (size_t i = 0; i < nchunks && !j->err && !rc; i++) {
        for (; issued < nchunks && issued < i + (size_t)depth && !j->err; issued++) {
            size_t o = issued * MGW_CHUNK, k = issued % (size_t)depth;
            if (mgpx_io_wait(s, &io[k])) { /* the buffer's previous send */
                rc = -1;
                break;
            }
            io[k].ch.p = NULL;
            io[k].ch.slot = -1;
            if (!j->addr && s->stripe[0].bk.ops->acquire(&s->stripe[0].bk, &io[k].ch)) {
                rc = -1;
                break;
            }
            dst[k] = io[k].ch.p ? io[k].ch.p : st->ptr[k];
            cl_int e = clEnqueueReadBuffer(j->tq, j->mem, CL_FALSE, j->off + o,
                                           min_sz(MGW_CHUNK, j->size - o), dst[k], 0, NULL, &ev[k]);
            if (e)
                j->err = e;
            clFlush(j->tq);
        }
        size_t o = i * MGW_CHUNK, k = i % (size_t)depth, n = min_sz(MGW_CHUNK, j->size - o);
        cl_int e = wait_ok(&ev[k]);
        if (e && !j->err)
            j->err = e;
        if (j->err || rc)
            break;
        if (j->addr) {
            if (cma_chunk(s, j, 1, o, dst[k], n, 0))
                break;
            continue;
        }
        rc = read_send(s, &io[k], j->xfer, o, dst[k], n, i + 1 == nchunks);
        sent += n;
    }
    for (int k = 0; k < depth && !rc; k++)
        rc = mgpx_io_wait(s, &io[k]) ? -1 : 0;
    io_drain(s, io, depth, rc);
    for (int k = 0; k < depth; k++)
        wait_ok(&ev[k]);
    if (rc) {
        j->err = CL_DEVICE_NOT_AVAILABLE;
        return -1;
    }
    if (s->nstripes > 1) { /* the end chunk follows the gate: bulk_main */
        j->sent = sent;
        j->end = 1;
        return 0;
    }
    if (j->err || nchunks == 0 || j->addr)
        return end_chunk(s, j, j->addr ? 0 : sent);
    return 0;
}

/* Rectangles move as one packed host buffer (region[0] x region[1] x
 * region[2] bytes), its chunks spread over the stripes like a plain
 * transfer's. */
static int run_rect(mgpx_session_t *s, mgpx_job_t *j, unsigned char *scratch)
{
    unsigned char *p = j->err ? NULL : malloc(j->size);
    size_t ho[3] = {0, 0, 0};
    const int depth = s->depth;
    mgpx_io_t io[MGPX_STAGING_MAX] = {0};
    size_t nchunks = j->size ? (j->size + MGW_CHUNK - 1) / MGW_CHUNK : 1, sent = 0;
    int rc = 0;
    if (!p && !j->err)
        j->err = CL_OUT_OF_HOST_MEMORY;
    mgpx_job_wait(j);
    if (j->type == JOB_WRITE_RECT || j->type == JOB_WRITE_IMAGE) {
        size_t posted = 0, ahead = s->nstripes > 1 ? (size_t)depth : 1;
        for (size_t i = 0; i < nchunks && !rc; i++) {
            for (; posted < nchunks && posted < i + ahead; posted++) {
                size_t o = posted * MGW_CHUNK, k = posted % (size_t)depth;
                io_recv(&io[k], j->xfer, o, min_sz(MGW_CHUNK, j->size - o),
                        p ? p + o : scratch + k * MGW_CHUNK);
                mgpx_io_post(s, &io[k], s->wnext++);
            }
            size_t k = i % (size_t)depth;
            if (mgpx_io_wait(s, &io[k])) {
                rc = -1;
                break;
            }
            if (io[k].ch.n && io[k].ch.p != io[k].p) /* shm: out of the slot */
                memcpy(io[k].p, io[k].ch.p, io[k].ch.n);
            io_release(s, &io[k]);
        }
        io_drain(s, io, depth, rc);
        if (rc) {
            free(p);
            j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
            return -1;
        }
        if (!j->err && j->type == JOB_WRITE_IMAGE) /* rows of reg[0] pixels, packed */
            j->err =
                clEnqueueWriteImage(j->tq, j->mem, CL_TRUE, j->bo, j->reg, 0, 0, p, 0, NULL, NULL);
        else if (!j->err)
            j->err =
                clEnqueueWriteBufferRect(j->tq, j->mem, CL_TRUE, j->bo, ho, j->reg, j->brp, j->bsp,
                                         j->reg[0], j->reg[0] * j->reg[1], p, 0, NULL, NULL);
        free(p);
        return 0;
    }
    if (!j->err && j->type == JOB_READ_IMAGE)
        j->err = clEnqueueReadImage(j->tq, j->mem, CL_TRUE, j->bo, j->reg, 0, 0, p, 0, NULL, NULL);
    else if (!j->err)
        j->err = clEnqueueReadBufferRect(j->tq, j->mem, CL_TRUE, j->bo, ho, j->reg, j->brp, j->bsp,
                                         j->reg[0], j->reg[0] * j->reg[1], p, 0, NULL, NULL);
    for (size_t i = 0; !j->err && i < nchunks && j->size && !rc; i++) {
        size_t o = i * MGW_CHUNK, k = i % (size_t)depth, n = min_sz(MGW_CHUNK, j->size - o);
        if (mgpx_io_wait(s, &io[k])) { /* the send out of this io's last use */
            rc = -1;
            break;
        }
        io[k].ch.p = NULL;
        io[k].ch.slot = -1;
        if (s->stripe[0].bk.ops->acquire(&s->stripe[0].bk, &io[k].ch)) {
            rc = -1;
            break;
        }
        rc = read_send(s, &io[k], j->xfer, o, p + o, n, o + n >= j->size);
        sent += n;
    }
    for (int k = 0; k < depth && !rc; k++)
        rc = mgpx_io_wait(s, &io[k]) ? -1 : 0;
    io_drain(s, io, depth, rc);
    j->sent = sent;
    j->end = !rc && s->nstripes > 1; /* the end chunk follows the gate: bulk_main */
    if (!rc && j->err && s->nstripes <= 1)
        rc = end_chunk(s, j, sent);
    free(p);
    return rc;
}

void mgpx_job_free(mgpx_job_t *j)
{
    gate_open(j);
    free(j->paddr);
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
    mgpx_session_t *s = arg;
    pthread_mutex_lock(&s->lock);
    int q = s->bulk_quit;
    pthread_mutex_unlock(&s->lock);
    return q;
}

/* Waits up to 1 s for a job (s->lock held).  While the session thread is
 * in a native clFinish (FINISH), it reads no PING, so this thread, idle
 * then, tells the client every second that the proxy lives: an empty
 * EVENTS_DONE. */
static void keepalive_wait(mgpx_session_t *s)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&s->cond, &s->lock, &until);
    if (s->finishing_ms && mgtr_now_ms() - s->finishing_ms >= 1000) {
        mgw_buf_t b;
        pthread_mutex_unlock(&s->lock);
        mgw_events_done_encode(&b, 0, &(mgw_events_done_t){0}); /* none: a keepalive */
        pthread_mutex_lock(&s->send_lock);
        if (!s->dead)
            mgtr_msg_send(s->t, s->cmd, &b);
        pthread_mutex_unlock(&s->send_lock);
        mgw_buf_free(&b);
        pthread_mutex_lock(&s->lock);
    }
}

static void *bulk_main(void *arg)
{
    mgpx_session_t *s = arg;
    unsigned char *scratch = malloc((size_t)s->depth * MGW_CHUNK);
    int broken = scratch == NULL;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        MGTR_SPIN_WHILE(!s->jobs && !s->bulk_quit, &s->lock);
        while (!s->jobs && !s->bulk_quit)
            keepalive_wait(s);
        mgpx_job_t *j = s->jobs;
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
        else if (j->type == JOB_PEER_RECV)
            rc = mgpx_peer_recv_run(s, j);
        else
            rc = run_rect(s, j, scratch);
        job_settle(s); /* only the gate (with several stripes, a read's end chunk) is left */
        /* Several stripes: a read's chunks reach the client through other
         * threads, later than the job ends here; were its end chunk sent
         * before the gate is set, the client would often run on before the
         * proxy is done with the job (PoCL 3.1 then aborts now and then in
         * pocl_lock_events_inorder).  So the end chunk, success or error,
         * waits for the gate. */
        uint64_t xfer = j->xfer;
        cl_int err = j->err;
        size_t sent = j->sent;
        int end = j->end && !rc && !broken;
        if (end)
            gate_fail_first(j); /* a failed read: see end_chunk */
        mgpx_job_free(j);
        if (end)
            rc = read_end(s, xfer, err, sent);
        if (rc && !broken) {
            broken = 1;
            mgpx_log("session %u (%s): bulk lane broken or out of step; closing session", s->num,
                     s->peer);
            s->t->shutdown(s->cmd); /* ends the session thread too */
        }
    }
    free(scratch);
    return NULL;
}

int mgpx_bulk_start(mgpx_session_t *s)
{
    /* the lane's endpoints (the caller holds s->lock); the session thread
     * may switch a lane of one stripe to shm before the first job, under
     * s->lock */
    s->stripe[0].bk.stopped = bulk_stopped;
    s->stripe[0].bk.arg = s;
    if (mgpx_stripes_start(s) || pthread_create(&s->bulk_thread, NULL, bulk_main, s))
        return -1;
    s->bulk_started = 1;
    return 0;
}

void mgpx_bulk_stop(mgpx_session_t *s)
{
    pthread_mutex_lock(&s->lock);
    s->bulk_quit = 1;
    pthread_cond_broadcast(&s->cond);
    int started = s->bulk_started;
    pthread_mutex_unlock(&s->lock);
    if (started)
        pthread_join(s->bulk_thread, NULL);
    mgpx_stripes_stop(s);
    while (s->jobs) {
        mgpx_job_t *j = s->jobs;
        s->jobs = j->next;
        j->err = j->err ? j->err : CL_DEVICE_NOT_AVAILABLE;
        mgpx_job_free(j);
    }
    s->jobs_tail = &s->jobs;
}
