/*
 * The staging pool (staging.c): page-locked host buffers on the default
 * context for pieces of device messages, and kept pageable buffers for long
 * ones.  Part of the device face; the point-to-point engine and the MPI face
 * borrow its buffers.
 *
 * Ownership: the pool owns every staging buffer; a caller borrows one
 * between mgdev_stage_get() and mgdev_stage_put().  A parked buffer is still
 * its borrower's, but the pool may take it back when it runs out.
 *
 * Thread safety: the pool has no lock of its own; every caller holds the
 * point-to-point engine's lock (mgp2p_lock, p2p.h), which serializes it.
 */
#ifndef MGDEV_STAGING_H
#define MGDEV_STAGING_H

#include <stddef.h>

#include <CL/cl.h>

typedef struct mgdev_stage {
    struct mgdev_stage *next;   /* free or parked list */
    struct mgdev_stage **owner; /* parked: the operation's slot, cleared on reclaim */
    cl_mem mem;                 /* CL_MEM_ALLOC_HOST_PTR on the default context, mapped once */
    cl_command_queue queue;     /* the mapping's (retained): mgdev_default_own_queue */
    char *ptr;                  /* the mapping */
    size_t size;
} mgdev_stage_t;

/* Create the pool (nothing is allocated until first use). */
void mgdev_stage_init(size_t cap, size_t keep);
/* Unmap and release every buffer; none may be borrowed. */
void mgdev_stage_finalize(void);
/* A buffer of at least want bytes (want <= mgdev_stage_chunk()), or *s = NULL
   when the pool is at its cap and every buffer is borrowed: try again after
   some operation progressed.  Returns an MPI error code. */
int mgdev_stage_get(size_t want, mgdev_stage_t **s);
/* A buffer of at least want bytes (want > mgdev_stage_chunk()) for a long
   plain message, in the pool's power-of-two classes up to the cap, or *s =
   NULL when the cap does not allow one now (the caller takes host memory of
   its own instead of waiting). */
int mgdev_stage_get_big(size_t want, mgdev_stage_t **s);
void mgdev_stage_put(mgdev_stage_t *s);
/* A host buffer (pageable, not pinned) of at least want bytes for a long
   plain message the pool cannot stage: a kept one, else a new one.  *size is
   its capacity.  Put returns it to be kept for the next long message, within
   MPIGPU_STAGING_KEEP bytes (the oldest go first), else frees it.  Fresh
   pages for every long message cost more than the message's transfers (page
   faults, design.md "Long plain messages"). */
int mgdev_big_get(size_t want, char **buf, size_t *size);
void mgdev_big_put(char *buf, size_t size);
/* Bytes kept now, and buffers allocated so far (MPI_T, src/mpi/mpit.c). */
void mgdev_big_usage(size_t *kept, unsigned long *allocs);
/* A buffer of at least want bytes (want <= mgdev_stage_chunk()) for a
   further piece of a chunked message in flight, only when the pool can still
   give one chunk to another operation after it; else *s = NULL (the
   operation goes on with fewer pieces in flight). */
int mgdev_stage_get_extra(size_t want, mgdev_stage_t **s);
/* Park *slot (a persistent operation's buffer between starts): the pool may
   reclaim it, setting *slot to NULL, when it needs memory.  Unpark takes it
   back (or finds *slot NULL).  Both take NULL. */
void mgdev_stage_park(mgdev_stage_t **slot);
void mgdev_stage_unpark(mgdev_stage_t **slot);
/* The largest buffer, which is also the protocol's chunk size. */
size_t mgdev_stage_chunk(void);
/* Pinned bytes allocated now, their high-water mark, and the cap (MPI_T, src/mpi/mpit.c). */
void mgdev_staging_usage(size_t *allocated, size_t *high_water, size_t *cap);

#endif /* MGDEV_STAGING_H */
