/*
 * What the plain OpenCL test programs of the remote path (vcl_basic,
 * vcl_image, vcl_multi) share: the failure count and its checks
 * (vcl_check.h), finding a platform by name, building a program.  Header only: each program
 * includes it once, after defining CL_TARGET_OPENCL_VERSION.
 */
#ifndef VCL_TEST_H
#define VCL_TEST_H

#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vcl_check.h"

/* An OpenCL call that must succeed: the program stops on its error. */
#define CL_OK(x)                                                                                   \
    do {                                                                                           \
        cl_int e_ = (x);                                                                           \
        if (e_ != CL_SUCCESS) {                                                                    \
            fprintf(stderr, "FAIL %s:%d: %s = %d\n", __FILE__, __LINE__, #x, e_);                  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The platform named exactly want, or NULL. */
static inline cl_platform_id vt_find_platform(const char *want)
{
    cl_platform_id ps[16];
    cl_uint np = 0;
    if (clGetPlatformIDs(16, ps, &np) != CL_SUCCESS)
        return NULL;
    for (cl_uint i = 0; i < np && i < 16; i++) {
        char name[128] = "";
        clGetPlatformInfo(ps[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
        if (!strcmp(name, want))
            return ps[i];
    }
    return NULL;
}

/* The platform named want; the program stops when there is none. */
static inline cl_platform_id vt_need_platform(const char *want)
{
    cl_platform_id p = vt_find_platform(want);
    if (!p) {
        fprintf(stderr, "FAIL: no \"%s\" platform\n", want);
        exit(1);
    }
    return p;
}

/* The program of src built for the ndev devices devs (0, NULL: all of the
 * context's); the program stops on an error, with the build log. */
static inline cl_program vt_build(cl_context ctx, const char *src, cl_uint ndev,
                                  const cl_device_id *devs)
{
    cl_int err;
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CL_OK(err);
    err = clBuildProgram(prog, ndev, devs, "", NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[4096] = "";
        cl_device_id d = devs ? devs[0] : NULL;
        if (!d)
            clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof d, &d, NULL);
        clGetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, sizeof log, log, NULL);
        fprintf(stderr, "FAIL: build: %d\n%s\n", err, log);
        exit(1);
    }
    return prog;
}

#endif
