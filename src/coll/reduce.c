/*
 * Reductions that combine on the device (doc/design.md, "Collectives",
 * "Reductions on the device"): MPI_Allreduce, MPI_Reduce,
 * MPI_Reduce_scatter and MPI_Reduce_scatter_block, blocking, of a
 * predefined basic type and a built-in operation, where every process's
 * buffers are device buffers.  A ring reduce-scatter moves one block per
 * step to the right neighbor through the point-to-point engine (device
 * addresses on both sides, a private duplicate of the communicator), in
 * chunks, and a kernel combines each chunk that arrives into the block while
 * the next chunks travel; an allgather (Allreduce) or a gather to the root
 * (Reduce) then moves the reduced blocks.  Nothing is staged around MPI's own
 * collective.
 *
 * The choice must be the same on every process, or the processes would run
 * different algorithms: every process that meets a call that could take the
 * path (same kind, count, datatype, operation and communicator everywhere,
 * at least MPIGPU_COLL_REDUCE_MIN bytes) votes, host buffers included
 * (mgcoll_device), in one MPI_Allreduce; the path runs only when every
 * process can take it.  The same vote carries the pipelining's answers
 * (pipe.c), so that a call votes once at most.
 *
 * Locks: red_lock guards the kernel table, the kernels' arguments and the
 * kept scratch buffer; never held across MPI or a wait.
 */
#include "config.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "mgparam.h"
#include "coll_impl.h"

/* Element classes of the kernels, in the program's order. */
enum { RT_I8, RT_U8, RT_I16, RT_U16, RT_I32, RT_U32, RT_I64, RT_U64, RT_F32, RT_F64, RT_COUNT };
static const char *const rt_names[RT_COUNT] = {"i8",  "u8",  "i16", "u16", "i32",
                                               "u32", "i64", "u64", "f32", "f64"};
/* Operations, as the kernels number them. */
enum { RO_SUM, RO_PROD, RO_MIN, RO_MAX, RO_LAND, RO_LOR, RO_LXOR, RO_BAND, RO_BOR, RO_BXOR };

/* Scratch chunks of a step's receive in flight at once. */
#define RED_SLOTS 3
#define RED_MAX_CTX 16
/* Tags on the private communicator: a phase's quarter of the tags, and in
   it the message's chunk number within its block.  The point-to-point
   engine may post two operations to one process out of order (one waits
   for a staging buffer), so messages of one block never share a tag
   within red_tag_span chunks. */
enum { TAG_RS = 0, TAG_AG, TAG_GATHER };
static int red_tag_span = 8192; /* (MPI_TAG_UB + 1) / 4, at least */

static const char red_source[] =
    "#ifdef MG_FP64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#endif\n"
    "#define LOOP(E) for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) {"
    " T x = in[io + i], y = b[bo + i]; o[oo + i] = (E); } break;\n"
    "#define HEAD(N) __kernel void mg_red_##N(__global T *o, ulong oo, __global const T *in,"
    " ulong io, __global const T *b, ulong bo, ulong n, int op) { switch (op) {"
    " case 0: LOOP(x + y) case 1: LOOP(x * y) case 2: LOOP(x < y ? x : y)"
    " case 3: LOOP(x > y ? x : y)\n"
    "#define INTK(N) HEAD(N) case 4: LOOP((T)(x && y)) case 5: LOOP((T)(x || y))"
    " case 6: LOOP((T)(!x != !y)) case 7: LOOP(x & y) case 8: LOOP(x | y)"
    " case 9: LOOP(x ^ y) } }\n"
    "#define FLTK(N) HEAD(N) } }\n"
    "#define T char\nINTK(i8)\n#undef T\n#define T uchar\nINTK(u8)\n#undef T\n"
    "#define T short\nINTK(i16)\n#undef T\n#define T ushort\nINTK(u16)\n#undef T\n"
    "#define T int\nINTK(i32)\n#undef T\n#define T uint\nINTK(u32)\n#undef T\n"
    "#define T long\nINTK(i64)\n#undef T\n#define T ulong\nINTK(u64)\n#undef T\n"
    "#define T float\nFLTK(f32)\n#undef T\n"
    "#ifdef MG_FP64\n#define T double\nFLTK(f64)\n#undef T\n#endif\n";

/* A context's program and kernels. */
typedef struct red_prog {
    cl_context ctx;
    cl_program prog;
    cl_kernel k[RT_COUNT];
    int failed;
    size_t local, maxg; /* work-group size, and most work-items of one launch */
} red_prog_t;

/* Settings, read once. */
enum { RED_AUTO, RED_DEVICE, RED_STAGE };
static struct {
    atomic_int mode; /* MPI_T may write it (mgcoll_reduce_mode_set) */
    int64_t min, chunk;
} red_set = {RED_AUTO, 16 << 20, 4 << 20}; /* the table's defaults */
static pthread_once_t red_once = PTHREAD_ONCE_INIT;

static pthread_mutex_t red_lock = PTHREAD_MUTEX_INITIALIZER;
static red_prog_t red_progs[RED_MAX_CTX];
static int red_nprogs;
/* One kept scratch buffer (a device address of its own), taken by a call. */
static void *red_keep;
static size_t red_keep_size;
static cl_context red_keep_ctx;
static atomic_ulong red_calls;
static int red_keyval = MPI_KEYVAL_INVALID;

static void red_read_settings(void)
{
    mgparam_value_t v;
    char err[256];
    if (mgparam_read(MGPARAM_COLL_REDUCE, &v, err, sizeof err) == 0)
        atomic_store(&red_set.mode, (int)v.num);
    if (mgparam_read(MGPARAM_COLL_REDUCE_MIN, &v, err, sizeof err) == 0)
        red_set.min = v.num;
    if (mgparam_read(MGPARAM_COLL_REDUCE_CHUNK, &v, err, sizeof err) == 0)
        red_set.chunk = v.num;
}

int mgcoll_reduce_mode(void)
{
    pthread_once(&red_once, red_read_settings);
    return atomic_load(&red_set.mode);
}

void mgcoll_reduce_mode_set(int mode)
{
    pthread_once(&red_once, red_read_settings);
    atomic_store(&red_set.mode, mode);
}

unsigned long mgcoll_device_reductions(void)
{
    return atomic_load(&red_calls);
}

/* The kernel class of a predefined datatype, or -1. */
static int red_type(MPI_Datatype dt)
{
    static const struct {
        MPI_Datatype dt;
        int rt;
    } map[] = {
        {MPI_SIGNED_CHAR, RT_I8},
        {MPI_INT8_T, RT_I8},
        {MPI_UNSIGNED_CHAR, RT_U8},
        {MPI_UINT8_T, RT_U8},
        {MPI_SHORT, RT_I16},
        {MPI_INT16_T, RT_I16},
        {MPI_UNSIGNED_SHORT, RT_U16},
        {MPI_UINT16_T, RT_U16},
        {MPI_INT, RT_I32},
        {MPI_INT32_T, RT_I32},
        {MPI_UNSIGNED, RT_U32},
        {MPI_UINT32_T, RT_U32},
        {MPI_LONG, RT_I64},
        {MPI_LONG_LONG, RT_I64},
        {MPI_INT64_T, RT_I64},
        {MPI_UNSIGNED_LONG, RT_U64},
        {MPI_UNSIGNED_LONG_LONG, RT_U64},
        {MPI_UINT64_T, RT_U64},
        {MPI_FLOAT, RT_F32},
        {MPI_DOUBLE, RT_F64},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        if (map[i].dt != dt)
            continue;
        int size = 0;
        PMPI_Type_size(dt, &size);
        /* MPI_LONG and its kin by their size here */
        static const int sizes[RT_COUNT] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
        if (size == sizes[map[i].rt])
            return map[i].rt;
        if (map[i].rt == RT_I64 && size == 4)
            return RT_I32;
        if (map[i].rt == RT_U64 && size == 4)
            return RT_U32;
        return -1;
    }
    return -1;
}

static const int rt_size[RT_COUNT] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};
#define RT_SIZE_MAX 8 /* the largest of rt_size */

/* The kernel number of a built-in operation valid for class rt, or -1. */
static int red_op(MPI_Op op, int rt)
{
    int flt = rt >= RT_F32;
    if (op == MPI_SUM)
        return RO_SUM;
    if (op == MPI_PROD)
        return RO_PROD;
    if (op == MPI_MIN)
        return RO_MIN;
    if (op == MPI_MAX)
        return RO_MAX;
    if (flt)
        return -1;
    if (op == MPI_LAND)
        return RO_LAND;
    if (op == MPI_LOR)
        return RO_LOR;
    if (op == MPI_LXOR)
        return RO_LXOR;
    if (op == MPI_BAND)
        return RO_BAND;
    if (op == MPI_BOR)
        return RO_BOR;
    if (op == MPI_BXOR)
        return RO_BXOR;
    return -1;
}

/* What a call is, as every process sees it. */
typedef struct red_call {
    int p, rank, rt, ro;
    int mode;           /* MPIGPU_COLL_REDUCE as the call read it */
    int64_t n;          /* elements reduced */
    int64_t *cnt, *off; /* the blocks of the ring, by rank */
} red_call_t;

/* Whether c could take the path: the same answer on every process of the
   call (it reads only what MPI requires to agree).  Fills r's p, rank, rt,
   ro and n. */
static int red_could(const mgcoll_call_t *c, red_call_t *r)
{
    if (c->mode != MGCOLL_BLOCKING || c->comm == MPI_COMM_NULL)
        return 0;
    if (c->kind != MGCOLL_ALLREDUCE && c->kind != MGCOLL_REDUCE &&
        c->kind != MGCOLL_REDUCE_SCATTER && c->kind != MGCOLL_REDUCE_SCATTER_BLOCK)
        return 0;
    int mode = mgcoll_reduce_mode();
    if (mode == RED_STAGE)
        return 0;
    /* A small Allreduce or Reduce returns here before the type's lookup:
       below min / 8 instances it is below min / rt_size[rt] for every rt,
       so it would return 0 below too (issue 31: host calls pay little). */
    if ((c->kind == MGCOLL_ALLREDUCE || c->kind == MGCOLL_REDUCE) && mode == RED_AUTO &&
        (c->scount <= 0 || c->scount < red_set.min / RT_SIZE_MAX))
        return 0;
    r->rt = red_type(c->stype);
    if (r->rt < 0 || (r->ro = red_op(c->op, r->rt)) < 0)
        return 0;
    /* a small Allreduce or Reduce returns here, before any query */
    if ((c->kind == MGCOLL_ALLREDUCE || c->kind == MGCOLL_REDUCE) && mode == RED_AUTO &&
        (c->scount <= 0 || c->scount < red_set.min / rt_size[r->rt]))
        return 0;
    int inter = 1;
    if (PMPI_Comm_test_inter(c->comm, &inter) != MPI_SUCCESS || inter)
        return 0;
    PMPI_Comm_size(c->comm, &r->p);
    PMPI_Comm_rank(c->comm, &r->rank);
    switch (c->kind) {
    case MGCOLL_REDUCE:
        if (c->root < 0 || c->root >= r->p)
            return 0;
        /* fall through */
    case MGCOLL_ALLREDUCE:
        r->n = c->scount;
        break;
    case MGCOLL_REDUCE_SCATTER_BLOCK:
        if (c->rcount < 0 || __builtin_mul_overflow((int64_t)c->rcount, r->p, &r->n))
            return 0;
        break;
    default:
        if (!c->rcounts)
            return 0;
        r->n = 0;
        for (int i = 0; i < r->p; i++) {
            MPI_Count k = coll_count_at(c->rcounts, c->wide_counts, i);
            if (k < 0 || __builtin_add_overflow(r->n, (int64_t)k, &r->n))
                return 0;
        }
        break;
    }
    int64_t bytes = 0;
    if (r->n <= 0 || __builtin_mul_overflow(r->n, (int64_t)rt_size[r->rt], &bytes))
        return 0;
    r->mode = mode;
    return mode == RED_DEVICE || bytes >= red_set.min;
}

/* ---- kernels ---- */

static red_prog_t *red_prog_get(mgpk_ctx_t *pk)
{
    cl_context ctx = mgpk_ctx_context(pk);
    for (int i = 0; i < red_nprogs; i++)
        if (red_progs[i].ctx == ctx)
            return &red_progs[i];
    if (red_nprogs == RED_MAX_CTX)
        return NULL;
    red_prog_t *g = &red_progs[red_nprogs++];
    memset(g, 0, sizeof(*g));
    g->ctx = ctx;
    g->failed = 1;
    cl_device_id dev = mgpk_ctx_device(pk);
    cl_device_fp_config fp = 0;
    clGetDeviceInfo(dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof(fp), &fp, NULL);
    /* One element per work-item, up to 2^24 at once on a GPU and 2^20 on
       a CPU, whose work-items loop beyond that.  On PoCL (2 cores) four
       work-groups per core, each item looping, took twice as long: its
       vectorizer wants neighbouring items on neighbouring elements. */
    cl_device_type type = 0;
    clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL);
    g->local = type & CL_DEVICE_TYPE_GPU ? 256 : 64;
    g->maxg = type & CL_DEVICE_TYPE_GPU ? (size_t)1 << 24 : (size_t)1 << 20;
    const char *src = red_source;
    cl_int e = CL_SUCCESS;
    g->prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
    if (e != CL_SUCCESS)
        return g;
    if (clBuildProgram(g->prog, 1, &dev, fp ? "-DMG_FP64" : "", NULL, NULL) != CL_SUCCESS)
        return g;
    for (int t = 0; t < RT_COUNT; t++) {
        char name[32];
        if (t == RT_F64 && !fp)
            continue;
        snprintf(name, sizeof name, "mg_red_%s", rt_names[t]);
        g->k[t] = clCreateKernel(g->prog, name, &e);
        if (e != CL_SUCCESS)
            return g;
    }
    g->failed = 0;
    return g;
}

/* A device address as its buffer and byte offset. */
typedef struct red_addr {
    cl_mem mem;
    size_t off;
} red_addr_t;

static int red_lookup(const void *p, red_addr_t *a)
{
    mgdev_reg_entry_t e;
    if (!mgdev_reg_lookup(p, &e, &a->off))
        return -1;
    a->mem = e.mem;
    return 0;
}

/* ---- the scratch buffer: two blocks and RED_SLOTS chunks ---- */

static int scratch_get(cl_context ctx, size_t want, void **ptr, size_t *size)
{
    pthread_mutex_lock(&red_lock);
    if (red_keep && red_keep_ctx == ctx && red_keep_size >= want) {
        *ptr = red_keep;
        *size = red_keep_size;
        red_keep = NULL;
        pthread_mutex_unlock(&red_lock);
        return MPI_SUCCESS;
    }
    pthread_mutex_unlock(&red_lock);
    cl_int e = CL_SUCCESS;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, want, NULL, &e);
    if (e != CL_SUCCESS)
        return mgerr_set(MPI_ERR_NO_MEM,
                         "mpigpu: out of device memory for %zu bytes of a reduction's scratch",
                         want);
    int rc = mgdev_reg_insert(m, ctx, want, 0, ptr);
    clReleaseMemObject(m);
    *size = want;
    return rc;
}

static void scratch_put(cl_context ctx, void *ptr, size_t size)
{
    void *old = NULL;
    pthread_mutex_lock(&red_lock);
    if (!red_keep || red_keep_size < size) {
        old = red_keep;
        red_keep = ptr;
        red_keep_size = size;
        red_keep_ctx = ctx;
        ptr = NULL;
    }
    pthread_mutex_unlock(&red_lock);
    if (old)
        mgdev_reg_remove(old, 0, NULL);
    if (ptr)
        mgdev_reg_remove(ptr, 0, NULL);
}

/* ---- the private communicator ---- */

static int red_comm_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    MPI_Comm *dup = val;
    PMPI_Comm_free(dup);
    free(dup);
    return MPI_SUCCESS;
}

/* comm's duplicate for the path's messages, made at the first call that
   takes the path on comm (every process takes it at the same call). */
static int red_comm(MPI_Comm comm, MPI_Comm *out)
{
    int rc = MPI_SUCCESS, flag = 0;
    MPI_Comm *dup = NULL;
    pthread_mutex_lock(&red_lock);
    if (red_keyval == MPI_KEYVAL_INVALID)
        rc = PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, red_comm_delete, &red_keyval, NULL);
    pthread_mutex_unlock(&red_lock);
    if (rc != MPI_SUCCESS)
        return mgerr_set(MPI_ERR_OTHER, "mpigpu: a key for the reductions' communicators");
    int *ub = NULL, uflag = 0;
    if (PMPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &uflag) == MPI_SUCCESS && uflag && ub &&
        *ub / 4 > red_tag_span)
        red_tag_span = *ub / 4;
    rc = PMPI_Comm_get_attr(comm, red_keyval, &dup, &flag);
    if (rc == MPI_SUCCESS && flag) {
        *out = *dup;
        return MPI_SUCCESS;
    }
    dup = malloc(sizeof(*dup));
    if (!dup)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory");
    rc = PMPI_Comm_dup(comm, dup);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Comm_set_attr(comm, red_keyval, dup);
    if (rc != MPI_SUCCESS) {
        free(dup);
        return mgerr_set(MPI_ERR_OTHER, "mpigpu: the reductions' duplicate of a communicator");
    }
    *out = *dup;
    return MPI_SUCCESS;
}

void mgcoll_finalize(void)
{
    for (int i = 0; i < red_nprogs; i++) {
        for (int t = 0; t < RT_COUNT; t++)
            if (red_progs[i].k[t])
                clReleaseKernel(red_progs[i].k[t]);
        if (red_progs[i].prog)
            clReleaseProgram(red_progs[i].prog);
    }
    red_nprogs = 0;
    if (red_keep)
        mgdev_reg_remove(red_keep, 0, NULL);
    red_keep = NULL;
    red_keep_size = 0;
    if (red_keyval != MPI_KEYVAL_INVALID) {
        /* MPI_COMM_WORLD's duplicate now; other communicators' go with them */
        PMPI_Comm_delete_attr(MPI_COMM_WORLD, red_keyval);
        PMPI_Comm_free_keyval(&red_keyval);
    }
}

/* ---- one call ---- */

typedef struct red_ops {
    mgp2p_op_t **v;
    int n, cap;
} red_ops_t;

typedef struct red_run {
    const char *fn;
    red_call_t *r;
    MPI_Comm comm;
    mgpk_ctx_t *pk;
    red_prog_t *g;
    int es;
    int64_t chunk; /* elements of one message */
    char *scr;     /* scratch: wb[0], wb[1] (a block each), then the slots */
    int64_t blk;   /* elements of the largest block */
    int nwb;       /* blocks of scratch before the slots: 2 on rings of more than 2 */
    red_ops_t now; /* messages in flight */
    int rc;
} red_run_t;

static void red_fail(red_run_t *x, int rc)
{
    if (x->rc == MPI_SUCCESS)
        x->rc = rc;
}

/* Post a message of len elements at device address p. */
static mgp2p_op_t *red_post(red_run_t *x, int send, char *p, int64_t len, int peer, int tag)
{
    mgp2p_op_t *op = calloc(1, sizeof(*op));
    if (!op) {
        red_fail(x, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", x->fn));
        return NULL;
    }
    int rc = mgp2p_op_init(op, send ? MGP2P_OP_SEND : MGP2P_OP_RECV, x->fn, p, (int)(len * x->es),
                           MPI_BYTE, peer, tag, x->comm);
    if (rc == MPI_SUCCESS)
        rc = mgp2p_op_start(op, 0);
    if (rc != MPI_SUCCESS) {
        mgp2p_op_release(op);
        free(op);
        red_fail(x, rc);
        return NULL;
    }
    return op;
}

/* Wait for op and free it. */
static void red_wait(red_run_t *x, mgp2p_op_t *op)
{
    if (!op)
        return;
    mgp2p_op_wait(op);
    if (op->err != MPI_SUCCESS)
        red_fail(x, op->msg ? mgerr_set(op->err, "%s", op->msg) : op->err);
    mgp2p_op_release(op);
    free(op);
}

/* The tag of chunk k of a block in phase ph. */
#define RED_TAG(ph, k) ((ph)*red_tag_span + (int)((k) % red_tag_span))

/* Keep op in list l, to wait for with the others. */
static void red_keep_op(red_run_t *x, red_ops_t *l, mgp2p_op_t *op)
{
    if (!op)
        return;
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        mgp2p_op_t **o = realloc(l->v, (size_t)cap * sizeof(*o));
        if (!o) {
            red_wait(x, op);
            red_fail(x, mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", x->fn));
            return;
        }
        l->v = o;
        l->cap = cap;
    }
    l->v[l->n++] = op;
}

static void red_wait_all(red_run_t *x, red_ops_t *l)
{
    for (int i = 0; i < l->n; i++)
        red_wait(x, l->v[i]);
    l->n = 0;
}

/* Send or receive len elements at p in messages of a chunk each (kept in
   l). */
static void red_chunks(red_run_t *x, red_ops_t *l, int send, char *p, int64_t len, int peer,
                       int tag)
{
    for (int64_t at = 0; at < len && x->rc == MPI_SUCCESS; at += x->chunk) {
        int64_t k = len - at < x->chunk ? len - at : x->chunk;
        red_keep_op(x, l, red_post(x, send, p + at * x->es, k, peer, RED_TAG(tag, at / x->chunk)));
    }
}

/* Wait for an event while the engine moves the messages in flight. */
static void red_event_wait(red_run_t *x, cl_event *ev)
{
    if (!*ev)
        return;
    for (;;) {
        cl_int st = CL_QUEUED;
        if (clGetEventInfo(*ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL) !=
                CL_SUCCESS ||
            st <= CL_COMPLETE) {
            if (st < 0)
                red_fail(x, mgerr_set(MPI_ERR_OTHER, "mpigpu: %s: the device failed a combine (%d)",
                                      x->fn, (int)st));
            break;
        }
        mgp2p_progress();
        mgp2p_progress_relax();
    }
    clReleaseEvent(*ev);
    *ev = NULL;
}

/* o[i] = in[i] op b[i] for n elements, device addresses. */
static void red_combine(red_run_t *x, char *o, const char *in, const char *b, int64_t n,
                        cl_event *ev)
{
    red_addr_t ao, ai, ab;
    if (red_lookup(o, &ao) || red_lookup(in, &ai) || red_lookup(b, &ab)) {
        red_fail(x, mgerr_set(MPI_ERR_BUFFER, "mpigpu: %s: a buffer was freed meanwhile", x->fn));
        return;
    }
    cl_ulong oo = ao.off / (size_t)x->es, io = ai.off / (size_t)x->es, bo = ab.off / (size_t)x->es,
             nn = (cl_ulong)n;
    cl_int op = x->r->ro;
    size_t local = x->g->local, global = ((size_t)n + local - 1) / local * local;
    if (global > x->g->maxg)
        global = x->g->maxg / local * local;
    pthread_mutex_lock(&red_lock);
    cl_kernel k = x->g->k[x->r->rt];
    cl_int e = clSetKernelArg(k, 0, sizeof(cl_mem), &ao.mem);
    e |= clSetKernelArg(k, 1, sizeof(cl_ulong), &oo);
    e |= clSetKernelArg(k, 2, sizeof(cl_mem), &ai.mem);
    e |= clSetKernelArg(k, 3, sizeof(cl_ulong), &io);
    e |= clSetKernelArg(k, 4, sizeof(cl_mem), &ab.mem);
    e |= clSetKernelArg(k, 5, sizeof(cl_ulong), &bo);
    e |= clSetKernelArg(k, 6, sizeof(cl_ulong), &nn);
    e |= clSetKernelArg(k, 7, sizeof(cl_int), &op);
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(mgpk_ctx_queue(x->pk), k, 1, NULL, &global, &local, 0, NULL, ev);
    pthread_mutex_unlock(&red_lock);
    if (e != CL_SUCCESS) {
        red_fail(x, mgerr_cl(e, "clEnqueueNDRangeKernel", __FILE__, __LINE__));
        return;
    }
    clFlush(mgpk_ctx_queue(x->pk));
}

/* Copy n elements between device addresses (no overlap). */
static void red_copy(red_run_t *x, char *dst, const char *src, int64_t n)
{
    if (dst == src || n == 0 || x->rc != MPI_SUCCESS)
        return;
    red_addr_t d, s;
    if (red_lookup(dst, &d) || red_lookup(src, &s)) {
        red_fail(x, mgerr_set(MPI_ERR_BUFFER, "mpigpu: %s: a buffer was freed meanwhile", x->fn));
        return;
    }
    cl_int e = clEnqueueCopyBuffer(mgpk_ctx_queue(x->pk), s.mem, d.mem, s.off, d.off,
                                   (size_t)n * (size_t)x->es, 0, NULL, NULL);
    if (e != CL_SUCCESS)
        red_fail(x, mgerr_cl(e, "clEnqueueCopyBuffer", __FILE__, __LINE__));
    else
        red_fail(x, mgpk_finish(x->pk));
}

/* Receive block rb's len elements from left in chunks into the slots, and
   combine each into out = in op chunk as it arrives, while the next chunks
   travel. */
static void red_recv_combine(red_run_t *x, char *out, const char *in, int64_t len, int left)
{
    int64_t nk = (len + x->chunk - 1) / x->chunk;
    char *slot0 = x->scr + x->nwb * x->blk * x->es;
    mgp2p_op_t *rq[RED_SLOTS] = {0};
    cl_event ev[RED_SLOTS] = {0};
#define SLOT(k) (slot0 + ((k) % RED_SLOTS) * x->chunk * x->es)
#define CLEN(k) ((k) == nk - 1 ? len - (k)*x->chunk : x->chunk)
    for (int64_t k = 0; k < nk && k < RED_SLOTS; k++)
        rq[k] = red_post(x, 0, SLOT(k), CLEN(k), left, RED_TAG(TAG_RS, k));
    for (int64_t k = 0; k < nk; k++) {
        int s = (int)(k % RED_SLOTS);
        red_wait(x, rq[s]);
        rq[s] = NULL;
        if (x->rc == MPI_SUCCESS)
            red_combine(x, out + k * x->chunk * x->es, in + k * x->chunk * x->es, SLOT(k), CLEN(k),
                        &ev[s]);
        /* the slot of chunk k - 1 is free once its combine ends */
        int64_t j = k - 1 + RED_SLOTS;
        if (k >= 1 && j < nk) {
            int t = (int)((k - 1) % RED_SLOTS);
            red_event_wait(x, &ev[t]);
            if (x->rc == MPI_SUCCESS)
                rq[t] = red_post(x, 0, SLOT(j), CLEN(j), left, RED_TAG(TAG_RS, j));
        }
    }
    for (int s = 0; s < RED_SLOTS; s++) {
        red_wait(x, rq[s]);
        red_event_wait(x, &ev[s]);
    }
#undef SLOT
#undef CLEN
}

/* The ring reduce-scatter: block i of r->cnt at src + r->off[i], reduced over
   every process into outp on process i. */
static void red_ring_rs(red_run_t *x, const char *src, char *outp)
{
    red_call_t *r = x->r;
    int p = r->p, me = r->rank, right = (me + 1) % p, left = (me + p - 1) % p;
    char *wb[2] = {x->scr, x->scr + (x->nwb - 1) * x->blk * x->es};
    for (int s = 0; s < p - 1 && x->rc == MPI_SUCCESS; s++) {
        int sb = ((me - s - 1) % p + p) % p, rb = ((me - s - 2) % p + p) % p;
        const char *from = s == 0 ? src + r->off[sb] * x->es : wb[(s - 1) % 2];
        red_chunks(x, &x->now, 1, (char *)from, r->cnt[sb], right, TAG_RS);
        char *out = s == p - 2 ? outp : wb[s % 2];
        red_recv_combine(x, out, src + r->off[rb] * x->es, r->cnt[rb], left);
        red_wait_all(x, &x->now);
    }
}

/* The allgather of the ring: process i holds block i in buf. */
static void red_ring_ag(red_run_t *x, char *buf)
{
    red_call_t *r = x->r;
    int p = r->p, me = r->rank, right = (me + 1) % p, left = (me + p - 1) % p;
    for (int s = 0; s < p - 1 && x->rc == MPI_SUCCESS; s++) {
        int sb = ((me - s) % p + p) % p, rb = ((me - s - 1) % p + p) % p;
        red_chunks(x, &x->now, 0, buf + r->off[rb] * x->es, r->cnt[rb], left, TAG_AG);
        red_chunks(x, &x->now, 1, buf + r->off[sb] * x->es, r->cnt[sb], right, TAG_AG);
        red_wait_all(x, &x->now);
    }
}

static void red_execute(red_run_t *x, const mgcoll_call_t *c)
{
    red_call_t *r = x->r;
    int me = r->rank, p = r->p;
    int inplace = c->sbuf == MPI_IN_PLACE;
    switch (c->kind) {
    case MGCOLL_ALLREDUCE: {
        const char *src = inplace ? c->rbuf : c->sbuf;
        char *own = (char *)c->rbuf + r->off[me] * x->es;
        red_ring_rs(x, src, own);
        if (p == 1)
            red_copy(x, c->rbuf, src, r->n);
        red_ring_ag(x, c->rbuf);
        break;
    }
    case MGCOLL_REDUCE: {
        int root = c->root, isroot = me == root;
        const char *src = inplace && isroot ? c->rbuf : c->sbuf;
        char *own = isroot ? (char *)c->rbuf + r->off[me] * x->es
                           : x->scr + (p > 2 ? (p - 2) % 2 : 0) * x->blk * x->es;
        red_ring_rs(x, src, own);
        if (p == 1)
            red_copy(x, c->rbuf, src, r->n);
        if (isroot) {
            for (int i = 0; i < p; i++)
                if (i != me)
                    red_chunks(x, &x->now, 0, (char *)c->rbuf + r->off[i] * x->es, r->cnt[i], i,
                               TAG_GATHER);
        } else {
            red_chunks(x, &x->now, 1, own, r->cnt[me], root, TAG_GATHER);
        }
        red_wait_all(x, &x->now);
        break;
    }
    default: { /* the reduce-scatter forms */
        const char *src = inplace ? c->rbuf : c->sbuf;
        int64_t at = r->off[me], len = r->cnt[me];
        /* in place, block me lands at the buffer's start, which the last
           step may still read (block me's own input where they overlap; on
           two processes the block it sends): through scratch, unless block
           me is at the start */
        int via = inplace && at != 0 && len > 0 && p > 1;
        char *own = via ? x->scr + (p > 2 ? (p - 2) % 2 : 0) * x->blk * x->es : c->rbuf;
        red_ring_rs(x, src, own);
        if (p == 1 || via)
            red_copy(x, c->rbuf, p == 1 ? src : own, len);
        break;
    }
    }
    if (x->rc == MPI_SUCCESS)
        red_fail(x, mgpk_finish(x->pk));
}

/* Whether this process's buffers of c can take the path: every significant
   one a device buffer of one context, aligned to the element, holding its
   elements; zero copy only under MPIGPU_COLL_REDUCE=device.  *pk: the
   context's engine. */
static int red_local(const mgcoll_call_t *c, red_call_t *r, mgpk_ctx_t **pk)
{
    const void *buf[2] = {NULL, NULL};
    int64_t len[2] = {0, 0};
    int inplace = c->sbuf == MPI_IN_PLACE, me = r->rank;
    int64_t mine = c->kind == MGCOLL_ALLREDUCE || c->kind == MGCOLL_REDUCE ? r->n : r->cnt[me];
    if (c->kind == MGCOLL_REDUCE && me != c->root) {
        if (inplace)
            return 0;
        buf[0] = c->sbuf;
        len[0] = r->n;
    } else {
        buf[0] = inplace ? NULL : c->sbuf;
        len[0] = r->n;
        buf[1] = c->rbuf;
        len[1] = inplace ? r->n : mine;
    }
    cl_context ctx = NULL;
    for (int k = 0; k < 2; k++) {
        if (!buf[k] || len[k] == 0)
            continue;
        mgdev_reg_entry_t e;
        size_t off = 0;
        if (!mgdev_reg_lookup(buf[k], &e, &off) || e.shared)
            return 0;
        if (off % (size_t)rt_size[r->rt] || (uint64_t)len[k] * rt_size[r->rt] > e.size - off)
            return 0;
        if (e.host && r->mode != RED_DEVICE)
            return 0;
        if (ctx && e.context != ctx)
            return 0;
        ctx = e.context;
    }
    if (!ctx || mgdev_ctx_get(ctx, pk) != MPI_SUCCESS)
        return 0;
    pthread_mutex_lock(&red_lock);
    red_prog_t *g = red_prog_get(*pk);
    int ok = g && !g->failed && g->k[r->rt];
    pthread_mutex_unlock(&red_lock);
    return ok;
}

/* The ring's blocks: the counts of the reduce-scatter forms, else n split as
   evenly as it goes. */
static int red_blocks(const mgcoll_call_t *c, red_call_t *r)
{
    r->cnt = malloc((size_t)r->p * sizeof(int64_t));
    r->off = malloc((size_t)r->p * sizeof(int64_t));
    if (!r->cnt || !r->off)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
    int64_t at = 0;
    for (int i = 0; i < r->p; i++) {
        if (c->kind == MGCOLL_REDUCE_SCATTER)
            r->cnt[i] = coll_count_at(c->rcounts, c->wide_counts, i);
        else if (c->kind == MGCOLL_REDUCE_SCATTER_BLOCK)
            r->cnt[i] = c->rcount;
        else
            r->cnt[i] = r->n / r->p + (i < r->n % r->p);
        r->off[i] = at;
        at += r->cnt[i];
    }
    return MPI_SUCCESS;
}

/* The call's one vote (MPI_MIN over the communicator): v[0] this process
   can combine on the device, v[1] it can pipeline, v[2] it does not want
   to.  Every process of a call votes or none does: red_could and
   coll_pipe_could answer alike everywhere. */
static int red_vote(const mgcoll_call_t *c, int flag, coll_pipe_t *pp, int *red)
{
    int pipe = pp && pp->could;
    int v[3] = {flag, pipe ? pp->can : 0, pipe ? !pp->want : 1};
    int rc = PMPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MIN, c->comm);
    if (rc != MPI_SUCCESS)
        v[0] = v[1] = 0;
    *red = v[0];
    if (pp)
        pp->go = pipe && !v[0] && v[1] && !v[2];
    return rc;
}

int coll_red_vote(const mgcoll_call_t *c, coll_pipe_t *pp)
{
    red_call_t r = {0};
    int red = 0;
    if (!red_could(c, &r) && !(pp && pp->could))
        return MPI_SUCCESS;
    return red_vote(c, 0, pp, &red);
}

int coll_red_try(const mgcoll_call_t *c, int *taken, int *raised, coll_pipe_t *pp)
{
    red_call_t r = {0};
    red_run_t x = {.fn = c->fn, .r = &r};
    void *scr = NULL;
    size_t have = 0;
    cl_context ctx = NULL;
    int rc = MPI_SUCCESS, flag = 0;
    *taken = 0;
    int could = red_could(c, &r);
    if (!could && !(pp && pp->could))
        return MPI_SUCCESS;
    /* Everything that could fail here is decided before the vote, so that
       the processes that vote yes all run the ring. */
    if (could) {
        rc = red_blocks(c, &r);
        flag = rc == MPI_SUCCESS && red_local(c, &r, &x.pk);
    }
    if (flag) {
        x.es = rt_size[r.rt];
        x.chunk = red_set.chunk / x.es > 0 ? red_set.chunk / x.es : 1;
        for (int i = 0; i < r.p; i++)
            x.blk = r.cnt[i] > x.blk ? r.cnt[i] : x.blk;
        x.nwb = r.p > 2 ? 2 : 1;
        ctx = mgpk_ctx_context(x.pk);
        size_t want = (size_t)(x.nwb * x.blk + RED_SLOTS * x.chunk) * (size_t)x.es;
        flag = scratch_get(ctx, want, &scr, &have) == MPI_SUCCESS;
    }
    *taken = 1;
    if (rc != MPI_SUCCESS && pp)
        pp->can = 0; /* this process returns at once: nobody pipelines */
    int vrc = red_vote(c, flag, pp, &flag);
    if (vrc != MPI_SUCCESS) {
        *raised = 1;
        rc = vrc;
        goto fn_exit;
    }
    if (!flag) {
        *taken = rc != MPI_SUCCESS;
        goto fn_exit;
    }
    rc = red_comm(c->comm, &x.comm);
    if (rc != MPI_SUCCESS)
        goto fn_exit;
    pthread_mutex_lock(&red_lock);
    x.g = red_prog_get(x.pk);
    pthread_mutex_unlock(&red_lock);
    x.scr = scr;
    atomic_fetch_add(&red_calls, 1);
    red_execute(&x, c);
    red_wait_all(&x, &x.now);
    free(x.now.v);
    rc = x.rc;
fn_exit:
    if (scr)
        scratch_put(ctx, scr, have);
    free(r.cnt);
    free(r.off);
    return rc;
}
