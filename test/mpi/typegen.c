/* Random nested datatypes; see typegen.h. */
#include "typegen.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t tg_next(tg_rng_t *r)
{
    /* splitmix64: tiny, seedable, good enough for test-case generation */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int tg_range(tg_rng_t *r, int lo, int hi)
{
    return lo + (int)(tg_next(r) % (uint64_t)(hi - lo + 1));
}

typedef struct tg_buf {
    char *p;
    size_t left;
} tg_buf_t;

static void put(tg_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(tg_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p, b->left, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < b->left) {
        b->p += n;
        b->left -= (size_t)n;
    } else {
        b->left = 0;
    }
}

static const struct {
    MPI_Datatype t;
    const char *name;
} basics[] = {
    {MPI_CHAR, "char"},           {MPI_SHORT, "short"},           {MPI_INT, "int"},
    {MPI_FLOAT, "float"},         {MPI_DOUBLE, "double"},         {MPI_LONG_LONG, "longlong"},
    {MPI_BYTE, "byte"},           {MPI_UINT16_T, "uint16"},       {MPI_INT64_T, "int64"},
    {MPI_LONG, "long"},           {MPI_DOUBLE_INT, "double_int"}, {MPI_2INT, "2int"},
    {MPI_FLOAT_INT, "float_int"}, {MPI_SHORT_INT, "short_int"},   {MPI_C_BOOL, "bool"},
};

/* Span [true_lb, true_ub) and extent of a committed-or-not type. */
static void bounds(MPI_Datatype t, MPI_Aint *tlb, MPI_Aint *tub, MPI_Aint *lb, MPI_Aint *ext)
{
    MPI_Aint tex;
    MPI_Type_get_true_extent(t, tlb, &tex);
    *tub = *tlb + tex;
    MPI_Type_get_extent(t, lb, ext);
}

static void free_if_derived(MPI_Datatype *t)
{
    int ni, na, nd, comb;
    MPI_Type_get_envelope(*t, &ni, &na, &nd, &comb);
    if (comb != MPI_COMBINER_NAMED)
        MPI_Type_free(t);
}

/* Shuffle n ints in place. */
static void shuffle(tg_rng_t *r, MPI_Aint *a, int *b, MPI_Datatype *c, int n)
{
    for (int i = n - 1; i > 0; i--) {
        int j = tg_range(r, 0, i);
        MPI_Aint ta = a[i];
        a[i] = a[j];
        a[j] = ta;
        if (b) {
            int tb = b[i];
            b[i] = b[j];
            b[j] = tb;
        }
        if (c) {
            MPI_Datatype tc = c[i];
            c[i] = c[j];
            c[j] = tc;
        }
    }
}

static MPI_Datatype gen(tg_rng_t *r, int depth, tg_buf_t *d);

/* A count in [0, hi], zero about one time in ten (zero-size pieces must work
   but should not swallow most cases). */
int tg_allow_empty = 1;

static int cnt(tg_rng_t *r, int hi)
{
    return tg_allow_empty && tg_range(r, 0, 9) == 0 ? 0 : tg_range(r, 1, hi);
}

/* Child types used by the constructors must have extent >= their span so that
   consecutive instances do not overlap; wrap the rare ones that do not. */
static MPI_Datatype gen_child(tg_rng_t *r, int depth, tg_buf_t *d, MPI_Aint *cext)
{
    MPI_Datatype c = gen(r, depth, d);
    MPI_Aint tlb, tub, lb, ext;
    bounds(c, &tlb, &tub, &lb, &ext);
    if (ext < tub - tlb || ext <= 0) {
        MPI_Datatype rz;
        MPI_Type_create_resized(c, tlb, (tub - tlb) > 0 ? tub - tlb : 1, &rz);
        free_if_derived(&c);
        c = rz;
        ext = (tub - tlb) > 0 ? tub - tlb : 1;
    }
    *cext = ext;
    return c;
}

static MPI_Datatype gen(tg_rng_t *r, int depth, tg_buf_t *d)
{
    MPI_Datatype t = MPI_DATATYPE_NULL, c;
    MPI_Aint cext;
    int kind = depth <= 0 ? 0 : tg_range(r, 0, 13);
    if (kind == 0 || kind == 13) {
        int i = tg_range(r, 0, (int)(sizeof(basics) / sizeof(basics[0])) - 1);
        put(d, "%s", basics[i].name);
        return basics[i].t;
    }
    switch (kind) {
    case 1: { /* contiguous */
        int n = cnt(r, 4);
        put(d, "contig(%d,", n);
        c = gen_child(r, depth - 1, d, &cext);
        MPI_Type_contiguous(n, c, &t);
        break;
    }
    case 2: { /* vector, possibly negative stride */
        int n = cnt(r, 4), bl = cnt(r, 3);
        int stride = tg_range(r, bl, bl + 3) * (tg_range(r, 0, 3) == 0 ? -1 : 1);
        if (stride == 0)
            stride = bl ? bl : 1;
        put(d, "vector(%d,%d,%d,", n, bl, stride);
        c = gen_child(r, depth - 1, d, &cext);
        MPI_Type_vector(n, bl, stride, c, &t);
        break;
    }
    case 3: { /* hvector in bytes */
        int n = cnt(r, 4), bl = cnt(r, 3);
        put(d, "hvector(%d,%d,", n, bl);
        c = gen_child(r, depth - 1, d, &cext);
        MPI_Aint stride = (MPI_Aint)bl * cext + tg_range(r, 0, 9);
        if (tg_range(r, 0, 3) == 0)
            stride = -stride;
        if (stride == 0)
            stride = cext;
        put(d, ",stride=%ld", (long)stride);
        MPI_Type_create_hvector(n, bl, stride, c, &t);
        break;
    }
    case 4:   /* indexed */
    case 5:   /* hindexed */
    case 6:   /* indexed_block */
    case 7: { /* hindexed_block */
        static const char *nm[] = {"indexed", "hindexed", "indexed_block", "hindexed_block"};
        int n = cnt(r, 4), bl[4], same = cnt(r, 3);
        MPI_Aint disp[4];
        put(d, "%s(%d,", nm[kind - 4], n);
        c = gen_child(r, depth - 1, d, &cext);
        MPI_Aint at = tg_range(r, -6, 2); /* in child extents */
        int idisp[4];
        for (int i = 0; i < n; i++) {
            bl[i] = (kind >= 6) ? same : cnt(r, 3);
            at += tg_range(r, 0, 2);
            disp[i] = at;
            at += bl[i];
        }
        if (tg_range(r, 0, 2) == 0)
            shuffle(r, disp, kind >= 6 ? NULL : bl, NULL, n);
        for (int i = 0; i < n; i++) {
            idisp[i] = (int)disp[i];
            disp[i] *= cext;
            put(d, "[%d@%ld]", bl[i], (long)disp[i]);
        }
        if (kind == 4)
            MPI_Type_indexed(n, bl, idisp, c, &t);
        else if (kind == 5)
            MPI_Type_create_hindexed(n, bl, disp, c, &t);
        else if (kind == 6)
            MPI_Type_create_indexed_block(n, same, idisp, c, &t);
        else
            MPI_Type_create_hindexed_block(n, same, disp, c, &t);
        break;
    }
    case 8: { /* struct with gaps, different children */
        int n = cnt(r, 4), bl[4];
        MPI_Aint disp[4];
        MPI_Datatype ch[4];
        put(d, "struct(%d", n);
        MPI_Aint at = tg_range(r, -40, 8);
        for (int i = 0; i < n; i++) {
            put(d, ",");
            MPI_Aint tlb, tub, lb, ext;
            ch[i] = gen_child(r, depth - 1, d, &ext);
            bounds(ch[i], &tlb, &tub, &lb, &ext);
            bl[i] = cnt(r, 3);
            at += tg_range(r, 0, 7);
            /* block i covers [disp + tlb, disp + tlb + (bl - 1) * ext + span) */
            disp[i] = at - tlb;
            if (bl[i] > 0)
                at += (MPI_Aint)(bl[i] - 1) * ext + (tub - tlb);
            put(d, "%d@%ld", bl[i], (long)disp[i]);
        }
        if (tg_range(r, 0, 2) == 0)
            shuffle(r, disp, bl, ch, n);
        MPI_Type_create_struct(n, bl, disp, ch, &t);
        for (int i = 0; i < n; i++)
            free_if_derived(&ch[i]);
        put(d, ")");
        return t;
    }
    case 9: { /* subarray */
        int nd = tg_range(r, 1, 4), sizes[4], sub[4], starts[4];
        int order = tg_range(r, 0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
        put(d, "subarray(%c", order == MPI_ORDER_C ? 'C' : 'F');
        for (int i = 0; i < nd; i++) {
            sizes[i] = tg_range(r, 1, 5);
            sub[i] = tg_range(r, 1, sizes[i]);
            starts[i] = tg_range(r, 0, sizes[i] - sub[i]);
            put(d, "[%d:%d+%d]", sizes[i], starts[i], sub[i]);
        }
        put(d, ",");
        c = gen_child(r, depth - 1, d, &cext);
        MPI_Type_create_subarray(nd, sizes, sub, starts, order, c, &t);
        break;
    }
    case 10: { /* darray */
        int nd = tg_range(r, 1, 3), gs[3], dist[3], darg[3], ps[3], nprocs = 1;
        int order = tg_range(r, 0, 1) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
        for (int i = 0; i < nd; i++) {
            gs[i] = tg_range(r, 1, 7);
            int k = tg_range(r, 0, 3);
            ps[i] = k == 0 ? 1 : tg_range(r, 1, 3);
            dist[i] = k == 0 ? MPI_DISTRIBUTE_NONE
                             : (k == 1 ? MPI_DISTRIBUTE_BLOCK : MPI_DISTRIBUTE_CYCLIC);
            darg[i] = MPI_DISTRIBUTE_DFLT_DARG;
            if (dist[i] == MPI_DISTRIBUTE_CYCLIC && tg_range(r, 0, 1))
                darg[i] = tg_range(r, 1, 3);
            if (dist[i] == MPI_DISTRIBUTE_BLOCK && tg_range(r, 0, 1))
                darg[i] = (gs[i] + ps[i] - 1) / ps[i] + tg_range(r, 0, 1);
            nprocs *= ps[i];
        }
        int rank = tg_range(r, 0, nprocs - 1);
        put(d, "darray(%c,np=%d,rank=%d", order == MPI_ORDER_C ? 'C' : 'F', nprocs, rank);
        for (int i = 0; i < nd; i++)
            put(d, ",[g%d d%d a%d p%d]", gs[i], dist[i], darg[i], ps[i]);
        put(d, ",");
        c = gen_child(r, depth - 1, d, &cext);
        MPI_Type_create_darray(nprocs, rank, nd, gs, dist, darg, ps, order, c, &t);
        break;
    }
    case 11: { /* resized, often with a negative lower bound */
        put(d, "resized(");
        c = gen(r, depth - 1, d);
        MPI_Aint tlb, tub, lb, ext;
        bounds(c, &tlb, &tub, &lb, &ext);
        MPI_Aint nlb = tlb - tg_range(r, 0, 16);
        MPI_Aint next = (tub - nlb) + tg_range(r, 0, 16);
        if (next <= 0)
            next = 1;
        put(d, ",lb=%ld,ext=%ld", (long)nlb, (long)next);
        MPI_Type_create_resized(c, nlb, next, &t);
        break;
    }
    default: { /* dup */
        put(d, "dup(");
        c = gen(r, depth - 1, d);
        MPI_Type_dup(c, &t);
        break;
    }
    }
    put(d, ")");
    free_if_derived(&c);
    return t;
}

MPI_Datatype tg_type(tg_rng_t *r, int max_depth, char *desc, size_t desclen)
{
    for (;;) {
        tg_buf_t d = {desc, desclen};
        desc[0] = 0;
        MPI_Datatype t = gen(r, tg_range(r, 0, max_depth), &d);
        int ni, na, nd, comb;
        MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
        if (comb == MPI_COMBINER_NAMED) {
            MPI_Datatype dup;
            MPI_Type_dup(t, &dup);
            t = dup;
        }
        /* Keep each case small so thousands run in a few minutes. */
        MPI_Aint tlb, tub, lb, ext;
        bounds(t, &tlb, &tub, &lb, &ext);
        MPI_Aint span = tub - tlb, absext = ext < 0 ? -ext : ext;
        if (span <= (1 << 16) && absext <= (1 << 16)) {
            MPI_Type_commit(&t);
            return t;
        }
        MPI_Type_free(&t);
    }
}

/* Walks the type; sets *basic to the one basic type found, or to
   MPI_DATATYPE_NULL when there are several or a pair type. */
static void walk_basic(MPI_Datatype t, MPI_Datatype *basic, int *mixed)
{
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_NAMED) {
        if (t == MPI_DOUBLE_INT || t == MPI_2INT || t == MPI_FLOAT_INT || t == MPI_SHORT_INT ||
            t == MPI_LONG_INT || t == MPI_LONG_DOUBLE_INT)
            *mixed = 1;
        else if (*basic == MPI_DATATYPE_NULL)
            *basic = t;
        else if (*basic != t)
            *mixed = 1;
        return;
    }
    int size;
    MPI_Type_size(t, &size);
    if (comb == MPI_COMBINER_DARRAY || size == 0)
        *mixed = 1; /* MPICH 4.0.2's external32 crashes on these too */
    int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
    MPI_Type_get_contents(t, ni, na, nd, ints, aints, types);
    for (int i = 0; i < nd; i++) {
        walk_basic(types[i], basic, mixed);
        free_if_derived(&types[i]);
    }
    free(ints);
    free(aints);
    free(types);
}

int tg_homogeneous(MPI_Datatype t)
{
    MPI_Datatype basic = MPI_DATATYPE_NULL;
    int mixed = 0;
    walk_basic(t, &basic, &mixed);
    return !mixed;
}
