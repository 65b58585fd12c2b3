/* The packed twin (mgdt_type_twin) of random datatypes, checked through MPI
   itself on one rank: count instances of the twin over packed bytes, sent to
   self, must arrive in a receive of the original type exactly as PMPI_Unpack
   of those bytes would put them, also above the eager size (MPICH over UCX
   refuses packed MPI_BYTE there for mixed structs), and the twin must have
   the original's size and extent = size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mgtest.h"
#include "typegen.h"

static int errs;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 13 + seed * 7 + 3);
}

static int is_pair(MPI_Datatype t)
{
    return t == MPI_FLOAT_INT || t == MPI_DOUBLE_INT || t == MPI_LONG_INT || t == MPI_SHORT_INT ||
           t == MPI_LONG_DOUBLE_INT || t == MPI_2INT;
}

/* 1 when t has a pair type (MPI_DOUBLE_INT, ...) below a struct of several
   members, or is one. */
static int pair_in_struct(MPI_Datatype t, int in_struct)
{
    int ni, na, nt, comb, found = 0;
    MPI_Type_get_envelope(t, &ni, &na, &nt, &comb);
    if (comb == MPI_COMBINER_NAMED)
        return in_struct && is_pair(t);
    if (comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_INTEGER ||
        comb == MPI_COMBINER_F90_COMPLEX)
        return 0;
    int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nt + 1));
    MPI_Type_get_contents(t, ni, na, nt, ints, addrs, types);
    for (int i = 0; i < nt; i++) {
        found =
            found || pair_in_struct(types[i], in_struct || (comb == MPI_COMBINER_STRUCT && nt > 1));
        int cni, cna, cnt, cc;
        MPI_Type_get_envelope(types[i], &cni, &cna, &cnt, &cc);
        if (cc != MPI_COMBINER_NAMED && cc != MPI_COMBINER_F90_REAL &&
            cc != MPI_COMBINER_F90_INTEGER && cc != MPI_COMBINER_F90_COMPLEX)
            MPI_Type_free(&types[i]);
    }
    free(ints);
    free(addrs);
    free(types);
    return found;
}

static int npair_bad, npair;

static void check_one(MPI_Datatype t, const char *desc, tg_rng_t *rng)
{
    MPI_Count size, tsize, lb, ext, tlb, text, twlb, twext;
    const mgdt_type_t *ty = NULL;
    MPI_Datatype tw = MPI_DATATYPE_NULL;
    MPI_Type_size_c(t, &size);
    if (size == 0)
        return;
    if (mgdt_type_get(t, &ty) != MPI_SUCCESS || mgdt_type_twin(ty, t, &tw) != MPI_SUCCESS) {
        if (errs++ < 10)
            fprintf(stderr, "no twin for %s\n", desc);
        return;
    }
    MPI_Type_size_c(tw, &tsize);
    MPI_Type_get_extent_c(tw, &twlb, &twext);
    MPI_Type_get_extent_c(t, &lb, &ext);
    MPI_Type_get_true_extent_c(t, &tlb, &text);
    if (tsize != size || twlb != 0 || twext != size) {
        if (errs++ < 10)
            fprintf(stderr, "%s: twin size %lld extent [%lld, +%lld), want size %lld\n", desc,
                    (long long)tsize, (long long)twlb, (long long)twext, (long long)size);
        return;
    }
    /* Enough instances to pass the eager size, within a modest buffer. */
    int count = (int)(24576 / size) + tg_range(rng, 1, 3);
    if (ext > 0 && (MPI_Count)count * ext > (64 << 20))
        count = 1 + (int)((64 << 20) / ext);
    MPI_Count span = (count - 1) * ext, lo = (span < 0 ? span : 0) + tlb;
    MPI_Count hi = (span > 0 ? span : 0) + tlb + text;
    size_t n = (size_t)(hi - lo), origin = (size_t)(-lo);
    unsigned char *src = malloc(n + 1), *got = malloc(n + 1), *want = malloc(n + 1);
    MPI_Count psize = 0, pos = 0;
    MPI_Pack_size_c(count, t, MPI_COMM_SELF, &psize);
    char *packed = malloc((size_t)psize + 1);
    fill(src, n, 1);
    fill(got, n, 2);
    fill(want, n, 2);
    PMPI_Pack_c(src + origin, count, t, packed, psize, &pos, MPI_COMM_SELF);
    MPI_Count plen = pos;
    pos = 0;
    PMPI_Unpack_c(packed, plen, &pos, want + origin, count, t, MPI_COMM_SELF);
    MPI_Request rq;
    MPI_Status st;
    int rc = PMPI_Isend_c(packed, count, tw, 0, 5, MPI_COMM_SELF, &rq);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Recv_c(got + origin, count, t, 0, 5, MPI_COMM_SELF, &st);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Wait(&rq, MPI_STATUS_IGNORE);
    /* MPICH 4.0.2 itself misplaces pair-type members of mixed structs that
       arrive in rendezvous fragments from a differently laid out sender:
       counted and reported, not judged (doc/design.md, "Point-to-point"). */
    int pair = pair_in_struct(t, 0);
    npair += pair;
    if (pair && (rc != MPI_SUCCESS || memcmp(got, want, n) != 0)) {
        npair_bad++;
    } else if (rc != MPI_SUCCESS || memcmp(got, want, n) != 0) {
        if (errs++ < 10)
            fprintf(stderr, "%s x %d: rc %d, bytes %s\n", desc, count, rc,
                    memcmp(got, want, n) ? "differ" : "match");
    }
    free(packed);
    free(src);
    free(got);
    free(want);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    mgdt_init();
    const char *e = getenv("MPIGPU_ORACLE_TYPES");
    int ntypes = e ? atoi(e) : 300;
    tg_rng_t rng = {.s = 77};
    char desc[4096];
    for (int i = 0; i < ntypes; i++) {
        MPI_Datatype t = tg_type(&rng, 4, desc, sizeof(desc));
        check_one(t, desc, &rng);
        MPI_Type_free(&t);
    }
    /* The struct that MPICH refuses as bytes, and predefined types. */
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {0, 8, 16};
    MPI_Datatype st3[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, s0, s1;
    MPI_Type_create_struct(3, bl, disp, st3, &s0);
    MPI_Type_create_resized(s0, 0, 24, &s1);
    MPI_Type_commit(&s1);
    check_one(s1, "struct {char, double, int} resized to 24", &rng);
    check_one(MPI_DOUBLE, "MPI_DOUBLE", &rng);
    check_one(MPI_DOUBLE_INT, "MPI_DOUBLE_INT", &rng);
    MPI_Type_free(&s1);
    MPI_Type_free(&s0);
    mgdt_finalize();
    printf("%d types, %d with a pair type in a mixed struct, %d of them wrong through MPICH\n",
           ntypes + 3, npair, npair_bad);
    printf(errs ? " Found %d errors\n" : " No Errors\n", errs);
    MPI_Finalize();
    return errs != 0;
}
