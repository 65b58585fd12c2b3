/*
 * Type uploads: a type's nodes and lookaside go to each context's device once
 * and stay there until the type or the context goes away, whichever is
 * first.  The type owns its list of uploads (through mgdt_type_set_user);
 * each context also threads its uploads onto a registry so that freeing the
 * context releases the buffers and leaves dead entries (ctx == NULL) behind
 * for the type to free.  One global lock guards both lists; uploads are rare
 * and lookups walk a list of one entry per context.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "mgpk_impl.h"

struct mgpk_upload {
    mgpk_ctx_t *ctx; /* NULL once the context has been freed */
    cl_mem nodes, la;
    cl_mem map;               /* byte-offset table of map_size bytes ... */
    int64_t map_size;         /* ... made at the first request (0: none yet) */
    mgpk_upload_t *next_type; /* the type's list */
    mgpk_upload_t *next_ctx;  /* the context's registry */
};

typedef struct mgpk_type_user {
    mgpk_upload_t *head;
} mgpk_type_user_t;

static pthread_mutex_t upload_lock = PTHREAD_MUTEX_INITIALIZER;

static void upload_drop(mgpk_upload_t *up)
{
    clReleaseMemObject(up->nodes);
    clReleaseMemObject(up->la);
    if (up->map)
        clReleaseMemObject(up->map);
    up->map = NULL;
    up->ctx = NULL;
}

/* user_free of the type: release what live contexts still hold. */
static void type_user_free(void *user)
{
    mgpk_type_user_t *tu = user;
    pthread_mutex_lock(&upload_lock);
    for (mgpk_upload_t *up = tu->head, *next; up; up = next) {
        next = up->next_type;
        if (up->ctx) {
            mgpk_upload_t **pp = &up->ctx->uploads;
            while (*pp != up)
                pp = &(*pp)->next_ctx;
            *pp = up->next_ctx;
            upload_drop(up);
        }
        free(up);
    }
    pthread_mutex_unlock(&upload_lock);
    free(tu);
}

/* The table of the first n packed bytes: entry b is the user offset (from
   the origin) of packed byte b.  Left NULL where an offset does not fit 32
   bits. */
static int map_make(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t n, cl_mem *out)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    int32_t *map = malloc((size_t)n * sizeof(int32_t));
    *out = NULL;
    if (!map)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgpk: no memory for a type map");
    for (int64_t pos = 0; pos < n;) {
        int64_t left, off = mgdt_ref_run(type, pos, &left);
        if (left <= 0 || off < INT32_MIN || off + left - 1 > INT32_MAX)
            goto fn_exit; /* no table */
        for (int64_t i = 0; i < left && pos < n; i++)
            map[pos++] = (int32_t)(off + i);
    }
    *out = clCreateBuffer(ctx->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                          (size_t)n * sizeof(int32_t), map, &err);
    MG_CL_CHECK(err, "clCreateBuffer(type map)", rc, fn_fail);
fn_exit:
    free(map);
    return rc;
fn_fail:
    *out = NULL;
    goto fn_exit;
}

int mgpk_upload_get(mgpk_ctx_t *ctx, const mgdt_type_t *type, int64_t map_size, cl_mem *nodes,
                    cl_mem *la, cl_mem *map)
{
    int rc = MPI_SUCCESS;
    cl_int err;
    mgpk_upload_t *up = NULL;
    mgpk_type_user_t *tu;

    pthread_mutex_lock(&upload_lock);
    tu = type->user;
    for (mgpk_upload_t *u = tu ? tu->head : NULL; u; u = u->next_type)
        if (u->ctx == ctx) {
            up = u;
            goto found;
        }
    if (!tu) {
        tu = calloc(1, sizeof(*tu));
        if (!tu)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgpk: no memory for a type upload");
        mgdt_type_set_user(type, tu, type_user_free);
    }
    up = calloc(1, sizeof(*up));
    if (!up)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgpk: no memory for a type upload");
    up->nodes = clCreateBuffer(ctx->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                               type->nnodes * sizeof(mgdt_node_t), type->nodes, &err);
    MG_CL_CHECK(err, "clCreateBuffer(type nodes)", rc, fail_free);
    /* An empty lookaside still needs a valid argument. */
    if (type->nlookaside)
        up->la = clCreateBuffer(ctx->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                type->nlookaside * sizeof(int64_t), type->lookaside, &err);
    else
        up->la = clCreateBuffer(ctx->context, CL_MEM_READ_ONLY, sizeof(int64_t), NULL, &err);
    MG_CL_CHECK(err, "clCreateBuffer(type lookaside)", rc, fail_nodes);
    up->ctx = ctx;
    up->next_type = tu->head;
    tu->head = up;
    up->next_ctx = ctx->uploads;
    ctx->uploads = up;
found:
    if (map_size > 0 && up->map_size != map_size) {
        /* A different unit (another count): replace the table. */
        if (up->map)
            clReleaseMemObject(up->map);
        up->map = NULL;
        up->map_size = 0;
        rc = map_make(ctx, type, map_size, &up->map);
        MG_CHECK(rc, fn_fail);
        up->map_size = map_size;
    }
    *nodes = up->nodes;
    *la = up->la;
    *map = map_size > 0 ? up->map : NULL;
fn_exit:
    pthread_mutex_unlock(&upload_lock);
    return rc;
fail_nodes:
    clReleaseMemObject(up->nodes);
fail_free:
    free(up);
fn_fail:
    goto fn_exit;
}

void mgpk_upload_release_ctx(mgpk_ctx_t *ctx)
{
    pthread_mutex_lock(&upload_lock);
    for (mgpk_upload_t *up = ctx->uploads; up; up = up->next_ctx)
        upload_drop(up);
    ctx->uploads = NULL;
    pthread_mutex_unlock(&upload_lock);
}
