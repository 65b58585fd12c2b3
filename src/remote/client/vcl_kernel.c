/* libmpigpu-vcl.so: kernels, their cached arguments, and launches. */
#include <stdlib.h>
#include <string.h>

#include "vcl.h"

/* The size of a value argument from its OpenCL C type name; 0 unknown. */
static size_t type_size(const char *t, cl_device_id d)
{
    static const struct {
        const char *name;
        size_t size;
    } base[] = {{"char", 1},   {"uchar", 1},     {"bool", 1},     {"short", 2},
                {"ushort", 2}, {"half", 2},      {"int", 4},      {"uint", 4},
                {"float", 4},  {"long", 8},      {"ulong", 8},    {"double", 8},
                {"size_t", 0}, {"ptrdiff_t", 0}, {"intptr_t", 0}, {"uintptr_t", 0}};
    if (!strncmp(t, "unsigned ", 9))
        t += 9;
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++) {
        size_t l = strlen(base[i].name);
        if (strncmp(t, base[i].name, l))
            continue;
        size_t sz = base[i].size;
        if (!sz) { /* address-sized */
            cl_uint bits = 64;
            mgvcl_clGetDeviceInfo(d, CL_DEVICE_ADDRESS_BITS, sizeof bits, &bits, NULL);
            sz = bits / 8;
        }
        if (!t[l])
            return sz;
        char *end;
        long n = strtol(t + l, &end, 10);
        if (*end || (n != 2 && n != 3 && n != 4 && n != 8 && n != 16))
            return 0;
        return sz * (n == 3 ? 4 : (size_t)n);
    }
    return 0;
}

static cl_kernel kernel_make(cl_program p, const char *name, cl_int *err)
{
    cl_kernel k = calloc(1, sizeof *k);
    mgw_buf_t b;
    uint8_t *rep = NULL;
    size_t len = 0;
    cl_int rc;
    if (!k || !(k->name = strdup(name))) {
        free(k);
        *err = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    k->dispatch = &mgvcl_dispatch;
    atomic_init(&k->refs, 1);
    k->prog = p;
    k->id = mgvcl_id(p->ctx->conn);
    mgw_kernel_create_encode(&b, 0,
                             &(mgw_kernel_create_t){.id = k->id, .program = p->id, .name = name});
    /* on each proxy of the context that has the program; the argument
     * kinds from the first that makes it */
    cl_context ctx = p->ctx;
    rc = CL_INVALID_PROGRAM_EXECUTABLE;
    for (cl_uint ci = 0; ci < ctx->nconn; ci++) {
        if (!(p->made & (1u << ci)))
            continue;
        cl_int r = mgvcl_call(ctx->conns[ci], &b, k->made ? NULL : &rep, k->made ? NULL : &len);
        if (r != CL_SUCCESS) {
            if (!k->made)
                rc = r;
            continue;
        }
        if (k->made) {
            k->made |= 1u << ci;
            continue;
        }
        k->made |= 1u << ci;
        rc = CL_SUCCESS;
        mgw_cur_t c;
        mgw_kernel_create_reply_t m;
        mgw_cur_init(&c, rep, len);
        if (mgw_kernel_create_reply_decode(&c, &m))
            rc = CL_OUT_OF_RESOURCES;
        else if (!(k->args = calloc(m.args.n ? m.args.n : 1, sizeof *k->args)))
            rc = CL_OUT_OF_HOST_MEMORY;
        mgw_karg_info_t a;
        for (cl_uint i = 0; !rc && mgw_karg_info_next(&m.args, &a) == 0; i++) {
            k->args[i].kind = a.kind;
            if (a.kind == MGW_ARG_VALUE)
                k->args[i].want = type_size(a.type, p->ctx->devs[0]);
            mgw_karg_info_free(&a);
        }
        if (!rc)
            k->nargs = m.args.n;
        mgw_kernel_create_reply_free(&m);
        if (rc)
            break;
    }
    mgw_buf_free(&b);
    free(rep);
    if (rc) {
        for (cl_uint ci = 0; ci < ctx->nconn; ci++)
            if (k->made & (1u << ci))
                mgvcl_release_remote(ctx->conns[ci], MGW_K_KERNEL, k->id);
        free(k->args);
        free(k->name);
        free(k);
        k = NULL;
    } else {
        mgvcl_clRetainProgram(p);
    }
    *err = rc;
    return k;
}

cl_kernel CL_API_CALL mgvcl_clCreateKernel(cl_program p, const char *name, cl_int *err)
{
    cl_int rc;
    cl_kernel k = NULL;
    if (!mgvcl_is(p))
        rc = CL_INVALID_PROGRAM;
    else if (!name)
        rc = CL_INVALID_VALUE;
    else
        k = kernel_make(p, name, &rc);
    if (err)
        *err = rc;
    return k;
}

cl_int CL_API_CALL mgvcl_clCreateKernelsInProgram(cl_program p, cl_uint n, cl_kernel *ks,
                                                  cl_uint *nret)
{
    size_t len = 0;
    cl_int rc;
    cl_uint count = 0;
    if (!mgvcl_is(p))
        return CL_INVALID_PROGRAM;
    if ((rc = mgvcl_clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, 0, NULL, &len)))
        return rc;
    char *names = malloc(len + 1), *save = NULL;
    if (!names)
        return CL_OUT_OF_HOST_MEMORY;
    if ((rc = mgvcl_clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, len, names, NULL))) {
        free(names);
        return rc;
    }
    names[len] = 0;
    for (char *s = strtok_r(names, ";", &save); s; s = strtok_r(NULL, ";", &save))
        count++;
    if (ks && n < count) {
        free(names);
        return CL_INVALID_VALUE;
    }
    if (ks) {
        mgvcl_clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, len, names, NULL);
        names[len] = 0;
        cl_uint i = 0;
        for (char *s = strtok_r(names, ";", &save); s && !rc; s = strtok_r(NULL, ";", &save))
            if ((ks[i] = kernel_make(p, s, &rc)))
                i++;
        if (rc)
            while (i)
                mgvcl_clReleaseKernel(ks[--i]);
    }
    free(names);
    if (nret && !rc)
        *nret = count;
    return rc;
}

cl_int CL_API_CALL mgvcl_clRetainKernel(cl_kernel k)
{
    if (!mgvcl_is(k))
        return CL_INVALID_KERNEL;
    atomic_fetch_add(&k->refs, 1);
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clReleaseKernel(cl_kernel k)
{
    if (!mgvcl_is(k))
        return CL_INVALID_KERNEL;
    if (atomic_fetch_sub(&k->refs, 1) == 1) {
        for (cl_uint ci = 0; ci < k->prog->ctx->nconn; ci++)
            if (k->made & (1u << ci))
                mgvcl_release_remote(k->prog->ctx->conns[ci], MGW_K_KERNEL, k->id);
        for (cl_uint i = 0; i < k->nargs; i++)
            free(k->args[i].val);
        free(k->args);
        free(k->name);
        mgvcl_clReleaseProgram(k->prog);
        free(k);
    }
    return CL_SUCCESS;
}

/* Sends nothing: the value is kept, and marked dirty only if it changed. */
cl_int CL_API_CALL mgvcl_clSetKernelArg(cl_kernel k, cl_uint idx, size_t size, const void *value)
{
    unsigned char idbuf[8];
    const void *v = value;
    if (!mgvcl_is(k))
        return CL_INVALID_KERNEL;
    if (idx >= k->nargs)
        return CL_INVALID_ARG_INDEX;
    karg_t *a = &k->args[idx];
    uint8_t kind = a->kind;
    if (kind == 0xff) /* no arg info: local if no value, else a buffer if it is a live one */
        kind = !value                                                             ? MGW_ARG_LOCAL
               : size == sizeof(cl_mem) && mgvcl_mem_live(*(cl_mem const *)value) ? MGW_ARG_MEM
                                                                                  : MGW_ARG_VALUE;
    switch (kind) {
    case MGW_ARG_MEM: {
        if (size != sizeof(cl_mem))
            return CL_INVALID_ARG_SIZE;
        cl_mem m = value ? *(cl_mem const *)value : NULL;
        if (m && !mgvcl_is(m))
            return CL_INVALID_MEM_OBJECT;
        uint64_t id = m ? m->id : 0;
        memcpy(idbuf, &id, 8);
        v = idbuf;
        size = 8;
        a->mem = m;
        break;
    }
    case MGW_ARG_LOCAL:
        if (value)
            return CL_INVALID_ARG_VALUE;
        if (!size)
            return CL_INVALID_ARG_SIZE;
        break;
    case MGW_ARG_SAMPLER: {
        if (size != sizeof(cl_sampler))
            return CL_INVALID_ARG_SIZE;
        cl_sampler sm = value ? *(cl_sampler const *)value : NULL;
        if (!sm || !mgvcl_is(sm))
            return CL_INVALID_SAMPLER;
        uint64_t id = sm->id;
        memcpy(idbuf, &id, 8);
        v = idbuf;
        size = 8;
        break;
    }
    default:
        if (!size || (a->want && size != a->want))
            return CL_INVALID_ARG_SIZE;
        if (!value)
            return CL_INVALID_ARG_VALUE;
    }
    int same = a->set && a->size == size && a->kind == kind &&
               (!v ? !a->val : a->val && !memcmp(a->val, v, size));
    if (same)
        return CL_SUCCESS;
    unsigned char *nv = NULL;
    if (v && !(nv = malloc(size)))
        return CL_OUT_OF_HOST_MEMORY;
    if (v)
        memcpy(nv, v, size);
    free(a->val);
    a->val = nv;
    a->size = size;
    if (a->kind == 0xff)
        a->kind = kind; /* the first use fixes an unknown kind */
    a->set = 1;
    a->dirty = UINT32_MAX; /* due on every proxy */
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clGetKernelInfo(cl_kernel k, cl_kernel_info p, size_t size, void *value,
                                         size_t *size_ret)
{
    cl_uint u;
    if (!mgvcl_is(k))
        return CL_INVALID_KERNEL;
    switch (p) {
    case CL_KERNEL_FUNCTION_NAME:
        return mgvcl_ret(k->name, strlen(k->name) + 1, size, value, size_ret);
    case CL_KERNEL_NUM_ARGS:
        return mgvcl_ret(&k->nargs, sizeof k->nargs, size, value, size_ret);
    case CL_KERNEL_REFERENCE_COUNT:
        u = (cl_uint)atomic_load(&k->refs);
        return mgvcl_ret(&u, sizeof u, size, value, size_ret);
    case CL_KERNEL_CONTEXT:
        return mgvcl_ret(&k->prog->ctx, sizeof(cl_context), size, value, size_ret);
    case CL_KERNEL_PROGRAM:
        return mgvcl_ret(&k->prog, sizeof k->prog, size, value, size_ret);
    }
    return mgvcl_info(k->prog->ctx->conn, MGW_K_KERNEL, k->id, 0, p, size, value, size_ret);
}

cl_int CL_API_CALL mgvcl_clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id d,
                                                  cl_kernel_work_group_info p, size_t size,
                                                  void *value, size_t *size_ret)
{
    if (!mgvcl_is(k))
        return CL_INVALID_KERNEL;
    if (!d && k->prog->ctx->ndev == 1)
        d = k->prog->ctx->devs[0];
    if (!mgvcl_is(d) || mgvcl_ctx_ci(k->prog->ctx, d->conn) < 0)
        return CL_INVALID_DEVICE;
    return mgvcl_info(d->conn, MGW_K_KERNEL_WG, k->id, d->idx, p, size, value, size_ret);
}

cl_int CL_API_CALL mgvcl_clGetKernelArgInfo(cl_kernel k, cl_uint idx, cl_kernel_arg_info p,
                                            size_t size, void *value, size_t *size_ret)
{
    if (!mgvcl_is(k))
        return CL_INVALID_KERNEL;
    if (idx >= k->nargs)
        return CL_INVALID_ARG_INDEX;
    if (!k->prog->arg_info)
        return CL_KERNEL_ARG_INFO_NOT_AVAILABLE;
    return mgvcl_info(k->prog->ctx->conn, MGW_K_KERNEL_ARG, k->id, idx, p, size, value, size_ret);
}

cl_int CL_API_CALL mgvcl_clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel k, cl_uint dim,
                                                const size_t *off, const size_t *gws,
                                                const size_t *lws, cl_uint nw, const cl_event *w,
                                                cl_event *out)
{
    mgw_buf_t b;
    mgvcl_enq_t e;
    cl_uint ndirty = 0;
    if (!mgvcl_is(k))
        return CL_INVALID_KERNEL;
    if (mgvcl_is(q) && q->ctx != k->prog->ctx)
        return CL_INVALID_CONTEXT;
    if (dim < 1 || dim > 3)
        return CL_INVALID_WORK_DIMENSION;
    if (!gws)
        return CL_INVALID_GLOBAL_WORK_SIZE;
    for (cl_uint i = 0; i < dim; i++)
        if (!gws[i])
            return CL_INVALID_GLOBAL_WORK_SIZE;
    int ci = mgvcl_is(q) ? mgvcl_ctx_ci(q->ctx, q->conn) : -1;
    if (mgvcl_is(q) && (ci < 0 || !(k->made & (1u << ci))))
        return CL_INVALID_PROGRAM_EXECUTABLE; /* not built for the queue's proxy */
    uint32_t bit = ci >= 0 ? 1u << ci : 0;
    for (cl_uint i = 0; i < k->nargs; i++) {
        if (!k->args[i].set)
            return CL_INVALID_KERNEL_ARGS;
        ndirty += (k->args[i].dirty & bit) != 0;
    }
    mgw_karg_t abuf[16], *args = ndirty > 16 ? malloc(ndirty * sizeof *args) : abuf;
    if (!args)
        return CL_OUT_OF_HOST_MEMORY;
    cl_int rc = mgvcl_enq_begin(q, nw, w, CL_COMMAND_NDRANGE_KERNEL, &e);
    if (rc) {
        if (args != abuf)
            free(args);
        return rc;
    }
    /* buffers of another proxy move here first */
    for (cl_uint i = 0; i < k->nargs && !rc && q->ctx->nconn > 1; i++)
        if (k->args[i].kind == MGW_ARG_MEM && k->args[i].mem && mgvcl_mem_live(k->args[i].mem))
            rc = mgvcl_mem_use(&e, q, k->args[i].mem);
    if (rc) {
        mgvcl_enq_abort(&e, rc);
        if (args != abuf)
            free(args);
        return rc;
    }
    mgw_enq_ndrange_t m = {.head = e.head,
                           .kernel = k->id,
                           .dim = dim,
                           .has_local = lws != NULL,
                           .args = {.n = ndirty, .v = args}};
    for (cl_uint i = 0; i < 3; i++) {
        m.offset[i] = off && i < dim ? off[i] : 0;
        m.global[i] = i < dim ? gws[i] : 1;
        m.local[i] = lws && i < dim ? lws[i] : 1;
    }
    for (cl_uint i = 0, j = 0; i < k->nargs; i++) {
        karg_t *a = &k->args[i];
        if (!(a->dirty & bit))
            continue;
        mgw_karg_t *g = &args[j++];
        *g = (mgw_karg_t){.index = i, .kind = a->kind};
        if (a->kind == MGW_ARG_MEM || a->kind == MGW_ARG_SAMPLER)
            memcpy(&g->num, a->val, 8); /* the buffer's, image's or sampler's wire ID */
        else if (a->kind == MGW_ARG_LOCAL)
            g->num = a->size;
        else
            g->value = (mgw_bytes_t){a->val, a->size};
        a->dirty &= ~bit;
    }
    mgw_enq_ndrange_encode(&b, 0, &m);
    if (args != abuf)
        free(args);
    rc = mgvcl_enq_end(q, &e, &b, out, CL_FALSE, 0, NULL, 0);
    mgw_buf_free(&b);
    return rc;
}

cl_int CL_API_CALL mgvcl_clEnqueueTask(cl_command_queue q, cl_kernel k, cl_uint nw,
                                       const cl_event *w, cl_event *out)
{
    size_t one = 1;
    return mgvcl_clEnqueueNDRangeKernel(q, k, 1, NULL, &one, &one, nw, w, out);
}

cl_int CL_API_CALL mgvcl_clEnqueueNativeKernel(cl_command_queue q, void(CL_CALLBACK *fn)(void *),
                                               void *args, size_t n, cl_uint nm, const cl_mem *ml,
                                               const void **loc, cl_uint nw, const cl_event *w,
                                               cl_event *out)
{
    return CL_INVALID_OPERATION; /* host code cannot run on a remote device */
}
