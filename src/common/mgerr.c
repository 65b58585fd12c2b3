/* Per-thread error messages keyed by MPI error class; see mgerr.h. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mgerr.h"

#define MGERR_NSLOTS 4
#define MGERR_LEN 512

typedef struct mgerr_slot {
    int errclass;
    char msg[MGERR_LEN];
} mgerr_slot_t;

/* A few recent messages per thread, so that two errors of different classes
   raised before the user asks for either keep their own text. */
static _Thread_local mgerr_slot_t slots[MGERR_NSLOTS];
static _Thread_local int next_slot;

int mgerr_set(int errclass, const char *fmt, ...)
{
    mgerr_slot_t *slot = NULL;
    for (int i = 0; i < MGERR_NSLOTS; i++)
        if (slots[i].errclass == errclass)
            slot = &slots[i];
    if (!slot) {
        slot = &slots[next_slot];
        next_slot = (next_slot + 1) % MGERR_NSLOTS;
    }
    slot->errclass = errclass;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(slot->msg, sizeof(slot->msg), fmt, ap);
    va_end(ap);
    return errclass;
}

int mgerr_prepend(int errclass, const char *fn)
{
    char old[MGERR_LEN];
    const char *msg = mgerr_get(errclass);
    snprintf(old, sizeof(old), "%s", msg ? msg : "no further detail");
    return mgerr_set(errclass, "mpigpu: %s: %s", fn, old);
}

const char *mgerr_get(int errclass)
{
    if (errclass == MPI_SUCCESS)
        return NULL;
    for (int i = 0; i < MGERR_NSLOTS; i++)
        if (slots[i].errclass == errclass && slots[i].msg[0])
            return slots[i].msg;
    return NULL;
}

const char *mgerr_cl_name(cl_int err)
{
    switch (err) {
#define MGERR_CASE(x)                                                                              \
    case x:                                                                                        \
        return #x
        MGERR_CASE(CL_SUCCESS);
        MGERR_CASE(CL_DEVICE_NOT_FOUND);
        MGERR_CASE(CL_DEVICE_NOT_AVAILABLE);
        MGERR_CASE(CL_COMPILER_NOT_AVAILABLE);
        MGERR_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE);
        MGERR_CASE(CL_OUT_OF_RESOURCES);
        MGERR_CASE(CL_OUT_OF_HOST_MEMORY);
        MGERR_CASE(CL_PROFILING_INFO_NOT_AVAILABLE);
        MGERR_CASE(CL_MEM_COPY_OVERLAP);
        MGERR_CASE(CL_IMAGE_FORMAT_MISMATCH);
        MGERR_CASE(CL_IMAGE_FORMAT_NOT_SUPPORTED);
        MGERR_CASE(CL_BUILD_PROGRAM_FAILURE);
        MGERR_CASE(CL_MAP_FAILURE);
        MGERR_CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET);
        MGERR_CASE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
        MGERR_CASE(CL_COMPILE_PROGRAM_FAILURE);
        MGERR_CASE(CL_LINKER_NOT_AVAILABLE);
        MGERR_CASE(CL_LINK_PROGRAM_FAILURE);
        MGERR_CASE(CL_DEVICE_PARTITION_FAILED);
        MGERR_CASE(CL_KERNEL_ARG_INFO_NOT_AVAILABLE);
        MGERR_CASE(CL_INVALID_VALUE);
        MGERR_CASE(CL_INVALID_DEVICE_TYPE);
        MGERR_CASE(CL_INVALID_PLATFORM);
        MGERR_CASE(CL_INVALID_DEVICE);
        MGERR_CASE(CL_INVALID_CONTEXT);
        MGERR_CASE(CL_INVALID_QUEUE_PROPERTIES);
        MGERR_CASE(CL_INVALID_COMMAND_QUEUE);
        MGERR_CASE(CL_INVALID_HOST_PTR);
        MGERR_CASE(CL_INVALID_MEM_OBJECT);
        MGERR_CASE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
        MGERR_CASE(CL_INVALID_IMAGE_SIZE);
        MGERR_CASE(CL_INVALID_SAMPLER);
        MGERR_CASE(CL_INVALID_BINARY);
        MGERR_CASE(CL_INVALID_BUILD_OPTIONS);
        MGERR_CASE(CL_INVALID_PROGRAM);
        MGERR_CASE(CL_INVALID_PROGRAM_EXECUTABLE);
        MGERR_CASE(CL_INVALID_KERNEL_NAME);
        MGERR_CASE(CL_INVALID_KERNEL_DEFINITION);
        MGERR_CASE(CL_INVALID_KERNEL);
        MGERR_CASE(CL_INVALID_ARG_INDEX);
        MGERR_CASE(CL_INVALID_ARG_VALUE);
        MGERR_CASE(CL_INVALID_ARG_SIZE);
        MGERR_CASE(CL_INVALID_KERNEL_ARGS);
        MGERR_CASE(CL_INVALID_WORK_DIMENSION);
        MGERR_CASE(CL_INVALID_WORK_GROUP_SIZE);
        MGERR_CASE(CL_INVALID_WORK_ITEM_SIZE);
        MGERR_CASE(CL_INVALID_GLOBAL_OFFSET);
        MGERR_CASE(CL_INVALID_EVENT_WAIT_LIST);
        MGERR_CASE(CL_INVALID_EVENT);
        MGERR_CASE(CL_INVALID_OPERATION);
        MGERR_CASE(CL_INVALID_GL_OBJECT);
        MGERR_CASE(CL_INVALID_BUFFER_SIZE);
        MGERR_CASE(CL_INVALID_MIP_LEVEL);
        MGERR_CASE(CL_INVALID_GLOBAL_WORK_SIZE);
        MGERR_CASE(CL_INVALID_PROPERTY);
        MGERR_CASE(CL_INVALID_IMAGE_DESCRIPTOR);
        MGERR_CASE(CL_INVALID_COMPILER_OPTIONS);
        MGERR_CASE(CL_INVALID_LINKER_OPTIONS);
        MGERR_CASE(CL_INVALID_DEVICE_PARTITION_COUNT);
#undef MGERR_CASE
    default:
        return "CL_UNKNOWN_ERROR";
    }
}

int mgerr_cl(cl_int err, const char *call, const char *file, int line)
{
    int errclass = MPI_ERR_OTHER;
    if (err == CL_OUT_OF_HOST_MEMORY || err == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
        err == CL_OUT_OF_RESOURCES)
        errclass = MPI_ERR_NO_MEM;
    const char *base = strrchr(file, '/');
    return mgerr_set(errclass, "OpenCL error %s (%d) in %s (%s:%d)", mgerr_cl_name(err), (int)err,
                     call, base ? base + 1 : file, line);
}
