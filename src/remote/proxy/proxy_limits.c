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

/* Over a limit: the line for the log, and where (under the quota lock). */
typedef struct over {
    const char *what;
    unsigned long long held, limit;
    cl_uint dev;
} over_t;

/* Under the quota lock: 1 when add more bytes on c's account and devices
 * stay within their limits (then they are taken), else 0 with *o. */
static int take(charge_t *c, unsigned long long add, over_t *o)
{
    mgpx_proxy_t *px = c->px;
    mgpx_quota_t *q = c->q;
    if (px->session_limit && (add > px->session_limit || q->used > px->session_limit - add)) {
        *o = (over_t){"the session's quota (MPIGPU_PROXY_SESSION_MEM)", q->used, px->session_limit,
                      0};
        return 0;
    }
    for (cl_uint i = 0; i < c->ndev; i++) {
        unsigned long long u = px->dev_used[c->dev[i]], l = px->dev_limit[c->dev[i]];
        if (add > l || u > l - add) {
            *o = (over_t){"the device's total (MPIGPU_PROXY_TOTAL_MEM)", u, l, c->dev[i]};
            return 0;
        }
    }
    q->used += add;
    for (cl_uint i = 0; i < c->ndev; i++)
        px->dev_used[c->dev[i]] += add;
    c->bytes += add;
    return 1;
}

static void refused(mgpx_session_t *s, const char *what, unsigned long long size, const over_t *o)
{
    mgpx_slog(s,
              "session %u (%s): %s of %llu bytes refused: over %s on device %u, %llu of %llu "
              "bytes held",
              s->num, s->peer, what, size, o->what, o->dev, o->held, o->limit);
}

/* The reservation of size bytes for a memory object (what: "a buffer", "an
 * image") of ctx, taken on s's account and ctx's devices before the object
 * is made; NULL with *err (over a limit, or out of memory). */
static charge_t *charge(mgpx_session_t *s, cl_context ctx, size_t size, const char *what,
                        cl_int *err)
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
    c->bytes = 0;
    c->ndev = 0;
    for (size_t k = 0; k < n; k++)
        for (cl_uint d = 0; d < px->ndev; d++)
            if (px->dev[d] == devs[k]) {
                c->dev[c->ndev++] = d;
                break;
            }
    free(devs);
    over_t o;
    int ok;
    pthread_mutex_lock(&quota_lock);
    if (!s->quota && (s->quota = calloc(1, sizeof *s->quota)))
        atomic_init(&s->quota->refs, 1); /* the session's */
    c->q = s->quota;
    if (!c->q) {
        pthread_mutex_unlock(&quota_lock);
        free(c);
        return NULL;
    }
    if ((ok = take(c, size, &o)))
        atomic_fetch_add_explicit(&c->q->refs, 1, memory_order_relaxed);
    pthread_mutex_unlock(&quota_lock);
    if (!ok) {
        refused(s, what, size, &o);
        free(c);
        *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    *err = CL_SUCCESS;
    return c;
}

/* The object is made: its charge becomes what the runtime says it holds
 * (CL_MEM_SIZE), when that is more than reserved; 0, or -1 over a limit
 * (logged; the reservation stays, for the caller to give back). */
static int settle(mgpx_session_t *s, charge_t *c, cl_mem mem, const char *what)
{
    size_t real = 0;
    over_t o;
    int ok = 1;
    if (clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof real, &real, NULL) || real <= c->bytes)
        return 0;
    unsigned long long want = real;
    pthread_mutex_lock(&quota_lock);
    ok = take(c, want - c->bytes, &o);
    pthread_mutex_unlock(&quota_lock);
    if (!ok)
        refused(s, what, want, &o);
    return ok ? 0 : -1;
}

/* Room left beside an object tried with malloc: the runtime's and the
 * proxy's own allocations of the next moments. */
#define HEADROOM ((size_t)16 << 20)

/* Backing: one object at a time in the whole proxy, so that the bytes the
 * malloc probe found are still there when the runtime allocates them (two
 * sessions probing at once could each see the same free bytes).  Never
 * held with the quota lock. */
static pthread_mutex_t back_lock = PTHREAD_MUTEX_INITIALIZER;

/* Has the runtime allocate mem (size bytes) now: a migration to the device
 * (contents undefined), waited for, makes a runtime that allocates on first
 * use, like PoCL, allocate here.  PoCL 3.1 aborts the process when that
 * allocation fails (the assertion "p->mem_ptr != NULL" of
 * pocl_create_migration_commands), so on a device that shares host memory
 * the bytes are first tried with malloc, under back_lock: if the process
 * cannot have them, the object is refused here instead.  0, or -1 (logged). */
static int back(mgpx_session_t *s, cl_context ctx, cl_mem mem, size_t size, const char *what)
{
    cl_device_id dev;
    cl_event e = NULL;
    cl_int st = CL_SUCCESS;
    cl_bool unified = CL_FALSE;
    mgpx_staging_t *sq = NULL;
    int rc = 0;
    if (clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL) == CL_SUCCESS) {
        clGetDeviceInfo(dev, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL);
        sq = mgpx_staging_get(s, ctx, dev, 0);
    }
    if (!sq) {
        mgpx_slog(s, "session %u (%s): %s of %zu bytes refused: no queue to allocate it on", s->num,
                  s->peer, what, size);
        return -1;
    }
    pthread_mutex_lock(&back_lock);
    if (unified) {
        void *probe = size < SIZE_MAX - HEADROOM ? malloc(size + HEADROOM) : NULL;
        if (!probe) {
            pthread_mutex_unlock(&back_lock);
            mgpx_slog(s,
                      "session %u (%s): %s of %zu bytes refused: the process cannot allocate it "
                      "now (host memory)",
                      s->num, s->peer, what, size);
            return -1;
        }
        free(probe);
    }
    if (clEnqueueMigrateMemObjects(sq->q, 1, &mem, CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, NULL,
                                   &e) != CL_SUCCESS ||
        clWaitForEvents(1, &e) != CL_SUCCESS ||
        clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL) || st < 0)
        rc = -1;
    pthread_mutex_unlock(&back_lock);
    if (e)
        clReleaseEvent(e);
    if (rc)
        mgpx_slog(s, "session %u (%s): %s of %zu bytes could not be allocated on the device",
                  s->num, s->peer, what, size);
    return rc;
}

/* After the runtime made mem under the reservation c (NULL: not counted):
 * settles the charge, hands it to mem's destructor callback, and backs mem
 * (back: 1); returns mem, or NULL with *err after releasing it. */
static cl_mem commit(mgpx_session_t *s, cl_context ctx, cl_mem mem, charge_t *c, size_t size,
                     int back_it, const char *what, cl_int *err)
{
    if (c && settle(s, c, mem, what)) {
        clReleaseMemObject(mem);
        uncharge(c);
        *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    if (c && clSetMemObjectDestructorCallback(mem, destroyed, c) != CL_SUCCESS) {
        clReleaseMemObject(mem);
        uncharge(c);
        *err = CL_OUT_OF_RESOURCES;
        return NULL;
    }
    if (c && c->bytes > size)
        size = c->bytes; /* the runtime's own size, settled above */
    if (back_it && back(s, ctx, mem, size, what)) {
        clReleaseMemObject(mem); /* the callback gives the charge back */
        *err = CL_MEM_OBJECT_ALLOCATION_FAILURE;
        return NULL;
    }
    *err = CL_SUCCESS;
    return mem;
}

/* Counted: a proxy with its quotas set up (not a dry run's). */
static int counted(mgpx_session_t *s)
{
    return s->px && s->px->dev_used;
}

cl_mem mgpx_mem_create(mgpx_session_t *s, cl_context ctx, cl_mem_flags flags, size_t size, int back,
                       cl_int *err)
{
    charge_t *c = NULL;
    if (counted(s) && !(c = charge(s, ctx, size, "a buffer", err)))
        return NULL;
    cl_mem mem = clCreateBuffer(ctx, flags, size, NULL, err);
    if (*err != CL_SUCCESS) {
        if (c)
            uncharge(c);
        return NULL;
    }
    return commit(s, ctx, mem, c, size, back, "a buffer", err);
}

cl_mem mgpx_image_create(mgpx_session_t *s, cl_context ctx, cl_mem_flags flags,
                         const cl_image_format *fmt, const cl_image_desc *d, void *host,
                         size_t size, cl_int *err)
{
    charge_t *c = NULL;
    /* an image of a buffer uses the buffer's bytes, counted already */
    int own = d->image_type != CL_MEM_OBJECT_IMAGE1D_BUFFER && !d->buffer;
    if (own && counted(s) && !(c = charge(s, ctx, size, "an image", err)))
        return NULL;
    cl_mem mem = clCreateImage(ctx, flags, fmt, d, host, err);
    if (*err != CL_SUCCESS) {
        if (c)
            uncharge(c);
        return NULL;
    }
    return commit(s, ctx, mem, c, size, own, "an image", err);
}

void mgpx_quota_session_end(mgpx_session_t *s)
{
    if (s->quota)
        quota_unref(s->quota);
    s->quota = NULL;
}

/* ---- objects ---- */

cl_int mgpx_obj_admit(mgpx_session_t *s, int kind)
{
    static const char *const what[MGW_K_MAX] = {
        [MGW_K_CONTEXT] = "context", [MGW_K_QUEUE] = "command queue", [MGW_K_MEM] = "memory object",
        [MGW_K_PROGRAM] = "program", [MGW_K_KERNEL] = "kernel",       [MGW_K_EVENT] = "event",
        [MGW_K_SAMPLER] = "sampler"};
    static const char *const setting[MGW_K_MAX] = {
        [MGW_K_CONTEXT] = "CONTEXTS", [MGW_K_QUEUE] = "QUEUES",   [MGW_K_MEM] = "MEM_OBJECTS",
        [MGW_K_PROGRAM] = "PROGRAMS", [MGW_K_KERNEL] = "KERNELS", [MGW_K_EVENT] = "EVENTS",
        [MGW_K_SAMPLER] = "SAMPLERS"};
    unsigned long max = s->px && kind > 0 && kind < MGW_K_MAX ? s->px->max_obj[kind] : 0;
    if (!max || s->map.nkind[kind] < max)
        return CL_SUCCESS;
    mgpx_slog(s, "session %u (%s): a %s refused: the session holds %lu (MPIGPU_PROXY_MAX_%s)",
              s->num, s->peer, what[kind], max, setting[kind]);
    return CL_OUT_OF_RESOURCES;
}
