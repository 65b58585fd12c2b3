/*
 * The collective engine's face (src/coll/README.md): every collective call of
 * MPI on device addresses, as one description (mgcoll_call_t) that the MPI
 * face fills from the call's arguments.  The engine says whether a call
 * involves a device address at all (mgcoll_device: no lock, no allocation,
 * so that host calls go to PMPI at no cost) and runs the others
 * (mgcoll_run): device buffers are staged through host memory of the same
 * layout around MPI's own collective, blocking, nonblocking (an operation of
 * the point-to-point engine, p2p.h's mgp2p_hook_t, completes the staging at
 * MPI_Wait or MPI_Test) or persistent.
 *
 * Ownership: the engine reads the call's arrays during mgcoll_run only; a
 * nonblocking or persistent operation keeps copies of its own, and a
 * reference to every datatype it stages, until its request is freed.  MPI
 * requires the caller to keep the arrays of datatypes (the w forms) alive
 * that long, and they are passed to MPI as they are.
 *
 * Locks: mgcoll_device takes none.  mgcoll_run takes the point-to-point
 * lock (mgp2p_lock) around the kept host buffers and the request table,
 * never across a blocking MPI call.
 */
#ifndef MGCOLL_H
#define MGCOLL_H

#include <mpi.h>

/* Which collective: the blocking name; the mode says blocking, I or _init. */
typedef enum mgcoll_kind {
    MGCOLL_BCAST = 0,
    MGCOLL_GATHER,
    MGCOLL_GATHERV,
    MGCOLL_SCATTER,
    MGCOLL_SCATTERV,
    MGCOLL_ALLGATHER,
    MGCOLL_ALLGATHERV,
    MGCOLL_ALLTOALL,
    MGCOLL_ALLTOALLV,
    MGCOLL_ALLTOALLW,
    MGCOLL_REDUCE,
    MGCOLL_ALLREDUCE,
    MGCOLL_REDUCE_SCATTER,
    MGCOLL_REDUCE_SCATTER_BLOCK,
    MGCOLL_SCAN,
    MGCOLL_EXSCAN,
    MGCOLL_REDUCE_LOCAL,
    MGCOLL_NEIGHBOR_ALLGATHER,
    MGCOLL_NEIGHBOR_ALLGATHERV,
    MGCOLL_NEIGHBOR_ALLTOALL,
    MGCOLL_NEIGHBOR_ALLTOALLV,
    MGCOLL_NEIGHBOR_ALLTOALLW,
    MGCOLL_KINDS
} mgcoll_kind_t;

typedef enum mgcoll_mode {
    MGCOLL_BLOCKING = 0,
    MGCOLL_NONBLOCKING, /* MPI_I...: *req a request that completes with the staging */
    MGCOLL_PERSISTENT   /* MPI_..._init: *req a persistent request */
} mgcoll_mode_t;

/* A collective call as given.  Counts and displacements of the v and w
   forms are arrays of int, or of MPI_Count and MPI_Aint where wide_counts
   and wide_displs say so (the _c forms; the displacements of
   MPI_Neighbor_alltoallw are MPI_Aint in both forms).  A v form's
   displacements count extents of its datatype, a w form's count bytes.
   The reductions take count in scount and their datatype in stype and
   rtype; MPI_Reduce_scatter its counts in rcounts; MPI_Reduce_local its
   inbuf in sbuf and its inoutbuf in rbuf. */
typedef struct mgcoll_call {
    const char *fn;
    mgcoll_kind_t kind;
    mgcoll_mode_t mode;
    int wide_counts, wide_displs;
    const void *sbuf;
    MPI_Count scount;
    const void *scounts, *sdispls;
    MPI_Datatype stype;
    const MPI_Datatype *stypes;
    void *rbuf;
    MPI_Count rcount;
    const void *rcounts, *rdispls;
    MPI_Datatype rtype;
    const MPI_Datatype *rtypes;
    MPI_Op op;
    int root;
    MPI_Comm comm; /* MPI_COMM_NULL for MPI_Reduce_local */
    MPI_Info info; /* persistent forms */
    MPI_Request *req;
    int host_pipe; /* set by mgcoll_device: a host call that every process of the call
                      runs in pipelined chunks (the vote said so); mgcoll_run runs them */
} mgcoll_call_t;

/* MGDEV_BUF_HOST (0) when no byte that the call's significant buffers touch
   lies in the reserved device range (mgdev_buf_is_device, per block of the
   v and w forms; arguments that MPI calls insignificant on this process are
   never read), else MGDEV_BUF_DEVICE or MGDEV_BUF_SPAN.  No lock, no
   allocation: a few queries of the communicator.  A blocking reduction
   that could combine on the device (MPIGPU_COLL_REDUCE, at least
   MPIGPU_COLL_REDUCE_MIN bytes) also votes no in one MPI_Allreduce of an
   int on host buffers: every process of such a call votes, since only a
   call that every process can run on the device does.  So does a blocking
   MPI_Bcast, MPI_Reduce or MPI_Allreduce (under MPIGPU_COLL_PIPELINE=all
   MPI_Gather, MPI_Scatter, MPI_Allgather or MPI_Alltoall too) of at least
   MPIGPU_COLL_PIPELINE_MIN bytes (the same vote), since every process
   splits a pipelined call alike: where the vote pipelines it, the call is
   marked (c->host_pipe) and mgcoll_device returns MGDEV_BUF_DEVICE, so that
   mgcoll_run runs its chunks on the host buffers. */
int mgcoll_device(mgcoll_call_t *c);

/* Run a call that involves a device address: checks the arguments MPI
   would (count, datatype, root, topology; the communicator is the caller's),
   stages, and runs MPI's collective on host memory.  Returns an MPI error
   class with its message recorded (mgerr_set); *raised is set when MPI
   itself already ran the communicator's error handler. */
int mgcoll_run(const mgcoll_call_t *c, int *raised);

/* MPIGPU_COLL_REDUCE: 0 auto, 1 device, 2 stage (its values' order in the
   settings table); MPI_T may set it (scope MPI_T_SCOPE_ALL_EQ: every
   process the same, between collectives). */
int mgcoll_reduce_mode(void);
void mgcoll_reduce_mode_set(int mode);
/* Before the point-to-point engine and the device stop (MPI_Finalize):
   frees the reductions' kernels, their scratch buffer and MPI_COMM_WORLD's
   duplicate. */
void mgcoll_finalize(void);
/* Reductions that combined on the device (MPI_T mpigpu_coll_device_reductions). */
unsigned long mgcoll_device_reductions(void);
/* Calls that ran pipelined on this process, host buffers included, and
   their chunks (MPI_T mpigpu_coll_pipelined, mpigpu_coll_pipelined_chunks). */
unsigned long mgcoll_pipelined(void);
unsigned long mgcoll_pipelined_chunks(void);
/* Packs and unpacks of an all-to-all side of two or more blocks staged
   packed (MPIGPU_COLL_PACKED): in one call of the pack engine (fused), or
   one call per block (MPI_T mpigpu_coll_packed_fused, _blocks). */
unsigned long mgcoll_packed_fused(void);
unsigned long mgcoll_packed_blocks(void);

#endif /* MGCOLL_H */
