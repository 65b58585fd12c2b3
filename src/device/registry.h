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
/* 1 when any byte of [ptr, ptr + len) lies in the reserved range (lock-free). */
int mgdev_reg_in_range(const void *ptr, size_t len);
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
int mgdev_buf_is_device(const void *buf, MPI_Count count, MPI_Datatype dt);

#endif /* MGDEV_REGISTRY_H */
