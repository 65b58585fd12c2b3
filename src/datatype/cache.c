/*
 * Per-datatype cache.  Derived types carry their mgdt_type_t in an MPI
 * attribute, which holds one reference: MPI deletes the attribute when the
 * datatype goes (MPI_Type_free, or later when MPI itself still uses the
 * type), and an operation that holds a reference of its own keeps the
 * mgdt_type_t past that.  Predefined types may not carry attributes we own,
 * so they live in a small table until mgdt_finalize().
 */
#include <pthread.h>
#include <stdlib.h>

#include "mgerr.h"
#include "mgdt_tree.h"

typedef struct named_entry {
    MPI_Datatype dt;
    mgdt_type_t *type;
} named_entry_t;

/* One lock for everything below: lookups are short and types are built once. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static int cache_keyval = MPI_KEYVAL_INVALID;
/* A duplicate of MPI_COMM_SELF that returns errors, for asking MPI whether a
   type is committed (committed() below). */
static MPI_Comm probe_comm = MPI_COMM_NULL;
static named_entry_t *named;
static size_t nnamed, named_cap;

static int attr_delete(MPI_Datatype dt, int keyval, void *attr, void *extra)
{
    mgdt_type_release(attr);
    return MPI_SUCCESS;
}

int mgdt_init(void)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&cache_lock);
    if (cache_keyval == MPI_KEYVAL_INVALID)
        rc = PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, attr_delete, &cache_keyval, NULL);
    if (rc == MPI_SUCCESS && probe_comm == MPI_COMM_NULL) {
        rc = PMPI_Comm_dup(MPI_COMM_SELF, &probe_comm);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Comm_set_errhandler(probe_comm, MPI_ERRORS_RETURN);
    }
    pthread_mutex_unlock(&cache_lock);
    if (rc == MPI_SUCCESS)
        mgdt_layout_init();
    return rc;
}

void mgdt_finalize(void)
{
    mgdt_layout_finalize();
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < nnamed; i++)
        mgdt_type_free(named[i].type);
    free(named);
    named = NULL;
    nnamed = named_cap = 0;
    /* Attributes still attached keep the keyval alive inside MPI until their
       datatypes are freed; their delete callback still runs then. */
    if (cache_keyval != MPI_KEYVAL_INVALID)
        PMPI_Type_free_keyval(&cache_keyval);
    if (probe_comm != MPI_COMM_NULL)
        PMPI_Comm_free(&probe_comm);
    pthread_mutex_unlock(&cache_lock);
}

const mgdt_type_t *mgdt_type_hold(const mgdt_type_t *ctype)
{
    /* The count is the one mutable part of a shared type. */
    if (ctype)
        atomic_fetch_add_explicit(&((mgdt_type_t *)ctype)->refs, 1, memory_order_relaxed);
    return ctype;
}

void mgdt_type_release(const mgdt_type_t *ctype)
{
    mgdt_type_free((mgdt_type_t *)ctype);
}

void mgdt_type_free(mgdt_type_t *type)
{
    if (!type || atomic_fetch_sub_explicit(&type->refs, 1, memory_order_acq_rel) > 1)
        return;
    if (type->user && type->user_free)
        type->user_free(type->user);
    if (type->twin != MPI_DATATYPE_NULL)
        PMPI_Type_free(&type->twin);
    mgdt_type_free((mgdt_type_t *)type->bytes);
    free(type->nodes);
    free(type->lookaside);
    free(type);
}

void mgdt_type_set_user(const mgdt_type_t *ctype, void *user, void (*user_free)(void *))
{
    /* The cache hands out const pointers; the user slot is the one mutable part. */
    mgdt_type_t *type = (mgdt_type_t *)ctype;
    pthread_mutex_lock(&cache_lock);
    if (type->user && type->user != user && type->user_free)
        type->user_free(type->user);
    type->user = user;
    type->user_free = user_free;
    pthread_mutex_unlock(&cache_lock);
}

/* type->bytes for a type that external32 can swap (see mgdt.h): kept only
   when merging runs made the tree smaller. */
static int byte_view(MPI_Datatype dt, mgdt_type_t *type)
{
    int rc = MPI_SUCCESS;
    mgdt_tree_t *tree = NULL;
    mgdt_type_t *b = NULL;
    if (!type->external32_ok || type->size == 0 || type->nnodes <= 1)
        goto fn_exit;
    rc = mgdt_decode(dt, 1, &tree);
    MG_CHECK(rc, fn_fail);
    rc = mgdt_normalize_bytes(&tree);
    MG_CHECK(rc, fn_fail);
    b = calloc(1, sizeof(*b));
    if (!b)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (type)");
    atomic_init(&b->refs, 1); /* its parent's */
    b->twin = MPI_DATATYPE_NULL;
    b->size = type->size;
    b->extent = type->extent;
    b->lb = type->lb;
    b->true_lb = type->true_lb;
    b->true_ub = type->true_ub;
    rc = mgdt_serialize(tree, b);
    MG_CHECK(rc, fn_fail);
    if (b->nnodes < type->nnodes) {
        type->bytes = b;
        b = NULL;
    }
fn_exit:
    mgdt_type_free(b);
    mgdt_tree_free(tree);
    return rc;
fn_fail:
    goto fn_exit;
}

int mgdt_type_create(MPI_Datatype dt, mgdt_type_t **out)
{
    int rc = MPI_SUCCESS;
    mgdt_tree_t *tree = NULL;
    mgdt_type_t *type = NULL;
    MPI_Count size, lb, extent, tlb, textent;

    *out = NULL;
    if (dt == MPI_DATATYPE_NULL)
        MG_FAIL(rc, fn_fail, MPI_ERR_TYPE, "mgdt: MPI_DATATYPE_NULL");
    rc = mgdt_decode(dt, 1, &tree);
    MG_CHECK(rc, fn_fail);
    if (tree->overflow)
        MG_FAIL(rc, fn_fail, MPI_ERR_TYPE,
                "mgdt: the datatype's sizes, strides or displacements span more bytes than an "
                "int64 holds");
    rc = mgdt_normalize(&tree);
    MG_CHECK(rc, fn_fail);
    if (tree->overflow)
        MG_FAIL(rc, fn_fail, MPI_ERR_TYPE, "mgdt: the normalized datatype overflows an int64");
    if (tree->depth > MGDT_MAX_DEPTH)
        MG_FAIL(rc, fn_fail, MPI_ERR_TYPE, "mgdt: normalized tree deeper than %d", MGDT_MAX_DEPTH);
    type = calloc(1, sizeof(*type));
    if (!type)
        MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (type)");
    atomic_init(&type->refs, 1); /* the caller's */
    type->twin = MPI_DATATYPE_NULL;
    PMPI_Type_size_x(dt, &size);
    PMPI_Type_get_extent_x(dt, &lb, &extent);
    PMPI_Type_get_true_extent_x(dt, &tlb, &textent);
    type->size = size;
    type->extent = extent;
    type->lb = lb;
    /* MPICH reports a negative true extent for some empty types: an empty
       type touches nothing, say so plainly.  A type that moves bytes has
       true bounds that fit an int64, or MPI's arithmetic wrapped. */
    if (size > 0 && (textent < 0 || __builtin_add_overflow(tlb, textent, &type->true_ub)))
        MG_FAIL(rc, fn_fail, MPI_ERR_TYPE,
                "mgdt: MPI reports a true extent of %lld bytes from %lld for a datatype of %lld "
                "bytes (its own arithmetic overflowed)",
                (long long)textent, (long long)tlb, (long long)size);
    type->true_lb = size > 0 ? tlb : 0;
    type->true_ub = size > 0 ? type->true_ub : 0;
    /* What the walks touch is the tree's: bound both. */
    if (size > 0 && tree->size > 0) {
        if (tree->true_lb < type->true_lb)
            type->true_lb = tree->true_lb;
        if (tree->true_ub > type->true_ub)
            type->true_ub = tree->true_ub;
    }
    rc = mgdt_serialize(tree, type);
    MG_CHECK(rc, fn_fail);
    rc = byte_view(dt, type);
    MG_CHECK(rc, fn_fail);
    *out = type;

fn_exit:
    mgdt_tree_free(tree);
    return rc;
fn_fail:
    mgdt_type_free(type);
    goto fn_exit;
}

static int named_lookup(MPI_Datatype dt, const mgdt_type_t **out)
{
    int rc = MPI_SUCCESS;
    mgdt_type_t *type = NULL;

    for (size_t i = 0; i < nnamed; i++) {
        if (named[i].dt == dt) {
            *out = named[i].type;
            goto fn_exit;
        }
    }
    if (nnamed == named_cap) {
        size_t cap = named_cap ? 2 * named_cap : 32;
        named_entry_t *n = realloc(named, cap * sizeof(*n));
        if (!n)
            MG_FAIL(rc, fn_fail, MPI_ERR_NO_MEM, "mgdt: out of memory (cache)");
        named = n;
        named_cap = cap;
    }
    rc = mgdt_type_create(dt, &type);
    MG_CHECK(rc, fn_fail);
    named[nnamed].dt = dt;
    named[nnamed].type = type;
    nnamed++;
    *out = type;

fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Whether derived type dt is committed.  MPI has no query for it, but
   MPICH's MPI_Pack_size checks it (MPI_ERR_TYPE, what a host call with the
   type returns) and computes nothing more than a product; probe_comm returns
   the error instead of raising it on the user's handlers.  Called once per
   derived type: a committed type gets its cache attribute, commit is one-way,
   and freeing the type deletes the attribute (cache_lock held). */
static int committed(MPI_Datatype dt)
{
    MPI_Count sz = 0;
    return PMPI_Pack_size_c(1, dt, probe_comm, &sz) == MPI_SUCCESS;
}

int mgdt_type_get(MPI_Datatype dt, const mgdt_type_t **out)
{
    int rc = MPI_SUCCESS, ni, na, nt, comb, flag = 0;
    mgdt_type_t *type = NULL;
    void *val = NULL;

    *out = NULL;
    if (dt == MPI_DATATYPE_NULL)
        MG_FAIL(rc, fn_exit, MPI_ERR_TYPE, "mgdt: the datatype is MPI_DATATYPE_NULL");
    pthread_mutex_lock(&cache_lock);
    if (cache_keyval == MPI_KEYVAL_INVALID)
        MG_FAIL(rc, fn_unlock, MPI_ERR_OTHER, "mgdt: mgdt_init() was not called");
    PMPI_Type_get_envelope(dt, &ni, &na, &nt, &comb);
    if (comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL ||
        comb == MPI_COMBINER_F90_COMPLEX || comb == MPI_COMBINER_F90_INTEGER) {
        rc = named_lookup(dt, out);
        goto fn_unlock;
    }
    PMPI_Type_get_attr(dt, cache_keyval, &val, &flag);
    if (flag) {
        *out = val;
        goto fn_unlock;
    }
    if (!committed(dt))
        MG_FAIL(rc, fn_unlock, MPI_ERR_TYPE,
                "mgdt: the datatype is not committed (MPI_Type_commit), or not a datatype");
    rc = mgdt_type_create(dt, &type);
    MG_CHECK(rc, fn_unlock);
    rc = PMPI_Type_set_attr(dt, cache_keyval, type);
    if (rc != MPI_SUCCESS) {
        mgdt_type_free(type);
        MG_FAIL(rc, fn_unlock, MPI_ERR_TYPE, "mgdt: cannot cache on datatype");
    }
    *out = type;

fn_unlock:
    pthread_mutex_unlock(&cache_lock);
fn_exit:
    return rc;
}

int mgdt_type_acquire(MPI_Datatype dt, const mgdt_type_t **out)
{
    int rc = mgdt_type_get(dt, out);
    if (rc == MPI_SUCCESS)
        mgdt_type_hold(*out);
    return rc;
}

int mgdt_type_check(MPI_Datatype dt)
{
    int rc = MPI_SUCCESS, ni, na, nt, comb, flag = 0;
    void *val = NULL;

    if (dt == MPI_DATATYPE_NULL)
        return mgerr_set(MPI_ERR_TYPE, "mgdt: the datatype is MPI_DATATYPE_NULL");
    pthread_mutex_lock(&cache_lock);
    if (cache_keyval == MPI_KEYVAL_INVALID)
        MG_FAIL(rc, fn_unlock, MPI_ERR_OTHER, "mgdt: mgdt_init() was not called");
    PMPI_Type_get_envelope(dt, &ni, &na, &nt, &comb);
    if (comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL ||
        comb == MPI_COMBINER_F90_COMPLEX || comb == MPI_COMBINER_F90_INTEGER)
        goto fn_unlock;
    PMPI_Type_get_attr(dt, cache_keyval, &val, &flag);
    if (!flag && !committed(dt))
        MG_FAIL(rc, fn_unlock, MPI_ERR_TYPE,
                "mgdt: the datatype is not committed (MPI_Type_commit), or not a datatype");
fn_unlock:
    pthread_mutex_unlock(&cache_lock);
    return rc;
}
