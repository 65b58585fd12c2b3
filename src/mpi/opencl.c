/*
 * The OpenCL entry points that keep shared memory (MPIX_Gpu_malloc_shared)
 * coherent with commands that use its cl_mem, as GMAC interposes CUDA's.
 * libmpigpu exports these names; the application's calls reach them when
 * libmpigpu comes before libOpenCL in the lookup order (mpigpu.pc links it
 * first; LD_PRELOAD does too).  Each forwards to the real entry point
 * (device/shared.h, mgdev_cl_real: dlsym(RTLD_NEXT)), and does nothing else
 * while no shared allocation in protocol mode lives (one atomic load), so
 * programs without shared memory, zero-copy shared memory (PoCL), the
 * virtual ICD (its own dispatch table, never these names) and mpigpu-proxy
 * (not linked with libmpigpu) are undisturbed.  The library's own OpenCL
 * calls bind to these too; on a shared buffer their extra work is what the
 * MPI call already did (a flush finds nothing dirty).
 *
 * Interposed: clSetKernelArg (which arguments are shared buffers),
 * clEnqueueNDRangeKernel and clEnqueueTask (flush, invalidate),
 * clEnqueue{Read,Write,Copy}Buffer[Rect], clEnqueueFillBuffer and
 * clEnqueueMapBuffer (flush what the device reads, invalidate what it
 * writes; a shared address as the host pointer of Read/WriteBuffer is made
 * accessible first), clFinish and clWaitForEvents (the device's writes
 * become visible: host copies of buffers that a command may have written are
 * invalidated).  Not interposed: native kernels, migrations, images,
 * clEnqueueSVM*, and the host pointers of the Rect calls (use MPIX_Gpu_sync
 * and clFinish around those).
 */
#include "config.h"

/* The definitions below are what libmpigpu exports besides MPI_ and MPIX_
   (test/layers/exports.sh lists them from this file). */
#pragma GCC visibility push(default)
#include <CL/cl.h>
#pragma GCC visibility pop

#include <stdint.h>

#include "shared.h"

#define REAL(name)                                                                                 \
    const mgdev_cl_real_t *r = mgdev_cl_real();                                                    \
    if (!r->name)                                                                                  \
    return CL_INVALID_OPERATION

/* A failed flush or fetch (an OpenCL error on the library's own queue)
   fails the command before it is enqueued. */
#define USE(call)                                                                                  \
    do {                                                                                           \
        if ((call) != MPI_SUCCESS)                                                                 \
            return CL_OUT_OF_RESOURCES;                                                            \
    } while (0)

static int mem_use(cl_mem mem, size_t off, size_t len, int writes)
{
    mgdev_shared_t *sh = mgdev_shared_by_mem(mem);
    return sh ? mgdev_shared_device_use(sh, off, len, writes, writes) : MPI_SUCCESS;
}

cl_int clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size, const void *arg_value)
{
    REAL(SetKernelArg);
    cl_int err = r->SetKernelArg(kernel, arg_index, arg_size, arg_value);
    if (err == CL_SUCCESS)
        mgdev_shared_kernel_arg(kernel, arg_index, arg_size, arg_value);
    return err;
}

cl_int clEnqueueNDRangeKernel(cl_command_queue queue, cl_kernel kernel, cl_uint work_dim,
                              const size_t *global_work_offset, const size_t *global_work_size,
                              const size_t *local_work_size, cl_uint num_events_in_wait_list,
                              const cl_event *event_wait_list, cl_event *event)
{
    REAL(EnqueueNDRangeKernel);
    if (mgdev_shared_active())
        USE(mgdev_shared_kernel_use(kernel));
    return r->EnqueueNDRangeKernel(queue, kernel, work_dim, global_work_offset, global_work_size,
                                   local_work_size, num_events_in_wait_list, event_wait_list,
                                   event);
}

cl_int clEnqueueTask(cl_command_queue queue, cl_kernel kernel, cl_uint num_events_in_wait_list,
                     const cl_event *event_wait_list, cl_event *event)
{
    REAL(EnqueueTask);
    if (mgdev_shared_active())
        USE(mgdev_shared_kernel_use(kernel));
    return r->EnqueueTask(queue, kernel, num_events_in_wait_list, event_wait_list, event);
}

cl_int clEnqueueReadBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking_read,
                           size_t offset, size_t size, void *ptr, cl_uint num_events_in_wait_list,
                           const cl_event *event_wait_list, cl_event *event)
{
    REAL(EnqueueReadBuffer);
    if (mgdev_shared_active()) {
        USE(mem_use(buffer, offset, size, 0));
        USE(mgdev_shared_host_use(ptr, size, 1));
    }
    return r->EnqueueReadBuffer(queue, buffer, blocking_read, offset, size, ptr,
                                num_events_in_wait_list, event_wait_list, event);
}

cl_int clEnqueueWriteBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking_write,
                            size_t offset, size_t size, const void *ptr,
                            cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                            cl_event *event)
{
    REAL(EnqueueWriteBuffer);
    if (mgdev_shared_active()) {
        USE(mgdev_shared_host_use(ptr, size, 0));
        USE(mem_use(buffer, offset, size, 1));
    }
    return r->EnqueueWriteBuffer(queue, buffer, blocking_write, offset, size, ptr,
                                 num_events_in_wait_list, event_wait_list, event);
}

cl_int clEnqueueCopyBuffer(cl_command_queue queue, cl_mem src_buffer, cl_mem dst_buffer,
                           size_t src_offset, size_t dst_offset, size_t size,
                           cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                           cl_event *event)
{
    REAL(EnqueueCopyBuffer);
    if (mgdev_shared_active()) {
        USE(mem_use(src_buffer, src_offset, size, 0));
        USE(mem_use(dst_buffer, dst_offset, size, 1));
    }
    return r->EnqueueCopyBuffer(queue, src_buffer, dst_buffer, src_offset, dst_offset, size,
                                num_events_in_wait_list, event_wait_list, event);
}

cl_int clEnqueueFillBuffer(cl_command_queue queue, cl_mem buffer, const void *pattern,
                           size_t pattern_size, size_t offset, size_t size,
                           cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                           cl_event *event)
{
    REAL(EnqueueFillBuffer);
    if (mgdev_shared_active())
        USE(mem_use(buffer, offset, size, 1));
    return r->EnqueueFillBuffer(queue, buffer, pattern, pattern_size, offset, size,
                                num_events_in_wait_list, event_wait_list, event);
}

cl_int clEnqueueReadBufferRect(cl_command_queue queue, cl_mem buffer, cl_bool blocking_read,
                               const size_t *buffer_origin, const size_t *host_origin,
                               const size_t *region, size_t buffer_row_pitch,
                               size_t buffer_slice_pitch, size_t host_row_pitch,
                               size_t host_slice_pitch, void *ptr, cl_uint num_events_in_wait_list,
                               const cl_event *event_wait_list, cl_event *event)
{
    REAL(EnqueueReadBufferRect);
    if (mgdev_shared_active())
        USE(mem_use(buffer, 0, SIZE_MAX, 0));
    return r->EnqueueReadBufferRect(queue, buffer, blocking_read, buffer_origin, host_origin,
                                    region, buffer_row_pitch, buffer_slice_pitch, host_row_pitch,
                                    host_slice_pitch, ptr, num_events_in_wait_list, event_wait_list,
                                    event);
}

cl_int clEnqueueWriteBufferRect(cl_command_queue queue, cl_mem buffer, cl_bool blocking_write,
                                const size_t *buffer_origin, const size_t *host_origin,
                                const size_t *region, size_t buffer_row_pitch,
                                size_t buffer_slice_pitch, size_t host_row_pitch,
                                size_t host_slice_pitch, const void *ptr,
                                cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                                cl_event *event)
{
    REAL(EnqueueWriteBufferRect);
    if (mgdev_shared_active())
        USE(mem_use(buffer, 0, SIZE_MAX, 1));
    return r->EnqueueWriteBufferRect(queue, buffer, blocking_write, buffer_origin, host_origin,
                                     region, buffer_row_pitch, buffer_slice_pitch, host_row_pitch,
                                     host_slice_pitch, ptr, num_events_in_wait_list,
                                     event_wait_list, event);
}

cl_int clEnqueueCopyBufferRect(cl_command_queue queue, cl_mem src_buffer, cl_mem dst_buffer,
                               const size_t *src_origin, const size_t *dst_origin,
                               const size_t *region, size_t src_row_pitch, size_t src_slice_pitch,
                               size_t dst_row_pitch, size_t dst_slice_pitch,
                               cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                               cl_event *event)
{
    REAL(EnqueueCopyBufferRect);
    if (mgdev_shared_active()) {
        USE(mem_use(src_buffer, 0, SIZE_MAX, 0));
        USE(mem_use(dst_buffer, 0, SIZE_MAX, 1));
    }
    return r->EnqueueCopyBufferRect(queue, src_buffer, dst_buffer, src_origin, dst_origin, region,
                                    src_row_pitch, src_slice_pitch, dst_row_pitch, dst_slice_pitch,
                                    num_events_in_wait_list, event_wait_list, event);
}

void *clEnqueueMapBuffer(cl_command_queue queue, cl_mem buffer, cl_bool blocking_map,
                         cl_map_flags map_flags, size_t offset, size_t size,
                         cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                         cl_event *event, cl_int *errcode_ret)
{
    const mgdev_cl_real_t *r = mgdev_cl_real();
    if (!r->EnqueueMapBuffer) {
        if (errcode_ret)
            *errcode_ret = CL_INVALID_OPERATION;
        return NULL;
    }
    /* A mapping for writing changes the device's bytes at its unmap: the
       host's copies become invalid now and again at the next wait. */
    if (mgdev_shared_active() &&
        mem_use(buffer, offset, size,
                (map_flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)) != 0) !=
            MPI_SUCCESS) {
        if (errcode_ret)
            *errcode_ret = CL_OUT_OF_RESOURCES;
        return NULL;
    }
    return r->EnqueueMapBuffer(queue, buffer, blocking_map, map_flags, offset, size,
                               num_events_in_wait_list, event_wait_list, event, errcode_ret);
}

cl_int clFinish(cl_command_queue queue)
{
    REAL(Finish);
    cl_int err = r->Finish(queue);
    if (mgdev_shared_active())
        mgdev_shared_device_done();
    return err;
}

cl_int clWaitForEvents(cl_uint num_events, const cl_event *event_list)
{
    REAL(WaitForEvents);
    cl_int err = r->WaitForEvents(num_events, event_list);
    if (mgdev_shared_active())
        mgdev_shared_device_done();
    return err;
}
