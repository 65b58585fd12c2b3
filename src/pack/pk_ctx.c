/*
 * The pack engine's per-context state: queues, settings, programs, staging
 * chunks and host-memory wrappers.  Everything here is created once and
 * reused, so that a warm call allocates nothing.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "mgparam.h"
#include "mgpk_impl.h"

static void stage_release(mgpk_ctx_t *ctx)
{
    for (int i = 0; i < MGPK_NSTAGE; i++) {
        if (ctx->pinp[i])
            clEnqueueUnmapMemObject(ctx->copy_queue, ctx->pin[i], ctx->pinp[i], 0, NULL, NULL);
        ctx->pinp[i] = NULL;
    }
    clFinish(ctx->copy_queue);
    for (int i = 0; i < MGPK_NSTAGE; i++) {
        if (ctx->stage[i])
            clReleaseMemObject(ctx->stage[i]);
        if (ctx->pin[i])
            clReleaseMemObject(ctx->pin[i]);
        ctx->stage[i] = ctx->pin[i] = NULL;
    }
}

int mgpk_ctx_create(cl_context context, cl_device_id device, cl_command_queue queue,
                    const mgpk_settings_t *settings, mgpk_ctx_t **ctx_out)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    cl_bool unified = CL_FALSE;
    mgpk_ctx_t *ctx = calloc(1, sizeof(*ctx));
    if (!ctx)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgpk: no memory for a context");
    if (settings)
        ctx->settings = *settings;
    if (ctx->settings.chunk_bytes == 0)
        ctx->settings.chunk_bytes = (size_t)mgparam_default(MGPARAM_CHUNK);
    /* Chunks hold whole 16-byte words so that W never shrinks at a chunk edge. */
    ctx->settings.chunk_bytes =
        ctx->settings.chunk_bytes < 16 ? 16 : ctx->settings.chunk_bytes & ~(size_t)15;
    if (ctx->settings.cache_dir) {
        ctx->cache_dir = strdup(ctx->settings.cache_dir);
        if (!ctx->cache_dir)
            MG_FAIL(rc, fail_ctx, MPI_ERR_NO_MEM, "mgpk: no memory for a context");
    }
    ctx->settings.cache_dir = ctx->cache_dir;
    MG_CL_CHECK(
        clGetDeviceInfo(device, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(unified), &unified, NULL),
        "clGetDeviceInfo(CL_DEVICE_HOST_UNIFIED_MEMORY)", rc, fail_dir);
    ctx->unified = unified == CL_TRUE;
    cl_device_type dtype = 0;
    MG_CL_CHECK(clGetDeviceInfo(device, CL_DEVICE_TYPE, sizeof(dtype), &dtype, NULL),
                "clGetDeviceInfo(CL_DEVICE_TYPE)", rc, fail_dir);
    ctx->cpu = (dtype & CL_DEVICE_TYPE_CPU) != 0;
    MG_CL_CHECK(
        clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(ctx->ncu), &ctx->ncu, NULL),
        "clGetDeviceInfo(CL_DEVICE_MAX_COMPUTE_UNITS)", rc, fail_dir);
    if (ctx->ncu == 0)
        ctx->ncu = 1;
    MG_CL_CHECK(clRetainContext(context), "clRetainContext", rc, fail_dir);
    ctx->context = context;
    ctx->device = device;
    if (queue) {
        MG_CL_CHECK(clRetainCommandQueue(queue), "clRetainCommandQueue", rc, fail_context);
        ctx->queue = queue;
    } else {
        ctx->queue = clCreateCommandQueue(context, device, 0, &err);
        MG_CL_CHECK(err, "clCreateCommandQueue", rc, fail_context);
    }
    cl_command_queue_properties qprops = 0;
    MG_CL_CHECK(
        clGetCommandQueueInfo(ctx->queue, CL_QUEUE_PROPERTIES, sizeof(qprops), &qprops, NULL),
        "clGetCommandQueueInfo(CL_QUEUE_PROPERTIES)", rc, fail_queue);
    ctx->in_order = !(qprops & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    ctx->copy_queue = clCreateCommandQueue(context, device, 0, &err);
    MG_CL_CHECK(err, "clCreateCommandQueue(copy)", rc, fail_queue);
    pthread_mutex_init(&ctx->lock, NULL);
    *ctx_out = ctx;
fn_exit:
    return rc;
fail_queue:
    clReleaseCommandQueue(ctx->queue);
fail_context:
    clReleaseContext(context);
fail_dir:
    free(ctx->cache_dir);
fail_ctx:
    free(ctx);
fn_fail:
    goto fn_exit;
}

void mgpk_ctx_set_kernel_switch(mgpk_ctx_t *ctx, double us)
{
    pthread_mutex_lock(&ctx->lock);
    ctx->settings.kernel_switch_us = us;
    memset(ctx->memo, 0, sizeof(ctx->memo));
    pthread_mutex_unlock(&ctx->lock);
}

void mgpk_ctx_free(mgpk_ctx_t *ctx)
{
    if (!ctx)
        return;
    clFinish(ctx->queue);
    clFinish(ctx->copy_queue);
    mgpk_upload_release_ctx(ctx);
    mgpk_prog_release(ctx);
    stage_release(ctx);
    mgpk_hcopy_free(ctx->hcopy);
    for (int i = 0; i < MGPK_NMULTI; i++) {
        if (ctx->multi[i].mem)
            clReleaseMemObject(ctx->multi[i].mem);
        free(ctx->multi[i].host);
    }
    for (int i = 0; i < MGPK_NWRAP; i++)
        if (ctx->wrap[i].mem)
            clReleaseMemObject(ctx->wrap[i].mem);
    clReleaseCommandQueue(ctx->copy_queue);
    clReleaseCommandQueue(ctx->queue);
    clReleaseContext(ctx->context);
    pthread_mutex_destroy(&ctx->lock);
    free(ctx->cache_dir);
    free(ctx);
}

cl_command_queue mgpk_ctx_queue(const mgpk_ctx_t *ctx)
{
    return ctx->queue;
}

cl_context mgpk_ctx_context(const mgpk_ctx_t *ctx)
{
    return ctx->context;
}

cl_device_id mgpk_ctx_device(const mgpk_ctx_t *ctx)
{
    return ctx->device;
}

int mgpk_ctx_host_unified(const mgpk_ctx_t *ctx)
{
    return ctx->unified;
}

int mgpk_ctx_prepare(mgpk_ctx_t *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    int rc = mgpk_prog_ensure(ctx);
    pthread_mutex_unlock(&ctx->lock);
    return rc;
}

void mgpk_ctx_stats(const mgpk_ctx_t *ctx, mgpk_stats_t *stats)
{
    mgpk_ctx_t *c = (mgpk_ctx_t *)ctx;
    pthread_mutex_lock(&c->lock);
    *stats = ctx->stats;
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < 2; i++)
        stats->bytes[i] = atomic_load_explicit(&c->bytes[i], memory_order_relaxed);
    for (int i = 0; i < 4; i++)
        stats->calls[i] = atomic_load_explicit(&c->calls[i], memory_order_relaxed);
}

int mgpk_ctx_hcopy(mgpk_ctx_t *ctx)
{
    if (ctx->hcopy)
        return MPI_SUCCESS;
    /* On a CPU device the cores are the device's compute units, idle while
       the host packs: all of them, as the kernels would use. */
    int nt = ctx->settings.copy_threads;
    if (nt <= 0 && ctx->cpu)
        nt = mgpk_hcopy_cpus();
    int rc = mgpk_hcopy_create(nt, &ctx->hcopy);
    if (rc == MPI_SUCCESS)
        ctx->stats.copy_threads = mgpk_hcopy_threads(ctx->hcopy);
    return rc;
}

int mgpk_ctx_stage(mgpk_ctx_t *ctx)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    size_t len = ctx->settings.chunk_bytes;
    if (ctx->stage[0])
        goto fn_exit;
    rc = mgpk_ctx_hcopy(ctx);
    MG_CHECK(rc, fn_exit);
    for (int i = 0; i < MGPK_NSTAGE; i++) {
        ctx->stage[i] = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE, len, NULL, &err);
        MG_CL_CHECK(err, "clCreateBuffer(staging)", rc, fn_fail);
        /* Drivers back CL_MEM_ALLOC_HOST_PTR with page-locked memory; its mapped
           pointer then serves as the host side of plain reads and writes. */
        ctx->pin[i] = clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, len,
                                     NULL, &err);
        MG_CL_CHECK(err, "clCreateBuffer(CL_MEM_ALLOC_HOST_PTR)", rc, fn_fail);
        ctx->pinp[i] = clEnqueueMapBuffer(ctx->copy_queue, ctx->pin[i], CL_TRUE,
                                          CL_MAP_READ | CL_MAP_WRITE, 0, len, 0, NULL, NULL, &err);
        MG_CL_CHECK(err, "clEnqueueMapBuffer(pinned staging)", rc, fn_fail);
    }
    ctx->stage_bytes = len;
fn_exit:
    return rc;
fn_fail:
    stage_release(ctx);
    goto fn_exit;
}

int mgpk_ctx_wrap(mgpk_ctx_t *ctx, void *ptr, size_t len, cl_mem *mem)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    mgpk_wrap_t *victim = &ctx->wrap[0];
    ctx->tick++;
    for (int i = 0; i < MGPK_NWRAP; i++) {
        mgpk_wrap_t *w = &ctx->wrap[i];
        if (w->mem && w->ptr == ptr && w->len == len) {
            w->used = ctx->tick;
            *mem = w->mem;
            goto fn_exit;
        }
        if (!w->mem || (victim->mem && w->used < victim->used))
            victim = w;
    }
    cl_mem m =
        clCreateBuffer(ctx->context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, len, ptr, &err);
    MG_CL_CHECK(err, "clCreateBuffer(CL_MEM_USE_HOST_PTR)", rc, fn_fail);
    if (victim->mem)
        clReleaseMemObject(victim->mem);
    *victim = (mgpk_wrap_t){.ptr = ptr, .len = len, .mem = m, .used = ctx->tick};
    *mem = m;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}
