/*
 * Programs: every embedded .cl source is built once per context, at the first
 * kernel launch (or mgpk_ctx_prepare), and its binary is kept on disk keyed
 * by a hash of everything that could change the binary.  A missing, corrupt
 * or mismatched cache file only costs a build from source.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mgpk_impl.h"

#define MGPK_BUILD_OPTIONS "-cl-std=CL1.2"
#define MGPK_CACHE_MAGIC "MGPKBIN1"

typedef struct mgpk_cache_hdr {
    char magic[8];
    uint64_t key;
    uint64_t len;
    uint64_t sum; /* FNV-1a of the binary: some drivers abort on a corrupt one */
} mgpk_cache_hdr_t;

uint64_t mgpk_fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static const char *const family_prefix[MGPK_FAM_COUNT] = {"mg_",      "mg_swap_", "mg_vec_",
                                                          "mg_sub_",  "mg_map_",  "mg_vecg_",
                                                          "mg_subg_", "mg_mapg_", "mg_multi_"};

/* Key of one program: device identity, driver, build options and source. */
static int prog_key(mgpk_ctx_t *ctx, const mgpk_source_t *src, uint64_t *key)
{
    int rc = MPI_SUCCESS;
    char buf[512];
    cl_platform_id platform;
    uint64_t h = MGPK_FNV_BASIS;
    static const cl_device_info infos[] = {CL_DEVICE_NAME, CL_DEVICE_VENDOR, CL_DRIVER_VERSION};

    for (size_t i = 0; i < sizeof(infos) / sizeof(infos[0]); i++) {
        size_t len = 0;
        MG_CL_CHECK(clGetDeviceInfo(ctx->device, infos[i], sizeof(buf), buf, &len),
                    "clGetDeviceInfo", rc, fn_fail);
        h = mgpk_fnv1a(h, buf, len);
    }
    MG_CL_CHECK(clGetDeviceInfo(ctx->device, CL_DEVICE_PLATFORM, sizeof(platform), &platform, NULL),
                "clGetDeviceInfo(CL_DEVICE_PLATFORM)", rc, fn_fail);
    size_t plen = 0;
    MG_CL_CHECK(clGetPlatformInfo(platform, CL_PLATFORM_VERSION, sizeof(buf), buf, &plen),
                "clGetPlatformInfo(CL_PLATFORM_VERSION)", rc, fn_fail);
    h = mgpk_fnv1a(h, buf, plen);
    h = mgpk_fnv1a(h, MGPK_BUILD_OPTIONS, sizeof(MGPK_BUILD_OPTIONS));
    h = mgpk_fnv1a(h, src->text, src->len);
    *key = h;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static void cache_path(const mgpk_ctx_t *ctx, const mgpk_source_t *src, uint64_t key, char *path,
                       size_t len)
{
    snprintf(path, len, "%s/%s-%016llx.bin", ctx->cache_dir, src->name, (unsigned long long)key);
}

/* A program from the cache file, or NULL on any mismatch. */
static cl_program cache_load(mgpk_ctx_t *ctx, const char *path, uint64_t key)
{
    cl_program prog = NULL;
    unsigned char *bin = NULL;
    mgpk_cache_hdr_t hdr;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    if (fread(&hdr, sizeof(hdr), 1, f) != 1 || memcmp(hdr.magic, MGPK_CACHE_MAGIC, 8) ||
        hdr.key != key || hdr.len == 0 || hdr.len > (1u << 30))
        goto done;
    bin = malloc(hdr.len);
    if (!bin || fread(bin, 1, hdr.len, f) != hdr.len ||
        mgpk_fnv1a(MGPK_FNV_BASIS, bin, hdr.len) != hdr.sum)
        goto done;
    /* A rejected binary is an expected cache miss, not an error: build from source. */
    size_t len = hdr.len;
    const unsigned char *bins[1] = {bin};
    cl_int status = CL_SUCCESS, err;
    prog = clCreateProgramWithBinary(ctx->context, 1, &ctx->device, &len, bins, &status, &err);
    if (err != CL_SUCCESS || status != CL_SUCCESS) {
        prog = err == CL_SUCCESS ? prog : NULL;
        goto reject;
    }
    if (clBuildProgram(prog, 1, &ctx->device, MGPK_BUILD_OPTIONS, NULL, NULL) != CL_SUCCESS)
        goto reject;
    goto done;
reject:
    if (prog)
        clReleaseProgram(prog);
    prog = NULL;
done:
    free(bin);
    fclose(f);
    return prog;
}

static int mkdir_p(const char *dir)
{
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(tmp, 0700) && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0700) && errno != EEXIST ? -1 : 0;
}

/* Best effort: a cache that cannot be written only means building next time. */
static void cache_store(mgpk_ctx_t *ctx, cl_program prog, const char *path, uint64_t key)
{
    int ok = 0;
    size_t len = 0;
    unsigned char *bin = NULL;
    char tmp[4200];
    FILE *f = NULL;
    if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(len), &len, NULL) != CL_SUCCESS ||
        len == 0 || mkdir_p(ctx->cache_dir))
        goto done;
    bin = malloc(len);
    unsigned char *bins[1] = {bin};
    if (!bin || clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(bins), bins, NULL) != CL_SUCCESS)
        goto done;
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    f = fopen(tmp, "wb");
    if (!f)
        goto done;
    mgpk_cache_hdr_t hdr = {.key = key, .len = len, .sum = mgpk_fnv1a(MGPK_FNV_BASIS, bin, len)};
    memcpy(hdr.magic, MGPK_CACHE_MAGIC, 8);
    ok = fwrite(&hdr, sizeof(hdr), 1, f) == 1 && fwrite(bin, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    f = NULL;
    if (!ok || rename(tmp, path)) {
        unlink(tmp);
        ok = 0;
    }
done:
    if (!ok)
        MGPK_LOG(ctx, "program cache %s not written", path);
    free(bin);
}

static int prog_build_source(mgpk_ctx_t *ctx, const mgpk_source_t *src, cl_program *prog)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    const char *text = src->text;
    size_t len = src->len;
    *prog = clCreateProgramWithSource(ctx->context, 1, &text, &len, &err);
    MG_CL_CHECK(err, "clCreateProgramWithSource", rc, fn_fail);
    err = clBuildProgram(*prog, 1, &ctx->device, MGPK_BUILD_OPTIONS, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[400] = "";
        clGetProgramBuildInfo(*prog, ctx->device, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, NULL);
        MG_FAIL(rc, fail_release, MPI_ERR_OTHER, "clBuildProgram(%s): %s: %s", src->name,
                mgerr_cl_name(err), log);
    }
fn_exit:
    return rc;
fail_release:
    clReleaseProgram(*prog);
    *prog = NULL;
fn_fail:
    goto fn_exit;
}

/* The slot of ctx->kernels that a kernel of this name fills, or NULL. */
static cl_kernel *kernel_slot(mgpk_ctx_t *ctx, const char *name)
{
    for (int f = 0; f < MGPK_FAM_COUNT; f++)
        for (int d = 0; d < 2; d++)
            for (int w = 0; w < MGPK_NWIDTHS; w++) {
                char want[64];
                snprintf(want, sizeof(want), "%s%s_w%d", family_prefix[f], d ? "unpack" : "pack",
                         1 << w);
                if (!strcmp(name, want))
                    return &ctx->kernels[f][d][w];
            }
    return NULL;
}

/* Files the program's kernels into ctx->kernels by name. */
static int prog_kernels(mgpk_ctx_t *ctx, cl_program prog)
{
    int rc = MPI_SUCCESS;
    cl_kernel ks[64];
    cl_uint nk = 0, i = 0;
    MG_CL_CHECK(clCreateKernelsInProgram(prog, 64, ks, &nk), "clCreateKernelsInProgram", rc,
                fn_fail);
    for (; i < nk; i++) {
        char name[64] = "";
        MG_CL_CHECK(clGetKernelInfo(ks[i], CL_KERNEL_FUNCTION_NAME, sizeof(name), name, NULL),
                    "clGetKernelInfo(CL_KERNEL_FUNCTION_NAME)", rc, fail_kernels);
        cl_kernel *slot = kernel_slot(ctx, name);
        if (slot && !*slot)
            *slot = ks[i];
        else
            clReleaseKernel(ks[i]);
    }
fn_exit:
    return rc;
fail_kernels:
    for (; i < nk; i++)
        clReleaseKernel(ks[i]);
fn_fail:
    goto fn_exit;
}

int mgpk_prog_ensure(mgpk_ctx_t *ctx)
{
    int rc = MPI_SUCCESS;
    if (ctx->built)
        goto fn_exit;
    if (mgpk_nsources > MGPK_MAX_PROGS)
        MG_FAIL(rc, fn_fail, MPI_ERR_INTERN, "mgpk: %zu kernel sources, room for %d", mgpk_nsources,
                MGPK_MAX_PROGS);
    for (size_t i = 0; i < mgpk_nsources; i++) {
        const mgpk_source_t *src = &mgpk_sources[i];
        char path[4096] = "";
        uint64_t key = 0;
        cl_program prog = NULL;
        if (ctx->cache_dir) {
            rc = prog_key(ctx, src, &key);
            MG_CHECK(rc, fn_fail);
            cache_path(ctx, src, key, path, sizeof(path));
            prog = cache_load(ctx, path, key);
        }
        int loaded = prog != NULL;
        if (loaded) {
            ctx->stats.programs_loaded++;
        } else {
            rc = prog_build_source(ctx, src, &prog);
            MG_CHECK(rc, fn_fail);
            ctx->stats.programs_built++;
            if (ctx->cache_dir)
                cache_store(ctx, prog, path, key);
        }
        MGPK_LOG(ctx, "program %s %s", src->name,
                 loaded ? "loaded from cache" : "built from source");
        ctx->progs[i] = prog;
        rc = prog_kernels(ctx, prog);
        MG_CHECK(rc, fn_fail);
    }
    ctx->built = 1;
fn_exit:
    return rc;
fn_fail:
    mgpk_prog_release(ctx);
    goto fn_exit;
}

void mgpk_prog_release(mgpk_ctx_t *ctx)
{
    for (int f = 0; f < MGPK_FAM_COUNT; f++)
        for (int d = 0; d < 2; d++)
            for (int w = 0; w < MGPK_NWIDTHS; w++)
                if (ctx->kernels[f][d][w]) {
                    clReleaseKernel(ctx->kernels[f][d][w]);
                    ctx->kernels[f][d][w] = NULL;
                    ctx->kargs[f][d][w].set = 0, ctx->kargs[f][d][w].grid_set = 0;
                }
    for (int i = 0; i < MGPK_MAX_PROGS; i++)
        if (ctx->progs[i]) {
            clReleaseProgram(ctx->progs[i]);
            ctx->progs[i] = NULL;
        }
    ctx->built = 0;
}
