/*
 * The collective engine's private interface: what each side of a call is
 * (layout.c), its staging (stage.c) and the call into MPI (pmpi.c).  Only
 * src/coll includes it.
 *
 * Ownership: a coll_state_t owns its sides' host buffers, its copies of the
 * call's arrays and a reference to every datatype and device buffer it
 * stages, until coll_state_free.
 */
#ifndef MGCOLL_IMPL_H
#define MGCOLL_IMPL_H

#include <stdint.h>

#include "coll.h"
#include "p2p.h"

/* What MPI does with a side's bytes on this process. */
enum { COLL_IN = 1, COLL_OUT = 2, COLL_INOUT = 3 };
/* How a side's blocks are described. */
enum {
    COLL_SINGLE = 0, /* count instances of dt at buf */
    COLL_V,          /* block i: counts[i] instances at buf + displs[i] extents of dt */
    COLL_W           /* block i: counts[i] instances of types[i] at buf + displs[i] bytes */
};

/* One side of a call (0: what goes out, 1: what comes in; MPI_Bcast's one
   buffer and MPI_Reduce_local's inoutbuf are side 1). */
typedef struct coll_spec {
    int dir;  /* COLL_IN, _OUT, _INOUT; 0 where the side is not significant here */
    int full; /* COLL_OUT: MPI writes every byte of the data (else they are read first) */
    int form;
    char *buf;
    MPI_Count count; /* COLL_SINGLE */
    MPI_Datatype dt; /* COLL_SINGLE, COLL_V */
    int n;           /* COLL_V, COLL_W: blocks */
    const void *counts, *displs;
    int wide_counts, wide_displs;
    const MPI_Datatype *types; /* COLL_W */
} coll_spec_t;

static inline MPI_Count coll_count_at(const void *a, int wide, int i)
{
    return wide ? ((const MPI_Count *)a)[i] : ((const int *)a)[i];
}

static inline MPI_Aint coll_displ_at(const void *a, int wide, int i)
{
    return wide ? ((const MPI_Aint *)a)[i] : ((const int *)a)[i];
}

/* The sides of call c on this process.  Returns MPI_SUCCESS, or an error
   class with a message (root out of range, no topology, a negative count)
   when check; without check (classification) it never records a message
   and returns MPI_ERR_ARG for anything MPI should report itself. */
int coll_specs(const mgcoll_call_t *c, coll_spec_t s[2], int check);
/* Block i of s: its byte displacement from s->buf, count and datatype
   (ext: s->dt's extent for COLL_V).  Returns -1 when the displacement
   overflows. */
int coll_block(const coll_spec_t *s, int64_t ext, int i, int64_t *disp, MPI_Count *count,
               MPI_Datatype *dt);

/* A block that moves bytes, with a reference to its decoded type. */
typedef struct coll_blk {
    int64_t disp, count;
    MPI_Datatype dt;
    const mgdt_type_t *type;
    int flags; /* mgpk flags of the datatype's method */
    int idx;   /* the block's index in the call's arrays */
    int skip;  /* packed side: the peer is MPI_PROC_NULL, nothing moves (packed.c) */
} coll_blk_t;

/* A side as staged.  A device side's bytes [lo, hi) from buf (every block's
   span) lie in one device allocation; MPI runs on a host view of them of
   the same layout: the allocation's own storage where it is zero copy, else
   a copy (tmp). */
typedef struct coll_side {
    coll_spec_t spec;
    int dev;
    int nblk;
    coll_blk_t *blk;
    int64_t lo, hi;
    cl_mem mem;                  /* retained while staged */
    int64_t eoff;                /* offset of byte buf + lo in mem */
    struct mgdev_shared *shared; /* MPIX_Gpu_malloc_shared's state of the allocation, or NULL */
    size_t sh_off, sh_len;       /* the side's bytes in it */
    mgpk_ctx_t *pk;
    int zc;
    int hostm;  /* MPIGPU_PACK=host, or a block's method attribute: the span is read in
                   and written back whole (the host method's staging of the extent) */
    char *view; /* the host bytes of [buf + lo, buf + hi) */
    char *tmp;  /* a kept host buffer (mgdev_big_get), or NULL */
    size_t cap;
    char *scratch;      /* a side this process cannot use (outside its allocation): MPI
                           gets zeros of host memory, so that the others complete */
    void *hbuf;         /* what MPI gets for buf */
    MPI_Datatype fused; /* the blocks as one struct type, for one unpack (or NULL) */
    const mgdt_type_t *ftype;
    MPI_Count *counts; /* the arrays as MPI_Count and MPI_Aint, for the _c call */
    MPI_Aint *displs;
    int packed; /* staged packed (packed.c): MPI moves MPI_PACKED bytes of pbuf */
    char *pbuf; /* the blocks' packed bytes, block after block: a pinned
                   staging buffer (pstage), else a kept one */
    mgdev_stage_t *pstage;
    size_t pcap;          /* pbuf's capacity */
    int64_t pbytes;       /* packed bytes of the blocks that move */
    MPI_Datatype *ptypes; /* COLL_W: MPI_PACKED for every block, MPI's types */
    mgpk_block_t *pblk;   /* the blocks that move, for one launch each way */
    int npblk;
    int pblocks;     /* packed one pack engine call per block, not fused (coll_packed_setup's
                        choice, MPIGPU_COLL_PACKED) */
    uint64_t pkey;   /* under auto, where the model compared both ways: the side's
                        signature, whose calls are timed each way (packed.c); else 0 */
    const char *pfn; /* the call's name, for the log of the measured choice */
} coll_side_t;

/* A call under way: the call on host memory (wide arrays), its sides, and
   MPI's request when nonblocking or persistent. */
typedef struct coll_state {
    mgcoll_call_t hc;
    coll_side_t side[2];
    MPI_Count *rs_counts; /* MPI_Reduce_scatter's counts, widened */
    MPI_Request inner;
    int primed; /* inputs read in once: a later MPI_Start of a persistent call reads no
                   output that MPI writes whole (MPICH may write it at _init already) */
    int err;    /* a side refused (MPI_ERR_BUFFER): the call still runs on scratch */
    char *msg;  /* its message */
} coll_state_t;

/* stage.c: build st for c (nothing moves; a persistent call's buffers are
   made here once), read the inputs in, write the outputs back, free.  A
   device side that does not lie inside one live allocation is refused
   (st->err), and MPI gets a zeroed host scratch span in its place, so that
   the collective still completes on the other processes; nothing is
   written to the refused side. */
int coll_state_init(coll_state_t *st, const mgcoll_call_t *c);
int coll_stage_in(coll_state_t *st);
int coll_stage_out(coll_state_t *st);
void coll_state_free(coll_state_t *st);
/* sd->fused and sd->ftype: one struct type of the side's blocks (with
   live_only, those that move: not skip) in their order, displacements from
   buf; neither where a block's count does not fit an int. */
int coll_side_fuse(coll_side_t *sd, int live_only);

/* packed.c: the packed staging of the all-to-all sides (Alltoallv,
   Alltoallw and the neighborhood v and w forms) on devices that are not
   zero copy.  coll_packed_choose, after the side's blocks are known and
   before its host memory is taken, says whether the side is staged packed
   (its blocks whose peer is MPI_PROC_NULL are skipped; sd->pbytes set);
   coll_packed_setup, once the side is open, takes pbuf, makes the blocks one
   type (one launch of the pack engine each way), chooses between packing
   the blocks fused (one call of the engine) or one call per block
   (sd->pblocks: MPIGPU_COLL_PACKED; under auto, by the engine's model,
   mgpk_method_cost) and rewrites the side's arrays for MPI: byte counts,
   displacements into pbuf, MPI_PACKED.  In and out pack the device bytes
   into pbuf and unpack pbuf into the device, the chosen way; both give the
   same bytes. */
int coll_packed_choose(const mgcoll_call_t *c, coll_side_t *sd);
int coll_packed_setup(coll_state_t *st, int k);
int coll_packed_in(coll_side_t *sd);
int coll_packed_out(coll_side_t *sd);
void coll_packed_free(coll_side_t *sd);

/* pmpi.c: MPI's own collective of hc (its _c form; blocking, I into *req,
   or _init into *req, by hc->mode). */
int coll_pmpi(const mgcoll_call_t *hc, MPI_Request *req);

/* pipe.c: pipelined staging of blocking MPI_Bcast, MPI_Reduce,
   MPI_Allreduce, MPI_Gather, MPI_Scatter, MPI_Allgather and MPI_Alltoall.
   A call's chunks: n chunks of per units (the last one shorter), of unit
   bytes each (a reduction: instances of its datatype; the others: bytes of
   each process's block), total units.  could: the call's shape allows it, the
   same answer on every process; can: this process's sides allow it; want:
   this process has a device side that does not share host memory; go: the
   vote's answer, the same everywhere. */
typedef struct coll_pipe {
    int could, can, want, go;
    int p, rank;
    int64_t unit, per, total, n;
    int64_t block; /* bytes of one process's block (a side holds one, or p) */
} coll_pipe_t;

/* Fills *pp from c's shape (nothing local); returns pp->could. */
int coll_pipe_could(const mgcoll_call_t *c, coll_pipe_t *pp);
/* This device process's can and want, from its built state. */
int coll_pipe_local(const coll_state_t *st, coll_pipe_t *pp);
/* A host call's can: every significant side one run of bytes. */
int coll_pipe_host_can(const mgcoll_call_t *c, const coll_pipe_t *pp);
/* Run a call that the vote pipelines: on st's views (a device process),
   or on the caller's host buffers (coll_pipe_host). */
int coll_pipe_run(coll_state_t *st, const mgcoll_call_t *c, const coll_pipe_t *pp, int *raised);
int coll_pipe_host(const mgcoll_call_t *c, int *raised);

/* reduce.c: reductions that combine on the device, and the one vote of a
   call that could combine on the device or pipeline (one MPI_Allreduce,
   MPI_MIN, of three ints: this process can combine on the device, can
   pipeline, does not want to pipeline).  coll_red_vote: a process whose
   buffers are all host memory votes (no to the device path; its pipe
   can), so that the others do not wait; pp->go says whether it runs the
   chunked collectives on its host buffers.  coll_red_try: where c could
   take either path, vote with this process's buffers and, when every
   process can combine on the device, run it (*taken 1, the call is done,
   or failed with the returned error).  *taken 0: stage as usual, pipelined
   when pp->go.  pp may be NULL where the call cannot pipeline. */
int coll_red_vote(const mgcoll_call_t *c, coll_pipe_t *pp);
int coll_red_try(const mgcoll_call_t *c, int *taken, int *raised, coll_pipe_t *pp);

#endif /* MGCOLL_IMPL_H */
