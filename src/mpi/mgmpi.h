/*
 * mgmpi: what the files of the MPI face share among themselves (private to
 * src/mpi).  Nothing below the MPI face calls these.
 */
#ifndef MGMPI_H
#define MGMPI_H

#include <mpi.h>

#include "mpigpu.h" /* MPIGPU_EXPORT, on each interposed MPI_ call */
#include "mgdev.h"

/* Raise rc (an error class) on comm's error handler and return it.  With
   MPI_ERRORS_ARE_FATAL the recorded message is printed first, so that the
   abort says why.  MPI_SUCCESS passes through. */
int mgmpi_error(MPI_Comm comm, int rc);

#endif /* MGMPI_H */
