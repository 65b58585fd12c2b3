/* mpigpu-proxy: programs, kernels and info queries. */
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

#define DECODED(c)                                                                                 \
    do {                                                                                           \
        if (mgw_cur_done(c))                                                                       \
            return MGPX_BAD;                                                                       \
    } while (0)

/* Parameters whose values are handles never cross the wire: the client
 * answers those itself. */
static int handle_param(int kind, cl_uint p)
{
    switch (kind) {
    case MGW_K_DEVICE:
        return p == CL_DEVICE_PLATFORM || p == CL_DEVICE_PARENT_DEVICE;
    case MGW_K_CONTEXT:
        return p == CL_CONTEXT_DEVICES || p == CL_CONTEXT_PROPERTIES;
    case MGW_K_QUEUE:
        return p == CL_QUEUE_CONTEXT || p == CL_QUEUE_DEVICE;
    case MGW_K_MEM:
        return p == CL_MEM_CONTEXT || p == CL_MEM_ASSOCIATED_MEMOBJECT || p == CL_MEM_HOST_PTR;
    case MGW_K_PROGRAM:
        return p == CL_PROGRAM_CONTEXT || p == CL_PROGRAM_DEVICES;
    case MGW_K_KERNEL:
        return p == CL_KERNEL_CONTEXT || p == CL_KERNEL_PROGRAM;
    case MGW_K_EVENT:
        return p == CL_EVENT_COMMAND_QUEUE || p == CL_EVENT_CONTEXT;
    }
    return 0;
}

static cl_int get_info(int kind, void *h, uint64_t aux, cl_device_id dev, cl_uint p, size_t n,
                       void *v, size_t *sz)
{
    switch (kind) {
    case MGW_K_DEVICE:
        return clGetDeviceInfo(dev, p, n, v, sz);
    case MGW_K_CONTEXT:
        return clGetContextInfo(h, p, n, v, sz);
    case MGW_K_QUEUE:
        return clGetCommandQueueInfo(h, p, n, v, sz);
    case MGW_K_MEM:
        return clGetMemObjectInfo(h, p, n, v, sz);
    case MGW_K_PROGRAM:
        return clGetProgramInfo(h, p, n, v, sz);
    case MGW_K_PROGRAM_BUILD:
        return clGetProgramBuildInfo(h, dev, p, n, v, sz);
    case MGW_K_KERNEL:
        return clGetKernelInfo(h, p, n, v, sz);
    case MGW_K_KERNEL_WG:
        return clGetKernelWorkGroupInfo(h, dev, p, n, v, sz);
    case MGW_K_KERNEL_ARG:
        return clGetKernelArgInfo(h, (cl_uint)aux, p, n, v, sz);
    case MGW_K_EVENT:
        return clGetEventInfo(h, p, n, v, sz);
    case MGW_K_PROFILING:
        return clGetEventProfilingInfo(h, p, n, v, sz);
    }
    return CL_INVALID_VALUE;
}

/* CL_PROGRAM_BINARIES: u32 n, then each binary as bytes. */
static cl_int program_binaries(cl_program prog, mgw_buf_t *r)
{
    cl_uint n = 0;
    cl_int err = clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof n, &n, NULL);
    if (err || n == 0 || n > MGW_MAX_DEVS)
        return err ? err : CL_INVALID_PROGRAM;
    size_t sizes[MGW_MAX_DEVS];
    unsigned char *bin[MGW_MAX_DEVS] = {0};
    err = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, n * sizeof(size_t), sizes, NULL);
    for (cl_uint i = 0; i < n && !err; i++)
        if (!(bin[i] = malloc(sizes[i] ? sizes[i] : 1)))
            err = CL_OUT_OF_HOST_MEMORY;
    if (!err)
        err = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, n * sizeof(void *), bin, NULL);
    if (!err) {
        mgw_buf_u32(r, n);
        for (cl_uint i = 0; i < n; i++)
            mgw_buf_bytes(r, bin[i], sizes[i]);
    }
    for (cl_uint i = 0; i < n; i++)
        free(bin[i]);
    return err;
}

static const int info_kind[MGW_K_MAX] = {
    [MGW_K_CONTEXT] = MGW_K_CONTEXT,
    [MGW_K_QUEUE] = MGW_K_QUEUE,
    [MGW_K_MEM] = MGW_K_MEM,
    [MGW_K_PROGRAM] = MGW_K_PROGRAM,
    [MGW_K_KERNEL] = MGW_K_KERNEL,
    [MGW_K_EVENT] = MGW_K_EVENT,
    [MGW_K_PROGRAM_BUILD] = MGW_K_PROGRAM,
    [MGW_K_KERNEL_WG] = MGW_K_KERNEL,
    [MGW_K_KERNEL_ARG] = MGW_K_KERNEL,
    [MGW_K_PROFILING] = MGW_K_EVENT,
};

int mgpx_op_info(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_get_info_t m;
    cl_device_id dev = NULL;
    void *h = NULL;
    if (mgw_get_info_decode(c, &m))
        return MGPX_BAD;
    uint32_t kind = m.kind;
    uint64_t id = m.id, aux = m.aux;
    cl_uint p = m.param;
    if (kind == MGW_K_DEVICE) {
        if (!(dev = mgpx_dev(s, id)))
            return CL_INVALID_DEVICE;
    } else {
        mgpx_obj_t *o =
            kind < MGW_K_MAX && info_kind[kind] ? mgpx_map_get(&s->map, id, info_kind[kind]) : NULL;
        if (!o)
            return CL_INVALID_VALUE;
        h = o->h;
        if ((kind == MGW_K_PROGRAM_BUILD || kind == MGW_K_KERNEL_WG) && !(dev = mgpx_dev(s, aux)))
            return CL_INVALID_DEVICE;
    }
    if (handle_param((int)kind, p))
        return CL_INVALID_VALUE;
    if (s->dry)
        return CL_SUCCESS;
    if (kind == MGW_K_PROGRAM && p == CL_PROGRAM_BINARIES)
        return program_binaries(h, r);
    size_t sz = 0;
    cl_int err = get_info((int)kind, h, aux, dev, p, 0, NULL, &sz);
    if (err)
        return err;
    if (sz > MGW_MSG_MAX / 2)
        return CL_OUT_OF_RESOURCES;
    void *v = malloc(sz ? sz : 1);
    if (!v)
        return CL_OUT_OF_HOST_MEMORY;
    err = get_info((int)kind, h, aux, dev, p, sz, v, NULL);
    if (!err)
        mgw_buf_bytes(r, v, sz);
    free(v);
    return err;
}

static int put_program(mgpx_session_t *s, uint64_t id, cl_program p, cl_int err)
{
    if (p && mgpx_map_put(&s->map, id, MGW_K_PROGRAM, p, NULL)) {
        clReleaseProgram(p);
        return CL_INVALID_VALUE;
    }
    return err;
}

int mgpx_op_program_source(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    uint64_t id = mgw_cur_u64(c), ctxid = mgw_cur_u64(c);
    size_t n;
    const char *src = mgw_cur_bytes(c, &n);
    cl_int err;
    DECODED(c);
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, ctxid, MGW_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (s->dry)
        return CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(ctx->h, 1, &src, &n, &err);
    return put_program(s, id, p, err);
}

int mgpx_op_program_binary(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    uint64_t id = mgw_cur_u64(c), ctxid = mgw_cur_u64(c);
    uint32_t n = mgw_cur_u32(c);
    cl_device_id devs[MGW_MAX_DEVS];
    const unsigned char *bins[MGW_MAX_DEVS];
    size_t lens[MGW_MAX_DEVS];
    cl_int st[MGW_MAX_DEVS], err = CL_SUCCESS;
    if (n == 0 || n > MGW_MAX_DEVS)
        return MGPX_BAD;
    for (uint32_t i = 0; i < n; i++) {
        if (!(devs[i] = mgpx_dev(s, mgw_cur_u64(c))))
            err = CL_INVALID_DEVICE;
        bins[i] = mgw_cur_bytes(c, &lens[i]);
    }
    DECODED(c);
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, ctxid, MGW_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (err || s->dry)
        return err;
    cl_program p = clCreateProgramWithBinary(ctx->h, n, devs, lens, bins, st, &err);
    err = put_program(s, id, p, err);
    for (uint32_t i = 0; i < n; i++)
        mgw_buf_i32(r, st[i]);
    return err;
}

/* Options plus -cl-kernel-arg-info, so that kernels report their argument
 * kinds.  A build that fails with it is tried again without it: NVIDIA's
 * compiler (driver 580) emits PTX that ptxas rejects for some programs with
 * noinline functions only when the option is given.  Kernels of such a
 * program report unknown argument kinds, which the client resolves by its
 * buffer registry. */
static char *with_arg_info(const char *opt)
{
    static const char more[] = " -cl-kernel-arg-info";
    char *o = malloc(strlen(opt) + sizeof more);
    if (o)
        strcat(strcpy(o, opt), more);
    return o;
}

int mgpx_op_program_build(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    uint64_t id = mgw_cur_u64(c), idx[MGW_MAX_DEVS];
    cl_device_id devs[MGW_MAX_DEVS];
    uint32_t n = mgw_cur_ids(c, idx, MGW_MAX_DEVS);
    char *opt = mgw_cur_strdup(c), *o2 = NULL;
    cl_int err = CL_SUCCESS;
    if (mgw_cur_done(c)) {
        free(opt);
        return MGPX_BAD;
    }
    mgpx_obj_t *p = mgpx_map_get(&s->map, id, MGW_K_PROGRAM);
    for (uint32_t i = 0; i < n; i++)
        if (!(devs[i] = mgpx_dev(s, idx[i])))
            err = CL_INVALID_DEVICE;
    if (!p)
        err = CL_INVALID_PROGRAM;
    if (!err && !s->dry)
        err = (o2 = with_arg_info(opt)) ? clBuildProgram(p->h, n, n ? devs : NULL, o2, NULL, NULL)
                                        : CL_OUT_OF_HOST_MEMORY;
    if (err == CL_BUILD_PROGRAM_FAILURE && !s->dry)
        err = clBuildProgram(p->h, n, n ? devs : NULL, opt, NULL, NULL);
    free(opt);
    free(o2);
    return err;
}

int mgpx_op_program_compile(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    uint64_t id = mgw_cur_u64(c), idx[MGW_MAX_DEVS];
    cl_device_id devs[MGW_MAX_DEVS];
    uint32_t n = mgw_cur_ids(c, idx, MGW_MAX_DEVS);
    char *opt = mgw_cur_strdup(c), *o2 = NULL;
    uint32_t nh = mgw_cur_u32(c);
    cl_program hdr[64];
    char *names[64] = {0};
    cl_int err = CL_SUCCESS;
    if (nh > 64)
        c->err = 1;
    for (uint32_t i = 0; i < nh && !c->err; i++) {
        mgpx_obj_t *h = mgpx_map_get(&s->map, mgw_cur_u64(c), MGW_K_PROGRAM);
        hdr[i] = h ? h->h : NULL;
        if (!h)
            err = CL_INVALID_PROGRAM;
        names[i] = mgw_cur_strdup(c);
    }
    mgpx_obj_t *p = mgpx_map_get(&s->map, id, MGW_K_PROGRAM);
    for (uint32_t i = 0; i < n; i++)
        if (!(devs[i] = mgpx_dev(s, idx[i])))
            err = CL_INVALID_DEVICE;
    if (!p)
        err = CL_INVALID_PROGRAM;
    if (mgw_cur_done(c))
        err = MGPX_BAD;
    if (!err && !s->dry)
        err = (o2 = with_arg_info(opt))
                  ? clCompileProgram(p->h, n, n ? devs : NULL, o2, nh, nh ? hdr : NULL,
                                     nh ? (const char **)names : NULL, NULL, NULL)
                  : CL_OUT_OF_HOST_MEMORY;
    if (err == CL_COMPILE_PROGRAM_FAILURE && !s->dry)
        err = clCompileProgram(p->h, n, n ? devs : NULL, opt, nh, nh ? hdr : NULL,
                               nh ? (const char **)names : NULL, NULL, NULL);
    for (uint32_t i = 0; i < 64; i++)
        free(names[i]);
    free(opt);
    free(o2);
    return err;
}

int mgpx_op_program_link(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    uint64_t id = mgw_cur_u64(c), ctxid = mgw_cur_u64(c), idx[MGW_MAX_DEVS];
    cl_device_id devs[MGW_MAX_DEVS];
    uint32_t n = mgw_cur_ids(c, idx, MGW_MAX_DEVS);
    char *opt = mgw_cur_strdup(c);
    uint64_t pid[MGW_MAX_DEVS];
    cl_program progs[MGW_MAX_DEVS];
    uint32_t np = mgw_cur_ids(c, pid, MGW_MAX_DEVS);
    cl_int err = CL_SUCCESS;
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, ctxid, MGW_K_CONTEXT);
    for (uint32_t i = 0; i < n; i++)
        if (!(devs[i] = mgpx_dev(s, idx[i])))
            err = CL_INVALID_DEVICE;
    for (uint32_t i = 0; i < np; i++) {
        mgpx_obj_t *p = mgpx_map_get(&s->map, pid[i], MGW_K_PROGRAM);
        progs[i] = p ? p->h : NULL;
        if (!p)
            err = CL_INVALID_PROGRAM;
    }
    if (!ctx)
        err = CL_INVALID_CONTEXT;
    if (mgw_cur_done(c))
        err = MGPX_BAD;
    if (!err && !s->dry) {
        cl_program p = clLinkProgram(ctx->h, n, n ? devs : NULL, opt, np, progs, NULL, NULL, &err);
        err = put_program(s, id, p, err);
        mgw_buf_u8(r, p != NULL);
    }
    free(opt);
    return err;
}

static uint8_t arg_kind(cl_kernel k, cl_uint i)
{
    cl_kernel_arg_address_qualifier aq;
    char type[64] = "";
    if (clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq, NULL))
        return 0xff;
    if (aq == CL_KERNEL_ARG_ADDRESS_LOCAL)
        return MGW_ARG_LOCAL;
    if (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL || aq == CL_KERNEL_ARG_ADDRESS_CONSTANT)
        return MGW_ARG_MEM;
    clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, sizeof type - 1, type, NULL);
    if (!strcmp(type, "sampler_t"))
        return MGW_ARG_SAMPLER;
    if (!strncmp(type, "image", 5))
        return MGW_ARG_MEM;
    return MGW_ARG_VALUE;
}

int mgpx_op_kernel_create(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_kernel_create_t m;
    cl_int err;
    cl_uint nargs = 0;
    int bad = mgw_kernel_create_decode(c, &m);
    uint64_t id = m.id;
    char *name = (char *)m.name; /* decode's copy: ours to free */
    if (bad) {
        free(name);
        return MGPX_BAD;
    }
    mgpx_obj_t *p = mgpx_map_get(&s->map, m.program, MGW_K_PROGRAM);
    if (!p || s->dry) {
        free(name);
        return p ? CL_SUCCESS : CL_INVALID_PROGRAM;
    }
    cl_kernel k = clCreateKernel(p->h, name, &err);
    free(name);
    if (err)
        return err;
    mgpx_kargs_t *ka = NULL;
    if (clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL) || nargs > 4096 ||
        !(ka = malloc(sizeof *ka + nargs)) || mgpx_map_put(&s->map, id, MGW_K_KERNEL, k, ka)) {
        free(ka);
        clReleaseKernel(k);
        return CL_INVALID_VALUE;
    }
    ka->n = nargs;
    mgw_buf_u32(r, nargs);
    for (cl_uint i = 0; i < nargs; i++) {
        char type[128] = "";
        mgw_buf_u8(r, ka->kind[i] = arg_kind(k, i));
        if (clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, sizeof type - 1, type, NULL))
            type[0] = 0;
        mgw_buf_str(r, type);
    }
    return CL_SUCCESS;
}
