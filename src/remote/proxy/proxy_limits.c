/* mpigpu-proxy's limits on what one client can take from the others: the
 * device-memory quotas of buffers, and the rate of the log lines a peer can
 * cause.  (The connection limits, which only the accept loop sees, are in
 * proxy_main.c.) */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "proxy.h"

/* ---- rate-limited log ---- */

unsigned mgpx_log_rate = 10;
static mgpx_ratelog_t conn_log = {PTHREAD_MUTEX_INITIALIZER, -1000000, 0, 0};

void mgpx_ratelog_init(mgpx_ratelog_t *rl)
{
    pthread_mutex_init(&rl->lock, NULL);
    rl->window_ms = -1000000;
    rl->lines = 0;
    rl->dropped = 0;
}

/* Under rl->lock: opens a new one-second window when the current one is
 * over; returns the lines dropped in the old one (to report). */
static unsigned long rl_window(mgpx_ratelog_t *rl, long long now)
{
    unsigned long dropped = 0;
    if (now - rl->window_ms >= 1000) {
        dropped = rl->dropped;
        rl->dropped = 0;
        rl->lines = 0;
        rl->window_ms = now;
    }
    return dropped;
}

static void rl_dropped(const char *who, unsigned long n)
{
    if (n)
        mgpx_log("%ssuppressed %lu log messages (more than MPIGPU_PROXY_LOG_RATE=%u a second)", who,
                 n, mgpx_log_rate);
}

static void rl_vlog(mgpx_ratelog_t *rl, const char *who, const char *fmt, va_list ap)
{
    char line[512];
    pthread_mutex_lock(&rl->lock);
    unsigned long dropped = rl_window(rl, mgtr_now_ms());
    int write = rl->lines < mgpx_log_rate;
    if (write)
        rl->lines++;
    else
        rl->dropped++;
    pthread_mutex_unlock(&rl->lock);
    rl_dropped(who, dropped);
    if (!write)
        return;
    vsnprintf(line, sizeof line, fmt, ap);
    mgpx_log("%s", line);
}

static void rl_flush(mgpx_ratelog_t *rl, const char *who, int now)
{
    pthread_mutex_lock(&rl->lock);
    unsigned long dropped = now ? rl->dropped : rl_window(rl, mgtr_now_ms());
    if (now)
        rl->dropped = 0;
    pthread_mutex_unlock(&rl->lock);
    rl_dropped(who, dropped);
}

void mgpx_log_limited(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rl_vlog(&conn_log, "connections: ", fmt, ap);
    va_end(ap);
}

void mgpx_log_flush(void)
{
    rl_flush(&conn_log, "connections: ", 0);
}

void mgpx_slog(mgpx_session_t *s, const char *fmt, ...)
{
    char who[128];
    va_list ap;
    snprintf(who, sizeof who, "session %u (%s): ", s->num, s->peer);
    va_start(ap, fmt);
    rl_vlog(&s->log, who, fmt, ap);
    va_end(ap);
}

/* At the session's end: the lines it dropped, whenever. */
void mgpx_slog_flush(mgpx_session_t *s)
{
    char who[128];
    snprintf(who, sizeof who, "session %u (%s): ", s->num, s->peer);
    rl_flush(&s->log, who, 1);
}

/* ---- device-memory quotas ---- */

/* Every account and device counter; taken for a few additions only, never
 * across an OpenCL call. */
static pthread_mutex_t quota_lock = PTHREAD_MUTEX_INITIALIZER;

/* What one buffer holds: its bytes on s's account and on each device of its
 * context (indices into px->dev; a device the proxy does not serve counts
 * nowhere). */
typedef struct charge {
    mgpx_proxy_t *px;
    mgpx_quota_t *q;
    unsigned long long bytes;
    cl_uint ndev;
    cl_uint dev[];
} charge_t;

int mgpx_quota_setup(mgpx_proxy_t *px, unsigned long long total, unsigned long long session)
{
    px->dev_used = calloc(px->ndev ? px->ndev : 1, sizeof *px->dev_used);
    px->dev_limit = calloc(px->ndev ? px->ndev : 1, sizeof *px->dev_limit);
    if (!px->dev_used || !px->dev_limit)
        return -1;
    px->session_limit = session;
    for (cl_uint d = 0; d < px->ndev; d++) {
        cl_ulong g = 0;
        if (clGetDeviceInfo(px->dev[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof g, &g, NULL))
            g = 0;
        px->dev_limit[d] = g;
        if (!g) /* a device that does not say: the setting alone, if any */
            px->dev_limit[d] = total ? total : ULLONG_MAX;
        else if (total && total < g)
            px->dev_limit[d] = total;
        else if (total > g)
            mgpx_log("device %u: MPIGPU_PROXY_TOTAL_MEM (%llu bytes) is more than its global "
                     "memory: at most %llu bytes of buffers",
                     d, total, (unsigned long long)g);
    }
    return 0;
}

static void quota_unref(mgpx_quota_t *q)
{
    if (atomic_fetch_sub_explicit(&q->refs, 1, memory_order_acq_rel) == 1)
        free(q);
}

static void uncharge(charge_t *c)
{
    pthread_mutex_lock(&quota_lock);
    c->q->used -= c->bytes;
    for (cl_uint i = 0; i < c->ndev; i++)
        c->px->dev_used[c->dev[i]] -= c->bytes;
    pthread_mutex_unlock(&quota_lock);
    quota_unref(c->q);
    free(c);
}

/* The runtime has destroyed the buffer: its bytes are free again.  Runs on
 * whatever thread drops the last reference (the runtime's, maybe). */
static void CL_CALLBACK destroyed(cl_mem mem, void *arg)
{
    (void)mem;
    uncharge(arg);
}

/* The charge of size bytes for a buffer of ctx, or NULL with *err (over a
 * limit, or out of memory). */
static charge_t *charge(mgpx_session_t *s, cl_context ctx, size_t size, cl_int *err)
{
    mgpx_proxy_t *px = s->px;
    size_t sz = 0;
    *err = CL_OUT_OF_HOST_MEMORY;
    if (clGetContextInfo(ctx, CL_CONTEXT_DEVICES, 0, NULL, &sz) || !sz) {
        *err = CL_INVALID_CONTEXT;
        return NULL;
    }
    cl_device_id *devs = malloc(sz);
    size_t n = sz / sizeof *devs;
    charge_t *c = malloc(sizeof *c + n * sizeof c->dev[0]);
    if (!devs || !c || clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sz, devs, NULL)) {
        free(devs);
        free(c);
        return NULL;
    }
    c->px = px;
    c->bytes = size;
    c->ndev = 0;
    for (size_t k = 0; k < n; k++)
        for (cl_uint d = 0; d < px->ndev; d++)
            if (px->dev[d] == devs[k]) {
                c->dev[c->ndev++] = d;
                break;
            }
    free(devs);
    const char *over = NULL;
    unsigned long long held = 0, limit = 0;
    cl_uint dev = 0;
    pthread_mutex_lock(&quota_lock);
    if (!s->quota && (s->quota = calloc(1, sizeof *s->quota)))
        atomic_init(&s->quota->refs, 1); /* the session's */
    mgpx_quota_t *q = s->quota;
    if (!q) {
        pthread_mutex_unlock(&quota_lock);
        free(c);
        return NULL;
    }
    if (px->session_limit && (size > px->session_limit || q->used > px->session_limit - size)) {
        over = "the session's quota (MPIGPU_PROXY_SESSION_MEM)";
        held = q->used;
        limit = px->session_limit;
    }
    for (cl_uint i = 0; i < c->ndev && !over; i++) {
        unsigned long long u = px->dev_used[c->dev[i]], l = px->dev_limit[c->dev[i]];
        if (size > l || u > l - size) {
            over = "the device's total (MPIGPU_PROXY_TOTAL_MEM)";
            held = u;
            limit = l;
            dev = c->dev[i];
        }
    }
    if (!over) {
        q->used += size;
        for (cl_uint i = 0; i < c->ndev; i++)
            px->dev_used[c->dev[i]] += size;
        atomic_fetch_add_explicit(&q->refs, 1, memory_order_relaxed);
        c->q = q;
    }
    pthread_mutex_unlock(&quota_lock);
    if (over) {
        mgpx_slog(s,
                  "session %u (%s): a buffer of %zu bytes refused: over %s on device %u, %llu of "
                  "%llu bytes held",
                  s->num, s->peer, size, over, dev, held, limit);
        free(c);
        *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    *err = CL_SUCCESS;
    return c;
}

/* Room left beside a buffer tried with malloc: the runtime's and the
 * proxy's own allocations of the next moments. */
#define HEADROOM ((size_t)16 << 20)

cl_mem mgpx_mem_create(mgpx_session_t *s, cl_context ctx, cl_mem_flags flags, size_t size, int back,
                       cl_int *err)
{
    charge_t *c = NULL;
    if (s->px && s->px->dev_used && !(c = charge(s, ctx, size, err)))
        return NULL;
    cl_mem mem = clCreateBuffer(ctx, flags, size, NULL, err);
    if (*err != CL_SUCCESS) {
        if (c)
            uncharge(c);
        return NULL;
    }
    if (c && clSetMemObjectDestructorCallback(mem, destroyed, c) != CL_SUCCESS) {
        clReleaseMemObject(mem);
        uncharge(c);
        *err = CL_OUT_OF_RESOURCES;
        return NULL;
    }
    if (back) {
        /* A migration to the device (contents undefined) makes a runtime
           that allocates on first use, like PoCL, allocate now.  PoCL 3.1
           aborts the process when that allocation fails (the assertion
           "p->mem_ptr != NULL" of pocl_create_migration_commands), so on a
           device that shares host memory the bytes are first tried with
           malloc: if the process cannot have them, the buffer is refused
           here instead. */
        cl_device_id dev;
        cl_event e = NULL;
        cl_int st = CL_SUCCESS;
        cl_bool unified = CL_FALSE;
        mgpx_staging_t *sq = NULL;
        if (clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL) == CL_SUCCESS) {
            clGetDeviceInfo(dev, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
            if (unified) {
                void *probe = size < SIZE_MAX - HEADROOM ? malloc(size + HEADROOM) : NULL;
                if (!probe) {
                    clReleaseMemObject(mem);
                    *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
                    mgpx_slog(s,
                              "session %u (%s): a buffer of %zu bytes refused: the process cannot "
                              "allocate it now (host memory)",
                              s->num, s->peer, size);
                    return NULL;
                }
                free(probe);
            }
            sq = mgpx_staging_get(s, ctx, dev, 0);
        }
        if (!sq ||
            clEnqueueMigrateMemObjects(sq->q, 1, &mem, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0,
                                       NULL, &e) != CL_SUCCESS ||
            clWaitForEvents(1, &e) != CL_SUCCESS ||
            clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) || st < 0) {
            if (e)
                clReleaseEvent(e);
            clReleaseMemObject(mem);
            *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
            mgpx_slog(s,
                      "session %u (%s): a buffer of %zu bytes could not be allocated on the device",
                      s->num, s->peer, size);
            return NULL;
        }
        clReleaseEvent(e);
    }
    return mem;
}

void mgpx_quota_session_end(mgpx_session_t *s)
{
    if (s->quota)
        quota_unref(s->quota);
    s->quota = NULL;
}
