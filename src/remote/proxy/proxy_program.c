/* mpigpu-proxy: programs, kernels and info queries. */
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

#define DECODED(c)                                                                                 \
    do {                                                                                           \
        if (mgrm_cur_done(c))                                                                      \
            return MGRM_BAD;                                                                       \
    } while (0)

/* Parameters whose values are handles never cross the wire: the client
 * answers those itself. */
static int handle_param(int kind, cl_uint p)
{
    switch (kind) {
    case MGRM_K_DEVICE:
        return p == CL_DEVICE_PLATFORM || p == CL_DEVICE_PARENT_DEVICE;
    case MGRM_K_CONTEXT:
        return p == CL_CONTEXT_DEVICES || p == CL_CONTEXT_PROPERTIES;
    case MGRM_K_QUEUE:
        return p == CL_QUEUE_CONTEXT || p == CL_QUEUE_DEVICE;
    case MGRM_K_MEM:
        return p == CL_MEM_CONTEXT || p == CL_MEM_ASSOCIATED_MEMOBJECT || p == CL_MEM_HOST_PTR;
    case MGRM_K_PROGRAM:
        return p == CL_PROGRAM_CONTEXT || p == CL_PROGRAM_DEVICES;
    case MGRM_K_KERNEL:
        return p == CL_KERNEL_CONTEXT || p == CL_KERNEL_PROGRAM;
    case MGRM_K_EVENT:
        return p == CL_EVENT_COMMAND_QUEUE || p == CL_EVENT_CONTEXT;
    }
    return 0;
}

static cl_int get_info(int kind, void *h, uint64_t aux, cl_device_id dev, cl_uint p, size_t n,
                       void *v, size_t *sz)
{
    switch (kind) {
    case MGRM_K_DEVICE:
        return clGetDeviceInfo(dev, p, n, v, sz);
    case MGRM_K_CONTEXT:
        return clGetContextInfo(h, p, n, v, sz);
    case MGRM_K_QUEUE:
        return clGetCommandQueueInfo(h, p, n, v, sz);
    case MGRM_K_MEM:
        return clGetMemObjectInfo(h, p, n, v, sz);
    case MGRM_K_PROGRAM:
        return clGetProgramInfo(h, p, n, v, sz);
    case MGRM_K_PROGRAM_BUILD:
        return clGetProgramBuildInfo(h, dev, p, n, v, sz);
    case MGRM_K_KERNEL:
        return clGetKernelInfo(h, p, n, v, sz);
    case MGRM_K_KERNEL_WG:
        return clGetKernelWorkGroupInfo(h, dev, p, n, v, sz);
    case MGRM_K_KERNEL_ARG:
        return clGetKernelArgInfo(h, (cl_uint)aux, p, n, v, sz);
    case MGRM_K_EVENT:
        return clGetEventInfo(h, p, n, v, sz);
    case MGRM_K_PROFILING:
        return clGetEventProfilingInfo(h, p, n, v, sz);
    }
    return CL_INVALID_VALUE;
}

/* CL_PROGRAM_BINARIES: u32 n, then each binary as bytes. */
static cl_int program_binaries(cl_program prog, mgrm_buf_t *r)
{
    cl_uint n = 0;
    cl_int err = clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof n, &n, NULL);
    if (err || n == 0 || n > MGRM_MAX_DEVS)
        return err ? err : CL_INVALID_PROGRAM;
    size_t sizes[MGRM_MAX_DEVS];
    unsigned char *bin[MGRM_MAX_DEVS] = {0};
    err = clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, n * sizeof(size_t), sizes, NULL);
    for (cl_uint i = 0; i < n && !err; i++)
        if (!(bin[i] = malloc(sizes[i] ? sizes[i] : 1)))
            err = CL_OUT_OF_HOST_MEMORY;
    if (!err)
        err = clGetProgramInfo(prog, CL_PROGRAM_BINARIES, n * sizeof(void *), bin, NULL);
    if (!err) {
        mgrm_buf_u32(r, n);
        for (cl_uint i = 0; i < n; i++)
            mgrm_buf_bytes(r, bin[i], sizes[i]);
    }
    for (cl_uint i = 0; i < n; i++)
        free(bin[i]);
    return err;
}

static const int info_kind[MGRM_K_MAX] = {
    [MGRM_K_CONTEXT] = MGRM_K_CONTEXT,
    [MGRM_K_QUEUE] = MGRM_K_QUEUE,
    [MGRM_K_MEM] = MGRM_K_MEM,
    [MGRM_K_PROGRAM] = MGRM_K_PROGRAM,
    [MGRM_K_KERNEL] = MGRM_K_KERNEL,
    [MGRM_K_EVENT] = MGRM_K_EVENT,
    [MGRM_K_PROGRAM_BUILD] = MGRM_K_PROGRAM,
    [MGRM_K_KERNEL_WG] = MGRM_K_KERNEL,
    [MGRM_K_KERNEL_ARG] = MGRM_K_KERNEL,
    [MGRM_K_PROFILING] = MGRM_K_EVENT,
};

int mgrm_op_info(mgrm_session_t *s, mgrm_cur_t *c, mgrm_buf_t *r)
{
    uint32_t kind = mgrm_cur_u32(c);
    uint64_t id = mgrm_cur_u64(c), aux = mgrm_cur_u64(c);
    cl_uint p = mgrm_cur_u32(c);
    cl_device_id dev = NULL;
    void *h = NULL;
    DECODED(c);
    if (kind == MGRM_K_DEVICE) {
        if (!(dev = mgrm_dev(s, id)))
            return CL_INVALID_DEVICE;
    } else {
        mgrm_obj_t *o = kind < MGRM_K_MAX && info_kind[kind]
                            ? mgrm_map_get(&s->map, id, info_kind[kind])
                            : NULL;
        if (!o)
            return CL_INVALID_VALUE;
        h = o->h;
        if ((kind == MGRM_K_PROGRAM_BUILD || kind == MGRM_K_KERNEL_WG) && !(dev = mgrm_dev(s, aux)))
            return CL_INVALID_DEVICE;
    }
    if (handle_param((int)kind, p))
        return CL_INVALID_VALUE;
    if (s->dry)
        return CL_SUCCESS;
    if (kind == MGRM_K_PROGRAM && p == CL_PROGRAM_BINARIES)
        return program_binaries(h, r);
    size_t sz = 0;
    cl_int err = get_info((int)kind, h, aux, dev, p, 0, NULL, &sz);
    if (err)
        return err;
    if (sz > MGRM_MSG_MAX / 2)
        return CL_OUT_OF_RESOURCES;
    void *v = malloc(sz ? sz : 1);
    if (!v)
        return CL_OUT_OF_HOST_MEMORY;
    err = get_info((int)kind, h, aux, dev, p, sz, v, NULL);
    if (!err)
        mgrm_buf_bytes(r, v, sz);
    free(v);
    return err;
}

static int put_program(mgrm_session_t *s, uint64_t id, cl_program p, cl_int err)
{
    if (p && mgrm_map_put(&s->map, id, MGRM_K_PROGRAM, p, NULL)) {
        clReleaseProgram(p);
        return CL_INVALID_VALUE;
    }
    return err;
}

int mgrm_op_program_source(mgrm_session_t *s, mgrm_cur_t *c, mgrm_buf_t *r)
{
    uint64_t id = mgrm_cur_u64(c), ctxid = mgrm_cur_u64(c);
    size_t n;
    const char *src = mgrm_cur_bytes(c, &n);
    cl_int err;
    DECODED(c);
    mgrm_obj_t *ctx = mgrm_map_get(&s->map, ctxid, MGRM_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (s->dry)
        return CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(ctx->h, 1, &src, &n, &err);
    return put_program(s, id, p, err);
}

int mgrm_op_program_binary(mgrm_session_t *s, mgrm_cur_t *c, mgrm_buf_t *r)
{
    uint64_t id = mgrm_cur_u64(c), ctxid = mgrm_cur_u64(c);
    uint32_t n = mgrm_cur_u32(c);
    cl_device_id devs[MGRM_MAX_DEVS];
    const unsigned char *bins[MGRM_MAX_DEVS];
    size_t lens[MGRM_MAX_DEVS];
    cl_int st[MGRM_MAX_DEVS], err = CL_SUCCESS;
    if (n == 0 || n > MGRM_MAX_DEVS)
        return MGRM_BAD;
    for (uint32_t i = 0; i < n; i++) {
        if (!(devs[i] = mgrm_dev(s, mgrm_cur_u64(c))))
            err = CL_INVALID_DEVICE;
        bins[i] = mgrm_cur_bytes(c, &lens[i]);
    }
    DECODED(c);
    mgrm_obj_t *ctx = mgrm_map_get(&s->map, ctxid, MGRM_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (err || s->dry)
        return err;
    cl_program p = clCreateProgramWithBinary(ctx->h, n, devs, lens, bins, st, &err);
    err = put_program(s, id, p, err);
    for (uint32_t i = 0; i < n; i++)
        mgrm_buf_i32(r, st[i]);
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

int mgrm_op_program_build(mgrm_session_t *s, mgrm_cur_t *c, mgrm_buf_t *r)
{
    uint64_t id = mgrm_cur_u64(c), idx[MGRM_MAX_DEVS];
    cl_device_id devs[MGRM_MAX_DEVS];
    uint32_t n = mgrm_cur_ids(c, idx, MGRM_MAX_DEVS);
    char *opt = mgrm_cur_strdup(c), *o2 = NULL;
    cl_int err = CL_SUCCESS;
    if (mgrm_cur_done(c)) {
        free(opt);
        return MGRM_BAD;
    }
    mgrm_obj_t *p = mgrm_map_get(&s->map, id, MGRM_K_PROGRAM);
    for (uint32_t i = 0; i < n; i++)
        if (!(devs[i] = mgrm_dev(s, idx[i])))
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

int mgrm_op_program_compile(mgrm_session_t *s, mgrm_cur_t *c, mgrm_buf_t *r)
{
    uint64_t id = mgrm_cur_u64(c), idx[MGRM_MAX_DEVS];
    cl_device_id devs[MGRM_MAX_DEVS];
    uint32_t n = mgrm_cur_ids(c, idx, MGRM_MAX_DEVS);
    char *opt = mgrm_cur_strdup(c), *o2 = NULL;
    uint32_t nh = mgrm_cur_u32(c);
    cl_program hdr[64];
    char *names[64] = {0};
    cl_int err = CL_SUCCESS;
    if (nh > 64)
        c->err = 1;
    for (uint32_t i = 0; i < nh && !c->err; i++) {
        mgrm_obj_t *h = mgrm_map_get(&s->map, mgrm_cur_u64(c), MGRM_K_PROGRAM);
        hdr[i] = h ? h->h : NULL;
        if (!h)
            err = CL_INVALID_PROGRAM;
        names[i] = mgrm_cur_strdup(c);
    }
    mgrm_obj_t *p = mgrm_map_get(&s->map, id, MGRM_K_PROGRAM);
    for (uint32_t i = 0; i < n; i++)
        if (!(devs[i] = mgrm_dev(s, idx[i])))
            err = CL_INVALID_DEVICE;
    if (!p)
        err = CL_INVALID_PROGRAM;
    if (mgrm_cur_done(c))
        err = MGRM_BAD;
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

int mgrm_op_program_link(mgrm_session_t *s, mgrm_cur_t *c, mgrm_buf_t *r)
{
    uint64_t id = mgrm_cur_u64(c), ctxid = mgrm_cur_u64(c), idx[MGRM_MAX_DEVS];
    cl_device_id devs[MGRM_MAX_DEVS];
    uint32_t n = mgrm_cur_ids(c, idx, MGRM_MAX_DEVS);
    char *opt = mgrm_cur_strdup(c);
    uint64_t pid[MGRM_MAX_DEVS];
    cl_program progs[MGRM_MAX_DEVS];
    uint32_t np = mgrm_cur_ids(c, pid, MGRM_MAX_DEVS);
    cl_int err = CL_SUCCESS;
    mgrm_obj_t *ctx = mgrm_map_get(&s->map, ctxid, MGRM_K_CONTEXT);
    for (uint32_t i = 0; i < n; i++)
        if (!(devs[i] = mgrm_dev(s, idx[i])))
            err = CL_INVALID_DEVICE;
    for (uint32_t i = 0; i < np; i++) {
        mgrm_obj_t *p = mgrm_map_get(&s->map, pid[i], MGRM_K_PROGRAM);
        progs[i] = p ? p->h : NULL;
        if (!p)
            err = CL_INVALID_PROGRAM;
    }
    if (!ctx)
        err = CL_INVALID_CONTEXT;
    if (mgrm_cur_done(c))
        err = MGRM_BAD;
    if (!err && !s->dry) {
        cl_program p = clLinkProgram(ctx->h, n, n ? devs : NULL, opt, np, progs, NULL, NULL, &err);
        err = put_program(s, id, p, err);
        mgrm_buf_u8(r, p != NULL);
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
        return MGRM_ARG_LOCAL;
    if (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL || aq == CL_KERNEL_ARG_ADDRESS_CONSTANT)
        return MGRM_ARG_MEM;
    clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, sizeof type - 1, type, NULL);
    if (!strcmp(type, "sampler_t"))
        return MGRM_ARG_SAMPLER;
    if (!strncmp(type, "image", 5))
        return MGRM_ARG_MEM;
    return MGRM_ARG_VALUE;
}

int mgrm_op_kernel_create(mgrm_session_t *s, mgrm_cur_t *c, mgrm_buf_t *r)
{
    uint64_t id = mgrm_cur_u64(c), pid = mgrm_cur_u64(c);
    char *name = mgrm_cur_strdup(c);
    cl_int err;
    cl_uint nargs = 0;
    if (mgrm_cur_done(c)) {
        free(name);
        return MGRM_BAD;
    }
    mgrm_obj_t *p = mgrm_map_get(&s->map, pid, MGRM_K_PROGRAM);
    if (!p || s->dry) {
        free(name);
        return p ? CL_SUCCESS : CL_INVALID_PROGRAM;
    }
    cl_kernel k = clCreateKernel(p->h, name, &err);
    free(name);
    if (err)
        return err;
    mgrm_kargs_t *ka = NULL;
    if (clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL) || nargs > 4096 ||
        !(ka = malloc(sizeof *ka + nargs)) || mgrm_map_put(&s->map, id, MGRM_K_KERNEL, k, ka)) {
        free(ka);
        clReleaseKernel(k);
        return CL_INVALID_VALUE;
    }
    ka->n = nargs;
    mgrm_buf_u32(r, nargs);
    for (cl_uint i = 0; i < nargs; i++) {
        char type[128] = "";
        mgrm_buf_u8(r, ka->kind[i] = arg_kind(k, i));
        if (clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, sizeof type - 1, type, NULL))
            type[0] = 0;
        mgrm_buf_str(r, type);
    }
    return CL_SUCCESS;
}
