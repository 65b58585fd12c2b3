/* Unit tests of the datatype engine (src/datatype) against MPICH. */
#include <check.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "dt_oracle.h"
#include "mgdt.h"
#include "mgtest_types.h"

/* ---- golden serialized forms ---------------------------------------------- */

typedef struct gnode {
    int kind;
    int64_t count, blocklen, stride, size, extent, child_size, child_extent, la;
} gnode_t;

static void expect_nodes(const mgdt_type_t *ty, const gnode_t *g, size_t n)
{
    ck_assert_uint_eq(ty->nnodes, n);
    for (size_t i = 0; i < n; i++) {
        const mgdt_node_t *x = &ty->nodes[i];
        ck_assert_int_eq(x->kind, g[i].kind);
        ck_assert_int_eq(x->count, g[i].count);
        ck_assert_int_eq(x->blocklen, g[i].blocklen);
        ck_assert_int_eq(x->stride, g[i].stride);
        ck_assert_int_eq(x->size, g[i].size);
        ck_assert_int_eq(x->extent, g[i].extent);
        ck_assert_int_eq(x->child_size, g[i].child_size);
        ck_assert_int_eq(x->child_extent, g[i].child_extent);
        ck_assert_int_eq(x->la, g[i].la);
    }
}

static void expect_lookaside(const mgdt_type_t *ty, const int64_t *la, size_t n)
{
    ck_assert_uint_eq(ty->nlookaside, n);
    for (size_t i = 0; i < n; i++)
        ck_assert_int_eq(ty->lookaside[i], la[i]);
}

/* Create, check against MPI for counts 1..3, and return the serialized form. */
static mgdt_type_t *make_n(MPI_Datatype dt, int maxcount)
{
    mgdt_type_t *ty = NULL;
    ck_assert_int_eq(mgdt_type_create(dt, &ty), MPI_SUCCESS);
    for (int count = 0; count <= maxcount; count++)
        ck_assert_int_eq(dt_oracle_check(dt, count, 7u + count), 0);
    if (getenv("MGDT_TEST_DUMP"))
        mgdt_type_dump(ty, stdout);
    return ty;
}

static mgdt_type_t *make(MPI_Datatype dt)
{
    return make_n(dt, 3);
}

START_TEST(test_paper_vector_of_vectors)
{
    MPI_Datatype v1, v2;
    MPI_Type_vector(4, 1, 2, MPI_DOUBLE, &v1);
    MPI_Type_vector(6, 1, 4, v1, &v2);
    MPI_Type_commit(&v2);
    mgdt_type_t *ty = make(v2);
    /* v1 extent = 3 * 16 + 8 = 56, so v2 strides 4 * 56 = 224 bytes. */
    const gnode_t g[] = {
        {MGDT_K_VECTOR, 6, 1, 224, 192, 5 * 224 + 56, 32, 56, -1},
        {MGDT_K_VECTOR, 4, 1, 16, 32, 56, 8, 8, -1},
        {MGDT_K_LEAF, 0, 0, 0, 8, 8, 0, 0, -1},
    };
    expect_nodes(ty, g, 3);
    ck_assert_int_eq(ty->elements, 24);
    ck_assert_int_eq(ty->depth, 3);
    ck_assert_int_eq(ty->align, 8);
    ck_assert_int_eq(ty->nodes[2].basic, 8);
    ck_assert_int_eq(ty->shape.kind, MGDT_SHAPE_GENERIC);
    ck_assert(ty->external32_ok);
    mgdt_type_free(ty);
    MPI_Type_free(&v1);
    MPI_Type_free(&v2);
}
END_TEST

START_TEST(test_contiguous_doubles)
{
    MPI_Datatype t;
    MPI_Type_contiguous(100, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    mgdt_type_t *ty = make(t);
    const gnode_t g[] = {{MGDT_K_LEAF, 0, 0, 0, 800, 800, 0, 0, -1}};
    expect_nodes(ty, g, 1);
    ck_assert_int_eq(ty->nodes[0].elements, 100);
    ck_assert_int_eq(ty->shape.kind, MGDT_SHAPE_CONTIG);
    ck_assert_int_eq(ty->shape.blocklen, 800);
    ck_assert_int_eq(ty->align, 16);
    ck_assert_ptr_null(ty->bytes); /* nothing to merge */
    mgdt_type_free(ty);
    MPI_Type_free(&t);
}
END_TEST

START_TEST(test_vector_blocks)
{
    MPI_Datatype t;
    MPI_Type_vector(10, 1, 8, MPI_DOUBLE, &t); /* 8 B blocks, stride 64 B */
    MPI_Type_commit(&t);
    mgdt_type_t *ty = make(t);
    const gnode_t g[] = {
        {MGDT_K_VECTOR, 10, 1, 64, 80, 9 * 64 + 8, 8, 8, -1},
        {MGDT_K_LEAF, 0, 0, 0, 8, 8, 0, 0, -1},
    };
    expect_nodes(ty, g, 2);
    ck_assert_int_eq(ty->shape.kind, MGDT_SHAPE_VECTOR);
    ck_assert_int_eq(ty->shape.count, 10);
    ck_assert_int_eq(ty->shape.blocklen, 8);
    ck_assert_int_eq(ty->shape.stride, 64);
    mgdt_type_free(ty);
    MPI_Type_free(&t);
}
END_TEST

START_TEST(test_subarray_4d)
{
    MPI_Datatype t;
    int sizes[4] = {64, 64, 64, 64}, sub[4] = {4, 5, 6, 7}, st[4] = {1, 2, 3, 4};
    MPI_Type_create_subarray(4, sizes, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    mgdt_type_t *ty = make_n(t, 1); /* the extent is 128 MiB */
    const int64_t s3 = 8, s2 = 64 * s3, s1 = 64 * s2, s0 = 64 * s1;
    const gnode_t g[] = {
        {MGDT_K_SUBARRAY, 4 * 5 * 6, 0, 1 * s0 + 2 * s1 + 3 * s2 + 4 * s3, 4 * 5 * 6 * 7 * 8,
         64 * s0, 56, 56, 0},
        {MGDT_K_LEAF, 0, 0, 0, 56, 56, 0, 0, -1},
    };
    expect_nodes(ty, g, 2);
    const int64_t la[] = {4, 5, 6, s0, s1, s2};
    expect_lookaside(ty, la, 6);
    ck_assert_int_eq(ty->nodes[0].ndims, 3);
    ck_assert_int_eq(ty->shape.kind, MGDT_SHAPE_SUBARRAY);
    ck_assert_int_eq(ty->shape.ndims, 3);
    ck_assert_int_eq(ty->shape.blocklen, 56);
    ck_assert_int_eq(ty->shape.sub[2], 6);
    ck_assert_int_eq(ty->shape.strides[2], s2);
    mgdt_type_free(ty);
    MPI_Type_free(&t);
}
END_TEST

START_TEST(test_subarray_fortran)
{
    MPI_Datatype t;
    int sizes[3] = {6, 5, 4}, sub[3] = {6, 2, 3}, st[3] = {0, 1, 1};
    MPI_Type_create_subarray(3, sizes, sub, st, MPI_ORDER_FORTRAN, MPI_INT, &t);
    MPI_Type_commit(&t);
    mgdt_type_t *ty = make(t);
    /* C order sizes {4, 5, 6}, subsizes {3, 2, 6}: full rows of 6 ints, and the
       2 rows taken of each plane abut, so the leaf is 48 bytes. */
    const gnode_t g[] = {
        {MGDT_K_SUBARRAY, 3, 0, 1 * 120 + 1 * 24, 144, 480, 48, 48, 0},
        {MGDT_K_LEAF, 0, 0, 0, 48, 48, 0, 0, -1},
    };
    expect_nodes(ty, g, 2);
    const int64_t la[] = {3, 120};
    expect_lookaside(ty, la, 2);
    ck_assert_int_eq(ty->nodes[0].ndims, 1);
    ck_assert_int_eq(ty->shape.kind, MGDT_SHAPE_VECTOR);
    ck_assert_int_eq(ty->shape.offset, 144);
    ck_assert_int_eq(ty->shape.count, 3);
    ck_assert_int_eq(ty->shape.stride, 120);
    ck_assert_int_eq(ty->shape.blocklen, 48);
    mgdt_type_free(ty);
    MPI_Type_free(&t);
}
END_TEST

START_TEST(test_indexed_uniform)
{
    MPI_Datatype t;
    int bl[4] = {2, 2, 2, 2}, d[4] = {0, 5, 9, 20};
    MPI_Type_indexed(4, bl, d, MPI_INT, &t);
    MPI_Type_commit(&t);
    mgdt_type_t *ty = make(t);
    const gnode_t g[] = {
        {MGDT_K_BLKIDX, 4, 1, 0, 32, 88, 8, 8, 0},
        {MGDT_K_LEAF, 0, 0, 0, 8, 8, 0, 0, -1},
    };
    expect_nodes(ty, g, 2);
    const int64_t la[] = {0, 20, 36, 80};
    expect_lookaside(ty, la, 4);
    ck_assert_int_eq(ty->nodes[1].basic, 4);
    ck_assert_int_eq(ty->nodes[1].elements, 2);
    mgdt_type_free(ty);
    MPI_Type_free(&t);
}
END_TEST

START_TEST(test_struct_padded)
{
    struct s {
        double d;
        int i, j;
        char c;
    };
    MPI_Datatype s, v;
    int bl[4] = {1, 1, 1, 1};
    MPI_Aint d[4] = {offsetof(struct s, d), offsetof(struct s, i), offsetof(struct s, j),
                     offsetof(struct s, c)};
    MPI_Datatype ts[4] = {MPI_DOUBLE, MPI_INT, MPI_INT, MPI_CHAR};
    MPI_Type_create_struct(4, bl, d, ts, &s);
    MPI_Type_commit(&s);
    mgdt_type_t *ty = make(s);
    ck_assert_int_eq(ty->extent, 24);
    ck_assert_int_eq(ty->size, 17);
    const gnode_t g[] = {
        {MGDT_K_STRUCT, 3, 0, 0, 17, 24, 0, 0, 0},
        {MGDT_K_LEAF, 0, 0, 0, 8, 8, 0, 0, -1},
        {MGDT_K_LEAF, 0, 0, 0, 8, 8, 0, 0, -1},
        {MGDT_K_LEAF, 0, 0, 0, 1, 1, 0, 0, -1},
    };
    expect_nodes(ty, g, 4);
    /* pfx {0, 8, 16, 17}, displs {0, 8, 16}, child {1, 2, 3} */
    const int64_t la[] = {0, 8, 16, 17, 0, 8, 16, 1, 2, 3};
    expect_lookaside(ty, la, 10);
    /* Dense up to the padding: one 17-byte run per 24-byte instance. */
    ck_assert_int_eq(ty->shape.kind, MGDT_SHAPE_VECTOR);
    ck_assert_int_eq(ty->shape.count, 1);
    ck_assert_int_eq(ty->shape.blocklen, 17);
    /* The byte view merges the four fields into one run (external32 cannot
       use it: it swaps 8, 4, 4 and 1 bytes). */
    ck_assert_ptr_nonnull(ty->bytes);
    ck_assert_uint_eq(ty->bytes->nnodes, 1);
    ck_assert_int_eq(ty->bytes->nodes[0].kind, MGDT_K_LEAF);
    ck_assert_int_eq(ty->bytes->nodes[0].size, 17);
    ck_assert_int_eq(ty->bytes->extent, 24);
    ck_assert_int_eq(ty->bytes->external32_ok, 0);
    ck_assert_int_eq(ty->external32_ok, 1);
    mgdt_type_free(ty);

    MPI_Type_vector(3, 2, 3, s, &v);
    MPI_Type_commit(&v);
    ty = make(v);
    ck_assert_int_eq(ty->nodes[0].kind, MGDT_K_VECTOR);
    ck_assert_int_eq(ty->nodes[0].stride, 72);
    ck_assert_int_eq(ty->nodes[1].kind, MGDT_K_STRUCT);
    ck_assert_ptr_nonnull(ty->bytes);
    ck_assert_int_eq(ty->bytes->nodes[0].kind, MGDT_K_VECTOR);
    ck_assert_uint_eq(ty->bytes->nnodes, 2);
    mgdt_type_free(ty);
    MPI_Type_free(&v);
    MPI_Type_free(&s);
}
END_TEST

START_TEST(test_resized_negative_lb)
{
    MPI_Datatype v, r, c;
    MPI_Type_vector(3, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, -8, 32, &r);
    MPI_Type_contiguous(3, r, &c);
    MPI_Type_commit(&r);
    MPI_Type_commit(&c);
    mgdt_type_t *ty = make(r);
    ck_assert_int_eq(ty->lb, -8);
    ck_assert_int_eq(ty->extent, 32);
    const gnode_t g[] = {
        {MGDT_K_VECTOR, 3, 1, 8, 12, 32, 4, 4, -1},
        {MGDT_K_LEAF, 0, 0, 0, 4, 4, 0, 0, -1},
    };
    expect_nodes(ty, g, 2);
    mgdt_type_free(ty);
    /* contiguous(3) of it: a resized node only changes the child extent. */
    ty = make(c);
    const gnode_t g2[] = {
        {MGDT_K_CONTIG, 3, 0, 0, 36, 96, 12, 32, -1},
        {MGDT_K_VECTOR, 3, 1, 8, 12, 32, 4, 4, -1},
        {MGDT_K_LEAF, 0, 0, 0, 4, 4, 0, 0, -1},
    };
    expect_nodes(ty, g2, 3);
    mgdt_type_free(ty);
    MPI_Type_free(&v);
    MPI_Type_free(&r);
    MPI_Type_free(&c);
}
END_TEST

START_TEST(test_named_and_pairs)
{
    /* Every predefined type, pairs included, through the oracle, but for
       two of Fortran's complex types: MPICH 4.0.2's MPI_Pack_external swaps
       MPI_COMPLEX and MPI_DOUBLE_COMPLEX as one number, where external32
       (and its own MPI_COMPLEX8) swaps the real and imaginary parts each,
       as the library does. */
    const MPI_Datatype skip[] = {MPI_COMPLEX, MPI_DOUBLE_COMPLEX};
    for (int i = 0; i < MGTEST_NTYPES; i++) {
        int skipped = 0;
        for (size_t k = 0; k < sizeof(skip) / sizeof(skip[0]); k++)
            skipped |= mgtest_types[i].dt == skip[k];
        for (int count = 0; count <= 3 && !skipped; count++)
            ck_assert_msg(dt_oracle_check(mgtest_types[i].dt, count, (unsigned)i) == 0, "%s x %d",
                          mgtest_types[i].name, count);
    }
    mgdt_type_t *ty;
    ck_assert_int_eq(mgdt_type_create(MPI_DOUBLE_INT, &ty), MPI_SUCCESS);
    ck_assert_int_eq(ty->size, 12);
    ck_assert_int_eq(ty->extent, 16);
    /* {double; int} is dense up to its padding: one 12-byte leaf of extent 16,
       mixing basic sizes (allowed as MPICH has no external32 for pairs). */
    ck_assert_int_eq(ty->nnodes, 1);
    ck_assert_int_eq(ty->nodes[0].size, 12);
    ck_assert_int_eq(ty->nodes[0].extent, 16);
    ck_assert_int_eq(ty->nodes[0].basic, 0);
    ck_assert_int_eq(ty->elements, 2);
    mgdt_type_free(ty);
    ck_assert_int_eq(mgdt_type_create(MPI_LONG, &ty), MPI_SUCCESS);
    ck_assert(!ty->external32_ok); /* 8 bytes natively, 4 in external32 */
    mgdt_type_free(ty);
    ck_assert_int_eq(mgdt_type_create(MPI_2INT, &ty), MPI_SUCCESS);
    ck_assert_int_eq(ty->nnodes, 1); /* {int; int} has no padding */
    ck_assert_int_eq(ty->nodes[0].basic, 4);
    mgdt_type_free(ty);
}
END_TEST

START_TEST(test_random_types)
{
    /* MGDT_TEST_SEED replays another stream of random types. */
    unsigned seed = getenv("MGDT_TEST_SEED") ? (unsigned)atoi(getenv("MGDT_TEST_SEED")) : 12345;
    int ext32_before = dt_oracle_ext32_count(), shaped = 0;
    for (int i = 0; i < 600; i++) {
        unsigned s0 = seed;
        MPI_Datatype t = dt_random_type(&seed, 1 + i % 4);
        int count = (int)(dt_rand(&seed) % 5);
        int bad = dt_oracle_check(t, count, seed);
        if (bad)
            fprintf(stderr, "random type %d (seed %u) failed\n", i, s0);
        ck_assert_int_eq(bad, 0);
        const mgdt_type_t *ty;
        ck_assert_int_eq(mgdt_type_get(t, &ty), MPI_SUCCESS);
        shaped += ty->shape.kind != MGDT_SHAPE_GENERIC;
        dt_free_if_derived(&t);
    }
    /* The generator must keep exercising both the swap and the shapes. */
    ck_assert_int_gt(dt_oracle_ext32_count() - ext32_before, 100);
    ck_assert_int_gt(shaped, 100);
}
END_TEST

static void darray_case(int nd, const int *gs, const int *dist, const int *darg, const int *ps,
                        MPI_Datatype old)
{
    int nprocs = 1;
    for (int i = 0; i < nd; i++)
        nprocs *= ps[i];
    for (int order = 0; order < 2; order++) {
        for (int rank = 0; rank < nprocs; rank++) {
            MPI_Datatype t;
            MPI_Type_create_darray(nprocs, rank, nd, gs, dist, darg, ps,
                                   order ? MPI_ORDER_FORTRAN : MPI_ORDER_C, old, &t);
            MPI_Type_commit(&t);
            for (int count = 1; count <= 2; count++)
                ck_assert_int_eq(dt_oracle_check(t, count, (unsigned)rank), 0);
            MPI_Type_free(&t);
        }
    }
}

START_TEST(test_darray)
{
    const int B = MPI_DISTRIBUTE_BLOCK, C = MPI_DISTRIBUTE_CYCLIC, N = MPI_DISTRIBUTE_NONE;
    const int D = MPI_DISTRIBUTE_DFLT_DARG;
    int gs2[2] = {7, 10}, ps2[2] = {2, 3};
    int d_bb[2] = {B, B}, a_dd[2] = {D, D};
    int d_cc[2] = {C, C}, a_k[2] = {2, 3};
    int d_bc[2] = {B, C}, a_bk[2] = {4, 2};
    darray_case(2, gs2, d_bb, a_dd, ps2, MPI_DOUBLE);
    darray_case(2, gs2, d_cc, a_dd, ps2, MPI_INT);
    darray_case(2, gs2, d_cc, a_k, ps2, MPI_DOUBLE);
    darray_case(2, gs2, d_bc, a_bk, ps2, MPI_DOUBLE_INT);
    int gs3[3] = {5, 6, 7}, ps3[3] = {1, 2, 3}, ps3n[3] = {2, 1, 3};
    int d_nbc[3] = {N, B, C}, a3[3] = {D, D, 2};
    int d_cnb[3] = {C, N, B}, a3b[3] = {D, D, D};
    darray_case(3, gs3, d_nbc, a3, ps3, MPI_FLOAT);
    darray_case(3, gs3, d_cnb, a3b, ps3n, MPI_SHORT);
    mgdt_type_t *ty;
    MPI_Datatype t;
    /* Block x block: every owned set is one range, so a SUBARRAY. */
    MPI_Type_create_darray(6, 4, 2, gs2, d_bb, a_dd, ps2, MPI_ORDER_C, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    ck_assert_int_eq(mgdt_type_create(t, &ty), MPI_SUCCESS);
    ck_assert_int_eq(ty->nodes[0].kind, MGDT_K_SUBARRAY);
    ck_assert_int_eq(ty->lb, 0);
    ck_assert_int_eq(ty->extent, 70 * 8);
    mgdt_type_free(ty);
    MPI_Type_free(&t);
}
END_TEST

START_TEST(test_depth)
{
    MPI_Datatype t = MPI_INT, n;
    MPI_Aint lb, ext;
    mgdt_type_t *ty;
    for (int i = 0; i < 16; i++) {
        MPI_Type_get_extent(t, &lb, &ext);
        MPI_Type_create_hvector(2, 1, ext + 8, t, &n);
        if (i > 0)
            MPI_Type_free(&t);
        t = n;
    }
    MPI_Type_commit(&t);
    ck_assert_int_eq(dt_oracle_check(t, 2, 1), 0);
    ck_assert_int_eq(mgdt_type_create(t, &ty), MPI_SUCCESS);
    ck_assert_int_eq(ty->depth, 17);
    mgdt_type_free(ty);
    MPI_Type_free(&t);

    t = MPI_INT;
    for (int i = 0; i < MGDT_MAX_DEPTH + 1; i++) {
        MPI_Type_contiguous(1, t, &n);
        if (i == MGDT_MAX_DEPTH - 1) {
            MPI_Type_commit(&n);
            ck_assert_int_eq(mgdt_type_create(n, &ty), MPI_SUCCESS);
            mgdt_type_free(ty);
        }
        if (i > 0)
            MPI_Type_free(&t);
        t = n;
    }
    MPI_Type_commit(&t);
    ck_assert_int_eq(mgdt_type_create(t, &ty), MPI_ERR_TYPE);
    MPI_Type_free(&t);
}
END_TEST

static int user_freed;
static void count_free(void *p)
{
    user_freed += p == &user_freed;
}

START_TEST(test_cache)
{
    const mgdt_type_t *a, *b;
    MPI_Datatype t;
    ck_assert_int_eq(mgdt_type_get(MPI_DATATYPE_NULL, &a), MPI_ERR_TYPE);
    ck_assert_int_eq(mgdt_type_get(MPI_INT, &a), MPI_SUCCESS);
    ck_assert_int_eq(mgdt_type_get(MPI_INT, &b), MPI_SUCCESS);
    ck_assert_ptr_eq(a, b);
    MPI_Type_vector(3, 1, 2, MPI_INT, &t);
    MPI_Type_commit(&t);
    ck_assert_int_eq(mgdt_type_get(t, &a), MPI_SUCCESS);
    ck_assert_int_eq(mgdt_type_get(t, &b), MPI_SUCCESS);
    ck_assert_ptr_eq(a, b);
    mgdt_type_set_user(a, &user_freed, count_free);
    user_freed = 0;
    MPI_Type_free(&t);
    ck_assert_int_eq(user_freed, 1);
}
END_TEST

START_TEST(test_zero_size)
{
    MPI_Datatype t;
    int bl[2] = {0, 0}, d[2] = {3, 9};
    MPI_Type_indexed(2, bl, d, MPI_INT, &t);
    MPI_Type_commit(&t);
    mgdt_type_t *ty = make(t);
    ck_assert_int_eq(ty->nnodes, 1);
    ck_assert_int_eq(ty->nodes[0].kind, MGDT_K_LEAF);
    ck_assert_int_eq(ty->nodes[0].size, 0);
    mgdt_type_free(ty);
    MPI_Type_free(&t);
}
END_TEST

/* Spans in checked arithmetic (issue 22): exact where they fit, refused
   where an int64 or an address cannot hold them. */
START_TEST(test_span)
{
    int64_t lo, hi;
    uintptr_t first;
    size_t len;
    ck_assert_int_eq(mgdt_span(3, -8, 0, 4, &lo, &hi), 0);
    ck_assert_int_eq(lo, -16);
    ck_assert_int_eq(hi, 4);
    ck_assert_int_eq(mgdt_span(0, 8, 0, 4, &lo, &hi), 0);
    ck_assert_int_eq(lo, 0);
    ck_assert_int_eq(hi, 0);
    ck_assert_int_eq(mgdt_span(8, (int64_t)1 << 61, 0, 4, &lo, &hi), -1);
    ck_assert_int_eq(mgdt_span(2, INT64_MIN, 0, 4, &lo, &hi), -1);
    ck_assert_int_eq(mgdt_span(1, 4, INT64_MAX - 2, INT64_MAX, &lo, &hi), 0);
    ck_assert_int_eq(mgdt_span(2, 4, INT64_MAX - 6, INT64_MAX - 2, &lo, &hi), -1);
    ck_assert_int_eq(mgdt_span(1, 0, INT64_MIN, 1, &lo, &hi), -1); /* length 2^63 + 1 */
    ck_assert_int_eq(mgdt_span_addr((void *)4096, -16, 4, &first, &len), 0);
    ck_assert_uint_eq(first, 4080);
    ck_assert_uint_eq(len, 20);
    ck_assert_int_eq(mgdt_span_addr((void *)4096, -8192, 4, &first, &len), -1);
    ck_assert_int_eq(mgdt_span_addr((void *)(UINTPTR_MAX - 8), 0, 16, &first, &len), -1);
}
END_TEST

/* Types whose sizes or bounds MPI computes with wrapping arithmetic are
   refused with MPI_ERR_TYPE; an uncommitted type too, until committed. */
START_TEST(test_overflow_and_commit)
{
    MPI_Datatype r, c, v, h, t;
    const mgdt_type_t *ty;
    mgdt_type_t *own;
    int bl = 1;
    MPI_Aint d = INT64_MAX - 2;
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 61, &r);
    MPI_Type_contiguous(8, r, &c);
    MPI_Type_create_hvector(2, 1, INT64_MIN, MPI_INT, &v);
    MPI_Type_create_hindexed(1, &bl, &d, MPI_INT, &h);
    MPI_Datatype bad[] = {c, v, h};
    for (int i = 0; i < 3; i++) {
        MPI_Type_commit(&bad[i]);
        ck_assert_int_eq(mgdt_type_create(bad[i], &own), MPI_ERR_TYPE);
        ck_assert_int_eq(mgdt_type_get(bad[i], &ty), MPI_ERR_TYPE);
        MPI_Type_free(&bad[i]);
    }
    MPI_Type_commit(&r); /* one instance is fine; the call's count decides */
    ck_assert_int_eq(mgdt_type_get(r, &ty), MPI_SUCCESS);
    MPI_Type_free(&r);
    MPI_Type_vector(2, 1, 2, MPI_INT, &t);
    ck_assert_int_eq(mgdt_type_check(t), MPI_ERR_TYPE);
    ck_assert_int_eq(mgdt_type_get(t, &ty), MPI_ERR_TYPE);
    MPI_Type_commit(&t);
    ck_assert_int_eq(mgdt_type_check(t), MPI_SUCCESS);
    ck_assert_int_eq(mgdt_type_get(t, &ty), MPI_SUCCESS);
    ck_assert_int_eq(mgdt_type_check(MPI_DATATYPE_NULL), MPI_ERR_TYPE);
    ck_assert_int_eq(mgdt_type_check(MPI_INT), MPI_SUCCESS);
    MPI_Type_free(&t);
}
END_TEST

/* The table of predefined layouts (layout.c) answers what PMPI answers:
   for every type of the standard's C binding (test/include/mgtest_types.h),
   and for any other predefined type it holds; nothing for derived types. */
START_TEST(test_predefined_layout)
{
    for (int i = 0; i < MGTEST_NTYPES; i++) {
        const mgtest_type_t *e = &mgtest_types[i];
        const mgdt_layout_t *l = mgdt_predefined(e->dt);
        MPI_Count size, lb, ext, tlb, tex;
        if (MGTEST_DT_STANDARD_C(e->flags))
            ck_assert_msg(l != NULL, "%s is not in the table", e->name);
        if (!l)
            continue;
        ck_assert(l->dt == e->dt);
        PMPI_Type_size_x(e->dt, &size);
        PMPI_Type_get_extent_x(e->dt, &lb, &ext);
        PMPI_Type_get_true_extent_x(e->dt, &tlb, &tex);
        ck_assert_int_eq(l->size, size);
        ck_assert_int_eq(l->lb, lb);
        ck_assert_int_eq(l->extent, ext);
        ck_assert_int_eq(l->true_lb, tlb);
        ck_assert_int_eq(l->true_extent, tex);
    }
    MPI_Datatype t;
    MPI_Type_contiguous(2, MPI_INT, &t);
    MPI_Type_commit(&t);
    ck_assert_ptr_null(mgdt_predefined(t));
    MPI_Type_free(&t);
    ck_assert_ptr_null(mgdt_predefined(MPI_DATATYPE_NULL));
}
END_TEST

int main(int argc, char **argv)
{
    int failed;
    MPI_Init(&argc, &argv);
    mgdt_init();
    Suite *s = suite_create("datatype");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_paper_vector_of_vectors);
    tcase_add_test(tc, test_contiguous_doubles);
    tcase_add_test(tc, test_vector_blocks);
    tcase_add_test(tc, test_subarray_4d);
    tcase_add_test(tc, test_subarray_fortran);
    tcase_add_test(tc, test_indexed_uniform);
    tcase_add_test(tc, test_struct_padded);
    tcase_add_test(tc, test_resized_negative_lb);
    tcase_add_test(tc, test_named_and_pairs);
    tcase_add_test(tc, test_random_types);
    tcase_add_test(tc, test_darray);
    tcase_add_test(tc, test_depth);
    tcase_add_test(tc, test_cache);
    tcase_add_test(tc, test_zero_size);
    tcase_add_test(tc, test_span);
    tcase_add_test(tc, test_overflow_and_commit);
    tcase_add_test(tc, test_predefined_layout);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    mgdt_finalize();
    MPI_Finalize();
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
