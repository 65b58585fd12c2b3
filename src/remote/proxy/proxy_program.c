/* mpigpu-proxy: programs, kernels and info queries. */
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

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
    case MGW_K_IMAGE:
        return p == CL_IMAGE_BUFFER;
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
    case MGW_K_IMAGE:
        return clGetImageInfo(h, p, n, v, sz);
    }
    return CL_INVALID_VALUE;
}

/* CL_PROGRAM_BINARIES: one binary per device in the reply. */
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
        mgw_blob_t bl[MGW_MAX_DEVS];
        for (cl_uint i = 0; i < n; i++)
            bl[i] = (mgw_blob_t){.data = {bin[i], sizes[i]}};
        mgw_get_info_reply_put(r, &(mgw_get_info_reply_t){.binaries = {.n = n, .v = bl}});
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
    [MGW_K_IMAGE] = MGW_K_MEM,
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
        mgw_get_info_reply_put(r, &(mgw_get_info_reply_t){.value = {v, sz}});
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
    mgw_program_source_t m;
    cl_int err;
    if (mgw_program_source_decode(c, &m))
        return MGPX_BAD;
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, m.ctx, MGW_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (s->dry)
        return CL_SUCCESS;
    if ((err = mgpx_obj_admit(s, MGW_K_PROGRAM)))
        return err;
    const char *src = m.source.p;
    cl_program p = clCreateProgramWithSource(ctx->h, 1, &src, &m.source.n, &err);
    return put_program(s, m.id, p, err);
}

int mgpx_op_program_binary(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_program_binary_t m;
    mgw_binary_t bin;
    cl_device_id devs[MGW_MAX_DEVS];
    const unsigned char *bins[MGW_MAX_DEVS];
    size_t lens[MGW_MAX_DEVS];
    cl_int st[MGW_MAX_DEVS], err = CL_SUCCESS;
    if (mgw_program_binary_decode(c, &m) || m.binaries.n == 0)
        return MGPX_BAD;
    uint32_t n = m.binaries.n;
    for (uint32_t i = 0; mgw_binary_next(&m.binaries, &bin) == 0; i++) {
        if (!(devs[i] = mgpx_dev(s, bin.dev)))
            err = CL_INVALID_DEVICE;
        bins[i] = bin.data.p;
        lens[i] = bin.data.n;
    }
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, m.ctx, MGW_K_CONTEXT);
    if (!ctx)
        return CL_INVALID_CONTEXT;
    if (err || s->dry || (err = mgpx_obj_admit(s, MGW_K_PROGRAM)))
        return err;
    cl_program p = clCreateProgramWithBinary(ctx->h, n, devs, lens, bins, st, &err);
    err = put_program(s, m.id, p, err);
    mgw_status_t sl[MGW_MAX_DEVS];
    for (uint32_t i = 0; i < n; i++)
        sl[i] = (mgw_status_t){.status = st[i]};
    mgw_program_binary_reply_put(r, &(mgw_program_binary_reply_t){.statuses = {.n = n, .v = sl}});
    return err;
}

/* The devices of a device list (wire indexes), or CL_INVALID_DEVICE. */
static cl_int devs_get(mgpx_session_t *s, const mgw_ids_t *ids, cl_device_id *devs)
{
    cl_int err = CL_SUCCESS;
    for (uint32_t i = 0; i < ids->n; i++)
        if (!(devs[i] = mgpx_dev(s, mgw_ids_get(ids, i))))
            err = CL_INVALID_DEVICE;
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
    mgw_program_build_t m;
    cl_device_id devs[MGW_MAX_DEVS];
    char *o2 = NULL;
    if (mgw_program_build_decode(c, &m)) {
        mgw_program_build_free(&m);
        return MGPX_BAD;
    }
    const char *opt = m.options;
    uint32_t n = m.devs.n;
    mgpx_obj_t *p = mgpx_map_get(&s->map, m.id, MGW_K_PROGRAM);
    cl_int err = devs_get(s, &m.devs, devs);
    if (!p)
        err = CL_INVALID_PROGRAM;
    if (!err && !s->dry)
        err = (o2 = with_arg_info(opt)) ? clBuildProgram(p->h, n, n ? devs : NULL, o2, NULL, NULL)
                                        : CL_OUT_OF_HOST_MEMORY;
    if (err == CL_BUILD_PROGRAM_FAILURE && !s->dry)
        err = clBuildProgram(p->h, n, n ? devs : NULL, opt, NULL, NULL);
    mgw_program_build_free(&m);
    free(o2);
    return err;
}

int mgpx_op_program_compile(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_program_compile_t m;
    mgw_header_t hd;
    cl_device_id devs[MGW_MAX_DEVS];
    cl_program hdr[MGW_MAX_HEADERS];
    char *names[MGW_MAX_HEADERS] = {0}, *o2 = NULL;
    if (mgw_program_compile_decode(c, &m)) {
        mgw_program_compile_free(&m);
        return MGPX_BAD;
    }
    const char *opt = m.options;
    uint32_t n = m.devs.n, nh = m.headers.n;
    cl_int err = CL_SUCCESS;
    for (uint32_t i = 0; mgw_header_next(&m.headers, &hd) == 0; i++) {
        mgpx_obj_t *h = mgpx_map_get(&s->map, hd.program, MGW_K_PROGRAM);
        hdr[i] = h ? h->h : NULL;
        if (!h)
            err = CL_INVALID_PROGRAM;
        names[i] = (char *)hd.name; /* the header's copy: ours to free */
    }
    if (devs_get(s, &m.devs, devs))
        err = CL_INVALID_DEVICE;
    mgpx_obj_t *p = mgpx_map_get(&s->map, m.id, MGW_K_PROGRAM);
    if (!p)
        err = CL_INVALID_PROGRAM;
    if (!err && !s->dry)
        err = (o2 = with_arg_info(opt))
                  ? clCompileProgram(p->h, n, n ? devs : NULL, o2, nh, nh ? hdr : NULL,
                                     nh ? (const char **)names : NULL, NULL, NULL)
                  : CL_OUT_OF_HOST_MEMORY;
    if (err == CL_COMPILE_PROGRAM_FAILURE && !s->dry)
        err = clCompileProgram(p->h, n, n ? devs : NULL, opt, nh, nh ? hdr : NULL,
                               nh ? (const char **)names : NULL, NULL, NULL);
    for (uint32_t i = 0; i < nh; i++)
        free(names[i]);
    mgw_program_compile_free(&m);
    free(o2);
    return err;
}

int mgpx_op_program_link(mgpx_session_t *s, mgw_cur_t *c, mgw_buf_t *r)
{
    mgw_program_link_t m;
    cl_device_id devs[MGW_MAX_DEVS];
    cl_program progs[MGW_MAX_DEVS];
    if (mgw_program_link_decode(c, &m)) {
        mgw_program_link_free(&m);
        return MGPX_BAD;
    }
    uint32_t n = m.devs.n, np = m.programs.n;
    mgpx_obj_t *ctx = mgpx_map_get(&s->map, m.ctx, MGW_K_CONTEXT);
    cl_int err = devs_get(s, &m.devs, devs);
    for (uint32_t i = 0; i < np; i++) {
        mgpx_obj_t *p = mgpx_map_get(&s->map, mgw_ids_get(&m.programs, i), MGW_K_PROGRAM);
        progs[i] = p ? p->h : NULL;
        if (!p)
            err = CL_INVALID_PROGRAM;
    }
    if (!ctx)
        err = CL_INVALID_CONTEXT;
    if (!err && !s->dry)
        err = mgpx_obj_admit(s, MGW_K_PROGRAM);
    if (!err && !s->dry) {
        cl_program p =
            clLinkProgram(ctx->h, n, n ? devs : NULL, m.options, np, progs, NULL, NULL, &err);
        err = put_program(s, m.id, p, err);
    }
    mgw_program_link_free(&m);
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
    mgpx_obj_t *p = bad ? NULL : mgpx_map_get(&s->map, m.program, MGW_K_PROGRAM);
    if (bad || !p || s->dry || (err = mgpx_obj_admit(s, MGW_K_KERNEL))) {
        mgw_kernel_create_free(&m);
        return bad ? MGPX_BAD : !p ? CL_INVALID_PROGRAM : s->dry ? CL_SUCCESS : err;
    }
    cl_kernel k = clCreateKernel(p->h, m.name, &err);
    mgw_kernel_create_free(&m);
    if (err)
        return err;
    mgpx_kargs_t *ka = NULL;
    if (clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs, NULL) ||
        nargs > MGW_MAX_ARGS || !(ka = malloc(sizeof *ka + nargs)) ||
        mgpx_map_put(&s->map, m.id, MGW_K_KERNEL, k, ka)) {
        free(ka);
        clReleaseKernel(k);
        return CL_INVALID_VALUE;
    }
    ka->n = nargs;
    mgw_karg_info_t *ai = calloc(nargs ? nargs : 1, sizeof *ai);
    char(*type)[128] = calloc(nargs ? nargs : 1, sizeof *type);
    for (cl_uint i = 0; i < nargs; i++) {
        ka->kind[i] = arg_kind(k, i);
        if (type &&
            clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, sizeof type[i] - 1, type[i], NULL))
            type[i][0] = 0;
        if (ai)
            ai[i] = (mgw_karg_info_t){.kind = ka->kind[i], .type = type ? type[i] : ""};
    }
    if (ai && type)
        mgw_kernel_create_reply_put(r, &(mgw_kernel_create_reply_t){.args = {.n = nargs, .v = ai}});
    else
        r->err = 1; /* answered CL_OUT_OF_HOST_MEMORY; the kernel stays until released */
    free(ai);
    free(type);
    return CL_SUCCESS;
}
