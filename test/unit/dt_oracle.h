/* Test helpers: compare the datatype engine's serialized form with MPICH. */
#ifndef DT_ORACLE_H
#define DT_ORACLE_H

#include <mpi.h>
#include <stdint.h>

#include "mgdt.h"

/* Check ref pack/unpack/offset/swap and the shape of dt against MPI_Pack,
   MPI_Unpack and MPI_Pack_external for count instances.  Returns 0 on success,
   else a line number of the failed comparison (printed with the dump). */
int dt_oracle_check(MPI_Datatype dt, int count, unsigned seed);

/* How many external32 comparisons dt_oracle_check has made so far. */
int dt_oracle_ext32_count(void);

/* Small seeded generator of random committed datatypes (caller frees). */
MPI_Datatype dt_random_type(unsigned *seed, int depth);
void dt_free_if_derived(MPI_Datatype *dt);
unsigned dt_rand(unsigned *seed);

#endif /* DT_ORACLE_H */
