/*
 * The pack method of a datatype: MPIGPU_PACK, or the per-datatype attribute
 * that MPIX_Gpu_pack_keyval's keyval sets.
 */
#include "config.h"

#include <pthread.h>
#include <stdint.h>

#include "mpigpu.h"
#include "mgdev.h"

/* The per-datatype method attribute (MPIX_Gpu_pack_keyval), created at its
   first request and freed at teardown.  Its values are the engine's. */
_Static_assert(MPIX_GPU_PACK_AUTO == MGPK_METHOD_AUTO &&
                   MPIX_GPU_PACK_KERNEL == MGPK_METHOD_KERNEL &&
                   MPIX_GPU_PACK_COPY == MGPK_METHOD_COPY && MPIX_GPU_PACK_HOST == MGPK_METHOD_HOST,
               "MPIX_GPU_PACK_* must equal mgpk_method_t");
static pthread_mutex_t keyval_lock = PTHREAD_MUTEX_INITIALIZER;
static int pack_keyval = MPI_KEYVAL_INVALID;

int mgdev_pack_keyval(int *keyval)
{
    int rc = MPI_SUCCESS;
    pthread_mutex_lock(&keyval_lock);
    if (pack_keyval == MPI_KEYVAL_INVALID)
        rc = PMPI_Type_create_keyval(MPI_TYPE_DUP_FN, MPI_TYPE_NULL_DELETE_FN, &pack_keyval, NULL);
    *keyval = pack_keyval;
    pthread_mutex_unlock(&keyval_lock);
    return rc;
}

void mgdev_pack_keyval_free(void)
{
    pthread_mutex_lock(&keyval_lock);
    if (pack_keyval != MPI_KEYVAL_INVALID)
        PMPI_Type_free_keyval(&pack_keyval);
    pack_keyval = MPI_KEYVAL_INVALID;
    pthread_mutex_unlock(&keyval_lock);
}

mgpk_method_t mgdev_type_method(MPI_Datatype dt)
{
    mgpk_method_t m = mgdev_state.settings.method;
    int kv, flag = 0;
    void *v = NULL;
    pthread_mutex_lock(&keyval_lock);
    kv = pack_keyval;
    pthread_mutex_unlock(&keyval_lock);
    if (kv != MPI_KEYVAL_INVALID && dt != MPI_DATATYPE_NULL &&
        PMPI_Type_get_attr(dt, kv, &v, &flag) == MPI_SUCCESS && flag) {
        intptr_t a = (intptr_t)v;
        if (a >= MPIX_GPU_PACK_KERNEL && a <= MPIX_GPU_PACK_HOST)
            m = (mgpk_method_t)a;
    }
    return m;
}
