/* MPICH as the oracle of the serialized form, and a random type generator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dt_oracle.h"

unsigned dt_rand(unsigned *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 16) & 0x7fff;
}

void dt_free_if_derived(MPI_Datatype *dt)
{
    int ni, na, nt, comb;
    MPI_Type_get_envelope(*dt, &ni, &na, &nt, &comb);
    if (comb != MPI_COMBINER_NAMED)
        MPI_Type_free(dt);
}

/* Whether every basic type under dt is *basic (set from the first one met). */
static int one_basic(MPI_Datatype dt, MPI_Datatype *basic)
{
    int ni, na, nt, comb, same = 1;
    MPI_Type_get_envelope(dt, &ni, &na, &nt, &comb);
    int size;
    MPI_Type_size(dt, &size);
    /* It also asserts on some darrays (built with LB/UB markers inside) and
       on types over an empty type. */
    if (comb == MPI_COMBINER_DARRAY || size == 0)
        return 0;
    if (comb == MPI_COMBINER_NAMED) {
        if (*basic == MPI_DATATYPE_NULL)
            *basic = dt;
        return *basic == dt;
    }
    int *ints = malloc(sizeof(int) * (ni + 1));
    MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (nt + 1));
    MPI_Type_get_contents(dt, ni, na, nt, ints, addrs, types);
    for (int i = 0; i < nt; i++) {
        same = same && one_basic(types[i], basic);
        dt_free_if_derived(&types[i]);
    }
    free(ints);
    free(addrs);
    free(types);
    return same;
}

static int ext32_compared;
int dt_oracle_ext32_count(void)
{
    return ext32_compared;
}

/* Rebuild the packed stream from the shape summary alone. */
static void shape_pack(const mgdt_type_t *ty, const char *base, int count, char *out)
{
    const mgdt_shape_t *s = &ty->shape;
    for (int i = 0; i < count; i++) {
        const char *b = base + (int64_t)i * ty->extent + s->offset;
        if (s->kind == MGDT_SHAPE_CONTIG || s->kind == MGDT_SHAPE_VECTOR) {
            for (int64_t r = 0; r < s->count; r++, out += s->blocklen)
                memcpy(out, b + r * s->stride, s->blocklen);
            continue;
        }
        int64_t n0 = s->sub[0], n1 = s->ndims > 1 ? s->sub[1] : 1;
        int64_t n2 = s->ndims > 2 ? s->sub[2] : 1;
        for (int64_t a = 0; a < n0; a++)
            for (int64_t c = 0; c < n1; c++)
                for (int64_t d = 0; d < n2; d++, out += s->blocklen)
                    memcpy(out,
                           b + a * s->strides[0] + (s->ndims > 1 ? c * s->strides[1] : 0) +
                               (s->ndims > 2 ? d * s->strides[2] : 0),
                           s->blocklen);
    }
}

#define FAIL_AT()                                                                                  \
    do {                                                                                           \
        bad = __LINE__;                                                                            \
        goto done;                                                                                 \
    } while (0)

int dt_oracle_check(MPI_Datatype dt, int count, unsigned seed)
{
    mgdt_type_t *ty = NULL;
    MPI_Aint lb, ext, tlb, text;
    int bad = 0, psize, pos = 0;
    char *buf = NULL, *u1 = NULL, *u2 = NULL, *p1 = NULL, *p2 = NULL, *e1 = NULL;

    if (mgdt_type_create(dt, &ty) != MPI_SUCCESS)
        return __LINE__;
    MPI_Type_get_extent(dt, &lb, &ext);
    MPI_Type_get_true_extent(dt, &tlb, &text);
    int64_t total = ty->size * count;
    int64_t lo = tlb, hi = tlb + text, last = (int64_t)(count - 1) * ext;
    /* Negative extents put later instances below the first one. */
    if (count > 0) {
        lo = lo < tlb + last ? lo : tlb + last;
        hi = hi > tlb + text + last ? hi : tlb + text + last;
    }
    if (count > 0 && ty->size != 0 && ty->nodes[0].true_ub > ty->nodes[0].true_lb) {
        int64_t nlo = ty->nodes[0].true_lb + (last < 0 ? last : 0);
        int64_t nhi = ty->nodes[0].true_ub + (last > 0 ? last : 0);
        if (nlo < lo || nhi > hi)
            FAIL_AT(); /* the tree touches bytes outside MPI's true extent */
    }
    if (hi < lo)
        hi = lo; /* MPICH's true extent of some empty types is negative */
    int64_t span = hi - lo + 1;
    buf = malloc(span);
    u1 = malloc(span);
    u2 = malloc(span);
    MPI_Pack_size(count, dt, MPI_COMM_SELF, &psize);
    p1 = calloc(1, psize + 1);
    p2 = calloc(1, total + 1);
    e1 = calloc(1, total + 1);
    if (!buf || !u1 || !u2 || !p1 || !p2 || !e1)
        FAIL_AT();
    for (int64_t i = 0; i < span; i++) {
        seed = seed * 1103515245u + 12345u;
        buf[i] = (char)(seed >> 24);
    }
    char *base = buf - lo, *b1 = u1 - lo, *b2 = u2 - lo;

    /* The serialized form, then its byte view (mgdt.h) where it has one:
       both must give MPI's bytes. */
    for (int v = 0; v < 2; v++) {
        const mgdt_type_t *vt = v ? ty->bytes : ty;
        if (!vt)
            continue;
        if (v && (vt->nnodes >= ty->nnodes || vt->external32_ok))
            FAIL_AT(); /* a byte view is smaller and never swaps */
        if (vt->size != vt->nodes[0].size || vt->extent != vt->nodes[0].extent)
            FAIL_AT();
        pos = 0;
        MPI_Pack(base, count, dt, p1, psize, &pos, MPI_COMM_SELF);
        if (pos != total)
            FAIL_AT();
        mgdt_ref_pack(vt, base, count, p2, 0, total);
        if (memcmp(p1, p2, total))
            FAIL_AT();
        /* Partial ranges are slices of the whole stream. */
        for (int k = 0; k < 4 && total > 0; k++) {
            int64_t first = dt_rand(&seed) % total, n = dt_rand(&seed) % (total - first + 1);
            memset(p2, 0, total);
            mgdt_ref_pack(vt, base, count, p2, first, n);
            if (memcmp(p1 + first, p2, n))
                FAIL_AT();
            if (n > 0 && base[mgdt_ref_offset(vt, first)] != p1[first])
                FAIL_AT();
        }
        /* The fast host walk gives the same bytes, whole and in slices. */
        if (total > 0) {
            memset(p2, 0, (size_t)total);
            mgdt_host_pack(vt, base, p2, 0, total);
            if (memcmp(p1, p2, (size_t)total))
                FAIL_AT();
        }
        for (int k = 0; k < 6 && total > 0; k++) {
            int64_t first = dt_rand(&seed) % total, n = dt_rand(&seed) % (total - first + 1);
            if (k == 0)
                first = 0; /* a head, and below a tail */
            else if (k == 1)
                n = total - first;
            memset(p2, 0, total + 1);
            mgdt_host_pack(vt, base, p2, first, n);
            if (memcmp(p1 + first, p2, n) || p2[n] != 0)
                FAIL_AT();
        }
        /* Every run starts at a multiple of align in both buffers (kernels pick
           their word width from it). */
        for (int64_t q = 0, prev = 0; q < total && total <= (1 << 16); q++) {
            int64_t off = mgdt_ref_offset(vt, q);
            if ((q == 0 || off != prev + 1) && (q % vt->align || off % vt->align))
                FAIL_AT();
            prev = off;
        }
        if (total > 0 && total % vt->align)
            FAIL_AT();
        if (vt->shape.kind != MGDT_SHAPE_GENERIC) {
            memset(p2, 0, total);
            shape_pack(vt, base, count, p2);
            if (memcmp(p1, p2, total))
                FAIL_AT();
        }
        /* Unpack into poisoned buffers: every byte outside the typemap must survive. */
        memset(u1, 0xA5, span);
        memset(u2, 0xA5, span);
        pos = 0;
        MPI_Unpack(p1, psize, &pos, b1, count, dt, MPI_COMM_SELF);
        int64_t cut = total / 3;
        mgdt_ref_unpack(vt, p1 + cut, count, b2, cut, total - cut);
        mgdt_ref_unpack(vt, p1, count, b2, 0, cut);
        if (memcmp(u1, u2, span))
            FAIL_AT();
        memset(u2, 0xA5, span);
        cut = total > 0 ? dt_rand(&seed) % (total + 1) : 0;
        mgdt_host_unpack(vt, p1 + cut, b2, cut, total - cut);
        mgdt_host_unpack(vt, p1, b2, 0, cut);
        if (memcmp(u1, u2, span))
            FAIL_AT();
    }
    /* MPICH 4.0.2 asserts (SIGILL) in MPI_Pack_external_size unless the type
       holds a single basic type, so only those are compared with it. */
    MPI_Datatype basic = MPI_DATATYPE_NULL;
    if (ty->external32_ok && total > 0 && one_basic(dt, &basic)) {
        MPI_Aint epos = 0, esize;
        MPI_Pack_external_size("external32", count, dt, &esize);
        if (esize != total) {
            fprintf(stderr, "external32 size %ld, native %ld\n", (long)esize, (long)total);
            FAIL_AT();
        }
        MPI_Pack_external("external32", base, count, dt, e1, esize, &epos);
        memcpy(p2, p1, total);
        mgdt_ref_swap(ty, p2, 0, total);
        if (memcmp(e1, p2, total))
            FAIL_AT();
        ext32_compared++;
    }

done:
    if (bad) {
        fprintf(stderr, "dt_oracle_check failed at line %d (count %d)\n", bad, count);
        if (ty)
            mgdt_type_dump(ty, stderr);
    }
    free(buf);
    free(u1);
    free(u2);
    free(p1);
    free(p2);
    free(e1);
    mgdt_type_free(ty);
    return bad;
}

static MPI_Datatype random_basic(unsigned *seed)
{
    MPI_Datatype basics[] = {MPI_CHAR,      MPI_SHORT,     MPI_INT,      MPI_DOUBLE,
                             MPI_FLOAT,     MPI_LONG,      MPI_2INT,     MPI_DOUBLE_INT,
                             MPI_FLOAT_INT, MPI_SHORT_INT, MPI_LONG_INT, MPI_C_DOUBLE_COMPLEX,
                             MPI_BYTE,      MPI_INT64_T};
    return basics[dt_rand(seed) % (sizeof(basics) / sizeof(basics[0]))];
}

static int rnd(unsigned *seed, int lo, int hi)
{
    return lo + (int)(dt_rand(seed) % (unsigned)(hi - lo + 1));
}

MPI_Datatype dt_random_type(unsigned *seed, int depth)
{
    MPI_Datatype c, t = MPI_DATATYPE_NULL;
    MPI_Aint lb, ext;
    int n = rnd(seed, 0, 4), bl = rnd(seed, 0, 3);
    int bls[4], ds[4];
    MPI_Aint ads[4];

    if (depth == 0 || dt_rand(seed) % 5 == 0)
        return random_basic(seed);
    c = dt_random_type(seed, depth - 1);
    MPI_Type_get_extent(c, &lb, &ext);
    for (int i = 0; i < 4; i++) {
        bls[i] = rnd(seed, 0, 3);
        ds[i] = rnd(seed, -6, 6);
        ads[i] = rnd(seed, -48, 48);
    }
    switch (dt_rand(seed) % 12) {
    case 0:
        MPI_Type_contiguous(n, c, &t);
        break;
    case 1:
        MPI_Type_vector(n, bl, rnd(seed, -4, 4), c, &t);
        break;
    case 2:
        MPI_Type_create_hvector(n, bl, rnd(seed, -64, 64), c, &t);
        break;
    case 3:
        MPI_Type_indexed(n, bls, ds, c, &t);
        break;
    case 4:
        MPI_Type_create_hindexed(n, bls, ads, c, &t);
        break;
    case 5:
        MPI_Type_create_indexed_block(n, bl, ds, c, &t);
        break;
    case 6:
        MPI_Type_create_hindexed_block(n, bl, ads, c, &t);
        break;
    case 7: {
        MPI_Datatype ts[3] = {c, dt_random_type(seed, depth - 1), random_basic(seed)};
        int k = rnd(seed, 1, 3);
        MPI_Type_create_struct(k, bls, ads, ts, &t);
        dt_free_if_derived(&ts[1]);
        break;
    }
    case 8: {
        int nd = rnd(seed, 1, 3), sz[3], sub[3], st[3];
        for (int d = 0; d < nd; d++) {
            sz[d] = rnd(seed, 1, 4);
            sub[d] = rnd(seed, 1, sz[d]);
            st[d] = rnd(seed, 0, sz[d] - sub[d]);
        }
        MPI_Type_create_subarray(nd, sz, sub, st,
                                 dt_rand(seed) % 2 ? MPI_ORDER_C : MPI_ORDER_FORTRAN, c, &t);
        break;
    }
    case 9:
        MPI_Type_create_resized(c, rnd(seed, -32, 32), ext + rnd(seed, 0, 24), &t);
        break;
    case 10:
        MPI_Type_dup(c, &t);
        break;
    default: {
        int gs[2] = {rnd(seed, 1, 6), rnd(seed, 1, 5)}, ps[2] = {rnd(seed, 1, 2), rnd(seed, 1, 3)};
        int di[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC}, da[2];
        da[0] = MPI_DISTRIBUTE_DFLT_DARG;
        da[1] = dt_rand(seed) % 2 ? MPI_DISTRIBUTE_DFLT_DARG : rnd(seed, 1, 3);
        MPI_Type_create_darray(ps[0] * ps[1], rnd(seed, 0, ps[0] * ps[1] - 1), 2, gs, di, da, ps,
                               dt_rand(seed) % 2 ? MPI_ORDER_C : MPI_ORDER_FORTRAN, c, &t);
        break;
    }
    }
    dt_free_if_derived(&c);
    MPI_Type_commit(&t);
    return t;
}
