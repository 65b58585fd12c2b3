/*
 * MPI_Init and MPI_Finalize: after PMPI_Init the library's modules start in
 * the order of the table below, and before PMPI_Finalize they stop in the
 * reverse order.  A module's fini must be safe after its own init failed.
 */
#include "config.h"

#include <stdio.h>

#include "mgerr.h"
#include "mgmpi.h"
#include "p2p.h"
#include "mglog.h"

typedef struct mgmpi_module {
    const char *name;
    int (*init)(void); /* NULL: nothing to start; returns an MPI error code */
    void (*fini)(void);
} mgmpi_module_t;

/* Order matters: the device (settings, locality, datatype engine, registry,
   default context and pack engines) comes first; the point-to-point engine
   borrows its staging pool and contexts, and stops before them so that
   operations still active finish while the device is there. */
static const mgmpi_module_t modules[] = {
    {.name = "device", .init = mgdev_setup, .fini = mgdev_teardown},
    {.name = "point-to-point", .init = mgp2p_init, .fini = mgp2p_finalize},
};
#define NMODULES (sizeof(modules) / sizeof(modules[0]))

/* Modules started and not yet stopped (calls of MPI_Init and MPI_Finalize
   come from one thread, as MPI requires). */
static size_t modules_up;

static void modules_stop(void)
{
    while (modules_up > 0) {
        const mgmpi_module_t *m = &modules[--modules_up];
        if (m->fini)
            m->fini();
    }
}

/* After PMPI_Init succeeded a start failure (a bad MPIGPU_DEVICE or
   MPIGPU_PACK) is returned as MPI_ERR_OTHER with MPI left initialized: the
   message goes to stderr because no error handler can be relied on yet, and
   the program should call MPI_Abort or MPI_Finalize. */
static int modules_start(void)
{
    int rc = MPI_SUCCESS;
    for (size_t i = 0; i < NMODULES; i++) {
        modules_up = i + 1; /* a failed module is stopped too */
        if (modules[i].init)
            rc = modules[i].init();
        MG_CHECK(rc, fn_fail);
    }
fn_exit:
    return rc;
fn_fail:
    MGLOG_ERROR(MGLOG_MPI, "%s", mgerr_get(rc) ? mgerr_get(rc) : "initialization failed");
    modules_stop();
    goto fn_exit;
}

MPIGPU_EXPORT
int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    return rc == MPI_SUCCESS ? modules_start() : rc;
}

MPIGPU_EXPORT
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    return rc == MPI_SUCCESS ? modules_start() : rc;
}

MPIGPU_EXPORT
int MPI_Finalize(void)
{
    /* Before PMPI_Finalize: the datatype engine frees its attribute keyval
       through MPI. */
    modules_stop();
    return PMPI_Finalize();
}
