/*
 * mgerr: error codes shared by every layer.
 *
 * Functions return an MPI error class value (MPI_SUCCESS, MPI_ERR_BUFFER, ...)
 * so that callers may compare with ==.  The human-readable cause (the OpenCL
 * error name and call, the device address and range) is recorded per thread
 * against that class by mgerr_set(); the interposed MPI_Error_string returns
 * it for the class value, and falls back to MPI's own text otherwise.
 * (MPICH 4.0.2 mangles strings of codes added to predefined classes with
 * MPI_Add_error_code, so dynamic codes are not an option; see doc/design.md.)
 */
#ifndef MGERR_H
#define MGERR_H

#include <mpi.h>
#include <CL/cl.h>

/* Record a detailed message for errclass and return errclass. */
int mgerr_set(int errclass, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Turn an OpenCL status into MPI_ERR_OTHER (or MPI_ERR_NO_MEM for allocation
   failures) with a message naming the OpenCL error and the call. */
int mgerr_cl(cl_int err, const char *call, const char *file, int line);
/* The recorded message for errclass in this thread, or NULL. */
const char *mgerr_get(int errclass);
/* Put "mpigpu: fn: " in front of the message recorded for errclass (a
   lower layer's, so that it names the user's call); returns errclass. */
int mgerr_prepend(int errclass, const char *fn);
/* Name of an OpenCL error code, e.g. "CL_INVALID_VALUE". */
const char *mgerr_cl_name(cl_int err);

/* The three error macros (STYLE.md: one exit path, at most three macros). */
#define MG_CHECK(rc_, label_)                                                                      \
    do {                                                                                           \
        if ((rc_) != MPI_SUCCESS)                                                                  \
            goto label_;                                                                           \
    } while (0)

#define MG_CL_CHECK(clrc_, call_, rc_, label_)                                                     \
    do {                                                                                           \
        cl_int mg_clrc_ = (clrc_);                                                                 \
        if (mg_clrc_ != CL_SUCCESS) {                                                              \
            (rc_) = mgerr_cl(mg_clrc_, (call_), __FILE__, __LINE__);                               \
            goto label_;                                                                           \
        }                                                                                          \
    } while (0)

#define MG_FAIL(rc_, label_, errclass_, ...)                                                       \
    do {                                                                                           \
        (rc_) = mgerr_set((errclass_), __VA_ARGS__);                                               \
        goto label_;                                                                               \
    } while (0)

#endif /* MGERR_H */
