/*
 * Device addresses (GMAC-style, see doc/design.md): a large PROT_NONE range of
 * the host address space is reserved once; each device allocation or
 * registration is handed a sub-range of it, so a device address is an
 * ordinary pointer value that the host can never dereference by accident and
 * that pointer arithmetic keeps meaningful.  No MPI calls and no OpenCL calls
 * other than clRetainMemObject/clReleaseMemObject.
 *
 * Ownership: an entry retains its cl_mem from mgdev_reg_insert() until
 * mgdev_reg_remove() or mgdev_reg_finalize().  The cl_context is borrowed (the
 * cl_mem keeps it alive).  Entries handed out by lookup/remove are copies; the
 * cl_mem in a copy is not retained for the caller.
 *
 * Freed ranges go to a quarantine and are handed out again last, oldest
 * first, so that a stale pointer meets an unmapped hole (mgdev_reg_why names
 * the freed range).  The reservation stays mapped PROT_NONE after
 * mgdev_reg_finalize(): an old device address never becomes a host address.
 *
 * Thread safety: lookups run concurrently under a read lock; insert and remove
 * take the write lock.  Freeing an address while another thread uses it is
 * erroneous, as with host memory.
 */
#ifndef MGDEV_REGISTRY_H
#define MGDEV_REGISTRY_H

#include <CL/cl.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "mgdt.h"

typedef struct mgdev_reg_entry {
    uintptr_t base;     /* device address of byte 0 */
    size_t size;        /* bytes of the buffer (0 allowed) */
    size_t span;        /* reserved bytes, including the guard gap */
    cl_mem mem;         /* retained by the registry */
    cl_context context; /* CL_MEM_CONTEXT of mem */
    int owned;          /* 1: MPIX_Gpu_malloc, 0: MPIX_Gpu_register */
    char *host;         /* zero copy: the buffer's own storage, readable and
                           writable by the host once the device is idle (a
                           CPU device, mgdev_zero_copy_alloc), else NULL */

    /* MPIX_Gpu_malloc_shared: the allocation's state (shared.h), else NULL;
       it lives until mgdev_shared_finalize() */
    struct mgdev_shared *shared;
} mgdev_reg_entry_t;

/* Address alignment and minimum guard gap between two sub-ranges. */
#define MGDEV_REG_ALIGN 256

/* The most freed ranges held in quarantine; a free past it ends the
   quarantine of the oldest.  Address space is not what runs short: the
   reservation is PROT_NONE and MAP_NORESERVE, and an allocation that finds no
   free hole takes quarantined space back (oldest first), so the quarantine
   never makes one fail.  What grows is the bookkeeping, one 32-byte record
   per range (2 MiB at this bound), and the scan that explains a stale
   address on an error path (65,536 compares).  At this bound a stale pointer
   is reported as freed until 65,536 later frees, or until the address space
   runs out. */
#define MGDEV_REG_QUARANTINE_RANGES ((size_t)1 << 16)

/* Enough for a message of mgdev_reg_why(). */
#define MGDEV_REG_WHY_LEN 256

/* Reserve the address range (once per process; a later call after
   mgdev_reg_finalize() reuses it).  Returns MPI_SUCCESS or MPI_ERR_NO_MEM. */
int mgdev_reg_init(void);
/* Release every entry left and the bookkeeping.  The range stays reserved
   and inaccessible, and mgdev_reg_in_range() still recognizes it. */
void mgdev_reg_finalize(void);

/* Give mem (size bytes, of context) a new device address in *ptr.  mem is
   retained.  Registering one cl_mem twice yields two distinct addresses. */
int mgdev_reg_insert(cl_mem mem, cl_context context, size_t size, int owned, void **ptr);
/* The same with the base aligned to align (a power of two, at least
   MGDEV_REG_ALIGN) and the span a multiple of it, guard included: a shared
   allocation (shared.h) owns whole pages, and its entry records sh. */
int mgdev_reg_insert_aligned(cl_mem mem, cl_context context, size_t size, size_t align,
                             struct mgdev_shared *sh, void **ptr);
/* Give the entry whose base is ptr, inserted with a NULL mem, its buffer
   (retained) and host storage (may be NULL): a zero-copy shared buffer
   needs its address before it exists. */
void mgdev_reg_attach(void *ptr, cl_mem mem, char *host);
/* Record the host storage of the entry whose base is ptr (see .host). */
void mgdev_reg_set_host(void *ptr, char *host);
/* Remove the entry whose base is exactly ptr and whose owned flag is
   expect_owned; its cl_mem is released.  *entry (may be NULL) receives a copy.
   Returns MPI_ERR_BUFFER, with a message naming ptr, otherwise. */
int mgdev_reg_remove(const void *ptr, int expect_owned, mgdev_reg_entry_t *entry);
/* 1 when ptr is a device address: byte *offset of the live entry copied into
   *entry (either may be NULL).  A size-0 entry matches its base only.
   0 for host addresses and for unused parts of the reserved range. */
int mgdev_reg_lookup(const void *ptr, mgdev_reg_entry_t *entry, size_t *offset);
/* The reserved range: mapped by the first mgdev_reg_init(), before other
   threads use the library, never unmapped, so read without a lock (base 0
   before). */
typedef struct mgdev_res {
    uintptr_t base;
    size_t size;
} mgdev_res_t;
extern __attribute__((visibility("hidden"))) mgdev_res_t mgdev_res;

/* 1 when any byte of [ptr, ptr + len) lies in the reserved range (lock-free). */
static inline int mgdev_reg_in_range(const void *ptr, size_t len)
{
    uintptr_t p = (uintptr_t)ptr, base = mgdev_res.base;
    if (!base || len == 0)
        return 0;
    uintptr_t last = p + len - 1 < p ? UINTPTR_MAX : p + len - 1;
    return p < base + mgdev_res.size && last >= base;
}
/* What ptr is, for the message of a call that found it in no live entry:
   "device address P lies in a freed range (N bytes at Q, freed by
   MPIX_Gpu_free)", "... past the end of the device allocation [B, E) ...",
   "... in no allocation ...", or that it is a host address.  Writes it to buf
   (len bytes, MGDEV_REG_WHY_LEN is enough) and returns buf. */
const char *mgdev_reg_why(const void *ptr, char *buf, size_t len);

/* Statistics for tests: bytes of the reserved range in use (spans of live
   entries) and the highest offset ever handed out. */
void mgdev_reg_usage(size_t *in_use, size_t *high_water, size_t *reserved);
/* Statistics for tests: freed ranges in quarantine and their bytes (spans). */
void mgdev_reg_quarantine(size_t *ranges, size_t *bytes);

/* What count instances of dt at buf touch (cheap: two extent queries, no
   lock): MGDEV_BUF_HOST (0) when no byte lies in the reserved device range;
   MGDEV_BUF_DEVICE when some does; MGDEV_BUF_SPAN when the bytes span more
   than an int64 or an address holds (MPI's extents wrapped) and their origin
   is in the reserved range, or they could reach it.  The device paths refuse
   a call of either kind cleanly (mgdt_type_get, mgdt_span); only a host one
   goes to MPI. */
#define MGDEV_BUF_HOST 0
#define MGDEV_BUF_DEVICE 1
#define MGDEV_BUF_SPAN 2
static inline int mgdev_buf_is_device(const void *buf, MPI_Count count, MPI_Datatype dt);
/* The same, out of line (a derived type, a device buffer, an odd span). */
int mgdev_buf_is_device_any(const void *buf, MPI_Count count, MPI_Datatype dt);

/* mgdev_buf_is_device past the type's layout: true lower bound tlb, true
   extent tex and extent ext (out of line). */
int mgdev_buf_classify(const void *buf, MPI_Count count, MPI_Datatype dt, MPI_Count tlb,
                       MPI_Count tex, MPI_Count ext);

/* The common case, cheap: a positive count and true extent below 2^31, an
   extent and a true lower bound within +-2^31 and an address below 2^62
   keep every product, sum and address below 2^63. */
#define MGDEV_BUF_SMALL(buf_, count_, tlb_, tex_, ext_)                                            \
    (((((uint64_t)(count_)-1) | ((uint64_t)(tex_)-1)) >> 31) == 0 &&                               \
     ((((uint64_t)(ext_) + ((uint64_t)1 << 31)) | ((uint64_t)(tlb_) + ((uint64_t)1 << 31))) >>     \
      32) == 0 &&                                                                                  \
     ((uintptr_t)(buf_) >> 62) == 0)

/* 1 when the bytes bytes from buf (1 <= bytes < 2^62) are host memory for
   certain, with no call: mgdev_buf_is_device answers MGDEV_BUF_HOST for a
   type whose count instances are these bytes (mgdt_layout_t.dense).  0 when
   they touch the device range, and for an address from 2^62 up or
   MPI_IN_PLACE (ask mgdev_buf_is_device then). */
static inline int mgdev_bytes_host_quick(const void *buf, uint64_t bytes)
{
    uintptr_t b = (uintptr_t)buf, base = mgdev_res.base;
    /* (MPICH's MPI_IN_PLACE lies above 2^62: its test folds away) */
    if ((b >> 62) != 0 || (((uintptr_t)MPI_IN_PLACE >> 62) == 0 && buf == MPI_IN_PLACE))
        return 0;
    /* mgdev_reg_in_range(buf, bytes) is 0 */
    return b + bytes <= base || b >= base + mgdev_res.size || !base;
}

static inline int mgdev_buf_is_device(const void *buf, MPI_Count count, MPI_Datatype dt)
{
    /* The common case inline: a dense predefined type at its first slot,
       fewer than 2^31 instances (their bytes below 2^62), host memory. */
    const mgdt_layout_t *l = mgdt_predefined_dense(dt);
    if (l && count > 0 && count < ((MPI_Count)1 << 31) &&
        mgdev_bytes_host_quick(buf, (uint64_t)count * (uint64_t)l->size))
        return MGDEV_BUF_HOST;
    return mgdev_buf_is_device_any(buf, count, dt);
}

/* mgdev_buf_is_device for count instances of the predefined type of layout
   l (mgdt_predefined's answer for it), without a lookup: the same answer,
   inline in the common case (every host call of a predefined type). */
static inline int mgdev_buf_is_device_layout(const void *buf, MPI_Count count,
                                             const mgdt_layout_t *l)
{
    MPI_Count tlb = l->true_lb, tex = l->true_extent, ext = l->extent;
    if (__builtin_expect(MGDEV_BUF_SMALL(buf, count, tlb, tex, ext) && buf != MPI_IN_PLACE, 1)) {
        int64_t span = (count - 1) * ext, lo = (span < 0 ? span : 0) + tlb;
        int64_t first = (int64_t)(uintptr_t)buf + lo;
        if (first >= 0)
            return mgdev_reg_in_range((const void *)(uintptr_t)first,
                                      (size_t)((span > 0 ? span : 0) + tlb + tex - lo));
    }
    if (count <= 0)
        return mgdev_buf_is_device_any(buf, count, l->dt);
    return mgdev_buf_classify(buf, count, l->dt, tlb, tex, ext);
}

#endif /* MGDEV_REGISTRY_H */
