/* mpigpu-proxy command handlers for objects: devices, contexts, queues,
 * buffers, programs, kernels, user events, info queries.  Each handler
 * decodes its whole request and validates every ID (kind included) before it
 * calls OpenCL; s->dry stops there (fuzzing). */
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

cl_device_id mgpx_dev(mgpx_session_t *s, uint64_t idx)
{
    if (!s->px || idx >= s->px->ndev)
        return NULL;
    return s->px->dev[idx];
}

mgpx_staging_t *mgpx_staging_get(mgpx_session_t *s, cl_context ctx, cl_device_id dev, int buffers)
{
    mgpx_staging_t *st;
    cl_int err = CL_SUCCESS;
    pthread_mutex_lock(&s->lock);
    for (st = s->staging; st && st->ctx != ctx; st = st->next)
        ;
    if (!st && (st = calloc(1, sizeof *st))) {
        st->ctx = ctx;
        st->q = clCreateCommandQueue(ctx, dev, 0, &err);
        if (err != CL_SUCCESS) {
            free(st);
            st = NULL;
        } else {
            st->next = s->staging;
            s->staging = st;
        }
    }
    for (int i = 0; st && buffers && i < s->depth && err == CL_SUCCESS; i++) {
        if (st->mem[i])
            continue;
        st->mem[i] =
            mgpx_mem_create(s, ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, MGW_CHUNK, 0, &err);
        if (err == CL_SUCCESS)
            st->ptr[i] = clEnqueueMapBuffer(st->q, st->mem[i], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                            0, MGW_CHUNK, 0, NULL, NULL, &err);
    }
    pthread_mutex_unlock(&s->lock);
    return err == CL_SUCCESS ? st : NULL;
}

mgpx_staging_t *mgpx_staging_pinned(mgpx_session_t *s, cl_context ctx, cl_device_id dev)
{
    mgpx_staging_t *st = mgpx_staging_get(s, ctx, dev, 0);
    cl_int err = CL_SUCCESS;
    if (!st)
        return NULL;
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < 2 && err == CL_SUCCESS; i++) {
        if (st->pin[i])
            continue;
        st->pin[i] = mgpx_mem_create(s, ctx, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE,
                                     MGPX_PIN_CHUNK, 0, &err);
        if (err == CL_SUCCESS)
            st->pinp[i] = clEnqueueMapBuffer(st->q, st->pin[i], CL_TRUE, CL_MAP_READ | CL_MAP_WRITE,
                                             0, MGPX_PIN_CHUNK, 0, NULL, NULL, &err);
        if (err != CL_SUCCESS && st->pin[i]) {
            clReleaseMemObject(st->pin[i]);
            st->pin[i] = NULL;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return err == CL_SUCCESS ? st : NULL;
}

static void unmap_free(mgpx_staging_t *st, cl_mem m, void *p)
{
    if (!m)
        return;
    if (p)
        clEnqueueUnmapMemObject(st->q, m, p, 0, NULL, NULL);
    clFinish(st->q);
    clReleaseMemObject(m);
}

void mgpx_staging_free(mgpx_session_t *s)
{
    while (s->staging) {
        mgpx_staging_t *st = s->staging;
        s->staging = st->next;
        for (int i = 0; i < MGPX_STAGING_MAX; i++)
            unmap_free(st, st->mem[i], st->ptr[i]);
        for (int i = 0; i < 2; i++)
            unmap_free(st, st->pin[i], st->pinp[i]);
        clReleaseCommandQueue(st->q);
        free(st);
    }
}

/* Device parameters sent at connect: the core ranges (1.0-3.0) and the
 * Khronos extension ranges, except those holding handles. */
static const cl_uint dev_ranges[][2] = {{0x1000, 0x1100}, {0x1200, 0x1300}, {0x4000, 0x4200}};

static int dev_param_ok(cl_uint p)
{
    return p != CL_DEVICE_PLATFORM && p != CL_DEVICE_PARENT_DEVICE &&
           p != 0x4054 /* CL_DEVICE_PARENT_DEVICE_EXT */;
}

/* The parameters of device dev that it has, values malloc'd; their number. */
static uint32_t dev_params(cl_device_id dev, mgw_dev_param_t *out)
{
    uint32_t n = 0;
    for (size_t k = 0; k < 3; k++)
        for (cl_uint p = dev_ranges[k][0]; p < dev_ranges[k][1]; p++) {
            size_t sz = 0;
            if (!dev_param_ok(p) || clGetDeviceInfo(dev, p, 0, NULL, &sz) || sz > 65536)
                continue;
            void *v = malloc(sz ? sz : 1);
            if (v && clGetDeviceInfo(dev, p, sz, v, NULL) == CL_SUCCESS)
                out[n++] = (mgw_dev_param_t){.param = p, .value = {v, sz}};
            else
                free(v);
        }
    return n;
}

static int op_devices(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_devices_t m;
    size_t most = 0;
    if (mgw_devices_decode(c, &m))
        return MGPX_BAD;
    if (s->dry)
        return CL_SUCCESS;
    for (size_t k = 0; k < 3; k++)
        most += dev_ranges[k][1] - dev_ranges[k][0];
    cl_uint nd = s->px->ndev < MGW_MAX_DEVS ? s->px->ndev : MGW_MAX_DEVS;
    mgw_device_t *devs = calloc(nd ? nd : 1, sizeof *devs);
    mgw_dev_param_t *params = calloc(nd * most + 1, sizeof *params);
    cl_int err = devs && params ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    for (cl_uint d = 0; d < nd && !err; d++) {
        mgw_dev_param_t *dp = params + d * most;
        devs[d].params = (mgw_dev_param_list_t){.n = dev_params(s->px->dev[d], dp), .v = dp};
    }
    if (!err)
        mgw_devices_reply_put(r, &(mgw_devices_reply_t){.devices = {.n = nd, .v = devs}});
    for (cl_uint d = 0; d < nd && devs; d++)
        for (uint32_t i = 0; i < devs[d].params.n; i++)
            free((void *)devs[d].params.v[i].value.p);
    free(devs);
    free(params);
    return err;
}

static int op_context_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    cl_device_id devs[MGW_MAX_DEVS];
    mgw_context_create_t m;
    cl_int err = CL_SUCCESS;
    if (mgw_context_create_decode(c, &m))
        return MGPX_BAD;
    uint64_t id = m.id;
    cl_uint n = m.devs.n;
    for (cl_uint i = 0; i < n && !err; i++)
        if (!(devs[i] = mgpx_dev(s, mgw_ids_get(&m.devs, i))))
            err = CL_INVALID_DEVICE;
    if (err || n == 0)
        return CL_INVALID_DEVICE;
    if (s->dry)
        return CL_SUCCESS;
    if ((err = mgpx_obj_admit(s, MGW_K_CONTEXT)))
        return err;
    cl_context ctx = clCreateContext(NULL, n, devs, NULL, NULL, &err);
    if (err == CL_SUCCESS && mgpx_map_put(&s->map, id, MGW_K_CONTEXT, ctx, NULL)) {
        clReleaseContext(ctx);
        err = CL_INVALID_VALUE;
    }
    return err;
}

static int op_queue_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_queue_create_t m;
    cl_int err;
    if (mgw_queue_create_decode(c, &m))
        return MGPX_BAD;
    uint64_t id = m.id;
    cl_command_queue_properties props = m.props;
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, m.ctx, MGW_K_CONTEXT);
    cl_device_id d = mgpx_dev(s, m.dev);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (!d)
        return CL_INVALID_DEVICE;
    if (s->dry)
        return CL_SUCCESS;
    if ((err = mgpx_obj_admit(s, MGW_K_QUEUE)))
        return err;
    cl_command_queue q = clCreateCommandQueue(ctx->h, d, props, &err), tq = NULL;
    if (err == CL_SUCCESS)
        tq = clCreateCommandQueue(ctx->h, d, 0, &err);
    if (err == CL_SUCCESS && mgpx_map_put(&s->map, id, MGW_K_QUEUE, q, tq))
        err = CL_INVALID_VALUE;
    if (err != CL_SUCCESS) {
        if (q)
            clReleaseCommandQueue(q);
        if (tq)
            clReleaseCommandQueue(tq);
    }
    return err;
}

#define MEM_FLAGS_OK                                                                               \
    (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY | CL_MEM_ALLOC_HOST_PTR |            \
     CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)

static int op_buffer_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_buffer_create_t m;
    cl_int err;
    if (mgw_buffer_create_decode(c, &m))
        return MGPX_BAD;
    uint64_t id = m.id;
    cl_mem_flags flags = m.flags;
    size_t size = m.size;
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, m.ctx, MGW_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (flags & ~(cl_mem_flags)MEM_FLAGS_OK)
        return CL_INVALID_VALUE;
    if (s->dry)
        return CL_SUCCESS;
    if ((err = mgpx_obj_admit(s, MGW_K_MEM)))
        return err;
    /* counted against the quotas, and allocated now (proxy_limits.c) */
    cl_mem mem = mgpx_mem_create(s, ctx->h, flags, size, 1, &err);
    if (err == CL_SUCCESS && mgpx_map_put(&s->map, id, MGW_K_MEM, mem, NULL)) {
        clReleaseMemObject(mem);
        err = CL_INVALID_VALUE;
    }
    return err;
}

static int op_subbuffer_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_subbuffer_create_t m;
    cl_int err;
    if (mgw_subbuffer_create_decode(c, &m))
        return MGPX_BAD;
    uint64_t id = m.id;
    cl_mem_flags flags = m.flags;
    cl_buffer_region reg = {m.origin, m.size};
    mgpx_obj_t *p = mgpx_map_get(&s->map, m.parent, MGW_K_MEM);
    if (!p)
        return CL_INVALID_MEM_OBJECT;
    if (flags & ~(cl_mem_flags)MEM_FLAGS_OK)
        return CL_INVALID_VALUE;
    if (s->dry)
        return CL_SUCCESS;
    if ((err = mgpx_obj_admit(s, MGW_K_MEM)))
        return err;
    cl_mem mem = clCreateSubBuffer(p->h, flags, CL_BUFFER_CREATE_TYPE_REGION, &reg, &err);
    if (err == CL_SUCCESS && mgpx_map_put(&s->map, id, MGW_K_MEM, mem, NULL)) {
        clReleaseMemObject(mem);
        err = CL_INVALID_VALUE;
    }
    return err;
}

static int op_buffer_init(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_buffer_init_t bi;
    cl_context ctx;
    cl_device_id dev;
    if (mgw_buffer_init_decode(c, &bi))
        return MGPX_BAD;
    size_t off = bi.off, n = bi.data.n;
    const void *data = bi.data.p;
    mgpx_obj_t *m = mgpx_map_get(&s->map, bi.id, MGW_K_MEM);
    if (!m)
        return CL_INVALID_MEM_OBJECT;
    if (s->dry)
        return CL_SUCCESS;
    if (clGetMemObjectInfo(m->h, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL) ||
        clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof dev, &dev, NULL))
        return CL_INVALID_MEM_OBJECT;
    mgpx_staging_t *st = mgpx_staging_get(s, ctx, dev, 0);
    if (!st)
        return CL_OUT_OF_RESOURCES;
    return clEnqueueWriteBuffer(st->q, m->h, CL_TRUE, off, n, data, 0, NULL, NULL);
}

static int op_release(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_release_t m;
    if (mgw_release_decode(c, &m))
        return MGPX_BAD;
    uint32_t kind = m.kind;
    uint64_t id = m.id;
    mgpx_obj_t *o =
        kind < MGW_K_DEVICE || kind == MGW_K_SAMPLER ? mgpx_map_get(&s->map, id, (int)kind) : NULL;
    if (!o && kind == MGW_K_EVENT)
        return MGPX_NOREPLY; /* the event of a command that failed before it was enqueued */
    if (!o)
        return CL_INVALID_VALUE;
    if (s->dry)
        return MGPX_NOREPLY;
    mgpx_obj_release(o);
    mgpx_map_del(&s->map, o);
    mgpx_map_compact(&s->map);
    return MGPX_NOREPLY;
}

static int op_release_events(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_release_events_t m;
    if (mgw_release_events_decode(c, &m))
        return MGPX_BAD;
    for (uint32_t i = 0; i < m.events.n && !s->dry; i++) {
        mgpx_obj_t *o = mgpx_map_get(&s->map, mgw_ids_get(&m.events, i), MGW_K_EVENT);
        if (o) { /* else the event of a command that failed before it was enqueued */
            mgpx_obj_release(o);
            mgpx_map_del(&s->map, o);
        }
    }
    mgpx_map_compact(&s->map);
    return MGPX_NOREPLY;
}

static int op_user_event_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_user_event_create_t m;
    cl_int err;
    if (mgw_user_event_create_decode(c, &m))
        return MGPX_BAD;
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, m.ctx, MGW_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (s->dry)
        return MGPX_NOREPLY;
    if ((err = mgpx_obj_admit(s, MGW_K_EVENT)))
        return err;
    cl_event e = clCreateUserEvent(ctx->h, &err);
    if (err == CL_SUCCESS && mgpx_map_put(&s->map, m.id, MGW_K_EVENT, e, NULL)) {
        clReleaseEvent(e);
        err = CL_INVALID_EVENT;
    }
    if (err == CL_SUCCESS) {
        s->user_open++;
        mgpx_ue_add(s, m.id, e);
    }
    return err == CL_SUCCESS ? MGPX_NOREPLY : err;
}

static int op_user_event_set(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_user_event_set_t m;
    if (mgw_user_event_set_decode(c, &m))
        return MGPX_BAD;
    mgpx_obj_t *e = mgpx_map_get(&s->map, m.id, MGW_K_EVENT);
    if (!e)
        return CL_INVALID_EVENT;
    if (s->dry)
        return MGPX_NOREPLY;
    int take = mgpx_ue_take(s, m.id);
    if (take == 0) { /* a peer proxy set it first (a stand-in: proxy_peer.c) */
        s->user_open--;
        return MGPX_NOREPLY;
    }
    cl_int err = clSetUserEventStatus(e->h, m.status);
    if (err == CL_SUCCESS)
        s->user_open--;
    return err == CL_SUCCESS ? MGPX_NOREPLY : err;
}

static int op_flush(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_flush_t m;
    if (mgw_flush_decode(c, &m))
        return MGPX_BAD;
    mgpx_obj_t *q = mgpx_map_get(&s->map, m.queue, MGW_K_QUEUE);
    if (!q)
        return CL_INVALID_COMMAND_QUEUE;
    if (!s->dry)
        clFlush(q->h);
    return MGPX_NOREPLY;
}

static int op_ping(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_ping_t m;
    return mgw_ping_decode(c, &m) ? MGPX_BAD : CL_SUCCESS;
}

int mgpx_op_info(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_program_source(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_program_binary(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_program_build(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_program_compile(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_program_link(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_kernel_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_ndrange(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_write(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_read(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_write_rect(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_read_rect(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_write_cma(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_read_cma(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_copy(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_copy_rect(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_fill(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_marker(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_barrier(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_image_formats(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_image_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_image_init(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_sampler_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_write_image(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_read_image(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_copy_image(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_fill_image(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_peer_send(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);
int mgpx_op_peer_recv(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r);

static const mgpx_handler_t ops[MGW_OP_CMD_MAX] = {
    [MGW_OP_DEVICES] = op_devices,
    [MGW_OP_CONTEXT_CREATE] = op_context_create,
    [MGW_OP_QUEUE_CREATE] = op_queue_create,
    [MGW_OP_BUFFER_CREATE] = op_buffer_create,
    [MGW_OP_SUBBUFFER_CREATE] = op_subbuffer_create,
    [MGW_OP_BUFFER_INIT] = op_buffer_init,
    [MGW_OP_RELEASE] = op_release,
    [MGW_OP_GET_INFO] = mgpx_op_info,
    [MGW_OP_PROGRAM_SOURCE] = mgpx_op_program_source,
    [MGW_OP_PROGRAM_BINARY] = mgpx_op_program_binary,
    [MGW_OP_PROGRAM_BUILD] = mgpx_op_program_build,
    [MGW_OP_PROGRAM_COMPILE] = mgpx_op_program_compile,
    [MGW_OP_PROGRAM_LINK] = mgpx_op_program_link,
    [MGW_OP_KERNEL_CREATE] = mgpx_op_kernel_create,
    [MGW_OP_ENQ_NDRANGE] = mgpx_op_ndrange,
    [MGW_OP_ENQ_WRITE] = mgpx_op_write,
    [MGW_OP_ENQ_READ] = mgpx_op_read,
    [MGW_OP_ENQ_COPY] = mgpx_op_copy,
    [MGW_OP_ENQ_COPY_RECT] = mgpx_op_copy_rect,
    [MGW_OP_ENQ_WRITE_RECT] = mgpx_op_write_rect,
    [MGW_OP_ENQ_READ_RECT] = mgpx_op_read_rect,
    [MGW_OP_ENQ_FILL] = mgpx_op_fill,
    [MGW_OP_ENQ_MARKER] = mgpx_op_marker,
    [MGW_OP_ENQ_BARRIER] = mgpx_op_barrier,
    [MGW_OP_USER_EVENT_CREATE] = op_user_event_create,
    [MGW_OP_USER_EVENT_SET] = op_user_event_set,
    [MGW_OP_FLUSH] = op_flush,
    [MGW_OP_PING] = op_ping,
    [MGW_OP_SHM_OPEN] = mgpx_op_shm_open,
    [MGW_OP_SHM_READY] = mgpx_op_shm_ready,
    [MGW_OP_CMA_OPEN] = mgpx_op_cma_open,
    [MGW_OP_CMA_READY] = mgpx_op_cma_ready,
    [MGW_OP_ENQ_WRITE_CMA] = mgpx_op_write_cma,
    [MGW_OP_ENQ_READ_CMA] = mgpx_op_read_cma,
    [MGW_OP_FINISH] = mgpx_op_finish,
    [MGW_OP_RELEASE_EVENTS] = op_release_events,
    [MGW_OP_STREAMS] = mgpx_op_streams,
    [MGW_OP_IMAGE_FORMATS] = mgpx_op_image_formats,
    [MGW_OP_IMAGE_CREATE] = mgpx_op_image_create,
    [MGW_OP_IMAGE_INIT] = mgpx_op_image_init,
    [MGW_OP_SAMPLER_CREATE] = mgpx_op_sampler_create,
    [MGW_OP_ENQ_WRITE_IMAGE] = mgpx_op_write_image,
    [MGW_OP_ENQ_READ_IMAGE] = mgpx_op_read_image,
    [MGW_OP_ENQ_COPY_IMAGE] = mgpx_op_copy_image,
    [MGW_OP_ENQ_FILL_IMAGE] = mgpx_op_fill_image,
    [MGW_OP_PEER_OPEN] = mgpx_op_peer_open,
    [MGW_OP_PEER_SEND] = mgpx_op_peer_send,
    [MGW_OP_PEER_RECV] = mgpx_op_peer_recv,
    [MGW_OP_PEER_CANCEL] = mgpx_op_peer_cancel,
    [MGW_OP_EVENT_FORWARD] = mgpx_op_event_forward,
};

mgpx_handler_t mgpx_handler(int op)
{
    return op > 0 && op < MGW_OP_CMD_MAX ? ops[op] : NULL;
}

int mgpx_op_sync(int op)
{
    return op > 0 && op < MGW_OP_CMD_MAX && mgw_op_replied(op);
}
