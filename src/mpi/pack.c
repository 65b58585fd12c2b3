/*
 * MPI_Pack, MPI_Unpack and their external32 and large-count forms on device
 * addresses.  Calls that involve no device address go to PMPI unchanged.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpigpu.h"
#include "mgdev.h"
#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"
#include "shared.h"
#include "mglog.h"

/* One side of a call after classification. */
typedef struct pk_side {
    int dev;
    mgdev_reg_entry_t e;
    int64_t off; /* typed side: offset of the datatype origin in e.mem;
                    packed side: offset of packed byte `pos` in e.mem */
} pk_side_t;

typedef struct pk_call {
    const char *fn;
    int unpack;
    int ext; /* external32 */
    MPI_Comm comm;
    void *typed; /* origin of count instances of dt */
    int64_t count;
    MPI_Datatype dt;
    char *packed; /* packed buffer of psize bytes; the call uses [pos, pos + n) */
    int64_t psize;
    int64_t pos;
    const mgdt_type_t *type;
    int64_t n;      /* packed bytes this call moves */
    int64_t lo, hi; /* typed bytes touched, relative to the origin */
    pk_side_t t, p;
    int raised;           /* PMPI already ran the error handler */
    mgpk_method_t method; /* MPIGPU_PACK, or the datatype's attribute */
} pk_call_t;

/* Whether any byte the call may touch lies in the reserved device range, or
   its typed side's span cannot be held (mgdev_buf_is_device).  The typed
   side is judged by the bytes its instances touch, not by its origin: a
   type with a large true lower bound can have its origin below a device
   allocation and every byte inside it.  Host-only calls pay two cheap extent
   queries. */
static int pk_involves_device(const void *typed, MPI_Count count, MPI_Datatype dt,
                              const void *packed, MPI_Count psize)
{
    if (mgdev_reg_in_range(packed, psize > 0 ? (size_t)psize : 1))
        return 1;
    return mgdev_buf_is_device(typed, count, dt);
}

/* Check that [p + lo, p + hi) lies inside one live device allocation, or is
   wholly host memory.  Sets s->off to the offset of p itself. */
static int pk_side_get(const pk_call_t *c, const char *what, char *p, int64_t lo, int64_t hi,
                       int writes, pk_side_t *s)
{
    uintptr_t at;
    size_t len, off = 0;
    if (mgdt_span_addr(p, lo, hi, &at, &len) != 0)
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: %s: %s bytes [%lld, %lld) from %p wrap around the address "
                         "space; nothing was written",
                         c->fn, what, (long long)lo, (long long)hi, (void *)p);
    char *first = (char *)at;
    s->dev = mgdev_reg_lookup(first, &s->e, &off);
    if (s->dev && len > s->e.size - off)
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: %s: %s access [%p, %p) from device address %p is outside its "
                         "allocation [%p, %p); nothing was written",
                         c->fn, what, (void *)first, (void *)(first + len), (void *)p,
                         (void *)s->e.base, (void *)(s->e.base + s->e.size));
    if (!s->dev && mgdev_reg_in_range(first, 1)) {
        char why[MGDEV_REG_WHY_LEN];
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: %s: %s access [%p, %p) from address %p is not inside one live "
                         "device allocation: %s; nothing was written",
                         c->fn, what, (void *)first, (void *)(first + len), (void *)p,
                         mgdev_reg_why(first, why, sizeof(why)));
    }
    if (!s->dev && mgdev_reg_in_range(first, len))
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: %s: %s access [%p, %p) from address %p is not inside one live "
                         "device allocation (freed, or crossing an allocation's end); nothing "
                         "was written",
                         c->fn, what, (void *)first, (void *)(first + len), (void *)p);
    s->off = (int64_t)off - lo;
    /* Shared memory: host stores to a side the call reads reach the device
       first; the host's copies of a side it writes become invalid. */
    return s->dev ? mgdev_shared_entry_use(&s->e, off, len, writes) : MPI_SUCCESS;
}

static int pk_check(pk_call_t *c)
{
    int rc = MPI_SUCCESS;
    const char *pname = c->unpack ? "input" : "output";

    /* What MPICH checks, with its classes (a negative buffer size is a
       count to the external32 calls); then what it does not check (the
       position) and would write out of bounds for. */
    if (c->count < 0)
        MG_FAIL(rc, fn_fail, MPI_ERR_COUNT, "mpigpu: %s: negative count %lld", c->fn,
                (long long)c->count);
    if (c->dt == MPI_DATATYPE_NULL)
        MG_FAIL(rc, fn_fail, MPI_ERR_TYPE, "mpigpu: %s: the datatype is MPI_DATATYPE_NULL", c->fn);
    if (c->psize < 0)
        MG_FAIL(rc, fn_fail, c->ext ? MPI_ERR_COUNT : MPI_ERR_ARG,
                "mpigpu: %s: negative %s buffer size %lld", c->fn, pname, (long long)c->psize);
    if (c->pos < 0)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: %s: negative position %lld", c->fn,
                (long long)c->pos);
    if (c->count == 0) {
        /* Nothing moves: like MPICH, decode nothing (a type whose own bounds
           overflow is still fine here), but require a committed type. */
        rc = mgdt_type_check(c->dt);
        if (rc != MPI_SUCCESS) {
            rc = mgerr_prepend(rc, c->fn);
            goto fn_fail;
        }
        c->n = 0;
    } else if ((rc = mgdt_type_get(c->dt, &c->type)) != MPI_SUCCESS) {
        rc = mgerr_prepend(rc, c->fn); /* not committed, or overflowing */
        goto fn_fail;
    } else if (c->ext && !c->type->external32_ok) {
        MPI_Count sz = 0;
        rc = PMPI_Pack_external_size_c("external32", c->count, c->dt, &sz);
        c->raised = rc != MPI_SUCCESS;
        MG_CHECK(rc, fn_fail);
        c->n = sz;
    } else {
        if (c->type->size > 0 && c->count > INT64_MAX / c->type->size)
            MG_FAIL(rc, fn_fail, MPI_ERR_COUNT, "mpigpu: %s: count %lld overflows", c->fn,
                    (long long)c->count);
        c->n = c->count * c->type->size;
    }
    /* Debian's MPICH 4.0.2 is built without argument checks and overruns the
       buffer here; a device buffer gets MPI_ERR_TRUNCATE instead. */
    if (c->n > c->psize - c->pos)
        MG_FAIL(rc, fn_fail, MPI_ERR_TRUNCATE,
                "mpigpu: %s: %lld packed bytes at position %lld exceed the %s buffer size %lld",
                c->fn, (long long)c->n, (long long)c->pos, pname, (long long)c->psize);
    if (c->n == 0)
        goto fn_exit;
    /* Instances sit at origin + k * extent, k < count; extent may be negative. */
    if (mgdt_span(c->count, c->type->extent, c->type->true_lb, c->type->true_ub, &c->lo, &c->hi))
        MG_FAIL(rc, fn_fail, MPI_ERR_TYPE,
                "mpigpu: %s: %lld instances of a datatype of extent %lld and true bounds [%lld, "
                "%lld) span more bytes than an int64 holds; nothing was written",
                c->fn, (long long)c->count, (long long)c->type->extent, (long long)c->type->true_lb,
                (long long)c->type->true_ub);
    rc = pk_side_get(c, c->unpack ? "output" : "input", c->typed, c->lo, c->hi, c->unpack, &c->t);
    MG_CHECK(rc, fn_fail);
    rc = pk_side_get(c, pname, c->packed, c->pos, c->pos + c->n, !c->unpack, &c->p);
    MG_CHECK(rc, fn_fail);
    c->p.off += c->pos;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int pk_stage(const pk_side_t *s, void *host, int64_t off, int64_t len, int to_host)
{
    mgpk_ctx_t *pk = NULL;
    int rc = mgdev_ctx_get(s->e.context, &pk);
    if (rc != MPI_SUCCESS)
        return rc;
    mgpk_buf_t h = {.host = host};
    mgpk_buf_t d = {.mem = s->e.mem, .offset = off};
    return to_host ? mgpk_copy(pk, h, d, (size_t)len) : mgpk_copy(pk, d, h, (size_t)len);
}

/* A device side for the host's MPI: its storage itself where the buffer is
   zero copy (e.host), mapped in place where the device's memory is the
   host's (mgpk_map), else staged in a kept copy (*buf, pk_kept_get; the
   bytes are read in first when `in`). */
typedef struct pk_host_side {
    mgpk_ctx_t *pk;
    cl_mem mem;
    void *map;  /* mapped pointer, or NULL */
    char *buf;  /* staged copy (mgdev_big_get: kept pages, no faults per call), or NULL */
    size_t cap; /* its capacity */
} pk_host_side_t;

/* A kept host buffer of at least len bytes for call c (*cap its capacity),
   and its return: a fresh one of 32 MiB or more is mapped anew by malloc on
   every call, and its page faults took 20 to 110 ms on the H100's host
   (performance.md, S13-2). */
static int pk_kept_get(const pk_call_t *c, int64_t len, char **buf, size_t *cap)
{
    mgp2p_lock();
    int rc = mgdev_big_get((size_t)len, buf, cap);
    mgp2p_unlock();
    if (rc != MPI_SUCCESS)
        rc = mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory (%lld bytes)", c->fn,
                       (long long)len);
    return rc;
}

static void pk_kept_put(char *buf, size_t cap)
{
    if (!buf)
        return;
    mgp2p_lock();
    mgdev_big_put(buf, cap);
    mgp2p_unlock();
}

static int pk_host_open(const pk_call_t *c, const pk_side_t *s, int64_t off, int64_t len, int in,
                        int write, pk_host_side_t *h, char **p)
{
    int rc = mgdev_ctx_get(s->e.context, &h->pk);
    MG_CHECK(rc, fn_fail);
    h->mem = s->e.mem;
    if (s->e.host) {
        /* The buffer's own storage (zero copy, api.c): no map needed once
           the engine's commands are done. */
        rc = mgpk_finish(h->pk);
        MG_CHECK(rc, fn_fail);
        *p = s->e.host + off;
        goto fn_exit;
    }
    rc = mgpk_map(h->pk, h->mem, (size_t)off, (size_t)len, write, &h->map);
    MG_CHECK(rc, fn_fail);
    if (h->map) {
        *p = h->map;
        goto fn_exit;
    }
    rc = pk_kept_get(c, len, &h->buf, &h->cap);
    MG_CHECK(rc, fn_fail);
    if (in) {
        rc = pk_stage(s, h->buf, off, len, 1);
        MG_CHECK(rc, fn_fail);
    }
    *p = h->buf;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Ends a side: unmaps it, or writes the staged copy back when `out`. */
static int pk_host_close(const pk_side_t *s, int64_t off, int64_t len, int out, pk_host_side_t *h,
                         int rc)
{
    int rc2 = MPI_SUCCESS;
    if (h->map)
        rc2 = mgpk_unmap(h->pk, h->mem, h->map);
    else if (h->buf && out && rc == MPI_SUCCESS)
        rc2 = pk_stage(s, h->buf, off, len, 0);
    pk_kept_put(h->buf, h->cap);
    h->map = h->buf = NULL;
    return rc != MPI_SUCCESS ? rc : rc2;
}

/* The (un)packing on the host: MPIGPU_PACK=host, external32 of types with
   size changes, and host typed buffers with a device packed one.  Native
   streams take the pack engine's walk (mgpk_host_pack), external32 MPI.  Device
   sides are mapped in place on devices that share the host's memory, else
   staged through host copies. */
static int pk_host(pk_call_t *c)
{
    int rc = MPI_SUCCESS;
    char *origin = c->typed, *packed = c->packed, *tp = NULL, *pp = NULL;
    MPI_Count size = c->psize, pos = c->pos;
    int64_t tlen = c->hi - c->lo;
    pk_host_side_t th = {0}, ph = {0};

    if (c->t.dev) {
        /* Unpack too reads it first: gap bytes go back unchanged. */
        rc = pk_host_open(c, &c->t, c->t.off + c->lo, tlen, 1, c->unpack, &th, &tp);
        MG_CHECK(rc, fn_fail);
        origin = mgdt_addr(tp, -c->lo);
    }
    if (c->p.dev) {
        rc = pk_host_open(c, &c->p, c->p.off, c->n, c->unpack, !c->unpack, &ph, &pp);
        MG_CHECK(rc, fn_fail);
        packed = pp;
        size = c->n;
        pos = 0;
    }
    if (!c->ext) {
        /* Native: the engine's walk, MPI's bytes (pk_check sized both sides). */
        rc = mgpk_host_pack(th.pk ? th.pk : ph.pk, c->type, origin, packed + pos, 0, c->n,
                            c->unpack);
        MG_CHECK(rc, fn_fail);
    } else if (!c->unpack) {
        rc = PMPI_Pack_external_c("external32", origin, c->count, c->dt, packed, size, &pos);
    } else {
        rc = PMPI_Unpack_external_c("external32", packed, size, &pos, origin, c->count, c->dt);
    }
    c->raised = rc != MPI_SUCCESS;
fn_exit:
    if (c->p.dev)
        rc = pk_host_close(&c->p, c->p.off, c->n, !c->unpack, &ph, rc);
    if (c->t.dev)
        rc = pk_host_close(&c->t, c->t.off + c->lo, tlen, c->unpack, &th, rc);
    return rc;
fn_fail:
    goto fn_exit;
}

/* The pack engine on the typed side's context.  A packed side on another
   context goes through a host buffer. */
static int pk_device(pk_call_t *c)
{
    int rc = MPI_SUCCESS;
    mgpk_ctx_t *pk = NULL;
    char *bounce = NULL;
    size_t bounce_cap = 0;
    int flags = (c->ext ? MGPK_F_EXTERNAL32 : 0) |
                (c->method == MGPK_METHOD_HOST ? 0 : MGPK_F_METHOD(c->method));
    int cross = c->p.dev && c->p.e.context != c->t.e.context;
    mgpk_buf_t tb = {.mem = c->t.e.mem, .offset = c->t.off};
    mgpk_buf_t pb = {.host = c->packed + c->pos};

    rc = mgdev_ctx_get(c->t.e.context, &pk);
    MG_CHECK(rc, fn_fail);
    if (cross) {
        rc = pk_kept_get(c, c->n, &bounce, &bounce_cap);
        MG_CHECK(rc, fn_fail);
        pb.host = bounce;
    } else if (c->p.dev) {
        pb.host = NULL;
        pb.mem = c->p.e.mem;
        pb.offset = c->p.off;
    } else {
        pb.pinned = mgdev_pinned(pb.host, (size_t)c->n);
    }
    if (c->unpack) {
        if (cross) {
            rc = pk_stage(&c->p, bounce, c->p.off, c->n, 1);
            MG_CHECK(rc, fn_fail);
        }
        rc = mgpk_unpack(pk, c->type, c->count, pb, tb, 0, c->n, flags);
        MG_CHECK(rc, fn_fail);
    } else {
        rc = mgpk_pack(pk, c->type, c->count, tb, pb, 0, c->n, flags);
        MG_CHECK(rc, fn_fail);
        if (cross) {
            rc = pk_stage(&c->p, bounce, c->p.off, c->n, 0);
            MG_CHECK(rc, fn_fail);
        }
    }
fn_exit:
    pk_kept_put(bounce, bounce_cap);
    return rc;
fn_fail:
    goto fn_exit;
}

static int pk_run(pk_call_t *c, int64_t *position)
{
    int rc = MPI_SUCCESS, n = 0;
    if (!c->ext) {
        rc = mgmpi_check_comm(c->fn, c->comm, &n, &c->raised);
        MG_CHECK(rc, fn_fail);
    }
    if (!position)
        MG_FAIL(rc, fn_fail, MPI_ERR_ARG, "mpigpu: %s: position is NULL", c->fn);
    c->pos = *position;
    rc = mgdev_require_device(c->fn);
    MG_CHECK(rc, fn_fail);
    rc = pk_check(c);
    MG_CHECK(rc, fn_fail);
    if (c->n == 0)
        goto fn_exit;
    const char *why = NULL;
    c->method = mgdev_type_method(c->dt);
    if (c->method == MGPK_METHOD_HOST)
        why = mgdev_state.settings.method == MGPK_METHOD_HOST ? "MPIGPU_PACK=host"
                                                              : "the datatype's method attribute";
    else if (!c->t.dev)
        why = "host typed buffer";
    else if (c->ext && !c->type->external32_ok)
        why = "external32 changes sizes";
    if (!why && c->method == MGPK_METHOD_AUTO && c->t.e.host && (!c->p.dev || c->p.e.host) &&
        mgpk_contig(c->type, c->count))
        why = "MPIGPU_PACK=auto: contiguous bytes of a zero-copy buffer";
    if (!why && c->method == MGPK_METHOD_AUTO && !c->p.dev) {
        /* The calibrated table may find host staging fastest for this call. */
        mgpk_ctx_t *pk = NULL;
        rc = mgdev_ctx_get(c->t.e.context, &pk);
        MG_CHECK(rc, fn_fail);
        int f = (c->ext ? MGPK_F_EXTERNAL32 : 0) | (c->t.e.host ? MGPK_F_ZERO_COPY : 0);
        if (mgpk_method_choose(pk, c->type, c->count, c->n, 1, 1, f) == MGPK_METHOD_HOST)
            why = "MPIGPU_PACK=auto: the calibration";
    }
    if (!why) {
        rc = pk_device(c);
        if (rc == MPI_ERR_UNSUPPORTED_OPERATION && c->ext)
            why = "external32 not supported by the pack engine";
        else
            MG_CHECK(rc, fn_fail);
    }
    if (why) {
        MGLOG_INFO(MGLOG_MPI, "%s: %lld bytes on the host (%s)", c->fn, (long long)c->n, why);
        rc = pk_host(c);
        MG_CHECK(rc, fn_fail);
    }
    *position = c->pos + c->n;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int pk_raise(const pk_call_t *c, int rc)
{
    return c->raised ? rc : mgmpi_error(c->comm, rc);
}

static int pk_datarep(pk_call_t *c, const char *datarep)
{
    if (datarep && !strcmp(datarep, "external32"))
        return MPI_SUCCESS;
    return pk_raise(c, mgerr_set(MPI_ERR_ARG, "mpigpu: %s: datarep \"%s\" is not \"external32\"",
                                 c->fn, datarep ? datarep : "(null)"));
}

/* Calls without a communicator raise errors on MPI_COMM_WORLD (MPI-3.1 sec.
   8.3; MPI-4 moved them to MPI_COMM_SELF, which MPICH 4.0.2 does not do). */
#define PK_CALL(fn_, unpack_, ext_, comm_, typed_, count_, dt_, packed_, psize_)                   \
    {                                                                                              \
        .fn = (fn_), .unpack = (unpack_), .ext = (ext_), .comm = (comm_),                          \
        .typed = (void *)(uintptr_t)(typed_), .count = (count_), .dt = (dt_),                      \
        .packed = (char *)(uintptr_t)(packed_), .psize = (psize_)                                  \
    }

MPIGPU_EXPORT
int MPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize,
             int *position, MPI_Comm comm)
{
    if (!pk_involves_device(inbuf, incount, datatype, outbuf, outsize))
        return PMPI_Pack(inbuf, incount, datatype, outbuf, outsize, position, comm);
    pk_call_t c = PK_CALL("MPI_Pack", 0, 0, comm, inbuf, incount, datatype, outbuf, outsize);
    int64_t pos = position ? *position : 0;
    int rc = pk_run(&c, position ? &pos : NULL);
    if (rc == MPI_SUCCESS)
        *position = (int)pos;
    return pk_raise(&c, rc);
}

MPIGPU_EXPORT
int MPI_Pack_c(const void *inbuf, MPI_Count incount, MPI_Datatype datatype, void *outbuf,
               MPI_Count outsize, MPI_Count *position, MPI_Comm comm)
{
    if (!pk_involves_device(inbuf, incount, datatype, outbuf, outsize))
        return PMPI_Pack_c(inbuf, incount, datatype, outbuf, outsize, position, comm);
    pk_call_t c = PK_CALL("MPI_Pack_c", 0, 0, comm, inbuf, incount, datatype, outbuf, outsize);
    return pk_raise(&c, pk_run(&c, (int64_t *)position));
}

MPIGPU_EXPORT
int MPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
               MPI_Datatype datatype, MPI_Comm comm)
{
    if (!pk_involves_device(outbuf, outcount, datatype, inbuf, insize))
        return PMPI_Unpack(inbuf, insize, position, outbuf, outcount, datatype, comm);
    pk_call_t c = PK_CALL("MPI_Unpack", 1, 0, comm, outbuf, outcount, datatype, inbuf, insize);
    int64_t pos = position ? *position : 0;
    int rc = pk_run(&c, position ? &pos : NULL);
    if (rc == MPI_SUCCESS)
        *position = (int)pos;
    return pk_raise(&c, rc);
}

MPIGPU_EXPORT
int MPI_Unpack_c(const void *inbuf, MPI_Count insize, MPI_Count *position, void *outbuf,
                 MPI_Count outcount, MPI_Datatype datatype, MPI_Comm comm)
{
    if (!pk_involves_device(outbuf, outcount, datatype, inbuf, insize))
        return PMPI_Unpack_c(inbuf, insize, position, outbuf, outcount, datatype, comm);
    pk_call_t c = PK_CALL("MPI_Unpack_c", 1, 0, comm, outbuf, outcount, datatype, inbuf, insize);
    return pk_raise(&c, pk_run(&c, (int64_t *)position));
}

MPIGPU_EXPORT
int MPI_Pack_external(const char *datarep, const void *inbuf, int incount, MPI_Datatype datatype,
                      void *outbuf, MPI_Aint outsize, MPI_Aint *position)
{
    if (!pk_involves_device(inbuf, incount, datatype, outbuf, outsize))
        return PMPI_Pack_external(datarep, inbuf, incount, datatype, outbuf, outsize, position);
    pk_call_t c = PK_CALL("MPI_Pack_external", 0, 1, MPI_COMM_WORLD, inbuf, incount, datatype,
                          outbuf, outsize);
    int rc = pk_datarep(&c, datarep);
    return rc != MPI_SUCCESS ? rc : pk_raise(&c, pk_run(&c, (int64_t *)position));
}

MPIGPU_EXPORT
int MPI_Pack_external_c(const char *datarep, const void *inbuf, MPI_Count incount,
                        MPI_Datatype datatype, void *outbuf, MPI_Count outsize, MPI_Count *position)
{
    if (!pk_involves_device(inbuf, incount, datatype, outbuf, outsize))
        return PMPI_Pack_external_c(datarep, inbuf, incount, datatype, outbuf, outsize, position);
    pk_call_t c = PK_CALL("MPI_Pack_external_c", 0, 1, MPI_COMM_WORLD, inbuf, incount, datatype,
                          outbuf, outsize);
    int rc = pk_datarep(&c, datarep);
    return rc != MPI_SUCCESS ? rc : pk_raise(&c, pk_run(&c, (int64_t *)position));
}

MPIGPU_EXPORT
int MPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
                        MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype)
{
    if (!pk_involves_device(outbuf, outcount, datatype, inbuf, insize))
        return PMPI_Unpack_external(datarep, inbuf, insize, position, outbuf, outcount, datatype);
    pk_call_t c = PK_CALL("MPI_Unpack_external", 1, 1, MPI_COMM_WORLD, outbuf, outcount, datatype,
                          inbuf, insize);
    int rc = pk_datarep(&c, datarep);
    return rc != MPI_SUCCESS ? rc : pk_raise(&c, pk_run(&c, (int64_t *)position));
}

MPIGPU_EXPORT
int MPI_Unpack_external_c(const char datarep[], const void *inbuf, MPI_Count insize,
                          MPI_Count *position, void *outbuf, MPI_Count outcount,
                          MPI_Datatype datatype)
{
    if (!pk_involves_device(outbuf, outcount, datatype, inbuf, insize))
        return PMPI_Unpack_external_c(datarep, inbuf, insize, position, outbuf, outcount, datatype);
    pk_call_t c = PK_CALL("MPI_Unpack_external_c", 1, 1, MPI_COMM_WORLD, outbuf, outcount, datatype,
                          inbuf, insize);
    int rc = pk_datarep(&c, datarep);
    return rc != MPI_SUCCESS ? rc : pk_raise(&c, pk_run(&c, (int64_t *)position));
}
