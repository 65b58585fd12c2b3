/*
 * What each side of a collective is on this process: which buffer, which
 * blocks, whether MPI reads or writes it (MPI-4.0 chapter 6 and 8.6).  Only
 * the arguments significant here are read: a non-root process's receive
 * arguments of MPI_Gatherv may be anything.  Also the classification of
 * every collective call, on the host path: no lock, no allocation.
 */
#include "config.h"

#include "mgerr.h"
#include "coll_impl.h"

/* The process's place in comm: the group the blocks count (the remote one
   of an intercommunicator), and for neighborhood calls the degrees. */
typedef struct coll_geo {
    int inter, rank, lsize, g;
    int indeg, outdeg;
} coll_geo_t;

static int geo_get(const mgcoll_call_t *c, coll_geo_t *g, int check)
{
    *g = (coll_geo_t){0};
    if (c->kind == MGCOLL_REDUCE_LOCAL)
        return MPI_SUCCESS;
    if (c->comm == MPI_COMM_NULL)
        return check
                   ? mgerr_set(MPI_ERR_COMM, "mpigpu: %s: the communicator is MPI_COMM_NULL", c->fn)
                   : MPI_ERR_COMM;
    PMPI_Comm_test_inter(c->comm, &g->inter);
    PMPI_Comm_rank(c->comm, &g->rank);
    PMPI_Comm_size(c->comm, &g->lsize);
    g->g = g->lsize;
    if (g->inter)
        PMPI_Comm_remote_size(c->comm, &g->g);
    if (c->kind < MGCOLL_NEIGHBOR_ALLGATHER)
        return MPI_SUCCESS;
    int topo = MPI_UNDEFINED, nd = 0, w = 0;
    if (!g->inter)
        PMPI_Topo_test(c->comm, &topo);
    if (topo == MPI_CART) {
        PMPI_Cartdim_get(c->comm, &nd);
        g->indeg = g->outdeg = 2 * nd;
    } else if (topo == MPI_GRAPH) {
        PMPI_Graph_neighbors_count(c->comm, g->rank, &nd);
        g->indeg = g->outdeg = nd;
    } else if (topo == MPI_DIST_GRAPH) {
        PMPI_Dist_graph_neighbors_count(c->comm, &g->indeg, &g->outdeg, &w);
    } else {
        return check ? mgerr_set(MPI_ERR_TOPOLOGY,
                                 "mpigpu: %s: the communicator has no process topology", c->fn)
                     : MPI_ERR_TOPOLOGY;
    }
    return MPI_SUCCESS;
}

static void single(coll_spec_t *s, int dir, int full, const void *buf, MPI_Count count,
                   MPI_Datatype dt)
{
    *s = (coll_spec_t){.dir = dir,
                       .full = full,
                       .form = COLL_SINGLE,
                       .buf = (char *)buf,
                       .count = count,
                       .dt = dt};
}

static void vform(coll_spec_t *s, int dir, int full, const void *buf, int n, const void *counts,
                  const void *displs, MPI_Datatype dt, const mgcoll_call_t *c)
{
    *s = (coll_spec_t){.dir = dir,
                       .full = full,
                       .form = COLL_V,
                       .buf = (char *)buf,
                       .n = n,
                       .counts = counts,
                       .displs = displs,
                       .dt = dt,
                       .wide_counts = c->wide_counts,
                       .wide_displs = c->wide_displs};
}

static void wform(coll_spec_t *s, int dir, int full, const void *buf, int n, const void *counts,
                  const void *displs, const MPI_Datatype *types, const mgcoll_call_t *c)
{
    vform(s, dir, full, buf, n, counts, displs, MPI_DATATYPE_NULL, c);
    s->form = COLL_W;
    s->types = types;
}

/* The rooted calls: whether this process is the root (MPI_ROOT in the root
   group of an intercommunicator), takes part as a leaf, or neither
   (MPI_PROC_NULL). */
enum { ROLE_LEAF = 0, ROLE_ROOT, ROLE_NONE };

static int role_get(const mgcoll_call_t *c, const coll_geo_t *g, int check, int *role)
{
    if (g->inter) {
        if (c->root == MPI_ROOT)
            *role = ROLE_ROOT;
        else if (c->root == MPI_PROC_NULL)
            *role = ROLE_NONE;
        else if (c->root >= 0 && c->root < g->g)
            *role = ROLE_LEAF;
        else
            goto bad;
        return MPI_SUCCESS;
    }
    if (c->root < 0 || c->root >= g->lsize)
        goto bad;
    *role = c->root == g->rank ? ROLE_ROOT : ROLE_LEAF;
    return MPI_SUCCESS;
bad:
    return check ? mgerr_set(MPI_ERR_ROOT, "mpigpu: %s: invalid root %d", c->fn, c->root)
                 : MPI_ERR_ROOT;
}

int coll_specs(const mgcoll_call_t *c, coll_spec_t s[2], int check)
{
    coll_geo_t g;
    int role = ROLE_LEAF, rc = geo_get(c, &g, check);
    int inplace = c->sbuf == MPI_IN_PLACE;
    /* A receive side that MPI_IN_PLACE makes an input too. */
    int rdir = inplace ? COLL_INOUT : COLL_OUT;
    s[0] = s[1] = (coll_spec_t){0};
    if (rc != MPI_SUCCESS)
        return rc;
    switch (c->kind) {
    case MGCOLL_BCAST:
    case MGCOLL_GATHER:
    case MGCOLL_GATHERV:
    case MGCOLL_SCATTER:
    case MGCOLL_SCATTERV:
    case MGCOLL_REDUCE:
        rc = role_get(c, &g, check, &role);
        if (rc != MPI_SUCCESS)
            return rc;
        break;
    default:
        break;
    }
    if (role == ROLE_NONE)
        return MPI_SUCCESS;
    int root = role == ROLE_ROOT, sends = !g.inter || !root, recvs = !g.inter || root;
    switch (c->kind) {
    case MGCOLL_BCAST:
        single(&s[1], root ? COLL_IN : COLL_OUT, 1, c->rbuf, c->rcount, c->rtype);
        break;
    case MGCOLL_GATHER:
    case MGCOLL_GATHERV:
        if (sends && !(root && inplace))
            single(&s[0], COLL_IN, 0, c->sbuf, c->scount, c->stype);
        if (recvs && root && c->kind == MGCOLL_GATHER)
            single(&s[1], rdir, 1, c->rbuf, c->rcount * g.g, c->rtype);
        else if (recvs && root)
            vform(&s[1], rdir, 1, c->rbuf, g.g, c->rcounts, c->rdispls, c->rtype, c);
        break;
    case MGCOLL_SCATTER:
    case MGCOLL_SCATTERV:
        if (recvs && root && c->kind == MGCOLL_SCATTER)
            single(&s[0], COLL_IN, 0, c->sbuf, c->scount * g.g, c->stype);
        else if (recvs && root)
            vform(&s[0], COLL_IN, 0, c->sbuf, g.g, c->scounts, c->sdispls, c->stype, c);
        if (sends && !(root && c->rbuf == MPI_IN_PLACE))
            single(&s[1], COLL_OUT, 1, c->rbuf, c->rcount, c->rtype);
        break;
    case MGCOLL_ALLGATHER:
    case MGCOLL_ALLGATHERV:
        if (!inplace)
            single(&s[0], COLL_IN, 0, c->sbuf, c->scount, c->stype);
        if (c->kind == MGCOLL_ALLGATHER)
            single(&s[1], rdir, 1, c->rbuf, c->rcount * g.g, c->rtype);
        else
            vform(&s[1], rdir, 1, c->rbuf, g.g, c->rcounts, c->rdispls, c->rtype, c);
        break;
    case MGCOLL_ALLTOALL:
        if (!inplace)
            single(&s[0], COLL_IN, 0, c->sbuf, c->scount * g.g, c->stype);
        single(&s[1], rdir, 1, c->rbuf, c->rcount * g.g, c->rtype);
        break;
    case MGCOLL_ALLTOALLV:
        if (!inplace)
            vform(&s[0], COLL_IN, 0, c->sbuf, g.g, c->scounts, c->sdispls, c->stype, c);
        vform(&s[1], rdir, 1, c->rbuf, g.g, c->rcounts, c->rdispls, c->rtype, c);
        break;
    case MGCOLL_ALLTOALLW:
        if (!inplace)
            wform(&s[0], COLL_IN, 0, c->sbuf, g.g, c->scounts, c->sdispls, c->stypes, c);
        wform(&s[1], rdir, 1, c->rbuf, g.g, c->rcounts, c->rdispls, c->rtypes, c);
        break;
    case MGCOLL_REDUCE:
        if (sends && !(root && inplace))
            single(&s[0], COLL_IN, 0, c->sbuf, c->scount, c->stype);
        if (recvs && root)
            single(&s[1], rdir, 1, c->rbuf, c->scount, c->stype);
        break;
    case MGCOLL_ALLREDUCE:
    case MGCOLL_SCAN:
    case MGCOLL_EXSCAN:
        if (!inplace)
            single(&s[0], COLL_IN, 0, c->sbuf, c->scount, c->stype);
        /* MPI_Exscan leaves rank 0's receive buffer as it was. */
        single(&s[1], rdir, c->kind != MGCOLL_EXSCAN, c->rbuf, c->scount, c->stype);
        break;
    case MGCOLL_REDUCE_LOCAL:
        single(&s[0], COLL_IN, 0, c->sbuf, c->scount, c->stype);
        single(&s[1], COLL_INOUT, 1, c->rbuf, c->scount, c->stype);
        break;
    case MGCOLL_REDUCE_SCATTER:
    case MGCOLL_REDUCE_SCATTER_BLOCK: {
        /* Counts of the local group; the send buffer holds their sum. */
        MPI_Count total = 0, mine = c->rcount;
        if (c->kind == MGCOLL_REDUCE_SCATTER_BLOCK) {
            total = c->rcount * g.lsize;
        } else {
            for (int i = 0; i < g.lsize; i++) {
                MPI_Count k = coll_count_at(c->rcounts, c->wide_counts, i);
                if (k < 0)
                    return check ? mgerr_set(MPI_ERR_COUNT, "mpigpu: %s: negative count %lld",
                                             c->fn, (long long)k)
                                 : MPI_ERR_COUNT;
                total += k;
            }
            mine = coll_count_at(c->rcounts, c->wide_counts, g.rank);
        }
        if (!inplace)
            single(&s[0], COLL_IN, 0, c->sbuf, total, c->stype);
        single(&s[1], rdir, 1, c->rbuf, inplace ? total : mine, c->stype);
        break;
    }
    case MGCOLL_NEIGHBOR_ALLGATHER:
        single(&s[0], COLL_IN, 0, c->sbuf, c->scount, c->stype);
        /* MPI_PROC_NULL neighbors leave their blocks as they were. */
        single(&s[1], COLL_OUT, 0, c->rbuf, c->rcount * g.indeg, c->rtype);
        break;
    case MGCOLL_NEIGHBOR_ALLGATHERV:
        single(&s[0], COLL_IN, 0, c->sbuf, c->scount, c->stype);
        vform(&s[1], COLL_OUT, 0, c->rbuf, g.indeg, c->rcounts, c->rdispls, c->rtype, c);
        break;
    case MGCOLL_NEIGHBOR_ALLTOALL:
        single(&s[0], COLL_IN, 0, c->sbuf, c->scount * g.outdeg, c->stype);
        single(&s[1], COLL_OUT, 0, c->rbuf, c->rcount * g.indeg, c->rtype);
        break;
    case MGCOLL_NEIGHBOR_ALLTOALLV:
        vform(&s[0], COLL_IN, 0, c->sbuf, g.outdeg, c->scounts, c->sdispls, c->stype, c);
        vform(&s[1], COLL_OUT, 0, c->rbuf, g.indeg, c->rcounts, c->rdispls, c->rtype, c);
        break;
    case MGCOLL_NEIGHBOR_ALLTOALLW:
        wform(&s[0], COLL_IN, 0, c->sbuf, g.outdeg, c->scounts, c->sdispls, c->stypes, c);
        wform(&s[1], COLL_OUT, 0, c->rbuf, g.indeg, c->rcounts, c->rdispls, c->rtypes, c);
        break;
    default:
        return check ? mgerr_set(MPI_ERR_INTERN, "mpigpu: %s: unknown collective", c->fn)
                     : MPI_ERR_INTERN;
    }
    /* A significant array that is NULL is MPI's to report. */
    for (int k = 0; k < 2; k++) {
        if (s[k].form != COLL_SINGLE && s[k].n > 0 &&
            (!s[k].counts || !s[k].displs || (s[k].form == COLL_W && !s[k].types))) {
            s[k].dir = 0;
            if (check)
                return mgerr_set(MPI_ERR_ARG,
                                 "mpigpu: %s: an array of counts, displacements "
                                 "or datatypes is NULL",
                                 c->fn);
        }
    }
    return MPI_SUCCESS;
}

int coll_block(const coll_spec_t *s, int64_t ext, int i, int64_t *disp, MPI_Count *count,
               MPI_Datatype *dt)
{
    if (s->form == COLL_SINGLE) {
        *disp = 0;
        *count = s->count;
        *dt = s->dt;
        return 0;
    }
    *count = coll_count_at(s->counts, s->wide_counts, i);
    int64_t d = coll_displ_at(s->displs, s->wide_displs, i);
    if (s->form == COLL_W) {
        *dt = s->types[i];
        *disp = d;
        return 0;
    }
    *dt = s->dt;
    return __builtin_mul_overflow(d, ext, disp) ? -1 : 0;
}

/* The first kind of device address among s's blocks (MGDEV_BUF_*). */
static int spec_device(const coll_spec_t *s)
{
    int64_t ext = 0, disp = 0;
    MPI_Count count = 0;
    MPI_Datatype dt = MPI_DATATYPE_NULL;
    if (!s->dir)
        return MGDEV_BUF_HOST;
    if (s->form == COLL_SINGLE)
        return mgdev_buf_is_device(s->buf, s->count, s->dt);
    if (s->form == COLL_V) {
        MPI_Count lb = 0, e = 0;
        if (s->dt == MPI_DATATYPE_NULL || PMPI_Type_get_extent_x(s->dt, &lb, &e) != MPI_SUCCESS)
            return mgdev_reg_in_range(s->buf, 1);
        ext = e;
    }
    for (int i = 0; i < s->n; i++) {
        if (coll_block(s, ext, i, &disp, &count, &dt) != 0)
            return mgdev_reg_in_range(s->buf, 1) ? MGDEV_BUF_SPAN : MGDEV_BUF_HOST;
        int k = count > 0 ? mgdev_buf_is_device(mgdt_addr(s->buf, disp), count, dt) : 0;
        if (k)
            return k;
    }
    return MGDEV_BUF_HOST;
}

/* A call whose significant buffers are all host memory: its vote, where
   it could combine on the device or pipeline.  Returns 1 where every
   process runs it pipelined (then so does this one, on its buffers). */
static int host_vote(mgcoll_call_t *c)
{
    coll_pipe_t pp;
    if (coll_pipe_could(c, &pp))
        pp.can = coll_pipe_host_can(c, &pp);
    coll_red_vote(c, &pp); /* MPI reports its errors in the call itself */
    c->host_pipe = pp.go;
    return pp.go;
}

int mgcoll_device(mgcoll_call_t *c)
{
    coll_spec_t s[2];
    switch (c->kind) {
    case MGCOLL_BCAST:
    case MGCOLL_REDUCE:
    case MGCOLL_ALLREDUCE:
    case MGCOLL_SCAN:
    case MGCOLL_EXSCAN:
    case MGCOLL_REDUCE_LOCAL:
        /* Both buffers hold count instances whatever the group: two host
           buffers (a non-root's insignificant one included) need no query
           of the communicator.  Otherwise the exact sides decide. */
        if (!mgdev_buf_is_device(c->sbuf, c->scount, c->stype) &&
            !mgdev_buf_is_device(c->rbuf, c->rcount, c->rtype)) {
            return host_vote(c) ? MGDEV_BUF_DEVICE : MGDEV_BUF_HOST;
        }
        break;
    default:
        break;
    }
    if (coll_specs(c, s, 0) != MPI_SUCCESS)
        return MGDEV_BUF_HOST; /* MPI reports it */
    int k = spec_device(&s[0]);
    k = k ? k : spec_device(&s[1]);
    if (!k && host_vote(c)) /* a host call votes; most return at once */
        return MGDEV_BUF_DEVICE;
    return k;
}
