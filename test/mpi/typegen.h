/* Seeded generator of random nested MPI datatypes for the randomized oracle. */
#ifndef TYPEGEN_H
#define TYPEGEN_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tg_rng {
    uint64_t s;
} tg_rng_t;

uint64_t tg_next(tg_rng_t *r);

/* 0: constructors never get a zero count or blocklength.  Debian's MPICH
   4.0.2 reads uninitialized dataloop fields for types with empty parts and
   dies of a division by zero on some machines (seen on the H100 host), so the
   host reference cannot judge them there. */
extern int tg_allow_empty;
/* Uniform integer in [lo, hi]. */
int tg_range(tg_rng_t *r, int lo, int hi);

/*
 * A random, committed datatype of nesting depth at most max_depth whose
 * instances never overlap (so it is valid for receives).  Every constructor of
 * MPI-3.1 appears: contiguous, vector, hvector, indexed, hindexed,
 * indexed_block, hindexed_block, struct, subarray (C and Fortran order),
 * darray, resized (often with a negative lower bound) and dup.  desc receives a
 * readable description.  The caller frees the type.
 */
MPI_Datatype tg_type(tg_rng_t *r, int max_depth, char *desc, size_t desclen);

/* 1 when every basic element of t has the same basic type, no pair type
   (MPI_DOUBLE_INT, ...), darray or empty part occurs.  Debian's MPICH 4.0.2 crashes in
   MPI_Pack_external_size on mixed structs, darrays and empty parts, and sizes pair types as 0 bytes
   in external32, so only such types can be checked against its external32. */
int tg_homogeneous(MPI_Datatype t);

#endif
