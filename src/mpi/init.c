/*
 * MPI_Init and MPI_Finalize: after PMPI_Init the library's modules start in
 * the order of the table below, and before PMPI_Finalize they stop in the
 * reverse order.  A module's fini must be safe after its own init failed.
 */
#include "config.h"

#include <stdio.h>

#include "mgparam.h"

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
    {.name = "enqueue", .init = mgmpi_enq_init, .fini = mgmpi_enq_fini},
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

/* The level MPI itself runs at.  The enqueue calls' thread calls MPI
   while the application's threads may too, which takes
   MPI_THREAD_MULTIPLE whatever the application asked for
   (MPIGPU_ENQUEUE_PROGRESS=thread, the default); the application is told
   the level it asked for (MPI_Init_thread's provided, MPI_Query_thread). */
static int level_asked(int required)
{
    mgparam_value_t v;
    if (mgparam_read(MGPARAM_ENQUEUE_PROGRESS, &v, NULL, 0) != 0)
        v.num = mgparam_default(MGPARAM_ENQUEUE_PROGRESS); /* reported at mgdev_setup */
    return v.num == 0 ? MPI_THREAD_MULTIPLE : required;
}

MPIGPU_EXPORT
int MPI_Init(int *argc, char ***argv)
{
    int got = MPI_THREAD_SINGLE, ask = level_asked(MPI_THREAD_SINGLE);
    int rc =
        ask == MPI_THREAD_SINGLE ? PMPI_Init(argc, argv) : PMPI_Init_thread(argc, argv, ask, &got);
    if (rc != MPI_SUCCESS)
        return rc;
    PMPI_Query_thread(&got);
    /* MPI_Init's level when MPI ran at the one it chose, else the lowest. */
    mgdev_state.app_level = ask == MPI_THREAD_SINGLE ? got : MPI_THREAD_SINGLE;
    return modules_start();
}

MPIGPU_EXPORT
int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int got = MPI_THREAD_SINGLE;
    int ask = level_asked(required);
    int rc = PMPI_Init_thread(argc, argv, ask > required ? ask : required, &got);
    if (rc != MPI_SUCCESS)
        return rc;
    /* What MPI gave, down to what the application asked for when MPI was
       asked for more. */
    mgdev_state.app_level = ask > required && got > required ? required : got;
    if (provided)
        *provided = mgdev_state.app_level;
    return modules_start();
}

/* The application's level, which may be below MPI's (level_asked). */
MPIGPU_EXPORT
int MPI_Query_thread(int *provided)
{
    int init = 0, fin = 0;
    PMPI_Initialized(&init);
    PMPI_Finalized(&fin);
    if (!init || fin || !provided)
        return PMPI_Query_thread(provided);
    *provided = mgdev_state.app_level;
    return MPI_SUCCESS;
}

MPIGPU_EXPORT
int MPI_Finalize(void)
{
    /* Before PMPI_Finalize: the datatype engine frees its attribute keyval
       through MPI. */
    modules_stop();
    return PMPI_Finalize();
}
