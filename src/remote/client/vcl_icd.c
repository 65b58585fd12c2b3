/* libmpigpu-vcl.so: the ICD dispatch table and the entry points the ICD
 * loader looks up by name (the only exported symbols, see vcl.map).  An
 * application reaches every other entry point through the dispatch table of
 * the objects it holds, so they are all named mgvcl_clXxx: no bare OpenCL
 * name is defined here for a linker or a code index to take for the real
 * one. */
#include <string.h>

#include "vcl.h"

static cl_program CL_API_CALL create_builtin(cl_context c, cl_uint n, const cl_device_id *d,
                                             const char *names, cl_int *err)
{
    if (err)
        *err = CL_INVALID_VALUE; /* the served devices' built-in kernels are not forwarded */
    return NULL;
}

#define D(name) .name = mgvcl_##name
struct _cl_icd_dispatch mgvcl_dispatch = {
    D(clGetPlatformIDs),
    D(clGetPlatformInfo),
    D(clGetDeviceIDs),
    D(clGetDeviceInfo),
    D(clCreateContext),
    D(clCreateContextFromType),
    D(clRetainContext),
    D(clReleaseContext),
    D(clGetContextInfo),
    D(clCreateCommandQueue),
    D(clRetainCommandQueue),
    D(clReleaseCommandQueue),
    D(clGetCommandQueueInfo),
    D(clSetCommandQueueProperty),
    D(clCreateBuffer),
    D(clCreateImage2D),
    D(clCreateImage3D),
    D(clRetainMemObject),
    D(clReleaseMemObject),
    D(clGetSupportedImageFormats),
    D(clGetMemObjectInfo),
    D(clGetImageInfo),
    D(clCreateSampler),
    D(clRetainSampler),
    D(clReleaseSampler),
    D(clGetSamplerInfo),
    D(clCreateProgramWithSource),
    D(clCreateProgramWithBinary),
    D(clRetainProgram),
    D(clReleaseProgram),
    D(clBuildProgram),
    D(clUnloadCompiler),
    D(clGetProgramInfo),
    D(clGetProgramBuildInfo),
    D(clCreateKernel),
    D(clCreateKernelsInProgram),
    D(clRetainKernel),
    D(clReleaseKernel),
    D(clSetKernelArg),
    D(clGetKernelInfo),
    D(clGetKernelWorkGroupInfo),
    D(clWaitForEvents),
    D(clGetEventInfo),
    D(clRetainEvent),
    D(clReleaseEvent),
    D(clGetEventProfilingInfo),
    D(clFlush),
    D(clFinish),
    D(clEnqueueReadBuffer),
    D(clEnqueueWriteBuffer),
    D(clEnqueueCopyBuffer),
    D(clEnqueueReadImage),
    D(clEnqueueWriteImage),
    D(clEnqueueCopyImage),
    D(clEnqueueCopyImageToBuffer),
    D(clEnqueueCopyBufferToImage),
    D(clEnqueueMapBuffer),
    D(clEnqueueMapImage),
    D(clEnqueueUnmapMemObject),
    D(clEnqueueNDRangeKernel),
    D(clEnqueueTask),
    D(clEnqueueNativeKernel),
    D(clEnqueueMarker),
    D(clEnqueueWaitForEvents),
    D(clEnqueueBarrier),
    D(clGetExtensionFunctionAddress),
    /* 1.1 */
    D(clSetEventCallback),
    D(clCreateSubBuffer),
    D(clSetMemObjectDestructorCallback),
    D(clCreateUserEvent),
    D(clSetUserEventStatus),
    D(clEnqueueReadBufferRect),
    D(clEnqueueWriteBufferRect),
    D(clEnqueueCopyBufferRect),
    /* 1.2 */
    D(clCreateSubDevices),
    D(clRetainDevice),
    D(clReleaseDevice),
    D(clCreateImage),
    .clCreateProgramWithBuiltInKernels = create_builtin,
    D(clCompileProgram),
    D(clLinkProgram),
    D(clUnloadPlatformCompiler),
    D(clGetKernelArgInfo),
    D(clEnqueueFillBuffer),
    D(clEnqueueFillImage),
    D(clEnqueueMigrateMemObjects),
    D(clEnqueueMarkerWithWaitList),
    D(clEnqueueBarrierWithWaitList),
    D(clGetExtensionFunctionAddressForPlatform),
};

void *CL_API_CALL mgvcl_clGetExtensionFunctionAddress(const char *name)
{
    if (name && !strcmp(name, "clIcdGetPlatformIDsKHR"))
        return (void *)mgvcl_clIcdGetPlatformIDsKHR;
    if (name && !strcmp(name, "clEnqueueBroadcastWriteBufferMPIGPU"))
        return (void *)mgvcl_broadcast_write;
    return NULL; /* no extension functions */
}
MGVCL_LOADER_ALIAS(clGetExtensionFunctionAddress)

void *CL_API_CALL mgvcl_clGetExtensionFunctionAddressForPlatform(cl_platform_id p, const char *name)
{
    if (p != &mgvcl_platform)
        return NULL;
    return mgvcl_clGetExtensionFunctionAddress(name);
}
MGVCL_LOADER_ALIAS(clGetExtensionFunctionAddressForPlatform)
