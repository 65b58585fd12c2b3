/*
 * mpigpu-halo: the 3D halo exchange of a Jacobi stencil code, in each of the
 * forms a user writes it, checked cell by cell against the same computation
 * on the host and timed face by face.
 *
 *   mpiexec -n N mpigpu-halo [-g NX:NY:NZ] [-p PX:PY:PZ] [-w WIDTH] [-i ITERS]
 *        [--mode p2p|neighbor|enqueue|rect|host] [--stencil 7|27] [--periodic]
 *        [--host-exchange p2p|neighbor] [--csv FILE] [--corrupt RANK]
 *
 * The global grid of doubles is split over a Cartesian communicator (uneven
 * splits allowed: the first N % P ranks of a dimension get one plane more).
 * Each rank holds its block with a halo of WIDTH cells on every side, x
 * fastest.  A non-periodic grid keeps fixed (Dirichlet) values in the halos
 * outside it.  The stencil reads one cell on each side; WIDTH layers are
 * exchanged all the same, and the check covers every exchanged halo cell.
 *
 * The faces are described once, as MPI subarray datatypes of the local
 * array: send_t[d] is the WIDTH-deep layer of the interior on side d,
 * recv_t[d] the halo on side d.  Direction d (-x +x -y +y -z +z) moves a
 * rank's face d to its neighbour on side d, into that neighbour's halo on the
 * opposite side, with tag d.  The 7-point stencil needs only the faces, which
 * move in one phase.  The 27-point stencil also reads edges and corners: the
 * faces move in three phases (x, then y, then z), each face spanning the
 * halos of the dimensions moved before it, so that the corners travel in two
 * or three hops.
 *
 * Modes: p2p (MPI_Isend/MPI_Irecv of the subarray types on device
 * addresses), neighbor (MPI_Neighbor_alltoallw of the same types), enqueue
 * (MPIX_Enqueue_send/recv on their own queues: the interior kernel runs while
 * the faces move and the boundary kernels wait on the receive events, all
 * kernels on a queue of the program's own; the host waits at the end of an
 * iteration only), rect (what a user writes
 * without device-aware MPI: clEnqueueReadBufferRect into pinned host memory,
 * MPI on the host copies, clEnqueueWriteBufferRect), host (the same stencil
 * and exchange on host arrays, a CPU loop).
 *
 * Timing (each the slowest rank's average per iteration): each direction
 * alone; the whole exchange alone; the compute alone; the full iteration.
 * The hidden fraction is (exchange + compute - iteration) / exchange.
 *
 * Check: every rank runs the whole grid on the host (same operation order,
 * so bit-exact), then compares its interior and its exchanged halos after
 * one more exchange.  The last line starts with "verified" (exit 0), or says
 * what differed (exit 1).  --corrupt RANK overwrites one received halo cell
 * on that rank in the first iteration, to show that the check fails.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_common.h"

enum { MODE_P2P, MODE_NEIGHBOR, MODE_ENQUEUE, MODE_RECT, MODE_HOST, NMODES };
static const char *const mode_name[NMODES] = {"p2p", "neighbor", "enqueue", "rect", "host"};
static const char *const dir_name[6] = {"-x", "+x", "-y", "+y", "-z", "+z"};
static const char *const dir_csv[6] = {"xm", "xp", "ym", "yp", "zm", "zp"};

#define NDIR 6
#define ALL_DIRS 0x3fu
#define OPP(d) ((d) ^ 1)

/* A box of cells: origin and extent per dimension (x, y, z). */
typedef struct halo_box {
    long o[3], e[3];
} halo_box_t;

typedef struct halo_opts {
    long g[3];
    int p[3];
    int w, iters, mode, periodic, points, corrupt;
    int host_neighbor; /* --mode host exchanges with MPI_Neighbor_alltoallw */
    const char *csv;
} halo_opts_t;

typedef struct halo {
    halo_opts_t o;
    MPI_Comm cart;
    int rank, size, coords[3], nbr[NDIR];
    long n[3], off[3], l[3]; /* interior, its global origin, with halos */
    size_t cells;            /* l[0] * l[1] * l[2] */
    int phases;              /* 1 (7-point) or 3 (27-point) */
    halo_box_t send_box[NDIR], recv_box[NDIR];
    MPI_Datatype send_t[NDIR], recv_t[NDIR];
    int bytes[NDIR]; /* packed bytes of face d, 0 where there is no neighbour */
    MPI_Comm graph;  /* neighbor mode: the same neighbours as a graph */
    int gin[NDIR], gout[NDIR], ngin, ngout; /* halo and face of each graph neighbour */
    MPI_Datatype gin_t[NDIR], gout_t[NDIR];
    halo_box_t inner, shell[6];
    int nshell;
    double wgt;
    double *f[2]; /* the two fields: device addresses, or host arrays */
    /* device modes */
    cl_context ctx;
    cl_device_id dev;
    cl_command_queue q; /* the kernels' queue: the library's, or our own (own_q) */
    int own_q;
    cl_program prog;
    cl_kernel kern;
    cl_command_queue sq[NDIR], rq[NDIR];        /* enqueue: a send and a receive queue per side */
    perf_pinned_t stage_s[NDIR], stage_r[NDIR]; /* rect */
} halo_t;

/* The kernel: one cell of the sweep.  The sum runs in a fixed order and is
   then scaled once, exactly as halo_sweep_host does, so that host and device
   agree to the bit; FP_CONTRACT OFF keeps the compiler from fusing. */
static const char halo_kernel_src[] =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#pragma OPENCL FP_CONTRACT OFF\n"
    "__kernel void jacobi(__global const double *src, __global double *dst,\n"
    "                     long sbase, long dbase, long lx, long sxy, int points,\n"
    "                     double wgt)\n"
    "{\n"
    "    long i = (long)get_global_id(0) + lx * (long)get_global_id(1) +\n"
    "             sxy * (long)get_global_id(2);\n"
    "    __global const double *c = src + sbase + i;\n"
    "    double s;\n"
    "    if (points == 7) {\n"
    "        s = c[0];\n"
    "        s += c[-1];\n"
    "        s += c[1];\n"
    "        s += c[-lx];\n"
    "        s += c[lx];\n"
    "        s += c[-sxy];\n"
    "        s += c[sxy];\n"
    "    } else {\n"
    "        s = c[-sxy - lx - 1];\n"
    "        for (int k = 1; k < 27; k++)\n"
    "            s += c[(k / 9 - 1) * sxy + (k / 3 % 3 - 1) * lx + (k % 3 - 1)];\n"
    "    }\n"
    "    dst[dbase + i] = s * wgt;\n"
    "}\n";

static int g_rank;

static void usage(void)
{
    if (g_rank == 0)
        fprintf(stderr,
                "usage: mpiexec -n N mpigpu-halo [-g NX:NY:NZ] [-p PX:PY:PZ] [-w WIDTH] "
                "[-i ITERS] [--mode p2p|neighbor|enqueue|rect|host] [--stencil 7|27] "
                "[--periodic] [--host-exchange p2p|neighbor] [--csv FILE] [--corrupt RANK]\n");
    MPI_Finalize();
    exit(2);
}

static void die_mpi(const char *what, int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "mpigpu-halo: rank %d: %s: %s\n", g_rank, what, msg);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void die_cl(const char *what, cl_int err)
{
    fprintf(stderr, "mpigpu-halo: rank %d: %s: OpenCL error %d\n", g_rank, what, (int)err);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define MPI_CK(call)                                                                               \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != MPI_SUCCESS)                                                                    \
            die_mpi(#call, rc_);                                                                   \
    } while (0)
#define CL_CK(call)                                                                                \
    do {                                                                                           \
        cl_int e_ = (call);                                                                        \
        if (e_ != CL_SUCCESS)                                                                      \
            die_cl(#call, e_);                                                                     \
    } while (0)

/* "A:B:C" into three positive numbers. */
static int parse3(const char *s, long v[3])
{
    char *end;
    for (int i = 0; i < 3; i++) {
        v[i] = strtol(s, &end, 10);
        if (end == s || v[i] < 1 || v[i] > (1L << 20) || (i < 2 ? *end != ':' : *end != '\0'))
            return -1;
        s = end + 1;
    }
    return 0;
}

static void parse_args(int argc, char **argv, halo_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->g[0] = o->g[1] = o->g[2] = 128;
    o->w = 1;
    o->iters = 20;
    o->mode = MODE_P2P;
    o->points = 7;
    o->corrupt = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--periodic")) {
            o->periodic = 1;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        long t[3];
        if (!v)
            usage();
        if (!strcmp(a, "-g")) {
            if (parse3(v, o->g))
                usage();
        } else if (!strcmp(a, "-p")) {
            if (parse3(v, t))
                usage();
            for (int k = 0; k < 3; k++)
                o->p[k] = (int)t[k];
        } else if (!strcmp(a, "-w")) {
            o->w = atoi(v);
            if (o->w < 1 || o->w > 64)
                usage();
        } else if (!strcmp(a, "-i")) {
            o->iters = atoi(v);
            if (o->iters < 1)
                usage();
        } else if (!strcmp(a, "--mode")) {
            o->mode = -1;
            for (int m = 0; m < NMODES; m++)
                if (!strcmp(v, mode_name[m]))
                    o->mode = m;
            if (o->mode < 0)
                usage();
        } else if (!strcmp(a, "--stencil")) {
            o->points = atoi(v);
            if (o->points != 7 && o->points != 27)
                usage();
        } else if (!strcmp(a, "--host-exchange")) {
            if (!strcmp(v, "neighbor"))
                o->host_neighbor = 1;
            else if (strcmp(v, "p2p"))
                usage();
        } else if (!strcmp(a, "--csv")) {
            o->csv = v;
        } else if (!strcmp(a, "--corrupt")) {
            o->corrupt = atoi(v);
        } else {
            usage();
        }
    }
}

/* ---- the field's values, the same on every rank and in the reference ---- */

static double init_value(long x, long y, long z)
{
    return 1.0 + (double)((x * 7 + y * 13 + z * 19) % 64) / 64.0;
}

static double bnd_value(long x, long y, long z)
{
    long v = ((x * 3 + y * 5 + z * 11) % 16 + 16) % 16;
    return 4.0 + (double)v / 16.0;
}

/* Global coordinates wrapped in periodic dimensions; returns 1 when the cell
   lies outside a non-periodic boundary (a fixed value). */
static int wrap(const halo_opts_t *o, long c[3])
{
    int out = 0;
    for (int d = 0; d < 3; d++) {
        if (o->periodic)
            c[d] = (c[d] % o->g[d] + o->g[d]) % o->g[d];
        else if (c[d] < 0 || c[d] >= o->g[d])
            out = 1;
    }
    return out;
}

/* ---- the reference: the whole grid on the host, one ghost layer ---- */

typedef struct halo_ref {
    long g[3], p[3]; /* grid, padded sizes */
    double *cur, *nxt;
} halo_ref_t;

#define RIDX(r, x, y, z)                                                                           \
    (((size_t)((z) + 1) * (r)->p[1] + (size_t)((y) + 1)) * (r)->p[0] + ((x) + 1))

/* One sweep over a box of a padded array: the same sum as the kernel. */
static void sweep_cells(const double *src, double *dst, long lx, long sxy, int points, double wgt,
                        size_t base, const halo_box_t *b)
{
    for (long z = b->o[2]; z < b->o[2] + b->e[2]; z++)
        for (long y = b->o[1]; y < b->o[1] + b->e[1]; y++)
            for (long x = b->o[0]; x < b->o[0] + b->e[0]; x++) {
                size_t i = base + (size_t)x + (size_t)lx * (size_t)y + (size_t)sxy * (size_t)z;
                const double *c = src + i;
                double s;
                if (points == 7) {
                    s = c[0];
                    s += c[-1];
                    s += c[1];
                    s += c[-lx];
                    s += c[lx];
                    s += c[-sxy];
                    s += c[sxy];
                } else {
                    s = c[-sxy - lx - 1];
                    for (int k = 1; k < 27; k++)
                        s += c[(k / 9 - 1) * sxy + (k / 3 % 3 - 1) * lx + (k % 3 - 1)];
                }
                dst[i] = s * wgt;
            }
}

static void ref_ghosts(const halo_opts_t *o, halo_ref_t *r)
{
    for (long z = -1; z <= r->g[2]; z++)
        for (long y = -1; y <= r->g[1]; y++) {
            int edge = z < 0 || z == r->g[2] || y < 0 || y == r->g[1];
            for (long x = -1; x <= r->g[0]; x += (edge || x == r->g[0]) ? 1 : r->g[0] + 1) {
                long c[3] = {x, y, z};
                int out = wrap(o, c);
                r->cur[RIDX(r, x, y, z)] =
                    out ? bnd_value(c[0], c[1], c[2]) : r->cur[RIDX(r, c[0], c[1], c[2])];
            }
        }
}

static int ref_run(const halo_opts_t *o, halo_ref_t *r)
{
    size_t n;
    for (int d = 0; d < 3; d++) {
        r->g[d] = o->g[d];
        r->p[d] = o->g[d] + 2;
    }
    n = (size_t)r->p[0] * (size_t)r->p[1] * (size_t)r->p[2];
    r->cur = malloc(n * sizeof(double));
    r->nxt = malloc(n * sizeof(double));
    if (!r->cur || !r->nxt)
        return -1;
    for (long z = 0; z < r->g[2]; z++)
        for (long y = 0; y < r->g[1]; y++)
            for (long x = 0; x < r->g[0]; x++)
                r->cur[RIDX(r, x, y, z)] = init_value(x, y, z);
    halo_box_t all = {{0, 0, 0}, {r->g[0], r->g[1], r->g[2]}};
    long lx = r->p[0], sxy = r->p[0] * r->p[1];
    double wgt = 1.0 / o->points;
    for (int it = 0; it < o->iters; it++) {
        ref_ghosts(o, r);
        sweep_cells(r->cur, r->nxt, lx, sxy, o->points, wgt, RIDX(r, 0, 0, 0), &all);
        double *t = r->cur;
        r->cur = r->nxt;
        r->nxt = t;
    }
    ref_ghosts(o, r);
    return 0;
}

/* The reference value of any global cell within a halo's reach. */
static double ref_value(const halo_opts_t *o, const halo_ref_t *r, long x, long y, long z)
{
    long c[3] = {x, y, z};
    if (wrap(o, c))
        return bnd_value(c[0], c[1], c[2]);
    return r->cur[RIDX(r, c[0], c[1], c[2])];
}

/* ---- setup ---- */

static size_t lidx(const halo_t *h, long x, long y, long z)
{
    return ((size_t)z * (size_t)h->l[1] + (size_t)y) * (size_t)h->l[0] + (size_t)x;
}

static long box_cells(const halo_box_t *b)
{
    return b->e[0] * b->e[1] * b->e[2];
}

static MPI_Datatype box_type(const halo_t *h, const halo_box_t *b)
{
    int sizes[3] = {(int)h->l[2], (int)h->l[1], (int)h->l[0]};
    int sub[3] = {(int)b->e[2], (int)b->e[1], (int)b->e[0]};
    int start[3] = {(int)b->o[2], (int)b->o[1], (int)b->o[0]};
    MPI_Datatype t;
    MPI_CK(MPI_Type_create_subarray(3, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &t));
    MPI_CK(MPI_Type_commit(&t));
    return t;
}

/* The faces: direction d's layer of the interior and halo, spanning the halos
   of the dimensions exchanged in earlier phases (27-point), else the interior. */
static void setup_faces(halo_t *h)
{
    long w = h->o.w;
    for (int d = 0; d < NDIR; d++) {
        int dim = d / 2, plus = d & 1;
        halo_box_t s, r;
        for (int k = 0; k < 3; k++) {
            if (k == dim)
                continue;
            if (h->phases == 3 && k < dim) {
                s.o[k] = 0;
                s.e[k] = h->l[k];
            } else {
                s.o[k] = w;
                s.e[k] = h->n[k];
            }
            r.o[k] = s.o[k];
            r.e[k] = s.e[k];
        }
        s.e[dim] = r.e[dim] = w;
        s.o[dim] = plus ? h->n[dim] : w;
        r.o[dim] = plus ? w + h->n[dim] : 0;
        h->send_box[d] = s;
        h->recv_box[d] = r;
        h->send_t[d] = box_type(h, &s);
        h->recv_t[d] = box_type(h, &r);
        h->bytes[d] = h->nbr[d] == MPI_PROC_NULL ? 0 : (int)(box_cells(&s) * (long)sizeof(double));
    }
}

/* The inner box (cells that read no halo) and the shell around it. */
static void setup_boxes(halo_t *h)
{
    long lo[3], hi[3];
    for (int d = 0; d < 3; d++) {
        lo[d] = h->n[d] < 1 ? h->n[d] : 1;
        hi[d] = h->n[d] - 1 > lo[d] ? h->n[d] - 1 : lo[d];
        h->inner.o[d] = lo[d];
        h->inner.e[d] = hi[d] - lo[d];
    }
    h->nshell = 0;
    /* z slabs over the whole x-y extent, y slabs between them, x slabs inside. */
    for (int dim = 2; dim >= 0; dim--)
        for (int side = 0; side < 2; side++) {
            halo_box_t b;
            for (int k = 0; k < 3; k++) {
                if (k > dim) {
                    b.o[k] = lo[k];
                    b.e[k] = hi[k] - lo[k];
                } else if (k < dim) {
                    b.o[k] = 0;
                    b.e[k] = h->n[k];
                }
            }
            b.o[dim] = side ? hi[dim] : 0;
            b.e[dim] = side ? h->n[dim] - hi[dim] : lo[dim];
            if (b.e[0] > 0 && b.e[1] > 0 && b.e[2] > 0)
                h->shell[h->nshell++] = b;
        }
}

static void cl_setup(halo_t *h)
{
    cl_int err;
    const char *src = halo_kernel_src;
    MPI_CK(MPIX_Gpu_get_device(&h->ctx, &h->dev, &h->q));
    h->prog = clCreateProgramWithSource(h->ctx, 1, &src, NULL, &err);
    CL_CK(err);
    if (clBuildProgram(h->prog, 1, &h->dev, "", NULL, NULL) != CL_SUCCESS) {
        char log[4096] = "";
        clGetProgramBuildInfo(h->prog, h->dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, NULL);
        fprintf(stderr, "mpigpu-halo: rank %d: the stencil kernel does not build:\n%s\n", g_rank,
                log);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    h->kern = clCreateKernel(h->prog, "jacobi", &err);
    CL_CK(err);
    /* enqueue: the kernels that wait on transfer events run on a queue of
       their own, apart from the default queue, where the library's blocking
       calls pack.  The enqueued transfers never put a command there, so the
       default queue would work too (test/mpi/enqueue.c runs that pattern). */
    if (h->o.mode == MODE_ENQUEUE) {
        h->q = clCreateCommandQueue(h->ctx, h->dev, 0, &err);
        CL_CK(err);
        h->own_q = 1;
    }
    if (h->o.mode == MODE_ENQUEUE)
        for (int d = 0; d < NDIR; d++) {
            h->sq[d] = clCreateCommandQueue(h->ctx, h->dev, 0, &err);
            CL_CK(err);
            h->rq[d] = clCreateCommandQueue(h->ctx, h->dev, 0, &err);
            CL_CK(err);
        }
    if (h->o.mode == MODE_RECT)
        for (int d = 0; d < NDIR; d++) {
            size_t ns = (size_t)box_cells(&h->send_box[d]) * sizeof(double);
            size_t nr = (size_t)box_cells(&h->recv_box[d]) * sizeof(double);
            if (perf_pinned_alloc(ns, &h->stage_s[d]) || perf_pinned_alloc(nr, &h->stage_r[d]))
                die_cl("pinned staging memory", CL_OUT_OF_RESOURCES);
        }
}

static void cl_teardown(halo_t *h)
{
    for (int d = 0; d < NDIR; d++) {
        if (h->sq[d])
            clReleaseCommandQueue(h->sq[d]);
        if (h->rq[d])
            clReleaseCommandQueue(h->rq[d]);
        if (h->o.mode == MODE_RECT) {
            perf_pinned_free(&h->stage_s[d]);
            perf_pinned_free(&h->stage_r[d]);
        }
    }
    clReleaseKernel(h->kern);
    clReleaseProgram(h->prog);
    if (h->own_q)
        clReleaseCommandQueue(h->q);
}

static int is_device(const halo_t *h)
{
    return h->o.mode != MODE_HOST;
}

/* The buffer and offset (in doubles) behind a device address. */
static cl_mem dev_mem(const double *p, long *base)
{
    int isdev = 0;
    cl_mem mem = NULL;
    size_t off = 0;
    MPI_CK(MPIX_Gpu_query(p, &isdev, &mem, &off));
    if (!isdev || off % sizeof(double))
        die_cl("MPIX_Gpu_query: not an aligned device address", CL_INVALID_MEM_OBJECT);
    *base = (long)(off / sizeof(double));
    return mem;
}

/* The field's initial values, halos included (fixed values outside a
   non-periodic grid, the neighbours' cells elsewhere). */
static void field_init(halo_t *h, double *tmp)
{
    long w = h->o.w;
    for (long z = 0; z < h->l[2]; z++)
        for (long y = 0; y < h->l[1]; y++)
            for (long x = 0; x < h->l[0]; x++) {
                long c[3] = {h->off[0] + x - w, h->off[1] + y - w, h->off[2] + z - w};
                int out = wrap(&h->o, c);
                tmp[lidx(h, x, y, z)] =
                    out ? bnd_value(c[0], c[1], c[2]) : init_value(c[0], c[1], c[2]);
            }
    for (int k = 0; k < 2; k++) {
        if (is_device(h))
            MPI_CK(MPIX_Gpu_memcpy(h->f[k], tmp, h->cells * sizeof(double)));
        else
            memcpy(h->f[k], tmp, h->cells * sizeof(double));
    }
}

/* ---- the sweep ---- */

/* Enqueue the kernel over one box of the interior of src into dst. */
static void sweep_dev(halo_t *h, const double *src, double *dst, const halo_box_t *b, cl_uint nwait,
                      const cl_event *wait, cl_event *ev)
{
    long w = h->o.w, sb, db, lx = h->l[0], sxy = h->l[0] * h->l[1];
    cl_mem sm = dev_mem(src, &sb), dm = dev_mem(dst, &db);
    long corner = w + w * lx + w * sxy;
    cl_int points = h->o.points;
    size_t off[3], gsz[3];
    sb += corner;
    db += corner;
    for (int d = 0; d < 3; d++) {
        off[d] = (size_t)b->o[d];
        gsz[d] = (size_t)b->e[d];
    }
    CL_CK(clSetKernelArg(h->kern, 0, sizeof(cl_mem), &sm));
    CL_CK(clSetKernelArg(h->kern, 1, sizeof(cl_mem), &dm));
    CL_CK(clSetKernelArg(h->kern, 2, sizeof(cl_long), &sb));
    CL_CK(clSetKernelArg(h->kern, 3, sizeof(cl_long), &db));
    CL_CK(clSetKernelArg(h->kern, 4, sizeof(cl_long), &lx));
    CL_CK(clSetKernelArg(h->kern, 5, sizeof(cl_long), &sxy));
    CL_CK(clSetKernelArg(h->kern, 6, sizeof(cl_int), &points));
    CL_CK(clSetKernelArg(h->kern, 7, sizeof(cl_double), &h->wgt));
    CL_CK(clEnqueueNDRangeKernel(h->q, h->kern, 3, off, gsz, NULL, nwait, wait, ev));
}

static void sweep_host(halo_t *h, const double *src, double *dst, const halo_box_t *b)
{
    long w = h->o.w;
    sweep_cells(src, dst, h->l[0], h->l[0] * h->l[1], h->o.points, h->wgt, lidx(h, w, w, w), b);
}

/* The whole interior, blocking. */
static void sweep_all(halo_t *h, const double *src, double *dst)
{
    halo_box_t all = {{0, 0, 0}, {h->n[0], h->n[1], h->n[2]}};
    if (!is_device(h)) {
        sweep_host(h, src, dst, &all);
        return;
    }
    sweep_dev(h, src, dst, &all, 0, NULL, NULL);
    CL_CK(clFinish(h->q));
}

/* ---- the exchanges ---- */

/* The directions of phase ph within mask. */
static unsigned phase_dirs(const halo_t *h, int ph, unsigned mask)
{
    return h->phases == 1 ? mask : mask & (3u << (2 * ph));
}

static void xchg_p2p(halo_t *h, double *f, unsigned mask)
{
    for (int ph = 0; ph < h->phases; ph++) {
        MPI_Request rq[2 * NDIR];
        MPI_Status st[2 * NDIR];
        int n = 0;
        unsigned dirs = phase_dirs(h, ph, mask);
        for (int d = 0; d < NDIR; d++) {
            int e = OPP(d);
            if (!(dirs & 1u << d))
                continue;
            if (h->nbr[e] != MPI_PROC_NULL)
                MPI_CK(MPI_Irecv(f, 1, h->recv_t[e], h->nbr[e], d, h->cart, &rq[n++]));
            if (h->nbr[d] != MPI_PROC_NULL)
                MPI_CK(MPI_Isend(f, 1, h->send_t[d], h->nbr[d], d, h->cart, &rq[n++]));
        }
        MPI_CK(MPI_Waitall(n, rq, st));
    }
}

/* MPI_Neighbor_alltoallw on a graph of the same neighbours.  A Cartesian
   communicator would do where every neighbour is distinct, but with two ranks
   (or one) in a periodic dimension the same rank is the neighbour on both
   sides, and neighbourhood messages between one pair of ranks match in list
   order: rank r's -x face, sent first, would land in the neighbour's -x halo.
   So the in-neighbours are listed by halo (-x, +x, ...), the out-neighbours by
   the opposite face (+x, -x, ...): the i-th message from r to s then fills
   the i-th halo that s receives from r.  MPI_PROC_NULL sides are left out. */
static void setup_graph(halo_t *h)
{
    int src[NDIR], dst[NDIR], ns = 0, nd = 0;
    for (int j = 0; j < NDIR; j++) {
        if (h->nbr[j] != MPI_PROC_NULL) {
            h->gin[ns] = j;
            src[ns++] = h->nbr[j];
        }
        if (h->nbr[OPP(j)] != MPI_PROC_NULL) {
            h->gout[nd] = OPP(j);
            dst[nd++] = h->nbr[OPP(j)];
        }
    }
    h->ngin = ns;
    h->ngout = nd;
    MPI_CK(MPI_Dist_graph_create_adjacent(h->cart, ns, src, MPI_UNWEIGHTED, nd, dst, MPI_UNWEIGHTED,
                                          MPI_INFO_NULL, 0, &h->graph));
    MPI_CK(MPI_Comm_set_errhandler(h->graph, MPI_ERRORS_RETURN));
    for (int k = 0; k < ns; k++)
        h->gin_t[k] = h->recv_t[h->gin[k]];
    for (int k = 0; k < nd; k++)
        h->gout_t[k] = h->send_t[h->gout[k]];
}

static void xchg_neighbor(halo_t *h, double *f, unsigned mask)
{
    for (int ph = 0; ph < h->phases; ph++) {
        int sc[NDIR], rc[NDIR];
        MPI_Aint disp[NDIR] = {0};
        unsigned dirs = phase_dirs(h, ph, mask);
        for (int k = 0; k < h->ngout; k++)
            sc[k] = (dirs >> h->gout[k]) & 1u; /* face d moves in direction d */
        for (int k = 0; k < h->ngin; k++)
            rc[k] = (dirs >> OPP(h->gin[k])) & 1u; /* halo j is filled by direction -j */
        MPI_CK(MPI_Neighbor_alltoallw(f, sc, disp, h->gout_t, f, rc, disp, h->gin_t, h->graph));
    }
}

/* Rectangle copies of one box between the device field and packed host memory. */
static void rect_copy(halo_t *h, const double *f, const halo_box_t *b, void *host, int write,
                      cl_event *ev)
{
    long base;
    cl_mem m = dev_mem(f, &base);
    size_t bo[3] = {(size_t)(base + b->o[0]) * sizeof(double), (size_t)b->o[1], (size_t)b->o[2]};
    size_t ho[3] = {0, 0, 0};
    size_t reg[3] = {(size_t)b->e[0] * sizeof(double), (size_t)b->e[1], (size_t)b->e[2]};
    size_t rp = (size_t)h->l[0] * sizeof(double), sp = rp * (size_t)h->l[1];
    size_t hrp = reg[0], hsp = reg[0] * reg[1];
    if (write)
        CL_CK(clEnqueueWriteBufferRect(h->q, m, CL_FALSE, bo, ho, reg, rp, sp, hrp, hsp, host, 0,
                                       NULL, ev));
    else
        CL_CK(clEnqueueReadBufferRect(h->q, m, CL_FALSE, bo, ho, reg, rp, sp, hrp, hsp, host, 0,
                                      NULL, ev));
}

static void xchg_rect(halo_t *h, double *f, unsigned mask)
{
    for (int ph = 0; ph < h->phases; ph++) {
        MPI_Request rq[2 * NDIR];
        MPI_Status st[2 * NDIR];
        int n = 0;
        unsigned dirs = phase_dirs(h, ph, mask);
        for (int d = 0; d < NDIR; d++) {
            int e = OPP(d);
            if ((dirs & 1u << d) && h->nbr[e] != MPI_PROC_NULL)
                MPI_CK(MPI_Irecv(h->stage_r[e].ptr, (int)box_cells(&h->recv_box[e]), MPI_DOUBLE,
                                 h->nbr[e], d, h->cart, &rq[n++]));
        }
        for (int d = 0; d < NDIR; d++)
            if ((dirs & 1u << d) && h->nbr[d] != MPI_PROC_NULL)
                rect_copy(h, f, &h->send_box[d], h->stage_s[d].ptr, 0, NULL);
        CL_CK(clFinish(h->q));
        for (int d = 0; d < NDIR; d++)
            if ((dirs & 1u << d) && h->nbr[d] != MPI_PROC_NULL)
                MPI_CK(MPI_Isend(h->stage_s[d].ptr, (int)box_cells(&h->send_box[d]), MPI_DOUBLE,
                                 h->nbr[d], d, h->cart, &rq[n++]));
        MPI_CK(MPI_Waitall(n, rq, st));
        for (int d = 0; d < NDIR; d++) {
            int e = OPP(d);
            if ((dirs & 1u << d) && h->nbr[e] != MPI_PROC_NULL)
                rect_copy(h, f, &h->recv_box[e], h->stage_r[e].ptr, 1, NULL);
        }
        CL_CK(clFinish(h->q));
    }
}

/* Events of one enqueued exchange. */
typedef struct halo_evs {
    cl_event recv[NDIR], send[NDIR];
    int nrecv, nsend;
} halo_evs_t;

/* Enqueue the exchange: receives and sends on their own queues, each send of
   a later phase after the receives of the earlier ones.  Returns an MPI
   error code (the calls may be unavailable). */
static int xchg_enqueue_start(halo_t *h, double *f, unsigned mask, halo_evs_t *ev)
{
    int rc;
    ev->nrecv = ev->nsend = 0;
    for (int ph = 0; ph < h->phases; ph++) {
        unsigned dirs = phase_dirs(h, ph, mask);
        int nprev = ev->nrecv;
        for (int d = 0; d < NDIR; d++) {
            int e = OPP(d);
            if (!(dirs & 1u << d))
                continue;
            if (h->nbr[e] != MPI_PROC_NULL) {
                rc = MPIX_Enqueue_recv(f, 1, h->recv_t[e], h->nbr[e], d, h->cart, h->rq[e], 0, NULL,
                                       &ev->recv[ev->nrecv]);
                if (rc != MPI_SUCCESS)
                    return rc;
                ev->nrecv++;
            }
            if (h->nbr[d] != MPI_PROC_NULL) {
                rc = MPIX_Enqueue_send(f, 1, h->send_t[d], h->nbr[d], d, h->cart, h->sq[d],
                                       (cl_uint)nprev, nprev ? ev->recv : NULL,
                                       &ev->send[ev->nsend]);
                if (rc != MPI_SUCCESS)
                    return rc;
                ev->nsend++;
            }
        }
    }
    for (int d = 0; d < NDIR; d++) {
        CL_CK(clFlush(h->sq[d]));
        CL_CK(clFlush(h->rq[d]));
    }
    return MPI_SUCCESS;
}

/* Wait for every event of the exchange and release them; an error found
   after the calls returned is a negative execution status. */
static void xchg_enqueue_wait(halo_evs_t *ev)
{
    cl_event all[2 * NDIR];
    int n = 0;
    for (int i = 0; i < ev->nrecv; i++)
        all[n++] = ev->recv[i];
    for (int i = 0; i < ev->nsend; i++)
        all[n++] = ev->send[i];
    if (n)
        CL_CK(clWaitForEvents((cl_uint)n, all));
    for (int i = 0; i < n; i++) {
        cl_int st = CL_COMPLETE;
        clGetEventInfo(all[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
        if (st < 0)
            die_cl("an enqueued face transfer failed", st);
        clReleaseEvent(all[i]);
    }
    ev->nrecv = ev->nsend = 0;
}

/* The exchange of the faces in mask, blocking: the halos hold the data on return. */
static void exchange(halo_t *h, double *f, unsigned mask)
{
    halo_evs_t ev;
    switch (h->o.mode) {
    case MODE_P2P:
        xchg_p2p(h, f, mask);
        break;
    case MODE_NEIGHBOR:
        xchg_neighbor(h, f, mask);
        break;
    case MODE_RECT:
        xchg_rect(h, f, mask);
        break;
    case MODE_ENQUEUE: {
        int rc = xchg_enqueue_start(h, f, mask, &ev);
        if (rc != MPI_SUCCESS)
            die_mpi("MPIX_Enqueue_send/recv", rc);
        xchg_enqueue_wait(&ev);
        break;
    }
    case MODE_HOST:
        if (h->o.host_neighbor)
            xchg_neighbor(h, f, mask);
        else
            xchg_p2p(h, f, mask);
        break;
    }
}

/* --corrupt: one received halo cell (the innermost layer of the first side
   that has a neighbour; an interior cell without any) gets a wrong value. */
static size_t corrupt_cell(const halo_t *h)
{
    long c[3], w = h->o.w;
    for (int e = 0; e < NDIR; e++) {
        int dim = e / 2;
        if (h->nbr[e] == MPI_PROC_NULL)
            continue;
        c[0] = c[1] = c[2] = w;
        c[dim] = (e & 1) ? w + h->n[dim] : w - 1;
        return lidx(h, c[0], c[1], c[2]);
    }
    return lidx(h, w, w, w);
}

static void corrupt(halo_t *h, double *f, cl_uint nwait, const cl_event *wait)
{
    static const double bad = 1e6;
    size_t i = corrupt_cell(h);
    if (!is_device(h)) {
        f[i] = bad;
    } else {
        long base;
        cl_mem m = dev_mem(f, &base);
        CL_CK(clEnqueueWriteBuffer(h->q, m, CL_TRUE, ((size_t)base + i) * sizeof(double),
                                   sizeof(double), &bad, nwait, wait, NULL));
    }
}

/* One iteration of the real loop: src -> dst. */
static void iterate(halo_t *h, double *src, double *dst, int it)
{
    int bad = it == 0 && h->o.corrupt == h->rank;
    if (h->o.mode != MODE_ENQUEUE) {
        exchange(h, src, ALL_DIRS);
        if (bad)
            corrupt(h, src, 0, NULL);
        sweep_all(h, src, dst);
        return;
    }
    /* The interior needs no halo: it runs while the faces move. */
    halo_evs_t ev;
    if (h->inner.e[0] > 0 && h->inner.e[1] > 0 && h->inner.e[2] > 0)
        sweep_dev(h, src, dst, &h->inner, 0, NULL, NULL);
    CL_CK(clFlush(h->q));
    int rc = xchg_enqueue_start(h, src, ALL_DIRS, &ev);
    if (rc != MPI_SUCCESS)
        die_mpi("MPIX_Enqueue_send/recv", rc);
    if (bad)
        corrupt(h, src, (cl_uint)ev.nrecv, ev.recv);
    /* The shell after the halos arrive, in order on the compute queue. */
    for (int i = 0; i < h->nshell; i++)
        sweep_dev(h, src, dst, &h->shell[i], i == 0 ? (cl_uint)ev.nrecv : 0,
                  i == 0 && ev.nrecv ? ev.recv : NULL, NULL);
    CL_CK(clFinish(h->q));
    xchg_enqueue_wait(&ev);
}

/* Compute alone, as the loop runs it (inner box, then shell, for enqueue). */
static void compute_only(halo_t *h, double *src, double *dst)
{
    if (h->o.mode != MODE_ENQUEUE) {
        sweep_all(h, src, dst);
        return;
    }
    if (h->inner.e[0] > 0 && h->inner.e[1] > 0 && h->inner.e[2] > 0)
        sweep_dev(h, src, dst, &h->inner, 0, NULL, NULL);
    for (int i = 0; i < h->nshell; i++)
        sweep_dev(h, src, dst, &h->shell[i], 0, NULL, NULL);
    CL_CK(clFinish(h->q));
}

/* Whether the enqueue calls work here: one double to this rank itself. */
static int enqueue_probe(halo_t *h, char *why, size_t len)
{
    double *p;
    cl_event ev[2];
    int rc, me;
    MPI_Comm_rank(h->cart, &me);
    MPI_CK(MPIX_Gpu_malloc(2 * sizeof(double), (void **)&p));
    rc = MPIX_Enqueue_recv(p, 1, MPI_DOUBLE, me, 999, h->cart, h->rq[0], 0, NULL, &ev[0]);
    if (rc == MPI_SUCCESS) {
        rc = MPIX_Enqueue_send(p + 1, 1, MPI_DOUBLE, me, 999, h->cart, h->sq[0], 0, NULL, &ev[1]);
        if (rc == MPI_SUCCESS) {
            clFlush(h->rq[0]);
            clFlush(h->sq[0]);
            CL_CK(clWaitForEvents(2, ev));
            clReleaseEvent(ev[0]);
            clReleaseEvent(ev[1]);
        }
    }
    MPIX_Gpu_free(p);
    if (rc != MPI_SUCCESS) {
        int l = 0;
        MPI_Error_string(rc, why, &l);
        why[len - 1] = '\0';
    }
    return rc;
}

/* ---- the check ---- */

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

typedef struct halo_check {
    long cells, halo, bad;
    uint64_t sum;
    char first[256];
} halo_check_t;

/* Compare the local field (on the host in loc) with the reference: the
   interior, and the halo cells the exchange fills (faces only for 7 points). */
static void check_field(const halo_t *h, const halo_ref_t *r, const double *loc, halo_check_t *c)
{
    long w = h->o.w;
    memset(c, 0, sizeof(*c));
    for (long z = 0; z < h->l[2]; z++)
        for (long y = 0; y < h->l[1]; y++)
            for (long x = 0; x < h->l[0]; x++) {
                long p[3] = {x, y, z}, gc[3];
                int out = 0;
                for (int d = 0; d < 3; d++) {
                    out += p[d] < w || p[d] >= w + h->n[d];
                    gc[d] = h->off[d] + p[d] - w;
                }
                if (out > 1 && h->phases == 1)
                    continue;
                double got = loc[lidx(h, x, y, z)];
                double want = ref_value(&h->o, r, gc[0], gc[1], gc[2]);
                if (out) {
                    c->halo++;
                } else {
                    uint64_t bits, gi;
                    memcpy(&bits, &got, sizeof(bits));
                    gi = ((uint64_t)gc[2] * (uint64_t)h->o.g[1] + (uint64_t)gc[1]) *
                             (uint64_t)h->o.g[0] +
                         (uint64_t)gc[0];
                    c->sum += mix64(gi * 0x9e3779b97f4a7c15ULL ^ bits);
                    c->cells++;
                }
                if (memcmp(&got, &want, sizeof(got)) && !c->bad++)
                    snprintf(c->first, sizeof(c->first),
                             "rank %d, %s cell (%ld,%ld,%ld): got %.17g, want %.17g", h->rank,
                             out ? "halo" : "interior", gc[0], gc[1], gc[2], got, want);
            }
}

/* ---- output ---- */

typedef struct halo_times {
    double face[NDIR], exch, comp, total, hidden;
    long bytes[NDIR], bytes_all;
} halo_times_t;

static double max_time(double t)
{
    double m;
    MPI_CK(MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return m;
}

static void progress(const halo_t *h, double t0, const char *what)
{
    if (h->rank == 0) {
        fprintf(stderr, "mpigpu-halo: %s (%.1f s)\n", what, perf_now() - t0);
        fflush(stderr);
    }
}

static void print_header(const halo_t *h, const char *devname)
{
    long nmin[3], nmax[3];
    MPI_CK(MPI_Allreduce(h->n, nmin, 3, MPI_LONG, MPI_MIN, MPI_COMM_WORLD));
    MPI_CK(MPI_Allreduce(h->n, nmax, 3, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
    if (h->rank)
        return;
    printf("# mpigpu-halo  grid %ld:%ld:%ld  procs %d:%d:%d  %s  width %d  stencil %d  mode %s%s"
           "  iters %d\n",
           h->o.g[0], h->o.g[1], h->o.g[2], h->o.p[0], h->o.p[1], h->o.p[2],
           h->o.periodic ? "periodic" : "fixed-boundary", h->o.w, h->o.points, mode_name[h->o.mode],
           h->o.mode == MODE_HOST && h->o.host_neighbor ? " (neighbor exchange)" : "", h->o.iters);
    printf("# device: %s\n", devname);
    printf("# local block: %ldx%ldx%ld to %ldx%ldx%ld cells%s, halo %d\n", nmin[0], nmin[1],
           nmin[2], nmax[0], nmax[1], nmax[2],
           nmin[0] != nmax[0] || nmin[1] != nmax[1] || nmin[2] != nmax[2] ? " (uneven split)" : "",
           h->o.w);
    printf("# times per iteration, slowest rank; bytes of one face, largest rank\n");
}

static void print_times(const halo_t *h, const halo_times_t *t)
{
    if (h->rank)
        return;
    printf("# face     bytes     time(us)\n");
    for (int d = 0; d < NDIR; d++)
        printf("%-4s %12ld %12.2f\n", dir_name[d], t->bytes[d], t->face[d] * 1e6);
    printf("# exchange(us)  compute(us)  total(us)  hidden\n");
    printf("%14.2f %12.2f %10.2f  ", t->exch * 1e6, t->comp * 1e6, t->total * 1e6);
    if (h->o.mode == MODE_ENQUEUE)
        printf("%.2f\n", t->hidden);
    else
        printf("-\n");
}

static void write_csv(const halo_t *h, const halo_times_t *t, const char *devname, int ok)
{
    FILE *cf;
    if (h->rank || !h->o.csv)
        return;
    if (!(cf = fopen(h->o.csv, "w"))) {
        perror(h->o.csv);
        return;
    }
    fprintf(cf, "mode,grid,procs,ranks,width,stencil,periodic,iters,bytes,exchange_us,compute_us,"
                "total_us,hidden");
    for (int d = 0; d < NDIR; d++)
        fprintf(cf, ",%s_bytes,%s_us", dir_csv[d], dir_csv[d]);
    fprintf(cf, ",verified,device\n");
    fprintf(cf, "%s,%ld:%ld:%ld,%d:%d:%d,%d,%d,%d,%d,%d,%ld,%.3f,%.3f,%.3f,%.4f",
            h->o.mode == MODE_HOST && h->o.host_neighbor ? "host-neighbor" : mode_name[h->o.mode],
            h->o.g[0], h->o.g[1], h->o.g[2], h->o.p[0], h->o.p[1], h->o.p[2], h->size, h->o.w,
            h->o.points, h->o.periodic, h->o.iters, t->bytes_all, t->exch * 1e6, t->comp * 1e6,
            t->total * 1e6, t->hidden);
    for (int d = 0; d < NDIR; d++)
        fprintf(cf, ",%ld,%.3f", t->bytes[d], t->face[d] * 1e6);
    fprintf(cf, ",%d,", ok);
    for (const char *s = devname; *s; s++)
        fputc(*s == ',' ? ';' : *s, cf);
    fputc('\n', cf);
    fclose(cf);
}

/* ---- main ---- */

static void setup(halo_t *h)
{
    int dims[3] = {h->o.p[0], h->o.p[1], h->o.p[2]}, periods[3];
    if (!dims[0]) {
        MPI_CK(MPI_Dims_create(h->size, 3, dims));
    } else if (dims[0] * dims[1] * dims[2] != h->size) {
        if (h->rank == 0)
            fprintf(stderr, "mpigpu-halo: -p %d:%d:%d needs %d ranks, not %d\n", dims[0], dims[1],
                    dims[2], dims[0] * dims[1] * dims[2], h->size);
        usage();
    }
    for (int d = 0; d < 3; d++) {
        h->o.p[d] = dims[d];
        periods[d] = h->o.periodic;
        if (h->o.g[d] / dims[d] < h->o.w) {
            if (h->rank == 0)
                fprintf(stderr,
                        "mpigpu-halo: %c: %ld cells over %d ranks leave blocks thinner than the "
                        "halo width %d\n",
                        'x' + d, h->o.g[d], dims[d], h->o.w);
            usage();
        }
    }
    MPI_CK(MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &h->cart));
    MPI_CK(MPI_Comm_set_errhandler(h->cart, MPI_ERRORS_RETURN));
    MPI_CK(MPI_Cart_coords(h->cart, h->rank, 3, h->coords));
    h->cells = 1;
    for (int d = 0; d < 3; d++) {
        long q = h->o.g[d] / dims[d], rem = h->o.g[d] % dims[d], c = h->coords[d];
        h->n[d] = q + (c < rem);
        h->off[d] = c * q + (c < rem ? c : rem);
        h->l[d] = h->n[d] + 2 * h->o.w;
        h->cells *= (size_t)h->l[d];
        MPI_CK(MPI_Cart_shift(h->cart, d, 1, &h->nbr[2 * d], &h->nbr[2 * d + 1]));
    }
    h->phases = h->o.points == 27 ? 3 : 1;
    h->wgt = 1.0 / h->o.points;
    setup_faces(h);
    setup_boxes(h);
    h->graph = MPI_COMM_NULL;
    if (h->o.mode == MODE_NEIGHBOR || (h->o.mode == MODE_HOST && h->o.host_neighbor))
        setup_graph(h);
}

static void teardown(halo_t *h)
{
    for (int d = 0; d < NDIR; d++) {
        MPI_Type_free(&h->send_t[d]);
        MPI_Type_free(&h->recv_t[d]);
    }
    if (is_device(h)) {
        for (int k = 0; k < 2; k++)
            MPIX_Gpu_free(h->f[k]);
        cl_teardown(h);
    } else {
        free(h->f[0]);
        free(h->f[1]);
    }
    if (h->graph != MPI_COMM_NULL)
        MPI_Comm_free(&h->graph);
    MPI_Comm_free(&h->cart);
    MPI_Finalize();
}

int main(int argc, char **argv)
{
    halo_t h;
    halo_times_t t;
    halo_ref_t ref;
    halo_check_t chk;
    char devname[256] = "host (CPU loop)";
    double t0;
    memset(&h, 0, sizeof(h));
    memset(&t, 0, sizeof(t));
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &h.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &h.size);
    g_rank = h.rank;
    parse_args(argc, argv, &h.o);
    perf_used_init(); /* what the library ran, through MPI_T; "?" without it */
    t0 = perf_now();
    if (is_device(&h) && !MPIX_Query_opencl_support()) {
        if (h.rank == 0)
            fprintf(stderr, "mpigpu-halo: no OpenCL device; use --mode host\n");
        MPI_Finalize();
        return 2;
    }
    setup(&h);
    double *tmp = malloc(h.cells * sizeof(double));
    if (!tmp)
        die_mpi("host memory for the field", MPI_ERR_NO_MEM);
    if (is_device(&h)) {
        cl_setup(&h);
        clGetDeviceInfo(h.dev, CL_DEVICE_NAME, sizeof(devname) - 1, devname, NULL);
        for (int k = 0; k < 2; k++)
            MPI_CK(MPIX_Gpu_malloc(h.cells * sizeof(double), (void **)&h.f[k]));
    } else {
        for (int k = 0; k < 2; k++)
            if (!(h.f[k] = malloc(h.cells * sizeof(double))))
                die_mpi("host memory for the field", MPI_ERR_NO_MEM);
    }
    print_header(&h, devname);
    if (h.o.mode == MODE_ENQUEUE) {
        char why[MPI_MAX_ERROR_STRING] = "";
        int rc = enqueue_probe(&h, why, sizeof(why)), any;
        MPI_CK(MPI_Allreduce(&rc, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
        if (any != MPI_SUCCESS) {
            if (h.rank == 0)
                printf("not verified: mode enqueue is unavailable here: %s\n",
                       rc ? why : "(on another rank)");
            free(tmp);
            perf_used_finalize();
            teardown(&h);
            return 1;
        }
    }
    field_init(&h, tmp);

    /* Warm up (compiles, first touches), then time: each direction alone,
       the whole exchange alone, the compute alone.  None of them changes the
       state the real loop starts from: an exchange refills halos with the
       values they already should hold, and the compute only writes the
       other field's interior, which the first iteration overwrites. */
    progress(&h, t0, "warming up");
    exchange(&h, h.f[0], ALL_DIRS);
    compute_only(&h, h.f[0], h.f[1]);
    progress(&h, t0, "timing the faces");
    for (int d = 0; d < NDIR; d++) {
        MPI_CK(MPI_Barrier(MPI_COMM_WORLD));
        double s = perf_now();
        for (int i = 0; i < h.o.iters; i++)
            exchange(&h, h.f[0], 1u << d);
        t.face[d] = max_time((perf_now() - s) / h.o.iters);
    }
    progress(&h, t0, "timing the exchange and the compute");
    MPI_CK(MPI_Barrier(MPI_COMM_WORLD));
    double s = perf_now();
    for (int i = 0; i < h.o.iters; i++)
        exchange(&h, h.f[0], ALL_DIRS);
    t.exch = max_time((perf_now() - s) / h.o.iters);
    MPI_CK(MPI_Barrier(MPI_COMM_WORLD));
    s = perf_now();
    for (int i = 0; i < h.o.iters; i++)
        compute_only(&h, h.f[0], h.f[1]);
    t.comp = max_time((perf_now() - s) / h.o.iters);

    progress(&h, t0, "running the iterations");
    perf_used_t u0 = {{0}}, u1 = {{0}};
    char used[64];
    perf_used_read(&u0);
    MPI_CK(MPI_Barrier(MPI_COMM_WORLD));
    s = perf_now();
    double last = s;
    int cur = 0;
    for (int i = 0; i < h.o.iters; i++) {
        iterate(&h, h.f[cur], h.f[1 - cur], i);
        cur = 1 - cur;
        if (h.rank == 0 && perf_now() - last > 2.0) {
            last = perf_now();
            fprintf(stderr, "mpigpu-halo: iteration %d/%d (%.1f s)\n", i + 1, h.o.iters, last - t0);
        }
    }
    t.total = max_time((perf_now() - s) / h.o.iters);
    perf_used_read(&u1);
    perf_used_label(&u0, &u1, 1, used, sizeof(used));
    t.hidden = t.exch > 0 ? (t.exch + t.comp - t.total) / t.exch : 0;
    t.hidden = t.hidden < 0 ? 0 : t.hidden > 1 ? 1 : t.hidden;
    for (int d = 0; d < NDIR; d++) {
        long b = h.bytes[d];
        MPI_CK(MPI_Allreduce(&b, &t.bytes[d], 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
    }
    long mine = 0;
    for (int d = 0; d < NDIR; d++)
        mine += h.bytes[d];
    MPI_CK(MPI_Allreduce(&mine, &t.bytes_all, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD));
    print_times(&h, &t);
    if (h.rank == 0)
        printf("# rank 0's library in the iterations (pack methods/protocols, MPI_T): %s\n", used);

    /* The check: one more exchange fills the halos of the final field. */
    progress(&h, t0, "checking against the host computation");
    exchange(&h, h.f[cur], ALL_DIRS);
    if (is_device(&h))
        MPI_CK(MPIX_Gpu_memcpy(tmp, h.f[cur], h.cells * sizeof(double)));
    else
        memcpy(tmp, h.f[cur], h.cells * sizeof(double));
    memset(&ref, 0, sizeof(ref));
    if (ref_run(&h.o, &ref))
        die_mpi("host memory for the reference", MPI_ERR_NO_MEM);
    check_field(&h, &ref, tmp, &chk);
    long tot[3] = {chk.cells, chk.halo, chk.bad}, sum3[3];
    uint64_t sum = 0;
    MPI_CK(MPI_Allreduce(tot, sum3, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    MPI_CK(MPI_Reduce(&chk.sum, &sum, 1, MPI_UINT64_T, MPI_SUM, 0, MPI_COMM_WORLD));
    /* The lowest rank with a difference tells rank 0 its first one. */
    int who = chk.bad ? h.rank : h.size, first;
    MPI_CK(MPI_Allreduce(&who, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (first < h.size && first != 0) {
        if (h.rank == first)
            MPI_CK(MPI_Send(chk.first, sizeof(chk.first), MPI_CHAR, 0, 7, MPI_COMM_WORLD));
        else if (h.rank == 0)
            MPI_CK(MPI_Recv(chk.first, sizeof(chk.first), MPI_CHAR, first, 7, MPI_COMM_WORLD,
                            MPI_STATUS_IGNORE));
    }
    int ok = sum3[2] == 0;
    write_csv(&h, &t, devname, ok);
    if (h.rank == 0) {
        printf("# checksum %016" PRIx64 "\n", sum);
        if (ok)
            printf("verified: %ld cells and %ld halo cells on %d ranks match the host "
                   "computation bit for bit\n",
                   sum3[0], sum3[1], h.size);
        else
            printf("MISMATCH: %ld of %ld cells differ from the host computation; first: %s\n",
                   sum3[2], sum3[0] + sum3[1], chk.first);
        fflush(stdout);
    }

    free(ref.cur);
    free(ref.nxt);
    free(tmp);
    perf_used_finalize();
    teardown(&h);
    return ok ? 0 : 1;
}
