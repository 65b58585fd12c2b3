/*
 * mgtest_check: the plain CHECK of the MPI tests that count their failed
 * checks in errs and report them at the end (test/mpi/api.c, lifecycle.c,
 * locality.c, mpit.c).  Tests that name a rank or a place in the message
 * keep a CHECK of their own.  Needs no part of the library.
 */
#ifndef MGTEST_CHECK_H
#define MGTEST_CHECK_H

#include <stdio.h>

static int errs;
#define CHECK(cond_)                                                                               \
    do {                                                                                           \
        if (!(cond_)) {                                                                            \
            errs++;                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond_);              \
        }                                                                                          \
    } while (0)

#endif /* MGTEST_CHECK_H */
