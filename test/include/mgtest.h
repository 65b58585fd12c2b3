/*
 * mgtest: how white-box tests reach the library's internals.  A test that
 * reads a counter or calls an internal function includes this header, never
 * a prototype copied by hand, and is not installed with the library.
 *
 * libmpigpu.so exports only MPI_* and MPIX_* (src/mpi/README.md, "Exports");
 * every mg* symbol is hidden in it.  A program that includes this header
 * therefore links the folders' convenience libraries, $(MG_ALL_LIBS) and
 * $(MG_ALL_LIBS_DEPS) (src/mpi/Makefile.mk), which hold the same objects as
 * libmpigpu.so, and never libmpigpu.la as well: two copies of the library's
 * state in one process would each see part of the calls.  The interposed
 * MPI_ calls then come from the program itself, ahead of MPI's.
 *
 * What tests use, declared in the face below:
 *   datatype engine (mgdt.h): mgdt_init, mgdt_finalize, mgdt_type_get,
 *     mgdt_type_twin.
 * The library's counters are not read here: tests read them through MPI_T,
 * as a tool does (test/mpi/mpit_read.c), since each is a performance
 * variable (src/mpi/mpit.c).
 */
#ifndef MGTEST_H
#define MGTEST_H

/* First: it sets the OpenCL version the library's headers compile against,
   as config.h does for the library. */
#include "mpigpu.h"

#include "mgdt.h"
#include "p2p.h"
#include "staging.h"

#endif /* MGTEST_H */
