/*
 * The packed twin of a datatype: a type with the same type signature (the
 * same basic types in the same order) whose instances lie back to back with
 * no gaps, extent = size.  Sending packed bytes with count instances of the
 * twin is a message any matching receive accepts, whatever its datatype.
 *
 * Why not MPI_BYTE or MPI_PACKED: MPI matches messages by type signature, and
 * MPICH 4.0.2 over UCX enforces it for rendezvous messages.  Packed bytes sent
 * as MPI_BYTE (or MPI_PACKED) to a receive of a struct of mixed basic types
 * fail with MPI_ERR_TRUNCATE above the eager size (about 8 KiB), while the
 * same bytes sent as the twin arrive intact (doc/design.md, "Point-to-point").
 *
 * Built from MPI_Type_get_envelope/contents, one constructor per constructor:
 * every layout constructor becomes a contiguous run of its child's twin, a
 * struct keeps its members in type-map order at packed displacements, and
 * every twin is resized to lb 0 and extent = size, because a struct's extent
 * would otherwise be padded for alignment.
 */
#include "config.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include "mgdt.h"
#include "mgerr.h"

static int is_basic(int comb)
{
    return comb == MPI_COMBINER_NAMED || comb == MPI_COMBINER_F90_REAL ||
           comb == MPI_COMBINER_F90_INTEGER || comb == MPI_COMBINER_F90_COMPLEX;
}

/* A contiguous run of n instances of child (a twin), resized to its size.
   The int constructor while n fits: ROMIO (MPICH 4.0.2) flattens a file
   call's memory type through MPI_Type_get_envelope and aborts on a type made
   by a large-count constructor (src/mpi/file.c writes twins). */
static int twin_run(MPI_Count n, MPI_Datatype child, MPI_Datatype *out)
{
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPI_Count size = 0;
    int rc = n <= INT_MAX ? PMPI_Type_contiguous((int)n, child, &t)
                          : PMPI_Type_contiguous_c(n, child, &t);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_size_c(t, &size);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Type_create_resized(t, 0, (MPI_Aint)size, out);
    if (t != MPI_DATATYPE_NULL)
        PMPI_Type_free(&t);
    return rc;
}

static int twin_build(MPI_Datatype dt, int depth, MPI_Datatype *out);
static int twin_struct(int n, const int *bl, const MPI_Datatype *types, int depth,
                       MPI_Datatype *out);

/* A predefined pair type whose extent has padding (MPI_DOUBLE_INT is a
   double and an int with extent 16): the struct of its two members back to
   back.  MPI_SHORT_INT, the one pair with a gap between its members, goes as
   its 6 bytes instead: MPICH 4.0.2 misplaces MPI_SHORT_INT elements that
   arrive from the struct {short, int} across its 16 KiB rendezvous fragments
   (an element split by a fragment boundary), while bytes arrive intact
   (test/mpi/twin runs both on MPICH alone). */
static int twin_pair(MPI_Datatype dt, int *done, MPI_Datatype *out)
{
    static const int bl[2] = {1, 1};
    MPI_Datatype m[2] = {MPI_DATATYPE_NULL, MPI_INT};
    MPI_Aint lb = 0, ext = 0;
    int size = 0;
    *done = 0;
    PMPI_Type_get_extent(dt, &lb, &ext);
    PMPI_Type_size(dt, &size);
    if (ext == size)
        return MPI_SUCCESS;
    *done = 1;
    if (dt == MPI_FLOAT_INT)
        m[0] = MPI_FLOAT;
    else if (dt == MPI_DOUBLE_INT)
        m[0] = MPI_DOUBLE;
    else if (dt == MPI_LONG_INT)
        m[0] = MPI_LONG;
    else if (dt == MPI_LONG_DOUBLE_INT)
        m[0] = MPI_LONG_DOUBLE;
    else
        return twin_run(size, MPI_BYTE, out); /* MPI_SHORT_INT, or one we do not know */
    return twin_struct(2, bl, m, MGDT_MAX_DEPTH, out);
}

static int twin_struct(int n, const int *bl, const MPI_Datatype *types, int depth,
                       MPI_Datatype *out)
{
    int rc = MPI_SUCCESS, built = 0;
    MPI_Aint *disp = calloc((size_t)n + 1, sizeof(*disp));
    MPI_Datatype *tw = calloc((size_t)n + 1, sizeof(*tw)), t = MPI_DATATYPE_NULL;
    MPI_Count size = 0, at = 0;

    if (!disp || !tw)
        MG_FAIL(rc, fn_free, MPI_ERR_NO_MEM, "mgdt: out of memory (packed twin)");
    for (; built < n; built++) {
        rc = twin_build(types[built], depth + 1, &tw[built]);
        MG_CHECK(rc, fn_free);
    }
    for (int i = 0; i < n; i++) {
        disp[i] = (MPI_Aint)at;
        PMPI_Type_size_c(tw[i], &size);
        at += (MPI_Count)bl[i] * size;
    }
    rc = PMPI_Type_create_struct(n, bl, disp, tw, &t);
    MG_CHECK(rc, fn_free);
    rc = PMPI_Type_create_resized(t, 0, (MPI_Aint)at, out);
    PMPI_Type_free(&t);
fn_free:
    for (int i = 0; tw && i < built; i++)
        if (tw[i] != types[i])
            PMPI_Type_free(&tw[i]); /* a twin of its own, not the member itself */
    free(tw);
    free(disp);
    return rc;
}

/* *out is dt itself for a basic type (not to be freed), else a new type. */
static int twin_build(MPI_Datatype dt, int depth, MPI_Datatype *out)
{
    int rc = MPI_SUCCESS, ni, na, nt, comb, got = 0;
    int *ints = NULL;
    MPI_Aint *addrs = NULL;
    MPI_Datatype *types = NULL, child = MPI_DATATYPE_NULL;
    MPI_Count n = 0, size = 0, csize = 0;

    PMPI_Type_get_envelope(dt, &ni, &na, &nt, &comb);
    if (is_basic(comb)) {
        int pair = 0;
        rc = twin_pair(dt, &pair, out);
        if (!pair)
            *out = dt;
        return rc;
    }
    if (depth > MGDT_MAX_DEPTH)
        return mgerr_set(MPI_ERR_TYPE, "mgdt: datatype nested deeper than %d", MGDT_MAX_DEPTH);
    ints = malloc(sizeof(int) * (size_t)(ni + 1));
    addrs = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    types = malloc(sizeof(MPI_Datatype) * (size_t)(nt + 1));
    if (!ints || !addrs || !types)
        MG_FAIL(rc, fn_free, MPI_ERR_NO_MEM, "mgdt: out of memory (packed twin)");
    PMPI_Type_get_contents(dt, ni, na, nt, ints, addrs, types);
    got = 1;
    if (comb == MPI_COMBINER_STRUCT) {
        rc = twin_struct(ints[0], ints + 1, types, depth, out);
        goto fn_free;
    }
    /* Every other constructor has one child type: its instances are a run
       of size(dt) / size(child) twins of the child. */
    rc = twin_build(types[0], depth + 1, &child);
    MG_CHECK(rc, fn_free);
    PMPI_Type_size_c(dt, &size);
    PMPI_Type_size_c(types[0], &csize);
    n = csize > 0 ? size / csize : 0;
    rc = twin_run(n, child, out);
    if (child != types[0])
        PMPI_Type_free(&child);
fn_free:
    for (int i = 0; got && i < nt; i++) {
        int cni, cna, cnt, ccomb;
        PMPI_Type_get_envelope(types[i], &cni, &cna, &cnt, &ccomb);
        if (!is_basic(ccomb))
            PMPI_Type_free(&types[i]);
    }
    free(types);
    free(addrs);
    free(ints);
    return rc;
}

static pthread_mutex_t twin_lock = PTHREAD_MUTEX_INITIALIZER;

int mgdt_type_twin(const mgdt_type_t *ctype, MPI_Datatype dt, MPI_Datatype *twin)
{
    mgdt_type_t *type = (mgdt_type_t *)ctype; /* the twin is a cache slot */
    int rc = MPI_SUCCESS, ni, na, nt, comb;

    MPI_Aint lb = 0, ext = 0;
    int size = 0;
    PMPI_Type_get_envelope(dt, &ni, &na, &nt, &comb);
    PMPI_Type_get_extent(dt, &lb, &ext);
    PMPI_Type_size(dt, &size);
    if (is_basic(comb) && ext == size) {
        *twin = dt;
        return MPI_SUCCESS;
    }
    pthread_mutex_lock(&twin_lock);
    if (type->twin == MPI_DATATYPE_NULL) {
        MPI_Datatype t = MPI_DATATYPE_NULL;
        rc = twin_build(dt, 1, &t);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Type_commit(&t);
        if (rc == MPI_SUCCESS)
            type->twin = t;
        else if (t != MPI_DATATYPE_NULL)
            PMPI_Type_free(&t);
    }
    *twin = type->twin;
    pthread_mutex_unlock(&twin_lock);
    return rc;
}
