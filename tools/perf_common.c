/* Datatypes and OpenCL baselines shared by the benchmarks (see perf_common.h). */
#include "perf_common.h"
#include "mgclock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Block-by-block copies beyond this many blocks take minutes; they are skipped. */
#define PERF_MAX_BLOCK_COPIES (1L << 20)

extern const char perf_hand_src[]; /* hand.cl, embedded at build time */

double perf_now(void)
{
    return mg_clock_s();
}

long perf_parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    switch (*end) {
    case 'k':
    case 'K':
        v *= 1024;
        break;
    case 'm':
    case 'M':
        v *= 1024 * 1024;
        break;
    case 'g':
    case 'G':
        v *= 1024.0 * 1024 * 1024;
        break;
    default:
        break;
    }
    return (long)v;
}

void perf_parse_range(const char *s, long *lo, long *hi)
{
    const char *c = strchr(s, ':');
    if (c)
        *lo = perf_parse_size(s);
    *hi = perf_parse_size(c ? c + 1 : s);
}

int perf_method_set(const char *m)
{
    if (strcmp(m, "auto") && strcmp(m, "kernel") && strcmp(m, "copy") && strcmp(m, "host")) {
        fprintf(stderr, "--method must be auto, kernel, copy or host, not '%s'\n", m);
        return -1;
    }
    return setenv("MPIGPU_PACK", m, 1);
}

int perf_method_value(const char *m)
{
    static const char *const names[] = {"auto", "kernel", "copy", "host"};
    static const int values[] = {MPIX_GPU_PACK_AUTO, MPIX_GPU_PACK_KERNEL, MPIX_GPU_PACK_COPY,
                                 MPIX_GPU_PACK_HOST};
    for (int i = 0; i < 4; i++)
        if (!strcmp(m, names[i]))
            return values[i];
    return -1;
}

/* ---- what the library did, through MPI_T ---- */

static const char *const used_vars[7] = {"mpigpu_pack_calls_kernel", "mpigpu_pack_calls_copy",
                                         "mpigpu_pack_calls_host",   "mpigpu_p2p_ops_plain",
                                         "mpigpu_p2p_ops_chunked",   "mpigpu_p2p_ops_lane",
                                         "mpigpu_p2p_ops_rest"};
static const char *const used_names[7] = {"kernel",  "copy", "host", "plain",
                                          "chunked", "lane", "rest"};
static MPI_T_pvar_session used_session = MPI_T_PVAR_SESSION_NULL;
static MPI_T_pvar_handle used_handles[7];
static int used_ok;

int perf_used_init(void)
{
    int provided = 0, count = 0;
    used_ok = 0;
    if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
        return -1;
    if (MPI_T_pvar_session_create(&used_session) != MPI_SUCCESS)
        return -1;
    for (int i = 0; i < 7; i++) {
        int idx = -1;
        if (MPI_T_pvar_get_index(used_vars[i], MPI_T_PVAR_CLASS_COUNTER, &idx) != MPI_SUCCESS ||
            MPI_T_pvar_handle_alloc(used_session, idx, NULL, &used_handles[i], &count) !=
                MPI_SUCCESS)
            return -1;
    }
    used_ok = 1;
    return 0;
}

void perf_used_read(perf_used_t *u)
{
    unsigned long long v[7] = {0};
    for (int i = 0; used_ok && i < 7; i++)
        if (MPI_T_pvar_read(used_session, used_handles[i], &v[i]) != MPI_SUCCESS)
            v[i] = 0;
    memcpy(u->calls, v, sizeof(u->calls));
    memcpy(u->ops, v + 3, sizeof(u->ops));
}

static void used_join(const unsigned long long *a, const unsigned long long *b, int n,
                      const char *const *names, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++)
        if (b[i] > a[i] && at < len)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? "+" : "", names[i]);
    if (!at)
        snprintf(buf, len, "-");
}

void perf_used_label(const perf_used_t *before, const perf_used_t *after, int with_ops, char *buf,
                     size_t len)
{
    char m[64], p[64];
    if (!used_ok) {
        snprintf(buf, len, "?");
        return;
    }
    used_join(before->calls, after->calls, 3, used_names, m, sizeof(m));
    used_join(before->ops, after->ops, 4, used_names + 3, p, sizeof(p));
    if (!with_ops || (!strcmp(m, "-") && !strcmp(p, "-")))
        snprintf(buf, len, "%s", m);
    else
        snprintf(buf, len, "%s/%s", m, p);
}

void perf_setting(const char *name, char *buf, size_t len)
{
    int idx = -1, count = 0;
    MPI_T_cvar_handle h;
    char v[256] = "";
    snprintf(buf, len, "?");
    if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS ||
        MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS)
        return;
    if (count > 0 && count <= (int)sizeof(v) && MPI_T_cvar_read(h, v) == MPI_SUCCESS)
        snprintf(buf, len, "%s", v);
    MPI_T_cvar_handle_free(&h);
}

void perf_used_finalize(void)
{
    if (used_session != MPI_T_PVAR_SESSION_NULL)
        MPI_T_pvar_session_free(&used_session);
    used_ok = 0;
    MPI_T_finalize();
}

int perf_spec_parse(const char *s, perf_spec_t *spec)
{
    memset(spec, 0, sizeof(*spec));
    if (!strcmp(s, "cont")) {
        spec->kind = PERF_CONT;
    } else if (!strncmp(s, "vect:", 5)) {
        spec->kind = PERF_VECT;
        if (sscanf(s + 5, "%ld:%ld", &spec->stride, &spec->blocklen) != 2)
            goto bad;
    } else if (!strcmp(s, "subarray4d")) {
        spec->kind = PERF_SUBARRAY4D;
    } else if (!strncmp(s, "indexed:", 8)) {
        spec->kind = PERF_INDEXED;
        spec->stride = 512;
        if (sscanf(s + 8, "%ld", &spec->blocklen) != 1)
            goto bad;
    } else if (!strcmp(s, "struct") || !strcmp(s, "struct:strided")) {
        spec->kind = PERF_STRUCT;
        spec->strided = s[6] == ':';
    } else if (!strncmp(s, "face:", 5)) {
        const char *p = s + 5;
        spec->kind = PERF_FACE;
        if (*p >= '0' && *p <= '9') {
            spec->cube = strtol(p, (char **)&p, 10);
            if (*p++ != ':' || spec->cube < 2)
                goto bad;
        }
        if (strcmp(p, "xy") && strcmp(p, "xz") && strcmp(p, "yz"))
            goto bad;
        memcpy(spec->plane, p, 3);
    } else {
        goto bad;
    }
    if ((spec->kind == PERF_VECT || spec->kind == PERF_INDEXED) &&
        (spec->blocklen <= 0 || spec->blocklen > (spec->stride ? spec->stride : 512)))
        goto bad;
    snprintf(spec->name, sizeof(spec->name), "%s", s);
    return 0;
bad:
    fprintf(stderr,
            "bad -D '%s': want cont | vect:STRIDE:BLOCKLEN | subarray4d | "
            "indexed:BLOCKLEN | struct[:strided] | face:[N:]xy|xz|yz\n",
            s);
    return -1;
}

size_t perf_alloc_bytes(const perf_layout_t *lay, size_t span)
{
    return span + (size_t)(lay->side ? 64 * 64 * 64 * 8 : lay->stride);
}

int perf_sizes(const perf_spec_t *spec, long lo, long hi, long *out, int max)
{
    int n = 0;
    if (spec->kind == PERF_FACE) {
        if (spec->cube)
            out[n++] = spec->cube;
        else
            for (long c = 64; c <= 512 && n < max; c *= 2)
                out[n++] = c;
        return n;
    }
    for (long s = lo, prev = -1; s <= hi && n < max; s *= 2) {
        /* The hypercube side moves every 16x in size: one row per side. */
        long side = (long)floor(pow((double)s / 8.0, 0.25) + 1e-9);
        if (spec->kind == PERF_SUBARRAY4D && side == prev)
            continue;
        prev = side;
        out[n++] = s;
    }
    return n;
}

MPI_Datatype perf_type_create(const perf_spec_t *spec, long want, perf_layout_t *lay)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    memset(lay, 0, sizeof(*lay));
    lay->w = 8;
    switch (spec->kind) {
    case PERF_CONT: {
        long n = want / 8 > 0 ? want / 8 : 1;
        MPI_Type_contiguous((int)n, MPI_DOUBLE, &t);
        lay->nblk = 1, lay->bl = lay->stride = n * 8;
        break;
    }
    case PERF_VECT:
    case PERF_INDEXED: {
        long bl = spec->blocklen, st = spec->stride;
        long n = want / bl > 0 ? want / bl : 1;
        int w = (bl % 8 == 0 && st % 8 == 0) ? 8 : 1;
        MPI_Datatype base = w == 8 ? MPI_DOUBLE : MPI_BYTE;
        if (spec->kind == PERF_VECT) {
            MPI_Type_vector((int)n, (int)(bl / w), (int)(st / w), base, &t);
        } else {
            int *bls = malloc(n * sizeof(int)), *ds = malloc(n * sizeof(int));
            for (long i = 0; i < n; i++) {
                bls[i] = (int)(bl / w);
                ds[i] = (int)(i * st / w);
            }
            MPI_Type_indexed((int)n, bls, ds, base, &t);
            free(bls);
            free(ds);
        }
        lay->nblk = n, lay->bl = bl, lay->stride = st, lay->w = w;
        break;
    }
    case PERF_SUBARRAY4D: {
        int sizes[4] = {64, 64, 64, 64}, sub[4], starts[4] = {0, 0, 0, 0};
        int s = (int)floor(pow((double)want / 8.0, 0.25) + 1e-9);
        s = s < 1 ? 1 : (s > 64 ? 64 : s);
        for (int i = 0; i < 4; i++)
            sub[i] = s;
        MPI_Type_create_subarray(4, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &t);
        lay->side = s;
        break;
    }
    case PERF_STRUCT: {
        /* {double, int, int, char}: 17 bytes of data in a 24-byte C struct. */
        int bl[4] = {1, 1, 1, 1};
        MPI_Aint disp[4] = {0, 8, 12, 16};
        MPI_Datatype ty[4] = {MPI_DOUBLE, MPI_INT, MPI_INT, MPI_CHAR}, one, rz;
        MPI_Type_create_struct(4, bl, disp, ty, &one);
        MPI_Type_create_resized(one, 0, 24, &rz);
        MPI_Type_free(&one);
        long n = want / 17 > 0 ? want / 17 : 1;
        if (spec->strided)
            MPI_Type_vector((int)n, 1, 2, rz, &t);
        else
            MPI_Type_contiguous((int)n, rz, &t);
        MPI_Type_free(&rz);
        lay->nblk = n, lay->bl = 17, lay->stride = spec->strided ? 48 : 24, lay->w = 1;
        break;
    }
    case PERF_FACE: {
        /* Cube [z][y][x] of doubles, x fastest; the face at 0 of the third axis. */
        long c = want;
        if (!strcmp(spec->plane, "xy")) /* one z plane: contiguous */
            MPI_Type_contiguous((int)(c * c), MPI_DOUBLE, &t), lay->nblk = 1,
                                                               lay->bl = lay->stride = c * c * 8;
        else if (!strcmp(spec->plane, "xz")) /* z rows of x doubles */
            MPI_Type_vector((int)c, (int)c, (int)(c * c), MPI_DOUBLE, &t),
                lay->nblk = c, lay->bl = c * 8, lay->stride = c * c * 8;
        else /* y-z: single doubles every row */
            MPI_Type_vector((int)(c * c), 1, (int)c, MPI_DOUBLE, &t),
                lay->nblk = c * c, lay->bl = 8, lay->stride = c * 8;
        break;
    }
    }
    MPI_Type_commit(&t);
    return t;
}

/* The library's queue, and the cl_mem and offset behind a device address. */
static int perf_dev_mem(const void *dev, cl_command_queue *q, cl_mem *mem, size_t *off)
{
    int is_dev = 0;
    if (MPIX_Gpu_get_device(NULL, NULL, q) != MPI_SUCCESS ||
        MPIX_Gpu_query(dev, &is_dev, mem, off) != MPI_SUCCESS || !is_dev)
        return -1;
    return 0;
}

int perf_pinned_alloc(size_t n, perf_pinned_t *p)
{
    cl_context ctx;
    cl_command_queue q;
    cl_int err;
    MPIX_Gpu_get_device(&ctx, NULL, &q);
    p->mem = clCreateBuffer(ctx, CL_MEM_ALLOC_HOST_PTR, n ? n : 1, NULL, &err);
    if (err != CL_SUCCESS)
        return -1;
    p->ptr = clEnqueueMapBuffer(q, p->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n ? n : 1, 0,
                                NULL, NULL, &err);
    if (err != CL_SUCCESS) {
        clReleaseMemObject(p->mem);
        return -1;
    }
    /* Tell the library, so that its packs move straight into it. */
    MPIX_Gpu_host_register(p->ptr, n ? n : 1);
    return 0;
}

void perf_pinned_free(perf_pinned_t *p)
{
    cl_command_queue q;
    MPIX_Gpu_get_device(NULL, NULL, &q);
    MPIX_Gpu_host_deregister(p->ptr);
    clEnqueueUnmapMemObject(q, p->mem, p->ptr, 0, NULL, NULL);
    clFinish(q);
    clReleaseMemObject(p->mem);
}

static long perf_copy(const perf_spec_t *spec, const perf_layout_t *lay, const void *dev,
                      void *host, int write)
{
    cl_command_queue q;
    cl_mem mem;
    size_t off;
    cl_int err = CL_SUCCESS;
    long ncmd = 0;
    if (perf_dev_mem(dev, &q, &mem, &off))
        return -1;
    /* Several commands are enqueued and finished once; a single one is a
       blocking call, as a user writes it.  (On the H100 shared by two
       processes a 64-byte clEnqueueWriteBuffer from this page-locked memory
       took about 150 us either way, a clEnqueueWriteBufferRect of the same
       bytes 11 us: doc/performance.md, S22-3 and S22-5.) */
    int single = spec->kind != PERF_SUBARRAY4D &&
                 ((spec->kind != PERF_INDEXED && spec->kind != PERF_STRUCT) || lay->nblk == 1);
    cl_bool blk = single ? CL_TRUE : CL_FALSE;
    if (spec->kind == PERF_SUBARRAY4D) {
        /* One 3D rectangle per index of the outermost dimension (the paper's
           iterated cudaMemcpy3D). */
        size_t s = (size_t)lay->side, row = 64 * 8, slice = 64 * row;
        size_t region[3] = {s * 8, s, s}, hrow = s * 8, hslice = s * s * 8;
        for (size_t a = 0; a < s && err == CL_SUCCESS; a++, ncmd++) {
            size_t borg[3] = {off, 0, a * 64}, horg[3] = {0, 0, a * s};
            err = write ? clEnqueueWriteBufferRect(q, mem, blk, borg, horg, region, row, slice,
                                                   hrow, hslice, host, 0, NULL, NULL)
                        : clEnqueueReadBufferRect(q, mem, blk, borg, horg, region, row, slice, hrow,
                                                  hslice, host, 0, NULL, NULL);
        }
    } else if (spec->kind == PERF_INDEXED || spec->kind == PERF_STRUCT) {
        if (lay->nblk > PERF_MAX_BLOCK_COPIES)
            return 0;
        for (long b = 0; b < lay->nblk && err == CL_SUCCESS; b++, ncmd++) {
            size_t o = off + (size_t)(b * lay->stride);
            char *h = (char *)host + b * lay->bl;
            err = write ? clEnqueueWriteBuffer(q, mem, blk, o, (size_t)lay->bl, h, 0, NULL, NULL)
                        : clEnqueueReadBuffer(q, mem, blk, o, (size_t)lay->bl, h, 0, NULL, NULL);
        }
    } else if (lay->nblk == 1) {
        err = write ? clEnqueueWriteBuffer(q, mem, blk, off, (size_t)lay->bl, host, 0, NULL, NULL)
                    : clEnqueueReadBuffer(q, mem, blk, off, (size_t)lay->bl, host, 0, NULL, NULL);
        ncmd = 1;
    } else {
        size_t borg[3] = {off, 0, 0}, horg[3] = {0, 0, 0};
        size_t region[3] = {(size_t)lay->bl, (size_t)lay->nblk, 1};
        size_t row = (size_t)lay->stride, hrow = (size_t)lay->bl;
        err = write ? clEnqueueWriteBufferRect(q, mem, blk, borg, horg, region, row, 0, hrow, 0,
                                               host, 0, NULL, NULL)
                    : clEnqueueReadBufferRect(q, mem, blk, borg, horg, region, row, 0, hrow, 0,
                                              host, 0, NULL, NULL);
        ncmd = 1;
    }
    if (err == CL_SUCCESS && !blk)
        err = clFinish(q);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "copy baseline: OpenCL error %d\n", (int)err);
        return -1;
    }
    return ncmd;
}

long perf_copy_read(const perf_spec_t *spec, const perf_layout_t *lay, const void *dev, void *host)
{
    return perf_copy(spec, lay, dev, host, 0);
}

long perf_copy_write(const perf_spec_t *spec, const perf_layout_t *lay, void *dev, const void *host)
{
    return perf_copy(spec, lay, dev, (void *)host, 1);
}

struct perf_hand {
    cl_program prog[2]; /* [0]: T = uchar, [1]: T = ulong */
    cl_kernel vect[2], vect_x[2], indexed[2], sub4[2], empty, busy;
    unsigned wpi; /* PERF_HAND_WPI: words per work-item of hand_vect_x; 0: hand_vect */
    size_t local; /* PERF_HAND_LOCAL: work-group size (256) */
    cl_mem busy_out;
    size_t busy_n;
    cl_mem displ; /* indexed: the displacements, in words */
    long displ_n, displ_stride;
};

perf_hand_t *perf_hand_create(void)
{
    cl_context ctx;
    cl_device_id dev;
    cl_int err;
    perf_hand_t *h = calloc(1, sizeof(*h));
    const char *src = perf_hand_src;
    MPIX_Gpu_get_device(&ctx, &dev, NULL);
    for (int i = 0; i < 2; i++) {
        h->prog[i] = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
        if (err != CL_SUCCESS)
            goto fail;
        err = clBuildProgram(h->prog[i], 1, &dev, i ? "-DT=ulong" : "-DT=uchar", NULL, NULL);
        if (err != CL_SUCCESS) {
            char log[4096] = "";
            clGetProgramBuildInfo(h->prog[i], dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log,
                                  NULL);
            fprintf(stderr, "hand.cl: build failed (%d):\n%s\n", (int)err, log);
            goto fail;
        }
        h->vect[i] = clCreateKernel(h->prog[i], "hand_vect", &err);
        if (err == CL_SUCCESS)
            h->vect_x[i] = clCreateKernel(h->prog[i], "hand_vect_x", &err);
        h->indexed[i] = clCreateKernel(h->prog[i], "hand_indexed", &err);
        h->sub4[i] = clCreateKernel(h->prog[i], "hand_sub4", &err);
        if (err != CL_SUCCESS)
            goto fail;
    }
    const char *v = getenv("PERF_HAND_WPI");
    h->wpi = v && atoi(v) > 0 ? (unsigned)atoi(v) : 0;
    h->wpi = h->wpi > 4 ? 4 : h->wpi;
    v = getenv("PERF_HAND_LOCAL");
    h->local = v && atoi(v) > 0 ? (size_t)atoi(v) : 256;
    h->empty = clCreateKernel(h->prog[1], "hand_empty", &err);
    if (err != CL_SUCCESS)
        goto fail;
    h->busy = clCreateKernel(h->prog[1], "hand_busy", &err);
    if (err != CL_SUCCESS)
        goto fail;
    return h;
fail:
    perf_hand_free(h);
    return NULL;
}

void perf_hand_free(perf_hand_t *h)
{
    if (!h)
        return;
    for (int i = 0; i < 2; i++) {
        if (h->vect[i])
            clReleaseKernel(h->vect[i]);
        if (h->vect_x[i])
            clReleaseKernel(h->vect_x[i]);
        if (h->indexed[i])
            clReleaseKernel(h->indexed[i]);
        if (h->sub4[i])
            clReleaseKernel(h->sub4[i]);
        if (h->prog[i])
            clReleaseProgram(h->prog[i]);
    }
    if (h->empty)
        clReleaseKernel(h->empty);
    if (h->busy)
        clReleaseKernel(h->busy);
    if (h->busy_out)
        clReleaseMemObject(h->busy_out);
    if (h->displ)
        clReleaseMemObject(h->displ);
    free(h);
}

int perf_hand_busy(perf_hand_t *h, cl_command_queue q, unsigned iters, cl_event *ev)
{
    cl_context ctx;
    cl_device_id dev;
    cl_int err;
    MPIX_Gpu_get_device(&ctx, &dev, NULL);
    if (!h->busy_out) {
        cl_uint ncu = 1;
        clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(ncu), &ncu, NULL);
        /* Enough work-items to fill every compute unit several times over. */
        h->busy_n = (size_t)(ncu ? ncu : 1) * 2048;
        h->busy_out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, h->busy_n * sizeof(float), NULL, &err);
        if (err != CL_SUCCESS)
            return -1;
    }
    cl_uint it = iters;
    if (clSetKernelArg(h->busy, 0, sizeof(cl_mem), &h->busy_out) != CL_SUCCESS ||
        clSetKernelArg(h->busy, 1, sizeof(it), &it) != CL_SUCCESS)
        return -1;
    if (clEnqueueNDRangeKernel(q, h->busy, 1, NULL, &h->busy_n, NULL, 0, NULL, ev) != CL_SUCCESS)
        return -1;
    return clFlush(q) == CL_SUCCESS ? 0 : -1;
}

int perf_hand_empty(perf_hand_t *h)
{
    cl_command_queue q;
    size_t one = 1;
    MPIX_Gpu_get_device(NULL, NULL, &q);
    return clEnqueueNDRangeKernel(q, h->empty, 1, NULL, &one, NULL, 0, NULL, NULL) == CL_SUCCESS
               ? 0
               : -1;
}

/* The user's index list lives on the device, uploaded once per layout. */
static int perf_hand_displ(perf_hand_t *h, const perf_layout_t *lay)
{
    cl_context ctx;
    cl_command_queue q;
    cl_int err;
    if (h->displ && h->displ_n == lay->nblk && h->displ_stride == lay->stride)
        return 0;
    if (h->displ)
        clReleaseMemObject(h->displ);
    MPIX_Gpu_get_device(&ctx, NULL, &q);
    cl_ulong *d = malloc(lay->nblk * sizeof(*d));
    for (long b = 0; b < lay->nblk; b++)
        d[b] = (cl_ulong)(b * lay->stride / lay->w);
    h->displ = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, lay->nblk * sizeof(*d),
                              d, &err);
    free(d);
    h->displ_n = lay->nblk, h->displ_stride = lay->stride;
    return err == CL_SUCCESS ? 0 : -1;
}

int perf_hand_pack(perf_hand_t *h, const perf_spec_t *spec, const perf_layout_t *lay,
                   const void *dev, cl_mem dst)
{
    cl_command_queue q;
    cl_mem mem;
    size_t off;
    cl_int err = CL_SUCCESS;
    int i = lay->w == 8;
    cl_kernel k;
    cl_ulong w = (cl_ulong)lay->w, n, soff, items = 0;
    if (perf_dev_mem(dev, &q, &mem, &off) || off % w)
        return -1;
    soff = off / w;
    if (spec->kind == PERF_SUBARRAY4D) {
        cl_ulong s = (cl_ulong)lay->side;
        n = s * s * s * s;
        k = h->sub4[i];
        err |= clSetKernelArg(k, 3, sizeof(s), &s);
        err |= clSetKernelArg(k, 4, sizeof(n), &n);
    } else {
        cl_ulong wpb = (cl_ulong)lay->bl / w, st = (cl_ulong)lay->stride / w;
        n = wpb * (cl_ulong)lay->nblk;
        if (spec->kind == PERF_INDEXED) {
            if (perf_hand_displ(h, lay))
                return -1;
            k = h->indexed[i];
            err |= clSetKernelArg(k, 3, sizeof(cl_mem), &h->displ);
            err |= clSetKernelArg(k, 4, sizeof(wpb), &wpb);
            err |= clSetKernelArg(k, 5, sizeof(n), &n);
        } else {
            k = h->wpi ? h->vect_x[i] : h->vect[i];
            err |= clSetKernelArg(k, 3, sizeof(wpb), &wpb);
            err |= clSetKernelArg(k, 4, sizeof(st), &st);
            err |= clSetKernelArg(k, 5, sizeof(n), &n);
            if (h->wpi) {
                cl_uint nwi = h->wpi;
                err |= clSetKernelArg(k, 6, sizeof(nwi), &nwi);
                items = (n + nwi - 1) / nwi;
            }
        }
    }
    err |= clSetKernelArg(k, 0, sizeof(cl_mem), &mem);
    err |= clSetKernelArg(k, 1, sizeof(soff), &soff);
    err |= clSetKernelArg(k, 2, sizeof(cl_mem), &dst);
    size_t local = h->local, global = ((size_t)(items ? items : n) + local - 1) / local * local;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(q);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "hand kernel: OpenCL error %d\n", (int)err);
        return -1;
    }
    return 0;
}
