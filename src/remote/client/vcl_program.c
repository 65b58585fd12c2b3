/* libmpigpu-vcl.so: programs and kernels.  clSetKernelArg only updates the
 * client's copy of the arguments; a launch carries the arguments changed
 * since that kernel's last launch.  Argument kinds (buffer, local, value)
 * come from the proxy's clGetKernelArgInfo when the kernel is created. */
#include <stdlib.h>
#include <string.h>

#include "vcl.h"

static cl_program program_new(cl_context ctx)
{
    cl_program p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->dispatch = &mgvcl_dispatch;
    atomic_init(&p->refs, 1);
    p->arg_info = 1;
    p->ctx = ctx;
    p->id = mgvcl_id(ctx->conn);
    return p;
}

/* Releases p on each proxy that made it. */
static void program_unmake(cl_program p)
{
    for (cl_uint ci = 0; ci < p->ctx->nconn; ci++)
        if (p->made & (1u << ci))
            mgvcl_release_remote(p->ctx->conns[ci], MGW_K_PROGRAM, p->id);
    p->made = 0;
}

/* The devices of devs (n; 0: all of the context's) on conns[ci], as wire
 * indices in idx; -1 when devs names devices but none there. */
static int devs_on(cl_program p, int ci, cl_uint n, const cl_device_id *devs,
                   uint64_t idx[MGW_MAX_DEVS], mgw_ids_t *ids)
{
    cl_uint k = 0;
    if (p->ctx->nconn < 2 || !n) { /* as given: the proxy checks them */
        for (cl_uint i = 0; i < n; i++)
            idx[k++] = mgvcl_is(devs[i]) ? devs[i]->idx : UINT64_MAX;
        *ids = (mgw_ids_t){.n = k, .v = idx};
        return 0;
    }
    for (cl_uint i = 0; i < n; i++) {
        if (!mgvcl_is(devs[i]) || mgvcl_ctx_ci(p->ctx, devs[i]->conn) < 0)
            idx[k++] = UINT64_MAX; /* every proxy refuses it */
        else if (devs[i]->conn == p->ctx->conns[ci])
            idx[k++] = devs[i]->idx;
    }
    *ids = (mgw_ids_t){.n = k, .v = idx};
    return k ? 0 : -1;
}

static cl_program program_done(cl_program p, cl_int rc, cl_int *err)
{
    if (err)
        *err = rc;
    if (rc && p) {
        free(p->source);
        free(p);
        return NULL;
    }
    if (p)
        mgvcl_clRetainContext(p->ctx);
    return p;
}

cl_program CL_API_CALL mgvcl_clCreateProgramWithSource(cl_context ctx, cl_uint n, const char **strs,
                                                       const size_t *lens, cl_int *err)
{
    cl_program p = NULL;
    size_t total = 0;
    mgw_buf_t b;
    if (!mgvcl_is(ctx))
        return program_done(NULL, CL_INVALID_CONTEXT, err);
    if (!n || !strs)
        return program_done(NULL, CL_INVALID_VALUE, err);
    for (cl_uint i = 0; i < n; i++) {
        if (!strs[i])
            return program_done(NULL, CL_INVALID_VALUE, err);
        total += lens && lens[i] ? lens[i] : strlen(strs[i]);
    }
    if (!(p = program_new(ctx)) || !(p->source = malloc(total + 1)))
        return program_done(p, CL_OUT_OF_HOST_MEMORY, err);
    total = 0;
    for (cl_uint i = 0; i < n; i++) {
        size_t l = lens && lens[i] ? lens[i] : strlen(strs[i]);
        memcpy(p->source + total, strs[i], l);
        total += l;
    }
    p->source[total] = 0;
    mgw_program_source_encode(
        &b, 0, &(mgw_program_source_t){.id = p->id, .ctx = ctx->id, .source = {p->source, total}});
    cl_int rc = mgvcl_call_each(ctx, UINT32_MAX, &b, &p->made);
    mgw_buf_free(&b);
    if (rc)
        program_unmake(p);
    return program_done(p, rc, err);
}

cl_program CL_API_CALL mgvcl_clCreateProgramWithBinary(cl_context ctx, cl_uint n,
                                                       const cl_device_id *devs, const size_t *lens,
                                                       const unsigned char **bins, cl_int *status,
                                                       cl_int *err)
{
    cl_program p;
    mgw_buf_t b;
    uint8_t *rep = NULL;
    size_t len = 0;
    if (!mgvcl_is(ctx))
        return program_done(NULL, CL_INVALID_CONTEXT, err);
    if (!n || !devs || !lens || !bins || n > MGW_MAX_DEVS)
        return program_done(NULL, CL_INVALID_VALUE, err);
    for (cl_uint i = 0; i < n; i++) {
        if (!mgvcl_is(devs[i]) || mgvcl_ctx_ci(ctx, devs[i]->conn) < 0)
            return program_done(NULL, CL_INVALID_DEVICE, err);
        if (!lens[i] || !bins[i])
            return program_done(NULL, CL_INVALID_VALUE, err);
    }
    if (!(p = program_new(ctx)))
        return program_done(NULL, CL_OUT_OF_HOST_MEMORY, err);
    cl_int rc = CL_SUCCESS;
    /* each proxy gets its devices' binaries */
    for (cl_uint ci = 0; ci < ctx->nconn && rc == CL_SUCCESS; ci++) {
        mgw_binary_t bl[MGW_MAX_DEVS];
        cl_uint at[MGW_MAX_DEVS], k = 0;
        for (cl_uint i = 0; i < n; i++)
            if (devs[i]->conn == ctx->conns[ci]) {
                at[k] = i;
                bl[k++] = (mgw_binary_t){.dev = devs[i]->idx, .data = {bins[i], lens[i]}};
            }
        if (!k)
            continue;
        mgw_program_binary_encode(
            &b, 0,
            &(mgw_program_binary_t){.id = p->id, .ctx = ctx->id, .binaries = {.n = k, .v = bl}});
        rc = mgvcl_call(ctx->conns[ci], &b, &rep, &len);
        mgw_buf_free(&b);
        if (rc == CL_SUCCESS)
            p->made |= 1u << ci;
        if (status) { /* each device's status; the call's where the reply has none */
            mgw_program_binary_reply_t m;
            mgw_status_t st;
            mgw_cur_t c;
            mgw_cur_init(&c, rep, len);
            int ok = rc == CL_SUCCESS && !mgw_program_binary_reply_decode(&c, &m);
            for (cl_uint i = 0; i < k; i++)
                status[at[i]] = ok && mgw_status_next(&m.statuses, &st) == 0 ? st.status : rc;
        }
        free(rep);
        rep = NULL;
    }
    if (rc)
        program_unmake(p);
    return program_done(p, rc, err);
}

cl_int CL_API_CALL mgvcl_clRetainProgram(cl_program p)
{
    if (!mgvcl_is(p))
        return CL_INVALID_PROGRAM;
    atomic_fetch_add(&p->refs, 1);
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clReleaseProgram(cl_program p)
{
    if (!mgvcl_is(p))
        return CL_INVALID_PROGRAM;
    if (atomic_fetch_sub(&p->refs, 1) == 1) {
        program_unmake(p);
        mgvcl_clReleaseContext(p->ctx);
        free(p->source);
        free(p);
    }
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clBuildProgram(cl_program p, cl_uint n, const cl_device_id *devs,
                                        const char *opt,
                                        void(CL_CALLBACK *notify)(cl_program, void *), void *data)
{
    mgw_buf_t b;
    uint64_t idx[MGW_MAX_DEVS];
    if (!mgvcl_is(p))
        return CL_INVALID_PROGRAM;
    if ((n && !devs) || (!n && devs) || (!notify && data) || n > MGW_MAX_DEVS)
        return CL_INVALID_VALUE;
    cl_int rc = CL_SUCCESS;
    for (cl_uint ci = 0; ci < p->ctx->nconn && rc == CL_SUCCESS; ci++) {
        mgw_ids_t ids;
        if (!(p->made & (1u << ci)) || devs_on(p, (int)ci, n, devs, idx, &ids))
            continue;
        mgw_program_build_encode(
            &b, 0, &(mgw_program_build_t){.id = p->id, .devs = ids, .options = opt ? opt : ""});
        rc = mgvcl_call(p->ctx->conns[ci], &b, NULL, NULL);
        mgw_buf_free(&b);
    }
    /* the proxy always asks for argument info; show it as asked */
    p->arg_info = !p->source || (opt && strstr(opt, "-cl-kernel-arg-info"));
    if (notify)
        notify(p, data);
    return rc;
}

cl_int CL_API_CALL mgvcl_clCompileProgram(cl_program p, cl_uint n, const cl_device_id *devs,
                                          const char *opt, cl_uint nh, const cl_program *hdrs,
                                          const char **names,
                                          void(CL_CALLBACK *notify)(cl_program, void *), void *data)
{
    mgw_buf_t b;
    uint64_t idx[MGW_MAX_DEVS];
    mgw_header_t hl[MGW_MAX_HEADERS];
    if (!mgvcl_is(p))
        return CL_INVALID_PROGRAM;
    if ((n && !devs) || (!n && devs) || (!notify && data) || n > MGW_MAX_DEVS ||
        nh > MGW_MAX_HEADERS || (nh && (!hdrs || !names)) || (!nh && (hdrs || names)))
        return CL_INVALID_VALUE;
    for (cl_uint i = 0; i < nh; i++)
        if (!mgvcl_is(hdrs[i]))
            return CL_INVALID_PROGRAM;
    for (cl_uint i = 0; i < nh; i++)
        hl[i] = (mgw_header_t){.program = hdrs[i]->id, .name = names[i]};
    p->arg_info = opt && strstr(opt, "-cl-kernel-arg-info");
    cl_int rc = CL_SUCCESS;
    for (cl_uint ci = 0; ci < p->ctx->nconn && rc == CL_SUCCESS; ci++) {
        mgw_ids_t ids;
        if (!(p->made & (1u << ci)) || devs_on(p, (int)ci, n, devs, idx, &ids))
            continue;
        mgw_program_compile_encode(&b, 0,
                                   &(mgw_program_compile_t){.id = p->id,
                                                            .devs = ids,
                                                            .options = opt ? opt : "",
                                                            .headers = {.n = nh, .v = hl}});
        rc = mgvcl_call(p->ctx->conns[ci], &b, NULL, NULL);
        mgw_buf_free(&b);
    }
    if (notify)
        notify(p, data);
    return rc;
}

cl_program CL_API_CALL mgvcl_clLinkProgram(cl_context ctx, cl_uint n, const cl_device_id *devs,
                                           const char *opt, cl_uint np, const cl_program *progs,
                                           void(CL_CALLBACK *notify)(cl_program, void *),
                                           void *data, cl_int *err)
{
    mgw_buf_t b;
    uint64_t idx[MGW_MAX_DEVS], pid[MGW_MAX_DEVS];
    cl_program p;
    if (!mgvcl_is(ctx))
        return program_done(NULL, CL_INVALID_CONTEXT, err);
    if ((n && !devs) || (!n && devs) || !np || !progs || (!notify && data) || n > MGW_MAX_DEVS ||
        np > MGW_MAX_DEVS)
        return program_done(NULL, CL_INVALID_VALUE, err);
    for (cl_uint i = 0; i < np; i++)
        if (!mgvcl_is(progs[i]))
            return program_done(NULL, CL_INVALID_PROGRAM, err);
    if (!(p = program_new(ctx)))
        return program_done(NULL, CL_OUT_OF_HOST_MEMORY, err);
    for (cl_uint i = 0; i < np; i++)
        pid[i] = progs[i]->id;
    cl_int rc = CL_SUCCESS;
    uint32_t have = UINT32_MAX; /* the proxies that have every input */
    for (cl_uint i = 0; i < np; i++)
        have &= progs[i]->made;
    for (cl_uint ci = 0; ci < ctx->nconn && rc == CL_SUCCESS; ci++) {
        mgw_ids_t ids;
        if (!(have & (1u << ci)) || devs_on(p, (int)ci, n, devs, idx, &ids))
            continue;
        mgw_program_link_encode(&b, 0,
                                &(mgw_program_link_t){.id = p->id,
                                                      .ctx = ctx->id,
                                                      .devs = ids,
                                                      .options = opt ? opt : "",
                                                      .programs = {.n = np, .v = pid}});
        rc = mgvcl_call(ctx->conns[ci], &b, NULL, NULL);
        mgw_buf_free(&b);
        if (rc == CL_SUCCESS)
            p->made |= 1u << ci;
    }
    if (rc == CL_SUCCESS && !p->made)
        rc = CL_INVALID_OPERATION;
    if (rc)
        program_unmake(p);
    if (rc == CL_SUCCESS && notify)
        notify(p, data);
    return program_done(p, rc, err);
}

cl_int CL_API_CALL mgvcl_clUnloadCompiler(void)
{
    return CL_SUCCESS;
}

cl_int CL_API_CALL mgvcl_clUnloadPlatformCompiler(cl_platform_id p)
{
    return p == &mgvcl_platform ? CL_SUCCESS : CL_INVALID_PLATFORM;
}

cl_int CL_API_CALL mgvcl_clGetProgramInfo(cl_program p, cl_program_info param, size_t size,
                                          void *value, size_t *size_ret)
{
    cl_uint u;
    if (!mgvcl_is(p))
        return CL_INVALID_PROGRAM;
    switch (param) {
    case CL_PROGRAM_REFERENCE_COUNT:
        u = (cl_uint)atomic_load(&p->refs);
        return mgvcl_ret(&u, sizeof u, size, value, size_ret);
    case CL_PROGRAM_CONTEXT:
        return mgvcl_ret(&p->ctx, sizeof p->ctx, size, value, size_ret);
    case CL_PROGRAM_NUM_DEVICES:
        return mgvcl_ret(&p->ctx->ndev, sizeof(cl_uint), size, value, size_ret);
    case CL_PROGRAM_DEVICES:
        return mgvcl_ret(p->ctx->devs, p->ctx->ndev * sizeof(cl_device_id), size, value, size_ret);
    case CL_PROGRAM_SOURCE:
        return mgvcl_ret(p->source ? p->source : "", p->source ? strlen(p->source) + 1 : 1, size,
                         value, size_ret);
    case CL_PROGRAM_BINARIES: {
        mgw_buf_t b;
        uint8_t *rep = NULL;
        size_t len = 0;
        size_t need = p->ctx->ndev * sizeof(unsigned char *);
        if (size_ret)
            *size_ret = need;
        if (!value)
            return CL_SUCCESS;
        if (size < need)
            return CL_INVALID_VALUE;
        mgw_get_info_encode(
            &b, 0,
            &(mgw_get_info_t){.kind = MGW_K_PROGRAM, .id = p->id, .param = CL_PROGRAM_BINARIES});
        cl_int rc = mgvcl_call(p->ctx->conn, &b, &rep, &len);
        mgw_buf_free(&b);
        if (rc == CL_SUCCESS) {
            mgw_get_info_reply_t m;
            mgw_blob_t bin;
            mgw_cur_t c;
            mgw_cur_init(&c, rep, len);
            if (mgw_get_info_reply_decode(&c, &m))
                rc = CL_OUT_OF_RESOURCES;
            for (uint32_t i = 0; !rc && i < p->ctx->ndev && !mgw_blob_next(&m.binaries, &bin);
                 i++) {
                unsigned char *dst = ((unsigned char **)value)[i];
                if (dst && bin.data.n)
                    memcpy(dst, bin.data.p, bin.data.n);
            }
        }
        free(rep);
        return rc;
    }
    }
    return mgvcl_info(p->ctx->conn, MGW_K_PROGRAM, p->id, 0, param, size, value, size_ret);
}

cl_int CL_API_CALL mgvcl_clGetProgramBuildInfo(cl_program p, cl_device_id d,
                                               cl_program_build_info param, size_t size,
                                               void *value, size_t *size_ret)
{
    if (!mgvcl_is(p))
        return CL_INVALID_PROGRAM;
    if (!mgvcl_is(d) || mgvcl_ctx_ci(p->ctx, d->conn) < 0)
        return CL_INVALID_DEVICE;
    return mgvcl_info(d->conn, MGW_K_PROGRAM_BUILD, p->id, d->idx, param, size, value, size_ret);
}
