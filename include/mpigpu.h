/**
 * @file mpigpu.h
 * @brief mpigpu: MPI on OpenCL device buffers, with any datatype.
 *
 * Link this library before MPI (`mpicc app.c $(pkg-config --cflags --libs
 * mpigpu)`) or preload it (`LD_PRELOAD=libmpigpu.so`).  MPI calls then accept
 * device addresses, made by MPIX_Gpu_malloc() or MPIX_Gpu_register(), wherever
 * they accept a buffer.  Host buffers behave exactly as with plain MPI.
 *
 * Every function returns MPI_SUCCESS or an MPI error class value such as
 * MPI_ERR_BUFFER; MPI_Error_string() on it gives the cause (the OpenCL error
 * name, the device address, the range).  Errors go through the error handler
 * of MPI_COMM_WORLD.  Before MPI_Init and after MPI_Finalize every MPIX_
 * function returns MPI_ERR_OTHER ("mpigpu: MPIX_Gpu_malloc called before
 * MPI_Init") without calling an error handler, and
 * MPIX_Query_opencl_support() returns 0.
 *
 * Ownership: handles returned by MPIX_Gpu_get_device() are borrowed and stay
 * valid until MPI_Finalize().  Device addresses from MPIX_Gpu_malloc() belong
 * to the caller until MPIX_Gpu_free(); MPIX_Gpu_register() retains the cl_mem
 * until MPIX_Gpu_deregister() or MPI_Finalize().
 *
 * Initialization: MPI_Init and MPI_Init_thread set the library up after MPI
 * itself.  A malformed setting (MPIGPU_PACK, MPIGPU_CHUNK) or an
 * MPIGPU_DEVICE that matches no platform makes them print the cause to stderr
 * and return MPI_ERR_OTHER with MPI already initialized; the program should
 * then call MPI_Abort.  With no OpenCL device at all, MPI works for host
 * buffers and MPIX_Query_opencl_support() returns 0.
 */
#ifndef MPIGPU_H
#define MPIGPU_H

#include <mpi.h>

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Marks what the library exports, as hwloc's HWLOC_DECLSPEC does.  The library
 * is built with -fvisibility=hidden: the MPIX_ functions declared here and the
 * interposed MPI_ calls carry this mark, and no other symbol leaves
 * libmpigpu.so.
 */
#if defined(__GNUC__)
#define MPIGPU_EXPORT __attribute__((visibility("default")))
#else
#define MPIGPU_EXPORT
#endif

/** Version of the library. */
#define MPIGPU_VERSION_MAJOR 0
#define MPIGPU_VERSION_MINOR 1

/**
 * @brief Whether device buffers are accepted.
 * @return 1 once MPI is initialized with an OpenCL device in use, else 0.
 */
MPIGPU_EXPORT int MPIX_Query_opencl_support(void);

/**
 * @brief The default device, chosen at MPI_Init.
 *
 * The device comes from MPIGPU_DEVICE (`SUBSTRING[:N]`), else the first GPU,
 * else the first OpenCL device.  Any argument may be NULL.  The handles are
 * borrowed and stay valid until MPI_Finalize().
 */
MPIGPU_EXPORT int MPIX_Gpu_get_device(cl_context *context, cl_device_id *device,
                                      cl_command_queue *queue);

/**
 * @brief Adopt the application's queue: its context and device become the
 * default.  Call it before MPIX_Gpu_malloc().  The queue is retained.
 */
MPIGPU_EXPORT int MPIX_Gpu_set_queue(cl_command_queue queue);

/**
 * @brief Allocate size bytes on the default context and return a device address.
 *
 * devptr + k is a device address for 0 <= k < size.  The host must not
 * dereference it.  size 0 returns a unique address that no access may use.
 */
MPIGPU_EXPORT int MPIX_Gpu_malloc(size_t size, void **devptr);

/**
 * @brief Free a device address returned by MPIX_Gpu_malloc() or
 * MPIX_Gpu_malloc_shared().
 *
 * The range goes to a quarantine and is handed out again last, oldest
 * first, so that a stale pointer gets an error naming the freed range.
 */
MPIGPU_EXPORT int MPIX_Gpu_free(void *devptr);

/**
 * @brief Allocate host-coherent device memory (the ADSM model of GMAC).
 *
 * Like MPIX_Gpu_malloc(), size bytes on the default context with a device
 * address in *devptr: MPI calls treat it as device memory, MPIX_Gpu_query()
 * gives its cl_mem for kernels and MPIX_Gpu_free() frees it.  The host may
 * also load from and store to [*devptr, *devptr + size) directly.  Coherence
 * is release-consistent: host stores reach the device at MPI calls that use
 * the buffer, at OpenCL commands that use its cl_mem (kernels whose
 * arguments name it, reads, writes, copies, fills, maps) and at
 * MPIX_Gpu_sync(); the device's writes become visible to the host after
 * clFinish() or clWaitForEvents(), and after MPI calls that wrote the
 * buffer.  The contents are undefined until written.  A host access after
 * MPIX_Gpu_free() ends the process with a message naming the address.
 */
MPIGPU_EXPORT int MPIX_Gpu_malloc_shared(size_t size, void **devptr);

/**
 * @brief Make host stores to [ptr, ptr + bytes) visible to the device now.
 *
 * For memory of MPIX_Gpu_malloc_shared(); any other device allocation has
 * nothing to make visible.  MPI_ERR_BUFFER when the range is not inside one
 * live device allocation; bytes 0 does nothing.
 */
MPIGPU_EXPORT int MPIX_Gpu_sync(void *ptr, size_t bytes);

/**
 * @brief Give an existing buffer of any context a device address.
 * The buffer is retained until MPIX_Gpu_deregister().
 */
MPIGPU_EXPORT int MPIX_Gpu_register(cl_mem mem, void **devptr);

/** @brief Forget a device address returned by MPIX_Gpu_register(). */
MPIGPU_EXPORT int MPIX_Gpu_deregister(void *devptr);

/**
 * @brief Classify a pointer.
 *
 * Sets *is_device to 1 when ptr lies in the device address range, with the
 * buffer and the offset into it for a byte of a live allocation; sets it to
 * 0 for a host address.  *is_device 1 with *mem NULL and *offset 0 means a
 * freed or never allocated device address, which must not be dereferenced.
 * mem and offset may be NULL.
 */
MPIGPU_EXPORT int MPIX_Gpu_query(const void *ptr, int *is_device, cl_mem *mem, size_t *offset);

/**
 * @brief Declare host memory page-locked (pinned).
 *
 * [ptr, ptr + size) must be page-locked for the default device, e.g. the
 * mapping of a CL_MEM_ALLOC_HOST_PTR buffer of the default context.  Packs of
 * device data into it and unpacks from it (MPI_Pack, MPI_Unpack) then move
 * straight between device memory and that range at the bus's speed, instead
 * of through the library's pinned staging and a host copy.  Correctness does
 * not depend on it.  The range stays declared until
 * MPIX_Gpu_host_deregister(ptr) or MPI_Finalize().  A NULL ptr, a size of 0,
 * a range that wraps around the address space or touches the device
 * address range return MPI_ERR_ARG.
 */
MPIGPU_EXPORT int MPIX_Gpu_host_register(void *ptr, size_t size);

/**
 * @brief Forget a range declared by MPIX_Gpu_host_register(), by its ptr.
 * MPI_ERR_ARG for a ptr that starts no declared range (never declared, or
 * forgotten already); NULL does nothing.
 */
MPIGPU_EXPORT int MPIX_Gpu_host_deregister(void *ptr);

/** Values of the per-datatype method attribute (see MPIX_Gpu_pack_keyval()). */
#define MPIX_GPU_PACK_AUTO 0   /**< as MPIGPU_PACK says */
#define MPIX_GPU_PACK_KERNEL 1 /**< a pack kernel */
#define MPIX_GPU_PACK_COPY 2   /**< OpenCL copy commands, no kernel */
#define MPIX_GPU_PACK_HOST 3   /**< stage the extent, pack on the CPU (MPI_Pack/MPI_Unpack) */

/**
 * @brief The datatype attribute key that chooses how one datatype is packed.
 *
 * MPI_Type_set_attr(type, keyval, (void *)(intptr_t)MPIX_GPU_PACK_COPY)
 * makes packs of device data of that type (MPI_Pack, MPI_Unpack,
 * point-to-point) use that method instead of MPIGPU_PACK, e.g. to keep the
 * compute units free for the application's kernels.  Other values, and
 * MPIX_GPU_PACK_AUTO, leave MPIGPU_PACK in charge.  Contiguous data moves
 * as one buffer copy under every method.  The attribute is copied by
 * MPI_Type_dup.  The keyval is created at the first call and stays valid
 * until MPI_Finalize().
 */
MPIGPU_EXPORT int MPIX_Gpu_pack_keyval(int *keyval);

/** @brief Blocking copy between any mix of host and device addresses. */
MPIGPU_EXPORT int MPIX_Gpu_memcpy(void *dst, const void *src, size_t bytes);

/*
 * Communication and file I/O ordered by OpenCL events (the MPIX_Enqueue_
 * calls), with any committed datatype, on device or host buffers.
 *
 * Each call returns at once: it never waits for its wait list, the peer or
 * the network.  The operation starts once the events of event_wait_list
 * have completed and, on an in-order queue, the commands enqueued on queue
 * before it.  On an in-order queue the commands enqueued after the call
 * start only once the operation is complete, as for any OpenCL command.
 * *event (event may be NULL) is an event of queue's context, retained for
 * the caller (release it with clReleaseEvent), that completes when the send
 * buffer may be reused or the receive buffer holds the data.  An error found
 * after the call returned is a negative execution status of *event, which
 * OpenCL passes on to the commands that wait for it: MPIX_ENQUEUE_ERROR_BASE
 * minus the MPI error class (truncation, a failed peer), or the status of a
 * wait-list event that failed, passed on as it is.  Errors found during the
 * call (bad arguments, an invalid queue) are returned, and nothing is
 * enqueued.  Progress needs no call from the application: clFinish or
 * clWaitForEvents alone completes the operation, at any thread level (the
 * user guide, "Enqueued operations", says how and at what cost).
 */

/** The execution status of an enqueued operation that failed with MPI error
    class c after its call returned is MPIX_ENQUEUE_ERROR_BASE - c. */
#define MPIX_ENQUEUE_ERROR_BASE (-100000)
/** The MPI error class of a negative execution status s of an enqueued
    operation's event, or MPI_ERR_OTHER when s is an OpenCL status (a failed
    wait-list event passed on). */
#define MPIX_ENQUEUE_ERROR_CLASS(s)                                                                \
    ((s) < MPIX_ENQUEUE_ERROR_BASE ? (int)(MPIX_ENQUEUE_ERROR_BASE - (s)) : MPI_ERR_OTHER)

/** @brief Send ordered by OpenCL events; *event completes when buf may be
    reused. */
MPIGPU_EXPORT int MPIX_Enqueue_send(const void *buf, int count, MPI_Datatype datatype, int dest,
                                    int tag, MPI_Comm comm, cl_command_queue queue,
                                    cl_uint num_events_in_wait_list,
                                    const cl_event *event_wait_list, cl_event *event);

/** @brief Receive ordered by OpenCL events; *event completes when buf holds
    the data. */
MPIGPU_EXPORT int MPIX_Enqueue_recv(void *buf, int count, MPI_Datatype datatype, int source,
                                    int tag, MPI_Comm comm, cl_command_queue queue,
                                    cl_uint num_events_in_wait_list,
                                    const cl_event *event_wait_list, cl_event *event);

/**
 * @brief An OpenCL event of context that completes when the MPI request
 * completes: any request, host or device, point-to-point or persistent.
 * *request is taken over and set to MPI_REQUEST_NULL; a persistent request
 * is freed once complete.
 */
MPIGPU_EXPORT int MPIX_Event_from_request(cl_context context, MPI_Request *request,
                                          cl_event *event);

/** @brief A send and a receive as one operation ordered by events (the
    receive is posted first); *event completes when both have. */
MPIGPU_EXPORT int MPIX_Enqueue_sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                        int dest, int sendtag, void *recvbuf, int recvcount,
                                        MPI_Datatype recvtype, int source, int recvtag,
                                        MPI_Comm comm, cl_command_queue queue,
                                        cl_uint num_events_in_wait_list,
                                        const cl_event *event_wait_list, cl_event *event);

/**
 * @brief Start a persistent request (MPI_Send_init, MPI_Recv_init, ...) in
 * queue order.  The request stays the caller's; it may be started again,
 * tested or freed once *event (or the queue) has completed.
 */
MPIGPU_EXPORT int MPIX_Enqueue_start(MPI_Request *request, cl_command_queue queue,
                                     cl_uint num_events_in_wait_list,
                                     const cl_event *event_wait_list, cl_event *event);

/**
 * @brief MPI_File_write_at ordered by events: the packed bytes of (buf,
 * count, datatype) go to fh at offset (in etypes of the file's view, which
 * applies).  buf may be a device address.
 */
MPIGPU_EXPORT int MPIX_Enqueue_file_write_at(MPI_File fh, MPI_Offset offset, const void *buf,
                                             int count, MPI_Datatype datatype,
                                             cl_command_queue queue,
                                             cl_uint num_events_in_wait_list,
                                             const cl_event *event_wait_list, cl_event *event);

/** @brief MPI_File_read_at ordered by events, into a host or device buffer. */
MPIGPU_EXPORT int MPIX_Enqueue_file_read_at(MPI_File fh, MPI_Offset offset, void *buf, int count,
                                            MPI_Datatype datatype, cl_command_queue queue,
                                            cl_uint num_events_in_wait_list,
                                            const cl_event *event_wait_list, cl_event *event);

#ifdef __cplusplus
}
#endif

#endif /* MPIGPU_H */
