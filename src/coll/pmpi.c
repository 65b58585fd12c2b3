/*
 * MPI's own collective for a call on host memory: always the large-count
 * (_c) form, so that one description serves the int and the MPI_Count forms
 * of every call; blocking, nonblocking or persistent by the call's mode.
 */
#include "config.h"

#include "coll_impl.h"

/* B: the blocking name, I: the nonblocking one; the persistent one is
   B_init.  The arguments are those of the blocking _c form. */
#define COLL_DISPATCH(B, I, ...)                                                                   \
    do {                                                                                           \
        if (h->mode == MGCOLL_BLOCKING)                                                            \
            return PMPI_##B##_c(__VA_ARGS__);                                                      \
        if (h->mode == MGCOLL_NONBLOCKING)                                                         \
            return PMPI_##I##_c(__VA_ARGS__, req);                                                 \
        return PMPI_##B##_init_c(__VA_ARGS__, h->info, req);                                       \
    } while (0)

int coll_pmpi(const mgcoll_call_t *h, MPI_Request *req)
{
    const MPI_Count *sc = h->scounts, *rc = h->rcounts;
    const MPI_Aint *sd = h->sdispls, *rd = h->rdispls;
    switch (h->kind) {
    case MGCOLL_BCAST:
        COLL_DISPATCH(Bcast, Ibcast, h->rbuf, h->rcount, h->rtype, h->root, h->comm);
    case MGCOLL_GATHER:
        COLL_DISPATCH(Gather, Igather, h->sbuf, h->scount, h->stype, h->rbuf, h->rcount, h->rtype,
                      h->root, h->comm);
    case MGCOLL_GATHERV:
        COLL_DISPATCH(Gatherv, Igatherv, h->sbuf, h->scount, h->stype, h->rbuf, rc, rd, h->rtype,
                      h->root, h->comm);
    case MGCOLL_SCATTER:
        COLL_DISPATCH(Scatter, Iscatter, h->sbuf, h->scount, h->stype, h->rbuf, h->rcount, h->rtype,
                      h->root, h->comm);
    case MGCOLL_SCATTERV:
        COLL_DISPATCH(Scatterv, Iscatterv, h->sbuf, sc, sd, h->stype, h->rbuf, h->rcount, h->rtype,
                      h->root, h->comm);
    case MGCOLL_ALLGATHER:
        COLL_DISPATCH(Allgather, Iallgather, h->sbuf, h->scount, h->stype, h->rbuf, h->rcount,
                      h->rtype, h->comm);
    case MGCOLL_ALLGATHERV:
        COLL_DISPATCH(Allgatherv, Iallgatherv, h->sbuf, h->scount, h->stype, h->rbuf, rc, rd,
                      h->rtype, h->comm);
    case MGCOLL_ALLTOALL:
        COLL_DISPATCH(Alltoall, Ialltoall, h->sbuf, h->scount, h->stype, h->rbuf, h->rcount,
                      h->rtype, h->comm);
    case MGCOLL_ALLTOALLV:
        COLL_DISPATCH(Alltoallv, Ialltoallv, h->sbuf, sc, sd, h->stype, h->rbuf, rc, rd, h->rtype,
                      h->comm);
    case MGCOLL_ALLTOALLW:
        COLL_DISPATCH(Alltoallw, Ialltoallw, h->sbuf, sc, sd, h->stypes, h->rbuf, rc, rd, h->rtypes,
                      h->comm);
    case MGCOLL_REDUCE:
        COLL_DISPATCH(Reduce, Ireduce, h->sbuf, h->rbuf, h->scount, h->stype, h->op, h->root,
                      h->comm);
    case MGCOLL_ALLREDUCE:
        COLL_DISPATCH(Allreduce, Iallreduce, h->sbuf, h->rbuf, h->scount, h->stype, h->op, h->comm);
    case MGCOLL_REDUCE_SCATTER:
        COLL_DISPATCH(Reduce_scatter, Ireduce_scatter, h->sbuf, h->rbuf, rc, h->stype, h->op,
                      h->comm);
    case MGCOLL_REDUCE_SCATTER_BLOCK:
        COLL_DISPATCH(Reduce_scatter_block, Ireduce_scatter_block, h->sbuf, h->rbuf, h->rcount,
                      h->stype, h->op, h->comm);
    case MGCOLL_SCAN:
        COLL_DISPATCH(Scan, Iscan, h->sbuf, h->rbuf, h->scount, h->stype, h->op, h->comm);
    case MGCOLL_EXSCAN:
        COLL_DISPATCH(Exscan, Iexscan, h->sbuf, h->rbuf, h->scount, h->stype, h->op, h->comm);
    case MGCOLL_REDUCE_LOCAL:
        return PMPI_Reduce_local_c(h->sbuf, h->rbuf, h->scount, h->stype, h->op);
    case MGCOLL_NEIGHBOR_ALLGATHER:
        COLL_DISPATCH(Neighbor_allgather, Ineighbor_allgather, h->sbuf, h->scount, h->stype,
                      h->rbuf, h->rcount, h->rtype, h->comm);
    case MGCOLL_NEIGHBOR_ALLGATHERV:
        COLL_DISPATCH(Neighbor_allgatherv, Ineighbor_allgatherv, h->sbuf, h->scount, h->stype,
                      h->rbuf, rc, rd, h->rtype, h->comm);
    case MGCOLL_NEIGHBOR_ALLTOALL:
        COLL_DISPATCH(Neighbor_alltoall, Ineighbor_alltoall, h->sbuf, h->scount, h->stype, h->rbuf,
                      h->rcount, h->rtype, h->comm);
    case MGCOLL_NEIGHBOR_ALLTOALLV:
        COLL_DISPATCH(Neighbor_alltoallv, Ineighbor_alltoallv, h->sbuf, sc, sd, h->stype, h->rbuf,
                      rc, rd, h->rtype, h->comm);
    case MGCOLL_NEIGHBOR_ALLTOALLW:
        COLL_DISPATCH(Neighbor_alltoallw, Ineighbor_alltoallw, h->sbuf, sc, sd, h->stypes, h->rbuf,
                      rc, rd, h->rtypes, h->comm);
    default:
        return MPI_ERR_INTERN;
    }
}
