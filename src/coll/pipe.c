/*
 * Pipelined staging of large blocking collectives (doc/design.md,
 * "Collectives", "Pipelining"): MPI_Bcast, MPI_Reduce, MPI_Allreduce,
 * MPI_Gather, MPI_Scatter, MPI_Allgather and MPI_Alltoall of at least
 * MPIGPU_COLL_PIPELINE_MIN bytes run as one nonblocking collective of MPI
 * per chunk of MPIGPU_COLL_PIPELINE_CHUNK bytes (whole elements of a
 * reduction; of each process's block for the block-wise calls, whose sides
 * with a block per process MPI gets as one resized byte type per chunk),
 * while the device copies the next chunk in and the previous chunks out.
 *
 * Every process must split a call the same way and run the same chunked
 * collectives, host buffers included, or the collectives would not match.
 * So the call's shape decides whether it could pipeline (coll_pipe_could:
 * only what MPI requires to agree: kind, the message's bytes, the datatype
 * of a reduction, the settings), and one vote decides whether it does
 * (reduce.c's, shared with the device reductions: one MPI_Allreduce of
 * three ints per call at most): every process can (its significant sides
 * are contiguous runs of bytes, its state is built) and one wants (it has a
 * device side that does not share host memory).  A process whose buffers
 * are host memory then runs the same chunked collectives on them.
 *
 * Locks: none of its own; the chunks' copies go through the pack engine's
 * queue, MPI's requests are this call's.
 */
#include "config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "mgparam.h"
#include "coll_impl.h"

/* MPI's chunk collectives in flight at once: a process may run that far
   ahead of a slower one (2 took up to twice as long as 4 or 16 on PoCL,
   doc/performance.md). */
#define PIPE_DEPTH 4

/* MPIGPU_COLL_PIPELINE, in the table's order of its values */
enum { PIPE_OFF, PIPE_ON, PIPE_ALL };
static struct {
    int mode;
    int64_t min, chunk;
} pipe_set = {PIPE_ON, 8 << 20, 4 << 20}; /* the table's defaults */
static pthread_once_t pipe_once = PTHREAD_ONCE_INIT;
static atomic_ulong pipe_calls, pipe_chunks;

static void pipe_read_settings(void)
{
    mgparam_value_t v;
    char err[256];
    if (mgparam_read(MGPARAM_COLL_PIPELINE, &v, err, sizeof err) == 0)
        pipe_set.mode = (int)v.num;
    if (mgparam_read(MGPARAM_COLL_PIPELINE_MIN, &v, err, sizeof err) == 0)
        pipe_set.min = v.num;
    if (mgparam_read(MGPARAM_COLL_PIPELINE_CHUNK, &v, err, sizeof err) == 0)
        pipe_set.chunk = v.num;
}

unsigned long mgcoll_pipelined(void)
{
    return atomic_load(&pipe_calls);
}

unsigned long mgcoll_pipelined_chunks(void)
{
    return atomic_load(&pipe_chunks);
}

/* The bytes of count instances of dt, or -1. */
static int64_t type_bytes(MPI_Count count, MPI_Datatype dt)
{
    MPI_Count size = 0;
    int64_t bytes = 0;
    /* a predefined type's size without asking MPI (issue 31: every host
       call of a collective that could pipeline comes here) */
    const mgdt_layout_t *l = count >= 0 ? mgdt_predefined(dt) : NULL;
    if (l)
        size = l->size;
    else if (count < 0 || dt == MPI_DATATYPE_NULL || PMPI_Type_size_x(dt, &size) != MPI_SUCCESS)
        return -1;
    if (size < 0 || __builtin_mul_overflow((int64_t)count, (int64_t)size, &bytes))
        return -1;
    return bytes;
}

/* The bytes of one process's block, which every process of the call sees
   alike (the signature rule), from the arguments significant here; -1
   where they are not usable. */
static int64_t block_bytes(const mgcoll_call_t *c, int rank)
{
    int inplace = c->sbuf == MPI_IN_PLACE;
    switch (c->kind) {
    case MGCOLL_BCAST:
        return type_bytes(c->rcount, c->rtype);
    case MGCOLL_ALLGATHER:
    case MGCOLL_ALLTOALL:
        return inplace ? type_bytes(c->rcount, c->rtype) : type_bytes(c->scount, c->stype);
    case MGCOLL_GATHER:
        return rank == c->root ? type_bytes(c->rcount, c->rtype) : type_bytes(c->scount, c->stype);
    case MGCOLL_SCATTER:
        return rank == c->root ? type_bytes(c->scount, c->stype) : type_bytes(c->rcount, c->rtype);
    default:
        return -1;
    }
}

int coll_pipe_could(const mgcoll_call_t *c, coll_pipe_t *pp)
{
    memset(pp, 0, sizeof(*pp));
    if (c->mode != MGCOLL_BLOCKING || c->comm == MPI_COMM_NULL)
        return 0;
    switch (c->kind) {
    case MGCOLL_BCAST:
    case MGCOLL_REDUCE:
    case MGCOLL_ALLREDUCE:
    case MGCOLL_GATHER:
    case MGCOLL_SCATTER:
    case MGCOLL_ALLGATHER:
    case MGCOLL_ALLTOALL:
        break;
    default:
        return 0;
    }
    pthread_once(&pipe_once, pipe_read_settings);
    int red = c->kind == MGCOLL_REDUCE || c->kind == MGCOLL_ALLREDUCE;
    /* the block-wise calls only under all: MPICH 4.0.2 moves chunks of
       strided blocks slower than the whole call, host buffers alone */
    if (pipe_set.mode == PIPE_OFF || (pipe_set.mode == PIPE_ON && !red && c->kind != MGCOLL_BCAST))
        return 0;
    if (red) {
        /* count and datatype, the same on every process */
        int64_t bytes = type_bytes(c->scount, c->stype);
        if (bytes <= 0 || bytes < pipe_set.min)
            return 0;
    } else if (c->kind == MGCOLL_BCAST) {
        int64_t bytes = type_bytes(c->rcount, c->rtype);
        if (bytes <= 0 || bytes < pipe_set.min)
            return 0;
    }
    int inter = 1;
    if (PMPI_Comm_test_inter(c->comm, &inter) != MPI_SUCCESS || inter)
        return 0;
    PMPI_Comm_size(c->comm, &pp->p);
    PMPI_Comm_rank(c->comm, &pp->rank);
    if (c->kind != MGCOLL_ALLREDUCE && c->kind != MGCOLL_ALLGATHER && c->kind != MGCOLL_ALLTOALL &&
        (c->root < 0 || c->root >= pp->p))
        return 0;
    if (red) {
        /* whole instances of the datatype, which every process shares;
           instances one after another without gaps */
        MPI_Count size = 0, lb = 0, ext = 0;
        PMPI_Type_size_x(c->stype, &size);
        if (PMPI_Type_get_extent_x(c->stype, &lb, &ext) != MPI_SUCCESS || ext != size)
            return 0;
        pp->unit = ext;
        pp->total = c->scount;
        pp->per = pipe_set.chunk / ext > 0 ? pipe_set.chunk / ext : 1;
        pp->block = c->scount * size;
    } else {
        /* chunks of bytes of each process's block, as MPI_BYTE (the
           processes' datatypes may differ: only their signatures agree) */
        int64_t b = block_bytes(c, pp->rank), all = 0;
        if (b <= 0 || (c->kind != MGCOLL_BCAST &&
                       (__builtin_mul_overflow(b, (int64_t)pp->p, &all) || all < pipe_set.min)))
            return 0;
        pp->unit = 1;
        pp->total = b;
        pp->per = pipe_set.chunk;
        pp->block = b;
    }
    pp->n = (pp->total + pp->per - 1) / pp->per;
    if (pp->n < 2)
        return 0;
    pp->could = 1;
    return 1;
}

/* Whether count instances of dt are one run of bytes; *lo: its offset. */
static int pipe_contig(MPI_Datatype dt, MPI_Count count, int64_t *lo)
{
    const mgdt_type_t *t = NULL;
    if (mgdt_type_get(dt, &t) != MPI_SUCCESS || !mgpk_contig(t, count))
        return 0;
    *lo = mgpk_contig_offset(t, count);
    return 1;
}

/* Whether a side of `bytes` bytes holds one block or one per process. */
static int side_blocks_ok(const coll_pipe_t *pp, int64_t bytes)
{
    return bytes == pp->block || bytes == pp->block * pp->p;
}

int coll_pipe_local(const coll_state_t *st, coll_pipe_t *pp)
{
    pp->can = !st->err;
    pp->want = 0;
    for (int k = 0; k < 2; k++) {
        const coll_side_t *sd = &st->side[k];
        if (!sd->spec.dir)
            continue;
        if (sd->nblk != 1 || !mgpk_contig(sd->blk[0].type, sd->blk[0].count) ||
            sd->hi - sd->lo != sd->blk[0].count * sd->blk[0].type->size ||
            !side_blocks_ok(pp, sd->hi - sd->lo))
            pp->can = 0;
        if (!sd->dev)
            continue;
        if (sd->shared || sd->packed || sd->scratch)
            pp->can = 0;
        else if (!sd->zc)
            pp->want = 1;
    }
    return pp->can;
}

int coll_pipe_host_can(const mgcoll_call_t *c, const coll_pipe_t *pp)
{
    coll_spec_t s[2];
    int64_t lo = 0;
    if (coll_specs(c, s, 0) != MPI_SUCCESS)
        return 0;
    for (int k = 0; k < 2; k++)
        if (s[k].dir && (s[k].form != COLL_SINGLE || !pipe_contig(s[k].dt, s[k].count, &lo) ||
                         !side_blocks_ok(pp, type_bytes(s[k].count, s[k].dt))))
            return 0;
    return 1;
}

/* ---- the pipeline ---- */

/* One side as the pipeline sees it: what MPI gets at chunk 0 (MPI_Bcast:
   the data's first byte; a reduction: the buffer, instance 0), and, where
   the device's bytes are copied, the host bytes and the device offset of
   the data's first byte. */
typedef struct pipe_side {
    char *mpi;
    char *host;
    mgpk_ctx_t *pk;
    cl_mem mem;
    int64_t dev;
    int in, out;
    int nb; /* blocks: 1, or one per process (pp->block bytes apart) */
} pipe_side_t;

typedef struct pipe_run {
    const mgcoll_call_t *c;
    const coll_pipe_t *pp;
    pipe_side_t s[2];
    cl_event *ein, *eout; /* [(2 * chunk + side) * p + block] */
    MPI_Request *req;
    MPI_Datatype tfull, tlast; /* a chunk of every block: its bytes, extent pp->block */
    int64_t posted, done;      /* MPI's chunk collectives started, completed */
    int rc;                    /* the first failure of a copy */
    int mpi_rc;                /* the first failure of MPI (its handler ran) */
} pipe_run_t;

static void pipe_fail(pipe_run_t *x, int rc)
{
    if (rc != MPI_SUCCESS && x->rc == MPI_SUCCESS)
        x->rc = rc;
}

/* Chunk k's first unit and units. */
static void chunk_of(const coll_pipe_t *pp, int64_t k, int64_t *first, int64_t *n)
{
    *first = k * pp->per;
    *n = pp->total - *first < pp->per ? pp->total - *first : pp->per;
}

/* Start the copies of chunk k's bytes (of every block), in (device to
   host) or out. */
static void pipe_copies(pipe_run_t *x, int64_t k, int out)
{
    int64_t first = 0, n = 0, p = x->pp->p;
    chunk_of(x->pp, k, &first, &n);
    int64_t at = first * x->pp->unit, len = n * x->pp->unit;
    for (int i = 0; i < 2; i++) {
        pipe_side_t *s = &x->s[i];
        if (!s->mem || !(out ? s->out : s->in))
            continue;
        for (int b = 0; b < s->nb; b++) {
            int64_t o = at + b * x->pp->block;
            cl_event *ev = (out ? x->eout : x->ein) + (2 * k + i) * p + b;
            mgpk_buf_t h = {.host = s->host + o}, d = {.mem = s->mem, .offset = s->dev + o};
            pipe_fail(x, out ? mgpk_copy_start(s->pk, d, h, (size_t)len, ev)
                             : mgpk_copy_start(s->pk, h, d, (size_t)len, ev));
        }
    }
}

/* Whether an event is complete (a failed command counts, recorded). */
static int pipe_event_done(pipe_run_t *x, cl_event *ev)
{
    cl_int st = CL_COMPLETE;
    if (!*ev)
        return 1;
    if (clGetEventInfo(*ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL) != CL_SUCCESS)
        st = CL_COMPLETE;
    if (st > CL_COMPLETE)
        return 0;
    if (st < 0)
        pipe_fail(x, mgerr_cl(st, "a pipelined collective's copy", __FILE__, __LINE__));
    clReleaseEvent(*ev);
    *ev = NULL;
    return 1;
}

static int pipe_wait_event(pipe_run_t *x, cl_event *ev)
{
    if (!*ev)
        return MPI_SUCCESS;
    cl_int e = clWaitForEvents(1, ev);
    if (e != CL_SUCCESS)
        pipe_fail(x, mgerr_cl(e, "a pipelined collective's copy", __FILE__, __LINE__));
    clReleaseEvent(*ev);
    *ev = NULL;
    return MPI_SUCCESS;
}

/* The type of chunk k of every block: its bytes, at the blocks' stride. */
static int chunk_type(pipe_run_t *x, int64_t len, MPI_Datatype *t)
{
    MPI_Datatype *keep = len == x->pp->per ? &x->tfull : &x->tlast, tmp = MPI_DATATYPE_NULL;
    if (*keep != MPI_DATATYPE_NULL) {
        *t = *keep;
        return MPI_SUCCESS;
    }
    int rc = PMPI_Type_contiguous((int)len, MPI_BYTE, &tmp);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_create_resized(tmp, 0, (MPI_Aint)x->pp->block, keep);
    if (tmp != MPI_DATATYPE_NULL)
        PMPI_Type_free(&tmp);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_commit(keep);
    *t = *keep;
    return rc;
}

/* MPI's collective of chunk k. */
static int pipe_start(pipe_run_t *x, int64_t k)
{
    const mgcoll_call_t *c = x->c;
    int64_t first = 0, n = 0;
    chunk_of(x->pp, k, &first, &n);
    int64_t at = first * x->pp->unit;
    MPI_Request *r = &x->req[k];
    int root = x->pp->rank == c->root, rc = MPI_SUCCESS;
    void *rb = x->s[1].mpi ? x->s[1].mpi + at : c->rbuf;
    const void *sb = c->sbuf == MPI_IN_PLACE ? MPI_IN_PLACE : x->s[0].mpi + at;
    MPI_Datatype t = MPI_BYTE;
    if (c->kind != MGCOLL_BCAST && c->kind != MGCOLL_REDUCE && c->kind != MGCOLL_ALLREDUCE &&
        (rc = chunk_type(x, n, &t)) != MPI_SUCCESS)
        return rc;
    switch (c->kind) {
    case MGCOLL_BCAST:
        return PMPI_Ibcast_c(rb, n, MPI_BYTE, c->root, c->comm, r);
    case MGCOLL_ALLREDUCE:
        return PMPI_Iallreduce_c(sb, rb, n, c->stype, c->op, c->comm, r);
    case MGCOLL_REDUCE:
        return PMPI_Ireduce_c(sb, rb, n, c->stype, c->op, c->root, c->comm, r);
    case MGCOLL_ALLGATHER:
        return PMPI_Iallgather_c(sb, n, MPI_BYTE, rb, 1, t, c->comm, r);
    case MGCOLL_ALLTOALL:
        return PMPI_Ialltoall_c(sb, 1, t, rb, 1, t, c->comm, r);
    case MGCOLL_GATHER:
        if (!root)
            return PMPI_Igather_c(sb, n, MPI_BYTE, NULL, 0, MPI_BYTE, c->root, c->comm, r);
        return PMPI_Igather_c(sb, n, MPI_BYTE, rb, 1, t, c->root, c->comm, r);
    default: /* MGCOLL_SCATTER */
        if (!root)
            return PMPI_Iscatter_c(NULL, 0, MPI_BYTE, rb, n, MPI_BYTE, c->root, c->comm, r);
        return PMPI_Iscatter_c(x->s[0].mpi + at, 1, t, c->rbuf == MPI_IN_PLACE ? MPI_IN_PLACE : rb,
                               n, MPI_BYTE, c->root, c->comm, r);
    }
}

/* The oldest chunk collective: tested (wait 0) or waited for; once
   complete, its outputs' copies start. */
static int pipe_complete(pipe_run_t *x, int wait)
{
    int flag = 1, rc = MPI_SUCCESS;
    if (x->done == x->posted)
        return 0;
    MPI_Request *r = &x->req[x->done];
    rc = wait ? PMPI_Wait(r, MPI_STATUS_IGNORE) : PMPI_Test(r, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS && x->mpi_rc == MPI_SUCCESS)
        x->mpi_rc = rc;
    if (rc != MPI_SUCCESS)
        flag = 1; /* MPI freed it or will not complete it: move on */
    if (!flag)
        return 0;
    pipe_copies(x, x->done, 1);
    x->done++;
    return 1;
}

static int pipe_execute(pipe_run_t *x)
{
    const coll_pipe_t *pp = x->pp;
    int64_t n = pp->n, p = pp->p;
    x->ein = calloc((size_t)(2 * n * p), sizeof(cl_event));
    x->eout = calloc((size_t)(2 * n * p), sizeof(cl_event));
    x->req = malloc((size_t)n * sizeof(MPI_Request));
    if (!x->ein || !x->eout || !x->req)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", x->c->fn);
    atomic_fetch_add(&pipe_calls, 1);
    atomic_fetch_add(&pipe_chunks, (unsigned long)n);
    pipe_copies(x, 0, 0);
    for (int64_t k = 0; k < n && x->mpi_rc == MPI_SUCCESS; k++) {
        /* chunk k's inputs on the host; meanwhile MPI's chunks progress */
        cl_event *ev = x->ein + 2 * k * p;
        for (int64_t e = 0; e < 2 * p;) {
            if (x->done == x->posted) {
                /* nothing of MPI's to progress: sleep in OpenCL */
                pipe_wait_event(x, &ev[e++]);
                continue;
            }
            if (pipe_event_done(x, &ev[e]))
                e++;
            else if (!pipe_complete(x, 0))
                sched_yield();
        }
        if (k + 1 < n)
            pipe_copies(x, k + 1, 0);
        int rc = pipe_start(x, k);
        if (rc != MPI_SUCCESS) {
            x->mpi_rc = rc;
            break;
        }
        x->posted++;
        while (x->posted - x->done >= PIPE_DEPTH)
            pipe_complete(x, 1);
    }
    while (x->done < x->posted)
        pipe_complete(x, 1);
    for (int64_t i = 0; i < 2 * n * p; i++) {
        pipe_wait_event(x, &x->ein[i]);
        pipe_wait_event(x, &x->eout[i]);
    }
    return MPI_SUCCESS;
}

static int pipe_finish(pipe_run_t *x, int rc, int *raised)
{
    if (x->tfull != MPI_DATATYPE_NULL)
        PMPI_Type_free(&x->tfull);
    if (x->tlast != MPI_DATATYPE_NULL)
        PMPI_Type_free(&x->tlast);
    free(x->ein);
    free(x->eout);
    free(x->req);
    if (rc != MPI_SUCCESS)
        return rc;
    if (x->mpi_rc != MPI_SUCCESS) {
        char s[MPI_MAX_ERROR_STRING];
        int len = 0, cls = MPI_ERR_OTHER;
        PMPI_Error_class(x->mpi_rc, &cls);
        PMPI_Error_string(x->mpi_rc, s, &len);
        *raised = 1;
        return mgerr_set(cls, "mpigpu: %s: %s", x->c->fn, s);
    }
    return x->rc == MPI_SUCCESS ? MPI_SUCCESS : mgerr_prepend(x->rc, x->c->fn);
}

int coll_pipe_run(coll_state_t *st, const mgcoll_call_t *c, const coll_pipe_t *pp, int *raised)
{
    pipe_run_t x = {.c = c, .pp = pp, .tfull = MPI_DATATYPE_NULL, .tlast = MPI_DATATYPE_NULL};
    int rc = MPI_SUCCESS, red = c->kind == MGCOLL_REDUCE || c->kind == MGCOLL_ALLREDUCE;
    for (int k = 0; k < 2; k++) {
        coll_side_t *sd = &st->side[k];
        pipe_side_t *s = &x.s[k];
        if (!sd->spec.dir)
            continue;
        /* the others move the data's bytes; a reduction its instances */
        s->mpi = red ? sd->hbuf : mgdt_addr(sd->hbuf, sd->lo);
        s->nb = sd->hi - sd->lo == pp->block ? 1 : pp->p;
        if (!sd->dev)
            continue;
        if (sd->zc) {
            /* MPI reads and writes the storage: the device's commands end first */
            rc = mgpk_finish(sd->pk);
            if (rc != MPI_SUCCESS)
                pipe_fail(&x, rc);
            continue;
        }
        s->host = sd->view;
        s->pk = sd->pk;
        s->mem = sd->mem;
        s->dev = sd->eoff;
        s->in = (sd->spec.dir & COLL_IN) || !sd->spec.full;
        s->out = (sd->spec.dir & COLL_OUT) != 0;
    }
    rc = pipe_execute(&x);
    return pipe_finish(&x, rc, raised);
}

int coll_pipe_host(const mgcoll_call_t *c, int *raised)
{
    coll_pipe_t pp;
    coll_spec_t s[2];
    pipe_run_t x = {.c = c, .pp = &pp, .tfull = MPI_DATATYPE_NULL, .tlast = MPI_DATATYPE_NULL};
    int64_t lo = 0;
    int red = c->kind == MGCOLL_REDUCE || c->kind == MGCOLL_ALLREDUCE;
    /* the vote said every process pipelines: the same shape as then */
    if (!coll_pipe_could(c, &pp) || coll_specs(c, s, 0) != MPI_SUCCESS)
        return mgerr_set(MPI_ERR_INTERN, "mpigpu: %s: the pipelined call changed its shape", c->fn);
    for (int k = 0; k < 2; k++) {
        if (!s[k].dir)
            continue;
        if (!pipe_contig(s[k].dt, s[k].count, &lo))
            return mgerr_set(MPI_ERR_INTERN, "mpigpu: %s: the pipelined call changed its shape",
                             c->fn);
        x.s[k].mpi = red ? s[k].buf : mgdt_addr(s[k].buf, lo);
        x.s[k].nb = 1; /* no copies here */
    }
    int rc = pipe_execute(&x);
    return pipe_finish(&x, rc, raised);
}
