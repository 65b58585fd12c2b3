/*
 * MPI_Init/MPI_Finalize interposition, opening the default device (named by
 * MPIGPU_DEVICE, else chosen by locality.c) and the table of pack engines,
 * one per OpenCL context in use.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "locality.h"
#include "mgdev.h"
#include "shared.h"
#include "mgerr.h"
#include "mglog.h"

mgdev_state_t mgdev_state = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define MGDEV_NAME_LEN 256

static void platform_name(cl_platform_id p, char *name)
{
    name[0] = '\0';
    clGetPlatformInfo(p, CL_PLATFORM_NAME, MGDEV_NAME_LEN, name, NULL);
    name[MGDEV_NAME_LEN - 1] = '\0';
}

static int platforms_get(cl_platform_id **plats, cl_uint *n)
{
    int rc = MPI_SUCCESS;
    cl_int clrc = clGetPlatformIDs(0, NULL, n);
    *plats = NULL;
    /* The ICD loader reports CL_PLATFORM_NOT_FOUND_KHR (-1001) with none
       installed: that is "no device", not an error. */
    if (clrc != CL_SUCCESS || *n == 0) {
        *n = 0;
        goto fn_exit;
    }
    *plats = malloc(*n * sizeof(**plats));
    if (!*plats)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: out of host memory listing platforms");
    MG_CL_CHECK(clGetPlatformIDs(*n, *plats, NULL), "clGetPlatformIDs", rc, fn_fail);
fn_exit:
    return rc;
fn_fail:
    free(*plats);
    *plats = NULL;
    *n = 0;
    goto fn_exit;
}

/* The MPIGPU_DEVICE choice: device N of the first platform whose name
   contains the substring. */
static int device_by_name(const mgdev_settings_t *s, cl_platform_id *plats, cl_uint np,
                          cl_device_id *dev)
{
    char name[MGDEV_NAME_LEN], found[512] = "";
    size_t used = 0;

    for (cl_uint i = 0; i < np; i++) {
        platform_name(plats[i], name);
        if (strstr(name, s->device)) {
            cl_uint nd = 0;
            if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS)
                nd = 0;
            if ((cl_uint)s->device_index >= nd)
                return mgerr_set(MPI_ERR_OTHER,
                                 "mpigpu: MPIGPU_DEVICE=\"%s:%d\": platform \"%s\" has %u "
                                 "device(s), numbered from 0",
                                 s->device, s->device_index, name, nd);
            cl_device_id *devs = malloc(nd * sizeof(*devs));
            if (!devs)
                return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory listing devices");
            cl_int clrc = clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, nd, devs, NULL);
            *dev = devs[s->device_index];
            free(devs);
            return clrc == CL_SUCCESS ? MPI_SUCCESS
                                      : mgerr_cl(clrc, "clGetDeviceIDs", __FILE__, __LINE__);
        }
        int w = snprintf(found + used, sizeof(found) - used, "%s\"%s\"", i ? ", " : "", name);
        if (w > 0 && (size_t)w < sizeof(found) - used)
            used += (size_t)w;
    }
    return mgerr_set(MPI_ERR_OTHER,
                     "mpigpu: MPIGPU_DEVICE=\"%s\" matches no OpenCL platform name; platforms "
                     "found: %s",
                     s->device, np ? found : "none");
}

static int slot_add(cl_context context, mgpk_ctx_t *pk, int shared)
{
    mgdev_state_t *st = &mgdev_state;
    if (st->nslots == st->slots_cap) {
        size_t cap = st->slots_cap ? st->slots_cap * 2 : 8;
        mgdev_ctx_slot_t *p = realloc(st->slots, cap * sizeof(*p));
        if (!p)
            return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory for context table");
        st->slots = p;
        st->slots_cap = cap;
    }
    st->slots[st->nslots].context = context;
    st->slots[st->nslots].pk = pk;
    st->slots[st->nslots].shared = shared;
    st->slots[st->nslots].own = NULL;
    st->nslots++;
    return MPI_SUCCESS;
}

/* What a kernel costs beyond its calibrated time on device: a context switch
   where other processes of the node use the same GPU (sharers, counted in
   mgdev_setup for the default device; another device counts as unshared). */
static double kernel_switch(cl_device_id device)
{
    const mgdev_state_t *st = &mgdev_state;
    int shared = st->sharers > 1 || st->settings.force_shared;
    return device && device == st->device && shared ? st->settings.kernel_switch_us : 0;
}

/* A new engine for context.  Its auto table is decided at its first
   point-to-point operation (mgp2p_op_init) or first auto pack, so a process
   that never moves device data never loads or measures one. */
static int engine_create(cl_context context, cl_device_id device, cl_command_queue queue,
                         mgpk_ctx_t **pk)
{
    mgpk_settings_t ps = mgdev_settings_pack(&mgdev_state.settings);
    ps.kernel_switch_us = kernel_switch(device);
    return mgpk_ctx_create(context, device, queue, &ps, pk);
}

/* Make (context, device, queue) the default with a new engine.  Takes over
   one reference to each handle. */
static int default_set(cl_context context, cl_device_id device, cl_command_queue queue)
{
    mgdev_state_t *st = &mgdev_state;
    mgpk_ctx_t *pk = NULL;
    int rc = engine_create(context, device, queue, &pk);
    MG_CHECK(rc, fn_fail);
    rc = slot_add(context, pk, 1);
    MG_CHECK(rc, free_pk);
    if (st->queue)
        clReleaseCommandQueue(st->queue);
    if (st->context)
        clReleaseContext(st->context);
    st->context = context;
    st->device = device;
    st->queue = queue;
    st->pk = pk;
    st->has_device = 1;
fn_exit:
    return rc;
free_pk:
    mgpk_ctx_free(pk);
fn_fail:
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    goto fn_exit;
}

static void verbose_device(cl_device_id dev, cl_platform_id plat, const char *why)
{
    char dname[MGDEV_NAME_LEN] = "", pname[MGDEV_NAME_LEN];
    int rank = 0, local_rank, local_size;
    clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(dname), dname, NULL);
    dname[sizeof(dname) - 1] = '\0';
    platform_name(plat, pname);
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mgdev_loc_local(&local_rank, &local_size);
    mglog_write(MGLOG_LEVEL_INFO, MGLOG_DEVICE,
                "rank %d (local %d of %d): device \"%s\" of platform \"%s\" (%s), pack "
                "method %s\n",
                rank, local_rank, local_size, dname, pname, why,
                mgdev_method_name(mgdev_state.settings.method));
}

static int device_open(void)
{
    mgdev_state_t *st = &mgdev_state;
    cl_platform_id *plats = NULL, plat = NULL;
    cl_uint np = 0;
    cl_device_id dev = NULL;
    char why[256] = "MPIGPU_DEVICE";
    cl_int clrc;

    int rc = platforms_get(&plats, &np);
    MG_CHECK(rc, fn_fail);
    if (st->settings.device) {
        rc = device_by_name(&st->settings, plats, np, &dev);
        MG_CHECK(rc, fn_fail);
    } else {
        dev = mgdev_loc_chosen(why, sizeof(why));
        if (!dev)
            goto fn_exit; /* no OpenCL device: host buffers only */
    }
    MG_CL_CHECK(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof(plat), &plat, NULL),
                "clGetDeviceInfo(CL_DEVICE_PLATFORM)", rc, fn_fail);
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    cl_context context = clCreateContext(props, 1, &dev, NULL, NULL, &clrc);
    MG_CL_CHECK(clrc, "clCreateContext", rc, fn_fail);
    cl_command_queue queue = clCreateCommandQueue(context, dev, 0, &clrc);
    if (clrc != CL_SUCCESS)
        clReleaseContext(context);
    MG_CL_CHECK(clrc, "clCreateCommandQueue", rc, fn_fail);
    rc = default_set(context, dev, queue);
    MG_CHECK(rc, fn_fail);
    mgdev_loc_use(dev);
    if (mglog_enabled(MGLOG_LEVEL_INFO))
        verbose_device(dev, plat, why);

fn_exit:
    free(plats);
    return rc;
fn_fail:
    goto fn_exit;
}

int mgdev_setup(void)
{
    mgdev_state_t *st = &mgdev_state;
    int rc = mgdev_settings_read(&st->settings);
    /* Collective over the node: a rank with bad settings takes part too. */
    mgdev_loc_init(rc == MPI_SUCCESS && !st->settings.device);
    MG_CHECK(rc, fin_loc);
    rc = mgdt_init();
    MG_CHECK(rc, fin_loc);
    rc = mgdev_reg_init();
    MG_CHECK(rc, fin_dt);
    rc = device_open();
    MG_CHECK(rc, fin_reg);
    /* Collective over the node, as on the failure paths below. */
    st->sharers = mgdev_loc_sharers(st->device);
    if (st->pk)
        mgpk_ctx_set_kernel_switch(st->pk, kernel_switch(st->device));
    if (st->sharers > 1)
        MGLOG_INFO(MGLOG_DEVICE,
                   "%d processes of this node use the default GPU: kernels count %d us "
                   "more when auto compares methods (MPIGPU_KERNEL_SWITCH)",
                   st->sharers, st->settings.kernel_switch_us);
    st->ready = 1;
fn_exit:
    return rc;
fin_reg:
    mgdev_reg_finalize();
fin_dt:
    mgdt_finalize();
fin_loc:
    (void)mgdev_loc_sharers(NULL);
    mgdev_loc_finalize();
    mgdev_settings_free(&st->settings);
    goto fn_exit;
}

void mgdev_teardown(void)
{
    mgdev_state_t *st = &mgdev_state;
    if (!st->ready)
        return;
    mgdev_pack_keyval_free();
    /* Shared allocations, then the registry: its entries hold cl_mem
       references into contexts that the engines below may hold the last
       reference to. */
    mgdev_shared_finalize();
    mgdev_reg_finalize();
    /* Types may hold pack-engine uploads: free them while the engines live. */
    mgdt_finalize();
    for (size_t i = 0; i < st->nslots; i++) {
        mgpk_ctx_free(st->slots[i].own);
        mgpk_ctx_free(st->slots[i].pk);
    }
    free(st->slots);
    if (st->queue)
        clReleaseCommandQueue(st->queue);
    if (st->context)
        clReleaseContext(st->context);
    mgdev_loc_finalize();
    mgdev_pinned_finalize();
    mgdev_settings_free(&st->settings);
    /* Field by field: the lock stays as it is (a mutex is never copied). */
    st->ready = 0;
    st->has_device = 0;
    memset(&st->settings, 0, sizeof(st->settings));
    st->context = NULL;
    st->device = NULL;
    st->queue = NULL;
    st->pk = NULL;
    st->slots = NULL;
    st->nslots = st->slots_cap = 0;
}

int mgdev_require_device(const char *fn)
{
    if (mgdev_state.has_device)
        return MPI_SUCCESS;
    if (!mgdev_state.ready)
        return mgerr_set(MPI_ERR_OTHER,
                         "mpigpu: %s: the library is not initialized (MPI_Init not called, failed, "
                         "or MPI_Finalize done)",
                         fn);
    return mgerr_set(MPI_ERR_OTHER,
                     "mpigpu: %s: no OpenCL device in use (none found, see MPIGPU_DEVICE); "
                     "only host buffers are supported",
                     fn);
}

/* The slot of context in the table, or NULL (st->lock held).  The default
   context's is the latest of its slots. */
static mgdev_ctx_slot_t *slot_find(cl_context context)
{
    mgdev_state_t *st = &mgdev_state;
    for (size_t i = st->nslots; i-- > 0;)
        if (st->slots[i].context == context)
            return &st->slots[i];
    return NULL;
}

static mgpk_ctx_t *engine_find(cl_context context)
{
    mgdev_ctx_slot_t *s = slot_find(context);
    return s ? s->pk : NULL;
}

/* Whether the calling thread builds or runs enqueued operations. */
static _Thread_local int own_scope;

void mgdev_own_scope(int on)
{
    own_scope = on;
}

/* The engine of s that packs on a queue of its own (st->lock held). */
static int engine_own(mgdev_ctx_slot_t *s, mgpk_ctx_t **pk)
{
    int rc = MPI_SUCCESS;
    if (!s->shared) {
        *pk = s->pk; /* made with a queue of its own already */
        goto fn_exit;
    }
    if (!s->own) {
        rc = engine_create(s->context, mgpk_ctx_device(s->pk), NULL, &s->own);
        MG_CHECK(rc, fn_exit);
        mgpk_calib_share(s->own, s->pk);
    }
    *pk = s->own;
fn_exit:
    return rc;
}

int mgdev_ctx_add(cl_context context)
{
    mgdev_state_t *st = &mgdev_state;
    int rc = MPI_SUCCESS;
    cl_device_id dev = NULL;
    mgpk_ctx_t *pk = NULL;

    pthread_mutex_lock(&st->lock);
    if (engine_find(context))
        goto fn_exit;
    MG_CL_CHECK(clGetContextInfo(context, CL_CONTEXT_DEVICES, sizeof(dev), &dev, NULL),
                "clGetContextInfo(CL_CONTEXT_DEVICES)", rc, fn_fail);
    rc = engine_create(context, dev, NULL, &pk);
    MG_CHECK(rc, fn_fail);
    rc = slot_add(context, pk, 0);
    if (rc != MPI_SUCCESS)
        mgpk_ctx_free(pk);
fn_exit:
    pthread_mutex_unlock(&st->lock);
    return rc;
fn_fail:
    goto fn_exit;
}

int mgdev_ctx_get(cl_context context, mgpk_ctx_t **pk)
{
    mgdev_state_t *st = &mgdev_state;
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&st->lock);
    mgdev_ctx_slot_t *s = slot_find(context);
    *pk = NULL;
    if (!s)
        rc = mgerr_set(MPI_ERR_OTHER,
                       "mpigpu: no pack engine for an OpenCL context that was never made known "
                       "(MPIX_Gpu_register, MPIX_Gpu_set_queue or the default device)");
    else if (own_scope)
        rc = engine_own(s, pk);
    else
        *pk = s->pk;
    pthread_mutex_unlock(&st->lock);
    return rc;
}

int mgdev_default_own_queue(cl_context *context, cl_command_queue *queue)
{
    mgdev_state_t *st = &mgdev_state;
    mgpk_ctx_t *pk = NULL;
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&st->lock);
    mgdev_ctx_slot_t *s = st->context ? slot_find(st->context) : NULL;
    *context = NULL;
    *queue = NULL;
    if (s)
        rc = engine_own(s, &pk);
    if (pk) {
        *context = st->context;
        *queue = mgpk_ctx_queue(pk);
    }
    pthread_mutex_unlock(&st->lock);
    return rc;
}

void mgdev_default_get(cl_context *context, cl_device_id *device, cl_command_queue *queue,
                       mgpk_ctx_t **pk)
{
    mgdev_state_t *st = &mgdev_state;
    pthread_mutex_lock(&st->lock);
    if (context)
        *context = st->context;
    if (device)
        *device = st->device;
    if (queue)
        *queue = st->queue;
    if (pk)
        *pk = st->pk;
    pthread_mutex_unlock(&st->lock);
}

int mgdev_queue_adopt(cl_command_queue queue)
{
    mgdev_state_t *st = &mgdev_state;
    cl_context context = NULL;
    cl_device_id dev = NULL;
    int rc = MPI_SUCCESS;

    pthread_mutex_lock(&st->lock);
    MG_CL_CHECK(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(context), &context, NULL),
                "clGetCommandQueueInfo(CL_QUEUE_CONTEXT)", rc, fn_fail);
    MG_CL_CHECK(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(dev), &dev, NULL),
                "clGetCommandQueueInfo(CL_QUEUE_DEVICE)", rc, fn_fail);
    MG_CL_CHECK(clRetainCommandQueue(queue), "clRetainCommandQueue", rc, fn_fail);
    clRetainContext(context);
    /* The previous default engine stays in the table, so addresses made on
       the old context keep working. */
    rc = default_set(context, dev, queue);
    if (rc == MPI_SUCCESS)
        mgdev_loc_use(dev);
    if (rc == MPI_SUCCESS && mglog_enabled(MGLOG_LEVEL_INFO)) {
        cl_platform_id plat = NULL;
        clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof(plat), &plat, NULL);
        verbose_device(dev, plat, "MPIX_Gpu_set_queue");
    }
fn_exit:
    pthread_mutex_unlock(&st->lock);
    return rc;
fn_fail:
    goto fn_exit;
}
