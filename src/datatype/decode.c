/*
 * Decode an MPI datatype into a tree with MPI_Type_get_envelope/contents.
 * The decoder already does the lossless part of normalization: DUP and
 * RESIZED nodes vanish (every node carries the extent MPI reports for the
 * type it came from), and element displacements and strides become bytes.
 */
#include <stddef.h>
#include <stdlib.h>

#include "mgerr.h"
#include "mgdt_tree.h"

typedef struct pair_layout {
    MPI_Datatype *pair, *first;
    MPI_Aint second_off;
} pair_layout_t;

/* Named pair types are padded in memory: decode them as the C structs they
   describe, so the padding is never packed. */
#define PAIR_OFF(T)                                                                                \
    offsetof(                                                                                      \
        struct {                                                                                   \
            T a;                                                                                   \
            int b;                                                                                 \
        },                                                                                         \
        b)

static MPI_Datatype float_t_ = MPI_FLOAT, double_t_ = MPI_DOUBLE, long_t_ = MPI_LONG,
                    short_t_ = MPI_SHORT, int_t_ = MPI_INT, ldouble_t_ = MPI_LONG_DOUBLE;
static MPI_Datatype float_int_ = MPI_FLOAT_INT, double_int_ = MPI_DOUBLE_INT,
                    long_int_ = MPI_LONG_INT, short_int_ = MPI_SHORT_INT, two_int_ = MPI_2INT,
                    ldouble_int_ = MPI_LONG_DOUBLE_INT;

static const pair_layout_t pairs[] = {
    {&float_int_, &float_t_, PAIR_OFF(float)}, {&double_int_, &double_t_, PAIR_OFF(double)},
    {&long_int_, &long_t_, PAIR_OFF(long)},    {&short_int_, &short_t_, PAIR_OFF(short)},
    {&two_int_, &int_t_, PAIR_OFF(int)},       {&ldouble_int_, &ldouble_t_, PAIR_OFF(long double)},
};

static int is_one_of(MPI_Datatype dt, const MPI_Datatype *list, int n)
{
    for (int i = 0; i < n; i++)
        if (list[i] != MPI_DATATYPE_NULL && dt == list[i])
            return 1;
    return 0;
}

/* A named type that is not a pair: one LEAF.  Types made of two equal
   halves swap per half in external32. */
static int decode_basic(MPI_Datatype dt, int query_ext32, mgdt_tree_t **out)
{
    static const MPI_Datatype halves[] = {MPI_C_FLOAT_COMPLEX,
                                          MPI_C_DOUBLE_COMPLEX,
                                          MPI_C_LONG_DOUBLE_COMPLEX,
                                          MPI_CXX_FLOAT_COMPLEX,
                                          MPI_CXX_DOUBLE_COMPLEX,
                                          MPI_CXX_LONG_DOUBLE_COMPLEX,
                                          MPI_COMPLEX,
                                          MPI_DOUBLE_COMPLEX,
                                          MPI_COMPLEX8,
                                          MPI_COMPLEX16,
                                          MPI_COMPLEX32,
                                          MPI_2REAL,
                                          MPI_2DOUBLE_PRECISION,
                                          MPI_2INTEGER};
    static const MPI_Datatype two_elems[] = {MPI_2REAL, MPI_2DOUBLE_PRECISION, MPI_2INTEGER};
    /* x87 long double has the external32 size but not its format. */
    static const MPI_Datatype no_ext32[] = {MPI_LONG_DOUBLE, MPI_C_LONG_DOUBLE_COMPLEX,
                                            MPI_CXX_LONG_DOUBLE_COMPLEX};
    int rc = MPI_SUCCESS, size;
    MPI_Aint lb, extent, ext32 = -1;
    int64_t basic;

    PMPI_Type_size(dt, &size);
    PMPI_Type_get_extent(dt, &lb, &extent);
    basic = size;
    if (is_one_of(dt, halves, sizeof(halves) / sizeof(halves[0])))
        basic = size / 2;
    if (query_ext32 && size > 0 && !is_one_of(dt, no_ext32, 3))
        PMPI_Pack_external_size("external32", 1, dt, &ext32);
    *out = mgdt_tree_leaf(size, extent, is_one_of(dt, two_elems, 3) ? 2 : 1, basic, ext32 == size);
    if (!*out)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (leaf)");
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int decode_named(MPI_Datatype dt, mgdt_tree_t **out)
{
    int rc = MPI_SUCCESS;
    mgdt_tree_t *t = NULL;
    MPI_Aint lb, extent;

    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        if (dt != *pairs[i].pair)
            continue;
        t = mgdt_tree_new(MGDT_K_STRUCT);
        if (!t)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (pair)");
        t->count = 2;
        t->kids = calloc(2, sizeof(*t->kids));
        t->displs = calloc(2, sizeof(int64_t));
        t->blocklens = calloc(2, sizeof(int64_t));
        if (!t->kids || !t->displs || !t->blocklens)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (pair)");
        /* MPICH has no external32 form of the pair types (size 0). */
        rc = decode_basic(*pairs[i].first, 0, &t->kids[0]);
        MG_CHECK(rc, fn_fail);
        rc = decode_basic(MPI_INT, 0, &t->kids[1]);
        MG_CHECK(rc, fn_fail);
        t->displs[1] = pairs[i].second_off;
        t->blocklens[0] = t->blocklens[1] = 1;
        PMPI_Type_get_extent(dt, &lb, &extent);
        t->extent = extent;
        mgdt_tree_finish(t);
        *out = t;
        goto fn_exit;
    }
    rc = decode_basic(dt, 1, out);

fn_exit:
    return rc;
fn_fail:
    mgdt_tree_free(t);
    goto fn_exit;
}

static int64_t *ints_to_i64(const int *v, int64_t n, int64_t scale, int *ovf)
{
    int64_t *a = malloc(sizeof(int64_t) * (n > 0 ? n : 1));
    for (int64_t i = 0; a && i < n; i++)
        a[i] = mgdt_mul(v[i], scale, ovf);
    return a;
}

static int64_t *aints_to_i64(const MPI_Aint *v, int64_t n)
{
    int64_t *a = malloc(sizeof(int64_t) * (n > 0 ? n : 1));
    for (int64_t i = 0; a && i < n; i++)
        a[i] = v[i];
    return a;
}

/* Build the node of a constructor whose children are already decoded in kids[];
   takes ownership of kids[] entries it uses (set to NULL). */
static int build(int comb, const int *ints, const MPI_Aint *addrs, mgdt_tree_t **kids,
                 mgdt_tree_t **out)
{
    int rc = MPI_SUCCESS;
    mgdt_tree_t *t = NULL, *c = kids[0];
    int64_t n = ints[0], ce = c ? c->extent : 0;
    static const int kind_of[] = {
        [MPI_COMBINER_CONTIGUOUS] = MGDT_K_CONTIG,     [MPI_COMBINER_VECTOR] = MGDT_K_VECTOR,
        [MPI_COMBINER_HVECTOR] = MGDT_K_VECTOR,        [MPI_COMBINER_INDEXED] = MGDT_K_INDEXED,
        [MPI_COMBINER_HINDEXED] = MGDT_K_INDEXED,      [MPI_COMBINER_INDEXED_BLOCK] = MGDT_K_BLKIDX,
        [MPI_COMBINER_HINDEXED_BLOCK] = MGDT_K_BLKIDX, [MPI_COMBINER_STRUCT] = MGDT_K_STRUCT,
    };

    if (comb == MPI_COMBINER_DUP || comb == MPI_COMBINER_RESIZED) {
        /* The caller stamps MPI's extent on the node: that is all RESIZED did. */
        *out = c;
        kids[0] = NULL;
        goto fn_exit;
    }
    if (comb == MPI_COMBINER_SUBARRAY) {
        int nd = ints[0];
        rc = mgdt_tree_subarray(nd, ints + 1, ints + 1 + nd, ints + 1 + 2 * nd, ints[1 + 3 * nd], c,
                                out);
        MG_CHECK(rc, fn_fail);
        kids[0] = NULL;
        goto fn_exit;
    }
    if (comb == MPI_COMBINER_DARRAY) {
        rc = mgdt_decode_darray(ints, c, ce, out);
        MG_CHECK(rc, fn_fail);
        kids[0] = NULL;
        goto fn_exit;
    }

    t = mgdt_tree_new(kind_of[comb]);
    if (!t)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (node)");
    t->count = n;
    switch (comb) {
    case MPI_COMBINER_CONTIGUOUS:
        break;
    case MPI_COMBINER_VECTOR:
        t->blocklen = ints[1];
        t->stride = mgdt_mul(ints[2], ce, &t->overflow);
        break;
    case MPI_COMBINER_HVECTOR:
        t->blocklen = ints[1];
        t->stride = addrs[0];
        break;
    case MPI_COMBINER_INDEXED:
        t->blocklens = ints_to_i64(ints + 1, n, 1, &t->overflow);
        t->displs = ints_to_i64(ints + 1 + n, n, ce, &t->overflow);
        break;
    case MPI_COMBINER_HINDEXED:
        t->blocklens = ints_to_i64(ints + 1, n, 1, &t->overflow);
        t->displs = aints_to_i64(addrs, n);
        break;
    case MPI_COMBINER_INDEXED_BLOCK:
        t->blocklen = ints[1];
        t->displs = ints_to_i64(ints + 2, n, ce, &t->overflow);
        break;
    case MPI_COMBINER_HINDEXED_BLOCK:
        t->blocklen = ints[1];
        t->displs = aints_to_i64(addrs, n);
        break;
    case MPI_COMBINER_STRUCT:
        t->blocklens = ints_to_i64(ints + 1, n, 1, &t->overflow);
        t->displs = aints_to_i64(addrs, n);
        t->kids = calloc(n > 0 ? n : 1, sizeof(*t->kids));
        if (!t->blocklens || !t->displs || !t->kids)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (struct)");
        for (int64_t h = 0; h < n; h++) {
            t->kids[h] = kids[h];
            kids[h] = NULL;
        }
        c = NULL;
        break;
    }
    if ((t->kind == MGDT_K_INDEXED && (!t->blocklens || !t->displs)) ||
        (t->kind == MGDT_K_BLKIDX && !t->displs))
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (indexed)");
    if (c) {
        t->child = c;
        kids[0] = NULL;
    }
    mgdt_tree_finish(t);
    *out = t;

fn_exit:
    return rc;
fn_fail:
    mgdt_tree_free(t);
    goto fn_exit;
}

int mgdt_decode(MPI_Datatype dt, int depth, mgdt_tree_t **out)
{
    int rc = MPI_SUCCESS;
    int ni, na, nt, comb, got = 0;
    int *ints = NULL;
    MPI_Aint *addrs = NULL, lb, extent;
    MPI_Datatype *types = NULL;
    mgdt_tree_t **kids = NULL;

    *out = NULL;
    if (dt == MPI_DATATYPE_NULL)
        MG_FAIL(rc, fn_exit, MPI_ERR_TYPE, "mgdt: MPI_DATATYPE_NULL");
    PMPI_Type_get_envelope(dt, &ni, &na, &nt, &comb);
    if (comb == MPI_COMBINER_NAMED) {
        rc = decode_named(dt, out);
        goto fn_exit;
    }
    if (comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_INTEGER ||
        comb == MPI_COMBINER_F90_COMPLEX) {
        rc = decode_basic(dt, 0, out);
        if (rc == MPI_SUCCESS && comb == MPI_COMBINER_F90_COMPLEX)
            (*out)->basic /= 2;
        goto fn_exit;
    }
    if (comb < MPI_COMBINER_DUP || comb > MPI_COMBINER_HINDEXED_BLOCK ||
        comb == MPI_COMBINER_HVECTOR_INTEGER || comb == MPI_COMBINER_HINDEXED_INTEGER ||
        comb == MPI_COMBINER_STRUCT_INTEGER)
        MG_FAIL(rc, fn_exit, MPI_ERR_TYPE, "mgdt: unsupported combiner %d", comb);
    /* depth counts constructors from the root (1); named types add none. */
    if (depth > MGDT_MAX_DEPTH)
        MG_FAIL(rc, fn_exit, MPI_ERR_TYPE, "mgdt: datatype nested deeper than %d", MGDT_MAX_DEPTH);

    ints = malloc(sizeof(int) * (ni + 1));
    addrs = malloc(sizeof(MPI_Aint) * (na + 1));
    types = malloc(sizeof(MPI_Datatype) * (nt + 1));
    kids = calloc(nt + 1, sizeof(*kids));
    if (!ints || !addrs || !types || !kids)
        MG_FAIL(rc, fn_free, MPI_ERR_NO_MEM, "mgdt: out of memory (contents)");
    PMPI_Type_get_contents(dt, ni, na, nt, ints, addrs, types);
    got = 1;
    for (int i = 0; i < nt; i++) {
        rc = mgdt_decode(types[i], depth + 1, &kids[i]);
        MG_CHECK(rc, fn_free);
    }
    rc = build(comb, ints, addrs, kids, out);
    MG_CHECK(rc, fn_free);
    PMPI_Type_get_extent(dt, &lb, &extent);
    (*out)->extent = extent;

fn_free:
    /* get_contents hands out new handles for derived types only. */
    for (int i = 0; got && i < nt; i++) {
        int cni, cna, cnt, ccomb;
        PMPI_Type_get_envelope(types[i], &cni, &cna, &cnt, &ccomb);
        if (ccomb != MPI_COMBINER_NAMED && ccomb != MPI_COMBINER_F90_REAL &&
            ccomb != MPI_COMBINER_F90_INTEGER && ccomb != MPI_COMBINER_F90_COMPLEX)
            PMPI_Type_free(&types[i]);
        if (kids)
            mgdt_tree_free(kids[i]);
    }
    free(kids);
    free(types);
    free(addrs);
    free(ints);
fn_exit:
    return rc;
}
