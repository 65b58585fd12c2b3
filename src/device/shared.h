/*
 * Host-coherent device memory (MPIX_Gpu_malloc_shared; doc/design.md,
 * "Shared allocations"): a device address whose pages the host may also load
 * from and store to.  Two modes:
 *   - zero copy, where the device demonstrably keeps a CL_MEM_USE_HOST_PTR
 *     buffer's bytes in that host memory (PoCL): the pages at the device
 *     address are the buffer's storage, and host and device see the same
 *     bytes;
 *   - protocol, elsewhere: the pages are a view of a memfd whose second,
 *     always writable view (the alias) is where the library moves blocks
 *     from and to the device buffer.  Page protection and the SIGSEGV
 *     handler keep each block clean (PROT_READ), dirty (read-write) or
 *     invalid (PROT_NONE), as GMAC's lazy and rolling update do.
 *
 * Coherence points (release consistency): mgdev_shared_device_use() before
 * the device reads or writes a range (MPI calls, the interposed OpenCL
 * commands), mgdev_shared_device_done() after the application waited for the
 * device (clFinish, clWaitForEvents), mgdev_shared_sync() (MPIX_Gpu_sync).
 *
 * Locks: one mutex per allocation, taken by the fault handler and the
 * coherence calls, never held while anything but this file's own OpenCL
 * calls (through mgdev_cl_real, never the interposed entry points) and
 * mprotect run; the list of allocations is append-only while the library
 * runs, so the handler walks it without a lock.
 */
#ifndef MGDEV_SHARED_H
#define MGDEV_SHARED_H

#include <CL/cl.h>
#include <stddef.h>

#include "registry.h"

typedef struct mgdev_shared mgdev_shared_t;

/* The real OpenCL entry points that src/mpi/opencl.c interposes, found past
   libmpigpu with dlsym(RTLD_NEXT), else in libOpenCL.so.1.  NULL where
   neither has them (then every interposed call fails with CL_INVALID_OPERATION). */
typedef struct mgdev_cl_real {
    __typeof__(clSetKernelArg) *SetKernelArg;
    __typeof__(clEnqueueNDRangeKernel) *EnqueueNDRangeKernel;
    __typeof__(clEnqueueTask) *EnqueueTask;
    __typeof__(clEnqueueReadBuffer) *EnqueueReadBuffer;
    __typeof__(clEnqueueWriteBuffer) *EnqueueWriteBuffer;
    __typeof__(clEnqueueCopyBuffer) *EnqueueCopyBuffer;
    __typeof__(clEnqueueFillBuffer) *EnqueueFillBuffer;
    __typeof__(clEnqueueReadBufferRect) *EnqueueReadBufferRect;
    __typeof__(clEnqueueWriteBufferRect) *EnqueueWriteBufferRect;
    __typeof__(clEnqueueCopyBufferRect) *EnqueueCopyBufferRect;
    __typeof__(clEnqueueMapBuffer) *EnqueueMapBuffer;
    __typeof__(clEnqueueUnmapMemObject) *EnqueueUnmapMemObject;
    __typeof__(clFinish) *Finish;
    __typeof__(clWaitForEvents) *WaitForEvents;
} mgdev_cl_real_t;
const mgdev_cl_real_t *mgdev_cl_real(void);

/* Allocate size bytes of shared memory on context (device dev) and give it
   a device address.  zc_align: the zero-copy alignment the device passed
   (0: it is not zero copy). */
int mgdev_shared_alloc(cl_context context, cl_device_id dev, size_t size, size_t zc_align,
                       void **ptr);
/* Free the shared allocation whose base is ptr (MPIX_Gpu_free).  Its pages
   become PROT_NONE again: a later host access is a fatal error that names
   the address and the freed range. */
int mgdev_shared_free(void *ptr);
/* Release every shared allocation (MPI_Finalize, before the registry). */
void mgdev_shared_finalize(void);

/* Nonzero while any protocol-mode allocation lives (the interposed entry
   points do nothing else when it is zero). */
int mgdev_shared_active(void);
/* The live protocol-mode allocation whose buffer is mem, else NULL. */
mgdev_shared_t *mgdev_shared_by_mem(cl_mem mem);
/* Before the device reads (writes 0) or writes (writes 1) bytes
   [off, off + len) of sh's buffer: dirty blocks there reach the device; for
   a write they become invalid, and pending marks sh for
   mgdev_shared_device_done().  len SIZE_MAX: to the end. */
int mgdev_shared_device_use(mgdev_shared_t *sh, size_t off, size_t len, int writes, int pending);
/* The same for a registry entry (MPI calls); nothing for other entries. */
int mgdev_shared_entry_use(const mgdev_reg_entry_t *e, size_t off, size_t len, int writes);
/* The application waited for the device: every allocation marked pending
   is invalidated (its next host read fetches). */
void mgdev_shared_device_done(void);
/* Host memory [p, p + len) that an OpenCL command reads (host_writes 0) or
   writes (1) as its host pointer: shared blocks there are fetched, and made
   writable for a write, before the runtime touches them. */
int mgdev_shared_host_use(const void *p, size_t len, int host_writes);
/* MPIX_Gpu_sync: host stores to [p, p + len) reach the device now. */
int mgdev_shared_sync(const void *p, size_t len);

/* clSetKernelArg set argument index of kernel (size bytes at value):
   remember whether it is a shared buffer. */
void mgdev_shared_kernel_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value);
/* Before kernel runs: its shared buffers are flushed and invalidated. */
int mgdev_shared_kernel_use(cl_kernel kernel);

/* Statistics for tests: blocks fetched and flushed (every allocation). */
void mgdev_shared_stats(unsigned long *fetches, unsigned long *flushes);

#endif /* MGDEV_SHARED_H */
