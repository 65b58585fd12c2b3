/*
 * The failure count and CHECK of the remote path's test programs (no
 * OpenCL: the wire and transport tests use it too; vcl_test.h adds the
 * OpenCL part).  Header only, included once per program.
 */
#ifndef VCL_CHECK_H
#define VCL_CHECK_H

#include <stdio.h>

/* Checks that failed (CHECK); a program ends with 1 when it is not 0. */
static int failures;

/* A failed check: counted and printed, the program goes on. */
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#endif
