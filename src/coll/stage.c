/*
 * Staging of a collective's device sides through host memory of the same
 * layout (doc/design.md, "Collectives").  MPI then runs its own collective
 * with the caller's datatypes, counts and displacements on a host view of
 * each device side, so that reductions and user-defined operations see the
 * caller's datatype.  A side's view covers the bytes [lo, hi) that its
 * blocks touch: the allocation's own storage where it is zero copy (a CPU
 * device), else a kept host buffer, read in from the device before MPI runs
 * where MPI reads the side (and where it may leave data bytes unwritten).
 * Only the data bytes go back: a contiguous block as one copy, another by
 * the pack engine's unpack from its packed bytes, so that every byte
 * between and around the blocks stays as it is on the device.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "mgerr.h"
#include "coll_impl.h"

/* The largest span replaced by scratch memory; a larger refused side is
   refused at once (the collective may then not complete elsewhere). */
#define COLL_SCRATCH_MAX ((uint64_t)256 << 20)

/* The blocks of a side that move bytes, with their types; the span. */
static int side_blocks(const mgcoll_call_t *c, coll_side_t *sd)
{
    int rc = MPI_SUCCESS;
    const coll_spec_t *s = &sd->spec;
    int n = s->form == COLL_SINGLE ? 1 : s->n;
    int64_t ext = 0, lo = INT64_MAX, hi = INT64_MIN;
    if (s->form == COLL_V) {
        rc = mgdt_type_check(s->dt);
        if (rc != MPI_SUCCESS)
            return mgerr_prepend(rc, c->fn);
        MPI_Count lb = 0, e = 0;
        PMPI_Type_get_extent_x(s->dt, &lb, &e);
        ext = e;
    }
    sd->blk = calloc((size_t)(n > 0 ? n : 1), sizeof(*sd->blk));
    if (!sd->blk)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
    for (int i = 0; i < n; i++) {
        int64_t disp = 0, l = 0, h = 0;
        MPI_Count count = 0;
        MPI_Datatype dt = MPI_DATATYPE_NULL;
        if (coll_block(s, ext, i, &disp, &count, &dt) != 0)
            return mgerr_set(MPI_ERR_ARG, "mpigpu: %s: displacement %d overflows", c->fn, i);
        if (count < 0)
            return mgerr_set(MPI_ERR_COUNT, "mpigpu: %s: negative count %lld", c->fn,
                             (long long)count);
        if (dt == MPI_DATATYPE_NULL)
            return mgerr_set(MPI_ERR_TYPE, "mpigpu: %s: the datatype is MPI_DATATYPE_NULL", c->fn);
        if (count == 0) {
            rc = mgdt_type_check(dt);
            if (rc != MPI_SUCCESS)
                return mgerr_prepend(rc, c->fn);
            continue;
        }
        coll_blk_t *b = &sd->blk[sd->nblk];
        rc = mgdt_type_acquire(dt, &b->type);
        if (rc != MPI_SUCCESS)
            return mgerr_prepend(rc, c->fn);
        sd->nblk++;
        b->disp = disp;
        b->count = count;
        b->dt = dt;
        b->idx = i;
        mgpk_method_t m = mgdev_type_method(dt);
        b->flags = MGPK_F_METHOD(m);
        sd->hostm |= m == MGPK_METHOD_HOST;
        if (b->type->size == 0)
            continue;
        if (mgdt_span(count, b->type->extent, b->type->true_lb, b->type->true_ub, &l, &h) != 0 ||
            __builtin_add_overflow(l, disp, &l) || __builtin_add_overflow(h, disp, &h))
            return mgerr_set(MPI_ERR_TYPE,
                             "mpigpu: %s: %lld instances of a datatype of extent %lld span more "
                             "bytes than an int64 holds; nothing was moved",
                             c->fn, (long long)count, (long long)b->type->extent);
        lo = l < lo ? l : lo;
        hi = h > hi ? h : hi;
    }
    sd->lo = lo < hi ? lo : 0;
    sd->hi = lo < hi ? hi : 0;
    return MPI_SUCCESS;
}

/* The device allocation that holds [buf + lo, buf + hi), and a host view. */
static int side_open(const mgcoll_call_t *c, coll_side_t *sd)
{
    int rc = MPI_SUCCESS;
    uintptr_t first = 0;
    size_t len = 0, off = 0;
    mgdev_reg_entry_t e;
    const coll_spec_t *s = &sd->spec;
    const char *what = s->dir == COLL_IN ? "input" : "output";

    if (mgdt_span_addr(s->buf, sd->lo, sd->hi, &first, &len) != 0)
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: %s: the %s bytes [%lld, %lld) from %p wrap around the address "
                         "space; nothing was moved",
                         c->fn, what, (long long)sd->lo, (long long)sd->hi, (void *)s->buf);
    if (!mgdev_reg_lookup((const void *)first, &e, &off)) {
        char why[MGDEV_REG_WHY_LEN];
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: %s: %s access [%p, %p) from address %p is not inside one live "
                         "device allocation: %s; nothing was moved",
                         c->fn, what, (void *)first, (void *)(first + len), (void *)s->buf,
                         mgdev_reg_why((const void *)first, why, sizeof(why)));
    }
    if (len > e.size - off)
        return mgerr_set(MPI_ERR_BUFFER,
                         "mpigpu: %s: %s access [%p, %p) from device address %p is outside its "
                         "allocation [%p, %p); nothing was moved",
                         c->fn, what, (void *)first, (void *)(first + len), (void *)s->buf,
                         (void *)e.base, (void *)(e.base + e.size));
    rc = mgdev_ctx_get(e.context, &sd->pk);
    if (rc != MPI_SUCCESS)
        return rc;
    if (clRetainMemObject(e.mem) != CL_SUCCESS)
        return mgerr_set(MPI_ERR_BUFFER, "mpigpu: %s: the device buffer at %p was released", c->fn,
                         (void *)s->buf);
    sd->mem = e.mem;
    sd->eoff = (int64_t)off;
    sd->dev = 1;
    sd->shared = e.shared;
    sd->sh_off = off;
    sd->sh_len = len;
    if (e.host) {
        sd->zc = 1;
        sd->packed = 0;
        sd->view = e.host + off;
    } else if (sd->packed) {
        sd->view = NULL; /* MPI gets packed bytes instead (coll_packed_setup) */
    } else {
        mgp2p_lock();
        rc = mgdev_big_get(len, &sd->tmp, &sd->cap);
        mgp2p_unlock();
        if (rc != MPI_SUCCESS)
            return mgerr_set(MPI_ERR_NO_MEM,
                             "mpigpu: %s: out of host memory for a copy of %zu bytes", c->fn, len);
        sd->view = sd->tmp;
    }
    sd->hbuf = mgdt_addr(sd->view, -sd->lo);
    return MPI_SUCCESS;
}

/* The arrays of a v or w side as MPI_Count and MPI_Aint. */
static int side_arrays(const mgcoll_call_t *c, coll_side_t *sd)
{
    const coll_spec_t *s = &sd->spec;
    if (s->form == COLL_SINGLE || !s->dir)
        return MPI_SUCCESS;
    size_t n = (size_t)(s->n > 0 ? s->n : 1);
    sd->counts = malloc(n * sizeof(MPI_Count));
    sd->displs = malloc(n * sizeof(MPI_Aint));
    if (!sd->counts || !sd->displs)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
    for (int i = 0; i < s->n; i++) {
        sd->counts[i] = coll_count_at(s->counts, s->wide_counts, i);
        sd->displs[i] = coll_displ_at(s->displs, s->wide_displs, i);
    }
    return MPI_SUCCESS;
}

int coll_state_init(coll_state_t *st, const mgcoll_call_t *c)
{
    coll_spec_t s[2];
    int rc = coll_specs(c, s, 1);
    memset(st, 0, sizeof(*st));
    st->inner = MPI_REQUEST_NULL;
    st->hc = *c;
    st->hc.wide_counts = st->hc.wide_displs = 1;
    if (rc != MPI_SUCCESS)
        return rc;
    for (int k = 0; k < 2; k++) {
        coll_side_t *sd = &st->side[k];
        sd->spec = s[k];
        sd->hbuf = s[k].buf;
        if (!s[k].dir)
            continue;
        rc = side_blocks(c, sd);
        MG_CHECK(rc, fn_fail);
        rc = side_arrays(c, sd);
        MG_CHECK(rc, fn_fail);
        int k2 = sd->hi > sd->lo &&
                 mgdev_reg_in_range(mgdt_addr(s[k].buf, sd->lo), (size_t)(sd->hi - sd->lo));
        if (k2) {
            rc = coll_packed_choose(c, sd);
            MG_CHECK(rc, fn_fail);
            rc = side_open(c, sd);
            if (rc != MPI_SUCCESS)
                sd->packed = 0;
            if (rc == MPI_ERR_BUFFER && !st->err &&
                (uint64_t)(sd->hi - sd->lo) <= COLL_SCRATCH_MAX) {
                const char *m = mgerr_get(rc);
                st->err = rc;
                st->msg = m ? strdup(m) : NULL;
                sd->scratch = calloc(1, (size_t)(sd->hi - sd->lo));
                if (!sd->scratch)
                    goto fn_fail;
                sd->hbuf = mgdt_addr(sd->scratch, -sd->lo);
                rc = MPI_SUCCESS;
            }
            MG_CHECK(rc, fn_fail);
            if (sd->packed)
                rc = coll_packed_setup(st, k);
            MG_CHECK(rc, fn_fail);
        }
    }
    /* A refused side: MPI writes no output in place either (a zero-copy
       side is the device buffer itself), so that nothing changes here. */
    for (int k = 0; k < 2 && st->err; k++) {
        coll_side_t *sd = &st->side[k];
        if (!sd->zc || !(sd->spec.dir & COLL_OUT))
            continue;
        rc = mgpk_finish(sd->pk);
        MG_CHECK(rc, fn_fail);
        sd->scratch = malloc((size_t)(sd->hi - sd->lo));
        if (!sd->scratch)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
        memcpy(sd->scratch, sd->view, (size_t)(sd->hi - sd->lo));
        sd->view = sd->scratch;
        sd->zc = 0;
        sd->hbuf = mgdt_addr(sd->scratch, -sd->lo);
    }
    /* The call on host memory, its arrays wide; insignificant ones NULL. */
    mgcoll_call_t *h = &st->hc;
    if (h->sbuf != MPI_IN_PLACE)
        h->sbuf = st->side[0].spec.dir ? st->side[0].hbuf : c->sbuf;
    if (h->kind == MGCOLL_BCAST || h->kind == MGCOLL_REDUCE_LOCAL || h->rbuf != MPI_IN_PLACE)
        h->rbuf = st->side[1].spec.dir ? st->side[1].hbuf : c->rbuf;
    h->scounts = st->side[0].counts;
    h->sdispls = st->side[0].displs;
    h->rcounts = st->side[1].counts;
    h->rdispls = st->side[1].displs;
    coll_side_t *r = &st->side[1];
    if (c->kind == MGCOLL_ALLGATHERV && c->sbuf != MPI_IN_PLACE && r->spec.n == 1 && r->displs &&
        r->dev) {
        /* MPICH 4.0.2 copies the one process's block of MPI_Allgatherv to
           the receive buffer's origin, whatever its displacement: it would
           write outside the host view.  The view's origin moves to the
           block instead, which is where MPI puts it. */
        MPI_Count lb = 0, ext = 0;
        PMPI_Type_get_extent_x(r->spec.dt, &lb, &ext);
        h->rbuf = mgdt_addr(r->hbuf, r->displs[0] * ext);
        r->displs[0] = 0;
    }
    if (c->kind == MGCOLL_REDUCE_SCATTER) {
        int n = 0;
        PMPI_Comm_size(c->comm, &n);
        st->rs_counts = malloc((size_t)n * sizeof(MPI_Count));
        if (!st->rs_counts)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mpigpu: %s: out of host memory", c->fn);
        for (int i = 0; i < n; i++)
            st->rs_counts[i] = coll_count_at(c->rcounts, c->wide_counts, i);
        h->rcounts = st->rs_counts;
    }
fn_fail:
    return rc;
}

/* The blocks of a side as one datatype (a struct of them, displacements
   from buf), so that one host pack and one unpack of the pack engine (one
   launch) write every block back: sd->fused, made once (a persistent call
   keeps it).  MPI_DATATYPE_NULL where a count does not fit an int. */
static int side_fuse(coll_side_t *sd)
{
    if (sd->ftype || sd->nblk < 2)
        return MPI_SUCCESS;
    return coll_side_fuse(sd, 0);
}

int coll_side_fuse(coll_side_t *sd, int live_only)
{
    int rc = MPI_SUCCESS, n = 0, j = 0;
    for (int i = 0; i < sd->nblk; i++)
        n += !live_only || !sd->blk[i].skip;
    int *bl = malloc((size_t)n * sizeof(int));
    MPI_Aint *disp = malloc((size_t)n * sizeof(MPI_Aint));
    MPI_Datatype *dts = malloc((size_t)n * sizeof(MPI_Datatype));
    if (!bl || !disp || !dts) {
        rc = mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory");
        goto fn_exit;
    }
    for (int i = 0; i < sd->nblk; i++) {
        const coll_blk_t *b = &sd->blk[i];
        if (live_only && b->skip)
            continue;
        if (b->count > INT32_MAX) /* a struct's block length is an int */
            goto fn_exit;
        bl[j] = (int)b->count;
        disp[j] = (MPI_Aint)b->disp;
        dts[j++] = b->dt;
    }
    rc = PMPI_Type_create_struct(n, bl, disp, dts, &sd->fused);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_commit(&sd->fused);
    if (rc == MPI_SUCCESS)
        rc = mgdt_type_acquire(sd->fused, &sd->ftype);
    if (rc != MPI_SUCCESS)
        rc = mgerr_prepend(rc, "mpigpu: the blocks of a collective as one datatype");
fn_exit:
    free(bl);
    free(disp);
    free(dts);
    return rc;
}

/* Packs from the host view the bytes of count instances of type at buf +
   disp, and unpacks them into the device buffer (only the type's bytes). */
static int side_unpack(coll_side_t *sd, const mgdt_type_t *type, int64_t count, int64_t disp,
                       int flags)
{
    int64_t n = count * type->size;
    if (mgpk_contig(type, count)) {
        /* one run of bytes: straight from the view */
        int64_t at = disp + mgpk_contig_offset(type, count);
        mgpk_buf_t d = {.mem = sd->mem, .offset = sd->eoff - sd->lo + at};
        mgpk_buf_t h = {.host = sd->view + (at - sd->lo)};
        return mgpk_copy(sd->pk, d, h, (size_t)n);
    }
    char *packed = malloc((size_t)(n > 0 ? n : 1));
    if (!packed)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory (%lld bytes)", (long long)n);
    int rc = mgpk_host_pack(sd->pk, type, mgdt_addr(sd->hbuf, disp), packed, 0, n, 0);
    if (rc == MPI_SUCCESS) {
        mgpk_buf_t h = {.host = packed}, d = {.mem = sd->mem, .offset = sd->eoff - sd->lo + disp};
        rc = mgpk_unpack(sd->pk, type, count, h, d, 0, n, flags);
    }
    free(packed);
    return rc;
}

/* Write a side's data bytes back to the device: one block, or several as
   one struct datatype, unpacked by the pack engine, which writes the
   type's bytes only (one transfer when they are contiguous); block by block
   where they cannot be fused. */
static int side_out(coll_side_t *sd)
{
    if (sd->hostm) {
        /* the host method: the whole span, as read in before MPI ran */
        mgpk_buf_t d = {.mem = sd->mem, .offset = sd->eoff}, h = {.host = sd->tmp};
        return mgpk_copy(sd->pk, d, h, (size_t)(sd->hi - sd->lo));
    }
    int rc = side_fuse(sd);
    if (rc != MPI_SUCCESS)
        return rc;
    if (sd->ftype)
        return side_unpack(sd, sd->ftype, 1, 0, 0);
    for (int i = 0; i < sd->nblk && rc == MPI_SUCCESS; i++) {
        coll_blk_t *b = &sd->blk[i];
        if (b->count * b->type->size > 0)
            rc = side_unpack(sd, b->type, b->count, b->disp, b->flags);
    }
    return rc;
}

/* The side's blocks as one type: count instances at buf + disp (NULL
   where they cannot be fused). */
static const mgdt_type_t *side_type(const coll_side_t *sd, int64_t *count, int64_t *disp)
{
    *count = 1;
    *disp = 0;
    if (sd->ftype)
        return sd->ftype;
    if (sd->nblk != 1)
        return NULL;
    *count = sd->blk[0].count;
    *disp = sd->blk[0].disp;
    return sd->blk[0].type;
}

/* Read a side in: its span as one copy, or, where its data bytes are less
   than half of the span (sparse blocks, a halo's faces of a cube), only
   the data: packed on the device by the pack engine, unpacked on the host
   into the view.  MPI reads nothing else of it. */
static int side_in(coll_side_t *sd)
{
    int64_t data = 0, span = sd->hi - sd->lo, count = 0, disp = 0;
    for (int i = 0; i < sd->nblk; i++)
        data += sd->blk[i].count * sd->blk[i].type->size;
    const mgdt_type_t *t = NULL;
    if (data * 2 < span && !sd->hostm) {
        int rc = side_fuse(sd);
        if (rc != MPI_SUCCESS)
            return rc;
        t = side_type(sd, &count, &disp);
    }
    if (!t || mgpk_contig(t, count)) {
        mgpk_buf_t h = {.host = sd->tmp}, d = {.mem = sd->mem, .offset = sd->eoff};
        return mgpk_copy(sd->pk, h, d, (size_t)span);
    }
    char *packed = malloc((size_t)data);
    if (!packed)
        return mgerr_set(MPI_ERR_NO_MEM, "mpigpu: out of host memory (%lld bytes)",
                         (long long)data);
    mgpk_buf_t d = {.mem = sd->mem, .offset = sd->eoff - sd->lo + disp}, h = {.host = packed};
    int rc = mgpk_pack(sd->pk, t, count, d, h, 0, data, sd->ftype ? 0 : sd->blk[0].flags);
    if (rc == MPI_SUCCESS)
        rc = mgpk_host_pack(sd->pk, t, mgdt_addr(sd->hbuf, disp), packed, 0, data, 1);
    free(packed);
    return rc;
}

int coll_stage_in(coll_state_t *st)
{
    int rc = MPI_SUCCESS;
    for (int k = 0; k < 2 && rc == MPI_SUCCESS; k++) {
        coll_side_t *sd = &st->side[k];
        if (!sd->dev || sd->scratch)
            continue;
        /* Shared memory (MPIX_Gpu_malloc_shared): the host's stores to an
           input reach the device before it is read; the host's copies of an
           output become invalid before it is written (at every start of a
           persistent call). */
        if (sd->shared) {
            rc = mgdev_shared_device_use(sd->shared, sd->sh_off, sd->sh_len,
                                         (sd->spec.dir & COLL_OUT) != 0, 0);
            if (rc != MPI_SUCCESS)
                break;
        }
        if (sd->zc) {
            rc = mgpk_finish(sd->pk); /* the device's commands end before MPI reads */
            continue;
        }
        if (sd->packed) {
            /* MPI writes every byte of the blocks that move */
            if (sd->spec.dir & COLL_IN)
                rc = coll_packed_in(sd);
            continue;
        }
        if (!(sd->spec.dir & COLL_IN) && sd->spec.full && (!sd->hostm || st->primed))
            continue;
        rc = side_in(sd);
    }
    st->primed = 1;
    return rc;
}

int coll_stage_out(coll_state_t *st)
{
    int rc = MPI_SUCCESS;
    for (int k = 0; k < 2 && rc == MPI_SUCCESS; k++) {
        coll_side_t *sd = &st->side[k];
        if (sd->dev && !sd->zc && !sd->scratch && (sd->spec.dir & COLL_OUT))
            rc = sd->packed ? coll_packed_out(sd) : side_out(sd);
    }
    return rc;
}

void coll_state_free(coll_state_t *st)
{
    for (int k = 0; k < 2; k++) {
        coll_side_t *sd = &st->side[k];
        for (int i = 0; i < sd->nblk; i++)
            mgdt_type_release(sd->blk[i].type);
        mgdt_type_release(sd->ftype);
        if (sd->fused != MPI_DATATYPE_NULL && sd->fused)
            PMPI_Type_free(&sd->fused);
        free(sd->blk);
        free(sd->counts);
        free(sd->displs);
        if (sd->tmp) {
            mgp2p_lock();
            mgdev_big_put(sd->tmp, sd->cap);
            mgp2p_unlock();
        }
        if (sd->mem)
            clReleaseMemObject(sd->mem);
        free(sd->scratch);
        coll_packed_free(sd);
        memset(sd, 0, sizeof(*sd));
    }
    free(st->rs_counts);
    st->rs_counts = NULL;
    free(st->msg);
    st->msg = NULL;
}
