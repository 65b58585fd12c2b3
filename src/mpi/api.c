/* The MPIX_ functions of mpigpu.h: device, device addresses, copies. */
#include "config.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpigpu.h"
#include "mgdev.h"
#include "shared.h"
#include "mgerr.h"
#include "mgmpi.h"
#include "mglog.h"

/* Every MPIX_ call but MPIX_Query_opencl_support starts here (mgmpi.h): the library
   must have started at MPI_Init and not stopped at MPI_Finalize.  Outside
   them no error handler may be called, and mgmpi_error returns the code as
   it is; MPI_Error_string works before MPI_Init and after MPI_Finalize. */
int mgmpi_api_enter(const char *fn)
{
    int init = 0, fin = 0;
    if (mgdev_state.ready)
        return MPI_SUCCESS;
    PMPI_Initialized(&init);
    PMPI_Finalized(&fin);
    if (!init)
        return mgerr_set(MPI_ERR_OTHER, "mpigpu: %s called before MPI_Init", fn);
    if (fin)
        return mgerr_set(MPI_ERR_OTHER, "mpigpu: %s called after MPI_Finalize", fn);
    return mgerr_set(MPI_ERR_OTHER,
                     "mpigpu: %s: the library is not running (its start at MPI_Init failed, "
                     "or MPI_Finalize is under way)",
                     fn);
}

int MPIX_Query_opencl_support(void)
{
    return mgdev_state.ready && mgdev_state.has_device;
}

int MPIX_Gpu_get_device(cl_context *context, cl_device_id *device, cl_command_queue *queue)
{
    int rc = mgmpi_api_enter("MPIX_Gpu_get_device");
    if (rc == MPI_SUCCESS)
        rc = mgdev_require_device("MPIX_Gpu_get_device");
    if (rc == MPI_SUCCESS)
        mgdev_default_get(context, device, queue, NULL);
    return mgmpi_error(MPI_COMM_WORLD, rc);
}

int MPIX_Gpu_set_queue(cl_command_queue queue)
{
    int rc = mgmpi_api_enter("MPIX_Gpu_set_queue");
    MG_CHECK(rc, fn_fail);
    if (!queue)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: MPIX_Gpu_set_queue: queue is NULL");
    rc = mgdev_queue_adopt(queue);
fn_exit:
    return mgmpi_error(MPI_COMM_WORLD, rc);
fn_fail:
    goto fn_exit;
}

/* On a CPU device whose memory is the host's, a buffer over host memory of
   our own (CL_MEM_USE_HOST_PTR) lets host staging read and write it in place
   without a map and unmap per call (two commands, 20 to 30 us each on PoCL).
   Used only where the device demonstrably keeps the buffer's bytes in that
   memory: once per context, a fill by the device on a private queue must
   show in it (a remote device behind the mpigpu ICD, whose storage is on
   another host, fails this). */
static pthread_mutex_t zc_lock = PTHREAD_MUTEX_INITIALIZER;
static cl_context zc_context; /* context of the last probe, not retained */
static size_t zc_align;       /* its result: alignment, 0 where not zero copy */

static void CL_CALLBACK host_free(cl_mem mem, void *host)
{
    (void)mem;
    free(host);
}

static cl_mem zc_buffer(cl_context context, size_t size, size_t align, char **host)
{
    void *h = NULL;
    cl_int err;
    size_t bytes = ((size < 4 ? 4 : size) + align - 1) / align * align;
    *host = NULL;
    if (posix_memalign(&h, align, bytes))
        return NULL;
    cl_mem mem = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, h, &err);
    if (err != CL_SUCCESS) {
        free(h);
        return NULL;
    }
    if (clSetMemObjectDestructorCallback(mem, host_free, h) != CL_SUCCESS) {
        clReleaseMemObject(mem);
        free(h);
        return NULL;
    }
    *host = h;
    return mem;
}

static size_t zc_probe(cl_context context, cl_device_id dev)
{
    cl_device_type type = 0;
    cl_bool unified = CL_FALSE;
    cl_uint bits = 0;
    cl_int err;
    const cl_uint pat = 0x6d677075u;
    if (clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL) != CL_SUCCESS ||
        !(type & CL_DEVICE_TYPE_CPU) ||
        clGetDeviceInfo(dev, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(unified), &unified, NULL) !=
            CL_SUCCESS ||
        !unified ||
        clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(bits), &bits, NULL) !=
            CL_SUCCESS)
        return 0;
    size_t align = bits / 8 > 4096 ? bits / 8 : 4096, ok = 0;
    char *h = NULL;
    cl_command_queue q = clCreateCommandQueue(context, dev, 0, &err);
    if (err != CL_SUCCESS)
        return 0;
    cl_mem mem = zc_buffer(context, sizeof(pat), align, &h);
    if (mem) {
        /* The device's write shows in host memory, and the host's in what
           the device reads. */
        cl_uint back = 0, pat2 = ~pat;
        memset(h, 0, sizeof(pat));
        ok = clEnqueueFillBuffer(q, mem, &pat, sizeof(pat), 0, sizeof(pat), 0, NULL, NULL) ==
                 CL_SUCCESS &&
             clFinish(q) == CL_SUCCESS && memcmp(h, &pat, sizeof(pat)) == 0;
        if (ok) {
            memcpy(h, &pat2, sizeof(pat2));
            ok = clEnqueueReadBuffer(q, mem, CL_TRUE, 0, sizeof(back), &back, 0, NULL, NULL) ==
                     CL_SUCCESS &&
                 back == pat2;
        }
        clReleaseMemObject(mem);
    }
    clReleaseCommandQueue(q);
    return ok ? align : 0;
}

/* The zero-copy alignment of context's device dev, 0 where it is not zero
   copy (probed once per context). */
static size_t zc_align_for(cl_context context, cl_device_id dev)
{
    if (mgdev_state.settings.force_pipeline)
        return 0;
    pthread_mutex_lock(&zc_lock);
    if (zc_context != context) {
        zc_align = zc_probe(context, dev);
        zc_context = context;
        MGLOG_INFO(MGLOG_MPI, "device buffers %s",
                   zc_align ? "over host memory of their own (CPU device, zero copy)"
                            : "allocated by the device");
    }
    size_t align = zc_align;
    pthread_mutex_unlock(&zc_lock);
    return align;
}

static cl_mem zero_copy_alloc(cl_context context, cl_device_id dev, size_t size, char **host)
{
    size_t align = zc_align_for(context, dev);
    *host = NULL;
    return align ? zc_buffer(context, size, align, host) : NULL;
}

int MPIX_Gpu_malloc(size_t size, void **devptr)
{
    cl_context context = NULL;
    cl_int clrc;
    int rc = mgmpi_api_enter("MPIX_Gpu_malloc");
    MG_CHECK(rc, fn_fail);
    rc = mgdev_require_device("MPIX_Gpu_malloc");
    MG_CHECK(rc, fn_fail);
    if (!devptr)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: MPIX_Gpu_malloc: devptr is NULL");
    cl_device_id dev = NULL;
    char *host = NULL;
    mgdev_default_get(&context, &dev, NULL, NULL);
    cl_mem mem = zero_copy_alloc(context, dev, size, &host);
    /* OpenCL has no empty buffers; a size-0 address is backed by one byte
       that no access may reach (the registry records size 0). */
    if (!mem) {
        mem = clCreateBuffer(context, CL_MEM_READ_WRITE, size ? size : 1, NULL, &clrc);
        MG_CL_CHECK(clrc, "clCreateBuffer", rc, fn_fail);
    }
    rc = mgdev_reg_insert(mem, context, size, 1, devptr);
    if (rc == MPI_SUCCESS && host)
        mgdev_reg_set_host(*devptr, host);
    clReleaseMemObject(mem); /* the registry holds the buffer now */
fn_exit:
    return mgmpi_error(MPI_COMM_WORLD, rc);
fn_fail:
    goto fn_exit;
}

int MPIX_Gpu_malloc_shared(size_t size, void **devptr)
{
    cl_context context = NULL;
    cl_device_id dev = NULL;
    int rc = mgmpi_api_enter("MPIX_Gpu_malloc_shared");
    MG_CHECK(rc, fn_fail);
    rc = mgdev_require_device("MPIX_Gpu_malloc_shared");
    MG_CHECK(rc, fn_fail);
    if (!devptr)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: MPIX_Gpu_malloc_shared: devptr is NULL");
    mgdev_default_get(&context, &dev, NULL, NULL);
    rc = mgdev_shared_alloc(context, dev, size, zc_align_for(context, dev), devptr);
fn_exit:
    return mgmpi_error(MPI_COMM_WORLD, rc);
fn_fail:
    goto fn_exit;
}

int MPIX_Gpu_sync(void *ptr, size_t bytes)
{
    int rc = mgmpi_api_enter("MPIX_Gpu_sync");
    if (rc == MPI_SUCCESS)
        rc = mgdev_shared_sync(ptr, bytes);
    return mgmpi_error(MPI_COMM_WORLD, rc);
}

int MPIX_Gpu_free(void *devptr)
{
    int rc = mgmpi_api_enter("MPIX_Gpu_free");
    if (rc == MPI_SUCCESS && devptr)
        rc = mgdev_shared_free(devptr);
    return mgmpi_error(MPI_COMM_WORLD, rc);
}

int MPIX_Gpu_register(cl_mem mem, void **devptr)
{
    cl_context context = NULL;
    size_t size = 0;
    int rc = mgmpi_api_enter("MPIX_Gpu_register");
    MG_CHECK(rc, fn_fail);
    rc = mgdev_require_device("MPIX_Gpu_register");
    MG_CHECK(rc, fn_fail);
    if (!mem || !devptr)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: MPIX_Gpu_register: %s is NULL",
                mem ? "devptr" : "mem");
    MG_CL_CHECK(clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(size), &size, NULL),
                "clGetMemObjectInfo(CL_MEM_SIZE)", rc, fn_fail);
    MG_CL_CHECK(clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(context), &context, NULL),
                "clGetMemObjectInfo(CL_MEM_CONTEXT)", rc, fn_fail);
    rc = mgdev_ctx_add(context);
    MG_CHECK(rc, fn_fail);
    rc = mgdev_reg_insert(mem, context, size, 0, devptr);
fn_exit:
    return mgmpi_error(MPI_COMM_WORLD, rc);
fn_fail:
    goto fn_exit;
}

int MPIX_Gpu_deregister(void *devptr)
{
    int rc = mgmpi_api_enter("MPIX_Gpu_deregister");
    if (rc == MPI_SUCCESS && devptr)
        rc = mgdev_reg_remove(devptr, 0, NULL);
    return mgmpi_error(MPI_COMM_WORLD, rc);
}

int MPIX_Gpu_host_register(void *ptr, size_t size)
{
    uintptr_t end;
    int rc = mgmpi_api_enter("MPIX_Gpu_host_register");
    MG_CHECK(rc, fn_fail);
    if (!ptr || size == 0)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: MPIX_Gpu_host_register: %s",
                ptr ? "size is 0" : "ptr is NULL");
    if (__builtin_add_overflow((uintptr_t)ptr, size, &end))
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG,
                "mpigpu: MPIX_Gpu_host_register: range [%p, %p + %zu) overflows the address space",
                ptr, ptr, size);
    if (mgdev_reg_in_range(ptr, 1))
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: MPIX_Gpu_host_register: %p is a device address",
                ptr);
    if (mgdev_reg_in_range(ptr, size))
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG,
                "mpigpu: MPIX_Gpu_host_register: range [%p, %p) runs into the device address "
                "range",
                ptr, (void *)end);
    rc = mgdev_pinned_add_user(ptr, size);
fn_exit:
    return mgmpi_error(MPI_COMM_WORLD, rc);
fn_fail:
    goto fn_exit;
}

int MPIX_Gpu_host_deregister(void *ptr)
{
    int rc = mgmpi_api_enter("MPIX_Gpu_host_deregister");
    MG_CHECK(rc, fn_fail);
    if (ptr && !mgdev_pinned_remove_user(ptr))
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG,
                "mpigpu: MPIX_Gpu_host_deregister: %p was not registered (or is deregistered "
                "already)",
                ptr);
fn_exit:
    return mgmpi_error(MPI_COMM_WORLD, rc);
fn_fail:
    goto fn_exit;
}

int MPIX_Gpu_pack_keyval(int *keyval)
{
    int rc = mgmpi_api_enter("MPIX_Gpu_pack_keyval");
    MG_CHECK(rc, fn_fail);
    if (!keyval)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: MPIX_Gpu_pack_keyval: keyval is NULL");
    rc = mgdev_pack_keyval(keyval);
    if (rc != MPI_SUCCESS)
        MG_FAIL(rc, fn_fail, MPI_ERR_OTHER,
                "mpigpu: MPIX_Gpu_pack_keyval: MPI_Type_create_keyval failed");
fn_exit:
    return mgmpi_error(MPI_COMM_WORLD, rc);
fn_fail:
    goto fn_exit;
}

int MPIX_Gpu_query(const void *ptr, int *is_device, cl_mem *mem, size_t *offset)
{
    mgdev_reg_entry_t e = {.mem = NULL};
    size_t off = 0;
    int rc = mgmpi_api_enter("MPIX_Gpu_query");
    MG_CHECK(rc, fn_fail);
    if (!is_device)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: MPIX_Gpu_query: is_device is NULL");
    /* An address of the reserved range outside every live allocation (freed,
       never allocated, a guard gap) is a device address without a buffer:
       calling it host would invite a dereference. */
    *is_device = mgdev_reg_lookup(ptr, &e, &off) || mgdev_reg_in_range(ptr, 1);
    if (mem)
        *mem = e.mem;
    if (offset)
        *offset = off;
fn_exit:
    return mgmpi_error(MPI_COMM_WORLD, rc);
fn_fail:
    goto fn_exit;
}

typedef struct copy_side {
    int dev;
    mgdev_reg_entry_t e;
    size_t off;
} copy_side_t;

/* Classify [p, p + bytes) and check that every byte lies in one place. */
static int copy_side_get(void *p, size_t bytes, const char *what, copy_side_t *s)
{
    uintptr_t end;
    char why[MGDEV_REG_WHY_LEN];
    if (__builtin_add_overflow((uintptr_t)p, bytes, &end))
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: MPIX_Gpu_memcpy: %s range [%p, %p + %zu) overflows the address "
                         "space",
                         what, p, p, bytes);
    s->dev = mgdev_reg_lookup(p, &s->e, &s->off);
    if (s->dev && bytes > s->e.size - s->off)
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: MPIX_Gpu_memcpy: %s range [%p, %p) exceeds the device "
                         "allocation [%p, %p)",
                         what, p, (void *)end, (void *)s->e.base, (void *)(s->e.base + s->e.size));
    if (!s->dev && mgdev_reg_in_range(p, 1))
        return mgerr_set(MPI_ERR_BUFFER, "mpigpu: MPIX_Gpu_memcpy: %s: %s", what,
                         mgdev_reg_why(p, why, sizeof(why)));
    if (!s->dev && mgdev_reg_in_range(p, bytes))
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: MPIX_Gpu_memcpy: %s range [%p, %p) is not inside one device "
                         "allocation",
                         what, p, (void *)end);
    if (!s->dev && !p)
        return mgerr_set(MPI_ERR_BUFFER, "mpigpu: MPIX_Gpu_memcpy: %s is NULL", what);
    return MPI_SUCCESS;
}

static mgpk_buf_t copy_buf(const copy_side_t *s, void *p)
{
    mgpk_buf_t b = {.host = NULL, .mem = NULL, .offset = 0};
    if (s->dev) {
        b.mem = s->e.mem;
        b.offset = (int64_t)s->off;
    } else {
        b.host = p;
    }
    return b;
}

/* Device to device through host memory, chunk by chunk: across contexts, or
   overlapping ranges of one cl_mem (which clEnqueueCopyBuffer refuses). */
static int copy_bounce(const copy_side_t *d, const copy_side_t *s, size_t bytes)
{
    int rc = MPI_SUCCESS;
    mgpk_ctx_t *dpk = NULL, *spk = NULL;
    size_t chunk = mgdev_state.settings.chunk_bytes;
    int backward = d->e.mem == s->e.mem && d->off > s->off;
    char *tmp = malloc(bytes < chunk ? bytes : chunk);
    if (!tmp)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: out of host memory for a bounce buffer");
    rc = mgdev_ctx_get(d->e.context, &dpk);
    MG_CHECK(rc, fn_fail);
    rc = mgdev_ctx_get(s->e.context, &spk);
    MG_CHECK(rc, fn_fail);
    for (size_t done = 0; done < bytes;) {
        size_t n = bytes - done < chunk ? bytes - done : chunk;
        /* memmove order: copy from the end when dst follows src. */
        size_t at = backward ? bytes - done - n : done;
        mgpk_buf_t h = {.host = tmp};
        mgpk_buf_t sb = {.mem = s->e.mem, .offset = (int64_t)(s->off + at)};
        mgpk_buf_t db = {.mem = d->e.mem, .offset = (int64_t)(d->off + at)};
        rc = mgpk_copy(spk, h, sb, n);
        MG_CHECK(rc, fn_fail);
        rc = mgpk_copy(dpk, db, h, n);
        MG_CHECK(rc, fn_fail);
        done += n;
    }
fn_exit:
    free(tmp);
    return rc;
fn_fail:
    goto fn_exit;
}

int MPIX_Gpu_memcpy(void *dst, const void *src, size_t bytes)
{
    copy_side_t d, s;
    mgpk_ctx_t *pk = NULL;
    void *srcp = (void *)(uintptr_t)src;
    int rc = mgmpi_api_enter("MPIX_Gpu_memcpy");

    MG_CHECK(rc, fn_fail);
    if (bytes == 0)
        goto fn_exit;
    rc = copy_side_get(dst, bytes, "destination", &d);
    MG_CHECK(rc, fn_fail);
    rc = copy_side_get(srcp, bytes, "source", &s);
    MG_CHECK(rc, fn_fail);
    if (!d.dev && !s.dev) {
        memmove(dst, src, bytes);
        goto fn_exit;
    }
    rc = mgdev_require_device("MPIX_Gpu_memcpy");
    MG_CHECK(rc, fn_fail);
    /* Shared memory: the host's stores to the source reach the device, and
       the host's copies of the destination become invalid. */
    if (s.dev)
        rc = mgdev_shared_entry_use(&s.e, s.off, bytes, 0);
    if (rc == MPI_SUCCESS && d.dev)
        rc = mgdev_shared_entry_use(&d.e, d.off, bytes, 1);
    MG_CHECK(rc, fn_fail);
    if (d.dev && s.dev &&
        (d.e.context != s.e.context ||
         (d.e.mem == s.e.mem && d.off < s.off + bytes && s.off < d.off + bytes))) {
        rc = copy_bounce(&d, &s, bytes);
        goto fn_exit;
    }
    rc = mgdev_ctx_get(d.dev ? d.e.context : s.e.context, &pk);
    MG_CHECK(rc, fn_fail);
    rc = mgpk_copy(pk, copy_buf(&d, dst), copy_buf(&s, srcp), bytes);
fn_exit:
    return mgmpi_error(MPI_COMM_WORLD, rc);
fn_fail:
    goto fn_exit;
}
