/* libmpigpu-vcl.so: platform, devices (properties fetched once at connect),
 * contexts and command queues. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "vcl.h"

struct _cl_platform_id mgvcl_platform = {&mgvcl_dispatch};

/* All devices of all connections, in order. */
static cl_uint all_devices(cl_device_type type, cl_uint max, cl_device_id *out)
{
    mgvcl_conn_t **cs;
    int nc;
    cl_uint n = 0;
    mgvcl_init(&cs, &nc);
    for (int i = 0; i < nc; i++)
        for (cl_uint d = 0; d < cs[i]->ndev; d++) {
            cl_device_id dev = &cs[i]->devs[d];
            if (type != CL_DEVICE_TYPE_ALL && type != CL_DEVICE_TYPE_DEFAULT && !(dev->type & type))
                continue;
            if (out && n < max)
                out[n] = dev;
            n++;
            if (type == CL_DEVICE_TYPE_DEFAULT)
                return n;
        }
    return n;
}

cl_int CL_API_CALL mgvcl_clGetPlatformIDs(cl_uint n, cl_platform_id *p, cl_uint *np)
{
    if ((!n && p) || (!p && !np))
        return CL_INVALID_VALUE;
    if (all_devices(CL_DEVICE_TYPE_ALL, 0, NULL) == 0) {
        if (np)
            *np = 0;
        return CL_PLATFORM_NOT_FOUND_KHR;
    }
    if (p)
        p[0] = &mgvcl_platform;
    if (np)
        *np = 1;
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clIcdGetPlatformIDsKHR(cl_uint n, cl_platform_id *p, cl_uint *np)
{
    return mgvcl_clGetPlatformIDs(n, p, np);
}
MGVCL_LOADER_ALIAS(clIcdGetPlatformIDsKHR)

cl_int CL_API_CALL mgvcl_clGetPlatformInfo(cl_platform_id p, cl_platform_info param, size_t size,
                                           void *value, size_t *size_ret)
{
    const char *s;
    if (p != &mgvcl_platform)
        return CL_INVALID_PLATFORM;
    switch (param) {
    case CL_PLATFORM_PROFILE:
        s = "FULL_PROFILE";
        break;
    case CL_PLATFORM_VERSION:
        s = "OpenCL 1.2 mpigpu " PACKAGE_VERSION;
        break;
    case CL_PLATFORM_NAME:
        s = "mpigpu virtual";
        break;
    case CL_PLATFORM_VENDOR:
        s = "mpigpu";
        break;
    case CL_PLATFORM_EXTENSIONS:
        s = "cl_khr_icd";
        break;
    case CL_PLATFORM_ICD_SUFFIX_KHR:
        s = "MGRM";
        break;
    default:
        return CL_INVALID_VALUE;
    }
    return mgvcl_ret(s, strlen(s) + 1, size, value, size_ret);
}
MGVCL_LOADER_ALIAS(clGetPlatformInfo)

cl_int CL_API_CALL mgvcl_clGetDeviceIDs(cl_platform_id p, cl_device_type type, cl_uint n,
                                        cl_device_id *devs, cl_uint *nd)
{
    if (p && p != &mgvcl_platform)
        return CL_INVALID_PLATFORM;
    if ((!n && devs) || (!devs && !nd))
        return CL_INVALID_VALUE;
    cl_uint k = all_devices(type, n, devs);
    if (nd)
        *nd = k;
    return k ? CL_SUCCESS : CL_DEVICE_NOT_FOUND;
}

cl_int CL_API_CALL mgvcl_clGetDeviceInfo(cl_device_id d, cl_device_info param, size_t size,
                                         void *value, size_t *size_ret)
{
    static const cl_uint one = 1;
    static const cl_device_id none = NULL;
    if (!mgvcl_is(d))
        return CL_INVALID_DEVICE;
    if (param == CL_DEVICE_PLATFORM) {
        cl_platform_id p = &mgvcl_platform;
        return mgvcl_ret(&p, sizeof p, size, value, size_ret);
    }
    if (param == CL_DEVICE_PARENT_DEVICE)
        return mgvcl_ret(&none, sizeof none, size, value, size_ret);
    if (param == CL_DEVICE_REFERENCE_COUNT)
        return mgvcl_ret(&one, sizeof one, size, value, size_ret);
    for (size_t i = 0; i < d->nparams; i++)
        if (d->params[i].param == param)
            return mgvcl_ret(d->params[i].value, d->params[i].size, size, value, size_ret);
    return CL_INVALID_VALUE;
}

cl_int CL_API_CALL mgvcl_clRetainDevice(cl_device_id d)
{
    return mgvcl_is(d) ? CL_SUCCESS : CL_INVALID_DEVICE;
}

cl_int CL_API_CALL mgvcl_clReleaseDevice(cl_device_id d)
{
    return mgvcl_is(d) ? CL_SUCCESS : CL_INVALID_DEVICE;
}

cl_int CL_API_CALL mgvcl_clCreateSubDevices(cl_device_id d, const cl_device_partition_property *p,
                                            cl_uint n, cl_device_id *out, cl_uint *nout)
{
    return mgvcl_is(d) ? CL_INVALID_VALUE : CL_INVALID_DEVICE;
}

static cl_int props_check(const cl_context_properties *props, cl_context ctx)
{
    int seen_platform = 0, seen_sync = 0;
    for (size_t i = 0; props && props[i]; i += 2) {
        int *seen = props[i] == CL_CONTEXT_PLATFORM ? &seen_platform : &seen_sync;
        if ((*seen)++)
            return CL_INVALID_PROPERTY;
        if (props[i] == CL_CONTEXT_PLATFORM) {
            if ((cl_platform_id)props[i + 1] != &mgvcl_platform)
                return CL_INVALID_PLATFORM;
        } else if (props[i] != CL_CONTEXT_INTEROP_USER_SYNC) {
            return CL_INVALID_PROPERTY;
        }
        if (ctx && i + 2 < 3) {
            ctx->props[i] = props[i];
            ctx->props[i + 1] = props[i + 1];
            ctx->nprops = i + 3;
        }
    }
    return CL_SUCCESS;
}

cl_context CL_API_CALL mgvcl_clCreateContext(
    const cl_context_properties *props, cl_uint n, const cl_device_id *devs,
    void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *), void *data, cl_int *err)
{
    cl_context ctx = NULL;
    cl_int rc = props_check(props, NULL);
    if (!rc && (!n || !devs))
        rc = CL_INVALID_VALUE;
    for (cl_uint i = 0; !rc && i < n; i++)
        if (!mgvcl_is(devs[i]))
            rc = CL_INVALID_DEVICE;
    for (cl_uint i = 0; !rc && i < n; i++)
        if (atomic_load_explicit(&devs[i]->conn->dead, memory_order_relaxed))
            rc = CL_DEVICE_NOT_AVAILABLE; /* its proxy is gone */
    if (!rc && !(notify || !data))
        rc = CL_INVALID_VALUE;
    if (!rc && (!(ctx = calloc(1, sizeof *ctx)) || !(ctx->devs = malloc(n * sizeof *devs))))
        rc = CL_OUT_OF_HOST_MEMORY;
    if (rc)
        goto fn_fail;
    ctx->dispatch = &mgvcl_dispatch;
    atomic_init(&ctx->refs, 1);
    ctx->conn = devs[0]->conn;
    ctx->id = mgvcl_id(ctx->conn);
    ctx->ndev = n;
    memcpy(ctx->devs, devs, n * sizeof *devs);
    props_check(props, ctx);
    /* a native context of this ID on each proxy of the devices (vcl_multi.c) */
    rc = mgvcl_ctx_make(ctx);
    if (rc)
        goto fn_fail;
fn_exit:
    if (err)
        *err = rc;
    return ctx;
fn_fail:
    if (ctx)
        free(ctx->devs);
    free(ctx);
    ctx = NULL;
    goto fn_exit;
}

cl_context CL_API_CALL mgvcl_clCreateContextFromType(
    const cl_context_properties *props, cl_device_type type,
    void(CL_CALLBACK *notify)(const char *, const void *, size_t, void *), void *data, cl_int *err)
{
    cl_device_id devs[MGW_MAX_DEVS];
    cl_uint n = all_devices(type, MGW_MAX_DEVS, devs), k = 0;
    /* every proxy's devices of the type, but those of a proxy that is gone */
    for (cl_uint i = 0; i < n && i < MGW_MAX_DEVS; i++)
        if (!atomic_load_explicit(&devs[i]->conn->dead, memory_order_relaxed))
            devs[k++] = devs[i];
    if (!k) {
        if (err)
            *err = CL_DEVICE_NOT_FOUND;
        return NULL;
    }
    return mgvcl_clCreateContext(props, k, devs, notify, data, err);
}

cl_int CL_API_CALL mgvcl_clRetainContext(cl_context ctx)
{
    if (!mgvcl_is(ctx))
        return CL_INVALID_CONTEXT;
    atomic_fetch_add(&ctx->refs, 1);
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clReleaseContext(cl_context ctx)
{
    if (!mgvcl_is(ctx))
        return CL_INVALID_CONTEXT;
    if (atomic_fetch_sub(&ctx->refs, 1) == 1) {
        mgvcl_ctx_unmake(ctx);
        free(ctx->devs);
        free(ctx);
    }
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clGetContextInfo(cl_context ctx, cl_context_info p, size_t size,
                                          void *value, size_t *size_ret)
{
    cl_uint u;
    if (!mgvcl_is(ctx))
        return CL_INVALID_CONTEXT;
    switch (p) {
    case CL_CONTEXT_REFERENCE_COUNT:
        u = (cl_uint)atomic_load(&ctx->refs);
        return mgvcl_ret(&u, sizeof u, size, value, size_ret);
    case CL_CONTEXT_NUM_DEVICES:
        return mgvcl_ret(&ctx->ndev, sizeof ctx->ndev, size, value, size_ret);
    case CL_CONTEXT_DEVICES:
        return mgvcl_ret(ctx->devs, ctx->ndev * sizeof *ctx->devs, size, value, size_ret);
    case CL_CONTEXT_PROPERTIES:
        return mgvcl_ret(ctx->props, ctx->nprops * sizeof ctx->props[0], size, value, size_ret);
    }
    return CL_INVALID_VALUE;
}

cl_command_queue CL_API_CALL mgvcl_clCreateCommandQueue(cl_context ctx, cl_device_id dev,
                                                        cl_command_queue_properties props,
                                                        cl_int *err)
{
    cl_command_queue q = NULL;
    cl_int rc = CL_SUCCESS;
    mgw_buf_t b;
    cl_uint i;
    if (!mgvcl_is(ctx))
        rc = CL_INVALID_CONTEXT;
    else {
        for (i = 0; i < ctx->ndev && ctx->devs[i] != dev; i++)
            ;
        if (i == ctx->ndev)
            rc = CL_INVALID_DEVICE;
        else if (props & ~(cl_command_queue_properties)(CL_QUEUE_PROFILING_ENABLE |
                                                        CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE))
            rc = CL_INVALID_VALUE;
        else if (!(q = calloc(1, sizeof *q)))
            rc = CL_OUT_OF_HOST_MEMORY;
    }
    if (rc == CL_SUCCESS) {
        q->dispatch = &mgvcl_dispatch;
        atomic_init(&q->refs, 1);
        q->ctx = ctx;
        q->dev = dev;
        q->props = props;
        q->conn = dev->conn;
        q->id = mgvcl_id(q->conn);
        mgw_queue_create_encode(
            &b, 0,
            &(mgw_queue_create_t){.id = q->id, .ctx = ctx->id, .dev = dev->idx, .props = props});
        rc = mgvcl_call(q->conn, &b, NULL, NULL);
        mgw_buf_free(&b);
        if (rc) {
            free(q);
            q = NULL;
        } else {
            mgvcl_clRetainContext(ctx);
        }
    }
    if (err)
        *err = rc;
    return q;
}

cl_int CL_API_CALL mgvcl_clRetainCommandQueue(cl_command_queue q)
{
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    atomic_fetch_add(&q->refs, 1);
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clReleaseCommandQueue(cl_command_queue q)
{
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    if (atomic_fetch_sub(&q->refs, 1) == 1) {
        mgvcl_clFinish(q);
        mgvcl_release_remote(q->conn, MGW_K_QUEUE, q->id);
        mgvcl_clReleaseContext(q->ctx);
        free(q);
    }
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clGetCommandQueueInfo(cl_command_queue q, cl_command_queue_info p,
                                               size_t size, void *value, size_t *size_ret)
{
    cl_uint u;
    if (!mgvcl_is(q))
        return CL_INVALID_COMMAND_QUEUE;
    switch (p) {
    case CL_QUEUE_CONTEXT:
        return mgvcl_ret(&q->ctx, sizeof q->ctx, size, value, size_ret);
    case CL_QUEUE_DEVICE:
        return mgvcl_ret(&q->dev, sizeof q->dev, size, value, size_ret);
    case CL_QUEUE_REFERENCE_COUNT:
        u = (cl_uint)atomic_load(&q->refs);
        return mgvcl_ret(&u, sizeof u, size, value, size_ret);
    case CL_QUEUE_PROPERTIES:
        return mgvcl_ret(&q->props, sizeof q->props, size, value, size_ret);
    }
    return CL_INVALID_VALUE;
}

cl_int CL_API_CALL mgvcl_clSetCommandQueueProperty(cl_command_queue q,
                                                   cl_command_queue_properties p, cl_bool enable,
                                                   cl_command_queue_properties *old)
{
    return CL_INVALID_OPERATION;
}
