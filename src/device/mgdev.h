/*
 * mgdev: the device layer's internal interface (settings, the chosen device,
 * per-context pack engines, error reporting).  Interposed MPI calls and the
 * MPIX_ API sit on top of it; it calls down into mgdt, mgpk and the registry.
 *
 * Ownership: mgdev_state holds one reference to the default context, device
 * and queue, and owns every mgpk_ctx_t it hands out through mgdev_ctx_get();
 * callers borrow them until MPI_Finalize.  Engines are created only when a
 * context becomes known (mgdev_setup, mgdev_queue_adopt, mgdev_ctx_add),
 * under mgdev_state.lock, never by an operation.
 */
#ifndef MGDEV_H
#define MGDEV_H

#include <mpi.h>
#include <pthread.h>

#include "mgdt.h"
#include "mgpk.h"
#include "registry.h"

/* The library's settings (common/mgparam_table.c: names, defaults, ranges),
   read once by mgdev_settings_read(). */
typedef struct mgdev_settings {
    char *device;                /* MPIGPU_DEVICE substring, NULL when unset */
    int device_index;            /* N of SUBSTRING:N (0 when absent) */
    mgpk_method_t method;        /* MPIGPU_PACK */
    int verbose;                 /* MPIGPU_VERBOSE */
    size_t chunk_bytes;          /* MPIGPU_CHUNK */
    int force_pipeline;          /* MPIGPU_FORCE_PIPELINE */
    int force_shared;            /* MPIGPU_FORCE_SHARED */
    char *cache_dir;             /* MPIGPU_CACHE_DIR resolved and created, NULL: no cache */
    size_t staging_max;          /* MPIGPU_STAGING_MAX: cap of the pinned staging pool */
    size_t staging_keep;         /* MPIGPU_STAGING_KEEP: host buffers of long messages kept */
    mgpk_dma_t host_dma;         /* MPIGPU_HOST_DMA */
    mgpk_calib_mode_t calibrate; /* MPIGPU_CALIBRATE */
    size_t span_bytes;    /* MPIGPU_SPAN: packed bytes per kernel work-item (0: per device) */
    int grid_words;       /* MPIGPU_GRID: words per work-item of the grid kernels, or off (-1) */
    int local_size;       /* MPIGPU_LOCAL: work-group size on GPUs (0: the default) */
    int p2p_protocol;     /* MPIGPU_P2P_PROTOCOL: MGDEV_P2P_* */
    size_t p2p_first;     /* MPIGPU_P2P_FIRST: bytes of a chunked message's first piece */
    size_t p2p_auto_min;  /* MPIGPU_P2P_AUTO_MIN: auto sends chunked from this many bytes */
    int p2p_host_recv;    /* MPIGPU_P2P_HOST_RECV: how a host receive takes the rest of a
                             message in pieces, MGDEV_HOST_RECV_* */
    int p2p_depth;        /* MPIGPU_P2P_DEPTH: pieces of one chunked message in flight */
    int p2p_shm;          /* MPIGPU_P2P_SHM: chunked messages between processes of one node
                             through rings of shared memory (on by default) */
    size_t p2p_shm_piece; /* MPIGPU_P2P_SHM_PIECE: bytes of one slot of such a ring */
    int p2p_shm_slots;    /* MPIGPU_P2P_SHM_SLOTS: slots of one ring */
    int p2p_test_granted; /* MPIGPU_P2P_TEST_GRANTED (tests): granted from the start */
    int kernel_switch_us; /* MPIGPU_KERNEL_SWITCH: a kernel's extra cost on a shared GPU */
    size_t inline_max;    /* MPIGPU_INLINE_MAX: writes below it as rectangles on a shared GPU */
    size_t shared_block;  /* MPIGPU_SHARED_BLOCK: bytes of a shared allocation's block */
    int shared_dirty;     /* MPIGPU_SHARED_DIRTY: dirty blocks held before a rolling flush */
    int shared_zero_copy; /* MPIGPU_SHARED_ZERO_COPY: zero copy where the device allows */
    size_t enqueue_queue_max; /* MPIGPU_ENQUEUE_QUEUE_MAX: enqueued (un)packs on the
                                 caller's queue up to this many packed bytes */
} mgdev_settings_t;

/* MPIGPU_P2P_PROTOCOL (doc/design.md, "Point-to-point"). */
enum {
    MGDEV_P2P_PLAIN = 0, /* every device message is one MPI message */
    MGDEV_P2P_CHUNKED,   /* from the first piece's length up: in pieces */
    MGDEV_P2P_AUTO       /* in pieces from MPIGPU_P2P_AUTO_MIN up, to a node lane's peer */
};

/* MPIGPU_P2P_HOST_RECV: what a host receive answers to a node lane offer. */
enum {
    MGDEV_HOST_RECV_PIECES = 0, /* yes: the rest of the message in pieces through the lane */
    MGDEV_HOST_RECV_MESSAGE     /* the rest as one MPI message, received in place */
};

/* Array bounds of the p2p engine; the settings table's ranges of
   MPIGPU_P2P_DEPTH and MPIGPU_P2P_SHM_SLOTS end at them (test_param checks). */
#define MGDEV_P2P_DEPTH_MAX 8
#define MGDEV_P2P_SHM_SLOTS_MAX 64

/* Fill *s from the environment through the settings table.  Returns
   MPI_ERR_OTHER with a message naming the variable and value when one is
   malformed. */
int mgdev_settings_read(mgdev_settings_t *s);
void mgdev_settings_free(mgdev_settings_t *s);
/* The mgpk view of the settings (borrows s's strings). */
mgpk_settings_t mgdev_settings_pack(const mgdev_settings_t *s);
const char *mgdev_method_name(mgpk_method_t m);

typedef struct mgdev_ctx_slot {
    cl_context context;
    mgpk_ctx_t *pk;
    /* pk's queue is the application's (the default queue, an adopted one):
       enqueued operations pack on own instead, made at their first need
       (mgdev_ctx_get under mgdev_own_scope) */
    int shared;
    mgpk_ctx_t *own;
} mgdev_ctx_slot_t;

typedef struct mgdev_state {
    int ready;      /* mgdev_setup() ran and mgdev_teardown() has not */
    int has_device; /* an OpenCL device is in use */
    mgdev_settings_t settings;
    cl_context context; /* default context, device and queue (retained) */
    cl_device_id device;
    cl_command_queue queue;
    mgpk_ctx_t *pk;          /* engine on the default queue */
    pthread_mutex_t lock;    /* guards the table and the defaults */
    mgdev_ctx_slot_t *slots; /* every engine made; later slots win */
    size_t nslots, slots_cap;
    int sharers; /* processes of the node on the default device (mgdev_loc_sharers) */
    /* The thread level the application was given (MPI_Init_thread's
       provided, MPI_Query_thread), set by the MPI face before the modules
       start; MPI itself may run at MPI_THREAD_MULTIPLE for the enqueue calls
       (src/mpi/enqueue.c). */
    int app_level;
} mgdev_state_t;

extern mgdev_state_t mgdev_state;

/* Set up after PMPI_Init and tear down before PMPI_Finalize (init.c). */
int mgdev_setup(void);
void mgdev_teardown(void);
/* MPI_ERR_OTHER with a message when no OpenCL device is in use. */
int mgdev_require_device(const char *fn);
/* Make context known: create its pack engine (on the context's first
   device, with a queue of its own) unless it has one.  The default device and
   MPIX_Gpu_set_queue make theirs in mgdev_setup and mgdev_queue_adopt;
   MPIX_Gpu_register calls this before it hands out an address.  Not under
   the p2p lock. */
int mgdev_ctx_add(cl_context context);
/* The pack engine of a known context (a lookup: every device address's
   context was made known when the address was made).  Under the calling
   thread's own scope (mgdev_own_scope), an engine whose queue no command of
   the application's can wait behind: for a context whose engine packs on the
   application's queue (the default queue, which MPIX_Gpu_get_device hands
   out, or one adopted with MPIX_Gpu_set_queue), a second engine with a queue
   of its own, made at the first such call (its auto table taken from the
   first engine's where that one is decided). */
int mgdev_ctx_get(cl_context context, mgpk_ctx_t **pk);
/* Turn the calling thread's own scope on or off (thread-local; off at a
   thread's start).  The enqueue calls turn it on while they build an
   operation and while they run a file access: an enqueued operation's
   commands must never queue up behind the application's commands that wait
   for its event (doc/design.md, "Enqueued operations"). */
void mgdev_own_scope(int on);
/* The default context and a queue of it that no command of the
   application's can wait behind: the queue of the default engine, or of its
   second engine where the first packs on the application's queue
   (mgdev_ctx_get's own scope; made at the first call).  The staging pool
   maps its buffers there.  NULLs without a device. */
int mgdev_default_own_queue(cl_context *context, cl_command_queue *queue);
/* A consistent snapshot of the defaults (any argument may be NULL). */
void mgdev_default_get(cl_context *context, cl_device_id *device, cl_command_queue *queue,
                       mgpk_ctx_t **pk);
/* Make queue's context and device the default (MPIX_Gpu_set_queue). */
int mgdev_queue_adopt(cl_command_queue queue);

/* Page-locked host ranges (pinned.c): the library's own (the staging pool's
   buffers, node lanes) and the application's (the _user pair, for
   MPIX_Gpu_host_register()).  mgdev_pinned says whether [ptr, ptr + len)
   lies inside one of either kind; remove returns whether ptr started one of
   its own kind, and removes it. */
int mgdev_pinned_add(const void *ptr, size_t len);
int mgdev_pinned_remove(const void *ptr);
int mgdev_pinned_add_user(const void *ptr, size_t len);
int mgdev_pinned_remove_user(const void *ptr);
int mgdev_pinned(const void *ptr, size_t len);
void mgdev_pinned_finalize(void);

/* The per-datatype method attribute (method.c): its keyval, created on first
   request; the method for dt (the attribute where set to kernel, copy or
   host, else MPIGPU_PACK); freed at teardown. */
int mgdev_pack_keyval(int *keyval);
mgpk_method_t mgdev_type_method(MPI_Datatype dt);
void mgdev_pack_keyval_free(void);

/* The counters of every pack engine made so far, summed (the fields that
   add up; the last_* fields stay zero).  Zeros before MPI_Init. */
void mgdev_pack_stats(mgpk_stats_t *sum);

#endif /* MGDEV_H */
