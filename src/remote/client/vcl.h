/*
 * libmpigpu-vcl.so internals: the virtual OpenCL platform "mpigpu virtual".
 *
 * Every OpenCL object is a plain struct whose first member is the ICD
 * dispatch pointer.  Objects are reference counted on the client; the proxy
 * holds one reference per wire ID, dropped by a RELEASE message when the
 * client object is freed.  One connection (mgvcl_conn_t) per proxy carries a
 * command lane (read by a receiver thread: replies and event completions)
 * and a bulk lane of one or more TCP stripes (each read by a thread of its
 * own: read data; with several, each written by a thread of its own too:
 * write data, chunk k of all write chunks on stripe k mod nstripes).
 */
#ifndef MGVCL_VCL_H
#define MGVCL_VCL_H

#define CL_TARGET_OPENCL_VERSION 120
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_0_APIS
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_icd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "bulk.h"
#include "mglog.h"
#include "transport.h"

/* Every OpenCL entry point this ICD defines, named mgvcl_clXxx (its type is
 * the OpenCL prototype's).  The ICD loader reaches them through the
 * dispatch table (vcl_icd.c), the first member of every object. */
#define MGVCL_ENTRY_POINTS(X)                                                                      \
    X(clBuildProgram)                                                                              \
    X(clCompileProgram)                                                                            \
    X(clCreateBuffer)                                                                              \
    X(clCreateCommandQueue)                                                                        \
    X(clCreateContext)                                                                             \
    X(clCreateContextFromType)                                                                     \
    X(clCreateImage)                                                                               \
    X(clCreateImage2D)                                                                             \
    X(clCreateImage3D)                                                                             \
    X(clCreateKernel)                                                                              \
    X(clCreateKernelsInProgram)                                                                    \
    X(clCreateProgramWithBinary)                                                                   \
    X(clCreateProgramWithSource)                                                                   \
    X(clCreateSampler)                                                                             \
    X(clCreateSubBuffer)                                                                           \
    X(clCreateSubDevices)                                                                          \
    X(clCreateUserEvent)                                                                           \
    X(clEnqueueBarrier)                                                                            \
    X(clEnqueueBarrierWithWaitList)                                                                \
    X(clEnqueueCopyBuffer)                                                                         \
    X(clEnqueueCopyBufferRect)                                                                     \
    X(clEnqueueCopyBufferToImage)                                                                  \
    X(clEnqueueCopyImage)                                                                          \
    X(clEnqueueCopyImageToBuffer)                                                                  \
    X(clEnqueueFillBuffer)                                                                         \
    X(clEnqueueFillImage)                                                                          \
    X(clEnqueueMapBuffer)                                                                          \
    X(clEnqueueMapImage)                                                                           \
    X(clEnqueueMarker)                                                                             \
    X(clEnqueueMarkerWithWaitList)                                                                 \
    X(clEnqueueMigrateMemObjects)                                                                  \
    X(clEnqueueNDRangeKernel)                                                                      \
    X(clEnqueueNativeKernel)                                                                       \
    X(clEnqueueReadBuffer)                                                                         \
    X(clEnqueueReadBufferRect)                                                                     \
    X(clEnqueueReadImage)                                                                          \
    X(clEnqueueTask)                                                                               \
    X(clEnqueueUnmapMemObject)                                                                     \
    X(clEnqueueWaitForEvents)                                                                      \
    X(clEnqueueWriteBuffer)                                                                        \
    X(clEnqueueWriteBufferRect)                                                                    \
    X(clEnqueueWriteImage)                                                                         \
    X(clFinish)                                                                                    \
    X(clFlush)                                                                                     \
    X(clGetCommandQueueInfo)                                                                       \
    X(clGetContextInfo)                                                                            \
    X(clGetDeviceIDs)                                                                              \
    X(clGetDeviceInfo)                                                                             \
    X(clGetEventInfo)                                                                              \
    X(clGetEventProfilingInfo)                                                                     \
    X(clGetExtensionFunctionAddress)                                                               \
    X(clGetExtensionFunctionAddressForPlatform)                                                    \
    X(clGetImageInfo)                                                                              \
    X(clGetKernelArgInfo)                                                                          \
    X(clGetKernelInfo)                                                                             \
    X(clGetKernelWorkGroupInfo)                                                                    \
    X(clGetMemObjectInfo)                                                                          \
    X(clGetPlatformIDs)                                                                            \
    X(clGetPlatformInfo)                                                                           \
    X(clGetProgramBuildInfo)                                                                       \
    X(clGetProgramInfo)                                                                            \
    X(clGetSamplerInfo)                                                                            \
    X(clGetSupportedImageFormats)                                                                  \
    X(clIcdGetPlatformIDsKHR)                                                                      \
    X(clLinkProgram)                                                                               \
    X(clReleaseCommandQueue)                                                                       \
    X(clReleaseContext)                                                                            \
    X(clReleaseDevice)                                                                             \
    X(clReleaseEvent)                                                                              \
    X(clReleaseKernel)                                                                             \
    X(clReleaseMemObject)                                                                          \
    X(clReleaseProgram)                                                                            \
    X(clReleaseSampler)                                                                            \
    X(clRetainCommandQueue)                                                                        \
    X(clRetainContext)                                                                             \
    X(clRetainDevice)                                                                              \
    X(clRetainEvent)                                                                               \
    X(clRetainKernel)                                                                              \
    X(clRetainMemObject)                                                                           \
    X(clRetainProgram)                                                                             \
    X(clRetainSampler)                                                                             \
    X(clSetCommandQueueProperty)                                                                   \
    X(clSetEventCallback)                                                                          \
    X(clSetKernelArg)                                                                              \
    X(clSetMemObjectDestructorCallback)                                                            \
    X(clSetUserEventStatus)                                                                        \
    X(clUnloadCompiler)                                                                            \
    X(clUnloadPlatformCompiler)                                                                    \
    X(clWaitForEvents)
#define MGVCL_DECLARE(name) extern __typeof__(name) mgvcl_##name;
MGVCL_ENTRY_POINTS(MGVCL_DECLARE)
#undef MGVCL_DECLARE
/* The loader looks up a few entry points by their OpenCL names (vcl.map):
 * each is exported as an alias of its mgvcl_ definition, in the same file. */
#define MGVCL_LOADER_ALIAS(name)                                                                   \
    extern __typeof__(name) name __attribute__((alias("mgvcl_" #name), visibility("default")));

extern struct _cl_icd_dispatch mgvcl_dispatch;

typedef struct mgvcl_conn mgvcl_conn_t;

typedef struct dev_param {
    cl_uint param;
    size_t size;
    void *value;
} dev_param_t;

struct _cl_platform_id {
    struct _cl_icd_dispatch *dispatch;
};

struct _cl_device_id {
    struct _cl_icd_dispatch *dispatch;
    mgvcl_conn_t *conn;
    uint32_t idx; /* index among the proxy's served devices */
    cl_device_type type;
    size_t nparams;
    dev_param_t *params;
};

/* The proxies one context may span (vcl_multi.c). */
#define MGVCL_MAX_CONNS 32

/* A context over the devices of one proxy or several: a native context of
 * the same ID on each (conns[0] == conn, the first device's, where buffers
 * are born).  With several, hq[i] is the context's own queue on conns[i]
 * (made on first use: the sending side of proxy-to-proxy transfers), and
 * mig_lock makes each command that uses buffers one step for their homes. */
struct _cl_context {
    struct _cl_icd_dispatch *dispatch;
    atomic_int refs;
    uint64_t id;
    mgvcl_conn_t *conn;
    cl_uint ndev;
    cl_device_id *devs;
    cl_context_properties props[3];
    size_t nprops;
    cl_uint nconn;
    mgvcl_conn_t *conns[MGVCL_MAX_CONNS];
    struct _cl_command_queue *hq[MGVCL_MAX_CONNS];
    pthread_mutex_t mig_lock;
};

struct _cl_command_queue {
    struct _cl_icd_dispatch *dispatch;
    atomic_int refs;
    uint64_t id;
    cl_context ctx;
    cl_device_id dev;
    mgvcl_conn_t *conn; /* the device's proxy */
    cl_command_queue_properties props;
    int pending; /* commands not complete yet; under the connection lock */
    int failed;  /* a command failed since the last clFinish */
};

typedef struct mem_cb {
    struct mem_cb *next;
    void(CL_CALLBACK *fn)(cl_mem, void *);
    void *data;
} mem_cb_t;

struct _cl_mem {
    struct _cl_icd_dispatch *dispatch;
    atomic_int refs;
    uint64_t id;
    cl_context ctx;
    cl_mem_flags flags;
    size_t size, origin;
    void *host_ptr;
    cl_mem parent;
    atomic_int maps;
    mem_cb_t *cbs;
    /* images (vcl_image.c); type 0: a buffer */
    cl_mem_object_type type;
    cl_image_format fmt;
    cl_image_desc desc; /* desc.buffer: the client's buffer (also parent) */
    size_t elem;        /* bytes of one pixel */
    size_t hrp, hsp;    /* CL_MEM_USE_HOST_PTR: the host image's pitches */
    /* contexts of several proxies (vcl_multi.c, under ctx->mig_lock): the
     * proxies (ctx->conns indices) that have the object, where its data
     * lives now (a buffer's; a sub-buffer follows its parent), and the last
     * command that used it there */
    uint32_t made;
    int home;
    cl_event last;
    int fresh; /* no contents yet (made without host data, never used): moves carry nothing */
};

struct _cl_sampler {
    struct _cl_icd_dispatch *dispatch;
    atomic_int refs;
    uint64_t id;
    cl_context ctx;
    cl_bool normalized;
    cl_addressing_mode addressing;
    cl_filter_mode filter;
};

struct _cl_program {
    struct _cl_icd_dispatch *dispatch;
    atomic_int refs;
    uint64_t id;
    cl_context ctx;
    char *source;
    int arg_info;  /* built with -cl-kernel-arg-info, or not from source */
    uint32_t made; /* ctx->conns that have it */
};

typedef struct karg {
    uint8_t kind; /* enum mgw_argkind, 0xff unknown */
    uint8_t set;
    uint32_t dirty;      /* the proxies (ctx->conns indices) that have not had this value */
    struct _cl_mem *mem; /* a buffer argument's object (to move it where the launch runs) */
    size_t want;         /* the value's size from its type name, 0 unknown */
    size_t size;
    unsigned char *val; /* value bytes, or the u64 wire ID of a buffer */
} karg_t;

struct _cl_kernel {
    struct _cl_icd_dispatch *dispatch;
    atomic_int refs;
    uint64_t id;
    cl_program prog;
    char *name;
    cl_uint nargs;
    karg_t *args;
    uint32_t made; /* ctx->conns that have it */
};

typedef struct ev_cb {
    struct ev_cb *next;
    void(CL_CALLBACK *fn)(cl_event, cl_int, void *);
    void *data;
    cl_int when;
} ev_cb_t;

struct _cl_event {
    struct _cl_icd_dispatch *dispatch;
    atomic_int refs;
    uint64_t id;
    mgvcl_conn_t *conn;
    cl_context ctx;
    cl_command_queue q; /* NULL for user events */
    cl_command_type type;
    cl_int status; /* under the connection lock */
    int data;      /* a read: completes when its data has arrived */
    /* a read's chunks, under the connection lock: bytes accepted (claimed)
     * and copied (got); the end chunk (ended) says how many bytes come in
     * all (expect) and the status (est); busy: copies in progress, during
     * which nothing completes the event (failst: a failure held until then) */
    size_t claimed, got, expect;
    int ended, busy, rdone;
    cl_int est, failst;
    int in_table;
    struct _cl_event *hnext; /* connection's table of incomplete events */
    unsigned char *dst;      /* read destination (or packed temp for rects) */
    size_t dsize;
    /* rect read: unpack from dst into host memory */
    unsigned char *host;
    size_t reg[3], hrp, hsp;
    void *free_after; /* freed when complete (map copies, temps) */
    ev_cb_t *cbs;
    struct mgvcl_standin *stand; /* its stand-ins on other proxies (under the lock) */
    /* commands of other proxies in its wait list (held): when it completes
     * they have, whichever notice reached the client first (vcl_multi.c) */
    struct _cl_event **deps;
    cl_uint ndeps;
};

/* A user event on another proxy that stands for an event in a wait list
 * there (vcl_multi.c): set when the event completes, with its status. */
typedef struct mgvcl_standin {
    struct mgvcl_standin *next;
    mgvcl_conn_t *c;
    uint64_t id;
    int created; /* its USER_EVENT_CREATE is sent: a USER_EVENT_SET may follow */
    int due;     /* the event completed before: set it once created */
} mgvcl_standin_t;

/* Connections (vcl_conn.c) */
#define MGVCL_HASH 1024
#define MGVCL_REL_BATCH 64 /* event releases sent together (or after at most 1 s) */

/* A write chunk posted to a stripe's sender thread. */
typedef struct mgvcl_tx {
    struct mgvcl_tx *next;
    mgtr_chunk_t ch;
    const void *p;
    size_t *left; /* the posting call's chunks not sent yet (under tx_lock) */
    int *failed;
} mgvcl_tx_t;

/* One TCP connection of the bulk lane. */
typedef struct mgvcl_stripe {
    mgvcl_conn_t *c;
    mgtr_ep_t *ep;
    mgtr_bulk_t bk; /* stripe 0 of one: stream, or shm with a proxy on this host */
    pthread_t rx, tx;
    mgvcl_tx_t *head, **tail; /* under c->tx_lock */
} mgvcl_stripe_t;

struct mgvcl_conn {
    const mgtr_transport_t *t;
    mgtr_ep_t *cmd;
    char addr[128];
    pthread_mutex_t cmd_lock;  /* command-lane sends */
    pthread_mutex_t bulk_lock; /* bulk-lane sends, with the command that owns them */
    unsigned nstripes;         /* the bulk lane's stripes (granted by the proxy) */
    mgvcl_stripe_t stripe[MGW_STREAMS_MAX];
    unsigned long long wnext; /* stripe of the next write chunk, mod nstripes (bulk_lock) */
    pthread_mutex_t tx_lock;  /* the stripes' send queues */
    pthread_cond_t tx_cond;
    uint32_t seq;
    atomic_uint_fast64_t next_id;
    atomic_int dead; /* set once, under the client lock; read with or without it */
    struct pend *pend;
    cl_event ev[MGVCL_HASH];
    int nev; /* events in ev[]; under mgvcl_lock */
    cl_uint ndev;
    struct _cl_device_id *devs;
    pthread_t rx_cmd, heartbeat;
    atomic_llong last_rx;     /* ms, monotonic: the last message from the proxy */
    int cma;                  /* the one-copy lane is on: plain writes and reads name host ranges */
    pthread_mutex_t rel_lock; /* rel, nrel */
    uint64_t rel[MGVCL_REL_BATCH]; /* events released here, not yet on the proxy */
    int nrel;
    unsigned char cma_nonce[MGTR_CMA_NONCE]; /* the proxy's probe reads it here */
    /* the session's peer lane (PEER_OPEN, once; vcl_multi.c's lock) */
    int peer_ok;
    uint8_t peer_sid[MGW_TOKEN], peer_key[MGW_TOKEN];
};

/* The one lock of the event state (statuses, tables, queue counters). */
extern pthread_mutex_t mgvcl_lock;
extern pthread_cond_t mgvcl_cond;

/* Init from the environment; returns the connections (may be 0). */
int mgvcl_init(mgvcl_conn_t ***conns, int *nconns);
extern struct _cl_platform_id mgvcl_platform;
uint64_t mgvcl_id(mgvcl_conn_t *c);
/* Sends an asynchronous message; CL_SUCCESS or CL_DEVICE_NOT_AVAILABLE. */
cl_int mgvcl_send(mgvcl_conn_t *c, mgw_buf_t *b);
/* Sends a request and waits for its reply: returns the reply's cl_int;
 * *reply (malloc'd, caller frees) and *len get the rest of the payload: the
 * op's reply fields when CL_SUCCESS (mgw_<op>_reply_decode). */
cl_int mgvcl_call(mgvcl_conn_t *c, mgw_buf_t *b, uint8_t **reply, size_t *len);
/* Sends a command and then its data on the bulk lane, in order. */
cl_int mgvcl_send_bulk(mgvcl_conn_t *c, mgw_buf_t *b, uint64_t xfer, const void *p, size_t n);
/* A generic info query answered by the proxy. */
cl_int mgvcl_info(mgvcl_conn_t *c, int kind, uint64_t id, uint64_t aux, cl_uint param, size_t size,
                  void *value, size_t *size_ret);
/* Releases the proxy's object; events go in batches (RELEASE_EVENTS). */
void mgvcl_release_remote(mgvcl_conn_t *c, int kind, uint64_t id);
extern atomic_ulong mgvcl_msgs, mgvcl_bytes_out, mgvcl_bytes_in;
/* bytes the proxy was asked to copy from / into this process (one-copy lane) */
extern atomic_ulong mgvcl_cma_out, mgvcl_cma_in;

/* Copies a value out per the OpenCL info-query rules. */
cl_int mgvcl_ret(const void *v, size_t n, size_t size, void *value, size_t *size_ret);

/* Events (vcl_event.c) */
cl_event mgvcl_event_new(cl_context ctx, cl_command_queue q, cl_command_type type);
/* Marks complete (status <= 0), runs callbacks, drops the table's ref. */
void mgvcl_event_complete(cl_event e, cl_int status);
cl_event mgvcl_event_find(mgvcl_conn_t *c, uint64_t id); /* under the lock */
void mgvcl_conn_fail(mgvcl_conn_t *c);
void mgvcl_event_unref(cl_event e);
/* An enqueue being made: its event, and the head of its message (queue,
 * event, wait list; the list's IDs in wbuf, or malloc'd when longer). */
typedef struct mgvcl_enq {
    cl_event ev;
    mgw_enq_head_t head;
    uint64_t wbuf[16];
    uint64_t *wids;
    /* contexts of several proxies: the wait list's room (wids), and events
     * of moves made for the command, held until it is sent */
    cl_uint wcap;
    cl_event *hold;
    cl_uint nhold;
    int locked; /* ctx->mig_lock held from begin to end */
} mgvcl_enq_t;
/* The start of every enqueue: checks q and the wait list, makes the event
 * and fills e; the caller encodes its message with e->head and hands it to
 * mgvcl_enq_end.  On an error nothing is left to free. */
cl_int mgvcl_enq_begin(cl_command_queue q, cl_uint nw, const cl_event *w, cl_command_type t,
                       mgvcl_enq_t *e);
/* A begun command that is not sent: its event fails with rc, e is freed. */
void mgvcl_enq_abort(mgvcl_enq_t *e, cl_int rc);
/* Sends b (and data on the bulk lane when p; b NULL: sent already), hands
 * out the event, waits if blocking; frees what e holds. */
cl_int mgvcl_enq_end(cl_command_queue q, mgvcl_enq_t *e, mgw_buf_t *b, cl_event *out,
                     cl_bool blocking, uint64_t xfer, const void *p, size_t n);
/* Contexts of several proxies (vcl_multi.c).  The index of c among
 * ctx->conns, or -1. */
int mgvcl_ctx_ci(cl_context ctx, mgvcl_conn_t *c);
/* Puts w's ID, or for an event of another proxy than q's its stand-in's
 * there, at the end of e's wait list (nothing for one complete already);
 * CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST for one failed. */
cl_int mgvcl_wait_add(mgvcl_enq_t *e, cl_command_queue q, cl_event w);
/* m (a buffer, or a sub-buffer) is used by the command e on q: its data
 * moves to q's proxy first (proxy to proxy; e waits for the move), and the
 * command becomes its last.  No-op in a context of one proxy. */
cl_int mgvcl_mem_use(mgvcl_enq_t *e, cl_command_queue q, cl_mem m);
/* The same, content 0: the data need not come (CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED). */
cl_int mgvcl_mem_move(mgvcl_enq_t *e, cl_command_queue q, cl_mem m, int content);
/* A command that reads src's [so, so + n) where src lives and writes it into
 * dst at dof on q's proxy, straight from proxy to proxy (e: on q, begun);
 * 1 when src lives on q's proxy (the caller copies as usual), else the
 * transfer's result (the caller still ends e). */
int mgvcl_copy_peer(mgvcl_enq_t *e, cl_command_queue q, cl_mem src, cl_mem dst, size_t so,
                    size_t dof, size_t n, cl_int *rc);
/* MPIGPU_VCL_PEER_EVENTS (vcl_conn.c reads it): 1, the proxy of an event
 * in another proxy's wait list tells that proxy itself; 0, only the client. */
extern int mgvcl_forward;
/* The extension clEnqueueBroadcastWriteBufferMPIGPU (vcl_multi.c; its man
 * page: doc/man/man3): the data leaves the client once and fans out from
 * proxy to proxy in a binary tree. */
cl_int CL_API_CALL mgvcl_broadcast_write(cl_uint nb, const cl_command_queue *queues,
                                         const cl_mem *bufs, cl_bool blocking, size_t off, size_t n,
                                         const void *ptr, cl_uint nw, const cl_event *w,
                                         cl_event *events);
/* The same for clEnqueueCopyBufferRect: the rect goes packed, proxy to proxy. */
int mgvcl_copy_rect_peer(mgvcl_enq_t *e, cl_command_queue q, cl_mem src, cl_mem dst,
                         const size_t *so, const size_t *dof, const size_t *reg, size_t srp,
                         size_t ssp, size_t drp, size_t dsp, cl_int *rc);
/* The remote objects of a context of several proxies. */
cl_int mgvcl_ctx_make(cl_context ctx);
void mgvcl_ctx_unmake(cl_context ctx);
void mgvcl_mem_unmake(cl_mem m);
/* A completed event's stand-ins are set (mgvcl_event_complete) and
 * released (mgvcl_event_unref). */
void mgvcl_standins_set(cl_event e, cl_int status);
void mgvcl_standins_free(cl_event e);
/* Before e completes with success: its commands of other proxies complete
 * first (their own proxy's notice may still be on its way); then they are
 * let go (mgvcl_deps_free, also from mgvcl_event_unref). */
void mgvcl_deps_complete(cl_event e);
void mgvcl_deps_free(cl_event e);
/* Sends b to each conn of ctx in mask (mgvcl_call); the first error. */
cl_int mgvcl_call_each(cl_context ctx, uint32_t mask, mgw_buf_t *b, uint32_t *made);
int mgvcl_is(const void *obj);     /* object of this ICD (dispatch check) */
int mgvcl_mem_live(const void *p); /* p is a live cl_mem of this ICD */
/* clEnqueueWriteBuffer whose data has left src when it returns (never the
 * one-copy lane): src may be freed at once (unmap's host copy) */
cl_int mgvcl_write_now(cl_command_queue q, cl_mem m, size_t off, size_t n, const void *src,
                       cl_uint nw, const cl_event *w, cl_event *out);
/* Buffers (vcl_mem.c): a new cl_mem of ctx with a fresh ID, and its entry in
 * the live list once the proxy has made it. */
cl_mem mgvcl_mem_new(cl_context ctx, cl_mem_flags flags, size_t size);
void mgvcl_mem_made(cl_mem m);
/* Images (vcl_image.c): 1 for an image; the unmap of an image's mapping. */
int mgvcl_is_image(cl_mem m);
cl_int mgvcl_image_unmap(cl_command_queue q, cl_mem m, void *p, cl_uint nw, const cl_event *w,
                         cl_event *out);
/* clEnqueueReadBuffer without the host-access check (for maps) */
cl_int mgvcl_read_any(cl_command_queue q, cl_mem m, cl_bool blocking, size_t off, size_t n,
                      void *dst, cl_uint nw, const cl_event *w, cl_event *out);

#endif
